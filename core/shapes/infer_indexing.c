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
    return si_shape_of_x(c, (int32_t)mf_attr_int(c->node, "dtype", 0));
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
