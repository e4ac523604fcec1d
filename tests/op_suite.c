/*
 * The op-conformance driver (after ggml's tests/test-backend-ops): every op
 * a provider or plugin claims, run on it and on the CPU provider (the
 * oracle) on the same generated inputs, shapes and attributes, compared
 * within the op's tolerance for the element type.
 *
 *     op_suite [--ops docs/operators.md] [--op NAME] [-v] TARGET...
 *
 * A TARGET is a provider ("onednn", "opencl"), a provider with options and
 * a thread count ("onednn/split=on/3": the provider option string, then
 * the session's threads), or a plugin ("plugin:contrib"). A provider
 * target runs as the list "PROVIDER,cpu" (what a user writes to have it
 * with the CPU provider behind it); "cpu" runs the CPU provider alone, so
 * "cpu//1" compares the oracle with itself at 1 thread against 2: the
 * driver's own sanity (generated inputs the same each time, outputs every
 * element written, kernels independent of the thread count).
 *
 * 1. The cases are the table below: one row is an op, its opset, its inputs
 *    (shapes, constants, value ranges), its attributes and the element types
 *    T ranges over. Each row runs once per type in its set (the dtype axis:
 *    DTYPES and the sets are data; a provider that starts claiming float16
 *    is tested in float16 by the rows that list it, with no new row).
 * 2. For each row and type the graph (one node, named "n0") is built with
 *    the graph builder and run on the CPU provider alone. A row the CPU
 *    provider cannot build in that type has no oracle: it is counted as
 *    "no reference", never compared with the target itself. For a plugin
 *    op the oracle is the row's reference graph of standard ops (`ref`).
 * 3. For each target the same graph is built with providers {TARGET, cpu}
 *    (a plugin: cpu and the plugin). Whether the target claims the node is
 *    asked of the target itself: the node's placement after the session's
 *    supports_operator calls. Not claimed is not a failure (the CPU runs
 *    it); claimed, the outputs must match the oracle's: type, shape, and
 *    every element within atol + rtol |want| (NaN only against NaN).
 * 4. Coverage: every op of the universe (the CPU provider's operator table,
 *    --ops, and each plugin's registered ops) that has no row is probed on
 *    each target with generic float inputs; one a target takes is listed
 *    as UNCOVERED (claimed with no row: add rows for it).
 * 5. The table: one line per op, one column per target, "pass/claimed"
 *    (cases passed of those the target claimed), "FAIL n" or "-" (claimed
 *    in no case), then the totals. Exit 1 on any failure (or a target that
 *    does not load), 77 when no target is usable here (ctest: skipped).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/builder.h"
#include "minfer/discovery.h"
#include "minfer/minfer.h"

#define MAX_IN 8
#define MAX_OUT 4
#define MAX_TARGETS 8
#define MAX_ATTRS 12

/* ---- The dtype axis ----------------------------------------------------------- */

typedef struct dtype_info {
    minfer_dtype dt;
    const char *name;
    double atol, rtol; /* the comparison's tolerance for outputs of this type */
} dtype_info;

/* Every element type a row can run in; a row's `types` is a mask of
 * (1 << index) here. Add a type here and to a set to test it. */
static const dtype_info DTYPES[] = {
    {MINFER_DTYPE_FLOAT, "float", 1e-4, 1e-3},     {MINFER_DTYPE_FLOAT16, "float16", 1e-2, 1e-2},
    {MINFER_DTYPE_BFLOAT16, "bfloat16", 5e-2, 2e-2}, {MINFER_DTYPE_DOUBLE, "double", 1e-9, 1e-9},
    {MINFER_DTYPE_INT8, "int8", 0, 0},             {MINFER_DTYPE_UINT8, "uint8", 0, 0},
    {MINFER_DTYPE_INT32, "int32", 0, 0},           {MINFER_DTYPE_INT64, "int64", 0, 0},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])
enum { F32 = 1, F16 = 2, BF16 = 4, F64 = 8, I8 = 16, U8 = 32, I32 = 64, I64 = 128 };
/* The sets rows use: the floating types, and every numeric type. */
#define FLOATS (F32 | F16 | BF16 | F64)
#define NUMERIC (FLOATS | I8 | U8 | I32 | I64)
#define SIGNED (FLOATS | I8 | I32 | I64)

/* ---- The case table ------------------------------------------------------------ */

/*
 * inputs: space-separated, one token per node input:
 *     [c]SHAPE[:TYPE][:GEN][=V,V,...]
 *   c      a constant (initializer); otherwise a graph input
 *   SHAPE  dims joined by x ("2x3x4", "0x3": a zero-size tensor), "s" for a
 *          scalar (rank 0), or "-" for an omitted optional input
 *   TYPE   T (the row's type, the default), float, int64, int32, bool
 *   GEN    the values drawn: "pos" (0.1 .. 2.1), "idxN" (integers in
 *          [-N, N): indices with negatives), default uniform -1 .. 1 (ints
 *          -5 .. 5, unsigned 0 .. 10)
 *   =V,... the values themselves
 * attrs: space-separated name=value: an int ("axis=-1"), a float ("alpha=0.5",
 *   a '.' or an exponent), a list ("perm=0,2,1", "axes=1," with a trailing
 *   comma for one element), a string (starts with a letter: "auto_pad=SAME_UPPER").
 * ref: the oracle graph for a plugin op, standard ops the CPU provider runs:
 *   "Op(a,b)->t; minfer:Gelu(t)->y0", inputs named x0.., outputs y0..;
 *   "#0.5" is a scalar constant of type T; {name=value ...} after the
 *   inputs are the node's attributes.
 */
typedef struct op_case {
    const char *op; /* "Conv", or "domain:Op" outside the default domain */
    int opset;      /* of the default domain */
    const char *inputs, *attrs;
    unsigned types; /* the DTYPES T ranges over */
    int n_out;      /* outputs compared (0: 1) */
    double tol;     /* scales the type's tolerance (0: 1) */
    const char *ref;
} op_case;

/* A row; OPN also with the outputs compared and the tolerance's scale;
 * PLUG a float plugin op with its tolerance scale and reference graph. */
#define OP(op, opset, inputs, attrs, types) {op, opset, inputs, attrs, types, 1, 1, NULL}
#define OPN(op, opset, inputs, attrs, types, n_out, tol) \
    {op, opset, inputs, attrs, types, n_out, tol, NULL}
#define PLUG(op, opset, inputs, attrs, tol, ref) {op, opset, inputs, attrs, F32, 1, tol, ref}

static const op_case CASES[] = {
    /* elementwise, unary */
    OP("Relu", 14, "2x3x4x5", "", FLOATS | I8 | I32 | I64),
    OP("Relu", 14, "s", "", FLOATS),
    OP("Relu", 14, "0x3", "", FLOATS),
    OP("LeakyRelu", 16, "2x3x4x5", "alpha=0.2", FLOATS),
    OP("Elu", 6, "2x3x4x5", "alpha=0.7", FLOATS),
    OP("Selu", 6, "3x7", "", FLOATS),
    OP("Sigmoid", 13, "2x3x4x5", "", FLOATS),
    OP("Tanh", 13, "2x3x4x5", "", FLOATS),
    OP("HardSigmoid", 6, "2x3x4x5", "alpha=0.3 beta=0.4", FLOATS),
    OP("HardSwish", 14, "2x3x4x5", "", FLOATS),
    OP("Exp", 13, "2x3x4x5", "", FLOATS),
    OP("Log", 13, "3x7:T:pos", "", FLOATS),
    OP("Sqrt", 13, "3x7:T:pos", "", FLOATS),
    OP("Abs", 13, "2x3x4x5", "", SIGNED),
    OP("Neg", 13, "2x3x4x5", "", SIGNED),
    OP("Reciprocal", 13, "3x7:T:pos", "", FLOATS),
    OP("Floor", 13, "3x7", "", FLOATS),
    OP("Ceil", 13, "3x7", "", FLOATS),
    OP("Round", 11, "3x7", "", FLOATS),
    OP("Sign", 13, "3x7", "", SIGNED),
    OP("Erf", 13, "3x7", "", FLOATS),
    OP("Softplus", 1, "3x7", "", FLOATS),
    OP("Softsign", 1, "3x7", "", FLOATS),
    OP("Sin", 7, "3x7", "", FLOATS),
    OP("Cos", 7, "3x7", "", FLOATS),
    OP("Tan", 7, "3x7", "", FLOATS),
    OP("Atan", 7, "3x7", "", FLOATS),
    OP("ThresholdedRelu", 10, "3x7", "alpha=0.25", FLOATS),
    OP("minfer:Gelu", 17, "2x3x8", "", FLOATS),
    OP("minfer:Gelu", 17, "2x3x8", "approximate=tanh", FLOATS),
    OP("Clip", 13, "3x7 cs=-0.25 cs=0.5", "", FLOATS),
    OP("Clip", 13, "3x7 - cs=0.5", "", FLOATS),
    OP("Clip", 6, "3x7", "min=-0.5 max=0.25", F32),
    /* elementwise, binary and variadic: broadcasting from both sides */
    OP("Add", 14, "2x3x4x5 5", "", NUMERIC),
    OP("Add", 14, "4x5 2x3x4x5", "", FLOATS),
    OP("Add", 14, "2x3x4 s", "", FLOATS),
    OP("Add", 14, "0x4 4", "", FLOATS),
    OP("Sub", 14, "2x3x4x5 1x3x1x1", "", NUMERIC),
    OP("Mul", 14, "2x3x4x5 3x1x1", "", NUMERIC),
    OP("Mul", 14, "2x1x4 1x3x1", "", FLOATS),
    OP("Div", 14, "2x3x4x5 2x3x4x5:T:pos", "", FLOATS),
    OP("Pow", 15, "3x7:T:pos 7", "", FLOATS),
    OP("PRelu", 16, "2x3x4x5 3x1x1", "", FLOATS),
    OP("Max", 13, "2x3x4 2x3x4 3x1", "", FLOATS),
    OP("Min", 13, "2x3x4 2x3x4", "", FLOATS),
    OP("Sum", 13, "2x3x4 2x3x4 4", "", FLOATS),
    OP("Mean", 13, "2x3x4 2x3x4", "", FLOATS),
    /* convolutions: groups, strides, dilations, pads, depthwise, 1-D, 3-D */
    OPN("Conv", 11, "1x3x9x9 c4x3x3x3", "", FLOATS, 1, 2),
    OPN("Conv", 11, "2x4x10x10 c6x2x3x3 c6", "group=2 strides=2,2 dilations=1,2 pads=1,0,2,1",
     FLOATS, 1, 2),
    OPN("Conv", 11, "1x8x7x7 c8x1x3x3 c8", "group=8 pads=1,1,1,1", FLOATS, 1, 2),
    /* depthwise (the CPU provider's direct kernel over output rows): rows
     * wider than its 64-output tile, strides, dilations, uneven pads, a
     * channel multiplier, fewer channels than 16 threads, 1-D and 3-D */
    OPN("Conv", 11, "1x16x9x70 c16x1x3x3 c16", "group=16 strides=1,2 dilations=2,1 pads=1,1,2,0",
     FLOATS, 1, 2),
    OPN("Conv", 11, "2x6x11x13 c12x1x3x3", "group=6 strides=2,1 pads=0,1,2,1", FLOATS, 1, 2),
    OPN("Conv", 11, "1x5x7x7 c5x1x5x5 c5", "group=5 pads=2,2,2,2", FLOATS, 1, 2),
    OPN("Conv", 11, "1x5x40 c5x1x5 c5", "group=5 strides=3 pads=2,2", FLOATS, 1, 2),
    OPN("Conv", 11, "1x4x5x6x7 c4x1x3x3x3 c4", "group=4 pads=1,0,1,1,1,0", FLOATS, 1, 2),
    OPN("Conv", 11, "1x3x8x8 c4x3x3x3", "auto_pad=SAME_UPPER strides=2,2", FLOATS, 1, 2),
    OPN("Conv", 11, "2x3x17 c5x3x4 c5", "strides=2 pads=1,2", FLOATS, 1, 2),
    OPN("Conv", 11, "1x2x5x6x7 c3x2x3x3x3", "pads=1,1,1,1,1,1", FLOATS, 1, 2),
    OPN("Conv", 11, "1x4x6x6 4x4x1x1", "", FLOATS, 1, 2),
    OPN("ConvTranspose", 11, "1x4x5x5 c4x3x3x3 c3", "strides=2,2 pads=1,1,1,1 output_padding=1,1",
     FLOATS, 1, 2),
    OPN("minfer:FusedConv", 13, "1x3x9x9 c4x3x3x3 c4", "activation=Relu", FLOATS, 1, 2),
    /* matrix products */
    OPN("MatMul", 13, "3x4 4x5", "", FLOATS, 1, 2),
    OPN("MatMul", 13, "2x3x4x6 6x5", "", FLOATS, 1, 2),
    OPN("MatMul", 13, "4 2x4x3", "", FLOATS, 1, 2),
    OPN("MatMul", 13, "2x1x3x4 3x4x2", "", FLOATS, 1, 2),
    OPN("Gemm", 13, "3x4 c5x4 c5", "transB=1 alpha=0.5 beta=2.0", FLOATS, 1, 2),
    OPN("Gemm", 13, "4x3 4x5 c1x5", "transA=1", FLOATS, 1, 2),
    OPN("minfer:FusedMatMul", 13, "2x3x4 4x5", "activation=Relu", FLOATS, 1, 2),
    /* pools */
    OP("MaxPool", 13, "1x8x11x11", "kernel_shape=3,3 strides=2,2 pads=1,1,0,0", FLOATS | I8 | U8),
    OP("MaxPool", 13, "1x8x11x11", "kernel_shape=3,3 strides=2,2 ceil_mode=1", FLOATS | I8 | U8),
    OP("MaxPool", 13, "2x8x2x2", "kernel_shape=3,3 pads=1,1,1,1 ceil_mode=1", FLOATS),
    OP("MaxPool", 13, "1x3x20", "kernel_shape=4 strides=3", FLOATS | I8 | U8),
    OP("AveragePool", 13, "1x8x11x11", "kernel_shape=3,3 strides=2,2 pads=1,1,0,0", FLOATS),
    OP("AveragePool", 13, "1x8x11x11", "kernel_shape=3,3 pads=1,1,1,1 count_include_pad=1",
     FLOATS),
    OP("AveragePool", 13, "1x2x5x6x7", "kernel_shape=2,2,2 strides=2,2,2", FLOATS),
    OP("GlobalAveragePool", 13, "2x16x7x7", "", FLOATS),
    OP("GlobalMaxPool", 13, "2x16x7x7", "", FLOATS),
    /* normalizations */
    OP("Softmax", 13, "2x3x4x5", "axis=-1", FLOATS),
    OP("Softmax", 13, "2x3x4x5", "axis=1", FLOATS),
    OP("Softmax", 11, "2x3x4x5", "axis=1", FLOATS),
    OP("LogSoftmax", 13, "2x3x4x5", "axis=-1", FLOATS),
    OP("LogSoftmax", 11, "2x3x4x5", "axis=2", FLOATS),
    OP("BatchNormalization", 15, "2x6x5x5 c6 c6 c6 c6:T:pos", "epsilon=1e-3", FLOATS),
    OP("LayerNormalization", 17, "2x7x16 c16 c16", "", FLOATS),
    OP("LayerNormalization", 17, "2x7x16 c7x16", "axis=-2", FLOATS),
    OP("minfer:LayerNormalization", 17, "2x7x16 c16 c16", "axis=-1", FLOATS),
    OP("minfer:RMSNormalization", 17, "2x7x16 c16", "", FLOATS),
    OP("LRN", 13, "1x8x5x5", "size=3", FLOATS),
    /* data movement */
    OP("Transpose", 13, "2x3x4x5", "perm=0,3,1,2", NUMERIC),
    OP("Transpose", 13, "3x4", "", FLOATS),
    OP("Concat", 13, "1x3x4x4 1x5x4x4 1x2x4x4", "axis=1", NUMERIC),
    OP("Concat", 13, "2x3 2x0 2x4", "axis=-1", FLOATS),
    OP("Concat", 13, "2x3x4 c2x3x4", "axis=0", FLOATS),
    OP("Slice", 13, "4x6x8 c2:int64=1,-5 c2:int64=3,100 c2:int64=0,2", "", NUMERIC),
    OP("Slice", 13, "4x6x8 c1:int64=-1 c1:int64=-100 c1:int64=-1 c1:int64=-2", "", FLOATS),
    OPN("Split", 18, "6x4 c2:int64=2,4", "axis=0", FLOATS, 2, 1),
    OPN("Split", 18, "4x6", "axis=-1 num_outputs=3", FLOATS, 3, 1),
    OP("Reshape", 14, "2x3x4 c3:int64=4,-1,2", "", NUMERIC),
    OP("Reshape", 14, "2x3x4 c2:int64=0,-1", "", FLOATS),
    OP("Flatten", 13, "2x3x4x5", "axis=2", FLOATS),
    OP("Flatten", 13, "2x3x4x5", "axis=-1", FLOATS),
    OP("Squeeze", 13, "2x1x4x1 c1:int64=-1", "", FLOATS),
    OP("Unsqueeze", 13, "2x4 c2:int64=0,-1", "", FLOATS),
    OP("Identity", 16, "2x3", "", NUMERIC),
    OP("Dropout", 13, "2x3x4", "", FLOATS),
    OP("Expand", 13, "3x1 c3:int64=2,3,4", "", FLOATS),
    OP("Gather", 13, "5x4x3 2x3:int64:idx5", "axis=0", NUMERIC),
    OP("Gather", 13, "5x4x3 s:int64=-1", "axis=-2", FLOATS),
    /* reductions */
    OP("ReduceSum", 13, "2x3x4 c1:int64=-1", "keepdims=1", FLOATS),
    OP("ReduceSum", 13, "2x3x4 c2:int64=0,2", "keepdims=0", FLOATS),
    OP("ReduceMean", 18, "2x3x4 c1:int64=1", "", FLOATS),
    OP("ReduceMean", 13, "2x3x4", "axes=-1,", FLOATS),
    OP("ReduceMax", 18, "2x3x4 c1:int64=-2", "keepdims=0", FLOATS),
    /* plugins: contrib (com.microsoft) and example (com.example), each
     * against a graph of standard ops */
    PLUG("com.example:Swish", 17, "2x3x8", "", 1, "Sigmoid(x0)->s; Mul(x0,s)->y0"),
    PLUG("com.example:Swish", 17, "2x3x8", "alpha=1.702", 1,
     "Mul(x0,#1.702)->a; Sigmoid(a)->s; Mul(x0,s)->y0"),
    PLUG("com.microsoft:Gelu", 17, "2x3x8", "", 1, "minfer:Gelu(x0)->y0"),
    PLUG("com.microsoft:FastGelu", 17, "2x3x8 c8", "", 1,
     "Add(x0,x1)->t; minfer:Gelu(t){approximate=tanh}->y0"),
    PLUG("com.microsoft:BiasGelu", 17, "2x3x8 c8", "", 1, "Add(x0,x1)->t; minfer:Gelu(t)->y0"),
    PLUG("com.microsoft:QuickGelu", 17, "2x3x8", "alpha=1.702", 1,
     "Mul(x0,#1.702)->a; Sigmoid(a)->s; Mul(x0,s)->y0"),
    PLUG("com.microsoft:BiasAdd", 17, "2x3x8 c8 2x3x8", "", 1, "Add(x0,x1)->t; Add(t,x2)->y0"),
    PLUG("com.microsoft:FusedConv", 17, "1x3x9x9 c4x3x3x3 c4", "activation=Relu pads=1,1,1,1",
     2, "Conv(x0,x1,x2){pads=1,1,1,1}->c; Relu(c)->y0"),
    PLUG("com.microsoft:FusedMatMul", 17, "2x3x4 2x5x4", "transB=1 alpha=0.5", 2,
     "Transpose(x1){perm=0,2,1}->t; MatMul(x0,t)->m; Mul(m,#0.5)->y0"),
    PLUG("com.microsoft:FusedGemm", 17, "3x4 c4x5 c5", "activation=Relu", 2,
     "Gemm(x0,x1,x2)->g; Relu(g)->y0"),
    PLUG("com.microsoft:SkipLayerNormalization", 17, "2x3x8 2x3x8 c8 c8", "epsilon=1e-5", 2,
     "Add(x0,x1)->t; LayerNormalization(t,x2,x3){epsilon=1e-5}->y0"),
    PLUG("com.microsoft:SkipSimplifiedLayerNormalization", 17, "2x3x8 2x3x8 c8", "epsilon=1e-5", 2, "Add(x0,x1)->t; minfer:RMSNormalization(t,x2){epsilon=1e-5}->y0"),
    PLUG("SimplifiedLayerNormalization", 17, "2x3x8 c8", "epsilon=1e-5", 2,
     "minfer:RMSNormalization(x0,x1){epsilon=1e-5}->y0"),
    PLUG("LayerNormalization", 16, "2x7x16 c16 c16", "", 2,
     "minfer:LayerNormalization(x0,x1,x2){axis=-1}->y0"),
};
#define N_CASES (sizeof CASES / sizeof CASES[0])

/* ---- Small helpers ---------------------------------------------------------------- */

static int verbose;

/* The domain and op of "domain:Op" (domain "" without a colon). */
static void split_op(const char *s, char *domain, size_t dsz, char *op, size_t osz) {
    const char *c = strrchr(s, ':');
    if (!c) {
        snprintf(domain, dsz, "%s", "");
        snprintf(op, osz, "%s", s);
        return;
    }
    snprintf(domain, dsz, "%.*s", (int)(c - s), s);
    snprintf(op, osz, "%s", c + 1);
}

static uint16_t f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    if (((x >> 23) & 0xff) == 0xff)
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    if (exp >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - exp), half = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;
    return (uint16_t)h;
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, x;
    if (exp == 0) {
        float f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    x = exp == 31 ? sign | 0x7f800000u | (mant << 13) : sign | ((exp + 112) << 23) | (mant << 13);
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static float bf16_to_f32(uint16_t b) {
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

/* Element i of a tensor's data as a double (ints exactly below 2^53). */
static double get_elem(const minfer_tensor *t, int64_t i) {
    const void *d = minfer_tensor_data(t);
    switch (minfer_tensor_dtype(t)) {
    case MINFER_DTYPE_FLOAT: return ((const float *)d)[i];
    case MINFER_DTYPE_FLOAT16: return f16_to_f32(((const uint16_t *)d)[i]);
    case MINFER_DTYPE_BFLOAT16: return bf16_to_f32(((const uint16_t *)d)[i]);
    case MINFER_DTYPE_DOUBLE: return ((const double *)d)[i];
    case MINFER_DTYPE_INT8: return ((const int8_t *)d)[i];
    case MINFER_DTYPE_UINT8: return ((const uint8_t *)d)[i];
    case MINFER_DTYPE_INT16: return ((const int16_t *)d)[i];
    case MINFER_DTYPE_UINT16: return ((const uint16_t *)d)[i];
    case MINFER_DTYPE_INT32: return ((const int32_t *)d)[i];
    case MINFER_DTYPE_UINT32: return ((const uint32_t *)d)[i];
    case MINFER_DTYPE_INT64: return (double)((const int64_t *)d)[i];
    case MINFER_DTYPE_UINT64: return (double)((const uint64_t *)d)[i];
    case MINFER_DTYPE_BOOL: return ((const uint8_t *)d)[i];
    default: return NAN;
    }
}

/* Stores v (rounded to the type) as element i. */
static void set_elem(minfer_tensor *t, int64_t i, double v) {
    void *d = minfer_tensor_data(t);
    switch (minfer_tensor_dtype(t)) {
    case MINFER_DTYPE_FLOAT: ((float *)d)[i] = (float)v; break;
    case MINFER_DTYPE_FLOAT16: ((uint16_t *)d)[i] = f32_to_f16((float)v); break;
    case MINFER_DTYPE_BFLOAT16: ((uint16_t *)d)[i] = f32_to_bf16((float)v); break;
    case MINFER_DTYPE_DOUBLE: ((double *)d)[i] = v; break;
    case MINFER_DTYPE_INT8: ((int8_t *)d)[i] = (int8_t)v; break;
    case MINFER_DTYPE_UINT8: ((uint8_t *)d)[i] = (uint8_t)v; break;
    case MINFER_DTYPE_INT32: ((int32_t *)d)[i] = (int32_t)v; break;
    case MINFER_DTYPE_INT64: ((int64_t *)d)[i] = (int64_t)v; break;
    case MINFER_DTYPE_BOOL: ((uint8_t *)d)[i] = v != 0; break;
    default: break;
    }
}

static int is_float(minfer_dtype dt) {
    return dt == MINFER_DTYPE_FLOAT || dt == MINFER_DTYPE_FLOAT16 ||
           dt == MINFER_DTYPE_BFLOAT16 || dt == MINFER_DTYPE_DOUBLE;
}

static int is_unsigned(minfer_dtype dt) {
    return dt == MINFER_DTYPE_UINT8 || dt == MINFER_DTYPE_UINT16 || dt == MINFER_DTYPE_UINT32 ||
           dt == MINFER_DTYPE_UINT64 || dt == MINFER_DTYPE_BOOL;
}

/* ---- Building a row's graph ------------------------------------------------------- */

/* A row built for one type: the builder and the graph inputs' values. */
typedef struct built {
    minfer_graph_builder *b;
    size_t n_in;
    char names[MAX_IN][8];
    minfer_tensor *inputs[MAX_IN];
    char err[256];
} built;

static uint32_t rng = 12345u;

static double uniform(void) {
    rng = rng * 1664525u + 1013904223u;
    return (double)((rng >> 8) & 0xffff) / 65536.0;
}

/* One input token parsed: *dt the type, values drawn or given. */
static int make_tensor(const char *tok, minfer_dtype T, int *is_const, int *omitted,
                       minfer_tensor **out, char *err, size_t esz) {
    int64_t dims[8];
    size_t rank = 0;
    const char *p = tok;
    *is_const = *omitted = 0;
    *out = NULL;
    if (*p == 'c') {
        *is_const = 1;
        p++;
    }
    if (*p == '-') {
        *omitted = 1;
        return 0;
    }
    if (*p == 's')
        p++;
    else
        for (;;) {
            char *e;
            long long d = strtoll(p, &e, 10);
            if (e == p || rank == 8) {
                snprintf(err, esz, "input '%s': bad shape", tok);
                return -1;
            }
            dims[rank++] = d;
            p = e;
            if (*p != 'x')
                break;
            p++;
        }
    minfer_dtype dt = T;
    const char *gen = "";
    char type[16] = "";
    if (*p == ':') {
        size_t n = strcspn(p + 1, ":=");
        snprintf(type, sizeof type, "%.*s", (int)n, p + 1);
        p += 1 + n;
        if (*p == ':') {
            gen = p + 1;
            p += 1 + strcspn(p + 1, "=");
        }
    }
    if (!strcmp(type, "int64"))
        dt = MINFER_DTYPE_INT64;
    else if (!strcmp(type, "int32"))
        dt = MINFER_DTYPE_INT32;
    else if (!strcmp(type, "float"))
        dt = MINFER_DTYPE_FLOAT;
    else if (!strcmp(type, "bool"))
        dt = MINFER_DTYPE_BOOL;
    else if (type[0] && strcmp(type, "T") != 0) {
        snprintf(err, esz, "input '%s': unknown type '%s'", tok, type);
        return -1;
    }
    if (minfer_tensor_create(dt, dims, rank, out) != MINFER_OK) {
        snprintf(err, esz, "input '%s': %s", tok, minfer_last_error());
        return -1;
    }
    int64_t n = minfer_tensor_numel(*out);
    if (*p == '=') {
        p++;
        for (int64_t i = 0; i < n; i++) {
            char *e;
            double v = strtod(p, &e);
            if (e == p) {
                snprintf(err, esz, "input '%s': %lld values needed", tok, (long long)n);
                minfer_tensor_free(*out);
                *out = NULL;
                return -1;
            }
            set_elem(*out, i, v);
            p = *e == ',' ? e + 1 : e;
        }
        return 0;
    }
    int idx = strncmp(gen, "idx", 3) == 0 ? atoi(gen + 3) : 0;
    for (int64_t i = 0; i < n; i++) {
        double u = uniform(), v;
        if (idx)
            v = floor(u * 2 * idx) - idx;
        else if (!strncmp(gen, "pos", 3))
            v = 0.1 + 2 * u;
        else if (is_float(dt))
            v = 2 * u - 1;
        else if (is_unsigned(dt))
            v = floor(u * 11);
        else
            v = floor(u * 11) - 5;
        set_elem(*out, i, v);
    }
    return 0;
}

/* Sets one "name=value" attribute on node n. */
static int set_attr(minfer_graph_builder *b, size_t n, const char *kv, char *err, size_t esz) {
    char name[64];
    const char *eq = strchr(kv, '=');
    if (!eq || eq - kv >= (long)sizeof name) {
        snprintf(err, esz, "attribute '%s': not name=value", kv);
        return -1;
    }
    snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
    const char *v = eq + 1;
    minfer_status st;
    if ((v[0] >= 'A' && v[0] <= 'Z') || (v[0] >= 'a' && v[0] <= 'z')) {
        st = minfer_builder_set_attr_string(b, n, name, v);
    } else {
        int list = strchr(v, ',') != NULL, flt = strpbrk(v, ".e") != NULL;
        int64_t iv[16];
        float fv[16];
        size_t k = 0;
        for (const char *p = v; *p && k < 16;) {
            char *e;
            if (flt)
                fv[k] = strtof(p, &e);
            else
                iv[k] = strtoll(p, &e, 10);
            if (e == p)
                break;
            k++;
            p = *e == ',' ? e + 1 : e;
        }
        if (k == 0) {
            snprintf(err, esz, "attribute '%s': no value", kv);
            return -1;
        }
        st = list ? (flt ? minfer_builder_set_attr_floats(b, n, name, fv, k)
                         : minfer_builder_set_attr_ints(b, n, name, iv, k))
                  : (flt ? minfer_builder_set_attr_float(b, n, name, fv[0])
                         : minfer_builder_set_attr_int(b, n, name, iv[0]));
    }
    if (st != MINFER_OK) {
        snprintf(err, esz, "attribute '%s': %s", kv, minfer_last_error());
        return -1;
    }
    return 0;
}

/* Sets the space-separated attributes of attrs (up to `end`) on node n. */
static int set_attrs(minfer_graph_builder *b, size_t n, const char *attrs, size_t len, char *err,
                     size_t esz) {
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)len, attrs);
    for (char *save = NULL, *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save))
        if (set_attr(b, n, kv, err, esz) != 0)
            return -1;
    return 0;
}

/* One node "domain:Op" from in[] to out[]; the domain is imported. */
static int add_node(minfer_graph_builder *b, const char *name, const char *op,
                    const char *const *in, size_t n_in, const char *const *out, size_t n_out,
                    size_t *idx, char *err, size_t esz) {
    char domain[96], type[96];
    split_op(op, domain, sizeof domain, type, sizeof type);
    if (domain[0])
        (void)minfer_builder_add_opset(b, domain, 1); /* fails when already imported */
    if (minfer_builder_add_node(b, type, domain[0] ? domain : NULL, name, in, n_in, out, n_out,
                                idx) != MINFER_OK) {
        snprintf(err, esz, "node %s: %s", op, minfer_last_error());
        return -1;
    }
    return 0;
}

/* The reference graph ref (see op_case) over the row's inputs x0.. */
static int add_ref(minfer_graph_builder *b, const char *ref, minfer_dtype T, char *err,
                   size_t esz) {
    char buf[512];
    int n_nodes = 0, n_consts = 0;
    snprintf(buf, sizeof buf, "%s", ref);
    for (char *save = NULL, *node = strtok_r(buf, ";", &save); node;
         node = strtok_r(NULL, ";", &save)) {
        while (*node == ' ')
            node++;
        char *lp = strchr(node, '('), *rp = lp ? strchr(lp, ')') : NULL;
        char *arrow = rp ? strstr(rp, "->") : NULL;
        if (!arrow) {
            snprintf(err, esz, "reference '%s': not Op(in,...)->out", node);
            return -1;
        }
        *lp = 0;
        *rp = 0;
        char ins[MAX_IN][24], name[16];
        const char *inp[MAX_IN];
        size_t n_in = 0;
        for (char *s2 = NULL, *a = strtok_r(lp + 1, ",", &s2); a && n_in < MAX_IN;
             a = strtok_r(NULL, ",", &s2)) {
            if (a[0] == '#') {
                minfer_tensor *c = NULL;
                snprintf(ins[n_in], sizeof ins[0], "k%d", n_consts++);
                if (minfer_tensor_create(T, NULL, 0, &c) != MINFER_OK) {
                    snprintf(err, esz, "reference constant: %s", minfer_last_error());
                    return -1;
                }
                set_elem(c, 0, atof(a + 1));
                minfer_status st = minfer_builder_add_initializer(b, ins[n_in], c);
                minfer_tensor_free(c);
                if (st != MINFER_OK) {
                    snprintf(err, esz, "reference constant: %s", minfer_last_error());
                    return -1;
                }
            } else
                snprintf(ins[n_in], sizeof ins[0], "%s", a);
            inp[n_in] = ins[n_in];
            n_in++;
        }
        const char *out = arrow + 2;
        size_t idx;
        snprintf(name, sizeof name, "r%d", n_nodes++);
        if (add_node(b, name, node, inp, n_in, &out, 1, &idx, err, esz) != 0)
            return -1;
        char *lb = strchr(rp + 1, '{'), *rb = lb ? strchr(lb, '}') : NULL;
        if (lb && rb && lb < arrow && set_attrs(b, idx, lb + 1, (size_t)(rb - lb - 1), err, esz))
            return -1;
    }
    return 0;
}

static void built_free(built *g) {
    for (size_t i = 0; i < g->n_in; i++)
        minfer_tensor_free(g->inputs[i]);
    minfer_builder_free(g->b);
    memset(g, 0, sizeof *g);
}

/* Builds row c in type T: its node (or, with ref, its oracle graph) over
 * the same inputs; the random draws depend only on the row and the type,
 * so the oracle and every target get the same values. */
static int build(const op_case *c, minfer_dtype T, int use_ref, size_t row, built *g) {
    char buf[512], names[MAX_IN][8];
    const char *in[MAX_IN], *out[MAX_OUT] = {"y0", "y1", "y2", "y3"};
    size_t n_in = 0, idx;
    int n_out = c->n_out ? c->n_out : 1;
    memset(g, 0, sizeof *g);
    rng = 12345u + (uint32_t)row * 7919u + (uint32_t)T * 104729u;
    if (minfer_builder_create(c->opset, &g->b) != MINFER_OK) {
        snprintf(g->err, sizeof g->err, "builder: %s", minfer_last_error());
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", c->inputs);
    for (char *save = NULL, *tok = strtok_r(buf, " ", &save); tok;
         tok = strtok_r(NULL, " ", &save)) {
        int is_const, omitted;
        minfer_tensor *t;
        if (n_in == MAX_IN) {
            snprintf(g->err, sizeof g->err, "more than %d inputs", MAX_IN);
            return -1;
        }
        if (make_tensor(tok, T, &is_const, &omitted, &t, g->err, sizeof g->err) != 0)
            return -1;
        snprintf(names[n_in], sizeof names[0], "%s", omitted ? "" : "x");
        if (!omitted)
            snprintf(names[n_in], sizeof names[0], "x%zu", n_in);
        in[n_in] = names[n_in];
        if (t && is_const) {
            minfer_status st = minfer_builder_add_initializer(g->b, names[n_in], t);
            minfer_tensor_free(t);
            if (st != MINFER_OK) {
                snprintf(g->err, sizeof g->err, "initializer: %s", minfer_last_error());
                return -1;
            }
        } else if (t) {
            if (minfer_builder_add_input(g->b, names[n_in], minfer_tensor_dtype(t),
                                         minfer_tensor_dims(t), minfer_tensor_rank(t),
                                         NULL) != MINFER_OK) {
                minfer_tensor_free(t);
                snprintf(g->err, sizeof g->err, "input: %s", minfer_last_error());
                return -1;
            }
            snprintf(g->names[g->n_in], sizeof g->names[0], "%s", names[n_in]);
            g->inputs[g->n_in++] = t;
        }
        n_in++;
    }
    if (use_ref) {
        if (add_ref(g->b, c->ref, T, g->err, sizeof g->err) != 0)
            return -1;
    } else {
        if (add_node(g->b, "n0", c->op, in, n_in, out, (size_t)n_out, &idx, g->err,
                     sizeof g->err) != 0 ||
            set_attrs(g->b, idx, c->attrs, strlen(c->attrs), g->err, sizeof g->err) != 0)
            return -1;
    }
    for (int o = 0; o < n_out; o++)
        if (minfer_builder_add_output(g->b, out[o]) != MINFER_OK) {
            snprintf(g->err, sizeof g->err, "output: %s", minfer_last_error());
            return -1;
        }
    return 0;
}

/* ---- Targets and sessions -------------------------------------------------------- */

typedef struct target {
    const char *arg;   /* as given */
    char name[64];     /* provider name, or the plugin's */
    char options[128]; /* provider options ("" none) */
    int threads;       /* 0: the default (2) */
    int plugin;        /* a plugin, not a provider */
    int usable;
    /* totals over the rows */
    int claimed, passed, failed, unclaimed;
} target;

static int parse_target(const char *arg, target *t) {
    memset(t, 0, sizeof *t);
    t->arg = arg;
    t->usable = 1;
    if (!strncmp(arg, "plugin:", 7)) {
        t->plugin = 1;
        snprintf(t->name, sizeof t->name, "%s", arg + 7);
        return t->name[0] ? 0 : -1;
    }
    const char *s1 = strchr(arg, '/');
    snprintf(t->name, sizeof t->name, "%.*s", (int)(s1 ? (size_t)(s1 - arg) : strlen(arg)), arg);
    if (s1) {
        const char *s2 = strchr(s1 + 1, '/');
        snprintf(t->options, sizeof t->options, "%.*s",
                 (int)(s2 ? (size_t)(s2 - s1 - 1) : strlen(s1 + 1)), s1 + 1);
        if (s2)
            t->threads = atoi(s2 + 1);
    }
    return t->name[0] ? 0 : -1;
}

/* A session of g on the CPU provider alone (t NULL) or {t, cpu}; NULL
 * with the reason in why when it cannot be made. */
static minfer_session *open_session(const built *g, const target *t, char *why, size_t wsz) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    const char *list[2] = {t && !t->plugin ? t->name : "cpu", "cpu"};
    /* a plugin runs beside cpu alone; the cpu target (the oracle against
     * itself, at its own threads) is cpu alone */
    size_t n = t && !t->plugin && strcmp(t->name, "cpu") != 0 ? 2 : 1;
    minfer_status st = minfer_options_create(&opt);
    if (st == MINFER_OK)
        st = minfer_options_set_providers(opt, list, n);
    if (st == MINFER_OK)
        st = minfer_options_set_threads(opt, t && t->threads ? t->threads : 2);
    /* the node as written: no folding or fusion around it */
    if (st == MINFER_OK)
        st = minfer_options_set_optimization_level(opt, 0);
    if (st == MINFER_OK)
        st = minfer_options_set_log_level(opt, MINFER_LOG_ERROR);
    if (st == MINFER_OK && t && t->options[0])
        st = minfer_options_set_provider_options(opt, t->name, t->options);
    if (st == MINFER_OK && t && t->plugin)
        st = minfer_options_add_plugin(opt, t->name);
    if (st == MINFER_OK)
        st = minfer_session_create_from_builder(g->b, opt, &s);
    if (st != MINFER_OK)
        snprintf(why, wsz, "%s", minfer_last_error());
    minfer_options_free(opt);
    return st == MINFER_OK ? s : NULL;
}

/* The provider that runs node n0 ("" when none does). */
static const char *placed_on(const minfer_session *s, const char **declined) {
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement p;
        if (minfer_session_node_placement(s, i, &p) == MINFER_OK && p.node_name &&
            !strcmp(p.node_name, "n0")) {
            if (declined)
                *declined = p.declined;
            return p.provider;
        }
    }
    return "";
}

static int run(minfer_session *s, const built *g, minfer_tensor **outs, size_t n_out, char *why,
               size_t wsz) {
    const char *names[MAX_IN];
    for (size_t i = 0; i < g->n_in; i++)
        names[i] = g->names[i];
    minfer_status st = minfer_session_run(s, names, (const minfer_tensor *const *)g->inputs,
                                          g->n_in, NULL, outs, n_out);
    if (st != MINFER_OK)
        snprintf(why, wsz, "run: %s", minfer_last_error());
    return st == MINFER_OK ? 0 : -1;
}

/* got against want within the type's tolerance times scale; 0 when they agree. */
static int compare(const minfer_tensor *got, const minfer_tensor *want, double scale, char *why,
                   size_t wsz) {
    minfer_dtype dt = minfer_tensor_dtype(want);
    if (minfer_tensor_dtype(got) != dt) {
        snprintf(why, wsz, "type %s, cpu %s", minfer_dtype_name(minfer_tensor_dtype(got)),
                 minfer_dtype_name(dt));
        return -1;
    }
    size_t r = minfer_tensor_rank(want);
    if (minfer_tensor_rank(got) != r ||
        (r && memcmp(minfer_tensor_dims(got), minfer_tensor_dims(want), r * sizeof(int64_t)))) {
        snprintf(why, wsz, "shape differs from cpu's (rank %zu, cpu %zu)", minfer_tensor_rank(got),
                 r);
        return -1;
    }
    double atol = 0, rtol = 0;
    for (size_t k = 0; k < N_DTYPES; k++)
        if (DTYPES[k].dt == dt) {
            atol = DTYPES[k].atol * scale;
            rtol = DTYPES[k].rtol * scale;
        }
    for (int64_t i = 0; i < minfer_tensor_numel(want); i++) {
        double a = get_elem(got, i), b = get_elem(want, i);
        if (isnan(a) && isnan(b))
            continue;
        if (!(fabs(a - b) <= atol + rtol * fabs(b))) {
            snprintf(why, wsz, "element %lld: %.9g, cpu %.9g (tolerance %.3g)", (long long)i, a, b,
                     atol + rtol * fabs(b));
            return -1;
        }
    }
    return 0;
}

/* ---- The run over the table ------------------------------------------------------- */

/* Per op (rows grouped by op name) and target. */
typedef struct cell {
    int claimed, passed, failed;
} cell;

typedef struct op_row {
    const char *op;
    int cases, no_ref;
    cell c[MAX_TARGETS];
} op_row;

static int row_of(op_row *rows, int *n_rows, const char *op) {
    for (int i = 0; i < *n_rows; i++)
        if (!strcmp(rows[i].op, op))
            return i;
    rows[*n_rows].op = op;
    return (*n_rows)++;
}

/* Whether row c concerns target t: a plugin's rows are its domain's ops
 * (a ref), a provider's every other row. */
static int row_for(const op_case *c, const target *t, const char *const *plugin_ops,
                   size_t n_plugin_ops) {
    if (!t->plugin)
        return !c->ref;
    if (!c->ref)
        return 0;
    char d[96], op[96];
    split_op(c->op, d, sizeof d, op, sizeof op);
    for (size_t i = 0; i < n_plugin_ops; i++) {
        /* "plugin\tdomain:Op" */
        const char *tab = strchr(plugin_ops[i], '\t');
        char pd[96], pop[96];
        if (!tab || strncmp(plugin_ops[i], t->name, (size_t)(tab - plugin_ops[i])) ||
            strlen(t->name) != (size_t)(tab - plugin_ops[i]))
            continue;
        split_op(tab + 1, pd, sizeof pd, pop, sizeof pop);
        if (!strcmp(pop, op) && (!strcmp(pd, d) || (!strcmp(pd, "ai.onnx") && !d[0])))
            return 1;
    }
    return 0;
}

/* One row in one type on every target; returns the failures. */
static int run_case(size_t ci, int k, target *ts, int n_t, op_row *row, const char *const *pops,
                    size_t n_pops) {
    const op_case *c = &CASES[ci];
    minfer_dtype T = DTYPES[k].dt;
    int n_out = c->n_out ? c->n_out : 1, failures = 0;
    minfer_tensor *want[MAX_OUT] = {0};
    built g;
    char why[512] = "";
    int any = 0;
    for (int j = 0; j < n_t; j++)
        any |= ts[j].usable && row_for(c, &ts[j], pops, n_pops);
    if (!any)
        return 0;
    /* the oracle */
    if (build(c, T, c->ref != NULL, ci, &g) != 0) {
        printf("FAIL %s (%s) [%s %s]: the row does not build: %s\n", c->op, DTYPES[k].name,
               c->inputs, c->attrs, g.err);
        built_free(&g);
        return 1;
    }
    minfer_session *s = open_session(&g, NULL, why, sizeof why);
    if (!s || run(s, &g, want, (size_t)n_out, why, sizeof why) != 0) {
        /* the CPU provider lacks the op in this type: nothing to compare with */
        if (verbose)
            printf("no reference: %s (%s) [%s %s]: %s\n", c->op, DTYPES[k].name, c->inputs,
                   c->attrs, why);
        row->no_ref++;
        minfer_session_free(s);
        built_free(&g);
        for (int o = 0; o < n_out; o++)
            minfer_tensor_free(want[o]);
        return 0;
    }
    minfer_session_free(s);
    if (c->ref) {
        built_free(&g);
        if (build(c, T, 0, ci, &g) != 0) {
            printf("FAIL %s (%s): the row does not build: %s\n", c->op, DTYPES[k].name, g.err);
            built_free(&g);
            return 1;
        }
    }
    row->cases++;
    for (int j = 0; j < n_t; j++) {
        target *t = &ts[j];
        if (!t->usable || !row_for(c, t, pops, n_pops))
            continue;
        minfer_tensor *got[MAX_OUT] = {0};
        const char *declined = "";
        s = open_session(&g, t, why, sizeof why);
        const char *on = s ? placed_on(s, &declined) : "";
        int claimed = t->plugin ? s && strcmp(on, "cpu") != 0 && on[0] : !strcmp(on, t->name);
        if (!s && !t->plugin) {
            /* the CPU provider builds this graph alone: a session the
             * target's presence breaks is its failure */
            printf("FAIL %s %s (%s) [%s | %s]: session: %s\n", t->arg, c->op, DTYPES[k].name,
                   c->inputs, c->attrs, why);
            row->c[j].claimed++;
            row->c[j].failed++;
            failures++;
        } else if (!claimed) {
            if (verbose)
                printf("not claimed: %s %s (%s) [%s | %s]: %s\n", t->arg, c->op, DTYPES[k].name,
                       c->inputs, c->attrs, s ? declined : why);
            t->unclaimed++;
        } else {
            row->c[j].claimed++;
            int bad = run(s, &g, got, (size_t)n_out, why, sizeof why);
            for (int o = 0; !bad && o < n_out; o++) {
                char w2[400];
                if (compare(got[o], want[o], c->tol ? c->tol : 1, w2, sizeof w2) != 0) {
                    snprintf(why, sizeof why, "output %d: %s", o, w2);
                    bad = 1;
                }
            }
            if (bad) {
                printf("FAIL %s %s (%s) [%s | %s]: %s\n", t->arg, c->op, DTYPES[k].name,
                       c->inputs, c->attrs, why);
                row->c[j].failed++;
                failures++;
            } else
                row->c[j].passed++;
        }
        for (int o = 0; o < n_out; o++)
            minfer_tensor_free(got[o]);
        minfer_session_free(s);
    }
    for (int o = 0; o < n_out; o++)
        minfer_tensor_free(want[o]);
    built_free(&g);
    return failures;
}

/* ---- Coverage: ops without a row ------------------------------------------------- */

/* Whether target t takes a node of op (no row) with n float inputs of one
 * shape: the generic probe. */
static int probe(const char *op, int n, const target *t) {
    op_case c = {op, 17, NULL, "", F32, 1, 1, NULL};
    char inputs[64] = "";
    for (int i = 0; i < n; i++)
        strcat(inputs, i ? " 2x3x4" : "2x3x4");
    c.inputs = inputs;
    built g;
    char why[256];
    int taken = 0;
    if (build(&c, MINFER_DTYPE_FLOAT, 0, 0, &g) == 0) {
        minfer_session *s = open_session(&g, t, why, sizeof why);
        if (s) {
            const char *on = placed_on(s, NULL);
            taken = t->plugin ? on[0] && strcmp(on, "cpu") != 0 : !strcmp(on, t->name);
        }
        minfer_session_free(s);
    }
    built_free(&g);
    return taken;
}

/* Reads the ops of the CPU provider's table (docs/operators.md rows
 * "| domain | Op | ..."), as "domain:Op" ("" domain for ai.onnx). */
static size_t read_ops(const char *path, char ***out) {
    FILE *f = fopen(path, "r");
    char line[1024];
    size_t n = 0, cap = 0;
    char **v = NULL;
    *out = NULL;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        char d[96], op[96];
        if (sscanf(line, "| %95[^ |] | %95[^ |] |", d, op) != 2 || !strcmp(d, "Domain") ||
            d[0] == '-')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, cap * sizeof *v);
            if (!nv)
                break;
            v = nv;
        }
        size_t len = strlen(d) + strlen(op) + 2;
        if (!(v[n] = malloc(len)))
            break;
        snprintf(v[n++], len, "%s%s%s", strcmp(d, "ai.onnx") ? d : "",
                 strcmp(d, "ai.onnx") ? ":" : "", op);
    }
    fclose(f);
    *out = v;
    return n;
}

static int has_row(const char *op) {
    for (size_t i = 0; i < N_CASES; i++)
        if (!strcmp(CASES[i].op, op))
            return 1;
    return 0;
}

/* Lists the ops a target takes that have no row; returns their count. */
static int uncovered(target *ts, int n_t, char **ops, size_t n_ops, const char *const *pops,
                     size_t n_pops) {
    int n_unc = 0;
    for (int j = 0; j < n_t; j++) {
        target *t = &ts[j];
        if (!t->usable)
            continue;
        for (size_t i = 0; i < (t->plugin ? n_pops : n_ops); i++) {
            char op[200];
            if (t->plugin) {
                const char *tab = strchr(pops[i], '\t');
                if (!tab || strncmp(pops[i], t->name, (size_t)(tab - pops[i])) ||
                    strlen(t->name) != (size_t)(tab - pops[i]))
                    continue;
                snprintf(op, sizeof op, "%s", !strncmp(tab + 1, "ai.onnx:", 8) ? tab + 9 : tab + 1);
                if (!has_row(op)) {
                    printf("UNCOVERED %s %s: registered by the plugin, no row\n", t->arg, op);
                    n_unc++;
                }
                continue;
            }
            snprintf(op, sizeof op, "%s", ops[i]);
            if (has_row(op))
                continue;
            for (int n = 1; n <= 3; n++)
                if (probe(op, n, t)) {
                    printf("UNCOVERED %s %s: claimed with %d float input%s, no row\n", t->arg,
                           op, n, n > 1 ? "s" : "");
                    n_unc++;
                    break;
                }
        }
    }
    return n_unc;
}

/* "plugin\tdomain:Op" for each op every usable plugin target registers. */
static size_t plugin_ops(target *ts, int n_t, char ***out) {
    const char *extra[MAX_TARGETS];
    size_t n_extra = 0, n = 0;
    char **v = NULL;
    *out = NULL;
    for (int j = 0; j < n_t; j++)
        if (ts[j].plugin)
            extra[n_extra++] = ts[j].name;
    if (!n_extra)
        return 0;
    minfer_plugin_list *l = NULL;
    if (minfer_plugin_list_create(extra, n_extra, &l) != MINFER_OK)
        return 0;
    for (int j = 0; j < n_t; j++) {
        if (!ts[j].plugin)
            continue;
        ts[j].usable = 0;
        for (size_t i = 0; i < minfer_plugin_list_count(l); i++) {
            const minfer_plugin_desc *p = minfer_plugin_list_get(l, i);
            if (strcmp(p->name, ts[j].name) != 0 || !p->usable || ts[j].usable)
                continue;
            ts[j].usable = 1;
            for (size_t o = 0; o < p->n_ops; o++) {
                char **nv = realloc(v, (n + 1) * sizeof *v);
                if (!nv)
                    break;
                v = nv;
                size_t len = strlen(p->name) + strlen(p->ops[o]) + 2;
                if (!(v[n] = malloc(len)))
                    break;
                /* "com.example:Swish (opset 1+)" -> "com.example:Swish" */
                snprintf(v[n], len, "%s\t%.*s", p->name, (int)strcspn(p->ops[o], " "), p->ops[o]);
                n++;
            }
        }
    }
    minfer_plugin_list_free(l);
    *out = v;
    return n;
}

/* Marks provider targets that do not load here (their reason printed). */
static void check_providers(target *ts, int n_t) {
    minfer_provider_list *l = NULL;
    if (minfer_provider_list_create(&l) != MINFER_OK)
        return;
    for (int j = 0; j < n_t; j++) {
        if (ts[j].plugin)
            continue;
        ts[j].usable = 0;
        for (size_t i = 0; i < minfer_provider_list_count(l); i++) {
            const minfer_provider_info *p = minfer_provider_list_get(l, i);
            if (!strcmp(p->name, ts[j].name)) {
                ts[j].usable = p->usable;
                if (!p->usable)
                    printf("%s: not usable here: %s\n", ts[j].arg, p->reason);
                break;
            }
        }
        if (!ts[j].usable && verbose)
            printf("%s: not found in the provider search path\n", ts[j].arg);
    }
    minfer_provider_list_free(l);
}

static void print_table(const op_row *rows, int n_rows, const target *ts, int n_t) {
    printf("\n%-44s %6s", "op", "cases");
    for (int j = 0; j < n_t; j++)
        printf(" %14.14s", ts[j].arg);
    printf("\n");
    for (int i = 0; i < n_rows; i++) {
        if (!rows[i].cases && !rows[i].no_ref)
            continue; /* no target's row (a plugin's, on a provider run) */
        printf("%-44s %6d", rows[i].op, rows[i].cases);
        for (int j = 0; j < n_t; j++) {
            char cellbuf[32];
            const cell *c = &rows[i].c[j];
            if (!ts[j].usable)
                snprintf(cellbuf, sizeof cellbuf, "unusable");
            else if (c->failed)
                snprintf(cellbuf, sizeof cellbuf, "FAIL %d/%d", c->failed, c->claimed);
            else if (c->claimed)
                snprintf(cellbuf, sizeof cellbuf, "%d/%d", c->passed, c->claimed);
            else
                snprintf(cellbuf, sizeof cellbuf, "-");
            printf(" %14s", cellbuf);
        }
        printf("\n");
    }
}

int main(int argc, char **argv) {
    target ts[MAX_TARGETS];
    int n_t = 0;
    const char *ops_path = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            ops_path = argv[++i];
        else if (!strcmp(argv[i], "--op") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "-v"))
            verbose = 1;
        else if (argv[i][0] == '-' || n_t == MAX_TARGETS || parse_target(argv[i], &ts[n_t++])) {
            fprintf(stderr, "usage: op_suite [--ops OPERATORS_MD] [--op NAME] [-v] TARGET... "
                            "(at most %d; TARGET: PROVIDER[/OPTIONS[/THREADS]] or "
                            "plugin:NAME)\n",
                    MAX_TARGETS);
            return 2;
        }
    }
    if (!n_t) {
        fprintf(stderr, "op_suite: no TARGET (see the usage in tests/op_suite.c)\n");
        return 2;
    }
    check_providers(ts, n_t);
    char **pops = NULL, **ops = NULL;
    size_t n_pops = plugin_ops(ts, n_t, &pops), n_ops = ops_path ? read_ops(ops_path, &ops) : 0;
    if (ops_path && !n_ops) {
        fprintf(stderr, "op_suite: no ops read from %s\n", ops_path);
        return 1;
    }
    int usable = 0, bad_target = 0;
    for (int j = 0; j < n_t; j++) {
        usable += ts[j].usable;
        if (!ts[j].usable && ts[j].plugin) {
            printf("%s: the plugin does not load\n", ts[j].arg);
            bad_target = 1;
        }
    }
    if (!usable) {
        printf("op_suite: no target is usable here: skipped\n");
        return 77;
    }
    op_row *rows = calloc(N_CASES, sizeof *rows);
    if (!rows)
        return 1;
    int n_rows = 0, failures = 0, run_cases = 0;
    for (size_t ci = 0; ci < N_CASES; ci++) {
        if (only && strcmp(CASES[ci].op, only) != 0)
            continue;
        op_row *row = &rows[row_of(rows, &n_rows, CASES[ci].op)];
        for (size_t k = 0; k < N_DTYPES; k++)
            if (CASES[ci].types & (1u << k)) {
                failures += run_case(ci, (int)k, ts, n_t, row, (const char *const *)pops, n_pops);
                run_cases++;
            }
    }
    int n_unc = only ? 0 : uncovered(ts, n_t, ops, n_ops, (const char *const *)pops, n_pops);
    print_table(rows, n_rows, ts, n_t);
    int total = 0, no_ref = 0;
    for (int i = 0; i < n_rows; i++) {
        total += rows[i].cases;
        no_ref += rows[i].no_ref;
        for (int j = 0; j < n_t; j++) {
            ts[j].claimed += rows[i].c[j].claimed;
            ts[j].passed += rows[i].c[j].passed;
            ts[j].failed += rows[i].c[j].failed;
        }
    }
    printf("\n%d rows x types tried, %d with a CPU reference (%d types the CPU provider lacks)\n",
           run_cases, total, no_ref);
    for (int j = 0; j < n_t; j++)
        printf("%-24s %s: %d claimed, %d passed, %d failed, %d not claimed\n", ts[j].arg,
               ts[j].usable ? "usable" : "not usable", ts[j].claimed, ts[j].passed, ts[j].failed,
               ts[j].unclaimed);
    printf("%d op%s claimed with no row (UNCOVERED above)\n", n_unc, n_unc == 1 ? "" : "s");
    for (size_t i = 0; i < n_ops; i++)
        free(ops[i]);
    free(ops);
    for (size_t i = 0; i < n_pops; i++)
        free(pops[i]);
    free(pops);
    free(rows);
    if (failures || bad_target) {
        printf("op_suite: %d failure%s\n", failures, failures == 1 ? "" : "s");
        return 1;
    }
    return 0;
}
