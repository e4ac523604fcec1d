/*
 * Pooling: MaxPool, AveragePool, LpPool and the global pools.
 */
#include "shapes/infer_rules.h"

#include <string.h>

/* MaxPool, AveragePool, LpPool. */
minfer_status si_pool(ictx *c) {
    const minfer_tensor_view *x;
    int_list ks;
    window win;
    int32_t r;
    int ceil_mode;
    int64_t d[MINFER_MAX_RANK];
    char s1[SHAPE_BUF];
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_get_kernel_attr(c, &ks)))
        return st;
    if (ks.state != LIST_KNOWN)
        return si_fail(c, MINFER_ERR_MODEL, "attribute kernel_shape is missing");
    r = (int32_t)ks.n + 2;
    if (x->rank >= 0 && x->rank != r)
        return si_fail(c, MINFER_ERR_SHAPE, "X %s does not match a %zu-D kernel",
                    si_shape_str(x->dims, x->rank, s1, sizeof s1), ks.n);
    if ((st = si_get_window(c, r - 2, &win)))
        return st;
    memcpy(win.kernel, ks.v, ks.n * sizeof ks.v[0]);
    ceil_mode = mf_attr_int(c->node, "ceil_mode", 0) != 0;
    d[0] = x->rank >= 0 ? x->dims[0] : -1;
    d[1] = x->rank >= 0 ? x->dims[1] : -1;
    for (int32_t i = 0; i < r - 2; i++)
        if ((st = si_window_out(c, &win, i, r - 2, x->rank >= 0 ? x->dims[2 + i] : -1, ceil_mode,
                             &d[2 + i])))
            return st;
    if ((st = si_set_out(c, 0, x->dtype, r, d)))
        return st;
    return strcmp(c->op, "MaxPool") ? MINFER_OK : si_set_out(c, 1, MINFER_DTYPE_INT64, r, d);
}

minfer_status si_global_pool(ictx *c) {
    const minfer_tensor_view *x;
    int64_t d[MINFER_MAX_RANK];
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    if (x->rank < 2)
        return si_fail(c, MINFER_ERR_SHAPE, "X must have rank >= 2, not %d", (int)x->rank);
    for (int32_t i = 0; i < x->rank; i++)
        d[i] = i < 2 ? x->dims[i] : 1;
    return si_set_out(c, 0, x->dtype, x->rank, d);
}

/* MaxUnpool: X's type (I, input 1, must be int64); the shape is
 * output_shape when given, else (n - 1) * stride + kernel - pads per
 * spatial axis. */
minfer_status si_maxunpool(ictx *c) {
    const minfer_tensor_view *x, *ind;
    int_list ks, os;
    window win;
    int64_t d[MINFER_MAX_RANK];
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &ind)) ||
        (st = si_get_kernel_attr(c, &ks)) || (st = si_read_ints(c, 2, "output_shape", &os)))
        return st;
    if (ind->dtype && ind->dtype != MINFER_DTYPE_INT64)
        return si_fail(c, MINFER_ERR_TYPE, "I must be int64, not %s", si_dtype_name(ind->dtype));
    if (ks.state != LIST_KNOWN)
        return si_fail(c, MINFER_ERR_MODEL, "attribute kernel_shape is missing");
    int32_t r = (int32_t)ks.n + 2;
    if (x->rank >= 0 && x->rank != r)
        return si_fail(c, MINFER_ERR_SHAPE, "X has rank %d for a %zu-D kernel", (int)x->rank,
                       ks.n);
    if (os.state == LIST_KNOWN) {
        if (os.n != (size_t)r)
            return si_fail(c, MINFER_ERR_SHAPE, "output_shape has %zu values for rank %d", os.n,
                           (int)r);
        for (int32_t i = 0; i < r; i++)
            if (os.v[i] < 0)
                return si_fail(c, MINFER_ERR_SHAPE, "output_shape has %lld",
                               (long long)os.v[i]);
        return si_set_out(c, 0, x->dtype, r, os.v);
    }
    if (os.state == LIST_UNKNOWN || x->rank < 0)
        return si_set_out(c, 0, x->dtype, r, NULL);
    if ((st = si_get_window(c, r - 2, &win)))
        return st;
    d[0] = x->dims[0];
    d[1] = x->dims[1];
    for (int32_t i = 0; i < r - 2; i++) {
        int64_t n = x->dims[2 + i], v;
        d[2 + i] = -1;
        if (n < 1)
            continue;
        if (!si_mul_nn(n - 1, win.strides[i], &v) || !si_add_i64(v, ks.v[i], &v) ||
            !si_sub_i64(v, win.pads[i], &v) || !si_sub_i64(v, win.pads[r - 2 + i], &v))
            return si_overflow(c);
        if (v < 1)
            return si_fail(c, MINFER_ERR_SHAPE, "the pooling geometry gives an empty output");
        d[2 + i] = v;
    }
    return si_set_out(c, 0, x->dtype, r, d);
}
