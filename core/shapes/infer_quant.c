/*
 * Quantization. The type of each output, from the spec's constraints:
 *  - QuantizeLinear: y has y_zero_point's type; without a zero point, the
 *    output_dtype attribute's (opset 21), else uint8. Both given must agree.
 *  - DequantizeLinear: y has the output_dtype attribute's type, else
 *    x_scale's (float before opset 19).
 *  - DynamicQuantizeLinear: y uint8, y_scale a float scalar, y_zero_point
 *    a uint8 scalar.
 *  - QLinearConv, QLinearMatMul: y_zero_point's type (input 7), the shape
 *    of the Conv or MatMul of X and W (inputs 0 and 3).
 *  - ConvInteger, MatMulInteger: int32, the Conv or MatMul shape.
 */
#include "shapes/infer_rules.h"

minfer_status si_quantize(ictx *c) {
    const minfer_tensor_view *zp = si_input(c, 2);
    int32_t dt;
    minfer_status st = si_dtype_attr(c, "output_dtype", 0, &dt);
    if (st)
        return st;
    if (dt && zp && zp->dtype && zp->dtype != dt)
        return si_fail(c, MINFER_ERR_TYPE, "output_dtype is %s but y_zero_point is %s",
                       si_dtype_name(dt), si_dtype_name(zp->dtype));
    if (!dt)
        dt = zp && zp->dtype ? zp->dtype : MINFER_DTYPE_UINT8;
    return si_shape_of_x(c, dt);
}

minfer_status si_dequantize(ictx *c) {
    const minfer_tensor_view *scale;
    int32_t dt;
    minfer_status st;
    if ((st = si_require(c, 1, &scale)) || (st = si_dtype_attr(c, "output_dtype", 0, &dt)))
        return st;
    if (!dt)
        dt = c->opset >= 19 && scale->dtype ? scale->dtype : MINFER_DTYPE_FLOAT;
    return si_shape_of_x(c, dt);
}

minfer_status si_dynamic_quantize(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st;
    if ((st = si_require(c, 0, &x)))
        return st;
    if (x->dtype && x->dtype != MINFER_DTYPE_FLOAT)
        return si_fail(c, MINFER_ERR_TYPE, "x must be float, not %s", si_dtype_name(x->dtype));
    if ((st = si_set_out(c, 0, MINFER_DTYPE_UINT8, x->rank, x->dims)) ||
        (st = si_set_out(c, 1, MINFER_DTYPE_FLOAT, 0, NULL)))
        return st;
    return si_set_out(c, 2, MINFER_DTYPE_UINT8, 0, NULL);
}

minfer_status si_qlinear(ictx *c) {
    static const size_t conv_in[] = {0, 3, 8}, mm_in[] = {0, 3};
    const minfer_tensor_view *yzp;
    minfer_status st = si_require(c, 7, &yzp);
    if (st)
        return st;
    if (c->op[7] == 'C') /* QLinearConv */
        return si_as_rule(c, si_conv, "Conv", conv_in, 3, yzp->dtype);
    return si_as_rule(c, si_matmul, "MatMul", mm_in, 2, yzp->dtype);
}

minfer_status si_integer(ictx *c) {
    static const size_t conv_in[] = {0, 1}, mm_in[] = {0, 1};
    if (c->op[0] == 'C') /* ConvInteger */
        return si_as_rule(c, si_conv, "Conv", conv_in, 2, MINFER_DTYPE_INT32);
    return si_as_rule(c, si_matmul, "MatMul", mm_in, 2, MINFER_DTYPE_INT32);
}
