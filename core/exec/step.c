/*
 * One step of a run, as every scheduler runs it: run.c's sequential loop,
 * the parallel scheduler's queue (sched_parallel.c) and the pipeline's
 * stages (sched_pipeline.c) all call mf_run_step by name. A step is the
 * copies planned before it, its node (a core node, a node with run-time
 * shapes inferred and prepared here, or a prepared node on its provider),
 * then the profile event, the NaN check and the budget. Calls go one way:
 * run.c -> sched_*.c -> step.c.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "exec/step.h"
#include "shapes/shape_infer.h"

/* A view of buffer b of plan p in context c. */
static void place(const mf_exec_ctx *c, const mf_plan *p, int b, minfer_tensor_view *v,
                  uint64_t bytes) {
    const mf_buffer *buf = &p->bufs[b];
    if (buf->dom == 0) {
        v->data = (char *)c->arena[0] + buf->offset;
        v->offset = 0;
    } else {
        v->data = c->arena[buf->dom];
        v->offset = buf->offset;
    }
    v->nbytes = bytes;
}

static minfer_status copy_value(minfer_session *s, int from_dom, const minfer_tensor_view *src,
                                int to_dom, const minfer_tensor_view *dst, mf_run *r) {
    size_t plain = mf_view_bytes(src);
    minfer_status st = MINFER_OK;
    if (from_dom == 0) {
        mf_provider_inst *pi = &s->pl->provs[to_dom - 1];
        st = mf_prov_copy_from_host(pi, src->data, plain, dst);
    } else if (to_dom == 0) {
        mf_provider_inst *pi = &s->pl->provs[from_dom - 1];
        st = mf_prov_copy_to_host(pi, src, dst->data, dst->nbytes);
    } else {
        /* device to device: through a host staging buffer */
        void *tmp = mf_alloc_host(plain);
        if (!tmp || mf_run_track(r, tmp) != 0) {
            free(tmp);
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        }
        mf_provider_inst *a = &s->pl->provs[from_dom - 1], *b = &s->pl->provs[to_dom - 1];
        st = mf_prov_copy_to_host(a, src, tmp, plain);
        if (st == MINFER_OK)
            st = mf_prov_copy_from_host(b, tmp, plain, dst);
    }
    return st;
}

static minfer_status run_dynamic_node(minfer_session *s, mf_plan *p, mf_exec_ctx *c, int i,
                                      mf_run *r, minfer_tensor_view *in, minfer_tensor_view *out) {
    const mf_node *n = &s->g->nodes[i];
    char lbl[512], err[1024] = "";
    minfer_status st;
    /* Contents of known inputs help inference (a Reshape's target). */
    minfer_tensor_view inf_s[MF_MAX_NODE_IO];
    minfer_tensor_view *inf_in = mf_io_scratch(inf_s, n->n_inputs, sizeof *inf_in);
    if (!inf_in)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    for (size_t j = 0; j < n->n_inputs; j++) {
        inf_in[j] = in[j];
        if (n->inputs[j] >= 0 && p->vals[n->inputs[j]].dom != 0 &&
            p->vals[n->inputs[j]].where == MF_W_ARENA)
            inf_in[j].data = NULL; /* device memory: not readable here */
    }
    st = mf_place_infer(n, inf_in, n->n_inputs, out, n->n_outputs, err, sizeof err);
    mf_io_scratch_free(inf_in, inf_s);
    if (st != MINFER_OK)
        return mf_error(st, "%s: %s: %s", s->errctx, mf_node_label(n, i, lbl, sizeof lbl),
                        err[0] ? err : minfer_status_str(st));
    for (size_t o = 0; o < n->n_outputs; o++) {
        int vi = n->outputs[o];
        out[o].kind = MINFER_VALUE_TENSOR;
        out[o].data = NULL;
        out[o].offset = 0;
        out[o].nbytes = 0;
        out[o].layout = 0;
        if (vi < 0 || !mf_view_static(&out[o])) {
            /* The ABI's word for "allocate it yourself" is rank -1. */
            out[o].rank = -1;
            if (vi >= 0)
                c->views[vi] = out[o];
            continue;
        }
        size_t bytes;
        if ((st = mf_value_bytes(s, i, o, &out[o], &bytes)) != MINFER_OK)
            return st;
        void *mem = mf_alloc_host(bytes);
        if (!mem)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        mf_run_free_dyn(c, vi);
        c->dyn[vi] = mem;
        out[o].data = mem;
        out[o].nbytes = bytes;
        c->views[vi] = out[o];
    }
    int prov = p->nodes[i].prov;
    if (prov < 0)
        return mf_error(MINFER_ERR_UNSUPPORTED, "%s: %s has no provider for these shapes",
                        s->errctx, mf_node_label(n, i, lbl, sizeof lbl));
    /* Per-run descriptors: the plan is shared with concurrent runs. */
    size_t n_d = n->n_inputs + n->n_outputs + 1;
    minfer_value_desc *dsc = mf_calloc(n_d, sizeof *dsc);
    if (!dsc || mf_run_track(r, dsc) != 0) {
        free(dsc);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    minfer_node_desc desc;
    mf_fill_desc(s, p, i, c->views, dsc, dsc + n->n_inputs, &desc);
    /* Run-time shapes live in host memory (the plan copied device inputs
     * to the host): a node assigned to a device provider runs here on the
     * first host provider of the list that takes it, else the evaluator. */
    mf_provider_inst *pi = &s->pl->provs[prov];
    if (!pi->host_memory) {
        char why[256];
        pi = NULL;
        for (size_t j = 0; j < s->pl->n_provs && !pi; j++)
            if (s->pl->provs[j].host_memory &&
                mf_place_supports(&s->pl->provs[j], &desc, why, sizeof why))
                pi = &s->pl->provs[j];
        if (!pi && s->pl->eval && mf_place_supports(s->pl->eval, &desc, why, sizeof why))
            pi = s->pl->eval;
        if (!pi)
            return mf_error(MINFER_ERR_UNSUPPORTED,
                            "%s: %s has shapes known only at run time and no host provider "
                            "takes it (provider '%s' computes in device memory)",
                            s->errctx, mf_node_label(n, i, lbl, sizeof lbl), s->pl->provs[prov].name);
    }
    mf_node_step step;
    st = mf_run_node_once(pi, &desc, in, n->n_inputs, out, n->n_outputs, r, &step);
    if (step == MF_NODE_PREPARE)
        mf_error_prefix(st, "%s: preparing %s", s->errctx, mf_node_label(n, i, lbl, sizeof lbl));
    else if (step == MF_NODE_WORKSPACE)
        mf_error(st, "%s: out of memory", s->errctx);
    else if (step == MF_NODE_EXECUTE)
        mf_error_prefix(st, "%s: provider '%s' failed on %s", s->errctx, pi->name,
                        mf_node_label(n, i, lbl, sizeof lbl));
    /* alloc_output may have given outputs storage through r->temps */
    return st;
}

/* Runs node i in the core (control flow, sequences, optionals) and keeps
 * its outputs as the run's storage of those values. */
static minfer_status run_core_node(minfer_session *s, mf_exec_ctx *c, mf_budget *b, mf_run *r,
                                   int i, const minfer_tensor_view *in, minfer_tensor_view *out) {
    const mf_node *n = &s->g->nodes[i];
    minfer_tensor *made_s[MF_MAX_NODE_IO];
    minfer_tensor **made = mf_io_scratch(made_s, n->n_outputs, sizeof *made);
    if (!made)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    minfer_status st = mf_core_exec(s, b, r->lane, i, in, made);
    if (st != MINFER_OK) {
        mf_io_scratch_free(made, made_s);
        return st;
    }
    for (size_t o = 0; o < n->n_outputs; o++) {
        int vi = n->outputs[o];
        minfer_tensor *t = made[o];
        if (vi < 0) {
            minfer_tensor_free(t);
            continue;
        }
        mf_run_free_dyn(c, (size_t)vi);
        minfer_tensor_view *view = &c->views[vi];
        *view = t->view;
        if (t->view.kind == MINFER_VALUE_TENSOR) {
            /* the tensor's own storage becomes the value's */
            c->dyn[vi] = t->view.data;
            t->view.data = NULL;
            t->owns_data = 0;
            minfer_tensor_free(t);
        } else {
            c->dyn[vi] = t;
            view->data = t;
            view->layout = (uint64_t)t->contained;
        }
        out[o] = *view;
    }
    mf_io_scratch_free(made, made_s);
    return MINFER_OK;
}

/* Fails when a float output of node i holds a NaN or an Inf. */
static minfer_status check_nan(minfer_session *s, int i, const minfer_tensor_view *out,
                               size_t n_out, mf_run *r) {
    const mf_node *n = &s->g->nodes[i];
    char lbl[512];
    for (size_t o = 0; o < n_out; o++) {
        const minfer_tensor_view *v = &out[o];
        if (n->outputs[o] < 0 || (v->dtype != MINFER_DTYPE_FLOAT && v->dtype != MINFER_DTYPE_DOUBLE))
            continue;
        size_t bytes = mf_view_bytes(v);
        const void *data = v->data;
        const mf_vplan *vs = &r->p->vals[n->outputs[o]];
        if (vs->where == MF_W_ARENA && vs->dom != 0) {
            void *tmp = mf_alloc_host(bytes);
            if (!tmp || mf_run_track(r, tmp) != 0) {
                free(tmp);
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            }
            mf_provider_inst *pi = &s->pl->provs[vs->dom - 1];
            if (mf_prov_copy_to_host(pi, v, tmp, bytes) != MINFER_OK)
                continue;
            data = tmp;
        }
        size_t count = bytes / (v->dtype == MINFER_DTYPE_FLOAT ? sizeof(float) : sizeof(double));
        for (size_t e = 0; e < count; e++) {
            double x = v->dtype == MINFER_DTYPE_FLOAT ? (double)((const float *)data)[e]
                                                      : ((const double *)data)[e];
            if (x != x || x - x != 0)
                return mf_error(MINFER_ERR_RUNTIME,
                                "%s: NaN check: %s produced %s in output '%s' (element %zu)",
                                s->errctx, mf_node_label(n, i, lbl, sizeof lbl),
                                x != x ? "NaN" : "Inf", s->g->values[n->outputs[o]].name, e);
        }
    }
    return MINFER_OK;
}

/* The args of a node's profile event: op, provider, shapes, FLOPs. */
static json_t *node_args(minfer_session *s, int i, int prov, const minfer_tensor_view *in,
                         size_t n_in, const minfer_tensor_view *out, size_t n_out,
                         double flops) {
    const mf_node *n = &s->g->nodes[i];
    char op[512];
    snprintf(op, sizeof op, "%s%s%s", n->domain[0] ? n->domain : "", n->domain[0] ? ":" : "",
             n->op_type);
    json_t *ins = json_array(), *outs = json_array();
    for (size_t k = 0; ins && outs && k < n_in + n_out; k++) {
        const minfer_tensor_view *v = k < n_in ? &in[k] : &out[k - n_in];
        json_array_append_new(k < n_in ? ins : outs, mf_trace_type_shape(v));
    }
    return json_pack("{s:o, s:s, s:o, s:o, s:f}", "op", mf_json_str(op), "provider",
                     prov >= 0                ? s->pl->provs[prov].name
                     : prov == MF_ASSIGN_CORE ? "core"
                                              : "(constant)",
                     "inputs", ins, "outputs", outs, "flops", flops);
}

/* Every value's view for this run: arena values placed in the context's
 * arenas, constants as planned, string values allocated, the caller's
 * inputs bound in place, copy buffers placed. */
/* 1 if a step of plan p reads value vi other than through a copy into
 * domain dom: a node on the host or in another domain reading its own
 * storage (core nodes included: a control node lists the outer values its
 * bodies read among its inputs), or the value is a graph output. */
static int read_off_domain(const minfer_session *s, const mf_plan *p, int vi, int dom) {
    const mf_graph *g = s->g;
    if (g->values[vi].is_output)
        return 1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        const mf_nplan *ns = &p->nodes[i];
        if (ns->folded)
            continue;
        for (size_t j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] == vi && (!ns->in_ref || ns->in_ref[j] == -1))
                return 1;
    }
    for (size_t m = 0; m < p->n_copies; m++)
        if (p->copies[m].value == vi && p->copies[m].to_dom != dom)
            return 1;
    return 0;
}

/* Graph input vi bound to device value t: its view is the device storage,
 * read in place by the copies planned into t's domain (run_copies); when
 * something else reads it, the view is a host copy instead (one download,
 * counted as the provider's transfer). */
static minfer_status bind_device_input(minfer_session *s, mf_plan *p, mf_exec_ctx *c, int vi,
                                       const minfer_tensor *t) {
    minfer_tensor_view *view = &c->views[vi];
    c->devin[vi] = t;
    view->data = t->view.data;
    view->offset = 0;
    view->nbytes = t->view.nbytes;
    view->layout = 0;
    if (!read_off_domain(s, p, vi, t->dev->dom)) {
        c->on_dev[vi] = 1;
        return MINFER_OK;
    }
    size_t bytes = minfer_tensor_nbytes(t);
    void *host = mf_alloc_host(bytes ? bytes : 1);
    if (!host)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    c->dyn[vi] = host;
    mf_provider_inst *pi = &s->pl->provs[t->dev->dom - 1];
    minfer_status st = mf_prov_copy_to_host(pi, &t->view, host, bytes);
    if (st != MINFER_OK)
        return mf_error_prefix(st, "%s: copying input '%s' from provider '%s' to the host",
                               s->errctx, s->g->values[vi].name, pi->name);
    view->data = host;
    view->nbytes = bytes;
    return MINFER_OK;
}

minfer_status mf_run_bind(minfer_session *s, mf_plan *p, mf_exec_ctx *c,
                          const minfer_tensor *const *bound) {
    const mf_graph *g = s->g;
    for (size_t v = 0; v < g->n_values; v++) {
        const mf_vplan *vs = &p->vals[v];
        minfer_tensor_view *view = &c->views[v];
        *view = vs->view;
        switch (vs->where) {
        case MF_W_ARENA:
            place(c, p, vs->buffer, view, vs->bytes);
            break;
        case MF_W_CONST:
            break;
        case MF_W_HEAP:
            view->data = c->dyn[v] = mf_alloc_host(vs->bytes);
            view->offset = 0;
            view->nbytes = vs->bytes;
            if (!view->data)
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            break;
        default:
            view->data = NULL;
            view->offset = 0;
            view->nbytes = 0;
            break;
        }
    }
    for (size_t k = 0; k < g->n_inputs; k++) {
        minfer_tensor_view *view = &c->views[g->inputs[k]];
        c->devin[g->inputs[k]] = NULL;
        c->on_dev[g->inputs[k]] = 0;
        if (bound[k]->dev) {
            minfer_status st = bind_device_input(s, p, c, g->inputs[k], bound[k]);
            if (st != MINFER_OK)
                return st;
            continue;
        }
        if (bound[k]->view.kind != MINFER_VALUE_TENSOR) {
            /* a sequence or optional: the view points at the container */
            *view = bound[k]->view;
            view->data = (void *)bound[k];
            view->layout = (uint64_t)bound[k]->contained;
            continue;
        }
        view->data = bound[k]->view.data;
        view->nbytes = bound[k]->view.nbytes;
    }
    for (size_t m = 0; m < p->n_copies; m++) {
        const mf_copy *cp = &p->copies[m];
        c->mirrors[m] = p->vals[cp->value].view;
        c->mirrors[m].layout = 0;
        if (!cp->alias)
            place(c, p, cp->buffer, &c->mirrors[m], cp->bytes);
    }
    return MINFER_OK;
}

/* The copies into other memory domains planned before step k. */
static minfer_status run_copies(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                                int k) {
    const mf_graph *g = s->g;
    minfer_status st;
    for (size_t m = 0; m < p->n_copies; m++) {
        const mf_copy *cp = &p->copies[m];
        if (cp->at_step != k)
            continue;
        const mf_vplan *vs = &p->vals[cp->value];
        int from = vs->where == MF_W_ARENA ? vs->dom : 0;
        const minfer_tensor *dev = c->devin[cp->value];
        if (dev && dev->dev->dom == cp->to_dom) { /* a device input, read in place */
            c->mirrors[m] = c->views[cp->value];
            c->mirrors[m].data = dev->view.data;
            c->mirrors[m].offset = 0;
            c->mirrors[m].nbytes = dev->view.nbytes;
            c->mirrors[m].layout = 0;
            continue;
        }
        if (dev && c->on_dev[cp->value])
            from = dev->dev->dom;
        if (cp->alias) { /* read in place: (host pointer, offset) */
            c->mirrors[m] = c->views[cp->value];
            c->mirrors[m].layout = 0;
            continue;
        }
        c->mirrors[m].rank = c->views[cp->value].rank;
        memcpy(c->mirrors[m].dims, c->views[cp->value].dims, sizeof c->mirrors[m].dims);
        double tc = s->trace ? mf_now_ms() : 0;
        if ((st = copy_value(s, from, &c->views[cp->value], cp->to_dom, &c->mirrors[m], r)) !=
            MINFER_OK)
            return mf_error_prefix(st, "%s: copying '%s' between memory domains", s->errctx,
                                   g->values[cp->value].name);
        if (s->trace)
            mf_trace_add(s->trace, "copy", "copy", tc, mf_now_ms() - tc,
                         json_pack("{s:o, s:I, s:s, s:s}", "value",
                                   mf_json_str(g->values[cp->value].name), "bytes",
                                   (json_int_t)mf_view_bytes(&c->views[cp->value]), "from",
                                   from ? mf_prov_memory_domain(&s->pl->provs[from - 1]) : "host", "to",
                                   cp->to_dom ? mf_prov_memory_domain(&s->pl->provs[cp->to_dom - 1])
                                              : "host"));
    }
    return MINFER_OK;
}

/* Node i's input and output views for this run: each input from its own
 * storage, a copy or a constant upload, as planned. */
static void node_views(const minfer_session *s, const mf_plan *p, const mf_exec_ctx *c, int i,
                       minfer_tensor_view *in, minfer_tensor_view *out) {
    const mf_node *n = &s->g->nodes[i];
    const mf_nplan *ns = &p->nodes[i];
    for (size_t j = 0; j < n->n_inputs; j++) {
        int u = n->inputs[j];
        if (u < 0) {
            memset(&in[j], 0, sizeof in[j]);
            in[j].rank = -1;
            continue;
        }
        int ref = ns->in_ref ? ns->in_ref[j] : -1;
        if (ref == -1)
            in[j] = c->views[u];
        else if (ref >= 0)
            in[j] = c->mirrors[ref];
        else {
            const mf_cmirror *cm = &p->cmirrors[-2 - ref];
            in[j] = p->vals[u].view;
            in[j].data = cm->buf;
            in[j].offset = 0;
            in[j].nbytes = cm->bytes;
            in[j].layout = 0;
        }
    }
    for (size_t o = 0; o < n->n_outputs; o++) {
        if (n->outputs[o] >= 0)
            out[o] = c->views[n->outputs[o]];
        else {
            memset(&out[o], 0, sizeof out[o]);
            out[o].rank = -1;
        }
    }
}

/* A prepared node on its provider, with its planned workspace. */
static minfer_status run_planned_node(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                                      int i, const minfer_tensor_view *in,
                                      minfer_tensor_view *out) {
    const mf_node *n = &s->g->nodes[i];
    const mf_nplan *ns = &p->nodes[i];
    char lbl[512];
    mf_provider_inst *pi = &s->pl->provs[ns->prov];
    minfer_exec_args args = {sizeof args, r, &ns->desc, in, n->n_inputs, out, n->n_outputs,
                             NULL, 0, 0, sizeof(minfer_tensor_view)};
    if (ns->ws_buffer >= 0) {
        minfer_tensor_view w;
        place(c, p, ns->ws_buffer, &w, ns->workspace);
        args.workspace = w.data;
        args.workspace_bytes = ns->workspace;
        args.workspace_offset = w.offset;
    }
    mf_error_clear();
    minfer_status st = mf_prov_execute(pi, ns->state, &args);
    if (st != MINFER_OK)
        return mf_error_prefix(st, "%s: provider '%s' failed on %s", s->errctx, pi->name,
                               mf_node_label(n, i, lbl, sizeof lbl));
    return MINFER_OK;
}

/* Profile: node i's event and its share of the session's per-node time. */
static void profile_node(minfer_session *s, const mf_plan *p, int i, double t0,
                         const minfer_tensor_view *in, const minfer_tensor_view *out) {
    const mf_node *n = &s->g->nodes[i];
    const mf_nplan *ns = &p->nodes[i];
    /* Device work is asynchronous: wait so the event covers it. */
    mf_provider_inst *pi = ns->prov >= 0 ? &s->pl->provs[ns->prov] : NULL;
    if (pi)
        mf_prov_synchronize(pi);
    double dt = mf_now_ms() - t0;
    mf_trace_add(s->trace, n->name[0] ? n->name : n->op_type, "node", t0, dt,
                 node_args(s, i, ns->prov, in, n->n_inputs, out, n->n_outputs, ns->flops));
    pthread_mutex_lock(&s->lock);
    s->node_ms[i] += dt;
    s->node_runs[i]++;
    pthread_mutex_unlock(&s->lock);
}

/* Step k (node i): copies, the node (core, dynamic or planned), then the
 * checks and the budget, and run-time storage that died here (the
 * parallel scheduler times it: exec/sched_parallel.c). */
static minfer_status run_step_in(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                                 mf_budget *b, int k, minfer_tensor_view *in,
                                 minfer_tensor_view *out) {
    assert(k >= 0 && (size_t)k < s->g->n_nodes);
    int i = s->g->order[k];
    const mf_node *n = &s->g->nodes[i];
    const mf_nplan *ns = &p->nodes[i];
    minfer_status st;
    /* a folded node has no step; a planned one has its provider's state */
    assert(!ns->folded);
    assert(r->lane && r->p == p);
    if ((st = mf_budget_time(b, s, i)) != MINFER_OK ||
        (st = run_copies(s, p, c, r, k)) != MINFER_OK)
        return st;
    node_views(s, p, c, i, in, out);
    r->node = i;
    r->outputs = out;
    r->n_outputs = n->n_outputs;
    double t0 = s->trace ? mf_now_ms() : 0;
    if (ns->core)
        st = run_core_node(s, c, b, r, i, in, out);
    else if (ns->dynamic)
        st = run_dynamic_node(s, p, c, i, r, in, out);
    else
        st = run_planned_node(s, p, c, r, i, in, out);
    if (st != MINFER_OK)
        return st;
    if (s->trace)
        profile_node(s, p, i, t0, in, out);
    if (s->check_nan && (st = check_nan(s, i, out, n->n_outputs, r)) != MINFER_OK)
        return st;
    for (size_t o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0 &&
            (st = mf_budget_elements(b, s, i, mf_value_elements(&out[o]))) != MINFER_OK)
            return st;
    /* Run-time storage of values with run-time shapes, dead now. */
    for (size_t j = 0; j < n->n_inputs; j++) {
        int u = n->inputs[j];
        if (u >= 0 && p->vals[u].where == MF_W_DYNAMIC && p->vals[u].last == k)
            mf_run_free_dyn(c, (size_t)u);
    }
    return MINFER_OK;
}

/* run_step_in with the step's views on the stack, or on the heap for a node
 * with more than MF_MAX_NODE_IO inputs or outputs. */
minfer_status mf_run_step(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r, mf_budget *b,
                          int k) {
    const mf_node *n = &s->g->nodes[s->g->order[k]];
    minfer_tensor_view in_s[MF_MAX_NODE_IO], out_s[MF_MAX_NODE_IO];
    minfer_tensor_view *in = mf_io_scratch(in_s, n->n_inputs, sizeof *in);
    minfer_tensor_view *out = mf_io_scratch(out_s, n->n_outputs, sizeof *out);
    minfer_status st = in && out ? run_step_in(s, p, c, r, b, k, in, out)
                                 : mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    mf_io_scratch_free(in, in_s);
    mf_io_scratch_free(out, out_s);
    return st;
}
