/*
 * The "example" provider: a template for third-party minfer providers.
 *
 * It runs one op, Relu (ONNX default domain, every opset) on float
 * tensors in host memory, and declines everything else with a reason, so in
 * a session with the list "example,cpu" the Relu nodes run here and the
 * rest on cpu. What a real provider adds is more rows in its kernel table
 * and, for a device, the memory hooks of docs/providers.md.
 *
 * It uses the provider kit (minfer/provider_kit.h, header-only): the
 * opset-versioned table lookup, reasons, and the accessors that step
 * through the host's arrays by the stride the host gives, so the library
 * keeps working with a newer minfer whose structs have grown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <minfer/provider_kit.h>

#ifndef EXAMPLE_VERSION
#define EXAMPLE_VERSION "0"
#endif

/* All state lives in the ctx init returns: two sessions may hold two
 * instances. */
typedef struct example_ctx {
    const minfer_host_api *api;
    void *host;
} example_ctx;

static minfer_status example_init(const minfer_host_api *api, void *host, const char *options,
                                  void **ctx) {
    if (options[0]) {
        api->set_error(host, "example: unknown option string '%s' (it takes none)", options);
        return MINFER_ERR_INVALID_ARG;
    }
    example_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        api->set_error(host, "example: out of memory");
        return MINFER_ERR_NOMEM;
    }
    c->api = api;
    c->host = host;
    *ctx = c;
    return MINFER_OK;
}

static void example_shutdown(void *ctx) { free(ctx); }

typedef struct relu_job {
    const float *src;
    float *dst;
} relu_job;

static void relu_range(void *arg, size_t begin, size_t end) {
    const relu_job *j = arg;
    for (size_t i = begin; i < end; i++)
        j->dst[i] = j->src[i] > 0.0f ? j->src[i] : 0.0f;
}

/* The kernel table: {domain, op, since_version, ...}; an entry serves the
 * opsets from its since_version up to the next entry's. */
typedef struct example_kernel {
    const char *domain;
    const char *op_type;
    int64_t since_version;
    minfer_range_fn range;
} example_kernel;

static const example_kernel kernels[] = {
    {"", "Relu", 1, relu_range},
    {"", "Relu", 14, relu_range}, /* 14 added bfloat16; this kernel takes float */
};
#define N_KERNELS (sizeof kernels / sizeof kernels[0])

static int example_supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    if (!MINFER_KIT_FIND_KERNEL(example_kernel, kernels, N_KERNELS, n, "example kernel", why,
                                why_size))
        return 0;
    const minfer_value_desc *x = minfer_kit_input(n, 0);
    if (n->n_inputs != 1 || n->n_outputs != 1 || !x || x->dtype != MINFER_DTYPE_FLOAT) {
        minfer_kit_decline(why, why_size, n->op_type, "example runs one float tensor only");
        return 0;
    }
    if (x->rank < 0) {
        minfer_kit_decline(why, why_size, n->op_type, "example needs the input's rank");
        return 0;
    }
    return 1;
}

/* Never allocates: the host sized and gave the output at build time. */
static minfer_status example_execute(void *ctx, void *state, const minfer_exec_args *a) {
    example_ctx *c = ctx;
    (void)state;
    const example_kernel *k = MINFER_KIT_FIND_KERNEL(example_kernel, kernels, N_KERNELS,
                                                     a->node, "example kernel", NULL, 0);
    const minfer_tensor_view *x = minfer_kit_view_input(a, 0);
    const minfer_tensor_view *y = minfer_kit_view_output(a, 0);
    size_t need;
    if (!k || !x || !y || minfer_view_nbytes(x, &need) != MINFER_OK || x->nbytes < need ||
        y->nbytes < need) {
        c->api->set_error(c->host, "example: %s '%s': input or output missing or too small",
                          a->node->op_type, a->node->name);
        return MINFER_ERR_RUNTIME;
    }
    size_t n = need / sizeof(float);
    relu_job job = {(const float *)((const char *)x->data + x->offset),
                    (float *)((char *)y->data + y->offset)};
    /* The session's threads, never a pool of our own: through the run, so
     * the scheduler decides how many this node gets (an older host has
     * only the session-wide parallel_for). */
    if (MINFER_HOST_HAS(c->api, run_parallel_for))
        c->api->run_parallel_for(a->run, n, 4096, k->range, &job);
    else
        c->api->parallel_for(c->host, n, 4096, k->range, &job);
    return MINFER_OK;
}

static const minfer_provider example_provider = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "example", /* must match libminfer_provider_example.so */
    .version = EXAMPLE_VERSION,
    .init = example_init,
    .shutdown = example_shutdown,
    .supports_operator = example_supports,
    .execute_node = example_execute,
    /* prepare_node, release_node NULL: no per-node state.
     * memory_domain NULL: computes in host memory, so no memory hooks. */
};

MINFER_PROVIDER_DEFINE(example_provider)
