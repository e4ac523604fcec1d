/*
 * The pipeline scheduler's stages: the execution order cut into contiguous
 * ranges of steps, balanced by estimated work.
 *
 *  1. Each step's work is its measured time when the caller has one (the
 *     pipeline measures the requests that ran), else the planner's
 *     estimate (its FLOPs, at least the elements it writes) plus a fixed
 *     cost per node, so that a run of cheap nodes still spreads over
 *     stages. FLOPs are a rough guide: SqueezeNet's first layers take two
 *     thirds of the time for half the FLOPs.
 *  2. The order is split where the provider changes (folded steps go with
 *     the step before): a stage on one provider and a stage on another run
 *     at the same time, which is what the pipeline is for.
 *  3. With more such segments than stages, the two neighbours whose work
 *     added up is least merge until the counts agree; with fewer, each
 *     further stage goes to the segment with most work per stage.
 *  4. A segment given k stages is cut at the k - 1 points where its running
 *     work is nearest to j/k of its whole (j = 1 .. k - 1).
 *
 * Contiguous ranges keep the sequential order inside and across stages, so
 * a request runs exactly the steps a sequential run would, in that order:
 * results are identical, and the plan's memory (one set of arenas per
 * request in flight) is the sequential plan's.
 */
#include <stdlib.h>

#include "plan/plan_stages.h"

#define NODE_OVERHEAD 1e4 /* a node's fixed cost, in operations */

double mf_step_work(const minfer_session *s, const mf_plan *p, int k) {
    const mf_graph *g = s->g;
    int i = g->order[k];
    if (p->nodes[i].folded)
        return 0;
    const mf_node *n = &g->nodes[i];
    double out = 0;
    for (size_t o = 0; o < n->n_outputs; o++)
        if (n->outputs[o] >= 0 && p->vals[n->outputs[o]].view.rank >= 0)
            out += (double)mf_view_bytes(&p->vals[n->outputs[o]].view) / 4.0;
    double w = p->nodes[i].flops > out ? p->nodes[i].flops : out;
    return w + NODE_OVERHEAD;
}

int mf_plan_stage_count(const minfer_session *s, const mf_plan *p, int most) {
    const mf_graph *g = s->g;
    double total = 0;
    int steps = 0;
    for (size_t k = 0; k < g->n_nodes; k++)
        if (!p->nodes[g->order[k]].folded) {
            total += mf_step_work(s, p, (int)k);
            steps++;
        }
    double by_work = total / MF_STAGE_MIN_WORK;
    int n = by_work < (double)most ? (int)by_work : most;
    if (n > steps)
        n = steps;
    return n < 1 ? 1 : n;
}

/* The provider of step k: s->assign of its node (-2 core, -1 folded). */
static int step_prov(const minfer_session *s, int k) {
    return s->assign ? s->assign[s->g->order[k]] : 0;
}

void mf_plan_stages(const minfer_session *s, const mf_plan *p, int stages, const double *work,
                    int *cut) {
    const mf_graph *g = s->g;
    int n = (int)g->n_nodes;
    /* pass 2: segments of one provider; seg_at[j] is segment j's first step */
    int *seg_at = malloc(((size_t)n + 2) * sizeof *seg_at);
    double *seg_w = malloc(((size_t)n + 1) * sizeof *seg_w);
    int *seg_k = malloc(((size_t)n + 1) * sizeof *seg_k);
    double *pre = malloc(((size_t)n + 1) * sizeof *pre);
    if (!seg_at || !seg_w || !seg_k || !pre) {
        /* out of memory: everything in the first stage is still correct */
        cut[0] = 0;
        for (int j = 1; j <= stages; j++)
            cut[j] = n;
        goto done;
    }
    pre[0] = 0;
    for (int k = 0; k < n; k++)
        pre[k + 1] = pre[k] + (work ? work[k] : mf_step_work(s, p, k));
    int nseg = 0, last_prov = -3;
    for (int k = 0; k < n; k++) {
        if (p->nodes[g->order[k]].folded)
            continue;
        int pv = step_prov(s, k);
        if (nseg == 0 || pv != last_prov) {
            seg_at[nseg] = nseg == 0 ? 0 : k;
            nseg++;
        }
        last_prov = pv;
    }
    if (nseg == 0)
        seg_at[nseg++] = 0;
    seg_at[nseg] = n;
    for (int j = 0; j < nseg; j++)
        seg_w[j] = pre[seg_at[j + 1]] - pre[seg_at[j]];
    /* pass 3: merge the lightest neighbours while there are too many */
    while (nseg > stages) {
        int best = 0;
        for (int j = 1; j + 1 < nseg; j++)
            if (seg_w[j] + seg_w[j + 1] < seg_w[best] + seg_w[best + 1])
                best = j;
        seg_w[best] += seg_w[best + 1];
        for (int j = best + 1; j < nseg; j++) {
            seg_at[j] = seg_at[j + 1];
            if (j + 1 < nseg)
                seg_w[j] = seg_w[j + 1];
        }
        nseg--;
    }
    for (int j = 0; j < nseg; j++)
        seg_k[j] = 1;
    for (int extra = stages - nseg; extra > 0; extra--) {
        int best = 0;
        for (int j = 1; j < nseg; j++)
            if (seg_w[j] / seg_k[j] > seg_w[best] / seg_k[best])
                best = j;
        seg_k[best]++;
    }
    /* pass 4: cuts inside each segment at its work's quantiles */
    int c = 0;
    cut[c++] = 0;
    for (int j = 0; j < nseg; j++) {
        int a = seg_at[j], b = seg_at[j + 1], t = a;
        for (int q = 1; q < seg_k[j]; q++) {
            double target = pre[a] + seg_w[j] * q / seg_k[j];
            while (t < b && pre[t + 1] <= target)
                t++;
            /* the step boundary t or t + 1, whichever is nearer the target */
            int at = t;
            if (t < b && pre[t + 1] - target < target - pre[t])
                at = t + 1;
            if (at < cut[c - 1])
                at = cut[c - 1];
            cut[c++] = at;
        }
        cut[c++] = b;
    }
    /* c == stages + 1: cut[stages] == n */
done:
    free(seg_at);
    free(seg_w);
    free(seg_k);
    free(pre);
}
