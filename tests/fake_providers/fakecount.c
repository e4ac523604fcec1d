/* A provider that runs nothing and counts how many times it was
 * initialised and shut down (fakecount_inits, fakecount_shutdowns: read by
 * tests/test_shared_placement.c through dlsym on the same library), to
 * check that a session tree opens each provider once. */
#include <stdatomic.h>
#include <stdio.h>

#include "fake_common.h"

static atomic_int inits, shutdowns;

__attribute__((visibility("default"))) int fakecount_inits(void) { return atomic_load(&inits); }

__attribute__((visibility("default"))) int fakecount_shutdowns(void) {
    return atomic_load(&shutdowns);
}

static minfer_status init(const minfer_host_api *api, void *host, const char *options,
                          void **ctx) {
    atomic_fetch_add(&inits, 1);
    return fake_init(api, host, options, ctx);
}

static void shutdown_(void *ctx) {
    atomic_fetch_add(&shutdowns, 1);
    fake_shutdown(ctx);
}

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    snprintf(why, why_size, "fakecount runs nothing (asked for %s)", n->op_type);
    return 0;
}

static minfer_status execute(void *ctx, void *state, const minfer_exec_args *a) {
    fake_ctx *c = ctx;
    (void)state;
    c->api->set_error(c->host, "fakecount: asked to run %s", a->node->op_type);
    return MINFER_ERR_RUNTIME;
}

static const minfer_provider fakecount = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "fakecount",
    .version = "0.0.1",
    .init = init,
    .shutdown = shutdown_,
    .supports_operator = supports,
    .execute_node = execute,
};

MINFER_PROVIDER_DEFINE(fakecount)
