/*
 * Provider loading and selection with real test provider libraries (built
 * from tests/fake_providers/, found through MINFER_PROVIDER_PATH, which ctest
 * sets):
 *   fakegood     loads; runs Relu on float
 *   fakerefuse   runs Add; refuses Relu with a reason
 *   fakeabi      reports ABI version 999
 *   fakenosym    exports no entry symbol
 *   fakeinitfail init fails
 * The selector gives each node to the first listed provider that supports
 * it; a provider that cannot load is skipped; a list with no usable provider,
 * or a node nobody supports, fails session creation with a clear message.
 */
#include <stdlib.h>

#include "test_util.h"

/* y = Relu(x + bias), x and bias float [2, 3]; nodes "add_node", "relu_node". */
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

/* Creates a session on the add/relu graph with the given provider list
 * (NULL: no list in the options). Returns the status; *out gets the session. */
static minfer_status create_with(const char *list, minfer_session **out) {
    minfer_graph_builder *b = add_relu_graph();
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    if (list)
        assert_ok(minfer_options_set_providers_str(opt, list));
    *out = NULL;
    minfer_status st = minfer_session_create_from_builder(b, opt, out);
    minfer_options_free(opt);
    minfer_builder_free(b);
    return st;
}

/* The provider a node (by name) was given. */
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

/* Runs the add/relu session and checks Relu(x + bias). */
static void check_runs(minfer_session *s) {
    const int64_t dims[] = {2, 3};
    const float x[] = {-2, 2, 0, 0.5f, -0.5f, 3};
    const float want[] = {0, 1, 1, 0, 0.5f, 2};
    minfer_tensor *tx = NULL, *y = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &tx));
    memcpy(minfer_tensor_data(tx), x, sizeof x);
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {tx};
    assert_ok(minfer_session_run(s, names, ins, 1, NULL, &y, 1));
    assert_tensor_f32(y, dims, 2, want);
    minfer_tensor_free(y);
    minfer_tensor_free(tx);
}

/* The loaded providers are exactly the expected list, in order. */
static void check_providers(const minfer_session *s, const char *const *names, size_t n) {
    assert_int_equal(minfer_session_provider_count(s), n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(minfer_session_provider_name(s, i), names[i]);
    assert_null(minfer_session_provider_name(s, n));
}

static void test_fakegood_takes_relu(void **state) {
    (void)state;
    minfer_session *s = NULL;
    assert_ok(create_with("fakegood,cpu", &s));
    const char *want[] = {"fakegood", "cpu"};
    check_providers(s, want, 2);
    assert_string_equal(placement_of(s, "relu_node"), "fakegood");
    assert_string_equal(placement_of(s, "add_node"), "cpu");
    check_runs(s);
    minfer_session_free(s);
}

static void test_list_as_array(void **state) {
    (void)state;
    minfer_graph_builder *b = add_relu_graph();
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    const char *list[] = {"fakegood", "cpu"};
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers(opt, list, 2));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    assert_string_equal(placement_of(s, "relu_node"), "fakegood");
    assert_string_equal(placement_of(s, "add_node"), "cpu");
    minfer_session_free(s);
    minfer_options_free(opt);
    minfer_builder_free(b);
}

static void test_cpu_first_takes_everything(void **state) {
    (void)state;
    minfer_session *s = NULL;
    assert_ok(create_with("cpu,fakegood", &s));
    assert_string_equal(placement_of(s, "relu_node"), "cpu");
    assert_string_equal(placement_of(s, "add_node"), "cpu");
    check_runs(s);
    minfer_session_free(s);
}

static void test_refused_node_falls_through(void **state) {
    (void)state;
    minfer_session *s = NULL;
    assert_ok(create_with("fakerefuse,cpu", &s));
    assert_string_equal(placement_of(s, "add_node"), "fakerefuse");
    assert_string_equal(placement_of(s, "relu_node"), "cpu");
    check_runs(s);
    minfer_session_free(s);
}

/* Two sessions of one provider at once: the provider keeps no globals. */
static void test_two_instances(void **state) {
    (void)state;
    minfer_session *s1 = NULL, *s2 = NULL;
    assert_ok(create_with("fakegood,cpu", &s1));
    assert_ok(create_with("fakegood,cpu", &s2));
    check_runs(s1);
    check_runs(s2);
    minfer_session_free(s1);
    check_runs(s2);
    minfer_session_free(s2);
}

/* A listed provider that cannot be used is skipped; the session uses the rest. */
static void check_skipped(const char *list) {
    minfer_session *s = NULL;
    minfer_status st = create_with(list, &s);
    if (st != MINFER_OK)
        fail_msg("providers \"%s\": %s", list, minfer_last_error());
    const char *want[] = {"cpu"};
    check_providers(s, want, 1);
    assert_string_equal(placement_of(s, "relu_node"), "cpu");
    assert_string_equal(placement_of(s, "add_node"), "cpu");
    check_runs(s);
    minfer_session_free(s);
}

static void test_skip_wrong_abi(void **state) {
    (void)state;
    check_skipped("fakeabi,cpu");
}

static void test_skip_missing_symbol(void **state) {
    (void)state;
    check_skipped("fakenosym,cpu");
}

static void test_skip_init_failure(void **state) {
    (void)state;
    check_skipped("fakeinitfail,cpu");
}

/* A name that is neither installed nor one of minfer's is a typo: an
 * error listing what is installed, not a provider skipped. */
static void test_unknown_name_fails(void **state) {
    (void)state;
    minfer_session *s = (minfer_session *)&s;
    assert_int_equal(create_with("nosuch,cpu", &s), MINFER_ERR_INVALID_ARG);
    assert_null(s);
    assert_error_mentions("unknown provider 'nosuch' (installed: ");
    assert_error_mentions("fakegood");
    assert_error_mentions("minfer's providers: cpu, onednn, opencl)");
}

/* A list whose only provider cannot be used fails creation, with the
 * provider's name and why. */
static void check_no_usable(const char *list, const char *why) {
    minfer_session *s = (minfer_session *)&s;
    assert_int_not_equal(create_with(list, &s), MINFER_OK);
    assert_null(s);
    assert_error_mentions(list);
    if (why)
        assert_error_mentions(why);
}

static void test_no_usable_missing(void **state) {
    (void)state;
    check_no_usable("nosuch", NULL);
}

static void test_no_usable_wrong_abi(void **state) {
    (void)state;
    /* The reason names the library file and both ABI versions. */
    check_no_usable("fakeabi", "ABI");
    assert_error_mentions("libminfer_provider_fakeabi.so");
    assert_error_mentions("999");
}

static void test_no_usable_missing_symbol(void **state) {
    (void)state;
    check_no_usable("fakenosym", "minfer_provider_entry");
}

static void test_no_usable_init_failure(void **state) {
    (void)state;
    check_no_usable("fakeinitfail", "no fake device present");
}

/* A node no listed provider supports fails creation, naming the node, op,
 * domain and opset. */
static void test_unsupported_node(void **state) {
    (void)state;
    minfer_session *s = (minfer_session *)&s;
    assert_int_not_equal(create_with("fakerefuse", &s), MINFER_OK);
    assert_null(s);
    assert_error_mentions("relu_node");
    assert_error_mentions("Relu");
    assert_error_mentions("13");
    const char *err = minfer_last_error();
    if (!strstr(err, "ai.onnx") && !strstr(err, "domain"))
        fail_msg("last error \"%s\" does not name the domain", err);
}

static void test_env_list(void **state) {
    (void)state;
    minfer_session *s = NULL;
    assert_int_equal(setenv("MINFER_PROVIDERS", "fakegood,cpu", 1), 0);

    /* Options without a list: the environment decides. */
    assert_ok(create_with(NULL, &s));
    assert_string_equal(placement_of(s, "relu_node"), "fakegood");
    assert_string_equal(placement_of(s, "add_node"), "cpu");
    check_runs(s);
    minfer_session_free(s);

    /* No options at all: the same. */
    minfer_graph_builder *b = add_relu_graph();
    assert_ok(minfer_session_create_from_builder(b, NULL, &s));
    assert_string_equal(placement_of(s, "relu_node"), "fakegood");
    minfer_session_free(s);
    minfer_builder_free(b);

    /* A list in the options wins over the environment. */
    assert_ok(create_with("cpu", &s));
    assert_string_equal(placement_of(s, "relu_node"), "cpu");
    minfer_session_free(s);

    /* An environment list with no usable provider fails like an option. */
    assert_int_equal(setenv("MINFER_PROVIDERS", "nosuch", 1), 0);
    s = (minfer_session *)&s;
    assert_int_not_equal(create_with(NULL, &s), MINFER_OK);
    assert_null(s);
    assert_error_mentions("nosuch");
}

/* Teardown: no test leaves MINFER_PROVIDERS behind, even when it fails. */
static int unset_env(void **state) {
    (void)state;
    return unsetenv("MINFER_PROVIDERS");
}

/* Without any list the default order applies, and it ends with cpu. */
static void test_default_order(void **state) {
    (void)state;
    minfer_session *s = NULL;
    assert_ok(create_with(NULL, &s));
    size_t n = minfer_session_provider_count(s);
    assert_true(n >= 1);
    assert_string_equal(minfer_session_provider_name(s, n - 1), "cpu");
    check_runs(s);
    minfer_session_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fakegood_takes_relu),
        cmocka_unit_test(test_list_as_array),
        cmocka_unit_test(test_cpu_first_takes_everything),
        cmocka_unit_test(test_refused_node_falls_through),
        cmocka_unit_test(test_two_instances),
        cmocka_unit_test(test_skip_wrong_abi),
        cmocka_unit_test(test_skip_missing_symbol),
        cmocka_unit_test(test_skip_init_failure),
        cmocka_unit_test(test_unknown_name_fails),
        cmocka_unit_test(test_no_usable_missing),
        cmocka_unit_test(test_no_usable_wrong_abi),
        cmocka_unit_test(test_no_usable_missing_symbol),
        cmocka_unit_test(test_no_usable_init_failure),
        cmocka_unit_test(test_unsupported_node),
        cmocka_unit_test_teardown(test_env_list, unset_env),
        cmocka_unit_test(test_default_order),
    };
    if (!getenv("MINFER_PROVIDER_PATH")) {
        fprintf(stderr, "test_providers: MINFER_PROVIDER_PATH must name the fake providers' "
                        "directory (ctest sets it)\n");
        return 1;
    }
    unsetenv("MINFER_PROVIDERS");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
