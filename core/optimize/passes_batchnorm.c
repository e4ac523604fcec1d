/*
 * Level 1: BatchNormalization after Conv or Gemm folded into the weights.
 *
 * BN(y) = (y - mean) * s + bias with s = scale / sqrt(var + epsilon), per
 * channel c (axis 1). For Conv, y = W * x + B, so W'[c] = W[c] * s[c] and
 * B'[c] = (B[c] - mean[c]) * s[c] + bias[c]. For Gemm, y = alpha A B' + beta C
 * with output channel n the column of B' (a row of B when transB): the same
 * scaling per n, C'[n] = (beta C[n] - mean[n]) s[n] + bias[n] and beta' = 1.
 *
 * Checked: float tensors; W, B/C and all four BN inputs are initializers of
 * the right lengths; BN in inference mode with only its first output read;
 * the Conv/Gemm output read by the BN alone and not a graph output; C is
 * absent, one element, or [N]. New weights are new initializers (the old
 * ones may have other readers).
 */
#include <math.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

static int live(const mf_opt *o, size_t i) { return !(i < o->cap_dead && o->dead[i]); }

/* A float initializer with exactly n elements, or NULL. */
static const float *fvec(const mf_opt *o, int v, int64_t n) {
    const minfer_tensor *t = mf_opt_const(o, v);
    if (!t || t->view.dtype != MINFER_DTYPE_FLOAT || !t->view.data)
        return NULL;
    int64_t cnt = 1;
    for (int d = 0; d < t->view.rank; d++)
        cnt *= t->view.dims[d];
    return cnt == n ? (const float *)((const char *)t->view.data + t->view.offset) : NULL;
}

static int bn_inference(mf_opt *o, const mf_node *bn) {
    if (bn->n_inputs != 5 || mf_attr_int(bn, "training_mode", 0) != 0)
        return 0;
    if (bn->opset < 7 && mf_attr_int(bn, "is_test", 0) == 0)
        return 0;
    for (size_t k = 1; k < bn->n_outputs; k++)
        if (bn->outputs[k] >= 0 && (mf_opt_nuses(o, bn->outputs[k]) || o->pinned[bn->outputs[k]]))
            return 0;
    return bn->n_outputs >= 1 && bn->outputs[0] >= 0;
}

static minfer_status fold_one(mf_opt *o, int prod, int bni, int is_conv, int *done) {
    mf_graph *g = o->g;
    mf_node *p = &g->nodes[prod];
    const mf_node *bn = &g->nodes[bni];
    const minfer_tensor *wt = mf_opt_const(o, p->inputs[1]);
    minfer_tensor *nw = NULL, *nb = NULL;
    minfer_status st;
    *done = 0;
    if (!wt || wt->view.dtype != MINFER_DTYPE_FLOAT || wt->view.rank < 2)
        return MINFER_OK;
    int trans_b = !is_conv && mf_attr_int(p, "transB", 0) != 0;
    if (!is_conv && wt->view.rank != 2)
        return MINFER_OK;
    int64_t C = is_conv ? wt->view.dims[0] : trans_b ? wt->view.dims[0] : wt->view.dims[1];
    const float *scale = fvec(o, bn->inputs[1], C), *bias = fvec(o, bn->inputs[2], C),
                *mean = fvec(o, bn->inputs[3], C), *var = fvec(o, bn->inputs[4], C);
    if (!scale || !bias || !mean || !var || C <= 0)
        return MINFER_OK;
    int has_b = p->n_inputs > 2 && p->inputs[2] >= 0;
    const float *b = NULL;
    int b_one = 0;
    if (has_b) {
        b = fvec(o, p->inputs[2], C);
        if (!b && !is_conv && (b = fvec(o, p->inputs[2], 1)))
            b_one = 1;
        if (!b)
            return MINFER_OK;
    }
    float eps = mf_attr_float(bn, "epsilon", 1e-5f);
    float beta = is_conv ? 1.0f : mf_attr_float(p, "beta", 1.0f);
    int64_t bdims[1] = {C};
    if ((st = mf_tensor_clone(wt, &nw)) != MINFER_OK ||
        (st = mf_tensor_new(MINFER_DTYPE_FLOAT, bdims, 1, &nb)) != MINFER_OK)
        goto fail;
    float *w = nw->view.data, *ob = nb->view.data;
    int64_t total = 1;
    for (int d = 0; d < wt->view.rank; d++)
        total *= wt->view.dims[d];
    int64_t per = total / C;
    for (int64_t c = 0; c < C; c++) {
        double s = (double)scale[c] / sqrt((double)var[c] + (double)eps);
        double bc = has_b ? (double)b[b_one ? 0 : c] * beta : 0.0;
        ob[c] = (float)((bc - mean[c]) * s + bias[c]);
        if (is_conv || trans_b)
            for (int64_t k = 0; k < per; k++)
                w[c * per + k] = (float)(w[c * per + k] * s);
        else
            for (int64_t k = 0; k < wt->view.dims[0]; k++)
                w[k * C + c] = (float)(w[k * C + c] * s);
    }
    int wv = mf_opt_add_const(o, g->values[p->inputs[1]].name, nw);
    nw = NULL;
    int bv = mf_opt_add_const(o, g->values[bn->outputs[0]].name, nb);
    nb = NULL;
    if (wv < 0 || bv < 0)
        return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
    p = &g->nodes[prod]; /* interning may not move nodes, but stay safe */
    int ins[3] = {p->inputs[0], wv, bv};
    if ((st = mf_opt_set_inputs(o, prod, ins, 3)) != MINFER_OK)
        return st;
    if (!is_conv && (st = mf_opt_set_attr_float(o, prod, "beta", 1.0f)) != MINFER_OK)
        return st;
    g->nodes[prod].outputs[0] = g->nodes[bni].outputs[0];
    mf_opt_kill(o, bni);
    *done = 1;
    return MINFER_OK;
fail:
    minfer_tensor_free(nw);
    minfer_tensor_free(nb);
    return st;
}

minfer_status mf_pass_fold_batchnorm(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "BatchNormalization") ||
            !bn_inference(o, &g->nodes[i]) || g->nodes[i].inputs[0] < 0)
            continue;
        int x = g->nodes[i].inputs[0];
        int p = mf_opt_producer(o, x);
        int is_conv = mf_opt_is(g, p, "Conv");
        if (p < 0 || (!is_conv && !mf_opt_is(g, p, "Gemm")) || mf_opt_single_consumer(o, x) != i ||
            g->nodes[p].n_inputs < 2 || g->nodes[p].n_outputs != 1)
            continue;
        int done = 0;
        minfer_status st = fold_one(o, p, i, is_conv, &done);
        if (st != MINFER_OK)
            return st;
        if (done) {
            (*fired)++;
            if ((st = mf_opt_reindex(o)) != MINFER_OK)
                return st;
        }
    }
    return MINFER_OK;
}
