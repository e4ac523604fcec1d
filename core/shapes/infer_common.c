/*
 * Helpers shared by the inference rules (infer_rules.h): errors, checked
 * arithmetic, inputs and outputs, integer lists and axes, broadcasting.
 */
#include "shapes/infer_rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

minfer_status si_fail(ictx *c, minfer_status st, const char *fmt, ...) {
    if (c->err && c->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->err_size, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* "[1,3,?,?]"; "[?...]" for an unknown rank. */
const char *si_shape_str(const int64_t *d, int32_t r, char *buf, size_t size) {
    size_t n = 0;
    if (r < 0) {
        snprintf(buf, size, "[?...]");
        return buf;
    }
    n += (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < r && n < size; i++) {
        if (d[i] < 0)
            n += (size_t)snprintf(buf + n, size - n, "%s?", i ? "," : "");
        else
            n += (size_t)snprintf(buf + n, size - n, "%s%lld", i ? "," : "", (long long)d[i]);
    }
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

/* ---- Checked arithmetic -----------------------------------------------
 * Through the helpers of minfer/provider.h, as every size in minfer: 1 and
 * the result, or 0 when it does not fit in int64. */

int si_add_i64(int64_t a, int64_t b, int64_t *r) {
    return minfer_i64_add(a, b, r) == MINFER_OK;
}

int si_sub_i64(int64_t a, int64_t b, int64_t *r) {
    return minfer_i64_sub(a, b, r) == MINFER_OK;
}

/* Both operands non-negative. */
int si_mul_nn(int64_t a, int64_t b, int64_t *r) {
    return minfer_i64_mul(a, b, r) == MINFER_OK;
}

minfer_status si_overflow(ictx *c) {
    return si_fail(c, MINFER_ERR_LIMIT, "dimension arithmetic overflows int64");
}

/* Element count of a shape: -1 when a dim or the rank is unknown. */
minfer_status si_numel_of(ictx *c, const int64_t *d, int32_t r, int64_t *out) {
    int64_t n = 1;
    if (r < 0) {
        *out = -1;
        return MINFER_OK;
    }
    for (int32_t i = 0; i < r; i++)
        if (d[i] < 0) {
            *out = -1;
            return MINFER_OK;
        }
    /* An empty shape is empty whatever its other dims. */
    if (minfer_dims_numel(d, r, &n) != MINFER_OK)
        return si_overflow(c);
    *out = n;
    return MINFER_OK;
}

/* ---- Inputs and outputs ----------------------------------------------- */

/* The i-th input, or NULL when it is absent (past n_in, or omitted). */
const minfer_tensor_view *si_input(const ictx *c, size_t i) {
    if (i >= c->n_in)
        return NULL;
    if (c->node->inputs && i < c->node->n_inputs && c->node->inputs[i] < 0)
        return NULL;
    return &c->in[i];
}

minfer_status si_require(ictx *c, size_t i, const minfer_tensor_view **v) {
    *v = si_input(c, i);
    if (!*v)
        return si_fail(c, MINFER_ERR_MODEL, "required input %zu is missing", i);
    return MINFER_OK;
}

minfer_status si_set_out(ictx *c, size_t j, int32_t dtype, int32_t rank, const int64_t *dims) {
    minfer_tensor_view *o;
    if (j >= c->n_out)
        return MINFER_OK;
    if (rank > MINFER_MAX_RANK)
        return si_fail(c, MINFER_ERR_LIMIT, "output %zu would have rank %d, more than %d", j,
                    (int)rank, MINFER_MAX_RANK);
    /* A last guard: no rule may hand out a size below -1 (unknown). */
    for (int32_t i = 0; dims && i < rank; i++)
        if (dims[i] < -1)
            return si_fail(c, MINFER_ERR_SHAPE, "output %zu would have dimension %lld", j,
                        (long long)dims[i]);
    o = &c->out[j];
    o->dtype = dtype;
    o->rank = rank < 0 ? -1 : rank;
    for (int32_t i = 0; i < rank; i++)
        o->dims[i] = dims ? dims[i] : -1;
    return MINFER_OK;
}

/* Output j has the type and shape of view v. */
minfer_status si_same_as(ictx *c, size_t j, const minfer_tensor_view *v) {
    return si_set_out(c, j, v->dtype, v->rank, v->dims);
}

const char *si_dtype_name(int32_t dt) { return minfer_elem_name(dt); }

/* minfer_elem_size, but 0 for strings: no rule sizes string storage. */
size_t si_dtype_bytes(int32_t dt) {
    return dt == MINFER_DTYPE_STRING ? 0 : minfer_elem_size(dt);
}

/* Inputs a and b must have one element type (when both are known). */
minfer_status si_same_type(ictx *c, const minfer_tensor_view *a, const char *an,
                               const minfer_tensor_view *b, const char *bn) {
    if (a && b && a->dtype && b->dtype && a->dtype != b->dtype)
        return si_fail(c, MINFER_ERR_TYPE, "%s is %s but %s is %s", an, si_dtype_name(a->dtype), bn,
                    si_dtype_name(b->dtype));
    return MINFER_OK;
}

int32_t si_first_dtype(const minfer_tensor_view *a, const minfer_tensor_view *b) {
    return a && a->dtype ? a->dtype : b ? b->dtype : 0;
}

/* Number of entries a 1-D (or scalar) input has, from its shape; -1 if not
 * known. */
int64_t si_static_len(const minfer_tensor_view *v) {
    if (!v)
        return -1;
    if (v->rank == 0)
        return 1;
    if (v->rank == 1)
        return v->dims[0];
    return -1;
}

/* Reads the int64/int32 contents of input idx into l (KNOWN), or notes
 * they are not known yet (UNKNOWN) or the input is absent (ABSENT). */
minfer_status si_read_ints(ictx *c, size_t idx, const char *what, int_list *l) {
    const minfer_tensor_view *v = si_input(c, idx);
    size_t esz, count;
    const unsigned char *p;
    l->n = 0;
    l->len = -1;
    if (!v) {
        l->state = LIST_ABSENT;
        return MINFER_OK;
    }
    if (v->dtype && v->dtype != MINFER_DTYPE_INT64 && v->dtype != MINFER_DTYPE_INT32)
        return si_fail(c, MINFER_ERR_TYPE, "%s must be int64 or int32, not %s", what,
                    si_dtype_name(v->dtype));
    if (v->rank > 1)
        return si_fail(c, MINFER_ERR_SHAPE, "%s must be 1-D, not rank %d", what, (int)v->rank);
    if (!v->data || !v->dtype) {
        l->state = LIST_UNKNOWN;
        l->len = si_static_len(v);
        return MINFER_OK;
    }
    esz = si_dtype_bytes(v->dtype);
    if (v->rank == 0)
        count = 1;
    else if (v->rank == 1 && v->dims[0] >= 0)
        count = (size_t)v->dims[0] <= SIZE_MAX / esz ? (size_t)v->dims[0] : SIZE_MAX / esz;
    else
        count = v->nbytes / esz;
    if (count > LIST_CAP)
        return si_fail(c, MINFER_ERR_LIMIT, "%s has %zu entries, more than %d", what, count,
                    LIST_CAP);
    if (v->nbytes < count * esz)
        return si_fail(c, MINFER_ERR_MODEL, "%s holds %zu bytes, fewer than its %zu entries need",
                    what, v->nbytes, count);
    p = (const unsigned char *)v->data + v->offset;
    for (size_t i = 0; i < count; i++) {
        if (esz == 8) {
            int64_t x;
            memcpy(&x, p + 8 * i, 8);
            l->v[i] = x;
        } else {
            int32_t x;
            memcpy(&x, p + 4 * i, 4);
            l->v[i] = x;
        }
    }
    l->n = count;
    l->state = LIST_KNOWN;
    return MINFER_OK;
}

/* Reads an INTS attribute into l (KNOWN) or notes its absence. */
minfer_status si_attr_list(ictx *c, const char *name, int_list *l) {
    const mf_attr *a = mf_node_attr(c->node, name);
    const int64_t *v = NULL;
    size_t n;
    l->n = 0;
    l->len = -1;
    if (!a) {
        l->state = LIST_ABSENT;
        return MINFER_OK;
    }
    if (a->type != MINFER_ATTR_INTS)
        return si_fail(c, MINFER_ERR_MODEL, "attribute %s is not a list of ints", name);
    n = mf_attr_ints(c->node, name, &v);
    if (n > LIST_CAP)
        return si_fail(c, MINFER_ERR_LIMIT, "attribute %s has %zu entries, more than %d", name, n,
                    LIST_CAP);
    if (n)
        memcpy(l->v, v, n * sizeof *v);
    l->n = n;
    l->state = LIST_KNOWN;
    return MINFER_OK;
}

/* Either the input (when from_input) or the attribute. */
minfer_status si_get_list(ictx *c, int from_input, size_t idx, const char *name,
                              int_list *l) {
    return from_input ? si_read_ints(c, idx, name, l) : si_attr_list(c, name, l);
}

/* Normalises axis into [0, rank); MINFER_ERR_MODEL when out of range. */
minfer_status si_norm_axis(ictx *c, int64_t axis, int32_t rank, const char *what,
                               int64_t *out) {
    if (axis < -(int64_t)rank || axis >= rank)
        return si_fail(c, MINFER_ERR_MODEL, "%s %lld is out of range for rank %d", what,
                    (long long)axis, (int)rank);
    *out = axis < 0 ? axis + rank : axis;
    return MINFER_OK;
}

/* Normalises a list of axes in place and rejects duplicates. */
minfer_status si_norm_axes(ictx *c, int_list *l, int32_t rank, const char *what) {
    int seen[MINFER_MAX_RANK] = {0};
    minfer_status st;
    for (size_t i = 0; i < l->n; i++) {
        if ((st = si_norm_axis(c, l->v[i], rank, what, &l->v[i])) != MINFER_OK)
            return st;
        if (seen[l->v[i]]++)
            return si_fail(c, MINFER_ERR_MODEL, "%s %lld is repeated", what, (long long)l->v[i]);
    }
    return MINFER_OK;
}

/* ---- Broadcasting ------------------------------------------------------ */

/* Multidirectional (numpy) broadcasting of a and b into o. With unknown
 * dims: 1 vs ? gives ?, ? vs n (n != 1) gives n, since a valid model can
 * only hold 1 or n there. */
minfer_status si_broadcast(ictx *c, const int64_t *a, int32_t ra, const int64_t *b,
                               int32_t rb, int64_t *o, int32_t *ro) {
    int32_t r = ra > rb ? ra : rb;
    int64_t t[MINFER_MAX_RANK]; /* o may alias a or b */
    if (ra < 0 || rb < 0) {
        *ro = -1;
        return MINFER_OK;
    }
    for (int32_t i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da == db || db == 1 || db < 0)
            t[i] = da == 1 && db < 0 ? -1 : da;
        else if (da == 1 || da < 0)
            t[i] = db;
        else {
            char sa[SHAPE_BUF], sb[SHAPE_BUF];
            return si_fail(c, MINFER_ERR_SHAPE, "cannot broadcast %s with %s",
                        si_shape_str(a, ra, sa, sizeof sa), si_shape_str(b, rb, sb, sizeof sb));
        }
    }
    if (r > 0)
        memcpy(o, t, (size_t)r * sizeof t[0]);
    *ro = r;
    return MINFER_OK;
}

/* Broadcasts every present input from first on; type taken from first. */
minfer_status si_broadcast_inputs(ictx *c, size_t first, size_t count, int check_types,
                                      int32_t *rank, int64_t *dims, int32_t *dtype) {
    const minfer_tensor_view *ref = NULL;
    minfer_status st;
    int32_t r = 0;
    int64_t d[MINFER_MAX_RANK] = {0};
    for (size_t i = first; i < first + count && i < c->n_in; i++) {
        const minfer_tensor_view *v = si_input(c, i);
        if (!v)
            continue;
        if (check_types && ref && (st = si_same_type(c, ref, "one input", v, "another")) != 0)
            return st;
        if (!ref || !ref->dtype)
            ref = v;
        if (r >= 0 && (st = si_broadcast(c, d, r, v->dims, v->rank, d, &r)) != MINFER_OK)
            return st;
    }
    if (!ref)
        return si_fail(c, MINFER_ERR_MODEL, "no inputs");
    *rank = r;
    if (r > 0)
        memcpy(dims, d, (size_t)r * sizeof *d);
    *dtype = ref->dtype;
    return MINFER_OK;
}

/* The scalar contents of input i as a double (for floating types) or an
 * int64; *known is 0 when the contents are not there. */
minfer_status si_read_scalar(ictx *c, size_t i, int *is_float, double *f, int64_t *n,
                                 int *known) {
    const minfer_tensor_view *v = si_input(c, i);
    const unsigned char *p;
    size_t esz;
    *known = 0;
    if (!v)
        return si_fail(c, MINFER_ERR_MODEL, "required input %zu is missing", i);
    if (v->rank > 0 && si_static_len(v) >= 0 && si_static_len(v) != 1)
        return si_fail(c, MINFER_ERR_SHAPE, "input %zu must be a scalar", i);
    if (!v->data)
        return MINFER_OK;
    esz = si_dtype_bytes(v->dtype);
    if (!esz || v->nbytes < esz)
        return v->dtype ? si_fail(c, MINFER_ERR_MODEL, "input %zu holds too few bytes", i)
                        : MINFER_OK;
    p = (const unsigned char *)v->data + v->offset;
    *is_float = 0;
    switch (v->dtype) {
    case MINFER_DTYPE_FLOAT: {
        float x;
        memcpy(&x, p, 4);
        *f = x;
        *is_float = 1;
        break;
    }
    case MINFER_DTYPE_DOUBLE: memcpy(f, p, 8); *is_float = 1; break;
    case MINFER_DTYPE_INT64: memcpy(n, p, 8); break;
    case MINFER_DTYPE_INT32: { int32_t x; memcpy(&x, p, 4); *n = x; break; }
    case MINFER_DTYPE_INT16: { int16_t x; memcpy(&x, p, 2); *n = x; break; }
    default: return MINFER_OK; /* other types: the length is left to the run */
    }
    *known = 1;
    return MINFER_OK;
}

/* Output 0 takes input 0's shape and the type given (0: input 0's). */
minfer_status si_shape_of_x(ictx *c, int32_t dtype) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    return st ? st : si_set_out(c, 0, dtype ? dtype : x->dtype, x->rank, x->dims);
}

minfer_status si_same_type_shape(ictx *c) {
    return si_shape_of_x(c, 0);
}

minfer_status si_dtype_attr(ictx *c, const char *name, int32_t dflt, int32_t *out) {
    const mf_attr *a = mf_node_attr(c->node, name);
    int64_t v;
    if (!a) {
        *out = dflt;
        return MINFER_OK;
    }
    if (a->type != MINFER_ATTR_INT)
        return si_fail(c, MINFER_ERR_MODEL, "attribute %s is not an int", name);
    v = a->i;
    /* 0 is UNDEFINED, 8 (string) is no numeric type; above 16 are the float8
     * and 4-bit types, which minfer does not hold. */
    if (v < MINFER_DTYPE_FLOAT || v > MINFER_DTYPE_BFLOAT16 || v == MINFER_DTYPE_STRING)
        return si_fail(c, MINFER_ERR_TYPE, "attribute %s = %lld is not a supported element type",
                       name, (long long)v);
    *out = (int32_t)v;
    return MINFER_OK;
}

minfer_status si_as_rule(ictx *c, infer_fn fn, const char *op, const size_t *idx, size_t n,
                         int32_t dtype) {
    mf_node tmp = *c->node;
    int inputs[8];
    minfer_tensor_view in[8];
    ictx sub = *c;
    minfer_status st;
    if (n > 8)
        return si_fail(c, MINFER_ERR_LIMIT, "too many inputs");
    for (size_t k = 0; k < n; k++) {
        const minfer_tensor_view *v = si_input(c, idx[k]);
        inputs[k] = v ? 0 : -1;
        memset(&in[k], 0, sizeof in[k]);
        in[k].rank = -1;
        if (v) {
            in[k] = *v;
            in[k].dtype = 0; /* the op's own type constraints are not the template's */
        }
    }
    tmp.op_type = (char *)op;
    tmp.inputs = inputs;
    tmp.n_inputs = n;
    tmp.n_implicit = 0;
    tmp.n_outputs = c->n_out < 1 ? c->n_out : 1;
    sub.node = &tmp;
    sub.op = op;
    sub.in = in;
    sub.n_in = n;
    sub.n_out = tmp.n_outputs;
    if ((st = fn(&sub)))
        return st;
    if (c->n_out)
        c->out[0].dtype = dtype;
    return MINFER_OK;
}
