/*
 * The fusions' gate (core/optimize/gate.c): a fusion whose node no provider
 * of the session runs is not applied, and the unfused graph runs.
 *
 * mf_optimize_gated runs on small graphs in the core's IR with a gate that
 * stands in for a session's providers: it declines the ops it is told to
 * and records the node descriptions it is asked about. Checked: the ops
 * left after the optimization (fused where accepted, the pattern as it
 * was where declined), the report's count of fusions left out, the
 * description a provider would get (types, static dims, a constant's data,
 * attributes through the host node), and that the outputs, run through a
 * session at level 0, equal the graph's as built. Then the same graph in a
 * session whose only provider runs no minfer op (the "decline" test
 * provider, tests/gate_provider/decline.c): built, not refused, with no
 * fused node, and the outputs of the cpu session.
 */
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

#include "graph/graph.h"
#include "util/internal.h"
#include "load/onnx_save.h"
#include "optimize/optimizer.h"

/* ---- building graphs (as tests/test_optimizer.c) --------------------------- */

static mf_graph *tg_new(int64_t opset) {
    mf_graph *g = mf_graph_new();
    assert_non_null(g);
    g->opsets = calloc(1, sizeof *g->opsets);
    g->opsets[0].domain = mf_strdup("");
    g->opsets[0].version = opset;
    g->n_opsets = 1;
    return g;
}

static void tg_input(mf_graph *g, const char *name, const int64_t *dims, int rank) {
    int v = mf_graph_intern(g, name);
    mf_value *val = &g->values[v];
    val->dtype = MINFER_DTYPE_FLOAT;
    val->rank = rank;
    val->is_input = 1;
    for (int d = 0; d < rank; d++)
        val->dims[d] = dims[d];
    g->inputs = realloc(g->inputs, (g->n_inputs + 1) * sizeof *g->inputs);
    g->inputs[g->n_inputs++] = v;
}

/* A float constant of pseudo-random values (or the one value v for rank 0). */
static void tg_const(mf_graph *g, const char *name, const int64_t *dims, int rank, float v) {
    minfer_tensor *t = NULL;
    assert_int_equal(mf_tensor_new(MINFER_DTYPE_FLOAT, dims, rank, &t), MINFER_OK);
    float *p = t->view.data;
    int64_t n = minfer_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        p[i] = rank ? (float)sin((double)(i * 7 + 1)) * 0.5f + 0.75f : v;
    int x = mf_graph_intern(g, name);
    g->values[x].initializer = t;
    g->values[x].dtype = MINFER_DTYPE_FLOAT;
    g->values[x].rank = rank;
    for (int d = 0; d < rank; d++)
        g->values[x].dims[d] = dims[d];
}

static int tg_node(mf_graph *g, const char *op, const char *ins, const char *outs) {
    int i = mf_graph_add_node(g);
    mf_node *n = &g->nodes[i];
    n->name = mf_strdup(op);
    n->op_type = mf_strdup(op);
    n->domain = mf_strdup("");
    const char *lists[2] = {ins, outs};
    for (int l = 0; l < 2; l++) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", lists[l]);
        int *idx = calloc(16, sizeof *idx);
        size_t cnt = 0;
        for (char *p = buf;;) {
            char *comma = strchr(p, ',');
            if (comma)
                *comma = '\0';
            idx[cnt++] = p[0] ? mf_graph_intern(g, p) : -1;
            if (!comma)
                break;
            p = comma + 1;
        }
        if (l == 0) {
            n->inputs = idx;
            n->n_inputs = cnt;
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

#define EPS 1e-6f

/* x [2, 8, 16] -> RMSNorm (Pow, ReduceMean, Add, Sqrt, Reciprocal, Mul,
 * Mul(scale)) -> r; self-attention over r (MatMul(r, Transpose(r)), Div by
 * 4, Softmax, MatMul(., r)) -> a; MatMul(a, W) + b -> Relu -> y; and a
 * Conv + Relu on x viewed as [2, 8, 16, 1]: four fusions, each of another
 * op (RMSNormalization, Attention, FusedMatMul, FusedConv). */
static mf_graph *model(void) {
    mf_graph *g = tg_new(13);
    int64_t xd[3] = {2, 8, 16}, d16[1] = {16}, w[2] = {16, 16}, cw[4] = {4, 8, 1, 1};
    int64_t shape4[4] = {2, 8, 16, 1}, four = 4;
    tg_input(g, "x", xd, 3);
    tg_const(g, "two", NULL, 0, 2.0f);
    tg_const(g, "eps", NULL, 0, EPS);
    tg_const(g, "scale", d16, 1, 0);
    tg_const(g, "div", NULL, 0, 4.0f);
    tg_const(g, "W", w, 2, 0);
    tg_const(g, "b", d16, 1, 0);
    tg_const(g, "CW", cw, 4, 0);
    minfer_tensor *t = NULL;
    assert_int_equal(mf_tensor_new(MINFER_DTYPE_INT64, &four, 1, &t), MINFER_OK);
    memcpy(t->view.data, shape4, sizeof shape4);
    int sv = mf_graph_intern(g, "shape4");
    g->values[sv].initializer = t;
    tg_node(g, "Pow", "x,two", "sq");
    int rm = tg_node(g, "ReduceMean", "sq", "ms");
    int64_t axes[1] = {-1}, perm[3] = {0, 2, 1};
    tg_attr_ints(g, rm, "axes", axes, 1);
    tg_node(g, "Add", "ms,eps", "mse");
    tg_node(g, "Sqrt", "mse", "rt");
    tg_node(g, "Reciprocal", "rt", "inv");
    tg_node(g, "Mul", "x,inv", "nrm");
    tg_node(g, "Mul", "nrm,scale", "r");
    int tr = tg_node(g, "Transpose", "r", "rt2");
    tg_attr_ints(g, tr, "perm", perm, 3);
    tg_node(g, "MatMul", "r,rt2", "s");
    tg_node(g, "Div", "s,div", "sd");
    tg_node(g, "Softmax", "sd", "p");
    tg_node(g, "MatMul", "p,r", "a");
    tg_node(g, "MatMul", "a,W", "aw");
    tg_node(g, "Add", "aw,b", "awb");
    tg_node(g, "Relu", "awb", "y");
    tg_node(g, "Reshape", "x,shape4", "x4");
    tg_node(g, "Conv", "x4,CW", "c");
    tg_node(g, "Relu", "c", "z");
    tg_output(g, "y");
    tg_output(g, "z");
    assert_int_equal(mf_graph_finalize(g, "test"), MINFER_OK);
    return g;
}

/* ---- the stand-in for a session's providers -------------------------------- */

typedef struct gate_double {
    const char *decline[4]; /* op types (minfer domain) it does not run */
    int asked;              /* nodes asked about */
    int rms_checked;        /* the RMSNormalization's description was as expected */
} gate_double;

static int supports(void *user, const minfer_node_desc *n, char *why, size_t size) {
    gate_double *gd = user;
    gd->asked++;
    assert_int_equal(n->struct_size, sizeof *n);
    assert_int_equal(n->value_desc_size, sizeof(minfer_value_desc));
    assert_string_equal(n->domain, "minfer");
    if (strcmp(n->op_type, "RMSNormalization") == 0) {
        /* What a provider reads: types, static dims, the constant scale,
         * the attributes through the host node. */
        assert_int_equal(n->n_inputs, 2);
        assert_int_equal(n->n_outputs, 1);
        assert_int_equal(n->inputs[0].dtype, MINFER_DTYPE_FLOAT);
        assert_int_equal(n->inputs[0].rank, 3);
        assert_int_equal(n->inputs[0].dims[0], 2);
        assert_int_equal(n->inputs[0].dims[2], 16);
        assert_null(n->inputs[0].const_data);
        assert_non_null(n->inputs[1].const_data);
        assert_int_equal(n->inputs[1].const_nbytes, 16 * sizeof(float));
        assert_int_equal(n->outputs[0].rank, 3);
        assert_string_equal(n->outputs[0].name, "r");
        const mf_node *hn = n->host_node;
        assert_true(fabsf(mf_attr_float(hn, "epsilon", 0) - EPS) < 1e-12f);
        assert_int_equal(mf_attr_int(hn, "axis", 0), -1);
        gd->rms_checked = 1;
    }
    /* The outputs are checked on cpu, which has no kernel for these three
     * (made for a session whose provider runs them, docs/fused-ops.md). */
    if (strcmp(n->op_type, "FusedConcat") == 0 || strcmp(n->op_type, "FusedElementwise") == 0 ||
        strcmp(n->op_type, "GatedConv") == 0) {
        snprintf(why, size, "no CPU kernel for %s", n->op_type);
        return 0;
    }
    for (int k = 0; k < 4 && gd->decline[k]; k++)
        if (strcmp(n->op_type, gd->decline[k]) == 0) {
            snprintf(why, size, "the test declines %s", n->op_type);
            return 0;
        }
    return 1;
}

/* ---- running and checking ----------------------------------------------- */

static size_t count_op(const mf_graph *g, const char *domain, const char *op) {
    size_t n = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        n += strcmp(g->nodes[i].domain, domain) == 0 && strcmp(g->nodes[i].op_type, op) == 0;
    return n;
}

/* Both outputs of g run through a cpu session at level 0. */
static void run_graph(const mf_graph *g, minfer_tensor **outs) {
    void *data = NULL;
    size_t size = 0;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *in = NULL;
    int64_t xd[3] = {2, 8, 16};
    assert_ok(mf_save_onnx_memory(g, &data, &size));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_optimization_level(opt, 0));
    assert_ok(minfer_session_create_from_memory(data, size, opt, &s));
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, xd, 3, &in));
    float *p = minfer_tensor_data(in);
    for (int64_t i = 0; i < minfer_tensor_numel(in); i++)
        p[i] = (float)cos((double)(i * 13 + 2)) * 2.0f;
    const char *in_name = "x", *out_names[2] = {"y", "z"};
    assert_ok(minfer_session_run(s, &in_name, (const minfer_tensor *const *)&in, 1, out_names,
                                 outs, 2));
    minfer_tensor_free(in);
    minfer_session_free(s);
    minfer_options_free(opt);
    free(data);
}

static mf_evaluator *ev;

/* Optimizes model() at level 3 through gd (NULL: ungated); checks the
 * outputs against the graph as built and returns the optimized graph. */
static mf_graph *optimize(gate_double *gd, mf_opt_report *rep) {
    mf_graph *g = model();
    minfer_tensor *want[2] = {NULL, NULL}, *got[2] = {NULL, NULL};
    run_graph(g, want);
    mf_opt_ctx ctx = {3, mf_evaluator_eval_node, ev, 1 << 20, rep, 0, NULL};
    mf_opt_gate gate = {supports, gd, NULL};
    assert_ok(mf_optimize_gated(g, &ctx, gd ? &gate : NULL, "test"));
    run_graph(g, got);
    for (int o = 0; o < 2; o++) {
        assert_int_equal(minfer_tensor_numel(want[o]), minfer_tensor_numel(got[o]));
        const float *a = minfer_tensor_data(want[o]), *b = minfer_tensor_data(got[o]);
        for (int64_t i = 0; i < minfer_tensor_numel(want[o]); i++)
            if (!(fabsf(a[i] - b[i]) <= 1e-5f + 1e-4f * fabsf(a[i])))
                fail_msg("output %d[%lld]: %g as built, %g optimized", o, (long long)i, a[i],
                         b[i]);
        minfer_tensor_free(want[o]);
        minfer_tensor_free(got[o]);
    }
    return g;
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

/* ---- cases ---------------------------------------------------------------- */

/* Without a gate (minfer optimize, compile) and with one that runs
 * everything, all four fusions apply. */
static void test_all_supported(void **state) {
    (void)state;
    mf_opt_report rep;
    gate_double gd = {{NULL}, 0, 0};
    for (int gated = 0; gated < 2; gated++) {
        mf_graph *g = optimize(gated ? &gd : NULL, &rep);
        assert_int_equal(count_op(g, "minfer", "RMSNormalization"), 1);
        assert_int_equal(count_op(g, "minfer", "Attention"), 1);
        assert_int_equal(count_op(g, "minfer", "FusedMatMul"), 1);
        assert_int_equal(count_op(g, "minfer", "FusedConv"), 1);
        assert_int_equal(rep.unfused, 0);
        mf_graph_free(g);
    }
    assert_true(gd.asked >= 4);
    assert_true(gd.rms_checked);
}

/* No provider runs any fused op: every pattern stays as written. */
static void test_none_supported(void **state) {
    (void)state;
    mf_opt_report rep;
    gate_double gd = {{"RMSNormalization", "Attention", "FusedMatMul", "FusedConv"}, 0, 0};
    mf_graph *g = optimize(&gd, &rep);
    assert_int_equal(rep.unfused, 4);
    for (size_t i = 0; i < g->n_nodes; i++)
        assert_string_equal(g->nodes[i].domain, "");
    assert_int_equal(count_op(g, "", "ReduceMean"), 1);
    assert_int_equal(count_op(g, "", "Reciprocal"), 1);
    assert_int_equal(count_op(g, "", "Softmax"), 1);
    assert_int_equal(count_op(g, "", "MatMul"), 3);
    assert_int_equal(count_op(g, "", "Relu"), 2);
    assert_int_equal(count_op(g, "", "Conv"), 1);
    assert_true(gd.rms_checked);
    mf_graph_free(g);
}

/* One op declined: only its fusion is left out. */
static void test_one_declined(void **state) {
    (void)state;
    mf_opt_report rep;
    gate_double gd = {{"Attention"}, 0, 0};
    mf_graph *g = optimize(&gd, &rep);
    assert_int_equal(rep.unfused, 1);
    assert_int_equal(count_op(g, "minfer", "RMSNormalization"), 1);
    assert_int_equal(count_op(g, "minfer", "Attention"), 0);
    assert_int_equal(count_op(g, "", "Softmax"), 1);
    assert_int_equal(count_op(g, "minfer", "FusedMatMul"), 1);
    assert_int_equal(count_op(g, "minfer", "FusedConv"), 1);
    mf_graph_free(g);
}

/* Through a session: its only provider, "decline" (tests/gate_provider),
 * runs every ONNX op and no minfer op. Before the gate the session was
 * refused ("no provider supports ... minfer:RMSNormalization"); now it is
 * built at level 3 with no fused node, every node on "decline", and the
 * outputs equal the cpu session's at level 0. */
static void test_session_provider_declines(void **state) {
    (void)state;
    mf_graph *g = model();
    minfer_tensor *want[2] = {NULL, NULL}, *got[2] = {NULL, NULL}, *in = NULL;
    run_graph(g, want);
    void *data = NULL;
    size_t size = 0;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(mf_save_onnx_memory(g, &data, &size));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "decline"));
    assert_ok(minfer_options_set_optimization_level(opt, 3));
    assert_ok(minfer_session_create_from_memory(data, size, opt, &s));
    size_t nodes = minfer_session_node_count(s);
    assert_true(nodes > 0);
    for (size_t i = 0; i < nodes; i++) {
        minfer_node_placement p;
        assert_ok(minfer_session_node_placement(s, i, &p));
        assert_string_equal(p.domain, "");
        if (strcmp(p.provider, "(constant)") != 0)
            assert_string_equal(p.provider, "decline");
    }
    int64_t xd[3] = {2, 8, 16};
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, xd, 3, &in));
    float *p = minfer_tensor_data(in);
    for (int64_t i = 0; i < minfer_tensor_numel(in); i++)
        p[i] = (float)cos((double)(i * 13 + 2)) * 2.0f;
    const char *in_name = "x", *out_names[2] = {"y", "z"};
    assert_ok(minfer_session_run(s, &in_name, (const minfer_tensor *const *)&in, 1, out_names,
                                 got, 2));
    for (int o = 0; o < 2; o++) {
        assert_int_equal(minfer_tensor_numel(want[o]), minfer_tensor_numel(got[o]));
        const float *a = minfer_tensor_data(want[o]), *b = minfer_tensor_data(got[o]);
        for (int64_t i = 0; i < minfer_tensor_numel(want[o]); i++)
            if (!(fabsf(a[i] - b[i]) <= 1e-5f + 1e-4f * fabsf(a[i])))
                fail_msg("output %d[%lld]: %g on cpu, %g on decline", o, (long long)i, a[i], b[i]);
        minfer_tensor_free(want[o]);
        minfer_tensor_free(got[o]);
    }
    minfer_tensor_free(in);
    minfer_session_free(s);
    minfer_options_free(opt);
    free(data);
    mf_graph_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_supported),
        cmocka_unit_test(test_none_supported),
        cmocka_unit_test(test_one_declined),
        cmocka_unit_test(test_session_provider_declines),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
