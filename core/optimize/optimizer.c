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
 * (see mf_vinfo in optimizer.h), recomputed lazily after an edit; the
 * small evaluations the probes make are remembered across recomputations
 * (see "the analysis' working memory" below). An allocation that fails
 * anywhere, the analysis included, fails the optimization with NOMEM.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/optimizer.h"
#include "shapes/shape_infer.h"

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
        for (size_t k = 0; !dead(o, i) && k < g->nodes[i].n_inputs; k++)
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
        if (dead(o, i))
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
        if (dead(o, i))
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
    stale(o);
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
    stale(o);
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
    stale(o);
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
    stale(o);
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

/* ---- the analysis' working memory ------------------------------------------
 *
 * The analysis is recomputed after every edit a later pass asks about (about
 * a hundred times for a transformer), and each time it evaluates the same
 * small shape computations again. So what it needs lives for the whole of
 * mf_optimize: the per-value probe results and the topological order
 * (grown, never shrunk), a scratch graph of one node through which a probe
 * evaluates a node, and a memo of every evaluation, keyed by the node's op,
 * opset and attributes and its inputs' types, shapes and contents. A
 * recomputation then evaluates only what an edit changed, and allocates
 * nothing else. Evaluation is deterministic (random ops are never
 * evaluated), so the memo changes no result; a failure for lack of memory
 * is not remembered.
 */

#define MEMO_MAX_KEY 65536 /* bytes; an evaluation with a longer key is not memoized */

typedef struct probe_val {
    minfer_tensor_view view; /* data set when the contents are known */
    minfer_tensor *owned;    /* an evaluation the memo could not keep */
    int64_t shape[MINFER_MAX_RANK]; /* a Shape's result, when view.data points here */
} probe_val;

/* One evaluation: its outputs (owned), or a failure (ok == 0). */
typedef struct memo_entry {
    uint64_t hash;
    size_t key_len, n_outputs;
    int ok;
    minfer_tensor **outs;  /* n_outputs, in the same allocation */
    unsigned char *key;    /* key_len bytes, in the same allocation */
} memo_entry;

struct mf_probe_state {
    probe_val *pv[3];   /* per value, per probe run */
    size_t cap_values;  /* of pv[] and o->info */
    int *order, *indeg; /* per node */
    size_t cap_nodes;
    unsigned char *key; /* the key being built */
    size_t key_len, cap_key;
    int key_ok;         /* 0: too long (or no memory) to memoize */
    int nomem;          /* the key could not grow */
    memo_entry **memo;  /* open addressing on hash */
    size_t memo_cap, memo_n;
    mf_graph *scratch;  /* one node, borrowing the evaluated node's op and attributes */
    minfer_tensor scratch_in[MAX_IO]; /* its inputs, borrowing the probe's views */
};

static void key_put(mf_probe_state *ps, const void *src, size_t n) {
    if (!ps->key_ok)
        return;
    if (n > MEMO_MAX_KEY - ps->key_len) {
        ps->key_ok = 0;
        return;
    }
    if (ps->key_len + n > ps->cap_key) {
        size_t cap = ps->cap_key ? ps->cap_key : 1024;
        while (cap < ps->key_len + n)
            cap *= 2;
        unsigned char *k = mf_realloc(ps->key, cap);
        if (!k) {
            ps->key_ok = 0;
            ps->nomem = 1;
            return;
        }
        ps->key = k;
        ps->cap_key = cap;
    }
    if (n)
        memcpy(ps->key + ps->key_len, src, n);
    ps->key_len += n;
}

static void key_int(mf_probe_state *ps, int64_t v) { key_put(ps, &v, sizeof v); }

static void key_bytes(mf_probe_state *ps, const void *p, size_t n) {
    key_int(ps, p ? (int64_t)n : -1);
    if (p)
        key_put(ps, p, n);
}

static void key_str(mf_probe_state *ps, const char *s) { key_bytes(ps, s, s ? strlen(s) : 0); }

/* A tensor's type, shape and contents (a STRING tensor's strings, not its
 * pointers). */
static void key_view(mf_probe_state *ps, const minfer_tensor_view *v) {
    if (v->kind != MINFER_VALUE_TENSOR)
        ps->key_ok = 0; /* a sequence's items are not in its view */
    key_int(ps, v->kind);
    key_int(ps, v->dtype);
    key_int(ps, v->rank);
    for (int d = 0; d < v->rank && d < MINFER_MAX_RANK; d++)
        key_int(ps, v->dims[d]);
    key_int(ps, (int64_t)v->layout);
    const char *p = v->data ? (const char *)v->data + v->offset : NULL;
    if (p && v->dtype == MINFER_DTYPE_STRING) {
        const char *const *s = (const char *const *)(const void *)p;
        key_int(ps, (int64_t)v->nbytes);
        for (size_t i = 0; i < v->nbytes / sizeof(char *); i++)
            key_str(ps, s[i] ? s[i] : "");
    } else {
        key_bytes(ps, p, v->nbytes);
    }
}

static void key_attr(mf_probe_state *ps, const mf_attr *a) {
    uint32_t fbits;
    memcpy(&fbits, &a->f, sizeof fbits);
    key_str(ps, a->name);
    key_int(ps, a->type);
    key_int(ps, fbits);
    key_int(ps, a->i);
    key_bytes(ps, a->s, a->s ? a->s_len : 0);
    key_int(ps, (int64_t)a->count);
    key_bytes(ps, a->floats, a->floats ? a->count * sizeof *a->floats : 0);
    key_bytes(ps, a->ints, a->ints ? a->count * sizeof *a->ints : 0);
    key_int(ps, a->strings != NULL);
    for (size_t i = 0; a->strings && i < a->count; i++)
        key_str(ps, a->strings[i]);
    key_int(ps, a->t != NULL);
    if (a->t)
        key_view(ps, &a->t->view);
    key_int(ps, a->tensors != NULL);
    for (size_t i = 0; a->tensors && i < a->count; i++) {
        key_int(ps, a->tensors[i] != NULL);
        if (a->tensors[i])
            key_view(ps, &a->tensors[i]->view);
    }
}

/* Everything eval_scratch hands the evaluator: the graph's opsets, the
 * node's op, opset, attributes and output slots, and its inputs. (Nodes
 * with subgraphs are never evaluated.) */
static void key_node(mf_probe_state *ps, const mf_graph *g, const mf_node *n,
                     const minfer_tensor *in) {
    ps->key_len = 0;
    ps->key_ok = 1;
    key_int(ps, (int64_t)g->n_opsets);
    for (size_t i = 0; i < g->n_opsets; i++) {
        key_str(ps, g->opsets[i].domain ? g->opsets[i].domain : "");
        key_int(ps, g->opsets[i].version);
    }
    key_str(ps, n->op_type);
    key_str(ps, n->domain);
    key_int(ps, n->opset);
    key_int(ps, (int64_t)n->n_outputs);
    for (size_t k = 0; k < n->n_outputs; k++)
        key_int(ps, n->outputs[k] >= 0);
    key_int(ps, (int64_t)n->n_attrs);
    for (size_t a = 0; a < n->n_attrs; a++)
        key_attr(ps, &n->attrs[a]);
    key_int(ps, (int64_t)n->n_inputs);
    for (size_t k = 0; k < n->n_inputs; k++) {
        key_int(ps, n->inputs[k] >= 0);
        if (n->inputs[k] >= 0)
            key_view(ps, &in[k].view);
    }
}

static uint64_t key_hash(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603u; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u;
    return h;
}

static memo_entry *memo_find(const mf_probe_state *ps, uint64_t h) {
    if (!ps->memo_cap)
        return NULL;
    for (size_t i = h & (ps->memo_cap - 1);; i = (i + 1) & (ps->memo_cap - 1)) {
        memo_entry *e = ps->memo[i];
        if (!e)
            return NULL;
        if (e->hash == h && e->key_len == ps->key_len && memcmp(e->key, ps->key, e->key_len) == 0)
            return e;
    }
}

static void memo_place(memo_entry **tab, size_t cap, memo_entry *e) {
    size_t i = e->hash & (cap - 1);
    while (tab[i])
        i = (i + 1) & (cap - 1);
    tab[i] = e;
}

/* Remembers the current key's evaluation: outs (taken, n of them) or, when
 * outs is NULL, a failure. NULL (and nothing taken) when out of memory. */
static memo_entry *memo_add(mf_probe_state *ps, uint64_t h, size_t n, minfer_tensor **outs) {
    if ((ps->memo_n + 1) * 2 > ps->memo_cap) {
        size_t cap = ps->memo_cap ? ps->memo_cap * 2 : 256;
        memo_entry **tab = mf_calloc(cap, sizeof *tab);
        if (!tab)
            return NULL;
        for (size_t i = 0; i < ps->memo_cap; i++)
            if (ps->memo[i])
                memo_place(tab, cap, ps->memo[i]);
        free(ps->memo);
        ps->memo = tab;
        ps->memo_cap = cap;
    }
    memo_entry *e = mf_malloc(sizeof *e + n * sizeof *e->outs + ps->key_len);
    if (!e)
        return NULL;
    e->hash = h;
    e->key_len = ps->key_len;
    e->n_outputs = outs ? n : 0;
    e->ok = outs != NULL;
    e->outs = (minfer_tensor **)(void *)(e + 1);
    e->key = (unsigned char *)(e->outs + n);
    memcpy(e->key, ps->key, ps->key_len);
    for (size_t k = 0; k < e->n_outputs; k++)
        e->outs[k] = outs[k];
    memo_place(ps->memo, ps->memo_cap, e);
    ps->memo_n++;
    return e;
}

/* The scratch graph's node: borrowed fields cleared, nothing referenced. */
static void scratch_release(mf_probe_state *ps) {
    mf_graph *s = ps->scratch;
    if (!s)
        return;
    if (s->n_nodes) {
        mf_node *sn = &s->nodes[0];
        sn->op_type = sn->domain = sn->name = NULL;
        sn->attrs = NULL;
        sn->n_attrs = 0;
        sn->n_inputs = sn->n_outputs = 0;
    }
    for (size_t v = 0; v < s->n_values; v++)
        s->values[v].initializer = NULL;
}

static void probe_state_free(mf_probe_state *ps) {
    if (!ps)
        return;
    for (int r = 0; r < 3; r++)
        free(ps->pv[r]);
    free(ps->order);
    free(ps->indeg);
    free(ps->key);
    for (size_t i = 0; i < ps->memo_cap; i++) {
        memo_entry *e = ps->memo[i];
        if (!e)
            continue;
        for (size_t k = 0; k < e->n_outputs; k++)
            minfer_tensor_free(e->outs[k]);
        free(e);
    }
    free(ps->memo);
    scratch_release(ps);
    mf_graph_free(ps->scratch);
    free(ps);
}

/* The scratch graph with a node that has room for MAX_IO inputs and
 * outputs, and the graph's opsets (which an edit may add to). */
static minfer_status scratch_prepare(mf_opt *o) {
    mf_probe_state *ps = o->probe;
    if (!ps->scratch && !(ps->scratch = mf_graph_new()))
        return oom(o);
    mf_graph *s = ps->scratch;
    if (!s->n_nodes && mf_graph_add_node(s) < 0)
        return oom(o);
    mf_node *sn = &s->nodes[0];
    if ((!sn->inputs && !(sn->inputs = mf_malloc(MAX_IO * sizeof *sn->inputs))) ||
        (!sn->outputs && !(sn->outputs = mf_malloc(MAX_IO * sizeof *sn->outputs))))
        return oom(o);
    for (size_t i = 0; i < o->g->n_opsets; i++) {
        const char *d = o->g->opsets[i].domain ? o->g->opsets[i].domain : "";
        size_t j = 0;
        while (j < s->n_opsets && strcmp(s->opsets[j].domain, d) != 0)
            j++;
        if (j < s->n_opsets)
            s->opsets[j].version = o->g->opsets[i].version;
        else if (add_opset(s, d, o->g->opsets[i].version) != MINFER_OK)
            return oom(o);
    }
    return MINFER_OK;
}

/* The evaluator's view of probe input k: what minfer_tensor_wrap would make
 * of it. 0 when it cannot be wrapped (no storage for a non-empty tensor). */
static int scratch_input(minfer_tensor *t, const minfer_tensor_view *in) {
    int64_t numel;
    size_t nbytes;
    memset(t, 0, sizeof *t);
    if (in->rank < 0 || in->rank > MINFER_MAX_RANK ||
        mf_numel(in->dims, in->rank, &numel) != MINFER_OK ||
        mf_nbytes(in->dtype, numel, &nbytes) != MINFER_OK || (!in->data && nbytes) ||
        in->nbytes < nbytes) {
        mf_error_clear();
        return 0;
    }
    t->view.kind = MINFER_VALUE_TENSOR;
    t->view.dtype = in->dtype;
    t->view.rank = in->rank;
    memcpy(t->view.dims, in->dims, (size_t)in->rank * sizeof *in->dims);
    /* A zero-element input may have no storage at all. */
    t->view.data = in->data ? (char *)in->data + in->offset : NULL;
    t->view.nbytes = nbytes;
    return 1;
}

/* Evaluates node n on the scratch graph's inputs (ps->scratch_in, set for
 * every present input) through ctx->eval_node. */
static minfer_status eval_scratch(mf_opt *o, const mf_node *n, minfer_tensor **outs) {
    mf_probe_state *ps = o->probe;
    char name[32];
    minfer_status st = scratch_prepare(o);
    if (st != MINFER_OK)
        return st;
    mf_graph *s = ps->scratch;
    for (size_t k = 0; k < n->n_inputs; k++) {
        s->nodes[0].inputs[k] = -1;
        if (n->inputs[k] < 0)
            continue;
        snprintf(name, sizeof name, "i%zu", k);
        int vi = mf_graph_intern(s, name);
        if (vi < 0) {
            st = oom(o);
            goto done;
        }
        s->values[vi].initializer = &ps->scratch_in[k];
        s->values[vi].dtype = ps->scratch_in[k].view.dtype;
        s->nodes[0].inputs[k] = vi;
    }
    for (size_t k = 0; k < n->n_outputs; k++) {
        s->nodes[0].outputs[k] = -1;
        if (n->outputs[k] < 0)
            continue;
        snprintf(name, sizeof name, "o%zu", k);
        int vi = mf_graph_intern(s, name);
        if (vi < 0) {
            st = oom(o);
            goto done;
        }
        s->nodes[0].outputs[k] = vi;
        s->values[vi].producer = 0;
    }
    mf_node *sn = &s->nodes[0];
    sn->op_type = n->op_type;
    sn->domain = n->domain;
    sn->name = n->name;
    sn->opset = n->opset;
    sn->attrs = n->attrs;
    sn->n_attrs = n->n_attrs;
    sn->n_inputs = n->n_inputs;
    sn->n_outputs = n->n_outputs;
    st = o->ctx->eval_node(o->ctx->user, s, 0, outs);
    if (o->ctx->report)
        o->ctx->report->evaluations++;
done:
    scratch_release(ps);
    return st;
}

/* A probe's evaluation of node n (inputs in, every one known): its
 * outputs' contents into vals, from the memo when it was made before. */
static void probe_eval(mf_opt *o, const mf_node *n, const minfer_tensor_view *in,
                       probe_val *vals) {
    mf_probe_state *ps = o->probe;
    minfer_tensor *res[MAX_IO] = {0};
    for (size_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && !scratch_input(&ps->scratch_in[k], &in[k]))
            return; /* as the evaluator would fail */
    key_node(ps, o->g, n, ps->scratch_in);
    if (ps->nomem) {
        o->nomem = 1;
        return;
    }
    uint64_t h = ps->key_ok ? key_hash(ps->key, ps->key_len) : 0;
    memo_entry *e = ps->key_ok ? memo_find(ps, h) : NULL;
    if (!e) {
        /* A failure is remembered (the node is not evaluated again), except
         * for lack of memory, which fails the pass. */
        minfer_status st = eval_scratch(o, n, res);
        mf_error_clear();
        if (st == MINFER_OK && ps->key_ok && !(e = memo_add(ps, h, n->n_outputs, res)))
            st = MINFER_ERR_NOMEM;
        if (st != MINFER_OK) {
            for (size_t k = 0; k < n->n_outputs; k++)
                minfer_tensor_free(res[k]);
            if (st == MINFER_ERR_NOMEM || (ps->key_ok && !memo_add(ps, h, n->n_outputs, NULL)))
                o->nomem = 1;
            return;
        }
        if (!e) { /* too long to remember: the probe run keeps it */
            for (size_t k = 0; k < n->n_outputs; k++) {
                if (n->outputs[k] < 0 || !res[k]) {
                    minfer_tensor_free(res[k]);
                    continue;
                }
                probe_val *pv = &vals[n->outputs[k]];
                pv->owned = res[k];
                pv->view = res[k]->view;
            }
            return;
        }
    }
    for (size_t k = 0; e->ok && k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && e->outs[k])
            vals[n->outputs[k]].view = e->outs[k]->view;
}

/* Topological order of the live nodes (Kahn's algorithm on the index) into
 * ps->order: the count. */
static size_t live_order(mf_opt *o) {
    const mf_graph *g = o->g;
    mf_probe_state *ps = o->probe;
    int *indeg = ps->indeg, *q = ps->order;
    size_t n = g->n_nodes, head = 0, tail = 0;
    memset(indeg, 0, (n + 1) * sizeof *indeg);
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
    return tail;
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
    if (o->ctx->report)
        o->ctx->report->analysis_nodes += n_order;
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
            if (ok) { /* as a new INT64 tensor of cnt elements, stored in pv */
                for (int64_t d = start; d < end; d++)
                    pv->shape[d - start] = in[0].dims[d];
                memset(&pv->view, 0, sizeof pv->view);
                pv->view.kind = MINFER_VALUE_TENSOR;
                pv->view.dtype = MINFER_DTYPE_INT64;
                pv->view.rank = 1;
                pv->view.dims[0] = cnt;
                pv->view.data = pv->shape;
                pv->view.nbytes = (size_t)cnt * sizeof pv->shape[0];
            }
            continue;
        }
        if (!all_known || !small || !o->ctx->eval_node || has_subgraph(n) || is_random_op(n) ||
            (n->n_inputs == 0 && strcmp(n->op_type, "Constant") != 0))
            continue;
        probe_eval(o, n, in, vals);
    }
}

/* Grows the analysis' per-value and per-node buffers (and o->info). */
static minfer_status probe_reserve(mf_opt *o) {
    mf_probe_state *ps = o->probe;
    size_t nv = o->g->n_values + 1, nn = o->g->n_nodes + 1;
    if (nv > ps->cap_values) {
        size_t cap = ps->cap_values ? ps->cap_values : 64;
        while (cap < nv)
            cap *= 2;
        /* Each array keeps what it got; the capacity counts once all have it. */
        for (int r = 0; r < 3; r++) {
            probe_val *p = mf_realloc(ps->pv[r], cap * sizeof *p);
            if (!p)
                return oom(o);
            ps->pv[r] = p;
        }
        mf_vinfo *info = mf_realloc(o->info, cap * sizeof *info);
        if (!info)
            return oom(o);
        o->info = info;
        ps->cap_values = cap;
    }
    if (nn > ps->cap_nodes) {
        size_t cap = ps->cap_nodes ? ps->cap_nodes : 64;
        while (cap < nn)
            cap *= 2;
        int *q = mf_realloc(ps->order, cap * sizeof *q);
        if (!q)
            return oom(o);
        ps->order = q;
        int *d = mf_realloc(ps->indeg, cap * sizeof *d);
        if (!d)
            return oom(o);
        ps->indeg = d;
        ps->cap_nodes = cap;
    }
    return MINFER_OK;
}

static minfer_status compute_info(mf_opt *o) {
    mf_graph *g = o->g;
    size_t nv = g->n_values;
    minfer_status st = MINFER_OK;
    if (o->n_index_values != nv && (st = mf_opt_reindex(o)) != MINFER_OK)
        return st;
    if (!o->probe && !(o->probe = mf_calloc(1, sizeof *o->probe)))
        return oom(o);
    /* Unknown until complete. */
    o->n_info = 0;
    if ((st = probe_reserve(o)) != MINFER_OK)
        return st;
    mf_probe_state *ps = o->probe;
    mf_vinfo *info = o->info;
    size_t n_order = live_order(o);
    for (int r = 0; r < 3; r++)
        probe_run(o, r, ps->order, n_order, ps->pv[r]);
    for (size_t v = 0; v < nv; v++) {
        const minfer_tensor_view *a = &ps->pv[0][v].view, *b = &ps->pv[1][v].view,
                                 *x = &ps->pv[2][v].view;
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
    o->n_info = nv;
    o->info_dirty = 0;
    for (int r = 0; r < 3; r++)
        for (size_t v = 0; v < nv; v++) {
            minfer_tensor_free(ps->pv[r][v].owned);
            ps->pv[r][v].owned = NULL;
        }
    return st;
}

const mf_vinfo *mf_opt_info(mf_opt *o, int v) {
    static const mf_vinfo unknown = {0, -1, {0}, {0}, {0}};
    minfer_status st;
    int fresh = !o->info_dirty && (o->n_info == o->g->n_values || (o->info_keep && o->n_info));
    if (!fresh && (st = compute_info(o)) != MINFER_OK) {
        if (st == MINFER_ERR_NOMEM)
            o->nomem = 1;
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

static minfer_status run_passes(mf_opt *o, const pass_entry *passes, size_t n, int keep_info,
                                size_t *total) {
    for (size_t p = 0; p < n; p++) {
        size_t fired = 0;
        o->info_keep = keep_info;
        minfer_status st = passes[p].fn(o, &fired);
        o->info_keep = 0;
        if (st == MINFER_OK && o->nomem)
            st = mf_error(MINFER_ERR_NOMEM, "out of memory analysing shapes");
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
        local.report->analysis_nodes = local.report->evaluations = 0;
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
        if ((st = run_passes(&o, basic_passes, sizeof basic_passes / sizeof basic_passes[0], 0,
                             &total)) != MINFER_OK)
            goto done;
        if (!total)
            break;
    }
    if (local.level >= 2) {
        size_t total = 0;
        if ((st = run_passes(&o, fusion_passes, sizeof fusion_passes / sizeof fusion_passes[0], 1,
                             &total)) != MINFER_OK ||
            (st = run_passes(&o, basic_passes, sizeof basic_passes / sizeof basic_passes[0], 0,
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
    free(o.fill);
    free(o.info);
    probe_state_free(o.probe);
    return st;
}
