/*
 * half_as_float: a float16 graph computed in float between its float16
 * edges, as ONNX Runtime computes one on a CPU.
 *
 * ONNX Runtime's CPU provider has no float16 kernels for the ops that
 * compute (Conv, Gemm, Add, Clip, pools, ...): it runs them through float
 * kernels with Casts inserted around them, then removes every Cast pair
 * that meets, so a chain of such nodes passes float values from one to the
 * next and rounds to float16 only where the graph's float16 edges are (its
 * inputs and outputs, a node it runs in float16). Seen on an fp16
 * MobileNet V2 saved optimized by ORT 1.30: 52 Convs, 35 Clips and the Adds
 * all in float, three Casts left, the weights converted once. Rounding
 * every node's output to float16 instead (what the CPU provider's widened
 * kernels do node by node) drifts from ORT's answers: 0.045 on that
 * MobileNet's logits against ORT's float16 run.
 *
 * So, for a session whose providers all compute on the CPU (the session
 * says so in ctx->half_as_float; a GPU provider computes in half where its
 * device has it), every node that computes in float16 is rewritten to
 * compute in float: its float16 inputs and outputs become float values,
 * float16 initializers read only by such nodes are converted once, and a
 * Cast is inserted where a float16 value must stay: a graph input or
 * output, a value a subgraph reads, a node that is not rewritten. The nodes
 * left as they are: control flow, sequences and optionals (the core's ops),
 * ops that make float16 from an attribute (Cast from a non-float type,
 * CastLike, ConstantOfShape, EyeLike, the random ops), quantization ops
 * (their scale's type is their output's) and ops of other domains than
 * the default and com.microsoft. A Cast to float16 of a float value is
 * rewritten too (to a Cast to float, which cast_pairs then removes): ORT
 * removes it with the Cast it inserts after it, which is how the fp16
 * MobileNet's first Conv reads the float input directly.
 *
 * Optimization level 0 leaves the graph as it is: each node then runs in
 * float16 where a provider has it, rounded per node (tests of the float16
 * kernels run so).
 */
#include <stdlib.h>
#include <string.h>

#include "minfer/provider_kit.h"
#include "util/internal.h"
#include "optimize/passes.h"

#define F16 MINFER_DTYPE_FLOAT16
#define F32 MINFER_DTYPE_FLOAT
#define F64 MINFER_DTYPE_DOUBLE

static int in_list(const char *op, const char *const *list) {
    for (; *list; list++)
        if (strcmp(op, *list) == 0)
            return 1;
    return 0;
}

/* Ops whose float16 outputs do not come from float16 inputs. */
static const char *const kept_ops[] = {
    "CastLike", "ConstantOfShape", "EyeLike", "RandomNormal", "RandomUniform",
    "RandomNormalLike", "RandomUniformLike", "Bernoulli", "Multinomial", "Constant",
    "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "QLinearConv",
    "QLinearMatMul", "QLinearAdd", "QLinearMul", "QLinearGlobalAveragePool",
    "QLinearAveragePool", "QLinearConcat", "QLinearLeakyRelu", "QLinearSigmoid", "QGemm",
    "DynamicQuantizeMatMul", "MatMulIntegerToFloat", "QAttention", "DequantizeBFP",
    "QuantizeBFP", NULL};

static int32_t dtype_of(mf_opt *o, int v) {
    if (v < 0)
        return 0;
    const mf_value *val = &o->g->values[v];
    if (val->initializer)
        return val->initializer->view.dtype;
    return mf_opt_info(o, v)->dtype;
}

/* 1 when node i, not a Cast, is rewritten to compute in float. */
static int float_node(const mf_opt *o, int i) {
    const mf_node *n = &o->g->nodes[i];
    if (mf_opt_dead(o, (size_t)i) || mf_core_op(n) || strcmp(n->op_type, "Cast") == 0)
        return 0;
    if (n->domain && n->domain[0] && strcmp(n->domain, "com.microsoft") != 0)
        return 0;
    return !in_list(n->op_type, kept_ops);
}

/* The Casts, once the other nodes are decided (fl[]): a Cast from float16
 * whose input a float node makes reads that float value (a Cast to float
 * becomes one from float to float, which cast_pairs removes); a Cast to
 * float16 of a float value that a float node reads is computed in float
 * (ORT removes it with the Cast it inserts after it). Other Casts stay: a
 * Cast from a graph input's float16 is where the float values start. */
static int float_cast(mf_opt *o, int i, const unsigned char *half, const unsigned char *fl) {
    const mf_node *n = &o->g->nodes[i];
    if (mf_opt_dead(o, (size_t)i) || strcmp(n->op_type, "Cast") != 0 || n->n_inputs != 1 ||
        n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
        return 0;
    int x = n->inputs[0], y = n->outputs[0];
    int64_t to = mf_attr_int(n, "to", 0);
    if (half[x]) {
        int p = o->prod[x];
        return to != F16 && p >= 0 && fl[p];
    }
    int32_t from = dtype_of(o, x);
    if (to != F16 || (from != F32 && from != F64) || o->pinned[y] || o->g->values[y].is_output)
        return 0;
    for (int c = o->cons_start[y]; c < o->cons_start[y + 1]; c++)
        if (fl[o->cons[c]])
            return 1;
    return 0;
}

/* A fresh value named after v. */
static int fresh_value(mf_opt *o, int v, const char *suffix) {
    char name[512];
    const char *base = o->g->values[v].name ? o->g->values[v].name : "half";
    for (int tries = 0; tries < 1000; tries++) {
        snprintf(name, sizeof name, "%s_%s%u", base, suffix, o->name_seq++);
        if (mf_graph_find(o->g, name) < 0)
            return mf_graph_intern(o->g, name);
    }
    return -1;
}

/* Appends Cast(from) -> to, `dtype`; -1 on OOM. */
static int add_cast(mf_opt *o, int from, int to, int32_t dtype) {
    int64_t opset = mf_graph_opset(o->g, "");
    int i = mf_graph_add_node(o->g); /* g->nodes may move */
    if (i < 0)
        return -1;
    mf_node *nd = &o->g->nodes[i];
    nd->name = mf_strdup(o->g->values[to].name);
    nd->op_type = mf_strdup("Cast");
    nd->domain = mf_strdup("");
    nd->opset = opset > 0 ? opset : 13;
    nd->inputs = mf_malloc(sizeof *nd->inputs);
    nd->outputs = mf_malloc(sizeof *nd->outputs);
    if (!nd->name || !nd->op_type || !nd->domain || !nd->inputs || !nd->outputs)
        return -1;
    nd->inputs[0] = from;
    nd->n_inputs = 1;
    nd->outputs[0] = to;
    nd->n_outputs = 1;
    if (mf_opt_set_attr_int(o, i, "to", dtype) != MINFER_OK)
        return -1;
    return i;
}

/* A float copy of a float16 tensor. */
static minfer_tensor *widened(const minfer_tensor *t) {
    minfer_tensor *w = NULL;
    if (mf_tensor_new(F32, t->view.dims, t->view.rank, &w) != MINFER_OK)
        return NULL;
    int64_t n = mf_opt_numel(&t->view);
    const uint16_t *h = t->view.data;
    float *f = w->view.data;
    for (int64_t k = 0; k < n; k++)
        f[k] = minfer_half_to_float(h[k]);
    return w;
}

/* Points the float nodes' reads of v at v32. */
static void redirect(mf_opt *o, int v, int v32, const unsigned char *fl) {
    for (int c = o->cons_start[v]; c < o->cons_start[v + 1]; c++) {
        mf_node *n = &o->g->nodes[o->cons[c]];
        if (!fl[o->cons[c]])
            continue;
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == v)
                n->inputs[k] = v32;
    }
}

/* Whether the graph may hold float16 at all, before asking the analysis. */
static int may_hold_half(const mf_graph *g) {
    for (size_t v = 0; v < g->n_values; v++)
        if (g->values[v].dtype == F16 ||
            (g->values[v].initializer && g->values[v].initializer->view.dtype == F16))
            return 1;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (mf_attr_int(&g->nodes[i], "to", 0) == F16 ||
            mf_attr_int(&g->nodes[i], "dtype", 0) == F16 ||
            mf_attr_int(&g->nodes[i], "output_dtype", 0) == F16)
            return 1;
    return 0;
}

static minfer_status rewrite(mf_opt *o, unsigned char *half, unsigned char *fl, size_t nv,
                             size_t nn, size_t *fired) {
    mf_graph *g = o->g;
    for (size_t v = 0; v < nv; v++) {
        if (!half[v])
            continue;
        int vi = (int)v;
        int prod = o->prod[v];
        int up = prod >= 0 && (size_t)prod < nn && fl[prod];
        size_t n_float = 0, n_other = 0;
        for (int c = o->cons_start[v]; c < o->cons_start[v + 1]; c++)
            *(fl[o->cons[c]] ? &n_float : &n_other) += 1;
        int keep_half = n_other || o->pinned[v] || g->values[v].is_output;
        if (up) {
            if (!keep_half) { /* a float value now */
                g->values[v].dtype = F32;
                (*fired)++;
                continue;
            }
            int v32 = fresh_value(o, vi, "float");
            if (v32 < 0)
                return mf_opt_oom(o);
            mf_node *p = &g->nodes[prod];
            for (size_t k = 0; k < p->n_outputs; k++)
                if (p->outputs[k] == vi)
                    p->outputs[k] = v32;
            redirect(o, vi, v32, fl);
            if (add_cast(o, v32, vi, F16) < 0)
                return mf_opt_oom(o);
            (*fired)++;
            continue;
        }
        if (!n_float)
            continue;
        int v32;
        const minfer_tensor *init = g->values[v].initializer;
        if (init) {
            minfer_tensor *w = widened(init);
            if (!w)
                return mf_opt_oom(o);
            if (!keep_half && !g->values[v].is_input) { /* converted in place */
                minfer_tensor_free(g->values[v].initializer);
                g->values[v].initializer = w;
                g->values[v].dtype = F32;
                (*fired)++;
                continue;
            }
            if ((v32 = mf_opt_add_const(o, g->values[v].name ? g->values[v].name : "half", w)) < 0)
                return mf_opt_oom(o);
        } else {
            if ((v32 = fresh_value(o, vi, "float")) < 0 || add_cast(o, vi, v32, F32) < 0)
                return mf_opt_oom(o);
        }
        redirect(o, vi, v32, fl);
        (*fired)++;
    }
    /* Casts to float16 computed in float: Casts to float (removed by cast_pairs). */
    for (size_t i = 0; i < nn; i++)
        if (fl[i] && strcmp(g->nodes[i].op_type, "Cast") == 0 &&
            mf_attr_int(&g->nodes[i], "to", 0) == F16 &&
            mf_opt_set_attr_int(o, (int)i, "to", F32) != MINFER_OK)
            return mf_opt_oom(o);
    return MINFER_OK;
}

minfer_status mf_pass_half_as_float(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    if (!o->ctx->half_as_float || !may_hold_half(g))
        return MINFER_OK;
    size_t nv = g->n_values, nn = g->n_nodes;
    unsigned char *half = mf_calloc(nv ? nv : 1, 1), *fl = mf_calloc(nn ? nn : 1, 1);
    minfer_status st = MINFER_OK;
    if (!half || !fl) {
        st = mf_opt_oom(o);
        goto out;
    }
    /* Types first (the analysis), then the edits, which leave it stale. */
    for (size_t v = 0; v < nv && v < o->n_index_values; v++)
        half[v] = g->values[v].kind == MINFER_VALUE_TENSOR && dtype_of(o, (int)v) == F16;
    if (o->nomem)
        goto out;
    for (size_t i = 0; i < nn; i++)
        fl[i] = (unsigned char)float_node(o, (int)i);
    for (size_t i = 0; i < nn; i++)
        if (!fl[i] && float_cast(o, (int)i, half, fl))
            fl[i] = 2;
    if (o->nomem)
        goto out;
    size_t before = *fired;
    st = rewrite(o, half, fl, nv < o->n_index_values ? nv : o->n_index_values, nn, fired);
    if (*fired != before) {
        o->info_dirty = 1;
        if (st == MINFER_OK)
            st = mf_opt_reindex(o);
    }
out:
    free(half);
    free(fl);
    return st;
}
