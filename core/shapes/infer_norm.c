/*
 * Softmax family and normalizations: BatchNormalization, LayerNormalization.
 */
#include "shapes/infer_rules.h"

#include <string.h>

/* Softmax, LogSoftmax, Hardmax: the axis must be valid for the rank. */
minfer_status si_softmax(ictx *c) {
    const minfer_tensor_view *x;
    int64_t axis;
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    axis = mf_attr_int(c->node, "axis", c->opset >= 13 ? -1 : 1);
    /* Before opset 13 the input is coerced to 2-D at axis, so axis == rank
     * is valid there (a 1-D input with the default axis 1). */
    if (x->rank >= 0 && (axis < -(int64_t)x->rank ||
                         axis > (int64_t)x->rank - (c->opset >= 13 ? 1 : 0)))
        return si_fail(c, MINFER_ERR_MODEL, "axis %lld is out of range for rank %d",
                    (long long)axis, (int)x->rank);
    return si_same_as(c, 0, x);
}

minfer_status si_batchnorm(ictx *c) {
    const minfer_tensor_view *x;
    int64_t ch;
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    ch = x->rank >= 2 ? x->dims[1] : -1;
    if (x->rank >= 0 && x->rank < 2 && c->opset >= 9)
        return si_fail(c, MINFER_ERR_SHAPE, "X must have rank >= 2, not %d", (int)x->rank);
    for (size_t i = 1; i <= 4; i++) {
        static const char *const names[] = {"", "scale", "B", "mean", "var"};
        const minfer_tensor_view *p = si_input(c, i);
        if (!p || c->opset < 9) /* before 9, spatial=0 gave these other shapes */
            continue;
        if (p->rank >= 0 && p->rank != 1)
            return si_fail(c, MINFER_ERR_SHAPE, "%s must be 1-D, not rank %d", names[i],
                        (int)p->rank);
        if (p->rank == 1 && p->dims[0] >= 0 && ch >= 0 && p->dims[0] != ch)
            return si_fail(c, MINFER_ERR_SHAPE, "%s has %lld values for %lld channels", names[i],
                        (long long)p->dims[0], (long long)ch);
    }
    if ((st = si_same_as(c, 0, x)))
        return st;
    /* Training outputs (running/saved mean and variance) are per channel. */
    for (size_t j = 1; j < c->n_out; j++) {
        const minfer_tensor_view *m = si_input(c, 3);
        if ((st = si_set_out(c, j, m && m->dtype ? m->dtype : x->dtype, 1, &ch)))
            return st;
    }
    return MINFER_OK;
}

minfer_status si_layernorm(ictx *c) {
    const minfer_tensor_view *x;
    int64_t axis, d[MINFER_MAX_RANK];
    int32_t stash;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_same_type(c, x, "X", si_input(c, 1), "Scale")) ||
        (st = si_same_type(c, x, "X", si_input(c, 2), "B")) || (st = si_same_as(c, 0, x)))
        return st;
    axis = mf_attr_int(c->node, "axis", -1);
    if ((st = si_dtype_attr(c, "stash_type", MINFER_DTYPE_FLOAT, &stash)))
        return st;
    if (x->rank < 0) {
        if ((st = si_set_out(c, 1, stash, -1, NULL)))
            return st;
        return si_set_out(c, 2, stash, -1, NULL);
    }
    if ((st = si_norm_axis(c, axis, x->rank, "axis", &axis)))
        return st;
    for (int32_t i = 0; i < x->rank; i++)
        d[i] = i < axis ? x->dims[i] : 1;
    if ((st = si_set_out(c, 1, stash, x->rank, d)))
        return st;
    return si_set_out(c, 2, stash, x->rank, d);
}
