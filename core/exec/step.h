/*
 * One step of a run (exec/step.c). Included by the schedulers (sched.h,
 * pipeline.h), so by run.c, and by step.c.
 */
#ifndef MINFER_CORE_EXEC_STEP_H
#define MINFER_CORE_EXEC_STEP_H

#include "exec/frame.h"

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

#endif
