/*
 * A large weight packed by oneDNN a slice at a time, its plain copy given
 * back as the packed one grows (providers/onednn/build.c reorder_sliced,
 * minfer_host_api.const_consumed, core/plan/weights.c), issue 18.
 *
 * The model, in an ONNX file: y = Conv(x, W) with W 1000x640x3x3 (22 MiB;
 * 1000 output channels, not a whole number of oneDNN's 16-channel blocks,
 * so the last slice ends in padding), and z = Mul(W, k) with k a graph
 * input, a reader of W that does not pack it.
 *
 *  1. test_resident_once: without the Mul (its own model file), creating
 *     the session and running it must raise the process's peak RSS by less
 *     than 1.5 W over what it was: loading copies W out of the file, and
 *     packing reorders it, and before this change either step held W twice
 *     (the copy beside the file's pages, the plain copy beside the packed
 *     one), peak + 2 W. Not checked under AddressSanitizer (its shadow and
 *     quarantine are resident memory too); the outputs still are.
 *  2. test_outputs: y equals the CPU provider's (the oracle), at 1 and 2
 *     threads (2: the weight-bound Conv splits by output channels and each
 *     piece packs its slice of W in slices), and z equals W exactly: the
 *     pages of W's copy that the Conv gave back while packing were read
 *     again from the file for the Mul.
 * Skipped (exit 77) in a build without the oneDNN provider; in one with
 * it, a oneDNN that does not take the Conv fails. (The peak-RSS part alone
 * is skipped under ASan or without /proc/self/clear_refs.)
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fuzz/onnx_build.h"
#include "minfer/minfer.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define CO 1000
#define CI 640
#define WN (CO * CI * 9)
#define HW 2

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

static float *weight;
static char conv_path[] = "/tmp/minfer-weights-slices-XXXXXX";
static char both_path[] = "/tmp/minfer-weights-slices-XXXXXX";
static char small_path[] = "/tmp/minfer-weights-slices-XXXXXX";

/* Writes Conv(x, W) (co output channels), and Mul(W, k) when with_mul. */
static int write_model(char *path, int co, int with_mul) {
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    ob_input(g, "x", T_FLOAT, 4, (const int64_t[]){1, CI, HW, HW});
    ob_init(g, "w", T_FLOAT, 4, (const int64_t[]){co, CI, 3, 3}, weight,
            (size_t)co * CI * 9 * sizeof(float));
    Onnx__NodeProto *conv = ob_node(g, "Conv", "x w", "y");
    ob_attr_ints(conv, "pads", 4, (const int64_t[]){1, 1, 1, 1});
    ob_output(g, "y", T_FLOAT);
    if (with_mul) {
        ob_input(g, "k", T_FLOAT, 1, (const int64_t[]){1});
        ob_node(g, "Mul", "w k", "z");
        ob_output(g, "z", T_FLOAT);
    }
    size_t len;
    uint8_t *bytes = ob_finish(m, &len);
    int fd = mkstemp(path);
    int ok = fd >= 0 && write(fd, bytes, len) == (ssize_t)len;
    if (fd >= 0)
        close(fd);
    free(bytes);
    return ok ? 0 : -1;
}

static minfer_session *open_session(const char *path, const char *providers, int threads) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, providers), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, threads), MINFER_OK);
    minfer_status st = minfer_session_create(path, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("session (%s): %s", providers, minfer_last_error());
    return s;
}

/* Whether the Conv runs on oneDNN. The test runs only in a build with
 * oneDNN (skipped, exit 77, without it): one that does not take the Conv
 * is a regression, a failure. */
static int conv_on_onednn(minfer_session *s) {
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement pl;
        memset(&pl, 0, sizeof pl);
        if (minfer_session_node_placement(s, i, &pl) == MINFER_OK && pl.op_type &&
            strcmp(pl.op_type, "Conv") == 0)
            return pl.provider && strcmp(pl.provider, "onednn") == 0;
    }
    return 0;
}

/* One run: out[0] = y, out[1] = z when the model has the Mul (k = 1). */
static void run(minfer_session *s, int with_mul, minfer_tensor **out) {
    minfer_tensor *in[2] = {NULL, NULL};
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, (const int64_t[]){1, CI, HW, HW}, 4,
                                          &in[0]),
                     MINFER_OK);
    float *x = minfer_tensor_data(in[0]);
    for (int i = 0; i < CI * HW * HW; i++)
        x[i] = (float)(i % 7 - 3) / 8.0f;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, (const int64_t[]){1}, 1, &in[1]),
                     MINFER_OK);
    *(float *)minfer_tensor_data(in[1]) = 1.0f;
    const char *names[2] = {"x", "k"};
    size_t n = with_mul ? 2 : 1;
    out[0] = out[1] = NULL;
    minfer_status st =
        minfer_session_run(s, names, (const minfer_tensor *const *)in, n, NULL, out, n);
    if (st != MINFER_OK)
        fail_msg("run: %s", minfer_last_error());
    minfer_tensor_free(in[0]);
    minfer_tensor_free(in[1]);
}

/* A figure of /proc/self/status in KiB ("VmRSS", "VmHWM"), -1 if absent. */
static long status_kib(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    size_t k = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, k) == 0 && line[k] == ':')
            v = strtol(line + k + 1, NULL, 10);
    if (f)
        fclose(f);
    return v;
}

static void test_resident_once(void **state) {
    (void)state;
    /* Loads the providers and oneDNN's kernels first, with a small W. */
    minfer_session *s = open_session(small_path, "onednn,cpu", 1);
    if (!conv_on_onednn(s))
        fail_msg("the Conv does not run on onednn (in a build with oneDNN)");
    minfer_tensor *out[2];
    run(s, 0, out);
    minfer_tensor_free(out[0]);
    minfer_session_free(s);
    if (UNDER_ASAN)
        skip();
    /* "5" resets the peak (VmHWM) to the current RSS (Linux >= 4.0). */
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int reset = f && fputs("5", f) >= 0;
    if (f)
        reset = fclose(f) == 0 && reset;
    if (!reset)
        skip();
    long before = status_kib("VmRSS");
    s = open_session(conv_path, "onednn,cpu", 1);
    run(s, 0, out);
    long peak = status_kib("VmHWM");
    minfer_tensor_free(out[0]);
    minfer_session_free(s);
    long w_kib = (long)((size_t)WN * sizeof(float) / 1024);
    print_message("peak RSS rose by %ld KiB, W is %ld KiB\n", peak - before, w_kib);
    assert_true(before > 0 && peak > 0);
    assert_true(peak - before < w_kib * 3 / 2);
}

static void test_outputs(void **state) {
    (void)state;
    minfer_session *ref = open_session(both_path, "cpu", 1);
    minfer_tensor *want[2];
    run(ref, 1, want);
    minfer_session_free(ref);
    for (int threads = 1; threads <= 2; threads++) {
        minfer_session *s = open_session(both_path, "onednn,cpu", threads);
        if (!conv_on_onednn(s))
            fail_msg("the Conv does not run on onednn at %d threads", threads);
        minfer_tensor *got[2];
        run(s, 1, got);
        assert_int_equal(minfer_tensor_numel(got[0]), CO * HW * HW);
        const float *y = minfer_tensor_data(got[0]), *yr = minfer_tensor_data(want[0]);
        for (int i = 0; i < CO * HW * HW; i++)
            if (!(fabsf(y[i] - yr[i]) <= 1e-3f * (1.0f + fabsf(yr[i]))))
                fail_msg("%d threads: y[%d] = %g, the CPU provider's %g", threads, i, y[i],
                         yr[i]);
        assert_int_equal(minfer_tensor_numel(got[1]), WN);
        assert_memory_equal(minfer_tensor_data(got[1]), weight, (size_t)WN * sizeof(float));
        minfer_tensor_free(got[0]);
        minfer_tensor_free(got[1]);
        minfer_session_free(s);
    }
    minfer_tensor_free(want[0]);
    minfer_tensor_free(want[1]);
}

int main(void) {
    if (!HAVE_ONEDNN) { /* ctest: skipped (SKIP_RETURN_CODE) */
        printf("skipped: this build has no oneDNN provider\n");
        return 77;
    }
    weight = malloc((size_t)WN * sizeof(float));
    if (!weight)
        return 1;
    for (int i = 0; i < WN; i++)
        weight[i] = (float)(i % 23 - 11) / 128.0f;
    if (write_model(conv_path, CO, 0) != 0 || write_model(both_path, CO, 1) != 0 ||
        write_model(small_path, 16, 0) != 0) {
        fprintf(stderr, "could not write the models in /tmp\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resident_once),
        cmocka_unit_test(test_outputs),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(conv_path);
    unlink(both_path);
    unlink(small_path);
    free(weight);
    return rc;
}
