/*
 * One step of a run (exec/step.c), and the execution context a run's steps
 * share. Included by the schedulers (sched.h, pipeline.h), so by run.c,
 * and by step.c.
 */
#ifndef MINFER_CORE_EXEC_STEP_H
#define MINFER_CORE_EXEC_STEP_H

#include "exec/exec.h"

/* What one run needs beyond its plan: arenas per memory domain, a view
 * per value, run-time storage, copies' buffers; pooled per session
 * (run.c), one per run in flight. */
struct mf_exec_ctx {
    mf_exec_ctx *next;
    void **arena;    /* per domain: host pointer, or a provider buffer */
    uint64_t *cap;   /* per domain */
    minfer_tensor_view *views; /* per value, this run */
    void **dyn;      /* per value: run-time storage of dynamic values */
    minfer_tensor_view *mirrors;
    size_t mirrors_cap;
    /* per value, this run: the device value bound to a graph input (NULL:
     * none), and whether views[v] is that device storage (1) or a host
     * copy of it (0: some node reads it on the host) */
    const minfer_tensor **devin;
    unsigned char *on_dev;
};

/* Every value's view for this run of plan p in context c: arena values
 * placed, constants as planned, string values allocated, the caller's
 * inputs (bound, per graph input) in place, copy buffers placed. */
minfer_status mf_run_bind(minfer_session *s, mf_plan *p, mf_exec_ctx *c,
                          const minfer_tensor *const *bound);
/* Step k of plan p (node s->g->order[k], never a folded one): the copies
 * planned before it, the node, the checks and the budget. r is the calling
 * thread's run handle (r->lane set), b the run's budget. */
minfer_status mf_run_step(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r, mf_budget *b,
                          int k);
/* Frees the run-time storage of value v (and its strings). */
void mf_run_free_dyn(mf_exec_ctx *c, size_t v);

#endif
