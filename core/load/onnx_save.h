/*
 * Writing the IR back to ONNX (onnx_save.c), for `minfer optimize`.
 */
#ifndef MINFER_CORE_ONNX_SAVE_H
#define MINFER_CORE_ONNX_SAVE_H

#include "graph/graph.h"

/* Serializes g as a ModelProto into a new buffer (*data, free()). */
minfer_status mf_save_onnx_memory(const mf_graph *g, void **data, size_t *size);
/* The same, written to path. */
minfer_status mf_save_onnx(const mf_graph *g, const char *path);

#endif
