/*
 * Quantization: QuantizeLinear, DequantizeLinear.
 */
#include "shapes/infer_rules.h"

minfer_status si_quantize(ictx *c) {
    const minfer_tensor_view *zp = si_input(c, 2);
    return si_shape_of_x(c, zp && zp->dtype ? zp->dtype : MINFER_DTYPE_UINT8);
}

minfer_status si_dequantize(ictx *c) {
    const minfer_tensor_view *scale;
    minfer_status st = si_require(c, 1, &scale);
    return st ? st : si_shape_of_x(c, scale->dtype ? scale->dtype : MINFER_DTYPE_FLOAT);
}
