/*
 * What a plan's inference knows of the ops the core runs itself
 * (plan/core_infer.c): their output kinds and types, and the subgraphs of
 * a control-flow node. Included by plan/build.c and exec/exec.h.
 */
#ifndef MINFER_CORE_PLAN_CORE_INFER_H
#define MINFER_CORE_PLAN_CORE_INFER_H

#include <string.h>

#include "plan/plan.h"

static inline int is_op(const mf_node *n, const char *op) { return strcmp(n->op_type, op) == 0; }
/* Node n's inputs before its implicit (outer-scope) ones. */
static inline size_t mf_core_formal_inputs(const mf_node *n) { return n->n_inputs - n->n_implicit; }

/* Output kinds and types of core node i (shapes are known only when it
 * runs). err gets a reason on failure. */
minfer_status mf_core_infer(minfer_session *s, int i, const minfer_tensor_view *in,
                            minfer_tensor_view *out, char *err, size_t err_size);
/* Which subgraph attributes node n has (then/else, or body): their count. */
size_t mf_core_sub_names(const mf_node *n, const char **names);
/* Subgraph k of node i: the built session's graph, or the attribute's. */
const mf_graph *mf_core_sub_graph(const minfer_session *s, int i, size_t k);

#endif
