/*
 * Running a session.
 *
 * A run:
 *  1. checks the inputs against the graph (names, types, ranks, static and
 *     symbolic dims) and forms the input-shape signature;
 *  2. finds the signature's plan in the session's cache (least recently
 *     used first out), building it when missing;
 *  3. takes an execution context from the session's pool (a new one only
 *     when every context is busy with a concurrent run) and grows its arenas
 *     if this plan needs more: after the first run of a plan, a run with
 *     caller-supplied outputs makes no heap allocation;
 *  4. executes the steps, one after another here, or through the parallel
 *     or the pipeline scheduler; every one of them runs each step with
 *     mf_run_step (step.c): copies into other memory domains where planned,
 *     then the node on its provider (nodes with run-time shapes inferred,
 *     allocated and prepared there);
 *  5. copies the requested outputs out and returns the context.
 * Steps 2, 3 and 5 are frame.c's (the plan cache, the context pool, an
 * output's delivery); this file holds the entry points and the schedule.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "exec/pipeline.h"
#include "exec/sched.h"

#define MAX_STACK_INPUTS 64

/* Runs plan p in context c: the views, every step that is not folded, then
 * a synchronize of each device provider. */
static minfer_status execute(minfer_session *s, mf_plan *p, mf_exec_ctx *c, mf_run *r,
                             mf_budget *b, mf_pipe_ticket *ticket,
                             const minfer_tensor *const *bound) {
    const mf_graph *g = s->g;
    minfer_status st;
    if ((st = mf_run_bind(s, p, c, bound)) != MINFER_OK)
        return st;
    r->views = c->views;
    if (ticket) { /* a request of the pipeline scheduler (session/async.c) */
        if ((st = mf_sched_pipeline_run(s, p, c, r, b, ticket)) != MINFER_OK)
            return st;
    } else if (p->conc) {
        if ((st = mf_sched_parallel_run(s, p, c, r, b)) != MINFER_OK)
            return st;
    } else
        for (size_t k = 0; k < g->n_nodes; k++)
            if (!p->nodes[g->order[k]].folded &&
                (st = mf_run_step(s, p, c, r, b, (int)k)) != MINFER_OK)
                return st;
    for (size_t d = 1; d < s->n_domains; d++) {
        mf_provider_inst *pi = &s->pl->provs[d - 1];
        if ((st = mf_prov_synchronize(pi)) != MINFER_OK)
            return mf_error_prefix(st, "%s: provider '%s' synchronize", s->errctx, pi->name);
    }
    return MINFER_OK;
}


minfer_status minfer_session_prepare(minfer_session *s, const char *const *input_names,
                                     const minfer_tensor *const *inputs, size_t n_inputs) {
    if (!s || (n_inputs && (!input_names || !inputs)))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_prepare: NULL argument");
    const mf_graph *g = s->g;
    const minfer_tensor *bound_stack[MAX_STACK_INPUTS];
    int64_t sig_stack[MF_SIG_ENTRIES(MAX_STACK_INPUTS)];
    const minfer_tensor **bound = bound_stack;
    int64_t *sig = sig_stack;
    size_t sig_len = 0;
    minfer_status st;
    mf_plan *p = NULL;
    if (g->n_inputs > MAX_STACK_INPUTS) {
        bound = mf_calloc(g->n_inputs, sizeof *bound);
        sig = mf_malloc(MF_SIG_ENTRIES(g->n_inputs) * sizeof *sig);
        if (!bound || !sig) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto done;
        }
    }
    if ((st = mf_run_check_inputs(s, input_names, inputs, n_inputs, bound, sig, &sig_len)) !=
        MINFER_OK)
        goto done;
    if ((st = mf_plan_acquire(s, sig, sig_len, NULL, &p)) != MINFER_OK)
        goto done;
    mf_plan_release(s, p);
done:
    if (bound != bound_stack) {
        free(bound);
        free(sig);
    }
    return st;
}

/* A run spending budget b (the caller's own, or its parent run's). */
/* One run of s spending budget b: its nodes on lane (NULL: a lane of its
 * own on the session's pool), through the pipeline when ticket is set. */
static minfer_status run_budget(minfer_session *s, mf_budget *b, mf_lane *lane,
                                mf_pipe_ticket *ticket, const char *const *input_names,
                                const minfer_tensor *const *inputs, size_t n_inputs,
                                const char *const *output_names, minfer_tensor **outputs,
                                const char *const *out_dev, size_t n_outputs) {
    const mf_graph *g = s->g;
    const minfer_tensor *bound_stack[MAX_STACK_INPUTS];
    int out_dom[256];
    int64_t sig_stack[MF_SIG_ENTRIES(MAX_STACK_INPUTS)];
    int out_vi[256];
    unsigned char made[256] = {0};
    const minfer_tensor **bound = bound_stack;
    int64_t *sig = sig_stack;
    size_t sig_len = 0;
    minfer_status st = MINFER_OK;
    mf_plan *p = NULL;
    mf_exec_ctx *c = NULL;
    mf_lane own;
    if (!lane) {
        mf_lane_init(&own, s->pool);
        lane = &own;
    }
    mf_run r = {s, NULL, -1, NULL, 0, NULL, NULL, NULL, 0, 0, b, NULL, lane};

    if (!output_names && n_outputs != g->n_outputs)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "%s: run: without output names, %zu outputs must be requested, not %zu",
                        s->errctx, g->n_outputs, n_outputs);
    if (n_outputs > 256)
        return mf_error(MINFER_ERR_LIMIT, "%s: run: more than 256 outputs requested", s->errctx);
    for (size_t o = 0; o < n_outputs; o++) {
        if (!output_names) {
            out_vi[o] = g->outputs[o];
            continue;
        }
        int vi = output_names[o] ? mf_graph_find(g, output_names[o]) : -1;
        if (vi < 0 || !g->values[vi].is_output) {
            char list[512] = "";
            size_t used = 0;
            for (size_t j = 0; j < g->n_outputs; j++) {
                int w = snprintf(list + used, sizeof list - used, "%s'%s'", j ? ", " : "",
                                 g->values[g->outputs[j]].name);
                if (w < 0 || (size_t)w >= sizeof list - used)
                    break;
                used += (size_t)w;
            }
            return mf_error(MINFER_ERR_NOT_FOUND,
                            "%s: run: '%s' is not an output of the model (outputs: %s)",
                            s->errctx, output_names[o] ? output_names[o] : "(null)", list);
        }
        out_vi[o] = vi;
    }
    for (size_t o = 0; o < n_outputs; o++) {
        const mf_devmem *dev = outputs[o] ? outputs[o]->dev : NULL;
        char why[256];
        const char *name = g->values[out_vi[o]].name;
        if (dev && dev->s != s)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            dev->s ? "%s: run: output '%s' is bound to a device value (on '%s') "
                                     "of another session"
                                   : "%s: run: output '%s' is bound to a device value (on '%s') "
                                     "whose session was freed",
                            s->errctx, name, dev->prov);
        out_dom[o] = dev ? dev->dom
                         : mf_devmem_domain(s, out_dev ? out_dev[o] : NULL, why, sizeof why);
        if (out_dom[o] < 0)
            return mf_error(MINFER_ERR_INVALID_ARG, "%s: run: output '%s' cannot stay on '%s': %s",
                            s->errctx, name, out_dev[o], why);
    }
    if (g->n_inputs > MAX_STACK_INPUTS) {
        bound = mf_calloc(g->n_inputs, sizeof *bound);
        sig = mf_malloc(MF_SIG_ENTRIES(g->n_inputs) * sizeof *sig);
        if (!bound || !sig) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto done;
        }
    }
    if ((st = mf_run_check_inputs(s, input_names, inputs, n_inputs, bound, sig, &sig_len)) !=
        MINFER_OK)
        goto done;
    if ((st = mf_plan_acquire(s, sig, sig_len, b->ro, &p)) != MINFER_OK)
        goto done;
    r.p = p;

    if ((st = mf_exec_ctx_take(s, p, &c)) != MINFER_OK)
        goto done;
    double t_run = mf_now_ms();
    st = execute(s, p, c, &r, b, ticket, bound);
    for (size_t o = 0; st == MINFER_OK && o < n_outputs; o++) {
        /* delivering copies: a body passing a large value through costs
         * a copy per iteration */
        made[o] = outputs[o] == NULL;
        if ((st = mf_budget_elements(b, s, -1, mf_value_elements(&c->views[out_vi[o]]))) ==
            MINFER_OK)
            st = mf_run_deliver(s, p, c, out_vi[o], out_dom[o], &outputs[o]);
    }
    if (st == MINFER_OK) {
        double dt = mf_now_ms() - t_run;
        pthread_mutex_lock(&s->lock);
        mf_stats_add(&s->stats, dt);
        pthread_mutex_unlock(&s->lock);
        mf_trace_add(s->trace, "run", "run", t_run, dt,
                     b->ro && b->ro->tag ? json_pack("{s:o}", "tag", mf_json_str(b->ro->tag))
                                         : NULL);
    }
    if (st != MINFER_OK)
        for (size_t o = 0; o < n_outputs; o++)
            if (made[o]) {
                minfer_tensor_free(outputs[o]);
                outputs[o] = NULL;
            }
done:
    mf_lane_release(lane); /* the pool a node's claim took, if any */
    mf_exec_ctx_give(s, c);
    if (p)
        mf_plan_release(s, p);
    mf_run_free_temps(&r);
    if (bound != bound_stack) {
        free(bound);
        free(sig);
    }
    return st;
}

minfer_status minfer_session_run(minfer_session *s, const char *const *input_names,
                                 const minfer_tensor *const *inputs, size_t n_inputs,
                                 const char *const *output_names, minfer_tensor **outputs,
                                 size_t n_outputs) {
    return minfer_session_run_with_options(s, NULL, input_names, inputs, n_inputs, output_names,
                                           outputs, n_outputs);
}

minfer_status minfer_session_run_with_options(minfer_session *s, const minfer_run_options *ro,
                                              const char *const *input_names,
                                              const minfer_tensor *const *inputs, size_t n_inputs,
                                              const char *const *output_names,
                                              minfer_tensor **outputs, size_t n_outputs) {
    return mf_session_run_ticket(s, ro, NULL, input_names, inputs, n_inputs, output_names,
                                 outputs, n_outputs);
}

minfer_status mf_session_run_ticket(minfer_session *s, const minfer_run_options *ro,
                                    mf_pipe_ticket *ticket, const char *const *input_names,
                                    const minfer_tensor *const *inputs, size_t n_inputs,
                                    const char *const *output_names, minfer_tensor **outputs,
                                    size_t n_outputs) {
    if (!s || (n_inputs && (!input_names || !inputs)) || (n_outputs && !outputs))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_run: NULL argument");
    mf_budget b;
    mf_budget_init(&b, s, ro, mf_session_run_sub);
    return run_budget(s, &b, NULL, ticket, input_names, inputs, n_inputs, output_names, outputs,
                      NULL, n_outputs);
}

minfer_status minfer_session_run_bound(minfer_session *s, const minfer_run_options *ro,
                                       const char *const *input_names,
                                       const minfer_tensor *const *inputs, size_t n_inputs,
                                       const char *const *output_names, minfer_tensor **outputs,
                                       const char *const *output_devices, size_t n_outputs) {
    if (!s || (n_inputs && (!input_names || !inputs)) || (n_outputs && !outputs))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_run_bound: NULL argument");
    mf_budget b;
    mf_budget_init(&b, s, ro, mf_session_run_sub);
    return run_budget(s, &b, NULL, NULL, input_names, inputs, n_inputs, output_names, outputs,
                      output_devices, n_outputs);
}

minfer_status mf_session_run_sub(minfer_session *s, mf_budget *b, mf_lane *lane,
                                 const char *const *input_names,
                                 const minfer_tensor *const *inputs, size_t n_inputs,
                                 minfer_tensor **outputs, size_t n_outputs) {
    return run_budget(s, b, lane, NULL, input_names, inputs, n_inputs, NULL, outputs, NULL,
                      n_outputs);
}
