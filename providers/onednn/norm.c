/*
 * BatchNormalization (inference), LRN, Softmax/LogSoftmax,
 * LayerNormalization and minfer:RMSNormalization.
 *
 * BatchNormalization and LRN work on their input in the layout it arrives
 * in. Softmax and LayerNormalization read plain row-major data viewed as
 * 2-D where the op's semantics flatten it (Softmax before opset 13, and
 * LayerNormalization over the trailing axes from `axis`, which oneDNN
 * normalizes as one last axis).
 */
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

minfer_status dnn_build_batchnorm(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    if (!x || x->rank < 2 || x->rank > 5)
        return dnn_decline(b, "X must have rank 2 to 5");
    for (size_t o = 1; o < b->node->n_outputs; o++)
        if (dnn_out_wanted(b, o))
            return dnn_decline(b, "training outputs are not supported");
    if (dnn_attr_int(b, "training_mode", 0) != 0)
        return dnn_decline(b, "training mode is not supported");
    if (dnn_attr_int(b, "spatial", 1) != 1)
        return dnn_decline(b, "spatial = 0 is not supported");
    int64_t C = x->dims[1];
    for (size_t i = 1; i < 5; i++) {
        const minfer_value_desc *v = dnn_in(b, i);
        if (!v || v->rank != 1 || v->dims[0] != C)
            return dnn_decline(b, "scale, B, mean and var must have %lld elements", (long long)C);
    }
    minfer_status st = dnn_check_out(b, 0, x->rank, x->dims);
    if (st != MINFER_OK)
        return st;
    float eps = dnn_attr_float(b, "epsilon", 1e-5f);
    dnnl_memory_desc_t md, cmd;
    if (dnn_in_md(b, 0, &md) != dnnl_success)
        return dnn_decline(b, "bad input layout");
    dnn_plain_md(&cmd, 1, &C);
    dnnl_batch_normalization_desc_t bd;
    dnnl_status_t s = dnnl_batch_normalization_forward_desc_init(
        &bd, dnnl_forward_inference, &md, eps, dnnl_use_global_stats | dnnl_use_scale | dnnl_use_shift);
    if (s != dnnl_success)
        return dnn_fail(b, s, "batch normalization descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_primitive_desc_t pd = NULL;
    st = attr ? dnn_pd(b, &bd, attr, &pd) : dnn_decline(b, "out of memory");
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;
    int mems[6], args[6] = {DNNL_ARG_SRC, DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN,
                            DNNL_ARG_VARIANCE, DNNL_ARG_DST};
    for (size_t i = 0; i < 5; i++)
        if ((mems[i] = dnn_input(b, i, NULL, i ? &cmd : NULL)) < 0) {
            dnnl_primitive_desc_destroy(pd);
            return MINFER_ERR_UNSUPPORTED;
        }
    if ((mems[5] = dnn_output(b, 0, dnn_pd_md(pd, dnnl_query_dst_md, 0))) < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    return dnn_step_add(b, pd, 6, args, mems);
}

minfer_status dnn_build_lrn(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    if (!x || x->rank < 3 || x->rank > 5)
        return dnn_decline(b, "X must have rank 3 to 5");
    int64_t size = dnn_attr_int(b, "size", 0);
    if (size < 1 || size % 2 == 0)
        return dnn_decline(b, "only odd sizes (oneDNN centres the window)");
    /* A window reaching past every channel on both sides sums them all:
     * the same as a window of 2C-1 with alpha scaled to keep alpha / size,
     * and oneDNN would otherwise walk all of it (size 2^31-1). */
    float alpha = dnn_attr_float(b, "alpha", 1e-4f);
    int64_t C = x->dims[1];
    if (C < 1 && size > 4096)
        return dnn_decline(b, "a window this wide needs a known channel count");
    if (C >= 1 && (size - 1) / 2 > C - 1) {
        alpha = (float)((double)alpha * (double)(2 * C - 1) / (double)size);
        size = 2 * C - 1;
    }
    minfer_status st = dnn_check_out(b, 0, x->rank, x->dims);
    if (st != MINFER_OK)
        return st;
    dnnl_memory_desc_t md;
    if (dnn_in_md(b, 0, &md) != dnnl_success)
        return dnn_decline(b, "bad input layout");
    dnnl_lrn_desc_t ld;
    dnnl_status_t s = dnnl_lrn_forward_desc_init(
        &ld, dnnl_forward_inference, dnnl_lrn_across_channels, &md, size, alpha,
        dnn_attr_float(b, "beta", 0.75f),
        dnn_attr_float(b, "bias", 1.0f));
    if (s != dnnl_success)
        return dnn_fail(b, s, "LRN descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_primitive_desc_t pd = NULL;
    st = attr ? dnn_pd(b, &ld, attr, &pd) : dnn_decline(b, "out of memory");
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;
    int m_src = dnn_input(b, 0, NULL, NULL);
    int m_dst = m_src < 0 ? -1 : dnn_output(b, 0, dnn_pd_md(pd, dnnl_query_dst_md, 0));
    if (m_dst < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2] = {m_src, m_dst};
    return dnn_step_add(b, pd, 2, args, mems);
}

minfer_status dnn_build_softmax(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    int is_log = !strcmp(b->node->op_type, "LogSoftmax");
    if (!x || x->rank < 1)
        return dnn_decline(b, "X must have rank >= 1");
    int legacy = b->node->opset < 13;
    int axis = dnn_axis(dnn_attr_int(b, "axis", legacy ? 1 : -1), x->rank);
    if (axis < 0)
        return dnn_decline(b, "axis out of range");
    minfer_status st = dnn_check_out(b, 0, x->rank, x->dims);
    if (st != MINFER_OK)
        return st;
    dnnl_memory_desc_t md;
    int dnn_ax = axis;
    if (legacy) {
        /* Before opset 13: the input is flattened to 2-D at axis. */
        int64_t d2[2] = {dnn_numel(axis, x->dims), dnn_numel(x->rank - axis, x->dims + axis)};
        dnn_plain_md(&md, 2, d2);
        dnn_ax = 1;
    } else {
        dnn_plain_md(&md, x->rank, x->dims);
    }
    dnnl_softmax_v2_desc_t sd;
    dnnl_status_t s = dnnl_softmax_v2_forward_desc_init(
        &sd, dnnl_forward_inference, is_log ? dnnl_softmax_log : dnnl_softmax_accurate, &md, &md,
        dnn_ax);
    if (s != dnnl_success)
        return dnn_fail(b, s, "softmax descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_primitive_desc_t pd = NULL;
    st = attr ? dnn_pd(b, &sd, attr, &pd) : dnn_decline(b, "out of memory");
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;
    int m_src = dnn_input(b, 0, &md, NULL);
    int m_dst = m_src < 0 ? -1 : dnn_output(b, 0, &md);
    if (m_dst < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2] = {m_src, m_dst};
    return dnn_step_add(b, pd, 2, args, mems);
}

minfer_status dnn_build_layernorm(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0), *scale = dnn_in(b, 1), *bias = dnn_in(b, 2);
    if (!x || !scale || x->rank < 1)
        return dnn_decline(b, "needs X and Scale");
    for (size_t o = 1; o < b->node->n_outputs; o++)
        if (dnn_out_wanted(b, o))
            return dnn_decline(b, "the Mean and InvStdDev outputs are not supported");
    int axis = dnn_axis(dnn_attr_int(b, "axis", -1), x->rank);
    if (axis < 0)
        return dnn_decline(b, "axis out of range");
    int64_t inner = dnn_numel(x->rank - axis, x->dims + axis);
    int64_t d2[2] = {dnn_numel(axis, x->dims), inner};
    if (dnn_numel(scale->rank, scale->dims) != inner ||
        (bias && dnn_numel(bias->rank, bias->dims) != inner))
        return dnn_decline(b, "Scale and B must have the normalized shape (no broadcasting)");
    minfer_status st = dnn_check_out(b, 0, x->rank, x->dims);
    if (st != MINFER_OK)
        return st;
    dnnl_memory_desc_t md, smd;
    dnn_plain_md(&md, 2, d2);
    dnn_plain_md(&smd, 1, &inner);
    dnnl_layer_normalization_desc_t ld;
    dnnl_status_t s = dnnl_layer_normalization_forward_desc_init(
        &ld, dnnl_forward_inference, &md, NULL, dnn_attr_float(b, "epsilon", 1e-5f),
        dnnl_use_scale | (bias ? dnnl_use_shift : 0));
    if (s != dnnl_success)
        return dnn_fail(b, s, "layer normalization descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_primitive_desc_t pd = NULL;
    st = attr ? dnn_pd(b, &ld, attr, &pd) : dnn_decline(b, "out of memory");
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;
    int m_src = dnn_input(b, 0, &md, NULL);
    int m_s = m_src < 0 ? -1 : dnn_input(b, 1, &smd, NULL);
    int m_b = !bias || m_s < 0 ? -2 : dnn_input(b, 2, &smd, NULL);
    int m_dst = m_s < 0 || m_b == -1 ? -1 : dnn_output(b, 0, &md);
    if (m_dst < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_SCALE, DNNL_ARG_SHIFT};
    int mems[4] = {m_src, m_dst, m_s, m_b};
    return dnn_step_add(b, pd, bias ? 4 : 3, args, mems);
}

/* minfer:RMSNormalization (fused by the optimizer from the exporters'
 * Pow/ReduceMean/Add/Sqrt/Reciprocal chain): oneDNN 2.6 has no RMS norm,
 * so three steps on X viewed as [rows, len] (the trailing axes from `axis`):
 *  1. an eltwise square of X into the workspace;
 *  2. a mean reduction of that per row: the mean of squares, ms (oneDNN
 *     2.6's sum-of-powers reduction is a reference implementation only);
 *  3. a layer normalization with global statistics takes ms as the
 *     variance and zeros as the mean: x / sqrt(ms + eps) * Scale. */
minfer_status dnn_build_rmsnorm(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0), *scale = dnn_in(b, 1);
    if (!x || !scale || x->rank < 1)
        return dnn_decline(b, "needs X and Scale");
    int axis = dnn_axis(dnn_attr_int(b, "axis", -1), x->rank);
    if (axis < 0)
        return dnn_decline(b, "axis out of range");
    int64_t rows = dnn_numel(axis, x->dims), len = dnn_numel(x->rank - axis, x->dims + axis);
    if (rows < 1 || len < 1)
        return dnn_decline(b, "empty input");
    if (dnn_numel(scale->rank, scale->dims) != len)
        return dnn_decline(b, "Scale must have the normalized shape (no broadcasting)");
    minfer_status st = dnn_check_out(b, 0, x->rank, x->dims);
    if (st != MINFER_OK)
        return st;
    int64_t d2[2] = {rows, len}, r2[2] = {rows, 1};
    dnnl_memory_desc_t md, red_md, stat_md, smd;
    dnn_plain_md(&md, 2, d2);
    dnn_plain_md(&red_md, 2, r2);
    dnn_plain_md(&stat_md, 1, &rows);
    dnn_plain_md(&smd, 1, &len);

    /* The three primitive descriptors, in step order. */
    dnnl_eltwise_desc_t ed;
    dnnl_reduction_desc_t rd;
    dnnl_layer_normalization_desc_t ld;
    dnnl_primitive_desc_t pd[3] = {NULL, NULL, NULL};
    dnnl_status_t s = dnnl_eltwise_forward_desc_init(&ed, dnnl_forward_inference,
                                                     dnnl_eltwise_square, &md, 0.0f, 0.0f);
    if (s == dnnl_success)
        s = dnnl_reduction_desc_init(&rd, dnnl_reduction_mean, &md, &red_md, 0.0f, 0.0f);
    if (s == dnnl_success)
        s = dnnl_layer_normalization_forward_desc_init(&ld, dnnl_forward_inference, &md,
                                                       &stat_md,
                                                       dnn_attr_float(b, "epsilon", 1e-5f),
                                                       dnnl_use_global_stats | dnnl_use_scale);
    if (s != dnnl_success)
        return dnn_fail(b, s, "RMS normalization descriptors");
    const_dnnl_op_desc_t ops[3] = {&ed, &rd, &ld};
    for (int k = 0; k < 3 && st == MINFER_OK; k++) {
        dnnl_primitive_attr_t attr = dnn_attr_new(b);
        st = attr ? dnn_pd(b, ops[k], attr, &pd[k]) : dnn_decline(b, "out of memory");
        dnnl_primitive_attr_destroy(attr);
    }

    float *zeros = st != MINFER_OK || b->check ? NULL : calloc((size_t)rows, sizeof *zeros);
    int m_src = st != MINFER_OK || (!b->check && !zeros) ? -1 : dnn_input(b, 0, &md, NULL);
    int m_s = m_src < 0 ? -1 : dnn_input(b, 1, &smd, NULL);
    int m_sq = m_s < 0 ? -1 : dnn_ws_mem(b, &md);
    int m_ms = m_sq < 0 ? -1 : dnn_ws_mem(b, &red_md);
    /* The same workspace bytes as the 1-D variance the normalization reads. */
    int m_var = m_ms < 0 ? -1 : dnn_mem_new(b, &stat_md, BIND_WS, -1);
    if (m_var >= 0)
        b->n->mems[m_var].off = b->n->mems[m_ms].off;
    int m_mean = m_var < 0 ? -1 : dnn_owned_plain(b, &stat_md, zeros);
    int m_dst = m_mean < 0 ? -1 : dnn_output(b, 0, &md);
    free(zeros);
    if (m_dst < 0) {
        for (int k = 0; k < 3; k++)
            dnnl_primitive_desc_destroy(pd[k]);
        if (st != MINFER_OK)
            return st;
        return m_src < 0 && !b->check ? dnn_decline(b, "out of memory") : MINFER_ERR_UNSUPPORTED;
    }
    int a2[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, sq_mems[2] = {m_src, m_sq}, red_mems[2] = {m_sq, m_ms};
    int args[5] = {DNNL_ARG_SRC, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_DST};
    int mems[5] = {m_src, m_mean, m_var, m_s, m_dst};
    /* dnn_step_add takes its pd, also when it fails. */
    if ((st = dnn_step_add(b, pd[0], 2, a2, sq_mems)) != MINFER_OK) {
        dnnl_primitive_desc_destroy(pd[1]);
        dnnl_primitive_desc_destroy(pd[2]);
        return st;
    }
    if ((st = dnn_step_add(b, pd[1], 2, a2, red_mems)) != MINFER_OK) {
        dnnl_primitive_desc_destroy(pd[2]);
        return st;
    }
    return dnn_step_add(b, pd[2], 5, args, mems);
}
