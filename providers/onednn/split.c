/*
 * Splitting a node into pieces that run side by side (see dnn_split in
 * onednn.h).
 *
 * Why: oneDNN threads with OpenMP, whose workers sleep between parallel
 * regions (OMP_WAIT_POLICY=passive, see shim.c) and take tens of
 * microseconds to wake on a virtual machine, and whose static partitioning
 * makes a region wait for a worker whose CPU another process holds. The
 * host's pool spins briefly between jobs and lets the caller take the
 * chunks a late worker has not started, so a node cut into one-thread
 * pieces runs on two CPUs when they are free and on one, at about the
 * one-thread time, when they are not.
 *
 * What splits, keeping the whole tensors' layouts (a piece must read and
 * write dense slices of the same buffers):
 * - Conv and FusedConv: by images when the batch has at least two, else by
 *   output rows (the first spatial axis) when X, Y and the residual Z are
 *   channels-last (NHWC and its 1-D and 3-D forms), the layout oneDNN 2.6
 *   chooses for float32 convolutions on AVX-512; by output channels when
 *   the rows cut unevenly (7 rows in 2 pieces) or the convolution is
 *   weight-bound (its weights outnumber its input and output elements),
 *   each piece writing its channels densely and a reorder placing them,
 *   in near-equal pieces of whole 16-channel blocks. A piece reads the input
 *   rows its output rows need; its paddings are what the whole node's
 *   geometry leaves at its edges (always >= 0).
 * - MaxPool and AveragePool: the same, without Z.
 * - Concat along channels: by images, or by rows when every input and the
 *   output are channels-last; only one whose inputs arrive in mixed layouts
 *   gets here, since one in a single layout without blocks runs as copies
 *   that cut themselves (concat.c).
 * - MatMul and FusedMatMul with a 2-D B (A's leading axes folded into
 *   rows), Gemm and FusedGemm without transA and with a C that broadcasts
 *   along rows: by rows of A and Y (plain row-major); a one-row Gemm with
 *   transB (a classifier at batch 1) by output columns.
 * - Elementwise ops, LayerNormalization, Softmax and minfer:Attention on
 *   plain tensors: along the first axis of extent > 1, when the op works
 *   across later axes only.
 */
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

enum { SPLIT_NONE, SPLIT_BATCH, SPLIT_ROWS };

/* The layouts a split keeps dense, by rank (3 to 5): kind 0 plain, kind 1
 * channels-last. */
static const dnnl_format_tag_t kind_tags[2][6] = {
    {0, 0, 0, dnnl_abc, dnnl_abcd, dnnl_abcde},
    {0, 0, 0, dnnl_acb, dnnl_acdb, dnnl_acdeb},
};

static dnnl_status_t md_of_kind(dnnl_memory_desc_t *md, int kind, int rank, const int64_t *dims) {
    dnnl_dims_t d;
    if (rank < 3 || rank > 5)
        return dnnl_invalid_arguments;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    return dnnl_memory_desc_init_by_tag(md, rank, d, dnnl_f32, kind_tags[kind != 0][rank]);
}

/* Which kind md is; -1 when neither. */
static int md_tag_kind(const dnnl_memory_desc_t *md, int *kind) {
    if (md->ndims < 3 || md->ndims > 5 || md->data_type != dnnl_f32)
        return -1;
    for (int k = 0; k < 2; k++) {
        dnnl_memory_desc_t t;
        if (md_of_kind(&t, k, md->ndims, md->dims) == dnnl_success &&
            dnnl_memory_desc_equal(&t, md)) {
            *kind = k;
            return 0;
        }
    }
    return -1;
}

/* The md value v arrives in at the whole node (its registered layout or
 * plain); -1 when it is neither plain nor channels-last. */
static int value_kind(dnn_ctx *ctx, const minfer_value_desc *v, uint64_t layout, int *kind) {
    if (!layout) {
        *kind = 0;
        return v->rank >= 3 && v->rank <= 5 ? 0 : -1;
    }
    const dnn_layout *l = dnn_layout_get(ctx, layout);
    return l ? md_tag_kind(&l->md, kind) : -1;
}

/* Cuts [0, total) into n near-equal parts: part j is [lo[j], lo[j + 1]). */
static void cut(int64_t total, int n, int64_t *lo) {
    for (int j = 0; j <= n; j++)
        lo[j] = total * j / n;
}

typedef struct piece_plan {
    int n;
    int own_weights;
    const char *by; /* what the pieces cut: "rows", "images", "channels" */
    minfer_value_desc in[DNN_MAX_PIECES][DNN_PIECE_INPUTS];
    minfer_value_desc out[DNN_MAX_PIECES];
    dnn_piece_io io[DNN_MAX_PIECES];
    size_t in_off[DNN_MAX_PIECES][DNN_PIECE_INPUTS];
    size_t out_off[DNN_MAX_PIECES];
} piece_plan;

/* Every piece starts as the whole node; a planner cuts it. */
static void reset_pieces(piece_plan *pp, const minfer_node_desc *node) {
    for (int j = 0; j < DNN_MAX_PIECES; j++) {
        memcpy(pp->in[j], node->inputs, node->n_inputs * sizeof pp->in[j][0]);
        pp->out[j] = node->outputs[0];
    }
}

/* A reading of the whole node's attributes for the window geometry (wk:
 * the weights' kernel, NULL for a pool). */
static minfer_status read_window(dnn_ctx *ctx, const minfer_node_desc *node, int nsp,
                                 const int64_t *wk, dnn_window *w) {
    char why[256];
    dnn_b b = {0};
    b.ctx = ctx;
    b.node = node;
    b.check = 1;
    b.why = why;
    b.why_size = sizeof why;
    return dnn_window_parse(&b, nsp, wk, w);
}

/* md of a channel slice [c0, c0 + dims[1]) of a channels-last tensor of
 * full dims: the whole tensor's strides, so not dense. */
static dnnl_status_t channel_slice_md(dnnl_memory_desc_t *md, int rank, const int64_t *full,
                                      const int64_t *dims) {
    dnnl_dims_t d, st;
    int64_t stride = full[1];
    st[1] = 1;
    for (int i = rank - 1; i >= 2; i--) {
        st[i] = stride;
        stride *= full[i];
    }
    st[0] = stride;
    for (int i = 0; i < rank; i++)
        d[i] = dims[i];
    return dnnl_memory_desc_init_by_strides(md, rank, d, dnnl_f32, st);
}

/* A convolution split by output channels: each piece reads all of X,
 * packs its slice of W (and reads its slice of the bias), and writes a
 * dense buffer of its channels that a reorder (which also brings in Z's
 * slice first) moves into the channels-last output. Taken where rows
 * would cost more: a one-image convolution whose output rows cut unevenly
 * (7 rows in 2 pieces: 4 and 3), and a weight-bound one (see plan_window),
 * where row pieces would each stream all of W. The pieces hold whole
 * blocks of 16 channels where M has them (oneDNN's AVX-512 blocking), at
 * least 16 channels each, near-equal but not necessarily equal (64
 * channels in 3 pieces: 16, 16, 32), so that any thread count cuts. At
 * most threads pieces. */
static int plan_channels(const minfer_node_desc *node, int kx, int ky, int kz, int threads,
                         const int64_t *pl, const int64_t *pr, piece_plan *pp) {
    const minfer_value_desc *x = &node->inputs[0], *w = &node->inputs[1], *y = &node->outputs[0];
    int has_z = node->n_inputs > 3 && node->inputs[3].present;
    int64_t M = w->dims[0], lo[DNN_MAX_PIECES + 1];
    if (kx != 1 || ky != 1 || (has_z && kz != 1) || !w->const_data)
        return -1;
    int64_t unit = M % 16 == 0 ? 16 : M % 8 == 0 ? 8 : 1, units = M / unit;
    int n = threads;
    while (n > 1 && (M / n < 16 || n > units))
        n--;
    if (n < 2)
        return -1;
    cut(units, n, lo);
    int64_t per = dnn_numel(w->rank - 1, w->dims + 1);
    pp->n = n;
    pp->own_weights = 1;
    pp->by = "output channels";
    for (int j = 0; j < n; j++) {
        minfer_value_desc *in = pp->in[j];
        dnn_piece_io *io = &pp->io[j];
        int64_t c0 = lo[j] * unit, Mp = (lo[j + 1] - lo[j]) * unit;
        pp->out[j].dims[1] = Mp;
        for (int i = 0; i < x->rank - 2; i++) {
            io->pl[i] = pl[i];
            io->pr[i] = pr[i];
        }
        in[1].dims[0] = Mp;
        in[1].const_data = (const float *)w->const_data + (size_t)(c0 * per);
        in[1].const_nbytes = (size_t)(Mp * per) * sizeof(float);
        pp->in_off[j][1] = (size_t)(c0 * per) * sizeof(float);
        if (node->n_inputs > 2 && in[2].present) {
            in[2].dims[0] = Mp;
            if (in[2].const_data) {
                in[2].const_data = (const float *)in[2].const_data + (size_t)c0;
                in[2].const_nbytes = (size_t)Mp * sizeof(float);
            }
            pp->in_off[j][2] = (size_t)c0 * sizeof(float);
        }
        pp->out_off[j] = (size_t)c0 * sizeof(float);
        io->dst_any = 1;
        if (md_of_kind(&io->in[0], kx, x->rank, x->dims) != dnnl_success ||
            channel_slice_md(&io->out, y->rank, y->dims, pp->out[j].dims) != dnnl_success)
            return -1;
        if (has_z) {
            in[3].dims[1] = Mp;
            io->in[3] = io->out;
            pp->in_off[j][3] = pp->out_off[j];
        }
    }
    return 0;
}

/* Conv, FusedConv (pool 0) and MaxPool, AveragePool (pool 1). */
static int plan_window(dnn_ctx *ctx, const minfer_node_desc *node, const dnn_node *full,
                       const uint64_t *out_layouts, int threads, int pool, piece_plan *pp) {
    const minfer_value_desc *x = &node->inputs[0], *y = &node->outputs[0];
    int has_z = !pool && !strcmp(node->domain, "minfer") && node->n_inputs > 3 &&
                node->inputs[3].present;
    int nsp = x->rank - 2, kx, ky, kz = 1;
    if (x->rank < 3 || x->rank > 5 || y->rank != x->rank)
        return -1;
    if (!pool && (node->n_inputs < 2 || !node->inputs[1].present ||
                  node->inputs[1].rank != x->rank))
        return -1;
    if (value_kind(ctx, x, full->in_layout[0], &kx) || value_kind(ctx, y, out_layouts[0], &ky) ||
        (has_z && value_kind(ctx, &node->inputs[3], full->in_layout[3], &kz)))
        return -1;
    dnn_window w;
    int64_t od[DNN_MAX_SPATIAL], pl[DNN_MAX_SPATIAL], pr[DNN_MAX_SPATIAL];
    int64_t ceil_mode = 0;
    if (pool)
        ctx->api->attr_int(node, "ceil_mode", &ceil_mode);
    if (read_window(ctx, node, nsp, pool ? NULL : node->inputs[1].dims + 2, &w) != MINFER_OK ||
        dnn_window_out(&w, x->dims + 2, ceil_mode != 0, od, pl, pr))
        return -1;
    for (int i = 0; i < nsp; i++)
        if (od[i] != y->dims[2 + i])
            return -1;
    int64_t N = x->dims[0], lo[DNN_MAX_PIECES + 1];
    /* Rows: Y and Z must be channels-last for their row slices to be
     * dense; a plain (NCHW) X is read as a strided slice and reordered by
     * the piece into the layout its primitive picks. */
    int mode = N >= 2 ? SPLIT_BATCH : ky == 1 && kz == 1 ? SPLIT_ROWS : SPLIT_NONE;
    int64_t extent = mode == SPLIT_BATCH ? N : od[0];
    int n = threads;
    /* Output channels instead where rows would cut unevenly (more than
     * 10 % lost), or where the convolution is weight-bound: its weights
     * outnumber the elements it reads and writes (the late layers of a
     * ResNet: 3x3, 512 channels, 7x7 rows), so that row pieces, each
     * streaming all of W through its core's cache, would scale little,
     * while channel pieces read a slice of W each and X (small) whole.
     * Measured on ResNeXt's layer 3 and 4 convolutions at 2 threads:
     * 1.1 ms in row pieces, 0.65 ms in channel pieces. */
    int64_t group = 1;
    if (!pool)
        ctx->api->attr_int(node, "group", &group);
    int weight_bound = !pool && dnn_numel(node->inputs[1].rank, node->inputs[1].dims) >
                                    dnn_numel(x->rank, x->dims) + dnn_numel(y->rank, y->dims);
    int uneven = mode == SPLIT_ROWS && ((od[0] + n - 1) / n * n) * 10 > od[0] * 11;
    if (mode != SPLIT_NONE && !pool && group == 1 && (uneven || weight_bound) &&
        plan_channels(node, kx, ky, kz, n, pl, pr, pp) == 0)
        return 0;
    reset_pieces(pp, node); /* what plan_channels may have cut */
    if (mode == SPLIT_NONE)
        return -1;
    if (extent < n)
        n = (int)extent;
    if (n < 2)
        return -1;
    cut(extent, n, lo);
    pp->by = mode == SPLIT_BATCH ? "images" : "output rows";
    /* Bytes per image and per row (first spatial axis) of X and Y. */
    size_t x_img = (size_t)dnn_numel(x->rank - 1, x->dims + 1) * sizeof(float);
    size_t y_img = (size_t)dnn_numel(y->rank - 1, y->dims + 1) * sizeof(float);
    size_t x_row = kx ? x_img / (size_t)x->dims[2]
                      : (size_t)dnn_numel(x->rank - 3, x->dims + 3) * sizeof(float);
    size_t y_row = y_img / (size_t)y->dims[2];
    int64_t s = w.stride[0], dk = (w.kernel[0] - 1) * w.dil[0] + 1, H = x->dims[2];
    pp->n = n;
    for (int j = 0; j < n; j++) {
        minfer_value_desc *in = pp->in[j];
        dnn_piece_io *io = &pp->io[j];
        for (int i = 0; i < nsp; i++) {
            io->pl[i] = pl[i];
            io->pr[i] = pr[i];
        }
        if (mode == SPLIT_BATCH) {
            in[0].dims[0] = pp->out[j].dims[0] = lo[j + 1] - lo[j];
            pp->in_off[j][0] = (size_t)lo[j] * x_img;
            pp->out_off[j] = (size_t)lo[j] * y_img;
        } else {
            int64_t o0 = lo[j], o1 = lo[j + 1];
            int64_t a = o0 * s - pl[0], e = (o1 - 1) * s - pl[0] + dk;
            int64_t i0 = a > 0 ? a : 0, i1 = e < H ? e : H;
            if (i1 <= i0)
                return -1; /* a piece reading only padding */
            in[0].dims[2] = i1 - i0;
            pp->out[j].dims[2] = o1 - o0;
            io->pl[0] = i0 - a;
            io->pr[0] = e - i1;
            pp->in_off[j][0] = (size_t)i0 * x_row;
            pp->out_off[j] = (size_t)o0 * y_row;
        }
        if (has_z) {
            in[3].dims[0] = pp->out[j].dims[0];
            in[3].dims[2] = pp->out[j].dims[2];
            pp->in_off[j][3] = pp->out_off[j];
        }
        dnnl_status_t sx;
        if (mode == SPLIT_ROWS && kx == 0) {
            /* the rows of every channel plane, with the whole tensor's strides */
            dnnl_dims_t d, st;
            int64_t stride = 1;
            for (int i = x->rank - 1; i >= 0; i--) {
                d[i] = in[0].dims[i];
                st[i] = stride;
                stride *= x->dims[i];
            }
            sx = dnnl_memory_desc_init_by_strides(&io->in[0], x->rank, d, dnnl_f32, st);
            io->src_any = 1;
        } else {
            sx = md_of_kind(&io->in[0], kx, in[0].rank, in[0].dims);
            io->src_any = kx == 0; /* plain images: the piece picks, as the node did */
        }
        if (sx != dnnl_success ||
            md_of_kind(&io->out, ky, y->rank, pp->out[j].dims) != dnnl_success ||
            (has_z && md_of_kind(&io->in[3], kz, in[3].rank, in[3].dims) != dnnl_success))
            return -1;
    }
    return 0;
}

/* A Gemm of one row (a classifier at batch 1) with transB: by output
 * columns, each piece packing its rows of W ([N, K]) and reading its slice
 * of C; Y's column slices of one row are dense. */
static int plan_cols(dnn_ctx *ctx, const minfer_node_desc *node, int threads, piece_plan *pp) {
    const minfer_value_desc *a = &node->inputs[0], *w = &node->inputs[1], *y = &node->outputs[0];
    const minfer_value_desc *c = node->n_inputs > 2 && node->inputs[2].present
                                     ? &node->inputs[2] : NULL;
    int64_t tb = 0;
    ctx->api->attr_int(node, "transB", &tb);
    if (!tb || a->rank != 2 || a->dims[0] != 1 || w->rank != 2 || !w->const_data ||
        y->rank != 2 || (c && dnn_numel(c->rank, c->dims) != y->dims[1]))
        return -1;
    int64_t N = w->dims[0], K = w->dims[1], lo[DNN_MAX_PIECES + 1];
    int n = threads;
    while (n > 1 && N / n < 64)
        n--;
    if (n < 2)
        return -1;
    cut(N, n, lo);
    pp->n = n;
    pp->own_weights = 1;
    pp->by = "output columns";
    for (int j = 0; j < n; j++) {
        minfer_value_desc *in = pp->in[j];
        int64_t nc = lo[j + 1] - lo[j];
        pp->out[j].dims[1] = nc;
        in[1].dims[0] = nc;
        in[1].const_data = (const float *)w->const_data + (size_t)(lo[j] * K);
        in[1].const_nbytes = (size_t)(nc * K) * sizeof(float);
        pp->in_off[j][1] = (size_t)(lo[j] * K) * sizeof(float);
        if (c) {
            in[2].dims[in[2].rank - 1] = nc;
            if (in[2].const_data) {
                in[2].const_data = (const float *)c->const_data + (size_t)lo[j];
                in[2].const_nbytes = (size_t)nc * sizeof(float);
            }
            pp->in_off[j][2] = (size_t)lo[j] * sizeof(float);
        }
        pp->out_off[j] = (size_t)lo[j] * sizeof(float);
        if (dnn_plain_md(&pp->io[j].out, 2, pp->out[j].dims) != dnnl_success)
            return -1;
    }
    return 0;
}

/* Rows of a matrix product: A [rows, K] (leading axes folded), Y [rows, N]. */
static int plan_rows(dnn_ctx *ctx, const minfer_node_desc *node, const dnn_node *full,
                     const uint64_t *out_layouts, int threads, piece_plan *pp) {
    const minfer_value_desc *a = &node->inputs[0], *b = &node->inputs[1], *y = &node->outputs[0];
    int gemm = strstr(node->op_type, "Gemm") != NULL;
    if (node->n_inputs < 2 || !b->present || a->rank < 2 || y->rank < 2 ||
        full->in_layout[0] || out_layouts[0])
        return -1;
    if (gemm) {
        int64_t ta = 0;
        const minfer_value_desc *c = node->n_inputs > 2 && node->inputs[2].present
                                         ? &node->inputs[2] : NULL;
        ctx->api->attr_int(node, "transA", &ta);
        if (ta || a->rank != 2 || (c && c->rank == 2 && c->dims[0] != 1))
            return -1;
    } else {
        for (int i = 0; i + 2 < b->rank; i++)
            if (b->dims[i] != 1)
                return -1; /* batched B: no folding into rows */
        if (b->rank < 2)
            return -1;
    }
    int64_t K = a->dims[a->rank - 1], Ncol = y->dims[y->rank - 1];
    int64_t rows = dnn_numel(a->rank - 1, a->dims);
    if (dnn_numel(y->rank - 1, y->dims) != rows)
        return -1;
    int n = threads;
    while (n > 1 && rows / n < 8)
        n--;
    if (n < 2)
        return gemm ? plan_cols(ctx, node, threads, pp) : -1;
    int64_t lo[DNN_MAX_PIECES + 1];
    cut(rows, n, lo);
    pp->n = n;
    pp->by = "rows";
    for (int j = 0; j < n; j++) {
        minfer_value_desc *in = pp->in[j];
        in[0].rank = pp->out[j].rank = 2;
        memset(in[0].dims, 0, sizeof in[0].dims);
        memset(pp->out[j].dims, 0, sizeof pp->out[j].dims);
        in[0].dims[0] = pp->out[j].dims[0] = lo[j + 1] - lo[j];
        in[0].dims[1] = K;
        pp->out[j].dims[1] = Ncol;
        pp->in_off[j][0] = (size_t)(lo[j] * K) * sizeof(float);
        pp->out_off[j] = (size_t)(lo[j] * Ncol) * sizeof(float);
        if (dnn_plain_md(&pp->io[j].in[0], 2, in[0].dims) != dnnl_success ||
            dnn_plain_md(&pp->io[j].out, 2, pp->out[j].dims) != dnnl_success)
            return -1;
    }
    return 0;
}

/* Concat along channels: by images, or by rows when every input and the
 * output are channels-last (their row slices are then dense). Reached only
 * by Concats not run as copies (provider.c: inputs of mixed layouts). */
static int plan_concat(dnn_ctx *ctx, const minfer_node_desc *node, const dnn_node *full,
                       const uint64_t *out_layouts, int threads, piece_plan *pp) {
    const minfer_value_desc *y = &node->outputs[0];
    int r = y->rank, ky, k[DNN_PIECE_INPUTS];
    int64_t axis = 1;
    ctx->api->attr_int(node, "axis", &axis);
    if (axis < 0)
        axis += r;
    if (r < 3 || r > 5 || axis != 1 || value_kind(ctx, y, out_layouts[0], &ky))
        return -1;
    int all_cl = ky == 1;
    for (size_t i = 0; i < node->n_inputs; i++) {
        const minfer_value_desc *v = &node->inputs[i];
        if (!v->present || v->rank != r || value_kind(ctx, v, full->in_layout[i], &k[i]))
            return -1;
        all_cl = all_cl && k[i] == 1;
    }
    int64_t N = y->dims[0], lo[DNN_MAX_PIECES + 1];
    int batch = N >= 2;
    if (!batch && !all_cl)
        return -1;
    int64_t extent = batch ? N : y->dims[2];
    int n = extent < threads ? (int)extent : threads;
    if (n < 2)
        return -1;
    cut(extent, n, lo);
    int ax = batch ? 0 : 2;
    pp->n = n;
    pp->by = batch ? "images" : "rows";
    for (int j = 0; j < n; j++) {
        minfer_value_desc *in = pp->in[j];
        pp->out[j].dims[ax] = lo[j + 1] - lo[j];
        size_t y_unit = (size_t)dnn_numel(r - ax - 1, y->dims + ax + 1) * sizeof(float);
        if (!batch)
            y_unit *= (size_t)y->dims[1];
        pp->out_off[j] = (size_t)lo[j] * y_unit;
        if (md_of_kind(&pp->io[j].out, ky, r, pp->out[j].dims) != dnnl_success)
            return -1;
        for (size_t i = 0; i < node->n_inputs; i++) {
            const minfer_value_desc *v = &node->inputs[i];
            size_t unit = (size_t)dnn_numel(r - ax - 1, v->dims + ax + 1) * sizeof(float);
            if (!batch)
                unit *= (size_t)v->dims[1]; /* channels-last: a row holds every channel */
            in[i].dims[ax] = pp->out[j].dims[ax];
            pp->in_off[j][i] = (size_t)lo[j] * unit;
            if (md_of_kind(&pp->io[j].in[i], k[i], r, in[i].dims) != dnnl_success)
                return -1;
        }
    }
    return 0;
}

/* Ops that work along inner axes only, cut along their first axis of
 * extent > 1 (the sequence of a [1, S, D] or [S, 1, D] transformer tensor,
 * the heads of attention's [H, S, D]), all axes before it being 1, so
 * slices are dense: every input with Y's extent there is sliced, any other
 * (a constant, a broadcast one) read whole. All plain. Consecutive nodes
 * cut this way and the matrix products cut by rows keep each row on one
 * core. */
static int plan_outer(dnn_ctx *ctx, const minfer_node_desc *node, const dnn_node *full,
                      const uint64_t *out_layouts, int threads, piece_plan *pp) {
    const minfer_value_desc *y = &node->outputs[0];
    int r = y->rank, a = 0;
    if (r < 2 || out_layouts[0])
        return -1;
    while (a < r && y->dims[a] == 1)
        a++;
    if (a >= r - 1)
        return -1;
    int64_t axis = r - 1; /* elementwise: any inner axis will do */
    if (!strcmp(node->op_type, "LayerNormalization") || !strcmp(node->op_type, "Softmax") ||
        !strcmp(node->op_type, "LogSoftmax")) {
        axis = -1;
        if (node->opset < 13 && strcmp(node->op_type, "LayerNormalization"))
            axis = 1;
        ctx->api->attr_int(node, "axis", &axis);
        if (axis < 0)
            axis += r;
    }
    if (axis <= a)
        return -1; /* the op works across the axis that would be cut */
    int64_t E = y->dims[a], lo[DNN_MAX_PIECES + 1];
    int sliced[DNN_PIECE_INPUTS] = {0}, any = 0;
    for (size_t i = 0; i < node->n_inputs; i++) {
        const minfer_value_desc *v = &node->inputs[i];
        if (!v->present)
            continue;
        if (full->in_layout[i] || v->rank < 0)
            return -1;
        int va = a - (r - v->rank); /* axis a in v (right-aligned), < 0: absent */
        if (va < 0 || v->dims[va] == 1)
            continue; /* broadcast along a: read whole */
        if (v->rank != r || v->dims[va] != E || v->const_data)
            return -1;
        sliced[i] = 1;
        any = 1;
    }
    int n = E < threads ? (int)E : threads;
    if (!any || n < 2)
        return -1;
    cut(E, n, lo);
    pp->n = n;
    pp->by = "outer axis";
    for (int j = 0; j < n; j++) {
        minfer_value_desc *in = pp->in[j];
        pp->out[j].dims[a] = lo[j + 1] - lo[j];
        pp->out_off[j] = (size_t)(lo[j] * dnn_numel(r - a - 1, y->dims + a + 1)) * sizeof(float);
        if (dnn_plain_md(&pp->io[j].out, r, pp->out[j].dims) != dnnl_success)
            return -1;
        for (size_t i = 0; i < node->n_inputs; i++) {
            if (!sliced[i])
                continue;
            in[i].dims[a] = pp->out[j].dims[a];
            pp->in_off[j][i] =
                (size_t)(lo[j] * dnn_numel(r - a - 1, in[i].dims + a + 1)) * sizeof(float);
        }
    }
    return 0;
}

static int outer_op(const minfer_node_desc *node) {
    static const char *const onnx[] = {
        "Relu", "LeakyRelu", "Elu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Exp", "Sqrt",
        "Abs", "Clip", "Gelu", "Add", "Sub", "Mul", "Div", "Min", "Max", "Sum",
        "LayerNormalization", "Softmax", "LogSoftmax"};
    static const char *const fused[] = {"Gelu", "LayerNormalization", "Attention"};
    int ours = !strcmp(node->domain, "minfer");
    if (!ours && node->domain[0])
        return 0;
    const char *const *names = ours ? fused : onnx;
    size_t n = ours ? sizeof fused / sizeof fused[0] : sizeof onnx / sizeof onnx[0];
    for (size_t i = 0; i < n; i++)
        if (!strcmp(node->op_type, names[i]))
            return 1;
    return 0;
}

void dnn_split_free(dnn_split *sp) {
    if (!sp)
        return;
    for (int j = 0; j < sp->n; j++)
        dnn_node_free(sp->piece[j]);
    free(sp);
}

dnn_split *dnn_split_build(dnn_ctx *ctx, const minfer_node_desc *node, const dnn_node *full,
                           const uint64_t *out_layouts) {
    /* One piece a thread: more (claimed as threads come free) were measured
     * slower with both CPUs free and no faster with one shared. */
    int threads = ctx->threads < DNN_MAX_PIECES ? ctx->threads : DNN_MAX_PIECES;
    if (threads < 2 || node->n_inputs > DNN_PIECE_INPUTS || node->n_outputs != 1 ||
        full->dyn_rank >= 0)
        return NULL;
    /* The pieces slice constants as float: a float16 node runs whole. */
    for (size_t i = 0; i < node->n_inputs; i++)
        if (node->inputs[i].present && node->inputs[i].dtype == MINFER_DTYPE_FLOAT16)
            return NULL;
    if (node->outputs[0].dtype == MINFER_DTYPE_FLOAT16)
        return NULL;
    piece_plan *pp = calloc(1, sizeof *pp);
    if (!pp)
        return NULL;
    reset_pieces(pp, node);
    const char *op = node->op_type;
    int r = -1;
    if (!strcmp(op, "Conv") || !strcmp(op, "FusedConv"))
        r = plan_window(ctx, node, full, out_layouts, threads, 0, pp);
    else if (!strcmp(op, "Concat"))
        r = plan_concat(ctx, node, full, out_layouts, threads, pp);
    else if (outer_op(node))
        r = plan_outer(ctx, node, full, out_layouts, threads, pp);
    else if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool"))
        r = plan_window(ctx, node, full, out_layouts, threads, 1, pp);
    else if (!strcmp(op, "MatMul") || !strcmp(op, "FusedMatMul") || !strcmp(op, "Gemm") ||
             !strcmp(op, "FusedGemm"))
        r = plan_rows(ctx, node, full, out_layouts, threads, pp);
    dnn_split *sp = r == 0 ? calloc(1, sizeof *sp) : NULL;
    if (sp)
        sp->own_weights = pp->own_weights;
    for (int j = 0; sp && j < pp->n; j++) {
        minfer_node_desc d = *node;
        d.inputs = pp->in[j];
        d.outputs = &pp->out[j];
        int32_t inplace = -1;
        uint64_t layout = 0;
        minfer_node_prep prep = {sizeof prep, 0, &inplace, &layout, NULL};
        char why[512];
        dnn_node *p = NULL;
        /* Piece 0 shares what it can with the whole node; the others share
         * with piece 0, which holds the same pointers plus what it packed
         * in a layout of its own (one copy for all pieces, not one each). */
        const dnn_node *share = pp->own_weights ? NULL : j > 0 ? sp->piece[0] : full;
        if (dnn_build_node(ctx, &d, &prep, 0, 1, share, &pp->io[j], &p, why, sizeof why) !=
            MINFER_OK) {
            ctx->api->log(ctx->host, MINFER_LOG_VERBOSE,
                          "onednn: node '%s' runs unsplit: piece %d: %s", node->name, j, why);
            dnn_split_free(sp);
            sp = NULL;
            break;
        }
        /* The piece reads the whole node's inputs as they arrive. */
        for (size_t i = 0; i < p->n_in && i < full->n_in; i++)
            p->in_layout[i] = full->in_layout[i];
        sp->piece[sp->n++] = p;
        memcpy(sp->in_off[j], pp->in_off[j], sizeof sp->in_off[j]);
        sp->out_off[j] = pp->out_off[j];
        size_t ws = (p->ws_bytes + DNN_ALIGN - 1) / DNN_ALIGN * DNN_ALIGN;
        if (ws > sp->ws_stride)
            sp->ws_stride = ws;
    }
    if (sp)
        ctx->api->log(ctx->host, MINFER_LOG_VERBOSE, "onednn: node '%s' runs in %d pieces (%s)",
                      node->name, sp->n, pp->by);
    free(pp);
    return sp;
}
