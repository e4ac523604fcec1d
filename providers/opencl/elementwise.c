/*
 * Elementwise ops: the unary family and Clip (one kernel, an op code and
 * two parameters), binary ops with numpy broadcasting (a flat vector kernel
 * for equal shapes or a scalar operand, a strided one otherwise), the
 * variadic Sum/Max/Min/Mean as a chain of binary steps, and
 * BatchNormalization folded at prepare into a per-channel scale and shift.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

/* ---- Unary ------------------------------------------------------------- */

typedef struct unary_state {
    ocl_state_head head;
    int op;
    float a, b;
} unary_state;

static const struct {
    const char *name;
    int op;
    float a, b; /* defaults of the attributes read below */
} unary_ops[] = {
    {"Relu", OCL_ACT_RELU, 0, 0},       {"Sigmoid", OCL_ACT_SIGMOID, 0, 0},
    {"Tanh", OCL_ACT_TANH, 0, 0},       {"Exp", OCL_ACT_EXP, 0, 0},
    {"Log", OCL_ACT_LOG, 0, 0},         {"Sqrt", OCL_ACT_SQRT, 0, 0},
    {"Abs", OCL_ACT_ABS, 0, 0},         {"Neg", OCL_ACT_NEG, 0, 0},
    {"Reciprocal", OCL_ACT_RECIP, 0, 0}, {"Floor", OCL_ACT_FLOOR, 0, 0},
    {"Ceil", OCL_ACT_CEIL, 0, 0},       {"Erf", OCL_ACT_ERF, 0, 0},
    {"Softplus", OCL_ACT_SOFTPLUS, 0, 0}, {"Softsign", OCL_ACT_SOFTSIGN, 0, 0},
    {"Sin", OCL_ACT_SIN, 0, 0},         {"Cos", OCL_ACT_COS, 0, 0},
    {"Tan", OCL_ACT_TAN, 0, 0},         {"Atan", OCL_ACT_ATAN, 0, 0},
    {"Round", OCL_ACT_ROUND, 0, 0},     {"Sign", OCL_ACT_SIGN, 0, 0},
    {"HardSwish", OCL_ACT_HARDSWISH, 0, 0}, {"LeakyRelu", OCL_ACT_LEAKYRELU, 0.01f, 0},
    {"Elu", OCL_ACT_ELU, 1.0f, 0},
    {"Selu", OCL_ACT_SELU, 1.67326319217681884765625f, 1.05070102214813232421875f},
    {"HardSigmoid", OCL_ACT_HARDSIGMOID, 0.2f, 0.5f},
    {"ThresholdedRelu", OCL_ACT_THRESHOLDED, 1.0f, 0}, {"Gelu", OCL_ACT_GELU, 0, 0},
};

minfer_status ocl_prepare_unary(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    if (!ocl_in_desc(n, 0))
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    minfer_status s = ocl_need_float(p, 0);
    if (s)
        return s;
    unary_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    size_t i;
    for (i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (strcmp(unary_ops[i].name, n->op_type) == 0)
            break;
    if (i == sizeof unary_ops / sizeof unary_ops[0])
        return ocl_decline(p, "not a unary op of this provider");
    st->op = unary_ops[i].op;
    st->a = unary_ops[i].a;
    st->b = unary_ops[i].b;
    switch (st->op) {
    case OCL_ACT_SELU:
        st->a = ocl_attr_float(p, "alpha", st->a);
        st->b = ocl_attr_float(p, "gamma", st->b);
        break;
    case OCL_ACT_HARDSIGMOID:
        st->a = ocl_attr_float(p, "alpha", st->a);
        st->b = ocl_attr_float(p, "beta", st->b);
        break;
    case OCL_ACT_LEAKYRELU:
    case OCL_ACT_ELU:
    case OCL_ACT_THRESHOLDED:
        st->a = ocl_attr_float(p, "alpha", st->a);
        break;
    case OCL_ACT_GELU: {
        const char *ap = ocl_attr_str(p, "approximate", "none");
        if (strcmp(ap, "tanh") == 0)
            st->op = OCL_ACT_GELU_TANH;
        else if (strcmp(ap, "none") != 0)
            return ocl_decline(p, "approximate '%s' not supported", ap);
        break;
    }
    default:
        break;
    }
    return ocl_check_size(p, ocl_in_desc(n, 0));
}

minfer_status ocl_execute_unary(const ocl_exec *e) {
    const unary_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    cl_mem xb, yb;
    cl_int xo, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    minfer_status s = ocl_output(e, 0, x->rank, x->dims, &yb, &yo);
    if (s)
        return s;
    return ocl_run_unary(e, xb, xo, yb, yo, (size_t)ocl_numel(x->rank, x->dims), st->op, st->a,
                         st->b);
}

/* ---- Clip ----------------------------------------------------------------- */

minfer_status ocl_prepare_clip(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    if (!ocl_in_desc(n, 0))
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    minfer_status s = ocl_need_float(p, 0);
    if (s)
        return s;
    unary_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->op = OCL_ACT_CLIP;
    st->a = -INFINITY;
    st->b = INFINITY;
    if (p->since < 11) {
        st->a = ocl_attr_float(p, "min", st->a);
        st->b = ocl_attr_float(p, "max", st->b);
    } else {
        for (size_t i = 1; i <= 2; i++) {
            const minfer_value_desc *d = ocl_in_desc(n, i);
            if (!d)
                continue;
            if (d->dtype != MINFER_DTYPE_FLOAT)
                return ocl_decline(p, "min/max must be float");
            if (!d->const_data)
                return ocl_decline(p, "min/max must be constants");
            if (d->const_nbytes != 4)
                return ocl_prep_fail(p, MINFER_ERR_MODEL, "min/max must be scalars");
            memcpy(i == 1 ? &st->a : &st->b, d->const_data, 4);
        }
    }
    return ocl_check_size(p, ocl_in_desc(n, 0));
}

/* ---- Binary --------------------------------------------------------------- */

typedef struct binary_state {
    ocl_state_head head; /* bufs[i]: input i when it is a constant */
    int op;
    int n_in;
    int mean;
} binary_state;

static int binary_code(const char *op) {
    static const char *const names[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min",
                                        "PRelu"};
    for (int i = 0; i < 8; i++)
        if (strcmp(names[i], op) == 0)
            return i;
    if (strcmp(op, "Sum") == 0 || strcmp(op, "Mean") == 0)
        return OCL_BIN_ADD;
    return -1;
}

static minfer_status prepare_binary_like(ocl_prep *p, int variadic) {
    const minfer_node_desc *n = p->node;
    binary_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->op = binary_code(n->op_type);
    st->n_in = (int)n->n_inputs;
    st->mean = strcmp(n->op_type, "Mean") == 0;
    if (st->op < 0)
        return ocl_decline(p, "not a binary op of this provider");
    if ((!variadic && n->n_inputs != 2) || n->n_inputs < 1)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "wrong number of inputs");
    if (n->n_inputs > OCL_STATE_BUFS)
        return ocl_decline(p, "more than %d inputs", OCL_STATE_BUFS);
    minfer_status s;
    for (size_t i = 0; i < n->n_inputs; i++) {
        if (!ocl_in_desc(n, i))
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "input %zu missing", i);
        if ((s = ocl_need_float(p, i)) || (s = ocl_check_size(p, ocl_in_desc(n, i))))
            return s;
    }
    if ((s = ocl_check_size(p, &n->outputs[0])))
        return s;
    if (!p->prep)
        return MINFER_OK;
    for (size_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i].const_data &&
            (s = ocl_upload_floats(p, (int)i, n->inputs[i].const_data,
                                               n->inputs[i].const_nbytes / 4)))
            return s;
    return MINFER_OK;
}

minfer_status ocl_prepare_binary(ocl_prep *p) { return prepare_binary_like(p, 0); }
minfer_status ocl_prepare_variadic(ocl_prep *p) { return prepare_binary_like(p, 1); }

/* y (out shape) = a op b, each broadcast to the output shape. */
static minfer_status run_binary(const ocl_exec *e, int op, const minfer_tensor_view *av,
                                cl_mem ab, cl_int ao, const minfer_tensor_view *bv, cl_mem bb,
                                cl_int bo, int32_t rank, const int64_t *od, cl_mem yb,
                                cl_int yo) {
    int64_t n = ocl_numel(rank, od), na = ocl_numel(av->rank, av->dims),
            nb = ocl_numel(bv->rank, bv->dims);
    if (n == 0)
        return MINFER_OK;
    int same_a = na == n && av->rank == rank, same_b = nb == n && bv->rank == rank;
    for (int32_t i = 0; i < rank; i++) {
        same_a = same_a && av->dims[i] == od[i];
        same_b = same_b && bv->dims[i] == od[i];
    }
    if ((same_a || na == 1) && (same_b || nb == 1) && !(na == 1 && nb == 1 && n > 1)) {
        cl_int ni = (cl_int)n, opi = op, sa = !same_a, sb = !same_b;
        minfer_status s = ocl_set_args(e, OCL_K_binary_flat, 10, OCL_ARG(ab), OCL_ARG(ao),
                                       OCL_ARG(bb), OCL_ARG(bo), OCL_ARG(yb), OCL_ARG(yo),
                                       OCL_ARG(ni), OCL_ARG(opi), OCL_ARG(sa), OCL_ARG(sb));
        if (s)
            return s;
        return ocl_launch1(e, OCL_K_binary_flat, ((size_t)n + (size_t)e->ctx->vw - 1) /
                                                     (size_t)e->ctx->vw);
    }
    ocl_shape8 sh;
    memset(&sh, 0, sizeof sh);
    sh.rank = rank;
    const minfer_tensor_view *in[2] = {av, bv};
    for (int k = 0; k < 2; k++) {
        cl_int *str = k ? sh.sb : sh.sa, acc = 1;
        for (int32_t i = rank - 1; i >= 0; i--) {
            int32_t j = i - (rank - in[k]->rank);
            int64_t d = j >= 0 ? in[k]->dims[j] : 1;
            str[i] = d == 1 ? 0 : acc;
            acc *= (cl_int)d;
        }
    }
    for (int32_t i = 0; i < rank; i++)
        sh.d[i] = (cl_int)od[i];
    cl_int opi = op;
    minfer_status s = ocl_set_args(e, OCL_K_binary_bcast, 8, OCL_ARG(ab), OCL_ARG(ao),
                                   OCL_ARG(bb), OCL_ARG(bo), OCL_ARG(yb), OCL_ARG(yo),
                                   OCL_ARG(opi), OCL_ARG(sh));
    if (s)
        return s;
    size_t inner = (size_t)od[rank - 1];
    size_t g[2] = {inner, (size_t)n / inner};
    return ocl_launch(e, OCL_K_binary_bcast, 2, g, 0);
}

static int bcast_shape(int32_t ra, const int64_t *da, int32_t rb, const int64_t *db,
                       int32_t *rank, int64_t *dims) {
    int32_t r = ra > rb ? ra : rb;
    int64_t out[OCL_MAX_RANK]; /* dims may alias da */
    for (int32_t i = 0; i < r; i++) {
        int64_t x = i - (r - ra) >= 0 ? da[i - (r - ra)] : 1;
        int64_t y = i - (r - rb) >= 0 ? db[i - (r - rb)] : 1;
        if (x != y && x != 1 && y != 1)
            return -1;
        out[i] = x == 1 ? y : x;
    }
    memcpy(dims, out, sizeof(int64_t) * (size_t)r);
    *rank = r;
    return 0;
}

minfer_status ocl_execute_binary(const ocl_exec *e) {
    const binary_state *st = e->state;
    size_t nin = e->args->n_inputs;
    int32_t rank = 0;
    int64_t od[OCL_MAX_RANK] = {0}; /* gcc -O2 cannot see that rank 0 reads none */
    for (size_t i = 0; i < nin; i++) {
        const minfer_tensor_view *v = ocl_input(e, i);
        if (!v)
            return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input %zu", i);
        if (bcast_shape(rank, od, v->rank, v->dims, &rank, od))
            return ocl_fail(e, MINFER_ERR_SHAPE, "input %zu (rank %d, last dim %lld) does not "
                            "broadcast", i, (int)v->rank,
                            (long long)(v->rank > 0 ? v->dims[v->rank - 1] : 0));
    }
    cl_mem yb;
    cl_int yo;
    minfer_status s = ocl_output(e, 0, rank, od, &yb, &yo);
    if (s)
        return s;
    size_t n = (size_t)ocl_numel(rank, od);
    cl_mem ab, bb;
    cl_int ao, bo;
    ocl_in_buf(e, 0, 0, &ab, &ao);
    if (nin == 1) {
        if (ocl_numel(e->args->inputs[0].rank, e->args->inputs[0].dims) != (int64_t)n)
            return ocl_fail(e, MINFER_ERR_SHAPE, "single input of another size");
        size_t es = ocl_esize(e->ctx, MINFER_DTYPE_FLOAT);
        return ocl_copy(e, ab, (size_t)ao * es, yb, (size_t)yo * es, n * es);
    }
    minfer_tensor_view yv = e->args->outputs[0];
    const minfer_tensor_view *left = ocl_input(e, 0);
    for (size_t i = 1; i < nin; i++) {
        ocl_in_buf(e, i, (int)i, &bb, &bo);
        if ((s = run_binary(e, st->op, left, ab, ao, ocl_input(e, i), bb, bo, rank, od, yb, yo)))
            return s;
        left = &yv;
        ab = yb;
        ao = yo;
    }
    if (st->mean)
        return ocl_run_unary(e, yb, yo, yb, yo, n, OCL_ACT_SCALE, 1.0f / (float)nin, 0);
    return MINFER_OK;
}

minfer_status ocl_execute_variadic(const ocl_exec *e) { return ocl_execute_binary(e); }

/* ---- BatchNormalization ------------------------------------------------------ */

typedef struct bn_state {
    ocl_state_head head; /* bufs[0]: scale, bufs[1]: shift */
    int64_t channels;
} bn_state;

minfer_status ocl_prepare_batchnorm(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    if (n->n_inputs != 5)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs 5 inputs");
    if (ocl_attr_int(p, "training_mode", 0) != 0)
        return ocl_decline(p, "training_mode not supported");
    if (p->since < 9 && ocl_attr_int(p, "spatial", 1) == 0)
        return ocl_decline(p, "spatial=0 not supported");
    for (size_t i = 1; i < n->n_outputs; i++)
        if (n->outputs[i].name && n->outputs[i].name[0])
            return ocl_decline(p, "training outputs not supported");
    minfer_status s;
    for (size_t i = 0; i < 5; i++)
        if ((s = ocl_need_float(p, i)))
            return s;
    const minfer_value_desc *sc = &n->inputs[1];
    for (size_t i = 1; i < 5; i++)
        if (!n->inputs[i].const_data)
            return ocl_decline(p, "scale, B, mean and var must be constants");
    int64_t c = (int64_t)(sc->const_nbytes / 4);
    for (size_t i = 2; i < 5; i++)
        if ((int64_t)(n->inputs[i].const_nbytes / 4) != c)
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "parameter lengths differ");
    const minfer_value_desc *x = &n->inputs[0];
    if (x->rank >= 0 && (x->rank < 2 || (x->dims[1] >= 0 && x->dims[1] != c)))
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "X does not have %lld channels",
                             (long long)c);
    if ((s = ocl_check_size(p, x)))
        return s;
    bn_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->channels = c;
    if (!p->prep)
        return MINFER_OK;
    float eps = ocl_attr_float(p, "epsilon", 1e-5f);
    float *buf = malloc((size_t)(c ? c : 1) * 2 * sizeof *buf);
    if (!buf)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory");
    const float *g = n->inputs[1].const_data, *b = n->inputs[2].const_data,
                *m = n->inputs[3].const_data, *v = n->inputs[4].const_data;
    for (int64_t i = 0; i < c; i++) {
        double sc = (double)g[i] / sqrt((double)v[i] + (double)eps);
        buf[i] = (float)sc;
        buf[c + i] = (float)((double)b[i] - (double)m[i] * sc);
    }
    s = ocl_upload_floats(p, 0, buf, (size_t)c);
    if (!s)
        s = ocl_upload_floats(p, 1, buf + c, (size_t)c);
    free(buf);
    return s;
}

minfer_status ocl_execute_batchnorm(const ocl_exec *e) {
    const bn_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x || x->rank < 2 || x->dims[1] != st->channels)
        return ocl_fail(e, MINFER_ERR_SHAPE, "X does not have %lld channels",
                        (long long)st->channels);
    cl_mem xb, yb;
    cl_int xo, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    minfer_status s = ocl_output(e, 0, x->rank, x->dims, &yb, &yo);
    if (s)
        return s;
    cl_int C = (cl_int)st->channels, plane = (cl_int)ocl_numel(x->rank - 2, x->dims + 2);
    if ((s = ocl_set_args(e, OCL_K_channel_affine, 8, OCL_ARG(xb), OCL_ARG(xo),
                          OCL_ARG(st->head.bufs[0]), OCL_ARG(st->head.bufs[1]), OCL_ARG(yb),
                          OCL_ARG(yo), OCL_ARG(C), OCL_ARG(plane))))
        return s;
    size_t g[2] = {((size_t)plane + (size_t)e->ctx->vw - 1) / (size_t)e->ctx->vw,
                   (size_t)x->dims[0] * (size_t)C};
    return ocl_launch(e, OCL_K_channel_affine, 2, g, 0);
}

minfer_status ocl_execute_clip(const ocl_exec *e) { return ocl_execute_unary(e); }

/* ---- FusedElementwise --------------------------------------------------- */

/* minfer:FusedElementwise(X, operands...): fuse_elementwise's run of
 * element-wise ops in one kernel (elementwise_chain). Attributes: ops
 * (the op names, comma-separated), params (two per step), operand (per
 * step: the input index of a binary step's other operand, 0 for a unary
 * one) and swap (1 where that operand is the left one). Each operand is
 * one element, X's shape, a vector along axis 1 or along the last axis
 * (found from the shapes at run time). */
#define OCL_CHAIN_STEPS 8 /* CHAIN_STEPS in kernels/elementwise.cl */
#define OCL_CHAIN_OPERANDS 4

/* The chain8 struct of kernels/elementwise.cl (passed by value). */
typedef struct ocl_chain8 {
    cl_int n;
    cl_int op[OCL_CHAIN_STEPS], kind[OCL_CHAIN_STEPS], src[OCL_CHAIN_STEPS];
    cl_int mode[OCL_CHAIN_OPERANDS];
    cl_float a[OCL_CHAIN_STEPS], b[OCL_CHAIN_STEPS];
    cl_int C, inner, D;
} ocl_chain8;

typedef struct chain_state {
    ocl_state_head head; /* bufs[i]: input i when it is a constant */
    ocl_chain8 c;
    int n_in;
} chain_state;

/* The unary op code of name (unary_ops, or Clip), or -1. */
static int chain_unary_code(const char *name, size_t len) {
    if (len == 4 && strncmp(name, "Clip", 4) == 0)
        return OCL_ACT_CLIP;
    for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
        if (strlen(unary_ops[i].name) == len && strncmp(unary_ops[i].name, name, len) == 0)
            return unary_ops[i].op;
    return -1;
}

minfer_status ocl_prepare_fused_elementwise(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    if (n->n_inputs < 1 || n->n_inputs > 1 + OCL_CHAIN_OPERANDS)
        return ocl_decline(p, "%zu inputs (1 to %d)", n->n_inputs, 1 + OCL_CHAIN_OPERANDS);
    minfer_status s;
    for (size_t i = 0; i < n->n_inputs; i++) {
        if (!ocl_in_desc(n, i))
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "input %zu missing", i);
        if ((s = ocl_need_float(p, i)) || (s = ocl_check_size(p, ocl_in_desc(n, i))))
            return s;
    }
    chain_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->n_in = (int)n->n_inputs;
    const char *ops = ocl_attr_str(p, "ops", "");
    const float *params = NULL;
    size_t np = minfer_kit_attr_floats_ref(p->ctx->api, n, "params", &params);
    int64_t operand[OCL_CHAIN_STEPS], swap[OCL_CHAIN_STEPS];
    size_t no = 0, ns = 0;
    if (ocl_attr_ints(p, "operand", operand, OCL_CHAIN_STEPS, &no) < 0 ||
        ocl_attr_ints(p, "swap", swap, OCL_CHAIN_STEPS, &ns) < 0)
        return ocl_decline(p, "more than %d steps", OCL_CHAIN_STEPS);
    int k = 0;
    for (const char *q = ops; *q; k++) {
        const char *end = strchr(q, ',');
        size_t len = end ? (size_t)(end - q) : strlen(q);
        if (k == OCL_CHAIN_STEPS)
            return ocl_decline(p, "more than %d steps", OCL_CHAIN_STEPS);
        if (len >= 32)
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "op name too long in ops '%s'", ops);
        char name[32];
        memcpy(name, q, len);
        name[len] = 0;
        int code = chain_unary_code(q, len);
        if ((size_t)k >= no || (size_t)k >= ns || (size_t)(2 * k + 1) >= np ||
            operand[k] < 0 || operand[k] >= (int64_t)n->n_inputs)
            return ocl_prep_fail(p, MINFER_ERR_MODEL,
                                 "step %d (%s): operand, swap or params missing or wrong", k,
                                 name);
        st->c.a[k] = params[2 * k];
        st->c.b[k] = params[2 * k + 1];
        if (code >= 0) {
            if (operand[k] != 0)
                return ocl_prep_fail(p, MINFER_ERR_MODEL, "step %d (%s) takes no operand", k,
                                     name);
            st->c.kind[k] = 0;
            st->c.op[k] = code;
        } else {
            code = binary_code(name);
            if (code < 0 || strcmp(name, "Sum") == 0 || strcmp(name, "Mean") == 0)
                return ocl_decline(p, "step %d: '%s' is not an op of a chain", k, name);
            if (operand[k] < 1)
                return ocl_prep_fail(p, MINFER_ERR_MODEL, "step %d (%s) needs an operand", k,
                                     name);
            st->c.kind[k] = swap[k] ? 2 : 1;
            st->c.op[k] = code;
            st->c.src[k] = (cl_int)operand[k];
        }
        q = end ? end + 1 : q + len;
    }
    if (k == 0 || (size_t)k != no || (size_t)k != ns || (size_t)(2 * k) != np)
        return ocl_prep_fail(p, MINFER_ERR_MODEL,
                             "ops has %d steps, operand %zu, swap %zu, params %zu values", k, no,
                             ns, np);
    st->c.n = k;
    if ((s = ocl_check_size(p, &n->outputs[0])) || !p->prep)
        return s;
    for (size_t i = 1; i < n->n_inputs; i++)
        if (n->inputs[i].const_data &&
            (s = ocl_upload_floats(p, (int)i, n->inputs[i].const_data,
                                   n->inputs[i].const_nbytes / 4)))
            return s;
    return MINFER_OK;
}

/* How operand w broadcasts onto x: 0 one element, 1 x's shape, 2 along
 * axis 1, 3 along the last axis; -1 none of these. */
static int chain_mode(const minfer_tensor_view *w, const minfer_tensor_view *x) {
    if (w->rank > x->rank)
        return -1;
    int non1 = -1, all = 1;
    for (int d = 0; d < w->rank; d++) {
        int xd = x->rank - w->rank + d;
        if (w->dims[d] != x->dims[xd])
            all = 0;
        if (w->dims[d] == 1)
            continue;
        if (w->dims[d] != x->dims[xd])
            return -1;
        non1 = non1 == -1 ? xd : -2; /* -2: two or more */
    }
    if (non1 == -1)
        return 0;
    if (all && ocl_numel(w->rank, w->dims) == ocl_numel(x->rank, x->dims))
        return 1;
    if (non1 == 1 && x->rank >= 2)
        return 2;
    if (non1 == x->rank - 1)
        return 3;
    return -1;
}

minfer_status ocl_execute_fused_elementwise(const ocl_exec *e) {
    const chain_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    ocl_chain8 c = st->c;
    cl_mem wb[OCL_CHAIN_OPERANDS], xb, yb;
    cl_int wo[OCL_CHAIN_OPERANDS] = {0}, xo, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    for (int j = 0; j < OCL_CHAIN_OPERANDS; j++) {
        wb[j] = xb;
        if (j + 1 >= st->n_in)
            continue;
        const minfer_tensor_view *w = ocl_input(e, (size_t)j + 1);
        if (!w)
            return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input %d", j + 1);
        c.mode[j] = chain_mode(w, x);
        if (c.mode[j] < 0)
            return ocl_fail(e, MINFER_ERR_SHAPE, "input %d does not broadcast onto X as one "
                            "element, X's shape or a vector along axis 1 or the last", j + 1);
        ocl_in_buf(e, (size_t)j + 1, j + 1, &wb[j], &wo[j]);
    }
    int64_t n = ocl_numel(x->rank, x->dims);
    c.C = x->rank >= 2 ? (cl_int)x->dims[1] : 1;
    c.inner = x->rank >= 2 ? (cl_int)ocl_numel(x->rank - 2, x->dims + 2) : 1;
    c.D = x->rank >= 1 ? (cl_int)x->dims[x->rank - 1] : 1;
    if (c.C <= 0 || c.inner <= 0 || c.D <= 0) /* empty: nothing to compute */
        c.C = c.inner = c.D = 1;
    minfer_status s = ocl_output(e, 0, x->rank, x->dims, &yb, &yo);
    if (s || n == 0)
        return s;
    cl_int ni = (cl_int)n;
    if ((s = ocl_set_args(e, OCL_K_elementwise_chain, 14, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(yb),
                          OCL_ARG(yo), OCL_ARG(ni), OCL_ARG(c), OCL_ARG(wb[0]), OCL_ARG(wo[0]),
                          OCL_ARG(wb[1]), OCL_ARG(wo[1]), OCL_ARG(wb[2]), OCL_ARG(wo[2]),
                          OCL_ARG(wb[3]), OCL_ARG(wo[3]))))
        return s;
    return ocl_launch1(e, OCL_K_elementwise_chain, (size_t)n);
}
