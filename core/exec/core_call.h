/*
 * Between the ops the core runs (exec/control.c: control flow;
 * exec/core_values.c: sequences, optionals, Gradient helpers and the value
 * helpers both use). Included only by those two files.
 */
#ifndef MINFER_CORE_CORE_CALL_H
#define MINFER_CORE_CORE_CALL_H

#include <string.h>

#include "exec/exec.h"

/* One execution of core node i. */
typedef struct core_call {
    minfer_session *s;
    mf_budget *b; /* the run's */
    mf_lane *lane; /* the calling thread's, which the subgraphs' nodes run on */
    int i;
    const mf_node *n;
    const minfer_tensor_view *in;
    size_t nin;
    minfer_tensor **out;
    char lbl[512];
} core_call;

/* The error "<model>: <node>: <message>" with status st. */
#define FAIL(cc, st, ...) mf_cv_fail_msg((cc), (st), __VA_ARGS__)
minfer_status mf_cv_fail_msg(core_call *cc, minfer_status st, const char *fmt, ...)
    MF_PRINTF(3, 4);
/* Whether formal input j is given. */
int mf_cv_present(const core_call *cc, size_t j);
/* Input j's sequence, or NULL when it is absent or not a sequence. */
const minfer_tensor *mf_cv_seq_in(core_call *cc, size_t j);

/* A borrowed handle for a host view (tensor) or the container a view
 * points at; tmp holds the tensor's handle. */
const minfer_tensor *mf_cv_handle(const minfer_tensor_view *v, minfer_tensor *tmp);
/* A deep copy of the value v shows. */
minfer_status mf_cv_clone_view(const minfer_tensor_view *v, minfer_tensor **out);
/* The integer or boolean in a one-element tensor. */
minfer_status mf_cv_scalar_int(const minfer_tensor_view *v, int64_t *out);
minfer_status mf_cv_scalar_bool(const minfer_tensor_view *v, int *out);
/* A new scalar tensor of dtype holding value. */
minfer_status mf_cv_new_scalar(int32_t dtype, int64_t value, minfer_tensor **out);
/* [start, start + len) of t along axis; the axis is dropped when !keep. */
minfer_status mf_cv_take(const minfer_tensor *t, int axis, int64_t start, int64_t len,
                         int keep, minfer_tensor **out);
/* Joins items along axis (a new axis of size 1 per item when stack), last
 * item first when reverse; at most max_bytes, what names the result. */
minfer_status mf_cv_join(minfer_tensor *const *items, size_t n, int axis, int stack,
                         int reverse, uint64_t max_bytes, const char *what,
                         minfer_tensor **out);
/* Frees v[0..n) and sets them NULL. */
void mf_cv_free_all(minfer_tensor **v, size_t n);

/* The ops of exec/core_values.c. */
minfer_status mf_core_op_sequence(core_call *cc);
minfer_status mf_core_op_optional(core_call *cc);
minfer_status mf_core_op_grad_helper(core_call *cc);

#endif
