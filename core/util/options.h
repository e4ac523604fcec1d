/*
 * The options a session is built with (minfer_options), as data, and the
 * functions that read them: effective limits and each provider's option
 * string. The public setters are session/options.c; every stage may read
 * options, so the struct lives here, in util/. May be included by every file
 * of the core.
 */
#ifndef MINFER_CORE_OPTIONS_H
#define MINFER_CORE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "minfer/minfer.h"
#include "util/internal.h"

/* minfer_options_set_dim (input NULL: by symbolic name) and
 * minfer_options_set_input_dim (name is the input's, at axis). */
typedef struct mf_dim_override {
    char *name;
    int by_input;
    int axis;
    int64_t value;
} mf_dim_override;

struct minfer_options {
    char **providers; /* preference list, or NULL when not set */
    size_t n_providers;
    int threads;      /* 0: one per online CPU */
    int log_level;    /* -1: not set (MINFER_LOG or WARN) */
    int opt_level;    /* -1: not set (MINFER_OPT_LEVEL or 3) */
    int planner;      /* -1: not set (MINFER_PLANNER or greedy) */
    int scheduler;    /* -1: not set (MINFER_SCHEDULER or sequential) */
    int inter_op;     /* -1: not set (MINFER_INTER_OP_THREADS or 0: the pool's threads) */
    size_t queue_depth; /* asynchronous runs: 0 default (session/async.c) */
    int64_t micro_batch; /* asynchronous runs: 0 no split */
    size_t plan_cache_size; /* 0: default */
    minfer_limits limits;   /* 0 fields: defaults */
    minfer_run_limits run_limits; /* 0 fields: defaults */
    minfer_log_fn log_fn;
    void *log_user;
    int strict;             /* strict placement */
    char *profile_path;     /* NULL: no profiling */
    int check_nan;          /* -1: not set (MINFER_CHECK_NAN) */
    uint64_t creation_deadline_ms; /* 0: none */
    char **prov_opt_names;  /* per-provider option strings */
    char **prov_opt_values;
    size_t n_prov_opts;
    mf_dim_override *dims;  /* free-dimension overrides, in the order set */
    size_t n_dims;
    int precision;          /* -1: not set (MINFER_PRECISION or fp32) */
    char **plugins;         /* minfer_options_add_plugin: paths or names, in order */
    size_t n_plugins;
    minfer_thread_pool *thread_pool; /* minfer_options_set_thread_pool, held; or NULL */
};

#define MF_DEFAULT_MAX_MODEL_BYTES ((uint64_t)2 << 30)
/* The tensor-bytes default: a quarter of physical memory, at most this */
#define MF_DEFAULT_MAX_TENSOR_BYTES ((uint64_t)4 << 30)
#define MF_DEFAULT_MAX_NODES ((uint64_t)1000000)
#define MF_DEFAULT_MAX_LOOP_ITERATIONS ((uint64_t)1000000)
#define MF_DEFAULT_MAX_RUN_ELEMENTS ((uint64_t)1 << 34)
#define MF_DEFAULT_PLAN_CACHE 4

/* The option string for a provider ("" when none; opt may be NULL). */
const char *mf_options_provider_options(const minfer_options *opt, const char *provider);
/* Effective limits: opt's non-zero fields, else the defaults (opt may be
 * NULL: the defaults). */
minfer_limits mf_options_limits(const minfer_options *opt);
/* The scheduler and inter-op thread count: opt's, else the environment's
 * (MINFER_SCHEDULER, MINFER_INTER_OP_THREADS), else sequential and 0; a
 * bad environment value is an error (session/options.c). */
minfer_status mf_options_schedule(const minfer_options *opt, const char *errctx, int *scheduler,
                                  int *inter_op);
/* The compute precision: opt's, else MINFER_PRECISION's ("fp32", "bf16"),
 * else MINFER_PRECISION_FP32; a bad environment value is an error
 * (util/options.c: placement reads it, below session/). */
minfer_status mf_options_precision(const minfer_options *opt, const char *errctx,
                                   int *precision);
/* Effective run budgets: opt's non-zero fields, else the defaults. */
minfer_run_limits mf_options_run_limits(const minfer_options *opt);

#endif
