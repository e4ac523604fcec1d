/*
 * The inside of per-op inference (shape_infer.h has the contract): the
 * context every rule gets, the helpers the rules share, and one rule
 * function per op or op family. Included only by the files of core/shapes/.
 *
 * The rules live in one file per op family, mirroring the CPU provider's
 * files (providers/cpu/): infer_elementwise.c, infer_conv.c, infer_pool.c,
 * infer_norm.c, infer_gemm.c, infer_reduce.c, infer_shape_ops.c,
 * infer_indexing.c, infer_resize.c, infer_rnn.c, infer_detection.c,
 * infer_quant.c, infer_random.c, infer_signal.c, infer_text.c,
 * infer_einsum.c, infer_loss.c; the helpers are in infer_common.c and the
 * table from op name to rule in shape_infer.c.
 *
 * Names shared between these files carry the prefix si_ (they are not
 * exported from libminfer: the library hides everything but MINFER_API).
 *
 * How a rule reports: MINFER_OK with the outputs set through si_set_out, or
 * an error status with a message through si_fail. Unknown information is -1
 * (a dim) or rank -1 and never an error: a check only fires when both sides
 * of it are known. All dimension arithmetic is overflow-checked, since dims
 * and attribute values come from the model.
 */
#ifndef MINFER_CORE_SHAPES_INFER_RULES_H
#define MINFER_CORE_SHAPES_INFER_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "util/internal.h"

/* Most entries read from an integer list (attribute or input contents). */
#define LIST_CAP 256
/* Room for a shape printed by si_shape_str. */
#define SHAPE_BUF 160

typedef struct ictx {
    const mf_node *node;
    const char *op;
    int64_t opset;
    const minfer_tensor_view *in;
    size_t n_in;
    minfer_tensor_view *out;
    size_t n_out;
    char *err;
    size_t err_size;
} ictx;

typedef minfer_status (*infer_fn)(ictx *c);

/* ---- Errors and shapes (infer_common.c) ---------------------------------- */

/* Writes the message into c->err and returns st. */
minfer_status si_fail(ictx *c, minfer_status st, const char *fmt, ...) MF_PRINTF(3, 4);
/* "[1,3,?,?]"; "[?...]" for an unknown rank. */
const char *si_shape_str(const int64_t *d, int32_t r, char *buf, size_t size);
/* Checked int64 arithmetic: 1 and the result, or 0 when it does not fit.
 * si_mul_nn takes two non-negative operands. */
int si_add_i64(int64_t a, int64_t b, int64_t *r);
int si_sub_i64(int64_t a, int64_t b, int64_t *r);
int si_mul_nn(int64_t a, int64_t b, int64_t *r);
/* The error for an overflowing dimension computation. */
minfer_status si_overflow(ictx *c);
/* Element count of a shape: -1 when a dim or the rank is unknown. */
minfer_status si_numel_of(ictx *c, const int64_t *d, int32_t r, int64_t *out);
/* The ONNX name of an element type ("float", "int64", ...). */
const char *si_dtype_name(int32_t dt);
/* Bytes of one element; 0 for string and unknown types. */
size_t si_dtype_bytes(int32_t dt);

/* ---- Inputs and outputs (infer_common.c) --------------------------------- */

/* The i-th input, or NULL when it is absent (past n_in, or omitted). */
const minfer_tensor_view *si_input(const ictx *c, size_t i);
/* The i-th input in *v; an error when it is absent. */
minfer_status si_require(ictx *c, size_t i, const minfer_tensor_view **v);
/* Output j gets dtype, rank and dims (dims NULL: all unknown). */
minfer_status si_set_out(ictx *c, size_t j, int32_t dtype, int32_t rank, const int64_t *dims);
/* Output j has the type and shape of view v. */
minfer_status si_same_as(ictx *c, size_t j, const minfer_tensor_view *v);
/* Output 0 takes input 0's shape and the type given (0: input 0's). */
minfer_status si_shape_of_x(ictx *c, int32_t dtype);
/* Inputs a and b must have one element type (when both are known). */
minfer_status si_same_type(ictx *c, const minfer_tensor_view *a, const char *an,
                           const minfer_tensor_view *b, const char *bn);
/* a's type when known, else b's (either may be NULL). */
int32_t si_first_dtype(const minfer_tensor_view *a, const minfer_tensor_view *b);
/* Entries of a 1-D (or scalar) input, from its shape; -1 if not known. */
int64_t si_static_len(const minfer_tensor_view *v);
/* The scalar contents of input i as a double (floating types) or an int64;
 * *known is 0 when the contents are not there. */
minfer_status si_read_scalar(ictx *c, size_t i, int *is_float, double *f, int64_t *n,
                             int *known);

/* An element-type attribute (Cast's 'to', EyeLike's 'dtype', ...): dflt
 * when absent; an error unless it names a type minfer holds. */
minfer_status si_dtype_attr(ictx *c, const char *name, int32_t dflt, int32_t *out);
/* Runs rule fn as op over inputs idx[0..n) of c's node (the shape of a
 * QLinearConv is a Conv's over X and W), then gives output 0 the type
 * dtype: the inputs' types are hidden from fn, whose own constraints are
 * not the op's. */
minfer_status si_as_rule(ictx *c, infer_fn fn, const char *op, const size_t *idx, size_t n,
                         int32_t dtype);

/* ---- Integer lists and axes (infer_common.c) ----------------------------- */

/* An integer list given by an attribute or by an input's contents. */
enum { LIST_ABSENT, LIST_KNOWN, LIST_UNKNOWN };

typedef struct int_list {
    int state;
    size_t n;    /* entries when KNOWN */
    int64_t len; /* when UNKNOWN: the entry count if the input's shape tells, else -1 */
    int64_t v[LIST_CAP];
} int_list;

/* The int64/int32 contents of input idx (KNOWN), or a note that they are
 * not known yet (UNKNOWN) or that the input is absent (ABSENT). */
minfer_status si_read_ints(ictx *c, size_t idx, const char *what, int_list *l);
/* An INTS attribute (KNOWN) or a note of its absence. */
minfer_status si_attr_list(ictx *c, const char *name, int_list *l);
/* Either the input (when from_input) or the attribute. */
minfer_status si_get_list(ictx *c, int from_input, size_t idx, const char *name, int_list *l);
/* Normalises axis into [0, rank); MINFER_ERR_MODEL when out of range. */
minfer_status si_norm_axis(ictx *c, int64_t axis, int32_t rank, const char *what, int64_t *out);
/* Normalises a list of axes in place and rejects duplicates. */
minfer_status si_norm_axes(ictx *c, int_list *l, int32_t rank, const char *what);

/* ---- Broadcasting (infer_common.c) --------------------------------------- */

/* Multidirectional (numpy) broadcasting of a and b into o (o may alias). */
minfer_status si_broadcast(ictx *c, const int64_t *a, int32_t ra, const int64_t *b, int32_t rb,
                           int64_t *o, int32_t *ro);
/* Broadcasts every present input from first on; type taken from first. */
minfer_status si_broadcast_inputs(ictx *c, size_t first, size_t count, int check_types,
                                  int32_t *rank, int64_t *dims, int32_t *dtype);

/* ---- Sliding windows (infer_conv.c, used by infer_pool.c) ---------------- */

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

/* Window attributes shared by Conv, ConvTranspose and the pools, for nsp
 * spatial axes; validated against the spec's ranges. */
typedef struct window {
    int auto_pad;
    int64_t kernel[MINFER_MAX_RANK]; /* -1 when not known */
    int64_t strides[MINFER_MAX_RANK];
    int64_t dil[MINFER_MAX_RANK];
    int64_t pads[2 * MINFER_MAX_RANK];
} window;

minfer_status si_get_window(ictx *c, int32_t nsp, window *w);
/* Output length of a sliding window over n input positions. */
minfer_status si_window_out(ictx *c, const window *w, int32_t i, int32_t nsp, int64_t n,
                            int ceil_mode, int64_t *out);
/* kernel_shape, validated (KNOWN) or absent. */
minfer_status si_get_kernel_attr(ictx *c, int_list *ks);

/* ---- The rules, by file --------------------------------------------------- */

/* infer_common.c: output 0 is input 0 (CumSum, Trilu, LRN, ...). */
minfer_status si_same_type_shape(ictx *c);

/* infer_elementwise.c */
minfer_status si_unary(ictx *c);
minfer_status si_unary_bool(ictx *c);
minfer_status si_not(ictx *c);
minfer_status si_binary(ictx *c);
minfer_status si_variadic(ictx *c);
minfer_status si_where(ictx *c);
minfer_status si_clip(ictx *c);
minfer_status si_prelu(ictx *c);

/* infer_conv.c */
minfer_status si_conv(ictx *c);

/* infer_pool.c */
minfer_status si_pool(ictx *c);
minfer_status si_global_pool(ictx *c);
minfer_status si_maxunpool(ictx *c);

/* infer_einsum.c */
minfer_status si_einsum(ictx *c);

/* infer_norm.c */
minfer_status si_softmax(ictx *c);
minfer_status si_batchnorm(ictx *c);
minfer_status si_layernorm(ictx *c);

/* infer_gemm.c */
minfer_status si_gemm(ictx *c);
minfer_status si_matmul(ictx *c);

/* infer_reduce.c */
minfer_status si_reduce(ictx *c);

/* infer_shape_ops.c */
minfer_status si_dropout(ictx *c);
minfer_status si_cast(ictx *c);
minfer_status si_concat(ictx *c);
minfer_status si_flatten(ictx *c);
minfer_status si_transpose(ictx *c);
minfer_status si_reshape(ictx *c);
minfer_status si_shape(ictx *c);
minfer_status si_size(ictx *c);
minfer_status si_unsqueeze(ictx *c);
minfer_status si_squeeze(ictx *c);
minfer_status si_slice(ictx *c);
minfer_status si_expand(ictx *c);
minfer_status si_tile(ictx *c);
minfer_status si_pad(ictx *c);
minfer_status si_split(ictx *c);
minfer_status si_constant(ictx *c);
minfer_status si_constant_of_shape(ictx *c);
minfer_status si_range(ictx *c);

/* infer_indexing.c */
minfer_status si_gather(ictx *c);
minfer_status si_scatter(ictx *c);
minfer_status si_depth_space(ictx *c);
minfer_status si_eyelike(ictx *c);
minfer_status si_topk(ictx *c);
minfer_status si_nonzero(ictx *c);
minfer_status si_gather_nd(ictx *c);
minfer_status si_onehot(ictx *c);
minfer_status si_compress(ictx *c);
minfer_status si_unique(ictx *c);

/* infer_resize.c */
minfer_status si_resize(ictx *c);
minfer_status si_grid_sample(ictx *c);

/* infer_rnn.c */
minfer_status si_rnn(ictx *c);

/* infer_quant.c */
minfer_status si_quantize(ictx *c);
minfer_status si_dequantize(ictx *c);
minfer_status si_dynamic_quantize(ictx *c);
minfer_status si_qlinear(ictx *c);
minfer_status si_integer(ictx *c);

/* infer_detection.c */
minfer_status si_det(ictx *c);
minfer_status si_nms(ictx *c);
minfer_status si_roialign(ictx *c);

/* infer_loss.c */
minfer_status si_loss(ictx *c);

/* infer_text.c */
minfer_status si_string_normalizer(ictx *c);
minfer_status si_tfidf(ictx *c);

/* infer_signal.c */
minfer_status si_melweight(ictx *c);
minfer_status si_window_fn(ictx *c);
minfer_status si_dft(ictx *c);

/* infer_random.c */
minfer_status si_random(ictx *c);
minfer_status si_random_like(ictx *c);
minfer_status si_multinomial(ictx *c);

#endif
