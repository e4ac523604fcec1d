/*
 * Signal processing: the window generators (HannWindow, HammingWindow,
 * BlackmanWindow), DFT, STFT and MelWeightMatrix (opset 17). Transforms
 * are the naive O(n^2) sums in double, which is what a reference should be.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct signal_state {
    int32_t out_dtype;
    int periodic, onesided, inverse;
    int64_t axis;
} signal_state;

minfer_status cpu_prepare_signal(cpu_prep *p) {
    signal_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->out_dtype = (int32_t)cpu_attr_int(p, "output_datatype", MINFER_DTYPE_FLOAT);
    if (!cpu_is_float(st->out_dtype) && !(CPU_T(st->out_dtype) & CPU_T_INTS))
        return cpu_decline(p, "output_datatype %s not supported", minfer_elem_name(st->out_dtype));
    st->periodic = (int)cpu_attr_int(p, "periodic", 1);
    st->onesided = (int)cpu_attr_int(p, "onesided", strcmp(p->node->op_type, "STFT") == 0);
    st->inverse = (int)cpu_attr_int(p, "inverse", 0);
    st->axis = cpu_attr_int(p, "axis", 1);
    return MINFER_OK;
}

minfer_status cpu_compute_window(const cpu_exec *e) {
    const signal_state *st = e->state;
    const minfer_tensor_view *sz = cpu_input(e, 0);
    const char *op = e->args->node->op_type;
    int64_t n[1];
    size_t cnt;
    if (!sz)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing size");
    minfer_status s = cpu_read_ints(e, sz, "size", n, 1, &cnt);
    if (s)
        return s;
    if (cnt != 1 || n[0] < 0 || n[0] > (int64_t)1 << 32)
        return cpu_fail(e, MINFER_ERR_SHAPE, "size must be a non-negative scalar");
    void *y;
    if ((s = cpu_output(e, 0, st->out_dtype, 1, n, &y)) != MINFER_OK)
        return s;
    double N = (double)(st->periodic ? n[0] : n[0] - 1);
    for (int64_t i = 0; i < n[0]; i++) {
        double x = 2 * M_PI * (double)i / N, v;
        if (strcmp(op, "HannWindow") == 0)
            v = 0.5 - 0.5 * cos(x);
        else if (strcmp(op, "HammingWindow") == 0)
            v = 25.0 / 46.0 - (1 - 25.0 / 46.0) * cos(x);
        else
            v = 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x);
        cpu_set(y, st->out_dtype, (size_t)i, v);
    }
    return MINFER_OK;
}

/* One DFT of n input points (re, im at stride 'stride' complex elements,
 * missing points are zero) into bins outputs (re, im interleaved). */
static void dft1(const double *re, const double *im, size_t avail, size_t n, int inverse,
                 size_t bins, double *out) {
    for (size_t k = 0; k < bins; k++) {
        double sr = 0, si = 0;
        for (size_t t = 0; t < n && t < avail; t++) {
            double ang = (inverse ? 2 : -2) * M_PI * (double)((k * t) % n) / (double)n;
            sr += re[t] * cos(ang) - im[t] * sin(ang);
            si += re[t] * sin(ang) + im[t] * cos(ang);
        }
        out[2 * k] = inverse ? sr / (double)n : sr;
        out[2 * k + 1] = inverse ? si / (double)n : si;
    }
}

minfer_status cpu_compute_dft(const cpu_exec *e) {
    const signal_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *lv = cpu_input(e, 1);
    minfer_status s;
    if (!x || x->rank < 3 || (x->dims[x->rank - 1] != 1 && x->dims[x->rank - 1] != 2) ||
        !cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "input must be float [batch, ..., 1 or 2]");
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 1 || axis >= x->rank - 1)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis must be a signal dimension");
    int64_t len = x->dims[axis];
    if (lv) {
        int64_t v[1];
        size_t cnt;
        if ((s = cpu_read_ints(e, lv, "dft_length", v, 1, &cnt)) != MINFER_OK)
            return s;
        if (cnt != 1 || v[0] < 1)
            return cpu_fail(e, MINFER_ERR_SHAPE, "dft_length must be positive");
        len = v[0];
    }
    int64_t bins = st->onesided ? len / 2 + 1 : len;
    int64_t od[CPU_MAX_RANK];
    memcpy(od, x->dims, (size_t)x->rank * sizeof *od);
    od[axis] = bins;
    od[x->rank - 1] = 2;
    void *y;
    if ((s = cpu_output(e, 0, x->dtype, x->rank, od, &y)) != MINFER_OK)
        return s;
    size_t comp = (size_t)x->dims[x->rank - 1], in_len = (size_t)x->dims[axis];
    size_t outer = (size_t)minfer_kit_numel(axis, x->dims);
    size_t inner = (size_t)minfer_kit_numel(x->rank - axis - 2, x->dims + axis + 1);
    double *buf = cpu_malloc(e->ctx, (2 * in_len + 2 * (size_t)bins + 1) * sizeof *buf);
    if (!buf)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    double *re = buf, *im = buf + in_len, *out = im + in_len;
    const void *xd = cpu_data(x);
    for (size_t o = 0; o < outer; o++)
        for (size_t in = 0; in < inner; in++) {
            for (size_t t = 0; t < in_len; t++) {
                size_t at = ((o * in_len + t) * inner + in) * comp;
                re[t] = cpu_get(xd, x->dtype, at);
                im[t] = comp == 2 ? cpu_get(xd, x->dtype, at + 1) : 0;
            }
            dft1(re, im, in_len, (size_t)len, st->inverse, (size_t)bins, out);
            for (size_t k = 0; k < (size_t)bins; k++) {
                size_t at = ((o * (size_t)bins + k) * inner + in) * 2;
                cpu_set(y, x->dtype, at, out[2 * k]);
                cpu_set(y, x->dtype, at + 1, out[2 * k + 1]);
            }
        }
    free(buf);
    return MINFER_OK;
}

minfer_status cpu_compute_stft(const cpu_exec *e) {
    const signal_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *sv = cpu_input(e, 1), *wv = cpu_input(e, 2),
                             *fv = cpu_input(e, 3);
    int64_t step, flen;
    size_t cnt;
    minfer_status s;
    if (!x || !sv || x->rank != 3 || (x->dims[2] != 1 && x->dims[2] != 2) || !cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "signal must be float [batch, length, 1 or 2]");
    if ((s = cpu_read_ints(e, sv, "frame_step", &step, 1, &cnt)) != MINFER_OK)
        return s;
    if (wv && (wv->rank != 1 || !cpu_is_float(wv->dtype)))
        return cpu_fail(e, MINFER_ERR_SHAPE, "window must be 1-D float");
    if (fv) {
        if ((s = cpu_read_ints(e, fv, "frame_length", &flen, 1, &cnt)) != MINFER_OK)
            return s;
    } else if (wv) {
        flen = wv->dims[0];
    } else {
        return cpu_fail(e, MINFER_ERR_MODEL, "needs a window or frame_length");
    }
    if (step < 1 || flen < 1 || flen > x->dims[1] || (wv && wv->dims[0] != flen))
        return cpu_fail(e, MINFER_ERR_SHAPE, "bad frame_step, frame_length or window");
    int64_t frames = (x->dims[1] - flen) / step + 1, bins = st->onesided ? flen / 2 + 1 : flen;
    int64_t od[4] = {x->dims[0], frames, bins, 2};
    void *y;
    if ((s = cpu_output(e, 0, x->dtype, 4, od, &y)) != MINFER_OK)
        return s;
    size_t comp = (size_t)x->dims[2], L = (size_t)x->dims[1];
    double *buf = cpu_malloc(e->ctx, (2 * (size_t)flen + 2 * (size_t)bins) * sizeof *buf);
    if (!buf)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    double *re = buf, *im = buf + flen, *out = im + flen;
    const void *xd = cpu_data(x);
    for (int64_t b = 0; b < x->dims[0]; b++)
        for (int64_t f = 0; f < frames; f++) {
            for (int64_t t = 0; t < flen; t++) {
                size_t at = ((size_t)b * L + (size_t)(f * step + t)) * comp;
                double w = wv ? cpu_get(cpu_data(wv), wv->dtype, (size_t)t) : 1;
                re[t] = w * cpu_get(xd, x->dtype, at);
                im[t] = comp == 2 ? w * cpu_get(xd, x->dtype, at + 1) : 0;
            }
            dft1(re, im, (size_t)flen, (size_t)flen, 0, (size_t)bins, out);
            for (int64_t k = 0; k < bins; k++) {
                size_t at = (size_t)(((b * frames + f) * bins + k) * 2);
                cpu_set(y, x->dtype, at, out[2 * k]);
                cpu_set(y, x->dtype, at + 1, out[2 * k + 1]);
            }
        }
    free(buf);
    return MINFER_OK;
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangles with peak
 * 1.0. The spec gives only the mel formula; the band edges follow the ONNX
 * reference (and ONNX Runtime): num_mel_bins + 2 points spaced evenly in
 * mel, with the step (high - low) / (num_mel_bins + 2), mapped to bins as
 * floor((dft_length + 1) * hz / sample_rate). */
minfer_status cpu_compute_melweight(const cpu_exec *e) {
    const signal_state *st = e->state;
    int64_t v[3];
    double lo_hz, hi_hz;
    size_t cnt;
    const char *const names[3] = {"num_mel_bins", "dft_length", "sample_rate"};
    minfer_status s;
    for (size_t i = 0; i < 3; i++) {
        const minfer_tensor_view *t = cpu_input(e, i);
        if (!t)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "missing %s", names[i]);
        if ((s = cpu_read_ints(e, t, names[i], &v[i], 1, &cnt)) != MINFER_OK)
            return s;
        if (cnt != 1 || v[i] <= 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "%s must be a positive scalar", names[i]);
    }
    const minfer_tensor_view *lo = cpu_input(e, 3), *hi = cpu_input(e, 4);
    if (!lo || !hi)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing lower_edge_hertz or upper_edge_hertz");
    if ((s = cpu_read_scalar(e, lo, "lower_edge_hertz", &lo_hz)) != MINFER_OK ||
        (s = cpu_read_scalar(e, hi, "upper_edge_hertz", &hi_hz)) != MINFER_OK)
        return s;
    int64_t mels = v[0], dft = v[1], rate = v[2], spec = dft / 2 + 1;
    if (mels > ((int64_t)1 << 20) || dft > ((int64_t)1 << 30))
        return cpu_fail(e, MINFER_ERR_LIMIT, "num_mel_bins or dft_length too large");
    if (!(lo_hz >= 0) || !(hi_hz >= lo_hz))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "needs 0 <= lower_edge_hertz <= upper_edge_hertz");
    int64_t od[2] = {spec, mels};
    void *y;
    if ((s = cpu_output(e, 0, st->out_dtype, 2, od, &y)) != MINFER_OK)
        return s;
    int64_t *bin = cpu_malloc(e->ctx, (size_t)(mels + 2) * sizeof *bin);
    if (!bin)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    double lo_mel = 2595 * log10(1 + lo_hz / 700), hi_mel = 2595 * log10(1 + hi_hz / 700);
    double step = (hi_mel - lo_mel) / (double)(mels + 2);
    for (int64_t i = 0; i < mels + 2; i++) {
        double hz = 700 * (pow(10, ((double)i * step + lo_mel) / 2595) - 1);
        bin[i] = (int64_t)floor((double)(dft + 1) * hz / (double)rate);
    }
    for (int64_t i = 0; i < spec * mels; i++)
        cpu_set(y, st->out_dtype, (size_t)i, 0);
    for (int64_t m = 0; m < mels; m++) {
        int64_t l = bin[m], c = bin[m + 1], r = bin[m + 2];
        /* A triangle reaching past the last spectrogram bin is cut there. */
        if (c - l == 0) {
            if (c >= 0 && c < spec)
                cpu_set(y, st->out_dtype, (size_t)(c * mels + m), 1);
        } else {
            for (int64_t j = l; j <= c; j++)
                if (j >= 0 && j < spec)
                    cpu_set(y, st->out_dtype, (size_t)(j * mels + m),
                            (double)(j - l) / (double)(c - l));
        }
        for (int64_t j = c; j < r; j++)
            if (j >= 0 && j < spec)
                cpu_set(y, st->out_dtype, (size_t)(j * mels + m),
                        (double)(r - j) / (double)(r - c));
    }
    free(bin);
    return MINFER_OK;
}
