/*
 * The random generators of the CPU provider (RandomUniform, RandomNormal,
 * their *Like forms, Bernoulli, Multinomial). Their draws cannot match the
 * ONNX backend tests' numpy references, so tests/conformance_expected.txt
 * lists those cases and this test checks what can be checked: shape,
 * element type, range, and mean / spread within a few standard errors on
 * a few thousand draws; a seed gives the same draws every run, and no seed
 * gives different ones.
 */
#include <stdlib.h>

#include "minfer/builder.h"
#include "test_util.h"

/* A one-node graph with optional input "x" (dtype, dims) and output "y". */
typedef struct graph1 {
    minfer_graph_builder *b;
    size_t node;
} graph1;

static graph1 one_node(const char *op, int64_t opset, minfer_dtype x_dtype, const int64_t *dims,
                       size_t rank) {
    graph1 g = {NULL, 0};
    const char *in[] = {"x"}, *out[] = {"y"};
    assert_ok(minfer_builder_create(opset, &g.b));
    if (x_dtype != MINFER_DTYPE_UNDEFINED)
        assert_ok(minfer_builder_add_input(g.b, "x", x_dtype, dims, rank, NULL));
    assert_ok(minfer_builder_add_node(g.b, op, NULL, "n0", in,
                                      x_dtype != MINFER_DTYPE_UNDEFINED ? 1 : 0, out, 1, &g.node));
    assert_ok(minfer_builder_add_output(g.b, "y"));
    return g;
}

static minfer_session *cpu_session(graph1 *g) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_session_create_from_builder(g->b, opt, &s));
    minfer_options_free(opt);
    minfer_builder_free(g->b);
    g->b = NULL;
    assert_non_null(s);
    return s;
}

/* Runs s (with x when given); returns the output. */
static minfer_tensor *run(minfer_session *s, const minfer_tensor *x) {
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {x};
    minfer_tensor *out = NULL;
    assert_ok(minfer_session_run(s, names, ins, x ? 1 : 0, NULL, &out, 1));
    assert_non_null(out);
    return out;
}

static void check_shape(const minfer_tensor *t, minfer_dtype dtype, const int64_t *dims,
                        size_t rank) {
    assert_int_equal(minfer_tensor_dtype(t), dtype);
    assert_int_equal(minfer_tensor_rank(t), rank);
    for (size_t i = 0; i < rank; i++)
        assert_int_equal(minfer_tensor_dims(t)[i], dims[i]);
}

static size_t numel(const minfer_tensor *t) {
    size_t n = 1;
    for (size_t i = 0; i < minfer_tensor_rank(t); i++)
        n *= (size_t)minfer_tensor_dims(t)[i];
    return n;
}

/* IEEE half to float (normal and subnormal numbers; the generators give no
 * infinities or NaNs). */
static double half_to_double(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
    return h & 0x8000 ? -v : v;
}

static double elem(const minfer_tensor *t, size_t i) {
    const void *d = minfer_tensor_data(t);
    switch (minfer_tensor_dtype(t)) {
    case MINFER_DTYPE_FLOAT: return ((const float *)d)[i];
    case MINFER_DTYPE_DOUBLE: return ((const double *)d)[i];
    case MINFER_DTYPE_FLOAT16: return half_to_double(((const uint16_t *)d)[i]);
    case MINFER_DTYPE_INT32: return ((const int32_t *)d)[i];
    case MINFER_DTYPE_INT64: return (double)((const int64_t *)d)[i];
    case MINFER_DTYPE_BOOL: return ((const uint8_t *)d)[i];
    default: fail_msg("unexpected dtype %d", (int)minfer_tensor_dtype(t));
    }
    return 0;
}

/* Every element in [lo, hi) (hi_open) or [lo, hi]; mean and standard
 * deviation returned. */
static void moments(const minfer_tensor *t, double lo, double hi, int hi_open, double *mean,
                    double *sd) {
    size_t n = numel(t);
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        double v = elem(t, i);
        if (!(v >= lo && (hi_open ? v < hi : v <= hi)))
            fail_msg("element %zu = %g outside [%g, %g%c", i, v, lo, hi, hi_open ? ')' : ']');
        s += v;
        s2 += v * v;
    }
    *mean = s / (double)n;
    *sd = sqrt(fmax(0, s2 / (double)n - *mean * *mean));
}

static int same_data(const minfer_tensor *a, const minfer_tensor *b) {
    return minfer_tensor_nbytes(a) == minfer_tensor_nbytes(b) &&
           memcmp(minfer_tensor_data(a), minfer_tensor_data(b), minfer_tensor_nbytes(a)) == 0;
}

/* ---- Tests ------------------------------------------------------------------ */

static void test_random_uniform(void **state) {
    (void)state;
    const int64_t shape[] = {100, 50};
    graph1 g = one_node("RandomUniform", 13, MINFER_DTYPE_UNDEFINED, NULL, 0);
    assert_ok(minfer_builder_set_attr_ints(g.b, g.node, "shape", shape, 2));
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "low", -2.0f));
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "high", 3.0f));
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "seed", 5.0f));
    minfer_session *s = cpu_session(&g);
    minfer_tensor *y = run(s, NULL), *y2 = run(s, NULL);
    check_shape(y, MINFER_DTYPE_FLOAT, shape, 2);
    double mean, sd;
    moments(y, -2, 3, 1, &mean, &sd);
    /* Uniform on [-2, 3): mean 0.5, sd 5 / sqrt(12) = 1.443; the standard
     * error of the mean over 5000 draws is 0.02. */
    assert_true(fabs(mean - 0.5) < 0.1);
    assert_true(fabs(sd - 1.443) < 0.07);
    assert_true(same_data(y, y2)); /* seeded: the same draws every run */
    minfer_tensor_free(y);
    minfer_tensor_free(y2);
    minfer_session_free(s);
}

static void test_random_normal(void **state) {
    (void)state;
    const int64_t shape[] = {4000};
    graph1 g = one_node("RandomNormal", 13, MINFER_DTYPE_UNDEFINED, NULL, 0);
    assert_ok(minfer_builder_set_attr_ints(g.b, g.node, "shape", shape, 1));
    assert_ok(minfer_builder_set_attr_int(g.b, g.node, "dtype", MINFER_DTYPE_DOUBLE));
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "mean", 1.0f));
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "scale", 2.0f));
    minfer_session *s = cpu_session(&g);
    minfer_tensor *y = run(s, NULL);
    check_shape(y, MINFER_DTYPE_DOUBLE, shape, 1);
    double mean, sd;
    moments(y, -1e9, 1e9, 1, &mean, &sd);
    /* Standard error of the mean: 2 / sqrt(4000) = 0.032. */
    assert_true(fabs(mean - 1.0) < 0.15);
    assert_true(fabs(sd - 2.0) < 0.12);
    /* No seed, yet both runs see the same draws: an op without inputs is
     * folded into a constant when the session's plan is built (core/plan/plan.c's
     * fold_node does not skip random ops as the optimizer's folding does).
     * test_unseeded_like checks fresh draws where nothing folds. */
    minfer_tensor_free(y);
    minfer_session_free(s);
}

/* Without a seed, every run draws afresh. */
static void test_unseeded_like(void **state) {
    (void)state;
    const int64_t dims[] = {1000};
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 1, &x));
    memset(minfer_tensor_data(x), 0, minfer_tensor_nbytes(x));
    graph1 g = one_node("RandomUniformLike", 13, MINFER_DTYPE_FLOAT, dims, 1);
    minfer_session *s = cpu_session(&g);
    minfer_tensor *y = run(s, x), *y2 = run(s, x);
    check_shape(y, MINFER_DTYPE_FLOAT, dims, 1);
    double mean, sd;
    moments(y2, 0, 1, 1, &mean, &sd);
    assert_false(same_data(y, y2));
    minfer_tensor_free(y);
    minfer_tensor_free(y2);
    minfer_session_free(s);

    /* With one, every run draws the same. */
    g = one_node("RandomUniformLike", 13, MINFER_DTYPE_FLOAT, dims, 1);
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "seed", 7.0f));
    s = cpu_session(&g);
    y = run(s, x);
    y2 = run(s, x);
    assert_true(same_data(y, y2));
    minfer_tensor_free(y);
    minfer_tensor_free(y2);
    minfer_session_free(s);
    minfer_tensor_free(x);
}

static void test_random_uniform_like(void **state) {
    (void)state;
    const int64_t dims[] = {40, 50};
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT16, dims, 2, &x));
    memset(minfer_tensor_data(x), 0, minfer_tensor_nbytes(x));

    /* The output takes the input's type and shape... */
    graph1 g = one_node("RandomUniformLike", 13, MINFER_DTYPE_FLOAT16, dims, 2);
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "seed", 1.0f));
    minfer_session *s = cpu_session(&g);
    minfer_tensor *y = run(s, x);
    check_shape(y, MINFER_DTYPE_FLOAT16, dims, 2);
    double mean, sd;
    moments(y, 0, 1, 1, &mean, &sd);
    assert_true(fabs(mean - 0.5) < 0.05);
    minfer_tensor_free(y);
    minfer_session_free(s);

    /* ...unless dtype says otherwise. */
    g = one_node("RandomNormalLike", 13, MINFER_DTYPE_FLOAT16, dims, 2);
    assert_ok(minfer_builder_set_attr_int(g.b, g.node, "dtype", MINFER_DTYPE_DOUBLE));
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "seed", 2.0f));
    s = cpu_session(&g);
    y = run(s, x);
    check_shape(y, MINFER_DTYPE_DOUBLE, dims, 2);
    moments(y, -1e9, 1e9, 1, &mean, &sd);
    assert_true(fabs(mean) < 0.1);
    assert_true(fabs(sd - 1.0) < 0.07);
    minfer_tensor_free(y);
    minfer_session_free(s);
    minfer_tensor_free(x);
}

static void test_bernoulli(void **state) {
    (void)state;
    const int64_t dims[] = {3, 2000};
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &x));
    float *p = minfer_tensor_data(x);
    for (size_t i = 0; i < 6000; i++)
        p[i] = i < 2000 ? 0.0f : i < 4000 ? 1.0f : 0.3f;

    graph1 g = one_node("Bernoulli", 15, MINFER_DTYPE_FLOAT, dims, 2);
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "seed", 0.0f));
    minfer_session *s = cpu_session(&g);
    minfer_tensor *y = run(s, x);
    check_shape(y, MINFER_DTYPE_FLOAT, dims, 2);
    double ones = 0;
    for (size_t i = 0; i < 6000; i++) {
        double v = elem(y, i);
        assert_true(v == 0 || v == 1);
        if (i < 2000)
            assert_true(v == 0);
        else if (i < 4000)
            assert_true(v == 1);
        else
            ones += v;
    }
    /* p = 0.3 over 2000 draws: standard error 0.010. */
    assert_true(fabs(ones / 2000 - 0.3) < 0.05);
    minfer_tensor_free(y);
    minfer_session_free(s);

    g = one_node("Bernoulli", 15, MINFER_DTYPE_FLOAT, dims, 2);
    assert_ok(minfer_builder_set_attr_int(g.b, g.node, "dtype", MINFER_DTYPE_BOOL));
    s = cpu_session(&g);
    y = run(s, x);
    check_shape(y, MINFER_DTYPE_BOOL, dims, 2);
    assert_true(elem(y, 0) == 0 && elem(y, 2000) == 1);
    minfer_tensor_free(y);
    minfer_session_free(s);
    minfer_tensor_free(x);
}

static void test_multinomial(void **state) {
    (void)state;
    const int64_t dims[] = {2, 3}, odims[] = {2, 4000};
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &x));
    float *l = minfer_tensor_data(x);
    /* Row 0: probabilities 0.2, 0.3, 0.5 as log-probabilities; row 1 all on class 2. */
    l[0] = logf(0.2f), l[1] = logf(0.3f), l[2] = logf(0.5f);
    l[3] = -100, l[4] = -100, l[5] = 0;

    graph1 g = one_node("Multinomial", 13, MINFER_DTYPE_FLOAT, dims, 2);
    assert_ok(minfer_builder_set_attr_int(g.b, g.node, "sample_size", 4000));
    assert_ok(minfer_builder_set_attr_int(g.b, g.node, "dtype", MINFER_DTYPE_INT64));
    assert_ok(minfer_builder_set_attr_float(g.b, g.node, "seed", 3.0f));
    minfer_session *s = cpu_session(&g);
    minfer_tensor *y = run(s, x);
    check_shape(y, MINFER_DTYPE_INT64, odims, 2);
    double count[3] = {0};
    for (size_t i = 0; i < 4000; i++) {
        double c = elem(y, i);
        assert_true(c == 0 || c == 1 || c == 2);
        count[(int)c] += 1;
        assert_true(elem(y, 4000 + i) == 2);
    }
    /* Standard errors about 0.008: allow 0.04. */
    assert_true(fabs(count[0] / 4000 - 0.2) < 0.04);
    assert_true(fabs(count[1] / 4000 - 0.3) < 0.04);
    assert_true(fabs(count[2] / 4000 - 0.5) < 0.04);
    minfer_tensor_free(y);
    minfer_session_free(s);

    /* The default type is int32 and sample_size 1. */
    g = one_node("Multinomial", 13, MINFER_DTYPE_FLOAT, dims, 2);
    s = cpu_session(&g);
    y = run(s, x);
    const int64_t one[] = {2, 1};
    check_shape(y, MINFER_DTYPE_INT32, one, 2);
    assert_true(elem(y, 1) == 2);
    minfer_tensor_free(y);
    minfer_session_free(s);
    minfer_tensor_free(x);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_uniform),
        cmocka_unit_test(test_random_normal),
        cmocka_unit_test(test_unseeded_like),
        cmocka_unit_test(test_random_uniform_like),
        cmocka_unit_test(test_bernoulli),
        cmocka_unit_test(test_multinomial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
