/*
 * What one minfer_session_run may still spend (exec/exec.h).
 *
 * One budget per minfer_session_run, handed down to the runs of its
 * subgraphs (Loop, Scan, If, SequenceMap bodies), so the limits hold for
 * the whole run however deeply loops nest: loop iterations and elements
 * add up across nesting, and the deadline is the top run's.
 */
#include <stdatomic.h>
#include <string.h>

#include "exec/exec.h"

/* The deadline is the sooner of the session's run limit and the run
 * options' own. */
void mf_budget_init(mf_budget *b, const minfer_session *s, const minfer_run_options *ro,
                    mf_run_sub_fn run_sub) {
    memset(b, 0, sizeof *b);
    b->ro = ro;
    b->run_sub = run_sub;
    b->max_iterations = s->limits.max_loop_iterations;
    b->max_elements = s->run_limits.max_run_elements;
    b->deadline_ms = s->run_limits.deadline_ms;
    if (ro && ro->deadline_ms && (!b->deadline_ms || ro->deadline_ms < b->deadline_ms))
        b->deadline_ms = ro->deadline_ms;
    if (b->deadline_ms)
        b->deadline = mf_now_ms() + (double)b->deadline_ms;
}

static const char *node_lbl(const minfer_session *s, int i, char *buf, size_t size) {
    if (i < 0)
        return "the run";
    return mf_node_label(&s->g->nodes[i], i, buf, size);
}

minfer_status mf_budget_time(mf_budget *b, minfer_session *s, int i) {
    char lbl[512];
    if (b->ro && atomic_load_explicit(&((minfer_run_options *)b->ro)->terminate,
                                      memory_order_relaxed))
        return mf_error(MINFER_CANCELLED, "%s: run%s%s%s cancelled before %s "
                        "(minfer_run_options_terminate)",
                        s->errctx, b->ro->tag ? " '" : "", b->ro->tag ? b->ro->tag : "",
                        b->ro->tag ? "'" : "", node_lbl(s, i, lbl, sizeof lbl));
    if (!b->deadline || mf_now_ms() <= b->deadline)
        return MINFER_OK;
    return mf_error(MINFER_ERR_DEADLINE,
                    "%s: the run's deadline of %llu ms passed before %s (run limit deadline_ms)",
                    s->errctx, (unsigned long long)b->deadline_ms, node_lbl(s, i, lbl, sizeof lbl));
}

minfer_status mf_budget_iteration(mf_budget *b, minfer_session *s, int i) {
    char lbl[512];
    if (b->iterations >= b->max_iterations)
        return mf_error(MINFER_ERR_LIMIT,
                        "%s: %s: over the loop limit of %llu iterations in one run "
                        "(max_loop_iterations counts Loop, Scan and SequenceMap body runs of "
                        "the whole run, nested ones included)",
                        s->errctx, node_lbl(s, i, lbl, sizeof lbl),
                        (unsigned long long)b->max_iterations);
    b->iterations++;
    return mf_budget_time(b, s, i);
}

minfer_status mf_budget_elements(mf_budget *b, minfer_session *s, int i, uint64_t n) {
    char lbl[512];
    if (b->lock)
        pthread_mutex_lock(b->lock);
    uint64_t had = b->elements;
    int over = n > b->max_elements - had;
    if (!over)
        b->elements += n;
    if (b->lock)
        pthread_mutex_unlock(b->lock);
    if (over)
        return mf_error(MINFER_ERR_LIMIT,
                        "%s: %s: over the run's element budget of %llu (max_run_elements): "
                        "%llu produced or charged so far, %llu more here",
                        s->errctx, node_lbl(s, i, lbl, sizeof lbl),
                        (unsigned long long)b->max_elements, (unsigned long long)had,
                        (unsigned long long)n);
    return MINFER_OK;
}

uint64_t mf_value_elements(const minfer_tensor_view *v) {
    if (v->kind != MINFER_VALUE_TENSOR) {
        /* Each item counts one besides its elements: copying a sequence
         * of a million empty tensors is work too. */
        const minfer_tensor *t = v->data;
        uint64_t sum = 0;
        for (size_t k = 0; t && k < t->count; k++) {
            uint64_t e = mf_value_elements(&t->items[k]->view);
            e = e == UINT64_MAX ? e : e + 1;
            sum = e > UINT64_MAX - sum ? UINT64_MAX : sum + e;
        }
        return sum;
    }
    if (v->rank < 0)
        return 0;
    /* Empty whatever the other dims ([2^40, 2^40, 0] is 0, not saturated). */
    for (int d = 0; d < v->rank && d < MINFER_MAX_RANK; d++)
        if (v->dims[d] <= 0)
            return 0;
    uint64_t n = 1;
    for (int d = 0; d < v->rank && d < MINFER_MAX_RANK; d++) {
        uint64_t k = v->dims[d] > 0 ? (uint64_t)v->dims[d] : 0;
        if (k && n > UINT64_MAX / k)
            return UINT64_MAX;
        n *= k;
    }
    return n;
}

