/*
 * MatMulNBits: Y = A @ dequant(B)^T + bias, B holding N rows of K weights
 * quantized to `bits` (2, 4 or 8) in blocks of block_size along K.
 *
 * Layout (ONNX Runtime's): B is uint8 (N, k_blocks, block_size * bits / 8),
 * the values of a block packed from the low bits of each byte up (for 4
 * bits: element 2i in the low nibble of byte i, 2i+1 in the high one);
 * scales are float (N * k_blocks); zero_points are either uint8 packed the
 * same way, (N, ceil(k_blocks * bits / 8)), or float (N * k_blocks); without
 * them the zero point is 2^(bits-1).
 *   w[n][k] = (q[n][k] - zp[n][k / block_size]) * scale[n][k / block_size]
 * g_idx (a per-k block index, deprecated in ORT) is refused.
 * When B, scales and zero points are constants (the normal case: weights),
 * create keeps B packed (what makes the op worth having: 4-bit weights are
 * an eighth of float ones in memory and in memory traffic) with each
 * block's scale and zero point as floats. A run with few rows of A (token
 * by token generation, M <= 8) then reads the packed weights directly:
 * per block, sum(a q) * scale - zp * scale * sum(a), N split across the
 * host's threads. More rows dequantize a panel of 64 columns at a time
 * into float and multiply it with the blocked sgemm. Inputs that are not
 * constant are dequantized whole, each run. accuracy_level (ORT's permission to quantize A too) is
 * accepted and computation stays in float, the most accurate choice.
 */
#include "contrib.h"

#include <stdlib.h>
#include <string.h>

enum { NB_MAX_BLOCK = 4096 };

typedef struct nbits_attrs {
    int64_t K, N, bits, block;
} nbits_attrs;

typedef struct nbits_state {
    nbits_attrs at;
    uint8_t *q;     /* packed B (N, k_blocks, blob), or NULL */
    float *scale;   /* N * k_blocks */
    float *zp;      /* N * k_blocks, zero points as floats */
} nbits_state;

static minfer_status read_attrs(const minfer_host_api *api, const minfer_node_desc *n,
                                nbits_attrs *at, char *err, size_t es) {
    at->K = minfer_kit_attr_int(api, n, "K", -1);
    at->N = minfer_kit_attr_int(api, n, "N", -1);
    at->bits = minfer_kit_attr_int(api, n, "bits", 4);
    at->block = minfer_kit_attr_int(api, n, "block_size", -1);
    if (at->K <= 0 || at->N <= 0 || at->K > (1LL << 31) || at->N > (1LL << 31) ||
        (at->bits != 2 && at->bits != 4 && at->bits != 8) || at->block < 16 ||
        (at->block & (at->block - 1)) || at->block > NB_MAX_BLOCK) {
        snprintf(err, es,
                 "MatMulNBits: K and N must be positive, bits 2, 4 or 8, block_size a power of "
                 "two from 16 to 4096 (K %lld, N %lld, bits %lld, block_size %lld)",
                 (long long)at->K, (long long)at->N, (long long)at->bits, (long long)at->block);
        return MINFER_ERR_MODEL;
    }
    return MINFER_OK;
}

minfer_status matmul_nbits_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    nbits_attrs at;
    minfer_status st;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_UINT8)) ||
        (st = want_type(a, 2, MINFER_DTYPE_FLOAT)) ||
        (st = read_attrs(a->api, n, &at, a->err, a->err_size)))
        return st;
    if (has_in(n, 4))
        return FAIL(a, MINFER_ERR_UNSUPPORTED,
                    "MatMulNBits: g_idx (deprecated in ONNX Runtime) is not supported");
    const minfer_value_desc *A = &(*din(n, 0));
    if (A->rank == 0)
        return FAIL(a, MINFER_ERR_SHAPE, "MatMulNBits: A must have rank >= 1");
    if (A->rank > 0 && A->dims[A->rank - 1] >= 0 && A->dims[A->rank - 1] != at.K)
        return FAIL(a, MINFER_ERR_SHAPE, "MatMulNBits: A's last dimension is %lld, K is %lld",
                    (long long)A->dims[A->rank - 1], (long long)at.K);
    out_like(&OUTV(a, 0), A, MINFER_DTYPE_FLOAT);
    if (A->rank > 0)
        OUTV(a, 0).dims[A->rank - 1] = at.N;
    return MINFER_OK;
}

/* Dequantizes into w (K x N, row-major). Inputs are views (data, dims). */
static minfer_status dequant(const nbits_attrs *at, int32_t zp_dtype,
                             const void *const *data, const size_t *bytes, float *w, char *err,
                             size_t es) {
    size_t K = (size_t)at->K, N = (size_t)at->N, bits = (size_t)at->bits, bs = (size_t)at->block;
    size_t kb = (K + bs - 1) / bs, blob = bs * bits / 8, mask = (1u << bits) - 1;
    const uint8_t *q = data[1];
    const float *sc = data[2];
    const void *zp = data[3];
    if (bytes[1] < N * kb * blob || bytes[2] < N * kb * sizeof(float)) {
        snprintf(err, es, "MatMulNBits: B needs %zu bytes and scales %zu floats for N %zu, K %zu, "
                 "block_size %zu", N * kb * blob, N * kb, N, K, bs);
        return MINFER_ERR_SHAPE;
    }
    int zp_float = zp && zp_dtype == MINFER_DTYPE_FLOAT;
    size_t zrow = (kb * bits + 7) / 8;
    if (zp && !zp_float && (zp_dtype != MINFER_DTYPE_UINT8 || bytes[3] < N * zrow)) {
        snprintf(err, es, "MatMulNBits: zero_points must be uint8 (%zu bytes) or float",
                 N * zrow);
        return MINFER_ERR_SHAPE;
    }
    if (zp_float && bytes[3] < N * kb * sizeof(float)) {
        snprintf(err, es, "MatMulNBits: float zero_points need %zu values", N * kb);
        return MINFER_ERR_SHAPE;
    }
    for (size_t n = 0; n < N; n++)
        for (size_t k = 0; k < K; k++) {
            size_t blk = k / bs, g = blk;
            size_t bit = (k % bs) * bits;
            unsigned v = (q[(n * kb + blk) * blob + bit / 8] >> (bit % 8)) & mask;
            float z;
            if (zp_float)
                z = ((const float *)zp)[n * kb + g];
            else if (zp) {
                size_t zb = g * bits;
                z = (float)((((const uint8_t *)zp)[n * zrow + zb / 8] >> (zb % 8)) & mask);
            } else
                z = (float)(1u << (bits - 1));
            w[k * N + n] = ((float)v - z) * sc[n * kb + g];
        }
    return MINFER_OK;
}

/* The data and byte sizes of inputs 0..3: a run's views when a is given,
 * else the node's constant inputs (NULL where not constant). *zp_dtype
 * receives the zero points' element type (0 without them). */
static minfer_status gather(const minfer_node_desc *n, compute_args *a, const void **data,
                            size_t *bytes, int32_t *zp_dtype) {
    for (size_t i = 0; i < 4; i++) {
        data[i] = NULL;
        bytes[i] = 0;
        if (a) {
            const minfer_tensor_view *v = vin(a, i);
            data[i] = v->data;
            if (data[i] && minfer_view_nbytes(v, &bytes[i]))
                return MINFER_ERR_LIMIT;
        } else if (din(n, i)->present) {
            data[i] = din(n, i)->const_data;
            bytes[i] = din(n, i)->const_nbytes;
        }
    }
    *zp_dtype = data[3] ? (a ? vin(a, 3)->dtype : din(n, 3)->dtype) : 0;
    return MINFER_OK;
}

/* Copies the packed weights and expands scales and zero points (checked by
 * dequant's rules) into the state. */
static minfer_status pack_state(nbits_state *s, int32_t zp_dtype,
                                const void *const *data, const size_t *bytes, char *err,
                                size_t es) {
    const nbits_attrs *at = &s->at;
    size_t K = (size_t)at->K, N = (size_t)at->N, bits = (size_t)at->bits, bs = (size_t)at->block;
    size_t kb = (K + bs - 1) / bs, blob = bs * bits / 8, mask = (1u << bits) - 1;
    size_t zrow = (kb * bits + 7) / 8;
    const void *zp = data[3];
    int zp_float = zp && zp_dtype == MINFER_DTYPE_FLOAT;
    if (bytes[1] < N * kb * blob || bytes[2] < N * kb * sizeof(float) ||
        (zp && !zp_float && (zp_dtype != MINFER_DTYPE_UINT8 || bytes[3] < N * zrow)) ||
        (zp_float && bytes[3] < N * kb * sizeof(float))) {
        snprintf(err, es,
                 "MatMulNBits: B needs %zu bytes, scales %zu floats and zero_points %zu uint8 "
                 "bytes or %zu floats for N %zu, K %zu, block_size %zu",
                 N * kb * blob, N * kb, N * zrow, N * kb, N, K, bs);
        return MINFER_ERR_SHAPE;
    }
    s->q = malloc(N * kb * blob);
    s->scale = malloc(N * kb * sizeof(float));
    s->zp = malloc(N * kb * sizeof(float));
    if (!s->q || !s->scale || !s->zp) {
        snprintf(err, es, "MatMulNBits: out of memory for the packed weights");
        return MINFER_ERR_NOMEM;
    }
    memcpy(s->q, data[1], N * kb * blob);
    memcpy(s->scale, data[2], N * kb * sizeof(float));
    for (size_t n = 0; n < N; n++)
        for (size_t b = 0; b < kb; b++) {
            float z;
            if (zp_float)
                z = ((const float *)zp)[n * kb + b];
            else if (zp) {
                size_t zb = b * bits;
                z = (float)((((const uint8_t *)zp)[n * zrow + zb / 8] >> (zb % 8)) & mask);
            } else
                z = (float)(1u << (bits - 1));
            s->zp[n * kb + b] = z;
        }
    return MINFER_OK;
}

/* Weights of column n, k in [k0, k0 + cnt) of block b, as floats. */
static void unpack_block(const nbits_state *s, size_t n, size_t b, size_t cnt, float *w) {
    size_t bits = (size_t)s->at.bits, bs = (size_t)s->at.block, K = (size_t)s->at.K;
    size_t kb = (K + bs - 1) / bs, blob = bs * bits / 8;
    const uint8_t *q = s->q + (n * kb + b) * blob;
    float sc = s->scale[n * kb + b], z = s->zp[n * kb + b];
    if (bits == 4) {
        for (size_t i = 0; i + 1 < cnt; i += 2) {
            w[i] = ((float)(q[i / 2] & 15) - z) * sc;
            w[i + 1] = ((float)(q[i / 2] >> 4) - z) * sc;
        }
        if (cnt % 2)
            w[cnt - 1] = ((float)(q[(cnt - 1) / 2] & 15) - z) * sc;
        return;
    }
    unsigned mask = (1u << bits) - 1;
    for (size_t i = 0; i < cnt; i++) {
        size_t bit = i * bits;
        w[i] = ((float)((q[bit / 8] >> (bit % 8)) & mask) - z) * sc;
    }
}

typedef struct gemv_job {
    const nbits_state *s;
    const float *a;    /* M x K */
    const float *asum; /* M x k_blocks: the sum of A over each block */
    float *y;          /* M x N */
    size_t M;
} gemv_job;

/* Few rows of A: every packed weight is read once per run. For 4 bits the
 * block's dot product is taken on the raw nibbles and corrected with the
 * zero point through the block sums of A. */
static void gemv_range(void *arg, size_t n0, size_t n1) {
    const gemv_job *j = arg;
    const nbits_state *s = j->s;
    size_t K = (size_t)s->at.K, bs = (size_t)s->at.block, bits = (size_t)s->at.bits;
    size_t kb = (K + bs - 1) / bs, blob = bs * bits / 8, N = (size_t)s->at.N;
    float wbuf[NB_MAX_BLOCK];
    for (size_t n = n0; n < n1; n++)
        for (size_t m = 0; m < j->M; m++) {
            const float *a = j->a + m * K;
            float acc = 0;
            for (size_t b = 0; b < kb; b++) {
                size_t k0 = b * bs, cnt = K - k0 < bs ? K - k0 : bs;
                float sc = s->scale[n * kb + b];
                if (bits == 4 && cnt == bs) {
                    const uint8_t *q = s->q + (n * kb + b) * blob;
                    const float *ab = a + k0;
                    float dot = 0;
                    for (size_t i = 0; i < blob; i++)
                        dot += ab[2 * i] * (float)(q[i] & 15) + ab[2 * i + 1] * (float)(q[i] >> 4);
                    acc += sc * (dot - s->zp[n * kb + b] * j->asum[m * kb + b]);
                } else {
                    /* A partial last block, or 2 or 8 bits: unpack, then dot. */
                    unpack_block(s, n, b, cnt, wbuf);
                    for (size_t i = 0; i < cnt; i++)
                        acc += a[k0 + i] * wbuf[i];
                }
            }
            j->y[m * N + n] += acc;
        }
}

enum { NB_PANEL = 64, NB_GEMV_ROWS = 8 };

/* Y (M x N, holding the bias or zeros) += A @ W^T from the packed state. */
static minfer_status nbits_packed(compute_args *a, const nbits_state *s, const float *A,
                                  size_t M, float *y) {
    size_t K = (size_t)s->at.K, N = (size_t)s->at.N, bs = (size_t)s->at.block;
    size_t kb = (K + bs - 1) / bs;
    if (M <= NB_GEMV_ROWS) {
        float *asum = malloc(M * kb * sizeof(float) + 1);
        if (!asum)
            return FAIL(a, MINFER_ERR_NOMEM, "MatMulNBits: out of memory");
        for (size_t m = 0; m < M; m++)
            for (size_t b = 0; b < kb; b++) {
                float t = 0;
                for (size_t k = b * bs; k < K && k < (b + 1) * bs; k++)
                    t += A[m * K + k];
                asum[m * kb + b] = t;
            }
        gemv_job j = {s, A, asum, y, M};
        par_for(a, N, 16, gemv_range, &j);
        free(asum);
        return MINFER_OK;
    }
    /* Many rows: 64 columns of W at a time, dequantized to K x 64. */
    float *panel = malloc(K * NB_PANEL * sizeof(float) + 1);
    float *col = malloc(bs * sizeof(float) + 1);
    if (!panel || !col) {
        free(panel);
        free(col);
        return FAIL(a, MINFER_ERR_NOMEM, "MatMulNBits: out of memory for a weight panel");
    }
    for (size_t n0 = 0; n0 < N; n0 += NB_PANEL) {
        size_t nc = N - n0 < NB_PANEL ? N - n0 : NB_PANEL;
        for (size_t c = 0; c < nc; c++)
            for (size_t b = 0; b < kb; b++) {
                size_t k0 = b * bs, cnt = K - k0 < bs ? K - k0 : bs;
                unpack_block(s, n0 + c, b, cnt, col);
                for (size_t i = 0; i < cnt; i++)
                    panel[(k0 + i) * nc + c] = col[i];
            }
        sgemm(a, M, nc, K, 1.0f, A, K, 0, panel, nc, 0, y + n0, N, 1);
    }
    free(col);
    free(panel);
    return MINFER_OK;
}

minfer_status matmul_nbits_create(void *op, create_args *a, void **state) {
    (void)op;
    const minfer_node_desc *n = a->node;
    nbits_state *s = calloc(1, sizeof *s);
    minfer_status st;
    if (!s)
        return FAIL(a, MINFER_ERR_NOMEM, "MatMulNBits: out of memory");
    if ((st = read_attrs(a->api, n, &s->at, a->err, a->err_size)))
        goto fail;
    const void *data[4];
    size_t bytes[4];
    int32_t zp_dtype;
    gather(n, NULL, data, bytes, &zp_dtype);
    int all_const = data[1] && data[2];
    for (size_t i = 3; i < 4 && i < n->n_inputs; i++)
        if ((*din(n, i)).present && !data[i])
            all_const = 0;
    if (all_const && (st = pack_state(s, zp_dtype, data, bytes, a->err, a->err_size)))
        goto fail;
    *state = s;
    return MINFER_OK;
fail:
    matmul_nbits_destroy(op, s);
    return st;
}

void matmul_nbits_destroy(void *op, void *state) {
    (void)op;
    nbits_state *s = state;
    if (s) {
        free(s->q);
        free(s->scale);
        free(s->zp);
    }
    free(s);
}

minfer_status matmul_nbits_compute(void *op, void *state, compute_args *a) {
    (void)op;
    const nbits_state *s = state;
    const minfer_node_desc *n = a->node;
    minfer_status st = check_in(a, 0, MINFER_DTYPE_FLOAT, 1, MINFER_MAX_RANK);
    if (st)
        return st;
    const minfer_tensor_view *A = &(*vin(a, 0));
    size_t K = (size_t)s->at.K, N = (size_t)s->at.N;
    if ((size_t)A->dims[A->rank - 1] != K)
        return FAIL(a, MINFER_ERR_SHAPE, "MatMulNBits: A's last dimension is %lld, K is %zu",
                    (long long)A->dims[A->rank - 1], K);
    const minfer_tensor_view *bias = a->n_inputs > 5 && (*vin(a, 5)).data ? &(*vin(a, 5)) : NULL;
    if (bias && (bias->dtype != MINFER_DTYPE_FLOAT || numel(bias) != N))
        return FAIL(a, MINFER_ERR_SHAPE, "MatMulNBits: bias must have N = %zu floats", N);
    size_t M = K ? numel(A) / K : 0;
    float *w = NULL, *own = NULL;
    if (!s->q) {
        const void *data[4];
        size_t bytes[4];
        if (a->n_inputs < 3 || !(*vin(a, 1)).data || !(*vin(a, 2)).data ||
            (*vin(a, 1)).dtype != MINFER_DTYPE_UINT8 || (*vin(a, 2)).dtype != MINFER_DTYPE_FLOAT)
            return FAIL(a, MINFER_ERR_TYPE, "MatMulNBits: B must be uint8 and scales float");
        int32_t zp_dtype;
        if (gather(n, a, data, bytes, &zp_dtype))
            return FAIL(a, MINFER_ERR_LIMIT, "MatMulNBits: an input is too large");
        if (!(own = w = malloc(K * N * sizeof(float) + 1)))
            return FAIL(a, MINFER_ERR_NOMEM, "MatMulNBits: out of memory for %zu weights", K * N);
        if ((st = dequant(&s->at, zp_dtype, data, bytes, w, a->err, a->err_size))) {
            free(own);
            return st;
        }
    }
    float *y = OUTV(a, 0).data;
    for (size_t m = 0; m < M; m++)
        if (bias)
            memcpy(y + m * N, bias->data, N * sizeof(float));
        else
            memset(y + m * N, 0, N * sizeof(float));
    if (s->q) {
        st = nbits_packed(a, s, A->data, M, y);
        return st;
    }
    sgemm(a, M, N, K, 1.0f, A->data, K, 0, w, N, 0, y, N, 1);
    free(own);
    return MINFER_OK;
}
