/*
 * Private header of the OpenCL provider.
 *
 * One instance (ocl_ctx) per session: a device, a context, one in-order
 * queue and one program holding every kernel (the kernels/ directory, embedded at
 * build time), built at the first prepare_node and cached on disk
 * (program.c). Tensors live in the session's device arena: a view's data
 * is a cl_mem and its offset a byte offset, so every kernel takes
 * (buffer, element offset) pairs.
 *
 * With the option fp16=1 every float tensor in device memory (activations,
 * uploaded weights, the session's constant mirrors) is stored as half:
 * ocl_esize says how wide an element of a dtype is, ocl_upload_floats
 * converts host floats, and the copy hooks convert at the boundary. Other
 * element types keep their width.
 *
 * Kernel table (provider.c): {domain, op, since_version, prepare, execute}.
 * prepare (ocl_prep) reads attributes and constants once; with p->prep ==
 * NULL it only decides whether the node is supported (shapes may be -1 and
 * no device memory is touched), otherwise it also uploads or packs the
 * constant inputs. execute (ocl_exec) enqueues kernels and never waits.
 *
 * Concurrent runs (docs/opencl.md): the OpenCL API is thread-safe except
 * for calls that change a cl_kernel, clSetKernelArg among them, and
 * argument values are captured when a launch is enqueued. So each
 * execute_node borrows a set of kernel objects from the instance's pool
 * (ocl_kset_take), sets arguments and enqueues on its own set only, and
 * gives it back (ocl_kset_give); the pool grows to the number of nodes
 * executing at once. Everything else execute touches is read-only after
 * prepare (op states, the program) or belongs to the run (its arena,
 * workspace and staging blocks); the one in-order queue is shared, which
 * OpenCL allows, and keeps each run's commands in the order it enqueued them.
 */
#ifndef MINFER_PROVIDER_OPENCL_H
#define MINFER_PROVIDER_OPENCL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "minfer/provider_kit.h"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

#define OCL_MAX_RANK MINFER_MAX_RANK
#define OCL_MAX_IN 8

/* Kernels of the program, created once after the build. */
#define OCL_KERNELS(X)                                                                     \
    X(unary) X(binary_flat) X(binary_bcast) X(channel_affine) X(gemm) X(conv_tile)          \
    X(conv_direct) X(pool) X(global_pool) X(softmax) X(layernorm) X(strided_copy)            \
    X(gather) X(gather16) X(reduce) X(gemm_epilogue)        \
    X(conv_epilogue) X(copy_bytes) X(fill_bytes) X(rmsnorm) X(attn_scores) X(attn_softmax)  \
    X(attn_pv) X(rotary) X(concat_all) X(concat_all16) X(concat_affine) X(gemm_local1)        \
    X(gemm_local2) X(conv_local1) X(conv_local2) X(elementwise_chain)   \
    X(gemm_m1)

enum {
#define X(k) OCL_K_##k,
    OCL_KERNELS(X)
#undef X
    OCL_K_COUNT
};

/* Activation codes, as in kernels/common.cl. */
enum {
    OCL_ACT_NONE = 0, OCL_ACT_RELU, OCL_ACT_CLIP, OCL_ACT_SIGMOID, OCL_ACT_HARDSIGMOID,
    OCL_ACT_HARDSWISH, OCL_ACT_SILU, OCL_ACT_LEAKYRELU, OCL_ACT_TANH, OCL_ACT_EXP,
    OCL_ACT_LOG, OCL_ACT_SQRT, OCL_ACT_ABS, OCL_ACT_NEG, OCL_ACT_RECIP, OCL_ACT_FLOOR,
    OCL_ACT_CEIL, OCL_ACT_ERF, OCL_ACT_ELU, OCL_ACT_SELU, OCL_ACT_SOFTPLUS, OCL_ACT_SOFTSIGN,
    OCL_ACT_SIN, OCL_ACT_COS, OCL_ACT_GELU, OCL_ACT_GELU_TANH, OCL_ACT_ROUND, OCL_ACT_SIGN,
    OCL_ACT_THRESHOLDED, OCL_ACT_SCALE, OCL_ACT_TAN, OCL_ACT_ATAN
};

/* Binary op codes, as in kernels/elementwise.cl. */
enum { OCL_BIN_ADD, OCL_BIN_SUB, OCL_BIN_MUL, OCL_BIN_DIV, OCL_BIN_POW, OCL_BIN_MAX,
       OCL_BIN_MIN, OCL_BIN_PRELU };

/* The shape8 struct of kernels/common.cl (passed by value). */
typedef struct ocl_shape8 {
    cl_int rank;
    cl_int d[8];
    cl_int sa[8];
    cl_int sb[8];
} ocl_shape8;

/* The win3 struct of kernels/common.cl: a window over 3 spatial dimensions
 * (depth, height, width; 1 in the leading ones of a 1-D or 2-D window). */
typedef struct ocl_win3 {
    cl_int i[3], o[3], k[3], s[3], p[3], d[3], e[3];
} ocl_win3;

/* One kernel object of each kernel of the program, used by one
 * execute_node at a time. */
typedef struct ocl_kset {
    struct ocl_kset *next_free; /* in the pool's free list */
    struct ocl_kset *next_all;  /* in the list of every set */
    cl_kernel k[OCL_K_COUNT];
} ocl_kset;

/* What the launch choices read of a device (device.c): from
 * clGetDeviceInfo at init, wg_multiple after the program build. */
typedef struct ocl_devinfo {
    int is_cpu;             /* CL_DEVICE_TYPE_CPU */
    size_t max_wg;          /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    size_t max_items[3];    /* CL_DEVICE_MAX_WORK_ITEM_SIZES */
    size_t wg_multiple;     /* CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE */
    unsigned compute_units; /* CL_DEVICE_MAX_COMPUTE_UNITS */
    unsigned vec_float;     /* CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT */
    uint64_t local_mem;     /* CL_DEVICE_LOCAL_MEM_SIZE */
} ocl_devinfo;

/* One provider instance (one per session). */
typedef struct ocl_ctx {
    const minfer_host_api *api;
    void *host;
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program; /* NULL until the first prepare_node */
    size_t kernel_wg[OCL_K_COUNT]; /* CL_KERNEL_WORK_GROUP_SIZE */
    pthread_mutex_t lock;   /* the program's build and the kernel-set pool */
    int lock_ready;         /* lock was initialised */
    ocl_kset *free_sets;    /* sets no execute_node holds */
    ocl_kset *all_sets;     /* every set, released with the program */
    size_t n_sets;
    char device_name[256];
    char driver_version[128];
    char platform_name[256];
    cl_device_type type;
    int is_cpu;
    int unified;          /* CL_DEVICE_HOST_UNIFIED_MEMORY: map instead of copy */
    size_t align;         /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes */
    size_t max_wg;        /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    uint64_t max_alloc;   /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
    uint64_t local_mem;   /* CL_DEVICE_LOCAL_MEM_SIZE */
    int vw, mr;           /* register tile: vector width and rows (common.cl) */
    ocl_devinfo dev;      /* for launch shapes (device.c) */
    int launch_gpu;       /* MINFER_OPENCL_LAUNCH=gpu: a GPU's launch shapes and
                             tile on any device (tests, under oclgrind) */
    int use_cache;        /* program binaries on disk (option cache=0 turns off) */
    int fp16;             /* float tensors stored as half (option fp16=1) */
    int khr_fp16;         /* the device reports cl_khr_fp16 (logged; not needed) */
    int kernel_copies;    /* option kernel_copies=1: device writes other than a
                             kernel's go through copy_bytes / fill_bytes */
    double build_ms;      /* how long the program took, for the log */
    int from_cache;
    int gemm_mode;        /* OCL_GEMM_*: option gemm=, else MINFER_OPENCL_GEMM */
    /* Commands enqueued, host waits and host transfers (tune.c): totals
     * since init, the totals when the last run ended (under lock), and that
     * run's counts. pending is 1 while a command enqueued since the last
     * wait may still run: only a blocking call made then waits for the
     * device (a host synchronisation). */
    atomic_ullong n_launch, n_sync, n_transfer, n_runs;
    atomic_int pending;
    unsigned long long last_launch, last_sync, last_transfer;
    unsigned long long run_launch, run_sync, run_transfer;
    /* Host copies of uploads enqueued without waiting (copy_from_host),
     * freed once a clFinish has seen their writes done (under lock). */
    struct ocl_staged *staged;
    struct ocl_tune *tune; /* the tuning cache, loaded on first use (tune.c) */
} ocl_ctx;

/* GEMM and convolution back ends: auto picks per shape by timing (tune.c's
 * cache); own is the per-item register tiles (gemm, conv_tile); clblast is
 * CLBlast where it applies; local1 and local2 are the work-group kernels
 * with local memory (gemm_local*, conv_local*), where the device's
 * work-group and local memory limits allow them (ocl_local_tile). */
enum { OCL_GEMM_AUTO, OCL_GEMM_OWN, OCL_GEMM_CLBLAST, OCL_GEMM_LOCAL1, OCL_GEMM_LOCAL2 };
#define OCL_GEMM_IS_LOCAL(b) ((b) == OCL_GEMM_LOCAL1 || (b) == OCL_GEMM_LOCAL2)

/* A work-group kernel's launch: the kernel, the tile of Y one group owns
 * (tm rows or channels x tn columns or positions) and the group's items
 * (wx x wy, exactly). */
typedef struct ocl_ltile {
    int kernel;
    int tm, tn, wx, wy;
} ocl_ltile;

/* What a kernel's prepare works on. */
typedef struct ocl_prep {
    ocl_ctx *ctx;
    const minfer_node_desc *node;
    minfer_node_prep *prep; /* NULL: support check only */
    int64_t since;
    char *err;
    size_t err_size;
    void *state; /* out: op state, released with ocl_state_free */
} ocl_prep;

/* What a kernel's execute works on. */
typedef struct ocl_exec {
    ocl_ctx *ctx;
    void *state;
    const minfer_exec_args *args;
    cl_kernel *k; /* this call's kernel objects (a borrowed ocl_kset) */
} ocl_exec;

typedef minfer_status (*ocl_prepare_fn)(ocl_prep *p);
typedef minfer_status (*ocl_execute_fn)(const ocl_exec *e);

typedef struct ocl_kernel_entry {
    const char *domain;
    const char *op_type;
    int64_t since_version;
    ocl_prepare_fn prepare;
    ocl_execute_fn execute;
} ocl_kernel_entry;

/* Every op state begins with this: device buffers the state owns (uploaded
 * constants, packed weights) and one host block (host, NULL or malloc'ed),
 * released with the state. */
#define OCL_STATE_BUFS 6
typedef struct ocl_state_head {
    cl_mem bufs[OCL_STATE_BUFS];
    void *host;
} ocl_state_head;

/* ---- program.c ----------------------------------------------------------- */

/* Builds (or loads from the disk cache) the program and creates the first
 * kernel set; the caller holds ctx->lock. */
minfer_status ocl_build_program(ocl_ctx *ctx);
/* Releases every kernel set and the program (no execute_node running). */
void ocl_release_program(ocl_ctx *ctx);
/* A kernel set for one execute_node: a free one, else a new one; NULL
 * with the host's error set when the kernels cannot be created. */
ocl_kset *ocl_kset_take(ocl_ctx *ctx);
/* Returns a set taken with ocl_kset_take, once its launches are enqueued. */
void ocl_kset_give(ocl_ctx *ctx, ocl_kset *ks);

/* The disk cache directory ($XDG_CACHE_HOME/minfer), created; 0 on success. */
int ocl_cache_dir(char *buf, size_t size);
/* A cache file's key: h with string s (and its NUL, which separates the
 * fields) mixed in (XXH3 seeded with h); start from 0. */
uint64_t ocl_cache_key(uint64_t h, const char *s);

/* ---- device.c ------------------------------------------------------------ */

/* The register tile (VW, MR of kernels/common.cl) for the device. */
void ocl_pick_tile(const ocl_devinfo *d, int *vw, int *mr);
/* The local size of a dims-D launch of global[] work-items of a kernel
 * whose work-group limit is kwg; tiled for the register-tiled kernels
 * (gemm, conv_tile), whose items each hold a whole tile. */
void ocl_pick_local(const ocl_devinfo *d, size_t kwg, int dims, const size_t *global,
                    int tiled, size_t *local);

/* ---- tune.c -------------------------------------------------------------- */

/* The tuning cache: a choice (an int) per key, on disk beside the program
 * cache in a file keyed by device, driver and platform. 1 and *value when
 * key is known. */
int ocl_tune_get(ocl_ctx *ctx, const char *key, int *value);
/* Records key's choice (in memory, and appended to the file with the n
 * candidates' times ms[], for people reading it). */
void ocl_tune_put(ocl_ctx *ctx, const char *key, int value, const double *ms, int n);
void ocl_tune_free(ocl_ctx *ctx);
/* Counters: a command enqueued (a kernel, a device copy or fill, a CLBlast
 * call); a blocking call about to wait for the queue (a host
 * synchronisation when a command may still be running); a transfer
 * between host and device memory. */
void ocl_count_launch(ocl_ctx *ctx);
void ocl_count_wait(ocl_ctx *ctx);
void ocl_count_transfer(ocl_ctx *ctx);
/* Closes a run: its counts become the last run's. */
void ocl_count_run_end(ocl_ctx *ctx);
/* The counters of the last run (the provider's run_counters). */
minfer_status ocl_run_counters(void *ctx, minfer_device_counters *out);
/* Milliseconds of a monotonic clock. */
double ocl_now_ms(void);

/* ---- common.c ------------------------------------------------------------ */

const char *ocl_err_str(cl_int err);
minfer_status ocl_decline(ocl_prep *p, const char *fmt, ...);
minfer_status ocl_prep_fail(ocl_prep *p, minfer_status st, const char *fmt, ...);
minfer_status ocl_fail(const ocl_exec *e, minfer_status st, const char *fmt, ...);
/* Zeroed op state (its head zeroed too) of size bytes in p->state. */
void *ocl_state(ocl_prep *p, size_t size);
void ocl_state_free(void *state);

int64_t ocl_attr_int(const ocl_prep *p, const char *name, int64_t dflt);
float ocl_attr_float(const ocl_prep *p, const char *name, float dflt);
const char *ocl_attr_str(const ocl_prep *p, const char *name, const char *dflt);
/* Copies an ints attribute: 1 found, 0 absent, -1 too long (declined). */
int ocl_attr_ints(ocl_prep *p, const char *name, int64_t *out, size_t cap, size_t *count);
/* Node input i if present, else NULL (minfer_kit_input). */
const minfer_value_desc *ocl_in_desc(const minfer_node_desc *n, size_t i);
/* Reads constant int input i: 1 ok, 0 not constant, -1 declined. */
int ocl_const_ints(ocl_prep *p, size_t input, int64_t *out, size_t cap, size_t *count);
/* 1 when input i (a shape parameter: a Reshape target, Slice bounds,
 * Unsqueeze axes, ...) is computed and this is the support check (p->prep
 * NULL): the node is taken, as its plan's prepare will see the parameter
 * folded into a constant when it follows from the input shapes (Shape,
 * Gather, Concat of int64 ...). Prepare declines one that stays computed,
 * and a plan whose output shape depends on tensor contents runs the node
 * as dynamic, on a host provider (core/exec/run.c run_dynamic_node). */
int ocl_param_later(const ocl_prep *p, size_t input);
/* Copies bytes at offset of buf from the host copy of an upload still
 * staged (copy_from_host on a device that does not share host memory)
 * when that upload wrote them and no command was enqueued since: 1, else 0
 * (the device may hold other bytes there by now). */
int ocl_staged_read(ocl_ctx *ctx, cl_mem buf, size_t offset, size_t bytes, void *out);
/* Bytes of one element of dtype (0: a type the provider does not move). */
size_t ocl_dtype_size(int32_t dtype);
/* Bytes of one element of dtype in device memory: 2 for float with fp16. */
size_t ocl_esize(const ocl_ctx *ctx, int32_t dtype);
/* IEEE half <-> float, round to nearest even (the provider kit's). */
static inline uint16_t ocl_f2h(float f) { return minfer_float_to_half(f); }
static inline float ocl_h2f(uint16_t h) { return minfer_half_to_float(h); }
/* Declines unless input i (when present) is float; what names it. */
minfer_status ocl_need_float(ocl_prep *p, size_t i);
/* Elements of a shape; -1 for a negative dim or a count that overflows. */
int64_t ocl_numel(int32_t rank, const int64_t *dims);
/* Declines a value larger than the device's largest allocation. */
minfer_status ocl_check_size(ocl_prep *p, const minfer_value_desc *d);

/* The activation of a fused op (attributes activation, activation_params). */
minfer_status ocl_parse_activation(ocl_prep *p, int *act, float *a, float *b);

/* Uploads host data into a new buffer owned by the state (slot in head). */
minfer_status ocl_upload(ocl_prep *p, int slot, const void *data, size_t bytes);
/* Uploads count floats, stored as the device keeps floats (half with fp16). */
minfer_status ocl_upload_floats(ocl_prep *p, int slot, const float *data, size_t count);

/* input i (NULL when omitted) */
const minfer_tensor_view *ocl_input(const ocl_exec *e, size_t i);
/* The cl_mem and element offset of input i: the state's uploaded constant
 * in slot when it has one, else the view's buffer (offset in elements of
 * the view's type as stored). */
void ocl_in_buf(const ocl_exec *e, size_t i, int slot, cl_mem *buf, cl_int *off);
/* Checks output i against the shape the kernel computes; buffer and element
 * offset out. */
minfer_status ocl_output(const ocl_exec *e, size_t i, int32_t rank, const int64_t *dims,
                         cl_mem *buf, cl_int *off);

/* Sets args from a list: each entry a (size, pointer) pair. */
#define OCL_ARG(v) sizeof(v), (const void *)&(v)
minfer_status ocl_set_args(const ocl_exec *e, int k, int n, ...);
/* Enqueues kernel k over a dims-D grid of at least global[] items; the
 * local size comes from local[] (0 entries: chosen here) and the global is
 * rounded up to it. */
minfer_status ocl_enqueue(const ocl_exec *e, int k, int dims, const size_t *global,
                          const size_t *local);
/* A 1-D launch of n items with the device's preferred local size. */
minfer_status ocl_launch1(const ocl_exec *e, int k, size_t n);
/* ocl_enqueue with the local size ocl_pick_local chooses. */
minfer_status ocl_launch(const ocl_exec *e, int k, int dims, const size_t *global, int tiled);
/* Copies bytes within the device (reshape family, Identity). */
minfer_status ocl_copy(const ocl_exec *e, cl_mem src, size_t soff, cl_mem dst, size_t doff,
                       size_t bytes);
/* Fills bytes at dst + doff with a pattern of psize (1, 2 or 4) bytes. */
minfer_status ocl_fill(const ocl_exec *e, cl_mem dst, size_t doff, const void *pattern,
                       size_t psize, size_t bytes);

/* Unary activation over n floats. */
minfer_status ocl_run_unary(const ocl_exec *e, cl_mem x, cl_int xoff, cl_mem y, cl_int yoff,
                            size_t n, int op, float a, float b);

/* gemm.c: whether CLBlast is worth timing per shape on this device (a
 * probe GEMM against the own kernel, once per device; tuning cache). */
int ocl_clblast_promising(ocl_prep *p);

/* gemm.c: the work-group kernel of back end b (OCL_GEMM_LOCAL*) for a
 * convolution (conv) or a GEMM, in *t; 0 when it is not a local back end,
 * or the kernel's work-group limit (CL_KERNEL_WORK_GROUP_SIZE), the
 * device's item limits or its local memory are too small for it (the
 * caller falls back to the own kernel). The program must be built. */
int ocl_local_tile(const ocl_ctx *ctx, int b, int conv, ocl_ltile *t);
/* gemm.c: whether the work-group kernels are worth timing per shape on
 * this device (a probe GEMM, once per device, as for CLBlast). */
int ocl_local_promising(ocl_prep *p);
/* gemm.c: a context of this provider begins or ends. CLBlast keeps the
 * programs it compiled in a process-wide cache holding references to their
 * contexts until exit, where its destructor runs after the OpenCL
 * implementation may have torn itself down (oclgrind's LLVM aborted there);
 * when the last live context of the provider ends, the cache is emptied
 * first, so each context is really released with its session. */
void ocl_context_begin(void);
void ocl_context_end(void);

/* ---- Kernels, by family ----------------------------------------------- */

#define OCL_OP(name)                                                                       \
    minfer_status ocl_prepare_##name(ocl_prep *p);                                         \
    minfer_status ocl_execute_##name(const ocl_exec *e);

/* elementwise.c */
OCL_OP(unary)
OCL_OP(clip)
OCL_OP(fused_elementwise)
OCL_OP(binary)
OCL_OP(variadic)
OCL_OP(batchnorm)
/* conv.c */
OCL_OP(conv)
OCL_OP(pool)
OCL_OP(global_pool)
/* gemm.c */
OCL_OP(gemm)
OCL_OP(matmul)
/* norm.c */
OCL_OP(softmax)
OCL_OP(layernorm)
/* shape_ops.c */
OCL_OP(reshape)
OCL_OP(transpose)
OCL_OP(concat)
OCL_OP(fused_concat)
OCL_OP(gather)
OCL_OP(reduce)
/* fused.c */
OCL_OP(rmsnorm)
OCL_OP(attention)
OCL_OP(rotary)
/* slice.c */
OCL_OP(slice)
OCL_OP(split)
OCL_OP(expand)

#undef OCL_OP

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
