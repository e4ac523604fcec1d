/*
 * Finding, loading and checking provider libraries.
 *
 * A provider named NAME lives in a file libminfer_provider_NAME.so. The
 * search path is, in order: the install directory (<dir of libminfer.so>/
 * minfer/providers), the build tree's provider directory when libminfer.so
 * runs from the build tree, then each directory of MINFER_PROVIDER_PATH
 * (colon-separated). The first file that exists is the one loaded; if it
 * fails its checks the search stops there with the reason.
 */
#ifndef MINFER_CORE_PROVIDER_LOADER_H
#define MINFER_CORE_PROVIDER_LOADER_H

#include "minfer/provider.h"

typedef struct mf_provider_inst {
    char *name;
    char *path;
    void *handle; /* dlopen handle */
    const minfer_provider *vt;
    void *ctx;
    int host_memory; /* computes in host memory */
    int host_addressable; /* its domain reads plain host memory in place */
} mf_provider_inst;

/* Opens and initialises provider `name` for one session. On failure returns
 * a status with the reason in the last error (naming the file and, for an
 * ABI mismatch, both versions) and leaves *out zeroed. */
minfer_status mf_provider_open(const char *name, const minfer_host_api *api, void *host,
                               const char *options, mf_provider_inst *out);
/* Shuts the instance down and closes the library. */
void mf_provider_close(mf_provider_inst *p);

/* 1 if the vtable's struct_size covers member `m`. */
#define MF_VT_HAS(vt, m) \
    ((vt)->struct_size >= offsetof(minfer_provider, m) + sizeof((vt)->m) && (vt)->m)

/* The directories searched, as a newly malloc'd NULL-terminated array of
 * malloc'd strings (for `minfer providers` and messages). */
char **mf_provider_search_path(void);
void mf_free_string_list(char **list);

#endif
