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
 * minfer:GatedConv is FusedConv with a fifth input, the gate S (one value
 * per image and input channel: a squeeze-excitation block's sigmoid),
 * multiplied into X as every kernel but CLBlast's loads it; a gated
 * convolution never takes the CLBlast back end.
 *
 * Where conv_tile runs, the work-group kernels conv_local1/2 (the same
 * arguments and packed weights; tiles of weights and gathered input in
 * local memory) are candidates too, forced by gemm=local1|local2 or
 * chosen by timing as below, on any rank and group.
 *
 * With CLBlast, a 2-D convolution of one group with symmetric pads and the
 * conv_tile kind of weights has a second back end: CLBlast's convgemm (one
 * kernel, im2col fused into its GEMM), then conv_epilogue for bias, Z and
 * the activation. Which one runs is chosen at prepare as for GEMM (gemm.c:
 * option gemm=, else by timing the candidates on the node's shapes, the
 * choice kept in the tuning cache, tune.c). With CLBlast the weights stay in ONNX's
 * layout, which conv_direct also reads, for calls convgemm does not take.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

#ifdef MINFER_OCL_CLBLAST
#include <clblast_c.h>
#endif

/* As in gemm.c: convolutions under a MFLOP are not timed, and a timing is
 * one warm-up and the fastest of TUNE_REPS runs. */
#define TUNE_MIN_FLOP (1 << 20)
#define TUNE_REPS 3

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
    ocl_state_head head; /* bufs[0]: weights (packed for tile), bufs[1]: bias,
                            bufs[2]: weights in ONNX layout while prepare times */
    window w;
    int64_t group;
    int tile;
    int backend; /* OCL_GEMM_OWN, OCL_GEMM_LOCAL* (tile 1: the packed weights), or
                    OCL_GEMM_CLBLAST (tile is then 0) */
    int act;
    float a, b;
    int fused;
    int gated; /* GatedConv: input 4 is the gate S */
} conv_state;

/* A convolution's operands for one launch: buffers, element offsets,
 * the window, batch N, output channels M and input channels per group Cg;
 * the gate s (has_s) with sn elements per image (0: one for the batch). */
typedef struct conv_io {
    cl_mem x, w, b, z, y;
    cl_int xo, wo, bo, zo, yo, has_b, has_z;
    ocl_win3 g;
    size_t N;
    int64_t M, Cg;
    cl_mem s;
    cl_int so, sn, has_s;
} conv_io;

static minfer_status conv_run(const ocl_exec *e, const conv_state *st, const conv_io *io);
static minfer_status pack_tile(ocl_prep *p, conv_state *st, const minfer_value_desc *wd);
static minfer_status choose_backend(ocl_prep *p, conv_state *st, const minfer_value_desc *x,
                                    const minfer_value_desc *wd, const minfer_value_desc *bd);

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
    st->gated = st->fused && strcmp(n->op_type, "GatedConv") == 0;
    if (st->gated && (n->n_inputs != 5 || !ocl_in_desc(n, 4)))
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "GatedConv takes X, W, B, Z and the gate S "
                             "(input 4)");
    if (!st->gated && st->fused && n->n_inputs > 4)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "FusedConv takes at most 4 inputs");
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
    int64_t M = known_w ? wd->dims[0] : -1;
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
    if (st->tile && (s = choose_backend(p, st, x, wd, bd)))
        return s;
    if (st->backend == OCL_GEMM_CLBLAST)
        st->tile = 0; /* ONNX layout, read by convgemm and conv_direct */
    if (st->head.bufs[0])
        return MINFER_OK; /* the winner's form, uploaded while timing */
    if (!st->tile)
        return ocl_upload_floats(p, 0, wd->const_data, wd->const_nbytes / sizeof(float));
    /* The kernel taps (kd, kh, kw) are contiguous in ONNX's layout and in
     * the packed one, so they pack as one flattened index t. */
    return pack_tile(p, st, wd);
}

/* Elements of the gate s per image when it broadcasts onto x [N, C, ...]
 * as [1 or N, C, 1...] (rank <= x's, leading 1s implied): C, or 0 for one
 * gate for every image (N == 1 included); -1 for any other shape. */
static cl_int gate_stride(const minfer_tensor_view *s, const minfer_tensor_view *x) {
    int off = x->rank - s->rank;
    if (off < 0 || off > 1 || x->rank < 3)
        return -1;
    for (int d = 2; d < x->rank; d++)
        if (s->dims[d - off] != 1)
            return -1;
    if (s->dims[1 - off] != x->dims[1])
        return -1;
    if (off == 1 || s->dims[0] == 1)
        return 0;
    return s->dims[0] == x->dims[0] ? (cl_int)x->dims[1] : -1;
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
    cl_int sn = 0;
    if (st->gated) {
        const minfer_tensor_view *sv = ocl_input(e, 4);
        if (!sv || (sn = gate_stride(sv, x)) < 0)
            return ocl_fail(e, MINFER_ERR_SHAPE, "the gate S must broadcast onto X as one value "
                            "per channel (%lld), or per image and channel",
                            (long long)x->dims[1]);
    }
    ocl_in_buf(e, 0, -1, &xb, &xo);
    ocl_in_buf(e, 1, 0, &wb, &wo);
    ocl_in_buf(e, 2, 1, &bb, &bo);
    ocl_in_buf(e, 3, -1, &zb, &zo);
    conv_io io = {xb, wb, bb, zb, yb, xo, wo, bo, zo, yo, b != NULL, z != NULL, g,
                  (size_t)x->dims[0], M, w->dims[1], xb, 0, sn, st->gated};
    if (st->gated)
        ocl_in_buf(e, 4, -1, &io.s, &io.so);
    return conv_run(e, st, &io);
}

/* ---- Running one ------------------------------------------------------------ */

#ifdef MINFER_OCL_CLBLAST
/* Whether CLBlast's convgemm takes this window: 2-D, one group, the same
 * pad at both ends of each dimension. */
static int convgemm_fits(const conv_state *st, const ocl_win3 *g) {
    return st->w.nsp == 2 && st->group == 1 && g->e[1] - g->i[1] == g->p[1] &&
           g->e[2] - g->i[2] == g->p[2];
}

static minfer_status convgemm_run(const ocl_exec *e, const conv_state *st, const conv_io *io) {
    ocl_ctx *ctx = e->ctx;
    const ocl_win3 *g = &io->g;
    cl_command_queue q = ctx->queue;
    size_t C = (size_t)io->Cg, M = (size_t)io->M;
    CLBlastStatusCode rc =
        (ctx->fp16 ? CLBlastHconvgemm : CLBlastSconvgemm)(
            CLBlastKernelModeCrossCorrelation, C, (size_t)g->i[1], (size_t)g->i[2],
            (size_t)g->k[1], (size_t)g->k[2], (size_t)g->p[1], (size_t)g->p[2],
            (size_t)g->s[1], (size_t)g->s[2], (size_t)g->d[1], (size_t)g->d[2], M, io->N,
            io->x, (size_t)io->xo, io->w, (size_t)io->wo, io->y, (size_t)io->yo, &q, NULL);
    if (rc != CLBlastSuccess)
        return ocl_fail(e, MINFER_ERR_PROVIDER, "CLBlast convgemm (%zu -> %zu channels, "
                        "%dx%d kernel) failed with status %d", C, M, g->k[1], g->k[2], (int)rc);
    ocl_count_launch(ctx);
    cl_int P = g->o[1] * g->o[2], Mi = (cl_int)M, act = st->act;
    if (!io->has_b && !io->has_z && act == OCL_ACT_NONE)
        return MINFER_OK;
    minfer_status s = ocl_set_args(e, OCL_K_conv_epilogue, 12, OCL_ARG(io->y), OCL_ARG(io->yo),
                                   OCL_ARG(P), OCL_ARG(Mi), OCL_ARG(io->b), OCL_ARG(io->has_b),
                                   OCL_ARG(io->z), OCL_ARG(io->zo), OCL_ARG(io->has_z),
                                   OCL_ARG(act), OCL_ARG(st->a), OCL_ARG(st->b));
    if (s)
        return s;
    size_t gl[2] = {(size_t)P, io->N * M};
    return ocl_launch(e, OCL_K_conv_epilogue, 2, gl, 0);
}
#endif

static minfer_status conv_run(const ocl_exec *e, const conv_state *st, const conv_io *io) {
#ifdef MINFER_OCL_CLBLAST
    if (st->backend == OCL_GEMM_CLBLAST && convgemm_fits(st, &io->g))
        return convgemm_run(e, st, io);
#endif
    cl_mem xb = io->x, wb = io->w, bb = io->has_b ? io->b : io->y,
           zb = io->has_z ? io->z : io->y, yb = io->y;
    cl_mem sb = io->has_s ? io->s : io->y;
    cl_int xo = io->xo, wo = io->wo, bo = io->bo, zo = io->zo, yo = io->yo;
    cl_int has_b = io->has_b, has_z = io->has_z, so = io->so, sn = io->sn, has_s = io->has_s;
    ocl_win3 g = io->g;
    int64_t M = io->M, G = st->group;
    cl_int Cg = (cl_int)io->Cg, Mg = (cl_int)(M / G), Gi = (cl_int)G, act = st->act;
    size_t N = io->N, P = (size_t)g.o[0] * (size_t)g.o[1] * (size_t)g.o[2];
    minfer_status s;
    if (st->tile) {
        /* Packed weights and the bias were uploaded at prepare (offset 0).
         * The work-group kernels take conv_tile's arguments. */
        ocl_ltile lt;
        int local = ocl_local_tile(e->ctx, st->backend, 1, &lt);
        int k = local ? lt.kernel : OCL_K_conv_tile;
        s = ocl_set_args(e, k, 21, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(wb),
                         OCL_ARG(bb), OCL_ARG(has_b), OCL_ARG(zb), OCL_ARG(zo), OCL_ARG(has_z),
                         OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(Cg), OCL_ARG(Mg), OCL_ARG(Gi),
                         OCL_ARG(g), OCL_ARG(act), OCL_ARG(st->a), OCL_ARG(st->b), OCL_ARG(sb),
                         OCL_ARG(so), OCL_ARG(sn), OCL_ARG(has_s));
        if (s)
            return s;
        if (local) {
            size_t gl[3] = {(P + (size_t)lt.tn - 1) / (size_t)lt.tn * (size_t)lt.wx,
                            ((size_t)Mg + (size_t)lt.tm - 1) / (size_t)lt.tm * (size_t)lt.wy,
                            N * (size_t)G};
            size_t l[3] = {(size_t)lt.wx, (size_t)lt.wy, 1};
            return ocl_enqueue(e, k, 3, gl, l);
        }
        size_t nr = 2 * (size_t)e->ctx->vw, mr = (size_t)e->ctx->mr;
        size_t gl[3] = {(P + mr - 1) / mr, ((size_t)Mg + nr - 1) / nr, N * (size_t)G};
        return ocl_launch(e, OCL_K_conv_tile, 3, gl, 1);
    }
    s = ocl_set_args(e, OCL_K_conv_direct, 23, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(wb),
                     OCL_ARG(wo), OCL_ARG(bb), OCL_ARG(bo), OCL_ARG(has_b), OCL_ARG(zb),
                     OCL_ARG(zo), OCL_ARG(has_z), OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(Cg),
                     OCL_ARG(Mg), OCL_ARG(Gi), OCL_ARG(g), OCL_ARG(act), OCL_ARG(st->a),
                     OCL_ARG(st->b), OCL_ARG(sb), OCL_ARG(so), OCL_ARG(sn), OCL_ARG(has_s));
    if (s)
        return s;
    size_t gl[3] = {(size_t)g.o[2], (size_t)g.o[1], N * (size_t)M * (size_t)g.o[0]};
    return ocl_launch(e, OCL_K_conv_direct, 3, gl, 0);
}

/* ---- Choosing the back end ------------------------------------------------- */

/* Packs the constant weights for conv_tile into bufs[0]. */
static minfer_status pack_tile(ocl_prep *p, conv_state *st, const minfer_value_desc *wd) {
    int rank = wd->rank;
    int64_t Mg = wd->dims[0] / st->group, Cg = wd->dims[1];
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
    minfer_status s = ocl_upload_floats(p, 0, pk, count);
    free(pk);
    return s;
}

/* A zeroed scratch buffer of count stored floats (NULL on failure). */
static cl_mem scratch(ocl_ctx *ctx, size_t count) {
    size_t bytes = (count ? count : 1) * (ctx->fp16 ? 2 : 4);
    cl_int err;
    cl_mem m = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return NULL;
    cl_ushort zero = 0;
    if (clEnqueueFillBuffer(ctx->queue, m, &zero, 2, 0, bytes, 0, NULL, NULL) != CL_SUCCESS) {
        clReleaseMemObject(m);
        return NULL;
    }
    return m;
}

/* The back end's name, for the log. */
static const char *backend_name(int b) {
    return b == OCL_GEMM_CLBLAST ? "CLBlast" : b == OCL_GEMM_LOCAL1 ? "local1"
           : b == OCL_GEMM_LOCAL2 ? "local2" : "own kernel";
}

/* Times the n candidates (ms[i] for cand[i], own first) on scratch input
 * and output with the node's weights in their forms (bufs[0] packed,
 * bufs[2] as given, for CLBlast). */
static minfer_status measure(ocl_prep *p, conv_state *st, conv_io *io, const int *cand, int n,
                             double *ms) {
    ocl_ctx *ctx = p->ctx;
    minfer_exec_args args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.node = p->node;
    ocl_kset *ks = ocl_kset_take(ctx);
    if (!ks)
        return MINFER_ERR_PROVIDER;
    ocl_exec e = {ctx, st, &args, ks->k};
    const ocl_win3 *g = &io->g;
    size_t P = (size_t)g->o[0] * (size_t)g->o[1] * (size_t)g->o[2];
    size_t DHW = (size_t)g->i[0] * (size_t)g->i[1] * (size_t)g->i[2];
    cl_mem x = scratch(ctx, io->N * (size_t)st->group * (size_t)io->Cg * DHW);
    cl_mem y = scratch(ctx, io->N * (size_t)io->M * P);
    minfer_status s = MINFER_OK;
    if (!x || !y)
        s = ocl_prep_fail(p, MINFER_ERR_NOMEM, "no scratch memory to time the convolution");
    io->x = x;
    io->y = y;
    if (!io->has_b)
        io->b = y;
    io->z = y;
    for (int which = 0; which < n && s == MINFER_OK; which++) {
        int clb = cand[which] == OCL_GEMM_CLBLAST;
        st->backend = cand[which];
        st->tile = !clb;
        io->w = st->head.bufs[clb ? 2 : 0];
        /* A warm-up, then up to TUNE_REPS timed runs, of which the
         * fastest counts (a busy machine only ever adds time); a later
         * candidate stops once it is twice as slow as the first. */
        double best = 1e30;
        for (int r = 0; r <= TUNE_REPS && s == MINFER_OK; r++) {
            double t0 = ocl_now_ms();
            s = conv_run(&e, st, io);
            clFinish(ctx->queue);
            double t = ocl_now_ms() - t0;
            if (r > 0 && t < best)
                best = t;
            if (which && r > 0 && best > 2.0 * ms[0])
                break;
        }
        ms[which] = best;
        if (s != MINFER_OK && which > 0) { /* failed here: the others serve */
            ctx->api->log(ctx->host, MINFER_LOG_WARN, "opencl: node '%s': %s failed while "
                          "timing; not using it", p->node->name, backend_name(cand[which]));
            ms[which] = 1e30;
            s = MINFER_OK;
        }
    }
    st->tile = 1;
    if (x)
        clReleaseMemObject(x);
    if (y)
        clReleaseMemObject(y);
    ocl_kset_give(ctx, ks);
    return s;
}

/* Sets st->backend for a convolution conv_tile could run (constant weights
 * and bias): own, a work-group kernel (conv_local*, any rank and group) or
 * CLBlast's convgemm (2-D, one group), by option or by timing (gemm.c's
 * rules: shapes known at prepare and over TUNE_MIN_FLOP, the candidates
 * the device's probes keep, the choice in the tuning cache). When it
 * times, the weights are uploaded in the candidates' forms and the
 * loser's released. */
static minfer_status choose_backend(ocl_prep *p, conv_state *st, const minfer_value_desc *x,
                                    const minfer_value_desc *wd, const minfer_value_desc *bd) {
    st->backend = OCL_GEMM_OWN;
    ocl_ctx *ctx = p->ctx;
    int mode = ctx->gemm_mode;
    ocl_ltile lt;
#ifdef MINFER_OCL_CLBLAST
    int clblast = (!ctx->fp16 || ctx->khr_fp16) && st->w.nsp == 2 && st->group == 1 &&
                  !st->gated; /* convgemm reads X as it is */
#else
    int clblast = 0;
#endif
    if (mode == OCL_GEMM_OWN)
        return MINFER_OK;
    if (OCL_GEMM_IS_LOCAL(mode) || mode == OCL_GEMM_CLBLAST) {
        if (OCL_GEMM_IS_LOCAL(mode) ? ocl_local_tile(ctx, mode, 1, &lt) : clblast) {
            st->backend = mode;
            ctx->api->log(ctx->host, MINFER_LOG_INFO, "opencl: node '%s': convolution on %s "
                          "(gemm=%s)", p->node->name, backend_name(mode),
                          mode == OCL_GEMM_CLBLAST ? "clblast" : backend_name(mode));
        }
        return MINFER_OK;
    }
    /* auto: the shape must be known and the work worth timing */
    minfer_tensor_view xv;
    memset(&xv, 0, sizeof xv);
    xv.rank = x->rank;
    for (int i = 0; i < x->rank && i < MINFER_MAX_RANK; i++)
        if ((xv.dims[i] = x->dims[i]) < 0)
            return MINFER_OK;
    int64_t od[MAX_SP + 2];
    conv_io io;
    memset(&io, 0, sizeof io);
    if (geometry(&st->w, &xv, &io.g, od))
        return MINFER_OK;
    const ocl_win3 *g = &io.g;
    /* convgemm takes symmetric pads only */
    clblast = clblast && g->e[1] - g->i[1] == g->p[1] && g->e[2] - g->i[2] == g->p[2];
    io.N = (size_t)x->dims[0];
    io.M = wd->dims[0];
    io.Cg = wd->dims[1];
    double flop = 2.0 * (double)io.N * (double)io.M * (double)io.Cg * (double)g->k[0] *
                  (double)g->k[1] * (double)g->k[2] * (double)g->o[0] * (double)g->o[1] *
                  (double)g->o[2];
    if (flop < TUNE_MIN_FLOP)
        return MINFER_OK;
    char key[240];
    snprintf(key, sizeof key, "conv2:%s:N%zu:C%lld:D%d:H%d:W%d:M%lld:g%lld:k%dx%dx%d:s%dx%dx%d:"
             "p%dx%dx%d:e%dx%dx%d:d%dx%dx%d", ctx->fp16 ? "f16" : "f32", io.N,
             (long long)io.Cg, g->i[0], g->i[1], g->i[2], (long long)io.M,
             (long long)st->group, g->k[0], g->k[1], g->k[2], g->s[0], g->s[1], g->s[2],
             g->p[0], g->p[1], g->p[2], g->e[0], g->e[1], g->e[2], g->d[0], g->d[1], g->d[2]);
    int choice;
    if (ocl_tune_get(ctx, key, &choice)) {
        /* A value this build or device cannot run reads as own. */
        if ((choice == OCL_GEMM_CLBLAST && clblast) ||
            (OCL_GEMM_IS_LOCAL(choice) && ocl_local_tile(ctx, choice, 1, &lt)))
            st->backend = choice;
        if (st->backend != OCL_GEMM_OWN)
            ctx->api->log(ctx->host, MINFER_LOG_INFO, "opencl: node '%s': convolution on %s "
                          "(tuning cache)", p->node->name, backend_name(st->backend));
        return MINFER_OK;
    }
    int cand[2 + OCL_GEMM_LOCAL2 - OCL_GEMM_LOCAL1 + 1], n = 0;
    cand[n++] = OCL_GEMM_OWN;
    if (clblast && ocl_clblast_promising(p))
        cand[n++] = OCL_GEMM_CLBLAST;
    else
        clblast = 0;
    if (ocl_local_promising(p))
        for (int b = OCL_GEMM_LOCAL1; b <= OCL_GEMM_LOCAL2; b++)
            if (ocl_local_tile(ctx, b, 1, &lt))
                cand[n++] = b;
    if (n == 1)
        return MINFER_OK;
    minfer_status s;
    if ((s = pack_tile(p, st, wd)) ||
        (clblast &&
         (s = ocl_upload_floats(p, 2, wd->const_data, wd->const_nbytes / sizeof(float)))))
        return s;
    io.has_b = bd != NULL;
    io.b = st->head.bufs[1];
    double ms[2 + OCL_GEMM_LOCAL2 - OCL_GEMM_LOCAL1 + 1];
    if ((s = measure(p, st, &io, cand, n, ms)))
        return s;
    int best = 0;
    for (int i = 1; i < n; i++)
        if (ms[i] < ms[best])
            best = i;
    st->backend = cand[best];
    ocl_tune_put(ctx, key, st->backend, ms, n);
    char line[160];
    int len = 0;
    for (int i = 0; i < n && len >= 0 && (size_t)len < sizeof line; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, "%s %.3f ms, ",
                        backend_name(cand[i]), ms[i]);
    ctx->api->log(ctx->host, MINFER_LOG_INFO, "opencl: %s: %s%s", key, line,
                  backend_name(st->backend));
    /* Keep the winner's form in bufs[0]. */
    if (st->backend == OCL_GEMM_CLBLAST) {
        clReleaseMemObject(st->head.bufs[0]);
        st->head.bufs[0] = st->head.bufs[2];
        st->head.bufs[2] = NULL;
    } else if (st->head.bufs[2]) {
        clReleaseMemObject(st->head.bufs[2]);
        st->head.bufs[2] = NULL;
    }
    return MINFER_OK;
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
    /* The pool kernel walks every tap of the window: one much wider than
     * the input (a 2^31-tap kernel over padding) would take seconds per
     * element. The CPU provider visits only the taps inside the input. Up
     * to 64 taps the walk costs nothing: GoogLeNet's 3x3 pools over a 2x2
     * map (small images) stay here. */
    for (size_t i = 0; i < nk && i < MAX_SP; i++) {
        int64_t in = x->rank >= 0 ? x->dims[2 + i] : -1;
        if (st->w.k[i] > (in >= 0 ? in : 4096) && st->w.k[i] > 64)
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
    return ocl_launch(e, OCL_K_pool, 3, gl, 0);
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
    cl_int nnc = (cl_int)(od[0] * od[1]);
    if ((s = ocl_set_args(e, OCL_K_global_pool, 7, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(yb),
                          OCL_ARG(yo), OCL_ARG(plane), OCL_ARG(is_max), OCL_ARG(nnc))))
        return s;
    return ocl_launch1(e, OCL_K_global_pool, (size_t)nnc);
}
