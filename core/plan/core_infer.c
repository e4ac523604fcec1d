/*
 * The output kinds and types of the ops the core runs itself (control
 * flow, sequences, optionals; exec/control.c and exec/core_values.c run
 * them), as a plan's inference needs them (plan/build.c), and the
 * subgraphs of a control-flow node.
 */
#include <stdio.h>
#include <string.h>

#include "plan/core_infer.h"

/* The graph attributes of a control-flow op, in mf_core_sub order. */
size_t mf_core_sub_names(const mf_node *n, const char **names) {
    if (is_op(n, "If")) {
        names[0] = "then_branch";
        names[1] = "else_branch";
        return 2;
    }
    if (is_op(n, "Loop") || is_op(n, "Scan") || is_op(n, "SequenceMap")) {
        names[0] = "body";
        return 1;
    }
    return 0;
}

/* Subgraph k of node i: the built session's graph, or the attribute's. */
const mf_graph *mf_core_sub_graph(const minfer_session *s, int i, size_t k) {
    if (s->subs && s->subs[2 * i + k].s)
        return s->subs[2 * i + k].s->g;
    const char *names[2];
    const mf_node *n = &s->g->nodes[i];
    if (k >= mf_core_sub_names(n, names))
        return NULL;
    const mf_attr *a = mf_node_attr(n, names[k]);
    return a && a->type == MINFER_ATTR_GRAPH ? a->g : NULL;
}

static void set_out(minfer_tensor_view *o, int32_t kind, int32_t dtype, int32_t rank) {
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->dtype = dtype;
    o->rank = rank;
    for (int d = 0; d < MINFER_MAX_RANK; d++)
        o->dims[d] = -1;
}

/* What subgraph output k declares. */
static void from_decl(const mf_graph *sg, size_t k, minfer_tensor_view *o) {
    if (!sg || k >= sg->n_outputs) {
        set_out(o, MINFER_VALUE_TENSOR, 0, -1);
        return;
    }
    const mf_value *v = &sg->values[sg->outputs[k]];
    set_out(o, v->kind, v->dtype, -1);
    if (v->kind == MINFER_VALUE_OPTIONAL)
        o->layout = (uint64_t)v->contained;
}

minfer_status mf_core_infer(minfer_session *s, int i, const minfer_tensor_view *in,
                            minfer_tensor_view *out, char *err, size_t err_size) {
    const mf_node *n = &s->g->nodes[i];
    size_t nin = mf_core_formal_inputs(n);
    for (size_t o = 0; o < n->n_outputs; o++)
        set_out(&out[o], MINFER_VALUE_TENSOR, 0, -1);
    if (n->n_outputs == 0)
        return MINFER_OK;
    int32_t dt0 = nin && n->inputs[0] >= 0 ? in[0].dtype : 0;
    int32_t k0 = nin && n->inputs[0] >= 0 ? in[0].kind : MINFER_VALUE_TENSOR;
    if (n->domain[0]) { /* minfer's OnesLike, ZerosLike, SumToShape: the shape of input 0 or 1 */
        size_t like = is_op(n, "SumToShape") ? 1 : 0;
        if (nin <= like || n->inputs[like] < 0) {
            snprintf(err, err_size, "needs %zu inputs", like + 1);
            return MINFER_ERR_MODEL;
        }
        out[0] = in[like];
        out[0].dtype = dt0;
        out[0].data = NULL;
        out[0].nbytes = 0;
        return MINFER_OK;
    }
    if (is_op(n, "If")) {
        for (size_t o = 0; o < n->n_outputs; o++)
            from_decl(mf_core_sub_graph(s, i, 0), o, &out[o]);
    } else if (is_op(n, "Loop") || is_op(n, "Scan")) {
        int loop = is_op(n, "Loop");
        size_t first = loop ? 2 : (n->opset < 9 ? 1 : 0);
        int64_t m = mf_attr_int(n, "num_scan_inputs", 0);
        size_t n_state = loop ? (nin > 2 ? nin - 2 : 0)
                              : (nin >= first + (size_t)(m > 0 ? m : 0) ? nin - first - (size_t)m : 0);
        const mf_graph *sg = mf_core_sub_graph(s, i, 0);
        for (size_t o = 0; o < n->n_outputs; o++) {
            if (o < n_state && n->inputs[first + o] >= 0) {
                set_out(&out[o], in[first + o].kind, in[first + o].dtype, -1);
                out[o].layout = in[first + o].layout;
            }
            else
                from_decl(sg, (loop ? 1 : 0) + o, &out[o]);
        }
    } else if (is_op(n, "SequenceMap")) {
        const mf_graph *sg = mf_core_sub_graph(s, i, 0);
        for (size_t o = 0; o < n->n_outputs; o++) {
            from_decl(sg, o, &out[o]);
            out[o].kind = MINFER_VALUE_SEQUENCE;
        }
    } else if (is_op(n, "SequenceEmpty")) {
        set_out(&out[0], MINFER_VALUE_SEQUENCE, (int32_t)mf_attr_int(n, "dtype", MINFER_DTYPE_FLOAT),
                -1);
    } else if (is_op(n, "SequenceConstruct") || is_op(n, "SequenceInsert") ||
               is_op(n, "SequenceErase") || is_op(n, "SplitToSequence")) {
        set_out(&out[0], MINFER_VALUE_SEQUENCE, dt0, -1);
    } else if (is_op(n, "SequenceAt") || is_op(n, "ConcatFromSequence")) {
        set_out(&out[0], MINFER_VALUE_TENSOR, dt0, -1);
    } else if (is_op(n, "SequenceLength")) {
        set_out(&out[0], MINFER_VALUE_TENSOR, MINFER_DTYPE_INT64, 0);
    } else if (is_op(n, "OptionalHasElement")) {
        set_out(&out[0], MINFER_VALUE_TENSOR, MINFER_DTYPE_BOOL, 0);
    } else if (is_op(n, "Optional")) {
        if (nin && n->inputs[0] >= 0) {
            set_out(&out[0], MINFER_VALUE_OPTIONAL, dt0, -1);
            out[0].layout = (uint64_t)k0;
        } else {
            const mf_attr *a = mf_node_attr(n, "type");
            if (!a || a->type != MF_ATTR_TYPE_PROTO) {
                snprintf(err, err_size, "an Optional with no input needs a 'type' attribute");
                return MINFER_ERR_MODEL;
            }
            set_out(&out[0], MINFER_VALUE_OPTIONAL, (int32_t)(a->i & 0xff), -1);
            out[0].layout = (uint64_t)(a->i >> 8);
        }
    } else if (is_op(n, "OptionalGetElement")) {
        int32_t kind = k0 == MINFER_VALUE_OPTIONAL ? (int32_t)in[0].layout : k0;
        set_out(&out[0], kind, dt0, -1);
    } else {
        /* any other op reading a container: Identity passes it through */
        if (!is_op(n, "Identity")) {
            snprintf(err, err_size, "%s does not take a %s input", n->op_type,
                     k0 == MINFER_VALUE_SEQUENCE ? "sequence" : "optional");
            return MINFER_ERR_UNSUPPORTED;
        }
        set_out(&out[0], k0, dt0, -1);
        out[0].layout = in[0].layout;
    }
    return MINFER_OK;
}
