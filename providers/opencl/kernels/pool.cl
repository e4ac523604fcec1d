/* MaxPool / AveragePool over 1 to 3 spatial dimensions (g: see win3; a
 * 1-D or 2-D window has size 1 in the leading ones): one output per
 * work-item, grid (OW, OH, N * C * OD). Cells outside the input are
 * skipped; AveragePool with count_include_pad also counts those inside the
 * explicit pads ([-p, e) in every dimension). Global pools: one plane per
 * work-item, VW lanes at a time. */
__kernel void pool(__global const DT *x, int xoff, __global DT *y, int yoff, win3 g, int is_max,
                   int cip) {
    int ow = get_global_id(0), oh = get_global_id(1), z = get_global_id(2);
    if (ow >= g.o[2] || oh >= g.o[1])
        return;
    int od = z % g.o[0], nc = z / g.o[0];
    int HW = g.i[1] * g.i[2];
    __global const DT *xp = x + xoff + nc * g.i[0] * HW;
    float acc = is_max ? -INFINITY : 0.0f;
    int cnt = 0, padded = 0;
    for (int kd = 0; kd < g.k[0]; kd++) {
        int id = od * g.s[0] - g.p[0] + kd * g.d[0];
        int din = id >= 0 && id < g.i[0], dpad = id >= -g.p[0] && id < g.e[0];
        for (int kh = 0; kh < g.k[1]; kh++) {
            int ih = oh * g.s[1] - g.p[1] + kh * g.d[1];
            int hin = ih >= 0 && ih < g.i[1], hpad = ih >= -g.p[1] && ih < g.e[1];
            for (int kw = 0; kw < g.k[2]; kw++) {
                int iw = ow * g.s[2] - g.p[2] + kw * g.d[2];
                if (din && hin && iw >= 0 && iw < g.i[2]) {
                    float v = LD(xp, id * HW + ih * g.i[2] + iw);
                    if (!is_max)
                        acc += v;
                    else if (v > acc || isnan(v))
                        acc = v;
                    cnt++;
                } else if (dpad && hpad && iw >= -g.p[2] && iw < g.e[2]) {
                    padded++;
                }
            }
        }
    }
    if (!is_max) {
        int div = cip ? cnt + padded : cnt;
        acc = div ? acc / (float)div : 0.0f;
    } else if (cnt == 0) {
        acc = 0.0f;
    }
    ST(y, yoff + (z * g.o[1] + oh) * g.o[2] + ow, acc);
}

__kernel void global_pool(__global const DT *x, int xoff, __global DT *y, int yoff, int plane,
                          int is_max, int nnc) {
    int nc = get_global_id(0);
    if (nc >= nnc)
        return;
    __global const DT *xp = x + xoff + nc * plane;
    VT acc = is_max ? (VT)(-INFINITY) : (VT)0.0f;
    int i = 0;
    for (; i + VW <= plane; i += VW) {
        VT v = VLDG(xp + i);
        acc = is_max ? MAX_NAN(acc, v) : acc + v;
    }
    float t[VW];
    VSTORE(acc, 0, t);
    float r = t[0];
    for (int j = 1; j < VW; j++)
        r = is_max ? MAX_NAN(r, t[j]) : r + t[j];
    for (; i < plane; i++)
        r = is_max ? MAX_NAN(r, LD(xp, i)) : r + LD(xp, i);
    ST(y, yoff + nc, is_max ? r : r / (float)plane);
}
