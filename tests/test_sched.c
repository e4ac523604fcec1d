/*
 * The parallel scheduler (docs/scheduling.md): choice and its errors,
 * results identical to the sequential scheduler's, a memory plan that keeps
 * values of concurrent branches apart, errors from a node running beside
 * others, and concurrent runs of one parallel session (under TSan in CI:
 * two branches sharing bytes would be a data race it reports).
 *
 * The graph: x [1, W] -> four branches of MatMul (a W x W weight, large
 * enough that the branches are worth running at once) and Relu; x is also
 * read at the end (a skip connection), so a Relu taking x's bytes in place
 * would corrupt a branch still reading it. The branches are summed.
 */
#include <pthread.h>
#include <stdlib.h>

#include "minfer/builder.h"
#include "test_util.h"

#define W 256
#define BRANCHES 4
#define THREADS 4
#define RUNS 40

static minfer_graph_builder *branchy(void) {
    minfer_graph_builder *b = NULL;
    assert_ok(minfer_builder_create(13, &b));
    int64_t dims[2] = {1, W}, wd[2] = {W, W};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL));
    const char *sum = "x";
    char names[BRANCHES][4][16];
    for (int k = 0; k < BRANCHES; k++) {
        minfer_tensor *w = NULL;
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, wd, 2, &w));
        float *d = minfer_tensor_data(w);
        for (int i = 0; i < W * W; i++)
            d[i] = (float)((i * 7 + k * 13) % 17 - 8) / 64.0f;
        snprintf(names[k][0], 16, "w%d", k);
        snprintf(names[k][1], 16, "m%d", k);
        snprintf(names[k][2], 16, "r%d", k);
        snprintf(names[k][3], 16, "s%d", k);
        assert_ok(minfer_builder_add_initializer(b, names[k][0], w));
        minfer_tensor_free(w);
        /* a Relu on x first: in place it would overwrite x under the others */
        const char *mm_in[2] = {"x", names[k][0]}, *m = names[k][1], *r = names[k][2],
                   *a = names[k][3];
        assert_ok(minfer_builder_add_node(b, "MatMul", NULL, m, mm_in, 2, &m, 1, NULL));
        assert_ok(minfer_builder_add_node(b, "Relu", NULL, r, &m, 1, &r, 1, NULL));
        const char *add_in[2] = {sum, r};
        assert_ok(minfer_builder_add_node(b, "Add", NULL, a, add_in, 2, &a, 1, NULL));
        sum = names[k][3];
    }
    const char *neg_in = "x", *neg_out = "nx";
    assert_ok(minfer_builder_add_node(b, "Neg", NULL, "neg", &neg_in, 1, &neg_out, 1, NULL));
    const char *fin[2] = {sum, "nx"}, *y = "y";
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "final", fin, 2, &y, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    return b;
}

static minfer_session *session(minfer_graph_builder *b, minfer_scheduler sched, int threads,
                               uint64_t max_elements) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_threads(opt, threads));
    assert_ok(minfer_options_set_scheduler(opt, sched));
    if (max_elements) {
        minfer_run_limits rl;
        memset(&rl, 0, sizeof rl);
        rl.struct_size = sizeof rl;
        rl.max_run_elements = max_elements;
        assert_ok(minfer_options_set_run_limits(opt, &rl));
    }
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    return s;
}

static minfer_tensor *input(int seed) {
    int64_t dims[2] = {1, W};
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &x));
    float *d = minfer_tensor_data(x);
    for (int i = 0; i < W; i++)
        d[i] = (float)((i * 31 + seed * 11) % 23 - 11) / 8.0f;
    return x;
}

static minfer_tensor *run1(minfer_session *s, const minfer_tensor *x) {
    const char *in = "x";
    minfer_tensor *out = NULL;
    assert_ok(minfer_session_run(s, &in, &x, 1, NULL, &out, 1));
    return out;
}

static void assert_same(const minfer_tensor *a, const minfer_tensor *b) {
    assert_int_equal(minfer_tensor_nbytes(a), minfer_tensor_nbytes(b));
    assert_memory_equal(minfer_tensor_data(a), minfer_tensor_data(b), minfer_tensor_nbytes(a));
}

/* Bad choices are errors naming what is wrong. */
static void test_choice_errors(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_int_equal(minfer_options_set_scheduler(opt, (minfer_scheduler)7),
                     MINFER_ERR_INVALID_ARG);
    assert_error_mentions("bad scheduler 7");
    assert_int_equal(minfer_options_set_inter_op_threads(opt, -1), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_options_set_scheduler(NULL, MINFER_SCHED_PARALLEL),
                     MINFER_ERR_INVALID_ARG);
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    minfer_graph_builder *b = branchy();
    minfer_session *s = NULL;
    setenv("MINFER_SCHEDULER", "pipelined", 1);
    assert_int_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_ERR_INVALID_ARG);
    assert_error_mentions("MINFER_SCHEDULER='pipelined'");
    setenv("MINFER_SCHEDULER", "parallel", 1);
    setenv("MINFER_INTER_OP_THREADS", "x2", 1);
    assert_int_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_ERR_INVALID_ARG);
    assert_error_mentions("MINFER_INTER_OP_THREADS='x2'");
    setenv("MINFER_INTER_OP_THREADS", "2", 1);
    assert_ok(minfer_options_set_threads(opt, 2));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_schedule_info si;
    memset(&si, 0, sizeof si);
    si.struct_size = sizeof si;
    assert_ok(minfer_session_schedule_info(s, &si));
    assert_int_equal(si.scheduler, MINFER_SCHED_PARALLEL); /* from the environment */
    assert_int_equal(si.inter_op_threads, 2);
    minfer_session_free(s);
    /* the option wins over the environment */
    assert_ok(minfer_options_set_scheduler(opt, MINFER_SCHED_SEQUENTIAL));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    assert_ok(minfer_session_schedule_info(s, &si));
    assert_int_equal(si.scheduler, MINFER_SCHED_SEQUENTIAL);
    minfer_session_free(s);
    unsetenv("MINFER_SCHEDULER");
    unsetenv("MINFER_INTER_OP_THREADS");
    minfer_builder_free(b);
    minfer_options_free(opt);
}

/* Identical results; the plan runs concurrently and says what it costs. */
static void test_identical(void **state) {
    (void)state;
    minfer_graph_builder *b = branchy();
    minfer_session *seq = session(b, MINFER_SCHED_SEQUENTIAL, 2, 0);
    minfer_session *par = session(b, MINFER_SCHED_PARALLEL, 4, 0);
    for (int k = 0; k < 5; k++) {
        minfer_tensor *x = input(k), *a = run1(seq, x), *c = run1(par, x);
        assert_same(a, c);
        minfer_tensor_free(x);
        minfer_tensor_free(a);
        minfer_tensor_free(c);
    }
    minfer_schedule_info si;
    memset(&si, 0, sizeof si);
    si.struct_size = sizeof si;
    assert_ok(minfer_session_schedule_info(par, &si));
    assert_int_equal(si.has_plan, 1);
    assert_int_equal(si.concurrent, 1);
    assert_string_equal(si.why_sequential, "");
    /* four branch outputs can be alive at once: more than the order needs */
    assert_true(si.arena_bytes > si.sequential_arena_bytes);
    assert_ok(minfer_session_schedule_info(seq, &si));
    assert_int_equal(si.concurrent, 0);
    /* a short struct gets only the fields it has */
    minfer_schedule_info small;
    memset(&small, 0x5a, sizeof small);
    small.struct_size = offsetof(minfer_schedule_info, has_plan);
    assert_ok(minfer_session_schedule_info(par, &small));
    assert_int_equal(small.scheduler, MINFER_SCHED_PARALLEL);
    assert_int_equal(small.has_plan, 0x5a5a5a5a);
    minfer_session_free(seq);
    minfer_session_free(par);
    minfer_builder_free(b);
}

/* One thread: the parallel scheduler plans and runs in order, and says why. */
static void test_one_thread(void **state) {
    (void)state;
    minfer_graph_builder *b = branchy();
    minfer_session *par = session(b, MINFER_SCHED_PARALLEL, 1, 0);
    minfer_tensor *x = input(3), *y = run1(par, x);
    minfer_schedule_info si;
    memset(&si, 0, sizeof si);
    si.struct_size = sizeof si;
    assert_ok(minfer_session_schedule_info(par, &si));
    assert_int_equal(si.concurrent, 0);
    assert_non_null(strstr(si.why_sequential, "one thread"));
    minfer_tensor_free(x);
    minfer_tensor_free(y);
    minfer_session_free(par);
    minfer_builder_free(b);
}

/* A node failing beside others fails the run with its message; the next
 * run of the session works. The element budget runs out part way. */
static void test_error_in_region(void **state) {
    (void)state;
    minfer_graph_builder *b = branchy();
    minfer_session *par = session(b, MINFER_SCHED_PARALLEL, 4, 3 * W);
    minfer_tensor *x = input(1), *out = NULL;
    const char *in = "x";
    for (int k = 0; k < 20; k++) {
        assert_int_equal(minfer_session_run(par, &in, (const minfer_tensor *const *)&x, 1, NULL,
                                            &out, 1),
                         MINFER_ERR_LIMIT);
        assert_error_mentions("element budget");
        assert_null(out);
    }
    minfer_session_free(par);
    minfer_tensor_free(x);
    minfer_builder_free(b);
}

typedef struct shared_run {
    minfer_session *s;
    minfer_tensor *x[3], *want[3];
    int bad;
} shared_run;

static void *worker(void *arg) {
    shared_run *j = arg;
    const char *in = "x";
    for (int r = 0; r < RUNS; r++) {
        int k = r % 3;
        minfer_tensor *out = NULL;
        if (minfer_session_run(j->s, &in, (const minfer_tensor *const *)&j->x[k], 1, NULL, &out,
                               1) != MINFER_OK ||
            memcmp(minfer_tensor_data(out), minfer_tensor_data(j->want[k]),
                   minfer_tensor_nbytes(out)) != 0)
            __atomic_add_fetch(&j->bad, 1, __ATOMIC_RELAXED);
        minfer_tensor_free(out);
    }
    return NULL;
}

/* Concurrent runs of one parallel session: each its own context, the pool
 * shared (a second run's region runs on its own thread). */
static void test_concurrent_runs(void **state) {
    (void)state;
    minfer_graph_builder *b = branchy();
    minfer_session *seq = session(b, MINFER_SCHED_SEQUENTIAL, 1, 0);
    shared_run j = {session(b, MINFER_SCHED_PARALLEL, 2, 0), {NULL}, {NULL}, 0};
    for (int k = 0; k < 3; k++) {
        j.x[k] = input(k + 5);
        j.want[k] = run1(seq, j.x[k]);
    }
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker, &j), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(j.bad, 0);
    for (int k = 0; k < 3; k++) {
        minfer_tensor_free(j.x[k]);
        minfer_tensor_free(j.want[k]);
    }
    minfer_session_free(j.s);
    minfer_session_free(seq);
    minfer_builder_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_choice_errors), cmocka_unit_test(test_identical),
        cmocka_unit_test(test_one_thread), cmocka_unit_test(test_error_in_region),
        cmocka_unit_test(test_concurrent_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
