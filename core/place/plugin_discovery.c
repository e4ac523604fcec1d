/* minfer_plugin_list (minfer/discovery.h): the plugins the search path
 * holds, and extra ones named, each loaded and checked as a session would
 * (mf_plugin_acquire), its ops read, and released again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/discovery.h"
#include "place/plugin_loader.h"
#include "util/internal.h"

struct minfer_plugin_list {
    minfer_plugin_desc *items;
    char **strings; /* every string the items point at, to free */
    size_t n_strings;
    size_t count;
    char **dirs;
    size_t n_dirs;
};

/* Hands block (malloc'd) to the list, which frees it; NULL when out of
 * memory (block is freed then). */
static void *own(minfer_plugin_list *l, void *block) {
    char **grown = block ? mf_realloc(l->strings, (l->n_strings + 1) * sizeof *grown) : NULL;
    if (!grown) {
        free(block);
        return NULL;
    }
    l->strings = grown;
    l->strings[l->n_strings++] = block;
    return block;
}

/* A copy of s kept by the list; NULL when out of memory. */
static char *keep(minfer_plugin_list *l, const char *s) { return own(l, mf_strdup(s)); }

/* The last error on one line (a reason column). */
static void one_line(char *buf, size_t size, const char *s) {
    snprintf(buf, size, "%s", s ? s : "");
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

static minfer_status add(minfer_plugin_list *l, const char *name, const char *path_or_name) {
    minfer_plugin_desc *items = mf_realloc(l->items, (l->count + 1) * sizeof *items);
    if (!items)
        return mf_error(MINFER_ERR_NOMEM, "out of memory listing plugins");
    l->items = items;
    minfer_plugin_desc *d = &l->items[l->count];
    memset(d, 0, sizeof *d);
    mf_plugin_lib *lib = NULL;
    char reason[1024] = "";
    if (mf_plugin_acquire(path_or_name, &lib) != MINFER_OK)
        one_line(reason, sizeof reason, minfer_last_error());
    d->usable = lib != NULL;
    d->name = keep(l, lib ? mf_plugin_lib_name(lib) : name);
    d->version = keep(l, lib ? mf_plugin_lib_version(lib) : "");
    d->path = keep(l, lib ? mf_plugin_lib_path(lib) : path_or_name);
    d->reason = keep(l, reason);
    if (lib) {
        const minfer_plugin_op *ops;
        size_t n = mf_plugin_lib_ops(lib, &ops);
        const char **names = own(l, mf_calloc(n + 1, sizeof *names));
        if (names) {
            for (size_t i = 0; i < n; i++) {
                char line[512];
                /* The default domain by its ONNX name, not as ":Op". */
                const char *dom = ops[i].domain[0] ? ops[i].domain : "ai.onnx";
                if (ops[i].until_version)
                    snprintf(line, sizeof line, "%s:%s (opset %lld-%lld)", dom, ops[i].op_type,
                             (long long)ops[i].since_version, (long long)ops[i].until_version);
                else
                    snprintf(line, sizeof line, "%s:%s (opset %lld+)", dom, ops[i].op_type,
                             (long long)ops[i].since_version);
                if (!(names[i] = keep(l, line)))
                    break;
                d->n_ops = i + 1;
            }
            d->ops = names;
        }
        mf_plugin_release(lib);
    }
    l->count++;
    if (!d->name || !d->version || !d->path || !d->reason || (lib && !d->ops))
        return mf_error(MINFER_ERR_NOMEM, "out of memory listing plugins");
    return MINFER_OK;
}

minfer_status minfer_plugin_list_create(const char *const *extra, size_t n_extra,
                                        minfer_plugin_list **out) {
    minfer_status st;
    char **names = NULL, **paths = NULL;
    if (!out || (n_extra && !extra))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_plugin_list_create: NULL argument");
    *out = NULL;
    minfer_plugin_list *l = mf_calloc(1, sizeof *l);
    if (!l)
        return mf_error(MINFER_ERR_NOMEM, "out of memory listing plugins");
    l->dirs = mf_plugin_search_path();
    if (!l->dirs) {
        st = mf_error(MINFER_ERR_NOMEM, "out of memory listing plugins");
        goto fail;
    }
    while (l->dirs[l->n_dirs])
        l->n_dirs++;
    if ((st = mf_plugin_discover(&names, &paths)) != MINFER_OK)
        goto fail;
    for (size_t i = 0; paths[i]; i++)
        if ((st = add(l, names[i], paths[i])) != MINFER_OK)
            goto fail;
    for (size_t i = 0; i < n_extra; i++)
        if (extra[i] && (st = add(l, extra[i], extra[i])) != MINFER_OK)
            goto fail;
    mf_free_string_list(names);
    mf_free_string_list(paths);
    *out = l;
    return MINFER_OK;
fail:
    mf_free_string_list(names);
    mf_free_string_list(paths);
    minfer_plugin_list_free(l);
    return st;
}

void minfer_plugin_list_free(minfer_plugin_list *l) {
    if (!l)
        return;
    for (size_t i = 0; i < l->n_strings; i++)
        free(l->strings[i]);
    free(l->strings);
    free(l->items);
    mf_free_string_list(l->dirs);
    free(l);
}

size_t minfer_plugin_list_count(const minfer_plugin_list *l) { return l ? l->count : 0; }

const minfer_plugin_desc *minfer_plugin_list_get(const minfer_plugin_list *l, size_t i) {
    return l && i < l->count ? &l->items[i] : NULL;
}

size_t minfer_plugin_list_dir_count(const minfer_plugin_list *l) { return l ? l->n_dirs : 0; }

const char *minfer_plugin_list_dir(const minfer_plugin_list *l, size_t i) {
    return l && i < l->n_dirs ? l->dirs[i] : NULL;
}
