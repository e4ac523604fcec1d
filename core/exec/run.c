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
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "exec/pipeline.h"
#include "exec/sched.h"

#define MAX_STACK_INPUTS 64

static void free_arena(minfer_session *s, mf_exec_ctx *c, size_t d) {
    if (!c->arena[d])
        return;
    if (d == 0)
        free(c->arena[d]);
    else
        mf_prov_mem_free(&s->pl->provs[d - 1], c->arena[d]);
    c->arena[d] = NULL;
    c->cap[d] = 0;
}

void mf_exec_ctx_free(minfer_session *s, mf_exec_ctx *c) {
    if (!c)
        return;
    for (size_t d = 0; c->arena && d < s->n_domains; d++)
        free_arena(s, c, d);
    free(c->arena);
    free(c->cap);
    free(c->views);
    free(c->dyn);
    free(c->mirrors);
    free(c->devin);
    free(c->on_dev);
    free(c);
}

static mf_exec_ctx *ctx_new(minfer_session *s) {
    mf_exec_ctx *c = mf_calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->arena = mf_calloc(s->n_domains, sizeof *c->arena);
    c->cap = mf_calloc(s->n_domains, sizeof *c->cap);
    c->views = mf_calloc(s->g->n_values + 1, sizeof *c->views);
    c->dyn = mf_calloc(s->g->n_values + 1, sizeof *c->dyn);
    c->devin = mf_calloc(s->g->n_values + 1, sizeof *c->devin);
    c->on_dev = mf_calloc(s->g->n_values + 1, sizeof *c->on_dev);
    if (!c->arena || !c->cap || !c->views || !c->dyn || !c->devin || !c->on_dev) {
        mf_exec_ctx_free(s, c);
        return NULL;
    }
    return c;
}

/* Grows the context's arenas and mirror table to fit plan p. */
static minfer_status ctx_fit(minfer_session *s, mf_exec_ctx *c, const mf_plan *p) {
    minfer_status st;
    for (size_t d = 0; d < s->n_domains; d++) {
        uint64_t need = p->arena_bytes[d];
        if (need <= c->cap[d])
            continue;
        free_arena(s, c, d);
        if (d == 0) {
            c->arena[0] = mf_alloc_host(need);
            if (!c->arena[0])
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory for a %llu-byte arena",
                                s->errctx, (unsigned long long)need);
        } else {
            mf_provider_inst *pi = &s->pl->provs[d - 1];
            if ((st = mf_prov_mem_alloc(pi, need, &c->arena[d])) != MINFER_OK) {
                c->arena[d] = NULL;
                return mf_error_prefix(st, "%s: provider '%s' could not allocate a %llu-byte arena",
                                       s->errctx, pi->name, (unsigned long long)need);
            }
        }
        c->cap[d] = need;
    }
    if (p->n_copies > c->mirrors_cap) {
        minfer_tensor_view *m = mf_realloc(c->mirrors, p->n_copies * sizeof *m);
        if (!m)
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        c->mirrors = m;
        c->mirrors_cap = p->n_copies;
    }
    return MINFER_OK;
}

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

/* Output vi into a device value of domain dom: the given one (*slot,
 * checked) or a new one. Computed in dom, it is copied on the device;
 * computed elsewhere, it crosses through the host as any value does. */
static minfer_status deliver_device(minfer_session *s, const mf_plan *p, mf_exec_ctx *c, int vi,
                                    int dom, minfer_tensor **slot) {
    const minfer_tensor_view *src = &c->views[vi];
    const mf_value *v = &s->g->values[vi];
    const mf_vplan *vs = &p->vals[vi];
    mf_provider_inst *pi = &s->pl->provs[dom - 1];
    char a[160], b[160];
    minfer_status st;
    if (src->kind != MINFER_VALUE_TENSOR || src->dtype == MINFER_DTYPE_STRING)
        return mf_error(MINFER_ERR_TYPE, "%s: run: output '%s' is a %s: it has no device value "
                        "(bind it to host memory)", s->errctx, v->name,
                        src->kind == MINFER_VALUE_SEQUENCE   ? "sequence"
                        : src->kind == MINFER_VALUE_OPTIONAL ? "optional"
                                                             : "string tensor");
    size_t bytes = mf_view_bytes(src);
    if (!src->data && bytes > 0)
        return mf_error(MINFER_ERR_RUNTIME, "%s: output '%s' was not computed", s->errctx, v->name);
    minfer_tensor *t = *slot, *made = NULL;
    if (t) {
        int bad = t->view.rank != src->rank;
        for (int d = 0; !bad && d < t->view.rank; d++)
            bad = t->view.dims[d] != src->dims[d];
        if (t->view.dtype != src->dtype)
            return mf_error(MINFER_ERR_TYPE,
                            "%s: run: output '%s' is %s, but the device value given for it is %s",
                            s->errctx, v->name, minfer_dtype_name((minfer_dtype)src->dtype),
                            minfer_dtype_name((minfer_dtype)t->view.dtype));
        if (bad)
            return mf_error(MINFER_ERR_SHAPE,
                            "%s: run: output '%s' has shape %s, but the device value given for it "
                            "is %s", s->errctx, v->name,
                            mf_shape_str(src->dims, src->rank, a, sizeof a),
                            mf_shape_str(t->view.dims, t->view.rank, b, sizeof b));
    } else {
        if ((st = mf_devmem_new(s, dom, src->dtype, src->dims, src->rank, &made)) != MINFER_OK)
            return st;
        t = made;
    }
    int from = vs->where == MF_W_ARENA ? vs->dom : 0;
    const minfer_tensor *in = c->devin[vi];
    if (in && c->on_dev[vi]) /* a device input that is also the output */
        from = in->dev->dom;
    if (from == dom) {
        st = mf_prov_copy_in_domain(pi, src, &t->view);
    } else if (from == 0) {
        st = mf_prov_copy_from_host(pi, src->data, bytes, &t->view);
    } else { /* another provider's domain: through the host */
        void *tmp = mf_alloc_host(bytes ? bytes : 1);
        st = tmp ? mf_prov_copy_to_host(&s->pl->provs[from - 1], src, tmp, bytes)
                 : mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        if (st == MINFER_OK)
            st = mf_prov_copy_from_host(pi, tmp, bytes, &t->view);
        free(tmp);
    }
    if (st != MINFER_OK) {
        minfer_tensor_free(made);
        return mf_error_prefix(st, "%s: delivering output '%s' to provider '%s'", s->errctx,
                               v->name, pi->name);
    }
    *slot = t;
    return MINFER_OK;
}

static minfer_status deliver_output(minfer_session *s, const mf_plan *p, mf_exec_ctx *c, int vi,
                                    minfer_tensor **slot) {
    const minfer_tensor_view *src = &c->views[vi];
    const mf_value *v = &s->g->values[vi];
    const mf_vplan *vs = &p->vals[vi];
    char a[160], b[160];
    minfer_status st;
    if (src->kind != MINFER_VALUE_TENSOR) {
        if (!src->data)
            return mf_error(MINFER_ERR_RUNTIME, "%s: output '%s' was not computed", s->errctx,
                            v->name);
        if (*slot)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "%s: run: output '%s' is a %s: pass NULL for the session to make it",
                            s->errctx, v->name,
                            src->kind == MINFER_VALUE_SEQUENCE ? "sequence" : "optional");
        return mf_tensor_clone((const minfer_tensor *)src->data, slot);
    }
    size_t bytes = mf_view_bytes(src);
    if (!src->data && bytes > 0)
        return mf_error(MINFER_ERR_RUNTIME, "%s: output '%s' was not computed", s->errctx, v->name);
    minfer_tensor *t = *slot, *made = NULL;
    if (t) {
        int bad = t->view.rank != src->rank;
        for (int d = 0; !bad && d < t->view.rank; d++)
            bad = t->view.dims[d] != src->dims[d];
        if (t->view.dtype != src->dtype)
            return mf_error(MINFER_ERR_TYPE,
                            "%s: run: output '%s' is %s, but the tensor given for it is %s",
                            s->errctx, v->name, minfer_dtype_name((minfer_dtype)src->dtype),
                            minfer_dtype_name((minfer_dtype)t->view.dtype));
        if (bad)
            return mf_error(MINFER_ERR_SHAPE,
                            "%s: run: output '%s' has shape %s, but the tensor given for it is %s",
                            s->errctx, v->name, mf_shape_str(src->dims, src->rank, a, sizeof a),
                            mf_shape_str(t->view.dims, t->view.rank, b, sizeof b));
    } else {
        if ((st = mf_tensor_new(src->dtype, src->dims, src->rank, &made)) != MINFER_OK)
            return st;
        t = made;
    }
    if (vs->where == MF_W_ARENA && vs->dom != 0) {
        mf_provider_inst *pi = &s->pl->provs[vs->dom - 1];
        double tc = s->trace ? mf_now_ms() : 0;
        if ((st = mf_prov_copy_to_host(pi, src, t->view.data, t->view.nbytes)) != MINFER_OK) {
            minfer_tensor_free(made);
            return mf_error_prefix(st, "%s: copying output '%s' from provider '%s'", s->errctx,
                                   v->name, pi->name);
        }
        if (s->trace)
            mf_trace_add(s->trace, "copy", "copy", tc, mf_now_ms() - tc,
                         json_pack("{s:o, s:I, s:s, s:s}", "value", mf_json_str(v->name),
                                   "bytes", (json_int_t)bytes, "from", mf_prov_memory_domain(pi),
                                   "to", "host"));
    } else if (src->dtype == MINFER_DTYPE_STRING) {
        char **dst = t->view.data;
        char *const *from = src->data;
        for (size_t e = 0; e < bytes / sizeof(char *); e++) {
            char *dup = mf_strdup(from[e] ? from[e] : "");
            if (!dup) {
                minfer_tensor_free(made);
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            }
            if (t->owns_data)
                free(dst[e]);
            dst[e] = dup;
        }
    } else if (bytes)
        memcpy(t->view.data, src->data, bytes);
    *slot = t;
    return MINFER_OK;
}

/* Finds or builds the plan for sig; returns it with a reference held. */
minfer_status mf_plan_acquire(minfer_session *s, const int64_t *sig, size_t sig_len,
                              const minfer_run_options *ro, mf_plan **out) {
    minfer_status st = MINFER_OK;
    pthread_mutex_lock(&s->lock);
    mf_plan *p = NULL;
    for (size_t i = 0; i < s->cache.n; i++)
        if (s->cache.plans[i]->sig_len == sig_len &&
            memcmp(s->cache.plans[i]->sig, sig, sig_len * sizeof *sig) == 0) {
            p = s->cache.plans[i];
            break;
        }
    if (!p) {
        mf_log_ro(s, ro, MINFER_LOG_INFO, "%s: new input shapes; building a plan", s->errctx);
        double t0 = mf_now_ms();
        if ((st = mf_plan_build(s, sig, sig_len, ro, &p)) != MINFER_OK) {
            pthread_mutex_unlock(&s->lock);
            return st;
        }
        /* The plan's phases, one after another from t0. */
        const char *names[3] = {"plan: infer shapes", "plan: prepare", "plan: memory"};
        double durs[3] = {p->t_infer_ms, p->t_prepare_ms, p->t_plan_ms}, at = t0;
        for (int k = 0; k < 3; k++) {
            mf_log_ro(s, ro, MINFER_LOG_INFO, "%s: %-16s %8.2f ms", s->errctx, names[k],
                      durs[k]);
            mf_trace_add(s->trace, names[k], "build", at, durs[k], NULL);
            at += durs[k];
        }
        /* Evict the least recently used idle plan when the cache is full. */
        if (s->cache.n >= s->cache.size) {
            size_t victim = s->cache.n;
            for (size_t i = 0; i < s->cache.n; i++)
                if (s->cache.plans[i]->refs == 0 &&
                    (victim == s->cache.n || s->cache.plans[i]->last_used < s->cache.plans[victim]->last_used))
                    victim = i;
            if (victim < s->cache.n) {
                if (s->cache.last == s->cache.plans[victim])
                    s->cache.last = NULL;
                mf_plan_free(s, s->cache.plans[victim]);
                s->cache.plans[victim] = s->cache.plans[--s->cache.n];
            }
        }
        mf_plan **grown = mf_realloc(s->cache.plans, (s->cache.n + 1) * sizeof *grown);
        if (!grown) {
            mf_plan_free(s, p);
            pthread_mutex_unlock(&s->lock);
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        }
        s->cache.plans = grown;
        s->cache.plans[s->cache.n++] = p;
    }
    /* the cache is bounded; only plans runs still hold may push it over */
    assert(s->cache.n > 0 && s->cache.plans[s->cache.n - 1] && p->concrete);
    p->refs++;
    p->last_used = ++s->cache.tick;
    s->cache.last = p;
    pthread_mutex_unlock(&s->lock);
    *out = p;
    return MINFER_OK;
}

void mf_plan_release(minfer_session *s, mf_plan *p) {
    pthread_mutex_lock(&s->lock);
    assert(p->refs > 0); /* every release pairs with an acquire */
    p->refs--;
    pthread_mutex_unlock(&s->lock);
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

    pthread_mutex_lock(&s->lock);
    c = s->free_ctx;
    if (c)
        s->free_ctx = c->next;
    pthread_mutex_unlock(&s->lock);
    if (!c && !(c = ctx_new(s))) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        goto done;
    }
    if ((st = ctx_fit(s, c, p)) != MINFER_OK)
        goto done;
    double t_run = mf_now_ms();
    st = execute(s, p, c, &r, b, ticket, bound);
    for (size_t o = 0; st == MINFER_OK && o < n_outputs; o++) {
        /* delivering copies: a body passing a large value through costs
         * a copy per iteration */
        made[o] = outputs[o] == NULL;
        if ((st = mf_budget_elements(b, s, -1, mf_value_elements(&c->views[out_vi[o]]))) ==
            MINFER_OK)
            st = out_dom[o] ? deliver_device(s, p, c, out_vi[o], out_dom[o], &outputs[o])
                            : deliver_output(s, p, c, out_vi[o], &outputs[o]);
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
    if (c) {
        for (size_t v = 0; v < g->n_values; v++)
            mf_run_free_dyn(c, v);
        pthread_mutex_lock(&s->lock);
        c->next = s->free_ctx;
        s->free_ctx = c;
        pthread_mutex_unlock(&s->lock);
    }
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
