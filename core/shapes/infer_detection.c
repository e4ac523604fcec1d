/*
 * Det (in the CPU provider's detection.c), NonMaxSuppression, RoiAlign.
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

/* NonMaxSuppression: int64 [selected, 3], the count data-dependent. */
minfer_status si_nms(ictx *c) {
    const minfer_tensor_view *boxes, *scores;
    int64_t d[2] = {-1, 3};
    minfer_status st;
    if ((st = si_require(c, 0, &boxes)) || (st = si_require(c, 1, &scores)) ||
        (st = si_same_type(c, boxes, "boxes", scores, "scores")))
        return st;
    return si_set_out(c, 0, MINFER_DTYPE_INT64, 2, d);
}

/* RoiAlign: X [N, C, H, W], rois [R, 4] (X's type), batch_indices [R]
 * int64 -> [R, C, output_height, output_width] in X's type. */
minfer_status si_roialign(ictx *c) {
    const minfer_tensor_view *x, *rois, *bi;
    int64_t d[4];
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &rois)) ||
        (st = si_require(c, 2, &bi)) || (st = si_same_type(c, x, "X", rois, "rois")))
        return st;
    if (bi->dtype && bi->dtype != MINFER_DTYPE_INT64)
        return si_fail(c, MINFER_ERR_TYPE, "batch_indices must be int64, not %s",
                       si_dtype_name(bi->dtype));
    if (x->rank >= 0 && x->rank != 4)
        return si_fail(c, MINFER_ERR_SHAPE, "X must be 4-D, not rank %d", (int)x->rank);
    d[0] = rois->rank == 2 ? rois->dims[0] : bi->rank == 1 ? bi->dims[0] : -1;
    d[1] = x->rank == 4 ? x->dims[1] : -1;
    d[2] = mf_attr_int(c->node, "output_height", 1);
    d[3] = mf_attr_int(c->node, "output_width", 1);
    if (d[2] < 1 || d[3] < 1)
        return si_fail(c, MINFER_ERR_MODEL, "output_height and output_width must be positive");
    return si_set_out(c, 0, x->dtype, 4, d);
}
