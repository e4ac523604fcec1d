/*
 * The oneDNN provider: float32 convolutions, matrix products, pools,
 * normalizations, elementwise ops and data movement (Transpose, Slice,
 * reshapes) on oneDNN 2.6 (C API, 2.x calls).
 *
 * 1. init creates a CPU engine and an in-order stream for the session and
 *    records the session's thread count. With several threads (and the
 *    option split=auto, the default, or on), every primitive is built for
 *    one OpenMP thread and a large node is split into pieces that run side
 *    by side on the session's pool (split.c). With split=off, oneDNN
 *    threads with OpenMP: every call into oneDNN first sets
 *    omp_set_num_threads to the session's count (or to 1 for a node too
 *    small to repay waking the other workers, see node_threads), so the
 *    core's pool (asleep while a provider runs) and OpenMP never run more
 *    threads than the session asked for.
 * 2. supports_operator looks the op up in the table of node.c and runs its
 *    build function in check mode: an unknown dimension that the op ties to a
 *    known one (the inner dimension of a product, a broadcast axis) takes
 *    its value (unify_unknown), the others get stand-ins (1 for the batch,
 *    64 otherwise); prepare decides again with the concrete shapes.
 *    Primitive descriptors are created with format_tag_any where oneDNN
 *    may choose, and a node is declined, with the reason, when an
 *    attribute has no oneDNN form or when oneDNN would only offer a
 *    reference ("ref:") implementation.
 * 3. prepare_node builds the node for the plan's concrete shapes: primitive
 *    descriptors, constant weights reordered once into the primitive's
 *    layout, primitives created (JIT) once, the scratchpad (user mode) and
 *    reorder buffers sized into minfer_node_prep.workspace_bytes. A large
 *    node is also built as pieces (dnn_split_build; their workspaces
 *    follow one another), or, with split=off, a node that runs on several
 *    OpenMP threads is built a second time for one thread (sharing the
 *    packed weights); a large node without a split form is built a second
 *    time for the session's OpenMP threads, and
 * 4. execute_node runs the pieces through the host's parallel_for, or the
 *    build that measured faster (pick_variant): it binds data handles,
 *    executes the steps and waits. A lock per node makes concurrent runs
 *    take turns on its oneDNN memory objects.
 *
 * Layouts. A tensor layout is a uint64: 0 is plain row-major; k > 0 is the
 * k-th oneDNN memory descriptor this instance registered (dnn_layout_id),
 * e.g. the NHWC or nChw16c layout a convolution chose with format_tag_any.
 * With its own memory domain ("onednn", host memory allocated here, so a
 * buffer handle is a host pointer) an output keeps the layout its primitive
 * chose, and prepare_node writes it to output_layouts[o]. Consumers on this
 * provider receive it: prepare_node reads an input's layout in its
 * minfer_value_desc (ABI 2), where the host puts the layout the producer
 * reported when the producer computes in this domain; a value it never
 * produced arrives plain (from the host, through copy_from_host).
 * copy_to_host and copy_from_host reorder between a registered layout and
 * plain with reorders made at registration. Built
 * without the memory domain (-DMINFER_ONEDNN_OWN_DOMAIN=OFF, a debugging
 * aid) every output is plain, and a primitive that prefers another layout
 * gets reorders into its workspace.
 *
 * Files, each calling only those after it: provider.c (this vtable, init
 * and shutdown), state.c (prepared nodes: variants, split forms, runs),
 * split.c (the pieces), node.c (the op table, building and freeing one
 * node), the op families (conv.c, matmul.c, attention.c, rnn.c, pool.c,
 * eltwise.c, concat.c, norm.c, shape.c), build.c (memories and steps of a
 * build), packed.c (a compiled model's packed constants), layout.c (the
 * layout registry, plain descriptors and the memory domain).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* ---- Instance ------------------------------------------------------------- */

static int parse_split(const char *v, int *split) {
    static const char *const names[] = {"auto", "on", "off"};
    for (int i = 0; i < 3; i++)
        if (!strcmp(v, names[i])) {
            *split = i; /* DNN_SPLIT_AUTO, _ON, _OFF */
            return 0;
        }
    return -1;
}

static minfer_status dnn_init(const minfer_host_api *api, void *host, const char *options,
                              void **out) {
    *out = NULL;
    if (!api || !api->set_error)
        return MINFER_ERR_INVALID_ARG;
    /* split=auto|on|off (else MINFER_ONEDNN_SPLIT): see split.c. */
    const char *env = getenv("MINFER_ONEDNN_SPLIT");
    int split = DNN_SPLIT_AUTO;
    if (env && *env && parse_split(env, &split) != 0) {
        api->set_error(host, "onednn: MINFER_ONEDNN_SPLIT='%s': takes auto, on or off", env);
        return MINFER_ERR_INVALID_ARG;
    }
    if (options && options[0] &&
        (strncmp(options, "split=", 6) || parse_split(options + 6, &split) != 0)) {
        api->set_error(host, "onednn: unknown provider options '%s' (it takes split=auto|on|off)",
                       options);
        return MINFER_ERR_INVALID_ARG;
    }
    dnn_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        api->set_error(host, "onednn: out of memory");
        return MINFER_ERR_NOMEM;
    }
    ctx->api = api;
    ctx->host = host;
    ctx->split = split;
    ctx->threads = api->num_threads ? api->num_threads(host) : 1;
    if (ctx->threads < 1)
        ctx->threads = 1;
    /* auto: split forms on the host's pool up to 8 threads, OpenMP builds
     * above. Measured on 16 cores (docs/PERFORMANCE.md, "16 cores"): at 16
     * threads the OpenMP builds ran ResNet-18 in 3.0-3.2 ms against the
     * split forms' 5.6, Inception V3 11-12 against 20-21, at 8 threads
     * neither way won on every model. */
    if (ctx->split == DNN_SPLIT_AUTO && ctx->threads > DNN_SPLIT_AUTO_MAX_THREADS) {
        ctx->split = DNN_SPLIT_OFF;
        api->log(host, MINFER_LOG_VERBOSE, "onednn: %d threads: OpenMP builds, no split forms "
                 "(split=auto splits up to %d threads)", ctx->threads,
                 DNN_SPLIT_AUTO_MAX_THREADS);
    }
#ifdef ONEDNN_OWN_DOMAIN
    ctx->private_layouts = 1;
#endif
    if (MINFER_HOST_HAS(api, precision) && api->precision(host) == MINFER_PRECISION_BF16) {
        /* bfloat16 products where the CPU computes them natively
         * (AVX512_BF16 dot products or AMX tiles); oneDNN 2.6 emulates
         * them elsewhere, slower than float: float then. */
        dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
        if ((isa & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16) {
            ctx->bf16 = 1;
            /* The split forms' pieces keep float layouts: oneDNN's own
             * threads instead, unless split=on was asked for. */
            if (ctx->split == DNN_SPLIT_AUTO)
                ctx->split = DNN_SPLIT_OFF;
            api->log(host, MINFER_LOG_INFO,
                     "onednn: precision bf16: convolutions and products with constant "
                     "weights in bfloat16 (%s)",
                     (isa & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx
                         ? "AMX"
                         : "AVX512_BF16");
        } else {
            api->log(host, MINFER_LOG_WARN,
                     "onednn: precision bf16: this CPU has neither AVX512_BF16 nor AMX; "
                     "computing in float");
        }
    }
    dnnl_status_t s = dnnl_engine_create(&ctx->engine, dnnl_cpu, 0);
    if (s == dnnl_success)
        s = dnnl_stream_create(&ctx->stream, ctx->engine, dnnl_stream_default_flags);
    if (s != dnnl_success) {
        api->set_error(host, "onednn: could not create a CPU engine and stream (status %d)",
                       (int)s);
        if (ctx->engine)
            dnnl_engine_destroy(ctx->engine);
        free(ctx);
        return MINFER_ERR_PROVIDER;
    }
    *out = ctx;
    return MINFER_OK;
}

static void dnn_shutdown(void *vctx) {
    dnn_ctx *ctx = vctx;
    if (!ctx)
        return;
    dnn_layouts_free(ctx);
    dnnl_stream_destroy(ctx->stream);
    dnnl_engine_destroy(ctx->engine);
    free(ctx);
}


static const minfer_provider onednn_provider = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "onednn",
    .version = "0.1.0",
    .init = dnn_init,
    .shutdown = dnn_shutdown,
    .supports_operator = dnn_supports,
    .prepare_node = dnn_prepare,
    .release_node = dnn_release,
    .execute_node = dnn_execute,
    .export_packed = dnn_export_packed,
#ifdef ONEDNN_OWN_DOMAIN
    .memory_domain = "onednn",
    .memory_alignment = DNN_ALIGN,
    .mem_alloc = dnn_mem_alloc,
    .mem_free = dnn_mem_free,
    .copy_to_host = dnn_copy_to_host,
    .copy_from_host = dnn_copy_from_host,
    .tensor_bytes = dnn_tensor_bytes,
    /* Its buffers are host memory and run_node binds (pointer + offset):
     * plain host values are read in place, not copied in. */
    .host_addressable = 1,
#endif
};

/* The entry of the implementation library; shim.c's minfer_provider_entry
 * returns it after setting OpenMP's wait policy. */
MINFER_PROVIDER_EXPORT const minfer_provider *minfer_onednn_impl_entry(uint32_t host_abi);
MINFER_PROVIDER_EXPORT const minfer_provider *minfer_onednn_impl_entry(uint32_t host_abi) {
    (void)host_abi;
    return &onednn_provider;
}
