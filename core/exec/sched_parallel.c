/*
 * The parallel scheduler: nodes that do not depend on each other run at
 * once, on the session's pool, with the intra-op work of each node.
 *
 * The plan (plan/plan_concurrent.c) gives each step its count of producer
 * steps and its consumers, and a memory plan valid for every order those
 * dependencies admit. A run:
 *
 *  1. counts down dependencies: a step whose producers all finished joins
 *     the ready queue;
 *  2. on the calling thread, while the queue holds one step (a chain) or
 *     steps too unequal to gain from running side by side, runs the
 *     earliest ready step alone, where it splits its own work over the
 *     whole pool (intra-op, as the sequential scheduler does);
 *  3. otherwise opens a region: one pool job whose chunks, one per inter-op
 *     thread, each loop popping ready steps and running them whole. Inside
 *     a chunk the pool runs a node's parallel_for serially (a nested call),
 *     so a region keeps exactly inter_op threads busy and cannot deadlock;
 *     a chunk waits on a condition variable (not busy) while the queue is
 *     empty and other steps still run;
 *  4. closes the region when nothing runs and at most one step is ready,
 *     so the next node of a chain gets the whole pool again.
 *
 * When are steps "too unequal"? Run at once on W threads, ready steps of
 * work c_1..c_m take at least the longest-first makespan M; run one after
 * another with intra-op splitting they take about sum(c) / (W * e), e the
 * intra-op efficiency (assumed 0.8). A region opens when M < sum(c) /
 * (W * 0.8) and the work is worth a pool wake-up (> 100k operations); a
 * ResNet block's small downsampling convolution then does not pull the
 * large 3x3 one off the pool.
 *
 * Results are identical to the sequential scheduler's: every node computes
 * the same thing from the same inputs; only when it runs changes (a node's
 * kernel splits its work by output ranges, not by partial sums).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exec/sched.h"
#include "exec/threadpool.h"
#include "util/log.h"

#define INTRA_EFFICIENCY 0.8
#define REGION_MIN_WORK 1e5
#define ERR_COPY 1024

typedef struct sched {
    minfer_session *s;
    mf_plan *p;
    mf_exec_ctx *c;
    mf_budget *b;
    mf_step_fn step;
    const mf_conc *cc;
    mf_run *runs;        /* per region chunk */
    int workers;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int *deps;           /* per step: producers still to finish */
    int *ready;          /* a min-heap of steps: the earliest first, as in order */
    int n_ready;
    int in_flight;
    int remaining;
    int closed;          /* the current region is over */
    minfer_status st;    /* the first failure */
    char err[ERR_COPY];
} sched;

static void heap_push(sched *q, int k) {
    int i = q->n_ready++;
    q->ready[i] = k;
    while (i > 0 && q->ready[(i - 1) / 2] > q->ready[i]) {
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
        if (l < q->n_ready && q->ready[l] < q->ready[m])
            m = l;
        if (r < q->n_ready && q->ready[r] < q->ready[m])
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

/* Whether the ready steps gain from running at once (see the top). */
static int worth_region(const sched *q) {
    if (q->n_ready < 2 || q->workers < 2)
        return 0;
    double load[64] = {0}, sum = 0, m = 0;
    int w = q->workers < 64 ? q->workers : 64;
    /* longest first onto the least loaded thread: the costs are few */
    int n = q->n_ready < 256 ? q->n_ready : 256;
    double cost[256];
    for (int i = 0; i < n; i++) {
        cost[i] = q->cc->cost[q->ready[i]];
        sum += cost[i];
    }
    if (sum < REGION_MIN_WORK)
        return 0;
    for (int i = 0; i < n; i++) {
        int big = i;
        for (int j = i + 1; j < n; j++)
            if (cost[j] > cost[big])
                big = j;
        double t = cost[big];
        cost[big] = cost[i];
        int least = 0;
        for (int j = 1; j < w; j++)
            if (load[j] < load[least])
                least = j;
        load[least] += t;
        if (load[least] > m)
            m = load[least];
    }
    return m < sum / ((double)w * INTRA_EFFICIENCY);
}

/* A region chunk: pops and runs ready steps until the region closes. */
static void region_chunk(void *arg, size_t begin, size_t end) {
    sched *q = arg;
    (void)end;
    mf_run *r = &q->runs[begin];
    const minfer_run_options *outer = mf_current_run;
    mf_current_run = q->b->ro;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        if (q->closed || q->st != MINFER_OK)
            break;
        if (q->in_flight == 0 && q->n_ready <= 1) {
            q->closed = 1; /* a chain again, or done: back to the caller */
            pthread_cond_broadcast(&q->cv);
            break;
        }
        if (q->n_ready == 0) {
            pthread_cond_wait(&q->cv, &q->lock);
            continue;
        }
        int k = heap_pop(q);
        q->in_flight++;
        pthread_mutex_unlock(&q->lock);
        minfer_status st = q->step(q->s, q->p, q->c, r, q->b, k);
        pthread_mutex_lock(&q->lock);
        q->in_flight--;
        if (st != MINFER_OK)
            fail(q, st);
        else
            finish(q, k);
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->lock);
    mf_current_run = outer;
}

minfer_status mf_sched_parallel_run(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                                    mf_budget *b, mf_step_fn step) {
    const mf_conc *cc = p->conc;
    sched q;
    memset(&q, 0, sizeof q);
    q.s = s;
    q.p = p;
    q.c = c;
    q.b = b;
    q.step = step;
    q.cc = cc;
    q.workers = s->inter_op;
    q.deps = mf_malloc(((size_t)cc->n + 1) * sizeof *q.deps);
    q.ready = mf_malloc(((size_t)cc->n + 1) * sizeof *q.ready);
    q.runs = mf_calloc((size_t)q.workers + 1, sizeof *q.runs);
    if (!q.deps || !q.ready || !q.runs) {
        free(q.deps);
        free(q.ready);
        free(q.runs);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    pthread_mutex_t budget_lock;
    pthread_mutex_init(&q.lock, NULL);
    pthread_cond_init(&q.cv, NULL);
    pthread_mutex_init(&budget_lock, NULL);
    for (int k = 0; k < cc->n; k++) {
        q.deps[k] = cc->n_deps[k];
        if (q.deps[k] >= 0)
            q.remaining++;
        if (q.deps[k] == 0)
            heap_push(&q, k);
    }
    for (int w = 0; w < q.workers; w++) {
        /* each thread its own handle: the node it runs, its temporaries */
        q.runs[w] = *r;
        q.runs[w].temps = NULL;
        q.runs[w].temp_strings = NULL;
        q.runs[w].n_temps = q.runs[w].cap_temps = 0;
    }
    while (q.remaining > 0 && q.st == MINFER_OK) {
        if (q.n_ready == 0) { /* cannot happen with an acyclic plan */
            mf_error(MINFER_ERR_RUNTIME, "%s: parallel scheduler: no step ready, %d left",
                     s->errctx, q.remaining);
            fail(&q, MINFER_ERR_RUNTIME);
            break;
        }
        if (worth_region(&q)) {
            q.closed = 0;
            b->lock = &budget_lock;
            mf_pool_parallel_for(s->pool, (size_t)q.workers, 1, region_chunk, &q);
            b->lock = NULL;
            continue;
        }
        int k = heap_pop(&q);
        minfer_status st = step(s, p, c, r, b, k);
        if (st != MINFER_OK)
            fail(&q, st);
        else
            finish(&q, k);
    }
    for (int w = 0; w < q.workers; w++)
        mf_run_free_temps(&q.runs[w]);
    minfer_status st = q.st;
    if (st != MINFER_OK)
        mf_error(st, "%s", q.err);
    pthread_mutex_destroy(&q.lock);
    pthread_cond_destroy(&q.cv);
    pthread_mutex_destroy(&budget_lock);
    free(q.deps);
    free(q.ready);
    free(q.runs);
    return st;
}
