/*
 * Building a plan for one signature of input shapes (plan/build.h).
 * Building runs nodes (folding evaluates constants, preparing asks each
 * node's provider for its state) through plan/node_once.c, below the run
 * (exec/), which asks for plans (exec/frame.c).
 *
 * mf_plan_build:
 *  1. inference in topological order with the concrete input dims; a node
 *     whose inputs are all known (initializers, Shape of a static shape,
 *     and what follows from them) and whose outputs are small is folded:
 *     evaluated now on the evaluator (CPU) provider by the node runner, its
 *     outputs become constants of the plan and it never runs. A node whose
 *     output shape depends on contents known only at run time is marked
 *     dynamic, and so is everything downstream of it;
 *  2. storage classes (plan/plan.c);
 *  3. prepare_node for every remaining node with its concrete shapes, which
 *     also yields workspace sizes, in-place permissions and output layouts.
 *     A provider that accepted a node but cannot prepare it (a limit, out of
 *     memory or another resource) hands it to the next provider in the list
 *     that supports it (place/place.c), with one warning; strict placement
 *     makes that an error;
 *  4-6. liveness, in place and offsets (plan/plan.c);
 *  then FLOP estimates for profiles and the arena values' size limit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "place/plugin_loader.h"
#include "plan/build.h"
#include "plan/core_infer.h"
#include "plan/node_once.h"
#include "plan/weights.h"
#include "shapes/shape_infer.h"

/* ---- pass 1: inference and folding ------------------------------------- */

/* Evaluates node i on the evaluator provider, all inputs known, storing its
 * outputs as constants of the plan. *done stays 0 when the evaluator
 * declines the node. */
static minfer_status fold_node(minfer_session *s, mf_plan *p, int i, int *done) {
    const mf_node *n = &s->g->nodes[i];
    mf_nplan *ns = &p->nodes[i];
    minfer_status st = MINFER_OK;
    minfer_tensor_view in[MF_MAX_NODE_IO], out[MF_MAX_NODE_IO];
    char why[256], lbl[512];
    mf_node_step step;
    *done = 0;
    if (!s->pl->eval || n->n_inputs > MF_MAX_NODE_IO || n->n_outputs > MF_MAX_NODE_IO)
        return MINFER_OK;
    if ((st = mf_plan_node_desc(s, p, i)) != MINFER_OK)
        return st;
    mf_provider_inst *ev = s->pl->eval;
    if (!mf_place_supports(ev, &ns->desc, why, sizeof why) &&
        !(ev = mf_plugin_folder(s->pl->provs, s->pl->n_provs, &ns->desc))) /* a deterministic plugin op */
        return MINFER_OK;
    for (size_t k = 0; k < n->n_inputs; k++) {
        int vi = n->inputs[k];
        memset(&in[k], 0, sizeof in[k]);
        in[k].rank = -1;
        if (vi >= 0)
            in[k] = p->vals[vi].view;
    }
    for (size_t o = 0; o < n->n_outputs; o++) {
        int vi = n->outputs[o];
        memset(&out[o], 0, sizeof out[o]);
        out[o].rank = -1;
        if (vi < 0)
            continue;
        mf_vplan *vs = &p->vals[vi];
        size_t bytes = mf_view_bytes(&vs->view);
        vs->owned = mf_alloc_host(bytes);
        if (!vs->owned) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory folding constants", s->errctx);
            goto done;
        }
        vs->view.data = vs->owned;
        vs->view.nbytes = bytes;
        out[o] = vs->view;
    }
    mf_run rc = {s, p, i, out, n->n_outputs, NULL, NULL, NULL, 0, 0, NULL, NULL, NULL};
    st = mf_run_node_once(ev, &ns->desc, in, n->n_inputs, out, n->n_outputs, &rc, &step);
    mf_run_free_temps(&rc);
    if (st != MINFER_OK) {
        if (step == MF_NODE_WORKSPACE)
            mf_error(st, "%s: out of memory folding constants", s->errctx);
        else
            mf_error_prefix(st, step == MF_NODE_PREPARE ? "%s: folding %s"
                                                        : "%s: evaluating constant %s",
                            s->errctx, mf_node_label(n, i, lbl, sizeof lbl));
        goto done;
    }
    for (size_t o = 0; s->check_nan && o < n->n_outputs; o++) {
        int is_nan = 0;
        int64_t e = n->outputs[o] >= 0 ? mf_find_nan(&p->vals[n->outputs[o]].view, &is_nan) : -1;
        if (e >= 0) {
            st = mf_error(MINFER_ERR_RUNTIME,
                          "%s: NaN check: %s produced %s in output '%s' (element %lld) while "
                          "computing constants",
                          s->errctx, mf_node_label(n, i, lbl, sizeof lbl), is_nan ? "NaN" : "Inf",
                          s->g->values[n->outputs[o]].name, (long long)e);
            goto done;
        }
    }
    for (size_t o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0) {
            p->vals[n->outputs[o]].known = 1;
            p->const_bytes += p->vals[n->outputs[o]].view.nbytes;
        }
    ns->folded = 1;
    *done = 1;
done:
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

/* Ops whose outputs differ from run to run are never folded. */
static int deterministic(const mf_node *n) {
    static const char *const random_ops[] = {"RandomNormal", "RandomUniform", "RandomNormalLike",
                                             "RandomUniformLike", "Multinomial", "Bernoulli"};
    if (n->domain[0])
        return 1;
    for (size_t k = 0; k < sizeof random_ops / sizeof random_ops[0]; k++)
        if (strcmp(n->op_type, random_ops[k]) == 0)
            return 0;
    return 1;
}

/* Shape and Size are known from a static input shape alone. */
static minfer_status fold_shape_op(minfer_session *s, mf_plan *p, int i, int *done) {
    const mf_node *n = &s->g->nodes[i];
    *done = 0;
    if (n->domain[0] || n->n_inputs < 1 || n->inputs[0] < 0 || n->n_outputs < 1 ||
        n->outputs[0] < 0)
        return MINFER_OK;
    int is_shape = strcmp(n->op_type, "Shape") == 0, is_size = strcmp(n->op_type, "Size") == 0;
    if (!is_shape && !is_size)
        return MINFER_OK;
    const minfer_tensor_view *x = &p->vals[n->inputs[0]].view;
    mf_vplan *y = &p->vals[n->outputs[0]];
    if (!mf_view_static(x) || !mf_view_static(&y->view) || y->view.dtype != MINFER_DTYPE_INT64)
        return MINFER_OK;
    int64_t values[MINFER_MAX_RANK];
    int64_t count = 0;
    if (is_size) {
        if (mf_numel(x->dims, x->rank, &values[0]) != MINFER_OK)
            return MINFER_OK;
        count = 1;
    } else {
        int64_t r = x->rank, start, end;
        minfer_shape_range(r, mf_attr_int(n, "start", 0), mf_attr_int(n, "end", r), &start, &end);
        for (int64_t d = start; d < end; d++)
            values[count++] = x->dims[d];
    }
    if ((size_t)count * sizeof(int64_t) != mf_view_bytes(&y->view))
        return MINFER_OK; /* inference disagrees; leave it to the kernel */
    y->owned = mf_alloc_host((size_t)count * sizeof(int64_t));
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
                        s->errctx, mf_node_label(n, i, lbl, sizeof lbl), o, v->name,
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
                            s->errctx, mf_node_label(n, i, lbl, sizeof lbl), v->name,
                            mf_shape_str(out->dims, out->rank, a, sizeof a),
                            mf_shape_str(v->dims, v->rank, b, sizeof b));
    }
    return MINFER_OK;
}

/* in[] and out[] hold as many views as the graph's largest node has inputs
 * and outputs. */
static minfer_status plan_infer(minfer_session *s, mf_plan *p, minfer_tensor_view *in,
                                minfer_tensor_view *out) {
    const mf_graph *g = s->g;
    char lbl[512], err[1024];
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        mf_nplan *ns = &p->nodes[i];
        minfer_status st;
        int all_known = 1, any_dynamic = 0;
        if (k % 256 == 0 && (st = mf_creation_check(s, "shape inference, node %zu of %zu", k,
                                                    g->n_nodes)) != MINFER_OK)
            return st;
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
        ns->core = mf_core_op(n);
        for (size_t j = 0; j < n->n_inputs; j++)
            ns->core |= n->inputs[j] >= 0 && in[j].kind != MINFER_VALUE_TENSOR;
        if (ns->core) {
            /* Run by the core: outputs are made when it runs. */
            st = mf_core_infer(s, i, in, out, err, sizeof err);
            if (st != MINFER_OK)
                return mf_error(st, "%s: %s: %s", s->errctx, mf_node_label(n, i, lbl, sizeof lbl),
                                err[0] ? err : minfer_status_str(st));
            ns->folded = 0;
            ns->dynamic = 1;
            for (size_t o = 0; o < n->n_outputs; o++) {
                int vi = n->outputs[o];
                if (vi < 0)
                    continue;
                if (out[o].kind == MINFER_VALUE_TENSOR &&
                    (st = check_declared(s, i, o, &g->values[vi], &out[o])) != MINFER_OK)
                    return st;
                if (!out[o].dtype)
                    out[o].dtype = g->values[vi].dtype;
                size_t bytes;
                if (out[o].kind == MINFER_VALUE_TENSOR && mf_view_static(&out[o]) &&
                    out[o].dtype && (st = mf_value_bytes(s, i, o, &out[o], &bytes)) != MINFER_OK)
                    return st;
                p->vals[vi].view = out[o];
                p->vals[vi].known = 0;
                p->vals[vi].dynamic = 1;
            }
            continue;
        }
        st = mf_place_infer(n, in, n->n_inputs, out, n->n_outputs, err, sizeof err);
        if (st != MINFER_OK)
            return mf_error(st, "%s: %s: %s", s->errctx, mf_node_label(n, i, lbl, sizeof lbl),
                            err[0] ? err : minfer_status_str(st));
        int outs_static = 1;
        for (size_t o = 0; o < n->n_outputs; o++) {
            int vi = n->outputs[o];
            if (vi < 0)
                continue;
            if ((st = check_declared(s, i, o, &g->values[vi], &out[o])) != MINFER_OK)
                return st;
            /* Every inferred size is checked where it is made, naming the
             * node: nothing later sees a count that wrapped. */
            size_t bytes;
            if (mf_view_static(&out[o]) && out[o].dtype &&
                (st = mf_value_bytes(s, i, o, &out[o], &bytes)) != MINFER_OK)
                return st;
            mf_vplan *vs = &p->vals[vi];
            vs->view = out[o];
            vs->view.kind = MINFER_VALUE_TENSOR;
            vs->known = 0;
            if (!mf_view_static(&out[o]))
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
        uint64_t total = 0; /* bytes over the outputs, saturating */
        for (size_t o = 0; o < n->n_outputs; o++) {
            const minfer_tensor_view *v = n->outputs[o] >= 0 ? &p->vals[n->outputs[o]].view : NULL;
            int64_t ne = 0;
            size_t esz = v ? minfer_elem_size(v->dtype) : 0;
            if (!v)
                continue;
            if (minfer_dims_numel(v->dims, v->rank, &ne) != MINFER_OK ||
                (uint64_t)ne > (UINT64_MAX - total) / (esz ? esz : 1))
                total = UINT64_MAX;
            else
                total += (uint64_t)ne * (esz ? esz : 1);
        }
        if (total > MF_FOLD_MAX_BYTES || !deterministic(n))
            continue;
        if ((st = fold_node(s, p, i, &done)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

minfer_status mf_plan_infer(minfer_session *s, mf_plan *p) {
    size_t most = 1;
    for (size_t i = 0; i < s->g->n_nodes; i++) {
        const mf_node *n = &s->g->nodes[i];
        most = n->n_inputs > most ? n->n_inputs : most;
        most = n->n_outputs > most ? n->n_outputs : most;
    }
    minfer_tensor_view in_s[MF_MAX_NODE_IO], out_s[MF_MAX_NODE_IO];
    minfer_tensor_view *in = mf_io_scratch(in_s, most, sizeof *in);
    minfer_tensor_view *out = mf_io_scratch(out_s, most, sizeof *out);
    minfer_status st = in && out ? plan_infer(s, p, in, out)
                                 : mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    mf_io_scratch_free(in, in_s);
    mf_io_scratch_free(out, out_s);
    return st;
}

/* ---- pass 3: preparation ------------------------------------------------ */

/* Prepares node i on provider prov into the plan's state. The last error
 * says why on failure (unprefixed: the caller names node and provider). */
static minfer_status prepare_on(minfer_session *s, mf_plan *p, int i, int prov) {
    mf_nplan *ns = &p->nodes[i];
    mf_provider_inst *pi = &s->pl->provs[prov];
    minfer_status st;
    ns->prov = prov;
    /* The descriptor depends on the provider (input layouts it can read). */
    if ((st = mf_plan_node_desc(s, p, i)) != MINFER_OK)
        return st;
    minfer_node_prep prep = {sizeof prep, 0, ns->inplace, ns->layouts, ns->packed};
    mf_error_clear();
    if ((st = mf_prov_prepare(pi, &ns->desc, &prep, &ns->state)) != MINFER_OK)
        return st;
    ns->prepared = 1;
    ns->workspace = prep.workspace_bytes;
    return MINFER_OK;
}

/* Node i's provider could not prepare it: the next provider that supports
 * it takes it (place/place.c), its outputs move to that provider's memory
 * domain, and it is prepared there, in turn, until one succeeds. */
static minfer_status prepare_node(minfer_session *s, mf_plan *p, int i,
                                  const minfer_run_options *ro) {
    const mf_node *n = &s->g->nodes[i];
    mf_nplan *ns = &p->nodes[i];
    char lbl[512], why[1024];
    minfer_status st;
    while ((st = prepare_on(s, p, i, ns->prov)) != MINFER_OK) {
        minfer_status rst = mf_weights_refill(s, i); /* pages the failed provider gave back */
        if (rst != MINFER_OK)
            return rst;
        int failed = ns->prov, next;
        const char *msg = minfer_last_error();
        snprintf(why, sizeof why, "%s", msg && msg[0] ? msg : minfer_status_str(st));
        if ((st = mf_place_fallback(s, i, failed, &ns->desc, st, why, ro, &next)) != MINFER_OK)
            return st;
        ns->prov = next;
        int dom = mf_dom_of_prov(s, next);
        for (size_t o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0 && p->vals[n->outputs[o]].where == MF_W_ARENA)
                p->vals[n->outputs[o]].dom = dom;
    }
    /* Scratch is memory like a tensor: the same limit holds. */
    if (ns->workspace > s->limits.max_tensor_bytes)
        return mf_error(MINFER_ERR_LIMIT,
                        "%s: provider '%s' asks %zu bytes of workspace for %s, above the "
                        "tensor limit of %llu bytes",
                        s->errctx, s->pl->provs[ns->prov].name, ns->workspace,
                        mf_node_label(n, i, lbl, sizeof lbl),
                        (unsigned long long)s->limits.max_tensor_bytes);
    int dom = mf_dom_of_prov(s, ns->prov);
    for (size_t o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0)
            p->vals[n->outputs[o]].view.layout = dom ? ns->layouts[o] : 0;
    return MINFER_OK;
}

/* Pass 3: prepare every node that runs from the plan's steps. */
static minfer_status prepare_nodes(minfer_session *s, mf_plan *p, const minfer_run_options *ro) {
    const mf_graph *g = s->g;
    char lbl[512];
    minfer_status st;
    double t = mf_now_ms();
    /* Weights copied only as their nodes are prepared (plan/weights.c). */
    mf_weights_defer(s, p);
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        mf_nplan *ns = &p->nodes[i];
        if (ns->folded || ns->dynamic)
            continue;
        if (ns->prov < 0)
            return mf_error(MINFER_ERR_UNSUPPORTED,
                            "%s: %s was folded at build but not for these input shapes",
                            s->errctx, mf_node_label(&g->nodes[i], i, lbl, sizeof lbl));
        if ((st = mf_creation_check(s, "preparing the nodes, node %zu of %zu", k,
                                    g->n_nodes)) != MINFER_OK ||
            (st = mf_weights_materialize(s, p, i)) != MINFER_OK ||
            (st = prepare_node(s, p, i, ro)) != MINFER_OK ||
            (st = mf_weights_release_packed(s, p, i)) != MINFER_OK)
            return st;
    }
    mf_weights_prepared(s);
    p->t_prepare_ms = mf_now_ms() - t;
    return MINFER_OK;
}

/* FLOP estimates for profiles. */
static void estimate_flops(minfer_session *s, mf_plan *p) {
    const mf_graph *g = s->g;
    minfer_tensor_view in[MF_MAX_NODE_IO], out[MF_MAX_NODE_IO];
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        if (p->nodes[i].folded || n->n_inputs > MF_MAX_NODE_IO || n->n_outputs > MF_MAX_NODE_IO)
            continue;
        for (size_t j = 0; j < n->n_inputs; j++) {
            memset(&in[j], 0, sizeof in[j]);
            in[j].rank = -1;
            if (n->inputs[j] >= 0)
                in[j] = p->vals[n->inputs[j]].view;
        }
        for (size_t o = 0; o < n->n_outputs; o++) {
            memset(&out[o], 0, sizeof out[o]);
            out[o].rank = -1;
            if (n->outputs[o] >= 0)
                out[o] = p->vals[n->outputs[o]].view;
        }
        p->nodes[i].flops = mf_node_flops(n, in, n->n_inputs, out, n->n_outputs);
    }
}

minfer_status mf_plan_build(minfer_session *s, const int64_t *sig, size_t sig_len,
                            const minfer_run_options *ro, mf_plan **out) {
    minfer_status st;
    const mf_graph *g = s->g;
    *out = NULL;
    /* Weights given back after an earlier plan's packing (plan/weights.c)
     * are read again before this plan's views point at them. */
    if ((st = mf_weights_restore(s)) != MINFER_OK)
        return st;
    mf_attr_mismatch_clear(s->g);
    mf_plan *p = mf_plan_new(s);
    if (!p)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    p->concrete = 1;
    p->sig = mf_malloc((sig_len + 1) * sizeof *p->sig);
    if (!p->sig) {
        mf_plan_free(s, p);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    memcpy(p->sig, sig, sig_len * sizeof *sig);
    p->sig_len = sig_len;
    size_t pos = 0;
    for (size_t k = 0; k < g->n_inputs; k++) {
        pos = mf_sig_get(sig, pos, &p->vals[g->inputs[k]].view);
    }
    for (size_t v = 0; v < g->n_values; v++) {
        mf_vplan *vs = &p->vals[v];
        uint64_t bytes = 0;
        if (mf_view_static(&vs->view)) {
            size_t b = 0;
            if (minfer_view_nbytes(&vs->view, &b) == MINFER_ERR_LIMIT) {
                mf_plan_free(s, p);
                return mf_error(MINFER_ERR_LIMIT, "%s: '%s' has more bytes than fit in memory",
                                s->errctx, g->values[v].name);
            }
            bytes = b;
            if (bytes > s->limits.max_tensor_bytes) {
                mf_plan_free(s, p);
                return mf_error(MINFER_ERR_LIMIT, "%s: '%s' would take %llu bytes, above the limit of %llu",
                                s->errctx, g->values[v].name, (unsigned long long)bytes,
                                (unsigned long long)s->limits.max_tensor_bytes);
            }
        }
    }
    double t = mf_now_ms();
    if ((st = mf_plan_infer(s, p)) != MINFER_OK) {
        mf_plan_free(s, p);
        return st;
    }
    p->t_infer_ms = mf_now_ms() - t;
    if ((st = mf_plan_storage(s, p)) != MINFER_OK || (st = prepare_nodes(s, p, ro)) != MINFER_OK ||
        (st = mf_attr_mismatch_take(s->g, s->errctx)) != MINFER_OK ||
        (st = mf_plan_memory(s, p)) != MINFER_OK ||
        (st = mf_creation_check(s, "memory planning")) != MINFER_OK) {
        mf_plan_free(s, p);
        return st;
    }
    estimate_flops(s, p);
    for (size_t v = 0; v < g->n_values; v++) {
        const mf_vplan *vs = &p->vals[v];
        if (vs->where == MF_W_ARENA && vs->bytes > s->limits.max_tensor_bytes) {
            unsigned long long bytes = (unsigned long long)vs->bytes;
            mf_plan_free(s, p);
            return mf_error(MINFER_ERR_LIMIT,
                            "%s: '%s' would take %llu bytes, above the limit of %llu", s->errctx,
                            g->values[v].name, bytes,
                            (unsigned long long)s->limits.max_tensor_bytes);
        }
    }
    *out = p;
    return MINFER_OK;
}
