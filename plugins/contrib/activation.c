/*
 * Element-wise contrib ops: Gelu, FastGelu, BiasGelu, QuickGelu, BiasAdd.
 *
 * Gelu and BiasGelu use the exact form 0.5 x (1 + erf(x / sqrt 2)) (ORT
 * writes them for the erf pattern); FastGelu is the tanh approximation
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); QuickGelu is
 * x * sigmoid(alpha x). A bias input is a vector over the last dimension.
 */
#include "contrib.h"

#include <math.h>
#include <string.h>

enum ew_kind { EW_GELU, EW_FAST_GELU, EW_QUICK_GELU };

typedef struct ew_job {
    enum ew_kind kind;
    float alpha;
    const float *x, *bias;
    size_t bias_len, n;
    float *y;
} ew_job;

enum { EW_CHUNK = 4096 };

static inline float ew_one(enum ew_kind kind, float alpha, float v) {
    switch (kind) {
    case EW_GELU:
        return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    case EW_FAST_GELU:
        return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
    case EW_QUICK_GELU:
        return v / (1.0f + expf(-alpha * v));
    }
    return v;
}

/* Elements [c0 * EW_CHUNK, c1 * EW_CHUNK), the last chunk cut at n. */
static void ew_range(void *arg, size_t c0, size_t c1) {
    const ew_job *j = arg;
    size_t i1 = c1 * EW_CHUNK < j->n ? c1 * EW_CHUNK : j->n;
    for (size_t i = c0 * EW_CHUNK; i < i1; i++)
        j->y[i] = ew_one(j->kind, j->alpha, j->x[i] + (j->bias ? j->bias[i % j->bias_len] : 0.0f));
}

static minfer_status ew_run(compute_args *a, enum ew_kind kind, float alpha, int bias_input) {
    minfer_status st = check_in(a, 0, MINFER_DTYPE_FLOAT, 0, MINFER_MAX_RANK);
    if (st)
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0)), *b = NULL;
    size_t n = numel(x), bl = 0;
    if (bias_input && a->n_inputs > 1 && (*vin(a, 1)).data) {
        if ((st = check_in(a, 1, MINFER_DTYPE_FLOAT, 1, 1)))
            return st;
        b = &(*vin(a, 1));
        bl = (size_t)b->dims[0];
        if (x->rank < 1 || x->dims[x->rank - 1] != b->dims[0])
            return FAIL(a, MINFER_ERR_SHAPE,
                        "%s: bias has %zu elements, the input's last dimension is %lld",
                        a->node->op_type, bl, x->rank ? (long long)x->dims[x->rank - 1] : 0LL);
    }
    ew_job j = {kind, alpha, x->data, b ? b->data : NULL, bl, n, OUTV(a, 0).data};
    par_for(a, (n + EW_CHUNK - 1) / EW_CHUNK, 4, ew_range, &j);
    return MINFER_OK;
}

static minfer_status same_as_input0(infer_args *a, size_t n_float_inputs) {
    minfer_status st;
    for (size_t i = 0; i < n_float_inputs; i++)
        if ((i == 0 || has_in(a->node, i)) && (st = want_type(a, i, MINFER_DTYPE_FLOAT)))
            return st;
    out_like(&OUTV(a, 0), &(*din(a->node, 0)), MINFER_DTYPE_FLOAT);
    return MINFER_OK;
}

minfer_status gelu_infer(void *op, infer_args *a) {
    (void)op;
    return same_as_input0(a, 1);
}
minfer_status gelu_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return ew_run(a, EW_GELU, 0, 0);
}

minfer_status fast_gelu_infer(void *op, infer_args *a) {
    (void)op;
    return same_as_input0(a, 2);
}
minfer_status fast_gelu_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return ew_run(a, EW_FAST_GELU, 0, 1);
}

minfer_status bias_gelu_infer(void *op, infer_args *a) {
    (void)op;
    minfer_status st = want_type(a, 1, MINFER_DTYPE_FLOAT);
    return st ? st : same_as_input0(a, 2);
}
minfer_status bias_gelu_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    if (a->n_inputs < 2 || !(*vin(a, 1)).data)
        return FAIL(a, MINFER_ERR_MODEL, "BiasGelu: input 1 (bias) is required");
    return ew_run(a, EW_GELU, 0, 1);
}

minfer_status quick_gelu_infer(void *op, infer_args *a) {
    (void)op;
    return same_as_input0(a, 1);
}
minfer_status quick_gelu_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return ew_run(a, EW_QUICK_GELU, minfer_kit_attr_float(a->api, a->node, "alpha", 1.702f), 0);
}

/* BiasAdd: X (N, S, C) + bias (C) + skip (N, S, C). */
minfer_status bias_add_infer(void *op, infer_args *a) {
    (void)op;
    minfer_status st;
    if ((st = want_type(a, 1, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 2, MINFER_DTYPE_FLOAT)))
        return st;
    const minfer_value_desc *x = &(*din(a->node, 0));
    if (x->rank >= 0 && x->rank != 3)
        return FAIL(a, MINFER_ERR_SHAPE, "BiasAdd: input 0 has rank %d, expected 3", x->rank);
    return same_as_input0(a, 1);
}

minfer_status bias_add_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 3, 3)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 1, 1)) ||
        (st = check_in(a, 2, MINFER_DTYPE_FLOAT, 3, 3)))
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0)), *b = &(*vin(a, 1)), *s = &(*vin(a, 2));
    if (b->dims[0] != x->dims[2] || memcmp(s->dims, x->dims, 3 * sizeof(int64_t)))
        return FAIL(a, MINFER_ERR_SHAPE,
                    "BiasAdd: bias must be (C) and skip (N, S, C) with X (N, S, C)");
    size_t n = numel(x), c = (size_t)x->dims[2];
    const float *xp = x->data, *bp = b->data, *sp = s->data;
    float *y = OUTV(a, 0).data;
    for (size_t i = 0; i < n; i++)
        y[i] = xp[i] + bp[i % c] + sp[i];
    return MINFER_OK;
}
