/*
 * The graph cases shared by the provider-against-cpu tests (test_onednn.c,
 * test_opencl.c): a builder graph with random inputs and constants, built
 * node by node. A test file defines TC_SEED (the random seed) and MAX_IN
 * before including it.
 */
#ifndef MINFER_TESTS_PROVIDER_CASE_H
#define MINFER_TESTS_PROVIDER_CASE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "minfer/builder.h"
#include "minfer/minfer.h"

typedef struct tcase {
    minfer_graph_builder *b;
    size_t n_in;
    char names[MAX_IN][16];
    minfer_tensor *inputs[MAX_IN];
    uint32_t seed;
    int n_nodes;
} tcase;

static inline float rnd(tcase *t) {
    t->seed = t->seed * 1664525u + 1013904223u;
    return (float)((t->seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static inline minfer_tensor *random_tensor(tcase *t, const int64_t *dims, size_t rank) {
    minfer_tensor *x = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, rank, &x), MINFER_OK);
    float *d = minfer_tensor_data(x);
    for (int64_t i = 0; i < minfer_tensor_numel(x); i++)
        d[i] = rnd(t);
    return x;
}

static inline void tc_init(tcase *t, int64_t opset) {
    memset(t, 0, sizeof *t);
    t->seed = TC_SEED;
    assert_int_equal(minfer_builder_create(opset, &t->b), MINFER_OK);
    assert_int_equal(minfer_builder_add_opset(t->b, "minfer", 1), MINFER_OK);
}

/* A graph input with random data. */
static inline void tc_input(tcase *t, const char *name, const int64_t *dims, size_t rank) {
    assert_true(t->n_in < MAX_IN);
    assert_int_equal(minfer_builder_add_input(t->b, name, MINFER_DTYPE_FLOAT, dims, rank, NULL),
                     MINFER_OK);
    snprintf(t->names[t->n_in], sizeof t->names[0], "%s", name);
    t->inputs[t->n_in++] = random_tensor(t, dims, rank);
}

/* An int64 graph input holding values. */
static inline void tc_input_i64(tcase *t, const char *name, const int64_t *dims, size_t rank,
                                const int64_t *values) {
    assert_true(t->n_in < MAX_IN);
    assert_int_equal(minfer_builder_add_input(t->b, name, MINFER_DTYPE_INT64, dims, rank, NULL),
                     MINFER_OK);
    snprintf(t->names[t->n_in], sizeof t->names[0], "%s", name);
    minfer_tensor *x = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_INT64, dims, rank, &x), MINFER_OK);
    memcpy(minfer_tensor_data(x), values, minfer_tensor_nbytes(x));
    t->inputs[t->n_in++] = x;
}

/* A constant with random data (or the given values). */
static inline void tc_const(tcase *t, const char *name, const int64_t *dims, size_t rank,
                            const float *values) {
    minfer_tensor *x = random_tensor(t, dims, rank);
    if (values)
        memcpy(minfer_tensor_data(x), values, minfer_tensor_nbytes(x));
    assert_int_equal(minfer_builder_add_initializer(t->b, name, x), MINFER_OK);
    minfer_tensor_free(x);
}

/* An int64 constant holding values. */
static inline void tc_const_i64(tcase *t, const char *name, const int64_t *dims, size_t rank,
                                const int64_t *values) {
    minfer_tensor *x = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_INT64, dims, rank, &x), MINFER_OK);
    memcpy(minfer_tensor_data(x), values, minfer_tensor_nbytes(x));
    assert_int_equal(minfer_builder_add_initializer(t->b, name, x), MINFER_OK);
    minfer_tensor_free(x);
}

/* A node of the default (or "minfer") domain from inputs to output out. */
static inline size_t tc_node(tcase *t, const char *op, const char *domain,
                             const char *const *in, size_t n_in, const char *out) {
    size_t idx;
    char name[32];
    snprintf(name, sizeof name, "n%d", t->n_nodes++);
    assert_int_equal(minfer_builder_add_node(t->b, op, domain, name, in, n_in, &out, 1, &idx),
                     MINFER_OK);
    return idx;
}

#endif
