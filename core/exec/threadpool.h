/* A small fork-join pool behind minfer_host_api.parallel_for. */
#ifndef MINFER_CORE_THREADPOOL_H
#define MINFER_CORE_THREADPOOL_H

#include <stddef.h>

#include "minfer/provider.h"

typedef struct mf_pool mf_pool;

/* A pool running on `threads` threads in all (the caller counts as one). */
mf_pool *mf_pool_create(int threads);
void mf_pool_free(mf_pool *p);
int mf_pool_threads(const mf_pool *p);
/* Runs fn over [0, n) in chunks of at least grain; returns when all ran. A
 * call from inside a pool task, or while another call holds the pool, runs
 * serially on the calling thread rather than waiting. */
void mf_pool_parallel_for(mf_pool *p, size_t n, size_t grain, minfer_range_fn fn, void *arg);

#endif
