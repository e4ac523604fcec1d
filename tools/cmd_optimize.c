/*
 * minfer optimize MODEL -o OUT.onnx [--level N]: runs the graph optimizer
 * on a model and writes the result as an ONNX file (docs/optimizer.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "minfer/optimize.h"

static const char *CMD = "optimize";

static void print_help(void) {
    printf("usage: minfer optimize MODEL -o OUT.onnx [options]\n"
           "\n"
           "Optimizes MODEL as a session would (constant folding, clean-ups, fusions into\n"
           "the 'minfer' domain; docs/optimizer.md) and writes the result to OUT.onnx,\n"
           "which minfer loads and runs with the same outputs. Prints the node count per\n"
           "op before and after and how often each pass fired.\n"
           "\n"
           "options:\n"
           "  -o, --output FILE  where to write the optimized model (required)\n"
           "  --force            replace FILE if it exists\n"
           "  --level N          optimization level 0..3 (default: --opt-level, else\n"
           "                     MINFER_OPT_LEVEL, else 3)\n"
           "  -h, --help         show this help\n");
}

/* Prints before/after op counts side by side, then the passes that fired. */
static void print_summary(const minfer_opt_summary *s) {
    printf("level %d: %zu nodes -> %zu nodes\n", s->level, s->nodes_before, s->nodes_after);
    printf("%-32s %8s %8s\n", "op", "before", "after");
    size_t i = 0, j = 0;
    while (i < s->n_ops_before || j < s->n_ops_after) {
        int c = i == s->n_ops_before ? 1
                : j == s->n_ops_after ? -1
                                      : strcmp(s->ops_before[i].name, s->ops_after[j].name);
        if (c < 0) {
            printf("  %-30s %8zu %8d\n", s->ops_before[i].name, s->ops_before[i].count, 0);
            i++;
        } else if (c > 0) {
            printf("  %-30s %8d %8zu\n", s->ops_after[j].name, 0, s->ops_after[j].count);
            j++;
        } else {
            printf("  %-30s %8zu %8zu\n", s->ops_before[i].name, s->ops_before[i].count,
                   s->ops_after[j].count);
            i++;
            j++;
        }
    }
    printf("passes fired:\n");
    for (size_t k = 0; k < s->n_passes; k++)
        if (s->passes[k].count)
            printf("  %-30s %8zu\n", s->passes[k].name, s->passes[k].count);
    if (s->truncated)
        printf("(op lists cut at %d entries)\n", MINFER_OPT_MAX_COUNTS);
}

int cmd_optimize(int argc, char **argv) {
    const char *out = NULL, *level_s = NULL;
    int force = 0;
    const cli_opt opts[] = {{"output", 'o', &out, NULL, NULL},
                            {"level", 0, &level_s, NULL, NULL},
                            {"force", 0, NULL, &force, NULL}};
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0;
    int help = 0, rc, level = cli_opt_level;
    minfer_opt_summary *sum = NULL;
    cli_out file = {0};

    if (!pos) {
        fprintf(stderr, "minfer optimize: out of memory\n");
        return CLI_FAIL;
    }
    rc = cli_parse(CMD, argc, argv, opts, sizeof opts / sizeof opts[0], pos, &n_pos, &help);
    if (rc)
        goto done;
    if (help) {
        print_help();
        goto done;
    }
    if (n_pos != 1 || !out) {
        fprintf(stderr, "minfer optimize: expected MODEL and -o OUT.onnx (see 'minfer optimize "
                        "--help')\n");
        rc = CLI_USAGE;
        goto done;
    }
    if (level_s && (rc = cli_parse_int(CMD, "--level", level_s, 0, 3, &level)) != 0)
        goto done;
    rc = CLI_FAIL;
    sum = malloc(sizeof *sum);
    if (!sum) {
        fprintf(stderr, "minfer optimize: out of memory\n");
        goto done;
    }
    if (cli_out_begin(CMD, "the optimized model", out, force, &file) != 0)
        goto done;
    minfer_status st = minfer_optimize_model(pos[0], file.tmp, level, sum);
    if (st != MINFER_OK) {
        fprintf(stderr, "minfer optimize: %s\n", cli_error(st));
        goto done;
    }
    if (cli_out_commit(CMD, "the optimized model", &file) != 0)
        goto done;
    print_summary(sum);
    printf("wrote %s\n", out);
    rc = CLI_OK;
done:
    cli_out_abort(&file);
    free(sum);
    free(pos);
    return rc;
}
