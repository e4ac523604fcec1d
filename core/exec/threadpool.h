/* A small fork-join pool behind minfer_host_api.parallel_for. */
#ifndef MINFER_CORE_THREADPOOL_H
#define MINFER_CORE_THREADPOOL_H

#include <stdatomic.h>
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
/* Runs fn over [0, n) in chunks of about grain or more (a few per thread,
 * claimed as threads come free; the same ranges for the same n, grain and
 * pool, whichever thread runs them); returns when all ran. A call from
 * inside a pool task, or while another call holds the pool, runs serially
 * on the calling thread rather than waiting. */
void mf_pool_parallel_for(mf_pool *p, size_t n, size_t grain, minfer_range_fn fn, void *arg);
/* How many chunks mf_pool_parallel_for(p, n, grain, ...) cuts [0, n) into
 * when the pool is free (0 for n = 0; 1: it runs serially). */
size_t mf_pool_chunks(const mf_pool *p, size_t n, size_t grain);

/* ---- Work sharing between the threads of one pool job ----------------------
 *
 * The parallel scheduler runs a whole run as one pool job whose chunks loop
 * over ready nodes (exec/sched_parallel.c). A thread of that job has a lane
 * (below) in the job's share: its kernels' parallel_for calls publish their
 * chunks there instead of running them serially, run them too, and wait
 * only for chunks another thread started; a thread of the share with
 * nothing else to do runs published chunks (mf_share_help). The chunks are
 * cut exactly as mf_pool_parallel_for cuts them (a few per pool thread,
 * threadpool.c), so a kernel sees the same ranges under either scheduler. A parallel_for from
 * inside a published chunk runs serially, so a thread waits only for chunks
 * running on threads that do not wait for it: no deadlock.
 *
 * Waiting is an event count: read mf_share_events before looking at the
 * state you wait on, then mf_share_wait(seen) returns once anyone called
 * mf_share_notify (or published chunks) after that read. It spins a short
 * while first (as the pool's workers do, MINFER_SPIN_US; not at all when
 * the pool has more threads than the process has CPUs to run on), then
 * sleeps. Whether a thread spins is decided by its pace, kept per index in
 * the pool, so the verdict carries over from run to run. */
typedef struct mf_share mf_share;

/* A share for the threads of one job of pool p (index 0 .. threads - 1). */
mf_share *mf_share_create(mf_pool *p);
void mf_share_free(mf_share *sh);
/* Thread `index` (one thread per index) starts working in sh: what it did
 * before is not this run's pace. */
void mf_share_begin(mf_share *sh, int index);
/* Runs one published chunk, if there is one, as thread index; 1 when it
 * ran one. */
int mf_share_help(mf_share *sh, int index);
unsigned mf_share_events(mf_share *sh);
void mf_share_notify(mf_share *sh);
void mf_share_wait(mf_share *sh, int index, unsigned seen);
/* While on, waiters sleep at once rather than spin: a node holds the
 * threads of the share with threads of its own (an OpenMP build), and a
 * spinning waiter would take a CPU from them. */
void mf_share_quiet(mf_share *sh, int on);

/* ---- Lanes: one thread's place in a run -------------------------------------
 *
 * The kernels of the nodes a thread runs split their work through its
 * lane, which the run hands them (minfer_host_api.run_parallel_for and
 * run_claim_threads take the run, whose lane this is): the pool they split
 * over (the session's, or a pipeline stage's), the share of the parallel
 * scheduler's job the thread belongs to (or none), and the claim function
 * of the scheduler running it. A lane belongs to one thread at a time (a
 * run's calling thread, or one pool thread of a scheduler's job); the
 * chunks of a parallel_for it started, running on other threads, look at it
 * only to see that it is busy, so a parallel_for from inside a chunk runs
 * serially. No state of a run lives in the thread itself.
 *
 * A node that keeps threads of its own busy (an OpenMP build) claims them
 * first (mf_lane_claim). A scheduler that runs nodes side by side gives
 * each of its lanes a claim function, which decides; without one a claim
 * gets up to the pool's threads, and one from inside a chunk gets 1 (the
 * other threads are running chunks). A claim without a claim function
 * takes the pool's threads for the node (the pool's busy lock, as a
 * parallel_for does), so two runs on one pool never keep more threads busy
 * than it has: when another run holds the pool the claim gets 1. The lane
 * holds them until its next parallel_for (which runs on them) or claim,
 * or mf_lane_release (a run's end, a pipeline stage's end), all on the
 * lane's one thread. */
typedef int (*mf_claim_fn)(void *ctx, int want);

typedef struct mf_lane {
    mf_pool *pool;      /* parallel_for's pool, or NULL: serial */
    mf_share *share;    /* the share the thread is in, or NULL */
    int index;          /* its index there */
    mf_claim_fn claim;  /* the scheduler's claim function, or NULL */
    void *claim_ctx;
    atomic_int busy;    /* a parallel_for of this lane is running */
    mf_pool *held;      /* the pool whose threads a claim took (mf_lane_claim), or NULL */
    /* Over the lane's published parallel_for calls: how many, the wall
     * time from publishing to the last chunk done, the time every thread
     * spent in their chunks (ns). The scheduler reads them around a step. */
    unsigned published;
    uint64_t region_ns, work_ns;
} mf_lane;

/* A lane on pool p, in no share, without a claim function. */
void mf_lane_init(mf_lane *l, mf_pool *p);
/* Runs fn over [0, n) in chunks of at least grain through lane l (NULL:
 * serially): published to its share when it has one, else on its pool as
 * mf_pool_parallel_for; serially from inside a chunk of l's own call. */
void mf_lane_parallel_for(mf_lane *l, size_t n, size_t grain, minfer_range_fn fn, void *arg);
/* The threads a node running on lane l (NULL: none) may keep busy, 1 .. want. */
int mf_lane_claim(mf_lane *l, int want);
/* Gives back the pool a claim on lane l holds, if any (l may be NULL). */
void mf_lane_release(mf_lane *l);
/* The threads a parallel_for on lane l splits over (NULL: 1). */
int mf_lane_threads(const mf_lane *l);

#endif
