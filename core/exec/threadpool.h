/* A small fork-join pool behind minfer_host_api.parallel_for. */
#ifndef MINFER_CORE_THREADPOOL_H
#define MINFER_CORE_THREADPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "minfer/provider.h"

typedef struct mf_pool mf_pool;

/* A pool running on `threads` threads in all (the caller counts as one). */
mf_pool *mf_pool_create(int threads);
void mf_pool_free(mf_pool *p);
int mf_pool_threads(const mf_pool *p);
/* The CPUs the process may use, counted at creation (util/cpus.h). */
int mf_pool_cpus(const mf_pool *p);
/* Runs fn over [0, n) in chunks of at least grain; returns when all ran. A
 * call from inside a pool task, or while another call holds the pool, runs
 * serially on the calling thread rather than waiting. */
void mf_pool_parallel_for(mf_pool *p, size_t n, size_t grain, minfer_range_fn fn, void *arg);

/* ---- Work sharing between the threads of one pool job ----------------------
 *
 * The parallel scheduler runs a whole run as one pool job whose chunks loop
 * over ready nodes (exec/sched_parallel.c). A thread that entered a share
 * publishes the chunks of its parallel_for calls there instead of running
 * them serially, runs them itself too, and waits only for chunks another
 * thread started; a thread of the share with nothing else to do runs
 * published chunks (mf_share_help). The chunks are cut exactly as
 * mf_pool_parallel_for cuts them (one per pool thread), so a kernel sees the
 * same ranges under either scheduler. A parallel_for from inside a published
 * chunk runs serially, so a thread waits only for chunks running on threads
 * that do not wait for it: no deadlock.
 *
 * Waiting is an event count: read mf_share_events before looking at the
 * state you wait on, then mf_share_wait(seen) returns once anyone called
 * mf_share_notify (or published chunks) after that read. It spins a short
 * while first (as the pool's workers do, MINFER_SPIN_US; not at all when
 * the pool has more threads than the process has CPUs to run on), then
 * sleeps. */
typedef struct mf_share mf_share;

/* A share for the threads of one job of pool p (index 0 .. threads - 1). */
mf_share *mf_share_create(mf_pool *p);
void mf_share_free(mf_share *sh);
/* The calling thread joins sh as thread `index` (one thread per index),
 * until mf_share_leave. */
void mf_share_enter(mf_share *sh, int index);
void mf_share_leave(void);
/* Runs one published chunk, if there is one; 1 when it ran one. */
int mf_share_help(mf_share *sh);
/* How many parallel_for calls of the calling thread were published to a
 * share so far (a step that split its work published some). */
unsigned mf_share_published(void);
/* The calling thread's totals over its published parallel_for calls: the
 * wall time from publishing to the last chunk done, and the time every
 * thread spent in their chunks (ns). */
void mf_share_account(uint64_t *region_ns, uint64_t *work_ns);
unsigned mf_share_events(mf_share *sh);
void mf_share_notify(mf_share *sh);
void mf_share_wait(mf_share *sh, unsigned seen);
/* While on, waiters sleep at once rather than spin: a node holds the
 * threads of the share with threads of its own (an OpenMP build), and a
 * spinning waiter would take a CPU from them. */
void mf_share_quiet(mf_share *sh, int on);

/* ---- Thread claims (minfer_host_api.claim_threads) -------------------------
 *
 * A node that keeps threads of its own busy (an OpenMP build) claims them
 * first. A scheduler that runs nodes side by side sets a claim function on
 * each of its threads, which decides; without one a claim gets up to the
 * pool's threads, and one from inside a pool chunk gets 1 (the other
 * threads are running chunks). */
typedef int (*mf_claim_fn)(void *ctx, int want);
/* Sets (fn NULL: clears) the calling thread's claim function. */
void mf_claim_set(mf_claim_fn fn, void *ctx);
/* The threads a node on the calling thread may keep busy, 1 .. want. */
int mf_claim_threads(const mf_pool *p, int want);

#endif
