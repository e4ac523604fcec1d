/* Arena planners; see planner.h for the algorithm. */
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "plan/planner.h"

static uint64_t align_up(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

static int overlaps(const mf_plan_item *a, const mf_plan_item *b) {
    return a->first <= b->last && b->first <= a->last;
}

/* ---- the placed items, by lifetime -------------------------------------------
 *
 * First fit needs, for each new item, the placed items alive beside it. A
 * scan of every placed item makes planning quadratic in the number of
 * buffers (minutes for a 100k-node chain), so the placed items are indexed
 * by lifetime, over the distinct steps (a segment tree of `size` leaves):
 *  1. each item is listed in the O(log n) tree nodes that exactly cover its
 *     lifetime, so the items alive at step s are those listed on the path
 *     from the root to s's leaf;
 *  2. each item is also listed at the leaf of its first step, with a count
 *     per tree node, so the items whose first step lies in (f, l] are found
 *     without visiting empty ranges.
 * The items alive during [f, l] are those of 1 at f and those of 2: each
 * once, in O((k + 1) log n) for k of them.
 */
typedef struct live_entry {
    size_t item;
    int32_t next;
} live_entry;

typedef struct live_index {
    int32_t *steps;        /* distinct first and last steps, ascending */
    size_t n_steps, size;  /* size: leaves, a power of two >= n_steps */
    int32_t *cover;        /* per tree node (1-based, 2 * size): head of its list */
    int32_t *starts;       /* per leaf: items whose first step it is */
    uint32_t *count;       /* per tree node: items listed in `starts` below it */
    live_entry *pool;      /* list entries */
    size_t n_pool, cap_pool;
} live_index;

/* A placed neighbour: its offset, and which item it is. */
typedef struct near_item {
    uint64_t offset;
    size_t item;
} near_item;

/* Sorts a[0..n) by offset; tmp has room for n. Ties may come in any order:
 * first fit's answer does not depend on it (see place_in_order). Short
 * lists by insertion, long ones by LSD radix on the bytes that differ, so
 * that a graph with thousands of buffers alive together (a wide one) pays
 * O(k), not O(k log k) through qsort's callbacks, for each of its k-neighbour
 * placements. */
static void sort_near(near_item *a, near_item *tmp, size_t n) {
    if (n < 64) {
        for (size_t i = 1; i < n; i++) {
            near_item x = a[i];
            size_t j = i;
            for (; j > 0 && a[j - 1].offset > x.offset; j--)
                a[j] = a[j - 1];
            a[j] = x;
        }
        return;
    }
    uint64_t diff = 0;
    for (size_t i = 1; i < n; i++)
        diff |= a[i].offset ^ a[0].offset;
    near_item *src = a, *dst = tmp;
    for (unsigned shift = 0; shift < 64; shift += 8) {
        size_t count[256] = {0}, at = 0;
        if (!((diff >> shift) & 0xff))
            continue;
        for (size_t i = 0; i < n; i++)
            count[(src[i].offset >> shift) & 0xff]++;
        for (size_t d = 0; d < 256; d++) {
            size_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i].offset >> shift) & 0xff]++] = src[i];
        near_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

static int step_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

static size_t step_leaf(const live_index *ix, int32_t s) {
    size_t lo = 0, hi = ix->n_steps;
    while (lo + 1 < hi) {
        size_t mid = (lo + hi) / 2;
        if (ix->steps[mid] <= s)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void live_index_free(live_index *ix) {
    free(ix->steps);
    free(ix->cover);
    free(ix->starts);
    free(ix->count);
    free(ix->pool);
}

/* 0 when out of memory (ix is then freed). */
static int live_index_init(live_index *ix, const mf_plan_item *items, size_t n) {
    size_t depth = 1;
    memset(ix, 0, sizeof *ix);
    if (!(ix->steps = mf_malloc(2 * n * sizeof *ix->steps)))
        return 0;
    for (size_t i = 0; i < n; i++) {
        ix->steps[2 * i] = items[i].first;
        ix->steps[2 * i + 1] = items[i].last;
    }
    qsort(ix->steps, 2 * n, sizeof *ix->steps, step_cmp);
    for (size_t i = 0; i < 2 * n; i++)
        if (!ix->n_steps || ix->steps[ix->n_steps - 1] != ix->steps[i])
            ix->steps[ix->n_steps++] = ix->steps[i];
    ix->size = 1;
    while (ix->size < ix->n_steps) {
        ix->size *= 2;
        depth++;
    }
    /* A lifetime is covered by at most two nodes per level. */
    ix->cap_pool = n * 2 * depth + n;
    ix->cover = mf_malloc(2 * ix->size * sizeof *ix->cover);
    ix->starts = mf_malloc(ix->size * sizeof *ix->starts);
    ix->count = mf_malloc(2 * ix->size * sizeof *ix->count);
    ix->pool = mf_malloc(ix->cap_pool * sizeof *ix->pool);
    if (!ix->cover || !ix->starts || !ix->count || !ix->pool) {
        live_index_free(ix);
        return 0;
    }
    return 1;
}

static void live_index_clear(live_index *ix) {
    for (size_t i = 0; i < 2 * ix->size; i++)
        ix->cover[i] = -1;
    for (size_t i = 0; i < ix->size; i++)
        ix->starts[i] = -1;
    memset(ix->count, 0, 2 * ix->size * sizeof *ix->count);
    ix->n_pool = 0;
}

static void push(live_index *ix, int32_t *head, size_t item) {
    live_entry *e = &ix->pool[ix->n_pool];
    e->item = item;
    e->next = *head;
    *head = (int32_t)ix->n_pool++;
}

/* Lists item over leaves [a, b] in node t (covering [lo, hi]). */
static void cover_add(live_index *ix, size_t t, size_t lo, size_t hi, size_t a, size_t b,
                      size_t item) {
    if (b < lo || hi < a)
        return;
    if (a <= lo && hi <= b) {
        push(ix, &ix->cover[t], item);
        return;
    }
    size_t mid = (lo + hi) / 2;
    cover_add(ix, 2 * t, lo, mid, a, b, item);
    cover_add(ix, 2 * t + 1, mid + 1, hi, a, b, item);
}

static void live_index_add(live_index *ix, const mf_plan_item *items, size_t item) {
    size_t a = step_leaf(ix, items[item].first), b = step_leaf(ix, items[item].last);
    cover_add(ix, 1, 0, ix->size - 1, a, b, item);
    push(ix, &ix->starts[a], item);
    for (size_t t = ix->size + a; t >= 1; t /= 2)
        ix->count[t]++;
}

/* Appends the items listed in `starts` at leaves [a, b] below node t. */
static void starts_in(const live_index *ix, size_t t, size_t lo, size_t hi, size_t a, size_t b,
                      size_t *out, size_t *n_out) {
    if (b < lo || hi < a || !ix->count[t])
        return;
    if (lo == hi) {
        for (int32_t e = ix->starts[lo]; e >= 0; e = ix->pool[e].next)
            out[(*n_out)++] = ix->pool[e].item;
        return;
    }
    size_t mid = (lo + hi) / 2;
    starts_in(ix, 2 * t, lo, mid, a, b, out, n_out);
    starts_in(ix, 2 * t + 1, mid + 1, hi, a, b, out, n_out);
}

/* The placed items alive during item's lifetime, into out: the count. */
static size_t live_index_near(const live_index *ix, const mf_plan_item *it, size_t *out) {
    size_t a = step_leaf(ix, it->first), b = step_leaf(ix, it->last), n_out = 0;
    for (size_t t = ix->size + a; t >= 1; t /= 2)
        for (int32_t e = ix->cover[t]; e >= 0; e = ix->pool[e].next)
            out[n_out++] = ix->pool[e].item;
    if (a < b)
        starts_in(ix, 1, 0, ix->size - 1, a + 1, b, out, &n_out);
    return n_out;
}

/* ---- first fit ------------------------------------------------------------ */

/* First-fit placement of items[order[0..n)] in that order. `found` and
 * `near` (2n entries) are scratch; ix, when not NULL, indexes the placed
 * items (else they are scanned). Returns the arena size.
 *
 * The neighbours are visited by offset; among neighbours of equal offset
 * the order does not matter: once one of them does not leave room below
 * its offset, `at` reaches at least that offset, so none of the others
 * does either, and `at` ends at the largest of their ends in any order. */
static uint64_t place_in_order(mf_plan_item *items, const size_t *order, size_t n, uint64_t align,
                               live_index *ix, size_t *found, near_item *near) {
    uint64_t arena = 0;
    if (ix)
        live_index_clear(ix);
    for (size_t k = 0; k < n; k++) {
        mf_plan_item *it = &items[order[k]];
        uint64_t size = align_up(it->size, align);
        size_t n_near = 0;
        if (ix) {
            n_near = live_index_near(ix, it, found);
        } else {
            for (size_t j = 0; j < k; j++)
                if (overlaps(it, &items[order[j]]))
                    found[n_near++] = order[j];
        }
        for (size_t j = 0; j < n_near; j++) {
            near[j].offset = items[found[j]].offset;
            near[j].item = found[j];
        }
        sort_near(near, near + n, n_near);
        uint64_t at = 0;
        for (size_t j = 0; j < n_near; j++) {
            const mf_plan_item *o = &items[near[j].item];
            if (at + size <= o->offset)
                break;
            uint64_t end = align_up(o->offset + align_up(o->size, align), align);
            if (end > at)
                at = end;
        }
        it->offset = at;
        if (at + size > arena)
            arena = at + size;
        if (ix)
            live_index_add(ix, items, order[k]);
    }
    return arena;
}

/* Orders tried by mf_plan_greedy; the first is TFLite's. */
enum { BY_SIZE, BY_AREA, BY_SPAN, BY_FIRST, N_ORDERS, BY_LAST = N_ORDERS };

/* 1 if item i goes before item j in order `how`; ties fall back to larger,
 * then earlier, then index, so every order is total and deterministic. */
static int before(const mf_plan_item *items, int how, size_t i, size_t j) {
    const mf_plan_item *x = &items[i], *y = &items[j];
    uint64_t sx = (uint64_t)(x->last - x->first + 1), sy = (uint64_t)(y->last - y->first + 1);
    switch (how) {
    case BY_AREA: {
        /* size x lifetime, compared without overflow as long double */
        long double ax = (long double)x->size * sx, ay = (long double)y->size * sy;
        if (ax != ay)
            return ax > ay;
        break;
    }
    case BY_SPAN:
        if (sx != sy)
            return sx > sy;
        break;
    case BY_FIRST:
        if (x->first != y->first)
            return x->first < y->first;
        break;
    case BY_LAST: /* the sweep's frees (not one of the orders tried) */
        if (x->last != y->last)
            return x->last < y->last;
        break;
    default:
        break;
    }
    if (x->size != y->size)
        return x->size > y->size;
    if (x->first != y->first)
        return x->first < y->first;
    return i < j;
}

static void sort_order(const mf_plan_item *items, int how, size_t *order, size_t *tmp, size_t n) {
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    /* Bottom-up merge sort on indices (qsort would need static state). */
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n;
            size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            while (a < mid || b < hi)
                tmp[o++] = (b == hi || (a < mid && before(items, how, order[a], order[b])))
                               ? order[a++]
                               : order[b++];
        }
        memcpy(order, tmp, n * sizeof *order);
    }
}

/* ---- a sweep for graphs with many buffers alive at once --------------------
 *
 * First fit over the placed neighbours costs O(K) for K pairs of buffers
 * alive together: a graph with n buffers alive at once is O(n^2) per order
 * (a 417 KB model took 15-37 s to create). Past a budget of pairs,
 * mf_plan_greedy places the items in order of first use instead, as an
 * allocator would: the free space below the arena's top is a set of free
 * intervals in a treap by offset, each node keeping the longest interval
 * of its subtree, so the lowest interval that fits is found in O(log n).
 * Before an item is placed, the items whose last step is before its first
 * are freed (their interval merged with its free neighbours; one touching
 * the top lowers the top). O(n log n) in all; it is first fit in order of
 * first use, the fourth of the orders the pair-by-pair planner tries. */
typedef struct free_node {
    uint64_t off, len, max_len;
    uint32_t pri;
    int32_t l, r;
} free_node;

typedef struct free_set {
    free_node *nodes;
    int32_t *spare; /* recycled node indices */
    size_t n_nodes, n_spare;
    uint32_t seed;
} free_set;

static uint64_t max_len(const free_set *fs, int32_t t) { return t < 0 ? 0 : fs->nodes[t].max_len; }

static void pull(free_set *fs, int32_t t) {
    free_node *x = &fs->nodes[t];
    uint64_t m = x->len, a = max_len(fs, x->l), b = max_len(fs, x->r);
    x->max_len = m > a ? (m > b ? m : b) : (a > b ? a : b);
}

/* Splits t into offsets < key (*a) and >= key (*b). */
static void fs_split(free_set *fs, int32_t t, uint64_t key, int32_t *a, int32_t *b) {
    if (t < 0) {
        *a = *b = -1;
        return;
    }
    if (fs->nodes[t].off < key) {
        fs_split(fs, fs->nodes[t].r, key, &fs->nodes[t].r, b);
        *a = t;
    } else {
        fs_split(fs, fs->nodes[t].l, key, a, &fs->nodes[t].l);
        *b = t;
    }
    pull(fs, t);
}

static int32_t fs_merge(free_set *fs, int32_t a, int32_t b) {
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    if (fs->nodes[a].pri > fs->nodes[b].pri) {
        fs->nodes[a].r = fs_merge(fs, fs->nodes[a].r, b);
        pull(fs, a);
        return a;
    }
    fs->nodes[b].l = fs_merge(fs, a, fs->nodes[b].l);
    pull(fs, b);
    return b;
}

static int32_t fs_new(free_set *fs, uint64_t off, uint64_t len) {
    int32_t t = fs->n_spare ? fs->spare[--fs->n_spare] : (int32_t)fs->n_nodes++;
    fs->seed ^= fs->seed << 13;
    fs->seed ^= fs->seed >> 17;
    fs->seed ^= fs->seed << 5;
    fs->nodes[t] = (free_node){off, len, len, fs->seed, -1, -1};
    return t;
}

/* The lowest-offset interval of at least len bytes, or -1. */
static int32_t fs_first_fit(const free_set *fs, int32_t t, uint64_t len) {
    while (t >= 0 && fs->nodes[t].max_len >= len) {
        const free_node *x = &fs->nodes[t];
        if (max_len(fs, x->l) >= len)
            t = x->l;
        else if (x->len >= len)
            return t;
        else
            t = x->r;
    }
    return -1;
}

static int32_t fs_edge(const free_set *fs, int32_t t, int right) {
    while (t >= 0 && (right ? fs->nodes[t].r : fs->nodes[t].l) >= 0)
        t = right ? fs->nodes[t].r : fs->nodes[t].l;
    return t;
}

/* Frees [off, off + len) below *top: merged with the free intervals it
 * touches, or given to the top when it reaches it. */
static void fs_free(free_set *fs, int32_t *root, uint64_t *top, uint64_t off, uint64_t len) {
    int32_t a, b, m;
    fs_split(fs, *root, off, &a, &b);
    int32_t pred = fs_edge(fs, a, 1), succ = fs_edge(fs, b, 0);
    if (pred >= 0 && fs->nodes[pred].off + fs->nodes[pred].len == off) {
        off = fs->nodes[pred].off;
        len += fs->nodes[pred].len;
        fs_split(fs, a, off, &a, &m); /* m is pred alone */
        fs->spare[fs->n_spare++] = m;
    }
    if (succ >= 0 && off + len == fs->nodes[succ].off) {
        len += fs->nodes[succ].len;
        fs_split(fs, b, fs->nodes[succ].off + 1, &m, &b); /* m is succ alone */
        fs->spare[fs->n_spare++] = m;
    }
    if (off + len == *top) {
        *top = off;
        *root = fs_merge(fs, a, b);
        return;
    }
    *root = fs_merge(fs, fs_merge(fs, a, fs_new(fs, off, len)), b);
}

/* Takes len bytes from the lowest free interval that holds them, else from
 * the top; returns the offset. */
static uint64_t fs_take(free_set *fs, int32_t *root, uint64_t *top, uint64_t len) {
    int32_t t = fs_first_fit(fs, *root, len);
    if (t < 0) {
        uint64_t at = *top;
        *top += len;
        return at;
    }
    uint64_t at = fs->nodes[t].off, rest = fs->nodes[t].len - len;
    int32_t a, b, m;
    fs_split(fs, *root, at, &a, &b);
    fs_split(fs, b, at + 1, &m, &b);
    fs->spare[fs->n_spare++] = m;
    if (rest)
        b = fs_merge(fs, fs_new(fs, at + len, rest), b);
    *root = fs_merge(fs, a, b);
    return at;
}

/* Past this many pairs of buffers alive together, mf_plan_greedy sweeps. */
#define SWEEP_PAIRS ((uint64_t)1 << 22)

/* Pairs of items alive at once, counted up to cap (sorting the first and
 * last steps: O(n log n)). */
static uint64_t alive_pairs(const mf_plan_item *items, size_t n, uint64_t cap) {
    int32_t *f = mf_malloc(2 * n * sizeof *f);
    if (!f)
        return cap;
    int32_t *l = f + n;
    for (size_t i = 0; i < n; i++) {
        f[i] = items[i].first;
        l[i] = items[i].last;
    }
    qsort(f, n, sizeof *f, step_cmp);
    qsort(l, n, sizeof *l, step_cmp);
    uint64_t pairs = 0;
    size_t ended = 0;
    for (size_t i = 0; i < n && pairs < cap; i++) {
        while (ended < n && l[ended] < f[i])
            ended++;
        pairs += i - (ended < i ? ended : i); /* started before it, not ended */
    }
    free(f);
    return pairs;
}

/* First fit in order of first use with the free-interval treap; order and
 * tmp have room for n. */
static uint64_t plan_sweep(mf_plan_item *items, size_t n, uint64_t align, size_t *order,
                           size_t *tmp) {
    free_set fs = {mf_malloc((n + 2) * sizeof *fs.nodes), mf_malloc((n + 2) * sizeof *fs.spare),
                   0, 0, 2463534242u};
    size_t *by_last = mf_malloc(n * sizeof *by_last);
    if (!fs.nodes || !fs.spare || !by_last) {
        free(fs.nodes);
        free(fs.spare);
        free(by_last);
        return UINT64_MAX;
    }
    sort_order(items, BY_LAST, by_last, tmp, n);
    sort_order(items, BY_FIRST, order, tmp, n);
    int32_t root = -1;
    uint64_t top = 0, arena = 0;
    size_t freed = 0;
    for (size_t k = 0; k < n; k++) {
        mf_plan_item *it = &items[order[k]];
        for (; freed < n && items[by_last[freed]].last < it->first; freed++) {
            const mf_plan_item *o = &items[by_last[freed]];
            uint64_t len = align_up(o->size, align);
            if (len)
                fs_free(&fs, &root, &top, o->offset, len);
        }
        uint64_t len = align_up(it->size, align);
        it->offset = len ? fs_take(&fs, &root, &top, len) : 0;
        if (it->offset + len > arena)
            arena = it->offset + len;
    }
    free(by_last);
    free(fs.nodes);
    free(fs.spare);
    return arena;
}

/* Greedy by size, as TFLite does; and because it is a heuristic, the same
 * first-fit placement in three other orders (by size x lifetime, by
 * lifetime, by first use), keeping the smallest arena. Each order costs
 * O((n + K) log n), K the number of pairs of buffers alive together
 * (the lifetime index and sort_near above); n is the number of buffers of
 * one domain. */
uint64_t mf_plan_greedy(mf_plan_item *items, size_t n, uint64_t align) {
    if (n == 0)
        return 0;
    if (alive_pairs(items, n, SWEEP_PAIRS) >= SWEEP_PAIRS) {
        size_t *order = mf_malloc(2 * n * sizeof *order);
        uint64_t arena = order ? plan_sweep(items, n, align, order, order + n) : UINT64_MAX;
        free(order);
        return arena;
    }
    size_t *order = mf_malloc(3 * n * sizeof *order);
    near_item *near = mf_malloc(2 * n * sizeof *near);
    live_index ix;
    if (!order || !near || !live_index_init(&ix, items, n)) {
        free(order);
        free(near);
        return UINT64_MAX;
    }
    size_t *tmp = order + n, *found = order + 2 * n;
    uint64_t best = UINT64_MAX;
    int best_how = BY_SIZE;
    for (int how = 0; how < N_ORDERS; how++) {
        sort_order(items, how, order, tmp, n);
        uint64_t arena = place_in_order(items, order, n, align, &ix, found, near);
        if (arena < best) {
            best = arena;
            best_how = how;
        }
    }
    sort_order(items, best_how, order, tmp, n);
    place_in_order(items, order, n, align, &ix, found, near);
    live_index_free(&ix);
    free(near);
    free(order);
    return best;
}

uint64_t mf_plan_linear(mf_plan_item *items, size_t n, uint64_t align) {
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        items[i].offset = at;
        at += align_up(items[i].size, align);
    }
    return at;
}

uint64_t mf_plan_lower_bound(const mf_plan_item *items, size_t n, uint64_t align) {
    /* Sweep over step boundaries: +size at first, -size after last. */
    uint64_t best = 0;
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    for (size_t i = 0; i < n; i++) {
        if (items[i].first < lo)
            lo = items[i].first;
        if (items[i].last > hi)
            hi = items[i].last;
    }
    if (n == 0 || hi - lo > 1 << 24)
        return 0;
    size_t steps = (size_t)(hi - lo) + 2;
    int64_t *delta = mf_calloc(steps, sizeof *delta);
    if (!delta)
        return 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = align_up(items[i].size, align);
        delta[items[i].first - lo] += (int64_t)s;
        delta[items[i].last - lo + 1] -= (int64_t)s;
    }
    int64_t live = 0;
    for (size_t k = 0; k < steps; k++) {
        live += delta[k];
        if ((uint64_t)live > best)
            best = (uint64_t)live;
    }
    free(delta);
    return best;
}

/* Heap's algorithm over placement orders. Any packing can be reproduced by
 * first-fit in order of its offsets (each item lands no higher than in the
 * packing), so the best order gives the optimum. */
uint64_t mf_plan_optimal(mf_plan_item *items, size_t n, uint64_t align) {
    if (n == 0)
        return 0;
    if (n > 9)
        return UINT64_MAX;
    size_t order[9], c[9] = {0}, found[9], best_order[9];
    near_item near[18];
    uint64_t best;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    best = place_in_order(items, order, n, align, NULL, found, near);
    memcpy(best_order, order, sizeof order);
    size_t i = 1;
    while (i < n) {
        if (c[i] < i) {
            size_t j = i % 2 ? c[i] : 0, t = order[j];
            order[j] = order[i];
            order[i] = t;
            uint64_t a = place_in_order(items, order, n, align, NULL, found, near);
            if (a < best) {
                best = a;
                memcpy(best_order, order, sizeof order);
            }
            c[i]++;
            i = 1;
        } else {
            c[i] = 0;
            i++;
        }
    }
    place_in_order(items, best_order, n, align, NULL, found, near);
    return best;
}
