/*
 * Device values (minfer.h minfer_session_device_tensor_create,
 * minfer_session_run_bound; ONNX Runtime's OrtValue on a device and
 * IOBinding) on the OpenCL provider: run k's output kept on the device
 * and fed to run k+1 gives the values of the same runs through host
 * memory, and the provider's counters (minfer_session_device_counters)
 * show no transfer between host and device in the chained run; a graph
 * whose input a CPU node also reads, and whose output a CPU node
 * computes, crosses through the host exactly there; wrong shapes, types,
 * devices and sessions are clear errors. Float storage and fp16=1.
 *
 * Exits 77 (ctest: skipped) only when no OpenCL platform or device exists.
 */
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

static const char *g_opts = "";

#define N 6
static const int64_t DIMS[2] = {2, 3};

static minfer_tensor *host_tensor(const float *v) {
    minfer_tensor *t = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, DIMS, 2, &t), MINFER_OK);
    memcpy(minfer_tensor_data(t), v, N * sizeof *v);
    return t;
}

/* y = (x + b) * w, every node on opencl; with mixed, also h = Hardmax(x)
 * (the CPU provider's alone) and y = (x + b) * w + h, h an output too. */
static minfer_session *make_session(const char *providers, int mixed) {
    static const float b[N] = {0.5f, -1, 2, 0.25f, 3, -0.75f};
    static const float w[N] = {2, 0.5f, -1, 4, 1.5f, -2};
    minfer_graph_builder *gb = NULL;
    assert_int_equal(minfer_builder_create(17, &gb), MINFER_OK);
    assert_int_equal(minfer_builder_add_input(gb, "x", MINFER_DTYPE_FLOAT, DIMS, 2, NULL),
                     MINFER_OK);
    minfer_tensor *tb = host_tensor(b), *tw = host_tensor(w);
    assert_int_equal(minfer_builder_add_initializer(gb, "b", tb), MINFER_OK);
    assert_int_equal(minfer_builder_add_initializer(gb, "w", tw), MINFER_OK);
    minfer_tensor_free(tb);
    minfer_tensor_free(tw);
    assert_int_equal(minfer_builder_add_node(gb, "Add", NULL, "add", (const char *[]){"x", "b"},
                                             2, (const char *[]){"t"}, 1, NULL), MINFER_OK);
    if (!mixed) {
        assert_int_equal(minfer_builder_add_node(gb, "Mul", NULL, "mul",
                                                 (const char *[]){"t", "w"}, 2,
                                                 (const char *[]){"y"}, 1, NULL), MINFER_OK);
        assert_int_equal(minfer_builder_add_output(gb, "y"), MINFER_OK);
    } else {
        assert_int_equal(minfer_builder_add_node(gb, "Mul", NULL, "mul",
                                                 (const char *[]){"t", "w"}, 2,
                                                 (const char *[]){"u"}, 1, NULL), MINFER_OK);
        assert_int_equal(minfer_builder_add_node(gb, "Hardmax", NULL, "hardmax",
                                                 (const char *[]){"x"}, 1,
                                                 (const char *[]){"h"}, 1, NULL), MINFER_OK);
        assert_int_equal(minfer_builder_add_node(gb, "Add", NULL, "add2",
                                                 (const char *[]){"u", "h"}, 2,
                                                 (const char *[]){"y"}, 1, NULL), MINFER_OK);
        assert_int_equal(minfer_builder_add_output(gb, "y"), MINFER_OK);
        assert_int_equal(minfer_builder_add_output(gb, "h"), MINFER_OK);
    }
    minfer_options *opt = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, providers), MINFER_OK);
    if (strstr(providers, "opencl") && g_opts[0])
        assert_int_equal(minfer_options_set_provider_options(opt, "opencl", g_opts), MINFER_OK);
    minfer_session *s = NULL;
    minfer_status st = minfer_session_create_from_builder(gb, opt, &s);
    minfer_options_free(opt);
    minfer_builder_free(gb);
    if (st != MINFER_OK)
        fail_msg("%s refused the graph: %s", providers, minfer_last_error());
    return s;
}

static size_t opencl_index(const minfer_session *s) {
    for (size_t i = 0; i < minfer_session_provider_count(s); i++)
        if (strcmp(minfer_session_provider_name(s, i), "opencl") == 0)
            return i;
    fail_msg("no opencl provider in the session");
    return 0;
}

static minfer_device_counters counters(const minfer_session *s) {
    minfer_device_counters c = {sizeof c, 0, 0, 0, 0};
    assert_int_equal(minfer_session_device_counters(s, opencl_index(s), &c), MINFER_OK);
    return c;
}

static void read_back(const minfer_tensor *t, float *out) {
    assert_string_equal(minfer_tensor_device(t), "opencl");
    assert_null(minfer_tensor_data(t));
    assert_int_equal(minfer_tensor_nbytes(t), N * sizeof(float));
    assert_int_equal(minfer_tensor_copy_to_host(t, out, N * sizeof(float)), MINFER_OK);
}

static const float X[N] = {1, -2, 3.5f, 0.25f, -1.5f, 2};

/* Two runs chained through host memory, then the same two on the device:
 * the same values, and the chained run made no host transfer. */
static void test_chain(void **state) {
    (void)state;
    minfer_session *s = make_session("opencl", 0);
    const char *in_name[] = {"x"}, *out_name[] = {"y"}, *on_dev[] = {"opencl"};
    /* through the host */
    minfer_tensor *x = host_tensor(X), *y1 = NULL, *y2 = NULL;
    assert_int_equal(minfer_session_run(s, in_name, (const minfer_tensor *const *)&x, 1,
                                        out_name, &y1, 1), MINFER_OK);
    assert_int_equal(minfer_session_run(s, in_name, (const minfer_tensor *const *)&y1, 1,
                                        out_name, &y2, 1), MINFER_OK);
    minfer_device_counters host_run = counters(s);
    assert_true(host_run.transfers >= 2); /* x up, y down */
    /* on the device: x uploaded once, y1 and y2 stay */
    minfer_tensor *dx = NULL, *d1 = NULL, *d2 = NULL;
    assert_int_equal(minfer_session_device_tensor_create(s, "opencl", MINFER_DTYPE_FLOAT, DIMS,
                                                         2, &dx), MINFER_OK);
    assert_string_equal(minfer_tensor_device(dx), "opencl");
    assert_int_equal(minfer_tensor_copy_from_host(dx, X, sizeof X), MINFER_OK);
    assert_int_equal(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&dx,
                                              1, out_name, &d1, on_dev, 1), MINFER_OK);
    assert_non_null(d1);
    assert_int_equal(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&d1,
                                              1, out_name, &d2, on_dev, 1), MINFER_OK);
    minfer_device_counters chained = counters(s);
    assert_int_equal(chained.transfers, 0);
    assert_true(chained.launches > 0);
    /* a third run into a given device value (d1, reused) */
    assert_int_equal(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&d2,
                                              1, out_name, &d1, NULL, 1), MINFER_OK);
    assert_int_equal(counters(s).transfers, 0);
    float a[N], b[N], c[N], h3[N];
    read_back(d2, a);
    memcpy(b, minfer_tensor_data(y2), sizeof b);
    for (int i = 0; i < N; i++)
        assert_float_equal(a[i], b[i], 0);
    /* the third run against the host's */
    minfer_tensor *y3 = NULL;
    assert_int_equal(minfer_session_run(s, in_name, (const minfer_tensor *const *)&y2, 1,
                                        out_name, &y3, 1), MINFER_OK);
    /* a host output slot and device inputs mix: the output comes down
     * (a read of a device value counts in the next run's figures) */
    minfer_tensor *hy = NULL;
    assert_int_equal(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&d1,
                                              1, out_name, &hy, NULL, 1), MINFER_OK);
    assert_string_equal(minfer_tensor_device(hy), "cpu");
    assert_int_equal(counters(s).transfers, 1);
    read_back(d1, c);
    memcpy(h3, minfer_tensor_data(y3), sizeof h3);
    for (int i = 0; i < N; i++)
        assert_float_equal(c[i], h3[i], 0);
    minfer_tensor_free(hy);
    minfer_tensor_free(y3);
    minfer_tensor_free(dx);
    minfer_tensor_free(d1);
    minfer_tensor_free(d2);
    minfer_tensor_free(x);
    minfer_tensor_free(y1);
    minfer_tensor_free(y2);
    minfer_session_free(s);
}

/* An input a CPU node reads too comes down once (its opencl consumer
 * reads it in place), an output the CPU provider computed goes up. */
static void test_mixed(void **state) {
    (void)state;
    minfer_session *s = make_session("opencl,cpu", 1);
    const char *in_name[] = {"x"}, *out_name[] = {"y", "h"}, *on_dev[] = {"opencl", "opencl"};
    minfer_tensor *x = host_tensor(X), *hout[2] = {NULL, NULL}, *dout[2] = {NULL, NULL};
    assert_int_equal(minfer_session_run(s, in_name, (const minfer_tensor *const *)&x, 1,
                                        out_name, hout, 2), MINFER_OK);
    minfer_tensor *dx = NULL;
    assert_int_equal(minfer_session_device_tensor_create(s, "opencl", MINFER_DTYPE_FLOAT, DIMS,
                                                         2, &dx), MINFER_OK);
    assert_int_equal(minfer_tensor_copy_from_host(dx, X, sizeof X), MINFER_OK);
    assert_int_equal(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&dx,
                                              1, out_name, dout, on_dev, 2), MINFER_OK);
    float a[N];
    for (int o = 0; o < 2; o++) {
        read_back(dout[o], a);
        for (int i = 0; i < N; i++)
            assert_float_equal(a[i], ((float *)minfer_tensor_data(hout[o]))[i], 0);
    }
    for (int o = 0; o < 2; o++) {
        minfer_tensor_free(hout[o]);
        minfer_tensor_free(dout[o]);
    }
    minfer_tensor_free(x);
    minfer_tensor_free(dx);
    minfer_session_free(s);
}

static void expect_error(minfer_status got, minfer_status want, const char *needle) {
    if (got != want || !strstr(minfer_last_error(), needle))
        fail_msg("expected %s with '%s', got %s: %s", minfer_status_str(want), needle,
                 minfer_status_str(got), minfer_last_error());
}

static void test_errors(void **state) {
    (void)state;
    minfer_session *s = make_session("opencl", 0), *s2 = make_session("opencl", 0);
    minfer_session *cpu = make_session("cpu", 0);
    const char *in_name[] = {"x"}, *out_name[] = {"y"};
    const int64_t wrong[2] = {3, 2};
    minfer_tensor *t = NULL, *other = NULL, *bad = NULL, *out = NULL, *i64 = NULL;
    /* no such device / host-memory provider */
    expect_error(minfer_session_device_tensor_create(cpu, "opencl", MINFER_DTYPE_FLOAT, DIMS, 2,
                                                     &t), MINFER_ERR_INVALID_ARG,
                 "no provider 'opencl'");
    assert_null(t);
    expect_error(minfer_session_device_tensor_create(cpu, "cpu", MINFER_DTYPE_FLOAT, DIMS, 2, &t),
                 MINFER_ERR_INVALID_ARG, "host memory");
    expect_error(minfer_session_device_tensor_create(s, "opencl", MINFER_DTYPE_STRING, DIMS, 2,
                                                     &t), MINFER_ERR_TYPE, "string");
    const char *cuda[] = {"cuda"};
    minfer_tensor *x = host_tensor(X);
    expect_error(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&x, 1,
                                          out_name, &out, cuda, 1), MINFER_ERR_INVALID_ARG,
                 "cannot stay on 'cuda'");
    assert_null(out);
    /* wrong shape and type of a given output, wrong session */
    assert_int_equal(minfer_session_device_tensor_create(s, "opencl", MINFER_DTYPE_FLOAT, wrong,
                                                         2, &bad), MINFER_OK);
    expect_error(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&x, 1,
                                          out_name, &bad, NULL, 1), MINFER_ERR_SHAPE,
                 "device value given for it is [3,2]");
    assert_int_equal(minfer_session_device_tensor_create(s, "opencl", MINFER_DTYPE_INT64, DIMS,
                                                         2, &i64), MINFER_OK);
    expect_error(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&x, 1,
                                          out_name, &i64, NULL, 1), MINFER_ERR_TYPE, "int64");
    expect_error(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&i64, 1,
                                          out_name, &out, NULL, 1), MINFER_ERR_TYPE, "int64");
    expect_error(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&bad, 1,
                                          out_name, &out, NULL, 1), MINFER_ERR_SHAPE, "[3,2]");
    assert_int_equal(minfer_session_device_tensor_create(s2, "opencl", MINFER_DTYPE_FLOAT, DIMS,
                                                         2, &other), MINFER_OK);
    expect_error(minfer_session_run(s, in_name, (const minfer_tensor *const *)&other, 1, out_name,
                                    &out, 1), MINFER_ERR_INVALID_ARG, "another session");
    expect_error(minfer_session_run(cpu, in_name, (const minfer_tensor *const *)&other, 1,
                                    out_name, &out, 1), MINFER_ERR_INVALID_ARG, "another session");
    expect_error(minfer_session_run_bound(s, NULL, in_name, (const minfer_tensor *const *)&x, 1,
                                          out_name, &other, NULL, 1), MINFER_ERR_INVALID_ARG,
                 "another session");
    /* copies of the wrong size; asynchronous runs refuse device inputs */
    float buf[N + 1];
    expect_error(minfer_tensor_copy_to_host(other, buf, sizeof buf), MINFER_ERR_SHAPE, "bytes");
    expect_error(minfer_tensor_copy_from_host(other, buf, 4), MINFER_ERR_SHAPE, "bytes");
    minfer_request *req = NULL;
    assert_int_not_equal(minfer_session_submit(s2, in_name, (const minfer_tensor *const *)&other,
                                               1, NULL, NULL, &req), MINFER_OK);
    /* a device value outliving its session holds nothing */
    minfer_session_free(s2);
    expect_error(minfer_tensor_copy_to_host(other, buf, N * sizeof(float)),
                 MINFER_ERR_INVALID_ARG, "was freed");
    expect_error(minfer_session_run(s, in_name, (const minfer_tensor *const *)&other, 1, out_name,
                                    &out, 1), MINFER_ERR_INVALID_ARG, "was freed");
    assert_string_equal(minfer_tensor_device(other), "opencl");
    minfer_tensor_free(other);
    minfer_tensor_free(bad);
    minfer_tensor_free(i64);
    minfer_tensor_free(x);
    minfer_session_free(s);
    minfer_session_free(cpu);
}

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
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain),
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_errors),
    };
    if (!have_device()) {
        print_message("skipping: no OpenCL platform or device\n");
        return 77;
    }
    int failed = cmocka_run_group_tests_name("device values, float storage", tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("device values, fp16=1", tests, pass_fp16, NULL);
    return failed != 0;
}
