/* Data movement and reductions. */

/* y (dims s.d, contiguous) from x read at strides s.sa: Transpose (permuted
 * strides) and broadcasting copies. Grid: (innermost dim, the rest). */
__kernel void strided_copy(__global const float *x, int xoff, __global float *y, int yoff,
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

/* Gather along an axis of 4-byte elements: y[o, j, i] = x[o, idx[j], i].
 * Indices are int32 or int64 (is64), negative ones count from the end; an
 * index out of range gives 0 (the host cannot be told from here). Grid:
 * (inner, nidx, outer). */
__kernel void gather(__global const uint *x, int xoff, __global const int *idx, int ioff,
                     int is64, __global uint *y, int yoff, int nidx, int axis_dim, int inner) {
    int i = get_global_id(0), j = get_global_id(1), o = get_global_id(2);
    if (i >= inner || j >= nidx)
        return;
    long q = is64 ? ((__global const long *)idx)[ioff + j] : (long)idx[ioff + j];
    if (q < 0)
        q += axis_dim;
    int out = yoff + (o * nidx + j) * inner + i;
    y[out] = q >= 0 && q < axis_dim ? x[xoff + (o * axis_dim + (int)q) * inner + i] : 0u;
}

/* ReduceSum (op 0), ReduceMean (1), ReduceMax (2). Output element e is
 * decomposed over kept.d (input strides kept.sa); the rcount reduced
 * elements over red.d / red.sa. A single contiguous reduced axis takes a
 * vector path. */
__kernel void reduce(__global const float *x, int xoff, __global float *y, int yoff, int nout,
                     int op, shape8 kept, shape8 red, int rcount) {
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
        __global const float *xp = x + base;
        VT acc = is_max ? (VT)(-INFINITY) : (VT)0.0f;
        int i = 0;
        for (; i + VW <= rcount; i += VW) {
            VT v = VLOAD(0, xp + i);
            acc = is_max ? fmax(acc, v) : acc + v;
        }
        float tv[VW];
        VSTORE(acc, 0, tv);
        r = tv[0];
        for (int k = 1; k < VW; k++)
            r = is_max ? fmax(r, tv[k]) : r + tv[k];
        for (; i < rcount; i++)
            r = is_max ? fmax(r, xp[i]) : r + xp[i];
    } else {
        r = is_max ? -INFINITY : 0.0f;
        for (int q = 0; q < rcount; q++) {
            int off = base, u = q;
            for (int k = red.rank - 1; k >= 0; k--) {
                off += (u % red.d[k]) * red.sa[k];
                u /= red.d[k];
            }
            r = is_max ? fmax(r, x[off]) : r + x[off];
        }
    }
    y[yoff + e] = op == 1 ? r / (float)rcount : r;
}

/* One Concat input: outer rows of row elements into rows of row_out,
 * starting at yoff. Grid: (row, outer). */
__kernel void concat_copy(__global const uint *x, int xoff, __global uint *y, int yoff, int row,
                          int row_out) {
    int i = get_global_id(0), o = get_global_id(1);
    if (i >= row)
        return;
    y[yoff + o * row_out + i] = x[xoff + o * row + i];
}
