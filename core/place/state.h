/*
 * The session's state: one struct that the stages from placement on fill
 * and read (place: the providers and the node assignment; plan: the plans;
 * exec: the pool, the execution contexts and the subgraph sessions;
 * session: creation and the public API).
 *
 * It is defined here, at the first stage that needs it, so that no stage
 * includes a later one: a later stage's fields are pointers to types that
 * are only declared here (mf_plan, mf_exec_ctx, mf_pool). May be included
 * by place/, plan/, exec/ and session/; never by util, graph, load,
 * shapes, optimize or diag.
 */
#ifndef MINFER_CORE_STATE_H
#define MINFER_CORE_STATE_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "diag/diag.h"
#include "graph/graph.h"
#include "place/provider_loader.h"
#include "util/internal.h"
#include "util/log.h"
#include "util/options.h"

typedef struct mf_plan mf_plan;         /* plan/plan.h */
typedef struct mf_exec_ctx mf_exec_ctx; /* exec/exec.h */
typedef struct mf_pool mf_pool;         /* exec/threadpool.h */
typedef struct mf_async mf_async;       /* session/async.c */

/* A subgraph of a control-flow node, built as a session of its own: its
 * inputs are the subgraph's formal inputs, then the outer-scope values it
 * reads, each carried by the node input slot[k]. */
typedef struct mf_core_sub {
    minfer_session *s;
    size_t n_formal;
    int *slot;
    size_t n_captures;
} mf_core_sub;

/* s->assign[i] for a node the core runs itself (exec/control.c). */
#define MF_ASSIGN_CORE (-2)

/* The placement (place/place.c): the providers a session computes on, in
 * preference order, the one constant evaluator (the list's CPU provider,
 * or one opened for it alone) and the host API table they were given. The
 * session created by the caller owns it; every subgraph session of its
 * control-flow nodes, however deeply nested, shares it, so each provider
 * is opened once per session tree. The providers' host pointer is the
 * owning session. Read-only once open. */
typedef struct mf_placement {
    minfer_host_api api;
    mf_provider_inst *provs;
    size_t n_provs;
    mf_provider_inst eval_own; /* the evaluator when not in the list */
    mf_provider_inst *eval;    /* NULL: no folding */
    int precision;             /* MINFER_PRECISION_*: what providers may compute in */
} mf_placement;

/* The plan cache (exec/frame.c, mf_plan_acquire): one concrete plan per
 * input signature seen (plan/plan.h, mf_sig_put), at most size of them;
 * when full, the least recently used one no run holds is freed. */
typedef struct mf_plan_cache {
    mf_plan **plans;
    size_t n;
    size_t size;
    uint64_t tick;             /* use counter, for the least recently used */
    mf_plan *last;             /* most recently used, for reports */
} mf_plan_cache;

/* The public handle: the graph, its placement (shared by a session tree),
 * its plan cache and what runs and reports share. */
struct minfer_session {
    char *errctx;
    mf_graph *g;
    mf_logger log;
    int planner;
    int scheduler;             /* minfer_scheduler */
    int inter_op;              /* nodes at once under the parallel scheduler (resolved);
                                  the pipeline's stages */
    int stages_auto;           /* pipeline: inter_op was not set, stages chosen by cost */
    size_t queue_depth;        /* asynchronous runs (session/async.c): 0 default */
    int64_t micro_batch;       /* asynchronous runs: rows per micro-batch, 0 none */
    mf_async *async;           /* the asynchronous runs' workers, made on first submit */
    minfer_limits limits;
    minfer_run_limits run_limits;
    mf_pool *pool;
    int pool_shared;           /* a subgraph session borrows its parent's pool */
    struct minfer_thread_pool *thread_pool; /* the shared pool pool is, held; or NULL */
    mf_core_sub *subs;         /* 2 per node (If: then, else; others: body), or NULL */
    mf_placement *pl;          /* its own, or (a subgraph session) its parent's */
    int pl_shared;
    size_t n_domains;          /* 1 + pl->n_provs */
    int *assign;               /* node -> provider index; -1 folded at build */
    mf_plan *build;            /* declared-shape plan (inference results) */
    mf_plan_cache cache;       /* the concrete plans, per input signature (under lock) */
    mf_exec_ctx *free_ctx;     /* execution contexts not in use */
    pthread_mutex_t lock;      /* plans, contexts, assign after build */
    mf_devmem *devmem;         /* live device values (exec/device_values.c, under lock) */
    minfer_value_info *in_info, *out_info;
    /* diagnostics */
    int strict;
    int check_nan;
    char **declined;           /* per node: why earlier providers declined it */
    mf_trace *trace;           /* NULL: profiling off */
    char *profile_path;
    double *node_ms;           /* per node: profiled time (under lock) */
    uint64_t *node_runs;
    mf_stats stats;            /* under lock */
    double *stats_scratch;
    /* While the session is being created: the mf_now_ms() past which
     * creation fails (minfer_options_set_creation_deadline; subgraph
     * sessions take their parent's), else 0. */
    double create_by;
    uint64_t create_limit_ms;
};

/* MINFER_ERR_DEADLINE when s is being created and its creation deadline
 * has passed ("session creation took longer than N ms (the creation
 * deadline) at STAGE"), else MINFER_OK (also after creation: runs have
 * their own deadline). stage is a printf format. Inline, so that exec
 * (build.c) checks it without a call up into session/. */
static inline minfer_status mf_creation_check(const minfer_session *s, const char *stage, ...)
    __attribute__((format(printf, 2, 3)));
static inline minfer_status mf_creation_check(const minfer_session *s, const char *stage, ...) {
    if (!s || s->create_by <= 0 || mf_now_ms() <= s->create_by)
        return MINFER_OK;
    char where[256];
    va_list ap;
    va_start(ap, stage);
    vsnprintf(where, sizeof where, stage, ap);
    va_end(ap);
    return mf_error(MINFER_ERR_DEADLINE,
                    "%s: session creation took longer than %llu ms (the creation deadline) "
                    "at %s",
                    s->errctx ? s->errctx : "session", (unsigned long long)s->create_limit_ms,
                    where);
}

/* Logging through the session's logger (s may be NULL: stderr). */
#define mf_log(s, ...) mf_logf((s) ? &(s)->log : NULL, __VA_ARGS__)
/* The same for a line of a run with options ro (NULL: none): its level and
 * tag apply (util/log.h). */
#define mf_log_ro(s, ro, ...) mf_logf_run((s) ? &(s)->log : NULL, (ro), __VA_ARGS__)

#endif
