/*
 * libFuzzer target: small graphs built from op schemas, with extreme
 * attribute and shape values, then a session and a run on the CPU
 * provider under the fuzz limits (fuzz_common.h).
 *
 * fuzz_builder picks ops and attribute names blindly, so most of its
 * graphs stop at the first check. Here each op comes with its schema: what
 * each input is (a float data tensor, a shape vector, a scalar, indices, a
 * condition), which are optional, and its attributes with their types.
 * The input bytes only choose among those, and the values come from a
 * table of the ones that break size arithmetic: 0, negatives, powers of
 * two at and around 2^31, 2^32, 2^62 and 2^63, NaN and the infinities.
 * The ops are the ones whose cost or size can explode from one value
 * (ConvTranspose, ConstantOfShape, Expand, Tile, Pad, Range, Resize, LRN,
 * Einsum, the pools, Loop...) and the sort-like and indexing ones.
 *
 * The graph is written as an ONNX model (onnx_build.h) so that Loop and If
 * bodies are possible, and loaded with minfer_session_create_from_memory.
 *
 * The program, byte by byte (a missing byte reads as 0):
 *   opset choice, node count, then per node: op, and per input slot a
 *   choice (omit an optional one, an earlier value, or a new constant whose
 *   bytes follow), the output count, then an attribute mask and each
 *   chosen attribute's bytes (a Loop or If body: a node count and nodes).
 * Every top-level node output is a graph output, so every node runs.
 * tests/fuzz/graph_program.py writes programs from readable descriptions
 * (the regression inputs in regressions/graph/); keep its tables in step
 * with the ones here.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "onnx_build.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static unsigned byte(reader *r) {
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

/* ---- Extreme values ------------------------------------------------------ */

static const int64_t big_ints[] = {
    INT32_MAX,          (int64_t)1 << 31,        ((int64_t)1 << 31) + 1,  (int64_t)1 << 32,
    ((int64_t)1 << 32) - 1, ((int64_t)1 << 32) + 1, (int64_t)1 << 40,     (int64_t)1 << 54,
    (int64_t)1 << 62,   INT64_MAX,               INT64_MIN,               INT64_MIN + 1,
    -((int64_t)1 << 31), -((int64_t)1 << 32),    -((int64_t)1 << 62),     (int64_t)1 << 16,
    (int64_t)1 << 20,   (int64_t)1 << 30,        65535,                   999999,
    (int64_t)1 << 24,   (int64_t)1 << 33,        (int64_t)3 << 61,        9999};

/* Half the time a small value in [-2, 5], else one from the table (9999:
 * just under the fuzz limit on a Loop's iterations). */
static int64_t extreme_int(reader *r) {
    unsigned b = byte(r);
    if (b < 128)
        return (int64_t)(b % 8) - 2;
    return big_ints[b % (sizeof big_ints / sizeof big_ints[0])];
}

static float extreme_float(reader *r) {
    static const float vals[] = {0.0f,     1.0f,      -1.0f,    0.5f,      2.0f,      3.0f,
                                 -0.0f,    1e-30f,    1e30f,    -1e30f,    1e-45f,    2147483648.0f,
                                 4294967296.0f, 4.611686e18f, 9.223372e18f, -9.223372e18f,
                                 65504.0f, 1e10f};
    unsigned b = byte(r);
    if (b >= 240)
        return b & 1 ? INFINITY : -INFINITY;
    if (b >= 216)
        return NAN;
    return vals[b % (sizeof vals / sizeof vals[0])];
}

/* ---- Op schemas ---------------------------------------------------------- */

/* Input kinds: d a data tensor (float mostly, small shape), i an int64
 * vector (shapes, pads, axes), s an int64 scalar, f a float scalar, F a
 * float vector, q a scalar of a numeric type, n indices (int64 data of a
 * small shape with extreme values), b a bool scalar, c a bool vector.
 * Kinds after '|' are optional. */
typedef struct attr_schema {
    const char *name;
    char kind;                  /* i int, I ints, f float, F floats, s string, t tensor, g graph */
    const char *const *strings; /* the choices of an 's' attribute */
} attr_schema;

typedef struct op_schema {
    const char *op;
    const char *inputs;
    unsigned min_out, max_out;
    attr_schema attrs[8];
} op_schema;

static const char *const auto_pads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", NULL};
static const char *const pad_modes[] = {"constant", "reflect", "edge", "wrap", NULL};
static const char *const resize_modes[] = {"nearest", "linear", "cubic", NULL};
static const char *const coord_modes[] = {"half_pixel", "asymmetric", "align_corners",
                                          "tf_crop_and_resize", "pytorch_half_pixel", NULL};
static const char *const nearest_modes[] = {"round_prefer_floor", "floor", "ceil", NULL};
static const char *const equations[] = {"abcd,efgh->", "ab,bc->aa", "ij,jk->ik", "i,i->",
                                        "ii->i", "...ij->...ji", "abc->", "a,b,c->abc", NULL};
static const char *const reductions[] = {"none", "add", "mul", "max", "min", NULL};
static const char *const dtr_modes[] = {"DCR", "CRD", NULL};

#define CONV_ATTRS                                                                                \
    {"kernel_shape", 'I', NULL}, {"strides", 'I', NULL}, {"pads", 'I', NULL},                    \
        {"dilations", 'I', NULL}, {"group", 'i', NULL}, {"auto_pad", 's', auto_pads}
#define POOL_ATTRS                                                                                \
    {"kernel_shape", 'I', NULL}, {"strides", 'I', NULL}, {"pads", 'I', NULL},                    \
        {"dilations", 'I', NULL}, {"ceil_mode", 'i', NULL}, {"auto_pad", 's', auto_pads}

static const op_schema schemas[] = {
    {"ConvTranspose", "dd|d", 1, 1,
     {CONV_ATTRS, {"output_shape", 'I', NULL}, {"output_padding", 'I', NULL}}},
    {"Conv", "dd|d", 1, 1, {CONV_ATTRS}},
    {"ConstantOfShape", "i", 1, 1, {{"value", 't', NULL}}},
    {"Expand", "di", 1, 1, {{0}}},
    {"Tile", "di", 1, 1, {{0}}},
    {"Pad", "di|fi", 1, 1, {{"mode", 's', pad_modes}}},
    {"Range", "sss", 1, 1, {{0}}},
    {"Range", "fff", 1, 1, {{0}}},
    {"Resize", "d|FFi", 1, 1,
     {{"mode", 's', resize_modes}, {"coordinate_transformation_mode", 's', coord_modes},
      {"nearest_mode", 's', nearest_modes}, {"cubic_coeff_a", 'f', NULL},
      {"exclude_outside", 'i', NULL}, {"extrapolation_value", 'f', NULL}, {"axes", 'I', NULL}}},
    {"LRN", "d", 1, 1,
     {{"size", 'i', NULL}, {"alpha", 'f', NULL}, {"beta", 'f', NULL}, {"bias", 'f', NULL}}},
    {"Einsum", "d|dd", 1, 1, {{"equation", 's', equations}}},
    {"MaxPool", "d", 1, 2, {POOL_ATTRS, {"storage_order", 'i', NULL}}},
    {"AveragePool", "d", 1, 1, {POOL_ATTRS, {"count_include_pad", 'i', NULL}}},
    {"GlobalMaxPool", "d", 1, 1, {{0}}},
    {"MaxUnpool", "dn|i", 1, 1,
     {{"kernel_shape", 'I', NULL}, {"strides", 'I', NULL}, {"pads", 'I', NULL}}},
    {"Reshape", "di", 1, 1, {{"allowzero", 'i', NULL}}},
    {"Slice", "dii|ii", 1, 1, {{0}}},
    {"TopK", "ds", 2, 2, {{"axis", 'i', NULL}, {"largest", 'i', NULL}, {"sorted", 'i', NULL}}},
    {"Unique", "d", 1, 4, {{"axis", 'i', NULL}, {"sorted", 'i', NULL}}},
    {"OneHot", "nqd", 1, 1, {{"axis", 'i', NULL}}},
    {"CumSum", "ds", 1, 1, {{"exclusive", 'i', NULL}, {"reverse", 'i', NULL}}},
    {"Gather", "dn", 1, 1, {{"axis", 'i', NULL}}},
    {"GatherElements", "dn", 1, 1, {{"axis", 'i', NULL}}},
    {"GatherND", "dn", 1, 1, {{"batch_dims", 'i', NULL}}},
    {"ScatterElements", "dnd", 1, 1, {{"axis", 'i', NULL}, {"reduction", 's', reductions}}},
    {"ScatterND", "dnd", 1, 1, {{"reduction", 's', reductions}}},
    {"Concat", "d|ddd", 1, 1, {{"axis", 'i', NULL}}},
    {"Split", "d|i", 1, 3, {{"axis", 'i', NULL}, {"num_outputs", 'i', NULL}}},
    {"Transpose", "d", 1, 1, {{"perm", 'I', NULL}}},
    {"Squeeze", "d|i", 1, 1, {{0}}},
    {"Unsqueeze", "di", 1, 1, {{0}}},
    {"Flatten", "d", 1, 1, {{"axis", 'i', NULL}}},
    {"DepthToSpace", "d", 1, 1, {{"blocksize", 'i', NULL}, {"mode", 's', dtr_modes}}},
    {"SpaceToDepth", "d", 1, 1, {{"blocksize", 'i', NULL}}},
    {"Trilu", "d|s", 1, 1, {{"upper", 'i', NULL}}},
    {"EyeLike", "d", 1, 1, {{"k", 'i', NULL}, {"dtype", 'i', NULL}}},
    {"ReduceSum", "d|i", 1, 1, {{"keepdims", 'i', NULL}, {"noop_with_empty_axes", 'i', NULL}}},
    {"ReduceMax", "d|i", 1, 1, {{"axes", 'I', NULL}, {"keepdims", 'i', NULL}}},
    {"ReduceMin", "d|i", 1, 1, {{"axes", 'I', NULL}, {"keepdims", 'i', NULL}}},
    {"ArgMax", "d", 1, 1,
     {{"axis", 'i', NULL}, {"keepdims", 'i', NULL}, {"select_last_index", 'i', NULL}}},
    {"ArgMin", "d", 1, 1,
     {{"axis", 'i', NULL}, {"keepdims", 'i', NULL}, {"select_last_index", 'i', NULL}}},
    {"Max", "d|dd", 1, 1, {{0}}},
    {"Min", "d|dd", 1, 1, {{0}}},
    {"Softmax", "d", 1, 1, {{"axis", 'i', NULL}}},
    {"MatMul", "dd", 1, 1, {{0}}},
    {"Gemm", "dd|d", 1, 1,
     {{"transA", 'i', NULL}, {"transB", 'i', NULL}, {"alpha", 'f', NULL}, {"beta", 'f', NULL}}},
    {"Where", "cdd", 1, 1, {{0}}},
    {"Compress", "dc", 1, 1, {{"axis", 'i', NULL}}},
    {"NonZero", "d", 1, 1, {{0}}},
    {"NonMaxSuppression", "dd|sff", 1, 1, {{"center_point_box", 'i', NULL}}},
    {"ReverseSequence", "dn", 1, 1, {{"time_axis", 'i', NULL}, {"batch_axis", 'i', NULL}}},
    {"Shape", "d", 1, 1, {{"start", 'i', NULL}, {"end", 'i', NULL}}},
    {"Cast", "d", 1, 1, {{"to", 'i', NULL}}},
    {"Clip", "d|ff", 1, 1, {{0}}},
    {"LayerNormalization", "dd|d", 1, 1, {{"axis", 'i', NULL}, {"epsilon", 'f', NULL}}},
    {"GridSample", "dd", 1, 1, {{"align_corners", 'i', NULL}}},
    {"RoiAlign", "ddn", 1, 1,
     {{"output_height", 'i', NULL}, {"output_width", 'i', NULL}, {"sampling_ratio", 'i', NULL},
      {"spatial_scale", 'f', NULL}}},
    {"Loop", "sb|d", 1, 2, {{"body", 'g', NULL}}},
    {"If", "b", 1, 1, {{"then_branch", 'g', NULL}, {"else_branch", 'g', NULL}}},
};
#define N_SCHEMAS (sizeof schemas / sizeof schemas[0])

/* ---- Constants ----------------------------------------------------------- */

typedef struct build {
    reader r;
    Onnx__GraphProto *g;
    int nvals, nconst;
    char vals[64][16]; /* value names visible to the next node */
    int last_out;      /* vals index of the last node's first output; -1: none */
} build;

static const char *new_name(build *b, char prefix) {
    static char name[16];
    snprintf(name, sizeof name, "%c%d", prefix, b->nconst++);
    return name;
}

static void remember(build *b, const char *name) {
    if (b->nvals < 64)
        snprintf(b->vals[b->nvals++], sizeof b->vals[0], "%s", name);
}

/* Fills n elements of type dt from the reader, extreme values throughout. */
static void fill(reader *r, int32_t dt, void *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        switch (dt) {
        case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: ((float *)p)[i] = extreme_float(r); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: ((double *)p)[i] = extreme_float(r); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: ((int64_t *)p)[i] = extreme_int(r); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: ((int32_t *)p)[i] = (int32_t)extreme_int(r); break;
        case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: ((uint8_t *)p)[i] = (uint8_t)byte(r); break;
        default: ((uint8_t *)p)[i] = byte(r) & 1; break; /* bool */
        }
    }
}

static size_t elem_size(int32_t dt) {
    switch (dt) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return 4;
    default: return 1;
    }
}

/* A dimension of a data tensor: mostly 0..4, sometimes as large as the
 * ones that make Einsum or a pool expensive. */
static int64_t big_dim(unsigned b) {
    static const int64_t big[4] = {7, 8, 16, 32};
    return b < 224 ? b % 5 : big[b % 4];
}

/* A tensor of type dt, rank and dims given. The first 64 values come from
 * the reader and repeat over the rest, so that a large tensor does not
 * swallow the program after it. */
static Onnx__TensorProto *tensor(reader *r, const char *name, int32_t dt, int rank,
                                 const int64_t *dims) {
    size_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= (size_t)dims[d];
    uint8_t *buf = ob_alloc(n * elem_size(dt));
    size_t es = elem_size(dt), m = n < 64 ? n : 64;
    fill(r, dt, buf, m);
    for (size_t i = m; i < n; i++)
        memcpy(buf + i * es, buf + (i % m) * es, es);
    Onnx__TensorProto *t = ob_tensor(name, dt, rank, dims, buf, n * elem_size(dt));
    free(buf);
    return t;
}

/* A new initializer of the given kind; its name is remembered. */
static void add_const(build *b, char kind) {
    static const int32_t data_types[] = {
        ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
        ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT, ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
        ONNX__TENSOR_PROTO__DATA_TYPE__INT32, ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
        ONNX__TENSOR_PROTO__DATA_TYPE__UINT8, ONNX__TENSOR_PROTO__DATA_TYPE__BOOL};
    static const int32_t scalar_types[] = {
        ONNX__TENSOR_PROTO__DATA_TYPE__INT64, ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
        ONNX__TENSOR_PROTO__DATA_TYPE__INT32, ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE};
    reader *r = &b->r;
    int32_t dt = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    int64_t dims[4] = {0};
    int rank = 1;
    switch (kind) {
    case 'd': /* rank 0..4, dims mostly 0..4, at most 2^16 elements */
    case 'n':
        if (kind == 'd')
            dt = data_types[byte(r) % 8];
        rank = (int)(byte(r) % 5);
        for (int d = 0, n = 1; d < rank; d++) {
            dims[d] = big_dim(byte(r));
            if (n * dims[d] > 65536)
                dims[d] = 1;
            n *= dims[d] ? (int)dims[d] : 1;
        }
        break;
    case 'i': dims[0] = byte(r) % 9; break;
    case 'F': dt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT; dims[0] = byte(r) % 9; break;
    case 'c': dt = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL; dims[0] = byte(r) % 9; break;
    case 's': rank = (int)(byte(r) % 2); dims[0] = 1; break;
    case 'f': dt = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT; rank = 0; break;
    case 'b': dt = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL; rank = 0; break;
    default: dt = scalar_types[byte(r) % 4]; rank = 0; break; /* q */
    }
    const char *name = new_name(b, 'c');
    OB_PUSH(b->g->initializer, b->g->n_initializer, tensor(r, name, dt, rank, dims));
    remember(b, name);
}

/* ---- Nodes --------------------------------------------------------------- */

/* A graph input or output with no type: inference decides. */
static Onnx__ValueInfoProto *untyped(const char *name) {
    Onnx__ValueInfoProto *vi = ob_alloc(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = ob_str(name);
    return vi;
}

static void add_node(build *b, int depth);

/* A Loop or If body: inputs for a Loop (iteration, condition, one carried
 * value), a few nodes, and as outputs the condition, the carried value and,
 * when the Loop has a second output, a scan output. Depth bounds the
 * nesting. */
static Onnx__GraphProto *body(build *b, const char *op, unsigned n_out, int depth) {
    Onnx__GraphProto *outer = b->g, *g = ob_alloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = ob_str("body");
    int saved_vals = b->nvals;
    b->g = g;
    int is_loop = strcmp(op, "Loop") == 0;
    if (is_loop) {
        char it[16], cond[16], v[16];
        snprintf(it, sizeof it, "%s", new_name(b, 'i'));
        snprintf(cond, sizeof cond, "%s", new_name(b, 'k'));
        snprintf(v, sizeof v, "%s", new_name(b, 'v'));
        ob_input(g, it, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 0, NULL);
        ob_input(g, cond, ONNX__TENSOR_PROTO__DATA_TYPE__BOOL, 0, NULL);
        OB_PUSH(g->input, g->n_input, untyped(v));
        ob_node(g, "Identity", cond, "kout");
        OB_PUSH(g->output, g->n_output, untyped("kout"));
        remember(b, it);
        remember(b, v);
    }
    int before = b->nvals;
    unsigned nodes = byte(&b->r) % 3;
    for (unsigned k = 0; k < nodes; k++)
        add_node(b, depth + 1);
    /* The first output of the last node (else the carried value, or the
     * last outer value) is the carried value and the scan output (Loop),
     * or the branch's result (If). */
    const char *last = b->nvals > before && b->last_out >= before ? b->vals[b->last_out]
                       : b->nvals                                ? b->vals[b->nvals - 1]
                                                                 : "c0";
    ob_node(g, "Identity", last, "out0");
    OB_PUSH(g->output, g->n_output, untyped("out0"));
    if (is_loop && n_out > 1) {
        ob_node(g, "Identity", last, "scan0");
        OB_PUSH(g->output, g->n_output, untyped("scan0"));
    }
    b->nvals = saved_vals;
    b->g = outer;
    return g;
}

static void set_attr(build *b, Onnx__NodeProto *n, const attr_schema *a, const char *op,
                     unsigned n_out, int depth) {
    reader *r = &b->r;
    Onnx__AttributeProto *at;
    switch (a->kind) {
    case 'i': ob_attr_int(n, a->name, extreme_int(r)); break;
    case 'I': {
        int64_t v[6];
        size_t count = byte(r) % 7;
        for (size_t i = 0; i < count; i++)
            v[i] = extreme_int(r);
        ob_attr_ints(n, a->name, count, v);
        break;
    }
    case 'f': ob_attr(n, a->name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT)->f = extreme_float(r); break;
    case 's': {
        size_t count = 0;
        while (a->strings[count])
            count++;
        at = ob_attr(n, a->name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
        const char *s = a->strings[byte(r) % count];
        at->s.len = strlen(s);
        at->s.data = (uint8_t *)ob_str(s);
        break;
    }
    case 't': {
        static const int32_t types[] = {ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT,
                                        ONNX__TENSOR_PROTO__DATA_TYPE__INT64,
                                        ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE,
                                        ONNX__TENSOR_PROTO__DATA_TYPE__BOOL};
        int64_t one = 1;
        ob_attr_tensor(n, a->name, tensor(r, "value", types[byte(r) % 4], 1, &one));
        break;
    }
    default: /* g */
        if (depth < 3)
            ob_attr(n, a->name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = body(b, op, n_out, depth);
        break;
    }
}

static void add_node(build *b, int depth) {
    reader *r = &b->r;
    const op_schema *sc = &schemas[byte(r) % N_SCHEMAS];
    char in[256] = "", out[64] = "";
    int optional = 0;
    for (const char *k = sc->inputs; *k; k++) {
        if (*k == '|') {
            optional = 1;
            continue;
        }
        unsigned c = byte(r);
        if (optional && c % 8 == 7) /* omitted: an empty name, or the end */
            break;
        const char *name;
        if (c % 4 == 0 && b->nvals) {
            name = b->vals[(c / 4) % (unsigned)b->nvals];
        } else {
            add_const(b, *k);
            name = b->vals[b->nvals - 1];
        }
        if (strlen(in) + strlen(name) + 2 < sizeof in) {
            strcat(in, *in ? " " : "");
            strcat(in, name);
        }
    }
    unsigned n_out = sc->min_out + byte(r) % (sc->max_out - sc->min_out + 1);
    char names[3][16];
    for (unsigned o = 0; o < n_out && o < 3; o++) {
        snprintf(names[o], sizeof names[o], "%s", new_name(b, 'y'));
        strcat(out, o ? " " : "");
        strcat(out, names[o]);
    }
    Onnx__NodeProto *n = ob_node(b->g, sc->op, in, out);
    unsigned mask = byte(r);
    for (unsigned a = 0; a < 8 && sc->attrs[a].name; a++)
        if (mask & (1u << a))
            set_attr(b, n, &sc->attrs[a], sc->op, n_out, depth);
    b->last_out = b->nvals < 64 ? b->nvals : -1;
    for (unsigned o = 0; o < n_out && o < 3; o++) {
        remember(b, names[o]);
        if (depth == 0)
            OB_PUSH(b->g->output, b->g->n_output, untyped(names[o]));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const int64_t opsets[] = {13, 11, 17, 18, 21, 9};
    build b = {{data, size}, NULL, 0, 0, {{0}}, -1};
    Onnx__ModelProto *m = ob_model(opsets[byte(&b.r) % 6]);
    b.g = m->graph;
    unsigned nodes = 1 + byte(&b.r) % 6;
    for (unsigned k = 0; k < nodes && b.r.n; k++)
        add_node(&b, 0);
    size_t len;
    uint8_t *bytes = ob_finish(m, &len);
    /* FUZZ_GRAPH_DUMP=FILE: the model of the (last) input, to read a
     * reproducer with `minfer info FILE`. */
    static const char *dump;
    static int dump_read;
    if (!dump_read) {
        dump = getenv("FUZZ_GRAPH_DUMP");
        dump_read = 1;
    }
    if (dump)
        ob_write(dump, bytes, len);
    minfer_session *s = NULL;
    if (minfer_session_create_from_memory(bytes, len, fuzz_options(), &s) == MINFER_OK)
        fuzz_run(s);
    minfer_session_free(s);
    free(bytes);
    return 0;
}
