/*
 * The CPU provider's fast paths for Resize and Pad (providers/cpu/resize.c,
 * indexing.c) against slower forms of the same computation:
 *   Resize  float input takes the separable fast path when only the last two
 *           axes change; a double input takes the general tap-product loop.
 *           One graph computes both (Cast to double, Resize, Cast back), for
 *           every mode, coordinate transformation, nearest mode, scales and
 *           sizes, up and down, and both must agree to float rounding.
 *           Nearest must agree exactly.
 *   Pad     constant mode goes by rows (fill, copy, fill); the expected
 *           output is computed here element by element, with negative pads
 *           (crops) and a non-zero value.
 *   Optimizer  a zero Pad folded into the Conv or AveragePool after it and
 *           a one-input Concat removed (passes_cnn.c), x * HardSigmoid(x)
 *           taken as HardSwish by the Conv fusion (passes_fuse.c): each
 *           graph runs as written (level 0) and optimized, the outputs
 *           agree, and the node is gone exactly when the rewrite is exact.
 * Sessions run on the CPU provider with 2 threads, so the row jobs split.
 */
#include <stdlib.h>

#include "minfer/builder.h"
#include "test_util.h"

static uint32_t seed = 777u;

static float rndf(void) {
    seed = seed * 1664525u + 1013904223u;
    return (float)((seed >> 8) & 0xffff) / 4096.0f - 8.0f;
}

static minfer_tensor *random_input(const int64_t *dims, size_t rank) {
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, rank, &x));
    float *d = minfer_tensor_data(x);
    for (int64_t i = 0; i < minfer_tensor_numel(x); i++)
        d[i] = rndf();
    return x;
}

/* Runs b on the CPU provider (2 threads, optimization level `level`) with
 * input "x"; fills outs. Returns how many nodes of op type `count` the
 * session has after optimization (NULL: 0). */
static int run_opt(minfer_graph_builder *b, int level, const minfer_tensor *x,
                   minfer_tensor **outs, size_t n_out, const char *count) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    const char *prov = "cpu", *name = "x";
    int found = 0;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers(opt, &prov, 1));
    assert_ok(minfer_options_set_threads(opt, 2));
    assert_ok(minfer_options_set_optimization_level(opt, level));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    for (size_t i = 0; count && i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_ok(minfer_session_node_placement(s, i, &p));
        found += !strcmp(p.op_type, count);
    }
    assert_ok(minfer_session_run(s, &name, &x, 1, NULL, outs, n_out));
    minfer_session_free(s);
    return found;
}

static void run_cpu(minfer_graph_builder *b, const minfer_tensor *x, minfer_tensor **outs,
                    size_t n_out) {
    run_opt(b, 3, x, outs, n_out, NULL);
}

/* |a - b| <= 1e-5 + 1e-5 |b| element by element, same shape. */
static void assert_close(const minfer_tensor *a, const minfer_tensor *b) {
    assert_int_equal(minfer_tensor_numel(a), minfer_tensor_numel(b));
    assert_int_equal(minfer_tensor_rank(a), minfer_tensor_rank(b));
    for (size_t d = 0; d < minfer_tensor_rank(a); d++)
        assert_int_equal(minfer_tensor_dims(a)[d], minfer_tensor_dims(b)[d]);
    const float *x = minfer_tensor_data(a), *y = minfer_tensor_data(b);
    for (int64_t i = 0; i < minfer_tensor_numel(a); i++)
        if (!(fabsf(x[i] - y[i]) <= 1e-5f + 1e-5f * fabsf(y[i])))
            fail_msg("element %lld: %.9g, want %.9g", (long long)i, (double)x[i], (double)y[i]);
}

/* ---- Resize ----------------------------------------------------------------- */

typedef struct rcase {
    const char *mode, *coord, *nearest;
    int64_t x[4];
    size_t rank;
    const float *scales; /* or */
    const int64_t *sizes;
    int exclude_outside;
} rcase;

static void resize_node(minfer_graph_builder *b, const rcase *c, const char *in, const char *out,
                        const char *name) {
    const char *ins[] = {in, "", c->scales ? "scales" : "", c->sizes ? "sizes" : ""};
    size_t n;
    assert_ok(minfer_builder_add_node(b, "Resize", NULL, name, ins, 4, &out, 1, &n));
    assert_ok(minfer_builder_set_attr_string(b, n, "mode", c->mode));
    assert_ok(minfer_builder_set_attr_string(b, n, "coordinate_transformation_mode", c->coord));
    if (c->nearest)
        assert_ok(minfer_builder_set_attr_string(b, n, "nearest_mode", c->nearest));
    if (c->exclude_outside)
        assert_ok(minfer_builder_set_attr_int(b, n, "exclude_outside", 1));
}

static void cast_node(minfer_graph_builder *b, const char *in, const char *out, int64_t to,
                      const char *name) {
    size_t n;
    assert_ok(minfer_builder_add_node(b, "Cast", NULL, name, &in, 1, &out, 1, &n));
    assert_ok(minfer_builder_set_attr_int(b, n, "to", to));
}

static void resize_case(const rcase *c) {
    minfer_graph_builder *b = NULL;
    minfer_tensor *t = NULL, *outs[2] = {NULL, NULL};
    int64_t rd = (int64_t)c->rank;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, c->x, c->rank, NULL));
    if (c->scales) {
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, &rd, 1, &t));
        memcpy(minfer_tensor_data(t), c->scales, c->rank * sizeof(float));
        assert_ok(minfer_builder_add_initializer(b, "scales", t));
    } else {
        assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, &rd, 1, &t));
        memcpy(minfer_tensor_data(t), c->sizes, c->rank * sizeof(int64_t));
        assert_ok(minfer_builder_add_initializer(b, "sizes", t));
    }
    minfer_tensor_free(t);
    resize_node(b, c, "x", "fast", "resize_float");
    cast_node(b, "x", "xd", MINFER_DTYPE_DOUBLE, "to_double");
    resize_node(b, c, "xd", "yd", "resize_double");
    cast_node(b, "yd", "general", MINFER_DTYPE_FLOAT, "to_float");
    assert_ok(minfer_builder_add_output(b, "fast"));
    assert_ok(minfer_builder_add_output(b, "general"));
    minfer_tensor *x = random_input(c->x, c->rank);
    run_cpu(b, x, outs, 2);
    size_t rank = minfer_tensor_rank(outs[1]);
    assert_int_equal(minfer_tensor_rank(outs[0]), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(minfer_tensor_dims(outs[0])[d], minfer_tensor_dims(outs[1])[d]);
    const float *f = minfer_tensor_data(outs[0]), *g = minfer_tensor_data(outs[1]);
    int exact = !strcmp(c->mode, "nearest");
    for (int64_t i = 0; i < minfer_tensor_numel(outs[1]); i++) {
        float tol = exact ? 0.0f : 1e-5f + 1e-5f * fabsf(g[i]);
        if (!(fabsf(f[i] - g[i]) <= tol))
            fail_msg("%s/%s/%s: element %lld: fast %.9g, general %.9g", c->mode, c->coord,
                     c->nearest ? c->nearest : "-", (long long)i, (double)f[i], (double)g[i]);
    }
    minfer_tensor_free(outs[0]);
    minfer_tensor_free(outs[1]);
    minfer_tensor_free(x);
    minfer_builder_free(b);
}

static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_half_pixel_for_nn"};
static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                       "ceil"};

/* Every mode and coordinate transformation over a few shapes: integer and
 * fractional upsampling by scales, sizes up and down, one spatial axis kept,
 * rank 3 and an output of one pixel. */
static void resize_all(const char *mode, const char *nearest, int exclude_outside) {
    static const float up2[] = {1, 1, 2, 2}, frac[] = {1, 1, 2.5f, 1.75f}, down[] = {1, 1, 0.5f,
                                                                                     0.6f};
    static const int64_t s_up[] = {2, 3, 13, 21}, s_down[] = {2, 3, 3, 4}, s_keep[] = {2, 3, 6,
                                                                                       17},
                         s_one[] = {2, 3, 1, 1}, s_r3[] = {3, 9, 300};
    for (size_t k = 0; k < sizeof coords / sizeof coords[0]; k++) {
        rcase base = {mode, coords[k], nearest, {2, 3, 6, 7}, 4, NULL, NULL, exclude_outside};
        rcase c = base;
        c.scales = up2;
        resize_case(&c);
        c.scales = frac;
        resize_case(&c);
        c.scales = down;
        resize_case(&c);
        c = base;
        c.sizes = s_up;
        resize_case(&c);
        c.sizes = s_down;
        resize_case(&c);
        c.sizes = s_keep;
        resize_case(&c);
        c.sizes = s_one;
        resize_case(&c);
        /* N = 1, C = 1: axes of size 1 (pytorch_half_pixel reads them at
         * -0.5, two taps of 0.5 on index 0). */
        c = base;
        c.x[0] = 1, c.x[1] = 1;
        c.sizes = (const int64_t[]){1, 1, 48, 56};
        resize_case(&c);
        c = base;
        c.x[0] = 3, c.x[1] = 5, c.x[2] = 130, c.rank = 3;
        c.sizes = s_r3;
        resize_case(&c);
    }
}

static void test_resize_nearest(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof nearests / sizeof nearests[0]; k++)
        resize_all("nearest", nearests[k], 0);
}

static void test_resize_linear(void **state) {
    (void)state;
    resize_all("linear", NULL, 0);
    resize_all("linear", NULL, 1);
}

static void test_resize_cubic(void **state) {
    (void)state;
    resize_all("cubic", NULL, 0);
    resize_all("cubic", NULL, 1);
}

/* A resize of the channel axis is not the fast path's form: the general
 * loop must still give the same result for float as for double. */
static void test_resize_channel_axis(void **state) {
    (void)state;
    static const float sc[] = {1, 2, 1.5f, 1};
    rcase c = {"linear", "half_pixel", NULL, {1, 3, 4, 5}, 4, sc, NULL, 0};
    resize_case(&c);
}

/* A Resize to the input's own size (SSDLite's transform on a 320x320
 * image) in every mode and coordinate transformation, by scales of 1 and by
 * sizes: the output is the input, bit for bit, for float and double
 * (tf_half_pixel_for_nn samples x + 0.5: for linear and cubic a shift,
 * which must not be taken for a copy). */
static void test_resize_same_size(void **state) {
    (void)state;
    static const char *const modes[] = {"nearest", "linear", "cubic"};
    static const float ones[] = {1, 1, 1, 1};
    static const int64_t same[] = {2, 3, 6, 7};
    for (size_t m = 0; m < 3; m++)
        for (size_t k = 0; k < sizeof coords / sizeof coords[0]; k++)
            for (int by_sizes = 0; by_sizes < 2; by_sizes++) {
                rcase c = {modes[m], coords[k], NULL, {2, 3, 6, 7}, 4, by_sizes ? NULL : ones,
                           by_sizes ? same : NULL, 0};
                resize_case(&c); /* float and double agree */
                int shift = m > 0 && !strcmp(coords[k], "tf_half_pixel_for_nn");
                minfer_graph_builder *b = NULL;
                minfer_tensor *t = NULL, *out = NULL;
                int64_t four = 4;
                assert_ok(minfer_builder_create(13, &b));
                assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, c.x, 4, NULL));
                assert_ok(minfer_tensor_create(by_sizes ? MINFER_DTYPE_INT64 : MINFER_DTYPE_FLOAT,
                                               &four, 1, &t));
                memcpy(minfer_tensor_data(t), by_sizes ? (const void *)same : (const void *)ones,
                       by_sizes ? sizeof same : sizeof ones);
                assert_ok(minfer_builder_add_initializer(b, by_sizes ? "sizes" : "scales", t));
                minfer_tensor_free(t);
                resize_node(b, &c, "x", "y", "resize");
                assert_ok(minfer_builder_add_output(b, "y"));
                minfer_tensor *x = random_input(c.x, 4);
                run_cpu(b, x, &out, 1);
                assert_int_equal(minfer_tensor_numel(out), minfer_tensor_numel(x));
                if ((memcmp(minfer_tensor_data(out), minfer_tensor_data(x),
                            (size_t)minfer_tensor_numel(x) * sizeof(float)) != 0) != shift)
                    fail_msg("%s/%s by %s: %s the input", c.mode, c.coord,
                             by_sizes ? "sizes" : "scales", shift ? "wrongly" : "not");
                minfer_tensor_free(out);
                minfer_tensor_free(x);
                minfer_builder_free(b);
            }
}

/* ---- Pad -------------------------------------------------------------------- */

static void pad_case(const int64_t *xd, size_t rank, const int64_t *pads, float value) {
    minfer_graph_builder *b = NULL;
    minfer_tensor *t = NULL, *out = NULL;
    int64_t np = 2 * (int64_t)rank, one = 1, od[4];
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xd, rank, NULL));
    assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, &np, 1, &t));
    memcpy(minfer_tensor_data(t), pads, (size_t)np * sizeof *pads);
    assert_ok(minfer_builder_add_initializer(b, "pads", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, &one, 0, &t));
    *(float *)minfer_tensor_data(t) = value;
    assert_ok(minfer_builder_add_initializer(b, "value", t));
    minfer_tensor_free(t);
    const char *ins[] = {"x", "pads", "value"}, *o = "y";
    assert_ok(minfer_builder_add_node(b, "Pad", NULL, "pad", ins, 3, &o, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_tensor *x = random_input(xd, rank);
    run_cpu(b, x, &out, 1);
    int64_t n = 1, xs[4];
    for (size_t d = rank; d-- > 0;) {
        od[d] = xd[d] + pads[d] + pads[rank + d];
        xs[d] = d + 1 < rank ? xs[d + 1] * xd[d + 1] : 1;
        n *= od[d];
    }
    assert_int_equal(minfer_tensor_rank(out), rank);
    for (size_t d = 0; d < rank; d++)
        assert_int_equal(minfer_tensor_dims(out)[d], od[d]);
    const float *y = minfer_tensor_data(out), *xv = minfer_tensor_data(x);
    for (int64_t i = 0; i < n; i++) {
        int64_t rem = i, off = 0;
        int inside = 1;
        for (size_t d = rank; d-- > 0;) {
            int64_t c = rem % od[d] - pads[d];
            rem /= od[d];
            inside &= c >= 0 && c < xd[d];
            off += c * xs[d];
        }
        float want = inside ? xv[off] : value;
        if (y[i] != want)
            fail_msg("element %lld: %g, want %g", (long long)i, (double)y[i], (double)want);
    }
    minfer_tensor_free(out);
    minfer_tensor_free(x);
    minfer_builder_free(b);
}

static void test_pad_constant(void **state) {
    (void)state;
    /* Inception's form: one pixel around H and W of an NCHW tensor. */
    pad_case((const int64_t[]){2, 3, 35, 35}, 4, (const int64_t[]){0, 0, 1, 1, 0, 0, 1, 1}, 0);
    pad_case((const int64_t[]){2, 3, 5, 7}, 4, (const int64_t[]){1, 0, 2, 0, 0, 2, 1, 3}, 1.5f);
    /* Crops (negative pads) on the last and a middle axis. */
    pad_case((const int64_t[]){2, 6, 7}, 3, (const int64_t[]){0, -2, -3, 1, 1, 2}, -2);
    pad_case((const int64_t[]){2, 6, 7}, 3, (const int64_t[]){0, 0, 2, 0, -1, -4}, 0);
    /* The last axis cropped away to nothing: every row is fill. */
    pad_case((const int64_t[]){3, 4}, 2, (const int64_t[]){0, -4, 0, 2}, 3);
    pad_case((const int64_t[]){9}, 1, (const int64_t[]){4, 5}, 0.25f);
    /* Big enough that the rows split over both threads. */
    pad_case((const int64_t[]){1, 16, 64, 64}, 4, (const int64_t[]){0, 1, 2, 3, 0, 1, 2, 3}, 0);
}

/* ---- Optimizer: zero Pad into Conv / AveragePool, HardSwish gate ------------- */

/* x [1,3,9,8] -> Pad(pads, value) -> op (attributes set by the caller's
 * hook) -> y. Runs at level 0 (as written) and level 3; the outputs agree
 * and the Pad is gone at level 3 exactly when `folds`. */
typedef void (*attr_hook)(minfer_graph_builder *b, size_t node);

static void pad_then(const char *op, const int64_t *pads, float value, attr_hook hook,
                     int folds) {
    minfer_graph_builder *b = NULL;
    minfer_tensor *t = NULL, *want = NULL, *got = NULL;
    const int64_t xd[] = {1, 3, 9, 8}, wd[] = {4, 3, 3, 3}, eight = 8, one = 1;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xd, 4, NULL));
    assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, &eight, 1, &t));
    memcpy(minfer_tensor_data(t), pads, 8 * sizeof *pads);
    assert_ok(minfer_builder_add_initializer(b, "pads", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, &one, 0, &t));
    *(float *)minfer_tensor_data(t) = value;
    assert_ok(minfer_builder_add_initializer(b, "value", t));
    minfer_tensor_free(t);
    t = random_input(wd, 4);
    assert_ok(minfer_builder_add_initializer(b, "w", t));
    minfer_tensor_free(t);
    const char *pin[] = {"x", "pads", "value"}, *pout = "p", *oin[] = {"p", "w"}, *y = "y";
    size_t n;
    assert_ok(minfer_builder_add_node(b, "Pad", NULL, "pad", pin, 3, &pout, 1, NULL));
    assert_ok(minfer_builder_add_node(b, op, NULL, "op", oin, strcmp(op, "Conv") ? 1 : 2, &y, 1,
                                      &n));
    hook(b, n);
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_tensor *x = random_input(xd, 4);
    assert_int_equal(run_opt(b, 0, x, &want, 1, "Pad"), 1);
    assert_int_equal(run_opt(b, 3, x, &got, 1, "Pad"), folds ? 0 : 1);
    assert_close(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    minfer_tensor_free(x);
    minfer_builder_free(b);
}

static void hook_conv(minfer_graph_builder *b, size_t n) {
    assert_ok(minfer_builder_set_attr_ints(b, n, "pads", (const int64_t[]){1, 0, 0, 2}, 4));
    assert_ok(minfer_builder_set_attr_ints(b, n, "strides", (const int64_t[]){2, 1}, 2));
}
static void hook_avg(minfer_graph_builder *b, size_t n) {
    assert_ok(minfer_builder_set_attr_ints(b, n, "kernel_shape", (const int64_t[]){3, 3}, 2));
    assert_ok(minfer_builder_set_attr_ints(b, n, "strides", (const int64_t[]){1, 2}, 2));
}
static void hook_avg_padded_exclusive(minfer_graph_builder *b, size_t n) {
    hook_avg(b, n);
    assert_ok(minfer_builder_set_attr_ints(b, n, "pads", (const int64_t[]){1, 1, 1, 1}, 4));
}
static void hook_avg_padded_inclusive(minfer_graph_builder *b, size_t n) {
    hook_avg_padded_exclusive(b, n);
    assert_ok(minfer_builder_set_attr_int(b, n, "count_include_pad", 1));
}
static void hook_avg_ceil(minfer_graph_builder *b, size_t n) {
    hook_avg(b, n);
    assert_ok(minfer_builder_set_attr_int(b, n, "ceil_mode", 1));
}
static void hook_max(minfer_graph_builder *b, size_t n) {
    assert_ok(minfer_builder_set_attr_ints(b, n, "kernel_shape", (const int64_t[]){3, 3}, 2));
}

static void test_fold_pad(void **state) {
    (void)state;
    const int64_t sp[] = {0, 0, 1, 2, 0, 0, 1, 0}; /* H and W, uneven */
    pad_then("Conv", sp, 0, hook_conv, 1);
    /* The inception form: Pad 1 then a pool with no pads and the default
     * count_include_pad 0; the fold must count the zeros. */
    pad_then("AveragePool", (const int64_t[]){0, 0, 1, 1, 0, 0, 1, 1}, 0, hook_avg, 1);
    pad_then("AveragePool", sp, 0, hook_avg_padded_inclusive, 1);
    /* Not exact, left alone: a pool that excludes its own pads, ceil_mode,
     * MaxPool (pads are -inf), a non-zero value, a channel pad, a crop. */
    pad_then("AveragePool", sp, 0, hook_avg_padded_exclusive, 0);
    pad_then("AveragePool", sp, 0, hook_avg_ceil, 0);
    pad_then("MaxPool", sp, 0, hook_max, 0);
    pad_then("Conv", sp, 0.5f, hook_conv, 0);
    pad_then("AveragePool", (const int64_t[]){0, 1, 1, 1, 0, 0, 1, 1}, 0, hook_avg, 0);
    pad_then("Conv", (const int64_t[]){0, 0, 1, -1, 0, 0, 1, 1}, 0, hook_conv, 0);
}

/* Conv -> x * HardSigmoid(x) (alpha 1/6, beta 0.5: HardSwish as opset 13
 * spells it) becomes one FusedConv; another alpha stays three nodes. */
static void gate_case(float alpha, int fuses) {
    minfer_graph_builder *b = NULL;
    minfer_tensor *t = NULL, *want = NULL, *got = NULL;
    const int64_t xd[] = {1, 3, 9, 8}, wd[] = {4, 3, 3, 3};
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xd, 4, NULL));
    t = random_input(wd, 4);
    assert_ok(minfer_builder_add_initializer(b, "w", t));
    minfer_tensor_free(t);
    const char *cin[] = {"x", "w"}, *c = "c", *h = "h", *min[] = {"c", "h"}, *y = "y";
    size_t n;
    assert_ok(minfer_builder_add_node(b, "Conv", NULL, "conv", cin, 2, &c, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "HardSigmoid", NULL, "hs", &c, 1, &h, 1, &n));
    assert_ok(minfer_builder_set_attr_float(b, n, "alpha", alpha));
    assert_ok(minfer_builder_add_node(b, "Mul", NULL, "mul", min, 2, &y, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_tensor *x = random_input(xd, 4);
    assert_int_equal(run_opt(b, 0, x, &want, 1, "HardSigmoid"), 1);
    assert_int_equal(run_opt(b, 3, x, &got, 1, "HardSigmoid"), fuses ? 0 : 1);
    assert_close(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    minfer_tensor_free(x);
    minfer_builder_free(b);
}

static void test_hardswish_gate(void **state) {
    (void)state;
    gate_case(1.0f / 6.0f, 1);
    gate_case(0.2f, 0);
}

/* x -> [Relu ->] Concat(one input) [-> Relu] -> y: the Concat goes at level 3,
 * whether its output is read by a node or is the graph output. */
static void single_concat_case(int concat_last) {
    minfer_graph_builder *b = NULL;
    minfer_tensor *want = NULL, *got = NULL;
    const int64_t xd[] = {2, 3, 4};
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xd, 3, NULL));
    const char *x = "x", *r = "r", *y = "y", *c = "c";
    size_t n;
    if (concat_last) {
        assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu", &x, 1, &r, 1, NULL));
        assert_ok(minfer_builder_add_node(b, "Concat", NULL, "cat", &r, 1, &y, 1, &n));
    } else {
        assert_ok(minfer_builder_add_node(b, "Concat", NULL, "cat", &x, 1, &c, 1, &n));
        assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu", &c, 1, &y, 1, NULL));
    }
    assert_ok(minfer_builder_set_attr_int(b, n, "axis", -2));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_tensor *in = random_input(xd, 3);
    assert_int_equal(run_opt(b, 0, in, &want, 1, "Concat"), 1);
    assert_int_equal(run_opt(b, 3, in, &got, 1, "Concat"), 0);
    assert_close(got, want);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    minfer_tensor_free(in);
    minfer_builder_free(b);
}

static void test_single_concat(void **state) {
    (void)state;
    single_concat_case(0);
    single_concat_case(1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_nearest),
        cmocka_unit_test(test_resize_linear),
        cmocka_unit_test(test_resize_cubic),
        cmocka_unit_test(test_resize_channel_axis),
        cmocka_unit_test(test_resize_same_size),
        cmocka_unit_test(test_pad_constant),
        cmocka_unit_test(test_fold_pad),
        cmocka_unit_test(test_hardswish_gate),
        cmocka_unit_test(test_single_concat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
