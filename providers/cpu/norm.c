/*
 * Normalizations: Softmax and LogSoftmax, BatchNormalization (inference),
 * LayerNormalization, and the minfer domain's RMSNormalization. Sums and
 * variances accumulate in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---- Softmax, LogSoftmax ----------------------------------------------------- */

typedef struct softmax_state {
    int64_t axis;
    int coerce_2d; /* opset < 13: flatten to [prod(dims[:axis]), prod(dims[axis:])] */
    int log;
} softmax_state;

minfer_status cpu_prepare_softmax(cpu_prep *p) {
    if (!minfer_kit_input(p->node, 0))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    softmax_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->coerce_2d = p->since < 13;
    st->axis = cpu_attr_int(p, "axis", st->coerce_2d ? 1 : -1);
    st->log = strcmp(p->node->op_type, "LogSoftmax") == 0;
    return MINFER_OK;
}

typedef struct softmax_job {
    int32_t dtype;
    int log;
    size_t len, inner;
    const void *x;
    void *y;
} softmax_job;

/* Item (outer, inner) pairs: one softmax over len elements, stride inner. */
#define SOFTMAX(E, T, S)                                                                   \
    static void softmax_##S(const softmax_job *j, size_t b, size_t e) {                    \
        for (size_t it = b; it < e; it++) {                                                \
            size_t o = it / j->inner, in = it % j->inner, st = j->inner;                   \
            const T *x = (const T *)j->x + o * j->len * st + in;                           \
            T *y = (T *)j->y + o * j->len * st + in;                                       \
            T m = x[0];                                                                    \
            for (size_t i = 1; i < j->len; i++)                                            \
                if (x[i * st] > m)                                                         \
                    m = x[i * st];                                                         \
            double sum = 0;                                                                \
            for (size_t i = 0; i < j->len; i++) {                                          \
                double v = exp((double)x[i * st] - (double)m);                             \
                sum += v;                                                                  \
                if (!j->log)                                                               \
                    y[i * st] = (T)v;                                                      \
            }                                                                              \
            if (j->log) {                                                                  \
                double ls = log(sum);                                                      \
                for (size_t i = 0; i < j->len; i++)                                        \
                    y[i * st] = (T)((double)x[i * st] - (double)m - ls);                   \
            } else {                                                                       \
                for (size_t i = 0; i < j->len; i++)                                        \
                    y[i * st] = (T)((double)y[i * st] / sum);                              \
            }                                                                              \
        }                                                                                  \
    }
CPU_FLOAT_TYPES(SOFTMAX)

static void softmax_range(void *arg, size_t b, size_t e) {
    const softmax_job *j = arg;
    if (j->dtype == MINFER_DTYPE_FLOAT)
        softmax_f32(j, b, e);
    else
        softmax_f64(j, b, e);
}

minfer_status cpu_compute_softmax(const cpu_exec *e) {
    const softmax_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0 && !(st->coerce_2d && st->axis == x->rank))
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range for rank %d",
                        (long long)st->axis, (int)x->rank);
    if (axis < 0)
        axis = x->rank; /* coerce: [N, 1] */
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    size_t outer = (size_t)minfer_kit_numel(axis, x->dims);
    softmax_job j = {x->dtype, st->log, 0, 1, cpu_data(x), y};
    if (st->coerce_2d) {
        j.len = (size_t)minfer_kit_numel(x->rank - axis, x->dims + axis);
    } else {
        j.len = (size_t)x->dims[axis];
        j.inner = (size_t)minfer_kit_numel(x->rank - axis - 1, x->dims + axis + 1);
    }
    if (j.len == 0 || outer * j.inner == 0)
        return MINFER_OK;
    cpu_parallel(e->ctx, outer * j.inner, (4096 + j.len - 1) / j.len, softmax_range, &j);
    return MINFER_OK;
}

/* ---- BatchNormalization ---------------------------------------------------- */

typedef struct bn_state {
    float epsilon;
    float momentum;
    int training; /* training_mode=1: batch statistics, running mean/var outputs */
} bn_state;

minfer_status cpu_prepare_batchnorm(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    if (n->n_inputs != 5)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "expects 5 inputs");
    for (size_t i = 0; i < 5; i++) {
        const minfer_value_desc *d = minfer_kit_input(n, i);
        if (!d)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "input %zu missing", i);
        /* Opset 15 allows other types for scale/bias and mean/var; decline. */
        if (d->dtype && d->dtype != n->inputs[0].dtype)
            return cpu_decline(p, "input %zu type differs from X", i);
    }
    int training = p->since >= 14 && cpu_attr_int(p, "training_mode", 0) != 0;
    if (p->since < 9 && cpu_attr_int(p, "spatial", 1) == 0)
        return cpu_decline(p, "spatial=0 not supported");
    for (size_t i = 1; i < n->n_outputs && !training; i++)
        if (minfer_kit_output_wanted(n, i))
            return cpu_decline(p, "training outputs (mean, var, saved statistics) need "
                                  "training_mode (opset 14)");
    bn_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->epsilon = cpu_attr_float(p, "epsilon", 1e-5f);
    st->momentum = cpu_attr_float(p, "momentum", 0.9f);
    st->training = training;
    return MINFER_OK;
}

typedef struct bn_job {
    int32_t dtype;
    size_t C, plane;
    const void *x, *scale, *bias, *mean, *var;
    void *y;
    double eps;
} bn_job;

#define BN(E, T, S)                                                                        \
    static void bn_##S(const bn_job *j, size_t b, size_t e) {                              \
        const T *sc = j->scale, *bi = j->bias, *mu = j->mean, *va = j->var;                \
        for (size_t p = b; p < e; p++) {                                                   \
            size_t c = p % j->C;                                                           \
            double a = (double)sc[c] / sqrt((double)va[c] + j->eps);                       \
            double k = (double)bi[c] - (double)mu[c] * a;                                  \
            const T *x = (const T *)j->x + p * j->plane;                                   \
            T *y = (T *)j->y + p * j->plane;                                               \
            for (size_t i = 0; i < j->plane; i++)                                          \
                y[i] = (T)(x[i] * a + k);                                                  \
        }                                                                                  \
    }
CPU_FLOAT_TYPES(BN)

static void bn_range(void *arg, size_t b, size_t e) {
    const bn_job *j = arg;
    if (j->dtype == MINFER_DTYPE_FLOAT)
        bn_f32(j, b, e);
    else
        bn_f64(j, b, e);
}

/* Training mode (opset 14+): normalizes with the batch's own mean and
 * (biased) variance per channel and outputs the updated running statistics
 * running = input * momentum + batch * (1 - momentum), as the ONNX reference. */
static minfer_status bn_training(const cpu_exec *e, const minfer_tensor_view *x,
                                 const void *const *p) {
    const bn_state *st = e->state;
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1];
    size_t plane = (size_t)minfer_kit_numel(x->rank - 2, x->dims + 2);
    int64_t cdim[1] = {(int64_t)C};
    void *y, *rm = NULL, *rv = NULL;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    if (minfer_kit_output_wanted(e->args->node, 1) &&
        (s = cpu_output(e, 1, x->dtype, 1, cdim, &rm)) != MINFER_OK)
        return s;
    if (minfer_kit_output_wanted(e->args->node, 2) &&
        (s = cpu_output(e, 2, x->dtype, 1, cdim, &rv)) != MINFER_OK)
        return s;
    const void *xd = cpu_data(x);
    int32_t dt = x->dtype;
    for (size_t c = 0; c < C; c++) {
        double sum = 0, sq = 0, cnt = (double)(N * plane);
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < plane; i++)
                sum += cpu_get(xd, dt, (n * C + c) * plane + i);
        double mean = cnt > 0 ? sum / cnt : 0;
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < plane; i++) {
                double d = cpu_get(xd, dt, (n * C + c) * plane + i) - mean;
                sq += d * d;
            }
        double var = cnt > 0 ? sq / cnt : 0;
        double a = cpu_get(p[0], dt, c) / sqrt(var + st->epsilon), b = cpu_get(p[1], dt, c);
        for (size_t n = 0; n < N; n++)
            for (size_t i = 0; i < plane; i++) {
                size_t at = (n * C + c) * plane + i;
                cpu_set(y, dt, at, (cpu_get(xd, dt, at) - mean) * a + b);
            }
        if (rm)
            cpu_set(rm, dt, c, cpu_get(p[2], dt, c) * st->momentum + mean * (1 - st->momentum));
        if (rv)
            cpu_set(rv, dt, c, cpu_get(p[3], dt, c) * st->momentum + var * (1 - st->momentum));
    }
    return MINFER_OK;
}

minfer_status cpu_compute_batchnorm(const cpu_exec *e) {
    const bn_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    if (x->rank < 2)
        return cpu_fail(e, MINFER_ERR_SHAPE, "X must have rank >= 2");
    const void *p[4];
    for (size_t i = 1; i < 5; i++) {
        const minfer_tensor_view *v = cpu_input(e, i);
        if (!v || v->dtype != x->dtype || minfer_kit_numel(v->rank, v->dims) != x->dims[1])
            return cpu_fail(e, MINFER_ERR_SHAPE, "input %zu must hold %lld values of X's type",
                            i, (long long)x->dims[1]);
        p[i - 1] = cpu_data(v);
    }
    if (st->training)
        return bn_training(e, x, p);
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    bn_job j = {x->dtype, (size_t)x->dims[1], (size_t)minfer_kit_numel(x->rank - 2, x->dims + 2),
                cpu_data(x), p[0], p[1], p[2], p[3], y, st->epsilon};
    size_t planes = (size_t)(x->dims[0] * x->dims[1]);
    cpu_parallel(e->ctx, planes, (16384 + j.plane) / (j.plane + 1), bn_range, &j);
    return MINFER_OK;
}

/* ---- LayerNormalization ----------------------------------------------------- */

typedef struct ln_state {
    int64_t axis;
    float epsilon;
} ln_state;

minfer_status cpu_prepare_layernorm(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = minfer_kit_input(n, 0), *sc = minfer_kit_input(n, 1),
                            *b = minfer_kit_input(n, 2);
    if (!x || !sc)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs X and Scale");
    if ((sc->dtype && sc->dtype != x->dtype) || (b && b->dtype && b->dtype != x->dtype))
        return cpu_decline(p, "Scale and B must have X's type");
    for (size_t i = 1; i < 3; i++)
        if (minfer_kit_output_wanted(n, i) && n->outputs[i].dtype &&
            n->outputs[i].dtype != MINFER_DTYPE_FLOAT && n->outputs[i].dtype != MINFER_DTYPE_DOUBLE)
            return cpu_decline(p, "output %zu type not supported", i);
    ln_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = cpu_attr_int(p, "axis", -1);
    st->epsilon = cpu_attr_float(p, "epsilon", 1e-5f);
    return MINFER_OK;
}

typedef struct ln_job {
    int32_t dtype, stat_dtype[2];
    size_t len;
    const void *x, *scale, *bias;
    int scale_1, bias_1; /* one-element Scale / B */
    void *y, *stat[2];   /* Mean, InvStdDev (optional) */
    double eps;
} ln_job;

static void put_stat(void *p, int32_t dt, size_t i, double v) {
    if (!p)
        return;
    if (dt == MINFER_DTYPE_DOUBLE)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

#define LN(E, T, S)                                                                        \
    static void ln_##S(const ln_job *j, size_t b, size_t e) {                              \
        const T *sc = j->scale, *bi = j->bias;                                             \
        for (size_t r = b; r < e; r++) {                                                   \
            const T *x = (const T *)j->x + r * j->len;                                     \
            T *y = (T *)j->y + r * j->len;                                                 \
            double mean = 0, var = 0;                                                      \
            for (size_t i = 0; i < j->len; i++)                                            \
                mean += x[i];                                                              \
            mean /= (double)j->len;                                                        \
            for (size_t i = 0; i < j->len; i++)                                            \
                var += ((double)x[i] - mean) * ((double)x[i] - mean);                      \
            var /= (double)j->len;                                                         \
            double inv = 1.0 / sqrt(var + j->eps);                                         \
            for (size_t i = 0; i < j->len; i++) {                                          \
                double v = ((double)x[i] - mean) * inv * sc[j->scale_1 ? 0 : i];           \
                if (bi)                                                                    \
                    v += bi[j->bias_1 ? 0 : i];                                            \
                y[i] = (T)v;                                                               \
            }                                                                              \
            put_stat(j->stat[0], j->stat_dtype[0], r, mean);                               \
            put_stat(j->stat[1], j->stat_dtype[1], r, inv);                                \
        }                                                                                  \
    }
CPU_FLOAT_TYPES(LN)

static void ln_range(void *arg, size_t b, size_t e) {
    const ln_job *j = arg;
    if (j->dtype == MINFER_DTYPE_FLOAT)
        ln_f32(j, b, e);
    else
        ln_f64(j, b, e);
}

minfer_status cpu_compute_layernorm(const cpu_exec *e) {
    const ln_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *sc = cpu_input(e, 1), *b = cpu_input(e, 2);
    if (!x || !sc)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
    size_t rows = (size_t)minfer_kit_numel(axis, x->dims);
    size_t len = (size_t)minfer_kit_numel(x->rank - axis, x->dims + axis);
    ln_job j;
    memset(&j, 0, sizeof j);
    j.dtype = x->dtype;
    j.len = len;
    j.x = cpu_data(x);
    j.eps = st->epsilon;
    int64_t ns = minfer_kit_numel(sc->rank, sc->dims);
    if (sc->dtype != x->dtype || ((size_t)ns != len && ns != 1))
        return cpu_fail(e, MINFER_ERR_SHAPE, "Scale must have X's type and %zu elements", len);
    j.scale = cpu_data(sc);
    j.scale_1 = ns == 1 && len != 1;
    if (b) {
        int64_t nb = minfer_kit_numel(b->rank, b->dims);
        if (b->dtype != x->dtype || ((size_t)nb != len && nb != 1))
            return cpu_fail(e, MINFER_ERR_SHAPE, "B must have X's type and %zu elements", len);
        j.bias = cpu_data(b);
        j.bias_1 = nb == 1 && len != 1;
    }
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &j.y);
    if (s)
        return s;
    int64_t sd[CPU_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        sd[i] = i < axis ? x->dims[i] : 1;
    for (size_t i = 1; i < 3; i++) {
        if (!minfer_kit_output_wanted(e->args->node, i) || i >= e->args->n_outputs)
            continue;
        int32_t dt = e->args->outputs[i].dtype ? e->args->outputs[i].dtype : MINFER_DTYPE_FLOAT;
        j.stat_dtype[i - 1] = dt;
        s = cpu_output(e, i, dt, x->rank, sd, &j.stat[i - 1]);
        if (s)
            return s;
    }
    if (len == 0)
        return MINFER_OK;
    cpu_parallel(e->ctx, rows, (16384 + len - 1) / len, ln_range, &j);
    return MINFER_OK;
}

/* ---- RMSNormalization (minfer domain) ---------------------------------------------
 * Y = X / sqrt(mean(X^2) + epsilon) * Scale over the trailing axes from
 * `axis` (ONNX opset 23's RMSNormalization, which the optimizer makes from
 * the Pow/ReduceMean/Add/Sqrt/Reciprocal/Mul chain exporters write). The
 * mean of squares accumulates in double, as LayerNormalization's. Shares
 * LayerNormalization's state (axis, epsilon). */

typedef struct rms_job {
    int32_t dtype;
    size_t len;
    const void *x, *scale;
    int scale_1;
    void *y;
    double eps;
} rms_job;

#define RMS(E, T, S)                                                                       \
    static void rms_##S(const rms_job *j, size_t b, size_t e) {                            \
        const T *sc = j->scale;                                                            \
        for (size_t r = b; r < e; r++) {                                                   \
            const T *x = (const T *)j->x + r * j->len;                                     \
            T *y = (T *)j->y + r * j->len;                                                 \
            double ss = 0;                                                                 \
            for (size_t i = 0; i < j->len; i++)                                            \
                ss += (double)x[i] * (double)x[i];                                         \
            double inv = 1.0 / sqrt(ss / (double)j->len + j->eps);                         \
            for (size_t i = 0; i < j->len; i++)                                            \
                y[i] = (T)((double)x[i] * inv * (double)sc[j->scale_1 ? 0 : i]);           \
        }                                                                                  \
    }
CPU_FLOAT_TYPES(RMS)

static void rms_range(void *arg, size_t b, size_t e) {
    const rms_job *j = arg;
    if (j->dtype == MINFER_DTYPE_FLOAT)
        rms_f32(j, b, e);
    else
        rms_f64(j, b, e);
}

minfer_status cpu_prepare_rmsnorm(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = minfer_kit_input(n, 0), *sc = minfer_kit_input(n, 1);
    if (!x || !sc)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs X and Scale");
    if (sc->dtype && sc->dtype != x->dtype)
        return cpu_decline(p, "Scale must have X's type");
    ln_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = cpu_attr_int(p, "axis", -1);
    st->epsilon = cpu_attr_float(p, "epsilon", 1e-5f);
    return MINFER_OK;
}

minfer_status cpu_compute_rmsnorm(const cpu_exec *e) {
    const ln_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *sc = cpu_input(e, 1);
    if (!x || !sc)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
    size_t rows = (size_t)minfer_kit_numel(axis, x->dims);
    size_t len = (size_t)minfer_kit_numel(x->rank - axis, x->dims + axis);
    int64_t ns = minfer_kit_numel(sc->rank, sc->dims);
    if (sc->dtype != x->dtype || ((size_t)ns != len && ns != 1))
        return cpu_fail(e, MINFER_ERR_SHAPE, "Scale must have X's type and %zu elements", len);
    rms_job j = {x->dtype, len, cpu_data(x), cpu_data(sc), ns == 1 && len != 1, NULL,
                 st->epsilon};
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &j.y);
    if (s || len == 0)
        return s;
    cpu_parallel(e->ctx, rows, (16384 + len - 1) / len, rms_range, &j);
    return MINFER_OK;
}

/* ---- Hardmax --------------------------------------------------------------------
 * 1 at the first maximum along the axis (a flattened [outer, rest] before
 * opset 13, as Softmax), 0 elsewhere. Shares Softmax's prepare. */

minfer_status cpu_compute_hardmax(const cpu_exec *e) {
    const softmax_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    size_t outer = (size_t)minfer_kit_numel(axis, x->dims), len, inner = 1;
    if (st->coerce_2d) {
        len = (size_t)minfer_kit_numel(x->rank - axis, x->dims + axis);
    } else {
        len = (size_t)x->dims[axis];
        inner = (size_t)minfer_kit_numel(x->rank - axis - 1, x->dims + axis + 1);
    }
    const void *xd = cpu_data(x);
    for (size_t o = 0; o < outer; o++)
        for (size_t in = 0; in < inner; in++) {
            size_t best = 0;
            for (size_t i = 0; i < len; i++) {
                size_t at = (o * len + i) * inner + in;
                if (cpu_get(xd, x->dtype, at) > cpu_get(xd, x->dtype, (o * len + best) * inner + in))
                    best = i;
            }
            for (size_t i = 0; i < len; i++)
                cpu_set(y, x->dtype, (o * len + i) * inner + in, i == best ? 1.0 : 0.0);
        }
    return MINFER_OK;
}

/* ---- InstanceNormalization, MeanVarianceNormalization, LRN ----------------------
 * Computed through double with cpu_get/cpu_set, so every float type works. */

typedef struct norm2_state {
    float epsilon, alpha, beta, bias;
    int64_t size;
    size_t n_axes;
    int64_t axes[CPU_MAX_RANK];
} norm2_state;

minfer_status cpu_prepare_norm2(cpu_prep *p) {
    if (!minfer_kit_input(p->node, 0))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    norm2_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->epsilon = cpu_attr_float(p, "epsilon", 1e-5f);
    st->alpha = cpu_attr_float(p, "alpha", 1e-4f);
    st->beta = cpu_attr_float(p, "beta", 0.75f);
    st->bias = cpu_attr_float(p, "bias", 1.0f);
    st->size = cpu_attr_int(p, "size", 0);
    if (strcmp(p->node->op_type, "LRN") == 0 && st->size < 1)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "size must be positive");
    int r = cpu_attr_ints(p, "axes", st->axes, CPU_MAX_RANK, &st->n_axes);
    if (r < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r == 0) { /* MeanVarianceNormalization's default */
        st->n_axes = 3;
        st->axes[0] = 0, st->axes[1] = 2, st->axes[2] = 3;
    }
    return MINFER_OK;
}

minfer_status cpu_compute_instancenorm(const cpu_exec *e) {
    const norm2_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *sc = cpu_input(e, 1), *b = cpu_input(e, 2);
    if (!x || !sc || !b || x->rank < 3)
        return cpu_fail(e, MINFER_ERR_SHAPE, "needs X (rank >= 3), scale and B");
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1];
    if (minfer_kit_numel(sc->rank, sc->dims) != (int64_t)C ||
        minfer_kit_numel(b->rank, b->dims) != (int64_t)C)
        return cpu_fail(e, MINFER_ERR_SHAPE, "scale and B must hold C values");
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    size_t plane = (size_t)minfer_kit_numel(x->rank - 2, x->dims + 2);
    const void *xd = cpu_data(x);
    for (size_t p = 0; p < N * C; p++) {
        double sum = 0, sq = 0;
        for (size_t i = 0; i < plane; i++)
            sum += cpu_get(xd, x->dtype, p * plane + i);
        double mean = plane ? sum / (double)plane : 0;
        for (size_t i = 0; i < plane; i++) {
            double d = cpu_get(xd, x->dtype, p * plane + i) - mean;
            sq += d * d;
        }
        double var = plane ? sq / (double)plane : 0;
        double a = cpu_get(cpu_data(sc), sc->dtype, p % C) / sqrt(var + st->epsilon);
        double bb = cpu_get(cpu_data(b), b->dtype, p % C);
        for (size_t i = 0; i < plane; i++)
            cpu_set(y, x->dtype, p * plane + i,
                    (cpu_get(xd, x->dtype, p * plane + i) - mean) * a + bb);
    }
    return MINFER_OK;
}

/* MVN: (x - mean) / (sqrt(var) + 1e-9) over the axes, as the ONNX function. */
minfer_status cpu_compute_mvn(const cpu_exec *e) {
    const norm2_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int reduced[CPU_MAX_RANK] = {0};
    for (size_t i = 0; i < st->n_axes; i++) {
        int a = minfer_kit_axis(st->axes[i], x->rank);
        if (a < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
        reduced[a] = 1;
    }
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    /* Group elements by their kept coordinates: key = flat index over kept dims. */
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims), groups = 1;
    for (int d = 0; d < x->rank; d++)
        if (!reduced[d])
            groups *= (size_t)x->dims[d];
    double *sum = cpu_calloc(e->ctx, groups ? groups : 1, sizeof *sum);
    double *sq = cpu_calloc(e->ctx, groups ? groups : 1, sizeof *sq);
    size_t *key = cpu_malloc(e->ctx, (n ? n : 1) * sizeof *key);
    if (!sum || !sq || !key) {
        free(sum), free(sq), free(key);
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        size_t rem = i, k = 0, mul = 1;
        for (int d = x->rank - 1; d >= 0; d--) {
            size_t c = (size_t)((int64_t)rem % x->dims[d]);
            rem /= (size_t)x->dims[d];
            if (!reduced[d]) {
                k += c * mul;
                mul *= (size_t)x->dims[d];
            }
        }
        key[i] = k;
    }
    const void *xd = cpu_data(x);
    double per = groups ? (double)n / (double)groups : 1;
    for (size_t i = 0; i < n; i++)
        sum[key[i]] += cpu_get(xd, x->dtype, i);
    for (size_t i = 0; i < n; i++) {
        double d = cpu_get(xd, x->dtype, i) - sum[key[i]] / per;
        sq[key[i]] += d * d;
    }
    for (size_t i = 0; i < n; i++) {
        double mean = sum[key[i]] / per, sd = sqrt(sq[key[i]] / per);
        cpu_set(y, x->dtype, i, (cpu_get(xd, x->dtype, i) - mean) / (sd + 1e-9));
    }
    free(sum), free(sq), free(key);
    return MINFER_OK;
}

/* LRN across channels: x / (bias + alpha / size * sum of squares)^beta, the
 * sum over channels [c - floor((size-1)/2), c + ceil((size-1)/2)]. The sum
 * slides along the channels (one square enters, one leaves per step), so
 * the work is O(N * C * plane) whatever size is: a window wider than the
 * channels covers them all, which is what a size of 2^31-1 does. */
minfer_status cpu_compute_lrn(const cpu_exec *e) {
    const norm2_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x || x->rank < 2)
        return cpu_fail(e, MINFER_ERR_SHAPE, "X must have rank >= 2");
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    int64_t N = x->dims[0], C = x->dims[1], lo = (st->size - 1) / 2, hi = st->size - 1 - lo;
    size_t plane = (size_t)minfer_kit_numel(x->rank - 2, x->dims + 2);
    const void *xd = cpu_data(x);
    double scale = st->alpha / (double)st->size;
#define SQ(k) (cpu_get(xd, x->dtype, (size_t)(n * C + (k)) * plane + i) * \
               cpu_get(xd, x->dtype, (size_t)(n * C + (k)) * plane + i))
    for (int64_t n = 0; n < N; n++)
        for (size_t i = 0; i < plane; i++) {
            /* the window of channel 0: [-lo, hi] clipped to [0, C) */
            double sq = 0;
            for (int64_t k = 0; k < C && k <= hi; k++)
                sq += SQ(k);
            for (int64_t c = 0; c < C; c++) {
                size_t at = (size_t)(n * C + c) * plane + i;
                /* squares are >= 0: a rounding below 0 after a subtraction is 0 */
                double sum = sq > 0 ? sq : 0;
                cpu_set(y, x->dtype, at,
                        cpu_get(xd, x->dtype, at) / pow(st->bias + scale * sum, st->beta));
                /* slide to channel c + 1: c - lo leaves, c + 1 + hi enters */
                if (c - lo >= 0)
                    sq -= SQ(c - lo);
                if (c + 1 + hi < C)
                    sq += SQ(c + 1 + hi);
            }
        }
#undef SQ
    return MINFER_OK;
}
