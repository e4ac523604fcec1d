/*
 * Softmax / LogSoftmax (one row per work-item, any axis through a stride)
 * and LayerNormalization (ONNX opset 17 and minfer's, over the trailing
 * axes from axis on).
 */
#include <string.h>

#include "ocl.h"

typedef struct softmax_state {
    ocl_state_head head;
    int64_t axis;
    int coerce_2d;
    int log;
} softmax_state;

minfer_status ocl_prepare_softmax(ocl_prep *p) {
    const minfer_value_desc *x = ocl_in_desc(p->node, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    minfer_status s;
    if ((s = ocl_need_float(p, 0)) || (s = ocl_check_size(p, x)))
        return s;
    softmax_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->coerce_2d = p->since < 13;
    st->axis = ocl_attr_int(p, "axis", st->coerce_2d ? 1 : -1);
    st->log = strcmp(p->node->op_type, "LogSoftmax") == 0;
    return MINFER_OK;
}

minfer_status ocl_execute_softmax(const ocl_exec *e) {
    const softmax_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int64_t axis = st->axis < 0 ? st->axis + x->rank : st->axis;
    if (axis < 0 || axis >= (x->rank ? x->rank : 1))
        return ocl_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range", (long long)st->axis);
    cl_mem xb, yb;
    cl_int xo, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    minfer_status s = ocl_output(e, 0, x->rank, x->dims, &yb, &yo);
    if (s)
        return s;
    int64_t outer = ocl_numel((int32_t)axis, x->dims), len, inner;
    if (st->coerce_2d) {
        len = ocl_numel(x->rank - (int32_t)axis, x->dims + axis);
        inner = 1;
    } else {
        len = x->rank ? x->dims[axis] : 1;
        inner = ocl_numel(x->rank - (int32_t)axis - 1, x->dims + axis + 1);
    }
    cl_int rows = (cl_int)(outer * inner), leni = (cl_int)len, inneri = (cl_int)inner,
           lg = st->log;
    if (rows == 0 || len == 0)
        return MINFER_OK;
    if ((s = ocl_set_args(e, OCL_K_softmax, 8, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(yb),
                          OCL_ARG(yo), OCL_ARG(rows), OCL_ARG(leni), OCL_ARG(inneri),
                          OCL_ARG(lg))))
        return s;
    return ocl_launch1(e, OCL_K_softmax, (size_t)rows);
}

typedef struct ln_state {
    ocl_state_head head; /* bufs[0]: scale, bufs[1]: bias, when constant */
    int64_t axis;
    float eps;
} ln_state;

minfer_status ocl_prepare_layernorm(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = ocl_in_desc(n, 0), *sc = ocl_in_desc(n, 1),
                            *b = ocl_in_desc(n, 2);
    if (!x || !sc)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs X and Scale");
    minfer_status s;
    for (size_t i = 0; i < 3; i++)
        if ((s = ocl_need_float(p, i)) || (s = ocl_check_size(p, ocl_in_desc(n, i))))
            return s;
    for (size_t i = 1; i < n->n_outputs; i++)
        if (n->outputs[i].name && n->outputs[i].name[0])
            return ocl_decline(p, "Mean and InvStdDev outputs not supported");
    ln_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = ocl_attr_int(p, "axis", -1);
    st->eps = ocl_attr_float(p, "epsilon", 1e-5f);
    if (ocl_attr_int(p, "stash_type", 1) != 1)
        return ocl_decline(p, "stash_type other than float not supported");
    if (x->rank >= 0) {
        int64_t axis = st->axis < 0 ? st->axis + x->rank : st->axis;
        if (axis < 0 || axis >= x->rank)
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "axis out of range");
        int64_t cols = 1;
        for (int32_t i = (int32_t)axis; i < x->rank; i++)
            cols = x->dims[i] < 0 || cols < 0 ? -1 : cols * x->dims[i];
        for (int i = 1; i < 3 && cols >= 0; i++) {
            const minfer_value_desc *d = ocl_in_desc(n, (size_t)i);
            int64_t nd = d && d->rank >= 0 ? ocl_numel(d->rank, d->dims) : -1;
            if (d && nd >= 0 && nd != cols)
                return ocl_decline(p, "Scale and B must cover the normalized axes exactly");
        }
    }
    if (!p->prep)
        return MINFER_OK;
    if (sc->const_data &&
        (s = ocl_upload_floats(p, 0, sc->const_data, sc->const_nbytes / 4)))
        return s;
    if (b && b->const_data &&
        (s = ocl_upload_floats(p, 1, b->const_data, b->const_nbytes / 4)))
        return s;
    return MINFER_OK;
}

minfer_status ocl_execute_layernorm(const ocl_exec *e) {
    const ln_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0), *sc = ocl_input(e, 1), *b = ocl_input(e, 2);
    if (!x || !sc)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int64_t axis = st->axis < 0 ? st->axis + x->rank : st->axis;
    if (axis < 0 || axis >= x->rank)
        return ocl_fail(e, MINFER_ERR_SHAPE, "axis out of range");
    int64_t cols = ocl_numel(x->rank - (int32_t)axis, x->dims + axis);
    if (ocl_numel(sc->rank, sc->dims) != cols || (b && ocl_numel(b->rank, b->dims) != cols))
        return ocl_fail(e, MINFER_ERR_SHAPE, "Scale and B must have %lld elements",
                        (long long)cols);
    cl_mem xb, sb, bb, yb;
    cl_int xo, so, bo, yo, has_b = b != NULL;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    ocl_in_buf(e, 1, 0, &sb, &so);
    ocl_in_buf(e, 2, 1, &bb, &bo);
    if (!b)
        bb = sb;
    minfer_status s = ocl_output(e, 0, x->rank, x->dims, &yb, &yo);
    if (s)
        return s;
    cl_int rows = (cl_int)ocl_numel((int32_t)axis, x->dims), colsi = (cl_int)cols;
    float eps = st->eps;
    if (rows == 0 || cols == 0)
        return MINFER_OK;
    if ((s = ocl_set_args(e, OCL_K_layernorm, 12, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(sb),
                          OCL_ARG(so), OCL_ARG(bb), OCL_ARG(bo), OCL_ARG(has_b), OCL_ARG(yb),
                          OCL_ARG(yo), OCL_ARG(rows), OCL_ARG(colsi), OCL_ARG(eps))))
        return s;
    return ocl_launch1(e, OCL_K_layernorm, (size_t)rows);
}
