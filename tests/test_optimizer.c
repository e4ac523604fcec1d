/*
 * Unit tests for the graph optimizer (core/optimize/).
 *
 * Each case builds a small graph in the core's IR, runs it as built and as
 * optimized (both through sessions at optimization level 0, from the
 * graphs serialized with mf_save_onnx_memory, so the saver is exercised
 * too) on the same pseudo-random inputs, and checks the ops left and that
 * the outputs agree. Cases where a pattern must not fire check that the op
 * it would remove is still there.
 */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

#include "graph/graph.h"
#include "util/internal.h"
#include "load/onnx_save.h"
#include "optimize/optimizer.h"

/* ---- building graphs ------------------------------------------------------ */

static mf_graph *tg_new(int64_t opset) {
    mf_graph *g = mf_graph_new();
    assert_non_null(g);
    g->opsets = calloc(1, sizeof *g->opsets);
    g->opsets[0].domain = mf_strdup("");
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    return g;
}

/* A float input; -1 dims are symbolic, named "N". */
static void tg_input(mf_graph *g, const char *name, const int64_t *dims, int rank) {
    int v = mf_graph_intern(g, name);
    mf_value *val = &g->values[v];
    val->dtype = MINFER_DTYPE_FLOAT;
    val->rank = rank;
    val->is_input = 1;
    for (int d = 0; d < rank; d++) {
        val->dims[d] = dims[d];
        if (dims[d] < 0)
            val->dim_params[d] = mf_strdup("N");
    }
    g->inputs = realloc(g->inputs, (g->n_inputs + 1) * sizeof *g->inputs);
    g->inputs[g->n_inputs++] = v;
}

static void tg_const_t(mf_graph *g, const char *name, int32_t dtype, const int64_t *dims,
                       int rank, const void *values) {
    minfer_tensor *t = NULL;
    assert_int_equal(mf_tensor_new(dtype, dims, rank, &t), MINFER_OK);
    memcpy(t->view.data, values, t->view.nbytes);
    int v = mf_graph_intern(g, name);
    g->values[v].initializer = t;
    g->values[v].dtype = dtype;
    g->values[v].rank = rank;
    for (int d = 0; d < rank; d++)
        g->values[v].dims[d] = dims[d];
}

/* A float constant; values NULL: deterministic pseudo-random ones. */
static void tg_const(mf_graph *g, const char *name, const int64_t *dims, int rank,
                     const float *values) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    float *buf = malloc((size_t)(n ? n : 1) * sizeof *buf);
    for (int64_t i = 0; i < n; i++)
        buf[i] = values ? values[i] : (float)sin((double)(i * 7 + rank * 3 + 1)) * 0.5f;
    tg_const_t(g, name, MINFER_DTYPE_FLOAT, dims, rank, buf);
    free(buf);
}

static void tg_scalar(mf_graph *g, const char *name, float v) {
    tg_const(g, name, NULL, 0, &v);
}

static void tg_ints(mf_graph *g, const char *name, const int64_t *v, int64_t n) {
    tg_const_t(g, name, MINFER_DTYPE_INT64, &n, 1, v);
}

/* A node: ins and outs are comma-separated names ("" for an omitted input). */
static int tg_node(mf_graph *g, const char *op, const char *ins, const char *outs) {
    int i = mf_graph_add_node(g);
    mf_node *n = &g->nodes[i];
    n->name = mf_strdup("");
    n->op_type = mf_strdup(op);
    n->domain = mf_strdup("");
    const char *lists[2] = {ins, outs};
    for (int l = 0; l < 2; l++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", lists[l]);
        int *idx = calloc(16, sizeof *idx);
        size_t cnt = 0;
        char *save = NULL;
        char *p = buf;
        for (;;) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            idx[cnt++] = p[0] ? mf_graph_intern(g, p) : -1;
            if (!comma)
                break;
            p = comma + 1;
        }
        (void)save;
        if (l == 0) {
            n->inputs = idx;
            n->n_inputs = ins[0] ? cnt : 0;
        } else {
            n->outputs = idx;
            n->n_outputs = cnt;
        }
    }
    return i;
}

static mf_attr *tg_attr(mf_graph *g, int node, const char *name, int type) {
    mf_node *n = &g->nodes[node];
    n->attrs = realloc(n->attrs, (n->n_attrs + 1) * sizeof *n->attrs);
    mf_attr *a = &n->attrs[n->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = mf_strdup(name);
    a->type = type;
    return a;
}

static void tg_attr_int(mf_graph *g, int node, const char *name, int64_t v) {
    tg_attr(g, node, name, MINFER_ATTR_INT)->i = v;
}

static void tg_attr_ints(mf_graph *g, int node, const char *name, const int64_t *v, size_t n) {
    mf_attr *a = tg_attr(g, node, name, MINFER_ATTR_INTS);
    a->ints = malloc(n * sizeof *v);
    memcpy(a->ints, v, n * sizeof *v);
    a->count = n;
}

static void tg_output(mf_graph *g, const char *name) {
    int v = mf_graph_intern(g, name);
    g->values[v].is_output = 1;
    g->outputs = realloc(g->outputs, (g->n_outputs + 1) * sizeof *g->outputs);
    g->outputs[g->n_outputs++] = v;
}

/* ---- running and checking ----------------------------------------------- */

/* The size of every symbolic input dim when a graph runs. */
static int64_t sym_size = 2;

/* Runs g (serialized) at level 0 on inputs with symbolic dims set to
 * sym_size. */
static minfer_tensor *run_graph(const mf_graph *g) {
    void *data = NULL;
    size_t size = 0;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *ins[4] = {0}, *out = NULL;
    const char *names[4];
    assert_ok(mf_save_onnx_memory(g, &data, &size));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_optimization_level(opt, 0));
    assert_ok(minfer_session_create_from_memory(data, size, opt, &s));
    assert_true(g->n_inputs <= 4);
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        int64_t dims[MINFER_MAX_RANK];
        for (int d = 0; d < v->rank; d++)
            dims[d] = v->dims[d] < 0 ? sym_size : v->dims[d];
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, (size_t)v->rank, &ins[k]));
        float *p = minfer_tensor_data(ins[k]);
        for (int64_t i = 0; i < minfer_tensor_numel(ins[k]); i++)
            p[i] = (float)cos((double)(i * 13 + k * 5 + 2)) * 2.0f;
        names[k] = v->name;
    }
    const char *out_name = g->values[g->outputs[0]].name;
    assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)ins, g->n_inputs,
                                 &out_name, &out, 1));
    for (size_t k = 0; k < g->n_inputs; k++)
        minfer_tensor_free(ins[k]);
    minfer_session_free(s);
    minfer_options_free(opt);
    free(data);
    return out;
}

static size_t count_op(const mf_graph *g, const char *op) {
    size_t n = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *nd = &g->nodes[i];
        char key[96];
        snprintf(key, sizeof key, "%s%s%s", nd->domain[0] ? nd->domain : "",
                 nd->domain[0] ? ":" : "", nd->op_type);
        n += strcmp(key, op) == 0;
    }
    return n;
}

static mf_evaluator *ev;

/* Finalizes g, runs it, optimizes it at level, runs it again: outputs must
 * agree (rtol 1e-4, atol 1e-5). Returns how often pass `pass` fired. */
static size_t optimize_and_compare(mf_graph *g, int level, const char *pass) {
    mf_opt_report rep;
    assert_ok(mf_graph_finalize(g, "test"));
    minfer_tensor *want = run_graph(g);
    mf_opt_ctx ctx = {level, mf_evaluator_eval_node, ev, 1 << 20, &rep, 0, NULL};
    assert_ok(mf_optimize(g, &ctx, "test"));
    minfer_tensor *got = run_graph(g);
    assert_int_equal(minfer_tensor_numel(want), minfer_tensor_numel(got));
    assert_int_equal(minfer_tensor_rank(want), minfer_tensor_rank(got));
    const float *a = minfer_tensor_data(want), *b = minfer_tensor_data(got);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (!(fabsf(a[i] - b[i]) <= 1e-5f + 1e-4f * fabsf(a[i])))
            fail_msg("output %lld: %g before, %g after optimization", (long long)i, a[i], b[i]);
    minfer_tensor_free(want);
    minfer_tensor_free(got);
    size_t fired = 0;
    for (size_t p = 0; p < rep.n_passes; p++)
        if (strcmp(rep.passes[p].name, pass) == 0)
            fired += rep.passes[p].fired;
    return fired;
}

static int setup(void **state) {
    (void)state;
    return mf_evaluator_open(&ev) == MINFER_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    mf_evaluator_close(ev);
    return 0;
}

/* ---- level 1 ---------------------------------------------------------------- */

static void test_identity_dropout_dead(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t d[2] = {-1, 4};
    tg_input(g, "x", d, 2);
    tg_node(g, "Relu", "x", "r");
    tg_node(g, "Identity", "r", "i1");
    tg_node(g, "Dropout", "i1", "dr");
    tg_node(g, "Sigmoid", "x", "unused"); /* dead */
    tg_node(g, "Identity", "dr", "y");    /* y is the graph output: keeps its name */
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 1, "identity_removal"), 3);
    assert_int_equal(count_op(g, "Identity") + count_op(g, "Dropout") + count_op(g, "Sigmoid"),
                     0);
    assert_int_equal(g->n_nodes, 1);
    assert_string_equal(g->values[g->nodes[0].outputs[0]].name, "y");
    mf_graph_free(g);
}

static void test_dropout_mask_read_stays(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t d[2] = {2, 3};
    tg_input(g, "x", d, 2);
    tg_node(g, "Dropout", "x", "y,mask");
    tg_node(g, "Cast", "mask", "m");
    tg_attr_int(g, 1, "to", MINFER_DTYPE_FLOAT);
    tg_node(g, "Add", "y,m", "z");
    tg_output(g, "z");
    optimize_and_compare(g, 1, "identity_removal");
    assert_int_equal(count_op(g, "Dropout"), 1);
    mf_graph_free(g);
}

static void test_constant_folding(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t d[2] = {2, 3}, c[1] = {3};
    tg_input(g, "x", d, 2);
    tg_const(g, "a", c, 1, NULL);
    tg_const(g, "b", c, 1, NULL);
    tg_node(g, "Add", "a,b", "ab");
    tg_node(g, "Exp", "ab", "e");
    tg_node(g, "Mul", "x,e", "y");
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 1, "fold_constants"), 2);
    assert_int_equal(g->n_nodes, 1);
    mf_graph_free(g);
}

static void test_constant_folding_size_cap(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t d[2] = {2, 3}, shape[1] = {2};
    int64_t target[2] = {512, 1024}; /* 2 MiB of floats: above the 1 MiB cap */
    tg_input(g, "x", d, 2);
    tg_ints(g, "shape", target, 2);
    tg_scalar(g, "one", 1.0f);
    tg_node(g, "Expand", "one,shape", "big");
    tg_node(g, "ReduceSum", "big", "s");
    tg_attr_int(g, 1, "keepdims", 0);
    tg_node(g, "Add", "x,s", "y");
    tg_output(g, "y");
    (void)shape;
    assert_int_equal(optimize_and_compare(g, 1, "fold_constants"), 0);
    assert_int_equal(count_op(g, "Expand"), 1);
    mf_graph_free(g);
}

static void test_shape_subgraph(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t d[3] = {-1, 4, 6}, idx0[1] = {1}, idx1[1] = {2}, zero[1] = {0};
    tg_input(g, "x", d, 3);
    tg_ints(g, "i1", idx0, 1);
    tg_ints(g, "i2", idx1, 1);
    tg_ints(g, "z", zero, 1);
    tg_node(g, "Shape", "x", "s");
    tg_node(g, "Gather", "s,i1", "g1");
    tg_node(g, "Gather", "s,i2", "g2");
    tg_node(g, "Mul", "g1,g2", "m");
    tg_node(g, "Concat", "z,m", "shape");
    tg_attr_int(g, 4, "axis", 0);
    tg_node(g, "Reshape", "x,shape", "y");
    tg_output(g, "y");
    assert_true(optimize_and_compare(g, 1, "fold_shapes") >= 2);
    /* Only the Reshape is left: its target [0, 24] is a constant. */
    assert_int_equal(g->n_nodes, 1);
    assert_int_equal(count_op(g, "Reshape"), 1);
    mf_graph_free(g);
}

static void test_batchnorm_into_conv(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, cd[1] = {3};
    float var[3] = {0.5f, 1.5f, 2.0f};
    tg_input(g, "x", xd, 4);
    tg_const(g, "w", wd, 4, NULL);
    tg_const(g, "b", cd, 1, NULL);
    tg_const(g, "scale", cd, 1, NULL);
    tg_const(g, "bias", cd, 1, NULL);
    tg_const(g, "mean", cd, 1, NULL);
    tg_const(g, "var", cd, 1, var);
    tg_node(g, "Conv", "x,w,b", "c");
    tg_node(g, "BatchNormalization", "c,scale,bias,mean,var", "y");
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 1, "fold_batchnorm"), 1);
    assert_int_equal(count_op(g, "BatchNormalization"), 0);
    mf_graph_free(g);
}

static void test_batchnorm_second_consumer(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t xd[4] = {1, 2, 5, 5}, wd[4] = {3, 2, 3, 3}, cd[1] = {3};
    float var[3] = {0.5f, 1.5f, 2.0f};
    tg_input(g, "x", xd, 4);
    tg_const(g, "w", wd, 4, NULL);
    tg_const(g, "scale", cd, 1, NULL);
    tg_const(g, "bias", cd, 1, NULL);
    tg_const(g, "mean", cd, 1, NULL);
    tg_const(g, "var", cd, 1, var);
    tg_node(g, "Conv", "x,w", "c");
    tg_node(g, "BatchNormalization", "c,scale,bias,mean,var", "bn");
    tg_node(g, "Add", "bn,c", "y"); /* c has a second reader */
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 1, "fold_batchnorm"), 0);
    assert_int_equal(count_op(g, "BatchNormalization"), 1);
    mf_graph_free(g);
}

/* BN -> Relu with no Conv before it (DenseNet's pre-activation): BN
 * becomes a depthwise 1x1 Conv, which the Conv fusion merges with the Relu. */
static void bn_relu_graph(mf_graph *g, const int64_t *xd, const char *act, int pools) {
    int64_t cd[1] = {3}, k2[2] = {2, 2};
    float var[3] = {0.5f, 1.5f, 2.0f};
    tg_input(g, "x", xd, 4);
    tg_const(g, "scale", cd, 1, NULL);
    tg_const(g, "bias", cd, 1, NULL);
    tg_const(g, "mean", cd, 1, NULL);
    tg_const(g, "var", cd, 1, var);
    const char *in = "x";
    char names[4][8];
    for (int p = 0; p < pools; p++) {
        snprintf(names[p], sizeof names[p], "p%d", p);
        int n = tg_node(g, "MaxPool", in, names[p]);
        tg_attr_ints(g, n, "kernel_shape", k2, 2);
        tg_attr_ints(g, n, "strides", k2, 2);
        in = names[p];
    }
    char ins[64];
    snprintf(ins, sizeof ins, "%s,scale,bias,mean,var", in);
    tg_node(g, "BatchNormalization", ins, "bn");
    tg_node(g, act, "bn", "y");
    tg_output(g, "y");
}

static void test_batchnorm_relu_as_conv(void **state) {
    (void)state;
    int64_t xd[4] = {-1, 3, 5, 5};
    mf_graph *g = tg_new(13);
    bn_relu_graph(g, xd, "Relu", 0);
    assert_int_equal(optimize_and_compare(g, 2, "batchnorm_relu_conv"), 1);
    assert_int_equal(count_op(g, "BatchNormalization") + count_op(g, "Relu"), 0);
    assert_int_equal(count_op(g, "minfer:FusedConv"), 1);
    mf_graph_free(g);
    /* No Relu after it: a BN is one pass already. */
    g = tg_new(13);
    bn_relu_graph(g, xd, "Sigmoid", 0);
    assert_int_equal(optimize_and_compare(g, 2, "batchnorm_relu_conv"), 0);
    assert_int_equal(count_op(g, "BatchNormalization"), 1);
    mf_graph_free(g);
}

/* Symbolic height and width halved four times before the BN: the analysis'
 * probe sizes must survive that (with probes of 5 and 6 the shape was 0
 * by the third pool, unknown after it, and the pattern did not match). */
static void test_probes_survive_pooling(void **state) {
    (void)state;
    int64_t xd[4] = {1, 3, -1, -1};
    mf_graph *g = tg_new(13);
    bn_relu_graph(g, xd, "Relu", 4);
    sym_size = 48;
    size_t fired = optimize_and_compare(g, 2, "batchnorm_relu_conv");
    sym_size = 2;
    assert_int_equal(fired, 1);
    mf_graph_free(g);
}

static void test_reshape_chain(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t d[3] = {2, 3, 4}, s1[2] = {6, 4}, s2[2] = {4, -1}, s3[3] = {0, 3, 2};
    tg_input(g, "x", d, 3);
    tg_ints(g, "s1", s1, 2);
    tg_ints(g, "s2", s2, 2);
    tg_ints(g, "s3", s3, 3);
    tg_node(g, "Reshape", "x,s1", "a");
    tg_node(g, "Reshape", "a,s2", "b");
    tg_node(g, "Reshape", "b,s3", "y"); /* copies dim 0 from b: must keep reading b */
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 1, "reshape_chains"), 1);
    assert_int_equal(count_op(g, "Reshape"), 2);
    mf_graph_free(g);
}

static void test_cast_pairs(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t d[2] = {2, 3};
    tg_input(g, "x", d, 2);
    tg_node(g, "Cast", "x", "a");
    tg_attr_int(g, 0, "to", MINFER_DTYPE_DOUBLE);
    tg_node(g, "Cast", "a", "b");
    tg_attr_int(g, 1, "to", MINFER_DTYPE_FLOAT);
    tg_node(g, "Cast", "b", "c"); /* float -> float */
    tg_attr_int(g, 2, "to", MINFER_DTYPE_FLOAT);
    tg_node(g, "Cast", "c", "h"); /* float -> int32 -> float is lossy: stays */
    tg_attr_int(g, 3, "to", MINFER_DTYPE_INT32);
    tg_node(g, "Cast", "h", "y");
    tg_attr_int(g, 4, "to", MINFER_DTYPE_FLOAT);
    tg_output(g, "y");
    assert_true(optimize_and_compare(g, 1, "cast_pairs") >= 2);
    assert_int_equal(count_op(g, "Cast"), 2);
    mf_graph_free(g);
}

static void test_transpose_pairs(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t d[3] = {2, 3, 4}, p1[3] = {1, 0, 2}, p2[3] = {2, 0, 1};
    tg_input(g, "x", d, 3);
    tg_node(g, "Transpose", "x", "a");
    tg_attr_ints(g, 0, "perm", p1, 3);
    tg_node(g, "Transpose", "a", "b");
    tg_attr_ints(g, 1, "perm", p1, 3); /* undoes the first */
    tg_node(g, "Transpose", "b", "c");
    tg_attr_ints(g, 2, "perm", p2, 3);
    tg_node(g, "Transpose", "c", "y");
    tg_attr_ints(g, 3, "perm", p1, 3); /* merges with the third */
    tg_output(g, "y");
    assert_true(optimize_and_compare(g, 1, "transpose_pairs") >= 2);
    assert_int_equal(count_op(g, "Transpose"), 1);
    mf_graph_free(g);
}

/* ---- level 2: Conv, Gemm, MatMul ------------------------------------------------ */

static void conv_graph(mf_graph *g, int with_bias) {
    int64_t xd[4] = {-1, 2, 6, 6}, wd[4] = {2, 2, 3, 3}, cd[1] = {2}, pads[4] = {1, 1, 1, 1};
    tg_input(g, "x", xd, 4);
    tg_const(g, "w", wd, 4, NULL);
    tg_const(g, "b", cd, 1, NULL);
    int c = tg_node(g, "Conv", with_bias ? "x,w,b" : "x,w", "c");
    tg_attr_ints(g, c, "pads", pads, 4);
}

static void test_fuse_conv_relu(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    conv_graph(g, 1);
    tg_node(g, "Relu", "c", "y");
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 2, "fuse_conv"), 1);
    assert_int_equal(g->n_nodes, 1);
    assert_int_equal(count_op(g, "minfer:FusedConv"), 1);
    mf_graph_free(g);
}

static void test_fuse_conv_add_relu(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    conv_graph(g, 0);
    tg_node(g, "Add", "x,c", "s"); /* residual: x has the output's shape */
    tg_node(g, "Relu", "s", "y");
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 2, "fuse_conv"), 1);
    assert_int_equal(g->n_nodes, 1);
    mf_graph_free(g);
}

static void test_fuse_conv_clip_and_silu(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    conv_graph(g, 1);
    tg_scalar(g, "lo", 0.0f);
    tg_scalar(g, "hi", 0.3f);
    tg_node(g, "Clip", "c,lo,hi", "r6");
    int64_t wd[4] = {2, 2, 1, 1};
    tg_const(g, "w2", wd, 4, NULL);
    tg_node(g, "Conv", "r6,w2", "c2");
    tg_node(g, "Sigmoid", "c2", "sg");
    tg_node(g, "Mul", "sg,c2", "y");
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 2, "fuse_conv"), 2);
    assert_int_equal(g->n_nodes, 2);
    assert_int_equal(count_op(g, "minfer:FusedConv"), 2);
    mf_graph_free(g);
}

static void test_conv_second_consumer_not_fused(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    conv_graph(g, 1);
    tg_node(g, "Relu", "c", "r");
    tg_node(g, "Add", "r,c", "y"); /* c read twice */
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 2, "fuse_conv"), 0);
    assert_int_equal(count_op(g, "Relu"), 1);
    mf_graph_free(g);
}

static void test_conv_clip_bounds_not_constant(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    conv_graph(g, 1);
    int64_t sd[1] = {1};
    tg_input(g, "hi", sd, 0);
    (void)sd;
    tg_node(g, "Clip", "c,,hi", "y");
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 2, "fuse_conv"), 0);
    assert_int_equal(count_op(g, "Clip"), 1);
    mf_graph_free(g);
}

static void test_fuse_gemm_and_matmul(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t xd[2] = {-1, 4}, wd[2] = {5, 4}, bd[1] = {5}, w2d[2] = {5, 3}, b2d[1] = {3};
    tg_input(g, "x", xd, 2);
    tg_const(g, "w", wd, 2, NULL);
    tg_const(g, "b", bd, 1, NULL);
    tg_const(g, "w2", w2d, 2, NULL);
    tg_const(g, "b2", b2d, 1, NULL);
    int gm = tg_node(g, "Gemm", "x,w,b", "h");
    tg_attr_int(g, gm, "transB", 1);
    tg_node(g, "Sigmoid", "h", "hs");
    tg_node(g, "MatMul", "hs,w2", "m");
    tg_node(g, "Add", "b2,m", "ma");
    tg_node(g, "Relu", "ma", "y");
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 2, "fuse_matmul"), 1);
    assert_int_equal(count_op(g, "minfer:FusedGemm"), 1);
    assert_int_equal(count_op(g, "minfer:FusedMatMul"), 1);
    assert_int_equal(g->n_nodes, 2);
    mf_graph_free(g);
}

static void test_matmul_bias_wrong_shape(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    int64_t xd[2] = {3, 4}, wd[2] = {4, 1}, bd[1] = {5};
    tg_input(g, "x", xd, 2);
    tg_const(g, "w", wd, 2, NULL);
    tg_const(g, "b", bd, 1, NULL); /* [5] would broadcast [3,1] up to [3,5] */
    tg_node(g, "MatMul", "x,w", "m");
    tg_node(g, "Add", "m,b", "y");
    tg_output(g, "y");
    assert_int_equal(optimize_and_compare(g, 2, "fuse_matmul"), 0);
    assert_int_equal(count_op(g, "MatMul"), 1);
    mf_graph_free(g);
}

/* ---- level 2: transformer patterns --------------------------------------------- */

static void layernorm_graph(mf_graph *g, int64_t axis2, int sub_is_output) {
    int64_t xd[3] = {-1, 3, 8}, sd[1] = {8}, ax[1] = {-1}, ax2[1] = {axis2};
    tg_input(g, "x", xd, 3);
    tg_scalar(g, "two", 2.0f);
    tg_scalar(g, "eps", 1e-5f);
    tg_const(g, "scale", sd, 1, NULL);
    tg_const(g, "bias", sd, 1, NULL);
    int r1 = tg_node(g, "ReduceMean", "x", "mean");
    tg_attr_ints(g, r1, "axes", ax, 1);
    tg_node(g, "Sub", "x,mean", "d");
    tg_node(g, "Pow", "d,two", "sq");
    int r2 = tg_node(g, "ReduceMean", "sq", "var");
    tg_attr_ints(g, r2, "axes", ax2, 1);
    tg_node(g, "Add", "var,eps", "ve");
    tg_node(g, "Sqrt", "ve", "sd");
    tg_node(g, "Div", "d,sd", "n");
    tg_node(g, "Mul", "n,scale", "ns");
    tg_node(g, "Add", "ns,bias", "y");
    tg_output(g, "y");
    if (sub_is_output)
        tg_output(g, "d");
}

static void test_fuse_layernorm(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    layernorm_graph(g, -1, 0);
    assert_int_equal(optimize_and_compare(g, 2, "fuse_layernorm"), 1);
    assert_int_equal(g->n_nodes, 1);
    assert_int_equal(count_op(g, "minfer:LayerNormalization"), 1);
    mf_graph_free(g);
}

static void test_layernorm_mismatched_axis(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    layernorm_graph(g, 1, 0);
    assert_int_equal(optimize_and_compare(g, 2, "fuse_layernorm"), 0);
    assert_int_equal(count_op(g, "ReduceMean"), 2);
    mf_graph_free(g);
}

static void test_layernorm_intermediate_is_output(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    layernorm_graph(g, -1, 1);
    assert_int_equal(optimize_and_compare(g, 2, "fuse_layernorm"), 0);
    assert_int_equal(count_op(g, "Sub"), 1);
    mf_graph_free(g);
}

/* order 0: Mul(Mul(x, 1+erf), 0.5); 1: Mul(Mul(1+erf, 0.5), x); 2: Mul(Mul(x, 0.5), 1+erf) */
static void gelu_graph(mf_graph *g, int order, int vector_divisor) {
    int64_t xd[2] = {-1, 6}, vd[1] = {6};
    float s2[6];
    for (int i = 0; i < 6; i++)
        s2[i] = (float)sqrt(2.0);
    tg_input(g, "x", xd, 2);
    if (vector_divisor)
        tg_const(g, "s2", vd, 1, s2);
    else
        tg_scalar(g, "s2", (float)sqrt(2.0));
    tg_scalar(g, "one", 1.0f);
    tg_scalar(g, "half", 0.5f);
    tg_node(g, "Div", "x,s2", "d");
    tg_node(g, "Erf", "d", "e");
    tg_node(g, "Add", "e,one", "a");
    if (order == 0) {
        tg_node(g, "Mul", "x,a", "m");
        tg_node(g, "Mul", "m,half", "y");
    } else if (order == 1) {
        tg_node(g, "Mul", "a,half", "m");
        tg_node(g, "Mul", "m,x", "y");
    } else {
        tg_node(g, "Mul", "x,half", "m");
        tg_node(g, "Mul", "m,a", "y");
    }
    tg_output(g, "y");
}

static void test_fuse_gelu(void **state) {
    (void)state;
    for (int order = 0; order < 3; order++) {
        mf_graph *g = tg_new(13);
        gelu_graph(g, order, 0);
        assert_int_equal(optimize_and_compare(g, 2, "fuse_gelu"), 1);
        assert_int_equal(g->n_nodes, 1);
        assert_int_equal(count_op(g, "minfer:Gelu"), 1);
        mf_graph_free(g);
    }
}

static void test_gelu_vector_divisor(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    gelu_graph(g, 0, 1);
    assert_int_equal(optimize_and_compare(g, 2, "fuse_gelu"), 0);
    assert_int_equal(count_op(g, "Erf"), 1);
    mf_graph_free(g);
}

/* scores: 0 Div after MatMul; 1 Q scaled first; 2 non-scalar divisor.
 * axis: the Softmax axis. */
static void attention_graph(mf_graph *g, int scores, int64_t axis, int mask) {
    int64_t qd[3] = {-1, 4, 8}, ktd[3] = {-1, 8, 5}, vd[3] = {-1, 5, 6}, md[2] = {1, 5},
            cd[1] = {5};
    tg_input(g, "q", qd, 3);
    tg_input(g, "kt", ktd, 3);
    tg_input(g, "v", vd, 3);
    tg_const(g, "mask", md, 2, NULL);
    if (scores == 2)
        tg_const(g, "c", cd, 1, NULL);
    else
        tg_scalar(g, "c", 2.5f);
    if (scores == 1) {
        tg_node(g, "Div", "q,c", "qs");
        tg_node(g, "MatMul", "qs,kt", "sc");
    } else {
        tg_node(g, "MatMul", "q,kt", "qk");
        tg_node(g, "Div", "qk,c", "sc");
    }
    if (mask)
        tg_node(g, "Add", "sc,mask", "sm");
    int s = tg_node(g, "Softmax", mask ? "sm" : "sc", "p");
    tg_attr_int(g, s, "axis", axis);
    tg_node(g, "MatMul", "p,v", "y");
    tg_output(g, "y");
}

static void test_fuse_attention(void **state) {
    (void)state;
    for (int form = 0; form < 2; form++) {
        mf_graph *g = tg_new(13);
        attention_graph(g, form, -1, form == 0);
        assert_int_equal(optimize_and_compare(g, 2, "fuse_attention"), 1);
        assert_int_equal(g->n_nodes, 1);
        assert_int_equal(count_op(g, "minfer:Attention"), 1);
        mf_graph_free(g);
    }
}

static void test_attention_not_fused(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    attention_graph(g, 2, -1, 1); /* non-scalar divisor */
    assert_int_equal(optimize_and_compare(g, 2, "fuse_attention"), 0);
    assert_int_equal(count_op(g, "Softmax"), 1);
    mf_graph_free(g);
    g = tg_new(13);
    attention_graph(g, 0, 1, 0); /* softmax over the wrong axis */
    assert_int_equal(optimize_and_compare(g, 2, "fuse_attention"), 0);
    assert_int_equal(count_op(g, "Softmax"), 1);
    mf_graph_free(g);
}

static void test_level0_untouched(void **state) {
    (void)state;
    mf_graph *g = tg_new(13);
    gelu_graph(g, 0, 0);
    size_t before = 0;
    assert_ok(mf_graph_finalize(g, "test"));
    before = g->n_nodes;
    mf_opt_ctx ctx = {0, mf_evaluator_eval_node, ev, 0, NULL, 0, NULL};
    assert_ok(mf_optimize(g, &ctx, "test"));
    assert_int_equal(g->n_nodes, before);
    mf_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_identity_dropout_dead),
        cmocka_unit_test(test_dropout_mask_read_stays),
        cmocka_unit_test(test_constant_folding),
        cmocka_unit_test(test_constant_folding_size_cap),
        cmocka_unit_test(test_shape_subgraph),
        cmocka_unit_test(test_batchnorm_into_conv),
        cmocka_unit_test(test_batchnorm_second_consumer),
        cmocka_unit_test(test_batchnorm_relu_as_conv),
        cmocka_unit_test(test_probes_survive_pooling),
        cmocka_unit_test(test_reshape_chain),
        cmocka_unit_test(test_cast_pairs),
        cmocka_unit_test(test_transpose_pairs),
        cmocka_unit_test(test_fuse_conv_relu),
        cmocka_unit_test(test_fuse_conv_add_relu),
        cmocka_unit_test(test_fuse_conv_clip_and_silu),
        cmocka_unit_test(test_conv_second_consumer_not_fused),
        cmocka_unit_test(test_conv_clip_bounds_not_constant),
        cmocka_unit_test(test_fuse_gemm_and_matmul),
        cmocka_unit_test(test_matmul_bias_wrong_shape),
        cmocka_unit_test(test_fuse_layernorm),
        cmocka_unit_test(test_layernorm_mismatched_axis),
        cmocka_unit_test(test_layernorm_intermediate_is_output),
        cmocka_unit_test(test_fuse_gelu),
        cmocka_unit_test(test_gelu_vector_divisor),
        cmocka_unit_test(test_fuse_attention),
        cmocka_unit_test(test_attention_not_fused),
        cmocka_unit_test(test_level0_untouched),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
