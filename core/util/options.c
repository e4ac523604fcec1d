/* Reading options: the effective limits and provider option strings
 * (util/options.h). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/internal.h"
#include "util/options.h"

/* A quarter of physical memory, at most MF_DEFAULT_MAX_TENSOR_BYTES and at
 * least 256 MiB: a 16-byte input asking for a tensor the size of the
 * machine fails with MINFER_ERR_LIMIT instead of filling memory. */
static uint64_t default_tensor_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0)
        return MF_DEFAULT_MAX_TENSOR_BYTES;
    uint64_t quarter = (uint64_t)pages / 4 * (uint64_t)page;
    if (quarter > MF_DEFAULT_MAX_TENSOR_BYTES)
        return MF_DEFAULT_MAX_TENSOR_BYTES;
    return quarter < ((uint64_t)256 << 20) ? (uint64_t)256 << 20 : quarter;
}

minfer_run_limits mf_options_run_limits(const minfer_options *opt) {
    minfer_run_limits l;
    memset(&l, 0, sizeof l);
    l.struct_size = sizeof l;
    l.max_run_elements = MF_DEFAULT_MAX_RUN_ELEMENTS;
    if (opt && opt->run_limits.max_run_elements)
        l.max_run_elements = opt->run_limits.max_run_elements;
    if (opt)
        l.deadline_ms = opt->run_limits.deadline_ms;
    return l;
}

minfer_limits mf_options_limits(const minfer_options *opt) {
    minfer_limits l = {MF_DEFAULT_MAX_MODEL_BYTES, default_tensor_bytes(), MF_DEFAULT_MAX_NODES,
                       MF_DEFAULT_MAX_LOOP_ITERATIONS};
    if (opt && opt->limits.max_model_bytes)
        l.max_model_bytes = opt->limits.max_model_bytes;
    if (opt && opt->limits.max_tensor_bytes)
        l.max_tensor_bytes = opt->limits.max_tensor_bytes;
    if (opt && opt->limits.max_nodes)
        l.max_nodes = opt->limits.max_nodes;
    if (opt && opt->limits.max_loop_iterations)
        l.max_loop_iterations = opt->limits.max_loop_iterations;
    return l;
}

const char *mf_options_provider_options(const minfer_options *opt, const char *provider) {
    for (size_t i = 0; opt && i < opt->n_prov_opts; i++)
        if (strcmp(opt->prov_opt_names[i], provider) == 0)
            return opt->prov_opt_values[i];
    return "";
}

minfer_status mf_options_precision(const minfer_options *opt, const char *errctx,
                                   int *precision) {
    const char *e = secure_getenv("MINFER_PRECISION");
    *precision = MINFER_PRECISION_FP32;
    if (opt && opt->precision >= 0)
        *precision = opt->precision;
    else if (e && e[0]) {
        if (strcmp(e, "bf16") == 0)
            *precision = MINFER_PRECISION_BF16;
        else if (strcmp(e, "fp32") != 0)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "%s: MINFER_PRECISION='%s' is not a precision (fp32, bf16)", errctx,
                            e);
    }
    return MINFER_OK;
}
