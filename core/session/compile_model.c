/*
 * minfer_compile_model (include/minfer/compile.h): builds a session of the
 * ONNX model, so the graph is loaded, checked, optimized and placed exactly
 * as a session would run it, and writes the graph that session optimized as
 * a compiled file (load/mfc_write.c). It makes a session, so it is the
 * session stage's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "graph/graph.h"
#include "exec/exec.h"
#include "load/mfc.h"
#include "minfer/compile.h"
#include "optimize/optimizer.h"
#include "place/plugin_loader.h"
#include "place/provider_loader.h"
#include "place/state.h"
#include "plan/plan.h"
#include "session/session.h"
#include "util/env.h"
#include "util/fileio.h"
#include "util/internal.h"

/* The packed constants gathered from a session's providers (step 2 of
 * minfer_compile_model): copies, since a provider's bytes are valid only
 * during its emit call. */
typedef struct packs {
    mf_mfc_pack *p;
    size_t n, cap;
    const mf_node *node;   /* the node being asked */
    const mf_graph *g;
    const char *provider;
    int failed;
} packs;

static void packs_clear(packs *ps) {
    for (size_t i = 0; i < ps->n; i++) {
        free((char *)(uintptr_t)ps->p[i].tag);
        free((void *)(uintptr_t)ps->p[i].data);
    }
    free(ps->p);
    memset(ps, 0, sizeof *ps);
}

/* export_packed's emit: one packed constant input of ps->node. */
static void emit_packed(void *arg, const minfer_packed_const *c) {
    packs *ps = arg;
    const mf_node *n = ps->node;
    if (ps->failed || !c || c->struct_size < sizeof *c || !c->tag || !c->data || !c->bytes ||
        c->input >= n->n_inputs - n->n_implicit || n->inputs[c->input] < 0)
        return;
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 64;
        mf_mfc_pack *np = mf_realloc(ps->p, cap * sizeof *np);
        if (!np) {
            ps->failed = 1;
            return;
        }
        ps->p = np;
        ps->cap = cap;
    }
    char *tag = mf_strdup(c->tag);
    void *data = mf_malloc(c->bytes);
    if (!tag || !data) {
        free(tag);
        free(data);
        ps->failed = 1;
        return;
    }
    memcpy(data, c->data, c->bytes);
    ps->p[ps->n++] = (mf_mfc_pack){n->name ? n->name : "", n->op_type, c->input,
                                   ps->g->values[n->inputs[c->input]].name, ps->provider, tag,
                                   data, c->bytes};
}

/* Asks each prepared node's provider of the session's plan for the packed
 * copies of its constant inputs (minfer_provider.export_packed). Names in
 * the entries point into s's graph: they are used before s is freed. */
static minfer_status gather_packs(minfer_session *s, packs *ps, const char *errctx) {
    const mf_graph *g = s->g;
    size_t exporters = 0;
    for (size_t j = 0; j < s->pl->n_provs; j++)
        exporters += mf_prov_has_export_packed(&s->pl->provs[j]);
    if (!exporters)
        return MINFER_OK; /* no provider packs anything to store: no plan needed */
    /* The session prepared a plan for inputs of known shape; for others, a
     * plan with each unknown dimension 1 (the batch-1 request most
     * served): a provider whose packing depends on the shapes (oneDNN's
     * split nodes) tags its packs so that other shapes repack. */
    int64_t *sig = mf_malloc((MF_SIG_ENTRIES(g->n_inputs) + 1) * sizeof *sig);
    size_t len = 0;
    mf_plan *p = NULL;
    if (!sig)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
    for (size_t k = 0; k < g->n_inputs; k++) {
        const mf_value *v = &g->values[g->inputs[k]];
        int64_t dims[MINFER_MAX_RANK];
        for (int d = 0; d < v->rank; d++)
            dims[d] = v->dims[d] < 0 ? 1 : v->dims[d];
        len = mf_sig_put(sig, len, MINFER_VALUE_TENSOR, v->dtype, v->rank, dims);
    }
    minfer_status st = mf_plan_acquire(s, sig, len, NULL, &p);
    free(sig);
    if (st != MINFER_OK) {
        /* Not an error of the model: it is compiled without packed copies. */
        mf_error_clear();
        return MINFER_OK;
    }
    ps->g = g;
    for (size_t i = 0; i < s->g->n_nodes; i++) {
        const mf_nplan *ns = &p->nodes[i];
        if (!ns->prepared || !ns->state || ns->prov < 0)
            continue;
        mf_provider_inst *pi = &s->pl->provs[ns->prov];
        if (!mf_prov_has_export_packed(pi))
            continue;
        ps->node = &s->g->nodes[i];
        ps->provider = pi->name;
        if ((st = mf_prov_export_packed(pi, ns->state, &ns->desc, emit_packed, ps)) != MINFER_OK) {
            st = mf_error(st, "%s: provider '%s' could not hand out the packed constants of "
                          "node '%s'", errctx, pi->name, ps->node->name);
            break;
        }
        if (ps->failed) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory copying packed constants",
                          errctx);
            break;
        }
    }
    mf_plan_release(s, p);
    return st;
}

/* The session's level: the option's, else MINFER_OPT_LEVEL (util/env.c). */
static int effective_level(const minfer_options *opt) {
    return opt && opt->opt_level >= 0 ? opt->opt_level : mf_env_opt_level();
}

/* Steps of minfer_compile_model:
 *  1. a session from the model with the caller's options: the model loads,
 *     optimizes and places on the provider list, whose loaded providers are
 *     recorded;
 *  2. the graph that session optimized, made again the same way (the
 *     session hands the subgraphs of control-flow nodes to sessions of
 *     their own, so its graph does not stay whole): load, free-dimension
 *     overrides, Gradient expansion, then the optimizer as the session
 *     ran it (mf_session_optimize_graph: its level, evaluator, fusion gate
 *     and float16 rule, so fusions only the session's providers run, such
 *     as OpenCL's minfer:GatedConv, are in the file too);
 *  3. unless MINFER_COMPILE_PACK=0, the constants the session's providers
 *     packed for its plan, asked of each prepared node
 *     (minfer_provider.export_packed; oneDNN's blocked weights), for the
 *     PACK section; the session stays open until the file is written;
 *  4. that graph written to out_path. */
minfer_status minfer_compile_model(const char *model_path, const char *out_path,
                                   const minfer_options *opt) {
    minfer_session *s = NULL;
    mf_graph *g = NULL;
    packs ps;
    memset(&ps, 0, sizeof ps);
    void *data = MAP_FAILED;
    uint64_t size = 0;
    FILE *f = NULL;
    minfer_status st;
    if (!model_path || !out_path)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_compile_model: NULL path");
    if ((st = mf_fopen_regular(model_path, "model file", &f, &size)) != MINFER_OK)
        return st;
    if (size > 0 && size <= SIZE_MAX)
        data = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
    fclose(f);
    if (data == MAP_FAILED)
        return mf_error(size ? MINFER_ERR_IO : MINFER_ERR_MODEL,
                        "%s: cannot map the model (%llu bytes)", model_path,
                        (unsigned long long)size);
    if (minfer_is_compiled(data, (size_t)size)) {
        st = mf_error(MINFER_ERR_INVALID_ARG,
                      "%s: the model is already compiled; compile its ONNX file", model_path);
        goto done;
    }
    if ((st = minfer_session_create(model_path, opt, &s)) != MINFER_OK)
        goto done;
    char providers[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < minfer_session_provider_count(s); i++) {
        int k = snprintf(providers + used, sizeof providers - used, "%s%s", i ? "," : "",
                         minfer_session_provider_name(s, i));
        if (k < 0 || (size_t)k >= sizeof providers - used)
            break;
        used += (size_t)k;
    }
    const char *pack_env = secure_getenv("MINFER_COMPILE_PACK");
    if ((!pack_env || strcmp(pack_env, "0") != 0) &&
        (st = gather_packs(s, &ps, model_path)) != MINFER_OK)
        goto done;

    char dir[4096];
    snprintf(dir, sizeof dir, "%s", model_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    minfer_limits lim = mf_options_limits(opt);
    int level = effective_level(opt);
    if ((st = mf_load_onnx_ex(data, (size_t)size, 1, dir, model_path, &lim, &g)) != MINFER_OK ||
        (st = mf_apply_dim_overrides(g, opt, model_path)) != MINFER_OK ||
        (st = mf_expand_gradients(g, model_path)) != MINFER_OK)
        goto done;
    if (level > 0 && g->n_nodes) { /* control flow too: as a session optimizes it */
        mf_opt_report rep;
        memset(&rep, 0, sizeof rep);
        if ((st = mf_session_optimize_graph(s, g, level, &rep)) != MINFER_OK)
            goto done;
    }
    st = mf_mfc_write(g, level, providers, ps.p, ps.n, out_path);
done:
    packs_clear(&ps);
    minfer_session_free(s);
    mf_graph_free(g);
    if (data != MAP_FAILED)
        munmap(data, (size_t)size);
    return st;
}
