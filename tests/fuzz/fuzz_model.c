/* libFuzzer target: model bytes -> session (CPU provider) -> one run. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    minfer_session *s = NULL;
    if (minfer_session_create_from_memory(data ? (const void *)data : "", size, fuzz_options(),
                                          &s) == MINFER_OK)
        fuzz_run(s);
    minfer_session_free(s);
    return 0;
}
