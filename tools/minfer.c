/* The `minfer` command: dispatches to run, test and info. */
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
            "  info MODEL   show inputs, outputs, ops and provider placement\n"
            "\n"
            "options:\n"
            "  -h, --help   show this help (minfer <command> --help for a command)\n"
            "  --version    print the library version\n");
}

int main(int argc, char **argv) {
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
    if (strcmp(cmd, "run") == 0)
        return cmd_run(argc - 2, argv + 2);
    if (strcmp(cmd, "test") == 0)
        return cmd_test(argc - 2, argv + 2);
    if (strcmp(cmd, "info") == 0)
        return cmd_info(argc - 2, argv + 2);
    if (cmd[0] == '-')
        fprintf(stderr, "minfer: unknown option '%s' (try 'minfer --help')\n", cmd);
    else
        fprintf(stderr, "minfer: unknown command '%s' (try 'minfer --help')\n", cmd);
    return CLI_USAGE;
}
