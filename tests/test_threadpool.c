/*
 * The session's fork-join pool (core/exec/threadpool.c): every index of every
 * job runs exactly once, whatever the thread count, chunking, spinning
 * (MINFER_SPIN_US) or contention between callers; a call from inside a
 * chunk runs serially. Built also under ThreadSanitizer in CI.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "exec/threadpool.h"

#define MAX_N 4096

typedef struct job {
    atomic_int hits[MAX_N];
    mf_pool *nested_pool; /* non-NULL: each chunk calls parallel_for again */
    atomic_int nested_hits;
} job;

static void count(void *arg, size_t begin, size_t end) {
    job *j = arg;
    for (size_t i = begin; i < end; i++)
        atomic_fetch_add(&j->hits[i], 1);
}

static void count_nested(void *arg, size_t begin, size_t end);

static void nested_inner(void *arg, size_t begin, size_t end) {
    job *j = arg;
    atomic_fetch_add(&j->nested_hits, (int)(end - begin));
}

static void count_nested(void *arg, size_t begin, size_t end) {
    job *j = arg;
    count(arg, begin, end);
    mf_pool_parallel_for(j->nested_pool, 10, 1, nested_inner, j);
}

static void check_once(job *j, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (atomic_load(&j->hits[i]) != 1)
            fail_msg("index %zu of %zu ran %d times", i, n, atomic_load(&j->hits[i]));
}

/* Many jobs of many sizes and grains, on pools of 1 to 4 threads, spinning
 * and not. */
static void test_every_index_once(void **state) {
    (void)state;
    static job j;
    static const char *const spins[2] = {"200", "0"};
    for (int sp = 0; sp < 2; sp++) {
        setenv("MINFER_SPIN_US", spins[sp], 1);
        for (int threads = 1; threads <= 4; threads++) {
            mf_pool *p = mf_pool_create(threads);
            assert_non_null(p);
            assert_int_equal(mf_pool_threads(p), threads);
            for (int k = 0; k < 3000; k++) {
                size_t n = (size_t)(k * 37 % MAX_N) + 1, grain = (size_t)(k % 7);
                memset(&j, 0, sizeof j);
                mf_pool_parallel_for(p, n, grain, count, &j);
                check_once(&j, n);
            }
            mf_pool_free(p);
        }
    }
    unsetenv("MINFER_SPIN_US");
}

/* A parallel_for from inside a chunk runs serially, to completion. */
static void test_nested(void **state) {
    (void)state;
    static job j;
    mf_pool *p = mf_pool_create(3);
    assert_non_null(p);
    for (int k = 0; k < 200; k++) {
        memset(&j, 0, sizeof j);
        j.nested_pool = p;
        mf_pool_parallel_for(p, 300, 1, count_nested, &j);
        check_once(&j, 300);
        assert_int_equal(atomic_load(&j.nested_hits), 10 * 3); /* one call per chunk */
    }
    mf_pool_free(p);
}

/* Several callers on one pool: one owns it, the others run serially. */
typedef struct caller {
    mf_pool *pool;
    job j;
    int failed;
} caller;

static void *caller_main(void *arg) {
    caller *c = arg;
    for (int k = 0; k < 500 && !c->failed; k++) {
        size_t n = (size_t)(k * 13 % 1000) + 1;
        memset(c->j.hits, 0, sizeof c->j.hits);
        mf_pool_parallel_for(c->pool, n, 2, count, &c->j);
        for (size_t i = 0; i < n; i++)
            if (atomic_load(&c->j.hits[i]) != 1)
                c->failed = 1;
    }
    return NULL;
}

static void test_concurrent_callers(void **state) {
    (void)state;
    mf_pool *p = mf_pool_create(2);
    assert_non_null(p);
    static caller callers[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        callers[i].pool = p;
        callers[i].failed = 0;
        assert_int_equal(pthread_create(&th[i], NULL, caller_main, &callers[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(callers[i].failed, 0);
    }
    mf_pool_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_index_once),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_concurrent_callers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
