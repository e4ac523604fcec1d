/*
 * Thread pools several sessions share (minfer_thread_pool, minfer.h).
 *
 * A minfer_thread_pool is an exec/threadpool.h pool with a reference
 * count: the caller's reference, one per options object and one per
 * session holding it. A session on it borrows its mf_pool as a subgraph
 * session borrows its parent's (s->pool_shared), so nothing on the run
 * path knows the difference: the pool already lets one job run at a time
 * and runs a second caller's parallel_for on that caller's thread
 * (mf_pool_parallel_for's busy lock), which is what sessions sharing it
 * need when their runs overlap.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "exec/threadpool.h"
#include "session/session.h"
#include "util/cpus.h"
#include "util/options.h"

struct minfer_thread_pool {
    mf_pool *pool;
    atomic_int refs;
};

int mf_default_threads(void) {
    int n = mf_cpus_usable(); /* util/cpus.h: affinity, cgroup quota */
    return n > 64 ? 64 : n;
}

minfer_status minfer_thread_pool_create(int threads, minfer_thread_pool **out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_thread_pool_create: out is NULL");
    *out = NULL;
    if (threads < 0 || threads > MINFER_MAX_THREADS)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_thread_pool_create: thread count %d is not in 0..%d", threads,
                        MINFER_MAX_THREADS);
    minfer_thread_pool *tp = mf_calloc(1, sizeof *tp);
    if (!tp)
        return mf_error(MINFER_ERR_NOMEM, "minfer_thread_pool_create: out of memory");
    tp->pool = mf_pool_create(threads ? threads : mf_default_threads());
    if (!tp->pool) {
        free(tp);
        return mf_error(MINFER_ERR_NOMEM, "minfer_thread_pool_create: out of memory");
    }
    atomic_init(&tp->refs, 1);
    *out = tp;
    return MINFER_OK;
}

minfer_thread_pool *mf_thread_pool_retain(minfer_thread_pool *tp) {
    if (tp)
        atomic_fetch_add_explicit(&tp->refs, 1, memory_order_relaxed);
    return tp;
}

/* The last reference joins the threads: no run is using the pool then, as
 * every session running on it holds a reference until it is freed. */
void minfer_thread_pool_free(minfer_thread_pool *tp) {
    if (!tp || atomic_fetch_sub_explicit(&tp->refs, 1, memory_order_acq_rel) != 1)
        return;
    mf_pool_free(tp->pool);
    free(tp);
}

mf_pool *mf_thread_pool_pool(minfer_thread_pool *tp) { return tp ? tp->pool : NULL; }

int minfer_thread_pool_thread_count(const minfer_thread_pool *tp) {
    return tp ? mf_pool_threads(tp->pool) : 0;
}

minfer_status minfer_options_set_thread_pool(minfer_options *opt, minfer_thread_pool *tp) {
    if (!opt)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_thread_pool: opt is NULL");
    minfer_thread_pool *old = opt->thread_pool;
    opt->thread_pool = mf_thread_pool_retain(tp);
    minfer_thread_pool_free(old);
    return MINFER_OK;
}
