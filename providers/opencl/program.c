/*
 * Building the program, with a disk cache of program binaries.
 *
 * 1. The build options fix the register tile for the device (VW, MR: see
 *    kernels/common.cl) and, with fp16=1, define FP16 (half storage).
 * 2. The cache key is a 64-bit FNV-1a hash of the device name, the driver
 *    and platform versions, the options and the source. The binary lives
 *    in $XDG_CACHE_HOME/minfer (else ~/.cache/minfer) as opencl-KEY.bin.
 * 3. A cached binary is loaded and built; if that fails for any reason the
 *    source is compiled as if there were no cache. A failed source build
 *    reports the build log.
 * 4. After a source build the binary is written to a temporary file and
 *    renamed into place, so concurrent sessions never read half a file.
 * 5. One set of kernel objects is created with the program, and the
 *    work-group limit of each kernel read from it; more sets are created
 *    when concurrent runs execute more nodes at once than there are sets
 *    (ocl_kset_take; OpenCL 1.2 has no clCloneKernel, and a clone would
 *    only save the name lookup).
 * 6. PoCL also compiles each kernel for its launch configuration at the
 *    first enqueue (about 4 s for the whole set here); that code is not in
 *    the program binary but in PoCL's own kernel cache (POCL_CACHE_DIR,
 *    default ~/.cache/pocl), which is on by default.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* header-only (libxxhash-dev's xxhash.h): the provider links only the
 * OpenCL ICD loader */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "ocl.h"

extern const char minfer_ocl_source[];

static const char *const kernel_names[OCL_K_COUNT] = {
#define X(k) #k,
    OCL_KERNELS(X)
#undef X
};

uint64_t ocl_cache_key(uint64_t h, const char *s) {
    return XXH3_64bits_withSeed(s, strlen(s) + 1, h);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int ocl_cache_dir(char *buf, size_t size) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char base[512];
    if (xdg && xdg[0] == '/')
        snprintf(base, sizeof base, "%s", xdg);
    else if (home && home[0])
        snprintf(base, sizeof base, "%s/.cache", home);
    else
        return -1;
    if (mkdir(base, 0700) != 0 && errno != EEXIST)
        return -1;
    if ((size_t)snprintf(buf, size, "%s/minfer", base) >= size)
        return -1;
    if (mkdir(buf, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *data = NULL;
    long n;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (data = malloc((size_t)n)) && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *len = data ? (size_t)n : 0;
    return data;
}

static cl_program from_binary(ocl_ctx *ctx, const char *path, const char *opts) {
    size_t len;
    unsigned char *bin = read_file(path, &len);
    if (!bin)
        return NULL;
    cl_int err, status;
    const unsigned char *bins[1] = {bin};
    cl_program prog = clCreateProgramWithBinary(ctx->context, 1, &ctx->device, &len, bins,
                                                &status, &err);
    free(bin);
    if (err != CL_SUCCESS || status != CL_SUCCESS)
        goto fail;
    if (clBuildProgram(prog, 1, &ctx->device, opts, NULL, NULL) != CL_SUCCESS)
        goto fail;
    return prog;
fail:
    if (prog)
        clReleaseProgram(prog);
    ctx->api->log(ctx->host, MINFER_LOG_INFO,
                  "opencl: cached program %s is unusable, compiling from source", path);
    return NULL;
}

static void save_binary(ocl_ctx *ctx, cl_program prog, const char *path) {
    size_t len = 0;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS ||
        len == 0)
        return;
    unsigned char *bin = malloc(len);
    unsigned char *bins[1] = {bin};
    char tmp[1100];
    /* Unique to this instance: two sessions of one process may save the
     * same binary at once. */
    snprintf(tmp, sizeof tmp, "%s.%ld.%p.tmp", path, (long)getpid(), (void *)ctx);
    FILE *f = NULL;
    if (bin && clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS &&
        (f = fopen(tmp, "wb"))) {
        int ok = fwrite(bin, 1, len, f) == len;
        ok = fclose(f) == 0 && ok;
        if (!ok || rename(tmp, path) != 0) {
            remove(tmp);
            ctx->api->log(ctx->host, MINFER_LOG_INFO, "opencl: could not write %s", path);
        }
    }
    free(bin);
}

/* A new kernel set, in the list of every set (the caller holds ctx->lock);
 * NULL with the host's error set. */
static ocl_kset *new_kset(ocl_ctx *ctx) {
    ocl_kset *ks = calloc(1, sizeof *ks);
    if (!ks) {
        ctx->api->set_error(ctx->host, "opencl: out of memory for kernel objects");
        return NULL;
    }
    for (int i = 0; i < OCL_K_COUNT; i++) {
        cl_int err;
        ks->k[i] = clCreateKernel(ctx->program, kernel_names[i], &err);
        if (err != CL_SUCCESS) {
            ctx->api->set_error(ctx->host, "opencl: creating kernel %s (set %zu): %s",
                                kernel_names[i], ctx->n_sets + 1, ocl_err_str(err));
            for (int j = 0; j < i; j++)
                clReleaseKernel(ks->k[j]);
            free(ks);
            return NULL;
        }
    }
    ks->next_all = ctx->all_sets;
    ctx->all_sets = ks;
    ctx->n_sets++;
    return ks;
}

minfer_status ocl_build_program(ocl_ctx *ctx) {
    char opts[128], dir[600], path[700] = "";
    snprintf(opts, sizeof opts, "-cl-mad-enable -DVW=%d -DMR=%d%s", ctx->vw, ctx->mr,
             ctx->fp16 ? " -DFP16" : "");
    uint64_t key = ocl_cache_key(0, ctx->device_name);
    key = ocl_cache_key(key, ctx->driver_version);
    key = ocl_cache_key(key, ctx->platform_name);
    key = ocl_cache_key(key, opts);
    key = ocl_cache_key(key, minfer_ocl_source);
    if (ctx->use_cache && ocl_cache_dir(dir, sizeof dir) == 0)
        snprintf(path, sizeof path, "%s/opencl-%016llx.bin", dir, (unsigned long long)key);
    double t0 = now_ms();
    cl_int err;
    cl_program prog = path[0] ? from_binary(ctx, path, opts) : NULL;
    ctx->from_cache = prog != NULL;
    if (!prog) {
        const char *src = minfer_ocl_source;
        prog = clCreateProgramWithSource(ctx->context, 1, &src, NULL, &err);
        if (err != CL_SUCCESS) {
            ctx->api->set_error(ctx->host, "opencl: clCreateProgramWithSource: %s",
                                ocl_err_str(err));
            return MINFER_ERR_PROVIDER;
        }
        err = clBuildProgram(prog, 1, &ctx->device, opts, NULL, NULL);
        if (err != CL_SUCCESS) {
            size_t len = 0;
            clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len);
            char *log = malloc(len + 1);
            if (log) {
                log[0] = '\0';
                clGetProgramBuildInfo(prog, ctx->device, CL_PROGRAM_BUILD_LOG, len, log, NULL);
                log[len] = '\0';
            }
            ctx->api->set_error(ctx->host, "opencl: building the kernels for '%s' failed (%s):\n%s",
                                ctx->device_name, ocl_err_str(err), log ? log : "(no log)");
            free(log);
            clReleaseProgram(prog);
            return MINFER_ERR_PROVIDER;
        }
        if (path[0])
            save_binary(ctx, prog, path);
    }
    ctx->program = prog;
    ocl_kset *ks = new_kset(ctx);
    if (!ks) {
        ocl_release_program(ctx);
        return MINFER_ERR_PROVIDER;
    }
    for (int i = 0; i < OCL_K_COUNT; i++) {
        size_t wg = 1;
        clGetKernelWorkGroupInfo(ks->k[i], ctx->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg,
                                 &wg, NULL);
        ctx->kernel_wg[i] = wg ? wg : 1;
    }
    /* The device's step of efficient work-group sizes (a GPU's warp or
     * wavefront, PoCL's vectorisation width), for the launch shapes
     * (device.c). */
    size_t mult = 0;
    clGetKernelWorkGroupInfo(ks->k[OCL_K_gemm_epilogue], ctx->device,
                             CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof mult, &mult,
                             NULL);
    if (ctx->launch_gpu)
        mult = 32; /* an NVIDIA warp */
    ctx->dev.wg_multiple = mult && mult <= ctx->kernel_wg[OCL_K_gemm_epilogue] ? mult : 1;
    ks->next_free = ctx->free_sets;
    ctx->free_sets = ks;
    ctx->build_ms = now_ms() - t0;

    ctx->api->log(ctx->host, MINFER_LOG_INFO, "opencl: kernels ready in %.0f ms (%s%s%s)",
                  ctx->build_ms, ctx->from_cache ? "from the program cache " : "compiled",
                  ctx->from_cache ? path : path[0] ? ", cached in " : "",
                  ctx->from_cache ? "" : path);
    return MINFER_OK;
}

ocl_kset *ocl_kset_take(ocl_ctx *ctx) {
    pthread_mutex_lock(&ctx->lock);
    ocl_kset *ks = ctx->free_sets;
    if (ks)
        ctx->free_sets = ks->next_free;
    else if (ctx->program)
        ks = new_kset(ctx);
    else
        ctx->api->set_error(ctx->host, "opencl: no program (no node was prepared)");
    pthread_mutex_unlock(&ctx->lock);
    return ks;
}

void ocl_kset_give(ocl_ctx *ctx, ocl_kset *ks) {
    pthread_mutex_lock(&ctx->lock);
    ks->next_free = ctx->free_sets;
    ctx->free_sets = ks;
    pthread_mutex_unlock(&ctx->lock);
}

void ocl_release_program(ocl_ctx *ctx) {
    while (ctx->all_sets) {
        ocl_kset *ks = ctx->all_sets;
        ctx->all_sets = ks->next_all;
        for (int i = 0; i < OCL_K_COUNT; i++)
            clReleaseKernel(ks->k[i]);
        free(ks);
    }
    ctx->free_sets = NULL;
    ctx->n_sets = 0;
    if (ctx->program)
        clReleaseProgram(ctx->program);
    ctx->program = NULL;
}
