/*
 * Resizing: Resize, Upsample, GridSample.
 *
 * Resize's output has X's element type (T1), whatever the types of roi (T2),
 * scales (float) and sizes (int64): a rule that took the type from another
 * input sent Convs and Concats after a Resize to "X and W types differ".
 * The sizes: `sizes` when given, else floor(dim * scale) per axis, as the
 * CPU kernel computes them (providers/cpu/resize.c); unknown where the
 * contents are not known yet, and left to the kernel where the node uses
 * what the kernel declines anyway (axes, keep_aspect_ratio_policy).
 */
#include "shapes/infer_rules.h"

#include <string.h>

/* The contents of a float or double input as doubles: 1 and the values, 0
 * when they are not known here (no contents, another type, too many). */
static int float_list(const minfer_tensor_view *v, double *out, size_t cap, size_t *n) {
    size_t esz = v ? si_dtype_bytes(v->dtype) : 0;
    if (!v || !v->data || (v->dtype != MINFER_DTYPE_FLOAT && v->dtype != MINFER_DTYPE_DOUBLE))
        return 0;
    int64_t cnt = si_static_len(v);
    if (cnt < 0 || (size_t)cnt > cap || v->nbytes < (size_t)cnt * esz)
        return 0;
    const unsigned char *p = (const unsigned char *)v->data + v->offset;
    for (int64_t i = 0; i < cnt; i++) {
        if (v->dtype == MINFER_DTYPE_FLOAT) {
            float f;
            memcpy(&f, p + 4 * i, 4);
            out[i] = f;
        } else {
            memcpy(&out[i], p + 8 * i, 8);
        }
    }
    *n = (size_t)cnt;
    return 1;
}

/* Entries of an input from its shape (any rank); -1 when not known. */
static int64_t entries(const minfer_tensor_view *v) {
    int64_t n = 1;
    if (!v || v->rank < 0)
        return -1;
    for (int32_t i = 0; i < v->rank; i++)
        if (v->dims[i] < 0 || minfer_i64_mul(n, v->dims[i], &n) != MINFER_OK)
            return -1;
    return n;
}

/* Resize (opset 10: X, scales; 11 on: X, roi, scales, sizes) and Upsample
 * (opset 7: the scales attribute; 9: X, scales). */
minfer_status si_resize(ictx *c) {
    const minfer_tensor_view *x;
    int upsample = !strcmp(c->op, "Upsample") || c->opset < 11;
    int64_t d[MINFER_MAX_RANK];
    double sc[MINFER_MAX_RANK];
    size_t ns = 0;
    int_list sizes;
    minfer_status st;
    if ((st = si_require(c, 0, &x)))
        return st;
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    for (int32_t i = 0; i < x->rank; i++)
        d[i] = -1;
    /* What the CPU kernel declines, and crop-and-resize: sizes left to the run. */
    if (mf_node_attr(c->node, "axes") ||
        strcmp(mf_attr_string(c->node, "keep_aspect_ratio_policy", "stretch"), "stretch"))
        return si_set_out(c, 0, x->dtype, x->rank, d);
    sizes.state = LIST_ABSENT;
    if (!upsample) {
        const minfer_tensor_view *zv = si_input(c, 3);
        if (zv && entries(zv) != 0 && (st = si_read_ints(c, 3, "sizes", &sizes)))
            return st;
    }
    if (sizes.state == LIST_KNOWN) {
        if (sizes.n != (size_t)x->rank)
            return si_fail(c, MINFER_ERR_SHAPE, "sizes has %zu entries for rank %d", sizes.n,
                           (int)x->rank);
        for (int32_t i = 0; i < x->rank; i++) {
            if (sizes.v[i] < 0)
                return si_fail(c, MINFER_ERR_SHAPE, "sizes[%d] = %lld is negative", (int)i,
                               (long long)sizes.v[i]);
            d[i] = sizes.v[i];
        }
        return si_set_out(c, 0, x->dtype, x->rank, d);
    }
    if (sizes.state == LIST_UNKNOWN)
        return si_set_out(c, 0, x->dtype, x->rank, d);
    if (c->opset < 9 && !strcmp(c->op, "Upsample")) {
        const mf_attr *a = mf_node_attr(c->node, "scales");
        if (a && a->type == MINFER_ATTR_FLOATS && a->count <= MINFER_MAX_RANK) {
            for (size_t i = 0; i < a->count; i++)
                sc[i] = a->floats[i];
            ns = a->count;
        }
    } else if (!float_list(si_input(c, upsample ? 1 : 2), sc, MINFER_MAX_RANK, &ns)) {
        ns = 0;
    }
    if (ns == (size_t)x->rank && ns > 0)
        for (int32_t i = 0; i < x->rank; i++)
            if (x->dims[i] >= 0 && sc[i] > 0 && sc[i] * (double)x->dims[i] <= 1e12)
                d[i] = (int64_t)(sc[i] * (double)x->dims[i]);
    return si_set_out(c, 0, x->dtype, x->rank, d);
}

/* GridSample: X [N, C, D1...], grid [N, O1..., k] -> [N, C, O1...] in X's type. */
minfer_status si_grid_sample(ictx *c) {
    const minfer_tensor_view *x, *g;
    int64_t d[MINFER_MAX_RANK];
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &g)))
        return st;
    if (x->rank < 0 && g->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    int32_t r = x->rank >= 0 ? x->rank : g->rank;
    if (r < 3 || (g->rank >= 0 && g->rank != r))
        return si_fail(c, MINFER_ERR_SHAPE, "X has rank %d and grid rank %d", (int)x->rank,
                       (int)g->rank);
    d[0] = x->rank >= 0 ? x->dims[0] : g->dims[0];
    d[1] = x->rank >= 0 ? x->dims[1] : -1;
    for (int32_t i = 2; i < r; i++)
        d[i] = g->rank >= 0 ? g->dims[i - 1] : -1;
    return si_set_out(c, 0, x->dtype, r, d);
}
