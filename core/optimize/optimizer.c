/*
 * The pass manager: which passes run, in what order, and what happens
 * between two passes. The helpers the passes edit the graph with are in
 * rewrite.c, the type and shape analysis they ask in analysis.c, the
 * passes in passes_*.c (all declared in passes.h).
 *
 * mf_optimize runs, for level >= 1:
 *  1. the basic passes in order (Constant nodes to initializers, float16
 *     computed in float when the session asks (ctx->half_as_float), Identity
 *     and Dropout removal, dead nodes, shape subgraphs, constant folding,
 *     Reshape chains, Cast and Transpose pairs, BatchNormalization
 *     folding, zero Pads into Conv and AveragePool, one-input Concats),
 *     repeated until a round changes nothing (at most 8 rounds);
 *  2. for level >= 2, the fusions (QDQ groups into integer ops, LayerNorm, RMSNorm, Gelu, Pow(x, 2) as
 *     a Mul, rotary embeddings, constant Where masks as Adds, Attention,
 *     MatMul, Gemm, Gelu
 *     into MatMul/Gemm, BatchNormalization + Relu as a depthwise Conv,
 *     Conv), then the basic passes once more; until then constant folding
 *     leaves DequantizeLinear nodes alone, for the QDQ fusion;
 *  3. unreferenced initializers are dropped and the graph is finalized.
 *
 * A pass marks the nodes it removes dead and edits the rest in place: a
 * fusion turns the last node of its pattern into the fused node, so the
 * pattern's output value (and its name) stays. After each pass the dead
 * nodes are swept, the graph is finalized again (a pass that broke it is
 * an error naming the pass), and the use index is rebuilt.
 *
 * The analysis (analysis.c) and the use index (rewrite.c) keep their
 * buffers for the whole of mf_optimize, which frees them. An allocation
 * that fails anywhere, the analysis included, fails the optimization with
 * NOMEM.
 */
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

#define MAX_ROUNDS 8

typedef struct pass_entry {
    const char *name;
    mf_pass_fn fn;
} pass_entry;

static const pass_entry basic_passes[] = {
    {"constant_nodes", mf_pass_constant_nodes},
    {"half_as_float", mf_pass_half_as_float},
    {"identity_removal", mf_pass_identity},
    {"dead_nodes", mf_pass_dead_nodes},
    {"fold_shapes", mf_pass_fold_shapes},
    {"fold_constants", mf_pass_fold_constants},
    {"reshape_chains", mf_pass_reshape_chains},
    {"cast_pairs", mf_pass_cast_pairs},
    {"transpose_pairs", mf_pass_transpose_pairs},
    {"fold_batchnorm", mf_pass_fold_batchnorm},
    {"fold_pad", mf_pass_fold_pad},
    {"single_concat", mf_pass_single_concat},
    {"dead_nodes", mf_pass_dead_nodes},
};

static const pass_entry fusion_passes[] = {
    {"qdq_fuse", mf_pass_qdq_fuse},
    {"fuse_layernorm", mf_pass_fuse_layernorm},
    {"fuse_rmsnorm", mf_pass_fuse_rmsnorm},
    {"fuse_gelu", mf_pass_fuse_gelu},
    {"square_pow", mf_pass_square_pow},
    {"fuse_rotary", mf_pass_fuse_rotary},
    {"where_mask", mf_pass_where_mask},
    {"fuse_attention", mf_pass_fuse_attention},
    {"fuse_matmul", mf_pass_fuse_matmul},
    {"fuse_gemm", mf_pass_fuse_gemm},
    {"fuse_matmul_gelu", mf_pass_fuse_matmul_gelu},
    {"batchnorm_relu_conv", mf_pass_batchnorm_relu_conv},
    {"fuse_conv", mf_pass_fuse_conv},
    {"fuse_concat", mf_pass_fuse_concat},
    {"fuse_gated_conv", mf_pass_fuse_gated_conv},
    {"fuse_elementwise", mf_pass_fuse_elementwise},
};

/* ---- the manager ---------------------------------------------------------- */

static void free_node(mf_node *n) {
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->inputs);
    free(n->outputs);
    for (size_t a = 0; a < n->n_attrs; a++)
        mf_attr_clear(&n->attrs[a]);
    free(n->attrs);
}

/* Drops dead nodes, finalizes, rebuilds the index. */
static minfer_status sweep(mf_opt *o, const char *pass) {
    mf_graph *g = o->g;
    size_t w = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (mf_opt_dead(o, i)) {
            mf_attr_mismatch_keep(g, &g->nodes[i]); /* a misread attribute still fails */
            free_node(&g->nodes[i]);
            continue;
        }
        g->nodes[w++] = g->nodes[i];
    }
    g->n_nodes = w;
    memset(o->dead, 0, o->cap_dead);
    minfer_status st = mf_graph_finalize(g, o->errctx);
    if (st != MINFER_OK)
        return mf_error_prefix(st, "optimizer pass %s left an invalid graph", pass);
    return mf_opt_reindex(o);
}

static void report_add(mf_opt_report *r, const char *name, size_t fired) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n_passes; i++)
        if (strcmp(r->passes[i].name, name) == 0) {
            r->passes[i].fired += fired;
            return;
        }
    if (r->n_passes < sizeof r->passes / sizeof r->passes[0]) {
        r->passes[r->n_passes].name = name;
        r->passes[r->n_passes++].fired = fired;
    }
}

static minfer_status run_passes(mf_opt *o, const pass_entry *passes, size_t n, int keep_info,
                                size_t *total) {
    for (size_t p = 0; p < n; p++) {
        size_t fired = 0;
        o->info_keep = keep_info;
        minfer_status st = passes[p].fn(o, &fired);
        o->info_keep = 0;
        if (st == MINFER_OK && o->nomem)
            st = mf_error(MINFER_ERR_NOMEM, "out of memory analysing shapes");
        if (st != MINFER_OK)
            return mf_error_prefix(st, "%s: optimizer pass %s", o->errctx, passes[p].name);
        if ((st = sweep(o, passes[p].name)) != MINFER_OK)
            return st;
        if (o->deadline && (st = o->deadline->deadline(o->deadline->user, passes[p].name)) !=
                               MINFER_OK)
            return st;
        report_add(o->ctx->report, passes[p].name, fired);
        *total += fired;
    }
    return MINFER_OK;
}

/* Frees initializers nothing reads any more (not inputs, not outputs). */
static void drop_unused_initializers(mf_opt *o) {
    mf_graph *g = o->g;
    for (size_t v = 0; v < g->n_values; v++) {
        mf_value *val = &g->values[v];
        if (!val->initializer || val->is_output || o->pinned[v] || mf_opt_nuses(o, (int)v))
            continue;
        minfer_tensor_free(val->initializer);
        val->initializer = NULL;
    }
}

minfer_status mf_optimize(mf_graph *g, const mf_opt_ctx *ctx, const char *errctx) {
    return mf_optimize_gated(g, ctx, NULL, errctx);
}

minfer_status mf_optimize_gated(mf_graph *g, const mf_opt_ctx *ctx, const mf_opt_gate *gate,
                                const char *errctx) {
    mf_opt o;
    mf_opt_ctx local;
    minfer_status st;
    if (!g || !ctx)
        return mf_error(MINFER_ERR_INVALID_ARG, "mf_optimize: NULL argument");
    if (!errctx)
        errctx = "<model>";
    local = *ctx;
    if (!local.fold_max_bytes)
        local.fold_max_bytes = MF_FOLD_MAX_BYTES;
    if (local.report) {
        local.report->n_passes = 0;
        local.report->analysis_nodes = local.report->evaluations = 0;
        local.report->unfused = 0;
        local.report->nodes_before = local.report->nodes_after = g->n_nodes;
    }
    if (local.level < 0 || local.level > 3)
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: optimization level %d (0 to 3)", errctx,
                        local.level);
    if ((st = mf_graph_finalize(g, errctx)) != MINFER_OK || local.level == 0)
        return st;
    memset(&o, 0, sizeof o);
    o.g = g;
    o.ctx = &local;
    o.errctx = errctx;
    o.gate = gate && gate->supports ? gate : NULL;
    o.deadline = gate && gate->deadline ? gate : NULL;
    if ((st = mf_opt_reindex(&o)) != MINFER_OK)
        goto done;
    o.keep_dequantize = local.level >= 2;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        size_t total = 0;
        if ((st = run_passes(&o, basic_passes, sizeof basic_passes / sizeof basic_passes[0], 0,
                             &total)) != MINFER_OK)
            goto done;
        if (!total)
            break;
    }
    if (local.level >= 2) {
        size_t total = 0;
        if ((st = run_passes(&o, fusion_passes, sizeof fusion_passes / sizeof fusion_passes[0], 1,
                             &total)) != MINFER_OK)
            goto done;
        o.keep_dequantize = 0;
        if ((st = run_passes(&o, basic_passes, sizeof basic_passes / sizeof basic_passes[0], 0,
                             &total)) != MINFER_OK)
            goto done;
    }
    drop_unused_initializers(&o);
    st = mf_graph_finalize(g, errctx);
    if (local.report)
        local.report->nodes_after = g->n_nodes;
done:
    free(o.dead);
    free(o.prod);
    free(o.cons_start);
    free(o.cons);
    free(o.pinned);
    free(o.fill);
    free(o.info);
    mf_opt_probe_free(o.probe);
    mf_opt_fuse_free(&o);
    return st;
}
