/*
 * Allocation: the mf_ wrappers every part of the core allocates through,
 * failure injection for the out-of-memory tests, and aligned host buffers.
 * May be included (through util/internal.h) by every file of the core.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"

/* ---- Allocation --------------------------------------------------------- */

/* Failure injection for the out-of-memory tests (tests/test_alloc_fail.c).
 * Always compiled, inert until mf_test_fail_after() arms it: then every
 * allocation through these wrappers (and the protobuf-c allocator and the
 * session's aligned buffers, which call mf_test_alloc_fails) counts down,
 * and the one that reaches zero fails. Atomic, since pool threads may
 * allocate; when disarmed the cost is one relaxed load. */
static _Atomic int inject_on;
static _Atomic long fail_countdown = -1; /* allocations left before the failure; -1 off */
static _Atomic long fail_calls, fail_hits;
static _Atomic int fail_sticky;
static int (*inject_hook)(void *);
static void *inject_arg;

void mf_test_fail_after(long n, int sticky) {
    atomic_store(&inject_on, 0);
    atomic_store(&fail_countdown, -1);
    atomic_store(&fail_calls, 0);
    atomic_store(&fail_hits, 0);
    atomic_store(&fail_sticky, sticky);
    inject_hook = NULL;
    if (n >= 0) {
        atomic_store(&fail_countdown, n);
        atomic_store(&inject_on, 1);
    }
}

void mf_test_set_alloc_hook(int (*hook)(void *arg), void *arg) {
    atomic_store(&inject_on, 0);
    inject_hook = hook;
    inject_arg = arg;
    if (hook)
        atomic_store(&inject_on, 1);
}

long mf_test_alloc_stats(long *failures) {
    if (failures)
        *failures = atomic_load(&fail_hits);
    return atomic_load(&fail_calls);
}

int mf_test_alloc_fails(void) {
    if (!atomic_load_explicit(&inject_on, memory_order_relaxed))
        return 0;
    if (inject_hook)
        return inject_hook(inject_arg);
    atomic_fetch_add(&fail_calls, 1);
    long left = atomic_fetch_sub(&fail_countdown, 1);
    if (left > 0)
        return 0;
    if (left < 0) { /* disarmed meanwhile */
        atomic_store(&fail_countdown, -1);
        return 0;
    }
    atomic_fetch_add(&fail_hits, 1);
    atomic_store(&fail_countdown, atomic_load(&fail_sticky) ? 0 : -1);
    return 1;
}

/* A zero-byte request still returns a unique pointer, so NULL always means
 * out of memory. */
void *mf_malloc(size_t n) { return mf_test_alloc_fails() ? NULL : malloc(n ? n : 1); }

void *mf_calloc(size_t n, size_t size) {
    if (mf_test_alloc_fails())
        return NULL;
    if (n == 0 || size == 0)
        return calloc(1, 1);
    return calloc(n, size);
}

void *mf_realloc(void *p, size_t n) { return mf_test_alloc_fails() ? NULL : realloc(p, n ? n : 1); }

char *mf_strdup(const char *s) {
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = mf_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

void *mf_alloc_host(size_t bytes) {
    void *p = NULL;
    size_t rounded = (bytes + MF_HOST_ALIGN - 1) / MF_HOST_ALIGN * MF_HOST_ALIGN;
    if (rounded == 0)
        rounded = MF_HOST_ALIGN;
    if (mf_test_alloc_fails() || posix_memalign(&p, MF_HOST_ALIGN, rounded) != 0)
        return NULL;
    memset(p, 0, rounded);
    return p;
}

const char *mf_shape_str(const int64_t *dims, int32_t rank, char *buf, size_t size) {
    size_t len = 0;
    if (!buf || size == 0)
        return "";
    buf[0] = '\0';
    if (rank < 0 || (rank > 0 && !dims)) {
        snprintf(buf, size, "[?]");
        return buf;
    }
#define PUT(...)                                                                                 \
    do {                                                                                         \
        if (len < size) {                                                                        \
            int k_ = snprintf(buf + len, size - len, __VA_ARGS__);                               \
            len += k_ > 0 ? (size_t)k_ : 0;                                                      \
        }                                                                                        \
    } while (0)
    PUT("[");
    for (int32_t i = 0; i < rank; i++) {
        if (i)
            PUT(",");
        if (dims[i] < 0)
            PUT("?");
        else
            PUT("%lld", (long long)dims[i]);
    }
    PUT("]");
#undef PUT
    return buf;
}
