/*
 * The memory plan of the parallel scheduler.
 *
 * The sequential plan gives each buffer the steps [first, last] of one
 * execution order and lets buffers whose intervals do not meet share
 * bytes. The parallel scheduler runs any order the dependencies admit, so
 * that is not enough: a value the order frees "early" may still be read by
 * a node running beside the one that reuses its bytes. Here:
 *
 *  1. dependencies: each step waits for the steps producing its inputs
 *     (folded nodes produce constants and take no part) and, for an input
 *     it reads from a copy in another memory domain, for the step whose
 *     run makes that copy (run.c copies before the first consumer in the
 *     order); the ready queue (exec/sched_parallel.c) counts these down;
 *  2. ancestors: per step, the bitset of steps it transitively depends on,
 *     in order (the order is topological, so one pass);
 *  3. concurrency bounds: lo[k] and hi[k] are the first and last steps that
 *     are neither ancestors nor descendants of step k, i.e. that may run
 *     beside it (k itself when none);
 *  4. priorities: per step, its cost plus the costliest path after it (the
 *     scheduler starts the ready step heading the longest path first);
 *  5. widening: a buffer used from step f to step l is given the interval
 *     [min lo, max hi] over f..l. If two widened intervals do not meet,
 *     every step using the earlier buffer lies before the later one's
 *     producer and is not concurrent with it, hence is its ancestor: the
 *     earlier buffer is dead before the later one is born in every
 *     admissible order. The greedy planner then places the widened
 *     intervals as usual; a chain widens nothing and plans exactly as the
 *     sequential order does;
 *  6. in place: an output may take its input's bytes only when every other
 *     consumer of that input is an ancestor of the node (in the sequential
 *     order it is enough that they come earlier).
 */
#include <stdlib.h>
#include <string.h>

#include "plan/plan_concurrent.h"

void mf_conc_free(mf_conc *c) {
    if (!c)
        return;
    mf_conc_planned(c);
    free(c->n_deps);
    free(c->succ_at);
    free(c->succ);
    free(c->cost);
    free(c->prio);
    free((void *)c->serial);
    free((void *)c->one_ns);
    free((void *)c->split_ns);
    free((void *)c->runs);
    free((void *)c->queue_runs);
    free((void *)c->way_ns);
    free(c->seq_arena);
    free(c);
}

void mf_conc_planned(mf_conc *c) {
    if (!c)
        return;
    free(c->anc);
    free(c->lo);
    free(c->hi);
    c->anc = NULL;
    c->lo = c->hi = NULL;
}

static int has_bit(const uint64_t *set, int k) { return (int)((set[k >> 6] >> (k & 63)) & 1u); }

/* Why plan p runs sequentially under the parallel scheduler, or NULL. */
static const char *why_sequential(const minfer_session *s, const mf_plan *p) {
    const mf_graph *g = s->g;
    if (s->scheduler != MINFER_SCHED_PARALLEL)
        return NULL;
    if (s->inter_op < 2) /* resolved at creation: at most the pool's threads */
        return "one thread: no node can run beside another";
    if (g->n_nodes > MF_CONC_MAX_STEPS)
        return "more than 8192 nodes";
    for (size_t i = 0; i < g->n_nodes; i++) {
        if (p->nodes[i].folded)
            continue;
        if (p->nodes[i].core)
            return "a control-flow, sequence or optional node runs in the core";
        if (p->nodes[i].dynamic)
            return "a node's shapes are known only at run time";
    }
    return NULL;
}

/* Step k's estimated work: its FLOPs, at least the elements it writes. */
static double step_cost(const minfer_session *s, const mf_plan *p, int i) {
    const mf_node *n = &s->g->nodes[i];
    double out = 0;
    for (size_t o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0)
            out += (double)mf_view_bytes(&p->vals[n->outputs[o]].view) / 4.0;
    return p->nodes[i].flops > out ? p->nodes[i].flops : out;
}

/* The step input j of node step k waits for: the step that makes the copy
 * it reads, or the producer of its value (also when step k makes that copy
 * itself: the copy reads the value); -1 when none (a graph input, a
 * constant, a folded producer). */
static int input_dep(const minfer_session *s, const mf_plan *p, const int *step_of, int k,
                     size_t j) {
    const mf_graph *g = s->g;
    int i = g->order[k];
    const mf_node *nd = &g->nodes[i];
    const int *ref = p->nodes[i].in_ref;
    int u = nd->inputs[j];
    if (u < 0)
        return -1;
    if (ref && ref[j] >= 0 && (size_t)ref[j] < p->n_copies && p->copies[ref[j]].at_step != k)
        return p->copies[ref[j]].at_step;
    int pr = g->values[u].producer;
    return pr < 0 || p->nodes[pr].folded ? -1 : step_of[pr];
}

/* Passes 1 and 2: dependencies, successors and ancestors. */
static minfer_status build_deps(minfer_session *s, mf_plan *p, mf_conc *c, const int *step_of) {
    const mf_graph *g = s->g;
    int n = c->n;
    size_t edges = 0;
    for (int k = 0; k < n; k++) {
        const mf_node *nd = &g->nodes[g->order[k]];
        c->n_deps[k] = p->nodes[g->order[k]].folded ? -1 : 0;
        if (c->n_deps[k] < 0)
            continue;
        for (size_t j = 0; j < nd->n_inputs; j++) {
            int ps = input_dep(s, p, step_of, k, j);
            if (ps < 0)
                continue;
            c->n_deps[k]++;
            c->succ_at[ps + 1]++;
            edges++;
        }
    }
    for (int k = 0; k < n; k++)
        c->succ_at[k + 1] += c->succ_at[k];
    c->succ = mf_malloc((edges + 1) * sizeof *c->succ);
    int *fill = mf_malloc(((size_t)n + 1) * sizeof *fill);
    if (!c->succ || !fill) {
        free(fill);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    memcpy(fill, c->succ_at, (size_t)n * sizeof *fill);
    for (int k = 0; k < n; k++) {
        const mf_node *nd = &g->nodes[g->order[k]];
        uint64_t *mine = c->anc + (size_t)k * c->words;
        if (c->n_deps[k] < 0)
            continue;
        c->cost[k] = step_cost(s, p, g->order[k]);
        for (size_t j = 0; j < nd->n_inputs; j++) {
            int ps = input_dep(s, p, step_of, k, j);
            if (ps < 0)
                continue;
            c->succ[fill[ps]++] = k;
            const uint64_t *theirs = c->anc + (size_t)ps * c->words;
            for (size_t w = 0; w < c->words; w++)
                mine[w] |= theirs[w];
            mine[ps >> 6] |= (uint64_t)1 << (ps & 63);
        }
    }
    free(fill);
    return MINFER_OK;
}

/* Pass 3: lo and hi per step. */
static void bounds(mf_conc *c) {
    int n = c->n;
    for (int k = 0; k < n; k++)
        c->lo[k] = c->hi[k] = k;
    for (int j = 1; j < n; j++) {
        if (c->n_deps[j] < 0)
            continue;
        const uint64_t *a = c->anc + (size_t)j * c->words;
        for (int k = 0; k < j; k++) {
            if (c->n_deps[k] < 0 || has_bit(a, k))
                continue;
            c->hi[k] = j; /* j ascends: the last such j stays */
            if (c->lo[j] > k)
                c->lo[j] = k;
        }
    }
}

/* Pass 4 (for the scheduler): each step's priority, its bottom level: its
 * cost plus the costliest chain of consumers after it, so that of the
 * ready steps the one heading the longest remaining path starts first.
 * Consumers come later in the order: one pass backwards. */
static void priorities(mf_conc *c) {
    for (int k = c->n - 1; k >= 0; k--) {
        double after = 0;
        if (c->n_deps[k] < 0)
            continue;
        for (int e = c->succ_at[k]; e < c->succ_at[k + 1]; e++)
            if (c->prio[c->succ[e]] > after)
                after = c->prio[c->succ[e]];
        c->prio[k] = c->cost[k] + after;
    }
}

minfer_status mf_conc_build(minfer_session *s, mf_plan *p) {
    const mf_graph *g = s->g;
    minfer_status st = MINFER_OK;
    p->conc_why = why_sequential(s, p);
    if (s->scheduler != MINFER_SCHED_PARALLEL || p->conc_why)
        return MINFER_OK;
    mf_conc *c = mf_calloc(1, sizeof *c);
    int *step_of = mf_malloc((g->n_nodes + 1) * sizeof *step_of);
    if (!c || !step_of)
        goto nomem;
    c->n = (int)g->n_nodes;
    c->words = ((size_t)c->n + 63) / 64;
    c->n_deps = mf_calloc((size_t)c->n + 1, sizeof *c->n_deps);
    c->succ_at = mf_calloc((size_t)c->n + 2, sizeof *c->succ_at);
    c->cost = mf_calloc((size_t)c->n + 1, sizeof *c->cost);
    c->prio = mf_calloc((size_t)c->n + 1, sizeof *c->prio);
    c->serial = mf_calloc((size_t)c->n + 1, sizeof *c->serial);
    c->one_ns = mf_calloc((size_t)c->n + 1, sizeof *c->one_ns);
    c->split_ns = mf_calloc((size_t)c->n + 1, sizeof *c->split_ns);
    c->runs = mf_calloc(1, sizeof *c->runs);
    c->queue_runs = mf_calloc(2, sizeof *c->queue_runs);
    c->way_ns = mf_calloc(2, sizeof *c->way_ns);
    c->seq_arena = mf_calloc(s->n_domains, sizeof *c->seq_arena);
    c->anc = mf_calloc((size_t)c->n * c->words + 1, sizeof *c->anc);
    c->lo = mf_malloc(((size_t)c->n + 1) * sizeof *c->lo);
    c->hi = mf_malloc(((size_t)c->n + 1) * sizeof *c->hi);
    if (!c->n_deps || !c->succ_at || !c->cost || !c->prio || !c->serial || !c->one_ns ||
        !c->split_ns || !c->runs || !c->queue_runs || !c->way_ns || !c->seq_arena || !c->anc || !c->lo || !c->hi)
        goto nomem;
    for (size_t k = 0; k < g->n_nodes; k++)
        step_of[g->order[k]] = (int)k;
    if ((st = build_deps(s, p, c, step_of)) != MINFER_OK)
        goto fail;
    bounds(c);
    priorities(c);
    free(step_of);
    p->conc = c;
    return MINFER_OK;
nomem:
    st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
fail:
    free(step_of);
    mf_conc_free(c);
    return st;
}

int mf_conc_inplace_ok(const minfer_session *s, const mf_plan *p, int u, int k) {
    const mf_conc *c = p->conc;
    const mf_graph *g = s->g;
    if (!c)
        return 1;
    /* Every reader: through a copy too (an aliased copy reads u in place,
     * and the step making a copy reads u then). */
    const uint64_t *anc = c->anc + (size_t)k * c->words;
    for (int q = 0; q < c->n; q++) {
        if (q == k || c->n_deps[q] < 0 || has_bit(anc, q))
            continue;
        const mf_node *nd = &g->nodes[g->order[q]];
        for (size_t j = 0; j < nd->n_inputs; j++)
            if (nd->inputs[j] == u)
                return 0; /* another reader of u may run beside step k */
    }
    return 1;
}

void mf_conc_widen(const mf_conc *c, mf_plan_item *items, size_t n) {
    for (size_t b = 0; b < n; b++) {
        int32_t f0 = items[b].first, l0 = items[b].last, f = f0, l = l0;
        if (f0 < 0)
            continue;
        for (int32_t k = f0; k <= l0 && k < c->n; k++) {
            if (c->lo[k] < f)
                f = c->lo[k];
            if (c->hi[k] > l)
                l = c->hi[k];
        }
        items[b].first = f;
        items[b].last = l;
    }
}
