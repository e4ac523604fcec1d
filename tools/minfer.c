/* The `minfer` command: dispatches to run, test, info and providers. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: minfer <command> [options]\n"
            "\n"
            "commands:\n"
            "  run MODEL    run a model on given or random inputs\n"
            "  test PATH... run ONNX test cases (model.onnx + test_data_set_N/)\n"
            "  info MODEL   show inputs, outputs, ops, provider placement and memory plan\n"
            "  bench MODEL  time session creation and runs; memory figures\n"
            "  providers    list the providers found and whether each one loads here\n"
            "  plugins      list the custom-operator plugins found and the ops of each\n"
            "  optimize MODEL -o OUT.onnx  write the optimized graph as an ONNX file\n"
            "  compile MODEL -o OUT.mfc  write the model compiled (docs/format.md)\n"
            "\n"
            "options:\n"
            "  -h, --help   show this help (minfer <command> --help for a command)\n"
            "  --version    print the library version\n"
            "  --opt-level N  graph optimization level 0..3 for any command (default:\n"
            "               MINFER_OPT_LEVEL, else 3)\n"
            "  --plugin FILE  load a custom-operator plugin (a path, or NAME for\n"
            "               libminfer_plugin_NAME.so in the plugin directories) for any\n"
            "               command; may be repeated (docs/plugins.md)\n"
            "  --scheduler S  sequential (default, or MINFER_SCHEDULER), parallel:\n"
            "               independent nodes at once, or pipeline: stages working on\n"
            "               several requests at once (docs/scheduling.md)\n"
            "  --inter-op-threads N  nodes the parallel scheduler runs at once, or the\n"
            "               pipeline's stages (0: the pool's threads, the most it may use)\n"
            "  --precision P  fp32 (default, or MINFER_PRECISION) or bf16: oneDNN's\n"
            "               convolutions and products read bfloat16 on CPUs with\n"
            "               AVX512_BF16/AMX (faster, ~2-3 significant digits)\n"
            "\n"
            "Files a command writes (run --outputs, optimize -o, --profile, info --dot\n"
            "and --svg) appear whole or not at all; one that exists is replaced only\n"
            "with --force, and a device, FIFO or directory never is.\n");
}

static int dispatch(int argc, char **argv);

/* A command whose standard output could not be written (a full disk, a
 * closed pipe) has failed, whatever it printed. */
int main(int argc, char **argv) {
    int rc = dispatch(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "minfer: error writing standard output: %s\n",
                errno ? strerror(errno) : "write error");
        return CLI_FAIL;
    }
    return rc;
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "minfer: no command given (try 'minfer --help')\n");
        return CLI_USAGE;
    }
    /* --opt-level N (or =N) applies to every command: take it out here. */
    int w = 1;
    for (int r = 1; r < argc; r++) {
        const char *a = argv[r], *val = NULL;
        if (strcmp(a, "--opt-level") == 0) {
            if (r + 1 >= argc) {
                fprintf(stderr, "minfer: --opt-level needs a value (0 to 3)\n");
                return CLI_USAGE;
            }
            val = argv[++r];
        } else if (strncmp(a, "--opt-level=", 12) == 0) {
            val = a + 12;
        } else if (strcmp(a, "--scheduler") == 0 || strncmp(a, "--scheduler=", 12) == 0 ||
                   strcmp(a, "--inter-op-threads") == 0 ||
                   strncmp(a, "--inter-op-threads=", 19) == 0) {
            /* --scheduler S and --inter-op-threads N apply to every command too. */
            int sched = a[2] == 's';
            size_t len = sched ? 11 : 18;
            const char *v = a[len] == '=' ? a + len + 1 : r + 1 < argc ? argv[++r] : NULL;
            if (cli_set_schedule(sched ? v : NULL, sched ? NULL : v) != 0)
                return CLI_USAGE;
            continue;
        } else if (strcmp(a, "--precision") == 0 || strncmp(a, "--precision=", 12) == 0) {
            /* --precision P applies to every command that makes a session. */
            const char *v = a[11] == '=' ? a + 12 : r + 1 < argc ? argv[++r] : NULL;
            if (cli_set_precision(v) != 0)
                return CLI_USAGE;
            continue;
        } else if (strcmp(a, "--plugin") == 0 || strncmp(a, "--plugin=", 9) == 0) {
            /* --plugin FILE (or =FILE; any number) applies to every command too. */
            const char *file = a[8] == '=' ? a + 9 : r + 1 < argc ? argv[++r] : NULL;
            if (!file || !file[0]) {
                fprintf(stderr, "minfer: --plugin needs a plugin file or name\n");
                return CLI_USAGE;
            }
            if (cli_add_plugin(file) != 0)
                return CLI_FAIL;
            continue;
        } else {
            argv[w++] = argv[r];
            continue;
        }
        if (cli_parse_int(NULL, "--opt-level", val, 0, 3, &cli_opt_level) != 0)
            return CLI_USAGE;
    }
    argc = w;
    if (argc < 2) {
        fprintf(stderr, "minfer: no command given (try 'minfer --help')\n");
        return CLI_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("minfer %s\n", minfer_version());
        return CLI_OK;
    }
    if (strcmp(cmd, "plugins") != 0 && cli_check_plugins() != 0)
        return CLI_FAIL;
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "test") == 0)
        return cmd_test(argc - 2, argv + 2);
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 2, argv + 2);
    if (strcmp(cmd, "bench") == 0)
        return cmd_bench(argc - 2, argv + 2);
    if (strcmp(cmd, "providers") == 0)
        return cmd_providers(argc - 2, argv + 2);
    if (strcmp(cmd, "plugins") == 0)
        return cmd_plugins(argc - 2, argv + 2);
    if (strcmp(cmd, "optimize") == 0)
        return cmd_optimize(argc - 2, argv + 2);
    if (strcmp(cmd, "compile") == 0)
        return cmd_compile(argc - 2, argv + 2);
    static const char *const commands[] = {"run",       "test",     "info",    "bench",
                                            "providers", "plugins",  "optimize", "compile",
                                            "help",      "version"};
    static const char *const options[] = {"help", "version", "opt-level", "plugin", "scheduler",
                                           "inter-op-threads", "precision"};
    const char *near = cmd[0] == '-'
                           ? cli_suggest(cmd + strspn(cmd, "-"), options, sizeof options / sizeof *options)
                           : cli_suggest(cmd, commands, sizeof commands / sizeof *commands);
    if (near)
        fprintf(stderr, "minfer: unknown %s '%s'; did you mean '%s%s'? (try 'minfer --help')\n",
                cmd[0] == '-' ? "option" : "command", cmd, cmd[0] == '-' ? "--" : "", near);
    else if (cmd[0] == '-')
        fprintf(stderr, "minfer: unknown option '%s' (try 'minfer --help')\n", cmd);
    else
        fprintf(stderr, "minfer: unknown command '%s' (try 'minfer --help')\n", cmd);
    return CLI_USAGE;
}
