/*
 * Data movement and shape ops: Identity, Dropout (inference), Reshape,
 * Flatten, Squeeze, Unsqueeze, Transpose, Concat, Slice, Gather, Shape,
 * Size, Cast/CastLike (strings: text.c), Constant, ConstantOfShape, Expand, Range, Tile.
 *
 * These are typeless except Cast and Range: they move elements by size.
 * They also run at plan time on small int64 tensors (shape arithmetic), so
 * every index read from a tensor is checked before use.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

static size_t nbytes_of(const minfer_tensor_view *v) {
    return (size_t)minfer_kit_numel(v->rank, v->dims) * minfer_elem_size(v->dtype);
}

/* Output 0 gets x's data under another shape. */
static minfer_status copy_as(const cpu_exec *e, const minfer_tensor_view *x, int32_t rank,
                             const int64_t *dims) {
    void *y;
    if (minfer_kit_numel(rank, dims) != minfer_kit_numel(x->rank, x->dims))
        return cpu_fail(e, MINFER_ERR_SHAPE, "element count changes (%lld to %lld)",
                        (long long)minfer_kit_numel(x->rank, x->dims),
                        (long long)minfer_kit_numel(rank, dims));
    minfer_status s = cpu_output(e, 0, x->dtype, rank, dims, &y);
    if (s)
        return s;
    if (y && y != cpu_data(x))
        memcpy(y, cpu_data(x), nbytes_of(x));
    return MINFER_OK;
}

static const minfer_tensor_view *input0(const cpu_exec *e) {
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x)
        cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    return x;
}

/* ---- Identity, Dropout ------------------------------------------------------- */

minfer_status cpu_prepare_identity(cpu_prep *p) {
    if (!minfer_kit_input(p->node, 0))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    return MINFER_OK;
}

minfer_status cpu_compute_identity(const cpu_exec *e) {
    const minfer_tensor_view *x = input0(e);
    return x ? copy_as(e, x, x->rank, x->dims) : MINFER_ERR_RUNTIME;
}

/* Training mode (opset 12+, the training_mode input true) with a ratio
 * above 0 drops elements at random: a xorshift generator seeded from the
 * seed attribute, so the output has the right shape, type and distribution
 * but cannot match another runtime's random draw. */
typedef struct dropout_state {
    uint64_t seed;
} dropout_state;

minfer_status cpu_prepare_dropout(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    if (!minfer_kit_input(n, 0))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    dropout_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    /* Dropout's seed is an int (ONNX); RandomNormal's and the others' a float */
    st->seed = (uint64_t)cpu_attr_int(p, "seed", 0) * 2654435761u + 0x9e3779b97f4a7c15u;
    if (minfer_kit_output_wanted(n, 1)) {
        int32_t mt = n->outputs[1].dtype;
        if (mt && !(CPU_T(mt) & (CPU_T_NUM | CPU_T_BOOL)))
            return cpu_decline(p, "mask type %s not supported", minfer_elem_name(mt));
    }
    return MINFER_OK;
}

static minfer_status dropout_train(const cpu_exec *e, const minfer_tensor_view *x, double ratio) {
    const dropout_state *st = e->state;
    void *y, *m = NULL;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (s)
        return s;
    if (minfer_kit_output_wanted(e->args->node, 1) &&
        (s = cpu_output(e, 1, MINFER_DTYPE_BOOL, x->rank, x->dims, &m)) != MINFER_OK)
        return s;
    if (!cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "training mode needs a float input");
    uint64_t r = st->seed ? st->seed : 1;
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    for (size_t i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        int keep = (double)(r >> 11) / 9007199254740992.0 >= ratio;
        cpu_set(y, x->dtype, i, keep ? cpu_get(cpu_data(x), x->dtype, i) / (1 - ratio) : 0);
        if (m)
            ((uint8_t *)m)[i] = (uint8_t)keep;
    }
    return MINFER_OK;
}

minfer_status cpu_compute_dropout(const cpu_exec *e) {
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    const minfer_tensor_view *rv = cpu_input(e, 1), *tv = cpu_input(e, 2);
    if (tv && e->args->node->opset >= 12) {
        double ratio = 0.5;
        if (tv->dtype != MINFER_DTYPE_BOOL || minfer_kit_numel(tv->rank, tv->dims) != 1)
            return cpu_fail(e, MINFER_ERR_TYPE, "training_mode must be a bool scalar");
        double train = cpu_get(cpu_data(tv), tv->dtype, 0);
        minfer_status s = rv ? cpu_read_scalar(e, rv, "ratio", &ratio) : MINFER_OK;
        if (s)
            return s;
        if (!(ratio >= 0 && ratio < 1))
            return cpu_fail(e, MINFER_ERR_RUNTIME, "ratio must be in [0, 1)");
        if (train != 0 && ratio > 0)
            return dropout_train(e, x, ratio);
    }
    minfer_status s = copy_as(e, x, x->rank, x->dims);
    if (s || !minfer_kit_output_wanted(e->args->node, 1) || e->args->n_outputs < 2)
        return s;
    /* Inference keeps everything: the mask is all ones (bool from opset 10). */
    int32_t mt = e->args->outputs[1].dtype ? e->args->outputs[1].dtype : MINFER_DTYPE_BOOL;
    void *m;
    s = cpu_output(e, 1, mt, x->rank, x->dims, &m);
    if (s)
        return s;
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    switch (mt) {
    case MINFER_DTYPE_BOOL:
        memset(m, 1, n);
        break;
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        for (size_t i = 0; i < n; i++)                                                     \
            ((T *)m)[i] = (T)1;                                                            \
        break;
        CPU_NUM_TYPES(CASE)
#undef CASE
    default:
        return cpu_fail(e, MINFER_ERR_TYPE, "mask type %s not supported", minfer_elem_name(mt));
    }
    return MINFER_OK;
}

/* ---- Reshape, Flatten, Squeeze, Unsqueeze ------------------------------------ */

typedef struct axes_state {
    int from_input; /* axes / shape come from input 1 */
    int allowzero;
    int64_t axis;
    size_t n;
    int64_t v[CPU_MAX_RANK];
} axes_state;

minfer_status cpu_prepare_reshape(cpu_prep *p) {
    axes_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->from_input = p->since >= 5;
    st->allowzero = p->since >= 14 && cpu_attr_int(p, "allowzero", 0) != 0;
    if (!minfer_kit_input(p->node, 0) || (st->from_input && !minfer_kit_input(p->node, 1)))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs data and shape");
    if (!st->from_input && cpu_attr_ints(p, "shape", st->v, CPU_MAX_RANK, &st->n) <= 0)
        return cpu_has_attr(p, "shape") ? MINFER_ERR_UNSUPPORTED
                                        : cpu_prep_fail(p, MINFER_ERR_MODEL, "needs 'shape'");
    return MINFER_OK;
}

minfer_status cpu_compute_reshape(const cpu_exec *e) {
    const axes_state *st = e->state;
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int64_t shape[CPU_MAX_RANK];
    size_t n = st->n;
    memcpy(shape, st->v, sizeof shape);
    if (st->from_input) {
        const minfer_tensor_view *sv = cpu_input(e, 1);
        if (!sv)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "missing shape");
        minfer_status s = cpu_read_ints(e, sv, "shape", shape, CPU_MAX_RANK, &n);
        if (s)
            return s;
    }
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < n; i++) {
        if (shape[i] == 0 && !st->allowzero) {
            if ((int32_t)i >= x->rank)
                return cpu_fail(e, MINFER_ERR_SHAPE, "shape[%zu] = 0 beyond the input rank", i);
            shape[i] = x->dims[i];
        } else if (shape[i] == -1) {
            if (infer >= 0)
                return cpu_fail(e, MINFER_ERR_SHAPE, "shape has more than one -1");
            infer = (int)i;
            continue;
        } else if (shape[i] < 0) {
            return cpu_fail(e, MINFER_ERR_SHAPE, "shape[%zu] = %lld", i, (long long)shape[i]);
        }
        known *= shape[i];
    }
    int64_t total = minfer_kit_numel(x->rank, x->dims);
    if (infer >= 0) {
        if (known == 0 || total % known)
            return cpu_fail(e, MINFER_ERR_SHAPE, "cannot infer the -1 dimension");
        shape[infer] = total / known;
    }
    return copy_as(e, x, (int32_t)n, shape);
}

minfer_status cpu_prepare_flatten(cpu_prep *p) {
    axes_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = cpu_attr_int(p, "axis", 1);
    return MINFER_OK;
}

minfer_status cpu_compute_flatten(const cpu_exec *e) {
    const axes_state *st = e->state;
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int64_t a = st->axis < 0 ? st->axis + x->rank : st->axis;
    if (a < 0 || a > x->rank)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range", (long long)st->axis);
    int64_t d[2] = {minfer_kit_numel((int32_t)a, x->dims),
                    minfer_kit_numel(x->rank - (int32_t)a, x->dims + a)};
    return copy_as(e, x, 2, d);
}

minfer_status cpu_prepare_squeeze(cpu_prep *p) {
    axes_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->from_input = p->since >= 13;
    if (!st->from_input && cpu_attr_ints(p, "axes", st->v, CPU_MAX_RANK, &st->n) < 0)
        return MINFER_ERR_UNSUPPORTED;
    return MINFER_OK;
}

static minfer_status read_axes(const cpu_exec *e, const axes_state *st, int64_t *axes,
                               size_t *n) {
    *n = st->n;
    memcpy(axes, st->v, sizeof st->v);
    const minfer_tensor_view *a = cpu_input(e, 1);
    if (st->from_input && a)
        return cpu_read_ints(e, a, "axes", axes, CPU_MAX_RANK, n);
    return MINFER_OK;
}

minfer_status cpu_compute_squeeze(const cpu_exec *e) {
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int64_t axes[CPU_MAX_RANK], od[CPU_MAX_RANK];
    size_t n;
    minfer_status s = read_axes(e, e->state, axes, &n);
    if (s)
        return s;
    int drop[CPU_MAX_RANK] = {0};
    for (size_t i = 0; i < n; i++) {
        int a = minfer_kit_axis(axes[i], x->rank);
        if (a < 0 || drop[a])
            return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range or repeated",
                            (long long)axes[i]);
        if (x->dims[a] != 1)
            return cpu_fail(e, MINFER_ERR_SHAPE, "cannot squeeze axis %d of size %lld", a,
                            (long long)x->dims[a]);
        drop[a] = 1;
    }
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (n ? !drop[d] : x->dims[d] != 1)
            od[r++] = x->dims[d];
    return copy_as(e, x, r, od);
}

minfer_status cpu_prepare_unsqueeze(cpu_prep *p) {
    axes_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->from_input = p->since >= 13;
    if (st->from_input && !minfer_kit_input(p->node, 1))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs input axes");
    if (!st->from_input && cpu_attr_ints(p, "axes", st->v, CPU_MAX_RANK, &st->n) <= 0)
        return cpu_has_attr(p, "axes") ? MINFER_ERR_UNSUPPORTED
                                       : cpu_prep_fail(p, MINFER_ERR_MODEL, "needs 'axes'");
    return MINFER_OK;
}

minfer_status cpu_compute_unsqueeze(const cpu_exec *e) {
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int64_t axes[CPU_MAX_RANK], od[CPU_MAX_RANK];
    size_t n;
    minfer_status s = read_axes(e, e->state, axes, &n);
    if (s)
        return s;
    int32_t r = x->rank + (int32_t)n;
    if (r > CPU_MAX_RANK)
        return cpu_fail(e, MINFER_ERR_LIMIT, "output rank %d too large", (int)r);
    int ins[CPU_MAX_RANK] = {0};
    for (size_t i = 0; i < n; i++) {
        int a = minfer_kit_axis(axes[i], r);
        if (a < 0 || ins[a])
            return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range or repeated",
                            (long long)axes[i]);
        ins[a] = 1;
    }
    for (int d = 0, k = 0; d < r; d++)
        od[d] = ins[d] ? 1 : x->dims[k++];
    return copy_as(e, x, r, od);
}

/* ---- Strided copies (Transpose, Slice) ----------------------------------------- */

/* out[i0..ir] = src[sum i_d * istr[d]], over output dims, rows in parallel. */
typedef struct strided_job {
    int rank;
    int64_t dims[CPU_MAX_RANK], istr[CPU_MAX_RANK];
    const char *src; /* first source element */
    char *dst;
    size_t es;
} strided_job;

#define SIZE_TYPES(X) X(1, uint8_t) X(2, uint16_t) X(4, uint32_t) X(8, uint64_t)

static void strided_range(void *arg, size_t b, size_t e) {
    const strided_job *j = arg;
    size_t inner = (size_t)j->dims[j->rank - 1];
    int64_t is = j->istr[j->rank - 1];
    for (size_t row = b; row < e; row++) {
        int64_t off = 0;
        size_t r = row;
        for (int d = j->rank - 2; d >= 0; d--) {
            off += (int64_t)(r % (size_t)j->dims[d]) * j->istr[d];
            r /= (size_t)j->dims[d];
        }
        char *dst = j->dst + row * inner * j->es;
        const char *src = j->src + off * (int64_t)j->es;
        if (is == 1) {
            memcpy(dst, src, inner * j->es);
            continue;
        }
        switch (j->es) {
#define CASE(SZ, T)                                                                        \
    case SZ:                                                                               \
        for (size_t i = 0; i < inner; i++)                                                 \
            ((T *)dst)[i] = *(const T *)(src + (int64_t)i * is * SZ);                      \
        break;
            SIZE_TYPES(CASE)
#undef CASE
        default:
            for (size_t i = 0; i < inner; i++)
                memcpy(dst + i * j->es, src + (int64_t)i * is * (int64_t)j->es, j->es);
        }
    }
}

static void strided_copy(const cpu_ctx *ctx, size_t es, int rank, const int64_t *dims,
                         const int64_t *istr, const void *src, void *dst) {
    strided_job j;
    memset(&j, 0, sizeof j);
    j.src = src;
    j.dst = dst;
    j.es = es;
    /* Nothing to copy from an empty tensor, whose other dims may be too
     * large to multiply. */
    for (int d = 0; d < rank; d++)
        if (dims[d] == 0)
            return;
    /* Drop unit dims, then merge dims whose source strides chain. */
    for (int d = 0; d < rank; d++) {
        if (dims[d] == 1)
            continue;
        if (j.rank > 0 && j.istr[j.rank - 1] == istr[d] * dims[d]) {
            j.dims[j.rank - 1] *= dims[d];
            j.istr[j.rank - 1] = istr[d];
            continue;
        }
        j.dims[j.rank] = dims[d];
        j.istr[j.rank++] = istr[d];
    }
    if (j.rank == 0) {
        j.rank = 1;
        j.dims[0] = 1;
        j.istr[0] = 1;
    }
    size_t rows = (size_t)minfer_kit_numel(j.rank - 1, j.dims), inner = (size_t)j.dims[j.rank - 1];
    cpu_parallel(ctx, rows, (65536 + inner - 1) / inner, strided_range, &j);
}

static void contiguous_strides(int32_t rank, const int64_t *dims, int64_t *str) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        str[d] = s;
        s = cpu_stride_mul(s, dims[d]);
    }
}

/* ---- Transpose -------------------------------------------------------------- */

minfer_status cpu_prepare_transpose(cpu_prep *p) {
    axes_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    if (cpu_attr_ints(p, "perm", st->v, CPU_MAX_RANK, &st->n) < 0)
        return MINFER_ERR_UNSUPPORTED;
    st->from_input = cpu_has_attr(p, "perm"); /* here: perm given */
    return MINFER_OK;
}

minfer_status cpu_compute_transpose(const cpu_exec *e) {
    const axes_state *st = e->state;
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int64_t perm[CPU_MAX_RANK], od[CPU_MAX_RANK], str[CPU_MAX_RANK], istr[CPU_MAX_RANK];
    int seen[CPU_MAX_RANK] = {0};
    if (st->from_input && st->n != (size_t)x->rank)
        return cpu_fail(e, MINFER_ERR_SHAPE, "perm has %zu entries for rank %d", st->n,
                        (int)x->rank);
    contiguous_strides(x->rank, x->dims, str);
    for (int d = 0; d < x->rank; d++) {
        perm[d] = st->from_input ? st->v[d] : x->rank - 1 - d;
        int a = minfer_kit_axis(perm[d], x->rank);
        if (a < 0 || seen[a])
            return cpu_fail(e, MINFER_ERR_SHAPE, "perm is not a permutation");
        seen[a] = 1;
        od[d] = x->dims[a];
        istr[d] = str[a];
    }
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, od, &y);
    if (s)
        return s;
    strided_copy(e->ctx, minfer_elem_size(x->dtype), x->rank, od, istr, cpu_data(x), y);
    return MINFER_OK;
}

/* ---- Concat ----------------------------------------------------------------- */

minfer_status cpu_prepare_concat(cpu_prep *p) {
    axes_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    if (p->since >= 4 && !cpu_has_attr(p, "axis"))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs 'axis'");
    st->axis = cpu_attr_int(p, "axis", 1);
    for (size_t i = 0; i < p->node->n_inputs; i++) {
        const minfer_value_desc *d = minfer_kit_input(p->node, i);
        if (!d)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "input %zu is empty", i);
        if (d->dtype && d->dtype != p->node->inputs[0].dtype)
            return cpu_decline(p, "input types differ");
    }
    if (p->node->n_inputs == 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs");
    return MINFER_OK;
}

minfer_status cpu_compute_concat(const cpu_exec *e) {
    const axes_state *st = e->state;
    const minfer_tensor_view *x0 = input0(e);
    if (!x0)
        return MINFER_ERR_RUNTIME;
    int axis = minfer_kit_axis(st->axis, x0->rank);
    if (axis < 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range", (long long)st->axis);
    int64_t od[CPU_MAX_RANK];
    memcpy(od, x0->dims, sizeof od);
    od[axis] = 0;
    size_t n = e->args->n_inputs;
    for (size_t i = 0; i < n; i++) {
        const minfer_tensor_view *x = cpu_input(e, i);
        if (!x || x->dtype != x0->dtype || x->rank != x0->rank)
            return cpu_fail(e, MINFER_ERR_SHAPE, "input %zu: type or rank differs", i);
        for (int d = 0; d < x->rank; d++)
            if (d != axis && x->dims[d] != x0->dims[d])
                return cpu_fail(e, MINFER_ERR_SHAPE, "input %zu: dim %d differs", i, d);
        od[axis] += x->dims[axis];
    }
    void *y;
    minfer_status s = cpu_output(e, 0, x0->dtype, x0->rank, od, &y);
    if (s)
        return s;
    size_t es = minfer_elem_size(x0->dtype);
    size_t outer = (size_t)minfer_kit_numel(axis, od);
    size_t inner = (size_t)minfer_kit_numel(x0->rank - axis - 1, od + axis + 1) * es;
    size_t out_row = (size_t)od[axis] * inner, at = 0;
    for (size_t i = 0; i < n; i++) {
        const minfer_tensor_view *x = cpu_input(e, i);
        size_t row = (size_t)x->dims[axis] * inner;
        const char *src = cpu_data(x);
        for (size_t o = 0; o < outer && row; o++)
            memcpy((char *)y + o * out_row + at, src + o * row, row);
        at += row;
    }
    return MINFER_OK;
}

/* ---- Slice ------------------------------------------------------------------ */

typedef struct slice_state {
    int from_inputs; /* opset >= 10 */
    size_t n;        /* attribute form */
    int has_axes;
    int64_t starts[CPU_MAX_RANK], ends[CPU_MAX_RANK], axes[CPU_MAX_RANK];
} slice_state;

minfer_status cpu_prepare_slice(cpu_prep *p) {
    slice_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->from_inputs = p->since >= 10;
    if (st->from_inputs) {
        if (!minfer_kit_input(p->node, 1) || !minfer_kit_input(p->node, 2))
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs starts and ends");
        return MINFER_OK;
    }
    size_t ns, ne, na;
    int rs = cpu_attr_ints(p, "starts", st->starts, CPU_MAX_RANK, &ns);
    int re = cpu_attr_ints(p, "ends", st->ends, CPU_MAX_RANK, &ne);
    int ra = cpu_attr_ints(p, "axes", st->axes, CPU_MAX_RANK, &na);
    if (rs < 0 || re < 0 || ra < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (!rs || !re || ns != ne || (ra && na != ns))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "starts, ends (and axes) must match");
    st->n = ns;
    st->has_axes = ra;
    return MINFER_OK;
}

minfer_status cpu_compute_slice(const cpu_exec *e) {
    const slice_state *st = e->state;
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int64_t starts[CPU_MAX_RANK], ends[CPU_MAX_RANK], axes[CPU_MAX_RANK], steps[CPU_MAX_RANK];
    size_t n = st->n, nn;
    int has_axes = st->has_axes;
    memcpy(starts, st->starts, sizeof starts);
    memcpy(ends, st->ends, sizeof ends);
    memcpy(axes, st->axes, sizeof axes);
    for (size_t i = 0; i < CPU_MAX_RANK; i++)
        steps[i] = 1;
    if (st->from_inputs) {
        const minfer_tensor_view *v;
        minfer_status s = cpu_read_ints(e, cpu_input(e, 1), "starts", starts, CPU_MAX_RANK, &n);
        if (!s)
            s = cpu_read_ints(e, cpu_input(e, 2), "ends", ends, CPU_MAX_RANK, &nn);
        if (!s && nn != n)
            s = cpu_fail(e, MINFER_ERR_SHAPE, "starts and ends differ in length");
        has_axes = 0;
        if (!s && (v = cpu_input(e, 3)) != NULL && v->data) {
            s = cpu_read_ints(e, v, "axes", axes, CPU_MAX_RANK, &nn);
            if (!s && nn != n)
                s = cpu_fail(e, MINFER_ERR_SHAPE, "axes length differs from starts");
            has_axes = 1;
        }
        if (!s && (v = cpu_input(e, 4)) != NULL && v->data) {
            s = cpu_read_ints(e, v, "steps", steps, CPU_MAX_RANK, &nn);
            if (!s && nn != n)
                s = cpu_fail(e, MINFER_ERR_SHAPE, "steps length differs from starts");
        }
        if (s)
            return s;
    }
    int64_t lo[CPU_MAX_RANK], step[CPU_MAX_RANK], od[CPU_MAX_RANK];
    int done[CPU_MAX_RANK] = {0};
    for (int d = 0; d < x->rank; d++) {
        lo[d] = 0;
        step[d] = 1;
        od[d] = x->dims[d];
    }
    for (size_t i = 0; i < n; i++) {
        int a = minfer_kit_axis(has_axes ? axes[i] : (int64_t)i, x->rank);
        if (a < 0 || done[a])
            return cpu_fail(e, MINFER_ERR_SHAPE, "axis out of range or repeated");
        done[a] = 1;
        int64_t dim = x->dims[a], s = starts[i], en = ends[i], k = steps[i];
        if (k == 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "step 0");
        /* Clamp first so that huge sentinels (INT64_MIN/MAX) cannot overflow. */
        s = s < -dim ? -dim - 1 : s > dim ? dim : s;
        en = en < -dim ? -dim - 1 : en > dim ? dim : en;
        if (s < 0)
            s += dim;
        if (en < 0)
            en += dim;
        /* ceil(span / |k|) as (span - 1) / |k| + 1, and |INT64_MIN| in
         * unsigned: a step near the extremes must not overflow. */
        int64_t len;
        if (k > 0) {
            s = s < 0 ? 0 : s;
            en = en < 0 ? 0 : en;
            len = en > s ? (en - s - 1) / k + 1 : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            en = en < -1 ? -1 : en > dim - 1 ? dim - 1 : en;
            len = s > en ? (int64_t)((uint64_t)(s - en - 1) / (0 - (uint64_t)k)) + 1 : 0;
        }
        lo[a] = s;
        /* With one element the step is never taken; a step that large
         * would overflow the byte stride below. */
        step[a] = len > 1 ? k : 1;
        od[a] = len;
    }
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank, od, &y);
    if (s)
        return s;
    if (minfer_kit_numel(x->rank, od) == 0)
        return MINFER_OK;
    int64_t str[CPU_MAX_RANK], istr[CPU_MAX_RANK], off = 0;
    contiguous_strides(x->rank, x->dims, str);
    for (int d = 0; d < x->rank; d++) {
        off += lo[d] * str[d];
        istr[d] = step[d] * str[d];
    }
    size_t es = minfer_elem_size(x->dtype);
    strided_copy(e->ctx, es, x->rank, od, istr, (const char *)cpu_data(x) + off * (int64_t)es,
                 y);
    return MINFER_OK;
}

/* ---- Gather ----------------------------------------------------------------- */

minfer_status cpu_prepare_gather(cpu_prep *p) {
    const minfer_value_desc *ind = minfer_kit_input(p->node, 1);
    if (!minfer_kit_input(p->node, 0) || !ind)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs data and indices");
    if (ind->dtype && ind->dtype != MINFER_DTYPE_INT32 && ind->dtype != MINFER_DTYPE_INT64)
        return cpu_decline(p, "indices must be int32 or int64");
    axes_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = cpu_attr_int(p, "axis", 0);
    return MINFER_OK;
}

minfer_status cpu_compute_gather(const cpu_exec *e) {
    const axes_state *st = e->state;
    const minfer_tensor_view *x = input0(e), *ind = cpu_input(e, 1);
    if (!x)
        return MINFER_ERR_RUNTIME;
    if (!ind || (ind->dtype != MINFER_DTYPE_INT32 && ind->dtype != MINFER_DTYPE_INT64))
        return cpu_fail(e, MINFER_ERR_TYPE, "indices must be int32 or int64");
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range", (long long)st->axis);
    int32_t orank = x->rank - 1 + ind->rank;
    if (orank > CPU_MAX_RANK)
        return cpu_fail(e, MINFER_ERR_LIMIT, "output rank too large");
    int64_t od[CPU_MAX_RANK];
    int r = 0;
    for (int d = 0; d < axis; d++)
        od[r++] = x->dims[d];
    for (int d = 0; d < ind->rank; d++)
        od[r++] = ind->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        od[r++] = x->dims[d];
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, orank, od, &y);
    if (s)
        return s;
    size_t ni = (size_t)minfer_kit_numel(ind->rank, ind->dims), es = minfer_elem_size(x->dtype);
    int64_t dim = x->dims[axis];
    const void *idx = cpu_data(ind);
    for (size_t i = 0; i < ni; i++) {
        int64_t k = ind->dtype == MINFER_DTYPE_INT64 ? ((const int64_t *)idx)[i]
                                                     : ((const int32_t *)idx)[i];
        if (k < -dim || k >= dim)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "index %lld out of range [%lld, %lld)",
                            (long long)k, (long long)-dim, (long long)dim);
    }
    size_t outer = (size_t)minfer_kit_numel(axis, x->dims);
    size_t inner = (size_t)minfer_kit_numel(x->rank - axis - 1, x->dims + axis + 1) * es;
    if (outer == 0 || ni == 0 || inner == 0)
        return MINFER_OK; /* an empty output: y may be NULL */
    const char *src = cpu_data(x);
    char *dst = y;
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < ni; i++) {
            int64_t k = ind->dtype == MINFER_DTYPE_INT64 ? ((const int64_t *)idx)[i]
                                                         : ((const int32_t *)idx)[i];
            if (k < 0)
                k += dim;
            memcpy(dst + (o * ni + i) * inner, src + (o * (size_t)dim + (size_t)k) * inner,
                   inner);
        }
    return MINFER_OK;
}

/* ---- Shape, Size -------------------------------------------------------------- */

typedef struct shape_state {
    int64_t start, end;
    int has_end;
} shape_state;

minfer_status cpu_prepare_shape(cpu_prep *p) {
    shape_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->start = cpu_attr_int(p, "start", 0);
    st->has_end = cpu_has_attr(p, "end");
    st->end = cpu_attr_int(p, "end", 0);
    return MINFER_OK;
}

minfer_status cpu_compute_shape(const cpu_exec *e) {
    const shape_state *st = e->state;
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int64_t r = x->rank, s, en;
    minfer_shape_range(r, st->start, st->has_end ? st->end : r, &s, &en);
    int64_t n = en - s;
    int64_t *y;
    minfer_status status = cpu_output(e, 0, MINFER_DTYPE_INT64, 1, &n, (void **)&y);
    if (status)
        return status;
    for (int64_t i = 0; i < n; i++)
        y[i] = x->dims[s + i];
    return MINFER_OK;
}

minfer_status cpu_prepare_size(cpu_prep *p) {
    (void)p;
    return MINFER_OK;
}

minfer_status cpu_compute_size(const cpu_exec *e) {
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int64_t *y;
    minfer_status s = cpu_output(e, 0, MINFER_DTYPE_INT64, 0, NULL, (void **)&y);
    if (!s)
        *y = minfer_kit_numel(x->rank, x->dims);
    return s;
}

/* ---- Cast, CastLike --------------------------------------------------------- */

/* X(C type, suffix, kind, lowest, highest): kind F floating, I integer, B bool.
 * Two copies of the list, as the cast table nests one inside the other. */
#define CAST_SRC(X)                                                                        \
    X(MINFER_DTYPE_FLOAT, float, f32, F, 0, 0)                                             \
    X(MINFER_DTYPE_DOUBLE, double, f64, F, 0, 0)                                           \
    X(MINFER_DTYPE_INT8, int8_t, i8, I, INT8_MIN, INT8_MAX)                                \
    X(MINFER_DTYPE_INT16, int16_t, i16, I, INT16_MIN, INT16_MAX)                           \
    X(MINFER_DTYPE_INT32, int32_t, i32, I, INT32_MIN, INT32_MAX)                           \
    X(MINFER_DTYPE_INT64, int64_t, i64, I, INT64_MIN, INT64_MAX)                           \
    X(MINFER_DTYPE_UINT8, uint8_t, u8, I, 0, UINT8_MAX)                                    \
    X(MINFER_DTYPE_UINT16, uint16_t, u16, I, 0, UINT16_MAX)                                \
    X(MINFER_DTYPE_UINT32, uint32_t, u32, I, 0, UINT32_MAX)                                \
    X(MINFER_DTYPE_UINT64, uint64_t, u64, I, 0, UINT64_MAX)                                \
    X(MINFER_DTYPE_BOOL, uint8_t, b8, B, 0, 1)
#define CAST_DST(X, ST, SS, SK)                                                            \
    X(ST, SS, SK, MINFER_DTYPE_FLOAT, float, f32, F, 0, 0)                                 \
    X(ST, SS, SK, MINFER_DTYPE_DOUBLE, double, f64, F, 0, 0)                               \
    X(ST, SS, SK, MINFER_DTYPE_INT8, int8_t, i8, I, INT8_MIN, INT8_MAX)                    \
    X(ST, SS, SK, MINFER_DTYPE_INT16, int16_t, i16, I, INT16_MIN, INT16_MAX)               \
    X(ST, SS, SK, MINFER_DTYPE_INT32, int32_t, i32, I, INT32_MIN, INT32_MAX)               \
    X(ST, SS, SK, MINFER_DTYPE_INT64, int64_t, i64, I, INT64_MIN, INT64_MAX)               \
    X(ST, SS, SK, MINFER_DTYPE_UINT8, uint8_t, u8, I, 0, UINT8_MAX)                        \
    X(ST, SS, SK, MINFER_DTYPE_UINT16, uint16_t, u16, I, 0, UINT16_MAX)                    \
    X(ST, SS, SK, MINFER_DTYPE_UINT32, uint32_t, u32, I, 0, UINT32_MAX)                    \
    X(ST, SS, SK, MINFER_DTYPE_UINT64, uint64_t, u64, I, 0, UINT64_MAX)                    \
    X(ST, SS, SK, MINFER_DTYPE_BOOL, uint8_t, b8, B, 0, 1)

/* CONV_<dst kind>_<src kind>(dst type, value, lowest, highest). A float
 * beyond an integer type's range is undefined in C (and in ONNX); it
 * saturates here, NaN becomes 0. */
#define CONV_F_F(D, v, lo, hi) ((D)(v))
#define CONV_F_I(D, v, lo, hi) ((D)(v))
#define CONV_F_B(D, v, lo, hi) ((D)(v))
#define CONV_I_F(D, v, lo, hi)                                                             \
    ((v) != (v) ? (D)0                                                                     \
     : (double)(v) <= (double)(lo) ? (D)(lo)                                               \
     : (double)(v) >= (double)(hi) ? (D)(hi)                                               \
                                   : (D)(v))
#define CONV_I_I(D, v, lo, hi) ((D)(v))
#define CONV_I_B(D, v, lo, hi) ((D)(v))
#define CONV_B_F(D, v, lo, hi) ((D)((v) != 0))
#define CONV_B_I(D, v, lo, hi) ((D)((v) != 0))
#define CONV_B_B(D, v, lo, hi) ((D)((v) != 0))

typedef void (*cast_fn)(const void *src, void *dst, size_t n);

#define CAST_CELL(ST, SS, SK, DE, DT, DS, DK, LO, HI)                                      \
    static void cast_##SS##_##DS(const void *s_, void *d_, size_t n) {                     \
        const ST *s = s_;                                                                  \
        DT *d = d_;                                                                        \
        for (size_t i = 0; i < n; i++)                                                     \
            d[i] = CONV_##DK##_##SK(DT, s[i], LO, HI);                                     \
    }
#define CAST_ROW(SE, ST, SS, SK, LO, HI) CAST_DST(CAST_CELL, ST, SS, SK)
CAST_SRC(CAST_ROW)

#define FIND_CELL(ST, SS, SK, DE, DT, DS, DK, LO, HI)                                      \
    case DE:                                                                               \
        return cast_##SS##_##DS;
#define FIND_ROW(SE, ST, SS, SK, LO, HI)                                                   \
    case SE:                                                                               \
        switch (dst) { CAST_DST(FIND_CELL, ST, SS, SK) }                                   \
        return NULL;

static cast_fn find_cast(int32_t src, int32_t dst) {
    switch (src) { CAST_SRC(FIND_ROW) }
    return NULL;
}

static int is_half(int32_t t) {
    return t == MINFER_DTYPE_FLOAT16 || t == MINFER_DTYPE_BFLOAT16;
}

static int castable(int32_t t) {
    return is_half(t) || t == MINFER_DTYPE_STRING || find_cast(t, MINFER_DTYPE_FLOAT) != NULL;
}

typedef struct cast_state {
    int32_t to; /* 0 for CastLike: the type of input 1 */
} cast_state;

static int32_t cast_type_from_name(const char *s) {
    static const struct {
        const char *name;
        int32_t t;
    } names[] = {
        {"FLOAT", MINFER_DTYPE_FLOAT},   {"UINT8", MINFER_DTYPE_UINT8},
        {"INT8", MINFER_DTYPE_INT8},     {"UINT16", MINFER_DTYPE_UINT16},
        {"INT16", MINFER_DTYPE_INT16},   {"INT32", MINFER_DTYPE_INT32},
        {"INT64", MINFER_DTYPE_INT64},   {"BOOL", MINFER_DTYPE_BOOL},
        {"FLOAT16", MINFER_DTYPE_FLOAT16}, {"DOUBLE", MINFER_DTYPE_DOUBLE},
        {"UINT32", MINFER_DTYPE_UINT32}, {"UINT64", MINFER_DTYPE_UINT64},
        {"BFLOAT16", MINFER_DTYPE_BFLOAT16}, {"STRING", MINFER_DTYPE_STRING},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(names[i].name, s) == 0)
            return names[i].t;
    return 0;
}

minfer_status cpu_prepare_cast(cpu_prep *p) {
    const minfer_value_desc *x = minfer_kit_input(p->node, 0);
    if (!x)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    cast_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    int32_t to;
    if (strcmp(p->node->op_type, "CastLike") == 0) {
        const minfer_value_desc *t = minfer_kit_input(p->node, 1);
        if (!t)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs target_type");
        to = t->dtype;
        st->to = 0;
    } else {
        int64_t v;
        const char *name;
        size_t len;
        if (p->ctx->api->attr_int(p->node, "to", &v))
            to = (int32_t)v;
        else if (p->ctx->api->attr_string(p->node, "to", &name, &len))
            to = cast_type_from_name(name); /* opset 1 names the type */
        else
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs 'to'");
        st->to = to;
    }
    if (to && !castable(to))
        return cpu_decline(p, "cast to type %s not supported", minfer_elem_name(to));
    if (x->dtype && !castable(x->dtype))
        return cpu_decline(p, "cast from type %s not supported", minfer_elem_name(x->dtype));
    if (cpu_has_attr(p, "saturate"))
        return cpu_decline(p, "'saturate' (float8) not supported");
    return MINFER_OK;
}

minfer_status cpu_compute_cast(const cpu_exec *e) {
    const cast_state *st = e->state;
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int32_t to = st->to, from = x->dtype;
    if (!to) {
        const minfer_tensor_view *t = cpu_input(e, 1);
        if (!t)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "missing target_type");
        to = t->dtype;
    }
    if (!castable(to) || !castable(from))
        return cpu_fail(e, MINFER_ERR_TYPE, "cast from %d to %d not supported", (int)from,
                        (int)to);
    void *y;
    minfer_status s = cpu_output(e, 0, to, x->rank, x->dims, &y);
    if (s)
        return s;
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    const char *src = cpu_data(x);
    /* Strings are formatted, parsed or duplicated (text.c): never copied
     * by pointer, which the host would free twice. */
    if (from == MINFER_DTYPE_STRING || to == MINFER_DTYPE_STRING)
        return cpu_cast_strings(e, x, to, y);
    if (from == to) {
        if (n)
            memcpy(y, src, n * minfer_elem_size(to));
        return MINFER_OK;
    }
    /* Half types go through float, a block at a time. */
    cast_fn direct = is_half(from) || is_half(to) ? NULL : find_cast(from, to);
    cast_fn to_f32 = is_half(from) ? NULL : find_cast(from, MINFER_DTYPE_FLOAT);
    cast_fn from_f32 = is_half(to) ? NULL : find_cast(MINFER_DTYPE_FLOAT, to);
    size_t es_in = minfer_elem_size(from), es_out = minfer_elem_size(to);
    if (direct) {
        direct(src, y, n);
        return MINFER_OK;
    }
    float tmp[256];
    for (size_t b = 0; b < n; b += 256) {
        size_t m = n - b < 256 ? n - b : 256;
        const void *in = src + b * es_in;
        if (from == MINFER_DTYPE_FLOAT16)
            for (size_t i = 0; i < m; i++)
                tmp[i] = minfer_half_to_float(((const uint16_t *)in)[i]);
        else if (from == MINFER_DTYPE_BFLOAT16)
            for (size_t i = 0; i < m; i++)
                tmp[i] = minfer_bf16_to_float(((const uint16_t *)in)[i]);
        else /* double -> half rounds twice, through float, as other runtimes do */
            to_f32(in, tmp, m);
        void *out = (char *)y + b * es_out;
        if (to == MINFER_DTYPE_FLOAT16)
            for (size_t i = 0; i < m; i++)
                ((uint16_t *)out)[i] = minfer_float_to_half(tmp[i]);
        else if (to == MINFER_DTYPE_BFLOAT16)
            for (size_t i = 0; i < m; i++)
                ((uint16_t *)out)[i] = minfer_float_to_bf16(tmp[i]);
        else
            from_f32(tmp, out, m);
    }
    return MINFER_OK;
}

/* ---- Constant, ConstantOfShape ------------------------------------------------- */

typedef struct constant_state {
    int32_t dtype, rank;
    int64_t dims[CPU_MAX_RANK];
    const void *data; /* attribute storage, lives as long as the session */
    size_t nbytes;
    union {
        float f;
        int64_t i;
        unsigned char bytes[8];
    } scalar; /* value_float / value_int, and ConstantOfShape's value */
} constant_state;

minfer_status cpu_prepare_constant(cpu_prep *p) {
    const minfer_host_api *api = p->ctx->api;
    const minfer_node_desc *n = p->node;
    constant_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    minfer_tensor_view t;
    const float *fs;
    const int64_t *is;
    size_t cnt;
    if (api->attr_tensor(n, "value", &t)) {
        if (t.dtype == MINFER_DTYPE_STRING || !minfer_elem_size(t.dtype))
            return cpu_decline(p, "value of type %s not supported", minfer_elem_name(t.dtype));
        if (t.rank < 0 || t.rank > CPU_MAX_RANK || t.layout != 0)
            return cpu_decline(p, "value tensor of rank %d not supported", (int)t.rank);
        st->dtype = t.dtype;
        st->rank = t.rank;
        memcpy(st->dims, t.dims, sizeof st->dims);
        st->data = cpu_data(&t);
        st->nbytes = (size_t)minfer_kit_numel(t.rank, t.dims) * minfer_elem_size(t.dtype);
        if (t.nbytes < st->nbytes)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "value tensor is truncated");
    } else if (api->attr_float(n, "value_float", &st->scalar.f)) {
        st->dtype = MINFER_DTYPE_FLOAT;
        st->nbytes = sizeof(float); /* data NULL: the scalar union holds it */
    } else if (api->attr_int(n, "value_int", &st->scalar.i)) {
        st->dtype = MINFER_DTYPE_INT64;
        st->nbytes = sizeof(int64_t);
    } else if (api->attr_floats(n, "value_floats", &fs, &cnt)) {
        st->dtype = MINFER_DTYPE_FLOAT;
        st->rank = 1;
        st->dims[0] = (int64_t)cnt;
        st->data = fs;
        st->nbytes = cnt * sizeof *fs;
    } else if (api->attr_ints(n, "value_ints", &is, &cnt)) {
        st->dtype = MINFER_DTYPE_INT64;
        st->rank = 1;
        st->dims[0] = (int64_t)cnt;
        st->data = is;
        st->nbytes = cnt * sizeof *is;
    } else if (cpu_has_attr(p, "sparse_value")) {
        return cpu_decline(p, "sparse_value not supported");
    } else if (cpu_has_attr(p, "value_string") || cpu_has_attr(p, "value_strings")) {
        return cpu_decline(p, "string constants not supported");
    } else {
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "no value attribute");
    }
    return MINFER_OK;
}

minfer_status cpu_compute_constant(const cpu_exec *e) {
    const constant_state *st = e->state;
    void *y;
    minfer_status s = cpu_output(e, 0, st->dtype, st->rank, st->dims, &y);
    if (!s && st->nbytes)
        memcpy(y, st->data ? st->data : (const void *)st->scalar.bytes, st->nbytes);
    return s;
}

minfer_status cpu_prepare_constant_of_shape(cpu_prep *p) {
    constant_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    if (!minfer_kit_input(p->node, 0))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs input shape");
    minfer_tensor_view t;
    st->dtype = MINFER_DTYPE_FLOAT;
    st->nbytes = sizeof(float);
    if (p->ctx->api->attr_tensor(p->node, "value", &t)) {
        size_t es = minfer_elem_size(t.dtype);
        if (!es || es > 8 || t.dtype == MINFER_DTYPE_STRING)
            return cpu_decline(p, "value of type %s not supported", minfer_elem_name(t.dtype));
        if (t.rank < 0 || minfer_kit_numel(t.rank, t.dims) != 1 || t.nbytes < es || t.layout != 0)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "value must have one element");
        st->dtype = t.dtype;
        st->nbytes = es;
        memcpy(st->scalar.bytes, cpu_data(&t), es);
    }
    return MINFER_OK;
}

minfer_status cpu_compute_constant_of_shape(const cpu_exec *e) {
    const constant_state *st = e->state;
    const minfer_tensor_view *sv = input0(e);
    if (!sv)
        return MINFER_ERR_RUNTIME;
    int64_t dims[CPU_MAX_RANK];
    size_t r;
    minfer_status s = cpu_read_ints(e, sv, "shape", dims, CPU_MAX_RANK, &r);
    if (s)
        return s;
    for (size_t i = 0; i < r; i++)
        if (dims[i] < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "negative dimension in shape");
    void *y;
    s = cpu_output(e, 0, st->dtype, (int32_t)r, dims, &y);
    if (s)
        return s;
    size_t n = (size_t)minfer_kit_numel((int32_t)r, dims);
    for (size_t i = 0; i < n; i++)
        memcpy((char *)y + i * st->nbytes, st->scalar.bytes, st->nbytes);
    return MINFER_OK;
}

/* ---- Expand ----------------------------------------------------------------- */

minfer_status cpu_prepare_expand(cpu_prep *p) {
    if (!minfer_kit_input(p->node, 0) || !minfer_kit_input(p->node, 1))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs input and shape");
    return MINFER_OK;
}

minfer_status cpu_compute_expand(const cpu_exec *e) {
    const minfer_tensor_view *x = input0(e), *sv = cpu_input(e, 1);
    if (!x || !sv)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int64_t shape[CPU_MAX_RANK], od[CPU_MAX_RANK];
    size_t n;
    int32_t r;
    minfer_status s = cpu_read_ints(e, sv, "shape", shape, CPU_MAX_RANK, &n);
    if (s)
        return s;
    if (cpu_broadcast_shape(x->rank, x->dims, (int32_t)n, shape, &r, od))
        return cpu_fail(e, MINFER_ERR_SHAPE, "shape does not broadcast with the input");
    void *y;
    s = cpu_output(e, 0, x->dtype, r, od, &y);
    if (s)
        return s;
    return cpu_broadcast_copy(e, x, r, od, y);
}

/* ---- Range ------------------------------------------------------------------ */

minfer_status cpu_prepare_range(cpu_prep *p) {
    for (size_t i = 0; i < 3; i++) {
        const minfer_value_desc *d = minfer_kit_input(p->node, i);
        if (!d)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs start, limit and delta");
        if (d->dtype && d->dtype != p->node->inputs[0].dtype)
            return cpu_decline(p, "input types differ");
    }
    return MINFER_OK;
}

#define RANGE(E, T, S)                                                                     \
    static minfer_status range_##S(const cpu_exec *e, const T *a, const T *l, const T *d) { \
        T start = *a, limit = *l, delta = *d;                                              \
        if (delta == 0)                                                                    \
            return cpu_fail(e, MINFER_ERR_RUNTIME, "delta is 0");                          \
        double span = ceil(((double)limit - (double)start) / (double)delta);               \
        /* Checked before the conversion: an infinite span has no int64. */                \
        if (span > 1e12)                                                                   \
            return cpu_fail(e, MINFER_ERR_LIMIT, "range of %g elements", span);            \
        int64_t n = span > 0 ? (int64_t)span : 0;                                          \
        T *y;                                                                              \
        minfer_status s = cpu_output(e, 0, E, 1, &n, (void **)&y);                         \
        for (int64_t i = 0; !s && i < n; i++)                                              \
            y[i] = (T)(start + (T)i * delta);                                              \
        return s;                                                                          \
    }
CPU_FLOAT_TYPES(RANGE)
RANGE(MINFER_DTYPE_INT16, int16_t, i16)
RANGE(MINFER_DTYPE_INT32, int32_t, i32)

/* int64: exact integer arithmetic (double would round large bounds). */
static minfer_status range_i64(const cpu_exec *e, const int64_t *a, const int64_t *l,
                               const int64_t *d) {
    int64_t start = *a, limit = *l, delta = *d, n = 0;
    if (delta == 0)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "delta is 0");
    /* ceil(span / |delta|) as (span - 1) / |delta| + 1 in uint64: span may
     * be up to 2^64 - 1, where span + |delta| - 1 would wrap. */
    uint64_t count = 0;
    if (delta > 0 && limit > start)
        count = ((uint64_t)limit - (uint64_t)start - 1) / (uint64_t)delta + 1;
    else if (delta < 0 && limit < start)
        count = ((uint64_t)start - (uint64_t)limit - 1) / (0 - (uint64_t)delta) + 1;
    if (count > INT64_MAX)
        return cpu_fail(e, MINFER_ERR_LIMIT, "range of %llu elements", (unsigned long long)count);
    n = (int64_t)count;
    int64_t *y;
    minfer_status s = cpu_output(e, 0, MINFER_DTYPE_INT64, 1, &n, (void **)&y);
    for (int64_t i = 0; !s && i < n; i++)
        y[i] = (int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)delta);
    return s;
}

minfer_status cpu_compute_range(const cpu_exec *e) {
    const minfer_tensor_view *v[3];
    for (size_t i = 0; i < 3; i++) {
        v[i] = cpu_input(e, i);
        if (!v[i] || v[i]->dtype != e->args->inputs[0].dtype ||
            minfer_kit_numel(v[i]->rank, v[i]->dims) != 1)
            return cpu_fail(e, MINFER_ERR_SHAPE, "input %zu must be a scalar of one type", i);
    }
    switch (v[0]->dtype) {
#define CASE(E, T, S)                                                                      \
    case E:                                                                                \
        return range_##S(e, cpu_data(v[0]), cpu_data(v[1]), cpu_data(v[2]));
        CPU_FLOAT_TYPES(CASE)
        CASE(MINFER_DTYPE_INT16, int16_t, i16)
        CASE(MINFER_DTYPE_INT32, int32_t, i32)
        CASE(MINFER_DTYPE_INT64, int64_t, i64)
#undef CASE
    }
    return cpu_fail(e, MINFER_ERR_TYPE, "element type %s not supported",
                    minfer_elem_name(v[0]->dtype));
}

/* ---- Tile ------------------------------------------------------------------- */

minfer_status cpu_prepare_tile(cpu_prep *p) {
    if (!minfer_kit_input(p->node, 0) || !minfer_kit_input(p->node, 1))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs input and repeats");
    return MINFER_OK;
}

minfer_status cpu_compute_tile(const cpu_exec *e) {
    const minfer_tensor_view *x = input0(e), *rv = cpu_input(e, 1);
    if (!x || !rv)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int64_t rep[CPU_MAX_RANK], od[CPU_MAX_RANK];
    size_t n;
    minfer_status s = cpu_read_ints(e, rv, "repeats", rep, CPU_MAX_RANK, &n);
    if (s)
        return s;
    if (n != (size_t)x->rank)
        return cpu_fail(e, MINFER_ERR_SHAPE, "repeats has %zu entries for rank %d", n,
                        (int)x->rank);
    for (int d = 0; d < x->rank; d++) {
        if (rep[d] < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "negative repeat");
        if (minfer_i64_mul(x->dims[d], rep[d], &od[d]))
            return cpu_fail(e, MINFER_ERR_LIMIT, "dim %d: %lld repeated %lld times overflows", d,
                            (long long)x->dims[d], (long long)rep[d]);
    }
    void *y;
    s = cpu_output(e, 0, x->dtype, x->rank, od, &y);
    if (s)
        return s;
    size_t total = (size_t)minfer_kit_numel(x->rank, od), es = minfer_elem_size(x->dtype);
    if (total == 0)
        return MINFER_OK;
    if (x->rank == 0) {
        memcpy(y, cpu_data(x), es);
        return MINFER_OK;
    }
    /* Each output row (last dim) is the matching input row repeated. */
    int last = x->rank - 1;
    size_t in_row = (size_t)x->dims[last], rows = total / (size_t)od[last];
    int64_t str[CPU_MAX_RANK];
    contiguous_strides(x->rank, x->dims, str);
    const char *src = cpu_data(x);
    char *dst = y;
    for (size_t row = 0; row < rows; row++) {
        size_t r = row, off = 0;
        for (int d = last - 1; d >= 0; d--) {
            off += (r % (size_t)od[d]) % (size_t)x->dims[d] * (size_t)str[d];
            r /= (size_t)od[d];
        }
        for (int64_t k = 0; k < rep[last]; k++)
            memcpy(dst + (row * (size_t)od[last] + (size_t)k * in_row) * es, src + off * es,
                   in_row * es);
    }
    return MINFER_OK;
}

/* ---- Split ------------------------------------------------------------------ */

typedef struct split_state {
    int64_t axis;
    int64_t num_outputs; /* opset 18; 0 when absent */
    size_t n;            /* 'split' attribute entries (before opset 13) */
    int has_split;
    int64_t split[];     /* n_outputs entries */
} split_state;

minfer_status cpu_prepare_split(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    if (!minfer_kit_input(n, 0) || n->n_outputs < 1)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input and outputs");
    split_state *st = cpu_state(p, sizeof *st + n->n_outputs * sizeof(int64_t));
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = cpu_attr_int(p, "axis", 0);
    st->num_outputs = cpu_attr_int(p, "num_outputs", 0);
    if (st->num_outputs && (size_t)st->num_outputs != n->n_outputs)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "num_outputs differs from the output count");
    if (p->since < 13) {
        const int64_t *v;
        size_t cnt;
        if (p->ctx->api->attr_ints(n, "split", &v, &cnt)) {
            if (cnt != n->n_outputs)
                return cpu_prep_fail(p, MINFER_ERR_MODEL, "'split' has %zu entries for %zu outputs",
                                     cnt, n->n_outputs);
            memcpy(st->split, v, cnt * sizeof *v);
            st->n = cnt;
            st->has_split = 1;
        }
    }
    return MINFER_OK;
}

/* sizes: room for one entry per output. */
static minfer_status split_into(const cpu_exec *e, const minfer_tensor_view *x, int axis,
                                int64_t *sizes) {
    const split_state *st = e->state;
    const minfer_tensor_view *sv = cpu_input(e, 1);
    size_t nout = e->args->n_outputs;
    int64_t dim = x->dims[axis];
    if (st->has_split) {
        memcpy(sizes, st->split, nout * sizeof sizes[0]);
    } else if (sv && sv->data) {
        size_t cnt;
        minfer_status s = cpu_read_ints(e, sv, "split", sizes, nout, &cnt);
        if (s)
            return s;
        if (cnt != nout)
            return cpu_fail(e, MINFER_ERR_SHAPE, "split has %zu entries for %zu outputs", cnt,
                            nout);
    } else {
        /* Equal parts; from opset 18 the last one may be smaller. */
        int64_t part = (dim + (int64_t)nout - 1) / (int64_t)nout;
        if (!st->num_outputs && dim % (int64_t)nout)
            return cpu_fail(e, MINFER_ERR_SHAPE, "dim %lld does not split into %zu equal parts",
                            (long long)dim, nout);
        for (size_t i = 0; i < nout; i++) {
            int64_t left = dim - part * (int64_t)i;
            sizes[i] = left < 0 ? 0 : left < part ? left : part;
        }
    }
    int64_t total = 0;
    for (size_t i = 0; i < nout; i++) {
        if (sizes[i] < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "negative split size");
        total += sizes[i];
    }
    if (total != dim)
        return cpu_fail(e, MINFER_ERR_SHAPE, "split sizes add up to %lld, not %lld",
                        (long long)total, (long long)dim);
    size_t es = minfer_elem_size(x->dtype);
    size_t outer = (size_t)minfer_kit_numel(axis, x->dims);
    size_t inner = (size_t)minfer_kit_numel(x->rank - axis - 1, x->dims + axis + 1) * es;
    const char *src = cpu_data(x);
    size_t at = 0, in_row = (size_t)dim * inner;
    for (size_t i = 0; i < nout; i++) {
        int64_t od[CPU_MAX_RANK];
        memcpy(od, x->dims, sizeof od);
        od[axis] = sizes[i];
        size_t row = (size_t)sizes[i] * inner;
        if (minfer_kit_output_wanted(e->args->node, i)) {
            void *y;
            minfer_status s = cpu_output(e, i, x->dtype, x->rank, od, &y);
            if (s)
                return s;
            for (size_t o = 0; o < outer && row; o++)
                memcpy((char *)y + o * row, src + o * in_row + at, row);
        }
        at += row;
    }
    return MINFER_OK;
}

minfer_status cpu_compute_split(const cpu_exec *e) {
    const split_state *st = e->state;
    const minfer_tensor_view *x = input0(e);
    if (!x)
        return MINFER_ERR_RUNTIME;
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range", (long long)st->axis);
    size_t nout = e->args->n_outputs;
    int64_t sizes_s[64];
    int64_t *sizes = nout <= 64 ? sizes_s : malloc(nout * sizeof *sizes);
    if (!sizes)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory for %zu outputs", nout);
    minfer_status s = split_into(e, x, axis, sizes);
    if (sizes != sizes_s)
        free(sizes);
    return s;
}
