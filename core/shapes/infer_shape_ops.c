/*
 * Shape manipulation: Concat, Flatten, Transpose, Reshape, Shape, Size,
 * Unsqueeze, Squeeze, Slice, Expand, Tile, Pad, Split, Cast, Dropout, and
 * the generators Constant, ConstantOfShape, Range.
 */
#include "shapes/infer_rules.h"

#include <math.h>
#include <string.h>

minfer_status si_dropout(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    if (st || (st = si_same_as(c, 0, x)))
        return st;
    /* The mask became bool in opset 10; before, it had the data's type. */
    return si_set_out(c, 1, c->opset >= 10 ? MINFER_DTYPE_BOOL : x->dtype, x->rank, x->dims);
}

minfer_status si_cast(ictx *c) {
    const minfer_tensor_view *x;
    int64_t to;
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (!strcmp(c->op, "CastLike")) {
        const minfer_tensor_view *t;
        if ((st = si_require(c, 1, &t)))
            return st;
        return si_set_out(c, 0, t->dtype, x->rank, x->dims);
    }
    if (!mf_node_attr(c->node, "to"))
        return si_fail(c, MINFER_ERR_MODEL, "attribute 'to' is missing");
    to = mf_attr_int(c->node, "to", 0);
    if (to < MINFER_DTYPE_FLOAT || to > MINFER_DTYPE_BFLOAT16 || to == MINFER_DTYPE_UNDEFINED)
        return si_fail(c, MINFER_ERR_TYPE, "cast to unsupported type %lld", (long long)to);
    return si_set_out(c, 0, (int32_t)to, x->rank, x->dims);
}

minfer_status si_concat(ictx *c) {
    const minfer_tensor_view *ref = NULL;
    int64_t axis, d[MINFER_MAX_RANK];
    int32_t r = -1;
    int axis_known = 1;
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if (!mf_node_attr(c->node, "axis") && c->opset >= 4)
        return si_fail(c, MINFER_ERR_MODEL, "attribute axis is missing");
    axis = mf_attr_int(c->node, "axis", 1);
    for (size_t i = 0; i < c->n_in; i++) {
        const minfer_tensor_view *v = si_input(c, i);
        if (!v)
            continue;
        if (ref && (st = si_same_type(c, ref, "an input", v, "another")))
            return st;
        if (!ref || !ref->dtype)
            ref = v;
        if (v->rank < 0)
            continue;
        if (r < 0) {
            r = v->rank;
            if (r == 0)
                return si_fail(c, MINFER_ERR_SHAPE, "cannot concatenate scalars");
            if ((st = si_norm_axis(c, axis, r, "axis", &axis)))
                return st;
            memcpy(d, v->dims, (size_t)r * sizeof d[0]);
            continue;
        }
        if (v->rank != r)
            return si_fail(c, MINFER_ERR_SHAPE, "inputs %s and %s differ in rank",
                        si_shape_str(d, r, s1, sizeof s1), si_shape_str(v->dims, v->rank, s2, sizeof s2));
        for (int32_t k = 0; k < r; k++) {
            if (k == axis) {
                if (d[k] < 0 || v->dims[k] < 0)
                    d[k] = -1;
                else if (!si_add_i64(d[k], v->dims[k], &d[k]))
                    return si_overflow(c);
            } else if (d[k] >= 0 && v->dims[k] >= 0 && d[k] != v->dims[k]) {
                return si_fail(c, MINFER_ERR_SHAPE,
                            "input %zu %s does not match the others on axis %d (%lld vs %lld)",
                            i, si_shape_str(v->dims, v->rank, s1, sizeof s1), (int)k,
                            (long long)v->dims[k], (long long)d[k]);
            } else if (d[k] < 0) {
                d[k] = v->dims[k];
            }
        }
    }
    if (!ref)
        return si_fail(c, MINFER_ERR_MODEL, "no inputs");
    /* An input of unknown rank makes the axis length unknown. */
    for (size_t i = 0; i < c->n_in; i++)
        if (si_input(c, i) && si_input(c, i)->rank < 0)
            axis_known = 0;
    if (r > 0 && !axis_known)
        d[axis] = -1;
    return si_set_out(c, 0, ref->dtype, r, d);
}

minfer_status si_flatten(ictx *c) {
    const minfer_tensor_view *x;
    int64_t axis, d[2] = {1, 1};
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    axis = mf_attr_int(c->node, "axis", 1);
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, 2, NULL);
    if (axis < -(int64_t)x->rank || axis > x->rank)
        return si_fail(c, MINFER_ERR_MODEL, "axis %lld is out of range for rank %d",
                    (long long)axis, (int)x->rank);
    if (axis < 0)
        axis += x->rank;
    for (int32_t i = 0; i < x->rank; i++) {
        int64_t *p = &d[i < axis ? 0 : 1];
        if (*p < 0)
            continue;
        if (x->dims[i] < 0)
            *p = -1;
        else if (!si_mul_nn(*p, x->dims[i], p))
            return si_overflow(c);
    }
    /* A 0 anywhere settles the product even if other dims are unknown. */
    for (int32_t i = 0; i < x->rank; i++)
        if (x->dims[i] == 0)
            d[i < axis ? 0 : 1] = 0;
    return si_set_out(c, 0, x->dtype, 2, d);
}

minfer_status si_transpose(ictx *c) {
    const minfer_tensor_view *x;
    int_list perm;
    int seen[MINFER_MAX_RANK] = {0};
    int64_t d[MINFER_MAX_RANK];
    int32_t r;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_attr_list(c, "perm", &perm)))
        return st;
    if (perm.state != LIST_KNOWN) {
        if (x->rank < 0)
            return si_set_out(c, 0, x->dtype, -1, NULL);
        for (int32_t i = 0; i < x->rank; i++)
            d[i] = x->dims[x->rank - 1 - i];
        return si_set_out(c, 0, x->dtype, x->rank, d);
    }
    r = (int32_t)(perm.n <= MINFER_MAX_RANK ? perm.n : MINFER_MAX_RANK + 1);
    if (x->rank >= 0 && r != x->rank)
        return si_fail(c, MINFER_ERR_MODEL, "perm has %zu entries for rank %d", perm.n,
                    (int)x->rank);
    if (r > MINFER_MAX_RANK)
        return si_fail(c, MINFER_ERR_LIMIT, "perm has %zu entries, more than %d", perm.n,
                    MINFER_MAX_RANK);
    for (int32_t i = 0; i < r; i++) {
        if (perm.v[i] < 0 || perm.v[i] >= r || seen[perm.v[i]]++)
            return si_fail(c, MINFER_ERR_MODEL, "perm is not a permutation of 0..%d", (int)(r - 1));
        d[i] = x->rank >= 0 ? x->dims[perm.v[i]] : -1;
    }
    return si_set_out(c, 0, x->dtype, r, d);
}

minfer_status si_reshape(ictx *c) {
    const minfer_tensor_view *x;
    int_list t;
    int allowzero = c->opset >= 14 && mf_attr_int(c->node, "allowzero", 0) != 0;
    int64_t d[MINFER_MAX_RANK], in_n = -1, prod = 1;
    int neg = -1, has_zero = 0, prod_known = 1;
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if ((st = si_require(c, 0, &x)))
        return st;
    if ((st = si_get_list(c, c->opset >= 5, 1, "shape", &t)))
        return st;
    if (t.state == LIST_ABSENT)
        return si_fail(c, MINFER_ERR_MODEL, "the target shape is missing");
    if (t.state == LIST_UNKNOWN) {
        if (t.len > MINFER_MAX_RANK)
            return si_fail(c, MINFER_ERR_LIMIT, "target shape has %lld dims, more than %d",
                        (long long)t.len, MINFER_MAX_RANK);
        return si_set_out(c, 0, x->dtype, t.len < 0 ? -1 : (int32_t)t.len, NULL);
    }
    if (t.n > MINFER_MAX_RANK)
        return si_fail(c, MINFER_ERR_LIMIT, "target shape has %zu dims, more than %d", t.n,
                    MINFER_MAX_RANK);
    for (size_t i = 0; i < t.n; i++) {
        int64_t v = t.v[i];
        if (v == -1) {
            if (neg >= 0)
                return si_fail(c, MINFER_ERR_MODEL, "target shape has more than one -1");
            neg = (int)i;
            d[i] = -1;
            continue;
        }
        if (v < -1)
            return si_fail(c, MINFER_ERR_MODEL, "target shape has %lld at %zu", (long long)v, i);
        if (v == 0 && !allowzero) {
            if (x->rank >= 0 && (int32_t)i >= x->rank)
                return si_fail(c, MINFER_ERR_MODEL,
                            "target shape has 0 at %zu, copying a dim the rank-%d input lacks",
                            i, (int)x->rank);
            d[i] = x->rank >= 0 ? x->dims[i] : -1;
        } else {
            d[i] = v;
            has_zero |= v == 0;
        }
        if (d[i] < 0)
            prod_known = 0;
        else if (prod_known && !si_mul_nn(prod, d[i], &prod))
            return si_overflow(c);
    }
    if (allowzero && has_zero && neg >= 0)
        return si_fail(c, MINFER_ERR_MODEL, "target shape has both 0 (allowzero) and -1");
    if ((st = si_numel_of(c, x->dims, x->rank, &in_n)))
        return st;
    if (in_n >= 0 && prod_known) {
        if (neg >= 0 && prod != 0) {
            if (in_n % prod)
                goto mismatch;
            d[neg] = in_n / prod;
        } else if (neg < 0 && in_n != prod) {
            goto mismatch;
        }
    } else if (neg >= 0 && x->rank >= 0) {
        /* Dims copied by 0 are the same factor on both sides, so they cancel
         * even when unknown: [?,3,4] to [0,-1] gives [?,12]. Only used to
         * infer, never to fail (a copied dim of 0 at run time makes any -1
         * ambiguous, which the run reports). */
        int64_t in_rest = 1, out_rest = 1;
        int ok = 1;
        for (int32_t i = 0; i < x->rank && ok; i++) {
            int copied = !allowzero && (size_t)i < t.n && t.v[i] == 0;
            if (copied)
                continue;
            if (x->dims[i] < 0)
                ok = 0;
            else if (!si_mul_nn(in_rest, x->dims[i], &in_rest))
                return si_overflow(c);
        }
        for (size_t i = 0; i < t.n && ok; i++) {
            if ((int)i == neg || (!allowzero && t.v[i] == 0))
                continue;
            if (!si_mul_nn(out_rest, t.v[i], &out_rest))
                return si_overflow(c);
        }
        if (ok && out_rest != 0 && in_rest % out_rest == 0)
            d[neg] = in_rest / out_rest;
    }
    return si_set_out(c, 0, x->dtype, (int32_t)t.n, d);
mismatch:
    return si_fail(c, MINFER_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s",
                si_shape_str(x->dims, x->rank, s1, sizeof s1), (long long)in_n,
                si_shape_str(t.v, (int32_t)t.n, s2, sizeof s2));
}

minfer_status si_shape(ictx *c) {
    const minfer_tensor_view *x;
    int64_t r, start = 0, end, len;
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    r = x->rank;
    if (r < 0) {
        len = -1;
        return si_set_out(c, 0, MINFER_DTYPE_INT64, 1, &len);
    }
    end = r;
    if (c->opset >= 15) {
        start = mf_attr_int(c->node, "start", 0);
        end = mf_attr_int(c->node, "end", r);
    }
    minfer_shape_range(r, start, end, &start, &end);
    len = end - start;
    return si_set_out(c, 0, MINFER_DTYPE_INT64, 1, &len);
}

minfer_status si_size(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    return st ? st : si_set_out(c, 0, MINFER_DTYPE_INT64, 0, NULL);
}

minfer_status si_unsqueeze(ictx *c) {
    const minfer_tensor_view *x;
    int_list axes;
    int64_t d[MINFER_MAX_RANK];
    int32_t r;
    int added[MINFER_MAX_RANK] = {0};
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_get_list(c, c->opset >= 13, 1, "axes", &axes)))
        return st;
    if (axes.state == LIST_ABSENT)
        return si_fail(c, MINFER_ERR_MODEL, "axes are missing");
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    if (axes.state == LIST_UNKNOWN) {
        if (axes.len < 0)
            return si_set_out(c, 0, x->dtype, -1, NULL);
        if (axes.len > MINFER_MAX_RANK)
            return si_fail(c, MINFER_ERR_LIMIT, "%lld axes, more than %d", (long long)axes.len,
                        MINFER_MAX_RANK);
        return si_set_out(c, 0, x->dtype, x->rank + (int32_t)axes.len, NULL);
    }
    if ((int64_t)x->rank + (int64_t)axes.n > MINFER_MAX_RANK)
        return si_fail(c, MINFER_ERR_LIMIT, "output rank %lld exceeds %d",
                    (long long)x->rank + (long long)axes.n, MINFER_MAX_RANK);
    r = x->rank + (int32_t)axes.n;
    if ((st = si_norm_axes(c, &axes, r, "axis")))
        return st;
    for (size_t i = 0; i < axes.n; i++)
        added[axes.v[i]] = 1;
    for (int32_t i = 0, k = 0; i < r; i++)
        d[i] = added[i] ? 1 : x->dims[k++];
    return si_set_out(c, 0, x->dtype, r, d);
}

minfer_status si_squeeze(ictx *c) {
    const minfer_tensor_view *x;
    int_list axes;
    int64_t d[MINFER_MAX_RANK];
    int32_t r = 0;
    int drop[MINFER_MAX_RANK] = {0};
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_get_list(c, c->opset >= 13, 1, "axes", &axes)))
        return st;
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    if (axes.state == LIST_UNKNOWN) {
        if (axes.len > x->rank)
            return si_fail(c, MINFER_ERR_MODEL, "%lld axes for rank %d", (long long)axes.len,
                        (int)x->rank);
        return si_set_out(c, 0, x->dtype, axes.len < 0 ? -1 : x->rank - (int32_t)axes.len, NULL);
    }
    if (axes.n == 0) {
        /* Every dim of size 1 goes; an unknown one leaves the rank unknown. */
        for (int32_t i = 0; i < x->rank; i++) {
            if (x->dims[i] < 0)
                return si_set_out(c, 0, x->dtype, -1, NULL);
            if (x->dims[i] != 1)
                d[r++] = x->dims[i];
        }
        return si_set_out(c, 0, x->dtype, r, d);
    }
    if ((st = si_norm_axes(c, &axes, x->rank, "axis")))
        return st;
    for (size_t i = 0; i < axes.n; i++) {
        int64_t n = x->dims[axes.v[i]];
        if (n >= 0 && n != 1)
            return si_fail(c, MINFER_ERR_SHAPE, "cannot squeeze axis %lld of size %lld",
                        (long long)axes.v[i], (long long)n);
        drop[axes.v[i]] = 1;
    }
    for (int32_t i = 0; i < x->rank; i++)
        if (!drop[i])
            d[r++] = x->dims[i];
    return si_set_out(c, 0, x->dtype, r, d);
}

/* Slice's length along one axis of size n, with the spec's clamping. */
static int64_t slice_len(int64_t n, int64_t start, int64_t end, int64_t step) {
    if (start < 0)
        start += n;
    if (end < 0)
        end += n;
    if (step > 0) {
        start = start < 0 ? 0 : start > n ? n : start;
        end = end < 0 ? 0 : end > n ? n : end;
        return end > start ? (end - start - 1) / step + 1 : 0;
    }
    start = start < 0 ? 0 : start > n - 1 ? n - 1 : start;
    end = end < -1 ? -1 : end > n - 1 ? n - 1 : end;
    if (start <= end)
        return 0;
    /* -INT64_MIN overflows; any step that large takes exactly one element. */
    return (start - end - 1) / (step == INT64_MIN ? INT64_MAX : -step) + 1;
}

minfer_status si_slice(ictx *c) {
    const minfer_tensor_view *x;
    int_list starts, ends, axes, steps;
    int64_t d[MINFER_MAX_RANK];
    int from_input = c->opset >= 10;
    minfer_status st;
    if ((st = si_require(c, 0, &x)))
        return st;
    steps.state = LIST_ABSENT; /* Slice-1 has no steps */
    if ((st = si_get_list(c, from_input, 1, "starts", &starts)) ||
        (st = si_get_list(c, from_input, 2, "ends", &ends)) ||
        (st = si_get_list(c, from_input, 3, "axes", &axes)) ||
        (from_input && (st = si_read_ints(c, 4, "steps", &steps))))
        return st;
    if (starts.state == LIST_ABSENT || ends.state == LIST_ABSENT)
        return si_fail(c, MINFER_ERR_MODEL, "starts or ends is missing");
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    memcpy(d, x->dims, (size_t)x->rank * sizeof d[0]);
    if (axes.state == LIST_KNOWN && (st = si_norm_axes(c, &axes, x->rank, "axis")))
        return st;
    if (starts.state == LIST_UNKNOWN || ends.state == LIST_UNKNOWN ||
        steps.state == LIST_UNKNOWN || axes.state == LIST_UNKNOWN) {
        /* The contents are not known: the rank stays, the sliced axes (all
         * of them if which ones is not known) lose their sizes. */
        if (axes.state == LIST_KNOWN)
            for (size_t i = 0; i < axes.n; i++)
                d[axes.v[i]] = -1;
        else
            for (int32_t i = 0; i < x->rank; i++)
                d[i] = -1;
        return si_set_out(c, 0, x->dtype, x->rank, d);
    }
    if (starts.n != ends.n)
        return si_fail(c, MINFER_ERR_MODEL, "starts has %zu values but ends %zu", starts.n, ends.n);
    if (axes.state == LIST_KNOWN && axes.n != starts.n)
        return si_fail(c, MINFER_ERR_MODEL, "axes has %zu values but starts %zu", axes.n, starts.n);
    if (steps.state == LIST_KNOWN && steps.n != starts.n)
        return si_fail(c, MINFER_ERR_MODEL, "steps has %zu values but starts %zu", steps.n,
                    starts.n);
    if (axes.state != LIST_KNOWN) {
        if (starts.n > (size_t)x->rank)
            return si_fail(c, MINFER_ERR_MODEL, "%zu starts for rank %d", starts.n, (int)x->rank);
        for (size_t i = 0; i < starts.n; i++)
            axes.v[i] = (int64_t)i;
    }
    for (size_t i = 0; i < starts.n; i++) {
        int64_t step = steps.state == LIST_KNOWN ? steps.v[i] : 1;
        int64_t n = x->dims[axes.v[i]];
        if (step == 0)
            return si_fail(c, MINFER_ERR_MODEL, "steps[%zu] is 0", i);
        d[axes.v[i]] = n < 0 ? -1 : slice_len(n, starts.v[i], ends.v[i], step);
    }
    return si_set_out(c, 0, x->dtype, x->rank, d);
}

minfer_status si_expand(ictx *c) {
    const minfer_tensor_view *x;
    int_list s;
    int64_t d[MINFER_MAX_RANK];
    int32_t r;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_read_ints(c, 1, "shape", &s)))
        return st;
    if (s.state == LIST_ABSENT)
        return si_fail(c, MINFER_ERR_MODEL, "shape is missing");
    if (s.state == LIST_UNKNOWN) {
        /* The rank is max(rank, len); an input dim > 1 survives any valid shape. */
        if (x->rank < 0 || s.len < 0)
            return si_set_out(c, 0, x->dtype, -1, NULL);
        r = s.len > x->rank ? (int32_t)(s.len > MINFER_MAX_RANK ? MINFER_MAX_RANK + 1 : s.len)
                            : x->rank;
        if (r > MINFER_MAX_RANK)
            return si_set_out(c, 0, x->dtype, r, NULL);
        for (int32_t i = 0; i < r; i++) {
            int32_t k = i - (r - x->rank);
            d[i] = k >= 0 && x->dims[k] > 1 ? x->dims[k] : -1;
        }
        return si_set_out(c, 0, x->dtype, r, d);
    }
    if (s.n > MINFER_MAX_RANK)
        return si_fail(c, MINFER_ERR_LIMIT, "shape has %zu dims, more than %d", s.n,
                    MINFER_MAX_RANK);
    for (size_t i = 0; i < s.n; i++)
        if (s.v[i] < 0)
            return si_fail(c, MINFER_ERR_SHAPE, "shape has negative dim %lld", (long long)s.v[i]);
    if ((st = si_broadcast(c, x->dims, x->rank, s.v, (int32_t)s.n, d, &r)))
        return st;
    return si_set_out(c, 0, x->dtype, r, d);
}

minfer_status si_tile(ictx *c) {
    const minfer_tensor_view *x;
    int_list rep;
    int64_t d[MINFER_MAX_RANK];
    minfer_status st;
    if ((st = si_require(c, 0, &x)))
        return st;
    if (c->opset < 6 || x->rank < 0) /* Tile-1 took tiles and axis inputs */
        return si_set_out(c, 0, x->dtype, x->rank, NULL);
    if ((st = si_read_ints(c, 1, "repeats", &rep)))
        return st;
    if (rep.state == LIST_ABSENT)
        return si_fail(c, MINFER_ERR_MODEL, "repeats is missing");
    if ((rep.state == LIST_KNOWN && rep.n != (size_t)x->rank) ||
        (rep.state == LIST_UNKNOWN && rep.len >= 0 && rep.len != x->rank))
        return si_fail(c, MINFER_ERR_SHAPE, "repeats has %lld values for rank %d",
                    (long long)(rep.state == LIST_KNOWN ? (int64_t)rep.n : rep.len),
                    (int)x->rank);
    for (int32_t i = 0; i < x->rank; i++) {
        if (rep.state != LIST_KNOWN || x->dims[i] < 0) {
            d[i] = x->dims[i] == 0 ? 0 : -1;
            continue;
        }
        if (rep.v[i] < 0)
            return si_fail(c, MINFER_ERR_MODEL, "repeats[%d] = %lld is negative", (int)i,
                        (long long)rep.v[i]);
        if (!si_mul_nn(x->dims[i], rep.v[i], &d[i]))
            return si_overflow(c);
    }
    return si_set_out(c, 0, x->dtype, x->rank, d);
}

minfer_status si_pad(ictx *c) {
    const minfer_tensor_view *x;
    int_list pads, axes;
    int64_t d[MINFER_MAX_RANK], ax[MINFER_MAX_RANK];
    size_t na;
    minfer_status st;
    if ((st = si_require(c, 0, &x)))
        return st;
    axes.state = LIST_ABSENT; /* axes came in opset 18 */
    if (c->opset >= 11) {
        if ((st = si_read_ints(c, 1, "pads", &pads)) ||
            (c->opset >= 18 && (st = si_read_ints(c, 3, "axes", &axes))) ||
            (st = si_same_type(c, x, "data", si_input(c, 2), "constant_value")))
            return st;
    } else if ((st = si_attr_list(c, c->opset < 2 ? "paddings" : "pads", &pads))) {
        return st;
    }
    if (pads.state == LIST_ABSENT)
        return si_fail(c, MINFER_ERR_MODEL, "pads are missing");
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    if (axes.state == LIST_KNOWN) {
        if ((st = si_norm_axes(c, &axes, x->rank, "axis")))
            return st;
        na = axes.n;
        memcpy(ax, axes.v, na * sizeof ax[0]);
    } else {
        na = (size_t)x->rank;
        for (size_t i = 0; i < na; i++)
            ax[i] = (int64_t)i;
    }
    memcpy(d, x->dims, (size_t)x->rank * sizeof d[0]);
    if (pads.state == LIST_UNKNOWN || axes.state == LIST_UNKNOWN) {
        for (int32_t i = 0; i < x->rank; i++)
            d[i] = -1;
        return si_set_out(c, 0, x->dtype, x->rank, d);
    }
    if (pads.n != 2 * na)
        return si_fail(c, MINFER_ERR_MODEL, "pads has %zu values, expected %zu", pads.n, 2 * na);
    for (size_t i = 0; i < na; i++) {
        int64_t n = d[ax[i]];
        if (n < 0)
            continue;
        if (!si_add_i64(n, pads.v[i], &n) || !si_add_i64(n, pads.v[i + na], &n))
            return si_overflow(c);
        if (n < 0)
            return si_fail(c, MINFER_ERR_SHAPE, "pads make axis %lld negative (%lld)",
                        (long long)ax[i], (long long)n);
        d[ax[i]] = n;
    }
    return si_set_out(c, 0, x->dtype, x->rank, d);
}

minfer_status si_split(ictx *c) {
    const minfer_tensor_view *x;
    int_list sp;
    int64_t axis, n, d[MINFER_MAX_RANK], sum = 0;
    size_t nout = c->n_out;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_get_list(c, c->opset >= 13, 1, "split", &sp)))
        return st;
    if (nout == 0)
        return MINFER_OK;
    if (x->rank < 0) {
        for (size_t j = 0; j < nout; j++)
            if ((st = si_set_out(c, j, x->dtype, -1, NULL)))
                return st;
        return MINFER_OK;
    }
    axis = mf_attr_int(c->node, "axis", 0);
    if ((st = si_norm_axis(c, axis, x->rank, "axis", &axis)))
        return st;
    n = x->dims[axis];
    memcpy(d, x->dims, (size_t)x->rank * sizeof d[0]);
    if (sp.state == LIST_KNOWN && sp.n > 0) {
        if (sp.n != nout)
            return si_fail(c, MINFER_ERR_MODEL, "split has %zu values for %zu outputs", sp.n, nout);
        for (size_t j = 0; j < nout; j++) {
            if (sp.v[j] < 0)
                return si_fail(c, MINFER_ERR_MODEL, "split[%zu] = %lld is negative", j,
                            (long long)sp.v[j]);
            if (!si_add_i64(sum, sp.v[j], &sum))
                return si_overflow(c);
        }
        if (n >= 0 && sum != n)
            return si_fail(c, MINFER_ERR_SHAPE, "split sums to %lld but the axis has %lld",
                        (long long)sum, (long long)n);
    }
    for (size_t j = 0; j < nout; j++) {
        if (sp.state == LIST_KNOWN && sp.n > 0)
            d[axis] = sp.v[j];
        else if (sp.state == LIST_UNKNOWN || n < 0)
            d[axis] = -1;
        else if (c->opset >= 18 && mf_node_attr(c->node, "num_outputs")) {
            /* num_outputs may split unevenly: the last chunk is smaller. */
            int64_t chunk = n / (int64_t)nout + (n % (int64_t)nout != 0);
            int64_t left = n - chunk * (int64_t)j;
            d[axis] = left < 0 ? 0 : left < chunk ? left : chunk;
        } else {
            if (n % (int64_t)nout)
                return si_fail(c, MINFER_ERR_SHAPE, "axis of %lld does not split into %zu equal parts",
                            (long long)n, nout);
            d[axis] = n / (int64_t)nout;
        }
        if ((st = si_set_out(c, j, x->dtype, x->rank, d)))
            return st;
    }
    return MINFER_OK;
}

minfer_status si_constant(ictx *c) {
    static const struct {
        const char *name;
        int type;
        int32_t dtype;
        int list;
    } forms[] = {
        {"value_float", MINFER_ATTR_FLOAT, MINFER_DTYPE_FLOAT, 0},
        {"value_floats", MINFER_ATTR_FLOATS, MINFER_DTYPE_FLOAT, 1},
        {"value_int", MINFER_ATTR_INT, MINFER_DTYPE_INT64, 0},
        {"value_ints", MINFER_ATTR_INTS, MINFER_DTYPE_INT64, 1},
        {"value_string", MINFER_ATTR_STRING, MINFER_DTYPE_STRING, 0},
        {"value_strings", MINFER_ATTR_STRINGS, MINFER_DTYPE_STRING, 1},
    };
    const mf_attr *a = mf_node_attr(c->node, "value");
    if (a) {
        const minfer_tensor *t = a->t;
        if (a->type != MINFER_ATTR_TENSOR || !t)
            return si_fail(c, MINFER_ERR_MODEL, "attribute value is not a tensor");
        if (t->view.rank < 0 || t->view.rank > MINFER_MAX_RANK)
            return si_fail(c, MINFER_ERR_MODEL, "value has rank %d", (int)t->view.rank);
        return si_set_out(c, 0, t->view.dtype, t->view.rank, t->view.dims);
    }
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        int64_t n;
        if (!(a = mf_node_attr(c->node, forms[i].name)))
            continue;
        if (a->type != forms[i].type)
            return si_fail(c, MINFER_ERR_MODEL, "attribute %s has the wrong type", forms[i].name);
        n = (int64_t)a->count;
        return si_set_out(c, 0, forms[i].dtype, forms[i].list, &n);
    }
    /* sparse_value and anything newer: left to the run. */
    return MINFER_OK;
}

minfer_status si_constant_of_shape(ictx *c) {
    const mf_attr *a = mf_node_attr(c->node, "value");
    int32_t dt = MINFER_DTYPE_FLOAT;
    int_list s;
    minfer_status st;
    if (a) {
        if (a->type != MINFER_ATTR_TENSOR || !a->t)
            return si_fail(c, MINFER_ERR_MODEL, "attribute value is not a tensor");
        dt = a->t->view.dtype;
    }
    if ((st = si_read_ints(c, 0, "shape", &s)))
        return st;
    if (s.state == LIST_ABSENT)
        return si_fail(c, MINFER_ERR_MODEL, "required input 0 is missing");
    if (s.state == LIST_UNKNOWN) {
        if (s.len > MINFER_MAX_RANK)
            return si_fail(c, MINFER_ERR_LIMIT, "shape has %lld dims, more than %d",
                        (long long)s.len, MINFER_MAX_RANK);
        return si_set_out(c, 0, dt, s.len < 0 ? -1 : (int32_t)s.len, NULL);
    }
    if (s.n > MINFER_MAX_RANK)
        return si_fail(c, MINFER_ERR_LIMIT, "shape has %zu dims, more than %d", s.n,
                    MINFER_MAX_RANK);
    for (size_t i = 0; i < s.n; i++)
        if (s.v[i] < 0)
            return si_fail(c, MINFER_ERR_SHAPE, "shape has negative dim %lld", (long long)s.v[i]);
    return si_set_out(c, 0, dt, (int32_t)s.n, s.v);
}

minfer_status si_range(ictx *c) {
    int fl[3] = {0}, known[3];
    double f[3] = {0};
    int64_t n[3] = {0}, len = -1;
    minfer_status st;
    for (size_t i = 0; i < 3; i++)
        if ((st = si_read_scalar(c, i, &fl[i], &f[i], &n[i], &known[i])))
            return st;
    if ((st = si_same_type(c, si_input(c, 0), "start", si_input(c, 1), "limit")) ||
        (st = si_same_type(c, si_input(c, 0), "start", si_input(c, 2), "delta")))
        return st;
    if (known[0] && known[1] && known[2]) {
        if (fl[0]) {
            double q;
            if (f[2] == 0)
                return si_fail(c, MINFER_ERR_MODEL, "delta is 0");
            q = ceil((f[1] - f[0]) / f[2]);
            if (!(q < 9.2e18)) /* also catches NaN */
                return q != q ? si_fail(c, MINFER_ERR_MODEL, "start, limit or delta is NaN")
                              : si_fail(c, MINFER_ERR_LIMIT, "Range would have %g elements", q);
            len = q > 0 ? (int64_t)q : 0;
        } else {
            int64_t diff;
            if (n[2] == 0)
                return si_fail(c, MINFER_ERR_MODEL, "delta is 0");
            if (!si_sub_i64(n[1], n[0], &diff))
                return si_overflow(c);
            if ((diff > 0) != (n[2] > 0) || diff == 0) {
                len = 0;
            } else if (n[2] > 0) {
                len = (diff - 1) / n[2] + 1;
            } else {
                /* Both negative: ceil(diff / delta) without negating INT64_MIN. */
                len = diff / n[2] + (diff % n[2] != 0);
            }
        }
    }
    return si_set_out(c, 0, si_input(c, 0)->dtype, 1, &len);
}
