/* A plugin built for a plugin ABI this minfer does not have. */
#include "fake_plugin.h"

static minfer_status reg(const minfer_plugin_host *host, minfer_plugin_registry *r) {
    (void)host;
    (void)r;
    return MINFER_OK;
}

static const minfer_plugin_info info = {
    .abi_version = 99,
    .struct_size = sizeof(minfer_plugin_info),
    .name = "fpbadabi",
    .version = "0",
    .register_ops = reg,
};

MINFER_PLUGIN_DEFINE(info)
