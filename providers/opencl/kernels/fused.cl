/* The optimizer's transformer ops (docs/fused-ops.md): minfer::RMSNormalization,
 * minfer::Attention and minfer::RotaryEmbedding (providers/opencl/fused.c). */

/* RMSNormalization over the trailing cols of each row, one row per
 * work-item: Y = X / sqrt(mean(X^2) + eps) * Scale, Scale of cols elements
 * (or one, scale_1). */
__kernel void rmsnorm(__global const DT *x, int xoff, __global const DT *s, int soff,
                      int scale_1, __global DT *y, int yoff, int rows, int cols, float eps) {
    int r = get_global_id(0);
    if (r >= rows)
        return;
    __global const DT *xp = x + xoff + r * cols;
    __global DT *yp = y + yoff + r * cols;
    float ss = 0.0f;
    for (int i = 0; i < cols; i++) {
        float v = LD(xp, i);
        ss += v * v;
    }
    float inv = rsqrt(ss / (float)cols + eps);
    for (int i = 0; i < cols; i++)
        ST(yp, i, LD(xp, i) * inv * LD(s, soff + (scale_1 ? 0 : i)));
}

/* The leading (batch) axes of an attention, broadcast as MatMul does: their
 * sizes, and each input's element stride along them (0 where it
 * broadcasts). Layout matches ocl_attn_lead in fused.c. */
typedef struct attn_lead {
    int rank;
    int d[8];
    int q[8], k[8], v[8], m[8];
} attn_lead;

/* Offsets of batch b (row-major over the leading axes) in Q, KT, V, mask. */
inline void attn_offsets(const attn_lead *l, int b, int *qo, int *ko, int *vo, int *mo) {
    int rem = b;
    *qo = *ko = *vo = *mo = 0;
    for (int d = l->rank - 1; d >= 0; d--) {
        int i = rem % l->d[d];
        rem /= l->d[d];
        *qo += i * l->q[d];
        *ko += i * l->k[d];
        *vo += i * l->v[d];
        *mo += i * l->m[d];
    }
}

/* Attention, step 1: the scores of query i against key j in batch b,
 * (Q KT) * scale + mask, into the float workspace w [nb, sq, sk]. Grid
 * (sk, sq, nb): neighbouring items read neighbouring columns of KT. */
__kernel void attn_scores(__global const DT *q, int qoff, __global const DT *kt, int koff,
                          __global const DT *m, int moff, int has_mask, int mrow, int mcol,
                          attn_lead lead, __global float *w, int woff, int sq, int sk, int dd,
                          int nb, float scale) {
    int j = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    if (j >= sk || i >= sq || b >= nb)
        return;
    int qo, ko, vo, mo;
    attn_offsets(&lead, b, &qo, &ko, &vo, &mo);
    __global const DT *qp = q + qoff + qo + i * dd;
    __global const DT *kp = kt + koff + ko + j;
    float acc = 0.0f;
    for (int c = 0; c < dd; c++)
        acc += LD(qp, c) * LD(kp, c * sk);
    acc *= scale;
    if (has_mask)
        acc += LD(m, moff + mo + i * mrow + j * mcol);
    w[woff + (b * sq + i) * sk + j] = acc;
}

/* Step 2: softmax of each row of the workspace, in place (one row per
 * work-item). */
__kernel void attn_softmax(__global float *w, int woff, int rows, int sk) {
    int r = get_global_id(0);
    if (r >= rows)
        return;
    __global float *p = w + woff + r * sk;
    float mx = -INFINITY;
    for (int j = 0; j < sk; j++)
        mx = p[j] > mx ? p[j] : mx;
    float sum = 0.0f;
    for (int j = 0; j < sk; j++) {
        float e = exp(p[j] - mx);
        p[j] = e;
        sum += e;
    }
    float inv = 1.0f / sum;
    for (int j = 0; j < sk; j++)
        p[j] *= inv;
}

/* Step 3: Y [nb, sq, dv] = P V. Grid (dv, sq, nb): neighbouring items read
 * neighbouring columns of V. */
__kernel void attn_pv(__global const float *w, int woff, __global const DT *v, int voff,
                      attn_lead lead, __global DT *y, int yoff, int sq, int sk, int dv, int nb) {
    int c = get_global_id(0), i = get_global_id(1), b = get_global_id(2);
    if (c >= dv || i >= sq || b >= nb)
        return;
    int qo, ko, vo, mo;
    attn_offsets(&lead, b, &qo, &ko, &vo, &mo);
    __global const float *pp = w + woff + (b * sq + i) * sk;
    __global const DT *vp = v + voff + vo + c;
    float acc = 0.0f;
    for (int j = 0; j < sk; j++)
        acc += pp[j] * LD(vp, j * dv);
    ST(y, yoff + (b * sq + i) * dv + c, acc);
}

/* RotaryEmbedding in the rotate-half form, one element per work-item (grid
 * d, rows): Y = X * Cos + Concat(-x2, x1) * Sin over X's last axis of d,
 * as the CPU provider computes it. Cos and Sin broadcast to X: l.sa and
 * l.sb are their strides over X's leading axes l.d (0 where they
 * broadcast), ccol and scol over the last axis (0 or 1). */
__kernel void rotary(__global const DT *x, int xoff, __global const DT *c, int coff,
                     __global const DT *s, int soff, shape8 l, int ccol, int scol,
                     __global DT *y, int yoff, int rows, int d) {
    int i = get_global_id(0), r = get_global_id(1);
    if (i >= d || r >= rows)
        return;
    int rem = r, co = coff, so = soff;
    for (int k = l.rank - 1; k >= 0; k--) {
        int idx = rem % l.d[k];
        rem /= l.d[k];
        co += idx * l.sa[k];
        so += idx * l.sb[k];
    }
    int h = d / 2;
    __global const DT *xp = x + xoff + r * d;
    float a = LD(xp, i) * LD(c, co + i * ccol);
    float m = (i < h ? -LD(xp, i + h) : LD(xp, i - h)) * LD(s, so + i * scol);
    ST(y, yoff + r * d + i, a + m);
}
