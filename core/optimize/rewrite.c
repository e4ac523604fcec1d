/*
 * The graph-rewrite helpers the passes share (declared in passes.h): the use
 * index (producers, consumers, pinned values), questions about constants,
 * and the edits a pass makes (killing and bypassing nodes, rewiring uses,
 * new initializers, ops, attributes and inputs).
 *
 * The index is rebuilt after every edit (mf_opt_reindex, from the manager's
 * sweep), so its arrays are grown and kept for the whole optimization. Every
 * edit marks the analysis stale, unless the running pass keeps it
 * (o->info_keep: folding changes no value's type or shape).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

/* ---- index ------------------------------------------------------------- */

/* An edit: the analysis is recomputed when next asked, unless the pass
 * keeps it (o->info_keep). */
static void stale(mf_opt *o) {
    if (!o->info_keep)
        o->info_dirty = 1;
}

/* Marks every name a subgraph reads that resolves in g. */
static void pin_subgraph_refs(mf_opt *o, const mf_graph *sub) {
    for (size_t i = 0; i < sub->n_nodes; i++) {
        const mf_node *n = &sub->nodes[i];
        for (size_t k = 0; k < n->n_inputs; k++) {
            if (n->inputs[k] < 0)
                continue;
            const mf_value *v = &sub->values[n->inputs[k]];
            if (v->producer >= 0 || v->initializer || v->is_input)
                continue;
            int gv = mf_graph_find(o->g, v->name);
            if (gv >= 0)
                o->pinned[gv] = 1;
        }
        for (size_t a = 0; a < n->n_attrs; a++) {
            if (n->attrs[a].g)
                pin_subgraph_refs(o, n->attrs[a].g);
            for (size_t s = 0; n->attrs[a].graphs && s < n->attrs[a].count; s++)
                pin_subgraph_refs(o, n->attrs[a].graphs[s]);
        }
    }
    for (size_t k = 0; k < sub->n_outputs; k++) {
        const mf_value *v = &sub->values[sub->outputs[k]];
        if (v->producer < 0 && !v->initializer && !v->is_input) {
            int gv = mf_graph_find(o->g, v->name);
            if (gv >= 0)
                o->pinned[gv] = 1;
        }
    }
}

/* Grows *p to hold n elements of size es (never shrinks): the index is
 * rebuilt after every edit, so its arrays are kept between rebuilds. */
static int grow(void *p, size_t *cap, size_t n, size_t es) {
    if (n <= *cap)
        return 1;
    size_t want = *cap ? *cap : 64;
    while (want < n)
        want *= 2;
    void *q = mf_realloc(*(void **)p, want * es);
    if (!q)
        return 0;
    *(void **)p = q;
    *cap = want;
    return 1;
}

minfer_status mf_opt_reindex(mf_opt *o) {
    mf_graph *g = o->g;
    size_t nv = g->n_values, n_edges = 0;
    /* Every array grows first; a failure leaves the old index as it was
     * (realloc keeps the contents). */
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t k = 0; !mf_opt_dead(o, i) && k < g->nodes[i].n_inputs; k++)
            n_edges += g->nodes[i].inputs[k] >= 0;
    if (nv + 2 > o->cap_index_values) {
        size_t cap = o->cap_index_values ? o->cap_index_values : 64;
        while (cap < nv + 2)
            cap *= 2;
        int *p = mf_realloc(o->prod, cap * sizeof *p);
        if (p)
            o->prod = p;
        int *cs = p ? mf_realloc(o->cons_start, cap * sizeof *cs) : NULL;
        if (cs)
            o->cons_start = cs;
        int *f = cs ? mf_realloc(o->fill, cap * sizeof *f) : NULL;
        if (f)
            o->fill = f;
        unsigned char *pin = f ? mf_realloc(o->pinned, cap) : NULL;
        if (!pin)
            return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
        o->pinned = pin;
        o->cap_index_values = cap;
    }
    if (!grow(&o->cons, &o->cap_cons, n_edges + 1, sizeof *o->cons))
        return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
    if (g->n_nodes > o->cap_dead) {
        unsigned char *d = mf_realloc(o->dead, g->n_nodes);
        if (!d)
            return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
        memset(d + o->cap_dead, 0, g->n_nodes - o->cap_dead);
        o->dead = d;
        o->cap_dead = g->n_nodes;
    }
    memset(o->cons_start, 0, (nv + 2) * sizeof *o->cons_start);
    memset(o->pinned, 0, nv + 1);
    memset(o->fill, 0, (nv + 1) * sizeof *o->fill);
    for (size_t v = 0; v < nv; v++)
        o->prod[v] = -1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (mf_opt_dead(o, i))
            continue;
        const mf_node *n = &g->nodes[i];
        for (size_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0)
                o->prod[n->outputs[k]] = (int)i;
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0)
                o->cons_start[n->inputs[k] + 1]++;
    }
    for (size_t v = 0; v < nv; v++)
        o->cons_start[v + 1] += o->cons_start[v];
    int *fill = o->fill;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (mf_opt_dead(o, i))
            continue;
        const mf_node *n = &g->nodes[i];
        for (size_t k = 0; k < n->n_inputs; k++) {
            int v = n->inputs[k];
            if (v >= 0)
                o->cons[o->cons_start[v] + fill[v]++] = (int)i;
        }
        for (size_t a = 0; a < n->n_attrs; a++) {
            if (n->attrs[a].g)
                pin_subgraph_refs(o, n->attrs[a].g);
            for (size_t s = 0; n->attrs[a].graphs && s < n->attrs[a].count; s++)
                pin_subgraph_refs(o, n->attrs[a].graphs[s]);
        }
    }
    for (size_t k = 0; k < g->n_outputs; k++)
        o->pinned[g->outputs[k]] = 1;
    o->n_index_values = nv;
    stale(o);
    return MINFER_OK;
}

size_t mf_opt_nuses(const mf_opt *o, int v) {
    if (v < 0 || (size_t)v >= o->n_index_values)
        return 0;
    return (size_t)(o->cons_start[v + 1] - o->cons_start[v]);
}

int mf_opt_producer(const mf_opt *o, int v) {
    if (v < 0 || (size_t)v >= o->n_index_values)
        return -1;
    return o->prod[v];
}

int mf_opt_single_consumer(const mf_opt *o, int v) {
    if (v < 0 || (size_t)v >= o->n_index_values || o->pinned[v] || mf_opt_nuses(o, v) != 1)
        return -1;
    return o->cons[o->cons_start[v]];
}

void mf_opt_kill(mf_opt *o, int i) {
    if (i >= 0 && (size_t)i < o->cap_dead)
        o->dead[i] = 1;
    stale(o);
}

void mf_opt_replace_uses(mf_opt *o, int from, int to) {
    mf_graph *g = o->g;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (mf_opt_dead(o, i))
            continue;
        mf_node *n = &g->nodes[i];
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == from)
                n->inputs[k] = to;
    }
    stale(o);
}

int mf_opt_bypass(mf_opt *o, int node) {
    mf_graph *g = o->g;
    mf_node *n = &g->nodes[node];
    int x = n->inputs[0], y = n->outputs[0];
    if (x < 0 || y < 0 || x == y)
        return 0;
    if (!o->pinned[y]) {
        mf_opt_replace_uses(o, y, x);
        mf_opt_kill(o, node);
        return 1;
    }
    /* y keeps its name: x's producer writes y, x's readers read y. */
    int p = o->prod[x];
    if (p < 0 || o->pinned[x])
        return 0;
    mf_node *pn = &g->nodes[p];
    for (size_t k = 0; k < pn->n_outputs; k++)
        if (pn->outputs[k] == x)
            pn->outputs[k] = y;
    mf_opt_kill(o, node);
    mf_opt_replace_uses(o, x, y);
    return 1;
}

int mf_opt_is(const mf_graph *g, int i, const char *op) {
    if (i < 0)
        return 0;
    const mf_node *n = &g->nodes[i];
    return (!n->domain || !n->domain[0]) && strcmp(n->op_type, op) == 0;
}

const minfer_tensor *mf_opt_const(const mf_opt *o, int v) {
    if (v < 0 || (size_t)v >= o->g->n_values)
        return NULL;
    return o->g->values[v].initializer;
}

/* Element count, or INT64_MAX when the shape is unknown or the product
 * overflows (a hostile model's dims): callers compare it with small caps. */
int64_t mf_opt_numel(const minfer_tensor_view *t) {
    int64_t n;
    if (t->rank < 0 || mf_numel(t->dims, t->rank, &n) != MINFER_OK)
        return INT64_MAX;
    return n;
}

int mf_opt_scalar(const mf_opt *o, int v, double *out) {
    const minfer_tensor *t = mf_opt_const(o, v);
    if (!t || mf_opt_numel(&t->view) != 1 || !t->view.data)
        return 0;
    const void *p = (const char *)t->view.data + t->view.offset;
    switch (t->view.dtype) {
    case MINFER_DTYPE_FLOAT: *out = *(const float *)p; return 1;
    case MINFER_DTYPE_DOUBLE: *out = *(const double *)p; return 1;
    default: return 0;
    }
}

int mf_opt_const_ints(const mf_opt *o, int v, int64_t *out, int cap) {
    const minfer_tensor *t = mf_opt_const(o, v);
    if (!t || t->view.rank > 1)
        return -1;
    int64_t n = mf_opt_numel(&t->view);
    if (n > cap)
        return -1;
    const char *p = (const char *)t->view.data + t->view.offset;
    for (int64_t i = 0; i < n; i++) {
        if (t->view.dtype == MINFER_DTYPE_INT64)
            out[i] = ((const int64_t *)p)[i];
        else if (t->view.dtype == MINFER_DTYPE_INT32)
            out[i] = ((const int32_t *)p)[i];
        else
            return -1;
    }
    return (int)n;
}

int mf_opt_add_const(mf_opt *o, const char *base, minfer_tensor *t) {
    char name[512];
    int vi = -1;
    for (int tries = 0; tries < 1000 && vi < 0; tries++) {
        snprintf(name, sizeof name, "%s_opt%u", base, o->name_seq++);
        if (mf_graph_find(o->g, name) >= 0)
            continue;
        vi = mf_graph_intern(o->g, name);
        if (vi < 0)
            break;
    }
    if (vi < 0) {
        minfer_tensor_free(t);
        return -1;
    }
    mf_value *v = &o->g->values[vi];
    v->initializer = t;
    v->dtype = t->view.dtype;
    v->rank = t->view.rank;
    for (int d = 0; d < t->view.rank; d++)
        v->dims[d] = t->view.dims[d];
    stale(o);
    return vi;
}

minfer_status mf_opt_add_opset(mf_graph *g, const char *domain, int64_t version) {
    for (size_t i = 0; i < g->n_opsets; i++)
        if (g->opsets[i].domain && strcmp(g->opsets[i].domain, domain) == 0)
            return MINFER_OK;
    mf_opset *ops = mf_realloc(g->opsets, (g->n_opsets + 1) * sizeof *ops);
    if (!ops)
        return MINFER_ERR_NOMEM;
    g->opsets = ops;
    ops[g->n_opsets].domain = mf_strdup(domain);
    if (!ops[g->n_opsets].domain)
        return MINFER_ERR_NOMEM;
    ops[g->n_opsets++].version = version;
    return MINFER_OK;
}

minfer_status mf_opt_set_op(mf_opt *o, int i, const char *domain, const char *op) {
    mf_node *n = &o->g->nodes[i];
    char *d = mf_strdup(domain), *t = mf_strdup(op);
    if (!d || !t || (domain[0] && mf_opt_add_opset(o->g, domain, 1) != MINFER_OK)) {
        free(d);
        free(t);
        return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
    }
    free(n->domain);
    free(n->op_type);
    n->domain = d;
    n->op_type = t;
    n->opset = domain[0] ? 1 : mf_graph_opset(o->g, "");
    stale(o);
    return MINFER_OK;
}

void mf_opt_drop_attr(mf_opt *o, int i, const char *name) {
    mf_node *n = &o->g->nodes[i];
    for (size_t a = 0; a < n->n_attrs; a++)
        if (strcmp(n->attrs[a].name, name) == 0) {
            mf_attr_mismatch_keep(o->g, n);
            mf_attr_clear(&n->attrs[a]);
            n->attrs[a] = n->attrs[--n->n_attrs];
            return;
        }
}

/* A fresh attribute slot named name on node i (an old one is replaced). */
static mf_attr *new_attr(mf_opt *o, int i, const char *name, int type) {
    mf_opt_drop_attr(o, i, name);
    mf_node *n = &o->g->nodes[i];
    mf_attr *a = mf_realloc(n->attrs, (n->n_attrs + 1) * sizeof *a);
    if (!a)
        return NULL;
    n->attrs = a;
    a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->name = mf_strdup(name);
    if (!a->name)
        return NULL;
    a->type = type;
    n->n_attrs++;
    stale(o);
    return a;
}

minfer_status mf_opt_oom(const mf_opt *o) {
    return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
}

minfer_status mf_opt_set_attr_int(mf_opt *o, int i, const char *name, int64_t v) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_INT);
    if (!a)
        return mf_opt_oom(o);
    a->i = v;
    return MINFER_OK;
}

minfer_status mf_opt_set_attr_float(mf_opt *o, int i, const char *name, float v) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_FLOAT);
    if (!a)
        return mf_opt_oom(o);
    a->f = v;
    return MINFER_OK;
}

minfer_status mf_opt_set_attr_string(mf_opt *o, int i, const char *name, const char *v) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_STRING);
    if (!a || !(a->s = mf_strdup(v)))
        return mf_opt_oom(o);
    a->s_len = strlen(v);
    return MINFER_OK;
}

minfer_status mf_opt_set_attr_floats(mf_opt *o, int i, const char *name, const float *v,
                                     size_t n) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_FLOATS);
    if (!a || !(a->floats = mf_malloc((n + 1) * sizeof *v)))
        return mf_opt_oom(o);
    if (n)
        memcpy(a->floats, v, n * sizeof *v);
    a->count = n;
    return MINFER_OK;
}

minfer_status mf_opt_set_attr_ints(mf_opt *o, int i, const char *name, const int64_t *v,
                                   size_t n) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_INTS);
    if (!a || !(a->ints = mf_malloc((n + 1) * sizeof *v)))
        return mf_opt_oom(o);
    if (n)
        memcpy(a->ints, v, n * sizeof *v);
    a->count = n;
    return MINFER_OK;
}

minfer_status mf_opt_set_inputs(mf_opt *o, int i, const int *inputs, size_t n) {
    mf_node *nd = &o->g->nodes[i];
    int *in = mf_malloc((n + 1) * sizeof *in);
    if (!in)
        return mf_opt_oom(o);
    memcpy(in, inputs, n * sizeof *in);
    free(nd->inputs);
    nd->inputs = in;
    nd->n_inputs = n;
    stale(o);
    return MINFER_OK;
}
