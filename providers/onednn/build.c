/*
 * Building a node's program: memory descriptors, bindings, steps, weights
 * packed once, post-ops, and the refusal of reference implementations.
 */
#include <float.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* ---- Errors and attributes ------------------------------------------------- */

static minfer_status vmsg(dnn_b *b, minfer_status st, const char *fmt, va_list ap) {
    minfer_kit_vdecline(b->why, b->why_size, b->node->op_type, fmt, ap);
    return st;
}

minfer_status dnn_decline(dnn_b *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    minfer_status st = vmsg(b, MINFER_ERR_UNSUPPORTED, fmt, ap);
    va_end(ap);
    return st;
}

static const char *dnnl_status_name(dnnl_status_t s) {
    switch (s) {
    case dnnl_success: return "success";
    case dnnl_out_of_memory: return "out of memory";
    case dnnl_invalid_arguments: return "invalid arguments";
    case dnnl_unimplemented: return "no implementation";
    case dnnl_iterator_ends: return "no implementation left";
    case dnnl_runtime_error: return "runtime error";
    case dnnl_not_required: return "not required";
    default: return "error";
    }
}

minfer_status dnn_fail(dnn_b *b, dnnl_status_t s, const char *what) {
    return dnn_decline(b, "oneDNN %s: %s", what, dnnl_status_name(s));
}

int64_t dnn_attr_int(const dnn_b *b, const char *name, int64_t dflt) {
    return minfer_kit_attr_int(b->ctx->api, b->node, name, dflt);
}

float dnn_attr_float(const dnn_b *b, const char *name, float dflt) {
    return minfer_kit_attr_float(b->ctx->api, b->node, name, dflt);
}

const char *dnn_attr_str(const dnn_b *b, const char *name, const char *dflt) {
    return minfer_kit_attr_str(b->ctx->api, b->node, name, dflt);
}

int dnn_attr_ints(dnn_b *b, const char *name, int64_t *out, size_t cap, size_t *count) {
    return minfer_kit_attr_ints(b->ctx->api, b->node, name, out, cap, count, b->why,
                                b->why_size);
}

minfer_status dnn_require_float(dnn_b *b, int n_float) {
    size_t n_in = b->node->n_inputs;
    if (n_float > 0 && (size_t)n_float < n_in)
        n_in = (size_t)n_float;
    for (size_t i = 0; i < n_in; i++) {
        const minfer_value_desc *v = dnn_in(b, i);
        if (v && (v->kind != MINFER_VALUE_TENSOR ||
                  (v->dtype != MINFER_DTYPE_FLOAT &&
                   !(b->half && v->dtype == MINFER_DTYPE_FLOAT16))))
            return dnn_decline(b, "input %zu is not a float tensor", i);
    }
    for (size_t o = 0; o < b->node->n_outputs; o++) {
        const minfer_value_desc *v = &b->node->outputs[o];
        if (dnn_out_wanted(b, o) &&
            (v->kind != MINFER_VALUE_TENSOR ||
             (v->dtype && v->dtype != MINFER_DTYPE_FLOAT &&
              !(b->half && v->dtype == MINFER_DTYPE_FLOAT16))))
            return dnn_decline(b, "output %zu is not a float tensor", o);
    }
    return MINFER_OK;
}

/* ---- Memory descriptors ---------------------------------------------------- */

dnnl_status_t dnn_in_md(dnn_b *b, size_t i, dnnl_memory_desc_t *md) {
    const minfer_value_desc *v = dnn_in(b, i);
    if (!v)
        return dnnl_invalid_arguments;
    if (b->pio && i < DNN_PIECE_INPUTS && b->pio->in[i].ndims) {
        *md = b->pio->in[i];
        return dnnl_success;
    }
    if (i < b->n->n_in && b->n->in_layout[i]) {
        const dnn_layout *l = dnn_layout_get(b->ctx, b->n->in_layout[i]);
        if (!l)
            return dnnl_invalid_arguments;
        *md = l->md;
        return dnnl_success;
    }
    return dnn_plain_md_dt(md, v->rank, v->dims, dnn_dtype(v->dtype));
}

/* ---- Memories -------------------------------------------------------------- */

int dnn_mem_new(dnn_b *b, const dnnl_memory_desc_t *md, int bind, int index) {
    dnn_node *n = b->n;
    if (n->n_mems >= DNN_MAX_MEMS) {
        dnn_decline(b, "too many memories for one node");
        return -1;
    }
    dnn_mem *m = &n->mems[n->n_mems];
    dnnl_status_t s = dnnl_memory_create(&m->mem, md, b->ctx->engine, DNNL_MEMORY_NONE);
    if (s != dnnl_success) {
        dnn_fail(b, s, "memory_create");
        return -1;
    }
    m->bind = bind;
    m->index = index;
    m->off = 0;
    return n->n_mems++;
}

static size_t align_up(size_t x) {
    return (x + DNN_ALIGN - 1) / DNN_ALIGN * DNN_ALIGN;
}

int dnn_ws_mem(dnn_b *b, const dnnl_memory_desc_t *md) {
    int k = dnn_mem_new(b, md, BIND_WS, -1);
    if (k < 0)
        return -1;
    b->n->mems[k].off = b->ws_extra;
    b->ws_extra += align_up(dnnl_memory_desc_get_size(md));
    return k;
}

static const dnnl_memory_desc_t *mem_md(const dnn_b *b, int k) {
    const dnnl_memory_desc_t *md = NULL;
    dnnl_memory_get_memory_desc(b->n->mems[k].mem, &md);
    return md;
}

int dnn_input(dnn_b *b, size_t i, const dnnl_memory_desc_t *have,
              const dnnl_memory_desc_t *want) {
    dnnl_memory_desc_t arrive;
    dnnl_status_t s = dnn_in_md(b, i, &arrive);
    if (s != dnnl_success) {
        dnn_fail(b, s, "input descriptor");
        return -1;
    }
    const minfer_value_desc *v = dnn_in(b, i);
    int k;
    if (v->dtype == MINFER_DTYPE_FLOAT16 && dnn_md_is_plain(&arrive)) {
        /* float16 arrives: reordered to float (the op's view) first. */
        dnnl_memory_desc_t h16 = arrive;
        h16.data_type = dnnl_f16;
        int h = dnn_mem_new(b, &h16, BIND_INPUT, (int)i);
        k = h < 0 ? -1 : dnn_ws_mem(b, &arrive);
        if (k < 0 || dnn_reorder_step(b, h, k) != MINFER_OK)
            return -1;
    } else {
        k = dnn_mem_new(b, &arrive, BIND_INPUT, (int)i);
    }
    if (k < 0)
        return -1;
    if (have && !dnnl_memory_desc_equal(have, &arrive)) {
        /* The op reads the input under another (plain) shape: bring it to
         * the plain layout of its own dims first, then view that buffer
         * under the op's shape. */
        if (!dnn_md_is_plain(&arrive)) {
            dnnl_memory_desc_t plain;
            dnn_plain_md_dt(&plain, arrive.ndims, arrive.dims, arrive.data_type);
            int p = dnn_ws_mem(b, &plain);
            if (p < 0 || dnn_reorder_step(b, k, p) != MINFER_OK)
                return -1;
            k = p;
        }
        int v = dnn_mem_new(b, have, b->n->mems[k].bind, b->n->mems[k].index);
        if (v < 0)
            return -1;
        b->n->mems[v].off = b->n->mems[k].off;
        k = v;
    }
    if (!want || dnnl_memory_desc_equal(mem_md(b, k), want))
        return k;
    int w = dnn_ws_mem(b, want);
    if (w < 0 || dnn_reorder_step(b, k, w) != MINFER_OK)
        return -1;
    return w;
}

static void *owned_alloc(dnn_b *b, size_t bytes) {
    dnn_node *n = b->n;
    if (n->n_owned >= DNN_MAX_OWNED) {
        dnn_decline(b, "too many packed constants for one node");
        return NULL;
    }
    void *p = NULL;
    if (posix_memalign(&p, DNN_ALIGN, bytes ? align_up(bytes) : DNN_ALIGN) != 0) {
        dnn_decline(b, "out of memory for %zu bytes of packed constants", bytes);
        return NULL;
    }
    n->owned[n->n_owned++] = p;
    return p;
}

/* Runs a one-off reorder now (packing constants at prepare). */
static minfer_status reorder_now(dnn_b *b, const dnnl_memory_desc_t *src_md, const void *src,
                                 const dnnl_memory_desc_t *dst_md, void *dst, float scale) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t ms = NULL, md = NULL;
    dnnl_primitive_attr_t attr = NULL;
    minfer_status st = MINFER_OK;
    dnnl_status_t s = dnnl_primitive_attr_create(&attr);
    if (s == dnnl_success && scale != 1.0f)
        s = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale);
    if (s == dnnl_success)
        s = dnnl_reorder_primitive_desc_create(&pd, src_md, b->ctx->engine, dst_md,
                                               b->ctx->engine, attr);
    if (s == dnnl_success)
        s = dnnl_primitive_create(&prim, pd);
    if (s == dnnl_success)
        s = dnnl_memory_create(&ms, src_md, b->ctx->engine, (void *)src);
    if (s == dnnl_success)
        s = dnnl_memory_create(&md, dst_md, b->ctx->engine, dst);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DST, md}};
        s = dnnl_primitive_execute(prim, b->ctx->stream, 2, args);
        if (s == dnnl_success)
            s = dnnl_stream_wait(b->ctx->stream);
    }
    if (s != dnnl_success)
        st = dnn_fail(b, s, "packing constants");
    dnnl_memory_destroy(md);
    dnnl_memory_destroy(ms);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    return st;
}

/* Packing a large constant a slice at a time (issue 18). A whole reorder
 * reads all of the host's plain copy while it writes the packed one, so
 * both are resident at once: with the weights packed before it, a model's
 * peak is its packed weights plus its largest weight. When the plain md is
 * dense row-major and the packed md keeps axis 0 outermost (each block of
 * axis 0 a contiguous run of bytes: OIhw16i16o, Goihw16g, ...), slices of
 * axis 0 are reordered one after the other, each into its own bytes of the
 * packed buffer, and the host is told after each that the plain bytes read
 * so far are not read again (minfer_host_api.const_consumed): the plain
 * copy then shrinks as the packed one grows. */
#define SLICE_BYTES ((size_t)1 << 20)

/* The product of md's inner blocks of axis d (1 when it has none). */
static int64_t axis_block(const dnnl_memory_desc_t *md, int d) {
    const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
    int64_t blk = 1;
    for (int k = 0; k < bd->inner_nblks; k++)
        if (bd->inner_idxs[k] == d)
            blk *= bd->inner_blks[k];
    return blk;
}

/* 1 when have (plain) and want (packed) can be cut along axis 0 as above. */
static int sliceable(const dnnl_memory_desc_t *have, const dnnl_memory_desc_t *want) {
    if (have->format_kind != dnnl_blocked || want->format_kind != dnnl_blocked ||
        have->ndims < 2 || have->ndims != want->ndims || have->offset0 || want->offset0 ||
        have->format_desc.blocking.inner_nblks || want->extra.flags)
        return 0;
    const int nd = have->ndims;
    int64_t run = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (have->dims[d] != want->dims[d] || have->padded_dims[d] != have->dims[d] ||
            have->format_desc.blocking.strides[d] != run || want->padded_offsets[d])
            return 0;
        run *= have->dims[d];
    }
    const int64_t *ws = want->format_desc.blocking.strides;
    for (int d = 1; d < nd; d++)
        if (ws[d] * (want->padded_dims[d] / axis_block(want, d)) > ws[0])
            return 0;
    size_t es = dnnl_data_type_size(want->data_type);
    return (size_t)ws[0] * (size_t)(want->padded_dims[0] / axis_block(want, 0)) * es ==
           dnnl_memory_desc_get_size(want);
}

/* Reorders e's constant into buf (want) in slices of axis 0, telling the
 * host after each slice that the plain bytes read so far are consumed.
 * Returns 1 when done, 0 when the layouts do not allow it (nothing done),
 * -1 on failure (b's why says why). */
static int reorder_sliced(dnn_b *b, const dnn_node *n, const struct dnn_deferred *e,
                          const dnnl_memory_desc_t *want, void *buf) {
    dnn_ctx *ctx = b->ctx;
    const int input = n->mems[e->mem].index;
    const minfer_value_desc *v =
        ctx->pack_node && input >= 0 ? minfer_kit_input(ctx->pack_node, (size_t)input) : NULL;
    size_t src_bytes = dnnl_memory_desc_get_size(&e->have);
    if (!v || !v->const_data || !MINFER_HOST_HAS(ctx->api, const_consumed) ||
        src_bytes < 2 * SLICE_BYTES || !sliceable(&e->have, want))
        return 0;
    uintptr_t base = (uintptr_t)v->const_data, at = (uintptr_t)e->src;
    if (at < base || at - base > v->const_nbytes || src_bytes > v->const_nbytes - (at - base))
        return 0;
    const int64_t blk = axis_block(want, 0), rows = want->dims[0];
    const size_t row_src = src_bytes / (size_t)rows;
    const size_t blk_dst = (size_t)want->format_desc.blocking.strides[0] *
                           dnnl_data_type_size(want->data_type);
    /* Whole blocks of axis 0 per slice, about SLICE_BYTES of plain bytes. */
    int64_t step = (int64_t)(SLICE_BYTES / (row_src * (size_t)blk)) * blk;
    if (step < blk)
        step = blk;
    for (int64_t r0 = 0; r0 < rows; r0 += step) {
        int64_t r1 = r0 + step < rows ? r0 + step : rows;
        dnnl_memory_desc_t hs = e->have, ws = *want;
        hs.dims[0] = hs.padded_dims[0] = r1 - r0;
        ws.dims[0] = r1 - r0;
        ws.padded_dims[0] = (r1 - r0 + blk - 1) / blk * blk;
        char *dst = (char *)buf + (size_t)(r0 / blk) * blk_dst;
        /* The padding of the slice's last block reads as zeros. */
        memset(dst, 0, dnnl_memory_desc_get_size(&ws));
        if (reorder_now(b, &hs, (const char *)e->src + (size_t)r0 * row_src, &ws, dst,
                        e->scale) != MINFER_OK)
            return -1;
        ctx->api->const_consumed(ctx->host, ctx->pack_node, (size_t)input, at - base,
                                 (size_t)r1 * row_src);
    }
    return 1;
}

/* 1 when bytes [a, a + an) and [c, c + cn) overlap. */
static int spans_overlap(uintptr_t a, size_t an, uintptr_t c, size_t cn) {
    return a < c + cn && c < a + an;
}

/* 1 when no deferred constant of nodes[0..nn) other than n->deferred[d]
 * reads bytes that n->deferred[d] reads. */
static int read_once(dnn_node *const *nodes, int nn, const dnn_node *n, int d) {
    const struct dnn_deferred *e = &n->deferred[d];
    uintptr_t a = (uintptr_t)e->src;
    size_t an = dnnl_memory_desc_get_size(&e->have);
    for (int k = 0; k < nn; k++)
        for (int j = 0; nodes[k] && j < nodes[k]->n_deferred; j++) {
            const struct dnn_deferred *o = &nodes[k]->deferred[j];
            if ((nodes[k] != n || j != d) &&
                spans_overlap(a, an, (uintptr_t)o->src, dnnl_memory_desc_get_size(&o->have)))
                return 0;
        }
    return 1;
}

/* Packs n's deferred constant d (errors in b's why); the last reading of
 * its plain bytes (release) packs it in slices where it can. */
static minfer_status pack_entry(dnn_node *n, int d, dnn_b *b, int release) {
    struct dnn_deferred *e = &n->deferred[d];
    int mem = e->mem;
    const dnnl_memory_desc_t *want = NULL;
    dnnl_memory_get_memory_desc(n->mems[mem].mem, &want);
    if (dnn_packed_take(b, n, mem, &e->have, e->src, want, e->scale)) {
        n->deferred[d] = n->deferred[--n->n_deferred];
        return MINFER_OK;
    }
    dnn_node *self = b->n;
    b->n = n; /* the buffer belongs to n */
    void *buf = owned_alloc(b, dnnl_memory_desc_get_size(want));
    b->n = self;
    int sliced = buf && release ? reorder_sliced(b, n, e, want, buf) : 0;
    if (!buf || sliced < 0 ||
        (!sliced && reorder_now(b, &e->have, e->src, want, buf, e->scale) != MINFER_OK))
        return MINFER_ERR_UNSUPPORTED;
    dnnl_memory_set_data_handle(n->mems[mem].mem, buf);
    dnn_packed_note(b, n, mem, &e->have, e->src, want, e->scale, buf);
    n->deferred[d] = n->deferred[--n->n_deferred];
    return MINFER_OK;
}

/* Packs the deferred constant of n bound to mems[mem], if any (errors in
 * b's why). */
static minfer_status pack_deferred(dnn_node *n, int mem, dnn_b *b) {
    for (int d = 0; d < n->n_deferred; d++)
        if (n->deferred[d].mem == mem)
            return pack_entry(n, d, b, 0);
    return MINFER_OK;
}

minfer_status dnn_node_pack(dnn_ctx *ctx, dnn_node *n, char *why, size_t why_size) {
    return dnn_nodes_pack(ctx, &n, 1, 0, why, why_size);
}

minfer_status dnn_nodes_pack(dnn_ctx *ctx, dnn_node *const *nodes, int nn, int last, char *why,
                             size_t why_size) {
    static const minfer_node_desc pack_desc = {sizeof(minfer_node_desc), "", "packing", "",
                                               0, 0, 0, NULL, NULL, NULL, 0};
    for (int k = 0; k < nn; k++) {
        dnn_node *n = nodes[k];
        dnn_b b = {ctx, &pack_desc, NULL, 0, n, 0, {{0}}, 0, why, why_size, NULL, NULL, 0};
        while (n && n->n_deferred > 0)
            if (pack_entry(n, 0, &b, last && read_once(nodes, nn, n, 0)) != MINFER_OK)
                return MINFER_ERR_UNSUPPORTED;
    }
    return MINFER_OK;
}

int dnn_const_input(dnn_b *b, size_t i, const dnnl_memory_desc_t *have,
                    const dnnl_memory_desc_t *want, float scale) {
    const minfer_value_desc *v = dnn_in(b, i);
    if (!v || !v->const_data) {
        if (scale != 1.0f) {
            dnn_decline(b, "input %zu must be constant", i);
            return -1;
        }
        return dnn_input(b, i, have, want);
    }
    dnnl_memory_desc_t h16;
    if (v->dtype == MINFER_DTYPE_FLOAT16) { /* packed from float16 to want */
        h16 = *have;
        h16.data_type = dnnl_f16;
        have = &h16;
    }
    int k = dnn_mem_new(b, want, BIND_FIXED, (int)i);
    if (k < 0 || b->check)
        return k;
    /* Another variant of the node packed it the same way: share it (packing
     * it there first when that build deferred it). */
    for (int j = 0; b->share && j < b->share->n_mems; j++) {
        const dnn_mem *m = &b->share->mems[j];
        const dnnl_memory_desc_t *smd = NULL;
        void *data = NULL;
        if (m->bind != BIND_FIXED || m->index != (int)i ||
            dnnl_memory_get_memory_desc(m->mem, &smd) != dnnl_success ||
            !dnnl_memory_desc_equal(smd, want))
            continue;
        /* The shared build is the caller's, not yet handed out: packing
         * its deferred constants changes no reader. */
        if (pack_deferred((dnn_node *)(uintptr_t)b->share, j, b) != MINFER_OK)
            return -1;
        if (dnnl_memory_get_data_handle(m->mem, &data) == dnnl_success && data) {
            dnnl_memory_set_data_handle(b->n->mems[k].mem, data);
            return k;
        }
    }
    if (v->const_nbytes < dnnl_memory_desc_get_size(have)) {
        dnn_decline(b, "constant input %zu is too small", i);
        return -1;
    }
    /* A piece packing a slice of its own (no build to share with) defers
     * it too: the split may still fail and leave the whole node to pack. */
    if (b->ctx->defer_pack && (!b->pio || !b->share)) {
        dnn_node *n = b->n;
        if (n->n_deferred + n->n_owned >= DNN_MAX_OWNED) {
            dnn_decline(b, "too many packed constants for one node");
            return -1;
        }
        n->deferred[n->n_deferred++] = (struct dnn_deferred){k, v->const_data, *have, scale};
        return k;
    }
    if (dnn_packed_take(b, b->n, k, have, v->const_data, want, scale))
        return k;
    void *buf = owned_alloc(b, dnnl_memory_desc_get_size(want));
    if (!buf || reorder_now(b, have, v->const_data, want, buf, scale) != MINFER_OK)
        return -1;
    dnnl_memory_set_data_handle(b->n->mems[k].mem, buf);
    dnn_packed_note(b, b->n, k, have, v->const_data, want, scale, buf);
    return k;
}

int dnn_pack_owned(dnn_b *b, int input, const dnnl_memory_desc_t *have, const void *data,
                   const dnnl_memory_desc_t *want) {
    int k = dnn_mem_new(b, want, BIND_FIXED, input);
    if (k < 0 || b->check)
        return k;
    void *buf = data ? owned_alloc(b, dnnl_memory_desc_get_size(want)) : NULL;
    if (!data)
        dnn_decline(b, "no data to pack");
    if (!buf || reorder_now(b, have, data, want, buf, 1.0f) != MINFER_OK)
        return -1;
    dnnl_memory_set_data_handle(b->n->mems[k].mem, buf);
    return k;
}

int dnn_owned_plain(dnn_b *b, const dnnl_memory_desc_t *md, const float *data) {
    int k = dnn_mem_new(b, md, BIND_FIXED, -1);
    if (k < 0 || b->check)
        return k;
    size_t bytes = dnnl_memory_desc_get_size(md);
    void *buf = owned_alloc(b, bytes);
    if (!buf)
        return -1;
    memcpy(buf, data, bytes);
    dnnl_memory_set_data_handle(b->n->mems[k].mem, buf);
    return k;
}

/* Output o written by the primitive in md into a workspace buffer, which
 * a reorder after the main steps moves into the output, described by
 * out_md; returns the workspace memory. */
static int pend_output(dnn_b *b, size_t o, const dnnl_memory_desc_t *md,
                       const dnnl_memory_desc_t *out_md) {
    if (b->n_pend >= (int)(sizeof b->pend / sizeof b->pend[0])) {
        dnn_decline(b, "too many outputs to convert");
        return -1;
    }
    int w = dnn_ws_mem(b, md);
    int p = w < 0 ? -1 : dnn_mem_new(b, out_md, BIND_OUTPUT, (int)o);
    if (p < 0)
        return -1;
    b->pend[b->n_pend].src = w;
    b->pend[b->n_pend].dst = p;
    b->n_pend++;
    return w;
}

int dnn_output(dnn_b *b, size_t o, const dnnl_memory_desc_t *md) {
    const minfer_value_desc *v = &b->node->outputs[o];
    if (b->pio) {
        /* A piece writes its slice of the whole output, in its layout, or
         * (dst_any) into the workspace, reordered into the slice after. */
        /* Plain under another shape of the same size is the same bytes. */
        int same = dnnl_memory_desc_equal(md, &b->pio->out) ||
                   (dnn_md_is_plain(md) && dnn_md_is_plain(&b->pio->out) &&
                    dnnl_memory_desc_get_size(md) == dnnl_memory_desc_get_size(&b->pio->out));
        if (o != 0 || (!b->pio->dst_any && !same)) {
            dnn_decline(b, "a piece would write output %zu in another layout", o);
            return -1;
        }
        if (same)
            return dnn_mem_new(b, md, BIND_OUTPUT, (int)o);
        return pend_output(b, o, md, &b->pio->out);
    }
    if (v->dtype == MINFER_DTYPE_FLOAT16 && md->data_type == dnnl_f32) {
        /* Computed in float, rounded to float16 into the output after. */
        dnnl_memory_desc_t h16;
        dnn_plain_md_dt(&h16, md->ndims, md->dims, dnnl_f16);
        return pend_output(b, o, md, &h16);
    }
    if (dnn_md_is_plain(md))
        return dnn_mem_new(b, md, BIND_OUTPUT, (int)o);
    int same_dims = md->ndims == v->rank;
    for (int d = 0; same_dims && d < v->rank; d++)
        same_dims = md->dims[d] == v->dims[d];
    if (b->ctx->private_layouts && same_dims) {
        if (!b->check) {
            uint64_t id = dnn_layout_id(b->ctx, md);
            if (id == UINT64_MAX) {
                dnn_decline(b, "could not register a layout");
                return -1;
            }
            b->prep->output_layouts[o] = id;
        }
        return dnn_mem_new(b, md, BIND_OUTPUT, (int)o);
    }
    dnnl_memory_desc_t plain;
    dnn_plain_md_dt(&plain, md->ndims, md->dims, md->data_type);
    return pend_output(b, o, md, &plain);
}

/* ---- Primitives ------------------------------------------------------------ */

static int is_ref(const_dnnl_primitive_desc_t pd, const char **impl) {
    const char *s = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success || !s)
        s = "?";
    *impl = s;
    return strncmp(s, "ref", 3) == 0;
}

minfer_status dnn_pd_avoid(dnn_b *b, const_dnnl_op_desc_t op, const_dnnl_primitive_attr_t attr,
                           dnn_avoid_fn avoid, const void *arg, dnnl_primitive_desc_t *pd) {
    dnnl_primitive_desc_iterator_t it = NULL;
    dnnl_primitive_desc_t first = NULL;
    char seen[160] = "";
    *pd = NULL;
    dnnl_status_t s = dnnl_primitive_desc_iterator_create(&it, op, attr, b->ctx->engine, NULL);
    if (s != dnnl_success)
        return dnn_fail(b, s, "primitive descriptor");
    do {
        dnnl_primitive_desc_t cand = dnnl_primitive_desc_iterator_fetch(it);
        const char *impl;
        if (!cand)
            break;
        if (!is_ref(cand, &impl)) {
            if (!avoid || !avoid(impl, arg)) {
                *pd = cand;
                break;
            }
            if (!first) {
                first = cand;
                continue;
            }
        } else if (!seen[0]) {
            snprintf(seen, sizeof seen, "%s", impl);
        }
        dnnl_primitive_desc_destroy(cand);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
    if (!*pd)
        *pd = first;
    else if (first)
        dnnl_primitive_desc_destroy(first);
    if (!*pd)
        return dnn_decline(b, "oneDNN has only a reference implementation (%s) for this case",
                           seen[0] ? seen : "none");
    return MINFER_OK;
}

minfer_status dnn_pd(dnn_b *b, const_dnnl_op_desc_t op, const_dnnl_primitive_attr_t attr,
                     dnnl_primitive_desc_t *pd) {
    return dnn_pd_avoid(b, op, attr, NULL, NULL, pd);
}

minfer_status dnn_pd_check(dnn_b *b, dnnl_primitive_desc_t pd) {
    const char *impl;
    if (is_ref(pd, &impl)) {
        dnnl_primitive_desc_destroy(pd);
        return dnn_decline(b, "oneDNN has only a reference implementation (%s) for this case",
                           impl);
    }
    return MINFER_OK;
}

const dnnl_memory_desc_t *dnn_pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t q, int index) {
    return dnnl_primitive_desc_query_md(pd, q, index);
}

minfer_status dnn_step_add(dnn_b *b, dnnl_primitive_desc_t pd, int n_args, const int *args,
                           const int *mems) {
    dnn_node *n = b->n;
    minfer_status st = MINFER_OK;
    if (n->n_steps >= DNN_MAX_STEPS || n_args + 1 > DNN_MAX_ARGS) {
        dnnl_primitive_desc_destroy(pd);
        return dnn_decline(b, "node needs too many oneDNN steps");
    }
    dnn_step *step = &n->steps[n->n_steps];
    memset(step, 0, sizeof *step);
    step->skip_src = step->skip_dst = -1;
    for (int k = 0; k < n_args; k++) {
        step->args[k].arg = args[k];
        step->args[k].memory = n->mems[mems[k]].mem;
    }
    step->n_args = n_args;
    const dnnl_memory_desc_t *smd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t sbytes = smd ? dnnl_memory_desc_get_size(smd) : 0;
    if (sbytes) {
        int k = dnn_mem_new(b, smd, BIND_SCRATCH, -1);
        if (k < 0) {
            dnnl_primitive_desc_destroy(pd);
            return MINFER_ERR_UNSUPPORTED;
        }
        step->args[step->n_args].arg = DNNL_ARG_SCRATCHPAD;
        step->args[step->n_args].memory = n->mems[k].mem;
        step->n_args++;
        if (align_up(sbytes) > n->scratch_bytes)
            n->scratch_bytes = align_up(sbytes);
    }
    if (!b->check) {
        dnnl_status_t s = dnnl_primitive_create(&step->prim, pd);
        if (s != dnnl_success)
            st = dnn_fail(b, s, "primitive_create");
    }
    dnnl_primitive_desc_destroy(pd);
    if (st == MINFER_OK)
        n->n_steps++;
    return st;
}

minfer_status dnn_int_add_step(dnn_b *b, int src, int dst) {
    dnn_node *n = b->n;
    if (n->n_steps >= DNN_MAX_STEPS)
        return dnn_decline(b, "node needs too many oneDNN steps");
    const dnnl_memory_desc_t *smd = mem_md(b, src), *dmd = mem_md(b, dst);
    if (!smd || !dmd || smd->data_type != dnnl_s32 || !dnnl_memory_desc_equal(smd, dmd))
        return dnn_decline(b, "an int32 sum of two tensors in different layouts");
    dnn_step *step = &n->steps[n->n_steps];
    memset(step, 0, sizeof *step);
    step->skip_src = step->skip_dst = -1;
    step->host = DNN_HOST_ADD_I32;
    step->src = src;
    step->dst = dst;
    step->count = dnnl_memory_desc_get_size(dmd) / sizeof(int32_t);
    n->n_steps++;
    return MINFER_OK;
}

minfer_status dnn_qadd_step(dnn_b *b, int a, int b2, int dst, float ra, float rb, float k) {
    dnn_node *n = b->n;
    if (n->n_steps >= DNN_MAX_STEPS)
        return dnn_decline(b, "node needs too many oneDNN steps");
    const dnnl_memory_desc_t *amd = mem_md(b, a), *bmd = mem_md(b, b2), *dmd = mem_md(b, dst);
    if (!amd || !bmd || !dmd || !dnnl_memory_desc_equal(amd, bmd) ||
        !dnnl_memory_desc_equal(amd, dmd))
        return dnn_decline(b, "a QLinearAdd of tensors in different layouts");
    if (amd->data_type != dnnl_u8 && amd->data_type != dnnl_s8)
        return dnn_decline(b, "a QLinearAdd of other than uint8 or int8");
    int64_t e = dnn_numel(amd->ndims, amd->dims);
    if (e < 0 || dnnl_memory_desc_get_size(amd) != (size_t)e)
        return dnn_decline(b, "a QLinearAdd in a padded layout");
    dnn_step *step = &n->steps[n->n_steps];
    memset(step, 0, sizeof *step);
    step->skip_src = step->skip_dst = -1;
    step->host = amd->data_type == dnnl_u8 ? DNN_HOST_QADD_U8 : DNN_HOST_QADD_S8;
    step->src = a;
    step->src2 = b2;
    step->dst = dst;
    step->count = (size_t)e;
    step->ra = ra;
    step->rb = rb;
    step->k = k;
    n->n_steps++;
    return MINFER_OK;
}

dnnl_primitive_attr_t dnn_attr_new(dnn_b *b) {
    dnnl_primitive_attr_t attr = NULL;
    if (dnnl_primitive_attr_create(&attr) != dnnl_success)
        return NULL;
    dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
    (void)b;
    return attr;
}

minfer_status dnn_reorder_step(dnn_b *b, int src, int dst) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = dnn_attr_new(b);
    if (!attr)
        return dnn_decline(b, "out of memory");
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, mem_md(b, src), b->ctx->engine,
                                                         mem_md(b, dst), b->ctx->engine, attr);
    dnnl_primitive_attr_destroy(attr);
    if (s != dnnl_success)
        return dnn_fail(b, s, "reorder");
    int args[2] = {DNNL_ARG_FROM, DNNL_ARG_TO}, mems[2] = {src, dst};
    return dnn_step_add(b, pd, 2, args, mems);
}

/* ---- Activations ------------------------------------------------------------ */

typedef struct act_alg {
    dnnl_alg_kind_t alg;
    float alpha, beta;
} act_alg;

/* The oneDNN eltwise ops (at most 2) computing an ONNX/minfer activation
 * (the kit's table: names, parameters, defaults); -1 for one oneDNN cannot
 * express. */
static int act_algs(const char *act, const float *p, size_t np, act_alg out[2]) {
    minfer_kit_act k;
    if (minfer_kit_act_parse(act, p, np, &k, NULL, 0) != 0)
        return -1;
    float a = k.p[0], b = k.p[1];
    switch (k.kind) {
    case MINFER_KIT_ACT_RELU: out[0] = (act_alg){dnnl_eltwise_relu, 0.0f, 0.0f}; break;
    case MINFER_KIT_ACT_LEAKYRELU: out[0] = (act_alg){dnnl_eltwise_relu, a, 0.0f}; break;
    case MINFER_KIT_ACT_CLIP: out[0] = (act_alg){dnnl_eltwise_clip_v2, a, b}; break;
    case MINFER_KIT_ACT_SIGMOID: out[0] = (act_alg){dnnl_eltwise_logistic, 0.0f, 0.0f}; break;
    case MINFER_KIT_ACT_TANH: out[0] = (act_alg){dnnl_eltwise_tanh, 0.0f, 0.0f}; break;
    case MINFER_KIT_ACT_ELU: out[0] = (act_alg){dnnl_eltwise_elu, a, 0.0f}; break;
    case MINFER_KIT_ACT_HARDSWISH:
        if (!k.is_default) /* oneDNN 2.6's hardswish is ONNX's, no parameters */
            return -1;
        out[0] = (act_alg){dnnl_eltwise_hardswish, 0.0f, 0.0f};
        break;
    case MINFER_KIT_ACT_SILU: out[0] = (act_alg){dnnl_eltwise_swish, 1.0f, 0.0f}; break;
    case MINFER_KIT_ACT_EXP: out[0] = (act_alg){dnnl_eltwise_exp, 0.0f, 0.0f}; break;
    case MINFER_KIT_ACT_LOG: out[0] = (act_alg){dnnl_eltwise_log, 0.0f, 0.0f}; break;
    case MINFER_KIT_ACT_SQRT: out[0] = (act_alg){dnnl_eltwise_sqrt, 0.0f, 0.0f}; break;
    case MINFER_KIT_ACT_ABS: out[0] = (act_alg){dnnl_eltwise_abs, 0.0f, 0.0f}; break;
    case MINFER_KIT_ACT_GELU: out[0] = (act_alg){dnnl_eltwise_gelu_erf, 0.0f, 0.0f}; break;
    case MINFER_KIT_ACT_GELU_TANH:
        out[0] = (act_alg){dnnl_eltwise_gelu_tanh, 0.0f, 0.0f};
        break;
    case MINFER_KIT_ACT_HARDSIGMOID:
        /* oneDNN 2.6 has no hardsigmoid: alpha*x + beta, then clip to [0, 1]. */
        out[0] = (act_alg){dnnl_eltwise_linear, a, b};
        out[1] = (act_alg){dnnl_eltwise_clip_v2, 0.0f, 1.0f};
        return 2;
    default: return -1; /* none (the caller skips it), Selu, Softsign */
    }
    return 1;
}

minfer_status dnn_append_eltwise(dnn_b *b, dnnl_post_ops_t po, const char *act,
                                 const float *params, size_t n_params) {
    act_alg a[2];
    if (!act[0])
        return MINFER_OK;
    int k = act_algs(act, params, n_params, a);
    if (k < 0)
        return dnn_decline(b, "activation '%s' has no oneDNN form", act);
    for (int i = 0; i < k; i++)
        if (dnnl_post_ops_append_eltwise(po, 1.0f, a[i].alg, a[i].alpha, a[i].beta) !=
            dnnl_success)
            return dnn_decline(b, "could not append activation '%s'", act);
    return MINFER_OK;
}

minfer_status dnn_append_activation(dnn_b *b, dnnl_post_ops_t po) {
    const char *act = dnn_attr_str(b, "activation", "");
    const float *params = NULL;
    size_t np = 0;
    if (!b->ctx->api->attr_floats(b->node, "activation_params", &params, &np))
        np = 0;
    return dnn_append_eltwise(b, po, act, params, np);
}

int dnn_act_algs(const char *act, const float *p, size_t np, dnnl_alg_kind_t *alg,
                 float *alpha, float *beta) {
    act_alg a[2];
    int k = act_algs(act, p, np, a);
    for (int i = 0; i < k; i++) {
        alg[i] = a[i].alg;
        alpha[i] = a[i].alpha;
        beta[i] = a[i].beta;
    }
    return k;
}
