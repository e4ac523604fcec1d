/*
 * Custom-operator plugins (include/minfer/plugin.h, docs/plugins.md): the
 * example plugin through the public API, the loader's checks against the
 * fake plugins of tests/fake_plugins, the order sessions and options may be
 * freed in, errors from a plugin's callbacks, folding only of deterministic
 * ops, discovery from the build tree, MINFER_PLUGINS, and a plugin node
 * between oneDNN nodes.
 *
 * EXAMPLE_PLUGIN and FAKE_PLUGIN_DIR come from tests/CMakeLists.txt.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "minfer/builder.h"
#include "test_util.h"

#define FAKE(name) FAKE_PLUGIN_DIR "/libminfer_plugin_" name ".so"

static float swish(float x, float alpha) { return x / (1.0f + expf(-alpha * x)); }

/* x [2,3] -> OP (domain) -> y; alpha set when >= 0. */
static minfer_graph_builder *one_op(const char *op, const char *domain, float alpha) {
    minfer_graph_builder *b = NULL;
    int64_t dims[2] = {2, 3};
    const char *in[] = {"x"}, *out[] = {"y"};
    size_t node;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_opset(b, domain, 1));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL));
    assert_ok(minfer_builder_add_node(b, op, domain, "the_node", in, 1, out, 1, &node));
    if (alpha >= 0)
        assert_ok(minfer_builder_set_attr_float(b, node, "alpha", alpha));
    assert_ok(minfer_builder_add_output(b, "y"));
    return b;
}

static const float X[6] = {-3.0f, -1.0f, -0.25f, 0.0f, 0.5f, 2.0f};

/* Runs s on X and checks y against f(x) = swish(x, alpha). */
static void check_swish_run(minfer_session *s, float alpha) {
    int64_t dims[2] = {2, 3};
    minfer_tensor *x = NULL, *y = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, (void *)X, sizeof X, &x));
    const char *in_names[] = {"x"}, *out_names[] = {"y"};
    assert_ok(minfer_session_run(s, in_names, (const minfer_tensor *const *)&x, 1, out_names, &y,
                                 1));
    float want[6];
    for (int i = 0; i < 6; i++)
        want[i] = swish(X[i], alpha);
    assert_tensor_f32(y, dims, 2, want);
    minfer_tensor_free(y);
    minfer_tensor_free(x);
}

static const char *placement_of(const minfer_session *s, const char *node) {
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_ok(minfer_session_node_placement(s, i, &p));
        if (strcmp(p.node_name, node) == 0)
            return p.provider;
    }
    fail_msg("no node %s", node);
    return NULL;
}

/* ---- the example plugin ------------------------------------------------- */

static void test_example_by_path(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, EXAMPLE_PLUGIN));
    minfer_graph_builder *b = one_op("Swish", "com.example", 2.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    assert_string_equal(placement_of(s, "the_node"), "plugin");
    /* The plugin's inference gave the output its type and shape. */
    minfer_value_info info;
    assert_ok(minfer_session_output_info(s, 0, &info));
    assert_int_equal(info.dtype, MINFER_DTYPE_FLOAT);
    assert_int_equal(info.rank, 2);
    assert_int_equal(info.dims[0], 2);
    assert_int_equal(info.dims[1], 3);
    check_swish_run(s, 2.0f);
    check_swish_run(s, 2.0f); /* a second run on the same plan */
    minfer_session_free(s);
    minfer_builder_free(b);
    minfer_options_free(opt);
}

static void test_example_by_name_default_alpha(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    /* By name: found in the build tree's plugin directory. */
    assert_ok(minfer_options_add_plugin(opt, "example"));
    minfer_graph_builder *b = one_op("Swish", "com.example", -1.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    check_swish_run(s, 1.0f);
    minfer_session_free(s);
    minfer_builder_free(b);
    minfer_options_free(opt);
}

/* A bad attribute is reported by the plugin's inference, with the node. */
static void test_example_bad_attribute(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, EXAMPLE_PLUGIN));
    minfer_graph_builder *b = one_op("Swish", "com.example", INFINITY);
    assert_int_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_ERR_MODEL);
    assert_null(s);
    assert_error_mentions("the_node");
    assert_error_mentions("'alpha'");
    assert_error_mentions("plugin 'example'");
    minfer_builder_free(b);
    minfer_options_free(opt);
}

/* ---- load errors ------------------------------------------------------- */

static void test_bad_abi(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_int_equal(minfer_options_add_plugin(opt, FAKE("fpbadabi")), MINFER_ERR_PROVIDER);
    assert_error_mentions("libminfer_plugin_fpbadabi.so");
    assert_error_mentions("plugin ABI version 99");
    minfer_options_free(opt);
}

static void test_missing_symbol(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_int_equal(minfer_options_add_plugin(opt, FAKE("fpnosym")), MINFER_ERR_PROVIDER);
    assert_error_mentions("libminfer_plugin_fpnosym.so");
    assert_error_mentions("does not export minfer_plugin_entry");
    minfer_options_free(opt);
}

static void test_register_errors(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_int_not_equal(minfer_options_add_plugin(opt, FAKE("fpregfail")), MINFER_OK);
    assert_error_mentions("needs a CPU feature this machine lacks");
    assert_error_mentions("libminfer_plugin_fpregfail.so");
    assert_int_not_equal(minfer_options_add_plugin(opt, FAKE("fpbadop")), MINFER_OK);
    assert_error_mentions("com.fake:NoCompute leaves infer or compute NULL");
    assert_int_equal(minfer_options_add_plugin(opt, "no-such-plugin"), MINFER_ERR_NOT_FOUND);
    assert_error_mentions("libminfer_plugin_no-such-plugin.so");
    assert_int_equal(minfer_options_add_plugin(opt, "./no/such/file.so"), MINFER_ERR_NOT_FOUND);
    assert_int_equal(minfer_options_add_plugin(opt, "Bad Name"), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_options_add_plugin(NULL, "example"), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_options_add_plugin(opt, NULL), MINFER_ERR_INVALID_ARG);
    minfer_options_free(opt);
}

/* Two plugins with com.example Swish: the session names both files. */
static void test_duplicate_op(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, EXAMPLE_PLUGIN));
    assert_ok(minfer_options_add_plugin(opt, FAKE("fptwin")));
    minfer_graph_builder *b = one_op("Swish", "com.example", 1.0f);
    assert_int_not_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_OK);
    assert_null(s);
    assert_error_mentions("com.example:Swish");
    assert_error_mentions("libminfer_plugin_example.so");
    assert_error_mentions("libminfer_plugin_fptwin.so");
    minfer_builder_free(b);
    minfer_options_free(opt);
}

/* ---- life cycle --------------------------------------------------------- */

/* The options go first; the session keeps the library. */
static void test_options_freed_first(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, EXAMPLE_PLUGIN));
    minfer_graph_builder *b = one_op("Swish", "com.example", 0.5f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    minfer_builder_free(b);
    check_swish_run(s, 0.5f);
    minfer_session_free(s);
}

/* Two sessions share one library; the first freed, the second runs; then a
 * third session from the same options after both are gone. */
static void test_sessions_share(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s1 = NULL, *s2 = NULL, *s3 = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, EXAMPLE_PLUGIN));
    minfer_graph_builder *b = one_op("Swish", "com.example", 3.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s1));
    assert_ok(minfer_session_create_from_builder(b, opt, &s2));
    check_swish_run(s1, 3.0f);
    minfer_session_free(s1);
    check_swish_run(s2, 3.0f);
    minfer_session_free(s2);
    assert_ok(minfer_session_create_from_builder(b, opt, &s3));
    check_swish_run(s3, 3.0f);
    minfer_session_free(s3);
    minfer_builder_free(b);
    minfer_options_free(opt);
}

/* Every create is paired with a destroy, and the library is unloaded
 * when the last session goes (the test's own dlopen keeps the counters). */
static void test_create_destroy_pairs(void **state) {
    (void)state;
    void *h = dlopen(FAKE("fpops"), RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    int *creates = dlsym(h, "fp_creates"), *destroys = dlsym(h, "fp_destroys");
    assert_non_null(creates);
    assert_non_null(destroys);
    *creates = *destroys = 0;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, FAKE("fpops")));
    minfer_graph_builder *b = one_op("AddOne", "com.fake", -1.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    int64_t dims[2] = {2, 3};
    minfer_tensor *x = NULL, *y = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, (void *)X, sizeof X, &x));
    const char *in_names[] = {"x"}, *out_names[] = {"y"};
    assert_ok(minfer_session_run(s, in_names, (const minfer_tensor *const *)&x, 1, out_names, &y,
                                 1));
    float want[6];
    for (int i = 0; i < 6; i++)
        want[i] = X[i] + 1.0f;
    assert_tensor_f32(y, dims, 2, want);
    minfer_tensor_free(y);
    minfer_tensor_free(x);
    assert_true(*creates >= 1);
    minfer_session_free(s);
    assert_int_equal(*creates, *destroys);
    minfer_builder_free(b);
    minfer_options_free(opt);
    dlclose(h);
}

/* ---- errors from the plugin's callbacks --------------------------------- */

static void test_callback_errors(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, FAKE("fpops")));

    minfer_graph_builder *b = one_op("FailInfer", "com.fake", -1.0f);
    assert_int_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_ERR_TYPE);
    assert_error_mentions("the_node");
    assert_error_mentions("FailInfer dislikes input 0");
    minfer_builder_free(b);

    b = one_op("FailCreate", "com.fake", -1.0f);
    assert_int_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_ERR_MODEL);
    assert_error_mentions("the_node");
    assert_error_mentions("FailCreate has no weights");
    minfer_builder_free(b);

    b = one_op("FailCompute", "com.fake", -1.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    int64_t dims[2] = {2, 3};
    minfer_tensor *x = NULL, *y = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, (void *)X, sizeof X, &x));
    const char *in_names[] = {"x"}, *out_names[] = {"y"};
    assert_int_equal(minfer_session_run(s, in_names, (const minfer_tensor *const *)&x, 1,
                                        out_names, &y, 1),
                     MINFER_ERR_RUNTIME);
    assert_null(y);
    assert_error_mentions("the_node");
    assert_error_mentions("FailCompute refuses on purpose");
    assert_error_mentions("plugin 'fpops'");
    minfer_tensor_free(x);
    minfer_session_free(s);
    minfer_builder_free(b);
    minfer_options_free(opt);
}

/* A plugin op in the default domain (one ONNX does not define). */
static void test_default_domain_op(void **state) {
    (void)state;
    minfer_graph_builder *b = NULL;
    int64_t dims[2] = {2, 3};
    const char *in[] = {"x"}, *out[] = {"y"};
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL));
    assert_ok(minfer_builder_add_node(b, "AddOneDefault", NULL, "the_node", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, FAKE("fpops")));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    assert_string_equal(placement_of(s, "the_node"), "plugin");
    minfer_value_info info;
    assert_ok(minfer_session_output_info(s, 0, &info));
    assert_int_equal(info.rank, 2); /* the plugin's inference */
    minfer_session_free(s);
    minfer_options_free(opt);
    minfer_builder_free(b);
}

/* ---- folding: only deterministic ops ------------------------------------ */

/* c (constant) -> OP -> t; y = x + t. */
static minfer_graph_builder *const_op(const char *op) {
    minfer_graph_builder *b = NULL;
    int64_t dims[2] = {2, 3};
    minfer_tensor *c = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, (void *)X, sizeof X, &c));
    const char *in1[] = {"c"}, *out1[] = {"t"}, *in2[] = {"x", "t"}, *out2[] = {"y"};
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_opset(b, "com.fake", 1));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL));
    assert_ok(minfer_builder_add_initializer(b, "c", c));
    assert_ok(minfer_builder_add_node(b, op, "com.fake", "the_node", in1, 1, out1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Add", NULL, "add", in2, 2, out2, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_tensor_free(c);
    return b;
}

static void test_fold_only_deterministic(void **state) {
    (void)state;
    const char *ops[] = {"AddOne", "AddOneDet"};
    const char *want_placement[] = {"plugin", "(constant)"};
    for (int k = 0; k < 2; k++) {
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        assert_ok(minfer_options_create(&opt));
        assert_ok(minfer_options_add_plugin(opt, FAKE("fpops")));
        minfer_graph_builder *b = const_op(ops[k]);
        assert_ok(minfer_session_create_from_builder(b, opt, &s));
        assert_string_equal(placement_of(s, "the_node"), want_placement[k]);
        int64_t dims[2] = {2, 3};
        minfer_tensor *x = NULL, *y = NULL;
        assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, (void *)X, sizeof X, &x));
        const char *in_names[] = {"x"}, *out_names[] = {"y"};
        assert_ok(minfer_session_run(s, in_names, (const minfer_tensor *const *)&x, 1, out_names,
                                     &y, 1));
        float want[6];
        for (int i = 0; i < 6; i++)
            want[i] = X[i] + X[i] + 1.0f;
        assert_tensor_f32(y, dims, 2, want);
        minfer_tensor_free(y);
        minfer_tensor_free(x);
        minfer_session_free(s);
        minfer_builder_free(b);
        minfer_options_free(opt);
    }
}

/* ---- discovery and MINFER_PLUGINS --------------------------------------- */

/* No plugin named: a node in a domain nobody serves makes the session look
 * in the plugin directories (the build tree's here), where the example is. */
static void test_discovered(void **state) {
    (void)state;
    minfer_session *s = NULL;
    minfer_graph_builder *b = one_op("Swish", "com.example", 1.5f);
    assert_ok(minfer_session_create_from_builder(b, NULL, &s));
    assert_string_equal(placement_of(s, "the_node"), "plugin");
    check_swish_run(s, 1.5f);
    minfer_session_free(s);
    minfer_builder_free(b);
}

/* An op no plugin has: the error says so, naming the node. */
static void test_unserved_op(void **state) {
    (void)state;
    minfer_session *s = NULL;
    minfer_graph_builder *b = one_op("Nothing", "com.nobody", -1.0f);
    assert_int_not_equal(minfer_session_create_from_builder(b, NULL, &s), MINFER_OK);
    assert_error_mentions("the_node");
    assert_error_mentions("no loaded plugin has com.nobody:Nothing");
    minfer_builder_free(b);
}

/* ---- a hostile plugin (tests/fake_plugins/fphostile.c, issue 39) -------- */

/* The last error is a printable string of bounded length naming the node
 * and the plugin. */
static void assert_clean_error(void) {
    const char *e = minfer_last_error();
    size_t n = strnlen(e, 4096);
    assert_true(n < 4096);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)e[i] < 0x20)
            fail_msg("control byte 0x%02x at %zu of the message: %s", (unsigned char)e[i], i, e);
    assert_error_mentions("the_node");
    assert_error_mentions("fphostile");
}

static void test_hostile_plugin(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    int64_t dims[2] = {2, 3};
    const char *in_names[] = {"x"}, *out_names[] = {"y"};
    minfer_tensor *x = NULL, *y = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, (void *)X, sizeof X, &x));

    /* register_ops creating sessions: refused with plugins, no deadlock
     * (the test's timeout catches one) */
    assert_int_equal(setenv("FPH_REENTER", "1", 1), 0);
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_add_plugin(opt, FAKE("fphostile")));
    minfer_graph_builder *b = one_op("NoAlloc", "com.fake", -1.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    assert_int_equal(unsetenv("FPH_REENTER"), 0);
    minfer_session_free(s);
    minfer_builder_free(b);
    void *h = dlopen(FAKE("fphostile"), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    assert_non_null(h);
    int *reenter = dlsym(h, "fph_reenter_status"), *plain = dlsym(h, "fph_reenter_plain");
    const char *reenter_error = dlsym(h, "fph_reenter_error");
    assert_non_null(reenter);
    assert_non_null(plain);
    assert_int_equal(*reenter, MINFER_ERR_INVALID_ARG);
    assert_non_null(strstr(reenter_error, "register_ops may not"));
    assert_int_equal(*plain, MINFER_OK);

    /* an error buffer filled without a NUL: read within it, control bytes
     * replaced (ASan: no read past the host's buffer) */
    b = one_op("NoNulInfer", "com.fake", -1.0f);
    assert_int_equal(minfer_session_create_from_builder(b, opt, &s), MINFER_ERR_TYPE);
    assert_clean_error();
    assert_error_mentions("AAAAAA");
    minfer_builder_free(b);
    b = one_op("NoNulCompute", "com.fake", -1.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    assert_int_equal(minfer_session_run(s, in_names, (const minfer_tensor *const *)&x, 1,
                                        out_names, &y, 1),
                     MINFER_ERR_RUNTIME);
    assert_null(y);
    assert_clean_error();
    minfer_session_free(s);
    minfer_builder_free(b);

    /* an output left unallocated: an error naming node, plugin and output */
    b = one_op("NoAlloc", "com.fake", -1.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    assert_int_not_equal(minfer_session_run(s, in_names, (const minfer_tensor *const *)&x, 1,
                                            out_names, &y, 1),
                         MINFER_OK);
    assert_null(y);
    assert_clean_error();
    assert_error_mentions("unallocated");
    minfer_session_free(s);

    /* three sessions, each loading and releasing it: one constructor run */
    for (int i = 0; i < 3; i++) {
        assert_ok(minfer_session_create_from_builder(b, opt, &s));
        minfer_session_free(s);
    }
    int *constructed = dlsym(h, "fph_constructed");
    assert_non_null(constructed);
    assert_int_equal(*constructed, 1);
    dlclose(h);
    minfer_builder_free(b);
    minfer_tensor_free(x);
    minfer_options_free(opt);
}

/* A plugin in a directory every user may write is refused by name. */
static void test_writable_directory_refused(void **state) {
    (void)state;
    char dir[] = "/tmp/minfer-plugin-dir-XXXXXX", path[128], cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/libminfer_plugin_fpops.so", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", FAKE("fpops"), path);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    /* checked when it is added (the library is loaded then) */
    assert_int_equal(minfer_options_add_plugin(opt, path), MINFER_ERR_PROVIDER);
    assert_error_mentions("writable by every user");
    assert_error_mentions(dir);
    assert_int_equal(chmod(dir, 0755), 0);
    assert_ok(minfer_options_add_plugin(opt, path));
    minfer_graph_builder *b = one_op("AddOne", "com.fake", -1.0f);
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_session_free(s);
    minfer_builder_free(b);
    minfer_options_free(opt);
    unlink(path);
    rmdir(dir);
}

static void test_env(void **state) {
    (void)state;
    minfer_session *s = NULL;
    minfer_graph_builder *b = one_op("AddOne", "com.fake", -1.0f);
    assert_ok(setenv("MINFER_PLUGINS", " " FAKE("fpops") " , example", 1));
    assert_ok(minfer_session_create_from_builder(b, NULL, &s));
    assert_string_equal(placement_of(s, "the_node"), "plugin");
    minfer_session_free(s);
    assert_ok(setenv("MINFER_PLUGINS", FAKE("fpbadabi"), 1));
    assert_int_equal(minfer_session_create_from_builder(b, NULL, &s), MINFER_ERR_PROVIDER);
    assert_error_mentions("MINFER_PLUGINS");
    assert_error_mentions("plugin ABI version 99");
    assert_ok(unsetenv("MINFER_PLUGINS"));
    minfer_builder_free(b);
}

/* ---- a plugin node between oneDNN nodes --------------------------------- */

/* x [1,2,4,4] -> Conv(w) -> Swish -> Conv(w) -> y, on providers. */
static minfer_tensor *conv_swish_conv(const char *providers, size_t *copies, const char **place) {
    minfer_graph_builder *b = NULL;
    int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {2, 2, 1, 1};
    float w[4] = {0.5f, -1.0f, 2.0f, 0.25f}, xv[32];
    for (int i = 0; i < 32; i++)
        xv[i] = (float)(i % 7) * 0.3f - 1.0f;
    minfer_tensor *wt = NULL, *x = NULL, *y = NULL;
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, wd, 4, w, sizeof w, &wt));
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_opset(b, "com.example", 1));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, xd, 4, NULL));
    assert_ok(minfer_builder_add_initializer(b, "w", wt));
    const char *i1[] = {"x", "w"}, *o1[] = {"a"}, *i2[] = {"a"}, *o2[] = {"s"},
               *i3[] = {"s", "w"}, *o3[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Conv", NULL, "conv1", i1, 2, o1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Swish", "com.example", "the_node", i2, 1, o2, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Conv", NULL, "conv2", i3, 2, o3, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers));
    assert_ok(minfer_options_add_plugin(opt, EXAMPLE_PLUGIN));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    assert_ok(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, xd, 4, xv, sizeof xv, &x));
    const char *in_names[] = {"x"}, *out_names[] = {"y"};
    assert_ok(minfer_session_run(s, in_names, (const minfer_tensor *const *)&x, 1, out_names, &y,
                                 1));
    minfer_memory_info mi;
    assert_ok(minfer_session_memory_info(s, &mi));
    *copies = mi.copies_per_run;
    place[0] = placement_of(s, "conv1");
    place[1] = placement_of(s, "the_node");
    place[2] = placement_of(s, "conv2");
    /* The strings live in the session: compare before freeing. */
    static char kept[3][16];
    for (int i = 0; i < 3; i++) {
        snprintf(kept[i], sizeof kept[i], "%s", place[i]);
        place[i] = kept[i];
    }
    minfer_tensor_free(x);
    minfer_tensor_free(wt);
    minfer_session_free(s);
    minfer_options_free(opt);
    minfer_builder_free(b);
    return y;
}

static void test_between_onednn(void **state) {
    (void)state;
#ifdef HAVE_ONEDNN
    size_t copies_cpu, copies_dnn;
    const char *pc[3], *pd[3];
    minfer_tensor *ref = conv_swish_conv("cpu", &copies_cpu, pc);
    assert_string_equal(pc[1], "plugin");
    minfer_tensor *got = conv_swish_conv("onednn,cpu", &copies_dnn, pd);
    assert_string_equal(pd[0], "onednn");
    assert_string_equal(pd[1], "plugin");
    assert_string_equal(pd[2], "onednn");
    /* onednn -> host before the plugin node, host -> onednn after it. */
    assert_true(copies_dnn >= 2);
    assert_int_equal(copies_cpu, 0);
    assert_tensor_f32(got, minfer_tensor_dims(ref), minfer_tensor_rank(ref),
                      (const float *)minfer_tensor_data(ref));
    minfer_tensor_free(ref);
    minfer_tensor_free(got);
#else
    skip();
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_by_path),
        cmocka_unit_test(test_example_by_name_default_alpha),
        cmocka_unit_test(test_example_bad_attribute),
        cmocka_unit_test(test_bad_abi),
        cmocka_unit_test(test_missing_symbol),
        cmocka_unit_test(test_register_errors),
        cmocka_unit_test(test_duplicate_op),
        cmocka_unit_test(test_options_freed_first),
        cmocka_unit_test(test_sessions_share),
        cmocka_unit_test(test_create_destroy_pairs),
        cmocka_unit_test(test_callback_errors),
        cmocka_unit_test(test_default_domain_op),
        cmocka_unit_test(test_fold_only_deterministic),
        cmocka_unit_test(test_discovered),
        cmocka_unit_test(test_unserved_op),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_hostile_plugin),
        cmocka_unit_test(test_writable_directory_refused),
        cmocka_unit_test(test_between_onednn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
