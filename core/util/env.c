/* Environment variables (util/env.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/env.h"

static const char *get(const char *name) {
    /* secure_getenv: nothing from the environment in a setuid or setgid
     * process (AT_SECURE), as the dynamic loader ignores LD_LIBRARY_PATH:
     * MINFER_PROVIDER_PATH and MINFER_PLUGIN_PATH name code to load. */
    const char *v = secure_getenv(name);
    return v && v[0] ? v : NULL;
}

static int is(const char *v, const char *what) { return v && strcmp(v, what) == 0; }

const char *mf_env_providers(void) { return get("MINFER_PROVIDERS"); }

int mf_env_log_level(void) {
    const char *e = get("MINFER_LOG");
    if (is(e, "error") || is(e, "0"))
        return MINFER_LOG_ERROR;
    if (is(e, "info") || is(e, "2"))
        return MINFER_LOG_INFO;
    if (is(e, "verbose") || is(e, "3"))
        return MINFER_LOG_VERBOSE;
    return MINFER_LOG_WARN;
}

int mf_env_opt_level(void) {
    const char *e = get("MINFER_OPT_LEVEL");
    return e && e[0] >= '0' && e[0] <= '3' && !e[1] ? e[0] - '0' : 3;
}

int mf_env_planner(void) {
    return is(get("MINFER_PLANNER"), "linear") ? MINFER_PLANNER_LINEAR : MINFER_PLANNER_GREEDY;
}

int mf_env_check_nan(void) { return is(get("MINFER_CHECK_NAN"), "1"); }

const char *mf_env_profile(void) { return get("MINFER_PROFILE"); }

long mf_env_spin_us(long dflt) {
    const char *e = get("MINFER_SPIN_US");
    if (!e)
        return dflt;
    char *end;
    long v = strtol(e, &end, 10);
    return *end == '\0' && v >= 0 && v <= 1000000 ? v : dflt;
}

const char *mf_env_provider_path(void) { return get("MINFER_PROVIDER_PATH"); }

int mf_env_keep_providers(void) { return is(get("MINFER_KEEP_PROVIDERS"), "1"); }

const char *mf_env_plugins(void) { return get("MINFER_PLUGINS"); }

const char *mf_env_plugin_path(void) { return get("MINFER_PLUGIN_PATH"); }

/* The variables with a fixed set of values; anything else is ignored (the
 * default applies), with a warning once per process. */
static const struct {
    const char *name;
    const char *const values[10];
    const char *says;
} checked[] = {
    {"MINFER_LOG", {"error", "warn", "warning", "info", "verbose", "0", "1", "2", "3"},
     "error, warn, info, verbose or 0-3"},
    {"MINFER_OPT_LEVEL", {"0", "1", "2", "3"}, "0-3"},
    {"MINFER_PLANNER", {"greedy", "linear"}, "greedy or linear"},
    {"MINFER_CHECK_NAN", {"0", "1"}, "0 or 1"},
    {"MINFER_KEEP_PROVIDERS", {"0", "1"}, "0 or 1"},
};

void mf_env_check(const mf_logger *lg) {
    for (size_t i = 0; i < sizeof checked / sizeof checked[0]; i++) {
        const char *v = secure_getenv(checked[i].name);
        int ok = !v || !v[0];
        for (size_t k = 0; !ok && k < 10 && checked[i].values[k]; k++)
            ok = strcmp(v, checked[i].values[k]) == 0;
        char key[256];
        snprintf(key, sizeof key, "env:%s=%s", checked[i].name, ok ? "" : v);
        if (!ok && mf_first_time(key))
            mf_logf(lg, MINFER_LOG_WARN, "%s='%s' is not one of %s: ignored", checked[i].name, v,
                    checked[i].says);
    }
}
