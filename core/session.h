/* Session internals shared between session.c, builder.c and options.c. */
#ifndef MINFER_CORE_SESSION_H
#define MINFER_CORE_SESSION_H

#include "graph.h"
#include "internal.h"

struct minfer_options {
    char **providers; /* preference list, or NULL when not set */
    size_t n_providers;
    int threads;      /* 0: one per online CPU */
    int log_level;    /* -1: not set (MINFER_LOG or WARN) */
};

/* Creates a session from a graph; takes ownership of g in every case.
 * errctx names the model ("model.onnx", "<memory>", "<builder>"). */
minfer_status mf_session_create_graph(mf_graph *g, const minfer_options *opt, const char *errctx,
                                      minfer_session **out);

#endif
