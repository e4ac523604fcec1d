/* libFuzzer target: the TensorProto reader (the test-case .pb format). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "minfer/minfer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
volatile uint8_t fuzz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    minfer_tensor *t = NULL;
    char *name = NULL;
    if (minfer_tensor_load_pb_memory(data, size, &t, &name) == MINFER_OK) {
        /* Touch every byte the tensor claims. */
        uint8_t sum = 0;
        const uint8_t *p = minfer_tensor_data(t);
        for (size_t i = 0; p && i < minfer_tensor_nbytes(t); i++)
            sum = (uint8_t)(sum + p[i]);
        fuzz_sink = sum;
    }
    minfer_tensor_free(t);
    free(name);
    return 0;
}
