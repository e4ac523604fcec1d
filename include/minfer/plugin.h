/*
 * The minfer custom-operator plugin ABI.
 *
 * A plugin is a shared object that adds operators in domains of its own
 * (com.example, com.microsoft) to the ones minfer's providers run. It
 * exports one symbol, through MINFER_PLUGIN_DEFINE, that returns a
 * minfer_plugin_info; minfer then calls its register_ops once, and the
 * plugin registers each op it implements with host->register_op. A
 * minimal plugin (plugins/example walks through a complete one):
 *
 *     static minfer_status infer(void *op, const minfer_plugin_infer_args *a) {
 *         a->outputs[0].dtype = a->node->inputs[0].dtype;   // same type and shape
 *         a->outputs[0].rank = a->node->inputs[0].rank;
 *         memcpy(a->outputs[0].dims, a->node->inputs[0].dims, sizeof a->outputs[0].dims);
 *         return MINFER_OK;
 *     }
 *     static minfer_status compute(void *op, void *state,
 *                                  const minfer_plugin_compute_args *a) { ... }
 *     static minfer_status reg(const minfer_plugin_host *host, minfer_plugin_registry *r) {
 *         static const minfer_plugin_op op = {
 *             .struct_size = sizeof(minfer_plugin_op),
 *             .domain = "com.example", .op_type = "Twice", .since_version = 1,
 *             .infer = infer, .compute = compute,
 *         };
 *         return host->register_op(r, &op);
 *     }
 *     static const minfer_plugin_info info = {
 *         .abi_version = MINFER_PLUGIN_ABI_VERSION, .struct_size = sizeof(minfer_plugin_info),
 *         .name = "example", .version = "1.0", .register_ops = reg,
 *     };
 *     MINFER_PLUGIN_DEFINE(info)
 *
 * How minfer uses it (docs/plugins.md):
 *  - A plugin named NAME lives in a file libminfer_plugin_NAME.so, found
 *    in a plugins directory beside the providers' (<libdir>/minfer/plugins
 *    when installed) or given by its path. A session's plugins come from minfer_options_add_plugin, the
 *    MINFER_PLUGINS environment variable and the CLI's --plugin. A library
 *    stays loaded while any session uses it.
 *  - The ops of all loaded plugins are run by one internal provider,
 *    "plugin", in host memory: placement, boundary copies to and from other
 *    providers, `minfer info` and the planner treat a plugin node like any
 *    node. infer gives the planner output types and shapes; create runs
 *    once per node when the session is built; compute runs every run.
 *  - The optimizer treats plugin ops as opaque: it fuses nothing across
 *    them and folds one whose inputs are all constant only when the op
 *    declares MINFER_PLUGIN_OP_DETERMINISTIC.
 *  - Two loaded plugins registering the same (domain, op type) with
 *    overlapping opset ranges is a load error naming both files.
 *  - An op in the default domain runs on the plugin only where no provider
 *    takes the node, and its infer is used only where the core has no
 *    rule for the op (ops ONNX does not define, such as ONNX Runtime's
 *    SimplifiedLayerNormalization).
 *
 * Errors: every call that can fail returns a minfer_status and may write a
 * message (without the node's name: minfer adds it, and the file's) into
 * args->err, err_size bytes. A plugin never aborts the process.
 *
 * Versioning, as for providers (include/minfer/provider.h): every struct
 * that crosses the boundary starts with abi_version or struct_size; new
 * members are only appended, and the host reads an appended member only
 * when struct_size covers it. MINFER_PLUGIN_ABI_VERSION changes only when
 * an existing member changes meaning or place. Tensors, node descriptions
 * and the attribute accessors are the provider ABI's (provider.h): a
 * plugin built with this header is built for MINFER_PROVIDER_ABI_VERSION
 * too, and MINFER_PLUGIN_ABI_VERSION changes with it whenever those structs
 * change in place. node->value_desc_size and args->tensor_view_size give
 * the host's strides of the desc and view arrays (minfer/provider_kit.h's
 * minfer_kit_input steps by them), so appended members need no new version.
 *
 * History of this header (additions only):
 *  - ABI 1: minfer_plugin_info, minfer_plugin_host, minfer_plugin_op and
 *    the infer / create / compute argument structs below (with provider
 *    ABI 2's structs; compute args' tensor_view_size appended for it).
 *  - ABI 1, appended: infer args' tensor_view_size (the stride of
 *    outputs, which infer had no way to know).
 */
#ifndef MINFER_PLUGIN_H
#define MINFER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "minfer/minfer.h"
#include "minfer/provider.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MINFER_PLUGIN_ABI_VERSION 1u

/* The host's registry a plugin registers its ops into (opaque). */
typedef struct minfer_plugin_registry minfer_plugin_registry;

/* ---- Arguments of an op's callbacks ------------------------------------ */

/* Type and shape inference, at session build (and again at run time for a
 * node whose inputs' shapes were not known at build).
 *
 * node->inputs[i] has the input's dtype, rank (-1: not known) and dims
 * (-1: a symbolic or unknown dimension), present == 0 for an omitted
 * optional input, and const_data / const_nbytes (host memory, plain
 * row-major) when the input's contents are known: an initializer, or a
 * value computed from constants and shapes. Value names (inputs[i].name,
 * node->outputs[j].name) may be "" here: name values by index in messages.
 * Attributes are read with api->attr_*(node, ...).
 *
 * The host sets every outputs[j] to dtype 0, rank -1 before the call; infer
 * fills dtype, rank and dims (-1 where not known). An output left at rank
 * -1 is allocated by compute with api->alloc_output. A dtype left 0 is an
 * error. Wrong input types or shapes, or bad attributes: return
 * MINFER_ERR_TYPE / MINFER_ERR_SHAPE / MINFER_ERR_MODEL with a message. */
typedef struct minfer_plugin_infer_args {
    uint32_t struct_size;
    const minfer_host_api *api;   /* attr_* accessors (the other members may be NULL here) */
    const minfer_node_desc *node;
    minfer_tensor_view *outputs;  /* node->n_outputs entries, to fill (stride below) */
    size_t n_outputs;
    char *err;                    /* message on failure */
    size_t err_size;
    /* Appended (plugin ABI 1 still): the host's sizeof(minfer_tensor_view),
     * the stride of outputs, as compute args' tensor_view_size. Output j is
     * at (char *)outputs + j * tensor_view_size when struct_size covers this
     * member and it is nonzero, else at &outputs[j] (an older host). A
     * plugin that writes more than output 0 must step by it: a host that
     * appends to minfer_tensor_view has larger entries than the plugin's. */
    uint32_t tensor_view_size;
} minfer_plugin_infer_args;

/* Kernel creation, once per node for each plan the session builds: when
 * the session is built, again for each new signature of input shapes a run
 * brings, and around each run for a node whose shapes are known only then.
 * node is as in infer, with the shapes that plan inferred; constant inputs
 * (weights) have const_data, valid until destroy. The state create makes
 * is destroyed with its plan. */
typedef struct minfer_plugin_create_args {
    uint32_t struct_size;
    const minfer_host_api *api;   /* the session's host API (attr_*, alloc, log) */
    void *host;                   /* first argument of api's log / alloc / parallel_for */
    const minfer_node_desc *node;
    char *err;
    size_t err_size;
} minfer_plugin_create_args;

/* One run of one node. Inputs and outputs are host memory, plain row-major
 * (layout 0), offset 0. Outputs arrive allocated with their inferred shape,
 * except one with rank -1: compute calls
 * api->alloc_output(run, index, rank, dims) for it (after setting its dtype
 * when it is 0). With MINFER_PLUGIN_OP_INPLACE an output may share the
 * buffer of its in-place input. */
typedef struct minfer_plugin_compute_args {
    uint32_t struct_size;
    const minfer_host_api *api;   /* parallel_for, num_threads, alloc_output, charge_work */
    void *host;
    void *run;                    /* for api->alloc_output and api->charge_work */
    const minfer_node_desc *node;
    const minfer_tensor_view *inputs; /* node->n_inputs; an omitted one has data NULL, rank -1 */
    size_t n_inputs;
    minfer_tensor_view *outputs;
    size_t n_outputs;
    char *err;
    size_t err_size;
    /* Added with provider ABI 2: the host's sizeof(minfer_tensor_view), the
     * stride of inputs and outputs (as minfer_exec_args.tensor_view_size). */
    uint32_t tensor_view_size;
} minfer_plugin_compute_args;

/* ---- One op ------------------------------------------------------------- */

/* Declarations an op may make (minfer_plugin_op.flags). */
enum {
    /* Same inputs and attributes, same outputs, no side effects: the
     * optimizer may compute the node at load time when all its inputs are
     * constant. Without it the node always runs. */
    MINFER_PLUGIN_OP_DETERMINISTIC = 1u << 0,
    /* Output 0 may be written into the buffer of input inplace_input
     * (when that value has no other reader and the same byte size). */
    MINFER_PLUGIN_OP_INPLACE = 1u << 1
};

typedef struct minfer_plugin_op {
    uint32_t struct_size;  /* sizeof(minfer_plugin_op) the plugin was built with */
    const char *domain;    /* "com.example"; "" (or "ai.onnx") for an op ONNX Runtime
                              writes into the default domain; not "minfer" */
    const char *op_type;
    int64_t since_version; /* first opset version of the domain it serves (>= 1) */
    int64_t until_version; /* last one; 0: no upper bound */
    uint32_t flags;        /* MINFER_PLUGIN_OP_* */
    int32_t inplace_input; /* read with MINFER_PLUGIN_OP_INPLACE */
    void *op_data;         /* passed back to every callback */

    /* Output types and shapes. Required. */
    minfer_status (*infer)(void *op_data, const minfer_plugin_infer_args *args);
    /* Per-node state (parsed attributes, packed weights). NULL: *state is
     * NULL. */
    minfer_status (*create)(void *op_data, const minfer_plugin_create_args *args,
                            void **state);
    /* Runs the node. Required. Must be safe to call from several threads at
     * once for different runs of one session (state is shared). */
    minfer_status (*compute)(void *op_data, void *state, const minfer_plugin_compute_args *args);
    /* Frees what create made. NULL: nothing to free. */
    void (*destroy)(void *op_data, void *state);
} minfer_plugin_op;

/* ---- Registration -------------------------------------------------------- */

/* What the host hands register_ops. Pointers are valid during the call. */
typedef struct minfer_plugin_host {
    uint32_t abi_version;
    uint32_t struct_size;
    const char *path;           /* the library file being loaded */
    const minfer_host_api *api; /* attr_* accessors; no session yet */
    /* Registers one op. The op struct is copied; the strings and op_data it
     * points at must live as long as the library (static storage). Returns
     * MINFER_ERR_INVALID_ARG for a malformed op (no infer or compute, an
     * empty or default domain, a bad opset range) and
     * MINFER_ERR_UNSUPPORTED when another loaded plugin already has it. */
    minfer_status (*register_op)(minfer_plugin_registry *reg, const minfer_plugin_op *op);
    /* The reason register_ops fails, when it fails for a reason of its own
     * (a CPU feature it needs is missing). */
    void (*set_error)(minfer_plugin_registry *reg, const char *message);
} minfer_plugin_host;

/* What the entry point returns (static storage). */
typedef struct minfer_plugin_info {
    uint32_t abi_version; /* MINFER_PLUGIN_ABI_VERSION the plugin was built with */
    uint32_t struct_size; /* sizeof(minfer_plugin_info) the plugin was built with */
    const char *name;     /* short, lower case: "example", "contrib" */
    const char *version;
    /* Registers every op the plugin has. Required. A failure (any status
     * but MINFER_OK) fails the load; nothing it registered is kept. */
    minfer_status (*register_ops)(const minfer_plugin_host *host, minfer_plugin_registry *reg);
} minfer_plugin_info;

/* The entry point: the plugin's info, or NULL if it cannot serve a host of
 * host_abi_version. */
typedef const minfer_plugin_info *(*minfer_plugin_entry_fn)(uint32_t host_abi_version);

#define MINFER_PLUGIN_ENTRY_SYMBOL "minfer_plugin_entry"

#if defined(__GNUC__)
#define MINFER_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define MINFER_PLUGIN_EXPORT
#endif

MINFER_PLUGIN_EXPORT const minfer_plugin_info *minfer_plugin_entry(uint32_t host_abi_version);

/* Defines the entry symbol returning &info. */
#define MINFER_PLUGIN_DEFINE(info)                                                             \
    MINFER_PLUGIN_EXPORT const minfer_plugin_info *minfer_plugin_entry(uint32_t host_abi) {    \
        (void)host_abi;                                                                        \
        return &(info);                                                                        \
    }

#ifdef __cplusplus
}
#endif

#endif
