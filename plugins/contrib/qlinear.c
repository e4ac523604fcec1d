/*
 * ONNX Runtime's QOperator ops of com.microsoft that quantize_static writes
 * between QLinearConv/QLinearMatMul nodes: QLinearAdd, QLinearMul (numpy
 * broadcasting) and QLinearGlobalAveragePool (NCHW or NHWC), on uint8 and
 * int8, with per-tensor scales and zero points. Each follows the order of
 * operations of ORT's MLAS kernels (qladd.cpp, qlmul.cpp,
 * qlgavgpool.cpp), in float:
 *   QLinearAdd  as MLAS's AVX2 kernel (qladd_avx2.cpp), the one ORT runs on
 *               x86-64: with the float ratios ra = sa / sc, rb = sb / sc and
 *               k = zc - (ra za + rb zb), c = saturate(round_half_even(
 *               fma(a, ra, fma(b, rb, k)))) on the raw a and b; where B is
 *               one value along the innermost run (a scalar, or broadcast
 *               along the last axis) k takes b first, k' = k + b rb, and
 *               c = fma(a, ra, k'); where A is, A and B swap roles, as ORT's
 *               broadcast loop passes the scalar as B. These differ from
 *               (sa (a - za) + sb (b - zb)) / sc in the last bit, enough to
 *               move a tie: one step on an element, which a MobileNet V2
 *               carries to 15 steps at its output.
 *   QLinearMul  c = saturate(round_half_even(float((a - za) (b - zb)) *
 *               (sa * sb / sc)) + zc);
 *   QLinearGlobalAveragePool  the int32 sum of a channel's image less
 *               zx * image size, requantized as MlasRequantizeOutput does
 *               with the scale sx / (sy * image size).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "contrib.h"

static int is_q8(int32_t t) {
    return t == MINFER_DTYPE_UINT8 || t == MINFER_DTYPE_INT8;
}

static int32_t qget(const void *p, int32_t dtype, size_t i) {
    return dtype == MINFER_DTYPE_UINT8 ? ((const uint8_t *)p)[i] : ((const int8_t *)p)[i];
}

static void qput(void *p, int32_t dtype, size_t i, int32_t v) {
    int32_t lo = dtype == MINFER_DTYPE_UINT8 ? 0 : -128, hi = dtype == MINFER_DTYPE_UINT8 ? 255 : 127;
    v = v < lo ? lo : v > hi ? hi : v;
    if (dtype == MINFER_DTYPE_UINT8)
        ((uint8_t *)p)[i] = (uint8_t)v;
    else
        ((int8_t *)p)[i] = (int8_t)v;
}

/* float to int32, rounded half to even, clamped first (a NaN gives 0). */
static int32_t round_i32(float f) {
    if (!(f == f))
        return 0;
    f = f < -2147483520.0f ? -2147483520.0f : f > 2147483520.0f ? 2147483520.0f : f;
    return (int32_t)nearbyintf(f);
}

/* A scalar (one-element) scale or zero point, checked at infer. */
static int scalar_desc(const minfer_value_desc *d) {
    if (!d->present || d->rank < 0)
        return 1; /* unknown: checked at compute */
    int64_t n = 1;
    for (int32_t i = 0; i < d->rank; i++)
        n *= d->dims[i] < 0 ? 1 : d->dims[i];
    return n == 1;
}

static minfer_status want_q8(infer_args *a, size_t i, int32_t dtype) {
    const minfer_value_desc *d = din(a->node, i);
    if (!d->present)
        return FAIL(a, MINFER_ERR_MODEL, "%s: input %zu is required", a->node->op_type, i);
    if (d->dtype && d->dtype != dtype)
        return FAIL(a, MINFER_ERR_TYPE, "%s: input %zu is %s, expected %s", a->node->op_type, i,
                    minfer_elem_name(d->dtype), minfer_elem_name(dtype));
    return MINFER_OK;
}

/* Scale input i (float scalar) and zero point input i + 1 (dtype scalar, optional). */
static minfer_status want_params(infer_args *a, size_t i, int32_t dtype) {
    minfer_status st;
    if ((st = want_type(a, i, MINFER_DTYPE_FLOAT)) != MINFER_OK)
        return st;
    if (!scalar_desc(din(a->node, i)) || (has_in(a->node, i + 1) && !scalar_desc(din(a->node, i + 1))))
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "%s: scale and zero point %zu must be scalars "
                    "(per tensor)", a->node->op_type, i);
    if (dtype && has_in(a->node, i + 1) && (st = want_q8(a, i + 1, dtype)) != MINFER_OK)
        return st;
    return MINFER_OK;
}

/* Numpy broadcast of two shapes; -1 when they do not broadcast. */
static int bcast(int32_t ra, const int64_t *da, int32_t rb, const int64_t *db, int32_t *r,
                 int64_t *d) {
    int32_t n = ra > rb ? ra : rb;
    if (n > MINFER_MAX_RANK)
        return -1;
    for (int32_t i = 0; i < n; i++) {
        int64_t x = i - (n - ra) >= 0 ? da[i - (n - ra)] : 1;
        int64_t y = i - (n - rb) >= 0 ? db[i - (n - rb)] : 1;
        if (x == y || y == 1)
            d[i] = x;
        else if (x == 1)
            d[i] = y;
        else if (x < 0 || y < 0)
            d[i] = -1;
        else
            return -1;
    }
    *r = n;
    return 0;
}

/* QLinearAdd / QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp. */
static minfer_status binary_infer(infer_args *a) {
    const minfer_value_desc *x = din(a->node, 0), *y = din(a->node, 3);
    minfer_status st;
    if (!x->present || !y->present)
        return FAIL(a, MINFER_ERR_MODEL, "%s: inputs A and B are required", a->node->op_type);
    int32_t t = x->dtype ? x->dtype : y->dtype;
    if (t && !is_q8(t))
        return FAIL(a, MINFER_ERR_TYPE, "%s: A is %s, expected uint8 or int8", a->node->op_type,
                    minfer_elem_name(t));
    if (t && (st = want_q8(a, 3, t)) != MINFER_OK)
        return st;
    if ((st = want_params(a, 1, t)) || (st = want_params(a, 4, t)) || (st = want_params(a, 6, t)))
        return st;
    minfer_tensor_view *o = &OUTV(a, 0);
    if (x->rank < 0 || y->rank < 0) {
        out_shape(o, t, -1, NULL);
        return MINFER_OK;
    }
    int32_t r;
    int64_t d[MINFER_MAX_RANK];
    if (bcast(x->rank, x->dims, y->rank, y->dims, &r, d))
        return FAIL(a, MINFER_ERR_SHAPE, "%s: A and B do not broadcast", a->node->op_type);
    out_shape(o, t, r, d);
    return MINFER_OK;
}

typedef struct qparams {
    float sa, sb, sc;
    int32_t za, zb, zc;
} qparams;

static minfer_status read_param(compute_args *a, size_t i, int32_t dtype, float *s, int32_t *z) {
    const minfer_tensor_view *vs = vin(a, i), *vz = vin(a, i + 1);
    if (!vs->data || vs->dtype != MINFER_DTYPE_FLOAT || numel(vs) != 1)
        return FAIL(a, MINFER_ERR_SHAPE, "%s: input %zu must be a float scalar", a->node->op_type, i);
    *s = *(const float *)vs->data;
    *z = 0;
    if (i + 1 < a->n_inputs && vz->data) {
        if (vz->dtype != dtype || numel(vz) != 1)
            return FAIL(a, MINFER_ERR_SHAPE, "%s: input %zu must be a %s scalar", a->node->op_type,
                        i + 1, minfer_elem_name(dtype));
        *z = qget(vz->data, dtype, 0);
    }
    return MINFER_OK;
}

/* QLinearAdd's two contiguous cases at vector speed, the same values as
 * the element loop in binary_compute: c = saturate(round_half_even(
 * fma(a, ra, fma(b, rb, k)))) for A and B of C's shape, and
 * fma(a, ra, kb) (kb = k + b rb, computed by the caller) for a scalar B.
 * Built for AVX2 with FMA and called only where the CPU has them (the
 * fused multiply-adds are then single instructions, and the loop
 * vectorises); clamping before rounding is the same as after, the bounds
 * being integers; a NaN gives 0, as round_i32 does. */
#if defined(__x86_64__) && defined(__GNUC__)
#define QADD_FAST 1
#define QADD_LOOP(T, LO, HI)                                                                    \
    do {                                                                                        \
        const T *pa = av, *pb = bv;                                                             \
        T *pc = cv;                                                                             \
        for (size_t i = 0; i < n; i++) {                                                        \
            float f = pb ? fmaf((float)pa[i], ra, fmaf((float)pb[i], rb, k))                    \
                         : fmaf((float)pa[i], ra, k);                                           \
            float g = f < (LO) ? (LO) : f;                                                      \
            g = g > (HI) ? (HI) : g;                                                            \
            g = nearbyintf(g);                                                                  \
            pc[i] = f == f ? (T)(int32_t)g : (T)0;                                              \
        }                                                                                       \
    } while (0)

__attribute__((target("avx2,fma"))) static void qadd_fast(int32_t t, const void *av,
                                                           const void *bv, void *cv, size_t n,
                                                           float ra, float rb, float k) {
    if (t == MINFER_DTYPE_UINT8)
        QADD_LOOP(uint8_t, 0.0f, 255.0f);
    else
        QADD_LOOP(int8_t, -128.0f, 127.0f);
}
#undef QADD_LOOP
#endif

static minfer_status binary_compute(compute_args *a, int mul) {
    const minfer_tensor_view *x = vin(a, 0), *y = vin(a, 3);
    minfer_tensor_view *o = &OUTV(a, 0);
    if (a->n_outputs < 1 || !x->data || !y->data || x->rank < 0 || y->rank < 0)
        return FAIL(a, MINFER_ERR_MODEL, "%s: A and B are required", a->node->op_type);
    int32_t t = x->dtype;
    if (!is_q8(t) || y->dtype != t || o->dtype != t)
        return FAIL(a, MINFER_ERR_TYPE, "%s: A, B and C must be one of uint8 and int8",
                    a->node->op_type);
    qparams p;
    minfer_status st;
    if ((st = read_param(a, 1, t, &p.sa, &p.za)) || (st = read_param(a, 4, t, &p.sb, &p.zb)) ||
        (st = read_param(a, 6, t, &p.sc, &p.zc)))
        return st;
    int32_t r;
    int64_t d[MINFER_MAX_RANK];
    if (bcast(x->rank, x->dims, y->rank, y->dims, &r, d) || r != o->rank ||
        memcmp(d, o->dims, (size_t)r * sizeof *d))
        return FAIL(a, MINFER_ERR_SHAPE, "%s: A and B do not broadcast to C", a->node->op_type);
    size_t n = numel(o);
    if (n && !o->data)
        return FAIL(a, MINFER_ERR_MODEL, "%s: output C has no storage", a->node->op_type);
    /* strides of A and B in C's index space (0 along broadcast axes) */
    int64_t sx[MINFER_MAX_RANK], sy[MINFER_MAX_RANK];
    int64_t ax = 1, ay = 1;
    for (int32_t i = r - 1; i >= 0; i--) {
        int32_t ix = i - (r - x->rank), iy = i - (r - y->rank);
        int64_t dx = ix >= 0 ? x->dims[ix] : 1, dy = iy >= 0 ? y->dims[iy] : 1;
        sx[i] = dx == 1 ? 0 : ax;
        sy[i] = dy == 1 ? 0 : ay;
        ax *= dx;
        ay *= dy;
    }
    float ratio = p.sa * p.sb / p.sc;
    /* QLinearAdd: which operand is one value along the innermost run */
    int32_t inner = r - 1;
    while (inner > 0 && d[inner] == 1)
        inner--;
    int scalar_b = numel(y) == 1 || (r > 0 && sy[inner] == 0 && sx[inner] != 0);
    int scalar_a = !scalar_b && (numel(x) == 1 || (r > 0 && sx[inner] == 0 && sy[inner] != 0));
    float ra = p.sa / p.sc, rb = p.sb / p.sc;
    if (scalar_a) { /* ORT passes the scalar as B: the ratios swap roles */
        float f = ra;
        ra = rb;
        rb = f;
    }
    float fixed = (float)p.zc - (ra * (float)(scalar_a ? p.zb : p.za) +
                                 rb * (float)(scalar_a ? p.za : p.zb));
#ifdef QADD_FAST
    if (!mul && !scalar_a && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        if (numel(y) == 1) {
            float kb = fixed + (float)qget(y->data, t, 0) * rb;
            qadd_fast(t, x->data, NULL, o->data, n, ra, rb, kb);
            return MINFER_OK;
        }
        if (!scalar_b && numel(x) == n && numel(y) == n) {
            qadd_fast(t, x->data, y->data, o->data, n, ra, rb, fixed);
            return MINFER_OK;
        }
    }
#endif
    int64_t idx[MINFER_MAX_RANK] = {0};
    size_t ox = 0, oy = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t qa = qget(x->data, t, ox), qb = qget(y->data, t, oy);
        int32_t c;
        if (mul) {
            c = round_i32((float)((qa - p.za) * (qb - p.zb)) * ratio) + p.zc;
        } else {
            float va = (float)(scalar_a ? qb : qa), vb = (float)(scalar_a ? qa : qb);
            float f = scalar_a || scalar_b ? fmaf(va, ra, fixed + vb * rb)
                                           : fmaf(va, ra, fmaf(vb, rb, fixed));
            c = round_i32(f);
        }
        qput(o->data, t, i, c);
        for (int32_t k = r - 1; k >= 0; k--) {
            ox += (size_t)sx[k];
            oy += (size_t)sy[k];
            if (++idx[k] < d[k])
                break;
            ox -= (size_t)(sx[k] * d[k]);
            oy -= (size_t)(sy[k] * d[k]);
            idx[k] = 0;
        }
    }
    return MINFER_OK;
}

minfer_status qlinear_add_infer(void *op, infer_args *a) {
    (void)op;
    return binary_infer(a);
}
minfer_status qlinear_add_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return binary_compute(a, 0);
}
minfer_status qlinear_mul_infer(void *op, infer_args *a) {
    (void)op;
    return binary_infer(a);
}
minfer_status qlinear_mul_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return binary_compute(a, 1);
}

/* QLinearGlobalAveragePool: X, x_scale, x_zero_point, y_scale, y_zero_point;
 * channels_last (default 0). */
minfer_status qlinear_gap_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_value_desc *x = din(a->node, 0);
    minfer_status st;
    if (!x->present)
        return FAIL(a, MINFER_ERR_MODEL, "QLinearGlobalAveragePool: X is required");
    if (x->dtype && !is_q8(x->dtype))
        return FAIL(a, MINFER_ERR_TYPE, "QLinearGlobalAveragePool: X is %s, expected uint8 or "
                    "int8", minfer_elem_name(x->dtype));
    if ((st = want_params(a, 1, x->dtype)) || (st = want_params(a, 3, x->dtype)))
        return st;
    minfer_tensor_view *o = &OUTV(a, 0);
    if (x->rank < 0) {
        out_shape(o, x->dtype, -1, NULL);
        return MINFER_OK;
    }
    if (x->rank < 3)
        return FAIL(a, MINFER_ERR_SHAPE, "QLinearGlobalAveragePool: X has rank %d, expected 3 or "
                    "more", x->rank);
    int last = minfer_kit_attr_int(a->api, a->node, "channels_last", 0) != 0;
    int64_t d[MINFER_MAX_RANK];
    for (int32_t i = 0; i < x->rank; i++)
        d[i] = 1;
    d[0] = x->dims[0];
    d[last ? x->rank - 1 : 1] = x->dims[last ? x->rank - 1 : 1];
    out_shape(o, x->dtype, x->rank, d);
    return MINFER_OK;
}

minfer_status qlinear_gap_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_tensor_view *x = vin(a, 0);
    minfer_tensor_view *o = &OUTV(a, 0);
    if (a->n_outputs < 1 || !x->data || x->rank < 3 || !is_q8(x->dtype) || o->dtype != x->dtype)
        return FAIL(a, MINFER_ERR_MODEL, "QLinearGlobalAveragePool: X (rank 3+, uint8 or int8) "
                    "and Y of its type are required");
    int32_t t = x->dtype, zx, zy;
    float sx, sy;
    minfer_status st;
    if ((st = read_param(a, 1, t, &sx, &zx)) || (st = read_param(a, 3, t, &sy, &zy)))
        return st;
    int last = minfer_kit_attr_int(a->api, a->node, "channels_last", 0) != 0;
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[last ? x->rank - 1 : 1], img = 1;
    for (int32_t i = last ? 1 : 2; i < (last ? x->rank - 1 : x->rank); i++)
        img *= (size_t)x->dims[i];
    if (numel(o) != N * C || (N * C != 0 && !o->data))
        return FAIL(a, MINFER_ERR_SHAPE, "QLinearGlobalAveragePool: Y must hold N x C values");
    if (img == 0)
        return FAIL(a, MINFER_ERR_SHAPE, "QLinearGlobalAveragePool: X has an empty image");
    float scale = sx / (sy * (float)img);
    int32_t bias = -zx * (int32_t)img;
    float lo = (float)((t == MINFER_DTYPE_UINT8 ? 0 : -128) - zy);
    float hi = (float)((t == MINFER_DTYPE_UINT8 ? 255 : 127) - zy);
    for (size_t n = 0; n < N; n++)
        for (size_t c = 0; c < C; c++) {
            uint32_t sum = 0;
            for (size_t i = 0; i < img; i++)
                sum += (uint32_t)qget(x->data, t, last ? (n * img + i) * C + c : (n * C + c) * img + i);
            float f = (float)(int32_t)(sum + (uint32_t)bias) * scale;
            f = f > lo ? f : lo;
            f = f < hi ? f : hi;
            qput(o->data, t, n * C + c, (int32_t)nearbyintf(f) + zy);
        }
    return MINFER_OK;
}

/* QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point (one, or one per
 * column of op(B)), C (int32, optional), y_scale, y_zero_point (optional:
 * without them Y is float); alpha, transA, transB. As ORT's kernel
 * (quant_gemm.cc): the int32 sums of (a - za)(b - zb) start from C
 * broadcast to [M, N]; a quantized Y is requantized as MlasRequantizeOutput
 * does with the multiplier (alpha a_scale b_scale[n]) / y_scale, a float Y
 * is that sum times alpha a_scale b_scale[n]. */
typedef struct qgemm_dims {
    int64_t m, n, k;
    int ta, tb;
} qgemm_dims;

static int qgemm_shape(const minfer_host_api *api, const minfer_node_desc *node, int32_t ra,
                       const int64_t *da, int32_t rb, const int64_t *db, qgemm_dims *g) {
    g->ta = minfer_kit_attr_int(api, node, "transA", 0) != 0;
    g->tb = minfer_kit_attr_int(api, node, "transB", 0) != 0;
    if (ra != 2 || rb != 2)
        return -1;
    g->m = da[g->ta ? 1 : 0];
    g->k = da[g->ta ? 0 : 1];
    g->n = db[g->tb ? 0 : 1];
    int64_t kb = db[g->tb ? 1 : 0];
    return g->k >= 0 && kb >= 0 && g->k != kb ? -1 : 0;
}

minfer_status qgemm_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_value_desc *x = din(a->node, 0), *w = din(a->node, 3);
    minfer_status st;
    if (!x->present || !w->present)
        return FAIL(a, MINFER_ERR_MODEL, "QGemm: inputs A and B are required");
    if ((x->dtype && !is_q8(x->dtype)) || (w->dtype && !is_q8(w->dtype)))
        return FAIL(a, MINFER_ERR_TYPE, "QGemm: A and B must be uint8 or int8");
    if ((st = want_params(a, 1, x->dtype)) != MINFER_OK)
        return st;
    int quant_y = has_in(a->node, 8);
    if (has_in(a->node, 7) != quant_y)
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "QGemm: y_scale and y_zero_point go together "
                    "(both for a quantized Y, neither for a float Y)");
    if (quant_y && (st = want_params(a, 7, 0)) != MINFER_OK)
        return st;
    if (has_in(a->node, 6) && (st = want_type(a, 6, MINFER_DTYPE_INT32)) != MINFER_OK)
        return st;
    int32_t yt = quant_y ? din(a->node, 8)->dtype : MINFER_DTYPE_FLOAT;
    if (quant_y && yt && !is_q8(yt))
        return FAIL(a, MINFER_ERR_TYPE, "QGemm: y_zero_point must be uint8 or int8");
    minfer_tensor_view *o = &OUTV(a, 0);
    if (x->rank < 0 || w->rank < 0) {
        out_shape(o, yt, -1, NULL);
        return MINFER_OK;
    }
    qgemm_dims g;
    if (qgemm_shape(a->api, a->node, x->rank, x->dims, w->rank, w->dims, &g))
        return FAIL(a, MINFER_ERR_SHAPE, "QGemm: A and B must be matrices of matching K");
    int64_t d[2] = {g.m, g.n};
    out_shape(o, yt, 2, d);
    return MINFER_OK;
}

/* rows x cols int8 values into int16 rows of cols: src is [rows, cols],
 * or [cols, rows] when transposed. */
static void widen_rows(const void *src, int u8, size_t rows, size_t cols, int transposed,
                       int16_t *dst) {
    const uint8_t *su = src;
    const int8_t *ss = src;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++) {
            size_t at = transposed ? c * rows + r : r * cols + c;
            dst[r * cols + c] = u8 ? (int16_t)su[at] : (int16_t)ss[at];
        }
}

/* sum of a[k] * b[k], wrapping as int32 sums do in the reference (the
 * products of widened int8 values fit int32): a loop -O3 vectorises. */
static uint32_t dot_i16(const int16_t *a, const int16_t *b, size_t k) {
    uint32_t s = 0;
    for (size_t i = 0; i < k; i++)
        s += (uint32_t)((int32_t)a[i] * (int32_t)b[i]);
    return s;
}

/* B's columns less their zero point as int16 rows of K (b_cols columns,
 * b_rows K), widened once at create where B and b_zero_point are
 * constants (a model's weights): every run widened all of B again, 100 us
 * of MobileNet V2's 1280 x 100 classifier a run against its 0.26 ms. */
typedef struct qgemm_state {
    int16_t *bw; /* NULL: widened each run */
    size_t n, k;
} qgemm_state;

static void shift_cols(int16_t *bw, size_t n, size_t k, const void *zp, int32_t dt, size_t nz) {
    for (size_t j = 0; j < n; j++) {
        int16_t zb = (int16_t)(nz ? qget(zp, dt, nz == 1 ? 0 : j) : 0);
        for (size_t i = 0; i < k; i++)
            bw[j * k + i] = (int16_t)(bw[j * k + i] - zb);
    }
}

minfer_status qgemm_create(void *op, create_args *a, void **state) {
    (void)op;
    *state = NULL;
    const minfer_node_desc *node = a->node;
    qgemm_state *s = calloc(1, sizeof *s);
    if (!s)
        return FAIL(a, MINFER_ERR_NOMEM, "QGemm: out of memory");
    *state = s;
    if (!has_in(node, 3))
        return MINFER_OK;
    const minfer_value_desc *w = din(node, 3), *vz = has_in(node, 5) ? din(node, 5) : NULL;
    int tb = minfer_kit_attr_int(a->api, node, "transB", 0) != 0;
    if (!w->const_data || !is_q8(w->dtype) || w->rank != 2 || w->dims[0] <= 0 ||
        w->dims[1] <= 0 || (vz && (!vz->const_data || vz->dtype != w->dtype || vz->rank < 0)))
        return MINFER_OK; /* widened each run, with the run's checks */
    size_t k = (size_t)w->dims[tb ? 1 : 0], n = (size_t)w->dims[tb ? 0 : 1];
    size_t nz = vz ? (size_t)minfer_kit_numel(vz->rank, vz->dims) : 0;
    if (w->const_nbytes < n * k || (nz != 0 && nz != 1 && nz != n) ||
        (vz && vz->const_nbytes < nz))
        return MINFER_OK;
    if (!(s->bw = malloc(n * k * sizeof *s->bw))) {
        free(s);
        *state = NULL;
        return FAIL(a, MINFER_ERR_NOMEM, "QGemm: out of memory");
    }
    widen_rows(w->const_data, w->dtype == MINFER_DTYPE_UINT8, n, k, !tb, s->bw);
    shift_cols(s->bw, n, k, vz ? vz->const_data : NULL, w->dtype, nz);
    s->n = n;
    s->k = k;
    return MINFER_OK;
}

void qgemm_destroy(void *op, void *state) {
    (void)op;
    qgemm_state *s = state;
    if (s)
        free(s->bw);
    free(s);
}

minfer_status qgemm_compute(void *op, void *state, compute_args *a) {
    (void)op;
    const qgemm_state *qs = state;
    const minfer_tensor_view *x = vin(a, 0), *w = vin(a, 3);
    minfer_tensor_view *o = &OUTV(a, 0);
    if (a->n_outputs < 1 || !x->data || !w->data || !is_q8(x->dtype) || !is_q8(w->dtype))
        return FAIL(a, MINFER_ERR_MODEL, "QGemm: A and B (uint8 or int8) are required");
    qgemm_dims g;
    if (qgemm_shape(a->api, a->node, x->rank, x->dims, w->rank, w->dims, &g) ||
        o->rank != 2 || o->dims[0] != g.m || o->dims[1] != g.n)
        return FAIL(a, MINFER_ERR_SHAPE, "QGemm: A, B and Y do not make a [M, K] x [K, N] product");
    float sa, sy = 1;
    int32_t za, zy = 0;
    minfer_status st;
    if ((st = read_param(a, 1, x->dtype, &sa, &za)) != MINFER_OK)
        return st;
    int quant_y = a->n_inputs > 8 && vin(a, 8)->data;
    if (quant_y && (!is_q8(o->dtype) || (st = read_param(a, 7, o->dtype, &sy, &zy)) != MINFER_OK))
        return st ? st : FAIL(a, MINFER_ERR_TYPE, "QGemm: a quantized Y must be uint8 or int8");
    if (!quant_y && o->dtype != MINFER_DTYPE_FLOAT)
        return FAIL(a, MINFER_ERR_TYPE, "QGemm: Y without y_zero_point is float");
    const minfer_tensor_view *vs = vin(a, 4), *vz = vin(a, 5);
    size_t ns = vs->data ? numel(vs) : 0, nz = a->n_inputs > 5 && vz->data ? numel(vz) : 0;
    size_t N = (size_t)g.n, M = (size_t)g.m, K = (size_t)g.k;
    if (vs->dtype != MINFER_DTYPE_FLOAT || (ns != 1 && ns != N) || (nz && nz != ns) ||
        (nz && vz->dtype != w->dtype))
        return FAIL(a, MINFER_ERR_SHAPE, "QGemm: b_scale and b_zero_point must be one value or "
                    "one per column (N = %zu), b_zero_point of B's type", N);
    const minfer_tensor_view *c = a->n_inputs > 6 ? vin(a, 6) : NULL;
    size_t cn = c && c->data ? numel(c) : 0;
    int64_t c0 = c && c->rank >= 1 ? c->dims[0] : 1, c1 = c && c->rank == 2 ? c->dims[1] : 1;
    if (cn && (c->dtype != MINFER_DTYPE_INT32 || c->rank > 2 ||
               !(cn == 1 || (c->rank == 1 && cn == N) ||
                 (c->rank == 2 && (c0 == 1 || c0 == g.m) && (c1 == 1 || c1 == g.n)))))
        return FAIL(a, MINFER_ERR_SHAPE, "QGemm: C must be int32 broadcasting to [M, N]");
    if (M * N != 0 && !o->data)
        return FAIL(a, MINFER_ERR_MODEL, "QGemm: output Y has no storage");
    float alpha = minfer_kit_attr_float(a->api, a->node, "alpha", 1.0f);
    int32_t qmin = o->dtype == MINFER_DTYPE_UINT8 ? 0 : -128;
    int32_t qmax = o->dtype == MINFER_DTYPE_UINT8 ? 255 : 127;
    float lo = (float)(qmin - zy), hi = (float)(qmax - zy);
    /* A's rows and B's columns less their zero points, widened once into
     * int16 rows of K (B's per column), for a dot product per output;
     * without the memory, the element loop below. */
    int packed = qs && qs->bw && qs->n == N && qs->k == K;
    int16_t *aw = M && K && N ? malloc(M * K * sizeof *aw) : NULL;
    int16_t *own = aw && !packed ? malloc(N * K * sizeof *own) : NULL;
    const int16_t *bw = packed ? qs->bw : own;
    if (aw && bw) {
        widen_rows(x->data, x->dtype == MINFER_DTYPE_UINT8, M, K, g.ta, aw);
        for (size_t i = 0; i < M * K; i++)
            aw[i] = (int16_t)(aw[i] - za);
        if (own) {
            widen_rows(w->data, w->dtype == MINFER_DTYPE_UINT8, N, K, !g.tb, own);
            shift_cols(own, N, K, nz ? vz->data : NULL, w->dtype, nz);
        }
    }
    for (size_t j = 0; j < N; j++) {
        float sb = ((const float *)vs->data)[ns == 1 ? 0 : j];
        int32_t zb = nz ? qget(vz->data, w->dtype, nz == 1 ? 0 : j) : 0;
        float scale = alpha * sa * sb;
        if (quant_y)
            scale /= sy;
        for (size_t i = 0; i < M; i++) {
            int32_t acc = 0;
            if (cn) {
                size_t ci = cn == 1 ? 0
                            : c->rank == 1 ? j
                                           : (c0 == 1 ? 0 : i) * (size_t)c1 + (c1 == 1 ? 0 : j);
                acc = ((const int32_t *)c->data)[ci];
            }
            uint32_t sum = (uint32_t)acc;
            if (aw && bw) {
                sum += dot_i16(aw + i * K, bw + j * K, K);
            } else {
                for (size_t k = 0; k < K; k++) {
                    int32_t va = qget(x->data, x->dtype, g.ta ? k * M + i : i * K + k) - za;
                    int32_t vb = qget(w->data, w->dtype, g.tb ? j * K + k : k * N + j) - zb;
                    sum += (uint32_t)(va * vb);
                }
            }
            float f = (float)(int32_t)sum * scale;
            if (!quant_y) {
                ((float *)o->data)[i * N + j] = f;
                continue;
            }
            f = f > lo ? f : lo;
            f = f < hi ? f : hi;
            qput(o->data, o->dtype, i * N + j, round_i32(f) + zy);
        }
    }
    free(aw);
    free(own);
    return MINFER_OK;
}

/* ---- Ops through a 256-entry table: QLinearSigmoid, QLinearLeakyRelu,
 * QLinearConcat's requantized inputs ----
 * As ORT's QlinearBuildLookupTable: for every byte value x of the type,
 * v = sx * float(x - zx), f(v) in float, then QuantizeLinear as MLAS's
 * MlasQuantizeLinear: saturate(round_half_even(f / sy) + zy), clamped
 * before rounding (the same, the bounds being integers), a NaN giving the
 * low bound as MAXPS does. The table is indexed by the raw byte. */
enum lut_fn { LUT_IDENTITY, LUT_SIGMOID, LUT_LEAKYRELU };

/* MLAS's logistic (MlasComputeLogistic, the FMA3 kernel ORT runs on x86-64;
 * Eigen's coefficients): the input clamped to [-18, 18], an odd degree-9
 * over an even degree-10 polynomial in x, each a chain of fused
 * multiply-adds in x^2, + 0.5, clamped to [0, 1]. */
static float mlas_logistic(float x) {
    x = x > -18.0f ? x : -18.0f; /* a NaN becomes -18, as MAXPS does */
    x = x < 18.0f ? x : 18.0f;
    float x2 = x * x;
    float p = fmaf(x2, 4.37031012579801e-11f, 1.15627324459942e-07f);
    p = fmaf(p, x2, 6.08574864600143e-05f);
    p = fmaf(p, x2, 8.51377133304701e-03f);
    p = fmaf(p, x2, 2.48287947061529e-01f);
    p = p * x;
    float q = fmaf(x2, 6.10247389755681e-13f, 5.76102136993427e-09f);
    q = fmaf(q, x2, 6.29106785017040e-06f);
    q = fmaf(q, x2, 1.70198817374094e-03f);
    q = fmaf(q, x2, 1.16817656904453e-01f);
    q = fmaf(q, x2, 9.93151921023180e-01f);
    float y = p / q + 0.5f;
    y = y > 0.0f ? y : 0.0f;
    return y < 1.0f ? y : 1.0f;
}

static void lut_build(uint8_t *table, int32_t t, float sx, int32_t zx, float sy, int32_t zy,
                      enum lut_fn fn, float alpha) {
    int32_t qmin = t == MINFER_DTYPE_UINT8 ? 0 : -128, qmax = t == MINFER_DTYPE_UINT8 ? 255 : 127;
    float lo = (float)(qmin - zy), hi = (float)(qmax - zy);
    for (int32_t i = 0; i < 256; i++) {
        int32_t x = t == MINFER_DTYPE_UINT8 ? i : (int32_t)(int8_t)(uint8_t)i;
        float v = sx * (float)(x - zx);
        if (fn == LUT_SIGMOID)
            v = mlas_logistic(v);
        else if (fn == LUT_LEAKYRELU)
            v = v >= 0.0f ? v : alpha * v;
        float f = v / sy;
        f = f > lo ? f : lo; /* NaN: lo */
        f = f < hi ? f : hi;
        int32_t q = (int32_t)nearbyintf(f) + zy;
        table[i] = t == MINFER_DTYPE_UINT8 ? (uint8_t)q : (uint8_t)(int8_t)q;
    }
}

static void lut_apply(const uint8_t *table, const uint8_t *x, uint8_t *y, size_t n) {
    for (size_t i = 0; i < n; i++)
        y[i] = table[x[i]];
}

/* QLinearSigmoid / QLinearLeakyRelu: X, X_scale, X_zero_point?, Y_scale,
 * Y_zero_point?; LeakyRelu's alpha (default 0.01). */
static minfer_status lookup_infer(infer_args *a) {
    const minfer_value_desc *x = din(a->node, 0);
    minfer_status st;
    if (!x->present)
        return FAIL(a, MINFER_ERR_MODEL, "%s: X is required", a->node->op_type);
    if (x->dtype && !is_q8(x->dtype))
        return FAIL(a, MINFER_ERR_TYPE, "%s: X is %s, expected uint8 or int8", a->node->op_type,
                    minfer_elem_name(x->dtype));
    if (!has_in(a->node, 1) || !has_in(a->node, 3))
        return FAIL(a, MINFER_ERR_MODEL, "%s: X_scale (input 1) and Y_scale (input 3) are "
                    "required", a->node->op_type);
    if ((st = want_params(a, 1, x->dtype)) || (st = want_params(a, 3, x->dtype)))
        return st;
    out_like(&OUTV(a, 0), x, x->dtype);
    return MINFER_OK;
}

static minfer_status lookup_compute(compute_args *a, enum lut_fn fn) {
    const minfer_tensor_view *x = vin(a, 0);
    minfer_tensor_view *o = &OUTV(a, 0);
    if (a->n_outputs < 1 || !x->data || x->rank < 0 || !is_q8(x->dtype) || o->dtype != x->dtype)
        return FAIL(a, MINFER_ERR_MODEL, "%s: X (uint8 or int8) and Y of its type are required",
                    a->node->op_type);
    int32_t t = x->dtype, zx, zy;
    float sx, sy;
    minfer_status st;
    if ((st = read_param(a, 1, t, &sx, &zx)) || (st = read_param(a, 3, t, &sy, &zy)))
        return st;
    size_t n = numel(x);
    if (numel(o) != n || (n && !o->data))
        return FAIL(a, MINFER_ERR_SHAPE, "%s: Y must have X's %zu elements", a->node->op_type, n);
    float alpha = fn == LUT_LEAKYRELU ? minfer_kit_attr_float(a->api, a->node, "alpha", 0.01f) : 0;
    uint8_t table[256];
    lut_build(table, t, sx, zx, sy, zy, fn, alpha);
    lut_apply(table, x->data, o->data, n);
    return MINFER_OK;
}

minfer_status qlinear_sigmoid_infer(void *op, infer_args *a) {
    (void)op;
    return lookup_infer(a);
}
minfer_status qlinear_sigmoid_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return lookup_compute(a, LUT_SIGMOID);
}
minfer_status qlinear_leaky_relu_infer(void *op, infer_args *a) {
    (void)op;
    return lookup_infer(a);
}
minfer_status qlinear_leaky_relu_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    return lookup_compute(a, LUT_LEAKYRELU);
}

/* QLinearConcat: Y_scale, Y_zero_point, then (X_i, X_i_scale,
 * X_i_zero_point) per input; axis (negative counts from the end). An input
 * whose scale and zero point equal Y's is copied, any other requantized
 * through a table (as ORT's QLinearConcat). */
static int concat_axis(infer_args *ia, compute_args *ca, int32_t rank, int64_t *axis) {
    const minfer_host_api *api = ia ? ia->api : ca->api;
    const minfer_node_desc *node = ia ? ia->node : ca->node;
    int64_t ax = minfer_kit_attr_int(api, node, "axis", 0);
    if (ax < -(int64_t)rank || ax >= rank)
        return -1;
    *axis = ax < 0 ? ax + rank : ax;
    return 0;
}

minfer_status qlinear_concat_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *nd = a->node;
    minfer_status st;
    if (nd->n_inputs < 5 || (nd->n_inputs - 2) % 3 != 0)
        return FAIL(a, MINFER_ERR_MODEL, "QLinearConcat: %zu inputs, expected Y_scale, "
                    "Y_zero_point and a (tensor, scale, zero point) triple per input",
                    nd->n_inputs);
    size_t n_x = (nd->n_inputs - 2) / 3;
    int32_t t = has_in(nd, 1) ? din(nd, 1)->dtype : 0;
    for (size_t k = 0; k < n_x && !t; k++)
        t = din(nd, 2 + 3 * k)->dtype;
    if (t && !is_q8(t))
        return FAIL(a, MINFER_ERR_TYPE, "QLinearConcat: Y is %s, expected uint8 or int8",
                    minfer_elem_name(t));
    if (!has_in(nd, 0))
        return FAIL(a, MINFER_ERR_MODEL, "QLinearConcat: Y_scale (input 0) is required");
    if ((st = want_params(a, 0, t)) != MINFER_OK)
        return st;
    int32_t rank = -1;
    int64_t d[MINFER_MAX_RANK], axis = 0;
    for (size_t k = 0; k < n_x; k++) {
        size_t i = 2 + 3 * k;
        if (!has_in(nd, i + 1))
            return FAIL(a, MINFER_ERR_MODEL, "QLinearConcat: input %zu (X_%zu's scale) is "
                        "required", i + 1, k);
        if ((st = want_q8(a, i, t ? t : din(nd, i)->dtype)) || (st = want_params(a, i + 1, t)))
            return st;
        const minfer_value_desc *x = din(nd, i);
        if (x->rank < 0)
            continue;
        if (rank < 0) {
            rank = x->rank;
            if (rank == 0 || concat_axis(a, NULL, rank, &axis))
                return FAIL(a, MINFER_ERR_SHAPE, "QLinearConcat: axis %lld is outside X_%zu's "
                            "rank %d", (long long)minfer_kit_attr_int(a->api, nd, "axis", 0), k,
                            rank);
            memcpy(d, x->dims, (size_t)rank * sizeof *d);
            continue;
        }
        if (x->rank != rank)
            return FAIL(a, MINFER_ERR_SHAPE, "QLinearConcat: input %zu (X_%zu) has rank %d, "
                        "the first known input has rank %d", i, k, x->rank, rank);
        for (int32_t j = 0; j < rank; j++) {
            if (j == axis) {
                d[j] = d[j] < 0 || x->dims[j] < 0 ? -1 : d[j] + x->dims[j];
                continue;
            }
            if (d[j] >= 0 && x->dims[j] >= 0 && d[j] != x->dims[j])
                return FAIL(a, MINFER_ERR_SHAPE, "QLinearConcat: input %zu (X_%zu) has dim %d = "
                            "%lld, the others %lld (only axis %lld may differ)", i, k, j,
                            (long long)x->dims[j], (long long)d[j], (long long)axis);
            if (d[j] < 0)
                d[j] = x->dims[j];
        }
    }
    /* an input of unknown rank leaves the concatenated dim unknown */
    for (size_t k = 0; k < n_x && rank > 0; k++)
        if (din(nd, 2 + 3 * k)->rank < 0)
            d[axis] = -1;
    out_shape(&OUTV(a, 0), t, rank, rank < 0 ? NULL : d);
    return MINFER_OK;
}

minfer_status qlinear_concat_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    minfer_tensor_view *o = &OUTV(a, 0);
    if (a->n_outputs < 1 || a->n_inputs < 5 || (a->n_inputs - 2) % 3 != 0 || !is_q8(o->dtype) ||
        o->rank < 1)
        return FAIL(a, MINFER_ERR_MODEL, "QLinearConcat: Y (uint8 or int8, rank 1+) and a "
                    "(tensor, scale, zero point) triple per input are required");
    int32_t t = o->dtype, zy;
    float sy;
    minfer_status st;
    if ((st = read_param(a, 0, t, &sy, &zy)) != MINFER_OK)
        return st;
    int64_t axis;
    if (concat_axis(NULL, a, o->rank, &axis))
        return FAIL(a, MINFER_ERR_SHAPE, "QLinearConcat: axis is outside Y's rank %d", o->rank);
    size_t n_x = (a->n_inputs - 2) / 3;
    int64_t sum = 0;
    for (size_t k = 0; k < n_x; k++) {
        const minfer_tensor_view *x = vin(a, 2 + 3 * k);
        if (!x->data && x->rank >= 0 && numel(x) == 0 && x->dtype == t) {
            /* an empty input: no storage needed */
        } else if (!x->data || x->dtype != t) {
            return FAIL(a, MINFER_ERR_TYPE, "QLinearConcat: input %zu (X_%zu) must be a %s "
                        "tensor", 2 + 3 * k, k, minfer_elem_name(t));
        }
        if (x->rank != o->rank)
            return FAIL(a, MINFER_ERR_SHAPE, "QLinearConcat: input %zu (X_%zu) has rank %d, Y %d",
                        2 + 3 * k, k, x->rank, o->rank);
        for (int32_t j = 0; j < o->rank; j++)
            if (j != axis && x->dims[j] != o->dims[j])
                return FAIL(a, MINFER_ERR_SHAPE, "QLinearConcat: input %zu (X_%zu) has dim %d = "
                            "%lld, Y %lld", 2 + 3 * k, k, j, (long long)x->dims[j],
                            (long long)o->dims[j]);
        sum += x->dims[axis];
    }
    if (sum != o->dims[axis])
        return FAIL(a, MINFER_ERR_SHAPE, "QLinearConcat: the inputs' dims along axis %lld sum to "
                    "%lld, Y's is %lld", (long long)axis, (long long)sum,
                    (long long)o->dims[axis]);
    size_t total = numel(o);
    if (total && !o->data)
        return FAIL(a, MINFER_ERR_MODEL, "QLinearConcat: output Y has no storage");
    size_t outer = 1, inner = 1;
    for (int32_t j = 0; j < axis; j++)
        outer *= (size_t)o->dims[j];
    for (int32_t j = (int32_t)axis + 1; j < o->rank; j++)
        inner *= (size_t)o->dims[j];
    size_t row = (size_t)o->dims[axis] * inner, at = 0;
    uint8_t table[256];
    for (size_t k = 0; k < n_x; k++) {
        const minfer_tensor_view *x = vin(a, 2 + 3 * k);
        size_t span = (size_t)x->dims[axis] * inner;
        if (!span || !outer) {
            continue;
        }
        float sx;
        int32_t zx;
        if ((st = read_param(a, 3 + 3 * k, t, &sx, &zx)) != MINFER_OK)
            return st;
        int copy = sx == sy && zx == zy;
        if (!copy)
            lut_build(table, t, sx, zx, sy, zy, LUT_IDENTITY, 0);
        const uint8_t *src = x->data;
        uint8_t *dst = (uint8_t *)o->data + at;
        for (size_t r = 0; r < outer; r++) {
            if (copy)
                memcpy(dst + r * row, src + r * span, span);
            else
                lut_apply(table, src + r * span, dst + r * row, span);
        }
        at += span;
    }
    return MINFER_OK;
}

/* QLinearAveragePool: X, x_scale, x_zero_point?, y_scale, y_zero_point?;
 * kernel_shape, strides, pads, auto_pad, ceil_mode, count_include_pad,
 * channels_last; 1 to 3 spatial dims. As ORT's qlinear_pool.cc: X
 * dequantized to float (sx * float(x - zx)), each window summed in float
 * in row-major order over the window's part inside the image, divided by
 * the kernel's size (count_include_pad) or that part's, then
 * saturate(round_half_even(v / sy + float(zy))): the zero point added
 * before rounding, unlike QuantizeLinear. */
static minfer_status avgpool_geom(const minfer_host_api *api, const minfer_node_desc *n,
                                  int32_t rank, const int64_t *dims, int last, conv_geom *g,
                                  char *err, size_t es) {
    int64_t in[3];
    int nd = (int)rank - 2;
    if (nd < 1 || nd > 3) {
        snprintf(err, es, "QLinearAveragePool: X has rank %d, expected 3 to 5", rank);
        return MINFER_ERR_SHAPE;
    }
    for (int i = 0; i < nd; i++)
        in[i] = dims[last ? 1 + i : 2 + i];
    const int64_t *ks;
    if (minfer_kit_attr_ints_ref(api, n, "kernel_shape", &ks) != (size_t)nd) {
        snprintf(err, es, "QLinearAveragePool: kernel_shape must have %d values", nd);
        return MINFER_ERR_MODEL;
    }
    return conv_geom_make(api, n, nd, in, NULL,
                          minfer_kit_attr_int(api, n, "ceil_mode", 0) != 0, g, err, es);
}

static void avgpool_out_dims(const int64_t *xd, int32_t rank, int last, const conv_geom *g,
                             int64_t *d) {
    d[0] = xd[0];
    d[last ? rank - 1 : 1] = xd[last ? rank - 1 : 1];
    for (int i = 0; i < g->nd; i++)
        d[last ? 1 + i : 2 + i] = g->out[i];
}

minfer_status qlinear_avgpool_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_value_desc *x = din(a->node, 0);
    minfer_status st;
    if (!x->present)
        return FAIL(a, MINFER_ERR_MODEL, "QLinearAveragePool: X is required");
    if (x->dtype && !is_q8(x->dtype))
        return FAIL(a, MINFER_ERR_TYPE, "QLinearAveragePool: X is %s, expected uint8 or int8",
                    minfer_elem_name(x->dtype));
    if (!has_in(a->node, 1) || !has_in(a->node, 3))
        return FAIL(a, MINFER_ERR_MODEL, "QLinearAveragePool: x_scale (input 1) and y_scale "
                    "(input 3) are required");
    if ((st = want_params(a, 1, x->dtype)) || (st = want_params(a, 3, x->dtype)))
        return st;
    minfer_tensor_view *o = &OUTV(a, 0);
    if (x->rank < 0) {
        out_shape(o, x->dtype, -1, NULL);
        return MINFER_OK;
    }
    int last = minfer_kit_attr_int(a->api, a->node, "channels_last", 0) != 0;
    conv_geom g;
    if ((st = avgpool_geom(a->api, a->node, x->rank, x->dims, last, &g, a->err, a->err_size)))
        return st;
    int64_t d[MINFER_MAX_RANK];
    avgpool_out_dims(x->dims, x->rank, last, &g, d);
    out_shape(o, x->dtype, x->rank, d);
    return MINFER_OK;
}

minfer_status qlinear_avgpool_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_tensor_view *x = vin(a, 0);
    minfer_tensor_view *o = &OUTV(a, 0);
    if (a->n_outputs < 1 || !x->data || x->rank < 3 || x->rank > 5 || !is_q8(x->dtype) ||
        o->dtype != x->dtype || o->rank != x->rank)
        return FAIL(a, MINFER_ERR_MODEL, "QLinearAveragePool: X (rank 3 to 5, uint8 or int8) "
                    "and Y of its type and rank are required");
    int32_t t = x->dtype, zx, zy;
    float sx, sy;
    minfer_status st;
    if ((st = read_param(a, 1, t, &sx, &zx)) || (st = read_param(a, 3, t, &sy, &zy)))
        return st;
    int last = minfer_kit_attr_int(a->api, a->node, "channels_last", 0) != 0;
    conv_geom g;
    if ((st = avgpool_geom(a->api, a->node, x->rank, x->dims, last, &g, a->err, a->err_size)))
        return st;
    int64_t d[MINFER_MAX_RANK];
    avgpool_out_dims(x->dims, x->rank, last, &g, d);
    if (memcmp(d, o->dims, (size_t)x->rank * sizeof *d))
        return FAIL(a, MINFER_ERR_SHAPE, "QLinearAveragePool: Y's shape is not the pooled X's");
    size_t n_out = numel(o);
    if (!n_out)
        return MINFER_OK;
    if (!o->data)
        return FAIL(a, MINFER_ERR_MODEL, "QLinearAveragePool: output Y has no storage");
    /* spatial sizes padded to 3 dims (1, kernel 1, stride 1) */
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
            pb[3] = {0, 0, 0};
    for (int i = 0; i < g.nd; i++)
        in[i] = g.in[i], out[i] = g.out[i], k[i] = g.k[i], s[i] = g.s[i], pb[i] = g.pb[i];
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[last ? x->rank - 1 : 1];
    size_t img = (size_t)(in[0] * in[1] * in[2]), oimg = (size_t)(out[0] * out[1] * out[2]);
    /* element (n, c, spatial p) of X sits at n C img + (last ? p C + c : c img + p) */
    size_t cs = last ? 1 : img, ps = last ? C : 1, ocs = last ? 1 : oimg, ops = last ? C : 1;
    int incl = minfer_kit_attr_int(a->api, a->node, "count_include_pad", 0) != 0;
    float ksize = (float)(k[0] * k[1] * k[2]);
    float lo = t == MINFER_DTYPE_UINT8 ? 0.0f : -128.0f, hi = t == MINFER_DTYPE_UINT8 ? 255.0f : 127.0f;
    float deq[256];
    for (int32_t i = 0; i < 256; i++) {
        int32_t v = t == MINFER_DTYPE_UINT8 ? i : (int32_t)(int8_t)(uint8_t)i;
        deq[i] = sx * (float)(v - zx);
    }
    const uint8_t *xb = x->data;
    uint8_t *yb = o->data;
    for (size_t nb = 0; nb < N; nb++)
        for (size_t c = 0; c < C; c++) {
            const uint8_t *xc = xb + nb * C * img + c * cs;
            uint8_t *yc = yb + nb * C * oimg + c * ocs;
            for (int64_t p0 = 0; p0 < out[0]; p0++) {
                int64_t h0 = p0 * s[0] - pb[0], h1 = h0 + k[0] < in[0] ? h0 + k[0] : in[0];
                h0 = h0 > 0 ? h0 : 0;
                for (int64_t p1 = 0; p1 < out[1]; p1++) {
                    int64_t w0 = p1 * s[1] - pb[1], w1 = w0 + k[1] < in[1] ? w0 + k[1] : in[1];
                    w0 = w0 > 0 ? w0 : 0;
                    for (int64_t p2 = 0; p2 < out[2]; p2++) {
                        int64_t e0 = p2 * s[2] - pb[2], e1 = e0 + k[2] < in[2] ? e0 + k[2] : in[2];
                        e0 = e0 > 0 ? e0 : 0;
                        float sum = 0.0f;
                        for (int64_t h = h0; h < h1; h++)
                            for (int64_t w = w0; w < w1; w++)
                                for (int64_t e = e0; e < e1; e++)
                                    sum += deq[xc[(size_t)((h * in[1] + w) * in[2] + e) * ps]];
                        int64_t cnt = (h1 > h0 ? h1 - h0 : 0) * (w1 > w0 ? w1 - w0 : 0) *
                                      (e1 > e0 ? e1 - e0 : 0);
                        float v = sum / (incl ? ksize : (float)cnt);
                        float f = nearbyintf(v / sy + (float)zy);
                        f = f > lo ? f : lo; /* NaN (an empty window): lo */
                        f = f < hi ? f : hi;
                        size_t at = (size_t)((p0 * out[1] + p1) * out[2] + p2) * ops;
                        if (t == MINFER_DTYPE_UINT8)
                            yc[at] = (uint8_t)(int32_t)f;
                        else
                            yc[at] = (uint8_t)(int8_t)(int32_t)f;
                    }
                }
            }
        }
    return MINFER_OK;
}
