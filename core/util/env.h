/*
 * Every MINFER_* environment variable the core reads, resolved here and
 * nowhere else (util/env.c). An option set through the API wins over its
 * variable; the callers decide that, these only read the environment.
 * May be included by every file of the core.
 */
#ifndef MINFER_CORE_ENV_H
#define MINFER_CORE_ENV_H

#include "util/log.h"

/* MINFER_PROVIDERS: the preference list, or NULL when unset or empty. */
const char *mf_env_providers(void);
/* MINFER_LOG: error, warn, info, verbose or 0-3; MINFER_LOG_WARN otherwise. */
int mf_env_log_level(void);
/* MINFER_OPT_LEVEL: 0-3; 3 otherwise. */
int mf_env_opt_level(void);
/* MINFER_PLANNER: linear -> MINFER_PLANNER_LINEAR; greedy otherwise. */
int mf_env_planner(void);
/* MINFER_CHECK_NAN=1 -> 1; 0 otherwise. */
int mf_env_check_nan(void);
/* MINFER_PROFILE: a trace file path, or NULL when unset or empty. */
const char *mf_env_profile(void);
/* MINFER_SPIN_US: 0 to 1000000 microseconds; dflt otherwise. */
long mf_env_spin_us(long dflt);
/* MINFER_PROVIDER_PATH: colon-separated directories, or NULL. */
const char *mf_env_provider_path(void);
/* MINFER_KEEP_PROVIDERS=1 -> 1 (provider libraries stay mapped; plugins always do). */
int mf_env_keep_providers(void);
/* MINFER_PLUGINS: plugin names or paths, comma-separated, or NULL. */
const char *mf_env_plugins(void);
/* MINFER_PLUGIN_PATH: colon-separated directories, or NULL. */
const char *mf_env_plugin_path(void);

/* Warns through lg, once per process, about each variable above with a
 * value that means nothing (the default then applies). */
void mf_env_check(const mf_logger *lg);

#endif
