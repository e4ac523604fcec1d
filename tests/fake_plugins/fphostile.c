/* A plugin that misbehaves against the host (issue 39; tests/test_plugins.c),
 * ops in domain com.fake:
 *   NoNulCompute  compute fills the whole error buffer with 'A' and '\x01',
 *                 no NUL, and fails
 *   NoNulInfer    infer does the same
 *   NoAlloc       infers an output of unknown rank and returns OK from
 *                 compute without allocating it
 * Its constructor counts how often it runs (fph_constructed). With
 * FPH_REENTER=1, register_ops creates a session of one Relu with this
 * plugin in its options (the host must refuse, not deadlock: status in
 * fph_reenter_status, message in fph_reenter_error) and one without
 * (fph_reenter_plain: it may work). */
#include <dlfcn.h>
#include <stdlib.h>

#include "fake_plugin.h"
#include "minfer/builder.h"
#include "minfer/minfer.h"

MINFER_PLUGIN_EXPORT int fph_constructed;
MINFER_PLUGIN_EXPORT int fph_reenter_status = -1, fph_reenter_plain = -1;
MINFER_PLUGIN_EXPORT char fph_reenter_error[512];

__attribute__((constructor)) static void constructed(void) { fph_constructed++; }

static void fill(char *err, size_t size) {
    for (size_t i = 0; i < size; i++)
        err[i] = i % 7 ? 'A' : '\x01';
}

static minfer_status no_nul_compute(void *op, void *state, const minfer_plugin_compute_args *a) {
    (void)op;
    (void)state;
    fill(a->err, a->err_size);
    return MINFER_ERR_RUNTIME;
}

static minfer_status no_nul_infer(void *op, const minfer_plugin_infer_args *a) {
    (void)op;
    fill(a->err, a->err_size);
    return MINFER_ERR_TYPE;
}

static minfer_status unknown_rank(void *op, const minfer_plugin_infer_args *a) {
    (void)op;
    a->outputs[0].dtype = MINFER_DTYPE_FLOAT;
    a->outputs[0].rank = -1;
    return MINFER_OK;
}

static minfer_status no_alloc(void *op, void *state, const minfer_plugin_compute_args *a) {
    (void)op;
    (void)state;
    (void)a;
    return MINFER_OK;
}

/* The host's functions, from the process (the plugin links none). */
typedef minfer_status (*opt_create_fn)(minfer_options **);
typedef minfer_status (*opt_plugin_fn)(minfer_options *, const char *);
typedef void (*opt_free_fn)(minfer_options *);
typedef minfer_status (*b_create_fn)(int64_t, minfer_graph_builder **);
typedef minfer_status (*b_input_fn)(minfer_graph_builder *, const char *, minfer_dtype,
                                    const int64_t *, size_t, const char *const *);
typedef minfer_status (*b_node_fn)(minfer_graph_builder *, const char *, const char *,
                                   const char *, const char *const *, size_t,
                                   const char *const *, size_t, size_t *);
typedef minfer_status (*b_output_fn)(minfer_graph_builder *, const char *);
typedef void (*b_free_fn)(minfer_graph_builder *);
typedef minfer_status (*create_fn)(const minfer_graph_builder *, const minfer_options *,
                                   minfer_session **);
typedef void (*free_fn)(minfer_session *);
typedef const char *(*err_fn)(void);

#define HOST(type, name) type name = (type)dlsym(RTLD_DEFAULT, "minfer_" #name)

/* Creates a session of one Relu from register_ops, with this plugin in its
 * options (with_self) or not; returns its status. */
static int reenter(const minfer_plugin_host *host, int with_self) {
    HOST(opt_create_fn, options_create);
    HOST(opt_plugin_fn, options_add_plugin);
    HOST(opt_free_fn, options_free);
    HOST(b_create_fn, builder_create);
    HOST(b_input_fn, builder_add_input);
    HOST(b_node_fn, builder_add_node);
    HOST(b_output_fn, builder_add_output);
    HOST(b_free_fn, builder_free);
    HOST(create_fn, session_create_from_builder);
    HOST(free_fn, session_free);
    HOST(err_fn, last_error);
    if (!options_create || !options_add_plugin || !options_free || !builder_create ||
        !builder_add_input || !builder_add_node || !builder_add_output || !builder_free ||
        !session_create_from_builder || !session_free || !last_error)
        return -2;
    minfer_options *o = NULL;
    minfer_graph_builder *b = NULL;
    minfer_session *s = NULL;
    const int64_t dims[2] = {2, 3};
    const char *in[] = {"x"}, *out[] = {"y"};
    size_t node;
    if (options_create(&o) != MINFER_OK || builder_create(13, &b) != MINFER_OK)
        return -3;
    if (with_self) {
        int st = (int)options_add_plugin(o, host->path);
        if (st != MINFER_OK) { /* refused here (the registry is locked) */
            snprintf(fph_reenter_error, sizeof fph_reenter_error, "%s", last_error());
            builder_free(b);
            options_free(o);
            return st;
        }
    }
    builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL);
    builder_add_node(b, "Relu", "", "r", in, 1, out, 1, &node);
    builder_add_output(b, "y");
    int st = (int)session_create_from_builder(b, o, &s);
    if (with_self)
        snprintf(fph_reenter_error, sizeof fph_reenter_error, "%s", last_error());
    session_free(s);
    builder_free(b);
    options_free(o);
    return st;
}

#define OP(type, inf, co)                                                                      \
    {.struct_size = sizeof(minfer_plugin_op), .domain = "com.fake", .op_type = type,            \
     .since_version = 1, .infer = inf, .compute = co}

static minfer_status reg(const minfer_plugin_host *host, minfer_plugin_registry *r) {
    static const minfer_plugin_op ops[] = {
        OP("NoNulCompute", fake_same_infer, no_nul_compute),
        OP("NoNulInfer", no_nul_infer, fake_add_one),
        OP("NoAlloc", unknown_rank, no_alloc),
    };
    const char *again = getenv("FPH_REENTER");
    if (again && again[0] == '1') {
        fph_reenter_status = reenter(host, 1);
        fph_reenter_plain = reenter(host, 0);
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        minfer_status st = host->register_op(r, &ops[i]);
        if (st != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

static const minfer_plugin_info info = {
    .abi_version = MINFER_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(minfer_plugin_info),
    .name = "fphostile",
    .version = "0",
    .register_ops = reg,
};

MINFER_PLUGIN_DEFINE(info)
