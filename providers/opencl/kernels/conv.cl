/* Convolution over 1 to 3 spatial dimensions, NC(D)(H)W, without im2col.
 * g (win3) holds the window; 1-D and 2-D convolutions run with size 1 in
 * the leading dimensions.
 *
 * conv_tile is an implicit GEMM with the micro-kernel of gemm.cl turned
 * around: a work-item owns MR output positions x NR output channels of one
 * (image, group). Per kernel tap (kd, kh, kw) it works out the MR input
 * offsets once (a padded tap gets offset 0 and weight mask 0), then for
 * every input channel loads two VT vectors of weights, packed at prepare
 * as [group][channel tile][kd][kh][kw][c][NR], and broadcasts MR input
 * scalars into 2 * MR vector FMAs. Bias, the residual Z (FusedConv) and
 * the activation are applied at the store. Grid: (position tiles, channel
 * tiles, N * group).
 *
 * Every convolution kernel takes GatedConv's gate S too (has_s): input
 * channel c of image n is read times S[n * sn + c] (sn 0: one gate for
 * the batch), the squeeze-excitation Mul applied as X is loaded; conv_tile
 * scales the channel's weight vectors instead, the same product.
 *
 * conv_direct computes one output per work-item from the weights in ONNX
 * layout: depthwise and narrow grouped convolutions, and weights that are
 * not constant. Grid: (OW, OH, N * M * OD). */
__kernel void conv_tile(__global const DT *x, int xoff, __global const DT *w,
                        __global const DT *bias, int has_bias, __global const DT *z, int zoff,
                        int has_z, __global DT *y, int yoff, int Cg, int Mg, int G, win3 g,
                        int act, float p0, float p1, __global const DT *sg, int soff, int sn,
                        int has_s) {
    int pt = get_global_id(0), mt = get_global_id(1), ng = get_global_id(2);
    int OHW = g.o[1] * g.o[2], P = g.o[0] * OHW, pbase = pt * MR;
    int MT = (Mg + NR - 1) / NR;
    /* A GPU's grid is padded to whole work-groups in dimension 0 (device.c);
     * mt is bounded too, as a launch rule that padded dimension 1 read past
     * the packed weights. */
    if (pbase >= P || mt >= MT)
        return;
    int gi = ng % G, n = ng / G, HW = g.i[1] * g.i[2], DHW = g.i[0] * HW;
    __global const DT *xg = x + xoff + (n * G + gi) * Cg * DHW;
    __global const DT *wp = w + (gi * MT + mt) * g.k[0] * g.k[1] * g.k[2] * Cg * NR;
    __global const DT *sc = sg + soff + n * sn + gi * Cg;
    int id0[MR], ih0[MR], iw0[MR];
    VT c0[MR], c1[MR];
#pragma unroll
    for (int i = 0; i < MR; i++) {
        int p = min(pbase + i, P - 1), r = p % OHW;
        id0[i] = (p / OHW) * g.s[0] - g.p[0];
        ih0[i] = (r / g.o[2]) * g.s[1] - g.p[1];
        iw0[i] = (r % g.o[2]) * g.s[2] - g.p[2];
        c0[i] = (VT)0.0f;
        c1[i] = (VT)0.0f;
    }
    __global const DT *wk = wp;
    for (int kd = 0; kd < g.k[0]; kd++)
        for (int kh = 0; kh < g.k[1]; kh++)
            for (int kw = 0; kw < g.k[2]; kw++) {
                int off[MR];
                float mk[MR];
#pragma unroll
                for (int i = 0; i < MR; i++) {
                    int id = id0[i] + kd * g.d[0], ih = ih0[i] + kh * g.d[1],
                        iw = iw0[i] + kw * g.d[2];
                    int ok = id >= 0 && id < g.i[0] && ih >= 0 && ih < g.i[1] && iw >= 0 &&
                             iw < g.i[2];
                    off[i] = ok ? id * HW + ih * g.i[2] + iw : 0;
                    mk[i] = ok ? 1.0f : 0.0f;
                }
                __global const DT *xc = xg;
                for (int c = 0; c < Cg; c++, wk += NR, xc += DHW) {
                    VT b0 = VLDG(wk), b1 = VLDG(wk + VW);
                    if (has_s) {
                        float gs = LD(sc, c);
                        b0 *= gs;
                        b1 *= gs;
                    }
#pragma unroll
                    for (int i = 0; i < MR; i++) {
                        VT av = (VT)(LD(xc, off[i]) * mk[i]);
                        c0[i] = mad(av, b0, c0[i]);
                        c1[i] = mad(av, b1, c1[i]);
                    }
                }
            }
    int m0 = mt * NR, mm = min(NR, Mg - m0);
    __global DT *yb = y + yoff + (n * G * Mg + gi * Mg + m0) * P;
    __global const DT *zb = z + zoff + (n * G * Mg + gi * Mg + m0) * P;
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
                v += LD(bias, gi * Mg + m0 + j);
            if (has_z)
                v += LD(zb, j * P + p);
            ST(yb, j * P + p, act1(v, act, p0, p1));
        }
    }
}

__kernel void conv_direct(__global const DT *x, int xoff, __global const DT *w, int woff,
                          __global const DT *bias, int boff, int has_bias,
                          __global const DT *z, int zoff, int has_z, __global DT *y, int yoff,
                          int Cg, int Mg, int G, win3 g, int act, float p0, float p1,
                          __global const DT *sg, int soff, int sn, int has_s) {
    int ow = get_global_id(0), oh = get_global_id(1), gz = get_global_id(2);
    if (ow >= g.o[2] || oh >= g.o[1])
        return;
    int od = gz % g.o[0], nm = gz / g.o[0];
    int M = G * Mg, m = nm % M, n = nm / M, gi = m / Mg;
    int HW = g.i[1] * g.i[2], DHW = g.i[0] * HW, KK = g.k[0] * g.k[1] * g.k[2];
    __global const DT *xg = x + xoff + (n * G + gi) * Cg * DHW;
    __global const DT *wm = w + woff + m * Cg * KK;
    __global const DT *sc = sg + soff + n * sn + gi * Cg;
    float acc = has_bias ? LD(bias, boff + m) : 0.0f;
    for (int c = 0; c < Cg; c++) {
        float gs = has_s ? LD(sc, c) : 1.0f;
        for (int kd = 0; kd < g.k[0]; kd++) {
            int id = od * g.s[0] - g.p[0] + kd * g.d[0];
            if (id < 0 || id >= g.i[0])
                continue;
            for (int kh = 0; kh < g.k[1]; kh++) {
                int ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
                if (ih < 0 || ih >= g.i[1])
                    continue;
                int xrow = c * DHW + id * HW + ih * g.i[2];
                int wrow = ((c * g.k[0] + kd) * g.k[1] + kh) * g.k[2];
                for (int kw = 0; kw < g.k[2]; kw++) {
                    int iw = ow * g.s[2] - g.p[2] + kw * g.d[2];
                    if (iw >= 0 && iw < g.i[2])
                        acc = mad(LD(xg, xrow + iw) * gs, LD(wm, wrow + kw), acc);
                }
            }
        }
    }
    int idx = (gz * g.o[1] + oh) * g.o[2] + ow;
    if (has_z)
        acc += LD(z, zoff + idx);
    ST(y, yoff + idx, act1(acc, act, p0, p1));
}

/* The epilogue of a 2-D convolution CLBlast computed into Y (NCHW, P output
 * positions per channel, M channels): bias, the residual Z (same layout as
 * Y) and the activation, which conv_tile applies at its store. Grid:
 * (P, N * M). */
__kernel void conv_epilogue(__global DT *y, int yoff, int P, int M, __global const DT *bias,
                            int has_bias, __global const DT *z, int zoff, int has_z, int act,
                            float p0, float p1) {
    int i = get_global_id(0), nm = get_global_id(1);
    if (i >= P)
        return;
    int yi = nm * P + i;
    float v = LD(y, yoff + yi);
    if (has_bias)
        v += LD(bias, nm % M);
    if (has_z)
        v += LD(z, zoff + yi);
    ST(y, yoff + yi, act1(v, act, p0, p1));
}

/* Work-group implicit GEMMs: the conv_tile call (same arguments, the same
 * packed weights, bias, Z and activation) as a GEMM of the group's Mg
 * output channels by the P output positions over R = KK * Cg products,
 * r = tap * Cg + c (the packed weights' order). A work-group of WX x WY =
 * (TP / RP) x (TM / RM) items owns TM channels x TP positions of one
 * (image, group); per step of TK along R it stages the weights' TM x TK
 * and the input's TK x TP slices in local memory (the input gathered
 * through the window: a padded tap, a channel past Mg or an r past R
 * loads 0), waits at a barrier, and each item accumulates RM channels x
 * RP positions (rows ly + i * WY, columns lx + j * WX). As in gemm.cl's
 * GEMM_LOCAL, no item returns before the last barrier. Grid: (position
 * tiles * WX, channel tiles * WY, N * group), groups of exactly WX x WY x 1
 * (conv.c through gemm.c's local tile table). */
#define CONV_LOCAL(NAME, TM, TP, TK, RM, RP)                                                 \
    __kernel void NAME(__global const DT *x, int xoff, __global const DT *w,                   \
                       __global const DT *bias, int has_bias, __global const DT *z, int zoff,  \
                       int has_z, __global DT *y, int yoff, int Cg, int Mg, int G, win3 g,     \
                       int act, float p0, float p1, __global const DT *sg, int soff, int sn,   \
                       int has_s) {                                                            \
        enum { WX = TP / RP, WY = TM / RM, NT = WX * WY };                                     \
        __local float la[TK][TM], lb[TK][TP];                                                  \
        int lx = get_local_id(0), ly = get_local_id(1), tid = ly * WX + lx;                    \
        int p0_ = get_group_id(0) * TP, m0 = get_group_id(1) * TM, ng = get_global_id(2);     \
        int OHW = g.o[1] * g.o[2], P = g.o[0] * OHW, K12 = g.k[1] * g.k[2];                   \
        int R = g.k[0] * K12 * Cg, MT = (Mg + NR - 1) / NR;                                    \
        int gi = ng % G, n = ng / G, HW = g.i[1] * g.i[2], DHW = g.i[0] * HW;                  \
        __global const DT *xg = x + xoff + (n * G + gi) * Cg * DHW;                           \
        __global const DT *sc = sg + soff + n * sn + gi * Cg;                                  \
        float acc[RM][RP];                                                                     \
        for (int i = 0; i < RM; i++)                                                           \
            for (int j = 0; j < RP; j++)                                                       \
                acc[i][j] = 0.0f;                                                              \
        for (int r0 = 0; r0 < R; r0 += TK) {                                                   \
            for (int e = tid; e < TM * TK; e += NT) {                                          \
                int mi = e / TK, ki = e - mi * TK, m = m0 + mi, r = r0 + ki;                   \
                la[ki][mi] = m < Mg && r < R                                                   \
                                 ? LD(w, ((gi * MT + m / NR) * R + r) * NR + m % NR)           \
                                 : 0.0f;                                                       \
            }                                                                                  \
            for (int e = tid; e < TK * TP; e += NT) {                                          \
                int ki = e / TP, pi = e - ki * TP, p = p0_ + pi, r = r0 + ki;                  \
                float v = 0.0f;                                                                \
                if (p < P && r < R) {                                                          \
                    int t = r / Cg, c = r - t * Cg, kd = t / K12, t2 = t - kd * K12;           \
                    int kh = t2 / g.k[2], kw = t2 - kh * g.k[2];                               \
                    int od = p / OHW, q = p - od * OHW, oh = q / g.o[2], ow = q - oh * g.o[2]; \
                    int id = od * g.s[0] - g.p[0] + kd * g.d[0];                               \
                    int ih = oh * g.s[1] - g.p[1] + kh * g.d[1];                               \
                    int iw = ow * g.s[2] - g.p[2] + kw * g.d[2];                               \
                    if (id >= 0 && id < g.i[0] && ih >= 0 && ih < g.i[1] && iw >= 0 &&         \
                        iw < g.i[2])                                                           \
                        v = LD(xg, c * DHW + id * HW + ih * g.i[2] + iw) *                     \
                            (has_s ? LD(sc, c) : 1.0f);                                        \
                }                                                                              \
                lb[ki][pi] = v;                                                                \
            }                                                                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                                      \
            for (int kk = 0; kk < TK; kk++) {                                                  \
                float a[RM], b[RP];                                                            \
                for (int i = 0; i < RM; i++)                                                   \
                    a[i] = la[kk][ly + i * WY];                                                \
                for (int j = 0; j < RP; j++)                                                   \
                    b[j] = lb[kk][lx + j * WX];                                                \
                for (int i = 0; i < RM; i++)                                                   \
                    for (int j = 0; j < RP; j++)                                               \
                        acc[i][j] = mad(a[i], b[j], acc[i][j]);                                \
            }                                                                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        }                                                                                      \
        for (int i = 0; i < RM; i++) {                                                         \
            int m = m0 + ly + i * WY;                                                          \
            if (m >= Mg)                                                                       \
                break;                                                                         \
            int yc = (n * G + gi) * Mg + m;                                                    \
            float bv = has_bias ? LD(bias, gi * Mg + m) : 0.0f;                                \
            for (int j = 0; j < RP; j++) {                                                     \
                int p = p0_ + lx + j * WX;                                                     \
                if (p < P) {                                                                   \
                    float v = acc[i][j] + bv;                                                  \
                    if (has_z)                                                                 \
                        v += LD(z, zoff + yc * P + p);                                         \
                    ST(y, yoff + yc * P + p, act1(v, act, p0, p1));                            \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }

/* The variants, as gemm.cl's: 32 x 32 and 64 x 64 tiles of 8 x 8 items. */
CONV_LOCAL(conv_local1, 32, 32, 16, 4, 4)
CONV_LOCAL(conv_local2, 64, 64, 8, 8, 8)
