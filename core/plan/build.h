/*
 * Building a plan for one signature of input shapes (plan/build.c).
 * Included by exec/exec.h and session/.
 */
#ifndef MINFER_CORE_PLAN_BUILD_H
#define MINFER_CORE_PLAN_BUILD_H

#include "plan/plan.h"

/* Inference and folding for the plan's input shapes. */
minfer_status mf_plan_infer(minfer_session *s, mf_plan *p);
/* Builds a concrete plan for input shapes sig (kind << 8 | dtype, rank,
 * dims... per input). Called with the session lock held. */
minfer_status mf_plan_build(minfer_session *s, const int64_t *sig, size_t sig_len,
                            const minfer_run_options *ro, mf_plan **out);

#endif
