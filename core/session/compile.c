/*
 * minfer_compile_model (include/minfer/compile.h): builds a session of the
 * ONNX model, so the graph is loaded, checked and optimized exactly as a
 * session would run it, and writes that graph as a compiled file
 * (load/mfc_write.c). It makes a session, so it is the session stage's.
 */
#include <stdio.h>

#include "load/mfc.h"
#include "minfer/compile.h"
#include "session/session.h"
#include "util/env.h"

/* The session's level: the option's, else MINFER_OPT_LEVEL (util/env.c). */
static int effective_level(const minfer_options *opt) {
    return opt && opt->opt_level >= 0 ? opt->opt_level : mf_env_opt_level();
}

minfer_status minfer_compile_model(const char *model_path, const char *out_path,
                                   const minfer_options *opt) {
    minfer_session *s = NULL;
    minfer_status st;
    if (!model_path || !out_path)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_compile_model: NULL path");
    if ((st = minfer_session_create(model_path, opt, &s)) != MINFER_OK)
        return st;
    if (s->g->compiled_level) {
        minfer_session_free(s);
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "%s: the model is already compiled; compile its ONNX file", model_path);
    }
    char providers[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < s->n_provs; i++) {
        int k = snprintf(providers + used, sizeof providers - used, "%s%s", i ? "," : "",
                         s->provs[i].name);
        if (k < 0 || (size_t)k >= sizeof providers - used)
            break;
        used += (size_t)k;
    }
    st = mf_mfc_write(s->g, effective_level(opt), providers, out_path);
    minfer_session_free(s);
    return st;
}
