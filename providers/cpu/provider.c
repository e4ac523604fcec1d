/*
 * The naive CPU provider: the reference every other provider is tested
 * against.
 *
 * 1. init checks the kernel table (no two entries with the same domain, op
 *    and since_version) and makes a per-session context.
 * 2. supports_operator looks the node up (the entry with the highest
 *    since_version <= the node's opset), checks the main input's element
 *    type against the entry's mask, then runs the kernel's prepare in
 *    check-only mode so that one piece of code decides what is supported.
 * 3. prepare_node runs the same prepare for real (workspace sizes, packed
 *    weights) and keeps its op state.
 * 4. execute_node checks the input views and calls the kernel's compute.
 * A float16/bfloat16 node whose kernel computes in float goes through
 * widen.c at steps 2-4: the float kernel on widened copies, outputs rounded
 * back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define K(op, since, types, name) {"", op, since, types, cpu_prepare_##name, cpu_compute_##name}
/* Kernels of indexing.c share one prepare. */
#define KI(op, since, types, name) {"", op, since, types, cpu_prepare_indexing, cpu_compute_##name}

static const cpu_kernel kernels[] = {
    /* elementwise.c */
    K("Abs", 1, CPU_T_NUM, unary),
    K("Acos", 7, CPU_T_FLOATS, unary),
    K("Acosh", 9, CPU_T_FLOATS, unary),
    K("Asin", 7, CPU_T_FLOATS, unary),
    K("Asinh", 9, CPU_T_FLOATS, unary),
    K("Atan", 7, CPU_T_FLOATS, unary),
    K("Atanh", 9, CPU_T_FLOATS, unary),
    K("Ceil", 1, CPU_T_FLOATS, unary),
    K("Cos", 7, CPU_T_FLOATS, unary),
    K("Cosh", 9, CPU_T_FLOATS, unary),
    K("Elu", 1, CPU_T_FLOATS, unary),
    K("Erf", 9, CPU_T_FLOATS, unary),
    K("Exp", 1, CPU_T_FLOATS, unary),
    K("Floor", 1, CPU_T_FLOATS, unary),
    K("HardSigmoid", 1, CPU_T_FLOATS, unary),
    K("HardSwish", 14, CPU_T_FLOATS, unary),
    K("LeakyRelu", 1, CPU_T_FLOATS, unary),
    K("Log", 1, CPU_T_FLOATS, unary),
    K("Neg", 1, CPU_T_FLOATS | CPU_T_SINTS, unary),
    K("Reciprocal", 1, CPU_T_FLOATS, unary),
    K("Relu", 1, CPU_T_FLOATS | CPU_T_SINTS, unary),
    K("Round", 11, CPU_T_FLOATS, unary),
    K("Selu", 1, CPU_T_FLOATS, unary),
    K("Sigmoid", 1, CPU_T_FLOATS, unary),
    K("Sign", 9, CPU_T_NUM, unary),
    K("Sin", 7, CPU_T_FLOATS, unary),
    K("Sinh", 9, CPU_T_FLOATS, unary),
    K("Softplus", 1, CPU_T_FLOATS, unary),
    K("Softsign", 1, CPU_T_FLOATS, unary),
    K("Sqrt", 1, CPU_T_FLOATS, unary),
    K("Tan", 7, CPU_T_FLOATS, unary),
    K("Tanh", 1, CPU_T_FLOATS, unary),
    K("ThresholdedRelu", 10, CPU_T_FLOATS, unary),
    K("Clip", 1, CPU_T_FLOATS, clip),
    K("Clip", 11, CPU_T_NUM, clip),
    K("Not", 1, CPU_T_BOOL, not),
    K("Add", 1, CPU_T_NUM, binary),
    K("Add", 7, CPU_T_NUM, binary),
    K("Sub", 1, CPU_T_NUM, binary),
    K("Sub", 7, CPU_T_NUM, binary),
    K("Mul", 1, CPU_T_NUM, binary),
    K("Mul", 7, CPU_T_NUM, binary),
    K("Div", 1, CPU_T_NUM, binary),
    K("Div", 7, CPU_T_NUM, binary),
    K("Pow", 1, CPU_T_FLOATS, binary),
    K("Pow", 7, CPU_T_FLOATS, binary),
    K("Pow", 12, CPU_T_FLOATS | CPU_T(MINFER_DTYPE_INT32) | CPU_T(MINFER_DTYPE_INT64), binary),
    K("PRelu", 1, CPU_T_FLOATS, binary),
    K("PRelu", 7, CPU_T_FLOATS | CPU_T_INTS, binary),
    K("Equal", 1, CPU_T_NUM | CPU_T_BOOL, binary),
    K("Equal", 7, CPU_T_NUM | CPU_T_BOOL, binary),
    K("Less", 1, CPU_T_NUM, binary),
    K("Less", 7, CPU_T_NUM, binary),
    K("Greater", 1, CPU_T_NUM, binary),
    K("Greater", 7, CPU_T_NUM, binary),
    K("LessOrEqual", 12, CPU_T_NUM, binary),
    K("GreaterOrEqual", 12, CPU_T_NUM, binary),
    K("And", 1, CPU_T_BOOL, binary),
    K("And", 7, CPU_T_BOOL, binary),
    K("Or", 1, CPU_T_BOOL, binary),
    K("Or", 7, CPU_T_BOOL, binary),
    K("Xor", 1, CPU_T_BOOL, binary),
    K("Xor", 7, CPU_T_BOOL, binary),
    K("Max", 1, CPU_T_NUM | CPU_T_HALF, variadic),
    K("Min", 1, CPU_T_NUM | CPU_T_HALF, variadic),
    K("Sum", 1, CPU_T_NUM | CPU_T_HALF, variadic),
    K("Mean", 1, CPU_T_FLOATS | CPU_T_HALF, variadic),
    K("Where", 9, CPU_T_BOOL, where),
    K("IsNaN", 9, CPU_T_FLOATS | CPU_T_HALF, unary_generic),
    K("IsInf", 10, CPU_T_FLOATS | CPU_T_HALF, unary_generic),
    K("Shrink", 9, CPU_T_NUM | CPU_T_HALF, unary_generic),
    K("Celu", 12, CPU_T_FLOATS | CPU_T_HALF, unary_generic),
    K("Mish", 18, CPU_T_FLOATS | CPU_T_HALF, unary_generic),
    K("Mod", 10, CPU_T_NUM | CPU_T_HALF, intbin),
    K("BitShift", 11, CPU_T_UINTS, intbin),
    /* conv.c */
    K("Conv", 1, CPU_T_FLOATS, conv),
    K("ConvTranspose", 1, CPU_T_FLOATS | CPU_T_HALF, convtranspose),
    K("ConvInteger", 10, CPU_T(MINFER_DTYPE_INT8) | CPU_T(MINFER_DTYPE_UINT8), qconv),
    K("QLinearConv", 10, CPU_T(MINFER_DTYPE_INT8) | CPU_T(MINFER_DTYPE_UINT8), qconv),
    /* quant.c */
    {"", "QuantizeLinear", 10, CPU_T_FLOATS | CPU_T_HALF | CPU_T(MINFER_DTYPE_INT32),
     cpu_prepare_quant, cpu_compute_quantize},
    {"", "QuantizeLinear", 13, CPU_T_FLOATS | CPU_T_HALF | CPU_T(MINFER_DTYPE_INT32),
     cpu_prepare_quant, cpu_compute_quantize},
    {"", "DequantizeLinear", 10, CPU_T(MINFER_DTYPE_INT8) | CPU_T(MINFER_DTYPE_UINT8) |
     CPU_T(MINFER_DTYPE_INT32), cpu_prepare_quant, cpu_compute_quantize},
    {"", "DequantizeLinear", 13, CPU_T(MINFER_DTYPE_INT8) | CPU_T(MINFER_DTYPE_UINT8) |
     CPU_T(MINFER_DTYPE_INT32), cpu_prepare_quant, cpu_compute_quantize},
    {"", "DynamicQuantizeLinear", 11, CPU_T_FLOATS | CPU_T_HALF, cpu_prepare_quant,
     cpu_compute_dynamic_quantize},
    K("MatMulInteger", 10, CPU_T(MINFER_DTYPE_INT8) | CPU_T(MINFER_DTYPE_UINT8), qmatmul),
    K("QLinearMatMul", 10, CPU_T(MINFER_DTYPE_INT8) | CPU_T(MINFER_DTYPE_UINT8), qmatmul),
    /* pool.c */
    K("AveragePool", 1, CPU_T_FLOATS, pool),
    K("MaxPool", 1, CPU_T_FLOATS | CPU_T(MINFER_DTYPE_INT8) | CPU_T(MINFER_DTYPE_UINT8), pool),
    K("GlobalAveragePool", 1, CPU_T_FLOATS, global_pool),
    K("MaxUnpool", 9, CPU_T_ALL, maxunpool),
    K("MaxUnpool", 11, CPU_T_ALL, maxunpool),
    K("GlobalMaxPool", 1, CPU_T_FLOATS, global_pool),
    /* gemm.c */
    K("Gemm", 1, CPU_T_FLOATS, gemm),
    K("Gemm", 7, CPU_T_FLOATS, gemm),
    K("Gemm", 9, CPU_T_FLOATS | CPU_T_IDX | CPU_T(MINFER_DTYPE_UINT32) |
                     CPU_T(MINFER_DTYPE_UINT64), gemm),
    K("Gemm", 11, CPU_T_FLOATS | CPU_T_IDX | CPU_T(MINFER_DTYPE_UINT32) |
                      CPU_T(MINFER_DTYPE_UINT64), gemm),
    K("MatMul", 1, CPU_T_FLOATS | CPU_T_IDX | CPU_T(MINFER_DTYPE_UINT32) |
                       CPU_T(MINFER_DTYPE_UINT64), matmul),
    /* reduce.c */
    K("ArgMax", 1, CPU_T_NUM, argminmax),
    K("ArgMin", 1, CPU_T_NUM, argminmax),
    K("ReduceL1", 1, CPU_T_NUM, reduce),
    K("ReduceL1", 18, CPU_T_NUM, reduce),
    K("ReduceL2", 1, CPU_T_NUM, reduce),
    K("ReduceL2", 18, CPU_T_NUM, reduce),
    K("ReduceLogSum", 1, CPU_T_NUM, reduce),
    K("ReduceLogSum", 18, CPU_T_NUM, reduce),
    K("ReduceLogSumExp", 1, CPU_T_NUM, reduce),
    K("ReduceLogSumExp", 18, CPU_T_NUM, reduce),
    K("ReduceMax", 1, CPU_T_NUM, reduce),
    K("ReduceMax", 18, CPU_T_NUM, reduce),
    K("ReduceMean", 1, CPU_T_NUM, reduce),
    K("ReduceMean", 18, CPU_T_NUM, reduce),
    K("ReduceMin", 1, CPU_T_NUM, reduce),
    K("ReduceMin", 18, CPU_T_NUM, reduce),
    K("ReduceProd", 1, CPU_T_NUM, reduce),
    K("ReduceProd", 18, CPU_T_NUM, reduce),
    K("ReduceSum", 1, CPU_T_NUM, reduce),
    K("ReduceSum", 13, CPU_T_NUM, reduce),
    K("ReduceSumSquare", 1, CPU_T_NUM, reduce),
    K("ReduceSumSquare", 18, CPU_T_NUM, reduce),
    /* norm.c */
    K("Softmax", 1, CPU_T_FLOATS, softmax),
    K("Softmax", 13, CPU_T_FLOATS, softmax),
    K("LogSoftmax", 1, CPU_T_FLOATS, softmax),
    K("LogSoftmax", 13, CPU_T_FLOATS, softmax),
    K("BatchNormalization", 1, CPU_T_FLOATS, batchnorm),
    K("BatchNormalization", 9, CPU_T_FLOATS, batchnorm),
    K("BatchNormalization", 14, CPU_T_FLOATS, batchnorm),
    K("LayerNormalization", 17, CPU_T_FLOATS, layernorm),
    {"", "Hardmax", 1, CPU_T_FLOATS | CPU_T_HALF, cpu_prepare_softmax, cpu_compute_hardmax},
    {"", "Hardmax", 13, CPU_T_FLOATS | CPU_T_HALF, cpu_prepare_softmax, cpu_compute_hardmax},
    {"", "InstanceNormalization", 1, CPU_T_FLOATS | CPU_T_HALF, cpu_prepare_norm2,
     cpu_compute_instancenorm},
    {"", "MeanVarianceNormalization", 9, CPU_T_FLOATS | CPU_T_HALF, cpu_prepare_norm2,
     cpu_compute_mvn},
    {"", "LRN", 1, CPU_T_FLOATS | CPU_T_HALF, cpu_prepare_norm2, cpu_compute_lrn},
    /* shape_ops.c */
    K("Identity", 1, CPU_T_ALL, identity),
    K("Dropout", 1, CPU_T_ALL, dropout),
    K("Dropout", 7, CPU_T_ALL, dropout),
    K("Dropout", 12, CPU_T_ALL, dropout),
    K("Reshape", 1, CPU_T_ALL, reshape),
    K("Reshape", 5, CPU_T_ALL, reshape),
    K("Reshape", 14, CPU_T_ALL, reshape),
    K("Flatten", 1, CPU_T_ALL, flatten),
    K("Squeeze", 1, CPU_T_ALL, squeeze),
    K("Squeeze", 13, CPU_T_ALL, squeeze),
    K("Unsqueeze", 1, CPU_T_ALL, unsqueeze),
    K("Unsqueeze", 13, CPU_T_ALL, unsqueeze),
    K("Transpose", 1, CPU_T_ALL, transpose),
    K("Concat", 1, CPU_T_ALL, concat),
    K("Concat", 4, CPU_T_ALL, concat),
    K("Slice", 1, CPU_T_ALL, slice),
    K("Slice", 10, CPU_T_ALL, slice),
    K("Gather", 1, CPU_T_ALL, gather),
    K("Split", 1, CPU_T_ALL, split),
    K("Split", 13, CPU_T_ALL, split),
    K("Split", 18, CPU_T_ALL, split),
    K("Shape", 1, CPU_T_ALL, shape),
    K("Shape", 15, CPU_T_ALL, shape),
    K("Size", 1, CPU_T_ALL, size),
    K("Cast", 1, CPU_T_ALL | CPU_T_STR, cast),
    K("Cast", 6, CPU_T_ALL | CPU_T_STR, cast),
    K("CastLike", 15, CPU_T_ALL | CPU_T_STR, cast),
    K("Constant", 1, CPU_T_ALL, constant),
    K("ConstantOfShape", 9, CPU_T(MINFER_DTYPE_INT64), constant_of_shape),
    K("Expand", 8, CPU_T_ALL, expand),
    K("Range", 11, CPU_T_FLOATS | CPU_T(MINFER_DTYPE_INT16) | CPU_T_IDX, range),
    K("Tile", 6, CPU_T_ALL, tile),
    K("Pad", 1, CPU_T_ALL, pad),
    K("Pad", 2, CPU_T_ALL, pad),
    K("Pad", 11, CPU_T_ALL, pad),
    K("Pad", 18, CPU_T_ALL, pad),
    /* resize.c */
    K("Upsample", 7, CPU_T_NUM | CPU_T_HALF, resize),
    K("Upsample", 9, CPU_T_NUM | CPU_T_HALF, resize),
    K("Resize", 10, CPU_T_NUM | CPU_T_HALF, resize),
    K("Resize", 11, CPU_T_NUM | CPU_T_HALF, resize),
    K("Resize", 13, CPU_T_NUM | CPU_T_HALF, resize),
    K("GridSample", 16, CPU_T_FLOATS | CPU_T_HALF, gridsample),
    /* rnn.c */
    K("RNN", 7, CPU_T_FLOATS | CPU_T_HALF, rnn),
    K("RNN", 14, CPU_T_FLOATS | CPU_T_HALF, rnn),
    K("GRU", 7, CPU_T_FLOATS | CPU_T_HALF, rnn),
    K("GRU", 14, CPU_T_FLOATS | CPU_T_HALF, rnn),
    K("LSTM", 7, CPU_T_FLOATS | CPU_T_HALF, rnn),
    K("LSTM", 14, CPU_T_FLOATS | CPU_T_HALF, rnn),
    /* einsum.c */
    K("Einsum", 12, CPU_T_NUM | CPU_T_HALF, einsum),
    /* detection.c */
    K("NonMaxSuppression", 10, CPU_T_FLOATS | CPU_T_HALF, nms),
    K("NonMaxSuppression", 11, CPU_T_FLOATS | CPU_T_HALF, nms),
    K("RoiAlign", 10, CPU_T_FLOATS | CPU_T_HALF, roialign),
    K("RoiAlign", 16, CPU_T_FLOATS | CPU_T_HALF, roialign),
    K("Det", 11, CPU_T_FLOATS | CPU_T_HALF, det),
    /* signal.c: the windows' main input is the int size */
    {"", "HannWindow", 17, CPU_T_IDX, cpu_prepare_signal, cpu_compute_window},
    {"", "HammingWindow", 17, CPU_T_IDX, cpu_prepare_signal, cpu_compute_window},
    {"", "BlackmanWindow", 17, CPU_T_IDX, cpu_prepare_signal, cpu_compute_window},
    {"", "DFT", 17, CPU_T_FLOATS | CPU_T_HALF, cpu_prepare_signal, cpu_compute_dft},
    {"", "STFT", 17, CPU_T_FLOATS | CPU_T_HALF, cpu_prepare_signal, cpu_compute_stft},
    /* MelWeightMatrix's main input is num_mel_bins */
    {"", "MelWeightMatrix", 17, CPU_T_IDX, cpu_prepare_signal, cpu_compute_melweight},
    /* text.c */
    K("StringNormalizer", 10, CPU_T_STR, string_normalizer),
    K("TfIdfVectorizer", 9, CPU_T_IDX | CPU_T_STR, tfidf),
    /* random.c: RandomUniform/Normal have no input, their output type is checked */
    K("RandomUniform", 1, CPU_T_FLOATS | CPU_T_HALF, random),
    K("RandomNormal", 1, CPU_T_FLOATS | CPU_T_HALF, random),
    K("RandomUniformLike", 1, CPU_T_ALL, random),
    K("RandomNormalLike", 1, CPU_T_ALL, random),
    K("Multinomial", 7, CPU_T_FLOATS | CPU_T_HALF, random),
    K("Bernoulli", 15, CPU_T_FLOATS | CPU_T_HALF, random),
    /* loss.c */
    K("NegativeLogLikelihoodLoss", 12, CPU_T_FLOATS | CPU_T_HALF, loss),
    K("SoftmaxCrossEntropyLoss", 12, CPU_T_FLOATS | CPU_T_HALF, loss),
    /* training.c: the optimizers; the main input is the learning rate R */
    {"ai.onnx.preview.training", "Adagrad", 1, CPU_T_FLOATS, cpu_prepare_optimizer,
     cpu_compute_optimizer},
    {"ai.onnx.preview.training", "Adam", 1, CPU_T_FLOATS, cpu_prepare_optimizer,
     cpu_compute_optimizer},
    {"ai.onnx.preview.training", "Momentum", 1, CPU_T_FLOATS, cpu_prepare_optimizer,
     cpu_compute_optimizer},
    /* indexing.c */
    KI("GatherElements", 11, CPU_T_ALL, gather_elements),
    KI("Scatter", 9, CPU_T_ALL, scatter_elements),
    KI("ScatterElements", 11, CPU_T_ALL, scatter_elements),
    KI("ScatterElements", 16, CPU_T_ALL, scatter_elements),
    KI("ScatterElements", 18, CPU_T_ALL, scatter_elements),
    KI("GatherND", 11, CPU_T_ALL, gather_nd),
    KI("GatherND", 12, CPU_T_ALL, gather_nd),
    KI("ScatterND", 11, CPU_T_ALL, scatter_nd),
    KI("ScatterND", 16, CPU_T_ALL, scatter_nd),
    KI("ScatterND", 18, CPU_T_ALL, scatter_nd),
    KI("OneHot", 9, CPU_T_NUM, onehot),
    KI("Compress", 9, CPU_T_ALL, compress),
    KI("NonZero", 9, CPU_T_ALL, nonzero),
    KI("TopK", 1, CPU_T_NUM | CPU_T_HALF, topk),
    KI("TopK", 10, CPU_T_NUM | CPU_T_HALF, topk),
    KI("TopK", 11, CPU_T_NUM | CPU_T_HALF, topk),
    KI("Unique", 11, CPU_T_NUM | CPU_T_HALF | CPU_T_BOOL, unique),
    KI("CumSum", 11, CPU_T_NUM, cumsum),
    KI("Trilu", 14, CPU_T_ALL, trilu),
    KI("EyeLike", 9, CPU_T_ALL, eyelike),
    KI("ReverseSequence", 10, CPU_T_ALL, reverse_sequence),
    KI("DepthToSpace", 1, CPU_T_ALL, depth_space),
    KI("DepthToSpace", 11, CPU_T_ALL, depth_space),
    KI("SpaceToDepth", 1, CPU_T_ALL, depth_space),
    /* fused.c: the optimizer's fused ops, domain "minfer" (docs/fused-ops.md) */
    {"minfer", "FusedConv", 1, CPU_T(MINFER_DTYPE_FLOAT), cpu_prepare_fused_conv,
     cpu_compute_fused_conv},
    {"minfer", "FusedGemm", 1, CPU_T(MINFER_DTYPE_FLOAT), cpu_prepare_fused_gemm,
     cpu_compute_fused_gemm},
    {"minfer", "FusedMatMul", 1, CPU_T(MINFER_DTYPE_FLOAT), cpu_prepare_fused_matmul,
     cpu_compute_fused_matmul},
    {"minfer", "LayerNormalization", 1, CPU_T_FLOATS, cpu_prepare_layernorm,
     cpu_compute_layernorm},
    {"minfer", "RMSNormalization", 1, CPU_T_FLOATS, cpu_prepare_rmsnorm, cpu_compute_rmsnorm},
    {"minfer", "Gelu", 1, CPU_T(MINFER_DTYPE_FLOAT), cpu_prepare_gelu, cpu_compute_gelu},
    {"minfer", "Attention", 1, CPU_T(MINFER_DTYPE_FLOAT), cpu_prepare_attention,
     cpu_compute_attention},
    {"minfer", "RotaryEmbedding", 1, CPU_T(MINFER_DTYPE_FLOAT), cpu_prepare_rotary,
     cpu_compute_rotary},
};

#undef K
#undef KI

#define N_KERNELS (sizeof kernels / sizeof kernels[0])

const cpu_kernel *cpu_kernel_table(size_t *count) {
    *count = N_KERNELS;
    return kernels;
}

/* A node's state: its kernel entry and what the entry's prepare made, or
 * the widened form of a float16/bfloat16 node (widen.c). */
typedef struct cpu_node {
    const cpu_kernel *k;
    void *op_state;
    cpu_widen *widen;
} cpu_node;

static minfer_status cpu_init(const minfer_host_api *api, void *host, const char *options,
                              void **out) {
    *out = NULL;
    if (!api || !api->set_error)
        return MINFER_ERR_INVALID_ARG;
    long dup = MINFER_KIT_TABLE_DUPLICATE(cpu_kernel, kernels, N_KERNELS);
    if (dup >= 0) {
        api->set_error(host, "cpu: kernel table lists %s version %lld twice",
                       kernels[dup].op_type, (long long)kernels[dup].since_version);
        return MINFER_ERR_PROVIDER;
    }
    if (options && options[0]) {
        api->set_error(host, "cpu: unknown provider options '%s' (the cpu provider takes none)",
                       options);
        return MINFER_ERR_INVALID_ARG;
    }
    cpu_ctx *ctx = cpu_host_malloc(api, host, sizeof *ctx);
    if (!ctx) {
        api->set_error(host, "cpu: out of memory");
        return MINFER_ERR_NOMEM;
    }
    memset(ctx, 0, sizeof *ctx);
    ctx->api = api;
    ctx->host = host;
    *out = ctx;
    return MINFER_OK;
}

static void cpu_shutdown(void *ctx) {
    free(ctx);
}

/* Finds the kernel and checks what the table can tell; the reason in why.
 * *widen is set when the node's float16/bfloat16 runs through the float
 * kernel. */
static const cpu_kernel *find_kernel(const minfer_node_desc *node, int *widen, char *why,
                                     size_t why_size) {
    *widen = 0;
    const cpu_kernel *k =
        MINFER_KIT_FIND_KERNEL(cpu_kernel, kernels, N_KERNELS, node, "CPU kernel", why, why_size);
    if (!k)
        return NULL;
    int32_t dtype = 0;
    if (node->n_inputs > 0 && node->inputs[0].present)
        dtype = node->inputs[0].dtype;
    else if (node->n_outputs > 0)
        dtype = node->outputs[0].dtype;
    if (dtype != 0 && cpu_widen_wanted(k, dtype)) {
        *widen = 1;
        return k;
    }
    if (dtype != 0 && (dtype < 0 || dtype >= 32 || !(k->types & CPU_T(dtype)))) {
        snprintf(why, why_size, "%s: element type %s not supported", node->op_type,
                 minfer_elem_name(dtype));
        return NULL;
    }
    return k;
}

static int cpu_supports(void *ctx, const minfer_node_desc *node, char *why, size_t why_size) {
    char buf[256];
    why = minfer_kit_why(why, &why_size, buf, sizeof buf);
    int widen;
    const cpu_kernel *k = find_kernel(node, &widen, why, why_size);
    if (!k)
        return 0;
    if (widen) {
        cpu_widen *w = NULL;
        minfer_status st = cpu_widen_prepare(ctx, k, node, NULL, &w, why, why_size);
        return st == MINFER_OK || st == MINFER_ERR_NOMEM;
    }
    if (!k->prepare)
        return 1;
    cpu_prep p = {ctx, node, NULL, k->since_version, why, why_size, NULL, {0}};
    minfer_status st = k->prepare(&p);
    cpu_state_free(&p);
    /* Out of memory says nothing about the node: take it, and let
     * prepare_node report the lack of memory instead of a decline. */
    return st == MINFER_OK || st == MINFER_ERR_NOMEM;
}

static minfer_status cpu_prepare_node(void *vctx, const minfer_node_desc *node,
                                      minfer_node_prep *prep, void **node_state) {
    cpu_ctx *ctx = vctx;
    char why[256] = "";
    int widen;
    minfer_status st = MINFER_ERR_UNSUPPORTED;
    *node_state = NULL;
    const cpu_kernel *k = find_kernel(node, &widen, why, sizeof why);
    cpu_node *n = k ? cpu_calloc(ctx, 1, sizeof *n) : NULL;
    if (k && !n) {
        ctx->api->set_error(ctx->host, "cpu: out of memory");
        return MINFER_ERR_NOMEM;
    }
    if (!n)
        goto fail;
    n->k = k;
    if (widen) {
        st = cpu_widen_prepare(ctx, k, node, prep, &n->widen, why, sizeof why);
    } else if (k->prepare) {
        cpu_prep p = {ctx, node, prep, k->since_version, why, sizeof why, NULL, {0}};
        st = k->prepare(&p);
        n->op_state = p.state; /* on the heap: prep is given */
    } else {
        st = MINFER_OK;
    }
    if (st != MINFER_OK)
        goto fail;
    *node_state = n;
    return MINFER_OK;
fail:
    if (n) {
        free(n->op_state);
        cpu_widen_free(n->widen);
        free(n);
    }
    ctx->api->set_error(ctx->host, "cpu: node '%s': %s", node->name, why);
    return st;
}

static void cpu_release_node(void *ctx, void *node_state) {
    (void)ctx;
    cpu_node *n = node_state;
    if (!n)
        return;
    free(n->op_state);
    cpu_widen_free(n->widen);
    free(n);
}

static minfer_status cpu_execute_node(void *vctx, void *node_state,
                                      const minfer_exec_args *args) {
    /* The kernels split their work through this run's calls (cpu_parallel). */
    cpu_ctx run_ctx = *(const cpu_ctx *)vctx;
    run_ctx.run = args->run;
    cpu_ctx *ctx = &run_ctx;
    const cpu_node *n = node_state;
    cpu_exec e = {ctx, n ? n->op_state : NULL, args, NULL};
    if (!n)
        return cpu_fail(&e, MINFER_ERR_RUNTIME, "node was not prepared");
    for (size_t i = 0; i < args->n_inputs; i++) {
        const minfer_tensor_view *v = minfer_kit_view_input(args, i);
        if (v->rank < 0)
            continue;
        if (v->rank > CPU_MAX_RANK)
            return cpu_fail(&e, MINFER_ERR_LIMIT, "input %zu has rank %d", i, (int)v->rank);
        if (v->kind != MINFER_VALUE_TENSOR || v->layout != 0)
            return cpu_fail(&e, MINFER_ERR_UNSUPPORTED,
                            "input %zu is not a plain tensor in host memory", i);
        int64_t numel = minfer_kit_numel(v->rank, v->dims);
        if (numel < 0)
            return cpu_fail(&e, MINFER_ERR_SHAPE, "input %zu has a negative dimension", i);
        size_t need = (size_t)numel * minfer_elem_size(v->dtype);
        if (need > v->nbytes || (need && !v->data))
            return cpu_fail(&e, MINFER_ERR_RUNTIME, "input %zu holds %zu bytes, %zu needed", i,
                            v->nbytes, need);
    }
    if (n->widen)
        return cpu_widen_execute(ctx, n->widen, args);
    return n->k->compute(&e);
}

static const minfer_provider cpu_provider = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "cpu",
    .version = "0.1.0",
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .supports_operator = cpu_supports,
    .prepare_node = cpu_prepare_node,
    .release_node = cpu_release_node,
    .execute_node = cpu_execute_node,
};

MINFER_PROVIDER_DEFINE(cpu_provider)
