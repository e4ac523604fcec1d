/* Softmax / LogSoftmax along an axis (len elements at stride inner), and
 * LayerNormalization over the trailing cols of each row: one row per
 * work-item. */
__kernel void softmax(__global const DT *x, int xoff, __global DT *y, int yoff, int rows,
                      int len, int inner, int is_log) {
    int r = get_global_id(0);
    if (r >= rows)
        return;
    int base = (r / inner) * len * inner + r % inner;
    __global const DT *xp = x + xoff + base;
    __global DT *yp = y + yoff + base;
    float m = LD(xp, 0);
    for (int i = 1; i < len; i++)
        m = fmax(m, LD(xp, i * inner));
    float sum = 0.0f;
    for (int i = 0; i < len; i++)
        sum += exp(LD(xp, i * inner) - m);
    if (is_log) {
        float ls = log(sum);
        for (int i = 0; i < len; i++)
            ST(yp, i * inner, LD(xp, i * inner) - m - ls);
    } else {
        float inv = 1.0f / sum;
        for (int i = 0; i < len; i++)
            ST(yp, i * inner, exp(LD(xp, i * inner) - m) * inv);
    }
}

__kernel void layernorm(__global const DT *x, int xoff, __global const DT *s, int soff,
                        __global const DT *b, int boff, int has_b, __global DT *y, int yoff,
                        int rows, int cols, float eps) {
    int r = get_global_id(0);
    if (r >= rows)
        return;
    __global const DT *xp = x + xoff + r * cols;
    __global DT *yp = y + yoff + r * cols;
    float sum = 0.0f;
    for (int i = 0; i < cols; i++)
        sum += LD(xp, i);
    float mean = sum / (float)cols, var = 0.0f;
    for (int i = 0; i < cols; i++) {
        float d = LD(xp, i) - mean;
        var += d * d;
    }
    float inv = rsqrt(var / (float)cols + eps);
    for (int i = 0; i < cols; i++)
        ST(yp, i, (LD(xp, i) - mean) * inv * LD(s, soff + i) + (has_b ? LD(b, boff + i) : 0.0f));
}
