/*
 * The API's user-facing surface (issue 24): free-dimension overrides,
 * messages that list what there is.
 */
#include "test_util.h"

#include <stdlib.h>

/* y = Relu(x), x float [batch, 3] ("batch" symbolic), or [batch, seq] when
 * two_names. */
static minfer_graph_builder *relu_graph(int two_names) {
    minfer_graph_builder *b = NULL;
    const int64_t dims[] = {-1, two_names ? -1 : 3};
    const char *names[] = {"batch", two_names ? "seq" : NULL};
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, names));
    const char *in[] = {"x"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu_node", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    return b;
}

static minfer_status create(minfer_graph_builder *b, const minfer_options *opt,
                            minfer_session **out) {
    *out = NULL;
    minfer_status st = minfer_session_create_from_builder(b, opt, out);
    minfer_builder_free(b);
    return st;
}

static minfer_options *cpu_options(void) {
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    return opt;
}

/* Runs x of shape dims (zeros) and returns the status. */
static minfer_status run_shape(minfer_session *s, const int64_t *dims, size_t rank) {
    minfer_tensor *x = NULL, *y = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, rank, &x));
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {x};
    minfer_status st = minfer_session_run(s, names, ins, 1, NULL, &y, 1);
    minfer_tensor_free(x);
    minfer_tensor_free(y);
    return st;
}

static void test_set_dim_by_name(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    minfer_value_info info;
    assert_ok(minfer_options_set_dim(opt, "batch", 5));
    assert_ok(minfer_options_set_dim(opt, "batch", 8)); /* replaces */
    assert_ok(create(relu_graph(0), opt, &s));
    assert_ok(minfer_session_input_info(s, 0, &info));
    assert_int_equal(info.rank, 2);
    assert_int_equal(info.dims[0], 8);
    assert_int_equal(info.dims[1], 3);
    /* planned at creation: the memory plan exists before any run */
    minfer_memory_info mem;
    assert_ok(minfer_session_memory_info(s, &mem));
    assert_int_equal(mem.has_plan, 1);
    const int64_t good[] = {8, 3}, other[] = {2, 3};
    assert_ok(run_shape(s, good, 2));
    assert_int_equal(run_shape(s, other, 2), MINFER_ERR_SHAPE);
    assert_error_mentions("input 'x' expects shape [8,3], got [2,3]");
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_set_input_dim_by_axis(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    minfer_value_info info;
    assert_ok(minfer_options_set_input_dim(opt, "x", 1, 7));
    assert_ok(create(relu_graph(1), opt, &s));
    assert_ok(minfer_session_input_info(s, 0, &info));
    assert_int_equal(info.dims[0], -1);
    assert_string_equal(info.dim_names[0], "batch");
    assert_int_equal(info.dims[1], 7);
    const int64_t good[] = {2, 7}, bad[] = {2, 6};
    assert_ok(run_shape(s, good, 2));
    assert_int_equal(run_shape(s, bad, 2), MINFER_ERR_SHAPE);
    /* the declared shape named as `minfer info` shows it */
    assert_error_mentions("expects shape [batch,7], got [2,6]");
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_dim_errors(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_set_dim(opt, "batch", -1), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_options_set_dim(opt, "", 1), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_options_set_dim(NULL, "batch", 1), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_options_set_input_dim(opt, "x", MINFER_MAX_RANK, 1),
                     MINFER_ERR_INVALID_ARG);
    assert_ok(minfer_options_set_dim(opt, "bach", 2));
    assert_int_equal(create(relu_graph(1), opt, &s), MINFER_ERR_NOT_FOUND);
    assert_null(s);
    assert_error_mentions("cannot set dimension 'bach': no input has a dimension of that name "
                          "(symbolic dimensions: batch, seq)");
    minfer_options_free(opt);

    opt = cpu_options();
    assert_ok(minfer_options_set_input_dim(opt, "z", 0, 2));
    assert_int_equal(create(relu_graph(0), opt, &s), MINFER_ERR_NOT_FOUND);
    assert_error_mentions("no input has that name (inputs: x)");
    minfer_options_free(opt);

    opt = cpu_options();
    assert_ok(minfer_options_set_input_dim(opt, "x", 1, 4));
    assert_int_equal(create(relu_graph(0), opt, &s), MINFER_ERR_SHAPE);
    assert_error_mentions("cannot set axis 1 of input 'x' to 4: the model fixes it at 3");
    minfer_options_free(opt);

    opt = cpu_options();
    assert_ok(minfer_options_set_input_dim(opt, "x", 2, 4));
    assert_int_equal(create(relu_graph(0), opt, &s), MINFER_ERR_SHAPE);
    assert_error_mentions("cannot set axis 2 of input 'x': it has fewer dimensions");
    minfer_options_free(opt);
}

static void test_wrong_output_lists_outputs(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    minfer_tensor *x = NULL, *y = NULL;
    const int64_t dims[] = {1, 3};
    assert_ok(create(relu_graph(0), opt, &s));
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &x));
    const char *in[] = {"x"}, *out[] = {"z"};
    const minfer_tensor *ins[] = {x};
    assert_int_equal(minfer_session_run(s, in, ins, 1, out, &y, 1), MINFER_ERR_NOT_FOUND);
    assert_error_mentions("'z' is not an output of the model (outputs: 'y')");
    minfer_tensor_free(x);
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_thread_count(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    assert_ok(minfer_options_set_threads(opt, 3));
    assert_ok(create(relu_graph(0), opt, &s));
    assert_int_equal(minfer_session_thread_count(s), 3);
    assert_int_equal(minfer_session_thread_count(NULL), 0);
    minfer_session_free(s);
    minfer_options_free(opt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_dim_by_name),
        cmocka_unit_test(test_set_input_dim_by_axis),
        cmocka_unit_test(test_dim_errors),
        cmocka_unit_test(test_wrong_output_lists_outputs),
        cmocka_unit_test(test_thread_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
