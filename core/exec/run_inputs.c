/*
 * Checking a run's inputs against the graph (exec/exec.h): names, types,
 * ranks, fixed and symbolic dimensions, and the input-shape signature the
 * plan cache is keyed by.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "exec/exec.h"

/* For each value, its place among the graph inputs (-1: not an input);
 * for each input k and dimension d of a symbolic name, the first
 * (input, dimension) with that name, as k2 * MINFER_MAX_RANK + d2, when
 * that is an earlier input k2 < k (-1: none; the dimensions of one input
 * are not compared with each other). One block: pos[n_values], then
 * first[n_inputs * RANK].
 * With it a run's check is linear in the inputs: a name is found by the
 * graph's hash, a symbolic size compared with its first occurrence's
 * (a scan of every earlier input made 100k inputs take a minute a run). */
typedef struct input_index {
    int *pos;
    int32_t *first;
} input_index;

static size_t hash_name(const char *s) { return (size_t)XXH3_64bits(s, strlen(s)); }

static input_index *index_make(const mf_graph *g) {
    size_t n_first = g->n_inputs * MINFER_MAX_RANK, cap = 16;
    while (cap < 2 * n_first)
        cap *= 2;
    input_index *ix = malloc(sizeof *ix + g->n_values * sizeof(int) + n_first * sizeof(int32_t));
    int32_t *table = malloc(cap * sizeof *table); /* encoded first occurrences, -1 empty */
    if (!ix || !table) {
        free(ix);
        free(table);
        return NULL;
    }
    ix->pos = (int *)(void *)(ix + 1);
    ix->first = (int32_t *)(void *)(ix->pos + g->n_values);
    for (size_t v = 0; v < g->n_values; v++)
        ix->pos[v] = -1;
    for (size_t i = 0; i < cap; i++)
        table[i] = -1;
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        ix->pos[g->inputs[k]] = (int)k;
        for (int d = 0; d < MINFER_MAX_RANK; d++) {
            int32_t *f = &ix->first[k * MINFER_MAX_RANK + (size_t)d];
            *f = -1;
            if (d >= v->rank || !v->dim_params[d])
                continue;
            size_t h = hash_name(v->dim_params[d]) & (cap - 1);
            for (;; h = (h + 1) & (cap - 1)) {
                int32_t e = table[h];
                if (e < 0) {
                    table[h] = (int32_t)(k * MINFER_MAX_RANK + (size_t)d);
                    break;
                }
                const mf_value *w = &g->values[g->inputs[e / MINFER_MAX_RANK]];
                if (strcmp(w->dim_params[e % MINFER_MAX_RANK], v->dim_params[d]) == 0) {
                    /* within one input a name is not checked (as before) */
                    *f = (size_t)e / MINFER_MAX_RANK < k ? e : -1;
                    break;
                }
            }
        }
    }
    free(table);
    return ix;
}

/* The graph's index, made once; concurrent first runs race to publish it
 * and the losers free theirs. NULL when out of memory. */
static const input_index *index_of(mf_graph *g) {
    input_index *ix = __atomic_load_n((input_index **)&g->input_index, __ATOMIC_ACQUIRE);
    if (ix)
        return ix;
    if (g->n_inputs > (size_t)INT32_MAX / MINFER_MAX_RANK || !(ix = index_make(g)))
        return NULL;
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(&g->input_index, &expected, ix, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        free(ix);
        ix = expected;
    }
    return ix;
}

/* A declared shape as `minfer info` shows it: "[N,3,224,224]", symbolic
 * dimensions by name. */
static const char *declared_shape_str(const mf_value *v, char *buf, size_t size) {
    size_t used = 0;
    if (v->rank < 0)
        return mf_shape_str(v->dims, v->rank, buf, size);
    for (int d = 0; d < v->rank && used < size; d++) {
        int w = v->dims[d] >= 0 ? snprintf(buf + used, size - used, "%s%lld", d ? "," : "[",
                                           (long long)v->dims[d])
                                : snprintf(buf + used, size - used, "%s%s", d ? "," : "[",
                                           v->dim_params[d] ? v->dim_params[d] : "?");
        used += w > 0 ? (size_t)w : 0;
    }
    if (used < size)
        snprintf(buf + used, size - used, "%s]", v->rank ? "" : "[");
    return buf;
}

minfer_status mf_run_check_inputs(minfer_session *s, const char *const *names,
                                  const minfer_tensor *const *inputs, size_t n,
                                  const minfer_tensor **bound, int64_t *sig, size_t *sig_len) {
    const mf_graph *g = s->g;
    char a[160], b[160];
    const input_index *ix = index_of(s->g);
    if (!ix)
        return mf_error(MINFER_ERR_NOMEM, "%s: run: out of memory indexing %zu inputs", s->errctx,
                        g->n_inputs);
    for (size_t k = 0; k < g->n_inputs; k++)
        bound[k] = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || !inputs[i])
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: run: input %zu has a NULL name or tensor",
                            s->errctx, i);
        int vi = mf_graph_find(g, names[i]);
        size_t k = vi >= 0 && ix->pos[vi] >= 0 ? (size_t)ix->pos[vi] : g->n_inputs;
        if (k == g->n_inputs) {
            char list[512] = "";
            size_t used = 0;
            for (size_t j = 0; j < g->n_inputs; j++) {
                int w = snprintf(list + used, sizeof list - used, "%s'%s'", j ? ", " : "",
                                 g->values[g->inputs[j]].name);
                if (w < 0 || (size_t)w >= sizeof list - used)
                    break;
                used += (size_t)w;
            }
            return mf_error(MINFER_ERR_NOT_FOUND,
                            "%s: run: '%s' is not an input of the model%s (inputs: %s)",
                            s->errctx, names[i],
                            vi >= 0 && g->values[vi].initializer ? " (it is an initializer)" : "",
                            list);
        }
        if (bound[k])
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: run: input '%s' is given twice",
                            s->errctx, names[i]);
        /* A device value is read in place only by the session that made
         * it (its provider instance owns the buffer). */
        const mf_devmem *dev = inputs[i]->dev;
        if (dev && dev->s != s)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            dev->s ? "%s: run: input '%s' is a device value (on '%s') of another "
                                     "session: copy it to the host (minfer_tensor_copy_to_host) "
                                     "or make it on this session"
                                   : "%s: run: input '%s' is a device value (on '%s') whose "
                                     "session was freed",
                            s->errctx, names[i], dev->prov);
        bound[k] = inputs[i];
    }
    size_t pos = 0;
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        const minfer_tensor *t = bound[k];
        if (!t)
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: run: input '%s' is missing", s->errctx,
                            v->name);
        static const char *const kinds[] = {"a tensor", "a sequence", "an optional"};
        if (t->view.kind != v->kind || (v->kind == MINFER_VALUE_OPTIONAL &&
                                        t->contained != v->contained))
            return mf_error(MINFER_ERR_TYPE, "%s: run: input '%s' expects %s%s, got %s%s",
                            s->errctx, v->name, kinds[v->kind % 3],
                            v->kind == MINFER_VALUE_OPTIONAL
                                ? (v->contained == MINFER_VALUE_SEQUENCE ? " of a sequence"
                                                                         : " of a tensor")
                                : "",
                            kinds[t->view.kind % 3],
                            t->view.kind == MINFER_VALUE_OPTIONAL
                                ? (t->contained == MINFER_VALUE_SEQUENCE ? " of a sequence"
                                                                         : " of a tensor")
                                : "");
        /* dtype 0: a subgraph input left to inference, or an empty
         * optional read from a file that does not say its type */
        if (t->view.dtype != v->dtype && v->dtype && t->view.dtype)
            return mf_error(MINFER_ERR_TYPE, "%s: run: input '%s' expects %s, got %s", s->errctx,
                            v->name, minfer_dtype_name((minfer_dtype)v->dtype),
                            minfer_dtype_name((minfer_dtype)t->view.dtype));
        if (t->view.kind != MINFER_VALUE_TENSOR) {
            pos = mf_sig_put(sig, pos, t->view.kind, t->view.dtype ? t->view.dtype : v->dtype, -1,
                             NULL);
            continue;
        }
        /* A scalar input given as one element of any rank ([1], [1,1]) is
         * taken as it comes, as ONNX Runtime takes it (users feed
         * np.array([16000]) for a sample rate declared []); the plan is made
         * for the shape given. */
        int64_t given_n = 0;
        int one_for_scalar = v->rank == 0 && t->view.rank > 0 &&
                             mf_numel(t->view.dims, t->view.rank, &given_n) == MINFER_OK &&
                             given_n == 1;
        int bad = v->rank >= 0 && t->view.rank != v->rank && !one_for_scalar;
        for (int d = 0; !bad && !one_for_scalar && v->rank >= 0 && d < v->rank; d++)
            bad = v->dims[d] >= 0 && t->view.dims[d] != v->dims[d];
        if (bad)
            return mf_error(MINFER_ERR_SHAPE, "%s: run: input '%s' expects shape %s, got %s",
                            s->errctx, v->name, declared_shape_str(v, a, sizeof a),
                            mf_shape_str(t->view.dims, t->view.rank, b, sizeof b));
        /* The same symbolic name must mean the same size everywhere: each
         * occurrence equals the first in an earlier input. */
        for (int d = 0; v->rank >= 0 && d < v->rank; d++) {
            int32_t e = ix->first[k * MINFER_MAX_RANK + (size_t)d];
            if (e < 0)
                continue;
            size_t k2 = (size_t)e / MINFER_MAX_RANK;
            int d2 = e % MINFER_MAX_RANK;
            const mf_value *v2 = &g->values[g->inputs[k2]];
            const minfer_tensor *t2 = bound[k2];
            /* a sequence or optional input has no dims to compare */
            if (t2->view.kind != MINFER_VALUE_TENSOR || d2 >= t2->view.rank)
                continue;
            if (t2->view.dims[d2] != t->view.dims[d])
                return mf_error(MINFER_ERR_SHAPE,
                                "%s: run: input '%s' dimension %d ('%s') is %lld but "
                                "input '%s' gives '%s' as %lld",
                                s->errctx, v->name, d, v->dim_params[d],
                                (long long)t->view.dims[d], v2->name, v->dim_params[d],
                                (long long)t2->view.dims[d2]);
        }
        pos = mf_sig_put(sig, pos, MINFER_VALUE_TENSOR, t->view.dtype, t->view.rank,
                         t->view.dims);
    }
    *sig_len = pos;
    return MINFER_OK;
}
