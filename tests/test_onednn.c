/*
 * The oneDNN provider against the CPU provider (the oracle), on small graphs
 * built with the builder API: each graph runs once with providers {"onednn"}
 * and once with {"cpu"} on the same random inputs, the outputs must agree
 * (|a - b| <= 1e-4 + 1e-3 |b|), and every node must have been placed on
 * onednn. A case the CPU provider cannot run fails: oneDNN is never
 * compared with itself.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minfer/builder.h"
#include "minfer/minfer.h"

#define MAX_IN 8

#define TC_SEED 12345u
#include "provider_case.h"

#define INTS(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define NAMES(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

/* Nodes the oneDNN provider split into pieces (its verbose log), and of
 * those, by output channels. */
static int split_nodes, split_channels;

static void count_splits(void *user, minfer_log_level level, const char *message) {
    (void)user;
    (void)level;
    if (strstr(message, "onednn: node '") && strstr(message, "' runs in ")) {
        split_nodes++;
        split_channels += strstr(message, "(output channels)") != NULL;
    }
}

/* Creates a session on providers with threads threads (and, when split
 * is set, the oneDNN provider option split=on: every node with a split
 * form runs in pieces), runs it; NULL when creation fails. */
static minfer_tensor *run_with(tcase *t, const char *provider, int check_placement, int threads,
                               int split) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *out = NULL;
    const char *names[MAX_IN];
    const minfer_tensor *ins[MAX_IN];
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers(opt, &provider, 1), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, threads), MINFER_OK);
    if (split) {
        assert_int_equal(minfer_options_set_provider_options(opt, "onednn", "split=on"),
                         MINFER_OK);
        assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_VERBOSE), MINFER_OK);
        assert_int_equal(minfer_options_set_log_callback(opt, count_splits, NULL), MINFER_OK);
    }
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK) {
        print_message("  %s: session not created: %s\n", provider, minfer_last_error());
        return NULL;
    }
    if (check_placement)
        for (size_t i = 0; i < minfer_session_node_count(s); i++) {
            minfer_node_placement p;
            assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
            if (strcmp(p.provider, provider) != 0)
                fail_msg("node %s (%s) placed on %s, not %s", p.node_name, p.op_type, p.provider,
                         provider);
        }
    for (size_t i = 0; i < t->n_in; i++) {
        names[i] = t->names[i];
        ins[i] = t->inputs[i];
    }
    st = minfer_session_run(s, names, ins, t->n_in, NULL, &out, 1);
    if (st != MINFER_OK)
        fail_msg("%s: run failed: %s", provider, minfer_last_error());
    minfer_session_free(s);
    return out;
}

static minfer_tensor *run_on(tcase *t, const char *provider, int check_placement) {
    return run_with(t, provider, check_placement, 2, 0);
}

static void compare(const minfer_tensor *got, const minfer_tensor *want, const char *what) {
    assert_int_equal(minfer_tensor_rank(got), minfer_tensor_rank(want));
    for (size_t d = 0; d < minfer_tensor_rank(got); d++)
        assert_int_equal(minfer_tensor_dims(got)[d], minfer_tensor_dims(want)[d]);
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++) {
        int ok = fabsf(g[i] - w[i]) <= 1e-4f + 1e-3f * fabsf(w[i]) ||
                 (isnan(g[i]) && isnan(w[i]));
        if (!ok)
            fail_msg("element %lld: %s %g, cpu %g", (long long)i, what, (double)g[i],
                     (double)w[i]);
    }
}

/* Runs the graph (output "y") on onednn and cpu and compares; onednn runs
 * twice: as a user would (2 threads), and at 3 threads with every node that
 * has a split form in pieces (uneven ones, when the extent is not a
 * multiple of 3). */
static void tc_check(tcase *t) {
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
    minfer_tensor *got = run_on(t, "onednn", 1);
    if (!got)
        fail_msg("onednn refused the graph: %s", minfer_last_error());
    minfer_tensor *split = run_with(t, "onednn", 1, 3, 1);
    if (!split)
        fail_msg("onednn with split=on refused the graph: %s", minfer_last_error());
    /* Never oneDNN against itself: a graph the oracle cannot run is a case
     * that checks nothing, so it fails (write its oracle as a graph of ops
     * the CPU provider has). */
    minfer_tensor *want = run_on(t, "cpu", 0);
    if (!want)
        fail_msg("the CPU oracle cannot run this graph (%s): nothing to compare oneDNN with",
                 minfer_last_error());
    compare(got, want, "onednn");
    compare(split, want, "onednn split=on");
    minfer_tensor_free(got);
    minfer_tensor_free(split);
    minfer_tensor_free(want);
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
}

/* ---- Conv ------------------------------------------------------------------ */

typedef struct conv_spec {
    int64_t x[5], w[5];
    size_t rank;
    int64_t group;
    const int64_t *strides, *dilations, *pads;
    const char *auto_pad;
    int bias;
} conv_spec;

static void conv_case(const conv_spec *c) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", c->x, c->rank);
    tc_const(&t, "w", c->w, c->rank, NULL);
    if (c->bias)
        tc_const(&t, "b", c->w, 1, NULL);
    size_t nsp = c->rank - 2;
    size_t n = tc_node(&t, "Conv", NULL, (const char *const[]){"x", "w", "b"}, c->bias ? 3 : 2,
                       "y");
    if (c->group > 1)
        minfer_builder_set_attr_int(t.b, n, "group", c->group);
    if (c->strides)
        minfer_builder_set_attr_ints(t.b, n, "strides", c->strides, nsp);
    if (c->dilations)
        minfer_builder_set_attr_ints(t.b, n, "dilations", c->dilations, nsp);
    if (c->pads)
        minfer_builder_set_attr_ints(t.b, n, "pads", c->pads, 2 * nsp);
    if (c->auto_pad)
        minfer_builder_set_attr_string(t.b, n, "auto_pad", c->auto_pad);
    tc_check(&t);
}

static void test_conv_basic(void **state) {
    (void)state;
    conv_case(&(conv_spec){{1, 8, 10, 10}, {16, 8, 3, 3}, 4, 1, NULL, NULL,
                           (int64_t[]){1, 1, 1, 1}, NULL, 1});
}

static void test_conv_groups_strides_dilations(void **state) {
    (void)state;
    conv_case(&(conv_spec){{2, 8, 13, 11}, {12, 4, 3, 3}, 4, 2, (int64_t[]){2, 1},
                           (int64_t[]){2, 1}, (int64_t[]){1, 0, 2, 1}, NULL, 1});
}

static void test_conv_depthwise(void **state) {
    (void)state;
    conv_case(&(conv_spec){{1, 16, 9, 9}, {16, 1, 3, 3}, 4, 16, (int64_t[]){2, 2}, NULL,
                           (int64_t[]){1, 1, 1, 1}, NULL, 1});
}

static void test_conv_stem(void **state) {
    (void)state;
    conv_case(&(conv_spec){{1, 3, 32, 32}, {16, 3, 7, 7}, 4, 1, (int64_t[]){2, 2}, NULL,
                           (int64_t[]){3, 3, 3, 3}, NULL, 0});
}

static void test_conv_auto_pad(void **state) {
    (void)state;
    conv_case(&(conv_spec){{1, 4, 7, 7}, {8, 4, 3, 3}, 4, 1, (int64_t[]){2, 2}, NULL, NULL,
                           "SAME_UPPER", 1});
    conv_case(&(conv_spec){{1, 4, 8, 8}, {8, 4, 4, 4}, 4, 1, (int64_t[]){2, 2}, NULL, NULL,
                           "SAME_LOWER", 0});
    conv_case(&(conv_spec){{1, 4, 9, 9}, {8, 4, 3, 3}, 4, 1, (int64_t[]){2, 2}, NULL, NULL,
                           "VALID", 1});
}

static void test_conv_1d_3d(void **state) {
    (void)state;
    conv_case(&(conv_spec){{2, 4, 20}, {6, 4, 5}, 3, 1, (int64_t[]){2}, NULL, (int64_t[]){2, 2},
                           NULL, 1});
    conv_case(&(conv_spec){{1, 3, 6, 6, 6}, {4, 3, 3, 3, 3}, 5, 1, NULL, NULL,
                           (int64_t[]){1, 1, 1, 1, 1, 1}, NULL, 1});
}

/* Conv -> Relu -> MaxPool -> Conv -> Add(residual) -> Relu: values stay on
 * onednn between nodes (in its layouts when it has its own domain). */
static void test_conv_chain(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 8, 16, 16));
    tc_const(&t, "w1", INTS(16, 8, 3, 3), NULL);
    tc_const(&t, "w2", INTS(16, 16, 3, 3), NULL);
    tc_const(&t, "b2", INTS(16), NULL);
    size_t n = tc_node(&t, "Conv", NULL, NAMES("x", "w1"), "c1");
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    tc_node(&t, "Relu", NULL, NAMES("c1"), "r1");
    n = tc_node(&t, "MaxPool", NULL, NAMES("r1"), "p1");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", INTS(3, 3));
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    n = tc_node(&t, "Conv", NULL, NAMES("p1", "w2", "b2"), "c2");
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    tc_node(&t, "Add", NULL, NAMES("c2", "p1"), "a");
    tc_node(&t, "Relu", NULL, NAMES("a"), "y");
    tc_check(&t);
}

static void test_fused_conv(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 8, 12, 12));
    tc_input(&t, "z", INTS(1, 8, 12, 12));
    tc_const(&t, "w", INTS(8, 8, 3, 3), NULL);
    tc_const(&t, "b", INTS(8), NULL);
    size_t n = tc_node(&t, "FusedConv", "minfer", NAMES("x", "w", "b", "z"), "y");
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    minfer_builder_set_attr_string(t.b, n, "activation", "Clip");
    minfer_builder_set_attr_floats(t.b, n, "activation_params", (const float[]){0.0f, 0.5f}, 2);
    tc_check(&t);
}

static void test_conv_transpose(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 4, 5, 5));
    tc_const(&t, "w", INTS(4, 3, 3, 3), NULL);
    size_t n = tc_node(&t, "ConvTranspose", NULL, NAMES("x", "w"), "y");
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    tc_check(&t);
}

/* ---- MatMul and Gemm --------------------------------------------------------- */

static void matmul_case(const int64_t *a, size_t ra, const int64_t *b, size_t rb, int b_const) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", a, ra);
    if (b_const)
        tc_const(&t, "b", b, rb, NULL);
    else
        tc_input(&t, "b", b, rb);
    tc_node(&t, "MatMul", NULL, NAMES("a", "b"), "y");
    tc_check(&t);
}

static void test_matmul_broadcast(void **state) {
    (void)state;
    matmul_case(INTS(2, 3, 4, 5), INTS(5, 6), 1);
    matmul_case(INTS(4, 5), INTS(3, 5, 6), 0);
    matmul_case(INTS(2, 1, 4, 5), INTS(3, 5, 7), 0);
    matmul_case(INTS(5), INTS(2, 5, 6), 0);
    matmul_case(INTS(3, 4, 5), INTS(5), 1);
}

static void gemm_case(int ta, int tb, float alpha, float beta, const int64_t *c, size_t rc,
                      int c_const) {
    tcase t;
    tc_init(&t, 13);
    int64_t M = 5, K = 7, N = 6;
    tc_input(&t, "a", ta ? (int64_t[]){K, M} : (int64_t[]){M, K}, 2);
    tc_const(&t, "b", tb ? (int64_t[]){N, K} : (int64_t[]){K, N}, 2, NULL);
    if (c && c_const)
        tc_const(&t, "c", c, rc, NULL);
    else if (c)
        tc_input(&t, "c", c, rc);
    size_t n = tc_node(&t, "Gemm", NULL, (const char *const[]){"a", "b", "c"}, c ? 3 : 2, "y");
    minfer_builder_set_attr_int(t.b, n, "transA", ta);
    minfer_builder_set_attr_int(t.b, n, "transB", tb);
    minfer_builder_set_attr_float(t.b, n, "alpha", alpha);
    minfer_builder_set_attr_float(t.b, n, "beta", beta);
    tc_check(&t);
}

static void test_gemm(void **state) {
    (void)state;
    gemm_case(0, 1, 1.0f, 1.0f, INTS(6), 1);
    gemm_case(1, 0, 0.5f, 2.0f, INTS(5, 1), 1);
    gemm_case(1, 1, 1.5f, 1.0f, INTS(5, 6), 0);
    gemm_case(0, 0, 1.0f, 1.0f, NULL, 0, 0);
}

static void test_fused_gemm_matmul(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", INTS(4, 8));
    tc_const(&t, "b", INTS(8, 3), NULL);
    tc_const(&t, "c", INTS(3), NULL);
    size_t n = tc_node(&t, "FusedGemm", "minfer", NAMES("a", "b", "c"), "y");
    minfer_builder_set_attr_string(t.b, n, "activation", "Relu");
    tc_check(&t);
    tc_init(&t, 13);
    tc_input(&t, "a", INTS(2, 4, 8));
    tc_const(&t, "b", INTS(8, 3), NULL);
    tc_const(&t, "c", INTS(3), NULL);
    n = tc_node(&t, "FusedMatMul", "minfer", NAMES("a", "b", "c"), "y");
    minfer_builder_set_attr_string(t.b, n, "activation", "Tanh");
    tc_check(&t);
}

/* B without batch axes: A's leading axes fold into M (one GEMM). */
static void test_matmul_collapsed(void **state) {
    (void)state;
    matmul_case(INTS(64, 1, 16), INTS(16, 24), 1);   /* batch of M = 1 rows */
    matmul_case(INTS(2, 3, 5, 7), INTS(1, 7, 9), 1); /* B with a leading 1 */
    matmul_case(INTS(4, 3, 8), INTS(8, 5), 0);       /* B not constant */
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", INTS(32, 1, 16));
    tc_const(&t, "b", INTS(16, 48), NULL);
    tc_const(&t, "c", INTS(48), NULL);
    size_t n = tc_node(&t, "FusedMatMul", "minfer", NAMES("a", "b", "c"), "y");
    minfer_builder_set_attr_string(t.b, n, "activation", "Relu");
    tc_check(&t);
}

/* Gemm whose A has symbolic dims when providers are asked (the shape
 * arithmetic of a transformer: A = Reshape(x, [-1, K])): onednn must take
 * it and decide at prepare with the concrete shapes. */
static void test_gemm_dynamic(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    const int64_t xd[3] = {-1, -1, -1};
    assert_int_equal(minfer_builder_add_input(t.b, "x", MINFER_DTYPE_FLOAT, xd, 3, NULL),
                     MINFER_OK);
    snprintf(t.names[t.n_in], sizeof t.names[0], "x");
    t.inputs[t.n_in++] = random_tensor(&t, INTS(5, 2, 16));
    /* a = Reshape(x, [-1, Shape(x)[2]]): [-1, -1] when the session is
     * created, [10, 16] once the plan knows x. */
    static const int64_t minus1 = -1, two = 2, three = 3;
    const int64_t *vals[3] = {&minus1, &two, &three};
    const char *cn[3] = {"m1", "s2", "s3"};
    for (int i = 0; i < 3; i++) {
        minfer_tensor *c = NULL;
        assert_int_equal(minfer_tensor_create(MINFER_DTYPE_INT64, INTS(1), &c), MINFER_OK);
        ((int64_t *)minfer_tensor_data(c))[0] = *vals[i];
        assert_int_equal(minfer_builder_add_initializer(t.b, cn[i], c), MINFER_OK);
        minfer_tensor_free(c);
    }
    tc_node(&t, "Shape", NULL, NAMES("x"), "sh");
    tc_node(&t, "Slice", NULL, NAMES("sh", "s2", "s3"), "kd");
    size_t n = tc_node(&t, "Concat", NULL, NAMES("m1", "kd"), "shp");
    minfer_builder_set_attr_int(t.b, n, "axis", 0);
    tc_node(&t, "Reshape", NULL, NAMES("x", "shp"), "a");
    tc_const(&t, "b", INTS(12, 16), NULL);
    tc_const(&t, "c", INTS(12), NULL);
    n = tc_node(&t, "Gemm", NULL, NAMES("a", "b", "c"), "y");
    minfer_builder_set_attr_int(t.b, n, "transB", 1);
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    /* Placement: the Gemm on onednn (the shape nodes go to cpu). */
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, "onednn,cpu"), MINFER_OK);
    assert_int_equal(minfer_options_set_optimization_level(opt, 0), MINFER_OK);
    assert_int_equal(minfer_session_create_from_builder(t.b, opt, &s), MINFER_OK);
    int found = 0;
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        if (!strcmp(p.op_type, "Gemm")) {
            assert_string_equal(p.provider, "onednn");
            found = 1;
        }
    }
    assert_true(found);
    const char *names[1] = {"x"};
    const minfer_tensor *ins[1] = {t.inputs[0]};
    minfer_tensor *got = NULL, *want = NULL;
    assert_int_equal(minfer_session_run(s, names, ins, 1, NULL, &got, 1), MINFER_OK);
    minfer_session_free(s);
    assert_int_equal(minfer_options_set_providers_str(opt, "cpu"), MINFER_OK);
    assert_int_equal(minfer_session_create_from_builder(t.b, opt, &s), MINFER_OK);
    assert_int_equal(minfer_session_run(s, names, ins, 1, NULL, &want, 1), MINFER_OK);
    minfer_session_free(s);
    minfer_options_free(opt);
    assert_int_equal(minfer_tensor_numel(got), 10 * 12);
    assert_int_equal(minfer_tensor_numel(want), 10 * 12);
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (fabsf(g[i] - w[i]) > 1e-4f + 1e-3f * fabsf(w[i]))
            fail_msg("element %lld: onednn %g, cpu %g", (long long)i, (double)g[i], (double)w[i]);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    minfer_tensor_free(t.inputs[0]);
    minfer_builder_free(t.b);
}

/* minfer:Attention: Q [..., Sq, D], KT [..., D, Sk], V [..., Sk, Dv]. */
static void attention_case(const int64_t *q, size_t rq, const int64_t *kt, size_t rk,
                           const int64_t *v, size_t rv, const int64_t *m, size_t rm, float scale) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "q", q, rq);
    tc_input(&t, "kt", kt, rk);
    tc_input(&t, "v", v, rv);
    if (m)
        tc_input(&t, "m", m, rm);
    size_t n = tc_node(&t, "Attention", "minfer", (const char *const[]){"q", "kt", "v", "m"},
                       m ? 4 : 3, "y");
    minfer_builder_set_attr_float(t.b, n, "scale", scale);
    tc_check(&t);
}

static void test_attention(void **state) {
    (void)state;
    /* Without a mask: 4 heads, and a single head of rank 2. */
    attention_case(INTS(4, 10, 8), INTS(4, 8, 12), INTS(4, 12, 6), NULL, 0, 0.35f);
    attention_case(INTS(7, 5), INTS(5, 9), INTS(9, 3), NULL, 0, 1.0f);
    /* Broadcast leading axes: KT and V shared by the heads of Q. */
    attention_case(INTS(2, 3, 6, 8), INTS(2, 1, 8, 6), INTS(1, 1, 6, 4), NULL, 0, 0.5f);
}

static void test_attention_mask(void **state) {
    (void)state;
    /* A full mask, a key-padding mask [B, 1, 1, Sk], and a [Sq, Sk] one. */
    attention_case(INTS(2, 2, 5, 8), INTS(2, 2, 8, 7), INTS(2, 2, 7, 4), INTS(2, 2, 5, 7),
                   0.25f);
    attention_case(INTS(2, 2, 5, 8), INTS(2, 2, 8, 7), INTS(2, 2, 7, 4), INTS(2, 1, 1, 7),
                   0.25f);
    attention_case(INTS(3, 6, 8), INTS(3, 8, 6), INTS(3, 6, 8), INTS(6, 6), 1.0f);
}

/* ---- Pools ------------------------------------------------------------------ */

static void test_pools(void **state) {
    (void)state;
    static const char *const ops[] = {"MaxPool", "AveragePool", "AveragePool"};
    for (int k = 0; k < 3; k++)
        for (int ceil = 0; ceil < 2; ceil++) {
            tcase t;
            tc_init(&t, 13);
            tc_input(&t, "x", INTS(1, 8, 11, 11));
            size_t n = tc_node(&t, ops[k], NULL, NAMES("x"), "y");
            minfer_builder_set_attr_ints(t.b, n, "kernel_shape", INTS(3, 3));
            minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
            minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 0, 0));
            minfer_builder_set_attr_int(t.b, n, "ceil_mode", ceil);
            if (k == 2 && !ceil)
                minfer_builder_set_attr_int(t.b, n, "count_include_pad", 1);
            tc_check(&t);
        }
    static const char *const globals[] = {"GlobalAveragePool", "GlobalMaxPool"};
    for (int k = 0; k < 2; k++) {
        tcase t;
        tc_init(&t, 13);
        tc_input(&t, "x", INTS(2, 16, 7, 7));
        tc_node(&t, globals[k], NULL, NAMES("x"), "y");
        tc_check(&t);
    }
}

/* GoogLeNet's inception5a pool at 64x64 images (issue 17): a 3x3 MaxPool,
 * stride 1, pads 1, ceil_mode, over a 2x2 map, its window wider than the
 * input. */
static void test_pool_window_wider(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(2, 8, 2, 2));
    size_t n = tc_node(&t, "MaxPool", NULL, NAMES("x"), "y");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", INTS(3, 3));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    minfer_builder_set_attr_int(t.b, n, "ceil_mode", 1);
    tc_check(&t);
}

/* ---- Softmax, normalizations -------------------------------------------------- */

static void test_softmax(void **state) {
    (void)state;
    static const char *const ops[] = {"Softmax", "LogSoftmax"};
    for (int k = 0; k < 2; k++)
        for (int legacy = 0; legacy < 2; legacy++) {
            tcase t;
            tc_init(&t, legacy ? 11 : 13);
            tc_input(&t, "x", INTS(2, 3, 4, 5));
            size_t n = tc_node(&t, ops[k], NULL, NAMES("x"), "y");
            minfer_builder_set_attr_int(t.b, n, "axis", legacy ? 1 : -1);
            tc_check(&t);
        }
}

static void test_norms(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 15);
    tc_input(&t, "x", INTS(2, 6, 5, 5));
    tc_const(&t, "s", INTS(6), NULL);
    tc_const(&t, "b", INTS(6), NULL);
    tc_const(&t, "m", INTS(6), NULL);
    tc_const(&t, "v", INTS(6), (const float[]){0.5f, 1.0f, 1.5f, 2.0f, 0.25f, 3.0f});
    tc_node(&t, "BatchNormalization", NULL, NAMES("x", "s", "b", "m", "v"), "y");
    tc_check(&t);

    tc_init(&t, 17);
    tc_input(&t, "x", INTS(2, 7, 16));
    tc_const(&t, "s", INTS(16), NULL);
    tc_const(&t, "b", INTS(16), NULL);
    tc_node(&t, "LayerNormalization", NULL, NAMES("x", "s", "b"), "y");
    tc_check(&t);

    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 8, 5, 5));
    size_t n = tc_node(&t, "LRN", NULL, NAMES("x"), "y");
    minfer_builder_set_attr_int(t.b, n, "size", 3);
    tc_check(&t);
}

/* ---- Elementwise ---------------------------------------------------------------- */

static void test_unary(void **state) {
    (void)state;
    static const char *const ops[] = {"Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh",
                                      "HardSigmoid", "HardSwish", "Exp", "Abs"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        tcase t;
        tc_init(&t, 14);
        tc_input(&t, "x", INTS(2, 3, 4, 5));
        tc_node(&t, ops[k], NULL, NAMES("x"), "y");
        tc_check(&t);
    }
    /* Sqrt of |x| + 0.1 (Log is left to the CPU provider); Clip with
     * constant bounds. */
    static const char *const pos[] = {"Sqrt"};
    for (int k = 0; k < 1; k++) {
        tcase t;
        tc_init(&t, 13);
        tc_input(&t, "x", INTS(3, 7));
        tc_const(&t, "e", INTS(1), (const float[]){0.1f});
        tc_node(&t, "Abs", NULL, NAMES("x"), "ax");
        tc_node(&t, "Add", NULL, NAMES("ax", "e"), "p");
        tc_node(&t, pos[k], NULL, NAMES("p"), "y");
        tc_check(&t);
    }
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(3, 7));
    tc_const(&t, "lo", NULL, 0, (const float[]){-0.25f});
    tc_const(&t, "hi", NULL, 0, (const float[]){0.5f});
    tc_node(&t, "Clip", NULL, NAMES("x", "lo", "hi"), "y");
    tc_check(&t);
}

static void binary_case(const char *op, const int64_t *a, size_t ra, const int64_t *b, size_t rb) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", a, ra);
    tc_input(&t, "b", b, rb);
    tc_node(&t, op, NULL, NAMES("a", "b"), "y");
    tc_check(&t);
}

static void test_binary_broadcast(void **state) {
    (void)state;
    binary_case("Add", INTS(2, 3, 4, 5), INTS(5));
    binary_case("Mul", INTS(2, 3, 4, 5), INTS(3, 1, 1));
    binary_case("Sub", INTS(2, 3, 4, 5), INTS(1, 3, 1, 1));
    binary_case("Div", INTS(2, 3, 4, 5), INTS(2, 3, 4, 5));
    binary_case("Add", INTS(4, 5), INTS(2, 3, 4, 5));
    /* Max and Min go to the CPU provider (oneDNN's do not propagate NaN):
     * test_nan_order runs them on onednn,cpu. */
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", INTS(2, 3, 4));
    tc_input(&t, "b", INTS(2, 3, 4));
    tc_input(&t, "c", INTS(2, 3, 4));
    tc_node(&t, "Sum", NULL, NAMES("a", "b", "c"), "y");
    tc_check(&t);
}

static void test_concat(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", INTS(1, 3, 4, 4));
    tc_input(&t, "b", INTS(1, 5, 4, 4));
    tc_input(&t, "c", INTS(1, 2, 4, 4));
    size_t n = tc_node(&t, "Concat", NULL, NAMES("a", "b", "c"), "y");
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    tc_check(&t);
    tc_init(&t, 13);
    tc_input(&t, "a", INTS(2, 3));
    tc_input(&t, "b", INTS(2, 4));
    n = tc_node(&t, "Concat", NULL, NAMES("a", "b"), "y");
    minfer_builder_set_attr_int(t.b, n, "axis", -1);
    tc_check(&t);
}

/* DenseNet's Concat (issue 17): many inputs, most of them a Conv output that
 * oneDNN keeps in a layout of its own. Bringing them all to plain takes a reorder
 * step each, more than a node holds; the provider takes oneDNN's reference
 * concat instead of failing the session at prepare. */
static void test_concat_many_blocked(void **state) {
    (void)state;
    enum { N = 12 };
    tcase t;
    char w[N][8], c[N][8];
    const char *cat[N];
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 8, 6, 5));
    /* The plain input first, as DenseNet's block input: inputs of mixed
     * layouts have no concat of oneDNN's but the reference one. */
    cat[0] = "x";
    for (int k = 1; k < N; k++) {
        snprintf(w[k], sizeof w[k], "w%d", k);
        snprintf(c[k], sizeof c[k], "c%d", k);
        tc_const(&t, w[k], INTS(8, 8, 3, 3), NULL);
        size_t n = tc_node(&t, "Conv", NULL, (const char *const[]){"x", w[k]}, 2, c[k]);
        minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
        cat[k] = c[k];
    }
    size_t n = tc_node(&t, "Concat", NULL, cat, N, "y");
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    tc_check(&t);
}

/* ---- Data movement (Transpose, Slice, reshapes) ---------------------------- */

/* An int64 1-D initializer. */
static void tc_ints(tcase *t, const char *name, const int64_t *v, size_t n) {
    minfer_tensor *c = NULL;
    int64_t dim = (int64_t)n;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_INT64, &dim, 1, &c), MINFER_OK);
    memcpy(minfer_tensor_data(c), v, n * sizeof *v);
    assert_int_equal(minfer_builder_add_initializer(t->b, name, c), MINFER_OK);
    minfer_tensor_free(c);
}

/* A 3x3 convolution from x [1, 3, 6, 5] to c [1, 16, 6, 5], whose output
 * oneDNN keeps in a layout of its own (channels-last): what follows reads
 * it through a reorder to plain first. */
static void conv_source(tcase *t) {
    tc_input(t, "x", INTS(1, 3, 6, 5));
    tc_const(t, "w", INTS(16, 3, 3, 3), NULL);
    size_t n = tc_node(t, "Conv", NULL, NAMES("x", "w"), "c");
    minfer_builder_set_attr_ints(t->b, n, "pads", INTS(1, 1, 1, 1));
}

static void test_transpose(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(2, 3, 4));
    size_t n = tc_node(&t, "Transpose", NULL, NAMES("x"), "y");
    minfer_builder_set_attr_ints(t.b, n, "perm", INTS(2, 0, 1));
    tc_check(&t);
    tc_init(&t, 13); /* default perm: reversed */
    tc_input(&t, "x", INTS(2, 3, 4, 5));
    tc_node(&t, "Transpose", NULL, NAMES("x"), "y");
    tc_check(&t);
    tc_init(&t, 13); /* only an axis of size 1 moves: a reshape, run in place */
    tc_input(&t, "x", INTS(1, 5, 6));
    tc_node(&t, "Relu", NULL, NAMES("x"), "r");
    n = tc_node(&t, "Transpose", NULL, NAMES("r"), "p");
    minfer_builder_set_attr_ints(t.b, n, "perm", INTS(1, 0, 2));
    tc_node(&t, "Relu", NULL, NAMES("p"), "y");
    tc_check(&t);
    tc_init(&t, 13); /* from a convolution's own layout */
    conv_source(&t);
    n = tc_node(&t, "Transpose", NULL, NAMES("c"), "y");
    minfer_builder_set_attr_ints(t.b, n, "perm", INTS(0, 2, 3, 1));
    tc_check(&t);
}

static void test_slice(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(4, 6, 8));
    tc_ints(&t, "st", (const int64_t[]){1, -5}, 2);
    tc_ints(&t, "en", (const int64_t[]){100, 7}, 2);
    tc_ints(&t, "ax", (const int64_t[]){0, 2}, 2);
    tc_ints(&t, "sp", (const int64_t[]){2, 3}, 2);
    tc_node(&t, "Slice", NULL, NAMES("x", "st", "en", "ax", "sp"), "y");
    tc_check(&t);
    tc_init(&t, 13); /* default axes and steps, from a convolution's layout */
    conv_source(&t);
    tc_ints(&t, "st", (const int64_t[]){0, 4, 1}, 3);
    tc_ints(&t, "en", (const int64_t[]){1, 12, 5}, 3);
    tc_node(&t, "Slice", NULL, NAMES("c", "st", "en"), "y");
    tc_check(&t);
    tc_init(&t, 13); /* an empty result */
    tc_input(&t, "x", INTS(4, 6));
    tc_ints(&t, "st", (const int64_t[]){2}, 1);
    tc_ints(&t, "en", (const int64_t[]){2}, 1);
    tc_node(&t, "Slice", NULL, NAMES("x", "st", "en"), "y");
    tc_check(&t);
    /* A negative step is left to the CPU provider. */
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(4, 6));
    tc_ints(&t, "st", (const int64_t[]){-1}, 1);
    tc_ints(&t, "en", (const int64_t[]){-100}, 1);
    tc_ints(&t, "ax", (const int64_t[]){1}, 1);
    tc_ints(&t, "sp", (const int64_t[]){-1}, 1);
    tc_node(&t, "Slice", NULL, NAMES("x", "st", "en", "ax", "sp"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, "onednn,cpu"), MINFER_OK);
    assert_int_equal(minfer_session_create_from_builder(t.b, opt, &s), MINFER_OK);
    minfer_node_placement p;
    assert_int_equal(minfer_session_node_placement(s, 0, &p), MINFER_OK);
    assert_string_equal(p.provider, "cpu");
    minfer_session_free(s);
    minfer_options_free(opt);
    minfer_tensor_free(t.inputs[0]);
    minfer_builder_free(t.b);
}

static void test_reshapes(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13); /* in place between two onednn nodes */
    tc_input(&t, "x", INTS(2, 3, 4));
    tc_ints(&t, "shp", (const int64_t[]){-1, 4}, 2);
    tc_node(&t, "Relu", NULL, NAMES("x"), "r");
    tc_node(&t, "Reshape", NULL, NAMES("r", "shp"), "q");
    tc_node(&t, "Relu", NULL, NAMES("q"), "y");
    tc_check(&t);
    tc_init(&t, 13); /* a second reader keeps the input: a copy */
    tc_input(&t, "x", INTS(2, 3, 4));
    tc_ints(&t, "shp", (const int64_t[]){2, 12}, 2);
    tc_node(&t, "Relu", NULL, NAMES("x"), "r");
    tc_node(&t, "Reshape", NULL, NAMES("r", "shp"), "q");
    tc_node(&t, "Relu", NULL, NAMES("r"), "r2");
    tc_ints(&t, "shp2", (const int64_t[]){2, 12}, 2);
    tc_node(&t, "Reshape", NULL, NAMES("r2", "shp2"), "q2");
    tc_node(&t, "Add", NULL, NAMES("q", "q2"), "y");
    tc_check(&t);
    /* From a convolution's layout: the elements in NCHW order. */
    static const char *const ops[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        tc_init(&t, 13);
        conv_source(&t);
        if (k == 0) {
            tc_ints(&t, "shp", (const int64_t[]){16, -1}, 2);
            tc_node(&t, "Reshape", NULL, NAMES("c", "shp"), "y");
        } else if (k == 1) {
            size_t n = tc_node(&t, "Flatten", NULL, NAMES("c"), "y");
            minfer_builder_set_attr_int(t.b, n, "axis", 2);
        } else {
            tc_ints(&t, "ax", (const int64_t[]){0}, 1);
            tc_node(&t, ops[k], NULL, NAMES("c", "ax"), "y");
        }
        tc_check(&t);
    }
}

/* ---- Conv over a channel Concat (optimizer: split into two convolutions) ---- */

/* Runs t's graph (output "y") on providers at an optimization level; says
 * whether a Concat node is left. */
static minfer_tensor *run_level(tcase *t, const char *providers, int level, int *has_concat) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *out = NULL;
    const char *names[MAX_IN];
    const minfer_tensor *ins[MAX_IN];
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, providers), MINFER_OK);
    assert_int_equal(minfer_options_set_optimization_level(opt, level), MINFER_OK);
    assert_int_equal(minfer_session_create_from_builder(t->b, opt, &s), MINFER_OK);
    minfer_options_free(opt);
    *has_concat = 0;
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        *has_concat |= !strcmp(p.op_type, "Concat");
    }
    for (size_t i = 0; i < t->n_in; i++) {
        names[i] = t->names[i];
        ins[i] = t->inputs[i];
    }
    assert_int_equal(minfer_session_run(s, names, ins, t->n_in, NULL, &out, 1), MINFER_OK);
    minfer_session_free(s);
    return out;
}

/* Concat(A, B) -> Conv [-> Relu]: at level 3 the Concat is gone (two
 * convolutions, the second accumulating onto the first) and onednn
 * agrees with the unoptimized graph on cpu; with a second reader of the
 * Concat it stays. */
static void split_case(int relu, int second_reader, const int64_t *k, int group) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", INTS(1, 3, 7, 6));
    tc_input(&t, "b", INTS(1, 5, 7, 6));
    tc_const(&t, "w", (const int64_t[]){4, 8 / group, k[0], k[1]}, 4, NULL);
    tc_const(&t, "bias", INTS(4), NULL);
    size_t n = tc_node(&t, "Concat", NULL, NAMES("a", "b"), "x");
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    n = tc_node(&t, "Conv", NULL, NAMES("x", "w", "bias"), relu || second_reader ? "c" : "y");
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(k[0] / 2, k[1] / 2, k[0] / 2, k[1] / 2));
    if (group > 1)
        minfer_builder_set_attr_int(t.b, n, "group", group);
    if (relu && !second_reader)
        tc_node(&t, "Relu", NULL, NAMES("c"), "y");
    if (second_reader) {
        tc_node(&t, "ReduceMean", NULL, NAMES("x"), "m");
        tc_node(&t, "Add", NULL, NAMES("c", "m"), "y");
    }
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    int concat_ref, concat_opt;
    minfer_tensor *want = run_level(&t, "cpu", 0, &concat_ref);
    minfer_tensor *got = run_level(&t, "onednn,cpu", 3, &concat_opt);
    minfer_tensor *got_cpu = run_level(&t, "cpu", 3, &concat_opt);
    assert_true(concat_ref);
    assert_int_equal(concat_opt, second_reader || group > 1);
    const float *w = minfer_tensor_data(want), *g = minfer_tensor_data(got),
                *c = minfer_tensor_data(got_cpu);
    assert_int_equal(minfer_tensor_numel(got), minfer_tensor_numel(want));
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (fabsf(g[i] - w[i]) > 1e-4f + 1e-3f * fabsf(w[i]) ||
            fabsf(c[i] - w[i]) > 1e-4f + 1e-3f * fabsf(w[i]))
            fail_msg("element %lld: onednn %g, cpu split %g, unsplit %g", (long long)i,
                     (double)g[i], (double)c[i], (double)w[i]);
    minfer_tensor_free(want);
    minfer_tensor_free(got);
    minfer_tensor_free(got_cpu);
    for (size_t i = 0; i < t.n_in; i++)
        minfer_tensor_free(t.inputs[i]);
    minfer_builder_free(t.b);
}

static void test_concat_conv_split(void **state) {
    (void)state;
    split_case(1, 0, (const int64_t[]){1, 1}, 1);
    split_case(0, 0, (const int64_t[]){3, 3}, 1);
    split_case(1, 1, (const int64_t[]){1, 1}, 1); /* the Concat has a second reader */
    split_case(1, 0, (const int64_t[]){3, 3}, 2); /* grouped: not split */
}

/* At 2 threads a large node also has a one-thread variant, and runs pick
 * one by measured time (the first runs alternate): every run must agree
 * with the CPU provider, whichever variant it took. */
static void test_thread_variants(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 32, 28, 28));
    tc_const(&t, "w", INTS(32, 32, 3, 3), NULL);
    tc_const(&t, "bias", INTS(32), NULL);
    size_t n = tc_node(&t, "Conv", NULL, NAMES("x", "w", "bias"), "c");
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    tc_ints(&t, "shp", (const int64_t[]){32, 784}, 2);
    tc_node(&t, "Reshape", NULL, NAMES("c", "shp"), "r");
    tc_const(&t, "m", INTS(784, 256), NULL);
    tc_node(&t, "MatMul", NULL, NAMES("r", "m"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *want = run_on(&t, "cpu", 0);
    assert_non_null(want);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    const char *names[1] = {"x"};
    const minfer_tensor *ins[1] = {t.inputs[0]};
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, "onednn"), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, 2), MINFER_OK);
    assert_int_equal(minfer_session_create_from_builder(t.b, opt, &s), MINFER_OK);
    minfer_options_free(opt);
    const float *w = minfer_tensor_data(want);
    for (int run = 0; run < 20; run++) {
        minfer_tensor *got = NULL;
        assert_int_equal(minfer_session_run(s, names, ins, 1, NULL, &got, 1), MINFER_OK);
        assert_int_equal(minfer_tensor_numel(got), minfer_tensor_numel(want));
        const float *g = minfer_tensor_data(got);
        for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
            if (fabsf(g[i] - w[i]) > 1e-4f + 1e-3f * fabsf(w[i]))
                fail_msg("run %d, element %lld: onednn %g, cpu %g", run, (long long)i,
                         (double)g[i], (double)w[i]);
        minfer_tensor_free(got);
    }
    minfer_session_free(s);
    minfer_tensor_free(want);
    minfer_tensor_free(t.inputs[0]);
    minfer_builder_free(t.b);
}

/* ---- Split forms ------------------------------------------------------------ */

/* Adds a Conv name: in -> out (c_out x c_in x 3 x 3 weights, pads 1). */
static size_t conv3(tcase *t, const char *in, const char *w, int64_t c_out, int64_t c_in,
                    const char *out) {
    tc_const(t, w, INTS(c_out, c_in, 3, 3), NULL);
    size_t n = tc_node(t, "Conv", NULL, (const char *const[]){in, w}, 2, out);
    minfer_builder_set_attr_ints(t->b, n, "pads", INTS(1, 1, 1, 1));
    return n;
}

/* Checks the graph (tc_check) and that split=on ran at least want nodes in
 * pieces. */
static void check_split(tcase *t, int want) {
    split_nodes = split_channels = 0;
    tc_check(t);
#ifdef ONEDNN_OWN_DOMAIN
    if (split_nodes < want)
        fail_msg("%d nodes ran in pieces, %d expected", split_nodes, want);
#else
    (void)want; /* every output plain (NCHW): fewer forms apply */
#endif
}

/* Each form of split.c against the CPU provider: convolutions by output
 * rows (a plain NCHW input read as a strided slice, a channels-last one
 * as a dense one; strides, dilations and the paddings the pieces inherit
 * at the edges), by images, with a residual Z, by output channels (with Z
 * the input itself, in place); pools after a convolution
 * (ceil_mode, padding excluded from the average), then a Concat of two
 * (run as copies, not pieces); MatMul and Gemm by rows, a one-row Gemm by output columns;
 * LayerNormalization, elementwise ops and attention along their first axis
 * of extent > 1, and not a normalization across it. */
static void test_split_forms(void **state) {
    (void)state;
    tcase t;
    size_t n;
    tc_init(&t, 13); /* rows, plain input, stride 2 */
    tc_input(&t, "x", INTS(1, 16, 20, 20));
    n = conv3(&t, "x", "w", 32, 16, "y");
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    check_split(&t, 1);
    tc_init(&t, 13); /* images */
    tc_input(&t, "x", INTS(3, 8, 10, 10));
    conv3(&t, "x", "w", 8, 8, "y");
    check_split(&t, 1);
    tc_init(&t, 13); /* rows of a channels-last input, dilation 2, stride 2 */
    tc_input(&t, "x", INTS(1, 8, 17, 17));
    conv3(&t, "x", "w1", 16, 8, "c");
    n = conv3(&t, "c", "w2", 16, 16, "y");
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    minfer_builder_set_attr_ints(t.b, n, "dilations", INTS(2, 2));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(2, 1, 0, 2));
    check_split(&t, 2);
    for (int64_t batch = 1; batch <= 2; batch++) { /* residual Z from a convolution */
        tc_init(&t, 13);
        tc_input(&t, "x", INTS(batch, 8, 12, 12));
        conv3(&t, "x", "wz", 8, 8, "z");
        tc_const(&t, "w", INTS(8, 8, 3, 3), NULL);
        tc_const(&t, "b", INTS(8), NULL);
        n = tc_node(&t, "FusedConv", "minfer", NAMES("x", "w", "b", "z"), "y");
        minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
        minfer_builder_set_attr_string(t.b, n, "activation", "Relu");
        check_split(&t, 2);
    }
    for (int z = 0; z < 2; z++) { /* 7 rows in 3 pieces cut unevenly: channels */
        tc_init(&t, 13);
        tc_input(&t, "x", INTS(1, 16, 7, 7));
        conv3(&t, "x", "w1", 48, 16, "c");
        if (z) {
            tc_const(&t, "w", INTS(48, 48, 3, 3), NULL);
            tc_const(&t, "b", INTS(48), NULL);
            n = tc_node(&t, "FusedConv", "minfer", NAMES("c", "w", "b", "c"), "y");
            minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
        } else {
            conv3(&t, "c", "w2", 48, 48, "y");
        }
        check_split(&t, 2);
#ifdef ONEDNN_OWN_DOMAIN
        if (split_channels < 1)
            fail_msg("no node ran in pieces by output channels");
#endif
    }
    static const char *const pools[2] = {"MaxPool", "AveragePool"};
    for (int k = 0; k < 2; k++) { /* pools on channels-last rows */
        tc_init(&t, 13);
        tc_input(&t, "x", INTS(1, 8, 15, 15));
        conv3(&t, "x", "w", 16, 8, "c");
        n = tc_node(&t, pools[k], NULL, NAMES("c"), "y");
        minfer_builder_set_attr_ints(t.b, n, "kernel_shape", INTS(3, 3));
        minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
        minfer_builder_set_attr_ints(t.b, n, "pads", INTS(k, k, 0, 0));
        minfer_builder_set_attr_int(t.b, n, "ceil_mode", 1 - k);
        check_split(&t, 2);
    }
    for (int64_t batch = 1; batch <= 2; batch++) { /* Concat of two convolutions */
        tc_init(&t, 13);
        tc_input(&t, "x", INTS(batch, 8, 9, 9));
        conv3(&t, "x", "w1", 16, 8, "a");
        conv3(&t, "x", "w2", 32, 8, "b");
        n = tc_node(&t, "Concat", NULL, NAMES("a", "b"), "y");
        minfer_builder_set_attr_int(t.b, n, "axis", 1);
        check_split(&t, 2); /* the Concat runs as copies (test_onednn_concat.c) */
    }
    tc_init(&t, 13); /* MatMul: A's leading axes fold into rows */
    tc_input(&t, "a", INTS(2, 12, 32));
    tc_const(&t, "w", INTS(32, 24), NULL);
    tc_node(&t, "MatMul", NULL, NAMES("a", "w"), "y");
    check_split(&t, 1);
    tc_init(&t, 13); /* Gemm with transB and a row bias */
    tc_input(&t, "a", INTS(30, 16));
    tc_const(&t, "w", INTS(20, 16), NULL);
    tc_const(&t, "c", INTS(20), NULL);
    n = tc_node(&t, "Gemm", NULL, NAMES("a", "w", "c"), "y");
    minfer_builder_set_attr_int(t.b, n, "transB", 1);
    check_split(&t, 1);
    tc_init(&t, 17); /* LayerNormalization over the last axis of [1, S, D] */
    tc_input(&t, "x", INTS(1, 40, 64));
    tc_const(&t, "s", INTS(64), NULL);
    tc_const(&t, "b", INTS(64), NULL);
    n = tc_node(&t, "LayerNormalization", NULL, NAMES("x", "s", "b"), "y");
    minfer_builder_set_attr_int(t.b, n, "axis", -1);
    check_split(&t, 1);
    tc_init(&t, 13); /* Add with a broadcast operand, then Sigmoid, on [S, 1, D] */
    tc_input(&t, "a", INTS(6, 1, 32));
    tc_const(&t, "c", INTS(32), NULL);
    tc_node(&t, "Add", NULL, NAMES("a", "c"), "s");
    tc_node(&t, "Sigmoid", NULL, NAMES("s"), "y");
    check_split(&t, 2);
    tc_init(&t, 11); /* normalizing across the first axis of extent > 1: not cut */
    tc_input(&t, "x", INTS(1, 40, 16));
    n = tc_node(&t, "Softmax", NULL, NAMES("x"), "y"); /* opset 11: over [40 x 16] */
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    check_split(&t, 0);
    if (split_nodes)
        fail_msg("a Softmax was cut across its own axes");
    tc_init(&t, 13); /* attention's heads */
    tc_input(&t, "q", INTS(4, 10, 8));
    tc_input(&t, "kt", INTS(4, 8, 12));
    tc_input(&t, "v", INTS(4, 12, 6));
    tc_node(&t, "Attention", "minfer", NAMES("q", "kt", "v"), "y");
    check_split(&t, 1);
    for (int c_rank = 0; c_rank <= 2; c_rank++) { /* one row: by output columns */
        tc_init(&t, 13);
        tc_input(&t, "a", INTS(1, 40));
        tc_const(&t, "w", INTS(256, 40), NULL);
        if (c_rank == 1)
            tc_const(&t, "c", INTS(256), NULL);
        else if (c_rank == 2)
            tc_const(&t, "c", INTS(1, 256), NULL);
        n = tc_node(&t, "Gemm", NULL, (const char *const[]){"a", "w", "c"}, c_rank ? 3 : 2,
                    "y");
        minfer_builder_set_attr_int(t.b, n, "transB", 1);
        minfer_builder_set_attr_float(t.b, n, "alpha", 0.5f);
        check_split(&t, 1);
    }
}

/* The oneDNN domain addresses host memory: a graph input is read in place,
 * not copied in (no boundary copy), and a node that may write its output
 * over its input (Relu) must not write over the caller's tensor. */
static void test_inputs_in_place(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(2, 64, 32));
    tc_node(&t, "Relu", NULL, NAMES("x"), "r");
    tc_const(&t, "w", INTS(32, 16), NULL);
    tc_node(&t, "MatMul", NULL, NAMES("r", "w"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *want = run_on(&t, "cpu", 0);
    assert_non_null(want);
    minfer_tensor *copy = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, minfer_tensor_dims(t.inputs[0]),
                                          minfer_tensor_rank(t.inputs[0]), &copy),
                     MINFER_OK);
    memcpy(minfer_tensor_data(copy), minfer_tensor_data(t.inputs[0]),
           minfer_tensor_nbytes(copy));
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    const char *names[1] = {"x"};
    const minfer_tensor *ins[1] = {t.inputs[0]};
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, "onednn"), MINFER_OK);
    assert_int_equal(minfer_session_create_from_builder(t.b, opt, &s), MINFER_OK);
    minfer_options_free(opt);
    for (int run = 0; run < 3; run++) {
        minfer_tensor *got = NULL;
        assert_int_equal(minfer_session_run(s, names, ins, 1, NULL, &got, 1), MINFER_OK);
        compare(got, want, "onednn");
        minfer_tensor_free(got);
        assert_memory_equal(minfer_tensor_data(t.inputs[0]), minfer_tensor_data(copy),
                            minfer_tensor_nbytes(copy));
    }
    minfer_memory_info mi;
    assert_int_equal(minfer_session_memory_info(s, &mi), MINFER_OK);
#ifdef ONEDNN_OWN_DOMAIN
    assert_int_equal(mi.copies_per_run, 1); /* only y, out to the host */
#else
    assert_int_equal(mi.copies_per_run, 0); /* host memory: no domain */
#endif
    minfer_session_free(s);
    minfer_tensor_free(copy);
    minfer_tensor_free(want);
    minfer_tensor_free(t.inputs[0]);
    minfer_builder_free(t.b);
}

/* A bad split option fails the provider's init with the values it takes;
 * with the CPU provider after it, the session goes on without oneDNN. */
static void test_split_option(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(2, 3));
    tc_node(&t, "Relu", NULL, NAMES("x"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    static const char *const lists[2] = {"onednn", "onednn,cpu"};
    for (int k = 0; k < 2; k++) {
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        assert_int_equal(minfer_options_create(&opt), MINFER_OK);
        assert_int_equal(minfer_options_set_providers_str(opt, lists[k]), MINFER_OK);
        assert_int_equal(minfer_options_set_provider_options(opt, "onednn", "split=maybe"),
                         MINFER_OK);
        minfer_status st = minfer_session_create_from_builder(t.b, opt, &s);
        minfer_options_free(opt);
        if (k == 0) {
            assert_int_not_equal(st, MINFER_OK);
            assert_non_null(strstr(minfer_last_error(), "split=auto|on|off"));
        } else {
            assert_int_equal(st, MINFER_OK);
            minfer_node_placement p;
            assert_int_equal(minfer_session_node_placement(s, 0, &p), MINFER_OK);
            assert_string_equal(p.provider, "cpu");
            minfer_session_free(s);
        }
    }
    minfer_tensor_free(t.inputs[0]);
    minfer_builder_free(t.b);
}

/* A node onednn cannot take is declined, with the CPU provider taking it. */
static void test_declines(void **state) {
    (void)state;
    minfer_graph_builder *b = NULL;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_builder_create(13, &b), MINFER_OK);
    minfer_builder_add_input(b, "x", MINFER_DTYPE_DOUBLE, INTS(2, 3), NULL);
    minfer_builder_add_node(b, "Relu", NULL, "r", NAMES("x"), (const char *const[]){"y"}, 1,
                            NULL);
    minfer_builder_add_output(b, "y");
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, "onednn,cpu"), MINFER_OK);
    assert_int_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_OK);
    minfer_node_placement p;
    assert_int_equal(minfer_session_node_placement(s, 0, &p), MINFER_OK);
    assert_string_equal(p.provider, "cpu");
    minfer_session_free(s);
    minfer_options_free(opt);
    minfer_builder_free(b);
}

/* Output "y" on onednn with split=on at threads threads against want;
 * returns the nodes split by output channels. */
static int channel_pieces_at(tcase *t, const minfer_tensor *want, int threads) {
    char what[64];
    split_nodes = split_channels = 0;
    minfer_tensor *got = run_with(t, "onednn", 1, threads, 1);
    if (!got)
        fail_msg("onednn with split=on at %d threads refused the graph: %s", threads,
                 minfer_last_error());
    snprintf(what, sizeof what, "onednn split=on, %d threads", threads);
    compare(got, want, what);
    minfer_tensor_free(got);
    return split_channels;
}

/* Weight-bound convolutions (weights outnumbering the elements read and
 * written: the late layers of a ResNet) split by output channels even
 * where their rows cut evenly (6 rows in 3 pieces), in pieces of whole
 * 16-channel blocks that need not be equal (80 channels in 3 pieces: 16,
 * 32, 32), of 8-channel units where M has no 16-blocks (72), at any thread
 * count (5: 16 each; 16: as many 16-channel pieces as there are, 5), with
 * a bias, with a residual Z (the input itself), and at batch 2. Each
 * against the CPU provider, and each must have run in channel pieces. */
static void test_split_weight_bound(void **state) {
    (void)state;
    static const struct {
        int64_t batch, c_in, m, rows;
        int z, threads[3];
    } cases[] = {
        {1, 64, 80, 6, 0, {3, 5, 16}},
        {1, 72, 72, 6, 0, {3, 2, 4}},
        {1, 64, 64, 4, 1, {3, 2, 16}},
        {2, 64, 64, 3, 0, {3, 2, 4}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tcase t;
        int64_t b = cases[k].batch, m = cases[k].m, r = cases[k].rows;
        tc_init(&t, 13);
        tc_input(&t, "x", INTS(b, 8, r, r));
        /* A small first convolution: the second reads X channels-last. */
        conv3(&t, "x", "w1", cases[k].c_in, 8, "c");
        tc_const(&t, "w", INTS(m, cases[k].c_in, 3, 3), NULL);
        tc_const(&t, "bias", INTS(m), NULL);
        size_t n;
        if (cases[k].z) {
            n = tc_node(&t, "FusedConv", "minfer", NAMES("c", "w", "bias", "c"), "y");
            minfer_builder_set_attr_string(t.b, n, "activation", "Relu");
        } else {
            n = tc_node(&t, "Conv", NULL, NAMES("c", "w", "bias"), "y");
        }
        minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
        assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
        minfer_tensor *want = run_on(&t, "cpu", 0);
        assert_non_null(want);
        for (int i = 0; i < 3; i++) {
            int ch = channel_pieces_at(&t, want, cases[k].threads[i]);
#ifdef ONEDNN_OWN_DOMAIN
            if (ch < 1)
                fail_msg("case %zu, %d threads: the weight-bound convolution did not run in "
                         "channel pieces", k, cases[k].threads[i]);
#else
            (void)ch; /* every output plain (NCHW): no channel pieces */
#endif
        }
        minfer_tensor_free(want);
        minfer_tensor_free(t.inputs[0]);
        minfer_builder_free(t.b);
    }
}

/* Nodes the oneDNN provider built an OpenMP variant for (no split form). */
static int omp_variants;

static void count_omp_variants(void *user, minfer_log_level level, const char *message) {
    (void)user;
    (void)level;
    omp_variants += strstr(message, "has no split form: also built for") != NULL;
}

/* A ConvTranspose (no split form) after a convolution, as in a UNet's
 * decoder: with split forms on (the default) at 2 and 3 threads it also
 * gets a variant on the session's OpenMP threads, and runs pick one by
 * measured time (the first ones alternate); its input arrives
 * channels-last, the layout it keeps. Every run must agree with the CPU
 * provider, whichever variant it took. */
static void test_conv_transpose_threads(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 8, 32, 32));
    conv3(&t, "x", "w1", 32, 8, "c");
    tc_const(&t, "w", INTS(32, 16, 2, 2), NULL);
    tc_const(&t, "bias", INTS(16), NULL);
    size_t n = tc_node(&t, "ConvTranspose", NULL, NAMES("c", "w", "bias"), "y");
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *want = run_on(&t, "cpu", 0);
    assert_non_null(want);
    const char *names[1] = {"x"};
    const minfer_tensor *ins[1] = {t.inputs[0]};
    for (int threads = 2; threads <= 3; threads++) {
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        assert_int_equal(minfer_options_create(&opt), MINFER_OK);
        assert_int_equal(minfer_options_set_providers_str(opt, "onednn"), MINFER_OK);
        assert_int_equal(minfer_options_set_threads(opt, threads), MINFER_OK);
        assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_VERBOSE), MINFER_OK);
        assert_int_equal(minfer_options_set_log_callback(opt, count_omp_variants, NULL),
                         MINFER_OK);
        omp_variants = 0;
        assert_int_equal(minfer_session_create_from_builder(t.b, opt, &s), MINFER_OK);
        minfer_options_free(opt);
        if (omp_variants != 1)
            fail_msg("%d threads: %d nodes with an OpenMP variant, 1 expected", threads,
                     omp_variants);
        for (int run = 0; run < 12; run++) {
            minfer_tensor *got = NULL;
            assert_int_equal(minfer_session_run(s, names, ins, 1, NULL, &got, 1), MINFER_OK);
            compare(got, want, "onednn ConvTranspose");
            minfer_tensor_free(got);
        }
        minfer_session_free(s);
    }
    minfer_tensor_free(want);
    minfer_tensor_free(t.inputs[0]);
    minfer_builder_free(t.b);
}

/* ConvTransposes built as a matrix product (nodes counted from the
 * provider's verbose log). */
static int as_product;

static void count_products(void *user, minfer_log_level level, const char *message) {
    (void)user;
    (void)level;
    as_product += strstr(message, "(ConvTranspose) runs as a matrix product") != NULL;
}

/* ConvTransposes whose windows tile the output (strides equal to the
 * kernel, no padding): built as a matrix product and a reorder. 1-D, 2-D
 * with an uneven kernel (2x3) and batch 2, 3-D, with and without a bias,
 * their input a graph input (plain, reordered to channels-last) or a
 * convolution's output (channels-last); each against the CPU provider
 * (at 1 and 2
 * threads, and 3 with split=on), and each must have taken
 * the product. Overlapping windows (kernel 3, stride 2) stay a
 * deconvolution. */
static void test_conv_transpose_as_product(void **state) {
    (void)state;
    static const struct {
        int64_t x[5], w[5];
        int rank, bias, after_conv, product;
    } cases[] = {
        {{1, 6, 9}, {6, 5, 2}, 3, 1, 0, 1},
        {{2, 8, 5, 7}, {8, 12, 2, 3}, 4, 0, 0, 1},
        {{1, 8, 6, 6}, {16, 16, 2, 2}, 4, 1, 1, 1},
        {{1, 4, 3, 4, 5}, {4, 3, 2, 2, 2}, 5, 1, 0, 1},
        {{1, 8, 6, 6}, {8, 4, 3, 3}, 4, 1, 0, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tcase t;
        int r = cases[k].rank, nsp = r - 2;
        int64_t strides[3];
        tc_init(&t, 13);
        tc_input(&t, "x", cases[k].x, (size_t)r);
        const char *in = "x";
        if (cases[k].after_conv) {
            conv3(&t, "x", "wc", cases[k].w[0], cases[k].x[1], "c");
            in = "c";
        }
        tc_const(&t, "w", cases[k].w, (size_t)r, NULL);
        tc_const(&t, "bias", INTS(cases[k].w[1]), NULL);
        const char *ins[3] = {in, "w", "bias"};
        size_t n = tc_node(&t, "ConvTranspose", NULL, ins, cases[k].bias ? 3 : 2, "y");
        for (int i = 0; i < nsp; i++)
            strides[i] = cases[k].product ? cases[k].w[2 + i] : 2;
        minfer_builder_set_attr_ints(t.b, n, "strides", strides, (size_t)nsp);
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        minfer_tensor *got = NULL;
        assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
        minfer_tensor *want = run_on(&t, "cpu", 0);
        assert_non_null(want);
        assert_int_equal(minfer_options_create(&opt), MINFER_OK);
        assert_int_equal(minfer_options_set_providers_str(opt, "onednn"), MINFER_OK);
        assert_int_equal(minfer_options_set_threads(opt, 1), MINFER_OK);
        assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_VERBOSE), MINFER_OK);
        assert_int_equal(minfer_options_set_log_callback(opt, count_products, NULL), MINFER_OK);
        as_product = 0;
        assert_int_equal(minfer_session_create_from_builder(t.b, opt, &s), MINFER_OK);
        minfer_options_free(opt);
        if (as_product != cases[k].product)
            fail_msg("case %zu: %d ConvTransposes as a product, %d expected", k, as_product,
                     cases[k].product);
        const char *names[1] = {"x"};
        const minfer_tensor *xs[1] = {t.inputs[0]};
        assert_int_equal(minfer_session_run(s, names, xs, 1, NULL, &got, 1), MINFER_OK);
        compare(got, want, "onednn 1 thread");
        minfer_tensor_free(got);
        minfer_session_free(s);
        for (int threads = 2; threads <= 3; threads++) {
            got = run_with(&t, "onednn", 1, threads, threads == 3);
            assert_non_null(got);
            compare(got, want, threads == 3 ? "onednn split=on" : "onednn 2 threads");
            minfer_tensor_free(got);
        }
        minfer_tensor_free(want);
        minfer_tensor_free(t.inputs[0]);
        minfer_builder_free(t.b);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_basic),
        cmocka_unit_test(test_conv_groups_strides_dilations),
        cmocka_unit_test(test_conv_depthwise),
        cmocka_unit_test(test_conv_stem),
        cmocka_unit_test(test_conv_auto_pad),
        cmocka_unit_test(test_conv_1d_3d),
        cmocka_unit_test(test_conv_chain),
        cmocka_unit_test(test_fused_conv),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_matmul_broadcast),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_fused_gemm_matmul),
        cmocka_unit_test(test_matmul_collapsed),
        cmocka_unit_test(test_gemm_dynamic),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_attention_mask),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_pool_window_wider),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_norms),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_binary_broadcast),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_concat_many_blocked),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_reshapes),
        cmocka_unit_test(test_concat_conv_split),
        cmocka_unit_test(test_thread_variants),
        cmocka_unit_test(test_split_forms),
        cmocka_unit_test(test_split_weight_bound),
        cmocka_unit_test(test_conv_transpose_threads),
        cmocka_unit_test(test_conv_transpose_as_product),
        cmocka_unit_test(test_inputs_in_place),
        cmocka_unit_test(test_split_option),
        cmocka_unit_test(test_declines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
