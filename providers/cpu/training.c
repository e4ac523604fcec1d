/*
 * The optimizers of the ai.onnx.preview.training domain: Adagrad, Momentum
 * and Adam (opset 1 of that domain).
 *
 * Each takes a learning rate R and an update count T (scalars), then the
 * optimized tensors X1..Xn, their gradients G1..Gn and one or two state
 * tensors per X (Adagrad: H, Momentum: V, Adam: V then H), each list in
 * that order; it returns the new X1..Xn followed by the new states in the
 * same order. Per element, with g = norm_coefficient * x + g:
 *
 *   Adagrad   r = R / (1 + T * decay_factor)
 *             h' = h + g^2;  x' = x - r * g / (sqrt(h') + epsilon)
 *   Momentum  b = T > 0 ? beta : 1;  v' = alpha * v + b * g
 *             x' = x - R * v'                      (mode "standard")
 *             x' = x - R * (g + alpha * v')        (mode "nesterov")
 *   Adam      v' = alpha * v + (1 - alpha) * g
 *             h' = beta * h + (1 - beta) * g^2
 *             r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
 *             x' = (1 - norm_coefficient_post) * (x - r * v' / (sqrt(h') + epsilon))
 *
 * The spec writes the arithmetic with numpy broadcasting, but its shape
 * inference gives X_new X's shape and each new state its state's shape, so
 * this kernel requires every G, V and H to have its X's shape and type
 * (broadcasting would make the state outputs change shape). The arithmetic
 * is in double and rounded once to the tensors' type. Every input of an
 * element is read before its outputs are written, so an output may share
 * its buffer with the input it replaces.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

enum { OPT_ADAGRAD, OPT_MOMENTUM, OPT_ADAM };

typedef struct optim_state {
    int kind;
    int nesterov; /* Momentum's mode */
    size_t per;   /* input tensors per optimized tensor: X, G and 1 or 2 states */
    size_t n;     /* optimized tensors */
    double alpha, beta, epsilon, norm, norm_post, decay;
} optim_state;

static const char *const group_names[] = {"X", "G", "V", "H"};

/* Name of the tensor list input 2 + k * n + i belongs to (for messages). */
static const char *group_name(int kind, size_t k) {
    if (kind == OPT_ADAGRAD && k == 2)
        return "H";
    return group_names[k];
}

/* 1 if two descriptors' shapes may be equal (unknown parts match anything). */
static int desc_shapes_agree(const minfer_value_desc *a, const minfer_value_desc *b) {
    if (a->rank < 0 || b->rank < 0)
        return 1;
    if (a->rank != b->rank)
        return 0;
    for (int32_t d = 0; d < a->rank; d++)
        if (a->dims[d] >= 0 && b->dims[d] >= 0 && a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

/* A float attribute Momentum requires (the spec gives it no default). */
static int required_float(cpu_prep *p, const char *name, double *out) {
    if (!cpu_has_attr(p, name)) {
        cpu_prep_fail(p, MINFER_ERR_MODEL, "attribute '%s' is required", name);
        return 0;
    }
    *out = cpu_attr_float(p, name, 0.0f);
    return 1;
}

minfer_status cpu_prepare_optimizer(cpu_prep *p) {
    const minfer_node_desc *nd = p->node;
    const char *op = nd->op_type;
    int kind = strcmp(op, "Adagrad") == 0    ? OPT_ADAGRAD
               : strcmp(op, "Momentum") == 0 ? OPT_MOMENTUM
                                             : OPT_ADAM;
    size_t per = kind == OPT_ADAM ? 4 : 3;
    const char *lists = kind == OPT_ADAGRAD    ? "X..., G..., H..."
                        : kind == OPT_MOMENTUM ? "X..., G..., V..."
                                               : "X..., G..., V..., H...";
    if (nd->n_inputs < 2 + per || (nd->n_inputs - 2) % per != 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL,
                             "takes R, T, then %s of equal length: %zu inputs is not 2 + %zu * n",
                             lists, nd->n_inputs, per);
    size_t n = (nd->n_inputs - 2) / per;
    if (nd->n_outputs != (per - 1) * n)
        return cpu_prep_fail(p, MINFER_ERR_MODEL,
                             "%zu optimized tensor(s) make %zu outputs, the node has %zu", n,
                             (per - 1) * n, nd->n_outputs);
    for (size_t i = 0; i < nd->n_inputs; i++)
        if (!minfer_kit_input(nd, i))
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "input %zu is omitted; none is optional",
                                 i);
    for (size_t i = 0; i < nd->n_outputs; i++)
        if (!minfer_kit_output_wanted(nd, i))
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "output %zu is omitted; none is optional",
                                 i);

    /* What the build already knows of types and shapes. */
    const minfer_value_desc *r = minfer_kit_input(nd, 0), *t = minfer_kit_input(nd, 1);
    if (r->dtype && r->dtype != MINFER_DTYPE_FLOAT && r->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_prep_fail(p, MINFER_ERR_TYPE, "R must be float or double");
    if (t->dtype && t->dtype != MINFER_DTYPE_INT64)
        return cpu_prep_fail(p, MINFER_ERR_TYPE, "T must be int64");
    for (size_t k = 0; k < 2; k++) {
        const minfer_value_desc *s = k ? t : r;
        int known = s->rank >= 0;
        for (int32_t d = 0; known && d < s->rank; d++)
            known = s->dims[d] >= 0;
        if (known && minfer_kit_numel(s->rank, s->dims) != 1)
            return cpu_prep_fail(p, MINFER_ERR_SHAPE, "%s must be a scalar", k ? "T" : "R");
    }
    for (size_t i = 0; i < n; i++) {
        const minfer_value_desc *x = minfer_kit_input(nd, 2 + i);
        if (x->dtype && x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE)
            return cpu_prep_fail(p, MINFER_ERR_TYPE, "X%zu must be float or double", i + 1);
        for (size_t k = 1; k < per; k++) {
            const minfer_value_desc *o = minfer_kit_input(nd, 2 + k * n + i);
            const char *name = group_name(kind, k);
            if (x->dtype && o->dtype && o->dtype != x->dtype)
                return cpu_prep_fail(p, MINFER_ERR_TYPE, "%s%zu's element type differs from X%zu's",
                                     name, i + 1, i + 1);
            if (!desc_shapes_agree(x, o))
                return cpu_prep_fail(p, MINFER_ERR_SHAPE, "%s%zu's shape differs from X%zu's", name,
                                     i + 1, i + 1);
        }
    }

    optim_state st = {.kind = kind, .per = per, .n = n};
    if (kind == OPT_MOMENTUM) {
        if (!required_float(p, "alpha", &st.alpha) || !required_float(p, "beta", &st.beta) ||
            !required_float(p, "norm_coefficient", &st.norm))
            return MINFER_ERR_MODEL;
        const char *mode = cpu_attr_str(p, "mode", NULL);
        if (!mode)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "attribute 'mode' is required");
        if (strcmp(mode, "nesterov") == 0)
            st.nesterov = 1;
        else if (strcmp(mode, "standard") != 0)
            return cpu_prep_fail(p, MINFER_ERR_MODEL,
                                 "mode '%s' is neither \"standard\" nor \"nesterov\"", mode);
    } else if (kind == OPT_ADAGRAD) {
        st.epsilon = cpu_attr_float(p, "epsilon", 1e-6f);
        st.decay = cpu_attr_float(p, "decay_factor", 0.0f);
        st.norm = cpu_attr_float(p, "norm_coefficient", 0.0f);
    } else {
        st.alpha = cpu_attr_float(p, "alpha", 0.9f);
        st.beta = cpu_attr_float(p, "beta", 0.999f);
        st.epsilon = cpu_attr_float(p, "epsilon", 1e-6f);
        st.norm = cpu_attr_float(p, "norm_coefficient", 0.0f);
        st.norm_post = cpu_attr_float(p, "norm_coefficient_post", 0.0f);
    }
    optim_state *s = cpu_state(p, sizeof *s);
    if (!s)
        return MINFER_ERR_NOMEM;
    *s = st;
    return MINFER_OK;
}

/* One optimized tensor of len elements: in = X, G, state(s); out = X_new,
 * new state(s). rate is the step's learning rate (Adagrad's and Adam's
 * adjusted one), beta Momentum's gradient coefficient for this step. */
#define OPT_UPDATE(E, T, S)                                                                \
    static void update_##S(const optim_state *s, double rate, double beta, size_t len,     \
                           const void *const *in, void *const *out) {                      \
        const T *x = in[0], *g = in[1], *v = in[2], *h = in[3];                            \
        T *xo = out[0], *vo = out[1], *ho = out[2];                                        \
        for (size_t j = 0; j < len; j++) {                                                 \
            double xj = x[j], gj = s->norm * xj + (double)g[j], vj = v[j];                 \
            if (s->kind == OPT_ADAGRAD) {                                                  \
                double hn = vj + gj * gj;                                                  \
                xo[j] = (T)(xj - rate * gj / (sqrt(hn) + s->epsilon));                     \
                vo[j] = (T)hn;                                                             \
            } else if (s->kind == OPT_MOMENTUM) {                                          \
                double vn = s->alpha * vj + beta * gj;                                     \
                xo[j] = (T)(xj - rate * (s->nesterov ? gj + s->alpha * vn : vn));          \
                vo[j] = (T)vn;                                                             \
            } else {                                                                       \
                double hj = h[j];                                                          \
                double vn = s->alpha * vj + (1 - s->alpha) * gj;                           \
                double hn = s->beta * hj + (1 - s->beta) * gj * gj;                        \
                double xn = xj - rate * vn / (sqrt(hn) + s->epsilon);                      \
                xo[j] = (T)((1 - s->norm_post) * xn);                                      \
                vo[j] = (T)vn;                                                             \
                ho[j] = (T)hn;                                                             \
            }                                                                              \
        }                                                                                  \
    }
CPU_FLOAT_TYPES(OPT_UPDATE)
#undef OPT_UPDATE

minfer_status cpu_compute_optimizer(const cpu_exec *e) {
    const optim_state *s = e->state;
    const minfer_tensor_view *rv = cpu_input(e, 0), *tv = cpu_input(e, 1);
    minfer_status st;
    if (e->args->n_inputs != 2 + s->per * s->n || e->args->n_outputs != (s->per - 1) * s->n)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "the host passed %zu inputs and %zu outputs",
                        e->args->n_inputs, e->args->n_outputs);
    if (!rv || !tv)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input R or T");
    if (rv->dtype != MINFER_DTYPE_FLOAT && rv->dtype != MINFER_DTYPE_DOUBLE)
        return cpu_fail(e, MINFER_ERR_TYPE, "R must be float or double");
    if (tv->dtype != MINFER_DTYPE_INT64)
        return cpu_fail(e, MINFER_ERR_TYPE, "T must be int64");
    if (minfer_kit_numel(tv->rank, tv->dims) != 1)
        return cpu_fail(e, MINFER_ERR_SHAPE, "T must be a scalar");
    double R;
    if ((st = cpu_read_scalar(e, rv, "R", &R)) != MINFER_OK)
        return st;
    int64_t T;
    memcpy(&T, cpu_data(tv), sizeof T);

    double rate = R, beta = 1;
    if (s->kind == OPT_ADAGRAD)
        rate = R / (1 + (double)T * s->decay);
    else if (s->kind == OPT_MOMENTUM)
        beta = T > 0 ? s->beta : 1;
    else if (T > 0)
        rate = R * sqrt(1 - pow(s->beta, (double)T)) / (1 - pow(s->alpha, (double)T));

    for (size_t i = 0; i < s->n; i++) {
        const void *in[4] = {NULL, NULL, NULL, NULL};
        void *out[3] = {NULL, NULL, NULL};
        const minfer_tensor_view *x = cpu_input(e, 2 + i);
        if (!x)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input X%zu", i + 1);
        if (x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE)
            return cpu_fail(e, MINFER_ERR_TYPE, "X%zu must be float or double", i + 1);
        in[0] = cpu_data(x);
        for (size_t k = 1; k < s->per; k++) {
            const minfer_tensor_view *o = cpu_input(e, 2 + k * s->n + i);
            const char *name = group_name(s->kind, k);
            if (!o)
                return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input %s%zu", name, i + 1);
            if (o->dtype != x->dtype)
                return cpu_fail(e, MINFER_ERR_TYPE, "%s%zu's element type differs from X%zu's",
                                name, i + 1, i + 1);
            if (o->rank != x->rank ||
                memcmp(o->dims, x->dims, (size_t)x->rank * sizeof *x->dims) != 0)
                return cpu_fail(e, MINFER_ERR_SHAPE, "%s%zu's shape differs from X%zu's", name,
                                i + 1, i + 1);
            in[k] = cpu_data(o);
        }
        /* Output k * n + i is the new value of input list k (X, then the states). */
        for (size_t k = 0; k + 1 < s->per; k++)
            if ((st = cpu_output(e, k * s->n + i, x->dtype, x->rank, x->dims, &out[k])) !=
                MINFER_OK)
                return st;
        size_t len = (size_t)minfer_kit_numel(x->rank, x->dims);
        if (x->dtype == MINFER_DTYPE_FLOAT)
            update_f32(s, rate, beta, len, in, out);
        else
            update_f64(s, rate, beta, len, in, out);
    }
    return MINFER_OK;
}
