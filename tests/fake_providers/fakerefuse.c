/* A provider that runs Add (float, equal shapes) and refuses Relu with a
 * reason the host should log. */
#include <stdio.h>

#include "fake_common.h"

static int same_known_shape(const minfer_value_desc *a, const minfer_value_desc *b) {
    if (a->rank < 0 || a->rank != b->rank)
        return 0;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dims[i] < 0 || a->dims[i] != b->dims[i])
            return 0;
    return 1;
}

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    if (fake_is(n, "Relu")) {
        snprintf(why, why_size, "fakerefuse refuses Relu");
        return 0;
    }
    if (!fake_is(n, "Add")) {
        snprintf(why, why_size, "fakerefuse runs only Add");
        return 0;
    }
    if (n->n_inputs != 2 || n->inputs[0].dtype != MINFER_DTYPE_FLOAT ||
        n->inputs[1].dtype != MINFER_DTYPE_FLOAT || !same_known_shape(&n->inputs[0], &n->inputs[1])) {
        snprintf(why, why_size, "fakerefuse runs Add only on float tensors of one static shape");
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
    int64_t n = fake_numel(&a->outputs[0]);
    if (n != fake_numel(&a->inputs[0]) || n != fake_numel(&a->inputs[1])) {
        c->api->set_error(c->host, "fakerefuse: Add operands differ in size");
        return MINFER_ERR_SHAPE;
    }
    const float *x = fake_f32(&a->inputs[0]), *y = fake_f32(&a->inputs[1]);
    float *z = fake_f32(&a->outputs[0]);
    for (int64_t i = 0; i < n; i++)
        z[i] = x[i] + y[i];
    return MINFER_OK;
}

static const minfer_provider fakerefuse = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "fakerefuse",
    .version = "0.0.1",
    .init = fake_init,
    .shutdown = fake_shutdown,
    .supports_operator = supports,
    .execute_node = execute,
};

MINFER_PROVIDER_DEFINE(fakerefuse)
