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

/* ---- Calls into a provider (provider_calls.c) -------------------------------
 *
 * One function per vtable member the core calls; no other file reaches
 * into a vtable. An optional member's absence is handled here, as its
 * comment says. */
/* The provider's memory_domain ("host" when it computes in host memory). */
const char *mf_prov_memory_domain(const mf_provider_inst *pi);
/* The provider's memory_alignment, 0 when it states none. */
size_t mf_prov_alignment(const mf_provider_inst *pi);
/* supports_operator. */
int mf_prov_supports(const mf_provider_inst *pi, const minfer_node_desc *node, char *why,
                     size_t why_size);
/* prepare_node; absent: MINFER_OK, *state NULL. *state is NULL on failure. */
minfer_status mf_prov_prepare(const mf_provider_inst *pi, const minfer_node_desc *node,
                              minfer_node_prep *prep, void **state);
/* execute_node. */
minfer_status mf_prov_execute(const mf_provider_inst *pi, void *state,
                              const minfer_exec_args *args);
/* release_node; absent: nothing. */
void mf_prov_release(const mf_provider_inst *pi, void *state);
/* synchronize; host memory or absent: MINFER_OK at once. */
minfer_status mf_prov_synchronize(const mf_provider_inst *pi);
/* The memory members of a device-domain provider (checked at open). */
minfer_status mf_prov_mem_alloc(const mf_provider_inst *pi, size_t bytes, void **buffer);
void mf_prov_mem_free(const mf_provider_inst *pi, void *buffer);
minfer_status mf_prov_copy_to_host(const mf_provider_inst *pi, const minfer_tensor_view *src,
                                   void *dst, size_t bytes);
minfer_status mf_prov_copy_from_host(const mf_provider_inst *pi, const void *src, size_t bytes,
                                     const minfer_tensor_view *dst);
/* copy_in_domain (ABI 2, appended): whether the provider offers device
 * values, and a copy between two tensors of its domain. */
int mf_prov_has_copy_in_domain(const mf_provider_inst *pi);
minfer_status mf_prov_copy_in_domain(const mf_provider_inst *pi, const minfer_tensor_view *src,
                                     const minfer_tensor_view *dst);
/* tensor_bytes, run_counters, export_packed: whether the provider has the
 * member, and the call (only when it has). */
int mf_prov_has_tensor_bytes(const mf_provider_inst *pi);
size_t mf_prov_tensor_bytes(const mf_provider_inst *pi, const minfer_tensor_view *v);
int mf_prov_has_run_counters(const mf_provider_inst *pi);
minfer_status mf_prov_run_counters(const mf_provider_inst *pi, minfer_device_counters *out);
int mf_prov_has_export_packed(const mf_provider_inst *pi);
minfer_status mf_prov_export_packed(const mf_provider_inst *pi, void *state,
                                    const minfer_node_desc *node,
                                    void (*emit)(void *arg, const minfer_packed_const *c),
                                    void *user);

/* Writes the instance's device into buf ("host CPU" when the provider does
 * not describe it) and returns MINFER_DEVICE_*. */
int32_t mf_provider_device(const mf_provider_inst *p, char *buf, size_t size);
/* 1 for a provider that stays out of the default order: one that says its
 * device is a CPU (OpenCL on PoCL) other than the CPU provider itself,
 * slower there than the CPU provider. It runs when named. */
int mf_provider_named_only(const mf_provider_inst *p);

/* The providers minfer ships or documents, by name: a name outside this
 * list that no search directory holds is a typo, not a missing package. */
#define MF_KNOWN_PROVIDERS "cpu, onednn, opencl"
int mf_provider_is_known(const char *name);
/* 1 when a search directory holds libminfer_provider_NAME.so. */
int mf_provider_installed(const char *name);
/* The provider names the search path holds, comma-separated, each once,
 * in search order ("none" when empty). discovery.c. */
void mf_installed_provider_names(char *buf, size_t size);

/* 1 the first time key is passed in this process, then 0: for warnings a
 * process should see once (a bad environment variable, a provider that
 * is missing), however many sessions it makes. options.c. */
int mf_first_time(const char *key);

/* The directories searched, as a newly malloc'd NULL-terminated array of
 * malloc'd strings (for `minfer providers` and messages). */
char **mf_provider_search_path(void);
void mf_free_string_list(char **list);

#endif
