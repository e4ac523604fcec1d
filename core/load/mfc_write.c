/*
 * mf_graph -> compiled model file (docs/format.md), and minfer_compile_model.
 *
 * 1. The graph (and its subgraphs, depth first) is encoded into the GRPH
 *    section; every name and string goes through one deduplicating string
 *    table (STRS), and every numeric tensor (initializers and tensor
 *    attributes) gets a MFC_ALIGN-aligned place in the weights section
 *    (WGTS), recorded as offset and size.
 * 2. META holds the optimization level, the provider list and the model's
 *    own metadata.
 * 3. PACK, when the caller has packed constants: each is matched to its
 *    node of the graph by name (op type and input value checked) and
 *    indexed; the blobs follow the index, each MFC_ALIGN-aligned.
 * 4. The file is written header, section table, STRS, META, GRPH, WGTS,
 *    PACK; the weights and blobs are streamed from the graph's tensors and
 *    the caller's buffers (hashed in a first pass, so the table is
 *    complete before anything is written).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "graph/graph.h"
#include "load/mfc.h"
#include "minfer/compile.h"
#include "util/options.h"
#include "util/internal.h"

/* A growing little-endian byte buffer; failed sticks after an allocation fails. */
typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    int failed;
} wbuf;

static void put(wbuf *b, const void *src, size_t len) {
    if (b->failed)
        return;
    if (len > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->n < len) {
            if (cap > SIZE_MAX / 2) {
                b->failed = 1;
                return;
            }
            cap *= 2;
        }
        uint8_t *np = mf_realloc(b->p, cap);
        if (!np) {
            b->failed = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    if (len)
        memcpy(b->p + b->n, src, len);
    b->n += len;
}

static void put_u8(wbuf *b, uint8_t v) { put(b, &v, 1); }

static void put_u32(wbuf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}

static void put_u64(wbuf *b, uint64_t v) {
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_i32(wbuf *b, int32_t v) { put_u32(b, (uint32_t)v); }
static void put_i64(wbuf *b, int64_t v) { put_u64(b, (uint64_t)v); }

static void put_f32(wbuf *b, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    put_u32(b, u);
}

/* One tensor's bytes placed in the weights section. */
typedef struct wslot {
    const void *data;
    size_t bytes;
    uint64_t offset; /* in the section */
} wslot;

typedef struct writer {
    wbuf strs_data;          /* the strings' bytes */
    wbuf strs_index;         /* per string: u64 offset, u32 length */
    uint32_t n_strings;
    uint32_t *hash;          /* string index + 1, open addressing */
    size_t hash_cap;
    wbuf graph;
    wslot *w;
    size_t n_w, cap_w;
    uint64_t w_size;
    uint64_t w_payload;
    int failed;              /* out of memory */
    const char *err;         /* a graph the format cannot hold, or NULL */
} writer;

static uint64_t str_hash(const char *s, size_t len) {
    return XXH3_64bits(s, len);
}

static int str_equal(const writer *w, uint32_t idx, const char *s, size_t len) {
    const uint8_t *e = w->strs_index.p + (size_t)idx * 12;
    uint64_t off = (uint64_t)e[0] | (uint64_t)e[1] << 8 | (uint64_t)e[2] << 16 |
                   (uint64_t)e[3] << 24 | (uint64_t)e[4] << 32 | (uint64_t)e[5] << 40 |
                   (uint64_t)e[6] << 48 | (uint64_t)e[7] << 56;
    uint32_t l = (uint32_t)e[8] | (uint32_t)e[9] << 8 | (uint32_t)e[10] << 16 |
                 (uint32_t)e[11] << 24;
    return l == len && (len == 0 || memcmp(w->strs_data.p + off, s, len) == 0);
}

/* The string table index of s[0..len), added once. */
static uint32_t intern(writer *w, const char *s, size_t len) {
    if (w->failed)
        return 0;
    if ((size_t)w->n_strings * 2 >= w->hash_cap) {
        size_t cap = w->hash_cap ? w->hash_cap * 2 : 1024;
        uint32_t *h = mf_calloc(cap, sizeof *h);
        if (!h) {
            w->failed = 1;
            return 0;
        }
        for (size_t i = 0; i < w->hash_cap; i++) {
            if (!w->hash[i])
                continue;
            uint32_t idx = w->hash[i] - 1;
            const uint8_t *e = w->strs_index.p + (size_t)idx * 12;
            uint64_t off = 0;
            for (int k = 7; k >= 0; k--)
                off = off << 8 | e[k];
            uint32_t l = (uint32_t)e[8] | (uint32_t)e[9] << 8 | (uint32_t)e[10] << 16 |
                         (uint32_t)e[11] << 24;
            size_t j = (size_t)str_hash((const char *)w->strs_data.p + off, l) & (cap - 1);
            while (h[j])
                j = (j + 1) & (cap - 1);
            h[j] = w->hash[i];
        }
        free(w->hash);
        w->hash = h;
        w->hash_cap = cap;
    }
    size_t j = (size_t)str_hash(s, len) & (w->hash_cap - 1);
    while (w->hash[j]) {
        if (str_equal(w, w->hash[j] - 1, s, len))
            return w->hash[j] - 1;
        j = (j + 1) & (w->hash_cap - 1);
    }
    if (len > UINT32_MAX || w->n_strings == MFC_NO_STRING - 1) {
        w->err = "a string or the string count is too large for the format";
        return 0;
    }
    put_u64(&w->strs_index, w->strs_data.n);
    put_u32(&w->strs_index, (uint32_t)len);
    put(&w->strs_data, s, len);
    if (w->strs_index.failed || w->strs_data.failed) {
        w->failed = 1;
        return 0;
    }
    w->hash[j] = ++w->n_strings;
    return w->n_strings - 1;
}

static void put_str(writer *w, const char *s) {
    put_u32(&w->graph, s ? intern(w, s, strlen(s)) : MFC_NO_STRING);
}

/* A tensor: dtype, rank, dims, then its data: a weights slot or, for
 * strings, one string index per element. */
static void put_tensor(writer *w, const minfer_tensor *t) {
    wbuf *b = &w->graph;
    const minfer_tensor_view *v = &t->view;
    if (v->kind != MINFER_VALUE_TENSOR) {
        w->err = "a constant is a sequence or an optional";
        return;
    }
    put_i32(b, v->dtype);
    put_i32(b, v->rank);
    for (int d = 0; d < v->rank; d++)
        put_i64(b, v->dims[d]);
    int64_t numel = minfer_tensor_numel(t);
    const char *data = (const char *)v->data + v->offset;
    if (v->dtype == MINFER_DTYPE_STRING) {
        put_u8(b, MFC_TENSOR_STRINGS);
        for (int64_t i = 0; i < numel; i++) {
            const char *e = ((char *const *)(const void *)data)[i];
            put_str(w, e ? e : "");
        }
        return;
    }
    size_t bytes = minfer_tensor_nbytes(t);
    if (w->n_w == w->cap_w) {
        size_t cap = w->cap_w ? w->cap_w * 2 : 64;
        wslot *ns = mf_realloc(w->w, cap * sizeof *ns);
        if (!ns) {
            w->failed = 1;
            return;
        }
        w->w = ns;
        w->cap_w = cap;
    }
    uint64_t off = (w->w_size + MFC_ALIGN - 1) / MFC_ALIGN * MFC_ALIGN;
    w->w[w->n_w++] = (wslot){data, bytes, off};
    w->w_size = off + bytes;
    w->w_payload += bytes;
    put_u8(b, MFC_TENSOR_WEIGHTS);
    put_u64(b, off);
    put_u64(b, bytes);
}

static void put_graph(writer *w, const mf_graph *g);

static void put_attr(writer *w, const mf_attr *a) {
    wbuf *b = &w->graph;
    put_str(w, a->name);
    put_u32(b, (uint32_t)a->type);
    switch (a->type) {
    case MINFER_ATTR_FLOAT:
        put_f32(b, a->f);
        break;
    case MINFER_ATTR_INT:
    case MF_ATTR_TYPE_PROTO:
        put_i64(b, a->i);
        break;
    case MINFER_ATTR_STRING:
        put_u32(b, intern(w, a->s ? a->s : "", a->s ? a->s_len : 0));
        break;
    case MINFER_ATTR_FLOATS:
        put_u64(b, a->count);
        for (size_t i = 0; i < a->count; i++)
            put_f32(b, a->floats[i]);
        break;
    case MINFER_ATTR_INTS:
        put_u64(b, a->count);
        for (size_t i = 0; i < a->count; i++)
            put_i64(b, a->ints[i]);
        break;
    case MINFER_ATTR_STRINGS:
        put_u64(b, a->count);
        for (size_t i = 0; i < a->count; i++)
            put_str(w, a->strings[i]);
        break;
    case MINFER_ATTR_TENSOR:
        put_tensor(w, a->t);
        break;
    case MINFER_ATTR_TENSORS:
        put_u64(b, a->count);
        for (size_t i = 0; i < a->count; i++)
            put_tensor(w, a->tensors[i]);
        break;
    case MINFER_ATTR_GRAPH:
        put_graph(w, a->g);
        break;
    case MINFER_ATTR_GRAPHS:
        put_u64(b, a->count);
        for (size_t i = 0; i < a->count; i++)
            put_graph(w, a->graphs[i]);
        break;
    default:
        w->err = "an attribute has a type the format cannot hold";
    }
}

/* name; values (name, kind, contained, dtype, rank, dims and dim names,
 * initializer); inputs; outputs; opsets; nodes (name, op, domain, explicit
 * inputs, outputs, attributes). Implicit inputs are not written: loading
 * finds them again from the subgraphs. */
static void put_graph(writer *w, const mf_graph *g) {
    wbuf *b = &w->graph;
    put_str(w, g->name ? g->name : "");
    put_u32(b, (uint32_t)g->n_values);
    for (size_t i = 0; i < g->n_values; i++) {
        const mf_value *v = &g->values[i];
        put_str(w, v->name);
        put_i32(b, v->kind);
        put_i32(b, v->contained);
        put_i32(b, v->dtype);
        put_i32(b, v->rank);
        for (int d = 0; d < v->rank; d++) {
            put_i64(b, v->dims[d]);
            put_str(w, v->dim_params[d]);
        }
        put_u8(b, v->initializer != NULL);
        if (v->initializer)
            put_tensor(w, v->initializer);
    }
    put_u32(b, (uint32_t)g->n_inputs);
    for (size_t i = 0; i < g->n_inputs; i++)
        put_u32(b, (uint32_t)g->inputs[i]);
    put_u32(b, (uint32_t)g->n_outputs);
    for (size_t i = 0; i < g->n_outputs; i++)
        put_u32(b, (uint32_t)g->outputs[i]);
    put_u32(b, (uint32_t)g->n_opsets);
    for (size_t i = 0; i < g->n_opsets; i++) {
        put_str(w, g->opsets[i].domain);
        put_i64(b, g->opsets[i].version);
    }
    put_u32(b, (uint32_t)g->n_nodes);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        size_t n_in = n->n_inputs - n->n_implicit;
        put_str(w, n->name);
        put_str(w, n->op_type);
        put_str(w, n->domain);
        put_u32(b, (uint32_t)n_in);
        for (size_t k = 0; k < n_in; k++)
            put_i32(b, n->inputs[k]);
        put_u32(b, (uint32_t)n->n_outputs);
        for (size_t k = 0; k < n->n_outputs; k++)
            put_i32(b, n->outputs[k]);
        put_u32(b, (uint32_t)n->n_attrs);
        for (size_t a = 0; a < n->n_attrs; a++)
            put_attr(w, &n->attrs[a]);
    }
}

static void put_meta(writer *w, wbuf *b, const mf_graph *g, int level, const char *providers) {
    static const mf_model_meta empty = {0};
    const mf_model_meta *m = g->meta ? g->meta : &empty;
    put_u32(b, (uint32_t)level);
#define STR(s) put_u32(b, intern(w, (s) ? (s) : "", (s) ? strlen(s) : 0))
    STR(providers);
    STR(m->producer_name);
    STR(m->producer_version);
    STR(m->domain);
    STR(m->doc_string);
    STR(m->graph_doc_string);
    put_i64(b, m->model_version);
    put_i64(b, m->ir_version);
    put_u32(b, (uint32_t)m->n_props);
    for (size_t i = 0; i < m->n_props; i++) {
        STR(m->keys[i]);
        STR(m->values[i]);
    }
#undef STR
}

/* The index of the node packs[k] names, or -1 when no node or several
 * match (name, op type, and the input's value name). */
static long pack_node(const mf_graph *g, const mf_mfc_pack *pk) {
    long found = -1;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        if (!n->name || strcmp(n->name, pk->node) != 0)
            continue;
        if (found >= 0)
            return -1;
        if (strcmp(n->op_type, pk->op_type) != 0 || pk->input >= n->n_inputs - n->n_implicit ||
            n->inputs[pk->input] < 0 ||
            strcmp(g->values[n->inputs[pk->input]].name, pk->value) != 0 ||
            !g->values[n->inputs[pk->input]].initializer)
            return -1;
        found = (long)i;
    }
    return found;
}

/* The PACK section's index into b (u32 count, then per blob: u32 node,
 * str node name, u32 input, str value, str provider, str tag, u64 offset,
 * u64 bytes) and each kept blob's offset into slots; returns the section's
 * size. Blobs start at the first multiple of MFC_ALIGN after the index. */
static uint64_t put_packs(writer *w, wbuf *b, const mf_graph *g, const mf_mfc_pack *packs,
                          size_t n_packs, wslot *slots, size_t *n_slots) {
    long *node = mf_calloc(n_packs + 1, sizeof *node);
    size_t kept = 0;
    if (!node) {
        w->failed = 1;
        return 0;
    }
    for (size_t k = 0; k < n_packs; k++) {
        node[k] = strlen(packs[k].tag) <= MFC_PACK_MAX_TAG - MFC_PACK_PAIR_LEN
                      ? pack_node(g, &packs[k])
                      : -1;
        kept += node[k] >= 0;
    }
    uint64_t at = 4 + (uint64_t)kept * MFC_PACK_ENTRY;
    put_u32(b, (uint32_t)kept);
    *n_slots = 0;
    for (size_t k = 0; k < n_packs; k++) {
        if (node[k] < 0)
            continue;
        const mf_mfc_pack *pk = &packs[k];
        at = (at + MFC_ALIGN - 1) / MFC_ALIGN * MFC_ALIGN;
        put_u32(b, (uint32_t)node[k]);
        put_u32(b, intern(w, pk->node, strlen(pk->node)));
        put_u32(b, pk->input);
        put_u32(b, intern(w, pk->value, strlen(pk->value)));
        put_u32(b, intern(w, pk->provider, strlen(pk->provider)));
        /* The pair's checksums: the plain constant (written to WGTS from
         * this graph) and the blob, so a reader can tell the two belong
         * together (mfc_read.c's paired). */
        const minfer_tensor *plain = g->values[g->nodes[node[k]].inputs[pk->input]].initializer;
        char tag[MFC_PACK_MAX_TAG + 1];
        int len = snprintf(tag, sizeof tag, "%s w=%016" PRIx64 " pack=%016" PRIx64, pk->tag,
                           (uint64_t)XXH3_64bits((const char *)plain->view.data +
                                                     plain->view.offset,
                                                 minfer_tensor_nbytes(plain)),
                           (uint64_t)XXH3_64bits(pk->data, pk->bytes));
        if (len < 0 || (size_t)len >= sizeof tag) {
            w->err = "a packed constant's tag is too long";
            break;
        }
        put_u32(b, intern(w, tag, (size_t)len));
        put_u64(b, at);
        put_u64(b, pk->bytes);
        slots[(*n_slots)++] = (wslot){pk->data, pk->bytes, at};
        at += pk->bytes;
    }
    free(node);
    return kept ? at : 0;
}

static int little_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

static int write_all(FILE *f, const void *p, size_t n) { return n == 0 || fwrite(p, 1, n, f) == n; }

static const uint8_t zeros[MFC_ALIGN];

/* Hashes (h not NULL) or writes (f) slots laid out from offset 0 of a
 * section whose first `head` bytes are hb: the head, then each slot at its
 * offset with zero padding between. Returns 0 on a write error. */
static int stream_slots(XXH3_state_t *h, FILE *f, const void *hb, size_t head, const wslot *sl,
                        size_t n) {
    uint64_t at = head;
    int ok = 1;
    if (h)
        XXH3_64bits_update(h, hb, head);
    else
        ok = write_all(f, hb, head);
    for (size_t i = 0; ok && i < n; i++) {
        for (uint64_t pad = sl[i].offset - at; ok && pad > 0;) {
            size_t k = pad < MFC_ALIGN ? (size_t)pad : MFC_ALIGN;
            if (h)
                XXH3_64bits_update(h, zeros, k);
            else
                ok = write_all(f, zeros, k);
            pad -= k;
        }
        if (h)
            XXH3_64bits_update(h, sl[i].data, sl[i].bytes);
        else
            ok = write_all(f, sl[i].data, sl[i].bytes);
        at = sl[i].offset + sl[i].bytes;
    }
    return ok;
}

minfer_status mf_mfc_write(const mf_graph *g, int level, const char *providers,
                           const mf_mfc_pack *packs, size_t n_packs, const char *path) {
    writer w;
    wbuf meta = {0}, strs = {0}, head = {0}, pack = {0};
    wslot *pslots = NULL;
    size_t n_pslots = 0;
    uint64_t pack_size = 0;
    minfer_status st = MINFER_OK;
    FILE *f = NULL;
    memset(&w, 0, sizeof w);
    if (!little_endian())
        return mf_error(MINFER_ERR_UNSUPPORTED,
                        "%s: compiled files are little-endian; this host is not", path);
    put_graph(&w, g);
    put_meta(&w, &meta, g, level, providers);
    if (n_packs) {
        if (!(pslots = mf_calloc(n_packs, sizeof *pslots))) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", path);
            goto done;
        }
        pack_size = put_packs(&w, &pack, g, packs, n_packs, pslots, &n_pslots);
    }
    /* STRS: u32 count, the index (u64 offset, u32 length each), the bytes. */
    put_u32(&strs, w.n_strings);
    put(&strs, w.strs_index.p, w.strs_index.n);
    put(&strs, w.strs_data.p, w.strs_data.n);
    if (w.err) {
        st = mf_error(MINFER_ERR_UNSUPPORTED, "%s: cannot compile: %s", path, w.err);
        goto done;
    }
    if (w.failed || w.graph.failed || meta.failed || strs.failed || pack.failed) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory encoding the graph", path);
        goto done;
    }

    /* Layout: header, table, STRS, META, GRPH, padding, WGTS, padding,
     * PACK (when it holds a blob). */
    enum { MAX_SEC = 5 };
    int n_sec = pack_size ? 5 : 4;
    uint32_t ids[MAX_SEC] = {MFC_SEC_STRS, MFC_SEC_META, MFC_SEC_GRPH, MFC_SEC_WGTS,
                             MFC_SEC_PACK};
    const wbuf *bufs[MAX_SEC] = {&strs, &meta, &w.graph, NULL, NULL};
    uint64_t off[MAX_SEC], size[MAX_SEC], sum[MAX_SEC];
    uint64_t pos = MFC_HEADER_SIZE + (uint64_t)n_sec * MFC_TABLE_ENTRY;
    for (int i = 0; i < 3; i++) {
        off[i] = pos;
        size[i] = bufs[i]->n;
        sum[i] = XXH3_64bits(bufs[i]->p, bufs[i]->n);
        pos += size[i];
    }
    off[3] = (pos + MFC_ALIGN - 1) / MFC_ALIGN * MFC_ALIGN;
    size[3] = w.w_size;
    XXH3_state_t *xs = XXH3_createState();
    if (!xs) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    XXH3_64bits_reset(xs);
    uint64_t at = 0;
    for (size_t i = 0; i < w.n_w; i++) {
        if (w.w[i].offset > at)
            XXH3_64bits_update(xs, zeros, (size_t)(w.w[i].offset - at));
        XXH3_64bits_update(xs, w.w[i].data, w.w[i].bytes);
        at = w.w[i].offset + w.w[i].bytes;
    }
    sum[3] = XXH3_64bits_digest(xs);
    off[4] = (off[3] + size[3] + MFC_ALIGN - 1) / MFC_ALIGN * MFC_ALIGN;
    size[4] = pack_size;
    if (n_sec > 4) {
        XXH3_64bits_reset(xs);
        stream_slots(xs, NULL, pack.p, pack.n, pslots, n_pslots);
        sum[4] = XXH3_64bits_digest(xs);
    }
    XXH3_freeState(xs);

    wbuf table = {0};
    for (int i = 0; i < n_sec; i++) {
        put_u32(&table, ids[i]);
        put_u32(&table, ids[i] == MFC_SEC_PACK ? MFC_SEC_OPTIONAL : 0);
        put_u64(&table, off[i]);
        put_u64(&table, size[i]);
        put_u64(&table, sum[i]);
    }
    put(&head, MFC_MAGIC, MFC_MAGIC_LEN);
    put_u32(&head, MFC_VERSION);
    put_u32(&head, MFC_ENDIAN_MARK);
    put_u32(&head, MFC_HEADER_SIZE);
    put_u32(&head, 0); /* flags */
    put_u64(&head, off[n_sec - 1] + size[n_sec - 1]);
    put_u64(&head, MFC_HEADER_SIZE);
    put_u32(&head, (uint32_t)n_sec);
    put_u32(&head, 0);
    char ver[24] = {0};
    snprintf(ver, sizeof ver, "%s", minfer_version());
    put(&head, ver, sizeof ver);
    put_u64(&head, table.failed ? 0 : XXH3_64bits(table.p, table.n));
    if (!head.failed)
        put_u64(&head, XXH3_64bits(head.p, head.n));
    put(&head, table.p, table.n);
    free(table.p);
    if (head.failed || table.failed) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }

    f = fopen(path, "wb");
    if (!f) {
        st = mf_error(MINFER_ERR_IO, "%s: cannot open for writing", path);
        goto done;
    }
    int ok = write_all(f, head.p, head.n);
    for (int i = 0; ok && i < 3; i++)
        ok = write_all(f, bufs[i]->p, bufs[i]->n);
    ok = ok && write_all(f, zeros, (size_t)(off[3] - pos));
    at = 0;
    for (size_t i = 0; ok && i < w.n_w; i++) {
        ok = write_all(f, zeros, (size_t)(w.w[i].offset - at)) &&
             write_all(f, w.w[i].data, w.w[i].bytes);
        at = w.w[i].offset + w.w[i].bytes;
    }
    if (ok && n_sec > 4)
        ok = write_all(f, zeros, (size_t)(off[4] - off[3] - size[3])) &&
             stream_slots(NULL, f, pack.p, pack.n, pslots, n_pslots);
    if (fclose(f) != 0)
        ok = 0;
    if (!ok)
        st = mf_error(MINFER_ERR_IO, "%s: write error (disk full?)", path);
done:
    free(w.strs_data.p);
    free(w.strs_index.p);
    free(w.hash);
    free(w.graph.p);
    free(w.w);
    free(meta.p);
    free(strs.p);
    free(head.p);
    free(pack.p);
    free(pslots);
    return st;
}
