/*
 * Writes the broken inputs the bad-input tests feed to the `minfer` CLI, and
 * compares tensors for the end-to-end run test. Everything it writes is
 * deterministic: the same arguments give the same bytes.
 *
 *   make_bad_models dangle MODEL.onnx OUT.onnx
 *       A copy of MODEL whose middle node reads a value nothing produces.
 *       Prints "VALUE NODE" (the dangling value's name, the node's name).
 *   make_bad_models wrong-shape MODEL.onnx OUT.pb
 *       A float TensorProto for MODEL's first graph input with one fixed
 *       dimension off by one (or one extra dimension when none is fixed).
 *       Prints "NAME DIM": the input's name and the changed dimension's
 *       new size.
 *   make_bad_models random OUT BYTES SEED
 *       BYTES pseudo-random bytes from a fixed generator.
 *   make_bad_models compare GOT.pb WANT.pb RTOL ATOL
 *       Exit 0 when the float tensors agree within |got-want| <=
 *       ATOL + RTOL*|want| everywhere, 1 with a reason otherwise.
 *
 * The ONNX model is read and rewritten with the protobuf-c bindings the core
 * generates, so the broken model differs from the valid one in exactly the
 * field under test; tensors go through the public minfer API.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/minfer.h"
#include "onnx.proto3.pb-c.h"

static int read_file(const char *path, uint8_t **data, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "make_bad_models: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf)
            break;
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf || err) {
        free(buf);
        fprintf(stderr, "make_bad_models: cannot read %s\n", path);
        return -1;
    }
    *data = buf;
    *size = n;
    return 0;
}

static int write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "make_bad_models: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

static Onnx__ModelProto *load_model(const char *path) {
    uint8_t *data = NULL;
    size_t size = 0;
    if (read_file(path, &data, &size) != 0)
        return NULL;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, data);
    free(data);
    if (!m || !m->graph)
        fprintf(stderr, "make_bad_models: %s is not an ONNX model\n", path);
    return m;
}

static int cmd_dangle(const char *model_path, const char *out_path) {
    static char dangling[] = "minfer_test_dangling_value";
    Onnx__ModelProto *m = load_model(model_path);
    if (!m || !m->graph || m->graph->n_node == 0) {
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        return 1;
    }
    /* The middle node, so the dangling name is neither a graph input's
     * direct consumer nor the last node: the check must walk the graph. */
    Onnx__GraphProto *g = m->graph;
    size_t k = g->n_node / 2;
    while (k < g->n_node && g->node[k]->n_input == 0)
        k++;
    if (k == g->n_node) {
        fprintf(stderr, "make_bad_models: no node with inputs in %s\n", model_path);
        onnx__model_proto__free_unpacked(m, NULL);
        return 1;
    }
    /* Swap the name in for packing only: free_unpacked must see the
     * original pointer again. */
    char *saved = g->node[k]->input[0];
    g->node[k]->input[0] = dangling;
    size_t size = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = malloc(size ? size : 1);
    int rc = 1;
    if (buf) {
        onnx__model_proto__pack(m, buf);
        if (write_file(out_path, buf, size) == 0) {
            printf("%s %s\n", dangling, g->node[k]->name);
            rc = 0;
        }
    }
    g->node[k]->input[0] = saved;
    free(buf);
    onnx__model_proto__free_unpacked(m, NULL);
    return rc;
}

static int cmd_wrong_shape(const char *model_path, const char *out_path) {
    Onnx__ModelProto *m = load_model(model_path);
    if (!m || !m->graph) {
        if (m)
            onnx__model_proto__free_unpacked(m, NULL);
        return 1;
    }
    Onnx__GraphProto *g = m->graph;
    const Onnx__ValueInfoProto *in = NULL;
    for (size_t i = 0; i < g->n_input && !in; i++) {
        int is_init = 0;
        for (size_t j = 0; j < g->n_initializer; j++)
            if (strcmp(g->initializer[j]->name, g->input[i]->name) == 0)
                is_init = 1;
        if (!is_init)
            in = g->input[i];
    }
    if (!in || !in->type || in->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !in->type->tensor_type->shape) {
        fprintf(stderr, "make_bad_models: %s has no input tensor with a shape\n", model_path);
        onnx__model_proto__free_unpacked(m, NULL);
        return 1;
    }
    const Onnx__TensorShapeProto *shape = in->type->tensor_type->shape;
    int64_t dims[MINFER_MAX_RANK];
    size_t rank = shape->n_dim;
    int changed = 0;
    int64_t new_dim = 2;
    if (rank + 1 > MINFER_MAX_RANK) {
        fprintf(stderr, "make_bad_models: input rank %zu too large\n", rank);
        onnx__model_proto__free_unpacked(m, NULL);
        return 1;
    }
    /* Symbolic dims get 1; the last fixed one is made one larger. */
    for (size_t i = 0; i < rank; i++) {
        const Onnx__TensorShapeProto__Dimension *d = shape->dim[i];
        dims[i] = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE
                      ? d->dim_value
                      : 1;
    }
    for (size_t i = rank; i-- > 0;) {
        if (shape->dim[i]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            dims[i] += 1;
            new_dim = dims[i];
            changed = 1;
            break;
        }
    }
    if (!changed)
        dims[rank++] = 2;
    minfer_tensor *t = NULL;
    int rc = 1;
    if (minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, rank, &t) != MINFER_OK ||
        minfer_tensor_save_pb(t, in->name, out_path) != MINFER_OK)
        fprintf(stderr, "make_bad_models: %s\n", minfer_last_error());
    else {
        printf("%s %lld\n", in->name, (long long)new_dim);
        rc = 0;
    }
    minfer_tensor_free(t);
    onnx__model_proto__free_unpacked(m, NULL);
    return rc;
}

static int cmd_random(const char *out_path, const char *bytes_str, const char *seed_str) {
    size_t n = strtoull(bytes_str, NULL, 10);
    uint64_t x = strtoull(seed_str, NULL, 10) | 1;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf)
        return 1;
    /* xorshift64*: a fixed sequence for a fixed seed on every platform. */
    for (size_t i = 0; i < n; i++) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        buf[i] = (uint8_t)((x * 0x2545F4914F6CDD1Dull) >> 56);
    }
    int rc = write_file(out_path, buf, n) == 0 ? 0 : 1;
    free(buf);
    return rc;
}

static int cmd_compare(const char *got_path, const char *want_path, const char *rtol_str,
                       const char *atol_str) {
    double rtol = strtod(rtol_str, NULL), atol = strtod(atol_str, NULL);
    minfer_tensor *got = NULL, *want = NULL;
    int rc = 1;
    if (minfer_tensor_load_pb(got_path, &got, NULL) != MINFER_OK ||
        minfer_tensor_load_pb(want_path, &want, NULL) != MINFER_OK) {
        fprintf(stderr, "compare: %s\n", minfer_last_error());
        goto done;
    }
    if (minfer_tensor_dtype(got) != MINFER_DTYPE_FLOAT ||
        minfer_tensor_dtype(want) != MINFER_DTYPE_FLOAT) {
        fprintf(stderr, "compare: expected float tensors, got %s and %s\n",
                minfer_dtype_name(minfer_tensor_dtype(got)),
                minfer_dtype_name(minfer_tensor_dtype(want)));
        goto done;
    }
    size_t rank = minfer_tensor_rank(got);
    if (rank != minfer_tensor_rank(want) ||
        memcmp(minfer_tensor_dims(got), minfer_tensor_dims(want), rank * sizeof(int64_t)) != 0) {
        fprintf(stderr, "compare: %s and %s differ in shape\n", got_path, want_path);
        goto done;
    }
    const float *g = minfer_tensor_data(got), *w = minfer_tensor_data(want);
    int64_t n = minfer_tensor_numel(got), bad = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
        if (!(fabs((double)g[i] - w[i]) <= atol + rtol * fabs((double)w[i]))) {
            if (first < 0)
                first = i;
            bad++;
        }
    }
    if (bad) {
        fprintf(stderr, "compare: %lld of %lld elements differ; first at %lld: got %g, want %g\n",
                (long long)bad, (long long)n, (long long)first, g[first], w[first]);
        goto done;
    }
    printf("compare: %lld elements match\n", (long long)n);
    rc = 0;
done:
    minfer_tensor_free(got);
    minfer_tensor_free(want);
    return rc;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "dangle") == 0)
        return cmd_dangle(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "wrong-shape") == 0)
        return cmd_wrong_shape(argv[2], argv[3]);
    if (argc == 5 && strcmp(argv[1], "random") == 0)
        return cmd_random(argv[2], argv[3], argv[4]);
    if (argc == 6 && strcmp(argv[1], "compare") == 0)
        return cmd_compare(argv[2], argv[3], argv[4], argv[5]);
    fprintf(stderr, "usage: make_bad_models dangle MODEL OUT | wrong-shape MODEL OUT.pb |"
                    " random OUT BYTES SEED | compare GOT.pb WANT.pb RTOL ATOL\n");
    return 2;
}
