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
 *
 * The work-group kernels gemm_local1/2 (kernels/gemm.cl: tiles of A and B
 * staged in local memory, a register tile per item) take the same call and
 * the same B forms; local_tiles[] has their sizes, and ocl_local_tile says
 * whether the device can launch one (else the own kernel runs).
 *
 * CLBlast (when the build found it) is the other back end: SGEMM, or HGEMM
 * with half storage on a device that reports cl_khr_fp16 (half compute),
 * strided-batched for equal batches, and gemm_epilogue (kernels/gemm.cl)
 * for C and the activation, which the own kernel fuses. Which one runs is
 * chosen per node at prepare (option gemm=, ocl.h):
 *  1. own, local1, local2 (where the device can launch it), or clblast
 *     where the call has a CLBlast form;
 *  2. auto: own for a GEMM under TUNE_MIN_FLOP (launch-bound: the fused
 *     kernel is one launch, CLBlast's path three) or of shapes not known at
 *     prepare; else the tuning cache's choice for (device, driver, shape);
 *  3. else the candidates the device's probes keep (ocl_clblast_promising,
 *     ocl_local_promising: a PROBE_SIZE^3 SGEMM, once per device, on which
 *     CLBlast, or the better work-group kernel, must come within twice the
 *     own kernel's time) are timed with the own kernel on scratch buffers
 *     (one warm-up, which includes CLBlast's kernel compilation, then the
 *     fastest of up to TUNE_REPS runs each), the fastest is kept and
 *     recorded (tune.c).
 * Constant weights are uploaded once in the winner's form: packed panels
 * for the own kernel, as given (with transB) for CLBlast.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

#ifdef MINFER_OCL_CLBLAST
#include <clblast_c.h>
#endif

#define TUNE_MIN_FLOP (1 << 20)
#define TUNE_REPS 3
#define PROBE_SIZE 256

typedef struct gemm_state {
    ocl_state_head head; /* bufs[0]: B (packed when bpacked), [1]: C/bias, [2]: A,
                            [3]: B as given, while prepare times the two forms */
    int matmul;
    int backend; /* OCL_GEMM_OWN or OCL_GEMM_CLBLAST */
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

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static long live_contexts;

void ocl_context_begin(void) {
    pthread_mutex_lock(&live_lock);
    live_contexts++;
    pthread_mutex_unlock(&live_lock);
}

void ocl_context_end(void) {
    pthread_mutex_lock(&live_lock);
    if (--live_contexts == 0) {
#ifdef MINFER_OCL_CLBLAST
        CLBlastClearCache();
#endif
    }
    pthread_mutex_unlock(&live_lock);
}

/* Whether CLBlast can serve this instance: built with it, and for half
 * storage a device with cl_khr_fp16 (HGEMM computes in half). */
static int clblast_usable(const ocl_ctx *ctx) {
#ifdef MINFER_OCL_CLBLAST
    return !ctx->fp16 || ctx->khr_fp16;
#else
    (void)ctx;
    return 0;
#endif
}

/* The work-group kernels' sizes, as kernels/gemm.cl and conv.cl
 * instantiate them (GEMM_LOCAL, CONV_LOCAL): tile TM x TN, TK deep, items
 * holding RM x RN. */
static const struct {
    int gemm, conv, tm, tn, tk, rm, rn;
} local_tiles[] = {
    {OCL_K_gemm_local1, OCL_K_conv_local1, 32, 32, 16, 4, 4},
    {OCL_K_gemm_local2, OCL_K_conv_local2, 64, 64, 8, 8, 8},
};

int ocl_local_tile(const ocl_ctx *ctx, int b, int conv, ocl_ltile *t) {
    if (!OCL_GEMM_IS_LOCAL(b))
        return 0;
    int i = b - OCL_GEMM_LOCAL1;
    t->kernel = conv ? local_tiles[i].conv : local_tiles[i].gemm;
    t->tm = local_tiles[i].tm;
    t->tn = local_tiles[i].tn;
    t->wx = local_tiles[i].tn / local_tiles[i].rn;
    t->wy = local_tiles[i].tm / local_tiles[i].rm;
    size_t items = (size_t)t->wx * (size_t)t->wy;
    uint64_t bytes = (uint64_t)local_tiles[i].tk * (uint64_t)(t->tm + t->tn) * sizeof(float);
    return items <= ctx->kernel_wg[t->kernel] && items <= ctx->dev.max_wg &&
           (size_t)t->wx <= ctx->dev.max_items[0] && (size_t)t->wy <= ctx->dev.max_items[1] &&
           bytes <= ctx->local_mem;
}

/* The GEMM a node computes, from the shapes known at prepare: M, N, K and
 * the batch count of one launch; 0 when a dimension is unknown or the
 * batches broadcast (those run batch by batch, own kernel only). */
static int prep_shape(const gemm_state *st, const minfer_value_desc *a,
                      const minfer_value_desc *b, int64_t *M, int64_t *N, int64_t *K,
                      int64_t *batch) {
    if (a->rank < 1 || b->rank < 1)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->dims[i] < 0)
            return 0;
    for (int i = 0; i < b->rank; i++)
        if (b->dims[i] < 0)
            return 0;
    *batch = 1;
    if (!st->matmul) {
        if (a->rank != 2 || b->rank != 2)
            return 0;
        *M = st->trans_a ? a->dims[1] : a->dims[0];
        *K = st->trans_a ? a->dims[0] : a->dims[1];
        *N = st->trans_b ? b->dims[0] : b->dims[1];
        return 1;
    }
    *M = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    *K = a->dims[a->rank - 1];
    *N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    int64_t na = 1, nb = 1;
    for (int i = 0; i < a->rank - 2; i++)
        na *= a->dims[i];
    for (int i = 0; i < b->rank - 2; i++)
        nb *= b->dims[i];
    if (nb == 1) { /* folded into M */
        *M *= na;
        return 1;
    }
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank - 2; i++)
        if (a->dims[i] != b->dims[i])
            return 0;
    *batch = na;
    return 1;
}

static minfer_status measure(ocl_prep *p, gemm_state *st, const minfer_value_desc *c,
                             int64_t M, int64_t N, int64_t K, int64_t batch, const int *cand,
                             int n_cand, double *ms);

/* The candidates auto mode times for a shape into cand[] (own first), and
 * how many: CLBlast where usable and promising, the work-group kernels
 * the device can launch where they are promising. */
static int candidates(ocl_prep *p, int with_clblast, int *cand) {
    int n = 0;
    cand[n++] = OCL_GEMM_OWN;
    if (with_clblast && ocl_clblast_promising(p))
        cand[n++] = OCL_GEMM_CLBLAST;
    if (ocl_local_promising(p))
        for (int b = OCL_GEMM_LOCAL1; b <= OCL_GEMM_LOCAL2; b++) {
            ocl_ltile t;
            if (ocl_local_tile(p->ctx, b, 0, &t))
                cand[n++] = b;
        }
    return n;
}

/* The name of back end b, for the log. */
static const char *backend_name(int b) {
    return b == OCL_GEMM_CLBLAST ? "CLBlast" : b == OCL_GEMM_LOCAL1 ? "local1"
           : b == OCL_GEMM_LOCAL2 ? "local2" : "own kernel";
}

/* The fastest of n candidates. */
static int fastest(const int *cand, const double *ms, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (ms[i] < ms[best])
            best = i;
    return cand[best];
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
    st->backend = OCL_GEMM_OWN;
    if (!p->prep)
        return MINFER_OK;
    if (c && c->const_data &&
        (s = ocl_upload_floats(p, 1, c->const_data, c->const_nbytes / 4)))
        return s;
    if (a->const_data && (s = ocl_upload_floats(p, 2, a->const_data, a->const_nbytes / 4)))
        return s;
    int packable = b->const_data && b->rank == 2 && b->dims[0] >= 0 && b->dims[1] >= 0;
    int64_t M = 0, N = 0, K = 0, batch = 0;
    int known = prep_shape(st, a, b, &M, &N, &K, &batch);
    int mode = p->ctx->gemm_mode, usable = clblast_usable(p->ctx), measuring = 0;
    int cand[2 + OCL_GEMM_LOCAL2 - OCL_GEMM_LOCAL1 + 1], n_cand = 1;
    ocl_ltile lt;
    if (mode == OCL_GEMM_OWN || (mode == OCL_GEMM_CLBLAST && !usable))
        st->backend = OCL_GEMM_OWN;
    else if (mode == OCL_GEMM_CLBLAST)
        st->backend = OCL_GEMM_CLBLAST;
    else if (OCL_GEMM_IS_LOCAL(mode))
        st->backend = ocl_local_tile(p->ctx, mode, 0, &lt) ? mode : OCL_GEMM_OWN;
    else if (!known || 2.0 * (double)M * (double)N * (double)K * (double)batch < TUNE_MIN_FLOP)
        st->backend = OCL_GEMM_OWN;
    else
        measuring = 1; /* measure, or ask the cache */
    char key[200];
    int choice;
    if (measuring) {
        snprintf(key, sizeof key, "gemm2:%s:%s:M%lld:N%lld:K%lld:b%lld:ta%d:tb%d:bc%d",
                 p->ctx->fp16 ? "f16" : "f32", st->matmul ? "matmul" : "gemm", (long long)M,
                 (long long)N, (long long)K, (long long)batch, st->trans_a, st->trans_b,
                 b->const_data != NULL);
        st->backend = OCL_GEMM_OWN;
        if (ocl_tune_get(p->ctx, key, &choice)) {
            /* A value this build or device cannot run reads as own. */
            if ((choice == OCL_GEMM_CLBLAST && usable) ||
                (OCL_GEMM_IS_LOCAL(choice) && ocl_local_tile(p->ctx, choice, 0, &lt)))
                st->backend = choice;
        } else if ((n_cand = candidates(p, usable, cand)) > 1) {
            st->backend = -1;
        }
    }
    int clblast_cand = st->backend == OCL_GEMM_CLBLAST;
    for (int i = 0; st->backend < 0 && i < n_cand; i++)
        clblast_cand |= cand[i] == OCL_GEMM_CLBLAST;
    /* B in the forms the back ends read: packed for the own kernel, as
     * given for CLBlast (and for the own kernel's unpacked path). */
    if (packable && st->backend != OCL_GEMM_CLBLAST) {
        int64_t Kb = st->trans_b ? b->dims[1] : b->dims[0],
                Nb = st->trans_b ? b->dims[0] : b->dims[1];
        if ((s = st->trans_b ? pack_b(p, b->const_data, Kb, Nb, 1, Kb)
                             : pack_b(p, b->const_data, Kb, Nb, Nb, 1)))
            return s;
        st->bpacked = 1;
    }
    if (b->const_data && (!packable || clblast_cand) &&
        (s = ocl_upload_floats(p, packable ? 3 : 0, b->const_data, b->const_nbytes / 4)))
        return s;
    if (st->backend < 0) {
        double ms[2 + OCL_GEMM_LOCAL2 - OCL_GEMM_LOCAL1 + 1];
        if ((s = measure(p, st, c, M, N, K, batch, cand, n_cand, ms)))
            return s;
        st->backend = fastest(cand, ms, n_cand);
        ocl_tune_put(p->ctx, key, st->backend, ms, n_cand);
        char line[160];
        int len = 0;
        for (int i = 0; i < n_cand && len >= 0 && (size_t)len < sizeof line; i++)
            len += snprintf(line + len, sizeof line - (size_t)len, "%s %.3f ms, ",
                            backend_name(cand[i]), ms[i]);
        p->ctx->api->log(p->ctx->host, MINFER_LOG_INFO, "opencl: %s: %s%s", key, line,
                         backend_name(st->backend));
    }
    if (st->backend != OCL_GEMM_OWN)
        p->ctx->api->log(p->ctx->host, MINFER_LOG_INFO, "opencl: node '%s': GEMM on %s (%s%s)",
                         p->node->name, backend_name(st->backend),
                         mode == st->backend ? "gemm=" : "measured faster",
                         mode == st->backend ? (mode == OCL_GEMM_CLBLAST ? "clblast"
                                                : backend_name(mode)) : "");
    if (packable && st->backend == OCL_GEMM_CLBLAST) {
        if (st->head.bufs[0])
            clReleaseMemObject(st->head.bufs[0]);
        st->head.bufs[0] = st->head.bufs[3];
        st->head.bufs[3] = NULL;
        st->bpacked = 0;
    } else if (st->head.bufs[3]) {
        clReleaseMemObject(st->head.bufs[3]);
        st->head.bufs[3] = NULL;
    }
    return MINFER_OK;
}

minfer_status ocl_prepare_gemm(ocl_prep *p) { return prepare(p, 0); }
minfer_status ocl_prepare_matmul(ocl_prep *p) { return prepare(p, 1); }

typedef struct gemm_call {
    cl_int M, N, K;
    cl_mem a, b, c, y;
    cl_int ao, rsa, csa, bsa, bo, rsb, csb, bsb, bpacked, co, rsc, csc, has_c, yo, ldy, bsy;
} gemm_call;

/* ---- CLBlast ---------------------------------------------------------------- */

#ifdef MINFER_OCL_CLBLAST
/* A call CLBlast takes: row-major A and B, each plain or transposed, B
 * not packed, rows of Y contiguous. */
static int clblast_form(const gemm_call *c) {
    int a_ok = (c->rsa == c->K && c->csa == 1) || (c->rsa == 1 && c->csa == c->M);
    int b_ok = !c->bpacked && ((c->rsb == c->N && c->csb == 1) || (c->rsb == 1 && c->csb == c->K));
    return a_ok && b_ok && c->ldy == c->N;
}

/* Y = alpha * A * B by CLBlast into a zeroed Y (CLBlast may read C even
 * with beta 0, and arena memory holds anything, NaN included), then
 * gemm_epilogue for C and the activation. */
static minfer_status clblast_launch(const ocl_exec *e, const gemm_state *st, const gemm_call *c,
                                    size_t batch) {
    ocl_ctx *ctx = e->ctx;
    size_t es = ctx->fp16 ? 2 : 4;
    size_t span = ((size_t)batch - 1) * (size_t)c->bsy + (size_t)c->M * (size_t)c->ldy;
    cl_uint zero = 0;
    minfer_status fs = ocl_fill(e, c->y, (size_t)c->yo * es, &zero, es, span * es);
    if (fs != MINFER_OK)
        return fs;
    CLBlastTranspose ta = c->csa == 1 ? CLBlastTransposeNo : CLBlastTransposeYes;
    CLBlastTranspose tb = c->csb == 1 ? CLBlastTransposeNo : CLBlastTransposeYes;
    size_t lda = c->csa == 1 ? (size_t)c->K : (size_t)c->M;
    size_t ldb = c->csb == 1 ? (size_t)c->N : (size_t)c->K;
    cl_command_queue q = ctx->queue;
    CLBlastStatusCode rc;
    if (ctx->fp16) {
        cl_half alpha = ocl_f2h(st->alpha), zh = 0;
        rc = batch == 1
                 ? CLBlastHgemm(CLBlastLayoutRowMajor, ta, tb, (size_t)c->M, (size_t)c->N,
                                (size_t)c->K, alpha, c->a, (size_t)c->ao, lda, c->b,
                                (size_t)c->bo, ldb, zh, c->y, (size_t)c->yo, (size_t)c->ldy, &q,
                                NULL)
                 : CLBlastHgemmStridedBatched(
                       CLBlastLayoutRowMajor, ta, tb, (size_t)c->M, (size_t)c->N, (size_t)c->K,
                       alpha, c->a, (size_t)c->ao, lda, (size_t)c->bsa, c->b, (size_t)c->bo, ldb,
                       (size_t)c->bsb, zh, c->y, (size_t)c->yo, (size_t)c->ldy, (size_t)c->bsy,
                       batch, &q, NULL);
    } else {
        rc = batch == 1
                 ? CLBlastSgemm(CLBlastLayoutRowMajor, ta, tb, (size_t)c->M, (size_t)c->N,
                                (size_t)c->K, st->alpha, c->a, (size_t)c->ao, lda, c->b,
                                (size_t)c->bo, ldb, 0.0f, c->y, (size_t)c->yo, (size_t)c->ldy,
                                &q, NULL)
                 : CLBlastSgemmStridedBatched(
                       CLBlastLayoutRowMajor, ta, tb, (size_t)c->M, (size_t)c->N, (size_t)c->K,
                       st->alpha, c->a, (size_t)c->ao, lda, (size_t)c->bsa, c->b, (size_t)c->bo,
                       ldb, (size_t)c->bsb, 0.0f, c->y, (size_t)c->yo, (size_t)c->ldy,
                       (size_t)c->bsy, batch, &q, NULL);
    }
    if (rc != CLBlastSuccess)
        return ocl_fail(e, MINFER_ERR_PROVIDER, "CLBlast %cGEMM of %d x %d x %d (batch %zu) "
                        "failed with status %d", ctx->fp16 ? 'H' : 'S', c->M, c->N, c->K, batch,
                        (int)rc);
    ocl_count_launch(ctx);
    if (!c->has_c && st->act == OCL_ACT_NONE)
        return MINFER_OK;
    cl_int act = st->act;
    float beta = st->beta;
    minfer_status s = ocl_set_args(
        e, OCL_K_gemm_epilogue, 15, OCL_ARG(c->M), OCL_ARG(c->N), OCL_ARG(c->y), OCL_ARG(c->yo),
        OCL_ARG(c->ldy), OCL_ARG(c->bsy), OCL_ARG(c->c), OCL_ARG(c->co), OCL_ARG(c->rsc),
        OCL_ARG(c->csc), OCL_ARG(c->has_c), OCL_ARG(beta), OCL_ARG(act), OCL_ARG(st->pa),
        OCL_ARG(st->pb));
    if (s)
        return s;
    size_t g[2] = {(size_t)c->M * (size_t)c->N, batch};
    return ocl_launch(e, OCL_K_gemm_epilogue, 2, g, 0);
}
#endif

static minfer_status launch(const ocl_exec *e, const gemm_state *st, gemm_call *c,
                            size_t batch) {
#ifdef MINFER_OCL_CLBLAST
    if (st->backend == OCL_GEMM_CLBLAST && clblast_form(c))
        return clblast_launch(e, st, c, batch);
#endif
    ocl_ltile lt;
    int local = ocl_local_tile(e->ctx, st->backend, 0, &lt);
    /* One row: gemm_m1, a tile of one row (gemm's MR rows would be copies). */
    int m1 = !local && c->M == 1;
    int k = local ? lt.kernel : m1 ? OCL_K_gemm_m1 : OCL_K_gemm;
    cl_int act = st->act;
    float alpha = st->alpha, beta = st->beta;
    minfer_status s = ocl_set_args(
        e, k, 28, OCL_ARG(c->M), OCL_ARG(c->N), OCL_ARG(c->K), OCL_ARG(c->a),
        OCL_ARG(c->ao), OCL_ARG(c->rsa), OCL_ARG(c->csa), OCL_ARG(c->bsa), OCL_ARG(c->b),
        OCL_ARG(c->bo), OCL_ARG(c->rsb), OCL_ARG(c->csb), OCL_ARG(c->bsb), OCL_ARG(c->bpacked),
        OCL_ARG(c->c), OCL_ARG(c->co), OCL_ARG(c->rsc), OCL_ARG(c->csc), OCL_ARG(c->has_c),
        OCL_ARG(alpha), OCL_ARG(beta), OCL_ARG(c->y), OCL_ARG(c->yo), OCL_ARG(c->ldy),
        OCL_ARG(c->bsy), OCL_ARG(act), OCL_ARG(st->pa), OCL_ARG(st->pb));
    if (s)
        return s;
    if (local) {
        size_t g[3] = {((size_t)c->N + (size_t)lt.tn - 1) / (size_t)lt.tn * (size_t)lt.wx,
                       ((size_t)c->M + (size_t)lt.tm - 1) / (size_t)lt.tm * (size_t)lt.wy,
                       batch};
        size_t l[3] = {(size_t)lt.wx, (size_t)lt.wy, 1};
        return ocl_enqueue(e, k, 3, g, l);
    }
    size_t nr = 2 * (size_t)e->ctx->vw, mr = m1 ? 1 : (size_t)e->ctx->mr;
    size_t g[3] = {((size_t)c->N + nr - 1) / nr, ((size_t)c->M + mr - 1) / mr, batch};
    return ocl_launch(e, k, 3, g, 1);
}

/* A zeroed scratch buffer of count elements for measure (NULL on failure). */
static cl_mem scratch(ocl_ctx *ctx, int64_t count) {
    size_t bytes = (size_t)(count > 0 ? count : 1) * (ctx->fp16 ? 2 : 4);
    cl_int err;
    cl_mem m = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return NULL;
    cl_uint zero = 0;
    if (clEnqueueFillBuffer(ctx->queue, m, &zero, 4, 0, bytes / 4 * 4, 0, NULL, NULL) !=
        CL_SUCCESS ||
        (bytes % 4 && clEnqueueFillBuffer(ctx->queue, m, &zero, 2, bytes - 2, 2, 0, NULL,
                                          NULL) != CL_SUCCESS)) {
        clReleaseMemObject(m);
        return NULL;
    }
    return m;
}

/* Times the own kernel (ms[0]) and CLBlast (ms[1]) on this node's GEMM with
 * scratch operands (the node's uploaded constants where it has them): one
 * warm-up each, then the fastest of TUNE_REPS runs. Prepare may wait for the
 * device; a run never does. */
static minfer_status measure(ocl_prep *p, gemm_state *st, const minfer_value_desc *c,
                             int64_t M, int64_t N, int64_t K, int64_t batch, const int *cand,
                             int n_cand, double *ms) {
    ocl_ctx *ctx = p->ctx;
    ocl_state_head *h = &st->head;
    cl_mem tmp[4] = {NULL, NULL, NULL, NULL};
    minfer_exec_args args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.node = p->node;
    ocl_kset *ks = ocl_kset_take(ctx);
    if (!ks)
        return MINFER_ERR_PROVIDER;
    ocl_exec e = {ctx, st, &args, ks->k};
    gemm_call cl;
    memset(&cl, 0, sizeof cl);
    cl.M = (cl_int)M;
    cl.N = (cl_int)N;
    cl.K = (cl_int)K;
    cl.rsa = st->trans_a ? 1 : cl.K;
    cl.csa = st->trans_a ? cl.M : 1;
    cl.rsb = st->trans_b ? 1 : cl.N;
    cl.csb = st->trans_b ? cl.K : 1;
    cl.bsa = batch > 1 ? (cl_int)(M * K) : 0;
    cl.bsb = batch > 1 ? (cl_int)(K * N) : 0;
    cl.bsy = batch > 1 ? (cl_int)(M * N) : 0;
    cl.ldy = cl.N;
    cl.a = h->bufs[2] ? h->bufs[2] : (tmp[0] = scratch(ctx, batch * M * K));
    cl.b = h->bufs[0] ? h->bufs[0] : (tmp[1] = scratch(ctx, batch * K * N));
    cl.y = tmp[3] = scratch(ctx, batch * M * N);
    cl.c = cl.y;
    if (c) { /* a bias row: what the epilogue reads for any C */
        cl.c = tmp[2] = scratch(ctx, N);
        cl.has_c = 1;
        cl.csc = 1;
    }
    minfer_status s = MINFER_OK;
    if (!cl.a || !cl.b || !cl.y || (c && !cl.c))
        s = ocl_prep_fail(p, MINFER_ERR_NOMEM, "no scratch memory to time the GEMM");
    int bpacked = st->bpacked;
    cl_mem b_own = cl.b;
    for (int which = 0; which < n_cand && s == MINFER_OK; which++) {
        /* CLBlast reads B as given (bufs[3] when packed), the others as
         * the own kernel does. */
        int clb = cand[which] == OCL_GEMM_CLBLAST;
        st->backend = cand[which];
        cl.bpacked = clb ? 0 : bpacked;
        cl.b = clb && h->bufs[3] ? h->bufs[3] : b_own;
        /* A warm-up, then up to TUNE_REPS timed runs, of which the
         * fastest counts (a busy machine only ever adds time); a later
         * candidate stops once it is twice as slow as the first. */
        double best = 1e30;
        for (int r = 0; r <= TUNE_REPS && s == MINFER_OK; r++) {
            double t0 = ocl_now_ms();
            s = launch(&e, st, &cl, (size_t)batch);
            clFinish(ctx->queue);
            double t = ocl_now_ms() - t0;
            if (r > 0 && t < best)
                best = t;
            if (which && r > 0 && best > 2.0 * ms[0])
                break;
        }
        ms[which] = best;
        if (s != MINFER_OK && which > 0) {
            /* This back end failed on this device:
             * the others serve, as without it. */
            ctx->api->log(ctx->host, MINFER_LOG_WARN, "opencl: node '%s': %s failed "
                          "while timing; not using it", p->node->name,
                          backend_name(cand[which]));
            ms[which] = 1e30;
            s = MINFER_OK;
        }
    }
    if (s != MINFER_OK)
        snprintf(p->err, p->err_size, "timing the GEMM back ends failed");
    st->bpacked = bpacked;
    for (int i = 0; i < 4; i++)
        if (tmp[i])
            clReleaseMemObject(tmp[i]);
    ocl_kset_give(ctx, ks);
    return s;
}

int ocl_clblast_promising(ocl_prep *p) {
    if (!clblast_usable(p->ctx))
        return 0;
    char key[64];
    snprintf(key, sizeof key, "probe:%s:gemm%d", p->ctx->fp16 ? "f16" : "f32", PROBE_SIZE);
    int v;
    if (ocl_tune_get(p->ctx, key, &v))
        return v;
    gemm_state tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.matmul = 1;
    tmp.alpha = 1.0f;
    tmp.beta = 1.0f;
    double ms[2];
    static const int cand[2] = {OCL_GEMM_OWN, OCL_GEMM_CLBLAST};
    if (measure(p, &tmp, NULL, PROBE_SIZE, PROBE_SIZE, PROBE_SIZE, 1, cand, 2, ms) != MINFER_OK)
        return 0;
    v = ms[1] < 2.0 * ms[0];
    ocl_tune_put(p->ctx, key, v, ms, 2);
    p->ctx->api->log(p->ctx->host, MINFER_LOG_INFO, "opencl: %s: own kernel %.3f ms, CLBlast "
                     "%.3f ms: CLBlast %s", key, ms[0], ms[1],
                     v ? "stays a candidate; shapes are timed as they come"
                       : "is not timed for other shapes on this device");
    return v;
}

int ocl_local_promising(ocl_prep *p) {
    char key[64];
    snprintf(key, sizeof key, "probe:%s:local%d", p->ctx->fp16 ? "f16" : "f32", PROBE_SIZE);
    int v;
    if (ocl_tune_get(p->ctx, key, &v))
        return v;
    int cand[1 + OCL_GEMM_LOCAL2 - OCL_GEMM_LOCAL1 + 1], n = 0;
    cand[n++] = OCL_GEMM_OWN;
    for (int b = OCL_GEMM_LOCAL1; b <= OCL_GEMM_LOCAL2; b++) {
        ocl_ltile t;
        if (ocl_local_tile(p->ctx, b, 0, &t))
            cand[n++] = b;
    }
    if (n == 1)
        return 0; /* nothing fits the device: nothing to record */
    gemm_state tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.matmul = 1;
    tmp.alpha = 1.0f;
    tmp.beta = 1.0f;
    double ms[1 + OCL_GEMM_LOCAL2 - OCL_GEMM_LOCAL1 + 1];
    if (measure(p, &tmp, NULL, PROBE_SIZE, PROBE_SIZE, PROBE_SIZE, 1, cand, n, ms) != MINFER_OK)
        return 0;
    double best = ms[1];
    for (int i = 2; i < n; i++)
        best = ms[i] < best ? ms[i] : best;
    v = best < 2.0 * ms[0];
    ocl_tune_put(p->ctx, key, v, ms, n);
    p->ctx->api->log(p->ctx->host, MINFER_LOG_INFO, "opencl: %s: own kernel %.3f ms, "
                     "work-group kernels %.3f ms at best: they %s", key, ms[0], best,
                     v ? "stay candidates; shapes are timed as they come"
                       : "are not timed for other shapes on this device");
    return v;
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
