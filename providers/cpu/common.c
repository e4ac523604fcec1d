/*
 * Helpers shared by the CPU kernels: error reporting, attribute access
 * (both through the provider kit), output checking and numpy broadcasting.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---- Errors ------------------------------------------------------------- */

static minfer_status vprep_msg(cpu_prep *p, minfer_status st, const char *fmt, va_list ap) {
    minfer_kit_vdecline(p->err, p->err_size, p->node->op_type, fmt, ap);
    return st;
}

minfer_status cpu_decline(cpu_prep *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    minfer_status st = vprep_msg(p, MINFER_ERR_UNSUPPORTED, fmt, ap);
    va_end(ap);
    return st;
}

minfer_status cpu_prep_fail(cpu_prep *p, minfer_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprep_msg(p, st, fmt, ap);
    va_end(ap);
    return st;
}

minfer_status cpu_fail(const cpu_exec *e, minfer_status st, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    minfer_kit_vfail(e->ctx->api, e->ctx->host, "cpu", e->args->node, st, fmt, ap);
    va_end(ap);
    return st;
}

void *cpu_host_malloc(const minfer_host_api *api, void *host, size_t bytes) {
    if (MINFER_HOST_HAS(api, alloc))
        return api->alloc(host, bytes ? bytes : 1);
    return malloc(bytes ? bytes : 1);
}

void *cpu_malloc(const cpu_ctx *ctx, size_t bytes) {
    return cpu_host_malloc(ctx->api, ctx->host, bytes);
}

void *cpu_calloc(const cpu_ctx *ctx, size_t n, size_t size) {
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = cpu_malloc(ctx, n * size);
    if (p)
        memset(p, 0, (n * size) != 0 ? n * size : 1);
    return p;
}

/* Frees prepare's state unless it lives in check_state. */
void cpu_state_free(cpu_prep *p) {
    if (p->state != (void *)p->check_state)
        free(p->state);
    p->state = NULL;
}

void *cpu_state(cpu_prep *p, size_t size) {
    cpu_state_free(p);
    if (!p->prep && size <= sizeof p->check_state) {
        memset(p->check_state, 0, size);
        return p->state = p->check_state;
    }
    p->state = cpu_calloc(p->ctx, 1, size);
    if (!p->state)
        cpu_prep_fail(p, MINFER_ERR_NOMEM, "out of memory for node state");
    return p->state;
}

/* ---- Attributes --------------------------------------------------------- */

int64_t cpu_attr_int(const cpu_prep *p, const char *name, int64_t dflt) {
    return minfer_kit_attr_int(p->ctx->api, p->node, name, dflt);
}

float cpu_attr_float(const cpu_prep *p, const char *name, float dflt) {
    return minfer_kit_attr_float(p->ctx->api, p->node, name, dflt);
}

const char *cpu_attr_str(const cpu_prep *p, const char *name, const char *dflt) {
    return minfer_kit_attr_str(p->ctx->api, p->node, name, dflt);
}

int cpu_attr_strs(cpu_prep *p, const char *name, const char *const **out, size_t *count) {
    return minfer_kit_attr_strings(p->ctx->api, p->node, name, out, count, p->err, p->err_size);
}

int cpu_has_attr(const cpu_prep *p, const char *name) {
    return minfer_kit_has_attr(p->ctx->api, p->node, name);
}

int cpu_attr_ints(cpu_prep *p, const char *name, int64_t *out, size_t cap, size_t *count) {
    return minfer_kit_attr_ints(p->ctx->api, p->node, name, out, cap, count, p->err,
                                p->err_size);
}

/* ---- Tensors ------------------------------------------------------------ */

const minfer_tensor_view *cpu_input(const cpu_exec *e, size_t i) {
    if (i >= e->args->n_inputs)
        return NULL;
    const minfer_tensor_view *v = minfer_kit_view_input(e->args, i);
    return v->rank < 0 ? NULL : v;
}

static void fmt_dims(char *buf, size_t size, int32_t rank, const int64_t *dims) {
    size_t n = 0;
    n += (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < rank && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, i ? ",%lld" : "%lld", (long long)dims[i]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
}

minfer_status cpu_output(const cpu_exec *e, size_t i, int32_t dtype, int32_t rank,
                         const int64_t *dims, void **data) {
    const minfer_exec_args *a = e->args;
    *data = NULL;
    if (i >= a->n_outputs)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "output %zu not given by the host", i);
    if (rank < 0 || rank > CPU_MAX_RANK)
        return cpu_fail(e, MINFER_ERR_LIMIT, "output %zu: rank %d not supported", i, (int)rank);
    for (int32_t d = 0; d < rank; d++)
        if (dims[d] < 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "output %zu: negative dimension", i);
    minfer_tensor_view *o = &a->outputs[i];
    /* A data-dependent output whose rank the host inferred but not every
     * dimension (StringNormalizer's [?]) comes with dims of -1 and no
     * storage: it is allocated here like one of unknown rank. */
    int unknown = o->rank < 0;
    for (int32_t d = 0; !unknown && d < o->rank; d++)
        unknown = o->dims[d] < 0 && !o->data;
    if (unknown) {
        /* alloc_output takes no element type: when the host did not infer
         * one either, the view's dtype tells it (the host sizes from it). */
        if (o->dtype == 0)
            o->dtype = dtype;
        minfer_status st = e->wrun ? cpu_widen_alloc(e, i, rank, dims)
                                   : e->ctx->api->alloc_output(a->run, i, rank, dims);
        if (st != MINFER_OK)
            return st;
    }
    /* The kernel writes need bytes: a shape whose count does not fit is
     * refused here, whatever the host planned (alloc_output, above,
     * refuses it first, naming the value). */
    size_t need;
    if (minfer_dims_bytes(dtype, dims, rank, &need) != MINFER_OK) {
        char want[160];
        fmt_dims(want, sizeof want, rank, dims);
        return cpu_fail(e, MINFER_ERR_LIMIT, "output %zu of shape %s has more bytes than fit in "
                        "memory", i, want);
    }
    if (o->rank != rank || (rank > 0 && memcmp(o->dims, dims, (size_t)rank * sizeof *dims) != 0)) {
        char want[160], got[160];
        fmt_dims(want, sizeof want, rank, dims);
        fmt_dims(got, sizeof got, o->rank, o->dims);
        return cpu_fail(e, MINFER_ERR_SHAPE, "output %zu has shape %s, the kernel computes %s", i,
                        got, want);
    }
    if (o->dtype != 0 && o->dtype != dtype)
        return cpu_fail(e, MINFER_ERR_TYPE, "output %zu has element type %s, expected %s", i,
                        minfer_elem_name(o->dtype), minfer_elem_name(dtype));
    if (o->layout != 0)
        return cpu_fail(e, MINFER_ERR_UNSUPPORTED, "output %zu has a non-plain layout", i);
    if (o->nbytes < need || (need && !o->data))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "output %zu buffer is %zu bytes, %zu needed", i,
                        o->nbytes, need);
    *data = need ? cpu_data(o) : NULL;
    return MINFER_OK;
}

minfer_status cpu_read_ints(const cpu_exec *e, const minfer_tensor_view *v, const char *what,
                            int64_t *out, size_t cap, size_t *count) {
    *count = 0;
    if (v->dtype != MINFER_DTYPE_INT64 && v->dtype != MINFER_DTYPE_INT32)
        return cpu_fail(e, MINFER_ERR_TYPE, "%s must be int32 or int64", what);
    int64_t n = minfer_kit_numel(v->rank, v->dims);
    if (n < 0 || (size_t)n > cap)
        return cpu_fail(e, MINFER_ERR_LIMIT, "%s has %lld entries, at most %zu supported", what,
                        (long long)n, cap);
    const void *d = cpu_data(v);
    for (int64_t i = 0; i < n; i++)
        out[i] = v->dtype == MINFER_DTYPE_INT64 ? ((const int64_t *)d)[i]
                                                : ((const int32_t *)d)[i];
    *count = (size_t)n;
    return MINFER_OK;
}

minfer_status cpu_read_scalar(const cpu_exec *e, const minfer_tensor_view *v, const char *what,
                              double *out) {
    if (minfer_kit_numel(v->rank, v->dims) != 1)
        return cpu_fail(e, MINFER_ERR_SHAPE, "%s must have one element", what);
    const void *d = cpu_data(v);
    switch (v->dtype) {
#define READ(E, T, S)                                                                      \
    case E:                                                                                \
        *out = (double)*(const T *)d;                                                      \
        return MINFER_OK;
        CPU_NUM_TYPES(READ)
#undef READ
    case MINFER_DTYPE_FLOAT16:
        *out = minfer_half_to_float(*(const uint16_t *)d);
        return MINFER_OK;
    case MINFER_DTYPE_BFLOAT16:
        *out = minfer_bf16_to_float(*(const uint16_t *)d);
        return MINFER_OK;
    default:
        return cpu_fail(e, MINFER_ERR_TYPE, "%s has an unsupported element type", what);
    }
}

/* ---- Threads ------------------------------------------------------------ */

/* In a compute (ctx->run set) through the run-taking members, which split
 * over what the run's scheduler gives the node; else (prepare, or an older
 * host) through the session's. */
int cpu_threads(const cpu_ctx *ctx) {
    int n = ctx->run && MINFER_HOST_HAS(ctx->api, run_num_threads)
                ? ctx->api->run_num_threads(ctx->run)
            : ctx->api->num_threads ? ctx->api->num_threads(ctx->host)
                                    : 1;
    return n < 1 ? 1 : n;
}

void cpu_parallel(const cpu_ctx *ctx, size_t n, size_t grain, minfer_range_fn fn, void *arg) {
    if (n == 0)
        return;
    if (grain < 1)
        grain = 1;
    if (n <= grain || !ctx->api->parallel_for || cpu_threads(ctx) == 1)
        fn(arg, 0, n);
    else if (ctx->run && MINFER_HOST_HAS(ctx->api, run_parallel_for))
        ctx->api->run_parallel_for(ctx->run, n, grain, fn, arg);
    else
        ctx->api->parallel_for(ctx->host, n, grain, fn, arg);
}

/* ---- Broadcasting ------------------------------------------------------- */

int cpu_broadcast_shape(int32_t ra, const int64_t *da, int32_t rb, const int64_t *db,
                        int32_t *rank, int64_t *dims) {
    int32_t r = ra > rb ? ra : rb;
    int64_t tmp[CPU_MAX_RANK];
    if (r > CPU_MAX_RANK)
        return -1;
    for (int32_t i = 0; i < r; i++) {
        int32_t ia = i - (r - ra), ib = i - (r - rb);
        int64_t a = ia >= 0 ? da[ia] : 1, b = ib >= 0 ? db[ib] : 1;
        if (a == b || b == 1)
            tmp[i] = a;
        else if (a == 1)
            tmp[i] = b;
        else
            return -1;
    }
    memcpy(dims, tmp, (size_t)r * sizeof *dims);
    *rank = r;
    return 0;
}

int cpu_bcast_init(cpu_bcast *b, int n_in, const int32_t *in_rank,
                   const int64_t *const *in_dims, int32_t out_rank, const int64_t *out_dims) {
    int64_t dims[CPU_MAX_RANK], str[CPU_BCAST_MAX_IN][CPU_MAX_RANK];
    int r = 0;
    memset(b, 0, sizeof *b);
    b->n_in = n_in;
    if (n_in > CPU_BCAST_MAX_IN || out_rank > CPU_MAX_RANK)
        return -1;
    for (int k = 0; k < n_in; k++)
        if (in_rank[k] > out_rank)
            return -1;
    /* Per-input element strides over the output's dims; size-1 output dims
     * are dropped as they never move. */
    for (int32_t d = 0; d < out_rank; d++) {
        for (int k = 0; k < n_in; k++) {
            int32_t j = d - (out_rank - in_rank[k]);
            int64_t id = j >= 0 ? in_dims[k][j] : 1;
            if (id != out_dims[d] && id != 1)
                return -1;
        }
        if (out_dims[d] == 1)
            continue;
        dims[r] = out_dims[d];
        for (int k = 0; k < n_in; k++) {
            int32_t j = d - (out_rank - in_rank[k]);
            int64_t id = j >= 0 ? in_dims[k][j] : 1, s = 1;
            /* A dim the input lacks (j < 0) is a broadcast one: stride 0. */
            if (id != 1)
                for (int32_t q = j + 1; q < in_rank[k]; q++)
                    s = cpu_stride_mul(s, in_dims[k][q]);
            str[k][r] = id == 1 ? 0 : s;
        }
        r++;
    }
    if (r == 0) {
        dims[0] = 1;
        for (int k = 0; k < n_in; k++)
            str[k][0] = 0;
        r = 1;
    }
    /* Merge dim d into d+1 when every input is laid out contiguously across them. */
    int m = r - 1;
    b->dims[m] = dims[r - 1];
    for (int k = 0; k < n_in; k++)
        b->stride[k][m] = str[k][r - 1];
    for (int d = r - 2; d >= 0; d--) {
        int merge = 1;
        for (int k = 0; k < n_in; k++)
            if (str[k][d] != cpu_stride_mul(b->stride[k][m], b->dims[m]))
                merge = 0;
        if (merge) {
            b->dims[m] = cpu_stride_mul(b->dims[m], dims[d]);
        } else {
            m--;
            b->dims[m] = dims[d];
            for (int k = 0; k < n_in; k++)
                b->stride[k][m] = str[k][d];
        }
    }
    /* Shift to start at 0. */
    b->rank = r - m;
    if (m > 0) {
        memmove(b->dims, b->dims + m, (size_t)b->rank * sizeof b->dims[0]);
        for (int k = 0; k < n_in; k++)
            memmove(b->stride[k], b->stride[k] + m, (size_t)b->rank * sizeof b->stride[k][0]);
    }
    for (int k = 0; k < n_in; k++)
        b->step[k] = (size_t)b->stride[k][b->rank - 1];
    return 0;
}

/* Long rows are cut into chunks so that one big row still spreads over threads. */
#define BCAST_CHUNK 8192

typedef struct bcast_job {
    const cpu_bcast *b;
    cpu_bcast_fn fn;
    void *arg;
    size_t len, pieces;
} bcast_job;

static void bcast_range(void *arg, size_t begin, size_t end) {
    const bcast_job *j = arg;
    const cpu_bcast *b = j->b;
    for (size_t it = begin; it < end; it++) {
        size_t row = it / j->pieces, piece = it % j->pieces;
        size_t off[CPU_BCAST_MAX_IN] = {0};
        size_t r = row;
        for (int d = b->rank - 2; d >= 0; d--) {
            size_t idx = r % (size_t)b->dims[d];
            r /= (size_t)b->dims[d];
            for (int k = 0; k < b->n_in; k++)
                off[k] += idx * (size_t)b->stride[k][d];
        }
        size_t start = piece * BCAST_CHUNK;
        size_t n = j->len - start < BCAST_CHUNK ? j->len - start : BCAST_CHUNK;
        for (int k = 0; k < b->n_in; k++)
            off[k] += start * b->step[k];
        j->fn(j->arg, row * j->len + start, off, n, b->step);
    }
}

void cpu_bcast_run(const cpu_ctx *ctx, const cpu_bcast *b, cpu_bcast_fn fn, void *arg) {
    size_t rows = 1;
    for (int d = 0; d < b->rank - 1; d++)
        rows *= (size_t)b->dims[d];
    bcast_job j = {b, fn, arg, (size_t)b->dims[b->rank - 1], 1};
    if (j.len == 0 || rows == 0)
        return;
    j.pieces = (j.len + BCAST_CHUNK - 1) / BCAST_CHUNK;
    size_t per = j.len < BCAST_CHUNK ? j.len : BCAST_CHUNK;
    cpu_parallel(ctx, rows * j.pieces, (16384 + per - 1) / per, bcast_range, &j);
}

/* ---- Generic element access ---------------------------------------------- */

double cpu_get(const void *p, int32_t dtype, size_t i) {
    switch (dtype) {
#define GET(E, T, S)                                                                       \
    case E:                                                                                \
        return (double)((const T *)p)[i];
        CPU_NUM_TYPES(GET)
#undef GET
    case MINFER_DTYPE_BOOL: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
    case MINFER_DTYPE_FLOAT16: return minfer_half_to_float(((const uint16_t *)p)[i]);
    case MINFER_DTYPE_BFLOAT16: return minfer_bf16_to_float(((const uint16_t *)p)[i]);
    default: return 0;
    }
}

/* Converts to an integer type, saturating, NaN to 0 (C leaves these undefined). */
#define SAT(T, lo, hi, v)                                                                  \
    ((v) != (v) ? (T)0 : (v) <= (double)(lo) ? (T)(lo) : (v) >= (double)(hi) ? (T)(hi) : (T)(v))

void cpu_set(void *p, int32_t dtype, size_t i, double v) {
    switch (dtype) {
    case MINFER_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case MINFER_DTYPE_DOUBLE: ((double *)p)[i] = v; break;
    case MINFER_DTYPE_INT8: ((int8_t *)p)[i] = SAT(int8_t, INT8_MIN, INT8_MAX, v); break;
    case MINFER_DTYPE_INT16: ((int16_t *)p)[i] = SAT(int16_t, INT16_MIN, INT16_MAX, v); break;
    case MINFER_DTYPE_INT32: ((int32_t *)p)[i] = SAT(int32_t, INT32_MIN, INT32_MAX, v); break;
    case MINFER_DTYPE_INT64: ((int64_t *)p)[i] = SAT(int64_t, INT64_MIN, INT64_MAX, v); break;
    case MINFER_DTYPE_UINT8: ((uint8_t *)p)[i] = SAT(uint8_t, 0, UINT8_MAX, v); break;
    case MINFER_DTYPE_UINT16: ((uint16_t *)p)[i] = SAT(uint16_t, 0, UINT16_MAX, v); break;
    case MINFER_DTYPE_UINT32: ((uint32_t *)p)[i] = SAT(uint32_t, 0, UINT32_MAX, v); break;
    case MINFER_DTYPE_UINT64: ((uint64_t *)p)[i] = SAT(uint64_t, 0, UINT64_MAX, v); break;
    case MINFER_DTYPE_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case MINFER_DTYPE_FLOAT16: ((uint16_t *)p)[i] = minfer_float_to_half((float)v); break;
    case MINFER_DTYPE_BFLOAT16: ((uint16_t *)p)[i] = minfer_float_to_bf16((float)v); break;
    default: break;
    }
}

void cpu_strides(int32_t rank, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int32_t d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s = cpu_stride_mul(s, dims[d]);
    }
}

int cpu_is_float(int32_t dtype) {
    return dtype == MINFER_DTYPE_FLOAT || dtype == MINFER_DTYPE_DOUBLE ||
           dtype == MINFER_DTYPE_FLOAT16 || dtype == MINFER_DTYPE_BFLOAT16;
}
