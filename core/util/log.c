/* Logging (util/log.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

static const char *level_name(int level) {
    static const char *const names[] = {"error", "warn", "info", "verbose"};
    return level >= 0 && level <= 3 ? names[level] : "log";
}

/* Inside a run with minfer_run_options, its log level applies and its tag
 * opens the message: "[tag] ...". */
void mf_logv_run(const mf_logger *lg, const minfer_run_options *ro, int level, const char *fmt,
                 va_list ap) {
    int max = ro && ro->log_level >= 0 ? ro->log_level : lg ? lg->level : MINFER_LOG_WARN;
    if (level > max)
        return;
    char msg[2048];
    int k = ro && ro->tag ? snprintf(msg, sizeof msg, "[%s] ", ro->tag) : 0;
    k = k > 0 && (size_t)k < sizeof msg ? k : 0;
    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap);
    if (lg && lg->fn) {
        lg->fn(lg->user, (minfer_log_level)level, msg);
        return;
    }
    /* One fprintf, so lines from concurrent runs do not interleave. */
    fprintf(stderr, "minfer %s: %s\n", level_name(level), msg);
}

void mf_logv(const mf_logger *lg, int level, const char *fmt, va_list ap) {
    mf_logv_run(lg, NULL, level, fmt, ap);
}

void mf_logf_run(const mf_logger *lg, const minfer_run_options *ro, int level, const char *fmt,
                 ...) {
    va_list ap;
    va_start(ap, fmt);
    mf_logv_run(lg, ro, level, fmt, ap);
    va_end(ap);
}

void mf_logf(const mf_logger *lg, int level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    mf_logv(lg, level, fmt, ap);
    va_end(ap);
}

int mf_first_time(const char *key) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char *seen[256];
    static size_t n_seen;
    int first = 1;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_seen && first; i++)
        first = strcmp(seen[i], key) != 0;
    /* Past 256 distinct keys (or out of memory) a warning may repeat:
     * better than one lost. */
    if (first && n_seen < sizeof seen / sizeof seen[0] && (seen[n_seen] = strdup(key)))
        n_seen++;
    pthread_mutex_unlock(&lock);
    return first;
}
