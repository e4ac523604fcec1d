/*
 * Indexing kernels: GatherElements, GatherND, ScatterElements (and the old
 * Scatter), ScatterND, OneHot, Compress, NonZero, TopK, Unique, CumSum,
 * Trilu, EyeLike, ReverseSequence, DepthToSpace and SpaceToDepth.
 *
 * Data movement copies whole elements by their byte size, so one loop
 * serves every element type. Where a kernel does arithmetic (the scatter
 * reductions, OneHot's values, EyeLike) it goes through cpu_get/cpu_set.
 * Every index read from a tensor is range-checked before use; a bad index
 * is a run-time error, never a wild read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* Multi-index of flat position i in a shape. */
static void unravel(size_t i, int32_t rank, const int64_t *dims, int64_t *idx) {
    for (int32_t d = rank - 1; d >= 0; d--) {
        idx[d] = dims[d] ? (int64_t)(i % (size_t)dims[d]) : 0;
        i = dims[d] ? i / (size_t)dims[d] : 0;
    }
}

static size_t ravel(int32_t rank, const int64_t *strides, const int64_t *idx) {
    size_t off = 0;
    for (int32_t d = 0; d < rank; d++)
        off += (size_t)(idx[d] * strides[d]);
    return off;
}

/* Normalizes index k into [0, dim); -1 if out of range. */
static int64_t fix_index(int64_t k, int64_t dim) {
    if (k < -dim || k >= dim)
        return -1;
    return k < 0 ? k + dim : k;
}

/* Copies x's elements to y; an empty tensor may have no data pointer at
 * all, which memcpy must not be given even for 0 bytes. */
static void copy_data(void *y, const minfer_tensor_view *x, size_t es) {
    size_t bytes = (size_t)minfer_kit_numel(x->rank, x->dims) * es;
    if (bytes)
        memcpy(y, cpu_data(x), bytes);
}

static int is_index_type(int32_t dt) {
    return dt == MINFER_DTYPE_INT32 || dt == MINFER_DTYPE_INT64;
}

/* ---- Shared prepare: an axis attribute and an indices input ------------ */

typedef struct idx_state {
    int64_t axis;
    int has_axis;
    int reduction; /* scatter: R_NONE... */
    int64_t a, b;  /* op-specific integer attributes */
    int32_t dtype; /* op-specific element type (EyeLike) */
} idx_state;

enum { R_NONE, R_ADD, R_MUL, R_MAX, R_MIN };

static minfer_status parse_reduction(cpu_prep *p, int *out) {
    const char *r = cpu_attr_str(p, "reduction", "none");
    if (strcmp(r, "none") == 0)
        *out = R_NONE;
    else if (strcmp(r, "add") == 0)
        *out = R_ADD;
    else if (strcmp(r, "mul") == 0)
        *out = R_MUL;
    else if (strcmp(r, "max") == 0)
        *out = R_MAX;
    else if (strcmp(r, "min") == 0)
        *out = R_MIN;
    else
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown reduction '%s'", r);
    return MINFER_OK;
}

minfer_status cpu_prepare_indexing(cpu_prep *p) {
    const char *op = p->node->op_type;
    idx_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->has_axis = cpu_has_attr(p, "axis");
    st->axis = cpu_attr_int(p, "axis", strcmp(op, "OneHot") == 0 ? -1 : 0);
    if (strncmp(op, "Scatter", 7) == 0) {
        minfer_status s = parse_reduction(p, &st->reduction);
        if (s)
            return s;
        if (st->reduction != R_NONE && !(CPU_T(p->node->inputs[0].dtype) & (CPU_T_NUM | CPU_T_HALF)))
            return cpu_decline(p, "reduction needs a numeric type");
    }
    if (strcmp(op, "GatherND") == 0)
        st->a = cpu_attr_int(p, "batch_dims", 0);
    if (strcmp(op, "TopK") == 0) {
        st->axis = cpu_attr_int(p, "axis", -1);
        st->a = cpu_attr_int(p, "largest", 1);
        st->b = cpu_attr_int(p, "sorted", 1);
    }
    if (strcmp(op, "Unique") == 0)
        st->a = cpu_attr_int(p, "sorted", 1);
    if (strcmp(op, "CumSum") == 0) {
        st->a = cpu_attr_int(p, "exclusive", 0);
        st->b = cpu_attr_int(p, "reverse", 0);
    }
    if (strcmp(op, "Trilu") == 0)
        st->a = cpu_attr_int(p, "upper", 1);
    if (strcmp(op, "EyeLike") == 0) {
        st->a = cpu_attr_int(p, "k", 0);
        st->dtype = (int32_t)cpu_attr_int(p, "dtype", 0);
        /* CPU_T shifts by the type: a dtype from the model is range-checked first. */
        if (st->dtype && (st->dtype < 0 || st->dtype >= 32 || !(CPU_T(st->dtype) & CPU_T_ALL)))
            return cpu_decline(p, "dtype %s not supported", minfer_elem_name(st->dtype));
    }
    if (strcmp(op, "ReverseSequence") == 0) {
        st->a = cpu_attr_int(p, "time_axis", 0);
        st->b = cpu_attr_int(p, "batch_axis", 1);
    }
    if (strcmp(op, "DepthToSpace") == 0 || strcmp(op, "SpaceToDepth") == 0) {
        st->a = cpu_attr_int(p, "blocksize", 0);
        const char *mode = cpu_attr_str(p, "mode", "DCR");
        if (st->a < 1)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "blocksize must be positive");
        if (strcmp(mode, "DCR") && strcmp(mode, "CRD"))
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown mode '%s'", mode);
        st->b = strcmp(mode, "CRD") == 0;
    }
    return MINFER_OK;
}

/* ---- GatherElements ------------------------------------------------------ */

minfer_status cpu_compute_gather_elements(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *ind = cpu_input(e, 1);
    if (!x || !ind || !is_index_type(ind->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "needs data and int32/int64 indices");
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0 || ind->rank != x->rank)
        return cpu_fail(e, MINFER_ERR_SHAPE, "bad axis or indices rank");
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, ind->rank, ind->dims, &y);
    if (s)
        return s;
    int64_t xs[CPU_MAX_RANK], idx[CPU_MAX_RANK];
    cpu_strides(x->rank, x->dims, xs);
    size_t n = (size_t)minfer_kit_numel(ind->rank, ind->dims), es = minfer_elem_size(x->dtype);
    const char *src = cpu_data(x);
    const void *id = cpu_data(ind);
    for (size_t i = 0; i < n; i++) {
        unravel(i, ind->rank, ind->dims, idx);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && idx[d] >= x->dims[d])
                return cpu_fail(e, MINFER_ERR_SHAPE, "indices larger than data off the axis");
        int64_t k = fix_index(cpu_get_index(id, ind->dtype, i), x->dims[axis]);
        if (k < 0)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "index out of range");
        idx[axis] = k;
        memcpy((char *)y + i * es, src + ravel(x->rank, xs, idx) * es, es);
    }
    return MINFER_OK;
}

/* ---- ScatterElements, Scatter ------------------------------------------- */

/* dst[di] = dst[di] (reduction) src[si]. */
static void combine(int reduction, int32_t dt, void *dst, size_t di, const void *src, size_t si,
                    size_t es) {
    if (reduction == R_NONE) {
        memcpy((char *)dst + di * es, (const char *)src + si * es, es);
        return;
    }
    double a = cpu_get(dst, dt, di), b = cpu_get(src, dt, si), r;
    switch (reduction) {
    case R_ADD: r = a + b; break;
    case R_MUL: r = a * b; break;
    case R_MAX: r = a > b ? a : b; break;
    default: r = a < b ? a : b; break;
    }
    cpu_set(dst, dt, di, r);
}

minfer_status cpu_compute_scatter_elements(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *ind = cpu_input(e, 1),
                             *upd = cpu_input(e, 2);
    if (!x || !ind || !upd || !is_index_type(ind->dtype) || upd->dtype != x->dtype)
        return cpu_fail(e, MINFER_ERR_TYPE, "needs data, int32/int64 indices and updates");
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0 || ind->rank != x->rank || upd->rank != ind->rank ||
        memcmp(upd->dims, ind->dims, (size_t)ind->rank * sizeof ind->dims[0]))
        return cpu_fail(e, MINFER_ERR_SHAPE, "bad axis, or indices and updates differ in shape");
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    size_t es = minfer_elem_size(x->dtype), n = (size_t)minfer_kit_numel(ind->rank, ind->dims);
    copy_data(y, x, es);
    int64_t xs[CPU_MAX_RANK], idx[CPU_MAX_RANK];
    cpu_strides(x->rank, x->dims, xs);
    const void *id = cpu_data(ind);
    for (size_t i = 0; i < n; i++) {
        unravel(i, ind->rank, ind->dims, idx);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && idx[d] >= x->dims[d])
                return cpu_fail(e, MINFER_ERR_SHAPE, "indices larger than data off the axis");
        int64_t k = fix_index(cpu_get_index(id, ind->dtype, i), x->dims[axis]);
        if (k < 0)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "index out of range");
        idx[axis] = k;
        combine(st->reduction, x->dtype, y, ravel(x->rank, xs, idx), cpu_data(upd), i, es);
    }
    return MINFER_OK;
}

/* ---- GatherND, ScatterND ------------------------------------------------- */

minfer_status cpu_compute_gather_nd(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *ind = cpu_input(e, 1);
    if (!x || !ind || !is_index_type(ind->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "needs data and int32/int64 indices");
    int64_t b = st->a, q = ind->rank, r = x->rank;
    if (q < 1 || b < 0 || b >= q || b >= r)
        return cpu_fail(e, MINFER_ERR_SHAPE, "bad batch_dims or indices rank");
    int64_t k = ind->dims[q - 1];
    if (k < 1 || k > r - b)
        return cpu_fail(e, MINFER_ERR_SHAPE, "last indices dim must be in [1, %lld]",
                        (long long)(r - b));
    for (int64_t d = 0; d < b; d++)
        if (ind->dims[d] != x->dims[d])
            return cpu_fail(e, MINFER_ERR_SHAPE, "batch dims of data and indices differ");
    int64_t od[CPU_MAX_RANK];
    int32_t orank = 0;
    for (int64_t d = 0; d < q - 1; d++)
        od[orank++] = ind->dims[d];
    for (int64_t d = b + k; d < r; d++) {
        if (orank >= CPU_MAX_RANK)
            return cpu_fail(e, MINFER_ERR_LIMIT, "output rank too large");
        od[orank++] = x->dims[d];
    }
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, orank, od, &y);
    if (s)
        return s;
    int64_t xs[CPU_MAX_RANK];
    cpu_strides(x->rank, x->dims, xs);
    size_t es = minfer_elem_size(x->dtype);
    size_t B = (size_t)minfer_kit_numel((int32_t)b, x->dims);
    size_t M = (size_t)minfer_kit_numel((int32_t)(q - 1 - b), ind->dims + b);
    size_t slice = (size_t)minfer_kit_numel((int32_t)(r - b - k), x->dims + b + k);
    size_t bstride = (size_t)minfer_kit_numel((int32_t)(r - b), x->dims + b);
    const void *id = cpu_data(ind);
    const char *src = cpu_data(x);
    /* Empty slices (a 0 in the data's trailing dims) leave y empty, with
     * no pointer to offset; the indices are still checked. */
    for (size_t bi = 0; bi < B; bi++)
        for (size_t m = 0; m < M; m++) {
            size_t t = bi * M + m, off = bi * bstride;
            for (int64_t j = 0; j < k; j++) {
                int64_t v = fix_index(cpu_get_index(id, ind->dtype, t * (size_t)k + (size_t)j),
                                      x->dims[b + j]);
                if (v < 0)
                    return cpu_fail(e, MINFER_ERR_RUNTIME, "index out of range");
                off += (size_t)(v * xs[b + j]);
            }
            if (slice)
                memcpy((char *)y + t * slice * es, src + off * es, slice * es);
        }
    return MINFER_OK;
}

minfer_status cpu_compute_scatter_nd(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *ind = cpu_input(e, 1),
                             *upd = cpu_input(e, 2);
    if (!x || !ind || !upd || !is_index_type(ind->dtype) || upd->dtype != x->dtype)
        return cpu_fail(e, MINFER_ERR_TYPE, "needs data, int32/int64 indices and updates");
    int64_t q = ind->rank, r = x->rank;
    int64_t k = q ? ind->dims[q - 1] : 0;
    if (q < 1 || k < 1 || k > r || upd->rank != q - 1 + r - k)
        return cpu_fail(e, MINFER_ERR_SHAPE, "indices and updates shapes do not fit the data");
    for (int64_t d = 0; d < q - 1; d++)
        if (upd->dims[d] != ind->dims[d])
            return cpu_fail(e, MINFER_ERR_SHAPE, "updates shape does not match indices");
    for (int64_t d = k; d < r; d++)
        if (upd->dims[q - 1 + d - k] != x->dims[d])
            return cpu_fail(e, MINFER_ERR_SHAPE, "updates shape does not match data");
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    size_t es = minfer_elem_size(x->dtype);
    copy_data(y, x, es);
    int64_t xs[CPU_MAX_RANK];
    cpu_strides(x->rank, x->dims, xs);
    size_t T = (size_t)minfer_kit_numel((int32_t)(q - 1), ind->dims);
    size_t slice = (size_t)minfer_kit_numel((int32_t)(r - k), x->dims + k);
    const void *id = cpu_data(ind);
    for (size_t t = 0; t < T; t++) {
        size_t off = 0;
        for (int64_t j = 0; j < k; j++) {
            int64_t v = fix_index(cpu_get_index(id, ind->dtype, t * (size_t)k + (size_t)j),
                                  x->dims[j]);
            if (v < 0)
                return cpu_fail(e, MINFER_ERR_RUNTIME, "index out of range");
            off += (size_t)(v * xs[j]);
        }
        for (size_t i = 0; i < slice; i++)
            combine(st->reduction, x->dtype, y, off + i, cpu_data(upd), t * slice + i, es);
    }
    return MINFER_OK;
}

/* ---- OneHot -------------------------------------------------------------- */

minfer_status cpu_compute_onehot(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *ind = cpu_input(e, 0), *dep = cpu_input(e, 1),
                             *val = cpu_input(e, 2);
    double depthf;
    if (!ind || !dep || !val)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "needs indices, depth and values");
    minfer_status s = cpu_read_scalar(e, dep, "depth", &depthf);
    if (s)
        return s;
    if (minfer_kit_numel(val->rank, val->dims) != 2 || !(CPU_T(val->dtype) & (CPU_T_ALL)))
        return cpu_fail(e, MINFER_ERR_SHAPE, "values must hold [off, on]");
    /* depth is truncated to an integer as ONNX casts it. Below 1 (or NaN)
     * is a bad model; a depth whose output cannot even be counted is a
     * size limit. An output that can be counted is checked against the
     * tensor-size limit by the host when it is allocated. */
    if (!(depthf >= 1))
        return cpu_fail(e, MINFER_ERR_MODEL, "depth must be at least 1, got %g", depthf);
    int64_t n_ind = minfer_kit_numel(ind->rank, ind->dims);
    if (depthf >= 0x1p62 || (n_ind && (int64_t)depthf > INT64_MAX / n_ind))
        return cpu_fail(e, MINFER_ERR_LIMIT,
                        "depth %.0f is too large: %lld indices x depth elements overflow the "
                        "element count",
                        depthf, (long long)n_ind);
    int64_t depth = (int64_t)depthf;
    int32_t orank = ind->rank + 1;
    int axis = minfer_kit_axis(st->axis, orank);
    if (axis < 0 || orank > CPU_MAX_RANK)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
    int64_t od[CPU_MAX_RANK];
    for (int32_t d = 0, j = 0; d < orank; d++)
        od[d] = d == axis ? depth : ind->dims[j++];
    void *y;
    if ((s = cpu_output(e, 0, val->dtype, orank, od, &y)) != MINFER_OK)
        return s;
    size_t outer = (size_t)minfer_kit_numel(axis, od), inner = (size_t)minfer_kit_numel(orank - axis - 1, od + axis + 1);
    size_t es = minfer_elem_size(val->dtype);
    const char *v = cpu_data(val);
    const void *id = cpu_data(ind);
    for (size_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < depth; c++)
            for (size_t i = 0; i < inner; i++) {
                double kf = cpu_get(id, ind->dtype, o * inner + i);
                /* Out-of-range (or NaN) indices give an all-off row. */
                int64_t k = -1;
                if (kf >= -(double)depth && kf < (double)depth)
                    k = (int64_t)kf < 0 ? (int64_t)kf + depth : (int64_t)kf;
                memcpy((char *)y + ((o * (size_t)depth + (size_t)c) * inner + i) * es,
                       v + (k == c ? es : 0), es);
            }
    return MINFER_OK;
}

/* ---- Compress, NonZero --------------------------------------------------- */

minfer_status cpu_compute_compress(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *c = cpu_input(e, 1);
    if (!x || !c || c->dtype != MINFER_DTYPE_BOOL || c->rank != 1)
        return cpu_fail(e, MINFER_ERR_TYPE, "condition must be a 1-D bool tensor");
    int64_t dims[CPU_MAX_RANK];
    int32_t rank;
    int axis;
    if (st->has_axis) {
        axis = minfer_kit_axis(st->axis, x->rank);
        if (axis < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
        rank = x->rank;
        memcpy(dims, x->dims, (size_t)rank * sizeof *dims);
    } else {
        axis = 0;
        rank = 1;
        dims[0] = minfer_kit_numel(x->rank, x->dims);
    }
    if (c->dims[0] > dims[axis])
        return cpu_fail(e, MINFER_ERR_SHAPE, "condition is longer than the axis");
    const uint8_t *cd = cpu_data(c);
    int64_t kept = 0, len = dims[axis];
    for (int64_t i = 0; i < c->dims[0]; i++)
        kept += cd[i] != 0;
    dims[axis] = kept;
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, rank, dims, &y);
    if (s)
        return s;
    size_t es = minfer_elem_size(x->dtype);
    size_t outer = (size_t)minfer_kit_numel(axis, dims);
    size_t inner = (size_t)minfer_kit_numel(rank - axis - 1, dims + axis + 1) * es;
    const char *src = cpu_data(x);
    char *dst = y;
    for (size_t o = 0; o < outer && inner; o++) /* inner 0: y is empty, no pointer */
        for (int64_t i = 0; i < c->dims[0]; i++)
            if (cd[i]) {
                memcpy(dst, src + (o * (size_t)len + (size_t)i) * inner, inner);
                dst += inner;
            }
    return MINFER_OK;
}

minfer_status cpu_compute_nonzero(const cpu_exec *e) {
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims), nz = 0;
    const void *xd = cpu_data(x);
    for (size_t i = 0; i < n; i++)
        nz += cpu_get(xd, x->dtype, i) != 0;
    int64_t od[2] = {x->rank, (int64_t)nz}, idx[CPU_MAX_RANK];
    int64_t *y;
    minfer_status s = cpu_output(e, 0, MINFER_DTYPE_INT64, 2, od, (void **)&y);
    if (s)
        return s;
    for (size_t i = 0, j = 0; i < n; i++)
        if (cpu_get(xd, x->dtype, i) != 0) {
            unravel(i, x->rank, x->dims, idx);
            for (int32_t d = 0; d < x->rank; d++)
                y[(size_t)d * nz + j] = idx[d];
            j++;
        }
    return MINFER_OK;
}

/* ---- Sorting: TopK, Unique ---------------------------------------------- */

/* The order every sort-like kernel here uses, a total one: numbers by value
 * (-0 equal to +0), and NaN equal to NaN and above +inf, as numpy and
 * PyTorch sort; TopK's largest puts NaN first and its smallest puts NaN
 * last, Unique keeps one NaN (docs/operators.md). Plain < and > are not an
 * order once NaN is in (NaN is neither above nor below anything), and
 * qsort with such a comparator is undefined behaviour.
 *
 * Element i as an unsigned key in that order, so that comparing is one
 * integer compare: 64-bit integers exactly (a double would merge values
 * above 2^53, int64 with its sign bit flipped), every other type through
 * its exact double, whose bits order like the numbers once negative ones
 * are inverted and positive ones get the top bit; every NaN is the one key
 * above +inf's. */
static uint64_t order_key(const void *p, int32_t dt, size_t i) {
    if (dt == MINFER_DTYPE_INT64)
        return (uint64_t)((const int64_t *)p)[i] ^ (UINT64_C(1) << 63);
    if (dt == MINFER_DTYPE_UINT64)
        return ((const uint64_t *)p)[i];
    double v = cpu_get(p, dt, i);
    if (v != v)
        return UINT64_MAX;
    if (v == 0)
        v = 0; /* -0 as +0 */
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u >> 63 ? ~u : u | (UINT64_C(1) << 63);
}

static int elem_cmp(const void *p, int32_t dt, size_t a, size_t b) {
    uint64_t x = order_key(p, dt, a), y = order_key(p, dt, b);
    return (x > y) - (x < y);
}

typedef int (*pos_cmp)(const void *ctx, size_t a, size_t b);

/* Stable bottom-up merge sort of idx[0..n) by cmp (tmp: n scratch slots),
 * for Unique's slices: started ascending, each run of equal slices starts
 * with its first occurrence. qsort has no context argument and is not
 * stable. */
static void sort_positions(size_t *idx, size_t *tmp, size_t n, pos_cmp cmp, const void *ctx) {
    for (size_t w = 1; w < n; w = w > n / 2 ? n : 2 * w) {
        for (size_t lo = 0; lo < n; lo = n - lo > 2 * w ? lo + 2 * w : n) {
            size_t mid = n - lo > w ? lo + w : n, hi = n - mid > w ? mid + w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp[k++] = cmp(ctx, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
            while (i < mid)
                tmp[k++] = idx[i++];
            while (j < hi)
                tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, n * sizeof *idx);
    }
}

/* ---- TopK ------------------------------------------------------------------ */

typedef struct topk_item {
    uint64_t key; /* order_key */
    int64_t i;
} topk_item;

/* Larger (smaller) first; equal keys keep the lower index first, as ONNX
 * requires. With the index as the last word these are total orders. */
static int by_largest(const void *a, const void *b) {
    const topk_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static int by_smallest(const void *a, const void *b) {
    const topk_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

minfer_status cpu_compute_topk(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *kv = cpu_input(e, 1);
    int64_t kk[1];
    size_t cnt;
    if (!x || !kv)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "needs X and K");
    minfer_status s = cpu_read_ints(e, kv, "K", kk, 1, &cnt);
    if (s)
        return s;
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0 || cnt != 1 || kk[0] < 0 || kk[0] > x->dims[axis])
        return cpu_fail(e, MINFER_ERR_SHAPE, "bad axis or K");
    int64_t od[CPU_MAX_RANK];
    memcpy(od, x->dims, (size_t)x->rank * sizeof *od);
    od[axis] = kk[0];
    void *y;
    int64_t *yi;
    if ((s = cpu_output(e, 0, x->dtype, x->rank, od, &y)) != MINFER_OK ||
        (s = cpu_output(e, 1, MINFER_DTYPE_INT64, x->rank, od, (void **)&yi)) != MINFER_OK)
        return s;
    size_t len = (size_t)x->dims[axis], k = (size_t)kk[0];
    size_t outer = (size_t)minfer_kit_numel(axis, x->dims);
    size_t inner = (size_t)minfer_kit_numel(x->rank - axis - 1, x->dims + axis + 1);
    size_t es = minfer_elem_size(x->dtype);
    topk_item *items = cpu_calloc(e->ctx, len ? len : 1, sizeof *items);
    if (!items)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    const char *xd = cpu_data(x);
    for (size_t o = 0; o < outer && k; o++)
        for (size_t in = 0; in < inner; in++) {
            size_t base = o * len * inner + in;
            for (size_t j = 0; j < len; j++)
                items[j] = (topk_item){order_key(xd, x->dtype, base + j * inner), (int64_t)j};
            qsort(items, len, sizeof *items, st->a ? by_largest : by_smallest);
            for (size_t j = 0; j < k; j++) {
                size_t dst = (o * k + j) * inner + in;
                memcpy((char *)y + dst * es, xd + (base + (size_t)items[j].i * inner) * es, es);
                yi[dst] = items[j].i;
            }
        }
    free(items);
    return MINFER_OK;
}

/* ---- Unique -------------------------------------------------------------- */

/* Slices j of x viewed as [outer, len, inner], compared element by element
 * in (outer, inner) order, as numpy compares the rows of moveaxis(x, axis, 0),
 * each element in elem_cmp's order. */
typedef struct slices {
    const void *d;
    int32_t dt;
    size_t outer, len, inner;
} slices;

static int slice_cmp(const void *ctx, size_t a, size_t b) {
    const slices *s = ctx;
    for (size_t o = 0; o < s->outer; o++)
        for (size_t i = 0; i < s->inner; i++) {
            int c = elem_cmp(s->d, s->dt, (o * s->len + a) * s->inner + i,
                             (o * s->len + b) * s->inner + i);
            if (c)
                return c;
        }
    return 0;
}

/* The slices are sorted (stably, so each run of equal slices starts with
 * its first occurrence) and runs of equal ones become one unique each:
 * O(n log n) comparisons where a scan against every unique so far was
 * quadratic. */
minfer_status cpu_compute_unique(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    minfer_status s = MINFER_OK;
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int64_t dims[CPU_MAX_RANK];
    int32_t rank;
    int axis;
    if (st->has_axis) {
        axis = minfer_kit_axis(st->axis, x->rank);
        if (axis < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
        rank = x->rank;
        memcpy(dims, x->dims, (size_t)rank * sizeof *dims);
    } else {
        axis = 0;
        rank = 1;
        dims[0] = minfer_kit_numel(x->rank, x->dims);
    }
    slices sl = {cpu_data(x), x->dtype, (size_t)minfer_kit_numel(axis, dims), (size_t)dims[axis],
                 (size_t)minfer_kit_numel(rank - axis - 1, dims + axis + 1)};
    size_t len = sl.len, nu = 0, n1 = len ? len : 1;
    /* idx: the slices in sorted order (and tmp, the sort's scratch);
     * uniq[j]: the unique of slice j, by sorted rank; first[u], count[u]:
     * unique u's first slice and its count; order[p]: the unique at output
     * position p; pos[u]: unique u's output position. */
    size_t *idx = cpu_calloc(e->ctx, n1, 2 * sizeof *idx);
    size_t *uniq = cpu_calloc(e->ctx, n1, sizeof *uniq);
    size_t *first = cpu_calloc(e->ctx, n1, sizeof *first);
    size_t *order = cpu_calloc(e->ctx, n1, sizeof *order);
    size_t *pos = cpu_calloc(e->ctx, n1, sizeof *pos);
    int64_t *count = cpu_calloc(e->ctx, n1, sizeof *count);
    if (!idx || !uniq || !first || !order || !pos || !count) {
        s = cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t j = 0; j < len; j++)
        idx[j] = j;
    sort_positions(idx, idx + len, len, slice_cmp, &sl);
    for (size_t r = 0; r < len; r++) {
        if (r == 0 || slice_cmp(&sl, idx[r - 1], idx[r]) != 0)
            first[nu++] = idx[r];
        uniq[idx[r]] = nu - 1;
        count[nu - 1]++;
    }
    /* Output order: sorted, or by first occurrence (a scan over the slices
     * meets each unique first at its first slice). */
    if (st->a) {
        for (size_t u = 0; u < nu; u++)
            order[u] = u;
    } else {
        for (size_t j = 0, p = 0; j < len; j++)
            if (first[uniq[j]] == j)
                order[p++] = uniq[j];
    }
    for (size_t p = 0; p < nu; p++)
        pos[order[p]] = p;
    int64_t od[CPU_MAX_RANK], nd[1] = {(int64_t)nu}, ld[1] = {(int64_t)len};
    memcpy(od, dims, (size_t)rank * sizeof *od);
    od[axis] = (int64_t)nu;
    void *y;
    if ((s = cpu_output(e, 0, x->dtype, rank, od, &y)) != MINFER_OK)
        goto done;
    size_t es = minfer_elem_size(x->dtype);
    /* Slices of no elements (a 0 off the axis) leave y empty: no pointer. */
    for (size_t o = 0; o < sl.outer && sl.inner; o++)
        for (size_t p = 0; p < nu; p++)
            memcpy((char *)y + (o * nu + p) * sl.inner * es,
                   (const char *)sl.d + (o * len + first[order[p]]) * sl.inner * es,
                   sl.inner * es);
    int64_t *o1, *o2, *o3;
    if (minfer_kit_output_wanted(e->args->node, 1)) {
        if ((s = cpu_output(e, 1, MINFER_DTYPE_INT64, 1, nd, (void **)&o1)) != MINFER_OK)
            goto done;
        for (size_t p = 0; p < nu; p++)
            o1[p] = (int64_t)first[order[p]];
    }
    if (minfer_kit_output_wanted(e->args->node, 2)) {
        if ((s = cpu_output(e, 2, MINFER_DTYPE_INT64, 1, ld, (void **)&o2)) != MINFER_OK)
            goto done;
        for (size_t j = 0; j < len; j++)
            o2[j] = (int64_t)pos[uniq[j]];
    }
    if (minfer_kit_output_wanted(e->args->node, 3)) {
        if ((s = cpu_output(e, 3, MINFER_DTYPE_INT64, 1, nd, (void **)&o3)) != MINFER_OK)
            goto done;
        for (size_t p = 0; p < nu; p++)
            o3[p] = count[order[p]];
    }
done:
    free(count);
    free(pos);
    free(order);
    free(first);
    free(uniq);
    free(idx);
    return s;
}

/* ---- CumSum ---------------------------------------------------------------- */

#define CUMSUM(E, T, S)                                                                    \
    static void cumsum_##S(const T *x, T *y, size_t outer, size_t len, size_t inner,       \
                           int exclusive, int reverse) {                                   \
        for (size_t o = 0; o < outer; o++)                                                 \
            for (size_t i = 0; i < inner; i++) {                                           \
                T acc = 0;                                                                 \
                for (size_t s = 0; s < len; s++) {                                         \
                    size_t j = reverse ? len - 1 - s : s;                                  \
                    size_t at = (o * len + j) * inner + i;                                 \
                    if (exclusive) {                                                       \
                        y[at] = acc;                                                       \
                        acc = CPU_WRAP_ADD(T, acc, x[at]);                                 \
                    } else {                                                               \
                        acc = CPU_WRAP_ADD(T, acc, x[at]);                                 \
                        y[at] = acc;                                                       \
                    }                                                                      \
                }                                                                          \
            }                                                                              \
    }
CPU_NUM_TYPES(CUMSUM)

minfer_status cpu_compute_cumsum(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *av = cpu_input(e, 1);
    int64_t ax[1];
    size_t cnt;
    if (!x || !av)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "needs x and axis");
    minfer_status s = cpu_read_ints(e, av, "axis", ax, 1, &cnt);
    if (s)
        return s;
    int axis = cnt == 1 ? minfer_kit_axis(ax[0], x->rank) : -1;
    if (axis < 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
    void *y;
    if ((s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y)) != MINFER_OK)
        return s;
    size_t outer = (size_t)minfer_kit_numel(axis, x->dims), len = (size_t)x->dims[axis];
    size_t inner = (size_t)minfer_kit_numel(x->rank - axis - 1, x->dims + axis + 1);
    switch (x->dtype) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        cumsum_##S(cpu_data(x), y, outer, len, inner, (int)st->a, (int)st->b);             \
        return MINFER_OK;
        CPU_NUM_TYPES(CASE)
#undef CASE
    }
    return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                    minfer_elem_name(x->dtype));
}

/* ---- Trilu, EyeLike ---------------------------------------------------------- */

minfer_status cpu_compute_trilu(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *kv = cpu_input(e, 1);
    int64_t k = 0;
    size_t cnt;
    if (!x || x->rank < 2)
        return cpu_fail(e, MINFER_ERR_SHAPE, "input must have rank >= 2");
    minfer_status s;
    if (kv && (s = cpu_read_ints(e, kv, "k", &k, 1, &cnt)) != MINFER_OK)
        return s;
    void *y;
    if ((s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y)) != MINFER_OK)
        return s;
    size_t R = (size_t)x->dims[x->rank - 2], C = (size_t)x->dims[x->rank - 1];
    size_t mats = (size_t)minfer_kit_numel(x->rank - 2, x->dims), es = minfer_elem_size(x->dtype);
    const char *src = cpu_data(x);
    for (size_t m = 0; m < mats; m++)
        for (size_t i = 0; i < R; i++)
            for (size_t j = 0; j < C; j++) {
                int64_t diff = (int64_t)j - (int64_t)i;
                int keep = st->a ? diff >= k : diff <= k;
                size_t at = ((m * R + i) * C + j) * es;
                if (keep)
                    memcpy((char *)y + at, src + at, es);
                else
                    memset((char *)y + at, 0, es);
            }
    return MINFER_OK;
}

minfer_status cpu_compute_eyelike(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x || x->rank != 2)
        return cpu_fail(e, MINFER_ERR_SHAPE, "input must be 2-D");
    int32_t dt = st->dtype ? st->dtype : x->dtype;
    void *y;
    minfer_status s = cpu_output(e, 0, dt, 2, x->dims, &y);
    if (s)
        return s;
    for (int64_t i = 0; i < x->dims[0]; i++)
        for (int64_t j = 0; j < x->dims[1]; j++)
            cpu_set(y, dt, (size_t)(i * x->dims[1] + j), j - i == st->a ? 1.0 : 0.0);
    return MINFER_OK;
}

/* ---- ReverseSequence ------------------------------------------------------- */

minfer_status cpu_compute_reverse_sequence(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *lv = cpu_input(e, 1);
    if (!x || !lv || !is_index_type(lv->dtype) || x->rank < 2)
        return cpu_fail(e, MINFER_ERR_TYPE, "needs input (rank >= 2) and int sequence_lens");
    int ta = minfer_kit_axis(st->a, x->rank), ba = minfer_kit_axis(st->b, x->rank);
    if (ta < 0 || ba < 0 || ta == ba || lv->rank != 1 || lv->dims[0] != x->dims[ba])
        return cpu_fail(e, MINFER_ERR_SHAPE, "bad axes or sequence_lens");
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    int64_t xs[CPU_MAX_RANK], idx[CPU_MAX_RANK];
    cpu_strides(x->rank, x->dims, xs);
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims), es = minfer_elem_size(x->dtype);
    const char *src = cpu_data(x);
    for (size_t i = 0; i < n; i++) {
        unravel(i, x->rank, x->dims, idx);
        int64_t len = cpu_get_index(cpu_data(lv), lv->dtype, (size_t)idx[ba]);
        if (len < 0 || len > x->dims[ta])
            return cpu_fail(e, MINFER_ERR_RUNTIME, "sequence length out of range");
        if (idx[ta] < len)
            idx[ta] = len - 1 - idx[ta];
        memcpy((char *)y + i * es, src + ravel(x->rank, xs, idx) * es, es);
    }
    return MINFER_OK;
}

/* ---- DepthToSpace, SpaceToDepth -------------------------------------------- */

minfer_status cpu_compute_depth_space(const cpu_exec *e) {
    const idx_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    int to_space = strcmp(e->args->node->op_type, "DepthToSpace") == 0;
    if (!x || x->rank != 4)
        return cpu_fail(e, MINFER_ERR_SHAPE, "input must be 4-D");
    int64_t b = st->a, N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t od[4];
    /* b*b, and C*b*b for SpaceToDepth, are checked before they are formed:
     * blocksize is the model's. */
    if (b > INT64_MAX / b || (!to_space && C > INT64_MAX / (b * b)))
        return cpu_fail(e, MINFER_ERR_LIMIT, "blocksize %lld is too large for %lld channels",
                        (long long)b, (long long)C);
    if (to_space) {
        if (C % (b * b))
            return cpu_fail(e, MINFER_ERR_SHAPE, "channels not divisible by blocksize^2");
        od[0] = N, od[1] = C / (b * b), od[2] = H * b, od[3] = W * b;
    } else {
        if (H % b || W % b)
            return cpu_fail(e, MINFER_ERR_SHAPE, "spatial dims not divisible by blocksize");
        od[0] = N, od[1] = C * b * b, od[2] = H / b, od[3] = W / b;
    }
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, 4, od, &y);
    if (s)
        return s;
    size_t es = minfer_elem_size(x->dtype);
    const char *src = cpu_data(x);
    /* Walk the space side [N, c, h*b+i, w*b+j] and the depth side
     * [N, depth channel, h, w] together. */
    int64_t c2 = to_space ? od[1] : C, h2 = to_space ? H : od[2], w2 = to_space ? W : od[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < c2; c++)
            for (int64_t h = 0; h < h2; h++)
                for (int64_t w = 0; w < w2; w++)
                    for (int64_t i = 0; i < b; i++)
                        for (int64_t j = 0; j < b; j++) {
                            int64_t dc = st->b ? c * b * b + i * b + j : (i * b + j) * c2 + c;
                            size_t sp = (size_t)(((n * c2 + c) * h2 * b + h * b + i) * w2 * b +
                                                 w * b + j);
                            size_t dp = (size_t)(((n * c2 * b * b + dc) * h2 + h) * w2 + w);
                            if (to_space)
                                memcpy((char *)y + sp * es, src + dp * es, es);
                            else
                                memcpy((char *)y + dp * es, src + sp * es, es);
                        }
    return MINFER_OK;
}

/* ---- Pad ------------------------------------------------------------------- */

enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

typedef struct pad_state {
    int mode;
    int from_inputs;      /* opset >= 11: pads, constant_value, axes are inputs */
    size_t n_pads;        /* before opset 11: the attribute */
    int64_t pads[2 * CPU_MAX_RANK];
    float value;
} pad_state;

minfer_status cpu_prepare_pad(cpu_prep *p) {
    pad_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    const char *mode = cpu_attr_str(p, "mode", "constant");
    if (strcmp(mode, "constant") == 0)
        st->mode = PAD_CONSTANT;
    else if (strcmp(mode, "reflect") == 0)
        st->mode = PAD_REFLECT;
    else if (strcmp(mode, "edge") == 0)
        st->mode = PAD_EDGE;
    else if (strcmp(mode, "wrap") == 0)
        st->mode = PAD_WRAP;
    else
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown mode '%s'", mode);
    st->from_inputs = p->since >= 11;
    if (!st->from_inputs) {
        const char *name = p->since >= 2 ? "pads" : "paddings";
        if (cpu_attr_ints(p, name, st->pads, 2 * CPU_MAX_RANK, &st->n_pads) != 1)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "attribute '%s' missing or too long",
                                 name);
        st->value = cpu_attr_float(p, "value", 0.0f);
    }
    return MINFER_OK;
}

/* Constant Pad by rows: each output row (all axes but the last) is the
 * fill value, or fill, a copy of the input row's kept part, fill. Rows run
 * in parallel. Negative pads (crops) are offsets into the input row. */
typedef struct pad_rows {
    const char *src;
    char *y;
    int32_t r;
    size_t es;
    const int64_t *xdims, *od, *begin, *xs;
    const unsigned char *fill;
    int zero_fill; /* the fill value's bytes are all zero */
} pad_rows;

static void pad_fill(const pad_rows *j, char *dst, int64_t n) {
    if (n <= 0)
        return;
    if (j->zero_fill) {
        memset(dst, 0, (size_t)n * j->es);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(dst + (size_t)i * j->es, j->fill, j->es);
}

static void pad_rows_range(void *arg, size_t b, size_t e) {
    const pad_rows *j = arg;
    int32_t last = j->r - 1;
    int64_t ow = j->od[last], xw = j->xdims[last], bl = j->begin[last];
    int64_t lo = bl > 0 ? bl : 0, hi = bl + xw < ow ? bl + xw : ow; /* output cols copied */
    for (size_t row = b; row < e; row++) {
        char *dst = j->y + row * (size_t)ow * j->es;
        size_t rem = row, off = 0;
        int inside = hi > lo;
        for (int32_t d = last - 1; d >= 0 && inside; d--) {
            int64_t c = (int64_t)(rem % (size_t)j->od[d]) - j->begin[d];
            rem /= (size_t)j->od[d];
            inside = c >= 0 && c < j->xdims[d];
            off += (size_t)(c * j->xs[d]);
        }
        if (!inside) {
            pad_fill(j, dst, ow);
            continue;
        }
        pad_fill(j, dst, lo);
        memcpy(dst + (size_t)lo * j->es, j->src + (off + (size_t)(lo - bl)) * j->es,
               (size_t)(hi - lo) * j->es);
        pad_fill(j, dst + (size_t)hi * j->es, ow - hi);
    }
}

minfer_status cpu_compute_pad(const cpu_exec *e) {
    const pad_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    int64_t raw[2 * CPU_MAX_RANK], axes[CPU_MAX_RANK], begin[CPU_MAX_RANK] = {0},
                                                       end[CPU_MAX_RANK] = {0};
    size_t np = st->n_pads, na = 0;
    double value = st->value;
    minfer_status s;
    if (!x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int32_t r = x->rank;
    if (st->from_inputs) {
        const minfer_tensor_view *pv = cpu_input(e, 1), *cv = cpu_input(e, 2),
                                 *av = cpu_input(e, 3);
        if (!pv)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "missing pads");
        if ((s = cpu_read_ints(e, pv, "pads", raw, 2 * CPU_MAX_RANK, &np)) != MINFER_OK)
            return s;
        if (cv && minfer_kit_numel(cv->rank, cv->dims) > 0 &&
            (s = cpu_read_scalar(e, cv, "constant_value", &value)) != MINFER_OK)
            return s;
        if (av && (s = cpu_read_ints(e, av, "axes", axes, CPU_MAX_RANK, &na)) != MINFER_OK)
            return s;
    } else {
        memcpy(raw, st->pads, np * sizeof *raw);
    }
    if (!na) {
        na = (size_t)r;
        for (int32_t d = 0; d < r; d++)
            axes[d] = d;
    }
    if (np != 2 * na)
        return cpu_fail(e, MINFER_ERR_SHAPE, "pads has %zu entries, %zu expected", np, 2 * na);
    for (size_t i = 0; i < na; i++) {
        int a = minfer_kit_axis(axes[i], r);
        if (a < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range");
        begin[a] = raw[i];
        end[a] = raw[na + i];
    }
    int64_t od[CPU_MAX_RANK], xs[CPU_MAX_RANK], idx[CPU_MAX_RANK];
    for (int32_t d = 0; d < r; d++) {
        od[d] = x->dims[d] + begin[d] + end[d];
        if (od[d] < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "pads remove more than the dimension");
        if (st->mode != PAD_CONSTANT && x->dims[d] == 0 && od[d] > 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "cannot %s-pad an empty dimension",
                            st->mode == PAD_EDGE ? "edge" : "reflect");
    }
    void *y;
    if ((s = cpu_output(e, 0, x->dtype, r, od, &y)) != MINFER_OK)
        return s;
    cpu_strides(r, x->dims, xs);
    size_t n = (size_t)minfer_kit_numel(r, od), es = minfer_elem_size(x->dtype);
    const char *src = cpu_data(x);
    unsigned char fill[16] = {0}, zero[16] = {0};
    cpu_set(fill, x->dtype, 0, value);
    if (st->mode == PAD_CONSTANT && r > 0 && n > 0 && es <= sizeof fill &&
        x->dtype != MINFER_DTYPE_STRING) {
        pad_rows j = {src, y, r, es, x->dims, od, begin, xs, fill, !memcmp(fill, zero, es)};
        size_t rows = n / (size_t)od[r - 1], per = (size_t)od[r - 1] * es;
        cpu_parallel(e->ctx, rows, per ? (65536 + per - 1) / per : rows, pad_rows_range, &j);
        return MINFER_OK;
    }
    for (size_t i = 0; i < n; i++) {
        unravel(i, r, od, idx);
        int inside = 1;
        for (int32_t d = 0; d < r && inside; d++) {
            int64_t c = idx[d] - begin[d], len = x->dims[d];
            if (c >= 0 && c < len) {
                idx[d] = c;
                continue;
            }
            switch (st->mode) {
            case PAD_CONSTANT: inside = 0; break;
            case PAD_EDGE: c = c < 0 ? 0 : len - 1; break;
            case PAD_WRAP: c = ((c % len) + len) % len; break;
            default: /* reflect, period 2 * (len - 1), without repeating the edge */
                if (len == 1) {
                    c = 0;
                } else {
                    int64_t per = 2 * (len - 1);
                    c = ((c % per) + per) % per;
                    if (c >= len)
                        c = per - c;
                }
            }
            idx[d] = c;
        }
        if (inside)
            memcpy((char *)y + i * es, src + ravel(r, xs, idx) * es, es);
        else
            memcpy((char *)y + i * es, fill, es);
    }
    return MINFER_OK;
}
