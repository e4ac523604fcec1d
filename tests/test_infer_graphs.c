/*
 * Small graphs whose intermediate element types come only from inference
 * (no value_info), run end to end through a session on every provider list
 * built here. Regression tests for real models that failed at session build:
 *
 *  - Resize with roi/scales (or sizes) inputs feeding a Conv and a Concat
 *    (PaddleOCR, SSDLite, LR-ASPP): the Resize output's type must be X's,
 *    whatever the types of roi, scales and sizes, or the Conv sees "X and W
 *    types differ" and the Concat "input types differ" on every list.
 *
 * The provider lists come from argv (default "cpu"), so CMake runs the same
 * binary once per list that this build has.
 */
#include <stdlib.h>

#include "minfer/builder.h"
#include "test_util.h"

static const char *const *lists;
static int n_lists;

static minfer_session *session_on(const minfer_graph_builder *b, const char *list) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, list));
    minfer_status st = minfer_session_create_from_builder(b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("providers '%s': session build failed: %s", list, minfer_last_error());
    return s;
}

static void add_init(minfer_graph_builder *b, const char *name, minfer_dtype dt,
                     const int64_t *dims, size_t rank, const void *values) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(dt, dims, rank, &t));
    memcpy(minfer_tensor_data(t), values, minfer_tensor_nbytes(t));
    assert_ok(minfer_builder_add_initializer(b, name, t));
    minfer_tensor_free(t);
}

/* x [1,1,2,2] = 1..4 -> Resize nearest x2 (roi empty, scales float) -> up
 * [1,1,4,4]; Conv with a 1x1 weight of 2 and bias 1 -> y = 2 * up + 1;
 * Concat(up, y) on the channels -> z [1,2,4,4]. by_sizes: the target comes
 * as int64 sizes instead of scales (scales omitted). */
static minfer_graph_builder *resize_conv_graph(int by_sizes, int64_t opset) {
    minfer_graph_builder *b = NULL;
    int64_t xdims[4] = {1, 1, 2, 2}, wdims[4] = {1, 1, 1, 1}, one = 1, four = 4, zero = 0;
    float w = 2.0f, bias = 1.0f, scales[4] = {1, 1, 2, 2};
    int64_t sizes[4] = {1, 1, 4, 4};
    size_t n;
    assert_ok(minfer_builder_create(opset, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xdims, 4, NULL));
    add_init(b, "W", MINFER_DTYPE_FLOAT, wdims, 4, &w);
    add_init(b, "B", MINFER_DTYPE_FLOAT, &one, 1, &bias);
    add_init(b, "roi", MINFER_DTYPE_FLOAT, &zero, 1, scales); /* an empty roi */
    if (by_sizes)
        add_init(b, "sizes", MINFER_DTYPE_INT64, &four, 1, sizes);
    else
        add_init(b, "scales", MINFER_DTYPE_FLOAT, &four, 1, scales);
    const char *rin_scales[] = {"x", "roi", "scales"}, *rin_sizes[] = {"x", "roi", "", "sizes"};
    const char *rout[] = {"up"};
    assert_ok(minfer_builder_add_node(b, "Resize", NULL, "resize", by_sizes ? rin_sizes : rin_scales,
                                      by_sizes ? 4 : 3, rout, 1, &n));
    assert_ok(minfer_builder_set_attr_string(b, n, "mode", "nearest"));
    const char *cin[] = {"up", "W", "B"}, *cout[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Conv", NULL, "conv", cin, 3, cout, 1, NULL));
    const char *kin[] = {"up", "y"}, *kout[] = {"z"};
    assert_ok(minfer_builder_add_node(b, "Concat", NULL, "concat", kin, 2, kout, 1, &n));
    assert_ok(minfer_builder_set_attr_int(b, n, "axis", 1));
    assert_ok(minfer_builder_add_output(b, "z"));
    return b;
}

static void check_resize_conv(int by_sizes, int64_t opset) {
    minfer_graph_builder *b = resize_conv_graph(by_sizes, opset);
    int64_t xdims[4] = {1, 1, 2, 2}, zdims[4] = {1, 2, 4, 4};
    float xv[4] = {1, 2, 3, 4}, want[32];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 4; c++) {
            float v = xv[(r / 2) * 2 + c / 2];
            want[r * 4 + c] = v;
            want[16 + r * 4 + c] = 2 * v + 1;
        }
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, xdims, 4, &x));
    memcpy(minfer_tensor_data(x), xv, sizeof xv);
    for (int l = 0; l < n_lists; l++) {
        minfer_session *s = session_on(b, lists[l]);
        const char *names[] = {"x"};
        const minfer_tensor *ins[] = {x};
        minfer_tensor *z = NULL;
        assert_ok(minfer_session_run(s, names, ins, 1, NULL, &z, 1));
        assert_tensor_f32(z, zdims, 4, want);
        minfer_tensor_free(z);
        minfer_session_free(s);
    }
    minfer_tensor_free(x);
    minfer_builder_free(b);
}

static void test_resize_scales_conv(void **state) {
    (void)state;
    check_resize_conv(0, 13);
    check_resize_conv(0, 11);
}

static void test_resize_sizes_conv(void **state) {
    (void)state;
    check_resize_conv(1, 13);
    check_resize_conv(1, 11);
}

int main(int argc, char **argv) {
    static const char *const dflt[] = {"cpu"};
    lists = argc > 1 ? (const char *const *)(argv + 1) : dflt;
    n_lists = argc > 1 ? argc - 1 : 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resize_scales_conv),
        cmocka_unit_test(test_resize_sizes_conv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
