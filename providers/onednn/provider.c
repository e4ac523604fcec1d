/*
 * The oneDNN provider: float32 convolutions, matrix products, pools,
 * normalizations, elementwise ops and data movement (Transpose, Slice,
 * reshapes) on oneDNN 2.6 (C API, 2.x calls).
 *
 * 1. init creates a CPU engine and an in-order stream for the session and
 *    records the session's thread count. With several threads (and the
 *    option split=auto, the default, or on), every primitive is built for
 *    one OpenMP thread and a large node is split into pieces that run side
 *    by side on the session's pool (split.c). With split=off, oneDNN
 *    threads with OpenMP: every call into oneDNN first sets
 *    omp_set_num_threads to the session's count (or to 1 for a node too
 *    small to repay waking the other workers, see node_threads), so the
 *    core's pool (asleep while a provider runs) and OpenMP never run more
 *    threads than the session asked for.
 * 2. supports_operator looks the op up in the table below and runs its build
 *    function in check mode: an unknown dimension that the op ties to a
 *    known one (the inner dimension of a product, a broadcast axis) takes
 *    its value (unify_unknown), the others get stand-ins (1 for the batch,
 *    64 otherwise); prepare decides again with the concrete shapes.
 *    Primitive descriptors are created with format_tag_any where oneDNN
 *    may choose, and a node is declined, with the reason, when an
 *    attribute has no oneDNN form or when oneDNN would only offer a
 *    reference ("ref:") implementation.
 * 3. prepare_node builds the node for the plan's concrete shapes: primitive
 *    descriptors, constant weights reordered once into the primitive's
 *    layout, primitives created (JIT) once, the scratchpad (user mode) and
 *    reorder buffers sized into minfer_node_prep.workspace_bytes. A large
 *    node is also built as pieces (dnn_split_build; their workspaces
 *    follow one another), or, with split=off, a node that runs on several
 *    OpenMP threads is built a second time for one thread (sharing the
 *    packed weights); a large node without a split form is built a second
 *    time for the session's OpenMP threads, and
 * 4. execute_node runs the pieces through the host's parallel_for, or the
 *    build that measured faster (pick_variant): it binds data handles,
 *    executes the steps and waits. A lock per node makes concurrent runs
 *    take turns on its oneDNN memory objects.
 *
 * Layouts. A tensor layout is a uint64: 0 is plain row-major; k > 0 is the
 * k-th oneDNN memory descriptor this instance registered (dnn_layout_id),
 * e.g. the NHWC or nChw16c layout a convolution chose with format_tag_any.
 * With its own memory domain ("onednn", host memory allocated here, so a
 * buffer handle is a host pointer) an output keeps the layout its primitive
 * chose, and prepare_node writes it to output_layouts[o]. Consumers on this
 * provider receive it: prepare_node reads an input's layout in its
 * minfer_value_desc (ABI 2), where the host puts the layout the producer
 * reported when the producer computes in this domain; a value it never
 * produced arrives plain (from the host, through copy_from_host).
 * copy_to_host and copy_from_host reorder between a registered layout and
 * plain with reorders made at registration. Built
 * without the memory domain (-DMINFER_ONEDNN_OWN_DOMAIN=OFF, a debugging
 * aid) every output is plain, and a primitive that prefers another layout
 * gets reorders into its workspace.
 */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onednn.h"

/* Log is left to the CPU provider: oneDNN 2.6's log is off by about 1e-6
 * near 1 (log(1) = -1.4e-6), outside the ONNX backend tests' tolerance. */
static const dnn_op ops[] = {
    /* conv.c */
    {"", "Conv", 1, dnn_build_conv, 0, 0},
    {"", "ConvTranspose", 1, dnn_build_conv_transpose, 0, 0},
    {"minfer", "FusedConv", 1, dnn_build_conv, 0, 0},
    /* matmul.c */
    {"", "MatMul", 1, dnn_build_matmul, 0, 0},
    {"minfer", "FusedMatMul", 1, dnn_build_matmul, 0, 0},
    {"", "Gemm", 7, dnn_build_gemm, 0, 0},
    {"minfer", "FusedGemm", 1, dnn_build_gemm, 0, 0},
    /* attention.c */
    {"minfer", "Attention", 1, dnn_build_attention, 0, 0},
    /* rnn.c: X, W, R and B float; sequence_lens (declined) is not */
    {"", "RNN", 7, dnn_build_rnn, 0, 4},
    {"", "GRU", 7, dnn_build_rnn, 0, 4},
    {"", "LSTM", 7, dnn_build_rnn, 0, 4},
    /* pool.c */
    {"", "MaxPool", 1, dnn_build_pool, 0, 0},
    {"", "AveragePool", 1, dnn_build_pool, 0, 0},
    {"", "GlobalAveragePool", 1, dnn_build_global_pool, 0, 0},
    {"", "GlobalMaxPool", 1, dnn_build_global_pool, 0, 0},
    /* norm.c */
    {"", "BatchNormalization", 7, dnn_build_batchnorm, 1, 0},
    {"", "LRN", 1, dnn_build_lrn, 1, 0},
    {"", "Softmax", 1, dnn_build_softmax, 1, 0},
    {"", "LogSoftmax", 1, dnn_build_softmax, 1, 0},
    {"", "LayerNormalization", 17, dnn_build_layernorm, 1, 0},
    {"minfer", "LayerNormalization", 1, dnn_build_layernorm, 1, 0},
    {"minfer", "RMSNormalization", 1, dnn_build_rmsnorm, 1, 0},
    /* eltwise.c */
    {"", "Relu", 6, dnn_build_unary, 1, 0},
    {"", "LeakyRelu", 6, dnn_build_unary, 1, 0},
    {"", "Elu", 6, dnn_build_unary, 1, 0},
    {"", "Sigmoid", 6, dnn_build_unary, 1, 0},
    {"", "Tanh", 6, dnn_build_unary, 1, 0},
    {"", "HardSigmoid", 6, dnn_build_unary, 1, 0},
    {"", "HardSwish", 14, dnn_build_unary, 1, 0},
    {"", "Exp", 6, dnn_build_unary, 1, 0},
    {"", "Sqrt", 6, dnn_build_unary, 1, 0},
    {"", "Abs", 6, dnn_build_unary, 1, 0},
    {"", "Clip", 6, dnn_build_unary, 1, 0},
    {"", "Clip", 11, dnn_build_unary, 1, 0},
    {"", "Gelu", 20, dnn_build_unary, 1, 0},
    {"minfer", "Gelu", 1, dnn_build_unary, 1, 0},
    {"", "Add", 7, dnn_build_binary, 0, 0},
    {"", "Sub", 7, dnn_build_binary, 0, 0},
    {"", "Mul", 7, dnn_build_binary, 0, 0},
    {"", "Div", 7, dnn_build_binary, 0, 0},
    {"", "Min", 8, dnn_build_variadic, 0, 0},
    {"", "Max", 8, dnn_build_variadic, 0, 0},
    {"", "Sum", 8, dnn_build_variadic, 0, 0},
    {"", "Concat", 4, dnn_build_concat, 0, 0},
    /* shape.c: only the data input is float; the output's shape is the host's */
    {"", "Transpose", 1, dnn_build_transpose, 0, 1},
    {"", "Slice", 10, dnn_build_slice, 0, 1},
    {"", "Reshape", 5, dnn_build_reshape, 0, 1},
    {"", "Flatten", 1, dnn_build_reshape, 0, 1},
    {"", "Squeeze", 1, dnn_build_reshape, 0, 1},
    {"", "Unsqueeze", 1, dnn_build_reshape, 0, 1},
};

#define N_OPS (sizeof ops / sizeof ops[0])

/* ---- Layout registry and value layouts ------------------------------------ */

static int md_plain(const dnnl_memory_desc_t *md) {
    dnnl_memory_desc_t p;
    return dnn_plain_md(&p, md->ndims, md->dims) == dnnl_success &&
           dnnl_memory_desc_equal(&p, md);
}

static dnnl_status_t make_reorder(dnn_ctx *ctx, const dnnl_memory_desc_t *src,
                                  const dnnl_memory_desc_t *dst, dnnl_primitive_t *prim) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, src, ctx->engine, dst,
                                                         ctx->engine, NULL);
    if (s == dnnl_success)
        s = dnnl_primitive_create(prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return s;
}

uint64_t dnn_layout_id(dnn_ctx *ctx, const dnnl_memory_desc_t *md) {
    if (md_plain(md))
        return 0;
    for (size_t i = 0; i < ctx->n_layouts; i++)
        if (dnnl_memory_desc_equal(&ctx->layouts[i].md, md))
            return i + 1;
    if (ctx->n_layouts == ctx->cap_layouts) {
        size_t cap = ctx->cap_layouts ? 2 * ctx->cap_layouts : 16;
        dnn_layout *l = realloc(ctx->layouts, cap * sizeof *l);
        if (!l)
            return UINT64_MAX;
        ctx->layouts = l;
        ctx->cap_layouts = cap;
    }
    dnn_layout *l = &ctx->layouts[ctx->n_layouts];
    memset(l, 0, sizeof *l);
    l->md = *md;
    dnnl_status_t s = dnn_plain_md(&l->plain, md->ndims, md->dims);
    if (s == dnnl_success)
        s = make_reorder(ctx, &l->md, &l->plain, &l->to_plain);
    if (s == dnnl_success)
        s = make_reorder(ctx, &l->plain, &l->md, &l->from_plain);
    if (s == dnnl_success)
        s = dnnl_memory_create(&l->m_md, &l->md, ctx->engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success)
        s = dnnl_memory_create(&l->m_plain, &l->plain, ctx->engine, DNNL_MEMORY_NONE);
    if (s != dnnl_success) {
        dnnl_primitive_destroy(l->to_plain);
        dnnl_primitive_destroy(l->from_plain);
        dnnl_memory_destroy(l->m_md);
        dnnl_memory_destroy(l->m_plain);
        return UINT64_MAX;
    }
    return ++ctx->n_layouts;
}

const dnn_layout *dnn_layout_get(const dnn_ctx *ctx, uint64_t id) {
    return id >= 1 && id <= ctx->n_layouts ? &ctx->layouts[id - 1] : NULL;
}

/* ---- Instance ------------------------------------------------------------- */

static int parse_split(const char *v, int *split) {
    static const char *const names[] = {"auto", "on", "off"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, names[i])) {
            *split = i; /* DNN_SPLIT_AUTO, _ON, _OFF */
            return 0;
        }
    return -1;
}

static minfer_status dnn_init(const minfer_host_api *api, void *host, const char *options,
                              void **out) {
    *out = NULL;
    if (!api || !api->set_error)
        return MINFER_ERR_INVALID_ARG;
    /* split=auto|on|off (else MINFER_ONEDNN_SPLIT): see split.c. */
    const char *env = getenv("MINFER_ONEDNN_SPLIT");
    int split = DNN_SPLIT_AUTO;
    if (env && *env && parse_split(env, &split) != 0) {
        api->set_error(host, "onednn: MINFER_ONEDNN_SPLIT='%s': takes auto, on or off", env);
        return MINFER_ERR_INVALID_ARG;
    }
    if (options && options[0] &&
        (strncmp(options, "split=", 6) || parse_split(options + 6, &split) != 0)) {
        api->set_error(host, "onednn: unknown provider options '%s' (it takes split=auto|on|off)",
                       options);
        return MINFER_ERR_INVALID_ARG;
    }
    dnn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        api->set_error(host, "onednn: out of memory");
        return MINFER_ERR_NOMEM;
    }
    ctx->api = api;
    ctx->host = host;
    ctx->split = split;
    ctx->threads = api->num_threads ? api->num_threads(host) : 1;
    if (ctx->threads < 1)
        ctx->threads = 1;
    /* auto: split forms on the host's pool up to 8 threads, OpenMP builds
     * above. Measured on 16 cores (docs/PERFORMANCE.md, "16 cores"): at 16
     * threads the OpenMP builds ran ResNet-18 in 3.0-3.2 ms against the
     * split forms' 5.6, Inception V3 11-12 against 20-21, at 8 threads
     * neither way won on every model. */
    if (ctx->split == DNN_SPLIT_AUTO && ctx->threads > DNN_SPLIT_AUTO_MAX_THREADS) {
        ctx->split = DNN_SPLIT_OFF;
        api->log(host, MINFER_LOG_VERBOSE, "onednn: %d threads: OpenMP builds, no split forms "
                 "(split=auto splits up to %d threads)", ctx->threads,
                 DNN_SPLIT_AUTO_MAX_THREADS);
    }
#ifdef ONEDNN_OWN_DOMAIN
    ctx->private_layouts = 1;
#endif
    dnnl_status_t s = dnnl_engine_create(&ctx->engine, dnnl_cpu, 0);
    if (s == dnnl_success)
        s = dnnl_stream_create(&ctx->stream, ctx->engine, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        api->set_error(host, "onednn: could not create a CPU engine and stream (status %d)",
                       (int)s);
        if (ctx->engine)
            dnnl_engine_destroy(ctx->engine);
        free(ctx);
        return MINFER_ERR_PROVIDER;
    }
    *out = ctx;
    return MINFER_OK;
}

static void dnn_shutdown(void *vctx) {
    dnn_ctx *ctx = vctx;
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->n_layouts; i++) {
        dnn_layout *l = &ctx->layouts[i];
        dnnl_primitive_destroy(l->to_plain);
        dnnl_primitive_destroy(l->from_plain);
        dnnl_memory_destroy(l->m_md);
        dnnl_memory_destroy(l->m_plain);
    }
    free(ctx->layouts);
    dnnl_stream_destroy(ctx->stream);
    dnnl_engine_destroy(ctx->engine);
    free(ctx);
}

/* The table entry for the node's opset (the provider kit's lookup). */
static const dnn_op *lookup(const minfer_node_desc *node, int *any) {
    return MINFER_KIT_LOOKUP(dnn_op, ops, N_OPS, node->domain, node->op_type, node->opset, any);
}

void dnn_node_free(dnn_node *n) {
    if (!n)
        return;
    for (int i = 0; i < n->n_steps; i++)
        dnnl_primitive_destroy(n->steps[i].prim);
    for (int i = 0; i < n->n_mems; i++)
        dnnl_memory_destroy(n->mems[i].mem);
    for (int i = 0; i < n->n_owned; i++)
        free(n->owned[i]);
    free(n->in_layout);
    free(n);
}

/* ---- Threads per node -------------------------------------------------------- */

/* Rough cost of a node: floating-point operations of the products
 * (convolutions, matrix products, attention), else the elements it reads
 * and writes. */
static double numel_of(const minfer_value_desc *v) {
    return v && v->present && v->rank >= 0 ? (double)dnn_numel(v->rank, v->dims) : 0.0;
}

static int node_is(const minfer_node_desc *node, const char *op) {
    return !strcmp(node->op_type, op);
}

double dnn_node_work(const minfer_node_desc *node, int *product) {
    const minfer_value_desc *x = node->n_inputs > 0 ? &node->inputs[0] : NULL;
    const minfer_value_desc *w = node->n_inputs > 1 ? &node->inputs[1] : NULL;
    const minfer_value_desc *y = node->n_outputs > 0 ? &node->outputs[0] : NULL;
    double out = numel_of(y);
    *product = 1;
    if ((node_is(node, "Conv") || node_is(node, "FusedConv")) && w && w->rank >= 1 &&
        w->dims[0] > 0)
        return 2.0 * out * numel_of(w) / (double)w->dims[0];
    if (node_is(node, "ConvTranspose") && w && w->rank >= 1 && w->dims[0] > 0)
        return 2.0 * numel_of(x) * numel_of(w) / (double)w->dims[0];
    if ((node_is(node, "MatMul") || node_is(node, "FusedMatMul")) && x && x->rank >= 1)
        return 2.0 * out * (double)x->dims[x->rank - 1];
    if ((node_is(node, "Gemm") || node_is(node, "FusedGemm")) && out > 0) /* A B / Y = K^2 */
        return 2.0 * out * sqrt(numel_of(x) * numel_of(w) / out);
    if (node_is(node, "Attention") && node->n_inputs >= 3 && x && x->rank >= 2 && w &&
        w->rank >= 1 && y && y->rank >= 1 && y->dims[y->rank - 1] > 0) {
        double scores = out / (double)y->dims[y->rank - 1] * (double)w->dims[w->rank - 1];
        return 2.0 * scores * (double)(x->dims[x->rank - 1] + y->dims[y->rank - 1]);
    }
    /* RNN, GRU, LSTM: X [S, B, I] times W and the state times R, each step. */
    if ((node_is(node, "RNN") || node_is(node, "GRU") || node_is(node, "LSTM")) && x &&
        x->rank == 3 && x->dims[2] > 0 && node->n_inputs >= 3)
        return 2.0 * numel_of(x) / (double)x->dims[2] * (numel_of(w) + numel_of(&node->inputs[2]));
    *product = 0;
    double e = out;
    for (size_t i = 0; i < node->n_inputs; i++)
        if (!node->inputs[i].const_data)
            e += numel_of(&node->inputs[i]);
    return e;
}

/* The threads a node runs on (split=off): the session's, but one for a
 * node too small to repay waking the other OpenMP workers (with passive
 * waiting, waking them costs tens of microseconds; more where the other
 * cores are busy). */
#define DNN_MIN_FLOPS_MT 4e6  /* about 30 us on one core */
#define DNN_MIN_ELEMS_MT 1.5e5 /* elements read and written */
/* A split form (split.c) runs on the host's pool, whose workers spin
 * between jobs: it pays from a smaller node (about 7 us on one core). */
#define DNN_MIN_FLOPS_SPLIT 1e6
#define DNN_MIN_ELEMS_SPLIT 5e4

static int node_threads(const dnn_ctx *ctx, const minfer_node_desc *node) {
    /* With split forms on, OpenMP stays at one thread: its workers would
     * contend for the CPUs with the pool's spinning ones. */
    if (ctx->threads <= 1 || ctx->split != DNN_SPLIT_OFF)
        return 1;
    int product;
    double work = dnn_node_work(node, &product);
    return work < (product ? DNN_MIN_FLOPS_MT : DNN_MIN_ELEMS_MT) ? 1 : ctx->threads;
}

minfer_status dnn_build_node(dnn_ctx *ctx, const minfer_node_desc *node, minfer_node_prep *prep,
                             int check, int threads, const dnn_node *share,
                             const dnn_piece_io *pio, dnn_node **out, char *why,
                             size_t why_size) {
    int any;
    const dnn_op *op = lookup(node, &any);
    *out = NULL;
    if (!op) {
        minfer_kit_no_kernel(node, any, "oneDNN op", why, why_size);
        return MINFER_ERR_UNSUPPORTED;
    }
    dnn_node *n = calloc(1, sizeof *n);
    if (!n || !(n->in_layout = calloc(node->n_inputs + 1, sizeof *n->in_layout))) {
        free(n);
        snprintf(why, why_size, "out of memory");
        return MINFER_ERR_NOMEM;
    }
    n->n_in = node->n_inputs;
    n->dyn_rank = -1;
    if (ctx->private_layouts && !check && !pio)
        for (size_t i = 0; i < node->n_inputs; i++)
            if (node->inputs[i].present)
                n->in_layout[i] = minfer_kit_input_layout(node, i);
    dnn_b b = {ctx, node, prep, check, n, 0, {{0}}, 0, why, why_size, share, pio};
    n->threads = threads > 0 ? threads : node_threads(ctx, node);
    omp_set_num_threads(n->threads);
    minfer_status st = dnn_require_float(&b, op->float_inputs);
    for (size_t i = 0; st == MINFER_OK && i < node->n_inputs; i++) {
        const minfer_value_desc *v = dnn_in(&b, i);
        if (v && dnn_numel(v->rank, v->dims) == 0)
            st = dnn_decline(&b, "input %zu is empty", i);
    }
    if (st == MINFER_OK)
        st = op->build(&b);
    for (int k = 0; st == MINFER_OK && k < b.n_pend; k++)
        st = dnn_reorder_step(&b, b.pend[k].src, b.pend[k].dst);
    if (st != MINFER_OK) {
        dnn_node_free(n);
        return st;
    }
    n->ws_bytes = n->scratch_bytes + b.ws_extra;
    *out = n;
    return MINFER_OK;
}

/* 1 when the host could not infer an output's shape: only output 0 of an
 * op that keeps its input's shape can then be allocated at execute. */
static int unknown_outputs(const minfer_node_desc *node, const dnn_op *op, char *why,
                           size_t why_size) {
    for (size_t o = 0; o < node->n_outputs; o++)
        if (node->outputs[o].rank < 0 && node->outputs[o].name && node->outputs[o].name[0] &&
            (o > 0 || !op || !op->same_shape)) {
            snprintf(why, why_size, "%s: the shape of output %zu is not known before the run",
                     node->op_type, o);
            return 1;
        }
    return 0;
}

/* ---- Unknown dimensions in supports_operator ------------------------------- */

/* Dimensions that are symbolic (-1) when supports_operator runs are decided
 * at prepare, with the plan's concrete shapes. Before the stand-ins replace
 * them, each unknown dimension that the op ties to a known one (the inner
 * dimension of a matrix product, an aligned axis of a broadcast, the
 * non-concatenated axes of Concat) takes that value, so that a node is never
 * declined for a mismatch that exists only between stand-ins. */

static int64_t *dim_at(minfer_value_desc *v, int axis) {
    if (!v || !v->present || v->rank < 0)
        return NULL;
    if (axis < 0)
        axis += v->rank;
    return axis >= 0 && axis < v->rank ? &v->dims[axis] : NULL;
}

/* Ties two dimensions: an unknown one takes the other's value. */
static void tie(int64_t *a, int64_t *b) {
    if (!a || !b)
        return;
    if (*a < 0 && *b >= 0)
        *a = *b;
    else if (*b < 0 && *a >= 0)
        *b = *a;
}

/* Right-aligned broadcast of tensors v[0..n) (NULL entries skipped): an
 * unknown dimension takes a known value other than 1 found at its aligned
 * position; where there is none it is left to the stand-ins. skip_last:
 * trailing axes not aligned (2 for the batch axes of a matrix product). */
static void tie_broadcast(minfer_value_desc **v, size_t n, int skip_last) {
    int maxr = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i] && v[i]->present && v[i]->rank > maxr)
            maxr = v[i]->rank;
    for (int k = skip_last + 1; k <= maxr; k++) {
        int64_t known = -1;
        for (size_t i = 0; i < n; i++) {
            int64_t *d = v[i] && v[i]->rank >= k ? dim_at(v[i], -k) : NULL;
            if (d && *d > 1)
                known = *d;
        }
        for (size_t i = 0; known > 1 && i < n; i++) {
            int64_t *d = v[i] && v[i]->rank >= k ? dim_at(v[i], -k) : NULL;
            if (d && *d < 0)
                *d = known;
        }
    }
}

static int op_is(const minfer_node_desc *node, const char *domain, const char *op) {
    return !strcmp(node->domain, domain) && !strcmp(node->op_type, op);
}

static void node_attr_int(const dnn_ctx *ctx, const minfer_node_desc *node, const char *name,
                          int64_t *v) {
    int64_t t;
    if (ctx->api->attr_int(node, name, &t))
        *v = t;
}

static void unify_unknown(dnn_ctx *ctx, const minfer_node_desc *node, minfer_value_desc *in,
                          minfer_value_desc *out) {
    size_t ni = node->n_inputs, no = node->n_outputs;
    minfer_value_desc *i0 = ni > 0 ? &in[0] : NULL, *i1 = ni > 1 ? &in[1] : NULL;
    minfer_value_desc *i2 = ni > 2 ? &in[2] : NULL, *i3 = ni > 3 ? &in[3] : NULL;
    minfer_value_desc *o0 = no > 0 ? &out[0] : NULL;
    if (o0 && o0->rank < 0)
        o0 = NULL;
    if (op_is(node, "", "MatMul") || op_is(node, "minfer", "FusedMatMul")) {
        if (!i0 || !i1 || i0->rank < 1 || i1->rank < 1)
            return;
        tie(dim_at(i0, -1), dim_at(i1, i1->rank >= 2 ? -2 : 0));
        if (i1->rank >= 2) {
            tie(dim_at(i1, -1), o0 ? dim_at(o0, -1) : NULL);
            tie(dim_at(i1, -1), op_is(node, "minfer", "FusedMatMul") ? dim_at(i2, 0) : NULL);
        }
        if (i0->rank >= 2 && o0)
            tie(dim_at(i0, -2), dim_at(o0, i1->rank >= 2 ? -2 : -1));
        minfer_value_desc *v[3] = {i0, i1, o0};
        tie_broadcast(v, 3, 2);
    } else if (op_is(node, "", "Gemm") || op_is(node, "minfer", "FusedGemm")) {
        if (!i0 || !i1 || i0->rank != 2 || i1->rank != 2)
            return;
        int64_t ta = 0, tb = 0;
        node_attr_int(ctx, node, "transA", &ta);
        node_attr_int(ctx, node, "transB", &tb);
        int64_t *m = dim_at(i0, ta ? 1 : 0), *n = dim_at(i1, tb ? 0 : 1);
        tie(dim_at(i0, ta ? 0 : 1), dim_at(i1, tb ? 1 : 0));
        if (o0 && o0->rank == 2) {
            tie(m, dim_at(o0, 0));
            tie(n, dim_at(o0, 1));
        }
        if (i2 && i2->present && i2->rank >= 1) {
            int64_t *c = dim_at(i2, -1);
            if (c && *c < 0)
                *c = n && *n >= 0 ? *n : 1;
            c = i2->rank == 2 ? dim_at(i2, 0) : NULL;
            if (c && *c < 0)
                *c = m && *m >= 0 ? *m : 1;
        }
    } else if (op_is(node, "minfer", "Attention")) {
        if (!i0 || !i1 || !i2 || i0->rank < 2 || i1->rank < 2 || i2->rank < 2)
            return;
        tie(dim_at(i0, -1), dim_at(i1, -2)); /* D */
        tie(dim_at(i1, -1), dim_at(i2, -2)); /* Sk */
        tie(dim_at(i0, -2), o0 ? dim_at(o0, -2) : NULL);
        tie(dim_at(i2, -1), o0 ? dim_at(o0, -1) : NULL);
        /* A mask that knows a leading axis (T5's position bias, [1, heads,
         * S, S]) tells the scores' own, which the mask may not widen. */
        minfer_value_desc *v[5] = {i0, i1, i2, o0, i3 && i3->present ? i3 : NULL};
        tie_broadcast(v, 5, 2);
        if (i3 && i3->present && i3->rank >= 1) {
            /* The mask against the scores [batch..., Sq, Sk]. */
            tie(dim_at(i3, -1), dim_at(i1, -1));
            if (i3->rank >= 2)
                tie(dim_at(i3, -2), dim_at(i0, -2));
            for (int k = 3; k <= i3->rank; k++) {
                int64_t *d = dim_at(i3, -k);
                int64_t *q = i0->rank >= k ? dim_at(i0, -k) : NULL;
                int64_t *t = i1->rank >= k ? dim_at(i1, -k) : NULL;
                if (*d < 0)
                    *d = q && *q > 1 ? *q : t && *t > 1 ? *t : 1;
            }
            for (int d = 0; d < i3->rank; d++)
                if (i3->dims[d] < 0)
                    i3->dims[d] = 1;
        }
    } else if (op_is(node, "", "Add") || op_is(node, "", "Sub") || op_is(node, "", "Mul") ||
               op_is(node, "", "Div") || op_is(node, "", "Min") || op_is(node, "", "Max") ||
               op_is(node, "", "Sum")) {
        minfer_value_desc *v[65];
        size_t n = 0;
        for (size_t i = 0; i < ni && i < 64; i++)
            v[n++] = &in[i];
        v[n++] = o0;
        tie_broadcast(v, n, 0);
    } else if (op_is(node, "", "Conv") || op_is(node, "minfer", "FusedConv")) {
        dnn_conv_standins(ctx, node, in, out);
    } else if (op_is(node, "", "Concat")) {
        int64_t axis = 1;
        node_attr_int(ctx, node, "axis", &axis);
        for (int d = 0; i0 && i0->rank > 0 && d < i0->rank; d++) {
            if (d == (axis < 0 ? axis + i0->rank : axis))
                continue;
            for (size_t i = 1; i < ni; i++)
                if (in[i].present && in[i].rank == i0->rank)
                    tie(&i0->dims[d], &in[i].dims[d]);
            if (o0 && o0->rank == i0->rank)
                tie(&i0->dims[d], &o0->dims[d]);
            for (size_t i = 1; i < ni; i++)
                if (in[i].present && in[i].rank == i0->rank)
                    tie(&i0->dims[d], &in[i].dims[d]);
        }
    }
}

static int dnn_supports(void *vctx, const minfer_node_desc *node, char *why, size_t why_size) {
    dnn_ctx *ctx = vctx;
    char buf[256];
    int any;
    why = minfer_kit_why(why, &why_size, buf, sizeof buf);
    if (unknown_outputs(node, lookup(node, &any), why, why_size))
        return 0;
    if (node->n_inputs > 64 || node->n_outputs > 8) {
        snprintf(why, why_size, "%s: too many inputs or outputs", node->op_type);
        return 0;
    }
    /* Stand-ins for unknown dimensions: the implementation oneDNN picks does
     * not depend on the batch, and 64 fits any window of these models. */
    minfer_value_desc in[64], out[8];
    for (size_t i = 0; i < node->n_inputs; i++) {
        in[i] = node->inputs[i];
        if (in[i].present && in[i].rank < 0) {
            snprintf(why, why_size, "%s: rank of input %zu unknown", node->op_type, i);
            return 0;
        }
    }
    for (size_t o = 0; o < node->n_outputs; o++)
        out[o] = node->outputs[o];
    unify_unknown(ctx, node, in, out);
    for (size_t i = 0; i < node->n_inputs; i++)
        for (int d = 0; in[i].present && d < in[i].rank; d++)
            if (in[i].dims[d] < 0)
                in[i].dims[d] = d == 0 ? 1 : 64;
    minfer_node_desc d = *node;
    d.inputs = in;
    d.outputs = out;
    dnn_node *n = NULL;
    minfer_status st = dnn_build_node(ctx, &d, NULL, 1, 0, NULL, NULL, &n, why, why_size);
    dnn_node_free(n);
    return st == MINFER_OK;
}

/* A prepared node as handed to the host: the node built for the session's
 * threads and, with several threads, either the node split into one-thread
 * pieces that run side by side on the host's pool (split.c), which then
 * always runs, or the same node built for another OpenMP thread count
 * (one with split=off; the session's for a large node without a split
 * form), the two builds taking turns by measured time (pick_variant). The lock makes
 * concurrent runs of a session take turns on the node: its oneDNN memory
 * objects are bound to each run's buffers. */
typedef struct dnn_state {
    dnn_node *v[2];
    dnn_split *split;
    _Atomic uint64_t ns[2]; /* smoothed time of each build, 0 until timed */
    _Atomic uint64_t runs;
    pthread_mutex_t lock;
} dnn_state;

static void state_free(dnn_state *s) {
    if (!s)
        return;
    dnn_split_free(s->split); /* pieces may share v[0]'s packed constants */
    dnn_node_free(s->v[1]);   /* so may v[1]: both freed first */
    dnn_node_free(s->v[0]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Builds v1, the variant of v0 for threads OpenMP threads (one for a
 * multi-threaded node with split=off; the session's for a node without a
 * split form), reusing v0's packed constants. Kept only when it gives
 * every output the layout v0 gave it and asks for the same in-place
 * outputs, so that the host's plan holds for both; else the host sees
 * v0's choices again. */
static void build_variant(dnn_ctx *ctx, const minfer_node_desc *node, minfer_node_prep *prep,
                          dnn_state *s, int threads) {
    size_t no = node->n_outputs;
    uint64_t lay[8];
    int32_t inpl[8];
    char why[512];
    if (no > 8)
        return;
    memcpy(lay, prep->output_layouts, no * sizeof lay[0]);
    memcpy(inpl, prep->output_inplace, no * sizeof inpl[0]);
    if (dnn_build_node(ctx, node, prep, 0, threads, s->v[0], NULL, &s->v[1], why, sizeof why) ==
            MINFER_OK &&
        !memcmp(lay, prep->output_layouts, no * sizeof lay[0]) &&
        !memcmp(inpl, prep->output_inplace, no * sizeof inpl[0]))
        return;
    dnn_node_free(s->v[1]);
    s->v[1] = NULL;
    memcpy(prep->output_layouts, lay, no * sizeof lay[0]);
    memcpy(prep->output_inplace, inpl, no * sizeof inpl[0]);
}

/* Whether a build reads constant input i from the host: bound to the
 * input at execute (1), copied into the build's own memory (0), or not
 * used (-1). */
static int reads_input(const dnn_node *n, size_t i) {
    int packed = -1;
    for (int k = 0; n && k < n->n_mems; k++) {
        if (n->mems[k].index != (int)i)
            continue;
        if (n->mems[k].bind == BIND_INPUT)
            return 1;
        if (n->mems[k].bind == BIND_FIXED)
            packed = 0;
    }
    return packed;
}

/* minfer_node_prep.const_packed (ABI 2): the constant inputs that the
 * builds which will run (the node, its one-thread variant, its pieces)
 * packed and none reads from the host, so the host may give its copy
 * back. */
static void report_packed(const minfer_node_desc *node, const dnn_state *s,
                          minfer_node_prep *prep) {
    if (!MINFER_STRUCT_HAS(prep, minfer_node_prep, const_packed) || !prep->const_packed)
        return;
    const dnn_node *builds[2 + DNN_MAX_PIECES];
    int nb = 0;
    for (int v = 0; v < 2; v++)
        if (s->v[v])
            builds[nb++] = s->v[v];
    for (int j = 0; s->split && j < s->split->n; j++)
        builds[nb++] = s->split->piece[j];
    for (size_t i = 0; i < node->n_inputs; i++) {
        const minfer_value_desc *in = minfer_kit_input(node, i);
        int packed = in && in->const_data && nb > 0;
        for (int b = 0; packed && b < nb; b++)
            packed = reads_input(builds[b], i) == 0;
        prep->const_packed[i] = (uint8_t)packed;
    }
}

int dnn_state_builds(void *state, const dnn_node **out, int cap) {
    const dnn_state *s = state;
    int nb = 0;
    for (int v = 0; s && v < 2; v++)
        if (s->v[v] && nb < cap)
            out[nb++] = s->v[v];
    for (int j = 0; s && s->split && j < s->split->n && nb < cap; j++)
        out[nb++] = s->split->piece[j];
    return nb;
}

static minfer_status prepare_node(void *vctx, const minfer_node_desc *node,
                                  minfer_node_prep *prep, void **state);

/* prepare_node with the host's node known to packed.c while it runs. */
static minfer_status dnn_prepare(void *vctx, const minfer_node_desc *node, minfer_node_prep *prep,
                                 void **state) {
    dnn_ctx *ctx = vctx;
    ctx->pack_node = node;
    minfer_status st = prepare_node(vctx, node, prep, state);
    ctx->pack_node = NULL;
    return st;
}

static minfer_status prepare_node(void *vctx, const minfer_node_desc *node,
                                  minfer_node_prep *prep, void **state) {
    dnn_ctx *ctx = vctx;
    char why[512] = "";
    dnn_node *n = NULL;
    int any, dyn = 0;
    *state = NULL;
    if (unknown_outputs(node, lookup(node, &any), why, sizeof why)) {
        ctx->api->set_error(ctx->host, "onednn: node '%s': %s", node->name, why);
        return MINFER_ERR_UNSUPPORTED;
    }
    /* Output 0's shape unknown to the host (a dynamic node): it is input 0's,
     * plain, allocated at execute through alloc_output. */
    minfer_value_desc outs[8];
    minfer_node_desc d = *node;
    if (node->n_outputs > 0 && node->outputs[0].rank < 0 && node->n_outputs <= 8 &&
        node->n_inputs > 0) {
        memcpy(outs, node->outputs, node->n_outputs * sizeof outs[0]);
        outs[0].rank = node->inputs[0].rank;
        memcpy(outs[0].dims, node->inputs[0].dims, sizeof outs[0].dims);
        d.outputs = outs;
        dyn = 1;
    }
    int private_layouts = ctx->private_layouts;
    if (dyn)
        ctx->private_layouts = 0;
    /* Weights are packed once the split form is known: pieces that pack
     * their own slices leave the whole node's copy unmade. */
    ctx->defer_pack = !dyn;
    minfer_status st = dnn_build_node(ctx, &d, prep, 0, 0, NULL, NULL, &n, why, sizeof why);
    ctx->defer_pack = 0;
    ctx->private_layouts = private_layouts;
    if (st == MINFER_OK) {
        n->dyn_rank = dyn ? outs[0].rank : -1;
        if (dyn)
            memcpy(n->dyn_dims, outs[0].dims, sizeof n->dyn_dims);
    }
    if (st != MINFER_OK) {
        ctx->api->set_error(ctx->host, "onednn: node '%s': %s", node->name, why);
        return st;
    }
    dnn_state *s = calloc(1, sizeof *s);
    if (!s) {
        dnn_node_free(n);
        ctx->api->set_error(ctx->host, "onednn: node '%s': out of memory", node->name);
        return MINFER_ERR_NOMEM;
    }
    s->v[0] = n;
    pthread_mutex_init(&s->lock, NULL);
    if (n->copy.n) { /* a Concat run as copies cuts itself (concat.c) */
        ctx->api->log(ctx->host, MINFER_LOG_VERBOSE, "onednn: node '%s' runs as copies",
                      node->name);
        report_packed(&d, s, prep);
        *state = s;
        return MINFER_OK;
    }
    if (!dyn && n->threads > 1)
        build_variant(ctx, &d, prep, s, 1);
    int product;
    double work = dnn_node_work(&d, &product);
    if (!dyn && ctx->split != DNN_SPLIT_OFF &&
        (ctx->split == DNN_SPLIT_ON ||
         work >= (product ? DNN_MIN_FLOPS_SPLIT : DNN_MIN_ELEMS_SPLIT))) {
        ctx->defer_pack = 1; /* pieces with slices of their own pack them last */
        s->split = dnn_split_build(ctx, &d, n, prep->output_layouts);
        ctx->defer_pack = 0;
    }
    /* A large node without a split form (ConvTranspose, a convolution in
     * a blocked layout) would otherwise run on one thread whatever the
     * session's count: it gets an OpenMP variant for the session's
     * threads, and pick_variant runs whichever measures faster (OpenMP's
     * workers may find the CPUs held by the pool's spinning ones). */
    if (!dyn && !s->split && ctx->split != DNN_SPLIT_OFF && ctx->threads > 1 &&
        work >= (product ? DNN_MIN_FLOPS_MT : DNN_MIN_ELEMS_MT)) {
        build_variant(ctx, &d, prep, s, ctx->threads);
        if (s->v[1])
            ctx->api->log(ctx->host, MINFER_LOG_VERBOSE,
                          "onednn: node '%s' has no split form: also built for %d OpenMP threads",
                          node->name, ctx->threads);
    }
    prep->workspace_bytes = n->ws_bytes;
    if (s->v[1] && s->v[1]->ws_bytes > prep->workspace_bytes)
        prep->workspace_bytes = s->v[1]->ws_bytes;
    if (s->split && s->split->n * s->split->ws_stride > prep->workspace_bytes)
        prep->workspace_bytes = s->split->n * s->split->ws_stride;
    if (s->split && s->split->own_weights) {
        /* The pieces hold every weight between them: the whole node's
         * packed copy goes. */
        dnn_node_free(s->v[1]);
        dnn_node_free(s->v[0]);
        s->v[0] = s->v[1] = NULL;
    } else if (s->split) {
        /* The pieces always run: the whole node only lends them the
         * constants they packed alike, and its one-thread variant is
         * unused. A constant no piece took stays unpacked there, else a
         * piece choosing another layout would leave it resident twice. */
        dnn_node_free(s->v[1]);
        s->v[1] = NULL;
        s->v[0]->n_deferred = 0;
    }
    /* The last packing of this call: what only one build still has to
     * pack goes in slices, the host's plain copy given back as it goes. */
    dnn_node *last[1 + DNN_MAX_PIECES] = {s->v[0]};
    for (int j = 0; s->split && j < s->split->n; j++)
        last[1 + j] = s->split->piece[j];
    if (dnn_nodes_pack(ctx, last, 1 + (s->split ? s->split->n : 0), 1, why, sizeof why) !=
        MINFER_OK) {
        state_free(s);
        ctx->api->set_error(ctx->host, "onednn: node '%s': %s", node->name, why);
        return MINFER_ERR_UNSUPPORTED;
    }
    report_packed(&d, s, prep);
    *state = s;
    return MINFER_OK;
}

static void dnn_release(void *ctx, void *state) {
    (void)ctx;
    state_free(state);
}

static minfer_status exec_fail(dnn_ctx *ctx, const minfer_exec_args *a, minfer_status st,
                               const char *msg, long detail) {
    ctx->api->set_error(ctx->host, "onednn: node '%s' (%s): %s (%ld)", a->node->name,
                        a->node->op_type, msg, detail);
    return st;
}

static minfer_status run_node(dnn_ctx *ctx, const dnn_node *n, const minfer_exec_args *a) {
    void *h[DNN_MAX_MEMS];
    if (a->workspace_bytes < n->ws_bytes || (n->ws_bytes && !a->workspace))
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "workspace too small, bytes needed",
                         (long)n->ws_bytes);
    if (n->dyn_rank >= 0 && a->n_outputs > 0 && a->outputs[0].rank < 0) {
        if (!ctx->api->alloc_output)
            return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "host cannot allocate output", 0);
        a->outputs[0].dtype = MINFER_DTYPE_FLOAT;
        minfer_status st = ctx->api->alloc_output(a->run, 0, n->dyn_rank, n->dyn_dims);
        if (st != MINFER_OK)
            return st;
    }
    for (size_t i = 0; i < n->n_in && i < a->n_inputs; i++)
        if (a->inputs[i].data && a->inputs[i].layout != n->in_layout[i])
            return exec_fail(ctx, a, MINFER_ERR_RUNTIME,
                             "input arrived in a layout other than the one prepared for, input",
                             (long)i);
    /* In a device domain the workspace is a buffer handle plus an offset
     * (a member appended to the ABI: read it only when the host has it). */
    char *ws = a->workspace;
    if (ws && MINFER_STRUCT_HAS(a, minfer_exec_args, workspace_offset))
        ws += a->workspace_offset;
    for (int k = 0; k < n->n_mems; k++) {
        const dnn_mem *m = &n->mems[k];
        const minfer_tensor_view *v = NULL;
        switch (m->bind) {
        case BIND_INPUT:
            v = &a->inputs[m->index];
            break;
        case BIND_OUTPUT:
            v = &a->outputs[m->index];
            break;
        case BIND_WS:
            h[k] = ws + n->scratch_bytes + m->off;
            break;
        case BIND_SCRATCH:
            h[k] = ws;
            break;
        default:
            h[k] = NULL;
            continue;
        }
        if (v) {
            if (!v->data)
                return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "missing tensor for memory", k);
            h[k] = (char *)v->data + v->offset;
        }
        if (dnnl_memory_set_data_handle_v2(m->mem, h[k], ctx->stream) != dnnl_success)
            return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "could not bind memory", k);
    }
    omp_set_num_threads(n->threads);
    for (int s = 0; s < n->n_steps; s++) {
        const dnn_step *st = &n->steps[s];
        if (st->skip_src >= 0 && h[st->skip_src] == h[st->skip_dst])
            continue;
        dnnl_status_t r = dnnl_primitive_execute(st->prim, ctx->stream, st->n_args, st->args);
        if (r != dnnl_success)
            return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "oneDNN execute failed, status", r);
    }
    if (dnnl_stream_wait(ctx->stream) != dnnl_success)
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "oneDNN stream wait failed", 0);
    return MINFER_OK;
}

/* Which build runs, with two built: the faster by smoothed
 * measured time. The second vCPU of the machines this was tuned on is
 * often busy with other work; a node split over two OpenMP threads then
 * finishes when the descheduled thread does, later than on one thread,
 * while with the second CPU free two threads win. The first two runs warm
 * both builds up untimed, the next six alternate, and afterwards every
 * 16th run tries the slower one, so the choice follows the load. All nodes
 * probe in the same run (their counts advance together): one slow run in
 * 16 rather than every run a little slower. Updates race between
 * concurrent runs of a session harmlessly (a lost sample). Split forms
 * need no choosing: measured with and without it, always running the
 * pieces was as fast or faster with the second CPU free, busy, or busy
 * half the time, since the pool stops spinning under load and its caller
 * takes the pieces a late worker has not started. */
#define DNN_PROBE_EVERY 16

static int pick_variant(dnn_state *s, uint64_t k) {
    if (!s->v[1])
        return 0;
    if (k < 8)
        return (int)(k & 1);
    uint64_t t0 = atomic_load_explicit(&s->ns[0], memory_order_relaxed);
    uint64_t t1 = atomic_load_explicit(&s->ns[1], memory_order_relaxed);
    int best = t1 < t0;
    return k % DNN_PROBE_EVERY == 0 ? !best : best;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One run of a split node: the pieces on the host's pool. */
typedef struct split_job {
    dnn_ctx *ctx;
    const dnn_split *sp;
    const minfer_exec_args *a;
    char *ws;
    _Atomic int failed;     /* piece index + 1 of a failure */
    minfer_status st;
} split_job;

static void run_pieces(void *arg, size_t begin, size_t end) {
    split_job *job = arg;
    const minfer_exec_args *a = job->a;
    minfer_tensor_view in[DNN_PIECE_INPUTS], out;
    for (size_t j = begin; j < end; j++) {
        minfer_exec_args pa = *a;
        memcpy(in, a->inputs, a->n_inputs * sizeof in[0]);
        for (size_t i = 0; i < a->n_inputs; i++)
            in[i].offset += job->sp->in_off[j][i];
        out = a->outputs[0];
        out.offset += job->sp->out_off[j];
        pa.inputs = in;
        pa.outputs = &out;
        pa.n_outputs = 1;
        pa.workspace = job->ws ? job->ws + j * job->sp->ws_stride : NULL;
        pa.workspace_bytes = job->sp->ws_stride;
        pa.workspace_offset = 0;
        minfer_status st = run_node(job->ctx, job->sp->piece[j], &pa);
        if (st != MINFER_OK) {
            int none = 0;
            if (atomic_compare_exchange_strong(&job->failed, &none, (int)j + 1))
                job->st = st;
        }
    }
}

static minfer_status run_split(dnn_ctx *ctx, const dnn_split *sp, const minfer_exec_args *a) {
    char *ws = a->workspace;
    if (ws && MINFER_STRUCT_HAS(a, minfer_exec_args, workspace_offset))
        ws += a->workspace_offset;
    if (a->workspace_bytes < sp->n * sp->ws_stride || (sp->ws_stride && !ws))
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "workspace too small, bytes needed",
                         (long)(sp->n * sp->ws_stride));
    if (a->n_inputs > DNN_PIECE_INPUTS || a->n_outputs != 1 || !a->outputs[0].data)
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "unexpected arguments for a split node",
                         (long)a->n_inputs);
    split_job job = {ctx, sp, a, ws, 0, MINFER_OK};
    ctx->api->parallel_for(ctx->host, (size_t)sp->n, 1, run_pieces, &job);
    int failed = atomic_load(&job.failed);
    if (failed)
        return exec_fail(ctx, a, job.st, "a piece of the split node failed, piece", failed - 1);
    return MINFER_OK;
}



/* Build v, or the other one when v would keep more OpenMP threads busy
 * than the host lets this run use now (minfer_host_api.claim_threads: the
 * parallel scheduler gives a node running beside others one thread). The
 * claim holds until dnn_execute returns. A node built only for several
 * threads (split=off without a one-thread variant) runs as built. */
static int fit_claim(const dnn_ctx *ctx, const dnn_state *s, int v) {
    int want = s->v[v]->threads;
    if (want <= 1 || !MINFER_HOST_HAS(ctx->api, claim_threads))
        return v;
    int got = ctx->api->claim_threads(ctx->host, want);
    if (got < want && s->v[!v] && s->v[!v]->threads <= got)
        return !v;
    return v;
}

static minfer_status dnn_execute(void *vctx, void *state, const minfer_exec_args *a) {
    dnn_ctx *ctx = vctx;
    dnn_state *s = state;
    if (!s || (!s->v[0] && !s->split))
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "node was not prepared", 0);
    if (s->v[0] && s->v[0]->copy.n) /* no oneDNN objects: no lock */
        return dnn_concat_copy_run(ctx, s->v[0], a);
    pthread_mutex_lock(&s->lock);
    minfer_status st;
    if (s->split) {
        st = run_split(ctx, s->split, a);
    } else if (!s->v[1]) {
        st = run_node(ctx, s->v[0], a);
    } else {
        uint64_t k = atomic_fetch_add_explicit(&s->runs, 1, memory_order_relaxed);
        int v = fit_claim(ctx, s, pick_variant(s, k));
        uint64_t t = now_ns();
        st = run_node(ctx, s->v[v], a);
        t = now_ns() - t;
        if (st == MINFER_OK && k >= 2) {
            uint64_t old = atomic_load_explicit(&s->ns[v], memory_order_relaxed);
            atomic_store_explicit(&s->ns[v], old ? (3 * old + t) / 4 : t, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* ---- Memory domain ----------------------------------------------------------- */

#ifdef ONEDNN_OWN_DOMAIN
static size_t dtype_size(int32_t d) {
    switch (d) {
    case MINFER_DTYPE_FLOAT: case MINFER_DTYPE_INT32: case MINFER_DTYPE_UINT32: return 4;
    case MINFER_DTYPE_DOUBLE: case MINFER_DTYPE_INT64: case MINFER_DTYPE_UINT64: return 8;
    case MINFER_DTYPE_FLOAT16: case MINFER_DTYPE_BFLOAT16: case MINFER_DTYPE_INT16:
    case MINFER_DTYPE_UINT16: return 2;
    default: return 1;
    }
}

static minfer_status dnn_mem_alloc(void *ctx, size_t bytes, void **buffer) {
    (void)ctx;
    *buffer = NULL;
    if (posix_memalign(buffer, DNN_ALIGN, bytes ? bytes : 1) != 0)
        return MINFER_ERR_NOMEM;
    return MINFER_OK;
}

static void dnn_mem_free(void *ctx, void *buffer) {
    (void)ctx;
    free(buffer);
}

static size_t dnn_tensor_bytes(void *vctx, const minfer_tensor_view *v) {
    const dnn_layout *l = dnn_layout_get(vctx, v->layout);
    if (l)
        return dnnl_memory_desc_get_size(&l->md);
    int64_t n = dnn_numel(v->rank > 0 ? v->rank : 0, v->dims);
    size_t bytes;
    /* SIZE_MAX, never a wrapped count, when it does not fit: the host
     * then refuses the plan. */
    if (n < 0 || minfer_size_mul((size_t)n, dtype_size(v->dtype), &bytes) != MINFER_OK)
        return SIZE_MAX;
    return bytes;
}

/* Runs a registered layout's reorder between src and dst. */
static minfer_status layout_reorder(dnn_ctx *ctx, const dnn_layout *l, int to_plain, void *md_buf,
                                    void *plain_buf) {
    omp_set_num_threads(ctx->threads);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, to_plain ? l->m_md : l->m_plain},
                               {DNNL_ARG_TO, to_plain ? l->m_plain : l->m_md}};
    if (dnnl_memory_set_data_handle_v2(l->m_md, md_buf, ctx->stream) != dnnl_success ||
        dnnl_memory_set_data_handle_v2(l->m_plain, plain_buf, ctx->stream) != dnnl_success ||
        dnnl_primitive_execute(to_plain ? l->to_plain : l->from_plain, ctx->stream, 2, args) !=
            dnnl_success ||
        dnnl_stream_wait(ctx->stream) != dnnl_success) {
        ctx->api->set_error(ctx->host, "onednn: layout conversion failed");
        return MINFER_ERR_RUNTIME;
    }
    return MINFER_OK;
}

static minfer_status dnn_copy_to_host(void *vctx, const minfer_tensor_view *src, void *dst,
                                      size_t dst_bytes) {
    dnn_ctx *ctx = vctx;
    char *p = (char *)src->data + src->offset;
    const dnn_layout *l = dnn_layout_get(ctx, src->layout);
    if (!l) {
        memcpy(dst, p, src->nbytes < dst_bytes ? src->nbytes : dst_bytes);
        return MINFER_OK;
    }
    if (dst_bytes < dnnl_memory_desc_get_size(&l->plain)) {
        ctx->api->set_error(ctx->host, "onednn: copy_to_host: %zu bytes given, %zu needed",
                            dst_bytes, dnnl_memory_desc_get_size(&l->plain));
        return MINFER_ERR_RUNTIME;
    }
    return layout_reorder(ctx, l, 1, p, dst);
}

static minfer_status dnn_copy_from_host(void *vctx, const void *src, size_t src_bytes,
                                        const minfer_tensor_view *dst) {
    dnn_ctx *ctx = vctx;
    char *p = (char *)dst->data + dst->offset;
    const dnn_layout *l = dnn_layout_get(ctx, dst->layout);
    if (!l) {
        memcpy(p, src, src_bytes < dst->nbytes ? src_bytes : dst->nbytes);
        return MINFER_OK;
    }
    return layout_reorder(ctx, l, 0, p, (void *)src);
}
#endif

static const minfer_provider onednn_provider = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "onednn",
    .version = "0.1.0",
    .init = dnn_init,
    .shutdown = dnn_shutdown,
    .supports_operator = dnn_supports,
    .prepare_node = dnn_prepare,
    .release_node = dnn_release,
    .execute_node = dnn_execute,
    .export_packed = dnn_export_packed,
#ifdef ONEDNN_OWN_DOMAIN
    .memory_domain = "onednn",
    .memory_alignment = DNN_ALIGN,
    .mem_alloc = dnn_mem_alloc,
    .mem_free = dnn_mem_free,
    .copy_to_host = dnn_copy_to_host,
    .copy_from_host = dnn_copy_from_host,
    .tensor_bytes = dnn_tensor_bytes,
    /* Its buffers are host memory and run_node binds (pointer + offset):
     * plain host values are read in place, not copied in. */
    .host_addressable = 1,
#endif
};

/* The entry of the implementation library; shim.c's minfer_provider_entry
 * returns it after setting OpenMP's wait policy. */
MINFER_PROVIDER_EXPORT const minfer_provider *minfer_onednn_impl_entry(uint32_t host_abi);
MINFER_PROVIDER_EXPORT const minfer_provider *minfer_onednn_impl_entry(uint32_t host_abi) {
    (void)host_abi;
    return &onednn_provider;
}
