/*
 * Build/run separation: after the first run for a set of input shapes, a run
 * with caller-supplied outputs makes no heap allocation. This executable
 * interposes malloc and friends (glibc's __libc_* entry points underneath)
 * and counts calls from every library in the process, the providers
 * included. Sanitizer builds replace the allocator themselves, so there the
 * test is skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "test_util.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifndef SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

/* The build hides symbols by default; these must be seen by every library. */
#define INTERPOSE __attribute__((visibility("default")))

static atomic_long n_allocs;
static atomic_int counting;

static void count(void) {
    if (atomic_load(&counting))
        atomic_fetch_add(&n_allocs, 1);
}

INTERPOSE void *malloc(size_t n) {
    count();
    return __libc_malloc(n);
}
INTERPOSE void *calloc(size_t n, size_t m) {
    count();
    return __libc_calloc(n, m);
}
INTERPOSE void *realloc(void *p, size_t n) {
    count();
    return __libc_realloc(p, n);
}
INTERPOSE void *aligned_alloc(size_t a, size_t n) {
    count();
    return __libc_memalign(a, n);
}
INTERPOSE void *memalign(size_t a, size_t n) {
    count();
    return __libc_memalign(a, n);
}
INTERPOSE int posix_memalign(void **out, size_t a, size_t n) {
    count();
    *out = __libc_memalign(a, n);
    return *out ? 0 : ENOMEM;
}
#endif

static const char *models_dir = "../shared/models";

/* Runs `model` at batch sizes 1 and 2 once each (building both plans), then
 * alternates them and expects no allocation at all. */
static void check_model(const char *model, int64_t h, int64_t w, int is_tokens) {
#ifdef SANITIZED
    (void)model, (void)h, (void)w, (void)is_tokens;
    skip();
#else
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/model.onnx", models_dir, model);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_session_create(path, opt, &s));
    minfer_value_info in_info, out_info;
    assert_ok(minfer_session_input_info(s, 0, &in_info));
    assert_ok(minfer_session_output_info(s, 0, &out_info));
    minfer_tensor *in[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
    for (int b = 0; b < 2; b++) {
        int64_t dims[4] = {b + 1, 3, h, w};
        if (is_tokens) {
            dims[1] = h;
            assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, dims, 2, &in[b]));
        } else
            assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 4, &in[b]));
        const char *names[] = {in_info.name};
        /* First run: the session allocates the output and builds the plan. */
        assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)&in[b], 1, NULL,
                                     &out[b], 1));
    }
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, 1);
    for (int r = 0; r < 6; r++) {
        const char *names[] = {in_info.name};
        minfer_status st = minfer_session_run(s, names, (const minfer_tensor *const *)&in[r % 2],
                                              1, NULL, &out[r % 2], 1);
        if (st != MINFER_OK) {
            atomic_store(&counting, 0);
            fail_msg("run %d: %s", r, minfer_last_error());
        }
    }
    atomic_store(&counting, 0);
    long n = atomic_load(&n_allocs);
    if (n != 0)
        fail_msg("%s: %ld heap allocations in 6 runs after the first", model, n);
    for (int b = 0; b < 2; b++) {
        minfer_tensor_free(in[b]);
        minfer_tensor_free(out[b]);
    }
    minfer_session_free(s);
    minfer_options_free(opt);
#endif
}

static void test_squeezenet(void **state) {
    (void)state;
    check_model("squeezenet1_1", 224, 224, 0);
}

static void test_mobilenet(void **state) {
    (void)state;
    check_model("mobilenet_v2", 224, 224, 0);
}

static void test_tiny_encoder(void **state) {
    (void)state;
    check_model("tiny_encoder", 16, 0, 1);
}

/* The counter itself works: a session-allocated output is an allocation. */
static void test_counter_counts(void **state) {
    (void)state;
#ifdef SANITIZED
    skip();
#else
    atomic_store(&n_allocs, 0);
    atomic_store(&counting, 1);
    minfer_tensor *t = NULL;
    int64_t d = 4;
    minfer_status st = minfer_tensor_create(MINFER_DTYPE_FLOAT, &d, 1, &t);
    atomic_store(&counting, 0);
    assert_ok(st);
    assert_true(atomic_load(&n_allocs) > 0);
    minfer_tensor_free(t);
#endif
}

int main(int argc, char **argv) {
    if (argc > 1)
        models_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counter_counts),
        cmocka_unit_test(test_squeezenet),
        cmocka_unit_test(test_mobilenet),
        cmocka_unit_test(test_tiny_encoder),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
