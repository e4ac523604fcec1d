/*
 * float16 graphs on the oneDNN provider against the CPU provider: each
 * node computes in float (f16 inputs reordered to f32 as they arrive, f16
 * constants packed from f16 once) and rounds its outputs to float16 (to
 * nearest even), as the CPU provider (providers/cpu/widen.c) and ONNX
 * Runtime's CPU path do per op. Every node must be placed on onednn, at 1
 * and 2 threads; the outputs agree within a few float16 steps (the two sum
 * in other orders before rounding).
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

#define INTS(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define NAMES(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

/* float -> float16 bits, round to nearest even (normal and subnormal). */
static uint16_t to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, e = (x >> 23) & 0xff, m = x & 0x7fffffu;
    if (e == 0xff)
        return (uint16_t)(sign | 0x7c00u | (m ? 0x200u : 0));
    int32_t he = (int32_t)e - 127 + 15;
    if (he >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (he <= 0) {
        if (he < -10)
            return (uint16_t)sign;
        m |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - he), hm = m >> shift, rem = m & ((1u << shift) - 1),
                 half = 1u << (shift - 1);
        if (rem > half || (rem == half && (hm & 1)))
            hm++;
        return (uint16_t)(sign | hm);
    }
    uint32_t hm = m >> 13, rem = m & 0x1fffu;
    uint32_t h = sign | ((uint32_t)he << 10) | hm;
    if (rem > 0x1000u || (rem == 0x1000u && (hm & 1)))
        h++;
    return (uint16_t)h;
}

static float from_half(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu;
    float f;
    if (e == 0)
        f = ldexpf((float)m, -24);
    else if (e == 31)
        f = m ? NAN : INFINITY;
    else
        f = ldexpf((float)(m | 0x400u), (int)e - 25);
    uint32_t x;
    memcpy(&x, &f, 4);
    x |= sign;
    memcpy(&f, &x, 4);
    return f;
}

typedef struct hcase {
    minfer_graph_builder *b;
    minfer_tensor *x;
    uint32_t seed;
} hcase;

static minfer_tensor *half_tensor(hcase *t, const int64_t *dims, size_t rank, float lo,
                                  float hi) {
    minfer_tensor *x = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT16, dims, rank, &x), MINFER_OK);
    uint16_t *d = minfer_tensor_data(x);
    for (int64_t i = 0; i < minfer_tensor_numel(x); i++) {
        t->seed = t->seed * 1664525u + 1013904223u;
        d[i] = to_half(lo + (hi - lo) * (float)(t->seed >> 8) / 16777216.0f);
    }
    return x;
}

static void init(hcase *t, uint32_t seed, const int64_t *dims, size_t rank) {
    memset(t, 0, sizeof *t);
    t->seed = seed;
    assert_int_equal(minfer_builder_create(17, &t->b), MINFER_OK);
    assert_int_equal(minfer_builder_add_input(t->b, "x", MINFER_DTYPE_FLOAT16, dims, rank, NULL),
                     MINFER_OK);
    t->x = half_tensor(t, dims, rank, -1.0f, 1.0f);
}

static void hconst(hcase *t, const char *name, const int64_t *dims, size_t rank, float lo,
                   float hi) {
    minfer_tensor *c = half_tensor(t, dims, rank, lo, hi);
    assert_int_equal(minfer_builder_add_initializer(t->b, name, c), MINFER_OK);
    minfer_tensor_free(c);
}

static size_t node(hcase *t, const char *op, const char *const *in, size_t n_in,
                   const char *out) {
    size_t idx;
    assert_int_equal(minfer_builder_add_node(t->b, op, NULL, out, in, n_in, &out, 1, &idx),
                     MINFER_OK);
    return idx;
}

static minfer_tensor *run(hcase *t, const char *provider, int threads) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *out = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers(opt, &provider, 1), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, threads), MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("%s: session not created: %s", provider, minfer_last_error());
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        if (strcmp(p.provider, provider) != 0)
            fail_msg("node %s (%s) on %s", p.node_name, p.op_type, p.provider);
    }
    const char *name = "x";
    if (minfer_session_run(s, &name, (const minfer_tensor *const *)&t->x, 1, NULL, &out, 1) !=
        MINFER_OK)
        fail_msg("%s: run failed: %s", provider, minfer_last_error());
    minfer_session_free(s);
    return out;
}

/* "y" (float16) on onednn against cpu. */
static void check(hcase *t) {
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
    minfer_tensor *want = run(t, "cpu", 1);
    assert_int_equal(minfer_tensor_dtype(want), MINFER_DTYPE_FLOAT16);
    const uint16_t *w = minfer_tensor_data(want);
    for (int threads = 1; threads <= 2; threads++) {
        minfer_tensor *got = run(t, "onednn", threads);
        assert_int_equal(minfer_tensor_dtype(got), MINFER_DTYPE_FLOAT16);
        assert_int_equal(minfer_tensor_numel(got), minfer_tensor_numel(want));
        const uint16_t *g = minfer_tensor_data(got);
        for (int64_t i = 0; i < minfer_tensor_numel(want); i++) {
            float a = from_half(g[i]), e = from_half(w[i]);
            if (!(fabsf(a - e) <= 2e-3f + 4e-3f * fabsf(e)))
                fail_msg("%d threads, element %lld: onednn %g, cpu %g", threads, (long long)i,
                         (double)a, (double)e);
        }
        minfer_tensor_free(got);
    }
    minfer_tensor_free(want);
    minfer_tensor_free(t->x);
    minfer_builder_free(t->b);
}

/* Conv (f16 weights and bias) -> Relu -> MaxPool -> BatchNormalization ->
 * GlobalAveragePool. */
static void test_half_cnn(void **state) {
    (void)state;
    hcase t;
    init(&t, 31, INTS(1, 8, 20, 20));
    hconst(&t, "w", INTS(16, 8, 3, 3), -0.3f, 0.3f);
    hconst(&t, "b", INTS(16), -0.2f, 0.2f);
    hconst(&t, "sc", INTS(16), 0.5f, 1.5f);
    hconst(&t, "sh", INTS(16), -0.5f, 0.5f);
    hconst(&t, "mu", INTS(16), -0.1f, 0.1f);
    hconst(&t, "var", INTS(16), 0.5f, 2.0f);
    size_t n = node(&t, "Conv", NAMES("x", "w", "b"), "c");
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    node(&t, "Relu", NAMES("c"), "r");
    n = node(&t, "MaxPool", NAMES("r"), "p");
    minfer_builder_set_attr_ints(t.b, n, "kernel_shape", INTS(2, 2));
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    node(&t, "BatchNormalization", NAMES("p", "sc", "sh", "mu", "var"), "bn");
    node(&t, "GlobalAveragePool", NAMES("bn"), "y");
    check(&t);
}

/* MatMul (f16 B) -> Add -> Sigmoid -> Mul -> Softmax, and Gemm with transB
 * and a bias. */
static void test_half_dense(void **state) {
    (void)state;
    hcase t;
    init(&t, 32, INTS(6, 48));
    hconst(&t, "B", INTS(48, 40), -0.3f, 0.3f);
    hconst(&t, "c", INTS(40), -1.0f, 1.0f);
    hconst(&t, "W", INTS(24, 40), -0.3f, 0.3f);
    hconst(&t, "gb", INTS(24), -0.5f, 0.5f);
    node(&t, "MatMul", NAMES("x", "B"), "m");
    node(&t, "Add", NAMES("m", "c"), "a");
    node(&t, "Sigmoid", NAMES("a"), "s");
    node(&t, "Mul", NAMES("a", "s"), "silu");
    size_t n = node(&t, "Gemm", NAMES("silu", "W", "gb"), "g");
    minfer_builder_set_attr_int(t.b, n, "transB", 1);
    node(&t, "Softmax", NAMES("g"), "y");
    check(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_cnn),
        cmocka_unit_test(test_half_dense),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
