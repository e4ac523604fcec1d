/*
 * The parallel scheduler: nodes that do not depend on each other run at
 * once, on the session's pool, with the intra-op work of each node.
 *
 * The plan (plan/plan_concurrent.c) gives each step its count of producer
 * steps, its consumers, its estimated work and its priority (the work on
 * the longest path from it to the end), and a memory plan valid for every
 * order those dependencies admit. A run is one pool job: one chunk per
 * pool thread, each a loop over
 *
 *  1. a ready step (its producers all finished), the one of highest
 *     priority, when this thread is one of the inter-op threads and the
 *     step may start (below): it runs whole on this thread, and when its
 *     kernel calls parallel_for the chunks are published to the run's
 *     share (exec/threadpool.h) rather than run serially;
 *  2. else a published chunk of a node running on another thread;
 *  3. else a wait: a short spin, then asleep, until a step finishes or a
 *     chunk is published.
 *
 * So no thread idles while a node that splits its work runs on another
 * (a node running alone splits over every thread, as under the sequential
 * scheduler), and never more threads are busy than the pool has: a helper
 * is a pool thread with nothing else to do.
 *
 * When may a second step start beside running ones? A step that splits
 * its work gets the idle threads' help chunk by chunk, but a chunk taken
 * by its owner is its owner's: a thread that starts a step of work y
 * beside one of work x on W threads may leave the whole of x to its owner
 * (it helps only when it is done). Run at once, the steps take at least
 * the longest-first makespan M over the W threads; one after another, the
 * sum of c / (W e) over steps that split (e the intra-op efficiency, taken
 * as 0.8) and of c over steps whose kernel ran on one thread the last time
 * (the runs note it: the step published no chunks). A step starts beside
 * others when M is below that over the running and ready steps' work: two
 * steps of nearly equal work, or any that do not split, run side by side;
 * a ResNet block's small downsampling convolution waits while its thread
 * helps the large 3x3 neighbour, then runs split over the pool, as in the
 * sequential order. (Started beside it, it would be done before the 3x3's
 * first chunk and help with the second, but the 3x3's owner would then
 * wait for that chunk: no gain at an intra-op efficiency above 1/2.)
 *
 * Measured, not guessed. Estimated work (FLOPs) and e = 0.8 serve the first
 * run only. Every run measures each step (mf_conc.one_ns, split_ns,
 * smoothed): its time on one thread (its wall time outside parallel_for
 * plus the time of every chunk, on whichever thread ran it: the share
 * accounts for it) and, when it split with no other step running, its wall
 * time split over the pool. Once every step weighed has been measured, c is
 * the one-thread time and c / (W e) the measured split time, so a node
 * whose split is nearly perfect (Inception V3's large convolutions on
 * oneDNN) runs split, one after another, and nodes whose split gains little
 * (GoogLeNet's small ones at 64x64, or any node while the other CPU is
 * taken by another process) run side by side. A step's split time is
 * measured only while nothing runs beside it, so a step once found worth
 * overlapping would never be measured split again: the first run of a plan
 * and every PROBE_EVERY-th run start no step beside another (the sequential
 * order's cost, 1 run in 16), which also gives the second run measured
 * figures for every step.
 *
 * Threads of a node's own (claims). A provider that runs a node on threads
 * it starts itself (oneDNN's OpenMP builds of nodes without a split form)
 * claims them first (minfer_host_api.claim_threads, claim below). A step
 * running alone gets every thread, unless the ready steps would gain more
 * by starting beside it on one thread each (the rule above, with it counted
 * as splitting); while it holds them no step starts and the idle threads
 * sleep rather than spin. A step running beside others gets one thread (the
 * provider then runs its one-thread build) and counts as not splitting, so
 * the ready steps may start beside it. So the busy threads never exceed the
 * pool's, where before a node on two OpenMP threads and a step started
 * beside it took three threads of two CPUs.
 *
 * When the queue loses. Where nothing gains from overlap (a chain such
 * as ResNet-18) or the overlap costs more than the split it replaces
 * (GoogLeNet at 16 threads: its steps beside each other get one thread
 * each where alone they split over 16), the queue's own costs make a run
 * slower than the sequential scheduler's (measured on 16 cores: 1.2x on
 * ResNet-18, 1.9x on GoogLeNet). So every run is timed whole, through the
 * queue or one step after another on the calling thread (the sequential
 * loop, valid under the concurrent memory plan), and a run goes the way
 * that has been faster for this plan; the other way is timed again every
 * 32nd run (mf_sched_pick).
 *
 * Results are identical to the sequential scheduler's: every node computes
 * the same thing from the same inputs; only when it runs changes, and a
 * kernel's parallel_for is cut into the same ranges either way.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/sched.h"
#include "exec/threadpool.h"
#include "util/log.h"

#define INTRA_EFFICIENCY 0.8
#define ERR_COPY 1024
#define LPT_MAX 64 /* steps weighed at once when deciding to start one */
#define PROBE_EVERY 16 /* runs: the first and every 16th run steps one at a time */
#define CLAIM_ANY_THREAD_MAX 8 /* pool threads up to which any of them may claim (claim) */

typedef struct sched sched;

/* A pool thread of the run: the step it runs and the threads its node
 * claimed (minfer_host_api.claim_threads). */
typedef struct worker {
    sched *q;
    int step;            /* -1 between steps */
    int claimed;         /* threads granted to the running step, 1 when none asked */
    int solo;            /* no other step ran beside it so far; under the lock */
} worker;

struct sched {
    minfer_session *s;
    mf_plan *p;
    mf_exec_ctx *c;
    mf_budget *b;
    const mf_conc *cc;
    mf_share *share;
    mf_run *runs;        /* per pool thread */
    mf_lane *lanes;      /* per pool thread: its runs' lane while steps run at once */
    worker *workers;     /* per pool thread */
    int threads;
    int inter_op;        /* threads that start steps */
    int wide;            /* a step holds every thread (an OpenMP build): none starts */
    int probe;           /* this run starts no step beside another (measures split_ns) */
    int overlapped;      /* two steps ran at once (counted in cc->queue_runs[1]) */
    pthread_t caller;    /* the thread that called the run */
    pthread_mutex_t lock;
    int *deps;           /* per step: producers still to finish */
    int *ready;          /* a max-heap of steps by priority */
    int n_ready;
    int *running;        /* the steps in flight */
    int in_flight;
    int remaining;
    minfer_status st;    /* the first failure */
    char err[ERR_COPY];
};

/* Whether step a comes before step b in the ready heap: higher priority
 * first, then earlier in the order. */
static int before(const sched *q, int a, int b) {
    double pa = q->cc->prio[a], pb = q->cc->prio[b];
    return pa > pb || (pa == pb && a < b);
}

static void heap_push(sched *q, int k) {
    int i = q->n_ready++;
    q->ready[i] = k;
    while (i > 0 && before(q, q->ready[i], q->ready[(i - 1) / 2])) {
        int up = (i - 1) / 2, t = q->ready[up];
        q->ready[up] = q->ready[i];
        q->ready[i] = t;
        i = up;
    }
}

static int heap_pop(sched *q) {
    int top = q->ready[0], i = 0;
    q->ready[0] = q->ready[--q->n_ready];
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->n_ready && before(q, q->ready[l], q->ready[m]))
            m = l;
        if (r < q->n_ready && before(q, q->ready[r], q->ready[m]))
            m = r;
        if (m == i)
            break;
        int t = q->ready[m];
        q->ready[m] = q->ready[i];
        q->ready[i] = t;
        i = m;
    }
    return top;
}

/* Step k finished: its consumers lose a dependency. Under q->lock. */
static void finish(sched *q, int k) {
    const mf_conc *cc = q->cc;
    q->remaining--;
    for (int e = cc->succ_at[k]; e < cc->succ_at[k + 1]; e++)
        if (--q->deps[cc->succ[e]] == 0)
            heap_push(q, cc->succ[e]);
}

/* Records the first failure with its message (the thread's last error). */
static void fail(sched *q, minfer_status st) {
    if (q->st != MINFER_OK)
        return;
    q->st = st;
    snprintf(q->err, sizeof q->err, "%s", minfer_last_error());
}

/* The start rule (exec/sched.h): LPT makespan against the sum. */
int mf_sched_gains(double *one, const double *alone, int n, int w) {
    double load[LPT_MAX] = {0}, seq = 0, m = 0;
    if (w > LPT_MAX)
        w = LPT_MAX;
    for (int i = 0; i < n; i++)
        seq += alone[i];
    /* longest first onto the least loaded thread: the steps are few */
    for (int i = 0; i < n; i++) {
        int big = i;
        for (int j = i + 1; j < n; j++)
            if (one[j] > one[big])
                big = j;
        double t = one[big];
        one[big] = one[i];
        int least = 0;
        for (int j = 1; j < w; j++)
            if (load[j] < load[least])
                least = j;
        load[least] += t;
        if (load[least] > m)
            m = load[least];
    }
    return m < seq;
}

/* Whether running the running and ready steps at once beats running them
 * one after another (see the top); step wide (or -1) counts as splitting
 * over the pool whatever its last run did. Under q->lock. */
static int gains(const sched *q, int wide) {
    const mf_conc *cc = q->cc;
    double cost[LPT_MAX], alone[LPT_MAX];
    int n = 0;
    int steps = q->in_flight + q->n_ready < LPT_MAX ? q->in_flight + q->n_ready : LPT_MAX;
    /* measured times when every step weighed has them, else the estimates */
    int measured = 1;
    for (int i = 0; i < steps && measured; i++) {
        int k = i < q->in_flight ? q->running[i] : q->ready[i - q->in_flight];
        measured = atomic_load_explicit(&cc->one_ns[k], memory_order_relaxed) != 0;
    }
    for (int i = 0; i < steps; i++) {
        int k = i < q->in_flight ? q->running[i] : q->ready[i - q->in_flight];
        double one = measured ? (double)atomic_load_explicit(&cc->one_ns[k], memory_order_relaxed)
                              : cc->cost[k];
        double split = measured ? (double)atomic_load_explicit(&cc->split_ns[k],
                                                               memory_order_relaxed)
                                : 0;
        cost[n++] = one;
        /* one after another: split over the pool (as measured, or at the
         * assumed efficiency), or, for a step whose kernel did not split
         * last time, on one thread anyway */
        int serial = k != wide && atomic_load_explicit(&cc->serial[k], memory_order_relaxed);
        alone[n - 1] = serial      ? one
                       : split > 0 ? split
                                   : one / ((double)q->threads * INTRA_EFFICIENCY);
    }
    return mf_sched_gains(cost, alone, n, q->inter_op);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Smooths a measured time into *t (a lost update between concurrent runs
 * of a session is harmless); 0 is no measurement. */
static void learn(_Atomic uint64_t *t, uint64_t ns) {
    if (!ns)
        return;
    uint64_t old = atomic_load_explicit(t, memory_order_relaxed);
    atomic_store_explicit(t, old ? (3 * old + ns) / 4 : ns, memory_order_relaxed);
}

/* Whether the best ready step may start beside the running ones. Under
 * q->lock. */
static int may_start(const sched *q) {
    if (q->in_flight == 0)
        return 1;
    return !q->wide && !q->probe && gains(q, -1);
}

/* minfer_host_api.claim_threads on a pool thread of the run: a step running
 * alone gets every thread (and none starts beside it until it finishes)
 * unless starting the ready steps beside it on one thread gains more; a
 * step running beside others gets 1. So never more threads are busy than
 * the pool has. */
static int claim(void *arg, int want) {
    worker *me = arg;
    sched *q = me->q;
    int n = 1;
    if (me->step < 0) /* a chunk of a step running on another thread */
        return 1;
    pthread_mutex_lock(&q->lock);
    /* Above 8 threads only the run's calling thread gives a node threads of
     * its own: an OpenMP region entered from a pool thread gets a team of
     * its own (libgomp keeps one per thread that starts regions), so nodes
     * claiming on several pool threads build up to threads x threads OpenMP
     * workers, and above 8 CPUs oneDNN's spin between regions (shim.c):
     * on 16 cores, with oneDNN's OpenMP builds, GoogLeNet ran 2.1x and
     * Inception V3 1.7x slower than sequential. Elsewhere the node runs
     * its one-thread build. Up to 8 threads those workers sleep (passive)
     * and a step may claim on any pool thread. */
    int may_claim = q->threads <= CLAIM_ANY_THREAD_MAX || pthread_equal(pthread_self(), q->caller);
    if (may_claim && q->in_flight == 1 && !q->wide &&
        (q->n_ready == 0 || q->probe || !gains(q, me->step))) {
        n = want < q->threads ? want : q->threads;
        if (n > 1) {
            q->wide = 1;
            mf_share_quiet(q->share, 1);
        }
    }
    if (n == 1) /* it runs on this thread alone: others may start beside it */
        atomic_store_explicit(&q->cc->serial[me->step], 1, memory_order_relaxed);
    pthread_mutex_unlock(&q->lock);
    if (n == 1)
        mf_share_notify(q->share);
    if (n > me->claimed)
        me->claimed = n;
    return n;
}

/* Pops the best ready step and runs it on this thread, noting whether
 * its kernel split its work (it published chunks to the share). Enters and
 * leaves with q->lock held. */
static void run_one(sched *q, mf_run *r, worker *me, int shared) {
    int k = heap_pop(q);
    assert(q->in_flight < q->threads); /* one step per thread of the job at most */
    q->running[q->in_flight++] = k;
    /* solo: no other step runs at any moment of its run */
    me->solo = q->in_flight == 1;
    for (int t = 0; t < q->threads && q->in_flight > 1; t++)
        q->workers[t].solo = 0;
    q->overlapped |= q->in_flight > 1;
    me->step = k;
    me->claimed = 1;
    pthread_mutex_unlock(&q->lock);
    mf_lane *l = r->lane;
    unsigned published = l->published;
    uint64_t region0 = l->region_ns, work0 = l->work_ns, t0 = now_ns();
    minfer_status st = mf_run_step(q->s, q->p, q->c, r, q->b, k);
    uint64_t wall = now_ns() - t0;
    uint64_t region1 = l->region_ns, work1 = l->work_ns;
    int split = l->published != published || me->claimed > 1;
    if (shared && st == MINFER_OK) {
        atomic_store_explicit(&q->cc->serial[k], !split, memory_order_relaxed);
        /* its work on one thread: its wall time outside parallel_for plus
         * its chunks' time; a step on threads of its own (claimed) is
         * measured on one only when it runs beside others, else estimated
         * from its wall time at the assumed intra-op efficiency */
        if (me->claimed > 1) /* its split at the assumed efficiency */
            learn(&q->cc->one_ns[k],
                  (uint64_t)((double)wall * me->claimed * INTRA_EFFICIENCY));
        else
            learn(&q->cc->one_ns[k], wall - (region1 - region0) + (work1 - work0));
    }
    pthread_mutex_lock(&q->lock);
    if (shared && st == MINFER_OK && split && me->solo)
        learn(&q->cc->split_ns[k], wall);
    me->step = -1;
    if (me->claimed > 1) { /* its threads are free again */
        q->wide = 0;
        mf_share_quiet(q->share, 0);
    }
    for (int i = 0; i < q->in_flight; i++)
        if (q->running[i] == k) {
            q->running[i] = q->running[--q->in_flight];
            break;
        }
    if (st != MINFER_OK)
        fail(q, st);
    else
        finish(q, k);
}

/* A chunk of the run's pool job: thread w's loop (see the top). When the
 * pool is busy with another run of the session, the caller gets every
 * chunk at once and runs the steps alone, its kernels using the pool when
 * it is free. */
static void run_chunk(void *arg, size_t begin, size_t end) {
    sched *q = arg;
    int w = (int)begin, alone = end - begin > 1;
    mf_run *r = &q->runs[w];
    worker *me = &q->workers[w];
    if (!alone) { /* this thread's place in the share, claims through the queue */
        r->lane = &q->lanes[w];
        mf_share_begin(q->share, w);
    }
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->remaining == 0 || q->st != MINFER_OK)
            break;
        if ((w < q->inter_op || alone) && q->n_ready > 0 && (alone || may_start(q))) {
            run_one(q, r, me, !alone);
            mf_share_notify(q->share);
            continue;
        }
        if (q->n_ready == 0 && q->in_flight == 0) { /* cannot happen with an acyclic plan */
            mf_error(MINFER_ERR_RUNTIME, "%s: parallel scheduler: no step ready, %d left",
                     q->s->errctx, q->remaining);
            fail(q, MINFER_ERR_RUNTIME);
            mf_share_notify(q->share);
            break;
        }
        unsigned seen = mf_share_events(q->share);
        pthread_mutex_unlock(&q->lock);
        if (!mf_share_help(q->share, w))
            mf_share_wait(q->share, w, seen);
        pthread_mutex_lock(&q->lock);
    }
    pthread_mutex_unlock(&q->lock);
}

int mf_sched_pick(unsigned n, uint64_t par_ns, uint64_t seq_ns) {
    int plain_clearly = par_ns && seq_ns && (double)par_ns > 1.1 * (double)seq_ns;
    if (n % PROBE_EVERY == 0 && (!plain_clearly || n % (4 * PROBE_EVERY) == 0))
        return MF_WAY_PROBE;
    if (!par_ns)
        return MF_WAY_QUEUE;
    if (!seq_ns)
        return MF_WAY_PLAIN;
    int faster = seq_ns < par_ns ? MF_WAY_PLAIN : MF_WAY_QUEUE;
    if (n % (2 * PROBE_EVERY) == PROBE_EVERY / 2)
        return faster == MF_WAY_PLAIN ? MF_WAY_QUEUE : MF_WAY_PLAIN;
    return faster;
}

static minfer_status run_queue(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                               mf_budget *b, int probe);

minfer_status mf_sched_parallel_run(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                                    mf_budget *b) {
    const mf_conc *cc = p->conc;
    unsigned n = atomic_fetch_add_explicit(cc->runs, 1, memory_order_relaxed);
    int way = mf_sched_pick(n, atomic_load_explicit(&cc->way_ns[0], memory_order_relaxed),
                            atomic_load_explicit(&cc->way_ns[1], memory_order_relaxed));
    uint64_t t0 = now_ns();
    minfer_status st = MINFER_OK;
    if (way == MF_WAY_PLAIN) {
        /* The sequential scheduler's loop: the concurrent memory plan holds
         * for every order, the execution order among them. */
        for (int k = 0; k < cc->n && st == MINFER_OK; k++)
            if (cc->n_deps[k] >= 0)
                st = mf_run_step(s, p, c, r, b, k);
    } else
        st = run_queue(s, p, c, r, b, way == MF_WAY_PROBE);
    if (st == MINFER_OK && way != MF_WAY_PROBE)
        learn(&cc->way_ns[way], now_ns() - t0);
    return st;
}

static minfer_status run_queue(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                               mf_budget *b, int probe) {
    const mf_conc *cc = p->conc;
    sched q;
    memset(&q, 0, sizeof q);
    q.s = s;
    q.p = p;
    q.c = c;
    q.b = b;
    q.cc = cc;
    int threads = mf_pool_threads(s->pool);
    q.probe = probe;
    q.caller = pthread_self();
    q.inter_op = s->inter_op < threads ? s->inter_op : threads;
    q.deps = mf_malloc(((size_t)cc->n + 1) * sizeof *q.deps);
    q.ready = mf_malloc(((size_t)cc->n + 1) * sizeof *q.ready);
    q.running = mf_malloc(((size_t)threads + 1) * sizeof *q.running);
    q.runs = mf_calloc((size_t)threads + 1, sizeof *q.runs);
    q.workers = mf_calloc((size_t)threads + 1, sizeof *q.workers);
    q.lanes = mf_calloc((size_t)threads + 1, sizeof *q.lanes);
    q.share = mf_share_create(s->pool);
    q.threads = threads;
    if (!q.deps || !q.ready || !q.running || !q.runs || !q.workers || !q.lanes || !q.share) {
        free(q.deps);
        free(q.ready);
        free(q.running);
        free(q.runs);
        free(q.workers);
        free(q.lanes);
        mf_share_free(q.share);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    pthread_mutex_t budget_lock;
    pthread_mutex_init(&q.lock, NULL);
    pthread_mutex_init(&budget_lock, NULL);
    for (int k = 0; k < cc->n; k++) {
        q.deps[k] = cc->n_deps[k];
        if (q.deps[k] >= 0)
            q.remaining++;
        if (q.deps[k] == 0)
            heap_push(&q, k);
    }
    for (int w = 0; w < threads; w++) {
        /* each thread its own handle: the node it runs, its temporaries */
        q.runs[w] = *r;
        q.runs[w].temps = NULL;
        q.runs[w].temp_strings = NULL;
        q.runs[w].n_temps = q.runs[w].cap_temps = 0;
        q.workers[w].q = &q;
        q.workers[w].step = -1;
        q.workers[w].claimed = 1;
        mf_lane_init(&q.lanes[w], s->pool);
        q.lanes[w].share = q.share;
        q.lanes[w].index = w;
        q.lanes[w].claim = claim;
        q.lanes[w].claim_ctx = &q.workers[w];
    }
    b->lock = &budget_lock;
    mf_pool_parallel_for(s->pool, (size_t)threads, 1, run_chunk, &q);
    b->lock = NULL;
    for (int w = 0; w < threads; w++)
        mf_run_free_temps(&q.runs[w]);
    if (!probe)
        atomic_fetch_add_explicit(&cc->queue_runs[0], 1, memory_order_relaxed);
    if (q.overlapped)
        atomic_fetch_add_explicit(&cc->queue_runs[1], 1, memory_order_relaxed);
    minfer_status st = q.st;
    if (st != MINFER_OK)
        mf_error(st, "%s", q.err);
    pthread_mutex_destroy(&q.lock);
    pthread_mutex_destroy(&budget_lock);
    mf_share_free(q.share);
    free(q.deps);
    free(q.ready);
    free(q.running);
    free(q.runs);
    free(q.workers);
    free(q.lanes);
    return st;
}
