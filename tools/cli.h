/* Shared pieces of the `minfer` command-line tool. Public API only. */
#ifndef MINFER_TOOLS_CLI_H
#define MINFER_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "minfer/minfer.h"

/* Exit statuses of every command. */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* The values of an option that may be given several times (--dim). */
typedef struct cli_list {
    const char **v;
    size_t n;
} cli_list;

/* One option a command accepts. An option with an argument stores it in
 * *value ("--name V" or "--name=V"), or appends it to *list; a flag sets
 * *flag to 1. */
typedef struct cli_opt {
    const char *name; /* long name without "--" */
    char short_name;  /* 0 for none */
    const char **value;
    int *flag;
    cli_list *list;
} cli_opt;

/* Parses argv[0..argc) (after the command word) into options and positional
 * arguments (pos must hold argc entries). -h/--help sets *help. Returns 0,
 * or CLI_USAGE after printing one line to stderr. */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *opts, size_t n_opts,
              char **pos, size_t *n_pos, int *help);

/* The candidate nearest to word (a mistyped command or option name), or
 * NULL when none is near enough to suggest ("did you mean"). */
const char *cli_suggest(const char *word, const char *const *candidates, size_t n);

/* Strict number parsing; 0 on success, else CLI_USAGE with one line printed
 * ("minfer CMD: ...", or "minfer: ..." for cmd NULL). */
int cli_parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, int *out);
int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out);

/* --provider-option PROVIDER:KEY=VALUE (repeatable) into opt, through
 * minfer_options_add_provider_option (a ',' in a value or a ',' or '=' in a
 * key is refused, as the C API and Python refuse it). Returns 0, or
 * CLI_USAGE with one line printed. */
int cli_set_provider_options(const char *cmd, minfer_options *opt, const cli_list *list);

/* Session options from --providers (may be NULL) and --threads (-1: unset). */
minfer_status cli_make_options(const char *providers, int threads, minfer_options **out);

/* Says once per process, on stderr, when the naive reference provider runs
 * every node of s because no faster CPU provider (oneDNN) is installed;
 * nothing when the command or MINFER_PROVIDERS chose the providers. */
void cli_note_reference(const minfer_session *s);
/* This machine's peak now on `threads` threads (peak.c): float FMA GFLOPS
 * and int8 VNNI GOPS, each 0 when the CPU lacks the instructions. */
void cli_measure_peak(int threads, double *fp32_gflops, double *int8_gops);

/* minfer_last_error() (or the status text) folded onto one line. Static. */
const char *cli_error(minfer_status st);

/* "[1,3,224,224]"; symbolic dims by name when dim_names are given, "?" when
 * unknown; "[?]" for an unknown rank. */
const char *cli_shape_str(const int64_t *dims, const char *const *dim_names, int rank, char *buf,
                          size_t size);

/* Whether the type is one of the floating-point types (compared with a
 * tolerance). */
int cli_is_float(minfer_dtype dt);
/* Scalar i of a numeric tensor's data as a double. A complex tensor is read
 * as its 2 * numel real scalars (real, imaginary, real, ...). */
double cli_elem(const void *data, minfer_dtype dt, size_t i);
/* Elements as counted by cli_elem: numel, doubled for complex types. */
size_t cli_scalar_count(const minfer_tensor *t);

/* A tensor of the input's declared type with symbolic dims set to 1 and
 * random contents from a fixed-seed generator (floats in [-1, 1], integers
 * in [0, 10)); notes on stderr what it had to assume. */
minfer_status cli_random_input(const char *cmd, const minfer_value_info *info, uint64_t *seed,
                               minfer_tensor **out);

/* --dim NAME=V (minfer_options_set_dim) and --shape INPUT=1x3x224x224
 * (minfer_options_set_input_dim for each axis) into opt. Returns 0, or
 * CLI_USAGE after one line naming the bad argument. */
int cli_set_shapes(const char *cmd, minfer_options *opt, const cli_list *dims,
                   const cli_list *shapes);
/* After creation: each --shape gives as many dimensions as its input has.
 * Returns 0, or CLI_USAGE after one line. */
int cli_check_shapes(const char *cmd, const minfer_session *s, const cli_list *shapes);
/* Prints "inputs: NAME TYPE [dims], ..." for the tensors a command feeds. */
void cli_print_inputs(FILE *f, const char *const *names, minfer_tensor *const *ins, size_t n);

/* Prints a JSON value (jansson, the project's one JSON library) to
 * standard output on one line, and frees it. NULL (an allocation failed on
 * the way) is reported. Returns 0 or CLI_FAIL. */
int cli_json_print(const char *cmd, json_t *root);
/* A JSON string of s (from a model: any bytes), each byte that is not
 * part of valid UTF-8 replaced by '?'. */
json_t *cli_json_str(const char *s);
/* The shape of a tensor as a JSON array of numbers (symbolic names as
 * strings, null when unknown); null for an unknown rank. */
json_t *cli_json_shape(const int64_t *dims, const char *const *dim_names, int rank);

/* Creates a directory and its parents; 0 on success. */
int cli_mkdirs(const char *path);

/* A file a command writes (run --outputs files, optimize -o, --profile,
 * info --dot/--svg). The library (or Graphviz) writes a temporary file
 * beside path; cli_out_commit then moves it into place, so path ends up
 * with the whole new contents or is left as it was. Without force an
 * existing path is refused; a directory, device or FIFO (or a link to one)
 * is refused even with force; a symbolic link is replaced, never written
 * through. */
typedef struct cli_out {
    char *path, *tmp; /* tmp: where the writer writes */
    int force;
} cli_out;

/* Checks path (so a bad one fails before any work) and creates the
 * temporary file. what names the file in messages ("the profile"). Returns
 * 0, or CLI_FAIL after printing "minfer CMD: cannot write WHAT to 'PATH':
 * REASON". */
int cli_out_begin(const char *cmd, const char *what, const char *path, int force, cli_out *o);
/* Moves the written temporary file to path (refusing, without force, a
 * path that appeared meanwhile). Returns 0, or CLI_FAIL after one line;
 * either way the temporary file is gone and o is finished with. */
int cli_out_commit(const char *cmd, const char *what, cli_out *o);
/* Removes the temporary file (if any) and frees o; a no-op on a zeroed o. */
void cli_out_abort(cli_out *o);

int cmd_run(int argc, char **argv);
int cmd_test(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_providers(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_compile(int argc, char **argv);
/* For `minfer info`: when path is a compiled model (by its magic), prints
 * what it says about itself (format version, sections, the level and
 * providers it was compiled for), or adds it to root as "compiled" when root
 * is not NULL, and returns 1; returns 0 for any other file. */
int cli_describe_compiled(const char *path, json_t *root);

/* --opt-level N, taken by main() from any command's arguments: the graph
 * optimization level cli_make_options sets (-1: not given). */
extern int cli_opt_level;

/* --scheduler S and --inter-op-threads N, taken by main() from any
 * command's arguments: what cli_make_options sets (-1: not given).
 * cli_set_schedule parses one of them (the other NULL); -1 after a line
 * on stderr. */
extern int cli_scheduler, cli_inter_op;
/* --precision P (fp32, bf16), taken by main() from any command line. */
extern int cli_precision;
int cli_set_precision(const char *precision);
int cli_set_schedule(const char *scheduler, const char *inter_op);

/* --plugin FILE, taken by main() from any command's arguments, in order:
 * the plugins cli_make_options adds (minfer_options_add_plugin). */
extern cli_list cli_plugins;
int cmd_plugins(int argc, char **argv);
/* Records one --plugin. Returns 0, or CLI_FAIL after one line. */
int cli_add_plugin(const char *file);
/* Loads each --plugin once, so a bad one fails any command (but `minfer
 * plugins`, which lists it with its reason) before any work. Returns 0, or
 * CLI_FAIL after one line naming the plugin and why. */
int cli_check_plugins(void);

/* Sets the diagnostics flags run, bench, test and info share: --profile
 * FILE (NULL: not given; checked and begun now, as cli_out_begin does, so a
 * bad path fails before any work; the session records into prof->tmp),
 * --check-nan and --strict (0: not given, so that MINFER_PROFILE and
 * MINFER_CHECK_NAN still apply). Returns 0, or CLI_FAIL after printing one
 * line. */
int cli_set_diagnostics(const char *cmd, minfer_options *opt, const char *profile, int force,
                        cli_out *prof, int check_nan, int strict);
/* Frees the session *s (NULL afterwards) and, when cli_set_diagnostics
 * began a profile, writes it first (checking every error, which the
 * session's own write at free could only log) and moves it into place,
 * printing "minfer CMD: profile written to FILE" or one line saying why
 * not. Returns 0 or CLI_FAIL. Without a session, the profile is given up. */
int cli_finish_profile(const char *cmd, minfer_session **s, cli_out *prof);

#endif
