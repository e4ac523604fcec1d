/* MaxPool / AveragePool (2-D; 1-D runs with H = 1): one output per
 * work-item, grid (OW, OH, N * C). Cells outside the input are skipped;
 * AveragePool with count_include_pad counts those inside the explicit pads
 * ([-ph, Hend) x [-pw, Wend)). Global pools: one plane per work-item,
 * VW lanes at a time. */
__kernel void pool2d(__global const float *x, int xoff, __global float *y, int yoff, int H,
                     int W, int OH, int OW, int KH, int KW, int sh, int sw, int ph, int pw,
                     int dh, int dw, int Hend, int Wend, int is_max, int cip) {
    int ow = get_global_id(0), oh = get_global_id(1), nc = get_global_id(2);
    if (ow >= OW || oh >= OH)
        return;
    __global const float *xp = x + xoff + nc * H * W;
    float acc = is_max ? -INFINITY : 0.0f;
    int cnt = 0, padded = 0;
    for (int kh = 0; kh < KH; kh++) {
        int ih = oh * sh - ph + kh * dh;
        for (int kw = 0; kw < KW; kw++) {
            int iw = ow * sw - pw + kw * dw;
            if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
                float v = xp[ih * W + iw];
                if (!is_max)
                    acc += v;
                else if (v > acc || isnan(v))
                    acc = v;
                cnt++;
            } else if (ih >= -ph && ih < Hend && iw >= -pw && iw < Wend) {
                padded++;
            }
        }
    }
    if (!is_max) {
        int div = cip ? cnt + padded : cnt;
        acc = div ? acc / (float)div : 0.0f;
    } else if (cnt == 0) {
        acc = 0.0f;
    }
    y[yoff + nc * OH * OW + oh * OW + ow] = acc;
}

__kernel void global_pool(__global const float *x, int xoff, __global float *y, int yoff,
                          int plane, int is_max) {
    int nc = get_global_id(0);
    __global const float *xp = x + xoff + nc * plane;
    VT acc = is_max ? (VT)(-INFINITY) : (VT)0.0f;
    int i = 0;
    for (; i + VW <= plane; i += VW) {
        VT v = VLOAD(0, xp + i);
        acc = is_max ? fmax(acc, v) : acc + v;
    }
    float t[VW];
    VSTORE(acc, 0, t);
    float r = t[0];
    for (int j = 1; j < VW; j++)
        r = is_max ? fmax(r, t[j]) : r + t[j];
    for (; i < plane; i++)
        r = is_max ? fmax(r, xp[i]) : r + xp[i];
    y[yoff + nc] = is_max ? r : r / (float)plane;
}
