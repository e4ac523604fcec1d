/* Session options. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "session/session.h"
#include "place/plugin_loader.h"
#include "util/options.h"

minfer_status minfer_options_create(minfer_options **out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_create: out is NULL");
    *out = mf_calloc(1, sizeof **out);
    if (!*out)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_create: out of memory");
    (*out)->log_level = -1;
    (*out)->opt_level = -1;
    (*out)->planner = -1;
    (*out)->scheduler = -1;
    (*out)->inter_op = -1;
    (*out)->check_nan = -1;
    (*out)->precision = -1;
    return MINFER_OK;
}

static void clear_providers(minfer_options *opt) {
    for (size_t i = 0; i < opt->n_providers; i++)
        free(opt->providers[i]);
    free(opt->providers);
    opt->providers = NULL;
    opt->n_providers = 0;
}

minfer_status minfer_options_add_plugin(minfer_options *opt, const char *path_or_name) {
    if (!opt || !path_or_name)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_add_plugin: %s is NULL",
                        opt ? "path_or_name" : "opt");
    return mf_plugin_add_name(&opt->plugins, &opt->n_plugins, path_or_name);
}

void minfer_options_free(minfer_options *opt) {
    if (!opt)
        return;
    clear_providers(opt);
    for (size_t i = 0; i < opt->n_prov_opts; i++) {
        free(opt->prov_opt_names[i]);
        free(opt->prov_opt_values[i]);
    }
    free(opt->prov_opt_names);
    free(opt->prov_opt_values);
    free(opt->profile_path);
    for (size_t i = 0; i < opt->n_dims; i++)
        free(opt->dims[i].name);
    free(opt->dims);
    for (size_t i = 0; i < opt->n_plugins; i++)
        free(opt->plugins[i]);
    free(opt->plugins);
    minfer_thread_pool_free(opt->thread_pool);
    free(opt);
}

minfer_status minfer_options_set_providers(minfer_options *opt, const char *const *names,
                                           size_t count) {
    if (!opt || (count && !names))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_providers: NULL argument");
    char **list = mf_calloc(count ? count : 1, sizeof *list);
    if (!list)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_providers: out of memory");
    for (size_t i = 0; i < count; i++) {
        if (!names[i] || !names[i][0]) {
            for (size_t j = 0; j < i; j++)
                free(list[j]);
            free(list);
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "minfer_options_set_providers: provider name %zu is empty", i);
        }
        list[i] = mf_strdup(names[i]);
        if (!list[i]) {
            for (size_t j = 0; j < i; j++)
                free(list[j]);
            free(list);
            return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_providers: out of memory");
        }
    }
    clear_providers(opt);
    opt->providers = list;
    opt->n_providers = count;
    return MINFER_OK;
}

minfer_status minfer_options_set_providers_str(minfer_options *opt, const char *list) {
    if (!opt || !list)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_providers_str: NULL argument");
    char *copy = mf_strdup(list);
    const char *names[64];
    size_t n = 0;
    if (!copy)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_providers_str: out of memory");
    for (char *save = NULL, *tok = strtok_r(copy, ", \t", &save); tok;
         tok = strtok_r(NULL, ", \t", &save)) {
        if (n == sizeof names / sizeof names[0]) {
            free(copy);
            return mf_error(MINFER_ERR_LIMIT, "provider list '%s' names more than %zu providers",
                            list, sizeof names / sizeof names[0]);
        }
        names[n++] = tok;
    }
    if (n == 0) {
        free(copy);
        return mf_error(MINFER_ERR_INVALID_ARG, "provider list '%s' names no provider", list);
    }
    minfer_status st = minfer_options_set_providers(opt, names, n);
    free(copy);
    return st;
}

minfer_status minfer_options_set_threads(minfer_options *opt, int threads) {
    if (!opt || threads < 0 || threads > MINFER_MAX_THREADS)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_threads: thread count %d is not in 0..%d", threads,
                        MINFER_MAX_THREADS);
    opt->threads = threads;
    return MINFER_OK;
}

minfer_status minfer_options_set_log_level(minfer_options *opt, minfer_log_level level) {
    if (!opt || level < MINFER_LOG_ERROR || level > MINFER_LOG_VERBOSE)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_log_level: bad level %d",
                        (int)level);
    opt->log_level = (int)level;
    return MINFER_OK;
}

minfer_status minfer_options_set_optimization_level(minfer_options *opt, int level) {
    if (!opt || level < 0 || level > 3)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_optimization_level: level %d is not in 0..3", level);
    opt->opt_level = level;
    return MINFER_OK;
}

minfer_status minfer_options_set_planner(minfer_options *opt, minfer_planner planner) {
    if (!opt || (planner != MINFER_PLANNER_GREEDY && planner != MINFER_PLANNER_LINEAR))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_planner: bad planner %d",
                        (int)planner);
    opt->planner = (int)planner;
    return MINFER_OK;
}

minfer_status minfer_options_set_scheduler(minfer_options *opt, minfer_scheduler scheduler) {
    if (!opt || (scheduler != MINFER_SCHED_SEQUENTIAL && scheduler != MINFER_SCHED_PARALLEL &&
                 scheduler != MINFER_SCHED_PIPELINE))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_scheduler: bad scheduler %d",
                        (int)scheduler);
    opt->scheduler = (int)scheduler;
    return MINFER_OK;
}

minfer_status minfer_options_set_inter_op_threads(minfer_options *opt, int threads) {
    if (!opt || threads < 0 || threads > MINFER_MAX_THREADS)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_inter_op_threads: thread count %d is not in 0..%d",
                        threads, MINFER_MAX_THREADS);
    opt->inter_op = threads;
    return MINFER_OK;
}

/* MINFER_SCHEDULER and MINFER_INTER_OP_THREADS are read here, where the
 * options they stand in for are resolved; a value that is not one of the
 * names (numbers) is an error naming it, not a silent default. */
minfer_status mf_options_schedule(const minfer_options *opt, const char *errctx, int *scheduler,
                                  int *inter_op) {
    const char *e = secure_getenv("MINFER_SCHEDULER");
    *scheduler = MINFER_SCHED_SEQUENTIAL;
    *inter_op = 0;
    if (opt && opt->scheduler >= 0)
        *scheduler = opt->scheduler;
    else if (e && e[0]) {
        if (strcmp(e, "parallel") == 0)
            *scheduler = MINFER_SCHED_PARALLEL;
        else if (strcmp(e, "pipeline") == 0)
            *scheduler = MINFER_SCHED_PIPELINE;
        else if (strcmp(e, "sequential") != 0)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "%s: MINFER_SCHEDULER='%s' is not a scheduler (sequential, parallel, "
                            "pipeline)",
                            errctx, e);
    }
    e = secure_getenv("MINFER_INTER_OP_THREADS");
    if (opt && opt->inter_op >= 0)
        *inter_op = opt->inter_op;
    else if (e && e[0]) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end || v < 0 || v > MINFER_MAX_THREADS)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "%s: MINFER_INTER_OP_THREADS='%s' is not a thread count in 0..%d",
                            errctx, e, MINFER_MAX_THREADS);
        *inter_op = (int)v;
    }
    return MINFER_OK;
}

minfer_status minfer_options_set_precision(minfer_options *opt, minfer_precision precision) {
    if (!opt || (precision != MINFER_PRECISION_FP32 && precision != MINFER_PRECISION_BF16))
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_precision: %s (use MINFER_PRECISION_FP32 or "
                        "MINFER_PRECISION_BF16)",
                        opt ? "not a precision" : "NULL options");
    opt->precision = (int)precision;
    return MINFER_OK;
}

minfer_status minfer_options_set_queue_depth(minfer_options *opt, size_t depth) {
    if (!opt || depth > 65536)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_queue_depth: NULL options or depth %zu above 65536",
                        depth);
    opt->queue_depth = depth;
    return MINFER_OK;
}

minfer_status minfer_options_set_micro_batch(minfer_options *opt, int64_t rows) {
    if (!opt || rows < 0)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_micro_batch: NULL options or negative rows %lld",
                        (long long)rows);
    opt->micro_batch = rows;
    return MINFER_OK;
}

minfer_status minfer_options_set_plan_cache_size(minfer_options *opt, size_t plans) {
    if (!opt || plans < 1 || plans > 1024)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_plan_cache_size: %zu is not in 1..1024", plans);
    opt->plan_cache_size = plans;
    return MINFER_OK;
}

minfer_status minfer_options_set_limits(minfer_options *opt, const minfer_limits *limits) {
    if (!opt || !limits)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_limits: NULL argument");
    opt->limits = *limits;
    return MINFER_OK;
}

minfer_status minfer_options_set_run_limits(minfer_options *opt, const minfer_run_limits *limits) {
    if (!opt || !limits)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_run_limits: NULL argument");
    if (limits->struct_size < sizeof(uint32_t) || limits->struct_size > 4096)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_run_limits: struct_size %u is not the size of a "
                        "minfer_run_limits (set it to sizeof(minfer_run_limits))",
                        (unsigned)limits->struct_size);
    /* Members past the caller's struct_size were not in its header: they
     * keep their defaults (0). */
    minfer_run_limits l;
    memset(&l, 0, sizeof l);
    memcpy(&l, limits, limits->struct_size < sizeof l ? limits->struct_size : sizeof l);
    l.struct_size = sizeof l;
    opt->run_limits = l;
    return MINFER_OK;
}

minfer_status minfer_options_set_provider_options(minfer_options *opt, const char *provider,
                                                  const char *options) {
    if (!opt || !provider || !provider[0] || !options)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_provider_options: NULL or empty argument");
    for (size_t i = 0; i < opt->n_prov_opts; i++)
        if (strcmp(opt->prov_opt_names[i], provider) == 0) {
            char *v = mf_strdup(options);
            if (!v)
                return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_provider_options: out of memory");
            free(opt->prov_opt_values[i]);
            opt->prov_opt_values[i] = v;
            return MINFER_OK;
        }
    char **names = mf_realloc(opt->prov_opt_names, (opt->n_prov_opts + 1) * sizeof *names);
    if (!names)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_provider_options: out of memory");
    opt->prov_opt_names = names;
    char **values = mf_realloc(opt->prov_opt_values, (opt->n_prov_opts + 1) * sizeof *values);
    if (!values)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_provider_options: out of memory");
    opt->prov_opt_values = values;
    char *n = mf_strdup(provider), *v = mf_strdup(options);
    if (!n || !v) {
        free(n);
        free(v);
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_provider_options: out of memory");
    }
    names[opt->n_prov_opts] = n;
    values[opt->n_prov_opts] = v;
    opt->n_prov_opts++;
    return MINFER_OK;
}

minfer_status minfer_options_add_provider_option(minfer_options *opt, const char *provider,
                                                 const char *key, const char *value) {
    if (!opt || !provider || !provider[0] || !key || !value)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_add_provider_option: NULL or empty argument");
    if (!key[0] || strpbrk(key, ",=") || strchr(value, ','))
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "provider option '%s'='%s': keys cannot be empty or hold ',', '=' or "
                        "NUL, values cannot hold ',' or NUL (the options are passed as "
                        "'key=value,key=value')", key, value);
    const char *old = "";
    for (size_t i = 0; i < opt->n_prov_opts; i++)
        if (strcmp(opt->prov_opt_names[i], provider) == 0)
            old = opt->prov_opt_values[i];
    /* the string without key's earlier entries, then key=value */
    size_t klen = strlen(key), cap = strlen(old) + klen + strlen(value) + 3;
    char *s = mf_malloc(cap), *at = s;
    if (!s)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_add_provider_option: out of memory");
    for (const char *p = old; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len && !(len >= klen && strncmp(p, key, klen) == 0 && (len == klen || p[klen] == '='))) {
            if (at > s)
                *at++ = ',';
            memcpy(at, p, len);
            at += len;
        }
        p += len + (e != NULL);
    }
    snprintf(at, cap - (size_t)(at - s), "%s%s=%s", at > s ? "," : "", key, value);
    minfer_status st = minfer_options_set_provider_options(opt, provider, s);
    free(s);
    return st;
}

minfer_status minfer_options_set_log_callback(minfer_options *opt, minfer_log_fn fn, void *user) {
    if (!opt)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_log_callback: NULL options");
    opt->log_fn = fn;
    opt->log_user = user;
    return MINFER_OK;
}

minfer_status minfer_options_set_strict_placement(minfer_options *opt, int strict) {
    if (!opt)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_strict_placement: NULL options");
    opt->strict = strict != 0;
    return MINFER_OK;
}

minfer_status minfer_options_set_profiling(minfer_options *opt, const char *path) {
    if (!opt)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_profiling: NULL options");
    char *copy = NULL;
    if (path && path[0] && !(copy = mf_strdup(path)))
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_profiling: out of memory");
    free(opt->profile_path);
    opt->profile_path = copy;
    return MINFER_OK;
}

minfer_status minfer_options_set_creation_deadline(minfer_options *opt, uint64_t ms) {
    if (!opt)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_creation_deadline: NULL options");
    if (ms > (uint64_t)1 << 40)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_creation_deadline: %llu ms is above 2^40 ms",
                        (unsigned long long)ms);
    opt->creation_deadline_ms = ms;
    return MINFER_OK;
}

minfer_status minfer_options_set_check_nan(minfer_options *opt, int on) {
    if (!opt)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_check_nan: NULL options");
    opt->check_nan = on != 0;
    return MINFER_OK;
}

/* ---- free-dimension overrides ---------------------------------------------- */

#define MAX_DIM_VALUE ((int64_t)1 << 40) /* larger sizes fail the tensor limit anyway */

static minfer_status add_dim(minfer_options *opt, const char *fn, const char *name, int by_input,
                             int axis, int64_t value) {
    if (!opt || !name || !name[0])
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: NULL options or empty name", fn);
    if (value < 0 || value > MAX_DIM_VALUE)
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: size %lld for '%s' is not in 0..2^40", fn,
                        (long long)value, name);
    if (by_input && (axis < 0 || axis >= MINFER_MAX_RANK))
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: axis %d of input '%s' is not in 0..%d", fn,
                        axis, name, MINFER_MAX_RANK - 1);
    /* Setting one again replaces its value. */
    for (size_t i = 0; i < opt->n_dims; i++) {
        mf_dim_override *d = &opt->dims[i];
        if (d->by_input == by_input && strcmp(d->name, name) == 0 && (!by_input || d->axis == axis)) {
            d->value = value;
            return MINFER_OK;
        }
    }
    mf_dim_override *v = mf_realloc(opt->dims, (opt->n_dims + 1) * sizeof *v);
    if (!v)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", fn);
    opt->dims = v;
    char *copy = mf_strdup(name);
    if (!copy)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", fn);
    v[opt->n_dims++] = (mf_dim_override){copy, by_input, axis, value};
    return MINFER_OK;
}

minfer_status minfer_options_set_dim(minfer_options *opt, const char *name, int64_t value) {
    return add_dim(opt, "minfer_options_set_dim", name, 0, 0, value);
}

minfer_status minfer_options_set_input_dim(minfer_options *opt, const char *input, int axis,
                                           int64_t value) {
    return add_dim(opt, "minfer_options_set_input_dim", input, 1, axis, value);
}

/* Whether a dimension of an input before (k, d) has this symbolic name. */
static int named_before(const mf_graph *g, size_t k, int d, const char *name) {
    for (size_t k2 = 0; k2 <= k; k2++) {
        const mf_value *v = &g->values[g->inputs[k2]];
        for (int d2 = 0; d2 < (k2 == k ? d : v->rank); d2++)
            if (v->dim_params[d2] && strcmp(v->dim_params[d2], name) == 0)
                return 1;
    }
    return 0;
}

/* The graph inputs' names, or their symbolic dimension names, for a message. */
static void list_inputs(const mf_graph *g, int symbolic, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        for (int d = 0; d < (symbolic ? v->rank : 1); d++) {
            const char *name = symbolic ? v->dim_params[d] : v->name;
            if (!name || (symbolic && named_before(g, k, d, name)))
                continue;
            int w = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", name);
            if (w < 0 || (size_t)w >= size - used)
                return;
            used += (size_t)w;
        }
    }
    if (!used)
        snprintf(buf, size, "none");
}

minfer_status mf_apply_dim_overrides(mf_graph *g, const minfer_options *opt, const char *errctx) {
    char list[1024];
    for (size_t i = 0; opt && i < opt->n_dims; i++) {
        const mf_dim_override *o = &opt->dims[i];
        size_t hits = 0;
        for (size_t k = 0; k < g->n_inputs; k++) {
            mf_value *v = &g->values[g->inputs[k]];
            if (o->by_input && strcmp(v->name, o->name) != 0)
                continue;
            if (o->by_input) {
                hits++;
                if (v->kind != MINFER_VALUE_TENSOR || v->rank < 0 || o->axis >= v->rank)
                    return mf_error(MINFER_ERR_SHAPE,
                                    "%s: cannot set axis %d of input '%s': it %s", errctx,
                                    o->axis, v->name,
                                    v->kind != MINFER_VALUE_TENSOR ? "is not a tensor"
                                    : v->rank < 0 ? "declares no shape"
                                                  : "has fewer dimensions");
                if (v->dims[o->axis] >= 0 && v->dims[o->axis] != o->value)
                    return mf_error(MINFER_ERR_SHAPE,
                                    "%s: cannot set axis %d of input '%s' to %lld: the model "
                                    "fixes it at %lld",
                                    errctx, o->axis, v->name, (long long)o->value,
                                    (long long)v->dims[o->axis]);
                v->dims[o->axis] = o->value;
                continue;
            }
            for (int d = 0; d < v->rank; d++)
                if (v->dim_params[d] && strcmp(v->dim_params[d], o->name) == 0) {
                    v->dims[d] = o->value;
                    hits++;
                }
        }
        if (!hits) {
            list_inputs(g, !o->by_input, list, sizeof list);
            return mf_error(MINFER_ERR_NOT_FOUND,
                            o->by_input ? "%s: cannot set a dimension of '%s': no input has that "
                                          "name (inputs: %s)"
                                        : "%s: cannot set dimension '%s': no input has a "
                                          "dimension of that name (symbolic dimensions: %s)",
                            errctx, o->name, list);
        }
    }
    return MINFER_OK;
}

/* ---- run options ---------------------------------------------------------- */

minfer_status minfer_run_options_create(minfer_run_options **out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_run_options_create: out is NULL");
    *out = mf_calloc(1, sizeof **out);
    if (!*out)
        return mf_error(MINFER_ERR_NOMEM, "minfer_run_options_create: out of memory");
    (*out)->log_level = -1;
    atomic_init(&(*out)->terminate, 0);
    return MINFER_OK;
}

void minfer_run_options_free(minfer_run_options *ro) {
    if (!ro)
        return;
    free(ro->tag);
    free(ro);
}

minfer_status minfer_run_options_set_tag(minfer_run_options *ro, const char *tag) {
    if (!ro)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_run_options_set_tag: NULL run options");
    char *copy = NULL;
    if (tag && tag[0] && !(copy = mf_strdup(tag)))
        return mf_error(MINFER_ERR_NOMEM, "minfer_run_options_set_tag: out of memory");
    free(ro->tag);
    ro->tag = copy;
    return MINFER_OK;
}

minfer_status minfer_run_options_set_log_level(minfer_run_options *ro, minfer_log_level level) {
    if (!ro || level < MINFER_LOG_ERROR || level > MINFER_LOG_VERBOSE)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_run_options_set_log_level: bad level %d",
                        (int)level);
    ro->log_level = (int)level;
    return MINFER_OK;
}

minfer_status minfer_run_options_set_deadline_ms(minfer_run_options *ro, uint64_t ms) {
    if (!ro)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_run_options_set_deadline_ms: NULL run options");
    ro->deadline_ms = ms;
    return MINFER_OK;
}

minfer_status minfer_run_options_terminate(minfer_run_options *ro) {
    if (!ro)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_run_options_terminate: NULL run options");
    atomic_store_explicit(&ro->terminate, 1, memory_order_relaxed);
    return MINFER_OK;
}

minfer_status minfer_run_options_unset_terminate(minfer_run_options *ro) {
    if (!ro)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_run_options_unset_terminate: NULL run options");
    atomic_store_explicit(&ro->terminate, 0, memory_order_relaxed);
    return MINFER_OK;
}
