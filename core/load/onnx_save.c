/*
 * mf_graph -> serialized ModelProto (the inverse of onnx_load.c), so an
 * optimized graph can be written out and loaded again.
 *
 * The protobuf-c messages are built over the graph's own strings and
 * tensor data (nothing is copied except byte-swapped data on a big-endian
 * host); every message and array made here is recorded in a pool and freed
 * once the model is packed. Initializers are written as raw_data (strings as
 * string_data); graph inputs and outputs carry their declared types and
 * shapes, symbolic dims by name. Subgraph attributes are written
 * recursively.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"
#include "graph/graph.h"
#include "util/internal.h"
#include "onnx.proto3.pb-c.h"
#include "load/onnx_save.h"

#define IR_VERSION 8

typedef struct pool {
    void **items;
    size_t n, cap;
    int failed;
} pool;

static void *palloc(pool *p, size_t size) {
    if (p->failed)
        return NULL;
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 256;
        void **items = realloc(p->items, cap * sizeof *items);
        if (!items) {
            p->failed = 1;
            return NULL;
        }
        p->items = items;
        p->cap = cap;
    }
    void *m = calloc(1, size ? size : 1);
    if (!m) {
        p->failed = 1;
        return NULL;
    }
    p->items[p->n++] = m;
    return m;
}

static void pool_free(pool *p) {
    for (size_t i = 0; i < p->n; i++)
        free(p->items[i]);
    free(p->items);
}

static int little_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static Onnx__TensorProto *tensor_proto(pool *p, const minfer_tensor *t, const char *name) {
    Onnx__TensorProto *tp = palloc(p, sizeof *tp);
    if (!tp)
        return NULL;
    onnx__tensor_proto__init(tp);
    const minfer_tensor_view *v = &t->view;
    tp->name = (char *)(name ? name : "");
    tp->data_type = v->dtype;
    tp->n_dims = (size_t)(v->rank > 0 ? v->rank : 0);
    tp->dims = (int64_t *)v->dims;
    int64_t numel = minfer_tensor_numel(t);
    size_t nbytes = minfer_tensor_nbytes(t);
    const char *data = (const char *)v->data + v->offset;
    if (v->dtype == MINFER_DTYPE_STRING) {
        ProtobufCBinaryData *s = palloc(p, (size_t)numel * sizeof *s);
        if (!s)
            return NULL;
        for (int64_t i = 0; i < numel; i++) {
            const char *e = ((char *const *)(const void *)data)[i];
            s[i].data = (uint8_t *)(e ? e : "");
            s[i].len = e ? strlen(e) : 0;
        }
        tp->n_string_data = (size_t)numel;
        tp->string_data = s;
        return tp;
    }
    if (!nbytes)
        return tp;
    size_t es = minfer_dtype_size((minfer_dtype)v->dtype);
    if (little_endian() || es <= 1) {
        tp->raw_data.data = (uint8_t *)data;
    } else {
        uint8_t *sw = palloc(p, nbytes);
        if (!sw)
            return NULL;
        /* Complex types swap each of their two halves. */
        size_t unit = v->dtype == MINFER_DTYPE_COMPLEX64 || v->dtype == MINFER_DTYPE_COMPLEX128
                          ? es / 2 : es;
        for (size_t i = 0; i < nbytes; i += unit)
            for (size_t b = 0; b < unit; b++)
                sw[i + b] = (uint8_t)data[i + unit - 1 - b];
        tp->raw_data.data = sw;
    }
    tp->raw_data.len = nbytes;
    return tp;
}

static Onnx__ValueInfoProto *value_info(pool *p, const mf_value *v) {
    Onnx__ValueInfoProto *vi = palloc(p, sizeof *vi);
    if (!vi)
        return NULL;
    onnx__value_info_proto__init(vi);
    vi->name = v->name;
    if (!v->dtype)
        return vi;
    Onnx__TypeProto *tp = palloc(p, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = palloc(p, sizeof *tt);
    if (!tp || !tt)
        return NULL;
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->elem_type = v->dtype;
    vi->type = tp;
    if (v->kind != MINFER_VALUE_TENSOR) {
        /* optional(sequence(tensor)) at most: wrap the element type */
        int seq = v->kind == MINFER_VALUE_SEQUENCE || v->contained == MINFER_VALUE_SEQUENCE;
        if (seq) {
            Onnx__TypeProto *outer = palloc(p, sizeof *outer);
            Onnx__TypeProto__Sequence *sq = palloc(p, sizeof *sq);
            if (!outer || !sq)
                return NULL;
            onnx__type_proto__init(outer);
            onnx__type_proto__sequence__init(sq);
            sq->elem_type = tp;
            outer->value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
            outer->sequence_type = sq;
            tp = outer;
        }
        if (v->kind == MINFER_VALUE_OPTIONAL) {
            Onnx__TypeProto *outer = palloc(p, sizeof *outer);
            Onnx__TypeProto__Optional *op = palloc(p, sizeof *op);
            if (!outer || !op)
                return NULL;
            onnx__type_proto__init(outer);
            onnx__type_proto__optional__init(op);
            op->elem_type = tp;
            outer->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
            outer->optional_type = op;
            tp = outer;
        }
        vi->type = tp;
        return vi;
    }
    if (v->rank < 0)
        return vi;
    Onnx__TensorShapeProto *sh = palloc(p, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims = palloc(p, (size_t)v->rank * sizeof *dims);
    if (!sh || !dims)
        return NULL;
    onnx__tensor_shape_proto__init(sh);
    sh->n_dim = (size_t)v->rank;
    sh->dim = dims;
    for (int d = 0; d < v->rank; d++) {
        Onnx__TensorShapeProto__Dimension *dim = palloc(p, sizeof *dim);
        if (!dim)
            return NULL;
        onnx__tensor_shape_proto__dimension__init(dim);
        if (v->dims[d] >= 0) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = v->dims[d];
        } else if (v->dim_params[d]) {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            dim->dim_param = v->dim_params[d];
        }
        dims[d] = dim;
    }
    tt->shape = sh;
    return vi;
}

static Onnx__GraphProto *graph_proto(pool *p, const mf_graph *g);

static Onnx__AttributeProto *attr_proto(pool *p, const mf_attr *a) {
    Onnx__AttributeProto *ap = palloc(p, sizeof *ap);
    if (!ap)
        return NULL;
    onnx__attribute_proto__init(ap);
    ap->name = a->name;
    ap->type = (Onnx__AttributeProto__AttributeType)a->type;
    switch (a->type) {
    case MINFER_ATTR_FLOAT: ap->f = a->f; break;
    case MINFER_ATTR_INT: ap->i = a->i; break;
    case MINFER_ATTR_STRING:
        ap->s.data = (uint8_t *)a->s;
        ap->s.len = a->s_len;
        break;
    case MINFER_ATTR_TENSOR:
        if (!(ap->t = tensor_proto(p, a->t, NULL)))
            return NULL;
        break;
    case MINFER_ATTR_GRAPH:
        if (!(ap->g = graph_proto(p, a->g)))
            return NULL;
        break;
    case MINFER_ATTR_FLOATS:
        ap->n_floats = a->count;
        ap->floats = a->floats;
        break;
    case MINFER_ATTR_INTS:
        ap->n_ints = a->count;
        ap->ints = a->ints;
        break;
    case MINFER_ATTR_STRINGS: {
        ProtobufCBinaryData *s = palloc(p, a->count * sizeof *s);
        if (!s)
            return NULL;
        for (size_t i = 0; i < a->count; i++) {
            s[i].data = (uint8_t *)a->strings[i];
            s[i].len = strlen(a->strings[i]);
        }
        ap->n_strings = a->count;
        ap->strings = s;
        break;
    }
    case MINFER_ATTR_TENSORS: {
        Onnx__TensorProto **ts = palloc(p, a->count * sizeof *ts);
        if (!ts)
            return NULL;
        for (size_t i = 0; i < a->count; i++)
            if (!(ts[i] = tensor_proto(p, a->tensors[i], NULL)))
                return NULL;
        ap->n_tensors = a->count;
        ap->tensors = ts;
        break;
    }
    case MINFER_ATTR_GRAPHS: {
        Onnx__GraphProto **gs = palloc(p, a->count * sizeof *gs);
        if (!gs)
            return NULL;
        for (size_t i = 0; i < a->count; i++)
            if (!(gs[i] = graph_proto(p, a->graphs[i])))
                return NULL;
        ap->n_graphs = a->count;
        ap->graphs = gs;
        break;
    }
    default:
        break;
    }
    return ap;
}

static char *value_name(const mf_graph *g, int vi) {
    return vi >= 0 ? g->values[vi].name : (char *)"";
}

static Onnx__GraphProto *graph_proto(pool *p, const mf_graph *g) {
    Onnx__GraphProto *gp = palloc(p, sizeof *gp);
    if (!gp)
        return NULL;
    onnx__graph_proto__init(gp);
    gp->name = g->name ? g->name : (char *)"minfer";
    /* Nodes in topological order when the graph has one. */
    gp->node = palloc(p, g->n_nodes * sizeof *gp->node);
    if (!gp->node)
        return NULL;
    for (size_t k = 0; k < g->n_nodes; k++) {
        const mf_node *n = &g->nodes[g->order ? (size_t)g->order[k] : k];
        Onnx__NodeProto *np = palloc(p, sizeof *np);
        if (!np)
            return NULL;
        onnx__node_proto__init(np);
        np->name = n->name ? n->name : (char *)"";
        np->op_type = n->op_type;
        np->domain = n->domain ? n->domain : (char *)"";
        np->input = palloc(p, n->n_inputs * sizeof(char *));
        np->output = palloc(p, n->n_outputs * sizeof(char *));
        np->attribute = palloc(p, n->n_attrs * sizeof *np->attribute);
        if (!np->input || !np->output || !np->attribute)
            return NULL;
        np->n_input = n->n_inputs - n->n_implicit; /* captures are not node inputs in ONNX */
        for (size_t i = 0; i < np->n_input; i++)
            np->input[i] = value_name(g, n->inputs[i]);
        np->n_output = n->n_outputs;
        for (size_t i = 0; i < n->n_outputs; i++)
            np->output[i] = value_name(g, n->outputs[i]);
        np->n_attribute = n->n_attrs;
        for (size_t i = 0; i < n->n_attrs; i++)
            if (!(np->attribute[i] = attr_proto(p, &n->attrs[i])))
                return NULL;
        gp->node[gp->n_node++] = np;
    }
    size_t n_init = 0;
    for (size_t v = 0; v < g->n_values; v++)
        n_init += g->values[v].initializer != NULL;
    gp->initializer = palloc(p, n_init * sizeof *gp->initializer);
    gp->input = palloc(p, g->n_inputs * sizeof *gp->input);
    gp->output = palloc(p, g->n_outputs * sizeof *gp->output);
    if (!gp->initializer || !gp->input || !gp->output)
        return NULL;
    for (size_t v = 0; v < g->n_values; v++) {
        const mf_value *val = &g->values[v];
        if (!val->initializer)
            continue;
        if (!(gp->initializer[gp->n_initializer++] = tensor_proto(p, val->initializer, val->name)))
            return NULL;
    }
    for (size_t k = 0; k < g->n_inputs; k++)
        if (!(gp->input[gp->n_input++] = value_info(p, &g->values[g->inputs[k]])))
            return NULL;
    for (size_t k = 0; k < g->n_outputs; k++)
        if (!(gp->output[gp->n_output++] = value_info(p, &g->values[g->outputs[k]])))
            return NULL;
    return gp;
}

minfer_status mf_save_onnx_memory(const mf_graph *g, void **data, size_t *size) {
    pool p = {NULL, 0, 0, 0};
    Onnx__ModelProto mp = ONNX__MODEL_PROTO__INIT;
    minfer_status st = MINFER_OK;
    *data = NULL;
    *size = 0;
    mp.ir_version = IR_VERSION;
    mp.producer_name = (char *)"minfer";
    mp.producer_version = (char *)MINFER_VERSION_STRING;
    mp.opset_import = palloc(&p, g->n_opsets * sizeof *mp.opset_import);
    for (size_t i = 0; mp.opset_import && i < g->n_opsets; i++) {
        Onnx__OperatorSetIdProto *op = palloc(&p, sizeof *op);
        if (!op)
            break;
        onnx__operator_set_id_proto__init(op);
        op->domain = g->opsets[i].domain ? g->opsets[i].domain : (char *)"";
        op->version = g->opsets[i].version;
        mp.opset_import[mp.n_opset_import++] = op;
    }
    mp.graph = graph_proto(&p, g);
    if (p.failed || !mp.graph) {
        st = mf_error(MINFER_ERR_NOMEM, "saving the model: out of memory");
        goto done;
    }
    size_t psize = onnx__model_proto__get_packed_size(&mp);
    uint8_t *buf = mf_malloc(psize ? psize : 1);
    if (!buf) {
        st = mf_error(MINFER_ERR_NOMEM, "saving the model: out of memory for %zu bytes", psize);
        goto done;
    }
    onnx__model_proto__pack(&mp, buf);
    *data = buf;
    *size = psize;
done:
    pool_free(&p);
    return st;
}

minfer_status mf_save_onnx(const mf_graph *g, const char *path) {
    void *data = NULL;
    size_t size = 0;
    minfer_status st = mf_save_onnx_memory(g, &data, &size);
    if (st != MINFER_OK)
        return st;
    st = mf_write_file(path, data, size); /* whole or not at all (fileio.c) */
    free(data);
    return st;
}
