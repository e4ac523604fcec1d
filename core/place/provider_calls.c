/*
 * Calls into a provider: one function per vtable member the core uses (as
 * SQLite's sqlite3OsRead for its VFS, ggml's ggml_backend_* for a
 * backend), declared in place/provider_loader.h. Each checks that the
 * provider has the member (an optional one: the vtable's struct_size
 * covers it and it is not NULL) and says what its absence means, so no
 * other file of the core reaches into a vtable or repeats a guard.
 * mf_provider_open has checked that a provider computing in a device
 * domain has the memory members (mem_alloc, mem_free, copy_to_host,
 * copy_from_host); those are called as they are.
 */
#include <assert.h>

#include "place/provider_loader.h"

const char *mf_prov_memory_domain(const mf_provider_inst *pi) {
    return pi->host_memory ? "host" : pi->vt->memory_domain;
}

size_t mf_prov_alignment(const mf_provider_inst *pi) {
    return MF_VT_HAS(pi->vt, memory_alignment) ? pi->vt->memory_alignment : 0;
}

int mf_prov_supports(const mf_provider_inst *pi, const minfer_node_desc *node, char *why,
                     size_t why_size) {
    assert(pi && pi->vt && pi->vt->supports_operator);
    return pi->vt->supports_operator(pi->ctx, node, why, why_size);
}

minfer_status mf_prov_prepare(const mf_provider_inst *pi, const minfer_node_desc *node,
                              minfer_node_prep *prep, void **state) {
    *state = NULL;
    if (!MF_VT_HAS(pi->vt, prepare_node)) /* nothing to prepare: the node runs stateless */
        return MINFER_OK;
    minfer_status st = pi->vt->prepare_node(pi->ctx, node, prep, state);
    if (st != MINFER_OK)
        *state = NULL;
    return st;
}

minfer_status mf_prov_execute(const mf_provider_inst *pi, void *state,
                              const minfer_exec_args *args) {
    assert(pi && pi->vt && pi->vt->execute_node);
    return pi->vt->execute_node(pi->ctx, state, args);
}

void mf_prov_release(const mf_provider_inst *pi, void *state) {
    if (MF_VT_HAS(pi->vt, release_node)) /* absent: the provider keeps no node state */
        pi->vt->release_node(pi->ctx, state);
}

minfer_status mf_prov_synchronize(const mf_provider_inst *pi) {
    if (pi->host_memory || !MF_VT_HAS(pi->vt, synchronize)) /* absent: work is synchronous */
        return MINFER_OK;
    return pi->vt->synchronize(pi->ctx);
}

minfer_status mf_prov_mem_alloc(const mf_provider_inst *pi, size_t bytes, void **buffer) {
    assert(!pi->host_memory);
    return pi->vt->mem_alloc(pi->ctx, bytes, buffer);
}

void mf_prov_mem_free(const mf_provider_inst *pi, void *buffer) {
    assert(!pi->host_memory);
    pi->vt->mem_free(pi->ctx, buffer);
}

minfer_status mf_prov_copy_to_host(const mf_provider_inst *pi, const minfer_tensor_view *src,
                                   void *dst, size_t bytes) {
    assert(!pi->host_memory);
    return pi->vt->copy_to_host(pi->ctx, src, dst, bytes);
}

minfer_status mf_prov_copy_from_host(const mf_provider_inst *pi, const void *src, size_t bytes,
                                     const minfer_tensor_view *dst) {
    assert(!pi->host_memory);
    return pi->vt->copy_from_host(pi->ctx, src, bytes, dst);
}

int mf_prov_has_copy_in_domain(const mf_provider_inst *pi) {
    return !pi->host_memory && MF_VT_HAS(pi->vt, copy_in_domain);
}

minfer_status mf_prov_copy_in_domain(const mf_provider_inst *pi, const minfer_tensor_view *src,
                                     const minfer_tensor_view *dst) {
    assert(mf_prov_has_copy_in_domain(pi));
    return pi->vt->copy_in_domain(pi->ctx, src, dst);
}

int mf_prov_has_tensor_bytes(const mf_provider_inst *pi) {
    return MF_VT_HAS(pi->vt, tensor_bytes);
}

size_t mf_prov_tensor_bytes(const mf_provider_inst *pi, const minfer_tensor_view *v) {
    assert(mf_prov_has_tensor_bytes(pi));
    return pi->vt->tensor_bytes(pi->ctx, v);
}

int mf_prov_has_run_counters(const mf_provider_inst *pi) {
    return !pi->host_memory && MF_VT_HAS(pi->vt, run_counters);
}

minfer_status mf_prov_run_counters(const mf_provider_inst *pi, minfer_device_counters *out) {
    assert(mf_prov_has_run_counters(pi));
    return pi->vt->run_counters(pi->ctx, out);
}

int mf_prov_has_export_packed(const mf_provider_inst *pi) {
    return MF_VT_HAS(pi->vt, export_packed);
}

minfer_status mf_prov_export_packed(const mf_provider_inst *pi, void *state,
                                    const minfer_node_desc *node,
                                    void (*emit)(void *arg, const minfer_packed_const *c),
                                    void *user) {
    assert(mf_prov_has_export_packed(pi));
    return pi->vt->export_packed(pi->ctx, state, node, emit, user);
}
