/*
 * Plans: inference, folding, node preparation and memory planning for one
 * set of input shapes.
 *
 * mf_plan_build runs these passes:
 *  1. inference in topological order with the concrete input dims; a node
 *     whose inputs are all known (initializers, Shape of a static shape,
 *     and what follows from them) and whose outputs are small is folded:
 *     evaluated now on the evaluator (CPU) provider, its outputs become
 *     constants of the plan and it never runs. A node whose output shape
 *     depends on contents known only at run time is marked dynamic, and so
 *     is everything downstream of it;
 *  2. storage classes: graph inputs are bound at run time, constants are
 *     owned by the plan, dynamic values are allocated during the run, and
 *     every other value lives in the arena of its producer's memory domain;
 *  3. prepare_node for every remaining node with its concrete shapes, which
 *     also yields workspace sizes, in-place permissions and output layouts;
 *  4. liveness over the execution order: each arena value's first (producer)
 *     and last (final consumer) step; graph outputs live to the end. Where a
 *     consumer computes in another memory domain than a value's home, a copy
 *     into that domain is planned before its first consumer there;
 *     constants needed in a device domain are uploaded once, now;
 *  5. in place: an output may take its input's buffer when the provider
 *     allows it, the input dies at that node, and both sit in one domain;
 *  6. offsets: the buffers of each domain (values, copies, workspaces) are
 *     placed by the greedy-by-size planner (or the linear debug planner).
 */
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "place/plugin_loader.h"
#include "plan/planner.h"
#include "session/session.h"
#include "shapes/shape_infer.h"

#define FOLD_MAX_ELEMS 65536 /* largest constant the folder materialises per node */
#define HOST_ALIGN 64

int mf_dom_of_prov(const minfer_session *s, int prov) {
    if (prov < 0 || s->provs[prov].host_memory)
        return 0;
    return 1 + prov;
}

static void release_node_state(minfer_session *s, mf_plan *p, int i) {
    mf_nplan *ns = &p->nodes[i];
    if (ns->prepared && s->assign[i] >= 0) {
        const minfer_provider *vt = s->provs[s->assign[i]].vt;
        if (MF_VT_HAS(vt, release_node))
            vt->release_node(s->provs[s->assign[i]].ctx, ns->state);
    }
    ns->state = NULL;
    ns->prepared = 0;
}

void mf_plan_free(minfer_session *s, mf_plan *p) {
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
            free(p->nodes[i].in_ref);
        }
    if (p->vals)
        for (size_t v = 0; v < g->n_values; v++) {
            mf_vplan *vs = &p->vals[v];
            if (vs->owned && vs->view.dtype == MINFER_DTYPE_STRING)
                mf_free_strings(vs->owned, (int64_t)(mf_view_bytes(&vs->view) / sizeof(char *)));
            free(vs->owned);
        }
    for (size_t m = 0; m < p->n_cmirrors; m++) {
        mf_provider_inst *pi = &s->provs[p->cmirrors[m].dom - 1];
        if (p->cmirrors[m].buf)
            pi->vt->mem_free(pi->ctx, p->cmirrors[m].buf);
    }
    free(p->cmirrors);
    free(p->copies);
    free(p->bufs);
    free(p->arena_bytes);
    free(p->lower_bound);
    free(p->sum_bytes);
    free(p->vals);
    free(p->nodes);
    free(p->sig);
    free(p);
}

mf_plan *mf_plan_new(minfer_session *s) {
    mf_plan *p = mf_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->vals = mf_calloc(s->g->n_values + 1, sizeof *p->vals);
    p->nodes = mf_calloc(s->g->n_nodes + 1, sizeof *p->nodes);
    p->arena_bytes = mf_calloc(s->n_domains, sizeof *p->arena_bytes);
    p->lower_bound = mf_calloc(s->n_domains, sizeof *p->lower_bound);
    p->sum_bytes = mf_calloc(s->n_domains, sizeof *p->sum_bytes);
    if (!p->vals || !p->nodes || !p->arena_bytes || !p->lower_bound || !p->sum_bytes) {
        mf_plan_free(s, p);
        return NULL;
    }
    for (size_t i = 0; i < s->g->n_nodes; i++)
        p->nodes[i].ws_buffer = -1;
    for (size_t v = 0; v < s->g->n_values; v++) {
        const mf_value *val = &s->g->values[v];
        mf_vplan *vs = &p->vals[v];
        vs->buffer = -1;
        vs->view.kind = val->kind;
        vs->view.layout = val->kind == MINFER_VALUE_OPTIONAL ? (uint64_t)val->contained : 0;
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

minfer_status mf_fill_desc(minfer_session *s, mf_plan *p, int i, const minfer_tensor_view *views,
                           minfer_value_desc *in, minfer_value_desc *out, minfer_node_desc *d) {
    const mf_node *n = &s->g->nodes[i];
    for (size_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
        int is_in = k < n->n_inputs;
        int vi = is_in ? n->inputs[k] : n->outputs[k - n->n_inputs];
        minfer_value_desc *vd = is_in ? &in[k] : &out[k - n->n_inputs];
        memset(vd, 0, sizeof *vd);
        vd->rank = -1;
        if (vi < 0)
            continue;
        const minfer_tensor_view *v = views ? &views[vi] : &p->vals[vi].view;
        vd->name = s->g->values[vi].name;
        vd->kind = v->kind;
        vd->dtype = v->dtype;
        vd->rank = v->rank;
        memcpy(vd->dims, v->dims, sizeof vd->dims);
        vd->present = 1;
        /* The layout its producer reported reaches a reader in the same
         * domain; across domains the copy is plain. */
        int dom = s->assign ? mf_dom_of_prov(s, s->assign[i]) : 0;
        vd->layout = dom != 0 && p->vals[vi].dom == dom ? v->layout : 0;
        if (p->vals[vi].known) {
            vd->const_data = p->vals[vi].view.data;
            vd->const_nbytes = p->vals[vi].view.nbytes;
        }
    }
    d->struct_size = sizeof *d;
    d->name = n->name;
    d->op_type = n->op_type;
    d->domain = n->domain;
    d->opset = n->opset;
    d->n_inputs = n->n_inputs;
    d->n_outputs = n->n_outputs;
    d->inputs = in;
    d->outputs = out;
    d->host_node = n;
    d->value_desc_size = sizeof(minfer_value_desc);
    return MINFER_OK;
}

/* The plan's own descriptor arrays for node i. */
static minfer_status node_desc(minfer_session *s, mf_plan *p, int i) {
    const mf_node *n = &s->g->nodes[i];
    mf_nplan *ns = &p->nodes[i];
    if (!ns->in_desc) {
        ns->in_desc = mf_calloc(n->n_inputs + 1, sizeof *ns->in_desc);
        ns->out_desc = mf_calloc(n->n_outputs + 1, sizeof *ns->out_desc);
        ns->inplace = mf_calloc(n->n_outputs + 1, sizeof *ns->inplace);
        ns->layouts = mf_calloc(n->n_outputs + 1, sizeof *ns->layouts);
        ns->in_ref = mf_calloc(n->n_inputs + 1, sizeof *ns->in_ref);
        if (!ns->in_desc || !ns->out_desc || !ns->inplace || !ns->layouts || !ns->in_ref)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        for (size_t j = 0; j < n->n_inputs; j++)
            ns->in_ref[j] = -1;
    }
    for (size_t o = 0; o < n->n_outputs; o++) {
        ns->inplace[o] = -1;
        ns->layouts[o] = 0;
    }
    return mf_fill_desc(s, p, i, NULL, ns->in_desc, ns->out_desc, &ns->desc);
}

/* Evaluates node i on the evaluator provider, all inputs known, storing its
 * outputs as constants of the plan. *done stays 0 when the evaluator
 * declines the node. */
static minfer_status fold_node(minfer_session *s, mf_plan *p, int i, int *done) {
    const mf_node *n = &s->g->nodes[i];
    mf_nplan *ns = &p->nodes[i];
    minfer_status st;
    minfer_tensor_view in[64], out[64];
    void *state = NULL, *work = NULL;
    char why[256], lbl[512];
    *done = 0;
    if (!s->eval || n->n_inputs > 64 || n->n_outputs > 64)
        return MINFER_OK;
    mf_provider_inst *ev = s->eval;
    if ((st = node_desc(s, p, i)) != MINFER_OK)
        return st;
    if (!ev->vt->supports_operator(ev->ctx, &ns->desc, why, sizeof why) &&
        !(ev = mf_plugin_folder(s->provs, s->n_provs, &ns->desc))) /* a deterministic plugin op */
        return MINFER_OK;
    const minfer_provider *vt = ev->vt;
    minfer_node_prep prep = {sizeof prep, 0, ns->inplace, ns->layouts};
    mf_error_clear();
    if (MF_VT_HAS(vt, prepare_node) &&
        (st = vt->prepare_node(ev->ctx, &ns->desc, &prep, &state)) != MINFER_OK)
        return mf_error_prefix(st, "%s: folding %s", s->errctx,
                               mf_node_label(n, i, lbl, sizeof lbl));
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
    if (prep.workspace_bytes && !(work = mf_alloc_host(prep.workspace_bytes))) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory folding constants", s->errctx);
        goto done;
    }
    mf_run rc = {s, p, i, out, n->n_outputs, NULL, NULL, NULL, 0, 0, NULL};
    minfer_exec_args args = {sizeof args, &rc, &ns->desc, in, n->n_inputs, out, n->n_outputs,
                             work, prep.workspace_bytes, 0, sizeof(minfer_tensor_view)};
    mf_error_clear();
    st = vt->execute_node(ev->ctx, state, &args);
    mf_run_free_temps(&rc);
    if (st != MINFER_OK) {
        mf_error_prefix(st, "%s: evaluating constant %s", s->errctx,
                        mf_node_label(n, i, lbl, sizeof lbl));
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
    if (state && MF_VT_HAS(vt, release_node))
        vt->release_node(ev->ctx, state);
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

minfer_status mf_plan_infer(minfer_session *s, mf_plan *p) {
    const mf_graph *g = s->g;
    char lbl[512], err[1024];
    minfer_tensor_view in[64], out[64];
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        mf_nplan *ns = &p->nodes[i];
        minfer_status st;
        if (n->n_inputs > 64 || n->n_outputs > 64)
            return mf_error(MINFER_ERR_LIMIT, "%s: %s has more than 64 inputs or outputs",
                            s->errctx, mf_node_label(n, i, lbl, sizeof lbl));
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
        st = mf_infer_node(n, in, n->n_inputs, out, n->n_outputs, err, sizeof err);
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
        int64_t total = 0;
        for (size_t o = 0; o < n->n_outputs; o++) {
            int64_t ne = 0;
            if (n->outputs[o] >= 0 &&
                minfer_dims_numel(p->vals[n->outputs[o]].view.dims,
                                  p->vals[n->outputs[o]].view.rank, &ne) == MINFER_OK &&
                minfer_i64_add(total, ne, &total) != MINFER_OK)
                total = INT64_MAX;
        }
        if (total > FOLD_MAX_ELEMS || !deterministic(n))
            continue;
        if ((st = fold_node(s, p, i, &done)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

/* ---- memory planning ---------------------------------------------------- */

static int add_buffer(mf_plan *p, size_t *cap, int dom, uint64_t size, int first, int last,
                      int value) {
    if (p->n_bufs == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        mf_buffer *b = mf_realloc(p->bufs, nc * sizeof *b);
        if (!b)
            return -1;
        p->bufs = b;
        *cap = nc;
    }
    mf_buffer *b = &p->bufs[p->n_bufs];
    b->dom = dom;
    b->size = size;
    b->offset = 0;
    b->first = first;
    b->last = last;
    b->value = value;
    return (int)p->n_bufs++;
}

static uint64_t dom_align(const minfer_session *s, int dom) {
    if (dom == 0)
        return HOST_ALIGN;
    const minfer_provider *vt = s->provs[dom - 1].vt;
    size_t a = MF_VT_HAS(vt, memory_alignment) ? vt->memory_alignment : 0;
    return a ? a : HOST_ALIGN;
}

static uint64_t value_bytes(minfer_session *s, int dom, const minfer_tensor_view *v) {
    if (dom > 0) {
        const mf_provider_inst *pi = &s->provs[dom - 1];
        if (MF_VT_HAS(pi->vt, tensor_bytes))
            return pi->vt->tensor_bytes(pi->ctx, v);
    }
    return mf_view_bytes(v);
}

/* Passes 2-6 of the header comment for a plan whose inference is done. */
static minfer_status plan_memory(minfer_session *s, mf_plan *p) {
    const mf_graph *g = s->g;
    const int n_steps = (int)g->n_nodes;
    char lbl[512];
    minfer_status st;
    size_t buf_cap = 0, copy_cap = 0, cm_cap = 0;
    int *step_of = mf_malloc((g->n_nodes + 1) * sizeof *step_of);
    if (!step_of)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    for (int k = 0; k < n_steps; k++)
        step_of[g->order[k]] = k;

    /* Pass 2: storage classes and home domains. */
    for (size_t v = 0; v < g->n_values; v++) {
        mf_vplan *vs = &p->vals[v];
        const mf_value *val = &g->values[v];
        vs->dom = 0;
        vs->first = vs->last = -1;
        if (val->is_input)
            vs->where = MF_W_INPUT;
        else if (vs->known)
            vs->where = MF_W_CONST;
        else if (vs->dynamic) {
            vs->where = MF_W_DYNAMIC;
            if (val->producer >= 0) {
                vs->first = step_of[val->producer];
                vs->last = val->is_output ? n_steps : vs->first;
            }
        }
        else if (val->producer >= 0 && vs->view.dtype == MINFER_DTYPE_STRING) {
            vs->where = MF_W_HEAP;
            vs->first = step_of[val->producer];
            vs->last = n_steps;
        } else if (val->producer >= 0) {
            vs->where = MF_W_ARENA;
            vs->dom = mf_dom_of_prov(s, s->assign[val->producer]);
            vs->first = step_of[val->producer];
            vs->last = val->is_output ? n_steps : vs->first;
        } else
            vs->where = MF_W_NONE;
    }

    /* Pass 3: prepare. */
    double t_prep = mf_now_ms();
    for (int k = 0; k < n_steps; k++) {
        int i = g->order[k];
        mf_nplan *ns = &p->nodes[i];
        const mf_node *n = &g->nodes[i];
        if (ns->folded || ns->dynamic)
            continue;
        if (s->assign[i] < 0) {
            st = mf_error(MINFER_ERR_UNSUPPORTED,
                          "%s: %s was folded at build but not for these input shapes", s->errctx,
                          mf_node_label(n, i, lbl, sizeof lbl));
            goto fail;
        }
        mf_provider_inst *pi = &s->provs[s->assign[i]];
        if ((st = node_desc(s, p, i)) != MINFER_OK)
            goto fail;
        minfer_node_prep prep = {sizeof prep, 0, ns->inplace, ns->layouts};
        if (MF_VT_HAS(pi->vt, prepare_node)) {
            mf_error_clear();
            st = pi->vt->prepare_node(pi->ctx, &ns->desc, &prep, &ns->state);
            if (st != MINFER_OK) {
                mf_error_prefix(st, "%s: provider '%s' could not prepare %s", s->errctx, pi->name,
                                mf_node_label(n, i, lbl, sizeof lbl));
                goto fail;
            }
        }
        ns->prepared = 1;
        ns->workspace = prep.workspace_bytes;
        /* Scratch is memory like a tensor: the same limit holds. */
        if (prep.workspace_bytes > s->limits.max_tensor_bytes) {
            st = mf_error(MINFER_ERR_LIMIT,
                          "%s: provider '%s' asks %zu bytes of workspace for %s, above the "
                          "tensor limit of %llu bytes",
                          s->errctx, pi->name, prep.workspace_bytes,
                          mf_node_label(n, i, lbl, sizeof lbl),
                          (unsigned long long)s->limits.max_tensor_bytes);
            goto fail;
        }
        int dom = mf_dom_of_prov(s, s->assign[i]);
        for (size_t o = 0; o < n->n_outputs; o++)
            if (n->outputs[o] >= 0)
                p->vals[n->outputs[o]].view.layout = dom ? ns->layouts[o] : 0;
    }
    p->t_prepare_ms = mf_now_ms() - t_prep;
    double t_mem = mf_now_ms();
    for (size_t v = 0; v < g->n_values; v++) {
        mf_vplan *vs = &p->vals[v];
        if (vs->where == MF_W_ARENA)
            vs->bytes = value_bytes(s, vs->dom, &vs->view);
        else if (vs->where == MF_W_INPUT || vs->where == MF_W_CONST || vs->where == MF_W_HEAP)
            vs->bytes = mf_view_bytes(&vs->view);
    }

    /* Pass 4: liveness, copies between domains, constant uploads. */
    for (size_t i = 0; i < g->n_nodes; i++) {
        mf_nplan *ns = &p->nodes[i];
        if (ns->folded || ns->in_ref)
            continue;
        ns->in_ref = mf_malloc((g->nodes[i].n_inputs + 1) * sizeof *ns->in_ref);
        if (!ns->in_ref) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto fail;
        }
        for (size_t j = 0; j < g->nodes[i].n_inputs; j++)
            ns->in_ref[j] = -1;
    }
    for (int k = 0; k < n_steps; k++) {
        int i = g->order[k];
        mf_nplan *ns = &p->nodes[i];
        const mf_node *n = &g->nodes[i];
        if (ns->folded)
            continue;
        int cdom = ns->dynamic ? 0 : mf_dom_of_prov(s, s->assign[i]);
        for (size_t j = 0; j < n->n_inputs; j++) {
            int u = n->inputs[j];
            if (u < 0)
                continue;
            mf_vplan *vs = &p->vals[u];
            if ((vs->where == MF_W_ARENA || vs->where == MF_W_DYNAMIC) && vs->last < k)
                vs->last = k;
            int home = vs->where == MF_W_ARENA ? vs->dom : 0;
            if (home == cdom)
                continue;
            if (vs->where == MF_W_DYNAMIC) {
                st = mf_error(MINFER_ERR_UNSUPPORTED,
                              "%s: %s reads '%s', whose shape is known only at run time, in "
                              "another memory domain; not supported yet",
                              s->errctx, mf_node_label(n, i, lbl, sizeof lbl), g->values[u].name);
                goto fail;
            }
            if (vs->where == MF_W_CONST) {
                size_t m = 0;
                while (m < p->n_cmirrors && !(p->cmirrors[m].value == u && p->cmirrors[m].dom == cdom))
                    m++;
                if (m == p->n_cmirrors) {
                    if (p->n_cmirrors == cm_cap) {
                        size_t nc = cm_cap ? cm_cap * 2 : 16;
                        mf_cmirror *c = mf_realloc(p->cmirrors, nc * sizeof *c);
                        if (!c) {
                            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                            goto fail;
                        }
                        p->cmirrors = c;
                        cm_cap = nc;
                    }
                    mf_cmirror *c = &p->cmirrors[p->n_cmirrors];
                    mf_provider_inst *pi = &s->provs[cdom - 1];
                    c->value = u;
                    c->dom = cdom;
                    c->bytes = vs->bytes;
                    c->buf = NULL;
                    if ((st = pi->vt->mem_alloc(pi->ctx, c->bytes ? c->bytes : 1, &c->buf)) !=
                        MINFER_OK) {
                        mf_error_prefix(st, "%s: provider '%s' could not allocate a constant",
                                        s->errctx, pi->name);
                        goto fail;
                    }
                    p->n_cmirrors++;
                    minfer_tensor_view dst = vs->view;
                    dst.data = c->buf;
                    dst.offset = 0;
                    dst.nbytes = c->bytes;
                    dst.layout = 0;
                    if ((st = pi->vt->copy_from_host(pi->ctx, vs->view.data, vs->bytes, &dst)) !=
                        MINFER_OK) {
                        mf_error_prefix(st, "%s: uploading '%s' to provider '%s'", s->errctx,
                                        g->values[u].name, pi->name);
                        goto fail;
                    }
                }
                ns->in_ref[j] = -2 - (int)m;
                continue;
            }
            /* A value read in another domain: one copy per (value, domain). */
            size_t c = 0;
            while (c < p->n_copies && !(p->copies[c].value == u && p->copies[c].to_dom == cdom))
                c++;
            if (c == p->n_copies) {
                if (p->n_copies == copy_cap) {
                    size_t nc = copy_cap ? copy_cap * 2 : 16;
                    mf_copy *cp = mf_realloc(p->copies, nc * sizeof *cp);
                    if (!cp) {
                        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                        goto fail;
                    }
                    p->copies = cp;
                    copy_cap = nc;
                }
                mf_copy *cp = &p->copies[p->n_copies++];
                minfer_tensor_view plain = vs->view;
                plain.layout = 0;
                cp->value = u;
                cp->to_dom = cdom;
                cp->at_step = k;
                cp->bytes = value_bytes(s, cdom, &plain);
                /* A host value read by a domain that addresses host memory
                 * (plain, as copies into a domain always are) is handed over
                 * in place. Mirrors are never overwritten in place (pass 5),
                 * so the reader cannot change the host value. */
                int from_host = vs->where != MF_W_ARENA || vs->dom == 0;
                cp->alias = from_host && cdom > 0 && s->provs[cdom - 1].host_addressable &&
                            vs->view.dtype != MINFER_DTYPE_STRING;
                cp->buffer = cp->alias ? -1 : add_buffer(p, &buf_cap, cdom, cp->bytes, k, k, u);
                if (!cp->alias && cp->buffer < 0) {
                    st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                    goto fail;
                }
                /* the source must live until the copy is made */
                if (vs->where == MF_W_ARENA && vs->last < k)
                    vs->last = k;
            }
            if (!p->copies[c].alias) { /* an alias lives as its host value (last >= k) */
                mf_buffer *b = &p->bufs[p->copies[c].buffer];
                if (b->last < k)
                    b->last = k;
            }
            ns->in_ref[j] = (int)c;
        }
    }
    /* Outputs produced in a device domain are copied to the host at the end:
     * they live to the end (already set); so do the host copies below. */

    /* Pass 5: in place, in step order, then one buffer per remaining value. */
    for (size_t v = 0; v < g->n_values; v++)
        p->vals[v].buffer = -1;
    for (int k = 0; k < n_steps; k++) {
        int i = g->order[k];
        mf_nplan *ns = &p->nodes[i];
        const mf_node *n = &g->nodes[i];
        if (ns->folded || ns->dynamic)
            continue;
        for (size_t o = 0; o < n->n_outputs; o++) {
            int v = n->outputs[o];
            if (v < 0 || p->vals[v].where != MF_W_ARENA)
                continue;
            mf_vplan *vs = &p->vals[v];
            int j = ns->inplace[o];
            if (s->planner != MINFER_PLANNER_LINEAR && j >= 0 && (size_t)j < n->n_inputs &&
                n->inputs[j] >= 0 && ns->in_ref[j] == -1) {
                int u = n->inputs[j];
                mf_vplan *us = &p->vals[u];
                /* Not when the node reads the same value through another
                 * input (a convolution reading X as source and residual). */
                int shared = 0;
                for (size_t o2 = 0; o2 < o; o2++)
                    shared |= n->outputs[o2] >= 0 && p->vals[n->outputs[o2]].buffer == us->buffer;
                for (size_t j2 = 0; j2 < n->n_inputs; j2++)
                    shared |= (int)j2 != j && n->inputs[j2] >= 0 &&
                              (n->inputs[j2] == u ||
                               (p->vals[n->inputs[j2]].where == MF_W_ARENA &&
                                p->vals[n->inputs[j2]].buffer == us->buffer));
                if (us->where == MF_W_ARENA && us->buffer >= 0 && us->dom == vs->dom &&
                    us->last == k && !g->values[u].is_output && us->bytes >= vs->bytes &&
                    p->bufs[us->buffer].last == k && !shared) {
                    vs->buffer = us->buffer;
                    p->bufs[us->buffer].last = vs->last;
                    continue;
                }
            }
            vs->buffer = add_buffer(p, &buf_cap, vs->dom, vs->bytes, vs->first, vs->last, v);
            if (vs->buffer < 0) {
                st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                goto fail;
            }
        }
        if (ns->workspace) {
            ns->ws_buffer = add_buffer(p, &buf_cap, mf_dom_of_prov(s, s->assign[i]), ns->workspace,
                                       k, k, -2 - i);
            if (ns->ws_buffer < 0) {
                st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                goto fail;
            }
        }
    }

    /* Pass 6: offsets per domain. */
    {
        mf_plan_item *items = mf_malloc((p->n_bufs + 1) * sizeof *items);
        int *map = mf_malloc((p->n_bufs + 1) * sizeof *map);
        if (!items || !map) {
            free(items);
            free(map);
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto fail;
        }
        p->planner = s->planner;
        for (size_t d = 0; d < s->n_domains; d++) {
            size_t n = 0;
            uint64_t align = dom_align(s, (int)d);
            for (size_t b = 0; b < p->n_bufs; b++)
                if (p->bufs[b].dom == (int)d) {
                    items[n].size = p->bufs[b].size ? p->bufs[b].size : 1;
                    items[n].first = p->bufs[b].first;
                    items[n].last = p->bufs[b].last;
                    items[n].offset = 0;
                    map[n++] = (int)b;
                    /* Every offset a planner gives is below this sum: checked
                     * here, no placement can wrap (each size passed
                     * max_tensor_bytes, which a user may set to 2^64 - 1). */
                    uint64_t up;
                    if (__builtin_add_overflow(items[n - 1].size, align - 1, &up) ||
                        __builtin_add_overflow(p->sum_bytes[d], up / align * align,
                                               &p->sum_bytes[d]) ||
                        p->sum_bytes[d] > SIZE_MAX) {
                        free(items);
                        free(map);
                        st = mf_error(MINFER_ERR_LIMIT,
                                      "%s: the tensors of memory domain %zu add up to more "
                                      "bytes than fit in memory (at value '%s')",
                                      s->errctx, d,
                                      p->bufs[b].value >= 0
                                          ? g->values[p->bufs[b].value].name : "?");
                        goto fail;
                    }
                }
            uint64_t arena = s->planner == MINFER_PLANNER_LINEAR
                                 ? mf_plan_linear(items, n, align)
                                 : mf_plan_greedy(items, n, align);
            if (arena == UINT64_MAX) {
                free(items);
                free(map);
                st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory planning", s->errctx);
                goto fail;
            }
            p->arena_bytes[d] = arena;
            p->lower_bound[d] = mf_plan_lower_bound(items, n, align);
            for (size_t k = 0; k < n; k++)
                p->bufs[map[k]].offset = items[k].offset;
        }
        free(items);
        free(map);
    }
    p->t_plan_ms = mf_now_ms() - t_mem;
    free(step_of);
    return MINFER_OK;
fail:
    free(step_of);
    return st;
}

minfer_status mf_plan_build(minfer_session *s, const int64_t *sig, size_t sig_len,
                            mf_plan **out) {
    minfer_status st;
    const mf_graph *g = s->g;
    mf_plan *p = mf_plan_new(s);
    *out = NULL;
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
        mf_vplan *vs = &p->vals[g->inputs[k]];
        /* kind << 8 | element type, then rank and dims (rank -1 for a
         * sequence or optional) */
        vs->view.kind = (int32_t)(sig[pos] >> 8);
        vs->view.dtype = (int32_t)(sig[pos++] & 0xff);
        vs->view.rank = (int32_t)sig[pos++];
        for (int d = 0; d < vs->view.rank; d++)
            vs->view.dims[d] = sig[pos++];
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
    if ((st = plan_memory(s, p)) != MINFER_OK) {
        mf_plan_free(s, p);
        return st;
    }
    /* FLOP estimates for profiles. */
    {
        minfer_tensor_view in[64], outv[64];
        for (size_t i = 0; i < g->n_nodes; i++) {
            const mf_node *n = &g->nodes[i];
            if (p->nodes[i].folded || n->n_inputs > 64 || n->n_outputs > 64)
                continue;
            for (size_t j = 0; j < n->n_inputs; j++) {
                memset(&in[j], 0, sizeof in[j]);
                in[j].rank = -1;
                if (n->inputs[j] >= 0)
                    in[j] = p->vals[n->inputs[j]].view;
            }
            for (size_t o = 0; o < n->n_outputs; o++) {
                memset(&outv[o], 0, sizeof outv[o]);
                outv[o].rank = -1;
                if (n->outputs[o] >= 0)
                    outv[o] = p->vals[n->outputs[o]].view;
            }
            p->nodes[i].flops = mf_node_flops(n, in, n->n_inputs, outv, n->n_outputs);
        }
    }
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
