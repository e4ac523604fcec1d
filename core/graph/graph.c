/*
 * Graph IR construction, lookup and validation.
 *
 * mf_graph_finalize checks a graph in four passes:
 *  1. resolve each node's opset from the graph's (or an enclosing graph's)
 *     opset imports;
 *  2. record the producer of every value, refusing a value produced twice or
 *     a node that writes a graph input or an initializer;
 *  3. check that every value read (node inputs, graph outputs) has a source:
 *     a producer, a graph input, an initializer, or an enclosing graph;
 *  4. order the nodes topologically (Kahn's algorithm, taking ready nodes in
 *     file order so the order is stable), which also finds cycles.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "graph/graph.h"
#include "util/internal.h"

mf_graph *mf_graph_new(void) {
    mf_graph *g = mf_calloc(1, sizeof *g);
    return g;
}

void mf_attr_clear(mf_attr *a) {
    if (!a)
        return;
    free(a->name);
    free(a->s);
    free(a->floats);
    free(a->ints);
    if (a->strings) {
        for (size_t i = 0; i < a->count; i++)
            free(a->strings[i]);
        free(a->strings);
    }
    minfer_tensor_free(a->t);
    if (a->tensors) {
        for (size_t i = 0; i < a->count; i++)
            minfer_tensor_free(a->tensors[i]);
        free(a->tensors);
    }
    mf_graph_free(a->g);
    if (a->graphs) {
        for (size_t i = 0; i < a->count; i++)
            mf_graph_free(a->graphs[i]);
        free(a->graphs);
    }
    memset(a, 0, sizeof *a);
}

static void meta_free(mf_model_meta *m) {
    if (!m)
        return;
    free(m->producer_name);
    free(m->producer_version);
    free(m->domain);
    free(m->doc_string);
    free(m->graph_doc_string);
    for (size_t i = 0; i < m->n_props; i++) {
        free(m->keys[i]);
        free(m->values[i]);
    }
    free(m->keys);
    free(m->values);
    free(m);
}

void mf_graph_free(mf_graph *g) {
    if (!g)
        return;
    meta_free(g->meta);
    for (size_t i = 0; i < g->n_values; i++) {
        mf_value *v = &g->values[i];
        free(v->name);
        for (int d = 0; d < MINFER_MAX_RANK; d++)
            free(v->dim_params[d]);
        minfer_tensor_free(v->initializer);
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        mf_node *n = &g->nodes[i];
        free(n->name);
        free(n->op_type);
        free(n->domain);
        free(n->inputs);
        free(n->outputs);
        for (size_t a = 0; a < n->n_attrs; a++)
            mf_attr_clear(&n->attrs[a]);
        free(n->attrs);
    }
    for (size_t i = 0; i < g->n_opsets; i++)
        free(g->opsets[i].domain);
    free(g->opsets);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    free(g->order);
    free(g->hash);
    free(g->name);
    free(g->captures);
    free(g->capture_slot);
    if (g->packs_free)
        g->packs_free(g->packs);
    if (g->blob_release)
        g->blob_release(g->blob, g->blob_size);
    if (g->blob_fd_set)
        close(g->blob_fd);
    free(g->input_index);
    free(g);
}

static size_t hash_str(const char *s) {
    return (size_t)XXH3_64bits(s, strlen(s));
}

static int hash_slot(const mf_graph *g, const char *name) {
    size_t mask = g->hash_cap - 1;
    for (size_t i = hash_str(name) & mask;; i = (i + 1) & mask) {
        int idx = g->hash[i];
        if (idx < 0 || strcmp(g->values[idx].name, name) == 0)
            return (int)i;
    }
}

static int rehash(mf_graph *g, size_t cap) {
    int *h = mf_malloc(cap * sizeof *h);
    if (!h)
        return -1;
    for (size_t i = 0; i < cap; i++)
        h[i] = -1;
    free(g->hash);
    g->hash = h;
    g->hash_cap = cap;
    for (size_t v = 0; v < g->n_values; v++)
        g->hash[hash_slot(g, g->values[v].name)] = (int)v;
    return 0;
}

int mf_graph_find(const mf_graph *g, const char *name) {
    if (!g || !name || !g->hash_cap)
        return -1;
    return g->hash[hash_slot(g, name)];
}

int mf_graph_intern(mf_graph *g, const char *name) {
    int idx = mf_graph_find(g, name);
    if (idx >= 0)
        return idx;
    if (g->n_values >= (size_t)INT32_MAX / 4)
        return -1;
    if (g->n_values == g->cap_values) {
        size_t cap = g->cap_values ? g->cap_values * 2 : 64;
        mf_value *v = mf_realloc(g->values, cap * sizeof *v);
        if (!v)
            return -1;
        g->values = v;
        g->cap_values = cap;
    }
    if ((g->n_values + 1) * 2 > g->hash_cap &&
        rehash(g, g->hash_cap ? g->hash_cap * 2 : 128) != 0)
        return -1;
    mf_value *v = &g->values[g->n_values];
    memset(v, 0, sizeof *v);
    v->name = mf_strdup(name);
    if (!v->name)
        return -1;
    v->rank = -1;
    v->producer = -1;
    for (int d = 0; d < MINFER_MAX_RANK; d++)
        v->dims[d] = -1;
    idx = (int)g->n_values++;
    g->hash[hash_slot(g, name)] = idx;
    return idx;
}

int mf_graph_add_node(mf_graph *g) {
    if (g->n_nodes >= (size_t)INT32_MAX / 4)
        return -1;
    if (g->n_nodes == g->cap_nodes) {
        size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        mf_node *n = mf_realloc(g->nodes, cap * sizeof *n);
        if (!n)
            return -1;
        g->nodes = n;
        g->cap_nodes = cap;
    }
    memset(&g->nodes[g->n_nodes], 0, sizeof g->nodes[0]);
    return (int)g->n_nodes++;
}

static int is_default_domain(const char *d) {
    return !d || !d[0] || strcmp(d, "ai.onnx") == 0;
}

int64_t mf_graph_opset(const mf_graph *g, const char *domain) {
    for (; g; g = g->parent)
        for (size_t i = 0; i < g->n_opsets; i++) {
            const char *d = g->opsets[i].domain;
            if ((is_default_domain(domain) && is_default_domain(d)) ||
                (domain && d && strcmp(domain, d) == 0))
                return g->opsets[i].version;
        }
    return 0;
}

/* A name read inside a subgraph may come from any enclosing graph. */
static int outer_scope_has(const mf_graph *g, const char *name) {
    for (const mf_graph *p = g->parent; p; p = p->parent)
        if (mf_graph_find(p, name) >= 0)
            return 1;
    return 0;
}

static const char *node_label(const mf_node *n, size_t idx, char *buf, size_t size) {
    if (n->name && n->name[0])
        snprintf(buf, size, "'%s'", n->name);
    else
        snprintf(buf, size, "#%zu", idx);
    return buf;
}

/* Records which values subgraph sg of node nd reads from outer scopes and
 * makes each an implicit input of nd (once per subgraph). */
static minfer_status add_captures(mf_graph *g, mf_node *nd, mf_graph *sg, const char *errctx) {
    if (sg->captures_done)
        return MINFER_OK;
    size_t n = 0;
    for (size_t v = 0; v < sg->n_values; v++) {
        const mf_value *val = &sg->values[v];
        n += val->producer < 0 && !val->is_input && !val->initializer;
    }
    sg->captures = mf_malloc((n + 1) * sizeof *sg->captures);
    sg->capture_slot = mf_malloc((n + 1) * sizeof *sg->capture_slot);
    if (!sg->captures || !sg->capture_slot)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
    for (size_t v = 0; v < sg->n_values; v++) {
        const mf_value *val = &sg->values[v];
        if (val->producer >= 0 || val->is_input || val->initializer)
            continue;
        int pv = mf_graph_intern(g, val->name);
        if (pv < 0)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        size_t slot = nd->n_inputs - nd->n_implicit;
        while (slot < nd->n_inputs && nd->inputs[slot] != pv)
            slot++;
        if (slot == nd->n_inputs) {
            int *in = mf_realloc(nd->inputs, (nd->n_inputs + 1) * sizeof *in);
            if (!in)
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            nd->inputs = in;
            nd->inputs[nd->n_inputs++] = pv;
            nd->n_implicit++;
        }
        sg->captures[sg->n_captures] = (int)v;
        sg->capture_slot[sg->n_captures++] = (int)slot;
    }
    sg->captures_done = 1;
    return MINFER_OK;
}

minfer_status mf_graph_finalize(mf_graph *g, const char *errctx) {
    char lbl[256];
    size_t n = g->n_nodes;
    int *indeg = NULL, *queue = NULL, *order = NULL;
    int *succ_start = NULL, *succ = NULL;
    minfer_status st = MINFER_OK;

    /* Pass 1: opsets. */
    for (size_t i = 0; i < n; i++) {
        mf_node *nd = &g->nodes[i];
        if (!nd->op_type || !nd->op_type[0])
            return mf_error(MINFER_ERR_MODEL, "%s: node %s has no op_type", errctx,
                            node_label(nd, i, lbl, sizeof lbl));
        if (nd->domain && strcmp(nd->domain, "ai.onnx") == 0)
            nd->domain[0] = '\0';
        nd->opset = mf_graph_opset(g, nd->domain);
        if (nd->opset <= 0)
            return mf_error(MINFER_ERR_MODEL,
                            "%s: node %s (%s) uses domain '%s', which the model does not import",
                            errctx, node_label(nd, i, lbl, sizeof lbl), nd->op_type,
                            nd->domain ? nd->domain : "");
    }

    /* Pass 1b: outer-scope values read by subgraphs (finalized first). */
    for (size_t i = 0; i < n; i++) {
        mf_node *nd = &g->nodes[i];
        for (size_t a = 0; a < nd->n_attrs; a++) {
            mf_attr *at = &nd->attrs[a];
            if (at->type == MINFER_ATTR_GRAPH && at->g &&
                (st = add_captures(g, nd, at->g, errctx)) != MINFER_OK)
                return st;
            for (size_t k = 0; at->type == MINFER_ATTR_GRAPHS && at->graphs && k < at->count; k++)
                if (at->graphs[k] && (st = add_captures(g, nd, at->graphs[k], errctx)) != MINFER_OK)
                    return st;
        }
    }

    /* Pass 2: producers. */
    for (size_t v = 0; v < g->n_values; v++)
        g->values[v].producer = -1;
    for (size_t i = 0; i < n; i++) {
        mf_node *nd = &g->nodes[i];
        for (size_t o = 0; o < nd->n_outputs; o++) {
            int vi = nd->outputs[o];
            if (vi < 0)
                continue;
            if ((size_t)vi >= g->n_values)
                return mf_error(MINFER_ERR_MODEL, "%s: node %s output %zu is out of range",
                                errctx, node_label(nd, i, lbl, sizeof lbl), o);
            mf_value *val = &g->values[vi];
            if (val->producer >= 0) {
                char other[256];
                return mf_error(MINFER_ERR_MODEL,
                                "%s: value '%s' is produced by two nodes, %s (%s) and %s (%s)",
                                errctx, val->name,
                                node_label(&g->nodes[val->producer], (size_t)val->producer, other,
                                           sizeof other),
                                g->nodes[val->producer].op_type,
                                node_label(nd, i, lbl, sizeof lbl), nd->op_type);
            }
            if (val->initializer || val->is_input)
                return mf_error(MINFER_ERR_MODEL,
                                "%s: node %s (%s) writes '%s', which is a graph %s", errctx,
                                node_label(nd, i, lbl, sizeof lbl), nd->op_type, val->name,
                                val->initializer ? "initializer" : "input");
            val->producer = (int)i;
        }
    }

    /* Pass 3: every value read has a source. */
    for (size_t i = 0; i < n; i++) {
        mf_node *nd = &g->nodes[i];
        for (size_t k = 0; k < nd->n_inputs; k++) {
            int vi = nd->inputs[k];
            if (vi < 0)
                continue;
            if ((size_t)vi >= g->n_values)
                return mf_error(MINFER_ERR_MODEL, "%s: node %s input %zu is out of range",
                                errctx, node_label(nd, i, lbl, sizeof lbl), k);
            mf_value *val = &g->values[vi];
            if (val->producer < 0 && !val->is_input && !val->initializer &&
                !outer_scope_has(g, val->name))
                return mf_error(MINFER_ERR_MODEL,
                                "%s: node %s (%s) input %zu '%s' is not produced by any node "
                                "and is not a graph input or initializer",
                                errctx, node_label(nd, i, lbl, sizeof lbl), nd->op_type, k,
                                val->name);
        }
    }
    for (size_t k = 0; k < g->n_outputs; k++) {
        mf_value *val = &g->values[g->outputs[k]];
        if (val->producer < 0 && !val->is_input && !val->initializer &&
            !outer_scope_has(g, val->name))
            return mf_error(MINFER_ERR_MODEL,
                            "%s: graph output '%s' is not produced by any node and is not a "
                            "graph input or initializer",
                            errctx, val->name);
    }

    /* Pass 4: topological order. Edges go producer -> consumer; a node that
     * reads one value twice counts the edge twice on both sides. */
    indeg = mf_calloc(n + 1, sizeof *indeg);
    queue = mf_malloc((n + 1) * sizeof *queue);
    order = mf_malloc((n + 1) * sizeof *order);
    succ_start = mf_calloc(n + 2, sizeof *succ_start);
    size_t n_edges = 0;
    for (size_t i = 0; i < n; i++)
        n_edges += g->nodes[i].n_inputs;
    succ = mf_malloc((n_edges + 1) * sizeof *succ);
    if (!indeg || !queue || !order || !succ_start || !succ) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory sorting %zu nodes", errctx, n);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < g->nodes[i].n_inputs; k++) {
            int vi = g->nodes[i].inputs[k];
            if (vi >= 0 && g->values[vi].producer >= 0) {
                succ_start[g->values[vi].producer + 1]++;
                indeg[i]++;
            }
        }
    for (size_t i = 0; i < n; i++)
        succ_start[i + 1] += succ_start[i];
    {
        int *fill = mf_calloc(n + 1, sizeof *fill);
        if (!fill) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory sorting %zu nodes", errctx, n);
            goto done;
        }
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < g->nodes[i].n_inputs; k++) {
                int vi = g->nodes[i].inputs[k];
                if (vi >= 0 && g->values[vi].producer >= 0) {
                    int p = g->values[vi].producer;
                    succ[succ_start[p] + fill[p]++] = (int)i;
                }
            }
        free(fill);
    }
    /* A min-heap on node index would keep file order exactly; a FIFO seeded
     * in file order is close enough and linear. */
    size_t head = 0, tail = 0, done_count = 0;
    for (size_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            queue[tail++] = (int)i;
    while (head < tail) {
        int u = queue[head++];
        order[done_count++] = u;
        for (int e = succ_start[u]; e < succ_start[u + 1]; e++)
            if (--indeg[succ[e]] == 0)
                queue[tail++] = succ[e];
    }
    if (done_count != n) {
        size_t bad = 0;
        while (bad < n && indeg[bad] == 0)
            bad++;
        st = mf_error(MINFER_ERR_MODEL, "%s: the graph has a cycle through node %s (%s)", errctx,
                      node_label(&g->nodes[bad], bad, lbl, sizeof lbl), g->nodes[bad].op_type);
        goto done;
    }
    free(g->order);
    g->order = order;
    order = NULL;
done:
    free(indeg);
    free(queue);
    free(order);
    free(succ_start);
    free(succ);
    return st;
}

const mf_attr *mf_node_attr(const mf_node *n, const char *name) {
    for (size_t i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

static const char *attr_type_name(int t) {
    static const char *const names[] = {"undefined", "float",   "int",     "string",
                                        "tensor",    "graph",   "floats",  "ints",
                                        "strings",   "tensors", "graphs",  "sparse tensor",
                                        "sparse tensors", "type proto"};
    return t >= 0 && t < (int)(sizeof names / sizeof *names) ? names[t] : "unknown";
}

void mf_attr_mismatch(const mf_attr *a, int want) {
    int none = 0;
    /* The readers hold the model const; the note is the one field they
     * write, atomically (concurrent runs prepare nodes too). */
    atomic_compare_exchange_strong(&((mf_attr *)a)->misread, &none, want ? want : -1);
}

/* The message for attribute a of node n read as type want. */
static void mismatch_msg(const mf_node *n, const mf_attr *a, int want, char *buf, size_t size) {
    snprintf(buf, size,
             "node '%s' (op %s): attribute '%s' must be of type %s, but the model gives %s",
             n->name ? n->name : "", n->op_type ? n->op_type : "?", a->name ? a->name : "?",
             attr_type_name(want), attr_type_name(a->type));
}

void mf_attr_mismatch_keep(mf_graph *g, const mf_node *n) {
    for (size_t k = 0; !g->misread_kept[0] && k < n->n_attrs; k++) {
        int want = atomic_load(&n->attrs[k].misread);
        if (want)
            mismatch_msg(n, &n->attrs[k], want, g->misread_kept, sizeof g->misread_kept);
    }
}

/* Clears the notes of g and of the graphs its attributes hold; the first
 * (kept, then in node order) goes to buf when buf[0] is still "". */
static void take_notes(mf_graph *g, char *buf, size_t size, int depth) {
    if (!g || depth > 64)
        return;
    if (buf && !buf[0] && g->misread_kept[0])
        snprintf(buf, size, "%s", g->misread_kept);
    g->misread_kept[0] = '\0';
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        for (size_t k = 0; k < n->n_attrs; k++) {
            mf_attr *a = &n->attrs[k];
            int want = atomic_exchange(&a->misread, 0);
            if (want && buf && !buf[0])
                mismatch_msg(n, a, want, buf, size);
            if (a->type == MINFER_ATTR_GRAPH)
                take_notes(a->g, buf, size, depth + 1);
            for (size_t j = 0; a->type == MINFER_ATTR_GRAPHS && j < a->count; j++)
                take_notes(a->graphs[j], buf, size, depth + 1);
        }
    }
}

void mf_attr_mismatch_clear(mf_graph *g) { take_notes(g, NULL, 0, 0); }

minfer_status mf_attr_mismatch_take(mf_graph *g, const char *errctx) {
    char msg[448] = "";
    take_notes(g, msg, sizeof msg, 0);
    if (!msg[0])
        return MINFER_OK;
    return mf_error(MINFER_ERR_TYPE, "%s: %s", errctx ? errctx : "", msg);
}

/* n's attribute name if it has type `type`; another type is noted. */
static const mf_attr *typed_attr(const mf_node *n, const char *name, int type) {
    const mf_attr *a = mf_node_attr(n, name);
    if (a && a->type != type) {
        mf_attr_mismatch(a, type);
        return NULL;
    }
    return a;
}

int64_t mf_attr_int(const mf_node *n, const char *name, int64_t def) {
    const mf_attr *a = typed_attr(n, name, MINFER_ATTR_INT);
    return a ? a->i : def;
}

float mf_attr_float(const mf_node *n, const char *name, float def) {
    const mf_attr *a = typed_attr(n, name, MINFER_ATTR_FLOAT);
    return a ? a->f : def;
}

const char *mf_attr_string(const mf_node *n, const char *name, const char *def) {
    const mf_attr *a = typed_attr(n, name, MINFER_ATTR_STRING);
    return a ? a->s : def;
}

size_t mf_attr_ints(const mf_node *n, const char *name, const int64_t **out) {
    const mf_attr *a = typed_attr(n, name, MINFER_ATTR_INTS);
    if (!a) {
        *out = NULL;
        return 0;
    }
    *out = a->ints;
    return a->count;
}

