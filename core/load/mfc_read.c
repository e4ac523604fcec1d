/*
 * Compiled model file -> mf_graph (docs/format.md), and
 * minfer_compiled_info_read.
 *
 * The file is untrusted like any model. Checks, in order:
 *  1. the header: magic, endianness mark, version, size, its own checksum,
 *     the file size it records, flags;
 *  2. the section table: within the file, its checksum; each section within
 *     the file, known or marked optional, its checksum; the weights
 *     section aligned;
 *  3. while decoding: every count against the bytes left in its section
 *     before anything is allocated, every string and value index against
 *     its table, every tensor's type, shape, size, alignment and place in
 *     the weights section, the node and tensor limits, subgraph depth;
 *  4. the graph as any loaded graph is (mf_graph_finalize);
 *  5. the optional PACK section (pre-packed constants), when present: its
 *     checksum and alignment with the others in step 2, then each entry's
 *     node, input, value, strings, and blob extent against the graph and
 *     the section (get_packs).
 * A message names the file, the section and what is wrong.
 *
 * Numeric tensors are not copied: their data points into the file's bytes,
 * which the graph keeps (blob) until it is freed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <xxhash.h>

#include "graph/graph.h"
#include "load/mfc.h"
#include "load/pb_strip.h"
#include "minfer/compile.h"
#include "util/options.h"
#include "util/fileio.h"
#include "util/internal.h"

/* A cursor over one section. */
typedef struct rd {
    const uint8_t *p;
    size_t n, pos;
    const char *sect;
} rd;

typedef struct mfc_ctx {
    const char *errctx;
    minfer_limits lim;
    uint32_t n_strings;
    const uint8_t *str_index; /* n_strings * 12 bytes */
    const uint8_t *str_data;
    uint64_t str_data_size;
    uint8_t *wgts;
    uint64_t wgts_size;
    uint64_t nodes;
    int depth;
    minfer_status st; /* the first error, once one is set */
    size_t n_weights;
    uint64_t weight_bytes;
} mfc_ctx;

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

/* Sets the context's error once (later ones would only repeat the cause). */
static minfer_status fail(mfc_ctx *c, minfer_status st, const char *sect, const char *fmt, ...)
    MF_PRINTF(4, 5);

static minfer_status fail(mfc_ctx *c, minfer_status st, const char *sect, const char *fmt, ...) {
    if (c->st != MINFER_OK)
        return c->st;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->st = mf_error(st, "%s: compiled model: %s%s%s", c->errctx, sect ? "section " : "",
                     sect ? sect : "", msg);
    return c->st;
}

/* Takes len bytes at the cursor, or fails naming the section. */
static const uint8_t *take(mfc_ctx *c, rd *r, size_t len) {
    if (c->st != MINFER_OK)
        return NULL;
    if (len > r->n - r->pos) {
        fail(c, MINFER_ERR_MODEL, r->sect,
             ": truncated or malformed: %zu bytes needed at offset %zu, %zu left", len, r->pos,
             r->n - r->pos);
        return NULL;
    }
    const uint8_t *p = r->p + r->pos;
    r->pos += len;
    return p;
}

static uint8_t get_u8(mfc_ctx *c, rd *r) {
    const uint8_t *p = take(c, r, 1);
    return p ? p[0] : 0;
}

static uint32_t get_u32(mfc_ctx *c, rd *r) {
    const uint8_t *p = take(c, r, 4);
    return p ? le32(p) : 0;
}

static uint64_t get_u64(mfc_ctx *c, rd *r) {
    const uint8_t *p = take(c, r, 8);
    return p ? le64(p) : 0;
}

static int32_t get_i32(mfc_ctx *c, rd *r) { return (int32_t)get_u32(c, r); }
static int64_t get_i64(mfc_ctx *c, rd *r) { return (int64_t)get_u64(c, r); }

static float get_f32(mfc_ctx *c, rd *r) {
    uint32_t u = get_u32(c, r);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* A count of items of at least min_bytes each: no more than the section
 * has room for, so a corrupt count cannot ask for a huge allocation. */
static size_t get_count(mfc_ctx *c, rd *r, int wide, size_t min_bytes, const char *what) {
    uint64_t n = wide ? get_u64(c, r) : get_u32(c, r);
    if (c->st != MINFER_OK)
        return 0;
    if (n > (r->n - r->pos) / min_bytes) {
        fail(c, MINFER_ERR_MODEL, r->sect,
             ": %s count %llu at offset %zu is more than the section's %zu remaining bytes hold",
             what, (unsigned long long)n, r->pos, r->n - r->pos);
        return 0;
    }
    return (size_t)n;
}

/* String idx of the table as a new NUL-terminated copy (*len: its length). */
static char *string_at(mfc_ctx *c, uint32_t idx, size_t *len, const char *sect, size_t at) {
    if (idx >= c->n_strings) {
        fail(c, MINFER_ERR_MODEL, sect, ": string index %u at offset %zu is past the table (%u)",
             idx, at, c->n_strings);
        return NULL;
    }
    const uint8_t *e = c->str_index + (size_t)idx * 12;
    uint64_t off = le64(e);
    uint32_t l = le32(e + 8);
    char *s = mf_malloc((size_t)l + 1);
    if (!s) {
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        return NULL;
    }
    if (l)
        memcpy(s, c->str_data + off, l);
    s[l] = '\0';
    if (len)
        *len = l;
    return s;
}

/* A string reference; NULL with no error for MFC_NO_STRING when allowed. */
static char *get_str(mfc_ctx *c, rd *r, int allow_none, size_t *len) {
    size_t at = r->pos;
    uint32_t idx = get_u32(c, r);
    if (c->st != MINFER_OK)
        return NULL;
    if (idx == MFC_NO_STRING && allow_none)
        return NULL;
    return string_at(c, idx, len, r->sect, at);
}

static int valid_dtype(int32_t t) { return t >= 1 && t <= MINFER_DTYPE_BFLOAT16; }

/* A tensor (mfc_write.c's put_tensor). Numeric data stays in the file. */
static minfer_tensor *get_tensor(mfc_ctx *c, rd *r, const char *where) {
    size_t at = r->pos;
    int32_t dtype = get_i32(c, r), rank = get_i32(c, r);
    int64_t dims[MINFER_MAX_RANK] = {0}, numel = 0;
    size_t nbytes = 0;
    if (c->st != MINFER_OK)
        return NULL;
    if (!valid_dtype(dtype) || rank < 0 || rank > MINFER_MAX_RANK) {
        fail(c, MINFER_ERR_MODEL, r->sect, ": %s at offset %zu has element type %d and rank %d",
             where, at, (int)dtype, (int)rank);
        return NULL;
    }
    for (int d = 0; d < rank; d++)
        if ((dims[d] = get_i64(c, r)) < 0 && c->st == MINFER_OK)
            fail(c, MINFER_ERR_MODEL, r->sect, ": %s at offset %zu has dimension %d = %lld",
                 where, at, d, (long long)dims[d]);
    if (c->st != MINFER_OK)
        return NULL;
    if (mf_numel(dims, rank, &numel) != MINFER_OK || mf_nbytes(dtype, numel, &nbytes) != MINFER_OK ||
        nbytes > c->lim.max_tensor_bytes) {
        fail(c, MINFER_ERR_LIMIT, r->sect,
             ": %s at offset %zu is larger than the tensor limit of %llu bytes", where, at,
             (unsigned long long)c->lim.max_tensor_bytes);
        return NULL;
    }
    uint8_t storage = get_u8(c, r);
    minfer_tensor *t = NULL;
    if (storage == MFC_TENSOR_STRINGS && dtype == MINFER_DTYPE_STRING) {
        if ((uint64_t)numel > (r->n - r->pos) / 4) {
            fail(c, MINFER_ERR_MODEL, r->sect, ": %s at offset %zu: %lld strings do not fit",
                 where, at, (long long)numel);
            return NULL;
        }
        if (mf_tensor_new(dtype, dims, rank, &t) != MINFER_OK) {
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory for %s", where);
            return NULL;
        }
        char **e = t->view.data;
        for (int64_t i = 0; i < numel && c->st == MINFER_OK; i++)
            e[i] = get_str(c, r, 0, NULL);
    } else if (storage == MFC_TENSOR_WEIGHTS && dtype != MINFER_DTYPE_STRING) {
        uint64_t off = get_u64(c, r), size = get_u64(c, r);
        if (c->st != MINFER_OK)
            return NULL;
        if (size != nbytes || off % MFC_ALIGN || off > c->wgts_size ||
            size > c->wgts_size - off) {
            fail(c, MINFER_ERR_MODEL, r->sect,
                 ": %s at offset %zu: data [%llu, +%llu) is not %zu bytes at a %d-byte aligned "
                 "place inside the weights section (%llu bytes)",
                 where, at, (unsigned long long)off, (unsigned long long)size, nbytes, MFC_ALIGN,
                 (unsigned long long)c->wgts_size);
            return NULL;
        }
        t = mf_calloc(1, sizeof *t);
        if (!t) {
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory for %s", where);
            return NULL;
        }
        t->view.kind = MINFER_VALUE_TENSOR;
        t->view.dtype = dtype;
        t->view.rank = rank;
        memcpy(t->view.dims, dims, sizeof dims);
        t->view.data = c->wgts + off;
        t->view.nbytes = nbytes;
        c->n_weights++;
        c->weight_bytes += nbytes;
    } else {
        fail(c, MINFER_ERR_MODEL, r->sect, ": %s at offset %zu has storage kind %u for type %s",
             where, at, storage, minfer_dtype_name((minfer_dtype)dtype));
        return NULL;
    }
    if (c->st != MINFER_OK) {
        minfer_tensor_free(t);
        return NULL;
    }
    return t;
}

static minfer_status get_graph(mfc_ctx *c, rd *r, const mf_graph *parent, mf_graph **out);

static void get_attr(mfc_ctx *c, rd *r, mf_attr *a, const char *where) {
    char w[512];
    size_t at = r->pos;
    a->name = get_str(c, r, 0, NULL);
    a->type = (int)get_u32(c, r);
    if (c->st != MINFER_OK)
        return;
    snprintf(w, sizeof w, "%s attribute '%s'", where, a->name);
    switch (a->type) {
    case MINFER_ATTR_FLOAT:
        a->f = get_f32(c, r);
        break;
    case MINFER_ATTR_INT:
        a->i = get_i64(c, r);
        break;
    case MF_ATTR_TYPE_PROTO:
        a->i = get_i64(c, r);
        if (c->st == MINFER_OK && (!valid_dtype((int32_t)(a->i & 0xff)) || (a->i >> 8) < 0 ||
                                   (a->i >> 8) > MINFER_VALUE_SEQUENCE))
            fail(c, MINFER_ERR_MODEL, r->sect, ": %s at offset %zu: bad type %lld", w, at,
                 (long long)a->i);
        break;
    case MINFER_ATTR_STRING:
        a->s = get_str(c, r, 0, &a->s_len);
        break;
    case MINFER_ATTR_FLOATS:
        a->count = get_count(c, r, 1, 4, "floats");
        if (c->st == MINFER_OK && !(a->floats = mf_malloc((a->count + 1) * sizeof(float))))
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        for (size_t i = 0; c->st == MINFER_OK && i < a->count; i++)
            a->floats[i] = get_f32(c, r);
        break;
    case MINFER_ATTR_INTS:
        a->count = get_count(c, r, 1, 8, "ints");
        if (c->st == MINFER_OK && !(a->ints = mf_malloc((a->count + 1) * sizeof(int64_t))))
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        for (size_t i = 0; c->st == MINFER_OK && i < a->count; i++)
            a->ints[i] = get_i64(c, r);
        break;
    case MINFER_ATTR_STRINGS: {
        size_t n = get_count(c, r, 1, 4, "strings");
        if (c->st == MINFER_OK && !(a->strings = mf_calloc(n + 1, sizeof(char *))))
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        for (size_t i = 0; c->st == MINFER_OK && i < n; i++, a->count = i)
            a->strings[i] = get_str(c, r, 0, NULL);
        break;
    }
    case MINFER_ATTR_TENSOR:
        a->t = get_tensor(c, r, w);
        break;
    case MINFER_ATTR_TENSORS: {
        size_t n = get_count(c, r, 1, 9, "tensors");
        if (c->st == MINFER_OK && !(a->tensors = mf_calloc(n + 1, sizeof(minfer_tensor *))))
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        for (size_t i = 0; c->st == MINFER_OK && i < n; i++, a->count = i)
            a->tensors[i] = get_tensor(c, r, w);
        break;
    }
    case MINFER_ATTR_GRAPH:
        get_graph(c, r, NULL, &a->g);
        break;
    case MINFER_ATTR_GRAPHS: {
        size_t n = get_count(c, r, 1, 20, "graphs");
        if (c->st == MINFER_OK && !(a->graphs = mf_calloc(n + 1, sizeof(mf_graph *))))
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        for (size_t i = 0; c->st == MINFER_OK && i < n; i++, a->count = i)
            get_graph(c, r, NULL, &a->graphs[i]);
        break;
    }
    default:
        fail(c, MINFER_ERR_MODEL, r->sect, ": %s at offset %zu has attribute type %d", w, at,
             a->type);
    }
}

/* Values, inputs, outputs, opsets, nodes (mfc_write.c's put_graph). A
 * subgraph's parent is set by the caller's node once it is whole. */
static void get_values(mfc_ctx *c, rd *r, mf_graph *g) {
    size_t n = get_count(c, r, 0, 21, "value");
    for (size_t i = 0; c->st == MINFER_OK && i < n; i++) {
        size_t at = r->pos;
        char *name = get_str(c, r, 0, NULL);
        if (!name)
            return;
        int vi = mf_graph_intern(g, name);
        if (vi < 0) {
            free(name);
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
            return;
        }
        if ((size_t)vi != i) {
            fail(c, MINFER_ERR_MODEL, r->sect, ": value %zu at offset %zu repeats the name '%s'",
                 i, at, name);
            free(name);
            return;
        }
        free(name);
        mf_value *v = &g->values[vi];
        v->kind = get_i32(c, r);
        v->contained = get_i32(c, r);
        v->dtype = get_i32(c, r);
        v->rank = get_i32(c, r);
        if (c->st != MINFER_OK)
            return;
        if (v->kind < MINFER_VALUE_TENSOR || v->kind > MINFER_VALUE_OPTIONAL ||
            v->contained < MINFER_VALUE_TENSOR || v->contained > MINFER_VALUE_OPTIONAL ||
            (v->dtype != 0 && !valid_dtype(v->dtype)) || v->rank < -1 ||
            v->rank > MINFER_MAX_RANK) {
            fail(c, MINFER_ERR_MODEL, r->sect,
                 ": value '%s' at offset %zu has kind %d, element type %d, rank %d",
                 v->name, at, (int)v->kind, (int)v->dtype, (int)v->rank);
            return;
        }
        for (int d = 0; d < v->rank && c->st == MINFER_OK; d++) {
            v->dims[d] = get_i64(c, r);
            v->dim_params[d] = get_str(c, r, 1, NULL);
            if (v->dims[d] < -1)
                fail(c, MINFER_ERR_MODEL, r->sect, ": value '%s' has dimension %d = %lld",
                     v->name, d, (long long)v->dims[d]);
        }
        uint8_t has_init = get_u8(c, r);
        if (c->st != MINFER_OK)
            return;
        if (has_init > 1) {
            fail(c, MINFER_ERR_MODEL, r->sect, ": value '%s' has initializer flag %u", v->name,
                 has_init);
            return;
        }
        if (has_init) {
            char w[512];
            snprintf(w, sizeof w, "initializer '%s'", v->name);
            v->initializer = get_tensor(c, r, w);
            if (!v->initializer)
                return;
            v = &g->values[vi];
            v->kind = MINFER_VALUE_TENSOR;
            v->dtype = v->initializer->view.dtype;
            v->rank = v->initializer->view.rank;
            memcpy(v->dims, v->initializer->view.dims, sizeof v->dims);
        }
    }
}

/* Graph inputs (is_input) or outputs (is_output): value indices. */
static void get_io(mfc_ctx *c, rd *r, mf_graph *g, int outputs, int top) {
    const char *what = outputs ? "output" : "input";
    size_t n = get_count(c, r, 0, 4, what);
    int *list = c->st == MINFER_OK ? mf_malloc((n + 1) * sizeof *list) : NULL;
    if (c->st == MINFER_OK && !list) {
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        return;
    }
    if (outputs)
        g->outputs = list;
    else
        g->inputs = list;
    for (size_t i = 0; c->st == MINFER_OK && i < n; i++) {
        uint32_t vi = get_u32(c, r);
        if (c->st != MINFER_OK)
            return;
        if (vi >= g->n_values) {
            fail(c, MINFER_ERR_MODEL, r->sect, ": graph %s %zu is value %u of %zu", what, i, vi,
                 g->n_values);
            return;
        }
        mf_value *v = &g->values[vi];
        if (outputs ? v->is_output : v->is_input) {
            fail(c, MINFER_ERR_MODEL, r->sect, ": graph %s '%s' is listed twice", what, v->name);
            return;
        }
        if (!outputs && (v->initializer || (top && v->dtype == 0))) {
            fail(c, MINFER_ERR_MODEL, r->sect, ": graph input '%s' %s", v->name,
                 v->initializer ? "is an initializer" : "declares no element type");
            return;
        }
        if (outputs) {
            v->is_output = 1;
            g->outputs[g->n_outputs++] = (int)vi;
        } else {
            v->is_input = 1;
            g->inputs[g->n_inputs++] = (int)vi;
        }
    }
}

static void get_node(mfc_ctx *c, rd *r, mf_graph *g, size_t idx) {
    char where[512];
    int ni = mf_graph_add_node(g);
    if (ni < 0) {
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        return;
    }
    mf_node *n = &g->nodes[ni];
    n->name = get_str(c, r, 0, NULL);
    n->op_type = get_str(c, r, 0, NULL);
    n->domain = get_str(c, r, 0, NULL);
    if (c->st != MINFER_OK)
        return;
    if (n->name[0])
        snprintf(where, sizeof where, "node '%s' (%s)", n->name, n->op_type);
    else
        snprintf(where, sizeof where, "node #%zu (%s)", idx, n->op_type);
    for (int pass = 0; pass < 2 && c->st == MINFER_OK; pass++) {
        size_t k = get_count(c, r, 0, 4, pass ? "node output" : "node input");
        int *list = c->st == MINFER_OK ? mf_malloc((k + 1) * sizeof *list) : NULL;
        if (!list) {
            fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
            return;
        }
        if (pass)
            n->outputs = list;
        else
            n->inputs = list;
        for (size_t j = 0; j < k && c->st == MINFER_OK; j++) {
            int32_t vi = get_i32(c, r);
            if (c->st == MINFER_OK && (vi < -1 || (vi >= 0 && (size_t)vi >= g->n_values)))
                fail(c, MINFER_ERR_MODEL, r->sect, ": %s %s %zu is value %d of %zu", where,
                     pass ? "output" : "input", j, (int)vi, g->n_values);
            for (size_t e = 0; pass && vi >= 0 && e < j; e++)
                if (list[e] == vi)
                    fail(c, MINFER_ERR_MODEL, r->sect, ": %s names output '%s' twice", where,
                         g->values[vi].name);
            list[j] = vi;
            if (pass)
                n->n_outputs = j + 1;
            else
                n->n_inputs = j + 1;
        }
    }
    size_t na = get_count(c, r, 0, 8, "attribute");
    if (c->st != MINFER_OK)
        return;
    if (!(n->attrs = mf_calloc(na + 1, sizeof *n->attrs))) {
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        return;
    }
    for (size_t a = 0; a < na && c->st == MINFER_OK; a++) {
        mf_attr *at = &n->attrs[a];
        n->n_attrs = a + 1; /* freed with the graph, whole or not */
        get_attr(c, r, at, where);
        if (c->st != MINFER_OK)
            return;
        for (size_t b = 0; b < a; b++)
            if (strcmp(n->attrs[b].name, at->name) == 0) {
                fail(c, MINFER_ERR_MODEL, r->sect, ": %s has attribute '%s' twice", where,
                     at->name);
                return;
            }
        if (at->g)
            at->g->parent = g;
        for (size_t k = 0; at->graphs && k < at->count; k++)
            at->graphs[k]->parent = g;
    }
}

static minfer_status get_graph(mfc_ctx *c, rd *r, const mf_graph *parent, mf_graph **out) {
    *out = NULL;
    if (c->st != MINFER_OK)
        return c->st;
    if (++c->depth > MF_MAX_SUBGRAPH_DEPTH) {
        c->depth--;
        return fail(c, MINFER_ERR_LIMIT, r->sect, ": subgraphs nest deeper than %d",
                    MF_MAX_SUBGRAPH_DEPTH);
    }
    mf_graph *g = *out = mf_graph_new();
    if (!g) {
        c->depth--;
        return fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
    }
    g->parent = parent;
    g->name = get_str(c, r, 0, NULL);
    get_values(c, r, g);
    get_io(c, r, g, 0, parent == NULL && c->depth == 1);
    get_io(c, r, g, 1, 0);
    size_t n_ops = get_count(c, r, 0, 12, "opset");
    if (c->st == MINFER_OK && !(g->opsets = mf_calloc(n_ops + 1, sizeof *g->opsets)))
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
    for (size_t i = 0; i < n_ops && c->st == MINFER_OK; i++) {
        char *dom = get_str(c, r, 0, NULL);
        int64_t ver = get_i64(c, r);
        if (!dom)
            break;
        g->opsets[g->n_opsets].domain = dom;
        g->opsets[g->n_opsets++].version = ver;
        if (c->st == MINFER_OK && ver <= 0)
            fail(c, MINFER_ERR_MODEL, r->sect, ": opset import for domain '%s' has version %lld",
                 dom, (long long)ver);
        for (size_t j = 0; j + 1 < g->n_opsets && c->st == MINFER_OK; j++)
            if (strcmp(g->opsets[j].domain, dom) == 0)
                fail(c, MINFER_ERR_MODEL, r->sect, ": domain '%s' is imported twice", dom);
    }
    size_t n_nodes = get_count(c, r, 0, 24, "node");
    c->nodes += n_nodes;
    if (c->st == MINFER_OK && c->nodes > c->lim.max_nodes)
        fail(c, MINFER_ERR_LIMIT, NULL, "more than %llu nodes (the node limit)",
             (unsigned long long)c->lim.max_nodes);
    for (size_t i = 0; i < n_nodes && c->st == MINFER_OK; i++)
        get_node(c, r, g, i);
    c->depth--;
    return c->st;
}

static minfer_status finalize_all(mf_graph *g, const char *errctx) {
    minfer_status st;
    for (size_t i = 0; i < g->n_nodes; i++)
        for (size_t a = 0; a < g->nodes[i].n_attrs; a++) {
            mf_attr *at = &g->nodes[i].attrs[a];
            if (at->g && (st = finalize_all(at->g, errctx)) != MINFER_OK)
                return st;
            for (size_t k = 0; at->graphs && k < at->count; k++)
                if ((st = finalize_all(at->graphs[k], errctx)) != MINFER_OK)
                    return st;
        }
    return mf_graph_finalize(g, errctx);
}

static void sect_name(uint32_t id, char out[8]) {
    for (int i = 0; i < 4; i++) {
        unsigned char ch = (unsigned char)(id >> (8 * i));
        out[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    out[4] = '\0';
}

/* Steps 1 and 2 of the file comment; fills the section pointers of c and,
 * when info is not NULL, its header fields. */
static minfer_status check_layout(mfc_ctx *c, uint8_t *data, size_t size, rd *sec, rd *pack,
                                  minfer_compiled_info *info) {
    if (size < MFC_MAGIC_LEN || memcmp(data, MFC_MAGIC, MFC_MAGIC_LEN) != 0)
        return fail(c, MINFER_ERR_MODEL, NULL, "header: not a compiled minfer model (no magic)");
    if (size < MFC_HEADER_SIZE)
        return fail(c, MINFER_ERR_MODEL, NULL,
                    "header: truncated: %zu bytes, where the header alone is %d", size,
                    MFC_HEADER_SIZE);
    if (le32(data + 12) != MFC_ENDIAN_MARK)
        return fail(c, MINFER_ERR_MODEL, NULL,
                    "header: endianness mark is %08x, not %08x: the file was written "
                    "%s, and this reader reads little-endian files only",
                    le32(data + 12), MFC_ENDIAN_MARK,
                    le32(data + 12) == 0x04030201u ? "big-endian" : "wrongly");
    uint32_t version = le32(data + 8);
    if (version != MFC_VERSION)
        return fail(c, MINFER_ERR_UNSUPPORTED, NULL,
                    "header: format version %u, and this minfer (%s) reads version %d only; "
                    "compile the model again with this version",
                    version, minfer_version(), MFC_VERSION);
    if (size < MFC_HEADER_SIZE || le32(data + 16) != MFC_HEADER_SIZE)
        return fail(c, MINFER_ERR_MODEL, NULL, "header: truncated or of the wrong size (%zu bytes)",
                    size < MFC_HEADER_SIZE ? size : (size_t)le32(data + 16));
    if (XXH3_64bits(data, 80) != le64(data + 80))
        return fail(c, MINFER_ERR_MODEL, NULL, "header: checksum mismatch (the file is corrupted)");
    uint32_t flags = le32(data + 20);
    uint64_t file_size = le64(data + 24), table_off = le64(data + 32);
    uint32_t n_sec = le32(data + 40);
    if (info) {
        info->format_version = version;
        info->flags = flags;
        memcpy(info->minfer_version, data + 48, sizeof info->minfer_version);
        info->minfer_version[sizeof info->minfer_version - 1] = '\0';
        info->file_size = file_size;
    }
    if (flags & ~MFC_FLAGS_KNOWN)
        return fail(c, MINFER_ERR_UNSUPPORTED, NULL,
                    "header: flags %#x include ones this reader does not know", flags);
    if (n_sec > 64 || table_off < MFC_HEADER_SIZE || table_off > size ||
        (uint64_t)n_sec * MFC_TABLE_ENTRY > size - table_off)
        return fail(c, MINFER_ERR_MODEL, NULL,
                    "section table: %u entries at offset %llu do not fit in the file (%zu "
                    "bytes%s)",
                    n_sec, (unsigned long long)table_off, size,
                    file_size > size ? ": truncated" : "");
    const uint8_t *table = data + table_off;
    /* Name the first section past the end of a truncated file. */
    for (uint32_t i = 0; file_size != size && i < n_sec; i++) {
        const uint8_t *e = table + (size_t)i * MFC_TABLE_ENTRY;
        uint64_t off = le64(e + 8), len = le64(e + 16);
        char nm[8];
        sect_name(le32(e), nm);
        if (off > size || len > size - off)
            return fail(c, MINFER_ERR_MODEL, nm,
                        ": [%llu, +%llu) ends past the end of the file (%zu bytes; the header "
                        "says %llu): truncated",
                        (unsigned long long)off, (unsigned long long)len, size,
                        (unsigned long long)file_size);
    }
    if (file_size != size)
        return fail(c, MINFER_ERR_MODEL, NULL, "header: the file is %zu bytes, the header says %llu",
                    size, (unsigned long long)file_size);
    if (XXH3_64bits(table, (size_t)n_sec * MFC_TABLE_ENTRY) != le64(data + 72))
        return fail(c, MINFER_ERR_MODEL, NULL,
                    "section table: checksum mismatch (the file is corrupted)");
    static const uint32_t need[4] = {MFC_SEC_STRS, MFC_SEC_META, MFC_SEC_GRPH, MFC_SEC_WGTS};
    int found[4] = {0};
    for (uint32_t i = 0; i < n_sec; i++) {
        const uint8_t *e = table + (size_t)i * MFC_TABLE_ENTRY;
        uint32_t id = le32(e), sflags = le32(e + 4);
        uint64_t off = le64(e + 8), len = le64(e + 16), sum = le64(e + 24);
        char nm[8];
        sect_name(id, nm);
        if (off > size || len > size - off)
            return fail(c, MINFER_ERR_MODEL, nm, ": [%llu, +%llu) is outside the file (%zu bytes)",
                        (unsigned long long)off, (unsigned long long)len, size);
        if (info && info->n_sections < MINFER_COMPILED_MAX_SECTIONS) {
            minfer_compiled_section *s = &info->sections[info->n_sections++];
            memcpy(s->name, nm, sizeof s->name);
            s->offset = off;
            s->size = len;
            s->checksum = sum;
        }
        if (id == MFC_SEC_PACK) {
            if (pack->sect)
                return fail(c, MINFER_ERR_MODEL, nm, ": listed twice");
            if (XXH3_64bits(data + off, (size_t)len) != sum)
                return fail(c, MINFER_ERR_MODEL, nm,
                            ": checksum mismatch (the file is corrupted)");
            if (off % MFC_ALIGN)
                return fail(c, MINFER_ERR_MODEL, nm, ": offset %llu is not %d-byte aligned",
                            (unsigned long long)off, MFC_ALIGN);
            *pack = (rd){data + off, (size_t)len, 0, "PACK"};
            continue;
        }
        int k = 0;
        while (k < 4 && need[k] != id)
            k++;
        if (k == 4) {
            if (sflags & MFC_SEC_OPTIONAL)
                continue;
            return fail(c, MINFER_ERR_UNSUPPORTED, nm,
                        ": unknown to this reader and not marked optional");
        }
        if (found[k]++)
            return fail(c, MINFER_ERR_MODEL, nm, ": listed twice");
        if (XXH3_64bits(data + off, (size_t)len) != sum)
            return fail(c, MINFER_ERR_MODEL, nm,
                        ": checksum mismatch (the file is corrupted)");
        if (id == MFC_SEC_WGTS && off % MFC_ALIGN)
            return fail(c, MINFER_ERR_MODEL, nm, ": offset %llu is not %d-byte aligned",
                        (unsigned long long)off, MFC_ALIGN);
        sec[k] = (rd){data + off, (size_t)len, 0, NULL};
    }
    for (int k = 0; k < 4; k++)
        if (!found[k]) {
            char nm[8];
            sect_name(need[k], nm);
            return fail(c, MINFER_ERR_MODEL, nm, ": missing");
        }
    sec[0].sect = "STRS";
    sec[1].sect = "META";
    sec[2].sect = "GRPH";
    sec[3].sect = "WGTS";
    c->wgts = (uint8_t *)(uintptr_t)sec[3].p;
    c->wgts_size = sec[3].n;
    /* STRS: count, index entries (u64 offset, u32 length), bytes. */
    rd *s = &sec[0];
    c->n_strings = (uint32_t)get_count(c, s, 0, 12, "string");
    const uint8_t *idx = take(c, s, (size_t)c->n_strings * 12);
    if (!idx)
        return c->st;
    c->str_index = idx;
    c->str_data = s->p + s->pos;
    c->str_data_size = s->n - s->pos;
    for (uint32_t i = 0; i < c->n_strings; i++) {
        uint64_t off = le64(idx + (size_t)i * 12), len = le32(idx + (size_t)i * 12 + 8);
        if (off > c->str_data_size || len > c->str_data_size - off)
            return fail(c, MINFER_ERR_MODEL, "STRS", ": string %u [%llu, +%llu) is outside the "
                        "section's %llu bytes of text", i, (unsigned long long)off,
                        (unsigned long long)len, (unsigned long long)c->str_data_size);
    }
    return MINFER_OK;
}

/* The META section into g (model metadata, compiled level) and info. */
static void get_meta(mfc_ctx *c, rd *r, mf_graph *g, minfer_compiled_info *info) {
    uint32_t level = get_u32(c, r);
    char *prov = get_str(c, r, 0, NULL);
    if (c->st == MINFER_OK && level > 3)
        fail(c, MINFER_ERR_MODEL, r->sect, ": optimization level %u (0 to 3)", level);
    if (info && prov) {
        info->opt_level = (int)level;
        snprintf(info->providers, sizeof info->providers, "%s", prov);
    }
    free(prov);
    mf_model_meta *m = g->meta = mf_calloc(1, sizeof *m);
    if (!m) {
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        return;
    }
    m->producer_name = get_str(c, r, 0, NULL);
    m->producer_version = get_str(c, r, 0, NULL);
    m->domain = get_str(c, r, 0, NULL);
    m->doc_string = get_str(c, r, 0, NULL);
    m->graph_doc_string = get_str(c, r, 0, NULL);
    m->model_version = get_i64(c, r);
    m->ir_version = get_i64(c, r);
    size_t n = get_count(c, r, 0, 8, "metadata entry");
    if (c->st != MINFER_OK)
        return;
    m->keys = mf_calloc(n + 1, sizeof *m->keys);
    m->values = mf_calloc(n + 1, sizeof *m->values);
    if (!m->keys || !m->values) {
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        return;
    }
    for (size_t i = 0; i < n && c->st == MINFER_OK; i++, m->n_props = i) {
        m->keys[i] = get_str(c, r, 0, NULL);
        m->values[i] = get_str(c, r, 0, NULL);
    }
    g->compiled_level = (int)level + 1;
}

/* The PACK section as loaded: the blobs sorted by node, then provider;
 * first[i] .. first[i + 1] are node i's. */
typedef struct mf_mfc_packs {
    size_t n, n_nodes;
    minfer_packed_const *blob;
    char **provider; /* per blob */
    char **node;     /* per blob: the node's name */
    size_t *first;   /* n_nodes + 1 */
    size_t unpaired; /* blobs left out: not tied to their plain weights */
    char why[256];   /* the first one's reason */
} mf_mfc_packs;

static void packs_free(void *vp) {
    mf_mfc_packs *p = vp;
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        free((char *)(uintptr_t)p->blob[i].tag);
        free(p->provider[i]);
        free(p->node[i]);
    }
    free(p->blob);
    free(p->provider);
    free(p->node);
    free(p->first);
    free(p);
}

/* One PACK entry's sort key: node, provider, place in the file. */
typedef struct pack_order {
    size_t node;
    const char *provider;
    size_t k;
} pack_order;

static int pack_order_cmp(const void *a, const void *b) {
    const pack_order *x = a, *y = b;
    if (x->node != y->node)
        return x->node < y->node ? -1 : 1;
    int c = strcmp(x->provider, y->provider);
    if (c)
        return c;
    return x->k < y->k ? -1 : x->k > y->k;
}

/* Reads a 16-hex-digit checksum at s; 0 when there is none. */
static int hex64(const char *s, uint64_t *out) {
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 1;
}

/* Whether a stored blob belongs to the plain constant beside it: its tag
 * (tag_len characters) ends with " w=<XXH3 of plain> pack=<XXH3 of the
 * blob>" (mfc_write.c's put_packs), both matching. On a match the suffix is
 * cut off (the provider gets its own tag) and 1 returned; otherwise 0 and
 * why says what differs. Without this a PACK blob forged, spliced from
 * another file or left over from other plain weights made a packing
 * provider compute another model than the plain weights give (issue 39:
 * finite on cpu, NaN on onednn, from one file). */
static int paired(char *tag, size_t tag_len, const minfer_tensor *plain, const void *blob,
                  size_t bytes, char *why, size_t size) {
    uint64_t w, pk;
    char *sfx = tag_len >= MFC_PACK_PAIR_LEN ? tag + tag_len - MFC_PACK_PAIR_LEN : NULL;
    if (!sfx || strncmp(sfx, " w=", 3) != 0 || !hex64(sfx + 3, &w) ||
        strncmp(sfx + 19, " pack=", 6) != 0 || !hex64(sfx + 25, &pk)) {
        snprintf(why, size, "it has no checksums of the pair (an older minfer wrote it)");
        return 0;
    }
    const char *data = (const char *)plain->view.data + plain->view.offset;
    if (XXH3_64bits(data, minfer_tensor_nbytes(plain)) != w) {
        snprintf(why, size, "it was packed from other plain weights than the file holds (the "
                 "plain weights' checksum differs)");
        return 0;
    }
    if (XXH3_64bits(blob, bytes) != pk) {
        snprintf(why, size, "its bytes are not the ones packed from the plain weights (the "
                 "blob's checksum differs)");
        return 0;
    }
    *sfx = '\0';
    return 1;
}

/* The section's index (mfc_write.c's put_packs) checked against the graph
 * and the section, into g->packs; info gets the blob count, bytes and the
 * first tag. */
static void get_packs(mfc_ctx *c, rd *r, mf_graph *g, minfer_compiled_info *info) {
    size_t n = get_count(c, r, 0, MFC_PACK_ENTRY, "packed constant");
    if (c->st != MINFER_OK)
        return;
    uint64_t index_end = 4 + (uint64_t)n * MFC_PACK_ENTRY;
    mf_mfc_packs *p = mf_calloc(1, sizeof *p);
    size_t *node_of = mf_calloc(n + 1, sizeof *node_of);
    if (p) {
        p->n_nodes = g->n_nodes;
        p->blob = mf_calloc(n + 1, sizeof *p->blob);
        p->provider = mf_calloc(n + 1, sizeof *p->provider);
        p->node = mf_calloc(n + 1, sizeof *p->node);
        p->first = mf_calloc(g->n_nodes + 1, sizeof *p->first);
    }
    if (!p || !node_of || !p->blob || !p->provider || !p->node || !p->first) {
        packs_free(p);
        free(node_of);
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        return;
    }
    /* m: the entries kept (tied to their plain weights); k: the file's */
    size_t m = 0;
    for (size_t k = 0; k < n && c->st == MINFER_OK; k++) {
        size_t at = r->pos;
        p->n = m + 1; /* what the entry holds is freed with p, whole or not */
        uint32_t node = get_u32(c, r);
        p->node[m] = get_str(c, r, 0, NULL);
        uint32_t input = get_u32(c, r);
        char *value = get_str(c, r, 0, NULL);
        p->provider[m] = get_str(c, r, 0, NULL);
        size_t tag_len = 0;
        char *tag = get_str(c, r, 0, &tag_len);
        p->blob[m].tag = tag;
        uint64_t off = get_u64(c, r), bytes = get_u64(c, r);
        if (c->st != MINFER_OK) {
            free(value);
            break;
        }
        const mf_node *nd = node < g->n_nodes ? &g->nodes[node] : NULL;
        int vi = nd && input < nd->n_inputs - nd->n_implicit ? nd->inputs[input] : -1;
        if (!nd || strcmp(nd->name ? nd->name : "", p->node[m]) != 0)
            fail(c, MINFER_ERR_MODEL, "PACK",
                 ": entry %zu at offset %zu names node %u '%s', which the graph (%zu nodes) "
                 "does not have there", k, at, node, p->node[m], g->n_nodes);
        else if (vi < 0 || strcmp(g->values[vi].name, value) != 0 || !g->values[vi].initializer)
            fail(c, MINFER_ERR_MODEL, "PACK",
                 ": entry %zu at offset %zu: input %u of node '%s' is not the constant '%s'",
                 k, at, input, p->node[m], value);
        else if (tag_len > MFC_PACK_MAX_TAG || !p->provider[m][0])
            fail(c, MINFER_ERR_MODEL, "PACK",
                 ": entry %zu at offset %zu has a tag of %zu characters (at most %d) or no "
                 "provider", k, at, tag_len, MFC_PACK_MAX_TAG);
        else if (bytes == 0 || off % MFC_ALIGN || off < index_end || off > r->n ||
                 bytes > r->n - off || bytes > c->lim.max_tensor_bytes)
            fail(c, MINFER_ERR_MODEL, "PACK",
                 ": entry %zu at offset %zu: blob [%llu, +%llu) is not a non-empty %d-byte "
                 "aligned extent after the index (%llu bytes) inside the section (%zu bytes) "
                 "and the tensor limit", k, at, (unsigned long long)off,
                 (unsigned long long)bytes, MFC_ALIGN, (unsigned long long)index_end, r->n);
        free(value);
        if (c->st != MINFER_OK)
            break;
        if (info) {
            if (!info->n_packed)
                snprintf(info->packed_tag, sizeof info->packed_tag, "%s: %s", p->provider[m],
                         tag);
            info->n_packed++;
            info->packed_bytes += bytes;
        }
        char why[200];
        if (!paired(tag, tag_len, g->values[vi].initializer, r->p + off, (size_t)bytes, why,
                    sizeof why)) {
            if (!p->unpaired++)
                snprintf(p->why, sizeof p->why, "node '%s' input %u (%s): %s", p->node[m],
                         input, p->provider[m], why);
            free(tag);
            free(p->node[m]);
            free(p->provider[m]);
            p->blob[m].tag = NULL;
            p->node[m] = p->provider[m] = NULL;
            p->n = m;
            continue;
        }
        p->blob[m] = (minfer_packed_const){sizeof(minfer_packed_const), input, tag,
                                           r->p + off, (size_t)bytes};
        node_of[m] = node;
        p->n = ++m;
    }
    if (c->st != MINFER_OK) {
        packs_free(p);
        free(node_of);
        return;
    }
    /* Sorted by node, then provider, then file order: a qsort of the
     * entries' indices (an insertion sort here was quadratic in a hostile
     * file's entries, which may share one blob: 250k of them in reverse
     * node order fit in 10 MB), then the arrays permuted into that order. */
    pack_order *ord = mf_malloc((p->n + 1) * sizeof *ord);
    minfer_packed_const *blob = mf_malloc((p->n + 1) * sizeof *blob);
    char **prov = mf_malloc((p->n + 1) * sizeof *prov), **name = mf_malloc((p->n + 1) * sizeof *name);
    size_t *nodes = mf_malloc((p->n + 1) * sizeof *nodes);
    if (!ord || !blob || !prov || !name || !nodes) {
        free(ord);
        free(blob);
        free(prov);
        free(name);
        free(nodes);
        packs_free(p);
        free(node_of);
        fail(c, MINFER_ERR_NOMEM, NULL, "out of memory");
        return;
    }
    for (size_t k = 0; k < p->n; k++)
        ord[k] = (pack_order){node_of[k], p->provider[k], k};
    qsort(ord, p->n, sizeof *ord, pack_order_cmp);
    for (size_t k = 0; k < p->n; k++) {
        blob[k] = p->blob[ord[k].k];
        prov[k] = p->provider[ord[k].k];
        name[k] = p->node[ord[k].k];
        nodes[k] = node_of[ord[k].k];
    }
    free(ord);
    free(p->blob);
    free(p->provider);
    free(p->node);
    free(node_of);
    p->blob = blob;
    p->provider = prov;
    p->node = name;
    node_of = nodes;
    for (size_t i = 0, k = 0; i <= g->n_nodes; i++) {
        while (k < p->n && node_of[k] < i)
            k++;
        p->first[i] = k;
    }
    free(node_of);
    g->packs = p;
    g->packs_free = packs_free;
}

const minfer_packed_const *mf_mfc_packed_for(const mf_graph *g, size_t i, const char *provider,
                                             size_t *count) {
    const mf_mfc_packs *p = g ? g->packs : NULL;
    *count = 0;
    if (!p || p->n_nodes != g->n_nodes || i >= p->n_nodes || !provider)
        return NULL;
    size_t k = p->first[i], end = p->first[i + 1];
    while (k < end && strcmp(p->provider[k], provider) != 0)
        k++;
    size_t j = k;
    while (j < end && strcmp(p->provider[j], provider) == 0 &&
           strcmp(p->node[j], g->nodes[i].name ? g->nodes[i].name : "") == 0)
        j++;
    *count = j - k;
    return j > k ? &p->blob[k] : NULL;
}

size_t mf_mfc_packs_unpaired(const mf_graph *g, char *why, size_t size) {
    const mf_mfc_packs *p = g ? g->packs : NULL;
    if (size)
        why[0] = '\0';
    if (!p || !p->unpaired)
        return 0;
    snprintf(why, size, "%s", p->why);
    return p->unpaired;
}

static minfer_status load(void *data, size_t size, void (*release)(void *, size_t),
                          const char *errctx, const minfer_limits *limits, mf_graph **out,
                          minfer_compiled_info *info) {
    mfc_ctx c;
    rd sec[4], pack;
    mf_graph *g = NULL;
    memset(&c, 0, sizeof c);
    memset(sec, 0, sizeof sec);
    memset(&pack, 0, sizeof pack);
    c.errctx = errctx;
    c.lim = limits ? *limits : mf_options_limits(NULL);
    *out = NULL;
    if ((uint64_t)size > c.lim.max_model_bytes)
        fail(&c, MINFER_ERR_LIMIT, NULL, "the file is %zu bytes, above the limit of %llu", size,
             (unsigned long long)c.lim.max_model_bytes);
    if (c.st == MINFER_OK && check_layout(&c, data, size, sec, &pack, info) == MINFER_OK &&
        get_graph(&c, &sec[2], NULL, &g) == MINFER_OK && sec[2].pos != sec[2].n)
        fail(&c, MINFER_ERR_MODEL, "GRPH", ": %zu bytes left after the graph",
             sec[2].n - sec[2].pos);
    if (c.st == MINFER_OK) {
        get_meta(&c, &sec[1], g, info);
        if (c.st == MINFER_OK && sec[1].pos != sec[1].n)
            fail(&c, MINFER_ERR_MODEL, "META", ": %zu bytes left after the metadata",
                 sec[1].n - sec[1].pos);
    }
    if (c.st == MINFER_OK)
        c.st = finalize_all(g, errctx);
    if (c.st == MINFER_OK && pack.sect)
        get_packs(&c, &pack, g, info);
    if (c.st != MINFER_OK) {
        mf_graph_free(g);
        if (release)
            release(data, size);
        return c.st;
    }
    if (info) {
        info->n_nodes = g->n_nodes;
        info->n_weights = c.n_weights;
        info->weight_bytes = c.weight_bytes;
    }
    g->blob = data;
    g->blob_size = size;
    g->blob_release = release;
    *out = g;
    return MINFER_OK;
}

minfer_status mf_mfc_load(void *data, size_t size, void (*release)(void *, size_t),
                          const char *errctx, const minfer_limits *limits, mf_graph **out) {
    return load(data, size, release, errctx, limits, out, NULL);
}

int minfer_is_compiled(const void *data, size_t size) {
    return data && size >= MFC_MAGIC_LEN && memcmp(data, MFC_MAGIC, MFC_MAGIC_LEN) == 0;
}

void mf_mfc_unmap(void *data, size_t size) {
    if (data && size)
        munmap(data, size);
}

void mf_mfc_free(void *data, size_t size) {
    (void)size;
    free(data);
}

minfer_status minfer_compiled_info_read_sized(const char *path, minfer_compiled_info *out,
                                              size_t info_size) {
    minfer_compiled_info whole, *info = &whole;
    if (!path || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_compiled_info_read: NULL argument");
    if (info_size > sizeof whole)
        info_size = sizeof whole;
    memset(info, 0, sizeof *info);
    memset(out, 0, info_size);
    FILE *f;
    uint64_t size;
    minfer_status st = mf_fopen_regular(path, "model file", &f, &size);
    if (st != MINFER_OK)
        return st;
    if (size == 0 || size > SIZE_MAX) {
        fclose(f);
        return mf_error(MINFER_ERR_MODEL, "%s: not a compiled minfer model (%llu bytes)", path,
                        (unsigned long long)size);
    }
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
    fclose(f);
    if (m == MAP_FAILED)
        return mf_error(MINFER_ERR_IO, "%s: cannot map the file", path);
    mf_graph *g = NULL;
    if ((st = load(m, (size_t)size, mf_mfc_unmap, path, NULL, &g, info)) != MINFER_OK)
        return st;
    mf_graph_free(g);
    memcpy(out, info, info_size);
    return MINFER_OK;
}

/* The pre-PACK struct's size: what programs built against the older header pass. */
minfer_status(minfer_compiled_info_read)(const char *path, minfer_compiled_info *info) {
    return minfer_compiled_info_read_sized(path, info, offsetof(minfer_compiled_info, n_packed));
}
