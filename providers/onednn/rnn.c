/*
 * RNN, GRU and LSTM as oneDNN's recurrent primitives (vanilla RNN, GRU,
 * linear-before-reset GRU, LSTM), one ONNX node a one-layer primitive.
 *
 * The ONNX ops and oneDNN's cells compute the same thing once three
 * differences are bridged:
 *  1. Weights: ONNX W [D, G*H, I] and R [D, G*H, H] are oneDNN's ldgoi
 *     order (layer, direction, gate, output, input) with L = 1, packed once
 *     into the layout the primitive picks. LSTM's gates are i, o, f, c in
 *     ONNX and i, f, c, o in oneDNN: its weights are permuted first. GRU's
 *     z, r, h are oneDNN's u, r, o.
 *  2. Biases: ONNX has Wb and Rb per gate, oneDNN one bias per gate, so the
 *     two are summed, except GRU's h gate: without linear_before_reset ONNX
 *     adds Rbh outside r (h = g(x Wh + (r . h) Rh + Rbh + Wbh)), which is
 *     oneDNN's GRU with bias Wbh + Rbh; with it, Rbh is inside
 *     (h = g(x Wh + Wbh + r . (h Rh + Rbh))), oneDNN's LBR GRU and its
 *     fourth bias.
 *  3. Outputs: Y is [S, D, B, H]; oneDNN's bidirectional_concat writes
 *     [S, B, D*H]. One direction is the same bytes; two go through the
 *     workspace and a reorder that puts the direction axis before batch.
 *     Y_h and Y_c [D, B, H] are oneDNN's dst_iter [1, D, B, H].
 * Declined (the CPU provider runs them): sequence_lens (oneDNN has no
 * per-row lengths), layout = 1, clip, input_forget, peepholes, activations
 * other than the defaults (RNN: Tanh, Relu or Sigmoid), activation_alpha or
 * _beta, and W, R or B not constant.
 *
 * oneDNN 2.6 names its LBR GRU and vanilla RNN implementation "ref" (its
 * LSTM "brgemm"); unlike other "ref" primitives it runs the products of
 * all time steps as packed GEMMs and only the cell's pointwise part as
 * plain loops, so it is taken here.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

enum { CELL_RNN, CELL_GRU, CELL_LSTM };

/* Case-insensitive equality of ASCII names. */
static int same_name(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

/* The activations attribute: only the defaults (GRU: Sigmoid, Tanh; LSTM:
 * Sigmoid, Tanh, Tanh), or for RNN one of Tanh, Relu, Sigmoid (the same
 * for both directions), into *rnn_act. */
static minfer_status read_activations(dnn_b *b, int cell, int dirs, dnnl_alg_kind_t *rnn_act) {
    static const char *const dflt[3][3] = {
        {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    int per = cell == CELL_LSTM ? 3 : cell == CELL_GRU ? 2 : 1;
    const char *const *names = NULL;
    size_t n = 0;
    *rnn_act = dnnl_eltwise_tanh;
    if (minfer_kit_has_attr(b->ctx->api, b->node, "activation_alpha") ||
        minfer_kit_has_attr(b->ctx->api, b->node, "activation_beta"))
        return dnn_decline(b, "activation_alpha or activation_beta");
    int found = minfer_kit_attr_strings(b->ctx->api, b->node, "activations", &names, &n, b->why,
                                        b->why_size);
    if (found < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (!found)
        return MINFER_OK;
    if (n != (size_t)(per * dirs) && !(dirs == 2 && n == (size_t)per))
        return dnn_decline(b, "activations has %zu entries, %d expected", n, per * dirs);
    for (size_t k = 0; k < n; k++) {
        const char *name = names[k];
        if (cell == CELL_RNN) {
            dnnl_alg_kind_t alg = same_name(name, "Tanh")      ? dnnl_eltwise_tanh
                                  : same_name(name, "Relu")    ? dnnl_eltwise_relu
                                  : same_name(name, "Sigmoid") ? dnnl_eltwise_logistic
                                                               : dnnl_alg_kind_undef;
            if (alg == dnnl_alg_kind_undef || (k > 0 && alg != *rnn_act))
                return dnn_decline(b, "activations other than one of Tanh, Relu, Sigmoid");
            *rnn_act = alg;
        } else if (!same_name(name, dflt[cell][k % (size_t)per])) {
            return dnn_decline(b, "activation '%s' in place of the default %s", name,
                               dflt[cell][k % (size_t)per]);
        }
    }
    return MINFER_OK;
}

/* ONNX gate index of oneDNN's gate g. */
static int onnx_gate(int cell, int g) {
    static const int lstm[4] = {0, 2, 3, 1}; /* oneDNN i f c o <- ONNX i o f c */
    return cell == CELL_LSTM ? lstm[g] : g;
}

/* Packs constant input i (W or R, [D, G*H, K]) into want: permuted into
 * oneDNN's gate order when it differs, then handed to dnn_const_input as
 * if the node's constant were that copy. */
static int pack_weights(dnn_b *b, size_t i, int cell, int64_t D, int64_t G, int64_t H, int64_t K,
                        const dnnl_memory_desc_t *want) {
    const minfer_value_desc *v = dnn_in(b, i);
    dnnl_memory_desc_t have;
    dnnl_dims_t dims = {1, D, K, G, H};
    if (dnnl_memory_desc_init_by_tag(&have, 5, dims, dnnl_f32, dnnl_ldgoi) != dnnl_success) {
        dnn_decline(b, "weights descriptor");
        return -1;
    }
    if (cell != CELL_LSTM || b->check || !v->const_data)
        return dnn_const_input(b, i, &have, want, 1.0f);
    size_t block = (size_t)(H * K), count = (size_t)(D * G) * block;
    if (v->const_nbytes < count * sizeof(float)) {
        dnn_decline(b, "constant input %zu is too small", i);
        return -1;
    }
    float *perm = malloc(count * sizeof *perm);
    minfer_value_desc inputs[8];
    if (!perm || b->node->n_inputs > sizeof inputs / sizeof inputs[0]) {
        free(perm);
        dnn_decline(b, "out of memory");
        return -1;
    }
    const float *src = v->const_data;
    for (int64_t d = 0; d < D; d++)
        for (int g = 0; g < G; g++)
            memcpy(perm + (size_t)(d * G + g) * block,
                   src + (size_t)(d * G + onnx_gate(cell, g)) * block, block * sizeof *perm);
    memcpy(inputs, b->node->inputs, b->node->n_inputs * sizeof inputs[0]);
    inputs[i].const_data = perm;
    minfer_node_desc node = *b->node;
    node.inputs = inputs;
    dnn_b pb = *b;
    pb.node = &node;
    int k = dnn_const_input(&pb, i, &have, want, 1.0f);
    b->ws_extra = pb.ws_extra;
    void *packed = NULL;
    if (k >= 0 && dnnl_memory_get_data_handle(b->n->mems[k].mem, &packed) == dnnl_success &&
        !packed) {
        /* Packing left for later (it reads the copy then): the node keeps
         * the copy. */
        if (b->n->n_owned >= DNN_MAX_OWNED) {
            free(perm);
            dnn_decline(b, "too many packed constants for one node");
            return -1;
        }
        b->n->owned[b->n->n_owned++] = perm;
        return k;
    }
    free(perm);
    return k;
}

/* The bias oneDNN wants, [1, D, G (+1 for LBR GRU), H], from ONNX's B
 * [D, 2*G*H] (absent: zeros); a memory the node owns. */
static int pack_bias(dnn_b *b, int cell, int lbr, int64_t D, int64_t G, int64_t H) {
    const minfer_value_desc *v = dnn_in(b, 3);
    int64_t Gb = G + (lbr ? 1 : 0);
    dnnl_memory_desc_t md;
    dnnl_dims_t dims = {1, D, Gb, H};
    if (dnnl_memory_desc_init_by_tag(&md, 4, dims, dnnl_f32, dnnl_ldgo) != dnnl_success) {
        dnn_decline(b, "bias descriptor");
        return -1;
    }
    if (b->check)
        return dnn_mem_new(b, &md, BIND_FIXED, -1);
    float *bias = calloc((size_t)(D * Gb * H), sizeof *bias);
    if (!bias) {
        dnn_decline(b, "out of memory");
        return -1;
    }
    const float *wb = v ? v->const_data : NULL;
    for (int64_t d = 0; wb && d < D; d++) {
        const float *w = wb + d * 2 * G * H, *r = w + G * H;
        float *o = bias + d * Gb * H;
        for (int g = 0; g < G; g++) {
            int og = onnx_gate(cell, g);
            int split = lbr && g == 2; /* Rbh is LBR's fourth bias */
            for (int64_t k = 0; k < H; k++)
                o[g * H + k] = w[og * H + k] + (split ? 0.0f : r[og * H + k]);
        }
        if (lbr)
            memcpy(o + 3 * H, r + 2 * H, (size_t)H * sizeof *o);
    }
    int k = dnn_owned_plain(b, &md, bias);
    free(bias);
    return k;
}

/* A dense [1, D, B, H] memory descriptor. */
static void state_md(dnnl_memory_desc_t *md, int64_t D, int64_t B, int64_t H) {
    dnnl_dims_t dims = {1, D, B, H};
    dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, dnnl_ldnc);
}

/* Input i (initial_h or initial_c, [D, B, H]) as src_iter; when absent
 * (the other one present: oneDNN's LSTM takes both or neither), zeros the
 * node owns. -1 on error. */
static int state_input(dnn_b *b, size_t i, const dnnl_memory_desc_t *md, int64_t D, int64_t B,
                       int64_t H) {
    const minfer_value_desc *v = dnn_in(b, i);
    if (!v) {
        if (b->check)
            return dnn_mem_new(b, md, BIND_FIXED, -1);
        float *zeros = calloc((size_t)(D * B * H), sizeof *zeros);
        int k = zeros ? dnn_owned_plain(b, md, zeros) : -1;
        if (!zeros)
            dnn_decline(b, "out of memory");
        free(zeros);
        return k;
    }
    if (v->dtype != MINFER_DTYPE_FLOAT || dnn_numel(v->rank, v->dims) != D * B * H) {
        dnn_decline(b, "input %zu must be float [%lld, %lld, %lld]", i, (long long)D, (long long)B,
                    (long long)H);
        return -1;
    }
    return dnn_input(b, i, md, md);
}

minfer_status dnn_build_rnn(dnn_b *b) {
    const char *op = b->node->op_type;
    int cell = !strcmp(op, "GRU") ? CELL_GRU : !strcmp(op, "LSTM") ? CELL_LSTM : CELL_RNN;
    int64_t G = cell == CELL_GRU ? 3 : cell == CELL_LSTM ? 4 : 1;
    const minfer_value_desc *x = dnn_in(b, 0), *w = dnn_in(b, 1), *r = dnn_in(b, 2),
                            *bias = dnn_in(b, 3);
    const char *dir = dnn_attr_str(b, "direction", "forward");
    int64_t D = !strcmp(dir, "bidirectional") ? 2 : 1;
    dnnl_rnn_direction_t dn = D == 2                    ? dnnl_bidirectional_concat
                              : !strcmp(dir, "reverse") ? dnnl_unidirectional_right2left
                                                        : dnnl_unidirectional_left2right;
    int lbr = cell == CELL_GRU && dnn_attr_int(b, "linear_before_reset", 0) != 0;
    dnnl_alg_kind_t act;
    minfer_status st;
    if (D == 1 && strcmp(dir, "forward") && strcmp(dir, "reverse"))
        return dnn_decline(b, "direction '%s'", dir);
    if (!x || !w || !r || x->rank != 3 || w->rank != 3 || r->rank != 3)
        return dnn_decline(b, "X, W and R must be 3-D");
    if (dnn_in(b, 4))
        return dnn_decline(b, "sequence_lens (oneDNN has no per-row lengths)");
    if (cell == CELL_LSTM && dnn_in(b, 7))
        return dnn_decline(b, "peepholes P");
    if (dnn_attr_int(b, "layout", 0) != 0)
        return dnn_decline(b, "layout other than 0");
    if (minfer_kit_has_attr(b->ctx->api, b->node, "clip"))
        return dnn_decline(b, "clip");
    if (cell == CELL_LSTM && dnn_attr_int(b, "input_forget", 0) != 0)
        return dnn_decline(b, "input_forget");
    if ((st = read_activations(b, cell, (int)D, &act)) != MINFER_OK)
        return st;
    if (!w->const_data || !r->const_data || (bias && !bias->const_data))
        return dnn_decline(b, "W, R and B must be constant");
    int64_t S = x->dims[0], B = x->dims[1], I = x->dims[2], H = r->dims[2];
    int64_t hs = dnn_attr_int(b, "hidden_size", H);
    if (hs != H || w->dims[0] != D || w->dims[1] != G * H || w->dims[2] != I || r->dims[0] != D ||
        r->dims[1] != G * H)
        return dnn_decline(b, "W or R shape does not match");
    if (bias && dnn_numel(bias->rank, bias->dims) != D * 2 * G * H)
        return dnn_decline(b, "B shape does not match");
    int64_t yd[4] = {S, D, B, H}, hd[3] = {D, B, H};
    for (size_t o = 0; o < b->node->n_outputs && o < 3; o++)
        if (dnn_out_wanted(b, o) &&
            (st = dnn_check_out(b, o, o ? 3 : 4, o ? hd : yd)) != MINFER_OK)
            return st;

    dnnl_memory_desc_t src, dst, iter, wl_any, wi_any, bias_md;
    dnnl_dims_t sd = {S, B, I}, dd = {S, B, D * H}, wld = {1, D, I, G, H}, wid = {1, D, H, G, H};
    dnnl_dims_t bd = {1, D, G + (lbr ? 1 : 0), H};
    if (dnnl_memory_desc_init_by_tag(&src, 3, sd, dnnl_f32, dnnl_tnc) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&dst, 3, dd, dnnl_f32, dnnl_tnc) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&wl_any, 5, wld, dnnl_f32, dnnl_format_tag_any) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&wi_any, 5, wid, dnnl_f32, dnnl_format_tag_any) !=
            dnnl_success ||
        dnnl_memory_desc_init_by_tag(&bias_md, 4, bd, dnnl_f32, dnnl_ldgo) != dnnl_success)
        return dnn_decline(b, "memory descriptors");
    state_md(&iter, D, B, H);
    /* LSTM's h and c states go together: a missing initial one is zeros,
     * an unwanted final one goes to the workspace. */
    int want_h = dnn_out_wanted(b, 1), want_c = cell == CELL_LSTM && dnn_out_wanted(b, 2);
    int have_h = dnn_in(b, 5) != NULL, have_c = cell == CELL_LSTM && dnn_in(b, 6) != NULL;
    if (cell == CELL_LSTM) {
        have_h = have_c = have_h || have_c;
        want_h = want_c = want_h || want_c;
    }
    const dnnl_memory_desc_t *src_h = have_h ? &iter : NULL, *src_c = have_c ? &iter : NULL;
    const dnnl_memory_desc_t *dst_h = want_h ? &iter : NULL, *dst_c = want_c ? &iter : NULL;

    dnnl_rnn_desc_t desc;
    dnnl_status_t s;
    const dnnl_prop_kind_t pk = dnnl_forward_inference;
    if (cell == CELL_LSTM)
        s = dnnl_lstm_forward_desc_init(&desc, pk, dn, &src, src_h, src_c, &wl_any, &wi_any,
                                        &bias_md, &dst, dst_h, dst_c, 0);
    else if (lbr)
        s = dnnl_lbr_gru_forward_desc_init(&desc, pk, dn, &src, src_h, &wl_any, &wi_any, &bias_md,
                                           &dst, dst_h, 0);
    else if (cell == CELL_GRU)
        s = dnnl_gru_forward_desc_init(&desc, pk, dn, &src, src_h, &wl_any, &wi_any, &bias_md, &dst,
                                       dst_h, 0);
    else
        s = dnnl_vanilla_rnn_forward_desc_init(&desc, pk, act, dn, &src, src_h, &wl_any, &wi_any,
                                               &bias_md, &dst, dst_h, 0, 0.0f, 0.0f);
    if (s != dnnl_success)
        return dnn_fail(b, s, "RNN descriptor");
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    if (!attr)
        return dnn_decline(b, "out of memory");
    dnnl_primitive_desc_t pd = NULL;
    s = dnnl_primitive_desc_create(&pd, &desc, attr, b->ctx->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return dnn_fail(b, s, "RNN primitive descriptor");

    int args[9], mems[9], n = 0, ydst = -1;
    args[n] = DNNL_ARG_SRC_LAYER, mems[n++] = dnn_input(b, 0, NULL, &src);
    args[n] = DNNL_ARG_WEIGHTS_LAYER,
    mems[n++] = pack_weights(b, 1, cell, D, G, H, I, dnn_pd_md(pd, dnnl_query_weights_md, 0));
    args[n] = DNNL_ARG_WEIGHTS_ITER,
    mems[n++] = pack_weights(b, 2, cell, D, G, H, H, dnn_pd_md(pd, dnnl_query_weights_md, 1));
    args[n] = DNNL_ARG_BIAS, mems[n++] = pack_bias(b, cell, lbr, D, G, H);
    if (have_h)
        args[n] = DNNL_ARG_SRC_ITER, mems[n++] = state_input(b, 5, &iter, D, B, H);
    if (have_c)
        args[n] = DNNL_ARG_SRC_ITER_C, mems[n++] = state_input(b, 6, &iter, D, B, H);
    /* Y: written in place for one direction (or into the workspace when
     * not wanted), else into the workspace and reordered after. */
    if (D == 1 && dnn_out_wanted(b, 0))
        ydst = dnn_output(b, 0, &dst);
    else
        ydst = dnn_ws_mem(b, &dst);
    args[n] = DNNL_ARG_DST_LAYER, mems[n++] = ydst;
    if (want_h)
        args[n] = DNNL_ARG_DST_ITER,
        mems[n++] = dnn_out_wanted(b, 1) ? dnn_output(b, 1, &iter) : dnn_ws_mem(b, &iter);
    if (want_c)
        args[n] = DNNL_ARG_DST_ITER_C,
        mems[n++] = dnn_out_wanted(b, 2) ? dnn_output(b, 2, &iter) : dnn_ws_mem(b, &iter);
    for (int k = 0; k < n; k++)
        if (mems[k] < 0) {
            dnnl_primitive_desc_destroy(pd);
            return MINFER_ERR_UNSUPPORTED;
        }
    if ((st = dnn_step_add(b, pd, n, args, mems)) != MINFER_OK)
        return st;
    if (D == 2 && dnn_out_wanted(b, 0)) {
        /* [S, B, 2, H] in the workspace to Y [S, 2, B, H]: the same dims
         * with Y's strides. */
        dnnl_memory_desc_t from, to;
        dnnl_dims_t vd = {S, B, 2, H}, ys = {2 * B * H, H, B * H, 1};
        if (dnnl_memory_desc_init_by_tag(&from, 4, vd, dnnl_f32, dnnl_abcd) != dnnl_success ||
            dnnl_memory_desc_init_by_strides(&to, 4, vd, dnnl_f32, ys) != dnnl_success)
            return dnn_decline(b, "memory descriptors");
        int v = dnn_mem_new(b, &from, BIND_WS, -1);
        if (v < 0)
            return MINFER_ERR_UNSUPPORTED;
        b->n->mems[v].off = b->n->mems[ydst].off;
        int y = dnn_mem_new(b, &to, BIND_OUTPUT, 0);
        if (y < 0)
            return MINFER_ERR_UNSUPPORTED;
        return dnn_reorder_step(b, v, y);
    }
    return MINFER_OK;
}
