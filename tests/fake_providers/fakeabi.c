/* A provider built against an ABI the host does not know (version 999):
 * the host must refuse it before calling any member. */
#include <stdio.h>

#include "fake_common.h"

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    (void)n;
    snprintf(why, why_size, "fakeabi must never be asked");
    return 0;
}

static minfer_status execute(void *ctx, void *state, const minfer_exec_args *a) {
    (void)ctx;
    (void)state;
    (void)a;
    return MINFER_ERR_RUNTIME;
}

static const minfer_provider fakeabi = {
    .abi_version = 999,
    .struct_size = sizeof(minfer_provider),
    .name = "fakeabi",
    .version = "0.0.1",
    .init = fake_init,
    .shutdown = fake_shutdown,
    .supports_operator = supports,
    .execute_node = execute,
};

MINFER_PROVIDER_DEFINE(fakeabi)
