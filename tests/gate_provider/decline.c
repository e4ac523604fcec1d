/*
 * The "decline" test provider (tests/test_fusion_gate.c): the CPU provider
 * under another name, declining every op of the minfer domain, so that a
 * session whose only provider it is would be refused any fused node the
 * optimizer made. Every other call goes to the CPU provider, dlopened from
 * the path compiled in (MINFER_CPU_PROVIDER_PATH); its instances are the
 * CPU provider's. The CPU provider's vtable is copied into this one at the
 * entry call: the one piece of state outside an instance, which a test
 * double may keep (it is the same for every session of the process).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "minfer/provider.h"

static minfer_provider vt;
static const minfer_provider *cpu;

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t size) {
    if (strcmp(n->domain, "minfer") == 0) {
        snprintf(why, size, "decline runs no op of the minfer domain (%s)", n->op_type);
        return 0;
    }
    return cpu->supports_operator(ctx, n, why, size);
}

MINFER_PROVIDER_EXPORT const minfer_provider *minfer_provider_entry(uint32_t host_abi) {
    if (!cpu) {
        void *h = dlopen(MINFER_CPU_PROVIDER_PATH, RTLD_NOW | RTLD_LOCAL);
        if (!h)
            return NULL;
        minfer_provider_entry_fn fn;
        *(void **)&fn = dlsym(h, MINFER_PROVIDER_ENTRY_SYMBOL);
        const minfer_provider *c = fn ? fn(host_abi) : NULL;
        if (!c || c->struct_size != sizeof vt)
            return NULL;
        vt = *c;
        vt.name = "decline";
        vt.supports_operator = supports;
        cpu = c;
    }
    return &vt;
}
