/*
 * Attention, MultiHeadAttention, RotaryEmbedding (com.microsoft).
 *
 * Both attention ops end in the same core: per (batch, head),
 *   P = softmax(scale * Q K^T + mask + attention_bias), out = P V,
 * with Q (S x H), K (L x H), V (L x Hv) gathered into head-major scratch
 * first, scale 1/sqrt(H) unless the scale attribute says otherwise.
 * Masks follow ONNX Runtime: mask_filter_value (default -10000) is added
 * wherever a key is masked: a key_padding / mask_index of shape (B) holds
 * each row's valid length, (2B) end then start positions, (B, L) or
 * (B, S, L) a 0/1 mask; unidirectional adds it again above the diagonal.
 * Attention computes Q, K, V from input x weights + bias (qkv_hidden_sizes
 * splits them; default three equal parts). past / past_key inputs (the
 * decoding cache) are not supported: such a node is refused with that
 * reason.
 */
#include "contrib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct attn {
    size_t B, N, S, L, H, Hv;
    float scale, filter;
    int causal;
    const float *q, *k, *v; /* (B, N, S|L, H|Hv) scratch */
    const minfer_tensor_view *mask, *abias;
    float *out;             /* (B, S, N * Hv) */
    float *p;               /* scores scratch, (B, N, S, L) */
} attn;

static float mask_add(const attn *t, size_t b, size_t s, size_t l) {
    const minfer_tensor_view *m = t->mask;
    float add = 0;
    if (m) {
        const int32_t *mi = m->data;
        int masked = 0;
        if (m->rank == 1 && (size_t)m->dims[0] == t->B)
            masked = (int64_t)l >= mi[b];
        else if (m->rank == 1)
            masked = (int64_t)l >= mi[b] || (int64_t)l < mi[t->B + b];
        else if (m->rank == 2)
            masked = mi[b * t->L + l] == 0;
        else
            masked = mi[(b * t->S + s) * t->L + l] == 0;
        if (masked)
            add += t->filter;
    }
    if (t->causal && l > s + (t->L - t->S))
        add += t->filter;
    return add;
}

static void attn_range(void *arg, size_t i0, size_t i1) {
    const attn *t = arg;
    for (size_t bn = i0; bn < i1; bn++) {
        size_t b = bn / t->N, n = bn % t->N;
        const float *q = t->q + bn * t->S * t->H, *k = t->k + bn * t->L * t->H,
                    *v = t->v + bn * t->L * t->Hv;
        float *p = t->p + bn * t->S * t->L;
        sgemm(NULL, t->S, t->L, t->H, t->scale, q, t->H, 0, k, t->H, 1, p, t->L, 0);
        for (size_t s = 0; s < t->S; s++) {
            float *row = p + s * t->L, mx = -INFINITY, sum = 0;
            for (size_t l = 0; l < t->L; l++) {
                row[l] += mask_add(t, b, s, l);
                if (t->abias) {
                    const minfer_tensor_view *ab = t->abias;
                    size_t bb = ab->dims[0] == 1 ? 0 : b, nn = ab->dims[1] == 1 ? 0 : n;
                    row[l] += ((const float *)ab->data)[((bb * (size_t)ab->dims[1] + nn) * t->S +
                                                         s) * t->L + l];
                }
                mx = row[l] > mx ? row[l] : mx;
            }
            for (size_t l = 0; l < t->L; l++)
                sum += row[l] = expf(row[l] - mx);
            for (size_t l = 0; l < t->L; l++)
                row[l] /= sum;
        }
        /* out rows for this head are strided by N * Hv. */
        sgemm(NULL, t->S, t->Hv, t->L, 1.0f, p, t->L, 0, v, t->Hv, 0,
              t->out + b * t->S * t->N * t->Hv + n * t->Hv, t->N * t->Hv, 0);
    }
}

static minfer_status check_masks(compute_args *a, attn *t, size_t mask_i, size_t bias_i) {
    const minfer_node_desc *n = a->node;
    t->mask = a->n_inputs > mask_i && (*vin(a, mask_i)).data ? &(*vin(a, mask_i)) : NULL;
    t->abias = a->n_inputs > bias_i && (*vin(a, bias_i)).data ? &(*vin(a, bias_i)) : NULL;
    const minfer_tensor_view *m = t->mask, *ab = t->abias;
    if (m) {
        int ok = m->dtype == MINFER_DTYPE_INT32 &&
                 ((m->rank == 1 && ((size_t)m->dims[0] == t->B || (size_t)m->dims[0] == 2 * t->B)) ||
                  (m->rank == 2 && (size_t)m->dims[0] == t->B && (size_t)m->dims[1] == t->L) ||
                  (m->rank == 3 && (size_t)m->dims[0] == t->B && (size_t)m->dims[1] == t->S &&
                   (size_t)m->dims[2] == t->L));
        if (!ok)
            return FAIL(a, MINFER_ERR_SHAPE,
                        "%s: the mask must be int32 of shape (B), (2B), (B, L) or (B, S, L) with "
                        "B %zu, S %zu, L %zu",
                        n->op_type, t->B, t->S, t->L);
    }
    if (ab && (ab->dtype != MINFER_DTYPE_FLOAT || ab->rank != 4 ||
               (ab->dims[0] != 1 && (size_t)ab->dims[0] != t->B) ||
               (ab->dims[1] != 1 && (size_t)ab->dims[1] != t->N) || (size_t)ab->dims[2] != t->S ||
               (size_t)ab->dims[3] != t->L))
        return FAIL(a, MINFER_ERR_SHAPE,
                    "%s: attention_bias must be float (B or 1, N or 1, S, L)", n->op_type);
    return MINFER_OK;
}

/* Copies rows of (B, T, heads * hs) starting at column col0 (row stride ld)
 * into (B, N, T, hs), adding bias[col0 + ...] when given. */
static void to_heads(const float *src, size_t ld, size_t col0, const float *bias, size_t B,
                     size_t T, size_t N, size_t hs, float *dst) {
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++)
            for (size_t n = 0; n < N; n++) {
                const float *s = src + (b * T + t) * ld + col0 + n * hs;
                float *d = dst + ((b * N + n) * T + t) * hs;
                for (size_t h = 0; h < hs; h++)
                    d[h] = s[h] + (bias ? bias[col0 + n * hs + h] : 0.0f);
            }
}

/* a * b * c * d, or SIZE_MAX when it does not fit (alloc_f then fails). */
static size_t mul4(size_t a, size_t b, size_t c, size_t d) {
    size_t r;
    if (minfer_size_mul(a, b, &r) || minfer_size_mul(r, c, &r) || minfer_size_mul(r, d, &r))
        return SIZE_MAX;
    return r;
}

/* Sum of scratch sizes, SIZE_MAX on overflow. */
static size_t add4(size_t a, size_t b, size_t c, size_t d) {
    size_t r;
    if (minfer_size_add(a, b, &r) || minfer_size_add(r, c, &r) || minfer_size_add(r, d, &r))
        return SIZE_MAX;
    return r;
}

static float *alloc_f(compute_args *a, size_t n, minfer_status *st) {
    size_t bytes;
    float *p = NULL;
    if (n == SIZE_MAX || minfer_size_mul(n, sizeof(float), &bytes))
        *st = FAIL(a, MINFER_ERR_LIMIT, "%s: the attention scratch is too large",
                   a->node->op_type);
    else if (!(p = malloc(bytes ? bytes : 1)))
        *st = FAIL(a, MINFER_ERR_NOMEM, "%s: out of memory (%zu floats)", a->node->op_type, n);
    return p;
}

/* ---- Attention ---- */

static minfer_status qkv_sizes(const minfer_host_api *api, const minfer_node_desc *n,
                               int64_t total, int64_t *qh, int64_t *kh, int64_t *vh) {
    const int64_t *v;
    size_t c = minfer_kit_attr_ints_ref(api, n, "qkv_hidden_sizes", &v);
    if (c == 3) {
        *qh = v[0], *kh = v[1], *vh = v[2];
        return v[0] > 0 && v[1] == v[0] && v[2] > 0 && (total < 0 || v[0] + v[1] + v[2] == total)
                   ? MINFER_OK
                   : MINFER_ERR_MODEL;
    }
    if (c != 0 || (total >= 0 && total % 3))
        return MINFER_ERR_MODEL;
    *qh = *kh = *vh = total < 0 ? -1 : total / 3;
    return MINFER_OK;
}

minfer_status attention_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_FLOAT)))
        return st;
    if (has_in(n, 4) || has_in(n, 6))
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "Attention: the past (decoding cache) inputs are "
                                               "not supported");
    if (minfer_kit_attr_int(a->api, n, "do_rotary", 0))
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "Attention: do_rotary is not supported");
    int64_t heads = minfer_kit_attr_int(a->api, n, "num_heads", 0);
    const minfer_value_desc *x = &(*din(n, 0)), *w = &(*din(n, 1));
    int64_t qh, kh, vh;
    if (heads <= 0 || qkv_sizes(a->api, n, w->rank == 2 ? w->dims[1] : -1, &qh, &kh, &vh) ||
        (qh > 0 && (qh % heads || vh % heads)))
        return FAIL(a, MINFER_ERR_MODEL,
                    "Attention: num_heads must be positive and divide the q, k and v widths "
                    "(qkv_hidden_sizes or weights' width / 3)");
    if ((x->rank >= 0 && x->rank != 3) || (w->rank >= 0 && w->rank != 2))
        return FAIL(a, MINFER_ERR_SHAPE, "Attention: input must be 3-D and weights 2-D");
    int64_t d[5] = {x->rank == 3 ? x->dims[0] : -1, x->rank == 3 ? x->dims[1] : -1, vh};
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, 3, d);
    if (a->n_outputs > 1) {
        int64_t p[5] = {2, d[0], heads, d[1], qh > 0 ? qh / heads : -1};
        if (vh != qh)
            return FAIL(a, MINFER_ERR_UNSUPPORTED,
                        "Attention: present needs equal q and v widths");
        out_shape(&OUTV(a, 1), MINFER_DTYPE_FLOAT, 5, p);
    }
    return MINFER_OK;
}

minfer_status attention_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 3, 3)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 2, 2)))
        return st;
    if ((a->n_inputs > 4 && (*vin(a, 4)).data) || (a->n_inputs > 6 && (*vin(a, 6)).data))
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "Attention: past inputs are not supported");
    const minfer_tensor_view *x = &(*vin(a, 0)), *w = &(*vin(a, 1));
    const minfer_tensor_view *bias = a->n_inputs > 2 && (*vin(a, 2)).data ? &(*vin(a, 2)) : NULL;
    int64_t heads = minfer_kit_attr_int(a->api, n, "num_heads", 0), qh, kh, vh;
    if (heads <= 0 || qkv_sizes(a->api, n, w->dims[1], &qh, &kh, &vh) || qh % heads ||
        vh % heads || w->dims[0] != x->dims[2])
        return FAIL(a, MINFER_ERR_SHAPE, "Attention: weights (%lld x %lld) do not fit the input",
                    (long long)w->dims[0], (long long)w->dims[1]);
    if (bias && (bias->dtype != MINFER_DTYPE_FLOAT || numel(bias) != (size_t)w->dims[1]))
        return FAIL(a, MINFER_ERR_SHAPE, "Attention: bias must have %lld floats",
                    (long long)w->dims[1]);
    attn t = {.B = (size_t)x->dims[0], .N = (size_t)heads, .S = (size_t)x->dims[1]};
    t.L = t.S;
    t.H = (size_t)(qh / heads);
    t.Hv = (size_t)(vh / heads);
    float sc = minfer_kit_attr_float(a->api, n, "scale", 0.0f);
    t.scale = sc != 0.0f ? sc : 1.0f / sqrtf((float)t.H);
    t.filter = minfer_kit_attr_float(a->api, n, "mask_filter_value", -10000.0f);
    t.causal = minfer_kit_attr_int(a->api, n, "unidirectional", 0) != 0;
    if ((st = check_masks(a, &t, 3, 5)))
        return st;
    size_t W = (size_t)w->dims[1], rows = t.B * t.S; /* rows: the input's, allocated */
    float *qkv = alloc_f(a, mul4(rows, W, 1, 1), &st), *heads_buf = NULL;
    if (!qkv)
        return st;
    sgemm(a, rows, W, (size_t)x->dims[2], 1.0f, x->data, (size_t)x->dims[2], 0,
          w->data, W, 0, qkv, W, 0);
    size_t nq = mul4(t.B, t.N, t.S, t.H), nv = mul4(t.B, t.N, t.S, t.Hv),
           np = mul4(t.B, t.N, t.S, t.L);
    if (!(heads_buf = alloc_f(a, add4(nq, nq, nv, np), &st))) {
        free(qkv);
        return st;
    }
    const float *bp = bias ? bias->data : NULL;
    float *q = heads_buf, *k = q + nq, *v = k + nq;
    to_heads(qkv, W, 0, bp, t.B, t.S, t.N, t.H, q);
    to_heads(qkv, W, (size_t)qh, bp, t.B, t.S, t.N, t.H, k);
    to_heads(qkv, W, (size_t)(qh + kh), bp, t.B, t.S, t.N, t.Hv, v);
    t.q = q, t.k = k, t.v = v, t.p = v + nv;
    t.out = OUTV(a, 0).data;
    par_for(a, t.B * t.N, 1, attn_range, &t);
    if (a->n_outputs > 1 && has_out(n, 1) && OUTV(a, 1).data) {
        memcpy(OUTV(a, 1).data, k, nq * sizeof(float));
        memcpy((float *)OUTV(a, 1).data + nq, v, nv * sizeof(float));
    }
    free(heads_buf);
    free(qkv);
    return MINFER_OK;
}

/* ---- MultiHeadAttention ----
 * query (B, S, D); key (B, L, D) or (B, N, L, H); value (B, L, Dv) or
 * (B, N, L, Hv); [bias (D + D + Dv), for 3-D key and value];
 * [key_padding_mask]; [attention_bias]; outputs output (B, S, Dv),
 * [present_key (B, N, L, H)], [present_value (B, N, L, Hv)]. */

minfer_status mha_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)))
        return st;
    if (!has_in(n, 1) || !has_in(n, 2))
        return FAIL(a, MINFER_ERR_UNSUPPORTED,
                    "MultiHeadAttention: packed QKV / KV forms (no key or value input) are not "
                    "supported");
    if (has_in(n, 6) || has_in(n, 7))
        return FAIL(a, MINFER_ERR_UNSUPPORTED,
                    "MultiHeadAttention: past_key / past_value are not supported");
    int64_t heads = minfer_kit_attr_int(a->api, n, "num_heads", 0);
    const minfer_value_desc *q = &(*din(n, 0)), *k = &(*din(n, 1)), *v = &(*din(n, 2));
    if (heads <= 0)
        return FAIL(a, MINFER_ERR_MODEL, "MultiHeadAttention: num_heads must be positive");
    if ((q->rank >= 0 && q->rank != 3) || (k->rank >= 0 && k->rank != 3 && k->rank != 4) ||
        (v->rank >= 0 && v->rank != k->rank && k->rank >= 0))
        return FAIL(a, MINFER_ERR_SHAPE,
                    "MultiHeadAttention: query must be 3-D, key and value both 3-D or 4-D");
    int64_t dv = v->rank == 3 ? v->dims[2] : v->rank == 4 && v->dims[3] >= 0 ? v->dims[3] * heads
                                                                              : -1;
    int64_t d[3] = {q->rank == 3 ? q->dims[0] : -1, q->rank == 3 ? q->dims[1] : -1, dv};
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, 3, d);
    int64_t L = k->rank == 3 ? k->dims[1] : k->rank == 4 ? k->dims[2] : -1;
    int64_t hq = q->rank == 3 && q->dims[2] >= 0 ? q->dims[2] / heads : -1;
    for (size_t o = 1; o < 3 && o < a->n_outputs; o++) {
        int64_t p[4] = {d[0], heads, L, o == 1 ? hq : (dv >= 0 ? dv / heads : -1)};
        out_shape(&OUTV(a, o), MINFER_DTYPE_FLOAT, 4, p);
    }
    return MINFER_OK;
}

minfer_status mha_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 3, 3)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 3, 4)) ||
        (st = check_in(a, 2, MINFER_DTYPE_FLOAT, 3, 4)))
        return st;
    if ((a->n_inputs > 6 && (*vin(a, 6)).data) || (a->n_inputs > 7 && (*vin(a, 7)).data))
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "MultiHeadAttention: past inputs not supported");
    const minfer_tensor_view *q = &(*vin(a, 0)), *k = &(*vin(a, 1)), *v = &(*vin(a, 2));
    const minfer_tensor_view *bias = a->n_inputs > 3 && (*vin(a, 3)).data ? &(*vin(a, 3)) : NULL;
    int64_t heads = minfer_kit_attr_int(a->api, n, "num_heads", 0);
    attn t = {.B = (size_t)q->dims[0], .S = (size_t)q->dims[1]};
    if (heads <= 0 || q->dims[2] % heads || k->rank != v->rank)
        return FAIL(a, MINFER_ERR_SHAPE, "MultiHeadAttention: num_heads %lld does not divide %lld",
                    (long long)heads, (long long)q->dims[2]);
    t.N = (size_t)heads;
    t.H = (size_t)q->dims[2] / t.N;
    int bnsh = k->rank == 4;
    if (bnsh) {
        t.L = (size_t)k->dims[2];
        t.Hv = (size_t)v->dims[3];
        if ((size_t)k->dims[0] != t.B || (size_t)k->dims[1] != t.N || (size_t)k->dims[3] != t.H ||
            (size_t)v->dims[0] != t.B || (size_t)v->dims[1] != t.N || (size_t)v->dims[2] != t.L)
            return FAIL(a, MINFER_ERR_SHAPE,
                        "MultiHeadAttention: 4-D key/value must be (B, N, L, H) matching query");
        if (bias)
            return FAIL(a, MINFER_ERR_UNSUPPORTED,
                        "MultiHeadAttention: bias with 4-D key/value is not supported");
    } else {
        t.L = (size_t)k->dims[1];
        if ((size_t)k->dims[0] != t.B || (size_t)k->dims[2] != t.N * t.H ||
            (size_t)v->dims[0] != t.B || (size_t)v->dims[1] != t.L || v->dims[2] % heads)
            return FAIL(a, MINFER_ERR_SHAPE,
                        "MultiHeadAttention: key must be (B, L, D) and value (B, L, Dv) with "
                        "query (B, S, D)");
        t.Hv = (size_t)v->dims[2] / t.N;
    }
    size_t D = t.N * t.H, Dv = t.N * t.Hv;
    if (bias && (bias->dtype != MINFER_DTYPE_FLOAT || numel(bias) != 2 * D + Dv))
        return FAIL(a, MINFER_ERR_SHAPE, "MultiHeadAttention: bias must have %zu floats",
                    2 * D + Dv);
    float sc = minfer_kit_attr_float(a->api, n, "scale", 0.0f);
    t.scale = sc != 0.0f ? sc : 1.0f / sqrtf((float)t.H);
    t.filter = minfer_kit_attr_float(a->api, n, "mask_filter_value", -10000.0f);
    t.causal = minfer_kit_attr_int(a->api, n, "unidirectional", 0) != 0;
    if ((st = check_masks(a, &t, 4, 5)))
        return st;
    size_t nq = mul4(t.B, t.N, t.S, t.H), nk = mul4(t.B, t.N, t.L, t.H),
           nv = mul4(t.B, t.N, t.L, t.Hv);
    float *buf = alloc_f(a, add4(nq, nk, nv, mul4(t.B, t.N, t.S, t.L)), &st);
    if (!buf)
        return st;
    float *qh = buf, *kh = qh + nq, *vh = kh + nk;
    const float *bp = bias ? bias->data : NULL;
    to_heads(q->data, D, 0, bp, t.B, t.S, t.N, t.H, qh);
    if (bnsh) {
        memcpy(kh, k->data, nk * sizeof(float));
        memcpy(vh, v->data, nv * sizeof(float));
    } else {
        /* The key's bias starts at D, the value's at 2D: shift the sources. */
        to_heads(k->data, D, 0, bp ? bp + D : NULL, t.B, t.L, t.N, t.H, kh);
        to_heads(v->data, Dv, 0, bp ? bp + 2 * D : NULL, t.B, t.L, t.N, t.Hv, vh);
    }
    t.q = qh, t.k = kh, t.v = vh, t.p = vh + nv;
    t.out = OUTV(a, 0).data;
    par_for(a, t.B * t.N, 1, attn_range, &t);
    if (a->n_outputs > 1 && has_out(n, 1) && OUTV(a, 1).data)
        memcpy(OUTV(a, 1).data, kh, nk * sizeof(float));
    if (a->n_outputs > 2 && has_out(n, 2) && OUTV(a, 2).data)
        memcpy(OUTV(a, 2).data, vh, nv * sizeof(float));
    free(buf);
    return MINFER_OK;
}

/* ---- RotaryEmbedding ----
 * input (B, S, N*H) or (B, N, S, H); position_ids (B, S) int64, or one
 * value: the first position, then s added; cos_cache and sin_cache
 * (max_position, rotary_dim / 2). Rotates the first rotary_dim values of
 * every head: as halves (x[i], x[i + d/2]) or, with interleaved, as pairs
 * (x[2i], x[2i + 1]); the rest is copied. */

minfer_status rotary_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 2, MINFER_DTYPE_FLOAT)) ||
        (st = want_type(a, 3, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_INT64)))
        return st;
    if (minfer_kit_attr_int(a->api, n, "is_packed_batching", 0))
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "RotaryEmbedding: packed batching");
    const minfer_value_desc *x = &(*din(n, 0));
    if (x->rank >= 0 && x->rank != 3 && x->rank != 4)
        return FAIL(a, MINFER_ERR_SHAPE, "RotaryEmbedding: input must be 3-D or 4-D");
    out_like(&OUTV(a, 0), x, MINFER_DTYPE_FLOAT);
    return MINFER_OK;
}

minfer_status rotary_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 3, 4)) ||
        (st = check_in(a, 1, MINFER_DTYPE_INT64, 0, 2)) ||
        (st = check_in(a, 2, MINFER_DTYPE_FLOAT, 2, 2)) ||
        (st = check_in(a, 3, MINFER_DTYPE_FLOAT, 2, 2)))
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0)), *pid = &(*vin(a, 1)), *cc = &(*vin(a, 2)),
                             *sc = &(*vin(a, 3));
    int inter = minfer_kit_attr_int(a->api, n, "interleaved", 0) != 0;
    int64_t heads = minfer_kit_attr_int(a->api, n, "num_heads", 0),
            rdim = minfer_kit_attr_int(a->api, n, "rotary_embedding_dim", 0);
    size_t B = (size_t)x->dims[0], S, N, H;
    int bnsh = x->rank == 4;
    if (bnsh) {
        N = (size_t)x->dims[1], S = (size_t)x->dims[2], H = (size_t)x->dims[3];
    } else {
        S = (size_t)x->dims[1];
        size_t hid = (size_t)x->dims[2];
        if (heads > 0)
            H = hid / (size_t)heads;
        else
            H = rdim > 0 ? (size_t)rdim : 2 * (size_t)cc->dims[1];
        if (H == 0 || hid % H)
            return FAIL(a, MINFER_ERR_SHAPE,
                        "RotaryEmbedding: the hidden size %zu is not a multiple of the head "
                        "size %zu",
                        hid, H);
        N = hid / H;
    }
    size_t R = rdim > 0 ? (size_t)rdim : H, half = R / 2;
    size_t maxpos = (size_t)cc->dims[0];
    if (R > H || R % 2 || (size_t)cc->dims[1] < half || sc->dims[0] != cc->dims[0] ||
        sc->dims[1] != cc->dims[1])
        return FAIL(a, MINFER_ERR_SHAPE,
                    "RotaryEmbedding: rotary dim %zu, head size %zu, caches %lld x %lld", R, H,
                    (long long)cc->dims[0], (long long)cc->dims[1]);
    size_t np = numel(pid);
    if (np != 1 && np != B * S)
        return FAIL(a, MINFER_ERR_SHAPE, "RotaryEmbedding: position_ids must be (B, S) or 1 value");
    const float *xp = x->data, *cp = cc->data, *sp = sc->data;
    const int64_t *pp = pid->data;
    float *y = OUTV(a, 0).data;
    size_t cw = (size_t)cc->dims[1];
    for (size_t b = 0; b < B; b++)
        for (size_t s = 0; s < S; s++) {
            int64_t pos = np == 1 ? pp[0] + (int64_t)s : pp[b * S + s];
            if (pos < 0 || (size_t)pos >= maxpos)
                return FAIL(a, MINFER_ERR_MODEL,
                            "RotaryEmbedding: position %lld outside the caches (%zu)",
                            (long long)pos, maxpos);
            const float *c = cp + (size_t)pos * cw, *sn = sp + (size_t)pos * cw;
            for (size_t h = 0; h < N; h++) {
                size_t off = bnsh ? ((b * N + h) * S + s) * H : (b * S + s) * N * H + h * H;
                const float *xi = xp + off;
                float *yo = y + off;
                for (size_t i = 0; i < half; i++) {
                    size_t i1 = inter ? 2 * i : i, i2 = inter ? 2 * i + 1 : i + half;
                    float x1 = xi[i1], x2 = xi[i2];
                    yo[i1] = x1 * c[i] - x2 * sn[i];
                    yo[i2] = x2 * c[i] + x1 * sn[i];
                }
                for (size_t i = R; i < H; i++)
                    yo[i] = xi[i];
            }
        }
    return MINFER_OK;
}
