/*
 * Private header of the naive CPU provider.
 *
 * The provider is the oracle every other provider is tested against, so its
 * kernels are plain loops that are easy to check against the ONNX spec.
 * Each op family lives in its own file and exposes a prepare and a compute
 * function per op; provider.c lists them in one static kernel table.
 *
 *   prepare (cpu_prep): reads attributes and constant inputs once, checks
 *     that the node is something the kernel computes correctly, and fills a
 *     flat op-state block (one malloc, released with free()). With
 *     p->prep == NULL it is only asked whether the node is supported (shapes
 *     may be unknown then); with a prep it also sizes the workspace from the
 *     plan's concrete shapes.
 *   compute (cpu_exec): derives every output shape from the run's inputs,
 *     checks it against the buffer the host gave (or allocates it when the
 *     host could not infer it), and fills the outputs.
 */
#ifndef MINFER_PROVIDER_CPU_H
#define MINFER_PROVIDER_CPU_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "minfer/provider_kit.h"

#define CPU_MAX_RANK MINFER_MAX_RANK

/* Everything declared here stays inside the library; only the entry symbol
 * (MINFER_PROVIDER_EXPORT) is exported, whatever the build's visibility. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* One provider instance (one per session). */
typedef struct cpu_ctx {
    const minfer_host_api *api;
    void *host;
    /* execute_node's run (minfer_exec_args.run), in the copy of the
     * context a compute works on; NULL in the provider's own (init,
     * prepare): cpu_parallel then splits over the session's pool */
    void *run;
} cpu_ctx;

/* What a kernel's prepare works on. */
typedef struct cpu_prep {
    cpu_ctx *ctx;
    const minfer_node_desc *node;
    minfer_node_prep *prep; /* NULL: support check only */
    int64_t since;          /* since_version of the kernel entry chosen */
    char *err;              /* reason when declining or failing */
    size_t err_size;
    void *state;            /* out: op state (free()), or NULL */
    /* A support check (prep NULL) keeps small state here rather than on
     * the heap: a check allocates nothing. */
    _Alignas(16) unsigned char check_state[512];
} cpu_prep;

/* What a kernel's compute works on. */
typedef struct cpu_exec {
    cpu_ctx *ctx;
    const void *state;
    const minfer_exec_args *args;
    /* A float16/bfloat16 node run through its float kernel (widen.c):
     * cpu_output sizes its outputs of unknown shape there. NULL otherwise. */
    struct cpu_wrun *wrun;
} cpu_exec;

/* Memory through the host's alloc (minfer_host_api.alloc) when it has one,
 * else malloc; free it with free(). cpu_calloc zero-fills and checks n *
 * size for overflow. */
void *cpu_malloc(const cpu_ctx *ctx, size_t bytes);
void *cpu_calloc(const cpu_ctx *ctx, size_t n, size_t size);
void *cpu_host_malloc(const minfer_host_api *api, void *host, size_t bytes);
/* Frees a prepare's state (which a support check may keep inline). */
void cpu_state_free(cpu_prep *p);

typedef minfer_status (*cpu_prepare_fn)(cpu_prep *p);
typedef minfer_status (*cpu_compute_fn)(const cpu_exec *e);

typedef struct cpu_kernel {
    const char *domain;
    const char *op_type;
    int64_t since_version;
    uint32_t types; /* CPU_T bits accepted for the main input (input 0, else output 0) */
    cpu_prepare_fn prepare; /* NULL: nothing to prepare */
    cpu_compute_fn compute;
} cpu_kernel;

/* float16 and bfloat16 through the float kernels (widen.c). */
typedef struct cpu_widen cpu_widen;
/* 1 if a node whose main element type is main_dtype runs through k's
 * float kernel: a 2-byte float type k's mask lacks, float in it. */
int cpu_widen_wanted(const cpu_kernel *k, int32_t main_dtype);
/* Prepares (prep NULL: only checks) the float form of the node; *out gets
 * the widened node (NULL after a check), freed with cpu_widen_free. */
minfer_status cpu_widen_prepare(cpu_ctx *ctx, const cpu_kernel *k, const minfer_node_desc *node,
                                minfer_node_prep *prep, cpu_widen **out, char *why,
                                size_t why_size);
minfer_status cpu_widen_execute(cpu_ctx *ctx, const cpu_widen *w, const minfer_exec_args *args);
void cpu_widen_free(cpu_widen *w);
/* cpu_output's allocation of an output of unknown shape in a widened run. */
minfer_status cpu_widen_alloc(const cpu_exec *e, size_t i, int32_t rank, const int64_t *dims);

/* The kernel table (provider.c), for tools/gen-operators, which links the
 * provider's sources into a program that prints docs/operators.md. */
const cpu_kernel *cpu_kernel_table(size_t *count);

/* ---- Type masks and typed-loop generation ------------------------------- */

/* A type's bit in a type mask; 0 for a number outside the mask (a dtype
 * read from a model can be anything). */
#define CPU_T(d) ((unsigned)(d) < 32u ? 1u << (unsigned)(d) : 0u)
#define CPU_T_FLOATS (CPU_T(MINFER_DTYPE_FLOAT) | CPU_T(MINFER_DTYPE_DOUBLE))
#define CPU_T_SINTS                                                                        \
    (CPU_T(MINFER_DTYPE_INT8) | CPU_T(MINFER_DTYPE_INT16) | CPU_T(MINFER_DTYPE_INT32) |   \
     CPU_T(MINFER_DTYPE_INT64))
#define CPU_T_UINTS                                                                        \
    (CPU_T(MINFER_DTYPE_UINT8) | CPU_T(MINFER_DTYPE_UINT16) | CPU_T(MINFER_DTYPE_UINT32) | \
     CPU_T(MINFER_DTYPE_UINT64))
#define CPU_T_INTS (CPU_T_SINTS | CPU_T_UINTS)
#define CPU_T_NUM (CPU_T_FLOATS | CPU_T_INTS)
#define CPU_T_BOOL CPU_T(MINFER_DTYPE_BOOL)
#define CPU_T_HALF (CPU_T(MINFER_DTYPE_FLOAT16) | CPU_T(MINFER_DTYPE_BFLOAT16))
#define CPU_T_ALL (CPU_T_NUM | CPU_T_BOOL | CPU_T_HALF)
#define CPU_T_IDX (CPU_T(MINFER_DTYPE_INT32) | CPU_T(MINFER_DTYPE_INT64))
/* Strings are not in CPU_T_ALL: a kernel that moves elements by size would
 * copy the char * and the host would free it twice. Only kernels that
 * strdup their string outputs take CPU_T_STR. */
#define CPU_T_STR CPU_T(MINFER_DTYPE_STRING)

/* X(dtype enum, C type, suffix) for every type with native C arithmetic.
 * Kernel families instantiate their loops through these lists once. */
#define CPU_FLOAT_TYPES(X)                                                                 \
    X(MINFER_DTYPE_FLOAT, float, f32)                                                      \
    X(MINFER_DTYPE_DOUBLE, double, f64)
#define CPU_SINT_TYPES(X)                                                                  \
    X(MINFER_DTYPE_INT8, int8_t, i8)                                                       \
    X(MINFER_DTYPE_INT16, int16_t, i16)                                                    \
    X(MINFER_DTYPE_INT32, int32_t, i32)                                                    \
    X(MINFER_DTYPE_INT64, int64_t, i64)
#define CPU_UINT_TYPES(X)                                                                  \
    X(MINFER_DTYPE_UINT8, uint8_t, u8)                                                     \
    X(MINFER_DTYPE_UINT16, uint16_t, u16)                                                  \
    X(MINFER_DTYPE_UINT32, uint32_t, u32)                                                  \
    X(MINFER_DTYPE_UINT64, uint64_t, u64)
#define CPU_INT_TYPES(X) CPU_SINT_TYPES(X) CPU_UINT_TYPES(X)
#define CPU_NUM_TYPES(X) CPU_FLOAT_TYPES(X) CPU_INT_TYPES(X)

/* a + b in type T for any CPU_NUM_TYPES type: floats add, integers wrap
 * modulo 2^bits through uint64_t (as integer Add does), never a signed
 * overflow. */
#define CPU_WRAP_ADD(T, a, b)                                                              \
    _Generic((T)0, float: (T)((a) + (b)), double: (T)((a) + (b)),                         \
             default: (T)((uint64_t)(a) + (uint64_t)(b)))

/* ---- Errors and attributes (common.c) ----------------------------------- */

/* Writes "Op: message" into p->err; returns MINFER_ERR_UNSUPPORTED. */
minfer_status cpu_decline(cpu_prep *p, const char *fmt, ...);
/* As cpu_decline with another status (a malformed node). */
minfer_status cpu_prep_fail(cpu_prep *p, minfer_status st, const char *fmt, ...);
/* Reports a run-time failure through host_api->set_error, naming node and op. */
minfer_status cpu_fail(const cpu_exec *e, minfer_status st, const char *fmt, ...);

/* Zeroed op state of size bytes, stored in p->state; NULL after an error. */
void *cpu_state(cpu_prep *p, size_t size);

int64_t cpu_attr_int(const cpu_prep *p, const char *name, int64_t dflt);
float cpu_attr_float(const cpu_prep *p, const char *name, float dflt);
/* The attribute's string (NUL-terminated per the ABI), or dflt. */
const char *cpu_attr_str(const cpu_prep *p, const char *name, const char *dflt);
int cpu_has_attr(const cpu_prep *p, const char *name);
/* A STRINGS attribute (through host_api->attr_strings, checked against the
 * host's struct_size): 1 found, 0 absent, -1 declined (reason in p->err). */
int cpu_attr_strs(cpu_prep *p, const char *name, const char *const **out, size_t *count);
/* Copies an ints attribute. Returns 1 found, 0 absent, or declines
 * (returns -1, reason in p->err) when it has more than cap entries. */
int cpu_attr_ints(cpu_prep *p, const char *name, int64_t *out, size_t cap, size_t *count);

/* Inputs, outputs, element counts, axes, element sizes and half/bfloat16
 * conversions come from the provider kit (minfer/provider_kit.h):
 * minfer_kit_input, minfer_kit_output_wanted, minfer_kit_numel,
 * minfer_kit_axis, minfer_elem_size, minfer_half_to_float and the rest. */

/* ---- Tensors at run time (common.c) ------------------------------------- */

/* Element counts are minfer_kit_numel's: -1 when a dim is negative or the
 * count does not fit. The host's views never overflow, and outputs pass
 * cpu_output's check before a kernel sizes anything from them. */
/* stride * dim for row-major strides, saturating at INT64_MAX. Only an
 * empty tensor ([0, 2^40, 2^40]) has strides that do not fit, and no
 * element of it is ever addressed: the saturated value keeps the
 * arithmetic defined. */
static inline int64_t cpu_stride_mul(int64_t stride, int64_t dim) {
    int64_t r;
    return minfer_i64_mul(stride, dim, &r) == MINFER_OK ? r : INT64_MAX;
}

/* input i, or NULL when omitted. */
const minfer_tensor_view *cpu_input(const cpu_exec *e, size_t i);
static inline void *cpu_data(const minfer_tensor_view *v) {
    return v->data ? (char *)v->data + v->offset : NULL;
}
/* Gives output i this element type and shape: checks them against what the
 * host allocated, or allocates the output when its rank is -1. *data
 * receives the output's first element (NULL for an empty tensor). */
minfer_status cpu_output(const cpu_exec *e, size_t i, int32_t dtype, int32_t rank,
                         const int64_t *dims, void **data);
/* Reads an int32/int64 tensor (at most cap values) into out. */
minfer_status cpu_read_ints(const cpu_exec *e, const minfer_tensor_view *v, const char *what,
                            int64_t *out, size_t cap, size_t *count);
/* Reads a scalar (1-element) tensor of any numeric type as double. */
minfer_status cpu_read_scalar(const cpu_exec *e, const minfer_tensor_view *v, const char *what,
                              double *out);

/* Element i of p as double, for every numeric type, float16, bfloat16 and
 * bool (0 for any other type). Kernels whose math is naturally done in
 * double use these instead of one loop per type. int64 beyond 2^53 loses
 * precision here: index and integer-exact kernels copy bytes instead. */
double cpu_get(const void *p, int32_t dtype, size_t i);
/* Stores v as element i; integer types saturate and take NaN as 0. */
void cpu_set(void *p, int32_t dtype, size_t i, double v);
/* Element i of an int32/int64 tensor's data. */
static inline int64_t cpu_get_index(const void *p, int32_t dtype, size_t i) {
    return dtype == MINFER_DTYPE_INT64 ? ((const int64_t *)p)[i] : ((const int32_t *)p)[i];
}
/* Row-major element strides of a shape. */
void cpu_strides(int32_t rank, const int64_t *dims, int64_t *strides);
/* 1 if dtype is float, double, float16 or bfloat16. */
int cpu_is_float(int32_t dtype);

/* ---- Threads -------------------------------------------------------------- */

void cpu_parallel(const cpu_ctx *ctx, size_t n, size_t grain, minfer_range_fn fn, void *arg);
int cpu_threads(const cpu_ctx *ctx);

/* ---- Numpy broadcasting (common.c) ---------------------------------------- */

/* Multidirectional broadcast of shapes; 0 on success, -1 if incompatible. */
int cpu_broadcast_shape(int32_t ra, const int64_t *da, int32_t rb, const int64_t *db,
                        int32_t *rank, int64_t *dims);

#define CPU_BCAST_MAX_IN 3

/* An output walked as rows, each row a contiguous run of the output whose
 * inputs advance by step[k] (0 or 1 element) per element. */
typedef struct cpu_bcast {
    int n_in;
    int rank; /* after merging dims with the same broadcast pattern */
    int64_t dims[CPU_MAX_RANK];
    int64_t stride[CPU_BCAST_MAX_IN][CPU_MAX_RANK];
    size_t step[CPU_BCAST_MAX_IN];
} cpu_bcast;

/* Called per run: n elements from output element out_off, inputs from in_off[k]. */
typedef void (*cpu_bcast_fn)(void *arg, size_t out_off, const size_t *in_off, size_t n,
                             const size_t *step);

/* Sets up walking an output of out_rank/out_dims from n_in inputs, each
 * broadcastable to it. -1 if an input does not broadcast. */
int cpu_bcast_init(cpu_bcast *b, int n_in, const int32_t *in_rank,
                   const int64_t *const *in_dims, int32_t out_rank, const int64_t *out_dims);
/* Walks every element of the output, in parallel. */
void cpu_bcast_run(const cpu_ctx *ctx, const cpu_bcast *b, cpu_bcast_fn fn, void *arg);

/* ---- GEMM (gemm.c) ------------------------------------------------------- */

/* C[M x N] (row stride ldc) = A * B (+ C's previous contents when
 * accumulate). Element (i, k) of A is A[i * rsa + k * csa], so a transposed
 * A costs nothing; B is row-major K x N with row stride ldb. Runs over the
 * session's threads when parallel is set. dtype: float, double or an
 * integer type (integers wrap). */
void cpu_gemm(const cpu_ctx *ctx, int32_t dtype, int parallel, size_t M, size_t N, size_t K,
              const void *A, size_t rsa, size_t csa, const void *B, size_t ldb, void *C,
              size_t ldc, int accumulate);

/* ---- Integer GEMM and requantization (qgemm.c) ----------------------------- */

/* C[M x N] (row stride ldc) = A * B on int16 operands whose zero points are
 * already subtracted, int32 sums (wrapping). A is M x K (row stride lda);
 * B is given transposed, BT N x K (row stride ldb). */
void cpu_qgemm16(const cpu_ctx *ctx, int parallel, size_t M, size_t N, size_t K,
                 const int16_t *A, size_t lda, const int16_t *BT, size_t ldb, int32_t *C,
                 size_t ldc);
/* dst[i] = src[i] - zp for n int8 or uint8 (dtype) values. */
void cpu_q_widen(const void *src, int32_t dtype, int32_t zp, int16_t *dst, size_t n);
/* Zero point k of a scalar or per-channel zero-point tensor; 0 when absent. */
int32_t cpu_q_zero_point(const minfer_tensor_view *z, size_t k);
/* MLAS's requantization of n sums into int8/uint8 (dtype) out:
 * round_half_even(clamp(float(acc + bias) * multiplier)) + zp. */
void cpu_q_requant(const int32_t *acc, size_t n, int32_t bias, float multiplier, int32_t zp,
                   int32_t dtype, void *out);
/* Half-to-even rounding of a float, as MLAS's quantization rounds. */
float cpu_q_round_even(float v);

/* ---- Shared between families ---------------------------------------------- */

/* Broadcasts x into out (out_rank/out_dims), numpy style (elementwise.c). */
minfer_status cpu_broadcast_copy(const cpu_exec *e, const minfer_tensor_view *x,
                                 int32_t out_rank, const int64_t *out_dims, void *out);

/* Sliding-window geometry of Conv and the pools (conv.c), for 1 to 3
 * spatial dims. */
enum { CPU_PAD_NOTSET, CPU_PAD_SAME_UPPER, CPU_PAD_SAME_LOWER, CPU_PAD_VALID };
#define CPU_MAX_SPATIAL 3
typedef struct cpu_window {
    int nsp;
    int64_t kernel[CPU_MAX_SPATIAL], stride[CPU_MAX_SPATIAL], dilation[CPU_MAX_SPATIAL];
    int64_t pads[2 * CPU_MAX_SPATIAL]; /* begins, then ends (explicit pads) */
    int auto_pad;
    int ceil_mode;
} cpu_window;

/* Reads kernel_shape (or takes kernel when not NULL), strides, dilations,
 * pads, auto_pad and ceil_mode; declines what it cannot handle. */
minfer_status cpu_window_parse(cpu_prep *p, cpu_window *w, int nsp, const int64_t *kernel);
/* Output spatial dims and begin pads for input spatial dims in; -1 if the
 * window does not fit. */
int cpu_window_out(const cpu_window *w, const int64_t *in, int64_t *out, int64_t *pad_begin);

/* ---- Kernels, by family -------------------------------------------------- */

#define CPU_KERNEL(name)                                                                   \
    minfer_status cpu_prepare_##name(cpu_prep *p);                                         \
    minfer_status cpu_compute_##name(const cpu_exec *e);

/* elementwise.c */
CPU_KERNEL(unary)
CPU_KERNEL(clip)
CPU_KERNEL(binary)
CPU_KERNEL(variadic)
CPU_KERNEL(where)
CPU_KERNEL(not)
CPU_KERNEL(unary_generic)
CPU_KERNEL(intbin)
/* conv.c */
CPU_KERNEL(conv)
CPU_KERNEL(convtranspose)
CPU_KERNEL(qconv)
/* quant.c */
minfer_status cpu_prepare_quant(cpu_prep *p);
minfer_status cpu_compute_quantize(const cpu_exec *e);
minfer_status cpu_compute_dynamic_quantize(const cpu_exec *e);
CPU_KERNEL(qmatmul)
/* rnn.c */
CPU_KERNEL(rnn)
/* einsum.c */
CPU_KERNEL(einsum)
/* detection.c */
CPU_KERNEL(nms)
CPU_KERNEL(roialign)
CPU_KERNEL(det)
/* signal.c */
minfer_status cpu_prepare_signal(cpu_prep *p);
minfer_status cpu_compute_window(const cpu_exec *e);
minfer_status cpu_compute_dft(const cpu_exec *e);
minfer_status cpu_compute_stft(const cpu_exec *e);
minfer_status cpu_compute_melweight(const cpu_exec *e);
/* pool.c */
CPU_KERNEL(pool)
CPU_KERNEL(global_pool)
CPU_KERNEL(maxunpool)
/* gemm.c */
CPU_KERNEL(gemm)
CPU_KERNEL(matmul)
/* reduce.c */
CPU_KERNEL(reduce)
CPU_KERNEL(argminmax)
/* norm.c */
CPU_KERNEL(softmax)
CPU_KERNEL(batchnorm)
CPU_KERNEL(layernorm)
CPU_KERNEL(rmsnorm)
minfer_status cpu_compute_hardmax(const cpu_exec *e);
minfer_status cpu_prepare_norm2(cpu_prep *p);
minfer_status cpu_compute_instancenorm(const cpu_exec *e);
minfer_status cpu_compute_mvn(const cpu_exec *e);
minfer_status cpu_compute_lrn(const cpu_exec *e);
/* shape_ops.c */
CPU_KERNEL(identity)
CPU_KERNEL(dropout)
CPU_KERNEL(reshape)
CPU_KERNEL(flatten)
CPU_KERNEL(squeeze)
CPU_KERNEL(unsqueeze)
CPU_KERNEL(transpose)
CPU_KERNEL(concat)
CPU_KERNEL(slice)
CPU_KERNEL(gather)
CPU_KERNEL(split)
CPU_KERNEL(shape)
CPU_KERNEL(size)
CPU_KERNEL(cast)
CPU_KERNEL(constant)
CPU_KERNEL(constant_of_shape)
CPU_KERNEL(expand)
CPU_KERNEL(range)
CPU_KERNEL(tile)
/* loss.c */
CPU_KERNEL(loss)
/* training.c: Adagrad, Momentum and Adam (ai.onnx.preview.training) */
CPU_KERNEL(optimizer)
/* indexing.c: one prepare (indexing) for most, one compute each */
minfer_status cpu_prepare_indexing(cpu_prep *p);
minfer_status cpu_compute_gather_elements(const cpu_exec *e);
minfer_status cpu_compute_scatter_elements(const cpu_exec *e);
minfer_status cpu_compute_gather_nd(const cpu_exec *e);
minfer_status cpu_compute_scatter_nd(const cpu_exec *e);
minfer_status cpu_compute_onehot(const cpu_exec *e);
minfer_status cpu_compute_compress(const cpu_exec *e);
minfer_status cpu_compute_nonzero(const cpu_exec *e);
minfer_status cpu_compute_topk(const cpu_exec *e);
minfer_status cpu_compute_unique(const cpu_exec *e);
minfer_status cpu_compute_cumsum(const cpu_exec *e);
minfer_status cpu_compute_trilu(const cpu_exec *e);
minfer_status cpu_compute_eyelike(const cpu_exec *e);
minfer_status cpu_compute_reverse_sequence(const cpu_exec *e);
minfer_status cpu_compute_depth_space(const cpu_exec *e);
CPU_KERNEL(pad)
/* text.c: strings */
/* Cast to or from string (x or to is MINFER_DTYPE_STRING): numbers are
 * written as numpy's str() writes them, strings parsed with strtod/strtoll. */
minfer_status cpu_cast_strings(const cpu_exec *e, const minfer_tensor_view *x, int32_t to,
                               void *y);
CPU_KERNEL(string_normalizer)
CPU_KERNEL(tfidf)
/* random.c */
CPU_KERNEL(random)
/* resize.c */
CPU_KERNEL(resize)
CPU_KERNEL(gridsample)
/* fused.c: the optimizer's fused ops (domain "minfer") */
CPU_KERNEL(fused_conv)
CPU_KERNEL(fused_gemm)
CPU_KERNEL(fused_matmul)
CPU_KERNEL(gelu)
CPU_KERNEL(attention)
CPU_KERNEL(rotary)

#undef CPU_KERNEL

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
