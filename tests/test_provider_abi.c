/*
 * The provider ABI as it grows (docs/providers.md, "Versioning rules"): the
 * current core with providers built against older headers
 * (tests/fake_providers/fakeold.c):
 *   fakev1   ABI version 1, whose desc arrays have another element size:
 *            refused before any call, the reason naming both versions;
 *   fakeold  ABI version 2 with a vtable that ends at execute_node and a
 *            shorter minfer_value_desc than the host's, stepping through
 *            the host's arrays by the strides the host gives: it runs.
 * MINFER_PROVIDER_PATH (set by ctest) holds the fakes.
 */
#include <stdlib.h>

#include "test_util.h"

/* y = Relu(x + bias), x and bias float [2, 3]: "add_node", "relu_node". */
static minfer_graph_builder *add_relu_graph(void) {
    minfer_graph_builder *b = NULL;
    assert_ok(minfer_builder_create(13, &b));
    const int64_t dims[] = {2, 3};
    const float bias[] = {1, -1, 1, -1, 1, -1};
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &t));
    memcpy(minfer_tensor_data(t), bias, sizeof bias);
    assert_ok(minfer_builder_add_initializer(b, "bias", t));
    minfer_tensor_free(t);
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL));
    const char *in1[] = {"x", "bias"}, *out1[] = {"sum"};
    const char *in2[] = {"sum"}, *out2[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "add_node", in1, 2, out1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu_node", in2, 1, out2, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    return b;
}

static minfer_status create_with(const char *list, minfer_session **out) {
    minfer_graph_builder *b = add_relu_graph();
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, list));
    *out = NULL;
    minfer_status st = minfer_session_create_from_builder(b, opt, out);
    minfer_options_free(opt);
    minfer_builder_free(b);
    return st;
}

static const char *placement_of(const minfer_session *s, const char *node) {
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_ok(minfer_session_node_placement(s, i, &p));
        if (strcmp(p.node_name, node) == 0)
            return p.provider;
    }
    fail_msg("node %s not in the session", node);
    return NULL;
}

static void test_older_vtable_runs(void **state) {
    (void)state;
    minfer_session *s = NULL;
    assert_ok(create_with("fakeold,cpu", &s));
    /* It read input 1 (the initializer) through the host's stride: had it
     * stepped by its own, shorter desc, it would have declined the Add. */
    assert_string_equal(placement_of(s, "add_node"), "fakeold");
    assert_string_equal(placement_of(s, "relu_node"), "cpu");
    const int64_t dims[] = {2, 3};
    const float x[] = {-2, 2, 0, 0.5f, -0.5f, 3};
    const float want[] = {0, 1, 1, 0, 0.5f, 2};
    minfer_tensor *tx = NULL, *y = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &tx));
    memcpy(minfer_tensor_data(tx), x, sizeof x);
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {tx};
    for (int run = 0; run < 2; run++) {
        assert_ok(minfer_session_run(s, names, ins, 1, NULL, &y, 1));
        assert_tensor_f32(y, dims, 2, want);
        minfer_tensor_free(y);
        y = NULL;
    }
    minfer_tensor_free(tx);
    minfer_session_free(s);
}

/* fakeold splits its Add with the host-taking parallel_for and claims
 * nothing: a provider built before the run-taking members. On 2 threads,
 * under each scheduler (the pipeline's through the asynchronous API, as
 * its requests run), every run computes the sum. */
static void test_older_host_members_every_scheduler(void **state) {
    (void)state;
    const minfer_scheduler scheds[3] = {MINFER_SCHED_SEQUENTIAL, MINFER_SCHED_PARALLEL,
                                        MINFER_SCHED_PIPELINE};
    const int64_t dims[] = {2, 3};
    const float x[] = {-2, 2, 0, 0.5f, -0.5f, 3};
    const float want[] = {0, 1, 1, 0, 0.5f, 2};
    for (int k = 0; k < 3; k++) {
        minfer_graph_builder *b = add_relu_graph();
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        assert_ok(minfer_options_create(&opt));
        assert_ok(minfer_options_set_providers_str(opt, "fakeold,cpu"));
        assert_ok(minfer_options_set_threads(opt, 2));
        assert_ok(minfer_options_set_scheduler(opt, scheds[k]));
        assert_ok(minfer_session_create_from_builder(b, opt, &s));
        minfer_options_free(opt);
        minfer_builder_free(b);
        assert_string_equal(placement_of(s, "add_node"), "fakeold");
        minfer_tensor *tx = NULL, *y = NULL;
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &tx));
        memcpy(minfer_tensor_data(tx), x, sizeof x);
        const char *names[] = {"x"};
        const minfer_tensor *ins[] = {tx};
        for (int run = 0; run < 40; run++) {
            if (scheds[k] == MINFER_SCHED_PIPELINE) {
                minfer_request *req = NULL;
                assert_ok(minfer_session_submit(s, names, ins, 1, NULL, NULL, &req));
                assert_ok(minfer_request_wait(req, &y, 1));
                minfer_request_free(req);
            } else {
                assert_ok(minfer_session_run(s, names, ins, 1, NULL, &y, 1));
            }
            assert_tensor_f32(y, dims, 2, want);
            minfer_tensor_free(y);
            y = NULL;
        }
        minfer_tensor_free(tx);
        minfer_session_free(s);
    }
}

static void test_abi1_refused_clearly(void **state) {
    (void)state;
    minfer_session *s = NULL;
    assert_int_equal(create_with("fakev1", &s), MINFER_ERR_PROVIDER);
    assert_null(s);
    assert_error_mentions("libminfer_provider_fakev1.so");
    assert_error_mentions("was built for provider ABI version 1");
    assert_error_mentions("supports ABI version 2");
    /* With a usable provider after it, the session falls back to that. */
    assert_ok(create_with("fakev1,cpu", &s));
    assert_int_equal(minfer_session_provider_count(s), 1);
    assert_string_equal(placement_of(s, "add_node"), "cpu");
    minfer_session_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_older_vtable_runs),
        cmocka_unit_test(test_older_host_members_every_scheduler),
        cmocka_unit_test(test_abi1_refused_clearly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
