/* Softmax / LogSoftmax along an axis (len elements at stride inner), and
 * LayerNormalization over the trailing cols of each row: one row per
 * work-item. */
__kernel void softmax(__global const float *x, int xoff, __global float *y, int yoff, int rows,
                      int len, int inner, int is_log) {
    int r = get_global_id(0);
    if (r >= rows)
        return;
    int base = (r / inner) * len * inner + r % inner;
    __global const float *xp = x + xoff + base;
    __global float *yp = y + yoff + base;
    float m = xp[0];
    for (int i = 1; i < len; i++)
        m = fmax(m, xp[i * inner]);
    float sum = 0.0f;
    for (int i = 0; i < len; i++)
        sum += exp(xp[i * inner] - m);
    if (is_log) {
        float ls = log(sum);
        for (int i = 0; i < len; i++)
            yp[i * inner] = xp[i * inner] - m - ls;
    } else {
        float inv = 1.0f / sum;
        for (int i = 0; i < len; i++)
            yp[i * inner] = exp(xp[i * inner] - m) * inv;
    }
}

__kernel void layernorm(__global const float *x, int xoff, __global const float *s, int soff,
                        __global const float *b, int boff, int has_b, __global float *y,
                        int yoff, int rows, int cols, float eps) {
    int r = get_global_id(0);
    if (r >= rows)
        return;
    __global const float *xp = x + xoff + r * cols;
    __global float *yp = y + yoff + r * cols;
    float sum = 0.0f;
    for (int i = 0; i < cols; i++)
        sum += xp[i];
    float mean = sum / (float)cols, var = 0.0f;
    for (int i = 0; i < cols; i++) {
        float d = xp[i] - mean;
        var += d * d;
    }
    float inv = rsqrt(var / (float)cols + eps);
    for (int i = 0; i < cols; i++)
        yp[i] = (xp[i] - mean) * inv * s[soff + i] + (has_b ? b[boff + i] : 0.0f);
}
