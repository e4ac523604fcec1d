/* Ops that exercise the host's side of the ABI (tests/test_plugins.c),
 * all in domain com.fake:
 *   AddOne       Y = X + 1, not declared deterministic (never folded)
 *   AddOneDet    Y = X + 1, deterministic (folded when X is constant)
 *   FailCompute  infers like AddOne, compute fails with a message
 *   FailInfer    infer fails with a message
 *   FailCreate   create fails with a message
 * and AddOneDefault (Y = X + 1) in the default domain, an op ONNX does not
 * define: the way ONNX Runtime's SimplifiedLayerNormalization reaches us.
 * The counters record how often create/destroy ran, so the test can check
 * that every create is paired with a destroy. */
#include "fake_plugin.h"

MINFER_PLUGIN_EXPORT int fp_creates, fp_destroys;

static minfer_status count_create(void *op, const minfer_plugin_create_args *a, void **state) {
    (void)op;
    (void)a;
    fp_creates++;
    *state = &fp_creates;
    return MINFER_OK;
}

static void count_destroy(void *op, void *state) {
    (void)op;
    if (state == &fp_creates)
        fp_destroys++;
}

static minfer_status fail_compute(void *op, void *state, const minfer_plugin_compute_args *a) {
    (void)op;
    (void)state;
    snprintf(a->err, a->err_size, "FailCompute refuses on purpose");
    return MINFER_ERR_RUNTIME;
}

static minfer_status fail_infer(void *op, const minfer_plugin_infer_args *a) {
    (void)op;
    snprintf(a->err, a->err_size, "FailInfer dislikes input 0");
    return MINFER_ERR_TYPE;
}

static minfer_status fail_create(void *op, const minfer_plugin_create_args *a, void **state) {
    (void)op;
    (void)state;
    snprintf(a->err, a->err_size, "FailCreate has no weights");
    return MINFER_ERR_MODEL;
}

#define OP(type, fl, inf, cr, co)                                                              \
    {.struct_size = sizeof(minfer_plugin_op), .domain = "com.fake", .op_type = type,            \
     .since_version = 1, .flags = fl, .infer = inf, .create = cr, .compute = co,                \
     .destroy = count_destroy}

static minfer_status reg(const minfer_plugin_host *host, minfer_plugin_registry *r) {
    static const minfer_plugin_op ops[] = {
        OP("AddOne", 0, fake_same_infer, count_create, fake_add_one),
        OP("AddOneDet", MINFER_PLUGIN_OP_DETERMINISTIC, fake_same_infer, count_create,
           fake_add_one),
        OP("FailCompute", 0, fake_same_infer, count_create, fail_compute),
        OP("FailInfer", 0, fail_infer, count_create, fake_add_one),
        OP("FailCreate", 0, fake_same_infer, fail_create, fake_add_one),
        {.struct_size = sizeof(minfer_plugin_op), .domain = "", .op_type = "AddOneDefault",
         .since_version = 1, .infer = fake_same_infer, .compute = fake_add_one},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        minfer_status st = host->register_op(r, &ops[i]);
        if (st != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

static const minfer_plugin_info info = {
    .abi_version = MINFER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(minfer_plugin_info),
    .name = "fpops",
    .version = "0",
    .register_ops = reg,
};

MINFER_PLUGIN_DEFINE(info)
