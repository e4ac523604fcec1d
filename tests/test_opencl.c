/*
 * The OpenCL provider against the CPU provider (the oracle), on small graphs
 * built with the builder API. Each graph runs once with providers {"opencl"}
 * (every node must be placed there) and once with {"cpu"} on the same
 * random inputs; outputs must agree within |a - b| <= 1e-4 + 1e-3 |b|.
 * Shapes are chosen to hit the kernels' edges: partial register tiles,
 * padding, strides, dilations, groups, 1-D and 3-D windows, broadcasting,
 * batched MatMul. Also: device selection through the provider option, a
 * graph split between opencl and cpu (boundary copies both ways), and
 * Gather with indices out of range (the run fails naming the node and the
 * index; the next run works).
 *
 * The whole set runs twice: with float32 storage, then with the provider
 * option fp16=1 (float tensors stored as half), where the tolerance is
 * |a - b| <= 1e-2 + 1e-2 |b|. The convolutions and GEMMs run twice more,
 * on the work-group kernels: gemm=local1, and gemm=local2 with fp16=1. The graphs whose data moves by host
 * commands run once more with kernel_copies=1 (those moves made kernels,
 * as oclgrind's uninitialised-value pass runs them).
 *
 * Runs on PoCL in CI. Only when the ICD loader finds no OpenCL platform, or
 * no device on any, does the program exit with 77 (ctest: skipped),
 * printing which; a device the provider cannot use is a failure.
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

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h> /* CL_PLATFORM_NOT_FOUND_KHR: the ICD loader found no platform */

#include "minfer/builder.h"
#include "minfer/minfer.h"

#define MAX_IN 8

/* The pass being run: extra provider options and the tolerance. */
static const char *g_opts = NULL;
static float g_rtol = 1e-3f, g_atol = 1e-4f;

#define TC_SEED 777u
#include "provider_case.h"

#define IN(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)
#define I64(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)

/* A session on the providers list, with the pass's options after options;
 * checks that every node went to want_all (NULL: no check). NULL when the
 * session cannot be created. */
static minfer_session *session_on(tcase *t, const char *providers, const char *want_all,
                                  const char *options) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    char all[256];
    snprintf(all, sizeof all, "%s%s%s", options ? options : "", options && g_opts ? "," : "",
             g_opts ? g_opts : "");
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, providers), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, 2), MINFER_OK);
    if (all[0])
        assert_int_equal(minfer_options_set_provider_options(opt, "opencl", all), MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        return NULL;
    if (want_all)
        for (size_t i = 0; i < minfer_session_node_count(s); i++) {
            minfer_node_placement p;
            assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
            if (strcmp(p.provider, want_all) != 0)
                fail_msg("node %s (%s) placed on %s, not %s", p.node_name, p.op_type, p.provider,
                         want_all);
        }
    return s;
}

/* Runs s on t's inputs: the status, and output 0 in *out. */
static minfer_status run_session(tcase *t, minfer_session *s, minfer_tensor **out) {
    const char *names[MAX_IN];
    const minfer_tensor *ins[MAX_IN];
    *out = NULL;
    for (size_t i = 0; i < t->n_in; i++) {
        names[i] = t->names[i];
        ins[i] = t->inputs[i];
    }
    return minfer_session_run(s, names, ins, t->n_in, NULL, out, 1);
}

/* Output 0 of one run on the providers list (see session_on); NULL when
 * the session cannot be created. A failed run fails the test. */
static minfer_tensor *run_on(tcase *t, const char *providers, const char *want_all,
                             const char *options) {
    minfer_session *s = session_on(t, providers, want_all, options);
    minfer_tensor *out = NULL;
    if (!s)
        return NULL;
    if (run_session(t, s, &out) != MINFER_OK)
        fail_msg("%s: run failed: %s", providers, minfer_last_error());
    minfer_session_free(s);
    return out;
}

static void compare(const minfer_tensor *got, const minfer_tensor *want) {
    assert_int_equal(minfer_tensor_rank(got), minfer_tensor_rank(want));
    for (size_t d = 0; d < minfer_tensor_rank(got); d++)
        assert_int_equal(minfer_tensor_dims(got)[d], minfer_tensor_dims(want)[d]);
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (!(fabsf(g[i] - w[i]) <= g_atol + g_rtol * fabsf(w[i]) ||
              (isnan(g[i]) && isnan(w[i]))))
            fail_msg("element %lld: opencl %g, cpu %g", (long long)i, (double)g[i],
                     (double)w[i]);
}

static void tc_free(tcase *t) {
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
}

/* Output "y" on opencl alone (all nodes placed there) against cpu. */
static void tc_check(tcase *t) {
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
    minfer_tensor *got = run_on(t, "opencl", "opencl", NULL);
    if (!got)
        fail_msg("opencl refused the graph: %s", minfer_last_error());
    minfer_tensor *want = run_on(t, "cpu", NULL, NULL);
    if (!want)
        fail_msg("cpu refused the graph: %s", minfer_last_error());
    compare(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    tc_free(t);
}

/* ---- Conv ---------------------------------------------------------------- */

typedef struct conv_spec {
    int64_t x[5], w[5];
    size_t rank;
    int64_t group;
    const int64_t *strides, *dilations, *pads;
    const char *auto_pad;
    int bias, w_input;
} conv_spec;

static void conv_case(const conv_spec *c) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", c->x, c->rank);
    if (c->w_input)
        tc_input(&t, "w", c->w, c->rank);
    else
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

static void test_conv_tile_partial(void **state) {
    (void)state; /* 40 output channels: one full and one partial tile; 99 positions */
    conv_case(&(conv_spec){{2, 5, 9, 11}, {40, 5, 3, 3}, 4, 1, NULL, NULL,
                           (int64_t[]){1, 1, 1, 1}, NULL, 1, 0});
}

static void test_conv_strides_dilations_pads(void **state) {
    (void)state;
    conv_case(&(conv_spec){{1, 6, 13, 12}, {16, 6, 3, 2}, 4, 1, (int64_t[]){2, 1},
                           (int64_t[]){2, 2}, (int64_t[]){0, 1, 2, 1}, NULL, 0, 0});
}

static void test_conv_groups_1d_same(void **state) {
    (void)state; /* 1-D, 2 groups of 8 output channels, SAME_UPPER */
    conv_case(&(conv_spec){{2, 6, 17}, {16, 3, 4}, 3, 2, (int64_t[]){2}, NULL, NULL,
                           "SAME_UPPER", 1, 0});
}

static void test_conv_depthwise(void **state) {
    (void)state;
    conv_case(&(conv_spec){{1, 8, 10, 9}, {8, 1, 3, 3}, 4, 8, (int64_t[]){2, 2}, NULL,
                           (int64_t[]){1, 1, 1, 1}, NULL, 1, 0});
}

static void test_conv_runtime_weights(void **state) {
    (void)state;
    conv_case(&(conv_spec){{1, 4, 7, 7}, {12, 4, 3, 3}, 4, 1, NULL, NULL,
                           (int64_t[]){1, 1, 1, 1}, NULL, 0, 1});
}

static void test_conv_3d_tile(void **state) {
    (void)state; /* 3-D: 20 output channels (partial tile), strides, dilations, pads */
    conv_case(&(conv_spec){{1, 3, 6, 7, 8}, {20, 3, 3, 2, 3}, 5, 1, (int64_t[]){2, 1, 2},
                           (int64_t[]){1, 2, 1}, (int64_t[]){1, 0, 1, 0, 1, 2}, NULL, 1, 0});
}

static void test_conv_3d_direct(void **state) {
    (void)state; /* 3-D depthwise (conv_direct), SAME_LOWER, batch 2 */
    conv_case(&(conv_spec){{2, 4, 5, 6, 7}, {4, 1, 3, 3, 3}, 5, 4, (int64_t[]){2, 2, 1}, NULL,
                           NULL, "SAME_LOWER", 1, 0});
    /* weights known only at run time */
    conv_case(&(conv_spec){{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, 5, 1, NULL, NULL,
                           (int64_t[]){0, 1, 1, 1, 0, 0}, NULL, 0, 1});
}

static void test_conv_1d_tile_dilated(void **state) {
    (void)state; /* 1-D through the tiled kernel: 33 channels, dilation 3, pads */
    conv_case(&(conv_spec){{2, 5, 23}, {33, 5, 4}, 3, 1, (int64_t[]){1}, (int64_t[]){3},
                           (int64_t[]){2, 1}, NULL, 1, 0});
}

static void test_conv_1x1_grouped_strided(void **state) {
    (void)state; /* 1x1 kernel, 3 groups of 22 output channels, stride 2, batch 2 */
    conv_case(&(conv_spec){{2, 12, 9, 13}, {66, 4, 1, 1}, 4, 3, (int64_t[]){2, 2}, NULL, NULL,
                           NULL, 1, 0});
}

static void test_conv_3d_grouped_dilated(void **state) {
    (void)state; /* 3-D, 2 groups of 9 channels, dilations and asymmetric pads */
    conv_case(&(conv_spec){{1, 6, 5, 7, 9}, {18, 3, 2, 3, 3}, 5, 2, (int64_t[]){1, 2, 1},
                           (int64_t[]){2, 1, 2}, (int64_t[]){0, 1, 2, 1, 0, 1}, NULL, 1, 0});
}

static void test_fused_conv(void **state) {
    (void)state; /* FusedConv with bias, residual Z and a Clip activation */
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(1, 8, 6, 6));
    tc_input(&t, "z", I64(1, 24, 6, 6));
    tc_const(&t, "w", I64(24, 8, 3, 3), NULL);
    tc_const(&t, "b", I64(24), NULL);
    size_t n = tc_node(&t, "FusedConv", "minfer", IN("x", "w", "b", "z"), "y");
    minfer_builder_set_attr_ints(t.b, n, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
    minfer_builder_set_attr_string(t.b, n, "activation", "Clip");
    minfer_builder_set_attr_floats(t.b, n, "activation_params", (const float[]){-0.5f, 0.7f},
                                   2);
    tc_check(&t);
}

/* Squeeze-excitation blocks: Mul(X, S) read only by a convolution becomes
 * GatedConv (fuse_gated_conv), S per image and channel (a 1x1 conv tile,
 * with bias, residual and Relu) and one S for the batch on the left of the
 * Mul (a depthwise conv_direct): no Mul left, outputs as cpu's. */
static void test_gated_conv(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 16, 6, 6));
    tc_input(&t, "s", I64(1, 16, 1, 1));
    tc_const(&t, "w1", I64(4, 16, 1, 1), NULL);
    tc_const(&t, "b1", I64(4), NULL);
    tc_const(&t, "w2", I64(16, 4, 1, 1), NULL);
    tc_const(&t, "w3", I64(16, 16, 1, 1), NULL);
    tc_const(&t, "b3", I64(16), NULL);
    tc_const(&t, "wd", I64(16, 1, 3, 3), NULL);
    tc_node(&t, "GlobalAveragePool", NULL, IN("x"), "p");
    tc_node(&t, "Conv", NULL, IN("p", "w1", "b1"), "f1");
    tc_node(&t, "Relu", NULL, IN("f1"), "r");
    tc_node(&t, "Conv", NULL, IN("r", "w2"), "f2");
    tc_node(&t, "Sigmoid", NULL, IN("f2"), "gate");
    tc_node(&t, "Mul", NULL, IN("x", "gate"), "m");
    tc_node(&t, "Conv", NULL, IN("m", "w3", "b3"), "c3");
    tc_node(&t, "Add", NULL, IN("c3", "x"), "a");
    tc_node(&t, "Relu", NULL, IN("a"), "h");
    tc_node(&t, "Sigmoid", NULL, IN("s"), "g2");
    tc_node(&t, "Mul", NULL, IN("g2", "h"), "m2");
    size_t n = tc_node(&t, "Conv", NULL, IN("m2", "wd"), "y");
    minfer_builder_set_attr_int(t.b, n, "group", 16);
    minfer_builder_set_attr_ints(t.b, n, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_session *s = session_on(&t, "opencl", "opencl", NULL);
    if (!s)
        fail_msg("opencl refused the graph: %s", minfer_last_error());
    int gated = 0, muls = 0;
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        gated += strcmp(p.op_type, "GatedConv") == 0;
        muls += strcmp(p.op_type, "Mul") == 0;
    }
    assert_int_equal(gated, 2);
    assert_int_equal(muls, 0);
    minfer_tensor *got = NULL;
    if (run_session(&t, s, &got) != MINFER_OK)
        fail_msg("opencl: run failed: %s", minfer_last_error());
    minfer_session_free(s);
    minfer_tensor *want = run_on(&t, "cpu", NULL, NULL);
    if (!want)
        fail_msg("cpu refused the graph: %s", minfer_last_error());
    compare(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    tc_free(&t);
}

/* ---- Gemm, MatMul ------------------------------------------------------------ */

static void test_gemm_transb_bias(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", I64(7, 50));
    tc_const(&t, "b", I64(45, 50), NULL);
    tc_const(&t, "c", I64(45), NULL);
    size_t n = tc_node(&t, "Gemm", NULL, IN("a", "b", "c"), "y");
    minfer_builder_set_attr_int(t.b, n, "transB", 1);
    minfer_builder_set_attr_float(t.b, n, "alpha", 0.5f);
    minfer_builder_set_attr_float(t.b, n, "beta", 2.0f);
    tc_check(&t);
}

static void test_gemm_transa_runtime_b(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", I64(20, 9));
    tc_input(&t, "b", I64(20, 37));
    tc_const(&t, "c", I64(9, 1), NULL);
    size_t n = tc_node(&t, "Gemm", NULL, IN("a", "b", "c"), "y");
    minfer_builder_set_attr_int(t.b, n, "transA", 1);
    tc_check(&t);
}

static void matmul_case(const int64_t *a, size_t ra, const int64_t *b, size_t rb, int b_const) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", a, ra);
    if (b_const)
        tc_const(&t, "b", b, rb, NULL);
    else
        tc_input(&t, "b", b, rb);
    tc_node(&t, "MatMul", NULL, IN("a", "b"), "y");
    tc_check(&t);
}

static void test_matmul_batched(void **state) {
    (void)state;
    matmul_case(I64(2, 3, 5, 7), I64(2, 3, 7, 33), 0);
}

static void test_matmul_broadcasts(void **state) {
    (void)state;
    matmul_case(I64(3, 5, 7), I64(7, 40), 1);          /* folded into one tall GEMM */
    matmul_case(I64(5, 7), I64(3, 7, 9), 0);           /* A without a batch */
    matmul_case(I64(2, 1, 4, 6), I64(1, 3, 6, 5), 0);  /* broadcast both ways */
    matmul_case(I64(6), I64(2, 6, 3), 0);              /* 1-D A */
}

/* One row of Y (gemm_m1): a classifier's Gemm at batch 1 with C, alpha,
 * beta and packed B; a batched MatMul of one-row matrices with B at run
 * time (strided, N past one tile with an edge). */
static void test_gemm_one_row(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", I64(1, 50));
    tc_const(&t, "b", I64(45, 50), NULL);
    tc_const(&t, "c", I64(45), NULL);
    size_t n = tc_node(&t, "Gemm", NULL, IN("a", "b", "c"), "y");
    minfer_builder_set_attr_int(t.b, n, "transB", 1);
    minfer_builder_set_attr_float(t.b, n, "alpha", 0.5f);
    minfer_builder_set_attr_float(t.b, n, "beta", 2.0f);
    tc_check(&t);
    matmul_case(I64(3, 1, 20), I64(3, 20, 70), 0);
    matmul_case(I64(1, 33), I64(33, 17), 1);
}

static void test_matmul_tiles_odd(void **state) {
    (void)state; /* M, N, K past and between the work-group tiles (32, 64; K steps 8, 16) */
    matmul_case(I64(2, 67, 19), I64(2, 19, 70), 0); /* batched, B at run time */
    matmul_case(I64(130, 45), I64(45, 33), 1);      /* packed B, several row tiles */
}

static void test_fused_matmul_gelu(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", I64(2, 5, 16));
    tc_const(&t, "b", I64(16, 24), NULL);
    tc_const(&t, "bias", I64(24), NULL);
    tc_node(&t, "FusedMatMul", "minfer", IN("a", "b", "bias"), "h");
    tc_node(&t, "Gelu", "minfer", IN("h"), "y");
    tc_check(&t);
}

/* ---- Pools ---------------------------------------------------------------------- */

static void test_pools(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 3, 11, 10));
    size_t n = tc_node(&t, "MaxPool", NULL, IN("x"), "m");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", (const int64_t[]){3, 3}, 2);
    minfer_builder_set_attr_ints(t.b, n, "strides", (const int64_t[]){2, 2}, 2);
    minfer_builder_set_attr_ints(t.b, n, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
    minfer_builder_set_attr_int(t.b, n, "ceil_mode", 1);
    n = tc_node(&t, "AveragePool", NULL, IN("m"), "a");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", (const int64_t[]){2, 3}, 2);
    minfer_builder_set_attr_ints(t.b, n, "pads", (const int64_t[]){1, 0, 0, 2}, 4);
    minfer_builder_set_attr_int(t.b, n, "count_include_pad", 1);
    tc_node(&t, "GlobalAveragePool", NULL, IN("a"), "g");
    tc_node(&t, "GlobalMaxPool", NULL, IN("a"), "h");
    tc_node(&t, "Sub", NULL, IN("g", "h"), "y");
    tc_check(&t);
}

/* GoogLeNet's inception5a pool at 64x64 images (issue 17): a 3x3 MaxPool,
 * stride 1, pads 1, ceil_mode, over a 2x2 map, its window wider than the
 * input. */
static void test_pool_window_wider(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 8, 2, 2));
    size_t n = tc_node(&t, "MaxPool", NULL, IN("x"), "y");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", (const int64_t[]){3, 3}, 2);
    minfer_builder_set_attr_ints(t.b, n, "pads", (const int64_t[]){1, 1, 1, 1}, 4);
    minfer_builder_set_attr_int(t.b, n, "ceil_mode", 1);
    tc_check(&t);
}

static void test_pools_1d_3d(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 3, 7, 6, 9));
    size_t n = tc_node(&t, "MaxPool", NULL, IN("x"), "m");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", (const int64_t[]){3, 2, 3}, 3);
    minfer_builder_set_attr_ints(t.b, n, "strides", (const int64_t[]){2, 1, 2}, 3);
    minfer_builder_set_attr_ints(t.b, n, "pads", (const int64_t[]){1, 0, 1, 1, 1, 0}, 6);
    minfer_builder_set_attr_ints(t.b, n, "dilations", (const int64_t[]){1, 2, 1}, 3);
    minfer_builder_set_attr_int(t.b, n, "ceil_mode", 1);
    n = tc_node(&t, "AveragePool", NULL, IN("m"), "a");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", (const int64_t[]){2, 2, 3}, 3);
    minfer_builder_set_attr_ints(t.b, n, "pads", (const int64_t[]){1, 0, 1, 0, 2, 1}, 6);
    minfer_builder_set_attr_int(t.b, n, "count_include_pad", 1);
    n = tc_node(&t, "AveragePool", NULL, IN("a"), "b");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", (const int64_t[]){2, 1, 2}, 3);
    minfer_builder_set_attr_string(t.b, n, "auto_pad", "SAME_UPPER");
    tc_const_i64(&t, "shape", I64(3), (const int64_t[]){2, 3, -1});
    tc_node(&t, "Reshape", NULL, IN("b", "shape"), "r");
    n = tc_node(&t, "MaxPool", NULL, IN("r"), "m1");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", (const int64_t[]){3}, 1);
    minfer_builder_set_attr_ints(t.b, n, "pads", (const int64_t[]){2, 1}, 2);
    n = tc_node(&t, "AveragePool", NULL, IN("m1"), "y");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", (const int64_t[]){2}, 1);
    minfer_builder_set_attr_ints(t.b, n, "strides", (const int64_t[]){2}, 1);
    minfer_builder_set_attr_int(t.b, n, "ceil_mode", 1);
    tc_check(&t);
}

/* ---- Elementwise ------------------------------------------------------------------- */

static void test_binary_broadcasting(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", I64(2, 3, 4, 5));
    tc_input(&t, "b", I64(3, 1, 5));
    tc_const(&t, "c", I64(1), (const float[]){1.5f});
    tc_const(&t, "d", I64(4, 1), NULL);
    tc_node(&t, "Add", NULL, IN("a", "b"), "s");
    tc_node(&t, "Mul", NULL, IN("s", "c"), "m");
    tc_node(&t, "Div", NULL, IN("d", "m"), "q");
    tc_node(&t, "Sum", NULL, IN("q", "b", "d"), "u");
    tc_node(&t, "Max", NULL, IN("u", "a"), "v");
    tc_node(&t, "Mean", NULL, IN("v", "s"), "y");
    tc_check(&t);
}

static void test_unary_activations(void **state) {
    (void)state;
    static const char *const ops[] = {"Sigmoid", "Tanh", "Erf", "LeakyRelu", "HardSwish",
                                      "Softplus", "Abs", "Elu", "HardSigmoid", "Neg"};
    tcase t;
    tc_init(&t, 14);
    tc_input(&t, "x", I64(3, 37));
    const char *prev = "x";
    char names[10][8];
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        snprintf(names[i], sizeof names[i], "u%zu", i);
        tc_node(&t, ops[i], NULL, (const char *const[]){prev}, 1, names[i]);
        prev = names[i];
    }
    tc_const(&t, "lo", NULL, 0, (const float[]){-0.3f});
    tc_const(&t, "hi", NULL, 0, (const float[]){0.4f});
    tc_node(&t, "Clip", NULL, IN(prev, "lo", "hi"), "y");
    tc_check(&t);
}

/* ---- Normalizations ------------------------------------------------------------------ */

static void test_softmax_layernorm_batchnorm(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 17);
    tc_input(&t, "x", I64(2, 5, 3, 7));
    tc_const(&t, "s", I64(5), NULL);
    tc_const(&t, "bb", I64(5), NULL);
    tc_const(&t, "mu", I64(5), NULL);
    tc_const(&t, "var", I64(5), (const float[]){0.5f, 1.0f, 2.0f, 0.1f, 0.9f});
    tc_node(&t, "BatchNormalization", NULL, IN("x", "s", "bb", "mu", "var"), "n");
    size_t k = tc_node(&t, "Softmax", NULL, IN("n"), "p");
    minfer_builder_set_attr_int(t.b, k, "axis", 1);
    k = tc_node(&t, "LogSoftmax", NULL, IN("p"), "l");
    tc_const(&t, "g", I64(3, 7), NULL);
    tc_const(&t, "beta", I64(3, 7), NULL);
    k = tc_node(&t, "LayerNormalization", NULL, IN("l", "g", "beta"), "y");
    minfer_builder_set_attr_int(t.b, k, "axis", -2);
    tc_check(&t);
}

/* ---- Data movement and reductions -------------------------------------------------------- */

static void test_concat_transpose_gather(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", I64(2, 3, 4, 5));
    tc_input(&t, "b", I64(2, 1, 4, 5));
    tc_node(&t, "Relu", NULL, IN("a"), "r");
    size_t n = tc_node(&t, "Concat", NULL, IN("r", "b", "a"), "c");
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    n = tc_node(&t, "Transpose", NULL, IN("c"), "tr");
    minfer_builder_set_attr_ints(t.b, n, "perm", (const int64_t[]){0, 2, 3, 1}, 4);
    tc_const_i64(&t, "idx", I64(2, 2), (const int64_t[]){4, -1, 0, 2});
    n = tc_node(&t, "Gather", NULL, IN("tr", "idx"), "y");
    minfer_builder_set_attr_int(t.b, n, "axis", 2);
    tc_check(&t);
}

/* Concat with constant inputs (issue 17: a ViT's class token joins its
 * patch embeddings): the constants are uploaded at prepare and the node
 * runs on opencl, in front of, between and after run-time inputs. */
static void test_concat_constants(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 3, 4));
    tc_const(&t, "c0", I64(2, 1, 4), NULL);
    tc_const(&t, "c1", I64(2, 2, 4), NULL);
    tc_node(&t, "Relu", NULL, IN("x"), "r");
    size_t n = tc_node(&t, "Concat", NULL, IN("c0", "r", "c1", "x"), "y");
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    tc_check(&t);
}

/* DenseNet's Concat -> BatchNormalization -> Relu: the optimizer makes
 * the pair one minfer:FusedConcat on opencl (fuse_concat), which writes the
 * concatenation scaled, shifted and activated in one launch; with a
 * constant input (in another buffer than the arena) one launch per input.
 * On cpu the graph stays unfused. */
static void concat_bn_case(int with_const) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", I64(2, 3, 4, 5));
    tc_input(&t, "b", I64(2, 2, 4, 5));
    tc_const(&t, "c0", I64(2, 1, 4, 5), NULL);
    tc_node(&t, "Relu", NULL, IN("a"), "r");
    size_t n = with_const ? tc_node(&t, "Concat", NULL, IN("r", "c0", "b"), "c")
                          : tc_node(&t, "Concat", NULL, IN("r", "b"), "c");
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    int64_t ch = with_const ? 6 : 5;
    tc_const(&t, "s", &ch, 1, NULL);
    tc_const(&t, "bb", &ch, 1, NULL);
    tc_const(&t, "mu", &ch, 1, NULL);
    tc_const(&t, "var", &ch, 1, (const float[]){0.5f, 1.0f, 2.0f, 0.1f, 0.9f, 1.5f});
    tc_node(&t, "BatchNormalization", NULL, IN("c", "s", "bb", "mu", "var"), "n");
    tc_node(&t, "Relu", NULL, IN("n"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_session *s = session_on(&t, "opencl", "opencl", NULL);
    if (!s)
        fail_msg("opencl refused the graph: %s", minfer_last_error());
    int fused = 0;
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        fused += strcmp(p.op_type, "FusedConcat") == 0;
    }
    assert_int_equal(fused, 1);
    assert_int_equal(minfer_session_node_count(s), 2); /* Relu, FusedConcat */
    minfer_tensor *got = NULL;
    if (run_session(&t, s, &got) != MINFER_OK)
        fail_msg("opencl: run failed: %s", minfer_last_error());
    minfer_session_free(s);
    minfer_tensor *want = run_on(&t, "cpu", NULL, NULL);
    if (!want)
        fail_msg("cpu refused the graph: %s", minfer_last_error());
    compare(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    tc_free(&t);
}

static void test_concat_batchnorm_relu(void **state) {
    (void)state;
    concat_bn_case(0);
    concat_bn_case(1);
}

/* Element-wise runs on one tensor (fuse_elementwise): each becomes one
 * minfer:FusedElementwise on opencl, one launch, against the unfused graph
 * on cpu: a residual Add -> Relu; Mul by a channel vector -> Add of one
 * element -> Sigmoid; one element minus x (the operand on the left) ->
 * Clip -> LeakyRelu -> Div by a last-axis vector. */
static void test_elementwise_chains(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 3, 4, 5));
    tc_input(&t, "res", I64(2, 3, 4, 5));
    tc_const(&t, "ch", I64(3, 1, 1), NULL);
    tc_const(&t, "one", NULL, 0, NULL);
    tc_const(&t, "last", I64(5), (const float[]){0.5f, 1.5f, -2.0f, 3.0f, 0.75f});
    tc_const(&t, "lo", NULL, 0, (const float[]){-0.5f});
    tc_const(&t, "hi", NULL, 0, (const float[]){0.8f});
    tc_node(&t, "Add", NULL, IN("x", "res"), "a");
    tc_node(&t, "Relu", NULL, IN("a"), "b");
    size_t k = tc_node(&t, "MaxPool", NULL, IN("b"), "p"); /* ends the first run */
    minfer_builder_set_attr_ints(t.b, k, "kernel_shape", (const int64_t[]){1, 1}, 2);
    tc_node(&t, "Mul", NULL, IN("p", "ch"), "m");
    tc_node(&t, "Add", NULL, IN("m", "one"), "m2");
    tc_node(&t, "Sigmoid", NULL, IN("m2"), "s");
    k = tc_node(&t, "MaxPool", NULL, IN("s"), "q");
    minfer_builder_set_attr_ints(t.b, k, "kernel_shape", (const int64_t[]){1, 1}, 2);
    tc_node(&t, "Sub", NULL, IN("one", "q"), "d");
    tc_node(&t, "Clip", NULL, IN("d", "lo", "hi"), "c");
    k = tc_node(&t, "LeakyRelu", NULL, IN("c"), "l");
    minfer_builder_set_attr_float(t.b, k, "alpha", 0.2f);
    tc_node(&t, "Div", NULL, IN("l", "last"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_session *s = session_on(&t, "opencl", "opencl", NULL);
    if (!s)
        fail_msg("opencl refused the graph: %s", minfer_last_error());
    int fused = 0;
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        fused += strcmp(p.op_type, "FusedElementwise") == 0;
    }
    assert_int_equal(fused, 3);
    assert_int_equal(minfer_session_node_count(s), 5); /* 3 runs, 2 pools */
    minfer_tensor *got = NULL;
    if (run_session(&t, s, &got) != MINFER_OK)
        fail_msg("opencl: run failed: %s", minfer_last_error());
    minfer_session_free(s);
    minfer_tensor *want = run_on(&t, "cpu", NULL, NULL);
    if (!want)
        fail_msg("cpu refused the graph: %s", minfer_last_error());
    compare(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    tc_free(&t);
}

/* Gather with indices out of range: the run fails with an error naming the
 * node and the index, the session survives and its next run is right. The
 * indices are a graph input (checked on the device) or constant (checked
 * on the host). */
static void expect_oob(tcase *t, minfer_session *s, const char *what) {
    minfer_tensor *out = NULL;
    minfer_status st = run_session(t, s, &out);
    minfer_tensor_free(out);
    if (st == MINFER_OK)
        fail_msg("a Gather with index %s ran", what);
    const char *msg = minfer_last_error();
    if (!strstr(msg, "'g'") || !strstr(msg, "Gather") || !strstr(msg, what) ||
        !strstr(msg, "out of range"))
        fail_msg("the error does not name the node and index %s: %s", what, msg);
}

static void test_gather_out_of_range(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(3, 5, 2));
    tc_input_i64(&t, "i", I64(2, 2), (const int64_t[]){0, -5, 7, 5});
    tc_node(&t, "Relu", NULL, IN("x"), "r");
    size_t n;
    assert_int_equal(minfer_builder_add_node(t.b, "Gather", NULL, "g", IN("r", "i"),
                                             (const char *const[]){"y"}, 1, &n), MINFER_OK);
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_session *s = session_on(&t, "opencl", "opencl", NULL);
    assert_non_null(s);
    /* 7 at element 2 is the first bad one (5 at element 3 is bad too) */
    expect_oob(&t, s, "index 7 (element 2");
    int64_t *idx = minfer_tensor_data(t.inputs[1]);
    idx[2] = -6;
    expect_oob(&t, s, "index -6 (element 2");
    idx[2] = 4;
    idx[3] = -1;
    minfer_tensor *got = NULL;
    if (run_session(&t, s, &got) != MINFER_OK)
        fail_msg("the run after a failed one: %s", minfer_last_error());
    minfer_session_free(s);
    minfer_tensor *want = run_on(&t, "cpu", NULL, NULL);
    compare(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    tc_free(&t);

    /* The run's first device node: nothing queued writes the indices, so
     * they are read back and checked on the host before the launch. */
    tc_init(&t, 13);
    tc_input(&t, "x", I64(3, 5, 2));
    tc_input_i64(&t, "i", I64(2, 2), (const int64_t[]){0, -5, 7, 5});
    assert_int_equal(minfer_builder_add_node(t.b, "Gather", NULL, "g", IN("x", "i"),
                                             (const char *const[]){"r"}, 1, &n), MINFER_OK);
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    tc_node(&t, "Relu", NULL, IN("r"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    s = session_on(&t, "opencl", "opencl", NULL);
    assert_non_null(s);
    expect_oob(&t, s, "index 7 (element 2");
    idx = minfer_tensor_data(t.inputs[1]);
    idx[2] = -6;
    expect_oob(&t, s, "index -6 (element 2");
    idx[2] = 4;
    idx[3] = -1;
    got = NULL;
    if (run_session(&t, s, &got) != MINFER_OK)
        fail_msg("the run after a failed one: %s", minfer_last_error());
    minfer_session_free(s);
    want = run_on(&t, "cpu", NULL, NULL);
    compare(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    tc_free(&t);

    tc_init(&t, 13);
    tc_input(&t, "x", I64(4, 3));
    tc_const_i64(&t, "i", I64(3), (const int64_t[]){1, -4, 4});
    assert_int_equal(minfer_builder_add_node(t.b, "Gather", NULL, "g", IN("x", "i"),
                                             (const char *const[]){"y"}, 1, &n), MINFER_OK);
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    s = session_on(&t, "opencl", "opencl", NULL);
    assert_non_null(s);
    expect_oob(&t, s, "index 4 (element 2");
    expect_oob(&t, s, "index 4 (element 2");
    minfer_session_free(s);
    tc_free(&t);
}

/* Shape arithmetic with symbolic dimensions on opencl alone: x [n, 6]
 * flattened as an exporter writes it, Reshape(Relu(x), Concat(Gather(
 * Shape(x), 0), [2, 3])), then Slice(.., 0, Gather(Shape(x), 1) - 4) along
 * axis 2 (int64 Sub). No OpenCL kernel runs Shape or int64 arithmetic;
 * every plan folds them (the session leaves them unassigned), and the
 * Reshape and Slice run on the device with the folded parameters. Two
 * batch sizes (two plans) against the CPU provider; the device waits once
 * a run. */
static void test_symbolic_shape_arithmetic(void **state) {
    (void)state;
    for (int64_t n = 2; n <= 5; n += 3) {
        tcase t;
        tc_init(&t, 13);
        const char *names[] = {"n", NULL};
        assert_int_equal(minfer_builder_add_input(t.b, "x", MINFER_DTYPE_FLOAT,
                                                  (const int64_t[]){-1, 6}, 2, names),
                         MINFER_OK);
        snprintf(t.names[0], sizeof t.names[0], "x");
        t.inputs[t.n_in++] = random_tensor(&t, (const int64_t[]){n, 6}, 2);
        tc_const_i64(&t, "zero", I64(1), (const int64_t[]){0});
        tc_const_i64(&t, "one", I64(1), (const int64_t[]){1});
        tc_const_i64(&t, "four", I64(1), (const int64_t[]){4});
        tc_const_i64(&t, "two", I64(1), (const int64_t[]){2});
        tc_const_i64(&t, "tail", I64(2), (const int64_t[]){2, 3});
        tc_node(&t, "Relu", NULL, IN("x"), "r");
        tc_node(&t, "Shape", NULL, IN("x"), "sh");
        tc_node(&t, "Gather", NULL, IN("sh", "zero"), "b");
        size_t k = tc_node(&t, "Concat", NULL, IN("b", "tail"), "target");
        minfer_builder_set_attr_int(t.b, k, "axis", 0);
        tc_node(&t, "Reshape", NULL, IN("r", "target"), "y3");
        tc_node(&t, "Gather", NULL, IN("sh", "one"), "w");
        tc_node(&t, "Sub", NULL, IN("w", "four"), "end");
        tc_node(&t, "Slice", NULL, IN("y3", "zero", "end", "two"), "y");
        assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
        minfer_session *s = session_on(&t, "opencl", NULL, NULL);
        if (!s)
            fail_msg("opencl alone refused the graph: %s", minfer_last_error());
        for (size_t i = 0; i < minfer_session_node_count(s); i++) {
            minfer_node_placement p;
            assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
            int device = strcmp(p.op_type, "Relu") == 0 || strcmp(p.op_type, "Reshape") == 0 ||
                         strcmp(p.op_type, "Slice") == 0;
            if (strcmp(p.provider, device ? "opencl" : "(constant)") != 0)
                fail_msg("node %s (%s) placed on %s", p.node_name, p.op_type, p.provider);
        }
        minfer_tensor *got = NULL, *want;
        if (run_session(&t, s, &got) != MINFER_OK)
            fail_msg("opencl run: %s", minfer_last_error());
        minfer_device_counters c = {.struct_size = sizeof c};
        assert_int_equal(minfer_session_device_counters(s, 0, &c), MINFER_OK);
        assert_int_equal(c.syncs, 1);
        minfer_session_free(s);
        want = run_on(&t, "cpu", NULL, NULL);
        assert_int_equal(minfer_tensor_rank(got), 3);
        assert_int_equal(minfer_tensor_dims(got)[0], n);
        assert_int_equal(minfer_tensor_dims(got)[2], 2);
        compare(got, want);
        minfer_tensor_free(got);
        minfer_tensor_free(want);
        tc_free(&t);
    }
}

static void test_reduce_reshape(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 3, 4, 5));
    size_t n = tc_node(&t, "ReduceMean", NULL, IN("x"), "m");
    minfer_builder_set_attr_ints(t.b, n, "axes", (const int64_t[]){1, 3}, 2);
    tc_const_i64(&t, "ax", I64(1), (const int64_t[]){-1});
    n = tc_node(&t, "ReduceSum", NULL, IN("x", "ax"), "s");
    minfer_builder_set_attr_int(t.b, n, "keepdims", 0);
    tc_const_i64(&t, "shape", I64(2), (const int64_t[]){2, 12});
    tc_node(&t, "Reshape", NULL, IN("s", "shape"), "r");
    tc_node(&t, "ReduceMax", NULL, IN("r"), "mx");
    tc_node(&t, "Flatten", NULL, IN("m"), "f");
    tc_node(&t, "Add", NULL, IN("f", "mx"), "y");
    tc_check(&t);
}

/* ---- Device choice, fallback, mixed placement --------------------------------------------- */

static void simple_graph(tcase *t) {
    tc_init(t, 13);
    tc_input(t, "x", I64(4, 6));
    tc_node(t, "Relu", NULL, IN("x"), "r");
    tc_node(t, "ArgMax", NULL, IN("r"), "am"); /* not an OpenCL op: runs on cpu */
    size_t n = tc_node(t, "Cast", NULL, IN("am"), "c");
    minfer_builder_set_attr_int(t->b, n, "to", MINFER_DTYPE_FLOAT);
    tc_node(t, "Mul", NULL, IN("r", "c"), "y"); /* back on opencl */
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
}

static void test_mixed_placement(void **state) {
    (void)state;
    tcase t;
    simple_graph(&t);
    minfer_tensor *got = run_on(&t, "opencl,cpu", NULL, NULL);
    assert_non_null(got);
    minfer_tensor *want = run_on(&t, "cpu", NULL, NULL);
    assert_non_null(want);
    compare(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    tc_free(&t);
}

/* Counters of the last run (minfer_session_device_counters): provider 0
 * of s must be opencl; the run counts must be the expected ones. */
static void expect_counters(minfer_session *s, uint64_t runs, uint64_t launches, uint64_t syncs,
                            uint64_t transfers) {
    minfer_device_counters c = {.struct_size = sizeof c};
    assert_string_equal(minfer_session_provider_name(s, 0), "opencl");
    assert_int_equal(minfer_session_device_counters(s, 0, &c), MINFER_OK);
    if (c.runs != runs || c.launches != launches || c.syncs != syncs ||
        c.transfers != transfers)
        fail_msg("run %llu: %llu launches, %llu syncs, %llu transfers; want run %llu: %llu, "
                 "%llu, %llu", (unsigned long long)c.runs, (unsigned long long)c.launches,
                 (unsigned long long)c.syncs, (unsigned long long)c.transfers,
                 (unsigned long long)runs, (unsigned long long)launches,
                 (unsigned long long)syncs, (unsigned long long)transfers);
}

/* Per-run counters: a graph all on the device waits once per run (the
 * clFinish of synchronize; the input upload does not wait and the output
 * download follows the wait), with one launch per kernel; a Gather with
 * run-time indices waits for its index check too; a value that crosses to
 * cpu mid-run waits for the device, the one coming back does not. The
 * counts repeat run after run. A run ends at synchronize, before the
 * session reads its outputs back, so those transfers count for the next
 * run (the first run has one transfer fewer). */
static void test_run_counters(void **state) {
    (void)state;
    tcase t;
    minfer_tensor *out = NULL;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(4, 6));
    tc_node(&t, "Relu", NULL, IN("x"), "r");
    tc_node(&t, "Transpose", NULL, IN("r"), "y"); /* not fused with the Relu */
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_session *s = session_on(&t, "opencl", "opencl", NULL);
    assert_non_null(s);
    assert_int_equal(minfer_session_node_count(s), 2);
    expect_counters(s, 0, 0, 0, 0);
    for (uint64_t r = 1; r <= 3; r++) {
        assert_int_equal(run_session(&t, s, &out), MINFER_OK);
        minfer_tensor_free(out);
        /* Relu, Transpose; x in, y out (y of run 1 is read after its end:
         * a run's downloads count for the next) */
        expect_counters(s, r, 2, 1, r == 1 ? 1 : 2);
    }
    /* A caller's smaller struct gets its fields only; a bad call says why. */
    struct {
        size_t struct_size;
        uint64_t runs, launches;
    } small = {offsetof(minfer_device_counters, syncs), 0, 0};
    assert_int_equal(minfer_session_device_counters(s, 0, (minfer_device_counters *)&small),
                     MINFER_OK);
    assert_int_equal(small.launches, 2);
    minfer_device_counters c = {.struct_size = sizeof c};
    assert_int_equal(minfer_session_device_counters(s, 1, &c), MINFER_ERR_INVALID_ARG);
    c.struct_size = 0;
    assert_int_equal(minfer_session_device_counters(s, 0, &c), MINFER_ERR_INVALID_ARG);
    minfer_session_free(s);
    tc_free(&t);

    tc_init(&t, 13);
    tc_input(&t, "x", I64(3, 5, 2));
    tc_input_i64(&t, "i", I64(2, 2), (const int64_t[]){0, -5, 4, 1});
    tc_node(&t, "Relu", NULL, IN("x"), "r");
    size_t n = tc_node(&t, "Gather", NULL, IN("r", "i"), "g");
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    tc_node(&t, "Sigmoid", NULL, IN("g"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    s = session_on(&t, "opencl", "opencl", NULL);
    assert_non_null(s);
    for (uint64_t r = 1; r <= 2; r++) {
        assert_int_equal(run_session(&t, s, &out), MINFER_OK);
        minfer_tensor_free(out);
        /* i is uploaded after Relu's launch: its staged copy is checked on
         * the host (no command since). Relu, Gather, Sigmoid; the
         * clFinish; x, i, y */
        expect_counters(s, r, 3, 1, r == 1 ? 2 : 3);
    }
    minfer_session_free(s);
    /* Uploads made kernels: the device checks the indices. Two upload
     * kernels, Relu, the flag's fill, Gather, Sigmoid; the check's read
     * and the clFinish (which would not wait if nothing followed the
     * check); x, i (counted as transfers, made by kernels), y */
    s = session_on(&t, "opencl", "opencl", "kernel_copies=1");
    assert_non_null(s);
    for (uint64_t r = 1; r <= 2; r++) {
        assert_int_equal(run_session(&t, s, &out), MINFER_OK);
        minfer_tensor_free(out);
        expect_counters(s, r, 6, 2, r == 1 ? 2 : 3);
    }
    minfer_session_free(s);
    tc_free(&t);

    /* The same Gather as the run's first device node (an embedding lookup
     * on a graph input): its indices are checked on the host, no wait;
     * Gather and Relu, the clFinish; x, i, y, and on a device sharing host
     * memory (PoCL) the indices' read (oclgrind checks the staged copy of
     * their upload). */
    tc_init(&t, 13);
    tc_input(&t, "x", I64(3, 5, 2));
    tc_input_i64(&t, "i", I64(2, 2), (const int64_t[]){0, -5, 4, 1});
    n = tc_node(&t, "Gather", NULL, IN("x", "i"), "g");
    minfer_builder_set_attr_int(t.b, n, "axis", 1);
    tc_node(&t, "Relu", NULL, IN("g"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    s = session_on(&t, "opencl", "opencl", NULL);
    assert_non_null(s);
    for (uint64_t r = 1; r <= 2; r++) {
        assert_int_equal(run_session(&t, s, &out), MINFER_OK);
        minfer_tensor_free(out);
        minfer_device_counters k = {.struct_size = sizeof k};
        assert_int_equal(minfer_session_device_counters(s, 0, &k), MINFER_OK);
        uint64_t tr = k.transfers == (r == 1 ? 3u : 4u) ? k.transfers : (r == 1 ? 2u : 3u);
        expect_counters(s, r, 2, 1, tr);
    }
    minfer_session_free(s);
    tc_free(&t);

    simple_graph(&t); /* Relu on opencl, ArgMax and Cast on cpu, Mul on opencl */
    s = session_on(&t, "opencl,cpu", NULL, NULL);
    assert_non_null(s);
    for (uint64_t r = 1; r <= 2; r++) {
        assert_int_equal(run_session(&t, s, &out), MINFER_OK);
        minfer_tensor_free(out);
        /* r down after Relu (a wait), c up (none), y down after the clFinish */
        expect_counters(s, r, 2, 2, r == 1 ? 3 : 4);
    }
    /* cpu computes in host memory and counts nothing */
    c.struct_size = sizeof c;
    assert_string_equal(minfer_session_provider_name(s, 1), "cpu");
    assert_int_equal(minfer_session_device_counters(s, 1, &c), MINFER_ERR_UNSUPPORTED);
    minfer_session_free(s);
    tc_free(&t);
}

static void test_device_option(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(3));
    tc_node(&t, "Relu", NULL, IN("x"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *y = run_on(&t, "opencl", "opencl", "device=0:0");
    assert_non_null(y);
    minfer_tensor_free(y);
    /* No such device: opencl alone cannot be used, and says why. */
    assert_null(run_on(&t, "opencl", NULL, "device=no-such-device-xyz"));
    assert_non_null(strstr(minfer_last_error(), "no device matches"));
    /* With cpu after it, the session goes on on cpu. */
    y = run_on(&t, "opencl,cpu", "cpu", "device=no-such-device-xyz");
    assert_non_null(y);
    minfer_tensor_free(y);
    /* MINFER_OPENCL_LAUNCH takes gpu or device, and names itself otherwise
     * (the value the test runs under, opencl_gpu_launch_oclgrind's gpu,
     * comes back after). */
    const char *launch = getenv("MINFER_OPENCL_LAUNCH");
    char *saved = launch ? strdup(launch) : NULL;
    setenv("MINFER_OPENCL_LAUNCH", "GPU", 1);
    assert_null(run_on(&t, "opencl", NULL, NULL));
    assert_non_null(strstr(minfer_last_error(), "MINFER_OPENCL_LAUNCH='GPU'"));
    setenv("MINFER_OPENCL_LAUNCH", "device", 1);
    y = run_on(&t, "opencl", "opencl", NULL);
    assert_non_null(y);
    minfer_tensor_free(y);
    if (saved)
        setenv("MINFER_OPENCL_LAUNCH", saved, 1);
    else
        unsetenv("MINFER_OPENCL_LAUNCH");
    free(saved);
    tc_free(&t);
}

/* fp16=1 really stores half: 1 + 2^-12 is not a half and rounds to 1 on
 * the way in, 2^-12 itself is one; 1e5 is beyond half's range. A bad
 * value of the option fails init with the keys it takes. Runs in the
 * float32 pass only (it sets the option itself). */
static void test_fp16_storage(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(4));
    float *x = minfer_tensor_data(t.inputs[0]);
    x[0] = 1.0f + 0x1p-12f;
    x[1] = 0x1p-12f;
    x[2] = -2.5f;
    x[3] = 1e5f;
    tc_node(&t, "Relu", NULL, IN("x"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *y = run_on(&t, "opencl", "opencl", "fp16=1");
    assert_non_null(y);
    const float *v = minfer_tensor_data(y);
    assert_true(v[0] == 1.0f && v[1] == 0x1p-12f && v[2] == 0.0f && isinf(v[3]));
    minfer_tensor_free(y);
    y = run_on(&t, "opencl", "opencl", "fp16=0");
    assert_non_null(y);
    v = minfer_tensor_data(y);
    assert_true(v[0] == 1.0f + 0x1p-12f && v[3] == 1e5f);
    minfer_tensor_free(y);
    assert_null(run_on(&t, "opencl", NULL, "fp16=2"));
    assert_non_null(strstr(minfer_last_error(), "fp16=0|1"));
    tc_free(&t);
}

/* Whether the opencl provider loads and runs here. */
/* Why this machine has no OpenCL device to test on, asked of the ICD loader
 * itself; NULL when it has one. Only this skips the test: with a device, a
 * provider that cannot run on it is a failure. */
static const char *no_device_reason(char *buf, size_t size) {
    cl_uint n_platforms = 0, n_devices = 0;
    cl_platform_id platforms[16];
    cl_int err = clGetPlatformIDs(16, platforms, &n_platforms);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && n_platforms == 0)) {
        snprintf(buf, size, "no OpenCL platform is installed (clGetPlatformIDs: %d)", (int)err);
        return buf;
    }
    if (err != CL_SUCCESS)
        return NULL; /* the loader is broken: the provider's test says how */
    for (cl_uint p = 0; p < n_platforms && p < 16; p++) {
        cl_uint n = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n) == CL_SUCCESS)
            n_devices += n;
    }
    if (n_devices == 0) {
        snprintf(buf, size, "%u OpenCL platform(s), but no device on any", (unsigned)n_platforms);
        return buf;
    }
    return NULL;
}

/* Runs a Relu on the provider; 0 (with the reason printed) when it cannot. */
static int have_device(void) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2));
    tc_node(&t, "Relu", NULL, IN("x"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *y = run_on(&t, "opencl", NULL, NULL);
    tc_free(&t);
    if (!y) {
        print_message("an OpenCL device exists, but the provider cannot run a Relu on it: %s\n",
                      minfer_last_error());
        return 0;
    }
    minfer_tensor_free(y);
    return 1;
}

/* The graphs whose data the provider moves with host commands (uploads
 * mid-run, device copies, the Gather flag's fill), with those moves made
 * kernels (kernel_copies=1, the oclgrind setting): same results. */
static int pass_kernel_copies(void **state) {
    (void)state;
    g_opts = "kernel_copies=1";
    g_rtol = 1e-3f;
    g_atol = 1e-4f;
    return 0;
}

static int pass_local1(void **state) {
    (void)state;
    g_opts = "gemm=local1";
    g_rtol = 1e-3f;
    g_atol = 1e-4f;
    return 0;
}

static int pass_local2_fp16(void **state) {
    (void)state;
    g_opts = "gemm=local2,fp16=1";
    g_rtol = 1e-2f;
    g_atol = 1e-2f;
    return 0;
}

static int pass_fp16(void **state) {
    (void)state;
    g_opts = "fp16=1";
    g_rtol = 1e-2f;
    g_atol = 1e-2f;
    return 0;
}

/* The convolutions and GEMMs: also run with each work-group kernel forced
 * (gemm=local1, gemm=local2 with half storage). */
#define CONV_GEMM_TESTS                                                                    \
    cmocka_unit_test(test_conv_tile_partial),                                              \
    cmocka_unit_test(test_conv_strides_dilations_pads),                                    \
    cmocka_unit_test(test_conv_groups_1d_same),                                            \
    cmocka_unit_test(test_conv_depthwise),                                                 \
    cmocka_unit_test(test_conv_runtime_weights),                                           \
    cmocka_unit_test(test_conv_3d_tile),                                                   \
    cmocka_unit_test(test_conv_3d_direct),                                                 \
    cmocka_unit_test(test_conv_1d_tile_dilated),                                           \
    cmocka_unit_test(test_conv_1x1_grouped_strided),                                       \
    cmocka_unit_test(test_conv_3d_grouped_dilated),                                        \
    cmocka_unit_test(test_fused_conv),                                                     \
    cmocka_unit_test(test_gated_conv),                                                     \
    cmocka_unit_test(test_gemm_transb_bias),                                               \
    cmocka_unit_test(test_gemm_transa_runtime_b),                                          \
    cmocka_unit_test(test_matmul_batched),                                                 \
    cmocka_unit_test(test_matmul_broadcasts),                                              \
    cmocka_unit_test(test_matmul_tiles_odd),                                               \
    cmocka_unit_test(test_gemm_one_row),                                                   \
    cmocka_unit_test(test_fused_matmul_gelu)

#define GRAPH_TESTS                                                                        \
    CONV_GEMM_TESTS,                                                                       \
    cmocka_unit_test(test_pools),                                                          \
    cmocka_unit_test(test_pool_window_wider),                                              \
    cmocka_unit_test(test_pools_1d_3d),                                                    \
    cmocka_unit_test(test_binary_broadcasting),                                            \
    cmocka_unit_test(test_unary_activations),                                              \
    cmocka_unit_test(test_softmax_layernorm_batchnorm),                                    \
    cmocka_unit_test(test_concat_transpose_gather),                                        \
    cmocka_unit_test(test_concat_constants),                                               \
    cmocka_unit_test(test_concat_batchnorm_relu),                                          \
    cmocka_unit_test(test_elementwise_chains),                                             \
    cmocka_unit_test(test_gather_out_of_range),                                            \
    cmocka_unit_test(test_reduce_reshape),                                                 \
    cmocka_unit_test(test_mixed_placement),                                                \
    cmocka_unit_test(test_run_counters),                                                   \
    cmocka_unit_test(test_symbolic_shape_arithmetic),                                      \
    cmocka_unit_test(test_device_option)

int main(void) {
    const struct CMUnitTest float32[] = {GRAPH_TESTS, cmocka_unit_test(test_fp16_storage)};
    const struct CMUnitTest fp16[] = {GRAPH_TESTS};
    const struct CMUnitTest conv_gemm[] = {CONV_GEMM_TESTS};
    const struct CMUnitTest copies[] = {
        cmocka_unit_test(test_mixed_placement), cmocka_unit_test(test_concat_transpose_gather),
        cmocka_unit_test(test_concat_constants), cmocka_unit_test(test_concat_batchnorm_relu),
        cmocka_unit_test(test_gather_out_of_range),
        cmocka_unit_test(test_reduce_reshape), cmocka_unit_test(test_softmax_layernorm_batchnorm)};
    char why[256];
    if (no_device_reason(why, sizeof why)) {
        print_message("skipping: %s\n", why);
        return 77; /* ctest SKIP_RETURN_CODE */
    }
    if (!have_device())
        return 1;
    int failed = cmocka_run_group_tests_name("opencl float32", float32, NULL, NULL);
    failed += cmocka_run_group_tests_name("opencl kernel_copies=1", copies, pass_kernel_copies,
                                          NULL);
    failed += cmocka_run_group_tests_name("opencl gemm=local1", conv_gemm, pass_local1, NULL);
    failed += cmocka_run_group_tests_name("opencl gemm=local2,fp16=1", conv_gemm,
                                          pass_local2_fp16, NULL);
    failed += cmocka_run_group_tests_name("opencl fp16=1", fp16, pass_fp16, NULL);
    return failed != 0;
}
