/*
 * The pipeline scheduler (exec/sched_pipeline.c): stages of the execution
 * order, each working on another request at the same time.
 *
 * A pipe holds one turnstile per stage and one intra-op pool per stage. A
 * request is a run of the session with a ticket: the pipe and its sequence
 * number (session/async.c hands them out in the order requests were
 * submitted); the run goes through the stages in order,
 * entering stage j only when every earlier request has left it. So at
 * most one request is in each stage, requests overtake nobody, and with S
 * stages S requests run at once, one per stage, each stage's nodes split
 * over that stage's pool (threads / S), never more threads busy than the
 * session has.
 *
 * Included by exec/ and session/ only.
 */
#ifndef MINFER_CORE_EXEC_PIPELINE_H
#define MINFER_CORE_EXEC_PIPELINE_H

#include <stdint.h>

#include "exec/sched.h"

typedef struct mf_pipe mf_pipe;

/* A pipe of `stages` stages, each stage's nodes on `threads` threads (the
 * thread running the stage counts as one); NULL when out of memory. */
mf_pipe *mf_pipe_create(int stages, int threads);
void mf_pipe_free(mf_pipe *q);
int mf_pipe_stages(const mf_pipe *q);

/* A request's place in a pipe: request seq of q (0, 1, 2 ... without
 * gaps: each number must be given out and ended once, or later requests
 * wait for it forever), and the stages it has left behind. Whoever runs
 * the request owns it (session/async.c) and hands it to the run
 * (mf_session_run_ticket, exec/exec.h). */
struct mf_pipe_ticket {
    mf_pipe *q;
    uint64_t seq;
    int passed;
};
void mf_pipe_ticket_init(mf_pipe_ticket *t, mf_pipe *q, uint64_t seq);
/* Ends the request: passes, in order, the stages it did not go through
 * (it failed before them, or never ran), so later ones go on. */
void mf_pipe_ticket_end(mf_pipe_ticket *t);

/* Per-step times (ms) measured on the requests of plan p that ran through
 * q, summed, into work (n steps): 1 when there are any, 0 otherwise. */
int mf_pipe_measured(mf_pipe *q, const mf_plan *p, double *work, size_t n);

/* Runs the steps of plan p in context c through the stages of ticket t's
 * pipe (run.c's execute, instead of its loop): the nodes of a stage split
 * their work over its pool, through r's lane. */
minfer_status mf_sched_pipeline_run(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                                    mf_budget *b, mf_pipe_ticket *t);

#endif
