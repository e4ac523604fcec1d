/*
 * Normalizations ONNX Runtime fuses: SkipLayerNormalization,
 * SimplifiedLayerNormalization (RMSNorm), SkipSimplifiedLayerNormalization,
 * EmbedLayerNormalization.
 *
 * Each normalizes rows of H elements (the last dimension; for
 * SimplifiedLayerNormalization the dimensions from `axis` on) in float:
 *   LayerNorm:  y = (x - mean) / sqrt(var + eps) * gamma + beta
 *   Simplified: y = x / sqrt(mean(x^2) + eps) * gamma
 * The Skip variants first form x = input + skip (+ bias) and may return that
 * sum; the statistics outputs have the input's shape with the normalized
 * dimensions set to 1. Rows are split across the host's threads.
 */
#include "contrib.h"

#include <math.h>
#include <string.h>

typedef struct ln_job {
    int simplified;
    size_t H, skip_rows;
    float eps;
    const float *x, *skip, *bias, *gamma, *beta;
    float *y, *mean, *inv, *sum;
} ln_job;

static void ln_rows(void *arg, size_t r0, size_t r1) {
    const ln_job *j = arg;
    size_t H = j->H;
    for (size_t r = r0; r < r1; r++) {
        const float *x = j->x + r * H;
        float *y = j->y + r * H;
        /* y holds the (skip) sum first, then the normalized row. */
        if (j->skip) {
            const float *s = j->skip + (r % j->skip_rows) * H;
            for (size_t h = 0; h < H; h++)
                y[h] = x[h] + s[h] + (j->bias ? j->bias[h] : 0.0f);
            if (j->sum)
                memcpy(j->sum + r * H, y, H * sizeof(float));
            x = y;
        }
        double m = 0, v = 0;
        if (!j->simplified) {
            for (size_t h = 0; h < H; h++)
                m += x[h];
            m /= (double)H;
        }
        for (size_t h = 0; h < H; h++) {
            double d = x[h] - m;
            v += d * d;
        }
        v /= (double)H;
        float inv = (float)(1.0 / sqrt(v + j->eps)), mf = (float)m;
        for (size_t h = 0; h < H; h++)
            y[h] = (x[h] - mf) * inv * j->gamma[h] + (j->beta ? j->beta[h] : 0.0f);
        if (j->mean)
            j->mean[r] = mf;
        if (j->inv)
            j->inv[r] = inv;
    }
}

/* Shape of a statistics output: the input's with the last `nred` dims 1. */
static void stat_shape(minfer_tensor_view *o, const minfer_value_desc *x, int nred) {
    out_like(o, x, MINFER_DTYPE_FLOAT);
    for (int i = x->rank - nred; i >= 0 && i < x->rank; i++)
        o->dims[i] = 1;
}

static float *opt_out(compute_args *a, size_t i) {
    return i < a->n_outputs && OUTV(a, i).data && has_out(a->node, i) ? OUTV(a, i).data
                                                                          : NULL;
}

/* ---- SkipLayerNormalization / SkipSimplifiedLayerNormalization ----
 * inputs: input, skip, gamma, [beta], [bias] (simplified: input, skip,
 * gamma, [bias]); outputs: output, [mean], [inv_std_var],
 * [input_skip_bias_sum]. */

static minfer_status skip_infer(infer_args *a, int simplified) {
    const minfer_node_desc *n = a->node;
    minfer_status st;
    size_t nin = simplified ? 4 : 5;
    for (size_t i = 0; i < nin; i++)
        if ((i < 3 || has_in(n, i)) && (st = want_type(a, i, MINFER_DTYPE_FLOAT)))
            return st;
    const minfer_value_desc *x = &(*din(n, 0));
    if (x->rank >= 0 && (x->rank < 2 || x->rank > 3))
        return FAIL(a, MINFER_ERR_SHAPE, "%s: input has rank %d, expected 2 or 3", n->op_type,
                    x->rank);
    if (simplified && has_out(n, 1))
        return FAIL(a, MINFER_ERR_MODEL,
                    "%s: output 1 (mean) is not computed by the simplified normalization",
                    n->op_type);
    out_like(&OUTV(a, 0), x, MINFER_DTYPE_FLOAT);
    for (size_t o = 1; o < 3 && o < a->n_outputs; o++)
        stat_shape(&OUTV(a, o), x, 1);
    if (a->n_outputs > 3)
        out_like(&OUTV(a, 3), x, MINFER_DTYPE_FLOAT);
    return MINFER_OK;
}

static minfer_status skip_compute(compute_args *a, int simplified) {
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 2, 3)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 1, 3)) ||
        (st = check_in(a, 2, MINFER_DTYPE_FLOAT, 1, 1)))
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0)), *s = &(*vin(a, 1)), *g = &(*vin(a, 2));
    size_t bi = simplified ? 3 : 4;
    const minfer_tensor_view *beta = !simplified && a->n_inputs > 3 && (*vin(a, 3)).data
                                         ? &(*vin(a, 3)) : NULL;
    const minfer_tensor_view *bias = a->n_inputs > bi && (*vin(a, bi)).data ? &(*vin(a, bi))
                                                                           : NULL;
    size_t H = (size_t)x->dims[x->rank - 1], rows = H ? numel(x) / H : 0;
    size_t srows = H ? numel(s) / H : 0;
    if (s->dims[s->rank - 1] != (int64_t)H || srows == 0 || rows % srows ||
        (size_t)g->dims[0] != H)
        return FAIL(a, MINFER_ERR_SHAPE,
                    "%s: skip must end in the hidden size %zu and broadcast over the input's "
                    "rows, gamma must have %zu elements",
                    n->op_type, H, H);
    for (const minfer_tensor_view *v = beta; v; v = v == beta ? bias : NULL)
        if (v->dtype != MINFER_DTYPE_FLOAT || numel(v) != H)
            return FAIL(a, MINFER_ERR_SHAPE, "%s: beta and bias must have %zu floats",
                        n->op_type, H);
    if (bias && (bias->dtype != MINFER_DTYPE_FLOAT || numel(bias) != H))
        return FAIL(a, MINFER_ERR_SHAPE, "%s: bias must have %zu floats", n->op_type, H);
    float eps = minfer_kit_attr_float(a->api, n, "epsilon", 1e-12f);
    ln_job j = {simplified, H, srows, eps, x->data, s->data,
                bias ? bias->data : NULL, g->data, beta ? beta->data : NULL,
                OUTV(a, 0).data, opt_out(a, 1), opt_out(a, 2), opt_out(a, 3)};
    par_for(a, rows, 16, ln_rows, &j);
    return MINFER_OK;
}

minfer_status skip_ln_infer(void *op, infer_args *a) {
    (void)op;
    return skip_infer(a, 0);
}
minfer_status skip_ln_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return skip_compute(a, 0);
}
minfer_status skip_simplified_ln_infer(void *op, infer_args *a) {
    (void)op;
    return skip_infer(a, 1);
}
minfer_status skip_simplified_ln_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return skip_compute(a, 1);
}

/* ---- SimplifiedLayerNormalization: X, scale; outputs Y, [inv_std_var] ---- */

minfer_status simplified_ln_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_FLOAT)))
        return st;
    const minfer_value_desc *x = &(*din(n, 0));
    out_like(&OUTV(a, 0), x, MINFER_DTYPE_FLOAT);
    if (a->n_outputs > 1) {
        int64_t axis = minfer_kit_attr_int(a->api, n, "axis", -1);
        if (x->rank >= 0) {
            if (axis < -x->rank || axis >= x->rank)
                return FAIL(a, MINFER_ERR_MODEL, "%s: axis %lld out of range for rank %d",
                            n->op_type, (long long)axis, x->rank);
            if (axis < 0)
                axis += x->rank;
            stat_shape(&OUTV(a, 1), x, x->rank - (int)axis);
        } else
            OUTV(a, 1).dtype = MINFER_DTYPE_FLOAT;
    }
    return MINFER_OK;
}

minfer_status simplified_ln_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 1, MINFER_MAX_RANK)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 0, MINFER_MAX_RANK)))
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0)), *g = &(*vin(a, 1));
    int64_t axis = minfer_kit_attr_int(a->api, n, "axis", -1);
    if (axis < -x->rank || axis >= x->rank)
        return FAIL(a, MINFER_ERR_MODEL, "%s: axis %lld out of range for rank %d", n->op_type,
                    (long long)axis, x->rank);
    if (axis < 0)
        axis += x->rank;
    size_t H = 1;
    for (int i = (int)axis; i < x->rank; i++)
        H *= (size_t)x->dims[i];
    if (numel(g) != H)
        return FAIL(a, MINFER_ERR_SHAPE, "%s: scale has %zu elements, the normalized size is %zu",
                    n->op_type, numel(g), H);
    size_t rows = H ? numel(x) / H : 0;
    float eps = minfer_kit_attr_float(a->api, n, "epsilon", 1e-5f);
    ln_job j = {1, H, 1, eps, x->data, NULL, NULL, g->data,
                NULL, OUTV(a, 0).data, NULL, opt_out(a, 1), NULL};
    par_for(a, rows, 16, ln_rows, &j);
    return MINFER_OK;
}

/* ---- EmbedLayerNormalization ----
 * inputs: input_ids (B,S), [segment_ids], word_embedding (V,H),
 * position_embedding (P,H), [segment_embedding], gamma, [beta], [mask],
 * [position_ids]; ids int32 (int64 accepted). outputs: output (B,S,H),
 * [mask_index] (B, int32: the number of ones in each mask row, 0 without a
 * mask), [embedding_sum] (B,S,H). */

static int64_t id_at(const minfer_tensor_view *v, size_t i) {
    return v->dtype == MINFER_DTYPE_INT64 ? ((const int64_t *)v->data)[i]
                                          : ((const int32_t *)v->data)[i];
}

minfer_status embed_ln_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    for (size_t i = 2; i < 7; i++)
        if ((i != 4 && i != 6) || has_in(n, i))
            if ((st = want_type(a, i, MINFER_DTYPE_FLOAT)))
                return st;
    const minfer_value_desc *ids = &(*din(n, 0)), *w = &(*din(n, 2));
    if (!has_in(n, 0) || (ids->dtype != MINFER_DTYPE_INT32 && ids->dtype != MINFER_DTYPE_INT64))
        return FAIL(a, MINFER_ERR_TYPE, "%s: input_ids must be int32", n->op_type);
    int64_t d[3] = {ids->rank == 2 ? ids->dims[0] : -1, ids->rank == 2 ? ids->dims[1] : -1,
                    w->rank == 2 ? w->dims[1] : -1};
    if (ids->rank >= 0 && ids->rank != 2)
        return FAIL(a, MINFER_ERR_SHAPE, "%s: input_ids must be 2-D", n->op_type);
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, 3, d);
    if (a->n_outputs > 1)
        out_shape(&OUTV(a, 1), MINFER_DTYPE_INT32, 1, d);
    if (a->n_outputs > 2)
        out_shape(&OUTV(a, 2), MINFER_DTYPE_FLOAT, 3, d);
    return MINFER_OK;
}

minfer_status embed_ln_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    const minfer_tensor_view *ids = &(*vin(a, 0));
    if (!ids->data || ids->rank != 2 ||
        (ids->dtype != MINFER_DTYPE_INT32 && ids->dtype != MINFER_DTYPE_INT64))
        return FAIL(a, MINFER_ERR_TYPE, "%s: input_ids must be a 2-D int32 tensor", n->op_type);
    if ((st = check_in(a, 2, MINFER_DTYPE_FLOAT, 2, 2)) ||
        (st = check_in(a, 3, MINFER_DTYPE_FLOAT, 2, 2)) ||
        (st = check_in(a, 5, MINFER_DTYPE_FLOAT, 1, 1)))
        return st;
    const minfer_tensor_view *opt[9] = {0};
    for (size_t i = 0; i < 9 && i < a->n_inputs; i++)
        if ((*vin(a, i)).data)
            opt[i] = &(*vin(a, i));
    size_t B = (size_t)ids->dims[0], S = (size_t)ids->dims[1], H = (size_t)opt[2]->dims[1];
    const minfer_tensor_view *seg = opt[1], *segw = opt[4], *beta = opt[6], *mask = opt[7],
                             *pos = opt[8];
    if ((size_t)opt[3]->dims[1] != H || (size_t)opt[5]->dims[0] != H ||
        (beta && (beta->dtype != MINFER_DTYPE_FLOAT || numel(beta) != H)) ||
        (segw && (segw->dtype != MINFER_DTYPE_FLOAT || segw->rank != 2 ||
                  (size_t)segw->dims[1] != H)))
        return FAIL(a, MINFER_ERR_SHAPE, "%s: embeddings, gamma and beta must have width %zu",
                    n->op_type, H);
    if ((seg && (numel(seg) != B * S || !segw || seg->dtype != ids->dtype)) ||
        (mask && numel(mask) != B * S) ||
        (pos && numel(pos) != B * S && numel(pos) != S))
        return FAIL(a, MINFER_ERR_SHAPE,
                    "%s: segment_ids and mask must be (B, S) like input_ids, position_ids "
                    "(B, S) or (1, S); segment_ids needs segment_embedding",
                    n->op_type);
    float *sum = opt_out(a, 2);
    float *y = OUTV(a, 0).data;
    const float *W = opt[2]->data, *P = opt[3]->data, *SW = segw ? segw->data : NULL;
    for (size_t b = 0; b < B; b++)
        for (size_t s = 0; s < S; s++) {
            size_t r = b * S + s;
            int64_t wi = id_at(ids, r);
            int64_t pi = pos ? id_at(pos, numel(pos) == S ? s : r) : (int64_t)s;
            int64_t si = seg ? id_at(seg, r) : 0;
            if (wi < 0 || wi >= opt[2]->dims[0] || pi < 0 || pi >= opt[3]->dims[0] ||
                (seg && (si < 0 || si >= segw->dims[0])))
                return FAIL(a, MINFER_ERR_MODEL,
                            "%s: an id at batch %zu, position %zu is out of its table's range",
                            n->op_type, b, s);
            float *row = y + r * H;
            for (size_t h = 0; h < H; h++)
                row[h] = W[wi * H + h] + P[pi * H + h] + (SW ? SW[si * H + h] : 0.0f);
            if (sum)
                memcpy(sum + r * H, row, H * sizeof(float));
        }
    float eps = minfer_kit_attr_float(a->api, n, "epsilon", 1e-12f);
    ln_job j = {0, H, 1, eps, y, NULL, NULL, opt[5]->data,
                beta ? beta->data : NULL, y, NULL, NULL, NULL};
    par_for(a, B * S, 16, ln_rows, &j);
    int32_t *mi = a->n_outputs > 1 && has_out(n, 1) ? OUTV(a, 1).data : NULL;
    if (mi)
        for (size_t b = 0; b < B; b++) {
            int32_t c = 0;
            for (size_t s = 0; mask && s < S; s++)
                c += id_at(mask, b * S + s) != 0;
            mi[b] = c;
        }
    return MINFER_OK;
}

/* ---- LayerNormalization before opset 17 ----
 * ONNX Runtime's own LayerNormalization in the default domain (from opset
 * 1; ONNX has one only from 17, the same function): X, Scale, [B]; attrs
 * axis (-1), epsilon (1e-5); outputs Y, [Mean], [InvStdDev] of X's shape
 * with the normalized dimensions 1. */

minfer_status layer_norm_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_FLOAT)) ||
        (has_in(n, 2) && (st = want_type(a, 2, MINFER_DTYPE_FLOAT))))
        return st;
    const minfer_value_desc *x = &(*din(n, 0));
    out_like(&OUTV(a, 0), x, MINFER_DTYPE_FLOAT);
    int64_t axis = minfer_kit_attr_int(a->api, n, "axis", -1);
    for (size_t o = 1; o < 3 && o < a->n_outputs; o++) {
        if (x->rank < 0) {
            OUTV(a, o).dtype = MINFER_DTYPE_FLOAT;
            continue;
        }
        if (axis < -x->rank || axis >= x->rank)
            return FAIL(a, MINFER_ERR_MODEL, "%s: axis %lld out of range for rank %d", n->op_type,
                        (long long)axis, x->rank);
        stat_shape(&OUTV(a, o), x, x->rank - (int)(axis < 0 ? axis + x->rank : axis));
    }
    return MINFER_OK;
}

minfer_status layer_norm_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 1, MINFER_MAX_RANK)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 0, MINFER_MAX_RANK)))
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0)), *g = &(*vin(a, 1));
    const minfer_tensor_view *b = a->n_inputs > 2 && (*vin(a, 2)).data ? &(*vin(a, 2)) : NULL;
    int64_t axis = minfer_kit_attr_int(a->api, n, "axis", -1);
    if (axis < -x->rank || axis >= x->rank)
        return FAIL(a, MINFER_ERR_MODEL, "%s: axis %lld out of range for rank %d", n->op_type,
                    (long long)axis, x->rank);
    if (axis < 0)
        axis += x->rank;
    size_t H = 1;
    for (int i = (int)axis; i < x->rank; i++)
        H *= (size_t)x->dims[i];
    /* Scale and B are the normalized shape (broadcasting a smaller one is
     * not what ORT's models hold). */
    if (numel(g) != H || (b && (b->dtype != MINFER_DTYPE_FLOAT || numel(b) != H)))
        return FAIL(a, MINFER_ERR_SHAPE, "%s: Scale and B must have %zu elements", n->op_type, H);
    size_t rows = H ? numel(x) / H : 0;
    float eps = minfer_kit_attr_float(a->api, n, "epsilon", 1e-5f);
    ln_job j = {0, H, 1, eps, x->data, NULL, NULL, g->data,
                b ? b->data : NULL, OUTV(a, 0).data, opt_out(a, 1), opt_out(a, 2), NULL};
    par_for(a, rows, 16, ln_rows, &j);
    return MINFER_OK;
}
