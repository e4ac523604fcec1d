/*
 * The transformer rewrites of core/optimize/passes_transformer.c that the
 * realistic-size sequence models need (issue 18): GELU in its tanh form
 * (GPT-2's gelu_new) fused into minfer:Gelu with approximate "tanh", and
 * Pow(X, 2) (RMSNorm's square) as Mul(X, X). Each graph runs on the CPU
 * provider at optimization level 0 (as written) and 3; the optimized graph
 * must have the expected ops and agree with the unoptimized one (the
 * square bit for bit), and near misses must be left alone.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minfer/builder.h"
#include "minfer/minfer.h"

#define MAX_IN 2
#define TC_SEED 777u
#include "provider_case.h"

/* Runs the graph (output "y") on cpu at level; *ops gets the op types of
 * the placed nodes, space separated. */
static minfer_tensor *run_level(tcase *t, int level, char *ops, size_t ops_size) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *out = NULL;
    const char *cpu = "cpu", *names[MAX_IN], *y = "y";
    const minfer_tensor *ins[MAX_IN];
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers(opt, &cpu, 1), MINFER_OK);
    assert_int_equal(minfer_options_set_optimization_level(opt, level), MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK)
        fail_msg("session not created: %s", minfer_last_error());
    ops[0] = '\0';
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
        size_t len = strlen(ops);
        snprintf(ops + len, ops_size - len, "%s%s", len ? " " : "", p.op_type);
    }
    for (size_t i = 0; i < t->n_in; i++) {
        names[i] = t->names[i];
        ins[i] = t->inputs[i];
    }
    if (minfer_session_run(s, names, ins, t->n_in, &y, &out, 1) != MINFER_OK)
        fail_msg("run failed: %s", minfer_last_error());
    minfer_session_free(s);
    return out;
}

/* Optimizes the graph, checks the ops it becomes (want_ops; NULL: those
 * of the graph as written) and the output against level 0 (exact: bit for
 * bit). */
static void check_rewrite(tcase *t, const char *want_ops, int exact) {
    char ops0[256], ops3[256];
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
    minfer_tensor *want = run_level(t, 0, ops0, sizeof ops0);
    minfer_tensor *got = run_level(t, 3, ops3, sizeof ops3);
    if (strcmp(ops3, want_ops ? want_ops : ops0) != 0)
        fail_msg("optimized ops '%s', want '%s' (unoptimized '%s')", ops3,
                 want_ops ? want_ops : ops0, ops0);
    assert_int_equal(minfer_tensor_numel(got), minfer_tensor_numel(want));
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (exact ? memcmp(&g[i], &w[i], sizeof g[i]) != 0
                  : !(fabsf(g[i] - w[i]) <= 1e-5f + 1e-5f * fabsf(w[i])))
            fail_msg("element %lld: optimized %.9g, as written %.9g", (long long)i, (double)g[i],
                     (double)w[i]);
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    for (size_t i = 0; i < t->n_in; i++)
        minfer_tensor_free(t->inputs[i]);
    minfer_builder_free(t->b);
}

static void scalar(tcase *t, const char *name, float v) {
    tc_const(t, name, NULL, 0, &v);
}

static void node2(tcase *t, const char *op, const char *a, const char *b, const char *out) {
    const char *in[2] = {a, b};
    tc_node(t, op, NULL, in, b ? 2 : 1, out);
}

/* 0.5 x (1 + tanh(sqrt(2/pi) (x + c x^3))), the tail in the order given:
 * 0: Mul(Mul(X, 0.5), 1 + t) as GPT-2 exports it; 1: Mul(Mul(X, 1 + t), 0.5);
 * 2: Mul(Mul(1 + t, 0.5), X). */
static void gelu_tanh_graph(tcase *t, int tail, float c) {
    tc_init(t, 13);
    tc_input(t, "x", (const int64_t[]){2, 5, 16}, 3);
    for (int64_t i = 0; i < 2 * 5 * 16; i++) /* GELU's range: a few units */
        ((float *)minfer_tensor_data(t->inputs[0]))[i] *= 4.0f;
    scalar(t, "three", 3.0f);
    scalar(t, "c", c);
    scalar(t, "k", 0.7978845608f);
    scalar(t, "one", 1.0f);
    scalar(t, "half", 0.5f);
    node2(t, "Pow", "x", "three", "p");
    node2(t, "Mul", "p", "c", "pc");
    node2(t, "Add", "x", "pc", "in");
    node2(t, "Mul", "in", "k", "u");
    node2(t, "Tanh", "u", NULL, "th");
    node2(t, "Add", "th", "one", "a1");
    if (tail == 0) {
        node2(t, "Mul", "x", "half", "xh");
        node2(t, "Mul", "xh", "a1", "y");
    } else if (tail == 1) {
        node2(t, "Mul", "x", "a1", "xa");
        node2(t, "Mul", "xa", "half", "y");
    } else {
        node2(t, "Mul", "a1", "half", "ah");
        node2(t, "Mul", "ah", "x", "y");
    }
}

static void test_gelu_tanh(void **state) {
    (void)state;
    for (int tail = 0; tail < 3; tail++) {
        tcase t;
        gelu_tanh_graph(&t, tail, 0.044715f);
        check_rewrite(&t, "Gelu", 0);
    }
}

/* Another coefficient is another function: left as written (Pow(X, 3)
 * stays a Pow; only squares become Muls). */
static void test_gelu_tanh_near_miss(void **state) {
    (void)state;
    tcase t;
    gelu_tanh_graph(&t, 0, 0.05f);
    check_rewrite(&t, NULL, 1);
}

/* RMSNorm as exported: x * 1 / sqrt(mean(x^2) + eps), the square a Mul. */
static void test_square(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    tc_input(&t, "x", (const int64_t[]){3, 32}, 2);
    scalar(&t, "two", 2.0f);
    scalar(&t, "eps", 1e-6f);
    node2(&t, "Pow", "x", "two", "sq");
    size_t rm = tc_node(&t, "ReduceMean", NULL, (const char *const[]){"sq"}, 1, "ms");
    minfer_builder_set_attr_ints(t.b, rm, "axes", (const int64_t[]){-1}, 1);
    node2(&t, "Add", "ms", "eps", "v");
    node2(&t, "Sqrt", "v", NULL, "r");
    node2(&t, "Div", "x", "r", "y");
    check_rewrite(&t, "Mul ReduceMean Add Sqrt Div", 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gelu_tanh),
        cmocka_unit_test(test_gelu_tanh_near_miss),
        cmocka_unit_test(test_square),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
