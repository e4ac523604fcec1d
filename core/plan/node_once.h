/*
 * Running one node once on a provider, outside a plan's steps (plan/node_once.c):
 * folding constants while a plan is built (plan/build.c), nodes whose
 * shapes are known only at run time (exec/step.c) and the optimizer's
 * stand-alone evaluator (exec/evaluator.c). The run handle a node runs
 * under, and the storage it makes, are here too; the host API table its
 * callbacks go through is exec/node_runner.c's.
 */
#ifndef MINFER_CORE_PLAN_NODE_ONCE_H
#define MINFER_CORE_PLAN_NODE_ONCE_H

#include <stdlib.h>

#include "plan/plan.h"

typedef struct mf_budget mf_budget; /* exec/exec.h */
typedef struct mf_lane mf_lane;     /* exec/threadpool.h */

/* A node has no fixed limit on its inputs and outputs (an exported If
 * returns 70 values): the per-node arrays of the run path live on the
 * stack for up to MF_MAX_NODE_IO entries, the common case, and on the heap
 * beyond (mf_io_scratch). Folding and FLOP estimates skip a larger node. */
#define MF_MAX_NODE_IO 64

/* stack (MF_MAX_NODE_IO entries of es bytes) when n fits, else n entries
 * from the heap (NULL when that fails); mf_io_scratch_free gives it back. */
static inline void *mf_io_scratch(void *stack, size_t n, size_t es) {
    return n <= MF_MAX_NODE_IO ? stack : mf_malloc((n ? n : 1) * es);
}
static inline void mf_io_scratch_free(void *p, void *stack) {
    if (p != stack)
        free(p);
}

/* The run handle behind minfer_host_api.alloc_output (exec/node_runner.c).
 * s may be NULL (the stand-alone evaluator): default limits, nothing
 * logged. */
typedef struct mf_run {
    minfer_session *s;
    mf_plan *p;
    int node;
    minfer_tensor_view *outputs; /* the node's output views */
    size_t n_outputs;
    minfer_tensor_view *views;   /* the run's per-value views, or NULL */
    void **temps;                /* run-time allocations, freed by the run */
    int64_t *temp_strings;       /* per temp: string elements to free first */
    size_t n_temps, cap_temps;
    mf_budget *budget;           /* the run's (charge_work), or NULL at build */
    const mf_graph *g;           /* when s is NULL: the node's graph */
    mf_lane *lane;               /* the thread's place in the run (exec/threadpool.h):
                                    what run_parallel_for splits over; NULL at build */
} mf_run;
int mf_run_track(mf_run *r, void *ptr);
/* As mf_run_track, for storage of `strings` string elements (0: none). */
int mf_run_track_strings(mf_run *r, void *ptr, int64_t strings);
/* Takes ptr back from the tracked storage (the caller owns it now); 0 when
 * found. */
int mf_run_untrack(mf_run *r, void *ptr);
/* Frees everything tracked. */
void mf_run_free_temps(mf_run *r);


/* Where mf_run_node_once failed, for the caller's message. */
typedef enum { MF_NODE_OK, MF_NODE_PREPARE, MF_NODE_WORKSPACE, MF_NODE_EXECUTE } mf_node_step;

/* Runs one node once on provider pi: prepare with desc, a host workspace of
 * the size prepare asks, execute, release. Outputs whose view has data are
 * written there; one with rank -1 is allocated through alloc_output into
 * run's temps (run->outputs must be out). *step says which step failed;
 * the last error says why, unprefixed. */
minfer_status mf_run_node_once(const mf_provider_inst *pi, const minfer_node_desc *desc,
                               const minfer_tensor_view *in, size_t n_in,
                               minfer_tensor_view *out, size_t n_out, mf_run *run,
                               mf_node_step *step);

/* Bytes of node i's output o with shape v, checked: MINFER_ERR_LIMIT naming
 * the node, the value and the shape when the count overflows or is above
 * max_tensor_bytes. */
minfer_status mf_value_bytes(const minfer_session *s, int node, size_t o,
                             const minfer_tensor_view *v, size_t *out);

#endif
