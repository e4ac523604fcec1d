/*
 * Fork-join thread pool.
 *
 * Workers sleep on a condition variable until a job is posted. A job is a
 * range [0, n) cut into at most `threads` contiguous chunks; workers and the
 * caller claim chunks through an atomic counter, and the caller waits until
 * every chunk has finished. One job runs at a time per pool: a second caller
 * (another run on the same session) or a nested call from inside a chunk
 * runs its range serially instead of blocking, so the pool can never
 * deadlock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"
#include "threadpool.h"

struct mf_pool {
    int threads;
    pthread_t *workers;
    int n_workers;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    pthread_mutex_t busy; /* held by the caller owning the current job */
    /* current job, guarded by lock */
    unsigned long generation;
    int stop;
    minfer_range_fn fn;
    void *arg;
    size_t n, chunk, n_chunks;
    atomic_size_t next;
    size_t finished;
};

static _Thread_local int in_pool_task;

static void run_chunks(mf_pool *p) {
    size_t c;
    size_t ran = 0;
    in_pool_task = 1;
    while ((c = atomic_fetch_add(&p->next, 1)) < p->n_chunks) {
        size_t b = c * p->chunk;
        size_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->arg, b, e);
        ran++;
    }
    in_pool_task = 0;
    if (ran) {
        pthread_mutex_lock(&p->lock);
        p->finished += ran;
        if (p->finished == p->n_chunks)
            pthread_cond_broadcast(&p->done);
        pthread_mutex_unlock(&p->lock);
    }
}

static void *worker_main(void *arg) {
    mf_pool *p = arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);
        run_chunks(p);
        pthread_mutex_lock(&p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

mf_pool *mf_pool_create(int threads) {
    mf_pool *p = mf_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->threads = threads < 1 ? 1 : threads;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->busy, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);
    if (p->threads > 1) {
        p->workers = mf_calloc((size_t)p->threads - 1, sizeof *p->workers);
        if (!p->workers) {
            mf_pool_free(p);
            return NULL;
        }
        for (int i = 0; i < p->threads - 1; i++) {
            if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0)
                break; /* fewer workers: still correct, the caller runs chunks */
            p->n_workers++;
        }
    }
    return p;
}

void mf_pool_free(mf_pool *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->workers[i], NULL);
    free(p->workers);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->busy);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

int mf_pool_threads(const mf_pool *p) { return p ? p->n_workers + 1 : 1; }

void mf_pool_parallel_for(mf_pool *p, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    if (n == 0)
        return;
    if (grain == 0)
        grain = 1;
    size_t max_chunks = (n + grain - 1) / grain;
    if (!p || p->n_workers == 0 || max_chunks < 2 || in_pool_task ||
        pthread_mutex_trylock(&p->busy) != 0) {
        fn(arg, 0, n);
        return;
    }
    size_t chunks = (size_t)p->n_workers + 1;
    if (chunks > max_chunks)
        chunks = max_chunks;
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = (n + chunks - 1) / chunks;
    p->n_chunks = (n + p->chunk - 1) / p->chunk;
    p->finished = 0;
    atomic_store(&p->next, 0);
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_chunks(p);

    pthread_mutex_lock(&p->lock);
    while (p->finished < p->n_chunks)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->busy);
}
