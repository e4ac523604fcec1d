/*
 * Provider discovery for `minfer providers` (include/minfer/discovery.h).
 *
 * 1. Take the session search path (mf_provider_search_path).
 * 2. List each directory's libminfer_provider_*.so files, sorted by name so
 *    the output does not depend on readdir order; a directory that appears
 *    twice in the path is listed once.
 * 3. For the first file of each name, run the session loader on it
 *    (mf_provider_open: dlopen, entry symbol, ABI and vtable checks, init)
 *    and shut it down again; a later file of the same name is shadowed.
 * 4. Read the version and ABI version from the vtable, also for a provider
 *    that failed a later check, so a wrong-ABI library still shows its ABI.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/internal.h"
#include "minfer/discovery.h"
#include "place/provider_loader.h"

#define PREFIX "libminfer_provider_"
#define SUFFIX ".so"

typedef struct entry {
    minfer_provider_info info; /* strings point into the owned copies below */
    char *name, *version, *path, *reason, *device;
} entry;

struct minfer_provider_list {
    entry *items;
    size_t count, cap;
    char **dirs; /* NULL-terminated */
    size_t n_dirs;
};

/* ---- a host API for probing: no session, no nodes ----------------------- */

/* Dropped: a probe's chatter would interleave with the listing, and what
 * matters, the reason init failed, comes through set_error. */
static void probe_log(void *host, int level, const char *fmt, ...) {
    (void)host;
    (void)level;
    (void)fmt;
}

static void probe_set_error(void *host, const char *fmt, ...) {
    char buf[1536];
    va_list ap;
    (void)host;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    mf_error(MINFER_ERR_RUNTIME, "%s", buf);
}

/* init never sees a node, so no attribute exists. */
static int probe_attr_type(const minfer_node_desc *n, const char *name) {
    (void)n;
    (void)name;
    return MINFER_ATTR_UNDEFINED;
}
static int probe_attr_int(const minfer_node_desc *n, const char *name, int64_t *out) {
    (void)n, (void)name, (void)out;
    return 0;
}
static int probe_attr_float(const minfer_node_desc *n, const char *name, float *out) {
    (void)n, (void)name, (void)out;
    return 0;
}
static int probe_attr_string(const minfer_node_desc *n, const char *name, const char **out,
                             size_t *len) {
    (void)n, (void)name, (void)out, (void)len;
    return 0;
}
static int probe_attr_ints(const minfer_node_desc *n, const char *name, const int64_t **out,
                           size_t *count) {
    (void)n, (void)name, (void)out, (void)count;
    return 0;
}
static int probe_attr_floats(const minfer_node_desc *n, const char *name, const float **out,
                             size_t *count) {
    (void)n, (void)name, (void)out, (void)count;
    return 0;
}
static int probe_attr_tensor(const minfer_node_desc *n, const char *name,
                             minfer_tensor_view *out) {
    (void)n, (void)name, (void)out;
    return 0;
}

static int probe_num_threads(void *host) {
    (void)host;
    return 1;
}

static void probe_parallel_for(void *host, size_t n, size_t grain, minfer_range_fn fn,
                               void *arg) {
    (void)host;
    (void)grain;
    if (n)
        fn(arg, 0, n);
}

static minfer_status probe_alloc_output(void *run, size_t index, int32_t rank,
                                        const int64_t *dims) {
    (void)run, (void)index, (void)rank, (void)dims;
    return mf_error(MINFER_ERR_INVALID_ARG, "alloc_output called while probing a provider");
}

static const minfer_host_api probe_api = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_host_api),
    .log = probe_log,
    .set_error = probe_set_error,
    .attr_type = probe_attr_type,
    .attr_int = probe_attr_int,
    .attr_float = probe_attr_float,
    .attr_string = probe_attr_string,
    .attr_ints = probe_attr_ints,
    .attr_floats = probe_attr_floats,
    .attr_tensor = probe_attr_tensor,
    .num_threads = probe_num_threads,
    .parallel_for = probe_parallel_for,
    .alloc_output = probe_alloc_output,
};

/* ---- the list ------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted provider file names in dir (NULL-terminated); NULL on OOM. A
 * directory that cannot be read yields an empty list: it holds nothing. */
static char **dir_providers(const char *dir) {
    size_t n = 0, cap = 8;
    char **names = mf_malloc(cap * sizeof *names);
    if (!names)
        return NULL;
    names[0] = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return names;
    const size_t plen = strlen(PREFIX), slen = strlen(SUFFIX);
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        size_t len = strlen(e->d_name);
        if (len <= plen + slen || strncmp(e->d_name, PREFIX, plen) != 0 ||
            strcmp(e->d_name + len - slen, SUFFIX) != 0)
            continue;
        if (n + 2 > cap) {
            char **grown = mf_realloc(names, cap * 2 * sizeof *names);
            if (!grown)
                goto oom;
            names = grown;
            cap *= 2;
        }
        if (!(names[n] = mf_strdup(e->d_name)))
            goto oom;
        names[++n] = NULL;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    return names;
oom:
    closedir(d);
    mf_free_string_list(names);
    return NULL;
}

/* Whether *d names the same directory as one before it in dirs (a path may
 * list a directory twice, or the build tree may also be on
 * MINFER_PROVIDER_PATH): its files were listed already. */
static int seen_before(char **dirs, char **d) {
    char a[PATH_MAX], b[PATH_MAX];
    if (!realpath(*d, a))
        return 0;
    for (char **e = dirs; e < d; e++)
        if (realpath(*e, b) && strcmp(a, b) == 0)
            return 1;
    return 0;
}

static entry *find(minfer_provider_list *l, const char *name) {
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i].name, name) == 0)
            return &l->items[i];
    return NULL;
}

/* A copy of s on one line (newlines become spaces). */
static char *one_line(const char *s) {
    char *c = mf_strdup(s);
    if (c)
        for (char *p = c; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    return c;
}

/* Reads abi_version and (when the ABI matches) version straight from the
 * vtable, for a provider the loader refused after it found the entry. */
static void read_vtable(entry *e) {
    void *h = dlopen(e->path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    union {
        void *p;
        minfer_provider_entry_fn fn;
    } sym;
    sym.p = dlsym(h, MINFER_PROVIDER_ENTRY_SYMBOL);
    const minfer_provider *vt = sym.p ? sym.fn(MINFER_PROVIDER_ABI_VERSION) : NULL;
    if (vt) {
        e->info.abi_version = vt->abi_version;
        if (vt->abi_version == MINFER_PROVIDER_ABI_VERSION &&
            vt->struct_size >= offsetof(minfer_provider, version) + sizeof vt->version &&
            vt->version)
            e->version = mf_strdup(vt->version);
    }
    dlclose(h);
}

/* Probes the provider `name` the loader would pick, which is e->path. */
static minfer_status probe(entry *e) {
    mf_provider_inst inst;
    if (mf_provider_open(e->name, &probe_api, NULL, "", &inst) == MINFER_OK) {
        char device[256];
        e->info.usable = 1;
        e->info.abi_version = inst.vt->abi_version;
        e->info.device_kind = mf_provider_device(&inst, device, sizeof device);
        e->info.named_only = mf_provider_named_only(&inst);
        if (!(e->device = mf_strdup(device))) {
            mf_provider_close(&inst);
            return MINFER_ERR_NOMEM;
        }
        if (MF_VT_HAS(inst.vt, version) && !(e->version = mf_strdup(inst.vt->version))) {
            mf_provider_close(&inst);
            return MINFER_ERR_NOMEM;
        }
        mf_provider_close(&inst);
        return MINFER_OK;
    }
    e->info.device_kind = -1;
    if (!(e->reason = one_line(minfer_last_error())))
        return MINFER_ERR_NOMEM;
    read_vtable(e);
    return MINFER_OK;
}

static minfer_status add(minfer_provider_list *l, const char *dir, const char *file) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        entry *grown = mf_realloc(l->items, cap * sizeof *grown);
        if (!grown)
            return MINFER_ERR_NOMEM;
        l->items = grown;
        l->cap = cap;
    }
    entry *e = &l->items[l->count];
    memset(e, 0, sizeof *e);
    e->info.device_kind = -1;
    size_t name_len = strlen(file) - strlen(PREFIX) - strlen(SUFFIX);
    e->name = mf_malloc(name_len + 1);
    e->path = mf_malloc(strlen(dir) + strlen(file) + 2);
    if (!e->name || !e->path) {
        free(e->name);
        free(e->path);
        return MINFER_ERR_NOMEM;
    }
    memcpy(e->name, file + strlen(PREFIX), name_len);
    e->name[name_len] = '\0';
    sprintf(e->path, "%s/%s", dir, file);
    /* Counted now, so the list frees it whatever happens below. */
    l->count++;

    const entry *first = find(l, e->name);
    if (first != e) {
        size_t need = strlen(first->path) + 64;
        if (!(e->reason = mf_malloc(need)))
            return MINFER_ERR_NOMEM;
        snprintf(e->reason, need, "shadowed by %s, earlier in the search path", first->path);
        return MINFER_OK;
    }
    return probe(e);
}

minfer_status minfer_provider_list_create(minfer_provider_list **out) {
    minfer_status st = MINFER_OK;
    char **files = NULL;
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_provider_list_create: out is NULL");
    *out = NULL;
    minfer_provider_list *l = mf_calloc(1, sizeof *l);
    if (!l)
        goto oom;
    if (!(l->dirs = mf_provider_search_path()))
        goto oom;
    for (char **d = l->dirs; *d; d++) {
        l->n_dirs++;
        if (seen_before(l->dirs, d))
            continue;
        if (!(files = dir_providers(*d)))
            goto oom;
        for (char **f = files; *f; f++)
            if ((st = add(l, *d, *f)) != MINFER_OK)
                goto oom;
        mf_free_string_list(files);
        files = NULL;
    }
    for (size_t i = 0; i < l->count; i++) {
        entry *e = &l->items[i];
        e->info.name = e->name;
        e->info.path = e->path;
        e->info.version = e->version ? e->version : "";
        e->info.reason = e->reason ? e->reason : "";
        e->info.device = e->device ? e->device : "";
    }
    *out = l;
    mf_error_clear();
    return MINFER_OK;
oom:
    mf_free_string_list(files);
    minfer_provider_list_free(l);
    return mf_error(MINFER_ERR_NOMEM, "out of memory listing providers");
}

void minfer_provider_list_free(minfer_provider_list *l) {
    if (!l)
        return;
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].name);
        free(l->items[i].version);
        free(l->items[i].path);
        free(l->items[i].reason);
        free(l->items[i].device);
    }
    free(l->items);
    mf_free_string_list(l->dirs);
    free(l);
}

size_t minfer_provider_list_count(const minfer_provider_list *l) { return l ? l->count : 0; }

const minfer_provider_info *minfer_provider_list_get(const minfer_provider_list *l, size_t i) {
    return l && i < l->count ? &l->items[i].info : NULL;
}

size_t minfer_provider_list_dir_count(const minfer_provider_list *l) { return l ? l->n_dirs : 0; }

const char *minfer_provider_list_dir(const minfer_provider_list *l, size_t i) {
    return l && i < l->n_dirs ? l->dirs[i] : NULL;
}

void mf_installed_provider_names(char *buf, size_t size) {
    size_t used = 0;
    char **dirs = mf_provider_search_path();
    buf[0] = '\0';
    for (char **d = dirs; d && *d; d++) {
        char **names = dir_providers(*d);
        for (char **n = names; n && *n; n++) {
            /* libminfer_provider_NAME.so -> NAME */
            size_t len = strlen(*n) - strlen(PREFIX) - strlen(SUFFIX);
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1),
                     *n + strlen(PREFIX));
            int dup = 0;
            for (const char *p = buf; !dup && (p = strstr(p, name)); p += strlen(name))
                dup = (p == buf || p[-1] == ' ') && (p[strlen(name)] == ',' || !p[strlen(name)]);
            int w = dup ? 0 : snprintf(buf + used, size - used, "%s%s", used ? ", " : "", name);
            if (w > 0 && (size_t)w < size - used)
                used += (size_t)w;
        }
        mf_free_string_list(names);
    }
    mf_free_string_list(dirs);
    if (!used)
        snprintf(buf, size, "none");
}
