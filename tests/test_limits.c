/*
 * Limits and untrusted-file checks: overflow-checked shape arithmetic, the
 * minfer_limits options (model bytes, tensor bytes, node count), tensors
 * declared or computed at 2^40 elements, and external data that escapes the
 * model's directory or runs past the end of its file.
 *
 * Models are built in memory with the protobuf-c bindings (fuzz/onnx_build.h)
 * and written to a temporary directory where a test needs files.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz/onnx_build.h"
#include "util/internal.h"
#include "util/options.h"
#include "test_util.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define T_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define TWO40 ((int64_t)1 << 40)

static char tmpdir[256];

static minfer_options *cpu_options(const minfer_limits *lim) {
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_threads(opt, 1));
    if (lim)
        assert_ok(minfer_options_set_limits(opt, lim));
    return opt;
}

/* Creates a session from the serialized model (freed); returns the status. */
static minfer_status create_mem(Onnx__ModelProto *m, const minfer_limits *lim,
                                minfer_session **out) {
    size_t len;
    uint8_t *buf = ob_finish(m, &len);
    minfer_options *opt = cpu_options(lim);
    minfer_session *s = NULL;
    minfer_status st = minfer_session_create_from_memory(buf, len, opt, &s);
    minfer_options_free(opt);
    free(buf);
    if (out)
        *out = s;
    else
        minfer_session_free(s);
    return st;
}

/* x -> Relu -> y with x declared float[dims]. */
static Onnx__ModelProto *relu_model(int rank, const int64_t *dims) {
    Onnx__ModelProto *m = ob_model(13);
    ob_input(m->graph, "x", T_FLOAT, rank, dims);
    ob_node(m->graph, "Relu", "x", "y");
    ob_output(m->graph, "y", T_FLOAT);
    return m;
}

/* ---- shape arithmetic ------------------------------------------------------ */

static void test_numel_overflow(void **state) {
    (void)state;
    int64_t n;
    size_t b;
    int64_t big[3] = {INT64_MAX / 2, 3, 1};
    assert_int_equal(mf_numel(big, 2, &n), MINFER_ERR_LIMIT);
    int64_t neg[2] = {4, -1};
    assert_int_equal(mf_numel(neg, 2, &n), MINFER_ERR_LIMIT);
    int64_t zero[3] = {INT64_MAX, 0, INT64_MAX};
    assert_int_equal(mf_numel(zero, 3, &n), MINFER_OK);
    assert_int_equal(n, 0);
    assert_int_equal(mf_nbytes(MINFER_DTYPE_DOUBLE, INT64_MAX / 2, &b), MINFER_ERR_LIMIT);
    assert_int_equal(mf_numel(big, MINFER_MAX_RANK + 1, &n), MINFER_ERR_LIMIT);
}

/* ---- huge tensors ------------------------------------------------------------ */

/* A graph input declared with 2^40 elements is refused at load. */
static void test_declared_input_2_40(void **state) {
    (void)state;
    int64_t dims[1] = {TWO40};
    assert_int_equal(create_mem(relu_model(1, dims), NULL, NULL), MINFER_ERR_LIMIT);
    assert_error_mentions("limit");
    assert_error_mentions("'x'");
}

/* Fixed dims whose product overflows int64 are refused, not wrapped. */
static void test_declared_input_overflow(void **state) {
    (void)state;
    int64_t dims[3] = {(int64_t)1 << 40, (int64_t)1 << 40, -1};
    assert_int_equal(create_mem(relu_model(3, dims), NULL, NULL), MINFER_ERR_LIMIT);
    int64_t dims2[2] = {INT64_MAX, INT64_MAX};
    assert_int_equal(create_mem(relu_model(2, dims2), NULL, NULL), MINFER_ERR_LIMIT);
}

/* ConstantOfShape whose target is an initializer holding 2^40: refused at
 * create, before the plan allocates it. */
static void test_constant_of_shape_2_40(void **state) {
    (void)state;
    Onnx__ModelProto *m = ob_model(13);
    int64_t one = 1, target = TWO40;
    ob_init(m->graph, "shape", T_INT64, 1, &one, &target, sizeof target);
    ob_node(m->graph, "ConstantOfShape", "shape", "y");
    ob_output(m->graph, "y", T_FLOAT);
    assert_int_equal(create_mem(m, NULL, NULL), MINFER_ERR_LIMIT);
    assert_error_mentions("limit");
}

/* Expand of a [1] input to [2^20, 2^20] floats (4 TiB). */
static void test_expand_2_40(void **state) {
    (void)state;
    Onnx__ModelProto *m = ob_model(13);
    int64_t one = 1, two = 2, target[2] = {(int64_t)1 << 20, (int64_t)1 << 20};
    ob_input(m->graph, "x", T_FLOAT, 1, &one);
    ob_init(m->graph, "shape", T_INT64, 1, &two, target, sizeof target);
    ob_node(m->graph, "Expand", "x shape", "y");
    ob_output(m->graph, "y", T_FLOAT);
    assert_int_equal(create_mem(m, NULL, NULL), MINFER_ERR_LIMIT);
    assert_error_mentions("limit");
}

/* The target only known at run time: the run fails with LIMIT, and the
 * same session then runs a sane target. */
static void test_constant_of_shape_runtime(void **state) {
    (void)state;
    Onnx__ModelProto *m = ob_model(13);
    int64_t one = 1;
    ob_input(m->graph, "shape", T_INT64, 1, &one);
    ob_node(m->graph, "ConstantOfShape", "shape", "y");
    ob_output(m->graph, "y", T_FLOAT);
    minfer_session *s = NULL;
    assert_ok(create_mem(m, NULL, &s));
    int64_t target = TWO40;
    minfer_tensor *in = NULL, *out = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_INT64, &one, 1, &target, sizeof target, &in));
    const char *names[] = {"shape"};
    assert_int_equal(minfer_session_run(s, names, (const minfer_tensor *const *)&in, 1, NULL,
                                        &out, 1),
                     MINFER_ERR_LIMIT);
    assert_null(out);
    assert_true(minfer_last_error()[0] != '\0');
    target = 5;
    assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)&in, 1, NULL, &out, 1));
    assert_int_equal(minfer_tensor_numel(out), 5);
    minfer_tensor_free(out);
    minfer_tensor_free(in);
    minfer_session_free(s);
}

/* ---- the limits options --------------------------------------------------- */

static void test_max_tensor_bytes(void **state) {
    (void)state;
    minfer_limits lim = {0, 1024, 0, 0};
    int64_t dims[1] = {1000}; /* 4000 bytes */
    /* an initializer over the limit */
    Onnx__ModelProto *m = ob_model(13);
    ob_input(m->graph, "x", T_FLOAT, 1, dims);
    ob_init(m->graph, "w", T_FLOAT, 1, dims, NULL, sizeof(float) * 1000);
    ob_node(m->graph, "Add", "x w", "y");
    ob_output(m->graph, "y", T_FLOAT);
    assert_int_equal(create_mem(m, &lim, NULL), MINFER_ERR_LIMIT);
    assert_error_mentions("'w'");
    /* a declared input over the limit */
    assert_int_equal(create_mem(relu_model(1, dims), &lim, NULL), MINFER_ERR_LIMIT);
    /* an intermediate over the limit: Tile of a small input */
    m = ob_model(13);
    int64_t small = 100, one = 1, reps = 10;
    ob_input(m->graph, "x", T_FLOAT, 1, &small);
    ob_init(m->graph, "r", T_INT64, 1, &one, &reps, sizeof reps);
    ob_node(m->graph, "Tile", "x r", "y");
    ob_output(m->graph, "y", T_FLOAT);
    assert_int_equal(create_mem(m, &lim, NULL), MINFER_ERR_LIMIT);
    assert_error_mentions("'y'");
    /* the same within the limit */
    lim.max_tensor_bytes = 4000;
    assert_ok(create_mem(relu_model(1, dims), &lim, NULL));
}

static void test_max_nodes(void **state) {
    (void)state;
    int64_t dims[1] = {4};
    minfer_limits lim = {0, 0, 9, 0};
    for (int pass = 0; pass < 2; pass++) {
        Onnx__ModelProto *m = ob_model(13);
        ob_input(m->graph, "v0", T_FLOAT, 1, dims);
        char in[16], out[16];
        for (int i = 0; i < 10; i++) {
            snprintf(in, sizeof in, "v%d", i);
            snprintf(out, sizeof out, "v%d", i + 1);
            ob_node(m->graph, "Relu", in, out);
        }
        ob_output(m->graph, "v10", T_FLOAT);
        if (pass == 0) {
            assert_int_equal(create_mem(m, &lim, NULL), MINFER_ERR_LIMIT);
            assert_error_mentions("node limit");
        } else {
            lim.max_nodes = 10;
            assert_ok(create_mem(m, &lim, NULL));
        }
    }
}

static void test_max_model_bytes(void **state) {
    (void)state;
    int64_t dims[1] = {4};
    size_t len;
    uint8_t *buf = ob_finish(relu_model(1, dims), &len);
    minfer_limits lim = {len - 1, 0, 0, 0};
    minfer_options *opt = cpu_options(&lim);
    minfer_session *s = NULL;
    assert_int_equal(minfer_session_create_from_memory(buf, len, opt, &s), MINFER_ERR_LIMIT);
    assert_null(s);
    char path[512];
    snprintf(path, sizeof path, "%s/small.onnx", tmpdir);
    assert_int_equal(ob_write(path, buf, len), 0);
    assert_int_equal(minfer_session_create(path, opt, &s), MINFER_ERR_LIMIT);
    assert_error_mentions("limit");
    lim.max_model_bytes = len;
    assert_ok(minfer_options_set_limits(opt, &lim));
    assert_ok(minfer_session_create(path, opt, &s));
    minfer_session_free(s);
    minfer_options_free(opt);
    free(buf);
}

/* ---- external data ------------------------------------------------------ */

/* Writes DIR/name.onnx: y = x + w, w float[4] stored externally at
 * location/offset/length. Returns the model path (static buffer). */
static const char *write_ext_model(const char *dir, const char *name, const char *location,
                                   long long offset, long long length) {
    static char path[512];
    int64_t four = 4;
    Onnx__ModelProto *m = ob_model(13);
    ob_input(m->graph, "x", T_FLOAT, 1, &four);
    Onnx__TensorProto *w = ob_init(m->graph, "w", T_FLOAT, 1, &four, NULL, 0);
    ob_external(w, location, offset, length);
    ob_node(m->graph, "Add", "x w", "y");
    ob_output(m->graph, "y", T_FLOAT);
    size_t len;
    uint8_t *buf = ob_finish(m, &len);
    snprintf(path, sizeof path, "%s/%s.onnx", dir, name);
    assert_int_equal(ob_write(path, buf, len), 0);
    free(buf);
    return path;
}

static void write_floats(const char *path, size_t count) {
    float v[16];
    for (size_t i = 0; i < 16; i++)
        v[i] = (float)(i + 1);
    assert_int_equal(ob_write(path, v, count * sizeof(float)), 0);
}

static minfer_status create_file(const char *path) {
    minfer_options *opt = cpu_options(NULL);
    minfer_session *s = NULL;
    minfer_status st = minfer_session_create(path, opt, &s);
    minfer_options_free(opt);
    if (st == MINFER_OK) {
        /* The run sees the external values: y = 0 + w. */
        int64_t four = 4;
        float x[4] = {0};
        minfer_tensor *in = NULL, *out = NULL;
        assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, &four, 1, x, sizeof x, &in));
        const char *names[] = {"x"};
        assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)&in, 1, NULL, &out,
                                     1));
        const float *y = minfer_tensor_data(out);
        assert_true(y[0] >= 1.0f && y[3] == y[0] + 3.0f);
        minfer_tensor_free(out);
        minfer_tensor_free(in);
    }
    minfer_session_free(s);
    return st;
}

static void test_external_data(void **state) {
    (void)state;
    char dir[512], outside[512], p[1024], q[1024];
    snprintf(dir, sizeof dir, "%s/model", tmpdir);
    snprintf(outside, sizeof outside, "%s/outside", tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(mkdir(outside, 0755), 0);
    snprintf(p, sizeof p, "%s/w.bin", dir);
    write_floats(p, 8); /* 32 bytes */
    snprintf(p, sizeof p, "%s/w.bin", outside);
    write_floats(p, 8);
    snprintf(p, sizeof p, "%s/sub", dir);
    assert_int_equal(mkdir(p, 0755), 0);

    /* Inside the directory: accepted, and the data is what the run sees. */
    assert_ok(create_file(write_ext_model(dir, "ok", "w.bin", -1, 16)));
    assert_ok(create_file(write_ext_model(dir, "ok_offset", "w.bin", 16, 16)));
    assert_ok(create_file(write_ext_model(dir, "ok_dot", "./w.bin", -1, 16)));

    /* An absolute location, even one naming a file inside the directory. */
    snprintf(p, sizeof p, "%s/w.bin", dir);
    assert_int_equal(create_file(write_ext_model(dir, "abs", p, -1, 16)), MINFER_ERR_MODEL);
    assert_error_mentions("refused");
    /* '..' anywhere. */
    assert_int_equal(create_file(write_ext_model(dir, "dotdot", "../outside/w.bin", -1, 16)),
                     MINFER_ERR_MODEL);
    assert_error_mentions("refused");
    assert_int_equal(create_file(write_ext_model(dir, "dotdot2", "sub/../w.bin", -1, 16)),
                     MINFER_ERR_MODEL);
    assert_error_mentions("refused");
    /* A symlink to a file outside, and through a symlinked directory. */
    snprintf(p, sizeof p, "%s/w.bin", outside);
    snprintf(q, sizeof q, "%s/link.bin", dir);
    assert_int_equal(symlink(p, q), 0);
    assert_int_equal(create_file(write_ext_model(dir, "symfile", "link.bin", -1, 16)),
                     MINFER_ERR_MODEL);
    assert_error_mentions("outside the model directory");
    snprintf(q, sizeof q, "%s/linkdir", dir);
    assert_int_equal(symlink(outside, q), 0);
    assert_int_equal(create_file(write_ext_model(dir, "symdir", "linkdir/w.bin", -1, 16)),
                     MINFER_ERR_MODEL);
    assert_error_mentions("outside the model directory");
    /* A symlink that stays inside is fine. */
    snprintf(q, sizeof q, "%s/inlink.bin", dir);
    assert_int_equal(symlink("w.bin", q), 0);
    assert_ok(create_file(write_ext_model(dir, "symin", "inlink.bin", -1, 16)));

    /* Files shorter than offset + length. */
    snprintf(p, sizeof p, "%s/short.bin", dir);
    write_floats(p, 3); /* 12 bytes, the tensor needs 16 */
    assert_int_equal(create_file(write_ext_model(dir, "short", "short.bin", -1, -1)),
                     MINFER_ERR_MODEL);
    assert_int_equal(create_file(write_ext_model(dir, "short_len", "short.bin", 0, 16)),
                     MINFER_ERR_MODEL);
    assert_error_mentions("past the end");
    assert_int_equal(create_file(write_ext_model(dir, "short_off", "w.bin", 24, 16)),
                     MINFER_ERR_MODEL);
    assert_error_mentions("past the end");
    assert_int_equal(create_file(write_ext_model(dir, "past", "w.bin", 64, -1)),
                     MINFER_ERR_MODEL);
    assert_int_equal(create_file(write_ext_model(dir, "huge_off", "w.bin",
                                                 (long long)INT64_MAX, 16)),
                     MINFER_ERR_MODEL);
    /* A declared length that disagrees with the shape. */
    assert_int_equal(create_file(write_ext_model(dir, "badlen", "w.bin", 0, 12)),
                     MINFER_ERR_MODEL);
    /* A missing file. */
    assert_int_not_equal(create_file(write_ext_model(dir, "missing", "nope.bin", -1, 16)),
                         MINFER_OK);
    /* From memory there is no model directory to trust beyond ".": '..'
     * is still refused. */
    int64_t four = 4;
    Onnx__ModelProto *m = ob_model(13);
    ob_input(m->graph, "x", T_FLOAT, 1, &four);
    ob_external(ob_init(m->graph, "w", T_FLOAT, 1, &four, NULL, 0), "../w.bin", -1, 16);
    ob_node(m->graph, "Add", "x w", "y");
    ob_output(m->graph, "y", T_FLOAT);
    assert_int_equal(create_mem(m, NULL, NULL), MINFER_ERR_MODEL);
}

/* A TensorProto file with external data: resolved next to the file, with
 * the same refusals. */
static void test_external_tensor_file(void **state) {
    (void)state;
    char dir[512], p[1024];
    snprintf(dir, sizeof dir, "%s/pb", tmpdir);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(p, sizeof p, "%s/d.bin", dir);
    write_floats(p, 4);
    const char *locs[3] = {"d.bin", "../pb/d.bin", "/etc/passwd"};
    for (int k = 0; k < 3; k++) {
        int64_t four = 4;
        Onnx__TensorProto *t = ob_tensor("t", T_FLOAT, 1, &four, NULL, 0);
        ob_external(t, locs[k], -1, -1);
        size_t len = onnx__tensor_proto__get_packed_size(t);
        uint8_t *buf = ob_alloc(len);
        onnx__tensor_proto__pack(t, buf);
        onnx__tensor_proto__free_unpacked(t, NULL);
        snprintf(p, sizeof p, "%s/t%d.pb", dir, k);
        assert_int_equal(ob_write(p, buf, len), 0);
        minfer_tensor *out = NULL;
        minfer_status st = minfer_tensor_load_pb(p, &out, NULL);
        if (k == 0) {
            assert_ok(st);
            assert_true(((const float *)minfer_tensor_data(out))[3] == 4.0f);
        } else {
            assert_int_equal(st, MINFER_ERR_MODEL);
            assert_error_mentions("refused");
        }
        minfer_tensor_free(out);
        /* From memory: no directory, so external data is refused outright. */
        assert_int_equal(minfer_tensor_load_pb_memory(buf, len, &out, NULL), MINFER_ERR_MODEL);
        free(buf);
    }
}

static int setup(void **state) {
    (void)state;
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/minfer-limits-XXXXXX", base && base[0] ? base : "/tmp");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Provider options one key at a time: joined with ',' into the provider's
 * string, a key given again replaces its value, and what the unescaped
 * string cannot carry (a ',' in a value, ',' or '=' in a key, an empty key)
 * is refused, as Python's provider_options and the CLI refuse it. */
static void test_provider_option_keys(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_provider_option(opt, "opencl", "device", "1"));
    assert_ok(minfer_options_add_provider_option(opt, "opencl", "tune", "off"));
    assert_string_equal(mf_options_provider_options(opt, "opencl"), "device=1,tune=off");
    assert_ok(minfer_options_add_provider_option(opt, "opencl", "device", "2"));
    assert_string_equal(mf_options_provider_options(opt, "opencl"), "tune=off,device=2");
    assert_ok(minfer_options_add_provider_option(opt, "opencl", "dev", "a=b"));
    assert_string_equal(mf_options_provider_options(opt, "opencl"), "tune=off,device=2,dev=a=b");
    const char *bad[][2] = {{"device", "1,tune=on"}, {"a,b", "1"}, {"a=b", "1"}, {"", "1"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(minfer_options_add_provider_option(opt, "opencl", bad[i][0], bad[i][1]),
                         MINFER_ERR_INVALID_ARG);
        assert_error_mentions("keys cannot be empty or hold ',', '=' or NUL, values cannot hold ','");
    }
    assert_string_equal(mf_options_provider_options(opt, "opencl"), "tune=off,device=2,dev=a=b");
    assert_int_equal(minfer_options_add_provider_option(opt, "", "a", "1"), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_options_add_provider_option(opt, "cpu", "a", NULL),
                     MINFER_ERR_INVALID_ARG);
    minfer_options_free(opt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provider_option_keys),
        cmocka_unit_test(test_numel_overflow),
        cmocka_unit_test(test_declared_input_2_40),
        cmocka_unit_test(test_declared_input_overflow),
        cmocka_unit_test(test_constant_of_shape_2_40),
        cmocka_unit_test(test_expand_2_40),
        cmocka_unit_test(test_constant_of_shape_runtime),
        cmocka_unit_test(test_max_tensor_bytes),
        cmocka_unit_test(test_max_nodes),
        cmocka_unit_test(test_max_model_bytes),
        cmocka_unit_test(test_external_data),
        cmocka_unit_test(test_external_tensor_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
