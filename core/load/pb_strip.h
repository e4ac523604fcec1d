/* Walking the protobuf wire format without protobuf-c: stripping initializer
 * payloads out of a serialized ModelProto (pb_strip.c) and checking how deep
 * messages nest before protobuf-c's recursive unpack sees them (pb_depth.c). */
#ifndef MINFER_CORE_PB_STRIP_H
#define MINFER_CORE_PB_STRIP_H

#include <stddef.h>
#include <stdint.h>

#include "minfer/minfer.h"

/* Where one initializer's raw_data lies in the original bytes; length is
 * SIZE_MAX when the initializer has no raw_data. */
typedef struct mf_raw_ref {
    size_t offset, length;
} mf_raw_ref;

/* Writes to *out (malloc'd) a copy of the ModelProto in data without the
 * raw_data of the main graph's initializers, and to *refs one entry per
 * initializer of the main graph, in order. MINFER_ERR_MODEL (nothing
 * allocated) when the wire format is not one it can walk. */
minfer_status mf_pb_strip_initializers(const void *data, size_t size, uint8_t **out,
                                       size_t *out_size, mf_raw_ref **refs, size_t *n_refs);

/* Reads the varint at p[*pos] (len bytes in all) and advances *pos; 0 on
 * success, -1 when it is truncated or longer than 10 bytes. */
int mf_pb_get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out);
/* Skips one field's value of wire type wt; 0 on success, -1 when it is
 * truncated or the wire type is not one ONNX uses (groups, 6, 7). */
int mf_pb_skip_value(const uint8_t *p, size_t len, size_t *pos, unsigned wt);

/* Subgraphs (GraphProto inside GraphProto) nest at most this deep. */
#define MF_MAX_SUBGRAPH_DEPTH 32

/* Checks, iteratively, that the serialized message of type desc in data
 * nests messages at most max_depth deep and GraphProto messages at most
 * MF_MAX_SUBGRAPH_DEPTH deep, so that protobuf-c's recursive unpack stays
 * within a fixed stack. desc is a ProtobufCMessageDescriptor. Errors, with
 * where as their prefix: MINFER_ERR_LIMIT naming the node and attribute (or
 * the byte offset) where the limit is passed; MINFER_ERR_MODEL when the
 * wire format is malformed (protobuf-c would refuse it too). */
minfer_status mf_pb_check_nesting(const void *desc, const void *data, size_t size, int max_depth,
                                  const char *where);

#endif
