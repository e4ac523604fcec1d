/*
 * Private header of plugins/contrib: the com.microsoft (and
 * com.microsoft.nchwc) ops ONNX Runtime writes into the models it optimizes.
 *
 * Each op family lives in its own file (activation.c, fused.c, norm.c,
 * attention.c, nchwc.c, nbits.c, qlinear.c) and exposes, per op, an infer function
 * (types and shapes, from the node description) and a compute function
 * (host tensors, plain row-major). Ops that parse attributes or repack
 * weights once per node also have a create / destroy pair. contrib.c holds
 * the one registration table and the helpers below. Semantics follow ONNX
 * Runtime's contrib-op definitions (docs/ContribOperators.md and
 * onnxruntime/core/graph/contrib_ops/ in its source) and are documented in
 * docs/plugins.md; every op is tested against a composition of standard ONNX
 * ops run on the CPU provider (tests/contrib/).
 */
#ifndef MINFER_PLUGIN_CONTRIB_H
#define MINFER_PLUGIN_CONTRIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "minfer/plugin.h"
#include "minfer/provider_kit.h"

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif


typedef const minfer_plugin_infer_args infer_args;
typedef const minfer_plugin_create_args create_args;
typedef const minfer_plugin_compute_args compute_args;

/* Writes the message into the call's err buffer and returns st. */
#define FAIL(a, st, ...) (snprintf((a)->err, (a)->err_size, __VA_ARGS__), (st))

/* Attributes are read with the kit's readers (minfer/provider_kit.h:
 * minfer_kit_attr_int, _float, _str, _ints_ref, _floats_ref). */

/* ---- Shapes and inference helpers ---- */
/* Value descs and tensor views, stepped by the host's strides (plugin.h:
 * the host appends members to minfer_value_desc and minfer_tensor_view).
 * An index past the node's inputs reads as an omitted input. */
static const minfer_value_desc no_desc = {.rank = -1};
static const minfer_tensor_view no_view = {.rank = -1};

static inline const minfer_value_desc *din(const minfer_node_desc *n, size_t i) {
    if (i >= n->n_inputs)
        return &no_desc;
    return (const minfer_value_desc *)(const void *)((const char *)n->inputs +
                                                     i * minfer_kit_desc_stride(n));
}
static inline const minfer_value_desc *dout(const minfer_node_desc *n, size_t i) {
    if (i >= n->n_outputs)
        return &no_desc;
    return (const minfer_value_desc *)(const void *)((const char *)n->outputs +
                                                     i * minfer_kit_desc_stride(n));
}
static inline size_t view_stride(const minfer_plugin_compute_args *a) {
    if (MINFER_STRUCT_HAS(a, minfer_plugin_compute_args, tensor_view_size) && a->tensor_view_size)
        return a->tensor_view_size;
    return sizeof(minfer_tensor_view);
}
static inline const minfer_tensor_view *vin(const minfer_plugin_compute_args *a, size_t i) {
    if (i >= a->n_inputs)
        return &no_view;
    return (const minfer_tensor_view *)(const void *)((const char *)a->inputs +
                                                      i * view_stride(a));
}
/* Output i of a run (i < n_outputs: check_in has checked output 0, the
 * optional ones are checked by index before use). */
static inline minfer_tensor_view *vout(const minfer_plugin_compute_args *a, size_t i) {
    return (minfer_tensor_view *)(void *)((char *)a->outputs + i * view_stride(a));
}
/* infer's output i, stepped by the host's stride (plugin.h; an older host
 * without infer args' tensor_view_size has this header's). */
static inline minfer_tensor_view *iout(const minfer_plugin_infer_args *a, size_t i) {
    size_t stride = sizeof(minfer_tensor_view);
    if (MINFER_STRUCT_HAS(a, minfer_plugin_infer_args, tensor_view_size) && a->tensor_view_size)
        stride = a->tensor_view_size;
    return (minfer_tensor_view *)(void *)((char *)a->outputs + i * stride);
}
#define OUTV(a, i) (*_Generic((a), infer_args *: iout, compute_args *: vout)((a), (i)))

/* Input i present (given, not omitted)? */
static inline int has_in(const minfer_node_desc *n, size_t i) {
    return i < n->n_inputs && din(n, i)->present;
}
static inline int has_out(const minfer_node_desc *n, size_t i) {
    return i < n->n_outputs && dout(n, i)->name && dout(n, i)->name[0];
}
/* Output o: dtype, and the shape of input i (copied, rank -1 stays -1). */
void out_like(minfer_tensor_view *o, const minfer_value_desc *in, int32_t dtype);
void out_shape(minfer_tensor_view *o, int32_t dtype, int32_t rank, const int64_t *dims);
/* Requires input i to have dtype (when known); an error naming the input otherwise. */
minfer_status want_type(infer_args *a, size_t i, int32_t dtype);
/* Element count of a view (its rank must be >= 0); 0 on overflow is impossible
 * here since the host allocated it. */
size_t numel(const minfer_tensor_view *v);
/* Checks at compute time that input i is present with dtype and rank in
 * [rmin, rmax], and that output 0 is there to write; an error naming the
 * input otherwise. Every compute calls it first. */
minfer_status check_in(compute_args *a, size_t i, int32_t dtype, int rmin, int rmax);

/* ---- Math ---- */
/* Activations as ONNX Runtime's fused kernels know them (MLAS and the
 * FusedGemm functors). */
enum act_kind {
    ACT_NONE, ACT_RELU, ACT_LEAKYRELU, ACT_TANH, ACT_SIGMOID, ACT_CLIP, ACT_HARDSIGMOID,
    ACT_ELU, ACT_SELU, ACT_SOFTSIGN, ACT_HARDSWISH
};
typedef struct act {
    enum act_kind kind;
    float p0, p1, p2;
} act;
/* Parses activation name (the kit's table, minfer_kit_act_parse) into an
 * act; -1 for a name it does not have or ORT's fused kernels do not. */
int act_parse(const char *name, const float *params, size_t n_params, act *out);
void act_apply(const act *f, float *x, size_t n);

/* C[M,N] (ldc) = alpha * A[M,K] B[K,N] + (accumulate ? C : 0), A and B plain
 * row-major with the given leading dimensions; trans_b: B is given as [N,K]
 * (ldb). Rows split over the run's threads when a compute's args a are
 * given (NULL: serially). */
void sgemm(compute_args *a, size_t M, size_t N, size_t K, float alpha, const float *A,
           size_t lda, int trans_a, const float *B, size_t ldb, int trans_b, float *C, size_t ldc,
           int accumulate);

/* Runs fn over [0, n) on the threads the run gives this node (the host
 * API's run_parallel_for; with an older host, the session's pool;
 * serially without either). */
void par_for(compute_args *a, size_t n, size_t grain, minfer_range_fn fn, void *arg);

/* ---- Ops (infer, compute; optional create / destroy) ---- */
#define OP_DECL(name)                                                                          \
    minfer_status name##_infer(void *op, infer_args *a);                                       \
    minfer_status name##_compute(void *op, void *state, compute_args *a)
#define OP_DECL_STATE(name)                                                                    \
    OP_DECL(name);                                                                             \
    minfer_status name##_create(void *op, create_args *a, void **state);                       \
    void name##_destroy(void *op, void *state)

OP_DECL(gelu);
OP_DECL(fast_gelu);
OP_DECL(bias_gelu);
OP_DECL(quick_gelu);
OP_DECL(bias_add);
OP_DECL_STATE(fused_conv);
OP_DECL_STATE(fused_gemm);
OP_DECL(fused_matmul);
OP_DECL(skip_ln);
OP_DECL(simplified_ln);
OP_DECL(layer_norm);
OP_DECL(skip_simplified_ln);
OP_DECL(embed_ln);
OP_DECL(attention);
OP_DECL(mha);
OP_DECL(rotary);
OP_DECL(reorder_input);
OP_DECL(reorder_output);
OP_DECL_STATE(nchwc_conv);
OP_DECL(nchwc_pool);
OP_DECL(nchwc_global_pool);
OP_DECL(nchwc_upsample);
OP_DECL_STATE(matmul_nbits);
OP_DECL(qlinear_add);
OP_DECL(qlinear_mul);
OP_DECL(qlinear_gap);
OP_DECL(qlinear_sigmoid);
OP_DECL(qlinear_leaky_relu);
OP_DECL(qlinear_concat);
OP_DECL(qlinear_avgpool);
OP_DECL_STATE(qgemm);

/* The NCHWc block size ONNX Runtime's MLAS uses on this CPU (16 with
 * AVX-512F, else 8): models ORT optimized at level 'all' hold weights
 * reordered for it, and say so nowhere in the file. */
int64_t nchwc_block(void);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif




#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* ---- Convolution and pooling geometry (fused.c) ----
 * Spatial output sizes from the attributes (auto_pad, kernel_shape, strides,
 * pads, dilations; ceil_mode for pools), as ONNX's Conv / MaxPool define
 * them. in[i] == -1 (unknown) gives out[i] == -1. */
typedef struct conv_geom {
    int nd;
    int64_t k[3], s[3], d[3], pb[3], pe[3], in[3], out[3];
} conv_geom;
minfer_status conv_geom_make(const minfer_host_api *api, const minfer_node_desc *n, int nd,
                             const int64_t *in_spatial, const int64_t *kernel, int ceil_mode,
                             conv_geom *g, char *err, size_t err_size);
#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
