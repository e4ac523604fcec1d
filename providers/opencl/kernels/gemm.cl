/* Register-blocked GEMM: Y[M x N] = act(alpha * A * B + beta * C), batched
 * over grid dimension 2.
 *
 * A work-item owns an MR x NR tile (NR = 2 * VW columns): per k it loads two
 * VT vectors of B and broadcasts MR scalars of A into 2 * MR vector FMAs,
 * the 6x32 micro-kernel shape that reached 29 GFLOPS on PoCL (NOTES.md).
 * A is read through strides (a transposed A costs nothing); B is either
 * packed at prepare into panels [N/NR][K][NR] (constant weights, zero
 * padded), or read row-major with a per-lane path for edges and strides.
 * C broadcasts through its strides (0 on a broadcast dimension). Rows past
 * M are computed from row M-1 and not stored.
 *
 * The tile's rows are gemm_tile's rows argument: MR for gemm, 1 for
 * gemm_m1, the kernel of a single-row Y (a GEMV: a classifier at batch 1, a
 * decoder step), which would otherwise compute MR - 1 copies of its row. */
inline void gemm_tile(const int rows, int M, int N, int K, __global const DT *A, int aoff,
                      int rsa, int csa, int bsa, __global const DT *B, int boff, int rsb,
                      int csb, int bsb, int bpacked, __global const DT *C, int coff, int rsc,
                      int csc, int has_c, float alpha, float beta, __global DT *Y, int yoff,
                      int ldy, int bsy, int act, float p0, float p1) {
    int nt = get_global_id(0), mt = get_global_id(1), z = get_global_id(2);
    int n0 = nt * NR, m0 = mt * rows;
    if (n0 >= N || m0 >= M)
        return;
    A += aoff + z * bsa;
    B += boff + z * bsb;
    Y += yoff + z * bsy;
    int ra[MR];
    VT c0[MR], c1[MR];
#pragma unroll
    for (int i = 0; i < rows; i++) {
        ra[i] = min(m0 + i, M - 1) * rsa;
        c0[i] = (VT)0.0f;
        c1[i] = (VT)0.0f;
    }
    if (bpacked) {
        __global const DT *bp = B + nt * K * NR;
        for (int k = 0; k < K; k++, bp += NR) {
            VT b0 = VLDG(bp), b1 = VLDG(bp + VW);
#pragma unroll
            for (int i = 0; i < rows; i++) {
                VT av = (VT)(LD(A, ra[i] + k * csa));
                c0[i] = mad(av, b0, c0[i]);
                c1[i] = mad(av, b1, c1[i]);
            }
        }
    } else if (csb == 1 && n0 + NR <= N) {
        __global const DT *bp = B + n0;
        for (int k = 0; k < K; k++, bp += rsb) {
            VT b0 = VLDG(bp), b1 = VLDG(bp + VW);
#pragma unroll
            for (int i = 0; i < rows; i++) {
                VT av = (VT)(LD(A, ra[i] + k * csa));
                c0[i] = mad(av, b0, c0[i]);
                c1[i] = mad(av, b1, c1[i]);
            }
        }
    } else {
        float t[NR];
        for (int k = 0; k < K; k++) {
            for (int j = 0; j < NR; j++)
                t[j] = n0 + j < N ? LD(B, k * rsb + (n0 + j) * csb) : 0.0f;
            VT b0 = VLOAD(0, t), b1 = VLOAD(0, t + VW);
#pragma unroll
            for (int i = 0; i < rows; i++) {
                VT av = (VT)(LD(A, ra[i] + k * csa));
                c0[i] = mad(av, b0, c0[i]);
                c1[i] = mad(av, b1, c1[i]);
            }
        }
    }
    int nn = min(NR, N - n0);
#pragma unroll
    for (int i = 0; i < rows; i++) {
        if (m0 + i >= M)
            break;
        float t[NR];
        VSTORE(c0[i] * alpha, 0, t);
        VSTORE(c1[i] * alpha, 0, t + VW);
        if (has_c)
            for (int j = 0; j < nn; j++)
                t[j] += beta * LD(C, coff + (m0 + i) * rsc + (n0 + j) * csc);
        __global DT *yr = Y + (m0 + i) * ldy + n0;
        if (nn == NR) {
            VSTG(actv(VLOAD(0, t), act, p0, p1), yr);
            VSTG(actv(VLOAD(0, t + VW), act, p0, p1), yr + VW);
        } else {
            for (int j = 0; j < nn; j++)
                ST(yr, j, act1(t[j], act, p0, p1));
        }
    }
}

#define GEMM_OWN(NAME, ROWS)                                                                 \
    __kernel void NAME(int M, int N, int K, __global const DT *A, int aoff, int rsa, int csa,  \
                       int bsa, __global const DT *B, int boff, int rsb, int csb, int bsb,     \
                       int bpacked, __global const DT *C, int coff, int rsc, int csc,          \
                       int has_c, float alpha, float beta, __global DT *Y, int yoff, int ldy,  \
                       int bsy, int act, float p0, float p1) {                                 \
        gemm_tile(ROWS, M, N, K, A, aoff, rsa, csa, bsa, B, boff, rsb, csb, bsb, bpacked, C,   \
                  coff, rsc, csc, has_c, alpha, beta, Y, yoff, ldy, bsy, act, p0, p1);         \
    }
GEMM_OWN(gemm, MR)
GEMM_OWN(gemm_m1, 1)

/* The epilogue of a GEMM another library computed into Y (CLBlast, with
 * alpha applied and beta 0): Y = act(Y + beta * C), C broadcast through
 * its strides, batched over grid dimension 1 (bsy apart; C is shared). One
 * work-item per element, so any M x N and any device. */
__kernel void gemm_epilogue(int M, int N, __global DT *Y, int yoff, int ldy, int bsy,
                            __global const DT *C, int coff, int rsc, int csc, int has_c,
                            float beta, int act, float p0, float p1) {
    int i = get_global_id(0), z = get_global_id(1);
    if (i >= M * N)
        return;
    int m = i / N, n = i - m * N;
    int yi = yoff + z * bsy + m * ldy + n;
    float v = LD(Y, yi);
    if (has_c)
        v += beta * LD(C, coff + m * rsc + n * csc);
    ST(Y, yi, act1(v, act, p0, p1));
}

/* Work-group GEMMs: the same call as gemm (arguments, B packed or strided,
 * C, alpha, beta, activation), computed by a work-group of WX x WY =
 * (TN / RN) x (TM / RM) items that owns a TM x TN tile of Y. Per step of
 * TK along K the group stages A's TM x TK and B's TK x TN slices in local
 * memory (every item loads a share, zeros past M, N and K), waits at a
 * barrier, and each item accumulates an RM x RN register tile from them:
 * rows ly + i * WY and columns lx + j * WX, so neighbouring items read
 * neighbouring local words. No item returns early (every one reaches
 * every barrier); an item off the edge computes on zeros and stores
 * nothing. The host launches exactly WX x WY x 1 groups (gemm.c
 * local_tiles[] repeats these sizes) and only where the kernel's
 * CL_KERNEL_WORK_GROUP_SIZE and the device's local memory allow. */
#define GEMM_LOCAL(NAME, TM, TN, TK, RM, RN)                                                 \
    __kernel void NAME(int M, int N, int K, __global const DT *A, int aoff, int rsa, int csa,  \
                       int bsa, __global const DT *B, int boff, int rsb, int csb, int bsb,     \
                       int bpacked, __global const DT *C, int coff, int rsc, int csc,          \
                       int has_c, float alpha, float beta, __global DT *Y, int yoff, int ldy,  \
                       int bsy, int act, float p0, float p1) {                                 \
        enum { WX = TN / RN, WY = TM / RM, NT = WX * WY };                                     \
        __local float la[TK][TM], lb[TK][TN];                                                  \
        int lx = get_local_id(0), ly = get_local_id(1), tid = ly * WX + lx;                    \
        int n0 = get_group_id(0) * TN, m0 = get_group_id(1) * TM, z = get_global_id(2);       \
        A += aoff + z * bsa;                                                                   \
        B += boff + z * bsb;                                                                   \
        Y += yoff + z * bsy;                                                                   \
        float acc[RM][RN];                                                                     \
        for (int i = 0; i < RM; i++)                                                           \
            for (int j = 0; j < RN; j++)                                                       \
                acc[i][j] = 0.0f;                                                              \
        for (int k0 = 0; k0 < K; k0 += TK) {                                                   \
            for (int e = tid; e < TM * TK; e += NT) {                                          \
                int mi = e / TK, ki = e - mi * TK, m = m0 + mi, k = k0 + ki;                   \
                la[ki][mi] = m < M && k < K ? LD(A, m * rsa + k * csa) : 0.0f;                 \
            }                                                                                  \
            for (int e = tid; e < TK * TN; e += NT) {                                          \
                int ki = e / TN, ni = e - ki * TN, n = n0 + ni, k = k0 + ki;                   \
                float v = 0.0f;                                                                \
                if (n < N && k < K)                                                            \
                    v = bpacked ? LD(B, ((n / NR) * K + k) * NR + n % NR)                      \
                                : LD(B, k * rsb + n * csb);                                    \
                lb[ki][ni] = v;                                                                \
            }                                                                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                                      \
            for (int kk = 0; kk < TK; kk++) {                                                  \
                float a[RM], b[RN];                                                            \
                for (int i = 0; i < RM; i++)                                                   \
                    a[i] = la[kk][ly + i * WY];                                                \
                for (int j = 0; j < RN; j++)                                                   \
                    b[j] = lb[kk][lx + j * WX];                                                \
                for (int i = 0; i < RM; i++)                                                   \
                    for (int j = 0; j < RN; j++)                                               \
                        acc[i][j] = mad(a[i], b[j], acc[i][j]);                                \
            }                                                                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                                      \
        }                                                                                      \
        for (int i = 0; i < RM; i++) {                                                         \
            int m = m0 + ly + i * WY;                                                          \
            for (int j = 0; j < RN; j++) {                                                     \
                int n = n0 + lx + j * WX;                                                      \
                if (m < M && n < N) {                                                          \
                    float v = acc[i][j] * alpha;                                               \
                    if (has_c)                                                                 \
                        v += beta * LD(C, coff + m * rsc + n * csc);                           \
                    ST(Y, m * ldy + n, act1(v, act, p0, p1));                                  \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }

/* The variants (gemm.c local_tiles[] has the same numbers): 32 x 32 tiles
 * of 8 x 8 items holding 4 x 4 each, and 64 x 64 tiles of 8 x 8 items
 * holding 8 x 8 (more reuse per local read, more registers). */
GEMM_LOCAL(gemm_local1, 32, 32, 16, 4, 4)
GEMM_LOCAL(gemm_local2, 64, 64, 8, 8, 8)
