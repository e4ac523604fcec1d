/* 2-D convolution (1-D runs with H = 1), NCHW, without im2col.
 *
 * conv_tile is an implicit GEMM with the micro-kernel of gemm.cl turned
 * around: a work-item owns MR output positions x NR output channels of one
 * (image, group). Per (kh, kw) it works out the MR input offsets once (a
 * padded tap gets offset 0 and weight mask 0), then for every input channel
 * loads two VT vectors of weights, packed at prepare as
 * [group][channel tile][kh][kw][c][NR], and broadcasts MR input scalars
 * into 2 * MR vector FMAs. Bias, the residual Z (FusedConv) and the
 * activation are applied at the store. Grid: (position tiles, channel
 * tiles, N * group).
 *
 * conv_direct computes one output per work-item from the weights in ONNX
 * layout: depthwise and narrow grouped convolutions, and weights that are
 * not constant. Grid: (OW, OH, N * M). */
__kernel void conv_tile(__global const float *x, int xoff, __global const float *w,
                        __global const float *bias, int has_bias, __global const float *z,
                        int zoff, int has_z, __global float *y, int yoff, int Cg, int H, int W,
                        int Mg, int G, int OH, int OW, int KH, int KW, int sh, int sw, int ph,
                        int pw, int dh, int dw, int act, float p0, float p1) {
    int pt = get_global_id(0), mt = get_global_id(1), ng = get_global_id(2);
    int P = OH * OW, pbase = pt * MR;
    if (pbase >= P)
        return;
    int g = ng % G, n = ng / G, HW = H * W;
    int MT = (Mg + NR - 1) / NR;
    __global const float *xg = x + xoff + (n * G + g) * Cg * HW;
    __global const float *wp = w + (g * MT + mt) * KH * KW * Cg * NR;
    int ih0[MR], iw0[MR];
    VT c0[MR], c1[MR];
#pragma unroll
    for (int i = 0; i < MR; i++) {
        int p = min(pbase + i, P - 1);
        ih0[i] = (p / OW) * sh - ph;
        iw0[i] = (p % OW) * sw - pw;
        c0[i] = (VT)0.0f;
        c1[i] = (VT)0.0f;
    }
    for (int kh = 0; kh < KH; kh++)
        for (int kw = 0; kw < KW; kw++) {
            int off[MR];
            float mk[MR];
#pragma unroll
            for (int i = 0; i < MR; i++) {
                int ih = ih0[i] + kh * dh, iw = iw0[i] + kw * dw;
                int ok = ih >= 0 && ih < H && iw >= 0 && iw < W;
                off[i] = ok ? ih * W + iw : 0;
                mk[i] = ok ? 1.0f : 0.0f;
            }
            __global const float *wk = wp + (kh * KW + kw) * Cg * NR;
            __global const float *xc = xg;
            for (int c = 0; c < Cg; c++, wk += NR, xc += HW) {
                VT b0 = VLOAD(0, wk), b1 = VLOAD(0, wk + VW);
#pragma unroll
                for (int i = 0; i < MR; i++) {
                    VT av = (VT)(xc[off[i]] * mk[i]);
                    c0[i] = mad(av, b0, c0[i]);
                    c1[i] = mad(av, b1, c1[i]);
                }
            }
        }
    int m0 = mt * NR, mm = min(NR, Mg - m0);
    __global float *yb = y + yoff + (n * G * Mg + g * Mg + m0) * P;
    __global const float *zb = z + zoff + (n * G * Mg + g * Mg + m0) * P;
#pragma unroll
    for (int i = 0; i < MR; i++) {
        int p = pbase + i;
        if (p >= P)
            break;
        float t[NR];
        VSTORE(c0[i], 0, t);
        VSTORE(c1[i], 0, t + VW);
        for (int j = 0; j < mm; j++) {
            float v = t[j];
            if (has_bias)
                v += bias[g * Mg + m0 + j];
            if (has_z)
                v += zb[j * P + p];
            yb[j * P + p] = act1(v, act, p0, p1);
        }
    }
}

__kernel void conv_direct(__global const float *x, int xoff, __global const float *w, int woff,
                          __global const float *bias, int boff, int has_bias,
                          __global const float *z, int zoff, int has_z, __global float *y,
                          int yoff, int Cg, int H, int W, int Mg, int G, int OH, int OW, int KH,
                          int KW, int sh, int sw, int ph, int pw, int dh, int dw, int act,
                          float p0, float p1) {
    int ow = get_global_id(0), oh = get_global_id(1), nm = get_global_id(2);
    if (ow >= OW || oh >= OH)
        return;
    int M = G * Mg, m = nm % M, n = nm / M, g = m / Mg, HW = H * W;
    __global const float *xg = x + xoff + (n * G + g) * Cg * HW;
    __global const float *wm = w + woff + m * Cg * KH * KW;
    float acc = has_bias ? bias[boff + m] : 0.0f;
    for (int c = 0; c < Cg; c++)
        for (int kh = 0; kh < KH; kh++) {
            int ih = oh * sh - ph + kh * dh;
            if (ih < 0 || ih >= H)
                continue;
            for (int kw = 0; kw < KW; kw++) {
                int iw = ow * sw - pw + kw * dw;
                if (iw >= 0 && iw < W)
                    acc = mad(xg[c * HW + ih * W + iw], wm[(c * KH + kh) * KW + kw], acc);
            }
        }
    int idx = nm * OH * OW + oh * OW + ow;
    if (has_z)
        acc += z[zoff + idx];
    y[yoff + idx] = act1(acc, act, p0, p1);
}
