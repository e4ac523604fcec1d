/*
 * Level 2: QDQ fusion. A model quantized in QDQ form (ONNX Runtime's
 * quantize_static) computes each op in float between DequantizeLinear and
 * QuantizeLinear nodes; ONNX Runtime's QDQ transformer runs those groups as
 * integer ops instead, and its outputs are what a user compares with. The
 * float op rounds differently from the integer one (a tie a step apart),
 * so matching ONNX Runtime takes the same fusions, under its selector's
 * conditions (qdq_selectors.cc):
 *
 *  qdq_fuse  DQ(x), DQ(w) [, DQ(b)] -> Conv [-> Relu|Clip] -> Q  => QLinearConv
 *            DQ(a), DQ(b) -> MatMul [-> Relu|Clip] -> Q          => QLinearMatMul
 *            DQ(a), DQ(b) [, DQ(c)] -> Gemm [-> Relu|Clip] -> Q  => com.microsoft QGemm
 *            DQ(a), DQ(b) -> Add|Mul [-> Relu|Clip] -> Q         => com.microsoft QLinearAdd|Mul
 *            DQ(x) -> GlobalAveragePool -> Q      => com.microsoft QLinearGlobalAveragePool
 *            DQ(x) -> Reshape|Flatten|Transpose|Squeeze|Unsqueeze|MaxPool|Gather|Expand|
 *                     Tile -> Q, DQ and Q of the same scale and zero point
 *                                                 => the op on the integers
 *
 * Every input the op takes quantized comes from a DequantizeLinear, the op's
 * output is read by one QuantizeLinear alone and is no graph output (or by
 * a Relu or Clip so read that the Q clamps as it would: to_q_relu; it goes
 * too); the
 * integer types of the inputs and of the output are the same (uint8 or
 * int8), an int8 activation takes int8 weights; scales and zero points are
 * one value each (per tensor), but a Conv's weights may have one per output
 * channel (axis 0) and a MatMul's 2-D B one per column (axis 1); zero
 * points are given. A Conv's bias is int32 with zero
 * points 0 and the scale x_scale * w_scale (what the integer op assumes: a
 * bias quantized otherwise stays unfused). The fused node takes the last
 * node's place and writes the QuantizeLinear's output; the DequantizeLinear
 * nodes stay for any other reader and go with the dead nodes.
 *
 * Constant folding keeps DequantizeLinear nodes until these fusions ran
 * (o->keep_dequantize), as ONNX Runtime's does, so that a weight's
 * DequantizeLinear is still there to fuse. Each fusion asks the session's
 * providers (gate.c): a fused node none of them runs stays unfused.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

static int live(const mf_opt *o, size_t i) { return !(i < o->cap_dead && o->dead[i]); }

static int is_q8(int32_t t) { return t == MINFER_DTYPE_UINT8 || t == MINFER_DTYPE_INT8; }

/* One quantized operand: the integers, their scale and zero point. */
typedef struct qval {
    int q, scale, zp; /* value ids */
    int32_t dtype;    /* the integers' type */
    int axis;         /* the DequantizeLinear's axis (attribute, not normalized) */
} qval;

/* Number of elements of v when the analysis knows its shape, else -1. */
static int64_t count_of(mf_opt *o, int v) {
    const mf_vinfo *vi = mf_opt_info(o, v);
    if (vi->rank < 0)
        return -1;
    int64_t n = 1;
    for (int d = 0; d < vi->rank; d++) {
        int64_t k = mf_opt_dim(vi, d);
        if (k < 0)
            return -1;
        n *= k;
    }
    return n;
}

/* v's DequantizeLinear (scale and zero point given): 1 and *out. */
static int from_dq(mf_opt *o, int v, qval *out) {
    const mf_graph *g = o->g;
    int p = v >= 0 ? mf_opt_producer(o, v) : -1;
    if (p < 0 || !mf_opt_is(g, p, "DequantizeLinear") || g->nodes[p].n_inputs != 3 ||
        g->nodes[p].n_outputs != 1 || g->nodes[p].inputs[1] < 0 || g->nodes[p].inputs[2] < 0)
        return 0;
    const mf_node *n = &g->nodes[p];
    out->q = n->inputs[0];
    out->scale = n->inputs[1];
    out->zp = n->inputs[2];
    out->dtype = mf_opt_info(o, out->q)->dtype;
    out->axis = (int)mf_attr_int(n, "axis", 1);
    return mf_opt_info(o, out->scale)->dtype == MINFER_DTYPE_FLOAT &&
           mf_opt_info(o, out->zp)->dtype == out->dtype;
}

/* The QuantizeLinear reading v alone (v no graph output), scale and zero
 * point given: its node index and *out (q: its output), else -1. */
static int to_q(mf_opt *o, int v, qval *out) {
    const mf_graph *g = o->g;
    int c = mf_opt_single_consumer(o, v);
    if (c < 0 || !mf_opt_is(g, c, "QuantizeLinear") || g->nodes[c].n_inputs != 3 ||
        g->nodes[c].inputs[0] != v || g->nodes[c].n_outputs != 1 || g->nodes[c].outputs[0] < 0 ||
        g->nodes[c].inputs[1] < 0 || g->nodes[c].inputs[2] < 0)
        return -1;
    const mf_node *n = &g->nodes[c];
    out->q = n->outputs[0];
    out->scale = n->inputs[1];
    out->zp = n->inputs[2];
    out->dtype = mf_opt_info(o, out->q)->dtype;
    out->axis = (int)mf_attr_int(n, "axis", 1);
    return mf_opt_info(o, out->scale)->dtype == MINFER_DTYPE_FLOAT &&
                   mf_opt_info(o, out->zp)->dtype == out->dtype
               ? c
               : -1;
}

static const void *const_data(mf_opt *o, int v);
static int32_t int_at(const void *p, int32_t dtype, int64_t i);

/* x / scale rounded to an int32 as ORT's IsClipMadeRedundantByQ converts it
 * on x86-64: a value out of range (an unbounded Clip's FLT_MAX / scale is
 * infinite) or NaN gives INT32_MIN. */
static int64_t q_of(float x, float scale) {
    double r = rint((double)(x / scale));
    return r >= -2147483648.0 && r < 2147483648.0 ? (int64_t)r : INT32_MIN;
}

/* A Clip's constant bounds (attributes before opset 11, else inputs 1 and 2,
 * each an absent input or a one-element float initializer): 1 and *lo, *hi. */
static int clip_bounds(mf_opt *o, const mf_node *n, float *lo, float *hi) {
    *lo = -FLT_MAX;
    *hi = FLT_MAX;
    if (n->opset < 11) {
        *lo = mf_attr_float(n, "min", *lo);
        *hi = mf_attr_float(n, "max", *hi);
        return n->n_inputs == 1;
    }
    for (size_t k = 1; k < n->n_inputs; k++) {
        double d;
        if (n->inputs[k] < 0)
            continue;
        if (k > 2 || !mf_opt_scalar(o, n->inputs[k], &d) ||
            mf_opt_const(o, n->inputs[k])->view.dtype != MINFER_DTYPE_FLOAT)
            return 0;
        *(k == 1 ? lo : hi) = (float)d;
    }
    return 1;
}

/* to_q, also through a Relu or Clip the QuantizeLinear makes redundant, as
 * ORT's selector takes it (IsClipMadeRedundantByQ): a Relu when the Q's zero
 * point is the type's least value (negatives saturate to real 0 anyway), a
 * Clip when its bounds, quantized with the Q's scale and zero point, hold
 * the type's whole range. *act its node, else -1. A Relu or Clip the Q does
 * not make redundant: -1, nothing fuses (nor in ORT). */
static int to_q_relu(mf_opt *o, int v, qval *out, int *act) {
    const mf_graph *g = o->g;
    int c = mf_opt_single_consumer(o, v);
    *act = -1;
    int relu = c >= 0 && mf_opt_is(g, c, "Relu") && g->nodes[c].n_inputs == 1;
    int clip = c >= 0 && mf_opt_is(g, c, "Clip") && g->nodes[c].n_inputs >= 1 &&
               g->nodes[c].inputs[0] == v;
    if ((!relu && !clip) || g->nodes[c].n_outputs != 1 || g->nodes[c].outputs[0] < 0)
        return to_q(o, v, out);
    int q = to_q(o, g->nodes[c].outputs[0], out);
    const void *z = q >= 0 ? const_data(o, out->zp) : NULL;
    const float *sp = q >= 0 ? const_data(o, out->scale) : NULL;
    if (!z || !sp || count_of(o, out->zp) != 1 || count_of(o, out->scale) != 1)
        return -1;
    int32_t zp = int_at(z, out->dtype, 0);
    int32_t tmin = out->dtype == MINFER_DTYPE_UINT8 ? 0 : -128;
    int32_t tmax = out->dtype == MINFER_DTYPE_UINT8 ? 255 : 127;
    if (relu && zp != tmin)
        return -1;
    float lo, hi;
    if (clip && (!clip_bounds(o, &g->nodes[c], &lo, &hi) ||
                 !(q_of(lo, *sp) + zp <= tmin && q_of(hi, *sp) + zp >= tmax)))
        return -1;
    *act = c;
    return q;
}

/* Scale and zero point one value each. */
static int per_tensor(mf_opt *o, const qval *v) {
    return count_of(o, v->scale) == 1 && count_of(o, v->zp) == 1;
}

static const void *const_data(mf_opt *o, int v) {
    const minfer_tensor *t = mf_opt_const(o, v);
    return t && t->view.data ? (const char *)t->view.data + t->view.offset : NULL;
}

static int32_t int_at(const void *p, int32_t dtype, int64_t i) {
    switch (dtype) {
    case MINFER_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case MINFER_DTYPE_INT8: return ((const int8_t *)p)[i];
    case MINFER_DTYPE_INT32: return ((const int32_t *)p)[i];
    default: return INT32_MIN;
    }
}

/* DequantizeLinear and QuantizeLinear of the same constant scale and zero
 * point, the scale positive (ORT's IsQDQPairSupported). */
static int same_params(mf_opt *o, const qval *a, const qval *b) {
    const void *sa = const_data(o, a->scale), *sb = const_data(o, b->scale);
    const void *za = const_data(o, a->zp), *zb = const_data(o, b->zp);
    if (!sa || !sb || !za || !zb || !per_tensor(o, a) || !per_tensor(o, b) ||
        a->dtype != b->dtype)
        return 0;
    float fa = *(const float *)sa, fb = *(const float *)sb;
    return fa == fb && fa > 0 && int_at(za, a->dtype, 0) == int_at(zb, b->dtype, 0);
}

/* The fused node i now reads ins and writes the Q node's output; kept when
 * a provider runs it (gate.c), then the Q node (and the Relu before it,
 * relu >= 0) goes. *fused 1 when fused. */
static minfer_status commit(mf_opt *o, int i, int q, int relu, const int *ins, size_t n_ins,
                            const char *domain, const char *op, int *fused) {
    minfer_status st;
    *fused = 0;
    if ((st = mf_opt_fuse_save(o, i)) != MINFER_OK ||
        (st = mf_opt_set_inputs(o, i, ins, n_ins)) != MINFER_OK ||
        (op && (st = mf_opt_set_op(o, i, domain, op)) != MINFER_OK))
        return st;
    o->g->nodes[i].outputs[0] = o->g->nodes[q].outputs[0];
    if (!mf_opt_fuse_keep(o, i)) /* no provider of the session runs it */
        return MINFER_OK;
    mf_opt_kill(o, q);
    if (relu >= 0)
        mf_opt_kill(o, relu);
    *fused = 1;
    return mf_opt_reindex(o);
}

/* Conv's bias: int32, zero points 0, scale x_scale * w_scale per channel
 * (constants). */
static int bias_fits(mf_opt *o, const qval *x, const qval *w, const qval *b, int64_t m) {
    if (b->dtype != MINFER_DTYPE_INT32)
        return 0;
    int64_t nb = count_of(o, b->scale), nw = count_of(o, w->scale);
    const float *bs = const_data(o, b->scale), *ws = const_data(o, w->scale);
    const float *xs = const_data(o, x->scale);
    const void *bz = const_data(o, b->zp);
    if (!bs || !ws || !xs || !bz || (nb != 1 && nb != m) || nw < 1 ||
        count_of(o, b->zp) != nb || count_of(o, b->q) != m)
        return 0;
    for (int64_t c = 0; c < m; c++) {
        float want = xs[0] * ws[nw == 1 ? 0 : c], got = bs[nb == 1 ? 0 : c];
        if (int_at(bz, MINFER_DTYPE_INT32, nb == 1 ? 0 : c) != 0 ||
            !(fabsf(got - want) <= 1e-6f * fabsf(want)))
            return 0;
    }
    return 1;
}

static minfer_status fuse_conv(mf_opt *o, int i, int *fused) {
    const mf_node *n = &o->g->nodes[i];
    qval x, w, b, y;
    int has_b = n->n_inputs == 3 && n->inputs[2] >= 0;
    *fused = 0;
    if (n->n_inputs < 2 || n->n_inputs > 3 || !from_dq(o, n->inputs[0], &x) ||
        !from_dq(o, n->inputs[1], &w) || (has_b && !from_dq(o, n->inputs[2], &b)))
        return MINFER_OK;
    int relu, q = to_q_relu(o, n->outputs[0], &y, &relu);
    if (q < 0 || !is_q8(x.dtype) || !is_q8(w.dtype) || y.dtype != x.dtype ||
        (x.dtype == MINFER_DTYPE_INT8 && w.dtype != MINFER_DTYPE_INT8) || !per_tensor(o, &x) ||
        !per_tensor(o, &y))
        return MINFER_OK;
    const mf_vinfo *wi = mf_opt_info(o, w.q);
    int64_t m = wi->rank >= 1 ? mf_opt_dim(wi, 0) : -1, nw = count_of(o, w.scale);
    int axis = w.axis < 0 ? w.axis + wi->rank : w.axis;
    if (m < 1 || count_of(o, w.zp) != nw ||
        !(nw == 1 || (nw == m && axis == 0 && mf_opt_info(o, w.scale)->rank == 1)))
        return MINFER_OK;
    if (has_b && !bias_fits(o, &x, &w, &b, m))
        return MINFER_OK;
    int ins[9] = {x.q, x.scale, x.zp, w.q, w.scale, w.zp, y.scale, y.zp, has_b ? b.q : -1};
    return commit(o, i, q, relu, ins, has_b ? 9 : 8, "", "QLinearConv", fused);
}

/* MatMul: B per tensor, or per column (a 2-D B, a 1-D scale of its N
 * columns along axis 1), as QLinearMatMul takes it. */
static minfer_status fuse_matmul(mf_opt *o, int i, int *fused) {
    const mf_node *n = &o->g->nodes[i];
    qval a, b, y;
    *fused = 0;
    if (n->n_inputs != 2 || !from_dq(o, n->inputs[0], &a) || !from_dq(o, n->inputs[1], &b))
        return MINFER_OK;
    int relu, q = to_q_relu(o, n->outputs[0], &y, &relu);
    if (q < 0 || !is_q8(a.dtype) || !is_q8(b.dtype) || y.dtype != a.dtype ||
        (a.dtype == MINFER_DTYPE_INT8 && b.dtype != MINFER_DTYPE_INT8) || !per_tensor(o, &a) ||
        !per_tensor(o, &y))
        return MINFER_OK;
    const mf_vinfo *bi = mf_opt_info(o, b.q);
    int64_t nb = count_of(o, b.scale);
    int axis = b.axis < 0 ? b.axis + bi->rank : b.axis;
    if (count_of(o, b.zp) != nb ||
        !(nb == 1 || (bi->rank == 2 && axis == 1 && nb == mf_opt_dim(bi, 1) &&
                      mf_opt_info(o, b.scale)->rank == 1)))
        return MINFER_OK;
    int ins[8] = {a.q, a.scale, a.zp, b.q, b.scale, b.zp, y.scale, y.zp};
    return commit(o, i, q, relu, ins, 8, "", "QLinearMatMul", fused);
}

/* Gemm: com.microsoft QGemm, B per tensor or per column of op(B) (axis 0
 * of a transposed B, else 1), an int32 C of N values with beta 1. */
static minfer_status fuse_gemm(mf_opt *o, int i, int *fused) {
    const mf_node *n = &o->g->nodes[i];
    qval a, b, c, y;
    int has_c = n->n_inputs == 3 && n->inputs[2] >= 0;
    *fused = 0;
    if (n->n_inputs < 2 || n->n_inputs > 3 || !from_dq(o, n->inputs[0], &a) ||
        !from_dq(o, n->inputs[1], &b) || (has_c && !from_dq(o, n->inputs[2], &c)) ||
        (has_c && mf_attr_float(n, "beta", 1.0f) != 1.0f))
        return MINFER_OK;
    int act, q = to_q_relu(o, n->outputs[0], &y, &act);
    if (q < 0 || !is_q8(a.dtype) || !is_q8(b.dtype) || y.dtype != a.dtype ||
        (a.dtype == MINFER_DTYPE_INT8 && b.dtype != MINFER_DTYPE_INT8) || !per_tensor(o, &a) ||
        !per_tensor(o, &y))
        return MINFER_OK;
    const mf_vinfo *bi = mf_opt_info(o, b.q);
    int tb = mf_attr_int(n, "transB", 0) != 0;
    int64_t cols = bi->rank == 2 ? mf_opt_dim(bi, tb ? 0 : 1) : -1, nb = count_of(o, b.scale);
    int axis = b.axis < 0 ? b.axis + bi->rank : b.axis;
    if (cols < 1 || count_of(o, b.zp) != nb ||
        !(nb == 1 || (nb == cols && axis == (tb ? 0 : 1) && mf_opt_info(o, b.scale)->rank == 1)))
        return MINFER_OK;
    if (has_c && !bias_fits(o, &a, &b, &c, cols))
        return MINFER_OK;
    int ins[9] = {a.q, a.scale, a.zp, b.q, b.scale, b.zp, has_c ? c.q : -1, y.scale, y.zp};
    minfer_status st = commit(o, i, q, act, ins, 9, "com.microsoft", "QGemm", fused);
    if (st == MINFER_OK && *fused)
        mf_opt_drop_attr(o, i, "beta"); /* QGemm has none (ORT's schema refuses it) */
    return st;
}

static minfer_status fuse_binary(mf_opt *o, int i, int *fused) {
    const mf_node *n = &o->g->nodes[i];
    qval a, b, y;
    *fused = 0;
    if (n->n_inputs != 2 || !from_dq(o, n->inputs[0], &a) || !from_dq(o, n->inputs[1], &b))
        return MINFER_OK;
    int relu, q = to_q_relu(o, n->outputs[0], &y, &relu);
    if (q < 0 || !is_q8(a.dtype) || b.dtype != a.dtype || y.dtype != a.dtype ||
        !per_tensor(o, &a) || !per_tensor(o, &b) || !per_tensor(o, &y))
        return MINFER_OK;
    int ins[8] = {a.q, a.scale, a.zp, b.q, b.scale, b.zp, y.scale, y.zp};
    return commit(o, i, q, relu, ins, 8, "com.microsoft",
                  mf_opt_is(o->g, i, "Add") ? "QLinearAdd" : "QLinearMul", fused);
}

static minfer_status fuse_gap(mf_opt *o, int i, int *fused) {
    const mf_node *n = &o->g->nodes[i];
    qval x, y;
    *fused = 0;
    if (n->n_inputs != 1 || !from_dq(o, n->inputs[0], &x))
        return MINFER_OK;
    int q = to_q(o, n->outputs[0], &y);
    if (q < 0 || !is_q8(x.dtype) || y.dtype != x.dtype || !per_tensor(o, &x) ||
        !per_tensor(o, &y))
        return MINFER_OK;
    int ins[5] = {x.q, x.scale, x.zp, y.scale, y.zp};
    return commit(o, i, q, -1, ins, 5, "com.microsoft", "QLinearGlobalAveragePool", fused);
}

/* Ops that move or pick values without arithmetic: between a DQ and a Q of
 * the same parameters they run on the integers (ORT's DropQDQNodes). */
static const char *const movers[] = {"Reshape", "Flatten",   "Transpose", "Squeeze", "Unsqueeze",
                                     "MaxPool", "Gather",    "GatherElements", "Expand",
                                     "Tile"};

static minfer_status drop_pair(mf_opt *o, int i, int *fused) {
    const mf_node *n = &o->g->nodes[i];
    qval x, y, other;
    *fused = 0;
    int indices = n->n_outputs > 1 && n->outputs[1] >= 0;
    if (n->n_inputs < 1 || !from_dq(o, n->inputs[0], &x) ||
        (mf_opt_is(o->g, i, "MaxPool") && (n->opset < 12 || indices)))
        return MINFER_OK;
    for (size_t k = 1; k < n->n_inputs; k++)
        if (from_dq(o, n->inputs[k], &other))
            return MINFER_OK; /* only the data input is quantized */
    int q = to_q(o, n->outputs[0], &y);
    if (q < 0 || !is_q8(x.dtype) || !same_params(o, &x, &y))
        return MINFER_OK;
    int ins[16];
    if (n->n_inputs > sizeof ins / sizeof ins[0])
        return MINFER_OK;
    memcpy(ins, n->inputs, n->n_inputs * sizeof *ins);
    ins[0] = x.q;
    return commit(o, i, q, -1, ins, n->n_inputs, NULL, NULL, fused);
}

minfer_status mf_pass_qdq_fuse(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k], fused = 0;
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || n->n_outputs < 1 || n->outputs[0] < 0 ||
            (n->domain && n->domain[0]))
            continue;
        if (mf_opt_is(g, i, "Conv") && n->n_outputs == 1)
            st = fuse_conv(o, i, &fused);
        else if (mf_opt_is(g, i, "Gemm") && n->n_outputs == 1)
            st = fuse_gemm(o, i, &fused);
        else if (mf_opt_is(g, i, "MatMul") && n->n_outputs == 1)
            st = fuse_matmul(o, i, &fused);
        else if ((mf_opt_is(g, i, "Add") || mf_opt_is(g, i, "Mul")) && n->n_outputs == 1)
            st = fuse_binary(o, i, &fused);
        else if (mf_opt_is(g, i, "GlobalAveragePool") && n->n_outputs == 1)
            st = fuse_gap(o, i, &fused);
        else {
            st = MINFER_OK;
            for (size_t m = 0; m < sizeof movers / sizeof movers[0]; m++)
                if (mf_opt_is(g, i, movers[m])) {
                    st = drop_pair(o, i, &fused);
                    break;
                }
        }
        if (st != MINFER_OK)
            return st;
        *fired += (size_t)fused;
    }
    return MINFER_OK;
}
