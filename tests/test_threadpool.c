/*
 * The session's fork-join pool (core/exec/threadpool.c): every index of every
 * job runs exactly once, whatever the thread count, chunking, spinning
 * (MINFER_SPIN_US) or contention between callers; a call from inside a
 * chunk runs serially. The cut: a few near-equal chunks per thread, the
 * same every call; a held-up chunk holds up only itself. Sharing (the parallel scheduler's): the same ranges
 * as the pool cuts, every index once, a published chunk run by another
 * thread, nested calls serial, the owner's account of its chunks' time.
 * The CPUs the pool counts for its spinning are the process's affinity
 * mask, as for the session's default thread count. The parallel
 * scheduler's start rule (mf_sched_gains), which those times feed. A lane's
 * claim holds the pool's threads until its next parallel_for. Built
 * also under ThreadSanitizer in CI.
 */
#define _GNU_SOURCE /* sched_setaffinity, CPU_COUNT */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "exec/sched.h"
#include "exec/threadpool.h"
#include "util/cpus.h"

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
        for (int threads = 1; threads <= 16; threads += threads < 4 ? 1 : 12) {
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
        /* one call per chunk */
        assert_int_equal(atomic_load(&j.nested_hits), 10 * (int)mf_pool_chunks(p, 300, 1));
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

/* ---- Sharing: the threads of one pool job run each other's chunks ---- */

#define RANGES 128

typedef struct ranges {
    atomic_size_t n;
    size_t b[RANGES], e[RANGES];
} ranges;

static void record(void *arg, size_t begin, size_t end) {
    ranges *r = arg;
    size_t i = atomic_fetch_add(&r->n, 1);
    if (i < RANGES) {
        r->b[i] = begin;
        r->e[i] = end;
    }
}

static void sort_ranges(ranges *r) {
    size_t n = atomic_load(&r->n);
    for (size_t i = 1; i < n && i < RANGES; i++)
        for (size_t j = i; j > 0 && r->b[j - 1] > r->b[j]; j--) {
            size_t t = r->b[j];
            r->b[j] = r->b[j - 1];
            r->b[j - 1] = t;
            t = r->e[j];
            r->e[j] = r->e[j - 1];
            r->e[j - 1] = t;
        }
}

/* The cut (dynamic chunks): for every n and grain, [0, n) in
 * mf_pool_chunks contiguous ranges of near-equal size (they differ by at
 * most 1), at most a few per thread, no more than n / grain rounded up,
 * the same ranges on every call; every index once; n = 0 calls nothing,
 * n = 1 one range; 600 sizes and grains. Pools of 1 to 4, 8 and 16
 * threads (more threads than CPUs here: the cut must be right by
 * construction). */
static void test_cut(void **state) {
    (void)state;
    static ranges a, b;
    static job j;
    static const int counts[] = {1, 2, 3, 4, 8, 16};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        mf_pool *p = mf_pool_create(counts[t]);
        assert_non_null(p);
        memset(&a, 0, sizeof a);
        mf_pool_parallel_for(p, 0, 1, record, &a);
        assert_int_equal(atomic_load(&a.n), 0);
        assert_int_equal(mf_pool_chunks(p, 0, 1), 0);
        for (int k = 0; k < 600; k++) {
            size_t n = k < 40 ? (size_t)k + 1 : (size_t)(k * 37 % MAX_N) + 1;
            size_t grain = k % 11 == 10 ? (size_t)(k % 300) : (size_t)(k % 7);
            size_t chunks = mf_pool_chunks(p, n, grain);
            size_t g = grain ? grain : 1, most = (n + g - 1) / g;
            assert_true(chunks >= 1 && chunks <= most && chunks <= RANGES);
            assert_true(chunks <= (size_t)counts[t] * 4);
            if (counts[t] > 1 && most >= 2)
                assert_true(chunks >= 2);
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            mf_pool_parallel_for(p, n, grain, record, &a);
            mf_pool_parallel_for(p, n, grain, record, &b);
            assert_int_equal(atomic_load(&a.n), chunks);
            assert_int_equal(atomic_load(&b.n), chunks);
            sort_ranges(&a);
            sort_ranges(&b);
            size_t lo = n, hi = 0;
            for (size_t i = 0; i < chunks; i++) {
                assert_int_equal(a.b[i], i ? a.e[i - 1] : 0);
                assert_true(a.e[i] > a.b[i]);
                assert_int_equal(a.b[i], b.b[i]);
                assert_int_equal(a.e[i], b.e[i]);
                size_t len = a.e[i] - a.b[i];
                lo = len < lo ? len : lo;
                hi = len > hi ? len : hi;
            }
            assert_int_equal(a.e[chunks - 1], n);
            assert_true(hi - lo <= 1);
            memset(&j, 0, sizeof j);
            mf_pool_parallel_for(p, n, grain, count, &j);
            check_once(&j, n);
        }
        mf_pool_free(p);
    }
}

/* A thread held up inside its chunk (descheduled by another process)
 * holds up only that chunk: the others run the rest of its share. The
 * first chunk of the second thread's share waits, bounded, until every
 * other chunk of the job has run; with a split of one chunk per thread it
 * would wait for its own share and time out. Whoever runs it, the rest
 * are taken: the caller takes the back of a late worker's share. */
typedef struct stall {
    size_t n, stalled;
    atomic_size_t others_done;
    atomic_int timed_out;
} stall;

static void stall_chunk(void *arg, size_t begin, size_t end) {
    stall *st = arg;
    if (begin == st->stalled) {
        struct timespec ts = {0, 1000000}; /* 1 ms, at most 10 s in all */
        for (int i = 0; i < 10000 && atomic_load(&st->others_done) < st->n - 1; i++)
            nanosleep(&ts, NULL);
        if (end - begin != 1 || atomic_load(&st->others_done) < st->n - 1)
            atomic_store(&st->timed_out, 1);
        return;
    }
    atomic_fetch_add(&st->others_done, end - begin);
}

static void test_stalled_chunk(void **state) {
    (void)state;
    for (int threads = 2; threads <= 4; threads++) {
        mf_pool *p = mf_pool_create(threads);
        assert_non_null(p);
        size_t n = (size_t)threads * 4;
        assert_int_equal(mf_pool_chunks(p, n, 1), n); /* one index a chunk */
        for (int k = 0; k < 20; k++) {
            stall st = {n, 4, 0, 0};
            mf_pool_parallel_for(p, n, 1, stall_chunk, &st);
            assert_int_equal(atomic_load(&st.timed_out), 0);
            assert_int_equal(atomic_load(&st.others_done), n - 1);
        }
        mf_pool_free(p);
    }
}

/* A pool job whose chunks share: thread 0 publishes, the others help
 * until it is done (the parallel scheduler's loop, cut down). */
typedef struct shared_run {
    mf_pool *pool;
    mf_share *share;
    atomic_int owner_done;
    size_t n, grain;
    minfer_range_fn fn;
    void *arg;
    int rounds;
    uint64_t region, work; /* the owner's mf_share_account over its rounds */
} shared_run;

static void share_chunk(void *arg, size_t begin, size_t end) {
    shared_run *sr = arg;
    int w = (int)begin;
    assert_int_equal(end - begin, 1); /* one chunk per thread */
    mf_lane lane; /* this thread's place in the share */
    mf_lane_init(&lane, sr->pool);
    lane.share = sr->share;
    lane.index = w;
    mf_share_begin(sr->share, w);
    if (w == 0) {
        for (int k = 0; k < sr->rounds; k++)
            mf_lane_parallel_for(&lane, sr->n, sr->grain, sr->fn, sr->arg);
        sr->region = lane.region_ns;
        sr->work = lane.work_ns;
        atomic_store(&sr->owner_done, 1);
        mf_share_notify(sr->share);
    } else {
        for (;;) {
            unsigned seen = mf_share_events(sr->share);
            if (atomic_load(&sr->owner_done))
                break;
            if (!mf_share_help(sr->share, w))
                mf_share_wait(sr->share, w, seen);
        }
    }
}

static uint64_t last_region, last_work; /* of the last call of shared */

static void shared(mf_pool *p, size_t n, size_t grain, minfer_range_fn fn, void *arg,
                   int rounds) {
    shared_run sr = {p, mf_share_create(p), 0, n, grain, fn, arg, rounds, 0, 0};
    assert_non_null(sr.share);
    mf_pool_parallel_for(p, (size_t)mf_pool_threads(p), 1, share_chunk, &sr);
    mf_share_free(sr.share);
    last_region = sr.region;
    last_work = sr.work;
}

/* A thread of a share cuts [0, n) exactly as the pool does (a kernel
 * computes the same ranges under either scheduler), and every index runs
 * once, spinning or not. */
static void test_share_same_ranges(void **state) {
    (void)state;
    static job j;
    static ranges a, b;
    static const char *const spins[2] = {"200", "0"};
    for (int sp = 0; sp < 2; sp++) {
        setenv("MINFER_SPIN_US", spins[sp], 1);
        for (int threads = 2; threads <= 4; threads++) {
            mf_pool *p = mf_pool_create(threads);
            assert_non_null(p);
            for (int k = 0; k < 300; k++) {
                size_t n = (size_t)(k * 37 % MAX_N) + 1, grain = (size_t)(k % 7);
                memset(&a, 0, sizeof a);
                memset(&b, 0, sizeof b);
                mf_pool_parallel_for(p, n, grain, record, &a);
                shared(p, n, grain, record, &b, 1);
                sort_ranges(&a);
                sort_ranges(&b);
                assert_int_equal(atomic_load(&a.n), atomic_load(&b.n));
                for (size_t i = 0; i < atomic_load(&a.n); i++) {
                    assert_int_equal(a.b[i], b.b[i]);
                    assert_int_equal(a.e[i], b.e[i]);
                }
                memset(&j, 0, sizeof j);
                shared(p, n, grain, count, &j, 1);
                check_once(&j, n);
            }
            mf_pool_free(p);
        }
    }
    unsetenv("MINFER_SPIN_US");
}

/* A published chunk runs on another thread of the share: the owner's own
 * chunk (its first) waits until the other one has run elsewhere. */
typedef struct handoff {
    atomic_int other_ran;
    pthread_t owner;
    int stuck;
    long sleep_ns; /* the other chunk's, before it says it ran */
} handoff;

static void handoff_chunk(void *arg, size_t begin, size_t end) {
    handoff *h = arg;
    (void)end;
    if (begin == 0) {
        struct timespec half_ms = {0, 500000};
        for (int i = 0; i < 20000 && !atomic_load(&h->other_ran); i++)
            nanosleep(&half_ms, NULL); /* 10 s at most: a bound, not a timing */
        h->stuck = !atomic_load(&h->other_ran);
    } else if (!pthread_equal(pthread_self(), h->owner)) {
        if (h->sleep_ns) {
            struct timespec ts = {0, h->sleep_ns};
            nanosleep(&ts, NULL);
        }
        atomic_store(&h->other_ran, 1);
    }
}

static void test_share_helps(void **state) {
    (void)state;
    mf_pool *p = mf_pool_create(2);
    assert_non_null(p);
    for (int k = 0; k < 20; k++) {
        handoff h = {0, pthread_self(), 0, 0};
        /* the caller is thread 0 of the job, hence the owner */
        shared(p, 2, 1, handoff_chunk, &h, 1);
        assert_false(h.stuck);
        assert_int_equal(atomic_load(&h.other_ran), 1);
    }
    mf_pool_free(p);
}

/* The owner's account of a published parallel_for (the lane's region_ns and work_ns, what
 * the parallel scheduler measures a step's intra-op efficiency with): the
 * wall time from publishing to the last chunk, and the chunks' time on
 * every thread. Chunk 1 sleeps 2 ms on the helper while chunk 0 waits for
 * it on the owner, so both figures are at least 2 ms and the work about
 * 4 ms only when the helper's chunk counts. */
static void test_share_account(void **state) {
    (void)state;
    mf_pool *p = mf_pool_create(2);
    assert_non_null(p);
    for (int k = 0; k < 5; k++) {
        handoff h = {0, pthread_self(), 0, 2000000};
        shared(p, 2, 1, handoff_chunk, &h, 1);
        assert_false(h.stuck);
        assert_true(last_region >= 2000000u);
        assert_true(last_work >= 3500000u); /* 2 ms on each thread, less a start gap */
        assert_true(last_work <= 2 * last_region + 1000000u);
    }
    mf_pool_free(p);
}

/* The start rule with measured times (ms): two branches whose split over 2
 * threads is perfect gain nothing side by side; at an intra-op efficiency
 * of 2/3 they do; a small step beside a large one waits (the large one
 * splits); steps that do not split always gain. */
static void test_start_rule(void **state) {
    (void)state;
    double one[4];
    const double perfect[2] = {1, 1}, poor[2] = {1.5, 1.5}, big_small[2] = {5, 0.6},
                 serial[3] = {1, 1, 1};
    one[0] = one[1] = 2;
    assert_false(mf_sched_gains(one, perfect, 2, 2));
    one[0] = one[1] = 2;
    assert_true(mf_sched_gains(one, poor, 2, 2));
    one[0] = 10;
    one[1] = 1;
    assert_false(mf_sched_gains(one, big_small, 2, 2));
    one[0] = one[1] = one[2] = 1;
    assert_true(mf_sched_gains(one, serial, 3, 2));
    one[0] = 1;
    assert_false(mf_sched_gains(one, serial, 1, 2)); /* alone: nothing to gain */
}

/* Which way a run goes (mf_sched_pick): probes at 0, 16, ...; each way
 * timed once; then the faster, the slower again at 8 mod 32; while one
 * after another is over 10% faster, probes only every 64th run. */
static void test_way_pick(void **state) {
    (void)state;
    assert_int_equal(mf_sched_pick(0, 0, 0), MF_WAY_PROBE);
    assert_int_equal(mf_sched_pick(1, 0, 0), MF_WAY_QUEUE);
    assert_int_equal(mf_sched_pick(2, 100, 0), MF_WAY_PLAIN);
    /* the queue faster (a branchy graph, low intra-op efficiency) */
    for (unsigned n = 3; n < 200; n++) {
        int want = n % 16 == 0 ? MF_WAY_PROBE : n % 32 == 8 ? MF_WAY_PLAIN : MF_WAY_QUEUE;
        assert_int_equal(mf_sched_pick(n, 90, 100), want);
    }
    /* one after another slightly faster: still every 16th run probes */
    for (unsigned n = 3; n < 200; n++) {
        int want = n % 16 == 0 ? MF_WAY_PROBE : n % 32 == 8 ? MF_WAY_QUEUE : MF_WAY_PLAIN;
        assert_int_equal(mf_sched_pick(n, 105, 100), want);
    }
    /* clearly faster (a chain, or 16 threads split beats 1 thread each) */
    unsigned queue = 0;
    for (unsigned n = 1; n <= 640; n++) {
        int w = mf_sched_pick(n, 188, 100);
        assert_int_equal(w == MF_WAY_PROBE, n % 64 == 0);
        queue += w != MF_WAY_PLAIN;
    }
    assert_int_equal(queue, 10 + 20); /* 1 in 64 probes, 1 in 32 re-timed */
}

/* Inside a published chunk a parallel_for runs serially, to completion. */
static void test_share_nested(void **state) {
    (void)state;
    static job j;
    mf_pool *p = mf_pool_create(3);
    assert_non_null(p);
    for (int k = 0; k < 100; k++) {
        memset(&j, 0, sizeof j);
        j.nested_pool = p;
        shared(p, 300, 1, count_nested, &j, 1);
        check_once(&j, 300);
        /* one call per chunk */
        assert_int_equal(atomic_load(&j.nested_hits), 10 * (int)mf_pool_chunks(p, 300, 1));
    }
    mf_pool_free(p);
}

/* The pool's CPU count (whether it spins) is the calling thread's affinity
 * mask, not the machine's online CPUs: pinned to one CPU, a pool of 2
 * threads counts 1 and does not spin, as the session's default thread
 * count (util/cpus.h) counts 1 there too. */
static void test_cpus_from_affinity(void **state) {
    (void)state;
    cpu_set_t old, one;
    assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
    mf_pool *p = mf_pool_create(2);
    assert_non_null(p);
    assert_int_equal(mf_pool_cpus(p), CPU_COUNT(&old));
    assert_int_equal(mf_cpus_usable(), CPU_COUNT(&old));
    mf_pool_free(p);
    int cpu = 0;
    while (!CPU_ISSET(cpu, &old))
        cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    int usable = mf_cpus_usable();
    p = mf_pool_create(2);
    int counted = mf_pool_cpus(p);
    mf_pool_free(p);
    assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
    assert_int_equal(usable, 1);
    assert_int_equal(counted, 1);
}

/* A claim takes the pool's threads (its busy lock): another lane's claim
 * then gets 1 and a parallel_for from another thread runs serially; the
 * claiming lane's next parallel_for runs on the pool and gives it back. */
typedef struct ranges_probe {
    mf_pool *pool;
    ranges r;
    int claim;
} ranges_probe;

static void *other_lane(void *arg) {
    ranges_probe *pr = arg;
    mf_lane l;
    mf_lane_init(&l, pr->pool);
    pr->claim = mf_lane_claim(&l, 4);
    mf_lane_release(&l);
    mf_pool_parallel_for(pr->pool, 64, 1, record, &pr->r);
    return NULL;
}

static int probe_from_another_thread(mf_pool *p, ranges_probe *pr) {
    pthread_t t;
    memset(pr, 0, sizeof *pr);
    pr->pool = p;
    assert_int_equal(pthread_create(&t, NULL, other_lane, pr), 0);
    pthread_join(t, NULL);
    return pr->claim;
}

static void test_claim_holds_pool(void **state) {
    (void)state;
    mf_pool *p = mf_pool_create(3);
    assert_non_null(p);
    mf_lane l;
    mf_lane_init(&l, p);
    static ranges_probe pr;
    assert_int_equal(mf_lane_claim(&l, 8), 3);
    assert_int_equal(mf_lane_claim(&l, 2), 2); /* still held: no second lock */
    assert_int_equal(probe_from_another_thread(p, &pr), 1);
    assert_int_equal(atomic_load(&pr.r.n), 1); /* serial: one range */
    static ranges mine;
    atomic_init(&mine.n, 0);
    mf_lane_parallel_for(&l, 64, 1, record, &mine); /* on the held pool */
    assert_int_equal(atomic_load(&mine.n), mf_pool_chunks(p, 64, 1));
    assert_null(l.held); /* ... which it gave back */
    assert_int_equal(probe_from_another_thread(p, &pr), 3);
    assert_int_equal(atomic_load(&pr.r.n), mf_pool_chunks(p, 64, 1));
    assert_int_equal(mf_lane_claim(&l, 2), 2);
    mf_lane_release(&l);
    mf_lane_release(&l); /* twice: nothing held */
    assert_int_equal(probe_from_another_thread(p, &pr), 3);
    mf_pool *one = mf_pool_create(1); /* no workers: nothing to hold */
    mf_lane_init(&l, one);
    assert_int_equal(mf_lane_claim(&l, 4), 1);
    assert_null(l.held);
    mf_pool_free(one);
    mf_pool_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_index_once),
        cmocka_unit_test(test_cpus_from_affinity),
        cmocka_unit_test(test_nested),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_stalled_chunk),
        cmocka_unit_test(test_concurrent_callers),
        cmocka_unit_test(test_share_same_ranges),
        cmocka_unit_test(test_share_helps),
        cmocka_unit_test(test_share_account),
        cmocka_unit_test(test_start_rule),
        cmocka_unit_test(test_way_pick),
        cmocka_unit_test(test_share_nested),
        cmocka_unit_test(test_claim_holds_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
