/* The attribute accessors of minfer_host_api, shared by sessions and the
 * optimizer's evaluator: both read mf_attr through the node's host_node. */
#include "graph/graph.h"
#include "util/internal.h"

/* The attribute, when it has type `type` (0: any); one of another type is
 * noted as an error (mf_attr_mismatch, graph.h) and read as absent. */
static const mf_attr *find_attr(const minfer_node_desc *n, const char *name, int type) {
    if (!n || !n->host_node || !name)
        return NULL;
    const mf_node *node = n->host_node;
    const mf_attr *a = mf_node_attr(node, name);
    if (a && type && a->type != type) {
        mf_attr_mismatch(a, type);
        return NULL;
    }
    return a;
}

static int attr_type(const minfer_node_desc *n, const char *name) {
    const mf_attr *a = find_attr(n, name, 0);
    return a ? a->type : MINFER_ATTR_UNDEFINED;
}

static int attr_int(const minfer_node_desc *n, const char *name, int64_t *out) {
    const mf_attr *a = find_attr(n, name, MINFER_ATTR_INT);
    if (a && out)
        *out = a->i;
    return a != NULL;
}

static int attr_float(const minfer_node_desc *n, const char *name, float *out) {
    const mf_attr *a = find_attr(n, name, MINFER_ATTR_FLOAT);
    if (a && out)
        *out = a->f;
    return a != NULL;
}

static int attr_string(const minfer_node_desc *n, const char *name, const char **out,
                            size_t *len) {
    const mf_attr *a = find_attr(n, name, MINFER_ATTR_STRING);
    if (a) {
        if (out)
            *out = a->s;
        if (len)
            *len = a->s_len;
    }
    return a != NULL;
}

static int attr_ints(const minfer_node_desc *n, const char *name, const int64_t **out,
                          size_t *count) {
    const mf_attr *a = find_attr(n, name, MINFER_ATTR_INTS);
    if (a) {
        if (out)
            *out = a->ints;
        if (count)
            *count = a->count;
    }
    return a != NULL;
}

static int attr_floats(const minfer_node_desc *n, const char *name, const float **out,
                            size_t *count) {
    const mf_attr *a = find_attr(n, name, MINFER_ATTR_FLOATS);
    if (a) {
        if (out)
            *out = a->floats;
        if (count)
            *count = a->count;
    }
    return a != NULL;
}

static int attr_strings(const minfer_node_desc *n, const char *name, const char *const **out,
                             size_t *count) {
    const mf_attr *a = find_attr(n, name, MINFER_ATTR_STRINGS);
    if (a) {
        if (out)
            *out = (const char *const *)a->strings;
        if (count)
            *count = a->count;
    }
    return a != NULL;
}

static int attr_tensor(const minfer_node_desc *n, const char *name, minfer_tensor_view *out) {
    const mf_attr *a = find_attr(n, name, MINFER_ATTR_TENSOR);
    if (a && out)
        *out = a->t->view;
    return a != NULL;
}

static void *host_alloc(void *host, size_t bytes) {
    (void)host;
    return mf_malloc(bytes);
}

void mf_host_api_attrs(minfer_host_api *api) {
    api->alloc = host_alloc;
    api->attr_type = attr_type;
    api->attr_int = attr_int;
    api->attr_float = attr_float;
    api->attr_string = attr_string;
    api->attr_ints = attr_ints;
    api->attr_floats = attr_floats;
    api->attr_tensor = attr_tensor;
    api->attr_strings = attr_strings;
}
