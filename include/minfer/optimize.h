/*
 * minfer's graph optimizer as a stand-alone step: load a model, optimize it
 * at a level, and (optionally) write the result as an ONNX file that
 * minfer loads and runs with the same outputs.
 *
 *     minfer_opt_summary sum;
 *     if (minfer_optimize_model("model.onnx", "model.opt.onnx", 3, &sum) != MINFER_OK)
 *         fprintf(stderr, "%s\n", minfer_last_error());
 *     printf("%zu -> %zu nodes\n", sum.nodes_before, sum.nodes_after);
 *
 * Sessions optimize on their own (minfer_options_set_optimization_level);
 * this is for inspecting what the optimizer does and for saving its result.
 * The passes and levels are described in docs/optimizer.md; a saved model
 * that uses fused ops imports the domain "minfer" (docs/fused-ops.md).
 */
#ifndef MINFER_OPTIMIZE_H
#define MINFER_OPTIMIZE_H

#include "minfer/minfer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A name (op type as "domain:Op" outside the default domain, or a pass
 * name) and a count. */
typedef struct minfer_opt_count {
    char name[64];
    size_t count;
} minfer_opt_count;

#define MINFER_OPT_MAX_COUNTS 128

/* What one optimization did. Filled by value; no pointers to free. Lists
 * longer than MINFER_OPT_MAX_COUNTS are cut (truncated is then set). */
typedef struct minfer_opt_summary {
    int level;
    size_t nodes_before, nodes_after;
    size_t n_passes; /* every pass that ran, in order, with how often it fired */
    minfer_opt_count passes[64];
    size_t n_ops_before, n_ops_after; /* node count per op type, sorted by name */
    minfer_opt_count ops_before[MINFER_OPT_MAX_COUNTS], ops_after[MINFER_OPT_MAX_COUNTS];
    int truncated;
} minfer_opt_summary;

/* Loads in_path, optimizes it at level (0..3; -1: MINFER_OPT_LEVEL or 3),
 * writes the result to out_path unless it is NULL, and fills summary
 * unless it is NULL. Constant folding runs on the CPU provider. */
MINFER_API minfer_status minfer_optimize_model(const char *in_path, const char *out_path,
                                               int level, minfer_opt_summary *summary);

#ifdef __cplusplus
}
#endif

#endif
