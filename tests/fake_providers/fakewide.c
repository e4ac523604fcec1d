/*
 * A test provider whose Relu keeps threads of its own busy, as an OpenMP
 * build does: each run claims the session's thread count through
 * minfer_host_api.claim_threads and counts what it was granted as busy
 * until it returns (it sleeps 10 ms meanwhile, so nodes running beside
 * each other overlap). A run that finds more threads busy at once than the
 * session has fails, naming both counts; test_sched_claims reads the
 * counts through fakewide_stats.
 *
 * The counters are process globals, against the providers' rule, on
 * purpose: they count across every node and session of the test process.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "fake_common.h"
#include "minfer/provider_kit.h"

static atomic_int busy, nodes, max_busy, max_nodes, wide, over;

static void raise_max(atomic_int *m, int v) {
    int old = atomic_load(m);
    while (v > old && !atomic_compare_exchange_weak(m, &old, v))
        ;
}

/* out: the most threads busy at once, the most nodes running at once,
 * claims granted more than one thread, runs that found too many busy;
 * then zeroes them. */
__attribute__((visibility("default"))) void fakewide_stats(int out[4]) {
    out[0] = atomic_exchange(&max_busy, 0);
    out[1] = atomic_exchange(&max_nodes, 0);
    out[2] = atomic_exchange(&wide, 0);
    out[3] = atomic_exchange(&over, 0);
}

static int supports(void *ctx, const minfer_node_desc *n, char *why, size_t why_size) {
    (void)ctx;
    if (!fake_is(n, "Relu") || n->n_inputs != 1 || n->inputs[0].dtype != MINFER_DTYPE_FLOAT) {
        snprintf(why, why_size, "fakewide runs only Relu on float");
        return 0;
    }
    return 1;
}

static minfer_status execute(void *ctx, void *state, const minfer_exec_args *a) {
    fake_ctx *c = ctx;
    (void)state;
    if (!MINFER_HOST_HAS(c->api, run_claim_threads) || !MINFER_HOST_HAS(c->api, run_num_threads)) {
        c->api->set_error(c->host, "fakewide: the host has no run_claim_threads");
        return MINFER_ERR_RUNTIME;
    }
    int threads = c->api->run_num_threads(a->run);
    int got = c->api->run_claim_threads(a->run, threads);
    if (got < 1 || got > threads) {
        c->api->set_error(c->host, "fakewide: claimed %d threads, granted %d", threads, got);
        return MINFER_ERR_RUNTIME;
    }
    int b = atomic_fetch_add(&busy, got) + got;
    raise_max(&max_busy, b);
    raise_max(&max_nodes, atomic_fetch_add(&nodes, 1) + 1);
    if (got > 1)
        atomic_fetch_add(&wide, 1);
    struct timespec ts = {0, 10000000}; /* 10 ms: time for a loaded machine to start another */
    nanosleep(&ts, NULL);
    int64_t n = fake_numel(&a->inputs[0]);
    const float *x = fake_f32(&a->inputs[0]);
    float *y = fake_f32(&a->outputs[0]);
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    atomic_fetch_sub(&nodes, 1);
    atomic_fetch_sub(&busy, got);
    if (b > threads) {
        atomic_fetch_add(&over, 1);
        c->api->set_error(c->host, "fakewide: %d threads busy at once, over the session's %d", b,
                          threads);
        return MINFER_ERR_RUNTIME;
    }
    return MINFER_OK;
}

static const minfer_provider fakewide = {
    .abi_version = MINFER_PROVIDER_ABI_VERSION,
    .struct_size = sizeof(minfer_provider),
    .name = "fakewide",
    .version = "0.0.1",
    .init = fake_init,
    .shutdown = fake_shutdown,
    .supports_operator = supports,
    .execute_node = execute,
};

MINFER_PROVIDER_DEFINE(fakewide)
