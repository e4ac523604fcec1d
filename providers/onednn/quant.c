/*
 * Quantized convolutions and matrix products on oneDNN's int8 primitives:
 * QLinearConv, ConvInteger, QLinearMatMul and MatMulInteger, and what
 * sits between them: com.microsoft QLinearAdd (a step of its own) and the
 * Cast of integer results to float (a reorder).
 *
 * oneDNN 2.6 computes an int8 convolution or matrix product as
 *     dst = saturate(post_ops(scale * (sum (src - src_zp) * wei + bias)) + dst_zp)
 * with the int32 sum converted to float before the scale, in float, and
 * rounded half to even by the final conversion. The reference (the CPU
 * provider, as ONNX Runtime) rounds half to even before it adds y's zero
 * point: with an odd zero point and a result on a tie the two differ by one.
 * An eltwise round post-op rounds before the zero point is added, so the
 * zero point adds to an integer and the results agree exactly (checked at
 * ties, saturation, per-channel scales and zero points in
 * tests/test_onednn_quant.c). The multiplier is the reference's float
 * x_scale * w_scale / y_scale, per output channel when w_scale is.
 *
 * Weights must be constant and are packed once at prepare: oneDNN takes
 * s8 weights and no weight zero point (a convolution) or only a common one
 * (a product), so the weights are shifted at prepare, w - w_zero_point per
 * output channel, into s8; where a shifted weight falls outside [-128, 127]
 * (uint8 weights with a small zero point) the node is declined with that
 * reason. x's zero point (per tensor) and y's are oneDNN runtime zero
 * points: a constant one is stored with the node, one computed in the graph
 * (DynamicQuantizeLinear's) is converted to int32 by a reorder each run.
 *
 * ConvInteger and MatMulInteger write int32: the sum goes through float in
 * oneDNN, exact only below 2^24. A ConvInteger whose sums can reach 2^24
 * (from its weights and x's type) runs in pieces of its reduction axis
 * (input channels and kernel taps), each bounded below 2^24, each a
 * convolution of the whole source with the weights outside its piece
 * zeroed, their int32 results added in integers (add_pieces); a
 * MatMulInteger that can is declined rather than rounded.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

#define NONE ((size_t)-1)
#define QPIECES 4 /* most pieces of a ConvInteger's reduction (add_pieces) */
#define F32_EXACT 16777216.0 /* 2^24: integers a float holds exactly */

/* Where each operand is among the node's inputs. */
typedef struct qops {
    int qlinear;                      /* QLinearConv / QLinearMatMul */
    size_t x, xs, xz, w, ws, wz, ys, yz, bias;
} qops;

static qops qops_of(const dnn_b *b) {
    if (strncmp(b->node->op_type, "QLinear", 7) == 0)
        return (qops){1, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    return (qops){0, 0, NONE, 2, 1, NONE, 3, NONE, NONE, NONE};
}

static const minfer_value_desc *qin(const dnn_b *b, size_t i) {
    return i == NONE ? NULL : dnn_in(b, i);
}

static int is_int8(int32_t dt) {
    return dt == MINFER_DTYPE_UINT8 || dt == MINFER_DTYPE_INT8;
}

/* Element k of an integer constant (u8, s8 or s32). */
static int32_t const_int(const minfer_value_desc *v, size_t k) {
    switch (v->dtype) {
    case MINFER_DTYPE_UINT8: return ((const uint8_t *)v->const_data)[k];
    case MINFER_DTYPE_INT8: return ((const int8_t *)v->const_data)[k];
    default: return ((const int32_t *)v->const_data)[k];
    }
}

/* A constant float scale of 1 or n elements into out (n floats, repeated
 * when it has one); its count in *count. */
static minfer_status read_scale(dnn_b *b, size_t i, const char *what, int64_t n, float *out,
                                int64_t *count) {
    const minfer_value_desc *v = qin(b, i);
    if (!v)
        return dnn_decline(b, "%s is missing", what);
    if (v->dtype != MINFER_DTYPE_FLOAT)
        return dnn_decline(b, "%s must be float", what);
    int64_t e = dnn_numel(v->rank, v->dims);
    if (e != 1 && e != n)
        return dnn_decline(b, "%s must hold 1 or %lld values", what, (long long)n);
    if (!v->const_data || v->const_nbytes < (size_t)e * sizeof(float))
        return dnn_decline(b, "%s must be a constant", what);
    const float *s = v->const_data;
    for (int64_t k = 0; k < n; k++) {
        out[k] = s[e == 1 ? 0 : k];
        if (!(out[k] > 0.0f) || !isfinite(out[k]))
            return dnn_decline(b, "%s must be positive and finite", what);
    }
    *count = e;
    return MINFER_OK;
}

/* A per-tensor zero point of an int8 operand of type dt: absent, or one
 * element of dt. *known: its value when constant. */
static minfer_status check_zp(dnn_b *b, size_t i, const char *what, int32_t dt, int *constant,
                              int32_t *known) {
    const minfer_value_desc *v = qin(b, i);
    *constant = 1;
    *known = 0;
    if (!v)
        return MINFER_OK;
    if (v->dtype != dt)
        return dnn_decline(b, "%s must have its tensor's type", what);
    if (dnn_numel(v->rank, v->dims) != 1)
        return dnn_decline(b, "%s must be one value (per tensor)", what);
    *constant = v->const_data && v->const_nbytes >= 1;
    if (*constant)
        *known = const_int(v, 0);
    return MINFER_OK;
}

/* The weights minus their zero point (per output channel: channel of
 * element k is k / inner % M), as s8, into a new buffer in *out (NULL when
 * they are s8 with a zero point of 0 and are used as they are); the sum of
 * |w - zp| of the largest channel in *max_abs_sum, and each channel's sum
 * of w - zp in csum[M] (when not NULL). A shifted weight outside
 * [-128, 127] is declined, or, with out2 (an integer convolution, whose
 * int32 sums two convolutions can add), split in two: *out its value
 * clamped to int8 and *out2 the rest (also within int8, as |w - zp| <=
 * 255), *out2 NULL when no weight needs it (*split says so, in a check
 * build too). */
static minfer_status shift_weights(dnn_b *b, const minfer_value_desc *w,
                                   const minfer_value_desc *wz, int64_t M, int64_t inner,
                                   int8_t **out, double *max_abs_sum, int64_t *csum,
                                   int8_t **out2, int *split) {
    *out = NULL;
    *max_abs_sum = 0;
    if (out2)
        *out2 = NULL, *split = 0;
    int64_t n = dnn_numel(w->rank, w->dims);
    int64_t nz = wz ? dnn_numel(wz->rank, wz->dims) : 0;
    if (!w->const_data || n < 0 || w->const_nbytes < (size_t)n)
        return dnn_decline(b, "the weights must be a constant");
    if (wz && (wz->dtype != w->dtype || (nz != 1 && nz != M)))
        return dnn_decline(b, "the weights' zero point must be of their type, 1 or %lld values",
                           (long long)M);
    if (wz && (!wz->const_data || wz->const_nbytes < (size_t)nz))
        return dnn_decline(b, "the weights' zero point must be a constant");
    int shift = w->dtype != MINFER_DTYPE_INT8;
    for (int64_t k = 0; wz && k < nz; k++)
        shift = shift || const_int(wz, (size_t)k) != 0;
    double *sums = calloc((size_t)M, sizeof *sums);
    int8_t *q = shift && !b->check ? malloc((size_t)n) : NULL;
    int8_t *q2 = shift && out2 && !b->check ? calloc((size_t)n, 1) : NULL;
    if (!sums || (shift && !b->check && (!q || (out2 && !q2)))) {
        free(sums);
        free(q);
        free(q2);
        return dnn_decline(b, "out of memory");
    }
    minfer_status st = MINFER_OK;
    for (int64_t k = 0; k < n; k++) {
        int64_t m = k / inner % M;
        int32_t v = const_int(w, (size_t)k) - (wz ? const_int(wz, (size_t)(nz == 1 ? 0 : m)) : 0);
        if (out2 && (v < -128 || v > 127)) {
            int32_t c = v < -128 ? -128 : 127;
            *split = 1;
            sums[m] += v < 0 ? -v : v;
            if (csum)
                csum[m] += v;
            if (q)
                q[k] = (int8_t)c, q2[k] = (int8_t)(v - c);
            continue;
        }
        if (v < -128 || v > 127) {
            st = dnn_decline(b, "a weight minus its zero point (%d) does not fit int8, which is "
                             "all oneDNN's int8 kernels take", (int)v);
            break;
        }
        sums[m] += v < 0 ? -v : v;
        if (csum)
            csum[m] += v;
        if (q)
            q[k] = (int8_t)v;
    }
    for (int64_t m = 0; m < M; m++)
        if (sums[m] > *max_abs_sum)
            *max_abs_sum = sums[m];
    free(sums);
    if (st != MINFER_OK || !out2 || !*split) {
        free(q2);
        q2 = NULL;
    }
    if (st != MINFER_OK) {
        free(q);
        return st;
    }
    *out = q;
    if (out2)
        *out2 = q2;
    return MINFER_OK;
}

/* Memory for a zero point at input i as int32 [1]: stored with the node
 * when constant (value known), else the input reordered to s32 each run. */
static int zp_mem(dnn_b *b, size_t i, int constant, int32_t known) {
    dnnl_memory_desc_t md;
    int64_t one = 1;
    dnn_plain_md_dt(&md, 1, &one, dnnl_s32);
    if (constant)
        return dnn_owned_plain(b, &md, (const float *)(const void *)&known);
    return dnn_input(b, i, NULL, &md);
}

/* Which of oneDNN 2.6's AMX int8 convolutions lose to its AVX-512 VNNI
 * ones on this node (it offers AMX first wherever it can), measured per
 * node at 1 thread on this machine's Xeon (AMX), AMX against VNNI:
 * - brgemm ones (brgconv) with input or output channels per group not a
 *   multiple of 64, whose 64-channel tiles run partly empty: MobileNet
 *   V2's 1x1 convolutions (8 to 480 channels, 2x2 to 32x32) 0.62-1.32x
 *   the time (its convolutions 246 us a run against 213); ResNet-10's (64
 *   to 512 channels, 3x3 and 1x1, 0.5M to 9.4M multiply-adds) take
 *   1.1-2.5x less time on AMX and keep it;
 * - the older JIT kernel (not brgemm, what oneDNN runs with a source zero
 *   point applied at run time) below 6M multiply-adds: the dynamic
 *   U-Net's ConvIntegers (0.4M to 4.7M, 16 to 128 channels) 602 us in all
 *   against 363; with 64 channels 2.4M 29 us against 16, 9.4M 43 against
 *   55; ResNet-10's first convolution (3 channels, 7x7, 9.6M) 65 against
 *   72. */
typedef struct amx_case {
    int64_t icg, ocg;
    double macs;
} amx_case;

static int amx_loses(const char *impl, const void *arg) {
    const amx_case *c = arg;
    if (!strstr(impl, "amx"))
        return 0;
    if (strncmp(impl, "brg", 3) == 0)
        return c->icg % 64 != 0 || c->ocg % 64 != 0;
    return c->macs < 6e6;
}

/* What the two builds share: operand types, zero points, multipliers. */
typedef struct qplan {
    qops o;
    const minfer_value_desc *x, *w, *bias;
    int32_t ydt;
    int xz_const, yz_const, has_xz, has_yz;
    int yz_post; /* the constant y zero point added by a post-op (has_yz 0) */
    int32_t *fold_bias; /* M: the bias less xz * the channel's weight sum (has_xz 0) */
    int split;          /* ConvInteger's weights in two int8 halves: wq and wq2 */
    int8_t *wq2;
    int32_t xz, yz;
    float *mult; /* M multipliers (QLinear) */
    int64_t n_mult;
    int8_t *wq;  /* shifted weights, or NULL */
    double wsum; /* the largest channel's sum of |w - zp| */
    /* ConvInteger in pieces (n_pieces > 1): piece j reduces over the
     * weights' inner elements [cut[j], cut[j + 1]); big[j]: some of them
     * are split (wq2) */
    int n_pieces;
    int64_t cut[QPIECES + 1];
    int big[QPIECES];
    amx_case amx; /* a convolution's shape, for amx_loses */
} qplan;

/* Folds a constant x zero point into the bias: sum((x - xz) * w) =
 * sum(x * w) - xz * sum(w) per output channel, exact in int32, for a node
 * that never reads padding (oneDNN pads with 0 where the reference pads
 * with xz). oneDNN 2.6 runs a runtime source zero point on its older AMX
 * JIT kernels and a 1x1 convolution with one 5-10 times slower than
 * without (MobileNet V2's QDQ expansions: 1 ms of its 1.3 ms a run).
 * Only where oneDNN's float sum of the int32 accumulator and bias stays
 * exact (both below 2^24), so the values are the reference's. */
static minfer_status fold_x_zero_point(dnn_b *b, qplan *p, int64_t M, const int64_t *csum) {
    double xmax = p->x->dtype == MINFER_DTYPE_UINT8 ? 255 : 128;
    if (p->wsum * xmax >= 16777216.0 || (p->bias && !p->bias->const_data) ||
        (p->bias && p->bias->const_nbytes < (size_t)M * sizeof(int32_t)))
        return MINFER_OK;
    int32_t *fb = malloc((size_t)M * sizeof *fb);
    if (!fb)
        return dnn_decline(b, "out of memory");
    for (int64_t m = 0; m < M; m++) {
        int64_t v = -(int64_t)p->xz * csum[m];
        if (p->bias) {
            int32_t b0;
            memcpy(&b0, (const char *)p->bias->const_data + (size_t)m * sizeof b0, sizeof b0);
            v += b0;
        }
        if (v <= -16777216 || v >= 16777216) {
            free(fb);
            return MINFER_OK;
        }
        fb[m] = (int32_t)v;
    }
    p->fold_bias = fb;
    p->has_xz = 0;
    return MINFER_OK;
}

/* Cuts the inner elements of the weights [M, inner] (a ConvInteger's
 * reduction: input channels by kernel taps) into the fewest runs, in
 * order, in which every channel's sum of |w - zp| times xmax, the bound of
 * its partial int32 sum, stays below 2^24; declines beyond QPIECES. */
static minfer_status cut_pieces(dnn_b *b, qplan *p, int64_t M, int64_t inner, double xmax) {
    const minfer_value_desc *wz = qin(b, p->o.wz);
    int64_t nz = wz ? dnn_numel(wz->rank, wz->dims) : 0;
    double limit = F32_EXACT / xmax;
    double *acc = calloc((size_t)M, sizeof *acc);
    if (!acc)
        return dnn_decline(b, "out of memory");
    int n = 0;
    p->cut[0] = 0;
    p->big[0] = 0;
    for (int64_t k = 0; k < inner; k++) {
        int over = 0;
        for (int64_t m = 0; m < M && !over; m++) {
            int32_t v = const_int(p->w, (size_t)(m * inner + k)) -
                        (wz ? const_int(wz, (size_t)(nz == 1 ? 0 : m)) : 0);
            over = acc[m] + abs(v) >= limit;
        }
        if (over) {
            if (n + 1 >= QPIECES) {
                free(acc);
                return dnn_decline(b, "its int32 sums may reach 2^24 even in %d pieces of its "
                                   "reduction (oneDNN's sums pass through float)", QPIECES);
            }
            p->cut[++n] = k;
            p->big[n] = 0;
            memset(acc, 0, (size_t)M * sizeof *acc);
        }
        for (int64_t m = 0; m < M; m++) {
            int32_t v = const_int(p->w, (size_t)(m * inner + k)) -
                        (wz ? const_int(wz, (size_t)(nz == 1 ? 0 : m)) : 0);
            acc[m] += abs(v);
            p->big[n] |= v < -128 || v > 127;
        }
    }
    free(acc);
    p->cut[++n] = inner;
    p->n_pieces = n;
    return MINFER_OK;
}

/* fold_xz: the node reads no padding (fold_x_zero_point); conv: a
 * ConvInteger (its weights may split in two halves or its reduction in
 * pieces). */
static minfer_status plan_common(dnn_b *b, int64_t M, int64_t inner, int fold_xz, int conv,
                                 qplan *p) {
    memset(p, 0, sizeof *p);
    p->o = qops_of(b);
    const qops *o = &p->o;
    p->x = qin(b, o->x);
    p->w = qin(b, o->w);
    p->bias = qin(b, o->bias);
    if (!p->x || !p->w)
        return dnn_decline(b, "needs its data and weight inputs");
    if (!is_int8(p->x->dtype) || !is_int8(p->w->dtype))
        return dnn_decline(b, "x and w must be uint8 or int8");
    const minfer_value_desc *y = &b->node->outputs[0];
    const minfer_value_desc *yz = qin(b, o->yz);
    p->ydt = o->qlinear ? (yz ? yz->dtype : MINFER_DTYPE_UINT8) : MINFER_DTYPE_INT32;
    if (o->qlinear && !is_int8(p->ydt))
        return dnn_decline(b, "y must be uint8 or int8");
    if (y->dtype && y->dtype != p->ydt)
        return dnn_decline(b, "the output's type is not the op's");
    minfer_status st = check_zp(b, o->xz, "x's zero point", p->x->dtype, &p->xz_const, &p->xz);
    if (st == MINFER_OK && o->qlinear)
        st = check_zp(b, o->yz, "y's zero point", p->ydt, &p->yz_const, &p->yz);
    if (st != MINFER_OK)
        return st;
    p->has_xz = qin(b, o->xz) && !(p->xz_const && p->xz == 0);
    p->has_yz = qin(b, o->yz) && !(p->yz_const && p->yz == 0);
    /* A constant y zero point is added after the rounding by a linear
     * post-op, round(acc * mult) + zp, saturated by the conversion to
     * int8: the same values as a destination zero point, but oneDNN 2.6's
     * brgemm convolutions take no runtime destination zero point and it
     * picked its older JIT kernels for those nodes (ResNet-10's 64x64
     * QDQ convolutions: 0.02-0.11 ms each against 0.013-0.05). */
    if (p->has_yz && p->yz_const && o->qlinear) {
        p->yz_post = 1;
        p->has_yz = 0;
    }
    if (p->bias && (p->bias->dtype != MINFER_DTYPE_INT32 || p->bias->rank != 1 ||
                    p->bias->dims[0] != M))
        return dnn_decline(b, "B must be int32 with %lld values", (long long)M);
    if (o->qlinear) {
        float xs = 0.0f, ys = 1.0f;
        int64_t c1 = 0, cw = 0;
        p->mult = malloc((size_t)M * sizeof *p->mult);
        if (!p->mult)
            return dnn_decline(b, "out of memory");
        if ((st = read_scale(b, o->xs, "x's scale", 1, &xs, &c1)) != MINFER_OK ||
            (st = read_scale(b, o->ys, "y's scale", 1, &ys, &c1)) != MINFER_OK ||
            (st = read_scale(b, o->ws, "w's scale", M, p->mult, &cw)) != MINFER_OK)
            return st;
        /* The reference's multiplier, in float: (x_scale * w_scale) / y_scale. */
        for (int64_t m = 0; m < M; m++)
            p->mult[m] = xs * p->mult[m] / ys;
        p->n_mult = cw == 1 ? 1 : M;
    }
    int64_t *csum = calloc((size_t)M, sizeof *csum);
    if (!csum)
        return dnn_decline(b, "out of memory");
    st = shift_weights(b, p->w, qin(b, o->wz), M, inner, &p->wq, &p->wsum, csum,
                       !o->qlinear && conv ? &p->wq2 : NULL, &p->split);
    if (st == MINFER_OK && fold_xz && p->has_xz && p->xz_const)
        st = fold_x_zero_point(b, p, M, csum);
    free(csum);
    if (st != MINFER_OK)
        return st;
    if (!o->qlinear) {
        /* The int32 sums pass through float in oneDNN: exact below 2^24. */
        double xmax = p->x->dtype == MINFER_DTYPE_UINT8
                          ? (p->xz_const ? fmax(p->xz, 255 - p->xz) : 255)
                          : (p->xz_const ? fmax(p->xz + 128, 127 - p->xz) : 255);
        if (p->wsum * xmax >= F32_EXACT && conv && !p->fold_bias)
            return cut_pieces(b, p, M, inner, xmax);
        if (p->wsum * xmax >= F32_EXACT)
            return dnn_decline(b, "its int32 sums may reach 2^24, where oneDNN's float "
                               "conversion would round them");
    }
    return MINFER_OK;
}

static void plan_free(qplan *p) {
    free(p->mult);
    free(p->wq);
    free(p->wq2);
    free(p->fold_bias);
}

/* The attribute: output scales, round, zero points (runtime). */
static minfer_status make_attr(dnn_b *b, const qplan *p, int per_channel_mask,
                               dnnl_primitive_attr_t *out) {
    static const int32_t runtime = DNNL_RUNTIME_S32_VAL;
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    *out = NULL;
    if (!attr)
        return dnn_decline(b, "out of memory");
    dnnl_status_t s = dnnl_success;
    if (p->o.qlinear) {
        s = dnnl_primitive_attr_set_output_scales(attr, p->n_mult,
                                                  p->n_mult > 1 ? per_channel_mask : 0, p->mult);
        dnnl_post_ops_t po = NULL;
        if (s == dnnl_success)
            s = dnnl_post_ops_create(&po);
        if (s == dnnl_success)
            s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_round, 0.0f, 0.0f);
        if (s == dnnl_success && p->yz_post)
            s = dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_linear, 1.0f, (float)p->yz);
        if (s == dnnl_success)
            s = dnnl_primitive_attr_set_post_ops(attr, po);
        dnnl_post_ops_destroy(po);
    }
    if (s == dnnl_success && p->has_xz)
        s = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_SRC, 1, 0, &runtime);
    if (s == dnnl_success && p->has_yz)
        s = dnnl_primitive_attr_set_zero_points(attr, DNNL_ARG_DST, 1, 0, &runtime);
    if (s != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return dnn_fail(b, s, "int8 attributes");
    }
    *out = attr;
    return MINFER_OK;
}

/* The weights' memory: the constant packed as it is, or its shifted copy. */
static int weights_mem(dnn_b *b, const qplan *p, const dnnl_memory_desc_t *have,
                       const dnnl_memory_desc_t *want) {
    if (!p->wq && p->w->dtype == MINFER_DTYPE_INT8)
        return dnn_const_input(b, p->o.w, have, want, 1.0f);
    return dnn_pack_owned(b, (int)p->o.w, have, p->wq, want);
}

/* Adds the step of pd with src, weights, dst, bias and zero points. */
static minfer_status add_step(dnn_b *b, const qplan *p, dnnl_primitive_desc_t pd, int m_src,
                              int m_wei, int m_dst) {
    int m_bias = -2, m_xz = -2, m_yz = -2;
    if (m_src >= 0 && m_wei >= 0 && m_dst >= 0 && p->fold_bias)
        m_bias = dnn_owned_plain(b, dnn_pd_md(pd, dnnl_query_weights_md, 1),
                                 (const float *)(const void *)p->fold_bias);
    else if (m_src >= 0 && m_wei >= 0 && m_dst >= 0 && p->bias)
        m_bias = dnn_input(b, p->o.bias, NULL, dnn_pd_md(pd, dnnl_query_weights_md, 1));
    if (m_src >= 0 && m_wei >= 0 && m_dst >= 0 && m_bias != -1 && p->has_xz)
        m_xz = zp_mem(b, p->o.xz, p->xz_const, p->xz);
    if (m_src >= 0 && m_wei >= 0 && m_dst >= 0 && m_bias != -1 && m_xz != -1 && p->has_yz)
        m_yz = zp_mem(b, p->o.yz, p->yz_const, p->yz);
    if (m_src < 0 || m_wei < 0 || m_dst < 0 || m_bias == -1 || m_xz == -1 || m_yz == -1) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[6] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, mems[6] = {m_src, m_wei, m_dst};
    int n = 3;
    if (p->bias || p->fold_bias)
        args[n] = DNNL_ARG_BIAS, mems[n++] = m_bias;
    if (p->has_xz)
        args[n] = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, mems[n++] = m_xz;
    if (p->has_yz)
        args[n] = DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, mems[n++] = m_yz;
    return dnn_step_add(b, pd, n, args, mems);
}

static void to_dims(dnnl_dim_t *d, const int64_t *v, int n, int64_t minus) {
    for (int i = 0; i < n; i++)
        d[i] = v[i] - minus;
}

/* ConvInteger with weights split in two int8 halves (shift_weights): the
 * second convolution, of the same source, adds its int32 sums into the
 * first one's destination (a sum post-op, exact below 2^24 as plan_common
 * checked), with the same x zero point and no bias. ORT's own weights may
 * be uint8 with a zero point (quantize_dynamic's default), whose
 * difference spans -255..255, where oneDNN's kernels take int8 weights. */
static minfer_status add_second_half(dnn_b *b, const qplan *p, const dnnl_memory_desc_t *src,
                                     const dnnl_memory_desc_t *wei_any,
                                     const dnnl_memory_desc_t *wei_plain,
                                     const dnnl_memory_desc_t *dst, const dnnl_dim_t *strides,
                                     const dnnl_dim_t *dil, const dnnl_dim_t *padl,
                                     const dnnl_dim_t *padr, int m_src, int m_dst) {
    dnnl_convolution_desc_t cd;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, src, wei_any, NULL, dst, strides,
        dil, padl, padr);
    if (s != dnnl_success)
        return dnn_fail(b, s, "int8 convolution descriptor (second half)");
    dnnl_primitive_attr_t attr = NULL;
    minfer_status st = make_attr(b, p, 1 << 1, &attr);
    dnnl_post_ops_t po = NULL;
    if (st == MINFER_OK &&
        (dnnl_post_ops_create(&po) != dnnl_success ||
         dnnl_post_ops_append_sum(po, 1.0f) != dnnl_success ||
         dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success))
        st = dnn_decline(b, "could not add the second half's sum");
    dnnl_post_ops_destroy(po);
    dnnl_primitive_desc_t pd = NULL;
    if (st == MINFER_OK)
        st = dnn_pd_avoid(b, &cd, attr, amx_loses, &p->amx, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;
    if (!dnnl_memory_desc_equal(dnn_pd_md(pd, dnnl_query_src_md, 0), src) ||
        !dnnl_memory_desc_equal(dnn_pd_md(pd, dnnl_query_dst_md, 0), dst)) {
        dnnl_primitive_desc_destroy(pd);
        return dnn_decline(b, "the second half's layouts differ from the first's");
    }
    int m_wei = dnn_pack_owned(b, -1, wei_plain, p->wq2, dnn_pd_md(pd, dnnl_query_weights_md, 0));
    int m_xz = m_wei < 0 || !p->has_xz ? -2 : zp_mem(b, p->o.xz, p->xz_const, p->xz);
    if (m_wei < 0 || m_xz == -1) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                   DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC};
    int mems[4] = {m_src, m_wei, m_dst, m_xz};
    return dnn_step_add(b, pd, p->has_xz ? 4 : 3, args, mems);
}

/* A ConvInteger in pieces of its reduction (cut_pieces): piece j is the
 * convolution of the whole source with the weights outside its inner
 * elements zeroed (in two halves, the second a sum post-op, where it has
 * split weights: exact, as the piece's sums stay below 2^24), piece 0
 * into the output, each other one into a workspace buffer added into the
 * output in int32 (dnn_int_add_step). Each piece costs a whole
 * convolution: at 2 pieces the dynamic U-Net's two such nodes still ran
 * several times faster than the CPU provider's int16 GEMM. Takes pd0, the
 * first convolution's pd (no bias: a ConvInteger has none, and a folded x
 * zero point needs sums below 2^24). */
static minfer_status add_pieces(dnn_b *b, const qplan *p, dnnl_primitive_desc_t pd0,
                                const dnnl_convolution_desc_t *cd,
                                const dnnl_memory_desc_t *wei_plain, int64_t M, int64_t inner) {
    dnnl_memory_desc_t src_md = *dnn_pd_md(pd0, dnnl_query_src_md, 0);
    dnnl_memory_desc_t dst_md = *dnn_pd_md(pd0, dnnl_query_dst_md, 0);
    int m_src = dnn_input(b, p->o.x, NULL, &src_md);
    int m_dst = m_src < 0 ? -1 : dnn_output(b, 0, &dst_md);
    int m_xz = m_dst < 0 || !p->has_xz ? -2 : zp_mem(b, p->o.xz, p->xz_const, p->xz);
    int64_t n = M * inner;
    int8_t *mask = b->check ? NULL : malloc((size_t)n);
    if (m_src < 0 || m_dst < 0 || m_xz == -1 || (!b->check && !mask)) {
        dnnl_primitive_desc_destroy(pd0);
        free(mask);
        return m_xz == -1 || m_src < 0 || m_dst < 0 ? MINFER_ERR_UNSUPPORTED
                                                    : dnn_decline(b, "out of memory");
    }
    const int8_t *lo = p->wq ? p->wq : (const int8_t *)p->w->const_data;
    minfer_status st = MINFER_OK;
    for (int j = 0; j < p->n_pieces && st == MINFER_OK; j++) {
        int m_part = j == 0 ? m_dst : dnn_ws_mem(b, &dst_md);
        if (m_part < 0)
            st = MINFER_ERR_UNSUPPORTED;
        for (int h = 0; h <= p->big[j] && st == MINFER_OK; h++) {
            dnnl_primitive_desc_t pd = NULL;
            if (j == 0 && h == 0) {
                pd = pd0;
                pd0 = NULL;
            } else {
                dnnl_primitive_attr_t attr = NULL;
                dnnl_post_ops_t po = NULL;
                st = make_attr(b, p, 1 << 1, &attr);
                if (st == MINFER_OK && h == 1 &&
                    (dnnl_post_ops_create(&po) != dnnl_success ||
                     dnnl_post_ops_append_sum(po, 1.0f) != dnnl_success ||
                     dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success))
                    st = dnn_decline(b, "could not add a piece's sum");
                dnnl_post_ops_destroy(po);
                if (st == MINFER_OK)
                    st = dnn_pd_avoid(b, cd, attr, amx_loses, &p->amx, &pd);
                dnnl_primitive_attr_destroy(attr);
                if (st != MINFER_OK)
                    break;
                if (!dnnl_memory_desc_equal(dnn_pd_md(pd, dnnl_query_src_md, 0), &src_md) ||
                    !dnnl_memory_desc_equal(dnn_pd_md(pd, dnnl_query_dst_md, 0), &dst_md)) {
                    dnnl_primitive_desc_destroy(pd);
                    st = dnn_decline(b, "a piece's layouts differ from the first's");
                    break;
                }
            }
            for (int64_t e = 0; mask && e < n; e++) {
                int64_t k = e % inner;
                int in = k >= p->cut[j] && k < p->cut[j + 1];
                mask[e] = !in ? 0 : h == 0 ? lo[e] : p->wq2[e];
            }
            int m_wei = dnn_pack_owned(b, -1, wei_plain, mask,
                                       dnn_pd_md(pd, dnnl_query_weights_md, 0));
            if (m_wei < 0) {
                dnnl_primitive_desc_destroy(pd);
                st = MINFER_ERR_UNSUPPORTED;
                break;
            }
            int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                           DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC};
            int mems[4] = {m_src, m_wei, m_part, m_xz};
            st = dnn_step_add(b, pd, p->has_xz ? 4 : 3, args, mems);
        }
        if (st == MINFER_OK && j > 0)
            st = dnn_int_add_step(b, m_part, m_dst);
    }
    if (pd0)
        dnnl_primitive_desc_destroy(pd0);
    free(mask);
    return st;
}

minfer_status dnn_build_qconv(dnn_b *b) {
    qops o = qops_of(b);
    const minfer_value_desc *x = qin(b, o.x), *w = qin(b, o.w);
    dnn_window win;
    minfer_status st;
    if (!x || !w)
        return dnn_decline(b, "needs x and w");
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return dnn_decline(b, "only 1-D to 3-D convolutions with matching x and w ranks");
    if (b->pio)
        return dnn_decline(b, "no split form");
    int nsp = x->rank - 2;
    if ((st = dnn_window_parse(b, nsp, w->dims + 2, &win)) != MINFER_OK)
        return st;
    int64_t G = dnn_attr_int(b, "group", 1);
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0];
    if (G < 1 || C % G || M % G || w->dims[1] != C / G)
        return dnn_decline(b, "channels and group do not fit");
    int64_t od[MINFER_MAX_RANK] = {N, M}, pl[DNN_MAX_SPATIAL], pr[DNN_MAX_SPATIAL];
    if (dnn_window_out(&win, x->dims + 2, 0, od + 2, pl, pr))
        return dnn_decline(b, "the window does not fit the input");
    if ((st = dnn_check_out(b, 0, x->rank, od)) != MINFER_OK)
        return st;
    qplan p;
    int64_t inner = dnn_numel(w->rank - 1, w->dims + 1);
    int no_pad = 1;
    for (int i = 0; i < nsp; i++)
        no_pad = no_pad && pl[i] == 0 && pr[i] <= 0;
    if ((st = plan_common(b, M, inner, no_pad, 1, &p)) != MINFER_OK) {
        plan_free(&p);
        return st;
    }
    dnnl_dims_t xd, wd, dd, strides, dil, padl, padr;
    int wr = x->rank;
    to_dims(xd, x->dims, x->rank, 0);
    to_dims(dd, od, x->rank, 0);
    if (G > 1) {
        wd[0] = G;
        wd[1] = M / G;
        wd[2] = C / G;
        for (int i = 0; i < nsp; i++)
            wd[3 + i] = w->dims[2 + i];
        wr++;
    } else {
        to_dims(wd, w->dims, x->rank, 0);
    }
    to_dims(strides, win.stride, nsp, 0);
    to_dims(dil, win.dil, nsp, 1);
    to_dims(padl, pl, nsp, 0);
    to_dims(padr, pr, nsp, 0);
    dnnl_memory_desc_t src_any, wei_any, wei_plain, bias_md, dst_any;
    dnnl_memory_desc_init_by_tag(&src_any, x->rank, xd, dnn_dtype(x->dtype), dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei_any, wr, wd, dnnl_s8, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst_any, x->rank, dd, dnn_dtype(p.ydt), dnnl_format_tag_any);
    int64_t wdims[MINFER_MAX_RANK + 1];
    for (int i = 0; i < wr; i++)
        wdims[i] = wd[i];
    dnn_plain_md_dt(&wei_plain, wr, wdims, dnnl_s8);
    if (p.bias || p.fold_bias)
        dnn_plain_md_dt(&bias_md, 1, &M, dnnl_s32);
    dnnl_convolution_desc_t cd;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &src_any, &wei_any,
        p.bias || p.fold_bias ? &bias_md : NULL, &dst_any, strides, dil, padl, padr);
    if (s != dnnl_success) {
        plan_free(&p);
        return dnn_fail(b, s, "int8 convolution descriptor");
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    st = make_attr(b, &p, 1 << 1, &attr);
    p.amx = (amx_case){C / G, M / G, (double)dnn_numel(x->rank, od) * (double)inner};
    if (st == MINFER_OK)
        st = dnn_pd_avoid(b, &cd, attr, amx_loses, &p.amx, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (st == MINFER_OK && p.n_pieces > 1) {
        st = add_pieces(b, &p, pd, &cd, &wei_plain, M, inner);
    } else if (st == MINFER_OK) {
        int m_src = dnn_input(b, o.x, NULL, dnn_pd_md(pd, dnnl_query_src_md, 0));
        int m_wei = m_src < 0 ? -1
                              : weights_mem(b, &p, &wei_plain,
                                            dnn_pd_md(pd, dnnl_query_weights_md, 0));
        int m_dst = m_wei < 0 ? -1 : dnn_output(b, 0, dnn_pd_md(pd, dnnl_query_dst_md, 0));
        dnnl_memory_desc_t src_md = *dnn_pd_md(pd, dnnl_query_src_md, 0);
        dnnl_memory_desc_t dst_md = *dnn_pd_md(pd, dnnl_query_dst_md, 0);
        st = add_step(b, &p, pd, m_src, m_wei, m_dst);
        if (st == MINFER_OK && p.split)
            st = add_second_half(b, &p, &src_md, &wei_any, &wei_plain, &dst_md, strides, dil,
                                 padl, padr, m_src, m_dst);
    }
    plan_free(&p);
    return st;
}

minfer_status dnn_build_qmatmul(dnn_b *b) {
    qops o = qops_of(b);
    const minfer_value_desc *a = qin(b, o.x), *w = qin(b, o.w);
    minfer_status st;
    if (!a || !w)
        return dnn_decline(b, "needs A and B");
    if (a->rank < 2 || w->rank != 2)
        return dnn_decline(b, "A of rank >= 2 and a 2-D B only");
    if (b->pio)
        return dnn_decline(b, "no split form");
    int64_t K = a->dims[a->rank - 1], N = w->dims[1];
    if (w->dims[0] != K)
        return dnn_decline(b, "inner dimensions differ");
    int64_t od[MINFER_MAX_RANK];
    memcpy(od, a->dims, (size_t)a->rank * sizeof od[0]);
    od[a->rank - 1] = N;
    if ((st = dnn_check_out(b, 0, a->rank, od)) != MINFER_OK)
        return st;
    const minfer_value_desc *az = qin(b, o.xz);
    if (az && dnn_numel(az->rank, az->dims) != 1)
        return dnn_decline(b, "A's zero point must be one value (per tensor)");
    qplan p;
    /* B [K, N]: output channel n of element k is k % N. */
    if ((st = plan_common(b, N, 1, 0, 0, &p)) != MINFER_OK) {
        plan_free(&p);
        return st;
    }
    /* A's leading axes fold into M: one [M', K] x [K, N] product. */
    int64_t Mp = dnn_numel(a->rank - 1, a->dims);
    int64_t ad[2] = {Mp, K}, wdm[2] = {K, N}, yd[2] = {Mp, N};
    dnnl_dims_t wd2 = {K, N};
    dnnl_memory_desc_t src_md, wei_any, wei_plain, dst_md;
    dnn_plain_md_dt(&src_md, 2, ad, dnn_dtype(a->dtype));
    dnn_plain_md_dt(&wei_plain, 2, wdm, dnnl_s8);
    dnn_plain_md_dt(&dst_md, 2, yd, dnn_dtype(p.ydt));
    dnnl_memory_desc_init_by_tag(&wei_any, 2, wd2, dnnl_s8, dnnl_format_tag_any);
    dnnl_matmul_desc_t md;
    dnnl_status_t s = dnnl_matmul_desc_init(&md, &src_md, &wei_any, NULL, &dst_md);
    if (s != dnnl_success) {
        plan_free(&p);
        return dnn_fail(b, s, "int8 matmul descriptor");
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    st = make_attr(b, &p, 1 << 1, &attr);
    if (st == MINFER_OK)
        st = dnn_pd(b, &md, attr, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (st == MINFER_OK) {
        int m_src = dnn_input(b, o.x, &src_md, NULL);
        int m_wei = m_src < 0 ? -1
                              : weights_mem(b, &p, &wei_plain,
                                            dnn_pd_md(pd, dnnl_query_weights_md, 0));
        int m_dst = m_wei < 0 ? -1 : dnn_output(b, 0, &dst_md);
        st = add_step(b, &p, pd, m_src, m_wei, m_dst);
    }
    plan_free(&p);
    return st;
}

/* QLinearAdd (com.microsoft: A, A_scale, A_zp, B, B_scale, B_zp, C_scale,
 * C_zp) of two tensors of one shape, uint8 or int8, with constant
 * per-tensor scales and zero points, computed here (dnn_qadd_step) in the
 * layout its inputs arrive in: elementwise, it reads any layout without
 * padding alike, so a residual sum between int8 convolutions keeps their
 * channels-last layout, where the plugin's kernel took both inputs to
 * plain and the next convolution reordered the sum back. The values are
 * the plugin's (MLAS's AVX2 order of operations, qlinear.c): with
 * ra = sa / sc, rb = sb / sc and k = zc - (ra za + rb zb), in float,
 * c = saturate(round_half_even(fma(a, ra, fma(b, rb, k)))). Broadcasting
 * is left to the plugin. */
minfer_status dnn_build_qadd(dnn_b *b) {
    const minfer_value_desc *x = qin(b, 0), *y = qin(b, 3);
    const minfer_value_desc *c = &b->node->outputs[0];
    minfer_status st;
    if (b->pio)
        return dnn_decline(b, "no split form");
    if (!x || !y || b->node->n_outputs < 1)
        return dnn_decline(b, "needs A, B and C");
    if (!is_int8(x->dtype) || y->dtype != x->dtype || (c->dtype && c->dtype != x->dtype))
        return dnn_decline(b, "A, B and C must be one of uint8 and int8");
    if (x->rank != y->rank || (x->rank > 0 && memcmp(x->dims, y->dims,
                                                     (size_t)x->rank * sizeof x->dims[0])))
        return dnn_decline(b, "A and B of one shape only (broadcasting is left to others)");
    if ((st = dnn_check_out(b, 0, x->rank, x->dims)) != MINFER_OK)
        return st;
    float sa, sb, sc;
    int64_t cnt;
    int ca, cb, cc;
    int32_t za, zb, zc;
    if ((st = read_scale(b, 1, "A's scale", 1, &sa, &cnt)) != MINFER_OK ||
        (st = read_scale(b, 4, "B's scale", 1, &sb, &cnt)) != MINFER_OK ||
        (st = read_scale(b, 6, "C's scale", 1, &sc, &cnt)) != MINFER_OK ||
        (st = check_zp(b, 2, "A's zero point", x->dtype, &ca, &za)) != MINFER_OK ||
        (st = check_zp(b, 5, "B's zero point", x->dtype, &cb, &zb)) != MINFER_OK ||
        (st = check_zp(b, 7, "C's zero point", x->dtype, &cc, &zc)) != MINFER_OK)
        return st;
    if (cnt != 1)
        return dnn_decline(b, "the scales must be one value (per tensor)");
    if (!ca || !cb || !cc)
        return dnn_decline(b, "the zero points must be constants");
    float ra = sa / sc, rb = sb / sc;
    float k = (float)zc - (ra * (float)za + rb * (float)zb);
    /* One layout for A, B and C: A's, or B's where A arrives plain and B
     * not; plain where that one has padding. */
    dnnl_memory_desc_t ma, mb;
    if (dnn_in_md(b, 0, &ma) != dnnl_success || dnn_in_md(b, 3, &mb) != dnnl_success)
        return dnn_decline(b, "bad input layout");
    dnnl_memory_desc_t want = dnn_md_is_plain(&ma) && !dnn_md_is_plain(&mb) ? mb : ma;
    if (dnnl_memory_desc_get_size(&want) != (size_t)dnn_numel(x->rank, x->dims))
        dnn_plain_md_dt(&want, x->rank, x->dims, dnn_dtype(x->dtype));
    int m_a = dnn_input(b, 0, NULL, &want);
    int m_b = m_a < 0 ? -1 : dnn_input(b, 3, NULL, &want);
    int m_c = m_b < 0 ? -1 : dnn_output(b, 0, &want);
    if (m_c < 0)
        return MINFER_ERR_UNSUPPORTED;
    return dnn_qadd_step(b, m_a, m_b, m_c, ra, rb, k);
}

/* Cast of int32, uint8 or int8 to float, as a reorder in the layout the
 * input arrives in: the int32 sums of a dynamically quantized model's
 * ConvIntegers (ORT's quantize_dynamic writes Cast, a Mul by the scales
 * and an Add of the bias after each) stay in the layout the convolution
 * wrote, where the CPU provider's Cast took them to plain and the Mul
 * reordered the floats back. oneDNN converts int32 to float rounding to
 * nearest even, as C's conversion (the reference's, ORT's static_cast)
 * does beyond 2^24. */
minfer_status dnn_build_cast(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    minfer_status st;
    if (b->pio)
        return dnn_decline(b, "no split form");
    if (!x)
        return dnn_decline(b, "needs its input");
    if (dnn_attr_int(b, "to", 0) != MINFER_DTYPE_FLOAT)
        return dnn_decline(b, "only a Cast to float");
    if (x->dtype != MINFER_DTYPE_INT32 && !is_int8(x->dtype))
        return dnn_decline(b, "only a Cast of int32, uint8 or int8");
    if ((st = dnn_check_out(b, 0, x->rank, x->dims)) != MINFER_OK)
        return st;
    dnnl_memory_desc_t md;
    if (dnn_in_md(b, 0, &md) != dnnl_success)
        return dnn_decline(b, "bad input layout");
    md.data_type = dnnl_f32;
    int m_x = dnn_input(b, 0, NULL, NULL);
    int m_y = m_x < 0 ? -1 : dnn_output(b, 0, &md);
    if (m_y < 0)
        return MINFER_ERR_UNSUPPORTED;
    return dnn_reorder_step(b, m_x, m_y);
}
