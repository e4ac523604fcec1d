/*
 * How deep a serialized message nests, found before protobuf-c unpacks it.
 *
 * protobuf-c unpacks a nested message by recursing, one C stack frame (of
 * several hundred bytes) per level, and ONNX's messages nest without bound:
 * GraphProto -> NodeProto -> AttributeProto.g / .graphs -> GraphProto ...,
 * TypeProto inside TypeProto, SequenceProto inside SequenceProto. A model of
 * a few kilobytes holding thousands of nested If subgraphs overflows the
 * stack inside protobuf-c, long before the loader could count the levels.
 *
 * So this walk goes first. It reads the wire format with an explicit stack
 * (no recursion), taking which fields are messages, and of which type, from
 * protobuf-c's own descriptors, so it descends exactly where protobuf-c
 * would. It refuses the bytes as soon as the stack of open messages passes
 * max_depth or the GraphProtos on it pass MF_MAX_SUBGRAPH_DEPTH, naming the
 * innermost node and attribute. Every byte protobuf-c may recurse into has
 * then been walked within those limits: protobuf-c scans a message's fields
 * before it unpacks any child, and stops at the first malformed one, which
 * this walk also stops at.
 */
#include <stdio.h>
#include <stdlib.h>

#include "util/internal.h"
#include "onnx.proto3.pb-c.h"
#include "load/pb_strip.h"

typedef struct frame {
    const ProtobufCMessageDescriptor *desc;
    size_t end;                /* offset just past the message's bytes */
    size_t name_at, name_len;  /* NodeProto.name or AttributeProto.name; len 0 if unseen */
    size_t op_at, op_len;      /* NodeProto.op_type */
} frame;

/* Field numbers of the strings that name a place in a graph. */
enum { NODE_NAME = 3, NODE_OP_TYPE = 4, ATTR_NAME = 1 };

/* Copies up to 64 bytes of a name from the model into dst, control bytes
 * replaced, for a message. */
static void copy_name(char *dst, size_t size, const uint8_t *p, size_t at, size_t len) {
    size_t o = 0;
    for (size_t i = 0; i < len && o + 4 < size && i < 64; i++) {
        uint8_t c = p[at + i];
        dst[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    if (len > 64 && o + 4 < size) {
        dst[o++] = '.';
        dst[o++] = '.';
        dst[o++] = '.';
    }
    dst[o] = '\0';
}

/* "node 'n' (If) attribute 'then_branch' (byte N)" for the innermost node
 * and attribute open on the stack. */
static void describe(char *buf, size_t size, const uint8_t *p, const frame *st, int depth,
                     size_t offset) {
    const frame *node = NULL, *attr = NULL;
    for (int i = depth - 1; i >= 0 && !node; i--) {
        if (st[i].desc == &onnx__attribute_proto__descriptor && !attr)
            attr = &st[i];
        else if (st[i].desc == &onnx__node_proto__descriptor)
            node = &st[i];
    }
    char name[80] = "", op[80] = "", an[80] = "";
    int k = 0;
    if (node) {
        copy_name(name, sizeof name, p, node->name_at, node->name_len);
        copy_name(op, sizeof op, p, node->op_at, node->op_len);
        k = snprintf(buf, size, "node%s%s%s (%s) ", name[0] ? " '" : "", name, name[0] ? "'" : "",
                     op[0] ? op : "no op_type");
    }
    if (attr && k >= 0 && (size_t)k < size) {
        copy_name(an, sizeof an, p, attr->name_at, attr->name_len);
        int a = snprintf(buf + k, size - (size_t)k, "attribute '%s' ", an);
        k = a < 0 ? a : k + a;
    }
    if (k >= 0 && (size_t)k < size)
        snprintf(buf + k, size - (size_t)k, "(byte %zu)", offset);
}

minfer_status mf_pb_check_nesting(const void *desc, const void *data, size_t size, int max_depth,
                                  const char *where) {
    const uint8_t *p = data;
    frame *st = mf_malloc((size_t)max_depth * sizeof *st);
    int depth = 1, graphs = 0;
    size_t pos = 0;
    minfer_status status = MINFER_OK;
    char place[400];

    if (!st)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", where);
    st[0] = (frame){desc, size, 0, 0, 0, 0};
    graphs = desc == &onnx__graph_proto__descriptor;
    while (depth > 0) {
        frame *f = &st[depth - 1];
        if (pos == f->end) {
            graphs -= f->desc == &onnx__graph_proto__descriptor;
            depth--;
            continue;
        }
        size_t field_at = pos;
        uint64_t key;
        if (mf_pb_get_varint(p, f->end, &pos, &key))
            goto malformed;
        unsigned wt = (unsigned)(key & 7);
        uint64_t number = key >> 3;
        const ProtobufCFieldDescriptor *fd =
            number <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(f->desc, (unsigned)number)
                                 : NULL;
        if (wt != 2) {
            if (mf_pb_skip_value(p, f->end, &pos, wt))
                goto malformed;
            continue;
        }
        uint64_t len;
        if (mf_pb_get_varint(p, f->end, &pos, &len) || len > f->end - pos)
            goto malformed;
        if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE) {
            /* Remember the strings that say where we are. */
            if (f->desc == &onnx__node_proto__descriptor && number == NODE_NAME) {
                f->name_at = pos;
                f->name_len = (size_t)len;
            } else if (f->desc == &onnx__node_proto__descriptor && number == NODE_OP_TYPE) {
                f->op_at = pos;
                f->op_len = (size_t)len;
            } else if (f->desc == &onnx__attribute_proto__descriptor && number == ATTR_NAME) {
                f->name_at = pos;
                f->name_len = (size_t)len;
            }
            pos += (size_t)len;
            continue;
        }
        const ProtobufCMessageDescriptor *child = fd->descriptor;
        int is_graph = child == &onnx__graph_proto__descriptor;
        if (is_graph && graphs + 1 > MF_MAX_SUBGRAPH_DEPTH) {
            describe(place, sizeof place, p, st, depth, field_at);
            status = mf_error(MINFER_ERR_LIMIT, "%s: subgraphs nest deeper than %d at %s", where,
                              MF_MAX_SUBGRAPH_DEPTH, place);
            goto done;
        }
        if (depth == max_depth) {
            describe(place, sizeof place, p, st, depth, field_at);
            status = mf_error(MINFER_ERR_LIMIT,
                              "%s: protobuf messages nest deeper than %d levels (a %s) at %s",
                              where, max_depth, child->name, place);
            goto done;
        }
        graphs += is_graph;
        st[depth++] = (frame){child, pos + (size_t)len, 0, 0, 0, 0};
    }
    goto done;
malformed:
    status = mf_error(MINFER_ERR_MODEL,
                      "%s: not a valid %s (the protobuf data is malformed or truncated at byte %zu "
                      "of %zu)",
                      where,
                      desc == &onnx__model_proto__descriptor
                          ? "ONNX model"
                          : ((const ProtobufCMessageDescriptor *)desc)->short_name,
                      pos, size);
done:
    free(st);
    return status;
}
