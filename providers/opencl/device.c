/*
 * Launch shapes from what the device says about itself.
 *
 * Pure functions of an ocl_devinfo (filled from clGetDeviceInfo at init and
 * clGetKernelWorkGroupInfo after the program build), so the choices can be
 * tested with the properties of devices this machine does not have
 * (tests/test_opencl_device.c). The rules:
 *
 * 1. Register tile (VW, MR; kernels/common.cl). A CPU device runs a
 *    work-item's vectors in SIMD registers: VW is its preferred float
 *    vector width (16 with AVX-512, 8 with AVX2, 4 with SSE or NEON), and
 *    MR = 6 rows keep 2 * MR accumulators plus two B vectors and one
 *    broadcast within 16 registers (AVX2's file; AVX-512 has 32). A GPU
 *    runs each work-item in one lane, and its register file is shared by
 *    the work-items in flight: 4 x 8 per item (VW 4, MR 4) leaves room for
 *    many of them, and float4 is the load width GPUs serve best.
 * 2. Work-group size. A CPU device (PoCL) runs a work-group as one task on
 *    one core, vectorising across the work-items by the kernel's preferred
 *    work-group size multiple: a group of that multiple (8 on PoCL) when
 *    there are that many items, and for the register-tiled kernels a
 *    group of 1, as each item already holds a whole tile. A GPU wants
 *    groups of whole warps or wavefronts (the preferred multiple: 32 on
 *    NVIDIA, 64 on AMD): dimension 0 takes up to one multiple, rounded to
 *    a power of two no wider than its items, and dimension 1 the rest of
 *    the multiple, so a 7-wide image row does not leave most of a warp
 *    idle; the other kernels' groups then grow (along the first dimension
 *    they do not cover yet) to 4 multiples, 256 items at most, while
 *    there are still two groups per compute unit.
 *    Only dimension 0 is padded to whole groups: every kernel bounds its
 *    first global id, not all of them the others, so a group's size in
 *    dimensions 1 and 2 divides the global size there (7 rows take groups
 *    of 1 row, and the group grows along dimension 2 instead). The
 *    padding of dimension 1 read past conv_tile's packed weights, and the
 *    NVIDIA driver reports such a read as CL_OUT_OF_RESOURCES and then
 *    refuses the process every new context.
 * 3. Every size is capped by the kernel's CL_KERNEL_WORK_GROUP_SIZE, the
 *    device's CL_DEVICE_MAX_WORK_GROUP_SIZE and CL_DEVICE_MAX_WORK_ITEM_SIZES,
 *    halving the widest dimension until it fits.
 *
 * The kernels use no local memory, so CL_DEVICE_LOCAL_MEM_SIZE does not
 * enter (it is kept in ocl_devinfo for the kernels that will).
 */
#include "ocl.h"

void ocl_pick_tile(const ocl_devinfo *d, int *vw, int *mr) {
    if (d->is_cpu) {
        unsigned v = d->vec_float;
        *vw = v >= 16 ? 16 : v >= 8 ? 8 : 4;
        *mr = 6;
    } else {
        *vw = 4;
        *mr = 4;
    }
}

/* Largest power of two <= n (n >= 1). */
static size_t pow2_floor(size_t n) {
    size_t p = 1;
    while (p <= n / 2)
        p *= 2;
    return p;
}

/* Smallest power of two >= n, at most cap (a power of two). */
static size_t pow2_ceil(size_t n, size_t cap) {
    size_t p = 1;
    while (p < n && p < cap)
        p *= 2;
    return p;
}

/* Largest power of two that divides n and is at most cap (n >= 1). */
static size_t pow2_div(size_t n, size_t cap) {
    size_t p = 1;
    while (p < cap && n % (2 * p) == 0)
        p *= 2;
    return p;
}

static size_t prod3(const size_t *local, int dims) {
    size_t p = 1;
    for (int i = 0; i < dims; i++)
        p *= local[i];
    return p;
}

/* Halves the widest dimension of local until it fits the kernel's, the
 * device's and each dimension's limits. */
static void fit(const ocl_devinfo *d, size_t kwg, int dims, size_t *local) {
    size_t limit = kwg < d->max_wg ? kwg : d->max_wg;
    if (limit == 0)
        limit = 1;
    for (int i = 0; i < dims; i++) {
        size_t cap = d->max_items[i] ? d->max_items[i] : 1;
        while (local[i] > cap)
            local[i] /= 2;
        if (local[i] == 0)
            local[i] = 1;
    }
    for (;;) {
        size_t total = 1;
        int widest = 0;
        for (int i = 0; i < dims; i++) {
            total *= local[i];
            if (local[i] > local[widest])
                widest = i;
        }
        if (total <= limit || local[widest] == 1)
            return;
        local[widest] /= 2;
    }
}

void ocl_pick_local(const ocl_devinfo *d, size_t kwg, int dims, const size_t *global,
                    int tiled, size_t *local) {
    size_t mult = d->wg_multiple ? d->wg_multiple : 1;
    for (int i = 0; i < dims; i++)
        local[i] = 1;
    if (dims < 1 || dims > 3)
        return;
    if (d->is_cpu) {
        if (!tiled && global[0] >= mult)
            local[0] = mult;
    } else {
        mult = pow2_floor(mult);
        local[0] = pow2_ceil(global[0], mult);
        if (dims > 1)
            local[1] = pow2_div(global[1], mult / local[0]);
        if (!tiled) {
            /* Wider groups while every compute unit still gets two. */
            size_t groups = 1, cap = 4 * mult < 256 ? 4 * mult : 256;
            for (int i = 0; i < dims; i++)
                groups *= (global[i] + local[i] - 1) / local[i];
            size_t want = 2 * (size_t)(d->compute_units ? d->compute_units : 1);
            for (;;) {
                /* The first dimension the group does not cover yet, and past
                 * 0 only while twice the group still divides it. */
                int g = 0;
                while (g < dims && (local[g] >= global[g] ||
                                    (g > 0 && global[g] % (2 * local[g]) != 0)))
                    g++;
                if (g == dims || prod3(local, dims) * 2 > cap || groups / 2 < want)
                    break;
                local[g] *= 2;
                groups = (groups + 1) / 2;
            }
        }
    }
    fit(d, kwg, dims, local);
}
