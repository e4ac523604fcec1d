/*
 * MatMulNBits: Y = A @ dequant(B)^T + bias, B holding N rows of K weights
 * quantized to `bits` (2, 4 or 8) in blocks of block_size along K.
 *
 * Layout (ONNX Runtime's): B is uint8 (N, k_blocks, block_size * bits / 8),
 * the values of a block packed from the low bits of each byte up (for 4
 * bits: element 2i in the low nibble of byte i, 2i+1 in the high one);
 * scales are float (N * k_blocks); zero_points are either uint8 packed the
 * same way, (N, ceil(k_blocks * bits / 8)), or float (N * k_blocks); without
 * them the zero point is 2^(bits-1). With g_idx (int32, K) element k uses
 * the scale and zero point of block g_idx[k] instead of k / block_size.
 *   w[n][k] = (q[n][k] - zp[n][blk]) * scale[n][blk]
 * When B, scales and zero points are constants (the normal case: weights),
 * create dequantizes them once into a float K x N matrix, so every run is
 * one blocked sgemm; otherwise each run dequantizes first. accuracy_level
 * (ORT's permission to quantize A too) is accepted and computation stays
 * in float, the most accurate choice.
 */
#include "contrib.h"

#include <stdlib.h>
#include <string.h>

typedef struct nbits_attrs {
    int64_t K, N, bits, block;
} nbits_attrs;

typedef struct nbits_state {
    nbits_attrs at;
    float *w; /* K x N, or NULL: dequantize per run */
} nbits_state;

static minfer_status read_attrs(const minfer_host_api *api, const minfer_node_desc *n,
                                nbits_attrs *at, char *err, size_t es) {
    at->K = attr_i(api, n, "K", -1);
    at->N = attr_i(api, n, "N", -1);
    at->bits = attr_i(api, n, "bits", 4);
    at->block = attr_i(api, n, "block_size", -1);
    if (at->K <= 0 || at->N <= 0 || at->K > (1LL << 31) || at->N > (1LL << 31) ||
        (at->bits != 2 && at->bits != 4 && at->bits != 8) || at->block < 16 ||
        (at->block & (at->block - 1)) || at->block > (1 << 20)) {
        snprintf(err, es,
                 "MatMulNBits: K and N must be positive, bits 2, 4 or 8, block_size a power of "
                 "two >= 16 (K %lld, N %lld, bits %lld, block_size %lld)",
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
    const minfer_value_desc *A = &n->inputs[0];
    if (A->rank == 0)
        return FAIL(a, MINFER_ERR_SHAPE, "MatMulNBits: A must have rank >= 1");
    if (A->rank > 0 && A->dims[A->rank - 1] >= 0 && A->dims[A->rank - 1] != at.K)
        return FAIL(a, MINFER_ERR_SHAPE, "MatMulNBits: A's last dimension is %lld, K is %lld",
                    (long long)A->dims[A->rank - 1], (long long)at.K);
    out_like(&a->outputs[0], A, MINFER_DTYPE_FLOAT);
    if (A->rank > 0)
        a->outputs[0].dims[A->rank - 1] = at.N;
    return MINFER_OK;
}

/* Dequantizes into w (K x N, row-major). Inputs are views (data, dims). */
static minfer_status dequant(const nbits_attrs *at, const minfer_value_desc *d,
                             const void *const *data, const size_t *bytes, float *w, char *err,
                             size_t es) {
    size_t K = (size_t)at->K, N = (size_t)at->N, bits = (size_t)at->bits, bs = (size_t)at->block;
    size_t kb = (K + bs - 1) / bs, blob = bs * bits / 8, mask = (1u << bits) - 1;
    const uint8_t *q = data[1];
    const float *sc = data[2];
    const void *zp = data[3];
    const int32_t *gi = data[4];
    if (bytes[1] < N * kb * blob || bytes[2] < N * kb * sizeof(float)) {
        snprintf(err, es, "MatMulNBits: B needs %zu bytes and scales %zu floats for N %zu, K %zu, "
                 "block_size %zu", N * kb * blob, N * kb, N, K, bs);
        return MINFER_ERR_SHAPE;
    }
    int zp_float = zp && d[3].dtype == MINFER_DTYPE_FLOAT;
    size_t zrow = (kb * bits + 7) / 8;
    if (zp && !zp_float && (d[3].dtype != MINFER_DTYPE_UINT8 || bytes[3] < N * zrow)) {
        snprintf(err, es, "MatMulNBits: zero_points must be uint8 (%zu bytes) or float",
                 N * zrow);
        return MINFER_ERR_SHAPE;
    }
    if (zp_float && bytes[3] < N * kb * sizeof(float)) {
        snprintf(err, es, "MatMulNBits: float zero_points need %zu values", N * kb);
        return MINFER_ERR_SHAPE;
    }
    if (gi && bytes[4] < K * sizeof(int32_t)) {
        snprintf(err, es, "MatMulNBits: g_idx needs %zu int32 values", K);
        return MINFER_ERR_SHAPE;
    }
    for (size_t n = 0; n < N; n++)
        for (size_t k = 0; k < K; k++) {
            size_t blk = k / bs, g = blk;
            if (gi) {
                if (gi[k] < 0 || (size_t)gi[k] >= kb) {
                    snprintf(err, es, "MatMulNBits: g_idx[%zu] = %d is not a block index", k,
                             gi[k]);
                    return MINFER_ERR_MODEL;
                }
                g = (size_t)gi[k];
            }
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

static minfer_status gather(const minfer_value_desc *d, size_t n_in, const void **data,
                            size_t *bytes, const minfer_tensor_view *views) {
    for (size_t i = 0; i < 5; i++) {
        data[i] = NULL;
        bytes[i] = 0;
        if (i >= n_in)
            continue;
        if (views) {
            data[i] = views[i].data;
            if (data[i] && minfer_view_nbytes(&views[i], &bytes[i]))
                return MINFER_ERR_LIMIT;
        } else if (d[i].present) {
            data[i] = d[i].const_data;
            bytes[i] = d[i].const_nbytes;
        }
    }
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
    const void *data[5];
    size_t bytes[5];
    gather(n->inputs, n->n_inputs, data, bytes, NULL);
    int all_const = data[1] && data[2];
    for (size_t i = 3; i < 5 && i < n->n_inputs; i++)
        if (n->inputs[i].present && !data[i])
            all_const = 0;
    if (all_const) {
        size_t cnt, sz;
        if (minfer_size_mul((size_t)s->at.K, (size_t)s->at.N, &cnt) ||
            minfer_size_mul(cnt, sizeof(float), &sz)) {
            st = FAIL(a, MINFER_ERR_LIMIT, "MatMulNBits: K x N too large");
            goto fail;
        }
        if (!(s->w = malloc(sz))) {
            st = FAIL(a, MINFER_ERR_NOMEM, "MatMulNBits: out of memory for %zu weights", cnt);
            goto fail;
        }
        if ((st = dequant(&s->at, n->inputs, data, bytes, s->w, a->err, a->err_size)))
            goto fail;
    }
    *state = s;
    return MINFER_OK;
fail:
    free(s->w);
    free(s);
    return st;
}

void matmul_nbits_destroy(void *op, void *state) {
    (void)op;
    nbits_state *s = state;
    if (s)
        free(s->w);
    free(s);
}

minfer_status matmul_nbits_compute(void *op, void *state, compute_args *a) {
    (void)op;
    const nbits_state *s = state;
    const minfer_node_desc *n = a->node;
    minfer_status st = check_in(a, 0, MINFER_DTYPE_FLOAT, 1, MINFER_MAX_RANK);
    if (st)
        return st;
    const minfer_tensor_view *A = &a->inputs[0];
    size_t K = (size_t)s->at.K, N = (size_t)s->at.N;
    if ((size_t)A->dims[A->rank - 1] != K)
        return FAIL(a, MINFER_ERR_SHAPE, "MatMulNBits: A's last dimension is %lld, K is %zu",
                    (long long)A->dims[A->rank - 1], K);
    const minfer_tensor_view *bias = a->n_inputs > 5 && a->inputs[5].data ? &a->inputs[5] : NULL;
    if (bias && (bias->dtype != MINFER_DTYPE_FLOAT || numel(bias) != N))
        return FAIL(a, MINFER_ERR_SHAPE, "MatMulNBits: bias must have N = %zu floats", N);
    size_t M = K ? numel(A) / K : 0;
    float *w = s->w, *own = NULL;
    if (!w) {
        const void *data[5];
        size_t bytes[5];
        if (a->n_inputs < 3 || !a->inputs[1].data || !a->inputs[2].data ||
            a->inputs[1].dtype != MINFER_DTYPE_UINT8 || a->inputs[2].dtype != MINFER_DTYPE_FLOAT)
            return FAIL(a, MINFER_ERR_TYPE, "MatMulNBits: B must be uint8 and scales float");
        if (gather(n->inputs, a->n_inputs, data, bytes, a->inputs))
            return FAIL(a, MINFER_ERR_LIMIT, "MatMulNBits: an input is too large");
        if (!(own = w = malloc(K * N * sizeof(float) + 1)))
            return FAIL(a, MINFER_ERR_NOMEM, "MatMulNBits: out of memory for %zu weights", K * N);
        if ((st = dequant(&s->at, n->inputs, data, bytes, w, a->err, a->err_size))) {
            free(own);
            return st;
        }
    }
    float *y = a->outputs[0].data;
    int acc = 0;
    if (bias) {
        for (size_t m = 0; m < M; m++)
            memcpy(y + m * N, bias->data, N * sizeof(float));
        acc = 1;
    }
    sgemm(a->api, a->host, M, N, K, 1.0f, A->data, K, 0, w, N, 0, y, N, acc);
    free(own);
    return MINFER_OK;
}
