/*
 * MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool.
 *
 * Each (image, channel) plane is one work item; a window is clipped to the
 * input (MaxPool ignores padding, AveragePool counts padded cells only with
 * count_include_pad, and then only those inside the explicit pads). 1-D and
 * 2-D pools run as 3-D ones with leading unit dims.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"

typedef struct pool_state {
    cpu_window w;
    int is_max;
    int count_include_pad;
    int storage_order; /* MaxPool Indices: 1 = column-major (2-D only) */
} pool_state;

minfer_status cpu_prepare_pool(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = minfer_kit_input(n, 0);
    if (!x)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs input X");
    pool_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->is_max = strcmp(n->op_type, "MaxPool") == 0;
    if (!st->is_max && x->dtype && x->dtype != MINFER_DTYPE_FLOAT &&
        x->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_decline(p, "element type %s not supported", minfer_elem_name(x->dtype));
    if (!st->is_max && cpu_has_attr(p, "dilations")) {
        /* AveragePool gained dilations in opset 19; accept the trivial ones. */
        int64_t d[CPU_MAX_RANK];
        size_t nd;
        if (cpu_attr_ints(p, "dilations", d, CPU_MAX_RANK, &nd) < 0)
            return MINFER_ERR_UNSUPPORTED;
        for (size_t i = 0; i < nd; i++)
            if (d[i] != 1)
                return cpu_decline(p, "dilations other than 1 not supported");
    }
    st->storage_order = (int)cpu_attr_int(p, "storage_order", 0);
    if (st->is_max && st->storage_order != 0 && minfer_kit_output_wanted(n, 1) && x->rank != 4)
        return cpu_decline(p, "storage_order 1 is only supported for 2-D pooling");
    size_t nk;
    int64_t k[CPU_MAX_RANK];
    if (cpu_attr_ints(p, "kernel_shape", k, CPU_MAX_RANK, &nk) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (nk == 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "kernel_shape is required");
    if (x->rank >= 0 && x->rank != (int32_t)nk + 2)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "kernel_shape does not match the input rank");
    minfer_status s = cpu_window_parse(p, &st->w, (int)nk, NULL);
    if (s)
        return s;
    st->count_include_pad = cpu_attr_int(p, "count_include_pad", 0) != 0;
    return MINFER_OK;
}

typedef struct pool_geom {
    size_t in[3], out[3], k[3];
    int64_t stride[3], dil[3], pad[3], pad_end[3];
    size_t in_plane, out_plane;
} pool_geom;

typedef struct pool_job {
    const pool_state *st;
    pool_geom g;
    int32_t dtype;
    const void *x;
    void *y;
} pool_job;

/* Clips a window [start, start + dk) of taps every dil to [lo, hi): first
 * tap index and tap count. */
static void clip_taps(int64_t start, int64_t k, int64_t dil, int64_t lo, int64_t hi,
                      int64_t *first, int64_t *count) {
    int64_t f = 0;
    if (start < lo)
        f = (lo - start + dil - 1) / dil;
    int64_t l = k - 1; /* last tap */
    if (start + l * dil >= hi)
        l = hi - 1 - start < 0 ? -1 : (hi - 1 - start) / dil;
    *first = f;
    *count = l >= f ? l - f + 1 : 0;
}

#define POOL(E, T, S, ACC)                                                                 \
    static void pool_plane_##S(const pool_job *j, const T *x, T *y) {                      \
        const pool_geom *g = &j->g;                                                        \
        for (size_t od = 0; od < g->out[0]; od++)                                          \
            for (size_t oh = 0; oh < g->out[1]; oh++)                                      \
                for (size_t ow = 0; ow < g->out[2]; ow++) {                                \
                    size_t o[3] = {od, oh, ow};                                            \
                    int64_t f[3], c[3];                                                    \
                    double padded = 1; /* up to (2^31)^3 taps: a double, not int64 */     \
                    for (int i = 0; i < 3; i++) {                                          \
                        int64_t st0 = (int64_t)o[i] * g->stride[i] - g->pad[i], pf, pc;    \
                        clip_taps(st0, (int64_t)g->k[i], g->dil[i], 0, (int64_t)g->in[i],  \
                                  &f[i], &c[i]);                                           \
                        clip_taps(st0, (int64_t)g->k[i], g->dil[i], -g->pad[i],            \
                                  (int64_t)g->in[i] + g->pad_end[i], &pf, &pc);            \
                        padded *= (double)pc;                                              \
                        f[i] = st0 + f[i] * g->dil[i];                                     \
                    }                                                                      \
                    ACC acc = (ACC)0;                                                         \
                    int have = 0;                                                          \
                    for (int64_t a = 0; a < c[0]; a++)                                     \
                        for (int64_t b = 0; b < c[1]; b++) {                               \
                            const T *row = x + ((size_t)(f[0] + a * g->dil[0]) * g->in[1] + \
                                                (size_t)(f[1] + b * g->dil[1])) * g->in[2]; \
                            for (int64_t q = 0; q < c[2]; q++) {                           \
                                T v = row[f[2] + q * g->dil[2]];                           \
                                if (!j->st->is_max)                                        \
                                    acc += (ACC)v;                                         \
                                else if (!have || v > (T)acc || v != v)                    \
                                    acc = (ACC)v;                                          \
                                have = 1;                                                  \
                            }                                                              \
                        }                                                                  \
                    size_t oi = (od * g->out[1] + oh) * g->out[2] + ow;                    \
                    if (j->st->is_max) {                                                   \
                        y[oi] = (T)acc;                                                    \
                    } else {                                                               \
                        double cnt = j->st->count_include_pad                              \
                                         ? padded                                          \
                                         : (double)c[0] * (double)c[1] * (double)c[2];     \
                        y[oi] = cnt > 0 ? (T)((double)acc / cnt) : (T)0;                   \
                    }                                                                      \
                }                                                                          \
    }
#define POOL_F(E, T, S) POOL(E, T, S, double)
CPU_FLOAT_TYPES(POOL_F)
POOL(MINFER_DTYPE_INT8, int8_t, i8, int64_t)
POOL(MINFER_DTYPE_UINT8, uint8_t, u8, int64_t)

static void pool_range(void *arg, size_t b, size_t e) {
    const pool_job *j = arg;
    for (size_t p = b; p < e; p++) {
        switch (j->dtype) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        pool_plane_##S(j, j->g.in_plane ? (const T *)j->x + p * j->g.in_plane : j->x,         \
                       (T *)j->y + p * j->g.out_plane);                                    \
        break;
            CPU_FLOAT_TYPES(CASE)
            CASE(MINFER_DTYPE_INT8, int8_t, i8)
            CASE(MINFER_DTYPE_UINT8, uint8_t, u8)
#undef CASE
        }
    }
}

/* MaxPool's Indices: the flat input index of each window's first maximum
 * (row-major, or column-major over the spatial dims with storage_order 1). */
static minfer_status max_indices(const cpu_exec *e, const pool_geom *g,
                                 const minfer_tensor_view *x, const int64_t *od) {
    const pool_state *st = e->state;
    int64_t *yi;
    minfer_status s = cpu_output(e, 1, MINFER_DTYPE_INT64, x->rank, od, (void **)&yi);
    if (s)
        return s;
    size_t planes = (size_t)(x->dims[0] * x->dims[1]);
    const void *xd = cpu_data(x);
    for (size_t p = 0; p < planes; p++)
        for (size_t o = 0; o < g->out_plane; o++) {
            int64_t oc[3] = {(int64_t)(o / (g->out[1] * g->out[2])),
                             (int64_t)(o / g->out[2] % g->out[1]), (int64_t)(o % g->out[2])};
            int64_t best = -1;
            double bv = 0;
            /* only the taps inside the input, in the window's order: a
             * kernel of 2^31 over padding costs what the input does */
            int64_t f[3], c[3];
            for (int d = 0; d < 3; d++) {
                int64_t st0 = oc[d] * g->stride[d] - g->pad[d];
                clip_taps(st0, (int64_t)g->k[d], g->dil[d], 0, (int64_t)g->in[d], &f[d], &c[d]);
                f[d] = st0 + f[d] * g->dil[d];
            }
            for (int64_t k = 0; k < c[0] * c[1] * c[2]; k++) {
                int64_t ic[3] = {f[0] + k / (c[1] * c[2]) * g->dil[0],
                                 f[1] + k / c[2] % c[1] * g->dil[1], f[2] + k % c[2] * g->dil[2]};
                int64_t flat = st->storage_order
                                   ? ic[0] * (int64_t)(g->in[1] * g->in[2]) + ic[2] * (int64_t)g->in[1] + ic[1]
                                   : (ic[0] * (int64_t)g->in[1] + ic[1]) * (int64_t)g->in[2] + ic[2];
                double v = cpu_get(xd, x->dtype, p * g->in_plane +
                                   (size_t)((ic[0] * (int64_t)g->in[1] + ic[1]) * (int64_t)g->in[2] + ic[2]));
                if (best < 0 || v > bv)
                    best = flat, bv = v;
            }
            yi[p * g->out_plane + o] = best < 0 ? -1 : (int64_t)(p * g->in_plane) + best;
        }
    return MINFER_OK;
}

minfer_status cpu_compute_pool(const cpu_exec *e) {
    const pool_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int nsp = st->w.nsp, off = 3 - nsp;
    if (x->rank != nsp + 2)
        return cpu_fail(e, MINFER_ERR_SHAPE, "input rank %d, expected %d", (int)x->rank,
                        nsp + 2);
    int ok = x->dtype == MINFER_DTYPE_FLOAT || x->dtype == MINFER_DTYPE_DOUBLE ||
             (st->is_max && (x->dtype == MINFER_DTYPE_INT8 || x->dtype == MINFER_DTYPE_UINT8));
    if (!ok)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    int64_t out[3], pb[3];
    if (cpu_window_out(&st->w, x->dims + 2, out, pb))
        return cpu_fail(e, MINFER_ERR_SHAPE, "the window does not fit the input");
    int64_t od[CPU_MAX_RANK];
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    for (int i = 0; i < nsp; i++)
        od[2 + i] = out[i];
    /* With ceil_mode, some runtimes drop a last window that would start in
     * the end padding; accept the host's choice of either size. */
    if (st->w.ceil_mode && e->args->outputs[0].rank == x->rank) {
        for (int i = 0; i < nsp; i++)
            if (e->args->outputs[0].dims[2 + i] == out[i] - 1 &&
                (out[i] - 1) * st->w.stride[i] >= x->dims[2 + i] + pb[i])
                od[2 + i] = out[i] - 1;
    }
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, od, &y);
    if (s)
        return s;
    pool_job j;
    memset(&j, 0, sizeof j);
    j.st = st;
    j.dtype = x->dtype;
    j.x = cpu_data(x);
    j.y = y;
    j.g.in_plane = j.g.out_plane = 1;
    for (int i = 0; i < 3; i++) {
        int sidx = i - off;
        j.g.in[i] = sidx >= 0 ? (size_t)x->dims[2 + sidx] : 1;
        j.g.out[i] = sidx >= 0 ? (size_t)od[2 + sidx] : 1;
        j.g.k[i] = sidx >= 0 ? (size_t)st->w.kernel[sidx] : 1;
        j.g.stride[i] = sidx >= 0 ? st->w.stride[sidx] : 1;
        j.g.dil[i] = sidx >= 0 ? st->w.dilation[sidx] : 1;
        j.g.pad[i] = sidx >= 0 ? pb[sidx] : 0;
        /* Explicit end pads; for auto_pad, what SAME added at the end. */
        int64_t pe = 0;
        if (sidx >= 0) {
            if (st->w.auto_pad == CPU_PAD_NOTSET)
                pe = st->w.pads[nsp + sidx];
            else if (st->w.auto_pad != CPU_PAD_VALID) {
                int64_t dk = (j.g.k[i] - 1) * j.g.dil[i] + 1;
                pe = (out[sidx] - 1) * j.g.stride[i] + dk - x->dims[2 + sidx] - pb[sidx];
                if (pe < 0)
                    pe = 0;
            }
        }
        j.g.pad_end[i] = pe;
        j.g.in_plane *= j.g.in[i];
        j.g.out_plane *= j.g.out[i];
    }
    size_t planes = (size_t)(x->dims[0] * x->dims[1]);
    size_t grain = (16384 + j.g.out_plane - 1) / (j.g.out_plane ? j.g.out_plane : 1);
    if (j.g.out_plane) /* else the output is empty, and y may be NULL */
        cpu_parallel(e->ctx, planes, grain, pool_range, &j);
    if (st->is_max && minfer_kit_output_wanted(e->args->node, 1))
        return max_indices(e, &j.g, x, od);
    return MINFER_OK;
}

/* ---- Global pools ------------------------------------------------------- */

minfer_status cpu_prepare_global_pool(cpu_prep *p) {
    const minfer_value_desc *x = minfer_kit_input(p->node, 0);
    if (!x)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs input X");
    int *is_max = cpu_state(p, sizeof *is_max);
    if (!is_max)
        return MINFER_ERR_NOMEM;
    *is_max = strcmp(p->node->op_type, "GlobalMaxPool") == 0;
    return MINFER_OK;
}

typedef struct gpool_job {
    int is_max;
    int32_t dtype;
    size_t plane;
    const void *x;
    void *y;
} gpool_job;

#define GPOOL(E, T, S)                                                                     \
    static void gpool_##S(const gpool_job *j, size_t b, size_t e) {                        \
        for (size_t p = b; p < e; p++) {                                                   \
            const T *x = (const T *)j->x + p * j->plane;                                   \
            if (j->is_max) {                                                               \
                T m = j->plane ? x[0] : (T)-INFINITY;                                      \
                for (size_t i = 1; i < j->plane; i++)                                      \
                    if (x[i] > m || x[i] != x[i])                                          \
                        m = x[i];                                                          \
                ((T *)j->y)[p] = m;                                                        \
            } else {                                                                       \
                double s = 0;                                                              \
                for (size_t i = 0; i < j->plane; i++)                                      \
                    s += x[i];                                                             \
                ((T *)j->y)[p] = (T)(j->plane ? s / (double)j->plane : NAN);              \
            }                                                                              \
        }                                                                                  \
    }
CPU_FLOAT_TYPES(GPOOL)

static void gpool_range(void *arg, size_t b, size_t e) {
    const gpool_job *j = arg;
    if (j->dtype == MINFER_DTYPE_FLOAT)
        gpool_f32(j, b, e);
    else
        gpool_f64(j, b, e);
}

minfer_status cpu_compute_global_pool(const cpu_exec *e) {
    const int *is_max = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (x->rank < 2)
        return cpu_fail(e, MINFER_ERR_SHAPE, "input must have rank >= 2");
    if (x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                        minfer_elem_name(x->dtype));
    int64_t od[CPU_MAX_RANK];
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++)
        od[i] = 1;
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, od, &y);
    if (s)
        return s;
    gpool_job j = {*is_max, x->dtype, (size_t)minfer_kit_numel(x->rank - 2, x->dims + 2),
                   cpu_data(x), y};
    size_t planes = (size_t)(x->dims[0] * x->dims[1]);
    cpu_parallel(e->ctx, planes, (16384 + j.plane) / (j.plane + 1), gpool_range, &j);
    return MINFER_OK;
}

/* ---- MaxUnpool -----------------------------------------------------------------
 * Zeros, then each X value written at its flat index from I (MaxPool's
 * Indices). The output shape is output_shape when given, else the inverse of
 * the pooling geometry: (in - 1) * stride + kernel - pads. */

minfer_status cpu_prepare_maxunpool(cpu_prep *p) {
    const minfer_value_desc *x = minfer_kit_input(p->node, 0);
    if (!x || !minfer_kit_input(p->node, 1))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs X and I");
    size_t nk;
    int64_t k[CPU_MAX_RANK];
    if (cpu_attr_ints(p, "kernel_shape", k, CPU_MAX_RANK, &nk) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (nk == 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "kernel_shape is required");
    pool_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    return cpu_window_parse(p, &st->w, (int)nk, NULL);
}

minfer_status cpu_compute_maxunpool(const cpu_exec *e) {
    const pool_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *ind = cpu_input(e, 1), *os = cpu_input(e, 2);
    int nsp = st->w.nsp;
    if (!x || !ind || x->rank != nsp + 2 || ind->dtype != MINFER_DTYPE_INT64 ||
        ind->rank != x->rank || memcmp(ind->dims, x->dims, (size_t)x->rank * sizeof x->dims[0]))
        return cpu_fail(e, MINFER_ERR_SHAPE, "X must be rank %d and I int64 of X's shape", nsp + 2);
    /* dd: the unpooled shape, set up to rank. Zeroed past it too: at -O3
     * GCC cannot tell that the reads below stay under rank (it warned
     * maybe-uninitialized), and a zero there would fail the check, not
     * read garbage. */
    const int rank = nsp + 2;
    int64_t od[CPU_MAX_RANK], dd[CPU_MAX_RANK] = {0};
    size_t n;
    minfer_status s;
    dd[0] = x->dims[0], dd[1] = x->dims[1];
    for (int i = 0; i < nsp; i++) {
        int64_t v;
        if (minfer_i64_mul(x->dims[2 + i] - 1, st->w.stride[i], &v) ||
            minfer_i64_add(v, st->w.kernel[i], &v) || minfer_i64_sub(v, st->w.pads[i], &v) ||
            minfer_i64_sub(v, st->w.pads[nsp + i], &v))
            return cpu_fail(e, MINFER_ERR_LIMIT, "spatial dim %d of the unpooled shape overflows",
                            i);
        dd[2 + i] = v;
    }
    if (os) {
        if ((s = cpu_read_ints(e, os, "output_shape", od, CPU_MAX_RANK, &n)) != MINFER_OK)
            return s;
        if (n != (size_t)rank || od[0] != x->dims[0] || od[1] != x->dims[1])
            return cpu_fail(e, MINFER_ERR_SHAPE, "output_shape must be [N, C, spatial...]");
    } else {
        memcpy(od, dd, (size_t)rank * sizeof *od);
    }
    void *y;
    if ((s = cpu_output(e, 0, x->dtype, rank, od, &y)) != MINFER_OK)
        return s;
    for (int d = 0; d < rank; d++)
        if (dd[d] < 1)
            return cpu_fail(e, MINFER_ERR_SHAPE, "the pooling geometry gives an empty output");
    if (minfer_kit_numel(rank, dd) < 0)
        return cpu_fail(e, MINFER_ERR_LIMIT, "the unpooled shape has more elements than fit");
    size_t total = (size_t)minfer_kit_numel(rank, od), es = minfer_elem_size(x->dtype);
    size_t dtotal = (size_t)minfer_kit_numel(rank, dd);
    size_t cnt = (size_t)minfer_kit_numel(rank, x->dims);
    memset(y, 0, total * es);
    const int64_t *id = cpu_data(ind);
    /* Indices count in the default shape; with a larger output_shape the
     * coordinates carry over (the extra space is at the ends). */
    for (size_t i = 0; i < cnt; i++) {
        if (id[i] < 0 || (size_t)id[i] >= dtotal)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "index %lld out of range", (long long)id[i]);
        size_t rem = (size_t)id[i], at = 0, mul = 1;
        int inside = 1;
        for (int d = rank - 1; d >= 0; d--) {
            size_t c = rem % (size_t)dd[d];
            rem /= (size_t)dd[d];
            inside &= (int64_t)c < od[d];
            at += c * mul;
            mul *= (size_t)od[d];
        }
        if (!inside)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "index %lld outside output_shape",
                            (long long)id[i]);
        memcpy((char *)y + at * es, (const char *)cpu_data(x) + i * es, es);
    }
    return MINFER_OK;
}
