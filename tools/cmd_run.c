/*
 * minfer run MODEL: feeds inputs from input_K.pb files (or random data of
 * the declared types), runs once, and writes output_K.pb files or prints a
 * summary of each output.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char *CMD = "run";

static void print_help(void) {
    printf("usage: minfer run MODEL [options]\n"
           "\n"
           "Runs MODEL once. Without --inputs, every input gets random data of its declared\n"
           "type, with symbolic dimensions set to 1 (floats uniform in [-1, 1], integers in\n"
           "[0, 10), fixed seed).\n"
           "\n"
           "options:\n"
           "  --providers LIST  provider preference, e.g. 'opencl,cpu'\n"
           "  --inputs DIR      read inputs from DIR/input_K.pb, K in session input order\n"
           "  --outputs DIR     write DIR/output_K.pb (created if missing) instead of a summary\n"
           "  --force           replace output files (--outputs, --profile) that exist\n"
           "  --threads N       threads for the session's pool (0: one per CPU)\n"
           "  --dim NAME=N      set the symbolic dimension NAME of every input to N\n"
           "                    (repeatable; e.g. --dim batch=8)\n"
           "  --shape IN=DIMS   fix input IN's shape, e.g. --shape input=1x3x224x224\n"
           "  --profile FILE    write a profile (build phases and every node) to FILE, in\n"
           "                    ONNX Runtime's JSON array of trace events; Perfetto opens it\n"
           "  --check-nan       fail naming the first node whose float output has a NaN/Inf\n"
           "  --strict          fail if any node falls back past the first provider\n"
           "  --provider-option PROVIDER:KEY=VALUE\n"
           "                    one key of a provider's options (repeatable), e.g.\n"
           "                    opencl:device=1; ',' cannot appear in a value\n"
           "  --creation-deadline MS\n"
           "                    fail if creating the session takes longer than MS ms\n"
           "  -h, --help        show this help\n");
}

/* Prints the one line "minfer run: <message>" and returns the failure status. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "minfer run: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_FAIL;
}

static void summarize_tensor(const minfer_tensor *t);

/* One output's name, type, shape, first values and, for floats, statistics;
 * a sequence's first elements, an optional's value. */
static void summarize(size_t k, const char *name, const minfer_tensor *t) {
    minfer_value_kind kind = minfer_value_kind_of(t);
    if (kind == MINFER_VALUE_OPTIONAL) {
        const minfer_tensor *v = minfer_optional_value(t);
        printf("output %zu '%s': optional, %s\n", k, name, v ? "holding:" : "empty");
        if (v)
            summarize(k, name, v);
        return;
    }
    if (kind == MINFER_VALUE_SEQUENCE) {
        size_t n = minfer_sequence_length(t);
        printf("output %zu '%s': sequence of %zu %s tensors\n", k, name, n,
               minfer_dtype_name(minfer_tensor_dtype(t)));
        for (size_t i = 0; i < n && i < 4; i++) {
            printf("  [%zu] ", i);
            summarize_tensor(minfer_sequence_at(t, i));
        }
        if (n > 4)
            printf("  ...\n");
        return;
    }
    printf("output %zu '%s': ", k, name);
    summarize_tensor(t);
}

static void summarize_tensor(const minfer_tensor *t) {
    char shape[256];
    minfer_dtype dt = minfer_tensor_dtype(t);
    const void *p = minfer_tensor_data(t);
    size_t n = cli_scalar_count(t);
    cli_shape_str(minfer_tensor_dims(t), NULL, (int)minfer_tensor_rank(t), shape, sizeof shape);
    printf("%s %s\n", minfer_dtype_name(dt), shape);
    printf("  values:");
    for (size_t i = 0; i < n && i < 8; i++) {
        if (dt == MINFER_DTYPE_STRING) {
            const char *s = ((char *const *)p)[i];
            printf(" \"%s\"", s ? s : "");
        } else if (cli_is_float(dt)) {
            printf(" %.6g", cli_elem(p, dt, i));
        } else if (dt == MINFER_DTYPE_UINT64) {
            printf(" %llu", (unsigned long long)((const uint64_t *)p)[i]);
        } else if (dt == MINFER_DTYPE_INT64) {
            printf(" %lld", (long long)((const int64_t *)p)[i]);
        } else {
            printf(" %.0f", cli_elem(p, dt, i));
        }
    }
    printf("%s\n", n > 8 ? " ..." : (n == 0 ? " (empty)" : ""));
    if (cli_is_float(dt) && n > 0) {
        double lo = INFINITY, hi = -INFINITY, sum = 0;
        size_t nans = 0;
        for (size_t i = 0; i < n; i++) {
            double v = cli_elem(p, dt, i);
            if (isnan(v)) {
                nans++;
                continue;
            }
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            sum += v;
        }
        if (nans < n)
            printf("  min %.6g  max %.6g  mean %.6g", lo, hi, sum / (double)(n - nans));
        else
            printf(" ");
        if (nans)
            printf("  (%zu NaN)", nans);
        printf("\n");
    }
}

int cmd_run(int argc, char **argv) {
    const char *providers = NULL, *in_dir = NULL, *out_dir = NULL, *threads_s = NULL,
               *profile = NULL, *deadline_s = NULL;
    int check_nan = 0, strict = 0, force = 0;
    cli_list dims = {0}, shapes = {0}, prov_opts = {0};
    const cli_opt opts[] = {
        {"dim", 0, NULL, NULL, &dims},
        {"shape", 0, NULL, NULL, &shapes},
        {"force", 0, NULL, &force, NULL},
        {"providers", 0, &providers, NULL, NULL},
        {"inputs", 0, &in_dir, NULL, NULL},
        {"outputs", 0, &out_dir, NULL, NULL},
        {"threads", 0, &threads_s, NULL, NULL},
        {"profile", 0, &profile, NULL, NULL},
        {"check-nan", 0, NULL, &check_nan, NULL},
        {"strict", 0, NULL, &strict, NULL},
        {"creation-deadline", 0, &deadline_s, NULL, NULL},
        {"provider-option", 0, NULL, NULL, &prov_opts},
    };
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0;
    int help = 0, threads = -1, deadline = 0, rc;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor **ins = NULL, **outs = NULL;
    const char **in_names = NULL;
    cli_out prof = {0}, *files = NULL;
    size_t n_in = 0, n_out = 0;
    minfer_status st;

    if (!pos)
        return fail("out of memory");
    rc = cli_parse(CMD, argc, argv, opts, sizeof opts / sizeof opts[0], pos, &n_pos, &help);
    if (rc)
        goto done;
    if (help) {
        print_help();
        rc = CLI_OK;
        goto done;
    }
    if (n_pos != 1) {
        fprintf(stderr, "minfer run: expected one MODEL argument, got %zu (see 'minfer run "
                        "--help')\n",
                n_pos);
        rc = CLI_USAGE;
        goto done;
    }
    if ((threads_s &&
         (rc = cli_parse_int(CMD, "--threads", threads_s, 0, MINFER_MAX_THREADS, &threads))) ||
        (deadline_s && (rc = cli_parse_int(CMD, "--creation-deadline", deadline_s, 1,
                                           INT32_MAX, &deadline))))
        goto done;

    rc = CLI_FAIL;
    if ((st = cli_make_options(providers, threads, &opt)) != MINFER_OK ||
        (st = minfer_options_set_creation_deadline(opt, (uint64_t)deadline)) != MINFER_OK) {
        fail("%s", cli_error(st));
        goto done;
    }
    if ((rc = cli_set_shapes(CMD, opt, &dims, &shapes)) != 0 ||
        (rc = cli_set_provider_options(CMD, opt, &prov_opts)) != 0)
        goto done;
    rc = CLI_FAIL;
    if (cli_set_diagnostics(CMD, opt, profile, force, &prof, check_nan, strict) != 0)
        goto done;
    if ((st = minfer_session_create(pos[0], opt, &s)) != MINFER_OK) {
        fail("%s", cli_error(st));
        goto done;
    }
    cli_note_reference(s);
    if ((rc = cli_check_shapes(CMD, s, &shapes)) != 0)
        goto done;
    rc = CLI_FAIL;

    n_in = minfer_session_input_count(s);
    n_out = minfer_session_output_count(s);
    ins = calloc(n_in + 1, sizeof *ins);
    in_names = calloc(n_in + 1, sizeof *in_names);
    outs = calloc(n_out + 1, sizeof *outs);
    files = calloc(n_out + 1, sizeof *files);
    if (!ins || !in_names || !outs || !files) {
        fail("out of memory");
        goto done;
    }
    /* Output files are checked before the run, so that one that exists
     * fails the command before any work. */
    if (out_dir && cli_mkdirs(out_dir) != 0) {
        fail("cannot create output directory '%s': %s", out_dir, strerror(errno));
        goto done;
    }
    for (size_t k = 0; out_dir && k < n_out; k++) {
        char path[4096], what[64];
        snprintf(path, sizeof path, "%s/output_%zu.pb", out_dir, k);
        snprintf(what, sizeof what, "output %zu", k);
        if (cli_out_begin(CMD, what, path, force, &files[k]) != 0)
            goto done;
    }
    uint64_t seed = 0x6d696e666572ull; /* "minfer" */
    for (size_t k = 0; k < n_in; k++) {
        minfer_value_info info;
        if ((st = minfer_session_input_info(s, k, &info)) != MINFER_OK) {
            fail("%s", cli_error(st));
            goto done;
        }
        in_names[k] = info.name;
        if (in_dir) {
            char path[4096];
            char *pb_name = NULL;
            snprintf(path, sizeof path, "%s/input_%zu.pb", in_dir, k);
            st = minfer_value_load_pb(path, (minfer_value_kind)info.kind, &ins[k], &pb_name);
            if (st != MINFER_OK) {
                fail("input %zu '%s': %s", k, info.name, cli_error(st));
                goto done;
            }
            /* Files are read in input order; a tensor named otherwise is
             * most likely in the wrong file. */
            if (pb_name && pb_name[0] && strcmp(pb_name, info.name) != 0)
                fprintf(stderr,
                        "minfer run: warning: %s holds a tensor named '%s'; it is fed to input "
                        "%zu '%s' by position\n",
                        path, pb_name, k, info.name);
            free(pb_name);
            /* ONNX's older test data stores bfloat16 as uint16 bits, as
             * minfer test also accepts. */
            if (info.dtype == MINFER_DTYPE_BFLOAT16 &&
                minfer_tensor_dtype(ins[k]) == MINFER_DTYPE_UINT16) {
                minfer_tensor *t = NULL;
                if ((st = minfer_tensor_create(MINFER_DTYPE_BFLOAT16, minfer_tensor_dims(ins[k]),
                                               minfer_tensor_rank(ins[k]), &t)) != MINFER_OK) {
                    fail("input %zu '%s': %s", k, info.name, cli_error(st));
                    goto done;
                }
                memcpy(minfer_tensor_data(t), minfer_tensor_data(ins[k]),
                       minfer_tensor_nbytes(t));
                minfer_tensor_free(ins[k]);
                ins[k] = t;
            }
        } else if ((st = cli_random_input("run", &info, &seed, &ins[k])) != MINFER_OK) {
            fail("input '%s': cannot make random data: %s", info.name, cli_error(st));
            goto done;
        }
    }

    if (!out_dir)
        cli_print_inputs(stdout, in_names, ins, n_in);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = minfer_session_run(s, in_names, (const minfer_tensor *const *)ins, n_in, NULL, outs,
                            n_out);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != MINFER_OK) {
        fail("%s", cli_error(st));
        goto done;
    }

    for (size_t k = 0; k < n_out; k++) {
        minfer_value_info info;
        if ((st = minfer_session_output_info(s, k, &info)) != MINFER_OK) {
            fail("%s", cli_error(st));
            goto done;
        }
        if (out_dir) {
            char what[64];
            snprintf(what, sizeof what, "output %zu", k);
            if ((st = minfer_tensor_save_pb(outs[k], info.name, files[k].tmp)) != MINFER_OK) {
                fail("cannot write output %zu to '%s': %s", k, files[k].path, cli_error(st));
                goto done;
            }
            if (cli_out_commit(CMD, what, &files[k]) != 0)
                goto done;
        } else {
            summarize(k, info.name, outs[k]);
        }
    }
    if (!out_dir)
        printf("ran in %.3f ms\n",
               (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    rc = CLI_OK;
done:
    for (size_t k = 0; ins && k < n_in; k++)
        minfer_tensor_free(ins[k]);
    for (size_t k = 0; outs && k < n_out; k++)
        minfer_tensor_free(outs[k]);
    free(ins);
    free(outs);
    free(in_names);
    for (size_t k = 0; files && k < n_out; k++)
        cli_out_abort(&files[k]); /* those not committed */
    free(files);
    if (cli_finish_profile(CMD, &s, &prof) != 0)
        rc = CLI_FAIL;
    minfer_options_free(opt);
    free(dims.v);
    free(prov_opts.v);
    free(shapes.v);
    free(pos);
    return rc;
}
