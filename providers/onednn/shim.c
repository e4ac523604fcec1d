/*
 * The provider library the core loads (libminfer_provider_onednn.so). It
 * holds no kernels: its entry point loads the implementation,
 * libminfer_onednn_impl.so from the same directory, and returns that
 * library's vtable.
 *
 * Why the indirection: oneDNN threads with OpenMP (libgomp), which reads
 * OMP_WAIT_POLICY once, when it is loaded. By default its idle workers spin
 * between parallel regions; a 2-thread session on a machine whose second
 * CPU is busy then runs many times slower (measured: resnet18 at 2 threads,
 * 645 ms spinning against 46 ms passive). Loading oneDNN only from here lets
 * the provider default OpenMP to passive waiting before libgomp starts,
 * unless the user has set OMP_WAIT_POLICY (or libgomp was already loaded by
 * someone else, when the setting cannot change any more).
 *
 * Passive only where the process has at most 8 CPUs. Above, sessions of
 * more than 8 threads run OpenMP builds (provider.c, split=auto), whose
 * workers asleep between the regions cost more than they save: on 16
 * cores, squeezenet1_1 ran in 2.7 ms with passive workers and 1.2 with
 * spinning ones. There libgomp's own policy stays, spinning a bounded
 * while (GOMP_SPINCOUNT 1000000, milliseconds) before sleeping, so an
 * idle process stops using the CPUs soon; unbounded spinning (active)
 * measured no faster.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/provider.h"

#define IMPL_NAME "libminfer_onednn_impl.so"

MINFER_PROVIDER_EXPORT const minfer_provider *minfer_provider_entry(uint32_t host_abi) {
    Dl_info self;
    char path[4096];
    if (!dladdr((void *)minfer_provider_entry, &self) || !self.dli_fname)
        return NULL;
    const char *slash = strrchr(self.dli_fname, '/');
    int dir_len = slash ? (int)(slash - self.dli_fname) : 1;
    snprintf(path, sizeof path, "%.*s/%s", dir_len, slash ? self.dli_fname : ".", IMPL_NAME);
    cpu_set_t cpus;
    int n_cpus = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
    if (n_cpus <= 8)
        setenv("OMP_WAIT_POLICY", "passive", 0);
    else if (!getenv("OMP_WAIT_POLICY"))
        setenv("GOMP_SPINCOUNT", "1000000", 0);
    /* Stays loaded for the life of the process: the vtable lives in it. */
    void *impl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!impl) {
        fprintf(stderr, "minfer: onednn: %s\n", dlerror());
        return NULL;
    }
    minfer_provider_entry_fn entry;
    *(void **)&entry = dlsym(impl, "minfer_onednn_impl_entry");
    return entry ? entry(host_abi) : NULL;
}
