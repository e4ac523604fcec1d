/*
 * The integer GEMM under ConvInteger, QLinearConv, MatMulInteger and
 * QLinearMatMul, and the requantization of QLinearConv/QLinearMatMul.
 *
 * Operands are 8-bit (int8 or uint8) with zero points; each is first
 * widened to int16 with its zero point subtracted (x - zp lies in
 * [-255, 255]), so that a product fits in int32 and the loops are plain
 * int16 x int16 -> int32 multiply-adds. B comes transposed (each column of
 * B a row of K), so every element of C is a dot product along K of two
 * contiguous rows, the loop GCC vectorises into widening multiply-adds
 * (pmaddwd on x86-64). Register blocking: 4 rows of A against 2 rows of
 * B^T per loop (eight accumulators, six loads per eight multiply-adds);
 * 64 x 64 blocks of C are the parallel work items.
 * Sums are ONNX Runtime's int32 ones: K is cut into chunks short enough
 * that a chunk's sum cannot overflow, and the chunks add with wrapping.
 *
 * Requantization is MLAS's (MlasRequantizeOutput), in float: the int32
 * accumulator plus the int32 bias, converted to float, times the float
 * multiplier x_scale * w_scale / y_scale (computed in float, in that
 * order, as ORT's kernels do), clamped to [qmin - zp, qmax - zp], rounded
 * to nearest even, plus the zero point.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"

#define QMB 64 /* rows of C per work item */
#define QNB 64 /* columns of C per work item */

typedef struct qgemm_args {
    size_t M, N, K, lda, ldb, ldc;
    const int16_t *A, *B; /* B transposed: N rows of K */
    int32_t *C;
    size_t mblocks;
} qgemm_args;

/* K is cut into chunks of KC: a chunk's sum of products of values in
 * [-255, 255] stays below 2^31 (32768 * 255 * 255 < 2^31 - 1), so the
 * vectorised loops accumulate in plain int32; chunks add with wrapping. */
#define KC 32768

static inline int32_t wrap_add(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* The sums of rows i..i+3 of A with rows j, j+1 of B^T, added to c: eight
 * dot products over K in one loop, which GCC turns into widening
 * multiply-adds (pmaddwd) with eight vector accumulators. */
static void dot4x2(const int16_t *a, size_t lda, const int16_t *b, size_t ldb, size_t K,
                   int32_t *c, size_t ldc) {
    const int16_t *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda;
    const int16_t *b0 = b, *b1 = b + ldb;
    int32_t s00 = 0, s01 = 0, s10 = 0, s11 = 0, s20 = 0, s21 = 0, s30 = 0, s31 = 0;
    for (size_t k = 0; k < K; k++) {
        s00 += a0[k] * b0[k];
        s01 += a0[k] * b1[k];
        s10 += a1[k] * b0[k];
        s11 += a1[k] * b1[k];
        s20 += a2[k] * b0[k];
        s21 += a2[k] * b1[k];
        s30 += a3[k] * b0[k];
        s31 += a3[k] * b1[k];
    }
    c[0] = wrap_add(c[0], s00), c[1] = wrap_add(c[1], s01);
    c[ldc] = wrap_add(c[ldc], s10), c[ldc + 1] = wrap_add(c[ldc + 1], s11);
    c[2 * ldc] = wrap_add(c[2 * ldc], s20), c[2 * ldc + 1] = wrap_add(c[2 * ldc + 1], s21);
    c[3 * ldc] = wrap_add(c[3 * ldc], s30), c[3 * ldc + 1] = wrap_add(c[3 * ldc + 1], s31);
}

static int32_t dot1(const int16_t *a, const int16_t *b, size_t K) {
    int32_t s = 0;
    for (size_t k = 0; k < K; k++)
        s += a[k] * b[k];
    return s;
}

static void qgemm_item(const qgemm_args *g, size_t item) {
    size_t ib = item % g->mblocks, jb = item / g->mblocks;
    size_t i0 = ib * QMB, i1 = i0 + QMB < g->M ? i0 + QMB : g->M;
    size_t j0 = jb * QNB, j1 = j0 + QNB < g->N ? j0 + QNB : g->N;
    size_t lda = g->lda, ldb = g->ldb, ldc = g->ldc;
    for (size_t i = i0; i < i1; i++)
        memset(g->C + i * ldc + j0, 0, (j1 - j0) * sizeof *g->C);
    for (size_t k0 = 0; k0 < g->K; k0 += KC) {
        size_t K = g->K - k0 < KC ? g->K - k0 : KC;
        const int16_t *A = g->A + k0, *B = g->B + k0;
        size_t i = i0;
        for (; i + 4 <= i1; i += 4) {
            size_t j = j0;
            for (; j + 2 <= j1; j += 2)
                dot4x2(A + i * lda, lda, B + j * ldb, ldb, K, g->C + i * ldc + j, ldc);
            for (; j < j1; j++)
                for (size_t r = 0; r < 4; r++) {
                    int32_t *c = &g->C[(i + r) * ldc + j];
                    *c = wrap_add(*c, dot1(A + (i + r) * lda, B + j * ldb, K));
                }
        }
        for (; i < i1; i++)
            for (size_t j = j0; j < j1; j++) {
                int32_t *c = &g->C[i * ldc + j];
                *c = wrap_add(*c, dot1(A + i * lda, B + j * ldb, K));
            }
    }
}

static void qgemm_range(void *arg, size_t begin, size_t end) {
    for (size_t it = begin; it < end; it++)
        qgemm_item(arg, it);
}

void cpu_qgemm16(const cpu_ctx *ctx, int parallel, size_t M, size_t N, size_t K,
                 const int16_t *A, size_t lda, const int16_t *BT, size_t ldb, int32_t *C,
                 size_t ldc) {
    if (M == 0 || N == 0)
        return;
    qgemm_args g = {M, N, K, lda, ldb, ldc, A, BT, C, (M + QMB - 1) / QMB};
    size_t items = g.mblocks * ((N + QNB - 1) / QNB);
    if (parallel && ctx)
        cpu_parallel(ctx, items, 1, qgemm_range, &g);
    else
        qgemm_range(&g, 0, items);
}

/* ---- Widening ------------------------------------------------------------ */

void cpu_q_widen(const void *src, int32_t dtype, int32_t zp, int16_t *dst, size_t n) {
    if (dtype == MINFER_DTYPE_UINT8) {
        const uint8_t *s = src;
        for (size_t i = 0; i < n; i++)
            dst[i] = (int16_t)((int32_t)s[i] - zp);
    } else {
        const int8_t *s = src;
        for (size_t i = 0; i < n; i++)
            dst[i] = (int16_t)((int32_t)s[i] - zp);
    }
}

int32_t cpu_q_zero_point(const minfer_tensor_view *z, size_t k) {
    if (!z)
        return 0;
    size_t n = (size_t)minfer_kit_numel(z->rank, z->dims);
    if (n == 0)
        return 0;
    const void *d = cpu_data(z);
    size_t i = n == 1 ? 0 : k;
    switch (z->dtype) {
    case MINFER_DTYPE_UINT8:
        return ((const uint8_t *)d)[i];
    case MINFER_DTYPE_INT8:
        return ((const int8_t *)d)[i];
    case MINFER_DTYPE_INT32:
        return ((const int32_t *)d)[i];
    default:
        return (int32_t)cpu_get(d, z->dtype, i);
    }
}

/* ---- Requantization -------------------------------------------------------- */

float cpu_q_round_even(float v) {
    /* nearbyintf in the default rounding mode rounds half to even */
    return nearbyintf(v);
}

void cpu_q_requant(const int32_t *acc, size_t n, int32_t bias, float multiplier, int32_t zp,
                   int32_t dtype, void *out) {
    int32_t qmin = dtype == MINFER_DTYPE_UINT8 ? 0 : -128;
    int32_t qmax = dtype == MINFER_DTYPE_UINT8 ? 255 : 127;
    float lo = (float)(qmin - zp), hi = (float)(qmax - zp);
    for (size_t i = 0; i < n; i++) {
        int32_t a = (int32_t)((uint32_t)acc[i] + (uint32_t)bias);
        float f = (float)a * multiplier;
        f = f > lo ? f : lo; /* NaN (a NaN scale) too */
        f = f < hi ? f : hi;
        int32_t q = (int32_t)cpu_q_round_even(f) + zp;
        if (dtype == MINFER_DTYPE_UINT8)
            ((uint8_t *)out)[i] = (uint8_t)q;
        else
            ((int8_t *)out)[i] = (int8_t)q;
    }
}
