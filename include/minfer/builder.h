/*
 * Graph builder: build a model in code and run it without an ONNX file.
 *
 *     minfer_graph_builder *b = NULL;
 *     minfer_builder_create(13, &b);                       // default-domain opset 13
 *     int64_t dims[2] = {-1, 4};                           // -1: dynamic
 *     minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL);
 *     const char *in[] = {"x"}, *out[] = {"y"};
 *     size_t relu;
 *     minfer_builder_add_node(b, "Relu", NULL, "relu0", in, 1, out, 1, &relu);
 *     minfer_builder_add_output(b, "y");
 *     minfer_session *s = NULL;
 *     minfer_session_create_from_builder(b, NULL, &s);    // b may be freed afterwards
 *     minfer_builder_free(b);
 *
 * Names refer to values exactly as in ONNX; an empty string in a node's
 * input list is an omitted optional input. Errors in the graph (dangling
 * names, cycles, bad attributes) are reported by
 * minfer_session_create_from_builder, as for a model file.
 */
#ifndef MINFER_BUILDER_H
#define MINFER_BUILDER_H

#include "minfer/minfer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct minfer_graph_builder minfer_graph_builder;

/* A builder whose default ("") domain is at the given opset version. */
MINFER_API minfer_status minfer_builder_create(int64_t opset, minfer_graph_builder **out);
MINFER_API void minfer_builder_free(minfer_graph_builder *b);
/* Imports another domain (e.g. "com.example") at a version. */
MINFER_API minfer_status minfer_builder_add_opset(minfer_graph_builder *b, const char *domain,
                                                  int64_t version);

/* A graph input. dims[i] == -1 is a dynamic dimension named dim_names[i]
 * (dim_names may be NULL, or hold NULL entries). */
MINFER_API minfer_status minfer_builder_add_input(minfer_graph_builder *b, const char *name,
                                                  minfer_dtype dtype, const int64_t *dims,
                                                  size_t rank, const char *const *dim_names);
/* A constant; the tensor's data is copied. */
MINFER_API minfer_status minfer_builder_add_initializer(minfer_graph_builder *b, const char *name,
                                                        const minfer_tensor *value);
/* A node; domain NULL or "" is the ONNX default domain. *index (may be NULL)
 * receives the node's index for the attribute setters below. */
MINFER_API minfer_status minfer_builder_add_node(minfer_graph_builder *b, const char *op_type,
                                                 const char *domain, const char *name,
                                                 const char *const *inputs, size_t n_inputs,
                                                 const char *const *outputs, size_t n_outputs,
                                                 size_t *index);
MINFER_API minfer_status minfer_builder_add_output(minfer_graph_builder *b, const char *name);

/* Node attributes (the value is copied). */
MINFER_API minfer_status minfer_builder_set_attr_int(minfer_graph_builder *b, size_t node,
                                                     const char *name, int64_t value);
MINFER_API minfer_status minfer_builder_set_attr_float(minfer_graph_builder *b, size_t node,
                                                       const char *name, float value);
MINFER_API minfer_status minfer_builder_set_attr_string(minfer_graph_builder *b, size_t node,
                                                        const char *name, const char *value);
MINFER_API minfer_status minfer_builder_set_attr_ints(minfer_graph_builder *b, size_t node,
                                                      const char *name, const int64_t *values,
                                                      size_t count);
MINFER_API minfer_status minfer_builder_set_attr_floats(minfer_graph_builder *b, size_t node,
                                                        const char *name, const float *values,
                                                        size_t count);
MINFER_API minfer_status minfer_builder_set_attr_strings(minfer_graph_builder *b, size_t node,
                                                         const char *name,
                                                         const char *const *values, size_t count);
MINFER_API minfer_status minfer_builder_set_attr_tensor(minfer_graph_builder *b, size_t node,
                                                        const char *name,
                                                        const minfer_tensor *value);

/* Validates the built graph and creates a session from it; the builder is
 * not consumed and may be reused or freed. */
MINFER_API minfer_status minfer_session_create_from_builder(const minfer_graph_builder *b,
                                                            const minfer_options *opt,
                                                            minfer_session **out);

#ifdef __cplusplus
}
#endif

#endif
