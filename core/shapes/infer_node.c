/*
 * The entry of per-op inference (shape_infer.h): a node of the `minfer`
 * domain goes to its fused-op rule (shape_infer_minfer.c), every other to
 * the ONNX rules (shape_infer.c). The fused-op rules run the ONNX rule of
 * the op they extend through shape_infer.c directly, so calls go one way:
 * infer_node.c -> shape_infer_minfer.c -> shape_infer.c.
 */
#include <string.h>

#include "shapes/shape_infer.h"
#include "shapes/shape_infer_minfer.h"

static int is_minfer(const char *domain) { return domain && strcmp(domain, "minfer") == 0; }

int mf_infer_known(const char *domain, const char *op_type) {
    if (is_minfer(domain)) /* the optimizer's fused ops */
        return mf_infer_minfer_known(op_type);
    return mf_infer_std_known(domain, op_type);
}

minfer_status mf_infer_node(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                            minfer_tensor_view *out, size_t n_out, char *err, size_t err_size) {
    return mf_infer_node_or(node, in, n_in, out, n_out, err, err_size, NULL);
}

minfer_status mf_infer_node_or(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                               minfer_tensor_view *out, size_t n_out, char *err, size_t err_size,
                               mf_infer_fallback_fn fallback) {
    if (node && node->op_type && is_minfer(node->domain)) {
        minfer_status st = mf_infer_begin(node, in, n_in, out, n_out, err, err_size);
        return st != MINFER_OK ? st : mf_infer_minfer_node(node, in, n_in, out, n_out, err,
                                                           err_size);
    }
    return mf_infer_std_or(node, in, n_in, out, n_out, err, err_size, fallback);
}
