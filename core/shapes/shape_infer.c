/*
 * Per-op shape and type inference (see shape_infer.h for the contract).
 *
 * How a node is inferred:
 *  1. Every output is reset to "nothing known" (dtype 0, rank -1).
 *  2. The inputs are validated as far as the view allows (rank within
 *     MINFER_MAX_RANK, no dimension below -1), so no rule ever reads past
 *     a dims array, whatever a hostile model declares.
 *  3. The op's rule (the table at the bottom, looked up by op_type in the
 *     default domain) fills the outputs. Rules follow the ONNX operator
 *     specs and switch on node->opset where a signature changed (axes as an
 *     attribute or as an input, Slice attributes before opset 10, ...).
 *
 * Unknown information propagates as -1 and never causes an error: a check
 * only fires when both sides of it are known. All dimension arithmetic is
 * overflow-checked, since dims and attribute values come from the model.
 */
#include "shapes/shape_infer.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/internal.h"
#include "shapes/shape_infer_minfer.h"

/* Opset assumed when a node carries none (hand-built graphs). */
#define DEFAULT_OPSET 17
/* Most entries read from an integer list (attribute or input contents). */
#define LIST_CAP 256

typedef struct ictx {
    const mf_node *node;
    const char *op;
    int64_t opset;
    const minfer_tensor_view *in;
    size_t n_in;
    minfer_tensor_view *out;
    size_t n_out;
    char *err;
    size_t err_size;
} ictx;

static minfer_status fail(ictx *c, minfer_status st, const char *fmt, ...) MF_PRINTF(3, 4);

static minfer_status fail(ictx *c, minfer_status st, const char *fmt, ...) {
    if (c->err && c->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err, c->err_size, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* "[1,3,?,?]"; "[?...]" for an unknown rank. */
static const char *shape_str(const int64_t *d, int32_t r, char *buf, size_t size) {
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

#define SHAPE_BUF 160

/* ---- Checked arithmetic -----------------------------------------------
 * Through the helpers of minfer/provider.h, as every size in minfer: 1 and
 * the result, or 0 when it does not fit in int64. */

static int add_i64(int64_t a, int64_t b, int64_t *r) {
    return minfer_i64_add(a, b, r) == MINFER_OK;
}

static int sub_i64(int64_t a, int64_t b, int64_t *r) {
    return minfer_i64_sub(a, b, r) == MINFER_OK;
}

/* Both operands non-negative. */
static int mul_nn(int64_t a, int64_t b, int64_t *r) {
    return minfer_i64_mul(a, b, r) == MINFER_OK;
}

static minfer_status overflow(ictx *c) {
    return fail(c, MINFER_ERR_LIMIT, "dimension arithmetic overflows int64");
}

/* Element count of a shape: -1 when a dim or the rank is unknown. */
static minfer_status numel_of(ictx *c, const int64_t *d, int32_t r, int64_t *out) {
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
        return overflow(c);
    *out = n;
    return MINFER_OK;
}

/* ---- Inputs and outputs ----------------------------------------------- */

/* The i-th input, or NULL when it is absent (past n_in, or omitted). */
static const minfer_tensor_view *input(const ictx *c, size_t i) {
    if (i >= c->n_in)
        return NULL;
    if (c->node->inputs && i < c->node->n_inputs && c->node->inputs[i] < 0)
        return NULL;
    return &c->in[i];
}

static minfer_status require(ictx *c, size_t i, const minfer_tensor_view **v) {
    *v = input(c, i);
    if (!*v)
        return fail(c, MINFER_ERR_MODEL, "required input %zu is missing", i);
    return MINFER_OK;
}

static minfer_status set_out(ictx *c, size_t j, int32_t dtype, int32_t rank, const int64_t *dims) {
    minfer_tensor_view *o;
    if (j >= c->n_out)
        return MINFER_OK;
    if (rank > MINFER_MAX_RANK)
        return fail(c, MINFER_ERR_LIMIT, "output %zu would have rank %d, more than %d", j,
                    (int)rank, MINFER_MAX_RANK);
    /* A last guard: no rule may hand out a size below -1 (unknown). */
    for (int32_t i = 0; dims && i < rank; i++)
        if (dims[i] < -1)
            return fail(c, MINFER_ERR_SHAPE, "output %zu would have dimension %lld", j,
                        (long long)dims[i]);
    o = &c->out[j];
    o->dtype = dtype;
    o->rank = rank < 0 ? -1 : rank;
    for (int32_t i = 0; i < rank; i++)
        o->dims[i] = dims ? dims[i] : -1;
    return MINFER_OK;
}

/* Output j has the type and shape of view v. */
static minfer_status same_as(ictx *c, size_t j, const minfer_tensor_view *v) {
    return set_out(c, j, v->dtype, v->rank, v->dims);
}

static const char *dtype_name(int32_t dt) {
    static const char *const names[] = {"undefined", "float",  "uint8",     "int8",
                                        "uint16",    "int16",  "int32",     "int64",
                                        "string",    "bool",   "float16",   "double",
                                        "uint32",    "uint64", "complex64", "complex128",
                                        "bfloat16"};
    return dt >= 0 && dt < (int32_t)(sizeof names / sizeof names[0]) ? names[dt] : "unknown";
}

static size_t dtype_bytes(int32_t dt) {
    switch (dt) {
    case MINFER_DTYPE_BOOL:
    case MINFER_DTYPE_UINT8:
    case MINFER_DTYPE_INT8: return 1;
    case MINFER_DTYPE_UINT16:
    case MINFER_DTYPE_INT16:
    case MINFER_DTYPE_FLOAT16:
    case MINFER_DTYPE_BFLOAT16: return 2;
    case MINFER_DTYPE_FLOAT:
    case MINFER_DTYPE_INT32:
    case MINFER_DTYPE_UINT32: return 4;
    case MINFER_DTYPE_INT64:
    case MINFER_DTYPE_UINT64:
    case MINFER_DTYPE_DOUBLE:
    case MINFER_DTYPE_COMPLEX64: return 8;
    case MINFER_DTYPE_COMPLEX128: return 16;
    default: return 0;
    }
}

/* Inputs a and b must have one element type (when both are known). */
static minfer_status same_type(ictx *c, const minfer_tensor_view *a, const char *an,
                               const minfer_tensor_view *b, const char *bn) {
    if (a && b && a->dtype && b->dtype && a->dtype != b->dtype)
        return fail(c, MINFER_ERR_TYPE, "%s is %s but %s is %s", an, dtype_name(a->dtype), bn,
                    dtype_name(b->dtype));
    return MINFER_OK;
}

static int32_t first_dtype(const minfer_tensor_view *a, const minfer_tensor_view *b) {
    return a && a->dtype ? a->dtype : b ? b->dtype : 0;
}

/* Number of entries a 1-D (or scalar) input has, from its shape; -1 if not
 * known. */
static int64_t static_len(const minfer_tensor_view *v) {
    if (!v)
        return -1;
    if (v->rank == 0)
        return 1;
    if (v->rank == 1)
        return v->dims[0];
    return -1;
}

/* An integer list given by an attribute or by an input's contents. */
enum { LIST_ABSENT, LIST_KNOWN, LIST_UNKNOWN };

typedef struct int_list {
    int state;
    size_t n;    /* entries when KNOWN */
    int64_t len; /* when UNKNOWN: the entry count if the input's shape tells, else -1 */
    int64_t v[LIST_CAP];
} int_list;

/* Reads the int64/int32 contents of input idx into l (KNOWN), or notes
 * they are not known yet (UNKNOWN) or the input is absent (ABSENT). */
static minfer_status read_ints(ictx *c, size_t idx, const char *what, int_list *l) {
    const minfer_tensor_view *v = input(c, idx);
    size_t esz, count;
    const unsigned char *p;
    l->n = 0;
    l->len = -1;
    if (!v) {
        l->state = LIST_ABSENT;
        return MINFER_OK;
    }
    if (v->dtype && v->dtype != MINFER_DTYPE_INT64 && v->dtype != MINFER_DTYPE_INT32)
        return fail(c, MINFER_ERR_TYPE, "%s must be int64 or int32, not %s", what,
                    dtype_name(v->dtype));
    if (v->rank > 1)
        return fail(c, MINFER_ERR_SHAPE, "%s must be 1-D, not rank %d", what, (int)v->rank);
    if (!v->data || !v->dtype) {
        l->state = LIST_UNKNOWN;
        l->len = static_len(v);
        return MINFER_OK;
    }
    esz = dtype_bytes(v->dtype);
    if (v->rank == 0)
        count = 1;
    else if (v->rank == 1 && v->dims[0] >= 0)
        count = (size_t)v->dims[0] <= SIZE_MAX / esz ? (size_t)v->dims[0] : SIZE_MAX / esz;
    else
        count = v->nbytes / esz;
    if (count > LIST_CAP)
        return fail(c, MINFER_ERR_LIMIT, "%s has %zu entries, more than %d", what, count,
                    LIST_CAP);
    if (v->nbytes < count * esz)
        return fail(c, MINFER_ERR_MODEL, "%s holds %zu bytes, fewer than its %zu entries need",
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
static minfer_status attr_list(ictx *c, const char *name, int_list *l) {
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
        return fail(c, MINFER_ERR_MODEL, "attribute %s is not a list of ints", name);
    n = mf_attr_ints(c->node, name, &v);
    if (n > LIST_CAP)
        return fail(c, MINFER_ERR_LIMIT, "attribute %s has %zu entries, more than %d", name, n,
                    LIST_CAP);
    if (n)
        memcpy(l->v, v, n * sizeof *v);
    l->n = n;
    l->state = LIST_KNOWN;
    return MINFER_OK;
}

/* Either the input (when from_input) or the attribute. */
static minfer_status get_list(ictx *c, int from_input, size_t idx, const char *name,
                              int_list *l) {
    return from_input ? read_ints(c, idx, name, l) : attr_list(c, name, l);
}

/* Normalises axis into [0, rank); MINFER_ERR_MODEL when out of range. */
static minfer_status norm_axis(ictx *c, int64_t axis, int32_t rank, const char *what,
                               int64_t *out) {
    if (axis < -(int64_t)rank || axis >= rank)
        return fail(c, MINFER_ERR_MODEL, "%s %lld is out of range for rank %d", what,
                    (long long)axis, (int)rank);
    *out = axis < 0 ? axis + rank : axis;
    return MINFER_OK;
}

/* Normalises a list of axes in place and rejects duplicates. */
static minfer_status norm_axes(ictx *c, int_list *l, int32_t rank, const char *what) {
    int seen[MINFER_MAX_RANK] = {0};
    minfer_status st;
    for (size_t i = 0; i < l->n; i++) {
        if ((st = norm_axis(c, l->v[i], rank, what, &l->v[i])) != MINFER_OK)
            return st;
        if (seen[l->v[i]]++)
            return fail(c, MINFER_ERR_MODEL, "%s %lld is repeated", what, (long long)l->v[i]);
    }
    return MINFER_OK;
}

/* ---- Broadcasting ------------------------------------------------------ */

/* Multidirectional (numpy) broadcasting of a and b into o. With unknown
 * dims: 1 vs ? gives ?, ? vs n (n != 1) gives n, since a valid model can
 * only hold 1 or n there. */
static minfer_status broadcast(ictx *c, const int64_t *a, int32_t ra, const int64_t *b,
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
            return fail(c, MINFER_ERR_SHAPE, "cannot broadcast %s with %s",
                        shape_str(a, ra, sa, sizeof sa), shape_str(b, rb, sb, sizeof sb));
        }
    }
    if (r > 0)
        memcpy(o, t, (size_t)r * sizeof t[0]);
    *ro = r;
    return MINFER_OK;
}

/* Broadcasts every present input from first on; type taken from first. */
static minfer_status broadcast_inputs(ictx *c, size_t first, size_t count, int check_types,
                                      int32_t *rank, int64_t *dims, int32_t *dtype) {
    const minfer_tensor_view *ref = NULL;
    minfer_status st;
    int32_t r = 0;
    int64_t d[MINFER_MAX_RANK] = {0};
    for (size_t i = first; i < first + count && i < c->n_in; i++) {
        const minfer_tensor_view *v = input(c, i);
        if (!v)
            continue;
        if (check_types && ref && (st = same_type(c, ref, "one input", v, "another")) != 0)
            return st;
        if (!ref || !ref->dtype)
            ref = v;
        if (r >= 0 && (st = broadcast(c, d, r, v->dims, v->rank, d, &r)) != MINFER_OK)
            return st;
    }
    if (!ref)
        return fail(c, MINFER_ERR_MODEL, "no inputs");
    *rank = r;
    if (r > 0)
        memcpy(dims, d, (size_t)r * sizeof *d);
    *dtype = ref->dtype;
    return MINFER_OK;
}

/* ---- Elementwise ------------------------------------------------------- */

static minfer_status inf_unary(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    return st ? st : same_as(c, 0, x);
}

static minfer_status inf_unary_bool(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    return st ? st : set_out(c, 0, MINFER_DTYPE_BOOL, x->rank, x->dims);
}

static minfer_status inf_not(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (x->dtype && x->dtype != MINFER_DTYPE_BOOL)
        return fail(c, MINFER_ERR_TYPE, "input must be bool, not %s", dtype_name(x->dtype));
    return same_as(c, 0, x);
}

/* Add, Sub, Mul, Div, Pow, Mod, the comparisons and And/Or/Xor. */
static minfer_status inf_binary(ictx *c) {
    const minfer_tensor_view *a, *b;
    int64_t d[MINFER_MAX_RANK];
    int32_t r, dt;
    minfer_status st;
    int to_bool = !strcmp(c->op, "Equal") || !strcmp(c->op, "Less") ||
                  !strcmp(c->op, "Greater") || !strcmp(c->op, "LessOrEqual") ||
                  !strcmp(c->op, "GreaterOrEqual") || !strcmp(c->op, "And") ||
                  !strcmp(c->op, "Or") || !strcmp(c->op, "Xor");
    if ((st = require(c, 0, &a)) || (st = require(c, 1, &b)))
        return st;
    /* Pow's exponent may have its own type (opset 12+); BitShift etc. not here. */
    if (strcmp(c->op, "Pow") && (st = same_type(c, a, "A", b, "B")))
        return st;
    dt = to_bool ? MINFER_DTYPE_BOOL : first_dtype(a, b);
    if (c->opset < 7) {
        /* Before opset 7, B was broadcast onto A (broadcast/axis attributes)
         * and the result always had A's shape. */
        return set_out(c, 0, dt, a->rank, a->dims);
    }
    if ((st = broadcast(c, a->dims, a->rank, b->dims, b->rank, d, &r)))
        return st;
    return set_out(c, 0, dt, r, d);
}

/* Min, Max, Sum, Mean: variadic, broadcast together. */
static minfer_status inf_variadic(ictx *c) {
    int64_t d[MINFER_MAX_RANK];
    int32_t r = -1, dt = 0;
    minfer_status st = broadcast_inputs(c, 0, c->n_in, 1, &r, d, &dt);
    return st ? st : set_out(c, 0, dt, r, d);
}

static minfer_status inf_where(ictx *c) {
    const minfer_tensor_view *cond, *x, *y;
    int64_t d[MINFER_MAX_RANK];
    int32_t r = -1, dt = 0;
    minfer_status st;
    if ((st = require(c, 0, &cond)) || (st = require(c, 1, &x)) || (st = require(c, 2, &y)))
        return st;
    if (cond->dtype && cond->dtype != MINFER_DTYPE_BOOL)
        return fail(c, MINFER_ERR_TYPE, "condition must be bool, not %s",
                    dtype_name(cond->dtype));
    if ((st = same_type(c, x, "X", y, "Y")))
        return st;
    if ((st = broadcast_inputs(c, 0, 3, 0, &r, d, &dt)))
        return st;
    return set_out(c, 0, first_dtype(x, y), r, d);
}

static minfer_status inf_clip(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (c->opset >= 11) {
        if ((st = same_type(c, x, "input", input(c, 1), "min")) ||
            (st = same_type(c, x, "input", input(c, 2), "max")))
            return st;
        for (size_t i = 1; i <= 2; i++) {
            const minfer_tensor_view *v = input(c, i);
            int64_t n = -1;
            if (v && (st = numel_of(c, v->dims, v->rank, &n)))
                return st;
            if (v && n >= 0 && n != 1)
                return fail(c, MINFER_ERR_SHAPE, "%s must be a scalar", i == 1 ? "min" : "max");
        }
    }
    return same_as(c, 0, x);
}

/* Softmax, LogSoftmax, Hardmax: the axis must be valid for the rank. */
static minfer_status inf_softmax(ictx *c) {
    const minfer_tensor_view *x;
    int64_t axis;
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    axis = mf_attr_int(c->node, "axis", c->opset >= 13 ? -1 : 1);
    /* Before opset 13 the input is coerced to 2-D at axis, so axis == rank
     * is valid there (a 1-D input with the default axis 1). */
    if (x->rank >= 0 && (axis < -(int64_t)x->rank ||
                         axis > (int64_t)x->rank - (c->opset >= 13 ? 1 : 0)))
        return fail(c, MINFER_ERR_MODEL, "axis %lld is out of range for rank %d",
                    (long long)axis, (int)x->rank);
    return same_as(c, 0, x);
}

static minfer_status inf_prelu(ictx *c) {
    const minfer_tensor_view *x, *s;
    int64_t d[MINFER_MAX_RANK];
    int32_t r;
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = require(c, 1, &s)) ||
        (st = same_type(c, x, "X", s, "slope")))
        return st;
    /* slope broadcasts onto X; check it can, the result keeps X's shape. */
    if (c->opset >= 7 && (st = broadcast(c, x->dims, x->rank, s->dims, s->rank, d, &r)))
        return st;
    return same_as(c, 0, x);
}

static minfer_status inf_dropout(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    if (st || (st = same_as(c, 0, x)))
        return st;
    /* The mask became bool in opset 10; before, it had the data's type. */
    return set_out(c, 1, c->opset >= 10 ? MINFER_DTYPE_BOOL : x->dtype, x->rank, x->dims);
}

static minfer_status inf_cast(ictx *c) {
    const minfer_tensor_view *x;
    int64_t to;
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (!strcmp(c->op, "CastLike")) {
        const minfer_tensor_view *t;
        if ((st = require(c, 1, &t)))
            return st;
        return set_out(c, 0, t->dtype, x->rank, x->dims);
    }
    if (!mf_node_attr(c->node, "to"))
        return fail(c, MINFER_ERR_MODEL, "attribute 'to' is missing");
    to = mf_attr_int(c->node, "to", 0);
    if (to < MINFER_DTYPE_FLOAT || to > MINFER_DTYPE_BFLOAT16 || to == MINFER_DTYPE_UNDEFINED)
        return fail(c, MINFER_ERR_TYPE, "cast to unsupported type %lld", (long long)to);
    return set_out(c, 0, (int32_t)to, x->rank, x->dims);
}

/* ---- Convolution and pooling ------------------------------------------ */

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

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
        return fail(c, MINFER_ERR_MODEL,
                    "auto_pad '%s' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", s);
    return MINFER_OK;
}

/* Window attributes shared by Conv, ConvTranspose and the pools, for nsp
 * spatial axes; validated against the spec's ranges. */
typedef struct window {
    int auto_pad;
    int64_t kernel[MINFER_MAX_RANK]; /* -1 when not known */
    int64_t strides[MINFER_MAX_RANK];
    int64_t dil[MINFER_MAX_RANK];
    int64_t pads[2 * MINFER_MAX_RANK];
} window;

static minfer_status get_window(ictx *c, int32_t nsp, window *w) {
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
        if ((st = attr_list(c, names[k], &l)))
            return st;
        if (l.state != LIST_KNOWN)
            continue;
        if (l.n != want)
            return fail(c, MINFER_ERR_MODEL, "%s has %zu values, expected %zu", names[k], l.n,
                        want);
        for (size_t i = 0; i < l.n; i++) {
            if (k < 2 ? l.v[i] < 1 : l.v[i] < 0)
                return fail(c, MINFER_ERR_MODEL, "%s[%zu] = %lld is out of range", names[k], i,
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
static minfer_status window_out(ictx *c, const window *w, int32_t i, int32_t nsp, int64_t n,
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
    if (!mul_nn(w->dil[i], k - 1, &dk) || !add_i64(dk, 1, &dk))
        return overflow(c);
    if (!add_i64(n, w->pads[i], &num) || !add_i64(num, w->pads[i + nsp], &num))
        return overflow(c);
    num -= dk;
    if (num < 0)
        return fail(c, MINFER_ERR_SHAPE,
                    "spatial axis %d: kernel extent %lld exceeds the padded input %lld", (int)i,
                    (long long)dk, (long long)(num + dk));
    *out = (ceil_mode ? num / s + (num % s != 0) : num / s) + 1;
    /* ceil_mode: a window that would start in the end padding is dropped. */
    if (ceil_mode) {
        int64_t last;
        if (!mul_nn(*out - 1, s, &last) || last >= n + w->pads[i])
            (*out)--;
    }
    return MINFER_OK;
}

static minfer_status get_kernel_attr(ictx *c, int_list *ks) {
    minfer_status st = attr_list(c, "kernel_shape", ks);
    if (st)
        return st;
    if (ks->state == LIST_KNOWN) {
        if (ks->n == 0 || ks->n > MINFER_MAX_RANK - 2)
            return fail(c, MINFER_ERR_MODEL, "kernel_shape has %zu values", ks->n);
        for (size_t i = 0; i < ks->n; i++)
            if (ks->v[i] < 1)
                return fail(c, MINFER_ERR_MODEL, "kernel_shape[%zu] = %lld is not positive", i,
                            (long long)ks->v[i]);
    }
    return MINFER_OK;
}

static minfer_status inf_conv(ictx *c) {
    const minfer_tensor_view *x, *w, *b;
    int transpose = !strcmp(c->op, "ConvTranspose");
    int_list ks;
    window win;
    int32_t r;
    int64_t group, m = -1, d[MINFER_MAX_RANK];
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = require(c, 1, &w)) ||
        (st = same_type(c, x, "X", w, "W")) || (st = get_kernel_attr(c, &ks)))
        return st;
    group = mf_attr_int(c->node, "group", 1);
    if (group < 1)
        return fail(c, MINFER_ERR_MODEL, "group %lld is not positive", (long long)group);
    if (x->rank >= 0 && x->rank < 3)
        return fail(c, MINFER_ERR_SHAPE, "X must have rank >= 3, not %s",
                    shape_str(x->dims, x->rank, s1, sizeof s1));
    if (w->rank >= 0 && w->rank < 3)
        return fail(c, MINFER_ERR_SHAPE, "W must have rank >= 3, not %s",
                    shape_str(w->dims, w->rank, s1, sizeof s1));
    if (x->rank >= 0 && w->rank >= 0 && w->rank != x->rank)
        return fail(c, MINFER_ERR_SHAPE, "W %s and X %s differ in rank",
                    shape_str(w->dims, w->rank, s1, sizeof s1),
                    shape_str(x->dims, x->rank, s2, sizeof s2));
    r = x->rank >= 0   ? x->rank
        : w->rank >= 0 ? w->rank
        : ks.state == LIST_KNOWN ? (int32_t)ks.n + 2
                                 : -1;
    if (r < 0)
        return set_out(c, 0, x->dtype, -1, NULL);
    if (ks.state == LIST_KNOWN && (int32_t)ks.n != r - 2)
        return fail(c, MINFER_ERR_MODEL, "kernel_shape has %zu values for %d spatial axes",
                    ks.n, (int)(r - 2));
    if ((st = get_window(c, r - 2, &win)))
        return st;
    for (int32_t i = 0; i < r - 2; i++) {
        int64_t kw = w->rank >= 0 ? w->dims[2 + i] : -1;
        if (ks.state == LIST_KNOWN && kw >= 0 && kw != ks.v[i])
            return fail(c, MINFER_ERR_SHAPE, "kernel_shape[%d] = %lld but W is %s", (int)i,
                        (long long)ks.v[i], shape_str(w->dims, w->rank, s1, sizeof s1));
        win.kernel[i] = ks.state == LIST_KNOWN ? ks.v[i] : kw;
    }
    /* Channels: Conv W is [M, C/group, k...]; ConvTranspose W is [C, M/group, k...]. */
    if (w->rank >= 0) {
        int64_t xc = x->rank >= 0 ? x->dims[1] : -1;
        if (!transpose) {
            int64_t wc;
            m = w->dims[0];
            if (w->dims[1] >= 0 && xc >= 0) {
                if (!mul_nn(w->dims[1], group, &wc))
                    return overflow(c);
                if (xc != wc)
                    return fail(c, MINFER_ERR_SHAPE,
                                "X has %lld channels but W %s with group %lld expects %lld",
                                (long long)xc, shape_str(w->dims, w->rank, s1, sizeof s1),
                                (long long)group, (long long)wc);
            }
            if (m >= 0 && m % group)
                return fail(c, MINFER_ERR_SHAPE,
                            "W's %lld output channels do not divide into %lld groups",
                            (long long)m, (long long)group);
        } else {
            if (xc >= 0 && w->dims[0] >= 0 && xc != w->dims[0])
                return fail(c, MINFER_ERR_SHAPE, "X has %lld channels but W %s expects %lld",
                            (long long)xc, shape_str(w->dims, w->rank, s1, sizeof s1),
                            (long long)w->dims[0]);
            if (w->dims[1] >= 0 && !mul_nn(w->dims[1], group, &m))
                return overflow(c);
        }
    }
    if ((b = input(c, 2)) != NULL) {
        if (b->rank >= 0 && b->rank != 1)
            return fail(c, MINFER_ERR_SHAPE, "B must be 1-D, not %s",
                        shape_str(b->dims, b->rank, s1, sizeof s1));
        if (b->rank == 1 && b->dims[0] >= 0 && m >= 0 && b->dims[0] != m)
            return fail(c, MINFER_ERR_SHAPE, "B has %lld values for %lld output channels",
                        (long long)b->dims[0], (long long)m);
    }
    d[0] = x->rank >= 0 ? x->dims[0] : -1;
    d[1] = m;
    if (!transpose) {
        for (int32_t i = 0; i < r - 2; i++)
            if ((st = window_out(c, &win, i, r - 2, x->rank >= 0 ? x->dims[2 + i] : -1, 0,
                                 &d[2 + i])))
                return st;
    } else {
        int_list op, os;
        if ((st = attr_list(c, "output_padding", &op)) || (st = attr_list(c, "output_shape", &os)))
            return st;
        if (op.state == LIST_KNOWN && op.n != (size_t)(r - 2))
            return fail(c, MINFER_ERR_MODEL, "output_padding has %zu values, expected %d", op.n,
                        (int)(r - 2));
        if (os.state == LIST_KNOWN && os.n != (size_t)(r - 2) && os.n != (size_t)r)
            return fail(c, MINFER_ERR_MODEL, "output_shape has %zu values, expected %d", os.n,
                        (int)(r - 2));
        for (int32_t i = 0; i < r - 2; i++) {
            int64_t n = x->rank >= 0 ? x->dims[2 + i] : -1, k = win.kernel[i], o, t;
            int64_t pad = op.state == LIST_KNOWN ? op.v[i] : 0;
            if (os.state == LIST_KNOWN) {
                d[2 + i] = os.v[os.n - (size_t)(r - 2) + (size_t)i];
                if (d[2 + i] < 0)
                    return fail(c, MINFER_ERR_MODEL, "output_shape has %lld",
                                (long long)d[2 + i]);
                continue;
            }
            d[2 + i] = -1;
            if (n < 0)
                continue;
            if (win.auto_pad == PAD_SAME_UPPER || win.auto_pad == PAD_SAME_LOWER) {
                if (!mul_nn(n, win.strides[i], &d[2 + i]))
                    return overflow(c);
                continue;
            }
            if (k < 0 || n < 1)
                continue;
            /* stride * (n - 1) + output_padding + (k - 1) * dilation + 1 - pads */
            if (!mul_nn(win.strides[i], n - 1, &o) || !mul_nn(win.dil[i], k - 1, &t) ||
                !add_i64(o, t, &o) || !add_i64(o, 1, &o) || !add_i64(o, pad, &o) ||
                !sub_i64(o, win.pads[i], &o) || !sub_i64(o, win.pads[i + r - 2], &o))
                return overflow(c);
            if (o < 0)
                return fail(c, MINFER_ERR_SHAPE, "spatial axis %d would have size %lld", (int)i,
                            (long long)o);
            d[2 + i] = o;
        }
    }
    return set_out(c, 0, x->dtype, r, d);
}

/* MaxPool, AveragePool, LpPool. */
static minfer_status inf_pool(ictx *c) {
    const minfer_tensor_view *x;
    int_list ks;
    window win;
    int32_t r;
    int ceil_mode;
    int64_t d[MINFER_MAX_RANK];
    char s1[SHAPE_BUF];
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = get_kernel_attr(c, &ks)))
        return st;
    if (ks.state != LIST_KNOWN)
        return fail(c, MINFER_ERR_MODEL, "attribute kernel_shape is missing");
    r = (int32_t)ks.n + 2;
    if (x->rank >= 0 && x->rank != r)
        return fail(c, MINFER_ERR_SHAPE, "X %s does not match a %zu-D kernel",
                    shape_str(x->dims, x->rank, s1, sizeof s1), ks.n);
    if ((st = get_window(c, r - 2, &win)))
        return st;
    memcpy(win.kernel, ks.v, ks.n * sizeof ks.v[0]);
    ceil_mode = mf_attr_int(c->node, "ceil_mode", 0) != 0;
    d[0] = x->rank >= 0 ? x->dims[0] : -1;
    d[1] = x->rank >= 0 ? x->dims[1] : -1;
    for (int32_t i = 0; i < r - 2; i++)
        if ((st = window_out(c, &win, i, r - 2, x->rank >= 0 ? x->dims[2 + i] : -1, ceil_mode,
                             &d[2 + i])))
            return st;
    if ((st = set_out(c, 0, x->dtype, r, d)))
        return st;
    return strcmp(c->op, "MaxPool") ? MINFER_OK : set_out(c, 1, MINFER_DTYPE_INT64, r, d);
}

/* Einsum: the equation is checked in full here, at session build, so a
 * kernel never sees a malformed one: only letters, ',' between terms, at
 * most one "..." per term and one "->"; one term per input; a term's
 * letters fit its input's rank; a letter's sizes agree everywhere and the
 * ellipsis dims broadcast; output letters are distinct and each is in an
 * input. The output: the ellipsis dims and the output letters (implicit
 * form: the letters used once, in ASCII order, as numpy). */
static int ein_letter(char ch) {
    return ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? 26 + ch - 'a' : -1;
}

/* Checks one term's characters: its letter count, and whether it has an
 * ellipsis; -1 with the reason in why. */
static int ein_term(const char *t, size_t len, int *has_ell, const char **why) {
    int letters = 0;
    *has_ell = 0;
    for (size_t k = 0; k < len; k++) {
        if (t[k] == '.') {
            if (*has_ell) {
                *why = "has more than one ellipsis";
                return -1;
            }
            if (k + 2 >= len + 0 || t[k + 1] != '.' || t[k + 2] != '.') {
                *why = "has a '.' outside a \"...\"";
                return -1;
            }
            *has_ell = 1;
            k += 2;
        } else if (ein_letter(t[k]) < 0) {
            *why = "has a character that is not a letter, ',' or \"...\"";
            return -1;
        } else
            letters++;
    }
    return letters;
}

static minfer_status inf_einsum(ictx *c) {
    const mf_attr *a = mf_node_attr(c->node, "equation");
    char eq[512];
    const char *why = "";
    size_t n = 0;
    if (!a || a->type != MINFER_ATTR_STRING || !a->s)
        return fail(c, MINFER_ERR_MODEL, "attribute equation is missing");
    for (const char *p = a->s; *p; p++)
        if (*p != ' ') {
            if (n + 1 >= sizeof eq)
                return fail(c, MINFER_ERR_LIMIT, "the equation is longer than %zu characters",
                            sizeof eq - 1);
            eq[n++] = *p;
        }
    eq[n] = '\0';
    const char *arrow = strstr(eq, "->");
    if (arrow && strstr(arrow + 2, "->"))
        return fail(c, MINFER_ERR_MODEL, "equation '%s' has more than one \"->\"", eq);
    size_t lhs = arrow ? (size_t)(arrow - eq) : n, terms = 1;
    for (size_t k = 0; k < lhs; k++)
        terms += eq[k] == ',';
    if (terms != c->n_in)
        return fail(c, MINFER_ERR_MODEL, "equation '%s' has %zu terms for %zu inputs", eq, terms,
                    c->n_in);
    int64_t size[52];
    int count[52] = {0}, ell_known = 1, any_ell = 0;
    int32_t ell_rank = 0, dtype = 0;
    int64_t ell[MINFER_MAX_RANK];
    char s1[SHAPE_BUF];
    for (int l = 0; l < 52; l++)
        size[l] = -1;
    const char *t = eq;
    for (size_t i = 0; i < c->n_in; i++) {
        const minfer_tensor_view *x;
        minfer_status st = require(c, i, &x);
        if (st)
            return st;
        if (dtype && x->dtype && x->dtype != dtype)
            return fail(c, MINFER_ERR_TYPE, "input %zu is %s, input 0 is %s", i,
                        dtype_name(x->dtype), dtype_name(dtype));
        if (!dtype)
            dtype = x->dtype;
        const char *end = memchr(t, ',', lhs - (size_t)(t - eq));
        size_t len = end ? (size_t)(end - t) : lhs - (size_t)(t - eq);
        int has_ell, letters = ein_term(t, len, &has_ell, &why);
        if (letters < 0)
            return fail(c, MINFER_ERR_MODEL, "equation '%s': term %zu %s", eq, i, why);
        any_ell |= has_ell;
        if (x->rank >= 0 && (has_ell ? letters > x->rank : letters != x->rank))
            return fail(c, MINFER_ERR_SHAPE,
                        "equation '%s': term %zu has %d letters%s, input %zu has rank %d", eq,
                        i, letters, has_ell ? " and an ellipsis" : "", i, (int)x->rank);
        int32_t e = x->rank >= 0 && has_ell ? x->rank - letters : 0;
        if (x->rank < 0 && has_ell)
            ell_known = 0;
        /* the ellipsis dims, right-aligned across the inputs: 1 broadcasts */
        if (has_ell && x->rank >= 0) {
            int32_t at = 0;
            while (t[at] != '.')
                at++;
            for (int32_t k = 0; k < e; k++) {
                int64_t dv = x->dims[at + k];
                int32_t slot = MINFER_MAX_RANK - e + k;
                if (e > ell_rank) {
                    for (int32_t m = MINFER_MAX_RANK - e; m < MINFER_MAX_RANK - ell_rank; m++)
                        ell[m] = 1;
                    ell_rank = e;
                }
                if (dv == 1)
                    continue;
                if (ell[slot] == 1 || ell[slot] == -1)
                    ell[slot] = dv; /* an unknown one is 1 or the same */
                else if (dv != -1 && dv != ell[slot])
                    return fail(c, MINFER_ERR_SHAPE,
                                "equation '%s': the ellipsis dims of input %zu %s do not "
                                "broadcast with the others", eq, i,
                                shape_str(x->dims, x->rank, s1, sizeof s1));
            }
        }
        for (size_t k = 0, pos = 0; k < len; k++) {
            if (t[k] == '.') {
                k += 2;
                pos += (size_t)e;
                continue;
            }
            int l = ein_letter(t[k]);
            count[l]++;
            int64_t dv = x->rank >= 0 ? x->dims[pos] : -1;
            pos++;
            if (dv < 0)
                continue;
            if (size[l] >= 0 && size[l] != dv)
                return fail(c, MINFER_ERR_SHAPE,
                            "equation '%s': label '%c' is %lld in one place and %lld in input "
                            "%zu", eq, t[k], (long long)size[l], (long long)dv, i);
            size[l] = dv;
        }
        t = end ? end + 1 : t + len;
    }
    /* the output */
    int64_t d[MINFER_MAX_RANK + 1];
    int32_t r = 0;
    if (arrow) {
        const char *o = arrow + 2;
        int has_ell, letters = ein_term(o, strlen(o), &has_ell, &why);
        int seen[52] = {0};
        if (letters < 0)
            return fail(c, MINFER_ERR_MODEL, "equation '%s': the output term %s", eq, why);
        for (const char *p = o; *p; p++) {
            int l = ein_letter(*p);
            if (l < 0)
                continue;
            if (!count[l])
                return fail(c, MINFER_ERR_MODEL, "equation '%s': output label '%c' is in no input",
                            eq, *p);
            if (seen[l]++)
                return fail(c, MINFER_ERR_MODEL,
                            "equation '%s': output label '%c' appears more than once", eq, *p);
        }
        if (has_ell && !ell_known)
            return set_out(c, 0, dtype, -1, NULL);
        if (letters + (has_ell ? ell_rank : 0) > MINFER_MAX_RANK)
            return fail(c, MINFER_ERR_LIMIT, "equation '%s' gives an output of rank above %d", eq,
                        MINFER_MAX_RANK);
        for (const char *p = o; *p; p++) {
            if (*p == '.') {
                for (int32_t k = 0; k < ell_rank; k++)
                    d[r++] = ell[MINFER_MAX_RANK - ell_rank + k];
                p += 2;
            } else
                d[r++] = size[ein_letter(*p)];
        }
    } else {
        if (any_ell && !ell_known)
            return set_out(c, 0, dtype, -1, NULL);
        for (int32_t k = 0; any_ell && k < ell_rank; k++)
            d[r++] = ell[MINFER_MAX_RANK - ell_rank + k];
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) {
                if (r == MINFER_MAX_RANK)
                    return fail(c, MINFER_ERR_LIMIT,
                                "equation '%s' gives an output of rank above %d", eq,
                                MINFER_MAX_RANK);
                d[r++] = size[l];
            }
    }
    return set_out(c, 0, dtype, r, d);
}

static minfer_status inf_global_pool(ictx *c) {
    const minfer_tensor_view *x;
    int64_t d[MINFER_MAX_RANK];
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (x->rank < 0)
        return set_out(c, 0, x->dtype, -1, NULL);
    if (x->rank < 2)
        return fail(c, MINFER_ERR_SHAPE, "X must have rank >= 2, not %d", (int)x->rank);
    for (int32_t i = 0; i < x->rank; i++)
        d[i] = i < 2 ? x->dims[i] : 1;
    return set_out(c, 0, x->dtype, x->rank, d);
}

static minfer_status inf_batchnorm(ictx *c) {
    const minfer_tensor_view *x;
    int64_t ch;
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    ch = x->rank >= 2 ? x->dims[1] : -1;
    if (x->rank >= 0 && x->rank < 2 && c->opset >= 9)
        return fail(c, MINFER_ERR_SHAPE, "X must have rank >= 2, not %d", (int)x->rank);
    for (size_t i = 1; i <= 4; i++) {
        static const char *const names[] = {"", "scale", "B", "mean", "var"};
        const minfer_tensor_view *p = input(c, i);
        if (!p || c->opset < 9) /* before 9, spatial=0 gave these other shapes */
            continue;
        if (p->rank >= 0 && p->rank != 1)
            return fail(c, MINFER_ERR_SHAPE, "%s must be 1-D, not rank %d", names[i],
                        (int)p->rank);
        if (p->rank == 1 && p->dims[0] >= 0 && ch >= 0 && p->dims[0] != ch)
            return fail(c, MINFER_ERR_SHAPE, "%s has %lld values for %lld channels", names[i],
                        (long long)p->dims[0], (long long)ch);
    }
    if ((st = same_as(c, 0, x)))
        return st;
    /* Training outputs (running/saved mean and variance) are per channel. */
    for (size_t j = 1; j < c->n_out; j++) {
        const minfer_tensor_view *m = input(c, 3);
        if ((st = set_out(c, j, m && m->dtype ? m->dtype : x->dtype, 1, &ch)))
            return st;
    }
    return MINFER_OK;
}

static minfer_status inf_layernorm(ictx *c) {
    const minfer_tensor_view *x;
    int64_t axis, d[MINFER_MAX_RANK];
    int32_t stash;
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = same_type(c, x, "X", input(c, 1), "Scale")) ||
        (st = same_type(c, x, "X", input(c, 2), "B")) || (st = same_as(c, 0, x)))
        return st;
    axis = mf_attr_int(c->node, "axis", -1);
    stash = (int32_t)mf_attr_int(c->node, "stash_type", MINFER_DTYPE_FLOAT);
    if (x->rank < 0) {
        if ((st = set_out(c, 1, stash, -1, NULL)))
            return st;
        return set_out(c, 2, stash, -1, NULL);
    }
    if ((st = norm_axis(c, axis, x->rank, "axis", &axis)))
        return st;
    for (int32_t i = 0; i < x->rank; i++)
        d[i] = i < axis ? x->dims[i] : 1;
    if ((st = set_out(c, 1, stash, x->rank, d)))
        return st;
    return set_out(c, 2, stash, x->rank, d);
}

/* ---- Matrix products --------------------------------------------------- */

static minfer_status inf_gemm(ictx *c) {
    const minfer_tensor_view *a, *b, *cc;
    int64_t ta, tb, m, ka, kb, n, d[2];
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if ((st = require(c, 0, &a)) || (st = require(c, 1, &b)) ||
        (st = same_type(c, a, "A", b, "B")) || (st = same_type(c, a, "A", input(c, 2), "C")))
        return st;
    if ((a->rank >= 0 && a->rank != 2) || (b->rank >= 0 && b->rank != 2))
        return fail(c, MINFER_ERR_SHAPE, "A %s and B %s must be 2-D",
                    shape_str(a->dims, a->rank, s1, sizeof s1),
                    shape_str(b->dims, b->rank, s2, sizeof s2));
    ta = mf_attr_int(c->node, "transA", 0);
    tb = mf_attr_int(c->node, "transB", 0);
    m = a->rank == 2 ? a->dims[ta ? 1 : 0] : -1;
    ka = a->rank == 2 ? a->dims[ta ? 0 : 1] : -1;
    kb = b->rank == 2 ? b->dims[tb ? 1 : 0] : -1;
    n = b->rank == 2 ? b->dims[tb ? 0 : 1] : -1;
    if (ka >= 0 && kb >= 0 && ka != kb)
        return fail(c, MINFER_ERR_SHAPE, "A %s%s and B %s%s disagree on K (%lld vs %lld)",
                    shape_str(a->dims, a->rank, s1, sizeof s1), ta ? "^T" : "",
                    shape_str(b->dims, b->rank, s2, sizeof s2), tb ? "^T" : "", (long long)ka,
                    (long long)kb);
    d[0] = m;
    d[1] = n;
    /* C broadcasts unidirectionally to [M, N]. */
    if ((cc = input(c, 2)) != NULL && cc->rank >= 0) {
        if (cc->rank > 2)
            return fail(c, MINFER_ERR_SHAPE, "C %s has rank > 2",
                        shape_str(cc->dims, cc->rank, s1, sizeof s1));
        for (int32_t i = 0; i < cc->rank; i++) {
            int64_t cd = cc->dims[i], od = d[2 - cc->rank + i];
            if (cd >= 0 && cd != 1 && od >= 0 && cd != od)
                return fail(c, MINFER_ERR_SHAPE, "C %s cannot broadcast to [%lld,%lld]",
                            shape_str(cc->dims, cc->rank, s1, sizeof s1), (long long)m,
                            (long long)n);
        }
    }
    return set_out(c, 0, a->dtype, 2, d);
}

static minfer_status inf_matmul(ictx *c) {
    const minfer_tensor_view *a, *b;
    int64_t ad[MINFER_MAX_RANK], bd[MINFER_MAX_RANK], d[MINFER_MAX_RANK + 2];
    int32_t ra, rb, r;
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if ((st = require(c, 0, &a)) || (st = require(c, 1, &b)) ||
        (st = same_type(c, a, "A", b, "B")))
        return st;
    if (a->rank < 0 || b->rank < 0)
        return set_out(c, 0, first_dtype(a, b), -1, NULL);
    if (a->rank == 0 || b->rank == 0)
        return fail(c, MINFER_ERR_SHAPE, "MatMul needs inputs of rank >= 1, got %s and %s",
                    shape_str(a->dims, a->rank, s1, sizeof s1),
                    shape_str(b->dims, b->rank, s2, sizeof s2));
    /* A 1-D A is [1, K] and a 1-D B is [K, 1]; the added axis is dropped. */
    ra = a->rank == 1 ? 2 : a->rank;
    rb = b->rank == 1 ? 2 : b->rank;
    if (a->rank == 1) {
        ad[0] = 1;
        ad[1] = a->dims[0];
    } else {
        memcpy(ad, a->dims, (size_t)ra * sizeof ad[0]);
    }
    if (b->rank == 1) {
        bd[0] = b->dims[0];
        bd[1] = 1;
    } else {
        memcpy(bd, b->dims, (size_t)rb * sizeof bd[0]);
    }
    if (ad[ra - 1] >= 0 && bd[rb - 2] >= 0 && ad[ra - 1] != bd[rb - 2])
        return fail(c, MINFER_ERR_SHAPE, "inner dimensions differ: %s x %s",
                    shape_str(a->dims, a->rank, s1, sizeof s1),
                    shape_str(b->dims, b->rank, s2, sizeof s2));
    if ((st = broadcast(c, ad, ra - 2, bd, rb - 2, d, &r)))
        return st;
    if (a->rank != 1)
        d[r++] = ad[ra - 2];
    if (b->rank != 1)
        d[r++] = bd[rb - 1];
    return set_out(c, 0, first_dtype(a, b), r, d);
}

/* ---- Reductions -------------------------------------------------------- */

/* The Reduce* family and ArgMax/ArgMin. */
static minfer_status inf_reduce(ictx *c) {
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
    if ((st = require(c, 0, &x)))
        return st;
    dt = is_arg ? MINFER_DTYPE_INT64 : x->dtype;
    if (is_arg) {
        axes.state = LIST_KNOWN;
        axes.n = 1;
        axes.v[0] = mf_attr_int(c->node, "axis", 0);
    } else if ((st = get_list(c, from_input, 1, "axes", &axes))) {
        return st;
    }
    if (axes.state == LIST_UNKNOWN && axes.len == 0)
        axes.state = LIST_KNOWN;
    if (axes.state != LIST_UNKNOWN && axes.n == 0) {
        /* No axes: all of them, or none with noop_with_empty_axes. */
        if (noop)
            return same_as(c, 0, x);
        if (x->rank < 0)
            return set_out(c, 0, dt, keep ? -1 : 0, NULL);
        for (int32_t i = 0; i < x->rank; i++)
            d[i] = 1;
        return set_out(c, 0, dt, keep ? x->rank : 0, d);
    }
    if (x->rank < 0)
        return set_out(c, 0, dt, -1, NULL);
    if (axes.state == LIST_UNKNOWN) {
        /* Which axes go is not known: with keepdims only the sizes are lost. */
        if (keep) {
            for (int32_t i = 0; i < x->rank; i++)
                d[i] = x->dims[i] == 1 ? 1 : -1;
            return set_out(c, 0, dt, x->rank, d);
        }
        if (axes.len > x->rank)
            return fail(c, MINFER_ERR_MODEL, "%lld axes for rank %d", (long long)axes.len,
                        (int)x->rank);
        return set_out(c, 0, dt, axes.len < 0 ? -1 : x->rank - (int32_t)axes.len, NULL);
    }
    if ((st = norm_axes(c, &axes, x->rank, "axis")))
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
    return set_out(c, 0, dt, r, d);
}

/* ---- Shape manipulation ------------------------------------------------ */

static minfer_status inf_concat(ictx *c) {
    const minfer_tensor_view *ref = NULL;
    int64_t axis, d[MINFER_MAX_RANK];
    int32_t r = -1;
    int axis_known = 1;
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if (!mf_node_attr(c->node, "axis") && c->opset >= 4)
        return fail(c, MINFER_ERR_MODEL, "attribute axis is missing");
    axis = mf_attr_int(c->node, "axis", 1);
    for (size_t i = 0; i < c->n_in; i++) {
        const minfer_tensor_view *v = input(c, i);
        if (!v)
            continue;
        if (ref && (st = same_type(c, ref, "an input", v, "another")))
            return st;
        if (!ref || !ref->dtype)
            ref = v;
        if (v->rank < 0)
            continue;
        if (r < 0) {
            r = v->rank;
            if (r == 0)
                return fail(c, MINFER_ERR_SHAPE, "cannot concatenate scalars");
            if ((st = norm_axis(c, axis, r, "axis", &axis)))
                return st;
            memcpy(d, v->dims, (size_t)r * sizeof d[0]);
            continue;
        }
        if (v->rank != r)
            return fail(c, MINFER_ERR_SHAPE, "inputs %s and %s differ in rank",
                        shape_str(d, r, s1, sizeof s1), shape_str(v->dims, v->rank, s2, sizeof s2));
        for (int32_t k = 0; k < r; k++) {
            if (k == axis) {
                if (d[k] < 0 || v->dims[k] < 0)
                    d[k] = -1;
                else if (!add_i64(d[k], v->dims[k], &d[k]))
                    return overflow(c);
            } else if (d[k] >= 0 && v->dims[k] >= 0 && d[k] != v->dims[k]) {
                return fail(c, MINFER_ERR_SHAPE,
                            "input %zu %s does not match the others on axis %d (%lld vs %lld)",
                            i, shape_str(v->dims, v->rank, s1, sizeof s1), (int)k,
                            (long long)v->dims[k], (long long)d[k]);
            } else if (d[k] < 0) {
                d[k] = v->dims[k];
            }
        }
    }
    if (!ref)
        return fail(c, MINFER_ERR_MODEL, "no inputs");
    /* An input of unknown rank makes the axis length unknown. */
    for (size_t i = 0; i < c->n_in; i++)
        if (input(c, i) && input(c, i)->rank < 0)
            axis_known = 0;
    if (r > 0 && !axis_known)
        d[axis] = -1;
    return set_out(c, 0, ref->dtype, r, d);
}

static minfer_status inf_flatten(ictx *c) {
    const minfer_tensor_view *x;
    int64_t axis, d[2] = {1, 1};
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    axis = mf_attr_int(c->node, "axis", 1);
    if (x->rank < 0)
        return set_out(c, 0, x->dtype, 2, NULL);
    if (axis < -(int64_t)x->rank || axis > x->rank)
        return fail(c, MINFER_ERR_MODEL, "axis %lld is out of range for rank %d",
                    (long long)axis, (int)x->rank);
    if (axis < 0)
        axis += x->rank;
    for (int32_t i = 0; i < x->rank; i++) {
        int64_t *p = &d[i < axis ? 0 : 1];
        if (*p < 0)
            continue;
        if (x->dims[i] < 0)
            *p = -1;
        else if (!mul_nn(*p, x->dims[i], p))
            return overflow(c);
    }
    /* A 0 anywhere settles the product even if other dims are unknown. */
    for (int32_t i = 0; i < x->rank; i++)
        if (x->dims[i] == 0)
            d[i < axis ? 0 : 1] = 0;
    return set_out(c, 0, x->dtype, 2, d);
}

static minfer_status inf_transpose(ictx *c) {
    const minfer_tensor_view *x;
    int_list perm;
    int seen[MINFER_MAX_RANK] = {0};
    int64_t d[MINFER_MAX_RANK];
    int32_t r;
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = attr_list(c, "perm", &perm)))
        return st;
    if (perm.state != LIST_KNOWN) {
        if (x->rank < 0)
            return set_out(c, 0, x->dtype, -1, NULL);
        for (int32_t i = 0; i < x->rank; i++)
            d[i] = x->dims[x->rank - 1 - i];
        return set_out(c, 0, x->dtype, x->rank, d);
    }
    r = (int32_t)(perm.n <= MINFER_MAX_RANK ? perm.n : MINFER_MAX_RANK + 1);
    if (x->rank >= 0 && r != x->rank)
        return fail(c, MINFER_ERR_MODEL, "perm has %zu entries for rank %d", perm.n,
                    (int)x->rank);
    if (r > MINFER_MAX_RANK)
        return fail(c, MINFER_ERR_LIMIT, "perm has %zu entries, more than %d", perm.n,
                    MINFER_MAX_RANK);
    for (int32_t i = 0; i < r; i++) {
        if (perm.v[i] < 0 || perm.v[i] >= r || seen[perm.v[i]]++)
            return fail(c, MINFER_ERR_MODEL, "perm is not a permutation of 0..%d", (int)(r - 1));
        d[i] = x->rank >= 0 ? x->dims[perm.v[i]] : -1;
    }
    return set_out(c, 0, x->dtype, r, d);
}

static minfer_status inf_reshape(ictx *c) {
    const minfer_tensor_view *x;
    int_list t;
    int allowzero = c->opset >= 14 && mf_attr_int(c->node, "allowzero", 0) != 0;
    int64_t d[MINFER_MAX_RANK], in_n = -1, prod = 1;
    int neg = -1, has_zero = 0, prod_known = 1;
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if ((st = require(c, 0, &x)))
        return st;
    if ((st = get_list(c, c->opset >= 5, 1, "shape", &t)))
        return st;
    if (t.state == LIST_ABSENT)
        return fail(c, MINFER_ERR_MODEL, "the target shape is missing");
    if (t.state == LIST_UNKNOWN) {
        if (t.len > MINFER_MAX_RANK)
            return fail(c, MINFER_ERR_LIMIT, "target shape has %lld dims, more than %d",
                        (long long)t.len, MINFER_MAX_RANK);
        return set_out(c, 0, x->dtype, t.len < 0 ? -1 : (int32_t)t.len, NULL);
    }
    if (t.n > MINFER_MAX_RANK)
        return fail(c, MINFER_ERR_LIMIT, "target shape has %zu dims, more than %d", t.n,
                    MINFER_MAX_RANK);
    for (size_t i = 0; i < t.n; i++) {
        int64_t v = t.v[i];
        if (v == -1) {
            if (neg >= 0)
                return fail(c, MINFER_ERR_MODEL, "target shape has more than one -1");
            neg = (int)i;
            d[i] = -1;
            continue;
        }
        if (v < -1)
            return fail(c, MINFER_ERR_MODEL, "target shape has %lld at %zu", (long long)v, i);
        if (v == 0 && !allowzero) {
            if (x->rank >= 0 && (int32_t)i >= x->rank)
                return fail(c, MINFER_ERR_MODEL,
                            "target shape has 0 at %zu, copying a dim the rank-%d input lacks",
                            i, (int)x->rank);
            d[i] = x->rank >= 0 ? x->dims[i] : -1;
        } else {
            d[i] = v;
            has_zero |= v == 0;
        }
        if (d[i] < 0)
            prod_known = 0;
        else if (prod_known && !mul_nn(prod, d[i], &prod))
            return overflow(c);
    }
    if (allowzero && has_zero && neg >= 0)
        return fail(c, MINFER_ERR_MODEL, "target shape has both 0 (allowzero) and -1");
    if ((st = numel_of(c, x->dims, x->rank, &in_n)))
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
            else if (!mul_nn(in_rest, x->dims[i], &in_rest))
                return overflow(c);
        }
        for (size_t i = 0; i < t.n && ok; i++) {
            if ((int)i == neg || (!allowzero && t.v[i] == 0))
                continue;
            if (!mul_nn(out_rest, t.v[i], &out_rest))
                return overflow(c);
        }
        if (ok && out_rest != 0 && in_rest % out_rest == 0)
            d[neg] = in_rest / out_rest;
    }
    return set_out(c, 0, x->dtype, (int32_t)t.n, d);
mismatch:
    return fail(c, MINFER_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s",
                shape_str(x->dims, x->rank, s1, sizeof s1), (long long)in_n,
                shape_str(t.v, (int32_t)t.n, s2, sizeof s2));
}

static minfer_status inf_gather(ictx *c) {
    const minfer_tensor_view *x, *idx;
    int64_t axis, d[MINFER_MAX_RANK * 2];
    int32_t r = 0;
    int elements = !strcmp(c->op, "GatherElements");
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = require(c, 1, &idx)))
        return st;
    if (idx->dtype && idx->dtype != MINFER_DTYPE_INT64 && idx->dtype != MINFER_DTYPE_INT32)
        return fail(c, MINFER_ERR_TYPE, "indices must be int32 or int64, not %s",
                    dtype_name(idx->dtype));
    axis = mf_attr_int(c->node, "axis", 0);
    if (x->rank == 0)
        return fail(c, MINFER_ERR_SHAPE, "data must have rank >= 1");
    if (x->rank >= 0 && (st = norm_axis(c, axis, x->rank, "axis", &axis)))
        return st;
    if (elements) {
        if (x->rank >= 0 && idx->rank >= 0 && x->rank != idx->rank)
            return fail(c, MINFER_ERR_SHAPE, "indices rank %d differs from data rank %d",
                        (int)idx->rank, (int)x->rank);
        return idx->rank >= 0 ? set_out(c, 0, x->dtype, idx->rank, idx->dims)
                              : set_out(c, 0, x->dtype, x->rank, NULL);
    }
    if (x->rank < 0 || idx->rank < 0)
        return set_out(c, 0, x->dtype, -1, NULL);
    for (int32_t i = 0; i < axis; i++)
        d[r++] = x->dims[i];
    for (int32_t i = 0; i < idx->rank; i++)
        d[r++] = idx->dims[i];
    for (int32_t i = (int32_t)axis + 1; i < x->rank; i++)
        d[r++] = x->dims[i];
    return set_out(c, 0, x->dtype, r, d);
}

static minfer_status inf_shape(ictx *c) {
    const minfer_tensor_view *x;
    int64_t r, start = 0, end, len;
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    r = x->rank;
    if (r < 0) {
        len = -1;
        return set_out(c, 0, MINFER_DTYPE_INT64, 1, &len);
    }
    end = r;
    if (c->opset >= 15) {
        start = mf_attr_int(c->node, "start", 0);
        end = mf_attr_int(c->node, "end", r);
    }
    if (start < 0)
        start += r;
    if (end < 0)
        end += r;
    start = start < 0 ? 0 : start > r ? r : start;
    end = end < 0 ? 0 : end > r ? r : end;
    len = end > start ? end - start : 0;
    return set_out(c, 0, MINFER_DTYPE_INT64, 1, &len);
}

static minfer_status inf_size(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    return st ? st : set_out(c, 0, MINFER_DTYPE_INT64, 0, NULL);
}

static minfer_status inf_unsqueeze(ictx *c) {
    const minfer_tensor_view *x;
    int_list axes;
    int64_t d[MINFER_MAX_RANK];
    int32_t r;
    int added[MINFER_MAX_RANK] = {0};
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = get_list(c, c->opset >= 13, 1, "axes", &axes)))
        return st;
    if (axes.state == LIST_ABSENT)
        return fail(c, MINFER_ERR_MODEL, "axes are missing");
    if (x->rank < 0)
        return set_out(c, 0, x->dtype, -1, NULL);
    if (axes.state == LIST_UNKNOWN) {
        if (axes.len < 0)
            return set_out(c, 0, x->dtype, -1, NULL);
        if (axes.len > MINFER_MAX_RANK)
            return fail(c, MINFER_ERR_LIMIT, "%lld axes, more than %d", (long long)axes.len,
                        MINFER_MAX_RANK);
        return set_out(c, 0, x->dtype, x->rank + (int32_t)axes.len, NULL);
    }
    if ((int64_t)x->rank + (int64_t)axes.n > MINFER_MAX_RANK)
        return fail(c, MINFER_ERR_LIMIT, "output rank %lld exceeds %d",
                    (long long)x->rank + (long long)axes.n, MINFER_MAX_RANK);
    r = x->rank + (int32_t)axes.n;
    if ((st = norm_axes(c, &axes, r, "axis")))
        return st;
    for (size_t i = 0; i < axes.n; i++)
        added[axes.v[i]] = 1;
    for (int32_t i = 0, k = 0; i < r; i++)
        d[i] = added[i] ? 1 : x->dims[k++];
    return set_out(c, 0, x->dtype, r, d);
}

static minfer_status inf_squeeze(ictx *c) {
    const minfer_tensor_view *x;
    int_list axes;
    int64_t d[MINFER_MAX_RANK];
    int32_t r = 0;
    int drop[MINFER_MAX_RANK] = {0};
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = get_list(c, c->opset >= 13, 1, "axes", &axes)))
        return st;
    if (x->rank < 0)
        return set_out(c, 0, x->dtype, -1, NULL);
    if (axes.state == LIST_UNKNOWN) {
        if (axes.len > x->rank)
            return fail(c, MINFER_ERR_MODEL, "%lld axes for rank %d", (long long)axes.len,
                        (int)x->rank);
        return set_out(c, 0, x->dtype, axes.len < 0 ? -1 : x->rank - (int32_t)axes.len, NULL);
    }
    if (axes.n == 0) {
        /* Every dim of size 1 goes; an unknown one leaves the rank unknown. */
        for (int32_t i = 0; i < x->rank; i++) {
            if (x->dims[i] < 0)
                return set_out(c, 0, x->dtype, -1, NULL);
            if (x->dims[i] != 1)
                d[r++] = x->dims[i];
        }
        return set_out(c, 0, x->dtype, r, d);
    }
    if ((st = norm_axes(c, &axes, x->rank, "axis")))
        return st;
    for (size_t i = 0; i < axes.n; i++) {
        int64_t n = x->dims[axes.v[i]];
        if (n >= 0 && n != 1)
            return fail(c, MINFER_ERR_SHAPE, "cannot squeeze axis %lld of size %lld",
                        (long long)axes.v[i], (long long)n);
        drop[axes.v[i]] = 1;
    }
    for (int32_t i = 0; i < x->rank; i++)
        if (!drop[i])
            d[r++] = x->dims[i];
    return set_out(c, 0, x->dtype, r, d);
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

static minfer_status inf_slice(ictx *c) {
    const minfer_tensor_view *x;
    int_list starts, ends, axes, steps;
    int64_t d[MINFER_MAX_RANK];
    int from_input = c->opset >= 10;
    minfer_status st;
    if ((st = require(c, 0, &x)))
        return st;
    steps.state = LIST_ABSENT; /* Slice-1 has no steps */
    if ((st = get_list(c, from_input, 1, "starts", &starts)) ||
        (st = get_list(c, from_input, 2, "ends", &ends)) ||
        (st = get_list(c, from_input, 3, "axes", &axes)) ||
        (from_input && (st = read_ints(c, 4, "steps", &steps))))
        return st;
    if (starts.state == LIST_ABSENT || ends.state == LIST_ABSENT)
        return fail(c, MINFER_ERR_MODEL, "starts or ends is missing");
    if (x->rank < 0)
        return set_out(c, 0, x->dtype, -1, NULL);
    memcpy(d, x->dims, (size_t)x->rank * sizeof d[0]);
    if (axes.state == LIST_KNOWN && (st = norm_axes(c, &axes, x->rank, "axis")))
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
        return set_out(c, 0, x->dtype, x->rank, d);
    }
    if (starts.n != ends.n)
        return fail(c, MINFER_ERR_MODEL, "starts has %zu values but ends %zu", starts.n, ends.n);
    if (axes.state == LIST_KNOWN && axes.n != starts.n)
        return fail(c, MINFER_ERR_MODEL, "axes has %zu values but starts %zu", axes.n, starts.n);
    if (steps.state == LIST_KNOWN && steps.n != starts.n)
        return fail(c, MINFER_ERR_MODEL, "steps has %zu values but starts %zu", steps.n,
                    starts.n);
    if (axes.state != LIST_KNOWN) {
        if (starts.n > (size_t)x->rank)
            return fail(c, MINFER_ERR_MODEL, "%zu starts for rank %d", starts.n, (int)x->rank);
        for (size_t i = 0; i < starts.n; i++)
            axes.v[i] = (int64_t)i;
    }
    for (size_t i = 0; i < starts.n; i++) {
        int64_t step = steps.state == LIST_KNOWN ? steps.v[i] : 1;
        int64_t n = x->dims[axes.v[i]];
        if (step == 0)
            return fail(c, MINFER_ERR_MODEL, "steps[%zu] is 0", i);
        d[axes.v[i]] = n < 0 ? -1 : slice_len(n, starts.v[i], ends.v[i], step);
    }
    return set_out(c, 0, x->dtype, x->rank, d);
}

static minfer_status inf_expand(ictx *c) {
    const minfer_tensor_view *x;
    int_list s;
    int64_t d[MINFER_MAX_RANK];
    int32_t r;
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = read_ints(c, 1, "shape", &s)))
        return st;
    if (s.state == LIST_ABSENT)
        return fail(c, MINFER_ERR_MODEL, "shape is missing");
    if (s.state == LIST_UNKNOWN) {
        /* The rank is max(rank, len); an input dim > 1 survives any valid shape. */
        if (x->rank < 0 || s.len < 0)
            return set_out(c, 0, x->dtype, -1, NULL);
        r = s.len > x->rank ? (int32_t)(s.len > MINFER_MAX_RANK ? MINFER_MAX_RANK + 1 : s.len)
                            : x->rank;
        if (r > MINFER_MAX_RANK)
            return set_out(c, 0, x->dtype, r, NULL);
        for (int32_t i = 0; i < r; i++) {
            int32_t k = i - (r - x->rank);
            d[i] = k >= 0 && x->dims[k] > 1 ? x->dims[k] : -1;
        }
        return set_out(c, 0, x->dtype, r, d);
    }
    if (s.n > MINFER_MAX_RANK)
        return fail(c, MINFER_ERR_LIMIT, "shape has %zu dims, more than %d", s.n,
                    MINFER_MAX_RANK);
    for (size_t i = 0; i < s.n; i++)
        if (s.v[i] < 0)
            return fail(c, MINFER_ERR_SHAPE, "shape has negative dim %lld", (long long)s.v[i]);
    if ((st = broadcast(c, x->dims, x->rank, s.v, (int32_t)s.n, d, &r)))
        return st;
    return set_out(c, 0, x->dtype, r, d);
}

static minfer_status inf_tile(ictx *c) {
    const minfer_tensor_view *x;
    int_list rep;
    int64_t d[MINFER_MAX_RANK];
    minfer_status st;
    if ((st = require(c, 0, &x)))
        return st;
    if (c->opset < 6 || x->rank < 0) /* Tile-1 took tiles and axis inputs */
        return set_out(c, 0, x->dtype, x->rank, NULL);
    if ((st = read_ints(c, 1, "repeats", &rep)))
        return st;
    if (rep.state == LIST_ABSENT)
        return fail(c, MINFER_ERR_MODEL, "repeats is missing");
    if ((rep.state == LIST_KNOWN && rep.n != (size_t)x->rank) ||
        (rep.state == LIST_UNKNOWN && rep.len >= 0 && rep.len != x->rank))
        return fail(c, MINFER_ERR_SHAPE, "repeats has %lld values for rank %d",
                    (long long)(rep.state == LIST_KNOWN ? (int64_t)rep.n : rep.len),
                    (int)x->rank);
    for (int32_t i = 0; i < x->rank; i++) {
        if (rep.state != LIST_KNOWN || x->dims[i] < 0) {
            d[i] = x->dims[i] == 0 ? 0 : -1;
            continue;
        }
        if (rep.v[i] < 0)
            return fail(c, MINFER_ERR_MODEL, "repeats[%d] = %lld is negative", (int)i,
                        (long long)rep.v[i]);
        if (!mul_nn(x->dims[i], rep.v[i], &d[i]))
            return overflow(c);
    }
    return set_out(c, 0, x->dtype, x->rank, d);
}

static minfer_status inf_pad(ictx *c) {
    const minfer_tensor_view *x;
    int_list pads, axes;
    int64_t d[MINFER_MAX_RANK], ax[MINFER_MAX_RANK];
    size_t na;
    minfer_status st;
    if ((st = require(c, 0, &x)))
        return st;
    axes.state = LIST_ABSENT; /* axes came in opset 18 */
    if (c->opset >= 11) {
        if ((st = read_ints(c, 1, "pads", &pads)) ||
            (c->opset >= 18 && (st = read_ints(c, 3, "axes", &axes))) ||
            (st = same_type(c, x, "data", input(c, 2), "constant_value")))
            return st;
    } else if ((st = attr_list(c, c->opset < 2 ? "paddings" : "pads", &pads))) {
        return st;
    }
    if (pads.state == LIST_ABSENT)
        return fail(c, MINFER_ERR_MODEL, "pads are missing");
    if (x->rank < 0)
        return set_out(c, 0, x->dtype, -1, NULL);
    if (axes.state == LIST_KNOWN) {
        if ((st = norm_axes(c, &axes, x->rank, "axis")))
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
        return set_out(c, 0, x->dtype, x->rank, d);
    }
    if (pads.n != 2 * na)
        return fail(c, MINFER_ERR_MODEL, "pads has %zu values, expected %zu", pads.n, 2 * na);
    for (size_t i = 0; i < na; i++) {
        int64_t n = d[ax[i]];
        if (n < 0)
            continue;
        if (!add_i64(n, pads.v[i], &n) || !add_i64(n, pads.v[i + na], &n))
            return overflow(c);
        if (n < 0)
            return fail(c, MINFER_ERR_SHAPE, "pads make axis %lld negative (%lld)",
                        (long long)ax[i], (long long)n);
        d[ax[i]] = n;
    }
    return set_out(c, 0, x->dtype, x->rank, d);
}

static minfer_status inf_split(ictx *c) {
    const minfer_tensor_view *x;
    int_list sp;
    int64_t axis, n, d[MINFER_MAX_RANK], sum = 0;
    size_t nout = c->n_out;
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = get_list(c, c->opset >= 13, 1, "split", &sp)))
        return st;
    if (nout == 0)
        return MINFER_OK;
    if (x->rank < 0) {
        for (size_t j = 0; j < nout; j++)
            if ((st = set_out(c, j, x->dtype, -1, NULL)))
                return st;
        return MINFER_OK;
    }
    axis = mf_attr_int(c->node, "axis", 0);
    if ((st = norm_axis(c, axis, x->rank, "axis", &axis)))
        return st;
    n = x->dims[axis];
    memcpy(d, x->dims, (size_t)x->rank * sizeof d[0]);
    if (sp.state == LIST_KNOWN && sp.n > 0) {
        if (sp.n != nout)
            return fail(c, MINFER_ERR_MODEL, "split has %zu values for %zu outputs", sp.n, nout);
        for (size_t j = 0; j < nout; j++) {
            if (sp.v[j] < 0)
                return fail(c, MINFER_ERR_MODEL, "split[%zu] = %lld is negative", j,
                            (long long)sp.v[j]);
            if (!add_i64(sum, sp.v[j], &sum))
                return overflow(c);
        }
        if (n >= 0 && sum != n)
            return fail(c, MINFER_ERR_SHAPE, "split sums to %lld but the axis has %lld",
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
                return fail(c, MINFER_ERR_SHAPE, "axis of %lld does not split into %zu equal parts",
                            (long long)n, nout);
            d[axis] = n / (int64_t)nout;
        }
        if ((st = set_out(c, j, x->dtype, x->rank, d)))
            return st;
    }
    return MINFER_OK;
}

/* ---- Constants and generators ----------------------------------------- */

static minfer_status inf_constant(ictx *c) {
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
            return fail(c, MINFER_ERR_MODEL, "attribute value is not a tensor");
        if (t->view.rank < 0 || t->view.rank > MINFER_MAX_RANK)
            return fail(c, MINFER_ERR_MODEL, "value has rank %d", (int)t->view.rank);
        return set_out(c, 0, t->view.dtype, t->view.rank, t->view.dims);
    }
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        int64_t n;
        if (!(a = mf_node_attr(c->node, forms[i].name)))
            continue;
        if (a->type != forms[i].type)
            return fail(c, MINFER_ERR_MODEL, "attribute %s has the wrong type", forms[i].name);
        n = (int64_t)a->count;
        return set_out(c, 0, forms[i].dtype, forms[i].list, &n);
    }
    /* sparse_value and anything newer: left to the run. */
    return MINFER_OK;
}

static minfer_status inf_constant_of_shape(ictx *c) {
    const mf_attr *a = mf_node_attr(c->node, "value");
    int32_t dt = MINFER_DTYPE_FLOAT;
    int_list s;
    minfer_status st;
    if (a) {
        if (a->type != MINFER_ATTR_TENSOR || !a->t)
            return fail(c, MINFER_ERR_MODEL, "attribute value is not a tensor");
        dt = a->t->view.dtype;
    }
    if ((st = read_ints(c, 0, "shape", &s)))
        return st;
    if (s.state == LIST_ABSENT)
        return fail(c, MINFER_ERR_MODEL, "required input 0 is missing");
    if (s.state == LIST_UNKNOWN) {
        if (s.len > MINFER_MAX_RANK)
            return fail(c, MINFER_ERR_LIMIT, "shape has %lld dims, more than %d",
                        (long long)s.len, MINFER_MAX_RANK);
        return set_out(c, 0, dt, s.len < 0 ? -1 : (int32_t)s.len, NULL);
    }
    if (s.n > MINFER_MAX_RANK)
        return fail(c, MINFER_ERR_LIMIT, "shape has %zu dims, more than %d", s.n,
                    MINFER_MAX_RANK);
    for (size_t i = 0; i < s.n; i++)
        if (s.v[i] < 0)
            return fail(c, MINFER_ERR_SHAPE, "shape has negative dim %lld", (long long)s.v[i]);
    return set_out(c, 0, dt, (int32_t)s.n, s.v);
}

/* The scalar contents of input i as a double (for floating types) or an
 * int64; *known is 0 when the contents are not there. */
static minfer_status read_scalar(ictx *c, size_t i, int *is_float, double *f, int64_t *n,
                                 int *known) {
    const minfer_tensor_view *v = input(c, i);
    const unsigned char *p;
    size_t esz;
    *known = 0;
    if (!v)
        return fail(c, MINFER_ERR_MODEL, "required input %zu is missing", i);
    if (v->rank > 0 && static_len(v) >= 0 && static_len(v) != 1)
        return fail(c, MINFER_ERR_SHAPE, "input %zu must be a scalar", i);
    if (!v->data)
        return MINFER_OK;
    esz = dtype_bytes(v->dtype);
    if (!esz || v->nbytes < esz)
        return v->dtype ? fail(c, MINFER_ERR_MODEL, "input %zu holds too few bytes", i)
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

static minfer_status inf_range(ictx *c) {
    int fl[3] = {0}, known[3];
    double f[3] = {0};
    int64_t n[3] = {0}, len = -1;
    minfer_status st;
    for (size_t i = 0; i < 3; i++)
        if ((st = read_scalar(c, i, &fl[i], &f[i], &n[i], &known[i])))
            return st;
    if ((st = same_type(c, input(c, 0), "start", input(c, 1), "limit")) ||
        (st = same_type(c, input(c, 0), "start", input(c, 2), "delta")))
        return st;
    if (known[0] && known[1] && known[2]) {
        if (fl[0]) {
            double q;
            if (f[2] == 0)
                return fail(c, MINFER_ERR_MODEL, "delta is 0");
            q = ceil((f[1] - f[0]) / f[2]);
            if (!(q < 9.2e18)) /* also catches NaN */
                return q != q ? fail(c, MINFER_ERR_MODEL, "start, limit or delta is NaN")
                              : fail(c, MINFER_ERR_LIMIT, "Range would have %g elements", q);
            len = q > 0 ? (int64_t)q : 0;
        } else {
            int64_t diff;
            if (n[2] == 0)
                return fail(c, MINFER_ERR_MODEL, "delta is 0");
            if (!sub_i64(n[1], n[0], &diff))
                return overflow(c);
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
    return set_out(c, 0, input(c, 0)->dtype, 1, &len);
}

/* ---- The rule table ---------------------------------------------------- */

typedef minfer_status (*infer_fn)(ictx *c);

/* ---- Ops of the conformance work (indexing, quantization, losses...) -------- */

/* Output 0 takes input 0's shape and the type given (0: input 0's). */
static minfer_status shape_of_x(ictx *c, int32_t dtype) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    return st ? st : set_out(c, 0, dtype ? dtype : x->dtype, x->rank, x->dims);
}

static minfer_status inf_eyelike(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (x->rank >= 0 && x->rank != 2)
        return fail(c, MINFER_ERR_SHAPE, "input must be 2-D, not rank %d", (int)x->rank);
    return shape_of_x(c, (int32_t)mf_attr_int(c->node, "dtype", 0));
}

static minfer_status inf_quantize(ictx *c) {
    const minfer_tensor_view *zp = input(c, 2);
    return shape_of_x(c, zp && zp->dtype ? zp->dtype : MINFER_DTYPE_UINT8);
}

static minfer_status inf_dequantize(ictx *c) {
    const minfer_tensor_view *scale;
    minfer_status st = require(c, 1, &scale);
    return st ? st : shape_of_x(c, scale->dtype ? scale->dtype : MINFER_DTYPE_FLOAT);
}

/* Scatter, ScatterElements, ScatterND: the data's type and shape. */
static minfer_status inf_scatter(ictx *c) {
    const minfer_tensor_view *x, *upd;
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = require(c, 2, &upd)) ||
        (st = same_type(c, x, "data", upd, "updates")))
        return st;
    return same_as(c, 0, x);
}

static minfer_status inf_depth_space(ictx *c) {
    const minfer_tensor_view *x;
    int64_t b = mf_attr_int(c->node, "blocksize", 0), d[4];
    int to_space = !strcmp(c->op, "DepthToSpace");
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (b < 1)
        return fail(c, MINFER_ERR_MODEL, "blocksize must be positive");
    if (x->rank < 0)
        return set_out(c, 0, x->dtype, 4, NULL);
    if (x->rank != 4)
        return fail(c, MINFER_ERR_SHAPE, "input must be 4-D, not rank %d", (int)x->rank);
    d[0] = x->dims[0];
    if (to_space) {
        int64_t bb;
        if (!mul_nn(b, b, &bb))
            return overflow(c);
        if (x->dims[1] >= 0 && x->dims[1] % bb)
            return fail(c, MINFER_ERR_SHAPE, "channels %lld not divisible by blocksize^2",
                        (long long)x->dims[1]);
        d[1] = x->dims[1] < 0 ? -1 : x->dims[1] / bb;
        if ((x->dims[2] >= 0 && !mul_nn(x->dims[2], b, &d[2])) ||
            (x->dims[3] >= 0 && !mul_nn(x->dims[3], b, &d[3])))
            return overflow(c);
        d[2] = x->dims[2] < 0 ? -1 : d[2];
        d[3] = x->dims[3] < 0 ? -1 : d[3];
    } else {
        for (int i = 2; i < 4; i++)
            if (x->dims[i] >= 0 && x->dims[i] % b)
                return fail(c, MINFER_ERR_SHAPE, "spatial dim %lld not divisible by blocksize",
                            (long long)x->dims[i]);
        int64_t bb;
        if (!mul_nn(b, b, &bb) || (x->dims[1] >= 0 && !mul_nn(x->dims[1], bb, &d[1])))
            return overflow(c);
        d[1] = x->dims[1] < 0 ? -1 : d[1];
        d[2] = x->dims[2] < 0 ? -1 : x->dims[2] / b;
        d[3] = x->dims[3] < 0 ? -1 : x->dims[3] / b;
    }
    return set_out(c, 0, x->dtype, 4, d);
}

static minfer_status inf_det(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (x->rank < 0)
        return set_out(c, 0, x->dtype, -1, NULL);
    if (x->rank < 2)
        return fail(c, MINFER_ERR_SHAPE, "input must have rank >= 2");
    return set_out(c, 0, x->dtype, x->rank - 2, x->dims);
}

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: [N, d...] for
 * reduction "none", else a scalar; SCE's log_prob has the scores' shape. */
static minfer_status inf_loss(ictx *c) {
    const minfer_tensor_view *x, *t;
    int none = !strcmp(mf_attr_string(c->node, "reduction", "mean"), "none");
    minfer_status st;
    if ((st = require(c, 0, &x)) || (st = require(c, 1, &t)))
        return st;
    if ((st = none ? set_out(c, 0, x->dtype, t->rank, t->dims) : set_out(c, 0, x->dtype, 0, NULL)))
        return st;
    return set_out(c, 1, x->dtype, x->rank, x->dims);
}

static minfer_status inf_same_type_shape(ictx *c) {
    return shape_of_x(c, 0);
}

/* ---- Strings, text, signal and random ops ----------------------------------- */

/* StringNormalizer: [C] -> [C'] or [1, C] -> [1, C'], C' known only at run time. */
static minfer_status inf_string_normalizer(ictx *c) {
    const minfer_tensor_view *x;
    int64_t d[2] = {1, -1};
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (x->dtype && x->dtype != MINFER_DTYPE_STRING)
        return fail(c, MINFER_ERR_TYPE, "input must be string, not %s", dtype_name(x->dtype));
    if (x->rank == 1)
        return set_out(c, 0, MINFER_DTYPE_STRING, 1, d + 1);
    if (x->rank == 2) {
        if (x->dims[0] > 1)
            return fail(c, MINFER_ERR_SHAPE, "input must be [C] or [1, C]");
        return set_out(c, 0, MINFER_DTYPE_STRING, 2, d);
    }
    if (x->rank >= 0)
        return fail(c, MINFER_ERR_SHAPE, "input must be [C] or [1, C], not rank %d", (int)x->rank);
    return set_out(c, 0, MINFER_DTYPE_STRING, -1, NULL);
}

/* TfIdfVectorizer: [C] -> [max(ngram_indexes) + 1], [N, C] -> [N, ...]. */
static minfer_status inf_tfidf(ictx *c) {
    const minfer_tensor_view *x;
    const int64_t *idx = NULL;
    int64_t width = 0, d[2];
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    size_t n = mf_attr_ints(c->node, "ngram_indexes", &idx);
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= INT64_MAX / 2)
            return fail(c, MINFER_ERR_MODEL, "ngram_indexes holds %lld", (long long)idx[i]);
        if (idx[i] + 1 > width)
            width = idx[i] + 1;
    }
    if (x->rank == 1)
        return set_out(c, 0, MINFER_DTYPE_FLOAT, 1, &width);
    if (x->rank == 2) {
        d[0] = x->dims[0];
        d[1] = width;
        return set_out(c, 0, MINFER_DTYPE_FLOAT, 2, d);
    }
    if (x->rank >= 0)
        return fail(c, MINFER_ERR_SHAPE, "input must be [C] or [N, C], not rank %d", (int)x->rank);
    return set_out(c, 0, MINFER_DTYPE_FLOAT, -1, NULL);
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] when both are known. */
static minfer_status inf_melweight(ictx *c) {
    int fl[2] = {0}, known[2];
    double f[2];
    int64_t n[2] = {0}, d[2] = {-1, -1};
    minfer_status st;
    for (size_t i = 0; i < 2; i++)
        if ((st = read_scalar(c, i, &fl[i], &f[i], &n[i], &known[i])))
            return st;
    if (known[0] && !fl[0]) {
        if (n[0] <= 0)
            return fail(c, MINFER_ERR_MODEL, "num_mel_bins must be positive");
        d[1] = n[0];
    }
    if (known[1] && !fl[1]) {
        if (n[1] <= 0)
            return fail(c, MINFER_ERR_MODEL, "dft_length must be positive");
        d[0] = n[1] / 2 + 1;
    }
    return set_out(c, 0, (int32_t)mf_attr_int(c->node, "output_datatype", MINFER_DTYPE_FLOAT), 2,
                   d);
}

/* RandomUniform, RandomNormal: the shape attribute, dtype (float by default). */
static minfer_status inf_random(ictx *c) {
    int_list s = {0};
    minfer_status st = attr_list(c, "shape", &s);
    if (st)
        return st;
    if (s.state == LIST_ABSENT)
        return fail(c, MINFER_ERR_MODEL, "attribute 'shape' is missing");
    if (s.n > MINFER_MAX_RANK)
        return fail(c, MINFER_ERR_LIMIT, "shape has %zu dims, more than %d", s.n, MINFER_MAX_RANK);
    for (size_t i = 0; i < s.n; i++)
        if (s.v[i] < 0)
            return fail(c, MINFER_ERR_SHAPE, "shape has negative dim %lld", (long long)s.v[i]);
    return set_out(c, 0, (int32_t)mf_attr_int(c->node, "dtype", MINFER_DTYPE_FLOAT),
                   (int32_t)s.n, s.v);
}

/* RandomUniformLike, RandomNormalLike, Bernoulli: input 0's shape; dtype,
 * else input 0's type. */
static minfer_status inf_random_like(ictx *c) {
    return shape_of_x(c, (int32_t)mf_attr_int(c->node, "dtype", 0));
}

/* Multinomial: [batch, classes] -> [batch, sample_size], int32 by default. */
static minfer_status inf_multinomial(ictx *c) {
    const minfer_tensor_view *x;
    int64_t d[2] = {-1, mf_attr_int(c->node, "sample_size", 1)};
    minfer_status st = require(c, 0, &x);
    if (st)
        return st;
    if (x->rank >= 0 && x->rank != 2)
        return fail(c, MINFER_ERR_SHAPE, "input must be 2-D, not rank %d", (int)x->rank);
    if (d[1] < 1)
        return fail(c, MINFER_ERR_MODEL, "sample_size must be positive");
    if (x->rank == 2)
        d[0] = x->dims[0];
    return set_out(c, 0, (int32_t)mf_attr_int(c->node, "dtype", MINFER_DTYPE_INT32), 2, d);
}

static const struct rule {
    const char *op;
    infer_fn fn;
} rules[] = {
    {"Abs", inf_unary},
    {"Acos", inf_unary},
    {"Add", inf_binary},
    {"And", inf_binary},
    {"ArgMax", inf_reduce},
    {"ArgMin", inf_reduce},
    {"Asin", inf_unary},
    {"Atan", inf_unary},
    {"AveragePool", inf_pool},
    {"BatchNormalization", inf_batchnorm},
    {"Bernoulli", inf_random_like},
    {"BitShift", inf_binary},
    {"Cast", inf_cast},
    {"CastLike", inf_cast},
    {"Ceil", inf_unary},
    {"Celu", inf_unary},
    {"Clip", inf_clip},
    {"Concat", inf_concat},
    {"Constant", inf_constant},
    {"ConstantOfShape", inf_constant_of_shape},
    {"Conv", inf_conv},
    {"ConvTranspose", inf_conv},
    {"Cos", inf_unary},
    {"CumSum", inf_same_type_shape},
    {"DepthToSpace", inf_depth_space},
    {"DequantizeLinear", inf_dequantize},
    {"Det", inf_det},
    {"Div", inf_binary},
    {"Dropout", inf_dropout},
    {"Einsum", inf_einsum},
    {"Elu", inf_unary},
    {"Equal", inf_binary},
    {"Erf", inf_unary},
    {"Exp", inf_unary},
    {"Expand", inf_expand},
    {"EyeLike", inf_eyelike},
    {"Flatten", inf_flatten},
    {"Floor", inf_unary},
    {"Gather", inf_gather},
    {"GatherElements", inf_gather},
    {"Gelu", inf_unary},
    {"Gemm", inf_gemm},
    {"GlobalAveragePool", inf_global_pool},
    {"GlobalMaxPool", inf_global_pool},
    {"Greater", inf_binary},
    {"GreaterOrEqual", inf_binary},
    {"HardSigmoid", inf_unary},
    {"HardSwish", inf_unary},
    {"Hardmax", inf_softmax},
    {"Identity", inf_unary},
    {"InstanceNormalization", inf_same_type_shape},
    {"IsInf", inf_unary_bool},
    {"IsNaN", inf_unary_bool},
    {"LRN", inf_same_type_shape},
    {"LayerNormalization", inf_layernorm},
    {"LeakyRelu", inf_unary},
    {"Less", inf_binary},
    {"LessOrEqual", inf_binary},
    {"Log", inf_unary},
    {"LogSoftmax", inf_softmax},
    {"LpPool", inf_pool},
    {"MatMul", inf_matmul},
    {"Max", inf_variadic},
    {"MaxPool", inf_pool},
    {"Mean", inf_variadic},
    {"MeanVarianceNormalization", inf_same_type_shape},
    {"MelWeightMatrix", inf_melweight},
    {"Min", inf_variadic},
    {"Mish", inf_unary},
    {"Mod", inf_binary},
    {"Mul", inf_binary},
    {"Multinomial", inf_multinomial},
    {"Neg", inf_unary},
    {"NegativeLogLikelihoodLoss", inf_loss},
    {"Not", inf_not},
    {"Or", inf_binary},
    {"PRelu", inf_prelu},
    {"Pad", inf_pad},
    {"Pow", inf_binary},
    {"QuantizeLinear", inf_quantize},
    {"RandomNormal", inf_random},
    {"RandomNormalLike", inf_random_like},
    {"RandomUniform", inf_random},
    {"RandomUniformLike", inf_random_like},
    {"Range", inf_range},
    {"Reciprocal", inf_unary},
    {"ReduceL1", inf_reduce},
    {"ReduceL2", inf_reduce},
    {"ReduceLogSum", inf_reduce},
    {"ReduceLogSumExp", inf_reduce},
    {"ReduceMax", inf_reduce},
    {"ReduceMean", inf_reduce},
    {"ReduceMin", inf_reduce},
    {"ReduceProd", inf_reduce},
    {"ReduceSum", inf_reduce},
    {"ReduceSumSquare", inf_reduce},
    {"Relu", inf_unary},
    {"Reshape", inf_reshape},
    {"ReverseSequence", inf_same_type_shape},
    {"Round", inf_unary},
    {"Scatter", inf_scatter},
    {"ScatterElements", inf_scatter},
    {"ScatterND", inf_scatter},
    {"Selu", inf_unary},
    {"Shape", inf_shape},
    {"Shrink", inf_unary},
    {"Sigmoid", inf_unary},
    {"Sign", inf_unary},
    {"Sin", inf_unary},
    {"Size", inf_size},
    {"Slice", inf_slice},
    {"Softmax", inf_softmax},
    {"SoftmaxCrossEntropyLoss", inf_loss},
    {"Softplus", inf_unary},
    {"Softsign", inf_unary},
    {"SpaceToDepth", inf_depth_space},
    {"Split", inf_split},
    {"Sqrt", inf_unary},
    {"Squeeze", inf_squeeze},
    {"StringNormalizer", inf_string_normalizer},
    {"Sub", inf_binary},
    {"Sum", inf_variadic},
    {"Tan", inf_unary},
    {"Tanh", inf_unary},
    {"TfIdfVectorizer", inf_tfidf},
    {"Tile", inf_tile},
    {"Transpose", inf_transpose},
    {"Trilu", inf_same_type_shape},
    {"Unsqueeze", inf_unsqueeze},
    {"Where", inf_where},
    {"Xor", inf_binary},
};

static int cmp_rule(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const struct rule *)elem)->op);
}

static const struct rule *find_rule(const char *domain, const char *op) {
    if (!op || (domain && domain[0] && strcmp(domain, "ai.onnx")))
        return NULL;
    /* rules[] is sorted by strcmp: test_unknown_op_and_known looks up every entry. */
    for (size_t lo = 0, hi = sizeof rules / sizeof rules[0]; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        int k = cmp_rule(op, &rules[mid]);
        if (k == 0)
            return &rules[mid];
        if (k < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* ai.onnx.preview.training's optimizers: R, T, then groups of n tensors
 * (Adagrad X, G, H; Momentum X, G, V; Adam X, G, V, H); the outputs are the
 * groups but G, each output typed and shaped as its input. */
static int training_groups(const char *op) {
    return strcmp(op, "Adam") == 0 ? 4
           : strcmp(op, "Adagrad") == 0 || strcmp(op, "Momentum") == 0 ? 3
                                                                       : 0;
}

static minfer_status infer_training(const mf_node *node, const minfer_tensor_view *in,
                                    size_t n_in, minfer_tensor_view *out, size_t n_out, char *err,
                                    size_t err_size) {
    size_t groups = (size_t)training_groups(node->op_type);
    if (!groups)
        return MINFER_OK; /* Gradient is expanded before inference */
    if (n_in < 2 || (n_in - 2) % groups || n_out != (n_in - 2) / groups * (groups - 1)) {
        snprintf(err, err_size, "%zu inputs and %zu outputs do not make groups of %zu tensors",
                 n_in, n_out, groups);
        return MINFER_ERR_MODEL;
    }
    size_t n = (n_in - 2) / groups;
    for (size_t o = 0; o < n_out; o++) {
        size_t group = o / n, k = o % n, src = 2 + (group == 0 ? 0 : group + 1) * n + k;
        if (src < n_in && node->inputs[src] >= 0) {
            out[o] = in[src];
            out[o].data = NULL;
            out[o].nbytes = 0;
            out[o].layout = 0;
        }
    }
    return MINFER_OK;
}

int mf_infer_known(const char *domain, const char *op_type) {
    if (domain && strcmp(domain, "minfer") == 0) /* the optimizer's fused ops */
        return mf_infer_minfer_known(op_type);
    if (domain && strcmp(domain, "ai.onnx.preview.training") == 0)
        return training_groups(op_type) > 0;
    return find_rule(domain, op_type) != NULL;
}

minfer_status mf_infer_node(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                            minfer_tensor_view *out, size_t n_out, char *err, size_t err_size) {
    ictx c;
    const struct rule *rule;
    if (err && err_size)
        err[0] = '\0';
    for (size_t j = 0; out && j < n_out; j++) {
        memset(&out[j], 0, sizeof out[j]);
        out[j].rank = -1;
    }
    c.node = node;
    c.op = node ? node->op_type : NULL;
    c.opset = node && node->opset > 0 ? node->opset : DEFAULT_OPSET;
    c.in = in;
    c.n_in = in ? n_in : 0;
    c.out = out;
    c.n_out = out ? n_out : 0;
    c.err = err;
    c.err_size = err_size;
    if (!node || !node->op_type)
        return fail(&c, MINFER_ERR_INVALID_ARG, "no node");
    for (size_t i = 0; i < c.n_in; i++) {
        const minfer_tensor_view *v = input(&c, i);
        if (!v)
            continue;
        if (v->rank < -1 || v->rank > MINFER_MAX_RANK)
            return fail(&c, MINFER_ERR_MODEL, "input %zu has rank %d", i, (int)v->rank);
        for (int32_t k = 0; k < v->rank; k++)
            if (v->dims[k] < -1)
                return fail(&c, MINFER_ERR_MODEL, "input %zu has dimension %lld", i,
                            (long long)v->dims[k]);
    }
    if (node->domain && strcmp(node->domain, "minfer") == 0) /* the optimizer's fused ops */
        return mf_infer_minfer_node(node, in, n_in, out, n_out, err, err_size);
    if (node->domain && strcmp(node->domain, "ai.onnx.preview.training") == 0)
        return infer_training(node, in, c.n_in, out, c.n_out, err, err_size);
    rule = find_rule(node->domain, node->op_type);
    if (!rule)
        return MINFER_OK;
    return rule->fn(&c);
}
