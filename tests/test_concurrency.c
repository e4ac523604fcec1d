/*
 * Concurrent runs on one session. Every output of every concurrent run must
 * equal, byte for byte, the result of a sequential run of the same input.
 *
 *  1. A builder graph: 8 threads, 200 runs each, batch sizes 1-4 mixed, a
 *     plan cache smaller than the number of shapes (so plans are built and
 *     evicted while other runs use theirs).
 *  2. Given a directory of models (argv[1]): tiny_encoder and the CNN
 *     squeezenet1_1, each on a fresh session per try (TRIES), from
 *     MODEL_THREADS threads that alternate between the model's test data
 *     sets.
 *
 * The provider list is MINFER_TEST_PROVIDERS (default "cpu"); the first
 * provider of the list must take part of each graph, so a list whose first
 * provider declines everything cannot pass by running on the CPU. When a
 * listed provider does not load because the machine has no OpenCL platform
 * or device, the program says so and exits 77 (ctest's skip); any other
 * reason it does not load is a failure. Built also under ThreadSanitizer in
 * CI (cpu only, without the models).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"

#define THREADS 8
#define RUNS 200
#define MAX_BATCH 4

#define MODEL_THREADS 4
#define TRIES 3
#define MAX_IO 8
#define MAX_CASES 4

/* Inputs and the sequential outputs of one case. */
typedef struct run_case {
    size_t n_in, n_out;
    const char *in_names[MAX_IO];
    minfer_tensor *in[MAX_IO];
    minfer_tensor *want[MAX_IO];
} run_case;

/* What the threads share: the session, the cases and how many runs each. */
typedef struct job {
    minfer_session *sess;
    const char *label;
    run_case *cases;
    size_t n_cases;
    int runs;
    atomic_int_fast32_t failures;
} job;

typedef struct worker_arg {
    job *j;
    unsigned id;
} worker_arg;

static const char *providers(void) {
    const char *p = getenv("MINFER_TEST_PROVIDERS");
    return p && *p ? p : "cpu";
}

static minfer_session *open_session(const char *model, minfer_graph_builder *b) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers()));
    assert_ok(minfer_options_set_threads(opt, 2));
    assert_ok(minfer_options_set_plan_cache_size(opt, 2));
    if (model)
        assert_ok(minfer_session_create(model, opt, &s));
    else
        assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    return s;
}

/* Fails unless the first provider of the list runs at least one node of s. */
static void check_first_provider_used(const minfer_session *s, const char *label) {
    char first[64];
    const char *list = providers();
    size_t len = strcspn(list, ",");
    snprintf(first, sizeof first, "%.*s", (int)len, list);
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_ok(minfer_session_node_placement(s, i, &p));
        if (strcmp(p.provider, first) == 0)
            return;
    }
    fail_msg("%s: no node placed on '%s', the first provider of '%s'", label, first, list);
}

/* x [N,3,8,8] -> Conv(4x3x3x3, pad 1) -> Relu -> Reshape [N,-1] (from
 * Shape/Gather/Unsqueeze/Concat) -> MatMul [256,5] -> Add -> Softmax. */
static minfer_graph_builder *build(void) {
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
    return b;
}

/* Every graph output of one run of case c; 0 on success. */
static int run_once(minfer_session *s, const run_case *c, minfer_tensor **out) {
    for (size_t o = 0; o < c->n_out; o++)
        out[o] = NULL;
    return minfer_session_run(s, c->in_names, (const minfer_tensor *const *)c->in, c->n_in, NULL,
                              out, c->n_out) != MINFER_OK;
}

/* Fills each case's expected outputs from a sequential run. */
static void run_sequential(minfer_session *s, run_case *cases, size_t n_cases) {
    for (size_t k = 0; k < n_cases; k++) {
        cases[k].n_out = minfer_session_output_count(s);
        assert_true(cases[k].n_out >= 1 && cases[k].n_out <= MAX_IO);
        if (run_once(s, &cases[k], cases[k].want))
            fail_msg("sequential run of case %zu: %s", k, minfer_last_error());
    }
}

static void *worker(void *varg) {
    const worker_arg *a = varg;
    job *j = a->j;
    for (int r = 0; r < j->runs; r++) {
        size_t k = ((size_t)a->id * 7u + (size_t)r * 3u) % j->n_cases;
        const run_case *c = &j->cases[k];
        minfer_tensor *out[MAX_IO];
        if (run_once(j->sess, c, out)) {
            fprintf(stderr, "%s: thread %u run %d: %s\n", j->label, a->id, r,
                    minfer_last_error());
            atomic_fetch_add(&j->failures, 1);
            continue;
        }
        for (size_t o = 0; o < c->n_out; o++) {
            size_t bytes = minfer_tensor_nbytes(out[o]);
            if (bytes != minfer_tensor_nbytes(c->want[o]) ||
                memcmp(minfer_tensor_data(out[o]), minfer_tensor_data(c->want[o]), bytes) != 0) {
                fprintf(stderr, "%s: thread %u run %d: case %zu output %zu differs from the "
                        "sequential result\n", j->label, a->id, r, k, o);
                atomic_fetch_add(&j->failures, 1);
            }
            minfer_tensor_free(out[o]);
        }
    }
    return NULL;
}

/* Runs j from n threads at once; returns the number of failed runs. */
static long run_threads(job *j, unsigned n) {
    pthread_t th[THREADS];
    worker_arg args[THREADS];
    assert_true(n <= THREADS);
    atomic_store(&j->failures, 0);
    for (unsigned i = 0; i < n; i++) {
        args[i] = (worker_arg){j, i};
        assert_int_equal(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (unsigned i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return (long)atomic_load(&j->failures);
}

static void free_cases(run_case *cases, size_t n_cases) {
    for (size_t k = 0; k < n_cases; k++)
        for (size_t i = 0; i < MAX_IO; i++) {
            minfer_tensor_free(cases[k].in[i]);
            minfer_tensor_free(cases[k].want[i]);
            cases[k].in[i] = cases[k].want[i] = NULL;
        }
}

static void test_concurrent_runs(void **state) {
    (void)state;
    minfer_graph_builder *b = build();
    minfer_session *sess = open_session(NULL, b);
    minfer_builder_free(b);
    check_first_provider_used(sess, "builder graph");
    run_case cases[MAX_BATCH] = {0};
    for (int k = 0; k < MAX_BATCH; k++) {
        int64_t d[4] = {k + 1, 3, 8, 8};
        cases[k].n_in = 1;
        cases[k].in_names[0] = "x";
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, d, 4, &cases[k].in[0]));
        float *x = minfer_tensor_data(cases[k].in[0]);
        for (int64_t i = 0; i < minfer_tensor_numel(cases[k].in[0]); i++)
            x[i] = (float)((i * 31 + (k + 1) * 7) % 29 - 14) / 9.0f;
    }
    run_sequential(sess, cases, MAX_BATCH);
    job j = {sess, "builder graph", cases, MAX_BATCH, RUNS, 0};
    assert_int_equal(run_threads(&j, THREADS), 0);
    free_cases(cases, MAX_BATCH);
    minfer_session_free(sess);
}

static const char *models_dir;

/* A path from fmt; fails the test when it does not fit. */
static void path_of(char *buf, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, size, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size)
        fail_msg("path too long: %s...", buf);
}

/* The model's test data sets as cases: input_K.pb of test_data_set_N, fed
 * to the session's inputs in order. */
static size_t load_cases(const char *dir, const minfer_session *s, run_case *cases) {
    size_t n = 0;
    for (; n < MAX_CASES; n++) {
        char path[1024];
        path_of(path, sizeof path, "%s/test_data_set_%zu/input_0.pb", dir, n);
        if (access(path, R_OK) != 0)
            break;
        run_case *c = &cases[n];
        c->n_in = minfer_session_input_count(s);
        assert_true(c->n_in >= 1 && c->n_in <= MAX_IO);
        for (size_t i = 0; i < c->n_in; i++) {
            minfer_value_info info;
            assert_ok(minfer_session_input_info(s, i, &info));
            c->in_names[i] = info.name;
            path_of(path, sizeof path, "%s/test_data_set_%zu/input_%zu.pb", dir, n, i);
            assert_ok(minfer_tensor_load_pb(path, &c->in[i], NULL));
        }
    }
    if (n == 0)
        fail_msg("%s: no test_data_set_0/input_0.pb", dir);
    return n;
}

static void run_model(const char *name, int runs) {
    char dir[1024], path[1024];
    path_of(dir, sizeof dir, "%s/%s", models_dir, name);
    path_of(path, sizeof path, "%s/model.onnx", dir);
    for (int t = 0; t < TRIES; t++) {
        minfer_session *s = open_session(path, NULL);
        check_first_provider_used(s, name);
        run_case cases[MAX_CASES] = {0};
        size_t n_cases = load_cases(dir, s, cases);
        run_sequential(s, cases, n_cases);
        job j = {s, name, cases, n_cases, runs, 0};
        long failed = run_threads(&j, MODEL_THREADS);
        free_cases(cases, n_cases);
        minfer_session_free(s);
        if (failed)
            fail_msg("%s on '%s', try %d: %ld of %d concurrent runs failed or differed", name,
                     providers(), t + 1, failed, MODEL_THREADS * runs);
    }
}

static void test_tiny_encoder(void **state) {
    (void)state;
    run_model("tiny_encoder", 16);
}

static void test_squeezenet(void **state) {
    (void)state;
    run_model("squeezenet1_1", 6);
}

/* Why a provider of the list did not load (the session's warning). */
static char load_warning[1024];

static void on_log(void *user, minfer_log_level level, const char *message) {
    (void)user;
    if (level <= MINFER_LOG_WARN && strstr(message, "skipping provider") && !load_warning[0])
        snprintf(load_warning, sizeof load_warning, "%s", message);
}

/* 0: every provider of the list loads; 77: one does not because this
 * machine has no OpenCL platform or device; 1: another failure. */
static int check_providers(void) {
    minfer_graph_builder *b = build();
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    int rc = 1;
    if (minfer_options_create(&opt) || minfer_options_set_providers_str(opt, providers()) ||
        minfer_options_set_log_callback(opt, on_log, NULL) ||
        minfer_session_create_from_builder(b, opt, &s)) {
        fprintf(stderr, "providers '%s': %s\n", providers(), minfer_last_error());
        goto done;
    }
    char list[256];
    snprintf(list, sizeof list, "%s", providers());
    rc = 0;
    for (char *save = NULL, *p = strtok_r(list, ",", &save); p && !rc;
         p = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < minfer_session_provider_count(s) &&
               strcmp(minfer_session_provider_name(s, i), p) != 0)
            i++;
        if (i < minfer_session_provider_count(s))
            continue;
        int no_device = strcmp(p, "opencl") == 0 &&
                        (strstr(load_warning, "no OpenCL platform") ||
                         strstr(load_warning, "no OpenCL device"));
        fprintf(stderr, "provider '%s' did not load: %s%s\n", p,
                load_warning[0] ? load_warning : "(no reason logged)",
                no_device ? "\nno OpenCL device on this machine: skipping" : "");
        rc = no_device ? 77 : 1;
    }
done:
    minfer_session_free(s);
    minfer_options_free(opt);
    minfer_builder_free(b);
    return rc;
}

int main(int argc, char **argv) {
    const struct CMUnitTest graph[] = {cmocka_unit_test(test_concurrent_runs)};
    const struct CMUnitTest models[] = {cmocka_unit_test(test_tiny_encoder),
                                        cmocka_unit_test(test_squeezenet)};
    int rc = check_providers();
    if (rc)
        return rc; /* 77: ctest's SKIP_RETURN_CODE */
    int failed = cmocka_run_group_tests_name("builder graph", graph, NULL, NULL);
    if (argc > 1) {
        models_dir = argv[1];
        failed += cmocka_run_group_tests_name("models", models, NULL, NULL);
    }
    return failed != 0;
}
