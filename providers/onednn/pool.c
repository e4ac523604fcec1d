/*
 * MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool as oneDNN
 * pooling (v2, with dilations).
 *
 * A pool works on its source in the layout it arrives in (the layout of
 * the convolution before it) and writes the same layout. Where oneDNN has
 * only a reference implementation for that layout (plain NCHW on some
 * shapes), the source is reordered to channels-last first. MaxPool also
 * takes uint8 and int8 (a quantized model's pools between QLinearConvs):
 * the maximum of integers, exact, in the same layouts.
 */
#include <string.h>

#include "onednn.h"

static dnnl_format_tag_t channels_last(int rank) {
    return rank == 3 ? dnnl_nwc : rank == 4 ? dnnl_nhwc : dnnl_ndhwc;
}

/* Builds the pooling step for source arrival md src, trying channels-last
 * when src has only a reference implementation. */
static minfer_status pool_steps(dnn_b *b, dnnl_alg_kind_t alg, int rank, const int64_t *od,
                                const dnnl_dims_t strides, const dnnl_dims_t kernel,
                                const dnnl_dims_t dil, const dnnl_dims_t pl,
                                const dnnl_dims_t pr) {
    const minfer_value_desc *x = dnn_in(b, 0);
    dnnl_memory_desc_t cand[2], dst_any;
    dnnl_dims_t dd, xd;
    for (int i = 0; i < rank; i++) {
        dd[i] = od[i];
        xd[i] = x->dims[i];
    }
    int int8 = x->dtype == MINFER_DTYPE_UINT8 || x->dtype == MINFER_DTYPE_INT8;
    dnnl_data_type_t dt = int8 ? dnn_dtype(x->dtype) : dnnl_f32;
    dnnl_memory_desc_init_by_tag(&dst_any, rank, dd, dt, dnnl_format_tag_any);
    if (b->pio) /* a piece writes the whole output's layout */
        dst_any = b->pio->out;
    if (dnn_in_md(b, 0, &cand[0]) != dnnl_success)
        return dnn_decline(b, "bad input layout");
    dnnl_memory_desc_init_by_tag(&cand[1], rank, xd, dt, channels_last(rank));
    dnnl_primitive_desc_t pd = NULL;
    minfer_status st = MINFER_ERR_UNSUPPORTED;
    int c;
    for (c = 0; c < 2 && st != MINFER_OK; c++) {
        dnnl_pooling_v2_desc_t pdsc;
        dnnl_status_t s = dnnl_pooling_v2_forward_desc_init(&pdsc, dnnl_forward_inference, alg,
                                                             &cand[c], &dst_any, strides, kernel,
                                                             dil, pl, pr);
        if (s != dnnl_success)
            return dnn_fail(b, s, "pooling descriptor");
        dnnl_primitive_attr_t attr = dnn_attr_new(b);
        if (!attr)
            return dnn_decline(b, "out of memory");
        st = dnn_pd(b, &pdsc, attr, &pd);
        dnnl_primitive_attr_destroy(attr);
    }
    if (st != MINFER_OK)
        return st;
    int m_src = dnn_input(b, 0, NULL, &cand[c - 1]);
    int m_dst = m_src < 0 ? -1 : dnn_output(b, 0, dnn_pd_md(pd, dnnl_query_dst_md, 0));
    if (m_dst < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, mems[2] = {m_src, m_dst};
    return dnn_step_add(b, pd, 2, args, mems);
}

minfer_status dnn_build_pool(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    int is_max = !strcmp(b->node->op_type, "MaxPool");
    dnn_window w;
    minfer_status st;
    if (!x || x->rank < 3 || x->rank > 5)
        return dnn_decline(b, "only 1-D to 3-D pools");
    if (is_max && dnn_out_wanted(b, 1))
        return dnn_decline(b, "the Indices output is not supported");
    int int8 = x->dtype == MINFER_DTYPE_UINT8 || x->dtype == MINFER_DTYPE_INT8;
    if (!is_max || !int8 || x->kind != MINFER_VALUE_TENSOR ||
        (b->node->outputs[0].dtype && b->node->outputs[0].dtype != x->dtype)) {
        if ((st = dnn_require_float(b, 0)) != MINFER_OK)
            return st;
    } else if (b->pio) {
        return dnn_decline(b, "no split form for an int8 MaxPool");
    }
    int nsp = x->rank - 2;
    if ((st = dnn_window_parse(b, nsp, NULL, &w)) != MINFER_OK)
        return st;
    int ceil_mode = dnn_attr_int(b, "ceil_mode", 0) != 0;
    int include_pad = !is_max && dnn_attr_int(b, "count_include_pad", 0) != 0;
    int64_t od[MINFER_MAX_RANK], pl[DNN_MAX_SPATIAL], pr[DNN_MAX_SPATIAL];
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    if (dnn_window_out(&w, x->dims + 2, ceil_mode, od + 2, pl, pr))
        return dnn_decline(b, "the window does not fit the input");
    if (b->pio) { /* a piece: rows and paddings cut from the whole node's */
        const minfer_value_desc *y = &b->node->outputs[0];
        for (int i = 0; i < nsp && y->rank == x->rank; i++) {
            od[2 + i] = y->dims[2 + i];
            pl[i] = b->pio->pl[i];
            pr[i] = b->pio->pr[i];
        }
    }
    for (int i = 0; i < nsp; i++) {
        /* oneDNN walks every tap of the window: one much wider than the
         * input (a 2^31-tap kernel over padding) would take seconds per
         * element; the CPU provider visits only the taps inside the input.
         * Up to 64 taps the walk costs nothing: GoogLeNet's 3x3 pools over
         * a 2x2 map (small images) stay here. */
        if (w.kernel[i] > (x->dims[2 + i] >= 0 ? x->dims[2 + i] : 4096) && w.kernel[i] > 64)
            return dnn_decline(b, "a window wider than the input");
        if (pl[i] >= (w.kernel[i] - 1) * w.dil[i] + 1)
            return dnn_decline(b, "padding as large as the window is not supported");
        /* ceil_mode may add right padding beyond the explicit pads: it is
         * never counted, which oneDNN's include-padding average would do. */
        if (include_pad && w.auto_pad == DNN_PAD_NOTSET && pr[i] > w.pads[nsp + i])
            return dnn_decline(b, "count_include_pad with ceil_mode padding is not supported");
        if (pr[i] < 0)
            pr[i] = 0;
    }
    if ((st = dnn_check_out(b, 0, x->rank, od)) != MINFER_OK)
        return st;
    dnnl_dims_t strides, kernel, dil, padl, padr;
    for (int i = 0; i < nsp; i++) {
        strides[i] = w.stride[i];
        kernel[i] = w.kernel[i];
        dil[i] = w.dil[i] - 1;
        padl[i] = pl[i];
        padr[i] = pr[i];
    }
    dnnl_alg_kind_t alg = is_max        ? dnnl_pooling_max
                          : include_pad ? dnnl_pooling_avg_include_padding
                                        : dnnl_pooling_avg_exclude_padding;
    return pool_steps(b, alg, x->rank, od, strides, kernel, dil, padl, padr);
}

minfer_status dnn_build_global_pool(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0);
    if (!x || x->rank < 3 || x->rank > 5)
        return dnn_decline(b, "only 1-D to 3-D pools");
    int nsp = x->rank - 2;
    int64_t od[MINFER_MAX_RANK];
    dnnl_dims_t strides, kernel, dil, pad;
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    for (int i = 0; i < nsp; i++) {
        od[2 + i] = 1;
        strides[i] = 1;
        kernel[i] = x->dims[2 + i];
        dil[i] = 0;
        pad[i] = 0;
    }
    minfer_status st = dnn_check_out(b, 0, x->rank, od);
    if (st != MINFER_OK)
        return st;
    dnnl_alg_kind_t alg =
        !strcmp(b->node->op_type, "GlobalMaxPool") ? dnnl_pooling_max : dnnl_pooling_avg;
    return pool_steps(b, alg, x->rank, od, strides, kernel, dil, pad, pad);
}
