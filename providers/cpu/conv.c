/*
 * Conv, and the sliding-window geometry it shares with the pools.
 *
 * Conv is im2col + GEMM per (image, group): the input patch of every output
 * position becomes a column of a (C/group * kernel volume) x (output
 * positions) matrix, and the group's weights, already row-major
 * (C_out/group) x (C/group * kernel volume), multiply it into the output. A
 * 1x1 kernel with unit strides and no padding needs no im2col: the input
 * is that matrix. 1-D and 2-D convolutions are run as 3-D ones with leading
 * unit dims.
 *
 * A depthwise convolution (one input channel per group, any number of
 * outputs per group) runs directly, without im2col: its work items are
 * the output rows of every (image, output channel), so that a 7x7 layer
 * of 960 channels still has 6720 of them for 16 threads. It sums the
 * kernel taps in im2col's row order, padding included (w * 0), so its
 * results are the same bits as the GEMM's.
 *
 * Threads: with one group, im2col and the GEMM run in parallel themselves;
 * with several groups of more than one input channel each, groups are
 * spread over threads, each with its own slice of the workspace.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---- Window geometry ------------------------------------------------------ */

minfer_status cpu_window_parse(cpu_prep *p, cpu_window *w, int nsp, const int64_t *kernel) {
    size_t n;
    int64_t tmp[2 * CPU_MAX_RANK];
    memset(w, 0, sizeof *w);
    if (nsp < 1 || nsp > CPU_MAX_SPATIAL)
        return cpu_decline(p, "%d spatial dimensions not supported (1 to 3)", nsp);
    w->nsp = nsp;
    for (int i = 0; i < nsp; i++)
        w->kernel[i] = w->stride[i] = w->dilation[i] = 1;
    int r = cpu_attr_ints(p, "kernel_shape", tmp, 2 * CPU_MAX_RANK, &n);
    if (r < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0) {
        if (n != (size_t)nsp)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "kernel_shape has %zu entries, expected %d",
                                 n, nsp);
        memcpy(w->kernel, tmp, n * sizeof tmp[0]);
        if (kernel)
            for (int i = 0; i < nsp; i++)
                if (kernel[i] >= 0 && kernel[i] != w->kernel[i])
                    return cpu_prep_fail(p, MINFER_ERR_MODEL,
                                         "kernel_shape does not match the weights");
    } else if (kernel) {
        for (int i = 0; i < nsp; i++)
            w->kernel[i] = kernel[i];
    } else {
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "kernel_shape is required");
    }
    static const char *const names[2] = {"strides", "dilations"};
    int64_t *dst[2] = {w->stride, w->dilation};
    for (int a = 0; a < 2; a++) {
        r = cpu_attr_ints(p, names[a], tmp, 2 * CPU_MAX_RANK, &n);
        if (r < 0)
            return MINFER_ERR_UNSUPPORTED;
        if (r > 0 && n != (size_t)nsp)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "%s has %zu entries, expected %d",
                                 names[a], n, nsp);
        if (r > 0)
            memcpy(dst[a], tmp, n * sizeof tmp[0]);
    }
    r = cpu_attr_ints(p, "pads", tmp, 2 * CPU_MAX_RANK, &n);
    if (r < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n != 2 * (size_t)nsp)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "pads has %zu entries, expected %d", n,
                             2 * nsp);
    if (r > 0)
        memcpy(w->pads, tmp, n * sizeof tmp[0]);
    for (int i = 0; i < nsp; i++) {
        if (w->kernel[i] < 1 || w->stride[i] < 1 || w->dilation[i] < 1)
            return cpu_prep_fail(p, MINFER_ERR_MODEL,
                                 "kernel, strides and dilations must be positive");
        if (w->pads[i] < 0 || w->pads[nsp + i] < 0)
            return cpu_decline(p, "negative pads not supported");
    }
    const char *ap = cpu_attr_str(p, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") == 0)
        w->auto_pad = CPU_PAD_NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0)
        w->auto_pad = CPU_PAD_SAME_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0)
        w->auto_pad = CPU_PAD_SAME_LOWER;
    else if (strcmp(ap, "VALID") == 0)
        w->auto_pad = CPU_PAD_VALID;
    else
        return cpu_decline(p, "auto_pad '%s' not supported", ap);
    w->ceil_mode = cpu_attr_int(p, "ceil_mode", 0) != 0;
    return MINFER_OK;
}

int cpu_window_out(const cpu_window *w, const int64_t *in, int64_t *out, int64_t *pad_begin) {
    /* Checked throughout: attributes near INT64_MAX are a -1, not an
     * overflow. */
    for (int i = 0; i < w->nsp; i++) {
        int64_t dk, s = w->stride[i], span;
        if (in[i] < 0 || minfer_i64_mul(w->kernel[i] - 1, w->dilation[i], &dk) ||
            minfer_i64_add(dk, 1, &dk))
            return -1;
        switch (w->auto_pad) {
        case CPU_PAD_SAME_UPPER:
        case CPU_PAD_SAME_LOWER: {
            out[i] = in[i] / s + (in[i] % s != 0);
            int64_t total;
            if (minfer_i64_mul(out[i] - 1, s, &total) ||
                minfer_i64_add(total, dk - in[i], &total))
                return -1;
            if (total < 0)
                total = 0;
            pad_begin[i] = w->auto_pad == CPU_PAD_SAME_UPPER ? total / 2 : total - total / 2;
            break;
        }
        case CPU_PAD_VALID:
            if (in[i] < dk)
                return -1;
            out[i] = (in[i] - dk) / s + 1;
            pad_begin[i] = 0;
            break;
        default: {
            if (minfer_i64_add(in[i], w->pads[i], &span) ||
                minfer_i64_add(span, w->pads[w->nsp + i], &span) || span < dk)
                return -1;
            span -= dk;
            out[i] = (w->ceil_mode ? span / s + (span % s != 0) : span / s) + 1;
            pad_begin[i] = w->pads[i];
            break;
        }
        }
    }
    return 0;
}

/* ---- Conv ----------------------------------------------------------------- */

typedef struct conv_state {
    cpu_window w;
    int64_t group;
    int threads;
} conv_state;

/* Geometry of one run, in 3-D form (leading unit dims for 1-D and 2-D). */
typedef struct conv_geom {
    size_t N, C, M, G, Cg, Mg;     /* images, in/out channels, groups, per group */
    size_t in[3], out[3], k[3];    /* spatial sizes */
    int64_t stride[3], dil[3], pad[3];
    size_t in_plane, out_plane, kvol, rows; /* rows = Cg * kvol */
    int direct;                    /* 1x1, unit stride, no padding */
} conv_geom;

static int conv_geometry(const conv_state *st, int32_t xrank, const int64_t *xd,
                         const int64_t *wd, conv_geom *g) {
    int nsp = st->w.nsp, off = 3 - nsp;
    int64_t out[3], pb[3];
    if (xrank != nsp + 2 || cpu_window_out(&st->w, xd + 2, out, pb))
        return -1;
    memset(g, 0, sizeof *g);
    g->N = (size_t)xd[0];
    g->C = (size_t)xd[1];
    g->M = (size_t)wd[0];
    g->G = (size_t)st->group;
    if (g->G == 0 || g->C % g->G || g->M % g->G || (int64_t)(g->C / g->G) != wd[1])
        return -1;
    g->Cg = g->C / g->G;
    g->Mg = g->M / g->G;
    g->in_plane = g->out_plane = g->kvol = 1;
    g->direct = 1;
    for (int i = 0; i < 3; i++) {
        int s = i - off;
        g->in[i] = s >= 0 ? (size_t)xd[2 + s] : 1;
        g->out[i] = s >= 0 ? (size_t)out[s] : 1;
        g->k[i] = s >= 0 ? (size_t)st->w.kernel[s] : 1;
        g->stride[i] = s >= 0 ? st->w.stride[s] : 1;
        g->dil[i] = s >= 0 ? st->w.dilation[s] : 1;
        g->pad[i] = s >= 0 ? pb[s] : 0;
        /* Products of dims of an empty tensor are not bounded by its size. */
        if (minfer_size_mul(g->in_plane, g->in[i], &g->in_plane) ||
            minfer_size_mul(g->out_plane, g->out[i], &g->out_plane) ||
            minfer_size_mul(g->kvol, g->k[i], &g->kvol))
            return -1;
        if (g->k[i] != 1 || g->stride[i] != 1 || g->pad[i] != 0 || g->out[i] != g->in[i])
            g->direct = 0;
    }
    return minfer_size_mul(g->Cg, g->kvol, &g->rows) ? -1 : 0;
}

/* Bytes of the im2col workspace: slices of rows x out_plane elements. */
static minfer_status im2col_bytes(const conv_geom *g, size_t slices, size_t es, size_t *out) {
    size_t n;
    if (minfer_size_mul(g->rows, g->out_plane, &n) || minfer_size_mul(n, slices, &n))
        return MINFER_ERR_LIMIT;
    return minfer_size_mul(n, es, out);
}

/* A depthwise convolution: one input channel per group (run directly, no
 * workspace). */
static int conv_depthwise(const conv_geom *g) { return g->G > 1 && g->Cg == 1; }

/* Whether groups run in parallel, each with a workspace slice. */
static int conv_by_group(const conv_geom *g, int threads) {
    return threads > 1 && g->N * g->G >= 2 * (size_t)threads && g->G > 1;
}

minfer_status cpu_prepare_conv(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = minfer_kit_input(n, 0), *w = minfer_kit_input(n, 1);
    if (!x || !w)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs X and W");
    if (w->dtype && w->dtype != x->dtype)
        return cpu_decline(p, "X and W types differ");
    const minfer_value_desc *b = minfer_kit_input(n, 2);
    if (b && b->dtype && b->dtype != x->dtype)
        return cpu_decline(p, "bias type differs from X");
    int rank = w->rank >= 0 ? w->rank : x->rank;
    if (rank < 0)
        return cpu_decline(p, "rank of X and W unknown");
    if (rank < 3 || rank > 5)
        return cpu_decline(p, "%d-D convolution not supported (1-D to 3-D)", rank - 2);
    conv_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    minfer_status s = cpu_window_parse(p, &st->w, rank - 2, w->rank == rank ? w->dims + 2 : NULL);
    if (s)
        return s;
    st->group = cpu_attr_int(p, "group", 1);
    if (st->group < 1)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "group must be >= 1");
    st->threads = cpu_threads(p->ctx);
    if (!p->prep)
        return MINFER_OK;
    conv_geom g;
    int known = x->rank == rank && w->rank == rank;
    for (int i = 0; known && i < rank; i++)
        known = x->dims[i] >= 0 && w->dims[i] >= 0;
    if (known && conv_geometry(st, x->rank, x->dims, w->dims, &g) == 0 && !g.direct &&
        !conv_depthwise(&g) &&
        im2col_bytes(&g, conv_by_group(&g, st->threads) ? (size_t)st->threads : 1,
                     minfer_elem_size(x->dtype), &p->prep->workspace_bytes) != MINFER_OK)
        return cpu_prep_fail(p, MINFER_ERR_LIMIT,
                             "the im2col workspace (%zu rows of %zu) has more bytes than fit "
                             "in memory", g.rows, g.out_plane);
    return MINFER_OK;
}

typedef struct conv_job {
    const cpu_ctx *ctx;
    const conv_geom *g;
    int32_t dtype;
    const void *x, *w, *bias;
    void *y, *ws;
    size_t slices;
    const void *im_src; /* im2col source for the parallel-rows pass */
    void *im_dst;
} conv_job;

/* im2col rows [r0, r1) of one group's input (Cg channels). */
#define IM2COL(E, T, S)                                                                    \
    static void im2col_##S(const conv_geom *g, const T *x, T *col, size_t r0, size_t r1) { \
        for (size_t r = r0; r < r1; r++) {                                                 \
            size_t q = r % g->k[2], b = (r / g->k[2]) % g->k[1];                           \
            size_t a = (r / (g->k[2] * g->k[1])) % g->k[0], c = r / g->kvol;               \
            const T *xc = x + c * g->in_plane;                                             \
            T *dst = col + r * g->out_plane;                                               \
            for (size_t od = 0; od < g->out[0]; od++) {                                    \
                int64_t id = (int64_t)od * g->stride[0] - g->pad[0] + (int64_t)a * g->dil[0]; \
                for (size_t oh = 0; oh < g->out[1]; oh++) {                                \
                    int64_t ih = (int64_t)oh * g->stride[1] - g->pad[1] + (int64_t)b * g->dil[1]; \
                    T *d = dst + (od * g->out[1] + oh) * g->out[2];                        \
                    if (id < 0 || id >= (int64_t)g->in[0] || ih < 0 || ih >= (int64_t)g->in[1]) { \
                        memset(d, 0, g->out[2] * sizeof(T));                               \
                        continue;                                                          \
                    }                                                                      \
                    const T *row = xc + ((size_t)id * g->in[1] + (size_t)ih) * g->in[2];   \
                    int64_t iw = (int64_t)q * g->dil[2] - g->pad[2];                       \
                    for (size_t ow = 0; ow < g->out[2]; ow++, iw += g->stride[2])          \
                        d[ow] = iw >= 0 && iw < (int64_t)g->in[2] ? row[iw] : (T)0;        \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
    }                                                                                      \
    static void fill_bias_##S(const conv_geom *g, T *y, const T *bias) {                  \
        for (size_t m = 0; m < g->Mg; m++)                                                 \
            for (size_t i = 0; i < g->out_plane; i++)                                      \
                y[m * g->out_plane + i] = bias[m];                                         \
    }
CPU_FLOAT_TYPES(IM2COL)

static void im2col_any(const conv_job *j, const void *x, void *col, size_t r0, size_t r1) {
    if (j->dtype == MINFER_DTYPE_FLOAT)
        im2col_f32(j->g, x, col, r0, r1);
    else
        im2col_f64(j->g, x, col, r0, r1);
}

static void im2col_range(void *arg, size_t r0, size_t r1) {
    const conv_job *j = arg;
    im2col_any(j, j->im_src, j->im_dst, r0, r1);
}

/* One (image, group): y = W_g * col (+ bias). */
static void conv_task(conv_job *j, size_t task, void *ws, int parallel) {
    const conv_geom *g = j->g;
    size_t es = minfer_elem_size(j->dtype);
    size_t n = task / g->G, grp = task % g->G;
    const char *x = (const char *)j->x + (n * g->C + grp * g->Cg) * g->in_plane * es;
    char *y = (char *)j->y + (n * g->M + grp * g->Mg) * g->out_plane * es;
    const char *w = (const char *)j->w + grp * g->Mg * g->rows * es;
    const void *col = x;
    if (!g->direct) {
        if (parallel) {
            j->im_src = x;
            j->im_dst = ws;
            size_t grain = (32768 + g->out_plane - 1) / (g->out_plane ? g->out_plane : 1);
            cpu_parallel(j->ctx, g->rows, grain, im2col_range, j);
        } else {
            im2col_any(j, x, ws, 0, g->rows);
        }
        col = ws;
    }
    if (j->bias) {
        const char *b = (const char *)j->bias + grp * g->Mg * es;
        if (j->dtype == MINFER_DTYPE_FLOAT)
            fill_bias_f32(g, (float *)y, (const float *)b);
        else
            fill_bias_f64(g, (double *)y, (const double *)b);
    }
    cpu_gemm(j->ctx, j->dtype, parallel, g->Mg, g->out_plane, g->rows, w, g->rows, 1, col,
             g->out_plane, y, g->out_plane, j->bias != NULL);
}

/* Depthwise rows [r0, r1): row r is output row (od, oh) of output channel
 * m of image n, r = ((n * M + m) * out[0] + od) * out[1] + oh. Each output
 * sums its taps in im2col's order (kd, kh, kw), a tap in the padding as
 * w * 0, from 0, then adds to the bias (y = bias + sum), as the GEMM does;
 * DW_TILE outputs of a row at a time. */
#define DW_TILE 64
#define DEPTHWISE(E, T, S)                                                                 \
    static void depthwise_##S(const conv_job *j, size_t r0, size_t r1) {                   \
        const conv_geom *g = j->g;                                                         \
        const T *X = j->x, *W = j->w, *B = j->bias;                                        \
        T *Y = j->y;                                                                       \
        size_t W_in = g->in[2], W_out = g->out[2];                                         \
        for (size_t r = r0; r < r1; r++) {                                                 \
            size_t oh = r % g->out[1], od = (r / g->out[1]) % g->out[0];                   \
            size_t nm = r / (g->out[1] * g->out[0]), m = nm % g->M, n = nm / g->M;        \
            const T *xc = X + (n * g->C + m / g->Mg) * g->in_plane;                        \
            const T *wm = W + m * g->kvol;                                                 \
            T *y = Y + nm * g->out_plane + (od * g->out[1] + oh) * W_out;                  \
            for (size_t t0 = 0; t0 < W_out; t0 += DW_TILE) {                               \
                size_t tn = W_out - t0 < DW_TILE ? W_out - t0 : DW_TILE;                   \
                T acc[DW_TILE] = {0};                                                      \
                for (size_t a = 0; a < g->k[0]; a++) {                                     \
                    int64_t id = (int64_t)od * g->stride[0] - g->pad[0] + (int64_t)a * g->dil[0]; \
                    for (size_t b = 0; b < g->k[1]; b++) {                                 \
                        int64_t ih = (int64_t)oh * g->stride[1] - g->pad[1] +              \
                                     (int64_t)b * g->dil[1];                               \
                        int pad_row = id < 0 || id >= (int64_t)g->in[0] || ih < 0 ||      \
                                      ih >= (int64_t)g->in[1];                             \
                        const T *row = pad_row ? NULL                                      \
                                               : xc + ((size_t)id * g->in[1] + (size_t)ih) * W_in; \
                        const T *wr = wm + (a * g->k[1] + b) * g->k[2];                    \
                        for (size_t q = 0; q < g->k[2]; q++) {                             \
                            T wv = wr[q], w0 = wv * (T)0;                                  \
                            int64_t s = g->stride[2];                                      \
                            int64_t iw0 = (int64_t)t0 * s + (int64_t)q * g->dil[2] - g->pad[2]; \
                            /* outputs [lo, hi) read inside the row, the others padding */ \
                            int64_t lo = iw0 >= 0 ? 0 : (-iw0 + s - 1) / s;                \
                            int64_t hi = iw0 >= (int64_t)W_in ? 0                          \
                                         : ((int64_t)W_in - iw0 + s - 1) / s;              \
                            if (!row || lo > (int64_t)tn)                                  \
                                lo = (int64_t)tn;                                          \
                            if (hi > (int64_t)tn)                                          \
                                hi = (int64_t)tn;                                          \
                            if (hi < lo)                                                   \
                                hi = lo;                                                   \
                            size_t o = 0;                                                  \
                            for (; o < (size_t)lo; o++)                                    \
                                acc[o] += w0;                                              \
                            if (lo < hi) {                                                 \
                                const T *xr = row + (iw0 + lo * s); /* output lo's input */ \
                                if (s == 1)                                                \
                                    for (size_t k = 0; o < (size_t)hi; o++, k++)           \
                                        acc[o] += wv * xr[k];                              \
                                else                                                       \
                                    for (size_t k = 0; o < (size_t)hi; o++, k += (size_t)s) \
                                        acc[o] += wv * xr[k];                              \
                            }                                                              \
                            for (; o < tn; o++)                                            \
                                acc[o] += w0;                                              \
                        }                                                                  \
                    }                                                                      \
                }                                                                          \
                for (size_t o = 0; o < tn; o++)                                            \
                    y[t0 + o] = B ? B[m] + acc[o] : acc[o];                                \
            }                                                                              \
        }                                                                                  \
    }
CPU_FLOAT_TYPES(DEPTHWISE)

static void depthwise_range(void *arg, size_t r0, size_t r1) {
    const conv_job *j = arg;
    if (j->dtype == MINFER_DTYPE_FLOAT)
        depthwise_f32(j, r0, r1);
    else
        depthwise_f64(j, r0, r1);
}

static void conv_slices(void *arg, size_t s0, size_t s1) {
    conv_job *j = arg;
    size_t tasks = j->g->N * j->g->G;
    size_t ws_slice = j->g->rows * j->g->out_plane * minfer_elem_size(j->dtype);
    for (size_t s = s0; s < s1; s++) {
        void *ws = (char *)j->ws + s * ws_slice;
        for (size_t t = s * tasks / j->slices; t < (s + 1) * tasks / j->slices; t++)
            conv_task(j, t, ws, 0);
    }
}

minfer_status cpu_compute_conv(const cpu_exec *e) {
    const conv_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *w = cpu_input(e, 1), *b = cpu_input(e, 2);
    if (!x || !w)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (x->dtype != w->dtype || (b && b->dtype != x->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "input types differ");
    if (x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    if (w->rank != x->rank)
        return cpu_fail(e, MINFER_ERR_SHAPE, "X and W ranks differ");
    for (int i = 0; i < st->w.nsp; i++)
        if (w->dims[2 + i] != st->w.kernel[i])
            return cpu_fail(e, MINFER_ERR_SHAPE, "W does not match kernel_shape");
    conv_geom g;
    if (conv_geometry(st, x->rank, x->dims, w->dims, &g))
        return cpu_fail(e, MINFER_ERR_SHAPE,
                        "input, weights and group do not fit (or the window exceeds the input)");
    if (b && (b->rank != 1 || (size_t)b->dims[0] != g.M))
        return cpu_fail(e, MINFER_ERR_SHAPE, "bias must have %zu elements", g.M);
    int64_t od[CPU_MAX_RANK];
    od[0] = (int64_t)g.N;
    od[1] = (int64_t)g.M;
    for (int i = 0; i < st->w.nsp; i++)
        od[2 + i] = (int64_t)g.out[3 - st->w.nsp + i];
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, od, &y);
    if (s)
        return s;
    conv_job j = {e->ctx, &g, x->dtype, cpu_data(x), cpu_data(w), b ? cpu_data(b) : NULL,
                  y, e->args->workspace, 1, NULL, NULL};
    size_t tasks = g.N * g.G;
    if (tasks == 0 || g.out_plane == 0 || g.Mg == 0)
        return MINFER_OK;
    if (conv_depthwise(&g)) {
        /* rows of every (image, output channel); about 16k multiply-adds a chunk */
        size_t rows = g.N * g.M * g.out[0] * g.out[1], per = g.out[2] * g.kvol;
        cpu_parallel(e->ctx, rows, per ? (16384 + per - 1) / per : rows, depthwise_range, &j);
        return MINFER_OK;
    }
    int by_group = conv_by_group(&g, st->threads);
    if (by_group)
        j.slices = (size_t)st->threads;
    size_t need = 0;
    if (!g.direct && im2col_bytes(&g, j.slices, minfer_elem_size(x->dtype), &need) != MINFER_OK)
        return cpu_fail(e, MINFER_ERR_LIMIT, "the im2col workspace has more bytes than fit in "
                        "memory");
    if (e->args->workspace_bytes < need || (need && !e->args->workspace))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "workspace of %zu bytes, %zu needed",
                        e->args->workspace_bytes, need);
    if (by_group) {
        cpu_parallel(e->ctx, j.slices, 1, conv_slices, &j);
    } else {
        for (size_t t = 0; t < tasks; t++)
            conv_task(&j, t, j.ws, 1);
    }
    return MINFER_OK;
}

/* ---- ConvTranspose ---------------------------------------------------------
 * The direct scatter form: every input element, times every kernel tap,
 * adds into the output element at i * stride + k * dilation - pad_begin.
 * Accumulates in double (a temporary of the output's size), then stores in
 * the output type. Runs 1-D to 3-D as 3-D with leading unit dims. */

typedef struct convt_state {
    int nsp;
    int64_t group;
    int64_t kernel[CPU_MAX_SPATIAL], stride[CPU_MAX_SPATIAL], dil[CPU_MAX_SPATIAL];
    int64_t pads[2 * CPU_MAX_SPATIAL], out_pad[CPU_MAX_SPATIAL], out_shape[CPU_MAX_SPATIAL];
    int has_kernel, has_out_shape, auto_pad;
} convt_state;

/* Reads an ints attribute of exactly want entries (or absent). */
static int convt_ints(cpu_prep *p, const char *name, int64_t *out, size_t want) {
    int64_t tmp[2 * CPU_MAX_RANK];
    size_t n;
    int r = cpu_attr_ints(p, name, tmp, 2 * CPU_MAX_RANK, &n);
    if (r <= 0)
        return r;
    if (n != want) {
        cpu_prep_fail(p, MINFER_ERR_MODEL, "%s has %zu entries, expected %zu", name, n, want);
        return -1;
    }
    memcpy(out, tmp, n * sizeof *tmp);
    return 1;
}

minfer_status cpu_prepare_convtranspose(cpu_prep *p) {
    const minfer_value_desc *x = minfer_kit_input(p->node, 0), *w = minfer_kit_input(p->node, 1);
    if (!x || !w)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs X and W");
    int32_t rank = x->rank >= 0 ? x->rank : w->rank;
    if (rank < 3 || rank > 2 + CPU_MAX_SPATIAL)
        return cpu_decline(p, "1 to 3 spatial dims supported (rank known at prepare)");
    convt_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    int nsp = st->nsp = rank - 2;
    for (int i = 0; i < nsp; i++)
        st->stride[i] = st->dil[i] = 1;
    st->group = cpu_attr_int(p, "group", 1);
    if (st->group < 1)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "group must be positive");
    int r;
    if ((r = convt_ints(p, "kernel_shape", st->kernel, (size_t)nsp)) < 0 ||
        (st->has_kernel = r, 0) || convt_ints(p, "strides", st->stride, (size_t)nsp) < 0 ||
        convt_ints(p, "dilations", st->dil, (size_t)nsp) < 0 ||
        convt_ints(p, "pads", st->pads, 2 * (size_t)nsp) < 0 ||
        convt_ints(p, "output_padding", st->out_pad, (size_t)nsp) < 0 ||
        (r = convt_ints(p, "output_shape", st->out_shape, (size_t)nsp)) < 0)
        return MINFER_ERR_MODEL;
    st->has_out_shape = r;
    for (int i = 0; i < nsp; i++)
        if (st->stride[i] < 1 || st->dil[i] < 1 || st->pads[i] < 0 || st->pads[nsp + i] < 0 ||
            st->out_pad[i] < 0 || (st->has_out_shape && st->out_shape[i] < 0))
            return cpu_prep_fail(p, MINFER_ERR_MODEL,
                                 "bad strides, dilations, pads, output_padding or output_shape");
    const char *ap = cpu_attr_str(p, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") == 0)
        st->auto_pad = CPU_PAD_NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0)
        st->auto_pad = CPU_PAD_SAME_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0)
        st->auto_pad = CPU_PAD_SAME_LOWER;
    else if (strcmp(ap, "VALID") == 0)
        st->auto_pad = CPU_PAD_VALID;
    else
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown auto_pad '%s'", ap);
    return MINFER_OK;
}

minfer_status cpu_compute_convtranspose(const cpu_exec *e) {
    const convt_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *w = cpu_input(e, 1), *b = cpu_input(e, 2);
    int nsp = st->nsp;
    if (!x || !w || x->rank != nsp + 2 || w->rank != nsp + 2 || w->dtype != x->dtype ||
        !cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "X and W must be float tensors of rank %d", nsp + 2);
    int64_t N = x->dims[0], C = x->dims[1], G = st->group;
    if (w->dims[0] != C || C % G)
        return cpu_fail(e, MINFER_ERR_SHAPE, "W's first dim must equal the input channels");
    int64_t Cg = C / G, Mg = w->dims[1], M = Mg * G;
    if (b && (b->rank != 1 || b->dims[0] != M || b->dtype != x->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "B must be [%lld]", (long long)M);
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
            pb[3] = {0, 0, 0}, out[3] = {1, 1, 1};
    int64_t od[CPU_MAX_RANK] = {N, M};
    int off = 3 - nsp;
    for (int i = 0; i < nsp; i++) {
        int64_t kk = w->dims[2 + i];
        if (st->has_kernel && st->kernel[i] != kk)
            return cpu_fail(e, MINFER_ERR_SHAPE, "kernel_shape does not match W");
        /* full = stride * (in - 1) + output_padding + (k - 1) * dilation + 1,
         * checked: every output index the scatter computes is below it. */
        int64_t full, span, o, begin;
        if (minfer_i64_mul(st->stride[i], x->dims[2 + i] - 1, &full) ||
            minfer_i64_mul(kk - 1, st->dil[i], &span) || minfer_i64_add(full, span, &full) ||
            minfer_i64_add(full, st->out_pad[i], &full) || minfer_i64_add(full, 1, &full))
            return cpu_fail(e, MINFER_ERR_LIMIT,
                            "spatial dim %d: input %lld, kernel %lld, stride %lld and dilation "
                            "%lld give no representable output size",
                            i, (long long)x->dims[2 + i], (long long)kk,
                            (long long)st->stride[i], (long long)st->dil[i]);
        if (st->has_out_shape || st->auto_pad == CPU_PAD_SAME_UPPER ||
            st->auto_pad == CPU_PAD_SAME_LOWER) {
            o = st->has_out_shape ? st->out_shape[i] : 0;
            if (!st->has_out_shape && minfer_i64_mul(x->dims[2 + i], st->stride[i], &o))
                return cpu_fail(e, MINFER_ERR_LIMIT, "spatial dim %d: %lld * stride %lld overflows",
                                i, (long long)x->dims[2 + i], (long long)st->stride[i]);
            int64_t total = full - o;
            if (total < 0)
                total = 0;
            begin = st->auto_pad == CPU_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        } else if (st->auto_pad == CPU_PAD_VALID) {
            o = full;
            begin = 0;
        } else {
            o = full - st->pads[i] - st->pads[nsp + i];
            begin = st->pads[i];
        }
        if (o < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "output would be empty");
        in[off + i] = x->dims[2 + i];
        k[off + i] = kk;
        s[off + i] = st->stride[i];
        d[off + i] = st->dil[i];
        pb[off + i] = begin;
        out[off + i] = o;
        od[2 + i] = o;
    }
    void *y;
    minfer_status rc = cpu_output(e, 0, x->dtype, nsp + 2, od, &y);
    if (rc)
        return rc;
    /* cpu_output checked that the output's element count fits: the
     * accumulator and every index into it are below it. */
    size_t total = (size_t)minfer_kit_numel(nsp + 2, od);
    size_t plane = total ? total / (size_t)(N * M) : 0;
    double *acc = cpu_calloc(e->ctx, total ? total : 1, sizeof *acc);
    if (!acc)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    const void *xd = cpu_data(x), *wd = cpu_data(w);
    size_t in_plane = (size_t)(in[0] * in[1] * in[2]), kvol = (size_t)(k[0] * k[1] * k[2]);
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++)
            for (int64_t c = 0; c < Cg; c++)
                for (size_t ip = 0; ip < in_plane; ip++) {
                    int64_t i0 = (int64_t)ip / (in[1] * in[2]), i1 = (int64_t)ip / in[2] % in[1],
                            i2 = (int64_t)ip % in[2];
                    double xv = cpu_get(xd, x->dtype, (size_t)((n * C + g * Cg + c)) * in_plane + ip);
                    for (int64_t m = 0; m < Mg; m++)
                        for (size_t kp = 0; kp < kvol; kp++) {
                            int64_t k0 = (int64_t)kp / (k[1] * k[2]), k1 = (int64_t)kp / k[2] % k[1],
                                    k2 = (int64_t)kp % k[2];
                            int64_t o0 = i0 * s[0] + k0 * d[0] - pb[0];
                            int64_t o1 = i1 * s[1] + k1 * d[1] - pb[1];
                            int64_t o2 = i2 * s[2] + k2 * d[2] - pb[2];
                            if (o0 < 0 || o0 >= out[0] || o1 < 0 || o1 >= out[1] || o2 < 0 ||
                                o2 >= out[2])
                                continue;
                            double wv = cpu_get(wd, w->dtype,
                                                (size_t)((g * Cg + c) * Mg + m) * kvol + kp);
                            acc[(size_t)(n * M + g * Mg + m) * plane +
                                (size_t)((o0 * out[1] + o1) * out[2] + o2)] += xv * wv;
                        }
                }
    for (size_t i = 0; i < total; i++) {
        double bias = b ? cpu_get(cpu_data(b), b->dtype, (i / plane) % (size_t)M) : 0;
        cpu_set(y, x->dtype, i, acc[i] + bias);
    }
    free(acc);
    return MINFER_OK;
}

/* ---- ConvInteger, QLinearConv ------------------------------------------------
 * im2col + the int16 GEMM of qgemm.c per (image, group, block of output
 * positions): the weights are widened once per run to int16 less their
 * zero point (per output channel or per tensor); each block's columns are
 * (x - x_zero_point) in int16, with 0 for padding (padding holds the zero
 * point). ConvInteger stores the int32 sums; QLinearConv adds the int32
 * bias and requantizes as MLAS does (cpu_q_requant): float(acc + bias) *
 * (x_scale * w_scale[m] / y_scale, in float), clamped, rounded half to
 * even, plus y_zero_point. Blocks are spread over the threads, each
 * thread slice with its own columns and accumulators in the workspace. */

typedef struct qconv_state {
    conv_state c;
    int qlinear;
} qconv_state;

/* Output positions per block: the block's int16 columns stay near 256 KiB. */
static size_t qconv_block(const conv_geom *g) {
    size_t ob = (256u * 1024u) / (2u * (g->rows ? g->rows : 1));
    ob = ob < 16 ? 16 : ob > 1024 ? 1024 : ob;
    ob &= ~(size_t)15;
    return ob < g->out_plane ? ob : g->out_plane;
}

/* Workspace: the widened weights and the per-channel multipliers, then
 * per slice its columns and sums. */
static int qconv_ws(const conv_geom *g, size_t slices, size_t *wbytes, size_t *slice_bytes,
                    size_t *total) {
    size_t ob = qconv_block(g), w16, col, acc, per;
    if (minfer_size_mul(g->M, g->rows, &w16) || minfer_size_mul(w16, 2, &w16) ||
        minfer_size_mul(g->rows, ob, &col) || minfer_size_mul(col, 2, &col) ||
        minfer_size_mul(g->Mg, ob, &acc) || minfer_size_mul(acc, 4, &acc))
        return -1;
    w16 = (w16 + 63) & ~(size_t)63;
    w16 += (g->M * sizeof(float) + 63) & ~(size_t)63; /* the multipliers */
    per = (col + 63) / 64 * 64 + (acc + 63) / 64 * 64;
    if (minfer_size_mul(per, slices, total) || *total > SIZE_MAX - w16)
        return -1;
    *total += w16;
    *wbytes = w16;
    *slice_bytes = per;
    return 0;
}

static size_t qconv_slices(const cpu_ctx *ctx) {
    int t = cpu_threads(ctx);
    return t > 0 ? (size_t)t : 1;
}

minfer_status cpu_prepare_qconv(cpu_prep *p) {
    qconv_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->qlinear = strcmp(p->node->op_type, "QLinearConv") == 0;
    const minfer_value_desc *x = minfer_kit_input(p->node, 0),
                            *w = minfer_kit_input(p->node, st->qlinear ? 3 : 1);
    if (!x || !w)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs x and w");
    if ((w->dtype && w->dtype != MINFER_DTYPE_INT8 && w->dtype != MINFER_DTYPE_UINT8))
        return cpu_decline(p, "w must be int8 or uint8");
    int rank = w->rank >= 0 ? w->rank : x->rank;
    if (rank < 3 || rank > 5)
        return cpu_decline(p, "1-D to 3-D convolutions only (rank known at prepare)");
    minfer_status s = cpu_window_parse(p, &st->c.w, rank - 2, w->rank == rank ? w->dims + 2 : NULL);
    if (s)
        return s;
    st->c.group = cpu_attr_int(p, "group", 1);
    if (st->c.group < 1)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "group must be >= 1");
    if (!p->prep)
        return MINFER_OK;
    int known = x->rank == rank && w->rank == rank;
    for (int i = 0; known && i < rank; i++)
        known = x->dims[i] >= 0 && w->dims[i] >= 0;
    conv_geom g;
    size_t wb, sb;
    if (known && conv_geometry(&st->c, x->rank, x->dims, w->dims, &g) == 0 &&
        qconv_ws(&g, qconv_slices(p->ctx), &wb, &sb, &p->prep->workspace_bytes))
        return cpu_prep_fail(p, MINFER_ERR_LIMIT, "the im2col workspace has more bytes than fit "
                             "in memory");
    return MINFER_OK;
}

typedef struct qconv_job {
    const cpu_ctx *ctx;
    const conv_geom *g;
    const void *x;
    int32_t xtype, xzp;
    const int16_t *w16;
    unsigned char *slices;
    size_t slice_bytes, n_slices, ob, blocks, units;
    int q;
    int32_t *y32;              /* ConvInteger */
    void *yq;                  /* QLinearConv */
    int32_t ytype, yzp;
    const float *mult;         /* per output channel */
    const int32_t *bias;       /* per output channel, or NULL */
} qconv_job;

/* Columns [o0, o0 + ob) of one group's im2col, x - zp in int16, stored
 * transposed (column i of the block is row i of col, rows long: the GEMM's
 * B^T): per row r of the column matrix, the block is walked as runs along
 * the last output axis, each run's input row checked once. */
#define QIM2COL(E, T, S)                                                                   \
    static void qim2col_##S(const qconv_job *j, const T *xg, size_t o0, size_t ob,        \
                            int16_t *col) {                                                \
        const conv_geom *g = j->g;                                                         \
        int32_t zp = j->xzp;                                                               \
        for (size_t r = 0; r < g->rows; r++) {                                             \
            size_t q = r % g->k[2], b = (r / g->k[2]) % g->k[1];                           \
            size_t a = (r / (g->k[2] * g->k[1])) % g->k[0], c = r / g->kvol;               \
            const T *xc = xg + c * g->in_plane;                                            \
            int16_t *d = col + r;                                                          \
            size_t ld = g->rows;                                                           \
            size_t o = o0, end = o0 + ob;                                                  \
            while (o < end) {                                                              \
                size_t ow = o % g->out[2], oh = (o / g->out[2]) % g->out[1];               \
                size_t od = o / (g->out[2] * g->out[1]);                                   \
                size_t run = g->out[2] - ow < end - o ? g->out[2] - ow : end - o;          \
                int64_t id = (int64_t)od * g->stride[0] - g->pad[0] + (int64_t)a * g->dil[0]; \
                int64_t ih = (int64_t)oh * g->stride[1] - g->pad[1] + (int64_t)b * g->dil[1]; \
                if (id < 0 || id >= (int64_t)g->in[0] || ih < 0 || ih >= (int64_t)g->in[1]) { \
                    for (size_t i = 0; i < run; i++)                                       \
                        d[i * ld] = 0;                                                     \
                } else {                                                                   \
                    const T *row = xc + ((size_t)id * g->in[1] + (size_t)ih) * g->in[2];   \
                    int64_t iw = (int64_t)ow * g->stride[2] - g->pad[2] + (int64_t)q * g->dil[2]; \
                    if (g->stride[2] == 1 && iw >= 0 && iw + (int64_t)run <= (int64_t)g->in[2]) { \
                        const T *src = row + iw;                                           \
                        for (size_t i = 0; i < run; i++)                                   \
                            d[i * ld] = (int16_t)((int32_t)src[i] - zp);                   \
                    } else {                                                               \
                        for (size_t i = 0; i < run; i++, iw += g->stride[2])               \
                            d[i * ld] = iw >= 0 && iw < (int64_t)g->in[2]                  \
                                       ? (int16_t)((int32_t)row[iw] - zp)                  \
                                       : 0;                                                \
                    }                                                                      \
                }                                                                          \
                d += run * ld;                                                             \
                o += run;                                                                  \
            }                                                                              \
        }                                                                                  \
    }
QIM2COL(MINFER_DTYPE_UINT8, uint8_t, u8)
QIM2COL(MINFER_DTYPE_INT8, int8_t, i8)
#undef QIM2COL

static void qim2col(const qconv_job *j, const void *xg, size_t o0, size_t ob, int16_t *col) {
    if (j->xtype == MINFER_DTYPE_UINT8)
        qim2col_u8(j, xg, o0, ob, col);
    else
        qim2col_i8(j, xg, o0, ob, col);
}

static void qconv_slice(void *arg, size_t s0, size_t s1) {
    const qconv_job *j = arg;
    const conv_geom *g = j->g;
    for (size_t s = s0; s < s1; s++) {
        unsigned char *base = j->slices + s * j->slice_bytes;
        int16_t *col = (int16_t *)(void *)base;
        size_t colb = (g->rows * j->ob * 2 + 63) / 64 * 64;
        int32_t *acc = (int32_t *)(void *)(base + colb);
        for (size_t u = s; u < j->units; u += j->n_slices) {
            size_t blk = u % j->blocks, ng = u / j->blocks;
            size_t n = ng / g->G, grp = ng % g->G;
            size_t o0 = blk * j->ob, ob = g->out_plane - o0 < j->ob ? g->out_plane - o0 : j->ob;
            const void *xg = (const unsigned char *)j->x +
                             (n * g->C + grp * g->Cg) * g->in_plane;
            qim2col(j, xg, o0, ob, col);
            cpu_qgemm16(j->ctx, 0, g->Mg, ob, g->rows, j->w16 + grp * g->Mg * g->rows, g->rows,
                        col, g->rows, acc, ob);
            for (size_t m = 0; m < g->Mg; m++) {
                size_t mo = grp * g->Mg + m, yi = (n * g->M + mo) * g->out_plane + o0;
                if (!j->q) {
                    memcpy(j->y32 + yi, acc + m * ob, ob * sizeof *acc);
                    continue;
                }
                void *yo = (unsigned char *)j->yq + yi;
                cpu_q_requant(acc + m * ob, ob, j->bias ? j->bias[mo] : 0, j->mult[mo], j->yzp,
                              j->ytype, yo);
            }
        }
    }
}

/* Scale k of a scalar or per-channel scale tensor, as float. */
static float scale_at(const minfer_tensor_view *v, size_t k) {
    size_t n = (size_t)minfer_kit_numel(v->rank, v->dims);
    return (float)cpu_get(cpu_data(v), v->dtype, n == 1 ? 0 : k);
}

minfer_status cpu_compute_qconv(const cpu_exec *e) {
    const qconv_state *st = e->state;
    int q = st->qlinear;
    const minfer_tensor_view *x = cpu_input(e, 0), *w = cpu_input(e, q ? 3 : 1);
    const minfer_tensor_view *xz = cpu_input(e, q ? 2 : 2), *wz = cpu_input(e, q ? 5 : 3);
    const minfer_tensor_view *xs = q ? cpu_input(e, 1) : NULL, *ws = q ? cpu_input(e, 4) : NULL,
                             *ys = q ? cpu_input(e, 6) : NULL, *yz = q ? cpu_input(e, 7) : NULL,
                             *b = q ? cpu_input(e, 8) : NULL;
    conv_geom g;
    if (!x || !w || (q && (!xs || !ws || !ys)))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if ((x->dtype != MINFER_DTYPE_INT8 && x->dtype != MINFER_DTYPE_UINT8) ||
        (w->dtype != MINFER_DTYPE_INT8 && w->dtype != MINFER_DTYPE_UINT8))
        return cpu_fail(e, MINFER_ERR_TYPE, "x and w must be int8 or uint8");
    if (w->rank != x->rank || conv_geometry(&st->c, x->rank, x->dims, w->dims, &g))
        return cpu_fail(e, MINFER_ERR_SHAPE, "x and w shapes do not fit");
    if (xz && minfer_kit_numel(xz->rank, xz->dims) != 1)
        return cpu_fail(e, MINFER_ERR_SHAPE, "x_zero_point must be a scalar");
    if (wz && minfer_kit_numel(wz->rank, wz->dims) > 1 &&
        minfer_kit_numel(wz->rank, wz->dims) != (int64_t)g.M)
        return cpu_fail(e, MINFER_ERR_SHAPE, "w_zero_point must be a scalar or [M]");
    if (ws && minfer_kit_numel(ws->rank, ws->dims) != 1 &&
        minfer_kit_numel(ws->rank, ws->dims) != (int64_t)g.M)
        return cpu_fail(e, MINFER_ERR_SHAPE, "w_scale must be a scalar or [M]");
    if (q && (minfer_kit_numel(xs->rank, xs->dims) != 1 || minfer_kit_numel(ys->rank, ys->dims) != 1 ||
              (yz && minfer_kit_numel(yz->rank, yz->dims) != 1)))
        return cpu_fail(e, MINFER_ERR_SHAPE, "x_scale, y_scale and y_zero_point must be scalars");
    if (b && (minfer_kit_numel(b->rank, b->dims) != (int64_t)g.M || b->dtype != MINFER_DTYPE_INT32))
        return cpu_fail(e, MINFER_ERR_SHAPE, "B must hold M int32 values");
    if (yz && yz->dtype != MINFER_DTYPE_INT8 && yz->dtype != MINFER_DTYPE_UINT8)
        return cpu_fail(e, MINFER_ERR_TYPE, "y_zero_point must be int8 or uint8");
    int64_t od[CPU_MAX_RANK] = {(int64_t)g.N, (int64_t)g.M};
    for (int i = 0; i < st->c.w.nsp; i++)
        od[2 + i] = (int64_t)g.out[3 - st->c.w.nsp + i];
    int32_t ot = q ? (yz ? yz->dtype : MINFER_DTYPE_UINT8) : MINFER_DTYPE_INT32;
    void *y;
    minfer_status s = cpu_output(e, 0, ot, x->rank, od, &y);
    if (s)
        return s;
    if (!y || g.out_plane == 0)
        return MINFER_OK;
    size_t slices = qconv_slices(e->ctx), wb, sb, need;
    if (qconv_ws(&g, slices, &wb, &sb, &need))
        return cpu_fail(e, MINFER_ERR_LIMIT, "the im2col workspace has more bytes than fit in memory");
    /* The planner sized the workspace from the plan's shapes; a plan made
     * without concrete shapes gets this run's memory instead. */
    unsigned char *wsp = e->args->workspace, *own = NULL;
    if (e->args->workspace_bytes < need || !wsp) {
        own = cpu_malloc(e->ctx, need);
        if (!own)
            return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory for the im2col workspace");
        wsp = own;
    }
    float *mult = NULL;
    int32_t *bias = NULL;
    int16_t *w16 = (int16_t *)(void *)wsp;
    const void *wd = cpu_data(w);
    for (size_t m = 0; m < g.M; m++)
        cpu_q_widen((const unsigned char *)wd + m * g.rows, w->dtype, cpu_q_zero_point(wz, m),
                    w16 + m * g.rows, g.rows);
    if (q) {
        mult = (float *)(void *)(wsp + ((g.M * g.rows * 2 + 63) & ~(size_t)63));
        float xsc = scale_at(xs, 0), ysc = scale_at(ys, 0);
        for (size_t m = 0; m < g.M; m++)
            mult[m] = xsc * scale_at(ws, m) / ysc;
        bias = b ? cpu_data(b) : NULL;
    }
    size_t ob = qconv_block(&g);
    qconv_job j = {e->ctx, &g, cpu_data(x), x->dtype, cpu_q_zero_point(xz, 0), w16, wsp + wb, sb,
                   slices, ob, (g.out_plane + ob - 1) / ob, 0, q, q ? NULL : y, q ? y : NULL,
                   ot, cpu_q_zero_point(yz, 0), mult, bias};
    j.units = g.N * g.G * j.blocks;
    if (j.n_slices > j.units)
        j.n_slices = j.units;
    cpu_parallel(e->ctx, j.n_slices, 1, qconv_slice, &j);
    free(own);
    return MINFER_OK;
}
