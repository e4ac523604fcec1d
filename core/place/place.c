/*
 * Placement: which providers a session has, and which of them runs each
 * node (place/place.h).
 *
 *  1. mf_place_open loads the preference list (options, else
 *     MINFER_PROVIDERS, else the default order), skipping with a warning
 *     any that cannot load; the CPU provider is also opened, privately, as
 *     the evaluator for constant folding if the list does not name it;
 *  2. mf_place_node gives a node to the first provider in the list whose
 *     supports_operator accepts it, remembering why the ones before it
 *     declined;
 *  3. mf_place_check_strict fails a strict session in which a node fell
 *     back past the first provider;
 *  4. mf_place_fallback moves a node whose provider accepted it but could
 *     not prepare it to the next provider that supports it (one warning);
 *     under strict placement that is an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place/place.h"
#include "place/plugin_loader.h"
#include "shapes/shape_infer.h"
#include "util/env.h"

#define DEFAULT_PROVIDERS "onednn,opencl,cpu"
#define EVAL_PROVIDER "cpu"

int mf_dom_of_prov(const minfer_session *s, int prov) {
    if (prov < 0 || s->pl->provs[prov].host_memory)
        return 0;
    return 1 + prov;
}

void mf_place_close(mf_placement *pl) {
    if (!pl)
        return;
    for (size_t i = 0; i < pl->n_provs; i++)
        mf_provider_close(&pl->provs[i]);
    mf_provider_close(&pl->eval_own);
    free(pl->provs);
    free(pl);
}

int mf_place_supports(const mf_provider_inst *pi, const minfer_node_desc *desc, char *why,
                      size_t why_size) {
    if (why_size)
        why[0] = '\0';
    return mf_prov_supports(pi, desc, why, why_size);
}

minfer_status mf_place_open(minfer_session *s, const minfer_options *opt) {
    char **names = NULL;
    size_t n = 0;
    int from_default = 0;
    char *copy = NULL;
    minfer_status st = mf_options_precision(opt, s->errctx, &s->pl->precision);
    if (st != MINFER_OK)
        return st;
    const char *env = mf_env_providers();
    const char *list = NULL;
    if (opt && opt->n_providers) {
        names = opt->providers;
        n = opt->n_providers;
    } else {
        list = env && env[0] ? env : DEFAULT_PROVIDERS;
        from_default = !(env && env[0]);
        copy = mf_strdup(list);
        /* at most one name per two characters ("a,b,c"): no fixed limit */
        names = mf_calloc(strlen(list) / 2 + 2, sizeof *names);
        if (!copy || !names) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
            goto done;
        }
        for (char *save = NULL, *tok = strtok_r(copy, ", \t", &save); tok;
             tok = strtok_r(NULL, ", \t", &save))
            names[n++] = tok;
        if (n == 0) {
            st = mf_error(MINFER_ERR_INVALID_ARG, "%s: MINFER_PROVIDERS='%s' names no provider",
                          s->errctx, list);
            goto done;
        }
    }
    /* A name that is neither installed nor one minfer knows is a typo:
     * an error that lists what there is, before anything loads. */
    for (size_t i = 0; !from_default && i < n; i++)
        if (!mf_provider_is_known(names[i]) && !mf_provider_installed(names[i])) {
            char installed[512];
            mf_installed_provider_names(installed, sizeof installed);
            st = mf_error(MINFER_ERR_INVALID_ARG,
                          "%s: unknown provider '%s' (installed: %s; minfer's providers: %s)",
                          s->errctx, names[i], installed, MF_KNOWN_PROVIDERS);
            goto done;
        }
    s->pl->provs = mf_calloc(n + 1, sizeof *s->pl->provs);
    char **skipped = mf_calloc(n + 1, sizeof *skipped); /* why each one did not load */
    if (!s->pl->provs || !skipped) {
        free(skipped);
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
        goto done;
    }
    char failures[2048] = "";
    size_t flen = 0;
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t j = 0; j < s->pl->n_provs; j++)
            dup |= strcmp(s->pl->provs[j].name, names[i]) == 0;
        if (dup)
            continue;
        mf_provider_inst inst;
        if (mf_provider_open(names[i], &s->pl->api, s, mf_options_provider_options(opt, names[i]), &inst) != MINFER_OK) {
            int w = snprintf(failures + flen, sizeof failures - flen, "%s%s", flen ? "; " : "",
                             minfer_last_error());
            if (w > 0 && (size_t)w < sizeof failures - flen)
                flen += (size_t)w;
            skipped[i] = mf_strdup(minfer_last_error());
            continue;
        }
        /* The default order is for speed: an OpenCL "device" that is the
         * host's CPU (PoCL) is slower there than the CPU provider, so it
         * runs only when named. */
        char device[256];
        if (from_default && mf_provider_named_only(&inst)) {
            mf_provider_device(&inst, device, sizeof device);
            mf_log(s, MINFER_LOG_INFO,
                   "provider '%s' left out of the default order: its device is the CPU (%s); "
                   "name it in the provider list to use it",
                   names[i], device);
            mf_provider_close(&inst);
            continue;
        }
        s->pl->provs[s->pl->n_provs++] = inst;
        mf_log(s, MINFER_LOG_INFO, "provider '%s' loaded from %s", inst.name, inst.path);
    }
    /* Providers skipped in a session that still has one: a warning once
     * per process (the default list names providers that may simply not
     * be installed: information). Without any, the error says it all. */
    for (size_t i = 0; s->pl->n_provs && i < n; i++) {
        char key[128];
        snprintf(key, sizeof key, "provider:%s", names[i]);
        if (skipped[i] && (from_default || mf_first_time(key)))
            mf_log(s, from_default ? MINFER_LOG_INFO : MINFER_LOG_WARN,
                   "skipping provider '%s': %s", names[i], skipped[i]);
    }
    for (size_t i = 0; i < n; i++)
        free(skipped[i]);
    free(skipped);
    if (s->pl->n_provs == 0) {
        char joined[512] = "";
        size_t used = 0;
        for (size_t i = 0; i < n; i++) {
            int w = snprintf(joined + used, sizeof joined - used, "%s%s", i ? "," : "", names[i]);
            if (w < 0 || (size_t)w >= sizeof joined - used)
                break;
            used += (size_t)w;
        }
        st = mf_error(MINFER_ERR_PROVIDER, "%s: no usable provider in the list '%s' (%s)",
                      s->errctx, joined, failures);
        goto done;
    }
    for (size_t i = 0; i < s->pl->n_provs; i++)
        if (strcmp(s->pl->provs[i].name, EVAL_PROVIDER) == 0)
            s->pl->eval = &s->pl->provs[i];
    if (!s->pl->eval) {
        if (mf_provider_open(EVAL_PROVIDER, &s->pl->api, s, "", &s->pl->eval_own) == MINFER_OK)
            s->pl->eval = &s->pl->eval_own;
        else
            mf_log(s, MINFER_LOG_INFO,
                    "no '%s' provider for constant folding (%s); shapes that depend on "
                    "computed values are resolved at run time",
                    EVAL_PROVIDER, minfer_last_error());
    }
    /* Plugin ops: one more provider, last (s->pl->provs has room for it). */
    st = mf_plugin_attach(s->g, opt ? (const char *const *)opt->plugins : NULL,
                          opt ? opt->n_plugins : 0, &s->pl->api, s, s->errctx, &s->pl->provs[s->pl->n_provs]);
    if (st == MINFER_OK && s->pl->provs[s->pl->n_provs].vt)
        s->pl->n_provs++;
done:
    free(copy);
    if (names != (opt ? opt->providers : NULL))
        free(names);
    return st;
}


/* The first provider from index `from` on that accepts desc, or -1;
 * reasons gathers why the others declined ("name: why; ..."). */
static int first_supporting(minfer_session *s, int i, const minfer_node_desc *desc, size_t from,
                            char *reasons, size_t size) {
    const mf_node *n = &s->g->nodes[i];
    char lbl[512];
    size_t used = strlen(reasons);
    for (size_t j = from; j < s->pl->n_provs; j++) {
        char why[512] = "";
        if (mf_place_supports(&s->pl->provs[j], desc, why, sizeof why))
            return (int)j;
        mf_log(s, MINFER_LOG_VERBOSE, "%s: provider '%s' declined: %s",
               mf_node_label(n, i, lbl, sizeof lbl), s->pl->provs[j].name,
               why[0] ? why : "no reason given");
        int w = snprintf(reasons + used, size - used, "%s%s: %s", used ? "; " : "",
                         s->pl->provs[j].name, why[0] ? why : "declined");
        if (w > 0 && (size_t)w < size - used)
            used += (size_t)w;
    }
    return -1;
}

minfer_status mf_place_node(minfer_session *s, int i, const minfer_node_desc *desc) {
    const mf_node *n = &s->g->nodes[i];
    char lbl[512], reasons[1536] = "";
    s->assign[i] = first_supporting(s, i, desc, 0, reasons, sizeof reasons);
    if (s->assign[i] < 0)
        return mf_error(MINFER_ERR_UNSUPPORTED, "%s: no provider supports %s (%s)", s->errctx,
                        mf_node_label(n, i, lbl, sizeof lbl), reasons);
    free(s->declined[i]);
    if (!(s->declined[i] = mf_strdup(reasons)))
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", s->errctx);
    mf_log(s, MINFER_LOG_VERBOSE, "%s -> %s", mf_node_label(n, i, lbl, sizeof lbl),
           s->pl->provs[s->assign[i]].name);
    return MINFER_OK;
}

minfer_status mf_place_check_strict(minfer_session *s) {
    const mf_graph *g = s->g;
    char lbl[512];
    if (!s->strict)
        return MINFER_OK;
    char names[1536] = "";
    size_t used = 0, count = 0;
    for (size_t k = 0; k < g->n_nodes; k++) {
        int i = g->order[k];
        if (s->assign[i] <= 0 || mf_plugin_is_provider(&s->pl->provs[s->assign[i]]))
            continue; /* a plugin's op runs on no other provider */
        count++;
        int w = snprintf(names + used, sizeof names - used, "%s%s (%s: %s)", used ? "; " : "",
                         mf_node_label(&g->nodes[i], i, lbl, sizeof lbl),
                         s->pl->provs[s->assign[i]].name, s->declined[i]);
        if (w > 0 && (size_t)w < sizeof names - used)
            used += (size_t)w;
    }
    if (count)
        return mf_error(MINFER_ERR_PROVIDER,
                        "%s: strict placement: %zu node(s) would fall back past provider "
                        "'%s': %s",
                        s->errctx, count, s->pl->provs[0].name, names);
    return MINFER_OK;
}

minfer_status mf_place_fallback(minfer_session *s, int i, int failed, const minfer_node_desc *desc,
                                minfer_status st, const char *why, const minfer_run_options *ro,
                                int *next) {
    const mf_node *n = &s->g->nodes[i];
    char lbl[512], reasons[1536] = "";
    const char *name = s->pl->provs[failed].name;
    *next = -1;
    mf_node_label(n, i, lbl, sizeof lbl);
    if (s->strict)
        return mf_error(st, "%s: strict placement: provider '%s' could not prepare %s: %s",
                        s->errctx, name, lbl, why);
    *next = first_supporting(s, i, desc, (size_t)failed + 1, reasons, sizeof reasons);
    if (*next < 0)
        return mf_error(st, "%s: provider '%s' could not prepare %s: %s%s%s", s->errctx, name,
                        lbl, why, reasons[0] ? "; no later provider takes it: " : "",
                        reasons);
    mf_log_ro(s, ro, MINFER_LOG_WARN,
              "%s: provider '%s' accepted %s but could not prepare it (%s); it runs on "
              "provider '%s'",
              s->errctx, name, lbl, why, s->pl->provs[*next].name);
    return MINFER_OK;
}

minfer_status mf_place_infer(const mf_node *n, const minfer_tensor_view *in, size_t n_in,
                             minfer_tensor_view *out, size_t n_out, char *err, size_t err_size) {
    return mf_infer_node_or(n, in, n_in, out, n_out, err, err_size, mf_plugin_infer);
}
