/*
 * Recurrent layers: RNN, GRU and LSTM (opset 7 and 14 forms, both layouts),
 * as written in the ONNX operator specs, in double.
 *
 * Per direction (forward, reverse, or both) and batch row b, the steps
 * t < sequence_lens[b] run in order (reverse: from the last valid step
 * back); Y is 0 at steps past a row's length, and Y_h / Y_c hold the state
 * after the row's last step. Gate order in W, R and B: RNN i; GRU z, r, h;
 * LSTM i, o, f, c (peepholes P: i, o, f). The activations attribute names
 * f (RNN), f, g (GRU) or f, g, h (LSTM) per direction; activation_alpha and
 * activation_beta are consumed in that order by the functions that take
 * them (as ONNX Runtime reads them), others keep the defaults of the ONNX
 * ops of the same name.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

enum { CELL_RNN, CELL_GRU, CELL_LSTM };
enum {
    ACT_SIGMOID, ACT_TANH, ACT_RELU, ACT_AFFINE, ACT_LEAKYRELU, ACT_THRESHOLDEDRELU,
    ACT_SCALEDTANH, ACT_HARDSIGMOID, ACT_ELU, ACT_SOFTSIGN, ACT_SOFTPLUS
};

typedef struct rnn_act {
    int kind;
    float alpha, beta;
} rnn_act;

/* Name, whether it takes alpha / beta, and their defaults. */
static const struct {
    const char *name;
    int kind, takes_alpha, takes_beta;
    float alpha, beta;
} act_names[] = {
    {"sigmoid", ACT_SIGMOID, 0, 0, 0, 0},
    {"tanh", ACT_TANH, 0, 0, 0, 0},
    {"relu", ACT_RELU, 0, 0, 0, 0},
    {"affine", ACT_AFFINE, 1, 1, 1.0f, 0.0f},
    {"leakyrelu", ACT_LEAKYRELU, 1, 0, 0.01f, 0},
    {"thresholdedrelu", ACT_THRESHOLDEDRELU, 1, 0, 1.0f, 0},
    {"scaledtanh", ACT_SCALEDTANH, 1, 1, 1.0f, 1.0f},
    {"hardsigmoid", ACT_HARDSIGMOID, 1, 1, 0.2f, 0.5f},
    {"elu", ACT_ELU, 1, 0, 1.0f, 0},
    {"softsign", ACT_SOFTSIGN, 0, 0, 0, 0},
    {"softplus", ACT_SOFTPLUS, 0, 0, 0, 0},
};

typedef struct rnn_state {
    int cell, gates;    /* gates per cell: 1, 3, 4 */
    int dirs, reverse;  /* reverse: the single direction runs backwards */
    int layout;
    int64_t hidden;
    int linear_before_reset, input_forget;
    float clip;         /* 0: none */
    rnn_act act[6];     /* per direction: f, g, h */
} rnn_state;

static double act(const rnn_act *a, double v) {
    double al = a->alpha, be = a->beta;
    switch (a->kind) {
    case ACT_SIGMOID: return 1 / (1 + exp(-v));
    case ACT_TANH: return tanh(v);
    case ACT_RELU: return v > 0 ? v : 0;
    case ACT_AFFINE: return al * v + be;
    case ACT_LEAKYRELU: return v >= 0 ? v : al * v;
    case ACT_THRESHOLDEDRELU: return v >= al ? v : 0;
    case ACT_SCALEDTANH: return al * tanh(be * v);
    case ACT_HARDSIGMOID: return fmax(0, fmin(1, al * v + be));
    case ACT_ELU: return v >= 0 ? v : al * (exp(v) - 1);
    case ACT_SOFTSIGN: return v / (1 + fabs(v));
    default: return log1p(exp(v)); /* softplus */
    }
}

/* Reads the activations attribute (and alpha/beta) into st->act. */
static minfer_status read_activations(cpu_prep *p, rnn_state *st, int per) {
    const char *const *names;
    size_t n, n_alpha = 0, n_beta = 0, ia = 0, ib = 0;
    const float *alpha = NULL, *beta = NULL;
    int found = cpu_attr_strs(p, "activations", &names, &n);
    if (found < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (!found) {
        if (cpu_has_attr(p, "activation_alpha") || cpu_has_attr(p, "activation_beta"))
            return cpu_decline(p, "activation_alpha/beta without activations");
        return MINFER_OK;
    }
    /* One direction's list may serve both directions (ONNX Runtime repeats it). */
    if (n != (size_t)(per * st->dirs) && !(st->dirs == 2 && n == (size_t)per))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "activations has %zu entries, %d expected", n,
                             per * st->dirs);
    if (!p->ctx->api->attr_floats(p->node, "activation_alpha", &alpha, &n_alpha))
        alpha = NULL, n_alpha = 0;
    if (!p->ctx->api->attr_floats(p->node, "activation_beta", &beta, &n_beta))
        beta = NULL, n_beta = 0;
    for (int d = 0; d < st->dirs; d++)
        for (int k = 0; k < per; k++) {
            const char *name = names[n == (size_t)per ? k : d * per + k];
            char low[32];
            size_t len = strlen(name), j;
            if (len >= sizeof low)
                return cpu_decline(p, "activation '%s' not supported", name);
            for (j = 0; j <= len; j++)
                low[j] = (char)tolower((unsigned char)name[j]);
            for (j = 0; j < sizeof act_names / sizeof act_names[0]; j++)
                if (strcmp(low, act_names[j].name) == 0)
                    break;
            if (j == sizeof act_names / sizeof act_names[0])
                return cpu_decline(p, "activation '%s' not supported", name);
            rnn_act *a = &st->act[d * 3 + k];
            a->kind = act_names[j].kind;
            a->alpha = act_names[j].alpha;
            a->beta = act_names[j].beta;
            if (act_names[j].takes_alpha && ia < n_alpha)
                a->alpha = alpha[ia++];
            if (act_names[j].takes_beta && ib < n_beta)
                a->beta = beta[ib++];
        }
    return MINFER_OK;
}

minfer_status cpu_prepare_rnn(cpu_prep *p) {
    rnn_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    const char *op = p->node->op_type;
    st->cell = strcmp(op, "GRU") == 0 ? CELL_GRU : strcmp(op, "LSTM") == 0 ? CELL_LSTM : CELL_RNN;
    st->gates = st->cell == CELL_GRU ? 3 : st->cell == CELL_LSTM ? 4 : 1;
    const char *dir = cpu_attr_str(p, "direction", "forward");
    if (strcmp(dir, "forward") == 0)
        st->dirs = 1;
    else if (strcmp(dir, "reverse") == 0)
        st->dirs = 1, st->reverse = 1;
    else if (strcmp(dir, "bidirectional") == 0)
        st->dirs = 2;
    else
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown direction '%s'", dir);
    st->layout = (int)cpu_attr_int(p, "layout", 0);
    st->hidden = cpu_attr_int(p, "hidden_size", 0);
    st->linear_before_reset = (int)cpu_attr_int(p, "linear_before_reset", 0);
    st->input_forget = (int)cpu_attr_int(p, "input_forget", 0);
    st->clip = cpu_attr_float(p, "clip", 0.0f);
    int per = st->cell == CELL_LSTM ? 3 : st->cell == CELL_GRU ? 2 : 1;
    static const int dflt[3][3] = {
        {ACT_TANH}, {ACT_SIGMOID, ACT_TANH}, {ACT_SIGMOID, ACT_TANH, ACT_TANH}};
    for (int d = 0; d < st->dirs; d++)
        for (int k = 0; k < per; k++)
            st->act[d * 3 + k].kind = dflt[st->cell][k];
    minfer_status rs = read_activations(p, st, per);
    if (rs != MINFER_OK)
        return rs;
    if (st->layout != 0 && st->layout != 1)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "layout must be 0 or 1");
    return MINFER_OK;
}

minfer_status cpu_compute_rnn(const cpu_exec *e) {
    const rnn_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *w = cpu_input(e, 1), *r = cpu_input(e, 2),
                             *b = cpu_input(e, 3), *sl = cpu_input(e, 4), *h0 = cpu_input(e, 5),
                             *c0 = st->cell == CELL_LSTM ? cpu_input(e, 6) : NULL,
                             *pp = st->cell == CELL_LSTM ? cpu_input(e, 7) : NULL;
    minfer_status s = MINFER_OK;
    if (!x || !w || !r || x->rank != 3 || w->rank != 3 || r->rank != 3 || !cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "X, W, R must be 3-D float tensors");
    int64_t S = st->layout ? x->dims[1] : x->dims[0], B = st->layout ? x->dims[0] : x->dims[1];
    int64_t I = x->dims[2], H = st->hidden ? st->hidden : r->dims[2], G = st->gates, D = st->dirs;
    if (w->dims[0] != D || w->dims[1] != G * H || w->dims[2] != I || r->dims[0] != D ||
        r->dims[1] != G * H || r->dims[2] != H)
        return cpu_fail(e, MINFER_ERR_SHAPE, "W or R shape does not match");
    if (b && minfer_kit_numel(b->rank, b->dims) != D * 2 * G * H)
        return cpu_fail(e, MINFER_ERR_SHAPE, "B shape does not match");
    if (sl && minfer_kit_numel(sl->rank, sl->dims) != B)
        return cpu_fail(e, MINFER_ERR_SHAPE, "sequence_lens must hold batch values");
    if (h0 && minfer_kit_numel(h0->rank, h0->dims) != D * B * H)
        return cpu_fail(e, MINFER_ERR_SHAPE, "initial_h shape does not match");
    if (c0 && minfer_kit_numel(c0->rank, c0->dims) != D * B * H)
        return cpu_fail(e, MINFER_ERR_SHAPE, "initial_c shape does not match");
    if (pp && minfer_kit_numel(pp->rank, pp->dims) != D * 3 * H)
        return cpu_fail(e, MINFER_ERR_SHAPE, "P shape does not match");
    int32_t dt = x->dtype;
    int64_t yd[4], hd[3];
    if (st->layout)
        yd[0] = B, yd[1] = S, yd[2] = D, yd[3] = H, hd[0] = B, hd[1] = D, hd[2] = H;
    else
        yd[0] = S, yd[1] = D, yd[2] = B, yd[3] = H, hd[0] = D, hd[1] = B, hd[2] = H;
    void *y = NULL, *yh = NULL, *yc = NULL;
    if (minfer_kit_output_wanted(e->args->node, 0) &&
        (s = cpu_output(e, 0, dt, 4, yd, &y)) != MINFER_OK)
        return s;
    if (minfer_kit_output_wanted(e->args->node, 1) &&
        (s = cpu_output(e, 1, dt, 3, hd, &yh)) != MINFER_OK)
        return s;
    if (st->cell == CELL_LSTM && minfer_kit_output_wanted(e->args->node, 2) &&
        (s = cpu_output(e, 2, dt, 3, hd, &yc)) != MINFER_OK)
        return s;
    if (y)
        for (int64_t i = 0; i < S * D * B * H; i++)
            cpu_set(y, dt, (size_t)i, 0);
    double *h = cpu_calloc(e->ctx, (size_t)(2 * H + G * H + 1), sizeof *h);
    if (!h)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    double *c = h + H, *gate = c + H;
    const void *xd = cpu_data(x), *wd = cpu_data(w), *rd = cpu_data(r);
    for (int64_t d = 0; d < D; d++) {
        int rev = st->reverse || d == 1;
        const rnn_act *a = st->act + d * 3;
        for (int64_t bi = 0; bi < B; bi++) {
            int64_t len = sl ? cpu_get_index(cpu_data(sl), sl->dtype, (size_t)bi) : S;
            if (len < 0 || len > S) {
                s = cpu_fail(e, MINFER_ERR_RUNTIME, "sequence length out of range");
                goto done;
            }
            for (int64_t k = 0; k < H; k++) {
                size_t hi = (size_t)((d * B + bi) * H + k);
                h[k] = h0 ? cpu_get(cpu_data(h0), h0->dtype, hi) : 0;
                c[k] = c0 ? cpu_get(cpu_data(c0), c0->dtype, hi) : 0;
            }
            for (int64_t step = 0; step < len; step++) {
                int64_t t = rev ? len - 1 - step : step;
                size_t xo = (size_t)((st->layout ? bi * S + t : t * B + bi) * I);
                /* gate[g*H+k] = x W^T + Wb (+ h R^T + Rb, except GRU's h gate) */
                for (int64_t gk = 0; gk < G * H; gk++) {
                    double v = 0, rv = 0;
                    for (int64_t i = 0; i < I; i++)
                        v += cpu_get(xd, dt, xo + (size_t)i) *
                             cpu_get(wd, dt, (size_t)((d * G * H + gk) * I + i));
                    if (b)
                        v += cpu_get(cpu_data(b), dt, (size_t)(d * 2 * G * H + gk));
                    int gru_h = st->cell == CELL_GRU && gk >= 2 * H;
                    if (!gru_h || st->linear_before_reset) {
                        for (int64_t k = 0; k < H; k++)
                            rv += h[k] * cpu_get(rd, dt, (size_t)((d * G * H + gk) * H + k));
                        if (b)
                            rv += cpu_get(cpu_data(b), dt, (size_t)(d * 2 * G * H + G * H + gk));
                    }
                    gate[gk] = gru_h ? v : v + rv;
                    if (gru_h && st->linear_before_reset)
                        gate[gk] = v, c[gk - 2 * H] = rv; /* keep h R^T + Rb in c */
                }
                double clip = st->clip;
#define CLIP(v) (clip > 0 ? fmax(-clip, fmin(clip, (v))) : (v))
                if (st->cell == CELL_RNN) {
                    for (int64_t k = 0; k < H; k++)
                        h[k] = act(&a[0], CLIP(gate[k]));
                } else if (st->cell == CELL_GRU) {
                    double *hn = gate + 2 * H, *z = gate, *rr = gate + H;
                    for (int64_t k = 0; k < 2 * H; k++)
                        gate[k] = act(&a[0], CLIP(gate[k]));
                    for (int64_t k = 0; k < H; k++) {
                        double v = hn[k];
                        if (st->linear_before_reset) {
                            v += rr[k] * c[k];
                        } else {
                            double acc = 0;
                            for (int64_t j = 0; j < H; j++)
                                acc += rr[j] * h[j] *
                                       cpu_get(rd, dt, (size_t)((d * G * H + 2 * H + k) * H + j));
                            v += acc + (b ? cpu_get(cpu_data(b), dt,
                                                    (size_t)(d * 2 * G * H + G * H + 2 * H + k))
                                          : 0);
                        }
                        hn[k] = act(&a[1], CLIP(v));
                    }
                    for (int64_t k = 0; k < H; k++)
                        h[k] = (1 - z[k]) * hn[k] + z[k] * h[k];
                } else {
                    double *gi = gate, *go = gate + H, *gf = gate + 2 * H, *gc = gate + 3 * H;
                    const void *pd = pp ? cpu_data(pp) : NULL;
                    for (int64_t k = 0; k < H; k++) {
                        double pi = pd ? cpu_get(pd, dt, (size_t)(d * 3 * H + k)) : 0;
                        double po = pd ? cpu_get(pd, dt, (size_t)(d * 3 * H + H + k)) : 0;
                        double pf = pd ? cpu_get(pd, dt, (size_t)(d * 3 * H + 2 * H + k)) : 0;
                        double i_ = act(&a[0], CLIP(gi[k] + pi * c[k]));
                        double f_ = st->input_forget ? 1 - i_ : act(&a[0], CLIP(gf[k] + pf * c[k]));
                        double g_ = act(&a[1], CLIP(gc[k]));
                        c[k] = f_ * c[k] + i_ * g_;
                        double o_ = act(&a[0], CLIP(go[k] + po * c[k]));
                        h[k] = o_ * act(&a[2], c[k]);
                    }
                }
#undef CLIP
                if (y)
                    for (int64_t k = 0; k < H; k++) {
                        int64_t at = st->layout ? ((bi * S + t) * D + d) * H + k
                                                : ((t * D + d) * B + bi) * H + k;
                        cpu_set(y, dt, (size_t)at, h[k]);
                    }
            }
            for (int64_t k = 0; k < H; k++) {
                int64_t at = st->layout ? (bi * D + d) * H + k : (d * B + bi) * H + k;
                if (yh)
                    cpu_set(yh, dt, (size_t)at, h[k]);
                if (yc)
                    cpu_set(yc, dt, (size_t)at, c[k]);
            }
        }
    }
done:
    free(h);
    return s;
}
