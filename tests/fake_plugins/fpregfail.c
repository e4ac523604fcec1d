/* A plugin whose register_ops fails for a reason of its own, and one
 * whose op is malformed (selected by the op it registers first). */
#include "fake_plugin.h"

static minfer_status reg(const minfer_plugin_host *host, minfer_plugin_registry *r) {
    host->set_error(r, "fpregfail needs a CPU feature this machine lacks");
    return MINFER_ERR_UNSUPPORTED;
}

static const minfer_plugin_info info = {
    .abi_version = MINFER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(minfer_plugin_info),
    .name = "fpregfail",
    .version = "0",
    .register_ops = reg,
};

MINFER_PLUGIN_DEFINE(info)
