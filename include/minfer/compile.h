/*
 * Compiled models: a model optimized once and written in minfer's own
 * checked binary format (docs/format.md), which sessions load without
 * parsing protobuf or running the optimizer, with the weights used in place
 * from a read-only mapping of the file (so processes serving one compiled
 * model share its pages).
 *
 *     minfer_options *opt;
 *     minfer_options_create(&opt);
 *     minfer_options_set_providers_str(opt, "cpu");
 *     if (minfer_compile_model("model.onnx", "model.mfc", opt) != MINFER_OK)
 *         fprintf(stderr, "%s\n", minfer_last_error());
 *     minfer_session_create("model.mfc", opt, &s);   // recognised by its magic
 *
 * minfer_session_create and minfer_session_create_from_memory take a
 * compiled file wherever they take an ONNX model.
 */
#ifndef MINFER_COMPILE_H
#define MINFER_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "minfer/minfer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Writing ------------------------------------------------------------ */

/* Builds a session for model_path with opt (NULL: defaults) and writes the
 * graph it optimized, with its weights, to out_path in the compiled format.
 * The optimization level and the providers the session loaded are recorded
 * in the file. A model path that is already compiled is an error. */
MINFER_API minfer_status minfer_compile_model(const char *model_path, const char *out_path,
                                              const minfer_options *opt);

/* ---- Reading ------------------------------------------------------------ */

/* 1 when data starts with the compiled format's magic (size >= 8). */
MINFER_API int minfer_is_compiled(const void *data, size_t size);

#define MINFER_COMPILED_MAX_SECTIONS 16

/* One section of a compiled file, as its table lists it. */
typedef struct minfer_compiled_section {
    char name[8];      /* four characters: "STRS", "META", "GRPH", "WGTS" */
    uint64_t offset;   /* from the start of the file */
    uint64_t size;     /* bytes */
    uint64_t checksum; /* XXH3_64bits (xxHash, seed 0) of its bytes */
} minfer_compiled_section;

/* What a compiled file says about itself. Filled by value; nothing to free. */
typedef struct minfer_compiled_info {
    uint32_t format_version;
    uint32_t flags;
    char minfer_version[24]; /* the library that wrote it */
    int opt_level;           /* the optimization level it was compiled at */
    char providers[256];     /* the provider list it was compiled for, comma-separated */
    uint64_t file_size;
    size_t n_sections;
    minfer_compiled_section sections[MINFER_COMPILED_MAX_SECTIONS];
    size_t n_nodes;          /* of the main graph */
    size_t n_weights;        /* tensors stored in the weights section */
    uint64_t weight_bytes;   /* their bytes, alignment padding excluded */
    /* Appended: the PACK section (constants pre-packed by providers). */
    size_t n_packed;         /* packed constants stored (0: no PACK section) */
    uint64_t packed_bytes;   /* their bytes */
    char packed_tag[272];    /* the first one's "provider: tag" */
} minfer_compiled_info;

/* Reads and checks path as a compiled file (every check a session makes:
 * sizes, offsets, checksums, the graph) and fills the first info_size
 * bytes of info (sizeof *info: the struct as this header has it).
 * minfer_compiled_info grows at its end; the size keeps a program built
 * against an older header from being written past its struct. */
MINFER_API minfer_status minfer_compiled_info_read_sized(const char *path,
                                                         minfer_compiled_info *info,
                                                         size_t info_size);

/* The entry point of programs built before the PACK fields: fills the
 * struct up to weight_bytes only. Through this header the name calls
 * minfer_compiled_info_read_sized with the struct's size. */
MINFER_API minfer_status minfer_compiled_info_read(const char *path, minfer_compiled_info *info);
#define minfer_compiled_info_read(path, info)                                                   \
    minfer_compiled_info_read_sized((path), (info), sizeof *(info))

#ifdef __cplusplus
}
#endif

#endif
