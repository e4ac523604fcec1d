/* Unary and binary elementwise ops. Contiguous kernels take VW elements per
 * work-item (vload/vstore need only element alignment, so any arena offset
 * works); the tail of the last work-item goes element by element. */

__kernel void unary(__global const DT *x, int xoff, __global DT *y, int yoff, int n, int op,
                    float a, float b) {
    int i = get_global_id(0) * VW;
    if (i >= n)
        return;
    x += xoff;
    y += yoff;
    if (i + VW <= n) {
        VSTG(actv(VLDG(x + i), op, a, b), y + i);
    } else {
        for (; i < n; i++)
            ST(y, i, act1(LD(x, i), op, a, b));
    }
}

#define BIN_ADD 0
#define BIN_SUB 1
#define BIN_MUL 2
#define BIN_DIV 3
#define BIN_POW 4
#define BIN_MAX 5
#define BIN_MIN 6
#define BIN_PRELU 7

#define BIN_BODY(T)                                                                        \
    switch (op) {                                                                          \
    case BIN_ADD: return a + b;                                                            \
    case BIN_SUB: return a - b;                                                            \
    case BIN_MUL: return a * b;                                                            \
    case BIN_DIV: return a / b;                                                            \
    case BIN_POW: return pow(a, b);                                                        \
    case BIN_MAX: return MAX_NAN(a, b);                                                    \
    case BIN_MIN: return MIN_NAN(a, b);                                                    \
    case BIN_PRELU: return select(a * b, a, a >= (T)0.0f);                                 \
    default: return a;                                                                     \
    }

inline float bin1(float a, float b, int op) { BIN_BODY(float) }
inline VT binv(VT a, VT b, int op) { BIN_BODY(VT) }

/* Same shapes, or b (scalar_b) / a (scalar_a) a single element. */
__kernel void binary_flat(__global const DT *a, int aoff, __global const DT *b, int boff,
                          __global DT *y, int yoff, int n, int op, int scalar_a, int scalar_b) {
    int i = get_global_id(0) * VW;
    if (i >= n)
        return;
    a += aoff;
    b += boff;
    y += yoff;
    if (i + VW <= n) {
        VT va = scalar_a ? (VT)(LD(a, 0)) : VLDG(a + i);
        VT vb = scalar_b ? (VT)(LD(b, 0)) : VLDG(b + i);
        VSTG(binv(va, vb, op), y + i);
    } else {
        for (; i < n; i++)
            ST(y, i, bin1(LD(a, scalar_a ? 0 : i), LD(b, scalar_b ? 0 : i), op));
    }
}

/* Numpy broadcasting: s.d are the output dims, s.sa / s.sb the inputs'
 * strides (0 on a broadcast dimension). Dimension 0 of the grid runs along
 * the innermost output dimension, dimension 1 over the rest. */
__kernel void binary_bcast(__global const DT *a, int aoff, __global const DT *b, int boff,
                           __global DT *y, int yoff, int op, shape8 s) {
    int inner = s.d[s.rank - 1];
    int j = get_global_id(0), r = get_global_id(1);
    if (j >= inner)
        return;
    int ia = aoff, ib = boff, t = r;
    for (int k = s.rank - 2; k >= 0; k--) {
        int q = t % s.d[k];
        t /= s.d[k];
        ia += q * s.sa[k];
        ib += q * s.sb[k];
    }
    ST(y, yoff + r * inner + j,
       bin1(LD(a, ia + j * s.sa[s.rank - 1]), LD(b, ib + j * s.sb[s.rank - 1]), op));
}

/* y = x * scale[c] + shift[c] over planes of length plane (BatchNormalization
 * folded at prepare). Grid: (chunks of a plane, n * C). */
__kernel void channel_affine(__global const DT *x, int xoff, __global const DT *scale,
                             __global const DT *shift, __global DT *y, int yoff, int C,
                             int plane) {
    int i = get_global_id(0) * VW, nc = get_global_id(1);
    if (i >= plane)
        return;
    int c = nc % C;
    float s = LD(scale, c), t = LD(shift, c);
    x += xoff + nc * plane;
    y += yoff + nc * plane;
    if (i + VW <= plane) {
        VSTG(mad(VLDG(x + i), (VT)s, (VT)t), y + i);
    } else {
        for (; i < plane; i++)
            ST(y, i, mad(LD(x, i), s, t));
    }
}

/* minfer:FusedElementwise: a run of element-wise steps per element, read
 * once and written once. Step s: kind 0 act1(v, op), 1 bin1(v, w, op), 2
 * bin1(w, v, op), w from operand src[s] (1-based) read as mode[]: 0 one
 * element, 1 element i, 2 channel (i / inner) % C, 3 last axis i % D.
 * Layout matches ocl_chain8 (elementwise.c). */
#define CHAIN_STEPS 8
typedef struct chain8 {
    int n;
    int op[CHAIN_STEPS], kind[CHAIN_STEPS], src[CHAIN_STEPS];
    int mode[4];
    float a[CHAIN_STEPS], b[CHAIN_STEPS];
    int C, inner, D;
} chain8;

__kernel void elementwise_chain(__global const DT *x, int xoff, __global DT *y, int yoff, int n,
                                chain8 c, __global const DT *w0, int o0, __global const DT *w1,
                                int o1, __global const DT *w2, int o2, __global const DT *w3,
                                int o3) {
    int i = get_global_id(0);
    if (i >= n)
        return;
    float v = LD(x, xoff + i);
    for (int s = 0; s < c.n; s++) {
        if (c.kind[s] == 0) {
            v = act1(v, c.op[s], c.a[s], c.b[s]);
            continue;
        }
        int j = c.src[s] - 1, m = c.mode[j];
        int e = m == 0 ? 0 : m == 1 ? i : m == 2 ? (i / c.inner) % c.C : i % c.D;
        float w = j == 0 ? LD(w0, o0 + e) : j == 1 ? LD(w1, o1 + e)
                                           : j == 2 ? LD(w2, o2 + e) : LD(w3, o3 + e);
        v = c.kind[s] == 1 ? bin1(v, w, c.op[s]) : bin1(w, v, c.op[s]);
    }
    ST(y, yoff + i, v);
}
