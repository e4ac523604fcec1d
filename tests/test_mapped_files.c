/*
 * Model files changed on disk under a live session (issue 39, the mapped
 * file policy of docs/reliability.md): a session never reads its model file
 * through a mapping after creation, so truncating the file cannot end the
 * process with SIGBUS, and rewriting it in place cannot change the session's
 * weights silently.
 *
 * The model: Conv(x, W) -> y, which oneDNN packs, and Expand(W, Shape(e)) ->
 * z, which reads W's plain bytes (folded for batch 1, so at batch 1 every
 * reader of W is packed and its plain copy is given back). Cases:
 *  1. an .onnx on onednn,cpu: run, truncate the file, run at a new shape
 *     (W read again): an error naming the file, or the right result; the
 *     same after rewriting W's bytes in place at the same size;
 *  2. a .mfc from its path, on cpu and onednn,cpu: truncate or rewrite the
 *     file, run at new shapes: the right results (the session has its own
 *     copy);
 *  3. a .mfc from memory on onednn,cpu: every shape's y equals the CPU
 *     provider's (the anonymous copy's pages were dropped with
 *     MADV_DONTNEED and read back as zeros).
 * y is checked against a cpu-only session, z against W, every run.
 */
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
#include "minfer/compile.h"
#include "minfer/minfer.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define C 64
#define WN (C * C * 9)

static float weight[WN];
static uint8_t *onnx_bytes;
static size_t onnx_len;
static char dir[] = "/tmp/minfer-mapped-XXXXXX";
static char onnx_path[128], mfc_path[128], mfc_dnn_path[128];
static minfer_session *ref; /* cpu only, from the untouched bytes */
static int have_onednn;

static void dim_name(Onnx__ValueInfoProto *vi, int d, const char *name) {
    Onnx__TensorShapeProto__Dimension *dim = vi->type->tensor_type->shape->dim[d];
    free(dim->dim_param);
    dim->dim_param = ob_str(name);
}

static int write_file(const char *path, const void *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(bytes, 1, len, f) == len;
    if (f)
        ok = fclose(f) == 0 && ok;
    return ok ? 0 : -1;
}

static uint8_t *read_all(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*len ? *len : 1);
    if (b && fread(b, 1, *len, f) != *len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

/* Overwrites the file's bytes in place (same inode, same size): every
 * float that equals W[0..] in the file is replaced by its negation. */
static void rewrite_in_place(const char *path) {
    size_t len;
    uint8_t *b = read_all(path, &len);
    assert_non_null(b);
    const uint8_t *w = (const uint8_t *)weight;
    size_t changed = 0;
    for (size_t at = 0; at + sizeof weight <= len; at++)
        if (memcmp(b + at, w, 256) == 0 && memcmp(b + at, w, sizeof weight) == 0) {
            float *f = (float *)(void *)(b + at);
            for (size_t i = 0; i < WN; i++) {
                float v;
                memcpy(&v, (char *)f + i * 4, 4);
                v = -v - 1.0f;
                memcpy((char *)f + i * 4, &v, 4);
            }
            changed++;
            at += sizeof weight - 1;
        }
    assert_true(changed > 0);
    FILE *f = fopen(path, "r+b"); /* not O_TRUNC: the pages of a mapping */
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(b);
}

static void truncate_file(const char *path) { assert_int_equal(truncate(path, 100), 0); }

static minfer_options *options(const char *providers) {
    minfer_options *opt = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, providers), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, 1), MINFER_OK);
    assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_ERROR), MINFER_OK);
    return opt;
}

static minfer_session *open_path(const char *path, const char *providers) {
    minfer_options *opt = options(providers);
    minfer_session *s = NULL;
    minfer_status st = minfer_session_create(path, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("session %s: %s", path, minfer_last_error());
    return s;
}

static minfer_session *open_memory(const void *bytes, size_t len, const char *providers) {
    minfer_options *opt = options(providers);
    minfer_session *s = NULL;
    minfer_status st = minfer_session_create_from_memory(bytes, len, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("session from memory: %s", minfer_last_error());
    return s;
}

/* Runs s with an image of side hw and e of batch n; returns its status,
 * and on success checks z == W n times and y against the reference. */
static minfer_status run(minfer_session *s, int64_t hw, int64_t n) {
    minfer_tensor *in[2] = {NULL, NULL}, *out[2] = {NULL, NULL}, *want[2] = {NULL, NULL};
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, (const int64_t[]){1, C, hw, hw}, 4,
                                          &in[0]),
                     MINFER_OK);
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, (const int64_t[]){n, 1, 1, 1, 1}, 5,
                                          &in[1]),
                     MINFER_OK);
    float *x = minfer_tensor_data(in[0]);
    for (int64_t i = 0; i < C * hw * hw; i++)
        x[i] = (float)(i % 5) / 4.0f;
    const char *names[2] = {"x", "e"};
    minfer_status st = minfer_session_run(s, names, (const minfer_tensor *const *)in, 2, NULL, out, 2);
    if (st == MINFER_OK) {
        assert_int_equal(minfer_session_run(ref, names, (const minfer_tensor *const *)in, 2, NULL,
                                            want, 2),
                         MINFER_OK);
        assert_int_equal(minfer_tensor_numel(out[1]), n * WN);
        const float *z = minfer_tensor_data(out[1]);
        for (int64_t k = 0; k < n; k++)
            assert_memory_equal(z + k * WN, weight, sizeof weight);
        const float *y = minfer_tensor_data(out[0]), *wy = minfer_tensor_data(want[0]);
        assert_int_equal(minfer_tensor_numel(out[0]), C * hw * hw);
        for (int64_t i = 0; i < C * hw * hw; i++)
            if (!(y[i] - wy[i] < 1e-3f + 1e-3f * (wy[i] < 0 ? -wy[i] : wy[i]) &&
                  wy[i] - y[i] < 1e-3f + 1e-3f * (wy[i] < 0 ? -wy[i] : wy[i])))
                fail_msg("side %lld batch %lld: y[%lld] = %g, the CPU provider's %g",
                         (long long)hw, (long long)n, (long long)i, (double)y[i], (double)wy[i]);
    }
    for (int i = 0; i < 2; i++) {
        minfer_tensor_free(in[i]);
        minfer_tensor_free(out[i]);
        minfer_tensor_free(want[i]);
    }
    return st;
}

static void run_ok(minfer_session *s, int64_t hw, int64_t n) {
    if (run(s, hw, n) != MINFER_OK)
        fail_msg("run (side %lld, batch %lld): %s", (long long)hw, (long long)n,
                 minfer_last_error());
}

/* A run after the file changed: the right result (0), or an error that
 * names the file (1). */
static int run_changed(minfer_session *s, int64_t hw, int64_t n, const char *path) {
    if (run(s, hw, n) == MINFER_OK)
        return 0;
    const char *msg = minfer_last_error();
    if (!strstr(msg, path) || !strstr(msg, "changed"))
        fail_msg("run after the file changed: '%s' names neither %s nor the change", msg, path);
    return 1;
}

static void restore_files(void) {
    assert_int_equal(write_file(onnx_path, onnx_bytes, onnx_len), 0);
}

static void test_onnx_truncated_and_rewritten_under_onednn(void **state) {
    (void)state;
    if (!have_onednn)
        skip();
    restore_files();
    minfer_session *s = open_path(onnx_path, "onednn,cpu");
    run_ok(s, 8, 1); /* every reader of W packed or folded: its copy given back */
    truncate_file(onnx_path);
    /* a new shape: W packed again, read again from the file: an error */
    assert_int_equal(run_changed(s, 16, 1, onnx_path), 1);
    run_changed(s, 8, 2, onnx_path); /* the Expand reads W's plain bytes */
    run_ok(s, 8, 1);                 /* the plan of before, from the cache */
    minfer_session_free(s);

    restore_files();
    s = open_path(onnx_path, "onednn,cpu");
    run_ok(s, 8, 1);
    rewrite_in_place(onnx_path);
    assert_int_equal(run_changed(s, 16, 1, onnx_path), 1);
    run_changed(s, 8, 2, onnx_path);
    run_ok(s, 8, 1);
    minfer_session_free(s);
    restore_files();
}

static void mfc_case(const char *path, const char *providers) {
    minfer_options *opt = options(providers);
    restore_files();
    minfer_status st = minfer_compile_model(onnx_path, path, opt);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("compile: %s", minfer_last_error());
    minfer_session *s = open_path(path, providers);
    run_ok(s, 8, 1);
    truncate_file(path);
    run_ok(s, 16, 1);
    run_ok(s, 8, 2);
    minfer_session_free(s);

    opt = options(providers);
    assert_int_equal(minfer_compile_model(onnx_path, path, opt), MINFER_OK);
    minfer_options_free(opt);
    s = open_path(path, providers);
    run_ok(s, 8, 1);
    rewrite_in_place(path);
    run_ok(s, 16, 1);
    run_ok(s, 8, 2);
    run_ok(s, 8, 1);
    minfer_session_free(s);
}

static void test_mfc_truncated_and_rewritten_cpu(void **state) {
    (void)state;
    mfc_case(mfc_path, "cpu");
}

static void test_mfc_truncated_and_rewritten_onednn(void **state) {
    (void)state;
    if (!have_onednn)
        skip();
    mfc_case(mfc_dnn_path, "onednn,cpu");
}

static void test_mfc_from_memory_onednn(void **state) {
    (void)state;
    if (!have_onednn)
        skip();
    minfer_options *opt = options("onednn,cpu");
    restore_files();
    assert_int_equal(minfer_compile_model(onnx_path, mfc_dnn_path, opt), MINFER_OK);
    minfer_options_free(opt);
    size_t len;
    uint8_t *b = read_all(mfc_dnn_path, &len);
    assert_non_null(b);
    minfer_session *s = open_memory(b, len, "onednn,cpu");
    memset(b, 0, len); /* the caller's bytes are its own */
    free(b);
    run_ok(s, 8, 1);
    run_ok(s, 16, 1);
    run_ok(s, 8, 2);
    run_ok(s, 12, 1);
    minfer_session_free(s);
}

static int setup(void **state) {
    (void)state;
    for (int i = 0; i < WN; i++)
        weight[i] = (float)(i % 17 - 8) / 64.0f + (float)(i % 7) / 4096.0f;
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    ob_input(g, "x", T_FLOAT, 4, (const int64_t[]){1, C, -1, -1});
    dim_name(g->input[0], 2, "H");
    dim_name(g->input[0], 3, "W");
    ob_input(g, "e", T_FLOAT, 5, (const int64_t[]){-1, 1, 1, 1, 1});
    ob_init(g, "w", T_FLOAT, 4, (const int64_t[]){C, C, 3, 3}, weight, sizeof weight);
    Onnx__NodeProto *conv = ob_node(g, "Conv", "x w", "y");
    ob_attr_ints(conv, "pads", 4, (const int64_t[]){1, 1, 1, 1});
    ob_node(g, "Shape", "e", "s");
    ob_node(g, "Expand", "w s", "z");
    ob_output(g, "y", T_FLOAT);
    ob_output(g, "z", T_FLOAT);
    onnx_bytes = ob_finish(m, &onnx_len);
    if (!mkdtemp(dir))
        return -1;
    snprintf(onnx_path, sizeof onnx_path, "%s/m.onnx", dir);
    snprintf(mfc_path, sizeof mfc_path, "%s/m.mfc", dir);
    snprintf(mfc_dnn_path, sizeof mfc_dnn_path, "%s/m-dnn.mfc", dir);
    minfer_options *opt = NULL;
    if (minfer_options_create(&opt) != MINFER_OK ||
        minfer_options_set_providers_str(opt, "cpu") != MINFER_OK ||
        minfer_session_create_from_memory(onnx_bytes, onnx_len, opt, &ref) != MINFER_OK)
        return -1;
    minfer_options_free(opt);
    /* oneDNN loads and takes the Conv: else the packing cases are skipped. */
    minfer_session *s = NULL;
    opt = NULL;
    if (minfer_options_create(&opt) != MINFER_OK ||
        minfer_options_set_providers_str(opt, "onednn,cpu") != MINFER_OK ||
        minfer_options_set_log_level(opt, MINFER_LOG_ERROR) != MINFER_OK)
        return -1;
    if (minfer_session_create_from_memory(onnx_bytes, onnx_len, opt, &s) == MINFER_OK)
        for (size_t i = 0; i < minfer_session_node_count(s); i++) {
            minfer_node_placement pl;
            memset(&pl, 0, sizeof pl);
            if (minfer_session_node_placement(s, i, &pl) == MINFER_OK && pl.op_type &&
                strcmp(pl.op_type, "Conv") == 0)
                have_onednn = pl.provider && strcmp(pl.provider, "onednn") == 0;
        }
    minfer_session_free(s);
    minfer_options_free(opt);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    minfer_session_free(ref);
    unlink(onnx_path);
    unlink(mfc_path);
    unlink(mfc_dnn_path);
    rmdir(dir);
    free(onnx_bytes);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mfc_from_memory_onednn),
        cmocka_unit_test(test_mfc_truncated_and_rewritten_cpu),
        cmocka_unit_test(test_mfc_truncated_and_rewritten_onednn),
        cmocka_unit_test(test_onnx_truncated_and_rewritten_under_onednn),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
