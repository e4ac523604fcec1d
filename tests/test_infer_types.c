/*
 * Element-type inference against the ONNX type constraints, op by op: which
 * input or attribute fixes each output's type (T, T1, T2 of the operator
 * docs), with inputs of different types wherever the spec allows them, and
 * the type errors it must report. One table row per case; the shapes are
 * small and mostly beside the point (test_shape_infer.c covers them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "graph/graph.h"
#include "shapes/shape_infer.h"
#include "util/internal.h"

#define F MINFER_DTYPE_FLOAT
#define F16 MINFER_DTYPE_FLOAT16
#define BF16 MINFER_DTYPE_BFLOAT16
#define DBL MINFER_DTYPE_DOUBLE
#define I8 MINFER_DTYPE_INT8
#define U8 MINFER_DTYPE_UINT8
#define I32 MINFER_DTYPE_INT32
#define I64 MINFER_DTYPE_INT64
#define BOOL MINFER_DTYPE_BOOL
#define STR MINFER_DTYPE_STRING

#define MAX_IN 9
#define MAX_OUT 4
#define MAX_ATTRS 4

typedef struct tin {
    int32_t dtype;
    int32_t rank;
    int64_t dims[4];
    const void *data;
    size_t nbytes;
    int absent; /* an omitted optional input ("") */
} tin;

typedef struct tattr {
    const char *name;
    int type; /* MINFER_ATTR_INT, _STRING, _INTS, or _TENSOR (a scalar of dtype i) */
    int64_t i;
    const char *s;
    int64_t ints[4];
    size_t n;
} tattr;

typedef struct tcase {
    const char *op;
    int64_t opset;
    tin in[MAX_IN];
    tattr attrs[MAX_ATTRS];
    int32_t want[MAX_OUT]; /* one per output, 0 ends the list */
    minfer_status want_st; /* when not MINFER_OK: the error expected, types unchecked */
} tcase;

/* Inputs: [2,3] of a type; a scalar; an omitted one; int64/float contents. */
#define V(dt) {.dtype = (dt), .rank = 2, .dims = {2, 3}}
#define IMG(dt) {.dtype = (dt), .rank = 4, .dims = {1, 1, 2, 2}}
#define S(dt) {.dtype = (dt), .rank = 0}
#define NONE {.absent = 1}
#define I64S(arr) {.dtype = I64, .rank = 1, .dims = {sizeof(arr) / 8}, .data = (arr), .nbytes = sizeof(arr)}
#define F32S(arr) {.dtype = F, .rank = 1, .dims = {sizeof(arr) / 4}, .data = (arr), .nbytes = sizeof(arr)}
#define INT(nm, v) {.name = (nm), .type = MINFER_ATTR_INT, .i = (v)}
#define STRA(nm, v) {.name = (nm), .type = MINFER_ATTR_STRING, .s = (v)}
#define TENSOR(nm, dt) {.name = (nm), .type = MINFER_ATTR_TENSOR, .i = (dt)}

static const int64_t sizes4[] = {1, 1, 4, 4}, k2[] = {2}, shape23[] = {2, 3}, one[] = {1};
static const float scales4[] = {1, 1, 2, 2}, no_roi[1] = {0};
static const int64_t depth3[] = {3};
static const int32_t range_i32[] = {0};
static const float empty_f[1] = {0};

static const tcase cases[] = {
    /* Resize: Y is X's type (T1) whatever roi (T2), scales (float) and sizes (int64) are. */
    {"Resize", 13, {IMG(F16), {.dtype = F, .rank = 1, .dims = {0}, .data = no_roi}, F32S(scales4)}, {{0}}, {F16}, 0},
    {"Resize", 13, {IMG(F), {.dtype = F, .rank = 1, .dims = {0}, .data = no_roi}, F32S(scales4)}, {{0}}, {F}, 0},
    {"Resize", 13, {IMG(U8), NONE, NONE, I64S(sizes4)}, {{0}}, {U8}, 0},
    {"Resize", 11, {IMG(DBL), {.dtype = F16, .rank = 1, .dims = {8}}, {.dtype = F, .rank = 1, .dims = {4}}}, {{0}}, {DBL}, 0},
    {"Resize", 10, {IMG(I8), F32S(scales4)}, {{0}}, {I8}, 0},
    {"Resize", 19, {IMG(BF16), NONE, {.dtype = F, .rank = 1, .dims = {4}}}, {{0}}, {BF16}, 0},
    {"Upsample", 9, {IMG(I32), F32S(scales4)}, {{0}}, {I32}, 0},
    {"GridSample", 16, {IMG(F16), {.dtype = F16, .rank = 4, .dims = {1, 3, 3, 2}}}, {{0}}, {F16}, 0},
    /* Where: bool condition, X and Y one type. */
    {"Where", 16, {V(BOOL), V(I64), V(I64)}, {{0}}, {I64}, 0},
    {"Where", 16, {V(I32), V(I64), V(I64)}, {{0}}, {0}, MINFER_ERR_TYPE},
    {"Where", 16, {V(BOOL), V(F), V(I64)}, {{0}}, {0}, MINFER_ERR_TYPE},
    /* Pow: T from the base, T1 (the exponent) free from opset 12. */
    {"Pow", 15, {V(F), V(I64)}, {{0}}, {F}, 0},
    {"Pow", 15, {V(I32), V(F)}, {{0}}, {I32}, 0},
    {"Pow", 15, {V(0), V(F)}, {{0}}, {0}, 0}, /* the exponent's type says nothing */
    {"Add", 14, {V(F16), V(F16)}, {{0}}, {F16}, 0},
    {"Add", 14, {V(F), V(F16)}, {{0}}, {0}, MINFER_ERR_TYPE},
    {"Mod", 13, {V(I32), V(I32)}, {{0}}, {I32}, 0},
    {"BitShift", 11, {V(U8), V(U8)}, {{0}}, {U8}, 0},
    {"Equal", 13, {V(F16), V(F16)}, {{0}}, {BOOL}, 0},
    {"Less", 13, {V(I64), V(I64)}, {{0}}, {BOOL}, 0},
    {"And", 7, {V(BOOL), V(BOOL)}, {{0}}, {BOOL}, 0},
    {"Xor", 7, {V(I32), V(I32)}, {{0}}, {0}, MINFER_ERR_TYPE},
    {"Not", 1, {V(BOOL)}, {{0}}, {BOOL}, 0},
    {"IsNaN", 13, {V(F16)}, {{0}}, {BOOL}, 0},
    {"IsInf", 10, {V(DBL)}, {{0}}, {BOOL}, 0},
    {"Sum", 13, {V(F16), V(F16), V(F16)}, {{0}}, {F16}, 0},
    {"Clip", 13, {V(F16), S(F16), S(F16)}, {{0}}, {F16}, 0},
    {"Acosh", 9, {V(F)}, {{0}}, {F}, 0},
    {"Sinh", 9, {V(DBL)}, {{0}}, {DBL}, 0},
    {"ThresholdedRelu", 10, {V(F16)}, {{0}}, {F16}, 0},
    {"BitwiseAnd", 18, {V(I32), V(I32)}, {{0}}, {I32}, 0},
    /* Shape and Size are int64 whatever the input. */
    {"Shape", 13, {V(F16)}, {{0}}, {I64}, 0},
    {"Shape", 15, {V(STR)}, {INT("start", 1)}, {I64}, 0},
    {"Size", 13, {V(BOOL)}, {{0}}, {I64}, 0},
    /* Cast: 'to'; CastLike: the target input's type. */
    {"Cast", 13, {V(F)}, {INT("to", F16)}, {F16}, 0},
    {"Cast", 13, {V(I64)}, {INT("to", STR)}, {STR}, 0},
    {"Cast", 13, {V(F)}, {INT("to", 99)}, {0}, MINFER_ERR_TYPE},
    {"CastLike", 15, {V(F), S(BF16)}, {{0}}, {BF16}, 0},
    /* Quantization. */
    {"QuantizeLinear", 13, {V(F), S(F), S(I8)}, {{0}}, {I8}, 0},
    {"QuantizeLinear", 13, {V(F), S(F)}, {{0}}, {U8}, 0},
    {"QuantizeLinear", 19, {V(F16), S(F16), S(U8)}, {{0}}, {U8}, 0},
    {"QuantizeLinear", 21, {V(F), S(F)}, {INT("output_dtype", I8)}, {I8}, 0},
    {"QuantizeLinear", 21, {V(F), S(F), S(U8)}, {INT("output_dtype", I8)}, {0}, MINFER_ERR_TYPE},
    {"DequantizeLinear", 13, {V(I8), S(F), S(I8)}, {{0}}, {F}, 0},
    {"DequantizeLinear", 19, {V(U8), S(F16), S(U8)}, {{0}}, {F16}, 0},
    {"DequantizeLinear", 10, {V(I32), S(F)}, {{0}}, {F}, 0},
    {"DequantizeLinear", 25, {V(I8), S(F)}, {INT("output_dtype", F16)}, {F16}, 0},
    {"DynamicQuantizeLinear", 11, {V(F)}, {{0}}, {U8, F, U8}, 0},
    {"QLinearConv", 10, {IMG(U8), S(F), S(U8), {.dtype = I8, .rank = 4, .dims = {1, 1, 1, 1}}, S(F), S(I8), S(F), S(I8)}, {{0}}, {I8}, 0},
    {"QLinearMatMul", 10, {V(I8), S(F), S(I8), {.dtype = U8, .rank = 2, .dims = {3, 4}}, S(F), S(U8), S(F), S(U8)}, {{0}}, {U8}, 0},
    {"ConvInteger", 10, {IMG(U8), {.dtype = I8, .rank = 4, .dims = {1, 1, 1, 1}}}, {{0}}, {I32}, 0},
    {"MatMulInteger", 10, {V(I8), {.dtype = U8, .rank = 2, .dims = {3, 4}}}, {{0}}, {I32}, 0},
    /* Generators: the attribute that names the type, or its default. */
    {"ConstantOfShape", 9, {I64S(shape23)}, {{0}}, {F}, 0},
    {"ConstantOfShape", 9, {I64S(shape23)}, {TENSOR("value", I32)}, {I32}, 0},
    {"ConstantOfShape", 9, {I64S(shape23)}, {TENSOR("value", F16)}, {F16}, 0},
    {"RandomNormal", 1, {{0}}, {{.name = "shape", .type = MINFER_ATTR_INTS, .ints = {2, 3}, .n = 2}}, {F}, 0},
    {"RandomNormal", 1, {{0}}, {{.name = "shape", .type = MINFER_ATTR_INTS, .ints = {2, 3}, .n = 2}, INT("dtype", DBL)}, {DBL}, 0},
    {"RandomUniform", 1, {{0}}, {{.name = "shape", .type = MINFER_ATTR_INTS, .ints = {2}, .n = 1}, INT("dtype", 0)}, {0}, MINFER_ERR_TYPE},
    {"RandomNormalLike", 1, {V(F16)}, {{0}}, {F16}, 0},
    {"RandomUniformLike", 1, {V(F16)}, {INT("dtype", F)}, {F}, 0},
    {"Bernoulli", 15, {V(DBL)}, {{0}}, {DBL}, 0},
    {"Bernoulli", 15, {V(F)}, {INT("dtype", BOOL)}, {BOOL}, 0},
    {"Multinomial", 7, {V(F)}, {{0}}, {I32}, 0},
    {"Multinomial", 7, {V(F)}, {INT("dtype", I64)}, {I64}, 0},
    {"EyeLike", 9, {V(I32)}, {{0}}, {I32}, 0},
    {"EyeLike", 9, {V(I32)}, {INT("dtype", F)}, {F}, 0},
    {"EyeLike", 9, {V(F)}, {INT("dtype", 65536)}, {0}, MINFER_ERR_TYPE},
    {"Range", 11, {{.dtype = I32, .rank = 0, .data = range_i32, .nbytes = 4}, S(I32), S(I32)}, {{0}}, {I32}, 0},
    {"HannWindow", 17, {S(I64)}, {{0}}, {F}, 0},
    {"HammingWindow", 17, {S(I32)}, {INT("output_datatype", DBL)}, {DBL}, 0},
    {"MelWeightMatrix", 17, {S(I64), S(I64), S(I64), S(F), S(F)}, {INT("output_datatype", F16)}, {F16}, 0},
    /* Index outputs are int64. */
    {"ArgMax", 13, {V(F16)}, {{0}}, {I64}, 0},
    {"ArgMin", 13, {V(I32)}, {INT("axis", 1)}, {I64}, 0},
    {"TopK", 11, {V(F16), I64S(k2)}, {INT("axis", 1)}, {F16, I64}, 0},
    {"TopK", 1, {V(I32)}, {INT("k", 1)}, {I32, I64}, 0},
    {"NonZero", 13, {V(F)}, {{0}}, {I64}, 0},
    {"NonMaxSuppression", 11, {{.dtype = F, .rank = 3, .dims = {1, 4, 4}}, {.dtype = F, .rank = 3, .dims = {1, 1, 4}}}, {{0}}, {I64}, 0},
    {"MaxPool", 12, {IMG(F16)}, {{.name = "kernel_shape", .type = MINFER_ATTR_INTS, .ints = {1, 1}, .n = 2}}, {F16, I64}, 0},
    {"Unique", 11, {V(F)}, {{0}}, {F, I64, I64, I64}, 0},
    /* Data outputs take the data input's type. */
    {"GatherND", 13, {V(F16), {.dtype = I64, .rank = 2, .dims = {2, 1}}}, {{0}}, {F16}, 0},
    {"Gather", 13, {V(F16), V(I32)}, {{0}}, {F16}, 0},
    {"Gather", 13, {V(F16), V(F)}, {{0}}, {0}, MINFER_ERR_TYPE},
    {"Compress", 11, {V(I8), {.dtype = BOOL, .rank = 1, .dims = {2}}}, {INT("axis", 0)}, {I8}, 0},
    {"OneHot", 11, {V(I64), {.dtype = I64, .rank = 1, .dims = {1}, .data = depth3, .nbytes = 8}, {.dtype = F16, .rank = 1, .dims = {2}}}, {{0}}, {F16}, 0},
    {"OneHot", 11, {V(I32), {.dtype = F, .rank = 0, .data = empty_f, .nbytes = 4}, {.dtype = I64, .rank = 1, .dims = {2}}}, {{0}}, {0}, MINFER_ERR_MODEL},
    {"ScatterND", 16, {V(F16), {.dtype = I64, .rank = 2, .dims = {1, 1}}, {.dtype = F16, .rank = 2, .dims = {1, 3}}}, {{0}}, {F16}, 0},
    {"RoiAlign", 16, {IMG(F16), {.dtype = F16, .rank = 2, .dims = {3, 4}}, {.dtype = I64, .rank = 1, .dims = {3}}}, {{0}}, {F16}, 0},
    {"RoiAlign", 16, {IMG(F), {.dtype = F, .rank = 2, .dims = {3, 4}}, {.dtype = I32, .rank = 1, .dims = {3}}}, {{0}}, {0}, MINFER_ERR_TYPE},
    {"MaxUnpool", 11, {IMG(F), {.dtype = I64, .rank = 4, .dims = {1, 1, 2, 2}}}, {{.name = "kernel_shape", .type = MINFER_ATTR_INTS, .ints = {2, 2}, .n = 2}}, {F}, 0},
    {"LSTM", 14, {{.dtype = F16, .rank = 3, .dims = {5, 2, 3}}, {.dtype = F16, .rank = 3, .dims = {1, 16, 3}}, {.dtype = F16, .rank = 3, .dims = {1, 16, 4}}}, {INT("hidden_size", 4)}, {F16, F16, F16}, 0},
    {"GRU", 14, {{.dtype = DBL, .rank = 3, .dims = {5, 2, 3}}, {.dtype = DBL, .rank = 3, .dims = {2, 12, 3}}, {.dtype = DBL, .rank = 3, .dims = {2, 12, 4}}}, {INT("hidden_size", 4), STRA("direction", "bidirectional")}, {DBL, DBL}, 0},
    {"RNN", 14, {{.dtype = F, .rank = 3, .dims = {5, 2, 3}}, {.dtype = F16, .rank = 3, .dims = {1, 4, 3}}}, {INT("hidden_size", 4)}, {0}, MINFER_ERR_TYPE},
    /* Layers keep X's type; LayerNormalization's statistics take stash_type. */
    {"Conv", 11, {IMG(F16), {.dtype = F16, .rank = 4, .dims = {1, 1, 1, 1}}}, {{0}}, {F16}, 0},
    {"Conv", 11, {IMG(F), {.dtype = F16, .rank = 4, .dims = {1, 1, 1, 1}}}, {{0}}, {0}, MINFER_ERR_TYPE},
    {"Conv", 11, {IMG(0), {.dtype = F, .rank = 4, .dims = {1, 1, 1, 1}}}, {{0}}, {F}, 0},
    {"Concat", 13, {V(F16), V(F16)}, {INT("axis", 0)}, {F16}, 0},
    {"Concat", 13, {V(F), V(F16)}, {INT("axis", 0)}, {0}, MINFER_ERR_TYPE},
    {"MatMul", 13, {V(I32), {.dtype = I32, .rank = 2, .dims = {3, 4}}}, {{0}}, {I32}, 0},
    {"Gemm", 13, {V(0), {.dtype = DBL, .rank = 2, .dims = {3, 4}}}, {{0}}, {DBL}, 0},
    {"LayerNormalization", 17, {V(F16), {.dtype = F16, .rank = 1, .dims = {3}}}, {{0}}, {F16, F, F}, 0},
    {"LayerNormalization", 17, {V(DBL), {.dtype = DBL, .rank = 1, .dims = {3}}}, {INT("stash_type", DBL)}, {DBL, DBL, DBL}, 0},
    {"Dropout", 13, {V(F16)}, {{0}}, {F16, BOOL}, 0},
    {"Dropout", 7, {V(F16)}, {{0}}, {F16, F16}, 0},
    {"Einsum", 12, {V(I64), {.dtype = I64, .rank = 2, .dims = {3, 4}}}, {STRA("equation", "ij,jk->ik")}, {I64}, 0},
    {"CumSum", 14, {V(I32), S(I64)}, {{0}}, {I32}, 0},
    {"Trilu", 14, {V(BOOL)}, {{0}}, {BOOL}, 0},
    {"DFT", 17, {{.dtype = F16, .rank = 3, .dims = {1, 8, 1}}}, {{0}}, {F16}, 0},
    {"STFT", 17, {{.dtype = DBL, .rank = 3, .dims = {1, 64, 1}}, {.dtype = I64, .rank = 0, .data = one, .nbytes = 8}}, {{0}}, {DBL}, 0},
    {"SoftmaxCrossEntropyLoss", 13, {V(F16), {.dtype = I64, .rank = 1, .dims = {2}}}, {{0}}, {F16, F16}, 0},
    {"StringNormalizer", 10, {{.dtype = STR, .rank = 1, .dims = {3}}}, {{0}}, {STR}, 0},
    {"TfIdfVectorizer", 9, {{.dtype = I64, .rank = 1, .dims = {3}}}, {{0}}, {F}, 0},
    {"StringConcat", 20, {V(STR), V(STR)}, {{0}}, {STR}, 0},
    {"RegexFullMatch", 20, {V(STR)}, {STRA("pattern", "a+")}, {BOOL}, 0},
    {"GlobalLpPool", 2, {IMG(F16)}, {{0}}, {F16}, 0},
    {"GroupNormalization", 21, {IMG(BF16), {.dtype = BF16, .rank = 1, .dims = {1}}, {.dtype = BF16, .rank = 1, .dims = {1}}}, {INT("num_groups", 1)}, {BF16}, 0},
};

typedef struct built {
    mf_node n;
    int inputs[MAX_IN];
    mf_attr attrs[MAX_ATTRS];
    minfer_tensor *tensors[MAX_ATTRS];
    minfer_tensor_view in[MAX_IN];
    minfer_tensor_view out[MAX_OUT];
    char err[256];
} built;

static size_t build(built *b, const tcase *tc, size_t *n_out) {
    size_t n_in = 0;
    memset(b, 0, sizeof *b);
    b->n.name = (char *)"";
    b->n.op_type = (char *)tc->op;
    b->n.domain = (char *)"";
    b->n.opset = tc->opset;
    for (size_t i = 0; i < MAX_IN; i++) {
        const tin *t = &tc->in[i];
        if (!t->absent && t->dtype == 0 && t->rank == 0 && !t->data) {
            /* the end of the list, unless a later input is given */
            int later = 0;
            for (size_t k = i + 1; k < MAX_IN; k++)
                later |= tc->in[k].absent || tc->in[k].dtype || tc->in[k].rank;
            if (!later)
                break;
        }
        b->inputs[i] = t->absent ? -1 : (int)i;
        b->in[i].dtype = t->dtype;
        b->in[i].rank = t->absent ? -1 : t->rank;
        memcpy(b->in[i].dims, t->dims, sizeof t->dims);
        b->in[i].data = (void *)t->data;
        b->in[i].nbytes = t->nbytes;
        n_in = i + 1;
    }
    b->n.inputs = b->inputs;
    b->n.n_inputs = n_in;
    for (size_t k = 0; k < MAX_ATTRS && tc->attrs[k].name; k++) {
        const tattr *a = &tc->attrs[k];
        mf_attr *m = &b->attrs[b->n.n_attrs++];
        m->name = (char *)a->name;
        m->type = a->type;
        m->i = a->i;
        if (a->type == MINFER_ATTR_STRING) {
            m->s = (char *)a->s;
            m->s_len = strlen(a->s);
        } else if (a->type == MINFER_ATTR_INTS) {
            m->ints = (int64_t *)a->ints;
            m->count = a->n;
        } else if (a->type == MINFER_ATTR_TENSOR) {
            int64_t d = 1;
            assert_int_equal(minfer_tensor_create((minfer_dtype)a->i, &d, 1, &b->tensors[k]),
                             MINFER_OK);
            m->t = b->tensors[k];
        }
    }
    b->n.attrs = b->attrs;
    *n_out = 0;
    while (*n_out < MAX_OUT && (tc->want[*n_out] || (*n_out == 0)))
        (*n_out)++;
    return n_in;
}

static void test_types_per_op(void **state) {
    (void)state;
    int bad = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const tcase *tc = &cases[k];
        built b;
        size_t n_out;
        size_t n_in = build(&b, tc, &n_out);
        b.n.n_outputs = n_out;
        minfer_status st =
            mf_infer_node(&b.n, b.in, n_in, b.out, n_out, b.err, sizeof b.err);
        for (size_t t = 0; t < MAX_ATTRS; t++)
            minfer_tensor_free(b.tensors[t]);
        if (tc->want_st != MINFER_OK) {
            if (st != tc->want_st) {
                print_error("case %zu (%s opset %lld): status %d, want %d (%s)\n", k, tc->op,
                            (long long)tc->opset, (int)st, (int)tc->want_st, b.err);
                bad++;
            }
            continue;
        }
        if (st != MINFER_OK) {
            print_error("case %zu (%s opset %lld): failed: %s\n", k, tc->op,
                        (long long)tc->opset, b.err);
            bad++;
            continue;
        }
        for (size_t j = 0; j < n_out; j++)
            if (b.out[j].dtype != tc->want[j]) {
                print_error("case %zu (%s opset %lld): output %zu is type %d, want %d\n", k,
                            tc->op, (long long)tc->opset, j, (int)b.out[j].dtype,
                            (int)tc->want[j]);
                bad++;
            }
    }
    assert_int_equal(bad, 0);
}

/* The shapes the new rules give where everything is known. */
static void test_resize_shapes(void **state) {
    (void)state;
    static const tcase by_scales = {"Resize", 13, {IMG(F16), NONE, F32S(scales4)}, {{0}}, {F16}, 0};
    static const tcase by_sizes = {"Resize", 13, {IMG(F), NONE, NONE, I64S(sizes4)}, {{0}}, {F}, 0};
    static const tcase unknown = {"Resize", 13, {IMG(F), NONE, {.dtype = F, .rank = 1, .dims = {4}}}, {{0}}, {F}, 0};
    const tcase *all[] = {&by_scales, &by_sizes, &unknown};
    for (size_t k = 0; k < 3; k++) {
        built b;
        size_t n_out, n_in = build(&b, all[k], &n_out);
        b.n.n_outputs = 1;
        assert_int_equal(mf_infer_node(&b.n, b.in, n_in, b.out, 1, b.err, sizeof b.err),
                         MINFER_OK);
        assert_int_equal(b.out[0].rank, 4);
        assert_int_equal(b.out[0].dims[0], k < 2 ? 1 : -1);
        assert_int_equal(b.out[0].dims[2], k < 2 ? 4 : -1);
        assert_int_equal(b.out[0].dims[3], k < 2 ? 4 : -1);
    }
}

static void test_rnn_topk_shapes(void **state) {
    (void)state;
    static const tcase lstm = {"LSTM", 14, {{.dtype = F, .rank = 3, .dims = {2, 5, 3}}, {.dtype = F, .rank = 3, .dims = {2, 16, 3}}, {.dtype = F, .rank = 3, .dims = {2, 16, 4}}}, {INT("hidden_size", 4), STRA("direction", "bidirectional"), INT("layout", 1)}, {F, F, F}, 0};
    static const tcase topk = {"TopK", 11, {V(F), I64S(k2)}, {INT("axis", 1)}, {F, I64}, 0};
    built b;
    size_t n_out, n_in = build(&b, &lstm, &n_out);
    b.n.n_outputs = n_out;
    assert_int_equal(mf_infer_node(&b.n, b.in, n_in, b.out, n_out, b.err, sizeof b.err), MINFER_OK);
    /* layout 1: Y [batch, seq, dirs, hidden], Y_h and Y_c [batch, dirs, hidden] */
    const int64_t y[4] = {2, 5, 2, 4}, yh[3] = {2, 2, 4};
    assert_int_equal(b.out[0].rank, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(b.out[0].dims[i], y[i]);
    for (int o = 1; o < 3; o++) {
        assert_int_equal(b.out[o].rank, 3);
        for (int i = 0; i < 3; i++)
            assert_int_equal(b.out[o].dims[i], yh[i]);
    }
    n_in = build(&b, &topk, &n_out);
    b.n.n_outputs = n_out;
    assert_int_equal(mf_infer_node(&b.n, b.in, n_in, b.out, n_out, b.err, sizeof b.err), MINFER_OK);
    assert_int_equal(b.out[0].dims[1], 2);
    assert_int_equal(b.out[1].dims[1], 2);
    assert_int_equal(b.out[1].dims[0], 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types_per_op),
        cmocka_unit_test(test_resize_shapes),
        cmocka_unit_test(test_rnn_topk_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
