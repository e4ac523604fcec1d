/* Stripping initializer payloads out of a serialized ModelProto (pb_strip.c). */
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

#endif
