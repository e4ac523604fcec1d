/*
 * The "fault" test provider: runs Relu and Add on float tensors, and fails
 * on demand, so tests can check what a failing provider does to a session.
 *
 * Option string (minfer_options_set_provider_options(opt, "fault", ...)):
 *   fail_at=K       the K-th execute_node call of this instance (1-based)
 *                   fails, once
 *   fail_prepare=1  every prepare_node fails (MINFER_ERR_RUNTIME)
 *   fail_prepare=2  every prepare_node runs out of a resource (device
 *                   memory: MINFER_ERR_NOMEM)
 * Environment, read at every execute_node call:
 *   MINFER_FAULT_FAIL=NAME   executing the node named NAME fails ("*": any)
 * A failure sets the message "fault provider: injected failure executing
 * node 'NAME' (call K)" through the host and returns MINFER_ERR_RUNTIME.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/provider.h"

typedef struct fault_ctx {
    const minfer_host_api *api;
    void *host;
    long fail_at;
    int fail_prepare; /* 0, 1: an error, 2: out of a resource */
    long calls;
} fault_ctx;

static long option_long(const char *options, const char *key) {
    size_t k = strlen(key);
    for (const char *p = options; p && *p;) {
        if (strncmp(p, key, k) == 0 && p[k] == '=')
            return atol(p + k + 1);
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return 0;
}

static minfer_status init(const minfer_host_api *api, void *host, const char *options,
                          void **ctx) {
    fault_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return MINFER_ERR_NOMEM;
    c->api = api;
    c->host = host;
    c->fail_at = option_long(options, "fail_at");
    c->fail_prepare = (int)option_long(options, "fail_prepare");
    *ctx = c;
    return MINFER_OK;
}

static void shutdown(void *ctx) { free(ctx); }

static int is_op(const minfer_node_desc *n, const char *op) {
    return strcmp(n->op_type, op) == 0 && n->domain[0] == '\0';
}

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    int relu = is_op(n, "Relu") && n->n_inputs == 1;
    int add = is_op(n, "Add") && n->n_inputs == 2;
    if (!relu && !add) {
        snprintf(why, why_size, "fault runs only Relu and Add");
        return 0;
    }
    for (size_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i].dtype != MINFER_DTYPE_FLOAT || n->inputs[i].rank < 0) {
            snprintf(why, why_size, "fault runs float tensors of known rank only");
            return 0;
        }
    if (add) { /* no broadcasting */
        const minfer_value_desc *a = &n->inputs[0], *b = &n->inputs[1];
        int same = a->rank == b->rank;
        for (int d = 0; same && d < a->rank; d++)
            same = a->dims[d] == b->dims[d] && a->dims[d] >= 0;
        if (!same) {
            snprintf(why, why_size, "fault adds equal static shapes only");
            return 0;
        }
    }
    return 1;
}

static minfer_status prepare(void *ctx, const minfer_node_desc *n, minfer_node_prep *prep,
                             void **state) {
    fault_ctx *c = ctx;
    (void)prep;
    *state = NULL;
    if (c->fail_prepare == 2) {
        c->api->set_error(c->host, "fault provider: out of device memory preparing node '%s'",
                          n->name);
        return MINFER_ERR_NOMEM;
    }
    if (c->fail_prepare) {
        c->api->set_error(c->host, "fault provider: injected failure preparing node '%s'",
                          n->name);
        return MINFER_ERR_RUNTIME;
    }
    return MINFER_OK;
}

static minfer_status execute(void *ctx, void *state, const minfer_exec_args *a) {
    fault_ctx *c = ctx;
    const char *env = getenv("MINFER_FAULT_FAIL");
    const char *name = a->node->name;
    (void)state;
    c->calls++;
    if (c->calls == c->fail_at ||
        (env && env[0] && (strcmp(env, "*") == 0 || strcmp(env, name) == 0))) {
        c->api->set_error(c->host, "fault provider: injected failure executing node '%s' (call %ld)",
                          name, c->calls);
        return MINFER_ERR_RUNTIME;
    }
    const minfer_tensor_view *x = &a->inputs[0];
    minfer_tensor_view *y = &a->outputs[0];
    if (y->rank < 0) {
        minfer_status st = c->api->alloc_output(a->run, 0, x->rank, x->dims);
        if (st != MINFER_OK)
            return st;
    }
    size_t n = y->nbytes / sizeof(float);
    if (x->nbytes / sizeof(float) < n)
        n = x->nbytes / sizeof(float);
    const float *xs = (const float *)((const char *)x->data + x->offset);
    float *ys = (float *)((char *)y->data + y->offset);
    if (a->n_inputs == 1) {
        for (size_t i = 0; i < n; i++)
            ys[i] = xs[i] > 0.0f ? xs[i] : 0.0f;
    } else {
        const float *bs = (const float *)((const char *)a->inputs[1].data + a->inputs[1].offset);
        for (size_t i = 0; i < n; i++)
            ys[i] = xs[i] + bs[i];
    }
    return MINFER_OK;
}

static const minfer_provider fault = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "fault",
    .version = "0.0.1",
    .init = init,
    .shutdown = shutdown,
    .supports_operator = supports,
    .prepare_node = prepare,
    .execute_node = execute,
};

MINFER_PROVIDER_DEFINE(fault)
