/*
 * Fork-join thread pool.
 *
 * A job is a range [0, n) cut into up to CHUNKS_PER_THREAD contiguous
 * chunks per thread, never more than n / grain rounded up (job_cut), in
 * near-equal sizes. The chunks are dealt out in blocks, one block of
 * consecutive chunks per thread (the caller the first, worker k the
 * k+1-th: a node cut like the one before finds its data in the cache of
 * the core that wrote it). A block is one atomic word per thread (its
 * job's generation, the next chunk from the front, the end): its thread
 * takes chunks from the front, and a thread whose own block is used up
 * takes them from the back of the others', one at a time. So a worker
 * that is slow to start or descheduled by another process holds up only
 * the chunk it is running, not a thread's share of the job; the caller
 * takes part and waits only for chunks already started. The cut depends
 * on n, grain and the pool's threads alone, never on who runs a chunk:
 * a kernel sees the same ranges every run, whichever thread runs them.
 * One job runs at a time per pool: a second
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
 *
 * Sharing (mf_share, threadpool.h). Each thread of a share has one slot
 * for the job its parallel_for publishes (a thread publishes one job at a
 * time: a call from inside a chunk runs serially). A chunk is claimed by
 * flipping its flag, by its owner without a lock, by a helper under the
 * share's lock while the job is published, so a helper never takes a
 * chunk of a job its owner has already withdrawn. The owner withdraws the
 * job once every chunk is claimed and then waits for the chunks helpers
 * run; a helper counts its chunk done and, when it was the last, wakes the
 * owner. Owners and idle threads wait on one event count per share.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "util/cpus.h"
#include "util/env.h"
#include "util/internal.h"
#include "exec/threadpool.h"

#define DEFAULT_SPIN_US 200
#define CALLER_SPIN_NS 2000000ull /* for a started chunk: then sleep */
/* Chunks a job is cut into per thread, at most: enough that the others
 * can take over most of a descheduled thread's share, few enough that a
 * chunk stays large against the cost of claiming it (one compare-and-swap). */
#define CHUNKS_PER_THREAD 4

typedef struct mf_job {
    minfer_range_fn fn;
    void *arg;
    size_t n, n_chunks;
    size_t blocks; /* threads with a block of chunks: min(threads, n_chunks) */
    uint32_t gen;
} mf_job;

/* A thread's block of a pool job: (generation << 32) | (front << 16) |
 * back, front <= back, chunks [front, back) still free. A thread looking
 * at an older job sees another generation and takes nothing. Padded to a
 * cache line: the blocks are claimed from by different threads. */
#define BLOCK_BITS 16
#define BLOCK_MASK ((1u << BLOCK_BITS) - 1)
typedef struct block {
    atomic_uint_fast64_t word;
    char pad[64 - sizeof(atomic_uint_fast64_t)];
} block;

typedef struct mf_worker_arg {
    struct mf_pool *pool;
    int index; /* 1.. (the caller is 0) */
} mf_worker_arg;

struct mf_pool {
    int threads;
    pthread_t *workers;
    mf_worker_arg *worker_args;
    int n_workers;
    int cpus; /* CPUs the process may use (util/cpus.h): a share does not
                 spin when threads exceed them */
    uint64_t spin_ns;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_cond_t done;
    pthread_mutex_t busy; /* held by the caller owning the current job */
    atomic_int stop;
    /* The current job, written under lock; its generation moves last. */
    mf_job job;
    atomic_uint_fast32_t gen;
    block *blocks; /* per thread: its block of the current job's chunks */
    atomic_size_t finished;
    /* Per thread index of a share of this pool: whether that thread spins
     * before it sleeps in mf_share_wait (share_spins), decided as a worker
     * decides between jobs (worker_main), by whether it kept pace with the
     * clock since it last slept. Kept here, so the verdict carries over
     * from run to run; one thread at a time works as an index. */
    struct pace *pace;
};

struct pace {
    uint64_t wall0, cpu0;
    unsigned waits, quiet;
    int slept;
};

/* One thread's published parallel_for (threadpool.h, sharing). */
typedef struct share_slot {
    mf_job job;             /* written and read under the share's lock */
    int published;          /* under the share's lock */
    atomic_uchar *taken;    /* per chunk: claimed */
    atomic_size_t done;     /* chunks finished */
    atomic_uint_fast64_t chunk_ns; /* time helpers spent in its chunks */
} share_slot;

struct mf_share {
    mf_pool *pool;
    int n;                  /* slots: the pool's threads */
    share_slot *slot;
    atomic_uchar *flags;    /* every slot's taken[], n * n * CHUNKS_PER_THREAD */
    pthread_mutex_t lock;   /* publishing and helpers' claims */
    atomic_int n_published; /* a look without the lock */
    atomic_uint events;     /* the event count */
    atomic_int sleepers;
    atomic_int quiet;       /* mf_share_quiet: no spinning */
    pthread_mutex_t wait_lock;
    pthread_cond_t wake;
    uint64_t spin_ns;
};

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

/* The chunks of [0, n) for grain and threads (see the top): at most
 * CHUNKS_PER_THREAD per thread and n / grain rounded up; 1 means run it
 * serially. */
static size_t job_cut(size_t n, size_t grain, size_t threads) {
    size_t most = n / grain + (n % grain != 0);
    size_t want = threads * CHUNKS_PER_THREAD;
    if (want > BLOCK_MASK) /* a block's word holds chunk numbers below 2^16 */
        want = BLOCK_MASK;
    return most < want ? most : want;
}

/* Sets j's chunking of [0, n) over threads (>= 1). */
static void job_split(mf_job *j, size_t n, size_t grain, size_t threads) {
    j->n = n;
    j->n_chunks = job_cut(n, grain, threads);
    j->blocks = threads < j->n_chunks ? threads : j->n_chunks;
}

/* Chunk c of j: [b, e), near-equal sizes (the first n % n_chunks one longer). */
static void chunk_range(const mf_job *j, size_t c, size_t *b, size_t *e) {
    size_t q = j->n / j->n_chunks, r = j->n % j->n_chunks;
    *b = c * q + (c < r ? c : r);
    *e = *b + q + (c < r);
}

/* The first chunk of block k of j (k <= blocks: the end). */
static size_t block_lo(const mf_job *j, size_t k) { return k * j->n_chunks / j->blocks; }

static uint_fast64_t block_word(uint32_t gen, size_t front, size_t back) {
    return (uint_fast64_t)gen << 32 | (uint_fast64_t)front << BLOCK_BITS | (uint_fast64_t)back;
}

/* Takes a chunk of block k of job j, from the front (its own thread) or
 * the back (another one); -1 when it holds none (or belongs to a newer job). */
static long block_take(mf_pool *p, const mf_job *j, size_t k, int front) {
    uint_fast64_t w = atomic_load_explicit(&p->blocks[k].word, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(w >> 32) != j->gen)
            return -1;
        size_t f = (size_t)(w >> BLOCK_BITS) & BLOCK_MASK, b = (size_t)w & BLOCK_MASK;
        if (f >= b)
            return -1;
        uint_fast64_t nw = front ? block_word(j->gen, f + 1, b) : block_word(j->gen, f, b - 1);
        if (atomic_compare_exchange_weak_explicit(&p->blocks[k].word, &w, nw,
                                                  memory_order_acq_rel, memory_order_acquire))
            return front ? (long)f : (long)(b - 1);
    }
}

/* Runs the chunks of job j that are still free as thread `home`: its own
 * block first, from the front, then the others' from their backs, in turn. */
static void run_chunks(mf_pool *p, const mf_job *j, size_t home) {
    size_t ran = 0, blocks = j->blocks;
    for (size_t k = 0; k < blocks; k++) {
        size_t bk = (home + k) % blocks;
        int own = k == 0 && home < blocks;
        long c;
        while ((c = block_take(p, j, bk, own)) >= 0) {
            size_t b, e;
            chunk_range(j, (size_t)c, &b, &e);
            j->fn(j->arg, b, e);
            ran++;
        }
    }
    if (ran && atomic_fetch_add(&p->finished, ran) + ran == j->n_chunks) {
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
            if (atomic_load_explicit(&p->gen, memory_order_relaxed) != seen ||
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

static void *worker_main(void *varg) {
    mf_worker_arg *wa = varg;
    mf_pool *p = wa->pool;
    size_t home = (size_t)wa->index;
    uint32_t seen = 0;
    mf_job job;
    unsigned jobs = 0, quiet = 0;
    uint64_t wall0 = now_ns(), cpu0 = thread_cpu_ns();
    int slept = 1;
    for (;;) {
        if (!quiet)
            spin_for_job(p, seen);
        /* The job is copied under the lock it was posted under. */
        pthread_mutex_lock(&p->lock);
        while (!atomic_load(&p->stop) && atomic_load(&p->gen) == seen) {
            pthread_cond_wait(&p->wake, &p->lock);
            slept = 1;
        }
        seen = (uint32_t)atomic_load(&p->gen);
        job = p->job;
        pthread_mutex_unlock(&p->lock);
        if (atomic_load(&p->stop))
            break;
        run_chunks(p, &job, home);
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
    p->cpus = mf_cpus_usable();
    long us = mf_env_spin_us(DEFAULT_SPIN_US);
    p->spin_ns = (uint64_t)us * 1000u;
    p->pace = mf_calloc((size_t)p->threads, sizeof *p->pace);
    if (!p->pace) {
        free(p);
        return NULL;
    }
    for (int i = 0; i < p->threads; i++)
        p->pace[i].slept = 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->busy, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->stop, 0);
    atomic_init(&p->gen, 0);
    atomic_init(&p->finished, 0);
    if (p->threads > 1) {
        p->workers = mf_calloc((size_t)p->threads - 1, sizeof *p->workers);
        p->worker_args = mf_calloc((size_t)p->threads - 1, sizeof *p->worker_args);
        p->blocks = mf_calloc((size_t)p->threads, sizeof *p->blocks);
        if (!p->workers || !p->worker_args || !p->blocks) {
            mf_pool_free(p);
            return NULL;
        }
        for (int i = 0; i < p->threads; i++)
            atomic_init(&p->blocks[i].word, 0); /* generation 0, empty */
        for (int i = 0; i < p->threads - 1; i++) {
            p->worker_args[i].pool = p;
            p->worker_args[i].index = i + 1;
            if (pthread_create(&p->workers[i], NULL, worker_main, &p->worker_args[i]) != 0)
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
    free(p->worker_args);
    free(p->blocks);
    free(p->pace);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->busy);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p);
}

int mf_pool_threads(const mf_pool *p) { return p ? p->n_workers + 1 : 1; }

int mf_pool_cpus(const mf_pool *p) { return p ? p->cpus : 1; }

/* ---- Sharing ------------------------------------------------------------ */

mf_share *mf_share_create(mf_pool *p) {
    mf_share *sh = mf_calloc(1, sizeof *sh);
    if (!sh)
        return NULL;
    sh->pool = p;
    sh->n = mf_pool_threads(p);
    sh->slot = mf_calloc((size_t)sh->n, sizeof *sh->slot);
    size_t per_slot = (size_t)sh->n * CHUNKS_PER_THREAD; /* job_cut's most */
    sh->flags = mf_calloc((size_t)sh->n * per_slot, sizeof *sh->flags);
    if (!sh->slot || !sh->flags) {
        free(sh->slot);
        free((void *)sh->flags);
        free(sh);
        return NULL;
    }
    for (int i = 0; i < sh->n; i++) {
        sh->slot[i].taken = sh->flags + (size_t)i * per_slot;
        atomic_init(&sh->slot[i].done, 0);
    }
    pthread_mutex_init(&sh->lock, NULL);
    pthread_mutex_init(&sh->wait_lock, NULL);
    pthread_cond_init(&sh->wake, NULL);
    atomic_init(&sh->n_published, 0);
    atomic_init(&sh->events, 0);
    atomic_init(&sh->sleepers, 0);
    atomic_init(&sh->quiet, 0);
    /* Spinning pays only while every thread can have a CPU of its own. */
    sh->spin_ns = p && p->threads <= p->cpus ? p->spin_ns : 0;
    return sh;
}

void mf_share_free(mf_share *sh) {
    if (!sh)
        return;
    pthread_mutex_destroy(&sh->lock);
    pthread_mutex_destroy(&sh->wait_lock);
    pthread_cond_destroy(&sh->wake);
    free(sh->slot);
    free((void *)sh->flags);
    free(sh);
}

void mf_share_begin(mf_share *sh, int index) {
    if (sh->pool && index >= 0 && index < sh->pool->threads)
        sh->pool->pace[index].slept = 1;
}

unsigned mf_share_events(mf_share *sh) { return atomic_load(&sh->events); }

/* The event moves first, then the sleepers are looked at: a waiter counts
 * itself asleep before it looks at the event for the last time (both
 * sequentially consistent), so one of the two sees the other. */
void mf_share_notify(mf_share *sh) {
    atomic_fetch_add(&sh->events, 1);
    if (atomic_load(&sh->sleepers) > 0) {
        pthread_mutex_lock(&sh->wait_lock);
        pthread_cond_broadcast(&sh->wake);
        pthread_mutex_unlock(&sh->wait_lock);
    }
}

static int share_spins(struct pace *pc) {
    if (pc->quiet) {
        pc->quiet--;
        return 0;
    }
    if (++pc->waits % SAMPLE_EVERY == 0 || pc->slept) {
        uint64_t wall = now_ns(), cpu = thread_cpu_ns();
        if (!pc->slept && wall - pc->wall0 < SAMPLE_MIN_NS)
            return 1; /* a window too short to tell: keep it open */
        if (!pc->slept && (cpu - pc->cpu0) * 8 < (wall - pc->wall0) * 7)
            pc->quiet = QUIET_JOBS;
        pc->slept = 0;
        pc->wall0 = wall;
        pc->cpu0 = cpu;
    }
    return !pc->quiet;
}

void mf_share_quiet(mf_share *sh, int on) { atomic_store(&sh->quiet, on); }

void mf_share_wait(mf_share *sh, int index, unsigned seen) {
    struct pace *pc = sh->pool && index >= 0 && index < sh->pool->threads
                          ? &sh->pool->pace[index] : NULL;
    if (pc && sh->spin_ns && !atomic_load_explicit(&sh->quiet, memory_order_relaxed) &&
        share_spins(pc)) {
        uint64_t until = now_ns() + sh->spin_ns;
        for (;;) {
            for (int i = 0; i < 64; i++) {
                if (atomic_load_explicit(&sh->events, memory_order_acquire) != seen)
                    return;
                cpu_relax();
            }
            if (now_ns() >= until || atomic_load_explicit(&sh->quiet, memory_order_relaxed))
                break;
        }
    }
    pthread_mutex_lock(&sh->wait_lock);
    atomic_fetch_add(&sh->sleepers, 1);
    while (atomic_load(&sh->events) == seen) {
        pthread_cond_wait(&sh->wake, &sh->wait_lock);
        if (pc)
            pc->slept = 1;
    }
    atomic_fetch_sub(&sh->sleepers, 1);
    pthread_mutex_unlock(&sh->wait_lock);
}

/* Runs chunk c of j; returns the time it took. */
static uint64_t run_one(const mf_job *j, size_t c) {
    size_t b, e;
    chunk_range(j, c, &b, &e);
    uint64_t t = now_ns();
    j->fn(j->arg, b, e);
    return now_ns() - t;
}

int mf_share_help(mf_share *sh, int index) {
    if (atomic_load(&sh->n_published) == 0)
        return 0;
    int me = index >= 0 && index < sh->n ? index : 0;
    pthread_mutex_lock(&sh->lock);
    for (int k = 1; k <= sh->n; k++) {
        share_slot *sl = &sh->slot[(me + k) % sh->n];
        if (!sl->published)
            continue;
        mf_job job = sl->job;
        size_t home = block_lo(&job, (size_t)me % job.blocks); /* its own block first */
        for (size_t t = 0; t < job.n_chunks; t++) {
            size_t c = (home + t) % job.n_chunks;
            unsigned char free_flag = 0;
            if (!atomic_compare_exchange_strong(&sl->taken[c], &free_flag, 1))
                continue;
            pthread_mutex_unlock(&sh->lock);
            atomic_fetch_add(&sl->chunk_ns, run_one(&job, c));
            /* The owner may return once this count is full: sl is not
             * touched after it. */
            if (atomic_fetch_add(&sl->done, 1) + 1 == job.n_chunks)
                mf_share_notify(sh);
            return 1;
        }
    }
    pthread_mutex_unlock(&sh->lock);
    return 0;
}

/* parallel_for on lane l, a thread of a share: publish, run what is left,
 * wait for the chunks helpers took. The job is cut as the pool cuts it
 * (job_split over the pool's threads): the same ranges either way. */
static void share_for(mf_lane *l, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    mf_share *sh = l->share;
    assert(l->index >= 0 && l->index < sh->n); /* one thread per index of the share */
    share_slot *sl = &sh->slot[l->index];
    mf_job job;
    l->published++;
    job.fn = fn;
    job.arg = arg;
    job_split(&job, n, grain, (size_t)sh->n);
    job.gen = 0;
    pthread_mutex_lock(&sh->lock);
    sl->job = job;
    for (size_t c = 0; c < job.n_chunks; c++)
        atomic_store(&sl->taken[c], 0);
    atomic_store(&sl->done, 0);
    atomic_store(&sl->chunk_ns, 0);
    sl->published = 1;
    atomic_fetch_add(&sh->n_published, 1);
    pthread_mutex_unlock(&sh->lock);
    mf_share_notify(sh);

    size_t ran = 0;
    uint64_t t0 = now_ns(), own = 0;
    size_t home = block_lo(&job, (size_t)l->index % job.blocks);
    for (size_t t = 0; t < job.n_chunks; t++) {
        size_t c = (home + t) % job.n_chunks;
        unsigned char free_flag = 0;
        if (!atomic_compare_exchange_strong(&sl->taken[c], &free_flag, 1))
            continue;
        own += run_one(&job, c);
        ran++;
    }
    pthread_mutex_lock(&sh->lock);
    sl->published = 0;
    atomic_fetch_sub(&sh->n_published, 1);
    pthread_mutex_unlock(&sh->lock);
    if (atomic_fetch_add(&sl->done, ran) + ran != job.n_chunks) {
        for (;;) {
            unsigned seen = mf_share_events(sh);
            if (atomic_load(&sl->done) == job.n_chunks)
                break;
            mf_share_wait(sh, l->index, seen);
        }
    }
    /* every helper added its time before counting its chunk done */
    l->region_ns += now_ns() - t0;
    l->work_ns += own + atomic_load(&sl->chunk_ns);
}

/* Runs fn over [0, n) cut by job_split (into 2 or more chunks) on p,
 * whose busy lock the caller holds. */
static void pool_job(mf_pool *p, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    mf_job job;
    job.fn = fn;
    job.arg = arg;
    job_split(&job, n, grain, (size_t)p->n_workers + 1);
    pthread_mutex_lock(&p->lock);
    job.gen = (uint32_t)atomic_load(&p->gen) + 1;
    p->job = job;
    atomic_store(&p->finished, 0);
    for (size_t k = 0; k < job.blocks; k++)
        atomic_store(&p->blocks[k].word,
                     block_word(job.gen, block_lo(&job, k), block_lo(&job, k + 1)));
    atomic_store(&p->gen, job.gen);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_chunks(p, &job, 0);

    /* Chunks a worker started: spin a while for them, then sleep. */
    size_t total = job.n_chunks;
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
}

void mf_pool_parallel_for(mf_pool *p, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    if (n == 0)
        return;
    if (grain == 0)
        grain = 1;
    /* A call from inside a chunk of this pool's job finds busy held (by
     * the job's caller, on this thread or another) and runs serially. */
    if (!p || p->n_workers == 0 || job_cut(n, grain, (size_t)p->n_workers + 1) < 2 ||
        pthread_mutex_trylock(&p->busy) != 0) {
        fn(arg, 0, n);
        return;
    }
    pool_job(p, n, grain, fn, arg);
    pthread_mutex_unlock(&p->busy);
}

size_t mf_pool_chunks(const mf_pool *p, size_t n, size_t grain) {
    if (n == 0)
        return 0;
    if (!p || p->n_workers == 0)
        return 1;
    return job_cut(n, grain ? grain : 1, (size_t)p->n_workers + 1);
}

/* ---- Lanes ---------------------------------------------------------------- */

void mf_lane_init(mf_lane *l, mf_pool *p) {
    l->pool = p;
    l->share = NULL;
    l->index = 0;
    l->claim = NULL;
    l->claim_ctx = NULL;
    atomic_init(&l->busy, 0);
    l->held = NULL;
    l->published = 0;
    l->region_ns = l->work_ns = 0;
}

void mf_lane_parallel_for(mf_lane *l, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    if (n == 0)
        return;
    if (grain == 0)
        grain = 1;
    /* from inside a chunk of this lane's own call (any thread): serially */
    if (!l || atomic_load_explicit(&l->busy, memory_order_relaxed)) {
        fn(arg, 0, n);
        return;
    }
    mf_pool *p = l->pool;
    size_t chunks = p ? job_cut(n, grain, (size_t)p->n_workers + 1) : 1;
    if (l->held && l->held != p) /* claimed on a pool the lane left */
        mf_lane_release(l);
    atomic_store_explicit(&l->busy, 1, memory_order_relaxed);
    if (l->held) { /* the pool a claim took: this call uses it and gives it back */
        assert(!l->share); /* lanes of a share claim through their scheduler */
        if (p->n_workers > 0 && chunks >= 2)
            pool_job(p, n, grain, fn, arg);
        else
            fn(arg, 0, n);
        mf_lane_release(l);
    } else if (p && p->n_workers > 0 && chunks >= 2 && l->share && l->share->pool == p) {
        share_for(l, n, grain, fn, arg);
    } else {
        mf_pool_parallel_for(p, n, grain, fn, arg);
    }
    atomic_store_explicit(&l->busy, 0, memory_order_relaxed);
}

int mf_lane_claim(mf_lane *l, int want) {
    if (want <= 1 || !l || atomic_load_explicit(&l->busy, memory_order_relaxed))
        return 1;
    if (l->claim) {
        int n = l->claim(l->claim_ctx, want);
        return n < 1 ? 1 : n > want ? want : n;
    }
    mf_pool *p = l->pool;
    if (l->held && l->held != p)
        mf_lane_release(l);
    int n = mf_pool_threads(p);
    if (n > 1 && !l->held) {
        /* The threads are the pool's: another run using it (of this
         * session, or of another one on a shared pool) leaves this node
         * one thread, and this node holds them until the lane's next
         * parallel_for or claim or the run's end (mf_lane_release). */
        if (pthread_mutex_trylock(&p->busy) != 0)
            return 1;
        l->held = p;
    }
    return n < want ? n : want;
}

void mf_lane_release(mf_lane *l) {
    if (l && l->held) {
        pthread_mutex_unlock(&l->held->busy);
        l->held = NULL;
    }
}

int mf_lane_threads(const mf_lane *l) { return l ? mf_pool_threads(l->pool) : 1; }
