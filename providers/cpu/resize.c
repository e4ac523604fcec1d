/*
 * Resize (opset 10 to 13) and Upsample (7, 9).
 *
 * Follows the ONNX reference implementation: the output is separable, so
 * for each axis and each output coordinate x the kernel computes the source
 * coordinate x_ori (coordinate_transformation_mode), then a short list of
 * (source index, weight) taps: one for nearest, two for linear, four for
 * cubic (with the reference's neighbour choice: when x_ori is an integer
 * the taps are shifted so that the weight 1 falls on x_ori itself). Indices
 * are clamped to the axis (the reference pads with edge values), and with
 * exclude_outside the weights of taps outside the axis are dropped and the
 * rest renormalised. An output element is the sum over the product of its
 * axes' taps; tf_crop_and_resize gives extrapolation_value when any axis
 * falls outside the input. Arithmetic is in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

enum { M_NEAREST, M_LINEAR, M_CUBIC };
enum { C_HALF_PIXEL, C_PYTORCH_HALF_PIXEL, C_ALIGN_CORNERS, C_ASYMMETRIC, C_TF_HALF_PIXEL_NN,
       C_TF_CROP_AND_RESIZE };
enum { N_ROUND_PREFER_FLOOR, N_ROUND_PREFER_CEIL, N_FLOOR, N_CEIL };

typedef struct resize_state {
    int mode, coord, nearest;
    int exclude_outside;
    double cubic_a, extrapolation;
    int upsample;   /* Upsample, or Resize-10: inputs X, scales */
    size_t n_attr_scales; /* Upsample-7: the scales attribute */
    float attr_scales[CPU_MAX_RANK];
} resize_state;

static int pick(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

minfer_status cpu_prepare_resize(cpu_prep *p) {
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_half_pixel_for_nn",
                                         "tf_crop_and_resize"};
    static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                           "ceil"};
    resize_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->upsample = strcmp(p->node->op_type, "Upsample") == 0 || p->since < 11;
    const char *mode = cpu_attr_str(p, "mode", "nearest");
    /* Upsample-7 and Resize-10 say "bilinear"/"linear" for the same thing. */
    st->mode = strcmp(mode, "bilinear") == 0 ? M_LINEAR : pick(mode, modes, 3);
    st->coord = st->upsample ? C_ASYMMETRIC
                             : pick(cpu_attr_str(p, "coordinate_transformation_mode",
                                                 "half_pixel"), coords, 6);
    st->nearest = st->upsample ? N_FLOOR
                               : pick(cpu_attr_str(p, "nearest_mode", "round_prefer_floor"),
                                      nearests, 4);
    if (st->mode < 0 || st->coord < 0 || st->nearest < 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown mode attribute");
    if (st->upsample && st->mode == M_CUBIC)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "cubic needs Resize-11 or later");
    st->exclude_outside = (int)cpu_attr_int(p, "exclude_outside", 0);
    st->cubic_a = cpu_attr_float(p, "cubic_coeff_a", -0.75f);
    st->extrapolation = cpu_attr_float(p, "extrapolation_value", 0.0f);
    if (cpu_has_attr(p, "antialias") && cpu_attr_int(p, "antialias", 0))
        return cpu_decline(p, "antialias not supported");
    if (cpu_has_attr(p, "axes"))
        return cpu_decline(p, "axes not supported");
    if (strcmp(cpu_attr_str(p, "keep_aspect_ratio_policy", "stretch"), "stretch"))
        return cpu_decline(p, "keep_aspect_ratio_policy other than stretch not supported");
    if (strcmp(p->node->op_type, "Upsample") == 0 && p->since < 9) {
        const float *f;
        size_t n;
        if (!p->ctx->api->attr_floats(p->node, "scales", &f, &n) || n > CPU_MAX_RANK)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "attribute scales missing");
        memcpy(st->attr_scales, f, n * sizeof *f);
        st->n_attr_scales = n;
    }
    return MINFER_OK;
}

#define MAX_TAPS 4

typedef struct taps {
    int n;          /* taps per output coordinate */
    int64_t *idx;   /* [out][MAX_TAPS] */
    double *w;      /* [out][MAX_TAPS] */
    uint8_t *out;   /* [out]: 1 when outside the input (tf_crop_and_resize) */
} taps;

static double source_coord(const resize_state *st, double x, double scale, int64_t in,
                           int64_t out_int, const double *roi) {
    double out_w = scale * (double)in; /* as the reference: not rounded */
    (void)out_int;
    switch (st->coord) {
    case C_ALIGN_CORNERS: return out_w == 1 ? 0 : x * (double)(in - 1) / (out_w - 1);
    case C_ASYMMETRIC: return x / scale;
    case C_TF_HALF_PIXEL_NN: return (x + 0.5) / scale;
    case C_TF_CROP_AND_RESIZE: {
        double r;
        if (out_w == 1)
            r = (roi[1] - roi[0]) * (double)(in - 1) / 2;
        else
            r = x * (roi[1] - roi[0]) * (double)(in - 1) / (out_w - 1);
        return r + roi[0] * (double)(in - 1);
    }
    case C_PYTORCH_HALF_PIXEL: return out_w == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    default: return (x + 0.5) / scale - 0.5;
    }
}

static void make_taps(const resize_state *st, int64_t in, int64_t out, double scale,
                      const double *roi, taps *t) {
    t->n = st->mode == M_CUBIC ? 4 : st->mode == M_LINEAR ? 2 : 1;
    for (int64_t o = 0; o < out; o++) {
        double x = source_coord(st, (double)o, scale, in, out, roi);
        int64_t *idx = t->idx + o * MAX_TAPS;
        double *w = t->w + o * MAX_TAPS;
        /* A NaN coordinate (from a NaN roi) lies outside the input. */
        t->out[o] = st->coord == C_TF_CROP_AND_RESIZE && !(x >= 0 && x <= (double)(in - 1));
        /* Beyond +-2^62 (or NaN) the int64 conversions below are undefined;
         * every tap is past the edge there anyway, and the clamped x keeps
         * it so. */
        if (!(x >= -0x1p62 && x <= 0x1p62))
            x = x > 0 ? 0x1p62 : -0x1p62;
        /* base: the left neighbour; an integer x counts as ratio 1 from x - 1. */
        double fl = floor(x);
        int integer = fl == x;
        int64_t base = (int64_t)fl - (integer ? 1 : 0);
        double ratio = integer ? 1.0 : x - fl;
        int64_t raw[MAX_TAPS];
        if (st->mode == M_NEAREST) {
            int right;
            if (integer)
                right = 1;
            else if (st->nearest == N_ROUND_PREFER_FLOOR)
                right = ratio > 0.5;
            else if (st->nearest == N_ROUND_PREFER_CEIL)
                right = ratio >= 0.5;
            else
                right = st->nearest == N_CEIL;
            raw[0] = base + right;
            w[0] = 1;
        } else if (st->mode == M_LINEAR) {
            raw[0] = base;
            raw[1] = base + 1;
            w[0] = 1 - ratio;
            w[1] = ratio;
        } else {
            double A = st->cubic_a, r = ratio, s = 1 - ratio;
            raw[0] = base - 1;
            raw[1] = base;
            raw[2] = base + 1;
            raw[3] = base + 2;
            w[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
            w[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
            w[2] = ((A + 2) * s - (A + 3)) * s * s + 1;
            w[3] = ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A;
        }
        if (st->exclude_outside && t->n > 1) {
            double sum = 0;
            for (int k = 0; k < t->n; k++) {
                if (raw[k] < 0 || raw[k] >= in)
                    w[k] = 0;
                sum += w[k];
            }
            for (int k = 0; k < t->n && sum != 0; k++)
                w[k] /= sum;
        }
        for (int k = 0; k < t->n; k++)
            idx[k] = raw[k] < 0 ? 0 : raw[k] >= in ? in - 1 : raw[k];
    }
}

/* ---- The float fast path -------------------------------------------------
 * When every axis but the last two maps each output coordinate to the same
 * input coordinate with weight 1 (the usual N, C of an image resize) and
 * nothing falls outside the input (not tf_crop_and_resize), the output is a
 * 2-D separable filter per plane: a horizontal pass over an input row
 * (gathering the W taps) and a vertical blend of nt such rows, which is a
 * plain vectorisable loop. Horizontally filtered rows are cached per column
 * tile, so an input row used by several output rows (upsampling) is filtered
 * once. Jobs are output rows (plane, oy), in parallel. Taps of weight 0 are
 * skipped, as in the general path, so an infinity under a weight-0 tap does
 * not turn into NaN; arithmetic is in float (the general path's double gives
 * the same value to within float rounding). */

#define TILE 256 /* columns per tile: MAX_TAPS cached rows stay on the stack */

typedef struct fast_job {
    const float *x;
    float *y;
    int64_t ih, iw, oh, ow;
    int nty, ntx;
    const int64_t *iy, *ix; /* [o][MAX_TAPS] source rows / columns */
    const float *wy, *wx;   /* [o][MAX_TAPS] */
} fast_job;

/* Row src of one plane filtered horizontally over columns [c0, c1). */
static void filter_row(const fast_job *j, const float *src, int64_t c0, int64_t c1, float *out) {
    const int64_t *ix = j->ix;
    const float *wx = j->wx;
    if (j->ntx == 1) {
        for (int64_t c = c0; c < c1; c++)
            out[c - c0] = src[ix[c * MAX_TAPS]];
        return;
    }
    for (int64_t c = c0; c < c1; c++) {
        float acc = 0;
        for (int k = 0; k < j->ntx; k++) {
            float w = wx[c * MAX_TAPS + k];
            acc += w != 0 ? w * src[ix[c * MAX_TAPS + k]] : 0.0f;
        }
        out[c - c0] = acc;
    }
}

/* y = w * r (first) or y += w * r, four columns a step: the build's -O2
 * vectorises only such straight-line groups (SLP), not a plain loop. */
static void blend(float *restrict y, const float *restrict r, float w, int first, int64_t n) {
    int64_t c = 0;
    if (first) {
        for (; c + 4 <= n; c += 4) {
            y[c] = w * r[c];
            y[c + 1] = w * r[c + 1];
            y[c + 2] = w * r[c + 2];
            y[c + 3] = w * r[c + 3];
        }
        for (; c < n; c++)
            y[c] = w * r[c];
    } else {
        for (; c + 4 <= n; c += 4) {
            y[c] += w * r[c];
            y[c + 1] += w * r[c + 1];
            y[c + 2] += w * r[c + 2];
            y[c + 3] += w * r[c + 3];
        }
        for (; c < n; c++)
            y[c] += w * r[c];
    }
}

static void fast_range(void *arg, size_t b, size_t e) {
    const fast_job *j = arg;
    float cache[MAX_TAPS][TILE];
    for (int64_t c0 = 0; c0 < j->ow; c0 += TILE) {
        int64_t c1 = c0 + TILE < j->ow ? c0 + TILE : j->ow, nc = c1 - c0;
        int64_t key[MAX_TAPS] = {-1, -1, -1, -1}; /* plane * ih + row held by each slot */
        for (size_t q = b; q < e; q++) {
            int64_t plane = (int64_t)q / j->oh, oy = (int64_t)q % j->oh;
            const float *xp = j->x + plane * j->ih * j->iw;
            float *yr = j->y + (plane * j->oh + oy) * j->ow + c0;
            int slot[MAX_TAPS], keep[MAX_TAPS] = {0};
            /* Slots already holding a needed row stay; the others are refilled. */
            for (int a = 0; a < j->nty; a++) {
                int64_t want = plane * j->ih + j->iy[oy * MAX_TAPS + a];
                slot[a] = -1;
                for (int s = 0; s < MAX_TAPS; s++)
                    if (key[s] == want) {
                        slot[a] = s;
                        keep[s] = 1;
                    }
            }
            for (int a = 0; a < j->nty; a++) {
                if (slot[a] >= 0)
                    continue;
                int64_t row = j->iy[oy * MAX_TAPS + a];
                int s = 0;
                while (keep[s])
                    s++; /* at most nty <= MAX_TAPS slots are kept */
                filter_row(j, xp + row * j->iw, c0, c1, cache[s]);
                key[s] = plane * j->ih + row;
                keep[s] = 1;
                for (int a2 = a; a2 < j->nty; a2++)
                    if (slot[a2] < 0 && j->iy[oy * MAX_TAPS + a2] == row)
                        slot[a2] = s;
            }
            const float *wy = j->wy + oy * MAX_TAPS;
            int first = 1;
            for (int a = 0; a < j->nty; a++) {
                if (wy[a] == 0)
                    continue;
                blend(yr, cache[slot[a]], wy[a], first, nc);
                first = 0;
            }
            if (first)
                memset(yr, 0, (size_t)nc * sizeof *yr);
        }
    }
}

/* 1 if axis d's taps copy coordinate o from o: every tap of non-zero
 * weight reads o, and the weights sum to exactly 1 (pytorch_half_pixel on
 * an axis of size 1 reads index 0 twice, with 0.5 each). */
static int identity_axis(const taps *t, int64_t in, int64_t out) {
    if (in != out)
        return 0;
    for (int64_t o = 0; o < out; o++) {
        double sum = 0;
        for (int k = 0; k < t->n; k++) {
            double w = t->w[o * MAX_TAPS + k];
            if (w != 0 && t->idx[o * MAX_TAPS + k] != o)
                return 0;
            sum += w;
        }
        if (sum != 1)
            return 0;
    }
    return 1;
}

/* Runs the fast path if it applies; 0 if it does not. -1 out of memory. */
static int resize_fast(const cpu_exec *e, const resize_state *st, const minfer_tensor_view *x,
                       const int64_t *od, const taps *t, void *y) {
    int32_t r = x->rank;
    if (x->dtype != MINFER_DTYPE_FLOAT || r < 2 || st->coord == C_TF_CROP_AND_RESIZE)
        return 0;
    int64_t planes = 1;
    for (int32_t d = 0; d < r - 2; d++) {
        if (!identity_axis(&t[d], x->dims[d], od[d]))
            return 0;
        planes *= od[d];
    }
    fast_job j = {cpu_data(x), y, x->dims[r - 2], x->dims[r - 1], od[r - 2], od[r - 1],
                  t[r - 2].n, t[r - 1].n, t[r - 2].idx, t[r - 1].idx, NULL, NULL};
    size_t nw = (size_t)(j.oh + j.ow) * MAX_TAPS;
    float *w = cpu_malloc(e->ctx, nw * sizeof *w);
    if (!w)
        return -1;
    for (size_t i = 0; i < (size_t)j.oh * MAX_TAPS; i++)
        w[i] = (float)t[r - 2].w[i];
    for (size_t i = 0; i < (size_t)j.ow * MAX_TAPS; i++)
        w[(size_t)j.oh * MAX_TAPS + i] = (float)t[r - 1].w[i];
    j.wy = w;
    j.wx = w + (size_t)j.oh * MAX_TAPS;
    size_t rows = (size_t)(planes * j.oh), per_row = (size_t)j.ow * (size_t)(j.nty + j.ntx);
    cpu_parallel(e->ctx, rows, per_row ? (16384 + per_row - 1) / per_row : rows, fast_range, &j);
    free(w);
    return 1;
}

/* Reads a float/double 1-D tensor (scales, roi). */
static minfer_status read_floats(const cpu_exec *e, const minfer_tensor_view *v, const char *what,
                                 double *out, size_t cap, size_t *n) {
    int64_t cnt = minfer_kit_numel(v->rank, v->dims);
    if (!cpu_is_float(v->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "%s must be a float tensor", what);
    if (cnt < 0 || (size_t)cnt > cap)
        return cpu_fail(e, MINFER_ERR_LIMIT, "%s has too many entries", what);
    for (int64_t i = 0; i < cnt; i++)
        out[i] = cpu_get(cpu_data(v), v->dtype, (size_t)i);
    *n = (size_t)cnt;
    return MINFER_OK;
}

minfer_status cpu_compute_resize(const cpu_exec *e) {
    const resize_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    double scales[CPU_MAX_RANK], roi[2 * CPU_MAX_RANK];
    int64_t od[CPU_MAX_RANK];
    size_t ns = 0, nr = 0;
    minfer_status s = MINFER_OK;
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int32_t r = x->rank;
    const minfer_tensor_view *sv, *zv = NULL, *rv = NULL;
    if (st->n_attr_scales) {
        ns = st->n_attr_scales;
        for (size_t i = 0; i < ns; i++)
            scales[i] = st->attr_scales[i];
    } else {
        sv = cpu_input(e, st->upsample ? 1 : 2);
        if (!st->upsample) {
            rv = cpu_input(e, 1);
            zv = cpu_input(e, 3);
        }
        if (sv && minfer_kit_numel(sv->rank, sv->dims) > 0 &&
            (s = read_floats(e, sv, "scales", scales, CPU_MAX_RANK, &ns)) != MINFER_OK)
            return s;
    }
    if (zv && minfer_kit_numel(zv->rank, zv->dims) > 0) {
        size_t nz;
        if (ns)
            return cpu_fail(e, MINFER_ERR_MODEL, "give scales or sizes, not both");
        if ((s = cpu_read_ints(e, zv, "sizes", od, CPU_MAX_RANK, &nz)) != MINFER_OK)
            return s;
        if (nz != (size_t)r)
            return cpu_fail(e, MINFER_ERR_SHAPE, "sizes has %zu entries for rank %d", nz, (int)r);
        for (int32_t d = 0; d < r; d++) {
            if (od[d] < 0)
                return cpu_fail(e, MINFER_ERR_SHAPE, "negative size");
            scales[d] = x->dims[d] ? (double)od[d] / (double)x->dims[d] : 1.0;
        }
    } else {
        if (ns != (size_t)r)
            return cpu_fail(e, MINFER_ERR_SHAPE, "scales has %zu entries for rank %d", ns,
                            (int)r);
        for (int32_t d = 0; d < r; d++) {
            /* !(o <= 1e12) also refuses NaN: an infinite scale on an empty axis */
            double o = scales[d] * (double)x->dims[d];
            if (!(scales[d] > 0) || !(o <= 1e12))
                return cpu_fail(e, MINFER_ERR_SHAPE, "scale %g not supported on an axis of %lld",
                                scales[d], (long long)x->dims[d]);
            od[d] = (int64_t)o;
        }
    }
    for (int32_t d = 0; d < r; d++) {
        roi[d] = 0;
        roi[r + d] = 1;
    }
    if (st->coord == C_TF_CROP_AND_RESIZE) {
        if (!rv || (s = read_floats(e, rv, "roi", roi, 2 * CPU_MAX_RANK, &nr)) != MINFER_OK)
            return s ? s : cpu_fail(e, MINFER_ERR_MODEL, "tf_crop_and_resize needs roi");
        if (nr != 2 * (size_t)r)
            return cpu_fail(e, MINFER_ERR_SHAPE, "roi must have 2 * rank entries");
    }
    void *y;
    if ((s = cpu_output(e, 0, x->dtype, r, od, &y)) != MINFER_OK)
        return s;
    /* Taps per output coordinate of every axis. An empty output computes
     * nothing: its other axes may be huge (cpu_output checked only the
     * product), so nothing is sized from them. */
    size_t n = (size_t)minfer_kit_numel(r, od);
    if (n == 0)
        return MINFER_OK;
    size_t total_out = 1, taps_bytes;
    for (int32_t d = 0; d < r; d++)
        total_out += (size_t)od[d]; /* each od[d] <= n, at most CPU_MAX_RANK of them */
    if (minfer_size_mul(total_out, MAX_TAPS * sizeof(double), &taps_bytes) != MINFER_OK)
        return cpu_fail(e, MINFER_ERR_LIMIT, "%zu output coordinates need too much scratch",
                        total_out);
    int64_t *idx = cpu_malloc(e->ctx, taps_bytes);
    double *w = cpu_malloc(e->ctx, taps_bytes);
    uint8_t *outside = cpu_malloc(e->ctx, total_out);
    taps t[CPU_MAX_RANK];
    if (!idx || !w || !outside) {
        s = cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t d = 0, off = 0; d < (size_t)r; off += (size_t)od[d], d++) {
        double roi_d[2] = {roi[d], roi[r + d]};
        t[d].idx = idx + (size_t)off * MAX_TAPS;
        t[d].w = w + (size_t)off * MAX_TAPS;
        t[d].out = outside + off;
        make_taps(st, x->dims[d], od[d], scales[d], roi_d, &t[d]);
    }
    /* Every axis unchanged (an image already at the size a detector's
     * transform resizes to, 0.6 ms of SSDLite's 14 at 320x320): a copy. */
    int same = st->coord != C_TF_CROP_AND_RESIZE && x->dtype != MINFER_DTYPE_STRING;
    for (int32_t d = 0; same && d < r; d++)
        same = identity_axis(&t[d], x->dims[d], od[d]);
    if (same) {
        memcpy(y, cpu_data(x), n * minfer_elem_size(x->dtype));
        goto done;
    }
    int fast = resize_fast(e, st, x, od, t, y);
    if (fast) {
        if (fast < 0)
            s = cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
        goto done;
    }
    int64_t xs[CPU_MAX_RANK], oi[CPU_MAX_RANK];
    cpu_strides(r, x->dims, xs);
    const void *xd = cpu_data(x);
    for (size_t i = 0; i < n; i++) {
        size_t rem = i;
        int out = 0;
        for (int32_t d = r - 1; d >= 0; d--) {
            oi[d] = (int64_t)(rem % (size_t)od[d]);
            rem /= (size_t)od[d];
            out |= t[d].out[oi[d]];
        }
        if (out) {
            cpu_set(y, x->dtype, i, st->extrapolation);
            continue;
        }
        /* Sum over the product of the axes' taps (k enumerates tap tuples). */
        size_t combos = 1;
        for (int32_t d = 0; d < r; d++)
            combos *= (size_t)t[d].n;
        double acc = 0;
        for (size_t k = 0; k < combos; k++) {
            size_t kk = k, off = 0;
            double wt = 1;
            for (int32_t d = r - 1; d >= 0 && wt != 0; d--) {
                size_t tap = kk % (size_t)t[d].n;
                kk /= (size_t)t[d].n;
                wt *= t[d].w[oi[d] * MAX_TAPS + (int64_t)tap];
                off += (size_t)(t[d].idx[oi[d] * MAX_TAPS + (int64_t)tap] * xs[d]);
            }
            if (wt != 0)
                acc += wt * cpu_get(xd, x->dtype, off);
        }
        cpu_set(y, x->dtype, i, acc);
    }
done:
    free(outside);
    free(w);
    free(idx);
    return s;
}

/* ---- GridSample (opset 16, 4-D) ------------------------------------------------
 * As PyTorch's grid_sampler_2d, which produced the ONNX test data: the grid's
 * normalized (x, y) are unnormalized (align_corners), then for nearest and
 * bilinear the coordinate itself is clamped (border) or reflected
 * (reflection); bicubic applies the padding to each of its 4x4 taps
 * instead. Taps outside the input read 0 under zeros padding. */

enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

typedef struct gs_state {
    int mode, padding, align;
} gs_state;

minfer_status cpu_prepare_gridsample(cpu_prep *p) {
    static const char *const modes[] = {"nearest", "bilinear", "bicubic"};
    static const char *const pads[] = {"zeros", "border", "reflection"};
    gs_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    int m = pick(cpu_attr_str(p, "mode", "bilinear"), modes, 3);
    st->mode = m == 0 ? M_NEAREST : m == 1 ? M_LINEAR : M_CUBIC;
    st->padding = pick(cpu_attr_str(p, "padding_mode", "zeros"), pads, 3);
    st->align = (int)cpu_attr_int(p, "align_corners", 0);
    if (m < 0 || st->padding < 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown mode or padding_mode");
    return MINFER_OK;
}

static double gs_reflect(double v, double twice_lo, double twice_hi) {
    if (twice_lo == twice_hi)
        return 0;
    double lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
    v = fabs(v - lo);
    double extra = fmod(v, span);
    int flips = (int)floor(v / span);
    return flips % 2 == 0 ? extra + lo : span - extra + lo;
}

/* Applies the padding mode to a coordinate along an axis of size n. */
static double gs_pad_coord(const gs_state *st, double v, int64_t n) {
    if (st->padding == GS_BORDER) {
        v = fmin(fmax(v, 0), (double)(n - 1));
    } else if (st->padding == GS_REFLECTION) {
        v = st->align ? gs_reflect(v, 0, 2.0 * (double)(n - 1)) : gs_reflect(v, -1, 2.0 * (double)n - 1);
        v = fmin(fmax(v, 0), (double)(n - 1));
    }
    return v;
}

static double gs_pixel(const gs_state *st, const void *d, int32_t dt, size_t plane, int64_t H,
                       int64_t W, int64_t yy, int64_t xx, int pad_taps) {
    if (pad_taps && st->padding != GS_ZEROS) {
        yy = (int64_t)gs_pad_coord(st, (double)yy, H);
        xx = (int64_t)gs_pad_coord(st, (double)xx, W);
    }
    if (yy < 0 || yy >= H || xx < 0 || xx >= W)
        return 0;
    return cpu_get(d, dt, plane + (size_t)(yy * W + xx));
}

static void gs_cubic(double t, double *w) {
    const double A = -0.75;
    double x;
    x = t + 1, w[0] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
    x = t, w[1] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 1 - t, w[2] = ((A + 2) * x - (A + 3)) * x * x + 1;
    x = 2 - t, w[3] = ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}

minfer_status cpu_compute_gridsample(const cpu_exec *e) {
    const gs_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *g = cpu_input(e, 1);
    if (!x || !g || x->rank != 4 || g->rank != 4 || g->dims[3] != 2 || g->dims[0] != x->dims[0] ||
        !cpu_is_float(x->dtype) || !cpu_is_float(g->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "X must be [N,C,H,W] and grid [N,Ho,Wo,2]");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t Ho = g->dims[1], Wo = g->dims[2];
    int64_t od[4] = {N, C, Ho, Wo};
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, 4, od, &y);
    if (s)
        return s;
    const void *xd = cpu_data(x), *gd = cpu_data(g);
    for (int64_t n = 0; n < N; n++)
        for (int64_t i = 0; i < Ho; i++)
            for (int64_t j = 0; j < Wo; j++) {
                size_t gi = (size_t)(((n * Ho + i) * Wo + j) * 2);
                double gx = cpu_get(gd, g->dtype, gi), gy = cpu_get(gd, g->dtype, gi + 1);
                double fx = st->align ? (gx + 1) / 2 * (double)(W - 1) : ((gx + 1) * (double)W - 1) / 2;
                double fy = st->align ? (gy + 1) / 2 * (double)(H - 1) : ((gy + 1) * (double)H - 1) / 2;
                /* Keeps the integer conversions below defined for any grid
                 * value: far outside (or NaN) is simply outside. */
                fx = fx == fx ? fmin(fmax(fx, -1e9), 1e9) : -1e9;
                fy = fy == fy ? fmin(fmax(fy, -1e9), 1e9) : -1e9;
                if (st->mode != M_CUBIC) {
                    fx = gs_pad_coord(st, fx, W);
                    fy = gs_pad_coord(st, fy, H);
                }
                for (int64_t c = 0; c < C; c++) {
                    size_t plane = (size_t)((n * C + c) * H * W);
                    double v = 0;
                    if (st->mode == M_NEAREST) {
                        v = gs_pixel(st, xd, x->dtype, plane, H, W, (int64_t)nearbyint(fy),
                                     (int64_t)nearbyint(fx), 0);
                    } else if (st->mode == M_LINEAR) {
                        int64_t x0 = (int64_t)floor(fx), y0 = (int64_t)floor(fy);
                        double lx = fx - (double)x0, ly = fy - (double)y0;
                        v = (1 - ly) * (1 - lx) * gs_pixel(st, xd, x->dtype, plane, H, W, y0, x0, 0) +
                            (1 - ly) * lx * gs_pixel(st, xd, x->dtype, plane, H, W, y0, x0 + 1, 0) +
                            ly * (1 - lx) * gs_pixel(st, xd, x->dtype, plane, H, W, y0 + 1, x0, 0) +
                            ly * lx * gs_pixel(st, xd, x->dtype, plane, H, W, y0 + 1, x0 + 1, 0);
                    } else {
                        int64_t x0 = (int64_t)floor(fx) - 1, y0 = (int64_t)floor(fy) - 1;
                        double wx[4], wy[4];
                        gs_cubic(fx - floor(fx), wx);
                        gs_cubic(fy - floor(fy), wy);
                        for (int a = 0; a < 4; a++)
                            for (int b = 0; b < 4; b++)
                                v += wy[a] * wx[b] *
                                     gs_pixel(st, xd, x->dtype, plane, H, W, y0 + a, x0 + b, 1);
                    }
                    cpu_set(y, x->dtype, (size_t)(((n * C + c) * Ho + i) * Wo + j), v);
                }
            }
    return MINFER_OK;
}
