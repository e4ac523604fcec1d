/*
 * Shape inference for the minfer domain's fused ops.
 *
 * A fused op's output is that of the ONNX op it extends, so FusedConv,
 * FusedGemm and FusedMatMul run the ONNX rule (Conv, Gemm opset 13, MatMul)
 * on a copy of the node restricted to that op's inputs; the extra inputs
 * (Z, bias) are then checked against the result where both are known;
 * GatedConv is FusedConv whose fifth input, the gate S, broadcasts onto X.
 * FusedConcat is Concat of its inputs after scale and B.
 * LayerNormalization, RMSNormalization, Gelu, RotaryEmbedding and
 * FusedElementwise keep X's
 * type and shape (Cos and Sin broadcast into X; the kernels check them);
 * Attention is two MatMuls, Q @ KT then scores @ V.
 */
#include <stdio.h>
#include <string.h>

#include "shapes/shape_infer.h"
#include "shapes/shape_infer_minfer.h"

static minfer_status fail(char *err, size_t size, minfer_status st, const char *fmt,
                          const char *a) {
    if (err && size)
        snprintf(err, size, fmt, a);
    return st;
}

static const minfer_tensor_view *input(const mf_node *n, const minfer_tensor_view *in,
                                       size_t n_in, size_t i) {
    return i < n_in && i < n->n_inputs && n->inputs[i] >= 0 ? &in[i] : NULL;
}

/* Runs the ONNX rule of `op` on node's first n inputs. */
static minfer_status as_onnx(const mf_node *node, const char *op, int64_t opset, size_t n,
                             const minfer_tensor_view *in, minfer_tensor_view *out, size_t n_out,
                             char *err, size_t err_size) {
    mf_node tmp = *node;
    tmp.op_type = (char *)op;
    tmp.domain = (char *)"";
    tmp.opset = opset;
    tmp.n_inputs = n < node->n_inputs ? n : node->n_inputs;
    tmp.n_outputs = n_out < 1 ? n_out : 1;
    return mf_infer_std_or(&tmp, in, tmp.n_inputs, out, tmp.n_outputs, err, err_size, NULL);
}

static int same_known(const minfer_tensor_view *a, const minfer_tensor_view *b) {
    if (a->rank < 0 || b->rank < 0)
        return 1;
    if (a->rank != b->rank)
        return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] >= 0 && b->dims[d] >= 0 && a->dims[d] != b->dims[d])
            return 0;
    return 1;
}

minfer_status mf_infer_minfer_node(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                                   minfer_tensor_view *out, size_t n_out, char *err,
                                   size_t err_size) {
    const char *op = node->op_type;
    const minfer_tensor_view *x = input(node, in, n_in, 0);
    minfer_status st;
    if (n_out < 1)
        return MINFER_OK;
    if (strcmp(op, "FusedConv") == 0 || strcmp(op, "GatedConv") == 0) {
        if ((st = as_onnx(node, "Conv", 11, 3, in, out, n_out, err, err_size)) != MINFER_OK)
            return st;
        const minfer_tensor_view *z = input(node, in, n_in, 3);
        if (z && !same_known(z, &out[0]))
            return fail(err, err_size, MINFER_ERR_SHAPE, "%s: Z does not have the output's shape",
                        op);
        if (strcmp(op, "GatedConv") == 0) {
            const minfer_tensor_view *s = input(node, in, n_in, 4);
            if (!s)
                return fail(err, err_size, MINFER_ERR_MODEL, "%s: needs the gate S (input 4)",
                            op);
            int ok = !x || x->rank < 0 || s->rank < 0 || s->rank <= x->rank;
            for (int d = 0; ok && x && x->rank >= 0 && s->rank > 0 && d < s->rank; d++) {
                int64_t sd = s->dims[d], xd = x->dims[x->rank - s->rank + d];
                ok = sd < 0 || sd == 1 || xd < 0 || sd == xd;
            }
            if (!ok)
                return fail(err, err_size, MINFER_ERR_SHAPE,
                            "%s: the gate S does not broadcast onto X", op);
        }
        return MINFER_OK;
    }
    if (strcmp(op, "FusedConcat") == 0) { /* (scale, B, X...): Concat of the Xs */
        if (node->n_inputs < 3 || n_in < 3)
            return fail(err, err_size, MINFER_ERR_MODEL, "%s: needs scale, B and inputs", op);
        mf_node tmp = *node;
        tmp.op_type = (char *)"Concat";
        tmp.domain = (char *)"";
        tmp.opset = 13;
        tmp.inputs = node->inputs + 2;
        tmp.n_inputs = node->n_inputs - 2;
        tmp.n_outputs = 1;
        return mf_infer_std_or(&tmp, in + 2, n_in - 2, out, 1, err, err_size, NULL);
    }
    if (strcmp(op, "FusedGemm") == 0)
        return as_onnx(node, "Gemm", 13, 3, in, out, n_out, err, err_size);
    if (strcmp(op, "FusedMatMul") == 0) {
        if ((st = as_onnx(node, "MatMul", 13, 2, in, out, n_out, err, err_size)) != MINFER_OK)
            return st;
        const minfer_tensor_view *b = input(node, in, n_in, 2);
        if (b && b->rank >= 0 && out[0].rank >= 1 &&
            (b->rank != 1 || (b->dims[0] >= 0 && out[0].dims[out[0].rank - 1] >= 0 &&
                              b->dims[0] != out[0].dims[out[0].rank - 1])))
            return fail(err, err_size, MINFER_ERR_SHAPE,
                        "%s: bias must be 1-D with the output's last dimension", op);
        return MINFER_OK;
    }
    if (strcmp(op, "RotaryEmbedding") == 0) {
        if (!x || !input(node, in, n_in, 1) || !input(node, in, n_in, 2))
            return fail(err, err_size, MINFER_ERR_MODEL, "%s: needs inputs X, Cos and Sin", op);
        if (x->rank == 0 || (x->rank > 0 && x->dims[x->rank - 1] >= 0 &&
                             x->dims[x->rank - 1] % 2 != 0))
            return fail(err, err_size, MINFER_ERR_SHAPE, "%s: X's last dimension must be even",
                        op);
        for (size_t i = 1; i <= 2 && x->rank > 0; i++) {
            const minfer_tensor_view *c = &in[i];
            int ok = c->rank <= x->rank;
            for (int d = 0; ok && c->rank > 0 && d < c->rank; d++) {
                int64_t cd = c->dims[d], xd = x->dims[x->rank - c->rank + d];
                ok = cd < 0 || cd == 1 || xd < 0 || cd == xd;
            }
            if (!ok)
                return fail(err, err_size, MINFER_ERR_SHAPE,
                            "%s: Cos and Sin must broadcast to X without growing it", op);
        }
    }
    if (strcmp(op, "LayerNormalization") == 0 || strcmp(op, "RMSNormalization") == 0 ||
        strcmp(op, "Gelu") == 0 || strcmp(op, "RotaryEmbedding") == 0 ||
        strcmp(op, "FusedElementwise") == 0) {
        if (!x)
            return fail(err, err_size, MINFER_ERR_MODEL, "%s: needs input X", op);
        out[0] = *x;
        out[0].data = NULL;
        out[0].offset = out[0].nbytes = 0;
        out[0].layout = 0;
        return MINFER_OK;
    }
    if (strcmp(op, "Attention") == 0) {
        const minfer_tensor_view *kt = input(node, in, n_in, 1), *v = input(node, in, n_in, 2);
        if (!x || !kt || !v)
            return fail(err, err_size, MINFER_ERR_MODEL, "%s: needs inputs Q, KT and V", op);
        minfer_tensor_view scores, pair[2];
        mf_node tmp = *node;
        int ins[2] = {0, 1};
        tmp.inputs = ins;
        tmp.n_inputs = 2;
        tmp.op_type = (char *)"MatMul";
        tmp.domain = (char *)"";
        tmp.opset = 13;
        tmp.n_outputs = 1;
        pair[0] = *x;
        pair[1] = *kt;
        if ((st = mf_infer_std_or(&tmp, pair, 2, &scores, 1, err, err_size, NULL)) != MINFER_OK)
            return st;
        pair[0] = scores;
        pair[1] = *v;
        return mf_infer_std_or(&tmp, pair, 2, out, 1, err, err_size, NULL);
    }
    return MINFER_OK; /* unknown op: outputs stay unknown, as for any op */
}

int mf_infer_minfer_known(const char *op_type) {
    static const char *const ops[] = {"FusedConv", "FusedConcat", "FusedGemm", "FusedMatMul",
                                      "LayerNormalization", "RMSNormalization", "Gelu",
                                      "Attention", "RotaryEmbedding", "FusedElementwise",
                                      "GatedConv"};
    for (size_t i = 0; op_type && i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op_type, ops[i]) == 0)
            return 1;
    return 0;
}
