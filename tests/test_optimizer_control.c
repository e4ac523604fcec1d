/*
 * The optimizer on graphs with control flow (core/optimize/, docs/optimizer.md).
 *
 * A graph with an If is optimized around it: the tensor-only parts fuse,
 * while the If node and every value its branches read by name from the
 * outer scope stay as they were. The graph here puts such a captured value
 * at the seam of a fusable pattern (Conv -> Relu, the Conv's output read by
 * both branches through an Identity) next to a second Conv -> Relu that
 * nothing captures:
 *
 *     x -> Conv -> c -> Relu -> r -> Conv -> c2 -> Relu -> y
 *                  |
 *                  +--> Identity -> ci
 *                       If(cond) then: t = ci * 2   else: t = ci + ci  -> z
 *
 * The Identity goes, but ci keeps its name (the Conv writes it: renaming it
 * to c would leave the branches reading a name the graph no longer has, and
 * the graph written back would not load), the second pair fuses, the first
 * does not (ci has two readers), the If still reads ci, and the outputs
 * agree with the graph as written for both branches: once with mf_optimize
 * directly (the result written and loaded again), once through a session at
 * the default level (core/session/session.c runs the optimizer on it)
 * against one at level 0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "minfer/compile.h"
#include "test_util.h"

#include "graph/graph.h"
#include "util/internal.h"
#include "load/onnx_save.h"
#include "optimize/optimizer.h"

/* ---- building graphs ------------------------------------------------------ */

static int value(mf_graph *g, const char *name) {
    int v = mf_graph_intern(g, name);
    assert_true(v >= 0);
    return v;
}

static void add_input(mf_graph *g, const char *name, int32_t dtype, const int64_t *dims,
                      int rank) {
    int v = value(g, name);
    mf_value *val = &g->values[v];
    val->dtype = dtype;
    val->rank = rank;
    val->is_input = 1;
    for (int d = 0; d < rank; d++)
        val->dims[d] = dims[d];
    g->inputs = realloc(g->inputs, (g->n_inputs + 1) * sizeof *g->inputs);
    g->inputs[g->n_inputs++] = v;
}

/* A float initializer of deterministic values. */
static void add_const(mf_graph *g, const char *name, const int64_t *dims, int rank) {
    minfer_tensor *t = NULL;
    assert_int_equal(mf_tensor_new(MINFER_DTYPE_FLOAT, dims, rank, &t), MINFER_OK);
    float *p = t->view.data;
    for (size_t i = 0; i < t->view.nbytes / sizeof *p; i++)
        p[i] = (float)sin((double)(i * 7 + (size_t)rank * 3 + 1)) * 0.5f;
    int v = value(g, name);
    g->values[v].initializer = t;
    g->values[v].dtype = MINFER_DTYPE_FLOAT;
    g->values[v].rank = rank;
    for (int d = 0; d < rank; d++)
        g->values[v].dims[d] = dims[d];
}

static int add_node(mf_graph *g, const char *op, int n_in, const char *const *ins,
                    const char *out) {
    int i = mf_graph_add_node(g);
    assert_true(i >= 0);
    mf_node *n = &g->nodes[i];
    n->name = mf_strdup("");
    n->op_type = mf_strdup(op);
    n->domain = mf_strdup("");
    n->inputs = calloc((size_t)n_in + 1, sizeof *n->inputs);
    n->outputs = calloc(1, sizeof *n->outputs);
    for (int k = 0; k < n_in; k++)
        n->inputs[k] = value(g, ins[k]);
    n->n_inputs = (size_t)n_in;
    n->outputs[0] = value(g, out);
    n->n_outputs = 1;
    return i;
}

static mf_attr *add_attr(mf_graph *g, int node, const char *name, int type) {
    mf_node *n = &g->nodes[node];
    n->attrs = realloc(n->attrs, (n->n_attrs + 1) * sizeof *n->attrs);
    mf_attr *a = &n->attrs[n->n_attrs++];
    memset(a, 0, sizeof *a);
    a->name = mf_strdup(name);
    a->type = type;
    return a;
}

static void add_output(mf_graph *g, const char *name) {
    int v = value(g, name);
    g->values[v].is_output = 1;
    g->outputs = realloc(g->outputs, (g->n_outputs + 1) * sizeof *g->outputs);
    g->outputs[g->n_outputs++] = v;
}

static int add_conv(mf_graph *g, const char *x, const char *w, const char *b, const char *y) {
    static const int64_t pads[4] = {1, 1, 1, 1};
    const char *ins[3] = {x, w, b};
    int i = add_node(g, "Conv", 3, ins, y);
    mf_attr *a = add_attr(g, i, "pads", MINFER_ATTR_INTS);
    a->ints = malloc(sizeof pads);
    memcpy(a->ints, pads, sizeof pads);
    a->count = 4;
    return i;
}

/* A branch reading outer value ci: t = ci * 2 (then) or ci + ci (else). */
static mf_graph *branch(const mf_graph *parent, int then) {
    mf_graph *sg = mf_graph_new();
    assert_non_null(sg);
    sg->parent = parent;
    sg->name = mf_strdup(then ? "then" : "else");
    if (then) {
        int64_t one = 1;
        add_const(sg, "two", &one, 1);
        float *p = sg->values[mf_graph_find(sg, "two")].initializer->view.data;
        p[0] = 2.0f;
        const char *ins[2] = {"ci", "two"};
        add_node(sg, "Mul", 2, ins, "t");
    } else {
        const char *ins[2] = {"ci", "ci"};
        add_node(sg, "Add", 2, ins, "t");
    }
    add_output(sg, "t");
    sg->values[mf_graph_find(sg, "t")].dtype = MINFER_DTYPE_FLOAT;
    sg->values[mf_graph_find(sg, "t")].rank = 4;
    for (int d = 0; d < 4; d++)
        sg->values[mf_graph_find(sg, "t")].dims[d] = -1;
    assert_int_equal(mf_graph_finalize(sg, then ? "then" : "else"), MINFER_OK);
    return sg;
}

static mf_graph *control_graph(void) {
    mf_graph *g = mf_graph_new();
    assert_non_null(g);
    g->opsets = calloc(1, sizeof *g->opsets);
    g->opsets[0].domain = mf_strdup("");
    g->opsets[0].version = 13;
    g->n_opsets = 1;
    int64_t xd[4] = {1, 2, 6, 6}, wd[4] = {2, 2, 3, 3}, bd[1] = {2};
    add_input(g, "x", MINFER_DTYPE_FLOAT, xd, 4);
    add_input(g, "cond", MINFER_DTYPE_BOOL, NULL, 0);
    add_const(g, "w", wd, 4);
    add_const(g, "b", bd, 1);
    add_const(g, "w2", wd, 4);
    add_const(g, "b2", bd, 1);
    const char *x[1] = {"c"}, *r[1] = {"c2"}, *cond[1] = {"cond"};
    add_conv(g, "x", "w", "b", "c");
    add_node(g, "Identity", 1, x, "ci");
    add_node(g, "Relu", 1, x, "r");
    add_conv(g, "r", "w2", "b2", "c2");
    add_node(g, "Relu", 1, r, "y");
    int f = add_node(g, "If", 1, cond, "z");
    mf_attr *a = add_attr(g, f, "then_branch", MINFER_ATTR_GRAPH);
    a->g = branch(g, 1);
    a = add_attr(g, f, "else_branch", MINFER_ATTR_GRAPH);
    a->g = branch(g, 0);
    add_output(g, "y");
    add_output(g, "z");
    assert_int_equal(mf_graph_finalize(g, "test"), MINFER_OK);
    return g;
}

/* ---- running -------------------------------------------------------------- */

/* Runs the serialized model at optimization level `level` (-1: the
 * default) for cond; outputs y and z into out[2]. Returns the session's
 * node count. */
static size_t run_model(const void *data, size_t size, int level, int cond, minfer_tensor **out) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *ins[2] = {NULL, NULL};
    int64_t xd[4] = {1, 2, 6, 6};
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    if (level >= 0)
        assert_ok(minfer_options_set_optimization_level(opt, level));
    assert_ok(minfer_session_create_from_memory(data, size, opt, &s));
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, xd, 4, &ins[0]));
    float *p = minfer_tensor_data(ins[0]);
    for (int64_t i = 0; i < minfer_tensor_numel(ins[0]); i++)
        p[i] = (float)cos((double)(i * 13 + 2)) * 2.0f;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_BOOL, NULL, 0, &ins[1]));
    *(unsigned char *)minfer_tensor_data(ins[1]) = (unsigned char)cond;
    const char *names[2] = {"x", "cond"}, *outs[2] = {"y", "z"};
    assert_ok(minfer_session_run(s, names, (const minfer_tensor *const *)ins, 2, outs, out, 2));
    size_t nodes = minfer_session_node_count(s);
    minfer_tensor_free(ins[0]);
    minfer_tensor_free(ins[1]);
    minfer_session_free(s);
    minfer_options_free(opt);
    return nodes;
}

static void assert_close(const minfer_tensor *want, const minfer_tensor *got) {
    assert_int_equal(minfer_tensor_numel(want), minfer_tensor_numel(got));
    const float *a = minfer_tensor_data(want), *b = minfer_tensor_data(got);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (!(fabsf(a[i] - b[i]) <= 1e-5f + 1e-4f * fabsf(a[i])))
            fail_msg("element %lld: %g as written, %g optimized", (long long)i, a[i], b[i]);
}

/* Both branches of `got` agree with `want` (both serialized models).
 * Returns the node count of got's session. */
static size_t compare(const void *want, size_t want_size, int want_level, const void *got,
                      size_t got_size, int got_level) {
    size_t nodes = 0;
    for (int cond = 0; cond < 2; cond++) {
        minfer_tensor *a[2] = {NULL, NULL}, *b[2] = {NULL, NULL};
        run_model(want, want_size, want_level, cond, a);
        nodes = run_model(got, got_size, got_level, cond, b);
        for (int k = 0; k < 2; k++) {
            assert_close(a[k], b[k]);
            minfer_tensor_free(a[k]);
            minfer_tensor_free(b[k]);
        }
    }
    return nodes;
}

static size_t count_op(const mf_graph *g, const char *domain, const char *op) {
    size_t n = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        n += strcmp(g->nodes[i].domain, domain) == 0 && strcmp(g->nodes[i].op_type, op) == 0;
    return n;
}

/* ---- cases ---------------------------------------------------------------- */

static void test_capture_survives_fusion(void **state) {
    (void)state;
    mf_evaluator *ev = NULL;
    mf_opt_report rep;
    void *before = NULL, *after = NULL;
    size_t before_size = 0, after_size = 0;
    mf_graph *g = control_graph();
    assert_ok(mf_save_onnx_memory(g, &before, &before_size));
    assert_ok(mf_evaluator_open(&ev));
    mf_opt_ctx ctx = {2, mf_evaluator_eval_node, ev, 1 << 20, &rep, 0, NULL};
    assert_ok(mf_optimize(g, &ctx, "test"));
    mf_evaluator_close(ev);

    /* The uncaptured pair fused, the captured one did not. */
    assert_int_equal(count_op(g, "minfer", "FusedConv"), 1);
    assert_int_equal(count_op(g, "", "Relu"), 1);
    assert_int_equal(count_op(g, "", "If"), 1);
    assert_int_equal(count_op(g, "", "Identity"), 0);
    int c = mf_graph_find(g, "ci");
    assert_true(c >= 0);
    int p = g->values[c].producer;
    assert_true(p >= 0);
    assert_string_equal(g->nodes[p].op_type, "Conv");
    /* The If still reads ci, as its implicit input, in both branches. */
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "If") != 0)
            continue;
        assert_int_equal(n->n_implicit, 1);
        assert_int_equal(n->inputs[n->n_inputs - 1], c);
        for (size_t a = 0; a < n->n_attrs; a++) {
            const mf_graph *sg = n->attrs[a].g;
            assert_non_null(sg);
            assert_int_equal(sg->n_captures, 1);
            assert_string_equal(sg->values[sg->captures[0]].name, "ci");
            assert_int_equal(n->inputs[sg->capture_slot[0]], c);
        }
    }
    assert_ok(mf_save_onnx_memory(g, &after, &after_size));
    assert_int_equal(compare(before, before_size, 0, after, after_size, 0), 4);
    free(after);
    free(before);
    mf_graph_free(g);
}

/* The same graph through sessions: the default level (the session's own
 * optimizer run) against level 0. */
static void test_session_optimizes_around_if(void **state) {
    (void)state;
    void *data = NULL;
    size_t size = 0;
    mf_graph *g = control_graph();
    assert_ok(mf_save_onnx_memory(g, &data, &size));
    mf_graph_free(g);
    /* Conv, Relu, FusedConv (the second pair) and If. */
    assert_int_equal(compare(data, size, 0, data, size, -1), 4);
    free(data);
}

/* The same graph compiled (minfer compile): optimized around the If as a
 * session does it, and its subgraphs loaded from the file run without a
 * leak (their empty opset arrays were overwritten; ASan's leak check). */
static void test_compiled_optimizes_around_if(void **state) {
    (void)state;
    void *data = NULL, *mfc = NULL;
    size_t size = 0;
    char onnx_path[] = "/tmp/minfer-optctl-XXXXXX", mfc_path[64];
    mf_graph *g = control_graph();
    assert_ok(mf_save_onnx_memory(g, &data, &size));
    mf_graph_free(g);
    int fd = mkstemp(onnx_path);
    assert_true(fd >= 0);
    assert_true(write(fd, data, size) == (ssize_t)size);
    close(fd);
    snprintf(mfc_path, sizeof mfc_path, "%s.mfc", onnx_path);
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_compile_model(onnx_path, mfc_path, opt));
    minfer_options_free(opt);
    FILE *f = fopen(mfc_path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(n > 0);
    mfc = malloc((size_t)n);
    assert_int_equal(fread(mfc, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    /* Conv, Relu, FusedConv and If, as in the session at the default level. */
    assert_int_equal(compare(data, size, 0, mfc, (size_t)n, -1), 4);
    unlink(mfc_path);
    unlink(onnx_path);
    free(mfc);
    free(data);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capture_survives_fusion),
        cmocka_unit_test(test_session_optimizes_around_if),
        cmocka_unit_test(test_compiled_optimizes_around_if),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
