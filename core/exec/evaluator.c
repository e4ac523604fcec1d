/*
 * A stand-alone node evaluator for the optimizer, for callers that have no
 * session (minfer_optimize_model, unit tests): it opens the CPU provider
 * privately and runs one node at a time, serially, on initializer inputs.
 *
 * eval: 1. describe the node's inputs (initializer contents as const_data);
 *       2. infer the outputs' shapes from them and allocate what is static;
 *       3. run it once through the node runner (plan/node_once.c), with the
 *          host table every provider gets (host NULL: no log lines, one
 *          thread); an output the inference left unknown comes back through
 *          alloc_output and is adopted as the caller's tensor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "optimize/optimizer.h"
#include "shapes/shape_infer.h"

struct mf_evaluator {
    minfer_host_api api;
    mf_provider_inst own;       /* opened here (mf_evaluator_open) */
    const mf_provider_inst *cpu; /* own, or a session's evaluator (mf_evaluator_on) */
};

minfer_status mf_evaluator_open(mf_evaluator **out) {
    mf_evaluator *ev = mf_calloc(1, sizeof *ev);
    *out = NULL;
    if (!ev)
        return mf_error(MINFER_ERR_NOMEM, "evaluator: out of memory");
    mf_host_api_init(&ev->api);
    minfer_status st = mf_provider_open("cpu", &ev->api, NULL, "", &ev->own);
    if (st != MINFER_OK) {
        free(ev);
        return mf_error_prefix(st, "evaluator");
    }
    ev->cpu = &ev->own;
    *out = ev;
    return MINFER_OK;
}

minfer_status mf_evaluator_on(const mf_provider_inst *cpu, mf_evaluator **out) {
    mf_evaluator *ev = mf_calloc(1, sizeof *ev);
    *out = NULL;
    if (!ev)
        return mf_error(MINFER_ERR_NOMEM, "evaluator: out of memory");
    ev->cpu = cpu;
    *out = ev;
    return MINFER_OK;
}

void mf_evaluator_close(mf_evaluator *ev) {
    if (!ev)
        return;
    mf_provider_close(&ev->own); /* nothing when it runs on a session's */
    free(ev);
}

/* An owning tensor for storage that alloc_output made (view v). */
static minfer_status adopt(mf_run *r, const minfer_tensor_view *v, minfer_tensor **out) {
    minfer_tensor *t = mf_calloc(1, sizeof *t);
    if (!t)
        return mf_error(MINFER_ERR_NOMEM, "evaluator: out of memory");
    mf_run_untrack(r, v->data);
    t->view = *v;
    t->owns_data = 1;
    *out = t;
    return MINFER_OK;
}

minfer_status mf_evaluator_eval_node(void *user, const mf_graph *g, int node,
                                     minfer_tensor **outputs) {
    mf_evaluator *ev = user;
    minfer_value_desc in_desc[MF_MAX_NODE_IO], out_desc[MF_MAX_NODE_IO];
    minfer_tensor_view in[MF_MAX_NODE_IO], out[MF_MAX_NODE_IO];
    minfer_tensor *owned[MF_MAX_NODE_IO] = {0};
    char err[512] = "";
    minfer_status st;
    if (!ev || !g || node < 0 || (size_t)node >= g->n_nodes || !outputs)
        return mf_error(MINFER_ERR_INVALID_ARG, "evaluator: bad arguments");
    const mf_node *n = &g->nodes[node];
    if (n->n_inputs > MF_MAX_NODE_IO || n->n_outputs > MF_MAX_NODE_IO)
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
    st = mf_place_infer(n, in, n->n_inputs, out, n->n_outputs, err, sizeof err);
    if (st != MINFER_OK)
        return mf_error(st, "evaluator: %s: %s", n->op_type, err);
    for (size_t k = 0; k < n->n_outputs; k++) {
        memset(&out_desc[k], 0, sizeof out_desc[k]);
        out_desc[k].rank = -1;
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
    mf_node_desc_init(&desc, n, in_desc, out_desc);
    if (!mf_place_supports(ev->cpu, &desc, err, sizeof err)) {
        st = mf_error(MINFER_ERR_UNSUPPORTED, "evaluator: %s", err);
        goto done;
    }
    mf_run run = {NULL, NULL, node, out, n->n_outputs, NULL, NULL, NULL, 0, 0, NULL, g, NULL};
    mf_node_step step;
    st = mf_run_node_once(ev->cpu, &desc, in, n->n_inputs, out, n->n_outputs, &run, &step);
    /* Storage alloc_output made replaces what the output had. */
    for (size_t k = 0; st == MINFER_OK && k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && out[k].data &&
            (!owned[k] || out[k].data != owned[k]->view.data)) {
            minfer_tensor_free(owned[k]);
            owned[k] = NULL;
            st = adopt(&run, &out[k], &owned[k]);
        }
    mf_run_free_temps(&run);
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
    for (size_t k = 0; k < n->n_outputs; k++)
        minfer_tensor_free(owned[k]);
    return st;
}
