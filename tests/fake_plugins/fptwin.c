/* A second plugin that also registers com.example Swish (the example
 * plugin's op): loading both is an error naming both files. */
#include "fake_plugin.h"

static minfer_status reg(const minfer_plugin_host *host, minfer_plugin_registry *r) {
    static const minfer_plugin_op op = {
        .struct_size = sizeof(minfer_plugin_op),
        .domain = "com.example",
        .op_type = "Swish",
        .since_version = 1,
        .until_version = 3,
        .infer = fake_same_infer,
        .compute = fake_add_one,
    };
    return host->register_op(r, &op);
}

static const minfer_plugin_info info = {
    .abi_version = MINFER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(minfer_plugin_info),
    .name = "fptwin",
    .version = "0",
    .register_ops = reg,
};

MINFER_PLUGIN_DEFINE(info)
