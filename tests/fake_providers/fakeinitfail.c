/* A provider whose init fails, as a device provider does when it finds no
 * device: the host must skip it with the reason set here. */
#include "fake_common.h"

static minfer_status init_fails(const minfer_host_api *api, void *host, const char *options,
                                void **ctx) {
    (void)options;
    *ctx = NULL;
    api->set_error(host, "fakeinitfail: no fake device present");
    return MINFER_ERR_PROVIDER;
}

static void fail_shutdown(void *ctx) { (void)ctx; }

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    (void)n;
    (void)why;
    (void)why_size;
    return 1;
}

static minfer_status execute(void *ctx, void *state, const minfer_exec_args *a) {
    (void)ctx;
    (void)state;
    (void)a;
    return MINFER_ERR_RUNTIME;
}

static const minfer_provider fakeinitfail = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "fakeinitfail",
    .version = "0.0.1",
    .init = init_fails,
    .shutdown = fail_shutdown,
    .supports_operator = supports,
    .execute_node = execute,
};

MINFER_PROVIDER_DEFINE(fakeinitfail)
