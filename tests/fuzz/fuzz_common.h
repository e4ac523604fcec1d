/*
 * Shared pieces of the libFuzzer targets: session options for untrusted
 * input (CPU provider, one thread, quiet, tight limits) and a run on zeroed
 * inputs when they are small.
 */
#ifndef MINFER_FUZZ_COMMON_H
#define MINFER_FUZZ_COMMON_H

#include <dlfcn.h>
#include <stdlib.h>

#include "minfer/minfer.h"

static const minfer_options *fuzz_options(void) {
    static minfer_options *opt;
    if (!opt) {
        /* libFuzzer registers each instrumented module's coverage counters
         * when it loads; a session's dlclose would unmap the provider's
         * under it. Pin the library for the life of the process. */
        if (!dlopen(MINFER_BUILD_PROVIDER_DIR "/libminfer_provider_cpu.so",
                    RTLD_NOW | RTLD_NODELETE))
            abort();
        minfer_limits lim = {1u << 24, 1u << 24, 10000, 10000};
        if (minfer_options_create(&opt) != MINFER_OK ||
            minfer_options_set_providers_str(opt, "cpu") != MINFER_OK ||
            minfer_options_set_threads(opt, 1) != MINFER_OK ||
            minfer_options_set_log_level(opt, MINFER_LOG_ERROR) != MINFER_OK ||
            minfer_options_set_limits(opt, &lim) != MINFER_OK)
            abort();
    }
    return opt;
}

/* Runs s once on zero-filled inputs (symbolic dims 1) of at most 1 MiB. */
static void fuzz_run(minfer_session *s) {
    size_t n_in = minfer_session_input_count(s), n_out = minfer_session_output_count(s);
    if (n_in > 64 || n_out > 64)
        return;
    minfer_tensor *in[64] = {0}, *out[64] = {0};
    const char *names[64];
    size_t total = 0;
    int ok = 1;
    for (size_t i = 0; i < n_in && ok; i++) {
        minfer_value_info info;
        int64_t dims[MINFER_MAX_RANK];
        minfer_session_input_info(s, i, &info);
        names[i] = info.name;
        size_t rank = info.rank < 0 ? 0 : (size_t)info.rank, elems = 1;
        for (size_t d = 0; d < rank; d++) {
            dims[d] = info.dims[d] < 0 ? 1 : info.dims[d];
            if (dims[d] > (1 << 20) || (elems *= (size_t)dims[d]) > (1 << 20))
                ok = 0;
        }
        total += elems * minfer_dtype_size(info.dtype);
        ok = ok && total <= (1 << 20) &&
             minfer_tensor_create(info.dtype, dims, rank, &in[i]) == MINFER_OK;
    }
    if (ok)
        minfer_session_run(s, names, (const minfer_tensor *const *)in, n_in, NULL, out, n_out);
    for (size_t i = 0; i < n_in; i++)
        minfer_tensor_free(in[i]);
    for (size_t i = 0; i < n_out; i++)
        minfer_tensor_free(out[i]);
}

#endif
