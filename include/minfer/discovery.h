/*
 * minfer provider discovery: which provider libraries this process would
 * find, and whether each one loads and initialises here.
 *
 *     minfer_provider_list *l = NULL;
 *     if (minfer_provider_list_create(&l) != MINFER_OK)
 *         fprintf(stderr, "%s\n", minfer_last_error());
 *     for (size_t i = 0; i < minfer_provider_list_count(l); i++) {
 *         const minfer_provider_info *p = minfer_provider_list_get(l, i);
 *         printf("%s %s %s\n", p->name, p->path, p->usable ? "ok" : p->reason);
 *     }
 *     minfer_provider_list_free(l);
 *
 * The search path is the one sessions use (docs/providers.md): the install
 * directory next to libminfer.so, the build tree when the library runs from
 * it, then MINFER_PROVIDER_PATH. Every libminfer_provider_NAME.so found there
 * is listed, in search order. The first file of each NAME is the one a
 * session would load; it is opened, checked and initialised (with an empty
 * option string) exactly as a session does, then shut down again. A later
 * file of the same NAME is listed as shadowed and not loaded.
 */
#ifndef MINFER_DISCOVERY_H
#define MINFER_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>

#include "minfer/minfer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Provider list ------------------------------------------------------ */

typedef struct minfer_provider_info {
    const char *name;     /* NAME from libminfer_provider_NAME.so */
    const char *version;  /* the provider's version string; "" if it gives none
                             or could not be read */
    uint32_t abi_version; /* the ABI version its vtable declares; 0 if unread */
    const char *path;     /* the library file */
    int usable;           /* 1: loads, passes the host's checks and initialises */
    const char *reason;   /* why not, when usable is 0 (one line); else "" */
    /* Appended: the device it computes on when usable ("CPU 'cpu-haswell'
     * (platform 'Portable Computing Language')"; "host CPU" for a provider
     * that does not say), else ""; and its kind, MINFER_DEVICE_* of
     * minfer/provider.h (CPU 0, GPU 1, other 2), -1 when not usable. */
    const char *device;
    int32_t device_kind;
    /* 1: left out of the default provider order, used only when named (a
     * provider other than "cpu" whose device is the CPU: OpenCL on PoCL). */
    int32_t named_only;
} minfer_provider_info;

typedef struct minfer_provider_list minfer_provider_list;

/* Scans the search path and probes each provider found. Fails only for a
 * lack of memory; a provider that cannot be used is listed with its reason. */
MINFER_API minfer_status minfer_provider_list_create(minfer_provider_list **out);
/* Frees the list and every string it handed out. NULL is a no-op. */
MINFER_API void minfer_provider_list_free(minfer_provider_list *list);

/* Providers found (shadowed copies included). */
MINFER_API size_t minfer_provider_list_count(const minfer_provider_list *list);
/* Entry i (< count), owned by the list. */
MINFER_API const minfer_provider_info *minfer_provider_list_get(const minfer_provider_list *list,
                                                                size_t i);
/* The directories searched, in order. */
MINFER_API size_t minfer_provider_list_dir_count(const minfer_provider_list *list);
/* Directory i (< dir count), owned by the list. */
MINFER_API const char *minfer_provider_list_dir(const minfer_provider_list *list, size_t i);

/* ---- Plugin list ----------------------------------------------------------
 * Custom-operator plugins (docs/plugins.md): every libminfer_plugin_NAME.so
 * in the plugin directories (beside the providers': <libdir>/minfer/plugins,
 * the build tree's plugins/, then MINFER_PLUGIN_PATH), and any extra files
 * named, each loaded and checked as a session would, with the ops it
 * registers. */

typedef struct minfer_plugin_desc {
    const char *name;    /* the plugin's own name; NAME of the file when not loaded */
    const char *version; /* "" when it gives none or could not be read */
    const char *path;    /* the library file */
    int usable;          /* 1: loads, passes the checks and registers its ops */
    const char *reason;  /* why not, when usable is 0 (one line); else "" */
    size_t n_ops;
    const char *const *ops; /* "com.example:Swish (opset 1+)", n_ops of them */
} minfer_plugin_desc;

typedef struct minfer_plugin_list minfer_plugin_list;

/* Scans the plugin directories, adds extra[0..n_extra) (paths or names),
 * and probes each. Fails only for a lack of memory. */
MINFER_API minfer_status minfer_plugin_list_create(const char *const *extra, size_t n_extra,
                                                   minfer_plugin_list **out);
/* Frees the list and its strings. NULL is a no-op. */
MINFER_API void minfer_plugin_list_free(minfer_plugin_list *list);
MINFER_API size_t minfer_plugin_list_count(const minfer_plugin_list *list);
/* Entry i (< count), owned by the list. */
MINFER_API const minfer_plugin_desc *minfer_plugin_list_get(const minfer_plugin_list *list,
                                                            size_t i);
/* The plugin directories searched, in order. */
MINFER_API size_t minfer_plugin_list_dir_count(const minfer_plugin_list *list);
MINFER_API const char *minfer_plugin_list_dir(const minfer_plugin_list *list, size_t i);

#ifdef __cplusplus
}
#endif

#endif
