/*
 * A weight's plain copy given back after packing (core/plan/weights.c) while
 * another cached plan still reads it. Weight W (64x64x3x3, 144 KiB, in an
 * ONNX file) feeds a Conv, which oneDNN packs, and an Expand to the shape of
 * input e: with e of batch 1 the Expand is small enough to fold, so every
 * reader of W is packed or folded and the plan gives W's copy back; with
 * batch 2 it does not fold and runs on the CPU provider, reading the copy.
 * Plans for both stay in the cache, in these orders:
 *
 *  1. batch 2 first (its plan reads the copy), then batch 1 (all packed:
 *     it gave the copy back while the first plan still pointed at it), then
 *     batch 2 again from the cache;
 *  2. batch 1 first (gives the copy back), batch 2 (the copy read again
 *     from the file, for the CPU reader), batch 1 with another image size
 *     (a third plan, all packed: it gave that copy back too), batch 2 again.
 *
 * The Expand's output must equal W every time (under ASan the freed copy's
 * read is an error; in a plain build the unmapped copy faults). Skipped
 * (exit 77) in a build without the oneDNN provider; in one with it, a
 * oneDNN that does not take the Conv fails.
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
#include "minfer/minfer.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define C 64
#define WN (C * C * 9)

static float weight[WN];
static char model_path[] = "/tmp/minfer-weights-plans-XXXXXX";

/* Names a symbolic dimension (ob_value_info calls them all N). */
static void dim_name(Onnx__ValueInfoProto *vi, int d, const char *name) {
    Onnx__TensorShapeProto__Dimension *dim = vi->type->tensor_type->shape->dim[d];
    free(dim->dim_param);
    dim->dim_param = ob_str(name);
}

static int write_model(void) {
    for (int i = 0; i < WN; i++)
        weight[i] = (float)(i % 17 - 8) / 64.0f;
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
    size_t len;
    uint8_t *bytes = ob_finish(m, &len);
    int fd = mkstemp(model_path);
    int ok = fd >= 0 && write(fd, bytes, len) == (ssize_t)len;
    if (fd >= 0)
        close(fd);
    free(bytes);
    return ok ? 0 : -1;
}

static minfer_session *open_session(void) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, "onednn,cpu"), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, 1), MINFER_OK);
    minfer_status st = minfer_session_create(model_path, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("session: %s", minfer_last_error());
    return s;
}

/* One run with an image of side hw and e of batch n: z must be n copies of
 * W, y the convolution's shape. */
static void run(minfer_session *s, int64_t hw, int64_t n) {
    minfer_tensor *in[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
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
    if (st != MINFER_OK)
        fail_msg("run (side %lld, batch %lld): %s", (long long)hw, (long long)n,
                 minfer_last_error());
    assert_int_equal(minfer_tensor_numel(out[0]), C * hw * hw);
    assert_int_equal(minfer_tensor_numel(out[1]), n * WN);
    const float *z = minfer_tensor_data(out[1]);
    for (int64_t k = 0; k < n; k++)
        assert_memory_equal(z + k * WN, weight, sizeof weight);
    for (int i = 0; i < 2; i++) {
        minfer_tensor_free(in[i]);
        minfer_tensor_free(out[i]);
    }
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

static void test_plan_reads_a_copy_another_plan_packed(void **state) {
    (void)state;
    minfer_session *s = open_session();
    if (!conv_on_onednn(s))
        fail_msg("the Conv does not run on onednn (in a build with oneDNN)");
    run(s, 8, 2);
    run(s, 8, 1);
    run(s, 8, 2);
    minfer_session_free(s);

    s = open_session();
    run(s, 8, 1);
    run(s, 8, 2);
    run(s, 16, 1);
    run(s, 8, 2);
    run(s, 16, 1);
    minfer_session_free(s);
}

int main(void) {
    if (!HAVE_ONEDNN) { /* ctest: skipped (SKIP_RETURN_CODE) */
        printf("skipped: this build has no oneDNN provider\n");
        return 77;
    }
    if (write_model() != 0) {
        fprintf(stderr, "could not write %s\n", model_path);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_reads_a_copy_another_plan_packed),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(model_path);
    return rc;
}
