/*
 * The internal "plugin" provider: a session's plugin ops presented to the
 * core as one host-memory provider, so placement, boundary copies, plans,
 * profiles and `minfer info` treat a plugin node like any other node.
 *
 * 1. mf_plugin_attach gathers the session's libraries (options, then
 *    MINFER_PLUGINS, then, only when some node's domain is still served by
 *    nobody, every plugin in the search path) and appends the provider
 *    after the session's own providers: a node a real provider runs stays
 *    there; the plugin provider takes what they all declined.
 * 2. supports_operator answers from the libraries' registered ops by
 *    (domain, op type, the model's opset for the domain).
 * 3. prepare_node calls the op's create, release_node its destroy,
 *    execute_node its compute; a failure's message is prefixed with the
 *    plugin's name and file, and the core adds the node's.
 * The instance holds a reference on each library until shutdown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "place/plugin_loader.h"
#include "shapes/shape_infer.h"
#include "util/env.h"
#include "util/internal.h"

typedef struct plugin_ctx {
    mf_plugin_lib **libs;
    size_t n_libs;
    const minfer_host_api *api;
    void *host;
} plugin_ctx;

typedef struct plugin_node {
    const minfer_plugin_op *op;
    mf_plugin_lib *lib;
    void *state;
} plugin_node;

static void ctx_free(plugin_ctx *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->n_libs; i++)
        mf_plugin_release(c->libs[i]);
    free(c->libs);
    free(c);
}

static void shutdown_(void *ctx) { ctx_free(ctx); }

/* Never called through the vtable: mf_plugin_attach builds the instance. */
static minfer_status init_(const minfer_host_api *api, void *host, const char *options,
                           void **ctx) {
    (void)api;
    (void)host;
    (void)options;
    *ctx = NULL;
    return mf_error(MINFER_ERR_PROVIDER, "the plugin provider is made by the session");
}

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    plugin_ctx *c = ctx;
    if (mf_plugin_find(c->libs, c->n_libs, n->domain, n->op_type, n->opset, NULL))
        return 1;
    snprintf(why, why_size, "no loaded plugin has %s:%s at opset %lld", n->domain, n->op_type,
             (long long)n->opset);
    return 0;
}

/* "plugin 'NAME' (FILE): OP WHAT: MESSAGE" as the last error (msg is the
 * plugin's buffer of size bytes, NUL-terminated here); returns st. */
static minfer_status fail(const plugin_node *pn, minfer_status st, const char *what, char *msg,
                          size_t size) {
    if (st == MINFER_OK) /* a status out of the enum's range is still a failure */
        st = MINFER_ERR_RUNTIME;
    mf_plugin_text(msg, size);
    return mf_error(st, "plugin '%s' (%s): %s %s: %s", mf_plugin_lib_name(pn->lib),
                    mf_plugin_lib_path(pn->lib), pn->op->op_type, what,
                    msg[0] ? msg : minfer_status_str(st));
}

static minfer_status prepare(void *ctx, const minfer_node_desc *n, minfer_node_prep *prep,
                             void **node_state) {
    plugin_ctx *c = ctx;
    mf_plugin_lib *lib = NULL;
    const minfer_plugin_op *op =
        mf_plugin_find(c->libs, c->n_libs, n->domain, n->op_type, n->opset, &lib);
    *node_state = NULL;
    if (!op)
        return mf_error(MINFER_ERR_UNSUPPORTED, "no loaded plugin has %s:%s", n->domain,
                        n->op_type);
    plugin_node *pn = mf_calloc(1, sizeof *pn);
    if (!pn)
        return mf_error(MINFER_ERR_NOMEM, "out of memory");
    pn->op = op;
    pn->lib = lib;
    if (op->create) {
        char msg[512] = "";
        minfer_plugin_create_args args = {
            .struct_size = sizeof args,
            .api = c->api,
            .host = c->host,
            .node = n,
            .err = msg,
            .err_size = sizeof msg,
        };
        minfer_status st = op->create(op->op_data, &args, &pn->state);
        if (st != MINFER_OK) {
            fail(pn, st, "create", msg, sizeof msg);
            free(pn);
            return st == MINFER_OK ? MINFER_ERR_RUNTIME : st;
        }
    }
    if ((op->flags & MINFER_PLUGIN_OP_INPLACE) && n->n_outputs > 0 &&
        (size_t)op->inplace_input < n->n_inputs && n->inputs[op->inplace_input].present)
        prep->output_inplace[0] = op->inplace_input;
    *node_state = pn;
    return MINFER_OK;
}

static void release(void *ctx, void *node_state) {
    (void)ctx;
    plugin_node *pn = node_state;
    if (!pn)
        return;
    if (pn->op->destroy)
        pn->op->destroy(pn->op->op_data, pn->state);
    free(pn);
}

static minfer_status execute(void *ctx, void *node_state, const minfer_exec_args *a) {
    plugin_ctx *c = ctx;
    plugin_node *pn = node_state;
    char msg[512] = "";
    minfer_plugin_compute_args args = {
        .struct_size = sizeof args,
        .api = c->api,
        .host = c->host,
        .run = a->run,
        .node = a->node,
        .inputs = a->inputs,
        .n_inputs = a->n_inputs,
        .outputs = a->outputs,
        .n_outputs = a->n_outputs,
        .err = msg,
        .err_size = sizeof msg,
        .tensor_view_size = a->tensor_view_size ? a->tensor_view_size : sizeof(minfer_tensor_view),
    };
    minfer_status st = pn->op->compute(pn->op->op_data, pn->state, &args);
    if (st != MINFER_OK)
        return fail(pn, st, "compute", msg, sizeof msg);
    /* Every output the node has must be allocated (alloc_output) or
     * planned: else the next node would read a value that is not there. */
    for (size_t j = 0; j < a->n_outputs && a->node && j < a->node->n_outputs; j++) {
        const minfer_tensor_view *o =
            (const minfer_tensor_view *)(const void *)((const char *)a->outputs +
                                                        j * args.tensor_view_size);
        if (!a->node->outputs[j].present)
            continue;
        if (o->rank < 0 || o->rank > MINFER_MAX_RANK || (!o->data && o->nbytes)) {
            snprintf(msg, sizeof msg, "returned OK but left output %zu ('%s') unallocated "
                     "(rank %d): it must call alloc_output", j,
                     a->node->outputs[j].name ? a->node->outputs[j].name : "", (int)o->rank);
            return fail(pn, MINFER_ERR_RUNTIME, "compute", msg, sizeof msg);
        }
    }
    return MINFER_OK;
}

static const minfer_provider plugin_vt = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "plugin",
    .version = MINFER_VERSION_STRING,
    .init = init_,
    .shutdown = shutdown_,
    .supports_operator = supports,
    .prepare_node = prepare,
    .release_node = release,
    .execute_node = execute,
};

int mf_plugin_is_provider(const mf_provider_inst *p) { return p && p->vt == &plugin_vt; }

mf_provider_inst *mf_plugin_folder(mf_provider_inst *provs, size_t n,
                                   const minfer_node_desc *desc) {
    for (size_t i = 0; i < n; i++) {
        if (!mf_plugin_is_provider(&provs[i]))
            continue;
        const plugin_ctx *c = provs[i].ctx;
        const minfer_plugin_op *op =
            mf_plugin_find(c->libs, c->n_libs, desc->domain, desc->op_type, desc->opset, NULL);
        return op && (op->flags & MINFER_PLUGIN_OP_DETERMINISTIC) ? &provs[i] : NULL;
    }
    return NULL;
}

/* ---- the session's libraries --------------------------------------------- */

static minfer_status add_lib(plugin_ctx *c, mf_plugin_lib *lib) {
    for (size_t i = 0; i < c->n_libs; i++)
        if (c->libs[i] == lib) {
            mf_plugin_release(lib); /* held already */
            return MINFER_OK;
        }
    mf_plugin_lib **l = mf_realloc(c->libs, (c->n_libs + 1) * sizeof *l);
    if (!l) {
        mf_plugin_release(lib);
        return mf_error(MINFER_ERR_NOMEM, "out of memory");
    }
    c->libs = l;
    c->libs[c->n_libs++] = lib;
    return MINFER_OK;
}

/* 1 when some node of g or of its subgraphs (which share the session's
 * placement, this provider included) may need a plugin no held one
 * serves: an op in a domain of its own, or one in the default domain that
 * the core does not know (ONNX Runtime writes SimplifiedLayerNormalization
 * there); then discovery is worth its cost. */
static int needs_discovery(const mf_graph *g, const plugin_ctx *c) {
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        const char *d = n->domain ? n->domain : "";
        /* A QDQ model: the optimizer's QDQ fusion (passes_quant.c) makes
         * com.microsoft QLinearAdd and the like, as ONNX Runtime runs it,
         * which a plugin serves. */
        if (!d[0] && strcmp(n->op_type, "DequantizeLinear") == 0 &&
            !mf_plugin_find(c->libs, c->n_libs, "com.microsoft", "QLinearAdd", 1, NULL))
            return 1;
        for (size_t a = 0; a < n->n_attrs; a++) {
            const mf_attr *at = &n->attrs[a];
            if (at->g && needs_discovery(at->g, c))
                return 1;
            for (size_t k = 0; at->graphs && k < at->count; k++)
                if (at->graphs[k] && needs_discovery(at->graphs[k], c))
                    return 1;
        }
        if (strcmp(d, "ai.onnx.ml") == 0 || strcmp(d, "minfer") == 0 ||
            strcmp(d, "ai.onnx.preview.training") == 0 || (!d[0] && mf_infer_known(d, n->op_type)))
            continue;
        if (!mf_plugin_find(c->libs, c->n_libs, d, n->op_type, n->opset, NULL))
            return 1;
    }
    return 0;
}

minfer_status mf_plugin_attach(const mf_graph *g, const char *const *names, size_t n_names,
                               const minfer_host_api *api, void *host, const char *errctx,
                               mf_provider_inst *out) {
    minfer_status st = MINFER_OK;
    plugin_ctx *c = mf_calloc(1, sizeof *c);
    char *copy = NULL, *paths = NULL;
    memset(out, 0, sizeof *out);
    if (!c)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
    for (size_t i = 0; i < n_names; i++) {
        mf_plugin_lib *lib;
        if ((st = mf_plugin_acquire(names[i], &lib)) != MINFER_OK) {
            st = mf_error_prefix(st, "%s", errctx);
            goto fail;
        }
        if ((st = add_lib(c, lib)) != MINFER_OK)
            goto fail;
    }
    /* MINFER_PLUGINS: names or paths, separated by commas. */
    const char *env = mf_env_plugins();
    if (env && env[0]) {
        if (!(copy = mf_strdup(env))) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
            goto fail;
        }
        for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ' || *tok == '\t')
                tok++;
            size_t len = strlen(tok);
            while (len && (tok[len - 1] == ' ' || tok[len - 1] == '\t'))
                tok[--len] = '\0';
            if (!len)
                continue;
            mf_plugin_lib *lib;
            if ((st = mf_plugin_acquire(tok, &lib)) != MINFER_OK) {
                st = mf_error_prefix(st, "%s: MINFER_PLUGINS", errctx);
                goto fail;
            }
            if ((st = add_lib(c, lib)) != MINFER_OK)
                goto fail;
        }
    }
    if (needs_discovery(g, c)) {
        char **found = NULL, **files = NULL;
        if ((st = mf_plugin_discover(&found, &files)) != MINFER_OK)
            goto fail;
        for (size_t i = 0; files[i]; i++) {
            mf_plugin_lib *lib;
            if (mf_plugin_acquire(files[i], &lib) != MINFER_OK) {
                char key[300];
                snprintf(key, sizeof key, "plugin:%s", files[i]);
                if (mf_first_time(key))
                    api->log(host, MINFER_LOG_WARN, "skipping installed plugin '%s': %s",
                             found[i], minfer_last_error());
                continue;
            }
            if ((st = add_lib(c, lib)) != MINFER_OK)
                break;
            api->log(host, MINFER_LOG_INFO, "plugin '%s' loaded from %s", found[i], files[i]);
        }
        mf_free_string_list(found);
        mf_free_string_list(files);
        if (st != MINFER_OK)
            goto fail;
    }
    free(copy);
    copy = NULL;
    if (c->n_libs == 0) {
        ctx_free(c);
        return MINFER_OK;
    }
    size_t len = 1;
    for (size_t i = 0; i < c->n_libs; i++)
        len += strlen(mf_plugin_lib_path(c->libs[i])) + 2;
    char *name = mf_strdup("plugin");
    if (!name || !(paths = mf_malloc(len))) {
        free(name);
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
        goto fail;
    }
    paths[0] = '\0';
    for (size_t i = 0; i < c->n_libs; i++) {
        if (i)
            strcat(paths, ", ");
        strcat(paths, mf_plugin_lib_path(c->libs[i]));
    }
    c->api = api;
    c->host = host;
    out->name = name;
    out->path = paths;
    out->vt = &plugin_vt;
    out->ctx = c;
    out->host_memory = 1;
    api->log(host, MINFER_LOG_INFO, "plugins: %s", paths);
    return MINFER_OK;
fail:
    free(copy);
    free(paths);
    ctx_free(c);
    return st;
}

/* ---- options --------------------------------------------------------------- */

/* The options keep the name or path (options sit below the loader); the
 * library is loaded here once, so a bad file fails at this call, and again
 * by each session made with them. */
minfer_status mf_plugin_add_name(char ***list, size_t *n, const char *path_or_name) {
    mf_plugin_lib *lib;
    minfer_status st = mf_plugin_acquire(path_or_name, &lib);
    if (st != MINFER_OK)
        return st;
    mf_plugin_release(lib);
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*list)[i], path_or_name) == 0)
            return MINFER_OK; /* added already */
    char *copy = mf_strdup(path_or_name);
    char **l = copy ? mf_realloc(*list, (*n + 1) * sizeof *l) : NULL;
    if (!l) {
        free(copy);
        return mf_error(MINFER_ERR_NOMEM, "minfer_options_add_plugin: out of memory");
    }
    *list = l;
    l[(*n)++] = copy;
    return MINFER_OK;
}
