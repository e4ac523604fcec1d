/*
 * Known-bad kernels for tests/test_opencl_oclgrind.sh: run under oclgrind
 * with the flags the test uses, each mode must be reported (and "clean"
 * must not), so the test proves that its checker and the patterns it
 * searches for catch each class of error it claims to: an out-of-bounds
 * read, a read of memory nothing wrote, a data race. The buffers are used
 * as the provider uses its arena: one buffer, tensors at offsets, inputs
 * written whole at creation.
 *
 * usage: oclgrind_canary oob|uninit|race|clean   (exit 0 when it ran)
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

static const char *source =
    "__kernel void oob(__global const float *x, __global float *y, int n) {\n"
    "    int i = get_global_id(0);\n"
    "    y[i] = x[i + n];\n" /* reads n elements past the end of x */
    "}\n"
    "__kernel void uninit(__global const float *x, __global float *y, int n) {\n"
    "    int i = get_global_id(0);\n"
    "    y[i] = y[n + i] + x[i];\n" /* y[n..2n) was never written */
    "}\n"
    "__kernel void race(__global const float *x, __global float *y, int n) {\n"
    "    y[0] = x[get_global_id(0)];\n" /* every work-item writes y[0] */
    "}\n"
    "__kernel void clean(__global const float *x, __global float *y, int n) {\n"
    "    int i = get_global_id(0);\n"
    "    y[i] = x[i] * 2.0f;\n"
    "}\n";

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "oob") && strcmp(mode, "uninit") && strcmp(mode, "race") &&
        strcmp(mode, "clean")) {
        fprintf(stderr, "usage: oclgrind_canary oob|uninit|race|clean\n");
        return 2;
    }
    enum { N = 64 };
    float host[N];
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
        fprintf(stderr, "oclgrind_canary: no OpenCL device\n");
        return 1;
    }
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    if (clBuildProgram(prog, 1, &dev, "", NULL, NULL) != CL_SUCCESS) {
        fprintf(stderr, "oclgrind_canary: build failed\n");
        return 1;
    }
    cl_kernel k = clCreateKernel(prog, mode, &err);
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof host, host,
                              &err);
    cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * sizeof host, NULL, &err);
    cl_int n = N;
    clSetKernelArg(k, 0, sizeof x, &x);
    clSetKernelArg(k, 1, sizeof y, &y);
    clSetKernelArg(k, 2, sizeof n, &n);
    size_t global = N;
    err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(q);
    clReleaseMemObject(x);
    clReleaseMemObject(y);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    printf("oclgrind_canary %s: ran (%d)\n", mode, (int)err);
    return 0;
}
