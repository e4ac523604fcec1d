/*
 * libFuzzer target: compiled model bytes (docs/format.md) -> session (CPU
 * provider) -> one run. The checksums are recomputed on a copy first (and
 * the recorded file size set to the input's), so mutations reach the
 * decoder behind them; test_mfc covers the checksum refusals themselves.
 *
 * Seeds: with FUZZ_MFC_SEEDS=OUT_DIR and FUZZ_MFC_MODELS=LIST (a file of
 * ONNX model paths, one a line), the target compiles each model into
 * OUT_DIR and exits (run_fuzz.sh does this before fuzzing): for the CPU
 * provider, and where oneDNN loads also for onednn,cpu, whose files hold a
 * PACK section (its pre-packed weights) for the reader to be fuzzed on.
 *
 * Built twice: fuzz_mfc mutates bytes (libFuzzer's own mutator), and
 * fuzz_mfc_struct (FUZZ_MFC_STRUCTURED) is structure-aware: its mutator
 * picks one section of the file's table and changes it alone (its bytes,
 * with libFuzzer's mutator over that section only; a 32- or 64-bit field
 * in it set to a boundary value; its table entry's offset, size or id; its
 * length cut), so most mutants keep a valid header and table and reach the
 * section's decoder (GRPH, STRS, WGHT, PACK, ...) instead of the first
 * check that fails.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "../mfc_util.h"
#include "minfer/compile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#ifdef FUZZ_MFC_STRUCTURED
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

static uint32_t next_rand(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static uint64_t boundary(uint32_t r, uint64_t size, uint64_t was) {
    switch (r % 10) {
    case 0: return 0;
    case 1: return 1;
    case 2: return was + 1;
    case 3: return was ? was - 1 : 0;
    case 4: return size;
    case 5: return size + 1;
    case 6: return UINT32_MAX;
    case 7: return (uint64_t)INT32_MAX + 1;
    case 8: return UINT64_MAX;
    default: return was ^ ((uint64_t)1 << (r >> 4) % 64);
    }
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
    uint32_t r = seed ? seed : 1;
    uint32_t count = size >= 88 ? mfc_le32(data + 40) : 0;
    if (count == 0 || count > 64 || !mfc_entry(data, size, 0) || next_rand(&r) % 16 == 0)
        return LLVMFuzzerMutate(data, size, max_size); /* the bytes, as fuzz_mfc */
    uint8_t *e = mfc_entry(data, size, next_rand(&r) % count);
    if (!e)
        return LLVMFuzzerMutate(data, size, max_size);
    uint64_t off = mfc_le64(e + 8), len = mfc_le64(e + 16);
    int in_range = off <= size && len <= size - off && len > 0;
    switch (next_rand(&r) % 6) {
    case 0: /* the section's bytes, with libFuzzer's mutator, length kept */
    case 1:
        if (in_range) {
            LLVMFuzzerMutate(data + off, (size_t)len, (size_t)len);
            break;
        }
        /* fall through */
    case 2: /* a field inside the section */
        if (in_range && len >= 8) {
            size_t at = (size_t)off + (next_rand(&r) % (len - 7) & ~(size_t)3);
            uint64_t v = boundary(next_rand(&r), len, mfc_le64(data + at));
            if (next_rand(&r) % 2)
                mfc_put64(data + at, v);
            else
                for (int i = 0; i < 4; i++)
                    data[at + i] = (uint8_t)(v >> (8 * i));
        }
        break;
    case 3: /* the entry's offset */
        mfc_put64(e + 8, boundary(next_rand(&r), size, off));
        break;
    case 4: /* the entry's size */
        mfc_put64(e + 16, boundary(next_rand(&r), size - (off < size ? off : size), len));
        break;
    default: /* the entry's id: another section's, or damaged */
        if (next_rand(&r) % 2) {
            uint8_t *o = mfc_entry(data, size, next_rand(&r) % count);
            if (o)
                memcpy(e, o, 4);
        } else
            e[next_rand(&r) % 4] ^= (uint8_t)(1u << next_rand(&r) % 8);
        break;
    }
    return size;
}
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *out = getenv("FUZZ_MFC_SEEDS"), *list = getenv("FUZZ_MFC_MODELS");
    if (!out || !list)
        return 0;
    FILE *f = fopen(list, "r");
    if (!f)
        exit(2);
    char line[4096], path[4200];
    int n = 0;
    minfer_options *dnn = NULL;
    if (minfer_options_create(&dnn) != MINFER_OK ||
        minfer_options_set_providers_str(dnn, "onednn,cpu") != MINFER_OK ||
        minfer_options_set_threads(dnn, 1) != MINFER_OK ||
        minfer_options_set_log_level(dnn, MINFER_LOG_ERROR) != MINFER_OK)
        exit(2);
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0])
            continue;
        snprintf(path, sizeof path, "%s/seed-%d.mfc", out, n);
        if (minfer_compile_model(line, path, fuzz_options()) == MINFER_OK)
            n++;
        snprintf(path, sizeof path, "%s/seed-%d.mfc", out, n);
        if (minfer_compile_model(line, path, dnn) == MINFER_OK)
            n++;
    }
    minfer_options_free(dnn);
    fclose(f);
    printf("fuzz_mfc: %d seeds compiled into %s\n", n, out);
    exit(0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    if (size >= 8)
        memcpy(copy, "\x89MFC\r\n\x1a\n", 8); /* stay on the compiled-format path */
    mfc_fix_checksums(copy, size, 1);
    minfer_session *s = NULL;
    if (minfer_session_create_from_memory(copy, size, fuzz_options(), &s) == MINFER_OK)
        fuzz_run(s);
    minfer_session_free(s);
    free(copy);
    return 0;
}
