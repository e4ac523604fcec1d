/*
 * Shape and type inference for the fused ops of the `minfer` domain
 * (docs/fused-ops.md). mf_infer_node (infer_node.c) dispatches here for
 * domain "minfer", after mf_infer_begin; the contract is mf_infer_node's.
 */
#ifndef MINFER_CORE_SHAPE_INFER_MINFER_H
#define MINFER_CORE_SHAPE_INFER_MINFER_H

#include "graph/graph.h"

minfer_status mf_infer_minfer_node(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                                   minfer_tensor_view *out, size_t n_out, char *err,
                                   size_t err_size);
/* 1 if op_type is a minfer-domain op with an inference rule. */
int mf_infer_minfer_known(const char *op_type);

#endif
