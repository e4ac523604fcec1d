/*
 * minfer test PATH...: runs ONNX backend-style test cases.
 *
 * A case is a directory holding model.onnx and test_data_set_N/ directories
 * of input_K.pb and output_K.pb files. PATH is a case or a directory searched
 * recursively (in sorted order) for cases. For each case:
 *  1. create the session once (MINFER_ERR_UNSUPPORTED skips the case, any
 *     other error fails it);
 *  2. for each data set, in numeric order: load the inputs, binding each by
 *     its name when that is a session input, else by position; run;
 *  3. compare each expected output (by name when it names a session output,
 *     else by position) for type, shape and values within atol + rtol * |e|.
 * One line per failed or skipped data set (or case, when its model does not
 * load), then "N passed, N failed, N skipped", counting data sets: a case
 * with two data sets counts twice.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const char *CMD = "test";



/* Directory nesting the walk follows at most. */
#define MAX_DEPTH 32

/* The directories the walk has entered, by device and inode: a symbolic
 * link back to one of them (three links to '.' make 3^32 paths) is not
 * followed again, so every directory is read once. */
typedef struct seen_dirs {
    struct {
        dev_t dev;
        ino_t ino;
    } *v;
    size_t n, cap;
} seen_dirs;

/* 1 if the directory sb describes was entered before, else records it and
 * returns 0; -1 when out of memory. */
static int seen_before(seen_dirs *seen, const struct stat *sb) {
    for (size_t i = 0; i < seen->n; i++)
        if (seen->v[i].dev == sb->st_dev && seen->v[i].ino == sb->st_ino)
            return 1;
    if (seen->n == seen->cap) {
        size_t cap = seen->cap ? seen->cap * 2 : 64;
        void *v = realloc(seen->v, cap * sizeof *seen->v);
        if (!v)
            return -1;
        seen->v = v;
        seen->cap = cap;
    }
    seen->v[seen->n].dev = sb->st_dev;
    seen->v[seen->n].ino = sb->st_ino;
    seen->n++;
    return 0;
}

typedef struct strlist {
    char **v;
    size_t n, cap;
} strlist;

static int strlist_add(strlist *l, const char *s) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(s)))
        return -1;
    l->n++;
    return 0;
}

static void strlist_free(strlist *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Sorted names of the entries of dir (without . and ..); -1 on error. */
static int list_dir(const char *dir, strlist *out) {
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (strlist_add(out, e->d_name) != 0) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, cmp_str);
    return 0;
}

/* Appends the cases under path (path itself if it is one) to cases,
 * entering each directory once however many links lead to it. */
static void find_cases(const char *path, int depth, seen_dirs *seen, strlist *cases) {
    char buf[4096];
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode) || seen_before(seen, &sb) != 0)
        return;
    snprintf(buf, sizeof buf, "%s/model.onnx", path);
    if (is_file(buf)) {
        strlist_add(cases, path);
        return;
    }
    if (depth >= MAX_DEPTH)
        return;
    strlist names = {0};
    if (list_dir(path, &names) == 0)
        for (size_t i = 0; i < names.n; i++) {
            snprintf(buf, sizeof buf, "%s%s%s", path,
                     path[strlen(path) - 1] == '/' ? "" : "/", names.v[i]);
            if (names.v[i][0] != '.' && is_dir(buf))
                find_cases(buf, depth + 1, seen, cases);
        }
    strlist_free(&names);
}

typedef struct dataset {
    long n;
    char *name;
} dataset;

static int cmp_dataset(const void *a, const void *b) {
    const dataset *x = a, *y = b;
    return x->n < y->n ? -1 : x->n > y->n;
}

/* The test_data_set_N directories of a case, in numeric order. */
static size_t find_datasets(const char *dir, dataset **out) {
    strlist names = {0};
    dataset *v = NULL;
    size_t n = 0;
    const char *prefix = "test_data_set_";
    size_t plen = strlen(prefix);
    *out = NULL;
    if (list_dir(dir, &names) != 0)
        return 0;
    v = calloc(names.n + 1, sizeof *v);
    for (size_t i = 0; v && i < names.n; i++) {
        const char *s = names.v[i];
        char *end = NULL, path[4096];
        if (strncmp(s, prefix, plen) != 0 || !s[plen])
            continue;
        long k = strtol(s + plen, &end, 10);
        snprintf(path, sizeof path, "%s/%s", dir, s);
        if (*end || k < 0 || !is_dir(path))
            continue;
        v[n].n = k;
        v[n].name = strdup(s);
        if (v[n].name)
            n++;
    }
    strlist_free(&names);
    if (n)
        qsort(v, n, sizeof *v, cmp_dataset);
    *out = v;
    return n;
}

/* Counts prefix_K.pb files for K = 0, 1, ... until one is missing. */
static size_t count_pb(const char *dir, const char *prefix) {
    char path[4096];
    size_t k = 0;
    for (;; k++) {
        snprintf(path, sizeof path, "%s/%s_%zu.pb", dir, prefix, k);
        if (access(path, F_OK) != 0)
            return k;
    }
}

/* Element i of data of type dt formatted for a message. */
static const char *fmt_elem(const void *p, minfer_dtype dt, size_t i, char *buf, size_t size) {
    switch (dt) {
    case MINFER_DTYPE_STRING: {
        const char *s = ((char *const *)p)[i];
        snprintf(buf, size, "\"%s\"", s ? s : "");
        break;
    }
    case MINFER_DTYPE_INT64: snprintf(buf, size, "%lld", (long long)((const int64_t *)p)[i]); break;
    case MINFER_DTYPE_UINT64:
        snprintf(buf, size, "%llu", (unsigned long long)((const uint64_t *)p)[i]);
        break;
    default:
        if (cli_is_float(dt))
            snprintf(buf, size, "%.9g", cli_elem(p, dt, i));
        else
            snprintf(buf, size, "%.0f", cli_elem(p, dt, i));
        break;
    }
    return buf;
}

/* Compares tensor got with want; on a mismatch writes the reason to why. */
static int compare_tensor(const minfer_tensor *got, const minfer_tensor *want, double rtol,
                          double atol, char *why, size_t size) {
    char a[128], b[128];
    minfer_dtype dt = minfer_tensor_dtype(want);
    /* ONNX's older test data stores bfloat16 tensors as uint16 bits. */
    if (dt == MINFER_DTYPE_UINT16 && minfer_tensor_dtype(got) == MINFER_DTYPE_BFLOAT16)
        dt = MINFER_DTYPE_BFLOAT16;
    if (minfer_tensor_dtype(got) != dt) {
        snprintf(why, size, "type %s, expected %s", minfer_dtype_name(minfer_tensor_dtype(got)),
                 minfer_dtype_name(dt));
        return -1;
    }
    size_t rank = minfer_tensor_rank(want);
    int same_shape = minfer_tensor_rank(got) == rank;
    for (size_t d = 0; same_shape && d < rank; d++)
        same_shape = minfer_tensor_dims(got)[d] == minfer_tensor_dims(want)[d];
    if (!same_shape) {
        snprintf(why, size, "shape %s, expected %s",
                 cli_shape_str(minfer_tensor_dims(got), NULL, (int)minfer_tensor_rank(got), a,
                               sizeof a),
                 cli_shape_str(minfer_tensor_dims(want), NULL, (int)rank, b, sizeof b));
        return -1;
    }
    if (isinf(atol))
        return 0; /* type and shape only */
    const unsigned char *gp = minfer_tensor_data(got), *wp = minfer_tensor_data(want);
    size_t n = cli_scalar_count(want), bad = 0, first = 0;
    double max_diff = 0;
    for (size_t i = 0; i < n; i++) {
        int ok;
        if (dt == MINFER_DTYPE_STRING) {
            const char *x = ((char *const *)(const void *)gp)[i];
            const char *y = ((char *const *)(const void *)wp)[i];
            ok = strcmp(x ? x : "", y ? y : "") == 0;
        } else if (cli_is_float(dt)) {
            double x = cli_elem(gp, dt, i), e = cli_elem(wp, dt, i);
            if (isnan(e))
                ok = isnan(x);
            else if (isinf(e))
                ok = x == e;
            else
                ok = !isnan(x) && fabs(x - e) <= atol + rtol * fabs(e);
            if (!ok && !isnan(x) && !isnan(e) && !isinf(x) && !isinf(e) &&
                fabs(x - e) > max_diff)
                max_diff = fabs(x - e);
        } else {
            size_t es = minfer_dtype_size(dt);
            ok = memcmp(gp + i * es, wp + i * es, es) == 0;
        }
        if (!ok && bad++ == 0)
            first = i;
    }
    if (!bad)
        return 0;
    /* A complex tensor is compared as scalars; name the element and part. */
    int cplx = dt == MINFER_DTYPE_COMPLEX64 || dt == MINFER_DTYPE_COMPLEX128;
    if (cplx) {
        snprintf(a, sizeof a, "%.9g", cli_elem(gp, dt, first));
        snprintf(b, sizeof b, "%.9g", cli_elem(wp, dt, first));
    } else {
        fmt_elem(gp, dt, first, a, sizeof a);
        fmt_elem(wp, dt, first, b, sizeof b);
    }
    int k = snprintf(why, size, "index %zu%s: got %s, expected %s (%zu of %zu differ",
                     cplx ? first / 2 : first, cplx ? (first % 2 ? " (imag)" : " (real)") : "",
                     a, b, bad, n);
    if (k > 0 && (size_t)k < size) {
        if (cli_is_float(dt))
            snprintf(why + k, size - (size_t)k, "; max abs diff %.3g)", max_diff);
        else
            snprintf(why + k, size - (size_t)k, ")");
    }
    return -1;
}

static const char *kind_name(minfer_value_kind k) {
    return k == MINFER_VALUE_SEQUENCE ? "a sequence" : k == MINFER_VALUE_OPTIONAL ? "an optional"
                                                                                 : "a tensor";
}

/* Compares values of any kind: sequences element by element, optionals by
 * presence and then contents. */
static int compare(const minfer_tensor *got, const minfer_tensor *want, double rtol, double atol,
                   char *why, size_t size) {
    minfer_value_kind gk = minfer_value_kind_of(got), wk = minfer_value_kind_of(want);
    if (gk != wk) {
        snprintf(why, size, "is %s, expected %s", kind_name(gk), kind_name(wk));
        return -1;
    }
    if (wk == MINFER_VALUE_TENSOR)
        return compare_tensor(got, want, rtol, atol, why, size);
    if (wk == MINFER_VALUE_OPTIONAL) {
        const minfer_tensor *g = minfer_optional_value(got), *w = minfer_optional_value(want);
        if (!g || !w) {
            if (g == w)
                return 0;
            snprintf(why, size, "is %s, expected %s", g ? "a value" : "empty",
                     w ? "a value" : "empty");
            return -1;
        }
        return compare(g, w, rtol, atol, why, size);
    }
    size_t n = minfer_sequence_length(want);
    if (minfer_sequence_length(got) != n) {
        snprintf(why, size, "has %zu elements, expected %zu", minfer_sequence_length(got), n);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        char inner[768];
        if (compare(minfer_sequence_at(got, i), minfer_sequence_at(want, i), rtol, atol, inner,
                    sizeof inner) != 0) {
            snprintf(why, size, "element %zu: %s", i, inner);
            return -1;
        }
    }
    return 0;
}

/* The kind of the model's index-th input or output (test data are
 * positional), for reading its .pb file. */
static minfer_value_kind pb_kind(const minfer_session *s, size_t index, int output) {
    minfer_value_info info;
    minfer_status st = output ? minfer_session_output_info(s, index, &info)
                              : minfer_session_input_info(s, index, &info);
    return st == MINFER_OK ? (minfer_value_kind)info.kind : MINFER_VALUE_TENSOR;
}

typedef struct test_cfg {
    const minfer_options *opt;
    double rtol, atol;
    int verbose;
    const char *random_op; /* the case's op whose outputs are a random draw, or NULL */
    int json;              /* --json: the lines go to stderr */
} test_cfg;

/* Ops whose outputs are random: their values cannot match a reference
 * drawn by another generator (Dropout only in training mode, which the
 * values then show). */
static const char *random_op(const minfer_session *s) {
    static const char *const ops[] = {"Bernoulli",    "RandomNormal",     "RandomNormalLike",
                                      "RandomUniform", "RandomUniformLike", "Multinomial",
                                      "Dropout"};
    for (size_t i = 0; i < minfer_session_node_count(s); i++) {
        minfer_node_placement pl;
        if (minfer_session_node_placement(s, i, &pl) != MINFER_OK || pl.domain[0])
            continue;
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
            if (strcmp(pl.op_type, ops[k]) == 0)
                return ops[k];
    }
    return NULL;
}

/* Runs one data set; 0 when every output matches, else the reason in why. */
static int run_dataset(const test_cfg *cfg, minfer_session *s, const char *dir, const char *ds,
                       char *why, size_t size) {
    char path[4096], detail[1024];
    size_t n_sin = minfer_session_input_count(s), n_sout = minfer_session_output_count(s);
    size_t n_in = count_pb(dir, "input"), n_exp = count_pb(dir, "output");
    minfer_tensor **ins = calloc(n_in + 1, sizeof *ins);
    minfer_tensor **outs = calloc(n_sout + 1, sizeof *outs);
    const char **names = calloc(n_in + 1, sizeof *names);
    char **pb_names = calloc(n_in + 1, sizeof *pb_names);
    int *bound = calloc(n_sin + 1, sizeof *bound);
    const minfer_tensor **feed = calloc(n_in + 1, sizeof *feed);
    minfer_tensor **relabeled = calloc(n_in + 1, sizeof *relabeled);
    int rc = -1;
    minfer_status st;

    if (!ins || !outs || !names || !pb_names || !bound || !feed || !relabeled) {
        snprintf(why, size, "%s: out of memory", ds);
        goto done;
    }
    if (n_exp == 0) {
        snprintf(why, size, "%s: no output_0.pb", ds);
        goto done;
    }
    if (n_exp > n_sout) {
        snprintf(why, size, "%s: %zu expected outputs, the model has %zu", ds, n_exp, n_sout);
        goto done;
    }
    for (size_t k = 0; k < n_in; k++) {
        snprintf(path, sizeof path, "%s/input_%zu.pb", dir, k);
        if ((st = minfer_value_load_pb(path, pb_kind(s, k, 0), &ins[k], &pb_names[k])) !=
            MINFER_OK) {
            snprintf(why, size, "%s: input_%zu.pb: %s", ds, k, cli_error(st));
            goto done;
        }
    }
    /* Bind by name first, so a positional fallback cannot take a slot a
     * named tensor owns. */
    for (size_t k = 0; k < n_in; k++)
        for (size_t i = 0; i < n_sin; i++) {
            minfer_value_info info;
            if (pb_names[k][0] && minfer_session_input_info(s, i, &info) == MINFER_OK &&
                strcmp(info.name, pb_names[k]) == 0) {
                names[k] = info.name;
                bound[i] = 1;
                break;
            }
        }
    for (size_t k = 0; k < n_in; k++) {
        minfer_value_info info;
        if (names[k])
            continue;
        if (k < n_sin && !bound[k] && minfer_session_input_info(s, k, &info) == MINFER_OK) {
            names[k] = info.name;
            bound[k] = 1;
        } else if (pb_names[k][0]) {
            names[k] = pb_names[k]; /* perhaps an initializer override */
        } else {
            snprintf(why, size, "%s: input_%zu.pb matches no model input", ds, k);
            goto done;
        }
    }

    /* ONNX's older test data stores bfloat16 tensors as uint16 bits: feed
     * those as bfloat16 where the model asks for it. */
    for (size_t k = 0; k < n_in; k++) {
        feed[k] = ins[k];
        for (size_t i = 0; i < n_sin; i++) {
            minfer_value_info info;
            if (minfer_session_input_info(s, i, &info) != MINFER_OK ||
                strcmp(info.name, names[k]) != 0)
                continue;
            if (info.dtype == MINFER_DTYPE_BFLOAT16 &&
                minfer_tensor_dtype(ins[k]) == MINFER_DTYPE_UINT16 &&
                minfer_tensor_wrap(MINFER_DTYPE_BFLOAT16, minfer_tensor_dims(ins[k]),
                                   minfer_tensor_rank(ins[k]), minfer_tensor_data(ins[k]),
                                   minfer_tensor_nbytes(ins[k]), &relabeled[k]) == MINFER_OK)
                feed[k] = relabeled[k];
            break;
        }
    }

    st = minfer_session_run(s, names, (const minfer_tensor *const *)feed, n_in, NULL, outs,
                            n_sout);
    if (st != MINFER_OK) {
        snprintf(why, size, "%s: run failed: %s", ds, cli_error(st));
        goto done;
    }

    for (size_t k = 0; k < n_exp; k++) {
        minfer_tensor *want = NULL;
        char *wname = NULL;
        size_t slot = k;
        snprintf(path, sizeof path, "%s/output_%zu.pb", dir, k);
        if ((st = minfer_value_load_pb(path, pb_kind(s, k, 1), &want, &wname)) != MINFER_OK) {
            snprintf(why, size, "%s: output_%zu.pb: %s", ds, k, cli_error(st));
            goto done;
        }
        for (size_t i = 0; wname[0] && i < n_sout; i++) {
            minfer_value_info info;
            if (minfer_session_output_info(s, i, &info) == MINFER_OK &&
                strcmp(info.name, wname) == 0) {
                slot = i;
                break;
            }
        }
        minfer_value_info oinfo;
        const char *oname = minfer_session_output_info(s, slot, &oinfo) == MINFER_OK
                                ? oinfo.name
                                : wname;
        int bad = compare(outs[slot], want, cfg->rtol, cfg->atol, detail, sizeof detail);
        /* Dropout draws only in training mode, which a mismatch shows; the
         * other random ops always draw, and a match would be luck. */
        int draws = cfg->random_op && (bad || strcmp(cfg->random_op, "Dropout") != 0);
        if (draws) {
            /* A random draw: the same type and shape is all that can match
             * (tests/test_random.c checks the distributions). */
            char shape_why[1024];
            if (compare(outs[slot], want, INFINITY, INFINITY, shape_why, sizeof shape_why) == 0) {
                if (rc != 2)
                    snprintf(why, size,
                             "%s, output '%s': random output (%s): type and shape match; the "
                             "values are a draw that cannot match the reference's",
                             ds, oname, cfg->random_op);
                rc = 2;
                bad = 0;
            }
        }
        minfer_tensor_free(want);
        free(wname);
        if (bad) {
            snprintf(why, size, "%s, output '%s' %s", ds, oname, detail);
            rc = -1;
            goto done;
        }
    }
    if (rc != 2)
        rc = 0;
done:
    for (size_t k = 0; ins && k < n_in; k++)
        minfer_tensor_free(ins[k]);
    for (size_t k = 0; pb_names && k < n_in; k++)
        free(pb_names[k]);
    for (size_t k = 0; relabeled && k < n_in; k++)
        minfer_tensor_free(relabeled[k]);
    for (size_t k = 0; outs && k < n_sout; k++)
        minfer_tensor_free(outs[k]);
    free(ins);
    free(outs);
    free(names);
    free(pb_names);
    free(bound);
    free(feed);
    free(relabeled);
    return rc;
}

typedef struct tally {
    size_t passed, failed, skipped;
    json_t *results; /* one object per data set, for --json and --junit; NULL: not kept */
} tally;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Keeps one outcome ("pass", "fail" or "skip") for --json and --junit. */
static void record(tally *t, const char *dir, const char *ds, const char *status,
                   const char *why, double ms) {
    if (!t->results)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "case", cli_json_str(dir));
    json_object_set_new(o, "data_set", ds ? cli_json_str(ds) : json_null());
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "message", cli_json_str(why ? why : ""));
    json_object_set_new(o, "time_ms", json_real(ms));
    json_array_append_new(t->results, o);
}

/* Runs every data set of one case; each data set counts once. */
static void run_case(const test_cfg *cfg, const char *dir, tally *t) {
    char model[4096], why[2048];
    dataset *sets = NULL;
    minfer_session *s = NULL;
    FILE *out = cfg->json ? stderr : stdout; /* --json: stdout holds the JSON alone */

    size_t n = find_datasets(dir, &sets);
    if (n == 0) {
        fprintf(out, "FAIL %s: no test_data_set_N directories\n", dir);
        record(t, dir, NULL, "fail", "no test_data_set_N directories", 0);
        t->failed++;
        goto done;
    }
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    double t0 = now_ms();
    minfer_status st = minfer_session_create(model, cfg->opt, &s);
    if (st != MINFER_OK) {
        int skip = st == MINFER_ERR_UNSUPPORTED;
        fprintf(out, "%s %s: %s\n", skip ? "SKIP" : "FAIL", dir, cli_error(st));
        snprintf(why, sizeof why, "%s", cli_error(st));
        for (size_t i = 0; i < n; i++)
            record(t, dir, sets[i].name, skip ? "skip" : "fail", why, now_ms() - t0);
        if (skip)
            t->skipped += n;
        else
            t->failed += n;
        goto done;
    }
    cli_note_reference(s);
    test_cfg case_cfg = *cfg;
    case_cfg.random_op = random_op(s);
    for (size_t i = 0; i < n; i++) {
        char ds_dir[4096];
        snprintf(ds_dir, sizeof ds_dir, "%s/%s", dir, sets[i].name);
        t0 = now_ms();
        int rc = run_dataset(&case_cfg, s, ds_dir, sets[i].name, why, sizeof why);
        double ms = now_ms() - t0;
        if (rc == 2) {
            fprintf(out, "SKIP %s: %s\n", dir, why);
            record(t, dir, sets[i].name, "skip", why, ms);
            t->skipped++;
            continue;
        }
        if (rc != 0) {
            fprintf(out, "FAIL %s: %s\n", dir, why);
            record(t, dir, sets[i].name, "fail", why, ms);
            t->failed++;
            continue;
        }
        record(t, dir, sets[i].name, "pass", NULL, ms);
        t->passed++;
        if (cfg->verbose)
            fprintf(out, "ok %s/%s\n", dir, sets[i].name);
    }
done:
    for (size_t i = 0; sets && i < n; i++)
        free(sets[i].name);
    free(sets);
    minfer_session_free(s);
    fflush(out);
}

/* s with XML's five special characters as entities, and control
 * characters (not allowed in XML 1.0) as spaces. */
static void xml_text(FILE *f, const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default: fputc(c < 0x20 && c != '\n' && c != '\t' ? ' ' : (int)c, f);
        }
    }
}

/* JUnit XML (the schema Jenkins and GitLab read): one testsuite, one
 * testcase per data set, named "CASE/DATA_SET". 0, or -1 on a write error. */
static int write_junit(const char *path, const tally *t, double total_ms) {
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(f, "<testsuites tests=\"%zu\" failures=\"%zu\" skipped=\"%zu\" time=\"%.3f\">\n",
            t->passed + t->failed + t->skipped, t->failed, t->skipped, total_ms / 1e3);
    fprintf(f, "  <testsuite name=\"minfer test\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" "
               "skipped=\"%zu\" time=\"%.3f\">\n",
            t->passed + t->failed + t->skipped, t->failed, t->skipped, total_ms / 1e3);
    for (size_t i = 0; i < json_array_size(t->results); i++) {
        json_t *r = json_array_get(t->results, i);
        const char *c = json_string_value(json_object_get(r, "case"));
        const char *ds = json_string_value(json_object_get(r, "data_set"));
        const char *st = json_string_value(json_object_get(r, "status"));
        const char *msg = json_string_value(json_object_get(r, "message"));
        fputs("    <testcase classname=\"", f);
        xml_text(f, c ? c : "");
        fputs("\" name=\"", f);
        xml_text(f, ds ? ds : "(case)");
        fprintf(f, "\" time=\"%.3f\"", json_real_value(json_object_get(r, "time_ms")) / 1e3);
        if (st && strcmp(st, "pass") != 0) {
            fprintf(f, ">\n      <%s message=\"", strcmp(st, "fail") == 0 ? "failure" : "skipped");
            xml_text(f, msg ? msg : "");
            fputs("\"/>\n    </testcase>\n", f);
        } else
            fputs("/>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    int bad = ferror(f);
    return fclose(f) != 0 || bad ? -1 : 0;
}

static void print_help(void) {
    printf("usage: minfer test [options] PATH...\n"
           "\n"
           "Runs ONNX test cases. PATH is a case directory (model.onnx and\n"
           "test_data_set_N/ with input_K.pb and output_K.pb) or a directory searched\n"
           "recursively for cases (each directory once, however many symbolic links\n"
           "lead to it). Prints a line per failed or skipped data set,\n"
           "then 'N passed, N failed, N skipped', counting data sets; exits 1 if\n"
           "any failed. Sequence and optional outputs are compared element by\n"
           "element. A case whose outputs are a random draw (Bernoulli, Random*,\n"
           "Multinomial; Dropout when its values differ, i.e. in training mode) is\n"
           "skipped, with that reason, when every type and shape matches.\n"
           "\n"
           "options:\n"
           "  --providers LIST  provider preference, e.g. 'opencl,cpu'\n"
           "  --rtol R          relative tolerance for floats (default 1e-3)\n"
           "  --atol A          absolute tolerance for floats (default 1e-5, ONNX Runtime's\n"
           "                    test runner's; the ONNX backend node tests use 1e-7)\n"
           "  --threads N       threads for each session's pool (0: one per CPU)\n"
           "  -v, --verbose     also print 'ok CASE/DATASET' for passing data sets\n"
           "  --json            print one JSON object (counts and every data set's case,\n"
           "                    status, message and time) on standard output; the\n"
           "                    FAIL/SKIP lines then go to standard error\n"
           "  --junit FILE      also write the results as JUnit XML to FILE (for CI)\n"
           "  --force           replace the --junit file if it exists\n"
           "  --check-nan       fail a data set whose run makes a NaN/Inf, naming the node\n"
           "  --strict          do not run a case in which a node falls back past the first\n"
           "                    provider; it is reported (as SKIP) naming those nodes\n"
           "  -h, --help        show this help\n");
}

int cmd_test(int argc, char **argv) {
    const char *providers = NULL, *rtol_s = NULL, *atol_s = NULL, *threads_s = NULL;
    int verbose = 0, help = 0, threads = -1, check_nan = 0, strict = 0, json = 0, force = 0, rc;
    const char *junit = NULL;
    cli_out junit_out = {0};
    const cli_opt opts[] = {
        {"providers", 0, &providers, NULL, NULL}, {"rtol", 0, &rtol_s, NULL, NULL},
        {"atol", 0, &atol_s, NULL, NULL},         {"threads", 0, &threads_s, NULL, NULL},
        {"verbose", 'v', NULL, &verbose, NULL},   {"check-nan", 0, NULL, &check_nan, NULL},
        {"strict", 0, NULL, &strict, NULL},  {"json", 0, NULL, &json, NULL},
        {"junit", 0, &junit, NULL, NULL},     {"force", 0, NULL, &force, NULL},
    };
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0;
    tally t = {0, 0, 0, NULL};
    minfer_options *opt = NULL;
    strlist cases = {0};
    seen_dirs seen = {0};
    /* ONNX Runtime's onnx_test_runner defaults: whole models in float32
     * differ from a reference by ~1e-6 in outputs near 1e-4, beyond
     * the node tests' atol 1e-7. */
    test_cfg cfg = {NULL, 1e-3, 1e-5, 0, NULL, 0};

    if (!pos) {
        fprintf(stderr, "minfer test: out of memory\n");
        return CLI_FAIL;
    }
    rc = cli_parse(CMD, argc, argv, opts, sizeof opts / sizeof opts[0], pos, &n_pos, &help);
    if (rc)
        goto done;
    if (help) {
        print_help();
        goto done;
    }
    if (n_pos == 0) {
        fprintf(stderr, "minfer test: no PATH given (see 'minfer test --help')\n");
        rc = CLI_USAGE;
        goto done;
    }
    if ((rtol_s && (rc = cli_parse_double(CMD, "--rtol", rtol_s, &cfg.rtol))) ||
        (atol_s && (rc = cli_parse_double(CMD, "--atol", atol_s, &cfg.atol))) ||
        (threads_s &&
         (rc = cli_parse_int(CMD, "--threads", threads_s, 0, MINFER_MAX_THREADS, &threads))))
        goto done;
    cfg.verbose = verbose;
    cfg.json = json;
    /* Before any work, so a path that cannot be written fails at once. */
    if (junit && cli_out_begin(CMD, "the JUnit report", junit, force, &junit_out) != 0) {
        rc = CLI_FAIL;
        goto done;
    }
    if ((json || junit) && !(t.results = json_array())) {
        fprintf(stderr, "minfer test: out of memory\n");
        rc = CLI_FAIL;
        goto done;
    }
    double t_start = now_ms();

    minfer_status st = cli_make_options(providers, threads, &opt);
    if (st != MINFER_OK) {
        fprintf(stderr, "minfer test: %s\n", cli_error(st));
        rc = CLI_FAIL;
        goto done;
    }
    if ((rc = cli_set_diagnostics(CMD, opt, NULL, 0, NULL, check_nan, strict)) != 0)
        goto done;
    cfg.opt = opt;
    for (size_t i = 0; i < n_pos; i++) {
        struct stat sb;
        int found = stat(pos[i], &sb) == 0;
        if (!found || !S_ISDIR(sb.st_mode)) {
            const char *why = found ? "not a directory" : strerror(errno);
            fprintf(json ? stderr : stdout, "FAIL %s: %s\n", pos[i], why);
            record(&t, pos[i], NULL, "fail", why, 0);
            t.failed++;
            continue;
        }
        size_t before = cases.n;
        seen.n = 0; /* each PATH is walked whole */
        find_cases(pos[i], 0, &seen, &cases);
        if (cases.n == before)
            fprintf(stderr, "minfer test: no test cases (model.onnx) under '%s'\n", pos[i]);
    }
    for (size_t i = 0; i < cases.n; i++)
        run_case(&cfg, cases.v[i], &t);
    rc = t.failed || cases.n == 0 ? CLI_FAIL : CLI_OK;
    if (junit) {
        if (write_junit(junit_out.tmp, &t, now_ms() - t_start) != 0) {
            fprintf(stderr, "minfer test: cannot write the JUnit report to '%s': %s\n", junit,
                    strerror(errno));
            rc = CLI_FAIL;
        } else if (cli_out_commit(CMD, "the JUnit report", &junit_out) != 0)
            rc = CLI_FAIL;
    }
    if (json) {
        json_t *root = json_object();
        json_object_set_new(root, "passed", json_integer((json_int_t)t.passed));
        json_object_set_new(root, "failed", json_integer((json_int_t)t.failed));
        json_object_set_new(root, "skipped", json_integer((json_int_t)t.skipped));
        json_object_set_new(root, "rtol", json_real(cfg.rtol));
        json_object_set_new(root, "atol", json_real(cfg.atol));
        json_object_set_new(root, "results", t.results);
        t.results = NULL;
        if (cli_json_print(CMD, root) != 0)
            rc = CLI_FAIL;
    } else
        printf("%zu passed, %zu failed, %zu skipped\n", t.passed, t.failed, t.skipped);
done:
    cli_out_abort(&junit_out);
    json_decref(t.results);
    free(seen.v);
    strlist_free(&cases);
    minfer_options_free(opt);
    free(pos);
    return rc;
}
