/*
 * What a run of one graph holds while its steps run (exec/frame.c): the
 * execution context its steps share, taken from the session's pool and
 * fitted to the plan, and the delivery of its outputs. Included by step.h
 * (so by every scheduler) and by frame.c.
 */
#ifndef MINFER_CORE_EXEC_FRAME_H
#define MINFER_CORE_EXEC_FRAME_H

#include "exec/exec.h"

/* What one run needs beyond its plan: arenas per memory domain, a view
 * per value, run-time storage, copies' buffers; pooled per session
 * (frame.c), one per run in flight. */
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

/* Frees the run-time storage of value v (and its strings). */
void mf_run_free_dyn(mf_exec_ctx *c, size_t v);
/* An execution context for a run of plan p: the session's idle one, or a
 * new one, its arenas grown to fit p. *out is set whenever a context was
 * had, also when fitting failed: give it back with mf_exec_ctx_give. */
minfer_status mf_exec_ctx_take(minfer_session *s, const mf_plan *p, mf_exec_ctx **out);
/* Frees c's run-time values and returns it to the session's pool (NULL:
 * nothing). */
void mf_exec_ctx_give(minfer_session *s, mf_exec_ctx *c);
/* Copies value vi of the finished run out into *slot: into the caller's
 * tensor (its type and shape must match), or a new one when *slot is
 * NULL. dom 0: a host tensor (values in a device's memory copied to the
 * host); else a device value in memory domain dom (a given one must be
 * there: run_budget checks), copied device to device when computed there. */
minfer_status mf_run_deliver(minfer_session *s, const mf_plan *p, mf_exec_ctx *c, int vi, int dom,
                             minfer_tensor **slot);

#endif
