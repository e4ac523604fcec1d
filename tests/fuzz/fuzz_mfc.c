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
