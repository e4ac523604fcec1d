/*
 * minfer:Attention (docs/fused-ops.md) as three oneDNN primitives:
 *
 *   S = scale * (Q @ KT) + mask    matmul, output scale, binary-add post-op
 *   S = softmax(S, last axis)      softmax_v2, in place
 *   Y = S @ V                      matmul
 *
 * Q [..., Sq, D], KT [..., D, Sk], V [..., Sk, Dv] are plain row-major; the
 * leading axes broadcast as in MatMul (oneDNN's matmul broadcasts batch
 * axes of either operand). The scores S [batch..., Sq, Sk] live in the
 * workspace. When oneDNN has no JIT kernel for the mask's broadcast as a
 * post-op, the mask is added by a separate binary primitive instead.
 */
#include <string.h>

#include "onednn.h"

/* dims right-aligned into r axes, leading 1s. */
static void pad_dims(int64_t *out, int r, const minfer_value_desc *v) {
    for (int i = 0; i < r; i++)
        out[i] = 1;
    memcpy(out + r - v->rank, v->dims, (size_t)v->rank * sizeof out[0]);
}

static int bcast(int64_t a, int64_t b, int64_t *o) {
    if (a != b && a != 1 && b != 1)
        return 0;
    *o = a > b ? a : b;
    return 1;
}

/* Matmul pd src x wei -> dst with an optional output scale and mask
 * post-op (mask_md NULL: none). */
static minfer_status scores_pd(dnn_b *b, const dnnl_memory_desc_t *src,
                               const dnnl_memory_desc_t *wei, const dnnl_memory_desc_t *dst,
                               float scale, const dnnl_memory_desc_t *mask_md,
                               dnnl_primitive_desc_t *pd) {
    dnnl_matmul_desc_t md;
    dnnl_status_t s = dnnl_matmul_desc_init(&md, src, wei, NULL, dst);
    if (s != dnnl_success)
        return dnn_fail(b, s, "matmul descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    dnnl_post_ops_t po = NULL;
    if (!attr || dnnl_post_ops_create(&po) != dnnl_success) {
        dnnl_primitive_attr_destroy(attr);
        return dnn_decline(b, "out of memory");
    }
    minfer_status st = MINFER_OK;
    if (scale != 1.0f && dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale) != dnnl_success)
        st = dnn_decline(b, "could not set the scale");
    if (st == MINFER_OK && mask_md &&
        dnnl_post_ops_append_binary(po, dnnl_binary_add, mask_md) != dnnl_success)
        st = dnn_decline(b, "could not add the mask as a post-op");
    if (st == MINFER_OK && dnnl_primitive_attr_set_post_ops(attr, po) != dnnl_success)
        st = dnn_decline(b, "could not set post-ops");
    dnnl_post_ops_destroy(po);
    if (st == MINFER_OK)
        st = dnn_pd(b, &md, attr, pd);
    dnnl_primitive_attr_destroy(attr);
    return st;
}

minfer_status dnn_build_attention(dnn_b *b) {
    const minfer_value_desc *q = dnn_in(b, 0), *kt = dnn_in(b, 1), *v = dnn_in(b, 2);
    const minfer_value_desc *mask = dnn_in(b, 3);
    minfer_status st;
    if (!q || !kt || !v || q->rank < 2 || kt->rank < 2 || v->rank < 2)
        return dnn_decline(b, "Q, KT and V need rank >= 2");
    int r = q->rank;
    if (kt->rank > r)
        r = kt->rank;
    if (v->rank > r)
        r = v->rank;
    if (mask && mask->rank > r)
        return dnn_decline(b, "mask has a higher rank than the scores");
    if (r > DNNL_MAX_NDIMS || r > MINFER_MAX_RANK)
        return dnn_decline(b, "rank %d is too large", r);
    int64_t qd[MINFER_MAX_RANK], kd[MINFER_MAX_RANK], vd[MINFER_MAX_RANK];
    int64_t sd[MINFER_MAX_RANK], od[MINFER_MAX_RANK], md_[MINFER_MAX_RANK];
    pad_dims(qd, r, q);
    pad_dims(kd, r, kt);
    pad_dims(vd, r, v);
    int64_t Sq = qd[r - 2], D = qd[r - 1], Sk = kd[r - 1], Dv = vd[r - 1];
    if (kd[r - 2] != D || vd[r - 2] != Sk)
        return dnn_decline(b, "Q, KT and V inner dimensions do not match");
    for (int i = 0; i < r - 2; i++)
        if (!bcast(qd[i], kd[i], &sd[i]) || !bcast(sd[i], vd[i], &od[i]))
            return dnn_decline(b, "leading dimensions do not broadcast");
    sd[r - 2] = od[r - 2] = Sq;
    sd[r - 1] = Sk;
    od[r - 1] = Dv;
    if ((st = dnn_check_out(b, 0, r, od)) != MINFER_OK)
        return st;
    if (mask) {
        pad_dims(md_, r, mask);
        for (int i = 0; i < r; i++)
            if (md_[i] != 1 && md_[i] != sd[i])
                return dnn_decline(b, "mask does not broadcast to the scores");
    }
    float scale = dnn_attr_float(b, "scale", 1.0f);

    dnnl_memory_desc_t q_md, k_md, v_md, s_md, o_md, m_md;
    dnn_plain_md(&q_md, r, qd);
    dnn_plain_md(&k_md, r, kd);
    dnn_plain_md(&v_md, r, vd);
    dnn_plain_md(&s_md, r, sd);
    dnn_plain_md(&o_md, r, od);
    if (mask)
        dnn_plain_md(&m_md, r, md_);

    /* 1. scores, the mask as a post-op where oneDNN has a kernel for it. */
    dnnl_primitive_desc_t pd1 = NULL, pd_add = NULL;
    int mask_post = mask != NULL;
    st = scores_pd(b, &q_md, &k_md, &s_md, scale, mask ? &m_md : NULL, &pd1);
    if (st == MINFER_ERR_UNSUPPORTED && mask) {
        mask_post = 0;
        st = scores_pd(b, &q_md, &k_md, &s_md, scale, NULL, &pd1);
        if (st == MINFER_OK) {
            dnnl_binary_desc_t bd;
            dnnl_primitive_attr_t attr = dnn_attr_new(b);
            dnnl_status_t s = dnnl_binary_desc_init(&bd, dnnl_binary_add, &s_md, &m_md, &s_md);
            if (s != dnnl_success || !attr)
                st = dnn_fail(b, s, "binary descriptor");
            else
                st = dnn_pd(b, &bd, attr, &pd_add);
            dnnl_primitive_attr_destroy(attr);
        }
    }
    if (st != MINFER_OK) {
        dnnl_primitive_desc_destroy(pd1);
        return st;
    }
    /* 2. softmax over Sk, in place. */
    dnnl_primitive_desc_t pd2 = NULL, pd3 = NULL;
    dnnl_softmax_v2_desc_t smd;
    dnnl_status_t s = dnnl_softmax_v2_forward_desc_init(&smd, dnnl_forward_inference,
                                                        dnnl_softmax_accurate, &s_md, &s_md, r - 1);
    if (s != dnnl_success) {
        st = dnn_fail(b, s, "softmax descriptor");
    } else {
        dnnl_primitive_attr_t attr = dnn_attr_new(b);
        st = attr ? dnn_pd(b, &smd, attr, &pd2) : dnn_decline(b, "out of memory");
        dnnl_primitive_attr_destroy(attr);
    }
    /* 3. Y = P @ V. */
    if (st == MINFER_OK)
        st = scores_pd(b, &s_md, &v_md, &o_md, 1.0f, NULL, &pd3);
    if (st != MINFER_OK) {
        dnnl_primitive_desc_destroy(pd1);
        dnnl_primitive_desc_destroy(pd_add);
        dnnl_primitive_desc_destroy(pd2);
        return st;
    }

    int m_q = dnn_input(b, 0, &q_md, NULL);
    int m_k = m_q < 0 ? -1 : dnn_input(b, 1, &k_md, NULL);
    int m_v = m_k < 0 ? -1 : dnn_input(b, 2, &v_md, NULL);
    int m_m = !mask || m_v < 0 ? -2 : dnn_input(b, 3, &m_md, NULL);
    int m_s = m_v < 0 || m_m == -1 ? -1 : dnn_ws_mem(b, &s_md);
    int m_o = m_s < 0 ? -1 : dnn_output(b, 0, &o_md);
    if (m_o < 0) {
        dnnl_primitive_desc_destroy(pd1);
        dnnl_primitive_desc_destroy(pd_add);
        dnnl_primitive_desc_destroy(pd2);
        dnnl_primitive_desc_destroy(pd3);
        return MINFER_ERR_UNSUPPORTED;
    }
    int a1[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST,
                 DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1};
    int k1[4] = {m_q, m_k, m_s, m_m};
    int a_add[3] = {DNNL_ARG_SRC_0, DNNL_ARG_SRC_1, DNNL_ARG_DST}, k_add[3] = {m_s, m_m, m_s};
    int a2[2] = {DNNL_ARG_SRC, DNNL_ARG_DST}, k2[2] = {m_s, m_s};
    int a3[3] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, k3[3] = {m_s, m_v, m_o};
    st = dnn_step_add(b, pd1, mask_post ? 4 : 3, a1, k1);
    if (pd_add) {
        if (st == MINFER_OK)
            st = dnn_step_add(b, pd_add, 3, a_add, k_add);
        else
            dnnl_primitive_desc_destroy(pd_add);
    }
    if (st == MINFER_OK)
        st = dnn_step_add(b, pd2, 2, a2, k2);
    else
        dnnl_primitive_desc_destroy(pd2);
    if (st == MINFER_OK)
        st = dnn_step_add(b, pd3, 3, a3, k3);
    else
        dnnl_primitive_desc_destroy(pd3);
    return st;
}
