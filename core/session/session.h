/* Session internals shared between session.c, builder.c and options.c. */
#ifndef MINFER_CORE_SESSION_H
#define MINFER_CORE_SESSION_H

#include <pthread.h>
#include <stdatomic.h>

#include "diag/diag.h"
#include "graph/graph.h"
#include "util/internal.h"
#include "place/provider_loader.h"
#include "exec/threadpool.h"

struct minfer_options {
    char **providers; /* preference list, or NULL when not set */
    size_t n_providers;
    int threads;      /* 0: one per online CPU */
    int log_level;    /* -1: not set (MINFER_LOG or WARN) */
    int opt_level;    /* -1: not set (MINFER_OPT_LEVEL or 3) */
    int planner;      /* -1: not set (MINFER_PLANNER or greedy) */
    size_t plan_cache_size; /* 0: default */
    minfer_limits limits;   /* 0 fields: defaults */
    minfer_run_limits run_limits; /* 0 fields: defaults */
    minfer_log_fn log_fn;
    void *log_user;
    int strict;             /* strict placement */
    char *profile_path;     /* NULL: no profiling */
    int check_nan;          /* -1: not set (MINFER_CHECK_NAN) */
    char **prov_opt_names;  /* per-provider option strings */
    char **prov_opt_values;
    size_t n_prov_opts;
    struct mf_dim_override *dims; /* free-dimension overrides, in the order set */
    size_t n_dims;
    char **plugins;         /* minfer_options_add_plugin: paths or names, in order */
    size_t n_plugins;
};

/* minfer_options_set_dim (input NULL: by symbolic name) and
 * minfer_options_set_input_dim (name is the input's, at axis). */
typedef struct mf_dim_override {
    char *name;
    int by_input;
    int axis;
    int64_t value;
} mf_dim_override;

/* Warns, once per process, about each MINFER_* variable with a value that
 * means nothing (the default then applies). */
void mf_check_env(const minfer_session *s);

/* Fixes the graph inputs' dimensions the options override (create's first
 * step, top-level sessions only): an unknown name, an axis out of range or
 * a fixed dimension given another size is an error naming them. */
minfer_status mf_apply_dim_overrides(mf_graph *g, const minfer_options *opt, const char *errctx);

#define MF_DEFAULT_MAX_MODEL_BYTES ((uint64_t)2 << 30)
/* The tensor-bytes default: a quarter of physical memory, at most this */
#define MF_DEFAULT_MAX_TENSOR_BYTES ((uint64_t)4 << 30)
#define MF_DEFAULT_MAX_NODES ((uint64_t)1000000)
#define MF_DEFAULT_MAX_LOOP_ITERATIONS ((uint64_t)1000000)
#define MF_DEFAULT_MAX_RUN_ELEMENTS ((uint64_t)1 << 34)
#define MF_DEFAULT_PLAN_CACHE 4

/* The option string for a provider ("" when none). */
const char *mf_options_provider_options(const minfer_options *opt, const char *provider);
/* Effective limits: opt's non-zero fields, else the defaults. */
minfer_limits mf_options_limits(const minfer_options *opt);
/* Effective run budgets: opt's non-zero fields, else the defaults. */
minfer_run_limits mf_options_run_limits(const minfer_options *opt);

/* ---- Plans (plan.c) ------------------------------------------------------
 *
 * A plan belongs to one signature of concrete input shapes (or, for the
 * build plan, to the declared shapes). It is read-only once built, so any
 * number of runs may share it; everything a run writes lives in its
 * execution context (run.c). */

/* Where a value's storage comes from. */
enum { MF_W_NONE, MF_W_INPUT, MF_W_CONST, MF_W_ARENA, MF_W_DYNAMIC, MF_W_HEAP };
/* MF_W_HEAP: string values, allocated per run (their elements are heap
 * strings the run frees), never in an arena. */

typedef struct mf_vplan {
    minfer_tensor_view view; /* dtype/rank/dims/layout; data for constants */
    int known;               /* contents known before any run */
    int dynamic;             /* shape known only at run time */
    void *owned;             /* constant storage owned by the plan */
    int where;               /* MF_W_* */
    int dom;                 /* memory domain: 0 host, 1 + provider index */
    int buffer;              /* arena buffer index (MF_W_ARENA) */
    uint64_t bytes;          /* storage bytes in its domain */
    int first, last;         /* steps of production and last use */
} mf_vplan;

typedef struct mf_nplan {
    minfer_value_desc *in_desc, *out_desc;
    minfer_node_desc desc;
    void *state;
    int prepared;
    int folded;  /* outputs are constants of the plan; never executed */
    int dynamic; /* inferred and prepared during each run */
    size_t workspace;
    int ws_buffer;       /* arena buffer of the workspace, or -1 */
    int32_t *inplace;
    uint64_t *layouts;
    int *in_ref;         /* per input: -1 its own storage, k >= 0 copy k,
                            -2 - m constant mirror m */
    double flops;        /* estimated per run, for profiles */
    int core;            /* run by the core (control flow, sequences) */
} mf_nplan;

/* One buffer placed in a domain's arena: values (several when in place),
 * copies and workspaces. */
typedef struct mf_buffer {
    int dom;
    uint64_t size, offset;
    int first, last;
    int value;   /* a value it holds (for reports), or -2 - node for a workspace */
} mf_buffer;

/* A value copied into another memory domain before step at_step. */
typedef struct mf_copy {
    int value;
    int to_dom;
    int at_step;
    int buffer;     /* -1 when aliased */
    uint64_t bytes;
    int alias;      /* a host value read in place by a host-addressable domain */
} mf_copy;

/* A constant uploaded once to a provider's domain. */
typedef struct mf_cmirror {
    int value;
    int dom;
    void *buf;
    uint64_t bytes;
} mf_cmirror;

typedef struct mf_plan {
    int concrete;
    int64_t *sig;
    size_t sig_len;
    int refs;            /* runs using it (guarded by the session lock) */
    uint64_t last_used;
    mf_vplan *vals;
    mf_nplan *nodes;
    mf_buffer *bufs;
    size_t n_bufs;
    mf_copy *copies;
    size_t n_copies;
    mf_cmirror *cmirrors;
    size_t n_cmirrors;
    uint64_t *arena_bytes; /* per domain */
    uint64_t *lower_bound; /* per domain */
    uint64_t *sum_bytes;   /* per domain: every buffer's size, no reuse */
    uint64_t const_bytes;
    int planner;
    double t_infer_ms, t_prepare_ms, t_plan_ms; /* build phases */
} mf_plan;

typedef struct mf_exec_ctx mf_exec_ctx;

/* A subgraph of a control-flow node, built as a session of its own: its
 * inputs are the subgraph's formal inputs, then the outer-scope values it
 * reads, each carried by the node input slot[k]. */
typedef struct mf_core_sub {
    minfer_session *s;
    size_t n_formal;
    int *slot;
    size_t n_captures;
} mf_core_sub;

/* s->assign[i] for a node the core runs itself (control.c). */
#define MF_ASSIGN_CORE (-2)

struct minfer_session {
    char *errctx;
    mf_graph *g;
    int log_level;
    int planner;
    size_t plan_cache_size;
    minfer_limits limits;
    minfer_run_limits run_limits;
    mf_pool *pool;
    int pool_shared;           /* a subgraph session borrows its parent's pool */
    mf_core_sub *subs;         /* 2 per node (If: then, else; others: body), or NULL */
    minfer_host_api api;
    mf_provider_inst *provs;
    size_t n_provs;
    size_t n_domains;          /* 1 + n_provs */
    mf_provider_inst eval_own; /* the evaluator when not in the list */
    mf_provider_inst *eval;    /* NULL: no folding */
    int *assign;               /* node -> provider index; -1 folded at build */
    mf_plan *build;            /* declared-shape plan (inference results) */
    mf_plan **plans;           /* cache of concrete plans */
    size_t n_plans;
    uint64_t tick;
    mf_plan *last_plan;        /* most recently used, for reports */
    mf_exec_ctx *free_ctx;     /* execution contexts not in use */
    pthread_mutex_t lock;      /* plans, contexts */
    minfer_value_info *in_info, *out_info;
    /* diagnostics */
    minfer_log_fn log_fn;
    void *log_user;
    int strict;
    int check_nan;
    char **declined;           /* per node: why earlier providers declined it */
    mf_trace *trace;           /* NULL: profiling off */
    char *profile_path;
    double *node_ms;           /* per node: profiled time (under lock) */
    uint64_t *node_runs;
    mf_stats stats;            /* under lock */
    double *stats_scratch;
};

/* Logging through the session's level. */
void mf_log(const minfer_session *s, int level, const char *fmt, ...) MF_PRINTF(3, 4);
/* "node 'x' (op Conv, domain ai.onnx, opset 13)" */
const char *mf_node_label(const mf_node *n, int idx, char *buf, size_t size);
/* Bytes of a plain tensor with v's shape: 0 when the shape or type is not
 * known, SIZE_MAX (never a wrapped count) when they do not fit. For views
 * whose size is already checked. */
size_t mf_view_bytes(const minfer_tensor_view *v);
/* Bytes of node's output o with shape v, checked: MINFER_ERR_LIMIT naming
 * the node, the value and the shape when the count overflows or is above
 * max_tensor_bytes. */
minfer_status mf_value_bytes(const minfer_session *s, int node, size_t o,
                             const minfer_tensor_view *v, size_t *out);
int mf_view_static(const minfer_tensor_view *v);
void *mf_alloc_host(size_t bytes);
int mf_dom_of_prov(const minfer_session *s, int prov);

mf_plan *mf_plan_new(minfer_session *s);
void mf_plan_free(minfer_session *s, mf_plan *p);
/* Inference and folding for the plan's input shapes. */
minfer_status mf_plan_infer(minfer_session *s, mf_plan *p);
/* Builds a concrete plan for input shapes sig (rank, dims... per input). */
minfer_status mf_plan_build(minfer_session *s, const int64_t *sig, size_t sig_len,
                            mf_plan **out);
/* Descriptor arrays for node i from per-value views (known flags from p). */
minfer_status mf_fill_desc(minfer_session *s, mf_plan *p, int i, const minfer_tensor_view *views,
                           minfer_value_desc *in, minfer_value_desc *out, minfer_node_desc *d);

/* The run handle behind minfer_host_api.alloc_output. */
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
    struct mf_budget *budget;    /* the run's (charge_work), or NULL at build */
} mf_run;
int mf_run_track(mf_run *r, void *ptr);
/* As mf_run_track, for storage of `strings` string elements (0: none). */
int mf_run_track_strings(mf_run *r, void *ptr, int64_t strings);
/* Frees everything tracked. */
void mf_run_free_temps(mf_run *r);

/* Execution (run.c). The plan for a signature, built if missing, with a
 * reference held until mf_plan_release. */
minfer_status mf_plan_acquire(minfer_session *s, const int64_t *sig, size_t sig_len,
                              mf_plan **out);
void mf_plan_release(minfer_session *s, mf_plan *p);
void mf_exec_ctx_free(minfer_session *s, mf_exec_ctx *c);

/* As mf_session_create_graph, reporting load_ms (>= 0) as the time loading
 * and validating took. */
minfer_status mf_session_create_graph_timed(mf_graph *g, const minfer_options *opt,
                                            const char *errctx, double load_ms,
                                            minfer_session **out);

/* A session for a control-flow node's subgraph g (owned in every case):
 * the parent's options, pool and limits, no profile of its own. */
minfer_status mf_session_create_sub(mf_graph *g, const minfer_options *opt, const char *errctx,
                                    minfer_session *parent, minfer_session **out);

/* ---- Ops the core runs (control.c): control flow (If, Loop, Scan,
 * SequenceMap), sequences and optionals. Their values live on the host;
 * nodes inside subgraphs run on providers as usual. */
/* 1 for an op the core always runs. */
int mf_core_op(const mf_node *n);
/* Output kinds and types of core node i (shapes are known only when it
 * runs). err gets a reason on failure. */
minfer_status mf_core_infer(minfer_session *s, int i, const minfer_tensor_view *in,
                            minfer_tensor_view *out, char *err, size_t err_size);
/* Builds the subgraph sessions of every control-flow node (after the build
 * plan's inference, which gives the types of captured values). */
minfer_status mf_core_build(minfer_session *s, const minfer_options *opt);
void mf_core_free(minfer_session *s);
/* What one minfer_session_run may still spend, shared by the subgraph runs
 * it makes (run.c). A run is executed by one thread, so plain counters. */
typedef struct mf_budget {
    uint64_t iterations, max_iterations; /* Loop, Scan, SequenceMap body runs */
    uint64_t elements, max_elements;     /* produced or charged */
    double deadline;                     /* mf_now_ms() time, or 0: none */
    uint64_t deadline_ms;
    const minfer_run_options *ro;        /* the caller's, or NULL */
} mf_budget;

/* minfer_run_options (options.c); only terminate changes during a run. */
struct minfer_run_options {
    char *tag;            /* NULL: none */
    int log_level;        /* -1: the session's */
    uint64_t deadline_ms; /* 0: only the session's run limit */
    atomic_int terminate;
};
/* The options of the run this thread is in (NULL outside one): mf_log
 * uses its log level and tag. */
extern _Thread_local const minfer_run_options *mf_current_run;
/* Counts one body run of core node i (and checks the deadline). */
minfer_status mf_budget_iteration(mf_budget *b, minfer_session *s, int i);
/* minfer_host_api.charge_work: work charged by the running node. */
minfer_status mf_host_charge_work(void *run, uint64_t work);
/* Charges n elements produced (or work) by node i; i < 0: the run itself. */
minfer_status mf_budget_elements(mf_budget *b, minfer_session *s, int i, uint64_t n);
/* Fails when the run's deadline has passed, naming node i (< 0: none). */
minfer_status mf_budget_time(mf_budget *b, minfer_session *s, int i);
/* Elements a value holds: a tensor's, or the sum over a sequence's or an
 * optional's items, each counting one more (saturating). */
uint64_t mf_value_elements(const minfer_tensor_view *v);
/* minfer_session_run for a subgraph session, spending the parent run's
 * budget. */
minfer_status mf_session_run_sub(minfer_session *s, mf_budget *b, const char *const *input_names,
                                 const minfer_tensor *const *inputs, size_t n_inputs,
                                 minfer_tensor **outputs, size_t n_outputs);

/* Runs core node i on host inputs; out[o] receives an owned value (tensor,
 * sequence or optional) for every output the node has. */
minfer_status mf_core_exec(minfer_session *s, mf_budget *b, int i, const minfer_tensor_view *in,
                           minfer_tensor **out);

/* Creates a session from a graph; takes ownership of g in every case.
 * errctx names the model ("model.onnx", "<memory>", "<builder>"). */
minfer_status mf_session_create_graph(mf_graph *g, const minfer_options *opt, const char *errctx,
                                      minfer_session **out);

#endif
