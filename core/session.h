/* Session internals shared between session.c, builder.c and options.c. */
#ifndef MINFER_CORE_SESSION_H
#define MINFER_CORE_SESSION_H

#include "graph.h"
#include "internal.h"

struct minfer_options {
    char **providers; /* preference list, or NULL when not set */
    size_t n_providers;
    int threads;      /* 0: one per online CPU */
    int log_level;    /* -1: not set (MINFER_LOG or WARN) */
    int opt_level;    /* -1: not set (MINFER_OPT_LEVEL or 3) */
    int planner;      /* -1: not set (MINFER_PLANNER or greedy) */
    size_t plan_cache_size; /* 0: default */
    minfer_limits limits;   /* 0 fields: defaults */
    char **prov_opt_names;  /* per-provider option strings */
    char **prov_opt_values;
    size_t n_prov_opts;
};

#define MF_DEFAULT_MAX_MODEL_BYTES ((uint64_t)2 << 30)
#define MF_DEFAULT_MAX_TENSOR_BYTES ((uint64_t)16 << 30)
#define MF_DEFAULT_MAX_NODES ((uint64_t)1000000)
#define MF_DEFAULT_PLAN_CACHE 4

/* The option string for a provider ("" when none). */
const char *mf_options_provider_options(const minfer_options *opt, const char *provider);
/* Effective limits: opt's non-zero fields, else the defaults. */
minfer_limits mf_options_limits(const minfer_options *opt);

/* Creates a session from a graph; takes ownership of g in every case.
 * errctx names the model ("model.onnx", "<memory>", "<builder>"). */
minfer_status mf_session_create_graph(mf_graph *g, const minfer_options *opt, const char *errctx,
                                      minfer_session **out);

#endif
