/*
 * Control flow the core runs itself: If, Loop, Scan and SequenceMap, and
 * the inference of every core op's output kinds. The sequence, optional
 * and Gradient-helper ops, and the value helpers all of them share, are
 * exec/core_values.c (exec/core_call.h between the two).
 *
 * They only move values and run subgraphs, so they live here rather than
 * in a provider: a subgraph is built as a session of its own (its nodes go
 * to the session's providers like any other), with the outer-scope values
 * it reads passed as extra inputs, and run through the budget's run_sub
 * (the scheduler's entry point, handed down). Every value these ops make is
 * a fresh, owned minfer_tensor (a tensor, a sequence or an optional);
 * containers are never changed once made, so a sequence op copies.
 *
 * In the core's views of an optional, layout (which only providers use for
 * tensors) holds the kind the optional contains.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/core_call.h"

/* ---- subgraph sessions -------------------------------------------------- */

/* Checks that a subgraph's formal inputs and outputs fit node n. */
minfer_status mf_core_check_arity(minfer_session *s, int i, const char *attr, const mf_graph *sg) {
    const mf_node *n = &s->g->nodes[i];
    size_t nin = mf_core_formal_inputs(n), want_in = 0, want_out = n->n_outputs;
    char lbl[512];
    if (is_op(n, "Loop")) {
        want_in = nin; /* iteration count and condition, then the carried values */
        if (nin < 2)
            goto bad_node;
        want_out = 1 + n->n_outputs; /* condition, carried values, scan outputs */
        if (n->n_outputs < nin - 2)
            goto bad_node;
    } else if (is_op(n, "Scan")) {
        want_in = n->opset < 9 ? nin - (nin > 0) : nin;
    } else if (is_op(n, "SequenceMap")) {
        want_in = nin;
    }
    if (sg->n_inputs != want_in || sg->n_outputs != want_out)
        return mf_error(MINFER_ERR_MODEL,
                        "%s: %s: subgraph '%s' has %zu inputs and %zu outputs; the node needs %zu "
                        "and %zu",
                        s->errctx, mf_node_label(n, i, lbl, sizeof lbl), attr, sg->n_inputs,
                        sg->n_outputs, want_in, want_out);
    return MINFER_OK;
bad_node:
    return mf_error(MINFER_ERR_MODEL, "%s: %s has %zu inputs and %zu outputs, which a Loop cannot have",
                    s->errctx, mf_node_label(n, i, lbl, sizeof lbl), nin, n->n_outputs);
}

/* ---- running a subgraph ------------------------------------------------- */

/* Runs subgraph session k of node i on its formal inputs and the node's
 * captured inputs; out receives its outputs (owned). */
static minfer_status run_sub(minfer_session *s, mf_budget *b, mf_lane *lane, int i, size_t k,
                             const minfer_tensor *const *formal, const minfer_tensor_view *node_in,
                             minfer_tensor **out) {
    const mf_core_sub *sub = &s->subs[2 * i + k];
    minfer_session *child = sub->s;
    const mf_graph *cg = child->g;
    size_t n_in = cg->n_inputs;
    const char *names_stack[32];
    const minfer_tensor *ins_stack[32];
    minfer_tensor tmp_stack[16], *tmps = tmp_stack;
    /* A formal input declared optional takes a plain value as an optional
     * holding it (a Loop's carried optional comes back from the body as
     * the value itself); wrappers borrow the value. One per formal input at
     * most: on the stack up to 8, else on the heap. */
    minfer_tensor wrap_stack[8], *wraps = wrap_stack;
    const minfer_tensor *wrapped_stack[8], **wrapped = wrapped_stack;
    size_t n_wraps = 0;
    const char **names = names_stack;
    const minfer_tensor **ins = ins_stack;
    minfer_status st;
    if (n_in > 32 || sub->n_captures > 16 || sub->n_formal > 8) {
        names = mf_malloc((n_in + 1) * sizeof *names);
        ins = mf_malloc((n_in + 1) * sizeof *ins);
        tmps = mf_malloc((sub->n_captures + 1) * sizeof *tmps);
        wraps = mf_malloc((sub->n_formal + 1) * sizeof *wraps);
        wrapped = mf_malloc((sub->n_formal + 1) * sizeof *wrapped);
        if (!names || !ins || !tmps || !wraps || !wrapped) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto done;
        }
    }
    for (size_t j = 0; j < n_in; j++) {
        const mf_value *cv = &cg->values[cg->inputs[j]];
        names[j] = cv->name;
        ins[j] = j < sub->n_formal ? formal[j]
                                   : mf_cv_handle(&node_in[sub->slot[j - sub->n_formal]],
                                            &tmps[j - sub->n_formal]);
        if (j < sub->n_formal && ins[j] && cv->kind == MINFER_VALUE_OPTIONAL &&
            ins[j]->view.kind != MINFER_VALUE_OPTIONAL) {
            minfer_tensor *w = &wraps[n_wraps];
            memset(w, 0, sizeof *w);
            wrapped[n_wraps] = ins[j];
            w->view.kind = MINFER_VALUE_OPTIONAL;
            w->view.dtype = ins[j]->view.dtype;
            w->contained = ins[j]->view.kind;
            w->items = (minfer_tensor **)(void *)&wrapped[n_wraps];
            w->count = 1;
            ins[j] = w;
            n_wraps++;
        }
    }
    for (size_t o = 0; o < cg->n_outputs; o++)
        out[o] = NULL;
    st = b->run_sub(child, b, lane, names, ins, n_in, out, cg->n_outputs);
done:
    if (names != names_stack) {
        free(names);
        free(ins);
        free(tmps);
        free(wraps);
        free(wrapped);
    }
    return st;
}

static minfer_status op_if(core_call *cc) {
    int cond;
    if (!mf_cv_present(cc, 0) || mf_cv_scalar_bool(&cc->in[0], &cond) != MINFER_OK)
        return FAIL(cc, MINFER_ERR_TYPE, "the condition must be a bool tensor of one element");
    /* the branch session's messages name the node and the branch */
    minfer_status st = run_sub(cc->s, cc->b, cc->lane, cc->i, cond ? 0 : 1, NULL, cc->in, cc->out);
    if (st != MINFER_OK)
        return st;
    /* A branch must give what the graph declares for the If's outputs (and
     * what inference promised from the then-branch): callers read
     * output_info and the types the plan gave downstream nodes. */
    static const char *const kinds[] = {"a tensor", "a sequence", "an optional"};
    const minfer_session *s = cc->s;
    char a[160], b[160];
    for (size_t o = 0; o < cc->n->n_outputs; o++) {
        int vi = cc->n->outputs[o];
        const minfer_tensor *t = cc->out[o];
        if (vi < 0 || !t)
            continue;
        const mf_value *v = &s->g->values[vi];
        const minfer_tensor_view *inf = s->build ? &s->build->vals[vi].view : NULL;
        int32_t want = v->dtype ? v->dtype : inf ? inf->dtype : 0;
        const char *branch = cond ? "then_branch" : "else_branch";
        /* a value declared optional may come as the value it holds; an
         * undeclared one (dtype 0) has no kind to check */
        if (v->dtype && t->view.kind != v->kind &&
            !(v->kind == MINFER_VALUE_OPTIONAL && t->view.kind == v->contained))
            st = FAIL(cc, MINFER_ERR_TYPE, "%s output %zu is %s, but '%s' is declared %s", branch,
                      o, kinds[t->view.kind % 3], v->name, kinds[v->kind % 3]);
        else if (want && t->view.dtype != want)
            st = FAIL(cc, MINFER_ERR_TYPE, "%s output %zu is %s, but '%s' is declared %s", branch,
                      o, minfer_dtype_name((minfer_dtype)t->view.dtype), v->name,
                      minfer_dtype_name((minfer_dtype)want));
        else if (t->view.kind == MINFER_VALUE_TENSOR && v->rank >= 0) {
            int bad = t->view.rank != v->rank;
            for (int d = 0; !bad && d < v->rank; d++)
                bad = v->dims[d] >= 0 && t->view.dims[d] != v->dims[d];
            if (bad)
                st = FAIL(cc, MINFER_ERR_SHAPE, "%s output %zu has shape %s, but '%s' is "
                          "declared %s", branch, o,
                          mf_shape_str(t->view.dims, t->view.rank, a, sizeof a), v->name,
                          mf_shape_str(v->dims, v->rank, b, sizeof b));
        }
        if (st != MINFER_OK) {
            mf_cv_free_all(cc->out, cc->n->n_outputs);
            return st;
        }
    }
    return MINFER_OK;
}

/* Loop: body(iteration, condition, carried...) -> (condition, carried...,
 * scan outputs...); scan outputs are stacked along a new first axis. */
static minfer_status op_loop(core_call *cc) {
    minfer_session *s = cc->s;
    const mf_node *n = cc->n;
    size_t n_carried = cc->nin - 2, n_scan = n->n_outputs - n_carried;
    size_t n_body_out = 1 + n_carried + n_scan;
    int64_t trip = -1;
    int cond = 1;
    minfer_status st = MINFER_OK;
    if (mf_cv_present(cc, 0) && mf_cv_scalar_int(&cc->in[0], &trip) != MINFER_OK)
        return FAIL(cc, MINFER_ERR_TYPE, "the trip count M must be an int64 scalar");
    if (mf_cv_present(cc, 1) && mf_cv_scalar_bool(&cc->in[1], &cond) != MINFER_OK)
        return FAIL(cc, MINFER_ERR_TYPE, "the condition must be a bool scalar");
    /* carried (n_carried), body outputs (n_body_out), body inputs
     * (2 + n_carried), each with a spare slot */
    size_t n_alloc = (n_carried + 1) + (n_body_out + 1) + (2 + n_carried + 1);
    void **blk = mf_calloc(n_alloc, sizeof(void *));
    if (!blk)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    minfer_tensor **carried = (minfer_tensor **)blk;            /* owned, n_carried */
    minfer_tensor **bout = carried + n_carried + 1;              /* n_body_out */
    const minfer_tensor **bin = (const minfer_tensor **)(bout + n_body_out + 1); /* 2 + n_carried */
    minfer_tensor **scans_owner = NULL; /* per scan output: items, grown */
    size_t n_iter = 0, cap_iter = 0;
    minfer_tensor *iter_t = NULL, *cond_t = NULL;
    for (size_t k = 0; k < n_carried; k++)
        if ((st = mf_cv_clone_view(&cc->in[2 + k], &carried[k])) != MINFER_OK)
            goto done;
    if ((st = mf_cv_new_scalar(MINFER_DTYPE_INT64, 0, &iter_t)) != MINFER_OK ||
        (st = mf_cv_new_scalar(MINFER_DTYPE_BOOL, cond, &cond_t)) != MINFER_OK)
        goto done;
    for (int64_t it = 0; cond && (trip < 0 || it < trip); it++) {
        if ((st = mf_budget_iteration(cc->b, s, cc->i)) != MINFER_OK)
            goto done;
        *(int64_t *)iter_t->view.data = it;
        *(unsigned char *)cond_t->view.data = (unsigned char)cond;
        bin[0] = iter_t;
        bin[1] = cond_t;
        for (size_t k = 0; k < n_carried; k++)
            bin[2 + k] = carried[k];
        if ((st = run_sub(s, cc->b, cc->lane, cc->i, 0, bin, cc->in, bout)) != MINFER_OK) {
            mf_error_prefix(st, "iteration %lld", (long long)it);
            goto done;
        }
        if (mf_cv_scalar_bool(&bout[0]->view, &cond) != MINFER_OK) {
            st = FAIL(cc, MINFER_ERR_TYPE, "the body's condition output is not a bool scalar");
            mf_cv_free_all(bout, n_body_out);
            goto done;
        }
        minfer_tensor_free(bout[0]);
        bout[0] = NULL;
        for (size_t k = 0; k < n_carried; k++) {
            minfer_tensor_free(carried[k]);
            carried[k] = bout[1 + k];
            bout[1 + k] = NULL;
        }
        if (n_scan) {
            if (n_iter == cap_iter) {
                size_t cap = cap_iter ? cap_iter * 2 : 16;
                minfer_tensor **grown = mf_realloc(scans_owner, cap * n_scan * sizeof *grown);
                if (!grown) {
                    mf_cv_free_all(bout + 1 + n_carried, n_scan);
                    st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                    goto done;
                }
                scans_owner = grown;
                cap_iter = cap;
            }
            /* The stacked scan outputs are tensors of this node: bounded
             * by the tensor limit as they grow, and counted as produced. */
            for (size_t k = 0; k < n_scan; k++) {
                minfer_tensor *item = bout[1 + n_carried + k];
                uint64_t bytes = mf_value_elements(&item->view) *
                                 (uint64_t)minfer_dtype_size((minfer_dtype)item->view.dtype);
                if (bytes && n_iter + 1 > s->limits.max_tensor_bytes / bytes) {
                    st = FAIL(cc, MINFER_ERR_LIMIT,
                              "scan output %zu would exceed the tensor limit of %llu bytes at "
                              "iteration %lld (%llu bytes per iteration)",
                              k, (unsigned long long)s->limits.max_tensor_bytes, (long long)it,
                              (unsigned long long)bytes);
                    mf_cv_free_all(bout + 1 + n_carried, n_scan);
                    goto done;
                }
                if ((st = mf_budget_elements(cc->b, s, cc->i, mf_value_elements(&item->view))) !=
                    MINFER_OK) {
                    mf_cv_free_all(bout + 1 + n_carried, n_scan);
                    goto done;
                }
            }
            for (size_t k = 0; k < n_scan; k++) {
                scans_owner[n_iter * n_scan + k] = bout[1 + n_carried + k];
                bout[1 + n_carried + k] = NULL;
            }
        }
        n_iter++;
    }
    for (size_t k = 0; k < n_carried; k++) {
        cc->out[k] = carried[k];
        carried[k] = NULL;
    }
    for (size_t k = 0; k < n_scan; k++) {
        minfer_tensor **col = mf_malloc((n_iter + 1) * sizeof *col);
        if (!col) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto done;
        }
        for (size_t t = 0; t < n_iter; t++)
            col[t] = scans_owner[t * n_scan + k];
        if (n_iter == 0) {
            const mf_graph *sg = s->subs[2 * cc->i].s->g;
            const mf_value *v = &sg->values[sg->outputs[1 + n_carried + k]];
            int64_t dims[MINFER_MAX_RANK] = {0};
            int rank = 1;
            if (v->rank >= 0 && v->rank < MINFER_MAX_RANK) {
                rank = 1 + v->rank;
                for (int d = 0; d < v->rank; d++)
                    dims[1 + d] = v->dims[d] > 0 ? v->dims[d] : 0;
            }
            st = mf_tensor_new(v->dtype ? v->dtype : MINFER_DTYPE_FLOAT, dims, rank, &cc->out[n_carried + k]);
        } else if (col[0]->view.kind != MINFER_VALUE_TENSOR)
            st = FAIL(cc, MINFER_ERR_TYPE, "scan output %zu is not a tensor", k);
        else
            st = mf_cv_join(col, n_iter, 0, 1, 0, s->limits.max_tensor_bytes, cc->lbl,
                      &cc->out[n_carried + k]);
        free(col);
        if (st != MINFER_OK)
            goto done;
    }
done:
    for (size_t k = 0; k < n_carried; k++)
        minfer_tensor_free(carried[k]);
    if (scans_owner)
        mf_cv_free_all(scans_owner, n_iter * n_scan);
    free(scans_owner);
    minfer_tensor_free(iter_t);
    minfer_tensor_free(cond_t);
    free(blk);
    if (st != MINFER_OK)
        mf_cv_free_all(cc->out, n->n_outputs);
    return st;
}

/* Scan (opset 9+): state... and scan inputs sliced along their axes; scan
 * outputs stacked along theirs. Opset 8 has a leading batch axis and an
 * optional sequence_lens input: each batch entry is scanned on its own. */
static minfer_status scan_once(core_call *cc, const minfer_tensor *const *state,
                               const minfer_tensor *const *scan_in, size_t n_state, size_t m,
                               int time_axis_base, int64_t len, minfer_tensor **out) {
    minfer_session *s = cc->s;
    const mf_node *n = cc->n;
    size_t k_out = n->n_outputs - n_state, n_body_out = n_state + k_out;
    const int64_t *in_axes = NULL, *in_dirs = NULL, *out_axes = NULL, *out_dirs = NULL;
    size_t n_in_axes = mf_attr_ints(n, "scan_input_axes", &in_axes);
    size_t n_in_dirs = mf_attr_ints(n, n->opset < 9 ? "directions" : "scan_input_directions",
                                    &in_dirs);
    size_t n_out_axes = mf_attr_ints(n, "scan_output_axes", &out_axes);
    size_t n_out_dirs = mf_attr_ints(n, "scan_output_directions", &out_dirs);
    minfer_status st = MINFER_OK;
    size_t nb = n_state + m + n_body_out + 2;
    void **blk = mf_calloc(nb + (size_t)(len > 0 ? len : 0) * k_out + 1, sizeof(void *));
    if (!blk)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    minfer_tensor **cur = (minfer_tensor **)blk;    /* n_state: owned after the first step */
    minfer_tensor **slices = cur + n_state;          /* m */
    minfer_tensor **bout = slices + m;               /* n_body_out */
    minfer_tensor **cols = bout + n_body_out;        /* len * k_out */
    const minfer_tensor **bin = mf_calloc(n_state + m + 1, sizeof *bin);
    if (!bin) {
        free(blk);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    for (size_t k = 0; k < n_state; k++)
        if ((st = mf_tensor_clone(state[k], &cur[k])) != MINFER_OK)
            goto done;
    for (int64_t t = 0; t < len; t++) {
        if ((st = mf_budget_iteration(cc->b, s, cc->i)) != MINFER_OK)
            goto done;
        for (size_t j = 0; j < m; j++) {
            const minfer_tensor *x = scan_in[j];
            int64_t axis = j < n_in_axes ? in_axes[j] : 0;
            if (axis < 0)
                axis += x->view.rank - time_axis_base;
            axis += time_axis_base;
            int rev = j < n_in_dirs && in_dirs[j] == 1;
            if ((st = mf_cv_take(x, (int)axis, rev ? len - 1 - t : t, 1, 0, &slices[j])) != MINFER_OK)
                goto done;
        }
        for (size_t k = 0; k < n_state; k++)
            bin[k] = cur[k];
        for (size_t j = 0; j < m; j++)
            bin[n_state + j] = slices[j];
        st = run_sub(s, cc->b, cc->lane, cc->i, 0, bin, cc->in, bout);
        mf_cv_free_all(slices, m);
        if (st != MINFER_OK) {
            mf_error_prefix(st, "iteration %lld", (long long)t);
            goto done;
        }
        for (size_t k = 0; k < n_state; k++) {
            minfer_tensor_free(cur[k]);
            cur[k] = bout[k];
            bout[k] = NULL;
        }
        /* scan outputs grow under the tensor limit, as a Loop's do */
        for (size_t k = 0; k < k_out; k++) {
            const minfer_tensor *item = bout[n_state + k];
            uint64_t bytes = mf_value_elements(&item->view) *
                             (uint64_t)minfer_dtype_size((minfer_dtype)item->view.dtype);
            if (bytes && (uint64_t)t + 1 > s->limits.max_tensor_bytes / bytes) {
                st = FAIL(cc, MINFER_ERR_LIMIT,
                          "scan output %zu would exceed the tensor limit of %llu bytes at "
                          "iteration %lld (%llu bytes per iteration)",
                          k, (unsigned long long)s->limits.max_tensor_bytes, (long long)t,
                          (unsigned long long)bytes);
                goto done;
            }
        }
        for (size_t k = 0; k < k_out; k++) {
            cols[(size_t)t * k_out + k] = bout[n_state + k];
            bout[n_state + k] = NULL;
        }
    }
    for (size_t k = 0; k < n_state; k++) {
        out[k] = cur[k];
        cur[k] = NULL;
    }
    for (size_t k = 0; k < k_out; k++) {
        minfer_tensor **col = mf_malloc(((size_t)len + 1) * sizeof *col);
        if (!col) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto done;
        }
        for (int64_t t = 0; t < len; t++)
            col[t] = cols[(size_t)t * k_out + k];
        if (len == 0) {
            int64_t zero = 0;
            st = mf_tensor_new(MINFER_DTYPE_FLOAT, &zero, 1, &out[n_state + k]);
        } else {
            int64_t axis = k < n_out_axes ? out_axes[k] : 0;
            int64_t r = col[0]->view.rank + 1;
            if (axis < 0)
                axis += r;
            if (axis < 0 || axis >= r)
                st = FAIL(cc, MINFER_ERR_MODEL, "scan output axis %lld is out of range",
                          (long long)(k < n_out_axes ? out_axes[k] : 0));
            else
                st = mf_cv_join(col, (size_t)len, (int)axis, 1, k < n_out_dirs && out_dirs[k] == 1,
                          s->limits.max_tensor_bytes, cc->lbl, &out[n_state + k]);
        }
        free(col);
        if (st != MINFER_OK)
            goto done;
    }
done:
    mf_cv_free_all(cur, n_state);
    mf_cv_free_all(bout, n_body_out);
    mf_cv_free_all(cols, (size_t)(len > 0 ? len : 0) * k_out);
    free(bin);
    free(blk);
    if (st != MINFER_OK)
        mf_cv_free_all(out, n->n_outputs);
    return st;
}

static minfer_status op_scan(core_call *cc) {
    const mf_node *n = cc->n;
    int64_t m = mf_attr_int(n, "num_scan_inputs", -1);
    size_t first = n->opset < 9 ? 1 : 0;
    if (m <= 0 || (size_t)m + first > cc->nin)
        return FAIL(cc, MINFER_ERR_MODEL, "num_scan_inputs %lld does not fit %zu inputs",
                    (long long)m, cc->nin);
    size_t n_state = cc->nin - first - (size_t)m;
    if (n->n_outputs < n_state)
        return FAIL(cc, MINFER_ERR_MODEL, "fewer outputs than state values");
    minfer_tensor tmps[MF_MAX_NODE_IO];
    const minfer_tensor *vals[MF_MAX_NODE_IO];
    if (cc->nin > MF_MAX_NODE_IO)
        return FAIL(cc, MINFER_ERR_LIMIT, "more than %d inputs", MF_MAX_NODE_IO);
    for (size_t j = first; j < cc->nin; j++) {
        if (!mf_cv_present(cc, j) || cc->in[j].kind != MINFER_VALUE_TENSOR)
            return FAIL(cc, MINFER_ERR_TYPE, "input %zu is not a tensor", j);
        vals[j] = mf_cv_handle(&cc->in[j], &tmps[j]);
    }
    const minfer_tensor *const *state = vals + first, *const *scan_in = vals + first + n_state;
    const int64_t *axes = NULL;
    size_t n_axes = mf_attr_ints(n, "scan_input_axes", &axes);
    if (n->opset >= 9) {
        int64_t len = -1;
        for (size_t j = 0; j < (size_t)m; j++) {
            int64_t axis = j < n_axes ? axes[j] : 0, r = scan_in[j]->view.rank;
            if (axis < -r || axis >= r)
                return FAIL(cc, MINFER_ERR_MODEL, "scan input %zu axis %lld is out of range", j,
                            (long long)axis);
            int64_t l = scan_in[j]->view.dims[axis < 0 ? axis + r : axis];
            if (len >= 0 && l != len)
                return FAIL(cc, MINFER_ERR_SHAPE, "scan inputs have %lld and %lld steps",
                            (long long)len, (long long)l);
            len = l;
        }
        return scan_once(cc, state, scan_in, n_state, (size_t)m, 0, len, cc->out);
    }
    /* opset 8: batch axis 0 on every state and scan input, time axis 1 */
    int64_t batch = -1, steps = -1;
    for (size_t j = first; j < cc->nin; j++) {
        const minfer_tensor_view *v = &vals[j]->view;
        if (v->rank < 1 + (j >= first + n_state) || (batch >= 0 && v->dims[0] != batch))
            return FAIL(cc, MINFER_ERR_SHAPE, "input %zu has no matching batch axis", j);
        batch = v->dims[0];
        if (j >= first + n_state) {
            if (steps >= 0 && v->dims[1] != steps)
                return FAIL(cc, MINFER_ERR_SHAPE, "scan inputs have different lengths");
            steps = v->dims[1];
        }
    }
    if (mf_cv_present(cc, 0)) {
        const minfer_tensor_view *lv = &cc->in[0];
        int64_t nl = 0;
        if (lv->dtype != MINFER_DTYPE_INT32 || mf_numel(lv->dims, lv->rank, &nl) != MINFER_OK ||
            nl != batch)
            return FAIL(cc, MINFER_ERR_TYPE, "sequence_lens must be int32 of the batch size");
    }
    size_t n_out = n->n_outputs;
    minfer_tensor **per = mf_calloc((size_t)batch * n_out + 1, sizeof *per);
    minfer_tensor **bstate = mf_calloc(n_state + (size_t)m + 1, sizeof *bstate);
    minfer_status st = MINFER_OK;
    if (!per || !bstate) {
        free(per);
        free(bstate);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", cc->s->errctx);
    }
    for (int64_t b = 0; b < batch && st == MINFER_OK; b++) {
        int64_t len = steps;
        if (mf_cv_present(cc, 0)) {
            len = ((const int32_t *)cc->in[0].data)[b];
            if (len < 0 || len > steps) {
                st = FAIL(cc, MINFER_ERR_RUNTIME, "sequence_lens[%lld] = %lld is out of range",
                          (long long)b, (long long)len);
                break;
            }
            if (len != steps) {
                st = FAIL(cc, MINFER_ERR_UNSUPPORTED,
                          "sequence_lens shorter than the scan inputs are not supported");
                break;
            }
        }
        for (size_t j = 0; j < n_state + (size_t)m && st == MINFER_OK; j++)
            st = mf_cv_take(vals[first + j], 0, b, 1, 0, &bstate[j]);
        if (st == MINFER_OK)
            st = scan_once(cc, (const minfer_tensor *const *)bstate,
                           (const minfer_tensor *const *)bstate + n_state, n_state, (size_t)m, 0,
                           len, per + (size_t)b * n_out);
        mf_cv_free_all(bstate, n_state + (size_t)m);
    }
    for (size_t o = 0; o < n_out && st == MINFER_OK; o++) {
        minfer_tensor **col = mf_malloc(((size_t)batch + 1) * sizeof *col);
        if (!col) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", cc->s->errctx);
            break;
        }
        for (int64_t b = 0; b < batch; b++)
            col[b] = per[(size_t)b * n_out + o];
        st = batch > 0 ? mf_cv_join(col, (size_t)batch, 0, 1, 0, cc->s->limits.max_tensor_bytes,
                              cc->lbl, &cc->out[o])
                       : FAIL(cc, MINFER_ERR_SHAPE, "an empty batch");
        free(col);
    }
    mf_cv_free_all(per, (size_t)batch * n_out);
    free(per);
    free(bstate);
    if (st != MINFER_OK)
        mf_cv_free_all(cc->out, n_out);
    return st;
}

/* SequenceMap: the body runs once per element of the first input; other
 * sequence inputs give their element at the same position, tensors are
 * passed whole. Each output is a sequence of the body's results. */
static minfer_status op_sequence_map(core_call *cc) {
    minfer_session *s = cc->s;
    const mf_node *n = cc->n;
    const minfer_tensor *seq0 = mf_cv_seq_in(cc, 0);
    minfer_status st = MINFER_OK;
    if (!seq0)
        return FAIL(cc, MINFER_ERR_TYPE, "input 0 is not a sequence");
    if (cc->nin > MF_MAX_NODE_IO || n->n_outputs > MF_MAX_NODE_IO)
        return FAIL(cc, MINFER_ERR_LIMIT, "more than %d inputs or outputs", MF_MAX_NODE_IO);
    minfer_tensor tmps[MF_MAX_NODE_IO];
    const minfer_tensor *bin[MF_MAX_NODE_IO];
    minfer_tensor *bout[MF_MAX_NODE_IO] = {0};
    for (size_t j = 1; j < cc->nin; j++) {
        const minfer_tensor *q = mf_cv_seq_in(cc, j);
        if (!mf_cv_present(cc, j))
            return FAIL(cc, MINFER_ERR_MODEL, "input %zu is missing", j);
        if (q && q->count != seq0->count)
            return FAIL(cc, MINFER_ERR_SHAPE, "input %zu has %zu elements, input 0 has %zu", j,
                        q->count, seq0->count);
    }
    const mf_graph *sg = s->subs[2 * cc->i].s->g;
    for (size_t o = 0; o < n->n_outputs; o++) {
        const mf_value *v = &sg->values[sg->outputs[o]];
        if ((st = mf_sequence_new(v->dtype ? v->dtype : MINFER_DTYPE_FLOAT, &cc->out[o])) != MINFER_OK)
            goto fail;
    }
    for (size_t e = 0; e < seq0->count; e++) {
        if ((st = mf_budget_iteration(cc->b, s, cc->i)) != MINFER_OK)
            goto fail;
        for (size_t j = 0; j < cc->nin; j++) {
            const minfer_tensor *q = mf_cv_seq_in(cc, j);
            bin[j] = q ? q->items[e] : mf_cv_handle(&cc->in[j], &tmps[j]);
        }
        if ((st = run_sub(s, cc->b, cc->lane, cc->i, 0, bin, cc->in, bout)) != MINFER_OK) {
            mf_error_prefix(st, "element %zu", e);
            goto fail;
        }
        for (size_t o = 0; o < n->n_outputs; o++) {
            minfer_tensor *seq = cc->out[o];
            if (bout[o]->view.kind != MINFER_VALUE_TENSOR) {
                st = FAIL(cc, MINFER_ERR_TYPE, "body output %zu is not a tensor", o);
                goto fail_body;
            }
            if (e == 0)
                seq->view.dtype = bout[o]->view.dtype;
            else if (bout[o]->view.dtype != seq->view.dtype) {
                st = FAIL(cc, MINFER_ERR_TYPE, "body output %zu changes type", o);
                goto fail_body;
            }
            if ((st = mf_sequence_push(seq, bout[o])) != MINFER_OK)
                goto fail_body;
            bout[o] = NULL;
        }
    }
    return MINFER_OK;
fail_body:
    mf_cv_free_all(bout, n->n_outputs);
fail:
    mf_cv_free_all(cc->out, n->n_outputs);
    return st;
}

minfer_status mf_core_exec(minfer_session *s, mf_budget *b, mf_lane *lane, int i,
                           const minfer_tensor_view *in, minfer_tensor **out) {
    core_call cc;
    cc.s = s;
    cc.b = b;
    cc.lane = lane;
    cc.i = i;
    cc.n = &s->g->nodes[i];
    cc.in = in;
    cc.nin = mf_core_formal_inputs(cc.n);
    cc.out = out;
    mf_node_label(cc.n, i, cc.lbl, sizeof cc.lbl);
    for (size_t o = 0; o < cc.n->n_outputs; o++)
        out[o] = NULL;
    const mf_node *n = cc.n;
    minfer_status st;
    if (n->domain[0])
        st = mf_core_op_grad_helper(&cc);
    else if (is_op(n, "If"))
        st = op_if(&cc);
    else if (is_op(n, "Loop"))
        st = op_loop(&cc);
    else if (is_op(n, "Scan"))
        st = op_scan(&cc);
    else if (is_op(n, "SequenceMap"))
        st = op_sequence_map(&cc);
    else if (strncmp(n->op_type, "Optional", 8) == 0 && !n->domain[0])
        st = mf_core_op_optional(&cc);
    else if (mf_core_op(n))
        st = mf_core_op_sequence(&cc);
    else if (is_op(n, "Identity") && cc.nin == 1 && mf_cv_present(&cc, 0)) {
        st = mf_cv_clone_view(&in[0], &out[0]);
        if (st != MINFER_OK)
            mf_error_prefix(st, "%s: %s", s->errctx, cc.lbl);
    } else
        st = FAIL(&cc, MINFER_ERR_UNSUPPORTED, "%s does not take sequences or optionals",
                  n->op_type);
    if (st != MINFER_OK)
        return st;
    for (size_t o = 0; o < n->n_outputs; o++)
        if (!out[o]) {
            mf_cv_free_all(out, n->n_outputs);
            return FAIL(&cc, MINFER_ERR_RUNTIME, "output %zu was not produced", o);
        }
    return MINFER_OK;
}
