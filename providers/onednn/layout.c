/*
 * Layouts of the oneDNN provider: the registry of the memory descriptors
 * its outputs keep (a layout id is 0 for plain row-major, k > 0 for the
 * k-th descriptor registered), plain descriptors, and the memory domain's
 * callbacks (allocation, sizes, reorders to and from plain host memory).
 * It calls nothing else of the provider: the build functions, the split
 * forms and the vtable call down into it.
 */
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* ---- Plain memory descriptors ----------------------------------------------- */

dnnl_status_t dnn_plain_md(dnnl_memory_desc_t *md, int rank, const int64_t *dims) {
    return dnn_plain_md_dt(md, rank, dims, dnnl_f32);
}

dnnl_status_t dnn_plain_md_dt(dnnl_memory_desc_t *md, int rank, const int64_t *dims,
                              dnnl_data_type_t dt) {
    dnnl_dims_t d, s;
    if (rank == 0) {
        d[0] = 1;
        rank = 1;
    } else {
        for (int i = 0; i < rank; i++)
            d[i] = dims[i];
    }
    if (rank > DNNL_MAX_NDIMS)
        return dnnl_invalid_arguments;
    dnnl_dim_t stride = 1;
    for (int i = rank - 1; i >= 0; i--) {
        s[i] = stride;
        stride *= d[i] > 0 ? d[i] : 1;
    }
    return dnnl_memory_desc_init_by_strides(md, rank, d, dt, s);
}

dnnl_data_type_t dnn_dtype(int32_t dtype) {
    switch (dtype) {
    case MINFER_DTYPE_UINT8: return dnnl_u8;
    case MINFER_DTYPE_INT8: return dnnl_s8;
    case MINFER_DTYPE_INT32: return dnnl_s32;
    default: return dnnl_f32;
    }
}

int dnn_md_is_plain(const dnnl_memory_desc_t *md) {
    dnnl_memory_desc_t p;
    if (dnn_plain_md_dt(&p, md->ndims, md->dims, md->data_type) != dnnl_success)
        return 0;
    return dnnl_memory_desc_equal(&p, md);
}

/* ---- Layout registry ------------------------------------------------------- */

static dnnl_status_t make_reorder(dnn_ctx *ctx, const dnnl_memory_desc_t *src,
                                  const dnnl_memory_desc_t *dst, dnnl_primitive_t *prim) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, src, ctx->engine, dst,
                                                         ctx->engine, NULL);
    if (s == dnnl_success)
        s = dnnl_primitive_create(prim, pd);
    dnnl_primitive_desc_destroy(pd);
    return s;
}

uint64_t dnn_layout_id(dnn_ctx *ctx, const dnnl_memory_desc_t *md) {
    if (dnn_md_is_plain(md))
        return 0;
    for (size_t i = 0; i < ctx->n_layouts; i++)
        if (dnnl_memory_desc_equal(&ctx->layouts[i].md, md))
            return i + 1;
    if (ctx->n_layouts == ctx->cap_layouts) {
        size_t cap = ctx->cap_layouts ? 2 * ctx->cap_layouts : 16;
        dnn_layout *l = realloc(ctx->layouts, cap * sizeof *l);
        if (!l)
            return UINT64_MAX;
        ctx->layouts = l;
        ctx->cap_layouts = cap;
    }
    dnn_layout *l = &ctx->layouts[ctx->n_layouts];
    memset(l, 0, sizeof *l);
    l->md = *md;
    dnnl_status_t s = dnn_plain_md_dt(&l->plain, md->ndims, md->dims, md->data_type);
    if (s == dnnl_success)
        s = make_reorder(ctx, &l->md, &l->plain, &l->to_plain);
    if (s == dnnl_success)
        s = make_reorder(ctx, &l->plain, &l->md, &l->from_plain);
    if (s == dnnl_success)
        s = dnnl_memory_create(&l->m_md, &l->md, ctx->engine, DNNL_MEMORY_NONE);
    if (s == dnnl_success)
        s = dnnl_memory_create(&l->m_plain, &l->plain, ctx->engine, DNNL_MEMORY_NONE);
    if (s != dnnl_success) {
        dnnl_primitive_destroy(l->to_plain);
        dnnl_primitive_destroy(l->from_plain);
        dnnl_memory_destroy(l->m_md);
        dnnl_memory_destroy(l->m_plain);
        return UINT64_MAX;
    }
    return ++ctx->n_layouts;
}

const dnn_layout *dnn_layout_get(const dnn_ctx *ctx, uint64_t id) {
    return id >= 1 && id <= ctx->n_layouts ? &ctx->layouts[id - 1] : NULL;
}


void dnn_layouts_free(dnn_ctx *ctx) {
    for (size_t i = 0; i < ctx->n_layouts; i++) {
        dnn_layout *l = &ctx->layouts[i];
        dnnl_primitive_destroy(l->to_plain);
        dnnl_primitive_destroy(l->from_plain);
        dnnl_memory_destroy(l->m_md);
        dnnl_memory_destroy(l->m_plain);
    }
    free(ctx->layouts);
    ctx->layouts = NULL;
    ctx->n_layouts = ctx->cap_layouts = 0;
}

/* ---- Memory domain ----------------------------------------------------------- */

#ifdef ONEDNN_OWN_DOMAIN
static size_t dtype_size(int32_t d) {
    switch (d) {
    case MINFER_DTYPE_FLOAT: case MINFER_DTYPE_INT32: case MINFER_DTYPE_UINT32: return 4;
    case MINFER_DTYPE_DOUBLE: case MINFER_DTYPE_INT64: case MINFER_DTYPE_UINT64: return 8;
    case MINFER_DTYPE_FLOAT16: case MINFER_DTYPE_BFLOAT16: case MINFER_DTYPE_INT16:
    case MINFER_DTYPE_UINT16: return 2;
    default: return 1;
    }
}

minfer_status dnn_mem_alloc(void *ctx, size_t bytes, void **buffer) {
    (void)ctx;
    *buffer = NULL;
    if (posix_memalign(buffer, DNN_ALIGN, bytes ? bytes : 1) != 0)
        return MINFER_ERR_NOMEM;
    return MINFER_OK;
}

void dnn_mem_free(void *ctx, void *buffer) {
    (void)ctx;
    free(buffer);
}

size_t dnn_tensor_bytes(void *vctx, const minfer_tensor_view *v) {
    const dnn_layout *l = dnn_layout_get(vctx, v->layout);
    if (l)
        return dnnl_memory_desc_get_size(&l->md);
    int64_t n = dnn_numel(v->rank > 0 ? v->rank : 0, v->dims);
    size_t bytes;
    /* SIZE_MAX, never a wrapped count, when it does not fit: the host
     * then refuses the plan. */
    if (n < 0 || minfer_size_mul((size_t)n, dtype_size(v->dtype), &bytes) != MINFER_OK)
        return SIZE_MAX;
    return bytes;
}

/* Runs a registered layout's reorder between src and dst. */
static minfer_status layout_reorder(dnn_ctx *ctx, const dnn_layout *l, int to_plain, void *md_buf,
                                    void *plain_buf) {
    omp_set_num_threads(ctx->threads);
    dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, to_plain ? l->m_md : l->m_plain},
                               {DNNL_ARG_TO, to_plain ? l->m_plain : l->m_md}};
    if (dnnl_memory_set_data_handle_v2(l->m_md, md_buf, ctx->stream) != dnnl_success ||
        dnnl_memory_set_data_handle_v2(l->m_plain, plain_buf, ctx->stream) != dnnl_success ||
        dnnl_primitive_execute(to_plain ? l->to_plain : l->from_plain, ctx->stream, 2, args) !=
            dnnl_success ||
        dnnl_stream_wait(ctx->stream) != dnnl_success) {
        ctx->api->set_error(ctx->host, "onednn: layout conversion failed");
        return MINFER_ERR_RUNTIME;
    }
    return MINFER_OK;
}

minfer_status dnn_copy_to_host(void *vctx, const minfer_tensor_view *src, void *dst,
                                      size_t dst_bytes) {
    dnn_ctx *ctx = vctx;
    char *p = (char *)src->data + src->offset;
    const dnn_layout *l = dnn_layout_get(ctx, src->layout);
    if (!l) {
        memcpy(dst, p, src->nbytes < dst_bytes ? src->nbytes : dst_bytes);
        return MINFER_OK;
    }
    if (dst_bytes < dnnl_memory_desc_get_size(&l->plain)) {
        ctx->api->set_error(ctx->host, "onednn: copy_to_host: %zu bytes given, %zu needed",
                            dst_bytes, dnnl_memory_desc_get_size(&l->plain));
        return MINFER_ERR_RUNTIME;
    }
    return layout_reorder(ctx, l, 1, p, dst);
}

minfer_status dnn_copy_from_host(void *vctx, const void *src, size_t src_bytes,
                                        const minfer_tensor_view *dst) {
    dnn_ctx *ctx = vctx;
    char *p = (char *)dst->data + dst->offset;
    const dnn_layout *l = dnn_layout_get(ctx, dst->layout);
    if (!l) {
        memcpy(p, src, src_bytes < dst->nbytes ? src_bytes : dst->nbytes);
        return MINFER_OK;
    }
    return layout_reorder(ctx, l, 0, p, (void *)src);
}
#endif
