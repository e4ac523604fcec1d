/*
 * Sessions: the build pipeline, stage by stage (docs/architecture.md).
 *
 * minfer_session_create*:
 *  1. load the model into the IR and validate it (load/, graph/);
 *  2. open the providers of the preference list (place/place.c), skipping
 *     (with a warning) any that cannot load; the CPU provider is also
 *     opened, privately, as the evaluator for constant folding if the list
 *     does not name it;
 *  3. optimize (optimize/, evaluating constants through the stand-alone
 *     evaluator, exec/evaluator.c);
 *  4. infer shapes for the declared input shapes (symbolic dims unknown),
 *     folding every node whose inputs are all known (plan/build.c): a
 *     shape mismatch fails here, before anything runs; then build the
 *     subgraph sessions of control-flow nodes;
 *  5. assign each remaining node, in topological order, to the first
 *     provider whose supports_operator accepts it (place/place.c);
 *  6. if every input shape is static, build the run plan now (plan/build.c,
 *     plan/plan.c), where a node its provider cannot prepare moves to the
 *     next one; otherwise the first run with new shapes builds one
 *     (exec/run.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec/exec.h"
#include "exec/threadpool.h"
#include "graph/graph.h"
#include "load/mfc.h"
#include "optimize/optimizer.h"
#include "place/plugin_loader.h"
#include "session/session.h"
#include "util/env.h"
#include "util/fileio.h"

/* ---- session create / free ---------------------------------------------- */

/* Step 4 of the header: each node not folded and not run by the core goes
 * to the first provider that accepts it (place/place.c). */
/* ---- subgraph sessions ----------------------------------------------------
 *
 * The subgraphs of control-flow nodes (If's branches, Loop's, Scan's and
 * SequenceMap's bodies) are sessions of their own, built here (creating a
 * session recurses) and run by the core ops (exec/control.c), with the
 * outer-scope values each reads as extra inputs. */

/* The first attribute-type mismatch the readers noted in s's graph or
 * those of its subgraph sessions (graph.h), as an error; the notes
 * cleared. */
static minfer_status take_mismatch(minfer_session *s, const char *errctx) {
    minfer_status st = mf_attr_mismatch_take(s->g, errctx);
    for (size_t k = 0; st == MINFER_OK && s->subs && k < 2 * s->g->n_nodes; k++)
        if (s->subs[k].s)
            st = take_mismatch(s->subs[k].s, errctx);
    return st;
}

static void free_subgraphs(minfer_session *s) {
    if (!s->subs)
        return;
    for (size_t k = 0; k < 2 * s->g->n_nodes; k++) {
        minfer_session_free(s->subs[k].s);
        free(s->subs[k].slot);
    }
    free(s->subs);
    s->subs = NULL;
}

static minfer_status build_subgraphs(minfer_session *s, const minfer_options *opt) {
    mf_graph *g = s->g;
    minfer_status st;
    char lbl[512];
    for (size_t i = 0; i < g->n_nodes; i++) {
        mf_node *n = &g->nodes[i];
        const char *names[2];
        size_t n_sub = mf_core_op(n) ? mf_core_sub_names(n, names) : 0;
        for (size_t k = 0; k < n_sub; k++) {
            mf_attr *a = (mf_attr *)mf_node_attr(n, names[k]);
            if (!a || a->type != MINFER_ATTR_GRAPH || !a->g)
                return mf_error(MINFER_ERR_MODEL, "%s: %s has no graph attribute '%s'", s->errctx,
                                mf_node_label(n, (int)i, lbl, sizeof lbl), names[k]);
            mf_graph *sg = a->g;
            if ((st = mf_core_check_arity(s, (int)i, names[k], sg)) != MINFER_OK)
                return st;
            if (!s->subs && !(s->subs = mf_calloc(2 * g->n_nodes + 1, sizeof *s->subs)))
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            mf_core_sub *sub = &s->subs[2 * i + k];
            sub->n_formal = sg->n_inputs;
            sub->slot = mf_malloc((sg->n_captures + 1) * sizeof *sub->slot);
            int *inputs = mf_realloc(sg->inputs, (sg->n_inputs + sg->n_captures + 1) * sizeof *inputs);
            if (!sub->slot || !inputs) {
                if (inputs)
                    sg->inputs = inputs;
                return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            }
            sg->inputs = inputs;
            /* The outer-scope values become inputs, typed as the parent
             * knows them, with its rank (a tensor's rank is the same in
             * every run, so providers can take the body's nodes at
             * creation); dims vary from run to run. */
            for (size_t c = 0; c < sg->n_captures; c++) {
                mf_value *v = &sg->values[sg->captures[c]];
                int pv = n->inputs[sg->capture_slot[c]];
                const minfer_tensor_view *pview = &s->build->vals[pv].view;
                v->kind = pview->kind;
                v->contained = v->kind == MINFER_VALUE_OPTIONAL ? (int32_t)pview->layout : 0;
                v->dtype = pview->dtype;
                v->rank = v->kind == MINFER_VALUE_TENSOR && pview->rank >= 0 &&
                                  pview->rank <= MINFER_MAX_RANK
                              ? pview->rank
                              : -1;
                for (int d = 0; d < v->rank; d++) {
                    v->dims[d] = -1;
                }
                v->is_input = 1;
                sg->inputs[sg->n_inputs++] = sg->captures[c];
                sub->slot[c] = sg->capture_slot[c];
            }
            sub->n_captures = sg->n_captures;
            /* the opsets in force are the enclosing graphs' (a compiled
             * file's subgraph comes with an empty array: replaced) */
            if (!sg->n_opsets) {
                free(sg->opsets);
                size_t n_ops = 0;
                for (const mf_graph *p = g; p; p = p->parent)
                    n_ops += p->n_opsets;
                if (!(sg->opsets = mf_calloc(n_ops + 1, sizeof *sg->opsets)))
                    return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                for (const mf_graph *p = g; p; p = p->parent)
                    for (size_t o = 0; o < p->n_opsets; o++) {
                        mf_opset *dst = &sg->opsets[sg->n_opsets];
                        if (!(dst->domain = mf_strdup(p->opsets[o].domain ? p->opsets[o].domain : "")))
                            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
                        dst->version = p->opsets[o].version;
                        sg->n_opsets++;
                    }
            }
            sg->parent = NULL;
            a->g = NULL; /* the subgraph session owns it now */
            char ctx[1024];
            snprintf(ctx, sizeof ctx, "%s: %s %s", s->errctx,
                     mf_node_label(n, (int)i, lbl, sizeof lbl), names[k]);
            if ((st = mf_session_create_sub(sg, opt, ctx, s, &sub->s)) != MINFER_OK)
                return st;
        }
    }
    return MINFER_OK;
}

/* Shape arithmetic: node i's outputs follow from the input shapes and
 * constants only (a Shape or Size, or a node whose every input is a
 * constant or such a value; from_shapes marks the values found so far).
 * With a plan's input shapes known its build folds such a node into
 * constants of the plan (plan/build.c). */
static int shape_arithmetic(const minfer_session *s, int i, const unsigned char *from_shapes) {
    const mf_node *n = &s->g->nodes[i];
    if (!n->domain[0] && (strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0))
        return 1;
    size_t present = 0;
    for (size_t j = 0; j < n->n_inputs; j++) {
        int vi = n->inputs[j];
        if (vi < 0)
            continue;
        if (!from_shapes[vi] && !s->build->vals[vi].known)
            return 0;
        present++;
    }
    return present > 0;
}

/* Node i, which no provider of the list runs: when it is shape arithmetic
 * that the evaluator (constant folding's CPU provider) runs, it is left
 * unassigned, for every plan to fold (a plan that cannot fails naming it,
 * plan/build.c). So `opencl` alone takes a model whose Reshape targets are
 * computed from Shape with symbolic dimensions. 1: deferred. */
static int defer_to_plans(minfer_session *s, int i, const minfer_node_desc *desc,
                          const unsigned char *from_shapes) {
    char why[256], lbl[512], reasons[1536] = "";
    if (!s->pl->eval || !shape_arithmetic(s, i, from_shapes) ||
        !mf_place_supports(s->pl->eval, desc, why, sizeof why))
        return 0;
    /* why each provider declined it, as mf_place_node keeps them */
    size_t used = 0;
    for (size_t j = 0; j < s->pl->n_provs; j++) {
        why[0] = '\0';
        mf_place_supports(&s->pl->provs[j], desc, why, sizeof why);
        int w = snprintf(reasons + used, sizeof reasons - used, "%s%s: %s", used ? "; " : "",
                         s->pl->provs[j].name, why[0] ? why : "declined");
        if (w > 0 && (size_t)w < sizeof reasons - used)
            used += (size_t)w;
    }
    free(s->declined[i]);
    s->declined[i] = mf_strdup(reasons);
    s->assign[i] = -1;
    mf_error_clear();
    mf_log(s, MINFER_LOG_VERBOSE, "%s -> folded in every plan (shape arithmetic no provider "
           "of the list runs)", mf_node_label(&s->g->nodes[i], i, lbl, sizeof lbl));
    return 1;
}

static minfer_status assign_nodes(minfer_session *s) {
    const mf_graph *g = s->g;
    mf_plan *p = s->build;
    char lbl[512];
    minfer_status st;
    s->assign = mf_malloc((g->n_nodes + 1) * sizeof *s->assign);
    s->declined = mf_calloc(g->n_nodes + 1, sizeof *s->declined);
    unsigned char *from_shapes = mf_calloc(g->n_values + 1, 1);
    if (!s->assign || !s->declined || !from_shapes) {
        free(from_shapes);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    }
    for (size_t i = 0; i < g->n_nodes; i++)
        s->assign[i] = -1;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        if (p->nodes[i].folded)
            continue;
        if (p->nodes[i].core) {
            s->assign[i] = MF_ASSIGN_CORE;
            mf_log(s, MINFER_LOG_VERBOSE, "%s -> the core", mf_node_label(n, i, lbl, sizeof lbl));
            continue;
        }
        minfer_value_desc *dsc = mf_calloc(n->n_inputs + n->n_outputs + 1, sizeof *dsc);
        minfer_node_desc desc;
        if (!dsc) {
            free(from_shapes);
            return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        }
        if ((st = mf_fill_desc(s, p, i, NULL, dsc, dsc + n->n_inputs, &desc)) == MINFER_OK)
            st = mf_place_node(s, i, &desc);
        if (st == MINFER_ERR_UNSUPPORTED && defer_to_plans(s, i, &desc, from_shapes))
            st = MINFER_OK;
        free(dsc);
        if (st != MINFER_OK) {
            free(from_shapes);
            return st;
        }
        if (shape_arithmetic(s, i, from_shapes))
            for (size_t o = 0; o < n->n_outputs; o++)
                if (n->outputs[o] >= 0)
                    from_shapes[n->outputs[o]] = 1;
    }
    free(from_shapes);
    return mf_place_check_strict(s);
}

static minfer_status make_infos(minfer_session *s) {
    const mf_graph *g = s->g;
    s->in_info = mf_calloc(g->n_inputs + 1, sizeof *s->in_info);
    s->out_info = mf_calloc(g->n_outputs + 1, sizeof *s->out_info);
    if (!s->in_info || !s->out_info)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    for (size_t k = 0; k < g->n_inputs + g->n_outputs; k++) {
        int is_in = k < g->n_inputs;
        int vi = is_in ? g->inputs[k] : g->outputs[k - g->n_inputs];
        minfer_value_info *info = is_in ? &s->in_info[k] : &s->out_info[k - g->n_inputs];
        const mf_value *v = &g->values[vi];
        const mf_vplan *vs = &s->build->vals[vi];
        info->name = v->name;
        /* outputs: what inference found where the model declares less */
        info->dtype = (minfer_dtype)(v->dtype ? v->dtype : vs->view.dtype);
        if (v->rank >= 0 || is_in) {
            info->rank = v->rank;
            info->dims = v->dims;
        } else {
            info->rank = vs->view.rank;
            info->dims = vs->view.dims;
        }
        info->dim_names = (const char *const *)v->dim_params;
        info->kind = v->kind;
        info->contained = v->contained;
        if (v->kind != MINFER_VALUE_TENSOR)
            info->rank = -1;
    }
    return MINFER_OK;
}

void minfer_session_free(minfer_session *s) {
    if (!s)
        return;
    mf_async_stop(s); /* first: its workers run on the plans */
    for (size_t i = 0; i < s->cache.n; i++)
        mf_plan_free(s, s->cache.plans[i]);
    free(s->cache.plans);
    mf_plan_free(s, s->build);
    while (s->free_ctx) {
        mf_exec_ctx *c = s->free_ctx;
        s->free_ctx = *(mf_exec_ctx **)c; /* next is the first member */
        mf_exec_ctx_free(s, c);
    }
    mf_devmem_close_all(s); /* before the providers that own the buffers */
    free_subgraphs(s);
    if (!s->pl_shared)
        mf_place_close(s->pl);
    if (s->trace && s->profile_path &&
        mf_trace_write(s->trace, s->profile_path) != MINFER_OK)
        mf_log(s, MINFER_LOG_WARN, "%s", minfer_last_error());
    mf_trace_free(s->trace);
    free(s->profile_path);
    for (size_t i = 0; s->declined && i < s->g->n_nodes; i++)
        free(s->declined[i]);
    free(s->declined);
    free(s->node_ms);
    free(s->node_runs);
    free(s->stats_scratch);
    free(s->assign);
    free(s->in_info);
    free(s->out_info);
    if (!s->pool_shared)
        mf_pool_free(s->pool);
    minfer_thread_pool_free(s->thread_pool); /* after everything that runs on it */
    mf_graph_free(s->g);
    pthread_mutex_destroy(&s->lock);
    free(s->errctx);
    free(s);
}

static int graph_inputs_static(const mf_graph *g) {
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        if (v->rank < 0 || v->kind != MINFER_VALUE_TENSOR || !v->dtype)
            return 0;
        for (int d = 0; d < v->rank; d++)
            if (v->dims[d] < 0)
                return 0;
    }
    return 1;
}


/* Level from the options, else MINFER_OPT_LEVEL, else 3. */
static int opt_level(const minfer_options *opt) {
    if (opt && opt->opt_level >= 0)
        return opt->opt_level;
    return mf_env_opt_level();
}

static void phase(minfer_session *s, const char *name, double start_ms, double dur_ms);

/* The optimizer's constant folding, with the NaN check when it is on: a
 * folded node disappears from the graph, so this is where it is named. */
typedef struct eval_user {
    minfer_session *s;
    mf_evaluator *ev;
} eval_user;

static minfer_status eval_checked(void *user, const mf_graph *g, int node, minfer_tensor **outs) {
    eval_user *u = user;
    minfer_status st = mf_evaluator_eval_node(u->ev, g, node, outs);
    if (st != MINFER_OK || !u->s->check_nan)
        return st;
    const mf_node *n = &g->nodes[node];
    for (size_t o = 0; o < n->n_outputs; o++) {
        int is_nan = 0;
        int64_t e = outs[o] ? mf_find_nan(&outs[o]->view, &is_nan) : -1;
        if (e >= 0) {
            char lbl[512];
            for (size_t k = 0; k < n->n_outputs; k++) {
                minfer_tensor_free(outs[k]);
                outs[k] = NULL;
            }
            return mf_error(MINFER_ERR_RUNTIME,
                            "%s: NaN check: %s produced %s in output %zu (element %lld) while "
                            "folding constants",
                            u->s->errctx, mf_node_label(n, node, lbl, sizeof lbl),
                            is_nan ? "NaN" : "Inf", o, (long long)e);
        }
    }
    return MINFER_OK;
}

/* The optimizer's gate (optimize/gate.c): 1 when some provider of the
 * session runs a node a fusion would make; else 0, the providers' reasons
 * in why, and the fusion is left out (logged at the info level). Any
 * provider will do, so the list is asked from its end: the CPU provider,
 * usually last, answers at once, where oneDNN's answer builds primitive
 * descriptors (gpt2_decoder's optimization took 100 ms instead of 40 when
 * oneDNN was asked first). The reasons are gathered in list order. */
static int any_provider_runs(void *user, const minfer_node_desc *node, char *why, size_t size) {
    minfer_session *s = user;
    size_t used = 0;
    if (size)
        why[0] = '\0';
    for (size_t j = s->pl->n_provs; j-- > 0;) {
        char r[512];
        if (mf_place_supports(&s->pl->provs[j], node, r, sizeof r))
            return 1;
    }
    for (size_t j = 0; j < s->pl->n_provs && size; j++) {
        char r[512] = "";
        mf_place_supports(&s->pl->provs[j], node, r, sizeof r);
        int w = snprintf(why + used, size - used, "%s%s: %s", used ? "; " : "", s->pl->provs[j].name,
                         r[0] ? r : "declined");
        if (w > 0 && (size_t)w < size - used)
            used += (size_t)w;
    }
    mf_log(s, MINFER_LOG_INFO, "%s: optimizer: node '%s' stays unfused: no provider runs %s%s%s "
           "(%s)", s->errctx, node->name, node->domain, node->domain[0] ? ":" : "",
           node->op_type, size ? why : "");
    return 0;
}

/* 1 when the CPU provider is in the session's list and no provider
 * computes on a GPU: float16 is then computed in float, as ONNX Runtime's
 * CPU provider does (passes_half.c; the CPU provider runs the Casts at the
 * float16 edges); a GPU computes in half where it has it, and a list
 * without the CPU provider ("onednn" alone) runs the nodes as written. */
static int half_as_float(const minfer_session *s) {
    char dev[256];
    int cpu = 0;
    for (size_t p = 0; p < s->pl->n_provs; p++) {
        if (mf_provider_device(&s->pl->provs[p], dev, sizeof dev) == MINFER_DEVICE_GPU)
            return 0;
        cpu |= strcmp(s->pl->provs[p].name, "cpu") == 0;
    }
    return cpu;
}

/* Graph optimization before shape inference and placement (optimizer.c).
 * Constant folding runs nodes on the placement's evaluator (the session
 * tree's one CPU provider instance); a fusion is applied only when a
 * provider of the session runs the fused node. */
/* The optimizer's check of the creation deadline, after each pass. */
static minfer_status opt_deadline(void *user, const char *pass) {
    return mf_creation_check(user, "optimizer pass %s", pass);
}

/* g optimized at level as session s optimizes its own graph: folding on
 * the placement's evaluator, fusions gated by s's providers, float16 as s
 * computes it. The compiled format's writer calls it too (compile_model.c),
 * so that a compiled file holds the graph the session ran, fusions that
 * only a session's provider runs included. */
minfer_status mf_session_optimize_graph(minfer_session *s, mf_graph *g, int level,
                                        mf_opt_report *report) {
    mf_evaluator *ev = NULL;
    if (!s->pl->eval) {
        mf_log(s, MINFER_LOG_INFO, "%s: no CPU provider for constant folding", s->errctx);
    } else if (mf_evaluator_on(s->pl->eval, &ev) != MINFER_OK) {
        ev = NULL;
        mf_log(s, MINFER_LOG_INFO, "%s: no evaluator for constant folding: %s", s->errctx,
               minfer_last_error());
        mf_error_clear();
    }
    eval_user eu = {s, ev};
    mf_opt_ctx ctx = {level, ev ? eval_checked : NULL, &eu, MF_FOLD_MAX_BYTES, report, 0,
                      mf_plugin_infer};
    ctx.half_as_float = half_as_float(s);
    mf_opt_gate gate = {any_provider_runs, s, opt_deadline};
    minfer_status st = mf_optimize_gated(g, &ctx, &gate, s->errctx);
    mf_evaluator_close(ev);
    return st;
}

static minfer_status optimize(minfer_session *s, const minfer_options *opt) {
    int level = opt_level(opt);
    if (s->g->compiled_level) { /* a compiled file: optimized when compiled (docs/format.md) */
        mf_log(s, MINFER_LOG_INFO, "%s: compiled at optimization level %d; not optimized again",
               s->errctx, s->g->compiled_level - 1);
        return MINFER_OK;
    }
    if (level == 0 || s->g->n_nodes == 0)
        return MINFER_OK;
    /* A graph with control flow is optimized around it: the passes leave
     * the core's nodes (If, Loop, Scan, sequences, optionals) and every
     * value a subgraph reads by name as they are (docs/optimizer.md); the
     * subgraphs are optimized as sessions of their own (build_subgraphs). */
    double t = mf_now_ms();
    mf_opt_report report;
    memset(&report, 0, sizeof report);
    minfer_status st = mf_session_optimize_graph(s, s->g, level, &report);
    if (st != MINFER_OK)
        return st;
    phase(s, "optimize", t, mf_now_ms() - t);
    mf_log(s, MINFER_LOG_INFO, "%s: optimization level %d: %zu nodes -> %zu", s->errctx, level,
           report.nodes_before, report.nodes_after);
    for (size_t i = 0; i < report.n_passes; i++)
        if (report.passes[i].fired)
            mf_log(s, MINFER_LOG_INFO, "  pass %-24s fired %zu times", report.passes[i].name,
                   report.passes[i].fired);
    if (report.unfused)
        mf_log(s, MINFER_LOG_INFO, "  %zu fusion(s) left out: no provider of the session runs "
               "the fused node", report.unfused);
    return MINFER_OK;
}

/* One build phase: an info line and, when profiling, a trace event. */
static void phase(minfer_session *s, const char *name, double start_ms, double dur_ms) {
    mf_log(s, MINFER_LOG_INFO, "%s: %-16s %8.2f ms", s->errctx, name, dur_ms);
    mf_trace_add(s->trace, name, "build", start_ms, dur_ms, NULL);
}

minfer_status mf_session_create_graph(mf_graph *g, const minfer_options *opt, const char *errctx,
                                      minfer_session **out) {
    return mf_session_create_graph_timed(g, opt, errctx, -1, out);
}

static minfer_status create(mf_graph *g, const minfer_options *opt, const char *errctx,
                            double load_ms, minfer_session *parent, minfer_session **out);

minfer_status mf_session_create_graph_timed(mf_graph *g, const minfer_options *opt,
                                            const char *errctx, double load_ms,
                                            minfer_session **out) {
    return create(g, opt, errctx, load_ms, NULL, out);
}

minfer_status mf_session_create_sub(mf_graph *g, const minfer_options *opt, const char *errctx,
                                    minfer_session *parent, minfer_session **out) {
    return create(g, opt, errctx, -1, parent, out);
}

static minfer_status create(mf_graph *g, const minfer_options *opt, const char *errctx,
                            double load_ms, minfer_session *parent, minfer_session **out) {
    minfer_status st;
    minfer_session *s = NULL;
    double t0 = mf_now_ms(), t;
    if (!out) {
        mf_graph_free(g);
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create: out is NULL");
    }
    *out = NULL;
    if (!parent)
        mf_attr_mismatch_clear(g);
    /* Free-dimension overrides make the declared shapes what every later
     * step (inference, placement, the build plan) sees. */
    if (!parent && (st = mf_apply_dim_overrides(g, opt, errctx)) != MINFER_OK) {
        mf_graph_free(g);
        return st;
    }
    s = mf_calloc(1, sizeof *s);
    if (!s) {
        mf_graph_free(g);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
    }
    pthread_mutex_init(&s->lock, NULL);
    s->g = g;
    s->errctx = mf_strdup(errctx);
    s->log.level = opt && opt->log_level >= 0 ? opt->log_level : mf_env_log_level();
    s->log.fn = opt ? opt->log_fn : NULL;
    s->log.user = opt ? opt->log_user : NULL;
    if (!parent)
        mf_env_check(&s->log);
    char why[256];
    size_t unpaired = parent ? 0 : mf_mfc_packs_unpaired(g, why, sizeof why);
    if (unpaired) /* a compiled file's packed weights the providers do not get */
        mf_log(s, MINFER_LOG_INFO, "%s: section PACK: %zu packed weights not used: %s%s; "
               "packing them from the plain weights", errctx, unpaired, why,
               unpaired > 1 ? " (and more)" : "");
    s->planner = opt && opt->planner >= 0 ? opt->planner : mf_env_planner();
    s->cache.size = opt && opt->plan_cache_size ? opt->plan_cache_size : MF_DEFAULT_PLAN_CACHE;
    s->limits = mf_options_limits(opt);
    s->run_limits = mf_options_run_limits(opt);
    s->strict = opt ? opt->strict : 0;
    /* The creation deadline counts from the start of loading the file. */
    if (parent) {
        s->create_by = parent->create_by;
        s->create_limit_ms = parent->create_limit_ms;
    } else if (opt && opt->creation_deadline_ms) {
        s->create_limit_ms = opt->creation_deadline_ms;
        s->create_by = (load_ms >= 0 ? t0 - load_ms : t0) + (double)opt->creation_deadline_ms;
    }
    s->check_nan = opt && opt->check_nan >= 0 ? opt->check_nan : mf_env_check_nan();
    const char *prof = opt && opt->profile_path ? opt->profile_path : mf_env_profile();
    if (prof && prof[0] && !parent) {
        s->trace = mf_trace_new(load_ms >= 0 ? t0 - load_ms : t0);
        s->profile_path = mf_strdup(prof);
        if (!s->trace || !s->profile_path) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            goto fail;
        }
        if (load_ms >= 0)
            mf_trace_add(s->trace, "load and validate", "build", t0 - load_ms, load_ms, NULL);
    }
    s->stats_scratch = mf_malloc(MF_STATS_RING * sizeof *s->stats_scratch);
    mf_stats_reset(&s->stats);
    if (!s->stats_scratch) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    if (load_ms >= 0)
        mf_log(s, MINFER_LOG_INFO, "%s: %-16s %8.2f ms", errctx, "load+validate", load_ms);
    if ((st = mf_creation_check(s, "loading and validating the model")) != MINFER_OK)
        goto fail;
    int threads = opt && opt->threads > 0 ? opt->threads : mf_default_threads();
    if (parent) {
        s->pool = parent->pool;
        s->pool_shared = 1;
    } else if (opt && opt->thread_pool) { /* a pool shared with other sessions */
        s->thread_pool = mf_thread_pool_retain(opt->thread_pool);
        s->pool = mf_thread_pool_pool(s->thread_pool);
        s->pool_shared = 1;
    } else
        s->pool = mf_pool_create(threads);
    if (!s->errctx || !s->pool) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    if ((st = mf_options_schedule(opt, errctx, &s->scheduler, &s->inter_op)) != MINFER_OK)
        goto fail;
    s->stages_auto = s->inter_op <= 0;
    if (s->inter_op <= 0 || s->inter_op > mf_pool_threads(s->pool))
        s->inter_op = mf_pool_threads(s->pool);
    s->queue_depth = opt ? opt->queue_depth : 0;
    s->micro_batch = opt ? opt->micro_batch : 0;

    if (parent) { /* the providers and the evaluator of the session tree */
        s->pl = parent->pl;
        s->pl_shared = 1;
    } else {
        t = mf_now_ms();
        if (!(s->pl = mf_calloc(1, sizeof *s->pl))) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            goto fail;
        }
        mf_host_api_init(&s->pl->api);
        if ((st = mf_place_open(s, opt)) != MINFER_OK ||
            (st = mf_creation_check(s, "loading the providers")) != MINFER_OK)
            goto fail;
        phase(s, "load providers", t, mf_now_ms() - t);
    }
    if ((st = mf_expand_gradients(g, errctx)) != MINFER_OK)
        goto fail;
    if ((st = optimize(s, opt)) != MINFER_OK ||
        (st = mf_creation_check(s, "the optimizer")) != MINFER_OK)
        goto fail;
    s->node_ms = mf_calloc(g->n_nodes + 1, sizeof *s->node_ms);
    s->node_runs = mf_calloc(g->n_nodes + 1, sizeof *s->node_runs);
    if (!s->node_ms || !s->node_runs) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    s->n_domains = 1 + s->pl->n_provs;
    s->build = mf_plan_new(s);
    if (!s->build) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    t = mf_now_ms();
    if ((st = mf_plan_infer(s, s->build)) != MINFER_OK)
        goto fail;
    phase(s, "infer shapes", t, mf_now_ms() - t);
    if ((st = build_subgraphs(s, opt)) != MINFER_OK ||
        (st = mf_creation_check(s, "the subgraphs")) != MINFER_OK)
        goto fail;
    if (s->log.level >= MINFER_LOG_VERBOSE)
        for (size_t k = 0; k < g->n_nodes; k++) {
            int i = g->order[k];
            const mf_node *n = &g->nodes[i];
            char lbl[512], shp[160];
            for (size_t o = 0; o < n->n_outputs; o++)
                if (n->outputs[o] >= 0) {
                    const minfer_tensor_view *v = &s->build->vals[n->outputs[o]].view;
                    mf_log(s, MINFER_LOG_VERBOSE, "%s: output '%s' %s %s%s",
                           mf_node_label(n, i, lbl, sizeof lbl), g->values[n->outputs[o]].name,
                           minfer_dtype_name((minfer_dtype)v->dtype),
                           mf_shape_str(v->dims, v->rank, shp, sizeof shp),
                           s->build->vals[n->outputs[o]].known ? " (constant)" : "");
                }
        }
    t = mf_now_ms();
    if ((st = assign_nodes(s)) != MINFER_OK ||
        (st = mf_creation_check(s, "provider assignment")) != MINFER_OK)
        goto fail;
    phase(s, "assign providers", t, mf_now_ms() - t);
    if ((st = make_infos(s)) != MINFER_OK || (st = take_mismatch(s, errctx)) != MINFER_OK)
        goto fail;
    if (graph_inputs_static(g)) {
        int64_t *sig = mf_malloc((MF_SIG_ENTRIES(g->n_inputs) + 1) * sizeof *sig);
        size_t len = 0;
        mf_plan *p = NULL;
        if (!sig) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            goto fail;
        }
        for (size_t k = 0; k < g->n_inputs; k++) {
            const mf_value *v = &g->values[g->inputs[k]];
            len = mf_sig_put(sig, len, MINFER_VALUE_TENSOR, v->dtype, v->rank, v->dims);
        }
        st = mf_plan_acquire(s, sig, len, NULL, &p);
        free(sig);
        if (st != MINFER_OK)
            goto fail;
        /* A node its provider could not prepare moved to a later one in this
         * plan (plan/build.c): the session reports where it runs. No run
         * can be reading s->assign yet. */
        for (size_t i = 0; i < g->n_nodes; i++)
            if (p->nodes[i].prepared)
                s->assign[i] = p->nodes[i].prov;
        mf_plan_release(s, p);
    }
    if (s->log.level >= MINFER_LOG_INFO) {
        size_t folded = 0;
        for (size_t i = 0; i < g->n_nodes; i++)
            folded += s->assign[i] == -1;
        mf_log(s, MINFER_LOG_INFO, "%s: session built in %.1f ms: %zu nodes (%zu constant)",
                errctx, mf_now_ms() - t0, g->n_nodes, folded);
        for (size_t j = 0; j < s->pl->n_provs; j++) {
            size_t c = 0;
            for (size_t i = 0; i < g->n_nodes; i++)
                c += s->assign[i] == (int)j;
            mf_log(s, MINFER_LOG_INFO, "  %zu nodes on provider '%s'", c, s->pl->provs[j].name);
        }
    }
    s->create_by = 0; /* created: runs have their own deadline */
    *out = s;
    return MINFER_OK;
fail:
    minfer_session_free(s);
    return st;
}

/* Maps the model file read-only (*mapped = 1, *fd a descriptor of it the
 * caller closes), or reads it into memory when mapping fails. The loader
 * reads weights in place from a mapping and gives the pages back as it
 * goes, so the weights are not held twice. */
static minfer_status read_file(const char *path, uint64_t max_bytes, void **data, size_t *size,
                               int *mapped, int *fd) {
    *data = NULL;
    *size = 0;
    *mapped = 0;
    *fd = -1;
    /* A FIFO or a device named as the model must not block the open. */
    FILE *f;
    uint64_t file_size;
    minfer_status st = mf_fopen_regular(path, "model file", &f, &file_size);
    if (st != MINFER_OK)
        return st;
    if (file_size > max_bytes) {
        fclose(f);
        return mf_error(MINFER_ERR_LIMIT, "%s: the model file is %llu bytes, above the limit of %llu",
                        path, (unsigned long long)file_size, (unsigned long long)max_bytes);
    }
    long len = (long)file_size;
    if (len > 0) {
        void *m = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        int keep = m != MAP_FAILED ? dup(fileno(f)) : -1;
        if (m != MAP_FAILED && keep < 0)
            munmap(m, (size_t)len);
        else if (m != MAP_FAILED) {
            fclose(f);
            *fd = keep;
            *data = m;
            *size = (size_t)len;
            *mapped = 1;
            return MINFER_OK;
        }
    }
    void *buf = mf_malloc((size_t)len + 1);
    if (!buf) {
        fclose(f);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory reading %ld bytes", path, len);
    }
    if (len && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        fclose(f);
        return mf_error(MINFER_ERR_IO, "%s: short read", path);
    }
    fclose(f);
    *data = buf;
    *size = (size_t)len;
    return MINFER_OK;
}

/* A compiled model's weights are used in place: from a mapping of the
 * file, a truncation would be SIGBUS in a kernel and a rewrite would change
 * the weights under a live session. The graph takes an anonymous private
 * copy instead, read with pread (docs/reliability.md); *data, the file's
 * mapping, becomes that copy, and fd is closed. */
static minfer_status private_copy(const char *path, int fd, void **data, size_t size) {
    munmap(*data, size);
    *data = NULL;
    void *copy = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (copy == MAP_FAILED) {
        close(fd);
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, size);
    }
    size_t done = 0;
    while (done < size) {
        ssize_t k = pread(fd, (char *)copy + done, size - done, (off_t)done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        done += (size_t)k;
    }
    close(fd);
    if (done < size) {
        munmap(copy, size);
        return mf_error(MINFER_ERR_IO, "%s: the file changed while it was read (%zu of %zu bytes)",
                        path, done, size);
    }
    *data = copy;
    return MINFER_OK;
}

minfer_status minfer_session_create(const char *model_path, const minfer_options *opt,
                                    minfer_session **out) {
    void *data = NULL;
    size_t size = 0;
    int mapped = 0;
    mf_graph *g = NULL;
    minfer_status st;
    if (out)
        *out = NULL;
    if (!model_path || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create: NULL argument");
    double t0 = mf_now_ms();
    int fd = -1;
    if ((st = read_file(model_path, mf_options_limits(opt).max_model_bytes, &data, &size, &mapped,
                        &fd)) != MINFER_OK)
        return st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", model_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    minfer_limits lim = mf_options_limits(opt);
    if (minfer_is_compiled(data, size)) { /* the graph keeps its copy (load/mfc.h) */
        if (mapped && (st = private_copy(model_path, fd, &data, size)) != MINFER_OK)
            return st;
        if ((st = mf_mfc_load(data, size, mapped ? mf_mfc_unmap : mf_mfc_free, model_path, &lim,
                              &g)) != MINFER_OK)
            return st;
        return mf_session_create_graph_timed(g, opt, model_path, mf_now_ms() - t0, out);
    }
    if (mapped) { /* the graph keeps the mapping and the file (plan/weights.c) */
        st = mf_load_onnx_mapped(data, size, dir, model_path, &lim, &g);
        if (st == MINFER_OK) {
            g->blob_fd = fd;
            g->blob_fd_set = 1;
        } else
            close(fd);
    } else {
        st = mf_load_onnx_ex(data, size, 0, dir, model_path, &lim, &g);
        free(data);
    }
    if (st != MINFER_OK)
        return st;
    return mf_session_create_graph_timed(g, opt, model_path, mf_now_ms() - t0, out);
}

minfer_status minfer_session_create_from_memory(const void *data, size_t size,
                                                const minfer_options *opt, minfer_session **out) {
    mf_graph *g = NULL;
    minfer_status st;
    if (out)
        *out = NULL;
    if (!data || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create_from_memory: NULL argument");
    minfer_limits lim = mf_options_limits(opt);
    double t0 = mf_now_ms(); /* loading counts toward the creation deadline */
    if (minfer_is_compiled(data, size)) { /* a copy the graph keeps: data is the caller's */
        void *copy = NULL;
        if (mf_test_alloc_fails() || posix_memalign(&copy, 64, size ? size : 1) != 0)
            return mf_error(MINFER_ERR_NOMEM, "<memory>: out of memory copying %zu bytes", size);
        memcpy(copy, data, size);
        st = mf_mfc_load(copy, size, mf_mfc_free, "<memory>", &lim, &g);
    } else
        st = mf_load_onnx(data, size, ".", "<memory>", &lim, &g);
    if (st != MINFER_OK)
        return st;
    return mf_session_create_graph_timed(g, opt, "<memory>", mf_now_ms() - t0, out);
}

/* ---- introspection -------------------------------------------------------- */

size_t minfer_session_input_count(const minfer_session *s) { return s ? s->g->n_inputs : 0; }
size_t minfer_session_output_count(const minfer_session *s) { return s ? s->g->n_outputs : 0; }

minfer_status minfer_session_input_info(const minfer_session *s, size_t index,
                                        minfer_value_info *info) {
    if (!s || !info || index >= s->g->n_inputs)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_input_info: bad index %zu", index);
    *info = s->in_info[index];
    return MINFER_OK;
}

minfer_status minfer_session_output_info(const minfer_session *s, size_t index,
                                         minfer_value_info *info) {
    if (!s || !info || index >= s->g->n_outputs)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_output_info: bad index %zu",
                        index);
    *info = s->out_info[index];
    return MINFER_OK;
}

size_t minfer_session_node_count(const minfer_session *s) { return s ? s->g->n_nodes : 0; }

minfer_status minfer_session_node_placement(const minfer_session *s, size_t index,
                                            minfer_node_placement *out) {
    if (!s || !out || index >= s->g->n_nodes)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_node_placement: bad index %zu",
                        index);
    int i = s->g->order[index];
    const mf_node *n = &s->g->nodes[i];
    out->node_name = n->name;
    out->op_type = n->op_type;
    out->domain = n->domain;
    out->provider = s->assign[i] >= 0                ? s->pl->provs[s->assign[i]].name
                    : s->assign[i] == MF_ASSIGN_CORE ? "core"
                                                     : "(constant)";
    out->declined = s->declined && s->declined[i] ? s->declined[i] : "";
    return MINFER_OK;
}

size_t minfer_session_provider_count(const minfer_session *s) { return s ? s->pl->n_provs : 0; }

const char *minfer_session_provider_name(const minfer_session *s, size_t index) {
    return s && index < s->pl->n_provs ? s->pl->provs[index].name : NULL;
}

minfer_status minfer_session_create_from_builder(const minfer_graph_builder *b,
                                                 const minfer_options *opt,
                                                 minfer_session **out) {
    mf_graph *g = NULL;
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create_from_builder: out is NULL");
    *out = NULL;
    minfer_status st = mf_graph_from_builder(b, &g);
    if (st != MINFER_OK)
        return st;
    return mf_session_create_graph(g, opt, "<builder>", out);
}
