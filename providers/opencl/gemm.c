/*
 * Gemm, MatMul and minfer's FusedGemm / FusedMatMul on the register-blocked
 * kernel of kernels/gemm.cl.
 *
 * A constant B (the weights of a fully connected layer) is packed once at
 * prepare into panels [N/NR][K][NR], whatever transB says, so the kernel's
 * inner loop is two vector loads. MatMul's batch dimensions become grid
 * dimension 2 when both sides have the same batch shape (or one has none);
 * a batch that only A has is folded into M; anything else broadcast is
 * enqueued batch by batch.
 */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

typedef struct gemm_state {
    ocl_state_head head; /* bufs[0]: B (packed when bpacked), [1]: C/bias, [2]: A */
    int matmul;
    int trans_a, trans_b;
    float alpha, beta;
    int bpacked;
    int has_c;
    int act;
    float pa, pb;
} gemm_state;

/* Packs B (element (k, n) at B[k * rsb + n * csb]) into zero-padded panels. */
static minfer_status pack_b(ocl_prep *p, const float *b, int64_t K, int64_t N, int64_t rsb,
                            int64_t csb) {
    int64_t nr = 2 * p->ctx->vw, nt = (N + nr - 1) / nr;
    size_t count = (size_t)(nt * K * nr);
    float *pk = calloc(count ? count : 1, sizeof *pk);
    if (!pk)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory packing weights");
    for (int64_t t = 0; t < nt; t++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < nr && t * nr + j < N; j++)
                pk[(t * K + k) * nr + j] = b[k * rsb + (t * nr + j) * csb];
    minfer_status s = ocl_upload_floats(p, 0, pk, count);
    free(pk);
    return s;
}

static minfer_status prepare(ocl_prep *p, int matmul) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *a = ocl_in_desc(n, 0), *b = ocl_in_desc(n, 1),
                            *c = ocl_in_desc(n, 2);
    if (!a || !b)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs inputs A and B");
    minfer_status s;
    for (size_t i = 0; i < n->n_inputs; i++)
        if ((s = ocl_need_float(p, i)) || (s = ocl_check_size(p, ocl_in_desc(n, i))))
            return s;
    if ((s = ocl_check_size(p, &n->outputs[0])))
        return s;
    gemm_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->matmul = matmul;
    st->alpha = 1.0f;
    st->beta = 1.0f;
    if (strcmp(n->domain, "minfer") == 0 &&
        (s = ocl_parse_activation(p, &st->act, &st->pa, &st->pb)))
        return s;
    if (!matmul) {
        st->trans_a = ocl_attr_int(p, "transA", 0) != 0;
        st->trans_b = ocl_attr_int(p, "transB", 0) != 0;
        st->alpha = ocl_attr_float(p, "alpha", 1.0f);
        st->beta = ocl_attr_float(p, "beta", 1.0f);
        if ((a->rank >= 0 && a->rank != 2) || (b->rank >= 0 && b->rank != 2))
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "A and B must be 2-D");
        if (c && c->rank > 2)
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "C has rank %d", (int)c->rank);
    } else if (c && c->rank >= 0 && c->rank != 1) {
        return ocl_decline(p, "bias must be 1-D");
    }
    st->has_c = c != NULL;
    if (!p->prep)
        return MINFER_OK;
    if (b->const_data && b->rank == 2 && b->dims[0] >= 0 && b->dims[1] >= 0) {
        int64_t K = st->trans_b ? b->dims[1] : b->dims[0], N = st->trans_b ? b->dims[0]
                                                                           : b->dims[1];
        if ((s = st->trans_b ? pack_b(p, b->const_data, K, N, 1, K)
                             : pack_b(p, b->const_data, K, N, N, 1)))
            return s;
        st->bpacked = 1;
    } else if (b->const_data &&
               (s = ocl_upload_floats(p, 0, b->const_data, b->const_nbytes / 4))) {
        return s;
    }
    if (c && c->const_data &&
        (s = ocl_upload_floats(p, 1, c->const_data, c->const_nbytes / 4)))
        return s;
    if (a->const_data && (s = ocl_upload_floats(p, 2, a->const_data, a->const_nbytes / 4)))
        return s;
    return MINFER_OK;
}

minfer_status ocl_prepare_gemm(ocl_prep *p) { return prepare(p, 0); }
minfer_status ocl_prepare_matmul(ocl_prep *p) { return prepare(p, 1); }

typedef struct gemm_call {
    cl_int M, N, K;
    cl_mem a, b, c, y;
    cl_int ao, rsa, csa, bsa, bo, rsb, csb, bsb, bpacked, co, rsc, csc, has_c, yo, ldy, bsy;
} gemm_call;

static minfer_status launch(const ocl_exec *e, const gemm_state *st, gemm_call *c,
                            size_t batch) {
    cl_int act = st->act;
    float alpha = st->alpha, beta = st->beta;
    minfer_status s = ocl_set_args(
        e, OCL_K_gemm, 28, OCL_ARG(c->M), OCL_ARG(c->N), OCL_ARG(c->K), OCL_ARG(c->a),
        OCL_ARG(c->ao), OCL_ARG(c->rsa), OCL_ARG(c->csa), OCL_ARG(c->bsa), OCL_ARG(c->b),
        OCL_ARG(c->bo), OCL_ARG(c->rsb), OCL_ARG(c->csb), OCL_ARG(c->bsb), OCL_ARG(c->bpacked),
        OCL_ARG(c->c), OCL_ARG(c->co), OCL_ARG(c->rsc), OCL_ARG(c->csc), OCL_ARG(c->has_c),
        OCL_ARG(alpha), OCL_ARG(beta), OCL_ARG(c->y), OCL_ARG(c->yo), OCL_ARG(c->ldy),
        OCL_ARG(c->bsy), OCL_ARG(act), OCL_ARG(st->pa), OCL_ARG(st->pb));
    if (s)
        return s;
    size_t nr = 2 * (size_t)e->ctx->vw, mr = (size_t)e->ctx->mr;
    size_t g[3] = {((size_t)c->N + nr - 1) / nr, ((size_t)c->M + mr - 1) / mr, batch};
    size_t l[3] = {e->ctx->is_cpu ? 1 : 16, 1, 1};
    return ocl_enqueue(e, OCL_K_gemm, 3, g, l);
}

minfer_status ocl_execute_gemm(const ocl_exec *e) {
    const gemm_state *st = e->state;
    const minfer_tensor_view *a = ocl_input(e, 0), *b = ocl_input(e, 1), *cv = ocl_input(e, 2);
    if (!a || !b || a->rank != 2 || b->rank != 2)
        return ocl_fail(e, MINFER_ERR_SHAPE, "A and B must be 2-D");
    gemm_call c;
    memset(&c, 0, sizeof c);
    c.M = (cl_int)(st->trans_a ? a->dims[1] : a->dims[0]);
    c.K = (cl_int)(st->trans_a ? a->dims[0] : a->dims[1]);
    c.N = (cl_int)(st->trans_b ? b->dims[0] : b->dims[1]);
    if ((st->trans_b ? b->dims[1] : b->dims[0]) != c.K)
        return ocl_fail(e, MINFER_ERR_SHAPE, "inner dimensions differ");
    c.rsa = st->trans_a ? 1 : c.K;
    c.csa = st->trans_a ? c.M : 1;
    c.rsb = st->trans_b ? 1 : c.N;
    c.csb = st->trans_b ? c.K : 1;
    c.bpacked = st->bpacked;
    ocl_in_buf(e, 0, 2, &c.a, &c.ao);
    ocl_in_buf(e, 1, 0, &c.b, &c.bo);
    int64_t od[2] = {c.M, c.N};
    minfer_status s = ocl_output(e, 0, 2, od, &c.y, &c.yo);
    if (s)
        return s;
    c.ldy = c.N;
    c.c = c.y;
    if (cv && st->beta != 0.0f) {
        int64_t d0 = cv->rank == 2 ? cv->dims[0] : 1, d1 = cv->rank >= 1 ? cv->dims[cv->rank - 1]
                                                                           : 1;
        if ((d0 != 1 && d0 != c.M) || (d1 != 1 && d1 != c.N))
            return ocl_fail(e, MINFER_ERR_SHAPE, "C does not broadcast to [%d,%d]", c.M, c.N);
        c.has_c = 1;
        ocl_in_buf(e, 2, 1, &c.c, &c.co);
        c.csc = d1 == 1 ? 0 : 1;
        c.rsc = d0 == 1 ? 0 : (cl_int)d1;
    }
    return launch(e, st, &c, 1);
}

minfer_status ocl_execute_matmul(const ocl_exec *e) {
    const gemm_state *st = e->state;
    const minfer_tensor_view *a = ocl_input(e, 0), *b = ocl_input(e, 1), *bias = ocl_input(e, 2);
    if (!a || !b || a->rank < 1 || b->rank < 1)
        return ocl_fail(e, MINFER_ERR_SHAPE, "A and B must have rank >= 1");
    int64_t M = a->rank == 1 ? 1 : a->dims[a->rank - 2], K = a->dims[a->rank - 1];
    int64_t Kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    int64_t N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (K != Kb)
        return ocl_fail(e, MINFER_ERR_SHAPE, "inner dimensions differ (%lld, %lld)",
                        (long long)K, (long long)Kb);
    /* Batch shapes, right-aligned to the longer one. */
    int ra = a->rank > 2 ? a->rank - 2 : 0, rb = b->rank > 2 ? b->rank - 2 : 0;
    int rbat = ra > rb ? ra : rb;
    int64_t ba[OCL_MAX_RANK], bb[OCL_MAX_RANK], bo[OCL_MAX_RANK];
    int64_t na = 1, nb = 1, nbatch = 1;
    for (int i = 0; i < rbat; i++) {
        ba[i] = i - (rbat - ra) >= 0 ? a->dims[i - (rbat - ra)] : 1;
        bb[i] = i - (rbat - rb) >= 0 ? b->dims[i - (rbat - rb)] : 1;
        if (ba[i] != bb[i] && ba[i] != 1 && bb[i] != 1)
            return ocl_fail(e, MINFER_ERR_SHAPE, "batch dimensions do not broadcast");
        bo[i] = ba[i] == 1 ? bb[i] : ba[i];
        na *= ba[i];
        nb *= bb[i];
        nbatch *= bo[i];
    }
    int64_t od[OCL_MAX_RANK];
    int orank = 0;
    for (int i = 0; i < rbat; i++)
        od[orank++] = bo[i];
    if (a->rank > 1)
        od[orank++] = M;
    if (b->rank > 1)
        od[orank++] = N;
    gemm_call c;
    memset(&c, 0, sizeof c);
    minfer_status s = ocl_output(e, 0, orank, od, &c.y, &c.yo);
    if (s)
        return s;
    ocl_in_buf(e, 0, 2, &c.a, &c.ao);
    ocl_in_buf(e, 1, 0, &c.b, &c.bo);
    c.M = (cl_int)M;
    c.N = (cl_int)N;
    c.K = (cl_int)K;
    c.rsa = (cl_int)K;
    c.csa = 1;
    c.rsb = (cl_int)N;
    c.csb = 1;
    c.ldy = (cl_int)N;
    c.bpacked = st->bpacked;
    c.c = c.y;
    if (bias) {
        if (bias->rank != 1 || bias->dims[0] != N)
            return ocl_fail(e, MINFER_ERR_SHAPE, "bias must have %lld elements", (long long)N);
        c.has_c = 1;
        ocl_in_buf(e, 2, 1, &c.c, &c.co);
        c.csc = 1;
    }
    if (nbatch == 0 || M == 0 || N == 0)
        return MINFER_OK;
    if (nb == 1) { /* every batch of A against one B: one tall GEMM */
        c.M = (cl_int)(M * nbatch);
        return launch(e, st, &c, 1);
    }
    if (st->bpacked)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "packed B with a batch");
    int equal = na == nbatch && nb == nbatch;
    if (equal || na == 1) {
        c.bsa = equal ? (cl_int)(M * K) : 0;
        c.bsb = (cl_int)(K * N);
        c.bsy = (cl_int)(M * N);
        return launch(e, st, &c, (size_t)nbatch);
    }
    /* General broadcast: one launch per output batch. */
    cl_int a0 = c.ao, b0 = c.bo, y0 = c.yo;
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t rem = t, offa = 0, offb = 0, sa = 1, sb = 1;
        for (int i = rbat - 1; i >= 0; i--) {
            int64_t q = rem % bo[i];
            rem /= bo[i];
            offa += (ba[i] == 1 ? 0 : q) * sa;
            offb += (bb[i] == 1 ? 0 : q) * sb;
            sa *= ba[i];
            sb *= bb[i];
        }
        c.ao = a0 + (cl_int)(offa * M * K);
        c.bo = b0 + (cl_int)(offb * K * N);
        c.yo = y0 + (cl_int)(t * M * N);
        if ((s = launch(e, st, &c, 1)))
            return s;
    }
    return MINFER_OK;
}
