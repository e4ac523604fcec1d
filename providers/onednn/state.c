/*
 * Prepared nodes of the oneDNN provider (prepare_node, execute_node,
 * release_node): the build for the session's threads, its variant for
 * another thread count or its split form, which of them runs, and the
 * run itself (binding data handles, executing the steps). It calls
 * node.c, split.c, build.c (packing) and packed.c (export); nothing
 * calls back into it but the vtable.
 */
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onednn.h"

/* A prepared node as handed to the host: the node built for the session's
 * threads and, with several threads, either the node split into one-thread
 * pieces that run side by side on the host's pool (split.c), which then
 * always runs, or the same node built for another OpenMP thread count
 * (one with split=off; the session's for a large node without a split
 * form), the two builds taking turns by measured time (pick_variant). The lock makes
 * concurrent runs of a session take turns on the node: its oneDNN memory
 * objects are bound to each run's buffers. */
typedef struct dnn_state {
    dnn_node *v[2];
    dnn_split *split;
    _Atomic uint64_t ns[2]; /* smoothed time of each build, 0 until timed */
    _Atomic uint64_t runs;
    pthread_mutex_t lock;
} dnn_state;

static void state_free(dnn_state *s) {
    if (!s)
        return;
    dnn_split_free(s->split); /* pieces may share v[0]'s packed constants */
    dnn_node_free(s->v[1]);   /* so may v[1]: both freed first */
    dnn_node_free(s->v[0]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Builds v1, the variant of v0 for threads OpenMP threads (one for a
 * multi-threaded node with split=off; the session's for a node without a
 * split form), reusing v0's packed constants. Kept only when it gives
 * every output the layout v0 gave it and asks for the same in-place
 * outputs, so that the host's plan holds for both; else the host sees
 * v0's choices again. */
static void build_variant(dnn_ctx *ctx, const minfer_node_desc *node, minfer_node_prep *prep,
                          dnn_state *s, int threads) {
    size_t no = node->n_outputs;
    uint64_t lay[8];
    int32_t inpl[8];
    char why[512];
    if (no > 8)
        return;
    memcpy(lay, prep->output_layouts, no * sizeof lay[0]);
    memcpy(inpl, prep->output_inplace, no * sizeof inpl[0]);
    if (dnn_build_node(ctx, node, prep, 0, threads, s->v[0], NULL, &s->v[1], why, sizeof why) ==
            MINFER_OK &&
        !memcmp(lay, prep->output_layouts, no * sizeof lay[0]) &&
        !memcmp(inpl, prep->output_inplace, no * sizeof inpl[0]))
        return;
    dnn_node_free(s->v[1]);
    s->v[1] = NULL;
    memcpy(prep->output_layouts, lay, no * sizeof lay[0]);
    memcpy(prep->output_inplace, inpl, no * sizeof inpl[0]);
}

/* Whether a build reads constant input i from the host: bound to the
 * input at execute (1), copied into the build's own memory (0), or not
 * used (-1). */
static int reads_input(const dnn_node *n, size_t i) {
    int packed = -1;
    for (int k = 0; n && k < n->n_mems; k++) {
        if (n->mems[k].index != (int)i)
            continue;
        if (n->mems[k].bind == BIND_INPUT)
            return 1;
        if (n->mems[k].bind == BIND_FIXED)
            packed = 0;
    }
    return packed;
}

/* minfer_node_prep.const_packed (ABI 2): the constant inputs that the
 * builds which will run (the node, its one-thread variant, its pieces)
 * packed and none reads from the host, so the host may give its copy
 * back. */
static void report_packed(const minfer_node_desc *node, const dnn_state *s,
                          minfer_node_prep *prep) {
    if (!MINFER_STRUCT_HAS(prep, minfer_node_prep, const_packed) || !prep->const_packed)
        return;
    const dnn_node *builds[2 + DNN_MAX_PIECES];
    int nb = 0;
    for (int v = 0; v < 2; v++)
        if (s->v[v])
            builds[nb++] = s->v[v];
    for (int j = 0; s->split && j < s->split->n; j++)
        builds[nb++] = s->split->piece[j];
    for (size_t i = 0; i < node->n_inputs; i++) {
        const minfer_value_desc *in = minfer_kit_input(node, i);
        int packed = in && in->const_data && nb > 0;
        for (int b = 0; packed && b < nb; b++)
            packed = reads_input(builds[b], i) == 0;
        prep->const_packed[i] = (uint8_t)packed;
    }
}

/* The builds a prepared node runs: at most cap. */
static int state_builds(const dnn_state *s, const dnn_node **out, int cap) {
    int nb = 0;
    for (int v = 0; s && v < 2; v++)
        if (s->v[v] && nb < cap)
            out[nb++] = s->v[v];
    for (int j = 0; s && s->split && j < s->split->n && nb < cap; j++)
        out[nb++] = s->split->piece[j];
    return nb;
}

static minfer_status prepare_node(void *vctx, const minfer_node_desc *node,
                                  minfer_node_prep *prep, void **state);

/* prepare_node with the host's node known to packed.c while it runs. */
minfer_status dnn_prepare(void *vctx, const minfer_node_desc *node, minfer_node_prep *prep,
                                 void **state) {
    dnn_ctx *ctx = vctx;
    ctx->pack_node = node;
    minfer_status st = prepare_node(vctx, node, prep, state);
    ctx->pack_node = NULL;
    return st;
}

static minfer_status prepare_node(void *vctx, const minfer_node_desc *node,
                                  minfer_node_prep *prep, void **state) {
    dnn_ctx *ctx = vctx;
    char why[512] = "";
    dnn_node *n = NULL;
    int dyn = 0;
    *state = NULL;
    if (dnn_node_unknown_outputs(node, why, sizeof why)) {
        ctx->api->set_error(ctx->host, "onednn: node '%s': %s", node->name, why);
        return MINFER_ERR_UNSUPPORTED;
    }
    /* Output 0's shape unknown to the host (a dynamic node): it is input 0's,
     * plain, allocated at execute through alloc_output. */
    minfer_value_desc outs[8];
    minfer_node_desc d = *node;
    if (node->n_outputs > 0 && node->outputs[0].rank < 0 && node->n_outputs <= 8 &&
        node->n_inputs > 0) {
        memcpy(outs, node->outputs, node->n_outputs * sizeof outs[0]);
        outs[0].rank = node->inputs[0].rank;
        memcpy(outs[0].dims, node->inputs[0].dims, sizeof outs[0].dims);
        d.outputs = outs;
        dyn = 1;
    }
    int private_layouts = ctx->private_layouts;
    if (dyn)
        ctx->private_layouts = 0;
    /* Weights are packed once the split form is known: pieces that pack
     * their own slices leave the whole node's copy unmade. */
    ctx->defer_pack = !dyn;
    minfer_status st = dnn_build_node(ctx, &d, prep, 0, 0, NULL, NULL, &n, why, sizeof why);
    ctx->defer_pack = 0;
    ctx->private_layouts = private_layouts;
    if (st == MINFER_OK) {
        n->dyn_rank = dyn ? outs[0].rank : -1;
        if (dyn)
            memcpy(n->dyn_dims, outs[0].dims, sizeof n->dyn_dims);
    }
    if (st != MINFER_OK) {
        ctx->api->set_error(ctx->host, "onednn: node '%s': %s", node->name, why);
        return st;
    }
    dnn_state *s = calloc(1, sizeof *s);
    if (!s) {
        dnn_node_free(n);
        ctx->api->set_error(ctx->host, "onednn: node '%s': out of memory", node->name);
        return MINFER_ERR_NOMEM;
    }
    s->v[0] = n;
    pthread_mutex_init(&s->lock, NULL);
    if (n->copy.n) { /* a Concat run as copies cuts itself (concat.c) */
        ctx->api->log(ctx->host, MINFER_LOG_VERBOSE, "onednn: node '%s' runs as copies",
                      node->name);
        report_packed(&d, s, prep);
        *state = s;
        return MINFER_OK;
    }
    if (!dyn && n->threads > 1)
        build_variant(ctx, &d, prep, s, 1);
    int product;
    double work = dnn_node_work(&d, &product);
    if (!dyn && ctx->split != DNN_SPLIT_OFF &&
        (ctx->split == DNN_SPLIT_ON ||
         work >= (product ? DNN_MIN_FLOPS_SPLIT : DNN_MIN_ELEMS_SPLIT))) {
        ctx->defer_pack = 1; /* pieces with slices of their own pack them last */
        s->split = dnn_split_build(ctx, &d, n, prep->output_layouts);
        ctx->defer_pack = 0;
    }
    /* A large node without a split form (ConvTranspose, a convolution in
     * a blocked layout) would otherwise run on one thread whatever the
     * session's count: it gets an OpenMP variant for the session's
     * threads, and pick_variant runs whichever measures faster (OpenMP's
     * workers may find the CPUs held by the pool's spinning ones). */
    if (!dyn && !s->split && ctx->split != DNN_SPLIT_OFF && ctx->threads > 1 &&
        work >= (product ? DNN_MIN_FLOPS_MT : DNN_MIN_ELEMS_MT)) {
        build_variant(ctx, &d, prep, s, ctx->threads);
        if (s->v[1])
            ctx->api->log(ctx->host, MINFER_LOG_VERBOSE,
                          "onednn: node '%s' has no split form: also built for %d OpenMP threads",
                          node->name, ctx->threads);
    }
    prep->workspace_bytes = n->ws_bytes;
    if (s->v[1] && s->v[1]->ws_bytes > prep->workspace_bytes)
        prep->workspace_bytes = s->v[1]->ws_bytes;
    if (s->split && s->split->n * s->split->ws_stride > prep->workspace_bytes)
        prep->workspace_bytes = s->split->n * s->split->ws_stride;
    if (s->split && s->split->own_weights) {
        /* The pieces hold every weight between them: the whole node's
         * packed copy goes. */
        dnn_node_free(s->v[1]);
        dnn_node_free(s->v[0]);
        s->v[0] = s->v[1] = NULL;
    } else if (s->split) {
        /* The pieces always run: the whole node only lends them the
         * constants they packed alike, and its one-thread variant is
         * unused. A constant no piece took stays unpacked there, else a
         * piece choosing another layout would leave it resident twice. */
        dnn_node_free(s->v[1]);
        s->v[1] = NULL;
        s->v[0]->n_deferred = 0;
    }
    /* The last packing of this call: what only one build still has to
     * pack goes in slices, the host's plain copy given back as it goes. */
    dnn_node *last[1 + DNN_MAX_PIECES] = {s->v[0]};
    for (int j = 0; s->split && j < s->split->n; j++)
        last[1 + j] = s->split->piece[j];
    if (dnn_nodes_pack(ctx, last, 1 + (s->split ? s->split->n : 0), 1, why, sizeof why) !=
        MINFER_OK) {
        state_free(s);
        ctx->api->set_error(ctx->host, "onednn: node '%s': %s", node->name, why);
        return MINFER_ERR_UNSUPPORTED;
    }
    report_packed(&d, s, prep);
    *state = s;
    return MINFER_OK;
}

void dnn_release(void *ctx, void *state) {
    (void)ctx;
    state_free(state);
}

static minfer_status exec_fail(dnn_ctx *ctx, const minfer_exec_args *a, minfer_status st,
                               const char *msg, long detail) {
    ctx->api->set_error(ctx->host, "onednn: node '%s' (%s): %s (%ld)", a->node->name,
                        a->node->op_type, msg, detail);
    return st;
}

/* dst[i] += src[i] in int32 (added as uint32: a sum past int32, which
 * the reference's int32 accumulator would also wrap, is no UB here). */
static void add_int32(void *dst, const void *src, size_t n) {
    int32_t *d = dst;
    const int32_t *s = src;
    for (size_t i = 0; i < n; i++)
        d[i] = (int32_t)((uint32_t)d[i] + (uint32_t)s[i]);
}

/* QLinearAdd as ORT's MLAS AVX2 kernel (the contrib plugin's
 * qlinear.c, which the comment there explains): c = saturate(
 * round_half_even(fma(a, ra, fma(b, rb, k)))), a NaN giving 0; clamping
 * before the rounding is the same as after, the bounds being integers.
 * Elements from start on; rintf rounds half to even in the default
 * rounding mode (nearbyintf is the same value, but gcc calls libm for it). */
#define QADD_LOOP(T, LO, HI)                                                                    \
    do {                                                                                        \
        const T *pa = av, *pb = bv;                                                             \
        T *pc = cv;                                                                             \
        for (size_t i = start; i < n; i++) {                                                    \
            float f = fmaf((float)pa[i], ra, fmaf((float)pb[i], rb, k));                        \
            float g = f < (LO) ? (LO) : f;                                                      \
            g = g > (HI) ? (HI) : g;                                                            \
            g = rintf(g);                                                                       \
            pc[i] = f == f ? (T)(int32_t)g : (T)0;                                              \
        }                                                                                       \
    } while (0)

static void qadd_plain(int u8, const void *av, const void *bv, void *cv, size_t start,
                       size_t n, float ra, float rb, float k) {
    if (u8)
        QADD_LOOP(uint8_t, 0.0f, 255.0f);
    else
        QADD_LOOP(int8_t, -128.0f, 127.0f);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* Eight elements a step with AVX2 and FMA, the same operations lane by
 * lane (a NaN lane masked to 0), the rest through qadd_plain. */
__attribute__((target("avx2,fma"))) static void qadd_avx2(int u8, const void *av,
                                                           const void *bv, void *cv, size_t n,
                                                           float ra, float rb, float k) {
    const uint8_t *pa = av, *pb = bv;
    uint8_t *pc = cv;
    const __m256 vra = _mm256_set1_ps(ra), vrb = _mm256_set1_ps(rb), vk = _mm256_set1_ps(k);
    const __m256 lo = _mm256_set1_ps(u8 ? 0.0f : -128.0f), hi = _mm256_set1_ps(u8 ? 255.0f : 127.0f);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i a8 = _mm_loadl_epi64((const __m128i *)(const void *)(pa + i));
        __m128i b8 = _mm_loadl_epi64((const __m128i *)(const void *)(pb + i));
        __m256 fa = _mm256_cvtepi32_ps(u8 ? _mm256_cvtepu8_epi32(a8) : _mm256_cvtepi8_epi32(a8));
        __m256 fb = _mm256_cvtepi32_ps(u8 ? _mm256_cvtepu8_epi32(b8) : _mm256_cvtepi8_epi32(b8));
        __m256 f = _mm256_fmadd_ps(fa, vra, _mm256_fmadd_ps(fb, vrb, vk));
        __m256 g = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
        g = _mm256_round_ps(g, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        g = _mm256_and_ps(g, _mm256_cmp_ps(f, f, _CMP_ORD_Q));
        __m256i q = _mm256_cvtps_epi32(g);
        __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        w = u8 ? _mm_packus_epi16(w, w) : _mm_packs_epi16(w, w);
        _mm_storel_epi64((__m128i *)(void *)(pc + i), w);
    }
    qadd_plain(u8, av, bv, cv, i, n, ra, rb, k);
}
#endif
#undef QADD_LOOP

static void qadd(const dnn_step *st, void *const *h) {
    int u8 = st->host == DNN_HOST_QADD_U8;
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        qadd_avx2(u8, h[st->src], h[st->src2], h[st->dst], st->count, st->ra, st->rb, st->k);
        return;
    }
#endif
    qadd_plain(u8, h[st->src], h[st->src2], h[st->dst], 0, st->count, st->ra, st->rb, st->k);
}

static minfer_status run_node(dnn_ctx *ctx, const dnn_node *n, const minfer_exec_args *a) {
    void *h[DNN_MAX_MEMS];
    if (a->workspace_bytes < n->ws_bytes || (n->ws_bytes && !a->workspace))
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "workspace too small, bytes needed",
                         (long)n->ws_bytes);
    if (n->dyn_rank >= 0 && a->n_outputs > 0 && a->outputs[0].rank < 0) {
        if (!ctx->api->alloc_output)
            return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "host cannot allocate output", 0);
        a->outputs[0].dtype = MINFER_DTYPE_FLOAT;
        minfer_status st = ctx->api->alloc_output(a->run, 0, n->dyn_rank, n->dyn_dims);
        if (st != MINFER_OK)
            return st;
    }
    for (size_t i = 0; i < n->n_in && i < a->n_inputs; i++)
        if (a->inputs[i].data && a->inputs[i].layout != n->in_layout[i])
            return exec_fail(ctx, a, MINFER_ERR_RUNTIME,
                             "input arrived in a layout other than the one prepared for, input",
                             (long)i);
    /* In a device domain the workspace is a buffer handle plus an offset
     * (a member appended to the ABI: read it only when the host has it). */
    char *ws = a->workspace;
    if (ws && MINFER_STRUCT_HAS(a, minfer_exec_args, workspace_offset))
        ws += a->workspace_offset;
    for (int k = 0; k < n->n_mems; k++) {
        const dnn_mem *m = &n->mems[k];
        const minfer_tensor_view *v = NULL;
        switch (m->bind) {
        case BIND_INPUT:
            v = &a->inputs[m->index];
            break;
        case BIND_OUTPUT:
            v = &a->outputs[m->index];
            break;
        case BIND_WS:
            h[k] = ws + n->scratch_bytes + m->off;
            break;
        case BIND_SCRATCH:
            h[k] = ws;
            break;
        default:
            h[k] = NULL;
            continue;
        }
        if (v) {
            if (!v->data)
                return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "missing tensor for memory", k);
            h[k] = (char *)v->data + v->offset;
        }
        if (dnnl_memory_set_data_handle_v2(m->mem, h[k], ctx->stream) != dnnl_success)
            return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "could not bind memory", k);
    }
    omp_set_num_threads(n->threads);
    for (int s = 0; s < n->n_steps; s++) {
        const dnn_step *st = &n->steps[s];
        if (st->skip_src >= 0 && h[st->skip_src] == h[st->skip_dst])
            continue;
        if (!st->prim) {
            /* A step computed here: the primitives before it are done (the
             * CPU stream runs in order; wait for it all the same). */
            if (dnnl_stream_wait(ctx->stream) != dnnl_success)
                return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "oneDNN stream wait failed", 0);
            if (st->host == DNN_HOST_ADD_I32)
                add_int32(h[st->dst], h[st->src], st->count);
            else
                qadd(st, h);
            continue;
        }
        dnnl_status_t r = dnnl_primitive_execute(st->prim, ctx->stream, st->n_args, st->args);
        if (r != dnnl_success)
            return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "oneDNN execute failed, status", r);
    }
    if (dnnl_stream_wait(ctx->stream) != dnnl_success)
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "oneDNN stream wait failed", 0);
    return MINFER_OK;
}

/* Which build runs, with two built: the faster by smoothed
 * measured time. The second vCPU of the machines this was tuned on is
 * often busy with other work; a node split over two OpenMP threads then
 * finishes when the descheduled thread does, later than on one thread,
 * while with the second CPU free two threads win. The first two runs warm
 * both builds up untimed, the next six alternate, and afterwards every
 * 16th run tries the slower one, so the choice follows the load. All nodes
 * probe in the same run (their counts advance together): one slow run in
 * 16 rather than every run a little slower. Updates race between
 * concurrent runs of a session harmlessly (a lost sample). Split forms
 * need no choosing: measured with and without it, always running the
 * pieces was as fast or faster with the second CPU free, busy, or busy
 * half the time, since the pool stops spinning under load and its caller
 * takes the pieces a late worker has not started. */
#define DNN_PROBE_EVERY 16

static int pick_variant(dnn_state *s, uint64_t k) {
    if (!s->v[1])
        return 0;
    if (k < 8)
        return (int)(k & 1);
    uint64_t t0 = atomic_load_explicit(&s->ns[0], memory_order_relaxed);
    uint64_t t1 = atomic_load_explicit(&s->ns[1], memory_order_relaxed);
    int best = t1 < t0;
    return k % DNN_PROBE_EVERY == 0 ? !best : best;
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One run of a split node: the pieces on the host's pool. */
typedef struct split_job {
    dnn_ctx *ctx;
    const dnn_split *sp;
    const minfer_exec_args *a;
    char *ws;
    _Atomic int failed;     /* piece index + 1 of a failure */
    minfer_status st;
} split_job;

static void run_pieces(void *arg, size_t begin, size_t end) {
    split_job *job = arg;
    const minfer_exec_args *a = job->a;
    minfer_tensor_view in[DNN_PIECE_INPUTS], out;
    for (size_t j = begin; j < end; j++) {
        minfer_exec_args pa = *a;
        memcpy(in, a->inputs, a->n_inputs * sizeof in[0]);
        for (size_t i = 0; i < a->n_inputs; i++)
            in[i].offset += job->sp->in_off[j][i];
        out = a->outputs[0];
        out.offset += job->sp->out_off[j];
        pa.inputs = in;
        pa.outputs = &out;
        pa.n_outputs = 1;
        pa.workspace = job->ws ? job->ws + j * job->sp->ws_stride : NULL;
        pa.workspace_bytes = job->sp->ws_stride;
        pa.workspace_offset = 0;
        minfer_status st = run_node(job->ctx, job->sp->piece[j], &pa);
        if (st != MINFER_OK) {
            int none = 0;
            if (atomic_compare_exchange_strong(&job->failed, &none, (int)j + 1))
                job->st = st;
        }
    }
}

static minfer_status run_split(dnn_ctx *ctx, const dnn_split *sp, const minfer_exec_args *a) {
    char *ws = a->workspace;
    if (ws && MINFER_STRUCT_HAS(a, minfer_exec_args, workspace_offset))
        ws += a->workspace_offset;
    if (a->workspace_bytes < sp->n * sp->ws_stride || (sp->ws_stride && !ws))
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "workspace too small, bytes needed",
                         (long)(sp->n * sp->ws_stride));
    if (a->n_inputs > DNN_PIECE_INPUTS || a->n_outputs != 1 || !a->outputs[0].data)
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "unexpected arguments for a split node",
                         (long)a->n_inputs);
    split_job job = {ctx, sp, a, ws, 0, MINFER_OK};
    dnn_parallel_for(ctx, a, (size_t)sp->n, 1, run_pieces, &job);
    int failed = atomic_load(&job.failed);
    if (failed)
        return exec_fail(ctx, a, job.st, "a piece of the split node failed, piece", failed - 1);
    return MINFER_OK;
}



/* Build v, or the other one when v would keep more OpenMP threads busy
 * than the host lets this run use now (minfer_host_api.claim_threads: the
 * parallel scheduler gives a node running beside others one thread). The
 * claim holds until dnn_execute returns. A node built only for several
 * threads (split=off without a one-thread variant) runs as built. */
static int fit_claim(const dnn_ctx *ctx, const dnn_state *s, int v, const minfer_exec_args *a) {
    int want = s->v[v]->threads;
    int got;
    if (want <= 1)
        return v;
    if (MINFER_HOST_HAS(ctx->api, run_claim_threads))
        got = ctx->api->run_claim_threads(a->run, want);
    else if (MINFER_HOST_HAS(ctx->api, claim_threads))
        got = ctx->api->claim_threads(ctx->host, want);
    else
        return v;
    if (got < want && s->v[!v] && s->v[!v]->threads <= got)
        return !v;
    return v;
}

minfer_status dnn_execute(void *vctx, void *state, const minfer_exec_args *a) {
    dnn_ctx *ctx = vctx;
    dnn_state *s = state;
    if (!s || (!s->v[0] && !s->split))
        return exec_fail(ctx, a, MINFER_ERR_RUNTIME, "node was not prepared", 0);
    if (s->v[0] && s->v[0]->copy.n) /* no oneDNN objects: no lock */
        return dnn_concat_copy_run(ctx, s->v[0], a);
    pthread_mutex_lock(&s->lock);
    minfer_status st;
    if (s->split) {
        st = run_split(ctx, s->split, a);
    } else if (!s->v[1]) {
        st = run_node(ctx, s->v[0], a);
    } else {
        uint64_t k = atomic_fetch_add_explicit(&s->runs, 1, memory_order_relaxed);
        int v = fit_claim(ctx, s, pick_variant(s, k), a);
        uint64_t t = now_ns();
        st = run_node(ctx, s->v[v], a);
        t = now_ns() - t;
        if (st == MINFER_OK && k >= 2) {
            uint64_t old = atomic_load_explicit(&s->ns[v], memory_order_relaxed);
            atomic_store_explicit(&s->ns[v], old ? (3 * old + t) / 4 : t, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return st;
}

minfer_status dnn_export_packed(void *vctx, void *state, const minfer_node_desc *node,
                                void (*emit)(void *arg, const minfer_packed_const *c),
                                void *arg) {
    (void)vctx;
    const dnn_node *builds[2 + DNN_MAX_PIECES];
    int nb = state_builds(state, builds, (int)(sizeof builds / sizeof builds[0]));
    dnn_packed_export(builds, nb, node, emit, arg);
    return MINFER_OK;
}
