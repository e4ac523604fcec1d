/* Arena planners; see planner.h for the algorithm. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "planner.h"

static uint64_t align_up(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

static int overlaps(const mf_plan_item *a, const mf_plan_item *b) {
    return a->first <= b->last && b->first <= a->last;
}

/* First-fit placement of items[order[0..n)] in that order. `placed` and
 * `near` are scratch arrays of n entries. Returns the arena size. */
static uint64_t place_in_order(mf_plan_item *items, const size_t *order, size_t n, uint64_t align,
                               size_t *placed, size_t *near) {
    uint64_t arena = 0;
    size_t n_placed = 0;
    for (size_t k = 0; k < n; k++) {
        mf_plan_item *it = &items[order[k]];
        uint64_t size = align_up(it->size, align);
        size_t n_near = 0;
        for (size_t j = 0; j < n_placed; j++)
            if (overlaps(it, &items[placed[j]])) {
                /* insertion sort by offset: n_near is small in practice */
                size_t pos = n_near++;
                while (pos > 0 && items[near[pos - 1]].offset > items[placed[j]].offset) {
                    near[pos] = near[pos - 1];
                    pos--;
                }
                near[pos] = placed[j];
            }
        uint64_t at = 0;
        for (size_t j = 0; j < n_near; j++) {
            const mf_plan_item *o = &items[near[j]];
            if (at + size <= o->offset)
                break;
            uint64_t end = align_up(o->offset + align_up(o->size, align), align);
            if (end > at)
                at = end;
        }
        it->offset = at;
        if (at + size > arena)
            arena = at + size;
        placed[n_placed++] = order[k];
    }
    return arena;
}

/* Orders tried by mf_plan_greedy; the first is TFLite's. */
enum { BY_SIZE, BY_AREA, BY_SPAN, BY_FIRST, N_ORDERS };

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

/* Greedy by size, as TFLite does; and because it is a heuristic, the same
 * first-fit placement in three other orders (by size x lifetime, by
 * lifetime, by first use), keeping the smallest arena. Each order is
 * O(n^2) at worst; n is the number of buffers of one domain. */
uint64_t mf_plan_greedy(mf_plan_item *items, size_t n, uint64_t align) {
    if (n == 0)
        return 0;
    size_t *order = mf_malloc(3 * n * sizeof *order);
    if (!order)
        return UINT64_MAX;
    uint64_t best = UINT64_MAX;
    int best_how = BY_SIZE;
    for (int how = 0; how < N_ORDERS; how++) {
        sort_order(items, how, order, order + n, n);
        uint64_t arena = place_in_order(items, order, n, align, order + n, order + 2 * n);
        if (arena < best) {
            best = arena;
            best_how = how;
        }
    }
    sort_order(items, best_how, order, order + n, n);
    place_in_order(items, order, n, align, order + n, order + 2 * n);
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
    size_t order[9], c[9] = {0}, scratch[18], best_order[9];
    uint64_t best;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    best = place_in_order(items, order, n, align, scratch, scratch + 9);
    memcpy(best_order, order, sizeof order);
    size_t i = 1;
    while (i < n) {
        if (c[i] < i) {
            size_t j = i % 2 ? c[i] : 0, t = order[j];
            order[j] = order[i];
            order[i] = t;
            uint64_t a = place_in_order(items, order, n, align, scratch, scratch + 9);
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
    place_in_order(items, best_order, n, align, scratch, scratch + 9);
    return best;
}
