/*
 * Level 1: data movement a CNN does not need.
 *
 *  fold_pad       Pad(X, constant 0, spatial pads p) -> Conv / AveragePool(X)
 *                 with pads + p
 *  single_concat  Concat of one input -> nothing (its readers read the input)
 *
 * Exporters write an average pool with count_include_pad as an explicit
 * Pad and a pool without pads (PyTorch for Inception), and some write a
 * Conv's padding as a Pad in front of it. A zero Pad and a Conv's pads are
 * the same zeros, so the fold is exact. An AveragePool counts its padding
 * zeros in the divisor only with count_include_pad = 1, so the fold sets it,
 * and takes a pool that already has pads only when it counted them too.
 * MaxPool is left alone: its padding is -inf, not 0.
 *
 * Checked: mode constant, value 0 (absent, or a constant scalar 0), pads a
 * constant list over every axis (no axes input) that is 0 on the batch and
 * channel axes and >= 0 on the others; the Pad's output read by the Conv's
 * or pool's X alone and not a graph output; auto_pad NOTSET (or absent);
 * for the pool, ceil_mode 0 (the last window's divisor differs with it).
 *
 * A Concat of one input is a copy: DenseNet's first layer of each block
 * concatenates the list of one feature map, and a detector's transform
 * batches its one image so. The axis must be valid for the input's known
 * rank, or the node stays (and fails at run time, as written).
 */
#include <stdint.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

static int live(const mf_opt *o, size_t i) { return !(i < o->cap_dead && o->dead[i]); }

/* The pads of Pad node i (2 * rank entries) when it is a zero constant pad;
 * the count, or -1. */
static int zero_pad(const mf_opt *o, const mf_node *n, int64_t *pads, int cap) {
    if (strcmp(mf_attr_string(n, "mode", "constant"), "constant") || n->n_outputs != 1)
        return -1;
    if (n->opset < 11) {
        const int64_t *p;
        size_t np = mf_attr_ints(n, n->opset < 2 ? "paddings" : "pads", &p);
        if (np == 0 || np > (size_t)cap || mf_attr_float(n, "value", 0.0f) != 0.0f)
            return -1;
        memcpy(pads, p, np * sizeof *p);
        return (int)np;
    }
    if (n->n_inputs < 2 || n->n_inputs > 3 || n->inputs[1] < 0)
        return -1;
    double value = 0;
    if (n->n_inputs == 3 && n->inputs[2] >= 0 &&
        (!mf_opt_scalar(o, n->inputs[2], &value) || value != 0))
        return -1;
    return mf_opt_const_ints(o, n->inputs[1], pads, cap);
}

/* Folds Pad node i into its reader; 1 when it did. */
static int fold_one(mf_opt *o, int i, minfer_status *st) {
    mf_graph *g = o->g;
    const mf_node *pad = &g->nodes[i];
    int64_t p[2 * MINFER_MAX_RANK];
    int np = zero_pad(o, pad, p, 2 * MINFER_MAX_RANK);
    if (np < 6 || np % 2 || pad->inputs[0] < 0)
        return 0;
    int r = np / 2, y = pad->outputs[0];
    int c = mf_opt_single_consumer(o, y);
    if (c < 0 || (!mf_opt_is(g, c, "Conv") && !mf_opt_is(g, c, "AveragePool")))
        return 0;
    const mf_node *n = &g->nodes[c];
    int pool = mf_opt_is(g, c, "AveragePool");
    if (n->inputs[0] != y || strcmp(mf_attr_string(n, "auto_pad", "NOTSET"), "NOTSET"))
        return 0;
    if (p[0] || p[1] || p[r] || p[r + 1])
        return 0;
    for (int d = 2; d < r; d++)
        if (p[d] < 0 || p[r + d] < 0)
            return 0;
    const int64_t *old;
    size_t n_old = mf_attr_ints(n, "pads", &old);
    int ns = r - 2, had_pads = 0;
    if (n_old && n_old != (size_t)(2 * ns))
        return 0;
    for (size_t k = 0; k < n_old; k++)
        had_pads |= old[k] != 0;
    if (pool && (mf_attr_int(n, "ceil_mode", 0) != 0 ||
                 (had_pads && mf_attr_int(n, "count_include_pad", 0) == 0)))
        return 0;
    int64_t pads[2 * MINFER_MAX_RANK];
    for (int d = 0; d < ns; d++) {
        pads[d] = (n_old ? old[d] : 0) + p[2 + d];
        pads[ns + d] = (n_old ? old[ns + d] : 0) + p[r + 2 + d];
    }
    int x = pad->inputs[0];
    if ((*st = mf_opt_set_attr_ints(o, c, "pads", pads, (size_t)(2 * ns))) != MINFER_OK ||
        (pool && (*st = mf_opt_set_attr_int(o, c, "count_include_pad", 1)) != MINFER_OK))
        return 0;
    g->nodes[c].inputs[0] = x;
    mf_opt_kill(o, i);
    return 1;
}

minfer_status mf_pass_fold_pad(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "Pad"))
            continue;
        minfer_status st = MINFER_OK;
        int done = fold_one(o, i, &st);
        if (st != MINFER_OK)
            return st;
        if (done) {
            (*fired)++;
            if ((st = mf_opt_reindex(o)) != MINFER_OK)
                return st;
        }
    }
    return MINFER_OK;
}

minfer_status mf_pass_single_concat(mf_opt *o, size_t *fired) {
    mf_graph *g = o->g;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (!live(o, (size_t)i) || !mf_opt_is(g, i, "Concat") || n->n_inputs != 1 ||
            n->inputs[0] < 0 || n->n_outputs != 1 || n->outputs[0] < 0)
            continue;
        int32_t rank = mf_opt_info(o, n->inputs[0])->rank;
        int64_t axis = mf_attr_int(n, "axis", INT64_MAX);
        if (rank < 1 || axis < -(int64_t)rank || axis >= rank || !mf_opt_bypass(o, i))
            continue;
        (*fired)++;
        minfer_status st = mf_opt_reindex(o);
        if (st != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}
