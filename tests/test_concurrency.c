/*
 * Concurrent runs on one session: 8 threads, 200 runs each, batch sizes 1-4
 * mixed, a plan cache smaller than the number of shapes (so plans are built
 * and evicted while other runs use theirs). Every output must equal the
 * result of a sequential run of the same input. Built also under
 * ThreadSanitizer in CI.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "test_util.h"

#define THREADS 8
#define RUNS 200
#define MAX_BATCH 4

static minfer_session *sess;
static minfer_tensor *inputs[MAX_BATCH + 1];
static minfer_tensor *expected[MAX_BATCH + 1];
static atomic_int_fast32_t failures;

/* x [N,3,8,8] -> Conv(4x3x3x3, pad 1) -> Relu -> Reshape [N,-1] (from
 * Shape/Gather/Unsqueeze/Concat) -> MatMul [256,5] -> Add -> Softmax. */
static minfer_session *build(void) {
    minfer_graph_builder *b = NULL;
    assert_ok(minfer_builder_create(13, &b));
    int64_t xd[4] = {-1, 3, 8, 8};
    const char *xn[4] = {"N", NULL, NULL, NULL};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xd, 4, xn));

    static float w[4 * 3 * 3 * 3], bias[4], w2[256 * 5], b2[5];
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        w[i] = (float)((int)(i * 37 % 19) - 9) / 17.0f;
    for (size_t i = 0; i < 4; i++)
        bias[i] = 0.1f * (float)i - 0.15f;
    for (size_t i = 0; i < sizeof w2 / sizeof *w2; i++)
        w2[i] = (float)((int)(i * 53 % 23) - 11) / 97.0f;
    for (size_t i = 0; i < 5; i++)
        b2[i] = 0.01f * (float)i;
    minfer_tensor *t = NULL;
    int64_t wd[4] = {4, 3, 3, 3}, bd[1] = {4}, w2d[2] = {256, 5}, b2d[1] = {5}, one[1] = {1};
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, wd, 4, w, sizeof w, &t));
    assert_ok(minfer_builder_add_initializer(b, "w", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, bd, 1, bias, sizeof bias, &t));
    assert_ok(minfer_builder_add_initializer(b, "b", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, w2d, 2, w2, sizeof w2, &t));
    assert_ok(minfer_builder_add_initializer(b, "w2", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, b2d, 1, b2, sizeof b2, &t));
    assert_ok(minfer_builder_add_initializer(b, "b2", t));
    minfer_tensor_free(t);
    static int64_t zero_idx[1] = {0}, minus1[1] = {-1}, axes0[1] = {0};
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_INT64, NULL, 0, zero_idx, sizeof zero_idx, &t));
    assert_ok(minfer_builder_add_initializer(b, "i0", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_INT64, one, 1, minus1, sizeof minus1, &t));
    assert_ok(minfer_builder_add_initializer(b, "m1", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_INT64, one, 1, axes0, sizeof axes0, &t));
    assert_ok(minfer_builder_add_initializer(b, "ax0", t));
    minfer_tensor_free(t);

    size_t n;
    const char *conv_in[] = {"x", "w", "b"}, *conv_out[] = {"c"};
    assert_ok(minfer_builder_add_node(b, "Conv", NULL, "conv", conv_in, 3, conv_out, 1, &n));
    int64_t pads[4] = {1, 1, 1, 1};
    assert_ok(minfer_builder_set_attr_ints(b, n, "pads", pads, 4));
    const char *r_in[] = {"c"}, *r_out[] = {"r"};
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu", r_in, 1, r_out, 1, NULL));
    const char *sh_in[] = {"r"}, *sh_out[] = {"shape"};
    assert_ok(minfer_builder_add_node(b, "Shape", NULL, "shape", sh_in, 1, sh_out, 1, NULL));
    const char *g_in[] = {"shape", "i0"}, *g_out[] = {"batch"};
    assert_ok(minfer_builder_add_node(b, "Gather", NULL, "gather", g_in, 2, g_out, 1, NULL));
    const char *u_in[] = {"batch", "ax0"}, *u_out[] = {"batch1"};
    assert_ok(minfer_builder_add_node(b, "Unsqueeze", NULL, "unsq", u_in, 2, u_out, 1, NULL));
    const char *c_in[] = {"batch1", "m1"}, *c_out[] = {"target"};
    assert_ok(minfer_builder_add_node(b, "Concat", NULL, "concat", c_in, 2, c_out, 1, &n));
    assert_ok(minfer_builder_set_attr_int(b, n, "axis", 0));
    const char *rs_in[] = {"r", "target"}, *rs_out[] = {"flat"};
    assert_ok(minfer_builder_add_node(b, "Reshape", NULL, "reshape", rs_in, 2, rs_out, 1, NULL));
    const char *mm_in[] = {"flat", "w2"}, *mm_out[] = {"mm"};
    assert_ok(minfer_builder_add_node(b, "MatMul", NULL, "matmul", mm_in, 2, mm_out, 1, NULL));
    const char *a_in[] = {"mm", "b2"}, *a_out[] = {"logits"};
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "add", a_in, 2, a_out, 1, NULL));
    const char *s_in[] = {"logits"}, *s_out[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Softmax", NULL, "softmax", s_in, 1, s_out, 1, &n));
    assert_ok(minfer_builder_set_attr_int(b, n, "axis", 1));
    assert_ok(minfer_builder_add_output(b, "y"));

    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    const char *providers = getenv("MINFER_TEST_PROVIDERS");
    assert_ok(minfer_options_set_providers_str(opt, providers && *providers ? providers : "cpu"));
    assert_ok(minfer_options_set_threads(opt, 2));
    assert_ok(minfer_options_set_plan_cache_size(opt, 2));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    minfer_builder_free(b);
    return s;
}

static void *worker(void *arg) {
    unsigned id = (unsigned)(uintptr_t)arg;
    const char *in_name[] = {"x"};
    for (int r = 0; r < RUNS; r++) {
        int batch = 1 + (int)((id * 7u + (unsigned)r * 3u) % MAX_BATCH);
        minfer_tensor *out = NULL;
        if (minfer_session_run(sess, in_name, (const minfer_tensor *const *)&inputs[batch], 1,
                               NULL, &out, 1) != MINFER_OK) {
            fprintf(stderr, "thread %u run %d: %s\n", id, r, minfer_last_error());
            atomic_fetch_add(&failures, 1);
            continue;
        }
        size_t bytes = minfer_tensor_nbytes(out);
        if (bytes != minfer_tensor_nbytes(expected[batch]) ||
            memcmp(minfer_tensor_data(out), minfer_tensor_data(expected[batch]), bytes) != 0) {
            fprintf(stderr, "thread %u run %d: batch %d differs from the sequential result\n", id,
                    r, batch);
            atomic_fetch_add(&failures, 1);
        }
        minfer_tensor_free(out);
    }
    return NULL;
}

static void test_concurrent_runs(void **state) {
    (void)state;
    sess = build();
    const char *in_name[] = {"x"};
    for (int b = 1; b <= MAX_BATCH; b++) {
        int64_t d[4] = {b, 3, 8, 8};
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, d, 4, &inputs[b]));
        float *x = minfer_tensor_data(inputs[b]);
        for (int64_t i = 0; i < minfer_tensor_numel(inputs[b]); i++)
            x[i] = (float)((i * 31 + b * 7) % 29 - 14) / 9.0f;
        assert_ok(minfer_session_run(sess, in_name, (const minfer_tensor *const *)&inputs[b], 1,
                                     NULL, &expected[b], 1));
    }
    pthread_t th[THREADS];
    for (unsigned i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i), 0);
    for (unsigned i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&failures), 0);
    for (int b = 1; b <= MAX_BATCH; b++) {
        minfer_tensor_free(inputs[b]);
        minfer_tensor_free(expected[b]);
    }
    minfer_session_free(sess);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_concurrent_runs)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
