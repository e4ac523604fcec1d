/*
 * Execution: running nodes and plans (exec/). Included by exec/ and
 * session/; never by an earlier stage.
 *
 *   node_runner.c  the host API table every provider gets (a node runs
 *                  outside a plan's steps through plan/node_once.c; plans
 *                  are built by plan/build.c)
 *   budget.c       what one run may still spend
 *   control.c      control flow the core runs itself (If, Loop, Scan,
 *                  SequenceMap); core_values.c: sequences, optionals and
 *                  the value helpers they share (core_call.h)
 *   run.c          a run: its entry points, the sequential loop over its
 *                  steps (or sched_parallel.c, sched_pipeline.c)
 *   frame.c        what a run holds: its plan (the plan cache), its
 *                  execution context (pooled), its outputs' delivery
 *                  (frame.h); runs no step
 *   step.c         one step, as every scheduler runs it (step.h)
 *   run_inputs.c   checking a run's inputs, the plan cache's signature
 *   evaluator.c    a stand-alone evaluator for callers without a session
 */
#ifndef MINFER_CORE_EXEC_H
#define MINFER_CORE_EXEC_H

#include <stdlib.h>

#include "exec/threadpool.h"
#include "plan/build.h"
#include "plan/core_infer.h"
#include "plan/node_once.h"

/* ---- The host API (node_runner.c) ---------------------------------------- */

/* The host API table every provider of s gets (host: the session, or NULL
 * for the stand-alone evaluator: no log lines, one thread). */
void mf_host_api_init(minfer_host_api *api);

/* ---- What a run may still spend (budget.c) ------------------------------
 *
 * One budget per minfer_session_run, handed down to the runs of its
 * subgraphs, so the limits hold for the whole run however deeply loops
 * nest. Plain counters, under `lock` when the parallel scheduler runs
 * nodes of one run on several threads. */
typedef struct mf_budget mf_budget; /* also in plan/node_once.h */

/* How a core op runs one of its subgraph sessions, spending budget b: the
 * scheduler (run.c) hands its own entry point down, so the core ops
 * (control.c) call the scheduler that calls them through this pointer
 * and not by name. */
typedef minfer_status (*mf_run_sub_fn)(minfer_session *sub, mf_budget *b, mf_lane *lane,
                                        const char *const *input_names,
                                        const minfer_tensor *const *inputs, size_t n_inputs,
                                        minfer_tensor **outputs, size_t n_outputs);

struct mf_budget {
    uint64_t iterations, max_iterations; /* Loop, Scan, SequenceMap body runs */
    uint64_t elements, max_elements;     /* produced or charged */
    double deadline;                     /* mf_now_ms() time, or 0: none */
    uint64_t deadline_ms;
    const minfer_run_options *ro;        /* the caller's, or NULL */
    mf_run_sub_fn run_sub;
    pthread_mutex_t *lock; /* set while nodes run at once (exec/sched_parallel.c): guards
                              the counters; NULL otherwise */
};

/* A budget for one run of s: the session's limits, the sooner deadline of
 * the session's and ro's (ro may be NULL). */
void mf_budget_init(mf_budget *b, const minfer_session *s, const minfer_run_options *ro,
                    mf_run_sub_fn run_sub);
/* Counts one body run of core node i (and checks the deadline). */
minfer_status mf_budget_iteration(mf_budget *b, minfer_session *s, int i);
/* Charges n elements produced (or work) by node i; i < 0: the run itself. */
minfer_status mf_budget_elements(mf_budget *b, minfer_session *s, int i, uint64_t n);
/* Fails when the run's deadline has passed or it was cancelled, naming
 * node i (< 0: none). */
minfer_status mf_budget_time(mf_budget *b, minfer_session *s, int i);
/* Elements a value holds: a tensor's, or the sum over a sequence's or an
 * optional's items, each counting one more (saturating). */
uint64_t mf_value_elements(const minfer_tensor_view *v);

/* ---- Ops the core runs (control.c): control flow (If, Loop, Scan,
 * SequenceMap), sequences and optionals. Their values live on the host;
 * nodes inside subgraphs run on providers as usual. */
/* Runs core node i on host inputs; out[o] receives an owned value (tensor,
 * sequence or optional) for every output the node has. */
minfer_status mf_core_exec(minfer_session *s, mf_budget *b, mf_lane *lane, int i,
                           const minfer_tensor_view *in, minfer_tensor **out);
/* Checks that subgraph sg (attribute attr) fits node i's inputs and outputs. */
minfer_status mf_core_check_arity(minfer_session *s, int i, const char *attr, const mf_graph *sg);

/* ---- The scheduler (run.c) ---------------------------------------------- */

/* Checks the inputs of a run (n named inputs) against the graph's inputs:
 * an unknown, duplicate or missing name, a wrong kind, element type, rank
 * or fixed dimension, or two sizes for one symbolic dimension is an error
 * naming the input. bound[k] gets the tensor for graph input k, sig and
 * *sig_len the input-shape signature (room for n_inputs * (2 +
 * MINFER_MAX_RANK) entries) (run_inputs.c). */
minfer_status mf_run_check_inputs(minfer_session *s, const char *const *names,
                                  const minfer_tensor *const *inputs, size_t n,
                                  const minfer_tensor **bound, int64_t *sig, size_t *sig_len);

/* The plan for a signature, built if missing, with a reference held until
 * mf_plan_release; a build logs with the run's options ro (NULL: none)
 * (frame.c). */
minfer_status mf_plan_acquire(minfer_session *s, const int64_t *sig, size_t sig_len,
                              const minfer_run_options *ro, mf_plan **out);
void mf_plan_release(minfer_session *s, mf_plan *p);
void mf_exec_ctx_free(minfer_session *s, mf_exec_ctx *c);
/* Device values (device_values.c). The domain (1 + provider index) of
 * the provider named name, 0 for host memory (NULL, "", "cpu"), or -1
 * with the reason in why (no such provider, or one without device values). */
int mf_devmem_domain(const minfer_session *s, const char *name, char *why, size_t why_size);
/* A new device value of s in domain dom (one mf_devmem_domain gave). */
minfer_status mf_devmem_new(minfer_session *s, int dom, int32_t dtype, const int64_t *dims,
                            int32_t rank, minfer_tensor **out);
/* Frees the buffers of s's live device values (minfer_session_free). */
void mf_devmem_close_all(minfer_session *s);

/* minfer_session_run for a subgraph session, spending the parent run's
 * budget, its nodes on the calling thread's lane (an mf_run_sub_fn). */
minfer_status mf_session_run_sub(minfer_session *s, mf_budget *b, mf_lane *lane,
                                 const char *const *input_names,
                                 const minfer_tensor *const *inputs, size_t n_inputs,
                                 minfer_tensor **outputs, size_t n_outputs);
/* minfer_session_run_with_options for a request of the pipeline
 * scheduler: ticket (exec/pipeline.h) says which, NULL none. */
typedef struct mf_pipe_ticket mf_pipe_ticket;
minfer_status mf_session_run_ticket(minfer_session *s, const minfer_run_options *ro,
                                    mf_pipe_ticket *ticket, const char *const *input_names,
                                    const minfer_tensor *const *inputs, size_t n_inputs,
                                    const char *const *output_names, minfer_tensor **outputs,
                                    size_t n_outputs);

#endif
