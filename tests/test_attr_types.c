/*
 * Attributes of the wrong type (issue 39): a string LeakyRelu `alpha`, an
 * int Elu `alpha`, a string Flatten `axis` (which also changed the output
 * shape), ints where an int is wanted... were read as absent and replaced
 * by the defaults. Each is now MINFER_ERR_TYPE at session creation naming
 * the node, the attribute, the expected and the found type, on every
 * provider list (the readers are shared: graph.c, host_attrs.c), and the
 * same nodes with the right types still work. The readers note the
 * mismatch on the attribute (graph.c): a node whose input is a constant,
 * folded away by the optimizer after it was read, fails too.
 */
#include "minfer/builder.h"
#include "test_util.h"

typedef enum { A_INT, A_FLOAT, A_STRING, A_INTS } kind;

static int folded; /* x is a constant initializer and y = op(x) + z: op folds away */

/* x [2,3,4] -> op (one attribute) -> y */
static minfer_status make(const char *op, const char *attr, kind k, const char *providers,
                          minfer_session **s) {
    minfer_graph_builder *b = NULL;
    int64_t dims[3] = {2, 3, 4};
    const char *in[] = {"x"}, *out[] = {"y"};
    size_t node;
    assert_ok(minfer_builder_create(13, &b));
    if (folded) {
        minfer_tensor *x = NULL;
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 3, &x));
        memset(minfer_tensor_data(x), 0, minfer_tensor_nbytes(x));
        assert_ok(minfer_builder_add_initializer(b, "x", x));
        minfer_tensor_free(x);
    } else
        assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 3, NULL));
    const char *t[] = {"t"}, *add_in[] = {"t", "z"};
    assert_ok(minfer_builder_add_node(b, op, NULL, "the_node", in, 1, folded ? t : out, 1,
                                      &node));
    const int64_t ints[2] = {1, 2};
    switch (k) {
    case A_INT: assert_ok(minfer_builder_set_attr_int(b, node, attr, 1)); break;
    case A_FLOAT: assert_ok(minfer_builder_set_attr_float(b, node, attr, 0.5f)); break;
    case A_STRING: assert_ok(minfer_builder_set_attr_string(b, node, attr, "0.5")); break;
    case A_INTS: assert_ok(minfer_builder_set_attr_ints(b, node, attr, ints, 2)); break;
    }
    if (folded) { /* y = t + z, so t is an intermediate the folding replaces */
        int64_t flat[2] = {2, 12};
        int fl = strcmp(op, "Flatten") == 0;
        assert_ok(minfer_builder_add_input(b, "z", MINFER_DTYPE_FLOAT, fl ? flat : dims,
                                           fl ? 2 : 3, NULL));
        assert_ok(minfer_builder_add_node(b, "Add", NULL, "add", add_in, 2, out, 1, NULL));
    }
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers));
    assert_ok(minfer_options_set_log_level(opt, MINFER_LOG_ERROR));
    *s = NULL;
    minfer_status st = minfer_session_create_from_builder(b, opt, s);
    minfer_options_free(opt);
    minfer_builder_free(b);
    return st;
}

static void wrong(const char *op, const char *attr, kind k, const char *want, const char *found,
                  const char *providers) {
    minfer_session *s = NULL;
    minfer_status st = make(op, attr, k, providers, &s);
    if (st == MINFER_OK) {
        minfer_session_free(s);
        fail_msg("%s with a %s '%s' on %s was accepted", op, found, attr, providers);
    }
    if (st != MINFER_ERR_TYPE)
        fail_msg("%s with a %s %s on %s: status %d: %s", op, found, attr, providers, (int)st,
                 minfer_last_error());
    assert_error_mentions("the_node");
    assert_error_mentions(attr);
    assert_error_mentions(want);
    assert_error_mentions(found);
}

static void right(const char *op, const char *attr, kind k, const char *providers) {
    minfer_session *s = NULL;
    if (make(op, attr, k, providers, &s) != MINFER_OK)
        fail_msg("%s with a good '%s' on %s: %s", op, attr, providers, minfer_last_error());
    minfer_session_free(s);
}

static void cases(const char *providers) {
    wrong("LeakyRelu", "alpha", A_STRING, "float", "string", providers);
    wrong("Elu", "alpha", A_INT, "float", "int", providers);
    wrong("Flatten", "axis", A_STRING, "int", "string", providers);
    wrong("Flatten", "axis", A_FLOAT, "int", "float", providers);
    wrong("Softmax", "axis", A_INTS, "int", "ints", providers);
    wrong("HardSigmoid", "alpha", A_INTS, "float", "ints", providers);
    right("LeakyRelu", "alpha", A_FLOAT, providers);
    right("Elu", "alpha", A_FLOAT, providers);
    right("Flatten", "axis", A_INT, providers);
    right("Softmax", "axis", A_INT, providers);
}

static void test_cpu(void **state) {
    (void)state;
    cases("cpu");
}

static void test_onednn_cpu(void **state) {
    (void)state;
    minfer_session *s = NULL;
    if (make("Relu", "unused", A_INT, "onednn,cpu", &s) != MINFER_OK)
        skip();
    minfer_session_free(s);
    cases("onednn,cpu");
}

/* The same nodes on a constant: the optimizer folds them after reading
 * the attribute as absent, and drops them; the creation still fails. */
static void test_folded(void **state) {
    (void)state;
    folded = 1;
    wrong("LeakyRelu", "alpha", A_STRING, "float", "string", "cpu");
    wrong("Flatten", "axis", A_STRING, "int", "string", "cpu");
    wrong("Elu", "alpha", A_INT, "float", "int", "cpu");
    right("Flatten", "axis", A_INT, "cpu");
    folded = 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu),
        cmocka_unit_test(test_onednn_cpu),
        cmocka_unit_test(test_folded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
