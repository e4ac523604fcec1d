/*
 * minfer: a small ONNX inference runtime.
 *
 * Typical use:
 *
 *     minfer_options *opt = NULL;
 *     minfer_session *s = NULL;
 *     minfer_options_create(&opt);
 *     minfer_options_set_providers_str(opt, "opencl,cpu");
 *     if (minfer_session_create("model.onnx", opt, &s) != MINFER_OK)
 *         fprintf(stderr, "%s\n", minfer_last_error());
 *
 *     int64_t dims[4] = {1, 3, 224, 224};
 *     minfer_tensor *in = NULL, *out = NULL;
 *     minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 4, pixels, sizeof pixels, &in);
 *     const char *in_names[] = {"input"}, *out_names[] = {"logits"};
 *     minfer_session_run(s, in_names, (const minfer_tensor *const *)&in, 1,
 *                        out_names, &out, 1);  // out == NULL: the session allocates it
 *     const float *logits = minfer_tensor_data(out);
 *     ...
 *     minfer_tensor_free(out); minfer_tensor_free(in);
 *     minfer_session_free(s); minfer_options_free(opt);
 *
 * Every call that can fail returns a minfer_status; MINFER_OK is 0. After a
 * failure minfer_last_error() returns a message naming what failed and where
 * (model, node, op, input). Every _free function accepts NULL.
 */
#ifndef MINFER_MINFER_H
#define MINFER_MINFER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define MINFER_API __attribute__((visibility("default")))
#else
#define MINFER_API
#endif

#define MINFER_VERSION_MAJOR 0
#define MINFER_VERSION_MINOR 1
#define MINFER_VERSION_PATCH 0
#define MINFER_VERSION_STRING "0.1.0"

/* The largest tensor rank minfer handles; larger ranks are a clear error. */
#define MINFER_MAX_RANK 8

/* ---- Status and errors ------------------------------------------------- */

typedef enum minfer_status {
    MINFER_OK = 0,
    MINFER_ERR_INVALID_ARG,   /* a NULL where a value is needed, a bad option */
    MINFER_ERR_IO,            /* a file could not be opened or read */
    MINFER_ERR_MODEL,         /* the model is malformed or inconsistent */
    MINFER_ERR_UNSUPPORTED,   /* an op, type or feature minfer does not run */
    MINFER_ERR_PROVIDER,      /* a provider failed to load, initialise or run */
    MINFER_ERR_SHAPE,         /* shapes that do not agree */
    MINFER_ERR_TYPE,          /* element types that do not agree */
    MINFER_ERR_NOMEM,         /* an allocation failed */
    MINFER_ERR_NOT_FOUND,     /* a name that is not in the model */
    MINFER_ERR_LIMIT,         /* a size beyond a configured or built-in limit */
    MINFER_ERR_RUNTIME,       /* a kernel failed while running */
    MINFER_ERR_DEADLINE,      /* a run went past its deadline (minfer_run_limits,
                                 minfer_run_options_set_deadline_ms) */
    MINFER_CANCELLED,         /* a run stopped by minfer_run_options_terminate */
    MINFER_ERR_BUSY           /* the asynchronous queue is full: nothing was queued
                                 (minfer_session_try_submit); try again later */
} minfer_status;

/* A short fixed description of a status code. The string is static. */
MINFER_API const char *minfer_status_str(minfer_status status);

/* The message of the last failed call on this thread ("" if none). Valid
 * until the next minfer call on the same thread. */
MINFER_API const char *minfer_last_error(void);

/* The library version, e.g. "0.1.0". Static string. */
MINFER_API const char *minfer_version(void);

/* ---- Element types (numbered as ONNX's TensorProto.DataType) ----------- */

typedef enum minfer_dtype {
    MINFER_DTYPE_UNDEFINED = 0,
    MINFER_DTYPE_FLOAT = 1,
    MINFER_DTYPE_UINT8 = 2,
    MINFER_DTYPE_INT8 = 3,
    MINFER_DTYPE_UINT16 = 4,
    MINFER_DTYPE_INT16 = 5,
    MINFER_DTYPE_INT32 = 6,
    MINFER_DTYPE_INT64 = 7,
    MINFER_DTYPE_STRING = 8,   /* elements are char * (NUL-terminated, owned by the tensor) */
    MINFER_DTYPE_BOOL = 9,     /* one byte per element, 0 or 1 */
    MINFER_DTYPE_FLOAT16 = 10, /* IEEE half, stored as uint16_t bits */
    MINFER_DTYPE_DOUBLE = 11,
    MINFER_DTYPE_UINT32 = 12,
    MINFER_DTYPE_UINT64 = 13,
    MINFER_DTYPE_COMPLEX64 = 14,
    MINFER_DTYPE_COMPLEX128 = 15,
    MINFER_DTYPE_BFLOAT16 = 16 /* stored as uint16_t bits */
} minfer_dtype;

/* Bytes per element (sizeof(char *) for STRING); 0 for an unknown type. */
MINFER_API size_t minfer_dtype_size(minfer_dtype dtype);
/* The ONNX name of a type ("float", "int64", ...); "undefined" if unknown. */
MINFER_API const char *minfer_dtype_name(minfer_dtype dtype);

/* ---- Tensors ------------------------------------------------------------ */

typedef struct minfer_tensor minfer_tensor;

/* A tensor that owns zero-filled memory of the given type and shape. */
MINFER_API minfer_status minfer_tensor_create(minfer_dtype dtype, const int64_t *dims,
                                              size_t rank, minfer_tensor **out);
/* A tensor over caller memory (not copied, not freed; must outlive the
 * tensor). data_bytes must be at least the tensor's size. */
MINFER_API minfer_status minfer_tensor_wrap(minfer_dtype dtype, const int64_t *dims,
                                            size_t rank, void *data, size_t data_bytes,
                                            minfer_tensor **out);
/* Frees the tensor and, if it owns them, its data. NULL is a no-op. */
MINFER_API void minfer_tensor_free(minfer_tensor *t);

MINFER_API minfer_dtype minfer_tensor_dtype(const minfer_tensor *t);
MINFER_API size_t minfer_tensor_rank(const minfer_tensor *t);
/* The dims array (rank entries), owned by the tensor. */
MINFER_API const int64_t *minfer_tensor_dims(const minfer_tensor *t);
MINFER_API int64_t minfer_tensor_numel(const minfer_tensor *t);
MINFER_API size_t minfer_tensor_nbytes(const minfer_tensor *t);
/* The first element; owned by the tensor (or the caller, for a wrap). NULL
 * for a device value (minfer_session_device_tensor_create): read it with
 * minfer_tensor_copy_to_host. */
MINFER_API void *minfer_tensor_data(const minfer_tensor *t);

/* Reads a serialized ONNX TensorProto (the test-case input_K.pb format).
 * *name_out, if not NULL, receives a malloc'd copy of the tensor's name
 * (free it with free()). */
MINFER_API minfer_status minfer_tensor_load_pb(const char *path, minfer_tensor **out,
                                               char **name_out);
MINFER_API minfer_status minfer_tensor_load_pb_memory(const void *data, size_t size,
                                                      minfer_tensor **out, char **name_out);
/* Writes a tensor as a serialized ONNX TensorProto named name (may be NULL). */
MINFER_API minfer_status minfer_tensor_save_pb(const minfer_tensor *t, const char *name,
                                               const char *path);

/* ---- Sequences and optionals ------------------------------------------- */

/* Besides a tensor, a minfer_tensor handle can hold an ONNX sequence (an
 * ordered list of tensors of one element type) or an ONNX optional (a
 * tensor, a sequence, or nothing), for models whose inputs or outputs have
 * those types. minfer_tensor_free frees a sequence or optional with all it
 * holds; minfer_tensor_dtype gives the element type; the shape and data
 * accessors answer rank 0 and NULL for them. */
typedef enum minfer_value_kind {
    MINFER_VALUE_TENSOR = 0,
    MINFER_VALUE_SEQUENCE = 1,
    MINFER_VALUE_OPTIONAL = 2
} minfer_value_kind;

MINFER_API minfer_value_kind minfer_value_kind_of(const minfer_tensor *t);
/* An empty sequence of elem_type tensors. */
MINFER_API minfer_status minfer_sequence_create(minfer_dtype elem_type, minfer_tensor **out);
/* Appends item (a tensor of the sequence's element type); on success the
 * sequence owns item. */
MINFER_API minfer_status minfer_sequence_append(minfer_tensor *seq, minfer_tensor *item);
MINFER_API size_t minfer_sequence_length(const minfer_tensor *seq);
/* The index-th tensor, owned by the sequence; NULL when out of range. */
MINFER_API const minfer_tensor *minfer_sequence_at(const minfer_tensor *seq, size_t index);
/* An optional holding value (a tensor or a sequence; the optional then owns
 * it), or, with value NULL, an empty optional of a contained_kind
 * (MINFER_VALUE_TENSOR or MINFER_VALUE_SEQUENCE) of elem_type elements. */
MINFER_API minfer_status minfer_optional_create(minfer_tensor *value, minfer_value_kind contained_kind,
                                                minfer_dtype elem_type, minfer_tensor **out);
/* The value an optional holds (owned by it), or NULL when it is empty. */
MINFER_API const minfer_tensor *minfer_optional_value(const minfer_tensor *opt);
/* The kind an optional holds or would hold. */
MINFER_API minfer_value_kind minfer_optional_kind(const minfer_tensor *opt);

/* Reads a serialized ONNX SequenceProto, OptionalProto or TensorProto: the
 * file does not say which, so kind names the one expected (the model's
 * declared type for that input or output). */
MINFER_API minfer_status minfer_value_load_pb(const char *path, minfer_value_kind kind,
                                              minfer_tensor **out, char **name_out);
/* minfer_tensor_save_pb writes a sequence as a SequenceProto and an
 * optional as an OptionalProto. */

/* ---- Session options ---------------------------------------------------- */

typedef struct minfer_options minfer_options;

typedef enum minfer_log_level {
    MINFER_LOG_ERROR = 0,
    MINFER_LOG_WARN = 1,
    MINFER_LOG_INFO = 2,
    MINFER_LOG_VERBOSE = 3
} minfer_log_level;

MINFER_API minfer_status minfer_options_create(minfer_options **out);
MINFER_API void minfer_options_free(minfer_options *opt);
/* Provider preference list, most preferred first, e.g. {"opencl", "cpu"}.
 * Without one, MINFER_PROVIDERS is used, else the default order
 * (MINFER_DEFAULT_PROVIDERS in docs/providers.md), which ends with "cpu". */
MINFER_API minfer_status minfer_options_set_providers(minfer_options *opt,
                                                      const char *const *names, size_t count);
/* The same as a comma-separated string: "opencl,cpu". */
MINFER_API minfer_status minfer_options_set_providers_str(minfer_options *opt, const char *list);
/* The most threads a count may ask for, here and in
 * minfer_options_set_inter_op_threads (also the CLI's --threads and
 * Python's intra_op_num_threads). */
#define MINFER_MAX_THREADS 1024
/* Threads for the session's pool, 0..MINFER_MAX_THREADS; 0 (default) means
 * one per CPU the process may run on (its affinity mask, as taskset or a
 * cpuset sets it, lowered to its cgroup's CPU quota rounded up, as
 * `docker run --cpus=2` sets it), at most 64. */
MINFER_API minfer_status minfer_options_set_threads(minfer_options *opt, int threads);

/* A thread pool several sessions share (ONNX Runtime's global thread pools,
 * docs/scheduling.md). Sessions made with minfer_options_set_thread_pool
 * run on its threads instead of making a pool each, so N sessions cost the
 * pool's threads once, not N times. It runs one parallel job at a time:
 * when two runs (of one session or of several) want it at once, the first
 * splits its nodes over the pool and the other runs its nodes on its own
 * calling thread until the pool is free again, node by node. So a run
 * never waits for another run's work, and busy threads never exceed the
 * pool's threads plus the threads calling run. Results are identical
 * either way. (A session's asynchronous workers, minfer_session_submit,
 * and the pipeline scheduler's stage pools remain the session's own.)
 *
 * Reference-counted: the pool lives while the caller's reference or any
 * options or session holding it does; minfer_thread_pool_free drops the
 * caller's, and the threads stop with the last holder. threads as in
 * minfer_options_set_threads (0: one per usable CPU, at most 64). */
typedef struct minfer_thread_pool minfer_thread_pool;
MINFER_API minfer_status minfer_thread_pool_create(int threads, minfer_thread_pool **out);
MINFER_API void minfer_thread_pool_free(minfer_thread_pool *pool);
/* Its threads, the calling thread included; 0 for NULL. */
MINFER_API int minfer_thread_pool_thread_count(const minfer_thread_pool *pool);
/* Sessions made with opt run on pool (NULL: each its own pool, the
 * default); opt holds a reference until it is freed or set again. The
 * pool's thread count then is the sessions' (minfer_options_set_threads is
 * not used); the inter-op thread count is capped by it. */
MINFER_API minfer_status minfer_options_set_thread_pool(minfer_options *opt,
                                                        minfer_thread_pool *pool);
/* Messages at or below this level go to stderr (default WARN, or MINFER_LOG). */
MINFER_API minfer_status minfer_options_set_log_level(minfer_options *opt, minfer_log_level level);

/* Graph optimization level: 0 none, 1 basic clean-ups (dead code, Identity,
 * constant folding), 2 also fusions into minfer's own ops, 3 (default)
 * everything: today the same passes as 2, as no provider-specific rewrite
 * exists yet (docs/optimizer.md). MINFER_OPT_LEVEL overrides the default. */
MINFER_API minfer_status minfer_options_set_optimization_level(minfer_options *opt, int level);

typedef enum minfer_planner {
    MINFER_PLANNER_GREEDY = 0, /* offsets in one arena per memory domain (default) */
    MINFER_PLANNER_LINEAR = 1  /* every tensor its own space: for telling a planner
                                  bug from a kernel bug; also MINFER_PLANNER=linear */
} minfer_planner;
MINFER_API minfer_status minfer_options_set_planner(minfer_options *opt, minfer_planner planner);

/* How a run orders its nodes (docs/scheduling.md). */
typedef enum minfer_scheduler {
    MINFER_SCHED_SEQUENTIAL = 0, /* one node after another, each split over the pool (default) */
    MINFER_SCHED_PARALLEL = 1,   /* independent nodes at once on the pool (a ready queue),
                                    with a memory plan valid for any such order; results
                                    identical; also MINFER_SCHEDULER=parallel */
    MINFER_SCHED_PIPELINE = 2    /* the execution order cut into stages, each working on
                                    another request of the asynchronous API at the same
                                    time (minfer_session_submit); a minfer_session_run
                                    runs the stages in order on the caller's thread;
                                    results identical; also MINFER_SCHEDULER=pipeline */
} minfer_scheduler;
MINFER_API minfer_status minfer_options_set_scheduler(minfer_options *opt,
                                                      minfer_scheduler scheduler);
/* How many nodes the parallel scheduler runs at once: 0 (default) as many as
 * the pool has threads; never more, so busy threads stay within
 * minfer_options_set_threads (a node running beside another runs on one
 * thread; a node running alone splits over the pool). Also
 * MINFER_INTER_OP_THREADS. */
MINFER_API minfer_status minfer_options_set_inter_op_threads(minfer_options *opt, int threads);
/* Asynchronous runs (minfer_session_submit): requests waiting for a worker
 * before a submit blocks; 0 (default): twice the requests in flight. */
MINFER_API minfer_status minfer_options_set_queue_depth(minfer_options *opt, size_t depth);
/* Micro-batches: a submitted request whose inputs share a first (batch)
 * dimension larger than rows is split into requests of at most rows along
 * it, which flow through the pipeline one after another; the request's
 * outputs are theirs concatenated along the first dimension. Only for
 * models whose graph inputs' first dimension is symbolic and whose
 * outputs' first dimension is that batch; results are identical to the
 * unsplit run when no node mixes batch items (docs/scheduling.md).
 * 0 (default): no split. */
MINFER_API minfer_status minfer_options_set_micro_batch(minfer_options *opt, int64_t rows);
/* The precision a session's providers may compute float models in.
 * MINFER_PRECISION_BF16 (opt-in, also MINFER_PRECISION=bf16): the oneDNN
 * provider's convolutions and products with constant weights read
 * bfloat16 copies of their inputs and weights and accumulate in float, on
 * CPUs with AVX512_BF16 or AMX (elsewhere it computes in float and says so
 * once); results differ from float ones by bfloat16's rounding (8 bits of
 * mantissa; docs/PERFORMANCE.md states it per model). Other providers
 * compute in float. Default MINFER_PRECISION_FP32. */
typedef enum minfer_precision {
    MINFER_PRECISION_FP32 = 0,
    MINFER_PRECISION_BF16 = 1
} minfer_precision;
MINFER_API minfer_status minfer_options_set_precision(minfer_options *opt,
                                                      minfer_precision precision);
/* How many plans (one per distinct set of input shapes) a session keeps;
 * default 4, at least 1. */
MINFER_API minfer_status minfer_options_set_plan_cache_size(minfer_options *opt, size_t plans);

/* Resource limits for untrusted models; 0 keeps the default. The layout
 * of this struct is frozen (callers pass it by pointer, compiled against
 * this header): new limits go into minfer_run_limits, which carries its
 * size. docs/reliability.md lists every limit and what it protects. */
typedef struct minfer_limits {
    uint64_t max_model_bytes;  /* model file or buffer; default 2 GiB */
    uint64_t max_tensor_bytes; /* any one tensor; default a quarter of physical
                                  memory, at most 4 GiB */
    uint64_t max_nodes;        /* nodes in a graph, subgraphs included; default 1,000,000 */
    uint64_t max_loop_iterations; /* body runs of Loop, Scan and SequenceMap in one
                                     run, nested ones included; default 1,000,000 */
} minfer_limits;
MINFER_API minfer_status minfer_options_set_limits(minfer_options *opt, const minfer_limits *limits);

/* Budgets of one minfer_session_run (subgraph runs included); 0 keeps the
 * default. Set struct_size to sizeof(minfer_run_limits): members a caller's
 * older header did not have keep their defaults, so members are only ever
 * appended.
 *
 *     minfer_run_limits rl = {sizeof rl};
 *     rl.deadline_ms = 500;
 *     minfer_options_set_run_limits(opt, &rl);
 */
typedef struct minfer_run_limits {
    uint32_t struct_size;
    uint64_t max_run_elements; /* elements the run's nodes produce (outputs, Loop scan
                                  outputs, sequence items) plus the work kernels
                                  charge for (an Einsum's products); over it, the run
                                  fails with MINFER_ERR_LIMIT; default 2^34 */
    uint64_t deadline_ms;      /* wall-clock time of one run, checked before each
                                  node and loop iteration; over it, the run fails with
                                  MINFER_ERR_DEADLINE; default none */
} minfer_run_limits;
MINFER_API minfer_status minfer_options_set_run_limits(minfer_options *opt,
                                                       const minfer_run_limits *limits);

/* A limit on the wall-clock time session creation takes (loading, the
 * optimizer's passes, shape inference, subgraphs, provider assignment,
 * memory planning and preparing the nodes), checked between those stages
 * and inside their loops; over it, creation fails with MINFER_ERR_DEADLINE
 * naming the stage ("model.onnx: session creation took longer than 500 ms
 * (the creation deadline) at shape inference, node 5000 of 16000"). 0, the default: no limit.
 * ONNX Runtime has no such option (the CLI's --creation-deadline MS,
 * Python's session config entry "minfer.creation_deadline_ms"). */
MINFER_API minfer_status minfer_options_set_creation_deadline(minfer_options *opt, uint64_t ms);

/* Free-dimension overrides (ONNX Runtime's, perf_test's -f): every input
 * dimension with the symbolic name `name` ("batch") becomes `value`, so the
 * session plans for that shape at creation and runs take inputs of it.
 * Creation fails with MINFER_ERR_NOT_FOUND when no input has such a
 * dimension. Setting a name again replaces its value. */
MINFER_API minfer_status minfer_options_set_dim(minfer_options *opt, const char *name,
                                                int64_t value);
/* The same for one axis of the input named `input`, symbolic or unnamed;
 * creation fails when the model fixes that axis at another size. */
MINFER_API minfer_status minfer_options_set_input_dim(minfer_options *opt, const char *input,
                                                      int axis, int64_t value);

/* An option string handed to one provider's init, e.g. for "opencl":
 * "device=1" (the provider's documentation lists its keys). */
MINFER_API minfer_status minfer_options_set_provider_options(minfer_options *opt,
                                                             const char *provider,
                                                             const char *options);
/* One key of a provider's option string: "key=value" is added to it (or
 * replaces that key's value). The string has no escapes, so a key that is
 * empty or holds ',' or '=', or a value that holds ',', is refused with
 * MINFER_ERR_INVALID_ARG (a ',' would add a key): the same rule as the
 * Python provider_options and the CLI's --provider-option. */
MINFER_API minfer_status minfer_options_add_provider_option(minfer_options *opt,
                                                            const char *provider,
                                                            const char *key, const char *value);

/* Adds a custom-operator plugin (docs/plugins.md, minfer/plugin.h) to the
 * sessions made with opt: a path to the library (anything with a '/'), or
 * a NAME found as libminfer_plugin_NAME.so in the plugin directories. The
 * library is loaded and checked now, so a missing file, a missing entry
 * symbol, an ABI mismatch or a malformed op fails here, naming the file.
 * Plugins also come from MINFER_PLUGINS (a comma-separated list), and a
 * model with ops in a domain nobody serves loads the installed ones. */
MINFER_API minfer_status minfer_options_add_plugin(minfer_options *opt, const char *path_or_name);

/* ---- Diagnostics options (docs/diagnostics.md) -------------------------- */

/* Receives every message at or below the session's log level instead of
 * stderr. Called from the thread that logs; message is valid for the call. */
typedef void (*minfer_log_fn)(void *user, minfer_log_level level, const char *message);
MINFER_API minfer_status minfer_options_set_log_callback(minfer_options *opt, minfer_log_fn fn,
                                                         void *user);
/* Strict placement: session creation fails, naming the nodes, when any node
 * would run on a provider other than the first one of the list that loaded
 * (nodes folded into constants do not count). */
MINFER_API minfer_status minfer_options_set_strict_placement(minfer_options *opt, int strict);
/* Profiling: records build phases and, per run, one event per node (and per
 * boundary copy) as a profile in ONNX Runtime's format (a JSON array of trace
 * events, docs/diagnostics.md) written to path when the
 * session is freed (or by minfer_session_write_profile). Also MINFER_PROFILE. */
MINFER_API minfer_status minfer_options_set_profiling(minfer_options *opt, const char *path);
/* After each node, checks its float outputs for NaN and Inf and fails the
 * run naming the first node that produced one. Also MINFER_CHECK_NAN=1. */
MINFER_API minfer_status minfer_options_set_check_nan(minfer_options *opt, int on);

/* ---- Sessions ----------------------------------------------------------- */

typedef struct minfer_session minfer_session;

/* Loads, validates, infers shapes, assigns providers and prepares every node.
 * opt may be NULL (defaults). On failure *out is NULL. */
MINFER_API minfer_status minfer_session_create(const char *model_path, const minfer_options *opt,
                                               minfer_session **out);
/* The same from a serialized model in memory (copied as needed; external
 * data is resolved relative to the current directory). */
MINFER_API minfer_status minfer_session_create_from_memory(const void *data, size_t size,
                                                           const minfer_options *opt,
                                                           minfer_session **out);
MINFER_API void minfer_session_free(minfer_session *s);

/* Describes a graph input or output. Pointers are owned by the session and
 * live as long as it does. dims[i] is -1 for a dimension that is not fixed;
 * dim_names[i] is then its symbolic name ("batch") or NULL. rank is -1 when
 * the model does not declare one. */
typedef struct minfer_value_info {
    const char *name;
    minfer_dtype dtype;
    int32_t rank;
    const int64_t *dims;
    const char *const *dim_names;
    /* MINFER_VALUE_*: a tensor, or a sequence or optional whose elements
     * are dtype (dims then do not apply) */
    int32_t kind;
    int32_t contained; /* for an optional: the kind it holds */
} minfer_value_info;

MINFER_API size_t minfer_session_input_count(const minfer_session *s);
MINFER_API size_t minfer_session_output_count(const minfer_session *s);
MINFER_API minfer_status minfer_session_input_info(const minfer_session *s, size_t index,
                                                   minfer_value_info *info);
MINFER_API minfer_status minfer_session_output_info(const minfer_session *s, size_t index,
                                                    minfer_value_info *info);

/* Runs the model. Thread safety: several threads may call
 * minfer_session_run on one session at once; each run gets its own memory
 * (a pool of arenas), shares the session's prepared plans, and gives the
 * same results as sequential runs. Other calls on a session must not race
 * with minfer_session_free. inputs[i] feeds the graph input named input_names[i]; every
 * graph input that is not an initializer must be given, and initializers
 * cannot be overridden (they may have been folded into constants). An
 * input's shape must match its declared one (MINFER_ERR_SHAPE), except that
 * an input declared as a scalar takes one element of any rank ([1], [1,1]),
 * as ONNX Runtime does. For each requested output: if outputs[i] is NULL the session allocates a
 * tensor the caller frees with minfer_tensor_free; otherwise it must be a
 * tensor of the output's type and shape, and the result is written
 * into it. output_names may be NULL with n_outputs equal to the output count
 * to mean every graph output in order. */
MINFER_API minfer_status minfer_session_run(minfer_session *s,
                                            const char *const *input_names,
                                            const minfer_tensor *const *inputs, size_t n_inputs,
                                            const char *const *output_names,
                                            minfer_tensor **outputs, size_t n_outputs);

/* Device values (ONNX Runtime's OrtValue on a device): a tensor in the
 * memory of one of a session's providers (e.g. "opencl"), so that the
 * output of one run can feed the next without going through the host.
 * Only providers with a memory domain of their own that offer it (the
 * provider ABI's copy_in_domain) have device values: "opencl" does, the
 * host-memory providers ("cpu", "onednn") do not (MINFER_ERR_UNSUPPORTED
 * naming the provider). A device value belongs to the session that made
 * it: free it with minfer_tensor_free, before or after the session (once
 * the session is freed, its device values hold nothing and every use
 * fails with MINFER_ERR_INVALID_ARG). minfer_tensor_data returns NULL for
 * one; its dtype, rank, dims, numel and nbytes (plain host bytes) read as
 * any tensor's. Strings, sequences and optionals have no device values. */
MINFER_API minfer_status minfer_session_device_tensor_create(minfer_session *s,
                                                             const char *provider,
                                                             minfer_dtype dtype,
                                                             const int64_t *dims, size_t rank,
                                                             minfer_tensor **out);
/* Where t's data lives: "cpu" for host memory, else the provider's name
 * ("opencl"). NULL for NULL. */
MINFER_API const char *minfer_tensor_device(const minfer_tensor *t);
/* Copies bytes (exactly minfer_tensor_nbytes(t), plain row-major) from host
 * memory into t, or out of t into host memory; for a host tensor a memcpy.
 * Device copies are ordered after the runs before them on that session. */
MINFER_API minfer_status minfer_tensor_copy_from_host(minfer_tensor *t, const void *src,
                                                      size_t bytes);
MINFER_API minfer_status minfer_tensor_copy_to_host(const minfer_tensor *t, void *dst,
                                                    size_t bytes);

/* Options of one run (ONNX Runtime's RunOptions). Set them before the
 * runs that use them; only minfer_run_options_terminate and _unset_terminate
 * may be called while a run uses them (from any thread). One object may
 * serve several runs at once: terminate then stops them all. */
typedef struct minfer_run_options minfer_run_options;
MINFER_API minfer_status minfer_run_options_create(minfer_run_options **out);
MINFER_API void minfer_run_options_free(minfer_run_options *ro);
/* A tag shown in the run's log messages ("[tag] ...") and its profile
 * event ("args": {"tag": ...}); NULL or "" for none. Copied. */
MINFER_API minfer_status minfer_run_options_set_tag(minfer_run_options *ro, const char *tag);
/* The log level of messages logged on the calling thread during the run
 * (default: the session's). */
MINFER_API minfer_status minfer_run_options_set_log_level(minfer_run_options *ro,
                                                          minfer_log_level level);
/* Wall-clock time of the run, checked before each node and loop iteration;
 * over it the run fails with MINFER_ERR_DEADLINE. The sooner of this and
 * the session's minfer_run_limits.deadline_ms applies; 0 (default): none. */
MINFER_API minfer_status minfer_run_options_set_deadline_ms(minfer_run_options *ro, uint64_t ms);
/* Asks the runs using ro to stop: each checks before every node and loop
 * iteration and returns MINFER_CANCELLED; the session stays usable. The
 * flag stays set (later runs stop at once) until _unset_terminate. */
MINFER_API minfer_status minfer_run_options_terminate(minfer_run_options *ro);
MINFER_API minfer_status minfer_run_options_unset_terminate(minfer_run_options *ro);
/* minfer_session_run with run options (ro may be NULL: the defaults). */
MINFER_API minfer_status minfer_session_run_with_options(minfer_session *s,
                                                         const minfer_run_options *ro,
                                                         const char *const *input_names,
                                                         const minfer_tensor *const *inputs,
                                                         size_t n_inputs,
                                                         const char *const *output_names,
                                                         minfer_tensor **outputs,
                                                         size_t n_outputs);
/* minfer_session_run_with_options with outputs that may stay on a device
 * (ONNX Runtime's IOBinding): inputs may be device values of s, and an
 * output slot may hold a device value of s (the result is written into
 * it: same type and shape, as for a host tensor). output_devices (NULL: all
 * host) names, per output, where the session puts an output whose slot is
 * NULL: NULL, "" or "cpu" host memory, else a provider of s offering device
 * values ("opencl"). A device input read by a node of its own provider is
 * read in place, and an output its provider computed is copied on the
 * device (no host transfer); an input other providers (or the core) read,
 * or an output another provider computed, is copied through the host, as
 * any value crossing memory domains. A device value of another session, or
 * a device named that s does not have, fails with MINFER_ERR_INVALID_ARG. */
MINFER_API minfer_status minfer_session_run_bound(minfer_session *s, const minfer_run_options *ro,
                                                  const char *const *input_names,
                                                  const minfer_tensor *const *inputs,
                                                  size_t n_inputs,
                                                  const char *const *output_names,
                                                  minfer_tensor **outputs,
                                                  const char *const *output_devices,
                                                  size_t n_outputs);

/* ---- Asynchronous runs (docs/scheduling.md) ------------------------------
 *
 *     minfer_request *req = NULL;
 *     minfer_session_submit(s, in_names, ins, 1, NULL, NULL, &req); // returns at once
 *     ...                                    // more submits: requests in flight
 *     minfer_tensor *out = NULL;
 *     if (minfer_request_wait(req, &out, 1) != MINFER_OK)    // blocks until done
 *         fprintf(stderr, "%s\n", minfer_last_error());      // this request's error
 *     minfer_request_free(req);
 *
 * Requests go through a bounded queue to the session's workers: under the
 * pipeline scheduler they flow through its stages, several at once, in the
 * order submitted; under the others one worker runs each request whole, in
 * order. An error (a wrong input, a failing node) fails that request only,
 * with its own message. minfer_session_free cancels: requests still queued
 * end with MINFER_CANCELLED, a running one stops at its next node; it
 * returns when the workers have stopped (so not from a callback, which runs
 * on a worker). Requests stay valid (finished) until minfer_request_free. */
typedef struct minfer_request minfer_request;
/* Called once per request, on a worker thread, when it has finished
 * (status: its outcome; the outputs are ready for minfer_request_wait,
 * which returns at once there). Requests finish one at a time in the
 * order submitted, so a callback that blocks holds up the later ones (and
 * one that submits into a full queue waits for itself). It may free the
 * request. */
typedef void (*minfer_request_fn)(void *user, minfer_request *req, minfer_status status);
/* Submits a run of every graph output: the inputs are copied (the caller's
 * tensors may be freed on return). Blocks while the queue is full
 * (minfer_options_set_queue_depth): back-pressure. done may be NULL. The
 * inputs are checked when the request runs: a wrong name, type or shape
 * fails that request. *out is the caller's, freed with minfer_request_free. */
MINFER_API minfer_status minfer_session_submit(minfer_session *s, const char *const *input_names,
                                               const minfer_tensor *const *inputs,
                                               size_t n_inputs, minfer_request_fn done,
                                               void *user, minfer_request **out);
/* minfer_session_submit that never blocks: when the queue is full it
 * returns MINFER_ERR_BUSY at once, queues nothing and sets *out to NULL (a
 * request split into micro-batches needs room for all its parts, or an
 * empty queue). Otherwise as minfer_session_submit. */
MINFER_API minfer_status minfer_session_try_submit(minfer_session *s,
                                                   const char *const *input_names,
                                                   const minfer_tensor *const *inputs,
                                                   size_t n_inputs, minfer_request_fn done,
                                                   void *user, minfer_request **out);
/* Waits for req to finish and returns its status (its message is the last
 * error). On success outputs[o] (n_outputs: at most the graph's outputs, in
 * order) receive the request's outputs, owned by the caller; a second wait
 * returns the status with NULL outputs. */
MINFER_API minfer_status minfer_request_wait(minfer_request *req, minfer_tensor **outputs,
                                             size_t n_outputs);
/* Whether req has finished (1) or not (0), without waiting. */
MINFER_API int minfer_request_done(const minfer_request *req);
/* Asks req to stop: queued, it ends with MINFER_CANCELLED without running;
 * running, at its next node. Finished: nothing happens. */
MINFER_API minfer_status minfer_request_cancel(minfer_request *req);
/* Frees req; an unfinished one is cancelled first (its callback still runs,
 * and it is released when it has). NULL: nothing. */
MINFER_API void minfer_request_free(minfer_request *req);

/* struct_size: uint32_t in every public struct but the three below
 * (minfer_pipeline_stage, minfer_schedule_info, minfer_device_counters),
 * which shipped with size_t and keep it: a uint32_t there would move the
 * int members that follow it (to offset 4 on 64-bit) and read only half of
 * the size an older caller wrote on a big-endian host, breaking callers
 * and providers built against this header. New structs use uint32_t. */

/* The pipeline scheduler's stages for the most recently used plan
 * (`minfer info`): stage `index` of stages (MINFER_ERR_NOT_FOUND past the
 * last). Set struct_size = sizeof(minfer_pipeline_stage). Strings live as
 * long as the plan. */
typedef struct minfer_pipeline_stage {
    size_t struct_size;
    int32_t stages;             /* stages in all */
    int32_t slots;              /* requests in flight at once, each with its own arenas */
    int32_t threads;            /* intra-op threads of each stage */
    int32_t first_step, last_step; /* steps of the execution order; last < first: empty */
    int32_t nodes;              /* nodes it runs (folded ones not counted) */
    const char *first_node, *last_node; /* "" when empty */
    const char *provider;       /* the provider of most of its cost, or "" */
    double cost_share;          /* its part of the work, 0..1 */
    uint64_t arena_bytes_per_slot; /* every slot's arenas (host and device) */
    int32_t measured;           /* 1: stages and shares from the step times measured on the
                                   requests so far (as the pipeline cuts them); 0: from the
                                   planner's estimates (before any request ran) */
} minfer_pipeline_stage;
MINFER_API minfer_status minfer_session_pipeline_stage(const minfer_session *s, size_t index,
                                                       minfer_pipeline_stage *out);

/* Builds (or finds in the plan cache) the plan for these inputs' shapes
 * without running: shapes are inferred, nodes prepared and memory planned.
 * The tensors' contents are not read. */
MINFER_API minfer_status minfer_session_prepare(minfer_session *s, const char *const *input_names,
                                                const minfer_tensor *const *inputs,
                                                size_t n_inputs);

/* Memory figures of the most recently used plan (has_plan 0 before any). */
typedef struct minfer_memory_info {
    int has_plan;
    int planner;                 /* minfer_planner used */
    uint64_t arena_bytes;        /* the host arena: intermediates, copies, workspaces */
    uint64_t device_arena_bytes; /* arenas of all device memory domains */
    uint64_t intermediate_bytes; /* every planned buffer's size added up (no reuse) */
    uint64_t lower_bound_bytes;  /* largest total alive at one step (host) */
    uint64_t constant_bytes;     /* constants computed when the plan was built */
    size_t planned_tensors;      /* buffers placed in arenas */
    size_t copies_per_run;       /* boundary copies between memory domains per run,
                                    graph outputs copied back from a device included */
    uint64_t copy_bytes_per_run; /* bytes those copies move */
} minfer_memory_info;
MINFER_API minfer_status minfer_session_memory_info(const minfer_session *s,
                                                    minfer_memory_info *out);

/* The scheduler of a session and what it does with the most recently used
 * plan. Set struct_size = sizeof(minfer_schedule_info) before the call;
 * fields past the caller's size are not written. */
typedef struct minfer_schedule_info {
    size_t struct_size;
    int scheduler;        /* minfer_scheduler */
    int inter_op_threads; /* nodes at once (resolved: never above the pool's threads) */
    int has_plan;
    int concurrent;       /* the plan runs nodes at once */
    const char *why_sequential; /* parallel scheduler, plan run in order: why; else "".
                                   Owned by the library (a constant string) */
    uint64_t arena_bytes;            /* the plan's arenas, host and device domains */
    uint64_t sequential_arena_bytes; /* what they take in the sequential order */
    /* Appended (parallel scheduler, the plan's runs so far; 0 otherwise):
     * runs through the ready queue free to start steps beside each other
     * (not the first run and the periodic probes, which start one step at
     * a time, nor the runs that went one step after another because that
     * was faster), and the runs in which two steps did run at once. */
    uint64_t queue_runs;
    uint64_t overlapped_runs;
} minfer_schedule_info;
MINFER_API minfer_status minfer_session_schedule_info(const minfer_session *s,
                                                      minfer_schedule_info *out);

/* What a device provider counted over the most recent run of a session
 * (provider as in minfer_session_provider_name): the commands it enqueued
 * and the times the host waited for the device. Set struct_size =
 * sizeof(minfer_device_counters) before the call; fields past it are not
 * written. MINFER_ERR_UNSUPPORTED for a provider that counts nothing (one
 * computing in host memory, or without the run_counters member of the
 * provider ABI). A run ends at the provider's synchronize: with profiling
 * on, that is after every node; with concurrent runs, the last run's
 * counts hold whatever the others enqueued in between. */
typedef struct minfer_device_counters {
    size_t struct_size;
    uint64_t runs;      /* runs ended since the session was created */
    uint64_t launches;  /* last run: kernels, device copies and fills, library calls */
    uint64_t syncs;     /* last run: host waits for device work still queued */
    uint64_t transfers; /* last run: copies between host and device memory */
} minfer_device_counters;
MINFER_API minfer_status minfer_session_device_counters(const minfer_session *s, size_t provider,
                                                        minfer_device_counters *out);

/* One planned buffer of that plan: the value it holds first (for a node's
 * workspace: the node's name, with is_workspace set), its memory domain, offset, size and lifetime in steps of the
 * execution order. Strings live as long as the plan (until the next
 * minfer_session_prepare/run that evicts it); copy them if kept. */
typedef struct minfer_planned_tensor {
    const char *name;
    const char *domain;
    uint64_t offset;
    uint64_t size;
    int32_t first_step, last_step;
    int32_t is_workspace;
} minfer_planned_tensor;
MINFER_API minfer_status minfer_session_planned_tensor(const minfer_session *s, size_t index,
                                                       minfer_planned_tensor *out);

/* Per-node provider placement, for `minfer info`. Strings are owned by the
 * session. */
typedef struct minfer_node_placement {
    const char *node_name;
    const char *op_type;
    const char *domain;
    const char *provider; /* "(constant)" for a node folded at build; "core" for
                             control flow, sequences and optionals (run by the core) */
    /* Why each provider before `provider` in the list declined the node:
     * "onednn: <reason>; opencl: <reason>", or "" when the first took it. */
    const char *declined;
} minfer_node_placement;

MINFER_API size_t minfer_session_node_count(const minfer_session *s);
MINFER_API minfer_status minfer_session_node_placement(const minfer_session *s, size_t index,
                                                       minfer_node_placement *out);
/* The providers that loaded for this session, in preference order. */
MINFER_API size_t minfer_session_provider_count(const minfer_session *s);
MINFER_API const char *minfer_session_provider_name(const minfer_session *s, size_t index);

/* What the model file says about itself (ONNX ModelProto). Strings are
 * owned by the session and live as long as it does; "" where the model
 * gives nothing (and for a session made with the graph builder). */
typedef struct minfer_model_metadata {
    const char *producer_name;    /* "pytorch" */
    const char *producer_version; /* "2.1.0" */
    const char *domain;           /* the model's reverse-DNS namespace */
    int64_t model_version;
    int64_t ir_version;
    const char *graph_name;
    const char *doc_string;       /* the model's */
    const char *graph_doc_string; /* the main graph's */
    size_t n_props;               /* metadata_props entries */
} minfer_model_metadata;
MINFER_API minfer_status minfer_session_metadata(const minfer_session *s,
                                                 minfer_model_metadata *out);
/* metadata_props entry index (< n_props): its key and value. */
MINFER_API minfer_status minfer_session_metadata_prop(const minfer_session *s, size_t index,
                                                      const char **key, const char **value);

/* ---- Statistics and profiles -------------------------------------------- */

/* Latency statistics of successful runs since creation or the last reset
 * (percentiles over the most recent 4096 runs). */
typedef struct minfer_run_stats {
    uint64_t runs;
    double mean_ms, min_ms, max_ms, p50_ms, p90_ms;
    double throughput;    /* runs per second of wall time since the reset */
    double since_reset_s;
} minfer_run_stats;
MINFER_API minfer_status minfer_session_stats(const minfer_session *s, minfer_run_stats *out);
MINFER_API minfer_status minfer_session_reset_stats(minfer_session *s);
/* Threads of the session's pool (the calling thread included); 0 for NULL. */
MINFER_API int minfer_session_thread_count(const minfer_session *s);

/* With profiling on: the time node `index` (execution order, as in
 * minfer_session_node_placement) has taken over all profiled runs, how many
 * runs, and its estimated FLOPs per run (0 when not estimated). */
MINFER_API minfer_status minfer_session_node_profile(const minfer_session *s, size_t index,
                                                     double *total_ms, uint64_t *runs,
                                                     double *flops);
/* Writes the trace recorded so far (ONNX Runtime's profile format) to path. */
MINFER_API minfer_status minfer_session_write_profile(minfer_session *s, const char *path);
/* Writes the graph as Graphviz DOT: nodes labelled with op and output shape
 * (of the most recent plan), coloured by provider, boundary copies marked. */
MINFER_API minfer_status minfer_session_write_dot(minfer_session *s, const char *path);

#ifdef __cplusplus
}
#endif

#include "minfer/builder.h"

#endif
