/*
 * minfer bench MODEL: the input shapes, the providers that run nodes, the
 * thread count, session creation time, per-run latency (min, median, p90,
 * mean, max over --runs after --warmup), the memory plan's figures and the
 * process's peak resident memory; with --profile also a table of time and
 * GFLOPS per op type. --json prints one JSON object instead (with the
 * session's own statistics, minfer_session_stats, as "stats").
 *
 * Figures are for comparing in one run on one machine (alternating with the
 * thing compared); a single absolute time on a shared machine means little.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char *CMD = "bench";

static void print_help(void) {
    printf("usage: minfer bench MODEL [options]\n"
           "\n"
           "Creates a session, runs it --warmup times, then --runs times, and prints\n"
           "the input shapes used, the providers that run nodes, the thread count, the\n"
           "session creation time, run latency (min, median, p90, mean, max), the memory\n"
           "plan (arena, all intermediates, lower bound) and the peak resident memory.\n"
           "\n"
           "options:\n"
           "  --providers LIST  provider preference, e.g. 'onednn,cpu'\n"
           "  --threads N       threads of the session's pool (0: one per CPU)\n"
           "  --runs N          timed runs (default 20; per caller with --concurrency)\n"
           "  --concurrency N   N callers run the session at once, each --runs times;\n"
           "                    under the pipeline scheduler, N requests kept in flight\n"
           "                    through the asynchronous API (N x --runs in all):\n"
           "                    throughput (runs/s over the wall time) and p50/p99 latency\n"
           "                    (compare schedulers: minfer --scheduler S bench ...)\n"
           "  --warmup N        untimed runs first (default 3; with --concurrency, then\n"
           "                    up to N more from each caller, or N x concurrency requests)\n"
           "  --inputs DIR      inputs from DIR/input_K.pb (default: random, symbolic dims 1)\n"
           "  --dim NAME=N      set the symbolic dimension NAME of every input to N\n"
           "                    (repeatable; e.g. --dim seq=128)\n"
           "  --shape IN=DIMS   fix input IN's shape, e.g. --shape input=1x3x224x224\n"
           "  --json            print one JSON object (to standard output)\n"
           "  --profile FILE    write a profile to FILE (ONNX Runtime's JSON array of trace\n"
           "                    events; Perfetto opens it) and print time per op type\n"
           "  --force           replace the --profile file if it exists\n"
           "  --check-nan       fail naming the first node whose float output has a NaN/Inf\n"
           "  --provider-option PROVIDER:KEY=VALUE\n"
           "                    one key of a provider's options (repeatable), e.g.\n"
           "                    opencl:device=1; ',' cannot appear in a value\n"
           "  --creation-deadline MS\n"
           "                    fail if creating the session takes longer than MS ms\n"
           "  --versus S        also time a second session of the model under scheduler S\n"
           "                    (sequential, parallel, pipeline), in one process, the two\n"
           "                    alternating in --rounds rounds of --runs runs each (the\n"
           "                    order flips every round), and print each round's figures\n"
           "                    and the ratios S / this session's scheduler\n"
           "  --rounds N        rounds of --versus (default 5)\n"
           "  -h, --help        show this help\n");
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted v[0..n). */
static double percentile(const double *v, size_t n, double q) {
    size_t k = (size_t)(q * (double)n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return v[k - 1];
}

static long peak_rss_kib(void) {
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* One op type's share of the profile. */
typedef struct op_row {
    char op[160];
    size_t count;         /* nodes */
    double total_ms;      /* over every profiled run, warm-up included */
    double ms_per_run;    /* the nodes' mean times added up */
    double flops_x_runs;  /* estimated FLOPs times the runs they were timed over */
} op_row;

static int cmp_row(const void *a, const void *b) {
    double x = ((const op_row *)a)->total_ms, y = ((const op_row *)b)->total_ms;
    return x > y ? -1 : x < y;
}

/* Groups the node profiles by op type ("domain:op" outside the default
 * domain), sorted by time. Nodes folded into constants never run and are
 * left out. *n_rows is 0 when profiling is off. */
static op_row *op_profile(const minfer_session *s, size_t *n_rows, double *total_ms) {
    size_t nn = minfer_session_node_count(s), n = 0;
    op_row *rows = calloc(nn + 1, sizeof *rows);
    *n_rows = 0;
    *total_ms = 0;
    if (!rows)
        return NULL;
    for (size_t i = 0; i < nn; i++) {
        minfer_node_placement p;
        double ms = 0, flops = 0;
        uint64_t runs = 0;
        char key[160];
        if (minfer_session_node_placement(s, i, &p) != MINFER_OK ||
            minfer_session_node_profile(s, i, &ms, &runs, &flops) != MINFER_OK || runs == 0)
            continue;
        snprintf(key, sizeof key, "%s%s%s", p.domain && p.domain[0] ? p.domain : "",
                 p.domain && p.domain[0] ? ":" : "", p.op_type);
        size_t r = 0;
        while (r < n && strcmp(rows[r].op, key) != 0)
            r++;
        if (r == n)
            snprintf(rows[n++].op, sizeof rows[r].op, "%s", key);
        rows[r].count++;
        rows[r].total_ms += ms;
        rows[r].ms_per_run += ms / (double)runs;
        rows[r].flops_x_runs += flops * (double)runs;
        *total_ms += ms;
    }
    qsort(rows, n, sizeof *rows, cmp_row);
    *n_rows = n;
    return rows;
}

static double gflops(const op_row *r) {
    return r->total_ms > 0 ? r->flops_x_runs / (r->total_ms * 1e6) : 0;
}

/* Whether an op type's operations are integer ones (int8 products). */
static int int8_op(const char *op) {
    const char *dot = strrchr(op, ':');
    const char *name = dot ? dot + 1 : op;
    return !strcmp(name, "QLinearConv") || !strcmp(name, "ConvInteger") ||
           !strcmp(name, "QLinearMatMul") || !strcmp(name, "MatMulInteger") ||
           !strcmp(name, "QGemm");
}

/* Progress, when stderr is a terminal: after half a second of warm-up or
 * timing, one line saying the phase and the runs done, redrawn at most 5
 * times a second and erased before the figures print. Runs from several
 * callers show the phase only. */
static struct {
    int on, shown;
    const char *phase;
    double start, last;
} progress;

static void progress_phase(const char *phase) {
    progress.phase = phase;
    progress.start = progress.last = now_ms();
}

static void progress_show(int done, int total) {
    if (!progress.on)
        return;
    double t = now_ms();
    if (t - progress.start < 500 || (progress.shown && t - progress.last < 200))
        return;
    if (total > 0)
        fprintf(stderr, "\rminfer bench: %s: %d/%d runs\033[K", progress.phase, done, total);
    else
        fprintf(stderr, "\rminfer bench: %s ...\033[K", progress.phase);
    fflush(stderr);
    progress.shown = 1;
    progress.last = t;
}

static void progress_end(void) {
    if (progress.shown)
        fputs("\r\033[K", stderr);
    progress.shown = 0;
}

/* --concurrency N: one of N callers running the session at once, each
 * with its own outputs; lat gets its runs' latencies. */
typedef struct caller {
    minfer_session *s;
    const char **names;
    minfer_tensor **ins;
    size_t n_in, n_out;
    int runs;
    double *lat;
    minfer_status st;
} caller;

static void *caller_main(void *arg) {
    caller *c = arg;
    minfer_tensor **outs = calloc(c->n_out + 1, sizeof *outs);
    c->st = outs ? MINFER_OK : MINFER_ERR_NOMEM;
    for (int i = 0; c->st == MINFER_OK && i < c->runs; i++) {
        for (size_t o = 0; o < c->n_out; o++)
            if (outs[o] && minfer_value_kind_of(outs[o]) != MINFER_VALUE_TENSOR) {
                minfer_tensor_free(outs[o]);
                outs[o] = NULL;
            }
        double a = now_ms();
        c->st = minfer_session_run(c->s, c->names, (const minfer_tensor *const *)c->ins, c->n_in,
                                   NULL, outs, c->n_out);
        c->lat[i] = now_ms() - a;
    }
    for (size_t o = 0; outs && o < c->n_out; o++)
        minfer_tensor_free(outs[o]);
    free(outs);
    return NULL;
}

/* Runs `runs` runs from each of n callers at once; *wall_ms the time for
 * all of them. */
static minfer_status run_callers(minfer_session *s, const char **names, minfer_tensor **ins,
                                 size_t n_in, size_t n_out, int runs, int n, double *lat,
                                 double *wall_ms) {
    caller *cs = calloc((size_t)n, sizeof *cs);
    pthread_t *ts = calloc((size_t)n, sizeof *ts);
    minfer_status st = cs && ts ? MINFER_OK : MINFER_ERR_NOMEM;
    int started = 0;
    double t0 = now_ms();
    for (; st == MINFER_OK && started < n; started++) {
        cs[started] = (caller){s, names, ins, n_in, n_out, runs, lat + (size_t)started * runs,
                               MINFER_OK};
        if (pthread_create(&ts[started], NULL, caller_main, &cs[started]) != 0)
            st = MINFER_ERR_NOMEM;
    }
    if (st != MINFER_OK)
        started--;
    for (int k = 0; k < started; k++) {
        pthread_join(ts[k], NULL);
        if (st == MINFER_OK)
            st = cs[k].st;
    }
    *wall_ms = now_ms() - t0;
    free(cs);
    free(ts);
    return st;
}

/* --concurrency N under the pipeline scheduler: the asynchronous API with
 * N requests in flight (one submitted as one finishes), `total` requests
 * in all; each latency is from its submit to its callback. */
typedef struct async_bench {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    double *t0, *lat;
    int finished;
} async_bench;

typedef struct async_slot {
    async_bench *ab;
    int k;
} async_slot;

static void async_done(void *user, minfer_request *req, minfer_status st) {
    async_slot *sl = user;
    async_bench *ab = sl->ab;
    (void)req;
    (void)st;
    double t = now_ms();
    pthread_mutex_lock(&ab->lock);
    ab->lat[sl->k] = t - ab->t0[sl->k];
    ab->finished++;
    pthread_cond_broadcast(&ab->cv);
    pthread_mutex_unlock(&ab->lock);
}

static minfer_status run_async(minfer_session *s, const char **names, minfer_tensor **ins,
                               size_t n_in, int total, int n, double *lat, double *wall_ms) {
    async_bench ab = {.lat = lat, .finished = 0};
    minfer_request **reqs = calloc((size_t)n, sizeof *reqs);
    async_slot *slots = calloc((size_t)total, sizeof *slots);
    ab.t0 = calloc((size_t)total, sizeof *ab.t0);
    minfer_status st = reqs && slots && ab.t0 ? MINFER_OK : MINFER_ERR_NOMEM;
    pthread_mutex_init(&ab.lock, NULL);
    pthread_cond_init(&ab.cv, NULL);
    int submitted = 0;
    double t0 = now_ms();
    for (int k = 0; st == MINFER_OK && k < total; k++) {
        /* request k reuses the ring slot of request k - n, waited for first */
        minfer_request **r = &reqs[k % n];
        if (*r) {
            st = minfer_request_wait(*r, NULL, 0);
            minfer_request_free(*r);
            *r = NULL;
            if (st != MINFER_OK)
                break;
        }
        slots[k] = (async_slot){&ab, k};
        ab.t0[k] = now_ms();
        st = minfer_session_submit(s, names, (const minfer_tensor *const *)ins, n_in, async_done,
                                   &slots[k], r);
        if (st == MINFER_OK)
            submitted++;
    }
    for (int j = 0; reqs && j < n; j++)
        if (reqs[j]) {
            minfer_status w = minfer_request_wait(reqs[j], NULL, 0);
            if (st == MINFER_OK)
                st = w;
            minfer_request_free(reqs[j]);
        }
    /* every callback has run before the latencies are read */
    pthread_mutex_lock(&ab.lock);
    while (ab.finished < submitted)
        pthread_cond_wait(&ab.cv, &ab.lock);
    pthread_mutex_unlock(&ab.lock);
    *wall_ms = now_ms() - t0;
    pthread_mutex_destroy(&ab.lock);
    pthread_cond_destroy(&ab.cv);
    free(reqs);
    free(slots);
    free(ab.t0);
    return st;
}

/* A session bench times (this one, and --versus's): its scheduler's way of taking
 * --concurrency (callers, or requests in flight through the pipeline) and,
 * for one caller, the outputs it writes into. */
typedef struct side {
    minfer_session *s;
    minfer_tensor **outs;
    int pipelined;
    const char *name; /* its scheduler */
} side;

/* `runs` runs of one side (per caller or request slot); lat gets runs x
 * concurrency latencies (with one caller lat may be NULL: warm-up runs),
 * *wall_ms the wall time of them all. */
static minfer_status side_run(side *sd, const char **names, minfer_tensor **ins, size_t n_in,
                              size_t n_out, int runs, int concurrency, double *lat,
                              double *wall_ms) {
    if (concurrency > 1) {
        progress.start -= 500; /* no count to wait for */
        progress_show(0, 0);
    }
    if (sd->pipelined && concurrency > 1)
        return run_async(sd->s, names, ins, n_in, runs * concurrency, concurrency, lat, wall_ms);
    if (concurrency > 1)
        return run_callers(sd->s, names, ins, n_in, n_out, runs, concurrency, lat, wall_ms);
    *wall_ms = 0;
    for (int i = 0; i < runs; i++) {
        for (size_t o = 0; o < n_out; o++)
            if (sd->outs[o] && minfer_value_kind_of(sd->outs[o]) != MINFER_VALUE_TENSOR) {
                minfer_tensor_free(sd->outs[o]);
                sd->outs[o] = NULL;
            }
        double a = now_ms();
        minfer_status st = minfer_session_run(sd->s, names, (const minfer_tensor *const *)ins,
                                              n_in, NULL, sd->outs, n_out);
        double t = now_ms() - a;
        if (lat)
            lat[i] = t;
        *wall_ms += t;
        if (st != MINFER_OK)
            return st;
        progress_show(i + 1, runs);
    }
    return MINFER_OK;
}

static const char *sched_name(int sched) {
    return sched == MINFER_SCHED_PARALLEL   ? "parallel"
           : sched == MINFER_SCHED_PIPELINE ? "pipeline"
                                            : "sequential";
}

/* The median of v[0..n) (sorted in place). */
static double median_of(double *v, size_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return percentile(v, n, 0.5);
}

/* --versus: at most this many timed runs a side (their latencies are kept). */
#define MAX_VERSUS_RUNS 1e8

/* Per round of --versus: each side's median latency and throughput. */
typedef struct round_fig {
    double med[2], per_s[2];
} round_fig;

/* The median over the rounds of field f of side k, or of the ratio side 1
 * over side 0 when k is 2; lo and hi the range. */
static double over_rounds(const round_fig *r, int n, int per_s, int k, double *lo, double *hi) {
    double *v = malloc((size_t)n * sizeof *v);
    *lo = *hi = 0;
    if (!v)
        return 0;
    for (int i = 0; i < n; i++) {
        const double *f = per_s ? r[i].per_s : r[i].med;
        v[i] = k < 2 ? f[k] : f[0] > 0 ? f[1] / f[0] : 0;
    }
    double m = median_of(v, (size_t)n);
    *lo = v[0];
    *hi = v[n - 1];
    free(v);
    return m;
}

/* What the command line asked for. */
typedef struct bench_args {
    const char *model, *providers, *in_dir, *profile;
    int json, threads, runs, warmup, check_nan, force, concurrency, versus, rounds, deadline;
    cli_list dims, shapes, prov_opts;
} bench_args;

/* Parses argc/argv into *a (pos holds the positional arguments); *help is
 * set for --help. Returns a CLI_* code, having said what was wrong. */
static int parse_args(int argc, char **argv, char **pos, bench_args *a, int *help) {
    const char *threads_s = NULL, *runs_s = NULL, *warm_s = NULL, *conc_s = NULL,
               *versus_s = NULL, *rounds_s = NULL, *deadline_s = NULL;
    const cli_opt opts[] = {
        {"providers", 0, &a->providers, NULL, NULL}, {"threads", 0, &threads_s, NULL, NULL},
        {"runs", 0, &runs_s, NULL, NULL},            {"warmup", 0, &warm_s, NULL, NULL},
        {"inputs", 0, &a->in_dir, NULL, NULL},       {"json", 0, NULL, &a->json, NULL},
        {"profile", 0, &a->profile, NULL, NULL},     {"check-nan", 0, NULL, &a->check_nan, NULL},
        {"force", 0, NULL, &a->force, NULL},         {"dim", 0, NULL, NULL, &a->dims},
        {"shape", 0, NULL, NULL, &a->shapes},        {"concurrency", 0, &conc_s, NULL, NULL},
        {"versus", 0, &versus_s, NULL, NULL},        {"rounds", 0, &rounds_s, NULL, NULL},
        {"creation-deadline", 0, &deadline_s, NULL, NULL},
        {"provider-option", 0, NULL, NULL, &a->prov_opts},
    };
    size_t n_pos = 0;
    int rc = cli_parse(CMD, argc, argv, opts, sizeof opts / sizeof opts[0], pos, &n_pos, help);
    if (rc || *help)
        return rc;
    if (n_pos != 1) {
        fprintf(stderr, "minfer bench: expected one MODEL argument, got %zu (see 'minfer bench "
                        "--help')\n",
                n_pos);
        return CLI_USAGE;
    }
    a->model = pos[0];
    if ((threads_s && (rc = cli_parse_int(CMD, "--threads", threads_s, 0, MINFER_MAX_THREADS,
                                          &a->threads))) ||
        (runs_s && (rc = cli_parse_int(CMD, "--runs", runs_s, 1, 1000000, &a->runs))) ||
        (warm_s && (rc = cli_parse_int(CMD, "--warmup", warm_s, 0, 1000000, &a->warmup))) ||
        (conc_s &&
         (rc = cli_parse_int(CMD, "--concurrency", conc_s, 1, 256, &a->concurrency))) ||
        (rounds_s && (rc = cli_parse_int(CMD, "--rounds", rounds_s, 1, 10000, &a->rounds))) ||
        (deadline_s && (rc = cli_parse_int(CMD, "--creation-deadline", deadline_s, 1,
                                           INT32_MAX, &a->deadline))))
        return rc;
    if (!versus_s) {
        if (!rounds_s)
            return 0;
        fprintf(stderr, "minfer bench: --rounds needs --versus\n");
        return CLI_USAGE;
    }
    for (int k = MINFER_SCHED_SEQUENTIAL; k <= MINFER_SCHED_PIPELINE; k++)
        if (strcmp(versus_s, sched_name(k)) == 0)
            a->versus = k;
    int too_many = (double)a->runs * a->concurrency * a->rounds > MAX_VERSUS_RUNS;
    if (a->versus < 0)
        fprintf(stderr, "minfer bench: --versus '%s': not a scheduler (sequential, "
                        "parallel, pipeline)\n",
                versus_s);
    else if (a->profile)
        fprintf(stderr, "minfer bench: --versus and --profile cannot go together (one "
                        "profile of two sessions)\n");
    else if (too_many)
        fprintf(stderr, "minfer bench: --runs x --concurrency x --rounds is over %.0f runs a "
                        "side\n",
                MAX_VERSUS_RUNS);
    return a->versus < 0 || a->profile || too_many ? CLI_USAGE : 0;
}

/* A bench under way: side 0 is the session of the model, side 1 --versus's
 * second session; the inputs both run on; every timed latency. */
typedef struct bench {
    const bench_args *a;
    side sides[2];
    size_t n_in, n_out;
    minfer_tensor **ins;
    const char **names;
    double *lat;     /* side 0's latencies, then (--versus) one round of side 1's */
    size_t per_side; /* timed runs a side, every caller's and round's */
    round_fig *rf;   /* --versus: each round's figures */
    double create_ms, wall_ms;
    int runs;      /* side 0's timed runs in all (the count the statistics cover) */
    int pipelined; /* --concurrency requests in flight through the pipeline */
} bench;

/* The arrays a bench fills (side 0's outputs included). */
static minfer_status alloc_bench(bench *b) {
    const bench_args *a = b->a;
    int versus = a->versus >= 0;
    b->n_in = minfer_session_input_count(b->sides[0].s);
    b->n_out = minfer_session_output_count(b->sides[0].s);
    b->ins = calloc(b->n_in + 1, sizeof *b->ins);
    b->sides[0].outs = calloc(b->n_out + 1, sizeof *b->sides[0].outs);
    b->names = calloc(b->n_in + 1, sizeof *b->names);
    b->per_side = (size_t)a->runs * (size_t)a->concurrency * (versus ? (size_t)a->rounds : 1);
    b->lat = calloc(b->per_side * (versus ? 2 : 1), sizeof *b->lat);
    if (versus) {
        b->sides[1].outs = calloc(b->n_out + 1, sizeof *b->sides[1].outs);
        b->rf = calloc((size_t)a->rounds, sizeof *b->rf);
    }
    return b->ins && b->sides[0].outs && b->names && b->lat &&
                   (!versus || (b->sides[1].outs && b->rf))
               ? MINFER_OK
               : MINFER_ERR_NOMEM;
}

/* Every input, from --inputs DIR or random (one seed, so every bench of a
 * model runs on the same inputs). */
static minfer_status load_inputs(bench *b) {
    uint64_t seed = 0x6d696e666572ull;
    for (size_t k = 0; k < b->n_in; k++) {
        minfer_value_info info;
        minfer_status st = minfer_session_input_info(b->sides[0].s, k, &info);
        if (st != MINFER_OK)
            return st;
        b->names[k] = info.name;
        if (b->a->in_dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/input_%zu.pb", b->a->in_dir, k);
            st = minfer_value_load_pb(path, (minfer_value_kind)info.kind, &b->ins[k], NULL);
        } else
            st = cli_random_input(CMD, &info, &seed, &b->ins[k]);
        if (st != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

/* Side 0's scheduler and, with --versus, the second session under its
 * scheduler (opt is changed to make it). */
static minfer_status open_sides(bench *b, minfer_options *opt) {
    minfer_schedule_info si = {.struct_size = sizeof si};
    minfer_status st = minfer_session_schedule_info(b->sides[0].s, &si);
    if (st != MINFER_OK)
        return st;
    b->sides[0].pipelined = si.scheduler == MINFER_SCHED_PIPELINE;
    b->sides[0].name = sched_name(si.scheduler);
    b->pipelined = b->a->concurrency > 1 && b->sides[0].pipelined;
    int versus = b->a->versus;
    if (versus < 0)
        return MINFER_OK;
    if ((st = minfer_options_set_scheduler(opt, (minfer_scheduler)versus)) != MINFER_OK ||
        (st = minfer_session_create(b->a->model, opt, &b->sides[1].s)) != MINFER_OK)
        return st;
    b->sides[1].pipelined = versus == MINFER_SCHED_PIPELINE;
    b->sides[1].name = sched_name(versus);
    return MINFER_OK;
}

/* The untimed runs. Side 0's first run allocates the outputs and later
 * runs write into them, so the timed runs measure the runtime, not the
 * allocator. With several callers, or against a second session, every
 * side is also warmed the way it will be timed (each caller's execution
 * context and outputs, the pipeline's workers and every slot's arenas):
 * otherwise the callers' first runs would be timed and the pipeline's
 * would not. The session's statistics start after them. */
static minfer_status warm_up(bench *b) {
    const bench_args *a = b->a;
    double w;
    minfer_status st =
        side_run(&b->sides[0], b->names, b->ins, b->n_in, b->n_out, a->warmup, 1, NULL, &w);
    if (st != MINFER_OK)
        return st;
    for (int k = 0; k < (a->versus >= 0 ? 2 : 1); k++)
        if ((a->concurrency > 1 || a->versus >= 0) && a->warmup > 0 &&
            (st = side_run(&b->sides[k], b->names, b->ins, b->n_in, b->n_out,
                           a->warmup < a->runs ? a->warmup : a->runs, a->concurrency, b->lat,
                           &w)) != MINFER_OK)
            return st;
    return minfer_session_reset_stats(b->sides[0].s);
}

/* --versus's rounds, the two sides alternating (the order flips every
 * round), each side's latencies pooled: side 0's are the figures printed
 * as usual. */
static minfer_status time_versus(bench *b) {
    const bench_args *a = b->a;
    size_t per_round = (size_t)a->runs * (size_t)a->concurrency;
    double *tmp = b->lat + b->per_side; /* side 1's latencies of a round */
    double *c = malloc(per_round * sizeof *c), w;
    minfer_status st = c ? MINFER_OK : MINFER_ERR_NOMEM;
    for (int r = 0; r < a->rounds && st == MINFER_OK; r++)
        for (int j = 0; j < 2 && st == MINFER_OK; j++) {
            int k = (r & 1) ? 1 - j : j;
            double *l = k == 0 ? b->lat + (size_t)r * per_round : tmp;
            if ((st = side_run(&b->sides[k], b->names, b->ins, b->n_in, b->n_out, a->runs,
                               a->concurrency, l, &w)) != MINFER_OK)
                break;
            b->rf[r].per_s[k] = w > 0 ? (double)per_round * 1e3 / w : 0;
            if (k == 0)
                b->wall_ms += w;
            memcpy(c, l, per_round * sizeof *c);
            b->rf[r].med[k] = median_of(c, per_round);
        }
    free(c);
    b->runs = a->runs * a->concurrency * a->rounds;
    return st;
}

/* The timed runs: --versus's rounds, or --runs runs from each caller. */
static minfer_status time_runs(bench *b) {
    const bench_args *a = b->a;
    if (a->versus >= 0)
        return time_versus(b);
    b->runs = a->runs * a->concurrency; /* the statistics cover every caller's runs */
    return side_run(&b->sides[0], b->names, b->ins, b->n_in, b->n_out, a->runs, a->concurrency,
                    b->lat, &b->wall_ms);
}

/* What bench prints, from the latencies (sorted here) and the session. */
typedef struct figures {
    double sum, median, p90, p99, per_s;
    minfer_memory_info mem;
    long rss;
    minfer_run_stats rs;
    op_row *rows; /* --profile's time per op type */
    size_t n_rows;
    double prof_ms;
    size_t n_prov, *used; /* nodes each provider runs */
    int n_threads;
} figures;

/* Fills *f; 0, or CLI_FAIL having said why. */
static int gather(bench *b, figures *f) {
    minfer_session *s = b->sides[0].s;
    int runs = b->runs;
    for (int i = 0; i < runs; i++)
        f->sum += b->lat[i];
    qsort(b->lat, (size_t)runs, sizeof *b->lat, cmp_double);
    minfer_session_memory_info(s, &f->mem);
    f->rss = peak_rss_kib();
    minfer_status st = minfer_session_stats(s, &f->rs);
    if (st != MINFER_OK) {
        fprintf(stderr, "minfer bench: %s\n", cli_error(st));
        return CLI_FAIL;
    }
    if (b->a->profile && !(f->rows = op_profile(s, &f->n_rows, &f->prof_ms))) {
        fprintf(stderr, "minfer bench: out of memory\n");
        return CLI_FAIL;
    }
    /* The providers that run nodes (a provider that loaded but took none
     * is left out), with their node counts. */
    f->n_prov = minfer_session_provider_count(s);
    if (!(f->used = calloc(f->n_prov + 1, sizeof *f->used))) {
        fprintf(stderr, "minfer bench: out of memory\n");
        return CLI_FAIL;
    }
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        if (minfer_session_node_placement(s, i, &p) != MINFER_OK)
            continue;
        for (size_t j = 0; j < f->n_prov; j++)
            if (strcmp(p.provider, minfer_session_provider_name(s, j)) == 0)
                f->used[j]++;
    }
    f->n_threads = minfer_session_thread_count(s);
    /* One latency: the times measured around minfer_session_run here (the
     * session's own statistics, in --json's "stats", time the same runs
     * from inside and differ by the call's overhead). */
    f->median = percentile(b->lat, (size_t)runs, 0.5);
    f->p90 = percentile(b->lat, (size_t)runs, 0.9);
    f->p99 = percentile(b->lat, (size_t)runs, 0.99);
    f->per_s = b->wall_ms > 0 ? runs * 1e3 / b->wall_ms : 0.0;
    return 0;
}

/* --json's "versus": each round, the medians over the rounds and the ratios. */
static json_t *json_versus(const bench *b) {
    const round_fig *rf = b->rf;
    int rounds = b->a->rounds;
    json_t *jv = json_object(), *jr = json_array();
    double lo, hi;
    json_object_set_new(jv, "scheduler", json_string(b->sides[1].name));
    json_object_set_new(jv, "base_scheduler", json_string(b->sides[0].name));
    json_object_set_new(jv, "runs_per_round", json_integer(b->runs / rounds));
    for (int r = 0; r < rounds; r++) {
        json_t *o = json_object(), *m = json_array(), *t = json_array();
        for (int k = 0; k < 2; k++) {
            json_array_append_new(m, json_real(rf[r].med[k]));
            json_array_append_new(t, json_real(rf[r].per_s[k]));
        }
        json_object_set_new(o, "median_ms", m);
        json_object_set_new(o, "runs_per_s", t);
        json_array_append_new(jr, o);
    }
    json_object_set_new(jv, "rounds", jr);
    json_t *m = json_array(), *t = json_array();
    for (int k = 0; k < 2; k++) {
        json_array_append_new(m, json_real(over_rounds(rf, rounds, 0, k, &lo, &hi)));
        json_array_append_new(t, json_real(over_rounds(rf, rounds, 1, k, &lo, &hi)));
    }
    json_object_set_new(jv, "median_ms", m);
    json_object_set_new(jv, "runs_per_s", t);
    json_object_set_new(jv, "latency_ratio", json_real(over_rounds(rf, rounds, 0, 2, &lo, &hi)));
    json_object_set_new(jv, "throughput_ratio",
                        json_real(over_rounds(rf, rounds, 1, 2, &lo, &hi)));
    return jv;
}

/* --json's "device_counters": each device provider's counts of the last run. */
static json_t *json_device_counters(const bench *b, const figures *f) {
    json_t *jd = json_array();
    for (size_t j = 0; j < f->n_prov; j++) {
        minfer_device_counters c = {.struct_size = sizeof c};
        if (minfer_session_device_counters(b->sides[0].s, j, &c) != MINFER_OK)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "provider",
                            cli_json_str(minfer_session_provider_name(b->sides[0].s, j)));
        json_object_set_new(o, "launches", json_integer((json_int_t)c.launches));
        json_object_set_new(o, "syncs", json_integer((json_int_t)c.syncs));
        json_object_set_new(o, "transfers", json_integer((json_int_t)c.transfers));
        json_array_append_new(jd, o);
    }
    return jd;
}

/* --json's "op_types": --profile's time per op type. */
static json_t *json_op_types(const figures *f) {
    json_t *ops = json_array();
    for (size_t i = 0; i < f->n_rows; i++) {
        const op_row *r = &f->rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "op", cli_json_str(r->op));
        json_object_set_new(o, "count", json_integer((json_int_t)r->count));
        json_object_set_new(o, "total_ms", json_real(r->total_ms));
        json_object_set_new(o, "ms_per_run", json_real(r->ms_per_run));
        json_object_set_new(o, "share", json_real(f->prof_ms > 0 ? r->total_ms / f->prof_ms : 0));
        json_object_set_new(o, "gflops", json_real(gflops(r)));
        json_array_append_new(ops, o);
    }
    return ops;
}

/* --json: one object on standard output. */
static int print_json(const bench *b, const figures *f) {
    const bench_args *a = b->a;
    minfer_session *s = b->sides[0].s;
    const double *lat = b->lat;
    int runs = b->runs;
    json_t *root = json_object(), *jp = json_array(), *ji = json_array(), *jst = json_object();
    json_object_set_new(root, "model", cli_json_str(a->model));
    for (size_t k = 0; k < b->n_in; k++) {
        const minfer_tensor *in = b->ins[k];
        json_t *o = json_object();
        json_object_set_new(o, "name", cli_json_str(b->names[k]));
        json_object_set_new(o, "type", json_string(minfer_dtype_name(minfer_tensor_dtype(in))));
        json_object_set_new(o, "shape", cli_json_shape(minfer_tensor_dims(in), NULL,
                                                       (int)minfer_tensor_rank(in)));
        json_array_append_new(ji, o);
    }
    json_object_set_new(root, "inputs", ji);
    for (size_t j = 0; j < f->n_prov; j++)
        if (f->used[j])
            json_array_append_new(jp, cli_json_str(minfer_session_provider_name(s, j)));
    json_object_set_new(root, "providers", jp);
    json_object_set_new(root, "threads", json_integer(f->n_threads));
    json_object_set_new(root, "create_ms", json_real(b->create_ms));
    json_object_set_new(root, "runs", json_integer(runs));
    json_object_set_new(root, "warmup", json_integer(a->warmup));
    json_object_set_new(root, "min_ms", json_real(lat[0]));
    json_object_set_new(root, "median_ms", json_real(f->median));
    json_object_set_new(root, "p90_ms", json_real(f->p90));
    json_object_set_new(root, "mean_ms", json_real(f->sum / runs));
    json_object_set_new(root, "max_ms", json_real(lat[runs - 1]));
    json_object_set_new(root, "p99_ms", json_real(f->p99));
    json_object_set_new(root, "concurrency", json_integer(a->concurrency));
    json_object_set_new(root, "runs_per_s", json_real(f->per_s));
    json_object_set_new(root, "arena_bytes", json_integer((json_int_t)f->mem.arena_bytes));
    json_object_set_new(root, "device_arena_bytes",
                        json_integer((json_int_t)f->mem.device_arena_bytes));
    json_object_set_new(root, "intermediate_bytes",
                        json_integer((json_int_t)f->mem.intermediate_bytes));
    json_object_set_new(root, "lower_bound_bytes",
                        json_integer((json_int_t)f->mem.lower_bound_bytes));
    json_object_set_new(root, "peak_rss_bytes", json_integer((json_int_t)f->rss * 1024));
    json_object_set_new(jst, "runs", json_integer((json_int_t)f->rs.runs));
    json_object_set_new(jst, "mean_ms", json_real(f->rs.mean_ms));
    json_object_set_new(jst, "min_ms", json_real(f->rs.min_ms));
    json_object_set_new(jst, "max_ms", json_real(f->rs.max_ms));
    json_object_set_new(jst, "p50_ms", json_real(f->rs.p50_ms));
    json_object_set_new(jst, "p90_ms", json_real(f->rs.p90_ms));
    json_object_set_new(jst, "throughput_per_s", json_real(f->rs.throughput));
    json_object_set_new(root, "stats", jst);
    if (a->versus >= 0)
        json_object_set_new(root, "versus", json_versus(b));
    if (a->concurrency == 1 && !a->profile)
        json_object_set_new(root, "device_counters", json_device_counters(b, f));
    if (a->profile) {
        json_object_set_new(root, "profile", cli_json_str(a->profile));
        json_object_set_new(root, "op_types", json_op_types(f));
        double pf = 0, pi = 0;
        cli_measure_peak(f->n_threads, &pf, &pi);
        json_object_set_new(root, "peak_fp32_gflops", json_real(pf));
        json_object_set_new(root, "peak_int8_gops", json_real(pi));
    }
    return cli_json_print(CMD, root) != 0 ? CLI_FAIL : CLI_OK;
}

/* --versus in text: each round, the medians over the rounds and the ratios. */
static void print_versus(const bench *b) {
    const round_fig *rf = b->rf;
    int rounds = b->a->rounds;
    const char *x = b->sides[0].name, *y = b->sides[1].name;
    double lo, hi, lo2, hi2;
    printf("versus:          %s (a second session) against %s, %d alternating rounds "
           "of %d runs each%s\n",
           y, x, rounds, b->runs / rounds, b->a->concurrency > 1 ? " (all callers)" : "");
    for (int r = 0; r < rounds; r++)
        printf("  round %-3d      %s %.3f ms, %.2f runs/s; %s %.3f ms, %.2f runs/s\n", r + 1, x,
               rf[r].med[0], rf[r].per_s[0], y, rf[r].med[1], rf[r].per_s[1]);
    for (int k = 0; k < 2; k++) {
        double m = over_rounds(rf, rounds, 0, k, &lo, &hi);
        double t = over_rounds(rf, rounds, 1, k, &lo2, &hi2);
        printf("  %-14s median of the rounds' medians %.3f ms (%.3f-%.3f), %.2f runs/s "
               "(%.2f-%.2f)\n",
               b->sides[k].name, m, lo, hi, t, lo2, hi2);
    }
    double lr = over_rounds(rf, rounds, 0, 2, &lo, &hi);
    double tr = over_rounds(rf, rounds, 1, 2, &lo2, &hi2);
    printf("  %s / %s: latency %.3f (rounds %.3f-%.3f), throughput %.3f (rounds "
           "%.3f-%.3f)\n",
           y, x, lr, lo, hi, tr, lo2, hi2);
}

/* --profile in text: time per op type. Node times cover every profiled
 * run, the warm-up included; ms/run is each node's mean, so the two agree
 * per run. */
static void print_profile(const bench *b, const figures *f) {
    double per_run = 0;
    int wop = 28;
    for (size_t i = 0; i < f->n_rows; i++) {
        per_run += f->rows[i].ms_per_run;
        wop = (int)strlen(f->rows[i].op) > wop ? (int)strlen(f->rows[i].op) : wop;
    }
    printf("profile:         %s (written at the end)\n", b->a->profile);
    printf("time per op type (%d profiled runs, warm-up included; the nodes add up to "
           "%.3f ms a run):\n",
           b->a->warmup + b->runs, per_run);
    double pf = 0, pi = 0;
    cli_measure_peak(f->n_threads, &pf, &pi);
    printf("  %-*s %6s %12s %10s %7s %9s %8s\n", wop, "op", "nodes", "total ms", "ms/run", "share",
           "G(FL)OPS", "of peak");
    for (size_t i = 0; i < f->n_rows; i++) {
        const op_row *r = &f->rows[i];
        double g = gflops(r), peak = int8_op(r->op) ? pi : pf;
        printf("  %-*s %6zu %12.3f %10.4f %6.1f%% %9.2f", wop, r->op, r->count, r->total_ms,
               r->ms_per_run, f->prof_ms > 0 ? 100.0 * r->total_ms / f->prof_ms : 0.0, g);
        if (peak > 0 && g > 0)
            printf(" %7.1f%%\n", 100.0 * g / peak);
        else
            printf(" %8s\n", "-");
    }
    printf("peak here now, %d thread%s (measured by a loop of fused multiply-adds and VNNI dot "
           "products):\n  float %.0f GFLOPS, int8 %.0f GOPS%s; integer ops (QLinearConv, "
           "ConvInteger, QLinearMatMul, MatMulInteger, QGemm) against the int8 peak\n",
           f->n_threads, f->n_threads == 1 ? "" : "s", pf, pi,
           pi > 0 ? " (AMX tiles, where oneDNN uses them, go beyond it)" : " (no VNNI)");
}

/* The figures as text. */
static void print_text(const bench *b, const figures *f) {
    const bench_args *a = b->a;
    minfer_session *s = b->sides[0].s;
    const double *lat = b->lat;
    int runs = b->runs;
    printf("model:           %s\n", a->model);
    cli_print_inputs(stdout, b->names, b->ins, b->n_in);
    printf("providers used: ");
    for (size_t j = 0, k = 0; j < f->n_prov; j++)
        if (f->used[j])
            printf("%s %s (%zu nodes)", k++ ? "," : "", minfer_session_provider_name(s, j),
                   f->used[j]);
    printf("\nthreads:         %d\n", f->n_threads);
    printf("session create:  %.2f ms\n", b->create_ms);
    printf("runs:            %d (after %d warm-up)\n", runs, a->warmup);
    printf("latency:         min %.3f ms, median %.3f ms, p90 %.3f ms, mean %.3f ms, "
           "max %.3f ms; %.2f runs/s\n",
           lat[0], f->median, f->p90, f->sum / runs, lat[runs - 1],
           f->sum > 0 ? runs * 1e3 / f->sum : 0.0);
    if (b->pipelined)
        printf("throughput:      %.2f runs/s over the wall time, %d requests in flight "
               "through the pipeline (each request: median %.3f ms, 99th percentile %.3f "
               "ms)\n",
               f->per_s, a->concurrency, f->median, f->p99);
    else if (a->concurrency > 1)
        printf("throughput:      %.2f runs/s over the wall time, from %d callers at once "
               "(each run: median %.3f ms, 99th percentile %.3f ms)\n",
               f->per_s, a->concurrency, f->median, f->p99);
    printf("arena:           %.2f MiB host", (double)f->mem.arena_bytes / 1048576.0);
    if (f->mem.device_arena_bytes)
        printf(", %.2f MiB device", (double)f->mem.device_arena_bytes / 1048576.0);
    printf(" (all intermediates %.2f MiB, lower bound %.2f MiB)\n",
           (double)f->mem.intermediate_bytes / 1048576.0,
           (double)f->mem.lower_bound_bytes / 1048576.0);
    printf("peak RSS:        %.1f MiB\n", (double)f->rss / 1024.0);
    if (a->versus >= 0)
        print_versus(b);
    /* A device provider's counts of the last run; with --profile every
     * node ends a "run" (it waits for the device), and concurrent callers
     * share one count, so neither says what a run does. */
    for (size_t j = 0; a->concurrency == 1 && !a->profile && j < f->n_prov; j++) {
        minfer_device_counters c = {.struct_size = sizeof c};
        if (minfer_session_device_counters(s, j, &c) == MINFER_OK)
            printf("device:          %s per run: %llu kernel launches, %llu host "
                   "synchronisations, %llu host transfers\n",
                   minfer_session_provider_name(s, j), (unsigned long long)c.launches,
                   (unsigned long long)c.syncs, (unsigned long long)c.transfers);
    }
    if (a->profile)
        print_profile(b, f);
}

/* Creates side 0's session (timed) under the options the arguments make;
 * a CLI_* code, having said what was wrong. */
static int open_session(const bench_args *a, minfer_options **opt, cli_out *prof, bench *b) {
    minfer_status st = cli_make_options(a->providers, a->threads, opt);
    int rc;
    if (st == MINFER_OK)
        st = minfer_options_set_creation_deadline(*opt, (uint64_t)a->deadline);
    if (st != MINFER_OK) {
        fprintf(stderr, "minfer bench: %s\n", cli_error(st));
        return CLI_FAIL;
    }
    if ((rc = cli_set_shapes(CMD, *opt, &a->dims, &a->shapes)) != 0 ||
        (rc = cli_set_provider_options(CMD, *opt, &a->prov_opts)) != 0)
        return rc;
    if (cli_set_diagnostics(CMD, *opt, a->profile, a->force, prof, a->check_nan, 0) != 0)
        return CLI_FAIL;
    double t0 = now_ms();
    if ((st = minfer_session_create(a->model, *opt, &b->sides[0].s)) != MINFER_OK) {
        fprintf(stderr, "minfer bench: %s\n", cli_error(st));
        return CLI_FAIL;
    }
    b->create_ms = now_ms() - t0;
    cli_note_reference(b->sides[0].s);
    return cli_check_shapes(CMD, b->sides[0].s, &a->shapes);
}

/* The bench's arrays and second session (side 0's session is freed by
 * cli_finish_profile, which writes the profile first). */
static void free_bench(bench *b) {
    for (size_t k = 0; b->ins && k < b->n_in; k++)
        minfer_tensor_free(b->ins[k]);
    for (int j = 0; j < 2; j++) {
        for (size_t k = 0; b->sides[j].outs && k < b->n_out; k++)
            minfer_tensor_free(b->sides[j].outs[k]);
        free(b->sides[j].outs);
    }
    free(b->ins);
    free(b->names);
    free(b->lat);
    free(b->rf);
    minfer_session_free(b->sides[1].s);
}

/* minfer bench: parse, open the session, make the inputs, warm up, time,
 * print. */
int cmd_bench(int argc, char **argv) {
    bench_args a = {.threads = -1, .runs = 20, .warmup = 3, .concurrency = 1, .versus = -1,
                    .rounds = 5};
    bench b = {.a = &a};
    figures f = {0};
    minfer_options *opt = NULL;
    cli_out prof = {0};
    minfer_status st = MINFER_OK;
    int help = 0, rc;
    char **pos = calloc((size_t)argc + 1, sizeof *pos);

    if (!pos) {
        fprintf(stderr, "minfer bench: out of memory\n");
        return CLI_FAIL;
    }
    rc = parse_args(argc, argv, pos, &a, &help);
    if (rc || help) {
        if (!rc)
            print_help();
        goto done;
    }
    if ((rc = open_session(&a, &opt, &prof, &b)) != 0)
        goto done;
    rc = CLI_FAIL;
    if (alloc_bench(&b) != MINFER_OK) {
        fprintf(stderr, "minfer bench: out of memory\n");
        goto done;
    }
    progress.on = isatty(STDERR_FILENO);
    if ((st = load_inputs(&b)) == MINFER_OK && (st = open_sides(&b, opt)) == MINFER_OK) {
        progress_phase("warming up");
        if ((st = warm_up(&b)) == MINFER_OK) {
            progress_phase("timing");
            st = time_runs(&b);
        }
    }
    progress_end();
    if (st != MINFER_OK) {
        fprintf(stderr, "minfer bench: %s\n", cli_error(st));
        goto done;
    }
    if ((rc = gather(&b, &f)) != 0)
        goto done;
    rc = a.json ? print_json(&b, &f) : (print_text(&b, &f), CLI_OK);
done:
    free(f.rows);
    free(f.used);
    free_bench(&b);
    if (cli_finish_profile(CMD, &b.sides[0].s, &prof) != 0)
        rc = CLI_FAIL;
    minfer_options_free(opt);
    free(a.dims.v);
    free(a.prov_opts.v);
    free(a.shapes.v);
    free(pos);
    return rc;
}
