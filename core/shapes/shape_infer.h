/*
 * Per-op shape and type inference.
 *
 * mf_infer_node computes the element type and shape of each output of one
 * node from its inputs' types and shapes and, where the op needs them, the
 * contents of small inputs (Reshape's shape, Slice's starts, ...).
 *
 * Inputs: in[i] describes node->inputs[i] (ignored when node->inputs[i] < 0,
 * an omitted optional input). in[i].rank == -1 means the rank is unknown;
 * in[i].dims[d] == -1 means that dimension is unknown (symbolic at build
 * time). in[i].data, when not NULL, points at the input's contents in host
 * memory, plain layout (in[i].nbytes bytes).
 *
 * Outputs: out[j] is filled with dtype, rank and dims (dims -1 where not
 * known; rank -1 when even the rank is not known, e.g. Reshape whose shape
 * input's contents are not known yet). data/offset/nbytes/layout are left 0.
 *
 * Returns MINFER_OK, or MINFER_ERR_SHAPE / MINFER_ERR_TYPE / MINFER_ERR_MODEL
 * (bad attribute) with a message in err (without the node name: the caller
 * adds it). An op with no inference rule gives outputs with dtype 0 and
 * rank -1 and MINFER_OK: the provider then allocates outputs at run time.
 */
#ifndef MINFER_CORE_SHAPE_INFER_H
#define MINFER_CORE_SHAPE_INFER_H

#include "graph/graph.h"

minfer_status mf_infer_node(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                            minfer_tensor_view *out, size_t n_out, char *err, size_t err_size);

/* 1 if the core has an inference rule for (domain, op_type). domain "",
 * "ai.onnx" and NULL all mean the default domain. */
int mf_infer_known(const char *domain, const char *op_type);

/* Inference for an op no rule covers: the custom-operator plugins'
 * (place/plugin_loader.c's mf_plugin_infer, which the caller passes:
 * shapes sit below place). Contract as mf_infer_node's; it leaves out
 * unknown for an op no plugin has. */
typedef minfer_status (*mf_infer_fallback_fn)(const mf_node *node, const minfer_tensor_view *in,
                                              size_t n_in, minfer_tensor_view *out, size_t n_out,
                                              char *err, size_t err_size);
/* mf_infer_node, asking fallback (NULL: none) for an op no rule covers. */
minfer_status mf_infer_node_or(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                               minfer_tensor_view *out, size_t n_out, char *err, size_t err_size,
                               mf_infer_fallback_fn fallback);

/* The two halves behind mf_infer_node_or (infer_node.c), for the fused-op
 * rules (shape_infer_minfer.c) that run the ONNX rule of the op they
 * extend (shape_infer.c):
 * mf_infer_begin resets every output to "nothing known" and checks the
 * inputs' ranks and dims (MINFER_ERR_MODEL in err when one is out of
 * range); mf_infer_std_or is mf_infer_node_or for every domain but
 * `minfer` (mf_infer_begin first, then the op's rule or fallback), and
 * mf_infer_std_known mf_infer_known for those domains. */
minfer_status mf_infer_begin(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                             minfer_tensor_view *out, size_t n_out, char *err, size_t err_size);
minfer_status mf_infer_std_or(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                              minfer_tensor_view *out, size_t n_out, char *err, size_t err_size,
                              mf_infer_fallback_fn fallback);
int mf_infer_std_known(const char *domain, const char *op_type);

#endif
