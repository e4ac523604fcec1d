/*
 * The type and shape analysis the passes ask (mf_opt_info, declared in
 * passes.h with mf_vinfo, which says what it knows and how far to trust it).
 *
 * Values' types and shapes come from three runs of shape inference over the
 * live nodes in topological order: two probe runs, with every symbolic input
 * dimension replaced by a probe size, and one that leaves them unknown. A
 * probe evaluates small integer shape arithmetic through ctx->eval_node on a
 * scratch graph of one node. The analysis is recomputed lazily after an
 * edit; the small evaluations the probes make are remembered across
 * recomputations (see "the analysis' working memory" below). An allocation
 * that fails here sets o->nomem, which fails the pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "util/internal.h"
#include "optimize/passes.h"
#include "shapes/shape_infer.h"

#define PROBE_EVAL_MAX_ELEMS 64 /* shape arithmetic the analysis evaluates */
#define MAX_IO 64

/* ---- shape analysis ------------------------------------------------------ */

/* Probe size for the k-th distinct symbolic dimension in run r: odd in run
 * 0, even in run 1, so a probe never equals the same static size in both;
 * run 2 keeps it unknown. At least 65, so a CNN's symbolic height and
 * width survive five halvings: with 5 to 34 (until stop 28) DenseNet-121's
 * feature maps reached 0 at its third block, every shape after it was
 * unknown, and no pattern there could match. */
static int64_t probe_dim(int r, int k) {
    return r == 0 ? 65 + 2 * (k % 8) : r == 1 ? 66 + 4 * (k % 8) : -1;
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
    return XXH3_64bits(p, n);
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

void mf_opt_probe_free(mf_probe_state *ps) {
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
        return mf_opt_oom(o);
    mf_graph *s = ps->scratch;
    if (!s->n_nodes && mf_graph_add_node(s) < 0)
        return mf_opt_oom(o);
    mf_node *sn = &s->nodes[0];
    if ((!sn->inputs && !(sn->inputs = mf_malloc(MAX_IO * sizeof *sn->inputs))) ||
        (!sn->outputs && !(sn->outputs = mf_malloc(MAX_IO * sizeof *sn->outputs))))
        return mf_opt_oom(o);
    for (size_t i = 0; i < o->g->n_opsets; i++) {
        const char *d = o->g->opsets[i].domain ? o->g->opsets[i].domain : "";
        size_t j = 0;
        while (j < s->n_opsets && strcmp(s->opsets[j].domain, d) != 0)
            j++;
        if (j < s->n_opsets)
            s->opsets[j].version = o->g->opsets[i].version;
        else if (mf_opt_add_opset(s, d, o->g->opsets[i].version) != MINFER_OK)
            return mf_opt_oom(o);
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
            st = mf_opt_oom(o);
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
            st = mf_opt_oom(o);
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
        if (mf_opt_dead(o, i))
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
            if (!in[k].data && !(in[k].rank >= 0 && mf_opt_numel(&in[k]) == 0))
                all_known = 0;
        }
        if (mf_infer_node_or(n, in, n->n_inputs, out, n->n_outputs, err, sizeof err,
                             o->ctx->infer_fallback) != MINFER_OK)
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
            if (!stat || mf_opt_numel(&out[k]) > PROBE_EVAL_MAX_ELEMS ||
                out[k].dtype == MINFER_DTYPE_STRING || out[k].dtype == 0)
                small = 0;
        }
        /* Shape of a static input needs no evaluator. */
        if (strcmp(n->op_type, "Shape") == 0 && !n->domain[0] && n->n_outputs == 1 &&
            n->outputs[0] >= 0 && in[0].rank >= 0 && small) {
            probe_val *pv = &vals[n->outputs[0]];
            int64_t cnt = pv->view.rank == 1 ? pv->view.dims[0] : -1;
            int64_t r = in[0].rank, start, end;
            minfer_shape_range(r, mf_attr_int(n, "start", 0), mf_attr_int(n, "end", r), &start,
                               &end);
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
        if (!all_known || !small || !o->ctx->eval_node || has_subgraph(n) || mf_core_op(n) ||
            is_random_op(n) || (n->n_inputs == 0 && strcmp(n->op_type, "Constant") != 0))
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
                return mf_opt_oom(o);
            ps->pv[r] = p;
        }
        mf_vinfo *info = mf_realloc(o->info, cap * sizeof *info);
        if (!info)
            return mf_opt_oom(o);
        o->info = info;
        ps->cap_values = cap;
    }
    if (nn > ps->cap_nodes) {
        size_t cap = ps->cap_nodes ? ps->cap_nodes : 64;
        while (cap < nn)
            cap *= 2;
        int *q = mf_realloc(ps->order, cap * sizeof *q);
        if (!q)
            return mf_opt_oom(o);
        ps->order = q;
        int *d = mf_realloc(ps->indeg, cap * sizeof *d);
        if (!d)
            return mf_opt_oom(o);
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
        return mf_opt_oom(o);
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
