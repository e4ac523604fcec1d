/*
 * Sessions: the build pipeline.
 *
 * minfer_session_create*:
 *  1. load the model into the IR and validate it (onnx_load.c, graph.c);
 *  2. open the providers of the preference list, skipping (with a warning)
 *     any that cannot load; the CPU provider is also opened, privately, as
 *     the evaluator for constant folding if the list does not name it;
 *  3. infer shapes for the declared input shapes (symbolic dims unknown),
 *     folding every node whose inputs are all known (plan.c): a shape
 *     mismatch fails here, before anything runs;
 *  4. assign each remaining node, in topological order, to the first
 *     provider whose supports_operator accepts it;
 *  5. if every input shape is static, build the run plan now (plan.c);
 *     otherwise the first run with new shapes builds one (run.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "graph/graph.h"
#include "util/internal.h"
#include "load/mfc.h"
#include "optimize/optimizer.h"
#include "place/provider_loader.h"
#include "place/plugin_loader.h"
#include "session/session.h"
#include "shapes/shape_infer.h"
#include "exec/threadpool.h"

#define DEFAULT_PROVIDERS "onednn,opencl,cpu"
#define FOLD_MAX_ELEMS 65536 /* largest constant the folder materialises per output */
#define HOST_ALIGN 64
#define EVAL_PROVIDER "cpu"

/* ---- logging and host API ---------------------------------------------- */

static const char *level_name(int level) {
    static const char *names[] = {"error", "warn", "info", "verbose"};
    return level >= 0 && level <= 3 ? names[level] : "log";
}

_Thread_local const minfer_run_options *mf_current_run;

/* Inside a run with minfer_run_options, its log level applies and its tag
 * opens the message: "[tag] ...". */
static void vlog_msg(const minfer_session *s, int level, const char *fmt, va_list ap) {
    const minfer_run_options *ro = mf_current_run;
    int max = ro && ro->log_level >= 0 ? ro->log_level : s ? s->log_level : MINFER_LOG_WARN;
    if (level > max)
        return;
    char msg[2048];
    int k = ro && ro->tag ? snprintf(msg, sizeof msg, "[%s] ", ro->tag) : 0;
    k = k > 0 && (size_t)k < sizeof msg ? k : 0;
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    if (s && s->log_fn) {
        s->log_fn(s->log_user, (minfer_log_level)level, msg);
        return;
    }
    /* One fprintf, so lines from concurrent runs do not interleave. */
    fprintf(stderr, "minfer %s: %s\n", level_name(level), msg);
}

void mf_log(const minfer_session *s, int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog_msg(s, level, fmt, ap);
    va_end(ap);
}

static void host_log(void *host, int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog_msg(host, level, fmt, ap);
    va_end(ap);
}

static void host_set_error(void *host, const char *fmt, ...) {
    char buf[1536];
    va_list ap;
    (void)host;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    mf_error(MINFER_ERR_RUNTIME, "%s", buf);
}

static int host_num_threads(void *host) {
    const minfer_session *s = host;
    return s ? mf_pool_threads(s->pool) : 1;
}

static void host_parallel_for(void *host, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    minfer_session *s = host;
    mf_pool_parallel_for(s ? s->pool : NULL, n, grain, fn, arg);
}

void *mf_alloc_host(size_t bytes) {
    void *p = NULL;
    size_t rounded = (bytes + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN;
    if (rounded == 0)
        rounded = HOST_ALIGN;
    if (mf_test_alloc_fails() || posix_memalign(&p, HOST_ALIGN, rounded) != 0)
        return NULL;
    memset(p, 0, rounded);
    return p;
}

static minfer_status host_alloc_output(void *run, size_t index, int32_t rank, const int64_t *dims) {
    mf_run *r = run;
    int64_t numel;
    size_t bytes;
    minfer_status st;
    if (!r || index >= r->n_outputs || rank < 0 || rank > MINFER_MAX_RANK || (rank && !dims))
        return mf_error(MINFER_ERR_INVALID_ARG, "alloc_output: bad arguments");
    minfer_tensor_view *v = &r->outputs[index];
    minfer_tensor_view want = *v;
    want.rank = rank;
    for (int d = 0; d < rank; d++)
        want.dims[d] = dims[d];
    if ((st = mf_value_bytes(r->s, r->node, index, &want, &bytes)) != MINFER_OK)
        return st;
    numel = bytes / minfer_elem_size(v->dtype);
    void *mem = mf_alloc_host(bytes);
    if (!mem || mf_run_track_strings(r, mem, v->dtype == MINFER_DTYPE_STRING ? numel : 0) != 0) {
        free(mem);
        return mf_error(MINFER_ERR_NOMEM, "alloc_output: out of memory for %zu bytes", bytes);
    }
    v->rank = rank;
    for (int d = 0; d < rank; d++)
        v->dims[d] = dims[d];
    v->data = mem;
    v->offset = 0;
    v->nbytes = bytes;
    /* The value keeps this shape and storage for its consumers. */
    int vi = r->s->g->nodes[r->node].outputs[index];
    if (vi >= 0) {
        if (r->views)
            r->views[vi] = *v;
        else
            r->p->vals[vi].view = *v;
    }
    return MINFER_OK;
}

/* ---- small helpers ------------------------------------------------------ */

const char *mf_node_label(const mf_node *n, int idx, char *buf, size_t size) {
    const char *dom = n->domain[0] ? n->domain : "ai.onnx";
    if (n->name[0])
        snprintf(buf, size, "node '%s' (op %s, domain %s, opset %lld)", n->name, n->op_type, dom,
                 (long long)n->opset);
    else
        snprintf(buf, size, "node #%d (op %s, domain %s, opset %lld)", idx, n->op_type, dom,
                 (long long)n->opset);
    return buf;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int mf_view_static(const minfer_tensor_view *v) {
    if (v->rank < 0)
        return 0;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0)
            return 0;
    return 1;
}

size_t mf_view_bytes(const minfer_tensor_view *v) {
    size_t b;
    /* 0 for a view whose shape or type is not known (nothing is stored
     * yet); SIZE_MAX, never 0 or a wrapped count, for a shape that does
     * not fit: an allocation or a limit check then fails instead of
     * planning a small buffer. Sizes that can be that large go through
     * mf_value_bytes, which says why. */
    if (!mf_view_static(v) || minfer_elem_size(v->dtype) == 0)
        return 0;
    return minfer_view_nbytes(v, &b) == MINFER_OK ? b : SIZE_MAX;
}

minfer_status mf_value_bytes(const minfer_session *s, int node, size_t o,
                             const minfer_tensor_view *v, size_t *out) {
    char lbl[512], shape[160];
    const mf_node *n = &s->g->nodes[node];
    int vi = n->outputs[o];
    const char *name = vi >= 0 ? s->g->values[vi].name : "";
    size_t bytes;
    minfer_status st = minfer_view_nbytes(v, &bytes);
    if (st == MINFER_ERR_UNSUPPORTED)
        return mf_error(st, "%s: %s output %zu '%s' has element type %d, which has no size",
                        s->errctx, mf_node_label(n, node, lbl, sizeof lbl), o, name,
                        (int)v->dtype);
    if (st != MINFER_OK)
        return mf_error(MINFER_ERR_LIMIT,
                        "%s: %s output %zu '%s' of shape %s and type %s has more elements or "
                        "bytes than fit in memory",
                        s->errctx, mf_node_label(n, node, lbl, sizeof lbl), o, name,
                        mf_shape_str(v->dims, v->rank, shape, sizeof shape),
                        minfer_dtype_name((minfer_dtype)v->dtype));
    if (bytes > s->limits.max_tensor_bytes)
        return mf_error(MINFER_ERR_LIMIT,
                        "%s: %s output %zu '%s' of shape %s would take %zu bytes, above the "
                        "tensor limit of %llu bytes",
                        s->errctx, mf_node_label(n, node, lbl, sizeof lbl), o, name,
                        mf_shape_str(v->dims, v->rank, shape, sizeof shape), bytes,
                        (unsigned long long)s->limits.max_tensor_bytes);
    *out = bytes;
    return MINFER_OK;
}

/* ---- provider selection -------------------------------------------------- */

static minfer_status open_providers(minfer_session *s, const minfer_options *opt) {
    char **names = NULL;
    size_t n = 0;
    int from_default = 0;
    char *copy = NULL;
    minfer_status st = MINFER_OK;
    const char *env = getenv("MINFER_PROVIDERS");
    const char *list = NULL;
    if (opt && opt->n_providers) {
        names = opt->providers;
        n = opt->n_providers;
    } else {
        list = env && env[0] ? env : DEFAULT_PROVIDERS;
        from_default = !(env && env[0]);
        copy = mf_strdup(list);
        names = mf_calloc(64, sizeof *names);
        if (!copy || !names) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto done;
        }
        for (char *save = NULL, *tok = strtok_r(copy, ", \t", &save); tok && n < 64;
             tok = strtok_r(NULL, ", \t", &save))
            names[n++] = tok;
        if (n == 0) {
            st = mf_error(MINFER_ERR_INVALID_ARG, "%s: MINFER_PROVIDERS='%s' names no provider",
                          s->errctx, list);
            goto done;
        }
    }
    /* A name that is neither installed nor one minfer knows is a typo:
     * an error that lists what there is, before anything loads. */
    for (size_t i = 0; !from_default && i < n; i++)
        if (!mf_provider_is_known(names[i]) && !mf_provider_installed(names[i])) {
            char installed[512];
            mf_installed_provider_names(installed, sizeof installed);
            st = mf_error(MINFER_ERR_INVALID_ARG,
                          "%s: unknown provider '%s' (installed: %s; minfer's providers: %s)",
                          s->errctx, names[i], installed, MF_KNOWN_PROVIDERS);
            goto done;
        }
    s->provs = mf_calloc(n + 1, sizeof *s->provs);
    char **skipped = mf_calloc(n + 1, sizeof *skipped); /* why each one did not load */
    if (!s->provs || !skipped) {
        free(skipped);
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        goto done;
    }
    char failures[2048] = "";
    size_t flen = 0;
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t j = 0; j < s->n_provs; j++)
            dup |= strcmp(s->provs[j].name, names[i]) == 0;
        if (dup)
            continue;
        mf_provider_inst inst;
        if (mf_provider_open(names[i], &s->api, s, mf_options_provider_options(opt, names[i]), &inst) != MINFER_OK) {
            int w = snprintf(failures + flen, sizeof failures - flen, "%s%s", flen ? "; " : "",
                             minfer_last_error());
            if (w > 0 && (size_t)w < sizeof failures - flen)
                flen += (size_t)w;
            skipped[i] = mf_strdup(minfer_last_error());
            continue;
        }
        /* The default order is for speed: an OpenCL "device" that is the
         * host's CPU (PoCL) is slower there than the CPU provider, so it
         * runs only when named. */
        char device[256];
        if (from_default && mf_provider_named_only(&inst)) {
            mf_provider_device(&inst, device, sizeof device);
            mf_log(s, MINFER_LOG_INFO,
                   "provider '%s' left out of the default order: its device is the CPU (%s); "
                   "name it in the provider list to use it",
                   names[i], device);
            mf_provider_close(&inst);
            continue;
        }
        s->provs[s->n_provs++] = inst;
        mf_log(s, MINFER_LOG_INFO, "provider '%s' loaded from %s", inst.name, inst.path);
    }
    /* Providers skipped in a session that still has one: a warning once
     * per process (the default list names providers that may simply not
     * be installed: information). Without any, the error says it all. */
    for (size_t i = 0; s->n_provs && i < n; i++) {
        char key[128];
        snprintf(key, sizeof key, "provider:%s", names[i]);
        if (skipped[i] && (from_default || mf_first_time(key)))
            mf_log(s, from_default ? MINFER_LOG_INFO : MINFER_LOG_WARN,
                   "skipping provider '%s': %s", names[i], skipped[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(skipped[i]);
    free(skipped);
    if (s->n_provs == 0) {
        char joined[512] = "";
        size_t used = 0;
        for (size_t i = 0; i < n; i++) {
            int w = snprintf(joined + used, sizeof joined - used, "%s%s", i ? "," : "", names[i]);
            if (w < 0 || (size_t)w >= sizeof joined - used)
                break;
            used += (size_t)w;
        }
        st = mf_error(MINFER_ERR_PROVIDER, "%s: no usable provider in the list '%s' (%s)",
                      s->errctx, joined, failures);
        goto done;
    }
    for (size_t i = 0; i < s->n_provs; i++)
        if (strcmp(s->provs[i].name, EVAL_PROVIDER) == 0)
            s->eval = &s->provs[i];
    if (!s->eval) {
        if (mf_provider_open(EVAL_PROVIDER, &s->api, s, "", &s->eval_own) == MINFER_OK)
            s->eval = &s->eval_own;
        else
            mf_log(s, MINFER_LOG_INFO,
                    "no '%s' provider for constant folding (%s); shapes that depend on "
                    "computed values are resolved at run time",
                    EVAL_PROVIDER, minfer_last_error());
    }
    /* Plugin ops: one more provider, last (s->provs has room for it). */
    st = mf_plugin_attach(s->g, opt ? (const char *const *)opt->plugins : NULL,
                          opt ? opt->n_plugins : 0, &s->api, s, s->errctx, &s->provs[s->n_provs]);
    if (st == MINFER_OK && s->provs[s->n_provs].vt)
        s->n_provs++;
done:
    free(copy);
    if (names != (opt ? opt->providers : NULL))
        free(names);
    return st;
}

static minfer_status assign_nodes(minfer_session *s) {
    const mf_graph *g = s->g;
    mf_plan *p = s->build;
    char lbl[512];
    minfer_status st;
    s->assign = mf_malloc((g->n_nodes + 1) * sizeof *s->assign);
    s->declined = mf_calloc(g->n_nodes + 1, sizeof *s->declined);
    if (!s->assign || !s->declined)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        s->assign[i] = -1;
        if (p->nodes[i].folded)
            continue;
        if (p->nodes[i].core) {
            s->assign[i] = MF_ASSIGN_CORE;
            mf_log(s, MINFER_LOG_VERBOSE, "%s -> the core", mf_node_label(n, i, lbl, sizeof lbl));
            continue;
        }
        minfer_value_desc *dsc = mf_calloc(n->n_inputs + n->n_outputs + 1, sizeof *dsc);
        minfer_node_desc desc;
        if (!dsc)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        if ((st = mf_fill_desc(s, p, i, NULL, dsc, dsc + n->n_inputs, &desc)) != MINFER_OK) {
            free(dsc);
            return st;
        }
        char reasons[1536] = "";
        size_t used = 0;
        for (size_t j = 0; j < s->n_provs && s->assign[i] < 0; j++) {
            char why[512] = "";
            if (s->provs[j].vt->supports_operator(s->provs[j].ctx, &desc, why, sizeof why)) {
                s->assign[i] = (int)j;
                break;
            }
            mf_log(s, MINFER_LOG_VERBOSE, "%s: provider '%s' declined: %s",
                    mf_node_label(n, i, lbl, sizeof lbl), s->provs[j].name,
                    why[0] ? why : "no reason given");
            int w = snprintf(reasons + used, sizeof reasons - used, "%s%s: %s",
                             used ? "; " : "", s->provs[j].name, why[0] ? why : "declined");
            if (w > 0 && (size_t)w < sizeof reasons - used)
                used += (size_t)w;
        }
        free(dsc);
        if (s->assign[i] < 0)
            return mf_error(MINFER_ERR_UNSUPPORTED, "%s: no provider supports %s (%s)", s->errctx,
                            mf_node_label(n, i, lbl, sizeof lbl), reasons);
        if (!(s->declined[i] = mf_strdup(reasons)))
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        mf_log(s, MINFER_LOG_VERBOSE, "%s -> %s", mf_node_label(n, i, lbl, sizeof lbl),
                s->provs[s->assign[i]].name);
    }
    if (s->strict) {
        char names[1536] = "";
        size_t used = 0, count = 0;
        for (size_t k = 0; k < g->n_nodes; k++) {
            int i = g->order[k];
            if (s->assign[i] <= 0 || mf_plugin_is_provider(&s->provs[s->assign[i]]))
                continue; /* a plugin's op runs on no other provider */
            count++;
            int w = snprintf(names + used, sizeof names - used, "%s%s (%s: %s)", used ? "; " : "",
                             mf_node_label(&g->nodes[i], i, lbl, sizeof lbl),
                             s->provs[s->assign[i]].name, s->declined[i]);
            if (w > 0 && (size_t)w < sizeof names - used)
                used += (size_t)w;
        }
        if (count)
            return mf_error(MINFER_ERR_PROVIDER,
                            "%s: strict placement: %zu node(s) would fall back past provider "
                            "'%s': %s",
                            s->errctx, count, s->provs[0].name, names);
    }
    return MINFER_OK;
}

/* ---- session create / free ---------------------------------------------- */

static int env_log_level(void) {
    const char *e = getenv("MINFER_LOG");
    if (!e || !e[0])
        return MINFER_LOG_WARN;
    if (strcmp(e, "error") == 0 || strcmp(e, "0") == 0)
        return MINFER_LOG_ERROR;
    if (strcmp(e, "warn") == 0 || strcmp(e, "warning") == 0 || strcmp(e, "1") == 0)
        return MINFER_LOG_WARN;
    if (strcmp(e, "info") == 0 || strcmp(e, "2") == 0)
        return MINFER_LOG_INFO;
    if (strcmp(e, "verbose") == 0 || strcmp(e, "3") == 0)
        return MINFER_LOG_VERBOSE;
    return MINFER_LOG_WARN;
}

static minfer_status make_infos(minfer_session *s) {
    const mf_graph *g = s->g;
    s->in_info = mf_calloc(g->n_inputs + 1, sizeof *s->in_info);
    s->out_info = mf_calloc(g->n_outputs + 1, sizeof *s->out_info);
    if (!s->in_info || !s->out_info)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    for (size_t k = 0; k < g->n_inputs + g->n_outputs; k++) {
        int is_in = k < g->n_inputs;
        int vi = is_in ? g->inputs[k] : g->outputs[k - g->n_inputs];
        minfer_value_info *info = is_in ? &s->in_info[k] : &s->out_info[k - g->n_inputs];
        const mf_value *v = &g->values[vi];
        const mf_vplan *vs = &s->build->vals[vi];
        info->name = v->name;
        /* outputs: what inference found where the model declares less */
        info->dtype = (minfer_dtype)(v->dtype ? v->dtype : vs->view.dtype);
        if (v->rank >= 0 || is_in) {
            info->rank = v->rank;
            info->dims = v->dims;
        } else {
            info->rank = vs->view.rank;
            info->dims = vs->view.dims;
        }
        info->dim_names = (const char *const *)v->dim_params;
        info->kind = v->kind;
        info->contained = v->contained;
        if (v->kind != MINFER_VALUE_TENSOR)
            info->rank = -1;
    }
    return MINFER_OK;
}

void minfer_session_free(minfer_session *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->n_plans; i++)
        mf_plan_free(s, s->plans[i]);
    free(s->plans);
    mf_plan_free(s, s->build);
    while (s->free_ctx) {
        mf_exec_ctx *c = s->free_ctx;
        s->free_ctx = *(mf_exec_ctx **)c; /* next is the first member */
        mf_exec_ctx_free(s, c);
    }
    mf_core_free(s);
    for (size_t i = 0; i < s->n_provs; i++)
        mf_provider_close(&s->provs[i]);
    mf_provider_close(&s->eval_own);
    free(s->provs);
    if (s->trace && s->profile_path &&
        mf_trace_write(s->trace, s->profile_path) != MINFER_OK)
        mf_log(s, MINFER_LOG_WARN, "%s", minfer_last_error());
    mf_trace_free(s->trace);
    free(s->profile_path);
    for (size_t i = 0; s->declined && i < s->g->n_nodes; i++)
        free(s->declined[i]);
    free(s->declined);
    free(s->node_ms);
    free(s->node_runs);
    free(s->stats_scratch);
    free(s->assign);
    free(s->in_info);
    free(s->out_info);
    if (!s->pool_shared)
        mf_pool_free(s->pool);
    mf_graph_free(s->g);
    pthread_mutex_destroy(&s->lock);
    free(s->errctx);
    free(s);
}

static int graph_inputs_static(const mf_graph *g) {
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        if (v->rank < 0 || v->kind != MINFER_VALUE_TENSOR || !v->dtype)
            return 0;
        for (int d = 0; d < v->rank; d++)
            if (v->dims[d] < 0)
                return 0;
    }
    return 1;
}


/* Level from the options, else MINFER_OPT_LEVEL, else 3. */
static int opt_level(const minfer_options *opt) {
    if (opt && opt->opt_level >= 0)
        return opt->opt_level;
    const char *e = getenv("MINFER_OPT_LEVEL");
    if (e && e[0] >= '0' && e[0] <= '3' && !e[1])
        return e[0] - '0';
    return 3;
}

static void phase(minfer_session *s, const char *name, double start_ms, double dur_ms);

/* The optimizer's constant folding, with the NaN check when it is on: a
 * folded node disappears from the graph, so this is where it is named. */
typedef struct eval_user {
    minfer_session *s;
    mf_evaluator *ev;
} eval_user;

static minfer_status eval_checked(void *user, const mf_graph *g, int node, minfer_tensor **outs) {
    eval_user *u = user;
    minfer_status st = mf_evaluator_eval_node(u->ev, g, node, outs);
    if (st != MINFER_OK || !u->s->check_nan)
        return st;
    const mf_node *n = &g->nodes[node];
    for (size_t o = 0; o < n->n_outputs; o++) {
        int is_nan = 0;
        int64_t e = outs[o] ? mf_find_nan(&outs[o]->view, &is_nan) : -1;
        if (e >= 0) {
            char lbl[512];
            for (size_t k = 0; k < n->n_outputs; k++) {
                minfer_tensor_free(outs[k]);
                outs[k] = NULL;
            }
            return mf_error(MINFER_ERR_RUNTIME,
                            "%s: NaN check: %s produced %s in output %zu (element %lld) while "
                            "folding constants",
                            u->s->errctx, mf_node_label(n, node, lbl, sizeof lbl),
                            is_nan ? "NaN" : "Inf", o, (long long)e);
        }
    }
    return MINFER_OK;
}

/* Graph optimization before shape inference and placement (optimizer.c).
 * Constant folding runs nodes on a private CPU provider instance. */
static minfer_status optimize(minfer_session *s, const minfer_options *opt) {
    int level = opt_level(opt);
    if (s->g->compiled_level) { /* a compiled file: optimized when compiled (docs/format.md) */
        mf_log(s, MINFER_LOG_INFO, "%s: compiled at optimization level %d; not optimized again",
               s->errctx, s->g->compiled_level - 1);
        return MINFER_OK;
    }
    if (level == 0 || s->g->n_nodes == 0)
        return MINFER_OK;
    /* The passes know tensors only: a graph with control flow, sequences
     * or optionals runs as written (its subgraphs are optimized as
     * sessions of their own). */
    const char *why = NULL;
    if (mf_graph_has_control(s->g, &why)) {
        mf_log(s, MINFER_LOG_INFO, "%s: not optimized: it has control flow, sequences or "
               "optionals ('%s')", s->errctx, why);
        return MINFER_OK;
    }
    double t = now_ms();
    mf_evaluator *ev = NULL;
    if (mf_evaluator_open(&ev) != MINFER_OK) {
        ev = NULL;
        mf_log(s, MINFER_LOG_INFO, "%s: no CPU provider for constant folding: %s", s->errctx,
               minfer_last_error());
        mf_error_clear();
    }
    mf_opt_report report;
    memset(&report, 0, sizeof report);
    eval_user eu = {s, ev};
    mf_opt_ctx ctx = {level, ev ? eval_checked : NULL, &eu, (uint64_t)1 << 20, &report};
    minfer_status st = mf_optimize(s->g, &ctx, s->errctx);
    mf_evaluator_close(ev);
    if (st != MINFER_OK)
        return st;
    phase(s, "optimize", t, now_ms() - t);
    mf_log(s, MINFER_LOG_INFO, "%s: optimization level %d: %zu nodes -> %zu", s->errctx, level,
           report.nodes_before, report.nodes_after);
    for (size_t i = 0; i < report.n_passes; i++)
        if (report.passes[i].fired)
            mf_log(s, MINFER_LOG_INFO, "  pass %-24s fired %zu times", report.passes[i].name,
                   report.passes[i].fired);
    return MINFER_OK;
}

/* One build phase: an info line and, when profiling, a trace event. */
static void phase(minfer_session *s, const char *name, double start_ms, double dur_ms) {
    mf_log(s, MINFER_LOG_INFO, "%s: %-16s %8.2f ms", s->errctx, name, dur_ms);
    mf_trace_add(s->trace, name, "build", start_ms, dur_ms, NULL);
}

minfer_status mf_session_create_graph(mf_graph *g, const minfer_options *opt, const char *errctx,
                                      minfer_session **out) {
    return mf_session_create_graph_timed(g, opt, errctx, -1, out);
}

static minfer_status create(mf_graph *g, const minfer_options *opt, const char *errctx,
                            double load_ms, minfer_session *parent, minfer_session **out);

minfer_status mf_session_create_graph_timed(mf_graph *g, const minfer_options *opt,
                                            const char *errctx, double load_ms,
                                            minfer_session **out) {
    return create(g, opt, errctx, load_ms, NULL, out);
}

minfer_status mf_session_create_sub(mf_graph *g, const minfer_options *opt, const char *errctx,
                                    minfer_session *parent, minfer_session **out) {
    return create(g, opt, errctx, -1, parent, out);
}

static minfer_status create(mf_graph *g, const minfer_options *opt, const char *errctx,
                            double load_ms, minfer_session *parent, minfer_session **out) {
    minfer_status st;
    minfer_session *s = NULL;
    double t0 = now_ms(), t;
    if (!out) {
        mf_graph_free(g);
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create: out is NULL");
    }
    *out = NULL;
    /* Free-dimension overrides make the declared shapes what every later
     * step (inference, placement, the build plan) sees. */
    if (!parent && (st = mf_apply_dim_overrides(g, opt, errctx)) != MINFER_OK) {
        mf_graph_free(g);
        return st;
    }
    s = mf_calloc(1, sizeof *s);
    if (!s) {
        mf_graph_free(g);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
    }
    pthread_mutex_init(&s->lock, NULL);
    s->g = g;
    s->errctx = mf_strdup(errctx);
    s->log_level = opt && opt->log_level >= 0 ? opt->log_level : env_log_level();
    s->log_fn = opt ? opt->log_fn : NULL;
    s->log_user = opt ? opt->log_user : NULL;
    if (!parent)
        mf_check_env(s);
    const char *penv = getenv("MINFER_PLANNER");
    s->planner = opt && opt->planner >= 0 ? opt->planner
                 : penv && strcmp(penv, "linear") == 0 ? MINFER_PLANNER_LINEAR
                                                       : MINFER_PLANNER_GREEDY;
    s->plan_cache_size = opt && opt->plan_cache_size ? opt->plan_cache_size : MF_DEFAULT_PLAN_CACHE;
    s->limits = mf_options_limits(opt);
    s->run_limits = mf_options_run_limits(opt);
    s->strict = opt ? opt->strict : 0;
    const char *nenv = getenv("MINFER_CHECK_NAN");
    s->check_nan = opt && opt->check_nan >= 0 ? opt->check_nan : (nenv && strcmp(nenv, "1") == 0);
    const char *prof = opt && opt->profile_path ? opt->profile_path : getenv("MINFER_PROFILE");
    if (prof && prof[0] && !parent) {
        s->trace = mf_trace_new(load_ms >= 0 ? t0 - load_ms : t0);
        s->profile_path = mf_strdup(prof);
        if (!s->trace || !s->profile_path) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            goto fail;
        }
        if (load_ms >= 0)
            mf_trace_add(s->trace, "load and validate", "build", t0 - load_ms, load_ms, NULL);
    }
    s->stats_scratch = mf_malloc(MF_STATS_RING * sizeof *s->stats_scratch);
    mf_stats_reset(&s->stats);
    if (!s->stats_scratch) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    if (load_ms >= 0)
        mf_log(s, MINFER_LOG_INFO, "%s: %-16s %8.2f ms", errctx, "load+validate", load_ms);
    int threads = opt ? opt->threads : 0;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)(n > 64 ? 64 : n) : 1;
    }
    if (parent) {
        s->pool = parent->pool;
        s->pool_shared = 1;
    } else
        s->pool = mf_pool_create(threads);
    if (!s->errctx || !s->pool) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    s->api.abi_version = MINFER_PROVIDER_ABI_VERSION;
    s->api.struct_size = sizeof s->api;
    s->api.log = host_log;
    s->api.set_error = host_set_error;
    mf_host_api_attrs(&s->api);
    s->api.num_threads = host_num_threads;
    s->api.parallel_for = host_parallel_for;
    s->api.alloc_output = host_alloc_output;
    s->api.charge_work = mf_host_charge_work;

    t = now_ms();
    if ((st = open_providers(s, opt)) != MINFER_OK)
        goto fail;
    phase(s, "load providers", t, now_ms() - t);
    if ((st = mf_expand_gradients(g, errctx)) != MINFER_OK)
        goto fail;
    if ((st = optimize(s, opt)) != MINFER_OK)
        goto fail;
    s->node_ms = mf_calloc(g->n_nodes + 1, sizeof *s->node_ms);
    s->node_runs = mf_calloc(g->n_nodes + 1, sizeof *s->node_runs);
    if (!s->node_ms || !s->node_runs) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    s->n_domains = 1 + s->n_provs;
    s->build = mf_plan_new(s);
    if (!s->build) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    t = now_ms();
    if ((st = mf_plan_infer(s, s->build)) != MINFER_OK)
        goto fail;
    phase(s, "infer shapes", t, now_ms() - t);
    if ((st = mf_core_build(s, opt)) != MINFER_OK)
        goto fail;
    if (s->log_level >= MINFER_LOG_VERBOSE)
        for (size_t k = 0; k < g->n_nodes; k++) {
            int i = g->order[k];
            const mf_node *n = &g->nodes[i];
            char lbl[512], shp[160];
            for (size_t o = 0; o < n->n_outputs; o++)
                if (n->outputs[o] >= 0) {
                    const minfer_tensor_view *v = &s->build->vals[n->outputs[o]].view;
                    mf_log(s, MINFER_LOG_VERBOSE, "%s: output '%s' %s %s%s",
                           mf_node_label(n, i, lbl, sizeof lbl), g->values[n->outputs[o]].name,
                           minfer_dtype_name((minfer_dtype)v->dtype),
                           mf_shape_str(v->dims, v->rank, shp, sizeof shp),
                           s->build->vals[n->outputs[o]].known ? " (constant)" : "");
                }
        }
    t = now_ms();
    if ((st = assign_nodes(s)) != MINFER_OK)
        goto fail;
    phase(s, "assign providers", t, now_ms() - t);
    if ((st = make_infos(s)) != MINFER_OK)
        goto fail;
    if (graph_inputs_static(g)) {
        int64_t *sig = mf_malloc((g->n_inputs * (MINFER_MAX_RANK + 2) + 1) * sizeof *sig);
        size_t len = 0;
        mf_plan *p = NULL;
        if (!sig) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            goto fail;
        }
        for (size_t k = 0; k < g->n_inputs; k++) {
            const mf_value *v = &g->values[g->inputs[k]];
            sig[len++] = v->dtype; /* a tensor: kind 0 */
            sig[len++] = v->rank;
            for (int d = 0; d < v->rank; d++)
                sig[len++] = v->dims[d];
        }
        st = mf_plan_acquire(s, sig, len, &p);
        free(sig);
        if (st != MINFER_OK)
            goto fail;
        mf_plan_release(s, p);
    }
    if (s->log_level >= MINFER_LOG_INFO) {
        size_t folded = 0;
        for (size_t i = 0; i < g->n_nodes; i++)
            folded += s->assign[i] == -1;
        mf_log(s, MINFER_LOG_INFO, "%s: session built in %.1f ms: %zu nodes (%zu constant)",
                errctx, now_ms() - t0, g->n_nodes, folded);
        for (size_t j = 0; j < s->n_provs; j++) {
            size_t c = 0;
            for (size_t i = 0; i < g->n_nodes; i++)
                c += s->assign[i] == (int)j;
            mf_log(s, MINFER_LOG_INFO, "  %zu nodes on provider '%s'", c, s->provs[j].name);
        }
    }
    *out = s;
    return MINFER_OK;
fail:
    minfer_session_free(s);
    return st;
}

/* Maps the model file read-only (*mapped = 1), or reads it into memory
 * when mapping fails. The loader reads weights in place from a mapping and
 * gives the pages back as it goes, so the weights are not held twice. */
static minfer_status read_file(const char *path, uint64_t max_bytes, void **data, size_t *size,
                               int *mapped) {
    *data = NULL;
    *size = 0;
    *mapped = 0;
    /* A FIFO or a device named as the model must not block the open. */
    FILE *f;
    uint64_t file_size;
    minfer_status st = mf_fopen_regular(path, "model file", &f, &file_size);
    if (st != MINFER_OK)
        return st;
    if (file_size > max_bytes) {
        fclose(f);
        return mf_error(MINFER_ERR_LIMIT, "%s: the model file is %llu bytes, above the limit of %llu",
                        path, (unsigned long long)file_size, (unsigned long long)max_bytes);
    }
    long len = (long)file_size;
    if (len > 0) {
        void *m = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        if (m != MAP_FAILED) {
            fclose(f);
            *data = m;
            *size = (size_t)len;
            *mapped = 1;
            return MINFER_OK;
        }
    }
    void *buf = mf_malloc((size_t)len + 1);
    if (!buf) {
        fclose(f);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory reading %ld bytes", path, len);
    }
    if (len && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        fclose(f);
        return mf_error(MINFER_ERR_IO, "%s: short read", path);
    }
    fclose(f);
    *data = buf;
    *size = (size_t)len;
    return MINFER_OK;
}

minfer_status minfer_session_create(const char *model_path, const minfer_options *opt,
                                    minfer_session **out) {
    void *data = NULL;
    size_t size = 0;
    int mapped = 0;
    mf_graph *g = NULL;
    minfer_status st;
    if (out)
        *out = NULL;
    if (!model_path || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create: NULL argument");
    double t0 = now_ms();
    if ((st = read_file(model_path, mf_options_limits(opt).max_model_bytes, &data, &size, &mapped)) != MINFER_OK)
        return st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", model_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    minfer_limits lim = mf_options_limits(opt);
    if (minfer_is_compiled(data, size)) { /* the graph keeps the mapping (load/mfc.h) */
        if ((st = mf_mfc_load(data, size, mapped ? mf_mfc_unmap : mf_mfc_free, model_path, &lim,
                              &g)) != MINFER_OK)
            return st;
        return mf_session_create_graph_timed(g, opt, model_path, now_ms() - t0, out);
    }
    st = mf_load_onnx_ex(data, size, mapped, dir, model_path, &lim, &g);
    if (mapped)
        munmap(data, size);
    else
        free(data);
    if (st != MINFER_OK)
        return st;
    return mf_session_create_graph_timed(g, opt, model_path, now_ms() - t0, out);
}

minfer_status minfer_session_create_from_memory(const void *data, size_t size,
                                                const minfer_options *opt, minfer_session **out) {
    mf_graph *g = NULL;
    minfer_status st;
    if (out)
        *out = NULL;
    if (!data || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create_from_memory: NULL argument");
    minfer_limits lim = mf_options_limits(opt);
    if (minfer_is_compiled(data, size)) { /* a copy the graph keeps: data is the caller's */
        void *copy = NULL;
        if (mf_test_alloc_fails() || posix_memalign(&copy, 64, size ? size : 1) != 0)
            return mf_error(MINFER_ERR_NOMEM, "<memory>: out of memory copying %zu bytes", size);
        memcpy(copy, data, size);
        st = mf_mfc_load(copy, size, mf_mfc_free, "<memory>", &lim, &g);
    } else
        st = mf_load_onnx(data, size, ".", "<memory>", &lim, &g);
    if (st != MINFER_OK)
        return st;
    return mf_session_create_graph(g, opt, "<memory>", out);
}

/* ---- introspection -------------------------------------------------------- */

size_t minfer_session_input_count(const minfer_session *s) { return s ? s->g->n_inputs : 0; }
size_t minfer_session_output_count(const minfer_session *s) { return s ? s->g->n_outputs : 0; }

minfer_status minfer_session_input_info(const minfer_session *s, size_t index,
                                        minfer_value_info *info) {
    if (!s || !info || index >= s->g->n_inputs)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_input_info: bad index %zu", index);
    *info = s->in_info[index];
    return MINFER_OK;
}

minfer_status minfer_session_output_info(const minfer_session *s, size_t index,
                                         minfer_value_info *info) {
    if (!s || !info || index >= s->g->n_outputs)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_output_info: bad index %zu",
                        index);
    *info = s->out_info[index];
    return MINFER_OK;
}

size_t minfer_session_node_count(const minfer_session *s) { return s ? s->g->n_nodes : 0; }

minfer_status minfer_session_node_placement(const minfer_session *s, size_t index,
                                            minfer_node_placement *out) {
    if (!s || !out || index >= s->g->n_nodes)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_node_placement: bad index %zu",
                        index);
    int i = s->g->order[index];
    const mf_node *n = &s->g->nodes[i];
    out->node_name = n->name;
    out->op_type = n->op_type;
    out->domain = n->domain;
    out->provider = s->assign[i] >= 0                ? s->provs[s->assign[i]].name
                    : s->assign[i] == MF_ASSIGN_CORE ? "core"
                                                     : "(constant)";
    out->declined = s->declined && s->declined[i] ? s->declined[i] : "";
    return MINFER_OK;
}

size_t minfer_session_provider_count(const minfer_session *s) { return s ? s->n_provs : 0; }

const char *minfer_session_provider_name(const minfer_session *s, size_t index) {
    return s && index < s->n_provs ? s->provs[index].name : NULL;
}
