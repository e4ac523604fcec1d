/*
 * FusedConv, FusedGemm, FusedMatMul: a standard op with ONNX Runtime's
 * fusions folded in.
 *
 * FusedConv is Conv (NCHW, 1 to 3 spatial dims) followed by an activation,
 * with an optional fourth input Z added before the activation:
 * Y = act(conv(X, W) + B + Z). FusedGemm is act(alpha op(A) op(B) + beta C).
 * FusedMatMul is alpha * op(A) @ op(B) with MatMul's batch broadcasting,
 * where op transposes the last two dimensions (transA/transB) and, with
 * transBatchA/transBatchB, first moves dimension 0 to just before the last
 * (ORT folds a Transpose of the batch into the MatMul that way).
 *
 * Convolution is im2col + the blocked sgemm (contrib.c), one image and group
 * at a time; a 1x1 unpadded, unstrided conv reads X directly, and a
 * depthwise conv (one input and one output channel per group) is a direct
 * loop.
 */
#include "contrib.h"

#include <stdlib.h>
#include <string.h>

minfer_status conv_geom_make(const minfer_host_api *api, const minfer_node_desc *n, int nd,
                             const int64_t *in, const int64_t *kernel, int ceil_mode,
                             conv_geom *g, char *err, size_t es) {
    const int64_t *v;
    size_t c;
    memset(g, 0, sizeof *g);
    if (nd < 1 || nd > 3) {
        snprintf(err, es, "%s: %d spatial dimensions (1 to 3 are supported)", n->op_type, nd);
        return MINFER_ERR_UNSUPPORTED;
    }
    g->nd = nd;
    c = minfer_kit_attr_ints_ref(api, n, "kernel_shape", &v);
    for (int i = 0; i < nd; i++) {
        g->k[i] = c == (size_t)nd ? v[i] : kernel ? kernel[i] : -1;
        g->s[i] = g->d[i] = 1;
        g->in[i] = in[i];
    }
    if (c && c != (size_t)nd) {
        snprintf(err, es, "%s: kernel_shape has %zu values for %d spatial dimensions",
                 n->op_type, c, nd);
        return MINFER_ERR_MODEL;
    }
    if ((c = minfer_kit_attr_ints_ref(api, n, "strides", &v)) == (size_t)nd)
        memcpy(g->s, v, nd * sizeof(int64_t));
    if ((c = minfer_kit_attr_ints_ref(api, n, "dilations", &v)) == (size_t)nd)
        memcpy(g->d, v, nd * sizeof(int64_t));
    if ((c = minfer_kit_attr_ints_ref(api, n, "pads", &v)) == (size_t)(2 * nd))
        for (int i = 0; i < nd; i++)
            g->pb[i] = v[i], g->pe[i] = v[i + nd];
    for (int i = 0; i < nd; i++)
        if (g->k[i] <= 0 || g->s[i] <= 0 || g->d[i] <= 0 || g->pb[i] < 0 || g->pe[i] < 0 ||
            g->k[i] > (1 << 20) || g->d[i] > (1 << 20) || g->pb[i] > (1 << 24) ||
            g->pe[i] > (1 << 24)) {
            snprintf(err, es,
                     "%s: bad kernel_shape / strides / dilations / pads at spatial axis %d",
                     n->op_type, i);
            return MINFER_ERR_MODEL;
        }
    const char *pad = minfer_kit_attr_str(api, n, "auto_pad", "NOTSET");
    for (int i = 0; i < nd; i++) {
        int64_t ek = (g->k[i] - 1) * g->d[i] + 1;
        if (in[i] < 0) {
            g->out[i] = -1;
            continue;
        }
        if (!strcmp(pad, "SAME_UPPER") || !strcmp(pad, "SAME_LOWER")) {
            int64_t o = (in[i] + g->s[i] - 1) / g->s[i];
            int64_t total = (o - 1) * g->s[i] + ek - in[i];
            if (total < 0)
                total = 0;
            g->pb[i] = !strcmp(pad, "SAME_UPPER") ? total / 2 : total - total / 2;
            g->pe[i] = total - g->pb[i];
            g->out[i] = o;
        } else {
            if (!strcmp(pad, "VALID"))
                g->pb[i] = g->pe[i] = 0;
            else if (strcmp(pad, "NOTSET")) {
                snprintf(err, es, "%s: unknown auto_pad '%s'", n->op_type, pad);
                return MINFER_ERR_MODEL;
            }
            int64_t span = in[i] + g->pb[i] + g->pe[i] - ek;
            if (span < 0) {
                snprintf(err, es, "%s: the kernel (%lld) is larger than the padded input (%lld)",
                         n->op_type, (long long)ek, (long long)(in[i] + g->pb[i] + g->pe[i]));
                return MINFER_ERR_SHAPE;
            }
            g->out[i] = (ceil_mode ? (span + g->s[i] - 1) / g->s[i] : span / g->s[i]) + 1;
            /* ceil_mode: the last window must start inside the input or left padding. */
            if (ceil_mode && (g->out[i] - 1) * g->s[i] >= in[i] + g->pb[i])
                g->out[i]--;
        }
    }
    return MINFER_OK;
}

/* ---- FusedConv ---- */

typedef struct conv_state {
    act f;
} conv_state;

static minfer_status read_act(const minfer_host_api *api, const minfer_node_desc *n, act *f,
                              char *err, size_t es) {
    const float *p;
    size_t np = minfer_kit_attr_floats_ref(api, n, "activation_params", &p);
    const char *name = minfer_kit_attr_str(api, n, "activation", "");
    if (act_parse(name, p, np, f)) {
        snprintf(err, es, "%s: unsupported activation '%s' (or missing activation_params)",
                 n->op_type, name);
        return MINFER_ERR_UNSUPPORTED;
    }
    return MINFER_OK;
}

minfer_status fused_conv_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    act f;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_FLOAT)))
        return st;
    if ((st = read_act(a->api, n, &f, a->err, a->err_size)))
        return st;
    const minfer_value_desc *x = &(*din(n, 0)), *w = &(*din(n, 1));
    int64_t dims[MINFER_MAX_RANK];
    if (x->rank < 0 || w->rank < 0) {
        OUTV(a, 0).dtype = MINFER_DTYPE_FLOAT;
        return MINFER_OK;
    }
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank)
        return FAIL(a, MINFER_ERR_SHAPE, "FusedConv: X has rank %d and W rank %d (3 to 5, equal)",
                    x->rank, w->rank);
    conv_geom g;
    if ((st = conv_geom_make(a->api, n, x->rank - 2, x->dims + 2, w->dims + 2, 0, &g, a->err,
                             a->err_size)))
        return st;
    dims[0] = x->dims[0];
    dims[1] = w->dims[0];
    for (int i = 0; i < g.nd; i++)
        dims[2 + i] = g.out[i];
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, x->rank, dims);
    return MINFER_OK;
}

minfer_status fused_conv_create(void *op, create_args *a, void **state) {
    (void)op;
    conv_state *s = calloc(1, sizeof *s);
    if (!s)
        return FAIL(a, MINFER_ERR_NOMEM, "FusedConv: out of memory");
    minfer_status st = read_act(a->api, a->node, &s->f, a->err, a->err_size);
    if (st) {
        free(s);
        return st;
    }
    *state = s;
    return MINFER_OK;
}

void fused_conv_destroy(void *op, void *state) {
    (void)op;
    free(state);
}

/* im2col for one image and group: col[(c, k...) x out positions]. */
static void im2col(const conv_geom *g, const float *x, size_t C, float *col) {
    int64_t in1 = g->nd > 1 ? g->in[1] : 1, in2 = g->nd > 2 ? g->in[2] : 1;
    int64_t o1 = g->nd > 1 ? g->out[1] : 1, o2 = g->nd > 2 ? g->out[2] : 1;
    int64_t k1 = g->nd > 1 ? g->k[1] : 1, k2 = g->nd > 2 ? g->k[2] : 1;
    size_t osz = (size_t)(g->out[0] * o1 * o2);
    for (size_t c = 0; c < C; c++)
        for (int64_t a0 = 0; a0 < g->k[0]; a0++)
            for (int64_t a1 = 0; a1 < k1; a1++)
                for (int64_t a2 = 0; a2 < k2; a2++) {
                    float *dst = col;
                    col += osz;
                    for (int64_t p0 = 0; p0 < g->out[0]; p0++) {
                        int64_t i0 = p0 * g->s[0] - g->pb[0] + a0 * g->d[0];
                        for (int64_t p1 = 0; p1 < o1; p1++) {
                            int64_t i1 = g->nd > 1 ? p1 * g->s[1] - g->pb[1] + a1 * g->d[1] : 0;
                            for (int64_t p2 = 0; p2 < o2; p2++) {
                                int64_t i2 =
                                    g->nd > 2 ? p2 * g->s[2] - g->pb[2] + a2 * g->d[2] : 0;
                                int in = i0 >= 0 && i0 < g->in[0] && i1 >= 0 && i1 < in1 &&
                                         i2 >= 0 && i2 < in2;
                                *dst++ = in ? x[((size_t)c * g->in[0] + i0) * in1 * in2 +
                                                (size_t)i1 * in2 + i2]
                                            : 0.0f;
                            }
                        }
                    }
                }
}

typedef struct dw_job {
    const conv_geom *g;
    const float *x, *w, *b, *z;
    float *y;
    size_t C;
    const act *f;
} dw_job;

/* Depthwise 2-D (1-D as height 1): one (image, channel) plane per item. */
static void dw_range(void *arg, size_t p0, size_t p1) {
    const dw_job *j = arg;
    const conv_geom *g = j->g;
    int64_t H = g->in[0], W = g->nd > 1 ? g->in[1] : 1, OH = g->out[0],
            OW = g->nd > 1 ? g->out[1] : 1, KH = g->k[0], KW = g->nd > 1 ? g->k[1] : 1,
            SW = g->nd > 1 ? g->s[1] : 1, DW = g->nd > 1 ? g->d[1] : 1,
            PW = g->nd > 1 ? g->pb[1] : 0;
    for (size_t p = p0; p < p1; p++) {
        size_t c = p % j->C;
        const float *x = j->x + p * (size_t)(H * W), *w = j->w + c * (size_t)(KH * KW);
        float *y = j->y + p * (size_t)(OH * OW);
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                float s = j->b ? j->b[c] : 0.0f;
                for (int64_t kh = 0; kh < KH; kh++) {
                    int64_t ih = oh * g->s[0] - g->pb[0] + kh * g->d[0];
                    if (ih < 0 || ih >= H)
                        continue;
                    for (int64_t kw = 0; kw < KW; kw++) {
                        int64_t iw = ow * SW - PW + kw * DW;
                        if (iw >= 0 && iw < W)
                            s += x[ih * W + iw] * w[kh * KW + kw];
                    }
                }
                y[oh * OW + ow] = s;
            }
        if (j->z) {
            const float *z = j->z + p * (size_t)(OH * OW);
            for (int64_t i = 0; i < OH * OW; i++)
                y[i] += z[i];
        }
        act_apply(j->f, y, (size_t)(OH * OW));
    }
}

minfer_status fused_conv_compute(void *op, void *state, compute_args *a) {
    (void)op;
    const conv_state *s = state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 3, 5)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 3, 5)))
        return st;
    const minfer_tensor_view *x = &(*vin(a, 0)), *w = &(*vin(a, 1));
    const minfer_tensor_view *b = a->n_inputs > 2 && (*vin(a, 2)).data ? &(*vin(a, 2)) : NULL;
    const minfer_tensor_view *z = a->n_inputs > 3 && (*vin(a, 3)).data ? &(*vin(a, 3)) : NULL;
    minfer_tensor_view *y = &OUTV(a, 0);
    conv_geom g;
    if (w->rank != x->rank)
        return FAIL(a, MINFER_ERR_SHAPE, "FusedConv: X has rank %d, W rank %d", x->rank, w->rank);
    if ((st = conv_geom_make(a->api, n, x->rank - 2, x->dims + 2, w->dims + 2, 0, &g, a->err,
                             a->err_size)))
        return st;
    int64_t group = minfer_kit_attr_int(a->api, n, "group", 1);
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1], M = (size_t)w->dims[0];
    if (group <= 0 || C % (size_t)group || M % (size_t)group ||
        (size_t)w->dims[1] != C / (size_t)group)
        return FAIL(a, MINFER_ERR_SHAPE,
                    "FusedConv: X has %zu channels, W is %lld x %lld, group %lld", C,
                    (long long)w->dims[0], (long long)w->dims[1], (long long)group);
    for (int i = 0; i < g.nd; i++)
        if (g.k[i] != w->dims[2 + i])
            return FAIL(a, MINFER_ERR_SHAPE, "FusedConv: kernel_shape differs from W's shape");
    size_t isz = 1, osz = 1, ksz = 1;
    for (int i = 0; i < g.nd; i++)
        isz *= (size_t)g.in[i], osz *= (size_t)g.out[i], ksz *= (size_t)g.k[i];
    if (b && (b->rank != 1 || (size_t)b->dims[0] != M))
        return FAIL(a, MINFER_ERR_SHAPE, "FusedConv: B must have %zu elements", M);
    if (y->rank != x->rank || (size_t)y->dims[0] != N || (size_t)y->dims[1] != M ||
        numel(y) != N * M * osz)
        return FAIL(a, MINFER_ERR_SHAPE, "FusedConv: the output's shape does not match");
    if (z && numel(z) != numel(y))
        return FAIL(a, MINFER_ERR_SHAPE, "FusedConv: Z (the sum input) must have Y's shape");
    const float *xp = x->data, *wp = w->data;
    float *yp = y->data;
    size_t G = (size_t)group, Cg = C / G, Mg = M / G;
    if (Cg == 1 && Mg == 1 && g.nd <= 2) {
        dw_job j = {&g, xp, wp, b ? b->data : NULL, z ? z->data : NULL, yp, C, &s->f};
        par_for(a, N * C, 1, dw_range, &j);
        return MINFER_OK;
    }
    int direct = ksz == 1;
    for (int i = 0; i < g.nd; i++)
        direct &= g.s[i] == 1 && g.pb[i] == 0 && g.pe[i] == 0;
    float *col = NULL;
    if (!direct) {
        size_t bytes;
        if (minfer_size_mul(Cg * ksz, osz, &bytes) || minfer_size_mul(bytes, sizeof(float), &bytes))
            return FAIL(a, MINFER_ERR_LIMIT, "FusedConv: im2col buffer too large");
        if (!(col = malloc(bytes ? bytes : 1)))
            return FAIL(a, MINFER_ERR_NOMEM, "FusedConv: out of memory for im2col (%zu bytes)",
                        bytes);
    }
    for (size_t ni = 0; ni < N; ni++)
        for (size_t gi = 0; gi < G; gi++) {
            const float *xg = xp + (ni * C + gi * Cg) * isz;
            float *yg = yp + (ni * M + gi * Mg) * osz;
            if (!direct)
                im2col(&g, xg, Cg, col);
            int acc = 0;
            if (z) {
                memcpy(yg, (const float *)z->data + (ni * M + gi * Mg) * osz,
                       Mg * osz * sizeof(float));
                acc = 1;
            }
            sgemm(a, Mg, osz, Cg * ksz, 1.0f, wp + gi * Mg * Cg * ksz, Cg * ksz, 0,
                  direct ? xg : col, osz, 0, yg, osz, acc);
        }
    free(col);
    for (size_t ni = 0; ni < N; ni++)
        for (size_t m = 0; m < M; m++) {
            float *yr = yp + (ni * M + m) * osz;
            if (b) {
                float bv = ((const float *)b->data)[m];
                for (size_t i = 0; i < osz; i++)
                    yr[i] += bv;
            }
            act_apply(&s->f, yr, osz);
        }
    return MINFER_OK;
}

/* ---- FusedGemm ---- */

typedef struct gemm_state {
    act f;
} gemm_state;

static minfer_status read_gemm_act(const minfer_host_api *api, const minfer_node_desc *n, act *f,
                                   char *err, size_t es) {
    float p[2];
    size_t np = 0;
    const char *name = minfer_kit_attr_str(api, n, "activation", "");
    float v;
    if (api->attr_float(n, "activation_alpha", &v))
        p[np++] = v;
    if (np == 1 && api->attr_float(n, "activation_beta", &v))
        p[np++] = v;
    if (act_parse(name, p, np, f) || f->kind == ACT_CLIP) {
        snprintf(err, es, "%s: unsupported activation '%s'", n->op_type, name);
        return MINFER_ERR_UNSUPPORTED;
    }
    return MINFER_OK;
}

minfer_status fused_gemm_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    act f;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_FLOAT)))
        return st;
    if ((st = read_gemm_act(a->api, n, &f, a->err, a->err_size)))
        return st;
    const minfer_value_desc *A = &(*din(n, 0)), *B = &(*din(n, 1));
    int ta = minfer_kit_attr_int(a->api, n, "transA", 0) != 0,
        tb = minfer_kit_attr_int(a->api, n, "transB", 0) != 0;
    if ((A->rank >= 0 && A->rank != 2) || (B->rank >= 0 && B->rank != 2))
        return FAIL(a, MINFER_ERR_SHAPE, "FusedGemm: A and B must be 2-D");
    int64_t d[2] = {A->rank == 2 ? A->dims[ta] : -1, B->rank == 2 ? B->dims[!tb] : -1};
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, 2, d);
    return MINFER_OK;
}

minfer_status fused_gemm_create(void *op, create_args *a, void **state) {
    (void)op;
    gemm_state *s = calloc(1, sizeof *s);
    if (!s)
        return FAIL(a, MINFER_ERR_NOMEM, "FusedGemm: out of memory");
    minfer_status st = read_gemm_act(a->api, a->node, &s->f, a->err, a->err_size);
    if (st) {
        free(s);
        return st;
    }
    *state = s;
    return MINFER_OK;
}

void fused_gemm_destroy(void *op, void *state) {
    (void)op;
    free(state);
}

minfer_status fused_gemm_compute(void *op, void *state, compute_args *a) {
    (void)op;
    const gemm_state *s = state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 2, 2)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 2, 2)))
        return st;
    const minfer_tensor_view *A = &(*vin(a, 0)), *B = &(*vin(a, 1));
    const minfer_tensor_view *C = a->n_inputs > 2 && (*vin(a, 2)).data ? &(*vin(a, 2)) : NULL;
    int ta = minfer_kit_attr_int(a->api, n, "transA", 0) != 0,
        tb = minfer_kit_attr_int(a->api, n, "transB", 0) != 0;
    float alpha = minfer_kit_attr_float(a->api, n, "alpha", 1.0f),
          beta = minfer_kit_attr_float(a->api, n, "beta", 1.0f);
    size_t M = (size_t)A->dims[ta], K = (size_t)A->dims[!ta], N = (size_t)B->dims[!tb];
    if ((size_t)B->dims[tb] != K)
        return FAIL(a, MINFER_ERR_SHAPE, "FusedGemm: inner dimensions %zu and %lld differ", K,
                    (long long)B->dims[tb]);
    minfer_tensor_view *Y = &OUTV(a, 0);
    if (Y->rank != 2 || (size_t)Y->dims[0] != M || (size_t)Y->dims[1] != N)
        return FAIL(a, MINFER_ERR_SHAPE, "FusedGemm: the output's shape does not match");
    float *y = Y->data;
    int acc = 0;
    if (C && beta != 0.0f) {
        if (C->dtype != MINFER_DTYPE_FLOAT || C->rank > 2)
            return FAIL(a, MINFER_ERR_TYPE, "FusedGemm: C must be a float tensor of rank <= 2");
        size_t cm = C->rank == 2 ? (size_t)C->dims[0] : 1;
        size_t cn = C->rank >= 1 ? (size_t)C->dims[C->rank - 1] : 1;
        if ((cm != 1 && cm != M) || (cn != 1 && cn != N))
            return FAIL(a, MINFER_ERR_SHAPE, "FusedGemm: C does not broadcast to %zu x %zu", M,
                        N);
        const float *c = C->data;
        for (size_t i = 0; i < M; i++)
            for (size_t j = 0; j < N; j++)
                y[i * N + j] = beta * c[(cm == 1 ? 0 : i) * cn + (cn == 1 ? 0 : j)];
        acc = 1;
    }
    sgemm(a, M, N, K, alpha, A->data, A->dims[1], ta, B->data, B->dims[1], tb, y, N,
          acc);
    act_apply(&s->f, y, M * N);
    return MINFER_OK;
}

/* ---- FusedMatMul ---- */

/* One operand as a stack of matrices: batch dims (right-aligned later),
 * their strides, rows x cols with row stride ld, transposed or not. */
typedef struct mat_view {
    int nb;
    int64_t bd[MINFER_MAX_RANK], bs[MINFER_MAX_RANK];
    int64_t rows, cols, ld;
} mat_view;

static int mat_of(const int64_t *dims, int rank, int is_b, int trans_batch, mat_view *m) {
    int64_t st[MINFER_MAX_RANK];
    memset(m, 0, sizeof *m);
    if (rank == 1) {
        m->rows = is_b ? dims[0] : 1;
        m->cols = is_b ? 1 : dims[0];
        m->ld = m->cols;
        return 0;
    }
    st[rank - 1] = 1;
    for (int i = rank - 2; i >= 0; i--)
        st[i] = st[i + 1] * dims[i + 1];
    if (!trans_batch || rank == 2) {
        m->nb = rank - 2;
        for (int i = 0; i < rank - 2; i++)
            m->bd[i] = dims[i], m->bs[i] = st[i];
        m->rows = dims[rank - 2];
        m->cols = dims[rank - 1];
        m->ld = st[rank - 2];
    } else {
        /* Dimension 0 moves to just before the last: rows are dims[0]. */
        m->nb = rank - 2;
        for (int i = 1; i < rank - 1; i++)
            m->bd[i - 1] = dims[i], m->bs[i - 1] = st[i];
        m->rows = dims[0];
        m->cols = dims[rank - 1];
        m->ld = st[0];
    }
    return 0;
}

/* Output shape of FusedMatMul; -1 where unknown. Returns -1 on mismatch. */
static int matmul_shape(const minfer_node_desc *n, const minfer_host_api *api, const int64_t *ad,
                        int ar, const int64_t *bd, int br, int64_t *out, int *orank,
                        mat_view *ma, mat_view *mb) {
    int ta = minfer_kit_attr_int(api, n, "transA", 0) != 0,
        tb = minfer_kit_attr_int(api, n, "transB", 0) != 0;
    int tba = minfer_kit_attr_int(api, n, "transBatchA", 0) != 0,
        tbb = minfer_kit_attr_int(api, n, "transBatchB", 0) != 0;
    if (ar < 1 || br < 1)
        return -1;
    mat_of(ad, ar, 0, tba, ma);
    mat_of(bd, br, 1, tbb, mb);
    if (ta && ar > 1) {
        int64_t t = ma->rows;
        ma->rows = ma->cols, ma->cols = t;
    }
    if (tb && br > 1) {
        int64_t t = mb->rows;
        mb->rows = mb->cols, mb->cols = t;
    }
    if (ma->cols >= 0 && mb->rows >= 0 && ma->cols != mb->rows)
        return -1;
    int nb = ma->nb > mb->nb ? ma->nb : mb->nb;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - ma->nb), ib = i - (nb - mb->nb);
        int64_t x = ia >= 0 ? ma->bd[ia] : 1, y = ib >= 0 ? mb->bd[ib] : 1;
        if (x >= 0 && y >= 0 && x != y && x != 1 && y != 1)
            return -1;
        out[i] = x == 1 ? y : y == 1 ? x : (x < 0 ? y : x);
    }
    int r = nb;
    if (ar > 1)
        out[r++] = ma->rows;
    if (br > 1)
        out[r++] = mb->cols;
    *orank = r;
    return 0;
}

minfer_status fused_matmul_infer(void *op, infer_args *a) {
    (void)op;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = want_type(a, 0, MINFER_DTYPE_FLOAT)) || (st = want_type(a, 1, MINFER_DTYPE_FLOAT)))
        return st;
    const minfer_value_desc *A = &(*din(n, 0)), *B = &(*din(n, 1));
    if (A->rank < 0 || B->rank < 0) {
        OUTV(a, 0).dtype = MINFER_DTYPE_FLOAT;
        return MINFER_OK;
    }
    int64_t d[MINFER_MAX_RANK];
    int r;
    mat_view ma, mb;
    if (matmul_shape(n, a->api, A->dims, A->rank, B->dims, B->rank, d, &r, &ma, &mb))
        return FAIL(a, MINFER_ERR_SHAPE, "FusedMatMul: A and B do not multiply");
    out_shape(&OUTV(a, 0), MINFER_DTYPE_FLOAT, r, d);
    return MINFER_OK;
}

minfer_status fused_matmul_compute(void *op, void *state, compute_args *a) {
    (void)op, (void)state;
    const minfer_node_desc *n = a->node;
    minfer_status st;
    if ((st = check_in(a, 0, MINFER_DTYPE_FLOAT, 1, MINFER_MAX_RANK)) ||
        (st = check_in(a, 1, MINFER_DTYPE_FLOAT, 1, MINFER_MAX_RANK)))
        return st;
    const minfer_tensor_view *A = &(*vin(a, 0)), *B = &(*vin(a, 1));
    minfer_tensor_view *Y = &OUTV(a, 0);
    int64_t d[MINFER_MAX_RANK];
    int r;
    mat_view ma, mb;
    if (matmul_shape(n, a->api, A->dims, A->rank, B->dims, B->rank, d, &r, &ma, &mb))
        return FAIL(a, MINFER_ERR_SHAPE, "FusedMatMul: A and B do not multiply");
    if (Y->rank != r || memcmp(Y->dims, d, (size_t)r * sizeof(int64_t)))
        return FAIL(a, MINFER_ERR_SHAPE, "FusedMatMul: the output's shape does not match");
    int ta = minfer_kit_attr_int(a->api, n, "transA", 0) != 0 && A->rank > 1;
    int tb = minfer_kit_attr_int(a->api, n, "transB", 0) != 0 && B->rank > 1;
    float alpha = minfer_kit_attr_float(a->api, n, "alpha", 1.0f);
    size_t M = (size_t)ma.rows, K = (size_t)ma.cols, N = (size_t)mb.cols;
    int nb = r - (A->rank > 1) - (B->rank > 1);
    size_t batches = 1;
    for (int i = 0; i < nb; i++)
        batches *= (size_t)d[i];
    const float *ap = A->data, *bp = B->data;
    float *yp = Y->data;
    for (size_t bi = 0; bi < batches; bi++) {
        size_t rem = bi, offa = 0, offb = 0;
        for (int i = nb - 1; i >= 0; i--) {
            size_t idx = rem % (size_t)d[i];
            rem /= (size_t)d[i];
            int ia = i - (nb - ma.nb), ib = i - (nb - mb.nb);
            if (ia >= 0 && ma.bd[ia] != 1)
                offa += idx * (size_t)ma.bs[ia];
            if (ib >= 0 && mb.bd[ib] != 1)
                offb += idx * (size_t)mb.bs[ib];
        }
        sgemm(a, M, N, K, alpha, ap + offa, (size_t)ma.ld, ta, bp + offb,
              (size_t)mb.ld, tb, yp + bi * M * N, N, 0);
    }
    return MINFER_OK;
}
