/*
 * The OpenCL provider's launch shapes (providers/opencl/device.c) from
 * device properties: pure functions, tested with the properties of devices
 * this machine does not have (a GPU of each vendor's warp width, CPUs of
 * each vector width, a small embedded device). Needs no OpenCL platform.
 *
 * What must hold: PoCL's CPU device gets the shapes that were measured
 * for it (a 6 x 32 tile, groups of 8, 1 for the tiled kernels); a GPU gets
 * whole warps or wavefronts, spread over both dimensions when dimension 0
 * is narrow; no choice exceeds the kernel's or the device's limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ocl.h"

/* PoCL 3.1 on this VM's AMD EPYC (AVX-512), as it answers clGetDeviceInfo. */
static const ocl_devinfo pocl = {1, 4096, {4096, 4096, 4096}, 8, 2, 16, 1048576};
/* An AVX2 CPU under PoCL: 8 floats a vector. */
static const ocl_devinfo avx2 = {1, 4096, {4096, 4096, 4096}, 8, 16, 8, 1048576};
/* An NVIDIA H100 (OpenCL 3.0): warps of 32, 132 SMs. */
static const ocl_devinfo h100 = {0, 1024, {1024, 1024, 64}, 32, 132, 1, 49152};
/* An AMD GPU: wavefronts of 64, groups up to 256. */
static const ocl_devinfo amd = {0, 256, {1024, 1024, 1024}, 64, 60, 1, 65536};
/* A small embedded GPU: groups of at most 64, 16 items along dimension 1. */
static const ocl_devinfo tiny = {0, 64, {64, 16, 1}, 16, 2, 4, 16384};

static size_t prod(const size_t *l, int dims) {
    size_t p = 1;
    for (int i = 0; i < dims; i++)
        p *= l[i];
    return p;
}

static void test_tile(void **state) {
    (void)state;
    int vw, mr;
    ocl_pick_tile(&pocl, &vw, &mr);
    assert_int_equal(vw, 16);
    assert_int_equal(mr, 6);
    ocl_pick_tile(&avx2, &vw, &mr);
    assert_int_equal(vw, 8);
    assert_int_equal(mr, 6);
    ocl_devinfo sse = pocl;
    sse.vec_float = 4;
    ocl_pick_tile(&sse, &vw, &mr);
    assert_int_equal(vw, 4);
    sse.vec_float = 0; /* a device that does not say */
    ocl_pick_tile(&sse, &vw, &mr);
    assert_int_equal(vw, 4);
    ocl_pick_tile(&h100, &vw, &mr);
    assert_int_equal(vw, 4);
    assert_int_equal(mr, 4);
}

/* PoCL keeps the shapes it was tuned with. */
static void test_cpu_local(void **state) {
    (void)state;
    size_t l[3];
    ocl_pick_local(&pocl, 4096, 1, (const size_t[]){100000}, 0, l);
    assert_int_equal(l[0], 8);
    ocl_pick_local(&pocl, 4096, 1, (const size_t[]){5}, 0, l);
    assert_int_equal(l[0], 1);
    ocl_pick_local(&pocl, 4096, 3, (const size_t[]){56, 56, 64}, 0, l);
    assert_int_equal(l[0], 8);
    assert_int_equal(l[1], 1);
    assert_int_equal(l[2], 1);
    ocl_pick_local(&pocl, 4096, 3, (const size_t[]){7, 7, 512}, 0, l);
    assert_int_equal(prod(l, 3), 1);
    ocl_pick_local(&pocl, 4096, 3, (const size_t[]){512, 100, 1}, 1, l);
    assert_int_equal(prod(l, 3), 1);
    /* a kernel the compiler limits to 4 items */
    ocl_pick_local(&pocl, 4, 1, (const size_t[]){1000}, 0, l);
    assert_int_equal(l[0], 4);
}

static void test_gpu_local(void **state) {
    (void)state;
    size_t l[3];
    /* Tiled kernels: one warp, spread when dimension 0 is narrow. */
    ocl_pick_local(&h100, 1024, 3, (const size_t[]){128, 64, 1}, 1, l);
    assert_int_equal(l[0], 32);
    assert_int_equal(prod(l, 3), 32);
    ocl_pick_local(&h100, 1024, 3, (const size_t[]){2, 64, 1}, 1, l);
    assert_int_equal(l[0], 2);
    assert_int_equal(l[1], 16);
    /* Dimension 1 is never padded: 3 rows take groups of 1 row. */
    ocl_pick_local(&amd, 256, 3, (const size_t[]){4, 3, 1}, 1, l);
    assert_int_equal(l[0], 4);
    assert_int_equal(l[1], 1);
    /* Elementwise: a large launch grows to 4 warps; a small one stays one
     * warp so that every SM gets work. */
    ocl_pick_local(&h100, 1024, 1, (const size_t[]){1u << 22}, 0, l);
    assert_int_equal(l[0], 128);
    ocl_pick_local(&h100, 1024, 1, (const size_t[]){4096}, 0, l);
    assert_int_equal(l[0], 32);
    ocl_pick_local(&h100, 1024, 1, (const size_t[]){5}, 0, l);
    assert_int_equal(l[0], 8);
    ocl_pick_local(&amd, 256, 1, (const size_t[]){1u << 22}, 0, l);
    assert_int_equal(l[0], 256);
    /* A 7 x 7 image: a row of 8 items, and as 7 rows cannot be cut into
     * groups without padding dimension 1, the group grows along dimension
     * 2 instead, by its divisors, when there is work enough. */
    ocl_pick_local(&h100, 1024, 3, (const size_t[]){7, 7, 8}, 0, l);
    assert_int_equal(l[0], 8);
    assert_int_equal(l[1], 1);
    assert_int_equal(l[2], 1);
    ocl_pick_local(&h100, 1024, 3, (const size_t[]){7, 7, 512 * 32}, 0, l);
    assert_int_equal(l[0], 8);
    assert_int_equal(l[1], 1);
    assert_int_equal(l[2], 16);
    ocl_pick_local(&h100, 1024, 3, (const size_t[]){7, 8, 512 * 32}, 0, l);
    assert_int_equal(l[0], 8);
    assert_int_equal(l[1], 8);
    assert_int_equal(l[2], 2);
}

/* No choice above the kernel's, the device's or a dimension's limit. */
static void test_limits(void **state) {
    (void)state;
    const ocl_devinfo *devs[] = {&pocl, &avx2, &h100, &amd, &tiny};
    const size_t shapes[][3] = {{1, 1, 1},      {3, 5, 7},     {1000, 1, 1}, {7, 7, 4096},
                                {1u << 20, 3, 1}, {64, 64, 64}, {2, 1000, 2}};
    const size_t kwgs[] = {1, 3, 16, 64, 256, 1024, 4096};
    for (size_t d = 0; d < sizeof devs / sizeof devs[0]; d++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t k = 0; k < sizeof kwgs / sizeof kwgs[0]; k++)
                for (int dims = 1; dims <= 3; dims++)
                    for (int tiled = 0; tiled < 2; tiled++) {
                        size_t l[3];
                        ocl_pick_local(devs[d], kwgs[k], dims, shapes[s], tiled, l);
                        size_t p = prod(l, dims);
                        assert_true(p >= 1);
                        assert_true(p <= kwgs[k] && p <= devs[d]->max_wg);
                        for (int i = 0; i < dims; i++) {
                            assert_true(l[i] >= 1);
                            /* only dimension 0 is padded to whole groups */
                            if (i > 0)
                                assert_true(shapes[s][i] % l[i] == 0);
                            assert_true(l[i] <= devs[d]->max_items[i]);
                        }
                    }
    size_t l[3];
    ocl_pick_local(&tiny, 64, 2, (const size_t[]){1, 1000}, 1, l);
    assert_int_equal(l[0], 1);
    assert_int_equal(l[1], 8); /* within the multiple 16, a divisor of 1000 */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tile),
        cmocka_unit_test(test_cpu_local),
        cmocka_unit_test(test_gpu_local),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
