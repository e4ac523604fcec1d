/*
 * oneDNN int8 convolutions and matrix products (providers/onednn/quant.c)
 * against the CPU provider (the reference) on the same builder graphs:
 * QLinearConv, ConvInteger, QLinearMatMul and MatMulInteger with uint8 and
 * int8 data, per-tensor and per-channel scales, zero points (odd ones, on
 * rounding ties), saturation at both ends, shifted uint8 weights, and
 * zero points computed in the graph; com.microsoft QLinearAdd between
 * them against the contrib plugin. Scales are powers of two where the
 * results must be equal: the multiplier is then exact in float and double,
 * and ties fall on x.5 exactly. Each graph runs on {"onednn"} alone (every
 * node must be placed there) at 1 and 2 threads. Weights oneDNN cannot
 * take (uint8 beyond int8 after their zero point) must be declined, the
 * node left to the CPU provider.
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

#define MAX_IN 4
#define INTS(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define NAMES(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

typedef struct qcase {
    minfer_graph_builder *b;
    size_t n_in;
    const char *names[MAX_IN];
    minfer_tensor *inputs[MAX_IN];
    uint32_t seed;
} qcase;

static uint32_t next(qcase *t) {
    t->seed = t->seed * 1664525u + 1013904223u;
    return t->seed >> 8;
}

/* A tensor of dtype with values lo..hi (ints) drawn at random, or the
 * given floats when vals is set. */
static minfer_tensor *make(qcase *t, int32_t dtype, const int64_t *dims, size_t rank, int lo,
                           int hi, const float *vals) {
    minfer_tensor *x = NULL;
    assert_int_equal(minfer_tensor_create(dtype, dims, rank, &x), MINFER_OK);
    void *d = minfer_tensor_data(x);
    for (int64_t i = 0; i < minfer_tensor_numel(x); i++) {
        int v = lo + (int)(next(t) % (uint32_t)(hi - lo + 1));
        switch (dtype) {
        case MINFER_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
        case MINFER_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
        case MINFER_DTYPE_INT32: ((int32_t *)d)[i] = v; break;
        default: ((float *)d)[i] = vals ? vals[i] : (float)v; break;
        }
    }
    return x;
}

static void init(qcase *t, uint32_t seed) {
    memset(t, 0, sizeof *t);
    t->seed = seed;
    assert_int_equal(minfer_builder_create(13, &t->b), MINFER_OK);
}

static void input(qcase *t, const char *name, int32_t dtype, const int64_t *dims, size_t rank,
                  int lo, int hi) {
    assert_true(t->n_in < MAX_IN);
    assert_int_equal(minfer_builder_add_input(t->b, name, dtype, dims, rank, NULL), MINFER_OK);
    t->names[t->n_in] = name;
    t->inputs[t->n_in++] = make(t, dtype, dims, rank, lo, hi, NULL);
}

static void cnst(qcase *t, const char *name, int32_t dtype, const int64_t *dims, size_t rank,
                 int lo, int hi) {
    minfer_tensor *x = make(t, dtype, dims, rank, lo, hi, NULL);
    assert_int_equal(minfer_builder_add_initializer(t->b, name, x), MINFER_OK);
    minfer_tensor_free(x);
}

static void fconst(qcase *t, const char *name, const int64_t *dims, size_t rank,
                   const float *vals) {
    minfer_tensor *x = make(t, MINFER_DTYPE_FLOAT, dims, rank, 0, 0, vals);
    assert_int_equal(minfer_builder_add_initializer(t->b, name, x), MINFER_OK);
    minfer_tensor_free(x);
}

static size_t node(qcase *t, const char *op, const char *const *in, size_t n_in) {
    size_t idx;
    const char *out = "y";
    assert_int_equal(minfer_builder_add_node(t->b, op, NULL, op, in, n_in, &out, 1, &idx),
                     MINFER_OK);
    return idx;
}

/* Runs on providers (n of them) at threads; *where: the provider of the
 * graph's one node. */
static minfer_tensor *run(qcase *t, const char *const *providers, size_t n, int threads,
                          char *where, size_t where_size) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *out = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers(opt, providers, n), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, threads), MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("%s: session not created: %s", providers[0], minfer_last_error());
    minfer_node_placement p;
    assert_int_equal(minfer_session_node_count(s), 1);
    assert_int_equal(minfer_session_node_placement(s, 0, &p), MINFER_OK);
    snprintf(where, where_size, "%s", p.provider);
    st = minfer_session_run(s, t->names, (const minfer_tensor *const *)t->inputs, t->n_in, NULL,
                            &out, 1);
    if (st != MINFER_OK)
        fail_msg("%s: run failed: %s", providers[0], minfer_last_error());
    minfer_session_free(s);
    return out;
}

static double elem(const minfer_tensor *x, int64_t i) {
    const void *d = minfer_tensor_data(x);
    switch (minfer_tensor_dtype(x)) {
    case MINFER_DTYPE_UINT8: return ((const uint8_t *)d)[i];
    case MINFER_DTYPE_INT8: return ((const int8_t *)d)[i];
    case MINFER_DTYPE_FLOAT: return ((const float *)d)[i];
    default: return ((const int32_t *)d)[i];
    }
}

/* "y" on onednn (1 and 2 threads) against cpu: equal when exact, else
 * within one step. Returns the number of elements at the type's bounds
 * (saturated) in the reference, for the callers that want some. */
static int64_t check(qcase *t, int exact) {
    static const char *const cpu[] = {"cpu"}, *const dnn[] = {"onednn"};
    char where[32];
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
    minfer_tensor *want = run(t, cpu, 1, 1, where, sizeof where);
    int64_t sat = 0, n = minfer_tensor_numel(want);
    int32_t dt = minfer_tensor_dtype(want);
    for (int64_t i = 0; i < n; i++) {
        double v = elem(want, i);
        sat += dt == MINFER_DTYPE_UINT8 ? (v == 0 || v == 255)
               : dt == MINFER_DTYPE_INT8 ? (v == -128 || v == 127)
                                         : 0;
    }
    for (int threads = 1; threads <= 2; threads++) {
        minfer_tensor *got = run(t, dnn, 1, threads, where, sizeof where);
        assert_string_equal(where, "onednn");
        assert_int_equal(minfer_tensor_dtype(got), dt);
        assert_int_equal(minfer_tensor_numel(got), n);
        for (int64_t i = 0; i < n; i++) {
            double d = fabs(elem(got, i) - elem(want, i));
            if (exact ? d != 0 : d > 1)
                fail_msg("%d threads, element %lld: onednn %g, cpu %g", threads, (long long)i,
                         elem(got, i), elem(want, i));
        }
        minfer_tensor_free(got);
    }
    minfer_tensor_free(want);
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
    return sat;
}

/* The node must be left to cpu by {"onednn", "cpu"}. */
static void check_declined(qcase *t) {
    static const char *const both[] = {"onednn", "cpu"};
    char where[32];
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
    minfer_tensor *got = run(t, both, 2, 1, where, sizeof where);
    assert_string_equal(where, "cpu");
    minfer_tensor_free(got);
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
}

/* QLinearConv operands: x [1, 8, 9, 9] of xdt, w [M, 8/group, 3, 3] of
 * wdt; scales xs, ws (1 or M), ys; zero points; bias when given. */
typedef struct qconv {
    int32_t xdt, wdt, ydt;
    int64_t M, group;
    float xs, ys;
    const float *ws;
    int64_t n_ws;
    int xz, wz, yz;
    int bias;
    int xlo, xhi, wlo, whi;
} qconv;

static void build_qlinearconv(qcase *t, const qconv *c) {
    input(t, "x", c->xdt, INTS(1, 8, 9, 9), c->xlo, c->xhi);
    fconst(t, "xs", INTS(1), &c->xs);
    cnst(t, "xz", c->xdt, INTS(1), c->xz, c->xz);
    cnst(t, "w", c->wdt, INTS(c->M, 8 / c->group, 3, 3), c->wlo, c->whi);
    fconst(t, "ws", &c->n_ws, 1, c->ws);
    cnst(t, "wz", c->wdt, INTS(1), c->wz, c->wz);
    fconst(t, "ys", INTS(1), &c->ys);
    cnst(t, "yz", c->ydt, INTS(1), c->yz, c->yz);
    if (c->bias)
        cnst(t, "B", MINFER_DTYPE_INT32, &c->M, 1, -300, 300);
    size_t n = node(t, "QLinearConv",
                    (const char *const[]){"x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "B"},
                    c->bias ? 9 : 8);
    minfer_builder_set_attr_ints(t->b, n, "pads", INTS(1, 0, 2, 1));
    minfer_builder_set_attr_ints(t->b, n, "strides", INTS(2, 1));
    minfer_builder_set_attr_int(t->b, n, "group", c->group);
}

/* u8 x (zero point 131), s8 w, u8 y with an odd zero point (3): the
 * multiplier 1/8 puts every sum = 4 mod 8 on a tie. */
static void test_qlinearconv_ties(void **state) {
    (void)state;
    qcase t;
    init(&t, 11);
    static const float ws = 0.25f;
    qconv c = {MINFER_DTYPE_UINT8, MINFER_DTYPE_INT8, MINFER_DTYPE_UINT8, 16, 1, 0.5f, 1.0f,
               &ws, 1, 131, 0, 3, 1, 120, 142, -6, 6};
    build_qlinearconv(&t, &c);
    check(&t, 1);
}

/* s8 x and y with zero points, per-channel scales, two groups, and inputs
 * wide enough that y saturates at both ends. */
static void test_qlinearconv_per_channel_saturate(void **state) {
    (void)state;
    qcase t;
    init(&t, 12);
    static const float ws[8] = {0.5f, 0.25f, 0.125f, 1.0f, 0.0625f, 0.5f, 2.0f, 0.03125f};
    qconv c = {MINFER_DTYPE_INT8, MINFER_DTYPE_INT8, MINFER_DTYPE_INT8, 8, 2, 0.25f, 2.0f,
               ws, 8, -5, 0, 7, 1, -128, 127, -128, 127};
    build_qlinearconv(&t, &c);
    assert_true(check(&t, 1) > 0);
}

/* uint8 weights with zero point 128 (ORT's u8u8 models): shifted into s8
 * at prepare. */
static void test_qlinearconv_u8_weights(void **state) {
    (void)state;
    qcase t;
    init(&t, 13);
    static const float ws = 0.125f;
    qconv c = {MINFER_DTYPE_UINT8, MINFER_DTYPE_UINT8, MINFER_DTYPE_UINT8, 16, 1, 0.25f, 0.5f,
               &ws, 1, 7, 128, 128, 0, 0, 255, 0, 255};
    build_qlinearconv(&t, &c);
    check(&t, 1);
}

/* uint8 weights with zero point 0 above 127: no int8 form, declined. */
static void test_qlinearconv_u8_weights_declined(void **state) {
    (void)state;
    qcase t;
    init(&t, 14);
    static const float ws = 0.125f;
    qconv c = {MINFER_DTYPE_UINT8, MINFER_DTYPE_UINT8, MINFER_DTYPE_UINT8, 16, 1, 0.25f, 0.5f,
               &ws, 1, 7, 0, 128, 0, 0, 255, 0, 255};
    build_qlinearconv(&t, &c);
    check_declined(&t);
}

/* Scales that are not powers of two: the same float multiplier as the CPU
 * provider's (ONNX Runtime's), the same results. */
static void test_qlinearconv_any_scale(void **state) {
    (void)state;
    qcase t;
    init(&t, 15);
    static const float ws[16] = {0.011f, 0.013f, 0.017f, 0.019f, 0.023f, 0.029f, 0.031f, 0.037f,
                                 0.041f, 0.043f, 0.047f, 0.053f, 0.059f, 0.061f, 0.067f, 0.071f};
    qconv c = {MINFER_DTYPE_UINT8, MINFER_DTYPE_INT8, MINFER_DTYPE_UINT8, 16, 1, 0.0173f, 0.0911f,
               ws, 16, 100, 0, 60, 1, 0, 255, -127, 127};
    build_qlinearconv(&t, &c);
    check(&t, 1);
}

/* ConvInteger: u8 x with its zero point a graph input (as from
 * DynamicQuantizeLinear), u8 w with zero point 128; int32 sums exact. */
static void test_convinteger(void **state) {
    (void)state;
    qcase t;
    init(&t, 16);
    input(&t, "x", MINFER_DTYPE_UINT8, INTS(2, 6, 8, 7), 0, 255);
    input(&t, "xz", MINFER_DTYPE_UINT8, INTS(1), 90, 90);
    cnst(&t, "w", MINFER_DTYPE_UINT8, INTS(12, 6, 3, 3), 0, 255);
    cnst(&t, "wz", MINFER_DTYPE_UINT8, INTS(1), 128, 128);
    size_t n = node(&t, "ConvInteger", NAMES("x", "w", "xz", "wz"));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    check(&t, 1);
}

/* ConvInteger with uint8 weights whose zero point leaves differences
 * outside int8 (zero point 200: -200..55, quantize_dynamic's uint8
 * weights): two int8 convolutions whose int32 sums add, on oneDNN, the
 * same sums as the CPU provider's; with padding and a runtime x zero
 * point, and 1x1 without padding and a constant one (folded into a bias). */
static void test_convinteger_split_weights(void **state) {
    (void)state;
    qcase t;
    init(&t, 18);
    input(&t, "x", MINFER_DTYPE_UINT8, INTS(1, 6, 9, 8), 0, 255);
    input(&t, "xz", MINFER_DTYPE_UINT8, INTS(1), 77, 77);
    cnst(&t, "w", MINFER_DTYPE_UINT8, INTS(10, 6, 3, 3), 0, 255);
    cnst(&t, "wz", MINFER_DTYPE_UINT8, INTS(1), 200, 200);
    size_t n = node(&t, "ConvInteger", NAMES("x", "w", "xz", "wz"));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    check(&t, 1);
    qcase u;
    init(&u, 19);
    input(&u, "x", MINFER_DTYPE_UINT8, INTS(2, 16, 5, 5), 0, 255);
    cnst(&u, "xz", MINFER_DTYPE_UINT8, INTS(1), 133, 133);
    cnst(&u, "w", MINFER_DTYPE_UINT8, INTS(24, 16, 1, 1), 0, 255);
    cnst(&u, "wz", MINFER_DTYPE_UINT8, INTS(1), 3, 3);
    node(&u, "ConvInteger", NAMES("x", "w", "xz", "wz"));
    check(&u, 1);
}

/* ConvInteger whose sums may pass 2^24 (oneDNN's sums pass through float:
 * an int8 x at sums of 2.6e7 came out rounded): run in pieces of the
 * reduction whose int32 results add exactly. Sums of 3.5e7 (3 pieces, s8
 * weights), uint8 weights whose zero point splits them too with a runtime
 * x zero point and padding (2 pieces, the dynamic U-Net's form), and a
 * reduction that needs more than 4 pieces: declined, not rounded. */
static void test_convinteger_pieces(void **state) {
    (void)state;
    qcase t;
    init(&t, 17);
    input(&t, "x", MINFER_DTYPE_UINT8, INTS(1, 128, 4, 4), 240, 255);
    cnst(&t, "w", MINFER_DTYPE_INT8, INTS(4, 128, 3, 3), 120, 127);
    node(&t, "ConvInteger", NAMES("x", "w"));
    check(&t, 1);
    qcase u;
    init(&u, 23);
    input(&u, "x", MINFER_DTYPE_UINT8, INTS(1, 128, 6, 5), 0, 255);
    input(&u, "xz", MINFER_DTYPE_UINT8, INTS(1), 3, 3);
    cnst(&u, "w", MINFER_DTYPE_UINT8, INTS(16, 128, 3, 3), 0, 255);
    cnst(&u, "wz", MINFER_DTYPE_UINT8, INTS(1), 100, 100);
    size_t n = node(&u, "ConvInteger", NAMES("x", "w", "xz", "wz"));
    minfer_builder_set_attr_ints(u.b, n, "pads", INTS(1, 1, 1, 1));
    check(&u, 1);
    qcase v;
    init(&v, 29);
    input(&v, "x", MINFER_DTYPE_UINT8, INTS(1, 1024, 3, 3), 0, 255);
    cnst(&v, "w", MINFER_DTYPE_INT8, INTS(2, 1024, 3, 3), 127, 127);
    node(&v, "ConvInteger", NAMES("x", "w"));
    check_declined(&v);
}

/* QLinearMatMul: u8 a [2, 5, 40] x s8 b [40, 24] with scales and zero
 * points per column of b, an odd y zero point, ties (multipliers 2^-8 to
 * 2^-12) and saturation. */
static void test_qlinearmatmul(void **state) {
    (void)state;
    qcase t;
    init(&t, 18);
    static const float as = 0.5f, ys = 32.0f;
    float bs[24];
    for (int i = 0; i < 24; i++)
        bs[i] = ldexpf(1.0f, -(i % 5)) / 4;
    input(&t, "a", MINFER_DTYPE_UINT8, INTS(2, 5, 40), 0, 255);
    fconst(&t, "as", INTS(1), &as);
    cnst(&t, "az", MINFER_DTYPE_UINT8, INTS(1), 121, 121);
    cnst(&t, "b", MINFER_DTYPE_INT8, INTS(40, 24), -100, 100);
    fconst(&t, "bs", INTS(24), bs);
    cnst(&t, "bz", MINFER_DTYPE_INT8, INTS(24), -3, 3);
    fconst(&t, "ys", INTS(1), &ys);
    cnst(&t, "yz", MINFER_DTYPE_UINT8, INTS(1), 129, 129);
    node(&t, "QLinearMatMul", NAMES("a", "as", "az", "b", "bs", "bz", "ys", "yz"));
    assert_true(check(&t, 1) > 0);
}

/* MatMulInteger: u8 A with a runtime zero point, u8 B with a zero point
 * per column (shifted into s8 at prepare). */
static void test_matmulinteger(void **state) {
    (void)state;
    qcase t;
    init(&t, 19);
    input(&t, "a", MINFER_DTYPE_UINT8, INTS(3, 33), 0, 255);
    input(&t, "az", MINFER_DTYPE_UINT8, INTS(1), 77, 77);
    cnst(&t, "b", MINFER_DTYPE_UINT8, INTS(33, 10), 60, 190);
    cnst(&t, "bz", MINFER_DTYPE_UINT8, INTS(10), 125, 128);
    node(&t, "MatMulInteger", NAMES("a", "b", "az", "bz"));
    check(&t, 1);
    /* B - bz down to -200: no int8 form for a product (no split into two
     * halves as for ConvInteger), declined (it ran the first half alone and
     * gave wrong sums: -281389 for -341212). */
    qcase u;
    init(&u, 31);
    input(&u, "a", MINFER_DTYPE_UINT8, INTS(3, 33), 0, 255);
    cnst(&u, "b", MINFER_DTYPE_UINT8, INTS(33, 10), 0, 255);
    cnst(&u, "az", MINFER_DTYPE_UINT8, INTS(1), 0, 0);
    cnst(&u, "bz", MINFER_DTYPE_UINT8, INTS(1), 200, 200);
    node(&u, "MatMulInteger", NAMES("a", "b", "az", "bz"));
    check_declined(&u);
}

/* Two QLinearConvs in a row (the first's u8 output kept in the layout its
 * primitive chose, channels-last here, for the second) and a
 * DynamicQuantizeLinear (on the CPU provider) feeding a ConvInteger its
 * data and runtime zero point: graphs of several nodes, run on
 * {"onednn", "cpu"}, against cpu alone. */
static void check_chain(qcase *t, const char *const *outs, size_t n_out, int want_dnn) {
    static const char *const cpu[] = {"cpu"}, *const both[] = {"onednn", "cpu"};
    const char *const *lists[2] = {cpu, both};
    minfer_tensor *res[2][2] = {{NULL}};
    for (size_t o = 0; o < n_out; o++)
        assert_int_equal(minfer_builder_add_output(t->b, outs[o]), MINFER_OK);
    for (int l = 0; l < 2; l++) {
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        assert_int_equal(minfer_options_create(&opt), MINFER_OK);
        assert_int_equal(minfer_options_set_providers(opt, lists[l], l + 1), MINFER_OK);
        assert_int_equal(minfer_options_set_threads(opt, 2), MINFER_OK);
        if (minfer_session_create_from_builder(t->b, opt, &s) != MINFER_OK)
            fail_msg("session: %s", minfer_last_error());
        minfer_options_free(opt);
        int on_dnn = 0;
        for (size_t i = 0; i < minfer_session_node_count(s); i++) {
            minfer_node_placement p;
            assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
            on_dnn += !strcmp(p.provider, "onednn");
        }
        if (l == 1 && on_dnn < want_dnn)
            fail_msg("%d nodes on onednn, want %d", on_dnn, want_dnn);
        if (minfer_session_run(s, t->names, (const minfer_tensor *const *)t->inputs, t->n_in,
                               NULL, res[l], n_out) != MINFER_OK)
            fail_msg("run: %s", minfer_last_error());
        minfer_session_free(s);
    }
    for (size_t o = 0; o < n_out; o++) {
        assert_int_equal(minfer_tensor_numel(res[0][o]), minfer_tensor_numel(res[1][o]));
        for (int64_t i = 0; i < minfer_tensor_numel(res[0][o]); i++)
            if (elem(res[0][o], i) != elem(res[1][o], i))
                fail_msg("%s element %lld: onednn %g, cpu %g", outs[o], (long long)i,
                         elem(res[1][o], i), elem(res[0][o], i));
        minfer_tensor_free(res[0][o]);
        minfer_tensor_free(res[1][o]);
    }
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
}

static void test_qlinearconv_chain(void **state) {
    (void)state;
    qcase t;
    init(&t, 20);
    static const float xs = 0.5f, ws = 0.125f, ys = 2.0f;
    input(&t, "x", MINFER_DTYPE_UINT8, INTS(1, 16, 12, 12), 0, 255);
    fconst(&t, "s", INTS(1), &xs);
    fconst(&t, "ws", INTS(1), &ws);
    fconst(&t, "ys", INTS(1), &ys);
    cnst(&t, "z", MINFER_DTYPE_UINT8, INTS(1), 128, 128);
    cnst(&t, "wz", MINFER_DTYPE_INT8, INTS(1), 0, 0);
    cnst(&t, "w0", MINFER_DTYPE_INT8, INTS(16, 16, 3, 3), -20, 20);
    cnst(&t, "w1", MINFER_DTYPE_INT8, INTS(8, 16, 1, 1), -60, 60);
    size_t idx;
    const char *o0 = "h", *o1 = "y";
    assert_int_equal(minfer_builder_add_node(t.b, "QLinearConv", NULL, "c0",
                                             NAMES("x", "s", "z", "w0", "ws", "wz", "ys", "z"),
                                             &o0, 1, &idx),
                     MINFER_OK);
    minfer_builder_set_attr_ints(t.b, idx, "pads", INTS(1, 1, 1, 1));
    assert_int_equal(minfer_builder_add_node(t.b, "QLinearConv", NULL, "c1",
                                             NAMES("h", "ys", "z", "w1", "ws", "wz", "ys", "z"),
                                             &o1, 1, &idx),
                     MINFER_OK);
    check_chain(&t, (const char *const[]){"y", "h"}, 2, 2);
}

static void test_dynamic_quantize_convinteger(void **state) {
    (void)state;
    qcase t;
    init(&t, 21);
    assert_true(t.n_in < MAX_IN);
    static const int64_t xd[4] = {1, 6, 10, 10};
    assert_int_equal(minfer_builder_add_input(t.b, "xf", MINFER_DTYPE_FLOAT, xd, 4, NULL),
                     MINFER_OK);
    t.names[t.n_in] = "xf";
    t.inputs[t.n_in] = make(&t, MINFER_DTYPE_INT32, xd, 4, -400, 900, NULL);
    /* floats from the ints drawn: -4.00 to 9.00 */
    minfer_tensor *xf = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, xd, 4, &xf), MINFER_OK);
    for (int64_t i = 0; i < minfer_tensor_numel(xf); i++)
        ((float *)minfer_tensor_data(xf))[i] =
            (float)((const int32_t *)minfer_tensor_data(t.inputs[t.n_in]))[i] / 100.0f;
    minfer_tensor_free(t.inputs[t.n_in]);
    t.inputs[t.n_in++] = xf;
    cnst(&t, "w", MINFER_DTYPE_INT8, INTS(8, 6, 3, 3), -127, 127);
    size_t idx;
    const char *dq[3] = {"xq", "xs", "xz"}, *y = "y";
    assert_int_equal(minfer_builder_add_node(t.b, "DynamicQuantizeLinear", NULL, "dq",
                                             NAMES("xf"), dq, 3, &idx),
                     MINFER_OK);
    assert_int_equal(minfer_builder_add_node(t.b, "ConvInteger", NULL, "ci",
                                             NAMES("xq", "w", "xz"), &y, 1, &idx),
                     MINFER_OK);
    check_chain(&t, (const char *const[]){"y"}, 1, 1);
}

/* com.microsoft QLinearAdd on oneDNN (computed in the layout its inputs
 * arrive in) against the contrib plugin's kernel (ORT's values): a
 * residual sum between two QLinearConvs, the first's output channels-last
 * and the other operand a plain input reordered to it, the sum kept
 * channels-last for the second convolution; MobileNet V2's scales and
 * zero points (where ORT's order of operations moves ties), uint8 and
 * int8; all three nodes on onednn. A broadcast B is left to the plugin. */
static void qadd_chain(int32_t dt, uint32_t seed) {
    qcase t;
    init(&t, seed);
    assert_int_equal(minfer_builder_add_opset(t.b, "com.microsoft", 1), MINFER_OK);
    int u8 = dt == MINFER_DTYPE_UINT8;
    static const float xs = 0.04724602f, rs = 0.03807073f, ss = 0.05645178f, ws = 0.0625f;
    input(&t, "x", dt, INTS(1, 16, 12, 12), u8 ? 0 : -128, u8 ? 255 : 127);
    input(&t, "r", dt, INTS(1, 16, 12, 12), u8 ? 0 : -128, u8 ? 255 : 127);
    fconst(&t, "xs", INTS(1), &xs);
    fconst(&t, "rs", INTS(1), &rs);
    fconst(&t, "ss", INTS(1), &ss);
    fconst(&t, "ws", INTS(1), &ws);
    cnst(&t, "xz", dt, INTS(1), u8 ? 127 : -1, u8 ? 127 : -1);
    cnst(&t, "rz", dt, INTS(1), u8 ? 138 : 10, u8 ? 138 : 10);
    cnst(&t, "sz", dt, INTS(1), u8 ? 132 : 4, u8 ? 132 : 4);
    cnst(&t, "wz", MINFER_DTYPE_INT8, INTS(1), 0, 0);
    cnst(&t, "w0", MINFER_DTYPE_INT8, INTS(16, 16, 3, 3), -20, 20);
    cnst(&t, "w1", MINFER_DTYPE_INT8, INTS(8, 16, 1, 1), -60, 60);
    size_t idx;
    const char *h = "h", *sum = "s", *y = "y";
    assert_int_equal(minfer_builder_add_node(t.b, "QLinearConv", NULL, "c0",
                                             NAMES("x", "xs", "xz", "w0", "ws", "wz", "xs", "xz"),
                                             &h, 1, &idx),
                     MINFER_OK);
    minfer_builder_set_attr_ints(t.b, idx, "pads", INTS(1, 1, 1, 1));
    assert_int_equal(minfer_builder_add_node(t.b, "QLinearAdd", "com.microsoft", "add",
                                             NAMES("h", "xs", "xz", "r", "rs", "rz", "ss", "sz"),
                                             &sum, 1, &idx),
                     MINFER_OK);
    assert_int_equal(minfer_builder_add_node(t.b, "QLinearConv", NULL, "c1",
                                             NAMES("s", "ss", "sz", "w1", "ws", "wz", "ss", "sz"),
                                             &y, 1, &idx),
                     MINFER_OK);
    check_chain(&t, (const char *const[]){"y", "s"}, 2, 3);
}

static void test_qlinearadd(void **state) {
    (void)state;
    qadd_chain(MINFER_DTYPE_UINT8, 41);
    qadd_chain(MINFER_DTYPE_INT8, 43);
    /* 21 elements: the 8-wide loop and its scalar tail */
    qcase s;
    init(&s, 45);
    assert_int_equal(minfer_builder_add_opset(s.b, "com.microsoft", 1), MINFER_OK);
    static const float s1 = 0.04724602f, s2 = 0.03807073f, s3 = 0.05645178f;
    input(&s, "a", MINFER_DTYPE_INT8, INTS(3, 7), -128, 127);
    input(&s, "b", MINFER_DTYPE_INT8, INTS(3, 7), -128, 127);
    fconst(&s, "as", INTS(1), &s1);
    fconst(&s, "bs", INTS(1), &s2);
    fconst(&s, "cs", INTS(1), &s3);
    cnst(&s, "az", MINFER_DTYPE_INT8, INTS(1), -1, -1);
    cnst(&s, "bz", MINFER_DTYPE_INT8, INTS(1), 10, 10);
    cnst(&s, "cz", MINFER_DTYPE_INT8, INTS(1), 4, 4);
    size_t k;
    const char *sy = "y";
    assert_int_equal(minfer_builder_add_node(s.b, "QLinearAdd", "com.microsoft", "add",
                                             NAMES("a", "as", "az", "b", "bs", "bz", "cs", "cz"),
                                             &sy, 1, &k),
                     MINFER_OK);
    check_chain(&s, (const char *const[]){"y"}, 1, 1);
    qcase t;
    init(&t, 47);
    assert_int_equal(minfer_builder_add_opset(t.b, "com.microsoft", 1), MINFER_OK);
    static const float sa = 0.02f, sb = 0.03f, sc = 0.04f;
    input(&t, "a", MINFER_DTYPE_UINT8, INTS(2, 3, 5), 0, 255);
    fconst(&t, "as", INTS(1), &sa);
    cnst(&t, "az", MINFER_DTYPE_UINT8, INTS(1), 100, 100);
    cnst(&t, "b", MINFER_DTYPE_UINT8, INTS(5), 0, 255);
    fconst(&t, "bs", INTS(1), &sb);
    cnst(&t, "bz", MINFER_DTYPE_UINT8, INTS(1), 90, 90);
    fconst(&t, "cs", INTS(1), &sc);
    cnst(&t, "cz", MINFER_DTYPE_UINT8, INTS(1), 120, 120);
    size_t idx;
    const char *y = "y";
    assert_int_equal(minfer_builder_add_node(t.b, "QLinearAdd", "com.microsoft", "add",
                                             NAMES("a", "as", "az", "b", "bs", "bz", "cs", "cz"),
                                             &y, 1, &idx),
                     MINFER_OK);
    check_chain(&t, (const char *const[]){"y"}, 1, 0);
}

/* Cast of int32 to float on oneDNN (a reorder in the layout its input
 * arrives in) against the CPU provider: after a ConvInteger whose sums
 * pass 2^24 (run in pieces: the int32 sums exact, rounded to float by the
 * Cast alike, to nearest even), and of an int32 input with values around
 * 2^24 and 2^31; both nodes on onednn. */
static void test_cast_int32(void **state) {
    (void)state;
    qcase t;
    init(&t, 53);
    input(&t, "x", MINFER_DTYPE_UINT8, INTS(1, 128, 5, 5), 240, 255);
    cnst(&t, "w", MINFER_DTYPE_INT8, INTS(8, 128, 3, 3), 120, 127);
    size_t idx;
    const char *c = "c", *y = "y";
    assert_int_equal(minfer_builder_add_node(t.b, "ConvInteger", NULL, "ci", NAMES("x", "w"), &c,
                                             1, &idx),
                     MINFER_OK);
    minfer_builder_set_attr_ints(t.b, idx, "pads", INTS(1, 1, 1, 1));
    assert_int_equal(minfer_builder_add_node(t.b, "Cast", NULL, "cast", NAMES("c"), &y, 1, &idx),
                     MINFER_OK);
    minfer_builder_set_attr_int(t.b, idx, "to", MINFER_DTYPE_FLOAT);
    check_chain(&t, (const char *const[]){"y", "c"}, 2, 2);
    qcase u;
    init(&u, 59);
    input(&u, "i", MINFER_DTYPE_INT32, INTS(3, 50), 16777000, 16777600);
    assert_int_equal(minfer_builder_add_node(u.b, "Cast", NULL, "cast", NAMES("i"), &y, 1, &idx),
                     MINFER_OK);
    minfer_builder_set_attr_int(u.b, idx, "to", MINFER_DTYPE_FLOAT);
    int32_t *d = minfer_tensor_data(u.inputs[0]);
    d[0] = INT32_MAX, d[1] = INT32_MIN, d[2] = -16777217, d[3] = 2147483583;
    check_chain(&u, (const char *const[]){"y"}, 1, 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qlinearconv_ties),
        cmocka_unit_test(test_qlinearconv_per_channel_saturate),
        cmocka_unit_test(test_qlinearconv_u8_weights),
        cmocka_unit_test(test_qlinearconv_u8_weights_declined),
        cmocka_unit_test(test_qlinearconv_any_scale),
        cmocka_unit_test(test_convinteger),
        cmocka_unit_test(test_convinteger_pieces),
        cmocka_unit_test(test_convinteger_split_weights),
        cmocka_unit_test(test_qlinearmatmul),
        cmocka_unit_test(test_matmulinteger),
        cmocka_unit_test(test_qlinearconv_chain),
        cmocka_unit_test(test_dynamic_quantize_convinteger),
        cmocka_unit_test(test_qlinearadd),
        cmocka_unit_test(test_cast_int32),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
