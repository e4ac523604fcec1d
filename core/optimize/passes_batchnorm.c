/*
 * Level 1: BatchNormalization after Conv or Gemm folded into the weights.
 * Level 2: a BatchNormalization with no Conv before it and a Relu after it
 * made a depthwise 1x1 Conv for the Conv fusion (at the end of the file).
 * Level 2: a BatchNormalization with no Conv before it and a Relu after it
 * made a depthwise 1x1 Conv for the Conv fusion (at the end of the file).
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

/* ---- batchnorm_relu_as_conv (level 2) -------------------------------------
 *
 * A BatchNormalization that no Conv or Gemm precedes (DenseNet's
 * pre-activation after every Concat) followed by a Relu is two passes over
 * its input. As a depthwise 1x1 Conv (group C, W[c] = s[c], B[c] = bias[c] -
 * mean[c] s[c]) the Conv fusion then takes the Relu, and the pair is one
 * pass. Checked: rank-4 float input with a static channel count; BN in
 * inference mode, its four parameters float initializers of C elements;
 * its output read by one Relu alone and not pinned. */
minfer_status mf_pass_batchnorm_relu_conv(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "BatchNormalization") ||
            !bn_inference(o, &g->nodes[i]) || g->nodes[i].inputs[0] < 0)
            continue;
        const mf_node *bn = &g->nodes[i];
        int y = bn->outputs[0], c = mf_opt_single_consumer(o, y);
        if (c < 0 || !mf_opt_is(g, c, "Relu"))
            continue;
        const mf_vinfo *xi = mf_opt_info(o, bn->inputs[0]);
        int64_t C = mf_opt_dim(xi, 1);
        if (xi->rank != 4 || xi->dtype != MINFER_DTYPE_FLOAT || C <= 0)
            continue;
        const float *scale = fvec(o, bn->inputs[1], C), *bias = fvec(o, bn->inputs[2], C),
                    *mean = fvec(o, bn->inputs[3], C), *var = fvec(o, bn->inputs[4], C);
        if (!scale || !bias || !mean || !var)
            continue;
        float eps = mf_attr_float(bn, "epsilon", 1e-5f);
        minfer_tensor *w = NULL, *b = NULL;
        int64_t wd[4] = {C, 1, 1, 1}, bd[1] = {C};
        if ((st = mf_tensor_new(MINFER_DTYPE_FLOAT, wd, 4, &w)) != MINFER_OK)
            return st;
        if ((st = mf_tensor_new(MINFER_DTYPE_FLOAT, bd, 1, &b)) != MINFER_OK) {
            minfer_tensor_free(w);
            return st;
        }
        float *wp = w->view.data, *bp = b->view.data;
        for (int64_t ch = 0; ch < C; ch++) {
            double s = (double)scale[ch] / sqrt((double)var[ch] + (double)eps);
            wp[ch] = (float)s;
            bp[ch] = (float)((double)bias[ch] - (double)mean[ch] * s);
        }
        int wv = mf_opt_add_const(o, g->values[y].name, w);
        int bv = mf_opt_add_const(o, g->values[y].name, b);
        if (wv < 0 || bv < 0)
            return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
        static const int64_t ones[2] = {1, 1};
        int ins[3] = {g->nodes[i].inputs[0], wv, bv};
        static const char *const drop[] = {"epsilon", "momentum", "spatial", "training_mode",
                                           "is_test", "consumed_inputs"};
        for (size_t a = 0; a < sizeof drop / sizeof drop[0]; a++)
            mf_opt_drop_attr(o, i, drop[a]);
        if ((st = mf_opt_set_inputs(o, i, ins, 3)) != MINFER_OK ||
            (st = mf_opt_set_op(o, i, "", "Conv")) != MINFER_OK ||
            (st = mf_opt_set_attr_int(o, i, "group", C)) != MINFER_OK ||
            (st = mf_opt_set_attr_ints(o, i, "kernel_shape", ones, 2)) != MINFER_OK)
            return st;
        (*fired)++;
    }
    return MINFER_OK;
}
