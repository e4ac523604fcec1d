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
 * 5. Every kernel is created once, with its work-group limit.
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

#include "ocl.h"

extern const char minfer_ocl_source[];

static uint64_t fnv1a(uint64_t h, const char *s) {
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h ^ 0xff; /* separates fields */
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The cache directory, created if needed; 0 on success. */
static int cache_dir(char *buf, size_t size) {
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
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
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

minfer_status ocl_build_program(ocl_ctx *ctx) {
    char opts[128], dir[600], path[700] = "";
    snprintf(opts, sizeof opts, "-cl-mad-enable -DVW=%d -DMR=%d%s", ctx->vw, ctx->mr,
             ctx->fp16 ? " -DFP16" : "");
    uint64_t key = 14695981039346656037ull;
    key = fnv1a(key, ctx->device_name);
    key = fnv1a(key, ctx->driver_version);
    key = fnv1a(key, ctx->platform_name);
    key = fnv1a(key, opts);
    key = fnv1a(key, minfer_ocl_source);
    if (ctx->use_cache && cache_dir(dir, sizeof dir) == 0)
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
    static const char *const names[OCL_K_COUNT] = {
#define X(k) #k,
        OCL_KERNELS(X)
#undef X
    };
    for (int i = 0; i < OCL_K_COUNT; i++) {
        ctx->kernels[i] = clCreateKernel(prog, names[i], &err);
        if (err != CL_SUCCESS) {
            ctx->api->set_error(ctx->host, "opencl: creating kernel %s: %s", names[i],
                                ocl_err_str(err));
            ctx->program = prog;
            ocl_release_program(ctx);
            return MINFER_ERR_PROVIDER;
        }
        size_t wg = 1;
        clGetKernelWorkGroupInfo(ctx->kernels[i], ctx->device, CL_KERNEL_WORK_GROUP_SIZE,
                                 sizeof wg, &wg, NULL);
        ctx->kernel_wg[i] = wg ? wg : 1;
    }
    ctx->program = prog;
    ctx->build_ms = now_ms() - t0;

    ctx->api->log(ctx->host, MINFER_LOG_INFO, "opencl: kernels ready in %.0f ms (%s%s%s)",
                  ctx->build_ms, ctx->from_cache ? "from the program cache " : "compiled",
                  ctx->from_cache ? path : path[0] ? ", cached in " : "",
                  ctx->from_cache ? "" : path);
    return MINFER_OK;
}

void ocl_release_program(ocl_ctx *ctx) {
    for (int i = 0; i < OCL_K_COUNT; i++)
        if (ctx->kernels[i]) {
            clReleaseKernel(ctx->kernels[i]);
            ctx->kernels[i] = NULL;
        }
    if (ctx->program)
        clReleaseProgram(ctx->program);
    ctx->program = NULL;
}
