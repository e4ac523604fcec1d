/* Diagnostics helpers: trace events, FLOP estimates, run statistics. */
#ifndef MINFER_CORE_DIAG_H
#define MINFER_CORE_DIAG_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "graph/graph.h"
#include "minfer/minfer.h"
#include "minfer/provider.h"

typedef struct mf_trace_event {
    char *name;
    const char *cat; /* static: "build", "node", "copy", "run" */
    double ts_us, dur_us;
    int tid;
    json_t *args; /* a JSON object, or NULL */
} mf_trace_event;

typedef struct mf_trace mf_trace;

double mf_now_ms(void);
/* The calling thread's id (the kernel's thread id: what top -H and perf show). */
int mf_thread_id(void);
/* A trace whose time zero is t0_ms (mf_now_ms() clock). */
mf_trace *mf_trace_new(double t0_ms);
void mf_trace_free(mf_trace *t);
/* Records a complete event; thread-safe. The trace takes args (a JSON
 * object, or NULL) whether or not it keeps the event. */
void mf_trace_add(mf_trace *t, const char *name, const char *cat, double start_ms, double dur_ms,
                  json_t *args);
minfer_status mf_trace_write(mf_trace *t, const char *path);
/* A JSON string of s, whole (names from a model can be any bytes: each
 * byte that is not part of valid UTF-8 becomes U+FFFD); NULL when out of
 * memory. */
json_t *mf_json_str(const char *s);
/* A value's element type and shape as ONNX Runtime's profiler writes them
 * in input_type_shape: {"float": [1, 3, 224, 224]}; NULL when out of memory. */
json_t *mf_trace_type_shape(const minfer_tensor_view *v);

/* Estimated floating-point operations of one node for these shapes:
 * 2*MACs for Conv/Gemm/MatMul/Attention and their integer forms (QLinearConv,
 * ConvInteger, QLinearMatMul, MatMulInteger, QGemm: integer operations),
 * window size per output for pools,
 * one per output element for elementwise ops, 0 for data movement. */
double mf_node_flops(const mf_node *n, const minfer_tensor_view *in, size_t n_in,
                     const minfer_tensor_view *out, size_t n_out);

#define MF_STATS_RING 4096
typedef struct mf_stats {
    uint64_t runs;
    double sum_ms, min_ms, max_ms;
    double since; /* mf_now_ms() of the reset */
    double ring[MF_STATS_RING];
} mf_stats;
void mf_stats_reset(mf_stats *st);
void mf_stats_add(mf_stats *st, double ms);
/* scratch: MF_STATS_RING doubles. */
void mf_stats_report(const mf_stats *st, minfer_run_stats *out, double *scratch);

/* Index of the first NaN or Inf among a host float/double tensor's
 * elements, or -1 (also for other types). *is_nan tells which it was. */
int64_t mf_find_nan(const minfer_tensor_view *v, int *is_nan);

/* Fill colour used for provider index p in pictures (-1: folded constant). */
const char *mf_provider_colour(int p);

#endif
