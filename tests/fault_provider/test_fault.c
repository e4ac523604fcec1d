/*
 * Provider faults: a provider whose execute_node (or prepare_node) fails on
 * demand (tests/fault_provider/fault.c). The failing run returns the
 * provider's status with its message, naming the provider and the node; the
 * caller's output slots are left empty; and the next run of the same
 * session succeeds with the right values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fuzz/onnx_build.h"
#include "../test_util.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

/* Log lines at WARN, kept for the placement tests. */
typedef struct warnings {
    int n;
    char text[4][512];
} warnings;

static void keep_warning(void *user, minfer_log_level level, const char *message) {
    warnings *w = user;
    if (level != MINFER_LOG_WARN)
        return;
    if (w->n < 4)
        snprintf(w->text[w->n], sizeof w->text[w->n], "%s", message);
    w->n++;
}

/* y = Relu(x) + x, nodes "relu" and "add", float[2,3], on providers
 * `providers`; strict placement when strict; warnings into w (or NULL). */
static minfer_session *make_session_on(const char *providers, const char *fault_options,
                                       int strict, warnings *w, minfer_status *status) {
    int64_t dims[2] = {2, 3};
    Onnx__ModelProto *m = ob_model(13);
    ob_input(m->graph, "x", T_FLOAT, 2, dims);
    ob_node(m->graph, "Relu", "x", "r")->name = ob_str("relu");
    ob_node(m->graph, "Add", "r x", "y")->name = ob_str("add");
    ob_output(m->graph, "y", T_FLOAT);
    size_t len;
    uint8_t *buf = ob_finish(m, &len);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers));
    assert_ok(minfer_options_set_threads(opt, 2));
    assert_ok(minfer_options_set_strict_placement(opt, strict));
    if (w)
        assert_ok(minfer_options_set_log_callback(opt, keep_warning, w));
    if (fault_options)
        assert_ok(minfer_options_set_provider_options(opt, "fault", fault_options));
    *status = minfer_session_create_from_memory(buf, len, opt, &s);
    minfer_options_free(opt);
    free(buf);
    return s;
}

static minfer_session *make_session(const char *fault_options, minfer_status *status) {
    return make_session_on("fault,cpu", fault_options, 0, NULL, status);
}

static minfer_status run(minfer_session *s, minfer_tensor **out) {
    static float x[6] = {-1, 2, -3, 4, -5, 6};
    int64_t dims[2] = {2, 3};
    minfer_tensor *in = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, x, sizeof x, &in));
    const char *names[] = {"x"};
    minfer_status st = minfer_session_run(s, names, (const minfer_tensor *const *)&in, 1, NULL,
                                          out, 1);
    minfer_tensor_free(in);
    return st;
}

static void expect_good(minfer_session *s) {
    const float want[6] = {-1, 4, -3, 8, -5, 12};
    int64_t dims[2] = {2, 3};
    minfer_tensor *out = NULL;
    assert_ok(run(s, &out));
    assert_tensor_f32(out, dims, 2, want);
    minfer_tensor_free(out);
}

static void test_placement(void **state) {
    (void)state;
    minfer_status st;
    minfer_session *s = make_session(NULL, &st);
    assert_ok(st);
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_ok(minfer_session_node_placement(s, i, &p));
        assert_string_equal(p.provider, "fault");
    }
    expect_good(s);
    minfer_session_free(s);
}

/* The second execute call (node "add" in the first run) fails once. */
static void test_fail_then_recover(void **state) {
    (void)state;
    minfer_status st;
    minfer_session *s = make_session("fail_at=2", &st);
    assert_ok(st);
    minfer_tensor *out = NULL;
    assert_int_equal(run(s, &out), MINFER_ERR_RUNTIME);
    assert_null(out);
    assert_error_mentions("fault provider: injected failure executing node 'add'");
    assert_error_mentions("provider 'fault'");
    expect_good(s);
    expect_good(s);
    minfer_session_free(s);
}

/* Failures driven from outside while the session lives: fail, recover, a
 * different node, recover; a caller-supplied output tensor survives. */
static void test_env_fault(void **state) {
    (void)state;
    minfer_status st;
    minfer_session *s = make_session(NULL, &st);
    assert_ok(st);
    int64_t dims[2] = {2, 3};
    minfer_tensor *mine = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &mine));
    const char *nodes[] = {"relu", "add", "*"};
    for (int k = 0; k < 3; k++) {
        setenv("MINFER_FAULT_FAIL", nodes[k], 1);
        minfer_tensor *out = mine;
        assert_int_equal(run(s, &out), MINFER_ERR_RUNTIME);
        assert_ptr_equal(out, mine);
        assert_error_mentions("injected failure");
        if (k < 2)
            assert_error_mentions(nodes[k]);
        unsetenv("MINFER_FAULT_FAIL");
        expect_good(s);
        out = mine;
        assert_ok(run(s, &out));
        assert_true(((const float *)minfer_tensor_data(mine))[5] == 12.0f);
    }
    minfer_tensor_free(mine);
    minfer_session_free(s);
}

/* A provider that accepts a node but cannot prepare it (an error, or out of
 * a resource) hands it to the next provider in the list that supports it:
 * one warning per node naming node, op, provider and reason; the session
 * reports and uses the provider that took it. */
static void test_prepare_fallback(void **state) {
    (void)state;
    static const struct {
        const char *options, *reason;
    } cases[] = {
        {"fail_prepare=1", "injected failure preparing node"},
        {"fail_prepare=2", "out of device memory preparing node"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        warnings w = {0};
        minfer_status st;
        minfer_session *s = make_session_on("fault,cpu", cases[c].options, 0, &w, &st);
        assert_ok(st);
        assert_non_null(s);
        assert_int_equal(w.n, 2); /* relu and add, once each */
        const char *node[2] = {"'relu' (op Relu", "'add' (op Add"};
        for (int k = 0; k < 2; k++) {
            if (!strstr(w.text[k], node[k]) || !strstr(w.text[k], "provider 'fault'") ||
                !strstr(w.text[k], cases[c].reason) || !strstr(w.text[k], "provider 'cpu'"))
                fail_msg("warning %d: %s", k, w.text[k]);
        }
        for (size_t i = 0; i < minfer_session_node_count(s); i++) {
            minfer_node_placement p;
            assert_ok(minfer_session_node_placement(s, i, &p));
            assert_string_equal(p.provider, "cpu");
        }
        expect_good(s);
        expect_good(s);
        minfer_session_free(s);
    }
}

/* Under strict placement the same failure fails session creation, naming
 * the provider, the node and the reason. */
static void test_prepare_fault_strict(void **state) {
    (void)state;
    minfer_status st;
    minfer_session *s = make_session_on("fault,cpu", "fail_prepare=2", 1, NULL, &st);
    assert_null(s);
    assert_int_equal(st, MINFER_ERR_NOMEM);
    assert_error_mentions("strict placement");
    assert_error_mentions("provider 'fault' could not prepare node 'relu'");
    assert_error_mentions("out of device memory preparing node");
}

/* With no later provider that takes the node, creation fails with the
 * provider's message; a session without the fault works. */
static void test_prepare_fault(void **state) {
    (void)state;
    minfer_status st;
    minfer_session *s = make_session_on("fault", "fail_prepare=1", 0, NULL, &st);
    assert_null(s);
    assert_int_equal(st, MINFER_ERR_RUNTIME);
    assert_error_mentions("provider 'fault' could not prepare node 'relu'");
    assert_error_mentions("injected failure preparing node");
    s = make_session(NULL, &st);
    assert_ok(st);
    expect_good(s);
    minfer_session_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_placement),
        cmocka_unit_test(test_fail_then_recover),
        cmocka_unit_test(test_env_fault),
        cmocka_unit_test(test_prepare_fault),
        cmocka_unit_test(test_prepare_fallback),
        cmocka_unit_test(test_prepare_fault_strict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
