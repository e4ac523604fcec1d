/*
 * Host tensors: checked size arithmetic, creation and the
 * public tensor API. Conversion from and to ONNX TensorProto and .pb files
 * is tensor_proto.c; the allocation wrappers are util/mem.c.
 *
 * A STRING tensor's elements are char * (NUL-terminated). An owning tensor
 * owns them and frees them with its data; a freshly created one holds NULL
 * pointers, which every function here treats as "".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/internal.h"
#include "onnx.proto3.pb-c.h"


static void *pb_alloc(void *data, size_t n) {
    void *p = mf_malloc(n);
    if (!p)
        *(int *)data = 1;
    return p;
}

static void pb_free(void *data, void *p) {
    (void)data;
    free(p);
}

void mf_pb_allocator_init(void *allocator, int *nomem) {
    ProtobufCAllocator *a = allocator;
    *nomem = 0;
    a->alloc = pb_alloc;
    a->free = pb_free;
    a->allocator_data = nomem;
}

/* ---- Sizes -------------------------------------------------------------- */

minfer_status mf_numel(const int64_t *dims, int32_t rank, int64_t *out) {
    if (rank < 0 || rank > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_LIMIT, "rank %d is not in 0..%d", (int)rank, MINFER_MAX_RANK);
    if (rank > 0 && !dims)
        return mf_error(MINFER_ERR_INVALID_ARG, "dims is NULL for rank %d", (int)rank);
    for (int32_t i = 0; i < rank; i++)
        if (dims[i] < 0)
            return mf_error(MINFER_ERR_LIMIT, "dimension %d is negative (%lld)", (int)i,
                            (long long)dims[i]);
    if (minfer_dims_numel(dims, rank, out) != MINFER_OK) {
        char shape[160];
        return mf_error(MINFER_ERR_LIMIT, "the element count of shape %s overflows",
                        mf_shape_str(dims, rank, shape, sizeof shape));
    }
    return MINFER_OK;
}

minfer_status mf_nbytes(int32_t dtype, int64_t numel, size_t *out) {
    size_t es = minfer_dtype_size((minfer_dtype)dtype);
    if (es == 0)
        return mf_error(MINFER_ERR_UNSUPPORTED, "element type %d is not supported", (int)dtype);
    if (numel < 0)
        return mf_error(MINFER_ERR_LIMIT, "negative element count %lld", (long long)numel);
    if ((uint64_t)numel > SIZE_MAX || minfer_size_mul((size_t)numel, es, out) != MINFER_OK)
        return mf_error(MINFER_ERR_LIMIT, "%lld elements of %s overflow the address space",
                        (long long)numel, minfer_dtype_name((minfer_dtype)dtype));
    return MINFER_OK;
}

int mf_view_static(const minfer_tensor_view *v) {
    if (v->rank < 0)
        return 0;
    for (int d = 0; d < v->rank; d++)
        if (v->dims[d] < 0)
            return 0;
    return 1;
}

size_t mf_view_bytes(const minfer_tensor_view *v) {
    size_t b;
    /* 0 for a view whose shape or type is not known (nothing is stored
     * yet); SIZE_MAX, never 0 or a wrapped count, for a shape that does
     * not fit: an allocation or a limit check then fails instead of
     * planning a small buffer. Sizes that can be that large go through
     * mf_value_bytes, which says why. */
    if (!mf_view_static(v) || minfer_elem_size(v->dtype) == 0)
        return 0;
    return minfer_view_nbytes(v, &b) == MINFER_OK ? b : SIZE_MAX;
}

/* ---- Tensors ------------------------------------------------------------ */

/* Fills the view's type and shape and computes the byte size. */
minfer_status mf_tensor_init_view(minfer_tensor *t, int32_t dtype, const int64_t *dims,
                                  int32_t rank, int64_t *numel, size_t *nbytes) {
    minfer_status st = mf_numel(dims, rank, numel);
    if (st != MINFER_OK)
        return st;
    st = mf_nbytes(dtype, *numel, nbytes);
    if (st != MINFER_OK)
        return st;
    t->view.kind = MINFER_VALUE_TENSOR;
    t->view.dtype = dtype;
    t->view.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        t->view.dims[i] = dims[i];
    t->view.offset = 0;
    t->view.layout = 0;
    t->view.nbytes = *nbytes;
    return MINFER_OK;
}

minfer_status mf_tensor_new(int32_t dtype, const int64_t *dims, int32_t rank, minfer_tensor **out) {
    int64_t numel = 0;
    size_t nbytes = 0;
    minfer_tensor *t = mf_calloc(1, sizeof *t);
    if (!t)
        return mf_error(MINFER_ERR_NOMEM, "out of memory for a tensor");
    minfer_status st = mf_tensor_init_view(t, dtype, dims, rank, &numel, &nbytes);
    if (st != MINFER_OK) {
        free(t);
        return st;
    }
    t->view.data = mf_calloc(1, nbytes);
    if (!t->view.data) {
        free(t);
        return mf_error(MINFER_ERR_NOMEM, "out of memory for a tensor of %zu bytes", nbytes);
    }
    t->owns_data = 1;
    *out = t;
    return MINFER_OK;
}

minfer_status minfer_tensor_create(minfer_dtype dtype, const int64_t *dims, size_t rank,
                                   minfer_tensor **out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_tensor_create: out is NULL");
    *out = NULL;
    if (rank > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_LIMIT, "minfer_tensor_create: rank %zu exceeds %d", rank,
                        MINFER_MAX_RANK);
    if (rank && !dims)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_tensor_create: dims is NULL");
    minfer_status st = mf_tensor_new((int32_t)dtype, dims, (int32_t)rank, out);
    if (st != MINFER_OK)
        return mf_error_prefix(st, "minfer_tensor_create");
    return MINFER_OK;
}

minfer_status minfer_tensor_wrap(minfer_dtype dtype, const int64_t *dims, size_t rank, void *data,
                                 size_t data_bytes, minfer_tensor **out) {
    int64_t numel = 0;
    size_t nbytes = 0;
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_tensor_wrap: out is NULL");
    *out = NULL;
    if (rank > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_LIMIT, "minfer_tensor_wrap: rank %zu exceeds %d", rank,
                        MINFER_MAX_RANK);
    if (rank && !dims)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_tensor_wrap: dims is NULL");
    minfer_tensor *t = mf_calloc(1, sizeof *t);
    if (!t)
        return mf_error(MINFER_ERR_NOMEM, "minfer_tensor_wrap: out of memory");
    minfer_status st = mf_tensor_init_view(t, (int32_t)dtype, dims, (int32_t)rank, &numel, &nbytes);
    if (st != MINFER_OK) {
        free(t);
        return mf_error_prefix(st, "minfer_tensor_wrap");
    }
    if (!data && nbytes) {
        free(t);
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_tensor_wrap: data is NULL");
    }
    if (data_bytes < nbytes) {
        free(t);
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_tensor_wrap: %zu bytes given, %lld %s elements need %zu",
                        data_bytes, (long long)numel, minfer_dtype_name(dtype), nbytes);
    }
    t->view.data = data;
    t->owns_data = 0;
    *out = t;
    return MINFER_OK;
}

void mf_free_strings(void *data, int64_t count) {
    char **s = data;
    if (!s)
        return;
    for (int64_t i = 0; i < count; i++)
        free(s[i]);
}

void minfer_tensor_free(minfer_tensor *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->count; i++)
        minfer_tensor_free(t->items[i]);
    free(t->items);
    if (t->dev)
        t->dev->release(t->dev);
    else if (t->owns_data == MF_OWNS_MAPPED)
        munmap(t->view.data, t->view.nbytes);
    else if (t->owns_data) {
        if (t->view.dtype == MINFER_DTYPE_STRING)
            mf_free_strings(t->view.data, (int64_t)(t->view.nbytes / sizeof(char *)));
        free(t->view.data);
    }
    free(t);
}

minfer_status mf_tensor_clone(const minfer_tensor *src, minfer_tensor **out) {
    if (!src || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "mf_tensor_clone: NULL argument");
    minfer_tensor *t = NULL;
    minfer_status st;
    if (src->view.kind != MINFER_VALUE_TENSOR) {
        st = src->view.kind == MINFER_VALUE_SEQUENCE
                 ? mf_sequence_new(src->view.dtype, &t)
                 : mf_optional_new(NULL, src->contained, src->view.dtype, &t);
        for (size_t i = 0; st == MINFER_OK && i < src->count; i++) {
            minfer_tensor *item = NULL;
            if ((st = mf_tensor_clone(src->items[i], &item)) == MINFER_OK &&
                (st = mf_sequence_push(t, item)) != MINFER_OK)
                minfer_tensor_free(item);
        }
        if (st != MINFER_OK) {
            minfer_tensor_free(t);
            return st;
        }
        *out = t;
        return MINFER_OK;
    }
    if (src->dev)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "a device value cannot be copied in host memory here: copy it to the "
                        "host first (minfer_tensor_copy_to_host)");
    st = mf_tensor_new(src->view.dtype, src->view.dims, src->view.rank, &t);
    if (st != MINFER_OK)
        return st;
    const char *sdata = (const char *)src->view.data + src->view.offset;
    if (src->view.dtype == MINFER_DTYPE_STRING) {
        int64_t n = (int64_t)(t->view.nbytes / sizeof(char *));
        char *const *from = (char *const *)(const void *)sdata;
        char **to = t->view.data;
        for (int64_t i = 0; i < n; i++) {
            to[i] = mf_strdup(from[i] ? from[i] : "");
            if (!to[i]) {
                minfer_tensor_free(t);
                return mf_error(MINFER_ERR_NOMEM, "out of memory copying a string tensor");
            }
        }
    } else if (t->view.nbytes) {
        memcpy(t->view.data, sdata, t->view.nbytes);
    }
    *out = t;
    return MINFER_OK;
}

minfer_dtype minfer_tensor_dtype(const minfer_tensor *t) {
    return t ? (minfer_dtype)t->view.dtype : MINFER_DTYPE_UNDEFINED;
}

size_t minfer_tensor_rank(const minfer_tensor *t) {
    return t && t->view.rank > 0 ? (size_t)t->view.rank : 0;
}

const int64_t *minfer_tensor_dims(const minfer_tensor *t) { return t ? t->view.dims : NULL; }

int64_t minfer_tensor_numel(const minfer_tensor *t) {
    int64_t n = 0;
    if (!t || t->view.kind != MINFER_VALUE_TENSOR ||
        mf_numel(t->view.dims, t->view.rank, &n) != MINFER_OK)
        return 0;
    return n;
}

size_t minfer_tensor_nbytes(const minfer_tensor *t) {
    size_t n = 0;
    if (!t || mf_nbytes(t->view.dtype, minfer_tensor_numel(t), &n) != MINFER_OK)
        return 0;
    return n;
}

void *minfer_tensor_data(const minfer_tensor *t) {
    return t && !t->dev && t->view.data ? (char *)t->view.data + t->view.offset : NULL;
}
