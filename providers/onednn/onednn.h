/*
 * Private header of the oneDNN provider (oneDNN 2.6, C API, 2.x calls).
 *
 * Each op family has a build function that turns one node into a small
 * program of oneDNN primitives (a "dnn_node"): reorders of inputs into the
 * layout the main primitive wants, the main primitive, and, when outputs
 * must be plain, reorders of its results. Memories are described once at
 * prepare time; each memory is bound at execute time to an input, an output
 * or a slice of the workspace, or holds constant data the node owns (packed
 * weights). execute_node sets the data handles, runs the steps and waits.
 *
 * The same build function answers supports_operator: it is run in check
 * mode on the node's shapes (unknown dimensions replaced by stand-ins),
 * which creates primitive descriptors (cheap, no JIT) but no primitives and
 * packs no weights, and declines anything oneDNN would run with a reference
 * ("ref:") implementation.
 */
#ifndef MINFER_PROVIDER_ONEDNN_H
#define MINFER_PROVIDER_ONEDNN_H

#include <stddef.h>
#include <stdint.h>

#include <dnnl.h>

#include "minfer/provider_kit.h"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

#define DNN_MAX_MEMS 72
#define DNN_MAX_STEPS 12
#define DNN_MAX_ARGS 40
#define DNN_MAX_OWNED 10
#define DNN_MAX_CONCAT 32
#define DNN_ALIGN 64
#define DNN_MAX_SPATIAL 3 /* spatial axes of Conv and the pools */
#define DNN_MAX_PIECES 16
#define DNN_PIECE_INPUTS 8 /* inputs of a node that splits */
#define DNN_TAG_MAX 160     /* a packed constant's tag (packed.c) */

/* A layout registered by this instance: id = index + 1 (0 is plain). */
typedef struct dnn_layout {
    dnnl_memory_desc_t md;
    dnnl_memory_desc_t plain;         /* same dims, dense row-major */
    dnnl_primitive_t to_plain;        /* reorder md -> plain (copy_to_host) */
    dnnl_primitive_t from_plain;      /* reorder plain -> md (copy_from_host) */
    dnnl_memory_t m_md, m_plain;      /* memories for those reorders */
} dnn_layout;

enum { DNN_SPLIT_AUTO, DNN_SPLIT_ON, DNN_SPLIT_OFF };
#define DNN_SPLIT_AUTO_MAX_THREADS 8 /* split=auto: split forms up to this many threads */

/* One provider instance (one per session). */
typedef struct dnn_ctx {
    const minfer_host_api *api;
    void *host;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    int threads;
    int split;           /* DNN_SPLIT_*: split nodes across the host's pool */
    int private_layouts; /* outputs may stay in oneDNN layouts (own memory domain) */
    int bf16;            /* precision bf16: products read bf16, accumulate in float */
    dnn_layout *layouts;
    size_t n_layouts, cap_layouts;
    int defer_pack;      /* dnn_const_input records constants, dnn_node_pack packs them */
    /* The host's node being prepared (the constants' base and the key to
     * the compiled model's packed copies, packed.c), else NULL. */
    const minfer_node_desc *pack_node;
    int pack_warned;     /* a stored pack was not used, and the log said why */
} dnn_ctx;

/* parallel_for from execute_node: through the run (a's run-taking host
 * member, which splits over what the run's scheduler gives this node),
 * else, with an older host, through the session. */
static inline void dnn_parallel_for(const dnn_ctx *ctx, const minfer_exec_args *a, size_t n,
                                    size_t grain, minfer_range_fn fn, void *arg) {
    if (MINFER_HOST_HAS(ctx->api, run_parallel_for))
        ctx->api->run_parallel_for(a->run, n, grain, fn, arg);
    else
        ctx->api->parallel_for(ctx->host, n, grain, fn, arg);
}


/* Where a memory's data handle comes from at execute. */
enum { BIND_FIXED, BIND_INPUT, BIND_OUTPUT, BIND_WS, BIND_SCRATCH };

typedef struct dnn_mem {
    dnnl_memory_t mem;
    int bind;
    int index;     /* input or output index (BIND_FIXED: the constant input
                      it packs, or -1) */
    size_t off;    /* BIND_WS: offset after the scratchpad region */
} dnn_mem;

typedef struct dnn_step {
    dnnl_primitive_t prim;
    int n_args;
    dnnl_exec_arg_t args[DNN_MAX_ARGS];
    int skip_src, skip_dst; /* >= 0: skip the step when these two mems alias */
    /* prim NULL: a step computed here, on count elements of the mems:
     * DNN_HOST_ADD_I32 mems[dst] += mems[src] in int32, exact (oneDNN's
     * sums of int32 pass through float); DNN_HOST_QADD_U8/_S8 QLinearAdd,
     * mems[dst] = saturate(round_half_even(fma(a, ra, fma(b, rb, k))))
     * of a = mems[src], b = mems[src2] (one layout, no padding) */
    int host;
    int src, src2, dst;
    size_t count;
    float ra, rb, k;
} dnn_step;

enum { DNN_HOST_ADD_I32 = 1, DNN_HOST_QADD_U8, DNN_HOST_QADD_S8 };

/* A Concat run as copies (concat.c): output row o is input i's row o,
 * chunk[i] bytes, at byte at[i] of the output row, for every input. */
typedef struct dnn_copy {
    int n;          /* inputs; 0: the node is not run as copies */
    size_t outer;   /* rows */
    size_t row;     /* bytes of an output row */
    size_t at[DNN_MAX_CONCAT], chunk[DNN_MAX_CONCAT];
} dnn_copy;

/* A prepared node: memories, steps, owned constant buffers. */
typedef struct dnn_node dnn_node;
struct dnn_node {
    dnn_mem mems[DNN_MAX_MEMS];
    int n_mems;
    dnn_step steps[DNN_MAX_STEPS];
    int n_steps;
    void *owned[DNN_MAX_OWNED];
    int n_owned;
    uint64_t *in_layout; /* expected layout of each input */
    size_t n_in;
    int dyn_rank;         /* >= 0: output 0 is allocated at execute with this shape */
    int64_t dyn_dims[MINFER_MAX_RANK];
    size_t scratch_bytes; /* aligned scratchpad region at the start of the workspace */
    size_t ws_bytes;      /* total workspace */
    int threads;          /* OpenMP threads it was built for and runs on */
    /* Constants not packed yet (built with dnn_ctx.defer_pack): mems[mem]
     * gets src, of md have, reordered into its md times scale. */
    struct dnn_deferred {
        int mem;
        const void *src;
        dnnl_memory_desc_t have;
        float scale;
    } deferred[DNN_MAX_OWNED];
    int n_deferred;
    /* Constants this build packed or took from a compiled model, with
     * their tags (packed.c), for minfer_compile_model. */
    struct dnn_packed {
        int input;
        const void *data;
        size_t bytes;
        char tag[DNN_TAG_MAX];
    } packed[DNN_MAX_OWNED];
    int n_packed;
    dnn_copy copy; /* copy.n > 0: a Concat run as copies, no steps (concat.c) */
};

/* Deferred reorder of a primitive's result into a plain output. */
typedef struct dnn_pending {
    int src, dst;
    dnnl_memory_desc_t src_md, dst_md;
} dnn_pending;

/* Building one piece of a node split across threads (split.c): the piece
 * works on a slice of the node's tensors, which arrive in and must be
 * written in the layouts given here (the slices of the whole tensors'),
 * and a convolution's paddings are the piece's own. */
typedef struct dnn_piece_io {
    dnnl_memory_desc_t in[DNN_PIECE_INPUTS]; /* arrival md of each input (ndims 0: as usual) */
    dnnl_memory_desc_t out;   /* the md output 0 is written in */
    int src_any;              /* the primitive picks its source layout (input 0
                                 is then reordered into it) */
    int dst_any;              /* the primitive picks its destination layout, and
                                 a reorder moves the result into out */
    int64_t pl[DNN_MAX_SPATIAL], pr[DNN_MAX_SPATIAL]; /* Conv paddings */
} dnn_piece_io;

/* What a build function works on. */
typedef struct dnn_b {
    dnn_ctx *ctx;
    const minfer_node_desc *node; /* with unknown dims replaced in check mode */
    minfer_node_prep *prep;       /* NULL in check mode */
    int check;
    dnn_node *n;
    size_t ws_extra;              /* bytes of reorder buffers so far */
    dnn_pending pend[4];
    int n_pend;
    char *why;
    size_t why_size;
    const struct dnn_node *share; /* a variant of this node built before (its
                                     packed constants are reused), or NULL */
    const dnn_piece_io *pio;      /* building a piece of a split node, or NULL */
    int half;                     /* the op takes float16 (dnn_op.half) */
} dnn_b;

typedef minfer_status (*dnn_build_fn)(dnn_b *b);

typedef struct dnn_op {
    const char *domain;
    const char *op_type;
    int64_t since_version;
    dnn_build_fn build;
    int same_shape; /* output 0 has input 0's shape (usable when the host
                       could not infer it: the node is then run dynamically) */
    int float_inputs; /* inputs that must be float, from the first (0: all,
                         -1: none, the build checks the types); the others
                         (shapes, indices) are not checked here */
    int half;         /* float16 tensors taken too, computed in float: f16
                         inputs reordered to f32 as they arrive, constants
                         packed from f16 once, outputs reordered to f16
                         (rounded to nearest even) after the op */
} dnn_op;

/* ---- Errors and attributes (build.c) ------------------------------------- */

/* Writes "Op: message" into b->why; returns MINFER_ERR_UNSUPPORTED. */
minfer_status dnn_decline(dnn_b *b, const char *fmt, ...);
/* As dnn_decline for a failure of oneDNN itself (status named). */
minfer_status dnn_fail(dnn_b *b, dnnl_status_t s, const char *what);

int64_t dnn_attr_int(const dnn_b *b, const char *name, int64_t dflt);
float dnn_attr_float(const dnn_b *b, const char *name, float dflt);
const char *dnn_attr_str(const dnn_b *b, const char *name, const char *dflt);
/* Copies an ints attribute; 1 found, 0 absent, -1 too long (declined). */
int dnn_attr_ints(dnn_b *b, const char *name, int64_t *out, size_t cap, size_t *count);

/* node input i if present, else NULL (the provider kit's). */
static inline const minfer_value_desc *dnn_in(const dnn_b *b, size_t i) {
    return minfer_kit_input(b->node, i);
}
/* 1 if output o exists and has a name. */
/* Whether the product being built, of macs multiply-adds, reads bfloat16
 * (the session's precision bf16 on a CPU with bf16 products; never for a
 * piece of a split node, whose layouts are the whole node's float ones,
 * nor for a product too small for AMX to win back its input's reorder:
 * the corpus's reduced ViT (17 tokens of width 64, products of 70k
 * multiply-adds) ran 1.27x slower in bfloat16 than in float, ResNet-18's
 * convolutions (0.1-0.2 G each) 3-6x faster). */
#define DNN_BF16_MIN_MACS ((double)(1 << 22))
static inline int dnn_lowp(const dnn_b *b, double macs) {
    return b->ctx->bf16 && !b->pio && macs >= DNN_BF16_MIN_MACS;
}

static inline int dnn_out_wanted(const dnn_b *b, size_t o) {
    return minfer_kit_output_wanted(b->node, o);
}
/* Declines unless every present input (the first n_float, when n_float
 * > 0) and every output is float. */
minfer_status dnn_require_float(dnn_b *b, int n_float);
/* Elements of a shape; -1 for a negative dim or a count that overflows. */
static inline int64_t dnn_numel(int32_t rank, const int64_t *dims) {
    return minfer_kit_numel(rank, dims);
}
/* Normalizes axis to [0, rank); -1 when out of range. */
static inline int dnn_axis(int64_t axis, int32_t rank) { return minfer_kit_axis(axis, rank); }

/* ---- Memory descriptors and program building (build.c) ------------------- */

/* Dense row-major float md of these dims (rank 0 is taken as [1]; layout.c). */
dnnl_status_t dnn_plain_md(dnnl_memory_desc_t *md, int rank, const int64_t *dims);
/* The same of data type dt. */
dnnl_status_t dnn_plain_md_dt(dnnl_memory_desc_t *md, int rank, const int64_t *dims,
                              dnnl_data_type_t dt);
/* oneDNN's data type for a MINFER_DTYPE_ (u8, s8, s32; f32 for the rest). */
dnnl_data_type_t dnn_dtype(int32_t dtype);
/* 1 when md is dense row-major of its own data type (layout.c). */
int dnn_md_is_plain(const dnnl_memory_desc_t *md);

/* The md input i arrives in: its registered layout, or plain. */
dnnl_status_t dnn_in_md(dnn_b *b, size_t i, dnnl_memory_desc_t *md);

/* A new memory of md with the given binding; returns its index or -1. */
int dnn_mem_new(dnn_b *b, const dnnl_memory_desc_t *md, int bind, int index);
/* Memory for input i as the primitive wants it (want): bound to the input
 * when it arrives that way, else a workspace buffer filled by a reorder
 * step from the input as it arrives (have, or its arrival md when NULL). */
int dnn_input(dnn_b *b, size_t i, const dnnl_memory_desc_t *have, const dnnl_memory_desc_t *want);
/* Memory for a constant input i (have: its plain md) packed once into
 * want (owned by the node); a non-constant one goes through dnn_input.
 * scale multiplies every element while packing (1: none). */
int dnn_const_input(dnn_b *b, size_t i, const dnnl_memory_desc_t *have,
                    const dnnl_memory_desc_t *want, float scale);
/* Packs the constants a build with ctx->defer_pack left for later (a
 * node whose split pieces pack their own slices never packs its whole
 * weights, so they are never resident three times). why: the reason on
 * failure. */
minfer_status dnn_node_pack(dnn_ctx *ctx, dnn_node *n, char *why, size_t why_size);
/* dnn_node_pack for the builds nodes[0..nn) (NULL entries skipped). last:
 * nothing reads the host's constants after these packs in this
 * prepare_node, so a constant only one of them reads is packed in slices,
 * its plain bytes handed back as it goes (build.c, reorder_sliced). */
minfer_status dnn_nodes_pack(dnn_ctx *ctx, dnn_node *const *nodes, int nn, int last, char *why,
                             size_t why_size);
/* Memory for constant input input (or -1) computed here: data, of md
 * have, packed now into want, owned by the node (not deferred, not shared
 * with a variant, not exported to compiled models). */
int dnn_pack_owned(dnn_b *b, int input, const dnnl_memory_desc_t *have, const void *data,
                   const dnnl_memory_desc_t *want);
/* Memory holding host data the node owns (copied now). */
int dnn_owned_plain(dnn_b *b, const dnnl_memory_desc_t *md, const float *data);
/* Memory for output o written by a primitive in md: the output itself
 * (its layout registered when private layouts are on, or when md is
 * plain), else a workspace buffer reordered into the plain output after
 * the main steps. */
int dnn_output(dnn_b *b, size_t o, const dnnl_memory_desc_t *md);
/* Scratch buffer of md in the workspace. */
int dnn_ws_mem(dnn_b *b, const dnnl_memory_desc_t *md);

/* Creates the primitive descriptor for op_desc, taking the first
 * implementation that is not a reference one; declines if there is none. */
minfer_status dnn_pd(dnn_b *b, const_dnnl_op_desc_t op, const_dnnl_primitive_attr_t attr,
                     dnnl_primitive_desc_t *pd);
/* dnn_pd, passing over the implementations avoid(name, arg) is true of
 * where another that is not a reference follows; avoid NULL: dnn_pd. */
typedef int (*dnn_avoid_fn)(const char *impl, const void *arg);
minfer_status dnn_pd_avoid(dnn_b *b, const_dnnl_op_desc_t op, const_dnnl_primitive_attr_t attr,
                           dnn_avoid_fn avoid, const void *arg, dnnl_primitive_desc_t *pd);
/* Checks an already created pd (concat, sum, reorder): declines "ref:". */
minfer_status dnn_pd_check(dnn_b *b, dnnl_primitive_desc_t pd);
/* The md a pd wants for a query (src, weights, dst...). */
const dnnl_memory_desc_t *dnn_pd_md(const_dnnl_primitive_desc_t pd, dnnl_query_t q, int index);
/* Adds a step running pd with these (arg, mem index) pairs; takes pd. */
minfer_status dnn_step_add(dnn_b *b, dnnl_primitive_desc_t pd, int n, const int *args,
                           const int *mems);
/* Adds a reorder step from mem src to mem dst. */
minfer_status dnn_reorder_step(dnn_b *b, int src, int dst);
/* Adds a step adding mem src's int32 values into mem dst's (same md),
 * exactly, in integers. */
minfer_status dnn_int_add_step(dnn_b *b, int src, int dst);
/* Adds a QLinearAdd step: mems dst = QLinearAdd of mems a and b (one md,
 * uint8 or int8, no padding) with the ratios ra, rb and the offset k. */
minfer_status dnn_qadd_step(dnn_b *b, int a, int b2, int dst, float ra, float rb, float k);

/* A primitive attr in user scratchpad mode. */
dnnl_primitive_attr_t dnn_attr_new(dnn_b *b);
/* Appends the minfer fused activation (attribute "activation" and
 * "activation_params") to post-ops; declines what has no oneDNN form. */
minfer_status dnn_append_activation(dnn_b *b, dnnl_post_ops_t po);
/* Appends one eltwise op by ONNX name with parameters to post-ops. */
minfer_status dnn_append_eltwise(dnn_b *b, dnnl_post_ops_t po, const char *act,
                                 const float *params, size_t n_params);

/* The oneDNN eltwise ops (at most 2) for an activation by ONNX name, into
 * alg/alpha/beta; returns their count, or -1 when oneDNN has no form. */
int dnn_act_algs(const char *act, const float *p, size_t np, dnnl_alg_kind_t *alg,
                 float *alpha, float *beta);

/* Sliding-window geometry of Conv and the pools (conv.c). */
enum { DNN_PAD_NOTSET, DNN_PAD_SAME_UPPER, DNN_PAD_SAME_LOWER, DNN_PAD_VALID };
typedef struct dnn_window {
    int nsp;
    int auto_pad;
    int64_t kernel[DNN_MAX_SPATIAL], stride[DNN_MAX_SPATIAL], dil[DNN_MAX_SPATIAL];
    int64_t pads[2 * DNN_MAX_SPATIAL]; /* begins, then ends */
} dnn_window;
/* Reads kernel_shape (wk: the weights' kernel, or NULL), strides,
 * dilations, pads and auto_pad; declines what it cannot handle. */
minfer_status dnn_window_parse(dnn_b *b, int nsp, const int64_t *wk, dnn_window *w);
/* Output sizes and oneDNN's left and right paddings for input sizes in;
 * -1 when the window does not fit. */
int dnn_window_out(const dnn_window *w, const int64_t *in, int ceil_mode, int64_t *out,
                   int64_t *pl, int64_t *pr);
/* Declines when output o's shape as computed here differs from the host's. */
minfer_status dnn_check_out(dnn_b *b, size_t o, int rank, const int64_t *dims);

/* ---- Layouts and the memory domain (layout.c) ------------------------------- */

/* Registers md (plain mds give 0); returns the id or UINT64_MAX on failure. */
uint64_t dnn_layout_id(dnn_ctx *ctx, const dnnl_memory_desc_t *md);
const dnn_layout *dnn_layout_get(const dnn_ctx *ctx, uint64_t id);
/* Frees every registered layout (at shutdown). */
void dnn_layouts_free(dnn_ctx *ctx);
/* The memory domain's members of minfer_provider (ONEDNN_OWN_DOMAIN). */
minfer_status dnn_mem_alloc(void *ctx, size_t bytes, void **buffer);
void dnn_mem_free(void *ctx, void *buffer);
size_t dnn_tensor_bytes(void *ctx, const minfer_tensor_view *v);
minfer_status dnn_copy_to_host(void *ctx, const minfer_tensor_view *src, void *dst,
                               size_t dst_bytes);
minfer_status dnn_copy_from_host(void *ctx, const void *src, size_t src_bytes,
                                 const minfer_tensor_view *dst);

/* ---- Nodes (node.c) and their parallel pieces (split.c) ------------------- */

/* Builds node for the given threads (0: the node's default) into *out;
 * check: descriptors only. share: a variant built before whose packed
 * constants are reused. pio: building a piece of a split node. */
minfer_status dnn_build_node(dnn_ctx *ctx, const minfer_node_desc *node, minfer_node_prep *prep,
                             int check, int threads, const dnn_node *share,
                             const dnn_piece_io *pio, dnn_node **out, char *why,
                             size_t why_size);
void dnn_node_free(dnn_node *n);
/* The node's work: multiply-adds x 2 for a product (*product set), else the
 * elements it reads and writes. */
double dnn_node_work(const minfer_node_desc *node, int *product);
/* 1 (why written) when the host could not infer an output's shape: only
 * output 0 of an op that keeps its input's shape can then be allocated at
 * execute. */
int dnn_node_unknown_outputs(const minfer_node_desc *node, char *why, size_t why_size);
/* minfer_provider.supports_operator: the node built in check mode. */
int dnn_supports(void *ctx, const minfer_node_desc *node, char *why, size_t why_size);

/* The threads a node runs on (split=off): the session's, but one for a
 * node too small to repay waking the other OpenMP workers (with passive
 * waiting, waking them costs tens of microseconds; more where the other
 * cores are busy). */
#define DNN_MIN_FLOPS_MT 4e6  /* about 30 us on one core */
#define DNN_MIN_ELEMS_MT 1.5e5 /* elements read and written */
/* A split form (split.c) runs on the host's pool, whose workers spin
 * between jobs: it pays from a smaller node (about 7 us on one core). */
#define DNN_MIN_FLOPS_SPLIT 1e6
#define DNN_MIN_ELEMS_SPLIT 5e4

/* A node split into pieces that run side by side on the host's pool: each
 * piece is the node on a slice of its tensors (output rows of a
 * convolution, images of a batch, rows of a matrix product), built for one
 * thread, bound at execute to the slices' byte offsets, with a workspace
 * of its own. */
typedef struct dnn_split {
    int n;
    dnn_node *piece[DNN_MAX_PIECES];
    size_t in_off[DNN_MAX_PIECES][DNN_PIECE_INPUTS]; /* byte offsets into the inputs */
    size_t out_off[DNN_MAX_PIECES];   /* byte offset into output 0 */
    size_t ws_stride;                 /* workspace bytes per piece */
    int own_weights;                  /* each piece packed its slice of the
                                         weights (none shared with the node) */
} dnn_split;

/* Splits a prepared node (full: its build for the plan's shapes, whose
 * layouts the pieces must keep) into ctx->threads pieces. NULL when the
 * node has no split form (op, layout or shape) or a piece cannot be built. */
dnn_split *dnn_split_build(dnn_ctx *ctx, const minfer_node_desc *node, const dnn_node *full,
                           const uint64_t *out_layouts);
void dnn_split_free(dnn_split *sp);

/* ---- Op families --------------------------------------------------------- */

/* conv.c */
minfer_status dnn_build_conv(dnn_b *b);
minfer_status dnn_build_conv_transpose(dnn_b *b);
/* supports_operator's stand-ins for a Conv's or FusedConv's unknown
 * dimensions of X, Y and Z (see conv.c); the others are left unknown. */
void dnn_conv_standins(dnn_ctx *ctx, const minfer_node_desc *node, minfer_value_desc *in,
                       minfer_value_desc *out);
/* matmul.c */
minfer_status dnn_build_matmul(dnn_b *b);
minfer_status dnn_build_gemm(dnn_b *b);
/* quant.c: QLinearConv, ConvInteger; QLinearMatMul, MatMulInteger;
 * QLinearAdd; Cast of integers to float */
minfer_status dnn_build_qconv(dnn_b *b);
minfer_status dnn_build_qmatmul(dnn_b *b);
minfer_status dnn_build_qadd(dnn_b *b);
minfer_status dnn_build_cast(dnn_b *b);
/* attention.c */
minfer_status dnn_build_attention(dnn_b *b);
/* rnn.c */
minfer_status dnn_build_rnn(dnn_b *b);
/* pool.c */
minfer_status dnn_build_pool(dnn_b *b);
minfer_status dnn_build_global_pool(dnn_b *b);
/* eltwise.c */
minfer_status dnn_build_unary(dnn_b *b);
minfer_status dnn_build_binary(dnn_b *b);
minfer_status dnn_build_variadic(dnn_b *b);
minfer_status dnn_build_concat(dnn_b *b);
/* concat.c: the copies of a Concat of n inputs along axis, in src, into
 * dst; 0 when they apply (every md dense in one axis order, no blocks),
 * else -1. */
int dnn_concat_copy_plan(dnn_copy *cp, int n, int axis, const dnnl_memory_desc_t *src,
                         const dnnl_memory_desc_t *dst);
/* Runs a node built as copies (node->copy.n > 0), cut over the host's
 * pool when it moves enough bytes. */
minfer_status dnn_concat_copy_run(dnn_ctx *ctx, const dnn_node *node, const minfer_exec_args *a);
/* norm.c */
minfer_status dnn_build_batchnorm(dnn_b *b);
minfer_status dnn_build_lrn(dnn_b *b);
minfer_status dnn_build_softmax(dnn_b *b);
minfer_status dnn_build_layernorm(dnn_b *b);
minfer_status dnn_build_rmsnorm(dnn_b *b);
/* shape.c */
minfer_status dnn_build_transpose(dnn_b *b);
minfer_status dnn_build_slice(dnn_b *b);
minfer_status dnn_build_reshape(dnn_b *b);

/* ---- Packed constants of compiled models (packed.c) ------------------------- */

/* Binds mems[mem] of n (a constant input packed from src, of md have, into
 * want times scale) to the compiled model's stored copy when one's tag
 * matches; returns 1 then, else 0 (the caller packs, and the log says once
 * why a stored copy did not match). */
int dnn_packed_take(dnn_b *b, dnn_node *n, int mem, const dnnl_memory_desc_t *have,
                    const void *src, const dnnl_memory_desc_t *want, float scale);
/* Records that mems[mem] of n was packed into data, for export. */
void dnn_packed_note(dnn_b *b, dnn_node *n, int mem, const dnnl_memory_desc_t *have,
                     const void *src, const dnnl_memory_desc_t *want, float scale,
                     const void *data);
/* Emits the constants that the builds builds[0..nb) of one node packed
 * (each buffer once). */
void dnn_packed_export(const dnn_node *const *builds, int nb, const minfer_node_desc *node,
                       void (*emit)(void *arg, const minfer_packed_const *c), void *arg);

/* ---- Prepared nodes (state.c): minfer_provider's members ------------------- */

minfer_status dnn_prepare(void *ctx, const minfer_node_desc *node, minfer_node_prep *prep,
                          void **state);
void dnn_release(void *ctx, void *state);
minfer_status dnn_execute(void *ctx, void *state, const minfer_exec_args *a);
minfer_status dnn_export_packed(void *ctx, void *state, const minfer_node_desc *node,
                                void (*emit)(void *arg, const minfer_packed_const *c), void *arg);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
