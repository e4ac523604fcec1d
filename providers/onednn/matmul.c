/*
 * MatMul, FusedMatMul, Gemm and FusedGemm as the oneDNN matmul primitive.
 *
 * Activations stay plain row-major (a transposed Gemm operand is described
 * by strides, not copied). Constant weights are packed once into the layout
 * the matmul chooses (format_tag_any), with Gemm's alpha folded in. A bias
 * that broadcasts along rows becomes the matmul bias; any other Gemm C
 * becomes a binary-add post-op (beta folded in when C is constant), and the
 * fused activation an eltwise post-op after it. A MatMul whose B has no
 * batch axes folds A's leading axes into M: one GEMM instead of a batch of
 * small ones (a [seq, 1, K] x [K, N] product is seq GEMMs of one row).
 */
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

static void dims_of(dnnl_dims_t d, const int64_t *v, int n) {
    for (int i = 0; i < n; i++)
        d[i] = v[i];
}

minfer_status dnn_build_matmul(dnn_b *b) {
    const minfer_value_desc *a = dnn_in(b, 0), *w = dnn_in(b, 1);
    int fused = !strcmp(b->node->domain, "minfer");
    const minfer_value_desc *bias = fused ? dnn_in(b, 2) : NULL;
    minfer_status st;
    if (!a || !w || a->rank < 1 || w->rank < 1)
        return dnn_decline(b, "needs A and B of rank >= 1");
    int ra = a->rank < 2 ? 2 : a->rank, rb = w->rank < 2 ? 2 : w->rank;
    int r = ra > rb ? ra : rb;
    if (r > DNNL_MAX_NDIMS || r > MINFER_MAX_RANK)
        return dnn_decline(b, "rank %d is too large", r);
    int64_t ad[MINFER_MAX_RANK], bd[MINFER_MAX_RANK], od[MINFER_MAX_RANK];
    for (int i = 0; i < r; i++)
        ad[i] = bd[i] = 1;
    /* Right-align, turning a 1-D A into [1, K] and a 1-D B into [K, 1]. */
    if (a->rank == 1)
        ad[r - 1] = a->dims[0];
    else
        memcpy(ad + r - a->rank, a->dims, (size_t)a->rank * sizeof ad[0]);
    if (w->rank == 1)
        bd[r - 2] = w->dims[0];
    else
        memcpy(bd + r - w->rank, w->dims, (size_t)w->rank * sizeof bd[0]);
    int64_t M = ad[r - 2], K = ad[r - 1], N = bd[r - 1];
    if (bd[r - 2] != K)
        return dnn_decline(b, "inner dimensions differ");
    for (int i = 0; i < r - 2; i++) {
        if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1)
            return dnn_decline(b, "batch dimensions do not broadcast");
        od[i] = ad[i] > bd[i] ? ad[i] : bd[i];
    }
    od[r - 2] = M;
    od[r - 1] = N;
    /* The host's output shape drops the axes a 1-D operand lacked. */
    int64_t hd[MINFER_MAX_RANK];
    int hr = 0;
    for (int i = 0; i < r - 2; i++)
        hd[hr++] = od[i];
    if (a->rank > 1)
        hd[hr++] = M;
    if (w->rank > 1)
        hd[hr++] = N;
    if ((st = dnn_check_out(b, 0, hr, hd)) != MINFER_OK)
        return st;
    if (bias && (bias->rank != 1 || bias->dims[0] != N))
        return dnn_decline(b, "bias must be 1-D with %lld elements", (long long)N);

    /* B without batch axes (2-D, or leading 1s): A's leading axes fold into
     * M, one [batch * M, K] x [K, N] product on the same plain buffers
     * instead of a batch of [M, K] ones (a batch of M = 1 rows runs at a
     * fraction of the GEMM's speed), with B packed once for that M. */
    int b_flat = 1;
    for (int i = 0; i < r - 2; i++)
        b_flat = b_flat && bd[i] == 1;
    if (r > 2 && b_flat) {
        ad[0] = od[0] = dnn_numel(r - 1, ad);
        ad[1] = K;
        bd[0] = K;
        bd[1] = od[1] = N;
        r = 2;
    }
    dnnl_memory_desc_t a_md, a_want, w_md, w_want, d_md, bias_md;
    dnnl_dims_t wdims;
    dnn_plain_md(&a_md, r, ad);
    dnn_plain_md(&w_md, r, bd);
    dnn_plain_md(&d_md, r, od);
    dims_of(wdims, bd, r);
    /* precision bf16: a product with constant weights reads A and B in
     * bfloat16 (B packed once), accumulating in float. */
    int lowp = dnn_lowp(b, (double)dnn_numel(r, od) * (double)K) && w->const_data;
    a_want = a_md;
    if (lowp)
        a_want.data_type = dnnl_bf16;
    if (w->const_data)
        dnnl_memory_desc_init_by_tag(&w_want, r, wdims, lowp ? dnnl_bf16 : dnnl_f32,
                                     dnnl_format_tag_any);
    else
        w_want = w_md;
    if (bias) {
        int64_t bdims[MINFER_MAX_RANK];
        for (int i = 0; i < r; i++)
            bdims[i] = 1;
        bdims[r - 1] = N;
        dnn_plain_md(&bias_md, r, bdims);
    }
    dnnl_matmul_desc_t md;
    dnnl_status_t s = dnnl_matmul_desc_init(&md, &a_want, &w_want, bias ? &bias_md : NULL, &d_md);
    if (s != dnnl_success)
        return dnn_fail(b, s, "matmul descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_post_ops_t po = NULL;
    if (!attr || dnnl_post_ops_create(&po) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return dnn_decline(b, "out of memory");
    }
    st = fused ? dnn_append_activation(b, po) : MINFER_OK;
    if (st == MINFER_OK && dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
        st = dnn_decline(b, "could not set post-ops");
    dnnl_post_ops_destroy(po);
    dnnl_primitive_desc_t pd = NULL;
    if (st == MINFER_OK)
        st = dnn_pd(b, &md, attr, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;
    int m_a = dnn_input(b, 0, &a_md, lowp ? &a_want : NULL);
    int m_w = m_a < 0 ? -1
                      : dnn_const_input(b, 1, &w_md, dnn_pd_md(pd, dnnl_query_weights_md, 0), 1.0f);
    int m_b = !bias || m_w < 0 ? -2 : dnn_input(b, 2, &bias_md, NULL);
    int m_d = m_b == -1 || m_w < 0 ? -1 : dnn_output(b, 0, &d_md);
    if (m_d < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    int mems[4] = {m_a, m_w, m_d, m_b};
    return dnn_step_add(b, pd, bias ? 4 : 3, args, mems);
}

minfer_status dnn_build_gemm(dnn_b *b) {
    const minfer_value_desc *a = dnn_in(b, 0), *w = dnn_in(b, 1), *c = dnn_in(b, 2);
    int fused = !strcmp(b->node->domain, "minfer");
    minfer_status st;
    if (!a || !w || a->rank != 2 || w->rank != 2)
        return dnn_decline(b, "A and B must be 2-D");
    int ta = dnn_attr_int(b, "transA", 0) != 0, tb = dnn_attr_int(b, "transB", 0) != 0;
    float alpha = dnn_attr_float(b, "alpha", 1.0f), beta = dnn_attr_float(b, "beta", 1.0f);
    int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    int64_t N = tb ? w->dims[0] : w->dims[1];
    if ((tb ? w->dims[1] : w->dims[0]) != K)
        return dnn_decline(b, "inner dimensions differ");
    int64_t od[2] = {M, N};
    if ((st = dnn_check_out(b, 0, 2, od)) != MINFER_OK)
        return st;
    if (beta == 0.0f)
        c = NULL;
    int64_t cd[2] = {1, 1};
    if (c) {
        if (c->rank > 2)
            return dnn_decline(b, "C must have rank <= 2");
        if (c->rank >= 1)
            cd[1] = c->dims[c->rank - 1];
        if (c->rank == 2)
            cd[0] = c->dims[0];
        if ((cd[0] != 1 && cd[0] != M) || (cd[1] != 1 && cd[1] != N))
            return dnn_decline(b, "C does not broadcast to [M, N]");
        if (!c->const_data && beta != 1.0f)
            return dnn_decline(b, "beta != 1 needs a constant C");
    }
    int fold_alpha = alpha != 1.0f && w->const_data;
    int scale_out = alpha != 1.0f && !fold_alpha;
    int c_as_bias = c && cd[0] == 1 && cd[1] == N && !scale_out;
    /* oneDNN's matmul has JIT kernels for a [1, N] bias and for full or
     * scalar binary post-ops, not for a column [M, 1]: a constant C of
     * another shape is expanded to [M, N] once (beta folded in). */
    int c_expand = c && !c_as_bias && c->const_data && !(cd[0] == M && cd[1] == N);
    int64_t c_dims[2] = {c_expand ? M : cd[0], c_expand ? N : cd[1]};
    if (c && c->const_data && c->dtype != MINFER_DTYPE_FLOAT && (beta != 1.0f || c_expand))
        return dnn_decline(b, "a float16 C scaled by beta or broadcast");

    dnnl_memory_desc_t a_md, a_want, w_md, w_want, d_md, c_md;
    dnnl_dims_t ad = {M, K}, wd = {K, N}, as, ws;
    int lowp = dnn_lowp(b, (double)M * (double)N * (double)K) && w->const_data; /* as MatMul */
    as[0] = ta ? 1 : K;
    as[1] = ta ? M : 1;
    ws[0] = tb ? 1 : N;
    ws[1] = tb ? K : 1;
    dnnl_memory_desc_init_by_strides(&a_md, 2, ad, dnnl_f32, as);
    dnnl_memory_desc_init_by_strides(&w_md, 2, wd, dnnl_f32, ws);
    dnn_plain_md(&d_md, 2, od);
    a_want = a_md;
    if (lowp)
        a_want.data_type = dnnl_bf16;
    if (w->const_data)
        dnnl_memory_desc_init_by_tag(&w_want, 2, wd, lowp ? dnnl_bf16 : dnnl_f32,
                                     dnnl_format_tag_any);
    else
        w_want = w_md;
    if (c)
        dnn_plain_md(&c_md, 2, c_dims);
    dnnl_matmul_desc_t md;
    dnnl_status_t s = dnnl_matmul_desc_init(&md, &a_want, &w_want, c_as_bias ? &c_md : NULL, &d_md);
    if (s != dnnl_success)
        return dnn_fail(b, s, "matmul descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_post_ops_t po = NULL;
    if (!attr || dnnl_post_ops_create(&po) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return dnn_decline(b, "out of memory");
    }
    st = MINFER_OK;
    if (scale_out && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha) != dnnl_success)
        st = dnn_decline(b, "could not set alpha");
    if (st == MINFER_OK && c && !c_as_bias &&
        dnnl_post_ops_append_binary(po, dnnl_binary_add, &c_md) != dnnl_success)
        st = dnn_decline(b, "could not add C as a post-op");
    if (st == MINFER_OK && fused)
        st = dnn_append_activation(b, po);
    if (st == MINFER_OK && dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
        st = dnn_decline(b, "could not set post-ops");
    dnnl_post_ops_destroy(po);
    dnnl_primitive_desc_t pd = NULL;
    if (st == MINFER_OK)
        st = dnn_pd(b, &md, attr, &pd);
    dnnl_primitive_attr_destroy(attr);
    if (st != MINFER_OK)
        return st;
    int m_a = dnn_input(b, 0, &a_md, lowp ? &a_want : NULL);
    int m_w = m_a < 0 ? -1
                      : dnn_const_input(b, 1, &w_md, dnn_pd_md(pd, dnnl_query_weights_md, 0),
                                        fold_alpha ? alpha : 1.0f);
    int m_c = -2;
    if (c && m_w >= 0) {
        if (c->const_data && (beta != 1.0f || c_expand)) {
            float *tmp = NULL;
            size_t n = (size_t)(c_dims[0] * c_dims[1]);
            if (!b->check) {
                const float *src = c->const_data;
                if (c->const_nbytes < (size_t)(cd[0] * cd[1]) * sizeof(float) ||
                    !(tmp = malloc(n * sizeof *tmp))) {
                    dnnl_primitive_desc_destroy(pd);
                    return dnn_decline(b, "could not scale C");
                }
                for (int64_t i = 0; i < c_dims[0]; i++)
                    for (int64_t j = 0; j < c_dims[1]; j++)
                        tmp[i * c_dims[1] + j] =
                            beta * src[(cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j)];
            }
            m_c = dnn_owned_plain(b, &c_md, tmp);
            free(tmp);
        } else {
            m_c = dnn_input(b, 2, &c_md, NULL);
        }
    }
    int m_d = m_c == -1 || m_w < 0 ? -1 : dnn_output(b, 0, &d_md);
    if (m_d < 0) {
        dnnl_primitive_desc_destroy(pd);
        return MINFER_ERR_UNSUPPORTED;
    }
    int args[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, 0};
    int mems[4] = {m_a, m_w, m_d, m_c};
    int n_args = 3;
    if (c) {
        args[3] = c_as_bias ? DNNL_ARG_BIAS : (DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1);
        n_args = 4;
    }
    return dnn_step_add(b, pd, n_args, args, mems);
}
