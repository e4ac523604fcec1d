/* minfer_session_device_counters: a device provider's counts of its last
 * run (commands enqueued, host waits, transfers), through the provider
 * ABI's optional run_counters member (docs/providers.md). */
#include <stddef.h>
#include <string.h>

#include "place/provider_loader.h"
#include "session/session.h"

minfer_status minfer_session_device_counters(const minfer_session *s, size_t provider,
                                             minfer_device_counters *out) {
    if (!s || !out || out->struct_size < offsetof(minfer_device_counters, runs))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_device_counters: NULL "
                        "argument or struct_size too small");
    if (provider >= s->pl->n_provs)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_device_counters: provider %zu "
                        "of %zu", provider, s->pl->n_provs);
    const mf_provider_inst *pi = &s->pl->provs[provider];
    if (!mf_prov_has_run_counters(pi))
        return mf_error(MINFER_ERR_UNSUPPORTED, "provider '%s' does not count its runs",
                        pi->name);
    /* The provider writes at most the caller's size; the copy is zeroed
     * first, so fields an older provider does not know read 0. */
    minfer_device_counters c;
    memset(&c, 0, sizeof c);
    size_t n = out->struct_size < sizeof c ? out->struct_size : sizeof c;
    c.struct_size = n;
    minfer_status st = mf_prov_run_counters(pi, &c);
    if (st != MINFER_OK)
        return mf_error_prefix(st, "provider '%s' run_counters", pi->name);
    c.struct_size = out->struct_size;
    memcpy(out, &c, n);
    return MINFER_OK;
}
