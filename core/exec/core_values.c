/*
 * The sequence ops (SequenceEmpty, SequenceConstruct, SequenceInsert,
 * SequenceErase, SequenceAt, SequenceLength, SplitToSequence,
 * ConcatFromSequence), the optional ops (Optional, OptionalHasElement,
 * OptionalGetElement) and the Gradient helpers of the minfer domain, with
 * the value helpers the control-flow ops (exec/control.c) share: scalars,
 * slicing and joining tensors along an axis, borrowed handles.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/core_call.h"

/* ---- values ------------------------------------------------------------- */

/* A borrowed handle for a host view (tensor) or the container a view
 * points at. */
const minfer_tensor *mf_cv_handle(const minfer_tensor_view *v, minfer_tensor *tmp) {
    if (v->kind != MINFER_VALUE_TENSOR)
        return (const minfer_tensor *)v->data;
    memset(tmp, 0, sizeof *tmp);
    tmp->view = *v;
    tmp->view.data = v->data ? (char *)v->data + v->offset : NULL;
    tmp->view.offset = 0;
    return tmp;
}

minfer_status mf_cv_clone_view(const minfer_tensor_view *v, minfer_tensor **out) {
    minfer_tensor tmp;
    return mf_tensor_clone(mf_cv_handle(v, &tmp), out);
}

minfer_status mf_cv_scalar_int(const minfer_tensor_view *v, int64_t *out) {
    int64_t n = 0;
    if (v->kind != MINFER_VALUE_TENSOR || mf_numel(v->dims, v->rank, &n) != MINFER_OK || n != 1 ||
        !v->data)
        return MINFER_ERR_SHAPE;
    const char *p = (const char *)v->data + v->offset;
    if (v->dtype == MINFER_DTYPE_INT64)
        memcpy(out, p, sizeof *out);
    else if (v->dtype == MINFER_DTYPE_INT32) {
        int32_t x;
        memcpy(&x, p, sizeof x);
        *out = x;
    } else
        return MINFER_ERR_TYPE;
    return MINFER_OK;
}

minfer_status mf_cv_scalar_bool(const minfer_tensor_view *v, int *out) {
    int64_t n = 0;
    if (v->kind != MINFER_VALUE_TENSOR || v->dtype != MINFER_DTYPE_BOOL ||
        mf_numel(v->dims, v->rank, &n) != MINFER_OK || n != 1 || !v->data)
        return MINFER_ERR_TYPE;
    *out = ((const unsigned char *)v->data)[v->offset] != 0;
    return MINFER_OK;
}

minfer_status mf_cv_new_scalar(int32_t dtype, int64_t value, minfer_tensor **out) {
    minfer_status st = mf_tensor_new(dtype, NULL, 0, out);
    if (st != MINFER_OK)
        return st;
    if (dtype == MINFER_DTYPE_INT64)
        memcpy((*out)->view.data, &value, sizeof value);
    else
        *(unsigned char *)(*out)->view.data = value != 0;
    return MINFER_OK;
}

/* Copies n elements, duplicating strings. */
static minfer_status copy_elems(void *dst, const void *src, size_t n, int32_t dtype) {
    if (dtype != MINFER_DTYPE_STRING) {
        if (n)
            memcpy(dst, src, n * minfer_dtype_size((minfer_dtype)dtype));
        return MINFER_OK;
    }
    char **d = dst;
    char *const *s = src;
    for (size_t e = 0; e < n; e++) {
        free(d[e]);
        if (!(d[e] = mf_strdup(s[e] ? s[e] : "")))
            return mf_error(MINFER_ERR_NOMEM, "out of memory copying strings");
    }
    return MINFER_OK;
}

static size_t prod(const int64_t *dims, int from, int to) {
    size_t p = 1;
    for (int d = from; d < to; d++)
        p *= (size_t)dims[d];
    return p;
}

/* [start, start + len) of t along axis; the axis is dropped when !keep. */
minfer_status mf_cv_take(const minfer_tensor *t, int axis, int64_t start, int64_t len,
                         int keep, minfer_tensor **out) {
    int64_t dims[MINFER_MAX_RANK];
    int rank = 0;
    for (int d = 0; d < t->view.rank; d++) {
        if (d == axis && !keep)
            continue;
        dims[rank++] = d == axis ? len : t->view.dims[d];
    }
    minfer_status st = mf_tensor_new(t->view.dtype, dims, rank, out);
    if (st != MINFER_OK)
        return st;
    size_t es = minfer_dtype_size((minfer_dtype)t->view.dtype);
    size_t outer = prod(t->view.dims, 0, axis), inner = prod(t->view.dims, axis + 1, t->view.rank);
    size_t ax = (size_t)t->view.dims[axis];
    const char *src = t->view.data;
    char *dst = (*out)->view.data;
    for (size_t o = 0; o < outer; o++) {
        st = copy_elems(dst + o * (size_t)len * inner * es,
                        src + (o * ax + (size_t)start) * inner * es, (size_t)len * inner,
                        t->view.dtype);
        if (st != MINFER_OK) {
            minfer_tensor_free(*out);
            *out = NULL;
            return st;
        }
    }
    return MINFER_OK;
}

/* Joins items along axis (a new axis of size 1 per item when stack),
 * last item first when reverse. */
minfer_status mf_cv_join(minfer_tensor *const *items, size_t n, int axis, int stack,
                         int reverse, uint64_t max_bytes, const char *what,
                         minfer_tensor **out) {
    const minfer_tensor *t0 = items[0];
    int rank = t0->view.rank + (stack ? 1 : 0);
    int64_t dims[MINFER_MAX_RANK], total = 0;
    char a[128], b[128];
    if (rank > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_LIMIT, "%s: joining gives rank %d, above %d", what, rank,
                        MINFER_MAX_RANK);
    if (axis < 0 || axis >= rank)
        return mf_error(MINFER_ERR_MODEL, "%s: axis %d is out of range for rank %d", what, axis,
                        rank);
    for (size_t k = 0; k < n; k++) {
        const minfer_tensor_view *v = &items[k]->view;
        int bad = v->dtype != t0->view.dtype || v->rank != t0->view.rank;
        for (int d = 0; !bad && d < v->rank; d++)
            bad = v->dims[d] != t0->view.dims[d] && (stack || d != axis);
        if (bad)
            return mf_error(MINFER_ERR_SHAPE, "%s: element %zu is %s %s, element 0 is %s %s", what,
                            k, minfer_dtype_name((minfer_dtype)v->dtype),
                            mf_shape_str(v->dims, v->rank, a, sizeof a),
                            minfer_dtype_name((minfer_dtype)t0->view.dtype),
                            mf_shape_str(t0->view.dims, t0->view.rank, b, sizeof b));
        total += stack ? 1 : v->dims[axis];
    }
    for (int d = 0, src = 0; d < rank; d++) {
        if (stack && d == axis) {
            dims[d] = total;
            continue;
        }
        dims[d] = d == axis ? total : t0->view.dims[src];
        src++;
    }
    int64_t numel;
    uint64_t esz = minfer_dtype_size((minfer_dtype)t0->view.dtype);
    if (mf_numel(dims, rank, &numel) != MINFER_OK || (esz && (uint64_t)numel > max_bytes / esz))
        return mf_error(MINFER_ERR_LIMIT, "%s: joining %zu elements gives %s %s, above the tensor "
                        "limit of %llu bytes", what, n,
                        minfer_dtype_name((minfer_dtype)t0->view.dtype),
                        mf_shape_str(dims, rank, a, sizeof a), (unsigned long long)max_bytes);
    minfer_status st = mf_tensor_new(t0->view.dtype, dims, rank, out);
    if (st != MINFER_OK)
        return st;
    size_t es = minfer_dtype_size((minfer_dtype)t0->view.dtype);
    size_t outer = prod(dims, 0, axis), inner = prod(dims, axis + 1, rank);
    char *dst = (*out)->view.data;
    for (size_t o = 0; o < outer; o++)
        for (size_t k = 0; k < n; k++) {
            const minfer_tensor *it = items[reverse ? n - 1 - k : k];
            size_t chunk = (stack ? 1 : (size_t)it->view.dims[axis]) * inner;
            st = copy_elems(dst, (const char *)it->view.data + o * chunk * es, chunk,
                            t0->view.dtype);
            if (st != MINFER_OK) {
                minfer_tensor_free(*out);
                *out = NULL;
                return st;
            }
            dst += chunk * es;
        }
    return MINFER_OK;
}

void mf_cv_free_all(minfer_tensor **v, size_t n) {
    for (size_t k = 0; k < n; k++) {
        minfer_tensor_free(v[k]);
        v[k] = NULL;
    }
}

/* ---- helpers of the ops ------------------------------------------------- */


minfer_status mf_cv_fail_msg(core_call *cc, minfer_status st, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mf_error(st, "%s: %s: %s", cc->s->errctx, cc->lbl, msg);
}

int mf_cv_present(const core_call *cc, size_t j) {
    return j < cc->nin && cc->n->inputs[j] >= 0;
}

const minfer_tensor *mf_cv_seq_in(core_call *cc, size_t j) {
    if (!mf_cv_present(cc, j) || cc->in[j].kind != MINFER_VALUE_SEQUENCE)
        return NULL;
    return (const minfer_tensor *)cc->in[j].data;
}

/* A position input in [-n, n + extra). */
static minfer_status position(core_call *cc, size_t j, int64_t n, int64_t extra, int64_t def,
                              int64_t *out) {
    if (!mf_cv_present(cc, j)) {
        *out = def;
        return MINFER_OK;
    }
    int64_t p;
    if (mf_cv_scalar_int(&cc->in[j], &p) != MINFER_OK)
        return FAIL(cc, MINFER_ERR_TYPE, "position must be an int32 or int64 scalar");
    if (p < -n || p >= n + extra)
        return FAIL(cc, MINFER_ERR_RUNTIME, "position %lld is out of range for a sequence of %lld",
                    (long long)p, (long long)n);
    *out = p < 0 ? p + n : p;
    return MINFER_OK;
}

/* A copy of seq with item inserted at pos (or with pos erased). */
static minfer_status seq_edit(core_call *cc, const minfer_tensor *seq, int64_t pos,
                              const minfer_tensor *item, minfer_tensor **out) {
    minfer_tensor *r = NULL, *c = NULL;
    minfer_status st = mf_sequence_new(seq->view.dtype, &r);
    for (size_t k = 0; st == MINFER_OK && k <= seq->count; k++) {
        if ((int64_t)k == pos && item) {
            if ((st = mf_tensor_clone(item, &c)) == MINFER_OK && (st = mf_sequence_push(r, c)) != MINFER_OK)
                minfer_tensor_free(c);
        }
        if (k == seq->count || ((int64_t)k == pos && !item) || st != MINFER_OK)
            continue;
        if ((st = mf_tensor_clone(seq->items[k], &c)) == MINFER_OK &&
            (st = mf_sequence_push(r, c)) != MINFER_OK)
            minfer_tensor_free(c);
    }
    if (st != MINFER_OK) {
        minfer_tensor_free(r);
        return mf_error_prefix(st, "%s: %s", cc->s->errctx, cc->lbl);
    }
    *out = r;
    return MINFER_OK;
}

minfer_status mf_core_op_sequence(core_call *cc) {
    const mf_node *n = cc->n;
    minfer_status st = MINFER_OK;
    minfer_tensor *r = NULL, *c = NULL;
    minfer_tensor tmp;
    if (is_op(n, "SequenceEmpty")) {
        int64_t dt = mf_attr_int(n, "dtype", MINFER_DTYPE_FLOAT);
        if (!minfer_dtype_size((minfer_dtype)dt))
            return FAIL(cc, MINFER_ERR_MODEL, "unknown dtype %lld", (long long)dt);
        st = mf_sequence_new((int32_t)dt, &r);
    } else if (is_op(n, "SequenceConstruct")) {
        if (cc->nin == 0)
            return FAIL(cc, MINFER_ERR_MODEL, "no inputs");
        for (size_t j = 0; j < cc->nin; j++)
            if (!mf_cv_present(cc, j) || cc->in[j].kind != MINFER_VALUE_TENSOR ||
                cc->in[j].dtype != cc->in[0].dtype)
                return FAIL(cc, MINFER_ERR_TYPE, "input %zu is not a %s tensor", j,
                            minfer_dtype_name((minfer_dtype)cc->in[0].dtype));
        st = mf_sequence_new(cc->in[0].dtype, &r);
        for (size_t j = 0; st == MINFER_OK && j < cc->nin; j++)
            if ((st = mf_cv_clone_view(&cc->in[j], &c)) == MINFER_OK &&
                (st = mf_sequence_push(r, c)) != MINFER_OK)
                minfer_tensor_free(c);
    } else {
        const minfer_tensor *seq = mf_cv_seq_in(cc, 0);
        if (!seq && !is_op(n, "SplitToSequence"))
            return FAIL(cc, MINFER_ERR_TYPE, "input 0 is not a sequence");
        int64_t len = seq ? (int64_t)seq->count : 0, pos = 0;
        if (is_op(n, "SequenceInsert")) {
            if (!mf_cv_present(cc, 1) || cc->in[1].kind != MINFER_VALUE_TENSOR ||
                cc->in[1].dtype != seq->view.dtype)
                return FAIL(cc, MINFER_ERR_TYPE, "input 1 is not a %s tensor",
                            minfer_dtype_name((minfer_dtype)seq->view.dtype));
            if ((st = position(cc, 2, len, 1, len, &pos)) != MINFER_OK)
                return st;
            st = seq_edit(cc, seq, pos, mf_cv_handle(&cc->in[1], &tmp), &r);
        } else if (is_op(n, "SequenceErase")) {
            if (len == 0)
                return FAIL(cc, MINFER_ERR_RUNTIME, "erasing from an empty sequence");
            if ((st = position(cc, 1, len, 0, len - 1, &pos)) != MINFER_OK)
                return st;
            st = seq_edit(cc, seq, pos, NULL, &r);
        } else if (is_op(n, "SequenceAt")) {
            if (!mf_cv_present(cc, 1))
                return FAIL(cc, MINFER_ERR_MODEL, "no position");
            if ((st = position(cc, 1, len, 0, 0, &pos)) != MINFER_OK)
                return st;
            st = mf_tensor_clone(seq->items[pos], &r);
        } else if (is_op(n, "SequenceLength")) {
            st = mf_cv_new_scalar(MINFER_DTYPE_INT64, len, &r);
        } else if (is_op(n, "ConcatFromSequence")) {
            int stack = mf_attr_int(n, "new_axis", 0) != 0;
            const mf_attr *ax = mf_node_attr(n, "axis");
            if (!ax || ax->type != MINFER_ATTR_INT)
                return FAIL(cc, MINFER_ERR_MODEL, "no 'axis' attribute");
            if (len == 0)
                return FAIL(cc, MINFER_ERR_RUNTIME, "concatenating an empty sequence");
            int64_t rank = seq->items[0]->view.rank + stack, axis = ax->i;
            if (axis < -rank || axis >= rank)
                return FAIL(cc, MINFER_ERR_MODEL, "axis %lld is out of range for rank %lld",
                            (long long)axis, (long long)rank);
            if (axis < 0)
                axis += rank;
            st = mf_cv_join(seq->items, seq->count, (int)axis, stack, 0, cc->s->limits.max_tensor_bytes,
                      cc->lbl, &r);
        } else { /* SplitToSequence */
            if (!mf_cv_present(cc, 0) || cc->in[0].kind != MINFER_VALUE_TENSOR)
                return FAIL(cc, MINFER_ERR_TYPE, "input 0 is not a tensor");
            const minfer_tensor *t = mf_cv_handle(&cc->in[0], &tmp);
            int64_t rank = t->view.rank, axis = mf_attr_int(n, "axis", 0);
            if (axis < -rank || axis >= rank || rank == 0)
                return FAIL(cc, MINFER_ERR_MODEL, "axis %lld is out of range for rank %lld",
                            (long long)axis, (long long)rank);
            if (axis < 0)
                axis += rank;
            int64_t dim = t->view.dims[axis], chunk = 1, n_chunks = dim;
            const minfer_tensor_view *sizes = NULL; /* a 1-D split */
            int keep = 1;
            if (mf_cv_present(cc, 1)) {
                const minfer_tensor_view *sv = &cc->in[1];
                int64_t ns = 0;
                if (mf_numel(sv->dims, sv->rank, &ns) != MINFER_OK ||
                    (sv->dtype != MINFER_DTYPE_INT64 && sv->dtype != MINFER_DTYPE_INT32) || !sv->data)
                    return FAIL(cc, MINFER_ERR_TYPE, "split must be int32 or int64");
                if (sv->rank == 0) {
                    if (mf_cv_scalar_int(sv, &chunk) != MINFER_OK || chunk <= 0)
                        return FAIL(cc, MINFER_ERR_RUNTIME, "split must be positive");
                    n_chunks = (dim + chunk - 1) / chunk;
                } else {
                    n_chunks = ns;
                    int64_t sum = 0;
                    for (int64_t k = 0; k < ns; k++) {
                        int64_t v = sv->dtype == MINFER_DTYPE_INT64
                                        ? ((const int64_t *)sv->data)[k]
                                        : ((const int32_t *)sv->data)[k];
                        if (v < 0)
                            return FAIL(cc, MINFER_ERR_RUNTIME, "split %lld is negative",
                                        (long long)v);
                        sum += v;
                    }
                    if (sum != dim)
                        return FAIL(cc, MINFER_ERR_SHAPE,
                                    "split sizes add up to %lld, the axis has %lld", (long long)sum,
                                    (long long)dim);
                    sizes = sv;
                }
            } else
                keep = mf_attr_int(n, "keepdims", 1) != 0;
            st = mf_sequence_new(t->view.dtype, &r);
            for (int64_t k = 0, at = 0; st == MINFER_OK && k < n_chunks; k++) {
                int64_t sz = chunk;
                if (sizes)
                    sz = sizes->dtype == MINFER_DTYPE_INT64 ? ((const int64_t *)sizes->data)[k]
                                                            : ((const int32_t *)sizes->data)[k];
                else if (at + sz > dim)
                    sz = dim - at;
                if ((st = mf_cv_take(t, (int)axis, at, sz, keep, &c)) == MINFER_OK &&
                    (st = mf_sequence_push(r, c)) != MINFER_OK)
                    minfer_tensor_free(c);
                at += sz;
            }
        }
    }
    if (st != MINFER_OK) {
        minfer_tensor_free(r);
        return mf_error_prefix(st, "%s: %s", cc->s->errctx, cc->lbl);
    }
    cc->out[0] = r;
    return MINFER_OK;
}

minfer_status mf_core_op_optional(core_call *cc) {
    const mf_node *n = cc->n;
    minfer_status st = MINFER_OK;
    minfer_tensor *r = NULL, *c = NULL;
    const minfer_tensor_view *v = mf_cv_present(cc, 0) ? &cc->in[0] : NULL;
    if (is_op(n, "Optional")) {
        if (v) {
            if (v->kind == MINFER_VALUE_OPTIONAL)
                return FAIL(cc, MINFER_ERR_TYPE, "an optional cannot hold an optional");
            if ((st = mf_cv_clone_view(v, &c)) == MINFER_OK &&
                (st = mf_optional_new(c, c->view.kind, c->view.dtype, &r)) != MINFER_OK)
                minfer_tensor_free(c);
        } else {
            const mf_attr *a = mf_node_attr(n, "type");
            if (!a || a->type != MF_ATTR_TYPE_PROTO)
                return FAIL(cc, MINFER_ERR_MODEL, "an Optional with no input needs a 'type'");
            st = mf_optional_new(NULL, (int32_t)(a->i >> 8), (int32_t)(a->i & 0xff), &r);
        }
    } else if (is_op(n, "OptionalHasElement")) {
        int has = v && (v->kind != MINFER_VALUE_OPTIONAL ||
                        ((const minfer_tensor *)v->data)->count > 0);
        st = mf_cv_new_scalar(MINFER_DTYPE_BOOL, has, &r);
    } else { /* OptionalGetElement */
        if (!v)
            return FAIL(cc, MINFER_ERR_MODEL, "no input");
        if (v->kind == MINFER_VALUE_OPTIONAL) {
            const minfer_tensor *o = v->data;
            if (o->count == 0)
                return FAIL(cc, MINFER_ERR_RUNTIME, "the optional input is empty");
            st = mf_tensor_clone(o->items[0], &r);
        } else
            st = mf_cv_clone_view(v, &r);
    }
    if (st != MINFER_OK) {
        minfer_tensor_free(r);
        return mf_error_prefix(st, "%s: %s", cc->s->errctx, cc->lbl);
    }
    cc->out[0] = r;
    return MINFER_OK;
}

/* minfer:OnesLike, ZerosLike and SumToShape (for the Gradient expansion). */
static double elem_get(const void *p, int32_t dt, size_t i) {
    switch (dt) {
    case MINFER_DTYPE_FLOAT: return ((const float *)p)[i];
    case MINFER_DTYPE_DOUBLE: return ((const double *)p)[i];
    case MINFER_DTYPE_INT32: return ((const int32_t *)p)[i];
    default: return (double)((const int64_t *)p)[i];
    }
}

static void elem_set(void *p, int32_t dt, size_t i, double v) {
    switch (dt) {
    case MINFER_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case MINFER_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case MINFER_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((int64_t *)p)[i] = (int64_t)v; break;
    }
}

minfer_status mf_core_op_grad_helper(core_call *cc) {
    const mf_node *n = cc->n;
    const minfer_tensor_view *x = &cc->in[is_op(n, "SumToShape") ? 1 : 0], *g = &cc->in[0];
    int32_t dt = g->dtype;
    if (!mf_cv_present(cc, 0) || (cc->nin > 1 && !mf_cv_present(cc, 1)) || x->kind != MINFER_VALUE_TENSOR ||
        g->kind != MINFER_VALUE_TENSOR)
        return FAIL(cc, MINFER_ERR_MODEL, "needs tensor inputs");
    if (dt != MINFER_DTYPE_FLOAT && dt != MINFER_DTYPE_DOUBLE && dt != MINFER_DTYPE_INT32 &&
        dt != MINFER_DTYPE_INT64)
        return FAIL(cc, MINFER_ERR_TYPE, "%s is not float, double, int32 or int64",
                    minfer_dtype_name((minfer_dtype)dt));
    minfer_tensor *r = NULL;
    minfer_status st = mf_tensor_new(dt, x->dims, x->rank, &r);
    if (st != MINFER_OK)
        return mf_error_prefix(st, "%s: %s", cc->s->errctx, cc->lbl);
    size_t count = prod(x->dims, 0, x->rank);
    if (is_op(n, "OnesLike")) {
        for (size_t e = 0; e < count; e++)
            elem_set(r->view.data, dt, e, 1.0);
    } else if (is_op(n, "SumToShape")) {
        /* every element of g adds to the element of x it was broadcast from */
        int rg = g->rank, rx = x->rank;
        if (rx > rg) {
            minfer_tensor_free(r);
            return FAIL(cc, MINFER_ERR_SHAPE, "cannot sum rank %d to rank %d", rg, rx);
        }
        for (int d = 0; d < rx; d++)
            if (x->dims[d] != 1 && x->dims[d] != g->dims[rg - rx + d]) {
                char a[128], b[128];
                minfer_tensor_free(r);
                return FAIL(cc, MINFER_ERR_SHAPE, "%s does not broadcast to %s",
                            mf_shape_str(x->dims, x->rank, a, sizeof a),
                            mf_shape_str(g->dims, g->rank, b, sizeof b));
            }
        size_t total = prod(g->dims, 0, rg);
        double *acc = mf_calloc(count + 1, sizeof *acc);
        if (!acc) {
            minfer_tensor_free(r);
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", cc->s->errctx);
        }
        const char *gp = (const char *)g->data + g->offset;
        for (size_t e = 0; e < total; e++) {
            size_t rem = e, xi = 0, stride = 1;
            for (int d = rg - 1; d >= 0; d--) {
                size_t id = rem % (size_t)g->dims[d];
                rem /= (size_t)g->dims[d];
                int dx = d - (rg - rx);
                if (dx >= 0) {
                    if (x->dims[dx] != 1)
                        xi += id * stride;
                    stride *= (size_t)x->dims[dx];
                }
            }
            acc[xi] += elem_get(gp, dt, e);
        }
        for (size_t e = 0; e < count; e++)
            elem_set(r->view.data, dt, e, acc[e]);
        free(acc);
    } /* ZerosLike: mf_tensor_new zero-fills */
    cc->out[0] = r;
    return MINFER_OK;
}
