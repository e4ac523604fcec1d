/*
 * Quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
 * MatMulInteger and QLinearMatMul (the quantized convolutions are in
 * conv.c).
 *
 * Values go through double: quantize is saturate(round_half_even(x / scale)
 * + zero_point), dequantize (x - zero_point) * scale. Scales and zero
 * points are per tensor, or per slice along 'axis' (1-D of that length).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    for (size_t i = 0; i < n; i++) {
        double scale = cpu_get(sd, sc->dtype, at(i, si, sl));
        double z = zd ? cpu_get(zd, zp->dtype, at(i, zi, zl)) : 0;
        double v = cpu_get(xd, x->dtype, i);
        cpu_set(y, ot, i, dequant ? (v - z) * scale : nearbyint(divide(x->dtype, v, scale)) + z);
    }
    return MINFER_OK;
}

/* uint8 quantization from the data's range, which always includes 0. */
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
    double lo = 0, hi = 0;
    for (size_t i = 0; i < n; i++) {
        double v = cpu_get(xd, x->dtype, i);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    /* The reference computes the scale in float32. */
    float scale = (float)(hi - lo) / 255.0f;
    double z = scale != 0 ? nearbyint(0 - lo / (double)scale) : 0;
    z = z < 0 ? 0 : z > 255 ? 255 : z;
    *(float *)ys = scale;
    *(uint8_t *)yz = (uint8_t)z;
    for (size_t i = 0; i < n; i++)
        cpu_set(y, MINFER_DTYPE_UINT8, i,
                scale != 0 ? nearbyint(divide(x->dtype, cpu_get(xd, x->dtype, i), scale)) + z : z);
    return MINFER_OK;
}

/* ---- MatMulInteger, QLinearMatMul ------------------------------------------
 * numpy matmul of (a - a_zero_point) and (b - b_zero_point): 1-D operands
 * are promoted and the batch dims broadcast. Zero points may be per row of
 * a (MatMulInteger, [M]) or per column of b ([N]). */

minfer_status cpu_prepare_qmatmul(cpu_prep *p) {
    (void)p;
    return MINFER_OK;
}

static double zp_at(const minfer_tensor_view *z, size_t k) {
    if (!z)
        return 0;
    size_t n = (size_t)minfer_kit_numel(z->rank, z->dims);
    return n == 0 ? 0 : cpu_get(cpu_data(z), z->dtype, n == 1 ? 0 : k);
}

minfer_status cpu_compute_qmatmul(const cpu_exec *e) {
    int q = strcmp(e->args->node->op_type, "QLinearMatMul") == 0;
    const minfer_tensor_view *a = cpu_input(e, 0), *b = cpu_input(e, q ? 3 : 1);
    const minfer_tensor_view *az = cpu_input(e, q ? 2 : 2), *bz = cpu_input(e, q ? 5 : 3);
    const minfer_tensor_view *as = q ? cpu_input(e, 1) : NULL, *bs = q ? cpu_input(e, 4) : NULL,
                             *ys = q ? cpu_input(e, 6) : NULL, *yz = q ? cpu_input(e, 7) : NULL;
    if (!a || !b || (q && (!as || !bs || !ys)))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (a->rank < 1 || b->rank < 1)
        return cpu_fail(e, MINFER_ERR_SHAPE, "operands must have rank >= 1");
    /* Promote 1-D operands to matrices. */
    int64_t ad[CPU_MAX_RANK + 1], bd[CPU_MAX_RANK + 1];
    int32_t ar = a->rank, br = b->rank;
    memcpy(ad, a->dims, (size_t)ar * sizeof *ad);
    memcpy(bd, b->dims, (size_t)br * sizeof *bd);
    if (ar == 1) {
        ad[1] = ad[0], ad[0] = 1, ar = 2;
    }
    if (br == 1) {
        bd[1] = 1, br = 2;
    }
    int64_t M = ad[ar - 2], K = ad[ar - 1], N = bd[br - 1];
    if (bd[br - 2] != K)
        return cpu_fail(e, MINFER_ERR_SHAPE, "inner dimensions differ");
    int32_t batch_r;
    int64_t batch[CPU_MAX_RANK + 1];
    if (cpu_broadcast_shape(ar - 2, ad, br - 2, bd, &batch_r, batch))
        return cpu_fail(e, MINFER_ERR_SHAPE, "batch dims do not broadcast");
    int64_t od[CPU_MAX_RANK + 2];
    int32_t orank = 0;
    for (int32_t d = 0; d < batch_r; d++)
        od[orank++] = batch[d];
    if (a->rank > 1)
        od[orank++] = M;
    if (b->rank > 1)
        od[orank++] = N;
    if (orank > CPU_MAX_RANK)
        return cpu_fail(e, MINFER_ERR_LIMIT, "output rank too large");
    int32_t ot = q ? (yz ? yz->dtype : MINFER_DTYPE_UINT8) : MINFER_DTYPE_INT32;
    void *y;
    minfer_status s = cpu_output(e, 0, ot, orank, od, &y);
    if (s)
        return s;
    double scale = q ? cpu_get(cpu_data(as), as->dtype, 0) * cpu_get(cpu_data(bs), bs->dtype, 0) /
                           cpu_get(cpu_data(ys), ys->dtype, 0)
                     : 1;
    double yzp = zp_at(yz, 0);
    size_t nb = (size_t)minfer_kit_numel(batch_r, batch), za = az ? (size_t)minfer_kit_numel(az->rank, az->dims) : 0;
    int64_t idx[CPU_MAX_RANK + 1];
    const void *adt = cpu_data(a), *bdt = cpu_data(b);
    for (size_t t = 0; t < nb; t++) {
        /* Batch offsets of a and b under broadcasting. */
        size_t rem = t, aoff = 0, boff = 0, amul = 1, bmul = 1;
        for (int32_t d = batch_r - 1; d >= 0; d--) {
            idx[d] = (int64_t)(rem % (size_t)batch[d]);
            rem /= (size_t)batch[d];
        }
        for (int32_t d = ar - 3, j = batch_r - 1; d >= 0; d--, j--) {
            aoff += (size_t)(ad[d] == 1 ? 0 : idx[j]) * amul;
            amul *= (size_t)ad[d];
        }
        for (int32_t d = br - 3, j = batch_r - 1; d >= 0; d--, j--) {
            boff += (size_t)(bd[d] == 1 ? 0 : idx[j]) * bmul;
            bmul *= (size_t)bd[d];
        }
        aoff *= (size_t)(M * K);
        boff *= (size_t)(K * N);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0, azp = zp_at(az, za > 1 ? (size_t)i : 0), bzp = zp_at(bz, (size_t)j);
                for (int64_t k = 0; k < K; k++)
                    acc += (cpu_get(adt, a->dtype, aoff + (size_t)(i * K + k)) - azp) *
                           (cpu_get(bdt, b->dtype, boff + (size_t)(k * N + j)) - bzp);
                size_t yi = (t * (size_t)M + (size_t)i) * (size_t)N + (size_t)j;
                cpu_set(y, ot, yi, q ? nearbyint(acc * scale) + yzp : acc);
            }
    }
    return MINFER_OK;
}
