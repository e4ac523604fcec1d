/*
 * Small ONNX model construction helpers for the robustness tests
 * (test_limits, test_alloc_fail, mutate_models, the fuzz seeds), over the
 * protobuf-c bindings the core generates.
 *
 * Everything is malloc'd, so onnx__model_proto__free_unpacked(m, NULL)
 * frees a built model just as it frees a parsed one. Allocation failures
 * abort: these are test tools, not library code.
 *
 *     Onnx__ModelProto *m = ob_model(13);
 *     ob_input(m->graph, "x", 1, 2, (int64_t[]){2, 3});
 *     ob_node(m->graph, "Relu", "x", "y");
 *     ob_output(m->graph, "y", 1);
 *     size_t len; uint8_t *bytes = ob_pack(m, &len);
 */
#ifndef MINFER_TESTS_ONNX_BUILD_H
#define MINFER_TESTS_ONNX_BUILD_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.proto3.pb-c.h"

static inline void *ob_alloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "onnx_build: out of memory\n");
        abort();
    }
    return p;
}

static inline char *ob_str(const char *s) {
    char *d = ob_alloc(strlen(s) + 1);
    memcpy(d, s, strlen(s) + 1);
    return d;
}

/* Appends item to the repeated field (*arr, *n). */
static inline void ob_push(void *arr_ptr, size_t *n, const void *item, size_t size) {
    void **arr = arr_ptr;
    void *grown = realloc(*arr, (*n + 1) * size);
    if (!grown) {
        fprintf(stderr, "onnx_build: out of memory\n");
        abort();
    }
    memcpy((char *)grown + *n * size, item, size);
    *arr = grown;
    (*n)++;
}

#define OB_PUSH(arr, n, item)                                                                     \
    do {                                                                                         \
        __typeof__(*(arr)) ob_item_ = (item);                                                    \
        ob_push(&(arr), &(n), &ob_item_, sizeof ob_item_);                                       \
    } while (0)

/* A model with an empty graph importing the default domain at opset. */
static inline Onnx__ModelProto *ob_model(int64_t opset) {
    Onnx__ModelProto *m = ob_alloc(sizeof *m);
    onnx__model_proto__init(m);
    m->ir_version = 8;
    m->graph = ob_alloc(sizeof *m->graph);
    onnx__graph_proto__init(m->graph);
    m->graph->name = ob_str("g");
    Onnx__OperatorSetIdProto *op = ob_alloc(sizeof *op);
    onnx__operator_set_id_proto__init(op);
    op->version = opset;
    OB_PUSH(m->opset_import, m->n_opset_import, op);
    return m;
}

/* A tensor value info; rank < 0: no shape; dims[i] < 0: symbolic "N". */
static inline Onnx__ValueInfoProto *ob_value_info(const char *name, int32_t elem, int rank,
                                                  const int64_t *dims) {
    Onnx__ValueInfoProto *vi = ob_alloc(sizeof *vi);
    onnx__value_info_proto__init(vi);
    vi->name = ob_str(name);
    vi->type = ob_alloc(sizeof *vi->type);
    onnx__type_proto__init(vi->type);
    vi->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    vi->type->tensor_type = ob_alloc(sizeof *vi->type->tensor_type);
    onnx__type_proto__tensor__init(vi->type->tensor_type);
    vi->type->tensor_type->elem_type = elem;
    if (rank >= 0) {
        Onnx__TensorShapeProto *sh = ob_alloc(sizeof *sh);
        onnx__tensor_shape_proto__init(sh);
        for (int d = 0; d < rank; d++) {
            Onnx__TensorShapeProto__Dimension *dim = ob_alloc(sizeof *dim);
            onnx__tensor_shape_proto__dimension__init(dim);
            if (dims[d] >= 0) {
                dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
                dim->dim_value = dims[d];
            } else {
                dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
                dim->dim_param = ob_str("N");
            }
            OB_PUSH(sh->dim, sh->n_dim, dim);
        }
        vi->type->tensor_type->shape = sh;
    }
    return vi;
}

static inline void ob_input(Onnx__GraphProto *g, const char *name, int32_t elem, int rank,
                            const int64_t *dims) {
    OB_PUSH(g->input, g->n_input, ob_value_info(name, elem, rank, dims));
}

/* A graph output declaring only its element type. */
static inline void ob_output(Onnx__GraphProto *g, const char *name, int32_t elem) {
    OB_PUSH(g->output, g->n_output, ob_value_info(name, elem, -1, NULL));
}

/* A tensor with raw data (copied; NULL data: zeros of the right size). */
static inline Onnx__TensorProto *ob_tensor(const char *name, int32_t dtype, int rank,
                                           const int64_t *dims, const void *raw, size_t raw_len) {
    Onnx__TensorProto *t = ob_alloc(sizeof *t);
    onnx__tensor_proto__init(t);
    t->name = ob_str(name);
    t->data_type = dtype;
    for (int d = 0; d < rank; d++)
        OB_PUSH(t->dims, t->n_dims, dims[d]);
    if (raw_len) {
        t->raw_data.data = ob_alloc(raw_len);
        if (raw)
            memcpy(t->raw_data.data, raw, raw_len);
        t->raw_data.len = raw_len;
    }
    return t;
}

static inline Onnx__TensorProto *ob_init(Onnx__GraphProto *g, const char *name, int32_t dtype,
                                         int rank, const int64_t *dims, const void *raw,
                                         size_t raw_len) {
    Onnx__TensorProto *t = ob_tensor(name, dtype, rank, dims, raw, raw_len);
    OB_PUSH(g->initializer, g->n_initializer, t);
    return t;
}

/* Marks t as stored externally: location, and offset/length when >= 0. */
static inline void ob_external(Onnx__TensorProto *t, const char *location, long long offset,
                               long long length) {
    char buf[32];
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    free(t->raw_data.data);
    t->raw_data.data = NULL;
    t->raw_data.len = 0;
    const char *keys[3] = {"location", "offset", "length"};
    for (int k = 0; k < 3; k++) {
        long long v = k == 1 ? offset : length;
        if (k > 0 && v < 0)
            continue;
        Onnx__StringStringEntryProto *e = ob_alloc(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = ob_str(keys[k]);
        if (k == 0)
            e->value = ob_str(location);
        else {
            snprintf(buf, sizeof buf, "%lld", v);
            e->value = ob_str(buf);
        }
        OB_PUSH(t->external_data, t->n_external_data, e);
    }
}

/* A node: inputs and outputs as space-separated names ("" entries: "-"). */
static inline Onnx__NodeProto *ob_node(Onnx__GraphProto *g, const char *op, const char *inputs,
                                       const char *outputs) {
    Onnx__NodeProto *n = ob_alloc(sizeof *n);
    onnx__node_proto__init(n);
    n->op_type = ob_str(op);
    for (int pass = 0; pass < 2; pass++) {
        const char *s = pass ? outputs : inputs;
        char tok[256];
        while (s && *s) {
            size_t k = strcspn(s, " ");
            if (k && k < sizeof tok) {
                memcpy(tok, s, k);
                tok[k] = '\0';
                char *name = ob_str(strcmp(tok, "-") == 0 ? "" : tok);
                if (pass)
                    OB_PUSH(n->output, n->n_output, name);
                else
                    OB_PUSH(n->input, n->n_input, name);
            }
            s += k;
            while (*s == ' ')
                s++;
        }
    }
    OB_PUSH(g->node, g->n_node, n);
    return n;
}

static inline Onnx__AttributeProto *ob_attr(Onnx__NodeProto *n, const char *name, int type) {
    Onnx__AttributeProto *a = ob_alloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = ob_str(name);
    a->type = (Onnx__AttributeProto__AttributeType)type;
    OB_PUSH(n->attribute, n->n_attribute, a);
    return a;
}

static inline void ob_attr_int(Onnx__NodeProto *n, const char *name, int64_t v) {
    ob_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT)->i = v;
}

static inline void ob_attr_ints(Onnx__NodeProto *n, const char *name, size_t count,
                                const int64_t *v) {
    Onnx__AttributeProto *a = ob_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    for (size_t i = 0; i < count; i++)
        OB_PUSH(a->ints, a->n_ints, v[i]);
}

static inline void ob_attr_tensor(Onnx__NodeProto *n, const char *name, Onnx__TensorProto *t) {
    ob_attr(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR)->t = t;
}

/* Serializes m into a malloc'd buffer. */
static inline uint8_t *ob_pack(const Onnx__ModelProto *m, size_t *len) {
    *len = onnx__model_proto__get_packed_size(m);
    uint8_t *buf = ob_alloc(*len);
    onnx__model_proto__pack(m, buf);
    return buf;
}

/* Serializes and frees m. */
static inline uint8_t *ob_finish(Onnx__ModelProto *m, size_t *len) {
    uint8_t *buf = ob_pack(m, len);
    onnx__model_proto__free_unpacked(m, NULL);
    return buf;
}

static inline int ob_write(const char *path, const void *data, size_t len) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

#endif
