/* A well-behaved test provider: runs Relu on float tensors, nothing else. */
#include <stdio.h>

#include "fake_common.h"

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    if (!fake_is(n, "Relu")) {
        snprintf(why, why_size, "fakegood runs only Relu");
        return 0;
    }
    if (n->n_inputs != 1 || n->inputs[0].dtype != MINFER_DTYPE_FLOAT) {
        snprintf(why, why_size, "fakegood runs Relu on float only");
        return 0;
    }
    return 1;
}

static minfer_status execute(void *ctx, void *state, const minfer_exec_args *a) {
    fake_ctx *c = ctx;
    (void)state;
    minfer_status st = fake_shape_output_like_input(c, a);
    if (st != MINFER_OK)
        return st;
    int64_t n = fake_numel(&a->inputs[0]);
    if (n != fake_numel(&a->outputs[0])) {
        c->api->set_error(c->host, "fakegood: Relu output size differs from its input");
        return MINFER_ERR_SHAPE;
    }
    const float *x = fake_f32(&a->inputs[0]);
    float *y = fake_f32(&a->outputs[0]);
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return MINFER_OK;
}

static const minfer_provider fakegood = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "fakegood",
    .version = "0.0.1",
    .init = fake_init,
    .shutdown = fake_shutdown,
    .supports_operator = supports,
    .execute_node = execute,
};

MINFER_PROVIDER_DEFINE(fakegood)
