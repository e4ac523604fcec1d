/*
 * A plugin's infer steps through its outputs by the host's stride
 * (minfer_plugin_infer_args.tensor_view_size, plugin.h): a host whose
 * minfer_tensor_view is larger than the plugin's (members appended) hands
 * infer an array of larger entries, and outputs 1..n must land in them, not
 * at the plugin's own sizeof. The contrib plugin's SkipLayerNormalization
 * fills four outputs; here it is called directly, as the host calls it,
 * with entries 64 bytes larger than this header's and guard bytes between,
 * and with an infer args struct too short to have the member (an older
 * host: this header's stride).
 *   test_plugin_infer_stride CONTRIB_PLUGIN.so
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "minfer/plugin.h"

static const char *plugin_path;
static void *lib;
static minfer_plugin_op skip_ln;
static int found;

static minfer_status register_op(minfer_plugin_registry *reg, const minfer_plugin_op *op) {
    (void)reg;
    if (!strcmp(op->domain, "com.microsoft") && !strcmp(op->op_type, "SkipLayerNormalization")) {
        skip_ln = *op;
        found = 1;
    }
    return MINFER_OK;
}

static void set_error(minfer_plugin_registry *reg, const char *message) {
    (void)reg;
    print_message("register_ops: %s\n", message);
}

/* The node has no attributes. */
static int no_int(const minfer_node_desc *n, const char *name, int64_t *v) {
    (void)n, (void)name, (void)v;
    return 0;
}
static int no_float(const minfer_node_desc *n, const char *name, float *v) {
    (void)n, (void)name, (void)v;
    return 0;
}
static int no_string(const minfer_node_desc *n, const char *name, const char **v, size_t *len) {
    (void)n, (void)name, (void)v, (void)len;
    return 0;
}
static int no_ints(const minfer_node_desc *n, const char *name, const int64_t **v, size_t *c) {
    (void)n, (void)name, (void)v, (void)c;
    return 0;
}
static int no_floats(const minfer_node_desc *n, const char *name, const float **v, size_t *c) {
    (void)n, (void)name, (void)v, (void)c;
    return 0;
}
static int no_type(const minfer_node_desc *n, const char *name) {
    (void)n, (void)name;
    return MINFER_ATTR_UNDEFINED;
}

static minfer_host_api api;

static int setup(void **state) {
    (void)state;
    lib = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        print_error("%s\n", dlerror());
        return -1;
    }
    minfer_plugin_entry_fn entry = (minfer_plugin_entry_fn)dlsym(lib, MINFER_PLUGIN_ENTRY_SYMBOL);
    const minfer_plugin_info *info = entry ? entry(MINFER_PLUGIN_ABI_VERSION) : NULL;
    api.abi_version = MINFER_PROVIDER_ABI_VERSION;
    api.struct_size = sizeof api;
    api.attr_int = no_int;
    api.attr_float = no_float;
    api.attr_string = no_string;
    api.attr_ints = no_ints;
    api.attr_floats = no_floats;
    api.attr_type = no_type;
    minfer_plugin_host host = {
        .abi_version = MINFER_PLUGIN_ABI_VERSION,
        .struct_size = sizeof host,
        .path = plugin_path,
        .api = &api,
        .register_op = register_op,
        .set_error = set_error,
    };
    if (!info || info->register_ops(&host, NULL) != MINFER_OK || !found) {
        print_error("%s: no com.microsoft SkipLayerNormalization\n", plugin_path);
        return -1;
    }
    return 0;
}

static int teardown(void **state) {
    (void)state;
    dlclose(lib);
    return 0;
}

#define PAD 64
#define GUARD 0xa5

/* Calls infer on x, skip [2,3,8] and gamma [8] with four outputs in
 * entries of `stride` bytes (args_size: the infer args' struct_size the
 * host gives) and checks each output and the bytes between them. */
static void check(size_t stride, uint32_t args_size, uint32_t view_size) {
    minfer_value_desc vd[3 + 4];
    memset(vd, 0, sizeof vd);
    const char *names[] = {"x", "skip", "gamma", "y", "mean", "inv_std", "sum"};
    for (int i = 0; i < 7; i++) {
        vd[i].name = names[i];
        vd[i].present = 1;
        vd[i].rank = -1;
    }
    for (int i = 0; i < 3; i++) {
        vd[i].kind = MINFER_VALUE_TENSOR;
        vd[i].dtype = MINFER_DTYPE_FLOAT;
        vd[i].rank = i < 2 ? 3 : 1;
        vd[i].dims[0] = i < 2 ? 2 : 8;
        vd[i].dims[1] = 3;
        vd[i].dims[2] = 8;
    }
    minfer_node_desc node = {
        .struct_size = sizeof node,
        .name = "n0",
        .op_type = "SkipLayerNormalization",
        .domain = "com.microsoft",
        .opset = 1,
        .n_inputs = 3,
        .n_outputs = 4,
        .inputs = vd,
        .outputs = vd + 3,
        .value_desc_size = sizeof(minfer_value_desc),
    };
    unsigned char *buf = malloc(4 * stride);
    assert_non_null(buf);
    memset(buf, GUARD, 4 * stride);
    for (int j = 0; j < 4; j++) {
        minfer_tensor_view *o = (minfer_tensor_view *)(void *)(buf + (size_t)j * stride);
        memset(o, 0, sizeof *o);
        o->rank = -1;
    }
    char err[256] = "";
    minfer_plugin_infer_args args = {
        .struct_size = args_size,
        .api = &api,
        .node = &node,
        .outputs = (minfer_tensor_view *)(void *)buf,
        .n_outputs = 4,
        .err = err,
        .err_size = sizeof err,
        .tensor_view_size = view_size,
    };
    minfer_status st = skip_ln.infer(skip_ln.op_data, &args);
    if (st != MINFER_OK)
        fail_msg("infer: %s", err);
    for (int j = 0; j < 4; j++) {
        const minfer_tensor_view *o = (const minfer_tensor_view *)(void *)(buf + (size_t)j * stride);
        if (o->dtype != MINFER_DTYPE_FLOAT || o->rank != 3)
            fail_msg("output %d (entry of %zu bytes): dtype %d rank %d, want float rank 3", j,
                     stride, (int)o->dtype, (int)o->rank);
        int64_t last = j == 1 || j == 2 ? 1 : 8;
        assert_int_equal(o->dims[0], 2);
        assert_int_equal(o->dims[1], 3);
        assert_int_equal(o->dims[2], last);
        for (size_t b = sizeof *o; b < stride; b++)
            if (buf[(size_t)j * stride + b] != GUARD)
                fail_msg("output %d: byte %zu past this header's view (the host's appended "
                         "members) was written",
                         j, b);
    }
    free(buf);
}

/* A host with a larger minfer_tensor_view says so in tensor_view_size. */
static void test_host_stride(void **state) {
    (void)state;
    check(sizeof(minfer_tensor_view) + PAD, sizeof(minfer_plugin_infer_args),
          (uint32_t)(sizeof(minfer_tensor_view) + PAD));
}

/* This header's host: the plain stride. */
static void test_same_stride(void **state) {
    (void)state;
    check(sizeof(minfer_tensor_view), sizeof(minfer_plugin_infer_args),
          (uint32_t)sizeof(minfer_tensor_view));
}

/* An older host: infer args end before tensor_view_size (whatever the
 * member holds is not read), entries of this header's size. */
static void test_older_host(void **state) {
    (void)state;
    check(sizeof(minfer_tensor_view), (uint32_t)offsetof(minfer_plugin_infer_args, tensor_view_size),
          12345);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_plugin_infer_stride CONTRIB_PLUGIN.so\n");
        return 2;
    }
    plugin_path = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_stride),
        cmocka_unit_test(test_same_stride),
        cmocka_unit_test(test_older_host),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
