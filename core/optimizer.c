/*
 * The pass manager and the graph-editing helpers the passes share.
 *
 * mf_optimize runs, for level >= 1:
 *  1. the basic passes in order (Constant nodes to initializers, Identity
 *     and Dropout removal, dead nodes, shape subgraphs, constant folding,
 *     Reshape chains, Cast and Transpose pairs, BatchNormalization
 *     folding), repeated until a round changes nothing (at most 8 rounds);
 *  2. for level >= 2, the fusions (LayerNorm, Gelu, Attention, MatMul,
 *     Gemm, Conv), then the basic passes once more;
 *  3. unreferenced initializers are dropped and the graph is finalized.
 *
 * A pass marks the nodes it removes dead and edits the rest in place: a
 * fusion turns the last node of its pattern into the fused node, so the
 * pattern's output value (and its name) stays. After each pass the dead
 * nodes are swept, the graph is finalized again (a pass that broke it is
 * an error naming the pass), and the use index is rebuilt.
 *
 * Values' types and shapes come from two probe runs of shape inference
 * (see mf_vinfo in optimizer.h), recomputed lazily after an edit.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "optimizer.h"
#include "shape_infer.h"

#define MAX_ROUNDS 8
#define DEFAULT_FOLD_BYTES ((uint64_t)1 << 20)
#define PROBE_EVAL_MAX_ELEMS 64 /* shape arithmetic the analysis evaluates */
#define MAX_IO 64

typedef struct pass_entry {
    const char *name;
    mf_pass_fn fn;
} pass_entry;

static const pass_entry basic_passes[] = {
    {"constant_nodes", mf_pass_constant_nodes},
    {"identity_removal", mf_pass_identity},
    {"dead_nodes", mf_pass_dead_nodes},
    {"fold_shapes", mf_pass_fold_shapes},
    {"fold_constants", mf_pass_fold_constants},
    {"reshape_chains", mf_pass_reshape_chains},
    {"cast_pairs", mf_pass_cast_pairs},
    {"transpose_pairs", mf_pass_transpose_pairs},
    {"fold_batchnorm", mf_pass_fold_batchnorm},
    {"dead_nodes", mf_pass_dead_nodes},
};

static const pass_entry fusion_passes[] = {
    {"fuse_layernorm", mf_pass_fuse_layernorm},
    {"fuse_gelu", mf_pass_fuse_gelu},
    {"fuse_attention", mf_pass_fuse_attention},
    {"fuse_matmul", mf_pass_fuse_matmul},
    {"fuse_gemm", mf_pass_fuse_gemm},
    {"fuse_conv", mf_pass_fuse_conv},
};

/* ---- index ------------------------------------------------------------- */

static int dead(const mf_opt *o, size_t i) { return i < o->cap_dead && o->dead[i]; }

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

minfer_status mf_opt_reindex(mf_opt *o) {
    mf_graph *g = o->g;
    size_t nv = g->n_values;
    free(o->prod);
    free(o->cons_start);
    free(o->cons);
    free(o->pinned);
    o->cons = NULL;
    o->prod = mf_malloc((nv + 1) * sizeof *o->prod);
    o->cons_start = mf_calloc(nv + 2, sizeof *o->cons_start);
    o->pinned = mf_calloc(nv + 1, 1);
    if (g->n_nodes > o->cap_dead) {
        unsigned char *d = mf_realloc(o->dead, g->n_nodes);
        if (!d)
            return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
        memset(d + o->cap_dead, 0, g->n_nodes - o->cap_dead);
        o->dead = d;
        o->cap_dead = g->n_nodes;
    }
    if (!o->prod || !o->cons_start || !o->pinned)
        return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
    size_t n_edges = 0;
    for (size_t v = 0; v < nv; v++)
        o->prod[v] = -1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (dead(o, i))
            continue;
        const mf_node *n = &g->nodes[i];
        for (size_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0)
                o->prod[n->outputs[k]] = (int)i;
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0) {
                o->cons_start[n->inputs[k] + 1]++;
                n_edges++;
            }
    }
    for (size_t v = 0; v < nv; v++)
        o->cons_start[v + 1] += o->cons_start[v];
    o->cons = mf_malloc((n_edges + 1) * sizeof *o->cons);
    int *fill = mf_calloc(nv + 1, sizeof *fill);
    if (!o->cons || !fill) {
        free(fill);
        return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (dead(o, i))
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
    free(fill);
    for (size_t k = 0; k < g->n_outputs; k++)
        o->pinned[g->outputs[k]] = 1;
    o->n_index_values = nv;
    o->info_dirty = 1;
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
    o->info_dirty = 1;
}

void mf_opt_replace_uses(mf_opt *o, int from, int to) {
    mf_graph *g = o->g;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (dead(o, i))
            continue;
        mf_node *n = &g->nodes[i];
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == from)
                n->inputs[k] = to;
    }
    o->info_dirty = 1;
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
static int64_t numel_of(const minfer_tensor_view *t) {
    int64_t n;
    if (t->rank < 0 || mf_numel(t->dims, t->rank, &n) != MINFER_OK)
        return INT64_MAX;
    return n;
}

int mf_opt_scalar(const mf_opt *o, int v, double *out) {
    const minfer_tensor *t = mf_opt_const(o, v);
    if (!t || numel_of(&t->view) != 1 || !t->view.data)
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
    int64_t n = numel_of(&t->view);
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
    o->info_dirty = 1;
    return vi;
}

static minfer_status add_opset(mf_graph *g, const char *domain, int64_t version) {
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
    if (!d || !t || (domain[0] && add_opset(o->g, domain, 1) != MINFER_OK)) {
        free(d);
        free(t);
        return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
    }
    free(n->domain);
    free(n->op_type);
    n->domain = d;
    n->op_type = t;
    n->opset = domain[0] ? 1 : mf_graph_opset(o->g, "");
    o->info_dirty = 1;
    return MINFER_OK;
}

void mf_opt_drop_attr(mf_opt *o, int i, const char *name) {
    mf_node *n = &o->g->nodes[i];
    for (size_t a = 0; a < n->n_attrs; a++)
        if (strcmp(n->attrs[a].name, name) == 0) {
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
    o->info_dirty = 1;
    return a;
}

static minfer_status oom(const mf_opt *o) {
    return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
}

minfer_status mf_opt_set_attr_int(mf_opt *o, int i, const char *name, int64_t v) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_INT);
    if (!a)
        return oom(o);
    a->i = v;
    return MINFER_OK;
}

minfer_status mf_opt_set_attr_float(mf_opt *o, int i, const char *name, float v) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_FLOAT);
    if (!a)
        return oom(o);
    a->f = v;
    return MINFER_OK;
}

minfer_status mf_opt_set_attr_string(mf_opt *o, int i, const char *name, const char *v) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_STRING);
    if (!a || !(a->s = mf_strdup(v)))
        return oom(o);
    a->s_len = strlen(v);
    return MINFER_OK;
}

minfer_status mf_opt_set_attr_floats(mf_opt *o, int i, const char *name, const float *v,
                                     size_t n) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_FLOATS);
    if (!a || !(a->floats = mf_malloc((n + 1) * sizeof *v)))
        return oom(o);
    if (n)
        memcpy(a->floats, v, n * sizeof *v);
    a->count = n;
    return MINFER_OK;
}

minfer_status mf_opt_set_attr_ints(mf_opt *o, int i, const char *name, const int64_t *v,
                                   size_t n) {
    mf_attr *a = new_attr(o, i, name, MINFER_ATTR_INTS);
    if (!a || !(a->ints = mf_malloc((n + 1) * sizeof *v)))
        return oom(o);
    if (n)
        memcpy(a->ints, v, n * sizeof *v);
    a->count = n;
    return MINFER_OK;
}

minfer_status mf_opt_set_inputs(mf_opt *o, int i, const int *inputs, size_t n) {
    mf_node *nd = &o->g->nodes[i];
    int *in = mf_malloc((n + 1) * sizeof *in);
    if (!in)
        return oom(o);
    memcpy(in, inputs, n * sizeof *in);
    free(nd->inputs);
    nd->inputs = in;
    nd->n_inputs = n;
    o->info_dirty = 1;
    return MINFER_OK;
}

/* ---- shape analysis ------------------------------------------------------ */

/* Probe size for the k-th distinct symbolic dimension in run r: odd in run
 * 0, even in run 1, so a probe never equals the same static size in both;
 * run 2 keeps it unknown. */
static int64_t probe_dim(int r, int k) {
    return r == 0 ? 5 + 2 * (k % 8) : r == 1 ? 6 + 4 * (k % 8) : -1;
}

static int is_random_op(const mf_node *n) {
    return strncmp(n->op_type, "Random", 6) == 0 || strcmp(n->op_type, "Multinomial") == 0 ||
           strcmp(n->op_type, "Bernoulli") == 0;
}

static int has_subgraph(const mf_node *n) {
    for (size_t a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].g || n->attrs[a].graphs)
            return 1;
    return 0;
}

/* Evaluates one node on the given input tensors through ctx->eval_node, on
 * a scratch graph that borrows the node's op, domain and attributes. */
static minfer_status eval_scratch(mf_opt *o, const mf_node *n, const minfer_tensor_view *in,
                                  minfer_tensor **outs) {
    mf_graph *s = mf_graph_new();
    minfer_status st = MINFER_ERR_NOMEM;
    char name[32];
    if (!s)
        return st;
    for (size_t i = 0; i < o->g->n_opsets; i++)
        if (add_opset(s, o->g->opsets[i].domain ? o->g->opsets[i].domain : "",
                      o->g->opsets[i].version) != MINFER_OK)
            goto done;
    int ni = mf_graph_add_node(s);
    if (ni < 0)
        goto done;
    mf_node *sn = &s->nodes[ni];
    sn->inputs = mf_malloc((n->n_inputs + 1) * sizeof(int));
    sn->outputs = mf_malloc((n->n_outputs + 1) * sizeof(int));
    if (!sn->inputs || !sn->outputs)
        goto done;
    sn->op_type = n->op_type;
    sn->domain = n->domain;
    sn->name = n->name;
    sn->opset = n->opset;
    sn->attrs = n->attrs;
    sn->n_attrs = n->n_attrs;
    sn->n_inputs = n->n_inputs;
    sn->n_outputs = n->n_outputs;
    for (size_t k = 0; k < n->n_inputs; k++) {
        sn->inputs[k] = -1;
        if (n->inputs[k] < 0)
            continue;
        snprintf(name, sizeof name, "i%zu", k);
        int vi = mf_graph_intern(s, name);
        /* A zero-element input may have no storage at all. */
        void *data = in[k].data ? (char *)in[k].data + in[k].offset : NULL;
        if (vi < 0 || minfer_tensor_wrap((minfer_dtype)in[k].dtype, in[k].dims,
                                         (size_t)in[k].rank, data, in[k].nbytes,
                                         &s->values[vi].initializer) != MINFER_OK)
            goto done;
        s->values[vi].dtype = in[k].dtype;
        sn->inputs[k] = vi;
    }
    for (size_t k = 0; k < n->n_outputs; k++) {
        sn->outputs[k] = -1;
        if (n->outputs[k] < 0)
            continue;
        snprintf(name, sizeof name, "o%zu", k);
        int vi = mf_graph_intern(s, name);
        if (vi < 0)
            goto done;
        sn->outputs[k] = vi;
        s->values[vi].producer = ni;
    }
    st = o->ctx->eval_node(o->ctx->user, s, ni, outs);
done:
    if (s && s->n_nodes) {
        mf_node *sn2 = &s->nodes[0];
        sn2->op_type = sn2->domain = sn2->name = NULL;
        sn2->attrs = NULL;
        sn2->n_attrs = 0;
    }
    mf_graph_free(s);
    return st;
}

typedef struct probe_val {
    minfer_tensor_view view; /* data set when the contents are known */
    minfer_tensor *owned;
} probe_val;

/* Topological order of the live nodes (Kahn's algorithm on the index). */
static int *live_order(mf_opt *o, size_t *count) {
    const mf_graph *g = o->g;
    size_t n = g->n_nodes, head = 0, tail = 0;
    int *indeg = mf_calloc(n + 1, sizeof *indeg), *q = mf_malloc((n + 1) * sizeof *q);
    if (!indeg || !q) {
        free(indeg);
        free(q);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (dead(o, i))
            continue;
        for (size_t k = 0; k < g->nodes[i].n_inputs; k++) {
            int v = g->nodes[i].inputs[k];
            if (v >= 0 && o->prod[v] >= 0)
                indeg[i]++;
        }
        if (indeg[i] == 0)
            q[tail++] = (int)i;
    }
    while (head < tail) {
        int u = q[head++];
        const mf_node *un = &g->nodes[u];
        for (size_t k = 0; k < un->n_outputs; k++) {
            int v = un->outputs[k];
            if (v < 0)
                continue;
            for (int c = o->cons_start[v]; c < o->cons_start[v + 1]; c++) {
                int cn = o->cons[c];
                if (--indeg[cn] == 0)
                    q[tail++] = cn;
            }
        }
    }
    free(indeg);
    *count = tail;
    return q;
}

/* One probe run: fills vals (n_values entries). */
static void probe_run(mf_opt *o, int run, const int *order, size_t n_order, probe_val *vals) {
    mf_graph *g = o->g;
    char err[256];
    char *names[64];
    int n_names = 0, anon = 0;
    minfer_tensor_view in[MAX_IO], out[MAX_IO];
    for (size_t v = 0; v < g->n_values; v++) {
        const mf_value *val = &g->values[v];
        probe_val *pv = &vals[v];
        memset(pv, 0, sizeof *pv);
        pv->view.rank = -1;
        if (val->initializer) {
            pv->view = val->initializer->view;
            continue;
        }
        if (!val->is_input)
            continue;
        pv->view.dtype = val->dtype;
        pv->view.rank = val->rank;
        for (int d = 0; d < val->rank; d++) {
            int64_t dim = val->dims[d];
            if (dim < 0) {
                int k = -1;
                for (int j = 0; val->dim_params[d] && j < n_names; j++)
                    if (strcmp(names[j], val->dim_params[d]) == 0)
                        k = j;
                if (k < 0 && val->dim_params[d] && n_names < 64) {
                    names[n_names] = val->dim_params[d];
                    k = n_names++;
                }
                if (k < 0)
                    k = 64 + anon++;
                dim = probe_dim(run, k);
            }
            pv->view.dims[d] = dim;
        }
    }
    for (size_t oi = 0; oi < n_order; oi++) {
        const mf_node *n = &g->nodes[order[oi]];
        if (n->n_inputs > MAX_IO || n->n_outputs > MAX_IO)
            continue;
        int all_known = 1;
        for (size_t k = 0; k < n->n_inputs; k++) {
            memset(&in[k], 0, sizeof in[k]);
            in[k].rank = -1;
            if (n->inputs[k] < 0)
                continue;
            in[k] = vals[n->inputs[k]].view;
            if (!in[k].data && !(in[k].rank >= 0 && numel_of(&in[k]) == 0))
                all_known = 0;
        }
        if (mf_infer_node(n, in, n->n_inputs, out, n->n_outputs, err, sizeof err) != MINFER_OK)
            continue; /* unknown from here; the session reports the error */
        int small = 1;
        for (size_t k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0)
                continue;
            probe_val *pv = &vals[n->outputs[k]];
            pv->view = out[k];
            pv->view.data = NULL;
            int stat = out[k].rank >= 0;
            for (int d = 0; stat && d < out[k].rank; d++)
                stat = out[k].dims[d] >= 0;
            if (!stat || numel_of(&out[k]) > PROBE_EVAL_MAX_ELEMS ||
                out[k].dtype == MINFER_DTYPE_STRING || out[k].dtype == 0)
                small = 0;
        }
        /* Shape of a static input needs no evaluator. */
        if (strcmp(n->op_type, "Shape") == 0 && !n->domain[0] && n->n_outputs == 1 &&
            n->outputs[0] >= 0 && in[0].rank >= 0 && small) {
            probe_val *pv = &vals[n->outputs[0]];
            int64_t cnt = pv->view.rank == 1 ? pv->view.dims[0] : -1;
            int64_t r = in[0].rank, start = mf_attr_int(n, "start", 0), end = mf_attr_int(n, "end", r);
            start = start < 0 ? start + r : start;
            end = end < 0 ? end + r : end;
            start = start < 0 ? 0 : start > r ? r : start;
            end = end < 0 ? 0 : end > r ? r : end;
            int ok = end - start == cnt && pv->view.dtype == MINFER_DTYPE_INT64;
            for (int64_t d = start; ok && d < end; d++)
                ok = in[0].dims[d] >= 0;
            if (ok && mf_tensor_new(MINFER_DTYPE_INT64, pv->view.dims, 1, &pv->owned) == MINFER_OK) {
                int64_t *dst = pv->owned->view.data;
                for (int64_t d = start; d < end; d++)
                    dst[d - start] = in[0].dims[d];
                pv->view = pv->owned->view;
            }
            continue;
        }
        if (!all_known || !small || !o->ctx->eval_node || has_subgraph(n) || is_random_op(n) ||
            (n->n_inputs == 0 && strcmp(n->op_type, "Constant") != 0))
            continue;
        minfer_tensor *res[MAX_IO] = {0};
        if (eval_scratch(o, n, in, res) != MINFER_OK) {
            for (size_t k = 0; k < n->n_outputs; k++)
                minfer_tensor_free(res[k]);
            mf_error_clear();
            continue;
        }
        for (size_t k = 0; k < n->n_outputs; k++) {
            if (n->outputs[k] < 0 || !res[k]) {
                minfer_tensor_free(res[k]);
                continue;
            }
            probe_val *pv = &vals[n->outputs[k]];
            pv->owned = res[k];
            pv->view = res[k]->view;
        }
    }
}

static minfer_status compute_info(mf_opt *o) {
    mf_graph *g = o->g;
    size_t nv = g->n_values, n_order = 0;
    minfer_status st = MINFER_OK;
    probe_val *pv[3] = {NULL, NULL, NULL};
    int *order = NULL;
    if (o->n_index_values != nv && (st = mf_opt_reindex(o)) != MINFER_OK)
        return st;
    mf_vinfo *info = mf_realloc(o->info, (nv + 1) * sizeof *info);
    if (!info)
        return oom(o);
    o->info = info;
    o->n_info = nv;
    order = live_order(o, &n_order);
    pv[0] = mf_calloc(nv + 1, sizeof *pv[0]);
    pv[1] = mf_calloc(nv + 1, sizeof *pv[1]);
    pv[2] = mf_calloc(nv + 1, sizeof *pv[2]);
    if (!order || !pv[0] || !pv[1] || !pv[2]) {
        st = oom(o);
        goto done;
    }
    for (int r = 0; r < 3; r++)
        probe_run(o, r, order, n_order, pv[r]);
    for (size_t v = 0; v < nv; v++) {
        const minfer_tensor_view *a = &pv[0][v].view, *b = &pv[1][v].view, *x = &pv[2][v].view;
        mf_vinfo *vi = &info[v];
        vi->dtype = a->dtype ? a->dtype : g->values[v].dtype;
        vi->rank = a->rank >= 0 && a->rank == b->rank ? a->rank : -1;
        for (int d = 0; d < MINFER_MAX_RANK; d++) {
            vi->a[d] = d < vi->rank ? a->dims[d] : -1;
            vi->b[d] = d < vi->rank ? b->dims[d] : -1;
            if (vi->a[d] < 0 || vi->b[d] < 0)
                vi->a[d] = vi->b[d] = -1;
            vi->s[d] = vi->rank >= 0 && x->rank == vi->rank && d < x->rank ? x->dims[d] : -1;
        }
    }
    o->info_dirty = 0;
done:
    for (int r = 0; r < 3; r++)
        if (pv[r]) {
            for (size_t v = 0; v < nv; v++)
                minfer_tensor_free(pv[r][v].owned);
            free(pv[r]);
        }
    free(order);
    return st;
}

const mf_vinfo *mf_opt_info(mf_opt *o, int v) {
    static const mf_vinfo unknown = {0, -1, {0}, {0}, {0}};
    if ((o->info_dirty || o->n_info != o->g->n_values) && compute_info(o) != MINFER_OK) {
        mf_error_clear();
        return &unknown;
    }
    if (v < 0 || (size_t)v >= o->n_info)
        return &unknown;
    return &o->info[v];
}

int mf_opt_same_shape(mf_opt *o, int v, int w) {
    mf_vinfo a = *mf_opt_info(o, v);
    const mf_vinfo *b = mf_opt_info(o, w);
    if (a.rank < 0 || a.rank != b->rank)
        return 0;
    for (int d = 0; d < a.rank; d++)
        if (a.a[d] < 0 || a.a[d] != b->a[d] || a.b[d] != b->b[d])
            return 0;
    return 1;
}

/* ---- the manager ---------------------------------------------------------- */

static void free_node(mf_node *n) {
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->inputs);
    free(n->outputs);
    for (size_t a = 0; a < n->n_attrs; a++)
        mf_attr_clear(&n->attrs[a]);
    free(n->attrs);
}

/* Drops dead nodes, finalizes, rebuilds the index. */
static minfer_status sweep(mf_opt *o, const char *pass) {
    mf_graph *g = o->g;
    size_t w = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (dead(o, i)) {
            free_node(&g->nodes[i]);
            continue;
        }
        g->nodes[w++] = g->nodes[i];
    }
    g->n_nodes = w;
    memset(o->dead, 0, o->cap_dead);
    minfer_status st = mf_graph_finalize(g, o->errctx);
    if (st != MINFER_OK)
        return mf_error_prefix(st, "optimizer pass %s left an invalid graph", pass);
    return mf_opt_reindex(o);
}

static void report_add(mf_opt_report *r, const char *name, size_t fired) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n_passes; i++)
        if (strcmp(r->passes[i].name, name) == 0) {
            r->passes[i].fired += fired;
            return;
        }
    if (r->n_passes < sizeof r->passes / sizeof r->passes[0]) {
        r->passes[r->n_passes].name = name;
        r->passes[r->n_passes++].fired = fired;
    }
}

static minfer_status run_passes(mf_opt *o, const pass_entry *passes, size_t n, size_t *total) {
    for (size_t p = 0; p < n; p++) {
        size_t fired = 0;
        minfer_status st = passes[p].fn(o, &fired);
        if (st != MINFER_OK)
            return mf_error_prefix(st, "%s: optimizer pass %s", o->errctx, passes[p].name);
        if ((st = sweep(o, passes[p].name)) != MINFER_OK)
            return st;
        report_add(o->ctx->report, passes[p].name, fired);
        *total += fired;
    }
    return MINFER_OK;
}

/* Frees initializers nothing reads any more (not inputs, not outputs). */
static void drop_unused_initializers(mf_opt *o) {
    mf_graph *g = o->g;
    for (size_t v = 0; v < g->n_values; v++) {
        mf_value *val = &g->values[v];
        if (!val->initializer || val->is_output || o->pinned[v] || mf_opt_nuses(o, (int)v))
            continue;
        minfer_tensor_free(val->initializer);
        val->initializer = NULL;
    }
}

minfer_status mf_optimize(mf_graph *g, const mf_opt_ctx *ctx, const char *errctx) {
    mf_opt o;
    mf_opt_ctx local;
    minfer_status st;
    if (!g || !ctx)
        return mf_error(MINFER_ERR_INVALID_ARG, "mf_optimize: NULL argument");
    if (!errctx)
        errctx = "<model>";
    local = *ctx;
    if (!local.fold_max_bytes)
        local.fold_max_bytes = DEFAULT_FOLD_BYTES;
    if (local.report) {
        local.report->n_passes = 0;
        local.report->nodes_before = local.report->nodes_after = g->n_nodes;
    }
    if (local.level < 0 || local.level > 3)
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: optimization level %d (0 to 3)", errctx,
                        local.level);
    if ((st = mf_graph_finalize(g, errctx)) != MINFER_OK || local.level == 0)
        return st;
    memset(&o, 0, sizeof o);
    o.g = g;
    o.ctx = &local;
    o.errctx = errctx;
    if ((st = mf_opt_reindex(&o)) != MINFER_OK)
        goto done;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        size_t total = 0;
        if ((st = run_passes(&o, basic_passes, sizeof basic_passes / sizeof basic_passes[0],
                             &total)) != MINFER_OK)
            goto done;
        if (!total)
            break;
    }
    if (local.level >= 2) {
        size_t total = 0;
        if ((st = run_passes(&o, fusion_passes, sizeof fusion_passes / sizeof fusion_passes[0],
                             &total)) != MINFER_OK ||
            (st = run_passes(&o, basic_passes, sizeof basic_passes / sizeof basic_passes[0],
                             &total)) != MINFER_OK)
            goto done;
    }
    drop_unused_initializers(&o);
    st = mf_graph_finalize(g, errctx);
    if (local.report)
        local.report->nodes_after = g->n_nodes;
done:
    free(o.dead);
    free(o.prod);
    free(o.cons_start);
    free(o.cons);
    free(o.pinned);
    free(o.info);
    return st;
}
