/*
 * Data movement as oneDNN reorders: Transpose, Slice, and the reshapes
 * (Reshape, Flatten, Squeeze, Unsqueeze).
 *
 * These ops sit between the matrix products of a transformer's attention
 * block (split heads, merge heads). On the CPU provider each of them cost
 * two boundary copies besides its own pass (the oneDNN domain to the host
 * and back); here they stay in the oneDNN domain.
 *
 * Each reads its input as a strided view of the plain input buffer under
 * the output's dims and reorders that view into the plain output:
 *   Transpose  view strides = input strides permuted;
 *   Slice      view strides = input strides * steps, offset = starts;
 *   reshapes   view = the input's bytes under the output's dims, and the
 *              output may take the input's buffer (output_inplace), in
 *              which case the copy is skipped at execute.
 * An input that arrives in a blocked layout is first reordered to plain
 * (dnn_input). The output's shape is the host's (the index inputs of
 * Reshape, Squeeze and Unsqueeze are not read); Slice reads its constant
 * starts, ends, axes and steps to place the view, and declines otherwise.
 */
#include <string.h>

#include "onednn.h"

/* Plain strides of dims. */
static void plain_strides(int rank, const int64_t *dims, int64_t *s) {
    int64_t st = 1;
    for (int i = rank - 1; i >= 0; i--) {
        s[i] = st;
        st *= dims[i] > 0 ? dims[i] : 1;
    }
}

/* The output's dims as the host inferred them, all known (prepare), or
 * stand-ins in check mode; -1 when unknown at prepare. */
static int out_dims(dnn_b *b, int64_t *od) {
    const minfer_value_desc *y = &b->node->outputs[0];
    if (y->rank < 0 || y->rank > MINFER_MAX_RANK || y->rank > DNNL_MAX_NDIMS)
        return -1;
    for (int i = 0; i < y->rank; i++) {
        if (y->dims[i] < 0 && !b->check)
            return -1;
        od[i] = y->dims[i] < 0 ? 1 : y->dims[i];
    }
    return y->rank;
}

/* Adds the reorder view -> output (plain, dims od) and returns its step
 * index, or -1. view is a strided md over the memory of input 0 (plain). */
static int view_copy(dnn_b *b, const dnnl_memory_desc_t *view, int ro, const int64_t *od,
                     int *m_view, int *m_out) {
    dnnl_memory_desc_t x_plain, y_plain;
    const minfer_value_desc *x = dnn_in(b, 0);
    dnn_plain_md(&x_plain, x->rank, x->dims);
    dnn_plain_md(&y_plain, ro, od);
    int m_x = dnn_input(b, 0, &x_plain, NULL);
    if (m_x < 0)
        return -1;
    int v = dnn_mem_new(b, view, b->n->mems[m_x].bind, b->n->mems[m_x].index);
    if (v < 0)
        return -1;
    b->n->mems[v].off = b->n->mems[m_x].off;
    int m_y = dnn_output(b, 0, &y_plain);
    if (m_y < 0)
        return -1;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_status_t s = attr ? dnnl_reorder_primitive_desc_create(&pd, view, b->ctx->engine,
                                                                &y_plain, b->ctx->engine, attr)
                           : dnnl_out_of_memory;
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success) {
        dnn_fail(b, s, "reorder");
        return -1;
    }
    int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {v, m_y};
    if (dnn_step_add(b, pd, 2, args, mems) != MINFER_OK)
        return -1;
    *m_view = v;
    *m_out = m_y;
    return b->n->n_steps - 1;
}

/* Output = input 0's elements in order under dims od: a copy the host may
 * make unnecessary by giving the output the input's buffer. */
static minfer_status reshape_to(dnn_b *b, int ro, const int64_t *od) {
    const minfer_value_desc *x = dnn_in(b, 0);
    if (dnn_numel(ro, od) != dnn_numel(x->rank, x->dims))
        return dnn_decline(b, "output has another element count than the input");
    dnnl_memory_desc_t view;
    dnn_plain_md(&view, ro, od);
    int m_v, m_y;
    int k = view_copy(b, &view, ro, od, &m_v, &m_y);
    if (k < 0)
        return MINFER_ERR_UNSUPPORTED;
    b->n->steps[k].skip_src = m_v;
    b->n->steps[k].skip_dst = m_y;
    if (b->n->mems[m_v].bind == BIND_INPUT && b->n->mems[m_y].bind == BIND_OUTPUT)
        b->prep->output_inplace[0] = 0;
    return MINFER_OK;
}

minfer_status dnn_build_reshape(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    int64_t od[MINFER_MAX_RANK];
    int ro = out_dims(b, od);
    if (!x || x->rank < 0 || x->rank > DNNL_MAX_NDIMS)
        return dnn_decline(b, "needs an input of rank <= %d", DNNL_MAX_NDIMS);
    if (ro < 0)
        return dnn_decline(b, "output shape not known");
    return b->check ? MINFER_OK : reshape_to(b, ro, od);
}

minfer_status dnn_build_transpose(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    if (!x || x->rank < 1 || x->rank > DNNL_MAX_NDIMS)
        return dnn_decline(b, "needs an input of rank 1 to %d", DNNL_MAX_NDIMS);
    int r = x->rank;
    int64_t perm[MINFER_MAX_RANK];
    size_t np = 0;
    int got = dnn_attr_ints(b, "perm", perm, MINFER_MAX_RANK, &np);
    if (got < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (!got)
        for (int i = 0; i < r; i++)
            perm[i] = r - 1 - i;
    else if ((int)np != r)
        return dnn_decline(b, "perm has %zu entries for rank %d", np, r);
    int seen[MINFER_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]])
            return dnn_decline(b, "perm is not a permutation");
        seen[perm[i]] = 1;
    }
    int64_t od[MINFER_MAX_RANK], xs[MINFER_MAX_RANK];
    dnnl_dims_t vd, vs;
    plain_strides(r, x->dims, xs);
    for (int i = 0; i < r; i++) {
        od[i] = x->dims[perm[i]];
        vd[i] = od[i];
        vs[i] = xs[perm[i]];
    }
    minfer_status st = dnn_check_out(b, 0, r, od);
    if (st != MINFER_OK)
        return st;
    /* Moving only axes of size 1 keeps the order of the elements: a
     * reshape ([1, S, D] -> [S, 1, D] at batch 1). */
    int last = -1, reshape = 1;
    for (int i = 0; i < r && reshape; i++) {
        if (x->dims[perm[i]] == 1)
            continue;
        reshape = perm[i] > last;
        last = (int)perm[i];
    }
    if (reshape && !b->check)
        return reshape_to(b, r, od);
    dnnl_memory_desc_t view;
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&view, r, vd, dnnl_f32, vs);
    if (s != dnnl_success)
        return dnn_fail(b, s, "strided view");
    int m_v, m_y;
    return view_copy(b, &view, r, od, &m_v, &m_y) < 0 ? MINFER_ERR_UNSUPPORTED : MINFER_OK;
}

/* Reads constant int64 or int32 input i into v (at most cap values). */
static int const_ints(dnn_b *b, size_t i, int64_t *v, size_t cap, size_t *n) {
    const minfer_value_desc *d = dnn_in(b, i);
    *n = 0;
    if (!d)
        return 0;
    if (!d->const_data || d->rank != 1 || d->dims[0] < 0 || (size_t)d->dims[0] > cap)
        return -1;
    size_t k = (size_t)d->dims[0];
    if (d->dtype == MINFER_DTYPE_INT64 && d->const_nbytes >= k * 8) {
        memcpy(v, d->const_data, k * 8);
    } else if (d->dtype == MINFER_DTYPE_INT32 && d->const_nbytes >= k * 4) {
        const int32_t *p = d->const_data;
        for (size_t j = 0; j < k; j++)
            v[j] = p[j];
    } else {
        return -1;
    }
    *n = k;
    return 1;
}

/* Slice (opset 10+: starts, ends, axes, steps as inputs), positive steps. */
minfer_status dnn_build_slice(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    if (!x || x->rank < 1 || x->rank > DNNL_MAX_NDIMS)
        return dnn_decline(b, "needs an input of rank 1 to %d", DNNL_MAX_NDIMS);
    int r = x->rank;
    int64_t od[MINFER_MAX_RANK];
    int ro = out_dims(b, od);
    if (ro != r)
        return dnn_decline(b, "output rank not known");
    int64_t st_[MINFER_MAX_RANK], en[MINFER_MAX_RANK], ax[MINFER_MAX_RANK], sp[MINFER_MAX_RANK];
    size_t ns, ne, na, nsp;
    if (b->check) {
        /* Starts, ends and axes may become constants only per plan (a
         * Slice whose output shape depends on values known at run time is
         * run by a host provider); the steps must be positive constants
         * already, so that prepare cannot decline what was accepted. */
        if (const_ints(b, 4, sp, MINFER_MAX_RANK, &nsp) < 0)
            return dnn_decline(b, "steps must be constant");
        for (size_t k = 0; k < nsp; k++)
            if (sp[k] <= 0)
                return dnn_decline(b, "only positive steps");
        return MINFER_OK;
    }
    if (const_ints(b, 1, st_, MINFER_MAX_RANK, &ns) != 1 ||
        const_ints(b, 2, en, MINFER_MAX_RANK, &ne) != 1 ||
        const_ints(b, 3, ax, MINFER_MAX_RANK, &na) < 0 ||
        const_ints(b, 4, sp, MINFER_MAX_RANK, &nsp) < 0 || ns != ne ||
        (dnn_in(b, 3) && na != ns) || (dnn_in(b, 4) && nsp != ns))
        return dnn_decline(b, "starts, ends, axes and steps must be constant 1-D tensors");
    int64_t start[MINFER_MAX_RANK], step[MINFER_MAX_RANK];
    for (int d = 0; d < r; d++) {
        start[d] = 0;
        step[d] = 1;
    }
    int set[MINFER_MAX_RANK] = {0};
    for (size_t k = 0; k < ns; k++) {
        int d = dnn_axis(dnn_in(b, 3) ? ax[k] : (int64_t)k, r);
        if (d < 0 || set[d])
            return dnn_decline(b, "bad or repeated axis");
        set[d] = 1;
        int64_t s = dnn_in(b, 4) ? sp[k] : 1, n = x->dims[d];
        if (s <= 0)
            return dnn_decline(b, "only positive steps");
        int64_t a = st_[k] < 0 ? st_[k] + n : st_[k];
        int64_t e = en[k] < 0 ? en[k] + n : en[k];
        a = a < 0 ? 0 : a > n ? n : a;
        e = e < 0 ? 0 : e > n ? n : e;
        /* ceil((e - a) / s) without e - a + s overflowing for s near INT64_MAX */
        int64_t len = e > a ? (e - a - 1) / s + 1 : 0;
        if (len != od[d])
            return dnn_decline(b, "output shape differs from the slice's");
        start[d] = a;
        step[d] = len > 1 ? s : 1; /* one element: the step is never taken */
    }
    int64_t xs[MINFER_MAX_RANK], off = 0;
    dnnl_dims_t vd, vs;
    plain_strides(r, x->dims, xs);
    for (int d = 0; d < r; d++) {
        if (!set[d] && od[d] != x->dims[d])
            return dnn_decline(b, "output shape differs from the slice's");
        vd[d] = od[d];
        vs[d] = xs[d] * step[d];
        off += start[d] * xs[d];
    }
    if (dnn_numel(r, od) == 0)
        return MINFER_OK; /* nothing to copy (accepted in check mode too) */
    dnnl_memory_desc_t view;
    dnnl_status_t s = dnnl_memory_desc_init_by_strides(&view, r, vd, dnnl_f32, vs);
    if (s != dnnl_success)
        return dnn_fail(b, s, "strided view");
    view.offset0 = off;
    int m_v, m_y;
    return view_copy(b, &view, r, od, &m_v, &m_y) < 0 ? MINFER_ERR_UNSUPPORTED : MINFER_OK;
}
