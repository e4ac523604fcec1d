/*
 * Det.
 */
#include "shapes/infer_rules.h"

minfer_status si_det(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (x->rank < 0)
        return si_set_out(c, 0, x->dtype, -1, NULL);
    if (x->rank < 2)
        return si_fail(c, MINFER_ERR_SHAPE, "input must have rank >= 2");
    return si_set_out(c, 0, x->dtype, x->rank - 2, x->dims);
}
