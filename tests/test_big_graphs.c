/*
 * The optimizer's work on big graphs grows linearly with the graph
 * (issue 16: a 32k-node constant chain took 93 s to build, the analysis
 * being recomputed over the whole graph after every fold; a chain of
 * Identity nodes rebuilt the use index after every removal). Work is counted
 * (mf_opt_report: nodes the shape analysis visited, node evaluations), not
 * timed; the test's timeout is the backstop against a slow return.
 * Sessions are also created and run from the big graphs of every shape in
 * tests/big_graphs.h, through the planner and placement.
 */
#include <stdlib.h>

#include "test_util.h"

#include "big_graphs.h"
#include "load/onnx_save.h"
#include "optimize/optimizer.h"

static mf_evaluator *ev;

static int setup(void **state) {
    (void)state;
    return mf_evaluator_open(&ev) == MINFER_OK ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    mf_evaluator_close(ev);
    return 0;
}

/* Optimizes a constant chain of n nodes at level 3 into rep; checks the
 * chain folded into the one node that writes the (pinned) output, reading
 * c0 + (n - 1) * one. */
static void fold_chain(size_t n, mf_opt_report *rep) {
    mf_graph *g = big_graph("const-chain", n);
    assert_non_null(g);
    mf_opt_ctx ctx = {3, mf_evaluator_eval_node, ev, 1 << 20, rep, 0, NULL};
    assert_ok(mf_optimize(g, &ctx, "const-chain"));
    assert_int_equal(rep->nodes_before, n);
    assert_int_equal(g->n_nodes, 1);
    const minfer_tensor *t = g->values[g->nodes[0].inputs[0]].initializer;
    assert_non_null(t);
    const float *p = (const float *)t->view.data;
    for (int k = 0; k < 4; k++)
        assert_true(p[k] == 0.5f + (float)k + (float)(n - 1) * (1.0f + (float)k));
    mf_graph_free(g);
}

static void test_constant_chain_linear_work(void **state) {
    (void)state;
    mf_opt_report small, big;
    fold_chain(2000, &small);
    fold_chain(32000, &big);
    /* Before: every fold recomputed the analysis over the whole chain, about
     * n^2 / 2 * 3 node visits (1.5e9 for 32k). Now a few visits per node. */
    assert_true(big.analysis_nodes <= 16 * 32000);
    assert_true(big.evaluations <= 8 * 32000);
    /* And per node, the big chain costs no more than the small one (+ slack). */
    assert_true(big.analysis_nodes / 32000 <= small.analysis_nodes / 2000 + 2);
    assert_true(big.evaluations / 32000 <= small.evaluations / 2000 + 2);
}

/* A chain of 32k Identity nodes: each removal used to rewrite every node
 * and rebuild the use index (quadratic); the chain leaves Relu(x). */
static void test_identity_chain(void **state) {
    (void)state;
    mf_opt_report rep;
    mf_graph *g = big_graph("identity-chain", 32000);
    assert_non_null(g);
    mf_opt_ctx ctx = {3, mf_evaluator_eval_node, ev, 1 << 20, &rep, 0, NULL};
    assert_ok(mf_optimize(g, &ctx, "identity-chain"));
    assert_int_equal(g->n_nodes, 1);
    assert_string_equal(g->nodes[0].op_type, "Relu");
    assert_string_equal(g->values[g->nodes[0].inputs[0]].name, "x");
    mf_graph_free(g);
}

/* A chain of n MatMul + Add pairs: n fusions into FusedMatMul, each of
 * which used to mark the analysis stale for the next (n whole-graph
 * analyses); a fusion changes no surviving value's type or shape, so the
 * analysis now runs about once per pass. */
static void test_fusion_chain_linear_work(void **state) {
    (void)state;
    mf_opt_report rep;
    enum { N = 2000 };
    mf_graph *g = big_graph("matmul-chain", N);
    assert_non_null(g);
    mf_opt_ctx ctx = {3, mf_evaluator_eval_node, ev, 1 << 20, &rep, 0, NULL};
    assert_ok(mf_optimize(g, &ctx, "matmul-chain"));
    assert_int_equal(g->n_nodes, N);
    for (size_t i = 0; i < g->n_nodes; i++)
        assert_string_equal(g->nodes[i].op_type, "FusedMatMul");
    /* Before: about 3 * N * 2N node visits (2.4e7); now a few per pass. */
    printf("matmul-chain %d: %zu analysis node visits\n", N, rep.analysis_nodes);
    assert_true(rep.analysis_nodes <= 64 * 2 * N);
    mf_graph_free(g);
}

/* A session (default options: level 3, the greedy planner) from each big
 * graph shape, run once on x = 1: the output is what the graph computes. */
static void create_and_run(const char *kind, size_t n, float want0) {
    mf_graph *g = big_graph(kind, n);
    void *data = NULL;
    size_t size = 0;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *x = NULL, *y = NULL;
    char out_name[64];
    assert_non_null(g);
    snprintf(out_name, sizeof out_name, "%s", g->values[g->outputs[0]].name);
    assert_ok(mf_save_onnx_memory(g, &data, &size));
    mf_graph_free(g);
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_session_create_from_memory(data, size, opt, &s));
    free(data);
    const char *in_name = "x", *out_names[1] = {out_name};
    size_t n_in = 0;
    if (strcmp(kind, "const-chain") != 0) {
        int64_t dims[2] = {1, 4};
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &x));
        float *p = minfer_tensor_data(x);
        for (int k = 0; k < 4; k++)
            p[k] = 1.0f;
        n_in = 1;
    }
    assert_ok(minfer_session_run(s, &in_name, (const minfer_tensor *const *)&x, n_in, out_names,
                                 &y, 1));
    const float *out = minfer_tensor_data(y);
    if (!(fabsf(out[0] - want0) <= 1e-3f * fabsf(want0) + 1e-3f))
        fail_msg("%s %zu: output %g, want %g", kind, n, out[0], want0);
    minfer_tensor_free(x);
    minfer_tensor_free(y);
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_sessions_from_big_graphs(void **state) {
    (void)state;
    enum { N = 32000 };
    create_and_run("const-chain", N, 0.5f + N);
    create_and_run("add-chain", N, 1.0f + N);
    /* x + sum of w_i[0] = i * 1e-3 */
    create_and_run("init-chain", N, 1.0f + 1e-3f * (float)N * (N + 1) / 2);
    create_and_run("identity-chain", N, 1.0f);
    /* sum of x * w_i[0] over i < n */
    create_and_run("wide", 2000, 1e-3f * 2000.0f * 1999.0f / 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_constant_chain_linear_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_identity_chain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fusion_chain_linear_work, setup, teardown),
        cmocka_unit_test(test_sessions_from_big_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
