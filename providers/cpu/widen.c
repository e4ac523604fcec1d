/*
 * float16 and bfloat16 through the float32 kernels, as ONNX Runtime runs a
 * half-precision node that has no half kernel on a CPU (its
 * InsertCastTransformer puts a Cast to float before and a Cast back after
 * the node): every op the provider computes in float takes the two 2-byte
 * float types, one mechanism for all of them rather than a copy per kernel.
 *
 * A node is widened when its main element type (input 0, else output 0) is
 * float16 or bfloat16 and its kernel's type mask lacks that type but has
 * float (provider.c asks cpu_widen_wanted). Then:
 *   1. prepare copies the node's desc with every float16/bfloat16 input and
 *      output typed float, converts the half constant inputs (weights) to
 *      float once, runs the float kernel's prepare on that desc, and adds to
 *      the kernel's workspace room for the widened run-time inputs and the
 *      outputs. The host keeps its half copy of a constant (no
 *      const_packed): the run's input checks read its view.
 *   2. execute widens each half input into the workspace, runs the float
 *      kernel on views of the workspace, and rounds each half output back
 *      to its type, to nearest even (minfer_float_to_half/_bf16). Values of
 *      other types (indices, bool, a float32 output such as
 *      LayerNormalization's stash-typed mean) pass through untouched.
 *   3. An output whose shape the host could not infer is sized by the
 *      kernel (cpu_output calls cpu_widen_alloc): its float copy is
 *      allocated then, and the host's half output after the kernel ran.
 *      When the plan's shapes were not concrete at prepare, the float
 *      copies of inputs and outputs are allocated per run instead.
 * Data-movement ops (Reshape, Transpose, Gather, Concat, Slice, ...) move
 * 2-byte elements directly: their masks hold the half types, so they never
 * come here.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define WIDEN_ALIGN 64u
#define WIDEN_VIEWS 8

struct cpu_widen {
    const cpu_kernel *k;
    minfer_node_desc node;   /* the node as the float kernel sees it */
    minfer_value_desc *in;   /* node.n_inputs descs */
    minfer_value_desc *out;  /* node.n_outputs descs */
    int32_t *in_type;        /* the half type of a widened input, else 0 */
    int32_t *out_type;       /* the same for outputs */
    float **consts;          /* a widened constant input, converted once, or NULL */
    size_t inner_ws;         /* the kernel's workspace, ahead of ours */
    void *op_state;          /* the kernel's prepare's */
};

/* One run's float copies. */
typedef struct cpu_wrun {
    const cpu_widen *w;
    const minfer_exec_args *outer;
    minfer_tensor_view *outs;    /* the views the kernel writes */
    void **owned;                /* n_outputs: float copies allocated by cpu_widen_alloc */
} cpu_wrun;

static int is_half(int32_t t) {
    return t == MINFER_DTYPE_FLOAT16 || t == MINFER_DTYPE_BFLOAT16;
}

int cpu_widen_wanted(const cpu_kernel *k, int32_t main_dtype) {
    return is_half(main_dtype) && !(k->types & CPU_T(main_dtype)) &&
           (k->types & CPU_T(MINFER_DTYPE_FLOAT));
}

static size_t align_up(size_t n) {
    return n > SIZE_MAX - WIDEN_ALIGN ? SIZE_MAX : (n + WIDEN_ALIGN - 1) & ~(size_t)(WIDEN_ALIGN - 1);
}

/* Elements of a shape with every dim known, or -1. */
static int64_t known_numel(int32_t rank, const int64_t *dims) {
    if (rank < 0)
        return -1;
    return minfer_kit_numel(rank, dims);
}

typedef struct conv_job {
    const void *src;
    void *dst;
    int32_t half; /* the 2-byte type */
    int to_float;
} conv_job;

static void conv_range(void *arg, size_t begin, size_t end) {
    const conv_job *j = arg;
    if (j->to_float) {
        const uint16_t *s = j->src;
        float *d = j->dst;
        if (j->half == MINFER_DTYPE_FLOAT16)
            for (size_t i = begin; i < end; i++)
                d[i] = minfer_half_to_float(s[i]);
        else
            for (size_t i = begin; i < end; i++)
                d[i] = minfer_bf16_to_float(s[i]);
    } else {
        const float *s = j->src;
        uint16_t *d = j->dst;
        if (j->half == MINFER_DTYPE_FLOAT16)
            for (size_t i = begin; i < end; i++)
                d[i] = minfer_float_to_half(s[i]);
        else
            for (size_t i = begin; i < end; i++)
                d[i] = minfer_float_to_bf16(s[i]);
    }
}

static void convert(const cpu_ctx *ctx, int32_t half, int to_float, const void *src, void *dst,
                    size_t n) {
    conv_job j = {src, dst, half, to_float};
    if (ctx)
        cpu_parallel(ctx, n, 1u << 15, conv_range, &j);
    else
        conv_range(&j, 0, n);
}

void cpu_widen_free(cpu_widen *w) {
    if (!w)
        return;
    free(w->op_state);
    for (size_t i = 0; w->consts && i < w->node.n_inputs; i++)
        free(w->consts[i]);
    free(w->consts);
    free(w->in);
    free(w->out);
    free(w->in_type);
    free(w->out_type);
    free(w);
}

/* Builds the float view of the node (descs and converted constants). */
static minfer_status widen_desc(cpu_ctx *ctx, const cpu_kernel *k, const minfer_node_desc *node,
                                cpu_widen **out) {
    size_t ni = node->n_inputs, no = node->n_outputs;
    cpu_widen *w = cpu_calloc(ctx, 1, sizeof *w);
    if (!w)
        return MINFER_ERR_NOMEM;
    w->k = k;
    w->in = cpu_calloc(ctx, ni ? ni : 1, sizeof *w->in);
    w->out = cpu_calloc(ctx, no ? no : 1, sizeof *w->out);
    w->in_type = cpu_calloc(ctx, ni ? ni : 1, sizeof *w->in_type);
    w->out_type = cpu_calloc(ctx, no ? no : 1, sizeof *w->out_type);
    w->consts = cpu_calloc(ctx, ni ? ni : 1, sizeof *w->consts);
    if (!w->in || !w->out || !w->in_type || !w->out_type || !w->consts)
        goto nomem;
    size_t stride = minfer_kit_desc_stride(node);
    size_t copy = stride < sizeof *w->in ? stride : sizeof *w->in;
    for (size_t i = 0; i < ni; i++) {
        minfer_value_desc *d = &w->in[i];
        memcpy(d, (const char *)node->inputs + i * stride, copy);
        if (!d->present || d->kind != MINFER_VALUE_TENSOR || !is_half(d->dtype))
            continue;
        w->in_type[i] = d->dtype;
        d->dtype = MINFER_DTYPE_FLOAT;
        if (d->const_data) {
            size_t n = d->const_nbytes / 2;
            w->consts[i] = cpu_malloc(ctx, n * sizeof(float));
            if (!w->consts[i])
                goto nomem;
            convert(NULL, w->in_type[i], 1, d->const_data, w->consts[i], n);
            d->const_data = w->consts[i];
            d->const_nbytes = n * sizeof(float);
        }
    }
    for (size_t i = 0; i < no; i++) {
        minfer_value_desc *d = &w->out[i];
        memcpy(d, (const char *)node->outputs + i * stride, copy);
        if (d->kind == MINFER_VALUE_TENSOR && is_half(d->dtype)) {
            w->out_type[i] = d->dtype;
            d->dtype = MINFER_DTYPE_FLOAT;
        }
    }
    w->node = *node;
    w->node.struct_size = sizeof w->node;
    w->node.inputs = w->in;
    w->node.outputs = w->out;
    w->node.value_desc_size = sizeof *w->in;
    *out = w;
    return MINFER_OK;
nomem:
    cpu_widen_free(w);
    return MINFER_ERR_NOMEM;
}

/* Our workspace: the float copies of the run-time half inputs and the half
 * outputs, each aligned; SIZE_MAX when a shape is not known. */
static size_t widen_bytes(const cpu_widen *w, const minfer_tensor_view *in,
                          const minfer_tensor_view *out, size_t view_stride) {
    size_t total = 0;
    for (size_t i = 0; i < w->node.n_inputs + w->node.n_outputs; i++) {
        int is_in = i < w->node.n_inputs;
        size_t j = is_in ? i : i - w->node.n_inputs;
        if (!(is_in ? w->in_type[j] && !w->consts[j] : w->out_type[j]))
            continue;
        if (!is_in && !minfer_kit_output_wanted(&w->node, j))
            continue;
        int32_t rank;
        const int64_t *dims;
        if (in || out) {
            const minfer_tensor_view *v = (const minfer_tensor_view *)(const void *)(
                (const char *)(is_in ? in : out) + j * view_stride);
            rank = v->rank;
            dims = v->dims;
        } else {
            const minfer_value_desc *d = is_in ? &w->in[j] : &w->out[j];
            rank = d->rank;
            dims = d->dims;
        }
        if (is_in && rank < 0)
            continue; /* omitted */
        int64_t n = known_numel(rank, dims);
        if (n < 0 || (uint64_t)n > SIZE_MAX / 8)
            return SIZE_MAX;
        size_t b = align_up((size_t)n * sizeof(float));
        if (total > SIZE_MAX - b)
            return SIZE_MAX;
        total += b;
    }
    return total;
}

minfer_status cpu_widen_prepare(cpu_ctx *ctx, const cpu_kernel *k, const minfer_node_desc *node,
                                minfer_node_prep *prep, cpu_widen **out, char *why,
                                size_t why_size) {
    *out = NULL;
    cpu_widen *w = NULL;
    minfer_status st = widen_desc(ctx, k, node, &w);
    if (st != MINFER_OK) {
        minfer_kit_decline(why, why_size, node->op_type, "out of memory widening to float");
        return st;
    }
    if (!k->prepare) {
        *out = w;
        return MINFER_OK;
    }
    cpu_prep p = {ctx, &w->node, prep, k->since_version, why, why_size, NULL, {0}};
    st = k->prepare(&p);
    if (!prep || st != MINFER_OK) {
        cpu_state_free(&p);
        cpu_widen_free(w);
        return st;
    }
    w->op_state = p.state;
    w->inner_ws = align_up(prep->workspace_bytes);
    size_t ours = widen_bytes(w, NULL, NULL, 0);
    if (ours != SIZE_MAX && w->inner_ws <= SIZE_MAX - ours)
        prep->workspace_bytes = w->inner_ws + ours;
    /* The kernel's in-place hints were for float buffers; the host's are
     * half ones the kernel never sees. */
    for (size_t i = 0; prep->output_inplace && i < node->n_outputs; i++)
        prep->output_inplace[i] = -1;
    *out = w;
    return MINFER_OK;
}

/* An output of unknown shape, sized by the kernel (cpu_output). A widened
 * one gets a float copy of its own; any other is the host's, allocated
 * there and copied into the kernel's view. */
minfer_status cpu_widen_alloc(const cpu_exec *e, size_t i, int32_t rank, const int64_t *dims) {
    cpu_wrun *r = e->wrun;
    minfer_tensor_view *o = &r->outs[i];
    if (!r->w->out_type[i]) {
        minfer_tensor_view *host = minfer_kit_view_output(r->outer, i);
        if (host->dtype == 0)
            host->dtype = o->dtype;
        minfer_status st = e->ctx->api->alloc_output(r->outer->run, i, rank, dims);
        if (st == MINFER_OK)
            *o = *host;
        return st;
    }
    size_t bytes;
    if (minfer_dims_bytes(MINFER_DTYPE_FLOAT, dims, rank, &bytes) != MINFER_OK)
        return cpu_fail(e, MINFER_ERR_LIMIT, "output %zu has more bytes than fit in memory", i);
    free(r->owned[i]);
    r->owned[i] = cpu_malloc(e->ctx, bytes);
    if (!r->owned[i])
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory for output %zu in float", i);
    o->rank = rank;
    memcpy(o->dims, dims, (size_t)rank * sizeof *dims);
    o->dtype = MINFER_DTYPE_FLOAT;
    o->data = r->owned[i];
    o->offset = 0;
    o->nbytes = bytes;
    return MINFER_OK;
}

minfer_status cpu_widen_execute(cpu_ctx *ctx, const cpu_widen *w,
                                const minfer_exec_args *args) {
    size_t ni = args->n_inputs, no = args->n_outputs;
    cpu_exec outer = {ctx, NULL, args, NULL};
    if (ni != w->node.n_inputs || no != w->node.n_outputs)
        return cpu_fail(&outer, MINFER_ERR_RUNTIME, "run has %zu inputs and %zu outputs, the "
                        "node %zu and %zu", ni, no, w->node.n_inputs, w->node.n_outputs);
    minfer_status st = MINFER_ERR_NOMEM;
    /* The views of a node of few values live here: a run of a plan whose
     * shapes were concrete allocates nothing (tests/test_no_alloc.c). */
    minfer_tensor_view ins_fix[WIDEN_VIEWS], outs_fix[WIDEN_VIEWS];
    void *owned_fix[WIDEN_VIEWS] = {0};
    minfer_tensor_view *ins = ni <= WIDEN_VIEWS ? ins_fix : cpu_calloc(ctx, ni, sizeof *ins);
    minfer_tensor_view *outs = no <= WIDEN_VIEWS ? outs_fix : cpu_calloc(ctx, no, sizeof *outs);
    void **owned = no <= WIDEN_VIEWS ? owned_fix : cpu_calloc(ctx, no, sizeof *owned);
    unsigned char *scratch = NULL;
    if (!ins || !outs || !owned) {
        cpu_fail(&outer, st, "out of memory");
        goto done;
    }
    size_t vs = minfer_kit_view_stride(args);
    size_t copy = vs < sizeof *ins ? vs : sizeof *ins;
    for (size_t i = 0; i < ni; i++)
        memcpy(&ins[i], minfer_kit_view_input(args, i), copy);
    for (size_t i = 0; i < no; i++)
        memcpy(&outs[i], minfer_kit_view_output(args, i), copy);
    /* Our part of the workspace, or memory of this run's when the plan's
     * shapes were not concrete at prepare. */
    size_t need = widen_bytes(w, args->inputs, args->outputs, vs);
    unsigned char *ws;
    if (need == SIZE_MAX) {
        /* An output of unknown shape: it is sized by cpu_widen_alloc;
         * the inputs are counted alone. */
        for (size_t i = 0; i < no; i++)
            if (w->out_type[i] && known_numel(outs[i].rank, outs[i].dims) < 0)
                outs[i].rank = -1, outs[i].data = NULL;
        need = 0;
        for (size_t i = 0; i < ni; i++)
            if (w->in_type[i] && !w->consts[i] && ins[i].rank >= 0)
                need += align_up((size_t)minfer_kit_numel(ins[i].rank, ins[i].dims) * 4u);
        for (size_t i = 0; i < no; i++)
            if (w->out_type[i] && outs[i].rank >= 0 && minfer_kit_output_wanted(&w->node, i))
                need += align_up((size_t)minfer_kit_numel(outs[i].rank, outs[i].dims) * 4u);
    }
    if (args->workspace && args->workspace_bytes >= w->inner_ws &&
        args->workspace_bytes - w->inner_ws >= need) {
        ws = (unsigned char *)args->workspace + w->inner_ws;
    } else {
        scratch = cpu_malloc(ctx, need ? need : 1);
        if (!scratch) {
            cpu_fail(&outer, st, "out of memory for the float copies (%zu bytes)", need);
            goto done;
        }
        ws = scratch;
    }
    for (size_t i = 0; i < ni; i++) {
        if (!w->in_type[i] || ins[i].rank < 0)
            continue;
        if (ins[i].dtype != w->in_type[i]) {
            st = cpu_fail(&outer, MINFER_ERR_TYPE, "input %zu is %s, the node's is %s", i,
                          minfer_elem_name(ins[i].dtype), minfer_elem_name(w->in_type[i]));
            goto done;
        }
        size_t n = (size_t)minfer_kit_numel(ins[i].rank, ins[i].dims);
        ins[i].dtype = MINFER_DTYPE_FLOAT;
        ins[i].offset = 0;
        ins[i].nbytes = n * sizeof(float);
        if (w->consts[i]) {
            if (n * sizeof(float) > w->in[i].const_nbytes) {
                st = cpu_fail(&outer, MINFER_ERR_SHAPE, "constant input %zu changed size", i);
                goto done;
            }
            ins[i].data = w->consts[i];
            continue;
        }
        const minfer_tensor_view *h = minfer_kit_view_input(args, i);
        convert(ctx, w->in_type[i], 1, cpu_data(h), ws, n);
        ins[i].data = ws;
        ws += align_up(n * sizeof(float));
    }
    for (size_t i = 0; i < no; i++) {
        if (!w->out_type[i] || outs[i].rank < 0 || !minfer_kit_output_wanted(&w->node, i))
            continue;
        size_t n = (size_t)minfer_kit_numel(outs[i].rank, outs[i].dims);
        outs[i].dtype = MINFER_DTYPE_FLOAT;
        outs[i].data = ws;
        outs[i].offset = 0;
        outs[i].nbytes = n * sizeof(float);
        ws += align_up(n * sizeof(float));
    }
    minfer_exec_args inner = *args;
    inner.struct_size = sizeof inner;
    inner.node = &w->node;
    inner.inputs = ins;
    inner.outputs = outs;
    inner.workspace = w->inner_ws ? args->workspace : NULL;
    inner.workspace_bytes = w->inner_ws <= args->workspace_bytes ? w->inner_ws : 0;
    inner.tensor_view_size = sizeof *ins;
    cpu_wrun run = {w, args, outs, owned};
    cpu_exec e = {ctx, w->op_state, &inner, &run};
    if ((st = w->k->compute(&e)) != MINFER_OK)
        goto done;
    for (size_t i = 0; i < no; i++) {
        if (!w->out_type[i] || !minfer_kit_output_wanted(args->node, i) || outs[i].rank < 0)
            continue;
        minfer_tensor_view *h = minfer_kit_view_output(args, i);
        if (owned[i]) {
            if (h->dtype == 0)
                h->dtype = w->out_type[i];
            if ((st = ctx->api->alloc_output(args->run, i, outs[i].rank, outs[i].dims)) !=
                MINFER_OK)
                goto done;
        }
        size_t n = (size_t)minfer_kit_numel(outs[i].rank, outs[i].dims);
        if (h->nbytes < n * 2u || (n && !h->data)) {
            st = cpu_fail(&outer, MINFER_ERR_RUNTIME, "output %zu buffer is %zu bytes, %zu "
                          "needed", i, h->nbytes, n * 2u);
            goto done;
        }
        if (n)
            convert(ctx, w->out_type[i], 0, outs[i].data, cpu_data(h), n);
    }
    st = MINFER_OK;
done:
    for (size_t i = 0; owned && i < no; i++)
        free(owned[i]);
    if (owned != owned_fix)
        free(owned);
    if (ins != ins_fix)
        free(ins);
    if (outs != outs_fix)
        free(outs);
    free(scratch);
    return st;
}
