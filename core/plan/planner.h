/*
 * Static memory planning: placing tensors with known lifetimes in one arena.
 *
 * Each item is a buffer of `size` bytes that must exist from step `first`
 * to step `last` (inclusive) of the execution order. Two items whose
 * lifetimes overlap must not overlap in the arena.
 *
 * mf_plan_greedy is TFLite's greedy-by-size planner:
 *  1. sort items by size, largest first (ties: earlier first use, then index);
 *  2. for each item, collect the already placed items alive at the same
 *     time, in order of offset;
 *  3. place it at the lowest offset (aligned) where it fits between them
 *     (first fit).
 * On CNNs this reaches the lower bound (mf_plan_lower_bound: the largest
 * total of aligned sizes alive at one step). It is not optimal in general;
 * mf_plan_optimal finds the optimum by trying every order, for tests.
 */
#ifndef MINFER_CORE_PLANNER_H
#define MINFER_CORE_PLANNER_H

#include <stddef.h>
#include <stdint.h>

typedef struct mf_plan_item {
    uint64_t size;
    int32_t first, last; /* steps, inclusive */
    uint64_t offset;     /* output */
} mf_plan_item;

/* Each returns the arena size, or UINT64_MAX if memory for the work ran out. */
uint64_t mf_plan_greedy(mf_plan_item *items, size_t n, uint64_t align);
/* Every item its own space, in index order (the debug planner). */
uint64_t mf_plan_linear(mf_plan_item *items, size_t n, uint64_t align);
/* Largest total of aligned sizes alive at one step. */
uint64_t mf_plan_lower_bound(const mf_plan_item *items, size_t n, uint64_t align);
/* The optimal arena by exhaustive search over placement orders (n <= 9). */
uint64_t mf_plan_optimal(mf_plan_item *items, size_t n, uint64_t align);

#endif
