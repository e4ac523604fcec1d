/*
 * Plans: the data of a plan and its memory passes (plan/plan.h). The
 * passes that run nodes (inference, folding, preparation) are plan/build.c,
 * which calls these in this order:
 *
 *  2. storage classes (mf_plan_storage): graph inputs are bound at run
 *     time, constants are owned by the plan, dynamic values are allocated
 *     during the run, and every other value lives in the arena of its
 *     producer's memory domain;
 *  (3. plan/build.c prepares every remaining node, which yields workspace
 *     sizes, in-place permissions and output layouts;)
 *  4. liveness over the execution order (mf_plan_memory from here on): each
 *     arena value's first (producer) and last (final consumer) step; graph
 *     outputs live to the end. Where a consumer computes in another memory
 *     domain than a value's home, a copy into that domain is planned before
 *     its first consumer there; constants needed in a device domain are
 *     uploaded once, now;
 *  5. in place: an output may take its input's buffer when the provider
 *     allows it, the input dies at that node, and both sit in one domain;
 *  6. offsets: the buffers of each domain (values, copies, workspaces) are
 *     placed by the greedy-by-size planner (or the linear debug planner).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "plan/plan.h"
#include "plan/planner.h"
#include "plan/plan_concurrent.h"


void mf_plan_release_node(minfer_session *s, mf_plan *p, int i) {
    mf_nplan *ns = &p->nodes[i];
    if (ns->prepared && ns->prov >= 0)
        mf_prov_release(&s->pl->provs[ns->prov], ns->state);
    ns->state = NULL;
    ns->prepared = 0;
}

void mf_plan_free(minfer_session *s, mf_plan *p) {
    if (!p)
        return;
    const mf_graph *g = s->g;
    if (p->nodes)
        for (size_t i = 0; i < g->n_nodes; i++) {
            mf_plan_release_node(s, p, (int)i);
            free(p->nodes[i].in_desc);
            free(p->nodes[i].out_desc);
            free(p->nodes[i].inplace);
            free(p->nodes[i].layouts);
            free(p->nodes[i].in_ref);
            free(p->nodes[i].packed);
        }
    if (p->vals)
        for (size_t v = 0; v < g->n_values; v++) {
            mf_vplan *vs = &p->vals[v];
            if (vs->owned && vs->view.dtype == MINFER_DTYPE_STRING)
                mf_free_strings(vs->owned, (int64_t)(mf_view_bytes(&vs->view) / sizeof(char *)));
            free(vs->owned);
        }
    for (size_t m = 0; m < p->n_cmirrors; m++) {
        mf_provider_inst *pi = &s->pl->provs[p->cmirrors[m].dom - 1];
        if (p->cmirrors[m].buf)
            mf_prov_mem_free(pi, p->cmirrors[m].buf);
    }
    free(p->cmirrors);
    free(p->copies);
    free(p->bufs);
    free(p->arena_bytes);
    free(p->lower_bound);
    free(p->sum_bytes);
    mf_conc_free(p->conc);
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
    for (size_t i = 0; i < s->g->n_nodes; i++) {
        p->nodes[i].ws_buffer = -1;
        p->nodes[i].prov = s->assign ? s->assign[i] : -1;
    }
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
        int dom = mf_dom_of_prov(s, p->nodes[i].prov);
        vd->layout = dom != 0 && p->vals[vi].dom == dom ? v->layout : 0;
        if (p->vals[vi].known) {
            vd->const_data = p->vals[vi].view.data;
            vd->const_nbytes = p->vals[vi].view.nbytes;
        }
    }
    mf_node_desc_init(d, n, in, out);
    return MINFER_OK;
}

minfer_status mf_plan_node_desc(minfer_session *s, mf_plan *p, int i) {
    const mf_node *n = &s->g->nodes[i];
    mf_nplan *ns = &p->nodes[i];
    if (!ns->in_desc) {
        ns->in_desc = mf_calloc(n->n_inputs + 1, sizeof *ns->in_desc);
        ns->out_desc = mf_calloc(n->n_outputs + 1, sizeof *ns->out_desc);
        ns->inplace = mf_calloc(n->n_outputs + 1, sizeof *ns->inplace);
        ns->layouts = mf_calloc(n->n_outputs + 1, sizeof *ns->layouts);
        ns->in_ref = mf_calloc(n->n_inputs + 1, sizeof *ns->in_ref);
        ns->packed = mf_calloc(n->n_inputs + 1, sizeof *ns->packed);
        if (!ns->in_desc || !ns->out_desc || !ns->inplace || !ns->layouts || !ns->in_ref ||
            !ns->packed)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        for (size_t j = 0; j < n->n_inputs; j++)
            ns->in_ref[j] = -1;
    }
    for (size_t o = 0; o < n->n_outputs; o++) {
        ns->inplace[o] = -1;
        ns->layouts[o] = 0;
    }
    memset(ns->packed, 0, n->n_inputs * sizeof *ns->packed);
    return mf_fill_desc(s, p, i, NULL, ns->in_desc, ns->out_desc, &ns->desc);
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
        return MF_HOST_ALIGN;
    size_t a = mf_prov_alignment(&s->pl->provs[dom - 1]);
    return a ? a : MF_HOST_ALIGN;
}

static uint64_t value_bytes(minfer_session *s, int dom, const minfer_tensor_view *v) {
    if (dom > 0) {
        const mf_provider_inst *pi = &s->pl->provs[dom - 1];
        if (mf_prov_has_tensor_bytes(pi))
            return mf_prov_tensor_bytes(pi, v);
    }
    return mf_view_bytes(v);
}

/* The step at which each node runs (g->order inverted); NULL when out of
 * memory. */
static int *steps_of(const mf_graph *g) {
    int *step_of = mf_malloc((g->n_nodes + 1) * sizeof *step_of);
    if (step_of)
        for (size_t k = 0; k < g->n_nodes; k++)
            step_of[g->order[k]] = (int)k;
    return step_of;
}

/* Pass 2: storage classes and home domains. */
minfer_status mf_plan_storage(minfer_session *s, mf_plan *p) {
    const mf_graph *g = s->g;
    const int n_steps = (int)g->n_nodes;
    int *step_of = steps_of(g);
    if (!step_of)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
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
            vs->dom = mf_dom_of_prov(s, p->nodes[val->producer].prov);
            vs->first = step_of[val->producer];
            vs->last = val->is_output ? n_steps : vs->first;
        } else
            vs->where = MF_W_NONE;
    }
    free(step_of);
    return MINFER_OK;
}

/* Capacities of the plan's growing arrays while passes 4 and 5 fill them. */
typedef struct plan_caps {
    size_t bufs, copies, mirrors;
} plan_caps;

/* Storage bytes of every value, in its home domain's layout. */
static void value_sizes(minfer_session *s, mf_plan *p) {
    for (size_t v = 0; v < s->g->n_values; v++) {
        mf_vplan *vs = &p->vals[v];
        if (vs->where == MF_W_ARENA)
            vs->bytes = value_bytes(s, vs->dom, &vs->view);
        else if (vs->where == MF_W_INPUT || vs->where == MF_W_CONST || vs->where == MF_W_HEAP)
            vs->bytes = mf_view_bytes(&vs->view);
    }
}

/* in_ref for every node that runs, each input its own storage for now. */
static minfer_status alloc_in_refs(minfer_session *s, mf_plan *p) {
    const mf_graph *g = s->g;
    for (size_t i = 0; i < g->n_nodes; i++) {
        mf_nplan *ns = &p->nodes[i];
        if (ns->folded || ns->in_ref)
            continue;
        ns->in_ref = mf_malloc((g->nodes[i].n_inputs + 1) * sizeof *ns->in_ref);
        if (!ns->in_ref)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        for (size_t j = 0; j < g->nodes[i].n_inputs; j++)
            ns->in_ref[j] = -1;
    }
    return MINFER_OK;
}

/* Constant u uploaded once into domain cdom: its mirror's index in *m. */
static minfer_status mirror_constant(minfer_session *s, mf_plan *p, plan_caps *caps, int u,
                                     int cdom, size_t *m) {
    const mf_vplan *vs = &p->vals[u];
    minfer_status st;
    for (*m = 0; *m < p->n_cmirrors; ++*m)
        if (p->cmirrors[*m].value == u && p->cmirrors[*m].dom == cdom)
            return MINFER_OK;
    if (p->n_cmirrors == caps->mirrors) {
        size_t nc = caps->mirrors ? caps->mirrors * 2 : 16;
        mf_cmirror *c = mf_realloc(p->cmirrors, nc * sizeof *c);
        if (!c)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        p->cmirrors = c;
        caps->mirrors = nc;
    }
    mf_cmirror *c = &p->cmirrors[p->n_cmirrors];
    mf_provider_inst *pi = &s->pl->provs[cdom - 1];
    c->value = u;
    c->dom = cdom;
    c->bytes = vs->bytes;
    c->buf = NULL;
    if ((st = mf_prov_mem_alloc(pi, c->bytes ? c->bytes : 1, &c->buf)) != MINFER_OK)
        return mf_error_prefix(st, "%s: provider '%s' could not allocate a constant", s->errctx,
                               pi->name);
    p->n_cmirrors++;
    minfer_tensor_view dst = vs->view;
    dst.data = c->buf;
    dst.offset = 0;
    dst.nbytes = c->bytes;
    dst.layout = 0;
    if ((st = mf_prov_copy_from_host(pi, vs->view.data, vs->bytes, &dst)) != MINFER_OK)
        return mf_error_prefix(st, "%s: uploading '%s' to provider '%s'", s->errctx,
                               s->g->values[u].name, pi->name);
    return MINFER_OK;
}

/* Value u read in domain cdom at step k: one copy per (value, domain), its
 * index in *c. */
static minfer_status plan_copy(minfer_session *s, mf_plan *p, plan_caps *caps, int u, int cdom,
                               int k, size_t *c) {
    mf_vplan *vs = &p->vals[u];
    for (*c = 0; *c < p->n_copies; ++*c)
        if (p->copies[*c].value == u && p->copies[*c].to_dom == cdom)
            break;
    if (*c == p->n_copies) {
        if (p->n_copies == caps->copies) {
            size_t nc = caps->copies ? caps->copies * 2 : 16;
            mf_copy *cp = mf_realloc(p->copies, nc * sizeof *cp);
            if (!cp)
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            p->copies = cp;
            caps->copies = nc;
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
        cp->alias = from_host && cdom > 0 && s->pl->provs[cdom - 1].host_addressable &&
                    vs->view.dtype != MINFER_DTYPE_STRING;
        cp->buffer = cp->alias ? -1 : add_buffer(p, &caps->bufs, cdom, cp->bytes, k, k, u);
        if (!cp->alias && cp->buffer < 0)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        /* the source must live until the copy is made */
        if (vs->where == MF_W_ARENA && vs->last < k)
            vs->last = k;
    }
    if (!p->copies[*c].alias) { /* an alias lives as its host value (last >= k) */
        mf_buffer *b = &p->bufs[p->copies[*c].buffer];
        if (b->last < k)
            b->last = k;
    }
    return MINFER_OK;
}

/* Pass 4: liveness, copies between domains, constant uploads. */
static minfer_status plan_liveness(minfer_session *s, mf_plan *p, plan_caps *caps) {
    const mf_graph *g = s->g;
    char lbl[512];
    minfer_status st;
    for (int k = 0; k < (int)g->n_nodes; k++) {
        int i = g->order[k];
        mf_nplan *ns = &p->nodes[i];
        const mf_node *n = &g->nodes[i];
        if (ns->folded)
            continue;
        int cdom = ns->dynamic ? 0 : mf_dom_of_prov(s, ns->prov);
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
            if (vs->where == MF_W_DYNAMIC)
                return mf_error(MINFER_ERR_UNSUPPORTED,
                                "%s: %s reads '%s', whose shape is known only at run time, in "
                                "another memory domain; not supported yet",
                                s->errctx, mf_node_label(n, i, lbl, sizeof lbl), g->values[u].name);
            size_t at;
            if (vs->where == MF_W_CONST) {
                if (ns->packed && ns->packed[j])
                    continue; /* the provider has its own copy: nothing to upload */
                if ((st = mirror_constant(s, p, caps, u, cdom, &at)) != MINFER_OK)
                    return st;
                ns->in_ref[j] = -2 - (int)at;
                continue;
            }
            if ((st = plan_copy(s, p, caps, u, cdom, k, &at)) != MINFER_OK)
                return st;
            ns->in_ref[j] = (int)at;
        }
    }
    /* Outputs produced in a device domain are copied to the host at the end:
     * they live to the end (already set); so do the host copies below. */
    return MINFER_OK;
}

/* May output o of node i (step k) take the buffer of its input j? When the
 * provider allows it, the input dies here, both sit in one domain and the
 * node reads that buffer through no other input. */
static int can_share(const minfer_session *s, const mf_plan *p, int i, size_t o, int k) {
    const mf_graph *g = s->g;
    const mf_node *n = &g->nodes[i];
    const mf_nplan *ns = &p->nodes[i];
    const mf_vplan *vs = &p->vals[n->outputs[o]];
    int j = ns->inplace[o];
    if (s->planner == MINFER_PLANNER_LINEAR || j < 0 || (size_t)j >= n->n_inputs ||
        n->inputs[j] < 0 || ns->in_ref[j] != -1)
        return 0;
    int u = n->inputs[j];
    const mf_vplan *us = &p->vals[u];
    /* Not when the node reads the same value through another input (a
     * convolution reading X as source and residual). */
    int shared = 0;
    for (size_t o2 = 0; o2 < o; o2++)
        shared |= n->outputs[o2] >= 0 && p->vals[n->outputs[o2]].buffer == us->buffer;
    for (size_t j2 = 0; j2 < n->n_inputs; j2++)
        shared |= (int)j2 != j && n->inputs[j2] >= 0 &&
                  (n->inputs[j2] == u || (p->vals[n->inputs[j2]].where == MF_W_ARENA &&
                                          p->vals[n->inputs[j2]].buffer == us->buffer));
    return us->where == MF_W_ARENA && us->buffer >= 0 && us->dom == vs->dom && us->last == k &&
           !g->values[u].is_output && us->bytes >= vs->bytes &&
           p->bufs[us->buffer].last == k && !shared && mf_conc_inplace_ok(s, p, u, k);
}

/* Pass 5: in place, in step order, then one buffer per remaining value and
 * one per workspace. */
static minfer_status plan_buffers(minfer_session *s, mf_plan *p, plan_caps *caps) {
    const mf_graph *g = s->g;
    for (size_t v = 0; v < g->n_values; v++)
        p->vals[v].buffer = -1;
    for (int k = 0; k < (int)g->n_nodes; k++) {
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
            if (can_share(s, p, i, o, k)) {
                vs->buffer = p->vals[n->inputs[ns->inplace[o]]].buffer;
                p->bufs[vs->buffer].last = vs->last;
                continue;
            }
            vs->buffer = add_buffer(p, &caps->bufs, vs->dom, vs->bytes, vs->first, vs->last, v);
            if (vs->buffer < 0)
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        }
        if (ns->workspace) {
            ns->ws_buffer = add_buffer(p, &caps->bufs, mf_dom_of_prov(s, ns->prov), ns->workspace,
                                       k, k, -2 - i);
            if (ns->ws_buffer < 0)
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        }
    }
    return MINFER_OK;
}

/* Pass 6 for domain d: offsets of its buffers from the planner, with every
 * size checked so that no placement can wrap. items and map have room for
 * every buffer. */
static minfer_status plan_domain(minfer_session *s, mf_plan *p, size_t d, mf_plan_item *items,
                                 int *map) {
    size_t n = 0;
    uint64_t align = dom_align(s, (int)d);
    for (size_t b = 0; b < p->n_bufs; b++) {
        if (p->bufs[b].dom != (int)d)
            continue;
        items[n].size = p->bufs[b].size ? p->bufs[b].size : 1;
        items[n].first = p->bufs[b].first;
        items[n].last = p->bufs[b].last;
        items[n].offset = 0;
        map[n++] = (int)b;
        /* Every offset a planner gives is below this sum: checked here, no
         * placement can wrap (each size passed max_tensor_bytes, which a
         * user may set to 2^64 - 1). */
        uint64_t up;
        if (__builtin_add_overflow(items[n - 1].size, align - 1, &up) ||
            __builtin_add_overflow(p->sum_bytes[d], up / align * align, &p->sum_bytes[d]) ||
            p->sum_bytes[d] > SIZE_MAX)
            return mf_error(MINFER_ERR_LIMIT,
                            "%s: the tensors of memory domain %zu add up to more bytes than fit "
                            "in memory (at value '%s')",
                            s->errctx, d,
                            p->bufs[b].value >= 0 ? s->g->values[p->bufs[b].value].name : "?");
    }
    if (p->conc && s->planner != MINFER_PLANNER_LINEAR) {
        /* what the sequential order would take, then the concurrent plan */
        p->conc->seq_arena[d] = mf_plan_greedy(items, n, align);
        mf_conc_widen(p->conc, items, n);
    }
    uint64_t arena = s->planner == MINFER_PLANNER_LINEAR ? mf_plan_linear(items, n, align)
                                                         : mf_plan_greedy(items, n, align);
    if (arena == UINT64_MAX)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory planning", s->errctx);
    p->arena_bytes[d] = arena;
    p->lower_bound[d] = mf_plan_lower_bound(items, n, align);
    for (size_t k = 0; k < n; k++)
        p->bufs[map[k]].offset = items[k].offset;
    return MINFER_OK;
}

/* Pass 6: offsets per domain. */
static minfer_status plan_offsets(minfer_session *s, mf_plan *p) {
    minfer_status st = MINFER_OK;
    mf_plan_item *items = mf_malloc((p->n_bufs + 1) * sizeof *items);
    int *map = mf_malloc((p->n_bufs + 1) * sizeof *map);
    if (!items || !map)
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    p->planner = s->planner;
    for (size_t d = 0; st == MINFER_OK && d < s->n_domains; d++)
        st = plan_domain(s, p, d, items, map);
    free(items);
    free(map);
    return st;
}

minfer_status mf_plan_memory(minfer_session *s, mf_plan *p) {
    plan_caps caps = {0, 0, 0};
    minfer_status st;
    double t = mf_now_ms();
    value_sizes(s, p);
    if ((st = alloc_in_refs(s, p)) != MINFER_OK || (st = plan_liveness(s, p, &caps)) != MINFER_OK ||
        (st = mf_conc_build(s, p)) != MINFER_OK || (st = plan_buffers(s, p, &caps)) != MINFER_OK ||
        (st = plan_offsets(s, p)) != MINFER_OK)
        return st;
    mf_conc_planned(p->conc);
    p->t_plan_ms = mf_now_ms() - t;
    return MINFER_OK;
}

size_t mf_sig_put(int64_t *sig, size_t pos, int32_t kind, int32_t dtype, int32_t rank,
                  const int64_t *dims) {
    sig[pos++] = (int64_t)kind << 8 | dtype;
    if (kind != MINFER_VALUE_TENSOR) {
        sig[pos++] = -1;
        return pos;
    }
    assert(rank >= 0 && rank <= MINFER_MAX_RANK);
    sig[pos++] = rank;
    for (int d = 0; d < rank; d++)
        sig[pos++] = dims[d];
    return pos;
}

size_t mf_sig_get(const int64_t *sig, size_t pos, minfer_tensor_view *v) {
    v->kind = (int32_t)(sig[pos] >> 8);
    v->dtype = (int32_t)(sig[pos++] & 0xff);
    v->rank = (int32_t)sig[pos++];
    for (int d = 0; d < v->rank; d++)
        v->dims[d] = sig[pos++];
    return pos;
}
