/*
 * Unit tests for core/shapes/shape_infer.c: per-op output types and shapes, the
 * broadcasting rules with unknown dims, and the errors a bad model gets.
 * Nodes are built by hand (an mf_node over a local attribute array).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "graph/graph.h"
#include "util/internal.h"
#include "shapes/shape_infer.h"

#define MAX_ATTRS 8
#define MAX_IN 6
#define MAX_OUT 4

typedef struct tnode {
    mf_node n;
    mf_attr attrs[MAX_ATTRS];
    int64_t ints[MAX_ATTRS][16];
    minfer_tensor_view in[MAX_IN];
    minfer_tensor_view out[MAX_OUT];
    char err[256];
} tnode;

static void node_init(tnode *t, const char *op, int64_t opset) {
    memset(t, 0, sizeof *t);
    t->n.name = (char *)"";
    t->n.op_type = (char *)op;
    t->n.domain = (char *)"";
    t->n.opset = opset;
    t->n.attrs = t->attrs;
}

static mf_attr *add_attr(tnode *t, const char *name, int type) {
    mf_attr *a;
    assert_true(t->n.n_attrs < MAX_ATTRS);
    a = &t->attrs[t->n.n_attrs++];
    a->name = (char *)name;
    a->type = type;
    return a;
}

static void attr_int(tnode *t, const char *name, int64_t v) {
    add_attr(t, name, MINFER_ATTR_INT)->i = v;
}

static void attr_ints(tnode *t, const char *name, const int64_t *v, size_t n) {
    size_t k = t->n.n_attrs;
    mf_attr *a = add_attr(t, name, MINFER_ATTR_INTS);
    assert_true(n <= 16);
    memcpy(t->ints[k], v, n * sizeof *v);
    a->ints = t->ints[k];
    a->count = n;
}

static void attr_str(tnode *t, const char *name, const char *s) {
    mf_attr *a = add_attr(t, name, MINFER_ATTR_STRING);
    a->s = (char *)s;
    a->s_len = strlen(s);
}

#define ATTR_INTS(t, name, ...)                                                                \
    attr_ints(t, name, (const int64_t[]){__VA_ARGS__},                                          \
              sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

/* A view of known or partly known shape; rank -1 with dims NULL = unknown. */
static minfer_tensor_view view(int32_t dtype, int32_t rank, const int64_t *dims) {
    minfer_tensor_view v;
    memset(&v, 0, sizeof v);
    v.dtype = dtype;
    v.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        v.dims[i] = dims[i];
    return v;
}

#define SHAPE(dt, ...)                                                                         \
    view(dt, (int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),             \
         (const int64_t[]){__VA_ARGS__})
#define UNKNOWN_RANK(dt) view(dt, -1, NULL)

/* A 1-D int64 input with known contents (data must outlive the call). */
static minfer_tensor_view ints_view(const int64_t *data, size_t n) {
    int64_t d = (int64_t)n;
    minfer_tensor_view v = view(MINFER_DTYPE_INT64, 1, &d);
    v.data = (void *)data;
    v.nbytes = n * sizeof(int64_t);
    return v;
}

#define INTS(...)                                                                              \
    ints_view((const int64_t[]){__VA_ARGS__},                                                   \
              sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static minfer_tensor_view scalar_view(int32_t dtype, void *data, size_t nbytes) {
    minfer_tensor_view v = view(dtype, 0, NULL);
    v.data = data;
    v.nbytes = nbytes;
    return v;
}

static minfer_status run(tnode *t, size_t n_in, size_t n_out) {
    return mf_infer_node(&t->n, t->in, n_in, t->out, n_out, t->err, sizeof t->err);
}

static void expect(const minfer_tensor_view *o, int32_t dtype, int32_t rank, const int64_t *dims) {
    assert_int_equal(o->dtype, dtype);
    assert_int_equal(o->rank, rank);
    for (int32_t i = 0; i < rank; i++)
        assert_int_equal(o->dims[i], dims[i]);
}

#define EXPECT(o, dt, ...)                                                                     \
    expect(o, dt, (int32_t)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),        \
           (const int64_t[]){__VA_ARGS__})

enum { F = MINFER_DTYPE_FLOAT, I64 = MINFER_DTYPE_INT64, I32 = MINFER_DTYPE_INT32,
       B = MINFER_DTYPE_BOOL };

/* ---- Convolution and pooling ------------------------------------------ */

static void test_conv_pads_strides_dilations_groups(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Conv", 13);
    ATTR_INTS(&t, "pads", 1, 2, 1, 2);
    ATTR_INTS(&t, "strides", 2, 3);
    ATTR_INTS(&t, "dilations", 2, 1);
    attr_int(&t, "group", 2);
    t.in[0] = SHAPE(F, 1, 4, 10, 12);
    t.in[1] = SHAPE(F, 8, 2, 3, 3);
    t.in[2] = SHAPE(F, 8);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    /* H: (10 + 2 - 5) / 2 + 1 = 4; W: (12 + 4 - 3) / 3 + 1 = 5 */
    EXPECT(&t.out[0], F, 1, 8, 4, 5);

    /* W expects 3 * 2 = 6 channels, X has 4. */
    t.in[1] = SHAPE(F, 8, 3, 3, 3);
    assert_int_equal(run(&t, 3, 1), MINFER_ERR_SHAPE);
    assert_non_null(strstr(t.err, "channels"));

    /* Bias length must match M. */
    t.in[1] = SHAPE(F, 8, 2, 3, 3);
    t.in[2] = SHAPE(F, 7);
    assert_int_equal(run(&t, 3, 1), MINFER_ERR_SHAPE);

    /* X of rank 2 is rejected. */
    t.in[0] = SHAPE(F, 4, 10);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_SHAPE);
}

static void test_conv_same_upper_and_unknown(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Conv", 11);
    attr_str(&t, "auto_pad", "SAME_UPPER");
    ATTR_INTS(&t, "strides", 2, 2);
    t.in[0] = SHAPE(F, 1, 3, 7, 9);
    t.in[1] = SHAPE(F, 5, 3, 3, 3);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 1, 5, 4, 5);

    /* Unknown batch and height stay unknown, no false error. */
    t.in[0] = SHAPE(F, -1, -1, -1, 9);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, -1, 5, -1, 5);

    node_init(&t, "Conv", 11);
    attr_str(&t, "auto_pad", "BOGUS");
    t.in[0] = SHAPE(F, 1, 3, 7, 9);
    t.in[1] = SHAPE(F, 5, 3, 3, 3);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_MODEL);
}

static void test_conv_transpose(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "ConvTranspose", 11);
    ATTR_INTS(&t, "strides", 2, 2);
    ATTR_INTS(&t, "pads", 1, 1, 1, 1);
    ATTR_INTS(&t, "output_padding", 1, 1);
    t.in[0] = SHAPE(F, 1, 4, 5, 5);
    t.in[1] = SHAPE(F, 4, 3, 3, 3);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    /* 2 * 4 + 1 + 3 - 2 = 10 */
    EXPECT(&t.out[0], F, 1, 3, 10, 10);
}

static void test_maxpool_ceil_mode(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "MaxPool", 12);
    ATTR_INTS(&t, "kernel_shape", 2, 2);
    ATTR_INTS(&t, "strides", 2, 2);
    attr_int(&t, "ceil_mode", 1);
    t.in[0] = SHAPE(F, 1, 1, 5, 5);
    assert_int_equal(run(&t, 1, 2), MINFER_OK);
    EXPECT(&t.out[0], F, 1, 1, 3, 3);
    EXPECT(&t.out[1], I64, 1, 1, 3, 3);

    /* The same without ceil_mode: floor. */
    node_init(&t, "MaxPool", 12);
    ATTR_INTS(&t, "kernel_shape", 2, 2);
    ATTR_INTS(&t, "strides", 2, 2);
    t.in[0] = SHAPE(F, 1, 1, 5, 5);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 1, 1, 2, 2);

    /* ceil_mode drops a window that would start inside the end padding. */
    node_init(&t, "MaxPool", 12);
    ATTR_INTS(&t, "kernel_shape", 2, 2);
    ATTR_INTS(&t, "strides", 2, 2);
    ATTR_INTS(&t, "pads", 0, 0, 1, 1);
    attr_int(&t, "ceil_mode", 1);
    t.in[0] = SHAPE(F, 1, 1, 4, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 1, 1, 2, 2);

    /* A kernel larger than the input. */
    node_init(&t, "MaxPool", 12);
    ATTR_INTS(&t, "kernel_shape", 7, 7);
    t.in[0] = SHAPE(F, 1, 1, 5, 5);
    assert_int_equal(run(&t, 1, 1), MINFER_ERR_SHAPE);
}

static void test_global_pool(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "GlobalAveragePool", 13);
    t.in[0] = SHAPE(F, 2, 16, 7, -1);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 16, 1, 1);
}

/* ---- Matrix products --------------------------------------------------- */

static void test_gemm_transb(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Gemm", 13);
    attr_int(&t, "transB", 1);
    t.in[0] = SHAPE(F, 3, 5);
    t.in[1] = SHAPE(F, 4, 5);
    t.in[2] = SHAPE(F, 4);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3, 4);

    t.in[1] = SHAPE(F, 4, 6);
    assert_int_equal(run(&t, 3, 1), MINFER_ERR_SHAPE);

    /* C that cannot broadcast to [M, N]. */
    t.in[1] = SHAPE(F, 4, 5);
    t.in[2] = SHAPE(F, 3);
    assert_int_equal(run(&t, 3, 1), MINFER_ERR_SHAPE);
}

static void test_matmul(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "MatMul", 13);
    t.in[0] = SHAPE(F, 2, 1, 3, 4);
    t.in[1] = SHAPE(F, 5, 4, 6);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 5, 3, 6);

    t.in[0] = SHAPE(F, 4);
    t.in[1] = SHAPE(F, 4, 6);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 6);

    t.in[0] = SHAPE(F, 2, 3, 4);
    t.in[1] = SHAPE(F, 4);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 3);

    t.in[0] = SHAPE(F, 4);
    t.in[1] = SHAPE(F, 4);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    expect(&t.out[0], F, 0, NULL);

    /* Unknown inner dim: no error. */
    t.in[0] = SHAPE(F, -1, 3, -1);
    t.in[1] = SHAPE(F, 7, 2);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, -1, 3, 2);

    t.in[0] = SHAPE(F, 3, 4);
    t.in[1] = SHAPE(F, 5, 6);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_SHAPE);
}

/* ---- Broadcasting and types -------------------------------------------- */

static void test_broadcast(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Add", 14);
    t.in[0] = SHAPE(F, 2, 1, 4);
    t.in[1] = SHAPE(F, 3, 1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 3, 4);

    /* ? vs 4 -> 4 (a valid model holds 1 or 4 there); ? vs 1 -> ?. */
    t.in[0] = SHAPE(F, -1, 1, 3);
    t.in[1] = SHAPE(F, 4, -1, 3);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 4, -1, 3);

    t.in[0] = SHAPE(F, -1, -1);
    t.in[1] = SHAPE(F, 1, 5);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, -1, 5);

    /* An unknown rank makes the result's rank unknown. */
    t.in[0] = UNKNOWN_RANK(F);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    assert_int_equal(t.out[0].rank, -1);
    assert_int_equal(t.out[0].dtype, F);

    node_init(&t, "Less", 13);
    t.in[0] = SHAPE(F, 3);
    t.in[1] = SHAPE(F, 2, 1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], B, 2, 3);

    node_init(&t, "Sum", 13);
    t.in[0] = SHAPE(F, 3, 1, 1);
    t.in[1] = SHAPE(F, 4, 1);
    t.in[2] = SHAPE(F, 5);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3, 4, 5);

    node_init(&t, "Where", 16);
    t.in[0] = SHAPE(B, 2, 1);
    t.in[1] = SHAPE(I64, 3);
    t.in[2] = SHAPE(I64, 1);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 2, 3);
}

static void test_broadcast_mismatch(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Mul", 14);
    t.in[0] = SHAPE(F, 2, 3);
    t.in[1] = SHAPE(F, 4);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_SHAPE);
    assert_string_equal(t.err, "cannot broadcast [2,3] with [4]");

    /* Sum: the third input conflicts with the first two. */
    node_init(&t, "Sum", 13);
    t.in[0] = SHAPE(F, 2, 1);
    t.in[1] = SHAPE(F, 1, 3);
    t.in[2] = SHAPE(F, 4);
    assert_int_equal(run(&t, 3, 1), MINFER_ERR_SHAPE);
}

static void test_type_mismatch(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Add", 14);
    t.in[0] = SHAPE(F, 2);
    t.in[1] = SHAPE(I64, 2);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_TYPE);
    assert_non_null(strstr(t.err, "int64"));

    /* Pow takes an exponent of another type. */
    node_init(&t, "Pow", 15);
    t.in[0] = SHAPE(F, 2);
    t.in[1] = SHAPE(I64, 2);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2);

    node_init(&t, "Where", 16);
    t.in[0] = SHAPE(F, 2);
    t.in[1] = SHAPE(F, 2);
    t.in[2] = SHAPE(F, 2);
    assert_int_equal(run(&t, 3, 1), MINFER_ERR_TYPE);
}

static void test_cast(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Cast", 13);
    attr_int(&t, "to", MINFER_DTYPE_INT64);
    t.in[0] = SHAPE(F, 2, -1);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 2, -1);

    node_init(&t, "Cast", 13);
    t.in[0] = SHAPE(F, 2);
    assert_int_equal(run(&t, 1, 1), MINFER_ERR_MODEL);
}

/* ---- Shape manipulation ------------------------------------------------ */

static void test_reshape(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Reshape", 13);
    t.in[0] = SHAPE(F, 2, 3, 4);
    t.in[1] = INTS(0, -1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 12);

    t.in[1] = INTS(4, 0, -1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 4, 3, 2);

    /* -1 with an unknown input dim stays unknown. */
    t.in[0] = SHAPE(F, -1, 3, 4);
    t.in[1] = INTS(0, -1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, -1, 12);

    /* Contents unknown: rank from the shape input's length. */
    t.in[1] = SHAPE(I64, 3);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, -1, -1, -1);

    t.in[1] = SHAPE(I64, -1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    assert_int_equal(t.out[0].rank, -1);

    t.in[0] = SHAPE(F, 2, 3, 4);
    t.in[1] = INTS(5, 5);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_SHAPE);

    t.in[1] = INTS(-1, -1);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_MODEL);

    /* allowzero (opset 14): 0 is a real zero. */
    node_init(&t, "Reshape", 14);
    attr_int(&t, "allowzero", 1);
    t.in[0] = SHAPE(F, 0, 3);
    t.in[1] = INTS(3, 0);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3, 0);
    t.in[0] = SHAPE(F, 2, 3);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_SHAPE);
}

static void test_slice(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Slice", 13);
    t.in[0] = SHAPE(F, 10, 8);
    t.in[1] = INTS(-1);
    t.in[2] = INTS(INT64_MIN);
    t.in[3] = INTS(0);
    t.in[4] = INTS(-2);
    assert_int_equal(run(&t, 5, 1), MINFER_OK);
    /* 9, 7, 5, 3, 1 */
    EXPECT(&t.out[0], F, 5, 8);

    t.in[1] = INTS(6, 2);
    t.in[2] = INTS(1, INT64_MAX);
    t.in[3] = INTS(0, -1);
    t.in[4] = INTS(-3, 3);
    assert_int_equal(run(&t, 5, 1), MINFER_OK);
    /* axis 0: 6, 3; axis 1: 2, 5 */
    EXPECT(&t.out[0], F, 2, 2);

    /* A partial last step still takes an element: 1, 3, 5, 7. */
    t.in[1] = INTS(1);
    t.in[2] = INTS(8);
    t.in[3] = INTS(-1);
    t.in[4] = INTS(2);
    assert_int_equal(run(&t, 5, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 10, 4);

    /* Unknown starts: only the sliced axis loses its size. */
    t.in[1] = SHAPE(I64, 1);
    t.in[2] = INTS(3);
    t.in[3] = INTS(1);
    t.in[4] = INTS(1);
    assert_int_equal(run(&t, 5, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 10, -1);

    t.in[1] = INTS(0);
    t.in[4] = INTS(0);
    assert_int_equal(run(&t, 5, 1), MINFER_ERR_MODEL);

    /* Opset 9: attributes. */
    node_init(&t, "Slice", 9);
    ATTR_INTS(&t, "starts", 1);
    ATTR_INTS(&t, "ends", 3);
    t.in[0] = SHAPE(F, 10, 8);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 8);
}

static void test_squeeze_unsqueeze_opsets(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Unsqueeze", 11);
    ATTR_INTS(&t, "axes", 0, 3);
    t.in[0] = SHAPE(F, 3, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 1, 3, 4, 1);

    node_init(&t, "Unsqueeze", 13);
    t.in[0] = SHAPE(F, 3, 4);
    t.in[1] = INTS(-1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3, 4, 1);

    /* From 13 an attribute is not where axes live. */
    node_init(&t, "Unsqueeze", 13);
    ATTR_INTS(&t, "axes", 0);
    t.in[0] = SHAPE(F, 3, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_ERR_MODEL);

    node_init(&t, "Squeeze", 11);
    ATTR_INTS(&t, "axes", 0);
    t.in[0] = SHAPE(F, 1, 3, 1);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3, 1);

    node_init(&t, "Squeeze", 13);
    t.in[0] = SHAPE(F, 1, 3, 1);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3);

    t.in[1] = INTS(1);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_SHAPE);

    t.in[1] = INTS(-1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 1, 3);

    /* No axes and an unknown dim: the rank is not known. */
    t.in[0] = SHAPE(F, 1, -1);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    assert_int_equal(t.out[0].rank, -1);
}

static void test_softmax(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Softmax", 13);
    t.in[0] = SHAPE(F, 2, 3);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 3);

    attr_int(&t, "axis", 2);
    assert_int_equal(run(&t, 1, 1), MINFER_ERR_MODEL);

    /* Opset 11: default axis 1 is fine on a 1-D input (coerced to 2-D). */
    node_init(&t, "Softmax", 11);
    t.in[0] = SHAPE(F, 7);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 7);
}

static void test_reduce(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "ReduceMean", 13);
    ATTR_INTS(&t, "axes", 1);
    attr_int(&t, "keepdims", 0);
    t.in[0] = SHAPE(F, 2, 3, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 4);

    node_init(&t, "ReduceMean", 13);
    ATTR_INTS(&t, "axes", 1);
    t.in[0] = SHAPE(F, 2, 3, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 1, 4);

    /* Opset 18: axes is an input. */
    node_init(&t, "ReduceMean", 18);
    attr_int(&t, "keepdims", 0);
    t.in[0] = SHAPE(F, 2, 3, 4);
    t.in[1] = INTS(-1, 0);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3);

    /* ReduceSum 13: no axes reduces everything, or nothing with noop. */
    node_init(&t, "ReduceSum", 13);
    t.in[0] = SHAPE(F, 2, 3);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 1, 1);
    attr_int(&t, "noop_with_empty_axes", 1);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 3);

    node_init(&t, "ReduceMax", 13);
    ATTR_INTS(&t, "axes", 3);
    t.in[0] = SHAPE(F, 2, 3, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_ERR_MODEL);

    node_init(&t, "ArgMax", 13);
    attr_int(&t, "axis", -1);
    attr_int(&t, "keepdims", 0);
    t.in[0] = SHAPE(F, 2, 3, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 2, 3);
}

static void test_concat(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Concat", 13);
    attr_int(&t, "axis", 1);
    t.in[0] = SHAPE(F, 2, 3);
    t.in[1] = SHAPE(F, 2, 4);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 7);

    /* Unknown dims fill in from the other input. */
    t.in[0] = SHAPE(F, -1, 3);
    t.in[1] = SHAPE(F, 2, -1);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, -1);

    node_init(&t, "Concat", 13);
    attr_int(&t, "axis", 0);
    t.in[0] = SHAPE(F, 2, 3);
    t.in[1] = SHAPE(F, 2, 4);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_SHAPE);

    node_init(&t, "Concat", 13);
    attr_int(&t, "axis", -3);
    t.in[0] = SHAPE(F, 2, 3);
    t.in[1] = SHAPE(F, 2, 3);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_MODEL);
}

static void test_gather(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Gather", 13);
    attr_int(&t, "axis", 1);
    t.in[0] = SHAPE(F, 5, 6, 7);
    t.in[1] = SHAPE(I64, 2, 3);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 5, 2, 3, 7);

    node_init(&t, "Gather", 13);
    attr_int(&t, "axis", -1);
    t.in[0] = SHAPE(F, 5, 6, 7);
    t.in[1] = view(I64, 0, NULL);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 5, 6);

    node_init(&t, "Gather", 13);
    attr_int(&t, "axis", 3);
    t.in[0] = SHAPE(F, 5, 6, 7);
    t.in[1] = SHAPE(I64, 2);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_MODEL);

    node_init(&t, "Gather", 13);
    t.in[0] = SHAPE(F, 5);
    t.in[1] = SHAPE(F, 2);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_TYPE);
}

/* The training optimizers: each output as its X or state input. */
static void test_training_optimizers(void **state) {
    tnode t;
    int idx[MAX_IN] = {0, 1, 2, 3, 4, 5};
    (void)state;
    node_init(&t, "Adam", 1);
    t.n.domain = (char *)"ai.onnx.preview.training";
    t.n.inputs = idx;
    t.n.n_inputs = 6;
    t.n.n_outputs = 3;
    t.in[0] = view(F, 0, NULL);
    t.in[1] = view(I64, 0, NULL);
    t.in[2] = SHAPE(F, 2, 3);              /* X */
    t.in[3] = SHAPE(F, 2, 3);              /* G */
    t.in[4] = SHAPE(MINFER_DTYPE_DOUBLE, 4); /* V */
    t.in[5] = SHAPE(F, 7);                 /* H */
    assert_int_equal(run(&t, 6, 3), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 3);
    EXPECT(&t.out[1], MINFER_DTYPE_DOUBLE, 4);
    EXPECT(&t.out[2], F, 7);
    /* Momentum: X, G, V; outputs X, V */
    t.n.op_type = (char *)"Momentum";
    t.n.n_inputs = 5;
    t.n.n_outputs = 2;
    assert_int_equal(run(&t, 5, 2), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 3);
    EXPECT(&t.out[1], MINFER_DTYPE_DOUBLE, 4);
    /* inputs that do not make whole groups */
    assert_int_equal(run(&t, 4, 2), MINFER_ERR_MODEL);
    assert_true(strstr(t.err, "groups") != NULL);
}

static void test_shape_start_end(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Shape", 15);
    attr_int(&t, "start", 1);
    attr_int(&t, "end", -1);
    t.in[0] = SHAPE(F, 2, 3, 4, 5);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 2);

    /* Before opset 15 start/end do not exist. */
    t.n.opset = 13;
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 4);

    node_init(&t, "Shape", 15);
    attr_int(&t, "start", -10);
    t.in[0] = SHAPE(F, 2, 3, 4, 5);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 4);

    node_init(&t, "Size", 13);
    t.in[0] = SHAPE(F, 2, 3);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    expect(&t.out[0], I64, 0, NULL);
}

static void test_transpose(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Transpose", 13);
    t.in[0] = SHAPE(F, 2, 3, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 4, 3, 2);

    ATTR_INTS(&t, "perm", 1, 0, 2);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3, 2, 4);

    node_init(&t, "Transpose", 13);
    ATTR_INTS(&t, "perm", 0, 0, 1);
    t.in[0] = SHAPE(F, 2, 3, 4);
    assert_int_equal(run(&t, 1, 1), MINFER_ERR_MODEL);
}

static void test_flatten_expand_tile(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Flatten", 13);
    attr_int(&t, "axis", 2);
    t.in[0] = SHAPE(F, 2, 3, 4, 5);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 6, 20);

    node_init(&t, "Expand", 13);
    t.in[0] = SHAPE(F, 3, 1);
    t.in[1] = INTS(2, 1, 4);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 3, 4);

    node_init(&t, "Tile", 13);
    t.in[0] = SHAPE(F, 2, 3);
    t.in[1] = INTS(3, 2);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 6, 6);

    /* Hostile sizes: 2^40 * 2^40 overflows int64. */
    t.in[0] = SHAPE(F, (int64_t)1 << 40, 1);
    t.in[1] = INTS((int64_t)1 << 40, 1);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_LIMIT);
}

static void test_split_pad(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "Split", 13);
    attr_int(&t, "axis", 1);
    t.in[0] = SHAPE(F, 2, 10);
    t.in[1] = INTS(3, 7);
    assert_int_equal(run(&t, 2, 2), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 3);
    EXPECT(&t.out[1], F, 2, 7);

    t.in[1] = INTS(3, 6);
    assert_int_equal(run(&t, 2, 2), MINFER_ERR_SHAPE);

    node_init(&t, "Pad", 13);
    t.in[0] = SHAPE(F, 2, 3);
    t.in[1] = INTS(0, 1, 1, 2);
    assert_int_equal(run(&t, 2, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 3, 6);
}

/* ---- Constants and generators ----------------------------------------- */

static void test_range(void **state) {
    tnode t;
    int64_t a = 1, b = 10, c = 3;
    float fa = 0.f, fb = 1.f, fc = 0.3f;
    int64_t na = 10, nb = 1, nc = -4;
    (void)state;
    node_init(&t, "Range", 11);
    t.in[0] = scalar_view(I64, &a, sizeof a);
    t.in[1] = scalar_view(I64, &b, sizeof b);
    t.in[2] = scalar_view(I64, &c, sizeof c);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 3);

    t.in[0] = scalar_view(I64, &na, sizeof na);
    t.in[1] = scalar_view(I64, &nb, sizeof nb);
    t.in[2] = scalar_view(I64, &nc, sizeof nc);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 3);

    t.in[0] = scalar_view(F, &fa, sizeof fa);
    t.in[1] = scalar_view(F, &fb, sizeof fb);
    t.in[2] = scalar_view(F, &fc, sizeof fc);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 4);

    /* Unknown contents: 1-D of unknown length. */
    t.in[1] = view(F, 0, NULL);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    EXPECT(&t.out[0], F, -1);
}

static void test_constants(void **state) {
    tnode t;
    minfer_tensor value;
    (void)state;
    node_init(&t, "Constant", 13);
    ATTR_INTS(&t, "value_ints", 1, 2, 3);
    assert_int_equal(run(&t, 0, 1), MINFER_OK);
    EXPECT(&t.out[0], I64, 3);

    memset(&value, 0, sizeof value);
    value.view.dtype = I32;
    value.view.rank = 1;
    value.view.dims[0] = 1;
    node_init(&t, "ConstantOfShape", 13);
    add_attr(&t, "value", MINFER_ATTR_TENSOR)->t = &value;
    t.in[0] = INTS(2, 3);
    assert_int_equal(run(&t, 1, 1), MINFER_OK);
    EXPECT(&t.out[0], I32, 2, 3);

    node_init(&t, "Constant", 13);
    add_attr(&t, "value", MINFER_ATTR_TENSOR)->t = &value;
    assert_int_equal(run(&t, 0, 1), MINFER_OK);
    EXPECT(&t.out[0], I32, 1);
}

static void test_norms_and_dropout(void **state) {
    tnode t;
    (void)state;
    node_init(&t, "LayerNormalization", 17);
    attr_int(&t, "axis", -1);
    t.in[0] = SHAPE(F, 2, 5, 8);
    t.in[1] = SHAPE(F, 8);
    t.in[2] = SHAPE(F, 8);
    assert_int_equal(run(&t, 3, 3), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 5, 8);
    EXPECT(&t.out[1], F, 2, 5, 1);

    node_init(&t, "BatchNormalization", 15);
    t.in[0] = SHAPE(F, 2, 4, 5, 5);
    for (int i = 1; i <= 4; i++)
        t.in[i] = SHAPE(F, 4);
    assert_int_equal(run(&t, 5, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 2, 4, 5, 5);
    t.in[3] = SHAPE(F, 3);
    assert_int_equal(run(&t, 5, 1), MINFER_ERR_SHAPE);

    node_init(&t, "Dropout", 13);
    t.in[0] = SHAPE(F, 3);
    assert_int_equal(run(&t, 1, 2), MINFER_OK);
    EXPECT(&t.out[1], B, 3);
}

/* ---- Generic behaviour ------------------------------------------------- */

static void test_unknown_op_and_known(void **state) {
    /* Every op in the rule table. */
    static const char *const ops[] = {
        "Abs", "Acos", "Add", "And", "ArgMax", "ArgMin", "Asin", "Atan", "AveragePool",
        "BatchNormalization", "Cast", "CastLike", "Ceil", "Celu", "Clip", "Concat", "Constant",
        "ConstantOfShape", "Conv", "ConvTranspose", "Cos", "Div", "Dropout", "Elu", "Equal",
        "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "Gelu", "Gemm",
        "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "HardSigmoid",
        "HardSwish", "Hardmax", "Identity", "IsInf", "IsNaN", "LayerNormalization", "LeakyRelu",
        "Less", "LessOrEqual", "Log", "LogSoftmax", "LpPool", "MatMul", "Max", "MaxPool",
        "Mean", "Min", "Mod", "Mul", "Neg", "Not", "Or", "PRelu", "Pad", "Pow", "Range",
        "Reciprocal", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
        "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Relu",
        "Reshape", "Round", "Selu", "Shape", "Sigmoid", "Sign", "Sin", "Size", "Slice",
        "Softmax", "Softplus", "Softsign", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tan",
        "Tanh", "Tile", "Transpose", "Unsqueeze", "Where", "Xor"};
    tnode t;
    (void)state;
    /* Every op must be found: this also checks the rule table is sorted. */
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        if (!mf_infer_known("", ops[i]))
            fail_msg("no rule for %s", ops[i]);
    }
    assert_true(mf_infer_known("ai.onnx", "Relu"));
    assert_false(mf_infer_known("com.microsoft", "Relu"));
    assert_false(mf_infer_known("", "NoSuchOp"));

    node_init(&t, "NoSuchOp", 13);
    t.in[0] = SHAPE(F, 2);
    assert_int_equal(run(&t, 1, 2), MINFER_OK);
    assert_int_equal(t.out[0].dtype, 0);
    assert_int_equal(t.out[0].rank, -1);
    assert_int_equal(t.out[1].rank, -1);
}

static void test_omitted_and_bad_inputs(void **state) {
    tnode t;
    int ids[3] = {0, -1, 2};
    (void)state;
    /* Clip with min omitted (empty name) and max given. */
    node_init(&t, "Clip", 13);
    t.n.inputs = ids;
    t.n.n_inputs = 3;
    t.in[0] = SHAPE(F, 4, 5);
    t.in[1] = SHAPE(I64, 7, 7); /* ignored: omitted */
    t.in[2] = view(F, 0, NULL);
    assert_int_equal(run(&t, 3, 1), MINFER_OK);
    EXPECT(&t.out[0], F, 4, 5);

    /* A dimension below -1 is refused, not read as a size. */
    node_init(&t, "Relu", 13);
    t.in[0] = SHAPE(F, 2, -5);
    assert_int_equal(run(&t, 1, 1), MINFER_ERR_MODEL);

    /* Reshape's input numel overflows int64. */
    node_init(&t, "Reshape", 13);
    t.in[0] = SHAPE(F, (int64_t)1 << 40, (int64_t)1 << 40);
    t.in[1] = INTS(-1);
    assert_int_equal(run(&t, 2, 1), MINFER_ERR_LIMIT);
}

int main(void) {
    const struct CMUnitTest conv_tests[] = {
        cmocka_unit_test(test_conv_pads_strides_dilations_groups),
        cmocka_unit_test(test_conv_same_upper_and_unknown),
        cmocka_unit_test(test_conv_transpose),
        cmocka_unit_test(test_maxpool_ceil_mode),
        cmocka_unit_test(test_global_pool),
        cmocka_unit_test(test_gemm_transb),
        cmocka_unit_test(test_matmul),
    };
    const struct CMUnitTest elementwise_tests[] = {
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_broadcast_mismatch),
        cmocka_unit_test(test_type_mismatch),
        cmocka_unit_test(test_cast),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_reduce),
        cmocka_unit_test(test_norms_and_dropout),
    };
    const struct CMUnitTest shape_tests[] = {
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_slice),
        cmocka_unit_test(test_squeeze_unsqueeze_opsets),
        cmocka_unit_test(test_concat),
        cmocka_unit_test(test_gather),
        cmocka_unit_test(test_training_optimizers),
        cmocka_unit_test(test_shape_start_end),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_flatten_expand_tile),
        cmocka_unit_test(test_split_pad),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_constants),
        cmocka_unit_test(test_unknown_op_and_known),
        cmocka_unit_test(test_omitted_and_bad_inputs),
    };
    int failed = 0;
    failed += cmocka_run_group_tests_name("shape_infer_conv", conv_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("shape_infer_elementwise", elementwise_tests, NULL, NULL);
    failed += cmocka_run_group_tests_name("shape_infer_shapes", shape_tests, NULL, NULL);
    return failed ? 1 : 0;
}
