/*
 * libFuzzer target: the graph builder driven by the input, then a session
 * and a run. The bytes are a little program: each step's first byte picks
 * an action (input, initializer, node, attribute, output) and the following
 * bytes its arguments. Values are named v0..v15, so graphs connect often,
 * and ops and attribute names come from tables of what the CPU provider
 * runs, so most programs get past the first checks.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"

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

static const char *const ops[] = {
    "Relu", "Add", "Mul", "Sub", "Div", "MatMul", "Gemm", "Conv", "MaxPool", "AveragePool",
    "GlobalAveragePool", "Reshape", "Transpose", "Concat", "Slice", "Gather", "Squeeze",
    "Unsqueeze", "Flatten", "Softmax", "ReduceMean", "ReduceSum", "Shape", "Expand", "Tile",
    "ConstantOfShape", "Cast", "Where", "Split", "Pad", "Sigmoid", "LayerNormalization",
    "BatchNormalization", "Identity", "Clip", "Pow", "Sqrt", "Range", "Erf", "Equal"};
static const char *const attrs[] = {"axis", "axes", "perm", "kernel_shape", "strides", "pads",
                                    "dilations", "group", "keepdims", "transA", "transB",
                                    "alpha", "beta", "epsilon", "to", "starts", "ends", "value"};
static const minfer_dtype types[] = {MINFER_DTYPE_FLOAT, MINFER_DTYPE_INT64, MINFER_DTYPE_INT32,
                                     MINFER_DTYPE_BOOL, MINFER_DTYPE_UINT8, MINFER_DTYPE_DOUBLE};

static int64_t small_int(reader *r) {
    unsigned b = byte(r);
    if (b == 0xff)
        return INT64_MAX;
    if (b == 0xfe)
        return INT64_MIN;
    return (int64_t)(b % 16) - 4;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    minfer_graph_builder *b = NULL;
    minfer_session *s = NULL;
    char name[8][16];
    size_t last_node = (size_t)-1;
    if (minfer_builder_create(7 + (int64_t)(byte(&r) % 12), &b) != MINFER_OK)
        return 0;
    for (int step = 0; step < 64 && r.n; step++) {
        unsigned action = byte(&r) % 6;
        if (action == 0 || action == 1) { /* input or initializer */
            int64_t dims[4];
            size_t rank = byte(&r) % 4;
            for (size_t d = 0; d < rank; d++)
                dims[d] = (int64_t)(byte(&r) % 5);
            minfer_dtype t = types[byte(&r) % (sizeof types / sizeof types[0])];
            snprintf(name[0], sizeof name[0], "v%u", byte(&r) % 16);
            if (action == 0) {
                minfer_builder_add_input(b, name[0], t, dims, rank, NULL);
            } else {
                minfer_tensor *v = NULL;
                if (minfer_tensor_create(t, dims, rank, &v) == MINFER_OK) {
                    uint8_t *p = minfer_tensor_data(v);
                    for (size_t i = 0; i < minfer_tensor_nbytes(v); i++)
                        p[i] = (uint8_t)byte(&r);
                    if (t == MINFER_DTYPE_BOOL)
                        for (size_t i = 0; i < minfer_tensor_nbytes(v); i++)
                            p[i] &= 1;
                    minfer_builder_add_initializer(b, name[0], v);
                }
                minfer_tensor_free(v);
            }
        } else if (action == 2) { /* node */
            const char *op = ops[byte(&r) % (sizeof ops / sizeof ops[0])];
            size_t ni = byte(&r) % 4, no = 1 + byte(&r) % 2;
            const char *in[3], *out[2];
            for (size_t i = 0; i < ni && i < 3; i++) {
                snprintf(name[i], sizeof name[i], "v%u", byte(&r) % 16);
                in[i] = name[i];
            }
            for (size_t i = 0; i < no; i++) {
                snprintf(name[4 + i], sizeof name[4 + i], "v%u", byte(&r) % 16);
                out[i] = name[4 + i];
            }
            if (minfer_builder_add_node(b, op, NULL, NULL, in, ni < 3 ? ni : 3, out, no,
                                        &last_node) != MINFER_OK)
                last_node = (size_t)-1;
        } else if (action == 3 && last_node != (size_t)-1) { /* attribute */
            const char *a = attrs[byte(&r) % (sizeof attrs / sizeof attrs[0])];
            int64_t v[8];
            size_t count = byte(&r) % 9;
            for (size_t i = 0; i < count; i++)
                v[i] = small_int(&r);
            if (count == 0)
                minfer_builder_set_attr_float(b, last_node, a, (float)small_int(&r) / 4.0f);
            else if (count == 1)
                minfer_builder_set_attr_int(b, last_node, a, v[0]);
            else
                minfer_builder_set_attr_ints(b, last_node, a, v, count);
        } else { /* output */
            snprintf(name[0], sizeof name[0], "v%u", byte(&r) % 16);
            minfer_builder_add_output(b, name[0]);
        }
    }
    if (minfer_session_create_from_builder(b, fuzz_options(), &s) == MINFER_OK)
        fuzz_run(s);
    minfer_session_free(s);
    minfer_builder_free(b);
    return 0;
}
