/*
 * Per-op shape and type inference (see shape_infer.h for the contract).
 *
 * How a node is inferred:
 *  1. Every output is reset to "nothing known" (dtype 0, rank -1).
 *  2. The inputs are validated as far as the view allows (rank within
 *     MINFER_MAX_RANK, no dimension below -1), so no rule ever reads past
 *     a dims array, whatever a hostile model declares.
 *  3. The op's rule (the table below, looked up by op_type in the default
 *     domain; the rules live in infer_<family>.c, see infer_rules.h) fills
 *     the outputs. Rules follow the ONNX operator specs and switch on
 *     node->opset where a signature changed (axes as an attribute or as an
 *     input, Slice attributes before opset 10, ...). Each output's element
 *     type is the one the op's type constraints give it: an input's (T),
 *     another input's (Resize's Y is X's, not roi's or scales'), an
 *     attribute's (Cast 'to', RandomNormal 'dtype'), or a fixed type (Shape:
 *     int64); tests/test_infer_types.c checks them op by op.
 *
 * Unknown information propagates as -1 and never causes an error: a check
 * only fires when both sides of it are known. All dimension arithmetic is
 * overflow-checked, since dims and attribute values come from the model.
 */
#include "shapes/shape_infer.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "shapes/infer_rules.h"

/* Opset assumed when a node carries none (hand-built graphs). */
#define DEFAULT_OPSET 17

static const struct rule {
    const char *op;
    infer_fn fn;
} rules[] = {
    {"Abs", si_unary},
    {"Acos", si_unary},
    {"Acosh", si_unary},
    {"Add", si_binary},
    {"And", si_binary},
    {"ArgMax", si_reduce},
    {"ArgMin", si_reduce},
    {"Asin", si_unary},
    {"Asinh", si_unary},
    {"Atan", si_unary},
    {"Atanh", si_unary},
    {"AveragePool", si_pool},
    {"BatchNormalization", si_batchnorm},
    {"Bernoulli", si_random_like},
    {"BitShift", si_binary},
    {"BitwiseAnd", si_binary},
    {"BitwiseNot", si_unary},
    {"BitwiseOr", si_binary},
    {"BitwiseXor", si_binary},
    {"BlackmanWindow", si_window_fn},
    {"Cast", si_cast},
    {"CastLike", si_cast},
    {"Ceil", si_unary},
    {"Celu", si_unary},
    {"Clip", si_clip},
    {"Compress", si_compress},
    {"Concat", si_concat},
    {"Constant", si_constant},
    {"ConstantOfShape", si_constant_of_shape},
    {"Conv", si_conv},
    {"ConvInteger", si_integer},
    {"ConvTranspose", si_conv},
    {"Cos", si_unary},
    {"Cosh", si_unary},
    {"CumSum", si_same_type_shape},
    {"DFT", si_dft},
    {"DepthToSpace", si_depth_space},
    {"DequantizeLinear", si_dequantize},
    {"Det", si_det},
    {"Div", si_binary},
    {"Dropout", si_dropout},
    {"DynamicQuantizeLinear", si_dynamic_quantize},
    {"Einsum", si_einsum},
    {"Elu", si_unary},
    {"Equal", si_binary},
    {"Erf", si_unary},
    {"Exp", si_unary},
    {"Expand", si_expand},
    {"EyeLike", si_eyelike},
    {"Flatten", si_flatten},
    {"Floor", si_unary},
    {"GRU", si_rnn},
    {"Gather", si_gather},
    {"GatherElements", si_gather},
    {"GatherND", si_gather_nd},
    {"Gelu", si_unary},
    {"Gemm", si_gemm},
    {"GlobalAveragePool", si_global_pool},
    {"GlobalLpPool", si_global_pool},
    {"GlobalMaxPool", si_global_pool},
    {"Greater", si_binary},
    {"GreaterOrEqual", si_binary},
    {"GridSample", si_grid_sample},
    {"GroupNormalization", si_same_type_shape},
    {"HammingWindow", si_window_fn},
    {"HannWindow", si_window_fn},
    {"HardSigmoid", si_unary},
    {"HardSwish", si_unary},
    {"Hardmax", si_softmax},
    {"Identity", si_unary},
    {"InstanceNormalization", si_same_type_shape},
    {"IsInf", si_unary_bool},
    {"IsNaN", si_unary_bool},
    {"LRN", si_same_type_shape},
    {"LSTM", si_rnn},
    {"LayerNormalization", si_layernorm},
    {"LeakyRelu", si_unary},
    {"Less", si_binary},
    {"LessOrEqual", si_binary},
    {"Log", si_unary},
    {"LogSoftmax", si_softmax},
    {"LpNormalization", si_same_type_shape},
    {"LpPool", si_pool},
    {"MatMul", si_matmul},
    {"MatMulInteger", si_integer},
    {"Max", si_variadic},
    {"MaxPool", si_pool},
    {"MaxUnpool", si_maxunpool},
    {"Mean", si_variadic},
    {"MeanVarianceNormalization", si_same_type_shape},
    {"MelWeightMatrix", si_melweight},
    {"Min", si_variadic},
    {"Mish", si_unary},
    {"Mod", si_binary},
    {"Mul", si_binary},
    {"Multinomial", si_multinomial},
    {"Neg", si_unary},
    {"NegativeLogLikelihoodLoss", si_loss},
    {"NonMaxSuppression", si_nms},
    {"NonZero", si_nonzero},
    {"Not", si_not},
    {"OneHot", si_onehot},
    {"Or", si_binary},
    {"PRelu", si_prelu},
    {"Pad", si_pad},
    {"Pow", si_binary},
    {"QLinearConv", si_qlinear},
    {"QLinearMatMul", si_qlinear},
    {"QuantizeLinear", si_quantize},
    {"RNN", si_rnn},
    {"RandomNormal", si_random},
    {"RandomNormalLike", si_random_like},
    {"RandomUniform", si_random},
    {"RandomUniformLike", si_random_like},
    {"Range", si_range},
    {"Reciprocal", si_unary},
    {"ReduceL1", si_reduce},
    {"ReduceL2", si_reduce},
    {"ReduceLogSum", si_reduce},
    {"ReduceLogSumExp", si_reduce},
    {"ReduceMax", si_reduce},
    {"ReduceMean", si_reduce},
    {"ReduceMin", si_reduce},
    {"ReduceProd", si_reduce},
    {"ReduceSum", si_reduce},
    {"ReduceSumSquare", si_reduce},
    {"RegexFullMatch", si_unary_bool},
    {"Relu", si_unary},
    {"Reshape", si_reshape},
    {"Resize", si_resize},
    {"ReverseSequence", si_same_type_shape},
    {"RoiAlign", si_roialign},
    {"Round", si_unary},
    {"STFT", si_dft},
    {"Scatter", si_scatter},
    {"ScatterElements", si_scatter},
    {"ScatterND", si_scatter},
    {"Selu", si_unary},
    {"Shape", si_shape},
    {"Shrink", si_unary},
    {"Sigmoid", si_unary},
    {"Sign", si_unary},
    {"Sin", si_unary},
    {"Sinh", si_unary},
    {"Size", si_size},
    {"Slice", si_slice},
    {"Softmax", si_softmax},
    {"SoftmaxCrossEntropyLoss", si_loss},
    {"Softplus", si_unary},
    {"Softsign", si_unary},
    {"SpaceToDepth", si_depth_space},
    {"Split", si_split},
    {"Sqrt", si_unary},
    {"Squeeze", si_squeeze},
    {"StringConcat", si_binary},
    {"StringNormalizer", si_string_normalizer},
    {"Sub", si_binary},
    {"Sum", si_variadic},
    {"Tan", si_unary},
    {"Tanh", si_unary},
    {"TfIdfVectorizer", si_tfidf},
    {"ThresholdedRelu", si_unary},
    {"Tile", si_tile},
    {"TopK", si_topk},
    {"Transpose", si_transpose},
    {"Trilu", si_same_type_shape},
    {"Unique", si_unique},
    {"Unsqueeze", si_unsqueeze},
    {"Upsample", si_resize},
    {"Where", si_where},
    {"Xor", si_binary},
};

static int cmp_rule(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const struct rule *)elem)->op);
}

static const struct rule *find_rule(const char *domain, const char *op) {
    if (!op || (domain && domain[0] && strcmp(domain, "ai.onnx")))
        return NULL;
    /* rules[] is sorted by strcmp: test_unknown_op_and_known looks up every entry. */
    for (size_t lo = 0, hi = sizeof rules / sizeof rules[0]; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        int k = cmp_rule(op, &rules[mid]);
        if (k == 0)
            return &rules[mid];
        if (k < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

/* ai.onnx.preview.training's optimizers: R, T, then groups of n tensors
 * (Adagrad X, G, H; Momentum X, G, V; Adam X, G, V, H); the outputs are the
 * groups but G, each output typed and shaped as its input. */
static int training_groups(const char *op) {
    return strcmp(op, "Adam") == 0 ? 4
           : strcmp(op, "Adagrad") == 0 || strcmp(op, "Momentum") == 0 ? 3
                                                                       : 0;
}

static minfer_status infer_training(const mf_node *node, const minfer_tensor_view *in,
                                    size_t n_in, minfer_tensor_view *out, size_t n_out, char *err,
                                    size_t err_size) {
    size_t groups = (size_t)training_groups(node->op_type);
    if (!groups)
        return MINFER_OK; /* Gradient is expanded before inference */
    if (n_in < 2 || (n_in - 2) % groups || n_out != (n_in - 2) / groups * (groups - 1)) {
        snprintf(err, err_size, "%zu inputs and %zu outputs do not make groups of %zu tensors",
                 n_in, n_out, groups);
        return MINFER_ERR_MODEL;
    }
    size_t n = (n_in - 2) / groups;
    for (size_t o = 0; o < n_out; o++) {
        size_t group = o / n, k = o % n, src = 2 + (group == 0 ? 0 : group + 1) * n + k;
        if (src < n_in && node->inputs[src] >= 0) {
            out[o] = in[src];
            out[o].data = NULL;
            out[o].nbytes = 0;
            out[o].layout = 0;
        }
    }
    return MINFER_OK;
}

int mf_infer_std_known(const char *domain, const char *op_type) {
    if (domain && strcmp(domain, "ai.onnx.preview.training") == 0)
        return training_groups(op_type) > 0;
    return find_rule(domain, op_type) != NULL;
}

/* c for node's inference: its op, opset, inputs, outputs and message. */
static void ctx_init(ictx *c, const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                     minfer_tensor_view *out, size_t n_out, char *err, size_t err_size) {
    c->node = node;
    c->op = node ? node->op_type : NULL;
    c->opset = node && node->opset > 0 ? node->opset : DEFAULT_OPSET;
    c->in = in;
    c->n_in = in ? n_in : 0;
    c->out = out;
    c->n_out = out ? n_out : 0;
    c->err = err;
    c->err_size = err_size;
}

minfer_status mf_infer_begin(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                             minfer_tensor_view *out, size_t n_out, char *err, size_t err_size) {
    ictx c;
    if (err && err_size)
        err[0] = '\0';
    for (size_t j = 0; out && j < n_out; j++) {
        memset(&out[j], 0, sizeof out[j]);
        out[j].rank = -1;
    }
    ctx_init(&c, node, in, n_in, out, n_out, err, err_size);
    if (!node || !node->op_type)
        return si_fail(&c, MINFER_ERR_INVALID_ARG, "no node");
    for (size_t i = 0; i < c.n_in; i++) {
        const minfer_tensor_view *v = si_input(&c, i);
        if (!v)
            continue;
        if (v->rank < -1 || v->rank > MINFER_MAX_RANK)
            return si_fail(&c, MINFER_ERR_MODEL, "input %zu has rank %d", i, (int)v->rank);
        for (int32_t k = 0; k < v->rank; k++)
            if (v->dims[k] < -1)
                return si_fail(&c, MINFER_ERR_MODEL, "input %zu has dimension %lld", i,
                            (long long)v->dims[k]);
    }
    return MINFER_OK;
}

minfer_status mf_infer_std_or(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                              minfer_tensor_view *out, size_t n_out, char *err, size_t err_size,
                              mf_infer_fallback_fn fallback) {
    ictx c;
    minfer_status st = mf_infer_begin(node, in, n_in, out, n_out, err, err_size);
    if (st != MINFER_OK)
        return st;
    ctx_init(&c, node, in, n_in, out, n_out, err, err_size);
    if (node->domain && strcmp(node->domain, "ai.onnx.preview.training") == 0)
        return infer_training(node, in, c.n_in, out, c.n_out, err, err_size);
    const struct rule *rule = find_rule(node->domain, node->op_type);
    if (!rule)
        return fallback ? fallback(node, in, n_in, out, n_out, err, err_size) : MINFER_OK;
    return rule->fn(&c);
}
