/*
 * The pipeline scheduler's stages (plan/plan_stages.c): the execution order
 * of a plan cut into contiguous ranges of steps.
 *
 * Included by plan/, exec/ and session/ only.
 */
#ifndef MINFER_CORE_PLAN_STAGES_H
#define MINFER_CORE_PLAN_STAGES_H

#include "plan/plan.h"

/* Below this estimated work (operations) a stage costs more in hand-offs
 * between threads than it gains: the automatic stage count keeps every
 * stage above it. */
#define MF_STAGE_MIN_WORK 2e6

/* Step k's estimated work: its FLOPs, at least the elements it writes;
 * 0 for a folded node. */
double mf_step_work(const minfer_session *s, const mf_plan *p, int k);

/* How many stages plan p is worth cutting into, at most `most`: each at
 * least MF_STAGE_MIN_WORK, never more than the steps that run. */
int mf_plan_stage_count(const minfer_session *s, const mf_plan *p, int most);

/* Cuts p's execution order into exactly `stages` ranges: stage j runs the
 * steps [cut[j], cut[j + 1]); cut has stages + 1 entries, cut[0] = 0 and
 * cut[stages] = the step count. work: per step, its measured cost (any
 * unit), or NULL for the estimates. A range may be empty when the steps
 * are fewer than the stages or one step outweighs the rest. */
void mf_plan_stages(const minfer_session *s, const mf_plan *p, int stages, const double *work,
                    int *cut);

#endif
