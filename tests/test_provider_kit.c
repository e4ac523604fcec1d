/*
 * The provider kit (include/minfer/provider_kit.h): the versioned kernel
 * lookup and its reasons, strides through grown arrays, MINFER_HOST_HAS,
 * attribute readers, half and bfloat16 conversions against the compiler's
 * own; and the CPU provider, built against the current headers, given a
 * host API as an older host has it (ending before attr_strings): it must
 * run without the appended members and decline, with the reason, what
 * needs one.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

#include "test_util.h"

#include "minfer/provider_kit.h"

/* ---- Kernel tables ------------------------------------------------------------ */

typedef struct test_kernel {
    const char *domain;
    const char *op_type;
    int64_t since_version;
    int id;
} test_kernel;

static const test_kernel table[] = {
    {"", "Op", 1, 1}, {"", "Op", 6, 2}, {"", "Op", 13, 3}, {"dom", "Op", 1, 4}, {"", "Other", 5, 5},
};
#define N_TABLE (sizeof table / sizeof table[0])

static int lookup_id(const char *dom, const char *op, int64_t opset, int *any) {
    const test_kernel *k = MINFER_KIT_LOOKUP(test_kernel, table, N_TABLE, dom, op, opset, any);
    return k ? k->id : 0;
}

static void test_lookup_by_opset(void **state) {
    (void)state;
    int any;
    assert_int_equal(lookup_id("", "Op", 1, &any), 1);
    assert_int_equal(lookup_id("", "Op", 5, &any), 1);
    assert_int_equal(lookup_id("", "Op", 6, &any), 2);
    assert_int_equal(lookup_id("", "Op", 12, &any), 2);
    assert_int_equal(lookup_id("", "Op", 21, &any), 3);
    assert_int_equal(lookup_id("dom", "Op", 3, &any), 4);
    assert_int_equal(lookup_id("", "Other", 4, &any), 0);
    assert_int_equal(any, 1);
    assert_int_equal(lookup_id("", "Nope", 13, &any), 0);
    assert_int_equal(any, 0);
    assert_int_equal(lookup_id("other", "Op", 13, &any), 0);
    assert_int_equal(any, 0);
    assert_int_equal(MINFER_KIT_TABLE_DUPLICATE(test_kernel, table, N_TABLE), -1);
    const test_kernel dup[] = {{"", "A", 1, 1}, {"", "B", 1, 2}, {"x", "A", 1, 3}, {"", "A", 1, 4}};
    assert_int_equal(MINFER_KIT_TABLE_DUPLICATE(test_kernel, dup, 4), 3);
}

static minfer_value_desc descs[4];

static minfer_node_desc node_of(const char *dom, const char *op, int64_t opset) {
    memset(descs, 0, sizeof descs);
    for (int i = 0; i < 4; i++) {
        descs[i].kind = MINFER_VALUE_TENSOR;
        descs[i].dtype = MINFER_DTYPE_FLOAT;
        descs[i].present = 1;
        descs[i].name = i < 2 ? "in" : "out";
    }
    minfer_node_desc n = {sizeof n, "n", op, dom, opset, 2, 2, descs, descs + 2, NULL,
                          sizeof(minfer_value_desc)};
    return n;
}

static void test_find_kernel_reasons(void **state) {
    (void)state;
    char why[128];
    minfer_node_desc n = node_of("", "Op", 7);
    const test_kernel *k = MINFER_KIT_FIND_KERNEL(test_kernel, table, N_TABLE, &n, "test kernel",
                                                  why, sizeof why);
    assert_non_null(k);
    assert_int_equal(k->id, 2);
    n = node_of("", "Other", 4);
    assert_null(MINFER_KIT_FIND_KERNEL(test_kernel, table, N_TABLE, &n, "test kernel", why,
                                       sizeof why));
    assert_string_equal(why, "Other: opset 4 is older than any test kernel for it");
    n = node_of("ai.x", "Nope", 4);
    assert_null(MINFER_KIT_FIND_KERNEL(test_kernel, table, N_TABLE, &n, "test kernel", why,
                                       sizeof why));
    assert_string_equal(why, "ai.x.Nope: no test kernel");
    n = node_of("", "Op", 13);
    descs[1].kind = MINFER_VALUE_SEQUENCE;
    assert_null(MINFER_KIT_FIND_KERNEL(test_kernel, table, N_TABLE, &n, "test kernel", why,
                                       sizeof why));
    assert_string_equal(why, "Op: input 1 is not a tensor");
    /* An omitted optional input is not a sequence. */
    descs[1].present = 0;
    assert_non_null(MINFER_KIT_FIND_KERNEL(test_kernel, table, N_TABLE, &n, "test kernel", why,
                                           sizeof why));
    /* No reason buffer: still an answer, nothing written. */
    n = node_of("", "Nope", 1);
    assert_null(MINFER_KIT_FIND_KERNEL(test_kernel, table, N_TABLE, &n, "test kernel", NULL, 0));
}

static void test_decline_truncates(void **state) {
    (void)state;
    char why[10];
    memset(why, 'x', sizeof why);
    minfer_kit_decline(why, sizeof why, "Conv", "kernel of rank %d", 7);
    assert_string_equal(why, "Conv: ker");
    minfer_kit_decline(why, 3, "Conv", "anything");
    assert_string_equal(why, "Co");
    minfer_kit_decline(NULL, 0, "Conv", "nothing happens");
}

/* ---- Grown structs -------------------------------------------------------------- */

/* A desc and a view as a newer host might have them: members appended. */
typedef struct grown_desc {
    minfer_value_desc d;
    uint64_t future[3];
} grown_desc;

typedef struct grown_view {
    minfer_tensor_view v;
    uint64_t future[5];
} grown_view;

static void test_strides(void **state) {
    (void)state;
    grown_desc in[3];
    grown_view views[3];
    memset(in, 0, sizeof in);
    memset(views, 0, sizeof views);
    for (int i = 0; i < 3; i++) {
        in[i].d.present = 1;
        in[i].d.rank = i;
        in[i].d.layout = 40u + (uint64_t)i;
        views[i].v.rank = 10 + i;
    }
    in[1].d.present = 0;
    minfer_node_desc n = {sizeof n, "n", "Op", "", 1, 3, 3, &in[0].d, &in[0].d, NULL,
                          sizeof(grown_desc)};
    assert_ptr_equal(minfer_kit_input(&n, 0), &in[0].d);
    assert_null(minfer_kit_input(&n, 1)); /* omitted */
    assert_ptr_equal(minfer_kit_input(&n, 2), &in[2].d);
    assert_null(minfer_kit_input(&n, 3));
    assert_ptr_equal(minfer_kit_output(&n, 2), &in[2].d);
    assert_int_equal(minfer_kit_input_layout(&n, 2), 42);
    assert_int_equal(minfer_kit_input_layout(&n, 1), 0);
    /* A host whose descs end before layout: the member reads as absent. */
    n.value_desc_size = (uint32_t)offsetof(minfer_value_desc, layout);
    assert_false(MINFER_DESC_HAS(&n, layout));
    assert_int_equal(minfer_kit_input_layout(&n, 0), 0);
    /* A host older than the stride member: the provider's own sizeof. */
    n.struct_size = (uint32_t)offsetof(minfer_node_desc, value_desc_size);
    n.value_desc_size = 12345;
    assert_int_equal(minfer_kit_desc_stride(&n), sizeof(minfer_value_desc));

    minfer_exec_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.inputs = &views[0].v;
    a.outputs = &views[0].v;
    a.n_inputs = a.n_outputs = 3;
    a.tensor_view_size = sizeof(grown_view);
    assert_int_equal(minfer_kit_view_input(&a, 2)->rank, 12);
    assert_ptr_equal(minfer_kit_view_output(&a, 1), &views[1].v);
    assert_null(minfer_kit_view_input(&a, 3));
    a.struct_size = (uint32_t)offsetof(minfer_exec_args, tensor_view_size);
    assert_int_equal(minfer_kit_view_stride(&a), sizeof(minfer_tensor_view));
}

/* ---- A host API for the provider --------------------------------------------------- */

static char last_error[512];

static void host_log(void *host, int level, const char *fmt, ...) {
    (void)host;
    (void)level;
    (void)fmt;
}

static void host_set_error(void *host, const char *fmt, ...) {
    (void)host;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
}

static const char *const stopwords[] = {"a", "the"};

/* The node's attributes: a StringNormalizer has stopwords, an op "Attrs"
 * has k = 7 and ints [1, 2, 3]. */
static int host_attr_type(const minfer_node_desc *n, const char *name) {
    if (!strcmp(n->op_type, "StringNormalizer") && !strcmp(name, "stopwords"))
        return MINFER_ATTR_STRINGS;
    if (!strcmp(n->op_type, "Attrs") && !strcmp(name, "k"))
        return MINFER_ATTR_INT;
    if (!strcmp(n->op_type, "Attrs") && !strcmp(name, "ks"))
        return MINFER_ATTR_INTS;
    return MINFER_ATTR_UNDEFINED;
}

static int host_attr_int(const minfer_node_desc *n, const char *name, int64_t *out) {
    if (host_attr_type(n, name) != MINFER_ATTR_INT)
        return 0;
    *out = 7;
    return 1;
}

static int host_attr_float(const minfer_node_desc *n, const char *name, float *out) {
    (void)n, (void)name, (void)out;
    return 0;
}

static int host_attr_string(const minfer_node_desc *n, const char *name, const char **out,
                            size_t *len) {
    (void)n, (void)name, (void)out, (void)len;
    return 0;
}

static const int64_t ks[] = {1, 2, 3};

static int host_attr_ints(const minfer_node_desc *n, const char *name, const int64_t **out,
                          size_t *count) {
    if (host_attr_type(n, name) != MINFER_ATTR_INTS)
        return 0;
    *out = ks;
    *count = 3;
    return 1;
}

static int host_attr_floats(const minfer_node_desc *n, const char *name, const float **out,
                            size_t *count) {
    (void)n, (void)name, (void)out, (void)count;
    return 0;
}

static int host_attr_tensor(const minfer_node_desc *n, const char *name, minfer_tensor_view *out) {
    (void)n, (void)name, (void)out;
    return 0;
}

static int host_threads(void *host) {
    (void)host;
    return 1;
}

static void host_parallel_for(void *host, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    (void)host;
    (void)grain;
    if (n)
        fn(arg, 0, n);
}

static minfer_status host_alloc_output(void *run, size_t index, int32_t rank,
                                       const int64_t *dims) {
    (void)run, (void)index, (void)rank, (void)dims;
    return MINFER_ERR_UNSUPPORTED;
}

static int host_attr_strings(const minfer_node_desc *n, const char *name,
                             const char *const **out, size_t *count) {
    if (host_attr_type(n, name) != MINFER_ATTR_STRINGS)
        return 0;
    *out = stopwords;
    *count = 2;
    return 1;
}

static size_t allocs;

static void *host_alloc(void *host, size_t bytes) {
    (void)host;
    allocs++;
    return malloc(bytes);
}

/* The host API; older: as a host of before attr_strings has it. */
static minfer_host_api host_api(int older) {
    minfer_host_api api = {
        .abi_version = MINFER_PROVIDER_ABI_VERSION,
        .struct_size = sizeof api,
        .log = host_log,
        .set_error = host_set_error,
        .attr_type = host_attr_type,
        .attr_int = host_attr_int,
        .attr_float = host_attr_float,
        .attr_string = host_attr_string,
        .attr_ints = host_attr_ints,
        .attr_floats = host_attr_floats,
        .attr_tensor = host_attr_tensor,
        .num_threads = host_threads,
        .parallel_for = host_parallel_for,
        .alloc_output = host_alloc_output,
        .attr_strings = host_attr_strings,
        .alloc = host_alloc,
    };
    if (older) {
        /* What a shorter struct leaves past its end is not the provider's
         * to read: poison it, so a read that skipped the check fails. */
        api.struct_size = (uint32_t)offsetof(minfer_host_api, attr_strings);
        api.attr_strings = NULL;
        memset(&api.alloc, 0xff, sizeof api.alloc);
    }
    return api;
}

static void test_host_has(void **state) {
    (void)state;
    minfer_host_api api = host_api(0);
    assert_true(MINFER_HOST_HAS(&api, alloc_output));
    assert_true(MINFER_HOST_HAS(&api, attr_strings));
    assert_true(MINFER_HOST_HAS(&api, alloc));
    assert_false(MINFER_HOST_HAS(&api, charge_work)); /* covered, but NULL */
    api = host_api(1);
    assert_true(MINFER_HOST_HAS(&api, alloc_output));
    assert_false(MINFER_HOST_HAS(&api, attr_strings));
    assert_false(MINFER_HOST_HAS(&api, alloc)); /* not covered, whatever is there */
}

/* ---- The node skeleton ----------------------------------------------------------- */

static int states_freed;

static void free_state(void *op_state) {
    states_freed += op_state != NULL;
    free(op_state);
}

static void *zalloc(void *ctx, size_t bytes) {
    (void)ctx;
    return calloc(1, bytes);
}

/* Entry 2 refuses, after making state (which the skeleton must free). */
static minfer_status prepare_entry(void *ctx, const void *entry, const minfer_node_desc *node,
                                   minfer_node_prep *prep, void **op_state, char *why,
                                   size_t why_size) {
    (void)ctx;
    (void)prep;
    *op_state = malloc(16);
    if (((const test_kernel *)entry)->id == 2) {
        minfer_kit_decline(why, why_size, node->op_type, "entry 2 refuses");
        return MINFER_ERR_UNSUPPORTED;
    }
    return *op_state ? MINFER_OK : MINFER_ERR_NOMEM;
}

static const minfer_kit_skeleton skeleton = {"test", prepare_entry, free_state, zalloc};

static minfer_status fail_with(const minfer_host_api *api, const minfer_node_desc *n,
                               const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    minfer_status st = minfer_kit_vfail(api, NULL, "test", n, MINFER_ERR_RUNTIME, fmt, ap);
    va_end(ap);
    return st;
}

static void test_skeleton(void **state) {
    (void)state;
    minfer_host_api api = host_api(0);
    minfer_node_desc n = node_of("", "Op", 1);
    void *st = NULL;
    char why[64] = "";
    states_freed = 0;
    assert_int_equal(minfer_kit_prepare_node(&skeleton, &api, NULL, NULL, &table[0], &n, NULL,
                                             &st, why, sizeof why),
                     MINFER_OK);
    assert_non_null(st);
    assert_ptr_equal(((const minfer_kit_node *)st)->entry, &table[0]);
    minfer_kit_release_node(&skeleton, st);
    assert_int_equal(states_freed, 1);
    minfer_kit_release_node(&skeleton, NULL);

    assert_int_equal(minfer_kit_prepare_node(&skeleton, &api, NULL, NULL, &table[1], &n, NULL,
                                             &st, why, sizeof why),
                     MINFER_ERR_UNSUPPORTED);
    assert_null(st);
    assert_int_equal(states_freed, 2);
    assert_string_equal(last_error, "test: node 'n': Op: entry 2 refuses");

    snprintf(why, sizeof why, "Op: no test kernel");
    assert_int_equal(minfer_kit_prepare_node(&skeleton, &api, NULL, NULL, NULL, &n, NULL, &st,
                                             why, sizeof why),
                     MINFER_ERR_UNSUPPORTED);
    assert_null(st);
    assert_string_equal(last_error, "test: node 'n': Op: no test kernel");

    assert_int_equal(fail_with(&api, &n, "bad %d", 3), MINFER_ERR_RUNTIME);
    assert_string_equal(last_error, "test: node 'n' (Op): bad 3");
    char buf[8];
    size_t size = 0;
    char *w = minfer_kit_why(NULL, &size, buf, sizeof buf);
    assert_ptr_equal(w, buf);
    assert_int_equal(size, sizeof buf);
    assert_string_equal(w, "");
}

static void test_attr_readers(void **state) {
    (void)state;
    minfer_host_api api = host_api(0);
    minfer_node_desc n = node_of("", "Attrs", 1);
    char why[128] = "";
    assert_int_equal(minfer_kit_attr_int(&api, &n, "k", 3), 7);
    assert_int_equal(minfer_kit_attr_int(&api, &n, "z", 3), 3);
    assert_true(minfer_kit_has_attr(&api, &n, "k"));
    assert_false(minfer_kit_has_attr(&api, &n, "z"));
    assert_true(minfer_kit_attr_float(&api, &n, "f", 0.5f) == 0.5f);
    assert_string_equal(minfer_kit_attr_str(&api, &n, "s", "dflt"), "dflt");
    int64_t out[3];
    size_t count;
    assert_int_equal(minfer_kit_attr_ints(&api, &n, "ks", out, 3, &count, why, sizeof why), 1);
    assert_int_equal(count, 3);
    assert_int_equal(out[2], 3);
    assert_int_equal(minfer_kit_attr_ints(&api, &n, "ks", out, 2, &count, why, sizeof why), -1);
    assert_string_equal(why, "Attrs: attribute 'ks' has 3 entries, at most 2 supported");
    assert_int_equal(minfer_kit_attr_ints(&api, &n, "no", out, 2, &count, why, sizeof why), 0);

    const int32_t c32[] = {4, -5};
    descs[1].dtype = MINFER_DTYPE_INT32;
    descs[1].const_data = c32;
    descs[1].const_nbytes = sizeof c32;
    assert_int_equal(minfer_kit_const_ints(&n, 1, out, 3, &count, why, sizeof why), 1);
    assert_int_equal(count, 2);
    assert_int_equal(out[1], -5);
    assert_int_equal(minfer_kit_const_ints(&n, 1, out, 1, &count, why, sizeof why), -1);
    assert_string_equal(why, "Attrs: input 1 has 2 entries, at most 1 supported");
    assert_int_equal(minfer_kit_const_ints(&n, 0, out, 3, &count, why, sizeof why), 0);
    descs[1].dtype = MINFER_DTYPE_FLOAT;
    assert_int_equal(minfer_kit_const_ints(&n, 1, out, 3, &count, why, sizeof why), -1);
    assert_string_equal(why, "Attrs: input 1 must be int32 or int64");
}

static void test_shapes(void **state) {
    (void)state;
    const int64_t d[] = {2, 3, 4}, neg[] = {2, -1}, zero[] = {0, INT64_MAX};
    assert_int_equal(minfer_kit_numel(3, d), 24);
    assert_int_equal(minfer_kit_numel(0, NULL), 1);
    assert_int_equal(minfer_kit_numel(2, neg), -1);
    assert_int_equal(minfer_kit_numel(2, zero), 0);
    assert_int_equal(minfer_kit_axis(-1, 3), 2);
    assert_int_equal(minfer_kit_axis(3, 3), -1);
    assert_int_equal(minfer_kit_axis(-4, 3), -1);
    assert_string_equal(minfer_elem_name(MINFER_DTYPE_BFLOAT16), "bfloat16");
    assert_string_equal(minfer_elem_name(99), "undefined");
}

/* ---- Half and bfloat16 ------------------------------------------------------------ */

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void test_half_round_trip(void **state) {
    (void)state;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = minfer_half_to_float((uint16_t)h);
        uint16_t back = minfer_float_to_half(f);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
            assert_true(isnan(f));
            assert_true((back & 0x7c00) == 0x7c00 && (back & 0x3ff));
        } else if (back != h) {
            fail_msg("half 0x%04x -> %a -> 0x%04x", (unsigned)h, (double)f, (unsigned)back);
        }
#if defined(__FLT16_MAX__)
        _Float16 ref;
        uint16_t hb = (uint16_t)h;
        memcpy(&ref, &hb, sizeof ref);
        if (!isnan(f) && bits((float)ref) != bits(f))
            fail_msg("half 0x%04x: %a, the compiler says %a", (unsigned)h, (double)f,
                     (double)(float)ref);
#endif
    }
}

/* Rounding: every 4099th float bit pattern (all exponents, many mantissas)
 * against the compiler's _Float16 conversion where it has one, else a few
 * known ties. */
static void test_half_rounding(void **state) {
    (void)state;
    assert_int_equal(minfer_float_to_half(1.0f + 0x1p-11f), 0x3c00);          /* tie, even */
    assert_int_equal(minfer_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);      /* tie, up */
    assert_int_equal(minfer_float_to_half(65520.0f), 0x7c00);                  /* to inf */
    assert_int_equal(minfer_float_to_half(0x1p-25f), 0x0000);                 /* tie to 0 */
    assert_int_equal(minfer_float_to_half(0x1p-25f + 0x1p-40f), 0x0001);       /* above */
    assert_int_equal(minfer_float_to_half(-0x1p-24f), 0x8001);
#if defined(__FLT16_MAX__)
    for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) {
        float f = from_bits((uint32_t)u);
        if (isnan(f))
            continue;
        _Float16 ref = (_Float16)f;
        uint16_t want;
        memcpy(&want, &ref, sizeof want);
        uint16_t got = minfer_float_to_half(f);
        if (got != want)
            fail_msg("float %a: half 0x%04x, the compiler says 0x%04x", (double)f,
                     (unsigned)got, (unsigned)want);
    }
#endif
}

static void test_bf16(void **state) {
    (void)state;
    for (uint32_t h = 0; h <= 0xffff; h++) {
        float f = minfer_bf16_to_float((uint16_t)h);
        assert_int_equal(bits(f), h << 16);
        if (!isnan(f))
            assert_int_equal(minfer_float_to_bf16(f), h);
        else
            assert_true(isnan(minfer_bf16_to_float(minfer_float_to_bf16(f))));
    }
    assert_int_equal(minfer_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);     /* tie, even */
    assert_int_equal(minfer_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82); /* tie, up */
    assert_int_equal(minfer_float_to_bf16(from_bits(0x7f7fffffu)), 0x7f80); /* to inf */
    assert_true(isnan(minfer_bf16_to_float(minfer_float_to_bf16(from_bits(0x7f800001u)))));
}

/* ---- The CPU provider with an older host ----------------------------------------- */

typedef struct cpu_lib {
    void *handle;
    const minfer_provider *vt;
} cpu_lib;

static cpu_lib open_cpu(void) {
    cpu_lib l = {dlopen(MINFER_CPU_PROVIDER_PATH, RTLD_NOW | RTLD_LOCAL), NULL};
    if (!l.handle)
        fail_msg("dlopen %s: %s", MINFER_CPU_PROVIDER_PATH, dlerror());
    union {
        void *p;
        minfer_provider_entry_fn fn;
    } entry;
    entry.p = dlsym(l.handle, MINFER_PROVIDER_ENTRY_SYMBOL);
    assert_non_null(entry.p);
    l.vt = entry.fn(MINFER_PROVIDER_ABI_VERSION);
    assert_non_null(l.vt);
    assert_int_equal(l.vt->abi_version, MINFER_PROVIDER_ABI_VERSION);
    return l;
}

static void test_cpu_older_host_runs(void **state) {
    (void)state;
    cpu_lib l = open_cpu();
    minfer_host_api api = host_api(1);
    void *ctx = NULL, *st = NULL;
    allocs = 0;
    assert_int_equal(l.vt->init(&api, NULL, "", &ctx), MINFER_OK);
    minfer_node_desc n = node_of("", "Relu", 14);
    descs[0].rank = descs[2].rank = 1;
    descs[0].dims[0] = descs[2].dims[0] = 4;
    n.n_inputs = n.n_outputs = 1;
    n.outputs = &descs[2];
    char why[256] = "";
    assert_int_equal(l.vt->supports_operator(ctx, &n, why, sizeof why), 1);
    int32_t inplace[1] = {-1};
    uint64_t layouts[1] = {0};
    minfer_node_prep prep = {sizeof prep, 0, inplace, layouts, NULL};
    assert_int_equal(l.vt->prepare_node(ctx, &n, &prep, &st), MINFER_OK);
    float x[4] = {-1, 2, -3, 4}, y[4] = {9, 9, 9, 9};
    minfer_tensor_view in = {MINFER_VALUE_TENSOR, MINFER_DTYPE_FLOAT, 1, {4}, x, 0, sizeof x, 0};
    minfer_tensor_view out = {MINFER_VALUE_TENSOR, MINFER_DTYPE_FLOAT, 1, {4}, y, 0, sizeof y, 0};
    minfer_exec_args a = {sizeof a, NULL, &n, &in, 1, &out, 1, NULL, 0, 0,
                          sizeof(minfer_tensor_view)};
    assert_int_equal(l.vt->execute_node(ctx, st, &a), MINFER_OK);
    assert_true(y[0] == 0 && y[1] == 2 && y[2] == 0 && y[3] == 4);
    /* The host's alloc lies past the older struct's end: never called. */
    assert_int_equal(allocs, 0);
    l.vt->release_node(ctx, st);
    l.vt->shutdown(ctx);
    dlclose(l.handle);
}

static void test_cpu_older_host_declines_strings(void **state) {
    (void)state;
    cpu_lib l = open_cpu();
    for (int older = 0; older <= 1; older++) {
        minfer_host_api api = host_api(older);
        void *ctx = NULL;
        assert_int_equal(l.vt->init(&api, NULL, "", &ctx), MINFER_OK);
        minfer_node_desc n = node_of("", "StringNormalizer", 10);
        descs[0].dtype = descs[2].dtype = MINFER_DTYPE_STRING;
        descs[0].rank = descs[2].rank = 1;
        descs[0].dims[0] = descs[2].dims[0] = 2;
        n.n_inputs = n.n_outputs = 1;
        n.outputs = &descs[2];
        char why[256] = "";
        int yes = l.vt->supports_operator(ctx, &n, why, sizeof why);
        if (older) {
            assert_int_equal(yes, 0);
            assert_non_null(strstr(why, "the host cannot read the strings attribute 'stopwords'"));
        } else {
            if (!yes)
                fail_msg("declined with a current host: %s", why);
        }
        l.vt->shutdown(ctx);
    }
    dlclose(l.handle);
}

/* The one table of fused activations: names, parameter counts, defaults. */
static void test_activations(void **state) {
    (void)state;
    minfer_kit_act k;
    char why[128];
    assert_int_equal(minfer_kit_act_parse("", NULL, 0, &k, why, sizeof why), 0);
    assert_int_equal(k.kind, MINFER_KIT_ACT_NONE);
    assert_int_equal(minfer_kit_act_parse(NULL, NULL, 0, &k, why, sizeof why), 0);
    assert_int_equal(k.kind, MINFER_KIT_ACT_NONE);
    assert_int_equal(minfer_kit_act_parse("Clip", NULL, 0, &k, why, sizeof why), 0);
    assert_int_equal(k.kind, MINFER_KIT_ACT_CLIP);
    assert_true(k.p[0] == -FLT_MAX && k.p[1] == FLT_MAX && k.is_default);
    const float one[] = {-1.0f};
    assert_int_equal(minfer_kit_act_parse("Clip", one, 1, &k, why, sizeof why), 0);
    assert_true(k.p[0] == -1.0f && k.p[1] == FLT_MAX && !k.is_default && k.n_given == 1);
    assert_int_equal(minfer_kit_act_parse("LeakyRelu", NULL, 0, &k, why, sizeof why), 0);
    assert_true(k.kind == MINFER_KIT_ACT_LEAKYRELU && k.p[0] == 0.01f);
    assert_int_equal(minfer_kit_act_parse("HardSigmoid", NULL, 0, &k, why, sizeof why), 0);
    assert_true(k.p[0] == 0.2f && k.p[1] == 0.5f);
    assert_int_equal(minfer_kit_act_parse("HardSwish", NULL, 0, &k, why, sizeof why), 0);
    assert_true(k.kind == MINFER_KIT_ACT_HARDSWISH && k.is_default);
    const float two[] = {0.5f, 0.25f};
    assert_int_equal(minfer_kit_act_parse("Relu", two, 1, &k, why, sizeof why), -1);
    assert_non_null(strstr(why, "activation 'Relu': 1 activation_params, it takes 0"));
    assert_int_equal(minfer_kit_act_parse("Swish", NULL, 0, &k, why, sizeof why), -1);
    assert_non_null(strstr(why, "'Swish'"));
    const char *names[] = {"Relu", "Sigmoid", "Tanh", "Silu", "Gelu", "GeluTanh", "Elu",
                           "Selu", "Softsign", "Exp", "Log", "Sqrt", "Abs"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        assert_int_equal(minfer_kit_act_parse(names[i], NULL, 0, &k, NULL, 0), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_by_opset),
        cmocka_unit_test(test_find_kernel_reasons),
        cmocka_unit_test(test_decline_truncates),
        cmocka_unit_test(test_strides),
        cmocka_unit_test(test_host_has),
        cmocka_unit_test(test_skeleton),
        cmocka_unit_test(test_attr_readers),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_half_round_trip),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_bf16),
        cmocka_unit_test(test_activations),
        cmocka_unit_test(test_cpu_older_host_runs),
        cmocka_unit_test(test_cpu_older_host_declines_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
