/*
 * Losses: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
 */
#include "shapes/infer_rules.h"

#include <string.h>

/* NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss: [N, d...] for
 * reduction "none", else a scalar; SCE's log_prob has the scores' shape. */
minfer_status si_loss(ictx *c) {
    const minfer_tensor_view *x, *t;
    int none = !strcmp(mf_attr_string(c->node, "reduction", "mean"), "none");
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &t)))
        return st;
    if ((st = none ? si_set_out(c, 0, x->dtype, t->rank, t->dims) : si_set_out(c, 0, x->dtype, 0, NULL)))
        return st;
    return si_set_out(c, 1, x->dtype, x->rank, x->dims);
}
