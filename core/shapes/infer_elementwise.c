/*
 * Elementwise ops: unary, binary with broadcasting (and the comparisons
 * and logic ops that give bool), the variadic ones, Where, Clip, PRelu.
 *
 * Types: the output has the inputs' one type T, except the comparisons and
 * And/Or/Xor (bool), IsInf/IsNaN (bool), Pow (the base's type; the exponent
 * may differ from opset 12) and Where (X's and Y's; the condition is bool).
 */
#include "shapes/infer_rules.h"

#include <string.h>

minfer_status si_unary(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    return st ? st : si_same_as(c, 0, x);
}

minfer_status si_unary_bool(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    return st ? st : si_set_out(c, 0, MINFER_DTYPE_BOOL, x->rank, x->dims);
}

minfer_status si_not(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (x->dtype && x->dtype != MINFER_DTYPE_BOOL)
        return si_fail(c, MINFER_ERR_TYPE, "input must be bool, not %s", si_dtype_name(x->dtype));
    return si_same_as(c, 0, x);
}

/* Add, Sub, Mul, Div, Pow, Mod, the comparisons and And/Or/Xor. */
minfer_status si_binary(ictx *c) {
    const minfer_tensor_view *a, *b;
    int64_t d[MINFER_MAX_RANK];
    int32_t r, dt;
    minfer_status st;
    int to_bool = !strcmp(c->op, "Equal") || !strcmp(c->op, "Less") ||
                  !strcmp(c->op, "Greater") || !strcmp(c->op, "LessOrEqual") ||
                  !strcmp(c->op, "GreaterOrEqual") || !strcmp(c->op, "And") ||
                  !strcmp(c->op, "Or") || !strcmp(c->op, "Xor");
    if ((st = si_require(c, 0, &a)) || (st = si_require(c, 1, &b)))
        return st;
    /* Pow's exponent may have its own type (opset 12+); BitShift etc. not here. */
    if (strcmp(c->op, "Pow") && (st = si_same_type(c, a, "A", b, "B")))
        return st;
    /* And, Or, Xor take bool only (their T); the comparisons give bool. */
    if ((!strcmp(c->op, "And") || !strcmp(c->op, "Or") || !strcmp(c->op, "Xor")) &&
        si_first_dtype(a, b) && si_first_dtype(a, b) != MINFER_DTYPE_BOOL)
        return si_fail(c, MINFER_ERR_TYPE, "inputs must be bool, not %s",
                       si_dtype_name(si_first_dtype(a, b)));
    /* Pow's output is T (the base's type) whatever T1 (the exponent's) is. */
    dt = to_bool ? MINFER_DTYPE_BOOL : !strcmp(c->op, "Pow") ? a->dtype : si_first_dtype(a, b);
    if (c->opset < 7) {
        /* Before opset 7, B was broadcast onto A (broadcast/axis attributes)
         * and the result always had A's shape. */
        return si_set_out(c, 0, dt, a->rank, a->dims);
    }
    if ((st = si_broadcast(c, a->dims, a->rank, b->dims, b->rank, d, &r)))
        return st;
    return si_set_out(c, 0, dt, r, d);
}

/* Min, Max, Sum, Mean: variadic, broadcast together. */
minfer_status si_variadic(ictx *c) {
    int64_t d[MINFER_MAX_RANK];
    int32_t r = -1, dt = 0;
    minfer_status st = si_broadcast_inputs(c, 0, c->n_in, 1, &r, d, &dt);
    return st ? st : si_set_out(c, 0, dt, r, d);
}

minfer_status si_where(ictx *c) {
    const minfer_tensor_view *cond, *x, *y;
    int64_t d[MINFER_MAX_RANK];
    int32_t r = -1, dt = 0;
    minfer_status st;
    if ((st = si_require(c, 0, &cond)) || (st = si_require(c, 1, &x)) || (st = si_require(c, 2, &y)))
        return st;
    if (cond->dtype && cond->dtype != MINFER_DTYPE_BOOL)
        return si_fail(c, MINFER_ERR_TYPE, "condition must be bool, not %s",
                    si_dtype_name(cond->dtype));
    if ((st = si_same_type(c, x, "X", y, "Y")))
        return st;
    if ((st = si_broadcast_inputs(c, 0, 3, 0, &r, d, &dt)))
        return st;
    return si_set_out(c, 0, si_first_dtype(x, y), r, d);
}

minfer_status si_clip(ictx *c) {
    const minfer_tensor_view *x;
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (c->opset >= 11) {
        if ((st = si_same_type(c, x, "input", si_input(c, 1), "min")) ||
            (st = si_same_type(c, x, "input", si_input(c, 2), "max")))
            return st;
        for (size_t i = 1; i <= 2; i++) {
            const minfer_tensor_view *v = si_input(c, i);
            int64_t n = -1;
            if (v && (st = si_numel_of(c, v->dims, v->rank, &n)))
                return st;
            if (v && n >= 0 && n != 1)
                return si_fail(c, MINFER_ERR_SHAPE, "%s must be a scalar", i == 1 ? "min" : "max");
        }
    }
    return si_same_as(c, 0, x);
}

minfer_status si_prelu(ictx *c) {
    const minfer_tensor_view *x, *s;
    int64_t d[MINFER_MAX_RANK];
    int32_t r;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &s)) ||
        (st = si_same_type(c, x, "X", s, "slope")))
        return st;
    /* slope broadcasts onto X; check it can, the result keeps X's shape. */
    if (c->opset >= 7 && (st = si_broadcast(c, x->dims, x->rank, s->dims, s->rank, d, &r)))
        return st;
    return si_same_as(c, 0, x);
}
