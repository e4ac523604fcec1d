/*
 * Indexing: Gather, GatherElements, the Scatters, DepthToSpace,
 * SpaceToDepth, EyeLike.
 */
#include "shapes/infer_rules.h"

#include <string.h>

minfer_status si_gather(ictx *c) {
    const minfer_tensor_view *x, *idx;
    int64_t axis, d[MINFER_MAX_RANK * 2];
    int32_t r = 0;
    int elements = !strcmp(c->op, "GatherElements");
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &idx)))
        return st;
    if (idx->dtype && idx->dtype != MINFER_DTYPE_INT64 && idx->dtype != MINFER_DTYPE_INT32)
        return si_fail(c, MINFER_ERR_TYPE, "indices must be int32 or int64, not %s",
                    si_dtype_name(idx->dtype));
    axis = mf_attr_int(c->node, "axis", 0);
    if (x->rank == 0)
        return si_fail(c, MINFER_ERR_SHAPE, "data must have rank >= 1");
    if (x->rank >= 0 && (st = si_norm_axis(c, axis, x->rank, "axis", &axis)))
        return st;
    if (elements) {
        if (x->rank >= 0 && idx->rank >= 0 && x->rank != idx->rank)
            return si_fail(c, MINFER_ERR_SHAPE, "indices rank %d differs from data rank %d",
                        (int)idx->rank, (int)x->rank);
        return idx->rank >= 0 ? si_set_out(c, 0, x->dtype, idx->rank, idx->dims)
                              : si_set_out(c, 0, x->dtype, x->rank, NULL);
    }
    if (x->rank < 0 || idx->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    for (int32_t i = 0; i < axis; i++)
        d[r++] = x->dims[i];
    for (int32_t i = 0; i < idx->rank; i++)
        d[r++] = idx->dims[i];
    for (int32_t i = (int32_t)axis + 1; i < x->rank; i++)
        d[r++] = x->dims[i];
    return si_set_out(c, 0, x->dtype, r, d);
}

minfer_status si_eyelike(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (x->rank >= 0 && x->rank != 2)
        return si_fail(c, MINFER_ERR_SHAPE, "input must be 2-D, not rank %d", (int)x->rank);
    int32_t dt;
    if ((st = si_dtype_attr(c, "dtype", x->dtype, &dt)))
        return st;
    return si_shape_of_x(c, dt);
}

/* Scatter, ScatterElements, ScatterND: the data's type and shape. */
minfer_status si_scatter(ictx *c) {
    const minfer_tensor_view *x, *upd;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 2, &upd)) ||
        (st = si_same_type(c, x, "data", upd, "updates")))
        return st;
    return si_same_as(c, 0, x);
}

minfer_status si_depth_space(ictx *c) {
    const minfer_tensor_view *x;
    int64_t b = mf_attr_int(c->node, "blocksize", 0), d[4];
    int to_space = !strcmp(c->op, "DepthToSpace");
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (b < 1)
        return si_fail(c, MINFER_ERR_MODEL, "blocksize must be positive");
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, 4, NULL);
    if (x->rank != 4)
        return si_fail(c, MINFER_ERR_SHAPE, "input must be 4-D, not rank %d", (int)x->rank);
    d[0] = x->dims[0];
    if (to_space) {
        int64_t bb;
        if (!si_mul_nn(b, b, &bb))
            return si_overflow(c);
        if (x->dims[1] >= 0 && x->dims[1] % bb)
            return si_fail(c, MINFER_ERR_SHAPE, "channels %lld not divisible by blocksize^2",
                        (long long)x->dims[1]);
        d[1] = x->dims[1] < 0 ? -1 : x->dims[1] / bb;
        if ((x->dims[2] >= 0 && !si_mul_nn(x->dims[2], b, &d[2])) ||
            (x->dims[3] >= 0 && !si_mul_nn(x->dims[3], b, &d[3])))
            return si_overflow(c);
        d[2] = x->dims[2] < 0 ? -1 : d[2];
        d[3] = x->dims[3] < 0 ? -1 : d[3];
    } else {
        for (int i = 2; i < 4; i++)
            if (x->dims[i] >= 0 && x->dims[i] % b)
                return si_fail(c, MINFER_ERR_SHAPE, "spatial dim %lld not divisible by blocksize",
                            (long long)x->dims[i]);
        int64_t bb;
        if (!si_mul_nn(b, b, &bb) || (x->dims[1] >= 0 && !si_mul_nn(x->dims[1], bb, &d[1])))
            return si_overflow(c);
        d[1] = x->dims[1] < 0 ? -1 : d[1];
        d[2] = x->dims[2] < 0 ? -1 : x->dims[2] / b;
        d[3] = x->dims[3] < 0 ? -1 : x->dims[3] / b;
    }
    return si_set_out(c, 0, x->dtype, 4, d);
}

/* TopK: Values in X's type and Indices int64, X's shape with K on axis (K
 * the input of opset 10 on, the attribute k before). */
minfer_status si_topk(ictx *c) {
    const minfer_tensor_view *x;
    int64_t axis = mf_attr_int(c->node, "axis", -1), k = -1, d[MINFER_MAX_RANK];
    minfer_status st;
    if ((st = si_require(c, 0, &x)))
        return st;
    if (c->opset >= 10) {
        int_list kl;
        if ((st = si_read_ints(c, 1, "K", &kl)))
            return st;
        if (kl.state == LIST_ABSENT)
            return si_fail(c, MINFER_ERR_MODEL, "required input 1 (K) is missing");
        if (kl.state == LIST_KNOWN) {
            if (kl.n != 1)
                return si_fail(c, MINFER_ERR_SHAPE, "K must hold one value, not %zu", kl.n);
            k = kl.v[0];
        }
    } else {
        k = mf_attr_int(c->node, "k", -1);
    }
    if (k < -1 || (k == -1 && c->opset < 10))
        return si_fail(c, MINFER_ERR_MODEL, "K = %lld is negative", (long long)k);
    if (x->rank < 0) {
        if ((st = si_set_out(c, 0, x->dtype, -1, NULL)))
            return st;
        return si_set_out(c, 1, MINFER_DTYPE_INT64, -1, NULL);
    }
    if ((st = si_norm_axis(c, axis, x->rank, "axis", &axis)))
        return st;
    memcpy(d, x->dims, (size_t)x->rank * sizeof d[0]);
    if (k >= 0 && x->dims[axis] >= 0 && k > x->dims[axis])
        return si_fail(c, MINFER_ERR_SHAPE, "K = %lld is more than axis %lld's %lld", (long long)k,
                       (long long)axis, (long long)x->dims[axis]);
    d[axis] = k;
    if ((st = si_set_out(c, 0, x->dtype, x->rank, d)))
        return st;
    return si_set_out(c, 1, MINFER_DTYPE_INT64, x->rank, d);
}

/* NonZero: int64 [rank(X), number of non-zeros]. */
minfer_status si_nonzero(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    int64_t d[2] = {x ? x->rank : -1, -1};
    if (st)
        return st;
    return si_set_out(c, 0, MINFER_DTYPE_INT64, 2, d);
}

/* GatherND: data [r], indices [q] whose last dim m indexes data after
 * batch_dims b: indices.shape[:-1] + data.shape[b + m:], in data's type. */
minfer_status si_gather_nd(ictx *c) {
    const minfer_tensor_view *x, *idx;
    int64_t b = mf_attr_int(c->node, "batch_dims", 0), d[MINFER_MAX_RANK * 2];
    int32_t r = 0;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &idx)))
        return st;
    if (idx->dtype && idx->dtype != MINFER_DTYPE_INT64)
        return si_fail(c, MINFER_ERR_TYPE, "indices must be int64, not %s",
                       si_dtype_name(idx->dtype));
    if (x->rank < 0 || idx->rank < 0 || idx->rank == 0 || idx->dims[idx->rank - 1] < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    int64_t m = idx->dims[idx->rank - 1];
    if (b < 0 || b >= idx->rank || b >= x->rank || m > x->rank - b)
        return si_fail(c, MINFER_ERR_SHAPE,
                       "indices' last dim %lld and batch_dims %lld do not fit data of rank %d",
                       (long long)m, (long long)b, (int)x->rank);
    for (int32_t i = 0; i < idx->rank - 1; i++)
        d[r++] = idx->dims[i];
    for (int64_t i = b + m; i < x->rank; i++)
        d[r++] = x->dims[i];
    return si_set_out(c, 0, x->dtype, r, d);
}

/* OneHot: indices' shape with depth inserted at axis, in values' type. */
minfer_status si_onehot(ictx *c) {
    const minfer_tensor_view *idx, *depth, *values;
    int64_t axis = mf_attr_int(c->node, "axis", -1), d[MINFER_MAX_RANK], dv = -1, n = 0;
    double f = 0;
    int is_float = 0, known = 0;
    minfer_status st;
    if ((st = si_require(c, 0, &idx)) || (st = si_require(c, 1, &depth)) ||
        (st = si_require(c, 2, &values)) ||
        (st = si_read_scalar(c, 1, &is_float, &f, &n, &known)))
        return st;
    if (values->rank >= 0 && si_static_len(values) >= 0 && si_static_len(values) != 2)
        return si_fail(c, MINFER_ERR_SHAPE, "values must hold two entries [off, on]");
    /* The spec casts a floating depth to int64 (truncating). Below 1 (or
     * NaN) is a bad model; from 2^62 on the kernel reports the count it
     * cannot make, so the length is left unknown here. */
    if (known && (is_float ? !(f >= 1) : n < 1))
        return is_float ? si_fail(c, MINFER_ERR_MODEL, "depth must be at least 1, got %g", f)
                        : si_fail(c, MINFER_ERR_MODEL, "depth must be at least 1, got %lld",
                                  (long long)n);
    if (known && (is_float ? f < 0x1p62 : n < ((int64_t)1 << 62)))
        dv = is_float ? (int64_t)f : n;
    if (idx->rank < 0)
        return si_set_out(c, 0, values->dtype, -1, NULL);
    if (idx->rank + 1 > MINFER_MAX_RANK)
        return si_fail(c, MINFER_ERR_LIMIT, "output rank exceeds %d", MINFER_MAX_RANK);
    if ((st = si_norm_axis(c, axis, idx->rank + 1, "axis", &axis)))
        return st;
    for (int32_t i = 0, k = 0; i <= idx->rank; i++)
        d[i] = i == axis ? dv : idx->dims[k++];
    return si_set_out(c, 0, values->dtype, idx->rank + 1, d);
}

/* Compress: the data's type; the kept count is data-dependent. */
minfer_status si_compress(ictx *c) {
    const minfer_tensor_view *x, *cond;
    int64_t axis, d[MINFER_MAX_RANK], len = -1;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &cond)))
        return st;
    if (cond->dtype && cond->dtype != MINFER_DTYPE_BOOL)
        return si_fail(c, MINFER_ERR_TYPE, "condition must be bool, not %s",
                       si_dtype_name(cond->dtype));
    if (!mf_node_attr(c->node, "axis"))
        return si_set_out(c, 0, x->dtype, 1, &len);
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    axis = mf_attr_int(c->node, "axis", 0);
    if ((st = si_norm_axis(c, axis, x->rank, "axis", &axis)))
        return st;
    memcpy(d, x->dims, (size_t)x->rank * sizeof d[0]);
    d[axis] = -1;
    return si_set_out(c, 0, x->dtype, x->rank, d);
}

/* Unique: Y in X's type, indices, inverse_indices and counts int64; every
 * length is data-dependent. */
minfer_status si_unique(ictx *c) {
    const minfer_tensor_view *x;
    int64_t len = -1, d[MINFER_MAX_RANK];
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (!mf_node_attr(c->node, "axis"))
        st = si_set_out(c, 0, x->dtype, 1, &len);
    else if (x->rank < 0)
        st = si_set_out(c, 0, x->dtype, -1, NULL);
    else {
        int64_t axis = mf_attr_int(c->node, "axis", 0);
        if ((st = si_norm_axis(c, axis, x->rank, "axis", &axis)))
            return st;
        memcpy(d, x->dims, (size_t)x->rank * sizeof d[0]);
        d[axis] = -1;
        st = si_set_out(c, 0, x->dtype, x->rank, d);
    }
    for (size_t j = 1; !st && j < 4; j++)
        st = si_set_out(c, j, MINFER_DTYPE_INT64, 1, &len);
    return st;
}
