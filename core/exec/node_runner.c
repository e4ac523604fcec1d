/*
 * The host API table providers call back into (exec/exec.h): logging,
 * errors, threads (the run's lane or the session's pool), output
 * allocation into the running node's mf_run, work charged to the run's
 * budget, packed constants, the precision. The node runs through
 * plan/node_once.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "plan/weights.h"
#include "load/mfc.h"

/* ---- the host API ------------------------------------------------------- */

static void host_log(void *host, int level, const char *fmt, ...) {
    const minfer_session *s = host;
    va_list ap;
    if (!s) /* the stand-alone evaluator says nothing */
        return;
    va_start(ap, fmt);
    mf_logv(&s->log, level, fmt, ap);
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

/* The threads of s's pool that one stage of its pipeline gets: the pool's
 * threads divided by the inter-op count (the stage count when it was set;
 * the pool's threads, the most stages there may be, when not), at least
 * 1. The providers of a session under the pipeline scheduler are set up
 * for this many (minfer_host_api.num_threads outside a stage, as at
 * provider init; a plain run of the session, not through the pipe, runs
 * its nodes on as many): a node built for the whole pool but run in a
 * stage on fewer threads pays for the split it cannot use (oneDNN's
 * one-thread pieces, run one after another). */
static int stage_threads(const minfer_session *s) {
    int stages = s->inter_op < 1 ? 1 : s->inter_op;
    int threads = mf_pool_threads(s->pool) / stages;
    return threads < 1 ? 1 : threads;
}

static int host_num_threads(void *host) {
    const minfer_session *s = host;
    if (s && s->scheduler == MINFER_SCHED_PIPELINE) /* what its providers are set up for */
        return stage_threads(s);
    return s ? mf_pool_threads(s->pool) : 1;
}

/* The host-taking parallel_for and claim_threads know no run: the
 * session's pool when no run holds it, else serially (its busy lock);
 * claims above 1 only under the sequential scheduler (minfer/provider.h). */
static void host_parallel_for(void *host, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    minfer_session *s = host;
    mf_pool_parallel_for(s ? s->pool : NULL, n, grain, fn, arg);
}

static int host_claim_threads(void *host, int want) {
    minfer_session *s = host;
    if (want <= 1 || !s || s->scheduler != MINFER_SCHED_SEQUENTIAL)
        return 1;
    int n = mf_pool_threads(s->pool);
    return n < want ? n : want;
}

/* The run-taking forms: the lane of the thread running the node, which
 * its scheduler set up (exec/threadpool.h). A run without a lane (a node
 * evaluated at build) splits over the session's pool. */
static int run_num_threads(void *run) {
    const mf_run *r = run;
    if (!r)
        return 1;
    if (r->lane)
        return mf_lane_threads(r->lane);
    return r->s ? mf_pool_threads(r->s->pool) : 1;
}

static void run_parallel_for(void *run, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    mf_run *r = run;
    if (r && r->lane)
        mf_lane_parallel_for(r->lane, n, grain, fn, arg);
    else
        mf_pool_parallel_for(r && r->s ? r->s->pool : NULL, n, grain, fn, arg);
}

static int run_claim_threads(void *run, int want) {
    mf_run *r = run;
    return mf_lane_claim(r ? r->lane : NULL, want);
}

static void run_log(void *run, int level, const char *fmt, ...) {
    const mf_run *r = run;
    va_list ap;
    if (!r || !r->s) /* the stand-alone evaluator says nothing */
        return;
    va_start(ap, fmt);
    mf_logv_run(&r->s->log, r->budget ? r->budget->ro : NULL, level, fmt, ap);
    va_end(ap);
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
    if (r->s)
        st = mf_value_bytes(r->s, r->node, index, &want, &bytes);
    else if ((st = minfer_view_nbytes(&want, &bytes)) != MINFER_OK ||
             bytes > mf_options_limits(NULL).max_tensor_bytes)
        st = mf_error(MINFER_ERR_LIMIT, "alloc_output: output %zu is too large", index);
    if (st != MINFER_OK)
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
    int vi = r->s ? r->s->g->nodes[r->node].outputs[index] : -1;
    if (vi >= 0) {
        if (r->views)
            r->views[vi] = *v;
        else
            r->p->vals[vi].view = *v;
    }
    return MINFER_OK;
}

/* minfer_host_api.charge_work: work charged by the running node. */
static minfer_status host_charge_work(void *run, uint64_t work) {
    mf_run *r = run;
    if (!r || !r->budget) /* evaluation at build: no run to charge */
        return MINFER_OK;
    return mf_budget_elements(r->budget, r->s, r->node, work);
}

/* minfer_host_api.packed_consts: the compiled file's packed constants for
 * the session graph's node that node describes (load/mfc_read.c). */
static const minfer_packed_const *host_packed_consts(void *host, const minfer_node_desc *node,
                                                     const char *provider, size_t *count) {
    const minfer_session *s = host;
    *count = 0;
    if (!s || !node || !s->g || !s->g->packs || !s->g->n_nodes)
        return NULL;
    uintptr_t n = (uintptr_t)node->host_node, first = (uintptr_t)s->g->nodes;
    if (n < first || (n - first) % sizeof(mf_node) != 0 ||
        (n - first) / sizeof(mf_node) >= s->g->n_nodes)
        return NULL;
    return mf_mfc_packed_for(s->g, (n - first) / sizeof(mf_node), provider, count);
}

/* minfer_host_api.const_consumed: pages of a weight's copy the provider
 * packing it is done with (plan/weights.c). */
static void host_const_consumed(void *host, const minfer_node_desc *node, size_t input,
                                size_t offset, size_t bytes) {
    minfer_session *s = host;
    if (!s || !node || !s->g || !s->g->n_nodes || input >= node->n_inputs)
        return;
    uintptr_t n = (uintptr_t)node->host_node, first = (uintptr_t)s->g->nodes;
    if (n < first || (n - first) % sizeof(mf_node) != 0 ||
        (n - first) / sizeof(mf_node) >= s->g->n_nodes)
        return;
    mf_weights_consumed(s, (int)((n - first) / sizeof(mf_node)), input,
                        node->inputs[input].const_data, offset, bytes);
}

/* minfer_host_api.precision: the session's minfer_options_set_precision. */
static int host_precision(void *host) {
    const minfer_session *s = host;
    return s && s->pl ? s->pl->precision : MINFER_PRECISION_FP32;
}

void mf_host_api_init(minfer_host_api *api) {
    memset(api, 0, sizeof *api);
    api->abi_version = MINFER_PROVIDER_ABI_VERSION;
    api->struct_size = sizeof *api;
    api->log = host_log;
    api->set_error = host_set_error;
    mf_host_api_attrs(api);
    api->num_threads = host_num_threads;
    api->parallel_for = host_parallel_for;
    api->alloc_output = host_alloc_output;
    api->charge_work = host_charge_work;
    api->packed_consts = host_packed_consts;
    api->claim_threads = host_claim_threads;
    api->const_consumed = host_const_consumed;
    api->run_num_threads = run_num_threads;
    api->run_parallel_for = run_parallel_for;
    api->run_claim_threads = run_claim_threads;
    api->run_log = run_log;
    api->precision = host_precision;
}
