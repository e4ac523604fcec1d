/*
 * The transformer fusions of issue 18 in core/optimize/passes_transformer.c:
 * RMSNorm as PyTorch exporters write it (Pow(X, 2) or Mul(X, X), ReduceMean
 * over the last axis, Add(eps), Sqrt, then Reciprocal or Div(1, .) and
 * Mul(X, .), or Div(X, .), then the weight Mul on either side) into
 * minfer:RMSNormalization, and a Gelu after a MatMul or Gemm into the fused
 * op's activation (a oneDNN eltwise post-op), and a Where with a constant
 * bool mask before a Softmax into an Add of a float mask, so that the
 * attention fuses.
 *
 * Each graph runs at optimization level 0 (as written) and 3 on the CPU
 * provider and, where it is built, on onednn,cpu; the optimized graph must
 * have the expected ops (the provider named for the fused node) and agree
 * with the unoptimized one within 1e-5. Near misses (the reduction over
 * another axis, eps outside the square root, a divisor that is not 1, a
 * second reader of an intermediate) must be left as written.
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

#define MAX_IN 3
#define TC_SEED 4242u
#include "provider_case.h"

static const char *const lists[][2] = {{"cpu", NULL},
#ifdef TEST_HAVE_ONEDNN
                                        {"onednn", "cpu"},
#endif
};

/* Runs the graph (output "y") with providers at level; *ops gets
 * "op@provider" of the placed nodes, space separated. */
static minfer_tensor *run_level(tcase *t, const char *const *prov, int level, char *ops,
                                size_t ops_size) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *out = NULL;
    const char *names[MAX_IN], *y = "y";
    const minfer_tensor *ins[MAX_IN];
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers(opt, prov, prov[1] ? 2 : 1), MINFER_OK);
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
        snprintf(ops + len, ops_size - len, "%s%s@%s", len ? " " : "", p.op_type, p.provider);
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

/* 1 if every space-separated word of want (an op, or op@provider) is in
 * ops in order and ops has no other word. */
static int ops_match(const char *ops, const char *want) {
    char a[512], b[512];
    snprintf(a, sizeof a, "%s", ops);
    snprintf(b, sizeof b, "%s", want);
    char *sa = NULL, *sb = NULL, *wa = strtok_r(a, " ", &sa), *wb = strtok_r(b, " ", &sb);
    for (; wa && wb; wa = strtok_r(NULL, " ", &sa), wb = strtok_r(NULL, " ", &sb)) {
        size_t n = strlen(wb);
        if (strchr(wb, '@') ? strcmp(wa, wb) != 0 : strncmp(wa, wb, n) != 0 || wa[n] != '@')
            return 0;
    }
    return !wa && !wb;
}

/* Builds the graph with build(t, arg) once per provider list, optimizes
 * it, checks the ops (want: NULL for those of the graph as written, "-"
 * for no check; want_per_list[l] instead when given; a word "op@provider"
 * names the provider too) and the output against level 0. */
static void check(void (*build)(tcase *, int), int arg, const char *want,
                  const char *const *want_per_list) {
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        tcase t;
        char ops0[512], ops3[512];
        build(&t, arg);
        assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
        minfer_tensor *ref = run_level(&t, lists[l], 0, ops0, sizeof ops0);
        minfer_tensor *got = run_level(&t, lists[l], 3, ops3, sizeof ops3);
        const char *w = want_per_list ? want_per_list[l] : want;
        if (w && !strcmp(w, "-"))
            ; /* ops checked by the caller */
        else if (w ? !ops_match(ops3, w) : !ops_match(ops3, ops0))
            fail_msg("%s: optimized ops '%s', want '%s' (unoptimized '%s')", lists[l][0], ops3,
                     w ? w : ops0, ops0);
        assert_int_equal(minfer_tensor_numel(got), minfer_tensor_numel(ref));
        const float *g = minfer_tensor_data(got), *r = minfer_tensor_data(ref);
        for (int64_t i = 0; i < minfer_tensor_numel(ref); i++)
            if (!(fabsf(g[i] - r[i]) <= 1e-5f + 1e-5f * fabsf(r[i])))
                fail_msg("%s: element %lld: optimized %.9g, as written %.9g", lists[l][0],
                         (long long)i, (double)g[i], (double)r[i]);
        minfer_tensor_free(got);
        minfer_tensor_free(ref);
        for (size_t i = 0; i < t.n_in; i++)
            minfer_tensor_free(t.inputs[i]);
        minfer_builder_free(t.b);
    }
}

static void scalar(tcase *t, const char *name, float v) {
    tc_const(t, name, NULL, 0, &v);
}

static size_t node2(tcase *t, const char *op, const char *a, const char *b, const char *out) {
    const char *in[2] = {a, b};
    return tc_node(t, op, NULL, in, b ? 2 : 1, out);
}

/* ---- RMSNorm ---------------------------------------------------------------- */

enum {
    RMS_SQUARE_MUL = 1,   /* Mul(X, X) instead of Pow(X, 2) */
    RMS_DIV_ONE = 2,      /* Div(1, sqrt) instead of Reciprocal */
    RMS_DIV_X = 4,        /* Div(X, sqrt): no separate inverse */
    RMS_WEIGHT_LEFT = 8,  /* Mul(W, .) */
    RMS_OPSET18 = 16,     /* ReduceMean with axes as an input */
    RMS_AXIS_WRONG = 32,  /* near miss: the mean over axis 1 of [2, 6, 32] */
    RMS_EPS_OUTSIDE = 64, /* near miss: Sqrt(mean) + eps */
    RMS_DIV_TWO = 128,    /* near miss: Div(2, sqrt) */
    RMS_SHARED = 256,     /* near miss: the mean of squares is also an output */
};

/* x * 1 / sqrt(mean(x^2) + 1e-6) * w over [2, 6, 32] in the form flags say
 * (y the result; with RMS_SHARED the graph also outputs the mean). */
static void rms_graph(tcase *t, int flags) {
    tc_init(t, flags & RMS_OPSET18 ? 18 : 13);
    tc_input(t, "x", (const int64_t[]){2, 6, 32}, 3);
    tc_const(t, "w", (const int64_t[]){32}, 1, NULL);
    scalar(t, "two", 2.0f);
    scalar(t, "eps", 1e-6f);
    scalar(t, "one", flags & RMS_DIV_TWO ? 2.0f : 1.0f);
    if (flags & RMS_SQUARE_MUL)
        node2(t, "Mul", "x", "x", "sq");
    else
        node2(t, "Pow", "x", "two", "sq");
    int64_t axis = flags & RMS_AXIS_WRONG ? 1 : -1;
    size_t rm;
    if (flags & RMS_OPSET18) {
        tc_const_i64(t, "axes", (const int64_t[]){1}, 1, &axis);
        rm = node2(t, "ReduceMean", "sq", "axes", "ms");
    } else {
        rm = node2(t, "ReduceMean", "sq", NULL, "ms");
        minfer_builder_set_attr_ints(t->b, rm, "axes", &axis, 1);
    }
    if (flags & RMS_EPS_OUTSIDE) {
        node2(t, "Sqrt", "ms", NULL, "r0");
        node2(t, "Add", "r0", "eps", "r");
    } else {
        node2(t, "Add", "ms", "eps", "v");
        node2(t, "Sqrt", "v", NULL, "r");
    }
    if (flags & RMS_DIV_X) {
        node2(t, "Div", "x", "r", "n");
    } else {
        if (flags & (RMS_DIV_ONE | RMS_DIV_TWO))
            node2(t, "Div", "one", "r", "inv");
        else
            node2(t, "Reciprocal", "r", NULL, "inv");
        node2(t, "Mul", "x", "inv", "n");
    }
    if (flags & RMS_WEIGHT_LEFT)
        node2(t, "Mul", "w", "n", "y");
    else
        node2(t, "Mul", "n", "w", "y");
    if (flags & RMS_SHARED)
        assert_int_equal(minfer_builder_add_output(t->b, "ms"), MINFER_OK);
}

static const char *const rms_fused[] = {"RMSNormalization@cpu",
#ifdef TEST_HAVE_ONEDNN
                                        "RMSNormalization@onednn",
#endif
};

static void test_rmsnorm_forms(void **state) {
    (void)state;
    static const int forms[] = {0,
                                RMS_SQUARE_MUL,
                                RMS_DIV_ONE,
                                RMS_DIV_X,
                                RMS_WEIGHT_LEFT,
                                RMS_SQUARE_MUL | RMS_DIV_ONE | RMS_WEIGHT_LEFT,
                                RMS_OPSET18,
                                RMS_OPSET18 | RMS_DIV_X | RMS_SQUARE_MUL};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        check(rms_graph, forms[i], NULL, rms_fused);
}

static void test_rmsnorm_near_misses(void **state) {
    (void)state;
    static const int forms[] = {RMS_AXIS_WRONG, RMS_EPS_OUTSIDE, RMS_DIV_TWO,
                                RMS_AXIS_WRONG | RMS_OPSET18};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        tcase t;
        rms_graph(&t, forms[i]);
        char ops[512];
        assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
        minfer_tensor *y = run_level(&t, lists[0], 3, ops, sizeof ops);
        if (strstr(ops, "RMSNormalization") || !strstr(ops, "ReduceMean"))
            fail_msg("form %d fused: '%s'", forms[i], ops);
        minfer_tensor_free(y);
        for (size_t k = 0; k < t.n_in; k++)
            minfer_tensor_free(t.inputs[k]);
        minfer_builder_free(t.b);
        check(rms_graph, forms[i], "-", NULL); /* Pow(X, 2) may become Mul(X, X) */
    }
}

/* The mean of squares read by a second output: nothing may be removed. */
static void test_rmsnorm_shared_mean(void **state) {
    (void)state;
    tcase t;
    char ops[512];
    rms_graph(&t, RMS_SHARED);
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *y = run_level(&t, lists[0], 3, ops, sizeof ops);
    if (strstr(ops, "RMSNormalization") || !strstr(ops, "ReduceMean"))
        fail_msg("fused with its mean read elsewhere: '%s'", ops);
    minfer_tensor_free(y);
    for (size_t k = 0; k < t.n_in; k++)
        minfer_tensor_free(t.inputs[k]);
    minfer_builder_free(t.b);
}

/* ---- Gelu after MatMul / Gemm ----------------------------------------------- */

enum {
    GM_BIAS = 1,  /* MatMul + Add(bias) -> FusedMatMul(bias) first */
    GM_TANH = 2,  /* the tanh form */
    GM_GEMM = 4,  /* Gemm (transB) instead of MatMul */
    GM_SHARED = 8 /* near miss: the MatMul output also read by an Add */
};

/* Gelu(x W [+ b]) as fuse_gelu leaves it: the erf form written out, or the
 * tanh form. */
static void gelu_mm_graph(tcase *t, int flags) {
    tc_init(t, 13);
    int gemm = flags & GM_GEMM;
    tc_input(t, "x", gemm ? (const int64_t[]){12, 16} : (const int64_t[]){2, 6, 16},
             gemm ? 2 : 3);
    for (int64_t i = 0; i < minfer_tensor_numel(t->inputs[0]); i++)
        ((float *)minfer_tensor_data(t->inputs[0]))[i] *= 2.0f;
    tc_const(t, "w", gemm ? (const int64_t[]){24, 16} : (const int64_t[]){16, 24}, 2, NULL);
    tc_const(t, "b", (const int64_t[]){24}, 1, NULL);
    scalar(t, "s2", (float)sqrt(2.0));
    scalar(t, "one", 1.0f);
    scalar(t, "half", 0.5f);
    scalar(t, "three", 3.0f);
    scalar(t, "c", 0.044715f);
    scalar(t, "k", 0.7978845608f);
    if (gemm) {
        size_t g = tc_node(t, "Gemm", NULL, (const char *const[]){"x", "w", "b"}, 3, "h");
        minfer_builder_set_attr_int(t->b, g, "transB", 1);
    } else if (flags & GM_BIAS) {
        node2(t, "MatMul", "x", "w", "mm");
        node2(t, "Add", "mm", "b", "h");
    } else {
        node2(t, "MatMul", "x", "w", "h");
    }
    if (flags & GM_TANH) {
        node2(t, "Pow", "h", "three", "p");
        node2(t, "Mul", "p", "c", "pc");
        node2(t, "Add", "h", "pc", "in");
        node2(t, "Mul", "in", "k", "u");
        node2(t, "Tanh", "u", NULL, "e");
    } else {
        node2(t, "Div", "h", "s2", "d");
        node2(t, "Erf", "d", NULL, "e");
    }
    node2(t, "Add", "e", "one", "a1");
    node2(t, "Mul", "h", "half", "xh");
    node2(t, "Mul", "xh", "a1", flags & GM_SHARED ? "g" : "y");
    if (flags & GM_SHARED)
        node2(t, "Add", "g", "h", "y");
}

static const char *const gm_fused[] = {"FusedMatMul@cpu",
#ifdef TEST_HAVE_ONEDNN
                                       "FusedMatMul@onednn",
#endif
};
static const char *const gemm_fused[] = {"FusedGemm@cpu",
#ifdef TEST_HAVE_ONEDNN
                                         "FusedGemm@onednn",
#endif
};

static void test_matmul_gelu(void **state) {
    (void)state;
    static const int forms[] = {0, GM_BIAS, GM_TANH, GM_BIAS | GM_TANH};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        check(gelu_mm_graph, forms[i], NULL, gm_fused);
    check(gelu_mm_graph, GM_GEMM, NULL, gemm_fused);
    check(gelu_mm_graph, GM_GEMM | GM_TANH, NULL, gemm_fused);
}

/* The MatMul's output read again after the Gelu: the Gelu stays its own
 * node. */
static void test_matmul_gelu_shared(void **state) {
    (void)state;
    check(gelu_mm_graph, GM_SHARED, "MatMul Gelu Add", NULL);
    check(gelu_mm_graph, GM_SHARED | GM_BIAS, "FusedMatMul Gelu Add", NULL);
}

/* ---- Constant Where masks before a Softmax ------------------------------------ */

enum {
    WM_INVERTED = 1, /* Where(C, F, S): C marks the masked scores */
    WM_NEG_INF = 2,  /* F = -inf instead of the lowest float */
    WM_NO_SOFTMAX = 4, /* near miss: the Where read by an Exp, not a Softmax */
    WM_INPUT_COND = 8, /* C a graph input, not a constant: the mask made at run time */
    WM_MILD_FILL = 16, /* near miss: F = -1e4, which S + F does not equal */
    WM_WIDE_COND = 32, /* near miss (with WM_INPUT_COND): C [3, 1, 4, 5] widens the scores */
};

/* Softmax(Where(causal, Q KT / 2.5, F)) V over [2, 4, 8] x [2, 8, 5] x
 * [2, 5, 6], the causal mask [4, 5] a bool constant as GPT-2's export folds
 * it for the plan's shapes. */
static void where_mask_graph(tcase *t, int flags) {
    tc_init(t, 13);
    tc_input(t, "q", (const int64_t[]){2, 4, 8}, 3);
    tc_input(t, "kt", (const int64_t[]){2, 8, 5}, 3);
    tc_const(t, "v", (const int64_t[]){2, 5, 6}, 3, NULL);
    scalar(t, "c", 2.5f);
    scalar(t, "fill", flags & WM_NEG_INF     ? -INFINITY
                      : flags & WM_MILD_FILL ? -1e4f
                                             : -3.4028234663852886e38f);
    int64_t md[2] = {4, 5};
    minfer_tensor *m = NULL;
    assert_int_equal(minfer_tensor_create(MINFER_DTYPE_BOOL, md, 2, &m), MINFER_OK);
    unsigned char *mb = minfer_tensor_data(m);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++) /* keep j <= i + 1 */
            mb[i * 5 + j] = (j <= i + 1) != !!(flags & WM_INVERTED);
    if (flags & WM_WIDE_COND) {
        int64_t wd[4] = {3, 1, 4, 5};
        minfer_tensor_free(m);
        assert_int_equal(minfer_tensor_create(MINFER_DTYPE_BOOL, wd, 4, &m), MINFER_OK);
        mb = minfer_tensor_data(m);
        for (int i = 0; i < 60; i++)
            mb[i] = (i % 5) <= (i / 5) % 4 + 1;
        assert_int_equal(minfer_builder_add_input(t->b, "mask", MINFER_DTYPE_BOOL, wd, 4, NULL),
                         MINFER_OK);
        snprintf(t->names[t->n_in], sizeof t->names[0], "mask");
        t->inputs[t->n_in++] = m;
    } else if (flags & WM_INPUT_COND) {
        assert_int_equal(minfer_builder_add_input(t->b, "mask", MINFER_DTYPE_BOOL, md, 2, NULL),
                         MINFER_OK);
        snprintf(t->names[t->n_in], sizeof t->names[0], "mask");
        t->inputs[t->n_in++] = m;
    } else {
        assert_int_equal(minfer_builder_add_initializer(t->b, "mask", m), MINFER_OK);
        minfer_tensor_free(m);
    }
    node2(t, "MatMul", "q", "kt", "s0");
    node2(t, "Div", "s0", "c", "s");
    const char *in[3] = {"mask", flags & WM_INVERTED ? "fill" : "s",
                         flags & WM_INVERTED ? "s" : "fill"};
    tc_node(t, "Where", NULL, in, 3, "sw");
    if (flags & WM_NO_SOFTMAX) {
        node2(t, "Exp", "sw", NULL, "p");
    } else {
        size_t sm = node2(t, "Softmax", "sw", NULL, "p");
        minfer_builder_set_attr_int(t->b, sm, "axis", -1);
    }
    node2(t, "MatMul", "p", "v", "y");
}

static const char *const attn_fused[] = {"Attention@cpu",
#ifdef TEST_HAVE_ONEDNN
                                         "Attention@onednn",
#endif
};

static void test_where_mask(void **state) {
    (void)state;
    static const int forms[] = {0, WM_INVERTED, WM_NEG_INF, WM_INVERTED | WM_NEG_INF};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        check(where_mask_graph, forms[i], NULL, attn_fused);
}

static const char *const attn_where_fused[] = {"Where@cpu Attention@cpu",
#ifdef TEST_HAVE_ONEDNN
                                               "Where@cpu Attention@onednn",
#endif
};

/* A computed condition (GPT-2's causal mask sliced to the sequence, here
 * a graph input): a Where over the condition's [4, 5] makes the float mask
 * at run time, and the attention fuses; a condition that would widen the
 * scores ([3, 1, 4, 5] against [2, 4, 5]) is left alone. */
static void test_where_mask_computed(void **state) {
    (void)state;
    check(where_mask_graph, WM_INPUT_COND, NULL, attn_where_fused);
    check(where_mask_graph, WM_INPUT_COND | WM_INVERTED, NULL, attn_where_fused);
    check(where_mask_graph, WM_INPUT_COND | WM_NEG_INF, NULL, attn_where_fused);
    check(where_mask_graph, WM_INPUT_COND | WM_MILD_FILL, "MatMul Div Where Softmax MatMul", NULL);
    check(where_mask_graph, WM_INPUT_COND | WM_WIDE_COND, "MatMul Div Where Softmax MatMul",
          NULL);
}

static void test_where_mask_near_misses(void **state) {
    (void)state;
    check(where_mask_graph, WM_NO_SOFTMAX, "MatMul Div Where Exp MatMul", NULL);
    check(where_mask_graph, WM_MILD_FILL, "MatMul Div Where Softmax MatMul", NULL);
}

/* ---- Rotary position embeddings ----------------------------------------------- */

enum {
    ROT_COMPUTED = 1,   /* LLaMA's export: [B, S, 32] reshaped to heads, the half
                           computed from Shape, Cos and Sin inputs [1, 1, S, 8] */
    ROT_SWAPPED = 2,    /* Mul(Cos, X), Mul(Sin, R), Add(R Sin, X Cos) */
    ROT_NEG_START = 4,  /* x2 = X[..., -4:] (constant bounds) */
    ROT_NEG_FIRST = 8,  /* near miss: Concat(Neg(x1), x2), the other rotation */
    ROT_OFF_BY_ONE = 16, /* near miss: x2 = X[..., 3:7] */
    ROT_SUB = 32,       /* near miss: Sub instead of the final Add */
    ROT_GROWS = 64,     /* near miss: Cos [3, 2, 4, 5, 8] makes the output larger */
    ROT_SHARED = 128,   /* near miss: the rotated halves are also a graph output */
    ROT_COS_COLUMN = 256, /* Cos [5, 1]: one value per position, broadcast over D */
};

static void rot_input(tcase *t, const char *name, const int64_t *dims, size_t rank,
                      const char *const *names) {
    assert_int_equal(minfer_builder_add_input(t->b, name, MINFER_DTYPE_FLOAT, dims, rank, names),
                     MINFER_OK);
}

/* X * Cos + Concat(-X[..., 4:], X[..., :4]) * Sin on X [2, 4, 5, 8] (heads 4,
 * sequence 5, head dim 8), as flags say. */
static void rotary_graph(tcase *t, int flags) {
    static const int64_t big = INT64_MAX;
    tc_init(t, 13);
    int64_t zero = 0, four = flags & ROT_NEG_START ? -4 : flags & ROT_OFF_BY_ONE ? 3 : 4,
            end1 = 4, end2 = flags & ROT_OFF_BY_ONE ? 7 : big, axis = -1, two = 2;
    tc_const_i64(t, "zero", (const int64_t[]){1}, 1, &zero);
    tc_const_i64(t, "axis", (const int64_t[]){1}, 1, &axis);
    tc_const_i64(t, "end2", (const int64_t[]){1}, 1, &end2);
    if (flags & ROT_COMPUTED) {
        static const char *const bs[] = {"batch", "seq", NULL}, *const s4[] = {NULL, NULL, "seq", NULL};
        const int64_t xd[3] = {2, 5, 32}, cd[4] = {1, 1, 5, 8};
        rot_input(t, "x", (const int64_t[]){-1, -1, 32}, 3, bs);
        rot_input(t, "cos", (const int64_t[]){1, 1, -1, 8}, 4, s4);
        rot_input(t, "sin", (const int64_t[]){1, 1, -1, 8}, 4, s4);
        t->inputs[0] = random_tensor(t, xd, 3);
        t->inputs[1] = random_tensor(t, cd, 4);
        t->inputs[2] = random_tensor(t, cd, 4);
        t->n_in = 3;
        snprintf(t->names[0], sizeof t->names[0], "x");
        snprintf(t->names[1], sizeof t->names[1], "cos");
        snprintf(t->names[2], sizeof t->names[2], "sin");
        int64_t one = 1, heads[2] = {4, 8}, i3 = 3;
        tc_const_i64(t, "one", (const int64_t[]){1}, 1, &one);
        tc_const_i64(t, "heads", (const int64_t[]){2}, 1, heads);
        tc_const_i64(t, "i3", (const int64_t[]){1}, 1, &i3);
        tc_const_i64(t, "two", (const int64_t[]){1}, 1, &two);
        /* As the exporter writes x.view(b, s, 4, 8): scalar Gathers of
         * Shape(x), each Unsqueezed. */
        tc_const_i64(t, "z0", NULL, 0, &zero);
        tc_const_i64(t, "o0", NULL, 0, &one);
        node2(t, "Shape", "x", NULL, "sh");
        node2(t, "Gather", "sh", "z0", "b00");
        node2(t, "Gather", "sh", "o0", "s00");
        node2(t, "Unsqueeze", "b00", "zero", "b0");
        node2(t, "Unsqueeze", "s00", "zero", "s0");
        tc_node(t, "Concat", NULL, (const char *const[]){"b0", "s0", "heads"}, 3, "tgt");
        minfer_builder_set_attr_int(t->b, (size_t)t->n_nodes - 1, "axis", 0);
        node2(t, "Reshape", "x", "tgt", "xr");
        size_t tr = node2(t, "Transpose", "xr", NULL, "q");
        minfer_builder_set_attr_ints(t->b, tr, "perm", (const int64_t[]){0, 2, 1, 3}, 4);
        node2(t, "Shape", "q", NULL, "qs");
        node2(t, "Gather", "qs", "i3", "dd");
        node2(t, "Div", "dd", "two", "half");
    } else {
        tc_input(t, "q", (const int64_t[]){2, 4, 5, 8}, 4);
        if (flags & ROT_GROWS)
            tc_const(t, "cos", (const int64_t[]){3, 2, 4, 5, 8}, 5, NULL);
        else if (flags & ROT_COS_COLUMN)
            tc_const(t, "cos", (const int64_t[]){5, 1}, 2, NULL);
        else
            tc_const(t, "cos", (const int64_t[]){5, 8}, 2, NULL);
        tc_const(t, "sin", (const int64_t[]){1, 5, 8}, 3, NULL);
        tc_const_i64(t, "half", (const int64_t[]){1}, 1, &end1);
        tc_const_i64(t, "start2", (const int64_t[]){1}, 1, &four);
    }
    const char *x2s = flags & ROT_COMPUTED ? "half" : "start2";
    tc_node(t, "Slice", NULL, (const char *const[]){"q", "zero", "half", "axis"}, 4, "x1");
    tc_node(t, "Slice", NULL, (const char *const[]){"q", x2s, "end2", "axis"}, 4, "x2");
    int first = !!(flags & ROT_NEG_FIRST);
    node2(t, "Neg", first ? "x1" : "x2", NULL, "nx");
    tc_node(t, "Concat", NULL, (const char *const[]){"nx", first ? "x2" : "x1"}, 2, "r");
    minfer_builder_set_attr_int(t->b, (size_t)t->n_nodes - 1, "axis", -1);
    int sw = !!(flags & ROT_SWAPPED);
    node2(t, "Mul", sw ? "cos" : "q", sw ? "q" : "cos", "m1");
    node2(t, "Mul", sw ? "sin" : "r", sw ? "r" : "sin", "m2");
    node2(t, flags & ROT_SUB ? "Sub" : "Add", sw ? "m2" : "m1", sw ? "m1" : "m2", "y");
    if (flags & ROT_SHARED)
        assert_int_equal(minfer_builder_add_output(t->b, "r"), MINFER_OK);
}

/* Runs rotary_graph(flags) at level 3 on the CPU provider: 1 if a
 * RotaryEmbedding node is in it (and no Neg is left then); ops gets the
 * placed ops. */
static int rotary_fused(int flags, char *ops, size_t ops_size) {
    tcase t;
    rotary_graph(&t, flags);
    assert_int_equal(minfer_builder_add_output(t.b, "y"), MINFER_OK);
    minfer_tensor *y = run_level(&t, lists[0], 3, ops, ops_size);
    int fused = strstr(ops, "RotaryEmbedding@cpu") != NULL;
    if (fused && strstr(ops, "Neg@"))
        fail_msg("form %d: fused but a Neg is left: '%s'", flags, ops);
    minfer_tensor_free(y);
    for (size_t k = 0; k < t.n_in; k++)
        minfer_tensor_free(t.inputs[k]);
    minfer_builder_free(t.b);
    return fused;
}

static void test_rotary_forms(void **state) {
    (void)state;
    static const int forms[] = {0, ROT_SWAPPED, ROT_NEG_START, ROT_COS_COLUMN, ROT_COMPUTED,
                                ROT_COMPUTED | ROT_SWAPPED};
    char ops[512];
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (!rotary_fused(forms[i], ops, sizeof ops))
            fail_msg("form %d not fused: '%s'", forms[i], ops);
        check(rotary_graph, forms[i], forms[i] & ROT_COMPUTED ? "-" : "RotaryEmbedding@cpu",
              NULL);
    }
}

static void test_rotary_near_misses(void **state) {
    (void)state;
    static const int forms[] = {ROT_NEG_FIRST, ROT_OFF_BY_ONE, ROT_SUB, ROT_GROWS, ROT_SHARED,
                                ROT_COMPUTED | ROT_NEG_FIRST, ROT_COMPUTED | ROT_SUB};
    char ops[512];
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (rotary_fused(forms[i], ops, sizeof ops))
            fail_msg("near miss %d fused: '%s'", forms[i], ops);
        check(rotary_graph, forms[i], "-", NULL);
    }
}

/* minfer:RotaryEmbedding written into a model by hand, with shapes it
 * cannot take: an odd last dimension, and a Cos that does not broadcast to
 * X. The session refuses it, saying what is wrong, on every provider. */
static void rotary_bad(tcase *t, int odd) {
    tc_init(t, 13);
    tc_input(t, "x", (const int64_t[]){2, 5, odd ? 7 : 8}, 3);
    tc_const(t, "cos", odd ? (const int64_t[]){5, 7} : (const int64_t[]){3, 8}, 2, NULL);
    tc_const(t, "sin", odd ? (const int64_t[]){5, 7} : (const int64_t[]){5, 8}, 2, NULL);
    tc_node(t, "RotaryEmbedding", "minfer", (const char *const[]){"x", "cos", "sin"}, 3, "y");
    assert_int_equal(minfer_builder_add_output(t->b, "y"), MINFER_OK);
}

static void test_rotary_bad_shapes(void **state) {
    (void)state;
    for (int odd = 0; odd < 2; odd++)
        for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
            tcase t;
            minfer_options *opt = NULL;
            minfer_session *s = NULL;
            rotary_bad(&t, odd);
            assert_int_equal(minfer_options_create(&opt), MINFER_OK);
            assert_int_equal(
                minfer_options_set_providers(opt, lists[l], lists[l][1] ? 2 : 1), MINFER_OK);
            minfer_status st = minfer_session_create_from_builder(t.b, opt, &s);
            if (st == MINFER_OK) {
                const char *names[1] = {"x"}, *y = "y";
                const minfer_tensor *ins[1] = {t.inputs[0]};
                minfer_tensor *out = NULL;
                st = minfer_session_run(s, names, ins, 1, &y, &out, 1);
                minfer_tensor_free(out);
            }
            if (st == MINFER_OK)
                fail_msg("RotaryEmbedding with %s ran", odd ? "an odd D" : "a wide Cos");
            const char *want = odd ? "even" : "broadcast";
            if (!strstr(minfer_last_error(), want))
                fail_msg("error '%s' does not say '%s'", minfer_last_error(), want);
            minfer_session_free(s);
            minfer_options_free(opt);
            minfer_tensor_free(t.inputs[0]);
            minfer_builder_free(t.b);
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm_forms),
        cmocka_unit_test(test_rmsnorm_near_misses),
        cmocka_unit_test(test_rmsnorm_shared_mean),
        cmocka_unit_test(test_matmul_gelu),
        cmocka_unit_test(test_matmul_gelu_shared),
        cmocka_unit_test(test_where_mask),
        cmocka_unit_test(test_where_mask_computed),
        cmocka_unit_test(test_where_mask_near_misses),
        cmocka_unit_test(test_rotary_forms),
        cmocka_unit_test(test_rotary_near_misses),
        cmocka_unit_test(test_rotary_bad_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
