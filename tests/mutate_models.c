/*
 * The mutated-model test: a fixed-seed series of broken models, each loaded
 * into a session (CPU provider) and, when that succeeds, run on valid
 * inputs. Every case must end in success or a clear error (a status and a
 * non-empty message), never in a signal or a hang.
 *
 * Mutations (case k uses a generator seeded with seed and k, so a case is
 * reproducible alone with --only k):
 *  - bytes: bit flips, truncation, overwritten runs, inserted and deleted
 *    bytes, 0xff varint bytes;
 *  - structure (parsed, changed, packed again): declared dims (0, 1, 2^40,
 *    negative), element types, value names swapped or dangling, attributes
 *    set to absurd values or types, huge declared shapes, initializer dims,
 *    types and data cut short, op types and domains, nodes deleted,
 *    duplicated or swapped, cycles, opset versions, inputs and outputs
 *    dropped or repeated; and combinations.
 *
 * Isolation: cases run in a forked child, many per child. Before each case
 * the child notes its number and start time in shared memory; the parent
 * watches, and when the child dies by a signal (a crash, an ASan report) or
 * a case runs past --timeout seconds (a hang), it records that case, kills
 * the child and starts a new one at the next case. Crashing inputs are
 * written to --save DIR for the fuzz regression corpus.
 *
 *   mutate_models [--cases N] [--seed S] [--timeout SEC] [--only K] [--save DIR]
 *                 [--node-dir DIR --node-list FILE] [--compiled K] [MODEL.onnx ...]
 * --compiled K also compiles every K-th node model and each MODEL.onnx
 * (minfer_compile_model, docs/format.md) into a temporary directory; those
 * files take their share of cases with byte mutations of their sections,
 * the checksums recomputed in three cases of four so that the decoder, not
 * the checksum, meets the damage.
 * Node models (DIR/NAME/model.onnx for each NAME in FILE) take most cases;
 * each MODEL.onnx given directly (large ones such as squeezenet) gets one
 * case in 100.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fuzz/onnx_build.h"
#include "mfc_util.h"
#include "minfer/compile.h"
#include "minfer/minfer.h"

typedef struct model {
    char path[PATH_MAX];
    uint8_t *data;
    size_t size;
    int big;
    int compiled; /* a compiled file (docs/format.md), not ONNX */
} model;

static model *models;
static size_t n_models, n_small, n_big;

/* Outcomes, counted in shared memory. */
enum { R_RAN, R_CREATE_ERR, R_RUN_ERR, R_SKIPPED, R_BAD_ERROR, R_COUNT };
static const char *const outcome_names[R_COUNT] = {"ran", "refused at create", "failed at run",
                                                   "created, run skipped (inputs too big)",
                                                   "error without a message"};

typedef struct shared {
    volatile long current;      /* case running now, -1 between cases */
    volatile long long started; /* its start, ms */
    volatile long counts[R_COUNT];
    volatile long status_counts[16];
} shared;

static shared *shm;

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- random numbers (splitmix64) --------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t next_u64(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t below(rng *r, size_t n) { return n ? (size_t)(next_u64(r) % n) : 0; }

static int64_t absurd_int(rng *r) {
    static const int64_t v[] = {0, 1, -1, 2, 3, -2, 7, 1000, 65536, INT32_MAX, INT32_MIN,
                                (int64_t)1 << 32, (int64_t)1 << 40, INT64_MAX, INT64_MIN,
                                INT64_MAX / 2, -((int64_t)1 << 40)};
    return v[below(r, sizeof v / sizeof v[0])];
}

/* ---- byte mutations ------------------------------------------------------ */

static uint8_t *mutate_bytes(rng *r, const uint8_t *src, size_t n, size_t *out_n, char *desc,
                             size_t dlen) {
    size_t cap = n + 64;
    uint8_t *b = ob_alloc(cap);
    memcpy(b, src, n);
    size_t len = n;
    switch (below(r, 5)) {
    case 0: {
        int flips = 1 + (int)below(r, 4);
        for (int i = 0; i < flips && len; i++)
            b[below(r, len)] ^= (uint8_t)(1u << below(r, 8));
        snprintf(desc, dlen, "%d bit flips", flips);
        break;
    }
    case 1:
        len = below(r, n);
        snprintf(desc, dlen, "truncated to %zu of %zu bytes", len, n);
        break;
    case 2: {
        size_t at = below(r, len), run = 1 + below(r, 16);
        for (size_t i = at; i < at + run && i < len; i++)
            b[i] = (uint8_t)next_u64(r);
        snprintf(desc, dlen, "%zu random bytes at %zu", run, at);
        break;
    }
    case 3: {
        size_t at = below(r, len + 1), k = 1 + below(r, 8);
        if (next_u64(r) & 1) {
            memmove(b + at + k, b + at, len - at);
            for (size_t i = 0; i < k; i++)
                b[at + i] = (uint8_t)next_u64(r);
            len += k;
            snprintf(desc, dlen, "%zu bytes inserted at %zu", k, at);
        } else {
            if (at + k > len)
                k = len - at;
            memmove(b + at, b + at + k, len - at - k);
            len -= k;
            snprintf(desc, dlen, "%zu bytes deleted at %zu", k, at);
        }
        break;
    }
    default: {
        size_t at = below(r, len);
        size_t k = 1 + below(r, 9);
        for (size_t i = at; i < at + k && i < len; i++)
            b[i] = 0xff;
        snprintf(desc, dlen, "%zu 0xff bytes at %zu", k, at);
        break;
    }
    }
    *out_n = len;
    return b;
}

/* A compiled file: bytes of one section (the weights only for small
 * models: in large ones they just change numbers) or the header and table
 * changed, or the file cut; then, in three cases of four, every checksum
 * made right again. */
static uint8_t *mutate_compiled(rng *r, const model *mo, size_t *out_n, char *desc,
                                size_t dlen) {
    /* PACK (oneDNN's packed weights, in files compiled for onednn,cpu)
     * only where a file has one: mfc_find answers NULL otherwise. */
    static const char *const secs[] = {"GRPH", "STRS", "META", "WGTS", "PACK"};
    uint8_t *b = ob_alloc(mo->size);
    memcpy(b, mo->data, mo->size);
    size_t len = mo->size, off = 0, n = 88;
    const char *where = "header";
    int pick = (int)below(r, mo->big ? 4 : 6);
    if (pick == 5)
        pick = mfc_find(b, len, "PACK") ? 4 : 5;
    if (pick < 5) {
        const uint8_t *e = mfc_find(b, len, secs[pick == 3 && mo->big ? 0 : pick]);
        if (e) {
            where = secs[pick == 3 && mo->big ? 0 : pick];
            off = (size_t)mfc_le64(e + 8);
            n = (size_t)mfc_le64(e + 16);
            /* PACK: its index (u32 count, 40 bytes an entry); the blobs
             * are only numbers. */
            if (pick == 4 && n > 4 && 4 + (size_t)mfc_le32(b + off) * 40 < n)
                n = 4 + (size_t)mfc_le32(b + off) * 40;
        }
    }
    if (below(r, 8) == 0) {
        len = below(r, len);
        snprintf(desc, dlen, "compiled: truncated to %zu of %zu bytes", len, mo->size);
    } else {
        int k = 1 + (int)below(r, 6);
        for (int i = 0; i < k && n; i++) {
            size_t at = off + below(r, n);
            b[at] = below(r, 2) ? (uint8_t)next_u64(r) : (uint8_t)(b[at] ^ (1u << below(r, 8)));
        }
        snprintf(desc, dlen, "compiled: %d bytes of %s changed", k, where);
    }
    if (below(r, 4) != 0) {
        mfc_fix_checksums(b, len, below(r, 2));
        size_t used = strlen(desc);
        snprintf(desc + used, dlen - used, ", checksums recomputed");
    }
    *out_n = len;
    return b;
}

/* ---- structural mutations ---------------------------------------------- */

/* Any value name used in the graph, picked at random. */
static const char *some_name(rng *r, const Onnx__GraphProto *g) {
    size_t total = g->n_input + g->n_output + g->n_initializer;
    for (size_t i = 0; i < g->n_node; i++)
        total += g->node[i]->n_input + g->node[i]->n_output;
    size_t k = below(r, total + 1);
    if (k < g->n_input)
        return g->input[k]->name;
    k -= g->n_input;
    if (k < g->n_output)
        return g->output[k]->name;
    k -= g->n_output;
    if (k < g->n_initializer)
        return g->initializer[k]->name;
    k -= g->n_initializer;
    for (size_t i = 0; i < g->n_node; i++) {
        if (k < g->node[i]->n_input)
            return g->node[i]->input[k];
        k -= g->node[i]->n_input;
        if (k < g->node[i]->n_output)
            return g->node[i]->output[k];
        k -= g->node[i]->n_output;
    }
    return "no_such_value";
}

static void set_str(char **field, const char *v) {
    char *d = ob_str(v); /* v may alias *field */
    if (*field != protobuf_c_empty_string)
        free(*field);
    *field = d;
}

static Onnx__ValueInfoProto *some_io(rng *r, Onnx__GraphProto *g) {
    size_t n = g->n_input + g->n_output;
    if (!n)
        return NULL;
    size_t k = below(r, n);
    return k < g->n_input ? g->input[k] : g->output[k - g->n_input];
}

static Onnx__TensorShapeProto__Dimension *some_dim(rng *r, Onnx__GraphProto *g) {
    Onnx__ValueInfoProto *vi = some_io(r, g);
    if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type->shape || !vi->type->tensor_type->shape->n_dim)
        return NULL;
    Onnx__TensorShapeProto *sh = vi->type->tensor_type->shape;
    return sh->dim[below(r, sh->n_dim)];
}

static void set_dim_value(Onnx__TensorShapeProto__Dimension *d, int64_t v) {
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
        free(d->dim_param);
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = v;
}

static void mutate_attr(rng *r, Onnx__AttributeProto *a, char *desc, size_t dlen) {
    switch (below(r, 6)) {
    case 0:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
        a->i = absurd_int(r);
        snprintf(desc, dlen, "attribute '%s' = int %lld", a->name, (long long)a->i);
        break;
    case 1: {
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
        size_t n = below(r, 9);
        free(a->ints);
        a->ints = NULL;
        a->n_ints = 0;
        for (size_t i = 0; i < n; i++)
            OB_PUSH(a->ints, a->n_ints, below(r, 2) ? absurd_int(r) : (int64_t)below(r, 4));
        snprintf(desc, dlen, "attribute '%s' = %zu absurd ints", a->name, n);
        break;
    }
    case 2: {
        static const float f[] = {NAN, INFINITY, -INFINITY, 0.0f, -1.0f, 1e30f, 1e-30f};
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
        a->f = f[below(r, 7)];
        snprintf(desc, dlen, "attribute '%s' = float %g", a->name, (double)a->f);
        break;
    }
    case 3:
        a->type = (Onnx__AttributeProto__AttributeType)below(r, 16);
        snprintf(desc, dlen, "attribute '%s' type %d", a->name, (int)a->type);
        break;
    case 4:
        a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
        free(a->s.data);
        a->s.data = (uint8_t *)ob_str("\xff garbage");
        a->s.len = below(r, 10);
        snprintf(desc, dlen, "attribute '%s' = string", a->name);
        break;
    default:
        if (a->n_ints) {
            a->ints[below(r, a->n_ints)] = absurd_int(r);
            snprintf(desc, dlen, "attribute '%s' one int absurd", a->name);
        } else {
            set_str(&a->name, "no_such_attribute");
            snprintf(desc, dlen, "attribute renamed");
        }
        break;
    }
}

/* One structural change; returns 0 when the model offered nothing to change. */
static int mutate_once(rng *r, Onnx__ModelProto *m, char *desc, size_t dlen) {
    Onnx__GraphProto *g = m->graph;
    if (!g)
        return 0;
    Onnx__NodeProto *n = g->n_node ? g->node[below(r, g->n_node)] : NULL;
    switch (below(r, 16)) {
    case 0: { /* a declared dim */
        Onnx__TensorShapeProto__Dimension *d = some_dim(r, g);
        if (!d)
            return 0;
        static const int64_t v[] = {0, 1, 2, 3, 5, 64, -1, -7, (int64_t)1 << 40, INT64_MAX};
        set_dim_value(d, v[below(r, 10)]);
        snprintf(desc, dlen, "declared dim = %lld", (long long)d->dim_value);
        return 1;
    }
    case 1: { /* huge declared shape */
        Onnx__ValueInfoProto *vi = some_io(r, g);
        if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !vi->type->tensor_type->shape)
            return 0;
        Onnx__TensorShapeProto *sh = vi->type->tensor_type->shape;
        for (size_t i = 0; i < sh->n_dim; i++)
            set_dim_value(sh->dim[i], (int64_t)1 << (10 + below(r, 30)));
        snprintf(desc, dlen, "huge declared shape on '%s'", vi->name);
        return 1;
    }
    case 2: { /* an element type */
        int32_t t = (int32_t)below(r, 20) - 1;
        if (below(r, 2) && g->n_initializer) {
            g->initializer[below(r, g->n_initializer)]->data_type = t;
            snprintf(desc, dlen, "initializer data_type = %d", t);
            return 1;
        }
        Onnx__ValueInfoProto *vi = some_io(r, g);
        if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
            return 0;
        vi->type->tensor_type->elem_type = t;
        snprintf(desc, dlen, "elem_type of '%s' = %d", vi->name, t);
        return 1;
    }
    case 3: /* a node input renamed to another value, or dangling */
        if (!n || !n->n_input)
            return 0;
        set_str(&n->input[below(r, n->n_input)], below(r, 3) ? some_name(r, g) : "dangling");
        snprintf(desc, dlen, "node '%s' input renamed", n->name);
        return 1;
    case 4: /* a node output renamed (duplicate producer, or cycle) */
        if (!n || !n->n_output)
            return 0;
        set_str(&n->output[below(r, n->n_output)], some_name(r, g));
        snprintf(desc, dlen, "node '%s' output renamed", n->name);
        return 1;
    case 5:
    case 6: /* an attribute */
        if (!n || !n->n_attribute) {
            if (!n)
                return 0;
            Onnx__AttributeProto *a = ob_attr(n, below(r, 2) ? "axis" : "perm",
                                              ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
            a->i = absurd_int(r);
            snprintf(desc, dlen, "node '%s' gains an absurd attribute", n->name);
            return 1;
        }
        mutate_attr(r, n->attribute[below(r, n->n_attribute)], desc, dlen);
        return 1;
    case 7: { /* initializer dims */
        if (!g->n_initializer)
            return 0;
        Onnx__TensorProto *t = g->initializer[below(r, g->n_initializer)];
        if (t->n_dims && below(r, 2)) {
            t->dims[below(r, t->n_dims)] = absurd_int(r);
        } else {
            OB_PUSH(t->dims, t->n_dims, (int64_t)below(r, 3));
        }
        snprintf(desc, dlen, "initializer '%s' dims changed", t->name);
        return 1;
    }
    case 8: { /* initializer data cut or typed fields replaced */
        if (!g->n_initializer)
            return 0;
        Onnx__TensorProto *t = g->initializer[below(r, g->n_initializer)];
        if (t->raw_data.len)
            t->raw_data.len = below(r, t->raw_data.len);
        else
            t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        snprintf(desc, dlen, "initializer '%s' data cut", t->name);
        return 1;
    }
    case 9: { /* op type or domain */
        if (!n)
            return 0;
        static const char *ops[] = {"Conv",    "Reshape", "Gather",   "Concat", "Slice",
                                    "Expand",  "Tile",    "MatMul",   "Resize", "Split",
                                    "NoSuchOp", "Where",  "ConstantOfShape", "Transpose",
                                    "Softmax", "Loop",    "If",       "Range"};
        if (below(r, 5) == 0) {
            set_str(&n->domain, below(r, 2) ? "com.example" : "ai.onnx.ml");
            snprintf(desc, dlen, "node domain changed");
        } else {
            set_str(&n->op_type, ops[below(r, sizeof ops / sizeof ops[0])]);
            snprintf(desc, dlen, "node op_type = %s", n->op_type);
        }
        return 1;
    }
    case 10: { /* delete, duplicate or swap nodes */
        if (!g->n_node)
            return 0;
        size_t i = below(r, g->n_node), j = below(r, g->n_node);
        switch (below(r, 3)) {
        case 0:
            onnx__node_proto__free_unpacked(g->node[i], NULL);
            memmove(&g->node[i], &g->node[i + 1], (g->n_node - i - 1) * sizeof *g->node);
            g->n_node--;
            snprintf(desc, dlen, "node %zu deleted", i);
            break;
        case 1: {
            size_t len = onnx__node_proto__get_packed_size(g->node[i]);
            uint8_t *buf = ob_alloc(len);
            onnx__node_proto__pack(g->node[i], buf);
            Onnx__NodeProto *copy = onnx__node_proto__unpack(NULL, len, buf);
            free(buf);
            if (!copy)
                return 0;
            OB_PUSH(g->node, g->n_node, copy);
            snprintf(desc, dlen, "node %zu duplicated", i);
            break;
        }
        default: {
            Onnx__NodeProto *t = g->node[i];
            g->node[i] = g->node[j];
            g->node[j] = t;
            snprintf(desc, dlen, "nodes %zu and %zu swapped", i, j);
            break;
        }
        }
        return 1;
    }
    case 11: /* cycle: the first node reads the last node's output */
        if (g->n_node < 1 || !g->node[0]->n_input || !g->node[g->n_node - 1]->n_output)
            return 0;
        set_str(&g->node[0]->input[0], g->node[g->n_node - 1]->output[0]);
        snprintf(desc, dlen, "cycle");
        return 1;
    case 12: /* opset */
        if (!m->n_opset_import)
            return 0;
        m->opset_import[below(r, m->n_opset_import)]->version = below(r, 2) ? absurd_int(r)
                                                                           : (int64_t)below(r, 25);
        snprintf(desc, dlen, "opset version changed");
        return 1;
    case 13: /* drop or repeat a graph input or output */
        if (below(r, 2) && g->n_input) {
            size_t i = below(r, g->n_input);
            if (below(r, 2)) {
                onnx__value_info_proto__free_unpacked(g->input[i], NULL);
                memmove(&g->input[i], &g->input[i + 1], (g->n_input - i - 1) * sizeof *g->input);
                g->n_input--;
                snprintf(desc, dlen, "graph input %zu dropped", i);
            } else {
                OB_PUSH(g->input, g->n_input, ob_value_info(g->input[i]->name, 1, -1, NULL));
                snprintf(desc, dlen, "graph input %zu repeated", i);
            }
            return 1;
        }
        if (!g->n_output)
            return 0;
        if (below(r, 2)) {
            set_str(&g->output[below(r, g->n_output)]->name, some_name(r, g));
            snprintf(desc, dlen, "graph output renamed");
        } else {
            size_t keep = below(r, g->n_output);
            for (size_t i = keep; i < g->n_output; i++)
                onnx__value_info_proto__free_unpacked(g->output[i], NULL);
            g->n_output = keep;
            snprintf(desc, dlen, "graph outputs cut to %zu", g->n_output);
        }
        return 1;
    case 14: { /* an initializer shadows a graph input, or a typed field mismatch */
        if (!g->n_input)
            return 0;
        int64_t d = (int64_t)below(r, 4);
        Onnx__TensorProto *t =
            ob_init(g, g->input[below(r, g->n_input)]->name, 1 + (int32_t)below(r, 12), 1, &d,
                    NULL, 0);
        (void)t;
        snprintf(desc, dlen, "initializer added over a graph input");
        return 1;
    }
    default: { /* rank changed: a dim added or removed */
        Onnx__ValueInfoProto *vi = some_io(r, g);
        if (!vi || !vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
            !vi->type->tensor_type->shape)
            return 0;
        Onnx__TensorShapeProto *sh = vi->type->tensor_type->shape;
        if (sh->n_dim && below(r, 2)) {
            protobuf_c_message_free_unpacked(&sh->dim[sh->n_dim - 1]->base, NULL);
            sh->n_dim--;
        } else {
            Onnx__TensorShapeProto__Dimension *dim = ob_alloc(sizeof *dim);
            onnx__tensor_shape_proto__dimension__init(dim);
            set_dim_value(dim, (int64_t)below(r, 4));
            OB_PUSH(sh->dim, sh->n_dim, dim);
        }
        snprintf(desc, dlen, "rank of '%s' changed", vi->name);
        return 1;
    }
    }
}

/* The bytes of case k: a mutated copy of one model. */
static uint8_t *make_case(long k, uint64_t seed, size_t *len, const model **which, char *desc,
                          size_t dlen) {
    rng r = {seed ^ ((uint64_t)k * 0xd1b54a32d192ed03ull)};
    next_u64(&r);
    const model *mo;
    if (n_big && (k % 100 == 99 || !n_small))
        mo = &models[n_small + (size_t)(k / 100) % n_big];
    else
        mo = &models[below(&r, n_small)];
    *which = mo;
    if (mo->compiled)
        return mutate_compiled(&r, mo, len, desc, dlen);
    /* Large models get structural mutations only: random bytes there
     * mostly land in weights and just run the whole network. */
    if (!mo->big && below(&r, 10) < 4)
        return mutate_bytes(&r, mo->data, mo->size, len, desc, dlen);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, mo->size, mo->data);
    if (!m)
        return mutate_bytes(&r, mo->data, mo->size, len, desc, dlen);
    int rounds = below(&r, 4) == 0 ? 2 + (int)below(&r, 3) : 1;
    size_t used = 0;
    desc[0] = '\0';
    for (int i = 0; i < rounds; i++) {
        char one[160] = "";
        for (int tries = 0; tries < 8 && !mutate_once(&r, m, one, sizeof one); tries++)
            ;
        int w = snprintf(desc + used, dlen - used, "%s%s", i ? "; " : "", one);
        if (w > 0 && (size_t)w < dlen - used)
            used += (size_t)w;
    }
    uint8_t *b = ob_pack(m, len);
    onnx__model_proto__free_unpacked(m, NULL);
    return b;
}

/* ---- running one case ------------------------------------------------- */

#define MAX_RUN_INPUT_BYTES ((size_t)16 << 20)

static void fill_input(minfer_tensor *t, rng *r) {
    size_t n = (size_t)minfer_tensor_numel(t);
    void *d = minfer_tensor_data(t);
    switch (minfer_tensor_dtype(t)) {
    case MINFER_DTYPE_FLOAT:
        for (size_t i = 0; i < n; i++)
            ((float *)d)[i] = (float)((double)below(r, 4001) / 1000.0 - 2.0);
        break;
    case MINFER_DTYPE_INT64:
        for (size_t i = 0; i < n; i++)
            ((int64_t *)d)[i] = (int64_t)below(r, 4);
        break;
    case MINFER_DTYPE_INT32:
        for (size_t i = 0; i < n; i++)
            ((int32_t *)d)[i] = (int32_t)below(r, 4);
        break;
    case MINFER_DTYPE_BOOL:
        for (size_t i = 0; i < n; i++)
            ((uint8_t *)d)[i] = (uint8_t)below(r, 2);
        break;
    case MINFER_DTYPE_STRING:
        break; /* NULL elements read as "" */
    default: {
        uint8_t *b = d;
        for (size_t i = 0; i < minfer_tensor_nbytes(t); i++)
            b[i] = (uint8_t)below(r, 3);
        break;
    }
    }
}

static minfer_options *case_options(const model *mo) {
    minfer_options *opt = NULL;
    minfer_limits lim = {0, mo->big ? (uint64_t)16 << 20 : (uint64_t)64 << 20, 100000,
                         10000};
    if (minfer_options_create(&opt) != MINFER_OK ||
        minfer_options_set_providers_str(opt, "cpu") != MINFER_OK ||
        minfer_options_set_threads(opt, 1) != MINFER_OK ||
        minfer_options_set_log_level(opt, MINFER_LOG_ERROR) != MINFER_OK ||
        minfer_options_set_limits(opt, &lim) != MINFER_OK) {
        fprintf(stderr, "mutate_models: options: %s\n", minfer_last_error());
        exit(3);
    }
    return opt;
}

static void count_status(minfer_status st) {
    if ((int)st >= 0 && (int)st < 16)
        shm->status_counts[st]++;
}

/* Runs case k in this process; returns its outcome. */
static int run_case(long k, uint64_t seed, int verbose) {
    char desc[512];
    size_t len;
    const model *mo;
    uint8_t *bytes = make_case(k, seed, &len, &mo, desc, sizeof desc);
    if (verbose)
        printf("case %ld: %s: %s (%zu bytes)\n", k, mo->path, desc, len);
    minfer_options *opt = case_options(mo);
    minfer_session *s = NULL;
    int outcome = R_RAN;
    minfer_status st = minfer_session_create_from_memory(bytes, len, opt, &s);
    if (st != MINFER_OK) {
        outcome = R_CREATE_ERR;
        goto done;
    }
    rng r = {seed + (uint64_t)k};
    size_t n_in = minfer_session_input_count(s), n_out = minfer_session_output_count(s);
    minfer_tensor **in = calloc(n_in + 1, sizeof *in), **out = calloc(n_out + 1, sizeof *out);
    const char **names = calloc(n_in + 1, sizeof *names);
    size_t total = 0;
    for (size_t i = 0; i < n_in && outcome == R_RAN; i++) {
        minfer_value_info info;
        int64_t dims[MINFER_MAX_RANK];
        minfer_session_input_info(s, i, &info);
        names[i] = info.name;
        int32_t rank = info.rank < 0 ? 1 : info.rank;
        size_t elems = 1;
        for (int32_t d = 0; d < rank; d++) {
            dims[d] = info.rank < 0 || info.dims[d] < 0 ? 1 : info.dims[d];
            elems = dims[d] && elems > SIZE_MAX / (size_t)dims[d] ? SIZE_MAX
                                                                 : elems * (size_t)dims[d];
        }
        size_t es = minfer_dtype_size(info.dtype);
        if (!es || elems > MAX_RUN_INPUT_BYTES / es || (total += elems * es) > MAX_RUN_INPUT_BYTES) {
            outcome = R_SKIPPED;
            break;
        }
        if (minfer_tensor_create(info.dtype, dims, (size_t)rank, &in[i]) != MINFER_OK) {
            outcome = R_SKIPPED;
            break;
        }
        fill_input(in[i], &r);
    }
    if (outcome == R_RAN) {
        st = minfer_session_run(s, names, (const minfer_tensor *const *)in, n_in, NULL, out,
                                n_out);
        if (st != MINFER_OK)
            outcome = R_RUN_ERR;
    }
    for (size_t i = 0; i < n_in; i++)
        minfer_tensor_free(in[i]);
    for (size_t i = 0; i < n_out; i++)
        minfer_tensor_free(out[i]);
    free(in);
    free(out);
    free(names);
done:
    if (outcome == R_CREATE_ERR || outcome == R_RUN_ERR) {
        count_status(st);
        const char *msg = minfer_last_error();
        if (!msg || !msg[0] || st == MINFER_OK)
            outcome = R_BAD_ERROR;
        if (verbose)
            printf("  -> %s: %s\n", minfer_status_str(st), msg ? msg : "");
    } else if (verbose) {
        printf("  -> %s\n", outcome_names[outcome]);
    }
    minfer_session_free(s);
    minfer_options_free(opt);
    free(bytes);
    return outcome;
}

/* ---- the parent: batches, watchdog --------------------------------------- */

static void save_case(const char *dir, long k, uint64_t seed) {
    char desc[512], path[PATH_MAX];
    size_t len;
    const model *mo;
    if (!dir)
        return;
    uint8_t *bytes = make_case(k, seed, &len, &mo, desc, sizeof desc);
    snprintf(path, sizeof path, "%s/mutate-%llu-%ld.%s", dir, (unsigned long long)seed, k,
             mo->compiled ? "mfc" : "onnx");
    if (ob_write(path, bytes, len) == 0)
        fprintf(stderr, "  saved as %s\n", path);
    free(bytes);
}

static void load_model(const char *path, int big) {
    FILE *f = fopen(path, "rb");
    struct stat sb;
    if (!f || fstat(fileno(f), &sb) != 0) {
        if (f)
            fclose(f);
        return;
    }
    model *mo = &models[n_models];
    snprintf(mo->path, sizeof mo->path, "%s", path);
    mo->size = (size_t)sb.st_size;
    mo->data = ob_alloc(mo->size);
    mo->big = big;
    if (fread(mo->data, 1, mo->size, f) != mo->size) {
        free(mo->data);
        fclose(f);
        return;
    }
    fclose(f);
    mo->compiled = minfer_is_compiled(mo->data, mo->size);
    n_models++;
}

/* Compiles models[first..last), every every-th one, into dir and loads the
 * results (as small or big as their sources). Returns how many. */
/* Compiled files with a PACK section among the models. */
static size_t n_packed_mfc;

static size_t compile_models(size_t first, size_t last, size_t every, const char *dir) {
    size_t done = 0;
    minfer_options *opt = NULL, *dnn = NULL;
    if (minfer_options_create(&opt) != MINFER_OK ||
        minfer_options_set_providers_str(opt, "cpu") != MINFER_OK ||
        minfer_options_set_threads(opt, 1) != MINFER_OK ||
        minfer_options_set_log_level(opt, MINFER_LOG_ERROR) != MINFER_OK ||
        minfer_options_create(&dnn) != MINFER_OK ||
        minfer_options_set_providers_str(dnn, "onednn,cpu") != MINFER_OK ||
        minfer_options_set_threads(dnn, 1) != MINFER_OK ||
        minfer_options_set_log_level(dnn, MINFER_LOG_ERROR) != MINFER_OK)
        exit(3);
    int k = 0;
    for (size_t i = first; i < last && n_models < 8192; i += every, k++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%zu.mfc", dir, i);
        /* Every other one (the large ones all) for onednn,cpu where oneDNN
         * loads, so that files with a PACK section (its packed weights) are
         * mutated too. */
        if (((k % 2 == 0 && every > 1) ||
             minfer_compile_model(models[i].path, path, dnn) != MINFER_OK) &&
            minfer_compile_model(models[i].path, path, opt) != MINFER_OK)
            continue;
        size_t before = n_models;
        load_model(path, models[i].big);
        unlink(path);
        done++;
        if (n_models > before && mfc_find(models[n_models - 1].data, models[n_models - 1].size,
                                          "PACK"))
            n_packed_mfc++;
    }
    minfer_options_free(opt);
    minfer_options_free(dnn);
    return done;
}

int main(int argc, char **argv) {
    long cases = 20000, only = -1;
    uint64_t seed = 20240611;
    double timeout = 20.0;
    const char *node_dir = NULL, *node_list = NULL, *save = NULL;
    long compiled = 0;
    const char **big = calloc((size_t)argc + 1, sizeof *big);
    size_t n_big_args = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            cases = atol(argv[++i]);
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            timeout = atof(argv[++i]);
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = atol(argv[++i]);
        else if (strcmp(argv[i], "--save") == 0 && i + 1 < argc)
            save = argv[++i];
        else if (strcmp(argv[i], "--node-dir") == 0 && i + 1 < argc)
            node_dir = argv[++i];
        else if (strcmp(argv[i], "--node-list") == 0 && i + 1 < argc)
            node_list = argv[++i];
        else if (strcmp(argv[i], "--compiled") == 0 && i + 1 < argc)
            compiled = atol(argv[++i]);
        else if (argv[i][0] == '-') {
            fprintf(stderr, "mutate_models: unknown option %s\n", argv[i]);
            return 2;
        } else
            big[n_big_args++] = argv[i];
    }
    size_t cap = 8192 + 2 * n_big_args;
    char tmpdir[] = "/tmp/mutate_models_XXXXXX";
    if (compiled > 0 && !mkdtemp(tmpdir)) {
        fprintf(stderr, "mutate_models: mkdtemp: %s\n", strerror(errno));
        return 2;
    }
    models = calloc(cap, sizeof *models);
    if (node_dir && node_list) {
        FILE *f = fopen(node_list, "r");
        char line[512], path[PATH_MAX];
        while (f && fgets(line, sizeof line, f) && n_models < 4096) {
            line[strcspn(line, "\r\n #")] = '\0';
            if (!line[0])
                continue;
            snprintf(path, sizeof path, "%s/%s/model.onnx", node_dir, line);
            load_model(path, 0);
        }
        if (f)
            fclose(f);
    }
    size_t n_onnx = n_models, n_mfc = 0;
    if (compiled > 0)
        n_mfc += compile_models(0, n_onnx, (size_t)compiled, tmpdir);
    n_small = n_models;
    for (size_t i = 0; i < n_big_args; i++)
        load_model(big[i], 1);
    if (compiled > 0)
        n_mfc += compile_models(n_small, n_models, 1, tmpdir);
    if (compiled > 0) {
        rmdir(tmpdir);
        printf("mutate_models: %zu compiled models among them (%zu with oneDNN's packed "
               "weights)\n", n_mfc, n_packed_mfc);
    }
    n_big = n_models - n_small;
    if (!n_models) {
        fprintf(stderr, "mutate_models: no models found\n");
        return 2;
    }
    shm = mmap(NULL, sizeof *shm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED)
        return 2;
    memset((void *)shm, 0, sizeof *shm);
    /* Hold the CPU provider open: each session's dlopen then only counts. */
    minfer_session *warm = NULL;
    {
        int64_t one = 1;
        Onnx__ModelProto *m = ob_model(13);
        ob_input(m->graph, "x", 1, 1, &one);
        ob_node(m->graph, "Relu", "x", "y");
        ob_output(m->graph, "y", 1);
        size_t len;
        uint8_t *b = ob_finish(m, &len);
        minfer_options *opt = case_options(&models[0]);
        if (minfer_session_create_from_memory(b, len, opt, &warm) != MINFER_OK) {
            fprintf(stderr, "mutate_models: cannot create a session: %s\n", minfer_last_error());
            return 2;
        }
        minfer_options_free(opt);
        free(b);
    }
    if (only >= 0) {
        int o = run_case(only, seed, 1);
        minfer_session_free(warm);
        return o == R_BAD_ERROR;
    }

    long crashes = 0, hangs = 0, other = 0, next = 0;
    long long t0 = now_ms();
    while (next < cases) {
        shm->current = -1;
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 2;
        }
        if (pid == 0) {
            for (long k = next; k < cases; k++) {
                shm->started = now_ms();
                shm->current = k;
                shm->counts[run_case(k, seed, 0)]++;
            }
            shm->current = -1;
            minfer_session_free(warm);
            exit(0);
        }
        int status = 0;
        for (;;) {
            pid_t w = waitpid(pid, &status, WNOHANG);
            if (w == pid)
                break;
            long cur = shm->current;
            if (cur >= 0 && (double)(now_ms() - shm->started) > timeout * 1000.0) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                fprintf(stderr, "mutate_models: HANG: case %ld ran over %.0f s\n", cur, timeout);
                save_case(save, cur, seed);
                hangs++;
                next = cur + 1;
                status = -1;
                break;
            }
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        if (status == -1)
            continue;
        long cur = shm->current;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && cur < 0) {
            next = cases;
        } else {
            if (WIFSIGNALED(status)) {
                fprintf(stderr, "mutate_models: CRASH: case %ld died of signal %d\n", cur,
                        WTERMSIG(status));
                crashes++;
            } else {
                fprintf(stderr, "mutate_models: FAILURE: case %ld: child exited with %d "
                        "(a sanitizer report, or a leak found at exit)\n",
                        cur, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                other++;
            }
            if (cur >= 0) {
                fprintf(stderr, "  reproduce: mutate_models --seed %llu --only %ld (same model "
                        "arguments)\n", (unsigned long long)seed, cur);
                save_case(save, cur, seed);
                next = cur + 1;
            } else {
                next = cases; /* died after the last case (at exit): leak report */
            }
        }
    }
    long done = 0;
    for (int o = 0; o < R_COUNT; o++)
        done += shm->counts[o];
    printf("mutate_models: %ld cases (seed %llu, %zu node models, %zu large) in %.1f s\n", cases,
           (unsigned long long)seed, n_small, n_big, (double)(now_ms() - t0) / 1000.0);
    for (int o = 0; o < R_COUNT; o++)
        printf("  %-40s %ld\n", outcome_names[o], shm->counts[o]);
    printf("  errors by status:");
    for (int st = 1; st < 16; st++)
        if (shm->status_counts[st])
            printf(" %s %ld;", minfer_status_str((minfer_status)st), shm->status_counts[st]);
    printf("\n  crashes %ld, hangs %ld, other failures %ld\n", crashes, hangs, other);
    minfer_session_free(warm);
    for (size_t i = 0; i < n_models; i++)
        free(models[i].data);
    free(models);
    free(big);
    int ok = crashes == 0 && hangs == 0 && other == 0 && shm->counts[R_BAD_ERROR] == 0 &&
             done + crashes + hangs + other >= cases;
    return ok ? 0 : 1;
}
