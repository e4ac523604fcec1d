/*
 * The API's user-facing surface (issue 24): free-dimension overrides, run
 * options (tag, per-run log level, terminate, deadline), the profile's
 * JSON, warnings once per process, model metadata, messages that list
 * what there is and name element types.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz/onnx_build.h"
#include "minfer/builder.h"
#include "test_util.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define T_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define T_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

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

/* A scalar input takes one element of any rank, as ONNX Runtime does (a
 * sample rate declared [] fed as np.array([16000])); more elements are an
 * error naming the declared shape. */
static void test_scalar_input_takes_one_element(void **state) {
    (void)state;
    minfer_graph_builder *b = NULL;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, NULL, 0, NULL));
    const char *in[] = {"x"}, *out[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu_node", in, 1, out, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    assert_ok(create(b, opt, &s));
    const int64_t one[] = {1}, one_one[] = {1, 1}, two[] = {2};
    assert_ok(run_shape(s, NULL, 0));
    assert_ok(run_shape(s, one, 1));
    assert_ok(run_shape(s, one_one, 2));
    assert_int_equal(run_shape(s, two, 1), MINFER_ERR_SHAPE);
    assert_error_mentions("input 'x' expects shape [], got [2]");
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

/* Runs x = {-1, 2, -3} (shape [1, 3]) with ro; *y gets Relu(x). */
static minfer_status run_ro(minfer_session *s, const minfer_run_options *ro, minfer_tensor **y) {
    minfer_tensor *x = NULL;
    const int64_t dims[] = {1, 3};
    const float v[] = {-1, 2, -3};
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 2, &x));
    memcpy(minfer_tensor_data(x), v, sizeof v);
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {x};
    *y = NULL;
    minfer_status st = minfer_session_run_with_options(s, ro, names, ins, 1, NULL, y, 1);
    minfer_tensor_free(x);
    return st;
}

static void test_run_options_terminate(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    minfer_run_options *ro = NULL;
    minfer_tensor *y = NULL;
    const int64_t dims[] = {1, 3};
    const float want[] = {0, 2, 0};
    assert_ok(create(relu_graph(0), opt, &s));
    assert_ok(minfer_run_options_create(&ro));
    assert_ok(minfer_run_options_set_tag(ro, "job-7"));
    assert_ok(minfer_run_options_terminate(ro));
    assert_int_equal(run_ro(s, ro, &y), MINFER_CANCELLED);
    assert_null(y);
    assert_error_mentions("run 'job-7' cancelled before node 'relu_node'");
    assert_string_equal(minfer_status_str(MINFER_CANCELLED), "cancelled");
    /* the session stays usable */
    assert_ok(minfer_run_options_unset_terminate(ro));
    assert_ok(run_ro(s, ro, &y));
    assert_tensor_f32(y, dims, 2, want);
    minfer_tensor_free(y);
    assert_ok(run_ro(s, NULL, &y));
    assert_tensor_f32(y, dims, 2, want);
    minfer_tensor_free(y);
    minfer_run_options_free(ro);
    minfer_run_options_free(NULL);
    minfer_session_free(s);
    minfer_options_free(opt);
}

typedef struct log_seen {
    minfer_run_options *ro;
    int tagged, untagged;
} log_seen;

/* Counts messages and, at the first tagged one, cancels the run. */
static void log_and_cancel(void *user, minfer_log_level level, const char *message) {
    log_seen *k = user;
    (void)level;
    if (strncmp(message, "[batch-run] ", 12) == 0) {
        k->tagged++;
        minfer_run_options_terminate(k->ro);
    } else
        k->untagged++;
}

/* A per-run log level (INFO, the session at WARN) shows the plan the run
 * builds, tagged; the callback cancels the run mid-way, between the plan
 * and the first node. */
static void test_run_options_log_level_tag_cancel(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    minfer_run_options *ro = NULL;
    minfer_tensor *y = NULL;
    log_seen k = {NULL, 0, 0};
    assert_ok(minfer_run_options_create(&ro));
    k.ro = ro;
    assert_ok(minfer_options_set_log_level(opt, MINFER_LOG_WARN));
    assert_ok(minfer_options_set_log_callback(opt, log_and_cancel, &k));
    assert_ok(create(relu_graph(0), opt, &s)); /* [batch,3]: the run plans */
    assert_int_equal(k.tagged + k.untagged, 0);
    assert_ok(minfer_run_options_set_tag(ro, "batch-run"));
    assert_ok(minfer_run_options_set_log_level(ro, MINFER_LOG_INFO));
    assert_int_equal(minfer_run_options_set_log_level(ro, (minfer_log_level)9),
                     MINFER_ERR_INVALID_ARG);
    assert_int_equal(run_ro(s, ro, &y), MINFER_CANCELLED);
    assert_true(k.tagged > 0);
    assert_int_equal(k.untagged, 0);
    assert_ok(minfer_run_options_unset_terminate(ro));
    assert_ok(minfer_run_options_set_log_level(ro, MINFER_LOG_ERROR));
    assert_ok(run_ro(s, ro, &y));
    minfer_tensor_free(y);
    minfer_run_options_free(ro);
    minfer_session_free(s);
    minfer_options_free(opt);
}

/* A model whose Loop never stops (no trip count, a condition that stays
 * true, no iteration limit): only a deadline or a terminate ends its run. */
static minfer_session *forever_session(void) {
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    ob_input(g, "x", T_FLOAT, 0, NULL);
    unsigned char yes = 1;
    ob_init(g, "cond", T_BOOL, 0, NULL, &yes, 1);
    Onnx__GraphProto *body = ob_alloc(sizeof *body);
    onnx__graph_proto__init(body);
    body->name = ob_str("body");
    ob_input(body, "i", T_INT64, 0, NULL);
    ob_input(body, "c", T_BOOL, 0, NULL);
    ob_input(body, "v", T_FLOAT, -1, NULL);
    ob_node(body, "Identity", "c", "c_out");
    ob_node(body, "Neg", "v", "v_out");
    ob_output(body, "c_out", T_BOOL);
    ob_output(body, "v_out", T_FLOAT);
    Onnx__NodeProto *loop = ob_node(g, "Loop", "- cond x", "y");
    loop->name = ob_str("forever");
    ob_attr(loop, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = body;
    ob_output(g, "y", T_FLOAT);
    size_t len;
    uint8_t *bytes = ob_finish(m, &len);
    minfer_options *opt = cpu_options();
    minfer_limits lim = {0, 0, 0, UINT64_MAX};
    minfer_session *s = NULL;
    assert_ok(minfer_options_set_limits(opt, &lim));
    assert_ok(minfer_session_create_from_memory(bytes, len, opt, &s));
    minfer_options_free(opt);
    free(bytes);
    return s;
}

static minfer_status run_forever(minfer_session *s, const minfer_run_options *ro) {
    minfer_tensor *x = NULL, *y = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, NULL, 0, &x));
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {x};
    minfer_status st = minfer_session_run_with_options(s, ro, names, ins, 1, NULL, &y, 1);
    minfer_tensor_free(x);
    assert_null(y);
    return st;
}

static void test_run_options_deadline(void **state) {
    (void)state;
    minfer_session *s = forever_session();
    minfer_run_options *ro = NULL;
    assert_ok(minfer_run_options_create(&ro));
    assert_ok(minfer_run_options_set_deadline_ms(ro, 30));
    assert_int_equal(run_forever(s, ro), MINFER_ERR_DEADLINE);
    assert_error_mentions("deadline of 30 ms passed");
    minfer_run_options_free(ro);
    minfer_session_free(s);
}

static void *terminate_later(void *ro) {
    minfer_run_options_terminate(ro);
    return NULL;
}

/* Another thread's terminate stops a run that would never end on its
 * own, whenever it comes; the session then runs again. */
static void test_run_options_terminate_from_thread(void **state) {
    (void)state;
    minfer_session *s = forever_session();
    minfer_run_options *ro = NULL;
    pthread_t th;
    assert_ok(minfer_run_options_create(&ro));
    assert_ok(minfer_run_options_set_tag(ro, "forever"));
    assert_int_equal(pthread_create(&th, NULL, terminate_later, ro), 0);
    assert_int_equal(run_forever(s, ro), MINFER_CANCELLED);
    pthread_join(th, NULL);
    assert_error_mentions("run 'forever' cancelled before "); /* a node or iteration */
    assert_ok(minfer_run_options_unset_terminate(ro));
    assert_ok(minfer_run_options_set_deadline_ms(ro, 5));
    assert_int_equal(run_forever(s, ro), MINFER_ERR_DEADLINE); /* usable: it runs again */
    minfer_run_options_free(ro);
    minfer_session_free(s);
}

/* The profile is written by jansson: a node name of 3000 bytes (the old
 * writer cut strings at 1024) and one that is not UTF-8 come out whole and
 * valid; a run's tag is in its event. */
static void test_profile_long_names_and_tag(void **state) {
    (void)state;
    char path[] = "/tmp/minfer-surface-XXXXXX", name[3001];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    minfer_graph_builder *b = NULL;
    const int64_t dims[] = {1, 3};
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL));
    const char *in1[] = {"x"}, *out1[] = {"r"}, *in2[] = {"r"}, *out2[] = {"y"};
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, name, in1, 1, out1, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Neg", NULL, "bad\xff\xfe-name", in2, 1, out2, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    minfer_run_options *ro = NULL;
    minfer_tensor *y = NULL;
    assert_ok(minfer_options_set_optimization_level(opt, 0));
    assert_ok(minfer_options_set_profiling(opt, path));
    assert_ok(create(b, opt, &s));
    assert_ok(minfer_run_options_create(&ro));
    assert_ok(minfer_run_options_set_tag(ro, "tagged \"run\" 1"));
    assert_ok(run_ro(s, ro, &y));
    minfer_tensor_free(y);
    assert_ok(minfer_session_write_profile(s, path));
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    if (!root)
        fail_msg("the profile is not JSON: %s (line %d)", err.text, err.line);
    json_t *events = root; /* ONNX Runtime's format: an array of events */
    assert_true(json_is_array(events));
    int long_seen = 0, bad_seen = 0, tag_seen = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *e = json_array_get(events, i);
        const char *n = json_string_value(json_object_get(e, "name"));
        long_seen |= n && strlen(n) == strlen(name) + strlen("_kernel_time") &&
                     strncmp(n, name, strlen(name)) == 0;
        bad_seen |= n && strcmp(n, "bad\xef\xbf\xbd\xef\xbf\xbd-name_kernel_time") == 0;
        const char *tag = json_string_value(json_object_get(json_object_get(e, "args"), "tag"));
        tag_seen |= n && strcmp(n, "model_run") == 0 && tag && strcmp(tag, "tagged \"run\" 1") == 0;
    }
    assert_true(long_seen);
    assert_true(bad_seen);
    assert_true(tag_seen);
    json_decref(root);
    minfer_run_options_free(ro);
    minfer_session_free(s);
    minfer_options_free(opt);
    unlink(path);
}

typedef struct counter {
    const char *needle;
    int n;
} counter;

static void count_msgs(void *user, minfer_log_level level, const char *message) {
    counter *c = user;
    (void)level;
    if (strstr(message, c->needle))
        c->n++;
}

/* A MINFER_* variable with a value that means nothing is named once per
 * process, however many sessions read it. */
static void test_bad_env_warns_once(void **state) {
    (void)state;
    counter c = {"MINFER_OPT_LEVEL='9' is not one of 0-3: ignored", 0};
    setenv("MINFER_OPT_LEVEL", "9", 1);
    for (int i = 0; i < 3; i++) {
        minfer_options *opt = cpu_options();
        minfer_session *s = NULL;
        assert_ok(minfer_options_set_log_callback(opt, count_msgs, &c));
        assert_ok(create(relu_graph(0), opt, &s));
        minfer_session_free(s);
        minfer_options_free(opt);
    }
    unsetenv("MINFER_OPT_LEVEL");
    assert_int_equal(c.n, 1);
}

/* A listed provider that is installed but does not load is skipped with a
 * warning once per process. */
static void test_skipped_provider_warns_once(void **state) {
    (void)state;
    counter c = {"skipping provider 'fakeinitfail': ", 0};
    for (int i = 0; i < 3; i++) {
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        assert_ok(minfer_options_create(&opt));
        assert_ok(minfer_options_set_providers_str(opt, "fakeinitfail,cpu"));
        assert_ok(minfer_options_set_log_callback(opt, count_msgs, &c));
        assert_ok(create(relu_graph(0), opt, &s));
        assert_string_equal(minfer_session_provider_name(s, 0), "cpu");
        minfer_session_free(s);
        minfer_options_free(opt);
    }
    assert_int_equal(c.n, 1);
}

/* producer, graph name, doc strings and metadata_props through the API;
 * a built session has them empty. */
static void test_model_metadata(void **state) {
    (void)state;
    Onnx__ModelProto *m = ob_model(13);
    m->producer_name = ob_str("pytorch");
    m->producer_version = ob_str("2.1.0");
    m->domain = ob_str("org.example");
    m->model_version = 42;
    m->doc_string = ob_str("A model that negates.\nSecond line.");
    m->graph->doc_string = ob_str("graph doc");
    free(m->graph->name); /* ob_model named it "g" */
    m->graph->name = ob_str("main_graph");
    const char *kv[][2] = {{"author", "someone"}, {"license", "MIT"}};
    for (size_t i = 0; i < 2; i++) {
        Onnx__StringStringEntryProto *e = ob_alloc(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = ob_str(kv[i][0]);
        e->value = ob_str(kv[i][1]);
        OB_PUSH(m->metadata_props, m->n_metadata_props, e);
    }
    ob_input(m->graph, "x", T_FLOAT, 0, NULL);
    ob_node(m->graph, "Neg", "x", "y");
    ob_output(m->graph, "y", T_FLOAT);
    size_t len;
    uint8_t *bytes = ob_finish(m, &len);
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    minfer_model_metadata md;
    const char *k, *v;
    assert_ok(minfer_session_create_from_memory(bytes, len, opt, &s));
    free(bytes);
    assert_ok(minfer_session_metadata(s, &md));
    assert_string_equal(md.producer_name, "pytorch");
    assert_string_equal(md.producer_version, "2.1.0");
    assert_string_equal(md.domain, "org.example");
    assert_int_equal(md.model_version, 42);
    assert_int_equal(md.ir_version, 8);
    assert_string_equal(md.graph_name, "main_graph");
    assert_string_equal(md.doc_string, "A model that negates.\nSecond line.");
    assert_string_equal(md.graph_doc_string, "graph doc");
    assert_int_equal(md.n_props, 2);
    assert_ok(minfer_session_metadata_prop(s, 1, &k, &v));
    assert_string_equal(k, "license");
    assert_string_equal(v, "MIT");
    assert_int_equal(minfer_session_metadata_prop(s, 2, &k, &v), MINFER_ERR_INVALID_ARG);
    assert_error_mentions("no entry 2 (the model has 2)");
    minfer_session_free(s);

    assert_ok(create(relu_graph(0), opt, &s));
    assert_ok(minfer_session_metadata(s, &md));
    assert_string_equal(md.producer_name, "");
    assert_int_equal(md.n_props, 0);
    minfer_session_free(s);
    minfer_options_free(opt);
}

/* A provider's reason for declining names the element type as ONNX does
 * ("int32"), not by its number. */
static void test_decline_names_element_type(void **state) {
    (void)state;
    minfer_graph_builder *b = NULL;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    const int64_t dims[] = {1, 1, 4, 4};
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_INT32, dims, 4, NULL));
    const char *in[] = {"x"}, *out[] = {"y"};
    size_t node = 0;
    assert_ok(minfer_builder_add_node(b, "AveragePool", NULL, "pool", in, 1, out, 1, &node));
    const int64_t k[] = {2, 2};
    assert_ok(minfer_builder_set_attr_ints(b, node, "kernel_shape", k, 2));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_status st = create(b, opt, &s);
    assert_int_not_equal(st, MINFER_OK);
    assert_error_mentions("int32");
    minfer_options_free(opt);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_dim_by_name),
        cmocka_unit_test(test_set_input_dim_by_axis),
        cmocka_unit_test(test_dim_errors),
        cmocka_unit_test(test_wrong_output_lists_outputs),
        cmocka_unit_test(test_thread_count),
        cmocka_unit_test(test_run_options_terminate),
        cmocka_unit_test(test_run_options_log_level_tag_cancel),
        cmocka_unit_test(test_run_options_deadline),
        cmocka_unit_test(test_run_options_terminate_from_thread),
        cmocka_unit_test(test_profile_long_names_and_tag),
        cmocka_unit_test(test_bad_env_warns_once),
        cmocka_unit_test(test_skipped_provider_warns_once),
        cmocka_unit_test(test_model_metadata),
        cmocka_unit_test(test_scalar_input_takes_one_element),
        cmocka_unit_test(test_decline_names_element_type),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
