/*
 * The graph builder and session API end to end: graphs built in code run on
 * the CPU provider with known results; input/output info; run-time input and
 * output checks; dynamic batch; and the graph errors session creation must
 * catch before anything runs.
 */
#include <stdlib.h>

#include "test_util.h"

/* ---- Helpers ------------------------------------------------------------ */

static minfer_graph_builder *new_builder(void) {
    minfer_graph_builder *b = NULL;
    assert_ok(minfer_builder_create(13, &b));
    assert_non_null(b);
    return b;
}

/* A session on the CPU provider alone; fails the test on error. */
static minfer_session *cpu_session(const minfer_graph_builder *b) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    assert_non_null(s);
    return s;
}

/* Session creation that must fail; returns the status. */
static minfer_status cpu_session_fails(const minfer_graph_builder *b) {
    minfer_options *opt = NULL;
    minfer_session *s = (minfer_session *)&opt; /* must come back NULL */
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    minfer_status st = minfer_session_create_from_builder(b, opt, &s);
    minfer_options_free(opt);
    assert_int_not_equal(st, MINFER_OK);
    assert_null(s);
    assert_true(strlen(minfer_last_error()) > 0);
    return st;
}

static minfer_tensor *f32_tensor(const int64_t *dims, size_t rank, const float *values) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, rank, &t));
    memcpy(minfer_tensor_data(t), values, minfer_tensor_nbytes(t));
    return t;
}

static minfer_tensor *i64_tensor(const int64_t *dims, size_t rank, const int64_t *values) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, dims, rank, &t));
    memcpy(minfer_tensor_data(t), values, minfer_tensor_nbytes(t));
    return t;
}

static void add_f32_init(minfer_graph_builder *b, const char *name, const int64_t *dims,
                         size_t rank, const float *values) {
    minfer_tensor *t = f32_tensor(dims, rank, values);
    assert_ok(minfer_builder_add_initializer(b, name, t));
    minfer_tensor_free(t);
}

static void add_i64_init(minfer_graph_builder *b, const char *name, const int64_t *dims,
                         size_t rank, const int64_t *values) {
    minfer_tensor *t = i64_tensor(dims, rank, values);
    assert_ok(minfer_builder_add_initializer(b, name, t));
    minfer_tensor_free(t);
}

/* Runs s with one input named in_name, returns the session-allocated first
 * output. */
static minfer_tensor *run1(minfer_session *s, const char *in_name, const minfer_tensor *in) {
    const char *names[] = {in_name};
    const minfer_tensor *ins[] = {in};
    minfer_tensor *out = NULL;
    assert_ok(minfer_session_run(s, names, ins, 1, NULL, &out, 1));
    assert_non_null(out);
    return out;
}

/* ---- Graphs with known results ----------------------------------------- */

static void test_relu(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t dims[] = {2, 3};
    const char *in[] = {"x"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu0", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    const float x[] = {-1, 2, -3, 4, 0, -0.5f}, want[] = {0, 2, 0, 4, 0, 0};
    minfer_tensor *tx = f32_tensor(dims, 2, x);
    minfer_tensor *y = run1(s, "x", tx);
    assert_tensor_f32(y, dims, 2, want);
    minfer_tensor_free(y);
    minfer_tensor_free(tx);
    minfer_session_free(s);
}

static void test_add_broadcast(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t adims[] = {2, 3}, bdims[] = {3}, cdims[] = {2, 1};
    const char *in1[] = {"a", "b"}, *out1[] = {"ab"};
    const char *in2[] = {"ab", "c"}, *out2[] = {"y"};
    assert_ok(minfer_builder_add_input(b, "a", MINFER_DTYPE_FLOAT, adims, 2, NULL));
    assert_ok(minfer_builder_add_input(b, "b", MINFER_DTYPE_FLOAT, bdims, 1, NULL));
    const float c[] = {100, 200};
    add_f32_init(b, "c", cdims, 2, c);
    assert_ok(minfer_builder_add_node(b, "Add", "", "add_row", in1, 2, out1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Add", "", "add_col", in2, 2, out2, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    const float av[] = {1, 2, 3, 4, 5, 6}, bv[] = {10, 20, 30};
    const float want[] = {111, 122, 133, 214, 225, 236};
    minfer_tensor *ta = f32_tensor(adims, 2, av), *tb = f32_tensor(bdims, 1, bv);
    const char *names[] = {"b", "a"}; /* any order, by name */
    const minfer_tensor *ins[] = {tb, ta};
    const char *outs[] = {"y"};
    minfer_tensor *y = NULL;
    assert_ok(minfer_session_run(s, names, ins, 2, outs, &y, 1));
    assert_tensor_f32(y, adims, 2, want);
    minfer_tensor_free(y);
    minfer_tensor_free(ta);
    minfer_tensor_free(tb);
    minfer_session_free(s);
}

static void test_conv(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t xdims[] = {1, 1, 3, 3}, wdims[] = {1, 1, 2, 2}, bdims[] = {1};
    const float w[] = {1, 1, 1, 1}, bias[] = {0.5f};
    add_f32_init(b, "w", wdims, 4, w);
    add_f32_init(b, "bias", bdims, 1, bias);
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xdims, 4, NULL));
    /* Plain 2x2 convolution with bias. */
    const char *in1[] = {"x", "w", "bias"}, *out1[] = {"plain"};
    assert_ok(minfer_builder_add_node(b, "Conv", NULL, "conv_plain", in1, 3, out1, 1, NULL));
    /* Padded by one on every side, stride 2, no bias. */
    const char *in2[] = {"x", "w"}, *out2[] = {"strided"};
    size_t n2;
    const int64_t pads[] = {1, 1, 1, 1}, strides[] = {2, 2};
    assert_ok(minfer_builder_add_node(b, "Conv", NULL, "conv_strided", in2, 2, out2, 1, &n2));
    assert_ok(minfer_builder_set_attr_ints(b, n2, "pads", pads, 4));
    assert_ok(minfer_builder_set_attr_ints(b, n2, "strides", strides, 2));
    assert_ok(minfer_builder_add_output(b, "plain"));
    assert_ok(minfer_builder_add_output(b, "strided"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    const float x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    minfer_tensor *tx = f32_tensor(xdims, 4, x);
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {tx};
    minfer_tensor *outs[2] = {NULL, NULL};
    assert_ok(minfer_session_run(s, names, ins, 1, NULL, outs, 2));
    const int64_t odims[] = {1, 1, 2, 2};
    const float want_plain[] = {12.5f, 16.5f, 24.5f, 28.5f};
    const float want_strided[] = {1, 5, 11, 28};
    assert_tensor_f32(outs[0], odims, 4, want_plain);
    assert_tensor_f32(outs[1], odims, 4, want_strided);
    minfer_tensor_free(outs[0]);
    minfer_tensor_free(outs[1]);
    minfer_tensor_free(tx);
    minfer_session_free(s);
}

static void test_conv_groups(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t xdims[] = {1, 2, 2, 2}, wdims[] = {2, 1, 1, 1};
    const float w[] = {2, 3};
    add_f32_init(b, "w", wdims, 4, w);
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xdims, 4, NULL));
    const char *in[] = {"x", "w"}, *out[] = {"y"};
    size_t n;
    assert_ok(minfer_builder_add_node(b, "Conv", NULL, "depthwise", in, 2, out, 1, &n));
    assert_ok(minfer_builder_set_attr_int(b, n, "group", 2));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    const float x[] = {1, 2, 3, 4, 5, 6, 7, 8};
    const float want[] = {2, 4, 6, 8, 15, 18, 21, 24};
    minfer_tensor *tx = f32_tensor(xdims, 4, x);
    minfer_tensor *y = run1(s, "x", tx);
    assert_tensor_f32(y, xdims, 4, want);
    minfer_tensor_free(y);
    minfer_tensor_free(tx);
    minfer_session_free(s);
}

static void test_gemm(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t adims[] = {2, 3}, bdims[] = {2, 3}, cdims[] = {2};
    const float bv[] = {1, 0, 1, 0, 1, 0}, cv[] = {0.5f, -1};
    add_f32_init(b, "B", bdims, 2, bv);
    add_f32_init(b, "C", cdims, 1, cv);
    assert_ok(minfer_builder_add_input(b, "A", MINFER_DTYPE_FLOAT, adims, 2, NULL));
    const char *in[] = {"A", "B", "C"}, *out[] = {"Y"};
    size_t n;
    assert_ok(minfer_builder_add_node(b, "Gemm", NULL, "fc", in, 3, out, 1, &n));
    assert_ok(minfer_builder_set_attr_int(b, n, "transB", 1));
    assert_ok(minfer_builder_set_attr_float(b, n, "alpha", 2.0f));
    assert_ok(minfer_builder_add_output(b, "Y"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    /* A B^T = [[4, 2], [10, 5]]; times 2, plus C broadcast over rows. */
    const float av[] = {1, 2, 3, 4, 5, 6}, want[] = {8.5f, 3, 20.5f, 9};
    const int64_t ydims[] = {2, 2};
    minfer_tensor *ta = f32_tensor(adims, 2, av);
    minfer_tensor *y = run1(s, "A", ta);
    assert_tensor_f32(y, ydims, 2, want);
    minfer_tensor_free(y);
    minfer_tensor_free(ta);
    minfer_session_free(s);
}

static void test_reshape_initializer_shape(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t xdims[] = {2, 3}, sdims[] = {2};
    const int64_t shape[] = {3, -1};
    add_i64_init(b, "shape", sdims, 1, shape);
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xdims, 2, NULL));
    const char *in[] = {"x", "shape"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Reshape", NULL, "reshape", in, 2, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    /* The target is known at build time: the output info has it. */
    minfer_value_info info;
    assert_ok(minfer_session_output_info(s, 0, &info));
    assert_int_equal(info.rank, 2);
    assert_int_equal(info.dims[0], 3);
    assert_int_equal(info.dims[1], 2);

    const float x[] = {1, 2, 3, 4, 5, 6};
    const int64_t ydims[] = {3, 2};
    minfer_tensor *tx = f32_tensor(xdims, 2, x);
    minfer_tensor *y = run1(s, "x", tx);
    assert_tensor_f32(y, ydims, 2, x);
    minfer_tensor_free(y);
    minfer_tensor_free(tx);
    minfer_session_free(s);
}

static void test_matmul_broadcast(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t adims[] = {2, 2, 3}, bdims[] = {3, 2};
    const float bv[] = {1, 0, 0, 1, 1, 1};
    add_f32_init(b, "B", bdims, 2, bv);
    assert_ok(minfer_builder_add_input(b, "A", MINFER_DTYPE_FLOAT, adims, 3, NULL));
    const char *in[] = {"A", "B"}, *out[] = {"Y"};
    assert_ok(minfer_builder_add_node(b, "MatMul", NULL, "mm", in, 2, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "Y"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    /* Each row [p, q, r] becomes [p + r, q + r]. */
    const float av[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    const float want[] = {2, 3, 8, 9, 14, 15, 20, 21};
    const int64_t ydims[] = {2, 2, 2};
    minfer_tensor *ta = f32_tensor(adims, 3, av);
    minfer_tensor *y = run1(s, "A", ta);
    assert_tensor_f32(y, ydims, 3, want);
    minfer_tensor_free(y);
    minfer_tensor_free(ta);
    minfer_session_free(s);
}

/* ---- Input and output info --------------------------------------------- */

/* pixels: float [batch, 3]; scores = Relu(pixels). */
static minfer_session *batch_relu_session(void) {
    minfer_graph_builder *b = new_builder();
    const int64_t dims[] = {-1, 3};
    const char *dim_names[] = {"batch", NULL};
    const char *in[] = {"pixels"}, *out[] = {"scores"};
    assert_ok(minfer_builder_add_input(b, "pixels", MINFER_DTYPE_FLOAT, dims, 2, dim_names));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu0", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "scores"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);
    return s;
}

static void test_io_info(void **state) {
    (void)state;
    minfer_session *s = batch_relu_session();
    assert_int_equal(minfer_session_input_count(s), 1);
    assert_int_equal(minfer_session_output_count(s), 1);

    minfer_value_info info;
    assert_ok(minfer_session_input_info(s, 0, &info));
    assert_string_equal(info.name, "pixels");
    assert_int_equal(info.dtype, MINFER_DTYPE_FLOAT);
    assert_int_equal(info.rank, 2);
    assert_int_equal(info.dims[0], -1);
    assert_non_null(info.dim_names);
    assert_non_null(info.dim_names[0]);
    assert_string_equal(info.dim_names[0], "batch");
    assert_int_equal(info.dims[1], 3);

    /* The output's shape comes from inference: the batch stays open (its
     * name may or may not be carried over), the fixed dim is known. */
    assert_ok(minfer_session_output_info(s, 0, &info));
    assert_string_equal(info.name, "scores");
    assert_int_equal(info.dtype, MINFER_DTYPE_FLOAT);
    assert_int_equal(info.rank, 2);
    assert_int_equal(info.dims[0], -1);
    if (info.dim_names && info.dim_names[0])
        assert_string_equal(info.dim_names[0], "batch");
    assert_int_equal(info.dims[1], 3);

    /* Out of range indices are errors, not crashes. */
    assert_int_not_equal(minfer_session_input_info(s, 1, &info), MINFER_OK);
    assert_int_not_equal(minfer_session_output_info(s, 7, &info), MINFER_OK);

    /* One node, placed on cpu. */
    assert_int_equal(minfer_session_node_count(s), 1);
    minfer_node_placement p;
    assert_ok(minfer_session_node_placement(s, 0, &p));
    assert_string_equal(p.node_name, "relu0");
    assert_string_equal(p.op_type, "Relu");
    assert_string_equal(p.provider, "cpu");
    assert_int_equal(minfer_session_provider_count(s), 1);
    assert_string_equal(minfer_session_provider_name(s, 0), "cpu");
    minfer_session_free(s);
}

/* ---- Run-time input and output checks ---------------------------------- */

static void test_run_wrong_input_name(void **state) {
    (void)state;
    minfer_session *s = batch_relu_session();
    const int64_t dims[] = {1, 3};
    const float x[] = {1, 2, 3};
    minfer_tensor *t = f32_tensor(dims, 2, x), *y = NULL;
    const char *names[] = {"nosuch_input"};
    const minfer_tensor *ins[] = {t};
    assert_int_not_equal(minfer_session_run(s, names, ins, 1, NULL, &y, 1), MINFER_OK);
    assert_null(y);
    assert_error_mentions("nosuch_input");

    /* An unknown output name is an error too. */
    const char *xn[] = {"pixels"}, *outs[] = {"nosuch_output"};
    assert_int_not_equal(minfer_session_run(s, xn, ins, 1, outs, &y, 1), MINFER_OK);
    assert_error_mentions("nosuch_output");
    minfer_tensor_free(t);
    minfer_session_free(s);
}

static void test_run_missing_input(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t dims[] = {2};
    const char *in[] = {"first", "second"}, *out[] = {"sum"};
    assert_ok(minfer_builder_add_input(b, "first", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_input(b, "second", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "add", in, 2, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "sum"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    const float v[] = {1, 2};
    minfer_tensor *t = f32_tensor(dims, 1, v), *y = NULL;
    const char *names[] = {"first"};
    const minfer_tensor *ins[] = {t};
    assert_int_not_equal(minfer_session_run(s, names, ins, 1, NULL, &y, 1), MINFER_OK);
    assert_null(y);
    assert_error_mentions("second");
    minfer_tensor_free(t);
    minfer_session_free(s);
}

static void test_run_wrong_dtype(void **state) {
    (void)state;
    minfer_session *s = batch_relu_session();
    const int64_t dims[] = {1, 3}, v[] = {1, 2, 3};
    minfer_tensor *t = i64_tensor(dims, 2, v), *y = NULL;
    const char *names[] = {"pixels"};
    const minfer_tensor *ins[] = {t};
    assert_int_not_equal(minfer_session_run(s, names, ins, 1, NULL, &y, 1), MINFER_OK);
    assert_null(y);
    assert_error_mentions("pixels");
    assert_error_mentions("float");
    assert_error_mentions("int64");
    minfer_tensor_free(t);
    minfer_session_free(s);
}

static void test_run_wrong_shape(void **state) {
    (void)state;
    minfer_session *s = batch_relu_session();
    const char *names[] = {"pixels"};
    minfer_tensor *y = NULL;

    /* Wrong rank. */
    const int64_t d1[] = {3};
    const float v[] = {1, 2, 3, 4, 5, 6, 7, 8};
    minfer_tensor *t = f32_tensor(d1, 1, v);
    const minfer_tensor *ins[] = {t};
    assert_int_not_equal(minfer_session_run(s, names, ins, 1, NULL, &y, 1), MINFER_OK);
    assert_null(y);
    assert_error_mentions("pixels");
    minfer_tensor_free(t);

    /* Right rank, a fixed dim wrong: 4 given where 3 is declared. */
    const int64_t d2[] = {2, 4};
    t = f32_tensor(d2, 2, v);
    ins[0] = t;
    assert_int_not_equal(minfer_session_run(s, names, ins, 1, NULL, &y, 1), MINFER_OK);
    assert_null(y);
    assert_error_mentions("pixels");
    assert_error_mentions("4");
    assert_error_mentions("3");
    minfer_tensor_free(t);

    /* The session still runs after the failures. */
    const int64_t d3[] = {1, 3};
    const float ok[] = {-1, 0, 1}, want[] = {0, 0, 1};
    t = f32_tensor(d3, 2, ok);
    y = run1(s, "pixels", t);
    assert_tensor_f32(y, d3, 2, want);
    minfer_tensor_free(y);
    minfer_tensor_free(t);
    minfer_session_free(s);
}

static void test_caller_output(void **state) {
    (void)state;
    minfer_session *s = batch_relu_session();
    const int64_t dims[] = {2, 3};
    const float x[] = {-1, 2, -3, 4, -5, 6}, want[] = {0, 2, 0, 4, 0, 6};
    minfer_tensor *tx = f32_tensor(dims, 2, x);
    const char *names[] = {"pixels"}, *outs[] = {"scores"};
    const minfer_tensor *ins[] = {tx};

    /* A wrapped caller buffer receives the result in place. */
    float buf[6] = {42, 42, 42, 42, 42, 42};
    minfer_tensor *ty = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, buf, sizeof buf, &ty));
    minfer_tensor *given = ty;
    assert_ok(minfer_session_run(s, names, ins, 1, outs, &ty, 1));
    assert_ptr_equal(ty, given);
    assert_ptr_equal(minfer_tensor_data(ty), buf);
    for (int i = 0; i < 6; i++)
        assert_true(buf[i] == want[i]);
    minfer_tensor_free(ty);

    /* A caller tensor of the wrong shape is refused, naming the output. */
    const int64_t wrong[] = {3, 3};
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, wrong, 2, &ty));
    assert_int_not_equal(minfer_session_run(s, names, ins, 1, outs, &ty, 1), MINFER_OK);
    assert_error_mentions("scores");
    minfer_tensor_free(ty);

    /* And one of the wrong type. */
    ty = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_INT32, dims, 2, &ty));
    assert_int_not_equal(minfer_session_run(s, names, ins, 1, outs, &ty, 1), MINFER_OK);
    assert_error_mentions("scores");
    minfer_tensor_free(ty);
    minfer_tensor_free(tx);
    minfer_session_free(s);
}

/* ---- Dynamic shapes ----------------------------------------------------- */

static void test_dynamic_batch(void **state) {
    (void)state;
    minfer_session *s = batch_relu_session();
    const int64_t batches[] = {1, 3, 1};
    for (size_t k = 0; k < 3; k++) {
        const int64_t dims[] = {batches[k], 3};
        float x[9], want[9];
        for (int i = 0; i < 3 * (int)batches[k]; i++) {
            x[i] = (float)((i % 2) ? i : -i) + (float)k;
            want[i] = x[i] > 0 ? x[i] : 0;
        }
        minfer_tensor *tx = f32_tensor(dims, 2, x);
        minfer_tensor *y = run1(s, "pixels", tx);
        assert_tensor_f32(y, dims, 2, want);
        minfer_tensor_free(y);
        minfer_tensor_free(tx);
    }
    minfer_session_free(s);
}

/* Reshape whose target is computed from the input's shape, as exported
 * models do for flattening: Shape -> Gather -> Unsqueeze -> Concat. The
 * target depends on the batch, so it is re-derived for each batch size. */
static void test_shape_subgraph_dynamic(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    const int64_t xdims[] = {-1, 2, 3};
    const char *xnames[] = {"N", NULL, NULL};
    const int64_t scalar_dims[1] = {0}, one[] = {1};
    const int64_t zero_v[] = {0}, six_v[] = {6};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xdims, 3, xnames));
    add_i64_init(b, "idx0", scalar_dims, 0, zero_v);
    add_i64_init(b, "axes0", one, 1, zero_v);
    add_i64_init(b, "six", one, 1, six_v);
    const char *i1[] = {"x"}, *o1[] = {"xshape"};
    const char *i2[] = {"xshape", "idx0"}, *o2[] = {"n"};
    const char *i3[] = {"n", "axes0"}, *o3[] = {"n1"};
    const char *i4[] = {"n1", "six"}, *o4[] = {"target"};
    const char *i5[] = {"x", "target"}, *o5[] = {"y"};
    size_t concat;
    assert_ok(minfer_builder_add_node(b, "Shape", NULL, "shape", i1, 1, o1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Gather", NULL, "gather", i2, 2, o2, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Unsqueeze", NULL, "unsqueeze", i3, 2, o3, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Concat", NULL, "concat", i4, 2, o4, 1, &concat));
    assert_ok(minfer_builder_set_attr_int(b, concat, "axis", 0));
    assert_ok(minfer_builder_add_node(b, "Reshape", NULL, "flatten", i5, 2, o5, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);

    /* Before any run the target depends on the batch; whatever the output
     * info claims must be consistent with [N, 6]. */
    minfer_value_info info;
    assert_ok(minfer_session_output_info(s, 0, &info));
    assert_int_equal(info.dtype, MINFER_DTYPE_FLOAT);
    if (info.rank >= 0) {
        assert_int_equal(info.rank, 2);
        assert_true(info.dims[1] == 6 || info.dims[1] == -1);
    }

    const int64_t batches[] = {1, 3, 1};
    for (size_t k = 0; k < 3; k++) {
        const int64_t dims[] = {batches[k], 2, 3}, ydims[] = {batches[k], 6};
        float x[18];
        for (int i = 0; i < 6 * (int)batches[k]; i++)
            x[i] = (float)i * 0.5f - (float)k;
        minfer_tensor *tx = f32_tensor(dims, 3, x);
        minfer_tensor *y = run1(s, "x", tx);
        assert_tensor_f32(y, ydims, 2, x);
        minfer_tensor_free(y);
        minfer_tensor_free(tx);
    }
    minfer_session_free(s);
}

/* ---- NULL handling ------------------------------------------------------ */

/* Zero-element constants folded by the optimizer and by a plan, and a
 * zero-element run input: empty results, no NULL + 0 (a fuzz_builder find
 * whose input was lost; UBSan checks this test in CI). */
static void test_empty_constants(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t d0[] = {0}, d2[] = {0, 3}, dx[] = {0, 3};
    float none[1] = {0};
    add_f32_init(b, "c0", d0, 1, none);
    add_f32_init(b, "c1", d0, 1, none);
    add_f32_init(b, "w", d2, 2, none);
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dx, 2, NULL));
    const char *i1[] = {"c0", "c1"}, *o1[] = {"s"};
    const char *i2[] = {"s"}, *o2[] = {"r"};
    const char *i3[] = {"x", "w"}, *o3[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "add", i1, 2, o1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu", i2, 1, o2, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Mul", NULL, "mul", i3, 2, o3, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "r"));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_session *s = cpu_session(b);
    minfer_builder_free(b);
    minfer_tensor *x = NULL, *out[2] = {NULL, NULL};
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dx, 2, &x));
    const char *names[] = {"x"};
    assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)&x, 1, NULL, out, 2));
    assert_int_equal(minfer_tensor_numel(out[0]), 0);
    assert_int_equal(minfer_tensor_rank(out[1]), 2);
    assert_int_equal(minfer_tensor_numel(out[1]), 0);
    minfer_tensor_free(out[0]);
    minfer_tensor_free(out[1]);
    minfer_tensor_free(x);
    minfer_session_free(s);
}

static void test_free_null(void **state) {
    (void)state;
    minfer_session_free(NULL);
    minfer_tensor_free(NULL);
    minfer_options_free(NULL);
    minfer_builder_free(NULL);

    minfer_session *s = NULL;
    assert_int_equal(minfer_session_create(NULL, NULL, &s), MINFER_ERR_INVALID_ARG);
    assert_null(s);
    assert_int_equal(minfer_session_create_from_builder(NULL, NULL, &s), MINFER_ERR_INVALID_ARG);
    assert_null(s);
    assert_int_not_equal(minfer_builder_create(13, NULL), MINFER_OK);
    assert_int_not_equal(minfer_options_create(NULL), MINFER_OK);
    assert_int_equal(minfer_session_input_count(NULL), 0);
    assert_int_equal(minfer_session_output_count(NULL), 0);
    assert_int_not_equal(minfer_session_run(NULL, NULL, NULL, 0, NULL, NULL, 0), MINFER_OK);
    assert_true(strlen(minfer_status_str(MINFER_ERR_MODEL)) > 0);
    assert_string_equal(minfer_version(), MINFER_VERSION_STRING);
}

/* ---- Graph errors caught at session creation --------------------------- */

static void test_build_missing_value(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t dims[] = {2};
    const char *in[] = {"ghost_value"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "haunted", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    assert_int_equal(cpu_session_fails(b), MINFER_ERR_MODEL);
    assert_error_mentions("ghost_value");
    assert_error_mentions("haunted");
    minfer_builder_free(b);
}

static void test_build_missing_output(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t dims[] = {2};
    const char *in[] = {"x"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu0", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "not_produced"));
    assert_int_equal(cpu_session_fails(b), MINFER_ERR_MODEL);
    assert_error_mentions("not_produced");
    minfer_builder_free(b);
}

static void test_build_cycle(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t dims[] = {2};
    /* a = Add(x, c); c = Relu(a): each node waits for the other. */
    const char *in1[] = {"x", "c"}, *out1[] = {"a"};
    const char *in2[] = {"a"}, *out2[] = {"c"};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "loop_add", in1, 2, out1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "loop_relu", in2, 1, out2, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "a"));
    assert_int_equal(cpu_session_fails(b), MINFER_ERR_MODEL);
    assert_error_mentions("cycle");
    minfer_builder_free(b);
}

static void test_build_duplicate_producer(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t dims[] = {2};
    const char *in[] = {"x"}, *out[] = {"twice"};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "first", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Sigmoid", NULL, "second", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "twice"));
    assert_int_equal(cpu_session_fails(b), MINFER_ERR_MODEL);
    assert_error_mentions("twice");
    minfer_builder_free(b);
}

static void test_build_unknown_op(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t dims[] = {2};
    const char *in[] = {"x"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "FrobnicateXyz", NULL, "odd_node", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    cpu_session_fails(b);
    assert_error_mentions("odd_node");
    assert_error_mentions("FrobnicateXyz");
    assert_error_mentions("13");
    minfer_builder_free(b);

    /* The same in a custom domain: the domain and its opset are named. */
    b = new_builder();
    assert_ok(minfer_builder_add_opset(b, "com.example", 4));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Custom", "com.example", "custom_node", in, 1, out, 1,
                                      NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    cpu_session_fails(b);
    assert_error_mentions("custom_node");
    assert_error_mentions("Custom");
    assert_error_mentions("com.example");
    assert_error_mentions("4");
    minfer_builder_free(b);
}

static void test_build_shape_mismatch(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t adims[] = {2, 3}, bdims[] = {4};
    const char *in[] = {"a", "b"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_input(b, "a", MINFER_DTYPE_FLOAT, adims, 2, NULL));
    assert_ok(minfer_builder_add_input(b, "b", MINFER_DTYPE_FLOAT, bdims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "bad_add", in, 2, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    assert_int_equal(cpu_session_fails(b), MINFER_ERR_SHAPE);
    assert_error_mentions("bad_add");
    minfer_builder_free(b);
}

static void test_build_type_mismatch(void **state) {
    (void)state;
    minfer_graph_builder *b = new_builder();
    int64_t dims[] = {3};
    const char *in[] = {"a", "b"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_input(b, "a", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    assert_ok(minfer_builder_add_input(b, "b", MINFER_DTYPE_INT64, dims, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "mixed_add", in, 2, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    assert_int_equal(cpu_session_fails(b), MINFER_ERR_TYPE);
    assert_error_mentions("mixed_add");
    minfer_builder_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relu),
        cmocka_unit_test(test_add_broadcast),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_conv_groups),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_reshape_initializer_shape),
        cmocka_unit_test(test_matmul_broadcast),
        cmocka_unit_test(test_io_info),
        cmocka_unit_test(test_run_wrong_input_name),
        cmocka_unit_test(test_run_missing_input),
        cmocka_unit_test(test_run_wrong_dtype),
        cmocka_unit_test(test_run_wrong_shape),
        cmocka_unit_test(test_caller_output),
        cmocka_unit_test(test_dynamic_batch),
        cmocka_unit_test(test_shape_subgraph_dynamic),
        cmocka_unit_test(test_empty_constants),
        cmocka_unit_test(test_free_null),
        cmocka_unit_test(test_build_missing_value),
        cmocka_unit_test(test_build_missing_output),
        cmocka_unit_test(test_build_cycle),
        cmocka_unit_test(test_build_duplicate_producer),
        cmocka_unit_test(test_build_unknown_op),
        cmocka_unit_test(test_build_shape_mismatch),
        cmocka_unit_test(test_build_type_mismatch),
    };
    /* The tests pick their providers explicitly; keep the environment out. */
    unsetenv("MINFER_PROVIDERS");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
