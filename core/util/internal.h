/*
 * Private helpers shared by the core's translation units: errors, tensors,
 * checked size arithmetic and small allocation wrappers.
 */
#ifndef MINFER_CORE_INTERNAL_H
#define MINFER_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "minfer/minfer.h"
#include "minfer/provider.h"

#if defined(__GNUC__)
#define MF_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MF_PRINTF(a, b)
#endif

/* The largest constant that folding makes: bytes over a node's outputs.
 * One limit for the optimizer's folding (mf_opt_ctx.fold_max_bytes, 0
 * meaning this; optimize/) and the plan builder's (plan/build.c), so a
 * node folds or not whichever stage meets it (docs/architecture.md). */
#define MF_FOLD_MAX_BYTES ((uint64_t)1 << 20)

/* Sets this thread's last error and returns st. */
minfer_status mf_error(minfer_status st, const char *fmt, ...) MF_PRINTF(2, 3);
/* Prepends "prefix: " to the current last error (or, if that is empty, to
 * minfer_status_str(st)) and returns st. */
minfer_status mf_error_prefix(minfer_status st, const char *fmt, ...) MF_PRINTF(2, 3);
void mf_error_clear(void);

/* The public tensor. view.data points at the first element (host memory).
 * The same handle holds sequences and optionals (view.kind; view.dtype is
 * the element type, view.data NULL): items are the sequence's tensors, or
 * the optional's value (count 0 or 1); contained is an optional's kind. */
/* minfer_tensor.owns_data for data in an anonymous mapping of its own
 * (plan/weights.c), which munmap gives back to the system at once. */
#define MF_OWNS_MAPPED 2

/* The device side of a device value (minfer_session_device_tensor_create,
 * session/device_tensor.c): the tensor's view.data is buffer, a handle of
 * the memory domain dom (1 + provider index) of session s; s is NULL once
 * the session was freed (the buffer with it). release frees it (from
 * minfer_tensor_free: util/ sits below session/). */
typedef struct mf_devmem mf_devmem;
struct mf_devmem {
    minfer_session *s;
    int dom;
    void (*release)(mf_devmem *d);
    minfer_tensor *t;
    char prov[32]; /* the provider's name */
    mf_devmem *prev, *next; /* the session's list (guarded by its lock) */
};

struct minfer_tensor {
    minfer_tensor_view view;
    mf_devmem *dev; /* NULL: host memory */
    int owns_data; /* 1: free(data); MF_OWNS_MAPPED: munmap(data, nbytes) */
    /* The bytes data was copied from, in a file mapping the graph keeps
     * (mf_graph.blob), or NULL: plan/weights.c may free the copy of a
     * packed weight and copy it again from there. */
    const void *src;
    int32_t contained;
    minfer_tensor **items;
    size_t count, cap;
    /* 1: pages of the copy were given back while a provider packed it
     * (plan/weights.c): read it again from src before it is read. */
    int refill;
    /* XXH3 of the bytes at src when the copy was first given back
     * (src_summed): a read again must give them, else the file changed. */
    uint64_t src_sum;
    int src_summed;
};

/* Sequences and optionals (values.c). */
minfer_status mf_sequence_new(int32_t elem, minfer_tensor **out);
/* Appends item (owned by seq on success). */
minfer_status mf_sequence_push(minfer_tensor *seq, minfer_tensor *item);
/* An optional holding value (owned), or an empty one when value is NULL. */
minfer_status mf_optional_new(minfer_tensor *value, int32_t contained, int32_t elem,
                              minfer_tensor **out);
/* Parses a serialized TensorProto; base_dir resolves external data, where
 * names it in messages (load/tensor_proto.c). */
minfer_status mf_tensor_from_pb(const void *data, size_t size, const char *base_dir,
                               const char *where, minfer_tensor **out, char **name_out);
/* Writes tensor t (a tensor, not a container) as a TensorProto file. */
minfer_status mf_tensor_save_pb(const minfer_tensor *t, const char *name, const char *path);
/* Packs a tensor into a TensorProto (opaque: Onnx__TensorProto *), with
 * storage the caller frees with mf_tensor_proto_clear. */
minfer_status mf_tensor_to_proto(const minfer_tensor *t, const char *name, void *proto);
void mf_tensor_proto_clear(void *proto);

/* Element count of dims[0..rank) into *out; MINFER_ERR_LIMIT on overflow or
 * a negative dimension. */
minfer_status mf_numel(const int64_t *dims, int32_t rank, int64_t *out);
/* Bytes of numel elements of dtype, overflow-checked. */
minfer_status mf_nbytes(int32_t dtype, int64_t numel, size_t *out);
/* Sets t's view to a plain tensor of dtype and dims (no data), with its
 * element count and bytes in *numel and *nbytes; fails when they overflow. */
minfer_status mf_tensor_init_view(minfer_tensor *t, int32_t dtype, const int64_t *dims,
                                  int32_t rank, int64_t *numel, size_t *nbytes);
/* A new owning tensor (zero-filled). */
minfer_status mf_tensor_new(int32_t dtype, const int64_t *dims, int32_t rank, minfer_tensor **out);
/* A deep copy (strings duplicated). */
minfer_status mf_tensor_clone(const minfer_tensor *src, minfer_tensor **out);
/* Frees the char * elements of a STRING tensor's data (count elements). */
void mf_free_strings(void *data, int64_t count);

/* Converts a parsed onnx TensorProto (opaque here: Onnx__TensorProto *) to a
 * tensor. base_dir resolves external data (NULL: refuse external data);
 * where names the tensor in messages. */
minfer_status mf_tensor_from_proto(const void *proto, const char *base_dir, const char *where,
                                   minfer_tensor **out);
/* mf_tensor_from_proto for a proto whose raw_data lies in a private
 * read-only file mapping: copied a MiB at a time, the pages of each MiB
 * given back once copied (the weight is not resident twice). */
minfer_status mf_tensor_from_proto_mapped(const void *proto, const char *base_dir,
                                          const char *where, minfer_tensor **out);

/* Fills the attr_* members and alloc of a host API table (host_attrs.c). */
void mf_host_api_attrs(minfer_host_api *api);

/* A printable shape "[1,3,224,224]" ("?" for -1, "[?]" for unknown rank). */
const char *mf_shape_str(const int64_t *dims, int32_t rank, char *buf, size_t size);

/* Alignment of host buffers the core allocates (arenas, folded constants,
 * run-time outputs, workspaces). */
#define MF_HOST_ALIGN 64
/* A zero-filled host buffer of at least bytes (rounded up to
 * MF_HOST_ALIGN, at least MF_HOST_ALIGN), aligned to MF_HOST_ALIGN; NULL
 * when out of memory. free() releases it. */
void *mf_alloc_host(size_t bytes);
/* Bytes of a plain tensor with v's shape: 0 when the shape or type is not
 * known, SIZE_MAX (never a wrapped count) when they do not fit. For views
 * whose size is already checked. */
size_t mf_view_bytes(const minfer_tensor_view *v);
/* 1 when v has a rank and every dim is known. */
int mf_view_static(const minfer_tensor_view *v);

/* malloc/calloc/realloc that never return NULL silently: callers check. */
void *mf_malloc(size_t n);
void *mf_calloc(size_t n, size_t size);
void *mf_realloc(void *p, size_t n);
char *mf_strdup(const char *s);

/* Fills a ProtobufCAllocator (opaque here) that allocates through mf_malloc,
 * so failure injection reaches the parser; *nomem becomes 1 when one of its
 * allocations fails (to tell out-of-memory from a malformed message). */
void mf_pb_allocator_init(void *allocator, int *nomem);

/* Test-only allocation-failure injection (tests/test_alloc_fail.c), inert
 * unless armed. mf_test_fail_after(n, sticky): the next n allocations
 * succeed and the one after fails (and, if sticky, every later one too);
 * n < 0 disarms. mf_test_alloc_stats returns the allocations counted since
 * arming and sets *failures to how many were made to fail. Allocators
 * outside the mf_ wrappers call mf_test_alloc_fails() first: 1 means fail. */
void mf_test_fail_after(long n, int sticky);
long mf_test_alloc_stats(long *failures);
int mf_test_alloc_fails(void);
/* Instead of the countdown, asks hook(arg) at every allocation (non-zero:
 * fail it); NULL removes the hook. The hook must not allocate through the
 * core. */
void mf_test_set_alloc_hook(int (*hook)(void *arg), void *arg);

#endif
