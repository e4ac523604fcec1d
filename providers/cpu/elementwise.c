/*
 * Elementwise kernels: unary math, Clip, Not, binary arithmetic, comparison
 * and logic with numpy multidirectional broadcasting, the variadic
 * Max/Min/Sum/Mean, and Where.
 *
 * Typed loops are generated once per type list (cpu.h's CPU_*_TYPES); each
 * typed function switches on the op outside its loop. Integer arithmetic
 * wraps through uint64_t rather than relying on signed overflow, and integer
 * division by zero is reported, not trapped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <tgmath.h>

#include "cpu.h"

/* ---- Unary -------------------------------------------------------------- */

enum {
    U_ABS, U_ACOS, U_ASIN, U_ATAN, U_CEIL, U_COS, U_ELU, U_ERF, U_EXP, U_FLOOR,
    U_HARDSIGMOID, U_HARDSWISH, U_LEAKYRELU, U_LOG, U_NEG, U_RECIP, U_RELU, U_ROUND,
    U_SELU, U_SIGMOID, U_SIGN, U_SIN, U_SOFTPLUS, U_SOFTSIGN, U_SQRT, U_TAN, U_TANH,
    U_SINH, U_COSH, U_ASINH, U_ACOSH, U_ATANH, U_THRESHOLDEDRELU
};

static const struct {
    const char *name;
    int op;
    float alpha, beta, gamma; /* attribute defaults */
} unary_ops[] = {
    {"Abs", U_ABS, 0, 0, 0},
    {"Acos", U_ACOS, 0, 0, 0},
    {"Asin", U_ASIN, 0, 0, 0},
    {"Atan", U_ATAN, 0, 0, 0},
    {"Ceil", U_CEIL, 0, 0, 0},
    {"Cos", U_COS, 0, 0, 0},
    {"Elu", U_ELU, 1.0f, 0, 0},
    {"Erf", U_ERF, 0, 0, 0},
    {"Exp", U_EXP, 0, 0, 0},
    {"Floor", U_FLOOR, 0, 0, 0},
    {"HardSigmoid", U_HARDSIGMOID, 0.2f, 0.5f, 0},
    {"HardSwish", U_HARDSWISH, 1.0f / 6.0f, 0.5f, 0},
    {"LeakyRelu", U_LEAKYRELU, 0.01f, 0, 0},
    {"Log", U_LOG, 0, 0, 0},
    {"Neg", U_NEG, 0, 0, 0},
    {"Reciprocal", U_RECIP, 0, 0, 0},
    {"Relu", U_RELU, 0, 0, 0},
    {"Round", U_ROUND, 0, 0, 0},
    {"Selu", U_SELU, 1.67326319217681884765625f, 0, 1.05070102214813232421875f},
    {"Sigmoid", U_SIGMOID, 0, 0, 0},
    {"Sign", U_SIGN, 0, 0, 0},
    {"Sin", U_SIN, 0, 0, 0},
    {"Softplus", U_SOFTPLUS, 0, 0, 0},
    {"Softsign", U_SOFTSIGN, 0, 0, 0},
    {"Sqrt", U_SQRT, 0, 0, 0},
    {"Tan", U_TAN, 0, 0, 0},
    {"Tanh", U_TANH, 0, 0, 0},
    {"Sinh", U_SINH, 0, 0, 0},
    {"Cosh", U_COSH, 0, 0, 0},
    {"Asinh", U_ASINH, 0, 0, 0},
    {"Acosh", U_ACOSH, 0, 0, 0},
    {"Atanh", U_ATANH, 0, 0, 0},
    {"ThresholdedRelu", U_THRESHOLDEDRELU, 1.0f, 0, 0},
};

typedef struct unary_state {
    int op;
    float alpha, beta, gamma;
} unary_state;

minfer_status cpu_prepare_unary(cpu_prep *p) {
    size_t i, n = sizeof unary_ops / sizeof unary_ops[0];
    for (i = 0; i < n; i++)
        if (strcmp(unary_ops[i].name, p->node->op_type) == 0)
            break;
    if (i == n)
        return cpu_decline(p, "not a unary op");
    if (p->node->n_inputs != 1 || !minfer_kit_input(p->node, 0) || p->node->n_outputs != 1)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "expects one input and one output");
    unary_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->op = unary_ops[i].op;
    st->alpha = cpu_attr_float(p, "alpha", unary_ops[i].alpha);
    st->beta = cpu_attr_float(p, "beta", unary_ops[i].beta);
    st->gamma = cpu_attr_float(p, "gamma", unary_ops[i].gamma);
    return MINFER_OK;
}

#define MAP(expr)                                                                          \
    for (size_t i = 0; i < n; i++) {                                                       \
        elem v = x[i];                                                                           \
        y[i] = (elem)(expr);                                                                  \
    }                                                                                      \
    break

#define UNARY_FLOAT(E, T, S)                                                               \
    static int unary_##S(const unary_state *st, const T *x, T *y, size_t n) { \
        typedef T elem;              \
        const T alpha = (T)st->alpha, beta = (T)st->beta, gamma = (T)st->gamma;           \
        switch (st->op) {                                                                  \
        case U_ABS: MAP(fabs(v));                                                          \
        case U_ACOS: MAP(acos(v));                                                         \
        case U_ASIN: MAP(asin(v));                                                         \
        case U_ATAN: MAP(atan(v));                                                         \
        case U_CEIL: MAP(ceil(v));                                                         \
        case U_COS: MAP(cos(v));                                                           \
        case U_ELU: MAP(v < 0 ? alpha * (exp(v) - 1) : v);                                 \
        case U_ERF: MAP(erf(v));                                                           \
        case U_EXP: MAP(exp(v));                                                           \
        case U_FLOOR: MAP(floor(v));                                                       \
        case U_HARDSIGMOID: MAP(fmax((T)0, fmin((T)1, alpha * v + beta)));                 \
        case U_HARDSWISH: MAP(v * fmax((T)0, fmin((T)1, alpha * v + beta)));               \
        case U_LEAKYRELU: MAP(v < 0 ? alpha * v : v);                                      \
        case U_LOG: MAP(log(v));                                                           \
        case U_NEG: MAP(-v);                                                               \
        case U_RECIP: MAP((T)1 / v);                                                       \
        case U_RELU: MAP(v > 0 ? v : (T)0);                                                \
        case U_ROUND: MAP(nearbyint(v)); /* halves to even, as ONNX asks */               \
        case U_SELU: MAP(v > 0 ? gamma * v : gamma * (alpha * exp(v) - alpha));            \
        case U_SIGMOID: MAP(v >= 0 ? 1 / (1 + exp(-v)) : exp(v) / (1 + exp(v)));            \
        case U_SIGN: MAP(v > 0 ? (T)1 : v < 0 ? (T)-1 : v);                                \
        case U_SIN: MAP(sin(v));                                                           \
        case U_SOFTPLUS: MAP(v > 0 ? v + log1p(exp(-v)) : log1p(exp(v)));                  \
        case U_SOFTSIGN: MAP(v / (1 + fabs(v)));                                           \
        case U_SQRT: MAP(sqrt(v));                                                         \
        case U_TAN: MAP(tan(v));                                                           \
        case U_TANH: MAP(tanh(v));                                                         \
        case U_SINH: MAP(sinh(v));                                                         \
        case U_COSH: MAP(cosh(v));                                                         \
        case U_ASINH: MAP(asinh(v));                                                       \
        case U_ACOSH: MAP(acosh(v));                                                       \
        case U_ATANH: MAP(atanh(v));                                                       \
        case U_THRESHOLDEDRELU: MAP(v > alpha ? v : (T)0);                                 \
        default: return -1;                                                                \
        }                                                                                  \
        return 0;                                                                          \
    }
CPU_FLOAT_TYPES(UNARY_FLOAT)

#define UNARY_SINT(E, T, S)                                                                \
    static int unary_##S(const unary_state *st, const T *x, T *y, size_t n) { \
        typedef T elem;              \
        switch (st->op) {                                                                  \
        case U_ABS: MAP(v < 0 ? (T)(0 - (uint64_t)v) : v);                                 \
        case U_NEG: MAP((T)(0 - (uint64_t)v));                                             \
        case U_RELU: MAP(v > 0 ? v : 0);                                                   \
        case U_SIGN: MAP(v > 0 ? 1 : v < 0 ? -1 : 0);                                      \
        default: return -1;                                                                \
        }                                                                                  \
        return 0;                                                                          \
    }
CPU_SINT_TYPES(UNARY_SINT)

#define UNARY_UINT(E, T, S)                                                                \
    static int unary_##S(const unary_state *st, const T *x, T *y, size_t n) { \
        typedef T elem;              \
        switch (st->op) {                                                                  \
        case U_ABS: MAP(v);                                                                \
        case U_RELU: MAP(v);                                                               \
        case U_SIGN: MAP(v > 0 ? 1 : 0);                                                   \
        default: return -1;                                                                \
        }                                                                                  \
        return 0;                                                                          \
    }
CPU_UINT_TYPES(UNARY_UINT)

typedef struct unary_job {
    const unary_state *st;
    int32_t dtype;
    const void *x;
    void *y;
    int bad; /* set when the (op, type) pair has no loop */
} unary_job;

static void unary_range(void *arg, size_t b, size_t e) {
    unary_job *j = arg;
    int rc = -1;
    switch (j->dtype) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        rc = unary_##S(j->st, (const T *)j->x + b, (T *)j->y + b, e - b);                  \
        break;
        CPU_NUM_TYPES(CASE)
#undef CASE
    }
    if (rc)
        j->bad = 1;
}

minfer_status cpu_compute_unary(const cpu_exec *e) {
    const minfer_tensor_view *x = cpu_input(e, 0);
    void *y;
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    minfer_status st = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (st)
        return st;
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    unary_job j = {e->state, x->dtype, cpu_data(x), y, 0};
    cpu_parallel(e->ctx, n, 16384, unary_range, &j);
    if (j.bad)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    return MINFER_OK;
}

/* ---- Not ------------------------------------------------------------------ */

minfer_status cpu_prepare_not(cpu_prep *p) {
    (void)p;
    return MINFER_OK;
}

minfer_status cpu_compute_not(const cpu_exec *e) {
    const minfer_tensor_view *x = cpu_input(e, 0);
    uint8_t *y;
    if (!x || x->dtype != MINFER_DTYPE_BOOL)
        return cpu_fail(e, MINFER_ERR_TYPE, "input must be bool");
    minfer_status st = cpu_output(e, 0, MINFER_DTYPE_BOOL, x->rank, x->dims, (void **)&y);
    if (st)
        return st;
    const uint8_t *xd = cpu_data(x);
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    for (size_t i = 0; i < n; i++)
        y[i] = !xd[i];
    return MINFER_OK;
}

/* ---- Clip ----------------------------------------------------------------- */

typedef struct clip_state {
    int from_inputs; /* opset >= 11: min and max are optional inputs */
    float lo, hi;    /* attributes before opset 11 */
} clip_state;

minfer_status cpu_prepare_clip(cpu_prep *p) {
    clip_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->from_inputs = p->since >= 11;
    st->lo = cpu_attr_float(p, "min", -INFINITY);
    st->hi = cpu_attr_float(p, "max", INFINITY);
    for (size_t i = 1; i < p->node->n_inputs && st->from_inputs; i++) {
        const minfer_value_desc *d = minfer_kit_input(p->node, i);
        if (d && d->dtype != p->node->inputs[0].dtype)
            return cpu_decline(p, "min/max type differs from the input's");
    }
    return MINFER_OK;
}

/* Min is applied first, then max, so min > max gives max (as ONNX Runtime). */
#define CLIP(E, T, S)                                                                      \
    static void clip_##S(const T *x, T *y, size_t n, const void *lo_, const void *hi_) {   \
        for (size_t i = 0; i < n; i++) {                                                   \
            T v = x[i];                                                                    \
            if (lo_ && v < *(const T *)lo_)                                                \
                v = *(const T *)lo_;                                                       \
            if (hi_ && v > *(const T *)hi_)                                                \
                v = *(const T *)hi_;                                                       \
            y[i] = v;                                                                      \
        }                                                                                  \
    }
CPU_NUM_TYPES(CLIP)

typedef struct clip_job {
    int32_t dtype;
    const void *x, *lo, *hi;
    void *y;
} clip_job;

static void clip_range(void *arg, size_t b, size_t e) {
    clip_job *j = arg;
    switch (j->dtype) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        clip_##S((const T *)j->x + b, (T *)j->y + b, e - b, j->lo, j->hi);                 \
        break;
        CPU_NUM_TYPES(CASE)
#undef CASE
    }
}

minfer_status cpu_compute_clip(const cpu_exec *e) {
    const clip_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    void *y;
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    clip_job j = {x->dtype, cpu_data(x), NULL, NULL, y};
    float lo_f = st->lo, hi_f = st->hi;
    double lo_d = st->lo, hi_d = st->hi;
    if (st->from_inputs) {
        const minfer_tensor_view *lo = cpu_input(e, 1), *hi = cpu_input(e, 2);
        if (lo && lo->data) {
            if (lo->dtype != x->dtype || minfer_kit_numel(lo->rank, lo->dims) != 1)
                return cpu_fail(e, MINFER_ERR_SHAPE, "min must be a scalar of the input type");
            j.lo = cpu_data(lo);
        }
        if (hi && hi->data) {
            if (hi->dtype != x->dtype || minfer_kit_numel(hi->rank, hi->dims) != 1)
                return cpu_fail(e, MINFER_ERR_SHAPE, "max must be a scalar of the input type");
            j.hi = cpu_data(hi);
        }
    } else if (x->dtype == MINFER_DTYPE_FLOAT) {
        j.lo = &lo_f;
        j.hi = &hi_f;
    } else if (x->dtype == MINFER_DTYPE_DOUBLE) {
        j.lo = &lo_d;
        j.hi = &hi_d;
    } else {
        return cpu_fail(e, MINFER_ERR_TYPE, "Clip before opset 11 takes float or double");
    }
    cpu_parallel(e->ctx, (size_t)minfer_kit_numel(x->rank, x->dims), 16384, clip_range, &j);
    return MINFER_OK;
}

/* ---- Binary ----------------------------------------------------------------- */

enum {
    B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_PRELU, B_MIN, B_MAX, /* result of the input type */
    B_EQ, B_LT, B_GT, B_LE, B_GE,                             /* result bool */
    B_AND, B_OR, B_XOR                                        /* bool -> bool */
};

static const struct {
    const char *name;
    int op;
} binary_ops[] = {
    {"Add", B_ADD}, {"Sub", B_SUB}, {"Mul", B_MUL}, {"Div", B_DIV},
    {"Pow", B_POW}, {"PRelu", B_PRELU}, {"Min", B_MIN}, {"Max", B_MAX},
    {"Sum", B_ADD}, {"Mean", B_ADD}, {"Equal", B_EQ}, {"Less", B_LT},
    {"Greater", B_GT}, {"LessOrEqual", B_LE}, {"GreaterOrEqual", B_GE}, {"And", B_AND},
    {"Or", B_OR}, {"Xor", B_XOR},
};

typedef struct binary_state {
    int op;
    int legacy;           /* opset < 7: broadcast/axis attributes */
    int legacy_broadcast; /* 'broadcast' attribute */
    int64_t legacy_axis;  /* 'axis', or INT64_MIN when absent */
    int mean;             /* Mean: divide the sum by the input count */
} binary_state;

static int binary_op(const char *name) {
    for (size_t i = 0; i < sizeof binary_ops / sizeof binary_ops[0]; i++)
        if (strcmp(binary_ops[i].name, name) == 0)
            return binary_ops[i].op;
    return -1;
}

minfer_status cpu_prepare_binary(cpu_prep *p) {
    int op = binary_op(p->node->op_type);
    if (op < 0)
        return cpu_decline(p, "not a binary op");
    if (p->node->n_inputs != 2 || !minfer_kit_input(p->node, 0) || !minfer_kit_input(p->node, 1))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "expects two inputs");
    int32_t ta = p->node->inputs[0].dtype, tb = p->node->inputs[1].dtype;
    if (op == B_POW) {
        uint32_t ok = CPU_T_FLOATS | CPU_T_INTS;
        if (tb && !(CPU_T(tb) & ok))
            return cpu_decline(p, "exponent type %s not supported", minfer_elem_name(tb));
    } else if (ta && tb && ta != tb) {
        return cpu_decline(p, "input types differ (%d, %d)", (int)ta, (int)tb);
    }
    binary_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->op = op;
    st->legacy = p->since < 7;
    st->legacy_broadcast = (int)cpu_attr_int(p, "broadcast", 0);
    st->legacy_axis = cpu_attr_int(p, "axis", INT64_MIN);
    if (op == B_PRELU && st->legacy) {
        /* PRelu before 7: a 1-D slope is per channel (axis 1). */
        st->legacy_broadcast = 1;
        st->legacy_axis = 1;
    }
    return MINFER_OK;
}

/* Three variants per expression: both inputs advance, only a, only b. The
 * fourth (both scalars) only happens for one-element outputs. */
#define LOOP2(OT, expr)                                                                    \
    if (sa && sb) {                                                                        \
        for (size_t i = 0; i < n; i++) {                                                   \
            elem x = a[i], y = b[i];                                                          \
            o[i] = (OT)(expr);                                                             \
        }                                                                                  \
    } else if (sa) {                                                                       \
        elem y = b[0];                                                                        \
        for (size_t i = 0; i < n; i++) {                                                   \
            elem x = a[i];                                                                    \
            o[i] = (OT)(expr);                                                             \
        }                                                                                  \
    } else if (sb) {                                                                       \
        elem x = a[0];                                                                        \
        for (size_t i = 0; i < n; i++) {                                                   \
            elem y = b[i];                                                                    \
            o[i] = (OT)(expr);                                                             \
        }                                                                                  \
    } else {                                                                               \
        elem x = a[0], y = b[0];                                                              \
        for (size_t i = 0; i < n; i++)                                                     \
            o[i] = (OT)(expr);                                                             \
    }                                                                                      \
    break

/* Comparisons: the same for every numeric type. */
#define CMP_CASES                                                                          \
    case B_EQ: LOOP2(uint8_t, x == y);                                                     \
    case B_LT: LOOP2(uint8_t, x < y);                                                      \
    case B_GT: LOOP2(uint8_t, x > y);                                                      \
    case B_LE: LOOP2(uint8_t, x <= y);                                                     \
    case B_GE: LOOP2(uint8_t, x >= y);

#define BIN_FLOAT(E, T, S)                                                                 \
    static void arith_##S(int op, T *o, const T *a, const T *b, size_t n, size_t sa,        \
                          size_t sb) { \
        typedef T elem;                                                     \
        switch (op) {                                                                      \
        case B_ADD: LOOP2(T, x + y);                                                       \
        case B_SUB: LOOP2(T, x - y);                                                       \
        case B_MUL: LOOP2(T, x * y);                                                       \
        case B_DIV: LOOP2(T, x / y);                                                       \
        case B_POW: LOOP2(T, pow(x, y));                                                   \
        case B_PRELU: LOOP2(T, x < 0 ? x * y : x);                                         \
        case B_MIN: LOOP2(T, (x != x || x < y) ? x : y); /* NaN propagates */             \
        case B_MAX: LOOP2(T, (x != x || x > y) ? x : y);                                   \
        }                                                                                  \
    }                                                                                      \
    static void cmp_##S(int op, uint8_t *o, const T *a, const T *b, size_t n, size_t sa,    \
                        size_t sb) { \
        typedef T elem;                                                       \
        switch (op) { CMP_CASES }                                                          \
    }
CPU_FLOAT_TYPES(BIN_FLOAT)

/* Division by zero was ruled out before the loop; INT_MIN / -1 wraps. */
#define BIN_SINT(E, T, S)                                                                  \
    static void arith_##S(int op, T *o, const T *a, const T *b, size_t n, size_t sa,        \
                          size_t sb) { \
        typedef T elem;                                                     \
        switch (op) {                                                                      \
        case B_ADD: LOOP2(T, (uint64_t)x + (uint64_t)y);                                   \
        case B_SUB: LOOP2(T, (uint64_t)x - (uint64_t)y);                                   \
        case B_MUL: LOOP2(T, (uint64_t)x * (uint64_t)y);                                   \
        case B_DIV: LOOP2(T, y == -1 ? (T)(0 - (uint64_t)x) : (T)(x / y));                 \
        case B_PRELU: LOOP2(T, x < 0 ? (T)((uint64_t)x * (uint64_t)y) : x);                \
        case B_MIN: LOOP2(T, x < y ? x : y);                                               \
        case B_MAX: LOOP2(T, x > y ? x : y);                                               \
        }                                                                                  \
    }                                                                                      \
    static void cmp_##S(int op, uint8_t *o, const T *a, const T *b, size_t n, size_t sa,    \
                        size_t sb) { \
        typedef T elem;                                                       \
        switch (op) { CMP_CASES }                                                          \
    }
CPU_SINT_TYPES(BIN_SINT)

#define BIN_UINT(E, T, S)                                                                  \
    static void arith_##S(int op, T *o, const T *a, const T *b, size_t n, size_t sa,        \
                          size_t sb) { \
        typedef T elem;                                                     \
        switch (op) {                                                                      \
        case B_ADD: LOOP2(T, (uint64_t)x + (uint64_t)y);                                   \
        case B_SUB: LOOP2(T, (uint64_t)x - (uint64_t)y);                                   \
        case B_MUL: LOOP2(T, (uint64_t)x * (uint64_t)y);                                   \
        case B_DIV: LOOP2(T, x / y);                                                       \
        case B_PRELU: LOOP2(T, ((void)y, x));                                              \
        case B_MIN: LOOP2(T, x < y ? x : y);                                               \
        case B_MAX: LOOP2(T, x > y ? x : y);                                               \
        }                                                                                  \
    }                                                                                      \
    static void cmp_##S(int op, uint8_t *o, const T *a, const T *b, size_t n, size_t sa,    \
                        size_t sb) { \
        typedef T elem;                                                       \
        switch (op) { CMP_CASES }                                                          \
    }
CPU_UINT_TYPES(BIN_UINT)

/* Booleans: logic, and Equal. */
static void logic_bool(int op, uint8_t *o, const uint8_t *a, const uint8_t *b, size_t n,
                       size_t sa, size_t sb) {
    typedef uint8_t elem;
    switch (op) {
    case B_AND: LOOP2(uint8_t, (x != 0) & (y != 0));
    case B_OR: LOOP2(uint8_t, (x != 0) | (y != 0));
    case B_XOR: LOOP2(uint8_t, (x != 0) ^ (y != 0));
    case B_EQ: LOOP2(uint8_t, (x != 0) == (y != 0));
    }
}

/* Mixed-type Pow (and integer Pow) goes through double, element by element. */
static double load_f64(const void *p, int32_t dt, size_t i) {
    switch (dt) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        return (double)((const T *)p)[i];
        CPU_NUM_TYPES(CASE)
#undef CASE
    }
    return 0;
}

/* Converts to an integer type, saturating, NaN to 0 (C leaves these undefined). */
#define SAT(T, lo, hi, v)                                                                  \
    ((v) != (v) ? (T)0 : (v) <= (double)(lo) ? (T)(lo) : (v) >= (double)(hi) ? (T)(hi) : (T)(v))

static void store_f64(void *p, int32_t dt, size_t i, double v) {
    switch (dt) {
    case MINFER_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case MINFER_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case MINFER_DTYPE_INT8: ((int8_t *)p)[i] = SAT(int8_t, INT8_MIN, INT8_MAX, v); break;
    case MINFER_DTYPE_INT16: ((int16_t *)p)[i] = SAT(int16_t, INT16_MIN, INT16_MAX, v); break;
    case MINFER_DTYPE_INT32: ((int32_t *)p)[i] = SAT(int32_t, INT32_MIN, INT32_MAX, v); break;
    case MINFER_DTYPE_INT64: ((int64_t *)p)[i] = SAT(int64_t, INT64_MIN, INT64_MAX, v); break;
    case MINFER_DTYPE_UINT8: ((uint8_t *)p)[i] = SAT(uint8_t, 0, UINT8_MAX, v); break;
    case MINFER_DTYPE_UINT16: ((uint16_t *)p)[i] = SAT(uint16_t, 0, UINT16_MAX, v); break;
    case MINFER_DTYPE_UINT32: ((uint32_t *)p)[i] = SAT(uint32_t, 0, UINT32_MAX, v); break;
    case MINFER_DTYPE_UINT64: ((uint64_t *)p)[i] = SAT(uint64_t, 0, UINT64_MAX, v); break;
    }
}

/* float16 and bfloat16 (the variadic Max/Min/Sum/Mean take them): each
 * element widened to float, computed there and rounded back once, which is
 * exact for Max and Min. */
static void half_run(int op, int32_t t, void *o, const void *a, const void *b, size_t n,
                     size_t sa, size_t sb) {
    for (size_t i = 0; i < n; i++) {
        float x = (float)cpu_get(a, t, i * sa), y = (float)cpu_get(b, t, i * sb), r;
        switch (op) {
        case B_ADD: r = x + y; break;
        case B_SUB: r = x - y; break;
        case B_MUL: r = x * y; break;
        case B_DIV: r = x / y; break;
        case B_MIN: r = (x != x || x < y) ? x : y; break;
        case B_MAX: r = (x != x || x > y) ? x : y; break;
        default: r = 0; break;
        }
        cpu_set(o, t, i, r);
    }
}

typedef struct binary_job {
    int op;
    int32_t ta, tb, to; /* element types of a, b, output */
    int generic;        /* element-by-element through double */
    const char *a, *b;
    char *o;
    size_t sza, szb, szo;
} binary_job;

static void binary_run(void *arg, size_t out_off, const size_t *in_off, size_t n,
                       const size_t *step) {
    const binary_job *j = arg;
    const void *a = j->a + in_off[0] * j->sza, *b = j->b + in_off[1] * j->szb;
    void *o = j->o + out_off * j->szo;
    size_t sa = step[0], sb = step[1];
    if (j->generic) {
        for (size_t i = 0; i < n; i++)
            store_f64(o, j->to, i,
                      pow(load_f64(a, j->ta, i * sa), load_f64(b, j->tb, i * sb)));
        return;
    }
    if (j->ta == MINFER_DTYPE_BOOL) {
        logic_bool(j->op, o, a, b, n, sa, sb);
        return;
    }
    if (j->ta == MINFER_DTYPE_FLOAT16 || j->ta == MINFER_DTYPE_BFLOAT16) {
        half_run(j->op, j->ta, o, a, b, n, sa, sb);
        return;
    }
    if (j->op >= B_EQ) {
        switch (j->ta) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        cmp_##S(j->op, o, a, b, n, sa, sb);                                                \
        break;
            CPU_NUM_TYPES(CASE)
#undef CASE
        }
        return;
    }
    switch (j->ta) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        arith_##S(j->op, o, a, b, n, sa, sb);                                              \
        break;
        CPU_NUM_TYPES(CASE)
#undef CASE
    }
}

static int is_int_type(int32_t t) {
    return t > 0 && t < 32 && (CPU_T(t) & CPU_T_INTS);
}

static int has_zero(const minfer_tensor_view *v) {
    size_t n = (size_t)minfer_kit_numel(v->rank, v->dims), es = minfer_elem_size(v->dtype);
    const unsigned char *d = cpu_data(v);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < es && d[i * es + k] == 0)
            k++;
        if (k == es)
            return 1;
    }
    return 0;
}

/* out = a op b over the broadcast shape (out_rank/out_dims), into o. */
static minfer_status binary_apply(const cpu_exec *e, int op, const minfer_tensor_view *a,
                                  const minfer_tensor_view *b, int32_t to, int32_t out_rank,
                                  const int64_t *out_dims, void *o) {
    int generic = 0;
    if (op == B_POW) {
        generic = a->dtype != b->dtype || is_int_type(a->dtype);
        if (!(CPU_T(a->dtype) & CPU_T_NUM) || !(CPU_T(b->dtype) & CPU_T_NUM))
            return cpu_fail(e, MINFER_ERR_TYPE, "unsupported element types");
    } else if (a->dtype != b->dtype) {
        return cpu_fail(e, MINFER_ERR_TYPE, "input element types differ (%d, %d)",
                        (int)a->dtype, (int)b->dtype);
    }
    int half = CPU_T(a->dtype) & CPU_T_HALF;
    if (half ? !(op == B_ADD || op == B_SUB || op == B_MUL || op == B_DIV || op == B_MIN ||
                 op == B_MAX)
             : a->dtype == MINFER_DTYPE_BOOL ? (op < B_AND && op != B_EQ)
                                             : (op >= B_AND || !(CPU_T(a->dtype) & CPU_T_NUM)))
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(a->dtype));
    if (op == B_DIV && is_int_type(a->dtype) && has_zero(b))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "integer division by zero");
    const int32_t ranks[2] = {a->rank, b->rank};
    const int64_t *dims[2] = {a->dims, b->dims};
    cpu_bcast bc;
    if (cpu_bcast_init(&bc, 2, ranks, dims, out_rank, out_dims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "inputs do not broadcast to the output");
    binary_job j = {op,
                    a->dtype,
                    b->dtype,
                    to,
                    generic,
                    cpu_data(a),
                    cpu_data(b),
                    o,
                    minfer_elem_size(a->dtype),
                    minfer_elem_size(b->dtype),
                    minfer_elem_size(to)};
    cpu_bcast_run(e->ctx, &bc, binary_run, &j);
    return MINFER_OK;
}

minfer_status cpu_compute_binary(const cpu_exec *e) {
    const binary_state *st = e->state;
    const minfer_tensor_view *a = cpu_input(e, 0), *b = cpu_input(e, 1);
    if (!a || !b)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    minfer_tensor_view bl;
    if (st->legacy && !st->legacy_broadcast) {
        if (a->rank != b->rank || memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]))
            return cpu_fail(e, MINFER_ERR_SHAPE, "shapes differ and broadcast is 0");
    } else if (st->legacy && st->legacy_axis != INT64_MIN &&
               !(st->op == B_PRELU && (b->rank != 1 || b->dims[0] == 1 || a->rank < 2))) {
        /* Old-style broadcast: b's dims line up with a's from 'axis' on. */
        int axis = minfer_kit_axis(st->legacy_axis, a->rank);
        if (axis < 0 || axis + b->rank > a->rank)
            return cpu_fail(e, MINFER_ERR_SHAPE, "broadcast axis out of range");
        bl = *b;
        bl.rank = a->rank;
        for (int d = 0; d < a->rank; d++)
            bl.dims[d] = d >= axis && d < axis + b->rank ? b->dims[d - axis] : 1;
        b = &bl;
    }
    int32_t rank;
    int64_t dims[CPU_MAX_RANK];
    if (cpu_broadcast_shape(a->rank, a->dims, b->rank, b->dims, &rank, dims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "input shapes do not broadcast");
    int32_t to = st->op >= B_EQ ? MINFER_DTYPE_BOOL : a->dtype;
    void *o;
    minfer_status s = cpu_output(e, 0, to, rank, dims, &o);
    if (s)
        return s;
    return binary_apply(e, st->op, a, b, to, rank, dims, o);
}

/* ---- Max, Min, Sum, Mean ------------------------------------------------------ */

minfer_status cpu_prepare_variadic(cpu_prep *p) {
    if (p->node->n_inputs < 1)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs at least one input");
    for (size_t i = 0; i < p->node->n_inputs; i++) {
        const minfer_value_desc *d = minfer_kit_input(p->node, i);
        if (!d)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "input %zu is empty", i);
        if (d->dtype && d->dtype != p->node->inputs[0].dtype)
            return cpu_decline(p, "input types differ");
    }
    binary_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->op = binary_op(p->node->op_type);
    st->mean = strcmp(p->node->op_type, "Mean") == 0;
    return MINFER_OK;
}

typedef struct copy_job {
    const char *src;
    char *dst;
    size_t es;
} copy_job;

/* Broadcast copy, used for a single input and by Expand. */
static void bcast_copy(void *arg, size_t out_off, const size_t *in_off, size_t n,
                       const size_t *step) {
    const copy_job *j = arg;
    const char *s = j->src + in_off[0] * j->es;
    char *d = j->dst + out_off * j->es;
    if (step[0]) {
        memcpy(d, s, n * j->es);
    } else {
        for (size_t i = 0; i < n; i++)
            memcpy(d + i * j->es, s, j->es);
    }
}

minfer_status cpu_broadcast_copy(const cpu_exec *e, const minfer_tensor_view *x,
                                 int32_t out_rank, const int64_t *out_dims, void *out) {
    cpu_bcast bc;
    const int64_t *dims[1] = {x->dims};
    if (cpu_bcast_init(&bc, 1, &x->rank, dims, out_rank, out_dims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "input does not broadcast to the output");
    copy_job j = {cpu_data(x), out, minfer_elem_size(x->dtype)};
    cpu_bcast_run(e->ctx, &bc, bcast_copy, &j);
    return MINFER_OK;
}

minfer_status cpu_compute_variadic(const cpu_exec *e) {
    const binary_state *st = e->state;
    size_t n = e->args->n_inputs;
    int32_t rank = 0;
    int64_t dims[CPU_MAX_RANK];
    for (size_t i = 0; i < n; i++) {
        const minfer_tensor_view *x = cpu_input(e, i);
        if (!x)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "input %zu missing", i);
        if (x->dtype != e->args->inputs[0].dtype)
            return cpu_fail(e, MINFER_ERR_TYPE, "input types differ");
        if (cpu_broadcast_shape(rank, dims, x->rank, x->dims, &rank, dims))
            return cpu_fail(e, MINFER_ERR_SHAPE, "input %zu does not broadcast", i);
    }
    const minfer_tensor_view *x0 = cpu_input(e, 0);
    void *o;
    minfer_status s = cpu_output(e, 0, x0->dtype, rank, dims, &o);
    if (s)
        return s;
    if (n == 1)
        return cpu_broadcast_copy(e, x0, rank, dims, o);
    s = binary_apply(e, st->op, x0, cpu_input(e, 1), x0->dtype, rank, dims, o);
    /* Fold the remaining inputs into the output, which has the full shape. */
    minfer_tensor_view acc = *x0;
    acc.rank = rank;
    memcpy(acc.dims, dims, sizeof dims);
    acc.data = o;
    acc.offset = 0;
    for (size_t i = 2; i < n && !s; i++)
        s = binary_apply(e, st->op, &acc, cpu_input(e, i), x0->dtype, rank, dims, o);
    if (s || !st->mean)
        return s;
    size_t total = (size_t)minfer_kit_numel(rank, dims);
    if (x0->dtype == MINFER_DTYPE_FLOAT)
        for (size_t i = 0; i < total; i++)
            ((float *)o)[i] /= (float)n;
    else if (x0->dtype == MINFER_DTYPE_DOUBLE)
        for (size_t i = 0; i < total; i++)
            ((double *)o)[i] /= (double)n;
    else if (CPU_T(x0->dtype) & CPU_T_HALF)
        for (size_t i = 0; i < total; i++)
            cpu_set(o, x0->dtype, i, cpu_get(o, x0->dtype, i) / (double)n);
    else
        return cpu_fail(e, MINFER_ERR_TYPE, "Mean takes float or double");
    return MINFER_OK;
}

/* ---- Where -------------------------------------------------------------- */

minfer_status cpu_prepare_where(cpu_prep *p) {
    if (p->node->n_inputs != 3)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "expects three inputs");
    const minfer_value_desc *x = minfer_kit_input(p->node, 1), *y = minfer_kit_input(p->node, 2);
    if (!x || !y)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "expects three inputs");
    if (x->dtype && !(CPU_T(x->dtype) & CPU_T_ALL))
        return cpu_decline(p, "element type %s not supported", minfer_elem_name(x->dtype));
    return MINFER_OK;
}

typedef struct where_job {
    const uint8_t *c;
    const char *x, *y;
    char *o;
    size_t es;
} where_job;

#define WHERE_SIZES(X) X(1, uint8_t) X(2, uint16_t) X(4, uint32_t) X(8, uint64_t)

static void where_run(void *arg, size_t out_off, const size_t *in_off, size_t n,
                      const size_t *step) {
    const where_job *j = arg;
    const uint8_t *c = j->c + in_off[0];
    switch (j->es) {
#define CASE(SZ, T)                                                                        \
    case SZ: {                                                                             \
        const T *x = (const T *)j->x + in_off[1], *y = (const T *)j->y + in_off[2];        \
        T *o = (T *)j->o + out_off;                                                        \
        for (size_t i = 0; i < n; i++)                                                     \
            o[i] = c[i * step[0]] ? x[i * step[1]] : y[i * step[2]];                       \
        break;                                                                             \
    }
        WHERE_SIZES(CASE)
#undef CASE
    }
}

minfer_status cpu_compute_where(const cpu_exec *e) {
    const minfer_tensor_view *c = cpu_input(e, 0), *x = cpu_input(e, 1), *y = cpu_input(e, 2);
    if (!c || !x || !y)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (c->dtype != MINFER_DTYPE_BOOL || x->dtype != y->dtype)
        return cpu_fail(e, MINFER_ERR_TYPE, "condition must be bool and X, Y of one type");
    int32_t rank;
    int64_t dims[CPU_MAX_RANK];
    if (cpu_broadcast_shape(c->rank, c->dims, x->rank, x->dims, &rank, dims) ||
        cpu_broadcast_shape(rank, dims, y->rank, y->dims, &rank, dims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "inputs do not broadcast");
    void *o;
    minfer_status s = cpu_output(e, 0, x->dtype, rank, dims, &o);
    if (s)
        return s;
    where_job j = {cpu_data(c), cpu_data(x), cpu_data(y), o, minfer_elem_size(x->dtype)};
    if (j.es != 1 && j.es != 2 && j.es != 4 && j.es != 8)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    const int32_t ranks[3] = {c->rank, x->rank, y->rank};
    const int64_t *d3[3] = {c->dims, x->dims, y->dims};
    cpu_bcast bc;
    if (cpu_bcast_init(&bc, 3, ranks, d3, rank, dims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "inputs do not broadcast");
    cpu_bcast_run(e->ctx, &bc, where_run, &j);
    return MINFER_OK;
}

/* ---- Unary ops computed through double ---------------------------------------
 * IsNaN, IsInf, Shrink, Celu and Mish, for every float type (float16 and
 * bfloat16 included) and, for Shrink, the integer types: each element is
 * read as double, mapped, and stored in the output type. */

enum { G_ISNAN, G_ISINF, G_SHRINK, G_CELU, G_MISH };

typedef struct generic_state {
    int op;
    float a, b; /* Shrink: lambd, bias; Celu: alpha; IsInf: detect_positive, _negative */
} generic_state;

minfer_status cpu_prepare_unary_generic(cpu_prep *p) {
    static const char *const names[] = {"IsNaN", "IsInf", "Shrink", "Celu", "Mish"};
    generic_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->op = -1;
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(names[i], p->node->op_type) == 0)
            st->op = i;
    if (st->op < 0 || !minfer_kit_input(p->node, 0))
        return cpu_decline(p, "not a generic unary op");
    switch (st->op) {
    case G_ISINF:
        st->a = (float)cpu_attr_int(p, "detect_positive", 1);
        st->b = (float)cpu_attr_int(p, "detect_negative", 1);
        break;
    case G_SHRINK:
        st->a = cpu_attr_float(p, "lambd", 0.5f);
        st->b = cpu_attr_float(p, "bias", 0.0f);
        break;
    case G_CELU: st->a = cpu_attr_float(p, "alpha", 1.0f); break;
    }
    return MINFER_OK;
}

minfer_status cpu_compute_unary_generic(const cpu_exec *e) {
    const generic_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int to_bool = st->op == G_ISNAN || st->op == G_ISINF;
    int32_t ot = to_bool ? MINFER_DTYPE_BOOL : x->dtype;
    void *y;
    minfer_status s = cpu_output(e, 0, ot, x->rank, x->dims, &y);
    if (s)
        return s;
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    const void *xd = cpu_data(x);
    for (size_t i = 0; i < n; i++) {
        double v = cpu_get(xd, x->dtype, i), r;
        switch (st->op) {
        case G_ISNAN: r = isnan(v); break;
        case G_ISINF: r = isinf(v) && ((v > 0 && st->a != 0) || (v < 0 && st->b != 0)); break;
        case G_SHRINK: r = v < -st->a ? v + st->b : v > st->a ? v - st->b : 0; break;
        case G_CELU: r = fmax(0.0, v) + fmin(0.0, st->a * (exp(v / st->a) - 1)); break;
        default: r = v * tanh(v > 0 ? v + log1p(exp(-v)) : log1p(exp(v))); break;
        }
        cpu_set(y, ot, i, r);
    }
    return MINFER_OK;
}

/* ---- Mod, BitShift ---------------------------------------------------------------
 * Integer loops per type (exact for int64); Mod on float16/bfloat16 goes
 * through double. Division by zero is an error for integers. */

typedef struct intbin_state {
    int fmod_;  /* Mod: C fmod semantics (sign of the dividend) */
    int left;   /* BitShift direction */
    int shift;  /* 1: BitShift, 0: Mod */
} intbin_state;

minfer_status cpu_prepare_intbin(cpu_prep *p) {
    intbin_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->shift = strcmp(p->node->op_type, "BitShift") == 0;
    st->fmod_ = (int)cpu_attr_int(p, "fmod", 0);
    if (st->shift) {
        const char *dir = cpu_attr_str(p, "direction", "");
        if (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT"))
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "direction must be LEFT or RIGHT");
        st->left = strcmp(dir, "LEFT") == 0;
    }
    int32_t t = p->node->inputs[0].dtype;
    if (!st->shift && !st->fmod_ && cpu_is_float(t))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "Mod on floats needs fmod=1");
    return MINFER_OK;
}

typedef struct intbin_job {
    const intbin_state *st;
    int32_t dt;
    const char *a, *b;
    char *o;
} intbin_job;

#define MOD_SINT(E, T, S)                                                                  \
    static int mod_##S(const intbin_state *st, T x, T y, T *r) {                           \
        if (y == 0)                                                                        \
            return -1;                                                                     \
        if (y == -1) { /* avoids INT_MIN % -1 */                                           \
            *r = 0;                                                                        \
            return 0;                                                                      \
        }                                                                                  \
        T m = (T)(x % y);                                                                  \
        if (!st->fmod_ && m != 0 && ((m < 0) != (y < 0)))                                  \
            m = (T)(m + y);                                                                \
        *r = m;                                                                            \
        return 0;                                                                          \
    }
CPU_SINT_TYPES(MOD_SINT)

#define MOD_UINT(E, T, S)                                                                  \
    static int mod_##S(const intbin_state *st, T x, T y, T *r) {                           \
        if (st->shift) {                                                                   \
            *r = y >= 8 * sizeof(T) ? (T)0                                                  \
                 : (T)(st->left ? (uint64_t)x << y : (uint64_t)x >> y);                     \
            return 0;                                                                      \
        }                                                                                  \
        if (y == 0)                                                                        \
            return -1;                                                                     \
        *r = (T)(x % y);                                                                   \
        return 0;                                                                          \
    }
CPU_UINT_TYPES(MOD_UINT)

static void intbin_run(void *arg, size_t out_off, const size_t *in_off, size_t n,
                       const size_t *step) {
    intbin_job *j = arg;
    for (size_t i = 0; i < n; i++) {
        size_t ia = in_off[0] + i * step[0], ib = in_off[1] + i * step[1], io = out_off + i;
        switch (j->dt) {
#define CASE(E, T, S)                                                                      \
    case E: {                                                                              \
        T x = ((const T *)j->a)[ia], y = ((const T *)j->b)[ib];                            \
        if (j->st->shift && y == 0) {                                                      \
            ((T *)j->o)[io] = x;                                                           \
        } else if (mod_##S(j->st, x, y, (T *)j->o + io)) {                                 \
            ((T *)j->o)[io] = 0; /* unreachable: zero divisors are refused first */        \
        }                                                                                  \
        break;                                                                             \
    }
            CPU_INT_TYPES(CASE)
#undef CASE
        default: /* floats: fmod */
            cpu_set(j->o, j->dt, io, fmod(cpu_get(j->a, j->dt, ia), cpu_get(j->b, j->dt, ib)));
        }
    }
}

minfer_status cpu_compute_intbin(const cpu_exec *e) {
    const intbin_state *st = e->state;
    const minfer_tensor_view *a = cpu_input(e, 0), *b = cpu_input(e, 1);
    if (!a || !b || a->dtype != b->dtype)
        return cpu_fail(e, MINFER_ERR_TYPE, "needs two inputs of one type");
    if (st->shift ? !(CPU_T(a->dtype) & CPU_T_UINTS)
                  : !(CPU_T(a->dtype) & (CPU_T_NUM | CPU_T_HALF)))
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(a->dtype));
    int32_t rank;
    int64_t dims[CPU_MAX_RANK];
    if (cpu_broadcast_shape(a->rank, a->dims, b->rank, b->dims, &rank, dims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "input shapes do not broadcast");
    if (!st->shift && is_int_type(b->dtype) && has_zero(b))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "integer division by zero");
    void *o;
    minfer_status s = cpu_output(e, 0, a->dtype, rank, dims, &o);
    if (s)
        return s;
    const int32_t ranks[2] = {a->rank, b->rank};
    const int64_t *d2[2] = {a->dims, b->dims};
    cpu_bcast bc;
    if (cpu_bcast_init(&bc, 2, ranks, d2, rank, dims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "inputs do not broadcast");
    intbin_job j = {st, a->dtype, cpu_data(a), cpu_data(b), o};
    cpu_bcast_run(e->ctx, &bc, intbin_run, &j);
    return MINFER_OK;
}
