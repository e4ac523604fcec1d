/*
 * Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
 * ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
 *
 * Axes come from the 'axes' attribute, or from input 1 from opset 13
 * (ReduceSum) or 18 (the others). Each output element is one work item: it
 * walks its reduced elements with an odometer over the reduced dims, the
 * last one in an inner loop. Floating types accumulate in double; integer
 * sums and products wrap in uint64_t; integer ReduceMean truncates.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQUARE };

static const struct {
    const char *name;
    int op;
} reduce_ops[] = {
    {"ReduceSum", R_SUM},       {"ReduceMean", R_MEAN},           {"ReduceMax", R_MAX},
    {"ReduceMin", R_MIN},       {"ReduceProd", R_PROD},           {"ReduceL1", R_L1},
    {"ReduceL2", R_L2},         {"ReduceLogSum", R_LOGSUM},       {"ReduceLogSumExp", R_LOGSUMEXP},
    {"ReduceSumSquare", R_SUMSQUARE},
};

typedef struct reduce_state {
    int op;
    int keepdims;
    int noop_with_empty_axes;
    int axes_input; /* axes come from input 1 */
    size_t n_axes;
    int64_t axes[CPU_MAX_RANK];
} reduce_state;

minfer_status cpu_prepare_reduce(cpu_prep *p) {
    int op = -1;
    for (size_t i = 0; i < sizeof reduce_ops / sizeof reduce_ops[0]; i++)
        if (strcmp(reduce_ops[i].name, p->node->op_type) == 0)
            op = reduce_ops[i].op;
    if (op < 0)
        return cpu_decline(p, "not a reduction");
    if (!minfer_kit_input(p->node, 0))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs input data");
    reduce_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->op = op;
    st->keepdims = cpu_attr_int(p, "keepdims", 1) != 0;
    st->noop_with_empty_axes = cpu_attr_int(p, "noop_with_empty_axes", 0) != 0;
    st->axes_input = p->since >= 13;
    if (!st->axes_input && cpu_attr_ints(p, "axes", st->axes, CPU_MAX_RANK, &st->n_axes) < 0)
        return MINFER_ERR_UNSUPPORTED;
    return MINFER_OK;
}

typedef struct reduce_job {
    int op;
    int32_t dtype;
    const void *x;
    void *y;
    int nk, nr;
    int64_t kdims[CPU_MAX_RANK], kstr[CPU_MAX_RANK], rdims[CPU_MAX_RANK], rstr[CPU_MAX_RANK];
    size_t count; /* elements per output */
} reduce_job;

/* Runs BODY with v bound to every reduced element of output element o. */
#define TRAVERSE(T, BODY)                                                                  \
    do {                                                                                   \
        size_t off = 0, r = o;                                                             \
        for (int d = j->nk - 1; d >= 0; d--) {                                             \
            off += (r % (size_t)j->kdims[d]) * (size_t)j->kstr[d];                         \
            r /= (size_t)j->kdims[d];                                                      \
        }                                                                                  \
        if (j->count == 0)                                                                 \
            break;                                                                         \
        const T *base = (const T *)j->x + off;                                             \
        size_t inner = (size_t)j->rdims[j->nr - 1], istr = (size_t)j->rstr[j->nr - 1];     \
        size_t ridx[CPU_MAX_RANK] = {0}, roff = 0;                                         \
        for (size_t ro = 0; ro < j->count / inner; ro++) {                                 \
            const T *pp = base + roff;                                                     \
            for (size_t i = 0; i < inner; i++) {                                           \
                T v = pp[i * istr];                                                        \
                BODY;                                                                      \
            }                                                                              \
            for (int d = j->nr - 2; d >= 0; d--) {                                         \
                ridx[d]++;                                                                 \
                roff += (size_t)j->rstr[d];                                                \
                if (ridx[d] < (size_t)j->rdims[d])                                         \
                    break;                                                                 \
                roff -= (size_t)j->rstr[d] * (size_t)j->rdims[d];                          \
                ridx[d] = 0;                                                               \
            }                                                                              \
        }                                                                                  \
    } while (0)

/* Floating types: everything in double. */
#define REDUCE_FLOAT(E, T, S)                                                              \
    static void reduce_##S(const reduce_job *j, size_t b, size_t e) {                      \
        T *y = j->y;                                                                       \
        for (size_t o = b; o < e; o++) {                                                   \
            double acc = 0, m = 0;                                                         \
            int have = 0;                                                                  \
            switch (j->op) {                                                               \
            case R_SUM:                                                                    \
            case R_MEAN:                                                                   \
            case R_LOGSUM: TRAVERSE(T, acc += v); break;                                   \
            case R_L1: TRAVERSE(T, acc += fabs((double)v)); break;                         \
            case R_L2:                                                                     \
            case R_SUMSQUARE: TRAVERSE(T, acc += (double)v * v); break;                    \
            case R_PROD: acc = 1; TRAVERSE(T, acc *= v); break;                            \
            case R_MAX:                                                                    \
                acc = -INFINITY;                                                           \
                TRAVERSE(T, if (v > acc || v != v) acc = v);                               \
                break;                                                                     \
            case R_MIN:                                                                    \
                acc = INFINITY;                                                            \
                TRAVERSE(T, if (v < acc || v != v) acc = v);                               \
                break;                                                                     \
            case R_LOGSUMEXP:                                                              \
                m = -INFINITY;                                                             \
                TRAVERSE(T, if (!have || v > m) m = v; have = 1);                          \
                if (isfinite(m))                                                           \
                    TRAVERSE(T, acc += exp((double)v - m));                                \
                else                                                                       \
                    acc = 1; /* all -inf (log of 0), or an infinity / NaN dominates */     \
                acc = m + log(acc);                                                        \
                break;                                                                     \
            }                                                                              \
            if (j->op == R_MEAN)                                                           \
                acc = j->count ? acc / (double)j->count : NAN;                             \
            else if (j->op == R_L2)                                                        \
                acc = sqrt(acc);                                                           \
            else if (j->op == R_LOGSUM)                                                    \
                acc = log(acc);                                                            \
            y[o] = (T)acc;                                                                 \
        }                                                                                  \
    }
CPU_FLOAT_TYPES(REDUCE_FLOAT)

/* Integer types: exact wrapping sums and products; the log/sqrt ones go
 * through double, and are truncated back. */
#define REDUCE_INT(E, T, S, SIGNED, LOWEST, HIGHEST)                                               \
    static void reduce_##S(const reduce_job *j, size_t b, size_t e) {                      \
        T *y = j->y;                                                                       \
        for (size_t o = b; o < e; o++) {                                                   \
            uint64_t acc = 0;                                                              \
            double d = 0;                                                                  \
            T m;                                                                           \
            switch (j->op) {                                                               \
            case R_SUM: TRAVERSE(T, acc += (uint64_t)v); y[o] = (T)acc; break;             \
            case R_MEAN:                                                                   \
                TRAVERSE(T, acc += (uint64_t)v);                                           \
                y[o] = !j->count ? (T)0                                                    \
                       : SIGNED ? (T)((int64_t)acc / (int64_t)j->count)               \
                                : (T)(acc / j->count);                                \
                break;                                                                     \
            case R_PROD: acc = 1; TRAVERSE(T, acc *= (uint64_t)v); y[o] = (T)acc; break;   \
            case R_L1:                                                                     \
                TRAVERSE(T, acc += (uint64_t)(v > 0 ? (uint64_t)v : 0 - (uint64_t)v));     \
                y[o] = (T)acc;                                                             \
                break;                                                                     \
            case R_SUMSQUARE: TRAVERSE(T, acc += (uint64_t)v * (uint64_t)v); y[o] = (T)acc; break; \
            case R_MAX: m = LOWEST; TRAVERSE(T, if (v > m) m = v); y[o] = m; break;        \
            case R_MIN: m = HIGHEST; TRAVERSE(T, if (v < m) m = v); y[o] = m; break;       \
            case R_L2: TRAVERSE(T, d += (double)v * (double)v); y[o] = (T)sqrt(d); break;  \
            case R_LOGSUM: TRAVERSE(T, d += (double)v); y[o] = (T)log(d); break;           \
            case R_LOGSUMEXP: TRAVERSE(T, d += exp((double)v)); y[o] = (T)log(d); break;   \
            }                                                                              \
        }                                                                                  \
    }
REDUCE_INT(MINFER_DTYPE_INT8, int8_t, i8, 1, INT8_MIN, INT8_MAX)
REDUCE_INT(MINFER_DTYPE_INT16, int16_t, i16, 1, INT16_MIN, INT16_MAX)
REDUCE_INT(MINFER_DTYPE_INT32, int32_t, i32, 1, INT32_MIN, INT32_MAX)
REDUCE_INT(MINFER_DTYPE_INT64, int64_t, i64, 1, INT64_MIN, INT64_MAX)
REDUCE_INT(MINFER_DTYPE_UINT8, uint8_t, u8, 0, 0, UINT8_MAX)
REDUCE_INT(MINFER_DTYPE_UINT16, uint16_t, u16, 0, 0, UINT16_MAX)
REDUCE_INT(MINFER_DTYPE_UINT32, uint32_t, u32, 0, 0, UINT32_MAX)
REDUCE_INT(MINFER_DTYPE_UINT64, uint64_t, u64, 0, 0, UINT64_MAX)

static void reduce_range(void *arg, size_t b, size_t e) {
    const reduce_job *j = arg;
    switch (j->dtype) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        reduce_##S(j, b, e);                                                               \
        break;
        CPU_NUM_TYPES(CASE)
#undef CASE
    }
}

minfer_status cpu_compute_reduce(const cpu_exec *e) {
    const reduce_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *ax = cpu_input(e, 1);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (!(CPU_T(x->dtype) & CPU_T_NUM))
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    int64_t axes[CPU_MAX_RANK];
    size_t n_axes = st->n_axes;
    memcpy(axes, st->axes, sizeof axes);
    if (st->axes_input && ax) {
        minfer_status s = cpu_read_ints(e, ax, "axes", axes, CPU_MAX_RANK, &n_axes);
        if (s)
            return s;
    }
    void *y;
    if (n_axes == 0 && st->noop_with_empty_axes) {
        minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
        if (!s && y)
            memcpy(y, cpu_data(x),
                   (size_t)minfer_kit_numel(x->rank, x->dims) * minfer_elem_size(x->dtype));
        return s;
    }
    int reduced[CPU_MAX_RANK] = {0};
    for (size_t i = 0; i < n_axes; i++) {
        int a = minfer_kit_axis(axes[i], x->rank);
        if (a < 0 || reduced[a])
            return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range or repeated",
                            (long long)axes[i]);
        reduced[a] = 1;
    }
    if (n_axes == 0)
        for (int d = 0; d < x->rank; d++)
            reduced[d] = 1;
    reduce_job j;
    memset(&j, 0, sizeof j);
    j.op = st->op;
    j.dtype = x->dtype;
    j.x = cpu_data(x);
    j.count = 1;
    int64_t od[CPU_MAX_RANK], stride = 1, str[CPU_MAX_RANK];
    int orank = 0;
    for (int d = x->rank - 1; d >= 0; d--) {
        str[d] = stride;
        stride *= x->dims[d];
    }
    for (int d = 0; d < x->rank; d++) {
        if (reduced[d]) {
            j.rdims[j.nr] = x->dims[d];
            j.rstr[j.nr++] = str[d];
            j.count *= (size_t)x->dims[d];
            if (st->keepdims)
                od[orank++] = 1;
        } else {
            j.kdims[j.nk] = x->dims[d];
            j.kstr[j.nk++] = str[d];
            od[orank++] = x->dims[d];
        }
    }
    if (j.nr == 0) {
        j.rdims[0] = 1;
        j.rstr[0] = 0;
        j.nr = 1;
    }
    minfer_status s = cpu_output(e, 0, x->dtype, orank, od, &y);
    if (s)
        return s;
    j.y = y;
    size_t nout = (size_t)minfer_kit_numel(j.nk, j.kdims);
    cpu_parallel(e->ctx, nout, (16384 + j.count) / (j.count + 1), reduce_range, &j);
    return MINFER_OK;
}

/* ---- ArgMax, ArgMin --------------------------------------------------------- */

typedef struct arg_state {
    int is_max;
    int keepdims;
    int select_last; /* select_last_index (opset 12) */
    int64_t axis;
} arg_state;

minfer_status cpu_prepare_argminmax(cpu_prep *p) {
    if (!minfer_kit_input(p->node, 0))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs input data");
    arg_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->is_max = strcmp(p->node->op_type, "ArgMax") == 0;
    st->keepdims = cpu_attr_int(p, "keepdims", 1) != 0;
    st->select_last = cpu_attr_int(p, "select_last_index", 0) != 0;
    st->axis = cpu_attr_int(p, "axis", 0);
    return MINFER_OK;
}

typedef struct arg_job {
    const arg_state *st;
    int32_t dtype;
    size_t len, inner;
    const void *x;
    int64_t *y;
} arg_job;

/* Whether v (converted) is NaN; through a function so that the integer
 * instantiations are not self-comparisons. */
static inline int is_nan(double v) {
    return v != v;
}

/* The first (or last) index of the extreme value. NaN is the extreme of
 * both, as in numpy's argmax and argmin and in ReduceMax/ReduceMin, which
 * propagate it: the first NaN, or the last with select_last_index
 * (docs/operators.md, "NaN and ordering"). */
#define ARG(E, T, S)                                                                       \
    static void arg_##S(const arg_job *j, size_t b, size_t e) {                            \
        for (size_t it = b; it < e; it++) {                                                \
            size_t o = it / j->inner, in = it % j->inner;                                  \
            const T *x = (const T *)j->x + o * j->len * j->inner + in;                     \
            T best = x[0];                                                                 \
            size_t bi = 0;                                                                 \
            for (size_t i = 1; i < j->len; i++) {                                          \
                T v = x[i * j->inner];                                                     \
                int better = is_nan((double)best) ? j->st->select_last && is_nan((double)v) \
                             : is_nan((double)v)  ? 1                                       \
                             : j->st->is_max ? (j->st->select_last ? v >= best : v > best)  \
                                             : (j->st->select_last ? v <= best : v < best); \
                if (better) {                                                              \
                    best = v;                                                              \
                    bi = i;                                                                \
                }                                                                          \
            }                                                                              \
            j->y[it] = (int64_t)bi;                                                        \
        }                                                                                  \
    }
CPU_NUM_TYPES(ARG)

static void arg_range(void *arg, size_t b, size_t e) {
    const arg_job *j = arg;
    switch (j->dtype) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        arg_##S(j, b, e);                                                                  \
        break;
        CPU_NUM_TYPES(CASE)
#undef CASE
    }
}

minfer_status cpu_compute_argminmax(const cpu_exec *e) {
    const arg_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (!(CPU_T(x->dtype) & CPU_T_NUM))
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range", (long long)st->axis);
    if (x->dims[axis] == 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "cannot take the arg-extreme of an empty axis");
    int64_t od[CPU_MAX_RANK];
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != axis)
            od[r++] = x->dims[d];
        else if (st->keepdims)
            od[r++] = 1;
    void *y;
    minfer_status s = cpu_output(e, 0, MINFER_DTYPE_INT64, r, od, &y);
    if (s)
        return s;
    arg_job j = {st, x->dtype, (size_t)x->dims[axis],
                 (size_t)minfer_kit_numel(x->rank - axis - 1, x->dims + axis + 1), cpu_data(x), y};
    size_t outer = (size_t)minfer_kit_numel(axis, x->dims);
    cpu_parallel(e->ctx, outer * j.inner, (16384 + j.len - 1) / j.len, arg_range, &j);
    return MINFER_OK;
}
