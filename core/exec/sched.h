/*
 * Schedulers beside the sequential one (exec/sched_parallel.c).
 *
 * The sequential scheduler is run.c's loop over the execution order. The
 * parallel one runs a plan with p->conc (plan/plan_concurrent.h): a ready
 * queue over the same steps, driven by dependency counts.
 */
#ifndef MINFER_CORE_EXEC_SCHED_H
#define MINFER_CORE_EXEC_SCHED_H

#include "exec/step.h"
#include "plan/plan_concurrent.h"

/* Runs every step of plan p (p->conc set) in context c, nodes that do not
 * depend on each other at once on the session's pool; or, when that has
 * been measured slower for this plan, one after another on the calling
 * thread, as the sequential scheduler (mf_sched_pick). r is the run's
 * handle (each thread gets its own copy while nodes run at once). On
 * failure the first error is the calling thread's last error. */
minfer_status mf_sched_parallel_run(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                                    mf_budget *b);

/* Which way run n of a plan goes (MF_WAY_*). par_ns, seq_ns: the two
 * ways' smoothed wall times (0: not yet measured). Runs 0, 16, 32, ...
 * are probes: the queue, starting no step beside another, to measure
 * each step's split time. Then each way is timed once, and from then on
 * the faster one runs, the slower one again on every 32nd run (n = 8 mod
 * 32), so a change (load, other callers) is seen. While one after another
 * is clearly faster (the queue over 10% slower) only every 64th run
 * probes, as the probes then only serve the queue's rare runs. */
enum { MF_WAY_QUEUE, MF_WAY_PLAIN, MF_WAY_PROBE };
int mf_sched_pick(unsigned n, uint64_t par_ns, uint64_t seq_ns);

/* The parallel scheduler's start rule: whether n steps (n <= 64) run at
 * once on w threads, longest first onto the least loaded, finish sooner
 * than one after another. one[i]: step i's time on one thread (reordered
 * here); alone[i]: its time run alone, split over the pool when it splits
 * (its time on one thread divided by the threads and its intra-op
 * efficiency). */
int mf_sched_gains(double *one, const double *alone, int n, int w);

#endif
