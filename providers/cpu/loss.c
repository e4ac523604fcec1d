/*
 * Loss functions: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Both reduce to one computation: with input scores viewed as [N, C, D]
 * (D the product of the trailing dims) and target as [N, D],
 *   loss[n, d] = -w[t] * input[n, t, d]     (t = target[n, d]; 0 if t == ignore_index)
 * with w[t] the class weight (1 without weights, 0 for ignored targets),
 * then "none" keeps the [N, d1...] shape, "sum" adds everything and "mean"
 * divides that sum by the sum of the weights used. SoftmaxCrossEntropyLoss
 * applies log-softmax over C first (and can return it). The arithmetic is
 * in double whatever the element type, as the reference computes it in at
 * least float.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

enum { RED_NONE, RED_SUM, RED_MEAN };

typedef struct loss_state {
    int softmax; /* SoftmaxCrossEntropyLoss */
    int reduction;
    int has_ignore;
    int64_t ignore_index;
} loss_state;

minfer_status cpu_prepare_loss(cpu_prep *p) {
    const char *red = cpu_attr_str(p, "reduction", "mean");
    if (!minfer_kit_input(p->node, 0) || !minfer_kit_input(p->node, 1))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs scores and target inputs");
    const minfer_value_desc *t = minfer_kit_input(p->node, 1);
    if (t->dtype && t->dtype != MINFER_DTYPE_INT32 && t->dtype != MINFER_DTYPE_INT64)
        return cpu_decline(p, "target must be int32 or int64");
    loss_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->softmax = strcmp(p->node->op_type, "SoftmaxCrossEntropyLoss") == 0;
    if (strcmp(red, "none") == 0)
        st->reduction = RED_NONE;
    else if (strcmp(red, "sum") == 0)
        st->reduction = RED_SUM;
    else if (strcmp(red, "mean") == 0)
        st->reduction = RED_MEAN;
    else
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown reduction '%s'", red);
    st->has_ignore = cpu_has_attr(p, "ignore_index");
    st->ignore_index = cpu_attr_int(p, "ignore_index", 0);
    return MINFER_OK;
}

minfer_status cpu_compute_loss(const cpu_exec *e) {
    const loss_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *t = cpu_input(e, 1), *w = cpu_input(e, 2);
    minfer_status s = MINFER_OK;
    double *logp = NULL;
    if (!x || !t)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (!cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "scores must be a float type");
    if (t->dtype != MINFER_DTYPE_INT32 && t->dtype != MINFER_DTYPE_INT64)
        return cpu_fail(e, MINFER_ERR_TYPE, "target must be int32 or int64");
    if (x->rank < 2 || t->rank != x->rank - 1 || t->dims[0] != x->dims[0])
        return cpu_fail(e, MINFER_ERR_SHAPE, "scores must be [N, C, d...] and target [N, d...]");
    for (int32_t d = 2; d < x->rank; d++)
        if (t->dims[d - 1] != x->dims[d])
            return cpu_fail(e, MINFER_ERR_SHAPE, "target dims do not match the scores'");
    size_t N = (size_t)x->dims[0], C = (size_t)x->dims[1];
    size_t D = (size_t)minfer_kit_numel(x->rank - 2, x->dims + 2);
    if (w && (w->rank != 1 || (size_t)w->dims[0] != C || w->dtype != x->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "weights must be [C] of the scores' type");
    const void *xd = cpu_data(x), *td = cpu_data(t), *wd = w ? cpu_data(w) : NULL;

    /* Log-probabilities (SoftmaxCrossEntropyLoss) or the scores themselves. */
    size_t total = N * C * D;
    logp = cpu_malloc(e->ctx, (total ? total : 1) * sizeof *logp);
    if (!logp)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < total; i++)
        logp[i] = cpu_get(xd, x->dtype, i);
    if (st->softmax)
        for (size_t n = 0; n < N; n++)
            for (size_t d = 0; d < D; d++) {
                double *row = logp + n * C * D + d, mx = -INFINITY, sum = 0;
                for (size_t c = 0; c < C; c++)
                    mx = fmax(mx, row[c * D]);
                for (size_t c = 0; c < C; c++)
                    sum += exp(row[c * D] - mx);
                for (size_t c = 0; c < C; c++)
                    row[c * D] = row[c * D] - mx - log(sum);
            }

    void *out;
    int64_t odims[CPU_MAX_RANK];
    int32_t orank = st->reduction == RED_NONE ? t->rank : 0;
    memcpy(odims, t->dims, (size_t)t->rank * sizeof *odims);
    if ((s = cpu_output(e, 0, x->dtype, orank, odims, &out)) != MINFER_OK)
        goto done;
    double sum = 0, wsum = 0;
    for (size_t n = 0; n < N; n++)
        for (size_t d = 0; d < D; d++) {
            int64_t k = cpu_get_index(td, t->dtype, n * D + d);
            double l = 0, wt = 0;
            if (!(st->has_ignore && k == st->ignore_index)) {
                if (k < 0 || (size_t)k >= C) {
                    s = cpu_fail(e, MINFER_ERR_RUNTIME, "target %lld out of range [0, %zu)",
                                 (long long)k, C);
                    goto done;
                }
                wt = wd ? cpu_get(wd, w->dtype, (size_t)k) : 1.0;
                l = -wt * logp[(n * C + (size_t)k) * D + d];
            }
            if (st->reduction == RED_NONE)
                cpu_set(out, x->dtype, n * D + d, l);
            sum += l;
            wsum += wt;
        }
    if (st->reduction == RED_SUM)
        cpu_set(out, x->dtype, 0, sum);
    else if (st->reduction == RED_MEAN)
        cpu_set(out, x->dtype, 0, sum / wsum);
    if (st->softmax && minfer_kit_output_wanted(e->args->node, 1)) {
        void *lp;
        if ((s = cpu_output(e, 1, x->dtype, x->rank, x->dims, &lp)) != MINFER_OK)
            goto done;
        for (size_t i = 0; i < total; i++)
            cpu_set(lp, x->dtype, i, logp[i]);
    }
done:
    free(logp);
    return s;
}
