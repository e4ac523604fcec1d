/*
 * Data movement and reductions: the reshape family (Reshape, Flatten,
 * Squeeze, Unsqueeze, Identity, Dropout at inference), Transpose, Concat,
 * Gather, and ReduceSum / ReduceMean / ReduceMax.
 *
 * The reshape family moves no data: its output may take the input's buffer
 * (output_inplace), and when the planner gives it a separate one the bytes
 * are copied within the device. Concat is one kernel launch (concat_all)
 * when its inputs lie in one buffer (the arena, or only constants), else
 * one copy kernel per input (clEnqueueCopyBufferRect returned
 * CL_INVALID_VALUE on PoCL 3.1 for squeezenet's Concats, and a kernel is
 * as fast).
 */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

/* ---- Reshape family -------------------------------------------------------- */

minfer_status ocl_prepare_reshape(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = ocl_in_desc(n, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    if (ocl_dtype_size(x->dtype) == 0)
        return ocl_decline(p, "element type %s not supported", minfer_elem_name(x->dtype));
    if (strcmp(n->op_type, "Dropout") == 0 && n->n_outputs > 1 && n->outputs[1].name &&
        n->outputs[1].name[0])
        return ocl_decline(p, "mask output not supported");
    if (strcmp(n->op_type, "Dropout") == 0 && n->n_inputs > 2 && n->inputs[2].present &&
        !n->inputs[2].const_data)
        return ocl_decline(p, "training_mode must be constant");
    if (n->n_inputs > 2 && strcmp(n->op_type, "Dropout") == 0 && n->inputs[2].const_data &&
        *(const uint8_t *)n->inputs[2].const_data)
        return ocl_decline(p, "training mode not supported");
    /* The output shape must be known when the plan is made: a target shape
     * or axes computed from the input shapes is folded into a constant of
     * the plan (ocl_param_later); one computed from tensor contents makes
     * this a dynamic node, which the core runs on a host provider. */
    int shape_input = strcmp(n->op_type, "Reshape") == 0 ||
                      ((strcmp(n->op_type, "Squeeze") == 0 ||
                        strcmp(n->op_type, "Unsqueeze") == 0) && p->since >= 13);
    const minfer_value_desc *sd = ocl_in_desc(n, 1);
    if (shape_input && sd && !sd->const_data && !ocl_param_later(p, 1))
        return ocl_decline(p, "%s must be a constant", p->node->op_type[0] == 'R' ? "shape"
                                                                                  : "axes");
    minfer_status s = ocl_check_size(p, x);
    if (s)
        return s;
    if (!ocl_state(p, sizeof(ocl_state_head)))
        return MINFER_ERR_NOMEM;
    if (p->prep)
        p->prep->output_inplace[0] = 0;
    return MINFER_OK;
}

minfer_status ocl_execute_reshape(const ocl_exec *e) {
    const minfer_tensor_view *x = ocl_input(e, 0);
    minfer_tensor_view *y = &e->args->outputs[0];
    if (!x)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (y->rank < 0)
        return ocl_fail(e, MINFER_ERR_UNSUPPORTED, "output shape unknown before the run");
    size_t es = ocl_esize(e->ctx, x->dtype);
    size_t bytes = (size_t)ocl_numel(x->rank, x->dims) * es;
    if ((size_t)ocl_numel(y->rank, y->dims) * es != bytes)
        return ocl_fail(e, MINFER_ERR_SHAPE, "output has another element count");
    if (bytes > y->nbytes)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "output holds %zu bytes, %zu needed",
                        y->nbytes, bytes);
    return ocl_copy(e, (cl_mem)x->data, x->offset, (cl_mem)y->data, y->offset, bytes);
}

/* ---- Transpose ------------------------------------------------------------- */

typedef struct transpose_state {
    ocl_state_head head;
    size_t n_perm;
    int64_t perm[OCL_MAX_RANK];
} transpose_state;

minfer_status ocl_prepare_transpose(ocl_prep *p) {
    const minfer_value_desc *x = ocl_in_desc(p->node, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    minfer_status s;
    if ((s = ocl_need_float(p, 0)) || (s = ocl_check_size(p, x)))
        return s;
    transpose_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    if (ocl_attr_ints(p, "perm", st->perm, OCL_MAX_RANK, &st->n_perm) < 0)
        return MINFER_ERR_UNSUPPORTED;
    return MINFER_OK;
}

minfer_status ocl_execute_transpose(const ocl_exec *e) {
    const transpose_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int r = x->rank;
    int64_t perm[OCL_MAX_RANK], od[OCL_MAX_RANK], stride[OCL_MAX_RANK];
    if (st->n_perm && st->n_perm != (size_t)r)
        return ocl_fail(e, MINFER_ERR_SHAPE, "perm has %zu entries for rank %d", st->n_perm, r);
    int seen[OCL_MAX_RANK] = {0};
    for (int i = 0; i < r; i++) {
        perm[i] = st->n_perm ? st->perm[i] : r - 1 - i;
        if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]++)
            return ocl_fail(e, MINFER_ERR_SHAPE, "perm is not a permutation");
    }
    int64_t acc = 1;
    for (int i = r - 1; i >= 0; i--) {
        stride[i] = acc;
        /* Saturating: only an empty input ([0, 2^40, 2^40]) overflows,
         * and nothing of it is copied. */
        if (minfer_i64_mul(acc, x->dims[i], &acc) != MINFER_OK)
            acc = INT64_MAX;
    }
    ocl_shape8 sh;
    memset(&sh, 0, sizeof sh);
    sh.rank = r ? r : 1;
    sh.d[0] = 1;
    for (int i = 0; i < r; i++) {
        od[i] = x->dims[perm[i]];
        sh.d[i] = (cl_int)od[i];
        sh.sa[i] = (cl_int)stride[perm[i]];
    }
    cl_mem xb, yb;
    cl_int xo, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    minfer_status s = ocl_output(e, 0, r, od, &yb, &yo);
    if (s)
        return s;
    int64_t n = ocl_numel(r, od);
    if (n == 0)
        return MINFER_OK;
    if ((s = ocl_set_args(e, OCL_K_strided_copy, 5, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(yb),
                          OCL_ARG(yo), OCL_ARG(sh))))
        return s;
    size_t inner = (size_t)sh.d[sh.rank - 1];
    size_t g[2] = {inner, (size_t)n / inner};
    return ocl_launch(e, OCL_K_strided_copy, 2, g, 0);
}

/* ---- Concat ------------------------------------------------------------------ */

/* Constant inputs (a ViT's class token beside its patch embeddings) are
 * uploaded at prepare, packed one after another in head.bufs[0]; head.host
 * holds each input's element offset there, or -1 for an input that arrives
 * on the device at run time. */
typedef struct concat_state {
    ocl_state_head head; /* FusedConcat: bufs[1] scale, bufs[2] shift */
    int64_t axis;
    int first; /* the first input concatenated: 0, or 2 for FusedConcat */
    int affine, act; /* FusedConcat: C channels, its activation */
    int64_t C;
    float a, b;
} concat_state;

/* Packs the constant inputs of p's node into one block of device elements
 * (half for float32 when the instance stores half) and uploads it. */
static minfer_status upload_concat_consts(ocl_prep *p, concat_state *st) {
    const minfer_node_desc *n = p->node;
    int64_t *off = calloc(n->n_inputs, sizeof *off);
    if (!off)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory for node state");
    st->head.host = off;
    size_t total = 0, es = ocl_esize(p->ctx, n->inputs[st->first].dtype);
    for (size_t i = 0; i < n->n_inputs; i++) {
        const minfer_value_desc *d = ocl_in_desc(n, i);
        off[i] = d->const_data && i >= (size_t)st->first ? (int64_t)total : -1;
        if (off[i] < 0)
            continue;
        total += d->const_nbytes / ocl_dtype_size(d->dtype);
    }
    if (total == 0)
        return MINFER_OK;
    if (total > (size_t)INT32_MAX)
        return ocl_prep_fail(p, MINFER_ERR_LIMIT, "%zu constant elements exceed the kernels' "
                             "32-bit offsets", total);
    char *block = malloc(total * es);
    if (!block)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory packing constant inputs");
    for (size_t i = 0; i < n->n_inputs; i++) {
        const minfer_value_desc *d = ocl_in_desc(n, i);
        if (off[i] < 0)
            continue;
        size_t count = d->const_nbytes / ocl_dtype_size(d->dtype);
        char *dst = block + (size_t)off[i] * es;
        if (es == ocl_dtype_size(d->dtype)) {
            memcpy(dst, d->const_data, count * es);
        } else { /* float32 stored as half */
            const float *src = d->const_data;
            for (size_t k = 0; k < count; k++)
                ((uint16_t *)dst)[k] = ocl_f2h(src[k]);
        }
    }
    minfer_status s = ocl_upload(p, 0, block, total * es);
    free(block);
    return s;
}

static minfer_status prepare_concat_like(ocl_prep *p, int first) {
    const minfer_node_desc *n = p->node;
    if (n->n_inputs < (size_t)first + 1)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs inputs");
    for (size_t i = (size_t)first; i < n->n_inputs; i++) {
        const minfer_value_desc *d = ocl_in_desc(n, i);
        if (!d)
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "input %zu missing", i);
        size_t es = ocl_esize(p->ctx, d->dtype);
        if ((es != 2 && es != 4) || d->dtype != n->inputs[first].dtype)
            return ocl_decline(p, "element types differ or are not 2 or 4 bytes wide");
        minfer_status s = ocl_check_size(p, d);
        if (s)
            return s;
    }
    concat_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->first = first;
    if (!p->ctx->api->attr_int(p->node, "axis", &st->axis))
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "axis is required");
    return upload_concat_consts(p, st);
}

minfer_status ocl_prepare_concat(ocl_prep *p) { return prepare_concat_like(p, 0); }

/* minfer:FusedConcat(scale, B, X...): Concat over axis 1 with every
 * channel c then x * scale[c] + B[c] and the activation (fuse_concat,
 * docs/fused-ops.md), written in the copy's one pass. */
minfer_status ocl_prepare_fused_concat(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *w = ocl_in_desc(n, 0), *b = ocl_in_desc(n, 1);
    if (n->n_inputs < 3 || !w)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs scale and at least one input");
    minfer_status s = prepare_concat_like(p, 2);
    if (s)
        return s;
    concat_state *st = p->state;
    if (st->axis != 1)
        return ocl_decline(p, "axis %lld (only 1)", (long long)st->axis);
    for (size_t i = 2; i < n->n_inputs; i++)
        if (n->inputs[i].dtype != MINFER_DTYPE_FLOAT)
            return ocl_decline(p, "inputs must be float");
    if (w->dtype != MINFER_DTYPE_FLOAT || !w->const_data || (b && (b->dtype != MINFER_DTYPE_FLOAT ||
                                                                   !b->const_data)))
        return ocl_decline(p, "scale and B must be float constants");
    size_t C = w->const_nbytes / sizeof(float);
    if (C == 0 || C > (size_t)INT32_MAX || (b && b->const_nbytes != C * sizeof(float)))
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "scale has %zu elements, B %zu bytes", C,
                             b ? b->const_nbytes : 0);
    st->affine = 1;
    st->C = (int64_t)C;
    if ((s = ocl_parse_activation(p, &st->act, &st->a, &st->b)))
        return s;
    if (!p->prep)
        return MINFER_OK;
    if ((s = ocl_upload_floats(p, 1, w->const_data, C)))
        return s;
    if (b)
        return ocl_upload_floats(p, 2, b->const_data, C);
    float *zero = calloc(C, sizeof *zero);
    if (!zero)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory for node state");
    s = ocl_upload_floats(p, 2, zero, C);
    free(zero);
    return s;
}

/* The concat8 struct of kernels/data.cl (passed by value). */
#define OCL_CONCAT_MAX 32 /* CONCAT_MAX */
typedef struct ocl_concat8 {
    cl_int n;
    cl_int off[OCL_CONCAT_MAX], row[OCL_CONCAT_MAX], col[OCL_CONCAT_MAX];
} ocl_concat8;

/* Where data input i (an input index of the node) lies: the state's
 * block for a constant, else its view. */
static void concat_src(const ocl_exec *e, const concat_state *st, size_t i, cl_mem *xb,
                       cl_int *xo) {
    const int64_t *const_off = st->head.host;
    if (const_off && const_off[i] >= 0) {
        *xb = st->head.bufs[0];
        *xo = (cl_int)const_off[i];
    } else {
        ocl_in_buf(e, i, -1, xb, xo);
    }
}

/* Launches concat_all / concat_affine over the inputs in c, all in xb. */
static minfer_status concat_launch(const ocl_exec *e, const concat_state *st, int half,
                                   cl_mem xb, const ocl_concat8 *c, cl_mem yb, cl_int yo,
                                   cl_int row_out, cl_int inner, size_t outer) {
    minfer_status s;
    int k;
    if (st->affine) {
        k = OCL_K_concat_affine;
        s = ocl_set_args(e, k, 11, OCL_ARG(xb), OCL_ARG(*c), OCL_ARG(st->head.bufs[1]),
                         OCL_ARG(st->head.bufs[2]), OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(row_out),
                         OCL_ARG(inner), OCL_ARG(st->act), OCL_ARG(st->a), OCL_ARG(st->b));
    } else {
        k = half ? OCL_K_concat_all16 : OCL_K_concat_all;
        s = ocl_set_args(e, k, 5, OCL_ARG(xb), OCL_ARG(*c), OCL_ARG(yb), OCL_ARG(yo),
                         OCL_ARG(row_out));
    }
    if (s)
        return s;
    size_t longest = 0;
    for (int j = 0; j < c->n; j++)
        longest = (size_t)c->row[j] > longest ? (size_t)c->row[j] : longest;
    size_t g[3] = {longest, outer, (size_t)c->n};
    return ocl_launch(e, k, 3, g, 0);
}

minfer_status ocl_execute_concat(const ocl_exec *e) {
    const concat_state *st = e->state;
    size_t first = (size_t)st->first, n_in = e->args->n_inputs;
    const minfer_tensor_view *x0 = ocl_input(e, first);
    if (!x0)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int r = x0->rank;
    int64_t axis = st->axis < 0 ? st->axis + r : st->axis;
    if (axis < 0 || axis >= r)
        return ocl_fail(e, MINFER_ERR_SHAPE, "axis out of range");
    int64_t od[OCL_MAX_RANK];
    memcpy(od, x0->dims, sizeof(int64_t) * (size_t)r);
    od[axis] = 0;
    for (size_t i = first; i < n_in; i++) {
        const minfer_tensor_view *x = ocl_input(e, i);
        if (!x || x->rank != r)
            return ocl_fail(e, MINFER_ERR_SHAPE, "input %zu has another rank", i);
        for (int d = 0; d < r; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return ocl_fail(e, MINFER_ERR_SHAPE, "input %zu differs off the axis", i);
        od[axis] += x->dims[axis];
    }
    if (st->affine && od[axis] != st->C)
        return ocl_fail(e, MINFER_ERR_SHAPE, "%lld channels concatenated, scale has %lld",
                        (long long)od[axis], (long long)st->C);
    cl_mem yb;
    cl_int yo;
    minfer_status s = ocl_output(e, 0, r, od, &yb, &yo);
    if (s)
        return s;
    size_t outer = (size_t)ocl_numel((int32_t)axis, od);
    size_t inner = (size_t)ocl_numel(r - (int32_t)axis - 1, od + axis + 1);
    cl_int row_out = (cl_int)((size_t)od[axis] * inner), pos = 0;
    int half = ocl_esize(e->ctx, x0->dtype) == 2;
    if (!outer || !row_out)
        return MINFER_OK;
    /* One launch when every input with elements lies in one buffer. */
    ocl_concat8 all = {0};
    cl_mem ab = NULL;
    int one = n_in - first <= OCL_CONCAT_MAX;
    for (size_t i = first; one && i < n_in; i++) {
        const minfer_tensor_view *x = ocl_input(e, i);
        cl_int row = (cl_int)((size_t)x->dims[axis] * inner), xo;
        cl_mem xb;
        if (!row)
            continue;
        concat_src(e, st, i, &xb, &xo);
        one = !ab || ab == xb;
        ab = xb;
        all.off[all.n] = xo;
        all.row[all.n] = row;
        all.col[all.n] = all.n ? all.col[all.n - 1] + all.row[all.n - 1] : 0;
        all.n++;
    }
    if (one)
        return all.n ? concat_launch(e, st, half, ab, &all, yb, yo, row_out, (cl_int)inner,
                                     outer)
                     : MINFER_OK;
    /* Else one launch per input (the same kernel over one input). */
    for (size_t i = first; i < n_in; i++) {
        const minfer_tensor_view *x = ocl_input(e, i);
        cl_int row = (cl_int)((size_t)x->dims[axis] * inner), xo;
        cl_mem xb;
        concat_src(e, st, i, &xb, &xo);
        if (row) {
            ocl_concat8 one_in = {.n = 1, .off = {xo}, .row = {row}, .col = {pos}};
            if ((s = concat_launch(e, st, half, xb, &one_in, yb, yo, row_out, (cl_int)inner,
                                   outer)))
                return s;
        }
        pos += row;
    }
    return MINFER_OK;
}

minfer_status ocl_execute_fused_concat(const ocl_exec *e) { return ocl_execute_concat(e); }

/* ---- Gather -------------------------------------------------------------------- */

/* An index out of range fails the run with the node, the index and its
 * position, as the CPU provider does. Constant indices are checked on the
 * host from a copy kept in the state. Indices known only at run time
 * that no command can have written since the host gave them (an embedding
 * lookup on a graph input as a run's first device node) are checked on the
 * host before the launch: from the staged copy of their upload on a device
 * with its own memory, else read back while nothing is queued (a transfer,
 * not a wait for device work). Others are checked on the device:
 * the kernel lowers a flag in the node's workspace (4 bytes, filled with
 * INT_MAX before the launch) to the first bad position, and execute reads
 * it back, blocking. That read is the one place where this provider waits
 * for device work inside execute_node; it is confined to Gathers whose
 * indices the device computes, and it is per run, since the workspace
 * belongs to the run. */

/* Host checks read at most this many bytes of indices; larger index
 * tensors are checked on the device. */
#define GATHER_HOST_CHECK_BYTES (1u << 20)

typedef struct gather_state {
    ocl_state_head head; /* bufs[0]: constant indices; host: them as int64 */
    int64_t axis;
    size_t n_const; /* entries in head.host */
} gather_state;

minfer_status ocl_prepare_gather(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = ocl_in_desc(n, 0), *idx = ocl_in_desc(n, 1);
    if (!x || !idx)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs data and indices");
    size_t es = ocl_esize(p->ctx, x->dtype);
    if (es != 2 && es != 4)
        return ocl_decline(p, "only 2- and 4-byte element types");
    if (idx->dtype != MINFER_DTYPE_INT64 && idx->dtype != MINFER_DTYPE_INT32)
        return ocl_decline(p, "indices must be int32 or int64");
    minfer_status s;
    if ((s = ocl_check_size(p, x)) || (s = ocl_check_size(p, &n->outputs[0])))
        return s;
    gather_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = ocl_attr_int(p, "axis", 0);
    if (!p->prep)
        return MINFER_OK;
    if (!idx->const_data) {
        p->prep->workspace_bytes = sizeof(cl_int); /* the out-of-range flag */
        return MINFER_OK;
    }
    size_t isz = idx->dtype == MINFER_DTYPE_INT64 ? 8 : 4, cnt = idx->const_nbytes / isz;
    int64_t *h = malloc(cnt ? cnt * sizeof *h : 1);
    if (!h)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory for the indices");
    for (size_t i = 0; i < cnt; i++) {
        if (isz == 8) {
            memcpy(&h[i], (const char *)idx->const_data + i * 8, 8);
        } else {
            int32_t v;
            memcpy(&v, (const char *)idx->const_data + i * 4, 4);
            h[i] = v;
        }
    }
    st->head.host = h;
    st->n_const = cnt;
    return ocl_upload(p, 0, idx->const_data, idx->const_nbytes);
}

static minfer_status out_of_range(const ocl_exec *e, int64_t value, int64_t pos, int64_t axis,
                                  int64_t dim) {
    return ocl_fail(e, MINFER_ERR_RUNTIME, "index %lld (element %lld of the indices) is out of "
                    "range for axis %lld of size %lld (valid: %lld to %lld)", (long long)value,
                    (long long)pos, (long long)axis, (long long)dim, (long long)-dim,
                    (long long)(dim - 1));
}

minfer_status ocl_execute_gather(const ocl_exec *e) {
    const gather_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0), *idx = ocl_input(e, 1);
    if (!x || !idx)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int64_t axis = st->axis < 0 ? st->axis + x->rank : st->axis;
    if (axis < 0 || axis >= x->rank || x->rank + idx->rank - 1 > OCL_MAX_RANK)
        return ocl_fail(e, MINFER_ERR_SHAPE, "axis out of range");
    int64_t od[OCL_MAX_RANK];
    int r = 0;
    for (int i = 0; i < axis; i++)
        od[r++] = x->dims[i];
    for (int i = 0; i < idx->rank; i++)
        od[r++] = idx->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        od[r++] = x->dims[i];
    cl_mem xb, ib, yb;
    cl_int xo, io, yo, is64 = idx->dtype == MINFER_DTYPE_INT64;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    ocl_in_buf(e, 1, 0, &ib, &io);
    minfer_status s = ocl_output(e, 0, r, od, &yb, &yo);
    if (s)
        return s;
    int64_t nidx64 = ocl_numel(idx->rank, idx->dims), ad = x->dims[axis];
    int check = st->head.bufs[0] == NULL;
    size_t isz = is64 ? 8 : 4;
    size_t ibytes = (size_t)nidx64 * isz;
    void *raw = NULL;
    if (check && nidx64 > 0 && ibytes <= GATHER_HOST_CHECK_BYTES) {
        if (!(raw = malloc(ibytes)))
            return ocl_fail(e, MINFER_ERR_NOMEM, "out of memory for the index check");
        if (!ocl_staged_read(e->ctx, ib, (size_t)io * isz, ibytes, raw)) {
            if (atomic_load(&e->ctx->pending)) {
                free(raw); /* queued commands may be writing them */
                raw = NULL;
            } else {
                /* nothing queued: the read waits for its own bytes only */
                ocl_count_wait(e->ctx);
                ocl_count_transfer(e->ctx);
                cl_int err = clEnqueueReadBuffer(e->ctx->queue, ib, CL_TRUE, (size_t)io * isz,
                                                 ibytes, raw, 0, NULL, NULL);
                if (err != CL_SUCCESS) {
                    free(raw);
                    return ocl_fail(e, MINFER_ERR_PROVIDER, "reading the indices: %s",
                                    ocl_err_str(err));
                }
            }
        }
    }
    if (raw) {
        /* The indices as the host gave them (an upload still staged, with
         * no command since) or as the device holds them with nothing
         * queued: checked here, and the kernel runs without the flag. */
        for (int64_t j = 0; j < nidx64; j++) {
            int64_t v;
            if (is64) {
                memcpy(&v, (const char *)raw + (size_t)j * 8, 8);
            } else {
                int32_t v32;
                memcpy(&v32, (const char *)raw + (size_t)j * 4, 4);
                v = v32;
            }
            if (v < -ad || v >= ad) {
                free(raw);
                return out_of_range(e, v, j, axis, ad);
            }
        }
        free(raw);
        check = 0;
    } else if (!check) {
        const int64_t *h = st->head.host;
        if ((size_t)nidx64 != st->n_const)
            return ocl_fail(e, MINFER_ERR_SHAPE, "indices changed size");
        for (int64_t j = 0; j < nidx64; j++)
            if (h[j] < -ad || h[j] >= ad)
                return out_of_range(e, h[j], j, axis, ad);
    }
    cl_int nidx = (cl_int)nidx64, adi = (cl_int)ad,
           inner = (cl_int)ocl_numel(x->rank - (int32_t)axis - 1, x->dims + axis + 1);
    size_t outer = (size_t)ocl_numel((int32_t)axis, x->dims);
    if (!nidx || !inner || !outer)
        return MINFER_OK;
    cl_mem wb = yb;
    cl_int wo = 0, chk = check;
    if (check) {
        if (!e->args->workspace || e->args->workspace_bytes < sizeof(cl_int) ||
            e->args->workspace_offset % sizeof(cl_int))
            return ocl_fail(e, MINFER_ERR_RUNTIME, "no workspace for the index check");
        wb = (cl_mem)e->args->workspace;
        wo = (cl_int)(e->args->workspace_offset / sizeof(cl_int));
        const cl_int none = INT32_MAX;
        if ((s = ocl_fill(e, wb, e->args->workspace_offset, &none, sizeof none, sizeof none)))
            return s;
    }
    int k = ocl_esize(e->ctx, x->dtype) == 2 ? OCL_K_gather16 : OCL_K_gather;
    if ((s = ocl_set_args(e, k, 13, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(ib), OCL_ARG(io),
                          OCL_ARG(is64), OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(nidx), OCL_ARG(adi),
                          OCL_ARG(inner), OCL_ARG(wb), OCL_ARG(wo), OCL_ARG(chk))))
        return s;
    size_t g[3] = {(size_t)inner, (size_t)nidx, outer};
    if ((s = ocl_launch(e, k, 3, g, 0)) || !check)
        return s;
    cl_int bad = INT32_MAX;
    /* The one wait inside a run: an index out of range must fail this run. */
    ocl_count_wait(e->ctx);
    cl_int err = clEnqueueReadBuffer(e->ctx->queue, wb, CL_TRUE, e->args->workspace_offset,
                                     sizeof bad, &bad, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(e, MINFER_ERR_PROVIDER, "reading the index check: %s",
                        ocl_err_str(err));
    if (bad == INT32_MAX)
        return MINFER_OK;
    if (bad < 0 || bad >= nidx)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "index check returned position %d", (int)bad);
    int64_t value = 0;
    unsigned char one[8] = {0};
    err = clEnqueueReadBuffer(e->ctx->queue, ib, CL_TRUE, ((size_t)io + (size_t)bad) * isz, isz,
                              one, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "index at element %d of the indices is out of "
                        "range for axis %lld of size %lld", (int)bad, (long long)axis,
                        (long long)ad);
    if (is64) {
        memcpy(&value, one, 8);
    } else {
        int32_t v32;
        memcpy(&v32, one, 4);
        value = v32;
    }
    return out_of_range(e, value, bad, axis, ad);
}

/* ---- ReduceSum / ReduceMean / ReduceMax ------------------------------------------- */

typedef struct reduce_state {
    ocl_state_head head;
    int op; /* 0 sum, 1 mean, 2 max */
    int keepdims, noop;
    size_t n_axes;
    int64_t axes[OCL_MAX_RANK];
} reduce_state;

minfer_status ocl_prepare_reduce(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = ocl_in_desc(n, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    minfer_status s;
    if ((s = ocl_need_float(p, 0)) || (s = ocl_check_size(p, x)))
        return s;
    reduce_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->op = strcmp(n->op_type, "ReduceSum") == 0 ? 0 : strcmp(n->op_type, "ReduceMean") == 0
                                                            ? 1 : 2;
    st->keepdims = ocl_attr_int(p, "keepdims", 1) != 0;
    st->noop = ocl_attr_int(p, "noop_with_empty_axes", 0) != 0;
    int axes_input = st->op == 0 ? p->since >= 13 : p->since >= 18;
    int r;
    if (axes_input) {
        const minfer_value_desc *ad = ocl_in_desc(n, 1);
        if (ad && !ad->const_data && !ocl_param_later(p, 1))
            return ocl_decline(p, "axes must be a constant");
        r = ocl_param_later(p, 1) ? 1 : ocl_const_ints(p, 1, st->axes, OCL_MAX_RANK, &st->n_axes);
    } else {
        r = ocl_attr_ints(p, "axes", st->axes, OCL_MAX_RANK, &st->n_axes);
    }
    return r < 0 ? MINFER_ERR_UNSUPPORTED : MINFER_OK;
}

minfer_status ocl_execute_reduce(const ocl_exec *e) {
    const reduce_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int r = x->rank, red[OCL_MAX_RANK] = {0};
    cl_mem xb, yb;
    cl_int xo, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    if (st->n_axes == 0 && st->noop) {
        minfer_status s = ocl_output(e, 0, r, x->dims, &yb, &yo);
        size_t es = ocl_esize(e->ctx, x->dtype);
        return s ? s : ocl_copy(e, xb, (size_t)xo * es, yb, (size_t)yo * es,
                                (size_t)ocl_numel(r, x->dims) * es);
    }
    for (size_t i = 0; i < st->n_axes; i++) {
        int64_t a = st->axes[i] < 0 ? st->axes[i] + r : st->axes[i];
        if (a < 0 || a >= r)
            return ocl_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range",
                            (long long)st->axes[i]);
        red[a] = 1;
    }
    if (st->n_axes == 0)
        for (int i = 0; i < r; i++)
            red[i] = 1;
    ocl_shape8 kept, rs;
    memset(&kept, 0, sizeof kept);
    memset(&rs, 0, sizeof rs);
    int64_t od[OCL_MAX_RANK], stride = 1, strides[OCL_MAX_RANK], rcount = 1;
    for (int i = r - 1; i >= 0; i--) {
        strides[i] = stride;
        stride *= x->dims[i];
    }
    int orank = 0;
    for (int i = 0; i < r; i++) {
        if (red[i]) {
            rs.d[rs.rank] = (cl_int)x->dims[i];
            rs.sa[rs.rank++] = (cl_int)strides[i];
            rcount *= x->dims[i];
            if (st->keepdims)
                od[orank++] = 1;
        } else {
            kept.d[kept.rank] = (cl_int)x->dims[i];
            kept.sa[kept.rank++] = (cl_int)strides[i];
            od[orank++] = x->dims[i];
        }
    }
    minfer_status s = ocl_output(e, 0, orank, od, &yb, &yo);
    if (s)
        return s;
    cl_int nout = (cl_int)ocl_numel(orank, od), op = st->op, rc = (cl_int)rcount;
    if (nout == 0)
        return MINFER_OK;
    if ((s = ocl_set_args(e, OCL_K_reduce, 9, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(yb),
                          OCL_ARG(yo), OCL_ARG(nout), OCL_ARG(op), OCL_ARG(kept), OCL_ARG(rs),
                          OCL_ARG(rc))))
        return s;
    return ocl_launch1(e, OCL_K_reduce, (size_t)nout);
}
