/*
 * Concat on the oneDNN provider run as copies (providers/onednn/concat.c,
 * issue 18) against the CPU provider (the oracle): every graph output of
 * each case must agree exactly (a Concat moves bytes; the convolutions
 * around it within |a - b| <= 1e-4 + 1e-3 |b|) at 1, 2 and 3 threads and
 * with split=on, and the provider's log must show the Concats that this
 * build runs as copies (channels-last ones need its own memory domain).
 *
 * Cases: a DenseNet-like block (Conv outputs kept channels-last, chained
 * Concats re-reading earlier inputs, channel counts off the 8- and
 * 16-channel blocks, a Concat input and Concat outputs that are graph
 * outputs); plain graph inputs along every axis, at batch 1 and 2, of
 * rank 1 to 5; Concats large enough to be cut over the pool, plain and
 * channels-last; inputs of mixed layouts (not copies: oneDNN's concat).
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

#define MAX_IN 8
#define MAX_OUT 4

#define TC_SEED 4242u
#include "provider_case.h"

#define INTS(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define NAMES(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

/* Nodes the oneDNN provider runs as copies (its verbose log). */
static int copy_nodes;

static void count_copies(void *user, minfer_log_level level, const char *message) {
    (void)user;
    (void)level;
    if (strstr(message, "onednn: node '") && strstr(message, "' runs as copies"))
        copy_nodes++;
}

/* Runs the case's graph (outputs named in outs) on provider with threads
 * threads (split: the oneDNN option split=on) into got[]; 0 when the
 * session could not be created. */
static int run_case(tcase *t, const char *provider, int threads, int split,
                    const char *const *outs, size_t n_out, minfer_tensor **got) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    const char *names[MAX_IN];
    const minfer_tensor *ins[MAX_IN];
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers(opt, &provider, 1), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, threads), MINFER_OK);
    assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_VERBOSE), MINFER_OK);
    assert_int_equal(minfer_options_set_log_callback(opt, count_copies, NULL), MINFER_OK);
    if (split)
        assert_int_equal(minfer_options_set_provider_options(opt, "onednn", "split=on"),
                         MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK) {
        print_message("  %s: session not created: %s\n", provider, minfer_last_error());
        return 0;
    }
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        if (strcmp(p.provider, provider) != 0)
            fail_msg("node %s (%s) placed on %s, not %s", p.node_name, p.op_type, p.provider,
                     provider);
    }
    for (size_t i = 0; i < t->n_in; i++) {
        names[i] = t->names[i];
        ins[i] = t->inputs[i];
    }
    for (size_t o = 0; o < n_out; o++)
        got[o] = NULL;
    st = minfer_session_run(s, names, ins, t->n_in, outs, got, n_out);
    if (st != MINFER_OK)
        fail_msg("%s: run failed: %s", provider, minfer_last_error());
    minfer_session_free(s);
    return 1;
}

static void compare(const minfer_tensor *got, const minfer_tensor *want, const char *what,
                    const char *name) {
    assert_int_equal(minfer_tensor_rank(got), minfer_tensor_rank(want));
    for (size_t d = 0; d < minfer_tensor_rank(got); d++)
        assert_int_equal(minfer_tensor_dims(got)[d], minfer_tensor_dims(want)[d]);
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (!(fabsf(g[i] - w[i]) <= 1e-4f + 1e-3f * fabsf(w[i])))
            fail_msg("%s: output '%s' element %lld: %g, cpu %g", what, name, (long long)i,
                     (double)g[i], (double)w[i]);
}

/* Adds outs as graph outputs, runs the graph on cpu and on onednn (1, 2
 * and 3 threads, and 3 with split=on), compares every output, and checks
 * that each onednn session ran `copies` Concats as copies. Built without
 * the provider's own memory domain every oneDNN output is plain, so more
 * of them are: the count is then not checked. */
static void check(tcase *t, const char *const *outs, size_t n_out, int copies) {
    minfer_tensor *want[MAX_OUT], *got[MAX_OUT];
    char what[64];
    assert_true(n_out <= MAX_OUT);
    for (size_t o = 0; o < n_out; o++)
        assert_int_equal(minfer_builder_add_output(t->b, outs[o]), MINFER_OK);
    if (!run_case(t, "cpu", 1, 0, outs, n_out, want))
        fail_msg("the CPU oracle cannot run this graph: %s", minfer_last_error());
#ifndef ONEDNN_OWN_DOMAIN
    copies = -1;
#endif
    static const int threads[4] = {1, 2, 3, 3};
    for (int k = 0; k < 4; k++) {
        int split = k == 3;
        copy_nodes = 0;
        snprintf(what, sizeof what, "onednn, %d threads%s", threads[k], split ? ", split=on" : "");
        if (!run_case(t, "onednn", threads[k], split, outs, n_out, got))
            fail_msg("%s refused the graph: %s", what, minfer_last_error());
        for (size_t o = 0; o < n_out; o++) {
            compare(got[o], want[o], what, outs[o]);
            minfer_tensor_free(got[o]);
        }
        if (copies >= 0 && copy_nodes != copies)
            fail_msg("%s: %d Concats ran as copies, %d expected", what, copy_nodes, copies);
    }
    for (size_t o = 0; o < n_out; o++)
        minfer_tensor_free(want[o]);
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
}

/* A convolution (k x k, pads (k - 1) / 2) from in (c_in channels) to out. */
static void conv(tcase *t, const char *in, const char *w, int64_t c_out, int64_t c_in, int64_t k,
                 const char *out) {
    tc_const(t, w, INTS(c_out, c_in, k, k), NULL);
    size_t n = tc_node(t, "Conv", NULL, (const char *const[]){in, w}, 2, out);
    int64_t p = (k - 1) / 2;
    minfer_builder_set_attr_ints(t->b, n, "pads", INTS(p, p, p, p));
}

static size_t concat(tcase *t, const char *const *in, size_t n, int64_t axis, const char *out) {
    size_t k = tc_node(t, "Concat", NULL, in, n, out);
    minfer_builder_set_attr_int(t->b, k, "axis", axis);
    return k;
}

/* A dense block: each Concat takes every feature so far again. Channels
 * 16, 8, 8 and 12: offsets 16, 24, 32 (off the 16-channel block) and a
 * part of 12. f1 is read by all three Concats and is a graph output; so
 * are c3, the last Concat, and c1 (else the optimizer splits the Conv
 * reading it into two and drops it). */
static void test_dense_block(void **state) {
    (void)state;
    for (int64_t batch = 1; batch <= 2; batch++) {
        tcase t;
        tc_init(&t, 13);
        tc_input(&t, "x", INTS(batch, 8, 9, 7));
        conv(&t, "x", "w0", 16, 8, 3, "f0");
        conv(&t, "f0", "w1", 8, 16, 3, "f1");
        concat(&t, NAMES("f0", "f1"), 1, "c1");
        conv(&t, "c1", "w2", 8, 24, 1, "f2");
        concat(&t, NAMES("f0", "f1", "f2"), 1, "c2");
        conv(&t, "c2", "w3", 12, 32, 3, "f3");
        concat(&t, NAMES("f0", "f1", "f2", "f3"), -3, "c3");
        conv(&t, "c3", "w4", 16, 44, 1, "y");
        check(&t, NAMES("y", "c3", "f1", "c1"), 3);
    }
}

/* Plain graph inputs along each axis: one row per input (axis 0, or the
 * outermost axis of extent > 1), many short rows (the last axis). */
static void test_plain_axes(void **state) {
    (void)state;
    for (int64_t axis = -4; axis < 4; axis++) {
        for (int64_t batch = 1; batch <= 2; batch++) {
            int64_t a[4] = {batch, 3, 4, 5}, b[4] = {batch, 3, 4, 5}, c[4] = {batch, 3, 4, 5};
            int ax = (int)(axis < 0 ? axis + 4 : axis);
            a[ax] = 2;
            b[ax] = 3;
            c[ax] = 1;
            tcase t;
            tc_init(&t, 13);
            tc_input(&t, "a", a, 4);
            tc_input(&t, "b", b, 4);
            tc_input(&t, "c", c, 4);
            concat(&t, NAMES("a", "b", "c"), axis, "y");
            check(&t, NAMES("y"), 1);
        }
    }
    static const int64_t shapes[3][5] = {{7}, {3, 5}, {2, 1, 3, 2, 4}};
    static const size_t ranks[3] = {1, 2, 5};
    for (int k = 0; k < 3; k++) {
        for (int64_t axis = 0; axis < (int64_t)ranks[k]; axis++) {
            tcase t;
            tc_init(&t, 13);
            tc_input(&t, "a", shapes[k], ranks[k]);
            tc_input(&t, "b", shapes[k], ranks[k]);
            concat(&t, NAMES("a", "b", "a"), axis, "y"); /* one value twice */
            check(&t, NAMES("y"), 1);
        }
    }
}

/* Concats of 2 MiB and more, cut over the pool at 2 and 3 threads:
 * plain graph inputs (one row each), and 1x1 convolutions' channels-last
 * outputs (4096 rows). */
static void test_large(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "a", INTS(1, 256, 32, 33));
    tc_input(&t, "b", INTS(1, 256, 32, 31));
    concat(&t, NAMES("a", "b"), 3, "y");
    check(&t, NAMES("y"), 1);
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 8, 64, 64));
    conv(&t, "x", "w1", 64, 8, 1, "a");
    conv(&t, "x", "w2", 80, 8, 1, "b");
    concat(&t, NAMES("a", "b", "x"), 1, "c");
    concat(&t, NAMES("a", "b"), 1, "y");
    check(&t, NAMES("y", "c"), 1); /* c: x is plain, a and b channels-last */
}

/* A plain graph input beside channels-last convolution outputs: no one
 * layout, so oneDNN's concat runs (no copies); the result is the same. */
static void test_mixed_layouts(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 8, 6, 5));
    conv(&t, "x", "w1", 16, 8, 3, "a");
    conv(&t, "x", "w2", 8, 8, 3, "b");
    concat(&t, NAMES("x", "a", "b"), 1, "y");
    check(&t, NAMES("y"), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_block),
        cmocka_unit_test(test_plain_axes),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_mixed_layouts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
