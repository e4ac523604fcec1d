/*
 * Shared pieces of the test providers. Each fake provider is a real shared
 * object the core dlopens, so the selector and loader are tested exactly as
 * a third-party provider would exercise them. Everything here is static:
 * each provider library carries its own copy.
 */
#ifndef MINFER_TESTS_FAKE_COMMON_H
#define MINFER_TESTS_FAKE_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "minfer/provider.h"

/* Per-instance state: the host API the provider was initialised with. */
typedef struct fake_ctx {
    const minfer_host_api *api;
    void *host;
} fake_ctx;

static inline minfer_status fake_init(const minfer_host_api *api, void *host, const char *options,
                               void **ctx) {
    (void)options;
    fake_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return MINFER_ERR_NOMEM;
    c->api = api;
    c->host = host;
    *ctx = c;
    return MINFER_OK;
}

static inline void fake_shutdown(void *ctx) { free(ctx); }

static inline int fake_is(const minfer_node_desc *n, const char *op) {
    return strcmp(n->op_type, op) == 0 && n->domain[0] == '\0';
}

/* Element count of a view; -1 for an unknown rank. */
static inline int64_t fake_numel(const minfer_tensor_view *v) {
    if (v->rank < 0)
        return -1;
    int64_t n = 1;
    for (int32_t i = 0; i < v->rank; i++)
        n *= v->dims[i];
    return n;
}

/* Gives output 0 the shape of input 0 when the host left it open. */
static inline minfer_status fake_shape_output_like_input(fake_ctx *c, const minfer_exec_args *a) {
    if (a->outputs[0].rank >= 0)
        return MINFER_OK;
    return c->api->alloc_output(a->run, 0, a->inputs[0].rank, a->inputs[0].dims);
}

static inline float *fake_f32(const minfer_tensor_view *v) {
    return (float *)((char *)v->data + v->offset);
}

#endif
