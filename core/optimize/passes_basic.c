/*
 * Level 1: clean-ups that keep the graph in the ONNX domain.
 *
 *  constant_nodes   Constant -> initializer (value, value_float(s), value_int(s)).
 *  identity_removal Identity, and Dropout in inference mode (no mask read,
 *                   training_mode absent or constant false).
 *  dead_nodes       nodes none of whose outputs is read or is a graph output.
 *  fold_shapes      Shape / Size of static dims, and Gather(Shape(x), const)
 *                   where the gathered dims are static -> initializers.
 *  fold_constants   a node whose inputs are all initializers, evaluated by
 *                   ctx->eval_node, when every output fits fold_max_bytes.
 *  reshape_chains   Reshape(Reshape|Flatten|Squeeze|Unsqueeze(x), s) with a
 *                   constant target that does not copy dims (no 0 entry, or
 *                   allowzero) reads x; a reshape-like node whose output
 *                   shape equals its input's is removed.
 *  cast_pairs       Cast to the input's own type is removed; Cast(Cast(x, A), B)
 *                   reads x when x -> A is exact.
 *  transpose_pairs  Transpose(Transpose(x, p1), p2) becomes one Transpose
 *                   (or nothing when the composition is the identity).
 *
 * Outputs that are graph outputs (or read by a subgraph) are never folded
 * away; a removed node whose output is one hands the name to its input's
 * producer (mf_opt_bypass).
 */
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

static int live(const mf_opt *o, size_t i) { return !(i < o->cap_dead && o->dead[i]); }

static int default_domain(const mf_node *n) { return !n->domain || !n->domain[0]; }

static int any_pinned_output(const mf_opt *o, const mf_node *n) {
    for (size_t k = 0; k < n->n_outputs; k++)
        if (n->outputs[k] >= 0 && o->pinned[n->outputs[k]])
            return 1;
    return 0;
}

/* ---- constant_nodes --------------------------------------------------- */

static minfer_status constant_tensor(const mf_node *n, minfer_tensor **out) {
    const mf_attr *a;
    int64_t dims[1];
    *out = NULL;
    if ((a = mf_node_attr(n, "value")) && a->type == MINFER_ATTR_TENSOR && a->t)
        return mf_tensor_clone(a->t, out);
    if ((a = mf_node_attr(n, "value_float")) && a->type == MINFER_ATTR_FLOAT) {
        minfer_status st = mf_tensor_new(MINFER_DTYPE_FLOAT, dims, 0, out);
        if (st == MINFER_OK)
            *(float *)(*out)->view.data = a->f;
        return st;
    }
    if ((a = mf_node_attr(n, "value_int")) && a->type == MINFER_ATTR_INT) {
        minfer_status st = mf_tensor_new(MINFER_DTYPE_INT64, dims, 0, out);
        if (st == MINFER_OK)
            *(int64_t *)(*out)->view.data = a->i;
        return st;
    }
    if ((a = mf_node_attr(n, "value_floats")) && a->type == MINFER_ATTR_FLOATS) {
        dims[0] = (int64_t)a->count;
        minfer_status st = mf_tensor_new(MINFER_DTYPE_FLOAT, dims, 1, out);
        if (st == MINFER_OK && a->count)
            memcpy((*out)->view.data, a->floats, a->count * sizeof(float));
        return st;
    }
    if ((a = mf_node_attr(n, "value_ints")) && a->type == MINFER_ATTR_INTS) {
        dims[0] = (int64_t)a->count;
        minfer_status st = mf_tensor_new(MINFER_DTYPE_INT64, dims, 1, out);
        if (st == MINFER_OK && a->count)
            memcpy((*out)->view.data, a->ints, a->count * sizeof(int64_t));
        return st;
    }
    return MINFER_OK; /* strings, sparse: left to the kernel */
}

static void make_initializer(mf_value *v, minfer_tensor *t) {
    v->initializer = t;
    v->dtype = t->view.dtype;
    v->rank = t->view.rank;
    for (int d = 0; d < MINFER_MAX_RANK; d++) {
        v->dims[d] = d < t->view.rank ? t->view.dims[d] : -1;
        free(v->dim_params[d]);
        v->dim_params[d] = NULL;
    }
}

minfer_status mf_pass_constant_nodes(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        if (!live(o, i) || !mf_opt_is(g, (int)i, "Constant") || n->n_outputs != 1 ||
            n->outputs[0] < 0 || o->pinned[n->outputs[0]])
            continue;
        minfer_tensor *t = NULL;
        minfer_status st = constant_tensor(n, &t);
        if (st != MINFER_OK)
            return st;
        if (!t)
            continue;
        make_initializer(&g->values[n->outputs[0]], t);
        mf_opt_kill(o, (int)i);
        (*fired)++;
    }
    return MINFER_OK;
}

/* ---- identity_removal -------------------------------------------------- */

/* uses: live consumer slots per value, as the pass keeps them. */
static int dropout_is_identity(mf_opt *o, const mf_node *n, const size_t *uses) {
    if (n->n_inputs < 1 || n->n_outputs < 1)
        return 0;
    if (n->n_outputs > 1 && n->outputs[1] >= 0 &&
        (uses[n->outputs[1]] || o->pinned[n->outputs[1]]))
        return 0;
    if (n->opset < 7 && mf_attr_int(n, "is_test", 0) == 0)
        return 0; /* the old training-mode form */
    if (n->opset >= 12 && n->n_inputs > 2 && n->inputs[2] >= 0) {
        const minfer_tensor *t = mf_opt_const(o, n->inputs[2]);
        if (!t || t->view.dtype != MINFER_DTYPE_BOOL || !t->view.data ||
            *((const unsigned char *)t->view.data + t->view.offset) != 0)
            return 0;
    }
    return 1;
}

/* The value v now stands for (fwd: per value, -1 for itself), with path
 * halving. */
static int forwarded(int *fwd, int v) {
    while (v >= 0 && fwd[v] >= 0) {
        if (fwd[fwd[v]] >= 0)
            fwd[v] = fwd[fwd[v]];
        v = fwd[v];
    }
    return v;
}

/* Removes the nodes one at a time in index order, as mf_opt_bypass would
 * (readers of the output read the input; a pinned output is handed to the
 * input's producer), but without rewriting every node and rebuilding the
 * index after each removal, which made a chain of n Identity nodes cost n
 * passes over the graph: "readers of `from` read `to`" is recorded as
 * fwd[from] = to, a node's inputs are resolved through fwd when it is
 * looked at and every node's at the end, and the producers and use counts
 * the decisions need are updated in place. */
minfer_status mf_pass_identity(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    size_t nv = g->n_values;
    size_t *uses = mf_malloc((nv + 1) * sizeof *uses);
    int *fwd = mf_malloc((nv + 1) * sizeof *fwd);
    if (!uses || !fwd) {
        free(uses);
        free(fwd);
        return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
    }
    for (size_t v = 0; v < nv; v++) {
        uses[v] = mf_opt_nuses(o, (int)v);
        fwd[v] = -1;
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        mf_node *n = &g->nodes[i];
        if (!live(o, i) || !default_domain(n) || n->n_inputs < 1)
            continue;
        int is_id = strcmp(n->op_type, "Identity") == 0 && n->n_outputs == 1;
        if (!is_id && strcmp(n->op_type, "Dropout") != 0)
            continue;
        for (size_t k = 0; k < n->n_inputs; k++)
            n->inputs[k] = forwarded(fwd, n->inputs[k]);
        if (!is_id && !dropout_is_identity(o, n, uses))
            continue;
        int x = n->inputs[0], y = n->outputs[0], from, to;
        if (x < 0 || y < 0 || x == y)
            continue;
        if (!o->pinned[y]) {
            from = y;
            to = x;
        } else {
            /* y keeps its name: x's producer writes y, x's readers read y. */
            int p = o->prod[x];
            if (p < 0 || o->pinned[x])
                continue;
            mf_node *pn = &g->nodes[p];
            for (size_t k = 0; k < pn->n_outputs; k++)
                if (pn->outputs[k] == x)
                    pn->outputs[k] = y;
            o->prod[y] = p;
            from = x;
            to = y;
        }
        mf_opt_kill(o, (int)i);
        for (size_t k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] >= 0 && uses[n->inputs[k]])
                uses[n->inputs[k]]--;
        for (size_t k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] >= 0 && n->outputs[k] != to)
                o->prod[n->outputs[k]] = -1;
        o->prod[from] = -1;
        uses[to] += uses[from];
        uses[from] = 0;
        fwd[from] = to;
        (*fired)++;
    }
    for (size_t i = 0; *fired && i < g->n_nodes; i++) {
        mf_node *n = &g->nodes[i];
        for (size_t k = 0; live(o, i) && k < n->n_inputs; k++)
            n->inputs[k] = forwarded(fwd, n->inputs[k]);
    }
    free(uses);
    free(fwd);
    return mf_opt_reindex(o);
}

/* ---- dead_nodes ---------------------------------------------------------- */

minfer_status mf_pass_dead_nodes(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    size_t *uses = mf_calloc(g->n_values + 1, sizeof *uses);
    if (!uses)
        return mf_error(MINFER_ERR_NOMEM, "%s: optimizer: out of memory", o->errctx);
    for (size_t v = 0; v < g->n_values; v++)
        uses[v] = mf_opt_nuses(o, (int)v);
    /* Reverse topological order: a chain of unused nodes dies in one pass. */
    for (size_t k = g->n_nodes; k-- > 0;) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i))
            continue;
        int used = 0;
        for (size_t j = 0; j < n->n_outputs && !used; j++)
            used = n->outputs[j] >= 0 && (uses[n->outputs[j]] || o->pinned[n->outputs[j]]);
        if (used)
            continue;
        for (size_t j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] >= 0 && uses[n->inputs[j]])
                uses[n->inputs[j]]--;
        mf_opt_kill(o, i);
        (*fired)++;
    }
    free(uses);
    return MINFER_OK;
}

/* ---- fold_shapes ---------------------------------------------------------- */

/* Baked into constants: only exactly known dims (not probe agreements). */
static int dim_static(const mf_vinfo *vi, int d) { return vi->s[d] >= 0; }

/* The dims Shape(x) reports, when all of them are static: count, or -1. */
static int shape_dims(mf_opt *o, const mf_node *n, int64_t *out) {
    const mf_vinfo *x = mf_opt_info(o, n->inputs[0]);
    if (x->rank < 0)
        return -1;
    int64_t r = x->rank, start, end;
    minfer_shape_range(r, mf_attr_int(n, "start", 0), mf_attr_int(n, "end", r), &start, &end);
    int cnt = 0;
    for (int64_t d = start; d < end; d++) {
        if (!dim_static(x, (int)d))
            return -1;
        out[cnt++] = x->s[d];
    }
    return cnt;
}

static minfer_status set_int64_const(mf_opt *o, int v, const int64_t *vals, int64_t count,
                                     int rank) {
    minfer_tensor *t = NULL;
    int64_t dims[1] = {count};
    minfer_status st = mf_tensor_new(MINFER_DTYPE_INT64, dims, rank, &t);
    if (st != MINFER_OK)
        return st;
    if (count)
        memcpy(t->view.data, vals, (size_t)count * sizeof *vals);
    make_initializer(&o->g->values[v], t);
    return MINFER_OK;
}

minfer_status mf_pass_fold_shapes(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !default_domain(n) || n->n_inputs < 1 || n->inputs[0] < 0 ||
            n->n_outputs != 1 || n->outputs[0] < 0 || o->pinned[n->outputs[0]])
            continue;
        int64_t dims[MINFER_MAX_RANK], vals[MINFER_MAX_RANK];
        int y = n->outputs[0];
        if (strcmp(n->op_type, "Shape") == 0) {
            int cnt = shape_dims(o, n, dims);
            if (cnt < 0)
                continue;
            if ((st = set_int64_const(o, y, dims, cnt, 1)) != MINFER_OK)
                return st;
        } else if (strcmp(n->op_type, "Size") == 0) {
            const mf_vinfo *x = mf_opt_info(o, n->inputs[0]);
            int64_t total = 1;
            int ok = x->rank >= 0;
            for (int d = 0; ok && d < x->rank; d++) {
                ok = dim_static(x, d);
                total *= ok ? x->s[d] : 1;
            }
            if (!ok || (st = set_int64_const(o, y, &total, 1, 0)) != MINFER_OK) {
                if (ok)
                    return st;
                continue;
            }
        } else if (strcmp(n->op_type, "Gather") == 0 && n->n_inputs == 2) {
            /* Gather(Shape(x), idx): only the gathered dims need be static. */
            int p = mf_opt_producer(o, n->inputs[0]);
            if (p < 0 || !mf_opt_is(g, p, "Shape") || mf_attr_int(n, "axis", 0) != 0 ||
                mf_attr_int(&g->nodes[p], "start", 0) != 0 || mf_node_attr(&g->nodes[p], "end"))
                continue;
            const mf_vinfo *x = mf_opt_info(o, g->nodes[p].inputs[0]);
            const minfer_tensor *it = mf_opt_const(o, n->inputs[1]);
            int cnt = mf_opt_const_ints(o, n->inputs[1], vals, MINFER_MAX_RANK);
            if (x->rank < 0 || !it || cnt < 0)
                continue;
            int ok = 1;
            for (int j = 0; j < cnt && ok; j++) {
                int64_t d = vals[j] < 0 ? vals[j] + x->rank : vals[j];
                ok = d >= 0 && d < x->rank && dim_static(x, (int)d);
                if (ok)
                    dims[j] = x->s[d];
            }
            if (!ok)
                continue;
            if ((st = set_int64_const(o, y, dims, cnt, it->view.rank)) != MINFER_OK)
                return st;
        } else {
            continue;
        }
        mf_opt_kill(o, i);
        (*fired)++;
    }
    return MINFER_OK;
}

/* ---- fold_constants ------------------------------------------------------- */

static int foldable(mf_opt *o, const mf_node *n) {
    /* The core's ops (control flow, sequences, optionals) are not the CPU
     * provider's to evaluate, and their results need not be tensors. */
    if (n->n_inputs == 0 || n->n_outputs == 0 || n->n_outputs > 64 || any_pinned_output(o, n) ||
        mf_core_op(n))
        return 0;
    if (strncmp(n->op_type, "Random", 6) == 0 || strcmp(n->op_type, "Multinomial") == 0 ||
        strcmp(n->op_type, "Bernoulli") == 0)
        return 0;
    for (size_t a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].g || n->attrs[a].graphs)
            return 0;
    for (size_t k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] >= 0 && !o->g->values[n->inputs[k]].initializer)
            return 0;
    return 1;
}

/* 1 if an output's inferred size already exceeds the cap (saves evaluating it). */
static int known_too_big(mf_opt *o, const mf_node *n) {
    for (size_t k = 0; k < n->n_outputs; k++) {
        const mf_vinfo *vi = mf_opt_info(o, n->outputs[k]);
        size_t es = minfer_dtype_size((minfer_dtype)vi->dtype);
        double bytes = (double)es;
        int known = n->outputs[k] >= 0 && vi->rank >= 0 && es;
        for (int d = 0; known && d < vi->rank; d++) {
            known = vi->s[d] >= 0;
            bytes *= (double)vi->s[d];
        }
        if (known && bytes > (double)o->ctx->fold_max_bytes)
            return 1;
    }
    return 0;
}

/* Folding replaces a node by what it computes: no value's type or shape
 * changes, so the analysis made before the first fold stays true for the
 * whole pass (o->info_keep), and a chain of n foldable nodes costs one
 * analysis, not n (each recomputed over the whole graph). It is only
 * consulted for sizes known to be over the cap, which the evaluation would
 * refuse anyway. */
minfer_status mf_pass_fold_constants(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st = MINFER_OK;
    if (!o->ctx->eval_node)
        return MINFER_OK;
    o->info_keep = 1;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !foldable(o, n) || known_too_big(o, n) ||
            (o->keep_dequantize && mf_opt_is(g, i, "DequantizeLinear")))
            continue;
        minfer_tensor *outs[64] = {0};
        st = o->ctx->eval_node(o->ctx->user, g, i, outs);
        if (o->ctx->report)
            o->ctx->report->evaluations++;
        int ok = st == MINFER_OK;
        for (size_t j = 0; ok && j < n->n_outputs; j++)
            ok = n->outputs[j] < 0 ||
                 (outs[j] && (uint64_t)outs[j]->view.nbytes <= o->ctx->fold_max_bytes);
        if (!ok) {
            for (size_t j = 0; j < n->n_outputs; j++)
                minfer_tensor_free(outs[j]);
            if (st == MINFER_ERR_NOMEM)
                break;
            st = MINFER_OK;
            mf_error_clear(); /* the session reports a real problem with this node */
            continue;
        }
        for (size_t j = 0; j < n->n_outputs; j++) {
            if (n->outputs[j] >= 0)
                make_initializer(&g->values[n->outputs[j]], outs[j]);
            else
                minfer_tensor_free(outs[j]);
        }
        mf_opt_kill(o, i);
        (*fired)++;
    }
    o->info_keep = 0;
    o->info_dirty |= *fired != 0;
    return st;
}

/* ---- reshape_chains ------------------------------------------------------- */

static int reshape_like(const mf_graph *g, int i) {
    return mf_opt_is(g, i, "Reshape") || mf_opt_is(g, i, "Flatten") ||
           mf_opt_is(g, i, "Squeeze") || mf_opt_is(g, i, "Unsqueeze");
}

minfer_status mf_pass_reshape_chains(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !reshape_like(g, i) || n->n_inputs < 1 || n->inputs[0] < 0 ||
            n->n_outputs != 1 || n->outputs[0] < 0)
            continue;
        int changed = 0;
        if (mf_opt_is(g, i, "Reshape") && n->n_inputs == 2) {
            int64_t target[MINFER_MAX_RANK];
            int cnt = mf_opt_const_ints(o, n->inputs[1], target, MINFER_MAX_RANK);
            int copies = cnt < 0;
            for (int j = 0; j < cnt; j++)
                copies |= target[j] == 0 && mf_attr_int(n, "allowzero", 0) == 0;
            /* The target does not depend on the input's shape: skip the chain. */
            for (int guard = 0; !copies && guard < 64; guard++) {
                int p = mf_opt_producer(o, n->inputs[0]);
                if (p < 0 || !reshape_like(g, p) || g->nodes[p].inputs[0] < 0)
                    break;
                n->inputs[0] = g->nodes[p].inputs[0];
                changed = 1;
            }
        }
        if (!changed && mf_opt_same_shape(o, n->inputs[0], n->outputs[0]) &&
            mf_opt_bypass(o, i))
            changed = 1;
        if (changed) {
            (*fired)++;
            if ((st = mf_opt_reindex(o)) != MINFER_OK)
                return st;
        }
    }
    return MINFER_OK;
}

/* ---- cast_pairs ----------------------------------------------------------- */

/* 1 if every value of type from is exactly representable in type to. */
static int cast_exact(int32_t from, int32_t to) {
    enum { F = MINFER_DTYPE_FLOAT, D = MINFER_DTYPE_DOUBLE, H = MINFER_DTYPE_FLOAT16 };
    if (from == to)
        return 1;
    switch (from) {
    case MINFER_DTYPE_BOOL:
        return to != MINFER_DTYPE_STRING && to != 0;
    case MINFER_DTYPE_INT8:
        return to == MINFER_DTYPE_INT16 || to == MINFER_DTYPE_INT32 ||
               to == MINFER_DTYPE_INT64 || to == F || to == D || to == H;
    case MINFER_DTYPE_UINT8:
        return to == MINFER_DTYPE_INT16 || to == MINFER_DTYPE_INT32 ||
               to == MINFER_DTYPE_INT64 || to == MINFER_DTYPE_UINT16 ||
               to == MINFER_DTYPE_UINT32 || to == MINFER_DTYPE_UINT64 || to == F || to == D ||
               to == H;
    case MINFER_DTYPE_INT16:
        return to == MINFER_DTYPE_INT32 || to == MINFER_DTYPE_INT64 || to == F || to == D;
    case MINFER_DTYPE_UINT16:
        return to == MINFER_DTYPE_INT32 || to == MINFER_DTYPE_INT64 ||
               to == MINFER_DTYPE_UINT32 || to == MINFER_DTYPE_UINT64 || to == F || to == D;
    case MINFER_DTYPE_INT32:
        return to == MINFER_DTYPE_INT64 || to == D;
    case MINFER_DTYPE_UINT32:
        return to == MINFER_DTYPE_INT64 || to == MINFER_DTYPE_UINT64 || to == D;
    case F:
        return to == D;
    case H:
        return to == F || to == D;
    default:
        return 0;
    }
}

minfer_status mf_pass_cast_pairs(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "Cast") || n->n_inputs != 1 ||
            n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
            continue;
        int64_t to = mf_attr_int(n, "to", 0);
        int changed = 0;
        int p = mf_opt_producer(o, n->inputs[0]);
        if (p >= 0 && mf_opt_is(g, p, "Cast") && g->nodes[p].inputs[0] >= 0) {
            int x = g->nodes[p].inputs[0];
            int32_t tx = mf_opt_info(o, x)->dtype;
            int64_t mid = mf_attr_int(&g->nodes[p], "to", 0);
            if (tx && cast_exact(tx, (int32_t)mid)) {
                n->inputs[0] = x;
                changed = 1;
            }
        }
        int32_t tin = mf_opt_info(o, n->inputs[0])->dtype;
        if (tin && tin == to && mf_opt_bypass(o, i))
            changed = 1;
        if (changed) {
            (*fired)++;
            if ((st = mf_opt_reindex(o)) != MINFER_OK)
                return st;
        }
    }
    return MINFER_OK;
}

/* ---- transpose_pairs ------------------------------------------------------ */

/* The node's perm (reversed axes when absent): the count, or -1. */
static int perm_of(mf_opt *o, const mf_node *n, int64_t *perm) {
    const int64_t *p;
    size_t cnt = mf_attr_ints(n, "perm", &p);
    if (cnt) {
        if (cnt > MINFER_MAX_RANK)
            return -1;
        memcpy(perm, p, cnt * sizeof *p);
        return (int)cnt;
    }
    int r = mf_opt_info(o, n->inputs[0])->rank;
    for (int d = 0; d < r; d++)
        perm[d] = r - 1 - d;
    return r;
}

minfer_status mf_pass_transpose_pairs(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    minfer_status st;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "Transpose") || n->n_inputs != 1 ||
            n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
            continue;
        int64_t p2[MINFER_MAX_RANK], p1[MINFER_MAX_RANK], q[MINFER_MAX_RANK];
        int r2 = perm_of(o, n, p2), changed = 0;
        if (r2 < 0)
            continue;
        int p = mf_opt_producer(o, n->inputs[0]);
        if (p >= 0 && mf_opt_is(g, p, "Transpose") && g->nodes[p].inputs[0] >= 0) {
            int r1 = perm_of(o, &g->nodes[p], p1);
            int ok = r1 == r2;
            for (int d = 0; ok && d < r2; d++)
                ok = p2[d] >= 0 && p2[d] < r1 && p1[p2[d]] >= 0 && p1[p2[d]] < r1;
            if (ok) {
                for (int d = 0; d < r2; d++)
                    q[d] = p1[p2[d]];
                n->inputs[0] = g->nodes[p].inputs[0];
                if ((st = mf_opt_set_attr_ints(o, i, "perm", q, (size_t)r2)) != MINFER_OK)
                    return st;
                memcpy(p2, q, sizeof q);
                changed = 1;
            }
        }
        int ident = 1;
        for (int d = 0; d < r2; d++)
            ident &= p2[d] == d;
        if (ident && mf_opt_bypass(o, i))
            changed = 1;
        if (changed) {
            (*fired)++;
            if ((st = mf_opt_reindex(o)) != MINFER_OK)
                return st;
        }
    }
    return MINFER_OK;
}
