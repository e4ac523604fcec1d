/*
 * Giving back the host's copy of weights a provider packed into its own
 * layout (weights.c): the weights are then resident once.
 */
#ifndef MINFER_CORE_PLAN_WEIGHTS_H
#define MINFER_CORE_PLAN_WEIGHTS_H

#include "plan/plan.h"

/* After node i of plan p was prepared: gives back the plain copy of each
 * constant input it packed (minfer_node_prep.const_packed) once every
 * reader of that constant has packed it too. */
minfer_status mf_weights_release_packed(minfer_session *s, mf_plan *p, int i);
/* Before plan p's nodes are prepared: frees the copies of large weights
 * that only those nodes read and that the model file holds as they are. */
void mf_weights_defer(minfer_session *s, mf_plan *p);
/* Before node i of plan p is prepared: reads its inputs' freed weights
 * again from the model file (MINFER_ERR_NOMEM when that fails). */
minfer_status mf_weights_materialize(minfer_session *s, mf_plan *p, int i);
/* After a plan's nodes are prepared: gives back the pages of the mapped
 * ONNX file that are still resident (they are read again if needed). */
void mf_weights_prepared(minfer_session *s);
/* From prepare_node of node i (minfer_host_api.const_consumed): the
 * provider read bytes [offset, offset + bytes) of its input `input`, whose
 * const_data was const_data, for the last time in this call: when that is
 * a copy mf_weights_materialize made, its whole pages in the range are
 * given back now (they read as zeros until mf_weights_refill). */
void mf_weights_consumed(minfer_session *s, int i, size_t input, const void *const_data,
                         size_t offset, size_t bytes);
/* After node i's prepare_node returned (or failed): copies again from the
 * file the inputs' copies whose pages it gave back and that stay
 * (MINFER_ERR_IO when the file changed under the session). */
minfer_status mf_weights_refill(minfer_session *s, int i);
/* Before another plan is built: copies the freed weights again from the
 * model file (MINFER_ERR_NOMEM when that fails, MINFER_ERR_IO when the file
 * was truncated or rewritten since: each read again is checked against the
 * sum taken when the copy was given back). */
minfer_status mf_weights_restore(minfer_session *s);

#endif
