/*
 * What the optimizer's own files share: the state of one optimization
 * (mf_opt), the graph-rewrite helpers (rewrite.c), the type and shape
 * analysis (analysis.c) and the passes (passes_*.c) that the manager
 * (optimizer.c) runs.
 *
 * Included by the .c files of core/optimize only; the rest of core/ sees
 * the optimizer through optimize/optimizer.h (mf_optimize and its context).
 */
#ifndef MINFER_CORE_OPTIMIZE_PASSES_H
#define MINFER_CORE_OPTIMIZE_PASSES_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "optimize/optimizer.h"

/* ---- The state of one optimization --------------------------------------- */

/* What a pass knows about one value: type and shape as two probes see them.
 * The analysis runs shape inference twice, with every symbolic input
 * dimension replaced by a small probe size (distinct per name, different
 * between the two runs), evaluating small integer shape arithmetic on the
 * way. A dimension equal in both runs is static (dim >= 0); otherwise it
 * is symbolic, and two symbolic dimensions are the same expression when
 * both runs agree on them. Probes can be fooled (a dimension clamped by a
 * static bound below both probe sizes looks static), so a rewrite that bakes
 * a dimension into a constant uses s[], from a third run that leaves
 * symbolic dimensions unknown; the probes only decide whether shapes match,
 * and the fused kernels check shapes again when they run. */
typedef struct mf_vinfo {
    int32_t dtype; /* 0 unknown */
    int32_t rank;  /* -1 unknown */
    int64_t a[MINFER_MAX_RANK], b[MINFER_MAX_RANK]; /* per probe; -1 unknown */
    int64_t s[MINFER_MAX_RANK]; /* exactly known (no probes), else -1 */
} mf_vinfo;

typedef struct mf_probe_state mf_probe_state; /* analysis.c */

typedef struct mf_opt {
    mf_graph *g;
    const mf_opt_ctx *ctx;
    const char *errctx;
    unsigned char *dead; /* per node: removed by the current pass */
    size_t cap_dead;
    int *prod;           /* per value: producing live node, or -1 */
    int *cons_start;     /* per value: [cons_start[v], cons_start[v+1]) in cons */
    int *cons;           /* consuming live nodes (once per input slot) */
    unsigned char *pinned; /* per value: graph output or read by a subgraph */
    int *fill;           /* reindex's scratch, per value */
    size_t cap_index_values, cap_cons; /* capacities of the arrays above */
    size_t n_index_values; /* values covered by the index */
    mf_vinfo *info;      /* per value, NULL until asked for */
    size_t n_info;
    int info_dirty;
    int info_keep;       /* a pass whose edits change no value's type or shape (folding):
                            they leave the analysis as it is */
    unsigned name_seq;   /* for fresh value names */
    mf_probe_state *probe; /* the analysis' buffers and memo, NULL until asked for */
    int nomem; /* the analysis ran out of memory: the pass fails when it returns */
    /* gate.c: the session's providers (NULL: every fusion applies), and
     * copies of the nodes the current fusion edits in place, put back when
     * no provider of the session runs the fused node. */
    const mf_opt_gate *gate;
    const mf_opt_gate *deadline; /* its deadline member set, or NULL */
    mf_node saved[4];
    int saved_at[4];
    int n_saved;
    int save_failed; /* a node that cannot be copied: the fusion is kept unasked */
    int fuse_optional; /* set by fuse_concat, fuse_gated_conv and fuse_elementwise, whose
                          ops only some providers run: a declined one is not counted as
                          unfused */
    /* Level 2, until the fusions ran: constant folding leaves DequantizeLinear
     * nodes alone, for the QDQ fusions (passes_quant.c) to find. */
    int keep_dequantize;
} mf_opt;

/* One pass: returns an error only for a real failure (out of memory);
 * a pattern that does not match is simply left alone. */
typedef minfer_status (*mf_pass_fn)(mf_opt *o, size_t *fired);

/* 1 if node i was removed by the current pass (not yet swept). */
static inline int mf_opt_dead(const mf_opt *o, size_t i) {
    return i < o->cap_dead && o->dead[i];
}

/* ---- Graph-rewrite helpers (rewrite.c) ----------------------------------- */

/* Recomputes producers, consumers and pinned values after an edit. */
minfer_status mf_opt_reindex(mf_opt *o);
/* Number of live consumer slots of v (a node reading v twice counts 2). */
size_t mf_opt_nuses(const mf_opt *o, int v);
/* The live node producing v, or -1. */
int mf_opt_producer(const mf_opt *o, int v);
/* The only live consumer of v when v has exactly one use and is not
 * pinned (graph output, subgraph reference); else -1. */
int mf_opt_single_consumer(const mf_opt *o, int v);
/* Marks node i dead (swept after the pass). */
void mf_opt_kill(mf_opt *o, int i);
/* Every live node input reading `from` reads `to` instead. */
void mf_opt_replace_uses(mf_opt *o, int from, int to);
/* Removes a node whose output 0 equals its input 0 (Identity-like):
 * consumers read the input; when the output is pinned, the input's
 * producer writes the output instead. Returns 1 when removed. */
int mf_opt_bypass(mf_opt *o, int node);
/* The initializer of v, or NULL. */
const minfer_tensor *mf_opt_const(const mf_opt *o, int v);
/* A float initializer's single value (any rank, one element) into *out:
 * 1 when v is such a constant. */
int mf_opt_scalar(const mf_opt *o, int v, double *out);
/* A new initializer value (name derived from base) holding t (taken). */
int mf_opt_add_const(mf_opt *o, const char *base, minfer_tensor *t);
/* Makes node i an op of the minfer domain (version 1 imported). */
minfer_status mf_opt_set_op(mf_opt *o, int i, const char *domain, const char *op);
/* Attribute setters on node i (replace an attribute of the same name). */
minfer_status mf_opt_set_attr_int(mf_opt *o, int i, const char *name, int64_t v);
minfer_status mf_opt_set_attr_float(mf_opt *o, int i, const char *name, float v);
minfer_status mf_opt_set_attr_string(mf_opt *o, int i, const char *name, const char *v);
minfer_status mf_opt_set_attr_floats(mf_opt *o, int i, const char *name, const float *v,
                                     size_t n);
minfer_status mf_opt_set_attr_ints(mf_opt *o, int i, const char *name, const int64_t *v,
                                   size_t n);
/* Removes attribute name from node i (no-op when absent). */
void mf_opt_drop_attr(mf_opt *o, int i, const char *name);
/* Replaces node i's input list. */
minfer_status mf_opt_set_inputs(mf_opt *o, int i, const int *inputs, size_t n);
/* 1 if the node is op in the default domain. */
int mf_opt_is(const mf_graph *g, int i, const char *op);
/* Reads v's constant ints (int32/int64) into out: the count, or -1. */
int mf_opt_const_ints(const mf_opt *o, int v, int64_t *out, int cap);

/* For rewrite.c and analysis.c: */
/* Element count, or INT64_MAX when the shape is unknown or the product
 * overflows (a hostile model's dims): callers compare it with small caps. */
int64_t mf_opt_numel(const minfer_tensor_view *t);
/* Imports domain at version into g unless it is imported already. */
minfer_status mf_opt_add_opset(mf_graph *g, const char *domain, int64_t version);
/* The optimizer's out-of-memory error (set and returned). */
minfer_status mf_opt_oom(const mf_opt *o);

/* ---- The fusions' gate (gate.c) ------------------------------------------ */

/* Before a fusion edits node i in place: keeps a copy of it (call again for
 * each node the fusion edits in place). No-op without o->gate. */
minfer_status mf_opt_fuse_save(mf_opt *o, int i);
/* After the fusion made node i the fused node, before it kills the rest of
 * its pattern: 1 when some provider of the session runs node i as it now
 * is (or nobody is asked); else the saved nodes are put back as they were,
 * report->unfused counts it, and 0: the fusion stops there. */
int mf_opt_fuse_keep(mf_opt *o, int i);
/* Drops the saved copies (the manager, at the end). */
void mf_opt_fuse_free(mf_opt *o);

/* ---- The type and shape analysis (analysis.c) ---------------------------- */

/* Type and shape of v (see mf_vinfo); never NULL for a valid index. When
 * the analysis runs out of memory it answers "unknown" and sets o->nomem,
 * which fails the pass. */
const mf_vinfo *mf_opt_info(mf_opt *o, int v);
/* Dimension d as both probes see it when they agree (a static size for
 * matching patterns), else -1. */
static inline int64_t mf_opt_dim(const mf_vinfo *vi, int d) {
    return d >= 0 && d < vi->rank && vi->a[d] >= 0 && vi->a[d] == vi->b[d] ? vi->a[d] : -1;
}
/* 1 if two values have the same known shape (symbolic dims compared). */
int mf_opt_same_shape(mf_opt *o, int v, int w);
/* Frees the analysis' working memory (o->probe); NULL is a no-op. For the
 * manager, at the end of mf_optimize. */
void mf_opt_probe_free(mf_probe_state *ps);

/* ---- Passes, by family ----------------------------------------------------- */

minfer_status mf_pass_dead_nodes(mf_opt *o, size_t *fired);       /* passes_basic.c */
minfer_status mf_pass_identity(mf_opt *o, size_t *fired);
minfer_status mf_pass_constant_nodes(mf_opt *o, size_t *fired);
minfer_status mf_pass_fold_constants(mf_opt *o, size_t *fired);
minfer_status mf_pass_fold_shapes(mf_opt *o, size_t *fired);
minfer_status mf_pass_reshape_chains(mf_opt *o, size_t *fired);
minfer_status mf_pass_cast_pairs(mf_opt *o, size_t *fired);
minfer_status mf_pass_transpose_pairs(mf_opt *o, size_t *fired);
minfer_status mf_pass_fold_batchnorm(mf_opt *o, size_t *fired);   /* passes_batchnorm.c */
minfer_status mf_pass_batchnorm_relu_conv(mf_opt *o, size_t *fired);
minfer_status mf_pass_fold_pad(mf_opt *o, size_t *fired);         /* passes_cnn.c */
minfer_status mf_pass_single_concat(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_conv(mf_opt *o, size_t *fired);        /* passes_fuse.c */
minfer_status mf_pass_fuse_concat(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_gated_conv(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_elementwise(mf_opt *o, size_t *fired);
minfer_status mf_pass_half_as_float(mf_opt *o, size_t *fired);    /* passes_half.c */
minfer_status mf_pass_fuse_gemm(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_matmul(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_layernorm(mf_opt *o, size_t *fired);   /* passes_transformer.c */
minfer_status mf_pass_fuse_rmsnorm(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_gelu(mf_opt *o, size_t *fired);
minfer_status mf_pass_square_pow(mf_opt *o, size_t *fired);
minfer_status mf_pass_where_mask(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_attention(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_matmul_gelu(mf_opt *o, size_t *fired);
minfer_status mf_pass_fuse_rotary(mf_opt *o, size_t *fired);
minfer_status mf_pass_qdq_fuse(mf_opt *o, size_t *fired);         /* passes_quant.c */

#endif
