/*
 * Logging: one line per message, through the session's callback or to
 * stderr, at the session's level or the run's (its minfer_run_options,
 * handed to mf_logf_run: no run lives in the thread).
 *
 *     mf_logger lg = {MINFER_LOG_INFO, NULL, NULL};
 *     mf_logf(&lg, MINFER_LOG_WARN, "provider '%s' skipped: %s", name, why);
 *
 * May be included by every file of the core (it is util/: it includes only
 * the public headers).
 */
#ifndef MINFER_CORE_LOG_H
#define MINFER_CORE_LOG_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>

#include "minfer/minfer.h"
#include "util/internal.h"

/* Where a session's messages go. */
typedef struct mf_logger {
    int level;          /* the most verbose level printed (MINFER_LOG_*) */
    minfer_log_fn fn;   /* NULL: stderr */
    void *user;         /* fn's first argument */
} mf_logger;

/* minfer_run_options (session/options.c makes them); only terminate
 * changes during a run. Here, because a log line reads its level and tag. */
struct minfer_run_options {
    char *tag;            /* NULL: none */
    int log_level;        /* -1: the session's */
    uint64_t deadline_ms; /* 0: only the session's run limit */
    atomic_int terminate;
};

/* Logs through lg (NULL: stderr at the WARN level). */
void mf_logf(const mf_logger *lg, int level, const char *fmt, ...) MF_PRINTF(3, 4);
void mf_logv(const mf_logger *lg, int level, const char *fmt, va_list ap);
/* As mf_logf, for a line of a run with options ro (NULL: none): the run's
 * log level applies and the line opens with its tag, "[tag] ". */
void mf_logf_run(const mf_logger *lg, const minfer_run_options *ro, int level, const char *fmt,
                 ...) MF_PRINTF(4, 5);
void mf_logv_run(const mf_logger *lg, const minfer_run_options *ro, int level, const char *fmt,
                 va_list ap);

/* 1 the first time key is seen in this process, then 0 (thread-safe): for
 * warnings said once. */
int mf_first_time(const char *key);

#endif
