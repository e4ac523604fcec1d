/*
 * NaN and the sort-like ops, against expected values (docs/operators.md,
 * "NaN and ordering"): TopK and Unique order numbers with NaN above +inf,
 * as numpy and PyTorch sort; TopK's largest returns NaNs first and its
 * smallest returns them last, ties keep the lower index first; Unique
 * keeps one NaN; ArgMax/ArgMin pick a NaN (the first, or the last with
 * select_last_index) as numpy's argmax/argmin do; ReduceMax/ReduceMin,
 * Max/Min and MaxPool/GlobalMaxPool propagate NaN (the pools not on
 * oneDNN, whose pools skip it). Also 64-bit integers beyond 2^53 compared
 * exactly, OneHot's depth messages, and ScatterElements / ScatterND on
 * empty data and Unique, GatherND and Compress of empty slices (which
 * computed with a NULL pointer: UBSan in the sanitizer build; found by
 * fuzz_graph), DepthToSpace's blocksize^2 overflowing and EyeLike's dtype
 * attribute shifted unchecked.
 *
 * Every case runs on each provider list given as an argument (CMake passes
 * cpu, and onednn,cpu and opencl,cpu when those providers are built; none:
 * cpu alone). A list whose first provider cannot run a Relu here (an
 * OpenCL platform without a device) is skipped with a note.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minfer/builder.h"
#include "minfer/minfer.h"

static const char *default_lists[] = {"cpu"};
static const char **lists = default_lists;
static size_t n_lists = 1;

#define IN(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

/* A session for b on a provider list; NULL (with a note) when the list's
 * first provider is not available here, which a probe graph tells apart
 * from a failure of b. */
static minfer_session *session_on(const minfer_graph_builder *b, const char *list) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, list), MINFER_OK);
    assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_ERROR), MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(b, opt, &s);
    if (st != MINFER_OK) {
        /* Is the provider there at all? A one-Relu graph on it alone. */
        minfer_graph_builder *p = NULL;
        minfer_session *ps = NULL;
        int64_t d[1] = {2};
        char first[32];
        snprintf(first, sizeof first, "%.*s", (int)strcspn(list, ","), list);
        assert_int_equal(minfer_builder_create(13, &p), MINFER_OK);
        minfer_builder_add_input(p, "x", MINFER_DTYPE_FLOAT, d, 1, NULL);
        minfer_builder_add_node(p, "Relu", NULL, "r", IN("x"), IN("y"), NULL);
        minfer_builder_add_output(p, "y");
        minfer_options_set_providers_str(opt, first);
        int there = minfer_session_create_from_builder(p, opt, &ps) == MINFER_OK;
        minfer_session_free(ps);
        minfer_builder_free(p);
        if (there)
            fail_msg("%s: session failed: %s", list, minfer_last_error());
        print_message("[  SKIP    ] %s: provider not available here\n", list);
    }
    minfer_options_free(opt);
    return s;
}

static minfer_tensor *f32(const int64_t *dims, size_t rank, const float *v) {
    minfer_tensor *t = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, rank, &t), MINFER_OK);
    if (v && minfer_tensor_nbytes(t)) /* v: NULL for an empty tensor */
        memcpy(minfer_tensor_data(t), v, minfer_tensor_nbytes(t));
    return t;
}

static minfer_tensor *i64(const int64_t *dims, size_t rank, const int64_t *v) {
    minfer_tensor *t = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_INT64, dims, rank, &t), MINFER_OK);
    if (v && minfer_tensor_nbytes(t)) /* v: NULL for an empty tensor */
        memcpy(minfer_tensor_data(t), v, minfer_tensor_nbytes(t));
    return t;
}

/* Float elements equal, NaN equal to NaN, -0 told from +0. */
static void expect_f32(const minfer_tensor *t, const float *want, int64_t n, const char *what) {
    assert_int_equal(minfer_tensor_dtype(t), MINFER_DTYPE_FLOAT);
    assert_int_equal(minfer_tensor_numel(t), n);
    const float *g = minfer_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        if (isnan(want[i]) ? !isnan(g[i])
                           : g[i] != want[i] || signbit(g[i]) != signbit(want[i]))
            fail_msg("%s: element %lld is %g, expected %g", what, (long long)i, (double)g[i],
                     (double)want[i]);
}

static void expect_i64(const minfer_tensor *t, const int64_t *want, int64_t n, const char *what) {
    assert_int_equal(minfer_tensor_dtype(t), MINFER_DTYPE_INT64);
    assert_int_equal(minfer_tensor_numel(t), n);
    const int64_t *g = minfer_tensor_data(t);
    for (int64_t i = 0; i < n; i++)
        if (g[i] != want[i])
            fail_msg("%s: element %lld is %lld, expected %lld", what, (long long)i,
                     (long long)g[i], (long long)want[i]);
}

/* Runs b (input "x" = x, outputs out[0..n_out)) on every list; check(list,
 * outputs) checks the results. */
typedef void (*checker)(const char *list, minfer_tensor **out);

static void run_lists(minfer_graph_builder *b, minfer_tensor *x, size_t n_out, checker check) {
    for (size_t l = 0; l < n_lists; l++) {
        minfer_session *s = session_on(b, lists[l]);
        if (!s)
            continue;
        minfer_tensor *out[4] = {0};
        const char *names[1] = {"x"};
        const minfer_tensor *ins[1] = {x};
        if (minfer_session_run(s, names, ins, 1, NULL, out, n_out) != MINFER_OK)
            fail_msg("%s: run failed: %s", lists[l], minfer_last_error());
        check(lists[l], out);
        for (size_t i = 0; i < n_out; i++)
            minfer_tensor_free(out[i]);
        minfer_session_free(s);
    }
    minfer_tensor_free(x);
    minfer_builder_free(b);
}

/* A graph x -> op(x, extra constant k if kdims) -> outputs y0..; attributes set by the caller. */
static minfer_graph_builder *one_node(const char *op, minfer_dtype dt, const int64_t *dims,
                                      size_t rank, const int64_t *k, size_t n_out, size_t *node) {
    static const char *const outs[4] = {"y0", "y1", "y2", "y3"};
    minfer_graph_builder *b = NULL;
    assert_int_equal(minfer_builder_create(13, &b), MINFER_OK);
    assert_int_equal(minfer_builder_add_input(b, "x", dt, dims, rank, NULL), MINFER_OK);
    const char *in[2] = {"x", "k"};
    if (k) {
        int64_t one = 1;
        minfer_tensor *kt = i64(&one, 1, k);
        assert_int_equal(minfer_builder_add_initializer(b, "k", kt), MINFER_OK);
        minfer_tensor_free(kt);
    }
    assert_int_equal(minfer_builder_add_node(b, op, NULL, "n", in, k ? 2 : 1, outs, n_out, node),
                     MINFER_OK);
    for (size_t i = 0; i < n_out; i++)
        assert_int_equal(minfer_builder_add_output(b, outs[i]), MINFER_OK);
    return b;
}

/* ---- TopK ---------------------------------------------------------------- */

static const float topk_x[7] = {3, NAN, 1, NAN, INFINITY, -INFINITY, 2};

static void check_largest(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN, NAN, INFINITY, 3, 2}, 5, "TopK largest values");
    expect_i64(out[1], (const int64_t[]){1, 3, 4, 0, 6}, 5, "TopK largest indices");
}

static void topk_largest_nan_first(void **state) {
    (void)state;
    int64_t d = 7, k = 5;
    size_t n;
    minfer_graph_builder *b = one_node("TopK", MINFER_DTYPE_FLOAT, &d, 1, &k, 2, &n);
    run_lists(b, f32(&d, 1, topk_x), 2, check_largest);
}

static void check_smallest(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){-INFINITY, 1, 2, 3, INFINITY, NAN, NAN}, 7,
               "TopK smallest values");
    expect_i64(out[1], (const int64_t[]){5, 2, 6, 0, 4, 1, 3}, 7, "TopK smallest indices");
}

static void topk_smallest_nan_last(void **state) {
    (void)state;
    int64_t d = 7, k = 7;
    size_t n;
    minfer_graph_builder *b = one_node("TopK", MINFER_DTYPE_FLOAT, &d, 1, &k, 2, &n);
    assert_int_equal(minfer_builder_set_attr_int(b, n, "largest", 0), MINFER_OK);
    run_lists(b, f32(&d, 1, topk_x), 2, check_smallest);
}

/* Ties (and -0 == +0) keep the lower index first, both directions. */
static void check_ties(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){2, 2, 0, -0.0f, 0}, 5, "TopK tie values");
    expect_i64(out[1], (const int64_t[]){1, 4, 0, 2, 3}, 5, "TopK tie indices");
}

static void topk_ties_lower_index_first(void **state) {
    (void)state;
    int64_t d = 5, k = 5;
    size_t n;
    minfer_graph_builder *b = one_node("TopK", MINFER_DTYPE_FLOAT, &d, 1, &k, 2, &n);
    run_lists(b, f32(&d, 1, (const float[]){0, 2, -0.0f, 0, 2}), 2, check_ties);
}

/* Along axis 0 of a [4, 2]: each column sorted on its own. */
static void check_axis0(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN, NAN, 1, 5}, 4, "TopK axis 0 values");
    expect_i64(out[1], (const int64_t[]){2, 3, 0, 1}, 4, "TopK axis 0 indices");
}

static void topk_axis0_nan(void **state) {
    (void)state;
    int64_t d[2] = {4, 2}, k = 2;
    size_t n;
    minfer_graph_builder *b = one_node("TopK", MINFER_DTYPE_FLOAT, d, 2, &k, 2, &n);
    assert_int_equal(minfer_builder_set_attr_int(b, n, "axis", 0), MINFER_OK);
    run_lists(b, f32(d, 2, (const float[]){1, -1, -2, 5, NAN, 0, 0, NAN}), 2, check_axis0);
}

/* 2^53 + 1 and 2^53 are one double: compared as int64 they differ. */
static void check_int64(const char *list, minfer_tensor **out) {
    (void)list;
    expect_i64(out[0], (const int64_t[]){(1LL << 53) + 1, 1LL << 53}, 2, "TopK int64 values");
    expect_i64(out[1], (const int64_t[]){1, 0}, 2, "TopK int64 indices");
}

static void topk_int64_exact(void **state) {
    (void)state;
    int64_t d = 3, k = 2;
    size_t n;
    minfer_graph_builder *b = one_node("TopK", MINFER_DTYPE_INT64, &d, 1, &k, 2, &n);
    run_lists(b, i64(&d, 1, (const int64_t[]){1LL << 53, (1LL << 53) + 1, -5}), 2, check_int64);
}

/* ---- Unique -------------------------------------------------------------- */

static const float unique_x[6] = {NAN, 0, NAN, 1, NAN, -0.0f};

static void check_unique_sorted(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){0, 1, NAN}, 3, "Unique sorted values");
    expect_i64(out[1], (const int64_t[]){1, 3, 0}, 3, "Unique sorted indices");
    expect_i64(out[2], (const int64_t[]){2, 0, 2, 1, 2, 0}, 6, "Unique sorted inverse");
    expect_i64(out[3], (const int64_t[]){2, 1, 3}, 3, "Unique sorted counts");
}

static void unique_sorted_one_nan(void **state) {
    (void)state;
    int64_t d = 6;
    size_t n;
    minfer_graph_builder *b = one_node("Unique", MINFER_DTYPE_FLOAT, &d, 1, NULL, 4, &n);
    run_lists(b, f32(&d, 1, unique_x), 4, check_unique_sorted);
}

static void check_unique_unsorted(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN, 0, 1}, 3, "Unique unsorted values");
    expect_i64(out[1], (const int64_t[]){0, 1, 3}, 3, "Unique unsorted indices");
    expect_i64(out[2], (const int64_t[]){0, 1, 0, 2, 0, 1}, 6, "Unique unsorted inverse");
    expect_i64(out[3], (const int64_t[]){3, 2, 1}, 3, "Unique unsorted counts");
}

static void unique_unsorted_one_nan(void **state) {
    (void)state;
    int64_t d = 6;
    size_t n;
    minfer_graph_builder *b = one_node("Unique", MINFER_DTYPE_FLOAT, &d, 1, NULL, 4, &n);
    assert_int_equal(minfer_builder_set_attr_int(b, n, "sorted", 0), MINFER_OK);
    run_lists(b, f32(&d, 1, unique_x), 4, check_unique_unsorted);
}

/* Rows of a [4, 2] along axis 0: rows holding NaN in the same places are one. */
static void check_unique_rows(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){0, 1, 1, NAN, NAN, 0}, 6, "Unique rows values");
    expect_i64(out[1], (const int64_t[]){1, 0, 3}, 3, "Unique rows indices");
    expect_i64(out[2], (const int64_t[]){1, 0, 1, 2}, 4, "Unique rows inverse");
    expect_i64(out[3], (const int64_t[]){1, 2, 1}, 3, "Unique rows counts");
}

static void unique_rows_nan(void **state) {
    (void)state;
    int64_t d[2] = {4, 2};
    size_t n;
    minfer_graph_builder *b = one_node("Unique", MINFER_DTYPE_FLOAT, d, 2, NULL, 4, &n);
    assert_int_equal(minfer_builder_set_attr_int(b, n, "axis", 0), MINFER_OK);
    run_lists(b, f32(d, 2, (const float[]){1, NAN, 0, 1, 1, NAN, NAN, 0}), 4, check_unique_rows);
}

static void check_unique_int64(const char *list, minfer_tensor **out) {
    (void)list;
    expect_i64(out[0], (const int64_t[]){INT64_MIN, 1LL << 53, (1LL << 53) + 1, INT64_MAX}, 4,
               "Unique int64 values");
    expect_i64(out[3], (const int64_t[]){1, 2, 1, 1}, 4, "Unique int64 counts");
}

static void unique_int64_exact(void **state) {
    (void)state;
    int64_t d = 5;
    size_t n;
    minfer_graph_builder *b = one_node("Unique", MINFER_DTYPE_INT64, &d, 1, NULL, 4, &n);
    run_lists(b,
              i64(&d, 1,
                  (const int64_t[]){INT64_MAX, 1LL << 53, (1LL << 53) + 1, INT64_MIN, 1LL << 53}),
              4, check_unique_int64);
}

/* Unique along axis 0 of a [3, 0]: three empty slices, one unique. */
static void check_unique_empty_slices(const char *list, minfer_tensor **out) {
    (void)list;
    assert_int_equal(minfer_tensor_rank(out[0]), 2);
    assert_int_equal(minfer_tensor_dims(out[0])[0], 1);
    assert_int_equal(minfer_tensor_dims(out[0])[1], 0);
    expect_i64(out[1], (const int64_t[]){0}, 1, "Unique empty slices indices");
    expect_i64(out[2], (const int64_t[]){0, 0, 0}, 3, "Unique empty slices inverse");
    expect_i64(out[3], (const int64_t[]){3}, 1, "Unique empty slices counts");
}

static void unique_empty_slices(void **state) {
    (void)state;
    int64_t d[2] = {3, 0};
    size_t n;
    minfer_graph_builder *b = one_node("Unique", MINFER_DTYPE_FLOAT, d, 2, NULL, 4, &n);
    assert_int_equal(minfer_builder_set_attr_int(b, n, "axis", 0), MINFER_OK);
    run_lists(b, f32(d, 2, NULL), 4, check_unique_empty_slices);
}

/* ---- ArgMax / ArgMin, ReduceMax / ReduceMin, Max / Min ------------------- */

static const float arg_x[5] = {1, NAN, INFINITY, NAN, -INFINITY};

static void check_arg(const char *list, minfer_tensor **out) {
    (void)list;
    expect_i64(out[0], (const int64_t[]){1}, 1, "ArgMax/ArgMin of NaNs");
}

static void check_arg_last(const char *list, minfer_tensor **out) {
    (void)list;
    expect_i64(out[0], (const int64_t[]){3}, 1, "ArgMax/ArgMin of NaNs, select_last_index");
}

static void argminmax_pick_nan(void **state) {
    (void)state;
    static const char *const ops[2] = {"ArgMax", "ArgMin"};
    for (int o = 0; o < 2; o++)
        for (int last = 0; last < 2; last++) {
            int64_t d = 5;
            size_t n;
            minfer_graph_builder *b = one_node(ops[o], MINFER_DTYPE_FLOAT, &d, 1, NULL, 1, &n);
            assert_int_equal(minfer_builder_set_attr_int(b, n, "select_last_index", last),
                             MINFER_OK);
            run_lists(b, f32(&d, 1, arg_x), 1, last ? check_arg_last : check_arg);
        }
}

/* [2, 5]: a NaN in row 0 only; row 1 without. */
static void check_reduce_max(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN, 9}, 2, "ReduceMax with NaN");
}

static void check_reduce_min(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN, -3}, 2, "ReduceMin with NaN");
}

static const float reduce_x[10] = {1, 2, NAN, 4, 5, 9, -3, 0, 1, 2};

static void reduce_propagates_nan(void **state) {
    (void)state;
    static const char *const ops[2] = {"ReduceMax", "ReduceMin"};
    for (int o = 0; o < 2; o++) {
        int64_t d[2] = {2, 5}, axes[1] = {1};
        size_t n;
        minfer_graph_builder *b = one_node(ops[o], MINFER_DTYPE_FLOAT, d, 2, NULL, 1, &n);
        assert_int_equal(minfer_builder_set_attr_ints(b, n, "axes", axes, 1), MINFER_OK);
        assert_int_equal(minfer_builder_set_attr_int(b, n, "keepdims", 0), MINFER_OK);
        run_lists(b, f32(d, 2, reduce_x), 1, o ? check_reduce_min : check_reduce_max);
    }
}

/* Max(x, c) and Min(x, c) elementwise, NaN on either side. */
static void check_max(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN, NAN, 2, 3}, 4, "Max with NaN");
}

static void check_min(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN, NAN, 1, -1}, 4, "Min with NaN");
}

static void maxmin_propagate_nan(void **state) {
    (void)state;
    static const char *const ops[2] = {"Max", "Min"};
    for (int o = 0; o < 2; o++) {
        int64_t d = 4;
        minfer_graph_builder *b = NULL;
        assert_int_equal(minfer_builder_create(13, &b), MINFER_OK);
        assert_int_equal(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, &d, 1, NULL),
                         MINFER_OK);
        minfer_tensor *c = f32(&d, 1, (const float[]){1, NAN, 2, -1});
        assert_int_equal(minfer_builder_add_initializer(b, "c", c), MINFER_OK);
        minfer_tensor_free(c);
        assert_int_equal(minfer_builder_add_node(b, ops[o], NULL, "n", IN("x", "c"), IN("y"), NULL),
                         MINFER_OK);
        assert_int_equal(minfer_builder_add_output(b, "y"), MINFER_OK);
        run_lists(b, f32(&d, 1, (const float[]){NAN, 0, 1, 3}), 1, o ? check_min : check_max);
    }
}

/* MaxPool (windows of 2) and GlobalMaxPool over [nan, 1, 2, nan]. oneDNN's
 * pools skip NaN (docs/operators.md): not checked on onednn,cpu. */
static void check_maxpool(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN, NAN}, 2, "MaxPool with NaN");
}

static void check_global_maxpool(const char *list, minfer_tensor **out) {
    (void)list;
    expect_f32(out[0], (const float[]){NAN}, 1, "GlobalMaxPool with NaN");
}

static void maxpool_propagates_nan(void **state) {
    (void)state;
    const char **all = lists;
    size_t n_all = n_lists, kept = 0;
    const char *some[8];
    for (size_t l = 0; l < n_all && kept < 8; l++)
        if (strncmp(all[l], "onednn", 6) != 0)
            some[kept++] = all[l];
    lists = some;
    n_lists = kept;
    for (int o = 0; o < 2; o++) {
        int64_t d[4] = {1, 1, 1, 4}, k[2] = {1, 2};
        size_t n;
        minfer_graph_builder *b =
            one_node(o ? "GlobalMaxPool" : "MaxPool", MINFER_DTYPE_FLOAT, d, 4, NULL, 1, &n);
        if (!o) {
            assert_int_equal(minfer_builder_set_attr_ints(b, n, "kernel_shape", k, 2), MINFER_OK);
            assert_int_equal(minfer_builder_set_attr_ints(b, n, "strides", k, 2), MINFER_OK);
        }
        run_lists(b, f32(d, 4, (const float[]){NAN, 1, 2, NAN}), 1,
                  o ? check_global_maxpool : check_maxpool);
    }
    lists = all;
    n_lists = n_all;
}

/* ---- OneHot's depth ------------------------------------------------------ */

/* OneHot(x, depth, [0, 1]) with depth an initializer of the given value:
 * the status of building and running it, and the message. */
static minfer_status onehot_depth(const char *list, float depth, int64_t n_ind, char *msg,
                                  size_t msg_size) {
    minfer_graph_builder *b = NULL;
    assert_int_equal(minfer_builder_create(13, &b), MINFER_OK);
    assert_int_equal(minfer_builder_add_input(b, "x", MINFER_DTYPE_INT64, &n_ind, 1, NULL),
                     MINFER_OK);
    int64_t one = 1, two = 2;
    minfer_tensor *dt = f32(&one, 1, &depth), *vt = f32(&two, 1, (const float[]){0, 1});
    assert_int_equal(minfer_builder_add_initializer(b, "depth", dt), MINFER_OK);
    assert_int_equal(minfer_builder_add_initializer(b, "values", vt), MINFER_OK);
    minfer_tensor_free(dt);
    minfer_tensor_free(vt);
    assert_int_equal(minfer_builder_add_node(b, "OneHot", NULL, "onehot",
                                             IN("x", "depth", "values"), IN("y"), NULL),
                     MINFER_OK);
    assert_int_equal(minfer_builder_add_output(b, "y"), MINFER_OK);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, list), MINFER_OK);
    assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_ERROR), MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(b, opt, &s);
    if (st == MINFER_OK) {
        int64_t *zeros = calloc((size_t)n_ind, sizeof *zeros);
        minfer_tensor *x = i64(&n_ind, 1, zeros), *y = NULL;
        free(zeros);
        const char *names[1] = {"x"};
        const minfer_tensor *ins[1] = {x};
        st = minfer_session_run(s, names, ins, 1, NULL, &y, 1);
        minfer_tensor_free(x);
        minfer_tensor_free(y);
    }
    snprintf(msg, msg_size, "%s", st == MINFER_OK ? "" : minfer_last_error());
    minfer_session_free(s);
    minfer_options_free(opt);
    minfer_builder_free(b);
    return st;
}

static void onehot_depth_messages(void **state) {
    (void)state;
    char msg[512];
    for (size_t l = 0; l < n_lists; l++) {
        minfer_graph_builder *probe = one_node("Relu", MINFER_DTYPE_FLOAT, (const int64_t[]){1}, 1,
                                               NULL, 1, NULL);
        minfer_session *ps = session_on(probe, lists[l]);
        minfer_builder_free(probe);
        if (!ps)
            continue;
        minfer_session_free(ps);
        /* Too small: a bad model, saying so. */
        static const float small[3] = {0.0f, -3.0f, NAN};
        for (int i = 0; i < 3; i++) {
            assert_int_not_equal(onehot_depth(lists[l], small[i], 2, msg, sizeof msg), MINFER_OK);
            if (!strstr(msg, "depth must be at least 1"))
                fail_msg("%s: depth %g: %s", lists[l], (double)small[i], msg);
        }
        /* 2^40 x 2 floats: counted, then above the tensor-size limit. */
        assert_int_equal(onehot_depth(lists[l], 0x1p40f, 2, msg, sizeof msg), MINFER_ERR_LIMIT);
        if (strstr(msg, "positive") || strstr(msg, "at least 1"))
            fail_msg("%s: depth 2^40: %s", lists[l], msg);
        /* 2^62 x 8: the element count itself overflows. */
        assert_int_equal(onehot_depth(lists[l], 0x1p62f, 8, msg, sizeof msg), MINFER_ERR_LIMIT);
        if (!strstr(msg, "too large"))
            fail_msg("%s: depth 2^62: %s", lists[l], msg);
        /* And a good one still works. */
        assert_int_equal(onehot_depth(lists[l], 3.0f, 2, msg, sizeof msg), MINFER_OK);
    }
}

/* ---- Scatter on empty data ----------------------------------------------- */

static void check_empty(const char *list, minfer_tensor **out) {
    (void)list;
    assert_int_equal(minfer_tensor_numel(out[0]), 0);
}

static void scatter_empty_data(void **state) {
    (void)state;
    static const char *const ops[2] = {"ScatterElements", "ScatterND"};
    for (int o = 0; o < 2; o++) {
        int64_t d0 = 0, id[2] = {0, 1};
        minfer_graph_builder *b = NULL;
        assert_int_equal(minfer_builder_create(13, &b), MINFER_OK);
        assert_int_equal(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, &d0, 1, NULL),
                         MINFER_OK);
        minfer_tensor *ind = i64(id, o ? 2 : 1, NULL), *upd = f32(&d0, 1, NULL);
        assert_int_equal(minfer_builder_add_initializer(b, "i", ind), MINFER_OK);
        assert_int_equal(minfer_builder_add_initializer(b, "u", upd), MINFER_OK);
        minfer_tensor_free(ind);
        minfer_tensor_free(upd);
        assert_int_equal(minfer_builder_add_node(b, ops[o], NULL, "n", IN("x", "i", "u"),
                                                 IN("y"), NULL),
                         MINFER_OK);
        assert_int_equal(minfer_builder_add_output(b, "y"), MINFER_OK);
        run_lists(b, f32(&d0, 1, NULL), 1, check_empty);
    }
}

/* GatherND and Compress on data whose slices are empty: empty outputs. */
static void gathernd_compress_empty(void **state) {
    (void)state;
    for (int o = 0; o < 2; o++) {
        int64_t d[2] = {2, 0}, id[2] = {2, 1}, two = 2;
        minfer_graph_builder *b = NULL;
        assert_int_equal(minfer_builder_create(13, &b), MINFER_OK);
        assert_int_equal(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, d, 2, NULL),
                         MINFER_OK);
        minfer_tensor *k = NULL;
        if (o == 0) {
            k = i64(id, 2, (const int64_t[]){0, 1});
        } else {
            assert_int_equal(minfer_tensor_create(MINFER_DTYPE_BOOL, &two, 1, &k), MINFER_OK);
            memset(minfer_tensor_data(k), 1, 2);
        }
        assert_int_equal(minfer_builder_add_initializer(b, "k", k), MINFER_OK);
        minfer_tensor_free(k);
        size_t n;
        assert_int_equal(minfer_builder_add_node(b, o ? "Compress" : "GatherND", NULL, "n",
                                                 IN("x", "k"), IN("y"), &n),
                         MINFER_OK);
        if (o)
            assert_int_equal(minfer_builder_set_attr_int(b, n, "axis", 0), MINFER_OK);
        assert_int_equal(minfer_builder_add_output(b, "y"), MINFER_OK);
        run_lists(b, f32(d, 2, NULL), 1, check_empty);
    }
}

/* DepthToSpace with blocksize 2^32 on a constant (so that the kernel runs
 * when the session folds it): blocksize^2 overflows; a clear error. */
static void depth_to_space_huge_blocksize(void **state) {
    (void)state;
    for (size_t l = 0; l < n_lists; l++) {
        int64_t d[4] = {1, 1, 1, 1};
        minfer_graph_builder *b = NULL;
        assert_int_equal(minfer_builder_create(13, &b), MINFER_OK);
        minfer_tensor *x = f32(d, 4, (const float[]){1});
        assert_int_equal(minfer_builder_add_initializer(b, "x", x), MINFER_OK);
        minfer_tensor_free(x);
        size_t n;
        assert_int_equal(minfer_builder_add_node(b, "DepthToSpace", NULL, "n", IN("x"), IN("y"),
                                                 &n),
                         MINFER_OK);
        assert_int_equal(minfer_builder_set_attr_int(b, n, "blocksize", (int64_t)1 << 32),
                         MINFER_OK);
        assert_int_equal(minfer_builder_add_output(b, "y"), MINFER_OK);
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        assert_int_equal(minfer_options_create(&opt), MINFER_OK);
        assert_int_equal(minfer_options_set_providers_str(opt, lists[l]), MINFER_OK);
        assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_ERROR), MINFER_OK);
        minfer_status st = minfer_session_create_from_builder(b, opt, &s);
        if (st == MINFER_OK) {
            minfer_tensor *y = NULL;
            st = minfer_session_run(s, NULL, NULL, 0, NULL, &y, 1);
            minfer_tensor_free(y);
        }
        assert_int_not_equal(st, MINFER_OK);
        minfer_session_free(s);
        minfer_options_free(opt);
        minfer_builder_free(b);
    }
}

/* EyeLike with a dtype attribute no type has (65536, -1): refused with a
 * message, not a shift by the model's number. */
static void eyelike_bad_dtype(void **state) {
    (void)state;
    static const int64_t dtypes[2] = {65536, -1};
    for (size_t l = 0; l < n_lists; l++)
        for (int i = 0; i < 2; i++) {
            int64_t d[2] = {2, 2};
            size_t n;
            minfer_graph_builder *b = one_node("EyeLike", MINFER_DTYPE_FLOAT, d, 2, NULL, 1, &n);
            assert_int_equal(minfer_builder_set_attr_int(b, n, "dtype", dtypes[i]), MINFER_OK);
            minfer_options *opt = NULL;
            minfer_session *s = NULL;
            assert_int_equal(minfer_options_create(&opt), MINFER_OK);
            assert_int_equal(minfer_options_set_providers_str(opt, lists[l]), MINFER_OK);
            assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_ERROR), MINFER_OK);
            assert_int_not_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_OK);
            minfer_options_free(opt);
            minfer_builder_free(b);
        }
}

int main(int argc, char **argv) {
    if (argc > 1) {
        lists = (const char **)(argv + 1);
        n_lists = (size_t)argc - 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(topk_largest_nan_first),
        cmocka_unit_test(topk_smallest_nan_last),
        cmocka_unit_test(topk_ties_lower_index_first),
        cmocka_unit_test(topk_axis0_nan),
        cmocka_unit_test(topk_int64_exact),
        cmocka_unit_test(unique_sorted_one_nan),
        cmocka_unit_test(unique_unsorted_one_nan),
        cmocka_unit_test(unique_rows_nan),
        cmocka_unit_test(unique_int64_exact),
        cmocka_unit_test(unique_empty_slices),
        cmocka_unit_test(argminmax_pick_nan),
        cmocka_unit_test(reduce_propagates_nan),
        cmocka_unit_test(maxmin_propagate_nan),
        cmocka_unit_test(maxpool_propagates_nan),
        cmocka_unit_test(onehot_depth_messages),
        cmocka_unit_test(scatter_empty_data),
        cmocka_unit_test(gathernd_compress_empty),
        cmocka_unit_test(depth_to_space_huge_blocksize),
        cmocka_unit_test(eyelike_bad_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
