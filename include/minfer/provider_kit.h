/*
 * The provider kit: what every execution provider needs besides the ABI
 * (minfer/provider.h), header-only, so a provider still links nothing of
 * minfer. A kernel table and its lookup:
 *
 *     typedef struct my_kernel {
 *         const char *domain, *op_type;  // the kit reads these three members
 *         int64_t since_version;
 *         my_run_fn run;
 *     } my_kernel;
 *     static const my_kernel table[] = {{"", "Relu", 6, relu}, {"", "Relu", 14, relu}};
 *
 *     static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t len) {
 *         const my_kernel *k = MINFER_KIT_FIND_KERNEL(my_kernel, table, 2, n, "my kernel",
 *                                                     why, len);
 *         if (!k)
 *             return 0;  // why says "Relu: opset 5 is older than any my kernel for it"
 *         ...
 *     }
 *
 * and, at init, MINFER_KIT_TABLE_DUPLICATE to refuse a table that lists an
 * (op, domain, version) twice. Beside those:
 *  - MINFER_HOST_HAS(api, member): the host API the provider was given has
 *    that appended member (its struct_size covers it, and it is not NULL);
 *  - minfer_kit_input / _output / _view_input / _view_output: elements of a
 *    node's desc arrays and of execute_node's view arrays, stepped by the
 *    stride the host gives (ABI 2), so a provider keeps working when a newer
 *    host appends members to minfer_value_desc or minfer_tensor_view;
 *  - the node skeleton (minfer_kit_prepare_node, minfer_kit_release_node)
 *    for a node state that is a table entry plus its prepare's state, and
 *    the messages of supports/execute (minfer_kit_why, minfer_kit_vfail);
 *  - minfer_kit_decline: "Op: reason" into a supports/prepare reason buffer;
 *  - attribute readers with defaults (minfer_kit_attr_*);
 *  - half <-> float and bfloat16 <-> float, exactly rounded;
 *  - element counts and axes.
 * Element sizes, element type names (minfer_elem_name) and checked sizes
 * are in minfer/provider.h.
 */
#ifndef MINFER_PROVIDER_KIT_H
#define MINFER_PROVIDER_KIT_H

#include <float.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/provider.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Growing structs ------------------------------------------------------ */

/* 1 if *p (a struct with struct_size, of type `type`) covers `member`. */
#define MINFER_STRUCT_HAS(p, type, member)                                                     \
    ((size_t)(p)->struct_size >= offsetof(type, member) + sizeof((p)->member))

/* 1 if the host API has the appended function `member` (a host built
 * against an older header has a shorter struct): check before calling
 * attr_strings, alloc, charge_work or anything appended later. */
#define MINFER_HOST_HAS(api, member)                                                           \
    (MINFER_STRUCT_HAS(api, minfer_host_api, member) && (api)->member != NULL)

/* The stride of node->inputs / node->outputs: the host's
 * sizeof(minfer_value_desc), which grows as members are appended. */
static inline size_t minfer_kit_desc_stride(const minfer_node_desc *node) {
    if (MINFER_STRUCT_HAS(node, minfer_node_desc, value_desc_size) && node->value_desc_size)
        return node->value_desc_size;
    return sizeof(minfer_value_desc);
}

/* The stride of args->inputs / args->outputs (the host's
 * sizeof(minfer_tensor_view)). */
static inline size_t minfer_kit_view_stride(const minfer_exec_args *args) {
    if (MINFER_STRUCT_HAS(args, minfer_exec_args, tensor_view_size) && args->tensor_view_size)
        return args->tensor_view_size;
    return sizeof(minfer_tensor_view);
}

/* 1 if the node's value descs carry `member` (appended to minfer_value_desc
 * after the host was built otherwise). */
#define MINFER_DESC_HAS(node, member)                                                          \
    (minfer_kit_desc_stride(node) >= offsetof(minfer_value_desc, member) +                     \
                                         sizeof(((minfer_value_desc *)0)->member))

/* Input i's desc (stepped by the host's stride), or NULL when i is out of
 * range or the optional input is omitted. */
static inline const minfer_value_desc *minfer_kit_input(const minfer_node_desc *node, size_t i) {
    if (i >= node->n_inputs)
        return NULL;
    const minfer_value_desc *d = (const minfer_value_desc *)(const void *)(
        (const char *)node->inputs + i * minfer_kit_desc_stride(node));
    return d->present ? d : NULL;
}

/* Output i's desc, or NULL when i is out of range. */
static inline const minfer_value_desc *minfer_kit_output(const minfer_node_desc *node,
                                                         size_t i) {
    if (i >= node->n_outputs)
        return NULL;
    return (const minfer_value_desc *)(const void *)((const char *)node->outputs +
                                                     i * minfer_kit_desc_stride(node));
}

/* 1 if the model wants output i (an omitted optional output has no name). */
static inline int minfer_kit_output_wanted(const minfer_node_desc *node, size_t i) {
    const minfer_value_desc *d = minfer_kit_output(node, i);
    return d && d->name && d->name[0] != '\0';
}

/* The layout input i will arrive in: what the producing node's provider
 * reported in output_layouts when the producer runs in the same memory
 * domain as this node, else 0 (plain). 0 from a host older than ABI 2. */
static inline uint64_t minfer_kit_input_layout(const minfer_node_desc *node, size_t i) {
    const minfer_value_desc *d = minfer_kit_input(node, i);
    return d && MINFER_DESC_HAS(node, layout) ? d->layout : 0;
}

/* execute_node's input view i, or NULL when out of range. */
static inline const minfer_tensor_view *minfer_kit_view_input(const minfer_exec_args *args,
                                                              size_t i) {
    if (i >= args->n_inputs)
        return NULL;
    return (const minfer_tensor_view *)(const void *)((const char *)args->inputs +
                                                      i * minfer_kit_view_stride(args));
}

/* execute_node's output view i, or NULL when out of range. */
static inline minfer_tensor_view *minfer_kit_view_output(const minfer_exec_args *args,
                                                         size_t i) {
    if (i >= args->n_outputs)
        return NULL;
    return (minfer_tensor_view *)(void *)((char *)args->outputs +
                                          i * minfer_kit_view_stride(args));
}

/* ---- Reasons ----------------------------------------------------------------- */

/* Writes "Op: " and the formatted reason into why (why_size bytes, NUL
 * terminated, truncated to fit; nothing when why is NULL or why_size 0). */
static inline void minfer_kit_vdecline(char *why, size_t why_size, const char *op,
                                       const char *fmt, va_list ap) {
    if (!why || why_size == 0)
        return;
    int n = snprintf(why, why_size, "%s: ", op ? op : "?");
    if (n >= 0 && (size_t)n < why_size)
        vsnprintf(why + n, why_size - (size_t)n, fmt, ap);
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static inline void minfer_kit_decline(char *why, size_t why_size, const char *op,
                                      const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    minfer_kit_vdecline(why, why_size, op, fmt, ap);
    va_end(ap);
}

/* supports_operator's reason buffer: why, or buf (buf_size bytes) when
 * the host passed none; emptied. */
static inline char *minfer_kit_why(char *why, size_t *why_size, char *buf, size_t buf_size) {
    if (!why || *why_size == 0) {
        why = buf;
        *why_size = buf_size;
    }
    why[0] = '\0';
    return why;
}

/* Reports a failure of execute_node through the host: "provider: node
 * 'name' (Op): message"; returns st. */
static inline minfer_status minfer_kit_vfail(const minfer_host_api *api, void *host,
                                             const char *provider, const minfer_node_desc *node,
                                             minfer_status st, const char *fmt, va_list ap) {
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    api->set_error(host, "%s: node '%s' (%s): %s", provider, node ? node->name : "?",
                   node ? node->op_type : "?", msg);
    return st;
}

/* ---- Kernel tables ------------------------------------------------------------ */

/* Reads the const char * or int64_t member at byte offset off of entry i. */
static inline const char *minfer_kit_entry_str_(const void *table, size_t stride, size_t i,
                                                size_t off) {
    const char *s;
    memcpy(&s, (const char *)table + i * stride + off, sizeof s);
    return s;
}

static inline int64_t minfer_kit_entry_i64_(const void *table, size_t stride, size_t i,
                                            size_t off) {
    int64_t v;
    memcpy(&v, (const char *)table + i * stride + off, sizeof v);
    return v;
}

/* Index of the entry for (domain, op) with the highest since_version <=
 * opset, or -1; *any is 1 when the op has entries at all. Use through
 * MINFER_KIT_LOOKUP. */
static inline long minfer_kit_lookup_(const void *table, size_t count, size_t stride,
                                      size_t off_domain, size_t off_op, size_t off_since,
                                      const char *domain, const char *op, int64_t opset,
                                      int *any) {
    long best = -1;
    int64_t best_since = 0;
    *any = 0;
    for (size_t i = 0; i < count; i++) {
        if (strcmp(minfer_kit_entry_str_(table, stride, i, off_op), op) != 0 ||
            strcmp(minfer_kit_entry_str_(table, stride, i, off_domain), domain) != 0)
            continue;
        *any = 1;
        int64_t since = minfer_kit_entry_i64_(table, stride, i, off_since);
        if (since <= opset && (best < 0 || since > best_since)) {
            best = (long)i;
            best_since = since;
        }
    }
    return best;
}

static inline const void *minfer_kit_entry_(const void *table, long i, size_t stride) {
    return i < 0 ? NULL : (const char *)table + (size_t)i * stride;
}

/* The entry of table (count entries of `type`, each with members domain,
 * op_type and since_version) that runs (domain, op) at opset: the highest
 * since_version <= opset, so an entry covers the opsets up to the next
 * one's since_version. NULL when none; *any says whether op has entries. */
#define MINFER_KIT_LOOKUP(type, table, count, dom, op, opset, any)                             \
    ((const type *)minfer_kit_entry_(                                                          \
        (table),                                                                               \
        minfer_kit_lookup_((table), (count), sizeof(type), offsetof(type, domain),             \
                           offsetof(type, op_type), offsetof(type, since_version), (dom),      \
                           (op), (opset), (any)),                                              \
        sizeof(type)))

/* Index of an entry that repeats an earlier one's (domain, op, version), or
 * -1: a table mistake the provider reports at init. */
static inline long minfer_kit_duplicate_(const void *table, size_t count, size_t stride,
                                         size_t off_domain, size_t off_op, size_t off_since) {
    for (size_t i = 0; i < count; i++)
        for (size_t j = i + 1; j < count; j++)
            if (minfer_kit_entry_i64_(table, stride, i, off_since) ==
                    minfer_kit_entry_i64_(table, stride, j, off_since) &&
                strcmp(minfer_kit_entry_str_(table, stride, i, off_op),
                       minfer_kit_entry_str_(table, stride, j, off_op)) == 0 &&
                strcmp(minfer_kit_entry_str_(table, stride, i, off_domain),
                       minfer_kit_entry_str_(table, stride, j, off_domain)) == 0)
                return (long)j;
    return -1;
}

#define MINFER_KIT_TABLE_DUPLICATE(type, table, count)                                         \
    minfer_kit_duplicate_((table), (count), sizeof(type), offsetof(type, domain),              \
                          offsetof(type, op_type), offsetof(type, since_version))

/* The reason no entry was found, "Op: opset 5 is older than any CPU kernel
 * for it" or "dom.Op: no CPU kernel" (noun: "CPU kernel"). */
static inline void minfer_kit_no_kernel(const minfer_node_desc *node, int any, const char *noun,
                                        char *why, size_t why_size) {
    if (any)
        minfer_kit_decline(why, why_size, node->op_type, "opset %lld is older than any %s for it",
                           (long long)node->opset, noun);
    else if (why && why_size)
        snprintf(why, why_size, "%s%s%s: no %s", node->domain, node->domain[0] ? "." : "",
                 node->op_type, noun);
}

/* 1 when every present input and every output is a tensor (sequences and
 * optionals are the core's); else 0 and the reason. */
static inline int minfer_kit_all_tensors(const minfer_node_desc *node, char *why,
                                         size_t why_size) {
    for (size_t i = 0; i < node->n_inputs; i++) {
        const minfer_value_desc *d = minfer_kit_input(node, i);
        if (d && d->kind != MINFER_VALUE_TENSOR) {
            minfer_kit_decline(why, why_size, node->op_type, "input %zu is not a tensor", i);
            return 0;
        }
    }
    for (size_t i = 0; i < node->n_outputs; i++)
        if (minfer_kit_output(node, i)->kind != MINFER_VALUE_TENSOR) {
            minfer_kit_decline(why, why_size, node->op_type, "output %zu is not a tensor", i);
            return 0;
        }
    return 1;
}

static inline const void *minfer_kit_find_kernel_(const void *table, size_t count,
                                                  size_t stride, size_t off_domain,
                                                  size_t off_op, size_t off_since,
                                                  const minfer_node_desc *node,
                                                  const char *noun, char *why,
                                                  size_t why_size) {
    int any;
    long i = minfer_kit_lookup_(table, count, stride, off_domain, off_op, off_since,
                                node->domain, node->op_type, node->opset, &any);
    if (i < 0) {
        minfer_kit_no_kernel(node, any, noun, why, why_size);
        return NULL;
    }
    if (!minfer_kit_all_tensors(node, why, why_size))
        return NULL;
    return minfer_kit_entry_(table, i, stride);
}

/* The common first step of supports_operator and prepare_node: the table
 * entry for the node (as MINFER_KIT_LOOKUP) whose inputs and outputs are
 * all tensors, or NULL with the reason in why. */
#define MINFER_KIT_FIND_KERNEL(type, table, count, node, noun, why, why_size)                  \
    ((const type *)minfer_kit_find_kernel_((table), (count), sizeof(type),                     \
                                           offsetof(type, domain), offsetof(type, op_type),    \
                                           offsetof(type, since_version), (node), (noun),      \
                                           (why), (why_size)))

/* ---- The node skeleton ---------------------------------------------------------- */

/* prepare_node, release_node and the state between them, for a provider
 * whose nodes are a table entry plus the state that entry's prepare made
 * (the CPU and OpenCL providers): the provider says how to run an entry's
 * prepare and free its state, the kit does the rest. */
typedef struct minfer_kit_node {
    const void *entry; /* the kernel table entry */
    void *op_state;    /* what its prepare made, or NULL */
} minfer_kit_node;

typedef struct minfer_kit_skeleton {
    const char *provider; /* "cpu": prefixes the messages */
    /* Runs entry's prepare for the node's concrete shapes; *op_state gets
     * what it made (freed with free_op_state), the reason goes to why. */
    minfer_status (*prepare)(void *ctx, const void *entry, const minfer_node_desc *node,
                             minfer_node_prep *prep, void **op_state, char *why,
                             size_t why_size);
    void (*free_op_state)(void *op_state);
    /* Zeroed memory for a minfer_kit_node (freed with free()). */
    void *(*alloc)(void *ctx, size_t bytes);
} minfer_kit_skeleton;

/* prepare_node for entry (NULL: not found, the reason in why): runs the
 * entry's prepare and keeps a minfer_kit_node in *node_state; on failure
 * reports "provider: node 'name': reason" through the host. */
static inline minfer_status minfer_kit_prepare_node(const minfer_kit_skeleton *sk,
                                                    const minfer_host_api *api, void *host,
                                                    void *ctx, const void *entry,
                                                    const minfer_node_desc *node,
                                                    minfer_node_prep *prep, void **node_state,
                                                    char *why, size_t why_size) {
    minfer_status st = MINFER_ERR_UNSUPPORTED;
    minfer_kit_node *n = NULL;
    *node_state = NULL;
    if (!entry)
        goto fail;
    n = (minfer_kit_node *)sk->alloc(ctx, sizeof *n);
    if (!n) {
        api->set_error(host, "%s: out of memory", sk->provider);
        return MINFER_ERR_NOMEM;
    }
    n->entry = entry;
    if ((st = sk->prepare(ctx, entry, node, prep, &n->op_state, why, why_size)) != MINFER_OK)
        goto fail;
    *node_state = n;
    return MINFER_OK;
fail:
    if (n) {
        sk->free_op_state(n->op_state);
        free(n);
    }
    api->set_error(host, "%s: node '%s': %s", sk->provider, node->name, why);
    return st;
}

/* release_node for a state minfer_kit_prepare_node made. */
static inline void minfer_kit_release_node(const minfer_kit_skeleton *sk, void *node_state) {
    minfer_kit_node *n = (minfer_kit_node *)node_state;
    if (!n)
        return;
    sk->free_op_state(n->op_state);
    free(n);
}

/* ---- Attributes --------------------------------------------------------------- */

/* The attribute's value, or dflt when the node does not have it with that
 * type. */
static inline int64_t minfer_kit_attr_int(const minfer_host_api *api,
                                          const minfer_node_desc *node, const char *name,
                                          int64_t dflt) {
    int64_t v = dflt;
    return api->attr_int(node, name, &v) ? v : dflt;
}

static inline float minfer_kit_attr_float(const minfer_host_api *api,
                                          const minfer_node_desc *node, const char *name,
                                          float dflt) {
    float v = dflt;
    return api->attr_float(node, name, &v) ? v : dflt;
}

static inline const char *minfer_kit_attr_str(const minfer_host_api *api,
                                              const minfer_node_desc *node, const char *name,
                                              const char *dflt) {
    const char *s = dflt;
    size_t len = 0;
    return api->attr_string(node, name, &s, &len) ? s : dflt;
}

static inline int minfer_kit_has_attr(const minfer_host_api *api, const minfer_node_desc *node,
                                      const char *name) {
    return api->attr_type(node, name) != MINFER_ATTR_UNDEFINED;
}

/* Copies an INTS attribute into out[cap]: 1 found, 0 absent, -1 longer than
 * cap (the reason in why). */
static inline int minfer_kit_attr_ints(const minfer_host_api *api, const minfer_node_desc *node,
                                       const char *name, int64_t *out, size_t cap,
                                       size_t *count, char *why, size_t why_size) {
    const int64_t *v;
    size_t n;
    *count = 0;
    if (!api->attr_ints(node, name, &v, &n))
        return 0;
    if (n > cap) {
        minfer_kit_decline(why, why_size, node->op_type,
                           "attribute '%s' has %zu entries, at most %zu supported", name, n, cap);
        return -1;
    }
    if (n)
        memcpy(out, v, n * sizeof *v);
    *count = n;
    return 1;
}

/* An INTS / FLOATS attribute in place (the host's memory, valid while the
 * node is): its count, *out set; 0 and *out NULL when absent. */
static inline size_t minfer_kit_attr_ints_ref(const minfer_host_api *api,
                                              const minfer_node_desc *node, const char *name,
                                              const int64_t **out) {
    size_t n = 0;
    if (!api->attr_ints(node, name, out, &n)) {
        *out = NULL;
        return 0;
    }
    return n;
}

static inline size_t minfer_kit_attr_floats_ref(const minfer_host_api *api,
                                                const minfer_node_desc *node, const char *name,
                                                const float **out) {
    size_t n = 0;
    if (!api->attr_floats(node, name, out, &n)) {
        *out = NULL;
        return 0;
    }
    return n;
}

/* A STRINGS attribute: 1 found, 0 absent, -1 when the host is too old to
 * read one (attr_strings was appended; the reason in why). */
static inline int minfer_kit_attr_strings(const minfer_host_api *api,
                                          const minfer_node_desc *node, const char *name,
                                          const char *const **out, size_t *count, char *why,
                                          size_t why_size) {
    *out = NULL;
    *count = 0;
    if (api->attr_type(node, name) != MINFER_ATTR_STRINGS)
        return 0;
    if (!MINFER_HOST_HAS(api, attr_strings)) {
        minfer_kit_decline(why, why_size, node->op_type,
                           "the host cannot read the strings attribute '%s'", name);
        return -1;
    }
    return api->attr_strings(node, name, out, count) ? 1 : 0;
}

/* Copies constant input `input` (int32 or int64) into out[cap]: 1 copied,
 * 0 when the input is absent or not a constant, -1 for another type or
 * more than cap entries (the reason in why). */
static inline int minfer_kit_const_ints(const minfer_node_desc *node, size_t input, int64_t *out,
                                        size_t cap, size_t *count, char *why, size_t why_size) {
    const minfer_value_desc *d = minfer_kit_input(node, input);
    *count = 0;
    if (!d || !d->const_data)
        return 0;
    if (d->dtype != MINFER_DTYPE_INT64 && d->dtype != MINFER_DTYPE_INT32) {
        minfer_kit_decline(why, why_size, node->op_type, "input %zu must be int32 or int64",
                           input);
        return -1;
    }
    size_t es = d->dtype == MINFER_DTYPE_INT64 ? 8 : 4, n = d->const_nbytes / es;
    if (n > cap) {
        minfer_kit_decline(why, why_size, node->op_type,
                           "input %zu has %zu entries, at most %zu supported", input, n, cap);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (es == 8) {
            memcpy(&out[i], (const char *)d->const_data + i * 8, 8);
        } else {
            int32_t v;
            memcpy(&v, (const char *)d->const_data + i * 4, 4);
            out[i] = v;
        }
    }
    *count = n;
    return 1;
}

/* ---- Shapes --------------------------------------------------------------------- */

/* Elements of dims[0..rank), or -1 for a bad rank, an unknown (negative)
 * dimension or a count that overflows (minfer_dims_numel). */
static inline int64_t minfer_kit_numel(int32_t rank, const int64_t *dims) {
    int64_t n;
    return minfer_dims_numel(dims, rank, &n) == MINFER_OK ? n : -1;
}

/* An ONNX axis in [-rank, rank) as an index in [0, rank), or -1. */
static inline int minfer_kit_axis(int64_t axis, int32_t rank) {
    if (axis < -(int64_t)rank || axis >= rank)
        return -1;
    return (int)(axis < 0 ? axis + rank : axis);
}

/* ---- Half and bfloat16 ------------------------------------------------------------ */

static inline float minfer_kit_bits_float_(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t minfer_kit_float_bits_(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* IEEE half to float: exact (every half is a float). */
static inline float minfer_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) {
        float f = (float)man * 5.9604644775390625e-8f; /* zero or subnormal: man * 2^-24 */
        return sign ? -f : f;
    }
    if (exp == 31)
        return minfer_kit_bits_float_(sign | 0x7f800000u | (man << 13));
    return minfer_kit_bits_float_(sign | ((exp + 112u) << 23) | (man << 13));
}

/* Float to IEEE half, rounded to nearest even, with overflow to infinity,
 * subnormals, and NaN kept NaN (quiet, its top payload bits kept). */
static inline uint16_t minfer_float_to_half(float f) {
    uint32_t u = minfer_kit_float_bits_(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t half = man >> shift, rem = man & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
        half++; /* may carry into the exponent, up to infinity: correct */
    return (uint16_t)(sign | half);
}

/* bfloat16 to float: exact. */
static inline float minfer_bf16_to_float(uint16_t h) {
    return minfer_kit_bits_float_((uint32_t)h << 16);
}

/* Float to bfloat16, rounded to nearest even; NaN stays NaN (quiet). */
static inline uint16_t minfer_float_to_bf16(float f) {
    uint32_t u = minfer_kit_float_bits_(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- Fused activations ------------------------------------------------------ */

/* The activation a fused node's "activation" attribute names (minfer's
 * FusedConv, FusedGemm and FusedMatMul, which core/optimize writes;
 * com.microsoft's FusedConv and FusedGemm), its "activation_params" the
 * parameters: one table of names, parameter counts and defaults (the ONNX
 * op's attribute defaults; HardSwish as x * HardSigmoid(x; 1/6, 1/2)) for
 * every provider and plugin. Each computes the kinds it has and declines
 * the others. */
enum {
    MINFER_KIT_ACT_NONE, /* "" */
    MINFER_KIT_ACT_RELU,
    MINFER_KIT_ACT_LEAKYRELU,   /* alpha = 0.01 */
    MINFER_KIT_ACT_CLIP,        /* min = -FLT_MAX, max = FLT_MAX */
    MINFER_KIT_ACT_SIGMOID,
    MINFER_KIT_ACT_TANH,
    MINFER_KIT_ACT_HARDSIGMOID, /* alpha = 0.2, beta = 0.5 */
    MINFER_KIT_ACT_HARDSWISH,   /* alpha = 1/6, beta = 0.5 */
    MINFER_KIT_ACT_SILU,
    MINFER_KIT_ACT_GELU,        /* erf form */
    MINFER_KIT_ACT_GELU_TANH,   /* tanh approximation ("GeluTanh") */
    MINFER_KIT_ACT_ELU,         /* alpha = 1 */
    MINFER_KIT_ACT_SELU,        /* alpha = 1.67326..., gamma = 1.05070... */
    MINFER_KIT_ACT_SOFTSIGN,
    MINFER_KIT_ACT_EXP,
    MINFER_KIT_ACT_LOG,
    MINFER_KIT_ACT_SQRT,
    MINFER_KIT_ACT_ABS
};

typedef struct minfer_kit_act {
    int kind;      /* MINFER_KIT_ACT_* */
    float p[2];    /* its parameters: those given, the defaults after them */
    size_t n_given; /* how many activation_params gave */
    int is_default; /* every parameter is the default (a fixed kernel may compute it) */
} minfer_kit_act;

/* Reads name (NULL or "": none) with n params into *out: 0, or -1 for a
 * name the table does not have or more params than the activation takes
 * (the reason, "activation 'X': ...", in why). */
static inline int minfer_kit_act_parse(const char *name, const float *params, size_t n,
                                       minfer_kit_act *out, char *why, size_t why_size) {
    static const struct {
        const char *name;
        int kind;
        size_t n_params;
        float d0, d1;
    } table[] = {
        {"", MINFER_KIT_ACT_NONE, 0, 0, 0},
        {"Relu", MINFER_KIT_ACT_RELU, 0, 0, 0},
        {"LeakyRelu", MINFER_KIT_ACT_LEAKYRELU, 1, 0.01f, 0},
        {"Clip", MINFER_KIT_ACT_CLIP, 2, -FLT_MAX, FLT_MAX},
        {"Sigmoid", MINFER_KIT_ACT_SIGMOID, 0, 0, 0},
        {"Tanh", MINFER_KIT_ACT_TANH, 0, 0, 0},
        {"HardSigmoid", MINFER_KIT_ACT_HARDSIGMOID, 2, 0.2f, 0.5f},
        {"HardSwish", MINFER_KIT_ACT_HARDSWISH, 2, 1.0f / 6.0f, 0.5f},
        {"Silu", MINFER_KIT_ACT_SILU, 0, 0, 0},
        {"Gelu", MINFER_KIT_ACT_GELU, 0, 0, 0},
        {"GeluTanh", MINFER_KIT_ACT_GELU_TANH, 0, 0, 0},
        {"Elu", MINFER_KIT_ACT_ELU, 1, 1.0f, 0},
        {"Selu", MINFER_KIT_ACT_SELU, 2, 1.67326319217681884765625f,
         1.05070102214813232421875f},
        {"Softsign", MINFER_KIT_ACT_SOFTSIGN, 0, 0, 0},
        {"Exp", MINFER_KIT_ACT_EXP, 0, 0, 0},
        {"Log", MINFER_KIT_ACT_LOG, 0, 0, 0},
        {"Sqrt", MINFER_KIT_ACT_SQRT, 0, 0, 0},
        {"Abs", MINFER_KIT_ACT_ABS, 0, 0, 0},
    };
    if (!name)
        name = "";
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(name, table[i].name) != 0)
            continue;
        if (n > table[i].n_params) {
            if (why && why_size)
                snprintf(why, why_size, "activation '%s': %zu activation_params, it takes %zu",
                         name, n, table[i].n_params);
            return -1;
        }
        out->kind = table[i].kind;
        out->p[0] = n > 0 ? params[0] : table[i].d0;
        out->p[1] = n > 1 ? params[1] : table[i].d1;
        out->n_given = n;
        out->is_default = out->p[0] == table[i].d0 && out->p[1] == table[i].d1;
        return 0;
    }
    if (why && why_size)
        snprintf(why, why_size, "activation '%s' is not one minfer knows", name);
    return -1;
}

#ifdef __cplusplus
}
#endif

#endif
