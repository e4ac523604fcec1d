/*
 * Elementwise ops: the unary eltwise family (with Gelu and HardSigmoid),
 * binary ops with broadcasting, variadic Sum/Min/Max, and Concat.
 *
 * Unary ops and binary ops whose first operand has the output's shape keep
 * the layout their input arrives in (the output gets the same layout, and
 * may share the input's buffer). A binary op whose first operand is the
 * broadcast one is swapped when the op commutes; oneDNN 2.6 cannot
 * broadcast the first operand, so Sub and Div of that form are declined.
 */
#include <float.h>
#include <string.h>

#include "onednn.h"

/* 1 if output o is bound directly to the output (not converted after). */
static int output_direct(const dnn_b *b, int m) {
    return b->n->mems[m].bind == BIND_OUTPUT;
}

minfer_status dnn_build_unary(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    const char *op = b->node->op_type;
    float p[2];
    size_t np = 0;
    const char *act = op;
    if (!x)
        return dnn_decline(b, "needs an input");
    if (!strcmp(op, "LeakyRelu")) {
        p[np++] = dnn_attr_float(b, "alpha", 0.01f);
    } else if (!strcmp(op, "Elu")) {
        p[np++] = dnn_attr_float(b, "alpha", 1.0f);
    } else if (!strcmp(op, "HardSigmoid")) {
        p[np++] = dnn_attr_float(b, "alpha", 0.2f);
        p[np++] = dnn_attr_float(b, "beta", 0.5f);
    } else if (!strcmp(op, "Clip")) {
        p[0] = -FLT_MAX;
        p[1] = FLT_MAX;
        np = 2;
        if (b->node->opset < 11) {
            p[0] = dnn_attr_float(b, "min", -FLT_MAX);
            p[1] = dnn_attr_float(b, "max", FLT_MAX);
        } else {
            for (size_t i = 1; i < 3; i++) {
                const minfer_value_desc *v = dnn_in(b, i);
                if (!v)
                    continue;
                if (!v->const_data || v->const_nbytes < sizeof(float) ||
                    dnn_numel(v->rank, v->dims) != 1)
                    return dnn_decline(b, "min and max must be constant scalars");
                p[i - 1] = *(const float *)v->const_data;
            }
        }
    } else if (!strcmp(op, "Gelu")) {
        const char *ap = dnn_attr_str(b, "approximate", "none");
        if (!strcmp(ap, "tanh"))
            act = "GeluTanh";
        else if (strcmp(ap, "none"))
            return dnn_decline(b, "approximate '%s' is not supported", ap);
    }
    dnnl_alg_kind_t alg[2];
    float alpha[2], beta[2];
    int k = dnn_act_algs(act, p, np, alg, alpha, beta);
    if (k < 0)
        return dnn_decline(b, "no oneDNN form");
    dnnl_memory_desc_t md;
    if (dnn_in_md(b, 0, &md) != dnnl_success)
        return dnn_decline(b, "bad input layout");
    int m_src = dnn_input(b, 0, NULL, NULL);
    int m_dst = m_src < 0 ? -1 : dnn_output(b, 0, &md);
    if (m_dst < 0)
        return MINFER_ERR_UNSUPPORTED;
    for (int i = 0; i < k; i++) {
        dnnl_eltwise_desc_t ed;
        dnnl_status_t s = dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference, alg[i], &md,
                                                         alpha[i], beta[i]);
        if (s != dnnl_success)
            return dnn_fail(b, s, "eltwise descriptor");
        dnnl_primitive_attr_t attr = dnn_attr_new(b);
        dnnl_primitive_desc_t pd = NULL;
        minfer_status st = attr ? dnn_pd(b, &ed, attr, &pd) : dnn_decline(b, "out of memory");
        dnnl_primitive_attr_destroy(attr);
        if (st != MINFER_OK)
            return st;
        int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2] = {i ? m_dst : m_src, m_dst};
        if ((st = dnn_step_add(b, pd, 2, args, mems)) != MINFER_OK)
            return st;
    }
    if (!b->check && output_direct(b, m_dst))
        b->prep->output_inplace[0] = 0;
    return MINFER_OK;
}

/* Broadcast shape of two inputs; -1 if they do not broadcast. */
static int bcast(const minfer_value_desc *a, const minfer_value_desc *c, int *rank, int64_t *d) {
    int r = a->rank > c->rank ? a->rank : c->rank;
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ic = i - (r - c->rank);
        int64_t x = ia >= 0 ? a->dims[ia] : 1, y = ic >= 0 ? c->dims[ic] : 1;
        if (x != y && x != 1 && y != 1)
            return -1;
        d[i] = x > y ? x : y;
    }
    *rank = r;
    return 0;
}

static int same_shape(const minfer_value_desc *v, int rank, const int64_t *d) {
    return v->rank == rank && !memcmp(v->dims, d, (size_t)rank * sizeof d[0]);
}

/* dst = alg(input i0, input i1) with numpy broadcasting. */
static minfer_status binary(dnn_b *b, dnnl_alg_kind_t alg, int commutes) {
    const minfer_value_desc *x0 = dnn_in(b, 0), *x1 = dnn_in(b, 1);
    int r;
    int64_t od[MINFER_MAX_RANK];
    if (!x0 || !x1)
        return dnn_decline(b, "needs two inputs");
    if (bcast(x0, x1, &r, od))
        return dnn_decline(b, "inputs do not broadcast");
    if (r == 0)
        return dnn_decline(b, "scalar operands are not worth a primitive");
    minfer_status st = dnn_check_out(b, 0, r, od);
    if (st != MINFER_OK)
        return st;
    size_t i0 = 0, i1 = 1;
    if (!same_shape(x0, r, od)) {
        if (!commutes || !same_shape(x1, r, od))
            return dnn_decline(b, "oneDNN cannot broadcast the first operand");
        i0 = 1;
        i1 = 0;
    }
    const minfer_value_desc *s1 = dnn_in(b, i1);
    int64_t d1[MINFER_MAX_RANK];
    for (int i = 0; i < r; i++) {
        int k = i - (r - s1->rank);
        d1[i] = k >= 0 ? s1->dims[k] : 1;
    }
    dnnl_memory_desc_t c0[2], m1, dst_any, plain1;
    dnnl_dims_t dd;
    for (int i = 0; i < r; i++)
        dd[i] = od[i];
    if (dnn_in_md(b, i0, &c0[0]) != dnnl_success)
        return dnn_decline(b, "bad input layout");
    dnn_plain_md(&c0[1], r, od);
    dnn_plain_md(&plain1, r, d1);
    dnnl_memory_desc_init_by_tag(&dst_any, r, dd, dnnl_f32, dnnl_format_tag_any);
    dnnl_primitive_desc_t pd = NULL;
    int c, as_arrives = 0;
    st = MINFER_ERR_UNSUPPORTED;
    for (c = 0; c < 2 && st != MINFER_OK; c++) {
        /* Second operand: as it arrives when it has the full shape and the
         * first operand keeps its layout; plain (broadcast) otherwise. */
        as_arrives = c == 0 && same_shape(s1, r, od);
        if (as_arrives) {
            if (dnn_in_md(b, i1, &m1) != dnnl_success)
                return dnn_decline(b, "bad input layout");
        } else {
            m1 = plain1;
        }
        dnnl_binary_desc_t bd;
        dnnl_status_t s = dnnl_binary_desc_init(&bd, alg, &c0[c], &m1, &dst_any);
        if (s != dnnl_success)
            return dnn_fail(b, s, "binary descriptor");
        dnnl_primitive_attr_t attr = dnn_attr_new(b);
        if (!attr)
            return dnn_decline(b, "out of memory");
        st = dnn_pd(b, &bd, attr, &pd);
        dnnl_primitive_attr_destroy(attr);
    }
    if (st != MINFER_OK)
        return st;
    int m_0 = dnn_input(b, i0, NULL, &c0[c - 1]);
    int m_1 = m_0 < 0 ? -1 : dnn_input(b, i1, as_arrives ? NULL : &plain1, &m1);
    const dnnl_memory_desc_t *dmd = dnn_pd_md(pd, dnnl_query_dst_md, 0);
    int m_d = m_1 < 0 ? -1 : dnn_output(b, 0, dmd);
    if (m_d < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    if (!b->check && output_direct(b, m_d) && b->n->mems[m_0].bind == BIND_INPUT &&
        dnnl_memory_desc_equal(&c0[c - 1], dmd))
        b->prep->output_inplace[0] = (int32_t)i0;
    int args[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, mems[3] = {m_0, m_1, m_d};
    return dnn_step_add(b, pd, 3, args, mems);
}

minfer_status dnn_build_binary(dnn_b *b) {
    const char *op = b->node->op_type;
    if (!strcmp(op, "Add"))
        return binary(b, dnnl_binary_add, 1);
    if (!strcmp(op, "Mul"))
        return binary(b, dnnl_binary_mul, 1);
    if (!strcmp(op, "Sub"))
        return binary(b, dnnl_binary_sub, 0);
    if (!strcmp(op, "Div"))
        return binary(b, dnnl_binary_div, 0);
    return dnn_decline(b, "not a binary op");
}

minfer_status dnn_build_variadic(dnn_b *b) {
    const char *op = b->node->op_type;
    size_t n = b->node->n_inputs;
    for (size_t i = 0; i < n; i++)
        if (!dnn_in(b, i))
            return dnn_decline(b, "omitted inputs are not supported");
    /* oneDNN's max and min return the second operand where the first is
     * NaN; Max and Min propagate NaN (docs/operators.md, "NaN and
     * ordering"), so the CPU provider runs them. */
    if (strcmp(op, "Sum") != 0)
        return dnn_decline(b, "%s would not propagate NaN", op);
    if (n == 2)
        return binary(b, dnnl_binary_add, 1);
    if (n < 2 || n > DNN_MAX_CONCAT)
        return dnn_decline(b, "only 2 inputs (or Sum of 3 to %d)", DNN_MAX_CONCAT);
    const minfer_value_desc *x0 = dnn_in(b, 0);
    dnnl_memory_desc_t src[DNN_MAX_CONCAT], dst_any;
    float scales[DNN_MAX_CONCAT];
    dnnl_dims_t dd;
    for (size_t i = 0; i < n; i++) {
        if (!same_shape(dnn_in(b, i), x0->rank, x0->dims))
            return dnn_decline(b, "more than 2 inputs must have one shape");
        if (dnn_in_md(b, i, &src[i]) != dnnl_success)
            return dnn_decline(b, "bad input layout");
        scales[i] = 1.0f;
    }
    minfer_status st = dnn_check_out(b, 0, x0->rank, x0->dims);
    if (st != MINFER_OK)
        return st;
    for (int i = 0; i < x0->rank; i++)
        dd[i] = x0->dims[i];
    dnnl_memory_desc_init_by_tag(&dst_any, x0->rank ? x0->rank : 1, dd, dnnl_f32,
                                 dnnl_format_tag_any);
    if (x0->rank == 0)
        dnn_plain_md(&dst_any, 0, NULL);
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = attr ? dnnl_sum_primitive_desc_create(&pd, &dst_any, (int)n, scales, src,
                                                            attr, b->ctx->engine)
                           : dnnl_out_of_memory;
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return dnn_fail(b, s, "sum");
    if ((st = dnn_pd_check(b, pd)) != MINFER_OK)
        return st;
    int args[DNN_MAX_CONCAT + 1], mems[DNN_MAX_CONCAT + 1];
    for (size_t i = 0; i < n; i++) {
        args[i] = DNNL_ARG_MULTIPLE_SRC + (int)i;
        if ((mems[i] = dnn_input(b, i, NULL, NULL)) < 0) {
            dnnl_primitive_desc_destroy(pd);
            return MINFER_ERR_UNSUPPORTED;
        }
    }
    args[n] = DNNL_ARG_DST;
    if ((mems[n] = dnn_output(b, 0, dnn_pd_md(pd, dnnl_query_dst_md, 0))) < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    return dnn_step_add(b, pd, (int)n + 1, args, mems);
}

minfer_status dnn_build_concat(dnn_b *b) {
    size_t n = b->node->n_inputs;
    const minfer_value_desc *x0 = dnn_in(b, 0);
    if (!x0 || n > DNN_MAX_CONCAT)
        return dnn_decline(b, "1 to %d inputs", DNN_MAX_CONCAT);
    int r = x0->rank;
    int axis = dnn_axis(dnn_attr_int(b, "axis", 1), r);
    if (r < 1 || axis < 0)
        return dnn_decline(b, "axis out of range");
    int64_t od[MINFER_MAX_RANK];
    memcpy(od, x0->dims, (size_t)r * sizeof od[0]);
    od[axis] = 0;
    for (size_t i = 0; i < n; i++) {
        const minfer_value_desc *v = dnn_in(b, i);
        if (!v || v->rank != r)
            return dnn_decline(b, "inputs must be present and of one rank");
        for (int d = 0; d < r; d++)
            if (d != axis && v->dims[d] != x0->dims[d])
                return dnn_decline(b, "inputs differ off the axis");
        od[axis] += v->dims[axis];
    }
    minfer_status st = dnn_check_out(b, 0, r, od);
    if (st != MINFER_OK)
        return st;
    dnnl_memory_desc_t src[2][DNN_MAX_CONCAT], dst[2];
    dnnl_dims_t dd;
    for (int d = 0; d < r; d++)
        dd[d] = od[d];
    for (size_t i = 0; i < n; i++) {
        const minfer_value_desc *v = dnn_in(b, i);
        if (dnn_in_md(b, i, &src[0][i]) != dnnl_success)
            return dnn_decline(b, "bad input layout");
        dnn_plain_md(&src[1][i], r, v->dims);
    }
    dnnl_memory_desc_init_by_tag(&dst[0], r, dd, dnnl_f32, dnnl_format_tag_any);
    dnn_plain_md(&dst[1], r, od);
    if (b->pio) /* a piece writes the whole output's layout */
        dst[0] = dst[1] = b->pio->out;
    /* Going all plain costs a reorder step (and a memory) per input that
     * arrives in a layout of oneDNN's own. A node holds DNN_MAX_STEPS steps:
     * DenseNet's Concat of 10 to 25 blocked inputs does not fit, and then
     * oneDNN's reference concat on the inputs as they arrive is taken: it
     * is itself one reorder per input into its part of the output, the
     * work the plain route would do, in one step. */
    int reorders = 0;
    for (size_t i = 0; i < n; i++)
        reorders += !dnnl_memory_desc_equal(&src[0][i], &src[1][i]);
    int plain_fits = b->n->n_steps + reorders + 1 <= DNN_MAX_STEPS &&
                     b->n->n_mems + (int)n + reorders + 2 <= DNN_MAX_MEMS;
    dnnl_primitive_desc_t pd = NULL;
    int c;
    st = MINFER_ERR_UNSUPPORTED;
    /* As the inputs arrive first; all plain if that needs a reference one
     * (and fits). */
    for (c = 0; c < 2 && st != MINFER_OK; c++) {
        dnnl_primitive_attr_t attr = dnn_attr_new(b);
        dnnl_status_t s = attr ? dnnl_concat_primitive_desc_create(&pd, &dst[c], (int)n, axis,
                                                                   src[c], attr, b->ctx->engine)
                               : dnnl_out_of_memory;
        dnnl_primitive_attr_destroy(attr);
        if (s != dnnl_success)
            st = dnn_fail(b, s, "concat");
        else if (c == 0 && !plain_fits)
            st = MINFER_OK;
        else
            st = dnn_pd_check(b, pd);
    }
    if (st != MINFER_OK)
        return st;
    int args[DNN_MAX_CONCAT + 1], mems[DNN_MAX_CONCAT + 1];
    for (size_t i = 0; i < n; i++) {
        args[i] = DNNL_ARG_MULTIPLE_SRC + (int)i;
        if ((mems[i] = dnn_input(b, i, NULL, &src[c - 1][i])) < 0) {
            dnnl_primitive_desc_destroy(pd);
            return MINFER_ERR_UNSUPPORTED;
        }
    }
    args[n] = DNNL_ARG_DST;
    const dnnl_memory_desc_t *dmd = dnn_pd_md(pd, dnnl_query_dst_md, 0);
    if ((mems[n] = dnn_output(b, 0, dmd)) < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    /* Inputs read as they arrive and the output written directly, all in
     * one layout without blocks: memcpy calls instead of the primitive
     * (concat.c), in the layouts oneDNN's concat chose. */
    int direct = !b->pio && b->n_pend == 0 && b->n->n_steps == 0 &&
                 b->n->mems[mems[n]].bind == BIND_OUTPUT;
    for (size_t i = 0; direct && i < n; i++)
        direct = b->n->mems[mems[i]].bind == BIND_INPUT;
    if (direct && dnn_concat_copy_plan(&b->n->copy, (int)n, axis, src[c - 1], dmd) == 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_OK;
    }
    return dnn_step_add(b, pd, (int)n + 1, args, mems);
}
