/*
 * Plans (plan/plan.c): what one signature of input shapes needs to run,
 * read-only once built, so any number of runs may share it; everything a
 * run writes lives in its execution context (exec/).
 *
 * A plan is built by plan/build.c (inference and folding run nodes, through
 * plan/node_once.c), which calls the two memory passes here:
 *
 *     mf_plan *p = mf_plan_new(s);
 *     ... inference, folding (plan/build.c) ...
 *     mf_plan_storage(s, p);   // storage class and home domain per value
 *     ... prepare every node (plan/build.c) ...
 *     mf_plan_memory(s, p);    // liveness, copies, in place, arena offsets
 *
 * Included by exec/ and session/ (and plan/ itself); never by place or an
 * earlier stage.
 */
#ifndef MINFER_CORE_PLAN_H
#define MINFER_CORE_PLAN_H

#include "place/place.h"

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
    int prov;            /* the provider that prepared it (state's owner), or -1 */
    int folded;  /* outputs are constants of the plan; never executed */
    int dynamic; /* inferred and prepared during each run */
    size_t workspace;
    int ws_buffer;       /* arena buffer of the workspace, or -1 */
    int32_t *inplace;
    uint64_t *layouts;
    int *in_ref;         /* per input: -1 its own storage, k >= 0 copy k,
                            -2 - m constant mirror m */
    uint8_t *packed;     /* per input: the provider copied the constant into
                            its own storage (minfer_node_prep.const_packed) */
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

struct mf_plan {
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
    struct mf_conc *conc;  /* the parallel scheduler's dependencies (plan_concurrent.h), or NULL:
                              the plan runs in order */
    const char *conc_why;  /* parallel scheduler, conc NULL: why (a constant string) */
};

/* A plan with every value as the graph declares it (initializers known);
 * NULL when out of memory. */
mf_plan *mf_plan_new(minfer_session *s);
/* Frees p and releases its prepared node states (p may be NULL). */
void mf_plan_free(minfer_session *s, mf_plan *p);
/* Descriptor arrays for node i from per-value views (views NULL: the
 * plan's own), known flags and constants from p. */
minfer_status mf_fill_desc(minfer_session *s, mf_plan *p, int i, const minfer_tensor_view *views,
                           minfer_value_desc *in, minfer_value_desc *out, minfer_node_desc *d);
/* The plan's own descriptor arrays for node i (ns->desc), made on first
 * use, with in-place and layout answers reset. */
minfer_status mf_plan_node_desc(minfer_session *s, mf_plan *p, int i);
/* Releases node i's prepared state with the provider that made it. */
void mf_plan_release_node(minfer_session *s, mf_plan *p, int i);

/* Pass 2 of a build: each value's storage class and home domain, and the
 * step that produces it. */
minfer_status mf_plan_storage(minfer_session *s, mf_plan *p);
/* Passes 4-6 of a build, once every node is prepared: liveness, copies
 * between domains and constant uploads, in place, arena offsets. */
minfer_status mf_plan_memory(minfer_session *s, mf_plan *p);

/* ---- The plan cache's signature -------------------------------------------
 *
 * A plan is found by the signature of a run's inputs: per graph input, in
 * order, kind << 8 | element type, then the rank and the dimensions (a
 * sequence or an optional: rank -1 and no dimensions). The one encoder and
 * decoder; MF_SIG_ENTRIES(n) entries hold the signature of n inputs. */
#define MF_SIG_ENTRIES(n_inputs) ((n_inputs) * (MINFER_MAX_RANK + 2))
/* Appends one input at sig[pos]; returns the position after it. */
size_t mf_sig_put(int64_t *sig, size_t pos, int32_t kind, int32_t dtype, int32_t rank,
                  const int64_t *dims);
/* Reads the input at sig[pos] into v's kind, dtype, rank and dims; returns
 * the position after it. */
size_t mf_sig_get(const int64_t *sig, size_t pos, minfer_tensor_view *v);

#endif
