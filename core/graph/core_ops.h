/*
 * The ops the core runs itself (core/exec/control.c runs them,
 * graph/core_ops.c recognises them): control flow, sequences and
 * optionals, with the first opset version of each. Shared with
 * tools/gen_operators.c, which lists them in docs/operators.md. Included
 * only by graph/core_ops.c and that tool.
 */
#ifndef MINFER_CORE_OPS_H
#define MINFER_CORE_OPS_H

typedef struct mf_core_op_entry {
    const char *op_type; /* in the default ONNX domain */
    int since_version;
    const char *what;
} mf_core_op_entry;

static const mf_core_op_entry MF_CORE_OPS[] = {
    {"If", 1, "control flow: runs one branch subgraph"},
    {"Loop", 1, "control flow: tensors, sequences and optionals as loop-carried values"},
    {"Scan", 8, "control flow: opset 8 batch form and opset 9+ axes and directions"},
    {"SequenceMap", 17, "control flow over sequence elements"},
    {"SequenceEmpty", 11, "sequences"},
    {"SequenceConstruct", 11, "sequences"},
    {"SequenceInsert", 11, "sequences"},
    {"SequenceErase", 11, "sequences"},
    {"SequenceAt", 11, "sequences"},
    {"SequenceLength", 11, "sequences"},
    {"SplitToSequence", 11, "sequences"},
    {"ConcatFromSequence", 11, "sequences"},
    {"Optional", 15, "optionals"},
    {"OptionalHasElement", 15, "optionals"},
    {"OptionalGetElement", 15, "optionals"},
};

/* Helpers of the minfer domain the core runs: what the Gradient expansion
 * (core/graph/gradient.c) emits besides standard ops. */
static const mf_core_op_entry MF_CORE_MINFER_OPS[] = {
    {"OnesLike", 1, "a tensor of ones with the input's type and shape"},
    {"ZerosLike", 1, "a tensor of zeros with the input's type and shape"},
    {"SumToShape", 1, "input 0 summed over the axes it was broadcast along to input 1's shape"},
};

#endif
