/*
 * The optimizer's fused ops (domain "minfer", docs/fused-ops.md), as plain
 * compositions of the reference kernels, so they are exactly as right as
 * the ops they replace.
 *
 *   FusedConv / FusedGemm / FusedMatMul: the ONNX kernel (conv.c, gemm.c)
 *     writes the output, then one pass over it adds Z or the bias and
 *     applies the activation in place.
 *   LayerNormalization: norm.c's kernel (listed in the table directly).
 *   Gelu: elementwise, erf or tanh form.
 *   Attention: per batch (leading axes broadcast as in MatMul), the scores
 *     block Q KT in the workspace through cpu_gemm, scale, mask and softmax
 *     per row, then P V through cpu_gemm.
 *   RotaryEmbedding: per row of X's last axis, X * Cos + the rotated
 *     halves Concat(-x2, x1) * Sin, each product rounded to float and then
 *     added, as the Mul, Mul and Add it replaces do.
 *
 * The activation is read from the node's attributes in prepare (to decline
 * an unknown one) and again at compute: the wrapped kernels own the op
 * state, and two attribute lookups per run cost nothing next to a Conv.
 */
#include <math.h>
#include <string.h>

#include "cpu.h"

enum { ACT_NONE, ACT_RELU, ACT_CLIP, ACT_SIGMOID, ACT_HARDSIGMOID, ACT_HARDSWISH, ACT_SILU,
       ACT_LEAKYRELU, ACT_TANH, ACT_GELU, ACT_GELU_TANH };

typedef struct fused_act {
    int kind;
    float a, b;
} fused_act;

/* Reads activation / activation_params (the kit's table); -1 with a reason
 * for one the table does not have or these kernels do not compute. */
static int read_act(const minfer_host_api *api, const minfer_node_desc *n, fused_act *act,
                    const char **why) {
    const float *params = NULL;
    size_t count = minfer_kit_attr_floats_ref(api, n, "activation_params", &params);
    minfer_kit_act k;
    if (minfer_kit_act_parse(minfer_kit_attr_str(api, n, "activation", ""), params, count, &k,
                             NULL, 0) != 0) {
        *why = "unknown activation, or more activation_params than it takes";
        return -1;
    }
    act->a = k.p[0];
    act->b = k.p[1];
    switch (k.kind) {
    case MINFER_KIT_ACT_NONE: act->kind = ACT_NONE; break;
    case MINFER_KIT_ACT_RELU: act->kind = ACT_RELU; break;
    case MINFER_KIT_ACT_CLIP: act->kind = ACT_CLIP; break;
    case MINFER_KIT_ACT_SIGMOID: act->kind = ACT_SIGMOID; break;
    case MINFER_KIT_ACT_HARDSIGMOID: act->kind = ACT_HARDSIGMOID; break;
    case MINFER_KIT_ACT_SILU: act->kind = ACT_SILU; break;
    case MINFER_KIT_ACT_LEAKYRELU: act->kind = ACT_LEAKYRELU; break;
    case MINFER_KIT_ACT_TANH: act->kind = ACT_TANH; break;
    case MINFER_KIT_ACT_GELU: act->kind = ACT_GELU; break;
    case MINFER_KIT_ACT_GELU_TANH: act->kind = ACT_GELU_TANH; break;
    case MINFER_KIT_ACT_HARDSWISH:
        if (!k.is_default) { /* the kernel is ONNX's HardSwish */
            *why = "HardSwish with activation_params other than 1/6, 0.5";
            return -1;
        }
        act->kind = ACT_HARDSWISH;
        break;
    default:
        *why = "an activation the fused kernels do not compute";
        return -1;
    }
    return 0;
}

/* Gelu in double, as the unfused kernel below computes it: the fused and
 * unfused graphs give the same floats. */
static inline float gelu(double x, int tanh_form) {
    if (tanh_form)
        return (float)(0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))));
    return (float)(0.5 * x * (1.0 + erf(x * 0.7071067811865476)));
}

static inline float apply_act(const fused_act *act, float x) {
    switch (act->kind) {
    case ACT_RELU: return x > 0.0f ? x : 0.0f;
    case ACT_CLIP: return x < act->a ? act->a : x > act->b ? act->b : x;
    case ACT_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case ACT_HARDSIGMOID: {
        float v = act->a * x + act->b;
        return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
    }
    case ACT_HARDSWISH: {
        float v = x / 6.0f + 0.5f;
        return x * (v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v);
    }
    case ACT_SILU: return x / (1.0f + expf(-x));
    case ACT_LEAKYRELU: return x >= 0.0f ? x : act->a * x;
    case ACT_TANH: return tanhf(x);
    case ACT_GELU: return gelu(x, 0);
    case ACT_GELU_TANH: return gelu(x, 1);
    default: return x;
    }
}

static minfer_status prepare_act(cpu_prep *p) {
    fused_act act;
    const char *why = NULL;
    if (read_act(p->ctx->api, p->node, &act, &why) != 0)
        return cpu_decline(p, "%s", why);
    const minfer_value_desc *x = minfer_kit_input(p->node, 0);
    if (x && x->dtype && x->dtype != MINFER_DTYPE_FLOAT)
        return cpu_decline(p, "only float is fused");
    return MINFER_OK;
}

/* The epilogue: y = act(y + add[i % add_len]) over the output, in parallel. */
typedef struct epilogue_job {
    float *y;
    const float *add; /* NULL, Z (add_len = numel) or a bias row */
    size_t add_len;
    int whole; /* add is Z, element for element */
    fused_act act;
} epilogue_job;

/* The activation over y[0..n), one tight loop per kind (the switch stays
 * outside the loop so the compiler can vectorize the simple ones). */
#define ACT_LOOP(expr)                   \
    for (size_t i = 0; i < n; i++) {    \
        float x = y[i];                  \
        y[i] = (expr);                   \
    }
static void act_run(const fused_act *act, float *y, size_t n) {
    const float a = act->a, b = act->b;
    switch (act->kind) {
    case ACT_RELU: ACT_LOOP(x > 0.0f ? x : 0.0f) break;
    case ACT_CLIP: /* two selects, as Clip writes them: min/max instructions */
        for (size_t i = 0; i < n; i++) {
            float v = y[i];
            v = v < a ? a : v;
            y[i] = v > b ? b : v;
        }
        break;
    case ACT_LEAKYRELU: ACT_LOOP(x >= 0.0f ? x : a * x) break;
    case ACT_NONE: break;
    default:
        for (size_t i = 0; i < n; i++)
            y[i] = apply_act(act, y[i]);
        break;
    }
}
#undef ACT_LOOP

static void epilogue_range(void *arg, size_t begin, size_t end) {
    const epilogue_job *j = arg;
    float *y = j->y + begin;
    size_t n = end - begin;
    if (j->add && j->whole) {
        const float *z = j->add + begin;
        for (size_t i = 0; i < n; i++)
            y[i] += z[i];
    } else if (j->add) { /* a bias row, from wherever in a row the range starts */
        size_t c = begin % j->add_len;
        for (size_t i = 0; i < n; i++) {
            y[i] += j->add[c];
            c = c + 1 == j->add_len ? 0 : c + 1;
        }
    }
    act_run(&j->act, y, n);
}

static minfer_status epilogue(const cpu_exec *e, const minfer_tensor_view *add, int whole) {
    epilogue_job j;
    const char *why = NULL;
    const minfer_tensor_view *y = &e->args->outputs[0];
    if (read_act(e->ctx->api, e->args->node, &j.act, &why) != 0)
        return cpu_fail(e, MINFER_ERR_MODEL, "%s", why);
    int64_t n = minfer_kit_numel(y->rank, y->dims);
    j.y = cpu_data(y);
    j.add = NULL;
    j.add_len = 1;
    j.whole = whole;
    if (add) {
        if (add->dtype != MINFER_DTYPE_FLOAT)
            return cpu_fail(e, MINFER_ERR_TYPE, "%s must be float", whole ? "Z" : "bias");
        if (whole) {
            int same = add->rank == y->rank;
            for (int d = 0; same && d < y->rank; d++)
                same = add->dims[d] == y->dims[d];
            if (!same)
                return cpu_fail(e, MINFER_ERR_SHAPE, "Z must have the output's shape");
            j.add_len = (size_t)n;
        } else {
            if (add->rank != 1 || y->rank < 1 || add->dims[0] != y->dims[y->rank - 1])
                return cpu_fail(e, MINFER_ERR_SHAPE,
                                "bias must be 1-D with the output's last dimension");
            j.add_len = (size_t)add->dims[0];
        }
        j.add = cpu_data(add);
    }
    if (n <= 0 || (!j.add && j.act.kind == ACT_NONE))
        return MINFER_OK;
    if (!j.add_len)
        return MINFER_OK;
    cpu_parallel(e->ctx, (size_t)n, 16384, epilogue_range, &j);
    return MINFER_OK;
}

/* ---- FusedConv, FusedGemm, FusedMatMul -------------------------------------- */

minfer_status cpu_prepare_fused_conv(cpu_prep *p) {
    minfer_status st = prepare_act(p);
    return st ? st : cpu_prepare_conv(p);
}

minfer_status cpu_compute_fused_conv(const cpu_exec *e) {
    minfer_status st = cpu_compute_conv(e);
    return st ? st : epilogue(e, cpu_input(e, 3), 1);
}

minfer_status cpu_prepare_fused_gemm(cpu_prep *p) {
    minfer_status st = prepare_act(p);
    if (st)
        return st;
    p->since = 13; /* FusedGemm has Gemm-13 semantics */
    return cpu_prepare_gemm(p);
}

minfer_status cpu_compute_fused_gemm(const cpu_exec *e) {
    minfer_status st = cpu_compute_gemm(e);
    return st ? st : epilogue(e, NULL, 0);
}

minfer_status cpu_prepare_fused_matmul(cpu_prep *p) {
    minfer_status st = prepare_act(p);
    return st ? st : cpu_prepare_matmul(p);
}

minfer_status cpu_compute_fused_matmul(const cpu_exec *e) {
    minfer_status st = cpu_compute_matmul(e);
    return st ? st : epilogue(e, cpu_input(e, 2), 0);
}

/* ---- Gelu ------------------------------------------------------------------ */

typedef struct gelu_job {
    const float *x;
    float *y;
    int tanh_form;
} gelu_job;

static void gelu_range(void *arg, size_t begin, size_t end) {
    const gelu_job *j = arg;
    for (size_t i = begin; i < end; i++)
        j->y[i] = gelu(j->x[i], j->tanh_form);
}

minfer_status cpu_prepare_gelu(cpu_prep *p) {
    const char *mode = cpu_attr_str(p, "approximate", "none");
    if (strcmp(mode, "none") != 0 && strcmp(mode, "tanh") != 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "approximate must be 'none' or 'tanh'");
    int *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    *st = strcmp(mode, "tanh") == 0;
    return MINFER_OK;
}

minfer_status cpu_compute_gelu(const cpu_exec *e) {
    const minfer_tensor_view *x = cpu_input(e, 0);
    void *y;
    if (!x || x->dtype != MINFER_DTYPE_FLOAT)
        return cpu_fail(e, MINFER_ERR_TYPE, "X must be float");
    minfer_status st = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (st)
        return st;
    gelu_job j = {cpu_data(x), y, *(const int *)e->state};
    cpu_parallel(e->ctx, (size_t)minfer_kit_numel(x->rank, x->dims), 4096, gelu_range, &j);
    return MINFER_OK;
}

/* ---- Attention ---------------------------------------------------------------- */

typedef struct attn_job {
    const cpu_ctx *ctx;
    const float *q, *kt, *v, *mask;
    float *y, *work; /* work: Sq x Sk floats per slot */
    size_t sq, d, sk, dv;
    int brank; /* broadcast leading axes */
    int64_t bdims[CPU_MAX_RANK];
    int64_t qs[CPU_MAX_RANK], ks[CPU_MAX_RANK], vs[CPU_MAX_RANK], ms[CPU_MAX_RANK];
    size_t mrow, mcol; /* mask strides over Sq and Sk (0 when broadcast) */
    float scale;
    size_t batches, per_slot;
} attn_job;

/* One batch: scores = Q KT (cpu_gemm) scaled and masked, softmax per row,
 * Y = P V (cpu_gemm). s holds Sq x Sk floats. */
static void attn_batch(const attn_job *j, size_t b, float *restrict s, int parallel) {
    size_t rem = b, qo = 0, ko = 0, vo = 0, mo = 0;
    for (int d = j->brank - 1; d >= 0; d--) {
        size_t idx = rem % (size_t)j->bdims[d];
        rem /= (size_t)j->bdims[d];
        qo += idx * (size_t)j->qs[d];
        ko += idx * (size_t)j->ks[d];
        vo += idx * (size_t)j->vs[d];
        mo += idx * (size_t)j->ms[d];
    }
    cpu_gemm(j->ctx, MINFER_DTYPE_FLOAT, parallel, j->sq, j->sk, j->d, j->q + qo, j->d, 1,
             j->kt + ko, j->sk, s, j->sk, 0);
    for (size_t i = 0; i < j->sq; i++) {
        float *restrict row = s + i * j->sk;
        float mx = -INFINITY;
        for (size_t c = 0; c < j->sk; c++) {
            float sc = row[c] * j->scale;
            if (j->mask)
                sc += j->mask[mo + i * j->mrow + c * j->mcol];
            row[c] = sc;
            mx = sc > mx ? sc : mx;
        }
        double sum = 0.0;
        for (size_t c = 0; c < j->sk; c++) {
            row[c] = expf(row[c] - mx);
            sum += row[c];
        }
        const float inv = (float)(1.0 / sum);
        for (size_t c = 0; c < j->sk; c++)
            row[c] *= inv;
    }
    cpu_gemm(j->ctx, MINFER_DTYPE_FLOAT, parallel, j->sq, j->dv, j->sk, s, j->sk, 1, j->v + vo,
             j->dv, j->y + b * j->sq * j->dv, j->dv, 0);
}

/* Batches are split into slots of per_slot batches; each slot has its own
 * scores block in the workspace. */
static void attn_range(void *arg, size_t slot_begin, size_t slot_end) {
    const attn_job *j = arg;
    for (size_t slot = slot_begin; slot < slot_end; slot++) {
        size_t begin = slot * j->per_slot, end = begin + j->per_slot;
        for (size_t b = begin; b < end && b < j->batches; b++)
            attn_batch(j, b, j->work + slot * j->sq * j->sk, 0);
    }
}

static int attn_slots(const cpu_ctx *ctx) { return cpu_threads(ctx); }

minfer_status cpu_prepare_attention(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *q = minfer_kit_input(n, 0), *kt = minfer_kit_input(n, 1);
    const minfer_value_desc *v = minfer_kit_input(n, 2);
    if (!q || !kt || !v)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs Q, KT and V");
    if ((q->dtype && q->dtype != MINFER_DTYPE_FLOAT) || (kt->dtype && kt->dtype != q->dtype) ||
        (v->dtype && v->dtype != q->dtype))
        return cpu_decline(p, "only float");
    float *scale = cpu_state(p, sizeof *scale);
    if (!scale)
        return MINFER_ERR_NOMEM;
    *scale = cpu_attr_float(p, "scale", 1.0f);
    if (p->prep && kt->rank >= 2 && kt->dims[kt->rank - 1] >= 0 && q->rank >= 2 &&
        q->dims[q->rank - 2] >= 0)
        p->prep->workspace_bytes = (size_t)attn_slots(p->ctx) * (size_t)q->dims[q->rank - 2] *
                                   (size_t)kt->dims[kt->rank - 1] * sizeof(float);
    return MINFER_OK;
}

/* Strides of a [lead..., r, c] tensor's leading axes aligned to brank axes. */
static void lead_strides(const minfer_tensor_view *t, int brank, size_t inner, int64_t *out) {
    int lead = t->rank - 2;
    int64_t stride = (int64_t)inner;
    for (int d = brank - 1; d >= 0; d--) {
        int td = d - (brank - lead);
        int64_t dim = td >= 0 ? t->dims[td] : 1;
        out[d] = dim == 1 ? 0 : stride;
        stride *= dim;
    }
}

minfer_status cpu_compute_attention(const cpu_exec *e) {
    const minfer_tensor_view *q = cpu_input(e, 0), *kt = cpu_input(e, 1), *v = cpu_input(e, 2),
                             *m = cpu_input(e, 3);
    attn_job j;
    memset(&j, 0, sizeof j);
    if (!q || !kt || !v || q->rank < 2 || kt->rank < 2 || v->rank < 2)
        return cpu_fail(e, MINFER_ERR_SHAPE, "Q, KT and V need rank >= 2");
    if (q->dtype != MINFER_DTYPE_FLOAT || kt->dtype != q->dtype || v->dtype != q->dtype ||
        (m && m->dtype != q->dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "inputs must be float");
    j.sq = (size_t)q->dims[q->rank - 2];
    j.d = (size_t)q->dims[q->rank - 1];
    j.sk = (size_t)kt->dims[kt->rank - 1];
    j.dv = (size_t)v->dims[v->rank - 1];
    if ((size_t)kt->dims[kt->rank - 2] != j.d || (size_t)v->dims[v->rank - 2] != j.sk)
        return cpu_fail(e, MINFER_ERR_SHAPE, "Q, KT and V inner dimensions do not match");
    /* Leading axes broadcast as in MatMul. */
    int32_t br = 0;
    int64_t bd[CPU_MAX_RANK];
    if (cpu_broadcast_shape(q->rank - 2, q->dims, kt->rank - 2, kt->dims, &br, bd) ||
        cpu_broadcast_shape(br, bd, v->rank - 2, v->dims, &br, bd))
        return cpu_fail(e, MINFER_ERR_SHAPE, "leading dimensions do not broadcast");
    j.brank = br;
    memcpy(j.bdims, bd, sizeof bd);
    lead_strides(q, br, j.sq * j.d, j.qs);
    lead_strides(kt, br, j.d * j.sk, j.ks);
    lead_strides(v, br, j.sk * j.dv, j.vs);
    if (m) {
        /* The mask broadcasts to [lead..., Sq, Sk] without growing it. */
        minfer_tensor_view mm = *m;
        if (mm.rank > br + 2)
            return cpu_fail(e, MINFER_ERR_SHAPE, "mask has a higher rank than the scores");
        int pad = br + 2 - mm.rank;
        int64_t full[CPU_MAX_RANK + 2];
        for (int d = 0; d < br + 2; d++)
            full[d] = d < pad ? 1 : mm.dims[d - pad];
        for (int d = 0; d < br; d++)
            if (full[d] != 1 && full[d] != bd[d])
                return cpu_fail(e, MINFER_ERR_SHAPE, "mask does not broadcast to the scores");
        if ((full[br] != 1 && (size_t)full[br] != j.sq) ||
            (full[br + 1] != 1 && (size_t)full[br + 1] != j.sk))
            return cpu_fail(e, MINFER_ERR_SHAPE, "mask does not broadcast to the scores");
        mm.rank = br + 2;
        memcpy(mm.dims, full, (size_t)(br + 2) * sizeof full[0]);
        j.mcol = full[br + 1] == 1 ? 0 : 1;
        j.mrow = full[br] == 1 ? 0 : (size_t)full[br + 1];
        lead_strides(&mm, br, (size_t)(full[br] * full[br + 1]), j.ms);
        j.mask = cpu_data(m);
    }
    int64_t od[CPU_MAX_RANK];
    memcpy(od, bd, (size_t)br * sizeof bd[0]);
    od[br] = (int64_t)j.sq;
    od[br + 1] = (int64_t)j.dv;
    void *y;
    minfer_status st = cpu_output(e, 0, q->dtype, br + 2, od, &y);
    if (st)
        return st;
    size_t batches = (size_t)minfer_kit_numel(br, bd);
    if (!batches || !j.sq || !j.dv)
        return MINFER_OK;
    size_t slots = (size_t)attn_slots(e->ctx), need = slots * j.sq * j.sk * sizeof(float);
    if (e->args->workspace_bytes < need || (need && !e->args->workspace))
        return cpu_fail(e, MINFER_ERR_RUNTIME, "workspace of %zu bytes, %zu needed",
                        e->args->workspace_bytes, need);
    j.ctx = e->ctx;
    j.q = cpu_data(q);
    j.kt = cpu_data(kt);
    j.v = cpu_data(v);
    j.y = y;
    j.work = e->args->workspace;
    j.scale = *(const float *)e->state;
    j.batches = batches;
    if (batches == 1) { /* one block: let the GEMMs use the threads */
        attn_batch(&j, 0, j.work, 1);
        return MINFER_OK;
    }
    j.per_slot = (batches + slots - 1) / slots;
    cpu_parallel(e->ctx, slots, 1, attn_range, &j);
    return MINFER_OK;
}

/* ---- RotaryEmbedding ---------------------------------------------------------- */

typedef struct rot_job {
    const float *x, *c, *s;
    float *y;
    size_t d, h;
    int lead;                                     /* X's axes before the last */
    int64_t dims[CPU_MAX_RANK];                   /* those axes */
    size_t cst[CPU_MAX_RANK], sst[CPU_MAX_RANK];  /* Cos and Sin strides over them (0: broadcast) */
    size_t ccol, scol;                            /* their last-axis strides (0 or 1) */
} rot_job;

/* Rows [b, e) of X (its last axis): the two halves rotated, each as the
 * pattern computes it, X * Cos + Concat(-x2, x1) * Sin. */
static void rot_range(void *arg, size_t b, size_t e) {
    const rot_job *j = arg;
    for (size_t r = b; r < e; r++) {
        size_t rem = r, co = 0, so = 0;
        for (int a = j->lead - 1; a >= 0; a--) {
            size_t idx = rem % (size_t)j->dims[a];
            rem /= (size_t)j->dims[a];
            co += idx * j->cst[a];
            so += idx * j->sst[a];
        }
        const float *restrict x = j->x + r * j->d, *restrict c = j->c + co,
                              *restrict s = j->s + so;
        float *restrict y = j->y + r * j->d;
        size_t h = j->h;
        if (j->ccol && j->scol) { /* Cos and Sin rows of D: contiguous, vectorized */
            for (size_t i = 0; i < h; i++) {
                float a = x[i] * c[i], m = -x[i + h] * s[i];
                y[i] = a + m;
            }
            for (size_t i = h; i < j->d; i++) {
                float a = x[i] * c[i], m = x[i - h] * s[i];
                y[i] = a + m;
            }
            continue;
        }
        size_t cc = j->ccol, sc = j->scol;
        for (size_t i = 0; i < h; i++) {
            float a = x[i] * c[i * cc], m = -x[i + h] * s[i * sc];
            y[i] = a + m;
        }
        for (size_t i = h; i < j->d; i++) {
            float a = x[i] * c[i * cc], m = x[i - h] * s[i * sc];
            y[i] = a + m;
        }
    }
}

/* Strides of t (right-aligned into X's rank) over X's leading axes, 0
 * where t broadcasts, and over the last axis into *col; -1 when t does not
 * broadcast to X without growing it. */
static int rot_strides(const minfer_tensor_view *t, const minfer_tensor_view *x, size_t *st,
                       size_t *col) {
    if (t->rank > x->rank)
        return -1;
    int pad = x->rank - t->rank;
    size_t stride = 1;
    for (int a = x->rank - 1; a >= 0; a--) {
        int64_t td = a >= pad ? t->dims[a - pad] : 1;
        if (td != 1 && td != x->dims[a])
            return -1;
        size_t s = td == 1 ? 0 : stride;
        if (a == x->rank - 1)
            *col = s ? 1 : 0;
        else
            st[a] = s;
        stride *= (size_t)td;
    }
    return 0;
}

minfer_status cpu_prepare_rotary(cpu_prep *p) {
    const minfer_node_desc *n = p->node;
    if (!minfer_kit_input(n, 0) || !minfer_kit_input(n, 1) || !minfer_kit_input(n, 2))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs inputs X, Cos and Sin");
    return MINFER_OK;
}

minfer_status cpu_compute_rotary(const cpu_exec *e) {
    const minfer_tensor_view *x = cpu_input(e, 0), *c = cpu_input(e, 1), *s = cpu_input(e, 2);
    rot_job j;
    memset(&j, 0, sizeof j);
    if (!x || !c || !s || x->dtype != MINFER_DTYPE_FLOAT || c->dtype != x->dtype ||
        s->dtype != x->dtype)
        return cpu_fail(e, MINFER_ERR_TYPE, "X, Cos and Sin must be float");
    if (x->rank < 1 || x->dims[x->rank - 1] % 2 != 0)
        return cpu_fail(e, MINFER_ERR_SHAPE, "X needs an even last dimension (rank %d)",
                        (int)x->rank);
    if (rot_strides(c, x, j.cst, &j.ccol) || rot_strides(s, x, j.sst, &j.scol))
        return cpu_fail(e, MINFER_ERR_SHAPE, "Cos and Sin must broadcast to X without growing it");
    void *y;
    minfer_status st = cpu_output(e, 0, x->dtype, x->rank, x->dims, &y);
    if (st)
        return st;
    j.d = (size_t)x->dims[x->rank - 1];
    j.h = j.d / 2;
    j.lead = x->rank - 1;
    memcpy(j.dims, x->dims, (size_t)j.lead * sizeof j.dims[0]);
    size_t rows = (size_t)minfer_kit_numel(j.lead, x->dims);
    if (!rows || !j.d)
        return MINFER_OK;
    j.x = cpu_data(x);
    j.c = cpu_data(c);
    j.s = cpu_data(s);
    j.y = y;
    cpu_parallel(e->ctx, rows, (16384 + j.d - 1) / j.d, rot_range, &j);
    return MINFER_OK;
}
