/*
 * The Reduce* family and ArgMax/ArgMin.
 */
#include "shapes/infer_rules.h"

#include <string.h>

/* The Reduce* family and ArgMax/ArgMin. */
minfer_status si_reduce(ictx *c) {
    const minfer_tensor_view *x;
    int is_arg = !strncmp(c->op, "Arg", 3);
    int from_input = !strcmp(c->op, "ReduceSum") ? c->opset >= 13 : c->opset >= 18;
    int keep = mf_attr_int(c->node, "keepdims", 1) != 0;
    int noop = from_input && mf_attr_int(c->node, "noop_with_empty_axes", 0) != 0;
    int32_t dt, r;
    int64_t d[MINFER_MAX_RANK];
    int_list axes;
    int reduced[MINFER_MAX_RANK] = {0};
    minfer_status st;
    if ((st = si_require(c, 0, &x)))
        return st;
    dt = is_arg ? MINFER_DTYPE_INT64 : x->dtype;
    if (is_arg) {
        axes.state = LIST_KNOWN;
        axes.n = 1;
        axes.v[0] = mf_attr_int(c->node, "axis", 0);
    } else if ((st = si_get_list(c, from_input, 1, "axes", &axes))) {
        return st;
    }
    if (axes.state == LIST_UNKNOWN && axes.len == 0)
        axes.state = LIST_KNOWN;
    if (axes.state != LIST_UNKNOWN && axes.n == 0) {
        /* No axes: all of them, or none with noop_with_empty_axes. */
        if (noop)
            return si_same_as(c, 0, x);
        if (x->rank < 0)
            return si_set_out(c, 0, dt, keep ? -1 : 0, NULL);
        for (int32_t i = 0; i < x->rank; i++)
            d[i] = 1;
        return si_set_out(c, 0, dt, keep ? x->rank : 0, d);
    }
    if (x->rank < 0)
        return si_set_out(c, 0, dt, -1, NULL);
    if (axes.state == LIST_UNKNOWN) {
        /* Which axes go is not known: with keepdims only the sizes are lost. */
        if (keep) {
            for (int32_t i = 0; i < x->rank; i++)
                d[i] = x->dims[i] == 1 ? 1 : -1;
            return si_set_out(c, 0, dt, x->rank, d);
        }
        if (axes.len > x->rank)
            return si_fail(c, MINFER_ERR_MODEL, "%lld axes for rank %d", (long long)axes.len,
                        (int)x->rank);
        return si_set_out(c, 0, dt, axes.len < 0 ? -1 : x->rank - (int32_t)axes.len, NULL);
    }
    if ((st = si_norm_axes(c, &axes, x->rank, "axis")))
        return st;
    for (size_t i = 0; i < axes.n; i++)
        reduced[axes.v[i]] = 1;
    r = 0;
    for (int32_t i = 0; i < x->rank; i++) {
        if (!reduced[i])
            d[r++] = x->dims[i];
        else if (keep)
            d[r++] = 1;
    }
    return si_set_out(c, 0, dt, r, d);
}
