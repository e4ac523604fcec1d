/*
 * minfer_compile_model (include/minfer/compile.h): builds a session of the
 * ONNX model, so the graph is loaded, checked, optimized and placed exactly
 * as a session would run it, and writes the graph that session optimized as
 * a compiled file (load/mfc_write.c). It makes a session, so it is the
 * session stage's.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "graph/graph.h"
#include "load/mfc.h"
#include "minfer/compile.h"
#include "optimize/optimizer.h"
#include "session/session.h"
#include "util/env.h"
#include "util/fileio.h"

/* The session's level: the option's, else MINFER_OPT_LEVEL (util/env.c). */
static int effective_level(const minfer_options *opt) {
    return opt && opt->opt_level >= 0 ? opt->opt_level : mf_env_opt_level();
}

/* Steps of minfer_compile_model:
 *  1. a session from the model with the caller's options: the model loads,
 *     optimizes and places on the provider list, whose loaded providers are
 *     recorded;
 *  2. the graph that session optimized, made again the same way (the
 *     session hands the subgraphs of control-flow nodes to sessions of
 *     their own, so its graph does not stay whole): load, free-dimension
 *     overrides, Gradient expansion, then the optimizer at the session's
 *     level with the same folding limit and evaluator, skipped for a graph
 *     with control flow as the session skips it (session.c's optimize);
 *  3. that graph written to out_path. */
minfer_status minfer_compile_model(const char *model_path, const char *out_path,
                                   const minfer_options *opt) {
    minfer_session *s = NULL;
    mf_graph *g = NULL;
    mf_evaluator *ev = NULL;
    void *data = MAP_FAILED;
    uint64_t size = 0;
    FILE *f = NULL;
    minfer_status st;
    if (!model_path || !out_path)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_compile_model: NULL path");
    if ((st = mf_fopen_regular(model_path, "model file", &f, &size)) != MINFER_OK)
        return st;
    if (size > 0 && size <= SIZE_MAX)
        data = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
    fclose(f);
    if (data == MAP_FAILED)
        return mf_error(size ? MINFER_ERR_IO : MINFER_ERR_MODEL,
                        "%s: cannot map the model (%llu bytes)", model_path,
                        (unsigned long long)size);
    if (minfer_is_compiled(data, (size_t)size)) {
        st = mf_error(MINFER_ERR_INVALID_ARG,
                      "%s: the model is already compiled; compile its ONNX file", model_path);
        goto done;
    }
    if ((st = minfer_session_create(model_path, opt, &s)) != MINFER_OK)
        goto done;
    char providers[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < minfer_session_provider_count(s); i++) {
        int k = snprintf(providers + used, sizeof providers - used, "%s%s", i ? "," : "",
                         minfer_session_provider_name(s, i));
        if (k < 0 || (size_t)k >= sizeof providers - used)
            break;
        used += (size_t)k;
    }
    minfer_session_free(s);

    char dir[4096];
    snprintf(dir, sizeof dir, "%s", model_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    minfer_limits lim = mf_options_limits(opt);
    int level = effective_level(opt);
    if ((st = mf_load_onnx_ex(data, (size_t)size, 1, dir, model_path, &lim, &g)) != MINFER_OK ||
        (st = mf_apply_dim_overrides(g, opt, model_path)) != MINFER_OK ||
        (st = mf_expand_gradients(g, model_path)) != MINFER_OK)
        goto done;
    if (level > 0 && g->n_nodes && !mf_graph_has_control(g, NULL)) {
        if (mf_evaluator_open(&ev) != MINFER_OK) {
            ev = NULL; /* the session folds nothing then either */
            mf_error_clear();
        }
        mf_opt_report rep;
        memset(&rep, 0, sizeof rep);
        mf_opt_ctx ctx = {level, ev ? mf_evaluator_eval_node : NULL, ev, (uint64_t)1 << 20, &rep};
        if ((st = mf_optimize(g, &ctx, model_path)) != MINFER_OK)
            goto done;
    }
    st = mf_mfc_write(g, level, providers, out_path);
done:
    mf_evaluator_close(ev);
    mf_graph_free(g);
    if (data != MAP_FAILED)
        munmap(data, (size_t)size);
    return st;
}
