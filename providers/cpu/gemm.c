/*
 * Matrix products: the shared GEMM loop, Gemm and MatMul.
 *
 * The GEMM is the textbook register-blocked loop: C is cut into 16-column
 * panels and 64-row blocks (the parallel work items); inside an item, a
 * 4 x 16 tile of C is accumulated over all of K in locals while a K x 16
 * panel of B stays in cache. No packing: B rows are read 16 wide, A is read
 * through (row, column) strides so a transposed A is free.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define MR 4
#define NR 16
#define MB 64

typedef struct gemm_args {
    size_t M, N, K, rsa, csa, ldb, ldc;
    const void *A, *B;
    void *C;
    int accumulate;
    size_t mblocks;
} gemm_args;

/* ACC is the accumulator: T for floating types; uint64_t for integers so
 * products and sums wrap instead of overflowing. */
#define GEMM(E, T, S, ACC)                                                                 \
    static void gemm_item_##S(const gemm_args *g, size_t item) {                           \
        size_t ib = item % g->mblocks, jp = item / g->mblocks;                             \
        size_t i0 = ib * MB, i1 = i0 + MB < g->M ? i0 + MB : g->M;                         \
        size_t j = jp * NR, nb = g->N - j < NR ? g->N - j : NR;                            \
        const T *A = g->A, *B = (const T *)g->B + j;                                       \
        T *C = (T *)g->C + j;                                                              \
        size_t K = g->K, rsa = g->rsa, csa = g->csa, ldb = g->ldb, ldc = g->ldc;           \
        size_t i = i0;                                                                     \
        for (; i + MR <= i1; i += MR) {                                                    \
            ACC c[MR][NR] = {{0}};                                                         \
            const T *a = A + i * rsa;                                                      \
            for (size_t k = 0; k < K; k++) {                                               \
                const T *b = B + k * ldb;                                                  \
                ACC a0 = (ACC)a[k * csa], a1 = (ACC)a[rsa + k * csa];                      \
                ACC a2 = (ACC)a[2 * rsa + k * csa], a3 = (ACC)a[3 * rsa + k * csa];        \
                if (nb == NR) {                                                            \
                    for (size_t q = 0; q < NR; q++) {                                      \
                        ACC bq = (ACC)b[q];                                                \
                        c[0][q] += a0 * bq;                                                \
                        c[1][q] += a1 * bq;                                                \
                        c[2][q] += a2 * bq;                                                \
                        c[3][q] += a3 * bq;                                                \
                    }                                                                      \
                } else {                                                                   \
                    for (size_t q = 0; q < nb; q++) {                                      \
                        ACC bq = (ACC)b[q];                                                \
                        c[0][q] += a0 * bq;                                                \
                        c[1][q] += a1 * bq;                                                \
                        c[2][q] += a2 * bq;                                                \
                        c[3][q] += a3 * bq;                                                \
                    }                                                                      \
                }                                                                          \
            }                                                                              \
            for (size_t r = 0; r < MR; r++) {                                              \
                T *cr = C + (i + r) * ldc;                                                 \
                for (size_t q = 0; q < nb; q++)                                            \
                    cr[q] = (T)(g->accumulate ? (ACC)cr[q] + c[r][q] : c[r][q]);          \
            }                                                                              \
        }                                                                                  \
        for (; i < i1; i++) {                                                              \
            ACC c[NR] = {0};                                                               \
            const T *a = A + i * rsa;                                                      \
            for (size_t k = 0; k < K; k++) {                                               \
                const T *b = B + k * ldb;                                                  \
                ACC a0 = (ACC)a[k * csa];                                                  \
                for (size_t q = 0; q < nb; q++)                                            \
                    c[q] += a0 * (ACC)b[q];                                                \
            }                                                                              \
            T *cr = C + i * ldc;                                                           \
            for (size_t q = 0; q < nb; q++)                                                \
                cr[q] = (T)(g->accumulate ? (ACC)cr[q] + c[q] : c[q]);                    \
        }                                                                                  \
    }

#define GEMM_FLOAT(E, T, S) GEMM(E, T, S, T)
#define GEMM_INT(E, T, S) GEMM(E, T, S, uint64_t)
CPU_FLOAT_TYPES(GEMM_FLOAT)
CPU_INT_TYPES(GEMM_INT)

typedef struct gemm_job {
    gemm_args g;
    int32_t dtype;
} gemm_job;

static void gemm_range(void *arg, size_t begin, size_t end) {
    const gemm_job *j = arg;
    for (size_t it = begin; it < end; it++) {
        switch (j->dtype) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        gemm_item_##S(&j->g, it);                                                          \
        break;
            CPU_NUM_TYPES(CASE)
#undef CASE
        }
    }
}

void cpu_gemm(const cpu_ctx *ctx, int32_t dtype, int parallel, size_t M, size_t N, size_t K,
              const void *A, size_t rsa, size_t csa, const void *B, size_t ldb, void *C,
              size_t ldc, int accumulate) {
    if (M == 0 || N == 0)
        return;
    if (K == 0) {
        /* An empty sum: C = 0 (or unchanged when accumulating). A and B may
         * have no storage at all, so they are not touched. */
        size_t es = minfer_elem_size(dtype);
        for (size_t i = 0; !accumulate && i < M; i++)
            memset((char *)C + i * ldc * es, 0, N * es);
        return;
    }
    gemm_job j = {{M, N, K, rsa, csa, ldb, ldc, A, B, C, accumulate, (M + MB - 1) / MB},
                  dtype};
    size_t items = j.g.mblocks * ((N + NR - 1) / NR);
    if (!parallel) {
        gemm_range(&j, 0, items);
        return;
    }
    /* About 64k multiply-adds per chunk at least. */
    size_t per = (M < MB ? M : MB) * NR * (K ? K : 1);
    cpu_parallel(ctx, items, (65536 + per - 1) / per, gemm_range, &j);
}

/* ---- Gemm ------------------------------------------------------------------ */

typedef struct gemm_state {
    int trans_a, trans_b;
    float alpha, beta;
    int legacy_no_broadcast; /* opset < 7 with broadcast = 0: C must be M x N */
    size_t packed_n;         /* B^T packed at prepare into packed[] (bytes), or 0 */
    int32_t packed_dtype;
    int64_t packed_dims[2];  /* the constant B's dims the packing was done for */
    size_t ws_pack_b;        /* workspace bytes used to transpose a run-time B */
    _Alignas(16) unsigned char packed[];
} gemm_state;

static int is_float(int32_t t) {
    return t == MINFER_DTYPE_FLOAT || t == MINFER_DTYPE_DOUBLE;
}

/* dst[c][r] = src[r][c] for a rows x cols matrix. */
static void transpose2d(void *dst, const void *src, size_t rows, size_t cols, size_t es) {
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            memcpy((char *)dst + (c * rows + r) * es, (const char *)src + (r * cols + c) * es,
                   es);
}

minfer_status cpu_prepare_gemm(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *a = minfer_kit_input(n, 0), *b = minfer_kit_input(n, 1);
    const minfer_value_desc *c = minfer_kit_input(n, 2);
    if (!a || !b)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs A and B");
    if (!c && p->since < 11)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs input C before opset 11");
    if (b->dtype && a->dtype && b->dtype != a->dtype)
        return cpu_decline(p, "A and B types differ");
    float alpha = cpu_attr_float(p, "alpha", 1.0f), beta = cpu_attr_float(p, "beta", 1.0f);
    if (a->dtype && !is_float(a->dtype) && (alpha != 1.0f || (c && beta != 1.0f)))
        return cpu_decline(p, "integer Gemm with alpha or beta other than 1");
    int trans_b = cpu_attr_int(p, "transB", 0) != 0;
    size_t packed = 0;
    if (trans_b && b->const_data && b->rank == 2)
        packed = b->const_nbytes;
    gemm_state *st = cpu_state(p, sizeof *st + packed);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->trans_a = cpu_attr_int(p, "transA", 0) != 0;
    st->trans_b = trans_b;
    st->alpha = alpha;
    st->beta = beta;
    st->legacy_no_broadcast = p->since < 7 && cpu_attr_int(p, "broadcast", 0) == 0;
    if (!p->prep)
        return MINFER_OK;
    size_t es = minfer_elem_size(b->dtype), b_bytes = 0;
    int b_known = es && b->rank == 2 &&
                  minfer_dims_bytes(b->dtype, b->dims, 2, &b_bytes) == MINFER_OK;
    if (packed && b_known && b_bytes == packed) {
        /* B is N x K: store it K x N once, so runs read rows. */
        transpose2d(st->packed, b->const_data, (size_t)b->dims[0], (size_t)b->dims[1], es);
        st->packed_n = packed;
        st->packed_dtype = b->dtype;
        st->packed_dims[0] = b->dims[0];
        st->packed_dims[1] = b->dims[1];
    } else if (trans_b && b_known) {
        st->ws_pack_b = b_bytes;
        p->prep->workspace_bytes = st->ws_pack_b;
    }
    return MINFER_OK;
}

#define GEMM_EPILOGUE(E, T, S)                                                             \
    static void scale_##S(T *y, const T *c, size_t n, double alpha, double beta) {         \
        for (size_t i = 0; i < n; i++)                                                     \
            y[i] = (T)(alpha * y[i] + (c ? beta * c[i] : 0));                              \
    }
CPU_FLOAT_TYPES(GEMM_EPILOGUE)

minfer_status cpu_compute_gemm(const cpu_exec *e) {
    const gemm_state *st = e->state;
    const minfer_tensor_view *a = cpu_input(e, 0), *b = cpu_input(e, 1), *c = cpu_input(e, 2);
    if (!a || !b)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (a->rank != 2 || b->rank != 2)
        return cpu_fail(e, MINFER_ERR_SHAPE, "A and B must be 2-D");
    if (a->dtype != b->dtype || (c && c->dtype != a->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "input types differ");
    int64_t M = st->trans_a ? a->dims[1] : a->dims[0], K = st->trans_a ? a->dims[0] : a->dims[1];
    int64_t Kb = st->trans_b ? b->dims[1] : b->dims[0], N = st->trans_b ? b->dims[0] : b->dims[1];
    if (K != Kb)
        return cpu_fail(e, MINFER_ERR_SHAPE, "inner dimensions differ (%lld, %lld)",
                        (long long)K, (long long)Kb);
    int64_t dims[2] = {M, N};
    void *y;
    minfer_status s = cpu_output(e, 0, a->dtype, 2, dims, &y);
    if (s)
        return s;
    size_t es = minfer_elem_size(a->dtype), mn = (size_t)(M * N);
    int use_c = c && st->beta != 0.0f;
    if (use_c) {
        if (st->legacy_no_broadcast &&
            (c->rank != 2 || c->dims[0] != M || c->dims[1] != N))
            return cpu_fail(e, MINFER_ERR_SHAPE, "C must be M x N when broadcast is 0");
        s = cpu_broadcast_copy(e, c, 2, dims, y);
        if (s)
            return s;
    }
    /* B as a row-major K x N matrix. */
    const void *bm = cpu_data(b);
    if (st->trans_b) {
        if (st->packed_n && st->packed_dtype == b->dtype && st->packed_dims[0] == b->dims[0] &&
            st->packed_dims[1] == b->dims[1]) {
            bm = st->packed;
        } else {
            size_t need = (size_t)(K * N) * es;
            if (e->args->workspace_bytes < need || (need && !e->args->workspace))
                return cpu_fail(e, MINFER_ERR_RUNTIME,
                                "workspace of %zu bytes too small for B^T (%zu)",
                                e->args->workspace_bytes, need);
            transpose2d(e->args->workspace, cpu_data(b), (size_t)N, (size_t)K, es);
            bm = e->args->workspace;
        }
    }
    size_t rsa = st->trans_a ? 1 : (size_t)K, csa = st->trans_a ? (size_t)M : 1;
    if (st->alpha == 1.0f) {
        /* y = beta * C + A B */
        if (use_c && st->beta != 1.0f) {
            if (a->dtype == MINFER_DTYPE_FLOAT)
                scale_f32(y, NULL, mn, st->beta, 0);
            else
                scale_f64(y, NULL, mn, st->beta, 0);
        }
        cpu_gemm(e->ctx, a->dtype, 1, (size_t)M, (size_t)N, (size_t)K, cpu_data(a), rsa, csa,
                 bm, (size_t)N, y, (size_t)N, use_c);
        return MINFER_OK;
    }
    /* y = alpha * (A B) + beta * C: y holds C, so scale it and add alpha * AB
     * computed through accumulation on a beta/alpha-free path. */
    if (use_c) {
        if (a->dtype == MINFER_DTYPE_FLOAT)
            scale_f32(y, NULL, mn, st->alpha == 0.0f ? st->beta : st->beta / st->alpha, 0);
        else
            scale_f64(y, NULL, mn, st->alpha == 0.0f ? st->beta : (double)st->beta / st->alpha,
                      0);
    }
    if (st->alpha == 0.0f) {
        if (!use_c && mn)
            memset(y, 0, mn * es);
        return MINFER_OK;
    }
    cpu_gemm(e->ctx, a->dtype, 1, (size_t)M, (size_t)N, (size_t)K, cpu_data(a), rsa, csa, bm,
             (size_t)N, y, (size_t)N, use_c);
    if (a->dtype == MINFER_DTYPE_FLOAT)
        scale_f32(y, NULL, mn, st->alpha, 0);
    else
        scale_f64(y, NULL, mn, st->alpha, 0);
    return MINFER_OK;
}

/* ---- MatMul --------------------------------------------------------------- */

minfer_status cpu_prepare_matmul(cpu_prep *p) {
    const minfer_value_desc *a = minfer_kit_input(p->node, 0), *b = minfer_kit_input(p->node, 1);
    if (!a || !b)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs two inputs");
    if (a->dtype && b->dtype && a->dtype != b->dtype)
        return cpu_decline(p, "input types differ");
    return MINFER_OK;
}

typedef struct matmul_job {
    const cpu_ctx *ctx;
    int32_t dtype;
    size_t M, N, K, es;
    const char *a, *b;
    char *y;
    int brank; /* batch rank */
    int64_t bdims[CPU_MAX_RANK], astr[CPU_MAX_RANK], bstr[CPU_MAX_RANK];
} matmul_job;

static void matmul_batch(const matmul_job *j, size_t bi, int parallel) {
    size_t ao = 0, bo = 0, r = bi;
    for (int d = j->brank - 1; d >= 0; d--) {
        size_t idx = r % (size_t)j->bdims[d];
        r /= (size_t)j->bdims[d];
        ao += idx * (size_t)j->astr[d];
        bo += idx * (size_t)j->bstr[d];
    }
    cpu_gemm(j->ctx, j->dtype, parallel, j->M, j->N, j->K, j->a + ao * j->es, j->K, 1,
             j->b + bo * j->es, j->N, j->y + bi * j->M * j->N * j->es, j->N, 0);
}

static void matmul_range(void *arg, size_t begin, size_t end) {
    for (size_t bi = begin; bi < end; bi++)
        matmul_batch(arg, bi, 0);
}

minfer_status cpu_compute_matmul(const cpu_exec *e) {
    const minfer_tensor_view *a = cpu_input(e, 0), *b = cpu_input(e, 1);
    if (!a || !b)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (a->dtype != b->dtype)
        return cpu_fail(e, MINFER_ERR_TYPE, "input types differ");
    if (a->rank < 1 || b->rank < 1)
        return cpu_fail(e, MINFER_ERR_SHAPE, "inputs must have rank >= 1");
    /* 1-D operands: a is [1, K], b is [K, 1]; that dim is dropped again. */
    int64_t ad[CPU_MAX_RANK + 1], bd[CPU_MAX_RANK + 1];
    int ar = a->rank, br = b->rank;
    if (ar == 1) {
        ad[0] = 1;
        ad[1] = a->dims[0];
        ar = 2;
    } else {
        memcpy(ad, a->dims, (size_t)ar * sizeof ad[0]);
    }
    if (br == 1) {
        bd[0] = b->dims[0];
        bd[1] = 1;
        br = 2;
    } else {
        memcpy(bd, b->dims, (size_t)br * sizeof bd[0]);
    }
    matmul_job j;
    memset(&j, 0, sizeof j);
    j.M = (size_t)ad[ar - 2];
    j.K = (size_t)ad[ar - 1];
    j.N = (size_t)bd[br - 1];
    if ((int64_t)j.K != bd[br - 2])
        return cpu_fail(e, MINFER_ERR_SHAPE, "inner dimensions differ (%lld, %lld)",
                        (long long)j.K, (long long)bd[br - 2]);
    int32_t brank;
    int64_t bdims[CPU_MAX_RANK];
    if (cpu_broadcast_shape(ar - 2, ad, br - 2, bd, &brank, bdims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "batch dimensions do not broadcast");
    int64_t odims[CPU_MAX_RANK + 2];
    int orank = brank;
    memcpy(odims, bdims, (size_t)brank * sizeof odims[0]);
    if (a->rank > 1)
        odims[orank++] = (int64_t)j.M;
    if (b->rank > 1)
        odims[orank++] = (int64_t)j.N;
    if (orank > CPU_MAX_RANK)
        return cpu_fail(e, MINFER_ERR_LIMIT, "output rank too large");
    void *y;
    minfer_status s = cpu_output(e, 0, a->dtype, orank, odims, &y);
    if (s)
        return s;
    j.ctx = e->ctx;
    j.dtype = a->dtype;
    j.es = minfer_elem_size(a->dtype);
    j.a = cpu_data(a);
    j.b = cpu_data(b);
    j.y = y;
    j.brank = brank;
    memcpy(j.bdims, bdims, sizeof bdims);
    /* Element strides of each operand's matrices over the batch dims. */
    int64_t sa = (int64_t)(j.M * j.K), sb = (int64_t)(j.K * j.N);
    int b_batched = 0;
    for (int d = brank - 1; d >= 0; d--) {
        int ia = d - (brank - (ar - 2)), ib = d - (brank - (br - 2));
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        j.astr[d] = da == 1 ? 0 : sa;
        j.bstr[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        if (db != 1)
            b_batched = 1;
    }
    size_t nbatch = (size_t)minfer_kit_numel(brank, bdims);
    if (nbatch == 0 || j.M == 0 || j.N == 0)
        return MINFER_OK;
    if (j.K == 0) {
        memset(y, 0, nbatch * j.M * j.N * j.es);
        return MINFER_OK;
    }
    int a_full = 1;
    for (int d = 0; d < brank; d++)
        if (j.astr[d] == 0 && bdims[d] != 1)
            a_full = 0;
    if (!b_batched && a_full) {
        /* One shared B: the batches of A stack into one tall matrix. */
        cpu_gemm(e->ctx, j.dtype, 1, nbatch * j.M, j.N, j.K, j.a, j.K, 1, j.b, j.N, y, j.N, 0);
        return MINFER_OK;
    }
    size_t work = j.M * j.N * j.K;
    if (nbatch >= 4 * (size_t)cpu_threads(e->ctx) || work < (1u << 18)) {
        cpu_parallel(e->ctx, nbatch, (65536 + work - 1) / work, matmul_range, &j);
    } else {
        for (size_t bi = 0; bi < nbatch; bi++)
            matmul_batch(&j, bi, 1);
    }
    return MINFER_OK;
}
