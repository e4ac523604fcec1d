/*
 * Host tensors from and to ONNX: TensorProto (inline, typed fields or
 * external data), one parsed from or written as a .pb file's bytes
 * (mf_tensor_from_pb, mf_tensor_save_pb; the file API of any value, which
 * calls these, is values.c). Split from tensor.c (creation and sizes),
 * which this builds on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/internal.h"
#include "onnx.proto3.pb-c.h"

/* ---- Byte order --------------------------------------------------------- */

/* ONNX stores raw data little-endian. On a big-endian host every scalar
 * (each half of a complex number) is swapped in place. */
static void to_host_order(void *data, size_t nbytes, int32_t dtype) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    size_t w = minfer_dtype_size((minfer_dtype)dtype);
    if (dtype == MINFER_DTYPE_COMPLEX64 || dtype == MINFER_DTYPE_COMPLEX128)
        w /= 2;
    unsigned char *p = data;
    for (size_t i = 0; w > 1 && i + w <= nbytes; i += w)
        for (size_t a = i, b = i + w - 1; a < b; a++, b--) {
            unsigned char c = p[a];
            p[a] = p[b];
            p[b] = c;
        }
#else
    (void)data;
    (void)nbytes;
    (void)dtype;
#endif
}

/* ---- External data ------------------------------------------------------ */

/* Parses a non-negative decimal integer, the whole string. */
static int parse_u64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!s || !*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 1;
}

/* Whether location is relative and has no ".." component. */
static int location_is_safe(const char *loc) {
    if (loc[0] == '/')
        return 0;
    for (const char *p = loc; *p;) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return 0;
        if (!e)
            break;
        p = e + 1;
    }
    return 1;
}

/* Reads nbytes of a tensor's external data into a new buffer *out. The file
 * must resolve (symlinks included) to a path inside base_dir. */
static minfer_status read_external(const Onnx__TensorProto *tp, const char *base_dir,
                                   const char *where, size_t nbytes, void **out) {
    const char *location = NULL;
    uint64_t offset = 0, length = 0;
    int have_length = 0;
    char *path = NULL, *real = NULL, *real_base = NULL;
    unsigned char *buf = NULL;
    int fd = -1;
    minfer_status st = MINFER_OK;

    for (size_t i = 0; i < tp->n_external_data; i++) {
        const Onnx__StringStringEntryProto *kv = tp->external_data[i];
        if (!kv || !kv->key)
            continue;
        if (strcmp(kv->key, "location") == 0) {
            location = kv->value;
        } else if (strcmp(kv->key, "offset") == 0) {
            if (!parse_u64(kv->value, &offset))
                return mf_error(MINFER_ERR_MODEL, "%s: external data offset '%s' is not a number",
                                where, kv->value ? kv->value : "");
        } else if (strcmp(kv->key, "length") == 0) {
            if (!parse_u64(kv->value, &length))
                return mf_error(MINFER_ERR_MODEL, "%s: external data length '%s' is not a number",
                                where, kv->value ? kv->value : "");
            have_length = 1;
        }
    }
    if (!location || !*location)
        return mf_error(MINFER_ERR_MODEL, "%s: external data has no location", where);
    if (!base_dir)
        return mf_error(MINFER_ERR_MODEL,
                        "%s: external data '%s' refused: the model has no directory to resolve "
                        "it against",
                        where, location);
    if (!location_is_safe(location))
        return mf_error(MINFER_ERR_MODEL,
                        "%s: external data location '%s' refused: it must be a relative path "
                        "without '..'",
                        where, location);

    size_t plen = strlen(base_dir) + 1 + strlen(location) + 1;
    path = mf_malloc(plen);
    if (!path)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", where);
    snprintf(path, plen, "%s/%s", base_dir, location);
    real_base = realpath(base_dir, NULL);
    if (!real_base) {
        st = mf_error(MINFER_ERR_IO, "%s: model directory '%s': %s", where, base_dir,
                      strerror(errno));
        goto done;
    }
    real = realpath(path, NULL);
    if (!real) {
        st = mf_error(MINFER_ERR_IO, "%s: external data file '%s': %s", where, path,
                      strerror(errno));
        goto done;
    }
    size_t blen = strlen(real_base);
    int inside = strncmp(real, real_base, blen) == 0 &&
                 (real[blen] == '/' || (blen == 1 && real_base[0] == '/'));
    if (!inside) {
        st = mf_error(MINFER_ERR_MODEL,
                      "%s: external data '%s' refused: it resolves to '%s', outside the model "
                      "directory '%s'",
                      where, location, real, real_base);
        goto done;
    }
    /* Without blocking: a FIFO here would hang open() (fileio.c). */
    uint64_t fsize;
    if ((st = mf_open_regular(real, "external data file", &fd, &fsize)) != MINFER_OK) {
        mf_error_prefix(st, "%s: external data '%s'", where, location);
        goto done;
    }
    if (offset > fsize) {
        st = mf_error(MINFER_ERR_MODEL,
                      "%s: external data offset %llu is past the end of '%s' (%llu bytes)", where,
                      (unsigned long long)offset, path, (unsigned long long)fsize);
        goto done;
    }
    if (!have_length)
        length = fsize - offset;
    if (length > fsize - offset) {
        st = mf_error(MINFER_ERR_MODEL,
                      "%s: external data '%s' offset %llu length %llu runs past the end of the "
                      "file (%llu bytes)",
                      where, path, (unsigned long long)offset, (unsigned long long)length,
                      (unsigned long long)fsize);
        goto done;
    }
    if ((have_length && length != nbytes) || length < nbytes) {
        st = mf_error(MINFER_ERR_MODEL,
                      "%s: external data '%s' holds %llu bytes, the tensor needs %zu", where,
                      path, (unsigned long long)length, nbytes);
        goto done;
    }
    if (offset > (uint64_t)INT64_MAX) {
        st = mf_error(MINFER_ERR_LIMIT, "%s: external data offset too large", where);
        goto done;
    }
    buf = mf_malloc(nbytes);
    if (!buf) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory for %zu bytes of external data", where,
                      nbytes);
        goto done;
    }
    for (size_t got = 0; got < nbytes;) {
        ssize_t r = pread(fd, buf + got, nbytes - got, (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            st = mf_error(MINFER_ERR_IO, "%s: reading external data '%s': %s", where, path,
                          r < 0 ? strerror(errno) : "unexpected end of file");
            goto done;
        }
        got += (size_t)r;
    }
    *out = buf;
    buf = NULL;
done:
    if (fd >= 0)
        close(fd);
    free(buf);
    free(real);
    free(real_base);
    free(path);
    return st;
}

/* ---- TensorProto -------------------------------------------------------- */

/* Copies n int32_data entries into the narrower element type. */
static void narrow_int32(const int32_t *src, size_t n, int32_t dtype, void *dst) {
    for (size_t i = 0; i < n; i++) {
        switch (dtype) {
        case MINFER_DTYPE_INT8: ((int8_t *)dst)[i] = (int8_t)src[i]; break;
        case MINFER_DTYPE_UINT8: ((uint8_t *)dst)[i] = (uint8_t)src[i]; break;
        case MINFER_DTYPE_BOOL: ((uint8_t *)dst)[i] = src[i] != 0; break;
        case MINFER_DTYPE_INT16: ((int16_t *)dst)[i] = (int16_t)src[i]; break;
        case MINFER_DTYPE_UINT16:
        case MINFER_DTYPE_FLOAT16:
        case MINFER_DTYPE_BFLOAT16: ((uint16_t *)dst)[i] = (uint16_t)src[i]; break;
        default: ((int32_t *)dst)[i] = src[i]; break;
        }
    }
}

/* Checks that the proto's typed field for type dt holds the values of numel
 * elements (twice that for complex types), before anything is allocated. */
static minfer_status check_typed_fields(const Onnx__TensorProto *tp, const char *where,
                                        int32_t dt, int64_t numel) {
    size_t n = (size_t)numel;
    size_t have = 0, want = n;
    const char *field = NULL;

    switch (dt) {
    case MINFER_DTYPE_FLOAT:
    case MINFER_DTYPE_COMPLEX64:
        field = "float_data";
        have = tp->n_float_data;
        want = dt == MINFER_DTYPE_COMPLEX64 ? 2 * n : n;
        break;
    case MINFER_DTYPE_INT8:
    case MINFER_DTYPE_UINT8:
    case MINFER_DTYPE_INT16:
    case MINFER_DTYPE_UINT16:
    case MINFER_DTYPE_INT32:
    case MINFER_DTYPE_BOOL:
    case MINFER_DTYPE_FLOAT16:
    case MINFER_DTYPE_BFLOAT16:
        field = "int32_data";
        have = tp->n_int32_data;
        break;
    case MINFER_DTYPE_INT64:
        field = "int64_data";
        have = tp->n_int64_data;
        break;
    case MINFER_DTYPE_DOUBLE:
    case MINFER_DTYPE_COMPLEX128:
        field = "double_data";
        have = tp->n_double_data;
        want = dt == MINFER_DTYPE_COMPLEX128 ? 2 * n : n;
        break;
    case MINFER_DTYPE_UINT32:
    case MINFER_DTYPE_UINT64:
        field = "uint64_data";
        have = tp->n_uint64_data;
        break;
    case MINFER_DTYPE_STRING:
        field = "string_data";
        have = tp->n_string_data;
        break;
    default:
        return mf_error(MINFER_ERR_UNSUPPORTED, "%s: element type %d is not supported", where,
                        (int)dt);
    }
    if (have == want)
        return MINFER_OK;
    if (have == 0)
        return mf_error(MINFER_ERR_MODEL,
                        "%s: %s tensor of %lld elements has no data in %s or raw_data", where,
                        minfer_dtype_name((minfer_dtype)dt), (long long)numel, field);
    return mf_error(MINFER_ERR_MODEL, "%s: %s holds %zu values, the shape needs %zu", where,
                    field, have, want);
}

/* Fills t (shaped and allocated; sizes checked by check_typed_fields) from
 * the proto's typed field for its type. */
static minfer_status from_typed_fields(const Onnx__TensorProto *tp, const char *where,
                                       minfer_tensor *t) {
    int32_t dt = t->view.dtype;
    size_t n = (size_t)minfer_tensor_numel(t);
    size_t want = dt == MINFER_DTYPE_COMPLEX64 || dt == MINFER_DTYPE_COMPLEX128 ? 2 * n : n;
    void *dst = t->view.data;
    if (want == 0)
        return MINFER_OK;

    switch (dt) {
    case MINFER_DTYPE_FLOAT:
    case MINFER_DTYPE_COMPLEX64:
        memcpy(dst, tp->float_data, want * sizeof(float));
        break;
    case MINFER_DTYPE_INT64: memcpy(dst, tp->int64_data, want * sizeof(int64_t)); break;
    case MINFER_DTYPE_DOUBLE:
    case MINFER_DTYPE_COMPLEX128: memcpy(dst, tp->double_data, want * sizeof(double)); break;
    case MINFER_DTYPE_UINT64: memcpy(dst, tp->uint64_data, want * sizeof(uint64_t)); break;
    case MINFER_DTYPE_UINT32:
        for (size_t i = 0; i < n; i++)
            ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
        break;
    case MINFER_DTYPE_STRING: {
        char **s = dst;
        for (size_t i = 0; i < n; i++) {
            /* string_data is bytes: copy exactly len bytes and terminate. */
            size_t len = tp->string_data[i].len;
            s[i] = mf_malloc(len + 1);
            if (!s[i])
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory for string data", where);
            if (len)
                memcpy(s[i], tp->string_data[i].data, len);
            s[i][len] = '\0';
        }
        break;
    }
    default: narrow_int32(tp->int32_data, n, dt, dst); break;
    }
    return MINFER_OK;
}

/* Copies n bytes from src, a private read-only file mapping, to dst a MiB
 * at a time, giving back the whole pages of each MiB of src once copied. */
static void copy_mapped(void *dst, const uint8_t *src, size_t n) {
    const size_t step = (size_t)1 << 20;
    long page = sysconf(_SC_PAGESIZE);
    for (size_t at = 0; at < n; at += step) {
        size_t k = n - at < step ? n - at : step;
        memcpy((char *)dst + at, src + at, k);
        if (page <= 0)
            continue;
        uintptr_t a = ((uintptr_t)(src + at) + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
        uintptr_t b = ((uintptr_t)(src + at + k)) & ~((uintptr_t)page - 1);
        if (b > a)
            madvise((void *)a, b - a, MADV_DONTNEED);
    }
}

static minfer_status from_proto(const void *proto, const char *base_dir, const char *where,
                                minfer_tensor **out, int mapped);

minfer_status mf_tensor_from_proto(const void *proto, const char *base_dir, const char *where,
                                   minfer_tensor **out) {
    return from_proto(proto, base_dir, where, out, 0);
}

minfer_status mf_tensor_from_proto_mapped(const void *proto, const char *base_dir,
                                          const char *where, minfer_tensor **out) {
    return from_proto(proto, base_dir, where, out, 1);
}

static minfer_status from_proto(const void *proto, const char *base_dir, const char *where,
                                minfer_tensor **out, int mapped) {
    const Onnx__TensorProto *tp = proto;
    minfer_tensor *t = NULL;
    void *ext = NULL;
    char wbuf[256];
    minfer_status st;

    if (!tp || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "mf_tensor_from_proto: NULL argument");
    *out = NULL;
    if (!where) {
        if (tp->name && tp->name[0])
            snprintf(wbuf, sizeof wbuf, "tensor '%s'", tp->name);
        else
            snprintf(wbuf, sizeof wbuf, "unnamed tensor");
        where = wbuf;
    }
    int32_t dt = tp->data_type;
    if (dt == MINFER_DTYPE_UNDEFINED)
        return mf_error(MINFER_ERR_MODEL, "%s: data type is undefined", where);
    if (minfer_dtype_size((minfer_dtype)dt) == 0)
        return mf_error(MINFER_ERR_UNSUPPORTED, "%s: element type %d is not supported", where,
                        (int)dt);
    if (tp->segment)
        return mf_error(MINFER_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", where);
    if (tp->n_dims > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_LIMIT, "%s: rank %zu exceeds minfer's limit of %d", where,
                        tp->n_dims, MINFER_MAX_RANK);
    for (size_t i = 0; i < tp->n_dims; i++)
        if (tp->dims[i] < 0)
            return mf_error(MINFER_ERR_MODEL, "%s: dimension %zu is negative (%lld)", where, i,
                            (long long)tp->dims[i]);

    /* Sizes are checked against the data before anything is allocated, so a
     * corrupt shape cannot ask for an absurd allocation. */
    int64_t numel = 0;
    size_t nbytes = 0;
    if ((st = mf_numel(tp->dims, (int32_t)tp->n_dims, &numel)) != MINFER_OK ||
        (st = mf_nbytes(dt, numel, &nbytes)) != MINFER_OK)
        return mf_error_prefix(st, "%s", where);

    if (tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if (dt == MINFER_DTYPE_STRING)
            return mf_error(MINFER_ERR_MODEL, "%s: string tensors cannot use external data",
                            where);
        if ((st = read_external(tp, base_dir, where, nbytes, &ext)) != MINFER_OK)
            return st;
    } else if (tp->raw_data.len > 0) {
        if (dt == MINFER_DTYPE_STRING)
            return mf_error(MINFER_ERR_MODEL,
                            "%s: string tensors must use string_data, not raw_data", where);
        if (tp->raw_data.len != nbytes)
            return mf_error(MINFER_ERR_MODEL,
                            "%s: raw_data holds %zu bytes, %lld %s elements need %zu", where,
                            tp->raw_data.len, (long long)numel,
                            minfer_dtype_name((minfer_dtype)dt), nbytes);
    } else if ((st = check_typed_fields(tp, where, dt, numel)) != MINFER_OK) {
        return st;
    }

    if (ext) {
        /* External data can be large: the tensor adopts the buffer. */
        t = mf_calloc(1, sizeof *t);
        if (!t) {
            free(ext);
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", where);
        }
        mf_tensor_init_view(t, dt, tp->dims, (int32_t)tp->n_dims, &numel, &nbytes);
        t->view.data = ext;
        t->owns_data = 1;
        ext = NULL;
    } else if ((st = mf_tensor_new(dt, tp->dims, (int32_t)tp->n_dims, &t)) != MINFER_OK) {
        return mf_error_prefix(st, "%s", where);
    }
    if (tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL ||
        tp->raw_data.len > 0) {
        if (tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL && nbytes) {
            if (mapped)
                copy_mapped(t->view.data, tp->raw_data.data, nbytes);
            else
                memcpy(t->view.data, tp->raw_data.data, nbytes);
        }
        to_host_order(t->view.data, nbytes, dt);
        if (dt == MINFER_DTYPE_BOOL)
            for (size_t i = 0; i < nbytes; i++)
                ((uint8_t *)t->view.data)[i] = ((uint8_t *)t->view.data)[i] != 0;
    } else if ((st = from_typed_fields(tp, where, t)) != MINFER_OK) {
        minfer_tensor_free(t);
        return st;
    }
    *out = t;
    return MINFER_OK;
}

/* ---- .pb files ---------------------------------------------------------- */

minfer_status mf_tensor_from_pb(const void *data, size_t size, const char *base_dir,
                               const char *where, minfer_tensor **out, char **name_out) {
    minfer_tensor *t = NULL;
    ProtobufCAllocator pba;
    int nomem;
    mf_pb_allocator_init(&pba, &nomem);
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(&pba, size, data);
    if (!tp && nomem)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory parsing the TensorProto", where);
    if (!tp)
        return mf_error(MINFER_ERR_MODEL, "%s is not a valid TensorProto", where);
    minfer_status st = mf_tensor_from_proto(tp, base_dir, where, &t);
    if (st == MINFER_OK && name_out) {
        *name_out = mf_strdup(tp->name ? tp->name : "");
        if (!*name_out) {
            minfer_tensor_free(t);
            t = NULL;
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", where);
        }
    }
    onnx__tensor_proto__free_unpacked(tp, &pba);
    *out = t;
    return st;
}

minfer_status minfer_tensor_load_pb_memory(const void *data, size_t size, minfer_tensor **out,
                                           char **name_out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_tensor_load_pb_memory: out is NULL");
    *out = NULL;
    if (name_out)
        *name_out = NULL;
    if (!data && size)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_tensor_load_pb_memory: data is NULL");
    return mf_tensor_from_pb(data ? data : "", size, NULL, "<memory>", out, name_out);
}

void mf_tensor_proto_clear(void *proto) {
    Onnx__TensorProto *tp = proto;
    free(tp->string_data);
    free(tp->raw_data.data);
    tp->string_data = NULL;
    tp->n_string_data = 0;
    tp->raw_data.data = NULL;
    tp->raw_data.len = 0;
}

minfer_status mf_tensor_to_proto(const minfer_tensor *t, const char *name, void *proto) {
    Onnx__TensorProto *tp = proto;
    onnx__tensor_proto__init(tp);
    int64_t numel = minfer_tensor_numel(t);
    size_t nbytes = minfer_tensor_nbytes(t);
    const void *data = minfer_tensor_data(t);
    tp->n_dims = (size_t)(t->view.rank > 0 ? t->view.rank : 0);
    tp->dims = (int64_t *)t->view.dims;
    tp->data_type = t->view.dtype;
    tp->name = (char *)(name ? name : "");
    if (t->view.dtype == MINFER_DTYPE_STRING) {
        char *const *s = data;
        ProtobufCBinaryData *strings = mf_calloc((size_t)numel + 1, sizeof *strings);
        if (!strings)
            return mf_error(MINFER_ERR_NOMEM, "out of memory writing a string tensor");
        for (int64_t i = 0; i < numel; i++) {
            const char *v = s[i] ? s[i] : "";
            strings[i].data = (uint8_t *)v;
            strings[i].len = strlen(v);
        }
        tp->n_string_data = (size_t)numel;
        tp->string_data = strings;
    } else if (nbytes) {
        unsigned char *raw = mf_malloc(nbytes);
        if (!raw)
            return mf_error(MINFER_ERR_NOMEM, "out of memory writing a tensor");
        memcpy(raw, data, nbytes);
        to_host_order(raw, nbytes, t->view.dtype); /* the swap is its own inverse */
        tp->raw_data.data = raw;
        tp->raw_data.len = nbytes;
    }
    return MINFER_OK;
}

minfer_status mf_tensor_save_pb(const minfer_tensor *t, const char *name, const char *path) {
    Onnx__TensorProto tp;
    unsigned char *packed = NULL;
    minfer_status st = MINFER_OK;

    if ((st = mf_tensor_to_proto(t, name, &tp)) != MINFER_OK)
        return mf_error_prefix(st, "minfer_tensor_save_pb");
    size_t psize = onnx__tensor_proto__get_packed_size(&tp);
    packed = mf_malloc(psize ? psize : 1);
    if (!packed) {
        st = mf_error(MINFER_ERR_NOMEM, "minfer_tensor_save_pb: out of memory");
        goto done;
    }
    onnx__tensor_proto__pack(&tp, packed);
    st = mf_write_file(path, packed, psize); /* whole or not at all (fileio.c) */
done:
    free(packed);
    mf_tensor_proto_clear(&tp);
    return st;
}
