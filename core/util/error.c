/* Thread-local last-error messages and status strings. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/internal.h"

#define ERR_CAP 2048

static _Thread_local char last_error[ERR_CAP];

minfer_status mf_error(minfer_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return st;
}

minfer_status mf_error_prefix(minfer_status st, const char *fmt, ...) {
    char old[ERR_CAP];
    va_list ap;
    memcpy(old, last_error, sizeof old);
    if (!old[0]) /* the callee gave no reason: say at least what kind of failure */
        snprintf(old, sizeof old, "%s", minfer_status_str(st));
    va_start(ap, fmt);
    int n = vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n + 2 < sizeof last_error) {
        size_t used = (size_t)n;
        memcpy(last_error + used, ": ", 2);
        used += 2;
        size_t room = sizeof last_error - used - 1;
        size_t len = strnlen(old, room);
        memcpy(last_error + used, old, len);
        last_error[used + len] = '\0';
    }
    return st;
}

void mf_error_clear(void) { last_error[0] = '\0'; }

const char *minfer_last_error(void) { return last_error; }

const char *minfer_version(void) { return MINFER_VERSION_STRING; }

const char *minfer_status_str(minfer_status status) {
    switch (status) {
    case MINFER_OK: return "ok";
    case MINFER_ERR_INVALID_ARG: return "invalid argument";
    case MINFER_ERR_IO: return "I/O error";
    case MINFER_ERR_MODEL: return "invalid model";
    case MINFER_ERR_UNSUPPORTED: return "unsupported";
    case MINFER_ERR_PROVIDER: return "provider error";
    case MINFER_ERR_SHAPE: return "shape mismatch";
    case MINFER_ERR_TYPE: return "type mismatch";
    case MINFER_ERR_NOMEM: return "out of memory";
    case MINFER_ERR_NOT_FOUND: return "not found";
    case MINFER_ERR_LIMIT: return "limit exceeded";
    case MINFER_ERR_RUNTIME: return "runtime error";
    case MINFER_ERR_DEADLINE: return "deadline passed";
    case MINFER_CANCELLED: return "cancelled";
    case MINFER_ERR_BUSY: return "busy";
    }
    return "unknown status";
}
