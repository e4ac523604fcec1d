/*
 * Level 2: the transformer patterns exporters spell out op by op.
 *
 *  fuse_layernorm  ReduceMean(X) -> Sub(X, mean) -> Pow(., 2) -> ReduceMean
 *                  -> Add(., eps) -> Sqrt -> Div(sub, sqrt) -> Mul(., scale)
 *                  [-> Add(., bias)]  =>  LayerNormalization(X, scale, bias)
 *                  Both ReduceMeans over the same single last axis with
 *                  keepdims; scale and bias 1-D of X's static last dim; eps
 *                  and the exponent scalar constants.
 *  fuse_rmsnorm    Pow(X, 2) | Mul(X, X) -> ReduceMean -> Add(., eps) -> Sqrt
 *                  -> Reciprocal | Div(1, .) -> Mul(X, .), or Div(X, sqrt),
 *                  -> Mul(., scale)  =>  RMSNormalization(X, scale)
 *                  (the ReduceMean as LayerNorm's; eps inside the root)
 *  fuse_gelu       Div(X, sqrt 2) | Mul(X, 1/sqrt 2) -> Erf -> Add(., 1) and
 *                  the two Muls by X and 0.5 in any order, including
 *                  Mul(Mul(X, 0.5), .)  =>  Gelu(X)
 *                  and the tanh form (GPT-2's gelu_new): Pow(X, 3) ->
 *                  Mul(., 0.044715) -> Add(X, .) -> Mul(., sqrt(2/pi)) ->
 *                  Tanh -> Add(., 1) and the same Muls  =>
 *                  Gelu(X, approximate "tanh")
 *  square_pow      Pow(X, 2) => Mul(X, X) (RMSNorm's square, left after
 *                  fuse_layernorm took LayerNorm's): the same float, the
 *                  product of two floats being exact in double, and a
 *                  binary op every provider runs fast.
 *  fuse_matmul_gelu  MatMul | Gemm | FusedMatMul | FusedGemm (no activation)
 *                  -> Gelu  =>  the fused op with activation Gelu or GeluTanh
 *  where_mask      Where(C, S, F) | Where(C, F, S) -> Softmax(last axis), C a
 *                  bool broadcasting to S, F a float scalar  =>
 *                  Add(S, C ? 0 : F) (or C ? F : 0), for fuse_attention:
 *                  the mask folded when C is a constant, else made at run
 *                  time by a new Where over C's shape
 *  fuse_attention  MatMul(Q, KT) -> Div | Mul by a scalar (or Q scaled
 *                  before the MatMul, as PyTorch exports it, or no scale)
 *                  [-> Add(mask)] -> Softmax(last axis) -> MatMul(., V)
 *                  =>  Attention(Q, KT, V, mask; scale). Q's last dim must
 *                  match KT's second-to-last, KT's last V's second-to-last,
 *                  and the mask must broadcast to the scores without
 *                  growing them.
 *
 * Constants must be single-element float initializers that cannot widen
 * the result by broadcasting (rank 0, or a rank not above the operand's).
 * Every intermediate has exactly the readers the pattern names (Sub's
 * output feeds Pow and Div) and is not a graph output.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

static int live(const mf_opt *o, size_t i) { return !(i < o->cap_dead && o->dead[i]); }

/* Runs try_at on every live node of type op, in order; counts the
 * rewrites in *fired and reindexes after each one. */
typedef minfer_status (*try_fn)(mf_opt *o, int node, int *done);
static minfer_status each_op(mf_opt *o, const char *op, try_fn try_at, size_t *fired) {
    mf_graph *g = o->g;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k], done = 0;
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, op))
            continue;
        minfer_status st = try_at(o, i, &done);
        if (st == MINFER_OK && done) {
            (*fired)++;
            st = mf_opt_reindex(o);
        }
        if (st != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

/* The operand of binary node i that is not v (-1 unless exactly one is v). */
static int other_input(const mf_graph *g, int i, int v) {
    const mf_node *n = &g->nodes[i];
    if (n->n_inputs != 2 || n->n_outputs != 1 || n->outputs[0] < 0)
        return -1;
    if (n->inputs[0] == v && n->inputs[1] != v)
        return n->inputs[1];
    if (n->inputs[1] == v && n->inputs[0] != v)
        return n->inputs[0];
    return -1;
}

/* A one-element float constant c that broadcasting with x cannot widen. */
static int scalar_for(mf_opt *o, int c, int x, double *val) {
    const minfer_tensor *t = mf_opt_const(o, c);
    if (!t || !mf_opt_scalar(o, c, val) || t->view.dtype != MINFER_DTYPE_FLOAT)
        return 0;
    if (t->view.rank == 0)
        return 1;
    int r = mf_opt_info(o, x)->rank;
    return r >= t->view.rank;
}

static int out0(const mf_graph *g, int i) { return g->nodes[i].outputs[0]; }

static int near(double a, double b, double rel) { return fabs(a - b) <= rel * fabs(b); }

/* The single reduced axis of a ReduceMean with keepdims (normalized to -1
 * when it is the last of a known rank), or 0 for anything else. */
static int reduce_last_axis(mf_opt *o, int i) {
    const mf_node *n = &o->g->nodes[i];
    int64_t axes[MINFER_MAX_RANK];
    int cnt;
    if (mf_attr_int(n, "keepdims", 1) != 1 || n->n_outputs != 1)
        return 0;
    if (n->opset >= 18) {
        if (n->n_inputs < 2 || mf_attr_int(n, "noop_with_empty_axes", 0))
            return 0;
        cnt = mf_opt_const_ints(o, n->inputs[1], axes, MINFER_MAX_RANK);
    } else {
        const int64_t *a;
        cnt = (int)mf_attr_ints(n, "axes", &a);
        if (cnt == 1)
            axes[0] = a[0];
        if (n->n_inputs != 1)
            return 0;
    }
    if (cnt != 1)
        return 0;
    int r = mf_opt_info(o, n->inputs[0])->rank;
    if (axes[0] == -1 || (r >= 1 && axes[0] == r - 1))
        return -1;
    return 0;
}

/* ---- LayerNorm ------------------------------------------------------------ */

static minfer_status try_layernorm(mf_opt *o, int r1, int *done) {
    mf_graph *g = o->g;
    double two, eps;
    *done = 0;
    const mf_node *n = &g->nodes[r1];
    int x = n->inputs[0];
    if (x < 0 || reduce_last_axis(o, r1) != -1)
        return MINFER_OK;
    const mf_vinfo xi = *mf_opt_info(o, x);
    if (xi.dtype != MINFER_DTYPE_FLOAT || xi.rank < 1 || mf_opt_dim(&xi, xi.rank - 1) < 0)
        return MINFER_OK;
    int64_t D = mf_opt_dim(&xi, xi.rank - 1);
    int sub = mf_opt_single_consumer(o, out0(g, r1));
    if (!mf_opt_is(g, sub, "Sub") || g->nodes[sub].n_inputs != 2 || g->nodes[sub].inputs[0] != x ||
        g->nodes[sub].inputs[1] != out0(g, r1))
        return MINFER_OK;
    int s = out0(g, sub);
    if (s < 0 || o->pinned[s] || mf_opt_nuses(o, s) != 2)
        return MINFER_OK;
    int c0 = o->cons[o->cons_start[s]], c1 = o->cons[o->cons_start[s] + 1];
    int pw = mf_opt_is(g, c0, "Pow") ? c0 : c1, dv = pw == c0 ? c1 : c0;
    if (!mf_opt_is(g, pw, "Pow") || !mf_opt_is(g, dv, "Div") || g->nodes[pw].n_inputs != 2 ||
        g->nodes[pw].inputs[0] != s || !scalar_for(o, g->nodes[pw].inputs[1], s, &two) ||
        two != 2.0)
        return MINFER_OK;
    int r2 = mf_opt_single_consumer(o, out0(g, pw));
    if (!mf_opt_is(g, r2, "ReduceMean") || reduce_last_axis(o, r2) != -1)
        return MINFER_OK;
    int add = mf_opt_single_consumer(o, out0(g, r2));
    if (!mf_opt_is(g, add, "Add"))
        return MINFER_OK;
    int ev = other_input(g, add, out0(g, r2));
    if (ev < 0 || !scalar_for(o, ev, out0(g, r2), &eps) || eps < 0)
        return MINFER_OK;
    int sq = mf_opt_single_consumer(o, out0(g, add));
    if (!mf_opt_is(g, sq, "Sqrt") || g->nodes[sq].n_inputs != 1 ||
        mf_opt_single_consumer(o, out0(g, sq)) != dv || g->nodes[dv].n_inputs != 2 ||
        g->nodes[dv].inputs[0] != s || g->nodes[dv].inputs[1] != out0(g, sq))
        return MINFER_OK;
    int mul = mf_opt_single_consumer(o, out0(g, dv));
    if (!mf_opt_is(g, mul, "Mul"))
        return MINFER_OK;
    int scale = other_input(g, mul, out0(g, dv));
    const mf_vinfo *si = mf_opt_info(o, scale);
    if (scale < 0 || si->dtype != MINFER_DTYPE_FLOAT || si->rank != 1 || mf_opt_dim(si, 0) != D)
        return MINFER_OK;
    int last = mul, bias = -1;
    int badd = mf_opt_single_consumer(o, out0(g, mul));
    if (mf_opt_is(g, badd, "Add")) {
        int b = other_input(g, badd, out0(g, mul));
        const mf_vinfo *bi = mf_opt_info(o, b);
        if (b >= 0 && bi->dtype == MINFER_DTYPE_FLOAT && bi->rank == 1 && mf_opt_dim(bi, 0) == D) {
            bias = b;
            last = badd;
        }
    }
    int ins[3] = {x, scale, bias};
    minfer_status st;
    if ((st = mf_opt_fuse_save(o, last)) != MINFER_OK ||
        (st = mf_opt_set_inputs(o, last, ins, bias >= 0 ? 3 : 2)) != MINFER_OK ||
        (st = mf_opt_set_op(o, last, "minfer", "LayerNormalization")) != MINFER_OK ||
        (st = mf_opt_set_attr_int(o, last, "axis", -1)) != MINFER_OK ||
        (st = mf_opt_set_attr_float(o, last, "epsilon", (float)eps)) != MINFER_OK)
        return st;
    if (!mf_opt_fuse_keep(o, last)) /* no provider of the session runs it (gate.c) */
        return MINFER_OK;
    int kill[] = {r1, sub, pw, r2, add, sq, dv, mul};
    for (size_t k = 0; k < sizeof kill / sizeof kill[0]; k++)
        if (kill[k] != last)
            mf_opt_kill(o, kill[k]);
    *done = 1;
    return MINFER_OK;
}

minfer_status mf_pass_fuse_layernorm(mf_opt *o, size_t *fired) {
    return each_op(o, "ReduceMean", try_layernorm, fired);
}

/* ---- RMSNorm ---------------------------------------------------------------- */

/* From ReduceMean r: Pow(X, 2) | Mul(X, X) -> r -> Add(., eps) -> Sqrt, then
 * Reciprocal | Div(1, .) and Mul(X, .), or Div(X, .), then Mul by the
 * scale (either side)  =>  RMSNormalization(X, scale; axis -1, epsilon).
 * The reduction is over X's last axis only, with keepdims; eps is added
 * inside the square root (outside it is another function); the scale is
 * 1-D of X's static last dim. */
static minfer_status try_rmsnorm(mf_opt *o, int r, int *done) {
    mf_graph *g = o->g;
    double c, eps;
    *done = 0;
    if (g->nodes[r].n_inputs < 1)
        return MINFER_OK;
    int s = g->nodes[r].inputs[0], sq = mf_opt_producer(o, s);
    if (s < 0 || reduce_last_axis(o, r) != -1 || mf_opt_single_consumer(o, s) != r || sq < 0 ||
        g->nodes[sq].n_inputs != 2)
        return MINFER_OK;
    int x = g->nodes[sq].inputs[0];
    if (x < 0 || !((mf_opt_is(g, sq, "Pow") && scalar_for(o, g->nodes[sq].inputs[1], x, &c) &&
                    c == 2.0) ||
                   (mf_opt_is(g, sq, "Mul") && g->nodes[sq].inputs[1] == x)))
        return MINFER_OK;
    const mf_vinfo xi = *mf_opt_info(o, x);
    if (xi.dtype != MINFER_DTYPE_FLOAT || xi.rank < 1 || mf_opt_dim(&xi, xi.rank - 1) < 0)
        return MINFER_OK;
    int64_t D = mf_opt_dim(&xi, xi.rank - 1);
    int add = mf_opt_single_consumer(o, out0(g, r));
    if (!mf_opt_is(g, add, "Add"))
        return MINFER_OK;
    int ev = other_input(g, add, out0(g, r));
    if (ev < 0 || !scalar_for(o, ev, out0(g, r), &eps) || eps < 0)
        return MINFER_OK;
    int sqrt_n = mf_opt_single_consumer(o, out0(g, add));
    if (!mf_opt_is(g, sqrt_n, "Sqrt") || g->nodes[sqrt_n].n_inputs != 1)
        return MINFER_OK;
    int rt = out0(g, sqrt_n), inv_n = mf_opt_single_consumer(o, rt), mul = -1, nrm;
    if (inv_n < 0 || g->nodes[inv_n].n_outputs != 1 || out0(g, inv_n) < 0)
        return MINFER_OK;
    const int *ii = g->nodes[inv_n].inputs;
    if (mf_opt_is(g, inv_n, "Div") && g->nodes[inv_n].n_inputs == 2 && ii[0] == x &&
        ii[1] == rt) {
        nrm = inv_n; /* Div(X, sqrt) */
    } else if ((mf_opt_is(g, inv_n, "Reciprocal") && g->nodes[inv_n].n_inputs == 1) ||
               (mf_opt_is(g, inv_n, "Div") && g->nodes[inv_n].n_inputs == 2 && ii[1] == rt &&
                ii[0] >= 0 && ii[0] != rt && scalar_for(o, ii[0], rt, &c) && c == 1.0)) {
        mul = mf_opt_single_consumer(o, out0(g, inv_n));
        if (!mf_opt_is(g, mul, "Mul") || other_input(g, mul, out0(g, inv_n)) != x)
            return MINFER_OK;
        nrm = mul;
    } else {
        return MINFER_OK;
    }
    int wm = mf_opt_single_consumer(o, out0(g, nrm));
    if (!mf_opt_is(g, wm, "Mul"))
        return MINFER_OK;
    int scale = other_input(g, wm, out0(g, nrm));
    const mf_vinfo *si = mf_opt_info(o, scale);
    if (scale < 0 || si->dtype != MINFER_DTYPE_FLOAT || si->rank != 1 || mf_opt_dim(si, 0) != D)
        return MINFER_OK;
    int ins[2] = {x, scale};
    minfer_status st;
    if ((st = mf_opt_fuse_save(o, wm)) != MINFER_OK ||
        (st = mf_opt_set_inputs(o, wm, ins, 2)) != MINFER_OK ||
        (st = mf_opt_set_op(o, wm, "minfer", "RMSNormalization")) != MINFER_OK ||
        (st = mf_opt_set_attr_int(o, wm, "axis", -1)) != MINFER_OK ||
        (st = mf_opt_set_attr_float(o, wm, "epsilon", (float)eps)) != MINFER_OK)
        return st;
    if (!mf_opt_fuse_keep(o, wm)) /* no provider of the session runs it (gate.c) */
        return MINFER_OK;
    int kill[] = {sq, r, add, sqrt_n, inv_n, mul};
    for (size_t k = 0; k < sizeof kill / sizeof kill[0]; k++)
        if (kill[k] >= 0)
            mf_opt_kill(o, kill[k]);
    *done = 1;
    return MINFER_OK;
}

minfer_status mf_pass_fuse_rmsnorm(mf_opt *o, size_t *fired) {
    return each_op(o, "ReduceMean", try_rmsnorm, fired);
}

/* ---- Gelu ----------------------------------------------------------------- */

/* The tail both forms share, from t (Erf's or Tanh's output): Add(t, 1)
 * and the Muls by X and 0.5. Returns the last node (-1: no match); *a1,
 * *m1 and *half (-1 when absent) are the other nodes. */
static int gelu_tail(mf_opt *o, int t, int x, int *a1, int *m1, int *half) {
    mf_graph *g = o->g;
    double c;
    *half = -1;
    *a1 = mf_opt_single_consumer(o, t);
    if (!mf_opt_is(g, *a1, "Add"))
        return -1;
    int one = other_input(g, *a1, t);
    if (one < 0 || !scalar_for(o, one, x, &c) || c != 1.0)
        return -1;
    *m1 = mf_opt_single_consumer(o, out0(g, *a1));
    if (!mf_opt_is(g, *m1, "Mul"))
        return -1;
    int o1 = other_input(g, *m1, out0(g, *a1));
    if (o1 == x) { /* Mul(Mul(X, 1 + t), 0.5) */
        int m2 = mf_opt_single_consumer(o, out0(g, *m1));
        if (mf_opt_is(g, m2, "Mul") && scalar_for(o, other_input(g, m2, out0(g, *m1)), x, &c) &&
            c == 0.5)
            return m2;
    } else if (o1 >= 0 && scalar_for(o, o1, x, &c) && c == 0.5) { /* Mul(Mul(1 + t, 0.5), X) */
        int m2 = mf_opt_single_consumer(o, out0(g, *m1));
        if (mf_opt_is(g, m2, "Mul") && other_input(g, m2, out0(g, *m1)) == x)
            return m2;
    } else if (o1 >= 0) { /* Mul(Mul(X, 0.5), 1 + t) */
        int h = mf_opt_producer(o, o1);
        if (mf_opt_is(g, h, "Mul") && mf_opt_single_consumer(o, o1) == *m1 &&
            scalar_for(o, other_input(g, h, x), x, &c) && c == 0.5) {
            *half = h;
            return *m1;
        }
    }
    return -1;
}

/* Makes node last Gelu(x) (approximate "tanh" when tanh) and kills the
 * pattern's other nodes (entries < 0 skipped); *done 0 when no provider
 * of the session runs the Gelu (gate.c) and the pattern stays. */
static minfer_status make_gelu(mf_opt *o, int last, int x, int tanh_form, const int *kill,
                               size_t n_kill, int *done) {
    int ins[1] = {x};
    minfer_status st;
    if ((st = mf_opt_fuse_save(o, last)) != MINFER_OK ||
        (st = mf_opt_set_inputs(o, last, ins, 1)) != MINFER_OK ||
        (st = mf_opt_set_op(o, last, "minfer", "Gelu")) != MINFER_OK ||
        (tanh_form && (st = mf_opt_set_attr_string(o, last, "approximate", "tanh")) != MINFER_OK))
        return st;
    if (!(*done = mf_opt_fuse_keep(o, last)))
        return MINFER_OK;
    for (size_t k = 0; k < n_kill; k++)
        if (kill[k] >= 0 && kill[k] != last)
            mf_opt_kill(o, kill[k]);
    return MINFER_OK;
}

static minfer_status try_gelu(mf_opt *o, int erf, int *done) {
    mf_graph *g = o->g;
    double c;
    *done = 0;
    int d = g->nodes[erf].inputs[0];
    int dn = mf_opt_producer(o, d);
    if (g->nodes[erf].n_inputs != 1 || mf_opt_single_consumer(o, d) != erf || dn < 0 ||
        g->nodes[dn].n_inputs != 2)
        return MINFER_OK;
    int x = -1;
    if (mf_opt_is(g, dn, "Div")) {
        x = g->nodes[dn].inputs[0];
        if (!scalar_for(o, g->nodes[dn].inputs[1], x, &c) || !near(c, sqrt(2.0), 1e-4))
            return MINFER_OK;
    } else if (mf_opt_is(g, dn, "Mul")) {
        for (int k = 0; k < 2 && x < 0; k++) {
            int cand = g->nodes[dn].inputs[k], cv = g->nodes[dn].inputs[1 - k];
            if (scalar_for(o, cv, cand, &c) && near(c, sqrt(0.5), 1e-4))
                x = cand;
        }
    }
    if (x < 0 || mf_opt_info(o, x)->dtype != MINFER_DTYPE_FLOAT)
        return MINFER_OK;
    int a1, m1, half, last = gelu_tail(o, out0(g, erf), x, &a1, &m1, &half);
    if (last < 0)
        return MINFER_OK;
    int kill[] = {dn, erf, a1, m1, half};
    return make_gelu(o, last, x, 0, kill, sizeof kill / sizeof kill[0], done);
}

/* Binary node i with a scalar constant operand near want (relative 1e-4):
 * its other operand, or -1. */
static int times_scalar(mf_opt *o, int i, double want) {
    mf_graph *g = o->g;
    double c;
    if (!mf_opt_is(g, i, "Mul") || g->nodes[i].n_inputs != 2)
        return -1;
    for (int k = 0; k < 2; k++) {
        int v = g->nodes[i].inputs[1 - k], cv = g->nodes[i].inputs[k];
        if (v >= 0 && scalar_for(o, cv, v, &c) && near(c, want, 1e-4))
            return v;
    }
    return -1;
}

static minfer_status try_gelu_tanh(mf_opt *o, int th, int *done) {
    mf_graph *g = o->g;
    double c;
    *done = 0;
    /* Tanh(Mul(Add(X, Mul(Pow(X, 3), 0.044715)), sqrt(2/pi))) */
    int u = g->nodes[th].inputs[0], mu = mf_opt_producer(o, u);
    if (mf_opt_single_consumer(o, u) != th)
        return MINFER_OK;
    int inner = times_scalar(o, mu, 0.7978845608028654 /* sqrt(2 / pi) */), ad = mf_opt_producer(o, inner);
    if (inner < 0 || mf_opt_single_consumer(o, inner) != mu || !mf_opt_is(g, ad, "Add") ||
        g->nodes[ad].n_inputs != 2)
        return MINFER_OK;
    for (int k = 0; k < 2; k++) {
        int x = g->nodes[ad].inputs[k], cube = g->nodes[ad].inputs[1 - k];
        int mc = mf_opt_producer(o, cube);
        int p = times_scalar(o, mc, 0.044715), pw = mf_opt_producer(o, p);
        if (x < 0 || mf_opt_info(o, x)->dtype != MINFER_DTYPE_FLOAT ||
            mf_opt_single_consumer(o, cube) != ad || p < 0 ||
            mf_opt_single_consumer(o, p) != mc || !mf_opt_is(g, pw, "Pow") ||
            g->nodes[pw].n_inputs != 2 || g->nodes[pw].inputs[0] != x ||
            !scalar_for(o, g->nodes[pw].inputs[1], x, &c) || c != 3.0)
            continue;
        int a1, m1, half, last = gelu_tail(o, out0(g, th), x, &a1, &m1, &half);
        if (last < 0)
            return MINFER_OK;
        int kill[] = {pw, mc, ad, mu, th, a1, m1, half};
        return make_gelu(o, last, x, 1, kill, sizeof kill / sizeof kill[0], done);
    }
    return MINFER_OK;
}

minfer_status mf_pass_fuse_gelu(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k], done = 0;
        int erf = mf_opt_is(g, i, "Erf");
        if (!live(o, (size_t)i) || (!erf && !mf_opt_is(g, i, "Tanh")) ||
            g->nodes[i].n_inputs != 1 || g->nodes[i].inputs[0] < 0 ||
            g->nodes[i].n_outputs != 1)
            continue;
        minfer_status st = erf ? try_gelu(o, i, &done) : try_gelu_tanh(o, i, &done);
        if (st == MINFER_OK && done) {
            (*fired)++;
            st = mf_opt_reindex(o);
        }
        if (st != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

/* ---- Pow(X, 2) ------------------------------------------------------------- */

minfer_status mf_pass_square_pow(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    double c;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "Pow") || n->n_inputs != 2 ||
            n->n_outputs != 1 || n->inputs[0] < 0 ||
            mf_opt_info(o, n->inputs[0])->dtype != MINFER_DTYPE_FLOAT ||
            !scalar_for(o, n->inputs[1], n->inputs[0], &c) || c != 2.0)
            continue;
        int ins[2] = {n->inputs[0], n->inputs[0]};
        minfer_status st;
        if ((st = mf_opt_set_inputs(o, i, ins, 2)) != MINFER_OK ||
            (st = mf_opt_set_op(o, i, "", "Mul")) != MINFER_OK)
            return st;
        (*fired)++;
    }
    return MINFER_OK;
}

/* ---- Constant masks before a Softmax ------------------------------------------ */

static int same_dim(const mf_vinfo *u, int d, const mf_vinfo *w, int e);

/* The Where w of try_where_mask whose condition c is computed (GPT-2's
 * causal mask sliced from a buffer to the sequence length, unknown until
 * the plan's shapes are): c must broadcast to the scores sv without
 * growing them (its dims 1 or the scores' own, as the probes see them).
 * A new node Where(c, 0, F) (or Where(c, F, 0) when k is 2) makes the
 * float mask M at run time, over c's shape (one [S, S] plane for GPT-2,
 * not the heads' scores), and w becomes Add(sv, M). */
static minfer_status where_mask_node(mf_opt *o, int w, int c, int sv, int fv, int k, int *done) {
    mf_graph *g = o->g;
    const mf_vinfo ci = *mf_opt_info(o, c), si = *mf_opt_info(o, sv);
    if (ci.rank < 0 || ci.rank > si.rank)
        return MINFER_OK;
    for (int d = 0; d < ci.rank; d++)
        if (mf_opt_dim(&ci, d) != 1 && !same_dim(&ci, d, &si, si.rank - ci.rank + d))
            return MINFER_OK;
    minfer_tensor *zt = NULL;
    if (mf_tensor_new(MINFER_DTYPE_FLOAT, NULL, 0, &zt) != MINFER_OK)
        return mf_opt_oom(o);
    *(float *)zt->view.data = 0.0f;
    int zv = mf_opt_add_const(o, "attn_zero", zt);
    if (zv < 0)
        return mf_opt_oom(o);
    char name[512];
    const char *base = g->values[out0(g, w)].name ? g->values[out0(g, w)].name : "where";
    int mv = -1;
    for (int tries = 0; tries < 1000 && mv < 0; tries++) {
        snprintf(name, sizeof name, "%s_mask_opt%u", base, o->name_seq++);
        if (mf_graph_find(g, name) < 0 && (mv = mf_graph_intern(g, name)) < 0)
            return mf_opt_oom(o);
    }
    if (mv < 0)
        return MINFER_OK;
    int64_t opset = g->nodes[w].opset;
    int i = mf_graph_add_node(g); /* g->nodes may move: no node pointers kept */
    if (i < 0)
        return mf_opt_oom(o);
    mf_node *nd = &g->nodes[i];
    nd->name = mf_strdup(name);
    nd->op_type = mf_strdup("Where");
    nd->domain = mf_strdup("");
    nd->opset = opset;
    nd->outputs = mf_malloc(sizeof *nd->outputs);
    if (!nd->name || !nd->op_type || !nd->domain || !nd->outputs)
        return mf_opt_oom(o);
    nd->outputs[0] = mv;
    nd->n_outputs = 1;
    int mins[3] = {c, k == 2 ? fv : zv, k == 2 ? zv : fv}, ins[2] = {sv, mv};
    minfer_status st;
    if ((st = mf_opt_set_inputs(o, i, mins, 3)) != MINFER_OK ||
        (st = mf_opt_set_inputs(o, w, ins, 2)) != MINFER_OK ||
        (st = mf_opt_set_op(o, w, "", "Add")) != MINFER_OK)
        return st;
    *done = 1;
    return MINFER_OK;
}

/* Where(C, S, F) or Where(C, F, S) read only by a Softmax over the last
 * axis, with C a constant bool (a causal mask, folded for the plan's
 * shapes) that broadcasts to S without growing it and F a float scalar
 * constant at most -1e30  =>  Add(S, M) with M = C ? 0 : F (or C ? F : 0),
 * of C's shape. Masked scores become S + F instead of F: with F -inf or the
 * lowest float (what exporters write) that is F again, so the Softmax
 * sees the same scores; fuse_attention then takes M as the attention
 * mask. */
static minfer_status try_where_mask(mf_opt *o, int w, int *done) {
    mf_graph *g = o->g;
    double f;
    *done = 0;
    const mf_node *n = &g->nodes[w];
    if (n->n_inputs != 3 || n->n_outputs != 1 || out0(g, w) < 0)
        return MINFER_OK;
    int sm = mf_opt_single_consumer(o, out0(g, w));
    if (!mf_opt_is(g, sm, "Softmax") || g->nodes[sm].opset < 13)
        return MINFER_OK;
    int c = n->inputs[0], k;
    const minfer_tensor *ct = c >= 0 ? mf_opt_const(o, c) : NULL;
    if (c < 0 || (ct ? ct->view.dtype : mf_opt_info(o, c)->dtype) != MINFER_DTYPE_BOOL)
        return MINFER_OK;
    for (k = 1; k < 3; k++)
        if (n->inputs[3 - k] >= 0 && n->inputs[k] >= 0 &&
            scalar_for(o, n->inputs[3 - k], n->inputs[k], &f))
            break;
    /* Only a fill that swamps any score: S + F rounds to F itself for
     * |S| < 1e22 (the lowest float), or is -inf. A milder fill (-1e4) would
     * leave S + F different from F in a row that is masked whole. */
    if (k == 3 || !(f <= -1e30))
        return MINFER_OK;
    int sv = n->inputs[k];
    const mf_vinfo si = *mf_opt_info(o, sv);
    int64_t axis = mf_attr_int(&g->nodes[sm], "axis", -1);
    if (si.dtype != MINFER_DTYPE_FLOAT || (axis != -1 && axis != si.rank - 1))
        return MINFER_OK;
    if (!ct)
        return where_mask_node(o, w, c, sv, n->inputs[3 - k], k, done);
    if (si.rank < ct->view.rank)
        return MINFER_OK;
    for (int d = 0; d < ct->view.rank; d++) {
        int64_t cd = ct->view.dims[d], sd = mf_opt_dim(&si, si.rank - ct->view.rank + d);
        if (cd != 1 && cd != sd)
            return MINFER_OK;
    }
    int64_t cnt = mf_opt_numel(&ct->view);
    if (cnt < 1 || (uint64_t)cnt * sizeof(float) > o->ctx->fold_max_bytes)
        return MINFER_OK;
    minfer_tensor *mt = NULL;
    if (mf_tensor_new(MINFER_DTYPE_FLOAT, ct->view.dims, ct->view.rank, &mt) != MINFER_OK)
        return mf_opt_oom(o);
    const unsigned char *cb = ct->view.data;
    float *m = mt->view.data;
    for (int64_t i = 0; i < cnt; i++)
        m[i] = (cb[i] != 0) == (k == 2) ? (float)f : 0.0f;
    int mv = mf_opt_add_const(o, "attn_mask", mt);
    if (mv < 0)
        return mf_opt_oom(o);
    int ins[2] = {sv, mv};
    minfer_status st;
    if ((st = mf_opt_set_inputs(o, w, ins, 2)) != MINFER_OK ||
        (st = mf_opt_set_op(o, w, "", "Add")) != MINFER_OK)
        return st;
    *done = 1;
    return MINFER_OK;
}

/* Where the pass adds nodes (where_mask_node), each_op's walk of g->order
 * would run past the order it was given: this walk stops at the nodes
 * there were when it began, and the analysis is made again for the next
 * pass, which must see the new mask values. */
minfer_status mf_pass_where_mask(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    size_t n = g->n_nodes, added = g->n_values;
    for (size_t k = 0; k < n; k++) {
        int i = g->order[k], done = 0;
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "Where"))
            continue;
        minfer_status st = try_where_mask(o, i, &done);
        if (st == MINFER_OK && done) {
            (*fired)++;
            st = mf_opt_reindex(o);
        }
        if (st != MINFER_OK)
            return st;
    }
    if (g->n_values != added)
        o->info_dirty = 1;
    return MINFER_OK;
}

/* ---- Attention ------------------------------------------------------------ */

/* 1 if dims d of u and e of w are the same (static or symbolic). */
static int same_dim(const mf_vinfo *u, int d, const mf_vinfo *w, int e) {
    return d >= 0 && e >= 0 && d < u->rank && e < w->rank && u->a[d] >= 0 &&
           u->a[d] == w->a[e] && u->b[d] == w->b[e];
}

/* Scale applied by Div/Mul node i to operand v: 1 and *scale, or 0. */
static int scaling(mf_opt *o, int i, int *v, double *scale) {
    const mf_graph *g = o->g;
    double c;
    if (i < 0 || g->nodes[i].n_inputs != 2)
        return 0;
    const int *in = g->nodes[i].inputs;
    if (mf_opt_is(g, i, "Div") && scalar_for(o, in[1], in[0], &c) && c != 0.0) {
        *v = in[0];
        *scale = 1.0 / c;
        return 1;
    }
    if (mf_opt_is(g, i, "Mul"))
        for (int k = 0; k < 2; k++)
            if (scalar_for(o, in[1 - k], in[k], &c)) {
                *v = in[k];
                *scale = c;
                return 1;
            }
    return 0;
}

static minfer_status try_attention(mf_opt *o, int sm, int *done) {
    mf_graph *g = o->g;
    const mf_node *smn = &g->nodes[sm];
    *done = 0;
    if (smn->n_inputs != 1 || smn->inputs[0] < 0 || smn->n_outputs != 1)
        return MINFER_OK;
    int sin = smn->inputs[0];
    const mf_vinfo si = *mf_opt_info(o, sin);
    int64_t axis = mf_attr_int(smn, "axis", smn->opset >= 13 ? -1 : 1);
    if (si.rank < 2 || si.dtype != MINFER_DTYPE_FLOAT || (axis != -1 && axis != si.rank - 1))
        return MINFER_OK;
    int kill[5], nk = 0, mask = -1, scores = sin;
    int p = mf_opt_producer(o, sin);
    if (mf_opt_single_consumer(o, sin) != sm || p < 0)
        return MINFER_OK;
    if (mf_opt_is(g, p, "Add") && g->nodes[p].n_inputs == 2) {
        for (int k = 0; k < 2 && mask < 0; k++) {
            int cand = g->nodes[p].inputs[k], mk = g->nodes[p].inputs[1 - k];
            int cp = mf_opt_producer(o, cand);
            if (cand == mk || mf_opt_single_consumer(o, cand) != p ||
                !(mf_opt_is(g, cp, "MatMul") || mf_opt_is(g, cp, "Div") || mf_opt_is(g, cp, "Mul")))
                continue;
            const mf_vinfo mi = *mf_opt_info(o, mk), ci = *mf_opt_info(o, cand);
            int ok = mi.dtype == MINFER_DTYPE_FLOAT && mi.rank >= 0 && ci.rank == si.rank &&
                     mi.rank <= ci.rank;
            for (int d = 0; ok && d < mi.rank; d++) {
                int e = ci.rank - mi.rank + d;
                ok = mf_opt_dim(&mi, d) == 1 || same_dim(&mi, d, &ci, e);
            }
            if (ok) {
                mask = mk;
                scores = cand;
            }
        }
        if (mask < 0)
            return MINFER_OK;
        kill[nk++] = p;
        p = mf_opt_producer(o, scores);
    }
    double scale = 1.0;
    int mm = p, q = -1;
    int sv;
    if (!mf_opt_is(g, p, "MatMul")) {
        if (!scaling(o, p, &sv, &scale) || mf_opt_single_consumer(o, sv) != p)
            return MINFER_OK;
        kill[nk++] = p;
        mm = mf_opt_producer(o, sv);
    }
    if (!mf_opt_is(g, mm, "MatMul") || g->nodes[mm].n_inputs != 2)
        return MINFER_OK;
    kill[nk++] = mm;
    q = g->nodes[mm].inputs[0];
    int kt = g->nodes[mm].inputs[1];
    int qp = mf_opt_producer(o, q);
    if (scale == 1.0 && mf_opt_single_consumer(o, q) == mm && scaling(o, qp, &sv, &scale)) {
        kill[nk++] = qp; /* Q scaled before the MatMul */
        q = sv;
    }
    int m2 = mf_opt_single_consumer(o, out0(g, sm));
    if (!mf_opt_is(g, m2, "MatMul") || g->nodes[m2].n_inputs != 2 ||
        g->nodes[m2].inputs[0] != out0(g, sm))
        return MINFER_OK;
    int v = g->nodes[m2].inputs[1];
    const mf_vinfo qi = *mf_opt_info(o, q), ki = *mf_opt_info(o, kt), vi = *mf_opt_info(o, v);
    if (qi.dtype != MINFER_DTYPE_FLOAT || ki.dtype != MINFER_DTYPE_FLOAT ||
        vi.dtype != MINFER_DTYPE_FLOAT || qi.rank < 2 || ki.rank < 2 || vi.rank < 2 ||
        !same_dim(&qi, qi.rank - 1, &ki, ki.rank - 2) ||
        !same_dim(&ki, ki.rank - 1, &vi, vi.rank - 2))
        return MINFER_OK;
    kill[nk++] = sm;
    int ins[4] = {q, kt, v, mask};
    minfer_status st;
    if ((st = mf_opt_fuse_save(o, m2)) != MINFER_OK ||
        (st = mf_opt_set_inputs(o, m2, ins, mask >= 0 ? 4 : 3)) != MINFER_OK ||
        (st = mf_opt_set_op(o, m2, "minfer", "Attention")) != MINFER_OK ||
        (st = mf_opt_set_attr_float(o, m2, "scale", (float)scale)) != MINFER_OK)
        return st;
    if (!mf_opt_fuse_keep(o, m2)) /* no provider of the session runs it (gate.c) */
        return MINFER_OK;
    for (int k = 0; k < nk; k++)
        mf_opt_kill(o, kill[k]);
    *done = 1;
    return MINFER_OK;
}

minfer_status mf_pass_fuse_attention(mf_opt *o, size_t *fired) {
    return each_op(o, "Softmax", try_attention, fired);
}

/* ---- Gelu into the MatMul or Gemm before it ----------------------------------- */

/* MatMul, FusedMatMul, Gemm or FusedGemm (no activation yet) whose only
 * reader is a minfer Gelu (or ONNX's, opset 20): the Gelu becomes the fused op's activation
 * ("Gelu" or "GeluTanh"), a oneDNN eltwise post-op instead of a second pass
 * over the output. Runs after fuse_gelu, fuse_matmul and fuse_gemm, which
 * leave a MatMul [+ Add] followed by a minfer Gelu. */
minfer_status mf_pass_fuse_matmul_gelu(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int gl = g->order[k];
        const mf_node *n = &g->nodes[gl];
        if (!live(o, (size_t)gl) || strcmp(n->op_type, "Gelu") != 0 ||
            (strcmp(n->domain, "minfer") != 0 && !(mf_opt_is(g, gl, "Gelu") && n->opset >= 20)) ||
            n->n_inputs != 1 || n->n_outputs != 1 || n->inputs[0] < 0 || n->outputs[0] < 0)
            continue;
        const char *mode = mf_attr_string(n, "approximate", "none");
        if (strcmp(mode, "none") != 0 && strcmp(mode, "tanh") != 0)
            continue;
        int x = n->inputs[0], p = mf_opt_producer(o, x);
        if (p < 0 || mf_opt_single_consumer(o, x) != gl || g->nodes[p].n_outputs != 1)
            continue;
        const mf_node *pn = &g->nodes[p];
        int fused = !strcmp(pn->domain, "minfer") &&
                    (!strcmp(pn->op_type, "FusedMatMul") || !strcmp(pn->op_type, "FusedGemm"));
        int plain = mf_opt_is(g, p, "MatMul") || (mf_opt_is(g, p, "Gemm") && pn->opset >= 7);
        if ((!fused && !plain) || (fused && mf_attr_string(pn, "activation", "")[0]) ||
            mf_opt_info(o, x)->dtype != MINFER_DTYPE_FLOAT)
            continue;
        const char *act = strcmp(mode, "tanh") == 0 ? "GeluTanh" : "Gelu";
        if ((st = mf_opt_fuse_save(o, p)) != MINFER_OK)
            return st;
        if (plain && (st = mf_opt_set_op(o, p, "minfer",
                                         mf_opt_is(g, p, "Gemm") ? "FusedGemm" : "FusedMatMul")) !=
                         MINFER_OK)
            return st;
        if ((st = mf_opt_set_attr_string(o, p, "activation", act)) != MINFER_OK)
            return st;
        if (!mf_opt_fuse_keep(o, p)) /* no provider of the session runs it (gate.c) */
            continue;
        g->nodes[p].outputs[0] = g->nodes[gl].outputs[0];
        mf_opt_kill(o, gl);
        (*fired)++;
        if ((st = mf_opt_reindex(o)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

/* ---- Rotary position embeddings ------------------------------------------------ */

/* Slice node s reads x along its last axis only, with step 1: 1 and its
 * starts and ends values (*st, *en), else 0. The opset 10+ form (bounds as
 * inputs) with constant axes. */
static int last_axis_slice(mf_opt *o, int s, int x, int *st, int *en) {
    const mf_node *n = &o->g->nodes[s];
    int64_t v[2];
    if (!mf_opt_is(o->g, s, "Slice") || n->opset < 10 || n->n_inputs < 4 || n->n_outputs != 1 ||
        n->inputs[0] != x || n->inputs[1] < 0 || n->inputs[2] < 0)
        return 0;
    int r = mf_opt_info(o, x)->rank;
    if (r < 1 || mf_opt_const_ints(o, n->inputs[3], v, 2) != 1 || (v[0] != -1 && v[0] != r - 1))
        return 0;
    if (n->n_inputs > 4 && n->inputs[4] >= 0 &&
        (mf_opt_const_ints(o, n->inputs[4], v, 2) != 1 || v[0] != 1))
        return 0;
    *st = n->inputs[1];
    *en = n->inputs[2];
    return 1;
}

/* Last dim of v as the probes see it (-1 unknown). */
static int64_t last_dim(mf_opt *o, int v) {
    const mf_vinfo *vi = mf_opt_info(o, v);
    return vi->rank >= 1 ? mf_opt_dim(vi, vi->rank - 1) : -1;
}

/* c is a float tensor that broadcasts to x without growing it. */
static int broadcasts_into(mf_opt *o, int c, int x) {
    if (c < 0)
        return 0;
    const mf_vinfo ci = *mf_opt_info(o, c), xi = *mf_opt_info(o, x);
    if (ci.dtype != MINFER_DTYPE_FLOAT || ci.rank < 0 || ci.rank > xi.rank)
        return 0;
    for (int d = 0; d < ci.rank; d++)
        if (mf_opt_dim(&ci, d) != 1 && !same_dim(&ci, d, &xi, xi.rank - ci.rank + d))
            return 0;
    return 1;
}

/* From Neg n, the rotate-half form of rotary position embeddings as the
 * PyTorch exporters write LLaMA's apply_rotary_pos_emb:
 *
 *   x1 = Slice(X, 0, h, axis -1)     x2 = Slice(X, h, ., axis -1)
 *   R  = Concat(Neg(x2), x1, axis -1)
 *   Y  = Add(Mul(X, Cos), Mul(R, Sin))     (either operand order)
 *
 * =>  RotaryEmbedding(X, Cos, Sin). X's last dim D is static and even,
 * h = D / 2; x1 starts at the constant 0 and is h long, so it is
 * X[..., :h]; x2 is h long and starts where x1 ends (the same value, as
 * the exporters compute it from Shape(X)), or at the constant h or -h, so
 * it is X[..., h:]. Cos and Sin broadcast to X without growing it. Every
 * intermediate has the one reader the pattern names; X may have others. */
static minfer_status try_rotary(mf_opt *o, int ng, int *done) {
    mf_graph *g = o->g;
    int64_t c[2];
    *done = 0;
    const mf_node *nn = &g->nodes[ng];
    if (nn->n_inputs != 1 || nn->n_outputs != 1 || out0(g, ng) < 0 || nn->inputs[0] < 0 ||
        mf_opt_single_consumer(o, nn->inputs[0]) != ng)
        return MINFER_OK;
    int s2 = mf_opt_producer(o, nn->inputs[0]);
    if (s2 < 0)
        return MINFER_OK;
    int x = g->nodes[s2].inputs[0], st2, en2, st1, en1;
    if (x < 0 || !last_axis_slice(o, s2, x, &st2, &en2))
        return MINFER_OK;
    const mf_vinfo xi = *mf_opt_info(o, x);
    int64_t D = last_dim(o, x), h = D / 2;
    if (xi.dtype != MINFER_DTYPE_FLOAT || D < 2 || D % 2 != 0 || last_dim(o, out0(g, s2)) != h)
        return MINFER_OK;
    int cat = mf_opt_single_consumer(o, out0(g, ng));
    const mf_node *cn = cat >= 0 ? &g->nodes[cat] : NULL;
    if (!mf_opt_is(g, cat, "Concat") || cn->n_inputs != 2 || cn->inputs[0] != out0(g, ng) ||
        cn->n_outputs != 1 || out0(g, cat) < 0)
        return MINFER_OK;
    int64_t axis = mf_attr_int(cn, "axis", 0);
    int x1 = cn->inputs[1], s1 = mf_opt_producer(o, x1);
    if ((axis != -1 && axis != xi.rank - 1) || x1 < 0 || mf_opt_single_consumer(o, x1) != cat ||
        s1 < 0 || !last_axis_slice(o, s1, x, &st1, &en1) || last_dim(o, x1) != h ||
        mf_opt_const_ints(o, st1, c, 2) != 1 || c[0] != 0)
        return MINFER_OK;
    if (st2 != en1 && !(mf_opt_const_ints(o, st2, c, 2) == 1 && (c[0] == h || c[0] == -h)))
        return MINFER_OK;
    int m2 = mf_opt_single_consumer(o, out0(g, cat));
    int sin = mf_opt_is(g, m2, "Mul") ? other_input(g, m2, out0(g, cat)) : -1;
    if (sin < 0 || !broadcasts_into(o, sin, x))
        return MINFER_OK;
    int add = mf_opt_single_consumer(o, out0(g, m2));
    int p1 = mf_opt_is(g, add, "Add") ? other_input(g, add, out0(g, m2)) : -1;
    int m1 = p1 >= 0 ? mf_opt_producer(o, p1) : -1;
    if (!mf_opt_is(g, m1, "Mul") || mf_opt_single_consumer(o, p1) != add)
        return MINFER_OK;
    int cos = other_input(g, m1, x);
    if (cos < 0 || !broadcasts_into(o, cos, x))
        return MINFER_OK;
    int ins[3] = {x, cos, sin};
    minfer_status st;
    if ((st = mf_opt_fuse_save(o, add)) != MINFER_OK ||
        (st = mf_opt_set_inputs(o, add, ins, 3)) != MINFER_OK ||
        (st = mf_opt_set_op(o, add, "minfer", "RotaryEmbedding")) != MINFER_OK)
        return st;
    if (!mf_opt_fuse_keep(o, add)) /* no provider of the session runs it (gate.c) */
        return MINFER_OK;
    int kill[] = {s1, s2, ng, cat, m2, m1};
    for (size_t k = 0; k < sizeof kill / sizeof kill[0]; k++)
        mf_opt_kill(o, kill[k]);
    *done = 1;
    return MINFER_OK;
}

minfer_status mf_pass_fuse_rotary(mf_opt *o, size_t *fired) {
    return each_op(o, "Neg", try_rotary, fired);
}
