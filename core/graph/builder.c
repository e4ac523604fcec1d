/*
 * Graph builder.
 *
 * The builder keeps its own record of what was added (names, not value
 * indices) and turns it into a fresh mf_graph each time a session is created
 * from it, so one builder can create many sessions and be changed between
 * them. The add functions check only their arguments; the graph itself
 * (duplicate names, dangling inputs, cycles) is checked when it is
 * materialised, as for a model file:
 *  1. initializers, then inputs, become values (an input that is also an
 *     initializer is an overridable constant, as in ONNX IR >= 4);
 *  2. nodes are added in order, their input and output names interned;
 *  3. outputs are marked;
 *  4. mf_graph_finalize checks producers, sources and cycles.
 */
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "util/internal.h"

#define ERRCTX "<builder>"

typedef struct b_input {
    char *name;
    int32_t dtype;
    int32_t rank;
    int64_t dims[MINFER_MAX_RANK];
    char *dim_names[MINFER_MAX_RANK];
} b_input;

typedef struct b_init {
    char *name;
    minfer_tensor *value;
} b_init;

typedef struct b_node {
    char *op_type;
    char *domain;
    char *name;
    char **inputs;
    size_t n_inputs;
    char **outputs;
    size_t n_outputs;
    mf_attr *attrs;
    size_t n_attrs, cap_attrs;
} b_node;

struct minfer_graph_builder {
    mf_opset *opsets; /* [0] is the default domain */
    size_t n_opsets, cap_opsets;
    b_input *inputs;
    size_t n_inputs, cap_inputs;
    b_init *inits;
    size_t n_inits, cap_inits;
    b_node *nodes;
    size_t n_nodes, cap_nodes;
    char **outputs;
    size_t n_outputs, cap_outputs;
};

/* Makes room for one more element in *arr; 0 on success. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 8;
    if (nc > SIZE_MAX / elem)
        return -1;
    void *p = mf_realloc(*arr, nc * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

static int is_default_domain(const char *d) {
    return !d || !d[0] || strcmp(d, "ai.onnx") == 0;
}

static void free_strv(char **v, size_t n) {
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* A copy of n strings; NULL on OOM (and for n == 0 a valid empty array). */
static char **dup_strv(const char *const *v, size_t n) {
    char **out = mf_calloc(n ? n : 1, sizeof *out);
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!(out[i] = mf_strdup(v[i]))) {
            free_strv(out, i);
            return NULL;
        }
    return out;
}

minfer_status minfer_builder_create(int64_t opset, minfer_graph_builder **out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_create: out is NULL");
    *out = NULL;
    if (opset <= 0)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_builder_create: opset %lld is not a positive version",
                        (long long)opset);
    minfer_graph_builder *b = mf_calloc(1, sizeof *b);
    if (!b || grow((void **)&b->opsets, &b->cap_opsets, 0, sizeof *b->opsets) != 0 ||
        !(b->opsets[0].domain = mf_strdup(""))) {
        minfer_builder_free(b);
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_create: out of memory");
    }
    b->opsets[0].version = opset;
    b->n_opsets = 1;
    *out = b;
    return MINFER_OK;
}

void minfer_builder_free(minfer_graph_builder *b) {
    if (!b)
        return;
    for (size_t i = 0; i < b->n_opsets; i++)
        free(b->opsets[i].domain);
    free(b->opsets);
    for (size_t i = 0; i < b->n_inputs; i++) {
        free(b->inputs[i].name);
        for (int d = 0; d < MINFER_MAX_RANK; d++)
            free(b->inputs[i].dim_names[d]);
    }
    free(b->inputs);
    for (size_t i = 0; i < b->n_inits; i++) {
        free(b->inits[i].name);
        minfer_tensor_free(b->inits[i].value);
    }
    free(b->inits);
    for (size_t i = 0; i < b->n_nodes; i++) {
        b_node *n = &b->nodes[i];
        free(n->op_type);
        free(n->domain);
        free(n->name);
        free_strv(n->inputs, n->n_inputs);
        free_strv(n->outputs, n->n_outputs);
        for (size_t a = 0; a < n->n_attrs; a++)
            mf_attr_clear(&n->attrs[a]);
        free(n->attrs);
    }
    free(b->nodes);
    free_strv(b->outputs, b->n_outputs);
    free(b);
}

minfer_status minfer_builder_add_opset(minfer_graph_builder *b, const char *domain,
                                       int64_t version) {
    if (!b || !domain)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_opset: NULL argument");
    if (version <= 0)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_builder_add_opset: version %lld of domain '%s' is not positive",
                        (long long)version, domain);
    if (is_default_domain(domain))
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_builder_add_opset: the default domain's opset is set by "
                        "minfer_builder_create");
    for (size_t i = 0; i < b->n_opsets; i++)
        if (strcmp(b->opsets[i].domain, domain) == 0)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "minfer_builder_add_opset: domain '%s' is already imported", domain);
    char *d = mf_strdup(domain);
    if (!d || grow((void **)&b->opsets, &b->cap_opsets, b->n_opsets, sizeof *b->opsets) != 0) {
        free(d);
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_add_opset: out of memory");
    }
    b->opsets[b->n_opsets].domain = d;
    b->opsets[b->n_opsets].version = version;
    b->n_opsets++;
    return MINFER_OK;
}

minfer_status minfer_builder_add_input(minfer_graph_builder *b, const char *name,
                                       minfer_dtype dtype, const int64_t *dims, size_t rank,
                                       const char *const *dim_names) {
    if (!b || !name || (rank && !dims))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_input: NULL argument");
    if (!name[0])
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_input: empty name");
    if (dtype == MINFER_DTYPE_UNDEFINED || minfer_dtype_size(dtype) == 0)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_input: input '%s' has bad "
                        "element type %d", name, (int)dtype);
    if (rank > MINFER_MAX_RANK)
        return mf_error(MINFER_ERR_LIMIT,
                        "minfer_builder_add_input: input '%s' has rank %zu, above the limit of %d",
                        name, rank, MINFER_MAX_RANK);
    for (size_t d = 0; d < rank; d++)
        if (dims[d] < -1)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "minfer_builder_add_input: input '%s' dimension %zu is %lld", name, d,
                            (long long)dims[d]);
    if (grow((void **)&b->inputs, &b->cap_inputs, b->n_inputs, sizeof *b->inputs) != 0)
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_add_input: out of memory");
    b_input *in = &b->inputs[b->n_inputs];
    memset(in, 0, sizeof *in);
    in->name = mf_strdup(name);
    in->dtype = (int32_t)dtype;
    in->rank = (int32_t)rank;
    int oom = !in->name;
    for (size_t d = 0; d < rank; d++) {
        in->dims[d] = dims[d];
        if (dims[d] < 0 && dim_names && dim_names[d] && dim_names[d][0] &&
            !(in->dim_names[d] = mf_strdup(dim_names[d])))
            oom = 1;
    }
    if (oom) {
        free(in->name);
        for (int d = 0; d < MINFER_MAX_RANK; d++)
            free(in->dim_names[d]);
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_add_input: out of memory");
    }
    b->n_inputs++;
    return MINFER_OK;
}

minfer_status minfer_builder_add_initializer(minfer_graph_builder *b, const char *name,
                                             const minfer_tensor *value) {
    if (!b || !name || !value)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_initializer: NULL argument");
    if (!name[0])
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_initializer: empty name");
    if (grow((void **)&b->inits, &b->cap_inits, b->n_inits, sizeof *b->inits) != 0)
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_add_initializer: out of memory");
    b_init *it = &b->inits[b->n_inits];
    it->name = mf_strdup(name);
    if (!it->name)
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_add_initializer: out of memory");
    minfer_status st = mf_tensor_clone(value, &it->value);
    if (st != MINFER_OK) {
        free(it->name);
        return mf_error_prefix(st, "minfer_builder_add_initializer: '%s'", name);
    }
    b->n_inits++;
    return MINFER_OK;
}

minfer_status minfer_builder_add_node(minfer_graph_builder *b, const char *op_type,
                                      const char *domain, const char *name,
                                      const char *const *inputs, size_t n_inputs,
                                      const char *const *outputs, size_t n_outputs,
                                      size_t *index) {
    if (!b || !op_type || (n_inputs && !inputs) || (n_outputs && !outputs))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_node: NULL argument");
    if (!op_type[0])
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_node: empty op_type");
    const char *label = name && name[0] ? name : op_type;
    for (size_t i = 0; i < n_inputs; i++)
        if (!inputs[i])
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "minfer_builder_add_node: node '%s' input %zu is NULL (use \"\" for "
                            "an omitted input)",
                            label, i);
    for (size_t i = 0; i < n_outputs; i++)
        if (!outputs[i])
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "minfer_builder_add_node: node '%s' output %zu is NULL", label, i);
    if (grow((void **)&b->nodes, &b->cap_nodes, b->n_nodes, sizeof *b->nodes) != 0)
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_add_node: out of memory");
    b_node *n = &b->nodes[b->n_nodes];
    memset(n, 0, sizeof *n);
    n->op_type = mf_strdup(op_type);
    n->domain = mf_strdup(is_default_domain(domain) ? "" : domain);
    n->name = mf_strdup(name ? name : "");
    n->inputs = dup_strv(inputs, n_inputs);
    n->outputs = dup_strv(outputs, n_outputs);
    if (!n->op_type || !n->domain || !n->name || !n->inputs || !n->outputs) {
        free(n->op_type);
        free(n->domain);
        free(n->name);
        free_strv(n->inputs, n->inputs ? n_inputs : 0);
        free_strv(n->outputs, n->outputs ? n_outputs : 0);
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_add_node: out of memory");
    }
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    if (index)
        *index = b->n_nodes;
    b->n_nodes++;
    return MINFER_OK;
}

minfer_status minfer_builder_add_output(minfer_graph_builder *b, const char *name) {
    if (!b || !name)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_output: NULL argument");
    if (!name[0])
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_add_output: empty name");
    char *s = mf_strdup(name);
    if (!s || grow((void **)&b->outputs, &b->cap_outputs, b->n_outputs, sizeof *b->outputs) != 0) {
        free(s);
        return mf_error(MINFER_ERR_NOMEM, "minfer_builder_add_output: out of memory");
    }
    b->outputs[b->n_outputs++] = s;
    return MINFER_OK;
}

/* ---- Attributes --------------------------------------------------------- */

/* Appends a zeroed attribute named name to node, after the checks every
 * setter shares. */
static minfer_status new_attr(minfer_graph_builder *b, size_t node, const char *name,
                              const char *fn, mf_attr **out) {
    if (!b || !name)
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: NULL argument", fn);
    if (!name[0])
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: empty attribute name", fn);
    if (node >= b->n_nodes)
        return mf_error(MINFER_ERR_INVALID_ARG, "%s: node index %zu is out of range (%zu nodes)",
                        fn, node, b->n_nodes);
    b_node *n = &b->nodes[node];
    for (size_t i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "%s: node %zu ('%s', %s) already has an attribute '%s'", fn, node,
                            n->name, n->op_type, name);
    if (grow((void **)&n->attrs, &n->cap_attrs, n->n_attrs, sizeof *n->attrs) != 0)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", fn);
    mf_attr *a = &n->attrs[n->n_attrs];
    memset(a, 0, sizeof *a);
    a->name = mf_strdup(name);
    if (!a->name)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory", fn);
    n->n_attrs++;
    *out = a;
    return MINFER_OK;
}

/* Drops the attribute new_attr just appended (after a failed fill). */
static minfer_status drop_attr(minfer_graph_builder *b, size_t node, minfer_status st) {
    b_node *n = &b->nodes[node];
    mf_attr_clear(&n->attrs[--n->n_attrs]);
    return st;
}

minfer_status minfer_builder_set_attr_int(minfer_graph_builder *b, size_t node, const char *name,
                                          int64_t value) {
    mf_attr *a;
    minfer_status st = new_attr(b, node, name, "minfer_builder_set_attr_int", &a);
    if (st != MINFER_OK)
        return st;
    a->type = MINFER_ATTR_INT;
    a->i = value;
    return MINFER_OK;
}

minfer_status minfer_builder_set_attr_float(minfer_graph_builder *b, size_t node,
                                            const char *name, float value) {
    mf_attr *a;
    minfer_status st = new_attr(b, node, name, "minfer_builder_set_attr_float", &a);
    if (st != MINFER_OK)
        return st;
    a->type = MINFER_ATTR_FLOAT;
    a->f = value;
    return MINFER_OK;
}

minfer_status minfer_builder_set_attr_string(minfer_graph_builder *b, size_t node,
                                             const char *name, const char *value) {
    mf_attr *a;
    if (!value)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_set_attr_string: value is NULL");
    minfer_status st = new_attr(b, node, name, "minfer_builder_set_attr_string", &a);
    if (st != MINFER_OK)
        return st;
    a->type = MINFER_ATTR_STRING;
    a->s = mf_strdup(value);
    if (!a->s)
        return drop_attr(
            b, node, mf_error(MINFER_ERR_NOMEM, "minfer_builder_set_attr_string: out of memory"));
    a->s_len = strlen(value);
    return MINFER_OK;
}

minfer_status minfer_builder_set_attr_ints(minfer_graph_builder *b, size_t node, const char *name,
                                           const int64_t *values, size_t count) {
    mf_attr *a;
    if (count && !values)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_set_attr_ints: values is NULL");
    minfer_status st = new_attr(b, node, name, "minfer_builder_set_attr_ints", &a);
    if (st != MINFER_OK)
        return st;
    a->type = MINFER_ATTR_INTS;
    a->ints = mf_malloc(count * sizeof *a->ints);
    if (!a->ints)
        return drop_attr(b, node,
                         mf_error(MINFER_ERR_NOMEM, "minfer_builder_set_attr_ints: out of memory"));
    if (count)
        memcpy(a->ints, values, count * sizeof *a->ints);
    a->count = count;
    return MINFER_OK;
}

minfer_status minfer_builder_set_attr_floats(minfer_graph_builder *b, size_t node,
                                             const char *name, const float *values, size_t count) {
    mf_attr *a;
    if (count && !values)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_set_attr_floats: values is NULL");
    minfer_status st = new_attr(b, node, name, "minfer_builder_set_attr_floats", &a);
    if (st != MINFER_OK)
        return st;
    a->type = MINFER_ATTR_FLOATS;
    a->floats = mf_malloc(count * sizeof *a->floats);
    if (!a->floats)
        return drop_attr(
            b, node, mf_error(MINFER_ERR_NOMEM, "minfer_builder_set_attr_floats: out of memory"));
    if (count)
        memcpy(a->floats, values, count * sizeof *a->floats);
    a->count = count;
    return MINFER_OK;
}

minfer_status minfer_builder_set_attr_strings(minfer_graph_builder *b, size_t node,
                                              const char *name, const char *const *values,
                                              size_t count) {
    mf_attr *a;
    if (count && !values)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_set_attr_strings: values is NULL");
    for (size_t k = 0; k < count; k++)
        if (!values[k])
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "minfer_builder_set_attr_strings: string %zu is NULL", k);
    minfer_status st = new_attr(b, node, name, "minfer_builder_set_attr_strings", &a);
    if (st != MINFER_OK)
        return st;
    a->type = MINFER_ATTR_STRINGS;
    a->strings = mf_calloc(count + 1, sizeof *a->strings);
    if (!a->strings)
        return drop_attr(
            b, node, mf_error(MINFER_ERR_NOMEM, "minfer_builder_set_attr_strings: out of memory"));
    for (size_t k = 0; k < count; k++) {
        a->strings[k] = mf_strdup(values[k]);
        a->count = k + 1; /* so a failure frees what was copied */
        if (!a->strings[k])
            return drop_attr(b, node,
                             mf_error(MINFER_ERR_NOMEM,
                                      "minfer_builder_set_attr_strings: out of memory"));
    }
    a->count = count;
    return MINFER_OK;
}

minfer_status minfer_builder_set_attr_tensor(minfer_graph_builder *b, size_t node,
                                             const char *name, const minfer_tensor *value) {
    mf_attr *a;
    if (!value)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_builder_set_attr_tensor: value is NULL");
    minfer_status st = new_attr(b, node, name, "minfer_builder_set_attr_tensor", &a);
    if (st != MINFER_OK)
        return st;
    a->type = MINFER_ATTR_TENSOR;
    st = mf_tensor_clone(value, &a->t);
    if (st != MINFER_OK)
        return drop_attr(b, node,
                         mf_error_prefix(st, "minfer_builder_set_attr_tensor: '%s'", name));
    return MINFER_OK;
}

/* ---- Materialisation ---------------------------------------------------- */

/* Deep copy of an attribute of the kinds the builder makes (graphs are not
 * among them). */
static minfer_status copy_attr(const mf_attr *src, mf_attr *dst) {
    memset(dst, 0, sizeof *dst);
    dst->name = mf_strdup(src->name);
    dst->type = src->type;
    dst->f = src->f;
    dst->i = src->i;
    dst->count = src->count;
    dst->s_len = src->s_len;
    if (!dst->name)
        goto oom;
    if (src->s && !(dst->s = mf_strdup(src->s)))
        goto oom;
    if (src->ints) {
        if (!(dst->ints = mf_malloc(src->count * sizeof *dst->ints)))
            goto oom;
        memcpy(dst->ints, src->ints, src->count * sizeof *dst->ints);
    }
    if (src->floats) {
        if (!(dst->floats = mf_malloc(src->count * sizeof *dst->floats)))
            goto oom;
        memcpy(dst->floats, src->floats, src->count * sizeof *dst->floats);
    }
    if (src->strings) {
        if (!(dst->strings = mf_calloc(src->count + 1, sizeof *dst->strings)))
            goto oom;
        for (size_t k = 0; k < src->count; k++)
            if (!(dst->strings[k] = mf_strdup(src->strings[k])))
                goto oom;
    }
    if (src->t) {
        minfer_status st = mf_tensor_clone(src->t, &dst->t);
        if (st != MINFER_OK) {
            mf_attr_clear(dst);
            return st;
        }
    }
    return MINFER_OK;
oom:
    mf_attr_clear(dst);
    return mf_error(MINFER_ERR_NOMEM, ERRCTX ": out of memory copying attribute '%s'", src->name);
}

/* Interns name, or gives -1 for "" (an omitted optional value). Sets *oom. */
static int value_ref(mf_graph *g, const char *name, int *oom) {
    if (!name[0])
        return -1;
    int vi = mf_graph_intern(g, name);
    if (vi < 0)
        *oom = 1;
    return vi;
}

static minfer_status build_graph(const minfer_graph_builder *b, mf_graph **out) {
    minfer_status st = MINFER_OK;
    int oom = 0;
    mf_graph *g = mf_graph_new();
    *out = NULL;
    if (!g)
        return mf_error(MINFER_ERR_NOMEM, ERRCTX ": out of memory");
    g->name = mf_strdup("builder");
    g->opsets = mf_calloc(b->n_opsets, sizeof *g->opsets);
    g->inputs = mf_malloc((b->n_inputs + 1) * sizeof *g->inputs);
    g->outputs = mf_malloc((b->n_outputs + 1) * sizeof *g->outputs);
    if (!g->name || !g->opsets || !g->inputs || !g->outputs)
        goto nomem;
    for (size_t i = 0; i < b->n_opsets; i++) {
        if (!(g->opsets[i].domain = mf_strdup(b->opsets[i].domain)))
            goto nomem;
        g->opsets[i].version = b->opsets[i].version;
        g->n_opsets++;
    }

    /* 1. Initializers and inputs. */
    for (size_t i = 0; i < b->n_inits; i++) {
        int vi = mf_graph_intern(g, b->inits[i].name);
        if (vi < 0)
            goto nomem;
        mf_value *v = &g->values[vi];
        if (v->initializer) {
            st = mf_error(MINFER_ERR_MODEL, ERRCTX ": initializer '%s' is added twice",
                          b->inits[i].name);
            goto fail;
        }
        if ((st = mf_tensor_clone(b->inits[i].value, &v->initializer)) != MINFER_OK)
            goto fail;
        v->dtype = v->initializer->view.dtype;
        v->rank = v->initializer->view.rank;
        memcpy(v->dims, v->initializer->view.dims, sizeof v->dims);
    }
    for (size_t i = 0; i < b->n_inputs; i++) {
        const b_input *in = &b->inputs[i];
        int vi = mf_graph_intern(g, in->name);
        if (vi < 0)
            goto nomem;
        mf_value *v = &g->values[vi];
        if (v->is_input) {
            st = mf_error(MINFER_ERR_MODEL, ERRCTX ": graph input '%s' is added twice", in->name);
            goto fail;
        }
        if (v->initializer) {
            if (v->dtype != in->dtype) {
                st = mf_error(MINFER_ERR_MODEL,
                              ERRCTX ": graph input '%s' is declared %s but its initializer is %s",
                              in->name, minfer_dtype_name((minfer_dtype)in->dtype),
                              minfer_dtype_name((minfer_dtype)v->dtype));
                goto fail;
            }
            continue; /* an overridable constant */
        }
        v->dtype = in->dtype;
        v->rank = in->rank;
        for (int32_t d = 0; d < in->rank; d++) {
            v->dims[d] = in->dims[d];
            if (in->dim_names[d] && !(v->dim_params[d] = mf_strdup(in->dim_names[d])))
                goto nomem;
        }
        v->is_input = 1;
        g->inputs[g->n_inputs++] = vi;
    }

    /* 2. Nodes. */
    for (size_t i = 0; i < b->n_nodes; i++) {
        const b_node *bn = &b->nodes[i];
        int ni = mf_graph_add_node(g);
        if (ni < 0)
            goto nomem;
        mf_node *n = &g->nodes[ni];
        n->name = mf_strdup(bn->name);
        n->op_type = mf_strdup(bn->op_type);
        n->domain = mf_strdup(bn->domain);
        n->inputs = mf_malloc((bn->n_inputs + 1) * sizeof *n->inputs);
        n->outputs = mf_malloc((bn->n_outputs + 1) * sizeof *n->outputs);
        n->attrs = mf_calloc(bn->n_attrs + 1, sizeof *n->attrs);
        if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs || !n->attrs)
            goto nomem;
        for (size_t k = 0; k < bn->n_inputs; k++)
            n->inputs[k] = value_ref(g, bn->inputs[k], &oom);
        n->n_inputs = bn->n_inputs;
        for (size_t k = 0; k < bn->n_outputs; k++)
            n->outputs[k] = value_ref(g, bn->outputs[k], &oom);
        n->n_outputs = bn->n_outputs;
        if (oom)
            goto nomem;
        for (size_t a = 0; a < bn->n_attrs; a++) {
            if ((st = copy_attr(&bn->attrs[a], &n->attrs[a])) != MINFER_OK)
                goto fail;
            n->n_attrs++;
        }
    }

    /* 3. Outputs. */
    if (b->n_outputs == 0) {
        st = mf_error(MINFER_ERR_MODEL, ERRCTX ": the graph has no outputs");
        goto fail;
    }
    for (size_t i = 0; i < b->n_outputs; i++) {
        int vi = mf_graph_intern(g, b->outputs[i]);
        if (vi < 0)
            goto nomem;
        if (g->values[vi].is_output) {
            st = mf_error(MINFER_ERR_MODEL, ERRCTX ": graph output '%s' is added twice",
                          b->outputs[i]);
            goto fail;
        }
        g->values[vi].is_output = 1;
        g->outputs[g->n_outputs++] = vi;
    }

    /* 4. Producers, sources, cycles. */
    if ((st = mf_graph_finalize(g, ERRCTX)) != MINFER_OK)
        goto fail;
    *out = g;
    return MINFER_OK;
nomem:
    st = mf_error(MINFER_ERR_NOMEM, ERRCTX ": out of memory building the graph");
fail:
    mf_graph_free(g);
    return st;
}

minfer_status mf_graph_from_builder(const minfer_graph_builder *b, mf_graph **out) {
    *out = NULL;
    if (!b)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_session_create_from_builder: b is NULL");
    return build_graph(b, out);
}
