/* A shared object that looks like a provider but exports no entry symbol
 * (the vtable is there, under a name the host does not look for). */
#include "fake_common.h"

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

static const minfer_provider fakenosym = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "fakenosym",
    .version = "0.0.1",
    .init = fake_init,
    .shutdown = fake_shutdown,
    .supports_operator = supports,
    .execute_node = execute,
};

MINFER_PROVIDER_EXPORT const minfer_provider *fakenosym_wrong_entry_name(uint32_t host_abi);

MINFER_PROVIDER_EXPORT const minfer_provider *fakenosym_wrong_entry_name(uint32_t host_abi) {
    (void)host_abi;
    return &fakenosym;
}
