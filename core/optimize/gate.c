/*
 * The fusions' gate: a fusion is kept only when some provider of the
 * session runs the node it makes (declared in passes.h).
 *
 * The optimizer's fusions are provider-agnostic rewrites into the minfer
 * domain, but a session's provider list need not run every fused op: with
 * `--providers opencl` alone a minfer:RMSNormalization that no provider
 * runs would refuse the whole session, although every op of the pattern
 * it replaced runs there. So a fusion asks before it commits:
 *
 *  1. mf_opt_fuse_save(o, i) before the fusion edits node i in place
 *     (the last node of its pattern, which becomes the fused node; any
 *     other node it edits in place is saved too): a copy of the node as it
 *     is (name, op, inputs, outputs and attributes);
 *  2. the fusion edits node i (inputs, op, attributes), and kills nothing
 *     yet;
 *  3. mf_opt_fuse_keep(o, i) describes node i as the providers will see it
 *     (minfer_node_desc: types and exactly known dims from the analysis, -1
 *     for symbolic ones, constants' data, the node itself for the
 *     attribute accessors) and asks the session's gate (mf_optimize_gated).
 *     Yes: the copy is dropped and the fusion goes on (kills its other
 *     nodes).
 *     No: node i is put back as it was and the pattern stays unfused
 *     (counted in the report's `unfused`); the caller logs the providers'
 *     reasons. Without a gate (mf_optimize: minfer optimize, compile,
 *     no session, no providers) every fusion is kept, as before.
 *
 * Values a fusion added before it asked (a new constant) stay in the graph
 * unread and go with the unread initializers at the end. The copies live in
 * o->saved until mf_opt_fuse_keep or the end of mf_optimize
 * (mf_opt_fuse_free), so a fusion that fails half way leaks nothing. A
 * node with a tensor or graph attribute is not copied (no fused op's last
 * node has one): that fusion is kept without asking, as before the gate.
 */
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"
#include "optimize/passes.h"

static void clear_node(mf_node *n) {
    free(n->name);
    free(n->op_type);
    free(n->domain);
    free(n->inputs);
    free(n->outputs);
    for (size_t a = 0; a < n->n_attrs; a++)
        mf_attr_clear(&n->attrs[a]);
    free(n->attrs);
    memset(n, 0, sizeof *n);
}

void mf_opt_fuse_free(mf_opt *o) {
    for (int k = 0; k < o->n_saved; k++)
        clear_node(&o->saved[k]);
    o->n_saved = 0;
}

/* Copies an attribute of a plain type (numbers, strings and their lists);
 * 0 for a tensor or graph attribute or out of memory. */
static int copy_attr(const mf_attr *src, mf_attr *dst) {
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    dst->f = src->f;
    dst->i = src->i;
    dst->count = src->count;
    dst->s_len = src->s_len;
    if (!(dst->name = mf_strdup(src->name)))
        return 0;
    switch (src->type) {
    case MINFER_ATTR_FLOAT:
    case MINFER_ATTR_INT:
        return 1;
    case MINFER_ATTR_STRING:
        if (!(dst->s = mf_malloc(src->s_len + 1)))
            return 0;
        memcpy(dst->s, src->s, src->s_len + 1);
        return 1;
    case MINFER_ATTR_FLOATS:
        if (!(dst->floats = mf_malloc((src->count + 1) * sizeof *dst->floats)))
            return 0;
        if (src->count)
            memcpy(dst->floats, src->floats, src->count * sizeof *dst->floats);
        return 1;
    case MINFER_ATTR_INTS:
        if (!(dst->ints = mf_malloc((src->count + 1) * sizeof *dst->ints)))
            return 0;
        if (src->count)
            memcpy(dst->ints, src->ints, src->count * sizeof *dst->ints);
        return 1;
    case MINFER_ATTR_STRINGS:
        if (!(dst->strings = mf_calloc(src->count + 1, sizeof *dst->strings)))
            return 0;
        for (size_t k = 0; k < src->count; k++)
            if (!(dst->strings[k] = mf_strdup(src->strings[k] ? src->strings[k] : "")))
                return 0;
        return 1;
    default:
        return 0;
    }
}

static int copy_ints(int **dst, const int *src, size_t n) {
    if (!(*dst = mf_malloc((n + 1) * sizeof **dst)))
        return 0;
    if (n)
        memcpy(*dst, src, n * sizeof **dst);
    return 1;
}

/* 1 for the attribute types copy_attr copies. */
static int plain_attr(int type) {
    return type == MINFER_ATTR_FLOAT || type == MINFER_ATTR_INT || type == MINFER_ATTR_STRING ||
           type == MINFER_ATTR_FLOATS || type == MINFER_ATTR_INTS || type == MINFER_ATTR_STRINGS;
}

minfer_status mf_opt_fuse_save(mf_opt *o, int i) {
    if (!o->gate)
        return MINFER_OK; /* nobody to ask: nothing to put back */
    const mf_node *n = &o->g->nodes[i];
    if (o->n_saved == (int)(sizeof o->saved / sizeof o->saved[0]))
        return mf_error(MINFER_ERR_LIMIT, "%s: optimizer: more than %d nodes saved for one "
                        "fusion", o->errctx, o->n_saved);
    for (size_t a = 0; a < n->n_attrs; a++)
        if (!plain_attr(n->attrs[a].type)) {
            /* A tensor or graph attribute (no fused op's last node has
             * one): this fusion cannot be put back, so it is not asked
             * about and stays as before the gate. */
            o->save_failed = 1;
            return MINFER_OK;
        }
    mf_node *c = &o->saved[o->n_saved];
    memset(c, 0, sizeof *c);
    c->opset = n->opset;
    c->n_inputs = n->n_inputs;
    c->n_outputs = n->n_outputs;
    c->n_implicit = n->n_implicit;
    int ok = (c->name = mf_strdup(n->name ? n->name : "")) &&
             (c->op_type = mf_strdup(n->op_type)) &&
             (c->domain = mf_strdup(n->domain ? n->domain : "")) &&
             copy_ints(&c->inputs, n->inputs, n->n_inputs) &&
             copy_ints(&c->outputs, n->outputs, n->n_outputs) &&
             (c->attrs = mf_calloc(n->n_attrs + 1, sizeof *c->attrs));
    for (size_t a = 0; ok && a < n->n_attrs; a++) {
        ok = copy_attr(&n->attrs[a], &c->attrs[a]);
        c->n_attrs = a + 1; /* a half-made copy is cleared with the rest */
    }
    if (!ok) {
        clear_node(c);
        return mf_opt_oom(o);
    }
    o->saved_at[o->n_saved++] = i;
    return MINFER_OK;
}

/* One value as the providers will see it at placement: the analysis' type
 * and exactly known dims (symbolic ones -1), an initializer's data. */
static void describe_value(mf_opt *o, int v, minfer_value_desc *d) {
    memset(d, 0, sizeof *d);
    d->rank = -1;
    if (v < 0)
        return;
    const mf_value *val = &o->g->values[v];
    const mf_vinfo *vi = mf_opt_info(o, v);
    d->name = val->name;
    d->kind = val->kind;
    d->dtype = vi->dtype ? vi->dtype : val->dtype;
    d->rank = vi->rank;
    for (int k = 0; k < MINFER_MAX_RANK; k++)
        d->dims[k] = k < vi->rank ? vi->s[k] : -1;
    d->present = 1;
    const minfer_tensor *t = mf_opt_const(o, v);
    if (t) {
        d->dtype = t->view.dtype;
        d->rank = t->view.rank;
        memcpy(d->dims, t->view.dims, sizeof d->dims);
        d->const_data = (const char *)t->view.data + t->view.offset;
        d->const_nbytes = t->view.nbytes;
    }
}

int mf_opt_fuse_keep(mf_opt *o, int i) {
    if (!o->gate || o->save_failed) {
        o->save_failed = 0;
        mf_opt_fuse_free(o);
        return 1;
    }
    const mf_node *n = &o->g->nodes[i];
    minfer_value_desc *in = mf_calloc(n->n_inputs + n->n_outputs + 1, sizeof *in);
    if (!in) {
        o->nomem = 1; /* fails the pass when it returns */
        return 0;
    }
    minfer_value_desc *out = in + n->n_inputs;
    for (size_t k = 0; k < n->n_inputs; k++)
        describe_value(o, n->inputs[k], &in[k]);
    for (size_t k = 0; k < n->n_outputs; k++)
        describe_value(o, n->outputs[k], &out[k]);
    minfer_node_desc desc;
    mf_node_desc_init(&desc, n, in, out);
    char why[1024] = "";
    int yes = o->gate->supports(o->gate->user, &desc, why, sizeof why);
    free(in);
    if (yes) {
        mf_opt_fuse_free(o);
        return 1;
    }
    /* Put the saved nodes back, in reverse order of saving. */
    for (int k = o->n_saved - 1; k >= 0; k--) {
        int at = o->saved_at[k];
        clear_node(&o->g->nodes[at]);
        o->g->nodes[at] = o->saved[k];
        memset(&o->saved[k], 0, sizeof o->saved[k]);
    }
    o->n_saved = 0;
    if (o->ctx->report && !o->fuse_optional)
        o->ctx->report->unfused++;
    return 0;
}
