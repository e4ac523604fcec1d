/* Argument parsing, number and shape formatting shared by the commands. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "minfer/provider_kit.h"

static const cli_opt *find_long(const cli_opt *opts, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
            return &opts[i];
    return NULL;
}

/* Edit distance (insertions, deletions, substitutions, and a swap of two
 * neighbours) between a and b, stopping at limit + 1; for short words. */
static size_t edit_distance(const char *a, const char *b, size_t limit) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return limit + 1;
    size_t d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[la][lb] > limit ? limit + 1 : d[la][lb];
}

const char *cli_suggest(const char *word, const char *const *candidates, size_t n) {
    size_t len = strlen(word), limit = len <= 4 ? 1 : len <= 8 ? 2 : 3, best = limit + 1;
    const char *pick = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, candidates[i], limit);
        /* A prefix of a longer option reads as that option too (--thread). */
        if (d > 1 && len >= 3 && strncmp(word, candidates[i], len) == 0)
            d = 1;
        if (d < best) {
            best = d;
            pick = candidates[i];
        }
    }
    return pick;
}

/* "unknown option", with the nearest option of the command when one is near. */
static void unknown_option(const char *cmd, const char *a, const cli_opt *opts, size_t n_opts) {
    const char *names[128];
    size_t n = 0;
    for (size_t i = 0; i < n_opts && n < 127; i++)
        names[n++] = opts[i].name;
    names[n++] = "help";
    const char *word = a + strspn(a, "-");
    char buf[64];
    snprintf(buf, sizeof buf, "%.*s", (int)strcspn(word, "="), word);
    const char *near = a[1] == '-' || strlen(a) > 2 ? cli_suggest(buf, names, n) : NULL;
    if (near)
        fprintf(stderr, "minfer %s: unknown option '%s'; did you mean '--%s'? (see 'minfer %s --help')\n",
                cmd, a, near, cmd);
    else
        fprintf(stderr, "minfer %s: unknown option '%s' (see 'minfer %s --help')\n", cmd, a, cmd);
}

int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, size_t n_opts,
              char **pos, size_t *n_pos, int *help) {
    int only_pos = 0;
    *n_pos = 0;
    *help = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_pos || a[0] != '-' || a[1] == '\0') {
            pos[(*n_pos)++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            *help = 1;
            continue;
        }
        const cli_opt *o = NULL;
        const char *inline_val = NULL;
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t len = eq ? (size_t)(eq - name) : strlen(name);
            o = find_long(opts, n_opts, name, len);
            if (eq)
                inline_val = eq + 1;
        } else if (a[2] == '\0') {
            for (size_t k = 0; k < n_opts; k++)
                if (opts[k].short_name && opts[k].short_name == a[1])
                    o = &opts[k];
        }
        if (!o) {
            unknown_option(cmd, a, opts, n_opts);
            return CLI_USAGE;
        }
        if (o->flag && !o->list) {
            if (inline_val) {
                fprintf(stderr, "minfer %s: option '--%s' takes no value\n", cmd, o->name);
                return CLI_USAGE;
            }
            *o->flag = 1;
            continue;
        }
        if (!inline_val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "minfer %s: option '--%s' needs a value\n", cmd, o->name);
                return CLI_USAGE;
            }
            inline_val = argv[++i];
        }
        if (o->list) {
            const char **v = realloc(o->list->v, (o->list->n + 1) * sizeof *v);
            if (!v) {
                fprintf(stderr, "minfer %s: out of memory\n", cmd);
                return CLI_FAIL;
            }
            o->list->v = v;
            v[o->list->n++] = inline_val;
        } else
            *o->value = inline_val;
    }
    return 0;
}

int cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "minfer%s%s: %s '%s' is not an integer in %ld..%ld\n", cmd ? " " : "",
                cmd ? cmd : "", opt, s, lo, hi);
        return CLI_USAGE;
    }
    *out = (int)v;
    return 0;
}

int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0) || isinf(v)) {
        fprintf(stderr, "minfer %s: %s '%s' is not a non-negative number\n", cmd, opt, s);
        return CLI_USAGE;
    }
    *out = v;
    return 0;
}

int cli_opt_level = -1;
int cli_scheduler = -1;
int cli_inter_op = -1;

int cli_set_schedule(const char *scheduler, const char *inter_op) {
    if (scheduler) {
        if (strcmp(scheduler, "sequential") == 0)
            cli_scheduler = MINFER_SCHED_SEQUENTIAL;
        else if (strcmp(scheduler, "parallel") == 0)
            cli_scheduler = MINFER_SCHED_PARALLEL;
        else if (strcmp(scheduler, "pipeline") == 0)
            cli_scheduler = MINFER_SCHED_PIPELINE;
        else {
            fprintf(stderr,
                    "minfer: --scheduler '%s': not a scheduler (sequential, parallel, pipeline)\n",
                    scheduler);
            return -1;
        }
        return 0;
    }
    if (!inter_op) {
        fprintf(stderr, "minfer: --scheduler needs sequential, parallel or pipeline; "
                        "--inter-op-threads "
                        "a count\n");
        return -1;
    }
    return cli_parse_int(NULL, "--inter-op-threads", inter_op, 0, 1024, &cli_inter_op);
}
int cli_precision = -1;

int cli_set_precision(const char *precision) {
    if (precision && strcmp(precision, "fp32") == 0)
        cli_precision = MINFER_PRECISION_FP32;
    else if (precision && strcmp(precision, "bf16") == 0)
        cli_precision = MINFER_PRECISION_BF16;
    else {
        fprintf(stderr, "minfer: --precision %s%s%s: use fp32 or bf16\n", precision ? "'" : "",
                precision ? precision : "needs a value", precision ? "'" : "");
        return -1;
    }
    return 0;
}

cli_list cli_plugins;

int cli_add_plugin(const char *file) {
    const char **v = realloc(cli_plugins.v, (cli_plugins.n + 1) * sizeof *v);
    if (!v) {
        fprintf(stderr, "minfer: out of memory\n");
        return CLI_FAIL;
    }
    cli_plugins.v = v;
    v[cli_plugins.n++] = file;
    return 0;
}

int cli_check_plugins(void) {
    minfer_options *opt = NULL;
    int rc = 0;
    if (cli_plugins.n == 0)
        return 0;
    minfer_status st = minfer_options_create(&opt);
    for (size_t i = 0; st == MINFER_OK && i < cli_plugins.n; i++)
        if ((st = minfer_options_add_plugin(opt, cli_plugins.v[i])) != MINFER_OK) {
            fprintf(stderr, "minfer: --plugin %s: %s\n", cli_plugins.v[i], cli_error(st));
            rc = CLI_FAIL;
        }
    if (st != MINFER_OK && !rc) {
        fprintf(stderr, "minfer: %s\n", cli_error(st));
        rc = CLI_FAIL;
    }
    minfer_options_free(opt);
    return rc;
}

/* Whether the command named its providers (--providers), for cli_note_reference. */
static int providers_named;

minfer_status cli_make_options(const char *providers, int threads, minfer_options **out) {
    providers_named = providers != NULL;
    minfer_options *opt = NULL;
    minfer_status st = minfer_options_create(&opt);
    if (st == MINFER_OK && providers)
        st = minfer_options_set_providers_str(opt, providers);
    if (st == MINFER_OK && threads >= 0)
        st = minfer_options_set_threads(opt, threads);
    if (st == MINFER_OK && cli_opt_level >= 0)
        st = minfer_options_set_optimization_level(opt, cli_opt_level);
    if (st == MINFER_OK && cli_scheduler >= 0)
        st = minfer_options_set_scheduler(opt, (minfer_scheduler)cli_scheduler);
    if (st == MINFER_OK && cli_inter_op >= 0)
        st = minfer_options_set_inter_op_threads(opt, cli_inter_op);
    if (st == MINFER_OK && cli_precision >= 0)
        st = minfer_options_set_precision(opt, (minfer_precision)cli_precision);
    for (size_t i = 0; st == MINFER_OK && i < cli_plugins.n; i++)
        st = minfer_options_add_plugin(opt, cli_plugins.v[i]);
    if (st != MINFER_OK) {
        minfer_options_free(opt);
        opt = NULL;
    }
    *out = opt;
    return st;
}

void cli_note_reference(const minfer_session *s) {
    static int said;
    const char *env = getenv("MINFER_PROVIDERS");
    if (said || !s || providers_named || (env && env[0]))
        return; /* providers chosen by the user: what they asked for */
    for (size_t i = 0; i < minfer_session_provider_count(s); i++)
        if (strcmp(minfer_session_provider_name(s, i), "onednn") == 0)
            return;
    size_t n = minfer_session_node_count(s), on_cpu = 0;
    for (size_t i = 0; i < n; i++) {
        minfer_node_placement p;
        if (minfer_session_node_placement(s, i, &p) != MINFER_OK || !p.provider)
            return;
        if (strcmp(p.provider, "cpu") == 0)
            on_cpu++;
        else if (strcmp(p.provider, "core") != 0 && strcmp(p.provider, "(constant)") != 0)
            return; /* another provider runs part of it */
    }
    if (on_cpu == 0)
        return;
    said = 1;
    fprintf(stderr, "minfer: note: the naive reference provider 'cpu' runs the whole model; the "
                    "fast CPU path, the oneDNN provider, is not installed (Debian: "
                    "minfer-provider-onednn; 'minfer providers' lists what loads)\n");
}

const char *cli_error(minfer_status st) {
    static char buf[2048];
    const char *msg = minfer_last_error();
    if (!msg || !msg[0])
        msg = minfer_status_str(st);
    snprintf(buf, sizeof buf, "%s", msg);
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    return buf;
}

const char *cli_shape_str(const int64_t *dims, const char *const *dim_names, int rank, char *buf,
                          size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    if (rank < 0) {
        snprintf(buf, size, "[?]");
        return buf;
    }
#define PUT(...)                                                                                 \
    do {                                                                                         \
        if (len < size) {                                                                        \
            int k_ = snprintf(buf + len, size - len, __VA_ARGS__);                               \
            len += k_ > 0 ? (size_t)k_ : 0;                                                      \
        }                                                                                        \
    } while (0)
    PUT("[");
    for (int i = 0; i < rank; i++) {
        if (i)
            PUT(",");
        if (dims[i] >= 0)
            PUT("%lld", (long long)dims[i]);
        else if (dim_names && dim_names[i] && dim_names[i][0])
            PUT("%s", dim_names[i]);
        else
            PUT("?");
    }
    PUT("]");
#undef PUT
    return buf;
}

int cli_is_float(minfer_dtype dt) {
    return dt == MINFER_DTYPE_FLOAT || dt == MINFER_DTYPE_DOUBLE || dt == MINFER_DTYPE_FLOAT16 ||
           dt == MINFER_DTYPE_BFLOAT16 || dt == MINFER_DTYPE_COMPLEX64 ||
           dt == MINFER_DTYPE_COMPLEX128;
}

double cli_elem(const void *data, minfer_dtype dt, size_t i) {
    switch (dt) {
    case MINFER_DTYPE_FLOAT:
    case MINFER_DTYPE_COMPLEX64: return ((const float *)data)[i];
    case MINFER_DTYPE_DOUBLE:
    case MINFER_DTYPE_COMPLEX128: return ((const double *)data)[i];
    case MINFER_DTYPE_FLOAT16: return minfer_half_to_float(((const uint16_t *)data)[i]);
    case MINFER_DTYPE_BFLOAT16: return minfer_bf16_to_float(((const uint16_t *)data)[i]);
    case MINFER_DTYPE_UINT8:
    case MINFER_DTYPE_BOOL: return ((const uint8_t *)data)[i];
    case MINFER_DTYPE_INT8: return ((const int8_t *)data)[i];
    case MINFER_DTYPE_UINT16: return ((const uint16_t *)data)[i];
    case MINFER_DTYPE_INT16: return ((const int16_t *)data)[i];
    case MINFER_DTYPE_INT32: return ((const int32_t *)data)[i];
    case MINFER_DTYPE_UINT32: return ((const uint32_t *)data)[i];
    case MINFER_DTYPE_INT64: return (double)((const int64_t *)data)[i];
    case MINFER_DTYPE_UINT64: return (double)((const uint64_t *)data)[i];
    default: return 0;
    }
}

size_t cli_scalar_count(const minfer_tensor *t) {
    size_t n = (size_t)minfer_tensor_numel(t);
    minfer_dtype dt = minfer_tensor_dtype(t);
    return dt == MINFER_DTYPE_COMPLEX64 || dt == MINFER_DTYPE_COMPLEX128 ? 2 * n : n;
}

/* Splits "NAME=REST" at its last '=' into name (malloc'd) and rest. */
static char *split_eq(const char *arg, const char **rest) {
    const char *eq = strrchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return NULL;
    *rest = eq + 1;
    return strndup(arg, (size_t)(eq - arg));
}

static int parse_size(const char *s, const char **end, int64_t *out) {
    char *e = NULL;
    errno = 0;
    long long v = strtoll(s, &e, 10);
    if (errno || e == s || v < 0 || *s == '-' || *s == '+')
        return -1;
    *out = v;
    *end = e;
    return 0;
}

int cli_set_provider_options(const char *cmd, minfer_options *opt, const cli_list *list) {
    for (size_t i = 0; list && i < list->n; i++) {
        const char *a = list->v[i], *colon = strchr(a, ':');
        const char *eq = colon ? strchr(colon + 1, '=') : NULL;
        if (!colon || colon == a || !eq) {
            fprintf(stderr, "minfer %s: --provider-option '%s' is not PROVIDER:KEY=VALUE (e.g. "
                    "opencl:device=1)\n", cmd, a);
            return CLI_USAGE;
        }
        char *prov = strndup(a, (size_t)(colon - a)), *key = strndup(colon + 1, (size_t)(eq - colon - 1));
        minfer_status st = prov && key ? minfer_options_add_provider_option(opt, prov, key, eq + 1)
                                       : MINFER_ERR_NOMEM;
        free(prov);
        free(key);
        if (st != MINFER_OK) {
            fprintf(stderr, "minfer %s: --provider-option '%s': %s\n", cmd, a, cli_error(st));
            return CLI_USAGE;
        }
    }
    return 0;
}

int cli_set_shapes(const char *cmd, minfer_options *opt, const cli_list *dims,
                   const cli_list *shapes) {
    for (size_t i = 0; dims && i < dims->n; i++) {
        const char *rest, *end;
        int64_t v;
        char *name = split_eq(dims->v[i], &rest);
        if (!name || parse_size(rest, &end, &v) != 0 || *end) {
            fprintf(stderr, "minfer %s: --dim '%s' is not NAME=SIZE (e.g. batch=8)\n", cmd,
                    dims->v[i]);
            free(name);
            return CLI_USAGE;
        }
        if (v == 0) {
            /* Empty inputs run no node's real work: results such as a mean
             * over the empty axis are NaN, not an answer (issue 34). */
            fprintf(stderr,
                    "minfer %s: --dim '%s': a size of 0 makes the inputs empty; give 1 or more\n",
                    cmd, dims->v[i]);
            free(name);
            return CLI_USAGE;
        }
        minfer_status st = minfer_options_set_dim(opt, name, v);
        free(name);
        if (st != MINFER_OK) {
            fprintf(stderr, "minfer %s: --dim '%s': %s\n", cmd, dims->v[i], cli_error(st));
            return CLI_USAGE;
        }
    }
    for (size_t i = 0; shapes && i < shapes->n; i++) {
        const char *rest, *p;
        char *name = split_eq(shapes->v[i], &rest);
        int axis = 0, ok = name != NULL;
        for (p = rest; ok && *p; axis++) {
            int64_t v;
            const char *end;
            ok = axis < MINFER_MAX_RANK && parse_size(p, &end, &v) == 0 && v > 0 &&
                 (*end == '\0' || (*end == 'x' && end[1])) &&
                 minfer_options_set_input_dim(opt, name, axis, v) == MINFER_OK;
            p = *end ? end + 1 : end;
        }
        free(name);
        if (!ok) {
            fprintf(stderr,
                    "minfer %s: --shape '%s' is not INPUT=DIMS with up to %d sizes of 1 or more "
                    "joined by 'x' (e.g. input=1x3x224x224)\n",
                    cmd, shapes->v[i], MINFER_MAX_RANK);
            return CLI_USAGE;
        }
    }
    return 0;
}

int cli_check_shapes(const char *cmd, const minfer_session *s, const cli_list *shapes) {
    for (size_t i = 0; shapes && i < shapes->n; i++) {
        const char *eq = strrchr(shapes->v[i], '=');
        int given = 1;
        for (const char *p = eq + 1; *p; p++)
            given += *p == 'x';
        for (size_t k = 0; k < minfer_session_input_count(s); k++) {
            minfer_value_info info;
            if (minfer_session_input_info(s, k, &info) != MINFER_OK ||
                strlen(info.name) != (size_t)(eq - shapes->v[i]) ||
                strncmp(info.name, shapes->v[i], (size_t)(eq - shapes->v[i])) != 0)
                continue;
            if (info.rank != given) {
                char shape[256];
                fprintf(stderr, "minfer %s: --shape '%s' gives %d dimensions; input '%s' has %d %s\n",
                        cmd, shapes->v[i], given, info.name, info.rank,
                        cli_shape_str(info.dims, info.dim_names, info.rank, shape, sizeof shape));
                return CLI_USAGE;
            }
        }
    }
    return 0;
}

void cli_print_inputs(FILE *f, const char *const *names, minfer_tensor *const *ins, size_t n) {
    fprintf(f, "inputs:         ");
    for (size_t k = 0; k < n; k++) {
        char shape[256];
        const minfer_tensor *t = ins[k];
        if (minfer_value_kind_of(t) != MINFER_VALUE_TENSOR)
            snprintf(shape, sizeof shape, "(%s)",
                     minfer_value_kind_of(t) == MINFER_VALUE_SEQUENCE ? "sequence" : "optional");
        else
            cli_shape_str(minfer_tensor_dims(t), NULL, (int)minfer_tensor_rank(t), shape,
                          sizeof shape);
        fprintf(f, "%s %s %s %s", k ? "," : "", names[k],
                minfer_dtype_name(minfer_tensor_dtype(t)), shape);
    }
    fprintf(f, "%s\n", n ? "" : " (none)");
}

int cli_json_print(const char *cmd, json_t *root) {
    if (!root) {
        fprintf(stderr, "minfer %s: out of memory building the JSON output\n", cmd);
        return CLI_FAIL;
    }
    /* One line (", " and ": " apart), as bench --json always printed: a
     * line per object for scripts that read lines. */
    int rc = json_dumpf(root, stdout,
                        JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(10));
    json_decref(root);
    if (rc != 0) {
        fprintf(stderr, "minfer %s: cannot write the JSON output\n", cmd);
        return CLI_FAIL;
    }
    putchar('\n');
    return 0;
}

json_t *cli_json_str(const char *s) {
    json_t *j = json_string(s ? s : "");
    if (j)
        return j;
    /* Not UTF-8: keep the ASCII, mark the rest. */
    char *copy = strdup(s);
    if (!copy)
        return NULL;
    for (char *p = copy; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    j = json_string(copy);
    free(copy);
    return j;
}

json_t *cli_json_shape(const int64_t *dims, const char *const *dim_names, int rank) {
    if (rank < 0)
        return json_null();
    json_t *a = json_array();
    for (int d = 0; a && d < rank; d++)
        json_array_append_new(a, dims[d] >= 0 ? json_integer(dims[d])
                                 : dim_names && dim_names[d] && dim_names[d][0]
                                     ? json_string(dim_names[d])
                                     : json_null());
    return a;
}

int cli_mkdirs(const char *path) {
    char buf[4096];
    struct stat sb;
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return -1;
    return stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode) ? 0 : -1;
}

/* splitmix64: a small, fixed-seed generator so runs are repeatable. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double rand_unit(uint64_t *s) { /* [-1, 1] */
    return (double)(next_rand(s) >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

/* A tensor of the input's declared type, symbolic dims set to 1, random. */
minfer_status cli_random_input(const char *cmd, const minfer_value_info *info, uint64_t *seed,
                               minfer_tensor **out) {
    int64_t dims[MINFER_MAX_RANK];
    int rank = info->rank;
    *out = NULL;
    if (info->kind != MINFER_VALUE_TENSOR) {
        /* One random element of the declared type, scalar shaped. */
        minfer_value_info elem = *info;
        minfer_tensor *t = NULL, *c = NULL;
        elem.kind = MINFER_VALUE_TENSOR;
        elem.rank = 0;
        int seq = info->kind == MINFER_VALUE_SEQUENCE || info->contained == MINFER_VALUE_SEQUENCE;
        fprintf(stderr, "minfer %s: note: input '%s' is %s; using one with one scalar element\n",
                cmd, info->name, info->kind == MINFER_VALUE_SEQUENCE ? "a sequence" : "an optional");
        minfer_status st = cli_random_input(cmd, &elem, seed, &t);
        if (st == MINFER_OK && seq) {
            if ((st = minfer_sequence_create(info->dtype, &c)) == MINFER_OK &&
                (st = minfer_sequence_append(c, t)) == MINFER_OK)
                t = c;
            else {
                minfer_tensor_free(c);
                minfer_tensor_free(t);
                return st;
            }
        }
        if (st == MINFER_OK && info->kind == MINFER_VALUE_OPTIONAL &&
            (st = minfer_optional_create(t, MINFER_VALUE_TENSOR, info->dtype, &c)) == MINFER_OK)
            t = c;
        if (st != MINFER_OK) {
            minfer_tensor_free(t);
            return st;
        }
        *out = t;
        return MINFER_OK;
    }
    if (rank < 0) {
        fprintf(stderr, "minfer %s: note: input '%s' declares no shape; using a scalar\n", cmd,
                info->name);
        rank = 0;
    }
    for (int d = 0; d < rank; d++) {
        dims[d] = info->dims[d] < 0 ? 1 : info->dims[d];
        if (info->dims[d] < 0 && info->dim_names && info->dim_names[d] && info->dim_names[d][0])
            fprintf(stderr,
                    "minfer %s: note: input '%s' dimension '%s' set to 1 (--dim %s=SIZE sets it)\n",
                    cmd, info->name, info->dim_names[d], info->dim_names[d]);
        else if (info->dims[d] < 0)
            fprintf(stderr,
                    "minfer %s: note: input '%s' axis %d set to 1 (--shape %s=... sets it)\n",
                    cmd, info->name, d, info->name);
    }
    minfer_status st = minfer_tensor_create(info->dtype, dims, (size_t)rank, out);
    if (st != MINFER_OK)
        return st;
    void *p = minfer_tensor_data(*out);
    size_t n = cli_scalar_count(*out);
    int noted = 0;
    for (size_t i = 0; i < n; i++) {
        double u = rand_unit(seed);
        int64_t k = (int64_t)(next_rand(seed) % 10);
        switch (info->dtype) {
        case MINFER_DTYPE_FLOAT:
        case MINFER_DTYPE_COMPLEX64: ((float *)p)[i] = (float)u; break;
        case MINFER_DTYPE_DOUBLE:
        case MINFER_DTYPE_COMPLEX128: ((double *)p)[i] = u; break;
        case MINFER_DTYPE_FLOAT16: ((uint16_t *)p)[i] = minfer_float_to_half((float)u); break;
        case MINFER_DTYPE_BFLOAT16: {
            float f = (float)u;
            uint32_t bits;
            memcpy(&bits, &f, sizeof bits);
            ((uint16_t *)p)[i] = (uint16_t)(bits >> 16);
            break;
        }
        case MINFER_DTYPE_BOOL: ((uint8_t *)p)[i] = (uint8_t)(k & 1); break;
        case MINFER_DTYPE_UINT8: ((uint8_t *)p)[i] = (uint8_t)k; break;
        case MINFER_DTYPE_INT8: ((int8_t *)p)[i] = (int8_t)k; break;
        case MINFER_DTYPE_UINT16: ((uint16_t *)p)[i] = (uint16_t)k; break;
        case MINFER_DTYPE_INT16: ((int16_t *)p)[i] = (int16_t)k; break;
        case MINFER_DTYPE_INT32: ((int32_t *)p)[i] = (int32_t)k; break;
        case MINFER_DTYPE_UINT32: ((uint32_t *)p)[i] = (uint32_t)k; break;
        case MINFER_DTYPE_INT64: ((int64_t *)p)[i] = k; break;
        case MINFER_DTYPE_UINT64: ((uint64_t *)p)[i] = (uint64_t)k; break;
        case MINFER_DTYPE_STRING: {
            /* Elements of an owning string tensor are freed with it. */
            char *s = malloc(2);
            if (!s)
                return MINFER_ERR_NOMEM;
            s[0] = (char)('a' + k);
            s[1] = '\0';
            ((char **)p)[i] = s;
            break;
        }
        default: break;
        }
        if (!noted && (info->dtype == MINFER_DTYPE_INT64 || info->dtype == MINFER_DTYPE_INT32)) {
            fprintf(stderr,
                    "minfer %s: note: %s input '%s' gets random integers in [0, 10); use "
                    "--inputs for meaningful values\n",
                    cmd, minfer_dtype_name(info->dtype), info->name);
            noted = 1;
        }
    }
    return MINFER_OK;
}

static const char *kind_name(mode_t m) {
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

/* NULL when path may be written (with force if it exists), else why not. */
static const char *refuse_reason(const char *path, int force, char *buf, size_t size) {
    struct stat sb, tb;
    if (lstat(path, &sb) != 0)
        return errno == ENOENT ? NULL : strerror(errno);
    if (S_ISLNK(sb.st_mode) && stat(path, &tb) == 0 && !S_ISREG(tb.st_mode)) {
        snprintf(buf, size, "it is a link to %s", kind_name(tb.st_mode));
        return buf;
    }
    if (!S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode)) {
        snprintf(buf, size, "it is %s, not a regular file", kind_name(sb.st_mode));
        return buf;
    }
    return force ? NULL : "it exists (--force replaces it)";
}

int cli_out_begin(const char *cmd, const char *what, const char *path, int force, cli_out *o) {
    static unsigned counter;
    char why[128];
    const char *reason = refuse_reason(path, force, why, sizeof why);
    int fd = -1;
    o->path = o->tmp = NULL;
    o->force = force;
    if (reason) {
        fprintf(stderr, "minfer %s: cannot write %s to '%s': %s\n", cmd, what, path, reason);
        return CLI_FAIL;
    }
    /* ".NAME.PID-N.part" beside path: rename() and link() need the same
     * file system. Mode 0666 less the umask, as a plain fopen() gives. */
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) + 1 : 0;
    size_t cap = strlen(path) + 48;
    o->path = strdup(path);
    o->tmp = malloc(cap);
    for (int tries = 0; o->path && o->tmp && fd < 0 && tries < 100; tries++) {
        snprintf(o->tmp, cap, "%.*s.%s.%ld-%u.part", dir_len, path, path + dir_len,
                 (long)getpid(), counter++);
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        const char *e = o->path && o->tmp ? strerror(errno) : "out of memory";
        fprintf(stderr, "minfer %s: cannot write %s to '%s': %s\n", cmd, what, path, e);
        free(o->tmp);
        o->tmp = NULL; /* not created: not ours to remove */
        cli_out_abort(o);
        return CLI_FAIL;
    }
    close(fd);
    return 0;
}

int cli_out_commit(const char *cmd, const char *what, cli_out *o) {
    char why[128];
    const char *reason = refuse_reason(o->path, o->force, why, sizeof why);
    int rc = CLI_FAIL;
    if (!reason) {
        if (o->force) {
            if (rename(o->tmp, o->path) == 0)
                rc = 0;
            else
                reason = strerror(errno);
        } else if (link(o->tmp, o->path) == 0) {
            rc = 0; /* link() never replaces: a file made meanwhile stays */
        } else if (errno == EEXIST) {
            reason = "it exists (--force replaces it)";
        } else if (errno == EPERM || errno == ENOTSUP || errno == EMLINK || errno == ENOSYS) {
            /* A file system without hard links: checked just above. */
            if (rename(o->tmp, o->path) == 0)
                rc = 0;
            else
                reason = strerror(errno);
        } else {
            reason = strerror(errno);
        }
    }
    if (reason)
        fprintf(stderr, "minfer %s: cannot write %s to '%s': %s\n", cmd, what, o->path, reason);
    cli_out_abort(o); /* after link(), removes the temporary name; after rename(), nothing */
    return rc;
}

void cli_out_abort(cli_out *o) {
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}

int cli_set_diagnostics(const char *cmd, minfer_options *opt, const char *profile, int force,
                        cli_out *prof, int check_nan, int strict) {
    minfer_status st = MINFER_OK;
    if (prof)
        prof->path = prof->tmp = NULL;
    if (profile) {
        /* The session writes the trace only when asked or freed: find out
         * now whether the path can take it. */
        if (!prof || cli_out_begin(cmd, "the profile", profile, force, prof) != 0)
            return CLI_FAIL;
        st = minfer_options_set_profiling(opt, prof->tmp);
    }
    if (st == MINFER_OK && check_nan)
        st = minfer_options_set_check_nan(opt, 1);
    if (st == MINFER_OK && strict)
        st = minfer_options_set_strict_placement(opt, 1);
    if (st != MINFER_OK) {
        fprintf(stderr, "minfer %s: %s\n", cmd, cli_error(st));
        if (prof)
            cli_out_abort(prof);
        return CLI_FAIL;
    }
    return 0;
}

int cli_finish_profile(const char *cmd, minfer_session **s, cli_out *prof) {
    int rc = *s ? 0 : CLI_FAIL; /* no session, no profile */
    if (prof && prof->tmp && *s) {
        minfer_status st = minfer_session_write_profile(*s, prof->tmp);
        if (st != MINFER_OK) {
            fprintf(stderr, "minfer %s: cannot write the profile to '%s': %s\n", cmd,
                    prof->path, cli_error(st));
            rc = CLI_FAIL;
        }
    }
    minfer_session_free(*s); /* its own write finds nothing new */
    *s = NULL;
    if (!prof || !prof->tmp)
        return 0;
    if (rc != 0) {
        cli_out_abort(prof);
        return rc;
    }
    char *path = strdup(prof->path);
    rc = cli_out_commit(cmd, "the profile", prof);
    if (rc == 0)
        fprintf(stderr, "minfer %s: profile written to %s\n", cmd, path ? path : "");
    free(path);
    return rc;
}
