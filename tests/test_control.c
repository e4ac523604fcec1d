/*
 * Sequences, optionals and control flow through the public API: the value
 * containers and their .pb formats; If, Loop and Scan models from the ONNX
 * suite run with inputs of our own (both branches, several trip counts,
 * so per-shape plans and subgraph sessions are exercised); sequence inputs
 * and outputs; and the clear errors (wrong kind, bad position, an output
 * slot given for a sequence) after which the session still runs.
 *
 * argv[1]: the libonnx-testdata data directory.
 */
#include <stdlib.h>
#include <unistd.h>

#include "minfer/builder.h"
#include "test_util.h"

static const char *data_dir = "/usr/share/libonnx-testdata/data";
static const char *own_data_dir = "tests/data"; /* argv[2]: tests/data */

static minfer_session *open_case(const char *name) {
    char path[1024];
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    snprintf(path, sizeof path, "%s/%s/model.onnx", data_dir, name);
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_session_create(path, opt, &s));
    minfer_options_free(opt);
    return s;
}

static minfer_tensor *scalar_f32(float v) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, NULL, 0, &t));
    *(float *)minfer_tensor_data(t) = v;
    return t;
}

static minfer_tensor *vec_f32(const float *v, int64_t n) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, &n, 1, &t));
    memcpy(minfer_tensor_data(t), v, (size_t)n * sizeof *v);
    return t;
}

/* ---- containers --------------------------------------------------------- */

static void test_sequence_api(void **state) {
    (void)state;
    minfer_tensor *seq = NULL, *opt = NULL, *back = NULL, *wrong = NULL;
    float a[] = {1, 2, 3}, b[] = {4, 5};
    assert_ok(minfer_sequence_create(MINFER_DTYPE_FLOAT, &seq));
    assert_int_equal(minfer_value_kind_of(seq), MINFER_VALUE_SEQUENCE);
    assert_int_equal(minfer_sequence_length(seq), 0);
    assert_ok(minfer_sequence_append(seq, vec_f32(a, 3)));
    assert_ok(minfer_sequence_append(seq, vec_f32(b, 2)));
    assert_int_equal(minfer_sequence_length(seq), 2);
    assert_null(minfer_sequence_at(seq, 2));
    assert_null(minfer_tensor_data(seq));
    assert_int_equal(minfer_tensor_numel(seq), 0);
    int64_t one = 1;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, &one, 1, &wrong));
    assert_int_equal(minfer_sequence_append(seq, wrong), MINFER_ERR_TYPE);
    assert_error_mentions("cannot hold int64");
    assert_int_equal(minfer_sequence_append(wrong, seq), MINFER_ERR_INVALID_ARG);
    minfer_tensor_free(wrong);

    /* .pb round trips */
    char path[] = "/tmp/minfer-seq-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_ok(minfer_tensor_save_pb(seq, "s", path));
    char *name = NULL;
    assert_ok(minfer_value_load_pb(path, MINFER_VALUE_SEQUENCE, &back, &name));
    assert_string_equal(name, "s");
    free(name);
    assert_int_equal(minfer_sequence_length(back), 2);
    int64_t d2 = 2;
    assert_tensor_f32(minfer_sequence_at(back, 1), &d2, 1, b);
    minfer_tensor_free(back);
    /* the same bytes read as the wrong kind: an error, not garbage */
    minfer_status st = minfer_value_load_pb(path, MINFER_VALUE_OPTIONAL, &back, NULL);
    if (st == MINFER_OK) { /* protobuf may parse it; it must then be sane */
        assert_int_equal(minfer_value_kind_of(back), MINFER_VALUE_OPTIONAL);
        minfer_tensor_free(back);
    }

    assert_ok(minfer_optional_create(seq, MINFER_VALUE_TENSOR, MINFER_DTYPE_UNDEFINED, &opt));
    assert_int_equal(minfer_optional_kind(opt), MINFER_VALUE_SEQUENCE);
    assert_ptr_equal(minfer_optional_value(opt), seq);
    assert_ok(minfer_tensor_save_pb(opt, "o", path));
    assert_ok(minfer_value_load_pb(path, MINFER_VALUE_OPTIONAL, &back, NULL));
    assert_int_equal(minfer_optional_kind(back), MINFER_VALUE_SEQUENCE);
    assert_int_equal(minfer_sequence_length(minfer_optional_value(back)), 2);
    minfer_tensor_free(back);
    minfer_tensor_free(opt); /* frees seq with it */

    assert_ok(minfer_optional_create(NULL, MINFER_VALUE_TENSOR, MINFER_DTYPE_INT32, &opt));
    assert_null(minfer_optional_value(opt));
    assert_int_equal(minfer_tensor_dtype(opt), MINFER_DTYPE_INT32);
    assert_ok(minfer_tensor_save_pb(opt, "empty", path));
    assert_ok(minfer_value_load_pb(path, MINFER_VALUE_OPTIONAL, &back, NULL));
    assert_null(minfer_optional_value(back));
    minfer_tensor_free(back);
    assert_int_equal(minfer_optional_create(NULL, MINFER_VALUE_OPTIONAL, MINFER_DTYPE_FLOAT, &back),
                     MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_optional_create(opt, MINFER_VALUE_TENSOR, MINFER_DTYPE_FLOAT, &back),
                     MINFER_ERR_INVALID_ARG);
    minfer_tensor_free(opt);
    unlink(path);
}

/* ---- control flow ------------------------------------------------------- */

static void test_if_both_branches(void **state) {
    (void)state;
    minfer_session *s = open_case("node/test_if");
    const char *in_names[] = {"cond"};
    minfer_tensor *cond = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_BOOL, NULL, 0, &cond));
    float then_v[] = {1, 2, 3, 4, 5}, else_v[] = {5, 4, 3, 2, 1};
    int64_t five = 5;
    for (int round = 0; round < 4; round++) {
        int c = round % 2;
        *(unsigned char *)minfer_tensor_data(cond) = (unsigned char)c;
        minfer_tensor *out = NULL;
        assert_ok(minfer_session_run(s, in_names, (const minfer_tensor *const *)&cond, 1, NULL,
                                     &out, 1));
        assert_tensor_f32(out, &five, 1, c ? then_v : else_v);
        minfer_tensor_free(out);
    }
    minfer_node_placement pl;
    assert_ok(minfer_session_node_placement(s, 0, &pl));
    assert_string_equal(pl.provider, "core");
    /* a condition of the wrong type: a clear error, then the session works */
    minfer_tensor *bad = scalar_f32(1);
    minfer_tensor *out = NULL;
    assert_int_equal(minfer_session_run(s, in_names, (const minfer_tensor *const *)&bad, 1, NULL,
                                        &out, 1),
                     MINFER_ERR_TYPE);
    minfer_tensor_free(bad);
    assert_ok(minfer_session_run(s, in_names, (const minfer_tensor *const *)&cond, 1, NULL, &out,
                                 1));
    minfer_tensor_free(out);
    minfer_tensor_free(cond);
    minfer_session_free(s);
}

/* Range expanded into a Loop: several trip counts, each a new output shape. */
static void test_loop_trip_counts(void **state) {
    (void)state;
    minfer_session *s = open_case("node/test_range_float_type_positive_delta_expanded");
    const char *names[] = {"start", "limit", "delta"};
    const float cases[][3] = {{1, 5, 2}, {0, 10, 1}, {3, 3, 1}, {-2, 2, 0.5f}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        minfer_tensor *in[3] = {scalar_f32(cases[c][0]), scalar_f32(cases[c][1]),
                                scalar_f32(cases[c][2])};
        minfer_tensor *out = NULL;
        assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)in, 3, NULL, &out, 1));
        int64_t n = (int64_t)ceilf((cases[c][1] - cases[c][0]) / cases[c][2]);
        if (n < 0)
            n = 0;
        float want[64];
        for (int64_t k = 0; k < n; k++)
            want[k] = cases[c][0] + (float)k * cases[c][2];
        assert_tensor_f32(out, &n, 1, want);
        minfer_tensor_free(out);
        for (int k = 0; k < 3; k++)
            minfer_tensor_free(in[k]);
    }
    minfer_session_free(s);
}

/* A trip count beyond the loop limit: a clear error, not a hang; then a
 * run within it works. */
static void test_loop_limit(void **state) {
    (void)state;
    char path[1024];
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_limits lim = {0, 0, 0, 1000};
    snprintf(path, sizeof path, "%s/node/test_range_float_type_positive_delta_expanded/model.onnx",
             data_dir);
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_limits(opt, &lim));
    assert_ok(minfer_session_create(path, opt, &s));
    minfer_options_free(opt);
    const char *names[] = {"start", "limit", "delta"};
    minfer_tensor *in[3] = {scalar_f32(0), scalar_f32(1e12f), scalar_f32(1)};
    minfer_tensor *out = NULL;
    assert_int_equal(minfer_session_run(s, names, (const minfer_tensor *const *)in, 3, NULL, &out, 1),
                     MINFER_ERR_LIMIT);
    assert_error_mentions("loop limit");
    assert_null(out);
    *(float *)minfer_tensor_data(in[1]) = 1000;
    assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)in, 3, NULL, &out, 1));
    assert_int_equal(minfer_tensor_numel(out), 1000);
    minfer_tensor_free(out);
    for (int k = 0; k < 3; k++)
        minfer_tensor_free(in[k]);
    minfer_session_free(s);
}

/* tests/data/loop_nested.onnx: three carried values, two scan outputs, an
 * outer value read by the body and, two scopes out, by an If in it. */
static void test_loop_nested(void **state) {
    (void)state;
    char path[1024];
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    snprintf(path, sizeof path, "%s/loop_nested.onnx", own_data_dir);
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_session_create(path, opt, &s));
    minfer_options_free(opt);
    int64_t two = 2;
    float av[] = {1, 2};
    minfer_tensor *m = NULL, *a = vec_f32(av, 2), *k = scalar_f32(0.5f);
    assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, NULL, 0, &m));
    const char *names[] = {"M", "a", "k"};
    for (int64_t trips = 0; trips <= 3; trips++) {
        *(int64_t *)minfer_tensor_data(m) = trips;
        minfer_tensor *in[3] = {m, a, k}, *out[5] = {NULL, NULL, NULL, NULL, NULL};
        assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)in, 3, NULL, out, 5));
        /* by hand: a += k; s -= k while i <= 1, += k after; c += 1 */
        float a_want[2] = {1 + 0.5f * (float)trips, 2 + 0.5f * (float)trips}, s_want = 0;
        float scan_a[8], scan_s[4];
        for (int64_t i = 0; i < trips; i++) {
            s_want += i > 1 ? 0.5f : -0.5f;
            scan_a[2 * i] = 1 + 0.5f * (float)(i + 1);
            scan_a[2 * i + 1] = 2 + 0.5f * (float)(i + 1);
            scan_s[i] = 2 * s_want;
        }
        assert_tensor_f32(out[0], &two, 1, a_want);
        assert_tensor_f32(out[1], NULL, 0, &s_want);
        assert_int_equal(*(const int64_t *)minfer_tensor_data(out[2]), trips);
        int64_t da[] = {trips, 2};
        if (trips > 0) {
            assert_tensor_f32(out[3], da, 2, scan_a);
            assert_tensor_f32(out[4], &trips, 1, scan_s);
        } else {
            assert_int_equal(minfer_tensor_numel(out[3]), 0);
            assert_int_equal(minfer_tensor_numel(out[4]), 0);
        }
        for (int o = 0; o < 5; o++)
            minfer_tensor_free(out[o]);
    }
    minfer_tensor_free(m);
    minfer_tensor_free(a);
    minfer_tensor_free(k);
    minfer_session_free(s);
}

/* Scan: a running sum over the rows, checked by hand. */
static void test_scan_sum(void **state) {
    (void)state;
    minfer_session *s = open_case("node/test_scan9_sum");
    const char *names[] = {"initial", "x"};
    int64_t d_init[] = {2}, d_x[] = {3, 2};
    minfer_tensor *init = NULL, *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, d_init, 1, &init));
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, d_x, 2, &x));
    float *xi = minfer_tensor_data(x);
    for (int k = 0; k < 6; k++)
        xi[k] = (float)(k + 1);
    minfer_tensor *in[2] = {init, x}, *out[2] = {NULL, NULL};
    assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)in, 2, NULL, out, 2));
    float y[] = {9, 12}, z[] = {1, 2, 4, 6, 9, 12};
    assert_tensor_f32(out[0], d_init, 1, y);
    assert_tensor_f32(out[1], d_x, 2, z);
    minfer_tensor_free(out[0]);
    minfer_tensor_free(out[1]);
    minfer_tensor_free(init);
    minfer_tensor_free(x);
    minfer_session_free(s);
}

/* ---- sequences in and out ----------------------------------------------- */

static minfer_tensor *vec_i64(const int64_t *v, int64_t n) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, &n, 1, &t));
    memcpy(minfer_tensor_data(t), v, (size_t)n * sizeof *v);
    return t;
}

static void assert_vec_i64(const minfer_tensor *t, const int64_t *v, int64_t n) {
    assert_non_null(t);
    assert_int_equal(minfer_tensor_dtype(t), MINFER_DTYPE_INT64);
    assert_int_equal(minfer_tensor_rank(t), 1);
    assert_int_equal(minfer_tensor_dims(t)[0], n);
    assert_memory_equal(minfer_tensor_data(t), v, (size_t)n * sizeof *v);
}

static void test_sequence_io(void **state) {
    (void)state;
    minfer_session *s = open_case("node/test_sequence_insert_at_back");
    minfer_value_info info;
    assert_ok(minfer_session_input_info(s, 0, &info));
    assert_int_equal(info.kind, MINFER_VALUE_SEQUENCE);
    assert_ok(minfer_session_output_info(s, 0, &info));
    assert_int_equal(info.kind, MINFER_VALUE_SEQUENCE);

    const char *names[] = {"sequence", "tensor"};
    int64_t a[] = {1, 2}, b[] = {3, 4, 5};
    for (size_t len = 0; len < 3; len++) {
        minfer_tensor *seq = NULL, *out = NULL;
        assert_ok(minfer_sequence_create(MINFER_DTYPE_INT64, &seq));
        for (size_t k = 0; k < len; k++)
            assert_ok(minfer_sequence_append(seq, vec_i64(a, 2)));
        minfer_tensor *item = vec_i64(b, 3), *in[2] = {seq, item};
        assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)in, 2, NULL, &out, 1));
        assert_int_equal(minfer_value_kind_of(out), MINFER_VALUE_SEQUENCE);
        assert_int_equal(minfer_sequence_length(out), len + 1);
        for (size_t k = 0; k < len; k++)
            assert_vec_i64(minfer_sequence_at(out, k), a, 2);
        assert_vec_i64(minfer_sequence_at(out, len), b, 3);
        /* the caller's sequence is not changed by the run */
        assert_int_equal(minfer_sequence_length(seq), len);
        /* a tensor slot given for a sequence output: a clear error */
        minfer_tensor *slot = vec_i64(a, 2);
        assert_int_equal(
            minfer_session_run(s, names, (const minfer_tensor *const *)in, 2, NULL, &slot, 1),
            MINFER_ERR_INVALID_ARG);
        assert_error_mentions("sequence");
        minfer_tensor_free(slot);
        /* a tensor where the model wants a sequence */
        in[0] = item;
        minfer_tensor *none = NULL;
        assert_int_equal(
            minfer_session_run(s, names, (const minfer_tensor *const *)in, 2, NULL, &none, 1),
            MINFER_ERR_TYPE);
        assert_error_mentions("expects a sequence");
        minfer_tensor_free(out);
        minfer_tensor_free(item);
        minfer_tensor_free(seq);
    }
    minfer_session_free(s);
}

/* SequenceConstruct -> SequenceAt with the position a graph input: a
 * position out of range is a run error naming the node; then it runs. */
static void test_sequence_at_range(void **state) {
    (void)state;
    minfer_graph_builder *b = NULL;
    minfer_session *s = NULL;
    minfer_options *opt = NULL;
    int64_t d2 = 2;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "a", MINFER_DTYPE_FLOAT, &d2, 1, NULL));
    assert_ok(minfer_builder_add_input(b, "b", MINFER_DTYPE_FLOAT, &d2, 1, NULL));
    assert_ok(minfer_builder_add_input(b, "pos", MINFER_DTYPE_INT64, NULL, 0, NULL));
    const char *ci[] = {"a", "b"}, *co[] = {"seq"}, *ai[] = {"seq", "pos"}, *ao[] = {"y"};
    size_t n0 = 0, n1 = 0;
    assert_ok(minfer_builder_add_node(b, "SequenceConstruct", NULL, "construct", ci, 2, co, 1, &n0));
    assert_ok(minfer_builder_add_node(b, "SequenceAt", NULL, "at", ai, 2, ao, 1, &n1));
    assert_ok(minfer_builder_add_output(b, "y"));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    minfer_builder_free(b);

    float av[] = {1, 2}, bv[] = {3, 4};
    minfer_tensor *pos = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, NULL, 0, &pos));
    minfer_tensor *in[3] = {vec_f32(av, 2), vec_f32(bv, 2), pos};
    const char *names[] = {"a", "b", "pos"};
    const int64_t positions[] = {0, 1, -1, -2, 2, -3, 1};
    for (size_t k = 0; k < sizeof positions / sizeof positions[0]; k++) {
        *(int64_t *)minfer_tensor_data(pos) = positions[k];
        minfer_tensor *out = NULL;
        minfer_status st =
            minfer_session_run(s, names, (const minfer_tensor *const *)in, 3, NULL, &out, 1);
        if (positions[k] >= 2 || positions[k] < -2) {
            assert_int_equal(st, MINFER_ERR_RUNTIME);
            assert_error_mentions("'at'");
            assert_error_mentions("out of range");
            assert_null(out);
            continue;
        }
        assert_ok(st);
        int first = positions[k] == 0 || positions[k] == -2;
        assert_tensor_f32(out, &d2, 1, first ? av : bv);
        minfer_tensor_free(out);
    }
    for (int k = 0; k < 3; k++)
        minfer_tensor_free(in[k]);
    minfer_session_free(s);
}

/* ---- Gradient ----------------------------------------------------------- */

/* y = Sigmoid(Relu(a * b)) + Tanh(a @ w) summed into one output s with a
 * ReduceSum-free trick: the Gradient's seed is ones, so dy/dx is the
 * gradient of sum(y). Checked against central differences of sum(y). */
static void test_gradient(void **state) {
    (void)state;
    minfer_graph_builder *b = NULL;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    int64_t da[] = {2, 3}, db[] = {3}, dw[] = {3, 3};
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_opset(b, "ai.onnx.preview.training", 1));
    assert_ok(minfer_builder_add_input(b, "a", MINFER_DTYPE_FLOAT, da, 2, NULL));
    assert_ok(minfer_builder_add_input(b, "b", MINFER_DTYPE_FLOAT, db, 1, NULL));
    assert_ok(minfer_builder_add_input(b, "w", MINFER_DTYPE_FLOAT, dw, 2, NULL));
    const char *i1[] = {"a", "b"}, *o1[] = {"m"};
    const char *i2[] = {"m"}, *o2[] = {"r"};
    const char *i3[] = {"r"}, *o3[] = {"sg"};
    const char *i4[] = {"a", "w"}, *o4[] = {"mm"};
    const char *i5[] = {"mm"}, *o5[] = {"th"};
    const char *i6[] = {"sg", "th"}, *o6[] = {"y"};
    const char *gi[] = {"a", "b", "w"}, *go[] = {"da", "db", "dw"};
    size_t gnode = 0;
    assert_ok(minfer_builder_add_node(b, "Mul", NULL, "mul", i1, 2, o1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu", i2, 1, o2, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Sigmoid", NULL, "sig", i3, 1, o3, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "MatMul", NULL, "mm", i4, 2, o4, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Tanh", NULL, "tanh", i5, 1, o5, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "add", i6, 2, o6, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Gradient", "ai.onnx.preview.training", "grad", gi, 3,
                                      go, 3, &gnode));
    assert_ok(minfer_builder_set_attr_strings(b, gnode, "xs", gi, 3));
    assert_ok(minfer_builder_set_attr_string(b, gnode, "y", "y"));
    const char *outs[] = {"y", "da", "db", "dw"};
    for (int k = 0; k < 4; k++)
        assert_ok(minfer_builder_add_output(b, outs[k]));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    minfer_builder_free(b);

    float av[6] = {0.5f, -0.3f, 1.2f, -0.7f, 0.2f, 0.9f}, bv[3] = {1.5f, -0.4f, 0.8f};
    float wv[9] = {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, -0.8f, 0.9f};
    minfer_tensor *in[3] = {NULL, NULL, NULL};
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, da, 2, av, sizeof av, &in[0]));
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, db, 1, bv, sizeof bv, &in[1]));
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dw, 2, wv, sizeof wv, &in[2]));
    const char *names[] = {"a", "b", "w"};
    minfer_tensor *res[4] = {NULL, NULL, NULL, NULL};
    assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)in, 3, outs, res, 4));
    float *vals[3] = {av, bv, wv};
    size_t counts[3] = {6, 3, 9};
    for (int x = 0; x < 3; x++) {
        const float *grad = minfer_tensor_data(res[1 + x]);
        assert_int_equal(minfer_tensor_numel(res[1 + x]), (int64_t)counts[x]);
        for (size_t e = 0; e < counts[x]; e++) {
            double sums[2];
            float keep = vals[x][e];
            for (int side = 0; side < 2; side++) {
                vals[x][e] = keep + (side ? 1e-2f : -1e-2f);
                minfer_tensor *y = NULL;
                assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)in, 3,
                                             outs, &y, 1));
                sums[side] = 0;
                for (int64_t k = 0; k < minfer_tensor_numel(y); k++)
                    sums[side] += ((const float *)minfer_tensor_data(y))[k];
                minfer_tensor_free(y);
            }
            vals[x][e] = keep;
            double numeric = (sums[1] - sums[0]) / 2e-2;
            if (fabs(numeric - grad[e]) > 2e-2 * (1 + fabs(numeric)))
                fail_msg("d/d%s[%zu]: %g analytic, %g numeric", names[x], e, (double)grad[e],
                         numeric);
        }
    }
    for (int k = 0; k < 4; k++)
        minfer_tensor_free(res[k]);
    for (int k = 0; k < 3; k++)
        minfer_tensor_free(in[k]);
    minfer_session_free(s);
}

/* An op the expansion cannot differentiate: a clear error naming it. */
static void test_gradient_unsupported(void **state) {
    (void)state;
    minfer_graph_builder *b = NULL;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    int64_t d[] = {4};
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_opset(b, "ai.onnx.preview.training", 1));
    assert_ok(minfer_builder_add_input(b, "a", MINFER_DTYPE_FLOAT, d, 1, NULL));
    const char *i1[] = {"a"}, *o1[] = {"y"}, *go[] = {"da"};
    size_t gnode = 0;
    assert_ok(minfer_builder_add_node(b, "Floor", NULL, "floor", i1, 1, o1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Gradient", "ai.onnx.preview.training", "grad", i1, 1,
                                      go, 1, &gnode));
    assert_ok(minfer_builder_set_attr_strings(b, gnode, "xs", i1, 1));
    assert_ok(minfer_builder_set_attr_string(b, gnode, "y", "y"));
    assert_ok(minfer_builder_add_output(b, "da"));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_int_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_ERR_UNSUPPORTED);
    assert_error_mentions("cannot differentiate node 'floor' (Floor)");
    assert_null(s);
    minfer_options_free(opt);
    minfer_builder_free(b);
}

int main(int argc, char **argv) {
    if (argc > 1)
        data_dir = argv[1];
    if (argc > 2)
        own_data_dir = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequence_api),      cmocka_unit_test(test_if_both_branches),
        cmocka_unit_test(test_loop_trip_counts),  cmocka_unit_test(test_scan_sum),
        cmocka_unit_test(test_sequence_io),       cmocka_unit_test(test_sequence_at_range),
        cmocka_unit_test(test_gradient),          cmocka_unit_test(test_gradient_unsupported),
        cmocka_unit_test(test_loop_limit),        cmocka_unit_test(test_loop_nested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
