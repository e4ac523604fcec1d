/* Shared pieces of the fake plugins the plugin tests load
 * (tests/test_plugins.c): each library is wrong in one way, or has ops
 * that fail on purpose. */
#ifndef MINFER_TESTS_FAKE_PLUGIN_H
#define MINFER_TESTS_FAKE_PLUGIN_H

#include <stdio.h>
#include <string.h>

#include "minfer/plugin.h"

/* Output 0 like input 0. */
static inline minfer_status fake_same_infer(void *op, const minfer_plugin_infer_args *a) {
    (void)op;
    if (a->node->n_inputs < 1 || a->n_outputs < 1)
        return MINFER_ERR_MODEL;
    a->outputs[0].dtype = a->node->inputs[0].dtype;
    a->outputs[0].rank = a->node->inputs[0].rank;
    memcpy(a->outputs[0].dims, a->node->inputs[0].dims, sizeof a->outputs[0].dims);
    return MINFER_OK;
}

/* Y = X + 1 for float X. */
static inline minfer_status fake_add_one(void *op, void *state,
                                         const minfer_plugin_compute_args *a) {
    (void)op;
    (void)state;
    size_t bytes;
    if (minfer_view_nbytes(&a->inputs[0], &bytes) != MINFER_OK ||
        a->inputs[0].dtype != MINFER_DTYPE_FLOAT || a->outputs[0].nbytes < bytes) {
        snprintf(a->err, a->err_size, "AddOne: bad buffers");
        return MINFER_ERR_RUNTIME;
    }
    const float *x = a->inputs[0].data;
    float *y = a->outputs[0].data;
    for (size_t i = 0; i < bytes / sizeof(float); i++)
        y[i] = x[i] + 1.0f;
    return MINFER_OK;
}

#endif
