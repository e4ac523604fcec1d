/*
 * The minfer execution-provider ABI.
 *
 * A provider is a shared object that minfer dlopens at run time. It exports
 * one symbol, through MINFER_PROVIDER_DEFINE, that returns a minfer_provider
 * vtable. A minimal provider:
 *
 *     static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t len) {
 *         if (strcmp(n->op_type, "Relu") == 0 && n->domain[0] == '\0') return 1;
 *         snprintf(why, len, "only Relu");
 *         return 0;
 *     }
 *     static minfer_status run(void *ctx, void *state, const minfer_exec_args *a) { ... }
 *     static const minfer_provider my_provider = {
 *         .abi_version = MINFER_PROVIDER_ABI_VERSION,
 *         .struct_size = sizeof(minfer_provider),
 *         .name = "mine", .version = "1.0",
 *         .init = my_init, .shutdown = my_shutdown,
 *         .supports_operator = supports, .execute_node = run,
 *     };
 *     MINFER_PROVIDER_DEFINE(my_provider)
 *
 * Versioning rules (docs/providers.md):
 *  - Every struct that crosses the boundary starts with a size or version
 *    field, and the arrays of minfer_value_desc and minfer_tensor_view come
 *    with their stride (minfer_node_desc.value_desc_size,
 *    minfer_exec_args.tensor_view_size). New members are only ever
 *    appended, each labelled with the ABI version that added it ("ABI 2");
 *    MINFER_PROVIDER_ABI_VERSION changes only when an existing member
 *    changes meaning or place. Step through those arrays with the stride
 *    (minfer/provider_kit.h: minfer_kit_input, minfer_kit_view_input), not
 *    with sizeof, so appending to them needs no new version.
 *  - The host checks abi_version and struct_size before it calls anything,
 *    and checks an optional member for NULL (and that struct_size covers it)
 *    before calling it. Each optional member says what NULL means.
 *  - A provider keeps all state in the ctx it returns from init (no globals),
 *    so two sessions may hold two differently configured instances.
 *
 * Life cycle, per session:
 *   init -> supports_operator (every node, in topological order)
 *        -> prepare_node (each node it was given, once per shape plan)
 *        -> execute_node (every run) -> release_node -> shutdown.
 * prepare_node may run again when a run's input shapes differ from the ones
 * a plan was built for; execute_node never allocates tensor memory: the host
 * gives it its outputs and workspace.
 */
#ifndef MINFER_PROVIDER_H
#define MINFER_PROVIDER_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "minfer/minfer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 2: minfer_value_desc.layout appended, which changed the element size
 * of the desc arrays a version-1 provider indexes with its own sizeof; the
 * strides (value_desc_size, tensor_view_size) appended so that later
 * growth of either struct does not. */
#define MINFER_PROVIDER_ABI_VERSION 2u

/* ---- Data the host hands to a provider --------------------------------- */

/* One tensor as a kernel sees it. In host memory, data points at the first
 * element and offset is 0. In a provider's own memory domain, data is the
 * provider's buffer handle (from mem_alloc) and offset the byte offset of
 * this tensor inside it. layout is 0 for plain row-major; any other value is
 * private to the provider that produced it (set through
 * minfer_node_prep.output_layouts), e.g. a blocked layout. rank == -1 on an
 * output means the host could not infer its shape before the run: the kernel
 * must call minfer_host_api.alloc_output. */
/* What kind of value a view or desc holds (minfer_value_kind, minfer.h).
 * Sequences and optionals are run by the core (never handed to a
 * provider), so every kernel sees MINFER_VALUE_TENSOR; in the core's views
 * of such a value, data points at its minfer_tensor container. */
typedef struct minfer_tensor_view {
    int32_t kind;  /* MINFER_VALUE_* */
    int32_t dtype; /* minfer_dtype (of the elements, for a sequence) */
    int32_t rank;
    int64_t dims[MINFER_MAX_RANK];
    void *data;
    size_t offset;
    size_t nbytes;   /* bytes available at data + offset */
    uint64_t layout;
} minfer_tensor_view;

/* A node input or output as known at session build or plan time. dims[i] is
 * -1 where a dimension is not known yet; rank is -1 when nothing is known.
 * const_data is non-NULL when the value is a constant known before any run
 * (an initializer, or computed from constants and shapes): host memory,
 * plain layout, const_nbytes bytes, valid until release_node. present is 0
 * for an omitted optional input (empty name). */
typedef struct minfer_value_desc {
    const char *name;
    int32_t kind; /* MINFER_VALUE_* */
    int32_t dtype;
    int32_t rank;
    int64_t dims[MINFER_MAX_RANK];
    const void *const_data;
    size_t const_nbytes;
    int32_t present;
    /* ABI 2: the layout the value arrives in at execute_node: the one its
     * producer's provider reported (minfer_node_prep.output_layouts) when
     * producer and this node compute in the same memory domain, else 0
     * (plain). Known from prepare_node on (0 at supports_operator). */
    uint64_t layout;
} minfer_value_desc;

/* One node. Attributes are read through minfer_host_api's attr_* calls. */
typedef struct minfer_node_desc {
    uint32_t struct_size;
    const char *name;    /* never NULL; "" when the model gives none */
    const char *op_type;
    const char *domain;  /* "" for the ONNX default domain */
    int64_t opset;       /* the model's opset version for this domain */
    size_t n_inputs;
    size_t n_outputs;
    const minfer_value_desc *inputs;
    const minfer_value_desc *outputs;
    const void *host_node; /* opaque, for the attribute accessors */
    /* ABI 2: the host's sizeof(minfer_value_desc), the stride of inputs
     * and outputs (minfer_kit_input steps by it). */
    uint32_t value_desc_size;
} minfer_node_desc;

/* Filled by prepare_node. The host zero-fills it and sets every
 * output_inplace[i] to -1 and output_layouts[i] to 0 before the call. */
typedef struct minfer_node_prep {
    uint32_t struct_size;
    size_t workspace_bytes;     /* scratch per execution, in the provider's domain */
    int32_t *output_inplace;    /* n_outputs entries: index of an input whose buffer
                                   output i may overwrite, or -1 */
    uint64_t *output_layouts;   /* n_outputs entries: layout each output will have */
    /* ABI 2, appended: n_inputs entries, zeroed by the host, or NULL (the
     * host does not ask; check MINFER_STRUCT_HAS and NULL before writing).
     * The provider sets entry i to 1 when it copied constant input i
     * (const_data) into storage of its own at this call and reads the
     * host's copy no more: not at execute_node, not through another node's
     * state. The host may then give that copy's memory back once every
     * reader of the constant has said so (docs/providers.md). */
    uint8_t *const_packed;
} minfer_node_prep;

/* ABI 2, appended: one packed copy of a node's constant input, handed out
 * by minfer_provider.export_packed at compile time and back through
 * minfer_host_api.packed_consts at load (docs/format.md, section PACK). */
typedef struct minfer_packed_const {
    uint32_t struct_size;
    uint32_t input;   /* the node's input index */
    const char *tag;  /* NUL-terminated, at most 255 characters: what the bytes depend on
                         (library version, CPU ISA, packed layout), the provider's own */
    const void *data; /* the packed bytes */
    size_t bytes;
} minfer_packed_const;

/* Everything execute_node needs for one run of one node. */
typedef struct minfer_exec_args {
    uint32_t struct_size;
    void *run;                       /* opaque run handle, for alloc_output */
    const minfer_node_desc *node;
    const minfer_tensor_view *inputs; /* n_inputs; an omitted one has data NULL, rank -1 */
    size_t n_inputs;
    minfer_tensor_view *outputs;
    size_t n_outputs;
    void *workspace;                 /* workspace_bytes from prepare, or NULL; in a
                                        device domain, the buffer handle */
    size_t workspace_bytes;
    size_t workspace_offset;         /* ABI 1, appended: byte offset of the workspace
                                        inside that buffer (always 0 in host memory) */
    /* ABI 2: the host's sizeof(minfer_tensor_view), the stride of inputs
     * and outputs (minfer_kit_view_input steps by it). */
    uint32_t tensor_view_size;
} minfer_exec_args;

/* Attribute types, numbered as ONNX's AttributeProto.AttributeType. */
enum {
    MINFER_ATTR_UNDEFINED = 0,
    MINFER_ATTR_FLOAT = 1,
    MINFER_ATTR_INT = 2,
    MINFER_ATTR_STRING = 3,
    MINFER_ATTR_TENSOR = 4,
    MINFER_ATTR_GRAPH = 5,
    MINFER_ATTR_FLOATS = 6,
    MINFER_ATTR_INTS = 7,
    MINFER_ATTR_STRINGS = 8,
    MINFER_ATTR_TENSORS = 9,
    MINFER_ATTR_GRAPHS = 10
};

/* ---- Services the host offers a provider ------------------------------- */

typedef void (*minfer_range_fn)(void *arg, size_t begin, size_t end);

typedef struct minfer_host_api {
    uint32_t abi_version;
    uint32_t struct_size;
    /* Logs through the session's logger (level: minfer_log_level). */
    void (*log)(void *host, int level, const char *fmt, ...);
    /* Sets the message the failing call will report (thread-local). */
    void (*set_error)(void *host, const char *fmt, ...);
    /* Attribute accessors: return 1 and fill out when the attribute exists
     * with that type, 0 otherwise. Pointers live as long as the session. */
    int (*attr_type)(const minfer_node_desc *node, const char *name);
    int (*attr_int)(const minfer_node_desc *node, const char *name, int64_t *out);
    int (*attr_float)(const minfer_node_desc *node, const char *name, float *out);
    int (*attr_string)(const minfer_node_desc *node, const char *name, const char **out,
                       size_t *len);
    int (*attr_ints)(const minfer_node_desc *node, const char *name, const int64_t **out,
                     size_t *count);
    int (*attr_floats)(const minfer_node_desc *node, const char *name, const float **out,
                       size_t *count);
    int (*attr_tensor)(const minfer_node_desc *node, const char *name, minfer_tensor_view *out);
    /* Threads of the session's pool (>= 1); under the pipeline scheduler,
     * one stage's share of them. From execute_node: run_num_threads. */
    int (*num_threads)(void *host);
    /* Calls fn(arg, begin, end) over [0, n) split into chunks of at least
     * grain items across the session's pool; returns when all are done.
     * For prepare_node; from execute_node, run_parallel_for (below). */
    void (*parallel_for)(void *host, size_t n, size_t grain, minfer_range_fn fn, void *arg);
    /* For an output whose rank was -1 at execute time: allocates it with
     * this shape and fills args->outputs[index]. The element type is taken
     * from args->outputs[index].dtype: set it first if the host left it 0. */
    minfer_status (*alloc_output)(void *run, size_t index, int32_t rank, const int64_t *dims);
    /* Appended members (check with MINFER_HOST_HAS, minfer/provider_kit.h,
     * before use). */
    /* ABI 1, appended: a STRINGS attribute: *out receives count NUL-terminated strings. */
    int (*attr_strings)(const minfer_node_desc *node, const char *name, const char *const **out,
                        size_t *count);
    /* ABI 1, appended: host memory for the provider's own use (node state, scratch): like
     * malloc, and freed with free(), but counted by the host, so its
     * allocation-failure tests reach the provider. NULL when it fails. */
    void *(*alloc)(void *host, size_t bytes);
    /* ABI 1, appended: charges work to the run's budget (minfer_run_limits.max_run_elements)
     * before a kernel whose cost is not proportional to its outputs starts
     * it (an Einsum's products); run is minfer_exec_args.run. Returns
     * MINFER_ERR_LIMIT, with the message set, when the run cannot afford
     * it: the kernel then fails with that status. */
    minfer_status (*charge_work)(void *run, uint64_t work);
    /* ABI 2, appended: at prepare_node, the packed copies of node's
     * constant inputs that the session's compiled model file holds for the
     * provider named provider (its PACK section, written by that
     * provider's export_packed): *count entries in any order, or NULL and
     * 0. Their bytes are read-only (a mapping of the file), 64-byte
     * aligned, and valid until the session is freed. A provider uses one
     * only when its tag matches exactly what it would pack now; otherwise
     * it packs from const_data as without it. */
    const struct minfer_packed_const *(*packed_consts)(void *host, const minfer_node_desc *node,
                                                       const char *provider, size_t *count);
    /* ABI 2, appended: from execute_node, before a node keeps threads of
     * its own busy (an OpenMP build; parallel_for needs no claim): asks for
     * want threads, the calling one included, and returns how many it may
     * use, 1 <= n <= want. The parallel scheduler gives a node running
     * beside others 1, and one running alone up to the session's threads,
     * starting no other node until it returns; a pipeline stage gives its
     * own threads. The claim lasts until execute_node returns. NULL (an
     * older host): the provider uses the count it was built for. */
    int (*claim_threads)(void *host, int want);
    /* ABI 2, appended: from prepare_node, for a provider packing a large
     * constant input a slice at a time: it has copied bytes
     * [offset, offset + bytes) of input's const_data into storage of its
     * own and reads them no more during this call. The host may give their
     * memory back at once (so the plain copy shrinks as the packed one
     * grows); until prepare_node returns those bytes may read as anything,
     * and from then on they hold the constant again. NULL (an older host):
     * nothing is given back before prepare_node returns. */
    void (*const_consumed)(void *host, const minfer_node_desc *node, size_t input,
                           size_t offset, size_t bytes);
    /* ABI 2, appended: the run-taking forms of num_threads, parallel_for,
     * claim_threads and log, for execute_node and the calls it makes (run
     * is minfer_exec_args.run; a plugin's compute has it as args->run).
     * They split the node's work over what the run's scheduler gives it
     * (the parallel scheduler's threads, shared with the nodes running
     * beside it; a pipeline stage's own threads), claim threads from that
     * scheduler, and log with the run's minfer_run_options (its tag and
     * level). Call them when MINFER_HOST_HAS says the host has them; the
     * host-taking members know no run (see providers.md, "Threads"): their
     * parallel_for splits over the session's pool when no run holds it and
     * runs serially otherwise, their claim_threads grants more than 1 only
     * under the sequential scheduler, and their log lines carry no run's
     * tag. run NULL (a build-time call): the session's pool, no claim. */
    int (*run_num_threads)(void *run);
    void (*run_parallel_for)(void *run, size_t n, size_t grain, minfer_range_fn fn, void *arg);
    int (*run_claim_threads)(void *run, int want);
    void (*run_log)(void *run, int level, const char *fmt, ...);
    /* ABI 2, appended: the precision the session allows (a
     * minfer_precision, minfer_options_set_precision): MINFER_PRECISION_BF16
     * lets a provider read bfloat16 copies of float activations and weights
     * in its products (accumulating in float); a provider without such
     * kernels computes in float as always. */
    int (*precision)(void *host);
} minfer_host_api;

/* Bytes per element of a minfer_dtype (sizeof(char *) for strings), 0 for
 * an unknown type: the same as minfer_dtype_size, without linking
 * libminfer. */
static inline size_t minfer_elem_size(int32_t dtype) {
    switch (dtype) {
    case MINFER_DTYPE_UINT8:
    case MINFER_DTYPE_INT8:
    case MINFER_DTYPE_BOOL:
        return 1;
    case MINFER_DTYPE_UINT16:
    case MINFER_DTYPE_INT16:
    case MINFER_DTYPE_FLOAT16:
    case MINFER_DTYPE_BFLOAT16:
        return 2;
    case MINFER_DTYPE_FLOAT:
    case MINFER_DTYPE_INT32:
    case MINFER_DTYPE_UINT32:
        return 4;
    case MINFER_DTYPE_DOUBLE:
    case MINFER_DTYPE_INT64:
    case MINFER_DTYPE_UINT64:
    case MINFER_DTYPE_COMPLEX64:
        return 8;
    case MINFER_DTYPE_COMPLEX128:
        return 16;
    case MINFER_DTYPE_STRING:
        return sizeof(char *);
    default:
        return 0;
    }
}

/* The ONNX name of an element type ("float", "int64"; "undefined" for 0
 * and unknown values), for messages: minfer_dtype_name without linking
 * libminfer. */
static inline const char *minfer_elem_name(int32_t dtype) {
    static const char *const names[] = {"undefined", "float",   "uint8",     "int8",
                                        "uint16",    "int16",   "int32",     "int64",
                                        "string",    "bool",    "float16",   "double",
                                        "uint32",    "uint64",  "complex64", "complex128",
                                        "bfloat16"};
    return dtype >= 0 && dtype < (int32_t)(sizeof names / sizeof names[0]) ? names[dtype]
                                                                            : "undefined";
}

/* ---- Checked sizes ------------------------------------------------------
 * Every element count and byte count in minfer, in the core and in the
 * providers, is computed with these: a count that does not fit is an error
 * (MINFER_ERR_LIMIT), never a product that wrapped to 0 or to a small
 * number. They return MINFER_OK and store the result, or MINFER_ERR_LIMIT
 * (MINFER_ERR_UNSUPPORTED for an unknown dtype) and leave *out alone; the
 * caller sets the message, naming its node and value. Element counts are
 * int64_t (ONNX dims), byte counts size_t. */

#if defined(__GNUC__) || defined(__clang__)
#define MINFER_MUL_OVERFLOWS_(a, b, out) __builtin_mul_overflow((a), (b), (out))
#define MINFER_ADD_OVERFLOWS_(a, b, out) __builtin_add_overflow((a), (b), (out))
#define MINFER_SUB_OVERFLOWS_(a, b, out) __builtin_sub_overflow((a), (b), (out))
#else
#error "minfer/provider.h needs __builtin_mul_overflow (GCC or Clang)"
#endif

/* *out = a * b in size_t. */
static inline minfer_status minfer_size_mul(size_t a, size_t b, size_t *out) {
    size_t r;
    if (MINFER_MUL_OVERFLOWS_(a, b, &r))
        return MINFER_ERR_LIMIT;
    *out = r;
    return MINFER_OK;
}

/* *out = a + b in size_t. */
static inline minfer_status minfer_size_add(size_t a, size_t b, size_t *out) {
    size_t r;
    if (MINFER_ADD_OVERFLOWS_(a, b, &r))
        return MINFER_ERR_LIMIT;
    *out = r;
    return MINFER_OK;
}

/* *out = a * b in int64_t. */
static inline minfer_status minfer_i64_mul(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (MINFER_MUL_OVERFLOWS_(a, b, &r))
        return MINFER_ERR_LIMIT;
    *out = r;
    return MINFER_OK;
}

/* *out = a + b in int64_t. */
static inline minfer_status minfer_i64_add(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (MINFER_ADD_OVERFLOWS_(a, b, &r))
        return MINFER_ERR_LIMIT;
    *out = r;
    return MINFER_OK;
}

/* *out = a - b in int64_t. */
static inline minfer_status minfer_i64_sub(int64_t a, int64_t b, int64_t *out) {
    int64_t r;
    if (MINFER_SUB_OVERFLOWS_(a, b, &r))
        return MINFER_ERR_LIMIT;
    *out = r;
    return MINFER_OK;
}

/* Elements of a tensor of shape dims[0..rank): an error for a rank outside
 * 0..MINFER_MAX_RANK, a negative (unknown) dim, or a product above
 * INT64_MAX or SIZE_MAX. A 0 anywhere gives 0, whatever the other dims. */
static inline minfer_status minfer_dims_numel(const int64_t *dims, int32_t rank, int64_t *out) {
    if (rank < 0 || rank > MINFER_MAX_RANK || (rank > 0 && !dims))
        return MINFER_ERR_LIMIT;
    int empty = 0;
    for (int32_t i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return MINFER_ERR_LIMIT;
        empty |= dims[i] == 0;
    }
    if (empty) {
        *out = 0;
        return MINFER_OK;
    }
    int64_t n = 1;
    for (int32_t i = 0; i < rank; i++)
        if (minfer_i64_mul(n, dims[i], &n) != MINFER_OK)
            return MINFER_ERR_LIMIT;
    if ((uint64_t)n > (uint64_t)SIZE_MAX)
        return MINFER_ERR_LIMIT;
    *out = n;
    return MINFER_OK;
}

/* Bytes of a plain tensor of dtype and shape dims[0..rank). */
static inline minfer_status minfer_dims_bytes(int32_t dtype, const int64_t *dims, int32_t rank,
                                              size_t *out) {
    size_t es = minfer_elem_size(dtype);
    int64_t n;
    if (es == 0)
        return MINFER_ERR_UNSUPPORTED;
    if (minfer_dims_numel(dims, rank, &n) != MINFER_OK)
        return MINFER_ERR_LIMIT;
    return minfer_size_mul((size_t)n, es, out);
}

/* Bytes of a plain tensor with the view's dtype and shape (an error for
 * rank -1): what a kernel may touch, to check against v->nbytes. */
static inline minfer_status minfer_view_nbytes(const minfer_tensor_view *v, size_t *out) {
    return minfer_dims_bytes(v->dtype, v->dims, v->rank, out);
}

/* The dimensions [*first, *last) of a rank-r tensor that Shape with
 * attributes start and end (opset 15; end defaults to r) returns: negative
 * values count from the end, then both are clamped to [0, r]; *last may
 * equal *first (none). The one rule, for the core's inference, folding and
 * optimizer and for every provider's kernel. */
static inline void minfer_shape_range(int64_t r, int64_t start, int64_t end, int64_t *first,
                                      int64_t *last) {
    start = start < 0 ? start + r : start;
    end = end < 0 ? end + r : end;
    *first = start < 0 ? 0 : start > r ? r : start;
    *last = end < 0 ? 0 : end > r ? r : end;
    if (*last < *first)
        *last = *first;
}

/* String tensors (MINFER_DTYPE_STRING): elements are char *. The host hands
 * a kernel string outputs with every element NULL; the kernel stores
 * strings allocated with the C library's malloc, and the host frees them
 * (with free) when the value dies. A NULL element reads as "". */

/* ---- The provider vtable ----------------------------------------------- */

typedef struct minfer_provider {
    uint32_t abi_version; /* MINFER_PROVIDER_ABI_VERSION the provider was built with */
    uint32_t struct_size; /* sizeof(minfer_provider) the provider was built with */
    const char *name;     /* short, lower case: "cpu", "onednn", "opencl" */
    const char *version;

    /* Creates an instance for one session. options is the provider's option
     * string from the session ("" when none). Required. On failure, set the
     * reason with host_api->set_error. */
    minfer_status (*init)(const minfer_host_api *host_api, void *host, const char *options,
                          void **ctx);
    /* Destroys the instance. Required. */
    void (*shutdown)(void *ctx);

    /* 1 if the provider runs this node; else 0 and a reason in why. Required. */
    int (*supports_operator)(void *ctx, const minfer_node_desc *node, char *why, size_t why_size);
    /* Builds per-node state for the node's shapes (pre-packed weights,
     * primitives). NULL: the node needs no state and *node_state is NULL. */
    minfer_status (*prepare_node)(void *ctx, const minfer_node_desc *node,
                                  minfer_node_prep *prep, void **node_state);
    /* Frees what prepare_node made. NULL: nothing to free. */
    void (*release_node)(void *ctx, void *node_state);
    /* Runs the node. Required. */
    minfer_status (*execute_node)(void *ctx, void *node_state, const minfer_exec_args *args);

    /* Memory domain. NULL memory_domain (or "host") means the provider
     * computes in host memory and the members below are not used. */
    const char *memory_domain;
    size_t memory_alignment; /* 0: the host's default (64) */
    minfer_status (*mem_alloc)(void *ctx, size_t bytes, void **buffer);
    void (*mem_free)(void *ctx, void *buffer);
    /* Copies a tensor of this domain to plain host memory (dst_bytes long),
     * converting from src->layout as needed. */
    minfer_status (*copy_to_host)(void *ctx, const minfer_tensor_view *src, void *dst,
                                  size_t dst_bytes);
    /* Copies plain host data into a tensor of this domain, in dst->layout. */
    minfer_status (*copy_from_host)(void *ctx, const void *src, size_t src_bytes,
                                    const minfer_tensor_view *dst);
    /* Waits for queued work. NULL: execution is synchronous. */
    minfer_status (*synchronize)(void *ctx);
    /* Bytes of storage a tensor needs in its layout. NULL: dtype size * numel. */
    size_t (*tensor_bytes)(void *ctx, const minfer_tensor_view *desc);

    /* Appended members (the host reads them only when struct_size covers them). */
    /* ABI 1, appended: non-zero: the domain's buffer handles are host pointers, and the
     * provider reads a plain tensor given as (host pointer, offset) as well
     * as one in its own buffers. The host then hands it plain host values
     * (graph inputs, other providers' outputs) in place instead of copying
     * them into its domain. */
    int32_t host_addressable;
    /* ABI 1, appended: the device an instance computes on: writes one line naming it into
     * buf ("Intel(R) Xeon(R) CPU (OpenCL platform 'Portable Computing
     * Language')") and returns its kind, MINFER_DEVICE_*. NULL: the host's
     * CPU. The host leaves a provider on a CPU device out of the default
     * provider order when it is not the CPU provider (it then only runs when
     * named), and `minfer providers` shows the line. */
    int32_t (*describe_device)(void *ctx, char *buf, size_t size);
    /* ABI 2, appended: what the instance counted over its last run (from
     * the end of one synchronize to the end of the next): commands
     * enqueued, host waits for device work, transfers between host and
     * device (minfer_device_counters, minfer.h). It writes only the fields
     * out->struct_size covers. The host hands the figures to
     * minfer_session_device_counters (minfer info, minfer bench). NULL: the
     * provider counts nothing, and the session says so. */
    minfer_status (*run_counters)(void *ctx, minfer_device_counters *out);
    /* ABI 2, appended: for a compiled model file (minfer_compile_model):
     * calls emit(arg, c) once for each packed copy of a constant input of
     * the node that node_state (prepare_node's) holds and that a later
     * prepare_node of the same node could take back through
     * minfer_node_prep.packed_in; c and its bytes are valid during the
     * call only. NULL: the file holds no packed copy for this provider. */
    minfer_status (*export_packed)(void *ctx, void *node_state, const minfer_node_desc *node,
                                   void (*emit)(void *arg, const minfer_packed_const *c),
                                   void *arg);
    /* ABI 2, appended: copies a tensor of this domain into another tensor of
     * this domain without the host (device values, minfer.h
     * minfer_session_device_tensor_create): src converted from src->layout
     * to dst->layout (0: plain), dst->nbytes at least the storage the
     * tensor needs (tensor_bytes). It may be queued: work enqueued later on
     * this instance, and copy_to_host, see it done. NULL: the provider does
     * not offer device values (the host then refuses to create one on it,
     * and keeps graph inputs and outputs in host memory). */
    minfer_status (*copy_in_domain)(void *ctx, const minfer_tensor_view *src,
                                    const minfer_tensor_view *dst);
} minfer_provider;

/* Kinds describe_device returns. */
enum { MINFER_DEVICE_CPU = 0, MINFER_DEVICE_GPU = 1, MINFER_DEVICE_OTHER = 2 };

/* The entry point: returns the provider's vtable (static storage), or NULL
 * if it cannot serve a host of host_abi_version. */
typedef const minfer_provider *(*minfer_provider_entry_fn)(uint32_t host_abi_version);

#define MINFER_PROVIDER_ENTRY_SYMBOL "minfer_provider_entry"

#if defined(__GNUC__)
#define MINFER_PROVIDER_EXPORT __attribute__((visibility("default")))
#else
#define MINFER_PROVIDER_EXPORT
#endif

MINFER_PROVIDER_EXPORT const minfer_provider *minfer_provider_entry(uint32_t host_abi_version);

/* Defines the entry symbol returning &desc. */
#define MINFER_PROVIDER_DEFINE(desc)                                                           \
    MINFER_PROVIDER_EXPORT const minfer_provider *minfer_provider_entry(uint32_t host_abi) {  \
        (void)host_abi;                                                                        \
        return &(desc);                                                                        \
    }

#ifdef __cplusplus
}
#endif

#endif
