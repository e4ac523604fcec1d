/*
 * Signal: MelWeightMatrix, the window functions, DFT, STFT.
 */
#include "shapes/infer_rules.h"

#include <string.h>

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] when both are known. */
minfer_status si_melweight(ictx *c) {
    int fl[2] = {0}, known[2];
    double f[2];
    int64_t n[2] = {0}, d[2] = {-1, -1};
    minfer_status st;
    for (size_t i = 0; i < 2; i++)
        if ((st = si_read_scalar(c, i, &fl[i], &f[i], &n[i], &known[i])))
            return st;
    if (known[0] && !fl[0]) {
        if (n[0] <= 0)
            return si_fail(c, MINFER_ERR_MODEL, "num_mel_bins must be positive");
        d[1] = n[0];
    }
    if (known[1] && !fl[1]) {
        if (n[1] <= 0)
            return si_fail(c, MINFER_ERR_MODEL, "dft_length must be positive");
        d[0] = n[1] / 2 + 1;
    }
    int32_t dt;
    if ((st = si_dtype_attr(c, "output_datatype", MINFER_DTYPE_FLOAT, &dt)))
        return st;
    return si_set_out(c, 0, dt, 2, d);
}

/* HannWindow, HammingWindow, BlackmanWindow: [size] in output_datatype
 * (float by default). */
minfer_status si_window_fn(ictx *c) {
    int fl = 0, known = 0;
    double f = 0;
    int64_t n = 0, len = -1;
    int32_t dt;
    minfer_status st;
    if ((st = si_read_scalar(c, 0, &fl, &f, &n, &known)) ||
        (st = si_dtype_attr(c, "output_datatype", MINFER_DTYPE_FLOAT, &dt)))
        return st;
    if (known && !fl) {
        if (n < 0)
            return si_fail(c, MINFER_ERR_MODEL, "size %lld is negative", (long long)n);
        len = n;
    }
    return si_set_out(c, 0, dt, 1, &len);
}

/* DFT: the input's type and rank, the last axis (real or complex) made
 * complex (2); the transformed axis' length depends on dft_length and
 * onesided, left to the run. STFT: [batch, frames, bins, 2] in the
 * signal's type. */
minfer_status si_dft(ictx *c) {
    const minfer_tensor_view *x;
    int64_t d[MINFER_MAX_RANK];
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (!strcmp(c->op, "STFT")) {
        d[0] = x->rank >= 1 ? x->dims[0] : -1;
        d[1] = d[2] = -1;
        d[3] = 2;
        return si_set_out(c, 0, x->dtype, 4, d);
    }
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    if (x->rank < 2)
        return si_fail(c, MINFER_ERR_SHAPE, "input must have rank >= 2, not %d", (int)x->rank);
    for (int32_t i = 0; i < x->rank - 1; i++)
        d[i] = x->dims[i];
    d[x->rank - 1] = 2;
    /* The transformed axis: the attribute before opset 20, an input after. */
    int64_t axis = 1;
    int axis_known = 1;
    if (c->opset >= 20) {
        int_list al;
        if ((st = si_read_ints(c, 2, "axis", &al)))
            return st;
        axis = al.state == LIST_KNOWN && al.n == 1 ? al.v[0] : -2;
        axis_known = al.state != LIST_UNKNOWN;
    } else {
        axis = mf_attr_int(c->node, "axis", 1);
    }
    if (!axis_known) {
        for (int32_t i = 1; i < x->rank - 1; i++)
            d[i] = -1;
    } else {
        if (axis < 0)
            axis += x->rank;
        if (axis < 0 || axis >= x->rank - 1)
            return si_fail(c, MINFER_ERR_MODEL, "axis %lld is out of range for rank %d",
                           (long long)axis, (int)x->rank);
        d[axis] = -1;
    }
    return si_set_out(c, 0, x->dtype, x->rank, d);
}
