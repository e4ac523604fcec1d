/*
 * The tuning cache and the run counters.
 *
 * Tuning: a choice the provider measured once for a device (which GEMM
 * back end wins for a shape, gemm.c) is kept on disk so that later sessions
 * skip the measurement. The file is opencl-tune-KEY.txt in the program
 * cache's directory (ocl_cache_dir), KEY a 64-bit FNV-1a hash of the
 * device name, driver version and platform name, so a new driver measures
 * again. One line per choice, "key value ms..." (the candidates' times, -1
 * for one not timed, are for people reading the file), appended with one
 * write so that concurrent sessions interleave whole lines; a later line
 * for a key wins. The file is loaded at the first lookup. With cache=0
 * nothing is read or written and choices live for the session. A value
 * is an OCL_GEMM_* back end (ocl.h); keys whose candidates changed get a
 * new prefix (gemm2:, conv2: once the work-group kernels joined) so that
 * old lines are not read as choices among the new candidates.
 *
 * Counters: every enqueued command (ocl_enqueue, ocl_copy, a fill, a
 * CLBlast call) adds to n_launch and raises pending; every copy between
 * host and device memory adds to n_transfer. A blocking call (clFinish, a
 * blocking map or read) is a host synchronisation, n_sync, when it finds
 * pending raised, i.e. when it waits for device work and not only for its
 * own bytes: a download right after the run's clFinish is a transfer, not
 * a second wait. Uploads are enqueued without waiting (provider.c), so a
 * run all on the device waits once. synchronize closes a run and keeps its
 * counts for ocl_run_counters (the run_counters member of the ABI).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ocl.h"

typedef struct tune_entry {
    char *key;
    int value;
} tune_entry;

typedef struct ocl_tune {
    tune_entry *v;
    size_t n, cap;
    char path[600]; /* "" when there is no file */
} ocl_tune;

double ocl_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void ocl_count_launch(ocl_ctx *ctx) {
    atomic_fetch_add(&ctx->n_launch, 1);
    atomic_store(&ctx->pending, 1);
}

void ocl_count_wait(ocl_ctx *ctx) {
    if (atomic_exchange(&ctx->pending, 0))
        atomic_fetch_add(&ctx->n_sync, 1);
}

void ocl_count_transfer(ocl_ctx *ctx) { atomic_fetch_add(&ctx->n_transfer, 1); }

void ocl_count_run_end(ocl_ctx *ctx) {
    pthread_mutex_lock(&ctx->lock);
    unsigned long long l = atomic_load(&ctx->n_launch), y = atomic_load(&ctx->n_sync),
                       t = atomic_load(&ctx->n_transfer);
    ctx->run_launch = l - ctx->last_launch;
    ctx->run_sync = y - ctx->last_sync;
    ctx->run_transfer = t - ctx->last_transfer;
    ctx->last_launch = l;
    ctx->last_sync = y;
    ctx->last_transfer = t;
    unsigned long long runs = atomic_fetch_add(&ctx->n_runs, 1) + 1;
    unsigned long long rl = ctx->run_launch, rs = ctx->run_sync, rt = ctx->run_transfer;
    pthread_mutex_unlock(&ctx->lock);
    ctx->api->log(ctx->host, MINFER_LOG_VERBOSE, "opencl: run %llu: %llu kernel launches "
                  "(commands enqueued: kernels, device copies and fills, CLBlast calls), %llu "
                  "host synchronisations (waits for queued device work) and %llu transfers "
                  "between host and device since the previous run", runs, rl, rs, rt);
}

minfer_status ocl_run_counters(void *vctx, minfer_device_counters *out) {
    ocl_ctx *ctx = vctx;
    minfer_device_counters c;
    memset(&c, 0, sizeof c);
    pthread_mutex_lock(&ctx->lock);
    c.runs = atomic_load(&ctx->n_runs);
    c.launches = ctx->run_launch;
    c.syncs = ctx->run_sync;
    c.transfers = ctx->run_transfer;
    pthread_mutex_unlock(&ctx->lock);
    size_t n = out->struct_size < sizeof c ? out->struct_size : sizeof c;
    c.struct_size = out->struct_size;
    memcpy(out, &c, n);
    return MINFER_OK;
}

/* Sets key to value in memory; 0, or -1 out of memory. */
static int set_entry(ocl_tune *t, const char *key, int value) {
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].key, key) == 0) {
            t->v[i].value = value;
            return 0;
        }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        tune_entry *nv = realloc(t->v, cap * sizeof *nv);
        if (!nv)
            return -1;
        t->v = nv;
        t->cap = cap;
    }
    char *k = strdup(key);
    if (!k)
        return -1;
    t->v[t->n].key = k;
    t->v[t->n++].value = value;
    return 0;
}

/* Reads the file; lines that do not parse are skipped (a file cut short by
 * a crash loses its last line, not the others). */
static void load(ocl_tune *t) {
    FILE *f = fopen(t->path, "r");
    if (!f)
        return;
    char line[512], key[400];
    int value;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%399s %d", key, &value) == 2 && set_entry(t, key, value) != 0)
            break;
    fclose(f);
}

/* The cache, created and loaded at the first use; NULL out of memory. The
 * caller holds ctx->lock. */
static ocl_tune *tune_of(ocl_ctx *ctx) {
    if (ctx->tune)
        return ctx->tune;
    ocl_tune *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    char dir[512];
    if (ctx->use_cache && ocl_cache_dir(dir, sizeof dir) == 0) {
        uint64_t h = ocl_cache_key(0, ctx->device_name);
        h = ocl_cache_key(h, ctx->driver_version);
        h = ocl_cache_key(h, ctx->platform_name);
        snprintf(t->path, sizeof t->path, "%s/opencl-tune-%016llx.txt", dir,
                 (unsigned long long)h);
        load(t);
    }
    ctx->tune = t;
    return t;
}

int ocl_tune_get(ocl_ctx *ctx, const char *key, int *value) {
    int found = 0;
    pthread_mutex_lock(&ctx->lock);
    ocl_tune *t = tune_of(ctx);
    for (size_t i = 0; t && i < t->n && !found; i++)
        if (strcmp(t->v[i].key, key) == 0) {
            *value = t->v[i].value;
            found = 1;
        }
    pthread_mutex_unlock(&ctx->lock);
    return found;
}

void ocl_tune_put(ocl_ctx *ctx, const char *key, int value, const double *ms, int n) {
    pthread_mutex_lock(&ctx->lock);
    ocl_tune *t = tune_of(ctx);
    if (t && set_entry(t, key, value) == 0 && t->path[0]) {
        char line[512];
        int len = snprintf(line, sizeof line, "%s %d", key, value);
        for (int i = 0; i < n && len > 0 && (size_t)len < sizeof line - 1; i++)
            len += snprintf(line + len, sizeof line - 1 - (size_t)len, " %.4f",
                            ms[i] < 1e29 ? ms[i] : -1.0);
        if (len > 0 && (size_t)len < sizeof line - 1) {
            line[len++] = '\n';
            line[len] = '\0';
        } else {
            len = -1;
        }
        int fd = open(t->path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0 && len > 0 && (size_t)len < sizeof line) {
            /* One write of a whole line; a failure only costs a later
             * session the measurement. */
            ssize_t w = write(fd, line, (size_t)len);
            (void)w;
        }
        if (fd >= 0)
            close(fd);
    }
    pthread_mutex_unlock(&ctx->lock);
}

void ocl_tune_free(ocl_ctx *ctx) {
    ocl_tune *t = ctx->tune;
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i].key);
    free(t->v);
    free(t);
    ctx->tune = NULL;
}
