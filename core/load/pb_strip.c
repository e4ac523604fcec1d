/*
 * Loading big models without holding their weights twice.
 *
 * protobuf-c copies every bytes field while unpacking, so unpacking a
 * ModelProto read into memory holds the weights twice (the file and the
 * unpacked copy), and converting them to tensors makes a third copy. This
 * file walks the wire format once and writes a copy of the model without
 * the raw_data payloads of the main graph's initializers (ModelProto.graph
 * = field 7, GraphProto.initializer = field 5, TensorProto.raw_data = field
 * 9), recording where each payload lies in the original bytes. The loader
 * unpacks the small copy and takes each initializer's data straight from
 * the original, which is a read-only mapping of the file whose pages it
 * drops as it goes: peak memory stays close to one copy of the weights.
 *
 * Anything the walk does not understand makes it give up; the loader then
 * unpacks the original bytes as usual, and protobuf-c reports the error.
 */
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "load/pb_strip.h"

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static int reserve(buf *b, size_t more) {
    if (b->n + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + more) {
        if (cap > SIZE_MAX / 2)
            return -1;
        cap *= 2;
    }
    uint8_t *p = mf_realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int put(buf *b, const uint8_t *src, size_t n) {
    if (reserve(b, n))
        return -1;
    memcpy(b->p + b->n, src, n);
    b->n += n;
    return 0;
}

static size_t put_varint_at(uint8_t *dst, uint64_t v) {
    size_t n = 0;
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        dst[n++] = byte | (v ? 0x80 : 0);
    } while (v);
    return n;
}

int mf_pb_get_varint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len)
            return -1;
        uint8_t b = p[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

int mf_pb_skip_value(const uint8_t *p, size_t len, size_t *pos, unsigned wt) {
    uint64_t v;
    switch (wt) {
    case 0:
        return mf_pb_get_varint(p, len, pos, &v);
    case 1:
        if (len - *pos < 8)
            return -1;
        *pos += 8;
        return 0;
    case 2:
        if (mf_pb_get_varint(p, len, pos, &v) || v > len - *pos)
            return -1;
        *pos += (size_t)v;
        return 0;
    case 5:
        if (len - *pos < 4)
            return -1;
        *pos += 4;
        return 0;
    default:
        return -1; /* groups (3, 4) are not used by ONNX */
    }
}

typedef struct walk {
    const uint8_t *base; /* the original bytes, for offsets */
    mf_raw_ref *refs;
    size_t n_refs, cap_refs;
} walk;

/* Copies message bytes [p, p+len) at nesting `level` (0 model, 1 graph,
 * 2 initializer) into out, dropping initializer raw_data. */
static int copy_message(walk *w, const uint8_t *p, size_t len, int level, buf *out) {
    size_t pos = 0;
    int saw_raw = 0;
    while (pos < len) {
        size_t start = pos;
        uint64_t key;
        if (mf_pb_get_varint(p, len, &pos, &key))
            return -1;
        size_t key_end = pos;
        unsigned field = (unsigned)(key >> 3), wt = (unsigned)(key & 7);
        if (field == 0)
            return -1;
        int descend = wt == 2 && ((level == 0 && field == 7) || (level == 1 && field == 5));
        if (level == 2 && wt == 2 && field == 9) {
            uint64_t n;
            if (mf_pb_get_varint(p, len, &pos, &n) || n > len - pos)
                return -1;
            if (saw_raw)
                return -1; /* repeated raw_data: leave such a file to protobuf-c */
            saw_raw = 1;
            w->refs[w->n_refs - 1].offset = (size_t)(p + pos - w->base);
            w->refs[w->n_refs - 1].length = (size_t)n;
            pos += (size_t)n;
            continue;
        }
        if (!descend) {
            if (mf_pb_skip_value(p, len, &pos, wt) || put(out, p + start, pos - start))
                return -1;
            continue;
        }
        uint64_t n;
        if (mf_pb_get_varint(p, len, &pos, &n) || n > len - pos)
            return -1;
        if (level == 1) { /* a new initializer */
            if (w->n_refs == w->cap_refs) {
                size_t cap = w->cap_refs ? w->cap_refs * 2 : 64;
                mf_raw_ref *r = mf_realloc(w->refs, cap * sizeof *r);
                if (!r)
                    return -1;
                w->refs = r;
                w->cap_refs = cap;
            }
            w->refs[w->n_refs].offset = 0;
            w->refs[w->n_refs].length = SIZE_MAX;
            w->n_refs++;
        }
        /* The key, then a length not known until the child is copied:
         * reserve the widest varint and close the gap afterwards. */
        if (put(out, p + start, key_end - start) || reserve(out, 10))
            return -1;
        size_t len_at = out->n;
        out->n += 10;
        size_t child_at = out->n;
        if (copy_message(w, p + pos, (size_t)n, level + 1, out))
            return -1;
        size_t child_len = out->n - child_at;
        uint8_t tmp[10];
        size_t vl = put_varint_at(tmp, child_len);
        memcpy(out->p + len_at, tmp, vl);
        memmove(out->p + len_at + vl, out->p + child_at, child_len);
        out->n = len_at + vl + child_len;
        pos += (size_t)n;
    }
    return 0;
}

minfer_status mf_pb_strip_initializers(const void *data, size_t size, uint8_t **out,
                                       size_t *out_size, mf_raw_ref **refs, size_t *n_refs) {
    buf b = {NULL, 0, 0};
    walk w = {data, NULL, 0, 0};
    *out = NULL;
    *refs = NULL;
    *n_refs = 0;
    *out_size = 0;
    if (copy_message(&w, data, size, 0, &b) != 0) {
        free(b.p);
        free(w.refs);
        return MINFER_ERR_MODEL;
    }
    *out = b.p;
    *out_size = b.n;
    *refs = w.refs;
    *n_refs = w.n_refs;
    return MINFER_OK;
}
