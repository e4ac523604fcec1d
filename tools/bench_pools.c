/*
 * bench-pools: throughput of several sessions run from several callers at
 * once, on one shared thread pool (minfer_thread_pool) against a pool per
 * session, alternating in one process (docs/PERFORMANCE.md, "Shared thread
 * pool").
 *
 *   bench-pools CASE_DIR [--sessions 4] [--callers 4] [--threads 2]
 *               [--runs 5] [--rounds 20] [--providers onednn,cpu]
 *
 * CASE_DIR holds model.onnx and test_data_set_0/input_K.pb. Both sides
 * have `sessions` sessions of the model, `threads` threads each (the shared
 * side: one pool of `threads` in all), and `callers` threads per session
 * running it `runs` times each. A round times one side then the other (the
 * order flips each round); each prints runs per second over the wall time.
 * At the end: the median runs/s of each side, the median and range of the
 * per-round ratios shared / per-session, the OS threads each side made
 * (/proc/self/task, counted while its callers run) and the load average
 * before and after.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "minfer/minfer.h"

#define MAX_SESSIONS 64
#define MAX_IN 16
#define MAX_ROUNDS 1000

typedef struct side {
    const char *name;
    minfer_session *s[MAX_SESSIONS];
    double rate[MAX_ROUNDS];
    int peak_threads;
} side;

static int n_sessions = 4, n_callers = 4, threads = 2, runs = 5, rounds = 20;
static const char *in_names[MAX_IN];
static minfer_tensor *inputs[MAX_IN];
static size_t n_in, n_out;
static atomic_int failed, peak;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int os_threads(void) {
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void loadavg(char *buf, size_t size) {
    FILE *f = fopen("/proc/loadavg", "r");
    buf[0] = 0;
    if (f) {
        if (!fgets(buf, (int)size, f))
            buf[0] = 0;
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = 0;
}

static void *caller(void *arg) {
    minfer_session *s = arg;
    minfer_tensor *out[MAX_IN];
    for (int r = 0; r < runs; r++) {
        for (size_t o = 0; o < n_out; o++)
            out[o] = NULL;
        if (minfer_session_run(s, in_names, (const minfer_tensor *const *)inputs, n_in, NULL, out,
                               n_out) != MINFER_OK) {
            fprintf(stderr, "bench-pools: run: %s\n", minfer_last_error());
            atomic_store(&failed, 1);
            return NULL;
        }
        for (size_t o = 0; o < n_out; o++)
            minfer_tensor_free(out[o]);
        if (r == 0) {
            int n = os_threads(), was = atomic_load(&peak);
            while (n > was && !atomic_compare_exchange_weak(&peak, &was, n))
                ;
        }
    }
    return NULL;
}

/* One round of side sd: every caller of every session at once; runs/s. */
static double round_of(side *sd) {
    pthread_t th[MAX_SESSIONS * 64];
    int n = 0;
    atomic_store(&peak, 0);
    double t0 = now_s();
    for (int k = 0; k < n_sessions; k++)
        for (int c = 0; c < n_callers; c++)
            if (pthread_create(&th[n], NULL, caller, sd->s[k]) == 0)
                n++;
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    double wall = now_s() - t0;
    if (atomic_load(&peak) > sd->peak_threads)
        sd->peak_threads = atomic_load(&peak);
    return (double)n * runs / wall;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
    double tmp[MAX_ROUNDS];
    memcpy(tmp, v, (size_t)n * sizeof *v);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

static int open_side(side *sd, const char *model, const char *provs, minfer_thread_pool *tp) {
    minfer_options *opt = NULL;
    if (minfer_options_create(&opt) != MINFER_OK ||
        (provs && minfer_options_set_providers_str(opt, provs) != MINFER_OK) ||
        minfer_options_set_threads(opt, threads) != MINFER_OK ||
        minfer_options_set_thread_pool(opt, tp) != MINFER_OK)
        goto fail;
    for (int k = 0; k < n_sessions; k++)
        if (minfer_session_create(model, opt, &sd->s[k]) != MINFER_OK)
            goto fail;
    minfer_options_free(opt);
    return 0;
fail:
    fprintf(stderr, "bench-pools: %s\n", minfer_last_error());
    minfer_options_free(opt);
    return 1;
}

static int int_arg(const char *flag, const char *v, int lo, int hi, int *out) {
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || x < lo || x > hi) {
        fprintf(stderr, "bench-pools: %s takes %d..%d\n", flag, lo, hi);
        return 1;
    }
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *provs = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = 0;
        if (!strcmp(a, "--sessions"))
            rc = int_arg(a, v, 1, MAX_SESSIONS, &n_sessions), i++;
        else if (!strcmp(a, "--callers"))
            rc = int_arg(a, v, 1, 64, &n_callers), i++;
        else if (!strcmp(a, "--threads"))
            rc = int_arg(a, v, 1, MINFER_MAX_THREADS, &threads), i++;
        else if (!strcmp(a, "--runs"))
            rc = int_arg(a, v, 1, 100000, &runs), i++;
        else if (!strcmp(a, "--rounds"))
            rc = int_arg(a, v, 1, MAX_ROUNDS, &rounds), i++;
        else if (!strcmp(a, "--providers") && v)
            provs = v, i++;
        else if (a[0] != '-' && !dir)
            dir = a;
        else
            rc = 1;
        if (rc) {
            fprintf(stderr, "usage: bench-pools CASE_DIR [--sessions N] [--callers N] "
                            "[--threads N] [--runs N] [--rounds N] [--providers LIST]\n");
            return 2;
        }
    }
    if (!dir) {
        fprintf(stderr, "usage: bench-pools CASE_DIR [options]\n");
        return 2;
    }
    char model[4096], path[4200], load0[128], load1[128];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    static side shared = {.name = "shared"}, own = {.name = "per-session"};
    minfer_thread_pool *tp = NULL;
    int t0 = os_threads(), t1, t2;
    if (minfer_thread_pool_create(threads, &tp) != MINFER_OK ||
        open_side(&shared, model, provs, tp)) {
        fprintf(stderr, "bench-pools: %s\n", minfer_last_error());
        return 1;
    }
    t1 = os_threads();
    if (open_side(&own, model, provs, NULL))
        return 1;
    t2 = os_threads();
    minfer_thread_pool_free(tp); /* the shared side's sessions hold it */
    n_in = minfer_session_input_count(shared.s[0]);
    n_out = minfer_session_output_count(shared.s[0]);
    if (n_in > MAX_IN || n_out > MAX_IN) {
        fprintf(stderr, "bench-pools: more than %d inputs or outputs\n", MAX_IN);
        return 1;
    }
    for (size_t k = 0; k < n_in; k++) {
        minfer_value_info vi;
        snprintf(path, sizeof path, "%s/test_data_set_0/input_%zu.pb", dir, k);
        if (minfer_session_input_info(shared.s[0], k, &vi) != MINFER_OK ||
            minfer_tensor_load_pb(path, &inputs[k], NULL) != MINFER_OK) {
            fprintf(stderr, "bench-pools: %s\n", minfer_last_error());
            return 1;
        }
        in_names[k] = vi.name;
    }
    side *order[2] = {&shared, &own};
    for (int w = 0; w < 2; w++) { /* warm-up: plans, packed weights, caches */
        int keep = runs;
        runs = 2;
        round_of(order[w]);
        runs = keep;
        order[w]->peak_threads = 0;
    }
    loadavg(load0, sizeof load0);
    printf("bench-pools %s: %d sessions x %d callers, %d threads, %d runs per caller, %d rounds\n",
           dir, n_sessions, n_callers, threads, runs, rounds);
    double ratio[MAX_ROUNDS];
    for (int r = 0; r < rounds && !atomic_load(&failed); r++) {
        side *a = order[r % 2], *b = order[1 - r % 2];
        double ra = round_of(a), rb = round_of(b);
        a->rate[r] = ra;
        b->rate[r] = rb;
        ratio[r] = shared.rate[r] / own.rate[r];
        printf("round %2d  shared %8.2f runs/s  per-session %8.2f runs/s  ratio %.3f\n", r + 1,
               shared.rate[r], own.rate[r], ratio[r]);
        fflush(stdout);
    }
    if (atomic_load(&failed))
        return 1;
    loadavg(load1, sizeof load1);
    double lo = ratio[0], hi = ratio[0];
    for (int r = 1; r < rounds; r++) {
        lo = ratio[r] < lo ? ratio[r] : lo;
        hi = ratio[r] > hi ? ratio[r] : hi;
    }
    printf("median: shared %.2f runs/s, per-session %.2f runs/s; shared/per-session %.3f "
           "(rounds %.3f..%.3f)\n",
           median(shared.rate, rounds), median(own.rate, rounds), median(ratio, rounds), lo, hi);
    printf("OS threads the sessions made: shared %d, per-session %d; the process's while "
           "running (both sides' sessions exist throughout, plus %d callers): shared %d, "
           "per-session %d\n",
           t1 - t0, t2 - t1, n_sessions * n_callers, shared.peak_threads, own.peak_threads);
    printf("load average before: %s\nload average after:  %s\n", load0, load1);
    for (int k = 0; k < n_sessions; k++) {
        minfer_session_free(shared.s[k]);
        minfer_session_free(own.s[k]);
    }
    for (size_t k = 0; k < n_in; k++)
        minfer_tensor_free(inputs[k]);
    return 0;
}
