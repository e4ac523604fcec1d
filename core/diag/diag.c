/*
 * Diagnostics: the profiling trace (ONNX Runtime's profile format: a JSON
 * array of trace events, which Perfetto opens too), FLOP
 * estimates, run statistics and NaN checks. diag sits beside the pipeline:
 * every stage may use it, and it uses only util and graph. What reads a
 * session (the public stats, profile and picture calls) is
 * session/session_info.c.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diag/diag.h"
#include "util/fileio.h"
#include "util/internal.h"

#define MAX_EVENTS 2000000 /* about 200 MB of trace; later events are counted, not kept */

struct mf_trace {
    pthread_mutex_t lock;
    mf_trace_event *ev;
    size_t n, cap;
    size_t dropped;
    double t0;
    /* The last successful write, so that the session's write at free does
     * not repeat one its owner made (and checked) with nothing new since. */
    char *written_path;
    size_t written_n, written_dropped;
};

double mf_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int mf_thread_id(void) { return (int)gettid(); }

mf_trace *mf_trace_new(double t0_ms) {
    mf_trace *t = mf_calloc(1, sizeof *t);
    if (!t)
        return NULL;
    pthread_mutex_init(&t->lock, NULL);
    t->t0 = t0_ms;
    return t;
}

void mf_trace_free(mf_trace *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->ev[i].name);
        json_decref(t->ev[i].args);
    }
    free(t->ev);
    free(t->written_path);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

void mf_trace_add(mf_trace *t, const char *name, const char *cat, double start_ms, double dur_ms,
                  json_t *args) {
    if (!t) {
        json_decref(args);
        return;
    }
    char *n = mf_strdup(name ? name : "");
    pthread_mutex_lock(&t->lock);
    if (!n || t->n >= MAX_EVENTS) {
        t->dropped++;
        pthread_mutex_unlock(&t->lock);
        free(n);
        json_decref(args);
        return;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        mf_trace_event *e = mf_realloc(t->ev, cap * sizeof *e);
        if (!e) {
            t->dropped++;
            pthread_mutex_unlock(&t->lock);
            free(n);
            json_decref(args);
            return;
        }
        t->ev = e;
        t->cap = cap;
    }
    mf_trace_event *e = &t->ev[t->n++];
    e->name = n;
    e->cat = cat;
    e->ts_us = (start_ms - t->t0) * 1e3;
    e->dur_us = dur_ms * 1e3;
    e->tid = mf_thread_id();
    e->args = args;
    pthread_mutex_unlock(&t->lock);
}

json_t *mf_json_str(const char *s) {
    json_t *j = json_string(s ? s : "");
    if (j)
        return j;
    /* Not UTF-8 (json_string checks): keep each valid sequence, replace
     * each other byte with U+FFFD. */
    size_t len = strlen(s), o = 0;
    char *buf = mf_malloc(3 * len + 1);
    if (!buf)
        return NULL;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        for (size_t m = 1; k && m < k; m++)
            if (i + m >= len || ((unsigned char)s[i + m] & 0xc0) != 0x80)
                k = 0;
        if (k) {
            memcpy(buf + o, s + i, k);
            o += k;
            i += k;
        } else {
            memcpy(buf + o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    j = json_stringn(buf, o);
    if (!j) { /* overlong forms and surrogates: keep the ASCII only */
        o = 0;
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)s[i] < 0x80)
                buf[o++] = s[i];
        j = json_stringn(buf, o);
    }
    free(buf);
    return j;
}

json_t *mf_trace_type_shape(const minfer_tensor_view *v) {
    json_t *dims = json_array();
    for (int d = 0; dims && v->rank > 0 && d < v->rank && d < MINFER_MAX_RANK; d++)
        json_array_append_new(dims, json_integer((json_int_t)v->dims[d]));
    const char *type = v->kind == MINFER_VALUE_TENSOR ? minfer_dtype_name((minfer_dtype)v->dtype)
                       : v->kind == MINFER_VALUE_SEQUENCE ? "sequence"
                                                          : "optional";
    return dims ? json_pack("{s:o}", type, dims) : NULL;
}

/* The provider of a Node event by ONNX Runtime's names, as the Python
 * drop-in maps them (python/minfer/__init__.py _ORT_NAMES): ORT's scripts
 * group by them. The core's nodes (If, Loop, Scan, sequences) and folded
 * constants are computed on the host: ORT runs those on its CPU provider.
 * Any other provider keeps its name. */
static const char *ort_provider(const char *name) {
    static const struct {
        const char *minfer, *ort;
    } names[] = {
        {"cpu", "CPUExecutionProvider"},     {"onednn", "DnnlExecutionProvider"},
        {"opencl", "OpenCLExecutionProvider"}, {"core", "CPUExecutionProvider"},
        {"(constant)", "CPUExecutionProvider"},
    };
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].minfer) == 0)
            return names[i].ort;
    return name;
}

/* One event as ONNX Runtime's profiler writes it: "cat" Session for the
 * build phases and the runs ("model_run"), Node for a node
 * ("NAME_kernel_time", args op_name, provider by ORT's name,
 * input_type_shape, output_type_shape), Copy for a boundary copy; minfer's
 * extras (flops, op_domain outside the default domain, minfer_provider,
 * a run's tag, a copy's bytes) ride in args. */
static json_t *ort_event(const mf_trace_event *e) {
    const char *cat = "Session", *suffix = "";
    if (!strcmp(e->cat, "node")) {
        cat = "Node";
        suffix = "_kernel_time";
    } else if (!strcmp(e->cat, "copy")) {
        cat = "Copy";
    }
    const char *name = !strcmp(e->cat, "run") ? "model_run" : e->name;
    size_t len = strlen(name) + strlen(suffix) + 1;
    char *full = mf_malloc(len);
    if (!full)
        return NULL;
    snprintf(full, len, "%s%s", name, suffix);
    json_t *ev = json_pack("{s:s, s:i, s:i, s:f, s:f, s:s, s:o}", "cat", cat, "pid", 1, "tid",
                           e->tid, "dur", e->dur_us, "ts", e->ts_us, "ph", "X", "name",
                           mf_json_str(full));
    free(full);
    if (!ev)
        return NULL;
    json_t *args = json_object();
    if (!args) {
        json_decref(ev);
        return NULL;
    }
    if (!strcmp(e->cat, "node") && e->args) {
        /* step.c's node args: op ("domain:op_type"), provider, inputs,
         * outputs, flops; ORT's op_name is the op type alone */
        const char *op = json_string_value(json_object_get(e->args, "op"));
        const char *colon = op ? strrchr(op, ':') : NULL;
        if (colon) {
            json_object_set_new(args, "op_name", mf_json_str(colon + 1));
            json_object_set_new(args, "op_domain", json_stringn(op, (size_t)(colon - op)));
        } else {
            json_object_set(args, "op_name", json_object_get(e->args, "op"));
        }
        const char *prov = json_string_value(json_object_get(e->args, "provider"));
        json_object_set_new(args, "provider", mf_json_str(ort_provider(prov)));
        json_object_set(args, "minfer_provider", json_object_get(e->args, "provider"));
        json_object_set(args, "input_type_shape", json_object_get(e->args, "inputs"));
        json_object_set(args, "output_type_shape", json_object_get(e->args, "outputs"));
        json_object_set(args, "flops", json_object_get(e->args, "flops"));
    } else if (e->args) {
        json_object_update(args, e->args);
    }
    json_object_set_new(ev, "args", args);
    return ev;
}

/* The trace file: ORT's shape, a JSON array of events, opened by a metadata
 * event naming the process and saying how many events were dropped (the
 * trace can hold millions; jansson writes each one's JSON). */
minfer_status mf_trace_write(mf_trace *t, const char *path) {
    mf_outfile o;
    minfer_status st;
    int bad = 0;
    pthread_mutex_lock(&t->lock);
    if (t->written_path && strcmp(t->written_path, path) == 0 && t->written_n == t->n &&
        t->written_dropped == t->dropped) {
        pthread_mutex_unlock(&t->lock);
        return MINFER_OK; /* already there, as it stands */
    }
    if ((st = mf_outfile_open(&o, path)) != MINFER_OK) {
        pthread_mutex_unlock(&t->lock);
        return mf_error_prefix(st, "profile");
    }
    FILE *f = o.f;
    /* ", " and ": " on one line per event; times to 12 digits (ns for a
     * trace of hours). */
    const size_t flags = JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12);
    json_t *meta = json_pack("{s:s, s:i, s:i, s:i, s:i, s:s, s:s, s:{s:s, s:s+, s:I}}", "cat",
                             "Session", "pid", 1, "tid", 0, "dur", 0, "ts", 0, "ph", "M", "name",
                             "process_name", "args", "name", "minfer", "producer", "minfer ",
                             MINFER_VERSION_STRING, "dropped_events", (json_int_t)t->dropped);
    /* A failed dump with the stream in error is a write error, which the
     * commit reports (a full disk, the file size limit); without, jansson
     * ran out of memory. */
    fputs("[\n", f);
    bad |= !meta || (json_dumpf(meta, f, flags) != 0 && !ferror(f));
    json_decref(meta);
    for (size_t i = 0; i < t->n && !bad && !ferror(f); i++) {
        json_t *ev = ort_event(&t->ev[i]);
        fputs(",\n", f);
        bad |= !ev || (json_dumpf(ev, f, flags) != 0 && !ferror(f));
        json_decref(ev);
    }
    fputs("\n]\n", f);
    if (bad) {
        mf_outfile_abort(&o);
        pthread_mutex_unlock(&t->lock);
        return mf_error(MINFER_ERR_NOMEM, "profile: out of memory writing '%s'", path);
    }
    if ((st = mf_outfile_commit(&o)) != MINFER_OK) {
        pthread_mutex_unlock(&t->lock);
        return mf_error_prefix(st, "profile");
    }
    char *copy = mf_strdup(path);
    if (copy) {
        free(t->written_path);
        t->written_path = copy;
        t->written_n = t->n;
        t->written_dropped = t->dropped;
    }
    pthread_mutex_unlock(&t->lock);
    return MINFER_OK;
}

/* ---- FLOP estimates ------------------------------------------------------ */

static double numel(const minfer_tensor_view *v) {
    if (!v || v->rank < 0)
        return 0;
    double n = 1;
    for (int d = 0; d < v->rank; d++) {
        if (v->dims[d] < 0)
            return 0;
        n *= (double)v->dims[d];
    }
    return n;
}

double mf_node_flops(const mf_node *n, const minfer_tensor_view *in, size_t n_in,
                     const minfer_tensor_view *out, size_t n_out) {
    const char *op = n->op_type;
    double y = n_out ? numel(&out[0]) : 0;
    if (!strcmp(op, "Conv") || !strcmp(op, "FusedConv") || !strcmp(op, "GatedConv") ||
        !strcmp(op, "ConvTranspose")) {
        /* 2 * outputs * (input channels per group * kernel size) */
        if (n_in < 2 || in[1].rank < 2)
            return 0;
        double k = 1;
        for (int d = 1; d < in[1].rank; d++)
            k *= (double)in[1].dims[d];
        /* ConvTranspose: every input element meets W's [C/g, k...] slice. */
        if (!strcmp(op, "ConvTranspose"))
            return 2.0 * numel(&in[0]) * k;
        return 2.0 * y * k;
    }
    /* Integer convolutions and products: the same count of operations (a
     * multiply and an add per weight tap), with W at its input. */
    int qconv = !strcmp(op, "QLinearConv") ? 3 : !strcmp(op, "ConvInteger") ? 1 : 0;
    if (qconv) {
        if (n_in <= (size_t)qconv || in[qconv].rank < 2)
            return 0;
        double k = 1;
        for (int d = 1; d < in[qconv].rank; d++)
            k *= (double)in[qconv].dims[d];
        return 2.0 * y * k;
    }
    if (!strcmp(op, "QLinearMatMul") || !strcmp(op, "MatMulInteger") || !strcmp(op, "QGemm")) {
        if (n_in < 1 || in[0].rank < 1)
            return 0;
        int64_t k = in[0].dims[in[0].rank - 1];
        if (!strcmp(op, "QGemm") && mf_attr_int(n, "transA", 0) && in[0].rank == 2)
            k = in[0].dims[0];
        return 2.0 * y * (double)k;
    }
    if (!strcmp(op, "Gemm") || !strcmp(op, "FusedGemm") || !strcmp(op, "MatMul") ||
        !strcmp(op, "FusedMatMul")) {
        if (n_in < 2 || in[0].rank < 1)
            return 0;
        int64_t k = in[0].dims[in[0].rank - 1];
        if (!strcmp(op, "Gemm") || !strcmp(op, "FusedGemm")) {
            int64_t ta = mf_attr_int(n, "transA", 0);
            if (ta && in[0].rank == 2)
                k = in[0].dims[0];
        }
        return 2.0 * y * (double)k;
    }
    if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool")) {
        const int64_t *ks;
        size_t nk = mf_attr_ints(n, "kernel_shape", &ks);
        double k = 1;
        for (size_t i = 0; i < nk; i++)
            k *= (double)ks[i];
        return y * k;
    }
    if (!strcmp(op, "GlobalAveragePool") || !strcmp(op, "GlobalMaxPool") ||
        !strncmp(op, "Reduce", 6) || !strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax") ||
        !strcmp(op, "LayerNormalization"))
        return n_in ? numel(&in[0]) * (strncmp(op, "Reduce", 6) ? 5.0 : 1.0) : 0;
    if (!strcmp(op, "Attention")) {
        if (n_in < 3 || in[0].rank < 2 || in[2].rank < 1)
            return 0;
        double sk = (double)in[1].dims[in[1].rank - 1];
        double dv = (double)in[2].dims[in[2].rank - 1];
        double d = (double)in[0].dims[in[0].rank - 1];
        double rows = numel(&in[0]) / d;
        return 2.0 * rows * sk * (d + dv);
    }
    /* Elementwise and everything else: one operation per output element,
     * except pure data movement. */
    static const char *const movers[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze",
                                         "Identity", "Transpose", "Concat", "Gather",
                                         "Slice", "Shape", "Expand", "Cast",
                                         "Split", "Tile", "Pad", "Constant"};
    for (size_t i = 0; i < sizeof movers / sizeof movers[0]; i++)
        if (!strcmp(op, movers[i]))
            return 0;
    return y;
}

int64_t mf_find_nan(const minfer_tensor_view *v, int *is_nan) {
    if (!v->data || (v->dtype != MINFER_DTYPE_FLOAT && v->dtype != MINFER_DTYPE_DOUBLE))
        return -1;
    double n = numel(v);
    for (int64_t e = 0; e < (int64_t)n; e++) {
        double x = v->dtype == MINFER_DTYPE_FLOAT ? (double)((const float *)v->data)[e]
                                                  : ((const double *)v->data)[e];
        if (x != x || x - x != 0) {
            *is_nan = x != x;
            return e;
        }
    }
    return -1;
}

/* ---- statistics ------------------------------------------------------------ */

void mf_stats_reset(mf_stats *st) {
    memset(st, 0, sizeof *st);
    st->since = mf_now_ms();
}

void mf_stats_add(mf_stats *st, double ms) {
    if (st->runs == 0 || ms < st->min_ms)
        st->min_ms = ms;
    if (ms > st->max_ms)
        st->max_ms = ms;
    st->sum_ms += ms;
    st->ring[st->runs % MF_STATS_RING] = ms;
    st->runs++;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void mf_stats_report(const mf_stats *st, minfer_run_stats *out, double *scratch) {
    memset(out, 0, sizeof *out);
    out->runs = st->runs;
    out->since_reset_s = (mf_now_ms() - st->since) / 1e3;
    if (!st->runs)
        return;
    size_t n = st->runs < MF_STATS_RING ? (size_t)st->runs : MF_STATS_RING;
    memcpy(scratch, st->ring, n * sizeof *scratch);
    qsort(scratch, n, sizeof *scratch, cmp_double);
    out->mean_ms = st->sum_ms / (double)st->runs;
    out->min_ms = st->min_ms;
    out->max_ms = st->max_ms;
    out->p50_ms = scratch[(n - 1) / 2];
    size_t k90 = (size_t)ceil(0.9 * (double)n);
    out->p90_ms = scratch[k90 ? k90 - 1 : 0];
    out->throughput = out->since_reset_s > 0 ? (double)st->runs / out->since_reset_s : 0;
}

/* Fill colour of provider index p (-1: folded constant). */
static const char *const palette[] = {"#8ecae6", "#ffb703", "#90be6d", "#f28482",
                                      "#cdb4db", "#f6bd60", "#84a59d"};

const char *mf_provider_colour(int p) {
    return p < 0 ? "#e0e0e0" : palette[(size_t)p % (sizeof palette / sizeof palette[0])];
}
