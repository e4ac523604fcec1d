/*
 * The graph optimizer: named, ordered passes that rewrite a loaded graph
 * before shape inference and provider assignment.
 *
 *     mf_opt_report rep;
 *     mf_opt_ctx ctx = {3, eval_node, eval_user, MF_FOLD_MAX_BYTES, &rep, 0, NULL};
 *     if (mf_optimize(g, &ctx, "model.onnx") != MINFER_OK)
 *         ... minfer_last_error() says which pass failed and why ...
 *
 * Levels (docs/optimizer.md lists every pass and what it checks):
 *   0  nothing;
 *   1  clean-ups every provider benefits from: dead nodes, Identity and
 *      inference-mode Dropout, constant folding (through ctx->eval_node,
 *      capped by ctx->fold_max_bytes), shape subgraphs over static dims,
 *      BatchNormalization folded into Conv/Gemm weights, Reshape chains,
 *      redundant Cast and Transpose pairs;
 *   2  also fusions into the `minfer` domain (docs/fused-ops.md);
 *   3  everything (no provider-specific rewrite exists yet).
 *
 * Included by what runs the optimizer (core/session: sessions,
 * minfer_optimize_model, the compiler), by core/exec/evaluator.c, which
 * defines the stand-alone evaluator below, and by tests. The optimizer's own
 * files share more through optimize/passes.h.
 */
#ifndef MINFER_CORE_OPTIMIZER_H
#define MINFER_CORE_OPTIMIZER_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "shapes/shape_infer.h"

/* ---- The optimizer's interface ----------------------------------------- */

typedef struct mf_opt_report { /* per pass: name and how many times it fired */
    size_t n_passes;
    struct {
        const char *name; /* static string */
        size_t fired;
    } passes[64];
    size_t nodes_before, nodes_after;
    /* Work counts, for tests that the optimizer scales linearly: nodes the
     * shape analysis visited (each probe run of each node counts once), and
     * evaluations of a node by ctx->eval_node (folding and the analysis'). */
    size_t analysis_nodes, evaluations;
    /* Fusions left out because no provider of the session runs the fused
     * node (mf_optimize_gated): the pattern runs unfused. */
    size_t unfused;
} mf_opt_report;

typedef struct mf_opt_ctx {
    int level; /* 0..3 */
    /* Evaluates node `node` of g (all inputs are initializers) on the CPU provider and returns
       its outputs as new tensors (caller owns); NULL when no evaluator is available.
       g may be a scratch graph the optimizer made for one node: an implementation
       reads the node, its attributes and its inputs' initializers from g, nothing else. */
    minfer_status (*eval_node)(void *user, const mf_graph *g, int node, minfer_tensor **outputs);
    void *user;
    uint64_t fold_max_bytes; /* size cap for any folded constant; 0: MF_FOLD_MAX_BYTES */
    mf_opt_report *report;   /* may be NULL */
    /* 1: float16 nodes are computed in float between the graph's float16
     * edges, as ONNX Runtime's CPU provider computes them (passes_half.c);
     * a session whose providers all compute on the CPU asks for it. */
    int half_as_float;
    /* Inference for an op no core rule covers (the custom-operator
       plugins', place/plugin_loader.c), or NULL: its outputs stay unknown. */
    mf_infer_fallback_fn infer_fallback;
} mf_opt_ctx;

/* Rewrites g in place; on return g is finalized (mf_graph_finalize: fresh order). */
minfer_status mf_optimize(mf_graph *g, const mf_opt_ctx *ctx, const char *errctx);

/* What a session's providers run, for the fusions' gate (gate.c). */
typedef struct mf_opt_gate {
    /* Whether some provider of the session runs `node`, a node a fusion is
     * about to make (its host_node is the graph's mf_node; types and
     * exactly known dims from the optimizer's analysis, -1 for symbolic
     * ones; an initializer's data as const_data): 1, or 0 with the
     * providers' reasons in why. */
    int (*supports)(void *user, const minfer_node_desc *node, char *why, size_t why_size);
    void *user;
    /* Session creation's deadline (session.c's mf_creation_check), or
     * NULL: called with user and the pass's name after each pass; not
     * MINFER_OK ends the optimizer with that error. */
    minfer_status (*deadline)(void *user, const char *pass);
} mf_opt_gate;

/* mf_optimize for a session: a fusion whose node no provider runs
 * (gate->supports says no) is not applied, so the unfused pattern runs,
 * and report->unfused counts it. gate NULL: mf_optimize, every fusion
 * applies (minfer optimize and compile have no providers to ask). */
minfer_status mf_optimize_gated(mf_graph *g, const mf_opt_ctx *ctx, const mf_opt_gate *gate,
                                const char *errctx);

/* ---- A stand-alone evaluator (core/exec/evaluator.c) ---------------------- */

/* An eval_node for callers without a session (minfer_optimize_model, the
 * tests): opens the CPU provider privately, runs one node serially. */
typedef struct mf_evaluator mf_evaluator;
minfer_status mf_evaluator_open(mf_evaluator **out);
/* The same on a CPU provider instance the caller holds open for longer
 * (a session's evaluator, place/state.h): nothing is opened. */
struct mf_provider_inst;
minfer_status mf_evaluator_on(const struct mf_provider_inst *cpu, mf_evaluator **out);
void mf_evaluator_close(mf_evaluator *ev);
/* Matches mf_opt_ctx.eval_node; user is the mf_evaluator. */
minfer_status mf_evaluator_eval_node(void *user, const mf_graph *g, int node,
                                     minfer_tensor **outputs);

#endif
