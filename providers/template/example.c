/*
 * The "example" provider: a template for third-party minfer providers.
 *
 * It runs one op, Relu (ONNX default domain, any opset) on float tensors in
 * host memory, and declines everything else with a reason, so in a session
 * with the list "example,cpu" the Relu nodes run here and the rest on cpu.
 * What a real provider adds is more rows of ops and, for a device, the
 * memory hooks of docs/providers.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <minfer/provider.h>

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

static int example_supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    if (strcmp(n->op_type, "Relu") != 0 || n->domain[0] != '\0') {
        snprintf(why, why_size, "example runs only Relu");
        return 0;
    }
    if (n->n_inputs != 1 || n->n_outputs != 1 || n->inputs[0].dtype != MINFER_DTYPE_FLOAT) {
        snprintf(why, why_size, "example runs Relu on one float tensor only");
        return 0;
    }
    if (n->inputs[0].rank < 0) {
        snprintf(why, why_size, "example needs the input's rank at build time");
        return 0;
    }
    return 1;
}

typedef struct relu_job {
    const float *src;
    float *dst;
} relu_job;

static void relu_range(void *arg, size_t begin, size_t end) {
    const relu_job *j = arg;
    for (size_t i = begin; i < end; i++)
        j->dst[i] = j->src[i] > 0.0f ? j->src[i] : 0.0f;
}

/* Never allocates: the host sized and gave the output at build time. */
static minfer_status example_execute(void *ctx, void *state, const minfer_exec_args *a) {
    example_ctx *c = ctx;
    (void)state;
    const minfer_tensor_view *x = &a->inputs[0];
    const minfer_tensor_view *y = &a->outputs[0];
    size_t n = 1;
    for (int32_t i = 0; i < x->rank; i++)
        n *= (size_t)x->dims[i];
    if (y->nbytes < n * sizeof(float)) {
        c->api->set_error(c->host, "example: Relu '%s': output holds %zu bytes, needs %zu",
                          a->node->name, y->nbytes, n * sizeof(float));
        return MINFER_ERR_RUNTIME;
    }
    relu_job job = {(const float *)((const char *)x->data + x->offset),
                    (float *)((char *)y->data + y->offset)};
    /* The session's thread pool, never one of our own. */
    c->api->parallel_for(c->host, n, 4096, relu_range, &job);
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
