/*
 * Run budgets and kernels whose cost could explode from one attribute
 * (issue 16, items 5, 6 and 8): tiny models that used to hang, fill memory
 * or answer wrongly, each run on every provider list given on the command
 * line ("cpu", "onednn,cpu", "opencl,cpu").
 *
 *  - Loop iterations add up across nesting within one run: a 999,999 x
 *    999,999 nested Loop fails with MINFER_ERR_LIMIT naming the inner node;
 *    a 3 x 4 one takes exactly 3 + 12 iterations of the limit.
 *  - Loop scan outputs grow under max_tensor_bytes; elements produced in a
 *    run (scan outputs and sequences included) under max_run_elements.
 *  - A run's deadline: a Loop that never stops fails MINFER_ERR_DEADLINE.
 *  - minfer_options_set_run_limits takes an older, shorter struct.
 *  - LRN with size 2^31-1 equals the same window clipped to the channels.
 *  - Einsum `abcd,efgh->` on [32]^4 is sum(A) * sum(B); equations are
 *    checked in full (`ab,bc->aa` refused); contractions are charged to the
 *    run's budget.
 *  - An If whose branch gives another type than the graph declares fails.
 *
 * No test measures time: the cases that used to hang finish because the
 * work is bounded, and ctest's timeout catches a regression.
 */
#include <stdlib.h>
#include <unistd.h>

#include "fuzz/onnx_build.h"
#include "minfer/builder.h"
#include "test_util.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define T_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define T_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

static const char *const *provider_lists;
static int n_provider_lists;

/* ---- building models --------------------------------------------------------- */

static Onnx__GraphProto *sub_graph(const char *name) {
    Onnx__GraphProto *g = ob_alloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = ob_str(name);
    return g;
}

static void attr_graph(Onnx__NodeProto *n, const char *name, Onnx__GraphProto *g) {
    ob_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = g;
}

static Onnx__NodeProto *named(Onnx__NodeProto *n, const char *name) {
    n->name = ob_str(name);
    return n;
}

/* A Loop body: (i, cond, carried float...) in, (cond, carried..., scans...) out. */
static Onnx__GraphProto *loop_body(const char *name, const char *carried_in) {
    Onnx__GraphProto *g = sub_graph(name);
    ob_input(g, "i", T_INT64, 0, NULL);
    ob_input(g, "c", T_BOOL, 0, NULL);
    if (carried_in)
        ob_input(g, carried_in, T_FLOAT, -1, NULL);
    return g;
}

static void int64_init(Onnx__GraphProto *g, const char *name, int64_t v) {
    ob_init(g, name, T_INT64, 0, NULL, &v, sizeof v);
}

/* A session for m (freed) on providers, with limits and run limits (NULL:
 * defaults); creation must succeed. */
static minfer_session *open_model(Onnx__ModelProto *m, const char *providers,
                                  const minfer_limits *lim, const minfer_run_limits *rl) {
    size_t len;
    uint8_t *bytes = ob_finish(m, &len);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers));
    if (lim)
        assert_ok(minfer_options_set_limits(opt, lim));
    if (rl)
        assert_ok(minfer_options_set_run_limits(opt, rl));
    assert_ok(minfer_session_create_from_memory(bytes, len, opt, &s));
    minfer_options_free(opt);
    free(bytes);
    return s;
}

static minfer_tensor *scalar_f32(float v) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, NULL, 0, &t));
    *(float *)minfer_tensor_data(t) = v;
    return t;
}

/* Runs s on one float input "x"; the status, *out the first output. */
static minfer_status run_x(minfer_session *s, minfer_tensor *x, minfer_tensor **out) {
    const char *names[] = {"x"};
    size_t n = minfer_session_output_count(s);
    minfer_tensor *outs[4] = {NULL, NULL, NULL, NULL};
    assert_true(n <= 4);
    minfer_status st = minfer_session_run(s, names, (const minfer_tensor *const *)&x, 1, NULL,
                                          outs, n);
    for (size_t k = 1; k < n; k++)
        minfer_tensor_free(outs[k]);
    *out = outs[0];
    return st;
}

/* ---- loops ------------------------------------------------------------------- */

/* y = x negated outer * inner times: Loop "outer" (trip M) whose body runs
 * Loop "inner" (trip N, read from the outer scope). */
static Onnx__ModelProto *nested_loop(int64_t outer, int64_t inner) {
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    ob_input(g, "x", T_FLOAT, 0, NULL);
    int64_init(g, "M", outer);
    int64_init(g, "N", inner);
    Onnx__GraphProto *ib = loop_body("inner_body", "v");
    ob_node(ib, "Identity", "c", "c_out");
    ob_node(ib, "Neg", "v", "v_out");
    ob_output(ib, "c_out", T_BOOL);
    ob_output(ib, "v_out", T_FLOAT);
    Onnx__GraphProto *ob = loop_body("outer_body", "u");
    ob_node(ob, "Identity", "c", "c_out2");
    attr_graph(named(ob_node(ob, "Loop", "N - u", "u_out"), "inner"), "body", ib);
    ob_output(ob, "c_out2", T_BOOL);
    ob_output(ob, "u_out", T_FLOAT);
    attr_graph(named(ob_node(g, "Loop", "M - x", "y"), "outer"), "body", ob);
    ob_output(g, "y", T_FLOAT);
    return m;
}

static void test_nested_loop_fails_fast(void **state) {
    (void)state;
    for (int p = 0; p < n_provider_lists; p++) {
        /* The default limit, a million iterations in the whole run: the
         * first outer iteration's 999,999 inner ones and itself take it
         * all, so the outer Loop's second iteration is refused (a second
         * or so of body runs). The other provider lists, whose Loops the
         * core runs just the same, get a limit of 1,000. */
        minfer_limits lim = {0, 0, 0, 1000};
        minfer_session *s = open_model(nested_loop(999999, 999999), provider_lists[p],
                                       p == 0 ? NULL : &lim, NULL);
        minfer_tensor *x = scalar_f32(2), *y = NULL;
        assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
        assert_error_mentions(p == 0 ? "'outer'" : "'inner'");
        assert_error_mentions(p == 0 ? "loop limit of 1000000 iterations in one run"
                                     : "loop limit of 1000 iterations in one run");
        assert_null(y);
        minfer_tensor_free(x);
        minfer_session_free(s);
    }
}

static void test_nested_loop_counts_every_level(void **state) {
    (void)state;
    for (int p = 0; p < n_provider_lists; p++) {
        /* 3 outer + 3 * 4 inner iterations */
        minfer_limits lim = {0, 0, 0, 15};
        minfer_session *s = open_model(nested_loop(3, 4), provider_lists[p], &lim, NULL);
        minfer_tensor *x = scalar_f32(2), *y = NULL;
        assert_ok(run_x(s, x, &y));
        assert_float_equal(*(const float *)minfer_tensor_data(y), 2, 0); /* 12 negations */
        minfer_tensor_free(y);
        y = NULL;
        /* the next run starts from a full budget */
        assert_ok(run_x(s, x, &y));
        minfer_tensor_free(y);
        y = NULL;
        minfer_session_free(s);
        lim.max_loop_iterations = 14;
        s = open_model(nested_loop(3, 4), provider_lists[p], &lim, NULL);
        assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
        assert_error_mentions("'inner'"); /* the last outer iteration's fourth */
        assert_error_mentions("loop limit of 14");
        minfer_tensor_free(x);
        minfer_session_free(s);
    }
}

/* Loop (trip M) with one scan output per iteration: x passed through, a
 * float[n] tensor captured from the outer scope. */
static Onnx__ModelProto *scan_loop(int64_t trips) {
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    ob_input(g, "x", T_FLOAT, 1, (int64_t[]){-1});
    int64_init(g, "M", trips);
    Onnx__GraphProto *b = loop_body("body", NULL);
    ob_node(b, "Identity", "c", "c_out");
    ob_node(b, "Identity", "x", "item");
    ob_output(b, "c_out", T_BOOL);
    ob_output(b, "item", T_FLOAT);
    attr_graph(named(ob_node(g, "Loop", "M -", "stacked"), "grow"), "body", b);
    ob_output(g, "stacked", T_FLOAT);
    return m;
}

/* Scan over steps: each step's scan output is x (float[n], captured). */
static Onnx__ModelProto *scan_node(int64_t steps) {
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    ob_input(g, "x", T_FLOAT, 1, (int64_t[]){-1});
    ob_init(g, "steps", T_FLOAT, 1, &steps, NULL, (size_t)steps * sizeof(float));
    Onnx__GraphProto *b = sub_graph("body");
    ob_input(b, "s", T_FLOAT, 0, NULL);
    ob_node(b, "Identity", "x", "item");
    ob_output(b, "item", T_FLOAT);
    Onnx__NodeProto *n = named(ob_node(g, "Scan", "steps", "stacked"), "scan");
    ob_attr_int(n, "num_scan_inputs", 1);
    attr_graph(n, "body", b);
    ob_output(g, "stacked", T_FLOAT);
    return m;
}

static minfer_tensor *vec_f32(int64_t n, float v) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, &n, 1, &t));
    for (int64_t k = 0; k < n; k++)
        ((float *)minfer_tensor_data(t))[k] = v;
    return t;
}

static void test_scan_outputs_under_tensor_limit(void **state) {
    (void)state;
    for (int p = 0; p < n_provider_lists; p++) {
        /* 16 iterations of 4 KiB: exactly 64 KiB fits, 17 do not */
        minfer_limits lim = {0, 64 << 10, 0, 0};
        minfer_tensor *x = vec_f32(1024, 1.5f), *y = NULL;
        minfer_session *s = open_model(scan_loop(16), provider_lists[p], &lim, NULL);
        assert_ok(run_x(s, x, &y));
        assert_int_equal(minfer_tensor_numel(y), 16 * 1024);
        minfer_tensor_free(y);
        y = NULL;
        minfer_session_free(s);
        s = open_model(scan_loop(1000000), provider_lists[p], &lim, NULL);
        assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
        assert_error_mentions("'grow'");
        assert_error_mentions("scan output 0 would exceed the tensor limit of 65536 bytes at "
                              "iteration 16");
        assert_null(y);
        minfer_session_free(s);
        /* Scan's scan outputs the same */
        s = open_model(scan_node(16), provider_lists[p], &lim, NULL);
        assert_ok(run_x(s, x, &y));
        assert_int_equal(minfer_tensor_numel(y), 16 * 1024);
        minfer_tensor_free(y);
        y = NULL;
        minfer_session_free(s);
        s = open_model(scan_node(1000), provider_lists[p], &lim, NULL);
        assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
        assert_error_mentions("'scan'");
        assert_error_mentions("scan output 0 would exceed the tensor limit of 65536 bytes at "
                              "iteration 16");
        minfer_tensor_free(x);
        minfer_session_free(s);
    }
}

static void test_run_elements(void **state) {
    (void)state;
    for (int p = 0; p < n_provider_lists; p++) {
        /* Each iteration: 101 elements made by the body's two Identity
         * nodes, 101 delivered from the body run, 100 in the stacked scan
         * item; then the Loop's output (1000) and its delivery (1000). */
        minfer_run_limits rl = {sizeof rl, 0, 0};
        rl.max_run_elements = 10 * 302 + 2000;
        minfer_tensor *x = vec_f32(100, 1), *y = NULL;
        minfer_session *s = open_model(scan_loop(10), provider_lists[p], NULL, &rl);
        assert_ok(run_x(s, x, &y));
        minfer_tensor_free(y);
        y = NULL;
        minfer_session_free(s);
        rl.max_run_elements--;
        s = open_model(scan_loop(10), provider_lists[p], NULL, &rl);
        assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
        assert_error_mentions("max_run_elements");
        assert_null(y);
        minfer_session_free(s);
        /* a million-iteration Loop stopped by the elements, not the time */
        rl.max_run_elements = 100000;
        s = open_model(scan_loop(1000000), provider_lists[p], NULL, &rl);
        assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
        assert_error_mentions("element budget of 100000");
        minfer_tensor_free(x);
        minfer_session_free(s);
    }
}

/* A Loop of trips iterations inserting x into a sequence; outputs its
 * length. */
static Onnx__ModelProto *seq_loop(int64_t trips) {
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    ob_input(g, "x", T_FLOAT, 1, (int64_t[]){-1});
    int64_init(g, "M", trips);
    ob_node(g, "SequenceEmpty", "", "empty");
    Onnx__GraphProto *b = sub_graph("body");
    ob_input(b, "i", T_INT64, 0, NULL);
    ob_input(b, "c", T_BOOL, 0, NULL);
    Onnx__ValueInfoProto *sv = ob_value_info("seq", T_FLOAT, -1, NULL);
    /* a sequence type: TypeProto.sequence_type.elem_type = tensor(float) */
    Onnx__TypeProto *elem = sv->type;
    sv->type = ob_alloc(sizeof *sv->type);
    onnx__type_proto__init(sv->type);
    sv->type->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
    sv->type->sequence_type = ob_alloc(sizeof *sv->type->sequence_type);
    onnx__type_proto__sequence__init(sv->type->sequence_type);
    sv->type->sequence_type->elem_type = elem;
    OB_PUSH(b->input, b->n_input, sv);
    ob_node(b, "Identity", "c", "c_out");
    ob_node(b, "SequenceInsert", "seq x", "seq_out");
    ob_output(b, "c_out", T_BOOL);
    ob_output(b, "seq_out", T_FLOAT);
    attr_graph(named(ob_node(g, "Loop", "M - empty", "all"), "collect"), "body", b);
    ob_node(g, "SequenceLength", "all", "n");
    ob_output(g, "n", T_INT64);
    return m;
}

/* SequenceInsert in a Loop copies the sequence each time: quadratic work
 * the elements budget counts, empty items too (each item counts one). */
static void test_sequence_elements(void **state) {
    (void)state;
    for (int p = 0; p < n_provider_lists; p++) {
        minfer_run_limits rl = {sizeof rl, 1000000, 0};
        minfer_session *s = open_model(seq_loop(1000000), provider_lists[p], NULL, &rl);
        minfer_tensor *x = vec_f32(10, 1), *y = NULL;
        assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
        assert_error_mentions("max_run_elements");
        minfer_tensor_free(x);
        minfer_session_free(s);
        /* 2,000 empty items: about 6,000 for the nodes and deliveries,
         * 2 * 10^6 for the copies of the growing sequence */
        rl.max_run_elements = 1000000;
        s = open_model(seq_loop(2000), provider_lists[p], NULL, &rl);
        x = vec_f32(0, 1);
        assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
        assert_error_mentions("'collect'");
        assert_error_mentions("max_run_elements");
        minfer_tensor_free(x);
        minfer_session_free(s);
        /* and a short one fits */
        s = open_model(seq_loop(100), provider_lists[p], NULL, &rl);
        x = vec_f32(0, 1);
        assert_ok(run_x(s, x, &y));
        assert_int_equal(*(const int64_t *)minfer_tensor_data(y), 100);
        minfer_tensor_free(y);
        minfer_tensor_free(x);
        minfer_session_free(s);
    }
}

static void test_deadline(void **state) {
    (void)state;
    for (int p = 0; p < n_provider_lists; p++) {
        /* no trip count, a condition that stays true: only the deadline
         * (the iteration limit is out of reach) stops it */
        Onnx__ModelProto *m = ob_model(13);
        Onnx__GraphProto *g = m->graph;
        ob_input(g, "x", T_FLOAT, 0, NULL);
        unsigned char yes = 1;
        ob_init(g, "cond", T_BOOL, 0, NULL, &yes, 1);
        Onnx__GraphProto *b = loop_body("body", "v");
        ob_node(b, "Identity", "c", "c_out");
        ob_node(b, "Neg", "v", "v_out");
        ob_output(b, "c_out", T_BOOL);
        ob_output(b, "v_out", T_FLOAT);
        attr_graph(named(ob_node(g, "Loop", "- cond x", "y"), "forever"), "body", b);
        ob_output(g, "y", T_FLOAT);
        minfer_limits lim = {0, 0, 0, UINT64_MAX};
        minfer_run_limits rl = {sizeof rl, UINT64_MAX, 50};
        minfer_session *s = open_model(m, provider_lists[p], &lim, &rl);
        minfer_tensor *x = scalar_f32(1), *y = NULL;
        minfer_status st = run_x(s, x, &y);
        assert_int_equal(st, MINFER_ERR_DEADLINE);
        assert_string_equal(minfer_status_str(st), "deadline passed");
        assert_error_mentions("deadline of 50 ms passed");
        assert_null(y);
        minfer_tensor_free(x);
        minfer_session_free(s);
    }
}

/* A caller compiled against a header with fewer members: what it did not
 * have keeps its default. */
static void test_run_limits_abi(void **state) {
    (void)state;
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    struct {
        uint32_t struct_size;
        uint64_t max_run_elements;
    } old = {sizeof old, 5};
    assert_ok(minfer_options_set_run_limits(opt, (const minfer_run_limits *)(const void *)&old));
    minfer_run_limits bad = {0, 1, 1};
    assert_int_equal(minfer_options_set_run_limits(opt, &bad), MINFER_ERR_INVALID_ARG);
    assert_error_mentions("struct_size");
    assert_int_equal(minfer_options_set_run_limits(opt, NULL), MINFER_ERR_INVALID_ARG);
    /* the old struct's budget is in force: a graph output of 10 elements
     * delivered is already over 5 */
    minfer_graph_builder *b = NULL;
    int64_t ten = 10;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, &ten, 1, NULL));
    assert_ok(minfer_builder_add_node(b, "Relu", NULL, "relu", (const char *[]){"x"}, 1,
                                      (const char *[]){"y"}, 1, NULL));
    assert_ok(minfer_builder_add_output(b, "y"));
    minfer_session *s = NULL;
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_tensor *x = vec_f32(10, 1), *y = NULL;
    assert_int_equal(run_x(s, x, &y), MINFER_ERR_LIMIT);
    assert_error_mentions("element budget of 5 ");
    minfer_tensor_free(x);
    minfer_session_free(s);
    minfer_builder_free(b);
    minfer_options_free(opt);
}

/* The default tensor limit follows the machine: a quarter of physical
 * memory, at most 4 GiB, at least 256 MiB. A 5 GiB ConstantOfShape asked
 * for by an 8-byte input fails instead of filling memory. */
static void test_default_tensor_limit(void **state) {
    (void)state;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    uint64_t want = (uint64_t)4 << 30;
    if (pages > 0 && page > 0 && (uint64_t)pages / 4 * (uint64_t)page < want)
        want = (uint64_t)pages / 4 * (uint64_t)page;
    if (want < ((uint64_t)256 << 20))
        want = (uint64_t)256 << 20;
    char says[96];
    snprintf(says, sizeof says, "above the tensor limit of %llu bytes", (unsigned long long)want);
    for (int p = 0; p < n_provider_lists; p++) {
        minfer_graph_builder *b = NULL;
        minfer_session *s = NULL;
        minfer_options *opt = NULL;
        int64_t one = 1;
        assert_ok(minfer_builder_create(13, &b));
        assert_ok(minfer_builder_add_input(b, "shape", MINFER_DTYPE_INT64, &one, 1, NULL));
        assert_ok(minfer_builder_add_node(b, "ConstantOfShape", NULL, "fill",
                                          (const char *[]){"shape"}, 1, (const char *[]){"y"}, 1,
                                          NULL));
        assert_ok(minfer_builder_add_output(b, "y"));
        assert_ok(minfer_options_create(&opt));
        assert_ok(minfer_options_set_providers_str(opt, provider_lists[p]));
        assert_ok(minfer_session_create_from_builder(b, opt, &s));
        minfer_options_free(opt);
        minfer_builder_free(b);
        minfer_tensor *shape = NULL, *y = NULL;
        assert_ok(minfer_tensor_create(MINFER_DTYPE_INT64, &one, 1, &shape));
        *(int64_t *)minfer_tensor_data(shape) = (int64_t)(want / 4 + 1); /* just over */
        const char *names[] = {"shape"};
        assert_int_equal(minfer_session_run(s, names, (const minfer_tensor *const *)&shape, 1,
                                            NULL, &y, 1),
                         MINFER_ERR_LIMIT);
        assert_error_mentions(says);
        assert_null(y);
        *(int64_t *)minfer_tensor_data(shape) = 1000; /* and the session still runs */
        assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)&shape, 1, NULL, &y,
                                     1));
        assert_int_equal(minfer_tensor_numel(y), 1000);
        minfer_tensor_free(y);
        minfer_tensor_free(shape);
        minfer_session_free(s);
    }
}

/* ---- If ---------------------------------------------------------------------- */

/* The If of the issue: a then_branch declaring and giving int64 under a
 * float output is refused at creation, naming the node (a branch's type is
 * always declared, so creation sees it; the run checks it again, and the
 * shape, below). */
static Onnx__ModelProto *if_model(void) {
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    ob_input(g, "cond", T_BOOL, 0, NULL);
    Onnx__GraphProto *tb = sub_graph("then"), *eb = sub_graph("else");
    int64_t seven = 7;
    float half = 0.5f;
    ob_attr_tensor(ob_node(tb, "Constant", "", "t_out"), "value",
                   ob_tensor("", T_INT64, 0, NULL, &seven, sizeof seven));
    ob_output(tb, "t_out", T_INT64);
    ob_attr_tensor(ob_node(eb, "Constant", "", "e_out"), "value",
                   ob_tensor("", T_FLOAT, 0, NULL, &half, sizeof half));
    ob_output(eb, "e_out", T_FLOAT);
    Onnx__NodeProto *n = named(ob_node(g, "If", "cond", "y"), "choose");
    attr_graph(n, "then_branch", tb);
    attr_graph(n, "else_branch", eb);
    ob_output(g, "y", T_FLOAT);
    return m;
}

static void test_if_branch_type(void **state) {
    (void)state;
    for (int p = 0; p < n_provider_lists; p++) {
        size_t len;
        uint8_t *bytes = ob_finish(if_model(), &len);
        minfer_options *opt = NULL;
        minfer_session *s = NULL;
        assert_ok(minfer_options_create(&opt));
        assert_ok(minfer_options_set_providers_str(opt, provider_lists[p]));
        assert_int_equal(minfer_session_create_from_memory(bytes, len, opt, &s), MINFER_ERR_TYPE);
        assert_error_mentions("'choose'");
        assert_error_mentions("is int64, but the model declares float");
        minfer_options_free(opt);
        free(bytes);
    }
}

/* A branch giving a shape other than the If's output declares (fixed). */
static void test_if_branch_shape(void **state) {
    (void)state;
    for (int p = 0; p < n_provider_lists; p++) {
        Onnx__ModelProto *m = ob_model(13);
        Onnx__GraphProto *g = m->graph;
        ob_input(g, "cond", T_BOOL, 0, NULL);
        Onnx__GraphProto *tb = sub_graph("then"), *eb = sub_graph("else");
        float two[2] = {1, 2}, three[3] = {1, 2, 3};
        ob_attr_tensor(ob_node(tb, "Constant", "", "t_out"), "value",
                       ob_tensor("", T_FLOAT, 1, (int64_t[]){2}, two, sizeof two));
        ob_output(tb, "t_out", T_FLOAT);
        ob_attr_tensor(ob_node(eb, "Constant", "", "e_out"), "value",
                       ob_tensor("", T_FLOAT, 1, (int64_t[]){3}, three, sizeof three));
        ob_output(eb, "e_out", T_FLOAT);
        Onnx__NodeProto *n = named(ob_node(g, "If", "cond", "y"), "choose");
        attr_graph(n, "then_branch", tb);
        attr_graph(n, "else_branch", eb);
        OB_PUSH(g->output, g->n_output, ob_value_info("y", T_FLOAT, 1, (int64_t[]){3}));
        minfer_session *s = open_model(m, provider_lists[p], NULL, NULL);
        minfer_tensor *c = NULL, *y = NULL;
        const char *names[] = {"cond"};
        assert_ok(minfer_tensor_create(MINFER_DTYPE_BOOL, NULL, 0, &c));
        *(unsigned char *)minfer_tensor_data(c) = 0;
        assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)&c, 1, NULL, &y, 1));
        assert_tensor_f32(y, ((int64_t[]){3}), 1, three);
        minfer_tensor_free(y);
        y = NULL;
        *(unsigned char *)minfer_tensor_data(c) = 1;
        assert_int_equal(minfer_session_run(s, names, (const minfer_tensor *const *)&c, 1, NULL,
                                            &y, 1),
                         MINFER_ERR_SHAPE);
        assert_error_mentions("'choose'");
        assert_error_mentions("then_branch output 0 has shape [2], but 'y' is declared [3]");
        assert_null(y);
        minfer_tensor_free(c);
        minfer_session_free(s);
    }
}

/* ---- LRN ----------------------------------------------------------------------- */

static minfer_session *lrn_session(const char *providers, int64_t size, float alpha,
                                   const int64_t *dims, int strict) {
    minfer_graph_builder *b = NULL;
    minfer_session *s = NULL;
    minfer_options *opt = NULL;
    assert_ok(minfer_builder_create(13, &b));
    assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 4, NULL));
    assert_ok(minfer_builder_add_node(b, "LRN", NULL, "lrn", (const char *[]){"x"}, 1,
                                      (const char *[]){"y"}, 1, NULL));
    assert_ok(minfer_builder_set_attr_int(b, 0, "size", size));
    assert_ok(minfer_builder_set_attr_float(b, 0, "alpha", alpha));
    assert_ok(minfer_builder_set_attr_float(b, 0, "beta", 0.75f));
    assert_ok(minfer_builder_add_output(b, "y"));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers));
    assert_ok(minfer_options_set_strict_placement(opt, strict));
    assert_ok(minfer_session_create_from_builder(b, opt, &s));
    minfer_options_free(opt);
    minfer_builder_free(b);
    return s;
}

static void test_lrn_huge_size(void **state) {
    (void)state;
    int64_t dims[4] = {2, 5, 3, 3};
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 4, &x));
    float *xd = minfer_tensor_data(x);
    for (int k = 0; k < 90; k++)
        xd[k] = (float)((k * 37) % 23 - 11) / 7.0f;
    /* alpha / size is the same: 2^31 / (2^31-1) against 9 / 9 (to 1e-9).
     * A window of 9 reaches every one of 5 channels, as 2^31-1 does, and
     * the even size 2^31-2 (which oneDNN declines) does too. */
    const int64_t sizes[3] = {2147483647, 2147483646, 9};
    const float alphas[3] = {2147483648.0f, 2147483648.0f, 9.0f};
    for (int p = 0; p < n_provider_lists; p++) {
        minfer_tensor *y[3] = {NULL, NULL, NULL};
        for (int k = 0; k < 3; k++) {
            /* oneDNN takes the odd sizes (its clipped window is what is
             * tested there): strict placement makes sure it does */
            int strict = strncmp(provider_lists[p], "onednn", 6) == 0 && sizes[k] % 2 == 1;
            minfer_session *s = lrn_session(provider_lists[p], sizes[k], alphas[k], dims, strict);
            assert_ok(run_x(s, x, &y[k]));
            minfer_session_free(s);
        }
        for (int k = 0; k < 2; k++) {
            const float *got = minfer_tensor_data(y[k]), *want = minfer_tensor_data(y[2]);
            for (int e = 0; e < 90; e++)
                assert_float_equal(got[e], want[e], 1e-5 * (fabs(want[e]) + 1e-3));
        }
        /* and the window of 9 computed by hand for one element: channel 2
         * of (0, 1, 1) sums all five channels */
        double sq = 0;
        for (int c = 0; c < 5; c++)
            sq += (double)xd[c * 9 + 4] * xd[c * 9 + 4];
        double want = xd[2 * 9 + 4] / pow(1 + 1.0 * sq, 0.75);
        assert_float_equal(((const float *)minfer_tensor_data(y[2]))[2 * 9 + 4], want,
                           1e-5 * fabs(want) + 1e-7);
        for (int k = 0; k < 3; k++)
            minfer_tensor_free(y[k]);
    }
    minfer_tensor_free(x);
}

/* ---- pools --------------------------------------------------------------------- */

/* A window of 2^31-1 taps, nearly all over padding, on a 4-element input:
 * the work is what the input holds. */
static void test_pool_huge_kernel(void **state) {
    (void)state;
    int64_t dims[3] = {1, 1, 4}, kernel = 2147483647, pads[2] = {1073741822, 1073741821};
    minfer_tensor *x = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 3, &x));
    float xv[4] = {3, 9, -2, 5};
    memcpy(minfer_tensor_data(x), xv, sizeof xv);
    struct {
        const char *op;
        int include_pad, indices;
        float want;
    } cases[] = {
        {"MaxPool", 0, 0, 9},
        {"MaxPool", 0, 1, 9},
        {"AveragePool", 0, 0, 3.75f},
        {"AveragePool", 1, 0, (float)(15.0 / 2147483647.0)},
    };
    for (int p = 0; p < n_provider_lists; p++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            minfer_graph_builder *b = NULL;
            minfer_session *s = NULL;
            minfer_options *opt = NULL;
            size_t node;
            assert_ok(minfer_builder_create(13, &b));
            assert_ok(minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 3, NULL));
            assert_ok(minfer_builder_add_node(b, cases[k].op, NULL, "pool", (const char *[]){"x"},
                                              1, (const char *[]){"y", "i"},
                                              cases[k].indices ? 2 : 1, &node));
            assert_ok(minfer_builder_set_attr_ints(b, node, "kernel_shape", &kernel, 1));
            assert_ok(minfer_builder_set_attr_ints(b, node, "pads", pads, 2));
            if (cases[k].include_pad)
                assert_ok(minfer_builder_set_attr_int(b, node, "count_include_pad", 1));
            assert_ok(minfer_builder_add_output(b, "y"));
            if (cases[k].indices)
                assert_ok(minfer_builder_add_output(b, "i"));
            assert_ok(minfer_options_create(&opt));
            assert_ok(minfer_options_set_providers_str(opt, provider_lists[p]));
            assert_ok(minfer_session_create_from_builder(b, opt, &s));
            minfer_options_free(opt);
            minfer_builder_free(b);
            minfer_tensor *out[2] = {NULL, NULL};
            const char *names[] = {"x"};
            assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)&x, 1, NULL, out,
                                         cases[k].indices ? 2 : 1));
            assert_int_equal(minfer_tensor_numel(out[0]), 1);
            float got = *(const float *)minfer_tensor_data(out[0]);
            assert_float_equal(got, cases[k].want, 1e-6 * fabs(cases[k].want) + 1e-12);
            if (cases[k].indices)
                assert_int_equal(*(const int64_t *)minfer_tensor_data(out[1]), 1);
            minfer_tensor_free(out[0]);
            minfer_tensor_free(out[1]);
            minfer_session_free(s);
        }
    minfer_tensor_free(x);
}

/* ---- Einsum -------------------------------------------------------------------- */

/* An Einsum session on inputs a, b (b NULL: one input), or the status of
 * its creation in *st (then NULL). */
static minfer_session *einsum_session(const char *providers, const char *eq,
                                      const minfer_tensor *a, const minfer_tensor *b,
                                      const minfer_run_limits *rl, minfer_status *st) {
    minfer_graph_builder *g = NULL;
    minfer_session *s = NULL;
    minfer_options *opt = NULL;
    assert_ok(minfer_builder_create(13, &g));
    const minfer_tensor *ins[2] = {a, b};
    const char *names[2] = {"x", "z"};
    for (int k = 0; k < (b ? 2 : 1); k++) {
        int64_t dims[MINFER_MAX_RANK];
        size_t rank = minfer_tensor_rank(ins[k]);
        for (size_t d = 0; d < rank; d++)
            dims[d] = minfer_tensor_dims(ins[k])[d];
        assert_ok(minfer_builder_add_input(g, names[k], MINFER_DTYPE_FLOAT, dims, rank, NULL));
    }
    assert_ok(minfer_builder_add_node(g, "Einsum", NULL, "einsum", names, b ? 2 : 1,
                                      (const char *[]){"y"}, 1, NULL));
    assert_ok(minfer_builder_set_attr_string(g, 0, "equation", eq));
    assert_ok(minfer_builder_add_output(g, "y"));
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers));
    if (rl)
        assert_ok(minfer_options_set_run_limits(opt, rl));
    *st = minfer_session_create_from_builder(g, opt, &s);
    minfer_options_free(opt);
    minfer_builder_free(g);
    return s;
}

static minfer_tensor *filled(const int64_t *dims, int32_t rank, int seed) {
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, (size_t)rank, &t));
    float *d = minfer_tensor_data(t);
    for (size_t k = 0; k < (size_t)minfer_tensor_numel(t); k++)
        d[k] = (float)((int)((k * 7 + (size_t)seed * 13) % 11) - 5) / 4.0f;
    return t;
}

static minfer_status einsum_run(minfer_session *s, minfer_tensor *a, minfer_tensor *b,
                                minfer_tensor **y) {
    const char *names[2] = {"x", "z"};
    minfer_tensor *ins[2] = {a, b};
    *y = NULL;
    return minfer_session_run(s, names, (const minfer_tensor *const *)ins, b ? 2 : 1, NULL, y, 1);
}

static void test_einsum_factored(void **state) {
    (void)state;
    int64_t d4[4] = {32, 32, 32, 32};
    minfer_tensor *a = filled(d4, 4, 1), *b = filled(d4, 4, 2);
    double sa = 0, sb = 0;
    for (size_t k = 0; k < (size_t)minfer_tensor_numel(a); k++) {
        sa += ((const float *)minfer_tensor_data(a))[k];
        sb += ((const float *)minfer_tensor_data(b))[k];
    }
    for (int p = 0; p < n_provider_lists; p++) {
        minfer_status st;
        minfer_session *s = einsum_session(provider_lists[p], "abcd,efgh->", a, b, NULL, &st);
        assert_ok(st);
        minfer_tensor *y = NULL;
        assert_ok(einsum_run(s, a, b, &y));
        assert_int_equal(minfer_tensor_rank(y), 0);
        double want = sa * sb;
        assert_float_equal(*(const float *)minfer_tensor_data(y), want, 1e-6 * fabs(want) + 1e-3);
        minfer_tensor_free(y);
        minfer_session_free(s);
    }
    minfer_tensor_free(a);
    minfer_tensor_free(b);
}

/* Equations against a naive sum written out here. */
static void test_einsum_values(void **state) {
    (void)state;
    int64_t d23[2] = {2, 3}, d34[2] = {3, 4}, d33[2] = {3, 3}, d233[3] = {2, 3, 3};
    minfer_tensor *a = filled(d23, 2, 1), *b = filled(d34, 2, 2), *sq = filled(d33, 2, 3),
                  *bsq = filled(d233, 3, 4);
    const float *A = minfer_tensor_data(a), *B = minfer_tensor_data(b),
                *S = minfer_tensor_data(sq), *T = minfer_tensor_data(bsq);
    float mm[8] = {0}, trace = 0, diag[3], bdiag[6], rowdot[2] = {0}, outer_sum = 0;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++)
            for (int j = 0; j < 3; j++)
                mm[i * 4 + k] += A[i * 3 + j] * B[j * 4 + k];
    for (int i = 0; i < 3; i++) {
        trace += S[i * 4];
        diag[i] = S[i * 4];
        for (int n = 0; n < 2; n++)
            bdiag[n * 3 + i] = T[n * 9 + i * 4];
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            rowdot[i] += A[i * 3 + j] * S[j * 3 + j]; /* "ij,jj->i" */
    for (int k = 0; k < 6; k++)
        for (int m = 0; m < 12; m++)
            outer_sum += A[k] * B[m];
    struct {
        const char *eq;
        minfer_tensor *x, *z;
        int64_t dims[3];
        int32_t rank;
        const float *want;
    } cases[] = {
        {"ij,jk->ik", a, b, {2, 4}, 2, mm},
        {"ij,jk", a, b, {2, 4}, 2, mm}, /* implicit: i, k */
        {"ii->", sq, NULL, {0}, 0, &trace},
        {"ii", sq, NULL, {0}, 0, &trace},
        {"ii->i", sq, NULL, {3}, 1, diag},
        {"...ii->...i", bsq, NULL, {2, 3}, 2, bdiag},
        {"ij,jj->i", a, sq, {2}, 1, rowdot},
        {"ab,cd->", a, b, {0}, 0, &outer_sum},
    };
    for (int p = 0; p < n_provider_lists; p++)
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            minfer_status st;
            minfer_session *s =
                einsum_session(provider_lists[p], cases[c].eq, cases[c].x, cases[c].z, NULL, &st);
            assert_ok(st);
            minfer_tensor *y = NULL;
            assert_ok(einsum_run(s, cases[c].x, cases[c].z, &y));
            assert_tensor_f32(y, cases[c].dims, cases[c].rank, cases[c].want);
            minfer_tensor_free(y);
            minfer_session_free(s);
        }
    minfer_tensor_free(a);
    minfer_tensor_free(b);
    minfer_tensor_free(sq);
    minfer_tensor_free(bsq);
}

static void test_einsum_bad_equations(void **state) {
    (void)state;
    int64_t d23[2] = {2, 3}, d34[2] = {3, 4}, d45[2] = {4, 5};
    minfer_tensor *a = filled(d23, 2, 1), *b = filled(d34, 2, 2), *c = filled(d45, 2, 3);
    struct {
        const char *eq;
        minfer_tensor *x, *z;
        const char *says;
    } cases[] = {
        {"ab,bc->aa", a, b, "output label 'a' appears more than once"},
        {"ab,bc->ad", a, b, "output label 'd' is in no input"},
        {"abc,bc->ac", a, b, "term 0"},
        {"ab,bc->ac", a, c, "label 'b'"},
        {"ab,bc,cd->ad", a, b, "3 terms for 2 inputs"},
        {"ab->ab", a, b, "1 terms for 2 inputs"},
        {"a...b...,bc->ac", a, b, "more than one ellipsis"},
        {"a.b,bc->ac", a, b, "'.'"},
        {"a1,bc->ac", a, b, "not a letter"},
        {"ab,bc->a->c", a, b, "more than one \"->\""},
    };
    for (int p = 0; p < n_provider_lists; p++)
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            minfer_status st;
            minfer_session *s =
                einsum_session(provider_lists[p], cases[k].eq, cases[k].x, cases[k].z, NULL, &st);
            if (st == MINFER_OK) {
                minfer_tensor *y = NULL;
                st = einsum_run(s, cases[k].x, cases[k].z, &y);
                minfer_session_free(s);
                assert_null(y);
            }
            if (st != MINFER_ERR_MODEL && st != MINFER_ERR_SHAPE)
                fail_msg("%s on %s: %s, not a model or shape error: %s", cases[k].eq,
                         provider_lists[p], minfer_status_str(st), minfer_last_error());
            assert_error_mentions(cases[k].says);
            assert_error_mentions("Einsum");
        }
    minfer_tensor_free(a);
    minfer_tensor_free(b);
    minfer_tensor_free(c);
}

/* The output shape is known at creation (the equation is inferred there)
 * and the kernel agrees with it: the implicit form orders letters as ASCII
 * (upper case first), ellipsis dims broadcast and stay symbolic. */
static void test_einsum_inferred(void **state) {
    (void)state;
    int64_t d23[2] = {2, 3};
    minfer_tensor *a = filled(d23, 2, 1);
    const float *A = minfer_tensor_data(a);
    float at[6];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            at[j * 2 + i] = A[i * 3 + j];
    for (int p = 0; p < n_provider_lists; p++) {
        minfer_status st;
        /* "aB": the implicit output is "Ba", a transpose */
        minfer_session *s = einsum_session(provider_lists[p], "aB", a, NULL, NULL, &st);
        assert_ok(st);
        minfer_value_info info;
        assert_ok(minfer_session_output_info(s, 0, &info));
        assert_int_equal(info.rank, 2);
        assert_int_equal(info.dims[0], 3);
        assert_int_equal(info.dims[1], 2);
        minfer_tensor *y = NULL;
        assert_ok(einsum_run(s, a, NULL, &y));
        assert_tensor_f32(y, ((int64_t[]){3, 2}), 2, at);
        minfer_tensor_free(y);
        minfer_session_free(s);
    }
    /* a symbolic batch dim broadcast against 1 */
    minfer_graph_builder *g = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_builder_create(13, &g));
    assert_ok(minfer_builder_add_input(g, "x", MINFER_DTYPE_FLOAT, (int64_t[]){-1, 2, 3}, 3,
                                       (const char *[]){"N", NULL, NULL}));
    assert_ok(minfer_builder_add_input(g, "z", MINFER_DTYPE_FLOAT, (int64_t[]){1, 3, 4}, 3, NULL));
    assert_ok(minfer_builder_add_node(g, "Einsum", NULL, "einsum", (const char *[]){"x", "z"}, 2,
                                      (const char *[]){"y"}, 1, NULL));
    assert_ok(minfer_builder_set_attr_string(g, 0, "equation", "...ij,...jk"));
    assert_ok(minfer_builder_add_output(g, "y"));
    assert_ok(minfer_session_create_from_builder(g, NULL, &s));
    minfer_builder_free(g);
    int64_t dx[3] = {5, 2, 3}, dz[3] = {1, 3, 4};
    minfer_tensor *x = filled(dx, 3, 2), *z = filled(dz, 3, 3), *y = NULL;
    assert_ok(einsum_run(s, x, z, &y));
    assert_int_equal(minfer_tensor_rank(y), 3);
    assert_int_equal(minfer_tensor_dims(y)[0], 5);
    assert_int_equal(minfer_tensor_dims(y)[1], 2);
    assert_int_equal(minfer_tensor_dims(y)[2], 4);
    const float *X = minfer_tensor_data(x), *Z = minfer_tensor_data(z),
                *Y = minfer_tensor_data(y);
    for (int n = 0; n < 5; n++)
        for (int i = 0; i < 2; i++)
            for (int k = 0; k < 4; k++) {
                float want = 0;
                for (int j = 0; j < 3; j++)
                    want += X[n * 6 + i * 3 + j] * Z[j * 4 + k];
                assert_float_equal(Y[n * 8 + i * 4 + k], want, 1e-5);
            }
    minfer_tensor_free(x);
    minfer_tensor_free(z);
    minfer_tensor_free(y);
    minfer_session_free(s);
    minfer_tensor_free(a);
}

/* A contraction that cannot be factored is charged to the run's budget. */
static void test_einsum_charged(void **state) {
    (void)state;
    int64_t d[2] = {64, 64};
    minfer_tensor *a = filled(d, 2, 1), *b = filled(d, 2, 2);
    for (int p = 0; p < n_provider_lists; p++) {
        /* 64 x 64 outputs x 64 summed x 2 operands = 524288 products */
        minfer_run_limits rl = {sizeof rl, 100000, 0};
        minfer_status st;
        minfer_session *s = einsum_session(provider_lists[p], "ij,jk->ik", a, b, &rl, &st);
        assert_ok(st);
        minfer_tensor *y = NULL;
        assert_int_equal(einsum_run(s, a, b, &y), MINFER_ERR_LIMIT);
        assert_error_mentions("max_run_elements");
        assert_error_mentions("4096 x 64 products of 2 operands, more than the run's budget");
        minfer_session_free(s);
        rl.max_run_elements = 524288 + 2 * 4096; /* products, output, delivery */
        s = einsum_session(provider_lists[p], "ij,jk->ik", a, b, &rl, &st);
        assert_ok(st);
        assert_ok(einsum_run(s, a, b, &y));
        minfer_tensor_free(y);
        minfer_session_free(s);
    }
    minfer_tensor_free(a);
    minfer_tensor_free(b);
}

int main(int argc, char **argv) {
    static const char *const cpu_only[] = {"cpu"};
    provider_lists = argc > 1 ? (const char *const *)argv + 1 : cpu_only;
    n_provider_lists = argc > 1 ? argc - 1 : 1;
    if (getenv("TEST_FILTER")) /* one test while iterating: TEST_FILTER=test_deadline */
        cmocka_set_test_filter(getenv("TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_loop_fails_fast),
        cmocka_unit_test(test_nested_loop_counts_every_level),
        cmocka_unit_test(test_scan_outputs_under_tensor_limit),
        cmocka_unit_test(test_run_elements),
        cmocka_unit_test(test_sequence_elements),
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_run_limits_abi),
        cmocka_unit_test(test_default_tensor_limit),
        cmocka_unit_test(test_if_branch_type),
        cmocka_unit_test(test_if_branch_shape),
        cmocka_unit_test(test_lrn_huge_size),
        cmocka_unit_test(test_pool_huge_kernel),
        cmocka_unit_test(test_einsum_factored),
        cmocka_unit_test(test_einsum_values),
        cmocka_unit_test(test_einsum_bad_equations),
        cmocka_unit_test(test_einsum_inferred),
        cmocka_unit_test(test_einsum_charged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
