/*
 * ONNX ModelProto -> mf_graph.
 *
 * The protobuf-c parser does the wire-format work and refuses truncated or
 * malformed messages; everything it accepts is still untrusted, so each
 * field is checked here before it reaches the IR: element types, dims,
 * attribute types, names. Errors name the model and the item.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "graph/graph.h"
#include "util/internal.h"
#include "onnx.proto3.pb-c.h"
#include "load/pb_strip.h"
#include "util/options.h"

typedef struct load_ctx {
    const char *errctx;
    const char *model_dir;
    int depth; /* subgraph nesting, bounded */
    minfer_limits limits;
    uint64_t nodes; /* nodes so far, subgraphs included */
    /* Initializer payloads left in the original bytes (pb_strip.c): */
    const uint8_t *raw_base;
    const mf_raw_ref *refs; /* per main-graph initializer, or NULL */
    size_t n_refs;
    int drop_pages; /* raw_base is a private file mapping: drop what was read */
    int keep_mapping; /* the graph keeps that mapping (mf_load_onnx_mapped) */
} load_ctx;

/* Message nesting protobuf-c may recurse through: every subgraph level
 * (NodeProto, AttributeProto, GraphProto) and room for the types and
 * tensors inside the deepest graph. */
#define MAX_MESSAGE_DEPTH (3 * MF_MAX_SUBGRAPH_DEPTH + 32)

static minfer_status load_graph(load_ctx *lc, const Onnx__GraphProto *gp, const mf_graph *parent,
                                mf_graph **out);

static int valid_dtype(int32_t t) { return t >= 1 && t <= 16; }

/* Gives back the whole pages of [p, p + len) of a private read-only file
 * mapping: they were copied into a tensor, and the file still holds them. */
static void drop_pages(const uint8_t *p, size_t len) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t b = ((uintptr_t)p + len) & ~((uintptr_t)page - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Refuses a tensor proto larger than max_tensor_bytes before anything is
 * allocated for it. Shapes the size check cannot read (bad rank, negative
 * dims, unknown types) are left to mf_tensor_from_proto's messages. */
static minfer_status check_proto_bytes(const load_ctx *lc, const Onnx__TensorProto *tp,
                                       const char *where) {
    int64_t numel;
    size_t nbytes;
    if (tp->n_dims > MINFER_MAX_RANK || !valid_dtype(tp->data_type))
        return MINFER_OK;
    for (size_t i = 0; i < tp->n_dims; i++)
        if (tp->dims[i] < 0)
            return MINFER_OK;
    minfer_status st = mf_numel(tp->dims, (int32_t)tp->n_dims, &numel);
    if (st == MINFER_OK)
        st = mf_nbytes(tp->data_type, numel, &nbytes);
    if (st != MINFER_OK)
        return mf_error_prefix(st, "%s: %s", lc->errctx, where);
    if ((uint64_t)nbytes > lc->limits.max_tensor_bytes)
        return mf_error(MINFER_ERR_LIMIT,
                        "%s: %s holds %zu bytes, above the tensor limit of %llu bytes",
                        lc->errctx, where, nbytes,
                        (unsigned long long)lc->limits.max_tensor_bytes);
    return MINFER_OK;
}

/* Refuses a declared shape whose fixed dimensions alone overflow or exceed
 * max_tensor_bytes (symbolic dimensions count as 1). */
static minfer_status check_declared_bytes(const load_ctx *lc, const mf_value *v, const char *what,
                                          const char *name) {
    uint64_t bytes = minfer_dtype_size((minfer_dtype)v->dtype);
    if (!bytes)
        bytes = 1;
    for (int32_t d = 0; d < v->rank; d++) {
        if (v->dims[d] < 0)
            continue;
        if (v->dims[d] == 0)
            return MINFER_OK;
        if (bytes > lc->limits.max_tensor_bytes / (uint64_t)v->dims[d])
            return mf_error(MINFER_ERR_LIMIT,
                            "%s: graph %s '%s' declares a shape of more than %llu bytes (the "
                            "tensor limit)",
                            lc->errctx, what, name,
                            (unsigned long long)lc->limits.max_tensor_bytes);
        bytes *= (uint64_t)v->dims[d];
    }
    return MINFER_OK;
}

/* Declared type and shape of a graph input or output. */
static minfer_status load_value_info(load_ctx *lc, const Onnx__ValueInfoProto *vi, mf_value *v,
                                     const char *what) {
    const Onnx__TypeProto *tp = vi->type;
    if (!tp)
        return MINFER_OK; /* untyped: inference decides */
    /* optional(sequence(tensor)) at most: peel the containers */
    if (tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE) {
        v->kind = MINFER_VALUE_OPTIONAL;
        v->contained = MINFER_VALUE_TENSOR;
        tp = tp->optional_type ? tp->optional_type->elem_type : NULL;
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE)
            v->contained = MINFER_VALUE_SEQUENCE;
    }
    if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
        if (v->kind != MINFER_VALUE_OPTIONAL)
            v->kind = MINFER_VALUE_SEQUENCE;
        tp = tp->sequence_type ? tp->sequence_type->elem_type : NULL;
    }
    /* A type with no value set (exporters and ONNX's inliner write
     * `type {}` for the outputs of inlined If branches) says nothing:
     * shape inference gives the value its type, as for an untyped one. */
    if (!tp || tp->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET)
        return MINFER_OK;
    if (tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return mf_error(MINFER_ERR_UNSUPPORTED,
                        "%s: graph %s '%s' is %s (maps, sparse tensors and nested sequences are "
                        "not supported)",
                        lc->errctx, what, vi->name,
                        v->kind == MINFER_VALUE_TENSOR ? "not a tensor" : "a container of non-tensors");
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!tt)
        return MINFER_OK;
    if (!valid_dtype(tt->elem_type))
        return mf_error(MINFER_ERR_MODEL, "%s: graph %s '%s' has unknown element type %d",
                        lc->errctx, what, vi->name, (int)tt->elem_type);
    v->dtype = tt->elem_type;
    if (!tt->shape || v->kind != MINFER_VALUE_TENSOR)
        return MINFER_OK; /* rank unknown, or a container's elements: shapes vary */
    if (tt->shape->n_dim > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_LIMIT, "%s: graph %s '%s' has rank %zu, above the limit of %d",
                        lc->errctx, what, vi->name, tt->shape->n_dim, MINFER_MAX_RANK);
    v->rank = (int32_t)tt->shape->n_dim;
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        v->dims[d] = -1;
        if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dim->dim_value < 0)
                return mf_error(MINFER_ERR_MODEL, "%s: graph %s '%s' dimension %zu is %lld",
                                lc->errctx, what, vi->name, d, (long long)dim->dim_value);
            v->dims[d] = dim->dim_value;
        } else if (dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   dim->dim_param && dim->dim_param[0]) {
            v->dim_params[d] = mf_strdup(dim->dim_param);
            if (!v->dim_params[d])
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        }
    }
    return check_declared_bytes(lc, v, what, vi->name);
}

static minfer_status copy_attr(load_ctx *lc, const mf_graph *g, const Onnx__AttributeProto *ap,
                               mf_attr *a, const char *where) {
    a->name = mf_strdup(ap->name);
    if (!a->name)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
    if (ap->ref_attr_name && ap->ref_attr_name[0])
        return mf_error(MINFER_ERR_UNSUPPORTED,
                        "%s: %s attribute '%s' refers to a function attribute ('%s'), which is "
                        "not supported",
                        lc->errctx, where, ap->name, ap->ref_attr_name);
    a->type = (int)ap->type;
    switch (ap->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        a->f = ap->f;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        a->i = ap->i;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        a->s = mf_malloc(ap->s.len + 1);
        if (!a->s)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        if (ap->s.len)
            memcpy(a->s, ap->s.data, ap->s.len);
        a->s[ap->s.len] = '\0';
        a->s_len = ap->s.len;
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        a->count = ap->n_floats;
        a->floats = mf_malloc((ap->n_floats + 1) * sizeof(float));
        if (!a->floats)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        if (ap->n_floats)
            memcpy(a->floats, ap->floats, ap->n_floats * sizeof(float));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        a->count = ap->n_ints;
        a->ints = mf_malloc((ap->n_ints + 1) * sizeof(int64_t));
        if (!a->ints)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        if (ap->n_ints)
            memcpy(a->ints, ap->ints, ap->n_ints * sizeof(int64_t));
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        a->strings = mf_calloc(ap->n_strings + 1, sizeof(char *));
        if (!a->strings)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        for (size_t i = 0; i < ap->n_strings; i++) {
            a->strings[i] = mf_malloc(ap->strings[i].len + 1);
            if (!a->strings[i])
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
            if (ap->strings[i].len)
                memcpy(a->strings[i], ap->strings[i].data, ap->strings[i].len);
            a->strings[i][ap->strings[i].len] = '\0';
            a->count = i + 1;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!ap->t)
            return mf_error(MINFER_ERR_MODEL, "%s: %s attribute '%s' has no tensor", lc->errctx,
                            where, ap->name);
        char w[512];
        snprintf(w, sizeof w, "%s attribute '%s'", where, ap->name);
        minfer_status st = check_proto_bytes(lc, ap->t, w);
        if (st != MINFER_OK)
            return st;
        st = mf_tensor_from_proto(ap->t, lc->model_dir, w, &a->t);
        if (st != MINFER_OK)
            return mf_error_prefix(st, "%s", lc->errctx);
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS:
        a->tensors = mf_calloc(ap->n_tensors + 1, sizeof(minfer_tensor *));
        if (!a->tensors)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        for (size_t i = 0; i < ap->n_tensors; i++) {
            char w[512];
            snprintf(w, sizeof w, "%s attribute '%s'[%zu]", where, ap->name, i);
            minfer_status st = check_proto_bytes(lc, ap->tensors[i], w);
            if (st != MINFER_OK)
                return st;
            st = mf_tensor_from_proto(ap->tensors[i], lc->model_dir, w, &a->tensors[i]);
            a->count = i + 1;
            if (st != MINFER_OK)
                return mf_error_prefix(st, "%s", lc->errctx);
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: {
        if (!ap->g)
            return mf_error(MINFER_ERR_MODEL, "%s: %s attribute '%s' has no graph", lc->errctx,
                            where, ap->name);
        minfer_status st = load_graph(lc, ap->g, g, &a->g);
        if (st != MINFER_OK)
            return st;
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS:
        a->graphs = mf_calloc(ap->n_graphs + 1, sizeof(mf_graph *));
        if (!a->graphs)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        for (size_t i = 0; i < ap->n_graphs; i++) {
            minfer_status st = load_graph(lc, ap->graphs[i], g, &a->graphs[i]);
            a->count = i + 1;
            if (st != MINFER_OK)
                return st;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: {
        /* Optional's 'type': kept as i = element type | kind << 8
         * (MF_ATTR_TYPE_PROTO, graph.h) */
        const Onnx__TypeProto *tp = ap->tp;
        int64_t kind = MINFER_VALUE_TENSOR;
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE) {
            kind = MINFER_VALUE_SEQUENCE;
            tp = tp->sequence_type ? tp->sequence_type->elem_type : NULL;
        }
        if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type ||
            !valid_dtype(tp->tensor_type->elem_type))
            return mf_error(MINFER_ERR_UNSUPPORTED,
                            "%s: %s attribute '%s' is a type other than a tensor or a sequence of "
                            "tensors",
                            lc->errctx, where, ap->name);
        a->i = tp->tensor_type->elem_type | (kind << 8);
        break;
    }
    default:
        return mf_error(MINFER_ERR_UNSUPPORTED,
                        "%s: %s attribute '%s' has type %d, which minfer does not support",
                        lc->errctx, where, ap->name, (int)ap->type);
    }
    return MINFER_OK;
}

static minfer_status load_node(load_ctx *lc, mf_graph *g, const Onnx__NodeProto *np, size_t idx) {
    char where[512];
    int ni = mf_graph_add_node(g);
    if (ni < 0)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory adding node %zu", lc->errctx, idx);
    mf_node *n = &g->nodes[ni];
    n->name = mf_strdup(np->name ? np->name : "");
    n->op_type = mf_strdup(np->op_type ? np->op_type : "");
    n->domain = mf_strdup(np->domain && strcmp(np->domain, "ai.onnx") != 0 ? np->domain : "");
    n->inputs = mf_malloc((np->n_input + 1) * sizeof(int));
    n->outputs = mf_malloc((np->n_output + 1) * sizeof(int));
    n->attrs = mf_calloc(np->n_attribute + 1, sizeof(mf_attr));
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory loading node %zu", lc->errctx, idx);
    if (n->name[0])
        snprintf(where, sizeof where, "node '%s' (%s)", n->name, n->op_type);
    else
        snprintf(where, sizeof where, "node #%zu (%s)", idx, n->op_type);
    if (!n->op_type[0])
        return mf_error(MINFER_ERR_MODEL, "%s: %s has an empty op_type", lc->errctx, where);
    for (size_t i = 0; i < np->n_input; i++) {
        int vi = -1;
        if (np->input[i] && np->input[i][0]) {
            vi = mf_graph_intern(g, np->input[i]);
            if (vi < 0)
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
            n = &g->nodes[ni];
        }
        n->inputs[n->n_inputs++] = vi;
    }
    for (size_t i = 0; i < np->n_output; i++) {
        int vi = -1;
        if (np->output[i] && np->output[i][0]) {
            vi = mf_graph_intern(g, np->output[i]);
            if (vi < 0)
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
            for (size_t j = 0; j < n->n_outputs; j++)
                if (n->outputs[j] == vi)
                    return mf_error(MINFER_ERR_MODEL, "%s: %s names output '%s' twice",
                                    lc->errctx, where, np->output[i]);
        }
        n->outputs[n->n_outputs++] = vi;
    }
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];
        if (!ap->name || !ap->name[0])
            return mf_error(MINFER_ERR_MODEL, "%s: %s has an attribute with no name", lc->errctx,
                            where);
        if (mf_node_attr(n, ap->name))
            return mf_error(MINFER_ERR_MODEL, "%s: %s has attribute '%s' twice", lc->errctx,
                            where, ap->name);
        minfer_status st = copy_attr(lc, g, ap, &n->attrs[i], where);
        n->n_attrs = i + 1; /* so a failed attribute is freed with the graph */
        if (st != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

static minfer_status load_graph(load_ctx *lc, const Onnx__GraphProto *gp, const mf_graph *parent,
                                mf_graph **out) {
    minfer_status st = MINFER_OK;
    mf_graph *g = NULL;
    *out = NULL;
    if (++lc->depth > MF_MAX_SUBGRAPH_DEPTH) { /* mf_pb_check_nesting refused these */
        st = mf_error(MINFER_ERR_LIMIT, "%s: subgraphs nest deeper than %d", lc->errctx,
                      MF_MAX_SUBGRAPH_DEPTH);
        goto fail;
    }
    g = mf_graph_new();
    if (!g) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        goto fail;
    }
    g->parent = parent;
    g->name = mf_strdup(gp->name ? gp->name : "");
    g->inputs = mf_malloc((gp->n_input + 1) * sizeof(int));
    g->outputs = mf_malloc((gp->n_output + 1) * sizeof(int));
    if (!g->name || !g->inputs || !g->outputs) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
        goto fail;
    }
    if (gp->n_sparse_initializer) {
        st = mf_error(MINFER_ERR_UNSUPPORTED, "%s: sparse initializers are not supported",
                      lc->errctx);
        goto fail;
    }

    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !tp->name[0]) {
            st = mf_error(MINFER_ERR_MODEL, "%s: initializer %zu has no name", lc->errctx, i);
            goto fail;
        }
        int vi = mf_graph_intern(g, tp->name);
        if (vi < 0) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
            goto fail;
        }
        mf_value *v = &g->values[vi];
        if (v->initializer) {
            st = mf_error(MINFER_ERR_MODEL, "%s: initializer '%s' appears twice", lc->errctx,
                          tp->name);
            goto fail;
        }
        char w[512];
        snprintf(w, sizeof w, "initializer '%s'", tp->name);
        if ((st = check_proto_bytes(lc, tp, w)) != MINFER_OK)
            goto fail;
        const mf_raw_ref *ref = !parent && lc->refs && i < lc->n_refs &&
                                        lc->refs[i].length != SIZE_MAX
                                    ? &lc->refs[i]
                                    : NULL;
        if (ref) {
            /* The payload stayed in the original bytes: point the proto at
             * it for the conversion (which checks and copies it), then give
             * the pages back. The proto never owns it. */
            Onnx__TensorProto *mtp = (Onnx__TensorProto *)tp;
            mtp->raw_data.data = (uint8_t *)(uintptr_t)(lc->raw_base + ref->offset);
            mtp->raw_data.len = ref->length;
            st = lc->drop_pages ? mf_tensor_from_proto_mapped(tp, lc->model_dir, w, &v->initializer)
                                : mf_tensor_from_proto(tp, lc->model_dir, w, &v->initializer);
            mtp->raw_data.data = NULL;
            mtp->raw_data.len = 0;
            if (lc->drop_pages)
                drop_pages(lc->raw_base + ref->offset, ref->length);
            if (st == MINFER_OK && lc->keep_mapping && v->initializer->owns_data &&
                v->initializer->view.nbytes == ref->length)
                v->initializer->src = lc->raw_base + ref->offset;
        } else
            st = mf_tensor_from_proto(tp, lc->model_dir, w, &v->initializer);
        if (st != MINFER_OK) {
            mf_error_prefix(st, "%s", lc->errctx);
            goto fail;
        }
        v->dtype = v->initializer->view.dtype;
        v->rank = v->initializer->view.rank;
        memcpy(v->dims, v->initializer->view.dims, sizeof v->dims);
    }

    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vip = gp->input[i];
        if (!vip->name || !vip->name[0]) {
            st = mf_error(MINFER_ERR_MODEL, "%s: graph input %zu has no name", lc->errctx, i);
            goto fail;
        }
        int vi = mf_graph_intern(g, vip->name);
        if (vi < 0) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
            goto fail;
        }
        mf_value *v = &g->values[vi];
        if (v->is_input) {
            st = mf_error(MINFER_ERR_MODEL, "%s: graph input '%s' is listed twice", lc->errctx,
                          vip->name);
            goto fail;
        }
        if (v->initializer) {
            /* An input with a default value (IR >= 4 lists these as inputs
             * too). Its declared type must agree with the data. */
            if (vip->type && vip->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
                vip->type->tensor_type && vip->type->tensor_type->elem_type &&
                vip->type->tensor_type->elem_type != v->dtype) {
                st = mf_error(MINFER_ERR_MODEL,
                              "%s: graph input '%s' is declared %s but its initializer is %s",
                              lc->errctx, vip->name,
                              minfer_dtype_name((minfer_dtype)vip->type->tensor_type->elem_type),
                              minfer_dtype_name((minfer_dtype)v->dtype));
                goto fail;
            }
            continue;
        }
        st = load_value_info(lc, vip, v, "input");
        if (st != MINFER_OK)
            goto fail;
        if (v->dtype == 0 && !parent) { /* subgraph inputs may leave types to inference */
            st = mf_error(MINFER_ERR_MODEL, "%s: graph input '%s' declares no element type",
                          lc->errctx, vip->name);
            goto fail;
        }
        v->is_input = 1;
        g->inputs[g->n_inputs++] = vi;
    }

    lc->nodes += gp->n_node;
    if (lc->nodes > lc->limits.max_nodes) {
        st = mf_error(MINFER_ERR_LIMIT, "%s: the model has more than %llu nodes (the node limit)",
                      lc->errctx, (unsigned long long)lc->limits.max_nodes);
        goto fail;
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        st = load_node(lc, g, gp->node[i], i);
        if (st != MINFER_OK)
            goto fail;
    }

    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vip = gp->output[i];
        if (!vip->name || !vip->name[0]) {
            st = mf_error(MINFER_ERR_MODEL, "%s: graph output %zu has no name", lc->errctx, i);
            goto fail;
        }
        int vi = mf_graph_intern(g, vip->name);
        if (vi < 0) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", lc->errctx);
            goto fail;
        }
        mf_value *v = &g->values[vi];
        if (v->is_output) {
            st = mf_error(MINFER_ERR_MODEL, "%s: graph output '%s' is listed twice", lc->errctx,
                          vip->name);
            goto fail;
        }
        if (!v->initializer && !v->is_input) {
            st = load_value_info(lc, vip, v, "output");
            if (st != MINFER_OK)
                goto fail;
        }
        v->is_output = 1;
        g->outputs[g->n_outputs++] = vi;
    }
    lc->depth--;
    *out = g;
    return MINFER_OK;
fail:
    lc->depth--;
    mf_graph_free(g);
    return st;
}

/* Finalizes, depth first, every subgraph a graph holds and then the graph:
 * a node's outer-scope captures are known once its subgraphs are. */
static minfer_status finalize_all(mf_graph *g, const char *errctx) {
    minfer_status st;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t a = 0; a < g->nodes[i].n_attrs; a++) {
            mf_attr *at = &g->nodes[i].attrs[a];
            if (at->g && (st = finalize_all(at->g, errctx)) != MINFER_OK)
                return st;
            for (size_t k = 0; at->graphs && k < at->count; k++)
                if ((st = finalize_all(at->graphs[k], errctx)) != MINFER_OK)
                    return st;
        }
    return mf_graph_finalize(g, errctx);
}

minfer_status mf_load_onnx(const void *data, size_t size, const char *model_dir,
                           const char *errctx, const minfer_limits *limits, mf_graph **out) {
    return mf_load_onnx_ex(data, size, 0, model_dir, errctx, limits, out);
}

/* The model's own description: producer, domain, version, doc strings and
 * metadata_props (minfer_session_metadata). */
static minfer_status load_meta(const Onnx__ModelProto *mp, mf_graph *g, const char *errctx) {
    mf_model_meta *m = g->meta = mf_calloc(1, sizeof *m);
    if (!m)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
#define COPY(dst, src) (dst = mf_strdup((src) ? (src) : ""))
    int ok = COPY(m->producer_name, mp->producer_name) &&
             COPY(m->producer_version, mp->producer_version) && COPY(m->domain, mp->domain) &&
             COPY(m->doc_string, mp->doc_string) &&
             COPY(m->graph_doc_string, mp->graph->doc_string);
    m->model_version = mp->model_version;
    m->ir_version = mp->ir_version;
    m->keys = mf_calloc(mp->n_metadata_props + 1, sizeof *m->keys);
    m->values = mf_calloc(mp->n_metadata_props + 1, sizeof *m->values);
    ok = ok && m->keys && m->values;
    for (size_t i = 0; ok && i < mp->n_metadata_props; i++, m->n_props++) {
        const Onnx__StringStringEntryProto *e = mp->metadata_props[i];
        /* counted even when half copied: freed with the rest */
        ok = COPY(m->keys[i], e ? e->key : "") && COPY(m->values[i], e ? e->value : "");
    }
#undef COPY
    return ok ? MINFER_OK : mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
}

static minfer_status load_onnx(const void *data, size_t size, int mapped, int keep,
                               const char *model_dir, const char *errctx,
                               const minfer_limits *limits, mf_graph **out);

minfer_status mf_load_onnx_ex(const void *data, size_t size, int mapped, const char *model_dir,
                              const char *errctx, const minfer_limits *limits, mf_graph **out) {
    return load_onnx(data, size, mapped, 0, model_dir, errctx, limits, out);
}

static void unmap(void *data, size_t size) { munmap(data, size); }

minfer_status mf_load_onnx_mapped(void *data, size_t size, const char *model_dir,
                                  const char *errctx, const minfer_limits *limits,
                                  mf_graph **out) {
    minfer_status st = load_onnx(data, size, 1, 1, model_dir, errctx, limits, out);
    if (st != MINFER_OK) {
        munmap(data, size);
        return st;
    }
    (*out)->blob = data;
    (*out)->blob_size = size;
    (*out)->blob_release = unmap;
    return MINFER_OK;
}

static minfer_status load_onnx(const void *data, size_t size, int mapped, int keep,
                               const char *model_dir, const char *errctx,
                               const minfer_limits *limits, mf_graph **out) {
    minfer_status st = MINFER_OK;
    Onnx__ModelProto *mp = NULL;
    mf_graph *g = NULL;
    load_ctx lc = {errctx, model_dir, 0, mf_options_limits(NULL), 0, NULL, NULL, 0, 0, 0};
    ProtobufCAllocator pba;
    int nomem;
    uint8_t *stripped = NULL;
    size_t stripped_size = 0;
    mf_raw_ref *refs = NULL;
    size_t n_refs = 0;
    *out = NULL;
    if (limits)
        lc.limits = *limits;
    if (size == 0)
        return mf_error(MINFER_ERR_MODEL, "%s: the model is empty (0 bytes)", errctx);
    if ((uint64_t)size > lc.limits.max_model_bytes)
        return mf_error(MINFER_ERR_LIMIT, "%s: the model is %zu bytes, above the limit of %llu",
                        errctx, size, (unsigned long long)lc.limits.max_model_bytes);
    /* protobuf-c recurses once per nested message: bound the nesting
     * before it sees the bytes (pb_depth.c). */
    if ((st = mf_pb_check_nesting(&onnx__model_proto__descriptor, data, size, MAX_MESSAGE_DEPTH,
                                  errctx)) != MINFER_OK)
        return st;
    mf_pb_allocator_init(&pba, &nomem);
    /* Unpack a copy without the weights' payloads (pb_strip.c), which are
     * then read in place; if the walk fails, protobuf-c gets the original
     * bytes and reports what is wrong with them. */
    if (mf_pb_strip_initializers(data, size, &stripped, &stripped_size, &refs, &n_refs) ==
        MINFER_OK) {
        lc.raw_base = data;
        lc.refs = refs;
        lc.n_refs = n_refs;
        lc.drop_pages = mapped;
        lc.keep_mapping = mapped && keep;
        mp = onnx__model_proto__unpack(&pba, stripped_size, stripped);
        free(stripped);
    } else {
        mf_error_clear();
        mp = onnx__model_proto__unpack(&pba, size, data);
    }
    if (!mp)
        free(refs);
    if (!mp && nomem)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory parsing the model", errctx);
    if (!mp)
        return mf_error(MINFER_ERR_MODEL,
                        "%s: not a valid ONNX model (the protobuf data is malformed or "
                        "truncated; %zu bytes)",
                        errctx, size);
    if (!mp->graph) {
        st = mf_error(MINFER_ERR_MODEL, "%s: the model has no graph", errctx);
        goto done;
    }
    st = load_graph(&lc, mp->graph, NULL, &g);
    if (st != MINFER_OK)
        goto done;
    if ((st = load_meta(mp, g, errctx)) != MINFER_OK)
        goto done;
    g->opsets = mf_calloc(mp->n_opset_import + 1, sizeof *g->opsets);
    if (!g->opsets) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto done;
    }
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
        const char *dom = op->domain && strcmp(op->domain, "ai.onnx") != 0 ? op->domain : "";
        if (op->version <= 0) {
            st = mf_error(MINFER_ERR_MODEL, "%s: opset import for domain '%s' has version %lld",
                          errctx, dom, (long long)op->version);
            goto done;
        }
        for (size_t j = 0; j < g->n_opsets; j++)
            if (strcmp(g->opsets[j].domain, dom) == 0) {
                st = mf_error(MINFER_ERR_MODEL, "%s: domain '%s' is imported twice", errctx, dom);
                goto done;
            }
        g->opsets[g->n_opsets].domain = mf_strdup(dom);
        if (!g->opsets[g->n_opsets].domain) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            goto done;
        }
        g->opsets[g->n_opsets++].version = op->version;
    }
    if (g->n_opsets == 0) {
        /* IR version 1 and 2 models predate opset_import: they mean opset 1. */
        if (mp->ir_version >= 3) {
            st = mf_error(MINFER_ERR_MODEL, "%s: the model imports no opset", errctx);
            goto done;
        }
        g->opsets[0].domain = mf_strdup("");
        if (!g->opsets[0].domain) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            goto done;
        }
        g->opsets[0].version = 1;
        g->n_opsets = 1;
    }
    st = finalize_all(g, errctx);
done:
    if (mp)
        onnx__model_proto__free_unpacked(mp, &pba);
    free(refs);
    if (st == MINFER_OK)
        *out = g;
    else
        mf_graph_free(g);
    return st;
}
