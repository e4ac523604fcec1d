/*
 * minfer plugins: every custom-operator plugin in the plugin directories and
 * every --plugin given, with its version, its file, whether it loads here
 * (and if not, why), and the ops it registers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "minfer/discovery.h"

static const char *CMD = "plugins";

static void print_help(void) {
    printf("usage: minfer plugins [--json] [--plugin FILE]...\n"
           "\n"
           "Lists the directories searched for custom-operator plugins (beside the\n"
           "providers': <libdir>/minfer/plugins when installed, the build tree's plugins/\n"
           "when run from it, then MINFER_PLUGIN_PATH) and every libminfer_plugin_NAME.so\n"
           "in them, then each --plugin given: name, version, whether it loads and\n"
           "registers its ops here, file, and the ops (domain:op_type and opset range).\n"
           "A plugin that does not load is followed by the reason. Sessions load the\n"
           "plugins named by --plugin and MINFER_PLUGINS, and the listed ones when a\n"
           "model has ops in a domain nothing else serves (docs/plugins.md).\n"
           "\n"
           "options:\n"
           "  --json       print one JSON object: the search path and each plugin's\n"
           "               name, version, path, usable, reason and ops\n"
           "  -h, --help   show this help\n");
}

static int print_json(const minfer_plugin_list *l) {
    json_t *root = json_object(), *dirs = json_array(), *plugs = json_array();
    for (size_t i = 0; i < minfer_plugin_list_dir_count(l); i++)
        json_array_append_new(dirs, cli_json_str(minfer_plugin_list_dir(l, i)));
    for (size_t i = 0; i < minfer_plugin_list_count(l); i++) {
        const minfer_plugin_desc *p = minfer_plugin_list_get(l, i);
        json_t *o = json_object(), *ops = json_array();
        json_object_set_new(o, "name", cli_json_str(p->name));
        json_object_set_new(o, "version", cli_json_str(p->version));
        json_object_set_new(o, "path", cli_json_str(p->path));
        json_object_set_new(o, "usable", json_boolean(p->usable));
        json_object_set_new(o, "reason", cli_json_str(p->reason));
        for (size_t k = 0; k < p->n_ops; k++)
            json_array_append_new(ops, cli_json_str(p->ops[k]));
        json_object_set_new(o, "ops", ops);
        json_array_append_new(plugs, o);
    }
    json_object_set_new(root, "search_path", dirs);
    json_object_set_new(root, "plugins", plugs);
    return cli_json_print(CMD, root);
}

int cmd_plugins(int argc, char **argv) {
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0;
    int help = 0, json = 0, rc;
    minfer_plugin_list *l = NULL;
    const cli_opt opts[] = {{"json", 0, NULL, &json, NULL}};
    minfer_status st;

    if (!pos) {
        fprintf(stderr, "minfer plugins: out of memory\n");
        return CLI_FAIL;
    }
    rc = cli_parse(CMD, argc, argv, opts, 1, pos, &n_pos, &help);
    if (rc)
        goto done;
    if (help) {
        print_help();
        goto done;
    }
    if (n_pos != 0) {
        fprintf(stderr, "minfer plugins: unexpected argument '%s' (see 'minfer plugins --help')\n",
                pos[0]);
        rc = CLI_USAGE;
        goto done;
    }
    if ((st = minfer_plugin_list_create(cli_plugins.v, cli_plugins.n, &l)) != MINFER_OK) {
        fprintf(stderr, "minfer plugins: %s\n", cli_error(st));
        rc = CLI_FAIL;
        goto done;
    }
    if (json) {
        rc = print_json(l);
        goto done;
    }
    size_t n_dirs = minfer_plugin_list_dir_count(l), n = minfer_plugin_list_count(l);
    printf("search path:\n");
    for (size_t i = 0; i < n_dirs; i++)
        printf("  %s\n", minfer_plugin_list_dir(l, i));
    if (n_dirs == 0)
        printf("  (empty: set MINFER_PLUGIN_PATH)\n");
    int wname = 4, wver = 7;
    for (size_t i = 0; i < n; i++) {
        const minfer_plugin_desc *p = minfer_plugin_list_get(l, i);
        int ln = (int)strlen(p->name), lv = (int)strlen(p->version);
        wname = ln > wname ? ln : wname;
        wver = lv > wver ? lv : wver;
    }
    printf("plugins (%zu):\n", n);
    if (n)
        printf("  %-*s  %-*s  %-5s  %s\n", wname, "NAME", wver, "VERSION", "LOADS", "PATH");
    for (size_t i = 0; i < n; i++) {
        const minfer_plugin_desc *p = minfer_plugin_list_get(l, i);
        printf("  %-*s  %-*s  %-5s  %s\n", wname, p->name, wver, p->version[0] ? p->version : "?",
               p->usable ? "yes" : "no", p->path);
        if (!p->usable)
            printf("  %-*s  why: %s\n", wname, "", p->reason);
        for (size_t k = 0; k < p->n_ops; k++)
            printf("  %-*s  op: %s\n", wname, "", p->ops[k]);
    }
    rc = CLI_OK;
done:
    minfer_plugin_list_free(l);
    free(pos);
    return rc;
}
