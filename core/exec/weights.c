/*
 * Giving back the host's copy of weights a provider packed (exec/weights.h).
 *
 * A provider that reorders a constant into a layout of its own (oneDNN's
 * blocked weights) says so in minfer_node_prep.const_packed. Without this
 * file the weights would stay resident twice: the graph's plain copy and the
 * provider's packed one. After each node is prepared:
 *  1. every constant input the node packed is checked: its value is an
 *     initializer of the session's graph, not a graph output, and every node
 *     that reads it (implicit subgraph inputs included) was folded in this
 *     plan or prepared with that input reported packed;
 *  2. its plain copy is given back:
 *     - data in the mapped model file (a compiled model's weights section):
 *       its pages, with madvise(MADV_DONTNEED); the data stays readable
 *       (the pages come back from the file);
 *     - a private copy of bytes still in the mapped ONNX file
 *       (minfer_tensor.src, checked equal first): freed, and made again
 *       from the file by mf_weights_restore before another plan is built;
 *     - any other private copy (one the optimizer made, or the weights of
 *       a model read from memory) stays: nothing could make it again for a
 *       later plan.
 *     A copy is freed only when no other constant or plan value shares its
 *     bytes and no other cached plan has a view into it (one built for
 *     other shapes may have left a reader of it unpacked, on the CPU
 *     provider); a freed copy leaves its tensor's data NULL.
 * Packing one weight holds its plain and its packed copy at once; with every
 * other weight's plain copy resident too, the peak would be all the weights
 * plus the largest one's packed copy. So copies that can be read again from
 * the file are made only when needed:
 *  0. before the nodes of the session's first plan are prepared
 *     (mf_weights_defer), the copy of each large weight that only nodes
 *     prepared now read (none folded, none dynamic, no graph output) is
 *     freed the same way;
 *  1. before a node is prepared (mf_weights_materialize), its inputs' freed
 *     copies are read again from the file, and its file pages given back.
 * The peak is then the weights packed so far, the weights whose readers are
 * not all prepared, and one weight twice.
 *  2. after the nodes are prepared (mf_weights_prepared), an ONNX file's
 *     mapping is given back whole: it is read only to copy weights again,
 *     and the pages at the edges of the weights (shared with their
 *     neighbours) and those of the protobuf around them stayed resident.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "exec/weights.h"
#include "util/internal.h"

/* Copies smaller than this are left alone: the saving is below a page. */
#define MIN_RELEASE_BYTES 4096
/* Copies deferred before preparing: smaller ones are not worth a second
 * read of the file. */
#define MIN_DEFER_BYTES (64 * 1024)

/* 1 when every reader of value u in plan p is done with its plain copy. */
static int all_readers_packed(const minfer_session *s, const mf_plan *p, int u) {
    const mf_graph *g = s->g;
    int readers = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        const mf_nplan *ns = &p->nodes[i];
        for (size_t j = 0; j < n->n_inputs; j++) {
            if (n->inputs[j] != u)
                continue;
            readers++;
            if (ns->folded)
                continue;
            if (!ns->prepared || ns->dynamic || !ns->packed || !ns->packed[j])
                return 0;
        }
    }
    return readers > 0;
}

static int overlaps(const void *a, size_t an, const void *b, size_t bn) {
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return a && b && pa < pb + bn && pb < pa + an;
}

/* 1 when the bytes of value u are its own: no other initializer (or
 * constant of the plan) points into them. */
static int bytes_unshared(const minfer_session *s, const mf_plan *p, int u) {
    const mf_graph *g = s->g;
    const minfer_tensor_view *mine = &g->values[u].initializer->view;
    for (size_t v = 0; v < g->n_values; v++) {
        if ((int)v == u)
            continue;
        const minfer_tensor *t = g->values[v].initializer;
        if (t && overlaps(mine->data, mine->nbytes, t->view.data, t->view.nbytes))
            return 0;
        if (p->vals[v].known &&
            overlaps(mine->data, mine->nbytes, p->vals[v].view.data, p->vals[v].view.nbytes))
            return 0;
    }
    return 1;
}

/* 1 when no plan in the session's cache but p has a view into the bytes of
 * value u. Readers differ from plan to plan: with other input shapes a node
 * may not fold, or the packing provider may decline it and the CPU provider
 * take it, so an earlier plan can still read the plain copy that this
 * plan's readers all packed, and it runs again from the cache. */
static int unused_by_other_plans(const minfer_session *s, const mf_plan *p, int u) {
    const mf_graph *g = s->g;
    const minfer_tensor_view *mine = &g->values[u].initializer->view;
    for (size_t k = 0; k < s->n_plans; k++) {
        const mf_plan *q = s->plans[k];
        if (q == p)
            continue;
        for (size_t v = 0; v < g->n_values; v++)
            if (overlaps(mine->data, mine->nbytes, q->vals[v].view.data, q->vals[v].view.nbytes))
                return 0;
    }
    return 1;
}

/* Drops the whole pages inside [data, data + bytes) of a read-only file
 * mapping: the data stays valid, its pages are read again on a touch. */
static void drop_file_pages(const void *data, size_t bytes) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uintptr_t a = ((uintptr_t)data + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t b = ((uintptr_t)data + bytes) & ~((uintptr_t)page - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_DONTNEED);
}

/* 1 when copy holds the bytes of the file mapping at src. Compared a
 * megabyte at a time, each piece's file pages given back at once, so the
 * check does not bring the whole weight into memory a second time. */
static int same_as_file(const char *src, const char *copy, size_t bytes) {
    const size_t step = (size_t)1 << 20;
    for (size_t at = 0; at < bytes; at += step) {
        size_t k = bytes - at < step ? bytes - at : step;
        int same = memcmp(src + at, copy + at, k) == 0;
        drop_file_pages(src + at, k);
        if (!same)
            return 0;
    }
    return 1;
}

/* 1 when every reader of value u is a node that prepare_nodes prepares in
 * plan p (exec/build.c): not folded, not dynamic, placed. */
static int all_readers_prepared(const minfer_session *s, const mf_plan *p, int u) {
    const mf_graph *g = s->g;
    int readers = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        const mf_nplan *ns = &p->nodes[i];
        for (size_t j = 0; j < n->n_inputs; j++) {
            if (n->inputs[j] != u)
                continue;
            readers++;
            if (ns->folded || ns->dynamic || ns->prov < 0)
                return 0;
        }
    }
    return readers > 0;
}

/* 1 when t holds a private copy of the bytes at t->src in the file mapping
 * the graph keeps. */
static int copy_of_file(const mf_graph *g, const minfer_tensor *t) {
    const char *src = t->src, *blob = g->blob;
    return t->owns_data && t->view.data && src && blob && src >= blob &&
           t->view.nbytes <= g->blob_size && src - blob <= (ptrdiff_t)(g->blob_size - t->view.nbytes) &&
           same_as_file(src, t->view.data, t->view.nbytes);
}

/* Frees t's copy (a copy of the file, not shared) and the plan's view of it. */
static void give_back(minfer_tensor *t, mf_vplan *vs) {
    if (t->owns_data == MF_OWNS_MAPPED)
        munmap(t->view.data, t->view.nbytes);
    else
        free(t->view.data);
    t->view.data = NULL;
    t->owns_data = 0;
    vs->view.data = NULL;
}

void mf_weights_defer(minfer_session *s, mf_plan *p) {
    const mf_graph *g = s->g;
    /* Another plan's views may point at a copy (a reader it left on the CPU
     * provider): only the session's first plan defers. */
    if (s->n_plans)
        return;
    for (size_t u = 0; u < g->n_values; u++) {
        const mf_value *v = &g->values[u];
        minfer_tensor *t = v->initializer;
        mf_vplan *vs = &p->vals[u];
        if (!t || v->is_output || t->view.dtype == MINFER_DTYPE_STRING || !t->view.data ||
            t->view.nbytes < MIN_DEFER_BYTES || vs->view.data != t->view.data ||
            !all_readers_prepared(s, p, (int)u) || !bytes_unshared(s, p, (int)u) ||
            !copy_of_file(g, t))
            continue;
        give_back(t, vs);
    }
}

minfer_status mf_weights_materialize(minfer_session *s, mf_plan *p, int i) {
    const mf_graph *g = s->g;
    const mf_node *n = &g->nodes[i];
    for (size_t j = 0; j < n->n_inputs; j++) {
        int u = n->inputs[j];
        minfer_tensor *t = u >= 0 ? g->values[u].initializer : NULL;
        if (!t || t->view.data || !t->src || !t->view.nbytes)
            continue;
        /* A mapping of its own: freed after packing, it leaves no hole in
         * the heap that the process keeps (malloc would place it there
         * once freed mappings raised its threshold). */
        void *data = mf_test_alloc_fails() ? MAP_FAILED
                                           : mmap(NULL, t->view.nbytes, PROT_READ | PROT_WRITE,
                                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (data == MAP_FAILED)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory reading weight '%s' again",
                            s->errctx, g->values[u].name);
        memcpy(data, t->src, t->view.nbytes);
        drop_file_pages(t->src, t->view.nbytes);
        t->view.data = data;
        t->owns_data = MF_OWNS_MAPPED;
        p->vals[u].view.data = data;
    }
    return MINFER_OK;
}

void mf_weights_prepared(minfer_session *s) {
    const mf_graph *g = s->g;
    if (g->blob && !g->compiled_level)
        drop_file_pages(g->blob, g->blob_size);
}

void mf_weights_release_packed(minfer_session *s, mf_plan *p, int i) {
    const mf_graph *g = s->g;
    const mf_node *n = &g->nodes[i];
    const mf_nplan *ns = &p->nodes[i];
    if (!ns->packed)
        return;
    for (size_t j = 0; j < n->n_inputs; j++) {
        int u = n->inputs[j];
        if (u < 0 || !ns->packed[j])
            continue;
        mf_value *v = &g->values[u];
        minfer_tensor *t = v->initializer;
        mf_vplan *vs = &p->vals[u];
        if (!t || v->is_output || t->view.dtype == MINFER_DTYPE_STRING || !t->view.data ||
            t->view.nbytes < MIN_RELEASE_BYTES || vs->view.data != t->view.data ||
            !all_readers_packed(s, p, u))
            continue;
        const char *blob = g->blob;
        if (blob && (const char *)t->view.data >= blob &&
            (const char *)t->view.data + t->view.nbytes <= blob + g->blob_size) {
            drop_file_pages(t->view.data, t->view.nbytes);
            continue;
        }
        if (!t->owns_data || !bytes_unshared(s, p, u) || !unused_by_other_plans(s, p, u) ||
            !copy_of_file(g, t))
            continue;
        give_back(t, vs);
    }
}

minfer_status mf_weights_restore(minfer_session *s) {
    const mf_graph *g = s->g;
    for (size_t v = 0; v < g->n_values; v++) {
        minfer_tensor *t = g->values[v].initializer;
        if (!t || t->view.data || !t->src || !t->view.nbytes)
            continue;
        void *data = mf_alloc_host(t->view.nbytes);
        if (!data)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory reading weight '%s' again",
                            s->errctx, g->values[v].name);
        memcpy(data, t->src, t->view.nbytes);
        drop_file_pages(t->src, t->view.nbytes);
        t->view.data = data;
        t->owns_data = 1;
    }
    return MINFER_OK;
}
