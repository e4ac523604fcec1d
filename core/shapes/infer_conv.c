/*
 * Conv and ConvTranspose, and the sliding-window attributes they share
 * with the pools (strides, dilations, pads, auto_pad, kernel_shape).
 */
#include "shapes/infer_rules.h"

#include <string.h>

static minfer_status get_auto_pad(ictx *c, int *mode) {
    const char *s = mf_attr_string(c->node, "auto_pad", "NOTSET");
    if (!strcmp(s, "NOTSET"))
        *mode = PAD_NOTSET;
    else if (!strcmp(s, "SAME_UPPER"))
        *mode = PAD_SAME_UPPER;
    else if (!strcmp(s, "SAME_LOWER"))
        *mode = PAD_SAME_LOWER;
    else if (!strcmp(s, "VALID"))
        *mode = PAD_VALID;
    else
        return si_fail(c, MINFER_ERR_MODEL,
                    "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", s);
    return MINFER_OK;
}

minfer_status si_get_window(ictx *c, int32_t nsp, window *w) {
    int_list l;
    minfer_status st;
    static const char *const names[] = {"strides", "dilations", "pads"};
    if ((st = get_auto_pad(c, &w->auto_pad)))
        return st;
    for (int32_t i = 0; i < nsp; i++) {
        w->strides[i] = 1;
        w->dil[i] = 1;
        w->pads[i] = w->pads[i + nsp] = 0;
    }
    for (int k = 0; k < 3; k++) {
        size_t want = (size_t)(k == 2 ? 2 * nsp : nsp);
        int64_t *dst = k == 0 ? w->strides : k == 1 ? w->dil : w->pads;
        if ((st = si_attr_list(c, names[k], &l)))
            return st;
        if (l.state != LIST_KNOWN)
            continue;
        if (l.n != want)
            return si_fail(c, MINFER_ERR_MODEL, "%s has %zu values, expected %zu", names[k], l.n,
                        want);
        for (size_t i = 0; i < l.n; i++) {
            if (k < 2 ? l.v[i] < 1 : l.v[i] < 0)
                return si_fail(c, MINFER_ERR_MODEL, "%s[%zu] = %lld is out of range", names[k], i,
                            (long long)l.v[i]);
            dst[i] = l.v[i];
        }
    }
    if (w->auto_pad != PAD_NOTSET)
        for (int32_t i = 0; i < 2 * nsp; i++)
            w->pads[i] = 0;
    return MINFER_OK;
}

/* Output length of a sliding window over n input positions (the formulas of
 * the Conv / MaxPool specs). -1 when n or a needed kernel size is unknown. */
minfer_status si_window_out(ictx *c, const window *w, int32_t i, int32_t nsp, int64_t n,
                                int ceil_mode, int64_t *out) {
    int64_t k = w->kernel[i], s = w->strides[i], dk, num;
    *out = -1;
    if (n < 0)
        return MINFER_OK;
    if (w->auto_pad == PAD_SAME_UPPER || w->auto_pad == PAD_SAME_LOWER) {
        *out = n / s + (n % s != 0);
        return MINFER_OK;
    }
    if (k < 0)
        return MINFER_OK;
    if (!si_mul_nn(w->dil[i], k - 1, &dk) || !si_add_i64(dk, 1, &dk))
        return si_overflow(c);
    if (!si_add_i64(n, w->pads[i], &num) || !si_add_i64(num, w->pads[i + nsp], &num))
        return si_overflow(c);
    num -= dk;
    if (num < 0)
        return si_fail(c, MINFER_ERR_SHAPE,
                    "spatial axis %d: kernel extent %lld exceeds the padded input %lld", (int)i,
                    (long long)dk, (long long)(num + dk));
    *out = (ceil_mode ? num / s + (num % s != 0) : num / s) + 1;
    /* ceil_mode: a window that would start in the end padding is dropped. */
    if (ceil_mode) {
        int64_t last;
        if (!si_mul_nn(*out - 1, s, &last) || last >= n + w->pads[i])
            (*out)--;
    }
    return MINFER_OK;
}

minfer_status si_get_kernel_attr(ictx *c, int_list *ks) {
    minfer_status st = si_attr_list(c, "kernel_shape", ks);
    if (st)
        return st;
    if (ks->state == LIST_KNOWN) {
        if (ks->n == 0 || ks->n > MINFER_MAX_RANK - 2)
            return si_fail(c, MINFER_ERR_MODEL, "kernel_shape has %zu values", ks->n);
        for (size_t i = 0; i < ks->n; i++)
            if (ks->v[i] < 1)
                return si_fail(c, MINFER_ERR_MODEL, "kernel_shape[%zu] = %lld is not positive", i,
                            (long long)ks->v[i]);
    }
    return MINFER_OK;
}

minfer_status si_conv(ictx *c) {
    const minfer_tensor_view *x, *w, *b;
    int transpose = !strcmp(c->op, "ConvTranspose");
    int_list ks;
    window win;
    int32_t r;
    int64_t group, m = -1, d[MINFER_MAX_RANK];
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &w)) ||
        (st = si_same_type(c, x, "X", w, "W")) || (st = si_get_kernel_attr(c, &ks)))
        return st;
    group = mf_attr_int(c->node, "group", 1);
    if (group < 1)
        return si_fail(c, MINFER_ERR_MODEL, "group %lld is not positive", (long long)group);
    if (x->rank >= 0 && x->rank < 3)
        return si_fail(c, MINFER_ERR_SHAPE, "X must have rank >= 3, not %s",
                    si_shape_str(x->dims, x->rank, s1, sizeof s1));
    if (w->rank >= 0 && w->rank < 3)
        return si_fail(c, MINFER_ERR_SHAPE, "W must have rank >= 3, not %s",
                    si_shape_str(w->dims, w->rank, s1, sizeof s1));
    if (x->rank >= 0 && w->rank >= 0 && w->rank != x->rank)
        return si_fail(c, MINFER_ERR_SHAPE, "W %s and X %s differ in rank",
                    si_shape_str(w->dims, w->rank, s1, sizeof s1),
                    si_shape_str(x->dims, x->rank, s2, sizeof s2));
    r = x->rank >= 0   ? x->rank
        : w->rank >= 0 ? w->rank
        : ks.state == LIST_KNOWN ? (int32_t)ks.n + 2
                                 : -1;
    if (r < 0)
        return si_set_out(c, 0, si_first_dtype(x, w), -1, NULL);
    if (ks.state == LIST_KNOWN && (int32_t)ks.n != r - 2)
        return si_fail(c, MINFER_ERR_MODEL, "kernel_shape has %zu values for %d spatial axes",
                    ks.n, (int)(r - 2));
    if ((st = si_get_window(c, r - 2, &win)))
        return st;
    for (int32_t i = 0; i < r - 2; i++) {
        int64_t kw = w->rank >= 0 ? w->dims[2 + i] : -1;
        if (ks.state == LIST_KNOWN && kw >= 0 && kw != ks.v[i])
            return si_fail(c, MINFER_ERR_SHAPE, "kernel_shape[%d] = %lld but W is %s", (int)i,
                        (long long)ks.v[i], si_shape_str(w->dims, w->rank, s1, sizeof s1));
        win.kernel[i] = ks.state == LIST_KNOWN ? ks.v[i] : kw;
    }
    /* Channels: Conv W is [M, C/group, k...]; ConvTranspose W is [C, M/group, k...]. */
    if (w->rank >= 0) {
        int64_t xc = x->rank >= 0 ? x->dims[1] : -1;
        if (!transpose) {
            int64_t wc;
            m = w->dims[0];
            if (w->dims[1] >= 0 && xc >= 0) {
                if (!si_mul_nn(w->dims[1], group, &wc))
                    return si_overflow(c);
                if (xc != wc)
                    return si_fail(c, MINFER_ERR_SHAPE,
                                "X has %lld channels but W %s with group %lld expects %lld",
                                (long long)xc, si_shape_str(w->dims, w->rank, s1, sizeof s1),
                                (long long)group, (long long)wc);
            }
            if (m >= 0 && m % group)
                return si_fail(c, MINFER_ERR_SHAPE,
                            "W's %lld output channels do not divide into %lld groups",
                            (long long)m, (long long)group);
        } else {
            if (xc >= 0 && w->dims[0] >= 0 && xc != w->dims[0])
                return si_fail(c, MINFER_ERR_SHAPE, "X has %lld channels but W %s expects %lld",
                            (long long)xc, si_shape_str(w->dims, w->rank, s1, sizeof s1),
                            (long long)w->dims[0]);
            if (w->dims[1] >= 0 && !si_mul_nn(w->dims[1], group, &m))
                return si_overflow(c);
        }
    }
    if ((b = si_input(c, 2)) != NULL) {
        if (b->rank >= 0 && b->rank != 1)
            return si_fail(c, MINFER_ERR_SHAPE, "B must be 1-D, not %s",
                        si_shape_str(b->dims, b->rank, s1, sizeof s1));
        if (b->rank == 1 && b->dims[0] >= 0 && m >= 0 && b->dims[0] != m)
            return si_fail(c, MINFER_ERR_SHAPE, "B has %lld values for %lld output channels",
                        (long long)b->dims[0], (long long)m);
    }
    d[0] = x->rank >= 0 ? x->dims[0] : -1;
    d[1] = m;
    if (!transpose) {
        for (int32_t i = 0; i < r - 2; i++)
            if ((st = si_window_out(c, &win, i, r - 2, x->rank >= 0 ? x->dims[2 + i] : -1, 0,
                                 &d[2 + i])))
                return st;
    } else {
        int_list op, os;
        if ((st = si_attr_list(c, "output_padding", &op)) || (st = si_attr_list(c, "output_shape", &os)))
            return st;
        if (op.state == LIST_KNOWN && op.n != (size_t)(r - 2))
            return si_fail(c, MINFER_ERR_MODEL, "output_padding has %zu values, expected %d", op.n,
                        (int)(r - 2));
        if (os.state == LIST_KNOWN && os.n != (size_t)(r - 2) && os.n != (size_t)r)
            return si_fail(c, MINFER_ERR_MODEL, "output_shape has %zu values, expected %d", os.n,
                        (int)(r - 2));
        for (int32_t i = 0; i < r - 2; i++) {
            int64_t n = x->rank >= 0 ? x->dims[2 + i] : -1, k = win.kernel[i], o, t;
            int64_t pad = op.state == LIST_KNOWN ? op.v[i] : 0;
            if (os.state == LIST_KNOWN) {
                d[2 + i] = os.v[os.n - (size_t)(r - 2) + (size_t)i];
                if (d[2 + i] < 0)
                    return si_fail(c, MINFER_ERR_MODEL, "output_shape has %lld",
                                (long long)d[2 + i]);
                continue;
            }
            d[2 + i] = -1;
            if (n < 0)
                continue;
            if (win.auto_pad == PAD_SAME_UPPER || win.auto_pad == PAD_SAME_LOWER) {
                if (!si_mul_nn(n, win.strides[i], &d[2 + i]))
                    return si_overflow(c);
                continue;
            }
            if (k < 0 || n < 1)
                continue;
            /* stride * (n - 1) + output_padding + (k - 1) * dilation + 1 - pads */
            if (!si_mul_nn(win.strides[i], n - 1, &o) || !si_mul_nn(win.dil[i], k - 1, &t) ||
                !si_add_i64(o, t, &o) || !si_add_i64(o, 1, &o) || !si_add_i64(o, pad, &o) ||
                !si_sub_i64(o, win.pads[i], &o) || !si_sub_i64(o, win.pads[i + r - 2], &o))
                return si_overflow(c);
            if (o < 0)
                return si_fail(c, MINFER_ERR_SHAPE, "spatial axis %d would have size %lld", (int)i,
                            (long long)o);
            d[2 + i] = o;
        }
    }
    return si_set_out(c, 0, si_first_dtype(x, w), r, d);
}
