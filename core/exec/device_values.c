/* Device values (minfer.h minfer_session_device_tensor_create): tensors in
 * the memory of a session's provider, through the provider ABI's memory
 * domain (mem_alloc, mem_free, copy_to_host, copy_from_host) and its
 * copy_in_domain (ABI 2, appended), which says the provider offers them.
 * The run path reads and writes them in run.c and step.c. A
 * session keeps its live device values in a list (under its lock) and
 * frees their buffers when it is freed; each tensor's mf_devmem then has
 * s == NULL and every use fails. */
#include <stdlib.h>
#include <string.h>

#include "place/provider_loader.h"
#include "exec/exec.h"

static void devmem_release(mf_devmem *d) {
    minfer_session *s = d->s;
    if (s) {
        pthread_mutex_lock(&s->lock);
        if (d->prev)
            d->prev->next = d->next;
        else
            s->devmem = d->next;
        if (d->next)
            d->next->prev = d->prev;
        pthread_mutex_unlock(&s->lock);
        mf_prov_mem_free(&s->pl->provs[d->dom - 1], d->t->view.data);
    }
    free(d);
}

void mf_devmem_close_all(minfer_session *s) {
    pthread_mutex_lock(&s->lock);
    mf_devmem *d = s->devmem;
    s->devmem = NULL;
    pthread_mutex_unlock(&s->lock);
    for (mf_devmem *next; d; d = next) {
        next = d->next;
        mf_prov_mem_free(&s->pl->provs[d->dom - 1], d->t->view.data);
        d->t->view.data = NULL;
        d->t->view.nbytes = 0;
        d->s = NULL;
        d->prev = d->next = NULL;
    }
}

int mf_devmem_domain(const minfer_session *s, const char *name, char *why, size_t why_size) {
    if (!name || !name[0] || strcmp(name, "cpu") == 0)
        return 0;
    for (size_t i = 0; i < s->pl->n_provs; i++) {
        const mf_provider_inst *pi = &s->pl->provs[i];
        if (strcmp(pi->name, name) != 0)
            continue;
        if (!mf_prov_has_copy_in_domain(pi)) {
            snprintf(why, why_size, "provider '%s' computes in host memory or offers no device "
                     "values", name);
            return -1;
        }
        return (int)i + 1;
    }
    size_t used = (size_t)snprintf(why, why_size, "the session has no provider '%s' (it has:",
                                   name);
    for (size_t i = 0; i < s->pl->n_provs && used < why_size; i++)
        used += (size_t)snprintf(why + used, why_size - used, " %s", s->pl->provs[i].name);
    if (used < why_size)
        snprintf(why + used, why_size - used, ")");
    return -1;
}

minfer_status mf_devmem_new(minfer_session *s, int dom, int32_t dtype, const int64_t *dims,
                            int32_t rank, minfer_tensor **out) {
    const mf_provider_inst *pi = &s->pl->provs[dom - 1];
    minfer_tensor *t = mf_calloc(1, sizeof *t);
    mf_devmem *d = mf_calloc(1, sizeof *d);
    if (!t || !d) {
        free(t);
        free(d);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    t->view.kind = MINFER_VALUE_TENSOR;
    t->view.dtype = dtype;
    t->view.rank = rank;
    if (rank > 0)
        memcpy(t->view.dims, dims, (size_t)rank * sizeof *dims);
    size_t plain = minfer_tensor_nbytes(t);
    size_t bytes = mf_prov_has_tensor_bytes(pi) ? mf_prov_tensor_bytes(pi, &t->view) : plain;
    if (bytes == SIZE_MAX) {
        long long n = (long long)minfer_tensor_numel(t);
        free(t);
        free(d);
        return mf_error(MINFER_ERR_LIMIT, "%s: a device value of %lld elements is too large",
                        s->errctx, n);
    }
    minfer_status st = mf_prov_mem_alloc(pi, bytes ? bytes : 1, &t->view.data);
    if (st != MINFER_OK) {
        free(t);
        free(d);
        return mf_error_prefix(st, "%s: provider '%s' could not allocate a %zu-byte device value",
                               s->errctx, pi->name, bytes);
    }
    t->view.nbytes = bytes;
    d->s = s;
    d->dom = dom;
    d->release = devmem_release;
    d->t = t;
    snprintf(d->prov, sizeof d->prov, "%s", pi->name);
    t->dev = d;
    pthread_mutex_lock(&s->lock);
    d->next = s->devmem;
    if (s->devmem)
        s->devmem->prev = d;
    s->devmem = d;
    pthread_mutex_unlock(&s->lock);
    *out = t;
    return MINFER_OK;
}

minfer_status minfer_session_device_tensor_create(minfer_session *s, const char *provider,
                                                  minfer_dtype dtype, const int64_t *dims,
                                                  size_t rank, minfer_tensor **out) {
    if (out)
        *out = NULL;
    if (!s || !provider || !out || (rank && !dims))
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_session_device_tensor_create: NULL argument");
    if (rank > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_LIMIT, "%s: a device value of rank %zu (at most %d)",
                        s->errctx, rank, MINFER_MAX_RANK);
    if (minfer_dtype_size(dtype) == 0 || dtype == MINFER_DTYPE_STRING)
        return mf_error(MINFER_ERR_TYPE, "%s: no device values of type %s", s->errctx,
                        minfer_dtype_name(dtype));
    for (size_t i = 0; i < rank; i++)
        if (dims[i] < 0)
            return mf_error(MINFER_ERR_SHAPE, "%s: device value dimension %zu is %lld",
                            s->errctx, i, (long long)dims[i]);
    int64_t n;
    size_t plain;
    if (minfer_dims_numel(dims, (int32_t)rank, &n) != MINFER_OK ||
        mf_nbytes(dtype, n, &plain) != MINFER_OK)
        return mf_error(MINFER_ERR_LIMIT, "%s: a device value of that shape is too large",
                        s->errctx);
    char why[256];
    int dom = mf_devmem_domain(s, provider, why, sizeof why);
    if (dom == 0)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "%s: '%s' is host memory: make a host tensor (minfer_tensor_create)",
                        s->errctx, provider);
    if (dom < 0)
        return mf_error(strstr(why, "no provider") ? MINFER_ERR_INVALID_ARG
                                                   : MINFER_ERR_UNSUPPORTED,
                        "%s: no device values on '%s': %s", s->errctx, provider, why);
    return mf_devmem_new(s, dom, dtype, dims, (int32_t)rank, out);
}

const char *minfer_tensor_device(const minfer_tensor *t) {
    if (!t)
        return NULL;
    return t->dev ? t->dev->prov : "cpu";
}

static minfer_status check_copy(const minfer_tensor *t, const void *p, size_t bytes,
                                const char *fn) {
    if (!t || (!p && bytes))
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: NULL argument", fn);
    if (t->view.kind != MINFER_VALUE_TENSOR || t->view.dtype == MINFER_DTYPE_STRING)
        return mf_error(MINFER_ERR_TYPE, "%s: only numeric tensors are copied", fn);
    if (bytes != minfer_tensor_nbytes(t))
        return mf_error(MINFER_ERR_SHAPE, "%s: %zu bytes given for a tensor of %zu", fn, bytes,
                        minfer_tensor_nbytes(t));
    if (t->dev && !t->dev->s)
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: the device value's session (on '%s') was "
                        "freed", fn, t->dev->prov);
    return MINFER_OK;
}

minfer_status minfer_tensor_copy_from_host(minfer_tensor *t, const void *src, size_t bytes) {
    minfer_status st = check_copy(t, src, bytes, "minfer_tensor_copy_from_host");
    if (st != MINFER_OK)
        return st;
    if (!t->dev) {
        if (bytes)
            memcpy(minfer_tensor_data(t), src, bytes);
        return MINFER_OK;
    }
    const mf_provider_inst *pi = &t->dev->s->pl->provs[t->dev->dom - 1];
    if ((st = mf_prov_copy_from_host(pi, src, bytes, &t->view)) != MINFER_OK)
        return mf_error_prefix(st, "minfer_tensor_copy_from_host: provider '%s'", pi->name);
    return MINFER_OK;
}

minfer_status minfer_tensor_copy_to_host(const minfer_tensor *t, void *dst, size_t bytes) {
    minfer_status st = check_copy(t, dst, bytes, "minfer_tensor_copy_to_host");
    if (st != MINFER_OK)
        return st;
    if (!t->dev) {
        if (bytes)
            memcpy(dst, minfer_tensor_data(t), bytes);
        return MINFER_OK;
    }
    const mf_provider_inst *pi = &t->dev->s->pl->provs[t->dev->dom - 1];
    if ((st = mf_prov_copy_to_host(pi, &t->view, dst, bytes)) != MINFER_OK)
        return mf_error_prefix(st, "minfer_tensor_copy_to_host: provider '%s'", pi->name);
    return MINFER_OK;
}
