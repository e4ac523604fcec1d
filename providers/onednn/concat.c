/*
 * Concat as copies (issue 18): a Concat whose inputs and output share one
 * layout without blocks (plain, or channels-last as oneDNN 2.6 picks for
 * float32 convolutions on AVX-512) is run here, not by oneDNN's concat.
 *
 * Why: DenseNet concatenates every earlier feature map again before each
 * layer (58 Concats of 2 to 25 inputs in DenseNet-121), all of them small
 * at a 64x64 input (4 to 256 pixels of 96 to 1024 channels). oneDNN's
 * concat costs a primitive execution (an argument map of every input, its
 * memories bound one by one, a stream wait) and runs on the one thread the
 * node was built for; a node with more inputs than a split piece takes
 * (DNN_PIECE_INPUTS) could not be cut either. Here the node is a list of
 * memcpy calls, cut over the host's pool when it moves enough bytes.
 *
 * The copy. In memory order the output is `outer` rows, each holding
 * every input's part in turn: the axes outside the concat axis (in memory
 * order) count the rows, the concat axis and the axes inside it make a
 * part. Input i's part of row o is its own row o, chunk[i] bytes long,
 * at byte at[i] of the output row. For NCHW at batch 1 along channels
 * that is one row (one memcpy per input); for NHWC one row per pixel.
 */
#include <string.h>

#include "onednn.h"

/* Bytes a node must write before its copies are cut over the pool. A
 * 64x64 DenseNet's Concats (10 to 256 KiB each) took 0.16-0.20 ms a run on
 * the calling thread and 1.7-2.0 ms cut over two threads from 32 KiB
 * (machine loaded, 2 threads; 0.6 ms at a lower load, as much as oneDNN's
 * concat): a pool job costs more than such a copy, whose time goes to cache
 * misses more than to bandwidth. Where a second core starts to pay was not
 * measured (no Concat of the corpus at its test inputs is this large);
 * 2 MiB is several times a core's L2 cache. */
#define COPY_PAR_BYTES (2u * 1024u * 1024u)

/* The order of md's axes, outermost first (by stride, ties by axis
 * index); -1 when md is not float32 or has inner blocks, padding or an
 * offset. */
static int axis_order(const dnnl_memory_desc_t *md, int *perm) {
    int r = md->ndims;
    if (md->format_kind != dnnl_blocked || md->data_type != dnnl_f32 || md->offset0 != 0 ||
        md->format_desc.blocking.inner_nblks != 0 || r < 1 || r > DNNL_MAX_NDIMS)
        return -1;
    const dnnl_dim_t *st = md->format_desc.blocking.strides;
    for (int d = 0; d < r; d++) {
        if (md->padded_dims[d] != md->dims[d] || md->padded_offsets[d] != 0 || md->dims[d] < 1)
            return -1;
        int j = d;
        for (; j > 0 && st[perm[j - 1]] < st[d]; j--)
            perm[j] = perm[j - 1];
        perm[j] = d;
    }
    return 0;
}

/* 1 when md's strides are the dense ones of the axis order perm. An axis
 * of extent 1 is read at index 0 only, so its stride does not matter
 * (oneDNN gives such axes strides of its own choosing). */
static int dense_in(const dnnl_memory_desc_t *md, const int *perm) {
    dnnl_dim_t s = 1;
    for (int j = md->ndims - 1; j >= 0; j--) {
        int d = perm[j];
        if (md->dims[d] > 1 && md->format_desc.blocking.strides[d] != s)
            return 0;
        s *= md->dims[d];
    }
    return 1;
}

int dnn_concat_copy_plan(dnn_copy *cp, int n, int axis, const dnnl_memory_desc_t *src,
                         const dnnl_memory_desc_t *dst) {
    int perm[DNNL_MAX_NDIMS], p_src[DNNL_MAX_NDIMS];
    memset(cp, 0, sizeof *cp);
    if (n < 1 || n > DNN_MAX_CONCAT || axis < 0 || axis >= dst->ndims ||
        axis_order(dst, perm) || !dense_in(dst, perm))
        return -1;
    int pos = 0;
    while (perm[pos] != axis)
        pos++;
    size_t outer = 1, inner = sizeof(float);
    for (int j = 0; j < dst->ndims; j++) {
        if (j < pos)
            outer *= (size_t)dst->dims[perm[j]];
        else if (j > pos)
            inner *= (size_t)dst->dims[perm[j]];
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        const dnnl_memory_desc_t *m = &src[i];
        if (m->ndims != dst->ndims || axis_order(m, p_src) || !dense_in(m, perm))
            return -1;
        for (int d = 0; d < dst->ndims; d++)
            if (d != axis && m->dims[d] != dst->dims[d])
                return -1;
        cp->at[i] = at;
        cp->chunk[i] = (size_t)m->dims[axis] * inner;
        at += cp->chunk[i];
    }
    if (at != (size_t)dst->dims[axis] * inner)
        return -1;
    cp->n = n;
    cp->outer = outer;
    cp->row = at;
    return 0;
}

typedef struct copy_job {
    const dnn_copy *cp;
    const char *src[DNN_MAX_CONCAT];
    char *dst;
} copy_job;

/* Items [begin, end) of rows x inputs, row-major: the output is written
 * in order. */
static void copy_items(void *arg, size_t begin, size_t end) {
    const copy_job *job = arg;
    const dnn_copy *cp = job->cp;
    size_t n = (size_t)cp->n, o = begin / n, i = begin % n;
    for (size_t t = begin; t < end; t++) {
        memcpy(job->dst + o * cp->row + cp->at[i], job->src[i] + o * cp->chunk[i], cp->chunk[i]);
        if (++i == n) {
            i = 0;
            o++;
        }
    }
}

static minfer_status copy_fail(dnn_ctx *ctx, const minfer_exec_args *a, const char *what,
                               size_t index) {
    ctx->api->set_error(ctx->host, "onednn: node '%s' (%s): %s %zu", a->node->name,
                        a->node->op_type, what, index);
    return MINFER_ERR_RUNTIME;
}

minfer_status dnn_concat_copy_run(dnn_ctx *ctx, const dnn_node *nd, const minfer_exec_args *a) {
    const dnn_copy *cp = &nd->copy;
    copy_job job = {cp, {0}, NULL};
    if (a->n_inputs < (size_t)cp->n || a->n_outputs < 1 || nd->dyn_rank >= 0)
        return copy_fail(ctx, a, "unexpected arguments for a Concat run as copies, inputs",
                         a->n_inputs);
    for (int i = 0; i < cp->n; i++) {
        const minfer_tensor_view *v = minfer_kit_view_input(a, (size_t)i);
        if (!v->data || v->nbytes < cp->outer * cp->chunk[i])
            return copy_fail(ctx, a, "missing or short tensor for input", (size_t)i);
        if ((size_t)i < nd->n_in && v->layout != nd->in_layout[i])
            return copy_fail(ctx, a,
                             "input arrived in a layout other than the one prepared for, input",
                             (size_t)i);
        job.src[i] = (const char *)v->data + v->offset;
    }
    const minfer_tensor_view *y = minfer_kit_view_output(a, 0);
    if (!y->data || y->nbytes < cp->outer * cp->row)
        return copy_fail(ctx, a, "missing or short tensor for output", 0);
    job.dst = (char *)y->data + y->offset;
    size_t items = cp->outer * (size_t)cp->n;
    int threads = ctx->threads;
    if (threads > 1 && cp->outer * cp->row >= COPY_PAR_BYTES && items > 1)
        dnn_parallel_for(ctx, a, items, (items + (size_t)threads - 1) / (size_t)threads,
                         copy_items, &job);
    else
        copy_items(&job, 0, items);
    return MINFER_OK;
}
