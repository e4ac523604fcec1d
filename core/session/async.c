/*
 * Asynchronous runs (minfer_session_submit, docs/scheduling.md).
 *
 * The session's workers are made on the first submit:
 *
 *  1. under the pipeline scheduler, a pipe (exec/pipeline.h) and one
 *     worker per stage: the stage count is the inter-op thread count when
 *     set, else as many as the most recent plan's estimated work is worth
 *     (plan/plan_stages.h), at most the pool's threads; each stage's nodes
 *     split over threads / stages. A worker carries its request through
 *     every stage. (One worker more than the stages, to overlap a
 *     request's work outside the stages, was tried in stop 29: on a quiet
 *     2-CPU machine three runnable workers on two CPUs cost squeezenet1_1
 *     on onednn,cpu 25% of its throughput, 283 -> 210 runs/s.)
 *  2. under the others, one worker running each request whole, in order,
 *     with the session's scheduler and pool.
 *
 * A request's inputs are copied at submit and it waits in a bounded FIFO
 * queue; a submit into a full queue blocks (back-pressure), a try_submit
 * returns MINFER_ERR_BUSY at once. A worker takes
 * the oldest request, numbers it (the pipe lets requests through each stage
 * in that order) and runs it with minfer_session_run_with_options, in an
 * execution context of its own: each request in flight holds the plan's
 * arenas, so the pipeline costs `stages` times the sequential arenas. The
 * outcome, its message and the outputs stay in the request, which the
 * caller and the worker both hold until each lets go.
 *
 * Micro-batches: with minfer_options_set_micro_batch, a request whose
 * inputs share a first dimension above the rows is split into parts that
 * are queued one after another; the last part to finish concatenates the
 * parts' outputs and finishes the request.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "exec/pipeline.h"
#include "exec/threadpool.h"
#include "plan/plan_stages.h"
#include "session/session.h"

struct minfer_request {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    minfer_session *s;       /* until it has finished */
    int refs;                /* the caller's and the engine's */
    int done;
    minfer_status st;
    char *err;               /* the failure's message, or NULL */
    minfer_tensor **outs;    /* the graph's outputs, in order */
    size_t n_outs;
    int taken;               /* a wait took the outputs */
    minfer_request_fn fn;
    void *user;
    minfer_run_options *ro;  /* cancellation; a part shares its whole's */
    /* the run: owned copies of the inputs */
    char **names;
    minfer_tensor **ins;
    size_t n_in;
    minfer_request *next;    /* the queue */
    /* micro-batches */
    minfer_request *whole;   /* a part: the request it is part of */
    size_t part;             /* a part: its index */
    size_t n_parts, parts_left;
    minfer_tensor ***part_outs; /* the whole: per part, its outputs */
};

struct mf_async {
    minfer_session *s;
    pthread_mutex_t lock;
    pthread_cond_t not_empty, not_full;
    minfer_request *head, *tail;
    size_t queued, depth;
    int stop;
    uint64_t next_seq;
    uint64_t done_turn;         /* the request whose turn it is to finish */
    pthread_cond_t finished;
    mf_pipe *pipe;              /* pipeline scheduler; NULL otherwise */
    pthread_t *workers;
    int n_workers;
    minfer_request **running;   /* per worker */
};

static void release(minfer_request *r);

static minfer_request *request_new(size_t n_outs) {
    minfer_request *r = mf_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->outs = mf_calloc(n_outs + 1, sizeof *r->outs);
    if (!r->outs) {
        free(r);
        return NULL;
    }
    r->n_outs = n_outs;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cv, NULL);
    return r;
}

static void request_destroy(minfer_request *r) {
    for (size_t i = 0; i < r->n_in; i++) {
        free(r->names ? r->names[i] : NULL);
        minfer_tensor_free(r->ins ? r->ins[i] : NULL);
    }
    free(r->names);
    free(r->ins);
    for (size_t o = 0; o < r->n_outs; o++)
        minfer_tensor_free(r->outs[o]);
    free(r->outs);
    for (size_t k = 0; r->part_outs && k < r->n_parts; k++) {
        for (size_t o = 0; r->part_outs[k] && o < r->n_outs; o++)
            minfer_tensor_free(r->part_outs[k][o]);
        free(r->part_outs[k]);
    }
    free(r->part_outs);
    if (!r->whole)
        minfer_run_options_free(r->ro);
    free(r->err);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cv);
    free(r);
}

static void release(minfer_request *r) {
    pthread_mutex_lock(&r->lock);
    int left = --r->refs;
    pthread_mutex_unlock(&r->lock);
    if (left == 0)
        request_destroy(r);
}

static void part_done(minfer_request *r, minfer_status st, const char *err);

/* Request r has finished with st (err: its message when failed): wakes its
 * waiters, calls its callback, tells its whole when a part, and lets go of
 * the engine's reference. The outputs are in r->outs. */
static void finish(minfer_request *r, minfer_status st, const char *err) {
    pthread_mutex_lock(&r->lock);
    r->st = st;
    if (st != MINFER_OK && !r->err)
        r->err = mf_strdup(err && err[0] ? err : minfer_status_str(st));
    r->done = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->lock);
    if (r->whole)
        part_done(r, st, r->err);
    else if (r->fn)
        r->fn(r->user, r, st);
    release(r);
}

/* The parts' outputs, one after another along the first dimension. */
static minfer_status concat_parts(minfer_session *s, minfer_request *w) {
    for (size_t o = 0; o < w->n_outs; o++) {
        const char *name = s->g->values[s->g->outputs[o]].name;
        const minfer_tensor *first = w->part_outs[0][o];
        int64_t rows = 0;
        for (size_t k = 0; k < w->n_parts; k++) {
            const minfer_tensor *t = w->part_outs[k][o];
            int same = t && t->view.kind == MINFER_VALUE_TENSOR && t->view.rank >= 1 &&
                       t->view.rank == first->view.rank && t->view.dtype == first->view.dtype &&
                       t->view.dtype != MINFER_DTYPE_STRING;
            for (int d = 1; same && d < t->view.rank; d++)
                same = t->view.dims[d] == first->view.dims[d];
            if (!same)
                return mf_error(MINFER_ERR_SHAPE,
                                "%s: micro-batches: output '%s' of part %zu cannot be joined to "
                                "part 0's along the first dimension (not a numeric tensor, or "
                                "another type or shape past the first dimension)",
                                s->errctx, name, k);
            rows += t->view.dims[0];
        }
        int64_t dims[MINFER_MAX_RANK];
        memcpy(dims, first->view.dims, sizeof dims);
        dims[0] = rows;
        minfer_tensor *cat = NULL;
        minfer_status st = mf_tensor_new(first->view.dtype, dims, first->view.rank, &cat);
        if (st != MINFER_OK)
            return st;
        char *at = cat->view.data;
        for (size_t k = 0; k < w->n_parts; k++) {
            const minfer_tensor *t = w->part_outs[k][o];
            size_t bytes = mf_view_bytes(&t->view);
            if (bytes)
                memcpy(at, t->view.data, bytes);
            at += bytes;
        }
        w->outs[o] = cat;
    }
    return MINFER_OK;
}

/* Part p of a whole has finished: its outputs move to the whole; the last
 * part finishes the whole (failed with the first failing part's error). */
static void part_done(minfer_request *p, minfer_status st, const char *err) {
    minfer_request *w = p->whole;
    pthread_mutex_lock(&w->lock);
    w->part_outs[p->part] = p->outs;
    p->outs = NULL;
    p->n_outs = 0;
    if (st != MINFER_OK && w->st == MINFER_OK) {
        char msg[1536];
        snprintf(msg, sizeof msg, "micro-batch %zu of %zu: %s", p->part + 1, w->n_parts,
                 err ? err : minfer_status_str(st));
        w->st = st;
        w->err = mf_strdup(msg);
    }
    size_t left = --w->parts_left;
    minfer_status wst = w->st;
    pthread_mutex_unlock(&w->lock);
    if (left > 0)
        return;
    const char *why = NULL;
    if (wst == MINFER_OK && (wst = concat_parts(w->s, w)) != MINFER_OK)
        why = minfer_last_error();
    finish(w, wst, why);
}

/* Runs request r on the calling worker, through the pipe with ticket t
 * (NULL: none); a failure's message goes to r->err. */
static minfer_status run_request(minfer_session *s, minfer_request *r, mf_pipe_ticket *t) {
    minfer_status st;
    if (atomic_load(&r->ro->terminate))
        st = mf_error(MINFER_CANCELLED, "%s: request cancelled before it ran", s->errctx);
    else
        st = mf_session_run_ticket(s, r->ro, t, (const char *const *)r->names,
                                   (const minfer_tensor *const *)r->ins, r->n_in, NULL, r->outs,
                                   r->n_outs);
    /* the inputs are not needed any more: give their memory back now */
    for (size_t i = 0; i < r->n_in; i++) {
        minfer_tensor_free(r->ins[i]);
        r->ins[i] = NULL;
    }
    if (st != MINFER_OK)
        r->err = mf_strdup(minfer_last_error());
    return st;
}

typedef struct worker_arg {
    mf_async *a;
    int index;
} worker_arg;

static void *worker_main(void *arg) {
    mf_async *a = ((worker_arg *)arg)->a;
    int w = ((worker_arg *)arg)->index;
    free(arg);
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->head && !a->stop)
            pthread_cond_wait(&a->not_empty, &a->lock);
        if (!a->head)
            break; /* stopping: mf_async_stop took what was queued */
        minfer_request *r = a->head;
        a->head = r->next;
        if (!a->head)
            a->tail = NULL;
        a->queued--;
        uint64_t seq = a->next_seq++;
        a->running[w] = r;
        pthread_cond_signal(&a->not_full);
        pthread_mutex_unlock(&a->lock);
        mf_pipe_ticket ticket;
        mf_pipe_ticket_init(&ticket, a->pipe, seq);
        minfer_status st = run_request(a->s, r, a->pipe ? &ticket : NULL);
        mf_pipe_ticket_end(&ticket);
        /* requests finish (and call back) one at a time, in submit order */
        pthread_mutex_lock(&a->lock);
        while (a->done_turn != seq)
            pthread_cond_wait(&a->finished, &a->lock);
        a->running[w] = NULL;
        pthread_mutex_unlock(&a->lock);
        finish(r, st, st == MINFER_OK ? NULL : r->err);
        pthread_mutex_lock(&a->lock);
        a->done_turn++;
        pthread_cond_broadcast(&a->finished);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* The pipeline's stage count: the inter-op count when set, else what the
 * most recent plan is worth; without one (symbolic shapes, nothing run
 * yet) the work is unknown, and the pool's threads are taken. Under
 * s->lock. */
static int stage_count(const minfer_session *s) {
    if (!s->stages_auto || !s->cache.last)
        return s->inter_op;
    return mf_plan_stage_count(s, s->cache.last, s->inter_op);
}

static void async_free(mf_async *a) {
    mf_pipe_free(a->pipe);
    free(a->workers);
    free(a->running);
    pthread_mutex_destroy(&a->lock);
    pthread_cond_destroy(&a->not_empty);
    pthread_cond_destroy(&a->not_full);
    pthread_cond_destroy(&a->finished);
    free(a);
}

/* Makes s's workers (under s->lock). */
static minfer_status async_start(minfer_session *s) {
    mf_async *a = mf_calloc(1, sizeof *a);
    if (!a)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    a->s = s;
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->not_empty, NULL);
    pthread_cond_init(&a->not_full, NULL);
    pthread_cond_init(&a->finished, NULL);
    int n = 1;
    if (s->scheduler == MINFER_SCHED_PIPELINE) {
        int stages = stage_count(s);
        int threads = mf_pool_threads(s->pool) / stages;
        if (!(a->pipe = mf_pipe_create(stages, threads < 1 ? 1 : threads))) {
            async_free(a);
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        }
        n = stages; /* the workers: see the top of the file */
    }
    a->depth = s->queue_depth ? s->queue_depth : 2 * (size_t)n;
    a->workers = mf_calloc((size_t)n, sizeof *a->workers);
    a->running = mf_calloc((size_t)n, sizeof *a->running);
    if (!a->workers || !a->running) {
        async_free(a);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    for (; a->n_workers < n; a->n_workers++) {
        worker_arg *wa = mf_malloc(sizeof *wa);
        if (wa) {
            wa->a = a;
            wa->index = a->n_workers;
        }
        if (!wa || pthread_create(&a->workers[a->n_workers], NULL, worker_main, wa) != 0) {
            free(wa);
            break;
        }
    }
    if (a->n_workers < n) {
        pthread_mutex_lock(&a->lock);
        a->stop = 1;
        pthread_cond_broadcast(&a->not_empty);
        pthread_mutex_unlock(&a->lock);
        for (int w = 0; w < a->n_workers; w++)
            pthread_join(a->workers[w], NULL);
        async_free(a);
        return mf_error(MINFER_ERR_NOMEM, "%s: could not start the asynchronous workers",
                        s->errctx);
    }
    s->async = a;
    return MINFER_OK;
}

void mf_async_stop(minfer_session *s) {
    mf_async *a = s ? s->async : NULL;
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = 1;
    minfer_request *q = a->head;
    a->head = a->tail = NULL;
    a->queued = 0;
    for (int w = 0; w < a->n_workers; w++)
        if (a->running[w])
            minfer_run_options_terminate(a->running[w]->ro);
    pthread_cond_broadcast(&a->not_empty);
    pthread_cond_broadcast(&a->not_full);
    pthread_mutex_unlock(&a->lock);
    while (q) {
        minfer_request *next = q->next;
        finish(q, MINFER_CANCELLED, "the session was freed before the request ran");
        q = next;
    }
    for (int w = 0; w < a->n_workers; w++)
        pthread_join(a->workers[w], NULL);
    s->async = NULL;
    async_free(a);
}

/* Queues the n requests rs (the engine's references) one after another.
 * block: waits while the queue is full (back-pressure). Else nothing is
 * queued, MINFER_ERR_BUSY, unless all n fit now or the queue is empty (a
 * request of more parts than the queue's depth could never fit: it is let
 * into an empty queue, which holds it above the depth until it drains). */
static minfer_status enqueue(mf_async *a, minfer_request **rs, size_t n, int block) {
    pthread_mutex_lock(&a->lock);
    if (!block && !a->stop && a->queued > 0 && a->queued + n > a->depth) {
        size_t queued = a->queued;
        pthread_mutex_unlock(&a->lock);
        return mf_error(MINFER_ERR_BUSY, "%s: try_submit: the queue is full (%zu of %zu waiting)",
                        a->s->errctx, queued, a->depth);
    }
    for (size_t k = 0; k < n; k++) {
        while (block && a->queued >= a->depth && !a->stop)
            pthread_cond_wait(&a->not_full, &a->lock);
        if (a->stop) {
            pthread_mutex_unlock(&a->lock);
            if (k == 0)
                return mf_error(MINFER_ERR_INVALID_ARG, "%s: submit: the session is being freed",
                                a->s->errctx);
            /* some parts are queued (mf_async_stop cancels them): the rest
             * are cancelled here, and the whole finishes with the last */
            for (size_t j = k; j < n; j++)
                finish(rs[j], MINFER_CANCELLED, "the session was freed before the request ran");
            return MINFER_OK;
        }
        minfer_request *r = rs[k];
        r->next = NULL;
        if (a->tail)
            a->tail->next = r;
        else
            a->head = r;
        a->tail = r;
        a->queued++;
        pthread_cond_signal(&a->not_empty);
    }
    pthread_mutex_unlock(&a->lock);
    return MINFER_OK;
}

/* Copies of the inputs (rows [r0, r1) of each along the first dimension
 * when r1 > r0) into r. */
static minfer_status copy_inputs(minfer_session *s, minfer_request *r,
                                 const char *const *names, const minfer_tensor *const *inputs,
                                 size_t n, int64_t r0, int64_t r1) {
    r->names = mf_calloc(n + 1, sizeof *r->names);
    r->ins = mf_calloc(n + 1, sizeof *r->ins);
    if (!r->names || !r->ins)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    r->n_in = n;
    for (size_t i = 0; i < n; i++) {
        minfer_status st;
        if (!names[i] || !inputs[i])
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: submit: input %zu is NULL", s->errctx,
                            i);
        if (!(r->names[i] = mf_strdup(names[i])))
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        if (r1 <= r0) {
            if ((st = mf_tensor_clone(inputs[i], &r->ins[i])) != MINFER_OK)
                return st;
            continue;
        }
        const minfer_tensor_view *v = &inputs[i]->view;
        int64_t dims[MINFER_MAX_RANK];
        memcpy(dims, v->dims, sizeof dims);
        dims[0] = r1 - r0;
        if ((st = mf_tensor_new(v->dtype, dims, v->rank, &r->ins[i])) != MINFER_OK)
            return st;
        size_t row = v->dims[0] ? mf_view_bytes(v) / (size_t)v->dims[0] : 0;
        if (row)
            memcpy(r->ins[i]->view.data, (const char *)v->data + row * (size_t)r0,
                   row * (size_t)(r1 - r0));
    }
    return MINFER_OK;
}

/* The rows of a micro-batch split of these inputs, or 0 when they are not
 * split: the option is off, a graph input's first dimension is fixed, an
 * input is not a numeric tensor of rank >= 1, or their first dimensions
 * differ or do not exceed the rows. */
static int64_t split_rows(const minfer_session *s, const minfer_tensor *const *inputs, size_t n) {
    if (s->micro_batch <= 0 || n == 0)
        return 0;
    for (size_t k = 0; k < s->g->n_inputs; k++) {
        const mf_value *vi = &s->g->values[s->g->inputs[k]];
        if (vi->rank < 1 || vi->dims[0] >= 0)
            return 0;
    }
    int64_t batch = -1;
    for (size_t i = 0; i < n; i++) {
        const minfer_tensor_view *v = &inputs[i]->view;
        if (v->kind != MINFER_VALUE_TENSOR || v->dtype == MINFER_DTYPE_STRING || v->rank < 1 ||
            (batch >= 0 && v->dims[0] != batch))
            return 0;
        batch = v->dims[0];
    }
    return batch > s->micro_batch ? s->micro_batch : 0;
}

/* minfer_session_submit (block) and minfer_session_try_submit. */
static minfer_status submit(minfer_session *s, const char *const *input_names,
                            const minfer_tensor *const *inputs, size_t n_inputs,
                            minfer_request_fn done, void *user, minfer_request **out, int block) {
    if (out)
        *out = NULL;
    if (!s || !out || (n_inputs && (!input_names || !inputs)))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_%ssubmit: NULL argument",
                        block ? "" : "try_");
    for (size_t i = 0; i < n_inputs; i++)
        if (!input_names[i] || !inputs[i])
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: submit: input %zu is NULL", s->errctx,
                            i);
    minfer_status st = MINFER_OK;
    pthread_mutex_lock(&s->lock);
    if (!s->async)
        st = async_start(s);
    mf_async *a = s->async;
    pthread_mutex_unlock(&s->lock);
    if (st != MINFER_OK)
        return st;
    size_t n_outs = s->g->n_outputs;
    minfer_request *r = request_new(n_outs);
    if (!r)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    r->s = s;
    r->refs = 2;
    r->fn = done;
    r->user = user;
    if ((st = minfer_run_options_create(&r->ro)) != MINFER_OK) {
        request_destroy(r);
        return st;
    }
    int64_t rows = split_rows(s, inputs, n_inputs);
    if (rows == 0) {
        if ((st = copy_inputs(s, r, input_names, inputs, n_inputs, 0, 0)) != MINFER_OK ||
            (st = enqueue(a, &r, 1, block)) != MINFER_OK) {
            request_destroy(r);
            return st;
        }
        *out = r;
        return MINFER_OK;
    }
    /* micro-batches: every part made before any is queued, so a part that
     * cannot be made fails the submit and nothing runs */
    int64_t batch = inputs[0]->view.dims[0];
    size_t n_parts = (size_t)((batch + rows - 1) / rows);
    minfer_request **parts = mf_calloc(n_parts, sizeof *parts);
    r->part_outs = mf_calloc(n_parts, sizeof *r->part_outs);
    r->n_parts = r->parts_left = n_parts;
    if (!parts || !r->part_outs)
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    for (size_t k = 0; st == MINFER_OK && k < n_parts; k++) {
        int64_t r0 = (int64_t)k * rows, r1 = r0 + rows < batch ? r0 + rows : batch;
        if (!(parts[k] = request_new(n_outs))) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            break;
        }
        parts[k]->s = s;
        parts[k]->refs = 1;
        parts[k]->whole = r;
        parts[k]->part = k;
        parts[k]->ro = r->ro;
        st = copy_inputs(s, parts[k], input_names, inputs, n_inputs, r0, r1);
    }
    /* nothing queued (a failure, a busy queue, a session being freed):
     * nothing ran, and the parts and the whole go */
    if (st != MINFER_OK || (st = enqueue(a, parts, n_parts, block)) != MINFER_OK) {
        for (size_t k = 0; parts && k < n_parts; k++)
            if (parts[k])
                request_destroy(parts[k]);
        free(parts);
        request_destroy(r);
        return st;
    }
    *out = r;
    free(parts);
    return MINFER_OK;
}

minfer_status minfer_session_submit(minfer_session *s, const char *const *input_names,
                                    const minfer_tensor *const *inputs, size_t n_inputs,
                                    minfer_request_fn done, void *user, minfer_request **out) {
    return submit(s, input_names, inputs, n_inputs, done, user, out, 1);
}

minfer_status minfer_session_try_submit(minfer_session *s, const char *const *input_names,
                                        const minfer_tensor *const *inputs, size_t n_inputs,
                                        minfer_request_fn done, void *user,
                                        minfer_request **out) {
    return submit(s, input_names, inputs, n_inputs, done, user, out, 0);
}

minfer_status minfer_request_wait(minfer_request *r, minfer_tensor **outputs, size_t n_outputs) {
    if (!r || (n_outputs && !outputs))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_request_wait: NULL argument");
    pthread_mutex_lock(&r->lock);
    if (n_outputs > r->n_outs) {
        size_t have = r->n_outs;
        pthread_mutex_unlock(&r->lock);
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_request_wait: %zu outputs asked, the model has %zu", n_outputs,
                        have);
    }
    while (!r->done)
        pthread_cond_wait(&r->cv, &r->lock);
    minfer_status st = r->st;
    for (size_t o = 0; o < n_outputs; o++)
        outputs[o] = NULL;
    if (st == MINFER_OK && !r->taken) {
        for (size_t o = 0; o < n_outputs; o++) {
            outputs[o] = r->outs[o];
            r->outs[o] = NULL;
        }
        r->taken = 1;
    }
    if (st != MINFER_OK)
        mf_error(st, "%s", r->err ? r->err : minfer_status_str(st));
    pthread_mutex_unlock(&r->lock);
    return st;
}

int minfer_request_done(const minfer_request *cr) {
    minfer_request *r = (minfer_request *)cr; /* the lock is not part of the value */
    if (!r)
        return 0;
    pthread_mutex_lock(&r->lock);
    int d = r->done;
    pthread_mutex_unlock(&r->lock);
    return d;
}

minfer_status minfer_request_cancel(minfer_request *r) {
    if (!r)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_request_cancel: NULL request");
    pthread_mutex_lock(&r->lock);
    if (!r->done)
        minfer_run_options_terminate(r->ro);
    pthread_mutex_unlock(&r->lock);
    return MINFER_OK;
}

void minfer_request_free(minfer_request *r) {
    if (!r)
        return;
    minfer_request_cancel(r);
    release(r);
}

minfer_status minfer_session_pipeline_stage(const minfer_session *cs, size_t index,
                                            minfer_pipeline_stage *out) {
    if (!cs || !out || out->struct_size < offsetof(minfer_pipeline_stage, arena_bytes_per_slot))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_pipeline_stage: NULL argument or "
                                                "struct_size too small");
    minfer_session *s = (minfer_session *)cs;
    if (s->scheduler != MINFER_SCHED_PIPELINE)
        return mf_error(MINFER_ERR_NOT_FOUND, "%s: the scheduler is not the pipeline", s->errctx);
    minfer_pipeline_stage info;
    memset(&info, 0, sizeof info);
    info.struct_size = out->struct_size < sizeof info ? out->struct_size : sizeof info;
    minfer_status st = MINFER_OK;
    pthread_mutex_lock(&s->lock);
    const mf_plan *p = s->cache.last;
    int stages = s->async && s->async->pipe ? mf_pipe_stages(s->async->pipe) : stage_count(s);
    int *cut = mf_calloc((size_t)stages + 1, sizeof *cut);
    if (!p)
        st = mf_error(MINFER_ERR_NOT_FOUND, "%s: no plan yet (run or prepare first)", s->errctx);
    else if (index >= (size_t)stages)
        st = mf_error(MINFER_ERR_NOT_FOUND, "%s: the pipeline has %d stages, not %zu", s->errctx,
                      stages, index + 1);
    else if (!cut)
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    if (st == MINFER_OK) {
        const mf_graph *g = s->g;
        double *w = mf_malloc((g->n_nodes + 1) * sizeof *w);
        info.measured = w && s->async && s->async->pipe &&
                        mf_pipe_measured(s->async->pipe, p, w, g->n_nodes);
        mf_plan_stages(s, p, stages, info.measured ? w : NULL, cut);
        double total = 0, mine = 0, by_prov[64] = {0};
        for (size_t k = 0; k < g->n_nodes; k++)
            total += info.measured ? w[k] : mf_step_work(s, p, (int)k);
        info.stages = stages;
        info.slots = stages; /* the workers (async_start) */
        int threads = mf_pool_threads(s->pool) / stages;
        info.threads = threads < 1 ? 1 : threads;
        info.first_step = cut[index];
        info.last_step = cut[index + 1] - 1;
        info.first_node = info.last_node = info.provider = "";
        for (int k = cut[index]; k < cut[index + 1]; k++) {
            int i = g->order[k];
            if (p->nodes[i].folded)
                continue;
            double wk = info.measured ? w[k] : mf_step_work(s, p, k);
            mine += wk;
            if (!info.nodes)
                info.first_node = g->nodes[i].name ? g->nodes[i].name : "";
            info.last_node = g->nodes[i].name ? g->nodes[i].name : "";
            info.nodes++;
            int pv = s->assign ? s->assign[i] : 0;
            if (pv >= 0 && pv < 64)
                by_prov[pv] += wk;
        }
        int best = -1;
        for (int pv = 0; pv < 64 && pv < (int)s->pl->n_provs; pv++)
            if (by_prov[pv] > 0 && (best < 0 || by_prov[pv] > by_prov[best]))
                best = pv;
        if (best >= 0)
            info.provider = s->pl->provs[best].name;
        info.cost_share = total > 0 ? mine / total : 0;
        for (size_t d = 0; d < s->n_domains; d++)
            info.arena_bytes_per_slot += p->arena_bytes[d];
        free(w);
    }
    pthread_mutex_unlock(&s->lock);
    free(cut);
    if (st == MINFER_OK)
        memcpy(out, &info, info.struct_size);
    return st;
}
