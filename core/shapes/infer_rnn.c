/*
 * Recurrent ops: RNN, GRU, LSTM. Every output (Y, Y_h and LSTM's Y_c) has
 * X's element type. With layout 0, X is [seq, batch, input], Y is
 * [seq, dirs, batch, hidden] and Y_h, Y_c are [dirs, batch, hidden]; with
 * layout 1 (opset 14) X is [batch, seq, input], Y [batch, seq, dirs, hidden]
 * and Y_h, Y_c [batch, dirs, hidden].
 */
#include "shapes/infer_rules.h"

#include <string.h>

minfer_status si_rnn(ictx *c) {
    const minfer_tensor_view *x, *w;
    minfer_status st;
    if ((st = si_require(c, 0, &x)) || (st = si_require(c, 1, &w)) ||
        (st = si_same_type(c, x, "X", w, "W")) || (st = si_same_type(c, x, "X", si_input(c, 2), "R")))
        return st;
    const char *dir = mf_attr_string(c->node, "direction", "forward");
    int64_t dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
    if (strcmp(dir, "forward") && strcmp(dir, "reverse") && dirs != 2)
        return si_fail(c, MINFER_ERR_MODEL, "direction '%s' is not forward, reverse or "
                       "bidirectional", dir);
    int64_t hidden = mf_attr_int(c->node, "hidden_size", -1);
    int layout = c->opset >= 14 && mf_attr_int(c->node, "layout", 0) != 0;
    if (hidden < 1 && w->rank == 3 && w->dims[1] >= 0) {
        /* hidden_size is optional in practice: W is [dirs, gates * hidden, input]. */
        int64_t gates = !strcmp(c->op, "LSTM") ? 4 : !strcmp(c->op, "GRU") ? 3 : 1;
        hidden = w->dims[1] % gates == 0 ? w->dims[1] / gates : -1;
    }
    if (hidden < 1)
        hidden = -1;
    if (x->rank >= 0 && x->rank != 3)
        return si_fail(c, MINFER_ERR_SHAPE, "X must be 3-D, not rank %d", (int)x->rank);
    int64_t seq = x->rank == 3 ? x->dims[layout ? 1 : 0] : -1;
    int64_t batch = x->rank == 3 ? x->dims[layout ? 0 : 1] : -1;
    int64_t y[4], yh[3];
    if (layout) {
        y[0] = batch, y[1] = seq, y[2] = dirs, y[3] = hidden;
        yh[0] = batch, yh[1] = dirs, yh[2] = hidden;
    } else {
        y[0] = seq, y[1] = dirs, y[2] = batch, y[3] = hidden;
        yh[0] = dirs, yh[1] = batch, yh[2] = hidden;
    }
    if ((st = si_set_out(c, 0, x->dtype, 4, y)))
        return st;
    for (size_t j = 1; j < c->n_out && j < 3; j++)
        if ((st = si_set_out(c, j, x->dtype, 3, yh)))
            return st;
    return MINFER_OK;
}
