/*
 * Level 2: Conv, Gemm and MatMul with what follows them, into the minfer
 * domain (docs/fused-ops.md).
 *
 *  fuse_conv    Conv [+ Add(Z)] [+ activation] -> FusedConv(X, W, B, Z)
 *  fuse_gemm    Gemm + activation -> FusedGemm
 *  fuse_matmul  MatMul [+ Add(bias)] [+ activation] -> FusedMatMul(A, B, bias)
 *
 * Every intermediate must be read by the next node of the pattern alone
 * and not be a graph output. Activations: Relu, Clip (constant scalar
 * bounds), Sigmoid, HardSigmoid, HardSwish, LeakyRelu, Tanh, and SiLU
 * spelled x * Sigmoid(x). Checked shapes: the residual Z has exactly the
 * Conv output's shape (symbolic dims compared by the analysis), the MatMul
 * bias is 1-D with the output's static last dim. Only float is fused.
 */
#include <float.h>
#include <string.h>

#include "internal.h"
#include "optimizer.h"

static int live(const mf_opt *o, size_t i) { return !(i < o->cap_dead && o->dead[i]); }

typedef struct act_match {
    const char *name;
    float params[2];
    size_t n_params;
    int out;      /* the activation's output value */
    int nodes[2]; /* nodes the activation takes */
    int n_nodes;
} act_match;

static int unary_of(const mf_graph *g, int i, int v) {
    const mf_node *n = &g->nodes[i];
    return n->n_inputs >= 1 && n->inputs[0] == v && n->n_outputs == 1 && n->outputs[0] >= 0;
}

/* x * Sigmoid(x): v read by exactly a Sigmoid and the Mul of both. */
static int match_silu(mf_opt *o, int v, act_match *m) {
    const mf_graph *g = o->g;
    if (o->pinned[v] || mf_opt_nuses(o, v) != 2)
        return 0;
    int a = o->cons[o->cons_start[v]], b = o->cons[o->cons_start[v] + 1];
    int s = mf_opt_is(g, a, "Sigmoid") ? a : mf_opt_is(g, b, "Sigmoid") ? b : -1;
    int mul = s == a ? b : a;
    if (s < 0 || !unary_of(g, s, v) || !mf_opt_is(g, mul, "Mul") ||
        g->nodes[mul].n_inputs != 2 || g->nodes[mul].n_outputs != 1)
        return 0;
    int sv = g->nodes[s].outputs[0];
    const int *mi = g->nodes[mul].inputs;
    if (mf_opt_single_consumer(o, sv) != mul ||
        !((mi[0] == v && mi[1] == sv) || (mi[0] == sv && mi[1] == v)))
        return 0;
    m->name = "Silu";
    m->n_params = 0;
    m->out = g->nodes[mul].outputs[0];
    m->nodes[0] = s;
    m->nodes[1] = mul;
    m->n_nodes = 2;
    return 1;
}

/* The activation reading v (v's only reader), if it is one the fused ops take. */
static int match_activation(mf_opt *o, int v, act_match *m) {
    const mf_graph *g = o->g;
    memset(m, 0, sizeof *m);
    if (mf_opt_info(o, v)->dtype != MINFER_DTYPE_FLOAT)
        return 0;
    int c = mf_opt_single_consumer(o, v);
    if (c < 0)
        return match_silu(o, v, m);
    const mf_node *n = &g->nodes[c];
    if (!unary_of(g, c, v))
        return 0;
    m->out = n->outputs[0];
    m->nodes[0] = c;
    m->n_nodes = 1;
    static const char *const plain[] = {"Relu", "Sigmoid", "HardSwish", "Tanh"};
    for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++)
        if (mf_opt_is(g, c, plain[k]) && n->n_inputs == 1) {
            m->name = plain[k];
            return 1;
        }
    if (mf_opt_is(g, c, "LeakyRelu") && n->n_inputs == 1) {
        m->name = "LeakyRelu";
        m->params[0] = mf_attr_float(n, "alpha", 0.01f);
        m->n_params = 1;
        return 1;
    }
    if (mf_opt_is(g, c, "HardSigmoid") && n->n_inputs == 1) {
        m->name = "HardSigmoid";
        m->params[0] = mf_attr_float(n, "alpha", 0.2f);
        m->params[1] = mf_attr_float(n, "beta", 0.5f);
        m->n_params = 2;
        return 1;
    }
    if (mf_opt_is(g, c, "Clip")) {
        float lo = -FLT_MAX, hi = FLT_MAX;
        if (n->opset < 11) {
            if (n->n_inputs != 1)
                return 0;
            lo = mf_attr_float(n, "min", lo);
            hi = mf_attr_float(n, "max", hi);
        } else {
            double d;
            for (size_t k = 1; k < n->n_inputs && k < 3; k++) {
                if (n->inputs[k] < 0)
                    continue;
                const minfer_tensor *t = mf_opt_const(o, n->inputs[k]);
                if (!t || t->view.rank > 0 || !mf_opt_scalar(o, n->inputs[k], &d))
                    return 0;
                if (k == 1)
                    lo = (float)d;
                else
                    hi = (float)d;
            }
            if (n->n_inputs > 3)
                return 0;
        }
        m->name = "Clip";
        m->params[0] = lo;
        m->params[1] = hi;
        m->n_params = 2;
        return 1;
    }
    return 0;
}

static minfer_status set_activation(mf_opt *o, int i, const act_match *m) {
    minfer_status st = mf_opt_set_attr_string(o, i, "activation", m->name);
    if (st == MINFER_OK && m->n_params)
        st = mf_opt_set_attr_floats(o, i, "activation_params", m->params, m->n_params);
    return st;
}

static void take_activation(mf_opt *o, int i, const act_match *m) {
    for (int k = 0; k < m->n_nodes; k++)
        mf_opt_kill(o, m->nodes[k]);
    o->g->nodes[i].outputs[0] = m->out;
}

minfer_status mf_pass_fuse_conv(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "Conv") || n->n_inputs < 2 ||
            n->n_inputs > 3 || n->n_outputs != 1 || n->outputs[0] < 0 || n->inputs[0] < 0 ||
            mf_opt_info(o, n->inputs[0])->dtype != MINFER_DTYPE_FLOAT)
            continue;
        int y = n->outputs[0], z = -1, add = -1;
        int c = mf_opt_single_consumer(o, y);
        if (c >= 0 && mf_opt_is(g, c, "Add") && g->nodes[c].n_inputs == 2 &&
            g->nodes[c].n_outputs == 1) {
            const int *ai = g->nodes[c].inputs;
            int other = ai[0] == y ? ai[1] : ai[0];
            if (other >= 0 && other != y && mf_opt_same_shape(o, other, y) &&
                mf_opt_info(o, other)->dtype == MINFER_DTYPE_FLOAT) {
                z = other;
                add = c;
            }
        }
        act_match m;
        int has_act = match_activation(o, add >= 0 ? g->nodes[add].outputs[0] : y, &m);
        if (add < 0 && !has_act)
            continue;
        int ins[4] = {n->inputs[0], n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : -1, z};
        if ((st = mf_opt_set_inputs(o, i, ins, z >= 0 ? 4 : (size_t)(n->n_inputs))) != MINFER_OK ||
            (st = mf_opt_set_op(o, i, "minfer", "FusedConv")) != MINFER_OK)
            return st;
        if (add >= 0) {
            g->nodes[i].outputs[0] = g->nodes[add].outputs[0];
            mf_opt_kill(o, add);
        }
        if (has_act) {
            if ((st = set_activation(o, i, &m)) != MINFER_OK)
                return st;
            take_activation(o, i, &m);
        }
        (*fired)++;
        if ((st = mf_opt_reindex(o)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

minfer_status mf_pass_fuse_gemm(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        act_match m;
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "Gemm") || n->n_outputs != 1 ||
            n->outputs[0] < 0 || n->n_inputs < 2 || n->opset < 7 ||
            !match_activation(o, n->outputs[0], &m))
            continue;
        if ((st = mf_opt_set_op(o, i, "minfer", "FusedGemm")) != MINFER_OK ||
            (st = set_activation(o, i, &m)) != MINFER_OK)
            return st;
        take_activation(o, i, &m);
        (*fired)++;
        if ((st = mf_opt_reindex(o)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

minfer_status mf_pass_fuse_matmul(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "MatMul") || n->n_inputs != 2 ||
            n->n_outputs != 1 || n->outputs[0] < 0 ||
            mf_opt_info(o, n->inputs[0])->dtype != MINFER_DTYPE_FLOAT)
            continue;
        int y = n->outputs[0], bias = -1, add = -1;
        const mf_vinfo yi = *mf_opt_info(o, y);
        int c = mf_opt_single_consumer(o, y);
        if (c >= 0 && mf_opt_is(g, c, "Add") && g->nodes[c].n_inputs == 2 &&
            g->nodes[c].n_outputs == 1 && yi.rank >= 1 && mf_opt_dim(&yi, yi.rank - 1) >= 0) {
            const int *ai = g->nodes[c].inputs;
            int other = ai[0] == y ? ai[1] : ai[0];
            const mf_vinfo *bi = mf_opt_info(o, other);
            if (other != y && bi->dtype == MINFER_DTYPE_FLOAT && bi->rank == 1 &&
                mf_opt_dim(bi, 0) == mf_opt_dim(&yi, yi.rank - 1)) {
                bias = other;
                add = c;
            }
        }
        act_match m;
        int has_act = match_activation(o, add >= 0 ? g->nodes[add].outputs[0] : y, &m);
        if (add < 0 && !has_act)
            continue;
        int ins[3] = {n->inputs[0], n->inputs[1], bias};
        if ((st = mf_opt_set_inputs(o, i, ins, bias >= 0 ? 3 : 2)) != MINFER_OK ||
            (st = mf_opt_set_op(o, i, "minfer", "FusedMatMul")) != MINFER_OK)
            return st;
        if (add >= 0) {
            g->nodes[i].outputs[0] = g->nodes[add].outputs[0];
            mf_opt_kill(o, add);
        }
        if (has_act) {
            if ((st = set_activation(o, i, &m)) != MINFER_OK)
                return st;
            take_activation(o, i, &m);
        }
        (*fired)++;
        if ((st = mf_opt_reindex(o)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}
