/*
 * Sessions: the build pipeline and the run loop.
 *
 * Build (minfer_session_create*):
 *  1. load the model into the IR and validate it (onnx_load.c, graph.c);
 *  2. open the providers of the preference list, skipping (with a warning)
 *     any that cannot load; the CPU provider is also opened, privately, as
 *     the evaluator for constant folding if the list does not name it;
 *  3. infer shapes for the declared input shapes (symbolic dims unknown),
 *     folding every node whose inputs are all known (initializers, Constant,
 *     Shape of a static shape, and what follows from them) by running it on
 *     the evaluator: a shape mismatch fails here, before anything runs;
 *  4. assign each remaining node, in topological order, to the first
 *     provider whose supports_operator accepts it;
 *  5. if every input shape is static, build the run plan now (step 6).
 *
 * Plans: a plan belongs to one signature of concrete input shapes. Building
 * one re-runs inference and folding with the real dims (so Reshape targets
 * computed by Shape->Gather->Concat chains become constants), allocates
 * every intermediate value, and calls prepare_node for every node with the
 * node's concrete shapes. A run whose input shapes differ from the current
 * plan's builds a new plan. Nodes whose output shapes depend on data that
 * is only known at run time are "dynamic": they are inferred, allocated and
 * prepared in the run itself.
 *
 * Run: bind the caller's inputs (no copy), execute the non-folded nodes in
 * order, copying values between memory domains where a value's producer
 * and consumer live in different ones, then copy the requested outputs out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph.h"
#include "internal.h"
#include "provider_loader.h"
#include "session.h"
#include "shape_infer.h"
#include "threadpool.h"

#define DEFAULT_PROVIDERS "onednn,opencl,cpu"
#define FOLD_MAX_ELEMS 65536 /* largest constant the folder materialises per output */
#define HOST_ALIGN 64
#define EVAL_PROVIDER "cpu"
/* protobuf messages are limited to 2 GiB; larger models use external data. */
#define MAX_MODEL_BYTES ((int64_t)2 << 30)

/* Per-value state inside a plan. */
typedef struct vstate {
    minfer_tensor_view view; /* dtype/rank/dims; data = host storage when allocated */
    int known;               /* contents known before any run (constant) */
    int dynamic;             /* shape known only at run time */
    void *owned;             /* storage this plan owns (host) */
    /* Mirror of a host value in a device domain, for consumers there. */
    int mirror_prov;         /* provider index owning the mirror, or -1 */
    void *mirror;
    int64_t consumers;
} vstate;

typedef struct nstate {
    minfer_value_desc *in_desc, *out_desc;
    minfer_node_desc desc;
    void *state;
    int prepared;
    int folded;  /* outputs are constants of the plan; never executed */
    int dynamic; /* inferred and prepared during the run */
    size_t workspace;
    int32_t *inplace;
    uint64_t *layouts;
} nstate;

typedef struct plan {
    int concrete; /* built for concrete input shapes (else: declared shapes) */
    int64_t *sig;
    size_t sig_len;
    vstate *vals;
    nstate *nodes;
    void *workspace; /* host scratch shared by every node (runs are serial) */
    size_t workspace_bytes;
} plan;

struct minfer_session {
    char *errctx;
    mf_graph *g;
    int log_level;
    mf_pool *pool;
    minfer_host_api api;
    mf_provider_inst *provs;
    size_t n_provs;
    mf_provider_inst eval_own; /* the evaluator when not in the list */
    mf_provider_inst *eval;    /* NULL: no folding */
    int *assign;               /* node -> provider index; -1 folded at build */
    plan *build;               /* declared-shape plan (inference results) */
    plan *cur;                 /* concrete plan for the last input shapes */
    pthread_mutex_t run_lock;
    /* session-owned copies for minfer_value_info */
    minfer_value_info *in_info, *out_info;
};

/* ---- logging and host API ---------------------------------------------- */

static const char *level_name(int level) {
    static const char *names[] = {"error", "warn", "info", "verbose"};
    return level >= 0 && level <= 3 ? names[level] : "log";
}

static void vlog_msg(const minfer_session *s, int level, const char *fmt, va_list ap) {
    if (s && level > s->log_level)
        return;
    fprintf(stderr, "minfer %s: ", level_name(level));
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void log_msg(const minfer_session *s, int level, const char *fmt, ...) MF_PRINTF(3, 4);
static void log_msg(const minfer_session *s, int level, const char *fmt, ...) {
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

static const mf_attr *host_attr(const minfer_node_desc *n, const char *name, int type) {
    if (!n || !n->host_node || !name)
        return NULL;
    const mf_attr *a = mf_node_attr(n->host_node, name);
    return a && (type == 0 || a->type == type) ? a : NULL;
}

static int host_attr_type(const minfer_node_desc *n, const char *name) {
    const mf_attr *a = host_attr(n, name, 0);
    return a ? a->type : MINFER_ATTR_UNDEFINED;
}

static int host_attr_int(const minfer_node_desc *n, const char *name, int64_t *out) {
    const mf_attr *a = host_attr(n, name, MINFER_ATTR_INT);
    if (a && out)
        *out = a->i;
    return a != NULL;
}

static int host_attr_float(const minfer_node_desc *n, const char *name, float *out) {
    const mf_attr *a = host_attr(n, name, MINFER_ATTR_FLOAT);
    if (a && out)
        *out = a->f;
    return a != NULL;
}

static int host_attr_string(const minfer_node_desc *n, const char *name, const char **out,
                            size_t *len) {
    const mf_attr *a = host_attr(n, name, MINFER_ATTR_STRING);
    if (a) {
        if (out)
            *out = a->s;
        if (len)
            *len = a->s_len;
    }
    return a != NULL;
}

static int host_attr_ints(const minfer_node_desc *n, const char *name, const int64_t **out,
                          size_t *count) {
    const mf_attr *a = host_attr(n, name, MINFER_ATTR_INTS);
    if (a) {
        if (out)
            *out = a->ints;
        if (count)
            *count = a->count;
    }
    return a != NULL;
}

static int host_attr_floats(const minfer_node_desc *n, const char *name, const float **out,
                            size_t *count) {
    const mf_attr *a = host_attr(n, name, MINFER_ATTR_FLOATS);
    if (a) {
        if (out)
            *out = a->floats;
        if (count)
            *count = a->count;
    }
    return a != NULL;
}

static int host_attr_tensor(const minfer_node_desc *n, const char *name, minfer_tensor_view *out) {
    const mf_attr *a = host_attr(n, name, MINFER_ATTR_TENSOR);
    if (a && out)
        *out = a->t->view;
    return a != NULL;
}

static int host_num_threads(void *host) {
    const minfer_session *s = host;
    return s ? mf_pool_threads(s->pool) : 1;
}

static void host_parallel_for(void *host, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    minfer_session *s = host;
    mf_pool_parallel_for(s ? s->pool : NULL, n, grain, fn, arg);
}

/* The run handle behind alloc_output. */
typedef struct run_ctx {
    minfer_session *s;
    plan *p;
    int node;
    minfer_tensor_view *outputs;
    size_t n_outputs;
    void **temps; /* run-time allocations, freed when the run ends */
    size_t n_temps, cap_temps;
} run_ctx;

static int track_temp(run_ctx *rc, void *ptr) {
    if (rc->n_temps == rc->cap_temps) {
        size_t cap = rc->cap_temps ? rc->cap_temps * 2 : 16;
        void **t = mf_realloc(rc->temps, cap * sizeof *t);
        if (!t)
            return -1;
        rc->temps = t;
        rc->cap_temps = cap;
    }
    rc->temps[rc->n_temps++] = ptr;
    return 0;
}

static void *alloc_host(size_t bytes) {
    void *p = NULL;
    size_t rounded = (bytes + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN;
    if (rounded == 0)
        rounded = HOST_ALIGN;
    if (posix_memalign(&p, HOST_ALIGN, rounded) != 0)
        return NULL;
    memset(p, 0, rounded);
    return p;
}

static minfer_status host_alloc_output(void *run, size_t index, int32_t rank, const int64_t *dims) {
    run_ctx *rc = run;
    int64_t numel;
    size_t bytes;
    minfer_status st;
    if (!rc || index >= rc->n_outputs || rank < 0 || rank > MINFER_MAX_RANK || (rank && !dims))
        return mf_error(MINFER_ERR_INVALID_ARG, "alloc_output: bad arguments");
    minfer_tensor_view *v = &rc->outputs[index];
    if ((st = mf_numel(dims, rank, &numel)) != MINFER_OK ||
        (st = mf_nbytes(v->dtype, numel, &bytes)) != MINFER_OK)
        return st;
    void *mem = alloc_host(bytes);
    if (!mem || track_temp(rc, mem) != 0) {
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
    const mf_node *n = &rc->s->g->nodes[rc->node];
    int vi = n->outputs[index];
    if (vi >= 0)
        rc->p->vals[vi].view = *v;
    return MINFER_OK;
}

/* ---- small helpers ------------------------------------------------------ */

static const char *node_label(const mf_node *n, int idx, char *buf, size_t size) {
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

static int view_static(const minfer_tensor_view *v) {
    if (v->rank < 0)
        return 0;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0)
            return 0;
    return 1;
}

static size_t view_bytes(const minfer_tensor_view *v) {
    int64_t n;
    size_t b;
    if (mf_numel(v->dims, v->rank, &n) != MINFER_OK || mf_nbytes(v->dtype, n, &b) != MINFER_OK)
        return 0;
    return b;
}

/* ---- plans -------------------------------------------------------------- */

static void release_node_state(minfer_session *s, plan *p, int i) {
    nstate *ns = &p->nodes[i];
    if (ns->prepared && s->assign[i] >= 0) {
        const minfer_provider *vt = s->provs[s->assign[i]].vt;
        if (MF_VT_HAS(vt, release_node))
            vt->release_node(s->provs[s->assign[i]].ctx, ns->state);
    }
    ns->state = NULL;
    ns->prepared = 0;
}

static void plan_free(minfer_session *s, plan *p) {
    if (!p)
        return;
    const mf_graph *g = s->g;
    if (p->nodes)
        for (size_t i = 0; i < g->n_nodes; i++) {
            release_node_state(s, p, (int)i);
            free(p->nodes[i].in_desc);
            free(p->nodes[i].out_desc);
            free(p->nodes[i].inplace);
            free(p->nodes[i].layouts);
        }
    if (p->vals)
        for (size_t v = 0; v < g->n_values; v++) {
            vstate *vs = &p->vals[v];
            if (vs->owned && vs->view.dtype == MINFER_DTYPE_STRING)
                mf_free_strings(vs->owned, (int64_t)(view_bytes(&vs->view) / sizeof(char *)));
            free(vs->owned);
            if (vs->mirror && vs->mirror_prov >= 0)
                s->provs[vs->mirror_prov].vt->mem_free(s->provs[vs->mirror_prov].ctx, vs->mirror);
        }
    free(p->workspace);
    free(p->vals);
    free(p->nodes);
    free(p->sig);
    free(p);
}

/* Descriptor arrays for node i from the plan's current value states. */
static minfer_status fill_desc(minfer_session *s, plan *p, int i) {
    const mf_node *n = &s->g->nodes[i];
    nstate *ns = &p->nodes[i];
    if (!ns->in_desc) {
        ns->in_desc = mf_calloc(n->n_inputs + 1, sizeof *ns->in_desc);
        ns->out_desc = mf_calloc(n->n_outputs + 1, sizeof *ns->out_desc);
        ns->inplace = mf_calloc(n->n_outputs + 1, sizeof *ns->inplace);
        ns->layouts = mf_calloc(n->n_outputs + 1, sizeof *ns->layouts);
        if (!ns->in_desc || !ns->out_desc || !ns->inplace || !ns->layouts)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    for (size_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int is_in = k < n->n_inputs;
        int vi = is_in ? n->inputs[k] : n->outputs[k - n->n_inputs];
        minfer_value_desc *d = is_in ? &ns->in_desc[k] : &ns->out_desc[k - n->n_inputs];
        memset(d, 0, sizeof *d);
        d->rank = -1;
        if (vi < 0)
            continue;
        const vstate *vs = &p->vals[vi];
        d->name = s->g->values[vi].name;
        d->kind = MINFER_VALUE_TENSOR;
        d->dtype = vs->view.dtype;
        d->rank = vs->view.rank;
        memcpy(d->dims, vs->view.dims, sizeof d->dims);
        d->present = 1;
        if (vs->known) {
            d->const_data = vs->view.data;
            d->const_nbytes = vs->view.nbytes;
        }
    }
    ns->desc.struct_size = sizeof ns->desc;
    ns->desc.name = n->name;
    ns->desc.op_type = n->op_type;
    ns->desc.domain = n->domain;
    ns->desc.opset = n->opset;
    ns->desc.n_inputs = n->n_inputs;
    ns->desc.n_outputs = n->n_outputs;
    ns->desc.inputs = ns->in_desc;
    ns->desc.outputs = ns->out_desc;
    ns->desc.host_node = n;
    return MINFER_OK;
}

/* Evaluates node i on the evaluator provider, all inputs known, storing
 * its outputs as constants of the plan. Returns MINFER_OK and sets *done
 * when folded; a provider that declines leaves *done 0. */
static minfer_status fold_node(minfer_session *s, plan *p, int i, int *done) {
    const mf_node *n = &s->g->nodes[i];
    nstate *ns = &p->nodes[i];
    minfer_status st;
    minfer_tensor_view in[64], out[64];
    void *state = NULL, *work = NULL;
    char why[256];
    *done = 0;
    if (!s->eval || n->n_inputs > 64 || n->n_outputs > 64)
        return MINFER_OK;
    const minfer_provider *vt = s->eval->vt;
    if ((st = fill_desc(s, p, i)) != MINFER_OK)
        return st;
    if (!vt->supports_operator(s->eval->ctx, &ns->desc, why, sizeof why))
        return MINFER_OK;
    minfer_node_prep prep = {sizeof prep, 0, ns->inplace, ns->layouts};
    for (size_t o = 0; o < n->n_outputs; o++) {
        ns->inplace[o] = -1;
        ns->layouts[o] = 0;
    }
    if (MF_VT_HAS(vt, prepare_node) &&
        (st = vt->prepare_node(s->eval->ctx, &ns->desc, &prep, &state)) != MINFER_OK)
        return mf_error_prefix(st, "%s: folding %s", s->errctx,
                               node_label(n, i, why, sizeof why));
    for (size_t k = 0; k < n->n_inputs; k++) {
        int vi = n->inputs[k];
        if (vi < 0) {
            memset(&in[k], 0, sizeof in[k]);
            in[k].rank = -1;
        } else
            in[k] = p->vals[vi].view;
    }
    for (size_t o = 0; o < n->n_outputs; o++) {
        int vi = n->outputs[o];
        vstate *vs = vi >= 0 ? &p->vals[vi] : NULL;
        memset(&out[o], 0, sizeof out[o]);
        out[o].rank = -1;
        if (!vs)
            continue;
        size_t bytes = view_bytes(&vs->view);
        vs->owned = alloc_host(bytes);
        if (!vs->owned) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory folding constants", s->errctx);
            goto done;
        }
        vs->view.data = vs->owned;
        vs->view.nbytes = bytes;
        out[o] = vs->view;
    }
    if (prep.workspace_bytes && !(work = alloc_host(prep.workspace_bytes))) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory folding constants", s->errctx);
        goto done;
    }
    run_ctx rc = {s, p, i, out, n->n_outputs, NULL, 0, 0};
    minfer_exec_args args = {sizeof args, &rc, &ns->desc, in, n->n_inputs, out, n->n_outputs,
                             work, prep.workspace_bytes};
    mf_error_clear();
    st = vt->execute_node(s->eval->ctx, state, &args);
    free(rc.temps);
    if (st != MINFER_OK) {
        mf_error_prefix(st, "%s: evaluating constant %s", s->errctx,
                        node_label(n, i, why, sizeof why));
        goto done;
    }
    for (size_t o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0)
            p->vals[n->outputs[o]].known = 1;
    ns->folded = 1;
    *done = 1;
done:
    if (state && MF_VT_HAS(vt, release_node))
        vt->release_node(s->eval->ctx, state);
    free(work);
    if (st != MINFER_OK)
        for (size_t o = 0; o < n->n_outputs; o++) {
            int vi = n->outputs[o];
            if (vi >= 0) {
                free(p->vals[vi].owned);
                p->vals[vi].owned = NULL;
                p->vals[vi].view.data = NULL;
            }
        }
    return st;
}

/* Shape and Size are known from a static input shape alone. */
static minfer_status fold_shape_op(minfer_session *s, plan *p, int i, int *done) {
    const mf_node *n = &s->g->nodes[i];
    *done = 0;
    if (n->domain[0] || n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 ||
        n->outputs[0] < 0)
        return MINFER_OK;
    int is_shape = strcmp(n->op_type, "Shape") == 0, is_size = strcmp(n->op_type, "Size") == 0;
    if (!is_shape && !is_size)
        return MINFER_OK;
    const minfer_tensor_view *x = &p->vals[n->inputs[0]].view;
    vstate *y = &p->vals[n->outputs[0]];
    if (!view_static(x) || !view_static(&y->view) || y->view.dtype != MINFER_DTYPE_INT64)
        return MINFER_OK;
    int64_t values[MINFER_MAX_RANK];
    int64_t count = 0;
    if (is_size) {
        if (mf_numel(x->dims, x->rank, &values[0]) != MINFER_OK)
            return MINFER_OK;
        count = 1;
    } else {
        int64_t r = x->rank, start = mf_attr_int(n, "start", 0), end = mf_attr_int(n, "end", r);
        if (start < 0)
            start += r;
        if (end < 0)
            end += r;
        start = start < 0 ? 0 : start > r ? r : start;
        end = end < 0 ? 0 : end > r ? r : end;
        for (int64_t d = start; d < end; d++)
            values[count++] = x->dims[d];
    }
    if ((size_t)count * sizeof(int64_t) != view_bytes(&y->view))
        return MINFER_OK; /* inference disagrees; leave it to the kernel */
    y->owned = alloc_host((size_t)count * sizeof(int64_t));
    if (!y->owned)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    if (count)
        memcpy(y->owned, values, (size_t)count * sizeof(int64_t));
    y->view.data = y->owned;
    y->view.nbytes = (size_t)count * sizeof(int64_t);
    y->known = 1;
    p->nodes[i].folded = 1;
    *done = 1;
    return MINFER_OK;
}

/* Checks an inferred output against the type the model declares for it. */
static minfer_status check_declared(minfer_session *s, int i, size_t o, const mf_value *v,
                                    minfer_tensor_view *out) {
    char lbl[512], a[128], b[128];
    const mf_node *n = &s->g->nodes[i];
    if (v->dtype && out->dtype && v->dtype != out->dtype)
        return mf_error(MINFER_ERR_TYPE, "%s: %s output %zu '%s' is %s, but the model declares %s",
                        s->errctx, node_label(n, i, lbl, sizeof lbl), o, v->name,
                        minfer_dtype_name((minfer_dtype)out->dtype),
                        minfer_dtype_name((minfer_dtype)v->dtype));
    if (!out->dtype && v->dtype)
        out->dtype = v->dtype;
    if (v->rank >= 0 && out->rank >= 0) {
        int bad = v->rank != out->rank;
        for (int d = 0; !bad && d < v->rank; d++)
            bad = v->dims[d] >= 0 && out->dims[d] >= 0 && v->dims[d] != out->dims[d];
        if (bad && v->is_output)
            return mf_error(MINFER_ERR_SHAPE,
                            "%s: %s output '%s' has shape %s, but the model declares %s",
                            s->errctx, node_label(n, i, lbl, sizeof lbl), v->name,
                            mf_shape_str(out->dims, out->rank, a, sizeof a),
                            mf_shape_str(v->dims, v->rank, b, sizeof b));
    }
    return MINFER_OK;
}

/* Inference and folding over the whole graph for the plan's input shapes. */
static minfer_status plan_infer(minfer_session *s, plan *p) {
    const mf_graph *g = s->g;
    char lbl[512], err[1024];
    minfer_tensor_view in[64], out[64];
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        nstate *ns = &p->nodes[i];
        minfer_status st;
        if (n->n_inputs > 64 || n->n_outputs > 64)
            return mf_error(MINFER_ERR_LIMIT, "%s: %s has more than 64 inputs or outputs",
                            s->errctx, node_label(n, i, lbl, sizeof lbl));
        int all_known = 1, any_dynamic = 0;
        for (size_t j = 0; j < n->n_inputs; j++) {
            int vi = n->inputs[j];
            memset(&in[j], 0, sizeof in[j]);
            in[j].rank = -1;
            if (vi < 0)
                continue;
            in[j] = p->vals[vi].view;
            if (!p->vals[vi].known) {
                in[j].data = NULL;
                in[j].nbytes = 0;
                all_known = 0;
            }
            any_dynamic |= p->vals[vi].dynamic;
        }
        for (size_t o = 0; o < n->n_outputs; o++) {
            memset(&out[o], 0, sizeof out[o]);
            out[o].rank = -1;
        }
        err[0] = '\0';
        st = mf_infer_node(n, in, n->n_inputs, out, n->n_outputs, err, sizeof err);
        if (st != MINFER_OK)
            return mf_error(st, "%s: %s: %s", s->errctx, node_label(n, i, lbl, sizeof lbl),
                            err[0] ? err : minfer_status_str(st));
        int outs_static = 1;
        for (size_t o = 0; o < n->n_outputs; o++) {
            int vi = n->outputs[o];
            if (vi < 0)
                continue;
            if ((st = check_declared(s, i, o, &g->values[vi], &out[o])) != MINFER_OK)
                return st;
            vstate *vs = &p->vals[vi];
            vs->view = out[o];
            vs->view.kind = MINFER_VALUE_TENSOR;
            vs->known = 0;
            if (!view_static(&out[o]))
                outs_static = 0;
        }
        ns->folded = 0;
        ns->dynamic = 0;
        if (p->concrete && (!outs_static || any_dynamic)) {
            ns->dynamic = 1;
            for (size_t o = 0; o < n->n_outputs; o++)
                if (n->outputs[o] >= 0)
                    p->vals[n->outputs[o]].dynamic = 1;
            continue;
        }
        if (!outs_static)
            continue;
        int done = 0;
        if ((st = fold_shape_op(s, p, i, &done)) != MINFER_OK)
            return st;
        if (done || !all_known)
            continue;
        int64_t total = 0;
        for (size_t o = 0; o < n->n_outputs; o++) {
            int64_t ne = 0;
            if (n->outputs[o] >= 0 &&
                mf_numel(p->vals[n->outputs[o]].view.dims, p->vals[n->outputs[o]].view.rank,
                         &ne) == MINFER_OK)
                total += ne;
        }
        if (total > FOLD_MAX_ELEMS)
            continue;
        if ((st = fold_node(s, p, i, &done)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

static plan *plan_new(minfer_session *s) {
    plan *p = mf_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->vals = mf_calloc(s->g->n_values + 1, sizeof *p->vals);
    p->nodes = mf_calloc(s->g->n_nodes + 1, sizeof *p->nodes);
    if (!p->vals || !p->nodes) {
        plan_free(s, p);
        return NULL;
    }
    for (size_t v = 0; v < s->g->n_values; v++) {
        const mf_value *val = &s->g->values[v];
        vstate *vs = &p->vals[v];
        vs->mirror_prov = -1;
        vs->view.kind = MINFER_VALUE_TENSOR;
        vs->view.dtype = val->dtype;
        vs->view.rank = val->rank;
        memcpy(vs->view.dims, val->dims, sizeof vs->view.dims);
        if (val->initializer) {
            vs->view = val->initializer->view;
            vs->known = 1;
        }
    }
    return p;
}

/* Allocates storage and prepares every node of a concrete plan. */
static minfer_status plan_prepare(minfer_session *s, plan *p) {
    const mf_graph *g = s->g;
    char lbl[512];
    minfer_status st;
    size_t max_ws = 0;
    for (size_t v = 0; v < g->n_values; v++) {
        vstate *vs = &p->vals[v];
        const mf_value *val = &g->values[v];
        if (vs->known || vs->dynamic || val->is_input || val->initializer || val->producer < 0)
            continue;
        size_t bytes = view_bytes(&vs->view);
        vs->owned = alloc_host(bytes);
        if (!vs->owned)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory allocating %zu bytes for '%s'",
                            s->errctx, bytes, val->name);
        vs->view.data = vs->owned;
        vs->view.nbytes = bytes;
    }
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        nstate *ns = &p->nodes[i];
        const mf_node *n = &g->nodes[i];
        if (ns->folded || ns->dynamic)
            continue;
        if (s->assign[i] < 0)
            return mf_error(MINFER_ERR_UNSUPPORTED,
                            "%s: %s was folded at build but not for these input shapes",
                            s->errctx, node_label(n, i, lbl, sizeof lbl));
        mf_provider_inst *pi = &s->provs[s->assign[i]];
        if ((st = fill_desc(s, p, i)) != MINFER_OK)
            return st;
        for (size_t o = 0; o < n->n_outputs; o++) {
            ns->inplace[o] = -1;
            ns->layouts[o] = 0;
        }
        minfer_node_prep prep = {sizeof prep, 0, ns->inplace, ns->layouts};
        if (MF_VT_HAS(pi->vt, prepare_node)) {
            mf_error_clear();
            st = pi->vt->prepare_node(pi->ctx, &ns->desc, &prep, &ns->state);
            if (st != MINFER_OK)
                return mf_error_prefix(st, "%s: provider '%s' could not prepare %s", s->errctx,
                                       pi->name, node_label(n, i, lbl, sizeof lbl));
        }
        ns->prepared = 1;
        ns->workspace = prep.workspace_bytes;
        if (prep.workspace_bytes > max_ws)
            max_ws = prep.workspace_bytes;
    }
    if (max_ws) {
        p->workspace = alloc_host(max_ws);
        if (!p->workspace)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory for %zu bytes of workspace",
                            s->errctx, max_ws);
        p->workspace_bytes = max_ws;
    }
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
    s->provs = mf_calloc(n + 1, sizeof *s->provs);
    if (!s->provs) {
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
            const char *why = minfer_last_error();
            /* The default list names providers that may simply not be installed. */
            int quiet = from_default && strcmp(names[i], "cpu") != 0;
            log_msg(s, quiet ? MINFER_LOG_INFO : MINFER_LOG_WARN, "skipping provider '%s': %s",
                    names[i], why);
            int w = snprintf(failures + flen, sizeof failures - flen, "%s%s", flen ? "; " : "",
                             why);
            if (w > 0 && (size_t)w < sizeof failures - flen)
                flen += (size_t)w;
            continue;
        }
        s->provs[s->n_provs++] = inst;
        log_msg(s, MINFER_LOG_INFO, "provider '%s' loaded from %s", inst.name, inst.path);
    }
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
            log_msg(s, MINFER_LOG_INFO,
                    "no '%s' provider for constant folding (%s); shapes that depend on "
                    "computed values are resolved at run time",
                    EVAL_PROVIDER, minfer_last_error());
    }
done:
    free(copy);
    if (names != (opt ? opt->providers : NULL))
        free(names);
    return st;
}

static minfer_status assign_nodes(minfer_session *s) {
    const mf_graph *g = s->g;
    plan *p = s->build;
    char lbl[512];
    minfer_status st;
    s->assign = mf_malloc((g->n_nodes + 1) * sizeof *s->assign);
    if (!s->assign)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        s->assign[i] = -1;
        if (p->nodes[i].folded)
            continue;
        if ((st = fill_desc(s, p, i)) != MINFER_OK)
            return st;
        char reasons[1536] = "";
        size_t used = 0;
        for (size_t j = 0; j < s->n_provs && s->assign[i] < 0; j++) {
            char why[512] = "";
            if (s->provs[j].vt->supports_operator(s->provs[j].ctx, &p->nodes[i].desc, why,
                                                  sizeof why)) {
                s->assign[i] = (int)j;
                break;
            }
            log_msg(s, MINFER_LOG_VERBOSE, "%s: provider '%s' declined: %s",
                    node_label(n, i, lbl, sizeof lbl), s->provs[j].name,
                    why[0] ? why : "no reason given");
            int w = snprintf(reasons + used, sizeof reasons - used, "%s%s: %s",
                             used ? "; " : "", s->provs[j].name, why[0] ? why : "declined");
            if (w > 0 && (size_t)w < sizeof reasons - used)
                used += (size_t)w;
        }
        if (s->assign[i] < 0)
            return mf_error(MINFER_ERR_UNSUPPORTED, "%s: no provider supports %s (%s)", s->errctx,
                            node_label(n, i, lbl, sizeof lbl), reasons);
        log_msg(s, MINFER_LOG_VERBOSE, "%s -> %s", node_label(n, i, lbl, sizeof lbl),
                s->provs[s->assign[i]].name);
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
        const vstate *vs = &s->build->vals[vi];
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
    }
    return MINFER_OK;
}

void minfer_session_free(minfer_session *s) {
    if (!s)
        return;
    plan_free(s, s->cur);
    plan_free(s, s->build);
    for (size_t i = 0; i < s->n_provs; i++)
        mf_provider_close(&s->provs[i]);
    mf_provider_close(&s->eval_own);
    free(s->provs);
    free(s->assign);
    free(s->in_info);
    free(s->out_info);
    mf_pool_free(s->pool);
    mf_graph_free(s->g);
    pthread_mutex_destroy(&s->run_lock);
    free(s->errctx);
    free(s);
}

static int graph_inputs_static(const mf_graph *g) {
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        if (v->rank < 0)
            return 0;
        for (int d = 0; d < v->rank; d++)
            if (v->dims[d] < 0)
                return 0;
    }
    return 1;
}

static minfer_status build_plan_for(minfer_session *s, const int64_t *sig, size_t sig_len,
                                    const minfer_tensor *const *bound, plan **out);

minfer_status mf_session_create_graph(mf_graph *g, const minfer_options *opt, const char *errctx,
                                      minfer_session **out) {
    minfer_status st;
    minfer_session *s = NULL;
    double t0 = now_ms();
    if (!out) {
        mf_graph_free(g);
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create: out is NULL");
    }
    *out = NULL;
    s = mf_calloc(1, sizeof *s);
    if (!s) {
        mf_graph_free(g);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
    }
    pthread_mutex_init(&s->run_lock, NULL);
    s->g = g;
    s->errctx = mf_strdup(errctx);
    s->log_level = opt && opt->log_level >= 0 ? opt->log_level : env_log_level();
    int threads = opt ? opt->threads : 0;
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)(n > 64 ? 64 : n) : 1;
    }
    s->pool = mf_pool_create(threads);
    if (!s->errctx || !s->pool) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    s->api.abi_version = MINFER_PROVIDER_ABI_VERSION;
    s->api.struct_size = sizeof s->api;
    s->api.log = host_log;
    s->api.set_error = host_set_error;
    s->api.attr_type = host_attr_type;
    s->api.attr_int = host_attr_int;
    s->api.attr_float = host_attr_float;
    s->api.attr_string = host_attr_string;
    s->api.attr_ints = host_attr_ints;
    s->api.attr_floats = host_attr_floats;
    s->api.attr_tensor = host_attr_tensor;
    s->api.num_threads = host_num_threads;
    s->api.parallel_for = host_parallel_for;
    s->api.alloc_output = host_alloc_output;

    if ((st = open_providers(s, opt)) != MINFER_OK)
        goto fail;
    s->build = plan_new(s);
    if (!s->build) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    if ((st = plan_infer(s, s->build)) != MINFER_OK)
        goto fail;
    if ((st = assign_nodes(s)) != MINFER_OK)
        goto fail;
    if ((st = make_infos(s)) != MINFER_OK)
        goto fail;
    if (graph_inputs_static(g)) {
        int64_t sig[MINFER_MAX_RANK * 64];
        size_t len = 0;
        for (size_t k = 0; k < g->n_inputs && len + MINFER_MAX_RANK + 1 < sizeof sig / sizeof sig[0];
             k++) {
            const mf_value *v = &g->values[g->inputs[k]];
            sig[len++] = v->rank;
            for (int d = 0; d < v->rank; d++)
                sig[len++] = v->dims[d];
        }
        if ((st = build_plan_for(s, sig, len, NULL, &s->cur)) != MINFER_OK)
            goto fail;
    }
    if (s->log_level >= MINFER_LOG_INFO) {
        size_t folded = 0;
        for (size_t i = 0; i < g->n_nodes; i++)
            folded += s->assign[i] < 0;
        log_msg(s, MINFER_LOG_INFO, "%s: session built in %.1f ms: %zu nodes (%zu constant)",
                errctx, now_ms() - t0, g->n_nodes, folded);
        for (size_t j = 0; j < s->n_provs; j++) {
            size_t c = 0;
            for (size_t i = 0; i < g->n_nodes; i++)
                c += s->assign[i] == (int)j;
            log_msg(s, MINFER_LOG_INFO, "  %zu nodes on provider '%s'", c, s->provs[j].name);
        }
    }
    *out = s;
    return MINFER_OK;
fail:
    minfer_session_free(s);
    return st;
}

static minfer_status read_file(const char *path, void **data, size_t *size) {
    struct stat sb;
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return mf_error(MINFER_ERR_IO, "%s: cannot open the model file: %s", path,
                        strerror(errno));
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return mf_error(MINFER_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > (uint64_t)MAX_MODEL_BYTES) {
        fclose(f);
        return mf_error(MINFER_ERR_LIMIT, "%s: the model file is %lld bytes, above the limit of %lld",
                        path, (long long)sb.st_size, (long long)MAX_MODEL_BYTES);
    }
    long len = (long)sb.st_size;
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
    mf_graph *g = NULL;
    minfer_status st;
    if (out)
        *out = NULL;
    if (!model_path || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create: NULL argument");
    if ((st = read_file(model_path, &data, &size)) != MINFER_OK)
        return st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", model_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    st = mf_load_onnx(data, size, dir, model_path, &g);
    free(data);
    if (st != MINFER_OK)
        return st;
    return mf_session_create_graph(g, opt, model_path, out);
}

minfer_status minfer_session_create_from_memory(const void *data, size_t size,
                                                const minfer_options *opt, minfer_session **out) {
    mf_graph *g = NULL;
    minfer_status st;
    if (out)
        *out = NULL;
    if (!data || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create_from_memory: NULL argument");
    if ((st = mf_load_onnx(data, size, ".", "<memory>", &g)) != MINFER_OK)
        return st;
    return mf_session_create_graph(g, opt, "<memory>", out);
}

/* ---- run ------------------------------------------------------------------ */

static minfer_status build_plan_for(minfer_session *s, const int64_t *sig, size_t sig_len,
                                    const minfer_tensor *const *bound, plan **out) {
    minfer_status st;
    const mf_graph *g = s->g;
    (void)bound;
    plan *p = plan_new(s);
    if (!p)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    p->concrete = 1;
    p->sig = mf_malloc((sig_len + 1) * sizeof *p->sig);
    if (!p->sig) {
        plan_free(s, p);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    memcpy(p->sig, sig, sig_len * sizeof *sig);
    p->sig_len = sig_len;
    /* Concrete input dims from the signature. */
    size_t pos = 0;
    for (size_t k = 0; k < g->n_inputs; k++) {
        vstate *vs = &p->vals[g->inputs[k]];
        vs->view.rank = (int32_t)sig[pos++];
        for (int d = 0; d < vs->view.rank; d++)
            vs->view.dims[d] = sig[pos++];
    }
    if ((st = plan_infer(s, p)) != MINFER_OK || (st = plan_prepare(s, p)) != MINFER_OK) {
        plan_free(s, p);
        return st;
    }
    *out = p;
    return MINFER_OK;
}

static minfer_status check_inputs(minfer_session *s, const char *const *names,
                                  const minfer_tensor *const *inputs, size_t n,
                                  const minfer_tensor **bound, int64_t *sig, size_t *sig_len) {
    const mf_graph *g = s->g;
    char a[160], b[160];
    for (size_t k = 0; k < g->n_inputs; k++)
        bound[k] = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !inputs[i])
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: run: input %zu has a NULL name or tensor",
                            s->errctx, i);
        size_t k = 0;
        while (k < g->n_inputs && strcmp(g->values[g->inputs[k]].name, names[i]) != 0)
            k++;
        if (k == g->n_inputs) {
            char list[512] = "";
            size_t used = 0;
            for (size_t j = 0; j < g->n_inputs; j++) {
                int w = snprintf(list + used, sizeof list - used, "%s'%s'", j ? ", " : "",
                                 g->values[g->inputs[j]].name);
                if (w < 0 || (size_t)w >= sizeof list - used)
                    break;
                used += (size_t)w;
            }
            int vi = mf_graph_find(g, names[i]);
            return mf_error(MINFER_ERR_NOT_FOUND, "%s: run: '%s' is not an input of the model%s (inputs: %s)",
                            s->errctx, names[i],
                            vi >= 0 && g->values[vi].initializer ? " (it is an initializer)" : "",
                            list);
        }
        if (bound[k])
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: run: input '%s' is given twice",
                            s->errctx, names[i]);
        bound[k] = inputs[i];
    }
    size_t pos = 0;
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        const minfer_tensor *t = bound[k];
        if (!t)
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: run: input '%s' is missing", s->errctx,
                            v->name);
        if (t->view.dtype != v->dtype)
            return mf_error(MINFER_ERR_TYPE, "%s: run: input '%s' expects %s, got %s", s->errctx,
                            v->name, minfer_dtype_name((minfer_dtype)v->dtype),
                            minfer_dtype_name((minfer_dtype)t->view.dtype));
        int bad = v->rank >= 0 && t->view.rank != v->rank;
        for (int d = 0; !bad && v->rank >= 0 && d < v->rank; d++)
            bad = v->dims[d] >= 0 && t->view.dims[d] != v->dims[d];
        /* The same symbolic name must mean the same size everywhere. */
        for (int d = 0; !bad && v->rank >= 0 && d < v->rank; d++) {
            if (!v->dim_params[d])
                continue;
            for (size_t k2 = 0; k2 < k && !bad; k2++) {
                const mf_value *v2 = &g->values[g->inputs[k2]];
                for (int d2 = 0; d2 < v2->rank && !bad; d2++)
                    if (v2->dim_params[d2] && strcmp(v2->dim_params[d2], v->dim_params[d]) == 0 &&
                        bound[k2]->view.dims[d2] != t->view.dims[d]) {
                        return mf_error(MINFER_ERR_SHAPE,
                                        "%s: run: input '%s' dimension %d ('%s') is %lld but "
                                        "input '%s' gives '%s' as %lld",
                                        s->errctx, v->name, d, v->dim_params[d],
                                        (long long)t->view.dims[d], v2->name, v->dim_params[d],
                                        (long long)bound[k2]->view.dims[d2]);
                    }
            }
        }
        if (bad) {
            char expect[160];
            int64_t shown[MINFER_MAX_RANK];
            for (int d = 0; d < v->rank; d++)
                shown[d] = v->dims[d];
            mf_shape_str(shown, v->rank, a, sizeof a);
            snprintf(expect, sizeof expect, "%s", a);
            return mf_error(MINFER_ERR_SHAPE, "%s: run: input '%s' expects shape %s, got %s",
                            s->errctx, v->name, expect,
                            mf_shape_str(t->view.dims, t->view.rank, b, sizeof b));
        }
        sig[pos++] = t->view.rank;
        for (int d = 0; d < t->view.rank; d++)
            sig[pos++] = t->view.dims[d];
    }
    *sig_len = pos;
    return MINFER_OK;
}

/* The view of value vi as node i's provider should see it: host storage, or
 * a mirror in the provider's domain (copied in now). */
static minfer_status input_view(minfer_session *s, plan *p, int prov, int vi,
                                minfer_tensor_view *out) {
    vstate *vs = &p->vals[vi];
    *out = vs->view;
    if (prov < 0 || s->provs[prov].host_memory)
        return MINFER_OK;
    mf_provider_inst *pi = &s->provs[prov];
    minfer_status st;
    size_t bytes = view_bytes(&vs->view);
    if (vs->mirror_prov != prov) {
        if (vs->mirror)
            s->provs[vs->mirror_prov].vt->mem_free(s->provs[vs->mirror_prov].ctx, vs->mirror);
        vs->mirror = NULL;
        vs->mirror_prov = -1;
        if ((st = pi->vt->mem_alloc(pi->ctx, bytes ? bytes : 1, &vs->mirror)) != MINFER_OK)
            return mf_error_prefix(st, "%s: provider '%s' could not allocate %zu bytes for '%s'",
                                   s->errctx, pi->name, bytes, s->g->values[vi].name);
        vs->mirror_prov = prov;
    }
    out->data = vs->mirror;
    out->offset = 0;
    out->nbytes = bytes;
    out->layout = 0;
    if ((st = pi->vt->copy_from_host(pi->ctx, vs->view.data, bytes, out)) != MINFER_OK)
        return mf_error_prefix(st, "%s: copying '%s' to provider '%s'", s->errctx,
                               s->g->values[vi].name, pi->name);
    return MINFER_OK;
}

static minfer_status run_dynamic_node(minfer_session *s, plan *p, int i, run_ctx *rc,
                                      minfer_tensor_view *in, minfer_tensor_view *out) {
    const mf_node *n = &s->g->nodes[i];
    nstate *ns = &p->nodes[i];
    char lbl[512], err[1024] = "";
    minfer_status st = mf_infer_node(n, in, n->n_inputs, out, n->n_outputs, err, sizeof err);
    if (st != MINFER_OK)
        return mf_error(st, "%s: %s: %s", s->errctx, node_label(n, i, lbl, sizeof lbl),
                        err[0] ? err : minfer_status_str(st));
    for (size_t o = 0; o < n->n_outputs; o++) {
        int vi = n->outputs[o];
        out[o].kind = MINFER_VALUE_TENSOR;
        if (vi < 0 || !view_static(&out[o])) {
            out[o].data = NULL;
            if (vi >= 0)
                p->vals[vi].view = out[o];
            continue;
        }
        size_t bytes = view_bytes(&out[o]);
        void *mem = alloc_host(bytes);
        if (!mem || track_temp(rc, mem) != 0) {
            free(mem);
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        }
        out[o].data = mem;
        out[o].nbytes = bytes;
        p->vals[vi].view = out[o];
    }
    if (s->assign[i] < 0)
        return mf_error(MINFER_ERR_UNSUPPORTED, "%s: %s has no provider for these shapes",
                        s->errctx, node_label(n, i, lbl, sizeof lbl));
    /* Prepare for these shapes, run, release. */
    mf_provider_inst *pi = &s->provs[s->assign[i]];
    if ((st = fill_desc(s, p, i)) != MINFER_OK)
        return st;
    for (size_t o = 0; o < n->n_outputs; o++) {
        ns->inplace[o] = -1;
        ns->layouts[o] = 0;
    }
    minfer_node_prep prep = {sizeof prep, 0, ns->inplace, ns->layouts};
    void *state = NULL, *work = NULL;
    if (MF_VT_HAS(pi->vt, prepare_node) &&
        (st = pi->vt->prepare_node(pi->ctx, &ns->desc, &prep, &state)) != MINFER_OK)
        return mf_error_prefix(st, "%s: preparing %s", s->errctx,
                               node_label(n, i, lbl, sizeof lbl));
    if (prep.workspace_bytes && !(work = alloc_host(prep.workspace_bytes)))
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    if (st == MINFER_OK) {
        minfer_exec_args args = {sizeof args, rc, &ns->desc, in, n->n_inputs, out, n->n_outputs,
                                 work, prep.workspace_bytes};
        mf_error_clear();
        st = pi->vt->execute_node(pi->ctx, state, &args);
        if (st != MINFER_OK)
            mf_error_prefix(st, "%s: provider '%s' failed on %s", s->errctx, pi->name,
                            node_label(n, i, lbl, sizeof lbl));
    }
    if (state && MF_VT_HAS(pi->vt, release_node))
        pi->vt->release_node(pi->ctx, state);
    free(work);
    return st;
}

static minfer_status execute_plan(minfer_session *s, plan *p, run_ctx *rc) {
    const mf_graph *g = s->g;
    char lbl[512];
    minfer_tensor_view in[64], out[64];
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        nstate *ns = &p->nodes[i];
        if (ns->folded)
            continue;
        int prov = s->assign[i];
        for (size_t j = 0; j < n->n_inputs; j++) {
            memset(&in[j], 0, sizeof in[j]);
            in[j].rank = -1;
            if (n->inputs[j] >= 0 &&
                (st = input_view(s, p, prov, n->inputs[j], &in[j])) != MINFER_OK)
                return st;
        }
        for (size_t o = 0; o < n->n_outputs; o++) {
            memset(&out[o], 0, sizeof out[o]);
            out[o].rank = -1;
            if (n->outputs[o] >= 0)
                out[o] = p->vals[n->outputs[o]].view;
        }
        rc->node = i;
        rc->outputs = out;
        rc->n_outputs = n->n_outputs;
        if (ns->dynamic) {
            if ((st = run_dynamic_node(s, p, i, rc, in, out)) != MINFER_OK)
                return st;
            continue;
        }
        mf_provider_inst *pi = &s->provs[prov];
        if (!pi->host_memory)
            return mf_error(MINFER_ERR_UNSUPPORTED,
                            "%s: %s: outputs in memory domain '%s' are not supported yet",
                            s->errctx, node_label(n, i, lbl, sizeof lbl), pi->vt->memory_domain);
        minfer_exec_args args = {sizeof args, rc, &ns->desc, in, n->n_inputs, out, n->n_outputs,
                                 p->workspace, ns->workspace};
        mf_error_clear();
        st = pi->vt->execute_node(pi->ctx, ns->state, &args);
        if (st != MINFER_OK)
            return mf_error_prefix(st, "%s: provider '%s' failed on %s", s->errctx, pi->name,
                                   node_label(n, i, lbl, sizeof lbl));
    }
    if (p->vals)
        for (size_t i = 0; i < s->n_provs; i++)
            if (!s->provs[i].host_memory && MF_VT_HAS(s->provs[i].vt, synchronize) &&
                (st = s->provs[i].vt->synchronize(s->provs[i].ctx)) != MINFER_OK)
                return mf_error_prefix(st, "%s: provider '%s' synchronize", s->errctx,
                                       s->provs[i].name);
    return MINFER_OK;
}

static minfer_status deliver_output(minfer_session *s, plan *p, int vi, minfer_tensor **slot) {
    const vstate *vs = &p->vals[vi];
    const mf_value *v = &s->g->values[vi];
    char a[160], b[160];
    minfer_status st;
    if (!vs->view.data && view_bytes(&vs->view) > 0)
        return mf_error(MINFER_ERR_RUNTIME, "%s: output '%s' was not computed", s->errctx, v->name);
    size_t bytes = view_bytes(&vs->view);
    if (*slot) {
        minfer_tensor *t = *slot;
        int bad = t->view.rank != vs->view.rank;
        for (int d = 0; !bad && d < t->view.rank; d++)
            bad = t->view.dims[d] != vs->view.dims[d];
        if (t->view.dtype != vs->view.dtype)
            return mf_error(MINFER_ERR_TYPE, "%s: run: output '%s' is %s, but the tensor given "
                            "for it is %s", s->errctx, v->name,
                            minfer_dtype_name((minfer_dtype)vs->view.dtype),
                            minfer_dtype_name((minfer_dtype)t->view.dtype));
        if (bad)
            return mf_error(MINFER_ERR_SHAPE, "%s: run: output '%s' has shape %s, but the tensor "
                            "given for it is %s", s->errctx, v->name,
                            mf_shape_str(vs->view.dims, vs->view.rank, a, sizeof a),
                            mf_shape_str(t->view.dims, t->view.rank, b, sizeof b));
        if (vs->view.dtype == MINFER_DTYPE_STRING) {
            char **dst = t->view.data;
            char *const *src = vs->view.data;
            size_t cnt = bytes / sizeof(char *);
            for (size_t e = 0; e < cnt; e++) {
                char *dup = mf_strdup(src[e] ? src[e] : "");
                if (!dup)
                    return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                if (t->owns_data)
                    free(dst[e]);
                dst[e] = dup;
            }
        } else if (bytes)
            memcpy(t->view.data, vs->view.data, bytes);
        return MINFER_OK;
    }
    minfer_tensor *t = NULL;
    if ((st = mf_tensor_new(vs->view.dtype, vs->view.dims, vs->view.rank, &t)) != MINFER_OK)
        return st;
    if (vs->view.dtype == MINFER_DTYPE_STRING) {
        char **dst = t->view.data;
        char *const *src = vs->view.data;
        for (size_t e = 0; e < bytes / sizeof(char *); e++)
            if (!(dst[e] = mf_strdup(src[e] ? src[e] : ""))) {
                minfer_tensor_free(t);
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            }
    } else if (bytes)
        memcpy(t->view.data, vs->view.data, bytes);
    *slot = t;
    return MINFER_OK;
}

minfer_status minfer_session_run(minfer_session *s, const char *const *input_names,
                                 const minfer_tensor *const *inputs, size_t n_inputs,
                                 const char *const *output_names, minfer_tensor **outputs,
                                 size_t n_outputs) {
    if (!s || (n_inputs && (!input_names || !inputs)) || (n_outputs && !outputs))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_run: NULL argument");
    const mf_graph *g = s->g;
    minfer_status st = MINFER_OK;
    const minfer_tensor **bound = NULL;
    int64_t *sig = NULL;
    int *out_vi = NULL;
    int owned_out[256] = {0};
    size_t sig_len = 0;
    run_ctx rc = {s, NULL, -1, NULL, 0, NULL, 0, 0};

    if (!output_names && n_outputs != g->n_outputs)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "%s: run: without output names, %zu outputs must be requested, not %zu",
                        s->errctx, g->n_outputs, n_outputs);
    if (n_outputs > 256)
        return mf_error(MINFER_ERR_LIMIT, "%s: run: more than 256 outputs requested", s->errctx);
    out_vi = mf_malloc((n_outputs + 1) * sizeof *out_vi);
    bound = mf_calloc(g->n_inputs + 1, sizeof *bound);
    sig = mf_malloc((g->n_inputs * (MINFER_MAX_RANK + 1) + 1) * sizeof *sig);
    if (!out_vi || !bound || !sig) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        goto done;
    }
    for (size_t o = 0; o < n_outputs; o++) {
        if (!output_names) {
            out_vi[o] = g->outputs[o];
            continue;
        }
        int vi = output_names[o] ? mf_graph_find(g, output_names[o]) : -1;
        if (vi < 0 || !g->values[vi].is_output) {
            st = mf_error(MINFER_ERR_NOT_FOUND, "%s: run: '%s' is not an output of the model",
                          s->errctx, output_names[o] ? output_names[o] : "(null)");
            goto done;
        }
        out_vi[o] = vi;
    }
    if ((st = check_inputs(s, input_names, inputs, n_inputs, bound, sig, &sig_len)) != MINFER_OK)
        goto done;

    pthread_mutex_lock(&s->run_lock);
    if (!s->cur || s->cur->sig_len != sig_len ||
        memcmp(s->cur->sig, sig, sig_len * sizeof *sig) != 0) {
        plan *np = NULL;
        log_msg(s, MINFER_LOG_INFO, "%s: new input shapes; building a plan", s->errctx);
        st = build_plan_for(s, sig, sig_len, bound, &np);
        if (st != MINFER_OK) {
            pthread_mutex_unlock(&s->run_lock);
            goto done;
        }
        plan_free(s, s->cur);
        s->cur = np;
    }
    plan *p = s->cur;
    rc.p = p;
    for (size_t k = 0; k < g->n_inputs; k++) {
        vstate *vs = &p->vals[g->inputs[k]];
        vs->view.data = bound[k]->view.data;
        vs->view.nbytes = bound[k]->view.nbytes;
    }
    /* Dynamic values get their shapes back from plan time on each run. */
    st = execute_plan(s, p, &rc);
    for (size_t o = 0; st == MINFER_OK && o < n_outputs; o++) {
        owned_out[o] = outputs[o] == NULL;
        st = deliver_output(s, p, out_vi[o], &outputs[o]);
    }
    for (size_t k = 0; k < g->n_inputs; k++)
        p->vals[g->inputs[k]].view.data = NULL;
    for (size_t v = 0; v < g->n_values; v++)
        if (p->vals[v].dynamic)
            p->vals[v].view.data = NULL;
    pthread_mutex_unlock(&s->run_lock);
    if (st != MINFER_OK)
        for (size_t o = 0; o < n_outputs; o++)
            if (owned_out[o]) {
                minfer_tensor_free(outputs[o]);
                outputs[o] = NULL;
            }
done:
    for (size_t t = 0; t < rc.n_temps; t++)
        free(rc.temps[t]);
    free(rc.temps);
    free(out_vi);
    free(bound);
    free(sig);
    return st;
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
    out->provider = s->assign[i] >= 0 ? s->provs[s->assign[i]].name : "(constant)";
    return MINFER_OK;
}

size_t minfer_session_provider_count(const minfer_session *s) { return s ? s->n_provs : 0; }

const char *minfer_session_provider_name(const minfer_session *s, size_t index) {
    return s && index < s->n_provs ? s->provs[index].name : NULL;
}
