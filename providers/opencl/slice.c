/*
 * Slice, Split and Expand of float tensors as strided copies (kernels/
 * data.cl's strided_copy, as Transpose in shape_ops.c): the output, made
 * contiguous, is read from the input at an element offset and per-axis
 * strides, a step times the input's stride for Slice, 0 along a broadcast
 * axis for Expand; Split is one such copy per output. The starts, ends,
 * axes, steps, split sizes and Expand's shape must be constants (read at
 * prepare), so every output shape is known when the plan is made; a
 * computed one is declined (the CPU provider runs it). These are the data
 * movements the corpus' transformers have around their attention
 * (docs/opencl.md, "The optimizer's transformer ops").
 */
#include <string.h>

#include "ocl.h"

#define MAX_SPLIT 64

/* y [od] (contiguous) from x read at element strides sa, starting at
 * element xo. */
static minfer_status copy_strided(const ocl_exec *e, cl_mem xb, int64_t xo, cl_mem yb, cl_int yo,
                                  int32_t rank, const int64_t *od, const int64_t *sa) {
    ocl_shape8 sh;
    memset(&sh, 0, sizeof sh);
    sh.rank = rank ? rank : 1;
    sh.d[0] = 1;
    for (int32_t i = 0; i < rank; i++) {
        if (sa[i] < INT32_MIN || sa[i] > INT32_MAX)
            return ocl_fail(e, MINFER_ERR_LIMIT, "a stride beyond 32-bit indexing");
        sh.d[i] = (cl_int)od[i];
        sh.sa[i] = (cl_int)sa[i];
    }
    int64_t n = ocl_numel(rank, od);
    if (n == 0)
        return MINFER_OK;
    if (n < 0 || n > INT32_MAX)
        return ocl_fail(e, MINFER_ERR_LIMIT, "%lld elements beyond 32-bit indexing", (long long)n);
    if (xo < 0 || xo > INT32_MAX)
        return ocl_fail(e, MINFER_ERR_LIMIT, "an offset beyond 32-bit indexing");
    cl_int xoi = (cl_int)xo;
    minfer_status s = ocl_set_args(e, OCL_K_strided_copy, 5, OCL_ARG(xb), OCL_ARG(xoi),
                                   OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(sh));
    if (s)
        return s;
    size_t inner = (size_t)sh.d[sh.rank - 1];
    size_t g[2] = {inner, (size_t)n / inner};
    return ocl_launch(e, OCL_K_strided_copy, 2, g, 0);
}

/* Row-major element strides of x. */
static void strides_of(const minfer_tensor_view *x, int64_t *st) {
    int64_t acc = 1;
    for (int32_t i = x->rank - 1; i >= 0; i--) {
        st[i] = acc;
        acc *= x->dims[i] > 0 ? x->dims[i] : 1;
    }
}

/* Constant int input i, or the ints attribute name for the older opsets
 * (from_attr): 1 read, 0 absent (optional), 2 computed (the support check
 * only: see ocl_param_later), or a decline (-1). */
static int read_ints(ocl_prep *p, size_t i, const char *name, int from_attr, int64_t *out,
                     size_t cap, size_t *count) {
    *count = 0;
    if (from_attr)
        return ocl_attr_ints(p, name, out, cap, count);
    if (!ocl_in_desc(p->node, i))
        return 0;
    if (ocl_param_later(p, i))
        return 2;
    int r = ocl_const_ints(p, i, out, cap, count);
    if (r == 0) {
        ocl_decline(p, "%s computed at run time (output shape unknown before the run)", name);
        return -1;
    }
    return r;
}

/* ---- Slice ------------------------------------------------------------------- */

typedef struct slice_state {
    ocl_state_head head;
    int64_t starts[OCL_MAX_RANK], ends[OCL_MAX_RANK], axes[OCL_MAX_RANK], steps[OCL_MAX_RANK];
    size_t n, n_axes, n_steps;
} slice_state;

minfer_status ocl_prepare_slice(ocl_prep *p) {
    const minfer_value_desc *x = ocl_in_desc(p->node, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    minfer_status s;
    if ((s = ocl_need_float(p, 0)) || (s = ocl_check_size(p, x)))
        return s;
    slice_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    int attr = p->since < 10;
    size_t ne = 0;
    int r1 = read_ints(p, 1, "starts", attr, st->starts, OCL_MAX_RANK, &st->n);
    int r2 = r1 < 0 ? r1 : read_ints(p, 2, "ends", attr, st->ends, OCL_MAX_RANK, &ne);
    int r3 = r2 < 0 ? r2 : read_ints(p, 3, "axes", attr, st->axes, OCL_MAX_RANK, &st->n_axes);
    int r4 = r3 < 0 || attr ? r3 : read_ints(p, 4, "steps", 0, st->steps, OCL_MAX_RANK, &st->n_steps);
    if (r4 < 0)
        return MINFER_ERR_UNSUPPORTED; /* declined, the reason set */
    if (r1 == 0 || r2 == 0)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "starts and ends are required");
    if (r1 == 2 || r2 == 2 || r3 == 2 || r4 == 2)
        return MINFER_OK; /* the support check: prepare reads them */
    if (ne != st->n || (st->n_axes && st->n_axes != st->n) || (st->n_steps && st->n_steps != st->n))
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "starts, ends, axes and steps differ in length");
    return MINFER_OK;
}

minfer_status ocl_execute_slice(const ocl_exec *e) {
    const slice_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int64_t xs[OCL_MAX_RANK], od[OCL_MAX_RANK], sa[OCL_MAX_RANK], off = 0;
    int seen[OCL_MAX_RANK] = {0};
    strides_of(x, xs);
    for (int32_t a = 0; a < x->rank; a++) {
        od[a] = x->dims[a];
        sa[a] = xs[a];
    }
    for (size_t k = 0; k < st->n; k++) {
        int64_t a = st->n_axes ? st->axes[k] : (int64_t)k;
        if (a < 0)
            a += x->rank;
        if (a < 0 || a >= x->rank || seen[a]++)
            return ocl_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range or repeated",
                            (long long)(st->n_axes ? st->axes[k] : (int64_t)k));
        int64_t dim = x->dims[a], b = st->starts[k], en = st->ends[k];
        int64_t step = st->n_steps ? st->steps[k] : 1, cnt;
        if (step == 0)
            return ocl_fail(e, MINFER_ERR_SHAPE, "step 0 on axis %lld", (long long)a);
        if (b < 0)
            b += dim;
        if (en < 0)
            en += dim;
        /* |step| as unsigned: INT64_MIN has no positive int64 */
        uint64_t mag = step > 0 ? (uint64_t)step : (uint64_t)(-(step + 1)) + 1u;
        if (step > 0) {
            b = b < 0 ? 0 : b > dim ? dim : b;
            en = en < 0 ? 0 : en > dim ? dim : en;
            cnt = en > b ? 1 + (int64_t)((uint64_t)(en - b - 1) / mag) : 0;
        } else {
            b = b < 0 ? 0 : b > dim - 1 ? dim - 1 : b;
            en = en < -1 ? -1 : en > dim - 1 ? dim - 1 : en;
            cnt = b > en ? 1 + (int64_t)((uint64_t)(b - en - 1) / mag) : 0;
        }
        if (dim == 0) /* nothing to take, whichever way (start clamped to -1 above) */
            cnt = 0;
        od[a] = cnt;
        if (cnt > 0)
            off += b * xs[a];
        /* with one element the step is never taken (it may be INT64_MIN);
         * with more, |step| < dim and the product fits */
        sa[a] = cnt > 1 ? xs[a] * step : 0;
    }
    cl_mem xb, yb;
    cl_int xo, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    minfer_status s = ocl_output(e, 0, x->rank, od, &yb, &yo);
    if (s)
        return s;
    return copy_strided(e, xb, (int64_t)xo + off, yb, yo, x->rank, od, sa);
}

/* ---- Split -------------------------------------------------------------------- */

typedef struct split_state {
    ocl_state_head head;
    int64_t axis;
    int64_t split[MAX_SPLIT];
    size_t n_split;
} split_state;

minfer_status ocl_prepare_split(ocl_prep *p) {
    const minfer_value_desc *x = ocl_in_desc(p->node, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    minfer_status s;
    if ((s = ocl_need_float(p, 0)) || (s = ocl_check_size(p, x)))
        return s;
    if (p->node->n_outputs > MAX_SPLIT)
        return ocl_decline(p, "more than %d outputs", MAX_SPLIT);
    split_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = ocl_attr_int(p, "axis", 0);
    if (read_ints(p, 1, "split", p->since < 13, st->split, MAX_SPLIT, &st->n_split) < 0)
        return MINFER_ERR_UNSUPPORTED; /* declined, the reason set */
    if (st->n_split && st->n_split != p->node->n_outputs)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "split has %zu entries for %zu outputs",
                             st->n_split, p->node->n_outputs);
    return MINFER_OK;
}

minfer_status ocl_execute_split(const ocl_exec *e) {
    const split_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    size_t n = e->args->n_outputs;
    if (!x || n == 0)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input or outputs");
    int64_t axis = st->axis < 0 ? st->axis + x->rank : st->axis;
    if (axis < 0 || axis >= x->rank)
        return ocl_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range", (long long)st->axis);
    int64_t dim = x->dims[axis], chunk = (dim + (int64_t)n - 1) / (int64_t)n;
    int64_t xs[OCL_MAX_RANK], od[OCL_MAX_RANK], at = 0;
    strides_of(x, xs);
    memcpy(od, x->dims, (size_t)x->rank * sizeof od[0]);
    cl_mem xb;
    cl_int xo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    for (size_t i = 0; i < n; i++) {
        /* equal parts (the last smaller, as opset 18's num_outputs) when no split is given */
        int64_t len = st->n_split ? st->split[i] : i + 1 < n ? chunk : dim - chunk * (int64_t)(n - 1);
        if (len < 0 || at + len > dim)
            return ocl_fail(e, MINFER_ERR_SHAPE, "the parts do not fit axis %lld of size %lld",
                            (long long)axis, (long long)dim);
        od[axis] = len;
        if (e->args->outputs[i].data || e->args->outputs[i].rank >= 0) {
            cl_mem yb;
            cl_int yo;
            minfer_status s = ocl_output(e, i, x->rank, od, &yb, &yo);
            if (s || (s = copy_strided(e, xb, (int64_t)xo + at * xs[axis], yb, yo, x->rank, od,
                                       xs)))
                return s;
        }
        at += len;
    }
    if (at != dim)
        return ocl_fail(e, MINFER_ERR_SHAPE, "the parts cover %lld of axis %lld's %lld",
                        (long long)at, (long long)axis, (long long)dim);
    return MINFER_OK;
}

/* ---- Expand -------------------------------------------------------------------- */

typedef struct expand_state {
    ocl_state_head head;
    int64_t shape[OCL_MAX_RANK];
    size_t n;
} expand_state;

minfer_status ocl_prepare_expand(ocl_prep *p) {
    const minfer_value_desc *x = ocl_in_desc(p->node, 0);
    if (!x)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    minfer_status s;
    if ((s = ocl_need_float(p, 0)) || (s = ocl_check_size(p, x)))
        return s;
    expand_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    int r = read_ints(p, 1, "shape", 0, st->shape, OCL_MAX_RANK, &st->n);
    if (r < 0)
        return MINFER_ERR_UNSUPPORTED; /* declined, the reason set */
    if (r == 0)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs the input shape");
    return MINFER_OK;
}

minfer_status ocl_execute_expand(const ocl_exec *e) {
    const expand_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0);
    if (!x)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int32_t r = x->rank > (int32_t)st->n ? x->rank : (int32_t)st->n;
    if (r > OCL_MAX_RANK)
        return ocl_fail(e, MINFER_ERR_SHAPE, "rank %d above %d", (int)r, OCL_MAX_RANK);
    int64_t xs[OCL_MAX_RANK], od[OCL_MAX_RANK], sa[OCL_MAX_RANK];
    strides_of(x, xs);
    for (int32_t i = 0; i < r; i++) {
        int32_t xi = i - (r - x->rank), si = i - (r - (int32_t)st->n);
        int64_t xd = xi >= 0 ? x->dims[xi] : 1, sd = si >= 0 ? st->shape[si] : 1;
        if (xd != sd && xd != 1 && sd != 1)
            return ocl_fail(e, MINFER_ERR_SHAPE, "shape %lld does not broadcast with %lld on "
                            "axis %d", (long long)sd, (long long)xd, (int)i);
        od[i] = xd == 1 ? sd : xd;
        sa[i] = xd == 1 ? 0 : xs[xi];
    }
    cl_mem xb, yb;
    cl_int xo, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    minfer_status s = ocl_output(e, 0, r, od, &yb, &yo);
    if (s)
        return s;
    return copy_strided(e, xb, xo, yb, yo, r, od, sa);
}
