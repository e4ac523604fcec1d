/*
 * Custom-operator plugins (include/minfer/plugin.h): finding, loading,
 * checking and registering plugin libraries, process-wide.
 *
 * 1. A plugin named NAME is the file libminfer_plugin_NAME.so in the plugin
 *    search path: the install directory (<dir of libminfer.so>/
 *    minfer/plugins), the build tree's plugin directory when libminfer.so
 *    runs from the build tree, then each directory of MINFER_PLUGIN_PATH.
 *    Anything with a '/' is a path to the file itself.
 * 2. Loaded libraries form one process-wide registry, keyed by the file's
 *    resolved path: loading a file twice takes a second reference to the
 *    same library. Each session holds a reference on each of its plugins
 *    (options keep names only); the library is closed when the last goes.
 * 3. A library's ops must not overlap any other loaded library's: the same
 *    (domain, op type) with intersecting opset ranges is a load error
 *    naming both files. So one lookup by (domain, op, opset) answers for
 *    every session, which is what shape inference needs (it sees a node,
 *    not a session).
 * 4. A session presents its libraries' ops to placement as one internal
 *    host-memory provider, "plugin" (plugin_provider.c).
 */
#ifndef MINFER_CORE_PLUGIN_LOADER_H
#define MINFER_CORE_PLUGIN_LOADER_H

#include "minfer/plugin.h"
#include "graph/graph.h"
#include "place/provider_loader.h"

typedef struct mf_plugin_lib mf_plugin_lib;

/* Loads (or takes another reference to) the plugin path_or_name. On failure
 * the last error names the file and the reason (not found, dlopen's
 * message, a missing entry symbol, an ABI mismatch, a malformed or
 * duplicate op). */
minfer_status mf_plugin_acquire(const char *path_or_name, mf_plugin_lib **out);
/* Drops a reference; the last one unloads the library. NULL: no-op. */
void mf_plugin_release(mf_plugin_lib *lib);

const char *mf_plugin_lib_name(const mf_plugin_lib *lib);
const char *mf_plugin_lib_path(const mf_plugin_lib *lib);
const char *mf_plugin_lib_version(const mf_plugin_lib *lib);
/* The library's ops (registered copies). */
size_t mf_plugin_lib_ops(const mf_plugin_lib *lib, const minfer_plugin_op **ops);

/* The op of libs[0..n) that serves (domain, op_type) at opset, or NULL;
 * *owner (may be NULL) receives its library. */
const minfer_plugin_op *mf_plugin_find(mf_plugin_lib *const *libs, size_t n, const char *domain,
                                       const char *op_type, int64_t opset, mf_plugin_lib **owner);

/* Shape inference for a node no core rule covers (shape_infer.c): when a
 * loaded plugin serves the node, its infer fills out; otherwise out stays
 * unknown and MINFER_OK. Contract as mf_infer_node's. */
minfer_status mf_plugin_infer(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                              minfer_tensor_view *out, size_t n_out, char *err, size_t err_size);

/* Directories searched for plugins by name, as mf_provider_search_path. */
char **mf_plugin_search_path(void);
/* The plugin names the search path holds (NULL-terminated, each once, in
 * search order), with their files in *paths (same order). */
minfer_status mf_plugin_discover(char ***names, char ***paths);

/* The session's plugins: names[0..n_names) (minfer_options_add_plugin),
 * those of MINFER_PLUGINS, and, when g has nodes in a domain neither the
 * core nor those plugins serve, every plugin in the search path. When any
 * is held, *out becomes the internal "plugin" provider (api and host: the
 * session's host table, for logging and the plugins' kernels), which the
 * session appends to its providers, last; else out->vt is NULL.
 * plugin_provider.c. */
minfer_status mf_plugin_attach(const mf_graph *g, const char *const *names, size_t n_names,
                               const minfer_host_api *api, void *host, const char *errctx,
                               mf_provider_inst *out);
/* minfer_options_add_plugin's work on the options' list of names: loads
 * path_or_name once to check it, then appends a copy (once). */
minfer_status mf_plugin_add_name(char ***list, size_t *n, const char *path_or_name);
/* 1 for the instance of the internal plugin provider. */
int mf_plugin_is_provider(const mf_provider_inst *p);
/* The plugin provider among provs[0..n) when desc is one of its ops that
 * declares MINFER_PLUGIN_OP_DETERMINISTIC, so the planner may fold the node
 * on it (the evaluator declines plugin ops); else NULL. */
mf_provider_inst *mf_plugin_folder(mf_provider_inst *provs, size_t n,
                                   const minfer_node_desc *desc);

/* Makes a plugin's message buffer of size bytes a string fit to print: a
 * NUL at its end (a plugin may fill it without one) and '?' for control
 * bytes. */
void mf_plugin_text(char *msg, size_t size);

#endif
