/*
 * The machine's arithmetic peak, measured now (bench --profile prints it
 * beside each op type's GFLOPS): per thread, a loop of independent fused
 * multiply-adds (float: 16 lanes x 2 operations with AVX-512, 8 x 2 with
 * AVX2) and of int8 dot products (VNNI vpdpbusd: 64 multiply-adds, 128
 * operations, per instruction), run on `threads` threads at once for
 * about 20 ms each. It is what this machine gives at the moment,
 * contention included (a loaded machine lowers it), not a data-sheet
 * figure. AMX tiles (bf16, int8) go higher still and are not measured.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "cli.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define PEAK_ITERS 200000L

/* 12 chains of FMAs: enough in flight for two FMA units' latency. */
__attribute__((target("avx512f"))) static double fma512(void) {
    __m512 a[12], m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    for (int k = 0; k < 12; k++)
        a[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < PEAK_ITERS; i++)
        for (int k = 0; k < 12; k++)
            a[k] = _mm512_fmadd_ps(a[k], m, c);
    __m512 s = a[0];
    for (int k = 1; k < 12; k++)
        s = _mm512_add_ps(s, a[k]);
    float out[16];
    _mm512_storeu_ps(out, s);
    return out[0] == 12345.0f ? 1.0 : 0.0; /* keep the loop */
}

__attribute__((target("avx2,fma"))) static double fma256(void) {
    __m256 a[12], m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    for (int k = 0; k < 12; k++)
        a[k] = _mm256_set1_ps((float)k);
    for (long i = 0; i < PEAK_ITERS; i++)
        for (int k = 0; k < 12; k++)
            a[k] = _mm256_fmadd_ps(a[k], m, c);
    __m256 s = a[0];
    for (int k = 1; k < 12; k++)
        s = _mm256_add_ps(s, a[k]);
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] == 12345.0f ? 1.0 : 0.0;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static double vnni512(void) {
    __m512i a[12], u = _mm512_set1_epi8(3), w = _mm512_set1_epi8(-2);
    for (int k = 0; k < 12; k++)
        a[k] = _mm512_set1_epi32(k);
    for (long i = 0; i < PEAK_ITERS; i++)
        for (int k = 0; k < 12; k++)
            a[k] = _mm512_dpbusd_epi32(a[k], u, w);
    __m512i s = a[0];
    for (int k = 1; k < 12; k++)
        s = _mm512_add_epi32(s, a[k]);
    int32_t out[16];
    _mm512_storeu_si512(out, s);
    return out[0] == 12345 ? 1.0 : 0.0;
}

typedef struct peak_job {
    int kind; /* 0 float, 1 int8 */
    double ops, secs, sink;
} peak_job;

static void *peak_thread(void *arg) {
    peak_job *j = arg;
    double t0 = now_s();
    if (j->kind == 0 && __builtin_cpu_supports("avx512f")) {
        j->sink = fma512();
        j->ops = (double)PEAK_ITERS * 12 * 16 * 2;
    } else if (j->kind == 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        j->sink = fma256();
        j->ops = (double)PEAK_ITERS * 12 * 8 * 2;
    } else if (j->kind == 1 && __builtin_cpu_supports("avx512vnni") &&
               __builtin_cpu_supports("avx512bw")) {
        j->sink = vnni512();
        j->ops = (double)PEAK_ITERS * 12 * 64 * 2;
    }
    j->secs = now_s() - t0;
    return NULL;
}

/* Operations per second of `kind` on `threads` threads at once, 0 when the
 * CPU has no such instructions (or the threads did not start). */
static double measure(int kind, int threads) {
    enum { MAX_PEAK_THREADS = 256 };
    pthread_t tid[MAX_PEAK_THREADS];
    peak_job jobs[MAX_PEAK_THREADS];
    int n = threads < 1 ? 1 : threads > MAX_PEAK_THREADS ? MAX_PEAK_THREADS : threads, started = 0;
    for (int i = 0; i < n; i++) {
        jobs[i] = (peak_job){kind, 0, 0, 0};
        if (pthread_create(&tid[i], NULL, peak_thread, &jobs[i]) == 0)
            started++;
        else
            break;
    }
    double total = 0;
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        if (jobs[i].secs > 0)
            total += jobs[i].ops / jobs[i].secs;
    }
    return started == n ? total : 0;
}

void cli_measure_peak(int threads, double *fp32_gflops, double *int8_gops) {
    *fp32_gflops = measure(0, threads) * 1e-9;
    *int8_gops = measure(1, threads) * 1e-9;
}
#else
void cli_measure_peak(int threads, double *fp32_gflops, double *int8_gops) {
    (void)threads;
    *fp32_gflops = 0;
    *int8_gops = 0;
}
#endif
