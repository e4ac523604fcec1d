/*
 * Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger and QLinearMatMul (the quantized convolutions are in
 * conv.c).
 *
 * As ONNX Runtime's kernels (MlasQuantizeLinear, DequantizeLinear):
 * quantize is saturate(round_half_even(x / scale) + zero_point), x / scale
 * in the input's precision; dequantize float(x - zero_point) * scale in
 * float (double for a double scale is not an ONNX type before opset 19). Scales and zero
 * points are per tensor, or per slice along 'axis' (1-D of that length).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cpu.h"

typedef struct quant_state {
    int64_t axis;
    int32_t out_dtype; /* QuantizeLinear without zero point: uint8 */
} quant_state;

minfer_status cpu_prepare_quant(cpu_prep *p) {
    quant_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = cpu_attr_int(p, "axis", 1);
    if (cpu_has_attr(p, "saturate") || cpu_has_attr(p, "block_size"))
        return cpu_decline(p, "opset 19+ attributes not supported");
    return MINFER_OK;
}

/* Index into a scale/zero-point tensor for element i of x. */
static minfer_status param_index(const cpu_exec *e, const minfer_tensor_view *x,
                                 const minfer_tensor_view *prm, int64_t axis, size_t *inner,
                                 size_t *len) {
    int64_t n = minfer_kit_numel(prm->rank, prm->dims);
    *inner = 0;
    *len = 1;
    if (n == 1 && prm->rank <= 1)
        return MINFER_OK;
    int a = minfer_kit_axis(axis, x->rank);
    if (a < 0 || prm->rank != 1 || n != x->dims[a])
        return cpu_fail(e, MINFER_ERR_SHAPE, "scale/zero point must be a scalar or 1-D along axis");
    *inner = (size_t)minfer_kit_numel(x->rank - a - 1, x->dims + a + 1);
    *len = (size_t)n;
    return MINFER_OK;
}

static size_t at(size_t i, size_t inner, size_t len) {
    return inner ? (i / inner) % len : 0;
}

/* x / scale, rounded to float first for float inputs: the reference divides
 * in the input's precision, and the result can sit on a rounding edge. */
static double divide(int32_t dtype, double v, double scale) {
    if (dtype == MINFER_DTYPE_DOUBLE)
        return v / scale;
    return (double)((float)v / (float)scale);
}

/* Float x with one scale and zero point into uint8 or int8, as
 * QuantizeLinear's general loop (cpu_compute_quantize) and
 * DynamicQuantizeLinear compute it (float division, round half to even,
 * saturation; a NaN gives nan_to), four at a time with SSE2 (gcc left
 * the plain loop scalar at -O2 and -O3): clamped to the zero point's
 * range first (lo and hi are integers, so clamping and rounding commute),
 * rounded by adding and subtracting 1.5 * 2^23 (exact for |q| <= 2^22, in the default rounding mode: half
 * to even). */
static void quantize_float(const float *x, size_t n, float scale, int32_t z, int is_u8,
                           int32_t nan_to, void *y) {
    const float lo = (float)((is_u8 ? 0 : -128) - z), hi = (float)((is_u8 ? 255 : 127) - z);
    const float magic = 12582912.0f;
    size_t i0 = 0;
#ifdef __SSE2__
    /* Four at a time: _mm_max_ps(q, lo) is `q > lo ? q : lo` and
     * _mm_min_ps `q < hi ? q : hi`, the scalar loop's clamps (a NaN is
     * replaced after by its mask); the sums are in range, so the packs
     * do not saturate. */
    {
        const __m128 vs = _mm_set1_ps(scale), vlo = _mm_set1_ps(lo), vhi = _mm_set1_ps(hi),
                     vm = _mm_set1_ps(magic);
        const __m128i vz = _mm_set1_epi32(z), vnan = _mm_set1_epi32(nan_to);
        for (; i0 + 4 <= n; i0 += 4) {
            __m128 q = _mm_div_ps(_mm_loadu_ps(x + i0), vs);
            __m128i isnan = _mm_castps_si128(_mm_cmpunord_ps(q, q));
            q = _mm_min_ps(_mm_max_ps(q, vlo), vhi);
            q = _mm_sub_ps(_mm_add_ps(q, vm), vm);
            __m128i v = _mm_add_epi32(_mm_cvttps_epi32(q), vz);
            v = _mm_or_si128(_mm_and_si128(isnan, vnan), _mm_andnot_si128(isnan, v));
            __m128i h = _mm_packs_epi32(v, v);
            __m128i b8 = is_u8 ? _mm_packus_epi16(h, h) : _mm_packs_epi16(h, h);
            int32_t four = _mm_cvtsi128_si32(b8);
            memcpy((char *)y + i0, &four, 4);
        }
    }
#endif
#define QUANTIZE_LOOP(T)                                                                        \
    do {                                                                                        \
        T *yt = y;                                                                              \
        for (size_t i = i0; i < n; i++) {                                                       \
            float q = x[i] / scale;                                                             \
            int nan = q != q;                                                                   \
            q = q < lo ? lo : q;                                                                \
            q = q > hi ? hi : q;                                                                \
            int32_t v = (int32_t)((q + magic) - magic) + z;                                     \
            yt[i] = (T)(nan ? nan_to : v);                                                      \
        }                                                                                       \
    } while (0)
    if (is_u8)
        QUANTIZE_LOOP(uint8_t);
    else
        QUANTIZE_LOOP(int8_t);
#undef QUANTIZE_LOOP
}

minfer_status cpu_compute_quantize(const cpu_exec *e) {
    const quant_state *st = e->state;
    int dequant = strcmp(e->args->node->op_type, "DequantizeLinear") == 0;
    const minfer_tensor_view *x = cpu_input(e, 0), *sc = cpu_input(e, 1), *zp = cpu_input(e, 2);
    if (!x || !sc)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "needs x and scale");
    size_t si, sl, zi = 0, zl = 1;
    minfer_status s = param_index(e, x, sc, st->axis, &si, &sl);
    if (s || (zp && (s = param_index(e, x, zp, st->axis, &zi, &zl)) != MINFER_OK))
        return s;
    int32_t ot = dequant ? sc->dtype : zp ? zp->dtype : MINFER_DTYPE_UINT8;
    void *y;
    if ((s = cpu_output(e, 0, ot, x->rank, x->dims, &y)) != MINFER_OK)
        return s;
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    const void *xd = cpu_data(x), *sd = cpu_data(sc), *zd = zp ? cpu_data(zp) : NULL;
    if (!dequant && x->dtype == MINFER_DTYPE_FLOAT && sc->dtype == MINFER_DTYPE_FLOAT && !si &&
        !zi && (ot == MINFER_DTYPE_UINT8 || ot == MINFER_DTYPE_INT8)) {
        float scale = *(const float *)sd;
        int32_t z = !zd ? 0 : ot == MINFER_DTYPE_UINT8 ? *(const uint8_t *)zd : *(const int8_t *)zd;
        quantize_float(xd, n, scale, z, ot == MINFER_DTYPE_UINT8, 0, y);
        return MINFER_OK;
    }
    for (size_t i = 0; i < n; i++) {
        double scale = cpu_get(sd, sc->dtype, at(i, si, sl));
        double z = zd ? cpu_get(zd, zp->dtype, at(i, zi, zl)) : 0;
        double v = cpu_get(xd, x->dtype, i);
        /* Dequantize as ORT: float(x - zero_point) * scale, in float (an
         * int32 x beyond 2^24 rounds before the product). */
        cpu_set(y, ot, i, dequant ? (double)((float)(v - z) * (float)scale)
                                  : nearbyint(divide(x->dtype, v, scale)) + z);
    }
    return MINFER_OK;
}

/* uint8 quantization from the data's range, which always includes 0, as
 * ONNX Runtime computes it (GetQuantizationParameter, all in float):
 * scale = (max - min) / 255, or 1 when max == min (all zeros); zero point =
 * round_half_even(clamp(0 - min / scale, 0, 255)); then each element as
 * QuantizeLinear does (MlasQuantizeLinear): round_half_even(x / scale) +
 * zero point, saturated. A NaN element is skipped by the range (as
 * MLAS's min/max comparisons skip it) and quantizes to the zero point. */
minfer_status cpu_compute_dynamic_quantize(const cpu_exec *e) {
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x || !cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "x must be a float tensor");
    void *y, *ys, *yz;
    minfer_status s;
    if ((s = cpu_output(e, 0, MINFER_DTYPE_UINT8, x->rank, x->dims, &y)) != MINFER_OK ||
        (s = cpu_output(e, 1, MINFER_DTYPE_FLOAT, 0, NULL, &ys)) != MINFER_OK ||
        (s = cpu_output(e, 2, MINFER_DTYPE_UINT8, 0, NULL, &yz)) != MINFER_OK)
        return s;
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    const void *xd = cpu_data(x);
    const float *xf = x->dtype == MINFER_DTYPE_FLOAT ? xd : NULL;
    float lo = 0, hi = 0;
    if (xf) {
        /* Eight running minima and maxima, each `v < m ? v : m` (which
         * skips NaNs in any order): _mm_min_ps(v, m) is exactly that. */
        float l8[8] = {0}, h8[8] = {0};
        size_t i = 0;
#ifdef __SSE2__
        __m128 l0 = _mm_setzero_ps(), l1 = l0, h0 = l0, h1 = l0;
        for (; i + 8 <= n; i += 8) {
            __m128 a = _mm_loadu_ps(xf + i), b = _mm_loadu_ps(xf + i + 4);
            l0 = _mm_min_ps(a, l0), l1 = _mm_min_ps(b, l1);
            h0 = _mm_max_ps(a, h0), h1 = _mm_max_ps(b, h1);
        }
        _mm_storeu_ps(l8, l0), _mm_storeu_ps(l8 + 4, l1);
        _mm_storeu_ps(h8, h0), _mm_storeu_ps(h8 + 4, h1);
#endif
        for (; i < n; i++) {
            lo = xf[i] < lo ? xf[i] : lo;
            hi = xf[i] > hi ? xf[i] : hi;
        }
        for (int j = 0; j < 8; j++) {
            lo = l8[j] < lo ? l8[j] : lo;
            hi = h8[j] > hi ? h8[j] : hi;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            float v = (float)cpu_get(xd, x->dtype, i);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
    float z0 = 0.0f - lo / scale;
    z0 = z0 < 0.0f ? 0.0f : z0 > 255.0f ? 255.0f : z0;
    float z = cpu_q_round_even(z0);
    *(float *)ys = scale;
    *(uint8_t *)yz = (uint8_t)z;
    uint8_t *yd = y;
    if (xf) {
        quantize_float(xf, n, scale, (int32_t)z, 1, (int32_t)z, y);
        return MINFER_OK;
    }
    for (size_t i = 0; i < n; i++) {
        float v = cpu_q_round_even((xf ? xf[i] : (float)cpu_get(xd, x->dtype, i)) / scale) + z;
        if (v != v) {
            yd[i] = (uint8_t)z;
            continue;
        }
        v = v > 0.0f ? v : 0.0f;
        v = v < 255.0f ? v : 255.0f;
        yd[i] = (uint8_t)v;
    }
    return MINFER_OK;
}

/* ---- MatMulInteger, QLinearMatMul ------------------------------------------
 * numpy matmul of (a - a_zero_point) and (b - b_zero_point): 1-D operands
 * are promoted and the batch dims broadcast. Zero points (and
 * QLinearMatMul's scales) may be per row of a ([M]) or per column of b
 * ([N]). Per batch, both operands are widened to int16 less their zero
 * points and multiplied by the integer GEMM (qgemm.c); QLinearMatMul
 * requantizes as MLAS does, with the multiplier a_scale * b_scale / y_scale
 * in float. */

typedef struct qmm_geom {
    int64_t M, K, N;
    int32_t batch_r, orank;
    int64_t batch[CPU_MAX_RANK + 1], ad[CPU_MAX_RANK + 1], bd[CPU_MAX_RANK + 1], od[CPU_MAX_RANK + 2];
    int32_t ar, br;
} qmm_geom;

/* -1: shapes do not multiply; -2: output rank too large. */
static int qmm_geometry(int32_t ra, const int64_t *da, int32_t rb, const int64_t *db,
                        qmm_geom *g) {
    if (ra < 1 || rb < 1 || ra > CPU_MAX_RANK || rb > CPU_MAX_RANK)
        return -1;
    memcpy(g->ad, da, (size_t)ra * sizeof *da);
    memcpy(g->bd, db, (size_t)rb * sizeof *db);
    g->ar = ra, g->br = rb;
    if (ra == 1) {
        g->ad[1] = g->ad[0], g->ad[0] = 1, g->ar = 2;
    }
    if (rb == 1) {
        g->bd[1] = 1, g->br = 2;
    }
    g->M = g->ad[g->ar - 2], g->K = g->ad[g->ar - 1], g->N = g->bd[g->br - 1];
    if (g->bd[g->br - 2] != g->K)
        return -1;
    if (cpu_broadcast_shape(g->ar - 2, g->ad, g->br - 2, g->bd, &g->batch_r, g->batch))
        return -1;
    g->orank = 0;
    for (int32_t d = 0; d < g->batch_r; d++)
        g->od[g->orank++] = g->batch[d];
    if (ra > 1)
        g->od[g->orank++] = g->M;
    if (rb > 1)
        g->od[g->orank++] = g->N;
    return g->orank > CPU_MAX_RANK ? -2 : 0;
}

/* Workspace of one batch: a and b in int16, the int32 sums. */
static int qmm_ws(const qmm_geom *g, int q, size_t *total) {
    size_t mk, kn, mn;
    if (minfer_size_mul((size_t)g->M, (size_t)g->K, &mk) ||
        minfer_size_mul((size_t)g->K, (size_t)g->N, &kn) ||
        minfer_size_mul((size_t)g->M, (size_t)g->N, &mn) || mk > SIZE_MAX / 4 ||
        kn > SIZE_MAX / 4 || mn > SIZE_MAX / 8)
        return -1;
    mk = (mk * 2 + 63) & ~(size_t)63;
    kn = (kn * 2 + 63) & ~(size_t)63;
    mn = q ? (mn * 4 + 63) & ~(size_t)63 : 0;
    size_t nmult = q ? ((size_t)g->N * sizeof(float) + 63) & ~(size_t)63 : 0;
    if (mk > SIZE_MAX - kn || mk + kn > SIZE_MAX - mn || mk + kn + mn > SIZE_MAX - nmult)
        return -1;
    *total = mk + kn + mn + nmult;
    return 0;
}

minfer_status cpu_prepare_qmatmul(cpu_prep *p) {
    int q = strcmp(p->node->op_type, "QLinearMatMul") == 0;
    const minfer_value_desc *a = minfer_kit_input(p->node, 0), *b = minfer_kit_input(p->node, q ? 3 : 1);
    if (!a || !b)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs a and b");
    if (b->dtype && b->dtype != MINFER_DTYPE_INT8 && b->dtype != MINFER_DTYPE_UINT8)
        return cpu_decline(p, "b must be int8 or uint8");
    if (!p->prep || a->rank < 1 || b->rank < 1)
        return MINFER_OK;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->dims[d] < 0)
            return MINFER_OK;
    for (int32_t d = 0; d < b->rank; d++)
        if (b->dims[d] < 0)
            return MINFER_OK;
    qmm_geom g;
    if (qmm_geometry(a->rank, a->dims, b->rank, b->dims, &g) == 0 &&
        qmm_ws(&g, q, &p->prep->workspace_bytes))
        return cpu_prep_fail(p, MINFER_ERR_LIMIT, "the operands' workspace has more bytes than "
                             "fit in memory");
    return MINFER_OK;
}

/* A scalar or a [len] vector (per row or per column). */
static int per_vector(const minfer_tensor_view *v, int64_t len) {
    int64_t n = minfer_kit_numel(v->rank, v->dims);
    return n == 1 || (v->rank == 1 && n == len);
}

minfer_status cpu_compute_qmatmul(const cpu_exec *e) {
    int q = strcmp(e->args->node->op_type, "QLinearMatMul") == 0;
    const minfer_tensor_view *a = cpu_input(e, 0), *b = cpu_input(e, q ? 3 : 1);
    const minfer_tensor_view *az = cpu_input(e, q ? 2 : 2), *bz = cpu_input(e, q ? 5 : 3);
    const minfer_tensor_view *as = q ? cpu_input(e, 1) : NULL, *bs = q ? cpu_input(e, 4) : NULL,
                             *ys = q ? cpu_input(e, 6) : NULL, *yz = q ? cpu_input(e, 7) : NULL;
    if (!a || !b || (q && (!as || !bs || !ys)))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if ((a->dtype != MINFER_DTYPE_INT8 && a->dtype != MINFER_DTYPE_UINT8) ||
        (b->dtype != MINFER_DTYPE_INT8 && b->dtype != MINFER_DTYPE_UINT8))
        return cpu_fail(e, MINFER_ERR_TYPE, "a and b must be int8 or uint8");
    qmm_geom g;
    int gr = qmm_geometry(a->rank, a->dims, b->rank, b->dims, &g);
    if (gr == -2)
        return cpu_fail(e, MINFER_ERR_LIMIT, "output rank too large");
    if (gr)
        return cpu_fail(e, MINFER_ERR_SHAPE, "a and b do not multiply");
    if ((az && !per_vector(az, g.M)) || (bz && !per_vector(bz, g.N)) ||
        (q && (!per_vector(as, g.M) || !per_vector(bs, g.N) ||
               minfer_kit_numel(ys->rank, ys->dims) != 1 ||
               (yz && minfer_kit_numel(yz->rank, yz->dims) != 1))))
        return cpu_fail(e, MINFER_ERR_SHAPE, "zero points and scales must be scalars, per row "
                        "of a or per column of b (y's scalars)");
    if (yz && yz->dtype != MINFER_DTYPE_INT8 && yz->dtype != MINFER_DTYPE_UINT8)
        return cpu_fail(e, MINFER_ERR_TYPE, "y_zero_point must be int8 or uint8");
    int32_t ot = q ? (yz ? yz->dtype : MINFER_DTYPE_UINT8) : MINFER_DTYPE_INT32;
    void *y;
    minfer_status s = cpu_output(e, 0, ot, g.orank, g.od, &y);
    if (s)
        return s;
    size_t M = (size_t)g.M, K = (size_t)g.K, N = (size_t)g.N, need;
    size_t nb = (size_t)minfer_kit_numel(g.batch_r, g.batch);
    if (!y || M == 0 || N == 0 || nb == 0)
        return MINFER_OK;
    if (qmm_ws(&g, q, &need))
        return cpu_fail(e, MINFER_ERR_LIMIT, "the operands' workspace has more bytes than fit in "
                        "memory");
    unsigned char *wsp = e->args->workspace, *own = NULL;
    if (e->args->workspace_bytes < need || !wsp) {
        own = cpu_malloc(e->ctx, need);
        if (!own)
            return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory for the operands' workspace");
        wsp = own;
    }
    int16_t *a16 = (int16_t *)(void *)wsp;
    int16_t *b16 = (int16_t *)(void *)(wsp + ((M * K * 2 + 63) & ~(size_t)63));
    int32_t *acc = (int32_t *)(void *)((unsigned char *)b16 + ((K * N * 2 + 63) & ~(size_t)63));
    float *mult = (float *)(void *)((unsigned char *)acc + (q ? (M * N * 4 + 63) & ~(size_t)63 : 0));
    int per_row_scale = 0;
    size_t n_bs = 1;
    if (q) {
        per_row_scale = minfer_kit_numel(as->rank, as->dims) > 1;
        n_bs = (size_t)minfer_kit_numel(bs->rank, bs->dims);
    }
    float ysc = q ? (float)cpu_get(cpu_data(ys), ys->dtype, 0) : 1;
    int32_t yzp = cpu_q_zero_point(yz, 0);
    int64_t idx[CPU_MAX_RANK + 1];
    const unsigned char *adt = cpu_data(a), *bdt = cpu_data(b);
    for (size_t t = 0; t < nb; t++) {
        /* Batch offsets of a and b under broadcasting. */
        size_t rem = t, aoff = 0, boff = 0, amul = 1, bmul = 1;
        for (int32_t d = g.batch_r - 1; d >= 0; d--) {
            idx[d] = (int64_t)(rem % (size_t)g.batch[d]);
            rem /= (size_t)g.batch[d];
        }
        for (int32_t d = g.ar - 3, j = g.batch_r - 1; d >= 0; d--, j--) {
            aoff += (size_t)(g.ad[d] == 1 ? 0 : idx[j]) * amul;
            amul *= (size_t)g.ad[d];
        }
        for (int32_t d = g.br - 3, j = g.batch_r - 1; d >= 0; d--, j--) {
            boff += (size_t)(g.bd[d] == 1 ? 0 : idx[j]) * bmul;
            bmul *= (size_t)g.bd[d];
        }
        const unsigned char *ab = adt + aoff * M * K, *bb = bdt + boff * K * N;
        for (size_t i = 0; i < M; i++)
            cpu_q_widen(ab + i * K, a->dtype, cpu_q_zero_point(az, i), a16 + i * K, K);
        /* b transposed: column j of b is row j of b16, less its zero point */
        for (size_t jj = 0; jj < N; jj++) {
            int32_t zb = cpu_q_zero_point(bz, jj);
            int16_t *dst = b16 + jj * K;
            if (b->dtype == MINFER_DTYPE_UINT8)
                for (size_t k = 0; k < K; k++)
                    dst[k] = (int16_t)((int32_t)((const uint8_t *)bb)[k * N + jj] - zb);
            else
                for (size_t k = 0; k < K; k++)
                    dst[k] = (int16_t)((int32_t)((const int8_t *)bb)[k * N + jj] - zb);
        }
        int32_t *c = q ? acc : (int32_t *)y + t * M * N;
        cpu_qgemm16(e->ctx, 1, M, N, K, a16, K, b16, K, c, N);
        if (!q)
            continue;
        unsigned char *yt = (unsigned char *)y + t * M * N;
        for (size_t i = 0; i < M; i++) {
            if (i == 0 || per_row_scale) {
                float asc = (float)cpu_get(cpu_data(as), as->dtype, per_row_scale ? i : 0);
                for (size_t j = 0; j < N; j++)
                    mult[j] = asc * (float)cpu_get(cpu_data(bs), bs->dtype, n_bs > 1 ? j : 0) / ysc;
            }
            for (size_t j = 0; j < N; j++)
                cpu_q_requant(acc + i * N + j, 1, 0, mult[j], yzp, ot, yt + i * N + j);
        }
    }
    free(own);
    return MINFER_OK;
}
