/*
 * oneDNN convolutions against the CPU provider (the oracle) where the
 * graph's dimensions are symbolic, as in models exported with dynamic
 * batch and image sizes: supports_operator then sees unknown dimensions
 * and must not decline a convolution for a mismatch between its stand-ins
 * (a strided FusedConv whose residual Z is the other branch of a block, a
 * convolution whose channels come from a Reshape, a 1-D window longer
 * than the generic stand-in). Each graph runs on providers {"onednn"}
 * alone (every node must be placed there) at 1 and 2 threads and with the
 * split forms forced on at 3 threads, and on {"cpu"}; the outputs must
 * agree (|a - b| <= 1e-4 + 1e-3 |b|).
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

#define MAX_IN 4
#define TC_SEED 777u
#include "provider_case.h"

#define INTS(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define NAMES(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

/* A graph input declared with dims (-1: symbolic) and fed with random data
 * of the concrete shape run. */
static void sym_input(tcase *t, const char *name, const int64_t *dims, size_t rank,
                      const int64_t *run) {
    static const char *const sym[5] = {"n", "c", "h", "w", "d"};
    const char *names[5];
    for (size_t i = 0; i < rank; i++)
        names[i] = dims[i] < 0 ? sym[i] : NULL;
    assert_true(t->n_in < MAX_IN);
    assert_int_equal(minfer_builder_add_input(t->b, name, MINFER_DTYPE_FLOAT, dims, rank, names),
                     MINFER_OK);
    snprintf(t->names[t->n_in], sizeof t->names[0], "%s", name);
    t->inputs[t->n_in++] = random_tensor(t, run, rank);
}

/* Runs the graph on provider at threads threads (split: the oneDNN
 * option split=on); with check_placement every node must be on provider. */
static minfer_tensor *run_with(tcase *t, const char *provider, int check_placement, int threads,
                               int split) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *out = NULL;
    const char *names[MAX_IN];
    const minfer_tensor *ins[MAX_IN];
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers(opt, &provider, 1), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, threads), MINFER_OK);
    if (split)
        assert_int_equal(minfer_options_set_provider_options(opt, "onednn", "split=on"),
                         MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("%s: session not created: %s", provider, minfer_last_error());
    if (check_placement)
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
    st = minfer_session_run(s, names, ins, t->n_in, NULL, &out, 1);
    if (st != MINFER_OK)
        fail_msg("%s: run failed: %s", provider, minfer_last_error());
    minfer_session_free(s);
    return out;
}

static void compare(const minfer_tensor *got, const minfer_tensor *want, const char *what) {
    assert_int_equal(minfer_tensor_rank(got), minfer_tensor_rank(want));
    for (size_t d = 0; d < minfer_tensor_rank(got); d++)
        assert_int_equal(minfer_tensor_dims(got)[d], minfer_tensor_dims(want)[d]);
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (!(fabsf(g[i] - w[i]) <= 1e-4f + 1e-3f * fabsf(w[i])))
            fail_msg("element %lld: %s %g, cpu %g", (long long)i, what, (double)g[i],
                     (double)w[i]);
}

/* Output "y" on onednn (1 and 2 threads, and 3 with split=on) against cpu. */
static void sym_check(tcase *t) {
    static const struct {
        int threads, split;
        const char *what;
    } runs[3] = {{1, 0, "onednn 1 thread"}, {2, 0, "onednn 2 threads"},
                 {3, 1, "onednn split=on"}};
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
    minfer_tensor *want = run_with(t, "cpu", 0, 1, 0);
    for (int r = 0; r < 3; r++) {
        minfer_tensor *got = run_with(t, "onednn", 1, runs[r].threads, runs[r].split);
        compare(got, want, runs[r].what);
        minfer_tensor_free(got);
    }
    minfer_tensor_free(want);
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
}

/* A ResNet downsampling block on [n, 16, h, w]: the main branch (3x3,
 * stride 2, asymmetric pads) and the shortcut (1x1, stride 2) meet in an
 * Add that the optimizer folds into one of them as a FusedConv whose Z is
 * the other, with the Relu after it (the pads add up to 2 on each axis, so
 * that both branches have the same symbolic shape and the Add folds). */
static void test_strided_residual(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    sym_input(&t, "x", INTS(-1, 16, -1, -1), (const int64_t[]){1, 16, 13, 10});
    tc_const(&t, "w1", INTS(24, 16, 3, 3), NULL);
    tc_const(&t, "b1", INTS(24), NULL);
    tc_const(&t, "w2", INTS(24, 16, 1, 1), NULL);
    size_t n = tc_node(&t, "Conv", NULL, NAMES("x", "w1", "b1"), "main");
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 0, 1, 2));
    n = tc_node(&t, "Conv", NULL, NAMES("x", "w2"), "short");
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    tc_node(&t, "Add", NULL, NAMES("main", "short"), "sum");
    tc_node(&t, "Relu", NULL, NAMES("sum"), "y");
    sym_check(&t);
}

/* The same with a batch of two and a dilated grouped main branch. */
static void test_grouped_dilated_residual(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    sym_input(&t, "x", INTS(-1, 16, -1, -1), (const int64_t[]){2, 16, 11, 12});
    tc_const(&t, "w1", INTS(32, 4, 3, 3), NULL);
    tc_const(&t, "w2", INTS(32, 16, 1, 1), NULL);
    tc_const(&t, "b2", INTS(32), NULL);
    size_t n = tc_node(&t, "Conv", NULL, NAMES("x", "w1"), "main");
    minfer_builder_set_attr_int(t.b, n, "group", 4);
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    minfer_builder_set_attr_ints(t.b, n, "dilations", INTS(2, 2));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(2, 2, 2, 2));
    n = tc_node(&t, "Conv", NULL, NAMES("x", "w2", "b2"), "short");
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(2, 2));
    tc_node(&t, "Add", NULL, NAMES("short", "main"), "y");
    sym_check(&t);
}

/* Channels unknown until the run (here a symbolic input; in ShuffleNet a
 * Reshape): a grouped convolution's are W's times the group. */
static void test_unknown_channels(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    sym_input(&t, "x", INTS(1, -1, 9, 9), (const int64_t[]){1, 12, 9, 9});
    tc_const(&t, "w", INTS(12, 3, 3, 3), NULL);
    size_t n = tc_node(&t, "Conv", NULL, NAMES("x", "w"), "c");
    minfer_builder_set_attr_int(t.b, n, "group", 4);
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    tc_node(&t, "Relu", NULL, NAMES("c"), "y");
    sym_check(&t);
}

/* A 1-D convolution of unknown length with a window longer than 64 (an
 * audio front end), strided, then a dilated one with asymmetric pads. */
static void test_conv1d_long_window(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    sym_input(&t, "x", INTS(-1, 2, -1), (const int64_t[]){1, 2, 400});
    tc_const(&t, "w1", INTS(8, 2, 80), NULL);
    tc_const(&t, "w2", INTS(8, 8, 3), NULL);
    size_t n = tc_node(&t, "Conv", NULL, NAMES("x", "w1"), "c");
    minfer_builder_set_attr_ints(t.b, n, "strides", INTS(4));
    n = tc_node(&t, "Conv", NULL, NAMES("c", "w2"), "y");
    minfer_builder_set_attr_ints(t.b, n, "dilations", INTS(3));
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 4));
    sym_check(&t);
}

/* Nodes the provider split into pieces (its verbose log). */
static int split_nodes;

static void count_splits(void *user, minfer_log_level level, const char *message) {
    (void)user;
    (void)level;
    if (strstr(message, "onednn: node '") && strstr(message, "' runs in "))
        split_nodes++;
}

/* Conv 1x1 -> grouped Conv 3x3 -> Conv 1x1 (a ResNeXt or RegNet block):
 * the grouped convolution keeps the channels-last layout its input comes
 * in, so that no reorder sits between the three and each of them splits
 * into row pieces at 3 threads with split=on (a blocked layout, which
 * oneDNN prefers for grouped convolutions, has no row slices: the grouped
 * node and its consumer would not split). Results against cpu. */
static void test_grouped_keeps_channels_last(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", INTS(1, 16, 12, 12));
    tc_const(&t, "w1", INTS(32, 16, 1, 1), NULL);
    tc_const(&t, "w2", INTS(32, 8, 3, 3), NULL);
    tc_const(&t, "b2", INTS(32), NULL);
    tc_const(&t, "w3", INTS(16, 32, 1, 1), NULL);
    tc_node(&t, "Conv", NULL, NAMES("x", "w1"), "a");
    tc_node(&t, "Relu", NULL, NAMES("a"), "ar");
    size_t n = tc_node(&t, "Conv", NULL, NAMES("ar", "w2", "b2"), "g");
    minfer_builder_set_attr_int(t.b, n, "group", 4);
    minfer_builder_set_attr_ints(t.b, n, "pads", INTS(1, 1, 1, 1));
    tc_node(&t, "Relu", NULL, NAMES("g"), "gr");
    tc_node(&t, "Conv", NULL, NAMES("gr", "w3"), "y");
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *want = run_with(&t, "cpu", 0, 1, 0);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, "onednn"), MINFER_OK);
    assert_int_equal(minfer_options_set_threads(opt, 3), MINFER_OK);
    assert_int_equal(minfer_options_set_provider_options(opt, "onednn", "split=on"), MINFER_OK);
    assert_int_equal(minfer_options_set_log_level(opt, MINFER_LOG_VERBOSE), MINFER_OK);
    assert_int_equal(minfer_options_set_log_callback(opt, count_splits, NULL), MINFER_OK);
    split_nodes = 0;
    assert_int_equal(minfer_session_create_from_builder(t.b, opt, &s), MINFER_OK);
    minfer_options_free(opt);
    assert_int_equal(minfer_session_node_count(s), 3); /* the Relus fused */
    assert_int_equal(split_nodes, 3);
    const char *names[1] = {"x"};
    const minfer_tensor *ins[1] = {t.inputs[0]};
    minfer_tensor *got = NULL;
    assert_int_equal(minfer_session_run(s, names, ins, 1, NULL, &got, 1), MINFER_OK);
    compare(got, want, "onednn split=on");
    minfer_tensor_free(got);
    minfer_session_free(s);
    minfer_tensor_free(want);
    minfer_tensor_free(t.inputs[0]);
    minfer_builder_free(t.b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strided_residual),
        cmocka_unit_test(test_grouped_dilated_residual),
        cmocka_unit_test(test_unknown_channels),
        cmocka_unit_test(test_conv1d_long_window),
        cmocka_unit_test(test_grouped_keeps_channels_last),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
