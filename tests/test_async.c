/*
 * The asynchronous API and the pipeline scheduler (docs/scheduling.md):
 * results identical to the sequential scheduler's with many requests in
 * flight under every scheduler, callbacks and waits, back-pressure and
 * try_submit's busy queue, a failing request among good ones,
 * cancellation, freeing a session with requests in flight, micro-batches
 * and the stages `minfer info` shows.
 * In CI it also runs under ThreadSanitizer (.ci/run).
 *
 * With arguments (directories of model.onnx and test_data_set_0/), each
 * model's outputs through a two-stage pipeline, four requests in flight,
 * must equal the sequential scheduler's byte for byte.
 *
 * The graph: x [batch, W] -> MatMul w0 -> Relu -> MatMul w1 -> Relu ->
 * MatMul w2 -> Add x -> y: every row is computed alone (batch items do not
 * mix), so micro-batches give the unsplit run's bytes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "minfer/builder.h"
#include "test_util.h"

#define W 64
#define LAYERS 3

static minfer_session *session(minfer_scheduler sched, int inter_op, size_t depth,
                               int64_t micro, uint64_t max_elements) {
    minfer_graph_builder *b = NULL;
    assert_ok(minfer_builder_create(13, &b));
    int64_t dims[2] = {-1, W}, wd[2] = {W, W};
    const char *dim_names[2] = {"batch", NULL};
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, dim_names));
    const char *prev = "x";
    char names[LAYERS][3][16];
    for (int k = 0; k < LAYERS; k++) {
        minfer_tensor *w = NULL;
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, wd, 2, &w));
        float *d = minfer_tensor_data(w);
        for (int i = 0; i < W * W; i++)
            d[i] = (float)((i * 7 + k * 13) % 17 - 8) / 32.0f;
        snprintf(names[k][0], 16, "w%d", k);
        snprintf(names[k][1], 16, "m%d", k);
        snprintf(names[k][2], 16, "r%d", k);
        assert_ok(minfer_builder_add_initializer(b, names[k][0], w));
        minfer_tensor_free(w);
        const char *mm_in[2] = {prev, names[k][0]}, *m = names[k][1], *r = names[k][2];
        assert_ok(minfer_builder_add_node(b, "MatMul", NULL, m, mm_in, 2, &m, 1, NULL));
        assert_ok(minfer_builder_add_node(b, "Relu", NULL, r, &m, 1, &r, 1, NULL));
        prev = r;
    }
    const char *add_in[2] = {prev, "x"}, *y = "y";
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "skip", add_in, 2, &y, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_threads(opt, 2));
    assert_ok(minfer_options_set_optimization_level(opt, 0)); /* keep the nodes apart */
    assert_ok(minfer_options_set_scheduler(opt, sched));
    assert_ok(minfer_options_set_inter_op_threads(opt, inter_op));
    assert_ok(minfer_options_set_queue_depth(opt, depth));
    assert_ok(minfer_options_set_micro_batch(opt, micro));
    if (max_elements) {
        minfer_run_limits rl;
        memset(&rl, 0, sizeof rl);
        rl.struct_size = sizeof rl;
        rl.max_run_elements = max_elements;
        assert_ok(minfer_options_set_run_limits(opt, &rl));
    }
    minfer_session *s = NULL;
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_builder_free(b);
    minfer_options_free(opt);
    return s;
}

/* Input `seed`: batch rows of W floats. */
static minfer_tensor *input(int seed, int64_t batch) {
    int64_t dims[2] = {batch, W};
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &t));
    float *d = minfer_tensor_data(t);
    for (int64_t i = 0; i < batch * W; i++)
        d[i] = (float)((i * 31 + seed * 17) % 23 - 11) / 16.0f;
    return t;
}

static const char *const in_names[1] = {"x"};

/* The sequential scheduler's output for input seed (a plain run). */
static minfer_tensor *reference(int seed, int64_t batch) {
    minfer_session *s = session(MINFER_SCHED_SEQUENTIAL, 0, 0, 0, 0);
    minfer_tensor *in = input(seed, batch), *out = NULL;
    assert_ok(minfer_session_run(s, in_names, (const minfer_tensor *const *)&in, 1, NULL, &out, 1));
    minfer_tensor_free(in);
    minfer_session_free(s);
    return out;
}

static void assert_same(const minfer_tensor *a, const minfer_tensor *b) {
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(minfer_tensor_rank(a), minfer_tensor_rank(b));
    assert_memory_equal(minfer_tensor_dims(a), minfer_tensor_dims(b),
                        minfer_tensor_rank(a) * sizeof(int64_t));
    assert_int_equal(minfer_tensor_nbytes(a), minfer_tensor_nbytes(b));
    assert_memory_equal(minfer_tensor_data(a), minfer_tensor_data(b), minfer_tensor_nbytes(a));
}

#define MANY 24

/* Many requests in flight (more than the queue holds: submits block and
 * go on), under each scheduler: each output equals the sequential run's. */
static void many_in_flight(minfer_scheduler sched) {
    minfer_tensor *ref[MANY];
    for (int k = 0; k < MANY; k++)
        ref[k] = reference(k, 1 + k % 3);
    minfer_session *s = session(sched, 2, 4, 0, 0);
    minfer_request *req[MANY];
    for (int k = 0; k < MANY; k++) {
        minfer_tensor *in = input(k, 1 + k % 3);
        assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1, NULL,
                                        NULL, &req[k]));
        minfer_tensor_free(in); /* the request has its own copy */
    }
    for (int k = 0; k < MANY; k++) {
        minfer_tensor *out = NULL;
        assert_ok(minfer_request_wait(req[k], &out, 1));
        assert_same(out, ref[k]);
        assert_int_equal(minfer_request_done(req[k]), 1);
        minfer_tensor *again = NULL;
        assert_ok(minfer_request_wait(req[k], &again, 1)); /* the outputs were taken */
        assert_null(again);
        minfer_tensor_free(out);
        minfer_request_free(req[k]);
        minfer_tensor_free(ref[k]);
    }
    minfer_session_free(s);
}

static void test_pipeline_many(void **state) {
    (void)state;
    many_in_flight(MINFER_SCHED_PIPELINE);
}

static void test_sequential_many(void **state) {
    (void)state;
    many_in_flight(MINFER_SCHED_SEQUENTIAL);
}

static void test_parallel_many(void **state) {
    (void)state;
    many_in_flight(MINFER_SCHED_PARALLEL);
}

/* Callbacks: one per request, on a worker, with the outputs ready (a wait
 * inside returns them at once); the pipeline keeps the submit order. */
typedef struct cb_log {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int order[MANY];
    int n;
    minfer_status st[MANY];
    minfer_tensor *out[MANY];
    int gate_closed; /* the first callback waits while set */
    int in_first;    /* the first callback is waiting */
} cb_log;

typedef struct cb_arg {
    cb_log *log;
    int k;
    int free_it; /* the callback frees the request */
} cb_arg;

static void on_done(void *user, minfer_request *req, minfer_status st) {
    cb_arg *a = user;
    cb_log *l = a->log;
    minfer_tensor *out = NULL;
    minfer_status w = minfer_request_wait(req, &out, 1);
    assert_int_equal(w, st);
    pthread_mutex_lock(&l->lock);
    if (l->n == 0) {
        l->in_first = 1;
        pthread_cond_broadcast(&l->cv);
        while (l->gate_closed)
            pthread_cond_wait(&l->cv, &l->lock);
    }
    l->order[l->n++] = a->k;
    l->st[a->k] = st;
    l->out[a->k] = out;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->lock);
    if (a->free_it)
        minfer_request_free(req);
}

static void log_init(cb_log *l) {
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->cv, NULL);
}

static void log_wait(cb_log *l, int n) {
    pthread_mutex_lock(&l->lock);
    while (l->n < n)
        pthread_cond_wait(&l->cv, &l->lock);
    pthread_mutex_unlock(&l->lock);
}

static void log_done(cb_log *l) {
    for (int k = 0; k < MANY; k++)
        minfer_tensor_free(l->out[k]);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->cv);
}

static void test_callbacks(void **state) {
    (void)state;
    cb_log l;
    log_init(&l);
    cb_arg args[MANY];
    minfer_session *s = session(MINFER_SCHED_PIPELINE, 2, 2, 0, 0);
    for (int k = 0; k < MANY; k++) {
        minfer_tensor *in = input(k, 1);
        minfer_request *r = NULL;
        args[k] = (cb_arg){&l, k, 1};
        assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1,
                                        on_done, &args[k], &r));
        minfer_tensor_free(in);
    }
    log_wait(&l, MANY);
    for (int k = 0; k < MANY; k++) {
        assert_int_equal(l.order[k], k); /* the pipeline overtakes nobody */
        assert_int_equal(l.st[k], MINFER_OK);
        minfer_tensor *ref = reference(k, 1);
        assert_same(l.out[k], ref);
        minfer_tensor_free(ref);
    }
    minfer_session_free(s);
    log_done(&l);
}

/* A bad input (wrong type, wrong fixed dimension) and a node over the
 * run's element budget each fail their request only, with its message;
 * the requests around them succeed. */
static void test_error_alone(void **state) {
    (void)state;
    /* budget: a batch-1 run produces 7 * W elements; batch 64 goes over it
     * at the second MatMul, inside the pipeline's stages */
    minfer_session *s = session(MINFER_SCHED_PIPELINE, 2, 2, 0, 2000);
    minfer_request *req[6];
    for (int k = 0; k < 6; k++) {
        minfer_tensor *in = NULL;
        if (k == 1) {
            int64_t dims[2] = {1, W};
            assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, dims, 2, &in));
        } else if (k == 3) {
            int64_t dims[2] = {1, W + 1};
            assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &in));
        } else
            in = input(k, k == 4 ? 64 : 1);
        assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1, NULL,
                                        NULL, &req[k]));
        minfer_tensor_free(in);
    }
    for (int k = 0; k < 6; k++) {
        minfer_tensor *out = NULL;
        minfer_status st = minfer_request_wait(req[k], &out, 1);
        if (k == 1) {
            assert_int_equal(st, MINFER_ERR_TYPE);
            assert_error_mentions("'x'");
        } else if (k == 3) {
            assert_int_equal(st, MINFER_ERR_SHAPE);
            assert_error_mentions("'x'");
        } else if (k == 4) {
            assert_int_equal(st, MINFER_ERR_LIMIT);
            assert_error_mentions("max_run_elements");
        } else {
            assert_ok(st);
            minfer_tensor *ref = reference(k, 1);
            assert_same(out, ref);
            minfer_tensor_free(ref);
        }
        if (st != MINFER_OK)
            assert_null(out);
        minfer_tensor_free(out);
        minfer_request_free(req[k]);
    }
    minfer_session_free(s);
}

/* A thread submitting one request (to see whether its submit blocks). */
typedef struct submitter {
    minfer_session *s;
    cb_arg *arg;
    minfer_request *req;
    pthread_mutex_t lock;
    int returned;
} submitter;

static void *submit_main(void *p) {
    submitter *t = p;
    minfer_tensor *in = input(t->arg->k, 1);
    minfer_status st = minfer_session_submit(t->s, in_names, (const minfer_tensor *const *)&in,
                                             1, on_done, t->arg, &t->req);
    minfer_tensor_free(in);
    pthread_mutex_lock(&t->lock);
    t->returned = st == MINFER_OK ? 1 : -1;
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

/* Back-pressure and cancellation, with one worker (sequential) held in
 * request 0's callback: request 1 fills the queue (depth 1), so request
 * 2's submit blocks until the worker goes on; request 1, cancelled while
 * queued, ends MINFER_CANCELLED without running. */
static void test_back_pressure_and_cancel(void **state) {
    (void)state;
    cb_log l;
    log_init(&l);
    l.gate_closed = 1;
    cb_arg args[3] = {{&l, 0, 0}, {&l, 1, 0}, {&l, 2, 0}};
    minfer_session *s = session(MINFER_SCHED_SEQUENTIAL, 0, 1, 0, 0);
    minfer_request *r0 = NULL, *r1 = NULL;
    minfer_tensor *in = input(0, 1);
    assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1, on_done,
                                    &args[0], &r0));
    pthread_mutex_lock(&l.lock);
    while (!l.in_first) /* the worker holds request 0: the queue is empty */
        pthread_cond_wait(&l.cv, &l.lock);
    pthread_mutex_unlock(&l.lock);
    assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1, on_done,
                                    &args[1], &r1));
    minfer_tensor_free(in);
    assert_ok(minfer_request_cancel(r1));
    submitter t = {s, &args[2], NULL, PTHREAD_MUTEX_INITIALIZER, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, submit_main, &t), 0);
    /* The submit must still block after a while: the queue is full. (A
     * slow machine can only make this pass without testing, never fail.) */
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&t.lock);
    assert_int_equal(t.returned, 0);
    pthread_mutex_unlock(&t.lock);
    assert_int_equal(minfer_request_done(r1), 0);
    pthread_mutex_lock(&l.lock);
    l.gate_closed = 0;
    pthread_cond_broadcast(&l.cv);
    pthread_mutex_unlock(&l.lock);
    assert_int_equal(pthread_join(th, NULL), 0);
    assert_int_equal(t.returned, 1);
    log_wait(&l, 3);
    assert_int_equal(l.order[0], 0);
    assert_int_equal(l.order[1], 1);
    assert_int_equal(l.order[2], 2);
    assert_int_equal(l.st[0], MINFER_OK);
    assert_int_equal(l.st[1], MINFER_CANCELLED);
    assert_int_equal(l.st[2], MINFER_OK);
    minfer_tensor *out = NULL;
    assert_int_equal(minfer_request_wait(r1, &out, 1), MINFER_CANCELLED);
    assert_error_mentions("cancelled");
    assert_null(out);
    minfer_request_free(r0);
    minfer_request_free(r1);
    minfer_request_free(t.req);
    minfer_session_free(s);
    log_done(&l);
}

/* The worker held in request 0's callback (the gate of l closed). */
static void hold_worker(minfer_session *s, cb_log *l, cb_arg *arg, minfer_request **r0) {
    minfer_tensor *in = input(0, 1);
    assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1, on_done, arg,
                                    r0));
    minfer_tensor_free(in);
    pthread_mutex_lock(&l->lock);
    while (!l->in_first) /* the worker holds request 0: the queue is empty */
        pthread_cond_wait(&l->cv, &l->lock);
    pthread_mutex_unlock(&l->lock);
}

static void open_gate(cb_log *l) {
    pthread_mutex_lock(&l->lock);
    l->gate_closed = 0;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->lock);
}

/* minfer_session_try_submit, with one worker held in request 0's callback
 * and a queue of depth 1: request 1 goes into the empty queue; request 2
 * finds it full and gets MINFER_ERR_BUSY at once, nothing queued; once
 * request 1 has finished, a try_submit succeeds again. Micro-batches: a
 * request of 4 parts goes into an empty queue of depth 2 whole, and
 * another then finds it busy. */
static void test_try_submit(void **state) {
    (void)state;
    cb_log l;
    log_init(&l);
    l.gate_closed = 1;
    cb_arg args[3] = {{&l, 0, 0}, {&l, 1, 0}, {&l, 2, 0}};
    minfer_session *s = session(MINFER_SCHED_SEQUENTIAL, 0, 1, 0, 0);
    minfer_request *r0 = NULL, *r1 = NULL, *r2 = NULL;
    hold_worker(s, &l, &args[0], &r0);
    minfer_tensor *in = input(1, 1);
    const minfer_tensor *const *ins = (const minfer_tensor *const *)&in;
    assert_ok(minfer_session_try_submit(s, in_names, ins, 1, on_done, &args[1], &r1));
    r2 = (minfer_request *)&l; /* must be reset */
    assert_int_equal(minfer_session_try_submit(s, in_names, ins, 1, on_done, &args[2], &r2),
                     MINFER_ERR_BUSY);
    assert_null(r2);
    assert_error_mentions("queue is full");
    assert_string_equal(minfer_status_str(MINFER_ERR_BUSY), "busy");
    open_gate(&l);
    log_wait(&l, 2); /* requests 0 and 1 finished: the queue is empty */
    assert_int_equal(l.st[1], MINFER_OK);
    assert_ok(minfer_session_try_submit(s, in_names, ins, 1, on_done, &args[2], &r2));
    log_wait(&l, 3);
    assert_int_equal(l.st[2], MINFER_OK);
    minfer_tensor *ref = reference(1, 1);
    assert_same(l.out[1], ref);
    assert_same(l.out[2], ref);
    minfer_tensor_free(ref);
    minfer_tensor_free(in);
    minfer_request_free(r0);
    minfer_request_free(r1);
    minfer_request_free(r2);
    minfer_session_free(s);
    log_done(&l);

    /* micro-batches of 3 rows, queue depth 2 */
    log_init(&l);
    l.gate_closed = 1;
    s = session(MINFER_SCHED_SEQUENTIAL, 0, 2, 3, 0);
    r0 = r1 = r2 = NULL;
    hold_worker(s, &l, &args[0], &r0);
    in = input(4, 10);
    ins = (const minfer_tensor *const *)&in;
    assert_ok(minfer_session_try_submit(s, in_names, ins, 1, on_done, &args[1], &r1));
    assert_int_equal(minfer_session_try_submit(s, in_names, ins, 1, on_done, &args[2], &r2),
                     MINFER_ERR_BUSY);
    assert_null(r2);
    open_gate(&l);
    log_wait(&l, 2);
    assert_int_equal(l.st[1], MINFER_OK);
    ref = reference(4, 10);
    assert_same(l.out[1], ref);
    minfer_tensor_free(ref);
    minfer_tensor_free(in);
    minfer_request_free(r0);
    minfer_request_free(r1);
    minfer_session_free(s);
    log_done(&l);
}

/* Freeing the session with requests queued and running: it returns, every
 * request has finished (done, or MINFER_CANCELLED), each callback ran once,
 * and the requests stay usable until freed (no leak under ASan). */
static void test_free_in_flight(void **state) {
    (void)state;
    cb_log l;
    log_init(&l);
    cb_arg args[MANY];
    minfer_request *req[MANY];
    minfer_session *s = session(MINFER_SCHED_PIPELINE, 2, MANY, 0, 0);
    for (int k = 0; k < MANY; k++) {
        minfer_tensor *in = input(k, 8);
        args[k] = (cb_arg){&l, k, 0};
        assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1,
                                        on_done, &args[k], &req[k]));
        minfer_tensor_free(in);
    }
    minfer_request_free(req[MANY - 1]); /* freed by the caller before it ran */
    minfer_session_free(s);
    assert_int_equal(l.n, MANY);
    int cancelled = 0;
    for (int k = 0; k < MANY - 1; k++) {
        assert_int_equal(minfer_request_done(req[k]), 1);
        minfer_tensor *out = NULL;
        minfer_status st = minfer_request_wait(req[k], &out, 1);
        assert_true(st == MINFER_OK || st == MINFER_CANCELLED);
        cancelled += st == MINFER_CANCELLED;
        minfer_request_free(req[k]);
    }
    assert_int_equal(l.st[MANY - 1], MINFER_CANCELLED);
    log_done(&l);
    (void)cancelled; /* how many depends on timing; each one ended */
}

/* Micro-batches: a batch of 10 in parts of 3 gives the unsplit run's bytes;
 * a batch the option does not split (not above the rows) too. */
static void test_micro_batch(void **state) {
    (void)state;
    minfer_session *s = session(MINFER_SCHED_PIPELINE, 2, 2, 3, 0);
    int64_t batches[3] = {10, 3, 1};
    for (int k = 0; k < 3; k++) {
        minfer_tensor *in = input(k, batches[k]), *out = NULL, *ref = reference(k, batches[k]);
        minfer_request *r = NULL;
        assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1, NULL,
                                        NULL, &r));
        minfer_tensor_free(in);
        assert_ok(minfer_request_wait(r, &out, 1));
        assert_same(out, ref);
        minfer_tensor_free(out);
        minfer_tensor_free(ref);
        minfer_request_free(r);
    }
    /* a part that fails fails the whole, naming the part */
    minfer_session_free(s);
    s = session(MINFER_SCHED_PIPELINE, 2, 2, 5, 2000); /* 5 rows: 2240 elements */
    minfer_tensor *in = input(0, 40), *out = NULL;
    minfer_request *r = NULL;
    assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1, NULL, NULL,
                                    &r));
    minfer_tensor_free(in);
    assert_int_equal(minfer_request_wait(r, &out, 1), MINFER_ERR_LIMIT);
    assert_error_mentions("micro-batch 1 of 8");
    assert_null(out);
    minfer_request_free(r);
    minfer_session_free(s);
}

/* The stages of `minfer info`: contiguous, covering every step, shares
 * adding up to 1; none past the last, none for another scheduler. */
static void test_stage_info(void **state) {
    (void)state;
    minfer_session *s = session(MINFER_SCHED_PIPELINE, 2, 0, 0, 0);
    minfer_tensor *in = input(0, 1), *out = NULL;
    assert_ok(minfer_session_run(s, in_names, (const minfer_tensor *const *)&in, 1, NULL, &out, 1));
    minfer_pipeline_stage ps = {.struct_size = sizeof ps};
    /* before any request: the estimates; after some: the measured times */
    for (int measured = 0; measured < 2; measured++) {
        if (measured) {
            minfer_request *r = NULL;
            assert_ok(minfer_session_submit(s, in_names, (const minfer_tensor *const *)&in, 1,
                                            NULL, NULL, &r));
            assert_ok(minfer_request_wait(r, NULL, 0));
            minfer_request_free(r);
        }
        assert_ok(minfer_session_pipeline_stage(s, 0, &ps));
        assert_int_equal(ps.stages, 2);
        assert_int_equal(ps.threads, 1);
        assert_int_equal(ps.slots, 2); /* a worker per stage */
        assert_int_equal(ps.measured, measured);
        int next = 0, nodes = 0;
        double share = 0;
        for (size_t j = 0; j < (size_t)ps.stages; j++) {
            assert_ok(minfer_session_pipeline_stage(s, j, &ps));
            assert_int_equal(ps.first_step, next);
            next = ps.last_step + 1;
            nodes += ps.nodes;
            share += ps.cost_share;
            assert_true(ps.nodes > 0);
            assert_string_equal(ps.provider, "cpu");
            assert_true(ps.arena_bytes_per_slot > 0);
        }
        assert_int_equal(nodes, 2 * LAYERS + 1);
        assert_int_equal(next, 2 * LAYERS + 1);
        assert_true(share > 0.999 && share < 1.001);
    }
    assert_int_equal(minfer_session_pipeline_stage(s, 2, &ps), MINFER_ERR_NOT_FOUND);
    minfer_session_free(s);
    s = session(MINFER_SCHED_SEQUENTIAL, 0, 0, 0, 0);
    assert_int_equal(minfer_session_pipeline_stage(s, 0, &ps), MINFER_ERR_NOT_FOUND);
    minfer_session_free(s);
    minfer_tensor_free(in);
    minfer_tensor_free(out);
    /* bad arguments */
    assert_int_equal(minfer_session_submit(NULL, in_names, NULL, 0, NULL, NULL, NULL),
                     MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_request_wait(NULL, NULL, 0), MINFER_ERR_INVALID_ARG);
    minfer_request_free(NULL);
}

/* ---- models: argv directories ------------------------------------------- */

static char **model_dirs;
static int n_model_dirs;

#define MAX_IO 16
#define IN_FLIGHT 4

static minfer_session *model_session(const char *path, minfer_scheduler sched) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_threads(opt, 2));
    assert_ok(minfer_options_set_scheduler(opt, sched));
    assert_ok(minfer_options_set_inter_op_threads(opt, 2));
    assert_ok(minfer_session_create(path, opt, &s));
    minfer_options_free(opt);
    return s;
}

static void test_models(void **state) {
    (void)state;
    for (int m = 0; m < n_model_dirs; m++) {
        char path[2048];
        snprintf(path, sizeof path, "%s/model.onnx", model_dirs[m]);
        minfer_session *seq = model_session(path, MINFER_SCHED_SEQUENTIAL);
        minfer_session *pipe = model_session(path, MINFER_SCHED_PIPELINE);
        size_t n_in = minfer_session_input_count(seq), n_out = minfer_session_output_count(seq);
        assert_true(n_in <= MAX_IO && n_out <= MAX_IO);
        const char *names[MAX_IO];
        minfer_tensor *ins[MAX_IO] = {0}, *ref[MAX_IO] = {0};
        for (size_t i = 0; i < n_in; i++) {
            minfer_value_info info;
            assert_ok(minfer_session_input_info(seq, i, &info));
            names[i] = info.name;
            snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb", model_dirs[m], i);
            assert_ok(minfer_value_load_pb(path, (minfer_value_kind)info.kind, &ins[i], NULL));
        }
        assert_ok(minfer_session_run(seq, names, (const minfer_tensor *const *)ins, n_in, NULL,
                                     ref, n_out));
        minfer_request *req[IN_FLIGHT];
        for (int k = 0; k < IN_FLIGHT; k++)
            assert_ok(minfer_session_submit(pipe, names, (const minfer_tensor *const *)ins, n_in,
                                            NULL, NULL, &req[k]));
        size_t compared = 0;
        for (int k = 0; k < IN_FLIGHT; k++) {
            minfer_tensor *out[MAX_IO] = {0};
            assert_ok(minfer_request_wait(req[k], out, n_out));
            for (size_t o = 0; o < n_out; o++) {
                if (minfer_value_kind_of(ref[o]) == MINFER_VALUE_TENSOR &&
                    minfer_tensor_dtype(ref[o]) != MINFER_DTYPE_STRING) {
                    assert_same(out[o], ref[o]);
                    compared++;
                }
                minfer_tensor_free(out[o]);
            }
            minfer_request_free(req[k]);
        }
        printf("  %s: %zu outputs identical through the pipeline\n", model_dirs[m], compared);
        for (size_t i = 0; i < n_in; i++)
            minfer_tensor_free(ins[i]);
        for (size_t o = 0; o < n_out; o++)
            minfer_tensor_free(ref[o]);
        minfer_session_free(pipe);
        minfer_session_free(seq);
    }
}

int main(int argc, char **argv) {
    setenv("MINFER_SCHEDULER", "", 1);
    setenv("MINFER_INTER_OP_THREADS", "", 1);
    if (argc > 1) {
        model_dirs = argv + 1;
        n_model_dirs = argc - 1;
        const struct CMUnitTest models[] = {cmocka_unit_test(test_models)};
        return cmocka_run_group_tests_name("pipeline_models", models, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_many),
        cmocka_unit_test(test_sequential_many),
        cmocka_unit_test(test_parallel_many),
        cmocka_unit_test(test_callbacks),
        cmocka_unit_test(test_error_alone),
        cmocka_unit_test(test_back_pressure_and_cancel),
        cmocka_unit_test(test_try_submit),
        cmocka_unit_test(test_free_in_flight),
        cmocka_unit_test(test_micro_batch),
        cmocka_unit_test(test_stage_info),
    };
    return cmocka_run_group_tests_name("async", tests, NULL, NULL);
}
