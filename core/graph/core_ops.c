/*
 * Questions about nodes asked everywhere: is it an op the core runs itself
 * (graph/core_ops.h lists them), does a graph have any, and a node's label
 * for messages.
 */
#include <stdio.h>
#include <string.h>

#include "graph/core_ops.h"
#include "graph/graph.h"

int mf_core_op(const mf_node *n) {
    if (strcmp(n->domain, "minfer") == 0) {
        for (size_t k = 0; k < sizeof MF_CORE_MINFER_OPS / sizeof MF_CORE_MINFER_OPS[0]; k++)
            if (strcmp(n->op_type, MF_CORE_MINFER_OPS[k].op_type) == 0)
                return 1;
        return 0;
    }
    if (n->domain[0])
        return 0;
    for (size_t k = 0; k < sizeof MF_CORE_OPS / sizeof MF_CORE_OPS[0]; k++)
        if (strcmp(n->op_type, MF_CORE_OPS[k].op_type) == 0)
            return 1;
    return 0;
}

void mf_node_desc_init(minfer_node_desc *d, const mf_node *n, minfer_value_desc *in,
                       minfer_value_desc *out) {
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->name = n->name ? n->name : "";
    d->op_type = n->op_type;
    d->domain = n->domain ? n->domain : "";
    d->opset = n->opset;
    d->n_inputs = n->n_inputs;
    d->n_outputs = n->n_outputs;
    d->inputs = in;
    d->outputs = out;
    d->host_node = n;
    d->value_desc_size = sizeof(minfer_value_desc);
}

const char *mf_node_label(const mf_node *n, int idx, char *buf, size_t size) {
    const char *dom = n->domain[0] ? n->domain : "ai.onnx";
    if (n->name[0])
        snprintf(buf, size, "node '%s' (op %s, domain %s, opset %lld)", n->name, n->op_type, dom,
                 (long long)n->opset);
    else
        snprintf(buf, size, "node #%d (op %s, domain %s, opset %lld)", idx, n->op_type, dom,
                 (long long)n->opset);
    return buf;
}
