/*
 * Helpers shared by the cmocka tests. They use only the public API, as a
 * user of libminfer.so would.
 */
#ifndef MINFER_TESTS_UTIL_H
#define MINFER_TESTS_UTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "minfer/minfer.h"

/* Fails the test unless the last error contains needle. */
#define assert_error_mentions(needle) check_error_mentions((needle), __FILE__, __LINE__)

static inline void check_error_mentions(const char *needle, const char *file, int line) {
    const char *err = minfer_last_error();
    if (!err || !strstr(err, needle))
        fail_msg("%s:%d: last error \"%s\" does not mention \"%s\"", file, line,
                 err ? err : "(null)", needle);
}

/* Fails with the last error when st is not MINFER_OK. */
#define assert_ok(expr) check_ok((expr), #expr, __FILE__, __LINE__)

static inline void check_ok(minfer_status st, const char *what, const char *file, int line) {
    if (st != MINFER_OK)
        fail_msg("%s:%d: %s -> %s: %s", file, line, what, minfer_status_str(st),
                 minfer_last_error());
}

/* Compares a float tensor with an expected shape and values (tolerance 1e-5). */
#define assert_tensor_f32(t, dims, rank, values) \
    check_tensor_f32((t), (dims), (rank), (values), __FILE__, __LINE__)

static inline void check_tensor_f32(const minfer_tensor *t, const int64_t *dims, size_t rank,
                                    const float *values, const char *file, int line) {
    if (!t)
        fail_msg("%s:%d: tensor is NULL", file, line);
    if (minfer_tensor_dtype(t) != MINFER_DTYPE_FLOAT)
        fail_msg("%s:%d: dtype %s, want float", file, line,
                 minfer_dtype_name(minfer_tensor_dtype(t)));
    if (minfer_tensor_rank(t) != rank)
        fail_msg("%s:%d: rank %zu, want %zu", file, line, minfer_tensor_rank(t), rank);
    int64_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (minfer_tensor_dims(t)[i] != dims[i])
            fail_msg("%s:%d: dim %zu is %lld, want %lld", file, line, i,
                     (long long)minfer_tensor_dims(t)[i], (long long)dims[i]);
        n *= dims[i];
    }
    const float *got = minfer_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        if (!(fabsf(got[i] - values[i]) <= 1e-5f + 1e-5f * fabsf(values[i])))
            fail_msg("%s:%d: element %lld is %g, want %g", file, line, (long long)i,
                     (double)got[i], (double)values[i]);
}

#endif
