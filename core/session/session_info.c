/*
 * The public queries and reports of a built session: statistics, metadata,
 * per-node profiles, the profile file and the Graphviz picture. They read
 * the session's state, so they are the session stage's; the tools they use
 * (trace, statistics, colours) are diag/.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"
#include "exec/threadpool.h"
#include "plan/plan.h"
#include "session/session.h"
#include "util/fileio.h"

minfer_status minfer_session_stats(const minfer_session *cs, minfer_run_stats *out) {
    if (!cs || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_stats: NULL argument");
    minfer_session *s = (minfer_session *)cs;
    pthread_mutex_lock(&s->lock);
    mf_stats_report(&s->stats, out, s->stats_scratch);
    pthread_mutex_unlock(&s->lock);
    return MINFER_OK;
}

minfer_status minfer_session_metadata(const minfer_session *s, minfer_model_metadata *out) {
    if (!s || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_metadata: NULL argument");
    const mf_model_meta *m = s->g->meta;
    memset(out, 0, sizeof *out);
    out->producer_name = m ? m->producer_name : "";
    out->producer_version = m ? m->producer_version : "";
    out->domain = m ? m->domain : "";
    out->model_version = m ? m->model_version : 0;
    out->ir_version = m ? m->ir_version : 0;
    out->graph_name = s->g->name ? s->g->name : "";
    out->doc_string = m ? m->doc_string : "";
    out->graph_doc_string = m ? m->graph_doc_string : "";
    out->n_props = m ? m->n_props : 0;
    return MINFER_OK;
}

minfer_status minfer_session_metadata_prop(const minfer_session *s, size_t index, const char **key,
                                           const char **value) {
    if (!s || !key || !value)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_metadata_prop: NULL argument");
    const mf_model_meta *m = s->g->meta;
    if (!m || index >= m->n_props)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_session_metadata_prop: no entry %zu (the model has %zu)", index,
                        m ? m->n_props : 0);
    *key = m->keys[index];
    *value = m->values[index];
    return MINFER_OK;
}

int minfer_session_thread_count(const minfer_session *s) {
    return s ? mf_pool_threads(s->pool) : 0;
}

minfer_status minfer_session_reset_stats(minfer_session *s) {
    if (!s)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_reset_stats: NULL session");
    pthread_mutex_lock(&s->lock);
    mf_stats_reset(&s->stats);
    pthread_mutex_unlock(&s->lock);
    return MINFER_OK;
}

minfer_status minfer_session_node_profile(const minfer_session *cs, size_t index, double *total_ms,
                                          uint64_t *runs, double *flops) {
    if (!cs || index >= cs->g->n_nodes)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_node_profile: bad index %zu",
                        index);
    minfer_session *s = (minfer_session *)cs;
    int i = s->g->order[index];
    pthread_mutex_lock(&s->lock);
    if (total_ms)
        *total_ms = s->node_ms[i];
    if (runs)
        *runs = s->node_runs[i];
    if (flops)
        *flops = s->cache.last ? s->cache.last->nodes[i].flops : 0;
    pthread_mutex_unlock(&s->lock);
    return MINFER_OK;
}

minfer_status minfer_session_write_profile(minfer_session *s, const char *path) {
    if (!s || !path)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_write_profile: NULL argument");
    if (!s->trace)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "%s: profiling is off (minfer_options_set_profiling or MINFER_PROFILE)",
                        s->errctx);
    return mf_trace_write(s->trace, path);
}


/* s as the inside of a DOT string: '"' and '\\' escaped, control
 * characters as spaces; cut to size (labels, not keys: ids are n<index>). */
static void dot_id(char *out, size_t size, const char *s) {
    size_t o = 0;
    for (; s && *s && o + 2 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            out[o++] = '\\';
        out[o++] = c < 0x20 ? ' ' : (char)c;
    }
    out[o] = '\0';
}

minfer_status mf_write_dot(minfer_session *s, FILE *f) {
    const mf_graph *g = s->g;
    const mf_plan *p = s->cache.last ? s->cache.last : s->build;
    char a[512], b[512], shp[160];
    fprintf(f, "digraph minfer {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
               "fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", "
               "fontsize=8];\n");
    /* legend */
    fprintf(f, "  subgraph cluster_legend {\n    label=\"providers\"; fontsize=10;\n");
    for (size_t j = 0; j < s->pl->n_provs; j++)
        fprintf(f, "    \"legend_%zu\" [label=\"%s\", fillcolor=\"%s\"];\n", j, s->pl->provs[j].name,
                mf_provider_colour((int)j));
    fprintf(f, "    \"legend_const\" [label=\"constant (folded)\", fillcolor=\"%s\", "
               "style=\"rounded,filled,dashed\"];\n  }\n",
            mf_provider_colour(-1));
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        dot_id(a, sizeof a, v->name);
        fprintf(f, "  \"v:%s\" [shape=ellipse, style=filled, fillcolor=white, label=\"%s\\n%s\"];\n",
                a, a, mf_shape_str(p->vals[g->inputs[k]].view.dims, p->vals[g->inputs[k]].view.rank,
                                   shp, sizeof shp));
    }
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        int prov = s->assign[i];
        const char *pname = prov >= 0                ? s->pl->provs[prov].name
                            : prov == MF_ASSIGN_CORE ? "core"
                                                     : "constant";
        snprintf(b, sizeof b, "n%d", i);
        dot_id(a, sizeof a, n->name[0] ? n->name : b);
        const minfer_tensor_view *ov =
            n->n_outputs && n->outputs[0] >= 0 ? &p->vals[n->outputs[0]].view : NULL;
        fprintf(f, "  \"n%d\" [label=\"%s%s%s\\n%s\\n%s\\n[%s]\", fillcolor=\"%s\"%s, "
                   "tooltip=\"%s\"];\n",
                i, n->domain[0] ? n->domain : "", n->domain[0] ? ":" : "", n->op_type, a,
                ov ? mf_shape_str(ov->dims, ov->rank, shp, sizeof shp) : "", pname,
                mf_provider_colour(prov), prov < 0 ? ", style=\"rounded,filled,dashed\"" : "", a);
    }
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        int cdom = s->assign[i] >= 0 ? mf_dom_of_prov(s, s->assign[i]) : 0;
        for (size_t j = 0; j < n->n_inputs; j++) {
            int u = n->inputs[j];
            if (u < 0)
                continue;
            const mf_value *v = &g->values[u];
            if (v->initializer)
                continue; /* weights would drown the picture */
            int copy = 0;
            if (v->producer >= 0 && s->assign[v->producer] >= 0)
                copy = mf_dom_of_prov(s, s->assign[v->producer]) != cdom;
            else if (v->is_input)
                copy = cdom != 0;
            dot_id(a, sizeof a, v->name);
            if (v->producer >= 0)
                fprintf(f, "  \"n%d\" -> \"n%d\"", v->producer, i);
            else if (v->is_input)
                fprintf(f, "  \"v:%s\" -> \"n%d\"", a, i);
            else
                continue;
            if (copy)
                fprintf(f, " [color=\"#d62828\", penwidth=2, label=\"copy\", fontcolor=\"#d62828\"]");
            fprintf(f, ";\n");
        }
    }
    for (size_t k = 0; k < g->n_outputs; k++) {
        const mf_value *v = &g->values[g->outputs[k]];
        dot_id(a, sizeof a, v->name);
        fprintf(f, "  \"out:%s\" [shape=ellipse, style=filled, fillcolor=white, label=\"%s\\n%s\"];\n",
                a, a,
                mf_shape_str(p->vals[g->outputs[k]].view.dims, p->vals[g->outputs[k]].view.rank,
                             shp, sizeof shp));
        if (v->producer >= 0) {
            int copy = s->assign[v->producer] >= 0 && mf_dom_of_prov(s, s->assign[v->producer]) != 0;
            fprintf(f, "  \"n%d\" -> \"out:%s\"%s;\n", v->producer, a,
                    copy ? " [color=\"#d62828\", penwidth=2, label=\"copy\", fontcolor=\"#d62828\"]"
                         : "");
        }
    }
    fprintf(f, "}\n");
    return MINFER_OK;
}

minfer_status minfer_session_write_dot(minfer_session *s, const char *path) {
    if (!s || !path)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_write_dot: NULL argument");
    mf_outfile o;
    minfer_status st = mf_outfile_open(&o, path);
    if (st != MINFER_OK)
        return st;
    pthread_mutex_lock(&s->lock);
    st = mf_write_dot(s, o.f);
    pthread_mutex_unlock(&s->lock);
    if (st != MINFER_OK) {
        mf_outfile_abort(&o);
        return st;
    }
    return mf_outfile_commit(&o);
}

/* ---- memory reports ----------------------------------------------------- */

minfer_status minfer_session_memory_info(const minfer_session *cs, minfer_memory_info *out) {
    if (!cs || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_memory_info: NULL argument");
    minfer_session *s = (minfer_session *)cs; /* the lock is not part of the value */
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->lock);
    const mf_plan *p = s->cache.last;
    if (p) {
        out->has_plan = 1;
        out->planner = p->planner;
        out->arena_bytes = p->arena_bytes[0];
        for (size_t d = 1; d < s->n_domains; d++)
            out->device_arena_bytes += p->arena_bytes[d];
        out->intermediate_bytes = p->sum_bytes[0];
        out->lower_bound_bytes = p->lower_bound[0];
        out->constant_bytes = p->const_bytes;
        out->planned_tensors = p->n_bufs;
        for (size_t c = 0; c < p->n_copies; c++)
            if (!p->copies[c].alias) {
                out->copies_per_run++;
                out->copy_bytes_per_run += mf_view_bytes(&p->vals[p->copies[c].value].view);
            }
        for (size_t k = 0; k < s->g->n_outputs; k++) {
            const mf_vplan *vs = &p->vals[s->g->outputs[k]];
            if (vs->where == MF_W_ARENA && vs->dom != 0) {
                out->copies_per_run++;
                out->copy_bytes_per_run += mf_view_bytes(&vs->view);
            }
        }
    }
    pthread_mutex_unlock(&s->lock);
    return MINFER_OK;
}

minfer_status minfer_session_planned_tensor(const minfer_session *cs, size_t index,
                                            minfer_planned_tensor *out) {
    if (!cs || !out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_planned_tensor: NULL argument");
    minfer_session *s = (minfer_session *)cs;
    minfer_status st = MINFER_OK;
    pthread_mutex_lock(&s->lock);
    const mf_plan *p = s->cache.last;
    if (!p || index >= p->n_bufs) {
        st = mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_planned_tensor: no buffer %zu",
                      index);
    } else {
        const mf_buffer *b = &p->bufs[index];
        if (b->value >= 0)
            out->name = s->g->values[b->value].name;
        else {
            const mf_node *n = &s->g->nodes[-2 - b->value];
            out->name = n->name[0] ? n->name : n->op_type; /* its workspace */
        }
        out->domain = b->dom == 0 ? "host" : mf_prov_memory_domain(&s->pl->provs[b->dom - 1]);
        out->offset = b->offset;
        out->size = b->size;
        out->first_step = b->first;
        out->last_step = b->last;
        out->is_workspace = b->value < 0;
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}
