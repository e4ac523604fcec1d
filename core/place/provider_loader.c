/* Provider discovery, dlopen, ABI checks and initialisation. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/env.h"
#include "util/internal.h"
#include "place/provider_loader.h"

void mf_free_string_list(char **list) {
    if (!list)
        return;
    for (char **p = list; *p; p++)
        free(*p);
    free(list);
}

static int push(char ***list, size_t *n, const char *s) {
    char **l = mf_realloc(*list, (*n + 2) * sizeof *l);
    if (!l)
        return -1;
    *list = l;
    l[*n] = mf_strdup(s);
    if (!l[*n])
        return -1;
    l[++*n] = NULL;
    return 0;
}

/* Directory of the loaded libminfer (resolved), or "" if unknown. */
static void library_dir(char *buf, size_t size) {
    Dl_info info;
    buf[0] = '\0';
    if (!dladdr((void *)&mf_provider_search_path, &info) || !info.dli_fname)
        return;
    char resolved[PATH_MAX];
    if (!realpath(info.dli_fname, resolved))
        return;
    char *slash = strrchr(resolved, '/');
    if (!slash)
        return;
    *slash = '\0';
    snprintf(buf, size, "%s", resolved);
}

static int starts_with_dir(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return n && strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

char **mf_provider_search_path(void) {
    char **list = NULL;
    size_t n = 0;
    char libdir[PATH_MAX], dir[PATH_MAX + 64];
    if (push(&list, &n, "") != 0) /* makes list non-NULL; removed below */
        goto oom;
    free(list[0]);
    list[0] = NULL;
    n = 0;
    library_dir(libdir, sizeof libdir);
    if (libdir[0]) {
        snprintf(dir, sizeof dir, "%s/%s", libdir, MINFER_INSTALL_PROVIDER_SUBDIR);
        if (push(&list, &n, dir) != 0)
            goto oom;
        /* The build tree's providers, only when this library is the one built there. */
        char build_root[PATH_MAX], build_prov[PATH_MAX];
        snprintf(build_prov, sizeof build_prov, "%s", MINFER_BUILD_PROVIDER_DIR);
        char *slash = strrchr(build_prov, '/');
        if (slash) {
            *slash = '\0';
            if (realpath(build_prov, build_root) && starts_with_dir(libdir, build_root) &&
                push(&list, &n, MINFER_BUILD_PROVIDER_DIR) != 0)
                goto oom;
        }
    }
    const char *env = mf_env_provider_path();
    if (env) {
        char *copy = mf_strdup(env);
        if (!copy)
            goto oom;
        for (char *save = NULL, *tok = strtok_r(copy, ":", &save); tok;
             tok = strtok_r(NULL, ":", &save))
            if (tok[0] && push(&list, &n, tok) != 0) {
                free(copy);
                goto oom;
            }
        free(copy);
    }
    return list;
oom:
    mf_free_string_list(list);
    return NULL;
}

static int valid_name(const char *name) {
    if (!name[0] || strlen(name) > 64)
        return 0;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

int32_t mf_provider_device(const mf_provider_inst *p, char *buf, size_t size) {
    if (MF_VT_HAS(p->vt, describe_device))
        return p->vt->describe_device(p->ctx, buf, size);
    snprintf(buf, size, "host CPU");
    return MINFER_DEVICE_CPU;
}

int mf_provider_named_only(const mf_provider_inst *p) {
    char buf[256];
    return strcmp(p->name, "cpu") != 0 && MF_VT_HAS(p->vt, describe_device) &&
           mf_provider_device(p, buf, sizeof buf) == MINFER_DEVICE_CPU;
}

int mf_provider_is_known(const char *name) {
    static const char *const known[] = {"cpu", "onednn", "opencl"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(name, known[i]) == 0)
            return 1;
    return 0;
}

int mf_provider_installed(const char *name) {
    char path[PATH_MAX + 128];
    int found = 0;
    char **dirs = mf_provider_search_path();
    for (char **d = dirs; d && *d && !found; d++) {
        snprintf(path, sizeof path, "%s/libminfer_provider_%s.so", *d, name);
        found = access(path, F_OK) == 0;
    }
    mf_free_string_list(dirs);
    return found;
}

/* The vtable prefix every ABI-1 provider must fill. */
#define MIN_STRUCT_SIZE (offsetof(minfer_provider, execute_node) + sizeof(void *))

minfer_status mf_provider_open(const char *name, const minfer_host_api *api, void *host,
                               const char *options, mf_provider_inst *out) {
    minfer_status st = MINFER_OK;
    char path[PATH_MAX + 128];
    char **dirs = NULL;
    void *handle = NULL;
    memset(out, 0, sizeof *out);
    if (!valid_name(name))
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "provider name '%s' is not valid (lower-case letters, digits, '_' and '-')",
                        name);
    dirs = mf_provider_search_path();
    if (!dirs)
        return mf_error(MINFER_ERR_NOMEM, "out of memory building the provider search path");
    path[0] = '\0';
    for (char **d = dirs; *d; d++) {
        snprintf(path, sizeof path, "%s/libminfer_provider_%s.so", *d, name);
        if (access(path, F_OK) == 0)
            break;
        path[0] = '\0';
    }
    if (!path[0]) {
        char searched[2048] = "";
        size_t used = 0;
        for (char **d = dirs; *d; d++) {
            int w = snprintf(searched + used, sizeof searched - used, "%s%s",
                             used ? ":" : "", *d);
            if (w < 0 || (size_t)w >= sizeof searched - used)
                break;
            used += (size_t)w;
        }
        st = mf_error(MINFER_ERR_NOT_FOUND,
                      "provider '%s' not found (no libminfer_provider_%s.so in %s)", name, name,
                      used ? searched : "an empty search path; set MINFER_PROVIDER_PATH");
        goto fail;
    }
    /* MINFER_KEEP_PROVIDERS=1 keeps provider libraries mapped after their
     * last session, so a leak checker can name their frames at exit. */
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | (mf_env_keep_providers() ? RTLD_NODELETE : 0));
    if (!handle) {
        const char *e = dlerror();
        st = mf_error(MINFER_ERR_PROVIDER, "provider '%s': cannot load %s: %s", name, path,
                      e ? e : "unknown dlopen error");
        goto fail;
    }
    dlerror();
    union {
        void *p;
        minfer_provider_entry_fn fn;
    } entry;
    entry.p = dlsym(handle, MINFER_PROVIDER_ENTRY_SYMBOL);
    if (!entry.p) {
        st = mf_error(MINFER_ERR_PROVIDER, "provider '%s': %s does not export %s", name, path,
                      MINFER_PROVIDER_ENTRY_SYMBOL);
        goto fail;
    }
    const minfer_provider *vt = entry.fn(MINFER_PROVIDER_ABI_VERSION);
    if (!vt) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "provider '%s': %s refused to serve host ABI version %u", name, path,
                      MINFER_PROVIDER_ABI_VERSION);
        goto fail;
    }
    if (vt->abi_version != MINFER_PROVIDER_ABI_VERSION) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "provider '%s': %s was built for provider ABI version %u, but this minfer "
                      "(%s) supports ABI version %u",
                      name, path, vt->abi_version, MINFER_VERSION_STRING,
                      MINFER_PROVIDER_ABI_VERSION);
        goto fail;
    }
    if (vt->struct_size < MIN_STRUCT_SIZE) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "provider '%s': %s has a vtable of %u bytes, smaller than the %zu bytes "
                      "ABI version %u requires",
                      name, path, vt->struct_size, (size_t)MIN_STRUCT_SIZE,
                      MINFER_PROVIDER_ABI_VERSION);
        goto fail;
    }
    if (!vt->name || !vt->init || !vt->shutdown || !vt->supports_operator || !vt->execute_node) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "provider '%s': %s leaves a required member (name, init, shutdown, "
                      "supports_operator, execute_node) NULL",
                      name, path);
        goto fail;
    }
    if (strcmp(vt->name, name) != 0) {
        st = mf_error(MINFER_ERR_PROVIDER, "provider '%s': %s calls itself '%s'", name, path,
                      vt->name);
        goto fail;
    }
    int host_memory = !MF_VT_HAS(vt, memory_domain) || strcmp(vt->memory_domain, "host") == 0;
    if (!host_memory && !(MF_VT_HAS(vt, mem_alloc) && MF_VT_HAS(vt, mem_free) &&
                          MF_VT_HAS(vt, copy_to_host) && MF_VT_HAS(vt, copy_from_host))) {
        st = mf_error(MINFER_ERR_PROVIDER,
                      "provider '%s': %s computes in memory domain '%s' but does not provide "
                      "mem_alloc, mem_free, copy_to_host and copy_from_host",
                      name, path, vt->memory_domain);
        goto fail;
    }
    void *ctx = NULL;
    mf_error_clear();
    st = vt->init(api, host, options ? options : "", &ctx);
    if (st != MINFER_OK) {
        st = mf_error_prefix(MINFER_ERR_PROVIDER, "provider '%s': %s failed to initialise", name,
                             path);
        goto fail;
    }
    out->name = mf_strdup(name);
    out->path = mf_strdup(path);
    if (!out->name || !out->path) {
        vt->shutdown(ctx);
        free(out->name);
        free(out->path);
        memset(out, 0, sizeof *out);
        st = mf_error(MINFER_ERR_NOMEM, "out of memory");
        goto fail;
    }
    out->handle = handle;
    out->vt = vt;
    out->ctx = ctx;
    out->host_memory = host_memory;
    out->host_addressable = !host_memory && MF_VT_HAS(vt, host_addressable);
    mf_free_string_list(dirs);
    return MINFER_OK;
fail:
    if (handle)
        dlclose(handle);
    mf_free_string_list(dirs);
    return st;
}

void mf_provider_close(mf_provider_inst *p) {
    if (!p || !p->vt)
        return;
    p->vt->shutdown(p->ctx);
    if (p->handle) /* the internal plugin provider has none */
        dlclose(p->handle);
    free(p->name);
    free(p->path);
    memset(p, 0, sizeof *p);
}
