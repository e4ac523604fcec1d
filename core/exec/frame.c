/*
 * What a run of one graph holds while its steps run (exec/frame.h): the
 * plan of its input shapes, from the session's plan cache (built when
 * missing), and an execution context from the session's pool, fitted to
 * the plan; then its outputs delivered and both given back. run.c's entry
 * points use them; they call nothing that runs a step (plan building is
 * plan/build.c), so whatever drives steps may use them too.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "exec/frame.h"

void mf_run_free_dyn(mf_exec_ctx *c, size_t v) {
    if (!c->dyn[v])
        return;
    if (c->views[v].kind != MINFER_VALUE_TENSOR) {
        minfer_tensor_free(c->dyn[v]); /* a sequence or optional */
        c->dyn[v] = NULL;
        return;
    }
    if (c->views[v].dtype == MINFER_DTYPE_STRING)
        mf_free_strings(c->dyn[v], (int64_t)(mf_view_bytes(&c->views[v]) / sizeof(char *)));
    free(c->dyn[v]);
    c->dyn[v] = NULL;
}

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

minfer_status mf_exec_ctx_take(minfer_session *s, const mf_plan *p, mf_exec_ctx **out) {
    pthread_mutex_lock(&s->lock);
    mf_exec_ctx *c = s->free_ctx;
    if (c)
        s->free_ctx = c->next;
    pthread_mutex_unlock(&s->lock);
    if (!c && !(c = ctx_new(s)))
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    *out = c;
    return ctx_fit(s, c, p);
}

void mf_exec_ctx_give(minfer_session *s, mf_exec_ctx *c) {
    if (!c)
        return;
    for (size_t v = 0; v < s->g->n_values; v++)
        mf_run_free_dyn(c, v);
    pthread_mutex_lock(&s->lock);
    c->next = s->free_ctx;
    s->free_ctx = c;
    pthread_mutex_unlock(&s->lock);
}

/* The tensor given for output name (what: "tensor", "device value") has
 * the output's type and shape. */
static minfer_status check_given(const minfer_session *s, const char *name,
                                 const minfer_tensor_view *src, const minfer_tensor *t,
                                 const char *what) {
    char a[160], b[160];
    int bad = t->view.rank != src->rank;
    for (int d = 0; !bad && d < t->view.rank; d++)
        bad = t->view.dims[d] != src->dims[d];
    if (t->view.dtype != src->dtype)
        return mf_error(MINFER_ERR_TYPE, "%s: run: output '%s' is %s, but the %s given for it is %s",
                        s->errctx, name, minfer_dtype_name((minfer_dtype)src->dtype), what,
                        minfer_dtype_name((minfer_dtype)t->view.dtype));
    if (bad)
        return mf_error(MINFER_ERR_SHAPE,
                        "%s: run: output '%s' has shape %s, but the %s given for it is %s",
                        s->errctx, name, mf_shape_str(src->dims, src->rank, a, sizeof a), what,
                        mf_shape_str(t->view.dims, t->view.rank, b, sizeof b));
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
        if ((st = check_given(s, v->name, src, t, "device value")) != MINFER_OK)
            return st;
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

minfer_status mf_run_deliver(minfer_session *s, const mf_plan *p, mf_exec_ctx *c, int vi, int dom,
                              minfer_tensor **slot) {
    if (dom)
        return deliver_device(s, p, c, vi, dom, slot);
    const minfer_tensor_view *src = &c->views[vi];
    const mf_value *v = &s->g->values[vi];
    const mf_vplan *vs = &p->vals[vi];
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
        if ((st = check_given(s, v->name, src, t, "tensor")) != MINFER_OK)
            return st;
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
