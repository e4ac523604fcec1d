/*
 * The OpenCL provider's transformer ops (providers/opencl/fused.c:
 * minfer:RMSNormalization, Attention and RotaryEmbedding) against the CPU provider,
 * the oracle, on builder graphs: each graph runs with providers {"opencl"}
 * (every node must be placed there) and with {"cpu"} on the same random
 * inputs; outputs agree within |a - b| <= 1e-4 + 1e-3 |b| (float storage)
 * and 1e-2 + 1e-2 |b| (fp16=1, half storage).
 *
 * Attention covers what the CPU provider's does: no mask, a mask that
 * broadcasts over the batch and heads, a causal mask of -inf, a padding
 * mask per batch, grouped-query and multi-query K/V (a head axis of 1
 * broadcast against the query heads), Q without the batch axes, scale. The
 * last case builds the exporters' op-by-op patterns (RMSNorm as Pow,
 * ReduceMean, Add, Sqrt, Reciprocal, Mul; attention as MatMul, Div,
 * Softmax, MatMul; rotate-half as Slice, Neg, Concat, Mul, Add) at the
 * default optimization level: on opencl alone the
 * optimizer's fused nodes run there (the session is not refused) and the
 * outputs equal the CPU provider's.
 *
 * Also the data movement around the corpus' attention (providers/opencl/
 * slice.c): Slice (steps, a negative step, clamped and empty ranges),
 * Split (given parts, and opset 18's uneven num_outputs), Expand
 * (grouped-query K/V, a shape of lower rank).
 *
 * Exits 77 (ctest: skipped) only when no OpenCL platform or device exists.
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

#include "minfer/builder.h"
#include "minfer/minfer.h"

#define MAX_IN 8
#define TC_SEED 4242u
#include "provider_case.h"

#define IN(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)
#define I64(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)

static const char *g_opts = NULL; /* the pass's provider options */
static float g_rtol = 1e-3f, g_atol = 1e-4f;

/* Output "y" on providers; with want_all, every node must be placed there
 * and ops must name fused ops that must be among the nodes. */
static minfer_tensor *run_on(tcase *t, const char *providers, const char *want_all,
                             const char *const *ops, size_t n_ops) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *out = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, providers), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, 2), MINFER_OK);
    if (g_opts && strstr(providers, "opencl"))
        assert_int_equal(minfer_options_set_provider_options(opt, "opencl", g_opts), MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("%s refused the graph: %s", providers, minfer_last_error());
    size_t found = 0;
    for (size_t i = 0; want_all && i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        if (strcmp(p.provider, want_all) != 0 && strcmp(p.provider, "(constant)") != 0)
            fail_msg("node %s (%s) placed on %s, not %s (%s)", p.node_name, p.op_type,
                     p.provider, want_all, p.declined);
        for (size_t k = 0; k < n_ops; k++)
            found += strcmp(p.domain, "minfer") == 0 && strcmp(p.op_type, ops[k]) == 0;
    }
    if (want_all && found != n_ops)
        fail_msg("%zu of the %zu fused ops expected on %s", found, n_ops, want_all);
    const char *names[MAX_IN];
    const minfer_tensor *ins[MAX_IN];
    for (size_t i = 0; i < t->n_in; i++) {
        names[i] = t->names[i];
        ins[i] = t->inputs[i];
    }
    const char *y = "y";
    if (minfer_session_run(s, names, ins, t->n_in, &y, &out, 1) != MINFER_OK)
        fail_msg("%s: run failed: %s", providers, minfer_last_error());
    minfer_session_free(s);
    return out;
}

/* Output "y" on opencl alone against cpu. */
static void tc_check_ops(tcase *t, const char *const *ops, size_t n_ops) {
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
    minfer_tensor *got = run_on(t, "opencl", "opencl", ops, n_ops);
    minfer_tensor *want = run_on(t, "cpu", NULL, NULL, 0);
    assert_int_equal(minfer_tensor_rank(got), minfer_tensor_rank(want));
    for (size_t d = 0; d < minfer_tensor_rank(got); d++)
        assert_int_equal(minfer_tensor_dims(got)[d], minfer_tensor_dims(want)[d]);
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (!(fabsf(g[i] - w[i]) <= g_atol + g_rtol * fabsf(w[i]) || (isnan(g[i]) && isnan(w[i]))))
            fail_msg("element %lld: opencl %g, cpu %g", (long long)i, (double)g[i], (double)w[i]);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
}

static void tc_check(tcase *t) { tc_check_ops(t, NULL, 0); }

/* ---- RMSNormalization ---------------------------------------------------------- */

static void rms_case(const int64_t *x, size_t rx, const int64_t *s, size_t rs, int64_t axis,
                     float eps) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", x, rx);
    tc_const(&t, "s", s, rs, NULL);
    size_t k = tc_node(&t, "RMSNormalization", "minfer", IN("x", "s"), "y");
    minfer_builder_set_attr_int(t.b, k, "axis", axis);
    minfer_builder_set_attr_float(t.b, k, "epsilon", eps);
    tc_check(&t);
}

static void test_rmsnorm(void **state) {
    (void)state;
    rms_case(I64(2, 5, 16), I64(16), -1, 1e-6f);   /* as fuse_rmsnorm makes it */
    rms_case(I64(3, 4, 6), I64(24), 1, 1e-5f);     /* over two trailing axes */
    rms_case(I64(7, 33), I64(1), -1, 1e-3f);       /* one Scale for the row */
    rms_case(I64(1, 1, 4096), I64(4096), -1, 1e-6f); /* a LLaMA-wide row */
}

/* ---- Attention ------------------------------------------------------------------ */

/* Q, KT, V inputs (V a constant when v_const), an optional mask input or
 * constant (mask_vals: its values, NULL: random), scale. */
static void attn_case(const int64_t *q, size_t rq, const int64_t *k, size_t rk, const int64_t *v,
                      size_t rv, const int64_t *m, size_t rm, const float *mask_vals, float scale) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "q", q, rq);
    tc_input(&t, "kt", k, rk);
    tc_input(&t, "v", v, rv);
    size_t node;
    if (m) {
        if (mask_vals)
            tc_const(&t, "m", m, rm, mask_vals);
        else
            tc_input(&t, "m", m, rm);
        node = tc_node(&t, "Attention", "minfer", IN("q", "kt", "v", "m"), "y");
    } else {
        node = tc_node(&t, "Attention", "minfer", IN("q", "kt", "v"), "y");
    }
    minfer_builder_set_attr_float(t.b, node, "scale", scale);
    tc_check(&t);
}

static void test_attention_plain(void **state) {
    (void)state;
    attn_case(I64(2, 3, 5, 8), I64(2, 3, 8, 7), I64(2, 3, 7, 6), NULL, 0, NULL, 0.35f);
    attn_case(I64(5, 8), I64(3, 8, 7), I64(3, 7, 6), NULL, 0, NULL, 1.0f); /* Q without a batch */
    attn_case(I64(1, 4, 1, 16), I64(1, 4, 16, 9), I64(1, 4, 9, 16), NULL, 0, NULL, 0.25f);
}

static void test_attention_masks(void **state) {
    (void)state;
    /* a mask over the scores, broadcast over batch and heads */
    attn_case(I64(2, 3, 5, 8), I64(2, 3, 8, 7), I64(2, 3, 7, 6), I64(5, 7), NULL, 0.35f);
    /* a padding mask per batch: [B, 1, 1, Sk] */
    attn_case(I64(2, 3, 5, 8), I64(2, 3, 8, 7), I64(2, 3, 7, 6), I64(2, 1, 1, 7), NULL, 0.5f);
    /* causal: -inf above the diagonal, as where_mask makes it */
    float causal[36];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            causal[i * 6 + j] = j > i ? -INFINITY : 0.0f;
    attn_case(I64(2, 2, 6, 8), I64(2, 2, 8, 6), I64(2, 2, 6, 4), I64(1, 1, 6, 6), causal, 0.3f);
}

static void test_attention_grouped(void **state) {
    (void)state;
    /* grouped-query: [B, Hkv, G, S, D] queries, one K/V per group */
    attn_case(I64(2, 2, 3, 5, 8), I64(2, 2, 1, 8, 5), I64(2, 2, 1, 5, 6), I64(5, 5), NULL, 0.3f);
    /* multi-query: one K/V head for all four query heads */
    attn_case(I64(2, 4, 5, 8), I64(2, 1, 8, 7), I64(2, 1, 7, 8), NULL, 0, NULL, 0.3f);
}

/* ---- RotaryEmbedding -------------------------------------------------------------- */

static void rot_case(const int64_t *x, size_t rx, const int64_t *cs, size_t rc) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", x, rx);
    tc_const(&t, "cos", cs, rc, NULL);
    tc_input(&t, "sin", cs, rc); /* one of them computed at run time */
    tc_node(&t, "RotaryEmbedding", "minfer", IN("x", "cos", "sin"), "y");
    tc_check(&t);
}

static void test_rotary(void **state) {
    (void)state;
    rot_case(I64(2, 4, 6, 8), I64(6, 8));       /* one table for every batch and head */
    rot_case(I64(2, 4, 6, 8), I64(2, 1, 6, 8)); /* per batch (position ids) */
    rot_case(I64(3, 5, 16), I64(1, 16));        /* one position */
    rot_case(I64(2, 2), I64(2));
}

/* ---- Slice, Split, Expand (providers/opencl/slice.c) ----------------------------- */

static void slice_case(const int64_t *x, size_t rx, const int64_t *starts, const int64_t *ends,
                       const int64_t *axes, const int64_t *steps, size_t n) {
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", x, rx);
    tc_const_i64(&t, "b", &(int64_t){(int64_t)n}, 1, starts);
    tc_const_i64(&t, "e", &(int64_t){(int64_t)n}, 1, ends);
    tc_const_i64(&t, "a", &(int64_t){(int64_t)n}, 1, axes);
    tc_const_i64(&t, "s", &(int64_t){(int64_t)n}, 1, steps);
    tc_node(&t, "Slice", NULL, IN("x", "b", "e", "a", "s"), "y");
    tc_check(&t);
}

static void test_slice(void **state) {
    (void)state;
    /* ViT's class token: x[:, 0:1, :] */
    slice_case(I64(2, 17, 8), (const int64_t[]){0}, (const int64_t[]){1}, (const int64_t[]){1},
               (const int64_t[]){1}, 1);
    /* the second half of the last axis, to the end (INT64_MAX) */
    slice_case(I64(2, 3, 5, 8), (const int64_t[]){4}, (const int64_t[]){INT64_MAX},
               (const int64_t[]){-1}, (const int64_t[]){1}, 1);
    /* steps, a negative step, clamped bounds, two axes */
    slice_case(I64(4, 9, 6), (const int64_t[]){1, -1}, (const int64_t[]){100, -100},
               (const int64_t[]){1, 2}, (const int64_t[]){3, -2}, 2);
    /* empty */
    slice_case(I64(3, 4), (const int64_t[]){2}, (const int64_t[]){2}, (const int64_t[]){0},
               (const int64_t[]){1}, 1);
}

static void test_split_expand(void **state) {
    (void)state;
    /* GPT-2's q, k, v = qkv.split(d, dim=2): the three parts added */
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 5, 24));
    tc_const_i64(&t, "sp", I64(3), (const int64_t[]){8, 8, 8});
    const char *outs[3] = {"q", "k", "v"};
    size_t idx;
    assert_int_equal(minfer_builder_add_node(t.b, "Split", NULL, "split",
                                             (const char *const[]){"x", "sp"}, 2, outs, 3, &idx),
                     MINFER_OK);
    minfer_builder_set_attr_int(t.b, idx, "axis", 2);
    tc_node(&t, "Mul", NULL, IN("q", "k"), "qk");
    tc_node(&t, "Sub", NULL, IN("qk", "v"), "y");
    tc_check(&t);
    /* uneven parts, no split given (opset 18: num_outputs, the last smaller) */
    tc_init(&t, 18);
    tc_input(&t, "x", I64(7, 3));
    const char *outs2[2] = {"a", "b"};
    assert_int_equal(minfer_builder_add_node(t.b, "Split", NULL, "split",
                                             (const char *const[]){"x"}, 1, outs2, 2, &idx),
                     MINFER_OK);
    minfer_builder_set_attr_int(t.b, idx, "num_outputs", 2);
    tc_const_i64(&t, "starts", I64(1), (const int64_t[]){0});
    tc_const_i64(&t, "ends", I64(1), (const int64_t[]){3});
    tc_const_i64(&t, "axes", I64(1), (const int64_t[]){0});
    tc_node(&t, "Slice", NULL, IN("a", "starts", "ends", "axes"), "a3");
    tc_node(&t, "Add", NULL, IN("a3", "b"), "y");
    tc_check(&t);
    /* grouped-query K/V: [B, Hkv, 1, S, D] expanded to [B, Hkv, G, S, D] */
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 2, 1, 5, 4));
    tc_const_i64(&t, "shape", I64(5), (const int64_t[]){2, 2, 3, 5, 4});
    tc_node(&t, "Expand", NULL, IN("x", "shape"), "y");
    tc_check(&t);
    /* a shape of lower rank, and 1s that keep the input's dims */
    tc_init(&t, 13);
    tc_input(&t, "x", I64(3, 1, 6));
    tc_const_i64(&t, "shape", I64(2), (const int64_t[]){4, 1});
    tc_node(&t, "Expand", NULL, IN("x", "shape"), "y");
    tc_check(&t);
}

/* ---- The exporters' patterns, fused by the optimizer ------------------------------ */

/* x [2, 6, 16] -> RMSNorm as the exporters write it -> r; self-attention
 * over r, causal through a constant Where (where_mask) -> y. */
static void test_patterns_on_opencl_alone(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 6, 16));
    tc_const(&t, "two", NULL, 0, (const float[]){2.0f});
    tc_const(&t, "eps", NULL, 0, (const float[]){1e-6f});
    tc_const(&t, "scale", I64(16), NULL);
    tc_const(&t, "div", NULL, 0, (const float[]){4.0f});
    tc_const(&t, "ninf", NULL, 0, (const float[]){-INFINITY});
    minfer_tensor *c = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_BOOL, (const int64_t[]){6, 6}, 2, &c),
                     MINFER_OK);
    unsigned char *cb = minfer_tensor_data(c);
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            cb[i * 6 + j] = j <= i;
    assert_int_equal(minfer_builder_add_initializer(t.b, "causal", c), MINFER_OK);
    minfer_tensor_free(c);
    tc_node(&t, "Pow", NULL, IN("x", "two"), "sq");
    size_t k = tc_node(&t, "ReduceMean", NULL, IN("sq"), "ms");
    minfer_builder_set_attr_ints(t.b, k, "axes", (const int64_t[]){-1}, 1);
    tc_node(&t, "Add", NULL, IN("ms", "eps"), "mse");
    tc_node(&t, "Sqrt", NULL, IN("mse"), "rt");
    tc_node(&t, "Reciprocal", NULL, IN("rt"), "inv");
    tc_node(&t, "Mul", NULL, IN("x", "inv"), "nrm");
    tc_node(&t, "Mul", NULL, IN("nrm", "scale"), "r");
    k = tc_node(&t, "Transpose", NULL, IN("r"), "rt2");
    minfer_builder_set_attr_ints(t.b, k, "perm", (const int64_t[]){0, 2, 1}, 3);
    tc_node(&t, "MatMul", NULL, IN("r", "rt2"), "s");
    tc_node(&t, "Div", NULL, IN("s", "div"), "sd");
    tc_node(&t, "Where", NULL, IN("causal", "sd", "ninf"), "sm");
    tc_node(&t, "Softmax", NULL, IN("sm"), "p");
    tc_node(&t, "MatMul", NULL, IN("p", "r"), "y");
    tc_check_ops(&t, (const char *const[]){"RMSNormalization", "Attention"}, 2);
}

/* LLaMA's rotate-half, as exported: Slice the halves of the last axis,
 * Concat(Neg(x2), x1), X * Cos + R * Sin: one RotaryEmbedding on opencl. */
static void test_rotary_pattern_on_opencl_alone(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", I64(2, 3, 5, 8));
    tc_const(&t, "cos", I64(5, 8), NULL);
    tc_const(&t, "sin", I64(5, 8), NULL);
    tc_const_i64(&t, "zero", I64(1), (const int64_t[]){0});
    tc_const_i64(&t, "half", I64(1), (const int64_t[]){4});
    tc_const_i64(&t, "end", I64(1), (const int64_t[]){INT64_MAX});
    tc_const_i64(&t, "axis", I64(1), (const int64_t[]){-1});
    tc_const_i64(&t, "one", I64(1), (const int64_t[]){1});
    tc_node(&t, "Slice", NULL, IN("x", "zero", "half", "axis", "one"), "x1");
    tc_node(&t, "Slice", NULL, IN("x", "half", "end", "axis", "one"), "x2");
    tc_node(&t, "Neg", NULL, IN("x2"), "nx2");
    size_t k = tc_node(&t, "Concat", NULL, IN("nx2", "x1"), "rh");
    minfer_builder_set_attr_int(t.b, k, "axis", -1);
    tc_node(&t, "Mul", NULL, IN("x", "cos"), "xc");
    tc_node(&t, "Mul", NULL, IN("rh", "sin"), "rs");
    tc_node(&t, "Add", NULL, IN("xc", "rs"), "y");
    tc_check_ops(&t, (const char *const[]){"RotaryEmbedding"}, 1);
}

/* ---- passes ----------------------------------------------------------------------- */

static int have_device(void) {
    cl_uint np = 0, nd = 0;
    cl_platform_id plats[16];
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0)
        return 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_uint n = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &n) == CL_SUCCESS)
            nd += n;
    }
    return nd > 0;
}

static int pass_fp16(void **state) {
    (void)state;
    g_opts = "fp16=1";
    g_rtol = 1e-2f;
    g_atol = 1e-2f;
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_attention_plain),
        cmocka_unit_test(test_attention_masks),
        cmocka_unit_test(test_attention_grouped),
        cmocka_unit_test(test_rotary),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_split_expand),
        cmocka_unit_test(test_patterns_on_opencl_alone),
        cmocka_unit_test(test_rotary_pattern_on_opencl_alone),
    };
    if (!have_device()) {
        print_message("skipping: no OpenCL platform or device\n");
        return 77;
    }
    int failed = cmocka_run_group_tests_name("opencl fused float32", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("opencl fused fp16=1", tests, pass_fp16, NULL);
    return failed != 0;
}
