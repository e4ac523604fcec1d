/*
 * plugins/contrib: registration table and shared helpers (contrib.h).
 */
#include "contrib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void out_shape(minfer_tensor_view *o, int32_t dtype, int32_t rank, const int64_t *dims) {
    o->dtype = dtype;
    o->rank = rank;
    for (int32_t i = 0; i < rank && i < MINFER_MAX_RANK; i++)
        o->dims[i] = dims[i];
}

void out_like(minfer_tensor_view *o, const minfer_value_desc *in, int32_t dtype) {
    out_shape(o, dtype, in->rank, in->dims);
}

/* " ('name')" after an input's index, or nothing when the host gave no name. */
#define QNAME(nm) (nm) && (nm)[0] ? " ('" : "", (nm) && (nm)[0] ? (nm) : "", (nm) && (nm)[0] ? "')" : ""

minfer_status want_type(infer_args *a, size_t i, int32_t dtype) {
    const minfer_node_desc *n = a->node;
    if (i >= n->n_inputs || !(*din(n, i)).present)
        return FAIL(a, MINFER_ERR_MODEL, "%s: input %zu is required", n->op_type, i);
    if ((*din(n, i)).dtype != 0 && (*din(n, i)).dtype != dtype)
        return FAIL(a, MINFER_ERR_TYPE, "%s: input %zu%s%s%s is %s, expected %s", n->op_type, i,
                    QNAME((*din(n, i)).name), minfer_elem_name((*din(n, i)).dtype),
                    minfer_elem_name(dtype));
    return MINFER_OK;
}

size_t numel(const minfer_tensor_view *v) {
    int64_t n = 0;
    if (minfer_dims_numel(v->dims, v->rank, &n) != MINFER_OK)
        return 0;
    return (size_t)n;
}

minfer_status check_in(compute_args *a, size_t i, int32_t dtype, int rmin, int rmax) {
    const minfer_node_desc *n = a->node;
    /* Output 0, which every kernel writes: allocated with a known shape (infer
     * gave one, since the inputs' shapes are known when compute runs). */
    if (a->n_outputs < 1 || OUTV(a, 0).rank < 0 || (!OUTV(a, 0).data && numel(&OUTV(a, 0))))
        return FAIL(a, MINFER_ERR_MODEL, "%s: output 0 is missing or has no shape",
                    n->op_type);
    if (i >= a->n_inputs || !(*vin(a, i)).data)
        return FAIL(a, MINFER_ERR_MODEL, "%s: input %zu is required", n->op_type, i);
    const minfer_tensor_view *v = &(*vin(a, i));
    if (v->dtype != dtype)
        return FAIL(a, MINFER_ERR_TYPE, "%s: input %zu%s%s%s is %s, expected %s", n->op_type, i,
                    QNAME((*din(n, i)).name), minfer_elem_name(v->dtype), minfer_elem_name(dtype));
    if (v->rank < rmin || v->rank > rmax)
        return FAIL(a, MINFER_ERR_SHAPE, "%s: input %zu%s%s%s has rank %d, expected %d..%d",
                    n->op_type, i, QNAME((*din(n, i)).name), v->rank, rmin, rmax);
    return MINFER_OK;
}

/* ---- Activations ---- */

int act_parse(const char *name, const float *p, size_t np, act *out) {
    minfer_kit_act k;
    if (minfer_kit_act_parse(name, p, np, &k, NULL, 0) != 0)
        return -1;
    act f = {ACT_NONE, k.p[0], k.p[1], 0};
    switch (k.kind) {
    case MINFER_KIT_ACT_NONE: f.kind = ACT_NONE; break;
    case MINFER_KIT_ACT_RELU: f.kind = ACT_RELU; break;
    case MINFER_KIT_ACT_LEAKYRELU: f.kind = ACT_LEAKYRELU; break;
    case MINFER_KIT_ACT_TANH: f.kind = ACT_TANH; break;
    case MINFER_KIT_ACT_SIGMOID: f.kind = ACT_SIGMOID; break;
    case MINFER_KIT_ACT_CLIP: f.kind = ACT_CLIP; break;
    case MINFER_KIT_ACT_HARDSIGMOID: f.kind = ACT_HARDSIGMOID; break;
    case MINFER_KIT_ACT_HARDSWISH: f.kind = ACT_HARDSWISH; break;
    case MINFER_KIT_ACT_ELU: f.kind = ACT_ELU; break;
    case MINFER_KIT_ACT_SELU: f.kind = ACT_SELU; break;
    case MINFER_KIT_ACT_SOFTSIGN: f.kind = ACT_SOFTSIGN; break;
    default: return -1; /* ORT's fused kernels have no other */
    }
    *out = f;
    return 0;
}

void act_apply(const act *f, float *x, size_t n) {
    switch (f->kind) {
    case ACT_NONE:
        break;
    case ACT_RELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] > 0 ? x[i] : 0;
        break;
    case ACT_LEAKYRELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] >= 0 ? x[i] : x[i] * f->p0;
        break;
    case ACT_TANH:
        for (size_t i = 0; i < n; i++)
            x[i] = tanhf(x[i]);
        break;
    case ACT_SIGMOID:
        for (size_t i = 0; i < n; i++)
            x[i] = 1.0f / (1.0f + expf(-x[i]));
        break;
    case ACT_CLIP:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] < f->p0 ? f->p0 : x[i] > f->p1 ? f->p1 : x[i];
        break;
    case ACT_HARDSIGMOID:
        for (size_t i = 0; i < n; i++) {
            float v = f->p0 * x[i] + f->p1;
            x[i] = v < 0 ? 0 : v > 1 ? 1 : v;
        }
        break;
    case ACT_ELU:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] >= 0 ? x[i] : f->p0 * (expf(x[i]) - 1.0f);
        break;
    case ACT_SELU:
        for (size_t i = 0; i < n; i++)
            x[i] = f->p1 * (x[i] > 0 ? x[i] : f->p0 * (expf(x[i]) - 1.0f));
        break;
    case ACT_SOFTSIGN:
        for (size_t i = 0; i < n; i++)
            x[i] = x[i] / (1.0f + fabsf(x[i]));
        break;
    case ACT_HARDSWISH:
        for (size_t i = 0; i < n; i++) {
            float v = f->p0 * x[i] + f->p1;
            x[i] *= v < 0 ? 0 : v > 1 ? 1 : v;
        }
        break;
    }
}

/* ---- GEMM ----
 * Rows of C are split across threads in blocks of GEMM_MB. Within a block,
 * C is walked in column panels of GEMM_NB and K in panels of GEMM_KB, so the
 * B panel (KB x NB floats, 128 KB) stays in L2 while every row of the block
 * uses it and the four C rows being updated stay in L1. The micro-kernel
 * updates four rows of C at once from one row of B: each B value loaded
 * serves four multiply-adds, and the unit-stride inner loop is vectorised
 * by the compiler (built with -O3; on x86-64 a second copy for AVX2 + FMA
 * is chosen at load time). A transposed B is first copied, per panel, into
 * row-major order by each thread. */
typedef struct gemm_job {
    size_t M, N, K, lda, ldb, ldc;
    float alpha;
    const float *A, *B;
    float *C;
    int trans_a, trans_b, accumulate;
} gemm_job;

enum { GEMM_KB = 128, GEMM_NB = 256, GEMM_MB = 16 };

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define GEMM_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define GEMM_CLONES
#endif

/* c_r[0..n) += a_r * b[0..n) for r = 0..3 (rows of C ldc apart). */
GEMM_CLONES static void kernel4(size_t n, size_t kc, const float *a, size_t a_k, size_t a_r,
                                const float *b, size_t ldb, float *c, size_t ldc) {
    float *restrict c0 = c, *restrict c1 = c + ldc, *restrict c2 = c + 2 * ldc,
                    *restrict c3 = c + 3 * ldc;
    for (size_t k = 0; k < kc; k++) {
        const float *restrict bk = b + k * ldb;
        float a0 = a[k * a_k], a1 = a[k * a_k + a_r], a2 = a[k * a_k + 2 * a_r],
              a3 = a[k * a_k + 3 * a_r];
        for (size_t j = 0; j < n; j++) {
            float bv = bk[j];
            c0[j] += a0 * bv;
            c1[j] += a1 * bv;
            c2[j] += a2 * bv;
            c3[j] += a3 * bv;
        }
    }
}

GEMM_CLONES static void kernel1(size_t n, size_t kc, const float *a, size_t a_k, const float *b,
                                size_t ldb, float *c) {
    float *restrict c0 = c;
    for (size_t k = 0; k < kc; k++) {
        const float *restrict bk = b + k * ldb;
        float a0 = a[k * a_k];
        for (size_t j = 0; j < n; j++)
            c0[j] += a0 * bk[j];
    }
}

static void gemm_rows(const gemm_job *j, size_t m0, size_t m1, float *panel, float *apanel) {
    for (size_t i = m0; i < m1; i++)
        if (!j->accumulate)
            memset(j->C + i * j->ldc, 0, j->N * sizeof(float));
    size_t mb = m1 - m0;
    for (size_t k0 = 0; k0 < j->K; k0 += GEMM_KB) {
        size_t kc = j->K - k0 < GEMM_KB ? j->K - k0 : GEMM_KB;
        /* alpha * A[m0..m1, k0..k0+kc) as apanel[k][r] (k-major, mb wide). */
        for (size_t r = 0; r < mb; r++)
            for (size_t k = 0; k < kc; k++)
                apanel[k * mb + r] = j->alpha * (j->trans_a ? j->A[(k0 + k) * j->lda + m0 + r]
                                                            : j->A[(m0 + r) * j->lda + k0 + k]);
        for (size_t n0 = 0; n0 < j->N; n0 += GEMM_NB) {
            size_t nc = j->N - n0 < GEMM_NB ? j->N - n0 : GEMM_NB;
            const float *bp;
            size_t ldp;
            if (j->trans_b) {
                for (size_t k = 0; k < kc; k++)
                    for (size_t n = 0; n < nc; n++)
                        panel[k * nc + n] = j->B[(n0 + n) * j->ldb + k0 + k];
                bp = panel;
                ldp = nc;
            } else {
                bp = j->B + k0 * j->ldb + n0;
                ldp = j->ldb;
            }
            size_t r = 0;
            for (; r + 4 <= mb; r += 4)
                kernel4(nc, kc, apanel + r, mb, 1, bp, ldp, j->C + (m0 + r) * j->ldc + n0,
                        j->ldc);
            for (; r < mb; r++)
                kernel1(nc, kc, apanel + r, mb, bp, ldp, j->C + (m0 + r) * j->ldc + n0);
        }
    }
}

/* Scratch per thread: the A panel always, the B panel for a transposed B. */
static void gemm_range(void *arg, size_t b0, size_t b1) {
    const gemm_job *j = arg;
    float apanel[GEMM_KB * GEMM_MB];
    float *panel = NULL;
    if (j->trans_b && !(panel = malloc(GEMM_KB * GEMM_NB * sizeof(float)))) {
        /* No memory for the panel: the transposed B is read in place. */
        for (size_t i = b0 * GEMM_MB; i < b1 * GEMM_MB && i < j->M; i++) {
            float *c = j->C + i * j->ldc;
            for (size_t n = 0; n < j->N; n++) {
                float s = 0;
                for (size_t k = 0; k < j->K; k++)
                    s += (j->trans_a ? j->A[k * j->lda + i] : j->A[i * j->lda + k]) *
                         j->B[n * j->ldb + k];
                c[n] = j->alpha * s + (j->accumulate ? c[n] : 0.0f);
            }
        }
        return;
    }
    for (size_t b = b0; b < b1; b++) {
        size_t m0 = b * GEMM_MB, m1 = m0 + GEMM_MB < j->M ? m0 + GEMM_MB : j->M;
        gemm_rows(j, m0, m1, panel, apanel);
    }
    free(panel);
}

void sgemm(compute_args *a, size_t M, size_t N, size_t K, float alpha, const float *A,
           size_t lda, int trans_a, const float *B, size_t ldb, int trans_b, float *C, size_t ldc,
           int accumulate) {
    gemm_job j = {M, N, K, lda, ldb, ldc, alpha, A, B, C, trans_a, trans_b, accumulate};
    if (M == 0 || N == 0)
        return;
    size_t blocks = (M + GEMM_MB - 1) / GEMM_MB;
    if (a && blocks > 1 && (uint64_t)M * N * K > 32768)
        par_for(a, blocks, 0, gemm_range, &j);
    else
        gemm_range(&j, 0, blocks);
}

void par_for(compute_args *a, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    if (a->api && n > grain && MINFER_HOST_HAS(a->api, run_parallel_for))
        a->api->run_parallel_for(a->run, n, grain ? grain : 1, fn, arg);
    else if (a->api && a->api->parallel_for && n > grain)
        a->api->parallel_for(a->host, n, grain ? grain : 1, fn, arg);
    else if (n)
        fn(arg, 0, n);
}

/* Set once by register_ops (the loader calls it before any op runs), so
 * kernels running on several threads only read it. */
static int64_t block_size = 8;

static void nchwc_block_init(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    block_size = __builtin_cpu_supports("avx512f") ? 16 : 8;
#endif
}

int64_t nchwc_block(void) {
    return block_size;
}

/* ---- Registration ---- */

#define MS "com.microsoft"
#define NCHWC "com.microsoft.nchwc"
#define DET MINFER_PLUGIN_OP_DETERMINISTIC
#define OPS(dom, type, fn, fl)                                                              \
    {.struct_size = sizeof(minfer_plugin_op), .domain = dom, .op_type = type,                  \
     .since_version = 1, .flags = (fl), .infer = fn##_infer, .compute = fn##_compute}
#define OPC(dom, type, fn, fl)                                                              \
    {.struct_size = sizeof(minfer_plugin_op), .domain = dom, .op_type = type,                  \
     .since_version = 1, .flags = (fl), .infer = fn##_infer, .create = fn##_create,           \
     .compute = fn##_compute, .destroy = fn##_destroy}

static const minfer_plugin_op ops[] = {
    OPS(MS, "Gelu", gelu, DET),
    OPS(MS, "FastGelu", fast_gelu, DET),
    OPS(MS, "BiasGelu", bias_gelu, DET),
    OPS(MS, "QuickGelu", quick_gelu, DET),
    OPS(MS, "BiasAdd", bias_add, DET),
    OPC(MS, "FusedConv", fused_conv, DET),
    OPC(MS, "FusedGemm", fused_gemm, DET),
    OPS(MS, "FusedMatMul", fused_matmul, DET),
    OPS(MS, "SkipLayerNormalization", skip_ln, DET),
    OPS(MS, "SkipSimplifiedLayerNormalization", skip_simplified_ln, DET),
    OPS(MS, "EmbedLayerNormalization", embed_ln, DET),
    OPS(MS, "Attention", attention, DET),
    OPS(MS, "MultiHeadAttention", mha, DET),
    OPS(MS, "RotaryEmbedding", rotary, DET),
    OPC(MS, "MatMulNBits", matmul_nbits, DET),
    OPS(MS, "QLinearAdd", qlinear_add, DET),
    OPS(MS, "QLinearMul", qlinear_mul, DET),
    OPS(MS, "QLinearGlobalAveragePool", qlinear_gap, DET),
    OPS(MS, "QLinearSigmoid", qlinear_sigmoid, DET),
    OPS(MS, "QLinearLeakyRelu", qlinear_leaky_relu, DET),
    OPS(MS, "QLinearConcat", qlinear_concat, DET),
    OPS(MS, "QLinearAveragePool", qlinear_avgpool, DET),
    OPC(MS, "QGemm", qgemm, DET),
    OPS(NCHWC, "ReorderInput", reorder_input, DET),
    OPS(NCHWC, "ReorderOutput", reorder_output, DET),
    OPC(NCHWC, "Conv", nchwc_conv, DET),
    OPS(NCHWC, "MaxPool", nchwc_pool, DET),
    OPS(NCHWC, "AveragePool", nchwc_pool, DET),
    OPS(NCHWC, "GlobalAveragePool", nchwc_global_pool, DET),
    OPS(NCHWC, "GlobalMaxPool", nchwc_global_pool, DET),
    OPS(NCHWC, "Upsample", nchwc_upsample, DET),
};

/* ONNX Runtime writes two ops of its own into the default domain:
 * SimplifiedLayerNormalization (from opset 1; ONNX has no op of that name,
 * and ORT has none in com.microsoft) and LayerNormalization at opsets
 * before 17, where ONNX has none (from 17 it is ONNX's, same function, run
 * by the CPU provider). A host that refuses default-domain plugin ops
 * leaves them out and the rest of the plugin loads. */
static const minfer_plugin_op default_domain_ops[] = {
    OPS("", "SimplifiedLayerNormalization", simplified_ln, DET),
    {.struct_size = sizeof(minfer_plugin_op), .domain = "", .op_type = "LayerNormalization",
     .since_version = 1, .until_version = 16, .flags = DET, .infer = layer_norm_infer,
     .compute = layer_norm_compute},
};

static minfer_status register_ops(const minfer_plugin_host *host, minfer_plugin_registry *reg) {
    nchwc_block_init();
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        minfer_status st = host->register_op(reg, &ops[i]);
        if (st != MINFER_OK)
            return st;
    }
    for (size_t i = 0; i < sizeof default_domain_ops / sizeof default_domain_ops[0]; i++)
        (void)host->register_op(reg, &default_domain_ops[i]);
    return MINFER_OK;
}

static const minfer_plugin_info info = {
    .abi_version = MINFER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(minfer_plugin_info),
    .name = "contrib",
    .version = "1.0",
    .register_ops = register_ops,
};

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif
MINFER_PLUGIN_DEFINE(info)
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
