/*
 * The memory plan of the parallel scheduler (plan/plan_concurrent.c): the
 * dependencies its ready queue counts down, and the liveness that keeps
 * values two nodes running at once can hold apart.
 *
 * Included by plan/ and exec/ only.
 */
#ifndef MINFER_CORE_PLAN_CONCURRENT_H
#define MINFER_CORE_PLAN_CONCURRENT_H

#include <stdatomic.h>

#include "plan/plan.h"
#include "plan/planner.h"

/* Graphs with more steps than this run sequentially under the parallel
 * scheduler: the ancestor sets cost steps^2 / 8 bytes while planning. */
#define MF_CONC_MAX_STEPS 8192

/* The dependency graph over steps of the execution order (index k of
 * g->order), for one plan. Steps of folded nodes take no part. */
typedef struct mf_conc {
    int n;              /* steps */
    int *n_deps;        /* per step: producer steps it waits for (repeats counted); -1: folded */
    int *succ_at;       /* per step: its consumers are succ[succ_at[k] .. succ_at[k + 1]) */
    int *succ;
    double *cost;       /* per step: estimated work (FLOPs, at least its output elements) */
    double *prio;       /* per step: its cost plus the costliest path of consumers after it */
    /* Per step, learnt by the runs (exec/sched_parallel.c): 1 when its last
     * run did not split its work over threads, 0 when it did or has not run
     * in a pool job yet. */
    _Atomic unsigned char *serial;
    /* Per step, measured by the runs (smoothed, ns; 0: not yet): its work
     * on one thread (its wall time when it ran serially; else the time
     * outside its parallel_for calls plus every chunk's time), and its wall
     * time split over the pool with no other step running. Their ratio is
     * its intra-op efficiency, what running it beside others competes
     * with. */
    _Atomic uint64_t *one_ns, *split_ns;
    /* Runs of the plan so far (one counter): every PROBE_EVERY-th runs its
     * steps one at a time, to measure split_ns afresh. */
    _Atomic unsigned *runs;
    /* Of them (minfer_schedule_info): [0] the runs through the ready queue
     * that were free to start steps beside each other (not probes), [1]
     * the runs in which two steps did run at once. */
    _Atomic unsigned *queue_runs;
    /* The whole run's wall time (smoothed, ns; 0: not yet), [0] through the
     * ready queue, [1] one step after another on the calling thread (as
     * the sequential scheduler): a run goes the faster way, the other is
     * timed again now and then (mf_sched_pick, exec/sched_parallel.c). */
    _Atomic uint64_t *way_ns;
    uint64_t *seq_arena; /* per domain: the arena the sequential order would take */
    /* While planning only (freed by mf_conc_planned): */
    uint64_t *anc;      /* per step: bitset of its ancestor steps, `words` words each */
    size_t words;
    int *lo, *hi;       /* per step: the first and last step that may run beside it */
} mf_conc;

/* Decides whether plan p can run concurrently and, when it can, builds
 * p->conc (called after liveness, before in place). Otherwise p->conc
 * stays NULL and p->conc_why says why (the scheduler is sequential, a
 * control-flow or run-time-shape node, copies between memory domains, too
 * many steps). */
minfer_status mf_conc_build(minfer_session *s, mf_plan *p);
void mf_conc_free(mf_conc *c);
/* In place under concurrency: may node step k write over value u, which
 * it consumes? Only when every other consumer of u is its ancestor. */
int mf_conc_inplace_ok(const minfer_session *s, const mf_plan *p, int u, int k);
/* Widens each item's lifetime [first, last] to every step that may run
 * beside one of its steps, so that the greedy planner keeps apart any two
 * buffers that can be alive at once in some admissible order. */
void mf_conc_widen(const mf_conc *c, mf_plan_item *items, size_t n);
/* Frees what only planning needed. */
void mf_conc_planned(mf_conc *c);

#endif
