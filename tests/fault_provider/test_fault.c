/*
 * Provider faults: a provider whose execute_node (or prepare_node) fails on
 * demand (tests/fault_provider/fault.c). The failing run returns the
 * provider's status with its message, naming the provider and the node; the
 * caller's output slots are left empty; and the next run of the same
 * session succeeds with the right values.
 */
#include <stdlib.h>

#include "../fuzz/onnx_build.h"
#include "../test_util.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT

/* y = Relu(x) + x, nodes "relu" and "add", float[2,3]. */
static minfer_session *make_session(const char *fault_options, minfer_status *status) {
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
    assert_ok(minfer_options_set_providers_str(opt, "fault,cpu"));
    assert_ok(minfer_options_set_threads(opt, 2));
    if (fault_options)
        assert_ok(minfer_options_set_provider_options(opt, "fault", fault_options));
    *status = minfer_session_create_from_memory(buf, len, opt, &s);
    minfer_options_free(opt);
    free(buf);
    return s;
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

/* A provider that cannot prepare fails session creation with its message. */
static void test_prepare_fault(void **state) {
    (void)state;
    minfer_status st;
    minfer_session *s = make_session("fail_prepare=1", &st);
    assert_null(s);
    assert_int_not_equal(st, MINFER_OK);
    assert_error_mentions("injected failure preparing node");
    /* and a session without the fault works */
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
