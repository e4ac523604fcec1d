/*
 * Giving back the host's copy of weights a provider packed (plan/weights.h).
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
 *     copies are read again from the file, a megabyte at a time, each
 *     megabyte's file pages given back as it is copied (the load copies
 *     the weights out of an ONNX file the same way, load/tensor_proto.c);
 *  1a. while the node is prepared, a provider packing one of them a slice
 *     at a time says after each slice which plain bytes it is done with
 *     (minfer_host_api.const_consumed, mf_weights_consumed): their pages
 *     are given back at once (a compiled model's file pages, or the copy
 *     of step 1, flagged refill); when prepare_node returns, a copy that
 *     stays for another reader is read again from the file
 *     (mf_weights_refill).
 * The peak is then the weights packed so far, the weights whose readers are
 * not all prepared, and one weight once plus a slice (one weight twice when
 * its provider packs it whole).
 *  2. after the nodes are prepared (mf_weights_prepared), an ONNX file's
 *     mapping is given back whole: it is read only to copy weights again,
 *     and the pages at the edges of the weights (shared with their
 *     neighbours) and those of the protobuf around them stayed resident.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include <xxhash.h>

#include "plan/weights.h"
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
    for (size_t k = 0; k < s->cache.n; k++) {
        const mf_plan *q = s->cache.plans[k];
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

/* Reads bytes bytes of the model file at the place of src in the graph's
 * mapping into dst with pread, never through the mapping: the file may have
 * been truncated since (a touch of the mapping past its end is SIGBUS) or
 * rewritten. 0 when every byte was read. */
static int read_file_at(const mf_graph *g, const char *src, void *dst, size_t bytes) {
    const char *blob = g->blob;
    if (!g->blob_fd_set || !blob || src < blob || (size_t)(src - blob) > g->blob_size ||
        bytes > g->blob_size - (size_t)(src - blob))
        return -1;
    off_t at = (off_t)(src - blob);
    for (size_t done = 0; done < bytes;) {
        ssize_t k = pread(g->blob_fd, (char *)dst + done, bytes - done, at + (off_t)done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1; /* an error, or the file ends early */
        done += (size_t)k;
    }
    return 0;
}

/* Makes t's copy at dst again from the model file: the bytes its sum was
 * taken of when the copy was given back, else the file changed on disk
 * under the session, and that is the error (never other weights). */
static minfer_status copy_from_file(const minfer_session *s, const minfer_tensor *t, void *dst,
                                    const char *name) {
    if (read_file_at(s->g, t->src, dst, t->view.nbytes) != 0 ||
        (t->src_summed && XXH3_64bits(dst, t->view.nbytes) != t->src_sum))
        return mf_error(MINFER_ERR_IO,
                        "%s: the model file changed under the session (truncated or rewritten): "
                        "weight '%s' cannot be read again from it; create the session again",
                        s->errctx, name);
    return MINFER_OK;
}

/* 1 when copy holds the bytes of the model file at src. Compared a
 * megabyte at a time through a buffer, read with pread. */
static int same_as_file(const mf_graph *g, const char *src, const char *copy, size_t bytes) {
    const size_t step = (size_t)1 << 20;
    char *buf = malloc(bytes < step ? bytes : step);
    if (!buf)
        return 0;
    int same = 1;
    for (size_t at = 0; same && at < bytes; at += step) {
        size_t k = bytes - at < step ? bytes - at : step;
        same = read_file_at(g, src + at, buf, k) == 0 && memcmp(buf, copy + at, k) == 0;
    }
    free(buf);
    return same;
}

/* 1 when every reader of value u is a node that prepare_nodes prepares in
 * plan p (plan/build.c): not folded, not dynamic, placed. */
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
           same_as_file(g, src, t->view.data, t->view.nbytes);
}

/* 1 when t is a copy mf_weights_materialize made from the file mapping:
 * nothing writes to it, so it holds the file's bytes but for the pages a
 * provider gave back (mf_weights_consumed), which t->refill flags. */
static int materialized(const minfer_tensor *t) {
    return t->owns_data == MF_OWNS_MAPPED && t->view.data && t->src;
}

/* Frees t's copy (a copy of the file, not shared) and the plan's view of
 * it; the first time, its sum is kept, for the reads again to check. */
static void give_back(minfer_tensor *t, mf_vplan *vs) {
    if (!t->src_summed) {
        t->src_sum = XXH3_64bits(t->view.data, t->view.nbytes);
        t->src_summed = 1;
    }
    if (t->owns_data == MF_OWNS_MAPPED)
        munmap(t->view.data, t->view.nbytes);
    else
        free(t->view.data);
    t->view.data = NULL;
    t->owns_data = 0;
    t->refill = 0;
    vs->view.data = NULL;
}

void mf_weights_defer(minfer_session *s, mf_plan *p) {
    const mf_graph *g = s->g;
    /* Another plan's views may point at a copy (a reader it left on the CPU
     * provider): only the session's first plan defers. */
    if (s->cache.n)
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
        minfer_status st = copy_from_file(s, t, data, g->values[u].name);
        if (st != MINFER_OK) {
            munmap(data, t->view.nbytes);
            return st;
        }
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

/* Copies t's bytes again from the file when a provider gave pages of it
 * back (mf_weights_consumed) and the copy stays. */
static minfer_status refill(const minfer_session *s, minfer_tensor *t, const char *name) {
    if (!t || !t->refill || !materialized(t))
        return MINFER_OK;
    minfer_status st = copy_from_file(s, t, t->view.data, name);
    if (st == MINFER_OK)
        t->refill = 0;
    return st;
}

minfer_status mf_weights_refill(minfer_session *s, int i) {
    const mf_node *n = &s->g->nodes[i];
    for (size_t j = 0; j < n->n_inputs; j++) {
        int u = n->inputs[j];
        minfer_status st = u >= 0 ? refill(s, s->g->values[u].initializer, s->g->values[u].name)
                                  : MINFER_OK;
        if (st != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}

minfer_status mf_weights_release_packed(minfer_session *s, mf_plan *p, int i) {
    const mf_graph *g = s->g;
    const mf_node *n = &g->nodes[i];
    const mf_nplan *ns = &p->nodes[i];
    if (!ns->packed)
        return mf_weights_refill(s, i);
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
        /* A compiled model's weights are in the session's own copy of the
         * file (session.c), which nothing could make again: they stay. */
        const char *blob = g->blob;
        if (blob && (const char *)t->view.data >= blob &&
            (const char *)t->view.data + t->view.nbytes <= blob + g->blob_size)
            continue;
        if (!t->owns_data || !bytes_unshared(s, p, u) || !unused_by_other_plans(s, p, u) ||
            (!materialized(t) && !copy_of_file(g, t)))
            continue;
        give_back(t, vs);
    }
    return mf_weights_refill(s, i);
}

void mf_weights_consumed(minfer_session *s, int i, size_t input, const void *const_data,
                         size_t offset, size_t bytes) {
    const mf_graph *g = s->g;
    if (i < 0 || (size_t)i >= g->n_nodes || input >= g->nodes[i].n_inputs)
        return;
    int u = g->nodes[i].inputs[input];
    minfer_tensor *t = u >= 0 ? g->values[u].initializer : NULL;
    /* The provider's offsets are into the const_data it was given. */
    if (!t || !t->view.data || const_data != t->view.data || offset > t->view.nbytes ||
        bytes > t->view.nbytes - offset)
        return;
    const char *blob = g->blob, *data = t->view.data;
    if (blob && data >= blob && data + t->view.nbytes <= blob + g->blob_size)
        return; /* a compiled model's weights, in its own copy: they stay */
    /* Otherwise only a copy made for this preparation, which the file can
     * make again. */
    if (!materialized(t))
        return;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        return;
    uintptr_t a = ((uintptr_t)t->view.data + offset + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
    uintptr_t b = ((uintptr_t)t->view.data + offset + bytes) & ~((uintptr_t)page - 1);
    if (b <= a)
        return;
    /* An anonymous private mapping: the pages read as zeros from now on,
     * until mf_weights_release_packed gives the copy back or fills it. */
    if (madvise((void *)a, b - a, MADV_DONTNEED) == 0)
        t->refill = 1;
}

minfer_status mf_weights_restore(minfer_session *s) {
    const mf_graph *g = s->g;
    for (size_t v = 0; v < g->n_values; v++) {
        minfer_tensor *t = g->values[v].initializer;
        /* a node whose preparation failed gave pages back */
        minfer_status st = refill(s, t, g->values[v].name);
        if (st != MINFER_OK)
            return st;
        if (!t || t->view.data || !t->src || !t->view.nbytes)
            continue;
        void *data = mf_alloc_host(t->view.nbytes);
        if (!data)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory reading weight '%s' again",
                            s->errctx, g->values[v].name);
        if ((st = copy_from_file(s, t, data, g->values[v].name)) != MINFER_OK) {
            free(data);
            return st;
        }
        t->view.data = data;
        t->owns_data = 1;
    }
    return MINFER_OK;
}
