/*
 * Sessions sharing one thread pool (minfer_thread_pool, minfer.h).
 *
 *  1. Four sessions (two on the sequential scheduler, two on the parallel
 *     one, each its own weights) on one 2-thread pool, four caller threads
 *     per session at once: every output equals, byte for byte, that of a
 *     run made alone; the process's OS threads (/proc/self/task) stay at
 *     the callers plus the pool's one worker, where pools of their own
 *     would add a worker per session.
 *  2. Lifetime: the pool outlives the caller's reference while options or
 *     sessions hold it, and its threads end with the last holder.
 *  3. Bad arguments are errors naming the call.
 *
 * The provider is the CPU reference (MINFER_TEST_PROVIDERS overrides).
 * Cheap enough for ThreadSanitizer in CI (.ci/run): about a second plain.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "test_util.h"

#define SESSIONS 4
#define CALLERS 4 /* per session */
#define RUNS 40   /* per caller */
#define CASES 3
#define POOL_THREADS 2

static const char *providers(void) {
    const char *p = getenv("MINFER_TEST_PROVIDERS");
    return p && *p ? p : "cpu";
}

/* The OS threads of this process. */
static int os_threads(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

/* os_threads() once it is want: a joined thread's /proc entry may outlive
 * the join for a moment; gives up after 2 s. */
static int settled_threads(int want) {
    int n = os_threads();
    for (int i = 0; i < 200 && n != want; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        n = os_threads();
    }
    return n;
}

/* x [N,64] -> MatMul [64,256] -> Add -> Relu -> MatMul [256,32] -> Softmax,
 * weights drawn from seed: big enough that the CPU provider splits the
 * products over the pool. */
static minfer_graph_builder *build(unsigned seed) {
    minfer_graph_builder *b = NULL;
    assert_ok(minfer_builder_create(13, &b));
    int64_t xd[2] = {-1, 64};
    const char *xn[2] = {"N", NULL};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xd, 2, xn));
    static float w1[SESSIONS][64 * 256], b1[SESSIONS][256], w2[SESSIONS][256 * 32];
    unsigned k = seed % SESSIONS;
    for (size_t i = 0; i < 64 * 256; i++)
        w1[k][i] = (float)((int)((i * 37 + seed * 11) % 19) - 9) / 40.0f;
    for (size_t i = 0; i < 256; i++)
        b1[k][i] = 0.01f * (float)((int)((i + seed) % 7) - 3);
    for (size_t i = 0; i < 256 * 32; i++)
        w2[k][i] = (float)((int)((i * 53 + seed * 5) % 23) - 11) / 90.0f;
    int64_t w1d[2] = {64, 256}, b1d[1] = {256}, w2d[2] = {256, 32};
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, w1d, 2, w1[k], sizeof w1[k], &t));
    assert_ok(minfer_builder_add_initializer(b, "w1", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, b1d, 1, b1[k], sizeof b1[k], &t));
    assert_ok(minfer_builder_add_initializer(b, "b1", t));
    minfer_tensor_free(t);
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, w2d, 2, w2[k], sizeof w2[k], &t));
    assert_ok(minfer_builder_add_initializer(b, "w2", t));
    minfer_tensor_free(t);
    const char *m1_in[] = {"x", "w1"}, *m1_out[] = {"h"};
    assert_ok(minfer_builder_add_node(b, "MatMul", NULL, "mm1", m1_in, 2, m1_out, 1, NULL));
    const char *a_in[] = {"h", "b1"}, *a_out[] = {"hb"};
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "add", a_in, 2, a_out, 1, NULL));
    const char *r_in[] = {"hb"}, *r_out[] = {"r"};
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu", r_in, 1, r_out, 1, NULL));
    const char *m2_in[] = {"r", "w2"}, *m2_out[] = {"z"};
    assert_ok(minfer_builder_add_node(b, "MatMul", NULL, "mm2", m2_in, 2, m2_out, 1, NULL));
    const char *s_in[] = {"z"}, *s_out[] = {"y"};
    size_t n;
    assert_ok(minfer_builder_add_node(b, "Softmax", NULL, "softmax", s_in, 1, s_out, 1, &n));
    assert_ok(minfer_builder_set_attr_int(b, n, "axis", 1));
    assert_ok(minfer_builder_add_output(b, "y"));
    return b;
}

static minfer_session *open_on(minfer_thread_pool *tp, unsigned seed, minfer_scheduler sched) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_graph_builder *b = build(seed);
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers()));
    assert_ok(minfer_options_set_threads(opt, 7)); /* not used: the pool's count is */
    assert_ok(minfer_options_set_scheduler(opt, sched));
    assert_ok(minfer_options_set_thread_pool(opt, tp));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    minfer_builder_free(b);
    return s;
}

typedef struct run_case {
    minfer_tensor *in, *want[SESSIONS];
} run_case;

static run_case cases[CASES];
static minfer_session *sessions[SESSIONS];
static atomic_int failures;
static atomic_int peak_threads;

static minfer_tensor *run1(minfer_session *s, const minfer_tensor *in) {
    const char *in_names[] = {"x"};
    minfer_tensor *out = NULL;
    if (minfer_session_run(s, in_names, &in, 1, NULL, &out, 1) != MINFER_OK) {
        fprintf(stderr, "run: %s\n", minfer_last_error());
        return NULL;
    }
    return out;
}

static void *caller(void *varg) {
    int id = (int)(intptr_t)varg, si = id % SESSIONS;
    for (int r = 0; r < RUNS; r++) {
        const run_case *c = &cases[(id + r) % CASES];
        minfer_tensor *out = run1(sessions[si], c->in);
        if (!out || minfer_tensor_nbytes(out) != minfer_tensor_nbytes(c->want[si]) ||
            memcmp(minfer_tensor_data(out), minfer_tensor_data(c->want[si]),
                   minfer_tensor_nbytes(out)) != 0) {
            fprintf(stderr, "caller %d run %d (session %d): output differs from the run alone\n",
                    id, r, si);
            atomic_fetch_add(&failures, 1);
        }
        minfer_tensor_free(out);
        int n = os_threads(), was = atomic_load(&peak_threads);
        while (n > was && !atomic_compare_exchange_weak(&peak_threads, &was, n))
            ;
    }
    return NULL;
}

static void test_sessions_share_one_pool(void **state) {
    (void)state;
    int base = os_threads();
    assert_true(base >= 1);
    minfer_thread_pool *tp = NULL;
    assert_ok(minfer_thread_pool_create(POOL_THREADS, &tp));
    assert_int_equal(minfer_thread_pool_thread_count(tp), POOL_THREADS);
    assert_int_equal(settled_threads(base + POOL_THREADS - 1), base + POOL_THREADS - 1);
    for (int k = 0; k < SESSIONS; k++) {
        sessions[k] = open_on(tp, (unsigned)k + 1,
                              k % 2 ? MINFER_SCHED_PARALLEL : MINFER_SCHED_SEQUENTIAL);
        assert_int_equal(minfer_session_thread_count(sessions[k]), POOL_THREADS);
    }
    minfer_thread_pool_free(tp); /* the sessions hold it */
    /* no thread of their own: still the pool's one worker */
    assert_int_equal(settled_threads(base + POOL_THREADS - 1), base + POOL_THREADS - 1);

    for (int c = 0; c < CASES; c++) {
        int64_t dims[2] = {8 + 8 * c, 64};
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &cases[c].in));
        float *x = minfer_tensor_data(cases[c].in);
        for (int64_t i = 0; i < dims[0] * 64; i++)
            x[i] = (float)((int)((i * 29 + c * 3) % 31) - 15) / 16.0f;
        for (int k = 0; k < SESSIONS; k++) /* each run alone: the expected outputs */
            assert_non_null(cases[c].want[k] = run1(sessions[k], cases[c].in));
    }

    pthread_t th[SESSIONS * CALLERS];
    atomic_init(&failures, 0);
    atomic_init(&peak_threads, 0);
    for (int i = 0; i < SESSIONS * CALLERS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, caller, (void *)(intptr_t)i), 0);
    for (int i = 0; i < SESSIONS * CALLERS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&failures), 0);
    /* the callers and the pool's worker; pools of their own: + SESSIONS */
    int bound = base + SESSIONS * CALLERS + POOL_THREADS - 1;
    if (atomic_load(&peak_threads) > bound)
        fail_msg("%d OS threads with %d callers on a %d-thread pool (at most %d)",
                 atomic_load(&peak_threads), SESSIONS * CALLERS, POOL_THREADS, bound);

    for (int k = 0; k < SESSIONS; k++)
        minfer_session_free(sessions[k]);
    assert_int_equal(settled_threads(base), base); /* the last holder joined the worker */
    for (int c = 0; c < CASES; c++) {
        minfer_tensor_free(cases[c].in);
        for (int k = 0; k < SESSIONS; k++)
            minfer_tensor_free(cases[c].want[k]);
    }
}

/* Options hold the pool too; a session from options freed before it still
 * runs; setting another pool (or NULL) drops the first. */
static void test_lifetime(void **state) {
    (void)state;
    int base = os_threads();
    minfer_thread_pool *tp = NULL, *other = NULL;
    assert_ok(minfer_thread_pool_create(3, &tp));
    assert_ok(minfer_thread_pool_create(2, &other));
    assert_int_equal(settled_threads(base + 2 + 1), base + 2 + 1);
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers()));
    assert_ok(minfer_options_set_thread_pool(opt, other));
    minfer_thread_pool_free(other); /* opt holds it */
    assert_int_equal(settled_threads(base + 2 + 1), base + 2 + 1);
    assert_ok(minfer_options_set_thread_pool(opt, tp)); /* drops other: its worker ends */
    assert_int_equal(settled_threads(base + 2), base + 2);
    minfer_thread_pool_free(tp);
    minfer_graph_builder *b = build(9);
    minfer_session *s = NULL;
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_builder_free(b);
    minfer_options_free(opt); /* the session holds it now */
    assert_int_equal(minfer_session_thread_count(s), 3);
    assert_int_equal(settled_threads(base + 2), base + 2);
    int64_t dims[2] = {16, 64};
    minfer_tensor *in = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &in));
    memset(minfer_tensor_data(in), 0, minfer_tensor_nbytes(in));
    minfer_tensor *out = run1(s, in);
    assert_non_null(out);
    minfer_tensor_free(out);
    minfer_tensor_free(in);
    minfer_session_free(s);
    assert_int_equal(settled_threads(base), base);

    /* NULL detaches: a pool of the session's own again */
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_thread_pool_create(2, &tp));
    assert_ok(minfer_options_set_thread_pool(opt, tp));
    assert_ok(minfer_options_set_thread_pool(opt, NULL));
    minfer_thread_pool_free(tp);
    assert_int_equal(settled_threads(base), base);
    minfer_options_free(opt);
    minfer_thread_pool_free(NULL);
}

static void test_bad_arguments(void **state) {
    (void)state;
    minfer_thread_pool *tp = (minfer_thread_pool *)&tp;
    assert_int_equal(minfer_thread_pool_create(-1, &tp), MINFER_ERR_INVALID_ARG);
    assert_error_mentions("minfer_thread_pool_create");
    assert_null(tp);
    assert_int_equal(minfer_thread_pool_create(MINFER_MAX_THREADS + 1, &tp),
                     MINFER_ERR_INVALID_ARG);
    assert_error_mentions("1025");
    assert_int_equal(minfer_thread_pool_create(1, NULL), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_options_set_thread_pool(NULL, NULL), MINFER_ERR_INVALID_ARG);
    assert_error_mentions("minfer_options_set_thread_pool");
    assert_int_equal(minfer_thread_pool_thread_count(NULL), 0);
    assert_ok(minfer_thread_pool_create(0, &tp)); /* 0: one per usable CPU */
    assert_true(minfer_thread_pool_thread_count(tp) >= 1);
    minfer_thread_pool_free(tp);
}

static void *nothing(void *arg) { return arg; }

int main(void) {
    /* A sanitizer's runtime may start a thread of its own with the first
     * thread made: before any count is taken. */
    pthread_t t;
    if (pthread_create(&t, NULL, nothing, NULL) == 0)
        pthread_join(t, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sessions_share_one_pool),
        cmocka_unit_test(test_lifetime),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
