/* Data movement and reductions. */

/* Byte moves as kernels, for the option kernel_copies=1 (provider.c): n
 * bytes from s + soff to d + doff, and n bytes at d + doff filled with the
 * little-endian bytes of a pattern of psize (1 to 4) bytes. One byte per
 * work-item: these serve checking, not speed. */
__kernel void copy_bytes(__global const uchar *s, int soff, __global uchar *d, int doff, int n) {
    int i = get_global_id(0);
    if (i < n)
        d[doff + i] = s[soff + i];
}

__kernel void fill_bytes(__global uchar *d, int doff, int n, uint pattern, int psize) {
    int i = get_global_id(0);
    if (i < n)
        d[doff + i] = (uchar)(pattern >> (8 * (i % psize)));
}

/* y (dims s.d, contiguous) from x read at strides s.sa: Transpose (permuted
 * strides) and broadcasting copies of float tensors, moved as raw BITS.
 * Grid: (innermost dim, the rest). */
__kernel void strided_copy(__global const BITS *x, int xoff, __global BITS *y, int yoff,
                           shape8 s) {
    int inner = s.d[s.rank - 1];
    int j = get_global_id(0), r = get_global_id(1);
    if (j >= inner)
        return;
    int ix = xoff, t = r;
    for (int k = s.rank - 2; k >= 0; k--) {
        ix += (t % s.d[k]) * s.sa[k];
        t /= s.d[k];
    }
    y[yoff + r * inner + j] = x[ix + j * s.sa[s.rank - 1]];
}

/* Gather along an axis of elements of type T: y[o, j, i] = x[o, idx[j], i].
 * Indices are int32 or int64 (is64), negative ones count from the end. An
 * index out of range writes 0 and, when check is set, lowers err[eoff]
 * (filled with INT_MAX before the launch) to its position j with an
 * atomic_min, so the host reads back the first bad position and fails the
 * run. Grid: (inner, nidx, outer). */
#define GATHER(name, T)                                                                    \
    __kernel void name(__global const T *x, int xoff, __global const int *idx, int ioff,    \
                       int is64, __global T *y, int yoff, int nidx, int axis_dim, int inner, \
                       __global int *err, int eoff, int check) {                           \
        int i = get_global_id(0), j = get_global_id(1), o = get_global_id(2);               \
        if (i >= inner || j >= nidx)                                                        \
            return;                                                                         \
        long q = is64 ? ((__global const long *)idx)[ioff + j] : (long)idx[ioff + j];       \
        if (q < 0)                                                                          \
            q += axis_dim;                                                                  \
        int out = yoff + (o * nidx + j) * inner + i;                                        \
        if (q >= 0 && q < axis_dim) {                                                       \
            y[out] = x[xoff + (o * axis_dim + (int)q) * inner + i];                         \
        } else {                                                                            \
            y[out] = 0;                                                                     \
            if (check && i == 0 && o == 0)                                                  \
                atomic_min(err + eoff, j);                                                  \
        }                                                                                   \
    }

GATHER(gather, uint)
GATHER(gather16, ushort)

/* ReduceSum (op 0), ReduceMean (1), ReduceMax (2). Output element e is
 * decomposed over kept.d (input strides kept.sa); the rcount reduced
 * elements over red.d / red.sa. A single contiguous reduced axis takes a
 * vector path. */
__kernel void reduce(__global const DT *x, int xoff, __global DT *y, int yoff, int nout, int op,
                     shape8 kept, shape8 red, int rcount) {
    int e = get_global_id(0);
    if (e >= nout)
        return;
    int base = xoff, t = e;
    for (int k = kept.rank - 1; k >= 0; k--) {
        base += (t % kept.d[k]) * kept.sa[k];
        t /= kept.d[k];
    }
    int is_max = op == 2;
    float r;
    if (red.rank == 1 && red.sa[0] == 1) {
        __global const DT *xp = x + base;
        VT acc = is_max ? (VT)(-INFINITY) : (VT)0.0f;
        int i = 0;
        for (; i + VW <= rcount; i += VW) {
            VT v = VLDG(xp + i);
            acc = is_max ? MAX_NAN(acc, v) : acc + v;
        }
        float tv[VW];
        VSTORE(acc, 0, tv);
        r = tv[0];
        for (int k = 1; k < VW; k++)
            r = is_max ? MAX_NAN(r, tv[k]) : r + tv[k];
        for (; i < rcount; i++)
            r = is_max ? MAX_NAN(r, LD(xp, i)) : r + LD(xp, i);
    } else {
        r = is_max ? -INFINITY : 0.0f;
        for (int q = 0; q < rcount; q++) {
            int off = base, u = q;
            for (int k = red.rank - 1; k >= 0; k--) {
                off += (u % red.d[k]) * red.sa[k];
                u /= red.d[k];
            }
            r = is_max ? MAX_NAN(r, LD(x, off)) : r + LD(x, off);
        }
    }
    ST(y, yoff + e, op == 1 ? r / (float)rcount : r);
}

/* A whole Concat of up to CONCAT_MAX inputs in one launch when they share
 * one buffer (the arena), or one input per launch (n = 1) when they do not: input j's rows of row[j] elements start at
 * off[j] of x and go to column col[j] of y's rows of row_out. Grid:
 * (the longest row, outer, inputs); an item past its input's row does
 * nothing, so neighbouring items copy neighbouring elements of one input,
 * as the per-input kernel does. */
#define CONCAT_MAX 32
typedef struct concat8 {
    int n;
    int off[CONCAT_MAX], row[CONCAT_MAX], col[CONCAT_MAX];
} concat8;

#define CONCAT_ALL(name, T)                                                                \
    __kernel void name(__global const T *x, concat8 c, __global T *y, int yoff,             \
                       int row_out) {                                                      \
        int i = get_global_id(0), o = get_global_id(1), j = get_global_id(2);              \
        if (j >= c.n || i >= c.row[j])                                                     \
            return;                                                                        \
        y[yoff + o * row_out + c.col[j] + i] = x[c.off[j] + o * c.row[j] + i];             \
    }

CONCAT_ALL(concat_all, uint)
CONCAT_ALL(concat_all16, ushort)

/* minfer:FusedConcat: concat_all over axis 1 of float tensors, each element
 * of channel c then act(x * scale[c] + shift[c]); inner is the length of a
 * channel's plane (row_out = C * inner). */
__kernel void concat_affine(__global const DT *x, concat8 c, __global const DT *scale,
                            __global const DT *shift, __global DT *y, int yoff, int row_out,
                            int inner, int act, float a, float b) {
    int i = get_global_id(0), o = get_global_id(1), j = get_global_id(2);
    if (j >= c.n || i >= c.row[j])
        return;
    int col = c.col[j] + i, ch = col / inner;
    float v = mad(LD(x, c.off[j] + o * c.row[j] + i), LD(scale, ch), LD(shift, ch));
    ST(y, yoff + o * row_out + col, act1(v, act, a, b));
}
