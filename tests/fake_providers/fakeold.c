/*
 * A provider built against older headers than the host's, to check that
 * the host keeps the ABI's promises to it. It does not use the current
 * minfer/provider.h structs; it carries copies of the layouts it was
 * "built" with:
 *
 *  FAKE_ABI == 1 (libminfer_provider_fakev1.so): ABI version 1 exactly,
 *    before minfer_value_desc.layout and the array strides were appended.
 *    Its desc arrays have another element size than the host's, so the
 *    host must refuse it, naming both versions, before calling anything.
 *  FAKE_ABI == 2 (libminfer_provider_fakeold.so): ABI version 2 with a
 *    vtable that ends at execute_node (no memory domain, no
 *    host_addressable, no describe_device) and a minfer_value_desc that
 *    lacks the last member the host has (as if `layout` had been appended
 *    after it was built). It steps through the host's arrays by the
 *    strides the host gives, so it must work: it runs Add of two float
 *    tensors of one shape, and declines anything else. It splits the Add
 *    with the host-taking parallel_for, as a provider built before the
 *    run-taking members (run_parallel_for) were appended: the host must
 *    keep running it correctly under every scheduler.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/minfer.h"

#ifndef FAKE_ABI
#error "build with -DFAKE_ABI=1 or 2"
#endif

#define OLD_NAME (FAKE_ABI == 1 ? "fakev1" : "fakeold")

typedef struct old_view {
    int32_t kind, dtype, rank;
    int64_t dims[MINFER_MAX_RANK];
    void *data;
    size_t offset, nbytes;
    uint64_t layout;
} old_view;

/* minfer_value_desc as it was in ABI 1 (and as this provider knows it). */
typedef struct old_value_desc {
    const char *name;
    int32_t kind, dtype, rank;
    int64_t dims[MINFER_MAX_RANK];
    const void *const_data;
    size_t const_nbytes;
    int32_t present;
} old_value_desc;

typedef struct old_node_desc {
    uint32_t struct_size;
    const char *name, *op_type, *domain;
    int64_t opset;
    size_t n_inputs, n_outputs;
    const old_value_desc *inputs, *outputs;
    const void *host_node;
#if FAKE_ABI >= 2
    uint32_t value_desc_size;
#endif
} old_node_desc;

typedef struct old_node_prep {
    uint32_t struct_size;
    size_t workspace_bytes;
    int32_t *output_inplace;
    uint64_t *output_layouts;
} old_node_prep;

typedef struct old_exec_args {
    uint32_t struct_size;
    void *run;
    const old_node_desc *node;
    const old_view *inputs;
    size_t n_inputs;
    old_view *outputs;
    size_t n_outputs;
    void *workspace;
    size_t workspace_bytes, workspace_offset;
#if FAKE_ABI >= 2
    uint32_t tensor_view_size;
#endif
} old_exec_args;

typedef void (*old_range_fn)(void *arg, size_t begin, size_t end);

/* The host API up to parallel_for: the members this provider uses. */
typedef struct old_host_api {
    uint32_t abi_version, struct_size;
    void (*log)(void *host, int level, const char *fmt, ...);
    void (*set_error)(void *host, const char *fmt, ...);
    void (*attr[7])(void); /* attr_type .. attr_tensor: not used */
    int (*num_threads)(void *host);
    void (*parallel_for)(void *host, size_t n, size_t grain, old_range_fn fn, void *arg);
} old_host_api;

/* The vtable, ending at execute_node. */
typedef struct old_provider {
    uint32_t abi_version, struct_size;
    const char *name, *version;
    minfer_status (*init)(const old_host_api *api, void *host, const char *options, void **ctx);
    void (*shutdown)(void *ctx);
    int (*supports_operator)(void *ctx, const old_node_desc *node, char *why, size_t why_size);
    minfer_status (*prepare_node)(void *ctx, const old_node_desc *node, old_node_prep *prep,
                                  void **node_state);
    void (*release_node)(void *ctx, void *node_state);
    minfer_status (*execute_node)(void *ctx, void *node_state, const old_exec_args *args);
} old_provider;

typedef struct old_ctx {
    const old_host_api *api;
    void *host;
} old_ctx;

static size_t desc_stride(const old_node_desc *n) {
    (void)n;
#if FAKE_ABI >= 2
    if (n->struct_size >= offsetof(old_node_desc, value_desc_size) + sizeof(uint32_t) &&
        n->value_desc_size)
        return n->value_desc_size;
#endif
    return sizeof(old_value_desc);
}

static size_t view_stride(const old_exec_args *a) {
    (void)a;
#if FAKE_ABI >= 2
    if (a->struct_size >= offsetof(old_exec_args, tensor_view_size) + sizeof(uint32_t) &&
        a->tensor_view_size)
        return a->tensor_view_size;
#endif
    return sizeof(old_view);
}

static const old_value_desc *in_desc(const old_node_desc *n, size_t i) {
    return (const old_value_desc *)(const void *)((const char *)n->inputs + i * desc_stride(n));
}

static const old_view *in_view(const old_exec_args *a, size_t i) {
    return (const old_view *)(const void *)((const char *)a->inputs + i * view_stride(a));
}

static minfer_status old_init(const old_host_api *api, void *host, const char *options,
                              void **ctx) {
    (void)options;
    old_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return MINFER_ERR_NOMEM;
    c->api = api;
    c->host = host;
    *ctx = c;
    return MINFER_OK;
}

static void old_shutdown(void *ctx) { free(ctx); }

/* Add of two present float inputs of one known shape. */
static int old_supports(void *ctx, const old_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    if (strcmp(n->op_type, "Add") != 0 || n->domain[0] || n->n_inputs != 2 || n->n_outputs != 1) {
        snprintf(why, why_size, "%s runs only Add", OLD_NAME);
        return 0;
    }
    const old_value_desc *a = in_desc(n, 0), *b = in_desc(n, 1);
    if (!a->present || !b->present || a->dtype != MINFER_DTYPE_FLOAT ||
        b->dtype != MINFER_DTYPE_FLOAT || a->rank < 0 || a->rank != b->rank ||
        memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) != 0) {
        snprintf(why, why_size, "%s: Add of two float tensors of one shape only (saw %s %s)",
                 OLD_NAME, a->name ? a->name : "?", b->name ? b->name : "?");
        return 0;
    }
    return 1;
}

typedef struct add_job {
    const float *x0, *x1;
    float *out;
} add_job;

static void add_range(void *arg, size_t begin, size_t end) {
    const add_job *j = arg;
    for (size_t i = begin; i < end; i++)
        j->out[i] = j->x0[i] + j->x1[i];
}

static minfer_status old_execute(void *ctx, void *state, const old_exec_args *args) {
    old_ctx *c = ctx;
    (void)state;
    const old_view *a = in_view(args, 0), *b = in_view(args, 1);
    const old_view *y = args->outputs; /* one output: no stride needed */
    int64_t n = 1;
    for (int32_t d = 0; d < a->rank; d++)
        n *= a->dims[d];
    size_t bytes = (size_t)n * sizeof(float);
    if (b->nbytes < bytes || y->nbytes < bytes || a->nbytes < bytes) {
        c->api->set_error(c->host, "%s: Add views of %zu, %zu, %zu bytes for %zu", OLD_NAME,
                          a->nbytes, b->nbytes, y->nbytes, bytes);
        return MINFER_ERR_RUNTIME;
    }
    const float *x0 = (const float *)(const void *)((const char *)a->data + a->offset);
    const float *x1 = (const float *)(const void *)((const char *)b->data + b->offset);
    float *out = (float *)(void *)((char *)y->data + y->offset);
    add_job job = {x0, x1, out};
#if FAKE_ABI >= 2
    if (c->api->struct_size >= offsetof(old_host_api, parallel_for) + sizeof c->api->parallel_for &&
        c->api->parallel_for) {
        c->api->parallel_for(c->host, (size_t)n, 1, add_range, &job);
        return MINFER_OK;
    }
#endif
    add_range(&job, 0, (size_t)n);
    return MINFER_OK;
}

static const old_provider vtable = {
    .abi_version = FAKE_ABI,
    .struct_size = sizeof(old_provider),
    .name = OLD_NAME,
    .version = "0.0.1",
    .init = old_init,
    .shutdown = old_shutdown,
    .supports_operator = old_supports,
    .execute_node = old_execute,
};

__attribute__((visibility("default"))) const old_provider *minfer_provider_entry(uint32_t host);
__attribute__((visibility("default"))) const old_provider *minfer_provider_entry(uint32_t host) {
    (void)host;
    return &vtable;
}
