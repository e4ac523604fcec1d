/*
 * The core's graph IR: what an ONNX model (or the graph builder) becomes.
 *
 * A graph owns an array of values and an array of nodes that refer to values
 * by index. Every value has at most one producer; graph inputs and
 * initializers have none. Names are unique within a graph and indexed by a
 * hash table. Subgraphs (If/Loop/Scan bodies) are graphs of their own held
 * by attributes, with parent set so outer-scope names can be resolved.
 */
#ifndef MINFER_CORE_GRAPH_H
#define MINFER_CORE_GRAPH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "minfer/minfer.h"
#include "minfer/provider.h"

typedef struct mf_graph mf_graph;

/* An attribute holding a TypeProto (ONNX type 13): i = element type |
 * value kind << 8. Not part of the provider ABI's attribute types. */
#define MF_ATTR_TYPE_PROTO 13

typedef struct mf_attr {
    char *name;
    int type; /* MINFER_ATTR_* */
    float f;
    int64_t i;
    char *s; /* NUL-terminated copy; s_len excludes the NUL */
    size_t s_len;
    size_t count; /* entries of floats / ints / strings / tensors / graphs */
    float *floats;
    int64_t *ints;
    char **strings;
    minfer_tensor *t;
    minfer_tensor **tensors;
    mf_graph *g;
    mf_graph **graphs;
    /* The type a reader asked for when the model gives another
     * (mf_attr_mismatch), the first one; 0: none. Not copied with the
     * attribute. */
    _Atomic int misread;
} mf_attr;

typedef struct mf_value {
    char *name;
    int32_t kind;      /* minfer_value_kind (0: tensor) */
    int32_t contained; /* for an optional: the kind it holds */
    int32_t dtype; /* minfer_dtype (of the elements, for a container); 0 when not declared */
    int32_t rank;  /* -1 when not declared */
    int64_t dims[MINFER_MAX_RANK]; /* -1: symbolic or unknown */
    char *dim_params[MINFER_MAX_RANK]; /* symbolic names, or NULL */
    int producer;       /* node index, -1 for inputs and initializers */
    int is_input;       /* listed in graph.input and not an initializer */
    int is_output;
    minfer_tensor *initializer; /* constant contents, or NULL */
} mf_value;

typedef struct mf_node {
    char *name;    /* "" when the model gives none */
    char *op_type;
    char *domain;  /* "" for the default ONNX domain ("ai.onnx" is normalised to "") */
    int64_t opset; /* the model's version for the node's domain */
    int *inputs;   /* value indices; -1 for an omitted optional input */
    size_t n_inputs;
    int *outputs;  /* value indices; -1 for an omitted optional output */
    size_t n_outputs;
    mf_attr *attrs;
    size_t n_attrs;
    /* The last n_implicit inputs are outer-scope values its subgraphs read
     * (If/Loop/Scan bodies), so ordering and liveness see them. */
    size_t n_implicit;
} mf_node;

typedef struct mf_opset {
    char *domain;
    int64_t version;
} mf_opset;

/* What a model file says about itself (ModelProto's fields; "" for those
 * it leaves out). */
typedef struct mf_model_meta {
    char *producer_name, *producer_version, *domain, *doc_string, *graph_doc_string;
    int64_t model_version, ir_version;
    char **keys, **values; /* metadata_props, in file order */
    size_t n_props;
} mf_model_meta;

struct mf_graph {
    char *name;
    mf_model_meta *meta; /* NULL for subgraphs and built graphs */
    mf_value *values;
    size_t n_values, cap_values;
    mf_node *nodes;
    size_t n_nodes, cap_nodes;
    int *inputs; /* non-initializer graph inputs, in model order */
    size_t n_inputs;
    int *outputs;
    size_t n_outputs;
    mf_opset *opsets;
    size_t n_opsets;
    int *order; /* topological order of nodes (after mf_graph_finalize) */
    /* name -> value index, open addressing */
    int *hash;
    size_t hash_cap;
    const mf_graph *parent; /* for subgraphs, the enclosing graph */
    /* For a subgraph: its values that come from outer scopes, and for each
     * the index of the owning node's input that carries it. */
    int *captures;
    int *capture_slot;
    size_t n_captures;
    int captures_done;
    /* A graph read from a compiled file (load/mfc_read.c): the file's bytes,
     * which its constant tensors point into, given back by mf_graph_free
     * through blob_release; compiled_level is 1 + the optimization level
     * it was compiled at (0: not compiled), so a session does not run the
     * optimizer on it again. */
    void *blob;
    size_t blob_size;
    void (*blob_release)(void *blob, size_t size);
    /* An ONNX file's blob (mf_load_onnx_mapped): blob_fd is open on the file
     * when blob_fd_set, and plan/weights.c reads weights again with pread
     * from it, never through the mapping, which a truncated file would turn
     * into SIGBUS (docs/reliability.md). Closed by mf_graph_free. */
    int blob_fd;
    int blob_fd_set;
    /* What a run's input check looks up (exec/run_inputs.c), made by the
     * first run and published atomically; freed by mf_graph_free. */
    void *input_index;
    int compiled_level;
    /* The compiled file's pre-packed constants (its PACK section, an
     * mf_mfc_packs of load/mfc.h), given back by mf_graph_free through
     * packs_free; NULL when the file has none. */
    void *packs;
    void (*packs_free)(void *packs);
    /* The first attribute-type mismatch of a node the optimizer dropped
     * (mf_attr_mismatch_keep), "" when none. */
    char misread_kept[448];
};

/* Construction. All return MINFER_OK or set the last error. */
mf_graph *mf_graph_new(void);
void mf_graph_free(mf_graph *g);
/* Index of the named value, or -1. */
int mf_graph_find(const mf_graph *g, const char *name);
/* Index of the named value, creating an empty one if absent; -1 on OOM. */
int mf_graph_intern(mf_graph *g, const char *name);
/* Appends a node (zeroed) and returns its index, -1 on OOM. */
int mf_graph_add_node(mf_graph *g);
/* The opset version imported for a domain ("" or "ai.onnx": default), or 0. */
int64_t mf_graph_opset(const mf_graph *g, const char *domain);
/* Checks the graph and computes g->order: every value a node reads has a
 * producer, is an input or an initializer (or comes from an outer scope);
 * no value has two producers; no cycles; every output is produced. errctx
 * names the model in messages. */
minfer_status mf_graph_finalize(mf_graph *g, const char *errctx);

/* 1 for an op the core always runs (control flow, sequences, optionals:
 * graph/core_ops.h lists them). */
int mf_core_op(const mf_node *n);
/* "node 'x' (op Conv, domain ai.onnx, opset 13)" into buf (node #idx when
 * it has no name). */
const char *mf_node_label(const mf_node *n, int idx, char *buf, size_t size);
/* The provider ABI's view of node n (minfer_node_desc): its name and
 * domain ("" when absent), op, opset, counts and host node, over the value
 * descriptions in and out that the caller filled (n->n_inputs and
 * n->n_outputs of them). */
void mf_node_desc_init(minfer_node_desc *d, const mf_node *n, minfer_value_desc *in,
                       minfer_value_desc *out);
/* The graph a minfer_graph_builder describes, validated (graph/builder.c). */
minfer_status mf_graph_from_builder(const minfer_graph_builder *b, mf_graph **out);

/* Expands every ai.onnx.preview.training Gradient node into the nodes
 * that compute it (gradient.c); g is finalized again. */
minfer_status mf_expand_gradients(mf_graph *g, const char *errctx);

/* Attribute lookup on the IR node; NULL if absent. */
const mf_attr *mf_node_attr(const mf_node *n, const char *name);
/* Typed getters returning def when the attribute is absent. */
int64_t mf_attr_int(const mf_node *n, const char *name, int64_t def);
float mf_attr_float(const mf_node *n, const char *name, float def);
const char *mf_attr_string(const mf_node *n, const char *name, const char *def);
/* An ints array; returns the count (0 if absent) and sets *out. */
size_t mf_attr_ints(const mf_node *n, const char *name, const int64_t **out);

void mf_attr_clear(mf_attr *a);

/* An attribute read as another type than the model gives it (a string
 * `alpha`, an int Elu `alpha`, a string Flatten `axis`) is an error, not
 * the reader's default: every reader (mf_attr_int/_float/_string/_ints
 * here, minfer_host_api.attr_* in host_attrs.c, which providers and
 * provider_kit.h read through) notes it on the attribute it read
 * (mf_attr_mismatch: the first type asked, atomically) and answers
 * "absent". Session creation and each plan's build clear the notes of
 * their graph first and fail with the first one after
 * (mf_attr_mismatch_take: MINFER_ERR_TYPE naming node, attribute,
 * expected and found type, with errctx; MINFER_OK when none; the notes of
 * g and of the graphs its attributes hold are cleared). The optimizer calls
 * mf_attr_mismatch_keep before it drops a node, so a mismatch of a node
 * folded or fused away still fails the creation. */
void mf_attr_mismatch(const mf_attr *a, int want);
void mf_attr_mismatch_keep(mf_graph *g, const mf_node *n);
void mf_attr_mismatch_clear(mf_graph *g);
minfer_status mf_attr_mismatch_take(mf_graph *g, const char *errctx);

/* Loading (onnx_load.c): parses a serialized ModelProto. model_dir is where
 * external data files are looked up (may be NULL: current directory);
 * errctx names the model in messages; limits (NULL: the defaults) cap the
 * model size, node count and each declared or constant tensor's bytes. */
minfer_status mf_load_onnx(const void *data, size_t size, const char *model_dir,
                           const char *errctx, const minfer_limits *limits, mf_graph **out);
/* The same; mapped says data is a private read-only mapping of the model
 * file, whose pages the loader may give back once it has copied them. */
minfer_status mf_load_onnx_ex(const void *data, size_t size, int mapped, const char *model_dir,
                              const char *errctx, const minfer_limits *limits, mf_graph **out);
/* The same for a mapping (mmap, PROT_READ, MAP_PRIVATE) of the whole
 * file that the graph takes in every case (unmapped on failure, else by
 * mf_graph_free): initializers copied from it remember where
 * (minfer_tensor.src), so a packed weight's copy can be freed and made
 * again (plan/weights.c). */
minfer_status mf_load_onnx_mapped(void *data, size_t size, const char *model_dir,
                                  const char *errctx, const minfer_limits *limits,
                                  mf_graph **out);

#endif
