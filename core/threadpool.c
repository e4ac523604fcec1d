/*
 * Fork-join thread pool.
 *
 * A job is a range [0, n) cut into at most `threads` contiguous chunks;
 * workers and the caller claim chunks through an atomic counter, so a
 * worker that is slow to start (asleep, or its CPU taken by another
 * process) only leaves its chunk to the caller, and the caller waits only
 * for chunks already started. One job runs at a time per pool: a second
 * caller (another run on the same session) or a nested call from inside a
 * chunk runs its range serially instead of blocking, so the pool can never
 * deadlock.
 *
 * Waiting. Between jobs a worker first spins for a short while (spin_ns,
 * 200 us by default, MINFER_SPIN_US to change, 0 to sleep at once) and
 * then sleeps on a condition variable. Inference posts jobs in quick
 * succession (one per node or less), and waking a sleeping thread costs
 * tens of microseconds on a virtual machine, as long as a medium node
 * takes; a bounded spin keeps the worker answering within a run and
 * gives the CPU back between runs. The caller likewise spins for a
 * worker's last chunk before it sleeps.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"
#include "threadpool.h"

#define DEFAULT_SPIN_US 200
#define CALLER_SPIN_NS 2000000ull /* for a started chunk: then sleep */

struct mf_pool {
    int threads;
    pthread_t *workers;
    int n_workers;
    uint64_t spin_ns;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    pthread_mutex_t busy; /* held by the caller owning the current job */
    atomic_int stop;
    /* The current job: written under lock before claim moves to it. */
    minfer_range_fn fn;
    void *arg;
    size_t n, chunk, n_chunks;
    /* The job's generation (high 32 bits) and its next unclaimed chunk
     * (low 32): one word, so a worker still looking for work in an old job
     * cannot take a chunk of the next one. */
    atomic_uint_fast64_t claim;
    atomic_size_t finished;
};

static _Thread_local int in_pool_task;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t gen_of(uint64_t claim) { return (uint32_t)(claim >> 32); }

/* Runs chunks of job gen while there are any; the job's fields are
 * visible to this thread (it took the lock after the job was posted, or
 * posted it). */
static void run_chunks(mf_pool *p, uint32_t gen) {
    size_t ran = 0, n_chunks = p->n_chunks;
    in_pool_task = 1;
    uint64_t v = atomic_load(&p->claim);
    while (gen_of(v) == gen && (v & 0xffffffffu) < n_chunks) {
        if (!atomic_compare_exchange_weak(&p->claim, &v, v + 1))
            continue;
        size_t b = (size_t)(v & 0xffffffffu) * p->chunk;
        size_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->arg, b, e);
        ran++;
        v = atomic_load(&p->claim);
    }
    in_pool_task = 0;
    if (ran && atomic_fetch_add(&p->finished, ran) + ran == n_chunks) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->done);
        pthread_mutex_unlock(&p->lock);
    }
}

/* Spins until the generation moves from seen or spin_ns pass. */
static void spin_for_job(mf_pool *p, uint32_t seen) {
    if (!p->spin_ns)
        return;
    uint64_t until = now_ns() + p->spin_ns;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (gen_of(atomic_load_explicit(&p->claim, memory_order_relaxed)) != seen ||
                atomic_load_explicit(&p->stop, memory_order_relaxed))
                return;
            cpu_relax();
        }
        if (now_ns() >= until)
            return;
    }
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether a worker spins is decided by what spinning gets it. While it
 * works or spins it never blocks, so its CPU time should keep pace with
 * the clock; when another process shares its CPU, the scheduler takes
 * turns and the worker's CPU time falls behind. A worker that spins then
 * loses its place (the CPU time it burnt counts against it), and a node
 * waits for a chunk whose worker is descheduled. So every few jobs the
 * worker compares the two over the time since it last slept; when it got
 * less than 7/8 of the clock it stops spinning for QUIET_JOBS jobs, and
 * sleeps right after each (a thread woken from sleep runs promptly), then
 * tries spinning again. */
#define SAMPLE_EVERY 8
#define SAMPLE_MIN_NS 500000ull
#define QUIET_JOBS 256

static void *worker_main(void *arg) {
    mf_pool *p = arg;
    uint32_t seen = 0;
    unsigned jobs = 0, quiet = 0;
    uint64_t wall0 = now_ns(), cpu0 = thread_cpu_ns();
    int slept = 1;
    for (;;) {
        if (!quiet)
            spin_for_job(p, seen);
        /* The job's fields were written under the lock before claim moved
         * to it: taking the lock orders them for this thread. */
        pthread_mutex_lock(&p->lock);
        while (!atomic_load(&p->stop) && gen_of(atomic_load(&p->claim)) == seen) {
            pthread_cond_wait(&p->wake, &p->lock);
            slept = 1;
        }
        seen = gen_of(atomic_load(&p->claim));
        pthread_mutex_unlock(&p->lock);
        if (atomic_load(&p->stop))
            break;
        run_chunks(p, seen);
        if (quiet)
            quiet--;
        if (++jobs % SAMPLE_EVERY == 0 || slept) {
            uint64_t wall = now_ns(), cpu = thread_cpu_ns();
            if (slept) {
                slept = 0; /* a new window: sleeping is not being descheduled */
            } else if (wall - wall0 >= SAMPLE_MIN_NS) {
                if ((cpu - cpu0) * 8 < (wall - wall0) * 7)
                    quiet = QUIET_JOBS;
            } else {
                continue; /* a window too short to tell: keep it open */
            }
            wall0 = wall;
            cpu0 = cpu;
        }
    }
    return NULL;
}

mf_pool *mf_pool_create(int threads) {
    mf_pool *p = mf_calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->threads = threads < 1 ? 1 : threads;
    const char *env = getenv("MINFER_SPIN_US");
    long us = DEFAULT_SPIN_US;
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end == '\0' && v >= 0 && v <= 1000000)
            us = v;
    }
    p->spin_ns = (uint64_t)us * 1000u;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->busy, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->stop, 0);
    atomic_init(&p->claim, 0);
    atomic_init(&p->finished, 0);
    if (p->threads > 1) {
        p->workers = mf_calloc((size_t)p->threads - 1, sizeof *p->workers);
        if (!p->workers) {
            mf_pool_free(p);
            return NULL;
        }
        for (int i = 0; i < p->threads - 1; i++) {
            if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0)
                break; /* fewer workers: still correct, the caller runs chunks */
            p->n_workers++;
        }
    }
    return p;
}

void mf_pool_free(mf_pool *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->workers[i], NULL);
    free(p->workers);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->busy);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

int mf_pool_threads(const mf_pool *p) { return p ? p->n_workers + 1 : 1; }

void mf_pool_parallel_for(mf_pool *p, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    if (n == 0)
        return;
    if (grain == 0)
        grain = 1;
    size_t max_chunks = (n + grain - 1) / grain;
    if (!p || p->n_workers == 0 || max_chunks < 2 || in_pool_task ||
        pthread_mutex_trylock(&p->busy) != 0) {
        fn(arg, 0, n);
        return;
    }
    size_t chunks = (size_t)p->n_workers + 1;
    if (chunks > max_chunks)
        chunks = max_chunks;
    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = (n + chunks - 1) / chunks;
    p->n_chunks = (n + p->chunk - 1) / p->chunk;
    atomic_store(&p->finished, 0);
    uint32_t gen = gen_of(atomic_load(&p->claim)) + 1;
    atomic_store(&p->claim, (uint64_t)gen << 32);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_chunks(p, gen);

    /* Chunks a worker started: spin a while for them, then sleep. */
    size_t total = p->n_chunks;
    uint64_t until = 0;
    while (atomic_load_explicit(&p->finished, memory_order_acquire) < total) {
        for (int i = 0; i < 64; i++)
            cpu_relax();
        uint64_t t = now_ns();
        if (!until)
            until = t + CALLER_SPIN_NS;
        else if (t >= until)
            break;
    }
    pthread_mutex_lock(&p->lock);
    while (atomic_load(&p->finished) < total)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->busy);
}
