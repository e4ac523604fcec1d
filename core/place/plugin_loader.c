/* Plugin libraries: search path, dlopen, ABI checks, the process-wide op
 * registry and its references (plugin_loader.h). */
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "place/plugin_loader.h"
#include "shapes/shape_infer.h"
#include "util/env.h"
#include "util/internal.h"

#define PREFIX "libminfer_plugin_"
#define SUFFIX ".so"

struct mf_plugin_lib {
    char *path; /* resolved */
    char *name;
    char *version;
    void *handle;
    const minfer_plugin_info *info;
    minfer_plugin_op *ops;
    size_t n_ops, cap_ops;
    int refs; /* under reg_lock */
    mf_plugin_lib *next;
    char reg_error[512]; /* set_error during register_ops */
};

/* The registry: its lock and the libraries loaded. The lock checks its
 * owner: a plugin's register_ops runs with it held, and a session created
 * from there (or a plugin loaded) would wait for it forever; locking it
 * again on that thread fails with EDEADLK instead, and what takes it
 * refuses (mf_plugin_acquire) or finds no plugin op (find_loaded). */
static pthread_mutex_t reg_lock = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static mf_plugin_lib *loaded; /* every library with refs > 0 */

/* Takes reg_lock; nonzero (and not taken) on the thread that holds it,
 * a plugin's register_ops. */
static int reg_enter(void) { return pthread_mutex_lock(&reg_lock) != 0; }

void mf_plugin_text(char *msg, size_t size) {
    if (!size)
        return;
    msg[size - 1] = '\0'; /* the plugin may have filled it without a NUL */
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

/* ---- search path ---------------------------------------------------------- */

static int push(char ***list, size_t *n, const char *s) {
    char **l = mf_realloc(*list, (*n + 2) * sizeof *l);
    if (!l)
        return -1;
    *list = l;
    l[*n] = NULL;
    if (!(l[*n] = mf_strdup(s)))
        return -1;
    l[++*n] = NULL;
    return 0;
}

/* The plugin directories sit beside the providers': each provider
 * directory's sibling "plugins" (<libdir>/minfer/providers ->
 * <libdir>/minfer/plugins, <build>/providers -> <build>/plugins; a
 * MINFER_PROVIDER_PATH directory named .../providers too), then each
 * directory of MINFER_PLUGIN_PATH. */
char **mf_plugin_search_path(void) {
    char **prov = mf_provider_search_path(), **list = NULL;
    size_t n = 0;
    if (!prov)
        return NULL;
    if (push(&list, &n, "") != 0)
        goto oom;
    free(list[0]);
    list[0] = NULL;
    n = 0;
    for (char **d = prov; *d; d++) {
        char dir[PATH_MAX + 16];
        const char *slash = strrchr(*d, '/');
        if (!slash || strcmp(slash + 1, "providers") != 0)
            continue;
        snprintf(dir, sizeof dir, "%.*s/plugins", (int)(slash - *d), *d);
        if (push(&list, &n, dir) != 0)
            goto oom;
    }
    const char *env = mf_env_plugin_path();
    if (env && env[0]) {
        char *copy = mf_strdup(env);
        if (!copy)
            goto oom;
        /* Only absolute directories: a relative one (or an empty entry,
         * which the dynamic loader reads as ".") would depend on the
         * working directory. */
        for (char *save = NULL, *tok = strtok_r(copy, ":", &save); tok;
             tok = strtok_r(NULL, ":", &save))
            if (tok[0] == '/' && push(&list, &n, tok) != 0) {
                free(copy);
                goto oom;
            }
        free(copy);
    }
    mf_free_string_list(prov);
    return list;
oom:
    mf_free_string_list(prov);
    mf_free_string_list(list);
    return NULL;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

minfer_status mf_plugin_discover(char ***names_out, char ***paths_out) {
    char **dirs = mf_plugin_search_path(), **names = NULL, **paths = NULL;
    size_t n = 0, np = 0;
    *names_out = *paths_out = NULL;
    if (!dirs || push(&names, &n, "") != 0 || push(&paths, &np, "") != 0)
        goto oom;
    free(names[0]);
    free(paths[0]);
    names[0] = paths[0] = NULL;
    n = np = 0;
    for (char **d = dirs; *d; d++) {
        DIR *dir = opendir(*d);
        if (!dir)
            continue;
        char **found = NULL;
        size_t nf = 0;
        struct dirent *e;
        while ((e = readdir(dir))) {
            size_t len = strlen(e->d_name);
            if (len <= strlen(PREFIX) + strlen(SUFFIX) ||
                strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0 ||
                strcmp(e->d_name + len - strlen(SUFFIX), SUFFIX) != 0)
                continue;
            if (push(&found, &nf, e->d_name) != 0) {
                closedir(dir);
                mf_free_string_list(found);
                goto oom;
            }
        }
        closedir(dir);
        if (nf)
            qsort(found, nf, sizeof *found, cmp_str);
        for (size_t k = 0; k < nf; k++) {
            char name[256], path[PATH_MAX + 256];
            size_t len = strlen(found[k]) - strlen(PREFIX) - strlen(SUFFIX);
            snprintf(name, sizeof name, "%.*s", (int)len, found[k] + strlen(PREFIX));
            int seen = 0;
            for (size_t j = 0; j < n; j++)
                seen |= strcmp(names[j], name) == 0;
            if (seen)
                continue; /* an earlier directory's file wins, as for providers */
            snprintf(path, sizeof path, "%s/%s", *d, found[k]);
            if (push(&names, &n, name) != 0 || push(&paths, &np, path) != 0) {
                mf_free_string_list(found);
                goto oom;
            }
        }
        mf_free_string_list(found);
    }
    mf_free_string_list(dirs);
    *names_out = names;
    *paths_out = paths;
    return MINFER_OK;
oom:
    mf_free_string_list(dirs);
    mf_free_string_list(names);
    mf_free_string_list(paths);
    return mf_error(MINFER_ERR_NOMEM, "out of memory listing plugins");
}

/* The file for path_or_name, in path (PATH_MAX + 256 bytes). */
static minfer_status resolve(const char *path_or_name, char *path, size_t size) {
    if (strchr(path_or_name, '/')) {
        snprintf(path, size, "%s", path_or_name);
        if (access(path, F_OK) != 0)
            return mf_error(MINFER_ERR_NOT_FOUND, "plugin %s: no such file", path_or_name);
        return MINFER_OK;
    }
    /* A bare name is looked up in the search path only (never in the
     * working directory); a relative path with a '/' is the caller's. */
    for (const char *p = path_or_name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "plugin name '%s' is not valid (lower-case letters, digits, '_' and "
                            "'-'; or a path with a '/')",
                            path_or_name);
    if (!path_or_name[0] || strlen(path_or_name) > 64)
        return mf_error(MINFER_ERR_INVALID_ARG, "plugin name '%s' is not valid", path_or_name);
    char **dirs = mf_plugin_search_path();
    if (!dirs)
        return mf_error(MINFER_ERR_NOMEM, "out of memory building the plugin search path");
    char searched[2048] = "";
    size_t used = 0;
    for (char **d = dirs; *d; d++) {
        snprintf(path, size, "%s/" PREFIX "%s" SUFFIX, *d, path_or_name);
        if (access(path, F_OK) == 0) {
            mf_free_string_list(dirs);
            return MINFER_OK;
        }
        int w = snprintf(searched + used, sizeof searched - used, "%s%s", used ? ":" : "", *d);
        if (w > 0 && (size_t)w < sizeof searched - used)
            used += (size_t)w;
    }
    mf_free_string_list(dirs);
    return mf_error(MINFER_ERR_NOT_FOUND, "plugin '%s' not found (no " PREFIX "%s" SUFFIX " in %s)",
                    path_or_name, path_or_name,
                    used ? searched : "an empty search path; set MINFER_PLUGIN_PATH");
}

/* ---- registration --------------------------------------------------------- */

/* Domains whose ops only minfer defines: its fused ops and training. */
static int is_reserved_domain(const char *d) {
    return strcmp(d, "ai.onnx.preview.training") == 0 || strcmp(d, "minfer") == 0;
}

static int ranges_meet(const minfer_plugin_op *a, const minfer_plugin_op *b) {
    int64_t a_hi = a->until_version ? a->until_version : INT64_MAX;
    int64_t b_hi = b->until_version ? b->until_version : INT64_MAX;
    return a->since_version <= b_hi && b->since_version <= a_hi;
}

static int same_op(const minfer_plugin_op *a, const minfer_plugin_op *b) {
    return strcmp(a->domain, b->domain) == 0 && strcmp(a->op_type, b->op_type) == 0 &&
           ranges_meet(a, b);
}

/* The ABI-1 prefix of minfer_plugin_op every plugin must fill. */
#define MIN_OP_SIZE (offsetof(minfer_plugin_op, destroy) + sizeof(void *))

static minfer_status register_op(minfer_plugin_registry *reg, const minfer_plugin_op *op) {
    mf_plugin_lib *lib = (mf_plugin_lib *)reg;
    if (!op || op->struct_size < MIN_OP_SIZE)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "plugin %s: an op of %u bytes, smaller than the %zu bytes plugin ABI "
                        "version %u requires",
                        lib->path, op ? op->struct_size : 0u, (size_t)MIN_OP_SIZE,
                        MINFER_PLUGIN_ABI_VERSION);
    const char *dom = op->domain ? op->domain : "", *type = op->op_type ? op->op_type : "";
    if (strcmp(dom, "ai.onnx") == 0)
        dom = ""; /* the default domain, as the graph names it */
    if (!type[0] || is_reserved_domain(dom))
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "plugin %s: op '%s' in domain '%s': a plugin op needs a type and a "
                        "domain that is not minfer's own",
                        lib->path, type, dom);
    if (!op->infer || !op->compute)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "plugin %s: op %s:%s leaves infer or compute NULL", lib->path, dom, type);
    if (op->since_version < 1 || (op->until_version && op->until_version < op->since_version))
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "plugin %s: op %s:%s has the opset range %lld..%lld", lib->path, dom,
                        type, (long long)op->since_version, (long long)op->until_version);
    if ((op->flags & MINFER_PLUGIN_OP_INPLACE) && op->inplace_input < 0)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "plugin %s: op %s:%s declares in-place on input %d", lib->path, dom,
                        type, (int)op->inplace_input);
    minfer_plugin_op copy;
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, op, op->struct_size < sizeof copy ? op->struct_size : sizeof copy);
    copy.struct_size = sizeof copy;
    copy.domain = dom;
    copy.op_type = type;
    for (size_t i = 0; i < lib->n_ops; i++)
        if (same_op(&lib->ops[i], &copy))
            return mf_error(MINFER_ERR_UNSUPPORTED, "plugin %s registers op %s:%s twice",
                            lib->path, dom, type);
    /* reg_lock is held by load(): the other libraries cannot change. */
    for (mf_plugin_lib *o = loaded; o; o = o->next)
        for (size_t i = 0; i < o->n_ops; i++)
            if (same_op(&o->ops[i], &copy))
                return mf_error(MINFER_ERR_UNSUPPORTED,
                                "plugin op %s:%s is registered by two plugins: %s and %s", dom,
                                type, o->path, lib->path);
    if (lib->n_ops == lib->cap_ops) {
        size_t nc = lib->cap_ops ? lib->cap_ops * 2 : 16;
        minfer_plugin_op *ops = mf_realloc(lib->ops, nc * sizeof *ops);
        if (!ops)
            return mf_error(MINFER_ERR_NOMEM, "out of memory registering plugin ops");
        lib->ops = ops;
        lib->cap_ops = nc;
    }
    lib->ops[lib->n_ops++] = copy;
    return MINFER_OK;
}

static void reg_set_error(minfer_plugin_registry *reg, const char *message) {
    mf_plugin_lib *lib = (mf_plugin_lib *)reg;
    /* at most the buffer's length of the plugin's text, NUL or not */
    snprintf(lib->reg_error, sizeof lib->reg_error, "%.*s", (int)sizeof lib->reg_error - 1,
             message ? message : "");
    mf_plugin_text(lib->reg_error, sizeof lib->reg_error);
}

static void lib_free(mf_plugin_lib *lib) {
    if (!lib)
        return;
    if (lib->handle)
        dlclose(lib->handle);
    free(lib->ops);
    free(lib->path);
    free(lib->name);
    free(lib->version);
    free(lib);
}

/* The info prefix every ABI-1 plugin must fill. */
#define MIN_INFO_SIZE (offsetof(minfer_plugin_info, register_ops) + sizeof(void *))

/* A library file or directory that other users may write is refused: any
 * of them could put code into this process (the dynamic loader's own
 * search skips nothing, so minfer checks before dlopen). */
static minfer_status writable_by_others(const char *path) {
    char dir[PATH_MAX + 256];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & S_IWOTH))
        return mf_error(MINFER_ERR_PROVIDER,
                        "plugin %s: refused: the file is writable by every user", path);
    if (slash && stat(dir, &st) == 0 && (st.st_mode & S_IWOTH))
        return mf_error(MINFER_ERR_PROVIDER,
                        "plugin %s: refused: its directory %s is writable by every user", path,
                        dir);
    return MINFER_OK;
}

/* Opens and registers the file at path (resolved); reg_lock held. */
static minfer_status load(const char *path, mf_plugin_lib **out) {
    minfer_status st;
    mf_plugin_lib *lib = mf_calloc(1, sizeof *lib);
    if (!lib || !(lib->path = mf_strdup(path))) {
        free(lib);
        return mf_error(MINFER_ERR_NOMEM, "out of memory loading plugin %s", path);
    }
    if ((st = writable_by_others(path)) != MINFER_OK)
        goto fail;
    /* A plugin library stays mapped once loaded (RTLD_NODELETE): its
     * constructors run once a process, however many sessions load and
     * release it (they ran at every session's load). Its ops are
     * registered again by the next session that loads it. */
    lib->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib->handle) {
        const char *e = dlerror();
        st = mf_error(MINFER_ERR_PROVIDER, "plugin %s: cannot load: %s", path,
                      e ? e : "unknown dlopen error");
        goto fail;
    }
    union {
        void *p;
        minfer_plugin_entry_fn fn;
    } entry;
    dlerror();
    entry.p = dlsym(lib->handle, MINFER_PLUGIN_ENTRY_SYMBOL);
    if (!entry.p) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "plugin %s does not export %s (not a minfer plugin, or built without "
                      "MINFER_PLUGIN_DEFINE)",
                      path, MINFER_PLUGIN_ENTRY_SYMBOL);
        goto fail;
    }
    const minfer_plugin_info *info = entry.fn(MINFER_PLUGIN_ABI_VERSION);
    if (!info) {
        st = mf_error(MINFER_ERR_PROVIDER, "plugin %s refused to serve host ABI version %u", path,
                      MINFER_PLUGIN_ABI_VERSION);
        goto fail;
    }
    if (info->abi_version != MINFER_PLUGIN_ABI_VERSION) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "plugin %s was built for plugin ABI version %u, but this minfer (%s) "
                      "supports ABI version %u",
                      path, info->abi_version, MINFER_VERSION_STRING, MINFER_PLUGIN_ABI_VERSION);
        goto fail;
    }
    if (info->struct_size < MIN_INFO_SIZE) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "plugin %s has an info struct of %u bytes, smaller than the %zu bytes "
                      "ABI version %u requires",
                      path, info->struct_size, (size_t)MIN_INFO_SIZE, MINFER_PLUGIN_ABI_VERSION);
        goto fail;
    }
    if (!info->name || !info->name[0] || !info->register_ops) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "plugin %s leaves a required member (name, register_ops) NULL", path);
        goto fail;
    }
    lib->info = info;
    lib->name = mf_strdup(info->name);
    lib->version = mf_strdup(info->version ? info->version : "");
    if (!lib->name || !lib->version) {
        st = mf_error(MINFER_ERR_NOMEM, "out of memory loading plugin %s", path);
        goto fail;
    }
    minfer_host_api api;
    memset(&api, 0, sizeof api);
    api.abi_version = MINFER_PROVIDER_ABI_VERSION;
    api.struct_size = sizeof api;
    mf_host_api_attrs(&api);
    minfer_plugin_host host = {
        .abi_version = MINFER_PLUGIN_ABI_VERSION,
        .struct_size = sizeof host,
        .path = lib->path,
        .api = &api,
        .register_op = register_op,
        .set_error = reg_set_error,
    };
    mf_error_clear();
    st = info->register_ops(&host, (minfer_plugin_registry *)lib);
    if (st != MINFER_OK) {
        if (lib->reg_error[0])
            mf_error(st, "%s", lib->reg_error);
        st = mf_error_prefix(st == MINFER_ERR_NOMEM ? st : MINFER_ERR_PROVIDER,
                             "plugin %s failed to register its ops", path);
        goto fail;
    }
    if (lib->n_ops == 0) {
        st = mf_error(MINFER_ERR_PROVIDER, "plugin %s registers no op", path);
        goto fail;
    }
    lib->refs = 1;
    lib->next = loaded;
    loaded = lib;
    *out = lib;
    return MINFER_OK;
fail:
    lib_free(lib);
    return st;
}

minfer_status mf_plugin_acquire(const char *path_or_name, mf_plugin_lib **out) {
    char path[PATH_MAX + 256], real[PATH_MAX];
    minfer_status st;
    *out = NULL;
    if (!path_or_name)
        return mf_error(MINFER_ERR_INVALID_ARG, "plugin: NULL path or name");
    if (reg_enter())
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "plugin %s: a plugin's register_ops may not load plugins or create "
                        "sessions (the plugin registry is locked while it registers)",
                        path_or_name);
    pthread_mutex_unlock(&reg_lock); /* not held while the path is searched */
    if ((st = resolve(path_or_name, path, sizeof path)) != MINFER_OK)
        return st;
    if (!realpath(path, real))
        return mf_error(MINFER_ERR_IO, "plugin %s: cannot resolve the path", path);
    pthread_mutex_lock(&reg_lock);
    for (mf_plugin_lib *l = loaded; l; l = l->next)
        if (strcmp(l->path, real) == 0) {
            l->refs++;
            *out = l;
            pthread_mutex_unlock(&reg_lock);
            return MINFER_OK;
        }
    st = load(real, out);
    pthread_mutex_unlock(&reg_lock);
    return st;
}

void mf_plugin_release(mf_plugin_lib *lib) {
    if (!lib || reg_enter()) /* none can be held on a thread in register_ops */
        return;
    if (--lib->refs > 0) {
        pthread_mutex_unlock(&reg_lock);
        return;
    }
    for (mf_plugin_lib **pp = &loaded; *pp; pp = &(*pp)->next)
        if (*pp == lib) {
            *pp = lib->next;
            break;
        }
    pthread_mutex_unlock(&reg_lock);
    lib_free(lib);
}

const char *mf_plugin_lib_name(const mf_plugin_lib *lib) { return lib->name; }
const char *mf_plugin_lib_path(const mf_plugin_lib *lib) { return lib->path; }
const char *mf_plugin_lib_version(const mf_plugin_lib *lib) { return lib->version; }

size_t mf_plugin_lib_ops(const mf_plugin_lib *lib, const minfer_plugin_op **ops) {
    *ops = lib->ops;
    return lib->n_ops;
}

static int serves(const minfer_plugin_op *op, const char *domain, const char *op_type,
                  int64_t opset) {
    if (opset < 1)
        opset = 1; /* a domain the model does not import: its first version */
    return strcmp(op->domain, domain) == 0 && strcmp(op->op_type, op_type) == 0 &&
           opset >= op->since_version && (!op->until_version || opset <= op->until_version);
}

const minfer_plugin_op *mf_plugin_find(mf_plugin_lib *const *libs, size_t n, const char *domain,
                                       const char *op_type, int64_t opset, mf_plugin_lib **owner) {
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i < libs[k]->n_ops; i++)
            if (serves(&libs[k]->ops[i], domain ? domain : "", op_type, opset)) {
                if (owner)
                    *owner = libs[k];
                return &libs[k]->ops[i];
            }
    return NULL;
}

/* The loaded op serving node, with a reference on its library so it stays
 * while used; NULL when none. */
static const minfer_plugin_op *find_loaded(const mf_node *node, mf_plugin_lib **owner) {
    const minfer_plugin_op *op = NULL;
    *owner = NULL;
    if (!node->domain || is_reserved_domain(node->domain) || reg_enter())
        return NULL;
    for (mf_plugin_lib *l = loaded; l && !op; l = l->next)
        if ((op = mf_plugin_find(&l, 1, node->domain, node->op_type, node->opset, owner)))
            l->refs++;
    pthread_mutex_unlock(&reg_lock);
    return op;
}

minfer_status mf_plugin_infer(const mf_node *node, const minfer_tensor_view *in, size_t n_in,
                              minfer_tensor_view *out, size_t n_out, char *err, size_t err_size) {
    mf_plugin_lib *lib;
    const minfer_plugin_op *op = find_loaded(node, &lib);
    if (!op)
        return MINFER_OK;
    minfer_status st = MINFER_OK;
    minfer_value_desc *vd = mf_calloc(n_in + n_out + 1, sizeof *vd);
    if (!vd) {
        mf_plugin_release(lib);
        snprintf(err, err_size, "out of memory");
        return MINFER_ERR_NOMEM;
    }
    for (size_t i = 0; i < n_in; i++) {
        minfer_value_desc *d = &vd[i];
        d->name = "";
        d->rank = -1;
        if (i >= node->n_inputs || node->inputs[i] < 0)
            continue;
        d->present = 1;
        d->kind = in[i].kind;
        d->dtype = in[i].dtype;
        d->rank = in[i].rank;
        memcpy(d->dims, in[i].dims, sizeof d->dims);
        if (in[i].data && in[i].rank >= 0) {
            d->const_data = (const char *)in[i].data + in[i].offset;
            d->const_nbytes = in[i].nbytes;
        }
    }
    for (size_t j = 0; j < n_out; j++) {
        vd[n_in + j].name = "";
        vd[n_in + j].rank = -1;
        vd[n_in + j].present = j < node->n_outputs && node->outputs[j] >= 0;
    }
    minfer_node_desc desc = {
        .struct_size = sizeof desc,
        .name = node->name ? node->name : "",
        .op_type = node->op_type,
        .domain = node->domain,
        .opset = node->opset,
        .n_inputs = n_in,
        .n_outputs = n_out,
        .inputs = vd,
        .outputs = vd + n_in,
        .host_node = node,
        .value_desc_size = sizeof(minfer_value_desc),
    };
    minfer_host_api api;
    memset(&api, 0, sizeof api);
    api.abi_version = MINFER_PROVIDER_ABI_VERSION;
    api.struct_size = sizeof api;
    mf_host_api_attrs(&api);
    char msg[512] = "";
    minfer_plugin_infer_args args = {
        .struct_size = sizeof args,
        .api = &api,
        .node = &desc,
        .outputs = out,
        .n_outputs = n_out,
        .err = msg,
        .err_size = sizeof msg,
        .tensor_view_size = sizeof(minfer_tensor_view),
    };
    st = op->infer(op->op_data, &args);
    mf_plugin_text(msg, sizeof msg);
    for (size_t j = 0; st == MINFER_OK && j < n_out; j++) {
        if (!vd[n_in + j].present)
            continue;
        if (out[j].rank < -1 || out[j].rank > MINFER_MAX_RANK || !minfer_elem_size(out[j].dtype)) {
            snprintf(msg, sizeof msg, "infer gave output %zu rank %d and element type %d", j,
                     (int)out[j].rank, (int)out[j].dtype);
            st = MINFER_ERR_RUNTIME;
            break;
        }
        out[j].kind = MINFER_VALUE_TENSOR;
        for (int32_t d = 0; d < out[j].rank; d++)
            if (out[j].dims[d] < -1) {
                snprintf(msg, sizeof msg, "infer gave output %zu dimension %lld", j,
                         (long long)out[j].dims[d]);
                st = MINFER_ERR_RUNTIME;
            }
    }
    if (st != MINFER_OK && err && err_size)
        snprintf(err, err_size, "plugin '%s' (%s): %s infer: %s", lib->name, lib->path,
                 node->op_type, msg[0] ? msg : minfer_status_str(st));
    free(vd);
    mf_plugin_release(lib);
    return st;
}
