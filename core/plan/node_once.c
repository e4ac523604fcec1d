/*
 * Running one node once on a provider (plan/node_once.h).
 *
 * mf_run_node_once is used for folding constants at build (build.c), for
 * nodes whose shapes are known only at run time (exec/step.c) and by the
 * optimizer's stand-alone evaluator (exec/evaluator.c):
 *  1. prepare_node with the node's descriptor (in-place and layout answers
 *     are asked for and ignored: the outputs are the caller's);
 *  2. a zeroed host workspace of the size prepare asked for;
 *  3. execute_node; outputs of rank -1 come back through alloc_output
 *     (exec/node_runner.c), tracked by the caller's mf_run;
 *  4. release_node and the workspace, whatever happened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/node_once.h"

/* ---- storage a node makes while it runs --------------------------------- */

int mf_run_track_strings(mf_run *r, void *ptr, int64_t strings) {
    if (r->n_temps == r->cap_temps) {
        size_t cap = r->cap_temps ? r->cap_temps * 2 : 16;
        void **t = mf_realloc(r->temps, cap * sizeof *t);
        if (!t)
            return -1;
        r->temps = t;
        int64_t *c = mf_realloc(r->temp_strings, cap * sizeof *c);
        if (!c)
            return -1;
        r->temp_strings = c;
        r->cap_temps = cap;
    }
    r->temps[r->n_temps] = ptr;
    r->temp_strings[r->n_temps++] = strings;
    return 0;
}

int mf_run_track(mf_run *r, void *ptr) { return mf_run_track_strings(r, ptr, 0); }

int mf_run_untrack(mf_run *r, void *ptr) {
    for (size_t t = 0; t < r->n_temps; t++)
        if (r->temps[t] == ptr) {
            r->temps[t] = NULL;
            r->temp_strings[t] = 0;
            return 0;
        }
    return -1;
}

void mf_run_free_temps(mf_run *r) {
    for (size_t t = 0; t < r->n_temps; t++) {
        if (r->temp_strings[t])
            mf_free_strings(r->temps[t], r->temp_strings[t]);
        free(r->temps[t]);
    }
    free(r->temps);
    free(r->temp_strings);
    r->temps = NULL;
    r->temp_strings = NULL;
    r->n_temps = r->cap_temps = 0;
}

minfer_status mf_value_bytes(const minfer_session *s, int node, size_t o,
                             const minfer_tensor_view *v, size_t *out) {
    char lbl[512], shape[160];
    const mf_node *n = &s->g->nodes[node];
    int vi = n->outputs[o];
    const char *name = vi >= 0 ? s->g->values[vi].name : "";
    size_t bytes;
    minfer_status st = minfer_view_nbytes(v, &bytes);
    if (st == MINFER_ERR_UNSUPPORTED)
        return mf_error(st, "%s: %s output %zu '%s' has element type %d, which has no size",
                        s->errctx, mf_node_label(n, node, lbl, sizeof lbl), o, name,
                        (int)v->dtype);
    if (st != MINFER_OK)
        return mf_error(MINFER_ERR_LIMIT,
                        "%s: %s output %zu '%s' of shape %s and type %s has more elements or "
                        "bytes than fit in memory",
                        s->errctx, mf_node_label(n, node, lbl, sizeof lbl), o, name,
                        mf_shape_str(v->dims, v->rank, shape, sizeof shape),
                        minfer_dtype_name((minfer_dtype)v->dtype));
    if (bytes > s->limits.max_tensor_bytes)
        return mf_error(MINFER_ERR_LIMIT,
                        "%s: %s output %zu '%s' of shape %s would take %zu bytes, above the "
                        "tensor limit of %llu bytes",
                        s->errctx, mf_node_label(n, node, lbl, sizeof lbl), o, name,
                        mf_shape_str(v->dims, v->rank, shape, sizeof shape), bytes,
                        (unsigned long long)s->limits.max_tensor_bytes);
    *out = bytes;
    return MINFER_OK;
}

/* ---- one node ------------------------------------------------------------ */

minfer_status mf_run_node_once(const mf_provider_inst *pi, const minfer_node_desc *desc,
                               const minfer_tensor_view *in, size_t n_in,
                               minfer_tensor_view *out, size_t n_out, mf_run *run,
                               mf_node_step *step) {
    int32_t inplace_s[MF_MAX_NODE_IO];
    uint64_t layouts_s[MF_MAX_NODE_IO];
    int32_t *inplace = mf_io_scratch(inplace_s, n_out, sizeof *inplace);
    uint64_t *layouts = mf_io_scratch(layouts_s, n_out, sizeof *layouts);
    void *state = NULL, *work = NULL;
    minfer_status st = MINFER_OK;
    *step = MF_NODE_OK;
    if (!inplace || !layouts) {
        mf_io_scratch_free(inplace, inplace_s);
        mf_io_scratch_free(layouts, layouts_s);
        *step = MF_NODE_PREPARE;
        return mf_error(MINFER_ERR_NOMEM, "out of memory for %zu outputs", n_out);
    }
    for (size_t o = 0; o < n_out; o++) {
        inplace[o] = -1;
        layouts[o] = 0;
    }
    minfer_node_prep prep = {sizeof prep, 0, inplace, layouts, NULL};
    mf_error_clear();
    if ((st = mf_prov_prepare(pi, desc, &prep, &state)) != MINFER_OK) {
        *step = MF_NODE_PREPARE;
        mf_io_scratch_free(inplace, inplace_s);
        mf_io_scratch_free(layouts, layouts_s);
        return st;
    }
    if (prep.workspace_bytes && !(work = mf_alloc_host(prep.workspace_bytes))) {
        *step = MF_NODE_WORKSPACE;
        st = mf_error(MINFER_ERR_NOMEM, "out of memory for a workspace of %zu bytes",
                      prep.workspace_bytes);
    }
    if (st == MINFER_OK) {
        minfer_exec_args args = {sizeof args, run, desc, in, n_in, out, n_out,
                                 work, prep.workspace_bytes, 0, sizeof(minfer_tensor_view)};
        mf_error_clear();
        if ((st = mf_prov_execute(pi, state, &args)) != MINFER_OK)
            *step = MF_NODE_EXECUTE;
    }
    if (state)
        mf_prov_release(pi, state);
    free(work);
    mf_io_scratch_free(inplace, inplace_s);
    mf_io_scratch_free(layouts, layouts_s);
    return st;
}
