/*
 * Level 2: Conv, Gemm and MatMul with what follows them, into the minfer
 * domain (docs/fused-ops.md).
 *
 *  fuse_conv    Conv [+ Add(Z)] [+ activation] -> FusedConv(X, W, B, Z);
 *               Conv(Concat(A, B)) over channels -> FusedConv(B, W_B, bias, Conv(A, W_A))
 *  fuse_gemm    Gemm + activation -> FusedGemm
 *  fuse_matmul  MatMul [+ Add(bias)] [+ activation] -> FusedMatMul(A, B, bias)
 *  fuse_concat  Concat over channels + depthwise 1x1 FusedConv (a channel
 *               affine and its activation) -> FusedConcat(scale, B, X...);
 *               sessions only (no CPU kernel)
 *
 * Every intermediate must be read by the next node of the pattern alone
 * and not be a graph output. Activations: Relu, Clip (constant scalar
 * bounds), Sigmoid, HardSigmoid, HardSwish, LeakyRelu, Tanh, SiLU
 * spelled x * Sigmoid(x), and HardSwish spelled x * HardSigmoid(x) (alpha 1/6,
 * beta 0.5). Checked shapes: the residual Z has exactly the
 * Conv output's shape (symbolic dims compared by the analysis), the MatMul
 * bias is 1-D with the output's static last dim. Only float is fused.
 */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

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

/* x * Sigmoid(x) (SiLU) or x * HardSigmoid(x) with alpha 1/6 and beta 0.5
 * (HardSwish, as opset-13 exporters spell it): v read by exactly the gate
 * and the Mul of both. */
static int match_gated(mf_opt *o, int v, act_match *m) {
    const mf_graph *g = o->g;
    if (o->pinned[v] || mf_opt_nuses(o, v) != 2)
        return 0;
    int a = o->cons[o->cons_start[v]], b = o->cons[o->cons_start[v] + 1];
    int s = mf_opt_is(g, a, "Sigmoid") || mf_opt_is(g, a, "HardSigmoid") ? a
            : mf_opt_is(g, b, "Sigmoid") || mf_opt_is(g, b, "HardSigmoid") ? b
                                                                             : -1;
    int mul = s == a ? b : a;
    if (s < 0 || !unary_of(g, s, v) || g->nodes[s].n_inputs != 1 || !mf_opt_is(g, mul, "Mul") ||
        g->nodes[mul].n_inputs != 2 || g->nodes[mul].n_outputs != 1)
        return 0;
    int sv = g->nodes[s].outputs[0];
    const int *mi = g->nodes[mul].inputs;
    if (mf_opt_single_consumer(o, sv) != mul ||
        !((mi[0] == v && mi[1] == sv) || (mi[0] == sv && mi[1] == v)))
        return 0;
    if (mf_opt_is(g, s, "HardSigmoid")) {
        /* HardSwish is x * max(0, min(1, x / 6 + 0.5)); an exporter writes
         * 1/6 as the float nearest it. */
        float alpha = mf_attr_float(&g->nodes[s], "alpha", 0.2f);
        float beta = mf_attr_float(&g->nodes[s], "beta", 0.5f);
        if (!(alpha > 1.0f / 6.0f - 1e-7f && alpha < 1.0f / 6.0f + 1e-7f) || beta != 0.5f)
            return 0;
        m->name = "HardSwish";
    } else {
        m->name = "Silu";
    }
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
        return match_gated(o, v, m);
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

/* 1 when every attribute of node i is of a type copy_attrs copies. */
static int attrs_copyable(const mf_node *n) {
    for (size_t k = 0; k < n->n_attrs; k++)
        if (n->attrs[k].type != MINFER_ATTR_INT && n->attrs[k].type != MINFER_ATTR_INTS &&
            n->attrs[k].type != MINFER_ATTR_STRING && n->attrs[k].type != MINFER_ATTR_FLOAT)
            return 0;
    return 1;
}

/* Copies Conv i's attributes (ints, int lists, strings, floats) onto node j. */
static minfer_status copy_attrs(mf_opt *o, int i, int j) {
    minfer_status st = MINFER_OK;
    for (size_t k = 0; st == MINFER_OK && k < o->g->nodes[i].n_attrs; k++) {
        const mf_attr a = o->g->nodes[i].attrs[k]; /* the array may move below */
        switch (a.type) {
        case MINFER_ATTR_INT: st = mf_opt_set_attr_int(o, j, a.name, a.i); break;
        case MINFER_ATTR_INTS: st = mf_opt_set_attr_ints(o, j, a.name, a.ints, a.count); break;
        case MINFER_ATTR_STRING: st = mf_opt_set_attr_string(o, j, a.name, a.s); break;
        case MINFER_ATTR_FLOAT: st = mf_opt_set_attr_float(o, j, a.name, a.f); break;
        default: st = MINFER_ERR_UNSUPPORTED; break;
        }
    }
    return st;
}

/* Conv(Concat(A, B) over channels, W) = Conv(A, W_A) + Conv(B, W_B), W
 * split along its input channels (group 1): the second becomes a
 * FusedConv whose residual Z is the first, so the Concat's copy is never
 * made (a fire module of SqueezeNet concatenates two convolutions for the
 * next one's 1x1 squeeze). The Concat node is reused as the first Conv.
 * Checked: the Concat has two inputs, is read by this Conv alone and is
 * not a graph output; channel counts static; W a float initializer with
 * those channels; the Conv's output not read by an Add alone (which the
 * residual fusion below would take). Sets *z to the new residual value,
 * or -1 when the pattern does not match. */
static minfer_status split_concat_input(mf_opt *o, int i, int *z) {
    mf_graph *g = o->g;
    *z = -1;
    const mf_node *n = &g->nodes[i];
    int x = n->inputs[0], w = n->inputs[1], c = mf_opt_producer(o, x);
    if (c < 0 || !mf_opt_is(g, c, "Concat") || g->nodes[c].n_inputs != 2 ||
        g->nodes[c].n_outputs != 1 || mf_opt_single_consumer(o, x) != i ||
        mf_attr_int(n, "group", 1) != 1 || !attrs_copyable(n))
        return MINFER_OK;
    int y = n->outputs[0], cy = mf_opt_single_consumer(o, y);
    if (cy >= 0 && mf_opt_is(g, cy, "Add"))
        return MINFER_OK;
    int a = g->nodes[c].inputs[0], b = g->nodes[c].inputs[1];
    if (a < 0 || b < 0)
        return MINFER_OK;
    /* Copies: the analysis may move its array on the next call. */
    const mf_vinfo xi = *mf_opt_info(o, x), ai = *mf_opt_info(o, a), bi = *mf_opt_info(o, b);
    int rank = xi.rank;
    int64_t axis = mf_attr_int(&g->nodes[c], "axis", 0);
    if (rank < 3 || (axis != 1 && axis != 1 - rank))
        return MINFER_OK;
    int64_t ca = ai.rank == rank ? mf_opt_dim(&ai, 1) : -1;
    int64_t cb = bi.rank == rank ? mf_opt_dim(&bi, 1) : -1;
    const minfer_tensor *wt = mf_opt_const(o, w);
    if (ca <= 0 || cb <= 0 || !wt || wt->view.dtype != MINFER_DTYPE_FLOAT ||
        wt->view.rank != rank || wt->view.dims[1] != ca + cb ||
        ai.dtype != MINFER_DTYPE_FLOAT || bi.dtype != MINFER_DTYPE_FLOAT)
        return MINFER_OK;
    /* W [M, ca + cb, k...] -> W_A [M, ca, k...], W_B [M, cb, k...]. */
    size_t m = (size_t)wt->view.dims[0], ks = 1;
    for (int d = 2; d < rank; d++)
        ks *= (size_t)wt->view.dims[d];
    if (wt->view.nbytes < m * (size_t)(ca + cb) * ks * sizeof(float))
        return MINFER_OK;
    minfer_tensor *wa = NULL, *wb = NULL;
    int64_t dims[MINFER_MAX_RANK];
    memcpy(dims, wt->view.dims, (size_t)rank * sizeof dims[0]);
    dims[1] = ca;
    minfer_status st = minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, (size_t)rank, &wa);
    dims[1] = cb;
    if (st == MINFER_OK)
        st = minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, (size_t)rank, &wb);
    if (st != MINFER_OK) {
        minfer_tensor_free(wa);
        return st;
    }
    const float *src = (const float *)((const char *)wt->view.data + wt->view.offset);
    float *pa = minfer_tensor_data(wa), *pb = minfer_tensor_data(wb);
    for (size_t r = 0; r < m; r++) {
        memcpy(pa + r * (size_t)ca * ks, src + r * (size_t)(ca + cb) * ks,
               (size_t)ca * ks * sizeof(float));
        memcpy(pb + r * (size_t)cb * ks, src + (r * (size_t)(ca + cb) + (size_t)ca) * ks,
               (size_t)cb * ks * sizeof(float));
    }
    char name[512];
    const char *wname = g->values[w].name ? g->values[w].name : "W";
    int va = mf_opt_add_const(o, wname, wa);
    int vb = va < 0 ? -1 : mf_opt_add_const(o, wname, wb);
    if (va < 0) {
        minfer_tensor_free(wb);
        return MINFER_ERR_NOMEM;
    }
    if (vb < 0)
        return MINFER_ERR_NOMEM;
    /* The partial sum P, a fresh value produced by the former Concat. */
    int p = -1;
    for (int tries = 0; tries < 1000 && p < 0; tries++) {
        snprintf(name, sizeof name, "%s_part_opt%u", g->values[y].name ? g->values[y].name : "y",
                 o->name_seq++);
        if (mf_graph_find(g, name) < 0 && (p = mf_graph_intern(g, name)) < 0)
            return MINFER_ERR_NOMEM;
    }
    if (p < 0)
        return MINFER_OK;
    int ins_a[2] = {a, va};
    mf_opt_drop_attr(o, c, "axis");
    if ((st = mf_opt_set_op(o, c, "", "Conv")) != MINFER_OK ||
        (st = copy_attrs(o, i, c)) != MINFER_OK ||
        (st = mf_opt_set_inputs(o, c, ins_a, 2)) != MINFER_OK)
        return st;
    g->nodes[c].opset = g->nodes[i].opset;
    g->nodes[c].outputs[0] = p;
    /* Named after the Conv it is half of (profiles list nodes by name). */
    snprintf(name, sizeof name, "%s_part", g->nodes[i].name ? g->nodes[i].name : "");
    char *nm = mf_strdup(name);
    if (!nm)
        return MINFER_ERR_NOMEM;
    free(g->nodes[c].name);
    g->nodes[c].name = nm;
    const mf_node *nn = &g->nodes[i];
    int ins_b[4] = {b, vb, nn->n_inputs > 2 ? nn->inputs[2] : -1, p};
    if ((st = mf_opt_set_inputs(o, i, ins_b, 4)) != MINFER_OK)
        return st;
    *z = p;
    return MINFER_OK;
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
        int y = n->outputs[0], z = -1, add = -1, split;
        if ((st = split_concat_input(o, i, &split)) != MINFER_OK)
            return st;
        n = &g->nodes[i];
        int c = split >= 0 ? -1 : mf_opt_single_consumer(o, y);
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
        if (add < 0 && !has_act && split < 0)
            continue;
        if (split >= 0) {
            z = split; /* inputs already (B, W_B, bias, P) */
        } else {
            int ins[4] = {n->inputs[0], n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : -1, z};
            if ((st = mf_opt_fuse_save(o, i)) != MINFER_OK ||
                (st = mf_opt_set_inputs(o, i, ins, z >= 0 ? 4 : (size_t)(n->n_inputs))) !=
                    MINFER_OK)
                return st;
        }
        if ((st = mf_opt_set_op(o, i, "minfer", "FusedConv")) != MINFER_OK ||
            (has_act && (st = set_activation(o, i, &m)) != MINFER_OK))
            return st;
        /* Asked unless the Concat was split (that is a FusedConv already,
         * with its residual): no provider of the session runs it (gate.c). */
        if (split < 0 && !mf_opt_fuse_keep(o, i))
            continue;
        if (add >= 0) {
            g->nodes[i].outputs[0] = g->nodes[add].outputs[0];
            mf_opt_kill(o, add);
        }
        if (has_act)
            take_activation(o, i, &m);
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
        if ((st = mf_opt_fuse_save(o, i)) != MINFER_OK ||
            (st = mf_opt_set_op(o, i, "minfer", "FusedGemm")) != MINFER_OK ||
            (st = set_activation(o, i, &m)) != MINFER_OK)
            return st;
        if (!mf_opt_fuse_keep(o, i)) /* no provider of the session runs it (gate.c) */
            continue;
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
        if ((st = mf_opt_fuse_save(o, i)) != MINFER_OK ||
            (st = mf_opt_set_inputs(o, i, ins, bias >= 0 ? 3 : 2)) != MINFER_OK ||
            (st = mf_opt_set_op(o, i, "minfer", "FusedMatMul")) != MINFER_OK ||
            (has_act && (st = set_activation(o, i, &m)) != MINFER_OK))
            return st;
        if (!mf_opt_fuse_keep(o, i)) /* no provider of the session runs it (gate.c) */
            continue;
        if (add >= 0) {
            g->nodes[i].outputs[0] = g->nodes[add].outputs[0];
            mf_opt_kill(o, add);
        }
        if (has_act)
            take_activation(o, i, &m);
        (*fired)++;
        if ((st = mf_opt_reindex(o)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

/* 1 when node n's int-list attribute name is absent or every entry is v. */
static int ints_all(const mf_node *n, const char *name, int64_t v) {
    const int64_t *p = NULL;
    size_t cnt = mf_attr_ints(n, name, &p);
    for (size_t k = 0; k < cnt; k++)
        if (p[k] != v)
            return 0;
    return 1;
}

/* fuse_concat: Concat over channels read by a per-channel affine and its
 * activation alone, which batchnorm_relu_conv and fuse_conv made a
 * depthwise 1x1 FusedConv (DenseNet's Concat -> BN -> Relu before every
 * layer) -> FusedConcat(scale, B, X...): the concatenation is written
 * already scaled, shifted and activated, one pass instead of two.
 * Checked: the Concat's output is read by that node alone and not pinned,
 * axis 1 of a rank >= 3 float output, every input present; the FusedConv
 * has no residual, group = C = W's channel count, W a float initializer
 * of shape [C, 1, 1...], kernel, strides 1 and no pads. Only with a gate:
 * the CPU provider has no FusedConcat, so a graph written by minfer
 * optimize or compile keeps the pair. */
minfer_status mf_pass_fuse_concat(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    if (!o->gate)
        return MINFER_OK;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || strcmp(n->op_type, "FusedConv") != 0 || !n->domain ||
            strcmp(n->domain, "minfer") != 0 || n->n_inputs < 2 || n->n_inputs > 3 ||
            n->n_outputs != 1 || n->inputs[0] < 0 || n->inputs[1] < 0)
            continue;
        int x = n->inputs[0], c = mf_opt_producer(o, x);
        if (c < 0 || !mf_opt_is(g, c, "Concat") || mf_opt_single_consumer(o, x) != i ||
            g->nodes[c].n_outputs != 1 || g->nodes[c].n_inputs < 1)
            continue;
        const mf_vinfo xi = *mf_opt_info(o, x);
        int64_t axis = mf_attr_int(&g->nodes[c], "axis", 0), C = mf_opt_dim(&xi, 1);
        const minfer_tensor *w = mf_opt_const(o, n->inputs[1]);
        if (xi.dtype != MINFER_DTYPE_FLOAT || xi.rank < 3 || (axis != 1 && axis != 1 - xi.rank) ||
            C <= 0 || !w || w->view.dtype != MINFER_DTYPE_FLOAT || w->view.rank != xi.rank ||
            w->view.dims[0] != C || mf_attr_int(n, "group", 1) != C ||
            strcmp(mf_attr_string(n, "auto_pad", "NOTSET"), "NOTSET") != 0 ||
            !ints_all(n, "kernel_shape", 1) || !ints_all(n, "strides", 1) ||
            !ints_all(n, "pads", 0))
            continue;
        int ok = 1;
        for (int d = 1; d < w->view.rank; d++)
            ok &= w->view.dims[d] == 1;
        for (size_t j = 0; j < g->nodes[c].n_inputs; j++)
            ok &= g->nodes[c].inputs[j] >= 0;
        if (n->n_inputs == 3 && n->inputs[2] >= 0) {
            const minfer_tensor *b = mf_opt_const(o, n->inputs[2]);
            ok &= b && b->view.dtype == MINFER_DTYPE_FLOAT && mf_opt_numel(&b->view) == C;
        }
        if (!ok)
            continue;
        size_t nc = g->nodes[c].n_inputs;
        int *ins = malloc((nc + 2) * sizeof *ins);
        if (!ins)
            return mf_opt_oom(o);
        ins[0] = n->inputs[1];
        ins[1] = n->n_inputs == 3 ? n->inputs[2] : -1;
        memcpy(ins + 2, g->nodes[c].inputs, nc * sizeof *ins);
        static const char *const drop[] = {"group", "kernel_shape", "strides", "pads",
                                           "dilations", "auto_pad"};
        if ((st = mf_opt_fuse_save(o, i)) != MINFER_OK) {
            free(ins);
            return st;
        }
        for (size_t a = 0; a < sizeof drop / sizeof drop[0]; a++)
            mf_opt_drop_attr(o, i, drop[a]);
        st = mf_opt_set_inputs(o, i, ins, nc + 2);
        free(ins);
        if (st != MINFER_OK || (st = mf_opt_set_op(o, i, "minfer", "FusedConcat")) != MINFER_OK ||
            (st = mf_opt_set_attr_int(o, i, "axis", 1)) != MINFER_OK)
            return st;
        o->fuse_optional = 1; /* a session without such a provider is no loss */
        int kept = mf_opt_fuse_keep(o, i);
        o->fuse_optional = 0;
        if (!kept) /* no provider of the session runs it (gate.c) */
            continue;
        mf_opt_kill(o, c);
        (*fired)++;
        if ((st = mf_opt_reindex(o)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

/* ---- fuse_elementwise ------------------------------------------------------ */

#define CHAIN_STEPS 8
#define CHAIN_OPERANDS 4

/* Unary ops a chain takes, with the attributes (and defaults) of their two
 * parameters. */
static const struct {
    const char *op, *attr_a, *attr_b;
    float a, b;
} chain_unary[] = {
    {"Relu", NULL, NULL, 0, 0},        {"Sigmoid", NULL, NULL, 0, 0},
    {"Tanh", NULL, NULL, 0, 0},        {"Exp", NULL, NULL, 0, 0},
    {"Log", NULL, NULL, 0, 0},         {"Sqrt", NULL, NULL, 0, 0},
    {"Abs", NULL, NULL, 0, 0},         {"Neg", NULL, NULL, 0, 0},
    {"Reciprocal", NULL, NULL, 0, 0},  {"Floor", NULL, NULL, 0, 0},
    {"Ceil", NULL, NULL, 0, 0},        {"Erf", NULL, NULL, 0, 0},
    {"Softplus", NULL, NULL, 0, 0},    {"Softsign", NULL, NULL, 0, 0},
    {"Sin", NULL, NULL, 0, 0},         {"Cos", NULL, NULL, 0, 0},
    {"Round", NULL, NULL, 0, 0},       {"Sign", NULL, NULL, 0, 0},
    {"HardSwish", NULL, NULL, 0, 0},   {"LeakyRelu", "alpha", NULL, 0.01f, 0},
    {"Elu", "alpha", NULL, 1.0f, 0},
    {"Selu", "alpha", "gamma", 1.67326319217681884765625f, 1.05070102214813232421875f},
    {"HardSigmoid", "alpha", "beta", 0.2f, 0.5f},
    {"ThresholdedRelu", "alpha", NULL, 1.0f, 0},
};

static const char *const chain_binary[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "PRelu"};

typedef struct chain_step {
    const char *op;
    float p[2];
    int operand; /* value of the other operand of a binary step, else -1 */
    int swap;    /* the operand is the left one (Sub, Div) */
} chain_step;

/* 1 when w broadcasts onto x's shape (static in both probes where it is not
 * x's own shape) as one of the kernels' forms: one element, x's shape, a
 * vector along axis 1 (channels), or along the last axis. */
static int chain_operand_ok(mf_opt *o, int w, int x) {
    const mf_vinfo xi = *mf_opt_info(o, x), wi = *mf_opt_info(o, w);
    if (wi.dtype != MINFER_DTYPE_FLOAT || xi.rank < 1 || wi.rank < 0 || wi.rank > xi.rank)
        return 0;
    if (mf_opt_same_shape(o, w, x))
        return 1;
    int non1 = -1; /* x's axis of w's only dimension other than 1 */
    for (int d = 0; d < wi.rank; d++) {
        int64_t wd = mf_opt_dim(&wi, d);
        if (wd == 1)
            continue;
        int xd = xi.rank - wi.rank + d;
        if (wd < 0 || non1 >= 0 || mf_opt_dim(&xi, xd) != wd)
            return 0;
        non1 = xd;
    }
    return non1 < 0 || (non1 == 1 && xi.rank >= 2) || non1 == xi.rank - 1;
}

/* Node i as a step of a chain whose value v it reads: 1 and *s filled. */
static int chain_step_of(mf_opt *o, int i, int v, chain_step *s) {
    const mf_graph *g = o->g;
    const mf_node *n = &g->nodes[i];
    memset(s, 0, sizeof *s);
    s->operand = -1;
    if (n->n_outputs != 1 || n->outputs[0] < 0 || (n->domain && n->domain[0]) ||
        mf_opt_info(o, n->outputs[0])->dtype != MINFER_DTYPE_FLOAT ||
        !mf_opt_same_shape(o, n->outputs[0], v))
        return 0;
    for (size_t k = 0; k < sizeof chain_unary / sizeof chain_unary[0]; k++)
        if (strcmp(n->op_type, chain_unary[k].op) == 0) {
            if (n->n_inputs != 1 || n->inputs[0] != v)
                return 0;
            s->op = chain_unary[k].op;
            s->p[0] = chain_unary[k].attr_a ? mf_attr_float(n, chain_unary[k].attr_a,
                                                            chain_unary[k].a) : 0;
            s->p[1] = chain_unary[k].attr_b ? mf_attr_float(n, chain_unary[k].attr_b,
                                                            chain_unary[k].b) : 0;
            return 1;
        }
    if (strcmp(n->op_type, "Clip") == 0) {
        if (n->n_inputs < 1 || n->inputs[0] != v)
            return 0;
        float lo = -FLT_MAX, hi = FLT_MAX;
        if (n->opset < 11) {
            lo = mf_attr_float(n, "min", lo);
            hi = mf_attr_float(n, "max", hi);
        } else {
            if (n->n_inputs > 3)
                return 0;
            for (size_t k = 1; k < n->n_inputs; k++) {
                double d;
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
        }
        s->op = "Clip";
        s->p[0] = lo;
        s->p[1] = hi;
        return 1;
    }
    for (size_t k = 0; k < sizeof chain_binary / sizeof chain_binary[0]; k++)
        if (strcmp(n->op_type, chain_binary[k]) == 0) {
            if (n->n_inputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0 ||
                n->inputs[0] == n->inputs[1] || (n->inputs[0] != v && n->inputs[1] != v))
                return 0;
            s->swap = n->inputs[1] == v;
            s->operand = s->swap ? n->inputs[0] : n->inputs[1];
            if ((s->swap && k == 6) || !chain_operand_ok(o, s->operand, v))
                return 0; /* PRelu's slope is the right operand */
            s->op = chain_binary[k];
            return 1;
        }
    return 0;
}

/* Per value: 1 when it follows from constants and input shapes alone
 * (an initializer, Shape or Size, or a node of only such inputs). Those
 * are folded per plan by the CPU evaluator (the session leaves them to
 * every plan), which has no FusedElementwise: a run on them stays. */
static unsigned char *shape_derived(mf_opt *o) {
    const mf_graph *g = o->g;
    unsigned char *d = calloc(g->n_values + 1, 1);
    if (!d)
        return NULL;
    for (size_t v = 0; v < g->n_values; v++)
        d[v] = mf_opt_const(o, (int)v) != NULL;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i))
            continue;
        int all = !n->domain || !n->domain[0];
        int sh = all && (strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0);
        for (size_t a = 0; all && !sh && a < n->n_inputs; a++)
            all = n->inputs[a] < 0 || d[n->inputs[a]];
        for (size_t a = 0; (sh || all) && a < n->n_outputs; a++)
            if (n->outputs[a] >= 0)
                d[n->outputs[a]] = 1;
    }
    return d;
}

/* fuse_elementwise: a run of element-wise nodes on one tensor (unary ops,
 * Clip, and binary ops whose other operand is one element, a channel or
 * last-axis vector, or a tensor of the same shape), each intermediate read
 * by the next node alone -> FusedElementwise(X, operands...): the kernel
 * reads X once and writes the run's result once (docs/fused-ops.md). At
 * least 2 nodes, at most 8, at most 4 operands; the shape never grows.
 * Sessions only, as fuse_concat: the CPU provider has no kernel for it. */
minfer_status mf_pass_fuse_elementwise(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    if (!o->gate)
        return MINFER_OK;
    unsigned char *derived = shape_derived(o);
    if (!derived)
        return mf_opt_oom(o);
    st = MINFER_OK;
    for (size_t k = 0; k < g->n_nodes && st == MINFER_OK; k++) {
        int i = g->order[k];
        chain_step steps[CHAIN_STEPS];
        int nodes[CHAIN_STEPS], n_steps = 0, n_ops = 0;
        if (!live(o, (size_t)i) || g->nodes[i].n_inputs < 1)
            continue;
        /* The chain's input: a unary node's input, or a binary node's
         * operand that is not a constant (a residual Add's first input). */
        const mf_node *h = &g->nodes[i];
        int x = -1;
        for (size_t a = 0; a < h->n_inputs && a < 2 && x < 0; a++)
            if (h->inputs[a] >= 0 && !mf_opt_const(o, h->inputs[a]) &&
                mf_opt_info(o, h->inputs[a])->dtype == MINFER_DTYPE_FLOAT &&
                chain_step_of(o, i, h->inputs[a], &steps[0]))
                x = h->inputs[a];
        if (x < 0 || derived[x] ||
            (steps[0].operand >= 0 && derived[steps[0].operand] &&
             !mf_opt_const(o, steps[0].operand)))
            continue;
        nodes[n_steps++] = i;
        n_ops = steps[0].operand >= 0;
        int v = g->nodes[i].outputs[0];
        while (n_steps < CHAIN_STEPS) {
            int c = mf_opt_single_consumer(o, v);
            chain_step s;
            if (c < 0 || !chain_step_of(o, c, v, &s) || n_ops + (s.operand >= 0) > CHAIN_OPERANDS ||
                (s.operand >= 0 && derived[s.operand] && !mf_opt_const(o, s.operand)))
                break;
            steps[n_steps] = s;
            nodes[n_steps++] = c;
            n_ops += s.operand >= 0;
            v = g->nodes[c].outputs[0];
        }
        if (n_steps < 2)
            continue;
        /* The last node becomes the fused one. */
        int last = nodes[n_steps - 1];
        char ops[CHAIN_STEPS * 20] = "";
        float params[2 * CHAIN_STEPS];
        int64_t operand[CHAIN_STEPS], swap[CHAIN_STEPS];
        int ins[1 + CHAIN_OPERANDS], n_ins = 1;
        ins[0] = x;
        for (int s = 0; s < n_steps; s++) {
            if (s)
                strcat(ops, ",");
            strcat(ops, steps[s].op);
            params[2 * s] = steps[s].p[0];
            params[2 * s + 1] = steps[s].p[1];
            operand[s] = steps[s].operand >= 0 ? n_ins : 0;
            swap[s] = steps[s].swap;
            if (steps[s].operand >= 0)
                ins[n_ins++] = steps[s].operand;
        }
        static const char *const drop[] = {"alpha", "beta", "gamma", "min", "max"};
        if ((st = mf_opt_fuse_save(o, last)) != MINFER_OK)
            break;
        for (size_t a = 0; a < sizeof drop / sizeof drop[0]; a++)
            mf_opt_drop_attr(o, last, drop[a]);
        if ((st = mf_opt_set_inputs(o, last, ins, (size_t)n_ins)) != MINFER_OK ||
            (st = mf_opt_set_op(o, last, "minfer", "FusedElementwise")) != MINFER_OK ||
            (st = mf_opt_set_attr_string(o, last, "ops", ops)) != MINFER_OK ||
            (st = mf_opt_set_attr_floats(o, last, "params", params, (size_t)(2 * n_steps))) !=
                MINFER_OK ||
            (st = mf_opt_set_attr_ints(o, last, "operand", operand, (size_t)n_steps)) !=
                MINFER_OK ||
            (st = mf_opt_set_attr_ints(o, last, "swap", swap, (size_t)n_steps)) != MINFER_OK)
            break;
        o->fuse_optional = 1;
        int kept = mf_opt_fuse_keep(o, last);
        o->fuse_optional = 0;
        if (!kept) /* no provider of the session runs it (gate.c) */
            continue;
        for (int s = 0; s < n_steps - 1; s++)
            mf_opt_kill(o, nodes[s]);
        (*fired)++;
        st = mf_opt_reindex(o);
    }
    free(derived);
    return st;
}

/* ---- fuse_gated_conv ------------------------------------------------------- */

/* 1 when gate s broadcasts onto x [N, C, spatial...] as one value per
 * channel, or per image and channel: rank x's or one less, C at x's
 * axis 1, 1 on every spatial axis, and 1 or N (or symbolic: the kernel
 * checks at run time) on axis 0 where s has it. */
static int gate_fits(mf_opt *o, int s, int x) {
    const mf_vinfo xi = *mf_opt_info(o, x), si = *mf_opt_info(o, s);
    int64_t C = mf_opt_dim(&xi, 1);
    int off = xi.rank - si.rank;
    if (si.dtype != MINFER_DTYPE_FLOAT || xi.rank < 3 || si.rank < 0 || off < 0 || off > 1 ||
        C <= 0 || mf_opt_dim(&si, 1 - off) != C)
        return 0;
    for (int d = 2; d < xi.rank; d++)
        if (mf_opt_dim(&si, d - off) != 1)
            return 0;
    if (off == 1)
        return 1;
    int64_t sn = mf_opt_dim(&si, 0), xn = mf_opt_dim(&xi, 0);
    return sn == 1 || sn < 0 || sn == xn;
}

/* fuse_gated_conv: a squeeze-excitation block's Mul(X, S), S one value per
 * image and channel (the sigmoid of the block's second 1x1 convolution,
 * broadcast over the spatial axes), read only by a Conv or FusedConv as
 * its X -> GatedConv(X, W, B, Z, S): the convolution reads X times S as
 * it loads it, and the gated tensor is never written (one launch and a
 * tensor's round trip less per block). Checked: float; the Mul's output
 * has X's shape, is read by that convolution alone and not pinned; S fits
 * gate_fits; neither X nor S follows from constants and input shapes alone
 * (the CPU evaluator folds those, and has no GatedConv). Sessions only, as
 * fuse_concat: the CPU provider has no kernel for it. */
minfer_status mf_pass_fuse_gated_conv(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st = MINFER_OK;
    if (!o->gate)
        return MINFER_OK;
    unsigned char *derived = shape_derived(o);
    if (!derived)
        return mf_opt_oom(o);
    for (size_t k = 0; k < g->n_nodes && st == MINFER_OK; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        int fused = n->domain && strcmp(n->domain, "minfer") == 0 &&
                    strcmp(n->op_type, "FusedConv") == 0;
        if (!live(o, (size_t)i) || (!fused && !mf_opt_is(g, i, "Conv")) || n->n_inputs < 2 ||
            n->n_inputs > (fused ? 4u : 3u) || n->n_outputs != 1 || n->inputs[0] < 0 ||
            n->inputs[1] < 0)
            continue;
        int v = n->inputs[0], m = mf_opt_producer(o, v);
        if (m < 0 || !mf_opt_is(g, m, "Mul") || mf_opt_single_consumer(o, v) != i ||
            g->nodes[m].n_inputs != 2 || g->nodes[m].n_outputs != 1 ||
            mf_opt_info(o, v)->dtype != MINFER_DTYPE_FLOAT)
            continue;
        const int *mi = g->nodes[m].inputs;
        int x = -1, s = -1;
        for (int a = 0; a < 2 && x < 0; a++)
            if (mi[a] >= 0 && mi[1 - a] >= 0 && mi[a] != mi[1 - a] &&
                mf_opt_same_shape(o, mi[a], v) && gate_fits(o, mi[1 - a], mi[a])) {
                x = mi[a];
                s = mi[1 - a];
            }
        if (x < 0 || derived[x] || derived[s])
            continue;
        int ins[5] = {x, n->inputs[1], n->n_inputs > 2 ? n->inputs[2] : -1,
                      n->n_inputs > 3 ? n->inputs[3] : -1, s};
        if ((st = mf_opt_fuse_save(o, i)) != MINFER_OK ||
            (st = mf_opt_set_inputs(o, i, ins, 5)) != MINFER_OK ||
            (st = mf_opt_set_op(o, i, "minfer", "GatedConv")) != MINFER_OK)
            break;
        o->fuse_optional = 1; /* a session without such a provider is no loss */
        int kept = mf_opt_fuse_keep(o, i);
        o->fuse_optional = 0;
        if (!kept) /* no provider of the session runs it (gate.c) */
            continue;
        mf_opt_kill(o, m);
        (*fired)++;
        st = mf_opt_reindex(o);
    }
    free(derived);
    return st;
}
