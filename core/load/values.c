/*
 * The .pb formats of sequences and optionals (SequenceProto and
 * OptionalProto, from ONNX's onnx-data.proto), and the .pb file API of any
 * value (minfer_tensor_load_pb, minfer_value_load_pb,
 * minfer_tensor_save_pb), which hands a tensor to tensor_proto.c. The
 * containers themselves are util/containers.c.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/internal.h"
#include "onnx.proto3.pb-c.h"
#include "load/pb_strip.h"

#define MAX_VALUE_DEPTH 16 /* nesting of sequences in optionals in .pb files */

/* ---- reading ------------------------------------------------------------ */

static minfer_status from_sequence(const Onnx__SequenceProto *sp, const char *base_dir,
                                   const char *where, int depth, minfer_tensor **out);

static minfer_status tensor_item(const Onnx__TensorProto *tp, const char *base_dir,
                                 const char *where, size_t idx, minfer_tensor **out) {
    char w[512];
    snprintf(w, sizeof w, "%s element %zu", where, idx);
    return mf_tensor_from_proto(tp, base_dir, w, out);
}

static minfer_status from_sequence(const Onnx__SequenceProto *sp, const char *base_dir,
                                   const char *where, int depth, minfer_tensor **out) {
    minfer_tensor *seq = NULL;
    minfer_status st;
    *out = NULL;
    if (depth > MAX_VALUE_DEPTH)
        return mf_error(MINFER_ERR_LIMIT, "%s: values nest deeper than %d", where,
                        MAX_VALUE_DEPTH);
    if (sp->elem_type != ONNX__SEQUENCE_PROTO__DATA_TYPE__TENSOR &&
        !(sp->elem_type == ONNX__SEQUENCE_PROTO__DATA_TYPE__UNDEFINED && sp->n_tensor_values == 0))
        return mf_error(MINFER_ERR_UNSUPPORTED,
                        "%s: a sequence of element kind %d (only sequences of tensors are "
                        "supported)",
                        where, (int)sp->elem_type);
    int32_t elem = sp->n_tensor_values ? sp->tensor_values[0]->data_type : MINFER_DTYPE_FLOAT;
    if ((st = mf_sequence_new(elem, &seq)) != MINFER_OK)
        return st;
    for (size_t i = 0; i < sp->n_tensor_values; i++) {
        minfer_tensor *item = NULL;
        if ((st = tensor_item(sp->tensor_values[i], base_dir, where, i, &item)) != MINFER_OK)
            break;
        if (item->view.dtype != elem) {
            minfer_tensor_free(item);
            st = mf_error(MINFER_ERR_TYPE, "%s: element %zu is %s, element 0 is %s", where, i,
                          minfer_dtype_name((minfer_dtype)item->view.dtype),
                          minfer_dtype_name((minfer_dtype)elem));
            break;
        }
        if ((st = mf_sequence_push(seq, item)) != MINFER_OK) {
            minfer_tensor_free(item);
            break;
        }
    }
    if (st != MINFER_OK) {
        minfer_tensor_free(seq);
        return st;
    }
    *out = seq;
    return MINFER_OK;
}

static minfer_status from_optional(const Onnx__OptionalProto *op, const char *base_dir,
                                   const char *where, minfer_tensor **out) {
    minfer_tensor *value = NULL;
    minfer_status st;
    int32_t contained = MINFER_VALUE_TENSOR, elem = MINFER_DTYPE_UNDEFINED;
    *out = NULL;
    switch (op->elem_type) {
    case ONNX__OPTIONAL_PROTO__DATA_TYPE__TENSOR:
        if (op->tensor_value) {
            if ((st = mf_tensor_from_proto(op->tensor_value, base_dir, where, &value)) != MINFER_OK)
                return st;
            elem = value->view.dtype;
        }
        break;
    case ONNX__OPTIONAL_PROTO__DATA_TYPE__SEQUENCE:
        contained = MINFER_VALUE_SEQUENCE;
        if (op->sequence_value) {
            if ((st = from_sequence(op->sequence_value, base_dir, where, 1, &value)) != MINFER_OK)
                return st;
            elem = value->view.dtype;
        }
        break;
    case ONNX__OPTIONAL_PROTO__DATA_TYPE__UNDEFINED:
        elem = MINFER_DTYPE_UNDEFINED; /* an empty optional of no stated type: fits any */
        break;
    default:
        return mf_error(MINFER_ERR_UNSUPPORTED,
                        "%s: an optional of element kind %d (only tensors and sequences are "
                        "supported)",
                        where, (int)op->elem_type);
    }
    if ((st = mf_optional_new(value, contained, elem, out)) != MINFER_OK)
        minfer_tensor_free(value);
    return st;
}

/* Parses a serialized SequenceProto or OptionalProto (kind). */
static minfer_status value_from_pb(const void *data, size_t size, int kind, const char *base_dir,
                                   const char *where, minfer_tensor **out, char **name_out) {
    ProtobufCAllocator pba;
    int nomem;
    minfer_status st;
    const char *name = "";
    mf_pb_allocator_init(&pba, &nomem);
    *out = NULL;
    /* Sequences nest in sequences, maps and optionals without bound, and
     * protobuf-c recurses once per level: bound it first (pb_depth.c). */
    st = mf_pb_check_nesting(kind == MINFER_VALUE_SEQUENCE ? &onnx__sequence_proto__descriptor
                                                           : &onnx__optional_proto__descriptor,
                             data, size, MAX_VALUE_DEPTH, where);
    if (st != MINFER_OK)
        return st;
    if (kind == MINFER_VALUE_SEQUENCE) {
        Onnx__SequenceProto *sp = onnx__sequence_proto__unpack(&pba, size, data);
        if (!sp)
            return nomem ? mf_error(MINFER_ERR_NOMEM, "%s: out of memory parsing it", where)
                         : mf_error(MINFER_ERR_MODEL, "%s is not a valid SequenceProto", where);
        st = from_sequence(sp, base_dir, where, 0, out);
        if (st == MINFER_OK && name_out && !(*name_out = mf_strdup(sp->name ? sp->name : name)))
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", where);
        onnx__sequence_proto__free_unpacked(sp, &pba);
    } else {
        Onnx__OptionalProto *op = onnx__optional_proto__unpack(&pba, size, data);
        if (!op)
            return nomem ? mf_error(MINFER_ERR_NOMEM, "%s: out of memory parsing it", where)
                         : mf_error(MINFER_ERR_MODEL, "%s is not a valid OptionalProto", where);
        st = from_optional(op, base_dir, where, out);
        if (st == MINFER_OK && name_out && !(*name_out = mf_strdup(op->name ? op->name : name)))
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", where);
        onnx__optional_proto__free_unpacked(op, &pba);
    }
    if (st != MINFER_OK) {
        minfer_tensor_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- writing ------------------------------------------------------------ */

/* Fills sp from seq; the tensor protos live in tps (count items). */
static minfer_status to_sequence(const minfer_tensor *seq, const char *name,
                                 Onnx__SequenceProto *sp, Onnx__TensorProto *tps,
                                 Onnx__TensorProto **ptrs) {
    minfer_status st = MINFER_OK;
    sp->name = (char *)(name ? name : "");
    sp->elem_type = ONNX__SEQUENCE_PROTO__DATA_TYPE__TENSOR;
    for (size_t i = 0; i < seq->count; i++) {
        if ((st = mf_tensor_to_proto(seq->items[i], "", &tps[i])) != MINFER_OK)
            return st;
        ptrs[i] = &tps[i];
        sp->n_tensor_values = i + 1;
    }
    sp->tensor_values = ptrs;
    return st;
}

/* Writes a sequence or optional as its proto. */
static minfer_status value_save_pb(const minfer_tensor *t, const char *name, const char *path) {
    Onnx__SequenceProto sp = ONNX__SEQUENCE_PROTO__INIT;
    Onnx__OptionalProto op = ONNX__OPTIONAL_PROTO__INIT;
    Onnx__TensorProto single;
    const minfer_tensor *seq = NULL;
    Onnx__TensorProto *tps = NULL;
    Onnx__TensorProto **ptrs = NULL;
    unsigned char *packed = NULL;
    size_t psize = 0, n_items = 0;
    int have_single = 0;
    minfer_status st = MINFER_OK;

    if (t->view.kind == MINFER_VALUE_SEQUENCE)
        seq = t;
    else if (t->count && t->items[0]->view.kind == MINFER_VALUE_SEQUENCE)
        seq = t->items[0];
    if (seq) {
        n_items = seq->count;
        tps = mf_calloc(n_items + 1, sizeof *tps);
        ptrs = mf_calloc(n_items + 1, sizeof *ptrs);
        if (!tps || !ptrs) {
            st = mf_error(MINFER_ERR_NOMEM, "minfer_tensor_save_pb: out of memory");
            goto done;
        }
        if ((st = to_sequence(seq, seq == t ? name : "", &sp, tps, ptrs)) != MINFER_OK)
            goto done;
    }
    if (t->view.kind == MINFER_VALUE_SEQUENCE) {
        psize = onnx__sequence_proto__get_packed_size(&sp);
        if ((packed = mf_malloc(psize ? psize : 1)))
            onnx__sequence_proto__pack(&sp, packed);
    } else {
        op.name = (char *)(name ? name : "");
        if (t->contained == MINFER_VALUE_SEQUENCE) {
            op.elem_type = ONNX__OPTIONAL_PROTO__DATA_TYPE__SEQUENCE;
            op.sequence_value = t->count ? &sp : NULL;
        } else {
            op.elem_type = ONNX__OPTIONAL_PROTO__DATA_TYPE__TENSOR;
            if (t->count) {
                if ((st = mf_tensor_to_proto(t->items[0], "", &single)) != MINFER_OK)
                    goto done;
                have_single = 1;
                op.tensor_value = &single;
            }
        }
        psize = onnx__optional_proto__get_packed_size(&op);
        if ((packed = mf_malloc(psize ? psize : 1)))
            onnx__optional_proto__pack(&op, packed);
    }
    if (!packed) {
        st = mf_error(MINFER_ERR_NOMEM, "minfer_tensor_save_pb: out of memory");
        goto done;
    }
    st = mf_write_file(path, packed, psize); /* whole or not at all (fileio.c) */
done:
    for (size_t i = 0; tps && i < n_items; i++)
        mf_tensor_proto_clear(&tps[i]);
    if (have_single)
        mf_tensor_proto_clear(&single);
    free(tps);
    free(ptrs);
    free(packed);
    return st;
}

/* ---- .pb files of any value --------------------------------------------- */

static minfer_status load_pb_file(const char *api, const char *path, int kind,
                                  minfer_tensor **out, char **name_out) {
    unsigned char *buf = NULL;
    char *dir = NULL;
    int fd = -1;
    minfer_status st;

    if (!path || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: NULL argument", api);
    *out = NULL;
    if (name_out)
        *name_out = NULL;
    /* Without blocking: a FIFO named input_0.pb would hang open(). */
    uint64_t fsize;
    if ((st = mf_open_regular(path, "tensor file", &fd, &fsize)) != MINFER_OK)
        return st;
    if (fsize == 0) {
        st = mf_error(MINFER_ERR_IO, "'%s' is empty", path);
        goto done;
    }
    if (fsize > SIZE_MAX / 2) {
        st = mf_error(MINFER_ERR_LIMIT, "'%s' is too large", path);
        goto done;
    }
    size_t size = (size_t)fsize;
    buf = mf_malloc(size);
    if (!buf) {
        st = mf_error(MINFER_ERR_NOMEM, "out of memory reading '%s' (%zu bytes)", path, size);
        goto done;
    }
    for (size_t got = 0; got < size;) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            st = mf_error(MINFER_ERR_IO, "'%s': %s", path,
                          r < 0 ? strerror(errno) : "short read (the file shrank)");
            goto done;
        }
        got += (size_t)r;
    }
    /* External data in a .pb file is resolved next to the file. */
    dir = mf_strdup(path);
    if (!dir) {
        st = mf_error(MINFER_ERR_NOMEM, "out of memory");
        goto done;
    }
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    else
        strcpy(dir, ".");
    char where[PATH_MAX + 8];
    snprintf(where, sizeof where, "'%s'", path);
    st = kind == MINFER_VALUE_TENSOR ? mf_tensor_from_pb(buf, size, dir, where, out, name_out)
                                     : value_from_pb(buf, size, kind, dir, where, out, name_out);
done:
    free(dir);
    free(buf);
    close(fd);
    return st;
}

minfer_status minfer_tensor_load_pb(const char *path, minfer_tensor **out, char **name_out) {
    return load_pb_file("minfer_tensor_load_pb", path, MINFER_VALUE_TENSOR, out, name_out);
}

minfer_status minfer_value_load_pb(const char *path, minfer_value_kind kind, minfer_tensor **out,
                                   char **name_out) {
    if (kind != MINFER_VALUE_TENSOR && kind != MINFER_VALUE_SEQUENCE &&
        kind != MINFER_VALUE_OPTIONAL)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_value_load_pb: unknown kind %d", (int)kind);
    return load_pb_file("minfer_value_load_pb", path, (int)kind, out, name_out);
}

minfer_status minfer_tensor_save_pb(const minfer_tensor *t, const char *name, const char *path) {
    if (!t || !path)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_tensor_save_pb: NULL argument");
    return t->view.kind == MINFER_VALUE_TENSOR ? mf_tensor_save_pb(t, name, path)
                                               : value_save_pb(t, name, path);
}
