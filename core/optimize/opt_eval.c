/*
 * A stand-alone node evaluator for the optimizer, for callers that have no
 * session (minfer_optimize_model, unit tests): it opens the CPU provider
 * privately and runs one node at a time, serially, on initializer inputs.
 *
 * eval: 1. describe the node's inputs (initializer contents as const_data);
 *       2. infer the outputs' shapes from them and allocate what is static;
 *       3. prepare, execute and release on the CPU provider; an output the
 *          inference left unknown is allocated through alloc_output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/optimizer.h"
#include "place/provider_loader.h"
#include "shapes/shape_infer.h"

#define MAX_IO 64

struct mf_evaluator {
    minfer_host_api api;
    mf_provider_inst cpu;
};

/* What alloc_output needs during one execute. */
typedef struct eval_run {
    minfer_tensor_view *outputs;
    minfer_tensor **owned;
    size_t n_outputs;
} eval_run;

static void ev_log(void *host, int level, const char *fmt, ...) {
    (void)host;
    (void)level;
    (void)fmt;
}

static void ev_set_error(void *host, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    (void)host;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    mf_error(MINFER_ERR_RUNTIME, "%s", buf);
}

static int ev_threads(void *host) {
    (void)host;
    return 1;
}

static void ev_parallel_for(void *host, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    (void)host;
    (void)grain;
    if (n)
        fn(arg, 0, n);
}

static minfer_status ev_alloc_output(void *run, size_t index, int32_t rank, const int64_t *dims) {
    eval_run *r = run;
    if (!r || index >= r->n_outputs || rank < 0 || rank > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_INVALID_ARG, "alloc_output: bad arguments");
    minfer_tensor *t = NULL;
    minfer_status st = mf_tensor_new(r->outputs[index].dtype, dims, rank, &t);
    if (st != MINFER_OK)
        return st;
    minfer_tensor_free(r->owned[index]);
    r->owned[index] = t;
    r->outputs[index] = t->view;
    return MINFER_OK;
}

minfer_status mf_evaluator_open(mf_evaluator **out) {
    mf_evaluator *ev = mf_calloc(1, sizeof *ev);
    *out = NULL;
    if (!ev)
        return mf_error(MINFER_ERR_NOMEM, "evaluator: out of memory");
    ev->api.abi_version = MINFER_PROVIDER_ABI_VERSION;
    ev->api.struct_size = sizeof ev->api;
    ev->api.log = ev_log;
    ev->api.set_error = ev_set_error;
    mf_host_api_attrs(&ev->api);
    ev->api.num_threads = ev_threads;
    ev->api.parallel_for = ev_parallel_for;
    ev->api.alloc_output = ev_alloc_output;
    minfer_status st = mf_provider_open("cpu", &ev->api, ev, "", &ev->cpu);
    if (st != MINFER_OK) {
        free(ev);
        return mf_error_prefix(st, "evaluator");
    }
    *out = ev;
    return MINFER_OK;
}

void mf_evaluator_close(mf_evaluator *ev) {
    if (!ev)
        return;
    mf_provider_close(&ev->cpu);
    free(ev);
}

minfer_status mf_evaluator_eval_node(void *user, const mf_graph *g, int node,
                                     minfer_tensor **outputs) {
    mf_evaluator *ev = user;
    minfer_value_desc in_desc[MAX_IO], out_desc[MAX_IO];
    minfer_tensor_view in[MAX_IO], out[MAX_IO];
    minfer_tensor *owned[MAX_IO] = {0};
    int32_t inplace[MAX_IO];
    uint64_t layouts[MAX_IO];
    char err[512] = "";
    void *state = NULL, *work = NULL;
    minfer_status st;
    if (!ev || !g || node < 0 || (size_t)node >= g->n_nodes || !outputs)
        return mf_error(MINFER_ERR_INVALID_ARG, "evaluator: bad arguments");
    const mf_node *n = &g->nodes[node];
    const minfer_provider *vt = ev->cpu.vt;
    if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
        return mf_error(MINFER_ERR_LIMIT, "evaluator: %s has too many inputs or outputs",
                        n->op_type);
    for (size_t k = 0; k < n->n_outputs; k++)
        outputs[k] = NULL;
    for (size_t k = 0; k < n->n_inputs; k++) {
        memset(&in[k], 0, sizeof in[k]);
        memset(&in_desc[k], 0, sizeof in_desc[k]);
        in[k].rank = in_desc[k].rank = -1;
        int vi = n->inputs[k];
        if (vi < 0)
            continue;
        const minfer_tensor *t = g->values[vi].initializer;
        if (!t)
            return mf_error(MINFER_ERR_INVALID_ARG, "evaluator: %s input %zu is not constant",
                            n->op_type, k);
        in[k] = t->view;
        in_desc[k].name = g->values[vi].name;
        in_desc[k].dtype = t->view.dtype;
        in_desc[k].rank = t->view.rank;
        memcpy(in_desc[k].dims, t->view.dims, sizeof in_desc[k].dims);
        in_desc[k].const_data =
            t->view.data ? (const char *)t->view.data + t->view.offset : NULL;
        in_desc[k].const_nbytes = t->view.nbytes;
        in_desc[k].present = 1;
    }
    st = mf_infer_node(n, in, n->n_inputs, out, n->n_outputs, err, sizeof err);
    if (st != MINFER_OK)
        return mf_error(st, "evaluator: %s: %s", n->op_type, err);
    for (size_t k = 0; k < n->n_outputs; k++) {
        memset(&out_desc[k], 0, sizeof out_desc[k]);
        out_desc[k].rank = -1;
        inplace[k] = -1;
        layouts[k] = 0;
        if (n->outputs[k] < 0)
            continue;
        out_desc[k].name = g->values[n->outputs[k]].name;
        out_desc[k].dtype = out[k].dtype;
        out_desc[k].rank = out[k].rank;
        memcpy(out_desc[k].dims, out[k].dims, sizeof out_desc[k].dims);
        out_desc[k].present = 1;
        int stat = out[k].rank >= 0 && out[k].dtype;
        for (int d = 0; stat && d < out[k].rank; d++)
            stat = out[k].dims[d] >= 0;
        if (!stat) {
            out[k].rank = -1;
            continue;
        }
        if ((st = mf_tensor_new(out[k].dtype, out[k].dims, out[k].rank, &owned[k])) != MINFER_OK)
            goto done;
        out[k] = owned[k]->view;
    }
    minfer_node_desc desc;
    memset(&desc, 0, sizeof desc);
    desc.struct_size = sizeof desc;
    desc.name = n->name ? n->name : "";
    desc.op_type = n->op_type;
    desc.domain = n->domain ? n->domain : "";
    desc.opset = n->opset;
    desc.n_inputs = n->n_inputs;
    desc.n_outputs = n->n_outputs;
    desc.inputs = in_desc;
    desc.outputs = out_desc;
    desc.host_node = n;
    if (!vt->supports_operator(ev->cpu.ctx, &desc, err, sizeof err)) {
        st = mf_error(MINFER_ERR_UNSUPPORTED, "evaluator: %s", err);
        goto done;
    }
    minfer_node_prep prep;
    memset(&prep, 0, sizeof prep);
    prep.struct_size = sizeof prep;
    prep.output_inplace = inplace;
    prep.output_layouts = layouts;
    if (MF_VT_HAS(vt, prepare_node) &&
        (st = vt->prepare_node(ev->cpu.ctx, &desc, &prep, &state)) != MINFER_OK)
        goto done;
    if (prep.workspace_bytes && !(work = mf_calloc(1, prep.workspace_bytes))) {
        st = mf_error(MINFER_ERR_NOMEM, "evaluator: out of memory");
        goto done;
    }
    eval_run run = {out, owned, n->n_outputs};
    minfer_exec_args args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.run = &run;
    args.node = &desc;
    args.inputs = in;
    args.n_inputs = n->n_inputs;
    args.outputs = out;
    args.n_outputs = n->n_outputs;
    args.workspace = work;
    args.workspace_bytes = prep.workspace_bytes;
    st = vt->execute_node(ev->cpu.ctx, state, &args);
    if (st != MINFER_OK)
        goto done;
    for (size_t k = 0; k < n->n_outputs; k++) {
        if (n->outputs[k] >= 0 && !owned[k]) {
            st = mf_error(MINFER_ERR_RUNTIME, "evaluator: %s output %zu was not computed",
                          n->op_type, k);
            goto done;
        }
    }
    for (size_t k = 0; k < n->n_outputs; k++) {
        outputs[k] = owned[k];
        owned[k] = NULL;
    }
done:
    if (state && MF_VT_HAS(vt, release_node))
        vt->release_node(ev->cpu.ctx, state);
    free(work);
    for (size_t k = 0; k < n->n_outputs; k++)
        minfer_tensor_free(owned[k]);
    return st;
}
