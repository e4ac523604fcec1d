/*
 * Signal: MelWeightMatrix.
 */
#include "shapes/infer_rules.h"

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
    return si_set_out(c, 0, (int32_t)mf_attr_int(c->node, "output_datatype", MINFER_DTYPE_FLOAT), 2,
                   d);
}
