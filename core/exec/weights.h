/*
 * Giving back the host's copy of weights a provider packed into its own
 * layout (weights.c): the weights are then resident once.
 */
#ifndef MINFER_CORE_EXEC_WEIGHTS_H
#define MINFER_CORE_EXEC_WEIGHTS_H

#include "plan/plan.h"

/* After node i of plan p was prepared: gives back the plain copy of each
 * constant input it packed (minfer_node_prep.const_packed) once every
 * reader of that constant has packed it too. */
void mf_weights_release_packed(minfer_session *s, mf_plan *p, int i);
/* Before another plan is built: copies the freed weights again from the
 * model file (MINFER_ERR_NOMEM when that fails). */
minfer_status mf_weights_restore(minfer_session *s);

#endif
