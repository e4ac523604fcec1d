/*
 * The session stage: the public API's glue (the files of session/). It creates
 * sessions (load, optimize, place, plan, in that order: session.c),
 * and the subgraph sessions of control flow (session.c), resolves options
 * (options.c), answers the public queries (session_info.c) and optimizes
 * model files (optimize_model.c).
 *
 * Included only by session/ and by the public-API files that make sessions
 * from another source (graph builders, compiled files). The session's
 * state (struct minfer_session) is place/state.h; running is exec/exec.h.
 */
#ifndef MINFER_CORE_SESSION_H
#define MINFER_CORE_SESSION_H

#include "graph/graph.h"
#include "place/state.h"
#include "util/options.h"

/* Fixes the graph inputs' dimensions the options override (create's first
 * step, top-level sessions only): an unknown name, an axis out of range or
 * a fixed dimension given another size is an error naming them. */
minfer_status mf_apply_dim_overrides(mf_graph *g, const minfer_options *opt, const char *errctx);

/* Creates a session from a graph; takes ownership of g in every case.
 * errctx names the model ("model.onnx", "<memory>", "<builder>"). */
minfer_status mf_session_create_graph(mf_graph *g, const minfer_options *opt, const char *errctx,
                                      minfer_session **out);

/* As mf_session_create_graph, reporting load_ms (>= 0) as the time loading
 * and validating took. */
minfer_status mf_session_create_graph_timed(mf_graph *g, const minfer_options *opt,
                                            const char *errctx, double load_ms,
                                            minfer_session **out);

/* A session for a control-flow node's subgraph g (owned in every case):
 * the parent's options, pool and limits, no profile of its own. */
minfer_status mf_session_create_sub(mf_graph *g, const minfer_options *opt, const char *errctx,
                                    minfer_session *parent, minfer_session **out);

/* g optimized at level as session s optimizes its own graph (its
 * evaluator, its providers' fusion gate, its float16 rule); report may be
 * NULL. The compiled format's writer uses it (compile_model.c). */
struct mf_opt_report;
minfer_status mf_session_optimize_graph(minfer_session *s, mf_graph *g, int level,
                                        struct mf_opt_report *report);

/* Shared thread pools (thread_pool.c): the default thread count (one per
 * usable CPU, util/cpus.h, at most 64), a new reference to tp (NULL
 * stays NULL; minfer_thread_pool_free drops it) and its pool. */
int mf_default_threads(void);
minfer_thread_pool *mf_thread_pool_retain(minfer_thread_pool *tp);
struct mf_pool *mf_thread_pool_pool(minfer_thread_pool *tp);

/* Stops the asynchronous runs' workers of s, if any (async.c): queued
 * requests end cancelled, running ones stop at their next node. */
void mf_async_stop(minfer_session *s);

/* The Graphviz graph of s (session_info.c). */
minfer_status mf_write_dot(minfer_session *s, FILE *f);

#endif
