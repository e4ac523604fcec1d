/* A plugin registering an op without a compute function. */
#include "fake_plugin.h"

static minfer_status reg(const minfer_plugin_host *host, minfer_plugin_registry *r) {
    static const minfer_plugin_op op = {
        .struct_size = sizeof(minfer_plugin_op),
        .domain = "com.fake",
        .op_type = "NoCompute",
        .since_version = 1,
        .infer = fake_same_infer,
    };
    return host->register_op(r, &op);
}

static const minfer_plugin_info info = {
    .abi_version = MINFER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(minfer_plugin_info),
    .name = "fpbadop",
    .version = "0",
    .register_ops = reg,
};

MINFER_PLUGIN_DEFINE(info)
