/*
 * The pipeline scheduler: a run bound to a pipe (exec/pipeline.h) goes
 * through the stages of plan/plan_stages.c one after another:
 *
 *  1. the stages are cut for the run's plan (a pass over the order; a plan
 *     for other shapes may be cut elsewhere, the stage count stays), by the
 *     step times measured on the requests before it once there are some
 *     (CPU time in a stage on one thread, see thread_cpu_ms),
 *     by the planner's estimates for the first; any cut is correct, as each
 *     request runs every step in order, so requests cut differently may
 *     follow each other;
 *  2. for each stage in order: wait for the turn (the stage's counter
 *     reaching the request's number), run its steps with the stage's
 *     intra-op pool, move the counter on;
 *  3. on a failure the stage is left at once; mf_pipe_unbind passes the
 *     stages not reached, so one failing request holds up nobody.
 *
 * Results are the sequential scheduler's: the same steps in the same
 * order, in the request's own execution context.
 */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/pipeline.h"
#include "exec/threadpool.h"
#include "plan/plan_stages.h"

struct mf_pipe {
    int stages;
    mf_pool **pools;  /* per stage */
    uint64_t *turn;   /* per stage: the request that may enter next */
    pthread_mutex_t lock;
    /* per stage: signalled when its turn moves on. One per stage, not one
     * for the pipe: a request leaving stage j wakes only the request
     * waiting for stage j, not every waiting worker (each wake of a thread
     * that only goes back to sleep costs a context switch on the CPUs the
     * stages run on). */
    pthread_cond_t *cv;
    /* step times summed over the requests of plan m_plan (under lock) */
    const mf_plan *m_plan;
    double *m_ms;
    size_t m_n;
    uint64_t m_runs;
};

mf_pipe *mf_pipe_create(int stages, int threads) {
    mf_pipe *q = mf_calloc(1, sizeof *q);
    if (!q)
        return NULL;
    q->stages = stages < 1 ? 1 : stages;
    q->pools = mf_calloc((size_t)q->stages, sizeof *q->pools);
    q->turn = mf_calloc((size_t)q->stages, sizeof *q->turn);
    q->cv = mf_calloc((size_t)q->stages, sizeof *q->cv);
    if (!q->pools || !q->turn || !q->cv) {
        free(q->pools);
        free(q->turn);
        free(q->cv);
        free(q);
        return NULL;
    }
    pthread_mutex_init(&q->lock, NULL);
    for (int j = 0; j < q->stages; j++)
        pthread_cond_init(&q->cv[j], NULL);
    for (int j = 0; j < q->stages; j++)
        if (!(q->pools[j] = mf_pool_create(threads < 1 ? 1 : threads))) {
            mf_pipe_free(q); /* mf_pool_free(NULL) for the pools not made */
            return NULL;
        }
    return q;
}

void mf_pipe_free(mf_pipe *q) {
    if (!q)
        return;
    for (int j = 0; j < q->stages; j++)
        mf_pool_free(q->pools[j]);
    pthread_mutex_destroy(&q->lock);
    for (int j = 0; j < q->stages; j++)
        pthread_cond_destroy(&q->cv[j]);
    free(q->pools);
    free(q->turn);
    free(q->cv);
    free(q->m_ms);
    free(q);
}

int mf_pipe_measured(mf_pipe *q, const mf_plan *p, double *work, size_t n) {
    int have = 0;
    pthread_mutex_lock(&q->lock);
    if (q->m_plan == p && q->m_n == n && q->m_runs > 0) {
        memcpy(work, q->m_ms, n * sizeof *work);
        have = 1;
    }
    pthread_mutex_unlock(&q->lock);
    return have;
}

/* Adds one request's step times t (n steps of plan p) to the sums. */
static void add_measured(mf_pipe *q, const mf_plan *p, const double *t, size_t n) {
    pthread_mutex_lock(&q->lock);
    if (q->m_plan != p || q->m_n != n) {
        double *m = mf_realloc(q->m_ms, (n + 1) * sizeof *m);
        if (!m) {
            pthread_mutex_unlock(&q->lock);
            return; /* the estimates stay in use */
        }
        memset(m, 0, (n + 1) * sizeof *m);
        q->m_ms = m;
        q->m_plan = p;
        q->m_n = n;
        q->m_runs = 0;
    }
    for (size_t k = 0; k < n; k++)
        q->m_ms[k] += t[k];
    q->m_runs++;
    pthread_mutex_unlock(&q->lock);
}

/* The calling thread's CPU time in ms (0 where the clock is missing: every
 * cut is correct, only its balance suffers). A stage on one thread runs each step's whole work on the
 * calling thread, so its CPU time is the step's work; unlike the wall
 * clock it does not count the time the thread was descheduled, which on a
 * shared machine lands on whichever steps happened to be running and would
 * move the cut from request to request. A stage with helper threads has
 * part of a step's work elsewhere: there the wall clock is taken. */
static double thread_cpu_ms(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int mf_pipe_stages(const mf_pipe *q) {
    return q->stages;
}

void mf_pipe_ticket_init(mf_pipe_ticket *t, mf_pipe *q, uint64_t seq) {
    t->q = q;
    t->seq = seq;
    t->passed = 0;
}

static void enter(mf_pipe *q, int j, uint64_t seq) {
    pthread_mutex_lock(&q->lock);
    while (q->turn[j] != seq)
        pthread_cond_wait(&q->cv[j], &q->lock);
    pthread_mutex_unlock(&q->lock);
}

static void leave(mf_pipe_ticket *t, int j) {
    mf_pipe *q = t->q;
    pthread_mutex_lock(&q->lock);
    q->turn[j]++;
    pthread_cond_broadcast(&q->cv[j]);
    pthread_mutex_unlock(&q->lock);
    t->passed = j + 1;
}

void mf_pipe_ticket_end(mf_pipe_ticket *t) {
    mf_pipe *q = t->q;
    if (!q)
        return;
    for (int j = t->passed; j < q->stages; j++) {
        enter(q, j, t->seq);
        leave(t, j);
    }
    t->q = NULL;
}

minfer_status mf_sched_pipeline_run(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                                    mf_budget *b, mf_pipe_ticket *tk) {
    mf_pipe *q = tk->q;
    assert(q && r->lane); /* a ticket of a pipe, a run with a lane whose pool a stage swaps */
    size_t n = s->g->n_nodes;
    minfer_status st = MINFER_OK;
    if (tk->passed != 0)
        return mf_error(MINFER_ERR_RUNTIME, "%s: pipeline: a request ran twice", s->errctx);
    int *cut = mf_malloc(((size_t)q->stages + 1) * sizeof *cut);
    double *work = mf_malloc((n + 1) * sizeof *work), *t = mf_calloc(n + 1, sizeof *t);
    if (!cut || !work || !t) {
        free(cut);
        free(work);
        free(t);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    mf_plan_stages(s, p, q->stages, mf_pipe_measured(q, p, work, n) ? work : NULL, cut);
    mf_pool *outside = r->lane->pool;
    for (int j = 0; j < q->stages && st == MINFER_OK; j++) {
        enter(q, j, tk->seq);
        r->lane->pool = q->pools[j]; /* the stage's nodes split over its own pool */
        int alone = mf_pool_threads(q->pools[j]) == 1;
        for (int k = cut[j]; k < cut[j + 1] && st == MINFER_OK; k++)
            if (!p->nodes[s->g->order[k]].folded) {
                double t0 = alone ? thread_cpu_ms() : mf_now_ms();
                st = mf_run_step(s, p, c, r, b, k);
                t[k] = (alone ? thread_cpu_ms() : mf_now_ms()) - t0;
            }
        mf_lane_release(r->lane); /* a claim's hold on the stage's pool */
        r->lane->pool = outside;
        leave(tk, j);
    }
    if (st == MINFER_OK)
        add_measured(q, p, t, n);
    free(cut);
    free(work);
    free(t);
    return st;
}
