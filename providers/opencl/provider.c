/*
 * The OpenCL provider: float32 kernels in device memory.
 *
 * 1. init chooses a device (option "device=", else MINFER_OPENCL_DEVICE,
 *    else the first GPU, else the first device of any kind), logs which and
 *    why, and makes a context and one in-order queue. No platform or no
 *    device fails init with the reason, so the session goes on with the
 *    next provider. Option "fp16=1" (else MINFER_OPENCL_FP16=1) stores
 *    float tensors as half on the device; compute stays float.
 * 2. supports_operator looks the node up in the kernel table (highest
 *    since_version <= opset) and runs the op's prepare in check-only mode:
 *    types, attributes, and the device's allocation limit.
 * 3. prepare_node builds the program on first use (program.c: once per
 *    session, binaries cached on disk), then runs the op's prepare, which
 *    uploads or packs constant inputs once.
 * 4. execute_node enqueues kernels and returns; synchronize waits for them.
 *    It sets kernel arguments only on a kernel set it borrowed for the call
 *    (ocl.h), so concurrent runs of one session do not race.
 *    copy_to_host blocks (where the device shares host memory it maps the
 *    buffer instead of a read); copy_from_host enqueues the write of a
 *    host copy of the data and returns (freed at the next synchronize).
 *    With fp16 they convert float tensors between float and half, and
 *    tensor_bytes tells the planner that such a tensor takes 2 bytes an
 *    element.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

#define K(dom, op, since, name) {dom, op, since, ocl_prepare_##name, ocl_execute_##name}

static const ocl_kernel_entry kernels[] = {
    /* elementwise.c */
    K("", "Relu", 1, unary), K("", "Sigmoid", 1, unary), K("", "Tanh", 1, unary),
    K("", "Exp", 1, unary), K("", "Log", 1, unary), K("", "Sqrt", 1, unary),
    K("", "Abs", 1, unary), K("", "Neg", 1, unary), K("", "Reciprocal", 1, unary),
    K("", "Floor", 1, unary), K("", "Ceil", 1, unary), K("", "Erf", 9, unary),
    K("", "Softplus", 1, unary), K("", "Softsign", 1, unary), K("", "Sin", 7, unary),
    K("", "Cos", 7, unary), K("", "Tan", 7, unary), K("", "Atan", 7, unary),
    K("", "Round", 11, unary), K("", "Sign", 9, unary), K("", "HardSwish", 14, unary),
    K("", "LeakyRelu", 6, unary), K("", "Elu", 6, unary), K("", "Selu", 6, unary),
    K("", "HardSigmoid", 6, unary), K("", "ThresholdedRelu", 10, unary),
    K("", "Gelu", 20, unary), K("minfer", "Gelu", 1, unary),
    K("", "Clip", 6, clip), K("", "Clip", 11, clip),
    K("", "Add", 7, binary), K("", "Sub", 7, binary), K("", "Mul", 7, binary),
    K("", "Div", 7, binary), K("", "Pow", 7, binary), K("", "PRelu", 7, binary),
    K("", "Max", 8, variadic), K("", "Min", 8, variadic), K("", "Sum", 8, variadic),
    K("", "Mean", 8, variadic),
    K("", "BatchNormalization", 7, batchnorm),
    /* conv.c */
    K("", "Conv", 1, conv), K("minfer", "FusedConv", 1, conv),
    K("minfer", "GatedConv", 1, conv),
    K("", "MaxPool", 1, pool), K("", "AveragePool", 1, pool),
    K("", "GlobalAveragePool", 1, global_pool), K("", "GlobalMaxPool", 1, global_pool),
    /* gemm.c */
    K("", "Gemm", 7, gemm), K("minfer", "FusedGemm", 1, gemm),
    K("", "MatMul", 1, matmul), K("minfer", "FusedMatMul", 1, matmul),
    /* norm.c */
    K("", "Softmax", 1, softmax), K("", "Softmax", 13, softmax),
    K("", "LogSoftmax", 1, softmax), K("", "LogSoftmax", 13, softmax),
    K("", "LayerNormalization", 17, layernorm), K("minfer", "LayerNormalization", 1, layernorm),
    /* fused.c */
    K("minfer", "RMSNormalization", 1, rmsnorm), K("minfer", "Attention", 1, attention),
    K("minfer", "RotaryEmbedding", 1, rotary),
    /* slice.c */
    K("", "Slice", 1, slice), K("", "Slice", 10, slice), K("", "Split", 2, split),
    K("", "Split", 13, split), K("", "Split", 18, split), K("", "Expand", 8, expand),
    /* shape_ops.c */
    K("", "Reshape", 5, reshape), K("", "Flatten", 1, reshape), K("", "Squeeze", 1, reshape), K("", "Squeeze", 13, reshape),
    K("", "Unsqueeze", 1, reshape),
    K("", "Unsqueeze", 13, reshape), K("", "Identity", 1, reshape), K("", "Dropout", 7, reshape),
    K("", "Transpose", 1, transpose), K("", "Concat", 4, concat),
    K("minfer", "FusedConcat", 1, fused_concat),
    K("minfer", "FusedElementwise", 1, fused_elementwise), K("", "Gather", 1, gather),
    K("", "ReduceSum", 1, reduce), K("", "ReduceSum", 13, reduce),
    K("", "ReduceMean", 1, reduce), K("", "ReduceMean", 18, reduce),
    K("", "ReduceMax", 1, reduce), K("", "ReduceMax", 18, reduce),
};

#undef K

#define N_KERNELS (sizeof kernels / sizeof kernels[0])

/* Nodes go through the provider kit's skeleton: its minfer_kit_node holds
 * the table entry and the op state the entry's prepare made. */
static minfer_status run_prepare(void *ctx, const void *entry, const minfer_node_desc *node,
                                 minfer_node_prep *prep, void **op_state, char *why,
                                 size_t why_size) {
    const ocl_kernel_entry *k = entry;
    ocl_prep p = {ctx, node, prep, k->since_version, why, why_size, NULL};
    minfer_status st = k->prepare(&p);
    *op_state = p.state;
    return st;
}

static void *node_alloc(void *ctx, size_t bytes) {
    (void)ctx;
    return calloc(1, bytes);
}

static const minfer_kit_skeleton skeleton = {"opencl", run_prepare, ocl_state_free, node_alloc};

/* ---- Device choice ----------------------------------------------------------- */

typedef struct dev_entry {
    cl_platform_id platform;
    cl_device_id device;
    unsigned pi, di;
    cl_device_type type;
    char name[256];
} dev_entry;

static int ci_contains(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

/* Parses "P:D" or "N" (index over all devices); 1 when spec is numeric. */
static int parse_index(const char *spec, long *p, long *d) {
    char *end;
    long a = strtol(spec, &end, 10);
    if (end == spec)
        return 0;
    if (*end == '\0') {
        *p = -1;
        *d = a;
        return 1;
    }
    if (*end != ':')
        return 0;
    const char *s2 = end + 1;
    long b = strtol(s2, &end, 10);
    if (end == s2 || *end != '\0')
        return 0;
    *p = a;
    *d = b;
    return 1;
}

static minfer_status choose_device(ocl_ctx *ctx, const char *spec, const char *spec_from) {
    cl_platform_id plats[16];
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(16, plats, &np);
    if (err != CL_SUCCESS || np == 0) {
        ctx->api->set_error(ctx->host, "opencl: no OpenCL platform found (clGetPlatformIDs: %s); "
                            "no ICD is installed, or OCL_ICD_VENDORS / /etc/OpenCL/vendors "
                            "lists none", err != CL_SUCCESS ? ocl_err_str(err) : "0 platforms");
        return MINFER_ERR_PROVIDER;
    }
    dev_entry devs[64];
    size_t nd = 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id ids[16];
        cl_uint n = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, ids, &n) != CL_SUCCESS)
            continue;
        for (cl_uint d = 0; d < n && d < 16 && nd < 64; d++) {
            dev_entry *e = &devs[nd++];
            e->platform = plats[p];
            e->device = ids[d];
            e->pi = p;
            e->di = d;
            e->type = 0;
            e->name[0] = '\0';
            clGetDeviceInfo(ids[d], CL_DEVICE_TYPE, sizeof e->type, &e->type, NULL);
            clGetDeviceInfo(ids[d], CL_DEVICE_NAME, sizeof e->name, e->name, NULL);
            e->name[sizeof e->name - 1] = '\0';
        }
    }
    if (nd == 0) {
        ctx->api->set_error(ctx->host, "opencl: %u platform(s) but no OpenCL device", np);
        return MINFER_ERR_PROVIDER;
    }
    const dev_entry *pick = NULL;
    char why[512];
    if (spec && spec[0]) {
        long pi, di;
        if (parse_index(spec, &pi, &di)) {
            for (size_t i = 0; i < nd && !pick; i++)
                if (pi < 0 ? (long)i == di : (long)devs[i].pi == pi && (long)devs[i].di == di)
                    pick = &devs[i];
        } else {
            for (size_t i = 0; i < nd && !pick; i++)
                if (ci_contains(devs[i].name, spec))
                    pick = &devs[i];
        }
        if (!pick) {
            char list[1024] = "";
            size_t len = 0;
            for (size_t i = 0; i < nd && len < sizeof list; i++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%u:%u '%s'",
                                        i ? ", " : "", devs[i].pi, devs[i].di, devs[i].name);
            ctx->api->set_error(ctx->host, "opencl: no device matches %s '%s' (devices: %s)",
                                spec_from, spec, list);
            return MINFER_ERR_INVALID_ARG;
        }
        snprintf(why, sizeof why, "chosen by %s '%s'", spec_from, spec);
    } else {
        for (size_t i = 0; i < nd && !pick; i++)
            if (devs[i].type & CL_DEVICE_TYPE_GPU)
                pick = &devs[i];
        if (pick) {
            snprintf(why, sizeof why, "the first GPU");
        } else {
            pick = &devs[0];
            snprintf(why, sizeof why, "no GPU found, the first device");
        }
    }
    ctx->platform = pick->platform;
    ctx->device = pick->device;
    ctx->type = pick->type;
    snprintf(ctx->device_name, sizeof ctx->device_name, "%s", pick->name);
    clGetPlatformInfo(pick->platform, CL_PLATFORM_NAME, sizeof ctx->platform_name,
                      ctx->platform_name, NULL);
    ctx->platform_name[sizeof ctx->platform_name - 1] = '\0';
    ctx->api->log(ctx->host, MINFER_LOG_INFO, "opencl: using device %u:%u '%s' (platform '%s'): %s",
                  pick->pi, pick->di, pick->name, ctx->platform_name, why);
    return MINFER_OK;
}

/* ---- Instance ------------------------------------------------------------------ */

/* Whether the device lists extension name (a whole word of CL_DEVICE_EXTENSIONS). */
static int has_extension(cl_device_id dev, const char *name) {
    size_t len = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &len) != CL_SUCCESS || len == 0)
        return 0;
    char *ext = malloc(len + 1);
    if (!ext)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, len, ext, NULL) == CL_SUCCESS) {
        ext[len] = '\0';
        size_t n = strlen(name);
        for (const char *q = strstr(ext, name); q && !found; q = strstr(q + 1, name))
            found = (q == ext || q[-1] == ' ') && (q[n] == '\0' || q[n] == ' ');
    }
    free(ext);
    return found;
}

/* An upload's host copy, kept until a clFinish has seen its write done. */
typedef struct ocl_staged {
    struct ocl_staged *next;
    cl_mem buf;                /* where the write goes */
    size_t offset, bytes;
    int half;                  /* data holds halves converted from floats */
    unsigned long long launch; /* n_launch when the write was enqueued */
    max_align_t data[];
} ocl_staged;

int ocl_staged_read(ocl_ctx *ctx, cl_mem buf, size_t offset, size_t bytes, void *out) {
    int found = 0;
    pthread_mutex_lock(&ctx->lock);
    /* newest first: the first write touching the range decides */
    for (ocl_staged *sb = ctx->staged; sb; sb = sb->next) {
        if (sb->buf != buf || sb->offset >= offset + bytes || offset >= sb->offset + sb->bytes)
            continue;
        if (!sb->half && sb->offset <= offset && offset + bytes <= sb->offset + sb->bytes &&
            sb->launch == atomic_load(&ctx->n_launch)) {
            memcpy(out, (const char *)sb->data + (offset - sb->offset), bytes);
            found = 1;
        }
        break;
    }
    pthread_mutex_unlock(&ctx->lock);
    return found;
}

/* Frees a list of staged uploads. */
static void free_staged(ocl_staged *sb) {
    while (sb) {
        ocl_staged *next = sb->next;
        free(sb);
        sb = next;
    }
}

static void ocl_shutdown(void *vctx) {
    ocl_ctx *ctx = vctx;
    if (!ctx)
        return;
    if (ctx->queue)
        clFinish(ctx->queue);
    free_staged(ctx->staged);
    ocl_release_program(ctx);
    ocl_tune_free(ctx);
    if (ctx->queue)
        clReleaseCommandQueue(ctx->queue);
    if (ctx->context) {
        ocl_context_end();
        clReleaseContext(ctx->context);
    }
    if (ctx->lock_ready)
        pthread_mutex_destroy(&ctx->lock);
    free(ctx);
}

/* Options: comma-separated key=value; device=P:D|N|name, cache=0|1,
 * fp16=0|1 (*fp16 stays -1 when not given), gemm=auto|own|clblast|local1|local2,
 * kernel_copies=0|1 (every device write a kernel: for oclgrind's
 * uninitialised-value checker, upload_by_kernel). */
static int parse_gemm_mode(const char *v) {
    return !strcmp(v, "auto") ? OCL_GEMM_AUTO : !strcmp(v, "own") ? OCL_GEMM_OWN
           : !strcmp(v, "clblast") ? OCL_GEMM_CLBLAST : !strcmp(v, "local1") ? OCL_GEMM_LOCAL1
           : !strcmp(v, "local2") ? OCL_GEMM_LOCAL2 : -1;
}

static minfer_status parse_options(ocl_ctx *ctx, const char *options, char *device,
                                   size_t dsize, int *fp16) {
    char buf[512];
    device[0] = '\0';
    *fp16 = -1;
    if (!options || !options[0])
        return MINFER_OK;
    if (strlen(options) >= sizeof buf) {
        ctx->api->set_error(ctx->host, "opencl: provider options too long");
        return MINFER_ERR_INVALID_ARG;
    }
    strcpy(buf, options);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            ctx->api->set_error(ctx->host, "opencl: option '%s' is not key=value", tok);
            return MINFER_ERR_INVALID_ARG;
        }
        *eq = '\0';
        if (strcmp(tok, "device") == 0) {
            snprintf(device, dsize, "%s", eq + 1);
        } else if (strcmp(tok, "cache") == 0 && (!strcmp(eq + 1, "0") || !strcmp(eq + 1, "1"))) {
            ctx->use_cache = eq[1] == '1';
        } else if (strcmp(tok, "fp16") == 0 && (!strcmp(eq + 1, "0") || !strcmp(eq + 1, "1"))) {
            *fp16 = eq[1] == '1';
        } else if (strcmp(tok, "gemm") == 0 && parse_gemm_mode(eq + 1) >= 0) {
            ctx->gemm_mode = parse_gemm_mode(eq + 1);
        } else if (strcmp(tok, "kernel_copies") == 0 &&
                   (!strcmp(eq + 1, "0") || !strcmp(eq + 1, "1"))) {
            ctx->kernel_copies = eq[1] == '1';
        } else {
            ctx->api->set_error(ctx->host, "opencl: unknown option '%s=%s' (keys: device=P:D, "
                                "device=N or device=NAME, cache=0|1, fp16=0|1, "
                                "gemm=auto|own|clblast|local1|local2, "
                                "kernel_copies=0|1)", tok, eq + 1);
            return MINFER_ERR_INVALID_ARG;
        }
    }
    return MINFER_OK;
}

static minfer_status ocl_init(const minfer_host_api *api, void *host, const char *options,
                              void **out) {
    *out = NULL;
    if (!api || !api->set_error || !api->log)
        return MINFER_ERR_INVALID_ARG;
    long dup = MINFER_KIT_TABLE_DUPLICATE(ocl_kernel_entry, kernels, N_KERNELS);
    if (dup >= 0) {
        api->set_error(host, "opencl: kernel table lists %s version %lld twice",
                       kernels[dup].op_type, (long long)kernels[dup].since_version);
        return MINFER_ERR_PROVIDER;
    }
    ocl_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        api->set_error(host, "opencl: out of memory");
        return MINFER_ERR_NOMEM;
    }
    ctx->api = api;
    ctx->host = host;
    ctx->use_cache = 1;
    if (pthread_mutex_init(&ctx->lock, NULL) != 0) {
        free(ctx);
        api->set_error(host, "opencl: cannot create a mutex");
        return MINFER_ERR_PROVIDER;
    }
    ctx->lock_ready = 1;
    char device[256];
    int fp16 = -1;
    ctx->gemm_mode = -1;
    ctx->kernel_copies = -1;
    minfer_status st = parse_options(ctx, options, device, sizeof device, &fp16);
    const char *env_fp16 = getenv("MINFER_OPENCL_FP16");
    if (st == MINFER_OK && fp16 < 0 && env_fp16 && env_fp16[0]) {
        if (strcmp(env_fp16, "0") != 0 && strcmp(env_fp16, "1") != 0) {
            api->set_error(host, "opencl: MINFER_OPENCL_FP16='%s' is neither 0 nor 1", env_fp16);
            st = MINFER_ERR_INVALID_ARG;
        }
        fp16 = env_fp16[0] == '1';
    }
    ctx->fp16 = fp16 > 0;
    const char *env_gemm = getenv("MINFER_OPENCL_GEMM");
    if (st == MINFER_OK && ctx->gemm_mode < 0 && env_gemm && env_gemm[0] &&
        (ctx->gemm_mode = parse_gemm_mode(env_gemm)) < 0) {
        api->set_error(host, "opencl: MINFER_OPENCL_GEMM='%s' is not auto, own, clblast, "
                       "local1 or local2", env_gemm);
        st = MINFER_ERR_INVALID_ARG;
    }
    if (ctx->gemm_mode < 0)
        ctx->gemm_mode = OCL_GEMM_AUTO;
    const char *env_kc = getenv("MINFER_OPENCL_KERNEL_COPIES");
    if (st == MINFER_OK && ctx->kernel_copies < 0 && env_kc && env_kc[0]) {
        if (strcmp(env_kc, "0") != 0 && strcmp(env_kc, "1") != 0) {
            api->set_error(host, "opencl: MINFER_OPENCL_KERNEL_COPIES='%s' is neither 0 nor 1",
                           env_kc);
            st = MINFER_ERR_INVALID_ARG;
        }
        ctx->kernel_copies = env_kc[0] == '1';
    }
    if (ctx->kernel_copies < 0)
        ctx->kernel_copies = 0;
    const char *env = getenv("MINFER_OPENCL_DEVICE");
    if (st == MINFER_OK)
        st = device[0] ? choose_device(ctx, device, "option device=")
                       : choose_device(ctx, env, "MINFER_OPENCL_DEVICE");
    if (st != MINFER_OK)
        goto fail;
    cl_uint align_bits = 0, unified = 0;
    cl_bool avail = CL_FALSE, compiler = CL_FALSE;
    clGetDeviceInfo(ctx->device, CL_DEVICE_AVAILABLE, sizeof avail, &avail, NULL);
    clGetDeviceInfo(ctx->device, CL_DEVICE_COMPILER_AVAILABLE, sizeof compiler, &compiler, NULL);
    clGetDeviceInfo(ctx->device, CL_DRIVER_VERSION, sizeof ctx->driver_version,
                    ctx->driver_version, NULL);
    ctx->driver_version[sizeof ctx->driver_version - 1] = '\0';
    clGetDeviceInfo(ctx->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align_bits, &align_bits,
                    NULL);
    clGetDeviceInfo(ctx->device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
    clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof ctx->max_wg,
                    &ctx->max_wg, NULL);
    cl_ulong v = 0;
    clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof v, &v, NULL);
    ctx->max_alloc = v;
    v = 0;
    clGetDeviceInfo(ctx->device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof v, &v, NULL);
    ctx->local_mem = v;
    if (!avail || !compiler) {
        api->set_error(host, "opencl: device '%s' is %s", ctx->device_name,
                       !avail ? "not available" : "without an OpenCL C compiler");
        st = MINFER_ERR_PROVIDER;
        goto fail;
    }
    ctx->align = align_bits / 8 ? align_bits / 8 : 4;
    ctx->khr_fp16 = has_extension(ctx->device, "cl_khr_fp16");
    /* Half storage uses only vload_half / vstore_half, core OpenCL since
     * 1.0: it needs no cl_khr_fp16, so every device takes fp16=1. */
    if (ctx->fp16)
        api->log(host, MINFER_LOG_INFO, "opencl: float tensors stored as half on '%s' "
                 "(compute in float; the device %s cl_khr_fp16, which this does not need)",
                 ctx->device_name, ctx->khr_fp16 ? "reports" : "does not report");
    ctx->unified = unified != 0;
    ctx->is_cpu = (ctx->type & CL_DEVICE_TYPE_CPU) != 0;
    /* Register tile and launch shapes from the device's answers (device.c;
     * the preferred work-group multiple follows with the program). */
    ocl_devinfo *dv = &ctx->dev;
    cl_uint cu = 0, vec = 0;
    dv->is_cpu = ctx->is_cpu;
    dv->max_wg = ctx->max_wg ? ctx->max_wg : 1;
    if (clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof dv->max_items,
                        dv->max_items, NULL) != CL_SUCCESS)
        dv->max_items[0] = dv->max_items[1] = dv->max_items[2] = dv->max_wg;
    clGetDeviceInfo(ctx->device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
    clGetDeviceInfo(ctx->device, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, sizeof vec, &vec, NULL);
    dv->compute_units = cu;
    dv->vec_float = vec;
    dv->local_mem = ctx->local_mem;
    dv->wg_multiple = 1;
    /* Tests: a GPU's launch shapes (groups of a 32-wide warp, padded
     * global sizes, the 4 x 8 tile) on whatever device runs, so oclgrind
     * checks the bounds a GPU's launches need. */
    const char *env_launch = getenv("MINFER_OPENCL_LAUNCH");
    if (env_launch && env_launch[0] && strcmp(env_launch, "gpu") != 0 &&
        strcmp(env_launch, "device") != 0) {
        api->set_error(host, "opencl: MINFER_OPENCL_LAUNCH='%s' is neither gpu nor device",
                       env_launch);
        st = MINFER_ERR_INVALID_ARG;
        goto fail;
    }
    if (env_launch && strcmp(env_launch, "gpu") == 0) {
        ctx->launch_gpu = 1;
        dv->is_cpu = 0;
        api->log(host, MINFER_LOG_INFO, "opencl: MINFER_OPENCL_LAUNCH=gpu: launch shapes "
                 "and register tile of a GPU");
    }
    ocl_pick_tile(dv, &ctx->vw, &ctx->mr);
    api->log(host, MINFER_LOG_VERBOSE, "opencl: '%s': %s, %u compute units, work-groups up to "
             "%zu, float vectors of %u: register tile %d x %d", ctx->device_name,
             ctx->is_cpu ? "CPU" : "not a CPU", cu, dv->max_wg, vec, ctx->mr, 2 * ctx->vw);
    if (ctx->align > 256)
        api->log(host, MINFER_LOG_INFO, "opencl: device base alignment %zu bytes is above the "
                 "provider's 256; kernels take element offsets, so this only costs speed",
                 ctx->align);
    cl_int err;
    ctx->context = clCreateContext(NULL, 1, &ctx->device, NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        api->set_error(host, "opencl: clCreateContext on '%s': %s", ctx->device_name,
                       ocl_err_str(err));
        st = MINFER_ERR_PROVIDER;
        goto fail;
    }
    ocl_context_begin();
    ctx->queue = clCreateCommandQueue(ctx->context, ctx->device, 0, &err);
    if (err != CL_SUCCESS) {
        api->set_error(host, "opencl: clCreateCommandQueue on '%s': %s", ctx->device_name,
                       ocl_err_str(err));
        st = MINFER_ERR_PROVIDER;
        goto fail;
    }
    *out = ctx;
    return MINFER_OK;
fail:
    ocl_shutdown(ctx);
    return st;
}

/* ---- Nodes ----------------------------------------------------------------------- */

static const ocl_kernel_entry *find_kernel(const minfer_node_desc *node, char *why,
                                           size_t why_size) {
    return MINFER_KIT_FIND_KERNEL(ocl_kernel_entry, kernels, N_KERNELS, node, "OpenCL kernel",
                                  why, why_size);
}

static int ocl_supports(void *ctx, const minfer_node_desc *node, char *why, size_t why_size) {
    char buf[256];
    why = minfer_kit_why(why, &why_size, buf, sizeof buf);
    const ocl_kernel_entry *k = find_kernel(node, why, why_size);
    if (!k)
        return 0;
    ocl_prep p = {ctx, node, NULL, k->since_version, why, why_size, NULL};
    minfer_status st = k->prepare(&p);
    ocl_state_free(p.state);
    return st == MINFER_OK;
}

static minfer_status ocl_prepare_node(void *vctx, const minfer_node_desc *node,
                                      minfer_node_prep *prep, void **node_state) {
    ocl_ctx *ctx = vctx;
    char why[512] = "";
    *node_state = NULL;
    const ocl_kernel_entry *k = find_kernel(node, why, sizeof why);
    if (k) {
        /* The host builds plans one at a time, but the provider does not
         * rely on it: the program is built once, under the instance's lock. */
        pthread_mutex_lock(&ctx->lock);
        minfer_status st = ctx->program ? MINFER_OK : ocl_build_program(ctx);
        pthread_mutex_unlock(&ctx->lock);
        if (st != MINFER_OK)
            return st;
    }
    return minfer_kit_prepare_node(&skeleton, ctx->api, ctx->host, ctx, k, node, prep,
                                   node_state, why, sizeof why);
}

static void ocl_release_node(void *ctx, void *node_state) {
    (void)ctx;
    minfer_kit_release_node(&skeleton, node_state);
}

static minfer_status ocl_execute_node(void *vctx, void *node_state,
                                      const minfer_exec_args *args) {
    ocl_ctx *ctx = vctx;
    const minfer_kit_node *n = node_state;
    ocl_exec e = {ctx, n ? n->op_state : NULL, args, NULL};
    if (!n)
        return ocl_fail(&e, MINFER_ERR_RUNTIME, "node was not prepared");
    for (size_t i = 0; i < args->n_inputs; i++) {
        const minfer_tensor_view *v = &args->inputs[i];
        if (v->rank < 0)
            continue;
        if (v->rank > OCL_MAX_RANK || v->kind != MINFER_VALUE_TENSOR || v->layout != 0)
            return ocl_fail(&e, MINFER_ERR_UNSUPPORTED,
                            "input %zu is not a plain tensor of rank <= %d", i, OCL_MAX_RANK);
        const ocl_state_head *h = n->op_state;
        int uploaded = h && i < OCL_STATE_BUFS && h->bufs[i] != NULL;
        if (!v->data && !uploaded && ocl_numel(v->rank, v->dims) > 0)
            return ocl_fail(&e, MINFER_ERR_RUNTIME, "input %zu has no device buffer", i);
    }
    ocl_kset *ks = ocl_kset_take(ctx);
    if (!ks)
        return MINFER_ERR_PROVIDER;
    e.k = ks->k;
    minfer_status st = ((const ocl_kernel_entry *)n->entry)->execute(&e);
    ocl_kset_give(ctx, ks);
    return st;
}

/* ---- Memory domain ------------------------------------------------------------------- */

static minfer_status ocl_mem_alloc(void *vctx, size_t bytes, void **buffer) {
    ocl_ctx *ctx = vctx;
    *buffer = NULL;
    if (bytes > ctx->max_alloc) {
        ctx->api->set_error(ctx->host, "opencl: %zu bytes exceed the largest buffer of '%s' "
                            "(%llu bytes)", bytes, ctx->device_name,
                            (unsigned long long)ctx->max_alloc);
        return MINFER_ERR_LIMIT;
    }
    cl_int err;
    cl_mem_flags flags = CL_MEM_READ_WRITE | (ctx->unified ? CL_MEM_ALLOC_HOST_PTR : 0);
    cl_mem m = clCreateBuffer(ctx->context, flags, bytes ? bytes : 4, NULL, &err);
    if (err != CL_SUCCESS) {
        ctx->api->set_error(ctx->host, "opencl: allocating %zu bytes on '%s': %s", bytes,
                            ctx->device_name, ocl_err_str(err));
        return MINFER_ERR_NOMEM;
    }
    *buffer = m;
    return MINFER_OK;
}

static void ocl_mem_free(void *ctx, void *buffer) {
    (void)ctx;
    if (buffer)
        clReleaseMemObject((cl_mem)buffer);
}

/* Plain transfers of at most this many bytes never map the buffer: a
 * blocking map waits until the queue has run everything before it, and
 * its unmap is one more command for the next transfer to wait behind
 * (PoCL hands each to its worker thread and back). A small upload is
 * staged and enqueued without blocking, a small download is one blocking
 * read. A Loop body on the device pays for every carried value each
 * iteration: 1000 iterations of a 16-float Add body on PoCL took 44-55 ms
 * with maps, 31-40 ms without (minimum of 21 runs, 5 alternating rounds,
 * load 5-8; docs/opencl.md). Larger transfers keep the map: one copy, no
 * staging block. */
#define OCL_STAGE_ALWAYS_BYTES ((size_t)64 << 10)

/* Copies bytes (as stored on the device) from the device at buf + offset
 * to host, waiting for them. With half != 0 the device holds half
 * elements and the host floats (bytes / 2 of them), converted on the way:
 * in the mapped buffer where the device shares host memory, else through
 * a staging block; a small plain copy is one read (above). */

static minfer_status download(ocl_ctx *ctx, cl_mem buf, size_t offset, size_t bytes,
                              void *host, int half) {
    if (bytes == 0)
        return MINFER_OK;
    cl_int err;
    size_t n = bytes / 2;
    ocl_count_transfer(ctx);
    ocl_count_wait(ctx); /* every path below blocks until the bytes are there */
    if (ctx->unified && (half || bytes > OCL_STAGE_ALWAYS_BYTES)) {
        void *p = clEnqueueMapBuffer(ctx->queue, buf, CL_TRUE, CL_MAP_READ, offset, bytes, 0,
                                     NULL, NULL, &err);
        if (err == CL_SUCCESS) {
            if (half)
                for (size_t i = 0; i < n; i++)
                    ((float *)host)[i] = ocl_h2f(((const uint16_t *)p)[i]);
            else
                memcpy(host, p, bytes);
            err = clEnqueueUnmapMemObject(ctx->queue, buf, p, 0, NULL, NULL);
        }
    } else {
        uint16_t *stage = NULL;
        if (half && !(stage = malloc(bytes))) {
            ctx->api->set_error(ctx->host, "opencl: out of memory staging %zu bytes", bytes);
            return MINFER_ERR_NOMEM;
        }
        err = clEnqueueReadBuffer(ctx->queue, buf, CL_TRUE, offset, bytes,
                                  half ? (void *)stage : host, 0, NULL, NULL);
        for (size_t i = 0; half && err == CL_SUCCESS && i < n; i++)
            ((float *)host)[i] = ocl_h2f(stage[i]);
        free(stage);
    }
    if (err != CL_SUCCESS) {
        ctx->api->set_error(ctx->host, "opencl: copying %zu bytes from the device: %s", bytes,
                            ocl_err_str(err));
        return MINFER_ERR_PROVIDER;
    }
    return MINFER_OK;
}

/* With kernel_copies=1: the bytes (already staged in host memory) go to
 * a buffer of their own, written whole at its creation, and copy_bytes
 * moves them to buf + offset. oclgrind 21.10's uninitialised-value
 * checker loses track of a buffer written at an offset by a host command
 * (its shadow of the whole buffer is replaced by one the size of the
 * write: ShadowMemory::allocate in plugins/Uninitialized.cpp), while it
 * tracks whole-buffer creation and kernel stores. 0, or -1 when this path
 * is not available (no program yet, an offset beyond int) and the caller
 * writes as usual. */
static int upload_by_kernel(ocl_ctx *ctx, cl_mem buf, size_t offset, size_t bytes,
                            const void *data, minfer_status *st) {
    if (!ctx->program || offset > INT32_MAX || bytes > INT32_MAX)
        return -1;
    cl_int err;
    cl_mem tmp = clCreateBuffer(ctx->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                                (void *)data, &err);
    if (err != CL_SUCCESS) {
        ctx->api->set_error(ctx->host, "opencl: staging %zu bytes: %s", bytes, ocl_err_str(err));
        *st = MINFER_ERR_NOMEM;
        return 0;
    }
    ocl_kset *ks = ocl_kset_take(ctx);
    if (!ks) {
        clReleaseMemObject(tmp);
        *st = MINFER_ERR_PROVIDER;
        return 0;
    }
    cl_int zero = 0, off = (cl_int)offset, n = (cl_int)bytes;
    cl_kernel k = ks->k[OCL_K_copy_bytes];
    size_t g = bytes;
    err = clSetKernelArg(k, 0, sizeof tmp, &tmp);
    err |= clSetKernelArg(k, 1, sizeof zero, &zero);
    err |= clSetKernelArg(k, 2, sizeof buf, &buf);
    err |= clSetKernelArg(k, 3, sizeof off, &off);
    err |= clSetKernelArg(k, 4, sizeof n, &n);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &g, NULL, 0, NULL, NULL);
    ocl_kset_give(ctx, ks);
    clReleaseMemObject(tmp); /* freed once the copy has run */
    if (err != CL_SUCCESS) {
        ctx->api->set_error(ctx->host, "opencl: copying %zu bytes to the device by kernel: %s",
                            bytes, ocl_err_str(err));
        *st = MINFER_ERR_PROVIDER;
        return 0;
    }
    ocl_count_transfer(ctx);
    ocl_count_launch(ctx);
    *st = MINFER_OK;
    return 0;
}

/* Copies bytes (as stored on the device) from host to buf + offset
 * (converted to half when half != 0, the host holding bytes / 2 floats)
 * without waiting for device work:
 *  - where the device shares host memory and no command of this instance
 *    may still run (the start of a run, or just after a download), the
 *    buffer is mapped and written in place: the map has nothing to wait
 *    for, and PoCL serves it on the calling thread (a handed-off write
 *    waited for a worker thread, which on a loaded machine made
 *    tiny_encoder's crossings up to 4x slower);
 *  - otherwise, and for every upload of at most OCL_STAGE_ALWAYS_BYTES
 *    (above), the data is copied into a staging block whose write is
 *    enqueued; the block is freed by the next synchronize, whose clFinish
 *    has seen the write done. The caller may reuse its memory at once,
 *    and a value crossing from the host mid-run does not drain the queue. */
static minfer_status upload(ocl_ctx *ctx, cl_mem buf, size_t offset, size_t bytes,
                            const void *host, int half) {
    if (bytes == 0)
        return MINFER_OK;
    if (ctx->unified && !ctx->kernel_copies && !atomic_load(&ctx->pending) &&
        (bytes > OCL_STAGE_ALWAYS_BYTES)) {
        cl_int err;
        void *p = clEnqueueMapBuffer(ctx->queue, buf, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION,
                                     offset, bytes, 0, NULL, NULL, &err);
        if (err == CL_SUCCESS) {
            if (half)
                for (size_t i = 0; i < bytes / 2; i++)
                    ((uint16_t *)p)[i] = ocl_f2h(((const float *)host)[i]);
            else
                memcpy(p, host, bytes);
            err = clEnqueueUnmapMemObject(ctx->queue, buf, p, 0, NULL, NULL);
        }
        if (err != CL_SUCCESS) {
            ctx->api->set_error(ctx->host, "opencl: copying %zu bytes to the device: %s", bytes,
                                ocl_err_str(err));
            return MINFER_ERR_PROVIDER;
        }
        /* The unmap is queued but waits for nothing: like a download's,
         * it does not count as pending device work. Staged copies of
         * these bytes are stale now (ocl_staged_read). */
        pthread_mutex_lock(&ctx->lock);
        for (ocl_staged *sb = ctx->staged; sb; sb = sb->next)
            if (sb->buf == buf && sb->offset < offset + bytes && offset < sb->offset + sb->bytes)
                sb->buf = NULL;
        pthread_mutex_unlock(&ctx->lock);
        ocl_count_transfer(ctx);
        return MINFER_OK;
    }
    ocl_staged *sb = malloc(sizeof *sb + bytes);
    if (!sb) {
        ctx->api->set_error(ctx->host, "opencl: out of memory staging %zu bytes", bytes);
        return MINFER_ERR_NOMEM;
    }
    if (half)
        for (size_t i = 0; i < bytes / 2; i++)
            ((uint16_t *)sb->data)[i] = ocl_f2h(((const float *)host)[i]);
    else
        memcpy(sb->data, host, bytes);
    minfer_status st;
    if (ctx->kernel_copies && upload_by_kernel(ctx, buf, offset, bytes, sb->data, &st) == 0) {
        free(sb);
        return st;
    }
    cl_int err = clEnqueueWriteBuffer(ctx->queue, buf, CL_FALSE, offset, bytes, sb->data, 0,
                                      NULL, NULL);
    if (err != CL_SUCCESS) {
        free(sb);
        ctx->api->set_error(ctx->host, "opencl: copying %zu bytes to the device: %s", bytes,
                            ocl_err_str(err));
        return MINFER_ERR_PROVIDER;
    }
    sb->buf = buf;
    sb->offset = offset;
    sb->bytes = bytes;
    sb->half = half;
    pthread_mutex_lock(&ctx->lock);
    sb->launch = atomic_load(&ctx->n_launch);
    sb->next = ctx->staged;
    ctx->staged = sb;
    pthread_mutex_unlock(&ctx->lock);
    ocl_count_transfer(ctx);
    atomic_store(&ctx->pending, 1);
    return MINFER_OK;
}

/* Device bytes of host_bytes plain bytes of dtype; sets *half when they convert. */
static size_t device_bytes(const ocl_ctx *ctx, int32_t dtype, size_t host_bytes, int *half) {
    *half = ctx->fp16 && dtype == MINFER_DTYPE_FLOAT;
    return *half ? host_bytes / sizeof(float) * 2 : host_bytes;
}

static minfer_status ocl_copy_to_host(void *vctx, const minfer_tensor_view *src, void *dst,
                                      size_t dst_bytes) {
    ocl_ctx *ctx = vctx;
    int half;
    size_t bytes = device_bytes(ctx, src->dtype, dst_bytes, &half);
    if (src->layout != 0 || bytes > src->nbytes || (half && dst_bytes % sizeof(float))) {
        ctx->api->set_error(ctx->host, "opencl: copy_to_host of %zu bytes from a view of %zu "
                            "(layout %llu)", dst_bytes, src->nbytes,
                            (unsigned long long)src->layout);
        return MINFER_ERR_INVALID_ARG;
    }
    return download(ctx, (cl_mem)src->data, src->offset, bytes, dst, half);
}

static minfer_status ocl_copy_from_host(void *vctx, const void *src, size_t src_bytes,
                                        const minfer_tensor_view *dst) {
    ocl_ctx *ctx = vctx;
    int half;
    size_t bytes = device_bytes(ctx, dst->dtype, src_bytes, &half);
    if (dst->layout != 0 || bytes > dst->nbytes || (half && src_bytes % sizeof(float))) {
        ctx->api->set_error(ctx->host, "opencl: copy_from_host of %zu bytes into a view of %zu "
                            "(layout %llu)", src_bytes, dst->nbytes,
                            (unsigned long long)dst->layout);
        return MINFER_ERR_INVALID_ARG;
    }
    return upload(ctx, (cl_mem)dst->data, dst->offset, bytes, src, half);
}

/* A device value copied to another without the host (the host's device
 * values: a run's output delivered into one). Both are this domain's
 * storage (plain; float as half with fp16), so the copy is of bytes; it
 * is queued on the in-order queue like the run's kernels, so later work
 * and downloads see it done. */
static size_t ocl_tensor_bytes(void *vctx, const minfer_tensor_view *desc);
static minfer_status ocl_copy_in_domain(void *vctx, const minfer_tensor_view *src,
                                        const minfer_tensor_view *dst) {
    ocl_ctx *ctx = vctx;
    size_t bytes = ocl_tensor_bytes(ctx, src);
    if (src->layout != 0 || dst->layout != 0 || src->dtype != dst->dtype ||
        bytes == SIZE_MAX || bytes > src->nbytes || bytes > dst->nbytes) {
        ctx->api->set_error(ctx->host, "opencl: copy_in_domain of %zu bytes from a view of %zu "
                            "into one of %zu (layouts %llu, %llu)", bytes, src->nbytes,
                            dst->nbytes, (unsigned long long)src->layout,
                            (unsigned long long)dst->layout);
        return MINFER_ERR_INVALID_ARG;
    }
    if (bytes == 0 || (src->data == dst->data && src->offset == dst->offset))
        return MINFER_OK;
    cl_mem from = (cl_mem)src->data, to = (cl_mem)dst->data;
    cl_int err;
    if (ctx->kernel_copies) { /* every device write a kernel (oclgrind) */
        if (src->offset > INT32_MAX || dst->offset > INT32_MAX || bytes > INT32_MAX) {
            ctx->api->set_error(ctx->host, "opencl: a copy of %zu bytes at offset %zu is "
                                "beyond kernel_copies=1's 2 GiB", bytes, dst->offset);
            return MINFER_ERR_LIMIT;
        }
        ocl_kset *ks = ocl_kset_take(ctx);
        if (!ks) {
            ctx->api->set_error(ctx->host, "opencl: out of memory for kernel objects");
            return MINFER_ERR_NOMEM;
        }
        cl_int so = (cl_int)src->offset, dof = (cl_int)dst->offset, n = (cl_int)bytes;
        cl_kernel k = ks->k[OCL_K_copy_bytes];
        size_t g = bytes;
        err = clSetKernelArg(k, 0, sizeof from, &from);
        err |= clSetKernelArg(k, 1, sizeof so, &so);
        err |= clSetKernelArg(k, 2, sizeof to, &to);
        err |= clSetKernelArg(k, 3, sizeof dof, &dof);
        err |= clSetKernelArg(k, 4, sizeof n, &n);
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(ctx->queue, k, 1, NULL, &g, NULL, 0, NULL, NULL);
        ocl_kset_give(ctx, ks);
    } else
        err = clEnqueueCopyBuffer(ctx->queue, from, to, src->offset, dst->offset, bytes, 0,
                                  NULL, NULL);
    if (err != CL_SUCCESS) {
        ctx->api->set_error(ctx->host, "opencl: copying %zu bytes on the device: %s", bytes,
                            ocl_err_str(err));
        return MINFER_ERR_PROVIDER;
    }
    ocl_count_launch(ctx);
    /* host-side copies of the destination's old bytes are stale now */
    pthread_mutex_lock(&ctx->lock);
    for (ocl_staged *sb = ctx->staged; sb; sb = sb->next)
        if (sb->buf == dst->data && sb->offset < dst->offset + bytes &&
            dst->offset < sb->offset + sb->bytes)
            sb->buf = NULL;
    pthread_mutex_unlock(&ctx->lock);
    atomic_store(&ctx->pending, 1);
    return MINFER_OK;
}

/* Storage of a tensor in this domain: float takes 2 bytes an element with
 * fp16, every other type its plain size. */
static size_t ocl_tensor_bytes(void *vctx, const minfer_tensor_view *desc) {
    const ocl_ctx *ctx = vctx;
    int64_t n;
    size_t es = ocl_esize(ctx, desc->dtype), bytes;
    if (!es) /* no op of this provider makes one; never less than the host counts */
        es = desc->dtype == MINFER_DTYPE_COMPLEX128 ? 16 : 8;
    /* SIZE_MAX, never a wrapped count, when it does not fit: the host
     * then refuses the plan. */
    if (minfer_dims_numel(desc->dims, desc->rank, &n) != MINFER_OK ||
        minfer_size_mul((size_t)n, es, &bytes) != MINFER_OK)
        return SIZE_MAX;
    return bytes;
}

static minfer_status ocl_synchronize(void *vctx) {
    ocl_ctx *ctx = vctx;
    /* Uploads staged before the clFinish are done after it (their writes
     * were enqueued before they were listed). */
    pthread_mutex_lock(&ctx->lock);
    ocl_staged *done = ctx->staged;
    ctx->staged = NULL;
    pthread_mutex_unlock(&ctx->lock);
    ocl_count_wait(ctx);
    cl_int err = clFinish(ctx->queue);
    free_staged(done);
    if (err != CL_SUCCESS) {
        ctx->api->set_error(ctx->host, "opencl: clFinish: %s", ocl_err_str(err));
        return MINFER_ERR_PROVIDER;
    }
    /* The end of a run: what was counted since the previous one is this
     * run's. */
    ocl_count_run_end(ctx);
    return MINFER_OK;
}

/* memory_alignment is fixed in the (static) vtable while the device's
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN is only known at init, per instance; the
 * ABI has no per-instance alignment, and writing the shared vtable from
 * init would be a global that two sessions on two devices race on. 256
 * bytes covers the devices in use (PoCL 128, most GPUs 128-256). The
 * kernels take element offsets, never sub-buffers, so a device wanting
 * more is still correct (init logs it). */
static int32_t ocl_describe_device(void *vctx, char *buf, size_t size) {
    const ocl_ctx *ctx = vctx;
    snprintf(buf, size, "%s '%s' (platform '%s')",
             ctx->type & CL_DEVICE_TYPE_GPU   ? "GPU"
             : ctx->type & CL_DEVICE_TYPE_CPU ? "CPU"
                                              : "device",
             ctx->device_name, ctx->platform_name);
    return ctx->type & CL_DEVICE_TYPE_GPU   ? MINFER_DEVICE_GPU
           : ctx->type & CL_DEVICE_TYPE_CPU ? MINFER_DEVICE_CPU
                                            : MINFER_DEVICE_OTHER;
}

static const minfer_provider ocl_provider = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "opencl",
    .version = "0.1.0",
    .init = ocl_init,
    .shutdown = ocl_shutdown,
    .supports_operator = ocl_supports,
    .prepare_node = ocl_prepare_node,
    .release_node = ocl_release_node,
    .execute_node = ocl_execute_node,
    .memory_domain = "opencl",
    .memory_alignment = 256,
    .mem_alloc = ocl_mem_alloc,
    .mem_free = ocl_mem_free,
    .copy_to_host = ocl_copy_to_host,
    .copy_from_host = ocl_copy_from_host,
    .synchronize = ocl_synchronize,
    .tensor_bytes = ocl_tensor_bytes,
    .describe_device = ocl_describe_device,
    .run_counters = ocl_run_counters,
    .copy_in_domain = ocl_copy_in_domain,
};

MINFER_PROVIDER_DEFINE(ocl_provider)
