/* Session options. */
#include <stdlib.h>
#include <string.h>

#include "session.h"

minfer_status minfer_options_create(minfer_options **out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_create: out is NULL");
    *out = mf_calloc(1, sizeof **out);
    if (!*out)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_create: out of memory");
    (*out)->log_level = -1;
    return MINFER_OK;
}

static void clear_providers(minfer_options *opt) {
    for (size_t i = 0; i < opt->n_providers; i++)
        free(opt->providers[i]);
    free(opt->providers);
    opt->providers = NULL;
    opt->n_providers = 0;
}

void minfer_options_free(minfer_options *opt) {
    if (!opt)
        return;
    clear_providers(opt);
    free(opt);
}

minfer_status minfer_options_set_providers(minfer_options *opt, const char *const *names,
                                           size_t count) {
    if (!opt || (count && !names))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_providers: NULL argument");
    char **list = mf_calloc(count ? count : 1, sizeof *list);
    if (!list)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_providers: out of memory");
    for (size_t i = 0; i < count; i++) {
        if (!names[i] || !names[i][0]) {
            for (size_t j = 0; j < i; j++)
                free(list[j]);
            free(list);
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "minfer_options_set_providers: provider name %zu is empty", i);
        }
        list[i] = mf_strdup(names[i]);
        if (!list[i]) {
            for (size_t j = 0; j < i; j++)
                free(list[j]);
            free(list);
            return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_providers: out of memory");
        }
    }
    clear_providers(opt);
    opt->providers = list;
    opt->n_providers = count;
    return MINFER_OK;
}

minfer_status minfer_options_set_providers_str(minfer_options *opt, const char *list) {
    if (!opt || !list)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_providers_str: NULL argument");
    char *copy = mf_strdup(list);
    const char *names[64];
    size_t n = 0;
    if (!copy)
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_set_providers_str: out of memory");
    for (char *save = NULL, *tok = strtok_r(copy, ", \t", &save); tok;
         tok = strtok_r(NULL, ", \t", &save)) {
        if (n == sizeof names / sizeof names[0]) {
            free(copy);
            return mf_error(MINFER_ERR_LIMIT, "provider list '%s' names more than %zu providers",
                            list, sizeof names / sizeof names[0]);
        }
        names[n++] = tok;
    }
    if (n == 0) {
        free(copy);
        return mf_error(MINFER_ERR_INVALID_ARG, "provider list '%s' names no provider", list);
    }
    minfer_status st = minfer_options_set_providers(opt, names, n);
    free(copy);
    return st;
}

minfer_status minfer_options_set_threads(minfer_options *opt, int threads) {
    if (!opt || threads < 0 || threads > 1024)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_options_set_threads: thread count %d is not in 0..1024", threads);
    opt->threads = threads;
    return MINFER_OK;
}

minfer_status minfer_options_set_log_level(minfer_options *opt, minfer_log_level level) {
    if (!opt || level < MINFER_LOG_ERROR || level > MINFER_LOG_VERBOSE)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_options_set_log_level: bad level %d",
                        (int)level);
    opt->log_level = (int)level;
    return MINFER_OK;
}
