/*
 * Allocation-failure injection, as SQLite's OOM tests do it: for every N,
 * the N-th allocation made by the core (its mf_ wrappers, the protobuf-c
 * parser through the core's allocator, and the session's aligned buffers)
 * fails, through the whole of creating a session for a real model with the
 * CPU provider and running it once. Each call must then either fail with
 * MINFER_ERR_NOMEM and a message (or another status whose message says "out
 * of memory": a provider that cannot be opened for lack of memory is
 * reported as a provider failure), or succeed with the right answer; nothing
 * may crash or leak (run under ASan with detect_leaks=1 in CI), and the
 * sweep ends with a clean session that works.
 *
 * Two modes: one-shot (only the N-th allocation fails, so recovery paths
 * that keep going are exercised) and sticky (the N-th and every later one
 * fails, so error paths that themselves allocate are exercised).
 *
 * Creating and running a model makes thousands of allocations (resnet18
 * about 2,000, tiny_encoder about 13,000), and repeating the whole creation
 * for each N would take many minutes. So the sweep runs the model once, and
 * at each allocation the hook fork()s: the child sees the allocation fail,
 * finishes the call, checks the status, the outputs and that the heap holds
 * exactly the bytes it held before the session was created (glibc's
 * mallinfo2, or ASan's allocator under ASan: a leak is a difference), and
 * exits with a code the parent records; the parent's allocation succeeds
 * and it goes on to the next one while the child runs (two children at a
 * time by default). Sessions use one thread, since a forked child has no
 * pool workers.
 *
 * Not covered: allocations a provider makes with its own malloc (the CPU
 * provider's prepare_node state), and the C library's own (dlopen,
 * realpath): the hook is the core's.
 *
 *   test_alloc_fail [MODEL_DIR...]    (default: tiny_encoder, then resnet18)
 * Every N is swept. MINFER_OOM_STRIDE=k sweeps every k-th N only;
 * MINFER_OOM_JOBS=j runs j children at a time (default 2);
 * MINFER_OOM_MODE=sticky or one-shot runs that sweep only;
 * MINFER_OOM_ONLY=N fails allocation N alone, in-process (for ASan reports).
 */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
/* From the sanitizer runtime (gcc does not install allocator_interface.h). */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void) { return __sanitizer_get_current_allocated_bytes(); }
/* A small quarantine keeps fork() cheap: ASan's default 256 MiB of freed
 * blocks would be copied into every child. The environment can override. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=16"; }
void __sanitizer_purge_allocator(void);
static void release_free_memory(void) { __sanitizer_purge_allocator(); }
#else
#include <malloc.h>
static size_t heap_in_use(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}
static void release_free_memory(void) { malloc_trim(0); }
#endif

#include "util/internal.h"
#include "test_util.h"

#define MAX_IO 16

typedef struct model_case {
    char path[1024];
    size_t n_in, n_out;
    char *in_names[MAX_IO];
    minfer_tensor *in[MAX_IO];
    minfer_tensor *want[MAX_IO];
} model_case;

static const char *const *model_dirs;
static int n_model_dirs;

static void load_case(model_case *c, const char *dir) {
    char p[1200];
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s/model.onnx", dir);
    for (size_t k = 0; k < MAX_IO; k++) {
        snprintf(p, sizeof p, "%s/test_data_set_0/input_%zu.pb", dir, k);
        if (minfer_tensor_load_pb(p, &c->in[k], &c->in_names[k]) != MINFER_OK)
            break;
        c->n_in++;
    }
    for (size_t k = 0; k < MAX_IO; k++) {
        snprintf(p, sizeof p, "%s/test_data_set_0/output_%zu.pb", dir, k);
        if (minfer_tensor_load_pb(p, &c->want[k], NULL) != MINFER_OK)
            break;
        c->n_out++;
    }
    if (!c->n_in || !c->n_out)
        fail_msg("%s: no test_data_set_0 inputs and outputs", dir);
}

static void free_case(model_case *c) {
    for (size_t k = 0; k < c->n_in; k++) {
        minfer_tensor_free(c->in[k]);
        free(c->in_names[k]);
    }
    for (size_t k = 0; k < c->n_out; k++)
        minfer_tensor_free(c->want[k]);
}

/* 1 when got matches want (rtol 1e-3, atol 1e-4) for float outputs,
 * exactly otherwise. */
static int outputs_match(const model_case *c, minfer_tensor *const *got) {
    for (size_t k = 0; k < c->n_out; k++) {
        const minfer_tensor *w = c->want[k], *g = got[k];
        if (!g || minfer_tensor_dtype(g) != minfer_tensor_dtype(w) ||
            minfer_tensor_numel(g) != minfer_tensor_numel(w))
            return 0;
        if (minfer_tensor_dtype(w) != MINFER_DTYPE_FLOAT) {
            if (memcmp(minfer_tensor_data(g), minfer_tensor_data(w), minfer_tensor_nbytes(w)))
                return 0;
            continue;
        }
        const float *a = minfer_tensor_data(g), *b = minfer_tensor_data(w);
        for (int64_t i = 0; i < minfer_tensor_numel(w); i++)
            if (!(fabsf(a[i] - b[i]) <= 1e-4f + 1e-3f * fabsf(b[i])))
                return 0;
    }
    return 1;
}

/* Creates a session for c and runs it once. */
static minfer_status create_and_run(const model_case *c, const minfer_options *opt,
                                    minfer_tensor **out) {
    minfer_session *s = NULL;
    minfer_status st = minfer_session_create(c->path, opt, &s);
    if (st == MINFER_OK)
        st = minfer_session_run(s, (const char *const *)c->in_names,
                                (const minfer_tensor *const *)c->in, c->n_in, NULL, out,
                                c->n_out);
    minfer_session_free(s);
    return st;
}

/* The step between injected failures: 1 (every N) unless
 * MINFER_OOM_STRIDE says otherwise. */
static long stride(void) {
    const char *e = getenv("MINFER_OOM_STRIDE");
    long k = e ? atol(e) : 1;
    return k > 0 ? k : 1;
}

#define MAX_JOBS 16

/* Children running at once: the parent goes on to the next allocation while
 * they finish. */
static int jobs(void) {
    const char *e = getenv("MINFER_OOM_JOBS");
    int j = e ? atoi(e) : 2;
    return j < 1 ? 1 : j > MAX_JOBS ? MAX_JOBS : j;
}

/* Child exit codes. */
enum { CHILD_NOMEM = 0, CHILD_ABSORBED = 10, CHILD_BAD_STATUS = 1, CHILD_LEAK = 2,
       CHILD_WRONG = 3, CHILD_NO_MESSAGE = 4 };

typedef struct sweep_state {
    int sticky, in_child, jobs, running;
    long count, step;
    long failed_at;
    long children, nomem, absorbed, bad, first_bad;
    int first_bad_status;
    pid_t pid[MAX_JOBS]; /* running children and the allocation each fails */
    long at[MAX_JOBS];
} sweep_state;

static void record(sweep_state *ss, long n, int status) {
    ss->children++;
    if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_NOMEM) {
        ss->nomem++;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == CHILD_ABSORBED) {
        ss->absorbed++;
    } else {
        if (!ss->bad || n < ss->first_bad)
            ss->first_bad = n, ss->first_bad_status = status;
        ss->bad++;
    }
}

/* Waits for one running child and records how it ended. */
static void reap_one(sweep_state *ss) {
    int status = 0;
    pid_t p;
    while ((p = waitpid(-1, &status, 0)) < 0 && errno == EINTR)
        ;
    for (int i = 0; i < ss->running; i++) {
        if (p >= 0 && ss->pid[i] != p)
            continue;
        record(ss, ss->at[i], p >= 0 ? status : -1);
        ss->running--;
        ss->pid[i] = ss->pid[ss->running];
        ss->at[i] = ss->at[ss->running];
        return;
    }
}

/* The allocation hook: forks a child in which this allocation fails. */
static int fork_hook(void *arg) {
    sweep_state *ss = arg;
    if (ss->in_child)
        return ss->sticky;
    long n = ss->count++;
    if (n % ss->step)
        return 0;
    if (ss->running == ss->jobs)
        reap_one(ss);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        record(ss, n, -1);
        return 0;
    }
    if (pid == 0) {
        ss->in_child = 1;
        ss->running = 0;
        ss->failed_at = n;
        alarm(300); /* a hang becomes SIGALRM */
        return 1;
    }
    ss->pid[ss->running] = pid;
    ss->at[ss->running++] = n;
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void child_finish(const char *dir, const model_case *c, sweep_state *ss, minfer_status st,
                         minfer_tensor **out, size_t baseline) {
    int code = CHILD_NOMEM;
    const char *msg = minfer_last_error();
    if (st == MINFER_OK)
        code = outputs_match(c, out) ? CHILD_ABSORBED : CHILD_WRONG;
    else if (!msg || !msg[0])
        code = CHILD_NO_MESSAGE;
    else if (st != MINFER_ERR_NOMEM && !strstr(msg, "out of memory"))
        code = CHILD_BAD_STATUS; /* another status must still say why */
    if (code != CHILD_NOMEM && code != CHILD_ABSORBED)
        fprintf(stderr, "%s: allocation %ld failed: status %s, message \"%s\"\n", dir,
                ss->failed_at, minfer_status_str(st), msg ? msg : "");
    for (size_t k = 0; k < c->n_out; k++)
        minfer_tensor_free(out[k]);
    mf_test_set_alloc_hook(NULL, NULL);
    size_t now = heap_in_use();
    if (now != baseline && (code == CHILD_NOMEM || code == CHILD_ABSORBED)) {
        fprintf(stderr, "%s: allocation %ld failed: %lld bytes leaked\n", dir, ss->failed_at,
                (long long)now - (long long)baseline);
        code = CHILD_LEAK;
    }
    _exit(code);
}

/* MINFER_OOM_MODE=sticky or one-shot: that sweep only. */
static int mode_wanted(int sticky) {
    const char *e = getenv("MINFER_OOM_MODE");
    return !e || !e[0] || strcmp(e, sticky ? "sticky" : "one-shot") == 0;
}

/* One sweep over every allocation of creating and running c: the parent's
 * own call sees no failure and must be right and leave the heap clean. */
static void sweep(const char *dir, const model_case *c, const minfer_options *opt, int sticky) {
    minfer_tensor *out[MAX_IO] = {0};
    /* Freed memory back to the system: a fork copies the page tables of
     * everything mapped, and ASan keeps what a freed session used. */
    release_free_memory();
    size_t baseline = heap_in_use();
    sweep_state ss;
    memset(&ss, 0, sizeof ss);
    ss.sticky = sticky;
    ss.jobs = jobs();
    ss.step = stride();
    ss.failed_at = ss.first_bad = -1;
    double t0 = now_s();
    mf_test_set_alloc_hook(fork_hook, &ss);
    minfer_status st = create_and_run(c, opt, out);
    if (ss.in_child)
        child_finish(dir, c, &ss, st, out, baseline);
    mf_test_set_alloc_hook(NULL, NULL);
    while (ss.running)
        reap_one(&ss);
    printf("%s (%s): %ld allocations, failed in turn with step %ld: %ld NOMEM, %ld absorbed, "
           "%ld bad (%.1f s)\n",
           dir, sticky ? "sticky" : "one-shot", ss.count, ss.step, ss.nomem, ss.absorbed, ss.bad,
           now_s() - t0);
    fflush(stdout);
    if (ss.bad)
        fail_msg("%s: %ld injected failures went wrong; the first at allocation %ld (%s %d)", dir,
                 ss.bad, ss.first_bad,
                 WIFSIGNALED(ss.first_bad_status) ? "signal" : "exit code",
                 WIFSIGNALED(ss.first_bad_status) ? WTERMSIG(ss.first_bad_status)
                                                  : WEXITSTATUS(ss.first_bad_status));
    assert_ok(st);
    assert_true(outputs_match(c, out));
    assert_true(ss.children > 0 && ss.children == (ss.count + ss.step - 1) / ss.step);
    for (size_t k = 0; k < c->n_out; k++)
        minfer_tensor_free(out[k]);
    assert_int_equal(heap_in_use(), baseline);
}

/* Both sweeps (one-shot, then sticky) for the model in dir. */
static void sweep_model(const char *dir) {
    model_case c;
    minfer_options *opt = NULL;
    minfer_tensor *out[MAX_IO] = {0};
    load_case(&c, dir);
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_threads(opt, 1));
    assert_ok(minfer_options_set_log_level(opt, MINFER_LOG_ERROR));

    /* Warm up the C library's one-time allocations (stdio), and hold the
     * provider library open meanwhile: dlopen and dlclose of an already
     * loaded library only count references, so a child's heap can be
     * compared with the baseline byte for byte. */
    assert_ok(create_and_run(&c, opt, out));
    for (size_t k = 0; k < c.n_out; k++)
        minfer_tensor_free(out[k]), out[k] = NULL;
    void *keep = dlopen(MINFER_BUILD_PROVIDER_DIR "/libminfer_provider_cpu.so", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(keep);

    const char *only = getenv("MINFER_OOM_ONLY");
    for (int sticky = 0; sticky < 2; sticky++) {
        if (!mode_wanted(sticky))
            continue;
        if (!only) {
            sweep(dir, &c, opt, sticky);
            continue;
        }
        /* Debugging one N in-process, without fork (for ASan's reports). */
        mf_test_fail_after(atol(only), sticky);
        minfer_status st = create_and_run(&c, opt, out);
        mf_test_fail_after(-1, 0);
        printf("%s (%s): allocation %s failed: %s: %s\n", dir, sticky ? "sticky" : "one-shot",
               only, minfer_status_str(st), minfer_last_error());
        for (size_t k = 0; k < c.n_out; k++)
            minfer_tensor_free(out[k]), out[k] = NULL;
    }
    dlclose(keep);
    /* A later session is unaffected. */
    if (!only) {
        assert_ok(create_and_run(&c, opt, out));
        assert_true(outputs_match(&c, out));
        for (size_t k = 0; k < c.n_out; k++)
            minfer_tensor_free(out[k]);
    }
    minfer_options_free(opt);
    free_case(&c);
}

static void test_models(void **state) {
    (void)state;
    for (int i = 0; i < n_model_dirs; i++)
        sweep_model(model_dirs[i]);
}

/* The tensor-file reader under the same sweep. */
static void test_tensor_load(void **state) {
    (void)state;
    char p[1200];
    snprintf(p, sizeof p, "%s/test_data_set_0/input_0.pb", model_dirs[0]);
    for (long n = 0;; n++) {
        minfer_tensor *t = NULL;
        char *name = NULL;
        long failures;
        mf_test_fail_after(n, 0);
        minfer_status st = minfer_tensor_load_pb(p, &t, &name);
        mf_test_alloc_stats(&failures);
        mf_test_fail_after(-1, 0);
        if (st != MINFER_OK) {
            assert_int_equal(st, MINFER_ERR_NOMEM);
            assert_null(t);
        }
        minfer_tensor_free(t);
        free(name);
        if (!failures) {
            assert_ok(st);
            break;
        }
    }
}

int main(int argc, char **argv) {
#ifndef HAVE_ASAN
    /* glibc's per-thread cache keeps freed blocks counted as in use, which
     * would blur the byte-exact leak check: run again without it. */
    if (!getenv("MINFER_OOM_REEXEC")) {
        setenv("MINFER_OOM_REEXEC", "1", 1);
        setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1);
        execv("/proc/self/exe", argv);
        perror("test_alloc_fail: re-exec");
        return 1;
    }
#endif
    /* The small model first: its forks copy less before resnet18 has grown
     * the heap. */
    static const char *defaults[] = {MINFER_MODELS_DIR "/tiny_encoder",
                                     MINFER_MODELS_DIR "/resnet18"};
    model_dirs = defaults;
    n_model_dirs = 2;
    if (argc > 1) {
        model_dirs = (const char *const *)argv + 1;
        n_model_dirs = argc - 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_load),
        cmocka_unit_test(test_models),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
