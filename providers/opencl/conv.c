/*
 * Conv (and minfer's FusedConv) and the pools over 1, 2 or 3 spatial
 * dimensions, NC(D)(H)W. Every window is run as a 3-D one (ocl_win3) with
 * size 1 in the dimensions it lacks, so one kernel serves every rank.
 *
 * Conv picks one of two kernels at prepare (kernels/conv.cl):
 *  - conv_tile, an implicit GEMM register-blocked over output channels
 *    (NR = 2 * VW per tile) and output positions (MR), when the weights are
 *    constant and a group has at least 8 output channels. The weights are
 *    packed once into [group][channel tile][kh][kw][c][NR], zero padded, so
 *    the inner loop streams them with two vector loads per input channel
 *    ([group][channel tile][kd][kh][kw][c][NR] for 3-D).
 *  - conv_direct, one output per work-item, for depthwise and narrow
 *    grouped convolutions and for weights that arrive at run time.
 * Bias, FusedConv's residual Z and its activation are applied at the store.
 */
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

#define MAX_SP 3 /* spatial dimensions */

typedef struct window {
    int nsp;
    int64_t k[MAX_SP], s[MAX_SP], d[MAX_SP], pads[2 * MAX_SP]; /* pads: begins, then ends */
    int auto_pad, ceil_mode;
} window;

static minfer_status parse_window(ocl_prep *p, window *w, int nsp, const int64_t *kernel) {
    int64_t tmp[8];
    size_t n;
    memset(w, 0, sizeof *w);
    if (nsp < 1 || nsp > MAX_SP)
        return ocl_decline(p, "%d spatial dimensions not supported (1 to %d)", nsp, MAX_SP);
    w->nsp = nsp;
    for (int i = 0; i < nsp; i++)
        w->k[i] = w->s[i] = w->d[i] = 1;
    int r = ocl_attr_ints(p, "kernel_shape", tmp, 8, &n);
    if (r < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n != (size_t)nsp)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "kernel_shape has %zu entries", n);
    if (r > 0)
        memcpy(w->k, tmp, n * sizeof tmp[0]);
    else if (kernel)
        memcpy(w->k, kernel, (size_t)nsp * sizeof kernel[0]);
    else
        return ocl_decline(p, "kernel shape unknown");
    if ((r = ocl_attr_ints(p, "strides", tmp, 8, &n)) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n != (size_t)nsp)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "strides has %zu entries", n);
    if (r > 0)
        memcpy(w->s, tmp, n * sizeof tmp[0]);
    if ((r = ocl_attr_ints(p, "dilations", tmp, 8, &n)) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n != (size_t)nsp)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "dilations has %zu entries", n);
    if (r > 0)
        memcpy(w->d, tmp, n * sizeof tmp[0]);
    if ((r = ocl_attr_ints(p, "pads", tmp, 8, &n)) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (r > 0 && n != 2 * (size_t)nsp)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "pads has %zu entries", n);
    if (r > 0)
        for (int i = 0; i < nsp; i++) {
            w->pads[i] = tmp[i];
            w->pads[MAX_SP + i] = tmp[nsp + i];
        }
    for (int i = 0; i < nsp; i++) {
        if (w->k[i] < 1 || w->s[i] < 1 || w->d[i] < 1)
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "kernel, strides, dilations must be > 0");
        if (w->pads[i] < 0 || w->pads[MAX_SP + i] < 0)
            return ocl_decline(p, "negative pads not supported");
    }
    const char *ap = ocl_attr_str(p, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") == 0)
        w->auto_pad = PAD_NOTSET;
    else if (strcmp(ap, "SAME_UPPER") == 0)
        w->auto_pad = PAD_SAME_UPPER;
    else if (strcmp(ap, "SAME_LOWER") == 0)
        w->auto_pad = PAD_SAME_LOWER;
    else if (strcmp(ap, "VALID") == 0)
        w->auto_pad = PAD_VALID;
    else
        return ocl_decline(p, "auto_pad '%s' not supported", ap);
    w->ceil_mode = ocl_attr_int(p, "ceil_mode", 0) != 0;
    return MINFER_OK;
}

/* Output size and begin/end pads of spatial dim i for input size in. */
static int window_out(const window *w, int i, int64_t in, int64_t *out, int64_t *pb,
                      int64_t *pe) {
    int64_t dk = (w->k[i] - 1) * w->d[i] + 1, s = w->s[i];
    switch (w->auto_pad) {
    case PAD_SAME_UPPER:
    case PAD_SAME_LOWER: {
        *out = (in + s - 1) / s;
        int64_t total = (*out - 1) * s + dk - in;
        if (total < 0)
            total = 0;
        *pb = w->auto_pad == PAD_SAME_UPPER ? total / 2 : total - total / 2;
        *pe = total - *pb;
        return 0;
    }
    case PAD_VALID:
        if (in < dk)
            return -1;
        *out = (in - dk) / s + 1;
        *pb = *pe = 0;
        return 0;
    default: {
        int64_t span = in + w->pads[i] + w->pads[MAX_SP + i] - dk;
        if (span < 0)
            return -1;
        *out = (w->ceil_mode ? (span + s - 1) / s : span / s) + 1;
        *pb = w->pads[i];
        *pe = w->pads[MAX_SP + i];
        return 0;
    }
    }
}

/* The 3-D window of a run for input x (rank nsp + 2); the output's spatial
 * dims into od[2..]. A window of nsp < 3 dimensions takes the trailing
 * slots; the leading ones get size, kernel, stride and dilation 1. */
static int geometry(const window *w, const minfer_tensor_view *x, ocl_win3 *g, int64_t *od) {
    int nsp = w->nsp;
    if (x->rank != nsp + 2)
        return -1;
    for (int j = 0; j < MAX_SP; j++) {
        g->i[j] = g->o[j] = g->k[j] = g->s[j] = g->d[j] = g->e[j] = 1;
        g->p[j] = 0;
    }
    for (int i = 0; i < nsp; i++) {
        int j = MAX_SP - nsp + i;
        int64_t in = x->dims[2 + i], out, pb, pe;
        if (window_out(w, i, in, &out, &pb, &pe) || in > INT32_MAX / 2 || out > INT32_MAX / 2)
            return -1;
        od[2 + i] = out;
        g->i[j] = (cl_int)in;
        g->o[j] = (cl_int)out;
        g->k[j] = (cl_int)w->k[i];
        g->s[j] = (cl_int)w->s[i];
        g->d[j] = (cl_int)w->d[i];
        g->p[j] = (cl_int)pb;
        g->e[j] = (cl_int)(in + pe);
    }
    return 0;
}

/* ---- Conv ------------------------------------------------------------------ */

typedef struct conv_state {
    ocl_state_head head; /* bufs[0]: weights (packed for tile), bufs[1]: bias */
    window w;
    int64_t group;
    int tile;
    int act;
    float a, b;
    int fused;
} conv_state;

minfer_status ocl_prepare_conv(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = ocl_in_desc(n, 0), *wd = ocl_in_desc(n, 1),
                            *bd = ocl_in_desc(n, 2);
    if (!x || !wd)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs inputs X and W");
    minfer_status s;
    for (size_t i = 0; i < n->n_inputs; i++)
        if ((s = ocl_need_float(p, i)) || (s = ocl_check_size(p, ocl_in_desc(n, i))))
            return s;
    if ((s = ocl_check_size(p, &n->outputs[0])))
        return s;
    conv_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->fused = strcmp(n->domain, "minfer") == 0;
    if (st->fused) {
        if ((s = ocl_parse_activation(p, &st->act, &st->a, &st->b)))
            return s;
    } else if (n->n_inputs > 3) {
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "Conv takes at most 3 inputs");
    }
    int rank = wd->rank >= 0 ? wd->rank : x->rank;
    if (rank < 0)
        return ocl_decline(p, "rank of X and W unknown");
    if (rank < 3 || rank > MAX_SP + 2)
        return ocl_decline(p, "%d-D convolution not supported (1-D to %d-D)", rank - 2, MAX_SP);
    int known_w = wd->rank == rank;
    for (int i = 0; known_w && i < rank; i++)
        known_w = wd->dims[i] >= 0;
    if ((s = parse_window(p, &st->w, rank - 2, known_w ? wd->dims + 2 : NULL)))
        return s;
    st->group = ocl_attr_int(p, "group", 1);
    if (st->group < 1)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "group must be >= 1");
    int64_t M = known_w ? wd->dims[0] : -1, Cg = known_w ? wd->dims[1] : -1;
    if (known_w && M % st->group)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "group does not divide the output channels");
    int64_t Mg = M / st->group;
    st->tile = known_w && wd->const_data && Mg >= 8 && (!bd || bd->const_data);
    if (!p->prep)
        return MINFER_OK;
    if (bd && bd->const_data &&
        (s = ocl_upload_floats(p, 1, bd->const_data, bd->const_nbytes / sizeof(float))))
        return s;
    if (!wd->const_data)
        return MINFER_OK;
    if (!st->tile)
        return ocl_upload_floats(p, 0, wd->const_data, wd->const_nbytes / sizeof(float));
    /* The kernel taps (kd, kh, kw) are contiguous in ONNX's layout and in
     * the packed one, so they pack as one flattened index t. */
    int64_t KK = ocl_numel(rank - 2, wd->dims + 2), nr = 2 * p->ctx->vw;
    int64_t MT = (Mg + nr - 1) / nr, G = st->group;
    size_t count = (size_t)(G * MT * KK * Cg * nr);
    float *pk = calloc(count ? count : 1, sizeof *pk);
    if (!pk)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory packing weights");
    const float *w = wd->const_data;
    for (int64_t g = 0; g < G; g++)
        for (int64_t m = 0; m < Mg; m++)
            for (int64_t c = 0; c < Cg; c++)
                for (int64_t t = 0; t < KK; t++) {
                    int64_t mt = m / nr, j = m % nr;
                    size_t dst = (size_t)((((g * MT + mt) * KK + t) * Cg + c) * nr + j);
                    pk[dst] = w[((g * Mg + m) * Cg + c) * KK + t];
                }
    s = ocl_upload_floats(p, 0, pk, count);
    free(pk);
    return s;
}

minfer_status ocl_execute_conv(const ocl_exec *e) {
    const conv_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0), *w = ocl_input(e, 1), *b = ocl_input(e, 2),
                             *z = st->fused ? ocl_input(e, 3) : NULL;
    if (!x || !w)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int64_t od[MAX_SP + 2];
    ocl_win3 g;
    if (w->rank != x->rank || geometry(&st->w, x, &g, od))
        return ocl_fail(e, MINFER_ERR_SHAPE, "the window does not fit the input");
    int64_t M = w->dims[0], G = st->group, C = x->dims[1];
    if (C != G * w->dims[1] || M % G)
        return ocl_fail(e, MINFER_ERR_SHAPE, "channels and group do not fit");
    if (b && (b->rank != 1 || b->dims[0] != M))
        return ocl_fail(e, MINFER_ERR_SHAPE, "bias must have %lld elements", (long long)M);
    od[0] = x->dims[0];
    od[1] = M;
    cl_mem xb, wb, bb, zb, yb;
    cl_int xo, wo, bo, zo, yo;
    minfer_status s = ocl_output(e, 0, x->rank, od, &yb, &yo);
    if (s)
        return s;
    if (z) {
        int same = z->rank == x->rank;
        for (int i = 0; same && i < x->rank; i++)
            same = z->dims[i] == od[i];
        if (!same)
            return ocl_fail(e, MINFER_ERR_SHAPE, "Z must have the output's shape");
    }
    ocl_in_buf(e, 0, -1, &xb, &xo);
    ocl_in_buf(e, 1, 0, &wb, &wo);
    ocl_in_buf(e, 2, 1, &bb, &bo);
    ocl_in_buf(e, 3, -1, &zb, &zo);
    cl_int has_b = b != NULL, has_z = z != NULL;
    if (!b)
        bb = yb;
    if (!z)
        zb = yb;
    cl_int Cg = (cl_int)w->dims[1], Mg = (cl_int)(M / G), Gi = (cl_int)G, act = st->act;
    size_t N = (size_t)x->dims[0], P = (size_t)g.o[0] * (size_t)g.o[1] * (size_t)g.o[2];
    if (st->tile) {
        /* Packed weights and the bias were uploaded at prepare (offset 0). */
        s = ocl_set_args(e, OCL_K_conv_tile, 17, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(wb),
                         OCL_ARG(bb), OCL_ARG(has_b), OCL_ARG(zb), OCL_ARG(zo), OCL_ARG(has_z),
                         OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(Cg), OCL_ARG(Mg), OCL_ARG(Gi),
                         OCL_ARG(g), OCL_ARG(act), OCL_ARG(st->a), OCL_ARG(st->b));
        if (s)
            return s;
        size_t nr = 2 * (size_t)e->ctx->vw, mr = (size_t)e->ctx->mr;
        size_t gl[3] = {(P + mr - 1) / mr, ((size_t)Mg + nr - 1) / nr, N * (size_t)G};
        size_t l[3] = {e->ctx->is_cpu ? 1 : 16, 1, 1};
        return ocl_enqueue(e, OCL_K_conv_tile, 3, gl, l);
    }
    s = ocl_set_args(e, OCL_K_conv_direct, 19, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(wb),
                     OCL_ARG(wo), OCL_ARG(bb), OCL_ARG(bo), OCL_ARG(has_b), OCL_ARG(zb),
                     OCL_ARG(zo), OCL_ARG(has_z), OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(Cg),
                     OCL_ARG(Mg), OCL_ARG(Gi), OCL_ARG(g), OCL_ARG(act), OCL_ARG(st->a),
                     OCL_ARG(st->b));
    if (s)
        return s;
    size_t gl[3] = {(size_t)g.o[2], (size_t)g.o[1], N * (size_t)M * (size_t)g.o[0]};
    size_t l[3] = {e->ctx->is_cpu ? ((size_t)g.o[2] >= 8 ? 8 : 1) : 16, 1, 1};
    return ocl_enqueue(e, OCL_K_conv_direct, 3, gl, l);
}

/* ---- Pools ------------------------------------------------------------------- */

typedef struct pool_state {
    ocl_state_head head;
    window w;
    int is_max, cip;
} pool_state;

minfer_status ocl_prepare_pool(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = ocl_in_desc(n, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs input X");
    minfer_status s;
    if ((s = ocl_need_float(p, 0)) || (s = ocl_check_size(p, x)))
        return s;
    pool_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->is_max = strcmp(n->op_type, "MaxPool") == 0;
    if (st->is_max && n->n_outputs > 1 && n->outputs[1].name && n->outputs[1].name[0])
        return ocl_decline(p, "Indices output not supported");
    int64_t k[8];
    size_t nk;
    if (ocl_attr_ints(p, "kernel_shape", k, 8, &nk) < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (nk == 0)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "kernel_shape is required");
    if (x->rank >= 0 && x->rank != (int32_t)nk + 2)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "kernel_shape does not match the input");
    if ((s = parse_window(p, &st->w, (int)nk, NULL)))
        return s;
    /* The pool kernel walks every tap of the window: one wider than the
     * input (a 2^31-tap kernel over padding) would take seconds per
     * element. The CPU provider visits only the taps inside the input. */
    for (size_t i = 0; i < nk && i < MAX_SP; i++) {
        int64_t in = x->rank >= 0 ? x->dims[2 + i] : -1;
        if (st->w.k[i] > (in >= 0 ? in : 4096))
            return ocl_decline(p, "a window of %lld taps is wider than the input",
                               (long long)st->w.k[i]);
    }
    st->cip = ocl_attr_int(p, "count_include_pad", 0) != 0;
    return MINFER_OK;
}

minfer_status ocl_execute_pool(const ocl_exec *e) {
    const pool_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    int64_t od[MAX_SP + 2];
    ocl_win3 g;
    if (!x || geometry(&st->w, x, &g, od))
        return ocl_fail(e, MINFER_ERR_SHAPE, "the window does not fit the input");
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    cl_mem xb, yb;
    cl_int xo, yo, is_max = st->is_max, cip = st->cip;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    minfer_status s = ocl_output(e, 0, x->rank, od, &yb, &yo);
    if (s)
        return s;
    if ((s = ocl_set_args(e, OCL_K_pool, 7, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(yb), OCL_ARG(yo),
                          OCL_ARG(g), OCL_ARG(is_max), OCL_ARG(cip))))
        return s;
    size_t gl[3] = {(size_t)g.o[2], (size_t)g.o[1], (size_t)(od[0] * od[1]) * (size_t)g.o[0]};
    size_t l[3] = {e->ctx->is_cpu ? ((size_t)g.o[2] >= 8 ? 8 : 1) : 16, 1, 1};
    return ocl_enqueue(e, OCL_K_pool, 3, gl, l);
}

minfer_status ocl_prepare_global_pool(ocl_prep *p) {
    const minfer_value_desc *x = ocl_in_desc(p->node, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs input X");
    minfer_status s;
    if ((s = ocl_need_float(p, 0)) || (s = ocl_check_size(p, x)))
        return s;
    if (x->rank >= 0 && x->rank < 3)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "input rank must be at least 3");
    pool_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->is_max = strcmp(p->node->op_type, "GlobalMaxPool") == 0;
    return MINFER_OK;
}

minfer_status ocl_execute_global_pool(const ocl_exec *e) {
    const pool_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x || x->rank < 3)
        return ocl_fail(e, MINFER_ERR_SHAPE, "input rank must be at least 3");
    int64_t od[OCL_MAX_RANK];
    od[0] = x->dims[0];
    od[1] = x->dims[1];
    for (int i = 2; i < x->rank; i++)
        od[i] = 1;
    cl_mem xb, yb;
    cl_int xo, yo, is_max = st->is_max, plane = (cl_int)ocl_numel(x->rank - 2, x->dims + 2);
    ocl_in_buf(e, 0, -1, &xb, &xo);
    minfer_status s = ocl_output(e, 0, x->rank, od, &yb, &yo);
    if (s)
        return s;
    if ((s = ocl_set_args(e, OCL_K_global_pool, 6, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(yb),
                          OCL_ARG(yo), OCL_ARG(plane), OCL_ARG(is_max))))
        return s;
    size_t gl[1] = {(size_t)(od[0] * od[1])}, l[1] = {1};
    return ocl_enqueue(e, OCL_K_global_pool, 1, gl, l);
}
