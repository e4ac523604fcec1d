/*
 * The compiled model format (docs/format.md): constants shared by the
 * writer (mfc_write.c) and the reader (mfc_read.c).
 *
 * A file is a header, a section table and sections; every integer is
 * little-endian. Each section's offset, size and checksum are in the table,
 * the table's checksum in the header, and the header's own in its last
 * eight bytes. Checksums are xxHash's XXH3_64bits (libxxhash, seed 0): the
 * weights are hashed at every load, and XXH3 reads them several times
 * faster than XXH64. The weights section starts at a multiple of
 * MFC_ALIGN and so does each tensor in it, so a mapping of the file gives
 * tensors their data in place.
 */
#ifndef MINFER_CORE_MFC_H
#define MINFER_CORE_MFC_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "minfer/compile.h"
#include "minfer/provider.h"

#define MFC_MAGIC "\x89MFC\r\n\x1a\n"
#define MFC_MAGIC_LEN 8
/* A reader refuses any other version: what it cannot skip needs a new one. */
#define MFC_VERSION 1
#define MFC_ENDIAN_MARK 0x01020304u
#define MFC_HEADER_SIZE 88
#define MFC_TABLE_ENTRY 32
#define MFC_ALIGN 64
/* Header flags a reader must understand (none defined in version 1). */
#define MFC_FLAGS_KNOWN 0u

/* Section ids: four ASCII characters, read as a little-endian u32. */
#define MFC_ID(a, b, c, d) \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
#define MFC_SEC_STRS MFC_ID('S', 'T', 'R', 'S') /* string table */
#define MFC_SEC_META MFC_ID('M', 'E', 'T', 'A') /* compile settings, model metadata */
#define MFC_SEC_GRPH MFC_ID('G', 'R', 'P', 'H') /* the graph */
#define MFC_SEC_WGTS MFC_ID('W', 'G', 'T', 'S') /* tensor data, MFC_ALIGN-aligned */
/* Constants pre-packed by providers (optional: a reader may skip it). */
#define MFC_SEC_PACK MFC_ID('P', 'A', 'C', 'K')
/* Bytes of one PACK index entry: u32 node, str node name, u32 input,
 * str value, str provider, str tag, u64 offset, u64 bytes. */
#define MFC_PACK_ENTRY 40
/* The longest tag a writer stores: the provider's tag
 * (minfer_packed_const.tag) and the pair's checksums the writer appends,
 * " w=<16 hex> pack=<16 hex>" (MFC_PACK_PAIR_LEN characters): the XXH3 of
 * the plain constant the blob was packed from and of the blob. A reader
 * hands a blob to its provider only when both match the file's plain
 * weights and blob (mf_mfc_packs_unpaired says what was left out). */
#define MFC_PACK_MAX_TAG 255
#define MFC_PACK_PAIR_LEN 41
/* Section flag: a reader that does not know the id may skip the section. */
#define MFC_SEC_OPTIONAL 1u

/* No string (a NULL dim_param). */
#define MFC_NO_STRING 0xffffffffu
/* Tensor storage kinds in the graph section. */
#define MFC_TENSOR_WEIGHTS 0 /* offset and size in the weights section */
#define MFC_TENSOR_STRINGS 1 /* one string-table index per element */

/* One constant input of a node packed by a provider, to be stored in the
 * PACK section: the node is found in the written graph by name (with its
 * op type and the input's value name), and left out of the file when no
 * node or several match. */
typedef struct mf_mfc_pack {
    const char *node;     /* the node's name */
    const char *op_type;
    uint32_t input;       /* input index */
    const char *value;    /* the constant input's value name */
    const char *provider; /* the provider that packed it ("onednn") */
    const char *tag;      /* the provider's tag, at most MFC_PACK_MAX_TAG characters */
    const void *data;
    size_t bytes;
} mf_mfc_pack;

/* Writes the graph a session built (g, its top-level graph after
 * optimization) to path; level and providers are recorded, and the
 * n_packs packed constants (may be 0) go into a PACK section. */
minfer_status mf_mfc_write(const mf_graph *g, int level, const char *providers,
                           const mf_mfc_pack *packs, size_t n_packs, const char *path);

/* Loads a compiled file held in data[0..size). The graph takes ownership of
 * data in every case (on failure it is released at once): its constant
 * tensors point into it, and mf_graph_free calls release(data, size).
 * limits (NULL: defaults) bound the file, node count and tensor sizes;
 * errctx names the file in messages. */
minfer_status mf_mfc_load(void *data, size_t size, void (*release)(void *, size_t),
                          const char *errctx, const minfer_limits *limits, mf_graph **out);
/* Release functions for mf_mfc_load: a mapping of the whole file (munmap),
 * or a malloc'ed or posix_memalign'ed copy (free). */
void mf_mfc_unmap(void *data, size_t size);
void mf_mfc_free(void *data, size_t size);

/* The packed constants a compiled graph g (a top-level graph from
 * mf_mfc_load) holds for its node i and provider: *count entries (0 and
 * NULL when none). They point into the file's mapping and live as long as
 * g. */
const minfer_packed_const *mf_mfc_packed_for(const mf_graph *g, size_t i, const char *provider,
                                             size_t *count);

/* How many of g's stored packed blobs were left out because they are not
 * tied to the plain weights beside them (no pair checksums, or checksums
 * that do not match: a spliced or edited PACK section); why gets the first
 * one's reason. Their providers pack from the plain weights instead. */
size_t mf_mfc_packs_unpaired(const mf_graph *g, char *why, size_t size);

#endif
