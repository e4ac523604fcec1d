/*
 * The example plugin: one op, com.example Swish, walked through in
 * docs/plugins.md.
 *
 *     Y = X * sigmoid(alpha * X)      (alpha: float attribute, default 1.0)
 *
 * X is float or double of any shape; Y has X's type and shape. With
 * alpha = 1 this is SiLU; with alpha = 1.702 the sigmoid approximation of
 * GELU. The op is deterministic (the optimizer may fold it when X is a
 * constant) and may write Y over X.
 *
 * A plugin is three things: the op's callbacks (infer, create, compute,
 * destroy), a register_ops that hands minfer the op table, and the entry
 * symbol (MINFER_PLUGIN_DEFINE). It links nothing of minfer's: everything
 * it needs from the host comes through the argument structs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/plugin.h"
#include "minfer/provider_kit.h"

/* Per-node state made by create: the parsed attribute. */
typedef struct swish_state {
    float alpha;
} swish_state;

/* Reads alpha (default 1) and checks it; shared by infer and create. */
static minfer_status read_alpha(const minfer_host_api *api, const minfer_node_desc *n,
                                float *alpha, char *err, size_t err_size) {
    *alpha = 1.0f;
    int type = api->attr_type(n, "alpha");
    if (type == MINFER_ATTR_UNDEFINED)
        return MINFER_OK;
    if (type != MINFER_ATTR_FLOAT || !api->attr_float(n, "alpha", alpha)) {
        snprintf(err, err_size, "attribute 'alpha' must be a float");
        return MINFER_ERR_MODEL;
    }
    if (!isfinite(*alpha)) {
        snprintf(err, err_size, "attribute 'alpha' is %g; it must be finite", (double)*alpha);
        return MINFER_ERR_MODEL;
    }
    return MINFER_OK;
}

/* Type and shape inference: one float or double input, an output like it. */
static minfer_status swish_infer(void *op_data, const minfer_plugin_infer_args *a) {
    const minfer_node_desc *n = a->node;
    float alpha;
    (void)op_data;
    if (n->n_inputs != 1 || !n->inputs[0].present || a->n_outputs != 1) {
        snprintf(a->err, a->err_size, "Swish takes 1 input and gives 1 output (got %zu and %zu)",
                 n->n_inputs, a->n_outputs);
        return MINFER_ERR_MODEL;
    }
    const minfer_value_desc *x = &n->inputs[0];
    if (x->dtype != MINFER_DTYPE_FLOAT && x->dtype != MINFER_DTYPE_DOUBLE) {
        snprintf(a->err, a->err_size, "input 0 is %s; Swish takes float or double",
                 minfer_elem_name(x->dtype));
        return MINFER_ERR_TYPE;
    }
    minfer_status st = read_alpha(a->api, n, &alpha, a->err, a->err_size);
    if (st != MINFER_OK)
        return st;
    a->outputs[0].dtype = x->dtype;
    a->outputs[0].rank = x->rank; /* -1 (unknown) stays unknown */
    memcpy(a->outputs[0].dims, x->dims, sizeof x->dims);
    return MINFER_OK;
}

/* Once per node and plan: the attribute, parsed once instead of every run. */
static minfer_status swish_create(void *op_data, const minfer_plugin_create_args *a,
                                  void **state) {
    (void)op_data;
    swish_state *s = malloc(sizeof *s);
    if (!s) {
        snprintf(a->err, a->err_size, "out of memory");
        return MINFER_ERR_NOMEM;
    }
    minfer_status st = read_alpha(a->api, a->node, &s->alpha, a->err, a->err_size);
    if (st != MINFER_OK) {
        free(s);
        return st;
    }
    *state = s;
    return MINFER_OK;
}

static void swish_destroy(void *op_data, void *state) {
    (void)op_data;
    free(state);
}

/* The work, split over the session's threads by parallel_for. */
typedef struct range_args {
    const void *x;
    void *y;
    int32_t dtype;
    float alpha;
} range_args;

static void swish_range(void *arg, size_t begin, size_t end) {
    const range_args *r = arg;
    if (r->dtype == MINFER_DTYPE_FLOAT) {
        const float *x = r->x;
        float *y = r->y;
        for (size_t i = begin; i < end; i++)
            y[i] = x[i] / (1.0f + expf(-r->alpha * x[i]));
    } else {
        const double *x = r->x;
        double *y = r->y;
        for (size_t i = begin; i < end; i++)
            y[i] = x[i] / (1.0 + exp(-(double)r->alpha * x[i]));
    }
}

static minfer_status swish_compute(void *op_data, void *state,
                                   const minfer_plugin_compute_args *a) {
    const swish_state *s = state;
    const minfer_tensor_view *x = &a->inputs[0];
    minfer_tensor_view *y = &a->outputs[0];
    size_t bytes;
    (void)op_data;
    /* The output's shape was inferred; rank -1 only when X's was unknown
     * at build time: allocate it now, like X. */
    if (y->rank < 0) {
        y->dtype = x->dtype;
        minfer_status st = a->api->alloc_output(a->run, 0, x->rank, x->dims);
        if (st != MINFER_OK)
            return st;
    }
    /* Never trust sizes: check what the kernel will touch. */
    if (minfer_view_nbytes(x, &bytes) != MINFER_OK || bytes > x->nbytes || bytes > y->nbytes ||
        y->dtype != x->dtype) {
        snprintf(a->err, a->err_size, "input and output buffers do not match the shape");
        return MINFER_ERR_RUNTIME;
    }
    range_args r = {x->data, y->data, x->dtype, s->alpha};
    size_t n = bytes / minfer_elem_size(x->dtype);
    if (MINFER_HOST_HAS(a->api, run_parallel_for)) /* the threads the run gives this node */
        a->api->run_parallel_for(a->run, n, 4096, swish_range, &r);
    else
        a->api->parallel_for(a->host, n, 4096, swish_range, &r);
    return MINFER_OK;
}

static minfer_status register_ops(const minfer_plugin_host *host, minfer_plugin_registry *reg) {
    static const minfer_plugin_op swish = {
        .struct_size = sizeof(minfer_plugin_op),
        .domain = "com.example",
        .op_type = "Swish",
        .since_version = 1,
        .until_version = 0, /* every version of com.example */
        .flags = MINFER_PLUGIN_OP_DETERMINISTIC | MINFER_PLUGIN_OP_INPLACE,
        .inplace_input = 0,
        .infer = swish_infer,
        .create = swish_create,
        .compute = swish_compute,
        .destroy = swish_destroy,
    };
    return host->register_op(reg, &swish);
}

static const minfer_plugin_info example_info = {
    .abi_version = MINFER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(minfer_plugin_info),
    .name = "example",
    .version = "1.0",
    .register_ops = register_ops,
};

MINFER_PLUGIN_DEFINE(example_info)
