/*
 * The Gradient op of ai.onnx.preview.training, expanded at session build
 * into ordinary nodes by reverse-mode differentiation of the graph.
 *
 * Gradient(xs...) with attributes xs (input names) and y (an output name)
 * outputs dy/dx for each x: the sum over every path from x to y, with the
 * seed dy/dy = 1 (y's shape). The nodes between xs and y are walked in
 * reverse topological order; each differentiable op adds its inputs'
 * contributions as new nodes (a contribution through a broadcast is summed
 * back to the input's shape by minfer:SumToShape), contributions to one
 * value are added, and the Gradient node becomes Identity nodes writing its
 * outputs. The new nodes run on the providers like any others; the three
 * helpers of the minfer domain (OnesLike, ZerosLike, SumToShape) run in the
 * core (control.c).
 *
 * Differentiable: Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid, Tanh,
 * Exp, Log, Sqrt and 2-D MatMul. Anything else between xs and y is an error
 * naming the node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "util/internal.h"

#define TRAINING_DOMAIN "ai.onnx.preview.training"

typedef struct grad_ctx {
    mf_graph *g;
    const char *errctx;
    int *grad; /* per value: its gradient's value, or -1 */
    size_t n_grad;
    unsigned counter;
} grad_ctx;

/* A fresh value named after base. */
static int new_value(grad_ctx *c, const char *base) {
    char name[512];
    do
        snprintf(name, sizeof name, "%s__grad%u", base, c->counter++);
    while (mf_graph_find(c->g, name) >= 0);
    return mf_graph_intern(c->g, name);
}

/* Appends node op(in...) -> a new value; returns the value, or -1. */
static int emit(grad_ctx *c, const char *op, const char *domain, const int *in, size_t n_in,
                const char *base) {
    int out = new_value(c, base);
    if (out < 0)
        return -1;
    int ni = mf_graph_add_node(c->g);
    if (ni < 0)
        return -1;
    mf_node *n = &c->g->nodes[ni];
    n->name = mf_strdup("");
    n->op_type = mf_strdup(op);
    n->domain = mf_strdup(domain);
    n->inputs = mf_malloc((n_in + 1) * sizeof *n->inputs);
    n->outputs = mf_malloc(sizeof *n->outputs);
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs)
        return -1;
    memcpy(n->inputs, in, n_in * sizeof *in);
    n->n_inputs = n_in;
    n->outputs[0] = out;
    n->n_outputs = 1;
    return out;
}

static int emit1(grad_ctx *c, const char *op, int a, const char *base) {
    return emit(c, op, "", &a, 1, base);
}

static int emit2(grad_ctx *c, const char *op, int a, int b, const char *base) {
    int in[2] = {a, b};
    return emit(c, op, "", in, 2, base);
}

static int emit_minfer(grad_ctx *c, const char *op, const int *in, size_t n, const char *base) {
    return emit(c, op, "minfer", in, n, base);
}

/* Adds contribution v to the gradient of x (summed to x's shape). */
static int accumulate(grad_ctx *c, int x, int v, int reduce) {
    const char *base = c->g->values[x].name;
    if (reduce) {
        int in[2] = {v, x};
        if ((v = emit_minfer(c, "SumToShape", in, 2, base)) < 0)
            return -1;
    }
    if (c->grad[x] < 0) {
        c->grad[x] = v;
        return 0;
    }
    int sum = emit2(c, "Add", c->grad[x], v, base);
    if (sum < 0)
        return -1;
    c->grad[x] = sum;
    return 0;
}

/* The contributions of node ni (output gradient gy) to its inputs. Returns
 * 0, -1 out of memory, or 1 for an op it cannot differentiate. */
static int backward(grad_ctx *c, int ni, int gy, const unsigned char *dep) {
    const mf_node *n = &c->g->nodes[ni];
    const char *op = n->op_type;
    int a = n->n_inputs > 0 ? n->inputs[0] : -1, b = n->n_inputs > 1 ? n->inputs[1] : -1;
    int y = n->outputs[0];
    int da = a >= 0 && dep[a], db = b >= 0 && dep[b];
    const char *base = c->g->values[y].name;
    if (n->domain[0] || n->n_outputs != 1)
        return 1;
    if (strcmp(op, "Add") == 0 || strcmp(op, "Sub") == 0) {
        if (da && accumulate(c, a, gy, 1) != 0)
            return -1;
        if (db) {
            int v = op[0] == 'S' ? emit1(c, "Neg", gy, base) : gy;
            if (v < 0 || accumulate(c, b, v, 1) != 0)
                return -1;
        }
        return 0;
    }
    if (strcmp(op, "Mul") == 0) {
        int v;
        if (da && ((v = emit2(c, "Mul", gy, b, base)) < 0 || accumulate(c, a, v, 1) != 0))
            return -1;
        if (db && ((v = emit2(c, "Mul", gy, a, base)) < 0 || accumulate(c, b, v, 1) != 0))
            return -1;
        return 0;
    }
    if (strcmp(op, "Div") == 0) {
        int v;
        if (da && ((v = emit2(c, "Div", gy, b, base)) < 0 || accumulate(c, a, v, 1) != 0))
            return -1;
        if (db) { /* -gy * a / b^2 = -gy * y / b */
            int t = emit2(c, "Mul", gy, y, base);
            if (t < 0 || (t = emit2(c, "Div", t, b, base)) < 0 || (v = emit1(c, "Neg", t, base)) < 0 ||
                accumulate(c, b, v, 1) != 0)
                return -1;
        }
        return 0;
    }
    if (n->n_inputs != 1 && strcmp(op, "MatMul") != 0)
        return 1;
    int v = -1;
    if (strcmp(op, "Identity") == 0)
        v = gy;
    else if (strcmp(op, "Neg") == 0)
        v = emit1(c, "Neg", gy, base);
    else if (strcmp(op, "Exp") == 0)
        v = emit2(c, "Mul", gy, y, base);
    else if (strcmp(op, "Log") == 0)
        v = emit2(c, "Div", gy, a, base);
    else if (strcmp(op, "Sqrt") == 0) { /* gy / (2 y) */
        int t = emit2(c, "Add", y, y, base);
        v = t < 0 ? -1 : emit2(c, "Div", gy, t, base);
    } else if (strcmp(op, "Sigmoid") == 0 || strcmp(op, "Tanh") == 0) {
        /* sigmoid: y (1 - y); tanh: 1 - y^2 */
        int one = emit_minfer(c, "OnesLike", &y, 1, base);
        int t = one < 0 ? -1 : op[0] == 'S' ? emit2(c, "Sub", one, y, base)
                                           : emit2(c, "Mul", y, y, base);
        if (t >= 0 && op[0] == 'S')
            t = emit2(c, "Mul", y, t, base);
        else if (t >= 0)
            t = emit2(c, "Sub", one, t, base);
        v = t < 0 ? -1 : emit2(c, "Mul", gy, t, base);
    } else if (strcmp(op, "Relu") == 0) { /* gy where x > 0 */
        int zero = emit_minfer(c, "ZerosLike", &a, 1, base);
        int mask = zero < 0 ? -1 : emit2(c, "Greater", a, zero, base);
        int in[3] = {mask, gy, zero};
        v = mask < 0 ? -1 : emit(c, "Where", "", in, 3, base);
    } else if (strcmp(op, "MatMul") == 0) {
        /* 2-D: da = gy b^T, db = a^T gy (checked at run time by MatMul) */
        int t;
        if (da && ((t = emit1(c, "Transpose", b, base)) < 0 || (t = emit2(c, "MatMul", gy, t, base)) < 0 ||
                   accumulate(c, a, t, 0) != 0))
            return -1;
        if (db && ((t = emit1(c, "Transpose", a, base)) < 0 || (t = emit2(c, "MatMul", t, gy, base)) < 0 ||
                   accumulate(c, b, t, 0) != 0))
            return -1;
        return 0;
    } else
        return 1;
    if (v < 0 || (da && accumulate(c, a, v, 0) != 0))
        return -1;
    return 0;
}

static minfer_status add_minfer_opset(mf_graph *g, const char *errctx) {
    for (size_t i = 0; i < g->n_opsets; i++)
        if (g->opsets[i].domain && strcmp(g->opsets[i].domain, "minfer") == 0)
            return MINFER_OK;
    mf_opset *o = mf_realloc(g->opsets, (g->n_opsets + 1) * sizeof *o);
    if (!o)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
    g->opsets = o;
    o[g->n_opsets].domain = mf_strdup("minfer");
    if (!o[g->n_opsets].domain)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", errctx);
    o[g->n_opsets++].version = 1;
    return MINFER_OK;
}

/* Expands Gradient node gi. */
static minfer_status expand_one(grad_ctx *c, int gi) {
    mf_graph *g = c->g;
    char lbl[512];
    const mf_node *gn = &g->nodes[gi];
    snprintf(lbl, sizeof lbl, "node '%s' (Gradient)", gn->name[0] ? gn->name : "");
    const mf_attr *xs_a = mf_node_attr(gn, "xs");
    const char *y_name = mf_attr_string(gn, "y", NULL);
    if (!xs_a || xs_a->type != MINFER_ATTR_STRINGS || !y_name)
        return mf_error(MINFER_ERR_MODEL, "%s: %s needs attributes 'xs' (strings) and 'y'",
                        c->errctx, lbl);
    if (xs_a->count == 0 || xs_a->count != gn->n_outputs)
        return mf_error(MINFER_ERR_MODEL, "%s: %s has %zu names in 'xs' but %zu outputs",
                        c->errctx, lbl, xs_a->count, gn->n_outputs);
    int y = mf_graph_find(g, y_name);
    if (y < 0 || g->values[y].producer < 0)
        return mf_error(MINFER_ERR_MODEL, "%s: %s: 'y' = '%s' is not computed by the graph",
                        c->errctx, lbl, y_name);
    size_t nx = xs_a->count, nv = g->n_values, nn = g->n_nodes;
    int *xs = mf_malloc((nx + 1) * sizeof *xs);
    unsigned char *dep = mf_calloc(nv + 1, 1), *need = mf_calloc(nv + 1, 1);
    unsigned char *rel = mf_calloc(nn + 1, 1);
    int *outs = mf_malloc((nx + 1) * sizeof *outs);
    minfer_status st = MINFER_OK;
    if (!xs || !dep || !need || !rel || !outs) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", c->errctx);
        goto done;
    }
    for (size_t k = 0; k < nx; k++) {
        xs[k] = mf_graph_find(g, xs_a->strings[k]);
        if (xs[k] < 0) {
            st = mf_error(MINFER_ERR_MODEL, "%s: %s: 'xs' names '%s', which is not in the graph",
                          c->errctx, lbl, xs_a->strings[k]);
            goto done;
        }
        dep[xs[k]] = 1;
        outs[k] = gn->outputs[k];
    }
    /* Forward: values that depend on an x. Backward: nodes y needs. */
    for (size_t k = 0; k < nn; k++) {
        const mf_node *n = &g->nodes[g->order[k]];
        if (g->order[k] == gi)
            continue;
        int any = 0;
        for (size_t j = 0; j < n->n_inputs; j++)
            any |= n->inputs[j] >= 0 && dep[n->inputs[j]];
        for (size_t o = 0; any && o < n->n_outputs; o++)
            if (n->outputs[o] >= 0)
                dep[n->outputs[o]] = 1;
    }
    need[y] = 1;
    for (size_t k = nn; k-- > 0;) {
        int i = g->order[k];
        const mf_node *n = &g->nodes[i];
        int any = 0;
        for (size_t o = 0; o < n->n_outputs; o++)
            any |= n->outputs[o] >= 0 && need[n->outputs[o]] && dep[n->outputs[o]];
        if (!any || i == gi)
            continue;
        rel[i] = 1;
        for (size_t j = 0; j < n->n_inputs; j++)
            if (n->inputs[j] >= 0)
                need[n->inputs[j]] = 1;
    }
    c->n_grad = nv;
    c->grad = mf_malloc((nv + 1) * sizeof *c->grad);
    if (!c->grad) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", c->errctx);
        goto done;
    }
    for (size_t v = 0; v < nv; v++)
        c->grad[v] = -1;
    if (dep[y] && (c->grad[y] = emit_minfer(c, "OnesLike", &y, 1, g->values[y].name)) < 0) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", c->errctx);
        goto done;
    }
    for (size_t k = nn; k-- > 0;) {
        int i = g->order[k];
        if (!rel[i])
            continue;
        int gy = g->nodes[i].n_outputs ? g->nodes[i].outputs[0] : -1;
        gy = gy >= 0 && (size_t)gy < nv ? c->grad[gy] : -1;
        if (gy < 0)
            continue;
        int r = backward(c, i, gy, dep);
        if (r < 0) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", c->errctx);
            goto done;
        }
        if (r > 0) {
            const mf_node *n = &g->nodes[i];
            st = mf_error(MINFER_ERR_UNSUPPORTED,
                          "%s: %s: cannot differentiate node '%s' (%s%s%s) on the way from xs to "
                          "'%s'",
                          c->errctx, lbl, n->name, n->domain, n->domain[0] ? "." : "",
                          n->op_type, y_name);
            goto done;
        }
    }
    /* The outputs: each x's gradient, zeros where y does not depend on it. */
    int *src = mf_malloc((nx + 1) * sizeof *src);
    if (!src) {
        st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", c->errctx);
        goto done;
    }
    for (size_t k = 0; k < nx; k++) {
        src[k] = c->grad[xs[k]];
        if (src[k] < 0 && (src[k] = emit_minfer(c, "ZerosLike", &xs[k], 1, g->values[xs[k]].name)) < 0) {
            free(src);
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", c->errctx);
            goto done;
        }
    }
    /* The Gradient node becomes Identity(src[0]) -> out[0]; the others get
     * Identity nodes of their own. */
    for (size_t k = 0; k < nx; k++) {
        int ni = k == 0 ? gi : mf_graph_add_node(g);
        if (ni < 0) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", c->errctx);
            break;
        }
        mf_node *n = &g->nodes[ni];
        if (k == 0) {
            for (size_t a = 0; a < n->n_attrs; a++)
                mf_attr_clear(&n->attrs[a]);
            free(n->attrs);
            n->attrs = NULL;
            n->n_attrs = 0;
            free(n->op_type);
            free(n->domain);
            n->op_type = n->domain = NULL;
        } else {
            n->name = mf_strdup("");
            n->inputs = mf_malloc(sizeof *n->inputs);
            n->outputs = mf_malloc(sizeof *n->outputs);
        }
        n->op_type = mf_strdup("Identity");
        n->domain = mf_strdup("");
        if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs) {
            st = mf_error(MINFER_ERR_NOMEM, "%s: out of memory", c->errctx);
            break;
        }
        n->inputs[0] = src[k];
        n->n_inputs = 1;
        n->outputs[0] = outs[k];
        n->n_outputs = 1;
        n->opset = mf_graph_opset(g, "");
    }
    free(src);
done:
    free(c->grad);
    c->grad = NULL;
    free(xs);
    free(dep);
    free(need);
    free(rel);
    free(outs);
    return st;
}

minfer_status mf_expand_gradients(mf_graph *g, const char *errctx) {
    grad_ctx c = {g, errctx, NULL, 0, 0};
    int any = 0;
    minfer_status st;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *n = &g->nodes[i];
        if (strcmp(n->op_type, "Gradient") != 0 || strcmp(n->domain, TRAINING_DOMAIN) != 0)
            continue;
        if (!any && (st = add_minfer_opset(g, errctx)) != MINFER_OK)
            return st;
        any = 1;
        if ((st = expand_one(&c, (int)i)) != MINFER_OK)
            return st;
        /* the order changed: recompute it for the next Gradient */
        if ((st = mf_graph_finalize(g, errctx)) != MINFER_OK)
            return st;
    }
    return MINFER_OK;
}
