/*
 * com.microsoft.nchwc: the blocked-layout ops ONNX Runtime writes at level
 * 'all' for convolutional nets (its NchwcTransformer).
 *
 * An NCHWc tensor has the 4-D shape (N, Cp, H, W) in the graph, with Cp the
 * channel count rounded up to the block size B, and the memory order
 * [N][Cp/B][H][W][B]: a block of B channels is contiguous at every pixel.
 * ReorderInput / ReorderOutput convert from and to NCHW (or NHWC with
 * channels_last); the ops between them read and write blocks. B is not
 * recorded in the model: it is what ORT's MLAS chose on the machine that
 * optimized it (16 with AVX-512F, else 8), and the Conv weights were
 * rearranged for it, so this plugin uses the same rule (nchwc_block()).
 *
 * Conv weights (an initializer of shape (Op, I, kh, kw), data already
 * rearranged by ORT) come in three forms, told apart as ORT tells them:
 *  - group 1 and I < B: X is a plain NCHW tensor with I channels and W is
 *    [Op/B][I][kh][kw][Bo] ("OIHWBo");
 *  - group > 1 and I == 1 (depthwise): W is [Op/B][1][kh][kw][Bo];
 *  - otherwise: W is [Op/B][I/B][kh][kw][Bi][Bo] ("OIHWBiBo"), I being the
 *    input channels per group.
 * Y = act(conv + bias + Sum), the optional fourth input Sum an NCHWc tensor
 * of Y's shape (ORT fuses a residual Add into the Conv that produces one of
 * its operands). Activations are FusedConv's (activation, activation_params).
 */
#include "contrib.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t round_up(int64_t c, int64_t b) {
    return (c + b - 1) / b * b;
}

/* ---- ReorderInput ---- */

minfer_status reorder_input_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st = want_type(a, 0, MINFER_DTYPE_FLOAT);
    if (st)
        return st;
    const minfer_value_desc *x = &(*din(n, 0));
    if (x->rank < 0) {
        OUTV(a, 0).dtype = MINFER_DTYPE_FLOAT;
        return MINFER_OK;
    }
    if (x->rank != 4)
        return FAIL(a, MINFER_ERR_SHAPE, "ReorderInput: input has rank %d, expected 4", x->rank);
    int cl = minfer_kit_attr_int(a->api, n, "channels_last", 0) != 0;
    int64_t c = x->dims[cl ? 3 : 1];
    int64_t d[4] = {x->dims[0], c < 0 ? -1 : round_up(c, nchwc_block()), x->dims[cl ? 1 : 2],
                    x->dims[cl ? 2 : 3]};
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, 4, d);
    return MINFER_OK;
}

minfer_status reorder_input_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    minfer_status st = check_in(a, 0, MINFER_DTYPE_FLOAT, 4, 4);
    if (st)
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0));
    int cl = minfer_kit_attr_int(a->api, a->node, "channels_last", 0) != 0;
    size_t B = (size_t)nchwc_block(), N = (size_t)x->dims[0], C = (size_t)x->dims[cl ? 3 : 1];
    size_t HW = (size_t)x->dims[cl ? 1 : 2] * (size_t)x->dims[cl ? 2 : 3];
    size_t Cp = (size_t)round_up((int64_t)C, (int64_t)B);
    if (numel(&OUTV(a, 0)) != N * Cp * HW)
        return FAIL(a, MINFER_ERR_SHAPE, "ReorderInput: the output's shape does not match");
    const float *xp = x->data;
    float *y = OUTV(a, 0).data;
    for (size_t ni = 0; ni < N; ni++)
        for (size_t cb = 0; cb < Cp / B; cb++)
            for (size_t p = 0; p < HW; p++) {
                float *d = y + ((ni * (Cp / B) + cb) * HW + p) * B;
                for (size_t b = 0; b < B; b++) {
                    size_t c = cb * B + b;
                    d[b] = c >= C ? 0.0f
                           : cl   ? xp[(ni * HW + p) * C + c]
                                  : xp[(ni * C + c) * HW + p];
                }
            }
    return MINFER_OK;
}

/* ---- ReorderOutput ---- */

minfer_status reorder_output_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st = want_type(a, 0, MINFER_DTYPE_FLOAT);
    if (st)
        return st;
    int64_t ch = minfer_kit_attr_int(a->api, n, "channels", 0);
    if (ch <= 0)
        return FAIL(a, MINFER_ERR_MODEL, "ReorderOutput: attribute channels must be positive");
    const minfer_value_desc *x = &(*din(n, 0));
    if (x->rank < 0) {
        OUTV(a, 0).dtype = MINFER_DTYPE_FLOAT;
        return MINFER_OK;
    }
    if (x->rank != 4)
        return FAIL(a, MINFER_ERR_SHAPE, "ReorderOutput: input has rank %d, expected 4", x->rank);
    if (x->dims[1] >= 0 && (x->dims[1] < ch || x->dims[1] % nchwc_block()))
        return FAIL(a, MINFER_ERR_SHAPE,
                    "ReorderOutput: %lld blocked channels cannot hold %lld (block size %lld)",
                    (long long)x->dims[1], (long long)ch, (long long)nchwc_block());
    int cl = minfer_kit_attr_int(a->api, n, "channels_last", 0) != 0;
    int64_t d[4] = {x->dims[0], cl ? x->dims[2] : ch, cl ? x->dims[3] : x->dims[2],
                    cl ? ch : x->dims[3]};
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, 4, d);
    return MINFER_OK;
}

minfer_status reorder_output_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    minfer_status st = check_in(a, 0, MINFER_DTYPE_FLOAT, 4, 4);
    if (st)
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0));
    int cl = minfer_kit_attr_int(a->api, a->node, "channels_last", 0) != 0;
    size_t B = (size_t)nchwc_block(), N = (size_t)x->dims[0], Cp = (size_t)x->dims[1];
    size_t C = (size_t)minfer_kit_attr_int(a->api, a->node, "channels", 0);
    size_t HW = (size_t)x->dims[2] * (size_t)x->dims[3];
    if (Cp % B || C > Cp || C == 0 || numel(&OUTV(a, 0)) != N * C * HW)
        return FAIL(a, MINFER_ERR_SHAPE, "ReorderOutput: %zu blocked channels, %zu wanted", Cp,
                    C);
    const float *xp = x->data;
    float *y = OUTV(a, 0).data;
    for (size_t ni = 0; ni < N; ni++)
        for (size_t c = 0; c < C; c++)
            for (size_t p = 0; p < HW; p++) {
                float v = xp[((ni * (Cp / B) + c / B) * HW + p) * B + c % B];
                if (cl)
                    y[(ni * HW + p) * C + c] = v;
                else
                    y[(ni * C + c) * HW + p] = v;
            }
    return MINFER_OK;
}

/* ---- Conv ---- */

typedef struct nconv_state {
    act f;
} nconv_state;

minfer_status nchwc_conv_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_FLOAT)))
        return st;
    const minfer_value_desc *x = &(*din(n, 0)), *w = &(*din(n, 1));
    if (x->rank < 0 || w->rank < 0) {
        OUTV(a, 0).dtype = MINFER_DTYPE_FLOAT;
        return MINFER_OK;
    }
    if (x->rank != 4 || w->rank != 4)
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc Conv: X and W must be 4-D (ranks %d, %d)",
                    x->rank, w->rank);
    conv_geom g;
    if ((st = conv_geom_make(a->api, n, 2, x->dims + 2, w->dims + 2, 0, &g, a->err,
                             a->err_size)))
        return st;
    int64_t d[4] = {x->dims[0], w->dims[0], g.out[0], g.out[1]};
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, 4, d);
    return MINFER_OK;
}

minfer_status nchwc_conv_create(void *op, create_args *a, void **state) {
    (void)op;
    nconv_state *s = calloc(1, sizeof *s);
    if (!s)
        return FAIL(a, MINFER_ERR_NOMEM, "nchwc Conv: out of memory");
    const float *p;
    size_t np = minfer_kit_attr_floats_ref(a->api, a->node, "activation_params", &p);
    const char *name = minfer_kit_attr_str(a->api, a->node, "activation", "");
    if (act_parse(name, p, np, &s->f)) {
        free(s);
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "nchwc Conv: unsupported activation '%s'", name);
    }
    *state = s;
    return MINFER_OK;
}

void nchwc_conv_destroy(void *op, void *state) {
    (void)op;
    free(state);
}

enum { FORM_NCHW, FORM_DEPTHWISE, FORM_BLOCKED };

typedef struct nconv_job {
    conv_geom g;
    int form;
    size_t B, N, Cin, Cinp, OB, I, G, Mg; /* Mg: output channels per group */
    const float *x, *w, *bias, *sum;
    float *y;
    const act *f;
} nconv_job;

/* Up to PX output pixels of one row, (image ni, output block ob, row oh)
 * from column ow0: the B-wide accumulators of all of them stay in
 * registers while one filter row of B values is loaded and applied to each.
 * B is a constant in each instantiation (8 or 16), so the loops over it
 * unroll and vectorise. */
enum { PX = 4 }; /* the blocked form below is written out for 4 */

static inline __attribute__((always_inline)) void
nconv_px(const nconv_job *j, size_t ni, size_t ob, size_t oh, size_t ow0, size_t cnt,
         const size_t B) {
    const conv_geom *g = &j->g;
    size_t IH = (size_t)g->in[0], IW = (size_t)g->in[1], KH = (size_t)g->k[0],
           KW = (size_t)g->k[1], OW = (size_t)g->out[1], OH = (size_t)g->out[0];
    float acc[PX][16];
    for (size_t p = 0; p < PX; p++)
        for (size_t b = 0; b < B; b++)
            acc[p][b] = j->bias ? j->bias[ob * B + b] : 0.0f;
    for (size_t kh = 0; kh < KH; kh++) {
        int64_t ih = (int64_t)oh * g->s[0] - g->pb[0] + (int64_t)kh * g->d[0];
        if (ih < 0 || ih >= (int64_t)IH)
            continue;
        for (size_t kw = 0; kw < KW; kw++) {
            size_t k = kh * KW + kw;
            /* Pixels outside the input (padding) read a block of zeros. */
            static const float zeros[16];
            size_t pix[PX];
            int ok[PX];
            for (size_t p = 0; p < PX; p++) {
                int64_t iw = (int64_t)(ow0 + p) * g->s[1] - g->pb[1] + (int64_t)kw * g->d[1];
                ok[p] = p < cnt && iw >= 0 && iw < (int64_t)IW;
                pix[p] = ok[p] ? (size_t)ih * IW + (size_t)iw : 0;
            }
            if (j->form == FORM_NCHW) {
                for (size_t ic = 0; ic < j->Cin; ic++) {
                    const float *x = j->x + (ni * j->Cin + ic) * IH * IW;
                    const float *w = j->w + ((ob * j->Cin + ic) * KH * KW + k) * B;
                    for (size_t p = 0; p < PX; p++) {
                        float xv = ok[p] ? x[pix[p]] : 0.0f;
                        for (size_t b = 0; b < B; b++)
                            acc[p][b] += xv * w[b];
                    }
                }
            } else if (j->form == FORM_DEPTHWISE) {
                const float *x = j->x + (ni * j->OB + ob) * IH * IW * B;
                const float *w = j->w + (ob * KH * KW + k) * B;
                for (size_t p = 0; p < PX; p++) {
                    const float *xb = ok[p] ? x + pix[p] * B : zeros;
                    for (size_t b = 0; b < B; b++)
                        acc[p][b] += xb[b] * w[b];
                }
            } else {
                size_t IB = j->I / B, gi = ob * B / j->Mg, cb0 = gi * IB;
                for (size_t ib = 0; ib < IB; ib++) {
                    const float *x = j->x + (ni * (j->Cinp / B) + cb0 + ib) * IH * IW * B;
                    const float *w = j->w + ((ob * IB + ib) * KH * KW + k) * B * B;
                    const float *x0 = ok[0] ? x + pix[0] * B : zeros,
                                *x1 = ok[1] ? x + pix[1] * B : zeros,
                                *x2 = ok[2] ? x + pix[2] * B : zeros,
                                *x3 = ok[3] ? x + pix[3] * B : zeros;
                    for (size_t bi = 0; bi < B; bi++) {
                        const float *wr = w + bi * B;
                        float v0 = x0[bi], v1 = x1[bi], v2 = x2[bi], v3 = x3[bi];
                        for (size_t b = 0; b < B; b++) {
                            float wv = wr[b];
                            acc[0][b] += v0 * wv;
                            acc[1][b] += v1 * wv;
                            acc[2][b] += v2 * wv;
                            acc[3][b] += v3 * wv;
                        }
                    }
                }
            }
        }
    }
    float *yrow = j->y + ((ni * j->OB + ob) * OH + oh) * OW * B;
    for (size_t p = 0; p < cnt; p++) {
        float *yv = yrow + (ow0 + p) * B;
        if (j->sum) {
            const float *sv = j->sum + (yv - j->y);
            for (size_t b = 0; b < B; b++)
                acc[p][b] += sv[b];
        }
        act_apply(j->f, acc[p], B);
        memcpy(yv, acc[p], B * sizeof(float));
    }
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define NCONV_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define NCONV_CLONES
#endif

/* One item is one (image, output block, output row). */
NCONV_CLONES static void nconv_range(void *arg, size_t i0, size_t i1) {
    const nconv_job *j = arg;
    size_t OH = (size_t)j->g.out[0], OW = (size_t)j->g.out[1];
    for (size_t it = i0; it < i1; it++) {
        size_t oh = it % OH, ob = (it / OH) % j->OB, ni = it / OH / j->OB;
        for (size_t ow = 0; ow < OW; ow += PX) {
            size_t cnt = OW - ow < PX ? OW - ow : PX;
            if (j->B == 16)
                nconv_px(j, ni, ob, oh, ow, cnt, 16);
            else
                nconv_px(j, ni, ob, oh, ow, cnt, 8);
        }
    }
}

minfer_status nchwc_conv_compute(void *op, void *state, compute_args *a) {
    (void)op;
    const nconv_state *s = state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 4, 4)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 4, 4)))
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0)), *w = &(*vin(a, 1));
    const minfer_tensor_view *b = a->n_inputs > 2 && (*vin(a, 2)).data ? &(*vin(a, 2)) : NULL;
    const minfer_tensor_view *sum = a->n_inputs > 3 && (*vin(a, 3)).data ? &(*vin(a, 3)) : NULL;
    minfer_tensor_view *y = &OUTV(a, 0);
    nconv_job j;
    memset(&j, 0, sizeof j);
    if ((st = conv_geom_make(a->api, n, 2, x->dims + 2, w->dims + 2, 0, &j.g, a->err,
                             a->err_size)))
        return st;
    size_t B = (size_t)nchwc_block(); /* 8 or 16: nconv_range instantiates both */
    int64_t group = minfer_kit_attr_int(a->api, n, "group", 1);
    size_t Op = (size_t)w->dims[0], I = (size_t)w->dims[1];
    if (group <= 0 || Op % B || Op % (size_t)group)
        return FAIL(a, MINFER_ERR_SHAPE,
                    "nchwc Conv: %zu output channels, group %lld, block size %zu: not a "
                    "blocked filter (was the model optimized on a CPU with another block "
                    "size?)",
                    Op, (long long)group, B);
    j.B = B;
    j.N = (size_t)x->dims[0];
    j.G = (size_t)group;
    j.I = I;
    j.OB = Op / B;
    j.Mg = Op / j.G;
    if (group == 1 && I < B) {
        j.form = FORM_NCHW;
        j.Cin = I;
        if ((size_t)x->dims[1] != I)
            return FAIL(a, MINFER_ERR_SHAPE, "nchwc Conv: X has %lld channels, W expects %zu",
                        (long long)x->dims[1], I);
    } else if (group > 1 && I == 1) {
        j.form = FORM_DEPTHWISE;
        if ((size_t)x->dims[1] != Op || (size_t)group != Op)
            return FAIL(a, MINFER_ERR_SHAPE,
                        "nchwc Conv: depthwise with %lld input channels, %zu outputs, group %lld",
                        (long long)x->dims[1], Op, (long long)group);
    } else {
        j.form = FORM_BLOCKED;
        j.Cinp = (size_t)x->dims[1];
        if (I % B || j.Mg % B || j.Cinp != I * j.G)
            return FAIL(a, MINFER_ERR_SHAPE,
                        "nchwc Conv: X has %zu channels, W %zu per group, group %zu, block %zu",
                        j.Cinp, I, j.G, B);
    }
    for (int i = 0; i < 2; i++)
        if (j.g.k[i] != w->dims[2 + i])
            return FAIL(a, MINFER_ERR_SHAPE, "nchwc Conv: kernel_shape differs from W's shape");
    if (b && (b->dtype != MINFER_DTYPE_FLOAT || (size_t)numel(b) < Op))
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc Conv: B must hold %zu floats", Op);
    if (y->rank != 4 || (size_t)y->dims[1] != Op || y->dims[2] != j.g.out[0] ||
        y->dims[3] != j.g.out[1] || (size_t)y->dims[0] != j.N)
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc Conv: the output's shape does not match");
    if (sum && (sum->dtype != MINFER_DTYPE_FLOAT || numel(sum) != numel(y)))
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc Conv: Sum must have the output's shape");
    j.x = x->data;
    j.w = w->data;
    j.bias = b ? b->data : NULL;
    j.sum = sum ? sum->data : NULL;
    j.y = y->data;
    j.f = &s->f;
    size_t OHs = (size_t)j.g.out[0];
    par_for(a, j.N * j.OB * OHs, 1, nconv_range, &j);
    return MINFER_OK;
}

/* ---- MaxPool / AveragePool ---- */

minfer_status nchwc_pool_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st = want_type(a, 0, MINFER_DTYPE_FLOAT);
    if (st)
        return st;
    const minfer_value_desc *x = &(*din(n, 0));
    if (x->rank < 0) {
        OUTV(a, 0).dtype = MINFER_DTYPE_FLOAT;
        return MINFER_OK;
    }
    if (x->rank != 4)
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc %s: input has rank %d, expected 4", n->op_type,
                    x->rank);
    conv_geom g;
    if ((st = conv_geom_make(a->api, n, 2, x->dims + 2, NULL,
                             minfer_kit_attr_int(a->api, n, "ceil_mode", 0) != 0, &g, a->err,
                             a->err_size)))
        return st;
    int64_t d[4] = {x->dims[0], x->dims[1], g.out[0], g.out[1]};
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, 4, d);
    return MINFER_OK;
}

minfer_status nchwc_pool_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st = check_in(a, 0, MINFER_DTYPE_FLOAT, 4, 4);
    if (st)
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0));
    conv_geom g;
    if ((st = conv_geom_make(a->api, n, 2, x->dims + 2, NULL,
                             minfer_kit_attr_int(a->api, n, "ceil_mode", 0) != 0, &g, a->err,
                             a->err_size)))
        return st;
    size_t B = (size_t)nchwc_block(), N = (size_t)x->dims[0], Cp = (size_t)x->dims[1];
    if (Cp % B)
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc %s: %zu channels is not a multiple of block %zu",
                    n->op_type, Cp, B);
    int is_max = !strcmp(n->op_type, "MaxPool");
    int include_pad = minfer_kit_attr_int(a->api, n, "count_include_pad", 0) != 0;
    int64_t IH = g.in[0], IW = g.in[1], OH = g.out[0], OW = g.out[1];
    minfer_tensor_view *y = &OUTV(a, 0);
    if (numel(y) != N * Cp * (size_t)(OH * OW))
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc %s: the output's shape does not match",
                    n->op_type);
    const float *xp = x->data;
    float *yp = y->data;
    float acc[16];
    for (size_t plane = 0; plane < N * Cp / B; plane++)
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                size_t cnt = 0;
                for (size_t b = 0; b < B; b++)
                    acc[b] = is_max ? -INFINITY : 0.0f;
                int64_t h0 = oh * g.s[0] - g.pb[0], w0 = ow * g.s[1] - g.pb[1];
                for (int64_t kh = 0; kh < g.k[0]; kh++) {
                    int64_t ih = h0 + kh * g.d[0];
                    for (int64_t kw = 0; kw < g.k[1]; kw++) {
                        int64_t iw = w0 + kw * g.d[1];
                        if (include_pad && ih < IH + g.pe[0] && iw < IW + g.pe[1])
                            cnt++;
                        if (ih < 0 || ih >= IH || iw < 0 || iw >= IW)
                            continue;
                        if (!include_pad)
                            cnt++;
                        const float *v = xp + ((plane * (size_t)IH + (size_t)ih) * (size_t)IW +
                                               (size_t)iw) * B;
                        for (size_t b = 0; b < B; b++)
                            acc[b] = is_max ? (v[b] > acc[b] ? v[b] : acc[b]) : acc[b] + v[b];
                    }
                }
                float *o = yp + ((plane * (size_t)OH + (size_t)oh) * (size_t)OW + (size_t)ow) * B;
                for (size_t b = 0; b < B; b++)
                    o[b] = is_max ? acc[b] : cnt ? acc[b] / (float)cnt : 0.0f;
            }
    return MINFER_OK;
}

/* ---- GlobalAveragePool / GlobalMaxPool ---- */

minfer_status nchwc_global_pool_infer(void *op, infer_args *a) {
    (void)op;
    minfer_status st = want_type(a, 0, MINFER_DTYPE_FLOAT);
    if (st)
        return st;
    const minfer_value_desc *x = &(*din(a->node, 0));
    if (x->rank >= 0 && x->rank != 4)
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc %s: input has rank %d, expected 4",
                    a->node->op_type, x->rank);
    out_like(&OUTV(a, 0), x, MINFER_DTYPE_FLOAT);
    if (x->rank == 4)
        OUTV(a, 0).dims[2] = OUTV(a, 0).dims[3] = 1;
    return MINFER_OK;
}

minfer_status nchwc_global_pool_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    minfer_status st = check_in(a, 0, MINFER_DTYPE_FLOAT, 4, 4);
    if (st)
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0));
    size_t B = (size_t)nchwc_block(), N = (size_t)x->dims[0], Cp = (size_t)x->dims[1];
    size_t HW = (size_t)x->dims[2] * (size_t)x->dims[3];
    int is_max = !strcmp(a->node->op_type, "GlobalMaxPool");
    if (Cp % B || numel(&OUTV(a, 0)) != N * Cp)
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc %s: %zu channels, block size %zu",
                    a->node->op_type, Cp, B);
    const float *xp = x->data;
    float *y = OUTV(a, 0).data;
    for (size_t plane = 0; plane < N * Cp / B; plane++) {
        float *o = y + plane * B;
        for (size_t b = 0; b < B; b++)
            o[b] = is_max ? -INFINITY : 0.0f;
        for (size_t p = 0; p < HW; p++) {
            const float *v = xp + (plane * HW + p) * B;
            for (size_t b = 0; b < B; b++)
                o[b] = is_max ? (v[b] > o[b] ? v[b] : o[b]) : o[b] + v[b];
        }
        if (!is_max && HW)
            for (size_t b = 0; b < B; b++)
                o[b] /= (float)HW;
    }
    return MINFER_OK;
}

/* ---- Upsample: integer scales (N, C unscaled), nearest or linear ---- */

static minfer_status ups_scales(const minfer_host_api *api, const minfer_node_desc *n,
                                int64_t *sh, int64_t *sw, char *err, size_t es) {
    const int64_t *s;
    size_t c = minfer_kit_attr_ints_ref(api, n, "scales", &s);
    if (c != 4 || s[0] != 1 || s[1] != 1 || s[2] <= 0 || s[3] <= 0 || s[2] > 4096 ||
        s[3] > 4096) {
        snprintf(err, es, "nchwc Upsample: scales must be 4 integers (1, 1, h, w), h, w > 0");
        return MINFER_ERR_MODEL;
    }
    *sh = s[2], *sw = s[3];
    return MINFER_OK;
}

minfer_status nchwc_upsample_infer(void *op, infer_args *a) {
    (void)op;
    minfer_status st = want_type(a, 0, MINFER_DTYPE_FLOAT);
    int64_t sh, sw;
    if (st || (st = ups_scales(a->api, a->node, &sh, &sw, a->err, a->err_size)))
        return st;
    const minfer_value_desc *x = &(*din(a->node, 0));
    if (x->rank >= 0 && x->rank != 4)
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc Upsample: input has rank %d, expected 4",
                    x->rank);
    out_like(&OUTV(a, 0), x, MINFER_DTYPE_FLOAT);
    if (x->rank == 4) {
        if (x->dims[2] >= 0)
            OUTV(a, 0).dims[2] = x->dims[2] * sh;
        if (x->dims[3] >= 0)
            OUTV(a, 0).dims[3] = x->dims[3] * sw;
    }
    return MINFER_OK;
}

/* Source coordinate of output o for linear mode. */
static float src_coord(const char *mode, int64_t o, int64_t scale, int64_t in, int64_t out) {
    if (!strcmp(mode, "align_corners"))
        return out > 1 ? (float)o * (float)(in - 1) / (float)(out - 1) : 0.0f;
    if (!strcmp(mode, "half_pixel"))
        return ((float)o + 0.5f) / (float)scale - 0.5f;
    return (float)o / (float)scale;
}

minfer_status nchwc_upsample_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st = check_in(a, 0, MINFER_DTYPE_FLOAT, 4, 4);
    int64_t sh, sw;
    if (st || (st = ups_scales(a->api, n, &sh, &sw, a->err, a->err_size)))
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0));
    size_t B = (size_t)nchwc_block(), N = (size_t)x->dims[0], Cp = (size_t)x->dims[1];
    int64_t IH = x->dims[2], IW = x->dims[3], OH = IH * sh, OW = IW * sw;
    if (Cp % B || numel(&OUTV(a, 0)) != N * Cp * (size_t)(OH * OW))
        return FAIL(a, MINFER_ERR_SHAPE, "nchwc Upsample: the output's shape does not match");
    const char *mode = minfer_kit_attr_str(a->api, n, "mode", "nearest");
    const char *ctm =
        minfer_kit_attr_str(a->api, n, "coordinate_transformation_mode", "asymmetric");
    int linear = !strcmp(mode, "linear");
    if (!linear && strcmp(mode, "nearest"))
        return FAIL(a, MINFER_ERR_UNSUPPORTED, "nchwc Upsample: mode '%s'", mode);
    const float *xp = x->data;
    float *yp = OUTV(a, 0).data;
    for (size_t plane = 0; plane < N * Cp / B; plane++) {
        const float *xs = xp + plane * (size_t)(IH * IW) * B;
        float *ys = yp + plane * (size_t)(OH * OW) * B;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                float *o = ys + (size_t)(oh * OW + ow) * B;
                if (!linear) {
                    const float *v = xs + (size_t)((oh / sh) * IW + ow / sw) * B;
                    memcpy(o, v, B * sizeof(float));
                    continue;
                }
                float fy = src_coord(ctm, oh, sh, IH, OH), fx = src_coord(ctm, ow, sw, IW, OW);
                fy = fy < 0 ? 0 : fy;
                fx = fx < 0 ? 0 : fx;
                int64_t y0 = (int64_t)fy, x0 = (int64_t)fx;
                if (y0 > IH - 1)
                    y0 = IH - 1;
                if (x0 > IW - 1)
                    x0 = IW - 1;
                int64_t y1 = y0 + 1 < IH ? y0 + 1 : IH - 1, x1 = x0 + 1 < IW ? x0 + 1 : IW - 1;
                float dy = fy - (float)y0, dx = fx - (float)x0;
                if (dy > 1)
                    dy = 1;
                if (dx > 1)
                    dx = 1;
                const float *p00 = xs + (size_t)(y0 * IW + x0) * B,
                            *p01 = xs + (size_t)(y0 * IW + x1) * B,
                            *p10 = xs + (size_t)(y1 * IW + x0) * B,
                            *p11 = xs + (size_t)(y1 * IW + x1) * B;
                for (size_t b = 0; b < B; b++)
                    o[b] = (1 - dy) * ((1 - dx) * p00[b] + dx * p01[b]) +
                           dy * ((1 - dx) * p10[b] + dx * p11[b]);
            }
    }
    return MINFER_OK;
}
