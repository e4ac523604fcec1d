/*
 * Conv, FusedConv and ConvTranspose as oneDNN (de)convolutions.
 *
 * Source, weights and destination are created with format_tag_any, so the
 * convolution picks its layouts (channels-last or blocked on AVX-512), except
 * that a source arriving channels-last keeps that layout for source and
 * destination when oneDNN has a non-reference implementation for it (the
 * whole chain of convolutions then stays in one layout, with no reorders
 * between them); the constant weights are reordered once into the chosen
 * layout, and the source, when it arrives in another layout, is reordered
 * into the workspace first. FusedConv's bias and activation become the primitive's
 * bias and eltwise post-op; its residual Z becomes a sum post-op: Z is
 * copied into the destination first (skipped when the planner already put
 * the output in Z's buffer), and the convolution accumulates onto it.
 * ConvTranspose keeps a channels-last source's layout the same way; one
 * whose windows tile the output (strides equal to the kernel, no padding)
 * runs as a matrix product and a reorder (transpose_as_matmul).
 */
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* Reads kernel (from W, checked against kernel_shape), strides,
 * dilations, pads and auto_pad for nsp spatial axes. */
static minfer_status read_window(dnn_b *b, int nsp, const int64_t *wk, dnn_window *w) {
    int64_t tmp[2 * DNN_MAX_SPATIAL];
    size_t n;
    int r;
    memset(w, 0, sizeof *w);
    w->nsp = nsp;
    for (int i = 0; i < nsp; i++)
        w->kernel[i] = w->stride[i] = w->dil[i] = 1;
    if ((r = dnn_attr_ints(b, "kernel_shape", tmp, DNN_MAX_SPATIAL, &n)) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n != (size_t)nsp)
        return dnn_decline(b, "kernel_shape has %zu entries for %d spatial axes", n, nsp);
    for (int i = 0; i < nsp; i++) {
        if (r > 0 && wk && wk[i] != tmp[i])
            return dnn_decline(b, "kernel_shape does not match the weights");
        w->kernel[i] = r > 0 ? tmp[i] : wk ? wk[i] : 0;
        if (w->kernel[i] < 1)
            return dnn_decline(b, "kernel_shape is required");
    }
    static const char *const names[2] = {"strides", "dilations"};
    int64_t *dst[2] = {w->stride, w->dil};
    for (int a = 0; a < 2; a++) {
        if ((r = dnn_attr_ints(b, names[a], tmp, DNN_MAX_SPATIAL, &n)) < 0)
            return MINFER_ERR_UNSUPPORTED;
        if (r > 0 && n != (size_t)nsp)
            return dnn_decline(b, "%s has %zu entries for %d spatial axes", names[a], n, nsp);
        for (size_t i = 0; r > 0 && i < n; i++) {
            if (tmp[i] < 1)
                return dnn_decline(b, "%s must be positive", names[a]);
            dst[a][i] = tmp[i];
        }
    }
    if ((r = dnn_attr_ints(b, "pads", tmp, 2 * DNN_MAX_SPATIAL, &n)) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n != 2 * (size_t)nsp)
        return dnn_decline(b, "pads has %zu entries for %d spatial axes", n, nsp);
    for (size_t i = 0; r > 0 && i < n; i++) {
        if (tmp[i] < 0)
            return dnn_decline(b, "negative pads are not supported");
        w->pads[i] = tmp[i];
    }
    const char *ap = dnn_attr_str(b, "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET") || !ap[0])
        w->auto_pad = DNN_PAD_NOTSET;
    else if (!strcmp(ap, "SAME_UPPER"))
        w->auto_pad = DNN_PAD_SAME_UPPER;
    else if (!strcmp(ap, "SAME_LOWER"))
        w->auto_pad = DNN_PAD_SAME_LOWER;
    else if (!strcmp(ap, "VALID"))
        w->auto_pad = DNN_PAD_VALID;
    else
        return dnn_decline(b, "auto_pad '%s' is not supported", ap);
    if (w->auto_pad != DNN_PAD_NOTSET)
        memset(w->pads, 0, sizeof w->pads);
    return MINFER_OK;
}

minfer_status dnn_window_parse(dnn_b *b, int nsp, const int64_t *wk, dnn_window *w) {
    if (nsp < 1 || nsp > DNN_MAX_SPATIAL)
        return dnn_decline(b, "%d spatial axes are not supported (1 to 3)", nsp);
    return read_window(b, nsp, wk, w);
}

int dnn_window_out(const dnn_window *w, const int64_t *in, int ceil_mode, int64_t *out,
                   int64_t *pl, int64_t *pr) {
    for (int i = 0; i < w->nsp; i++) {
        int64_t dk = (w->kernel[i] - 1) * w->dil[i] + 1, s = w->stride[i];
        if (w->auto_pad == DNN_PAD_SAME_UPPER || w->auto_pad == DNN_PAD_SAME_LOWER) {
            out[i] = (in[i] + s - 1) / s;
            int64_t total = (out[i] - 1) * s + dk - in[i];
            if (total < 0)
                total = 0;
            pl[i] = w->auto_pad == DNN_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        } else {
            pl[i] = w->pads[i];
            int64_t span = in[i] + w->pads[i] + w->pads[w->nsp + i] - dk;
            if (span < 0)
                return -1;
            out[i] = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
            /* ceil_mode: a window that would start in the end padding is dropped. */
            if (ceil_mode && (out[i] - 1) * s >= in[i] + w->pads[i])
                out[i]--;
        }
        if (out[i] < 1)
            return -1;
        /* oneDNN wants the right padding that makes its own formula give out. */
        pr[i] = (out[i] - 1) * s + dk - in[i] - pl[i];
    }
    return 0;
}

/* supports_operator's stand-ins for a convolution's unknown dimensions,
 * before provider.c gives the remaining ones its generic values: X's
 * batch 1, its channels from W and the group, each spatial extent 64 or
 * the dilated kernel when larger; then Y's and the residual Z's unknown
 * dimensions from that geometry. Generic stand-ins (64 everywhere) would
 * decline a strided FusedConv (Z 64x64 against Y 32x32), a conv whose
 * channels come from a Reshape (64 against W's), and a 1-D window longer
 * than 64, all of which prepare accepts with the concrete shapes. */
void dnn_conv_standins(dnn_ctx *ctx, const minfer_node_desc *node, minfer_value_desc *in,
                       minfer_value_desc *out) {
    minfer_value_desc *x = node->n_inputs > 0 && in[0].present ? &in[0] : NULL;
    const minfer_value_desc *w = node->n_inputs > 1 && in[1].present ? &in[1] : NULL;
    if (!x || !w || x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return;
    for (int i = 0; i < w->rank; i++)
        if (w->dims[i] < 1)
            return;
    char why[256];
    dnn_b b = {0};
    b.ctx = ctx;
    b.node = node;
    b.check = 1;
    b.why = why;
    b.why_size = sizeof why;
    int nsp = x->rank - 2;
    dnn_window win;
    int64_t G = dnn_attr_int(&b, "group", 1);
    if (G < 1 || dnn_window_parse(&b, nsp, w->dims + 2, &win) != MINFER_OK)
        return;
    if (x->dims[0] < 0)
        x->dims[0] = 1;
    if (x->dims[1] < 0)
        x->dims[1] = w->dims[1] * G;
    for (int i = 0; i < nsp; i++) {
        int64_t dk = (win.kernel[i] - 1) * win.dil[i] + 1;
        if (x->dims[2 + i] < 0)
            x->dims[2 + i] = dk > 64 ? dk : 64;
    }
    /* yd zeroed: the writes through tied[] below may alias x, so at -O3 GCC
     * cannot tell that x->rank stays nsp + 2 (maybe-uninitialized). */
    int64_t yd[MINFER_MAX_RANK] = {0}, pl[DNN_MAX_SPATIAL], pr[DNN_MAX_SPATIAL];
    if (dnn_window_out(&win, x->dims + 2, 0, yd + 2, pl, pr))
        return;
    yd[0] = x->dims[0];
    yd[1] = w->dims[0];
    minfer_value_desc *z = !strcmp(node->domain, "minfer") && node->n_inputs > 3 && in[3].present
                               ? &in[3] : NULL;
    minfer_value_desc *tied[2] = {node->n_outputs > 0 ? &out[0] : NULL, z};
    for (int t = 0; t < 2; t++)
        for (int i = 0; tied[t] && tied[t]->rank == x->rank && i < x->rank; i++)
            if (tied[t]->dims[i] < 0)
                tied[t]->dims[i] = yd[i];
}

/* Checks that the output shape computed here is the one the host inferred. */
minfer_status dnn_check_out(dnn_b *b, size_t o, int rank, const int64_t *dims) {
    const minfer_value_desc *v = &b->node->outputs[o];
    if (b->check || v->rank < 0)
        return MINFER_OK;
    int same = v->rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = v->dims[i] < 0 || v->dims[i] == dims[i];
    return same ? MINFER_OK
                : dnn_decline(b, "output %zu: the shape computed here differs from the host's", o);
}

static void to_dnnl(dnnl_dim_t *d, const int64_t *v, int n, int64_t minus) {
    for (int i = 0; i < n && i < DNNL_MAX_NDIMS; i++)
        d[i] = v[i] - minus;
}

/* Channels-last tags by rank (3 to 5). */
static const dnnl_format_tag_t cl_tags[3] = {dnnl_acb, dnnl_acdb, dnnl_acdeb};

/* 1 when input 0 arrives channels-last (then *md is that layout, of dims xd). */
static int arrives_channels_last(dnn_b *b, const dnnl_dims_t xd, int rank,
                                 dnnl_memory_desc_t *md) {
    dnnl_memory_desc_t have;
    if (rank < 3 || rank > 5 || dnn_in_md(b, 0, &have) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(md, rank, xd, dnnl_f32, cl_tags[rank - 3]) != dnnl_success)
        return 0;
    return dnnl_memory_desc_equal(md, &have);
}

minfer_status dnn_build_conv(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0), *w = dnn_in(b, 1), *bias = dnn_in(b, 2);
    int fused = !strcmp(b->node->domain, "minfer");
    const minfer_value_desc *z = fused ? dnn_in(b, 3) : NULL;
    dnn_window win;
    minfer_status st;
    if (!x || !w)
        return dnn_decline(b, "needs X and W");
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return dnn_decline(b, "only 1-D to 3-D convolutions with matching X and W ranks");
    int nsp = x->rank - 2;
    if ((st = dnn_window_parse(b, nsp, w->dims + 2, &win)) != MINFER_OK)
        return st;
    int64_t G = dnn_attr_int(b, "group", 1);
    int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0];
    if (G < 1 || C % G || M % G || w->dims[1] != C / G)
        return dnn_decline(b, "channels and group do not fit");
    if (bias && (bias->rank != 1 || bias->dims[0] != M))
        return dnn_decline(b, "bias must have %lld elements", (long long)M);
    int64_t od[MINFER_MAX_RANK] = {0}, pl[DNN_MAX_SPATIAL], pr[DNN_MAX_SPATIAL];
    od[0] = N;
    od[1] = M;
    if (b->pio) {
        /* A piece: its rows and paddings were cut from the whole node's. */
        const minfer_value_desc *y = &b->node->outputs[0];
        if (y->rank != x->rank)
            return dnn_decline(b, "piece output rank differs");
        for (int i = 0; i < nsp; i++) {
            od[2 + i] = y->dims[2 + i];
            pl[i] = b->pio->pl[i];
            pr[i] = b->pio->pr[i];
        }
    } else if (dnn_window_out(&win, x->dims + 2, 0, od + 2, pl, pr)) {
        return dnn_decline(b, "the window does not fit the input");
    }
    if ((st = dnn_check_out(b, 0, x->rank, od)) != MINFER_OK)
        return st;
    if (z && (z->rank != x->rank || memcmp(z->dims, od, (size_t)x->rank * sizeof od[0])))
        return dnn_decline(b, "residual Z must have the output's shape");

    dnnl_memory_desc_t src_any, wei_any, wei_plain, bias_md, dst_any;
    dnnl_dims_t xd, wd, dd, strides, dil, padl, padr;
    int wr = x->rank;
    to_dnnl(xd, x->dims, x->rank, 0);
    to_dnnl(dd, od, x->rank, 0);
    if (G > 1) {
        wd[0] = G;
        wd[1] = M / G;
        wd[2] = C / G;
        for (int i = 0; i < nsp && i < DNN_MAX_SPATIAL; i++)
            wd[3 + i] = w->dims[2 + i];
        wr++;
    } else {
        to_dnnl(wd, w->dims, x->rank, 0);
    }
    to_dnnl(strides, win.stride, nsp, 0);
    to_dnnl(dil, win.dil, nsp, 1);
    to_dnnl(padl, pl, nsp, 0);
    to_dnnl(padr, pr, nsp, 0);
    /* precision bf16: X and W read in bfloat16 (W packed once), Y in float. */
    dnnl_data_type_t cdt =
        dnn_lowp(b, (double)dnn_numel(x->rank, od) * (double)dnn_numel(w->rank - 1, w->dims + 1))
            ? dnnl_bf16
            : dnnl_f32;
    dnnl_memory_desc_init_by_tag(&src_any, x->rank, xd, cdt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei_any, wr, wd, cdt, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dst_any, x->rank, dd, dnnl_f32, dnnl_format_tag_any);
    if (b->pio) { /* a piece keeps the whole tensors' layouts */
        if (!b->pio->src_any)
            src_any = b->pio->in[0];
        if (!b->pio->dst_any)
            dst_any = b->pio->out;
    }
    int64_t wdims[MINFER_MAX_RANK];
    for (int i = 0; i < wr; i++)
        wdims[i] = wd[i];
    dnn_plain_md(&wei_plain, wr, wdims);
    if (bias)
        dnn_plain_md(&bias_md, 1, &M);

    dnnl_convolution_desc_t cd;
    dnnl_status_t s = dnnl_dilated_convolution_forward_desc_init(
        &cd, dnnl_forward_inference, dnnl_convolution_direct, &src_any, &wei_any,
        bias ? &bias_md : NULL, &dst_any, strides, dil, padl, padr);
    if (s != dnnl_success)
        return dnn_fail(b, s, "convolution descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_post_ops_t po = NULL;
    if (!attr || dnnl_post_ops_create(&po) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return dnn_decline(b, "out of memory");
    }
    st = MINFER_OK;
    if (z && dnnl_post_ops_append_sum(po, 1.0f) != dnnl_success)
        st = dnn_decline(b, "could not append the residual sum");
    if (st == MINFER_OK && fused)
        st = dnn_append_activation(b, po);
    if (st == MINFER_OK && dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
        st = dnn_decline(b, "could not set post-ops");
    dnnl_post_ops_destroy(po);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t src_cl, dst_cl;
    if (st == MINFER_OK && !b->pio && cdt == dnnl_f32 && arrives_channels_last(b, xd, x->rank, &src_cl) &&
        dnnl_memory_desc_init_by_tag(&dst_cl, x->rank, dd, dnnl_f32,
                                     cl_tags[x->rank - 3]) == dnnl_success) {
        /* X comes channels-last from the convolution before it: keep that
         * layout for source and destination when oneDNN has a non-reference
         * implementation for it. For a grouped convolution oneDNN 2.6 would
         * otherwise pick a blocked layout: a reorder of X in, another of Y
         * for the next convolution, and neither node splittable by rows. */
        dnnl_convolution_desc_t cl;
        if (dnnl_dilated_convolution_forward_desc_init(
                &cl, dnnl_forward_inference, dnnl_convolution_direct, &src_cl, &wei_any,
                bias ? &bias_md : NULL, &dst_cl, strides, dil, padl, padr) != dnnl_success ||
            dnn_pd(b, &cl, attr, &pd) != MINFER_OK)
            pd = NULL; /* the layouts it prefers, below */
    }
    if (st == MINFER_OK && !pd)
        st = dnn_pd(b, &cd, attr, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;

    int m_src = dnn_input(b, 0, NULL, dnn_pd_md(pd, dnnl_query_src_md, 0));
    int m_wei = m_src < 0 ? -1 : dnn_const_input(b, 1, &wei_plain,
                                                 dnn_pd_md(pd, dnnl_query_weights_md, 0), 1.0f);
    int m_bias = !bias || m_wei < 0 ? -2 : dnn_input(b, 2, NULL, dnn_pd_md(pd, dnnl_query_weights_md, 1));
    const dnnl_memory_desc_t *dmd = dnn_pd_md(pd, dnnl_query_dst_md, 0);
    int m_dst = m_bias == -1 || m_wei < 0 ? -1 : dnn_output(b, 0, dmd);
    if (m_dst >= 0 && z) {
        int m_z = dnn_input(b, 3, NULL, NULL);
        if (m_z < 0 || dnn_reorder_step(b, m_z, m_dst) != MINFER_OK) {
            m_dst = -1;
        } else {
            dnn_step *step = &b->n->steps[b->n->n_steps - 1];
            step->skip_src = m_z;
            step->skip_dst = m_dst;
            dnnl_memory_desc_t zmd;
            if (!b->check && b->n->mems[m_dst].bind == BIND_OUTPUT &&
                dnn_in_md(b, 3, &zmd) == dnnl_success && dnnl_memory_desc_equal(&zmd, dmd))
                b->prep->output_inplace[0] = 3;
        }
    }
    if (m_dst < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int mems[4] = {m_src, m_wei, m_dst, m_bias};
    return dnn_step_add(b, pd, bias ? 4 : 3, args, mems);
}

/* A ConvTranspose whose windows neither overlap nor leave gaps (strides
 * equal to the kernel, no padding, dilation 1, one group: the 2x2
 * stride-2 upsampling of a UNet decoder) is a matrix product: each input
 * pixel's C channels times W, read as [C, M x K] (K: the kernel's
 * elements), give the M x K output values its window covers. oneDNN 2.6's
 * deconvolution ran such nodes 2 to 4 times slower than the product and a
 * reorder together (UNet's three at one thread, 0.16 to 0.46 ms against
 * 0.08 to 0.12). The product writes [pixels, M, K] to the workspace, and a
 * reorder scatters it into Y channels-last: Y read as [N, in_1, k_1, ...,
 * in_d, k_d, M] is that buffer with its axes permuted. X is read
 * channels-last as [pixels, C] (reordered into that when it arrives
 * otherwise). *taken: 0 when the node is not of this form or oneDNN has no
 * implementation of the product other than a reference one (nothing was
 * built: the caller builds the deconvolution), else the status. */
static minfer_status transpose_as_matmul(dnn_b *b, const dnn_window *win, int64_t G,
                                         const int64_t *od, const int64_t *pl,
                                         const int64_t *pr, int *taken) {
    const minfer_value_desc *x = dnn_in(b, 0), *w = dnn_in(b, 1), *bias = dnn_in(b, 2);
    int nsp = x->rank - 2;
    int64_t M = w->dims[1], C = x->dims[1], K = 1, pix = x->dims[0];
    *taken = 0;
    if (G != 1 || b->pio || (bias && !bias->const_data))
        return MINFER_OK;
    for (int i = 0; i < nsp; i++) {
        if (win->stride[i] != w->dims[2 + i] || win->dil[i] != 1 || pl[i] || pr[i] ||
            od[2 + i] != x->dims[2 + i] * w->dims[2 + i])
            return MINFER_OK;
        K *= w->dims[2 + i];
        pix *= x->dims[2 + i];
    }
    int64_t a_dims[2] = {pix, C}, w_dims[2] = {C, M * K}, d_dims[2] = {pix, M * K};
    int64_t b_dims[2] = {1, M * K};
    dnnl_memory_desc_t a_md, w_plain, w_any, d_md, b_md;
    dnnl_dims_t wd = {C, M * K};
    if (dnn_plain_md(&a_md, 2, a_dims) != dnnl_success ||
        dnn_plain_md(&w_plain, 2, w_dims) != dnnl_success ||
        dnn_plain_md(&d_md, 2, d_dims) != dnnl_success ||
        dnn_plain_md(&b_md, 2, b_dims) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&w_any, 2, wd, dnnl_f32, dnnl_format_tag_any) !=
            dnnl_success)
        return MINFER_OK;
    dnnl_matmul_desc_t md;
    if (dnnl_matmul_desc_init(&md, &a_md, &w_any, bias ? &b_md : NULL, &d_md) != dnnl_success)
        return MINFER_OK;
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_primitive_desc_t pd = NULL;
    if (!attr)
        return MINFER_OK;
    minfer_status st = dnn_pd(b, &md, attr, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return MINFER_OK; /* a reference product only: the deconvolution */
    *taken = 1;

    /* The permuted views: Y's bytes as [N, in_1, k_1, ..., M] (dense), the
     * product's as the same dims with its strides. */
    dnnl_dims_t xd, yd, pd_dims, tmp_st;
    to_dnnl(xd, x->dims, x->rank, 0);
    to_dnnl(yd, od, x->rank, 0);
    int r = 2 + 2 * nsp;
    int64_t perm_dims[2 + 2 * DNN_MAX_SPATIAL], stride = M * K;
    pd_dims[0] = perm_dims[0] = x->dims[0];
    for (int i = nsp - 1; i >= 0; i--) {
        pd_dims[1 + 2 * i] = perm_dims[1 + 2 * i] = x->dims[2 + i];
        tmp_st[1 + 2 * i] = stride;
        stride *= x->dims[2 + i];
    }
    tmp_st[0] = stride;
    int64_t ks = 1;
    for (int i = nsp - 1; i >= 0; i--) {
        pd_dims[2 + 2 * i] = perm_dims[2 + 2 * i] = w->dims[2 + i];
        tmp_st[2 + 2 * i] = ks;
        ks *= w->dims[2 + i];
    }
    pd_dims[r - 1] = perm_dims[r - 1] = M;
    tmp_st[r - 1] = K;
    dnnl_memory_desc_t x_cl, y_cl, tmp_perm, y_perm;
    if (dnnl_memory_desc_init_by_tag(&x_cl, x->rank, xd, dnnl_f32, cl_tags[nsp - 1]) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&y_cl, x->rank, yd, dnnl_f32, cl_tags[nsp - 1]) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_strides(&tmp_perm, r, pd_dims, dnnl_f32, tmp_st) !=
            dnnl_success ||
        dnn_plain_md(&y_perm, r, perm_dims) != dnnl_success) {
        dnnl_primitive_desc_destroy(pd);
        return dnn_decline(b, "could not describe the scattered product");
    }
    dnn_mem *mems = b->n->mems;
    int m_x = dnn_input(b, 0, NULL, &x_cl);
    int m_a = m_x < 0 ? -1 : dnn_mem_new(b, &a_md, mems[m_x].bind, mems[m_x].index);
    int m_w = m_a < 0 ? -1 : dnn_const_input(b, 1, &w_plain, dnn_pd_md(pd, dnnl_query_weights_md, 0), 1.0f);
    int m_b = -2;
    if (m_w >= 0 && bias) {
        float *e = NULL;
        if (!b->check) {
            const float *bv = bias->const_data;
            if (bias->const_nbytes < (size_t)M * sizeof(float) ||
                !(e = malloc((size_t)(M * K) * sizeof *e))) {
                dnnl_primitive_desc_destroy(pd);
                return dnn_decline(b, "could not expand the bias");
            }
            for (int64_t m = 0; m < M; m++)
                for (int64_t k = 0; k < K; k++)
                    e[m * K + k] = bv[m];
        }
        m_b = dnn_owned_plain(b, &b_md, e);
        free(e);
    }
    int m_d = m_w < 0 || m_b == -1 ? -1 : dnn_ws_mem(b, &d_md);
    int m_y = m_d < 0 ? -1 : dnn_output(b, 0, &y_cl);
    int m_tp = m_y < 0 ? -1 : dnn_mem_new(b, &tmp_perm, BIND_WS, -1);
    int m_yp = m_tp < 0 ? -1 : dnn_mem_new(b, &y_perm, mems[m_y].bind, mems[m_y].index);
    if (m_yp < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    mems[m_a].off = mems[m_x].off;
    mems[m_tp].off = mems[m_d].off;
    mems[m_yp].off = mems[m_y].off;
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int ms[4] = {m_a, m_w, m_d, m_b};
    if ((st = dnn_step_add(b, pd, bias ? 4 : 3, args, ms)) != MINFER_OK ||
        (st = dnn_reorder_step(b, m_tp, m_yp)) != MINFER_OK)
        return st;
    if (!b->check)
        b->ctx->api->log(b->ctx->host, MINFER_LOG_VERBOSE,
                         "onednn: node '%s' (ConvTranspose) runs as a matrix product",
                         b->node->name);
    return MINFER_OK;
}

minfer_status dnn_build_conv_transpose(dnn_b *b) {
    const minfer_value_desc *x = dnn_in(b, 0), *w = dnn_in(b, 1), *bias = dnn_in(b, 2);
    dnn_window win;
    minfer_status st;
    if (!x || !w)
        return dnn_decline(b, "needs X and W");
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return dnn_decline(b, "only 1-D to 3-D with matching X and W ranks");
    int nsp = x->rank - 2;
    if ((st = dnn_window_parse(b, nsp, w->dims + 2, &win)) != MINFER_OK)
        return st;
    int64_t G = dnn_attr_int(b, "group", 1);
    int64_t N = x->dims[0], C = x->dims[1];
    if (G < 1 || C % G || w->dims[0] != C)
        return dnn_decline(b, "channels and group do not fit");
    int64_t Mg = w->dims[1], M = Mg * G;
    if (bias && (bias->rank != 1 || bias->dims[0] != M))
        return dnn_decline(b, "bias must have %lld elements", (long long)M);
    int64_t opad[DNN_MAX_SPATIAL] = {0}, oshape[MINFER_MAX_RANK];
    size_t n_op = 0, n_os = 0;
    int r;
    if ((r = dnn_attr_ints(b, "output_padding", opad, DNN_MAX_SPATIAL, &n_op)) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n_op != (size_t)nsp)
        return dnn_decline(b, "output_padding has %zu entries", n_op);
    if ((r = dnn_attr_ints(b, "output_shape", oshape, MINFER_MAX_RANK, &n_os)) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n_os != (size_t)nsp && n_os != (size_t)x->rank)
        return dnn_decline(b, "output_shape has %zu entries", n_os);
    int64_t od[MINFER_MAX_RANK] = {0}, pl[DNN_MAX_SPATIAL], pr[DNN_MAX_SPATIAL];
    od[0] = N;
    od[1] = M;
    for (int i = 0; i < nsp; i++) {
        int64_t in = x->dims[2 + i], s = win.stride[i];
        int64_t dk = (win.kernel[i] - 1) * win.dil[i] + 1, total;
        if (n_os) {
            od[2 + i] = oshape[n_os - (size_t)nsp + (size_t)i];
            total = s * (in - 1) + opad[i] + dk - od[2 + i];
            if (win.auto_pad == DNN_PAD_SAME_UPPER) {
                pl[i] = total / 2;
            } else {
                pl[i] = total - total / 2;
            }
        } else if (win.auto_pad == DNN_PAD_SAME_UPPER || win.auto_pad == DNN_PAD_SAME_LOWER) {
            od[2 + i] = in * s;
            total = s * (in - 1) + opad[i] + dk - od[2 + i];
            pl[i] = win.auto_pad == DNN_PAD_SAME_UPPER ? total / 2 : total - total / 2;
        } else {
            pl[i] = win.pads[i];
            od[2 + i] = s * (in - 1) + opad[i] + dk - win.pads[i] - win.pads[nsp + i];
        }
        if (od[2 + i] < 1 || pl[i] < 0)
            return dnn_decline(b, "output size or padding out of range");
        pr[i] = (in - 1) * s + dk - od[2 + i] - pl[i];
        if (pr[i] < 0)
            return dnn_decline(b, "output_padding beyond the end padding is not supported");
    }
    if ((st = dnn_check_out(b, 0, x->rank, od)) != MINFER_OK)
        return st;
    int taken;
    st = transpose_as_matmul(b, &win, G, od, pl, pr, &taken);
    if (taken)
        return st;

    dnnl_memory_desc_t src_any, wei_any, wei_plain, bias_md, dst_any;
    dnnl_dims_t xd, wd, ws, dd, strides, dil, padl, padr;
    int wr = x->rank;
    to_dnnl(xd, x->dims, x->rank, 0);
    to_dnnl(dd, od, x->rank, 0);
    /* ONNX W is [C, M/G, k...] (per group: input channel major); oneDNN
     * wants [G,] OC/G, IC/G, k... : describe the ONNX bytes by strides. */
    int64_t K = dnn_numel(nsp, w->dims + 2), Cg = C / G;
    int o = 0;
    if (G > 1) {
        wd[0] = G;
        ws[0] = Cg * Mg * K;
        o = 1;
        wr++;
    }
    wd[o] = Mg;
    ws[o] = K;
    wd[o + 1] = Cg;
    ws[o + 1] = Mg * K;
    int64_t sp = 1;
    for (int i = nsp - 1; i >= 0; i--) {
        wd[o + 2 + i] = w->dims[2 + i];
        ws[o + 2 + i] = sp;
        sp *= w->dims[2 + i];
    }
    to_dnnl(strides, win.stride, nsp, 0);
    to_dnnl(dil, win.dil, nsp, 1);
    to_dnnl(padl, pl, nsp, 0);
    to_dnnl(padr, pr, nsp, 0);
    dnnl_memory_desc_init_by_tag(&src_any, x->rank, xd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wei_any, wr, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_strides(&wei_plain, wr, wd, dnnl_f32, ws);
    dnnl_memory_desc_init_by_tag(&dst_any, x->rank, dd, dnnl_f32, dnnl_format_tag_any);
    if (bias)
        dnn_plain_md(&bias_md, 1, &M);
    dnnl_deconvolution_desc_t dc;
    dnnl_status_t s = dnnl_dilated_deconvolution_forward_desc_init(
        &dc, dnnl_forward_inference, dnnl_deconvolution_direct, &src_any, &wei_any,
        bias ? &bias_md : NULL, &dst_any, strides, dil, padl, padr);
    if (s != dnnl_success)
        return dnn_fail(b, s, "deconvolution descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t src_cl, dst_cl;
    if (attr && arrives_channels_last(b, xd, x->rank, &src_cl) &&
        dnnl_memory_desc_init_by_tag(&dst_cl, x->rank, dd, dnnl_f32,
                                     cl_tags[x->rank - 3]) == dnnl_success) {
        /* X comes channels-last (from a convolution): keep that layout for
         * source and destination, as dnn_build_conv does. */
        dnnl_deconvolution_desc_t cl;
        if (dnnl_dilated_deconvolution_forward_desc_init(
                &cl, dnnl_forward_inference, dnnl_deconvolution_direct, &src_cl, &wei_any,
                bias ? &bias_md : NULL, &dst_cl, strides, dil, padl, padr) != dnnl_success ||
            dnn_pd(b, &cl, attr, &pd) != MINFER_OK)
            pd = NULL;
    }
    if (!pd)
        st = attr ? dnn_pd(b, &dc, attr, &pd) : dnn_decline(b, "out of memory");
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;
    int m_src = dnn_input(b, 0, NULL, dnn_pd_md(pd, dnnl_query_src_md, 0));
    int m_wei = m_src < 0 ? -1 : dnn_const_input(b, 1, &wei_plain,
                                                 dnn_pd_md(pd, dnnl_query_weights_md, 0), 1.0f);
    int m_bias = !bias || m_wei < 0 ? -2 : dnn_input(b, 2, NULL, dnn_pd_md(pd, dnnl_query_weights_md, 1));
    int m_dst = m_bias == -1 || m_wei < 0 ? -1 : dnn_output(b, 0, dnn_pd_md(pd, dnnl_query_dst_md, 0));
    if (m_dst < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int mems[4] = {m_src, m_wei, m_dst, m_bias};
    return dnn_step_add(b, pd, bias ? 4 : 3, args, mems);
}
