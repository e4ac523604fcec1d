/*
 * RNN, GRU and LSTM on the oneDNN provider (providers/onednn/rnn.c) against
 * the CPU provider (the oracle), across the attribute space: cells,
 * directions, linear_before_reset, with and without biases and initial
 * states, every subset of outputs, explicit activations, 1 and 3 threads.
 * Each graph is one recurrent node with random inputs and weights; all its
 * outputs must agree (|a - b| <= 1e-4 + 1e-3 |b|) and the node must be
 * placed on onednn. What rnn.c declines (sequence_lens, clip, layout 1,
 * input_forget, peepholes, other activations, weights that are not
 * constant) must land on the CPU provider instead, and still run.
 * Also the sequence models' attention: a mask that knows the head count
 * the scores' shapes lost still gets Attention onto oneDNN.
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

#define MAX_IN 8
#define TC_SEED 4242u
#include "provider_case.h"

enum { F_BIAS = 1, F_H0 = 2, F_C0 = 4, F_NO_Y = 8, F_NO_YH = 16, F_YC = 32, F_W_INPUT = 64 };

typedef struct rnn_spec {
    const char *op;
    const char *direction;
    int64_t S, B, I, H;
    int flags;
    int lbr;                 /* GRU linear_before_reset */
    const char *const *acts; /* activations, or NULL */
    size_t n_acts;
    const char *extra_int; /* an int attribute set to extra_value (or NULL) */
    int64_t extra_value;
    float clip;              /* > 0: the clip attribute */
    int seq_lens, peepholes; /* add these inputs */
    int64_t opset;
    int want_onednn; /* 1: the node must run on onednn, 0: on cpu */
} rnn_spec;

static const char *const out_names[3] = {"y", "yh", "yc"};

/* Runs the graph on providers at threads; fills outs (NULL where not an
 * output); returns 0 when the session was not created. */
static int run_graph(tcase *t, const char *provider, int threads, size_t n_out,
                     const char *const *names, minfer_tensor **outs, const char *want_on) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    const char *in_names[MAX_IN];
    const minfer_tensor *ins[MAX_IN];
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    if (!strcmp(provider, "onednn,cpu")) {
        const char *list[2] = {"onednn", "cpu"};
        assert_int_equal(minfer_options_set_providers(opt, list, 2), MINFER_OK);
    } else {
        assert_int_equal(minfer_options_set_providers(opt, &provider, 1), MINFER_OK);
    }
    assert_int_equal(minfer_options_set_threads(opt, threads), MINFER_OK);
    minfer_status st = minfer_session_create_from_builder(t->b, opt, &s);
    minfer_options_free(opt);
    if (st != MINFER_OK) {
        print_message("  %s: session not created: %s\n", provider, minfer_last_error());
        return 0;
    }
    if (want_on)
        for (size_t i = 0; i < minfer_session_node_count(s); i++) {
            minfer_node_placement p;
            assert_int_equal(minfer_session_node_placement(s, i, &p), MINFER_OK);
            if (strcmp(p.provider, want_on) != 0)
                fail_msg("node %s (%s) placed on %s, not %s", p.node_name, p.op_type, p.provider,
                         want_on);
        }
    for (size_t i = 0; i < t->n_in; i++) {
        in_names[i] = t->names[i];
        ins[i] = t->inputs[i];
    }
    for (size_t o = 0; o < n_out; o++)
        outs[o] = NULL;
    st = minfer_session_run(s, in_names, ins, t->n_in, names, outs, n_out);
    if (st != MINFER_OK)
        fail_msg("%s: run failed: %s", provider, minfer_last_error());
    minfer_session_free(s);
    return 1;
}

static void compare(const minfer_tensor *got, const minfer_tensor *want, const char *what) {
    assert_int_equal(minfer_tensor_rank(got), minfer_tensor_rank(want));
    for (size_t d = 0; d < minfer_tensor_rank(got); d++)
        assert_int_equal(minfer_tensor_dims(got)[d], minfer_tensor_dims(want)[d]);
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++)
        if (!(fabsf(g[i] - w[i]) <= 1e-4f + 1e-3f * fabsf(w[i])))
            fail_msg("element %lld of %s: onednn %g, cpu %g", (long long)i, what, (double)g[i],
                     (double)w[i]);
}

static void rnn_case(const rnn_spec *c) {
    tcase t;
    int64_t D = !strcmp(c->direction, "bidirectional") ? 2 : 1;
    int64_t G = !strcmp(c->op, "LSTM") ? 4 : !strcmp(c->op, "GRU") ? 3 : 1;
    int lstm = G == 4;
    tc_init(&t, c->opset ? c->opset : 13);
    tc_input(&t, "x", (const int64_t[]){c->S, c->B, c->I}, 3);
    if (c->flags & F_W_INPUT)
        tc_input(&t, "w", (const int64_t[]){D, G * c->H, c->I}, 3);
    else
        tc_const(&t, "w", (const int64_t[]){D, G * c->H, c->I}, 3, NULL);
    tc_const(&t, "r", (const int64_t[]){D, G * c->H, c->H}, 3, NULL);
    if (c->flags & F_BIAS)
        tc_const(&t, "b", (const int64_t[]){D, 2 * G * c->H}, 2, NULL);
    if (c->seq_lens) {
        minfer_tensor *sl = NULL;
        assert_int_equal(minfer_tensor_create(MINFER_DTYPE_INT32, &c->B, 1, &sl), MINFER_OK);
        int32_t *v = minfer_tensor_data(sl);
        for (int64_t i = 0; i < c->B; i++)
            v[i] = (int32_t)(c->S - i % c->S);
        assert_int_equal(minfer_builder_add_initializer(t.b, "sl", sl), MINFER_OK);
        minfer_tensor_free(sl);
    }
    if (c->flags & F_H0)
        tc_input(&t, "h0", (const int64_t[]){D, c->B, c->H}, 3);
    if (c->flags & F_C0)
        tc_input(&t, "c0", (const int64_t[]){D, c->B, c->H}, 3);
    if (c->peepholes)
        tc_const(&t, "p", (const int64_t[]){D, 3 * c->H}, 2, NULL);
    const char *in[8] = {"x",
                         "w",
                         "r",
                         c->flags & F_BIAS ? "b" : "",
                         c->seq_lens ? "sl" : "",
                         c->flags & F_H0 ? "h0" : "",
                         c->flags & F_C0 ? "c0" : "",
                         c->peepholes ? "p" : ""};
    size_t n_in = 8;
    while (n_in > 3 && !in[n_in - 1][0])
        n_in--;
    const char *outs[3] = {c->flags & F_NO_Y ? "" : "y", c->flags & F_NO_YH ? "" : "yh",
                           lstm && (c->flags & F_YC) ? "yc" : ""};
    size_t n_node_out = lstm && (c->flags & F_YC) ? 3 : 2, idx;
    assert_int_equal(
        minfer_builder_add_node(t.b, c->op, NULL, "rnn", in, n_in, outs, n_node_out, &idx),
        MINFER_OK);
    minfer_builder_set_attr_int(t.b, idx, "hidden_size", c->H);
    minfer_builder_set_attr_string(t.b, idx, "direction", c->direction);
    if (G == 3)
        minfer_builder_set_attr_int(t.b, idx, "linear_before_reset", c->lbr);
    if (c->acts)
        minfer_builder_set_attr_strings(t.b, idx, "activations", c->acts, c->n_acts);
    if (c->extra_int)
        minfer_builder_set_attr_int(t.b, idx, c->extra_int, c->extra_value);
    if (c->clip > 0)
        minfer_builder_set_attr_float(t.b, idx, "clip", c->clip);
    const char *names[3];
    size_t n_out = 0;
    for (size_t o = 0; o < n_node_out; o++)
        if (outs[o][0]) {
            names[n_out++] = out_names[o];
            assert_int_equal(minfer_builder_add_output(t.b, out_names[o]), MINFER_OK);
        }
    assert_true(n_out > 0);

    minfer_tensor *want[3], *got[3];
    if (!run_graph(&t, "cpu", 2, n_out, names, want, NULL))
        fail_msg("the CPU oracle cannot run this graph: %s", minfer_last_error());
    const char *on = c->want_onednn ? "onednn" : "cpu";
    for (int threads = 1; threads <= 3; threads += 2) {
        if (!run_graph(&t, "onednn,cpu", threads, n_out, names, got, on))
            fail_msg("onednn,cpu refused the graph: %s", minfer_last_error());
        for (size_t o = 0; o < n_out; o++) {
            compare(got[o], want[o], names[o]);
            minfer_tensor_free(got[o]);
        }
    }
    for (size_t o = 0; o < n_out; o++)
        minfer_tensor_free(want[o]);
    for (size_t i = 0; i < t.n_in; i++)
        minfer_tensor_free(t.inputs[i]);
    minfer_builder_free(t.b);
}

static void test_gru(void **state) {
    (void)state;
    /* PyTorch's form: linear_before_reset, bidirectional, bias, initial h. */
    rnn_spec c = {.op = "GRU",
                  .direction = "bidirectional",
                  .S = 7,
                  .B = 3,
                  .I = 5,
                  .H = 6,
                  .flags = F_BIAS | F_H0,
                  .lbr = 1,
                  .want_onednn = 1};
    rnn_case(&c);
    /* Without linear_before_reset (Rbh outside r), each direction alone. */
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    for (int d = 0; d < 3; d++) {
        rnn_spec k = {.op = "GRU",
                      .direction = dirs[d],
                      .S = 6,
                      .B = 2,
                      .I = 4,
                      .H = 5,
                      .flags = F_BIAS | F_H0,
                      .want_onednn = 1};
        rnn_case(&k);
        k.lbr = 1;
        k.flags = F_NO_YH; /* no bias, no initial state, Y only */
        rnn_case(&k);
    }
    /* Only Y_h; explicit default activations in any case. */
    static const char *const acts[] = {"sigmoid", "TANH", "Sigmoid", "Tanh"};
    rnn_spec h = {.op = "GRU",
                  .direction = "bidirectional",
                  .S = 4,
                  .B = 1,
                  .I = 3,
                  .H = 8,
                  .flags = F_BIAS | F_NO_Y,
                  .lbr = 1,
                  .acts = acts,
                  .n_acts = 4,
                  .want_onednn = 1};
    rnn_case(&h);
}

static void test_lstm(void **state) {
    (void)state;
    /* Gate order i, o, f, c permuted into oneDNN's, bias summed. */
    static const char *const dirs[] = {"forward", "reverse", "bidirectional"};
    for (int d = 0; d < 3; d++) {
        rnn_spec c = {.op = "LSTM",
                      .direction = dirs[d],
                      .S = 5,
                      .B = 3,
                      .I = 4,
                      .H = 6,
                      .flags = F_BIAS | F_H0 | F_C0 | F_YC,
                      .want_onednn = 1};
        rnn_case(&c);
        c.flags = F_YC | F_NO_Y;
        rnn_case(&c);
    }
    /* Only c0, only Y. */
    rnn_spec c = {.op = "LSTM",
                  .direction = "forward",
                  .S = 9,
                  .B = 2,
                  .I = 7,
                  .H = 4,
                  .flags = F_BIAS | F_C0 | F_NO_YH,
                  .want_onednn = 1};
    rnn_case(&c);
    /* Large enough to run on several threads. */
    rnn_spec big = {.op = "LSTM",
                    .direction = "bidirectional",
                    .S = 20,
                    .B = 8,
                    .I = 64,
                    .H = 64,
                    .flags = F_BIAS | F_H0 | F_C0 | F_YC,
                    .want_onednn = 1};
    rnn_case(&big);
    static const char *const acts[] = {"Sigmoid", "Tanh", "Tanh"};
    rnn_spec a = {.op = "LSTM",
                  .direction = "bidirectional",
                  .S = 3,
                  .B = 2,
                  .I = 3,
                  .H = 4,
                  .flags = F_BIAS,
                  .acts = acts,
                  .n_acts = 3,
                  .want_onednn = 1};
    rnn_case(&a);
}

static void test_vanilla_rnn(void **state) {
    (void)state;
    rnn_spec c = {.op = "RNN",
                  .direction = "forward",
                  .S = 6,
                  .B = 2,
                  .I = 5,
                  .H = 7,
                  .flags = F_BIAS | F_H0,
                  .want_onednn = 1};
    rnn_case(&c);
    static const char *const relu[] = {"Relu", "Relu"}, *const sig[] = {"Sigmoid"};
    rnn_spec r = {.op = "RNN",
                  .direction = "bidirectional",
                  .S = 5,
                  .B = 3,
                  .I = 4,
                  .H = 6,
                  .flags = F_BIAS,
                  .acts = relu,
                  .n_acts = 2,
                  .want_onednn = 1};
    rnn_case(&r);
    rnn_spec s = {.op = "RNN",
                  .direction = "reverse",
                  .S = 5,
                  .B = 3,
                  .I = 4,
                  .H = 6,
                  .flags = F_H0,
                  .acts = sig,
                  .n_acts = 1,
                  .want_onednn = 1};
    rnn_case(&s);
}

/* What oneDNN's cells cannot compute exactly stays on the CPU provider. */
static void test_declined(void **state) {
    (void)state;
    rnn_spec c = {.op = "GRU",
                  .direction = "forward",
                  .S = 5,
                  .B = 3,
                  .I = 4,
                  .H = 6,
                  .flags = F_BIAS,
                  .lbr = 1};
    c.seq_lens = 1;
    rnn_case(&c);
    c.seq_lens = 0;
    c.clip = 0.5f;
    rnn_case(&c);
    c.clip = 0;
    c.opset = 14;
    c.extra_int = "layout";
    c.extra_value = 1;
    rnn_case(&c);
    c.opset = 0;
    c.extra_int = NULL;
    c.flags |= F_W_INPUT;
    rnn_case(&c);
    static const char *const tanh2[] = {"Tanh", "Tanh"};
    rnn_spec a = {.op = "GRU",
                  .direction = "forward",
                  .S = 5,
                  .B = 3,
                  .I = 4,
                  .H = 6,
                  .flags = F_BIAS,
                  .lbr = 1,
                  .acts = tanh2,
                  .n_acts = 2};
    rnn_case(&a);
    rnn_spec f = {.op = "LSTM",
                  .direction = "forward",
                  .S = 5,
                  .B = 3,
                  .I = 4,
                  .H = 6,
                  .flags = F_BIAS,
                  .extra_int = "input_forget",
                  .extra_value = 1};
    rnn_case(&f);
    rnn_spec p = {
        .op = "LSTM", .direction = "forward", .S = 5, .B = 3, .I = 4, .H = 6, .flags = F_BIAS};
    p.peepholes = 1;
    rnn_case(&p);
    static const char *const mixed[] = {"Tanh", "Relu"};
    rnn_spec m = {.op = "RNN",
                  .direction = "bidirectional",
                  .S = 5,
                  .B = 3,
                  .I = 4,
                  .H = 6,
                  .flags = F_BIAS,
                  .acts = mixed,
                  .n_acts = 2};
    rnn_case(&m);
}

/* ---- Attention whose mask knows an axis the scores leave symbolic -------- */

/* T5's position bias [1, heads, S, S] is added to scores whose head axis
 * shape inference lost (Q, KT, V from Reshapes of computed shapes): the
 * node must still be placed on oneDNN when the session is built with the
 * dimensions unknown, and agree with the CPU provider. */
static void test_attention_mask_knows_heads(void **state) {
    (void)state;
    tcase t;
    tc_init(&t, 13);
    const int64_t qd[4] = {1, 4, 6, 8}, kd[4] = {1, 4, 8, 6}, vd[4] = {1, 4, 6, 8};
    const int64_t md[4] = {1, 4, 6, 6};
    const char *const qn[4] = {NULL, "h", "s", NULL}, *const kn[4] = {NULL, "h", NULL, "s"};
    const char *const mn[4] = {NULL, NULL, "s", "s"};
    const char *const names[4] = {"q", "kt", "v", "m"};
    const int64_t *dims[4] = {qd, kd, vd, md};
    const char *const *syms[4] = {qn, kn, qn, mn};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(minfer_builder_add_input(t.b, names[i], MINFER_DTYPE_FLOAT, dims[i], 4,
                                                  syms[i]),
                         MINFER_OK);
        snprintf(t.names[t.n_in], sizeof t.names[0], "%s", names[i]);
        t.inputs[t.n_in++] = random_tensor(&t, dims[i], 4);
    }
    size_t n = tc_node(&t, "Attention", "minfer", names, 4, "y");
    minfer_builder_set_attr_float(t.b, n, "scale", 0.5f);
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    const char *out_name = "y";
    minfer_tensor *want = NULL, *got = NULL;
    if (!run_graph(&t, "cpu", 2, 1, &out_name, &want, NULL))
        fail_msg("the CPU oracle cannot run this graph: %s", minfer_last_error());
    if (!run_graph(&t, "onednn,cpu", 2, 1, &out_name, &got, "onednn"))
        fail_msg("onednn,cpu refused the graph: %s", minfer_last_error());
    compare(got, want, "y");
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    for (size_t i = 0; i < t.n_in; i++)
        minfer_tensor_free(t.inputs[i]);
    minfer_builder_free(t.b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gru),
        cmocka_unit_test(test_lstm),
        cmocka_unit_test(test_vanilla_rnn),
        cmocka_unit_test(test_declined),
        cmocka_unit_test(test_attention_mask_knows_heads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
