/*
 * Diagnostics through the public API (docs/diagnostics.md): the NaN/Inf
 * check, the log callback, placement reasons and strict placement (with the
 * fakerefuse test provider, found through MINFER_PROVIDER_PATH, which ctest
 * sets), run statistics, node profiles and the trace, and the DOT picture.
 */
#include <stdlib.h>
#include <unistd.h>

#include "minfer/builder.h"
#include "test_util.h"

/* ---- graphs ---------------------------------------------------------------- */

/* y = Neg(Log(x - c)), x float [4] an input, c = {10, 10, 10, 10}: the
 * nodes depend on x, so nothing is folded at build, and x < 10 makes Log's
 * output NaN at run time; Neg passes the NaN on. Nodes "sub_node",
 * "log_node", "neg_node". */
static minfer_graph_builder *nan_graph(void) {
    minfer_graph_builder *b = NULL;
    const int64_t dims[] = {4};
    const float c[] = {10, 10, 10, 10};
    minfer_tensor *t = NULL;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 1, &t));
    memcpy(minfer_tensor_data(t), c, sizeof c);
    assert_ok(minfer_builder_add_initializer(b, "c", t));
    minfer_tensor_free(t);
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 1, NULL));
    const char *in1[] = {"x", "c"}, *out1[] = {"d"};
    const char *in2[] = {"d"}, *out2[] = {"l"};
    const char *in3[] = {"l"}, *out3[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Sub", NULL, "sub_node", in1, 2, out1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Log", NULL, "log_node", in2, 1, out2, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Neg", NULL, "neg_node", in3, 1, out3, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    return b;
}

/* y = Relu(x + bias), x and bias float [2, 3]; nodes "add_node" (which
 * fakerefuse runs) and "relu_node" (which it refuses). */
static minfer_graph_builder *add_relu_graph(void) {
    minfer_graph_builder *b = NULL;
    const int64_t dims[] = {2, 3};
    const float bias[] = {1, -1, 1, -1, 1, -1};
    minfer_tensor *t = NULL;
    assert_ok(minfer_builder_create(13, &b));
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

/* Creates a session from b with the given options and frees b. */
static minfer_status create(minfer_graph_builder *b, const minfer_options *opt,
                            minfer_session **out) {
    *out = NULL;
    minfer_status st = minfer_session_create_from_builder(b, opt, out);
    minfer_builder_free(b);
    return st;
}

/* Options with a provider list. */
static minfer_options *options(const char *providers) {
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers));
    return opt;
}

/* Runs a one-input session on x (n floats of shape dims); *y gets the output. */
static minfer_status run1(minfer_session *s, const float *x, const int64_t *dims, size_t rank,
                          minfer_tensor **y) {
    minfer_tensor *tx = NULL;
    int64_t n = 1;
    for (size_t i = 0; i < rank; i++)
        n *= dims[i];
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, rank, &tx));
    memcpy(minfer_tensor_data(tx), x, (size_t)n * sizeof *x);
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {tx};
    *y = NULL;
    minfer_status st = minfer_session_run(s, names, ins, 1, NULL, y, 1);
    minfer_tensor_free(tx);
    return st;
}

static const float nan_x[] = {1, 2, 3, 11}; /* three elements below c: NaN */
static const int64_t nan_dims[] = {4};

/* The placement of a node, by name. */
static minfer_node_placement placement_of(const minfer_session *s, const char *node) {
    minfer_node_placement p;
    memset(&p, 0, sizeof p);
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        assert_ok(minfer_session_node_placement(s, i, &p));
        if (strcmp(p.node_name, node) == 0)
            return p;
    }
    fail_msg("node %s not in the session", node);
    return p;
}

/* A whole small file as a NUL-terminated string (caller frees). */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* A fresh temporary file name (the file exists, empty). */
static void temp_path(char *buf, size_t size, const char *tag) {
    snprintf(buf, size, "/tmp/minfer-test-diag-%s-XXXXXX", tag);
    int fd = mkstemp(buf);
    assert_true(fd >= 0);
    close(fd);
}

/* ---- NaN/Inf check ----------------------------------------------------------- */

static void test_nan_check_names_first_node(void **state) {
    (void)state;
    minfer_options *opt = options("cpu");
    minfer_session *s = NULL;
    minfer_tensor *y = NULL;
    assert_ok(minfer_options_set_check_nan(opt, 1));
    assert_ok(create(nan_graph(), opt, &s));
    assert_int_equal(run1(s, nan_x, nan_dims, 1, &y), MINFER_ERR_RUNTIME);
    assert_null(y);
    /* Log made the NaN; Neg, which passes it on, must not be blamed. */
    assert_error_mentions("log_node");
    assert_error_mentions("NaN");
    if (strstr(minfer_last_error(), "neg_node"))
        fail_msg("the NaN check blames a later node: %s", minfer_last_error());
    /* Clean inputs run. */
    const float ok_x[] = {11, 12, 13, 14};
    assert_ok(run1(s, ok_x, nan_dims, 1, &y));
    minfer_tensor_free(y);
    minfer_session_free(s);
    minfer_options_free(opt);
}

/* The case: y = x + Log(c) with c a negative constant. Log is
 * folded while the session is built, so the check names it then, at every
 * optimization level (the optimizer folds at 1-3, the plan at 0). */
static void test_nan_check_names_folded_constant(void **state) {
    (void)state;
    for (int level = 0; level <= 3; level++) {
        minfer_graph_builder *b = NULL;
        const int64_t dims[] = {2};
        const float c[] = {-1.0f, 2.0f};
        minfer_tensor *t = NULL;
        assert_ok(minfer_builder_create(13, &b));
        assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 1, &t));
        memcpy(minfer_tensor_data(t), c, sizeof c);
        assert_ok(minfer_builder_add_initializer(b, "c", t));
        minfer_tensor_free(t);
        assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 1, NULL));
        const char *in1[] = {"c"}, *out1[] = {"l"};
        const char *in2[] = {"x", "l"}, *out2[] = {"y"};
        assert_ok(minfer_builder_add_node(b, "Log", NULL, "log_of_constant", in1, 1, out1, 1,
                                          NULL));
        assert_ok(minfer_builder_add_node(b, "Add", NULL, "add_node", in2, 2, out2, 1, NULL));
        assert_ok(minfer_builder_add_output(b, "y"));
        minfer_options *opt = options("cpu");
        minfer_session *s = NULL;
        assert_ok(minfer_options_set_check_nan(opt, 1));
        assert_ok(minfer_options_set_optimization_level(opt, level));
        minfer_status st = minfer_session_create_from_builder(b, opt, &s);
        if (st == MINFER_OK) {
            /* Not folded at build: then the run must name it. */
            minfer_tensor *y = NULL;
            const float x[] = {1, 2};
            st = run1(s, x, dims, 1, &y);
            minfer_tensor_free(y);
        }
        if (st != MINFER_ERR_RUNTIME)
            fail_msg("level %d: status %s (%s)", level, minfer_status_str(st),
                     minfer_last_error());
        assert_error_mentions("log_of_constant");
        assert_error_mentions("NaN");
        minfer_session_free(s);
        minfer_options_free(opt);
        minfer_builder_free(b);
    }
}

static void test_nan_check_reports_inf(void **state) {
    (void)state;
    minfer_options *opt = options("cpu");
    minfer_session *s = NULL;
    minfer_tensor *y = NULL;
    const float x[] = {10, 11, 12, 13}; /* log(0) = -Inf */
    assert_ok(minfer_options_set_check_nan(opt, 1));
    assert_ok(create(nan_graph(), opt, &s));
    assert_int_equal(run1(s, x, nan_dims, 1, &y), MINFER_ERR_RUNTIME);
    assert_error_mentions("log_node");
    assert_error_mentions("Inf");
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_nan_check_off_lets_nan_through(void **state) {
    (void)state;
    minfer_options *opt = options("cpu");
    minfer_session *s = NULL;
    minfer_tensor *y = NULL;
    assert_ok(minfer_options_set_check_nan(opt, 0)); /* overrides MINFER_CHECK_NAN too */
    assert_ok(create(nan_graph(), opt, &s));
    assert_ok(run1(s, nan_x, nan_dims, 1, &y));
    const float *v = minfer_tensor_data(y);
    assert_true(v[0] != v[0]); /* NaN delivered, not caught */
    assert_true(fabsf(v[3]) < 1e-6f); /* -log(1) */
    minfer_tensor_free(y);
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_nan_check_from_environment(void **state) {
    (void)state;
    minfer_options *opt = options("cpu");
    minfer_session *s = NULL;
    minfer_tensor *y = NULL;
    setenv("MINFER_CHECK_NAN", "1", 1);
    minfer_status st = create(nan_graph(), opt, &s);
    unsetenv("MINFER_CHECK_NAN");
    assert_ok(st);
    assert_int_equal(run1(s, nan_x, nan_dims, 1, &y), MINFER_ERR_RUNTIME);
    assert_error_mentions("log_node");
    minfer_session_free(s);
    minfer_options_free(opt);
}

/* ---- logging ----------------------------------------------------------------- */

typedef struct log_sink {
    int count, above_level;
    int build_phase, placement_summary, declined_relu, shapes;
    minfer_log_level level;
} log_sink;

static void collect(void *user, minfer_log_level level, const char *message) {
    log_sink *k = user;
    k->count++;
    if (level > k->level)
        k->above_level++;
    if (strstr(message, "assign providers") && strstr(message, " ms"))
        k->build_phase++;
    if (strstr(message, "nodes on provider 'cpu'"))
        k->placement_summary++;
    if (strstr(message, "relu_node") && strstr(message, "fakerefuse refuses Relu"))
        k->declined_relu++;
    if (strstr(message, "relu_node") && strstr(message, "[2,3]"))
        k->shapes++;
}

static void test_log_callback_info(void **state) {
    (void)state;
    minfer_options *opt = options("fakerefuse,cpu");
    minfer_session *s = NULL;
    log_sink k = {0};
    k.level = MINFER_LOG_INFO;
    assert_ok(minfer_options_set_log_level(opt, MINFER_LOG_INFO));
    assert_ok(minfer_options_set_log_callback(opt, collect, &k));
    assert_ok(create(add_relu_graph(), opt, &s));
    assert_true(k.count > 0);
    assert_int_equal(k.above_level, 0);
    assert_true(k.build_phase >= 1);
    assert_int_equal(k.placement_summary, 1);
    assert_int_equal(k.declined_relu, 0); /* a verbose message */
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_log_callback_verbose(void **state) {
    (void)state;
    minfer_options *opt = options("fakerefuse,cpu");
    minfer_session *s = NULL;
    log_sink k = {0};
    k.level = MINFER_LOG_VERBOSE;
    assert_ok(minfer_options_set_log_level(opt, MINFER_LOG_VERBOSE));
    assert_ok(minfer_options_set_log_callback(opt, collect, &k));
    assert_ok(create(add_relu_graph(), opt, &s));
    assert_true(k.declined_relu >= 1);
    assert_true(k.shapes >= 1);
    minfer_session_free(s);
    minfer_options_free(opt);
}

/* ---- placement reasons and strict placement ---------------------------------- */

static void test_declined_reasons(void **state) {
    (void)state;
    minfer_options *opt = options("fakerefuse,cpu");
    minfer_session *s = NULL;
    assert_ok(create(add_relu_graph(), opt, &s));
    minfer_node_placement add = placement_of(s, "add_node");
    minfer_node_placement relu = placement_of(s, "relu_node");
    assert_string_equal(add.provider, "fakerefuse");
    assert_string_equal(add.declined, "");
    assert_string_equal(relu.provider, "cpu");
    assert_string_equal(relu.declined, "fakerefuse: fakerefuse refuses Relu");
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_strict_placement_fails_naming_node(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    const char *list[] = {"fakerefuse", "cpu"};
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers(opt, list, 2));
    assert_ok(minfer_options_set_strict_placement(opt, 1));
    assert_int_not_equal(create(add_relu_graph(), opt, &s), MINFER_OK);
    assert_null(s);
    assert_error_mentions("strict");
    assert_error_mentions("relu_node");
    assert_error_mentions("fakerefuse refuses Relu");
    if (strstr(minfer_last_error(), "add_node"))
        fail_msg("strict placement names a node the first provider took: %s",
                 minfer_last_error());
    minfer_options_free(opt);
}

static void test_strict_placement_single_provider(void **state) {
    (void)state;
    minfer_options *opt = options("cpu");
    minfer_session *s = NULL;
    minfer_tensor *y = NULL;
    const int64_t dims[] = {2, 3};
    const float x[] = {-2, 2, 0, 0.5f, -0.5f, 3}, want[] = {0, 1, 1, 0, 0.5f, 2};
    assert_ok(minfer_options_set_strict_placement(opt, 1));
    assert_ok(create(add_relu_graph(), opt, &s));
    assert_ok(run1(s, x, dims, 2, &y));
    assert_tensor_f32(y, dims, 2, want);
    minfer_tensor_free(y);
    minfer_session_free(s);
    minfer_options_free(opt);
}

/* ---- statistics ---------------------------------------------------------------- */

static void test_stats_and_reset(void **state) {
    (void)state;
    minfer_options *opt = options("cpu");
    minfer_session *s = NULL;
    minfer_tensor *y = NULL;
    minfer_run_stats rs;
    const float x[] = {11, 12, 13, 14};
    assert_ok(create(nan_graph(), opt, &s));
    assert_ok(minfer_session_stats(s, &rs));
    assert_int_equal(rs.runs, 0);
    const int n = 7;
    for (int i = 0; i < n; i++) {
        assert_ok(run1(s, x, nan_dims, 1, &y));
        minfer_tensor_free(y);
        y = NULL;
    }
    /* A failed run is not counted. */
    assert_int_not_equal(minfer_session_run(s, NULL, NULL, 0, NULL, &y, 1), MINFER_OK);
    assert_ok(minfer_session_stats(s, &rs));
    assert_int_equal(rs.runs, (uint64_t)n);
    assert_true(rs.min_ms > 0);
    assert_true(rs.min_ms <= rs.p50_ms);
    assert_true(rs.p50_ms <= rs.p90_ms);
    assert_true(rs.p90_ms <= rs.max_ms);
    assert_true(rs.min_ms <= rs.mean_ms && rs.mean_ms <= rs.max_ms);
    assert_true(rs.since_reset_s > 0);
    assert_true(rs.throughput > 0);
    assert_true(rs.throughput <= (double)n / rs.since_reset_s * 1.0001);

    assert_ok(minfer_session_reset_stats(s));
    assert_ok(minfer_session_stats(s, &rs));
    assert_int_equal(rs.runs, 0);
    assert_true(rs.mean_ms == 0 && rs.max_ms == 0 && rs.throughput == 0);
    assert_ok(run1(s, x, nan_dims, 1, &y));
    minfer_tensor_free(y);
    assert_ok(minfer_session_stats(s, &rs));
    assert_int_equal(rs.runs, 1);
    assert_true(rs.min_ms == rs.max_ms && rs.p50_ms == rs.min_ms && rs.p90_ms == rs.min_ms);

    assert_int_equal(minfer_session_stats(NULL, &rs), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_session_stats(s, NULL), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_session_reset_stats(NULL), MINFER_ERR_INVALID_ARG);
    minfer_session_free(s);
    minfer_options_free(opt);
}

/* ---- profiles -------------------------------------------------------------------- */

static void test_profile_off(void **state) {
    (void)state;
    minfer_options *opt = options("cpu");
    minfer_session *s = NULL;
    minfer_tensor *y = NULL;
    const float x[] = {11, 12, 13, 14};
    char path[64];
    temp_path(path, sizeof path, "off");
    unlink(path);
    assert_ok(create(nan_graph(), opt, &s));
    assert_ok(run1(s, x, nan_dims, 1, &y));
    minfer_tensor_free(y);
    assert_int_equal(minfer_session_write_profile(s, path), MINFER_ERR_INVALID_ARG);
    assert_error_mentions("profiling is off");
    assert_int_not_equal(access(path, F_OK), 0); /* nothing written */
    double ms = -1, flops = -1;
    uint64_t runs = 99;
    assert_ok(minfer_session_node_profile(s, 0, &ms, &runs, &flops));
    assert_int_equal(runs, 0);
    assert_true(ms == 0);
    assert_int_equal(minfer_session_node_profile(s, minfer_session_node_count(s), &ms, &runs,
                                                 &flops),
                     MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_session_write_profile(s, NULL), MINFER_ERR_INVALID_ARG);
    minfer_session_free(s);
    minfer_options_free(opt);
}

static void test_profile_on(void **state) {
    (void)state;
    minfer_options *opt = options("cpu");
    minfer_session *s = NULL;
    minfer_tensor *y = NULL;
    const float x[] = {11, 12, 13, 14};
    char at_free[64], now[64];
    temp_path(at_free, sizeof at_free, "free");
    temp_path(now, sizeof now, "now");
    assert_ok(minfer_options_set_profiling(opt, at_free));
    assert_ok(create(nan_graph(), opt, &s));
    const int n = 3;
    for (int i = 0; i < n; i++) {
        assert_ok(run1(s, x, nan_dims, 1, &y));
        minfer_tensor_free(y);
    }
    size_t nn = minfer_session_node_count(s);
    assert_int_equal(nn, 3);
    for (size_t i = 0; i < nn; i++) {
        double ms = -1, flops = -1;
        uint64_t runs = 0;
        minfer_node_placement p;
        assert_ok(minfer_session_node_placement(s, i, &p));
        assert_ok(minfer_session_node_profile(s, i, &ms, &runs, &flops));
        assert_int_equal(runs, (uint64_t)n);
        assert_true(ms >= 0);
        assert_true(flops == 4); /* elementwise: one per output element */
    }
    assert_ok(minfer_session_write_profile(s, now));
    char *trace = slurp(now);
    assert_true(trace[0] == '['); /* ONNX Runtime's format: an array of events */
    assert_non_null(strstr(trace, "\"log_node_kernel_time\""));
    assert_non_null(strstr(trace, "\"op_name\": \"Log\""));
    assert_non_null(strstr(trace, "\"cat\": \"Session\""));
    assert_non_null(strstr(trace, "\"model_run\""));
    free(trace);
    minfer_session_free(s); /* writes at_free */
    trace = slurp(at_free);
    assert_non_null(strstr(trace, "\"sub_node_kernel_time\""));
    free(trace);
    unlink(now);
    unlink(at_free);
    minfer_options_free(opt);
}

/* ---- the DOT picture ------------------------------------------------------------- */

/* The fillcolor="..." of the DOT statement that declares id (with its
 * label) in dot, copied into out. */
static void fill_of(const char *dot, const char *id, char *out, size_t size) {
    char key[128];
    snprintf(key, sizeof key, "\"%s\" [label=", id);
    const char *p = strstr(dot, key);
    if (!p)
        fail_msg("no statement for %s in the DOT output", id);
    if (strstr(p + 1, key))
        fail_msg("%s is declared twice in the DOT output", id);
    const char *f = strstr(p, "fillcolor=\"");
    const char *eol = strchr(p, '\n');
    assert_true(f && (!eol || f < eol));
    f += strlen("fillcolor=\"");
    size_t len = strcspn(f, "\"");
    assert_true(len < size);
    memcpy(out, f, len);
    out[len] = '\0';
}

static void test_dot_colours_by_provider(void **state) {
    (void)state;
    minfer_options *opt = options("fakerefuse,cpu");
    minfer_session *s = NULL;
    char path[64], c_fake[32], c_cpu[32], c_add[32], c_relu[32];
    temp_path(path, sizeof path, "dot");
    assert_ok(create(add_relu_graph(), opt, &s));
    assert_ok(minfer_session_write_dot(s, path));
    char *dot = slurp(path);
    assert_non_null(strstr(dot, "digraph"));
    /* The legend gives each loaded provider's colour, in list order. */
    assert_non_null(strstr(dot, "\"legend_0\" [label=\"fakerefuse\""));
    assert_non_null(strstr(dot, "\"legend_1\" [label=\"cpu\""));
    fill_of(dot, "legend_0", c_fake, sizeof c_fake);
    fill_of(dot, "legend_1", c_cpu, sizeof c_cpu);
    assert_string_not_equal(c_fake, c_cpu);
    /* Node ids are not part of the API: find each node's statement by name. */
    const char *a = strstr(dot, "\\nadd_node\\n"), *r = strstr(dot, "\\nrelu_node\\n");
    assert_non_null(a);
    assert_non_null(r);
    assert_null(strstr(a + 1, "\\nadd_node\\n"));
    assert_null(strstr(r + 1, "\\nrelu_node\\n"));
    const char *fa = strstr(a, "fillcolor=\""), *fr = strstr(r, "fillcolor=\"");
    assert_non_null(fa);
    assert_non_null(fr);
    snprintf(c_add, sizeof c_add, "%.*s", (int)strcspn(fa + 11, "\""), fa + 11);
    snprintf(c_relu, sizeof c_relu, "%.*s", (int)strcspn(fr + 11, "\""), fr + 11);
    assert_string_equal(c_add, c_fake);
    assert_string_equal(c_relu, c_cpu);
    assert_non_null(strstr(a, "[fakerefuse]"));
    free(dot);
    unlink(path);
    assert_int_equal(minfer_session_write_dot(s, NULL), MINFER_ERR_INVALID_ARG);
    assert_int_equal(minfer_session_write_dot(s, "/nonexistent-dir/x.dot"), MINFER_ERR_IO);
    minfer_session_free(s);
    minfer_options_free(opt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nan_check_names_first_node),
        cmocka_unit_test(test_nan_check_names_folded_constant),
        cmocka_unit_test(test_nan_check_reports_inf),
        cmocka_unit_test(test_nan_check_off_lets_nan_through),
        cmocka_unit_test(test_nan_check_from_environment),
        cmocka_unit_test(test_log_callback_info),
        cmocka_unit_test(test_log_callback_verbose),
        cmocka_unit_test(test_declined_reasons),
        cmocka_unit_test(test_strict_placement_fails_naming_node),
        cmocka_unit_test(test_strict_placement_single_provider),
        cmocka_unit_test(test_stats_and_reset),
        cmocka_unit_test(test_profile_off),
        cmocka_unit_test(test_profile_on),
        cmocka_unit_test(test_dot_colours_by_provider),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
