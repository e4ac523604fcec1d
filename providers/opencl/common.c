/*
 * Helpers shared by the OpenCL kernels' host side: errors, attributes,
 * constant uploads, buffer views and kernel launches.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl.h"

/* ---- Errors ------------------------------------------------------------- */

const char *ocl_err_str(cl_int err) {
    switch (err) {
#define E(x)                                                                               \
    case x:                                                                                \
        return #x;
        E(CL_SUCCESS) E(CL_DEVICE_NOT_FOUND) E(CL_DEVICE_NOT_AVAILABLE)
        E(CL_COMPILER_NOT_AVAILABLE) E(CL_MEM_OBJECT_ALLOCATION_FAILURE) E(CL_OUT_OF_RESOURCES)
        E(CL_OUT_OF_HOST_MEMORY) E(CL_MEM_COPY_OVERLAP) E(CL_BUILD_PROGRAM_FAILURE)
        E(CL_INVALID_VALUE) E(CL_INVALID_DEVICE) E(CL_INVALID_BINARY)
        E(CL_INVALID_BUILD_OPTIONS) E(CL_INVALID_PROGRAM_EXECUTABLE) E(CL_INVALID_KERNEL_NAME)
        E(CL_INVALID_KERNEL_ARGS) E(CL_INVALID_ARG_INDEX) E(CL_INVALID_ARG_VALUE)
        E(CL_INVALID_ARG_SIZE) E(CL_INVALID_MEM_OBJECT) E(CL_INVALID_WORK_DIMENSION)
        E(CL_INVALID_WORK_GROUP_SIZE) E(CL_INVALID_WORK_ITEM_SIZE)
        E(CL_INVALID_GLOBAL_WORK_SIZE) E(CL_INVALID_BUFFER_SIZE)
        E(CL_MISALIGNED_SUB_BUFFER_OFFSET)
#undef E
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    default: {
        /* A code this table does not name (an extension's, a driver's own):
         * its number, so the message can be looked up. */
        static _Thread_local char buf[32];
        snprintf(buf, sizeof buf, "OpenCL error %d", (int)err);
        return buf;
    }
    }
}

static void vmsg(ocl_prep *p, const char *fmt, va_list ap) {
    minfer_kit_vdecline(p->err, p->err_size, p->node->op_type, fmt, ap);
}

minfer_status ocl_decline(ocl_prep *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg(p, fmt, ap);
    va_end(ap);
    return MINFER_ERR_UNSUPPORTED;
}

minfer_status ocl_prep_fail(ocl_prep *p, minfer_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vmsg(p, fmt, ap);
    va_end(ap);
    return st;
}

minfer_status ocl_fail(const ocl_exec *e, minfer_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    minfer_kit_vfail(e->ctx->api, e->ctx->host, "opencl", e->args->node, st, fmt, ap);
    va_end(ap);
    return st;
}

void *ocl_state(ocl_prep *p, size_t size) {
    ocl_state_free(p->state);
    p->state = calloc(1, size < sizeof(ocl_state_head) ? sizeof(ocl_state_head) : size);
    if (!p->state)
        ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory for node state");
    return p->state;
}

void ocl_state_free(void *state) {
    ocl_state_head *h = state;
    if (!h)
        return;
    for (int i = 0; i < OCL_STATE_BUFS; i++)
        if (h->bufs[i])
            clReleaseMemObject(h->bufs[i]);
    free(h->host);
    free(h);
}

/* ---- Attributes and constants ---------------------------------------------- */

int64_t ocl_attr_int(const ocl_prep *p, const char *name, int64_t dflt) {
    return minfer_kit_attr_int(p->ctx->api, p->node, name, dflt);
}

float ocl_attr_float(const ocl_prep *p, const char *name, float dflt) {
    return minfer_kit_attr_float(p->ctx->api, p->node, name, dflt);
}

const char *ocl_attr_str(const ocl_prep *p, const char *name, const char *dflt) {
    return minfer_kit_attr_str(p->ctx->api, p->node, name, dflt);
}

int ocl_attr_ints(ocl_prep *p, const char *name, int64_t *out, size_t cap, size_t *count) {
    return minfer_kit_attr_ints(p->ctx->api, p->node, name, out, cap, count, p->err,
                                p->err_size);
}

const minfer_value_desc *ocl_in_desc(const minfer_node_desc *n, size_t i) {
    return minfer_kit_input(n, i);
}

int64_t ocl_numel(int32_t rank, const int64_t *dims) {
    return minfer_kit_numel(rank, dims);
}

int ocl_const_ints(ocl_prep *p, size_t input, int64_t *out, size_t cap, size_t *count) {
    return minfer_kit_const_ints(p->node, input, out, cap, count, p->err, p->err_size);
}

int ocl_param_later(const ocl_prep *p, size_t input) {
    const minfer_value_desc *d = ocl_in_desc(p->node, input);
    return !p->prep && d && !d->const_data;
}

/* 0 for strings and complex numbers, which no device tensor holds. */
size_t ocl_dtype_size(int32_t dtype) {
    if (dtype == MINFER_DTYPE_STRING || dtype == MINFER_DTYPE_COMPLEX64 ||
        dtype == MINFER_DTYPE_COMPLEX128)
        return 0;
    return minfer_elem_size(dtype);
}

size_t ocl_esize(const ocl_ctx *ctx, int32_t dtype) {
    return ctx->fp16 && dtype == MINFER_DTYPE_FLOAT ? 2 : ocl_dtype_size(dtype);
}

minfer_status ocl_need_float(ocl_prep *p, size_t i) {
    const minfer_value_desc *d = ocl_in_desc(p->node, i);
    if (d && d->dtype != MINFER_DTYPE_FLOAT)
        return ocl_decline(p, "input %zu is not float32 (element type %s)", i,
                           minfer_elem_name(d->dtype));
    return MINFER_OK;
}

minfer_status ocl_check_size(ocl_prep *p, const minfer_value_desc *d) {
    if (!d || d->rank < 0)
        return MINFER_OK;
    if (d->rank > OCL_MAX_RANK)
        return ocl_decline(p, "rank %d is above %d", (int)d->rank, OCL_MAX_RANK);
    int64_t n = 1;
    for (int32_t i = 0; i < d->rank; i++)
        if (d->dims[i] < 0)
            return MINFER_OK; /* not known yet: checked again at prepare */
    /* Kernels index with 32-bit ints, and one tensor must fit one allocation. */
    if (minfer_dims_numel(d->dims, d->rank, &n) != MINFER_OK || n > INT32_MAX / 2 ||
        (uint64_t)n * 4 > p->ctx->max_alloc)
        return ocl_decline(p, "tensor '%s' of %lld elements exceeds the device's largest "
                           "buffer (%llu bytes)", d->name ? d->name : "",
                           (long long)n, (unsigned long long)p->ctx->max_alloc);
    return MINFER_OK;
}

/* The fused activation (the kit's table) as the kernels' act codes. */
minfer_status ocl_parse_activation(ocl_prep *p, int *act, float *a, float *b) {
    const float *params = NULL;
    size_t np = minfer_kit_attr_floats_ref(p->ctx->api, p->node, "activation_params", &params);
    const char *name = ocl_attr_str(p, "activation", "");
    minfer_kit_act k;
    char why[128];
    if (minfer_kit_act_parse(name, params, np, &k, why, sizeof why) != 0)
        return ocl_decline(p, "%s", why);
    *a = k.p[0];
    *b = k.p[1];
    switch (k.kind) {
    case MINFER_KIT_ACT_NONE: *act = OCL_ACT_NONE; break;
    case MINFER_KIT_ACT_RELU: *act = OCL_ACT_RELU; break;
    case MINFER_KIT_ACT_CLIP: *act = OCL_ACT_CLIP; break;
    case MINFER_KIT_ACT_SIGMOID: *act = OCL_ACT_SIGMOID; break;
    case MINFER_KIT_ACT_HARDSIGMOID: *act = OCL_ACT_HARDSIGMOID; break;
    case MINFER_KIT_ACT_SILU: *act = OCL_ACT_SILU; break;
    case MINFER_KIT_ACT_LEAKYRELU: *act = OCL_ACT_LEAKYRELU; break;
    case MINFER_KIT_ACT_TANH: *act = OCL_ACT_TANH; break;
    /* fuse_matmul_gelu's; the kernels' act1/actv have both forms */
    case MINFER_KIT_ACT_GELU: *act = OCL_ACT_GELU; break;
    case MINFER_KIT_ACT_GELU_TANH: *act = OCL_ACT_GELU_TANH; break;
    case MINFER_KIT_ACT_HARDSWISH:
        if (!k.is_default) /* the kernels' HardSwish is ONNX's */
            return ocl_decline(p, "activation HardSwish with activation_params %g, %g",
                               (double)k.p[0], (double)k.p[1]);
        *act = OCL_ACT_HARDSWISH;
        break;
    default: return ocl_decline(p, "activation '%s' not supported", name);
    }
    return MINFER_OK;
}

minfer_status ocl_upload(ocl_prep *p, int slot, const void *data, size_t bytes) {
    ocl_state_head *h = p->state;
    cl_int err;
    if (bytes > p->ctx->max_alloc)
        return ocl_prep_fail(p, MINFER_ERR_LIMIT, "constant of %zu bytes exceeds the device's "
                             "largest buffer", bytes);
    h->bufs[slot] = clCreateBuffer(p->ctx->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   bytes ? bytes : 4, (void *)(bytes ? data : &(int){0}), &err);
    if (err != CL_SUCCESS)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "uploading %zu bytes of constants: %s",
                             bytes, ocl_err_str(err));
    return MINFER_OK;
}

minfer_status ocl_upload_floats(ocl_prep *p, int slot, const float *data, size_t count) {
    if (!p->ctx->fp16)
        return ocl_upload(p, slot, data, count * sizeof(float));
    uint16_t *h = malloc(count ? count * sizeof *h : 1);
    if (!h)
        return ocl_prep_fail(p, MINFER_ERR_NOMEM, "out of memory converting constants to half");
    for (size_t i = 0; i < count; i++)
        h[i] = ocl_f2h(data[i]);
    minfer_status s = ocl_upload(p, slot, h, count * sizeof *h);
    free(h);
    return s;
}

/* ---- Views -------------------------------------------------------------- */

const minfer_tensor_view *ocl_input(const ocl_exec *e, size_t i) {
    if (i >= e->args->n_inputs || e->args->inputs[i].rank < 0)
        return NULL;
    return &e->args->inputs[i];
}

void ocl_in_buf(const ocl_exec *e, size_t i, int slot, cl_mem *buf, cl_int *off) {
    const ocl_state_head *h = e->state;
    if (slot >= 0 && h && h->bufs[slot]) {
        *buf = h->bufs[slot];
        *off = 0;
        return;
    }
    const minfer_tensor_view *v = ocl_input(e, i);
    size_t es = v ? ocl_esize(e->ctx, v->dtype) : 0;
    *buf = v ? (cl_mem)v->data : NULL;
    *off = v ? (cl_int)(v->offset / (es ? es : 4)) : 0;
}

minfer_status ocl_output(const ocl_exec *e, size_t i, int32_t rank, const int64_t *dims,
                         cl_mem *buf, cl_int *off) {
    const minfer_exec_args *a = e->args;
    if (i >= a->n_outputs)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "output %zu not given by the host", i);
    minfer_tensor_view *o = &a->outputs[i];
    if (o->rank < 0)
        return ocl_fail(e, MINFER_ERR_UNSUPPORTED, "output %zu: shape unknown before the run "
                        "(device outputs must be planned)", i);
    int bad = o->rank != rank;
    for (int32_t d = 0; !bad && d < rank; d++)
        bad = o->dims[d] != dims[d];
    if (bad)
        return ocl_fail(e, MINFER_ERR_SHAPE, "output %zu: the host planned another shape", i);
    size_t es = ocl_esize(e->ctx, o->dtype);
    if (!es)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "output %zu: element type %s", i,
                        minfer_elem_name(o->dtype));
    int64_t count = ocl_numel(rank, dims);
    size_t need;
    if (count < 0 || minfer_size_mul((size_t)count, es, &need) != MINFER_OK)
        return ocl_fail(e, MINFER_ERR_LIMIT, "output %zu: the shape's byte count overflows", i);
    if (need > o->nbytes || (need && !o->data))
        return ocl_fail(e, MINFER_ERR_RUNTIME, "output %zu holds %zu bytes, %zu needed", i,
                        o->nbytes, need);
    if (o->offset % es)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "output %zu: offset %zu is not element aligned",
                        i, o->offset);
    *buf = (cl_mem)o->data;
    *off = (cl_int)(o->offset / es);
    return MINFER_OK;
}

/* ---- Launches -------------------------------------------------------------- */

minfer_status ocl_set_args(const ocl_exec *e, int k, int n, ...) {
    va_list ap;
    va_start(ap, n);
    cl_int err = CL_SUCCESS;
    int i;
    for (i = 0; i < n && err == CL_SUCCESS; i++) {
        size_t size = va_arg(ap, size_t);
        const void *ptr = va_arg(ap, const void *);
        err = clSetKernelArg(e->k[k], (cl_uint)i, size, ptr);
    }
    va_end(ap);
    if (err != CL_SUCCESS)
        return ocl_fail(e, MINFER_ERR_PROVIDER, "setting kernel argument %d: %s", i - 1,
                        ocl_err_str(err));
    return MINFER_OK;
}

minfer_status ocl_enqueue(const ocl_exec *e, int k, int dims, const size_t *global,
                          const size_t *local) {
    size_t g[3], l[3];
    for (int i = 0; i < dims; i++) {
        if (global[i] == 0)
            return MINFER_OK; /* nothing to compute */
        l[i] = local && local[i] ? local[i] : 1;
        g[i] = (global[i] + l[i] - 1) / l[i] * l[i];
    }
    size_t total = 1;
    for (int i = 0; i < dims; i++)
        total *= l[i];
    if (total > e->ctx->kernel_wg[k])
        return ocl_fail(e, MINFER_ERR_LIMIT, "work-group of %zu items exceeds the kernel's "
                        "limit of %zu on this device", total, e->ctx->kernel_wg[k]);
    cl_int err = clEnqueueNDRangeKernel(e->ctx->queue, e->k[k], (cl_uint)dims, NULL,
                                        g, l, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(e, MINFER_ERR_PROVIDER, "enqueueing a kernel: %s", ocl_err_str(err));
    ocl_count_launch(e->ctx);
    return MINFER_OK;
}

minfer_status ocl_launch(const ocl_exec *e, int k, int dims, const size_t *global, int tiled) {
    size_t l[3];
    ocl_pick_local(&e->ctx->dev, e->ctx->kernel_wg[k], dims, global, tiled, l);
    return ocl_enqueue(e, k, dims, global, l);
}

minfer_status ocl_launch1(const ocl_exec *e, int k, size_t n) {
    return ocl_launch(e, k, 1, &n, 0);
}

/* Byte offsets and counts the byte kernels take as int. */
static int fits_int(size_t a, size_t b, size_t c) {
    return a <= INT32_MAX && b <= INT32_MAX && c <= INT32_MAX;
}

minfer_status ocl_copy(const ocl_exec *e, cl_mem src, size_t soff, cl_mem dst, size_t doff,
                       size_t bytes) {
    if (bytes == 0 || (src == dst && soff == doff))
        return MINFER_OK;
    if (e->ctx->kernel_copies) {
        if (!fits_int(soff, doff, bytes))
            return ocl_fail(e, MINFER_ERR_LIMIT, "a copy of %zu bytes at offset %zu is beyond "
                            "kernel_copies=1's 2 GiB", bytes, doff);
        cl_int so = (cl_int)soff, dof = (cl_int)doff, n = (cl_int)bytes;
        minfer_status st = ocl_set_args(e, OCL_K_copy_bytes, 5, OCL_ARG(src), OCL_ARG(so),
                                        OCL_ARG(dst), OCL_ARG(dof), OCL_ARG(n));
        return st ? st : ocl_launch1(e, OCL_K_copy_bytes, bytes);
    }
    cl_int err = clEnqueueCopyBuffer(e->ctx->queue, src, dst, soff, doff, bytes, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(e, MINFER_ERR_PROVIDER, "copying %zu bytes: %s", bytes,
                        ocl_err_str(err));
    ocl_count_launch(e->ctx);
    return MINFER_OK;
}

minfer_status ocl_fill(const ocl_exec *e, cl_mem dst, size_t doff, const void *pattern,
                       size_t psize, size_t bytes) {
    if (bytes == 0)
        return MINFER_OK;
    if (e->ctx->kernel_copies) {
        cl_uint pat = 0;
        memcpy(&pat, pattern, psize < sizeof pat ? psize : sizeof pat);
        if (!fits_int(doff, bytes, 0))
            return ocl_fail(e, MINFER_ERR_LIMIT, "a fill of %zu bytes at offset %zu is beyond "
                            "kernel_copies=1's 2 GiB", bytes, doff);
        cl_int dof = (cl_int)doff, n = (cl_int)bytes, ps = (cl_int)psize;
        minfer_status st = ocl_set_args(e, OCL_K_fill_bytes, 5, OCL_ARG(dst), OCL_ARG(dof),
                                        OCL_ARG(n), OCL_ARG(pat), OCL_ARG(ps));
        return st ? st : ocl_launch1(e, OCL_K_fill_bytes, bytes);
    }
    cl_int err = clEnqueueFillBuffer(e->ctx->queue, dst, pattern, psize, doff, bytes, 0, NULL,
                                     NULL);
    if (err != CL_SUCCESS)
        return ocl_fail(e, MINFER_ERR_PROVIDER, "filling %zu bytes: %s", bytes,
                        ocl_err_str(err));
    ocl_count_launch(e->ctx);
    return MINFER_OK;
}

minfer_status ocl_run_unary(const ocl_exec *e, cl_mem x, cl_int xoff, cl_mem y, cl_int yoff,
                            size_t n, int op, float a, float b) {
    cl_int ni = (cl_int)n, opi = op;
    minfer_status st = ocl_set_args(e, OCL_K_unary, 8, OCL_ARG(x), OCL_ARG(xoff), OCL_ARG(y),
                                    OCL_ARG(yoff), OCL_ARG(ni), OCL_ARG(opi), OCL_ARG(a),
                                    OCL_ARG(b));
    if (st)
        return st;
    return ocl_launch1(e, OCL_K_unary, (n + (size_t)e->ctx->vw - 1) / (size_t)e->ctx->vw);
}
