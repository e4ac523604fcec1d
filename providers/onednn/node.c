/*
 * Nodes of the oneDNN provider: the op table, building one node into a
 * program of oneDNN primitives (dnn_build_node: the op family's build
 * function, in check mode for supports_operator), freeing it, and the
 * work and thread count of a node. The op families (conv.c, matmul.c...)
 * and build.c are below it; split.c and state.c call it.
 */
#include <math.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* Log is left to the CPU provider: oneDNN 2.6's log is off by about 1e-6
 * near 1 (log(1) = -1.4e-6), outside the ONNX backend tests' tolerance. */
static const dnn_op ops[] = {
    /* conv.c */
    {"", "Conv", 1, dnn_build_conv, 0, 0, 1},
    {"", "ConvTranspose", 1, dnn_build_conv_transpose, 0, 0, 0},
    {"minfer", "FusedConv", 1, dnn_build_conv, 0, 0, 1},
    /* matmul.c */
    {"", "MatMul", 1, dnn_build_matmul, 0, 0, 1},
    {"minfer", "FusedMatMul", 1, dnn_build_matmul, 0, 0, 1},
    {"", "Gemm", 7, dnn_build_gemm, 0, 0, 1},
    {"minfer", "FusedGemm", 1, dnn_build_gemm, 0, 0, 1},
    /* quant.c: the build checks the (integer) types */
    {"", "QLinearConv", 10, dnn_build_qconv, 0, -1, 0},
    {"", "ConvInteger", 10, dnn_build_qconv, 0, -1, 0},
    {"", "QLinearMatMul", 10, dnn_build_qmatmul, 0, -1, 0},
    {"", "MatMulInteger", 10, dnn_build_qmatmul, 0, -1, 0},
    {"com.microsoft", "QLinearAdd", 1, dnn_build_qadd, 0, -1, 0},
    {"", "Cast", 6, dnn_build_cast, 1, -1, 0}, /* integers to float */
    /* attention.c */
    {"minfer", "Attention", 1, dnn_build_attention, 0, 0, 0},
    /* rnn.c: X, W, R and B float; sequence_lens (declined) is not */
    {"", "RNN", 7, dnn_build_rnn, 0, 4, 0},
    {"", "GRU", 7, dnn_build_rnn, 0, 4, 0},
    {"", "LSTM", 7, dnn_build_rnn, 0, 4, 0},
    /* pool.c */
    {"", "MaxPool", 1, dnn_build_pool, 0, -1, 1}, /* float, or int8 (the build checks) */
    {"", "AveragePool", 1, dnn_build_pool, 0, 0, 1},
    {"", "GlobalAveragePool", 1, dnn_build_global_pool, 0, 0, 1},
    {"", "GlobalMaxPool", 1, dnn_build_global_pool, 0, 0, 1},
    /* norm.c */
    {"", "BatchNormalization", 7, dnn_build_batchnorm, 1, 0, 1},
    {"", "LRN", 1, dnn_build_lrn, 1, 0, 0},
    {"", "Softmax", 1, dnn_build_softmax, 1, 0, 1},
    {"", "LogSoftmax", 1, dnn_build_softmax, 1, 0, 1},
    {"", "LayerNormalization", 17, dnn_build_layernorm, 1, 0, 1},
    {"minfer", "LayerNormalization", 1, dnn_build_layernorm, 1, 0, 1},
    {"minfer", "RMSNormalization", 1, dnn_build_rmsnorm, 1, 0, 0},
    /* eltwise.c */
    {"", "Relu", 6, dnn_build_unary, 1, 0, 1},
    {"", "LeakyRelu", 6, dnn_build_unary, 1, 0, 1},
    {"", "Elu", 6, dnn_build_unary, 1, 0, 1},
    {"", "Sigmoid", 6, dnn_build_unary, 1, 0, 1},
    {"", "Tanh", 6, dnn_build_unary, 1, 0, 1},
    {"", "HardSigmoid", 6, dnn_build_unary, 1, 0, 1},
    {"", "HardSwish", 14, dnn_build_unary, 1, 0, 1},
    {"", "Exp", 6, dnn_build_unary, 1, 0, 1},
    {"", "Sqrt", 6, dnn_build_unary, 1, 0, 1},
    {"", "Abs", 6, dnn_build_unary, 1, 0, 1},
    {"", "Clip", 6, dnn_build_unary, 1, 0, 1},
    {"", "Clip", 11, dnn_build_unary, 1, 0, 0},
    {"", "Gelu", 20, dnn_build_unary, 1, 0, 1},
    {"minfer", "Gelu", 1, dnn_build_unary, 1, 0, 1},
    {"", "Add", 7, dnn_build_binary, 0, 0, 1},
    {"", "Sub", 7, dnn_build_binary, 0, 0, 1},
    {"", "Mul", 7, dnn_build_binary, 0, 0, 1},
    {"", "Div", 7, dnn_build_binary, 0, 0, 1},
    {"", "Min", 8, dnn_build_variadic, 0, 0, 1},
    {"", "Max", 8, dnn_build_variadic, 0, 0, 1},
    {"", "Sum", 8, dnn_build_variadic, 0, 0, 1},
    {"", "Concat", 4, dnn_build_concat, 0, 0, 0},
    /* shape.c: only the data input is float; the output's shape is the host's */
    {"", "Transpose", 1, dnn_build_transpose, 0, 1, 0},
    {"", "Slice", 10, dnn_build_slice, 0, 1, 0},
    {"", "Reshape", 5, dnn_build_reshape, 0, 1, 0},
    {"", "Flatten", 1, dnn_build_reshape, 0, 1, 0},
    {"", "Squeeze", 1, dnn_build_reshape, 0, 1, 0},
    {"", "Unsqueeze", 1, dnn_build_reshape, 0, 1, 0},
};

#define N_OPS (sizeof ops / sizeof ops[0])

/* The table entry for the node's opset (the provider kit's lookup). */
static const dnn_op *lookup(const minfer_node_desc *node, int *any) {
    return MINFER_KIT_LOOKUP(dnn_op, ops, N_OPS, node->domain, node->op_type, node->opset, any);
}

void dnn_node_free(dnn_node *n) {
    if (!n)
        return;
    for (int i = 0; i < n->n_steps; i++)
        if (n->steps[i].prim)
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
    if (node_is(node, "ConvInteger") && w && w->rank >= 1 && w->dims[0] > 0)
        return 2.0 * out * numel_of(w) / (double)w->dims[0];
    if (node_is(node, "QLinearConv") && node->n_inputs > 3 && node->inputs[3].rank >= 1 &&
        node->inputs[3].dims[0] > 0)
        return 2.0 * out * numel_of(&node->inputs[3]) / (double)node->inputs[3].dims[0];
    if ((node_is(node, "MatMulInteger") || node_is(node, "QLinearMatMul")) && x && x->rank >= 1)
        return 2.0 * out * (double)x->dims[x->rank - 1];
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
    dnn_b b = {ctx, node, prep, check, n, 0, {{0}}, 0, why, why_size, share, pio, op->half};
    n->threads = threads > 0 ? threads : node_threads(ctx, node);
    omp_set_num_threads(n->threads);
    minfer_status st =
        op->float_inputs < 0 ? MINFER_OK : dnn_require_float(&b, op->float_inputs);
    if (st == MINFER_OK && op->half && node->n_outputs > 0 && node->outputs[0].rank < 0 &&
        node->outputs[0].dtype == MINFER_DTYPE_FLOAT16)
        st = dnn_decline(&b, "a float16 output of unknown shape");
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
int dnn_node_unknown_outputs(const minfer_node_desc *node, char *why, size_t why_size) {
    int any;
    const dnn_op *op = lookup(node, &any);
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

int dnn_supports(void *vctx, const minfer_node_desc *node, char *why, size_t why_size) {
    dnn_ctx *ctx = vctx;
    char buf[256];
    why = minfer_kit_why(why, &why_size, buf, sizeof buf);
    if (dnn_node_unknown_outputs(node, why, why_size))
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
