/*
 * minfer providers: every provider library in the search path, with its
 * version and ABI version, its file, and whether it loads and initialises
 * here (and if not, why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "minfer/discovery.h"

static const char *CMD = "providers";

static void print_help(void) {
    printf("usage: minfer providers [--json]\n"
           "\n"
           "Lists the directories searched for provider libraries (the install directory\n"
           "next to libminfer.so, the build tree when run from it, then\n"
           "MINFER_PROVIDER_PATH) and every libminfer_provider_NAME.so in them: name,\n"
           "version, provider ABI version, file, and whether it loads and initialises here.\n"
           "A provider that does not is followed by the reason. The first file of a name is\n"
           "the one sessions use; later ones are listed as shadowed.\n"
           "\n"
           "Each provider that loads is followed by the device it computes on; one whose\n"
           "device is the CPU but is not the CPU provider (OpenCL on PoCL) is left out of\n"
           "the default order and runs only when named.\n"
           "\n"
           "options:\n"
           "  --json       print one JSON object: the search path and each provider's\n"
           "               name, version, abi_version, path, usable, reason, device,\n"
           "               device_kind (cpu, gpu, other) and in_default_order\n"
           "  -h, --help   show this help\n");
}

static int print_json(const minfer_provider_list *l) {
    static const char *const kinds[] = {"cpu", "gpu", "other"};
    json_t *root = json_object(), *dirs = json_array(), *provs = json_array();
    for (size_t i = 0; i < minfer_provider_list_dir_count(l); i++)
        json_array_append_new(dirs, cli_json_str(minfer_provider_list_dir(l, i)));
    for (size_t i = 0; i < minfer_provider_list_count(l); i++) {
        const minfer_provider_info *p = minfer_provider_list_get(l, i);
        json_t *o = json_object();
        json_object_set_new(o, "name", cli_json_str(p->name));
        json_object_set_new(o, "version", cli_json_str(p->version));
        json_object_set_new(o, "abi_version", json_integer(p->abi_version));
        json_object_set_new(o, "path", cli_json_str(p->path));
        json_object_set_new(o, "usable", json_boolean(p->usable));
        json_object_set_new(o, "reason", cli_json_str(p->reason));
        json_object_set_new(o, "device", p->usable ? cli_json_str(p->device) : json_null());
        json_object_set_new(o, "device_kind", p->device_kind >= 0 && p->device_kind <= 2
                                                  ? json_string(kinds[p->device_kind])
                                                  : json_null());
        json_object_set_new(o, "in_default_order", json_boolean(p->usable && !p->named_only));
        json_array_append_new(provs, o);
    }
    json_object_set_new(root, "search_path", dirs);
    json_object_set_new(root, "providers", provs);
    return cli_json_print(CMD, root);
}

int cmd_providers(int argc, char **argv) {
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0;
    int help = 0, json = 0, rc;
    minfer_provider_list *l = NULL;
    const cli_opt opts[] = {{"json", 0, NULL, &json, NULL}};
    minfer_status st;

    if (!pos) {
        fprintf(stderr, "minfer providers: out of memory\n");
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
        fprintf(stderr,
                "minfer providers: unexpected argument '%s' (see 'minfer providers --help')\n",
                pos[0]);
        rc = CLI_USAGE;
        goto done;
    }
    if ((st = minfer_provider_list_create(&l)) != MINFER_OK) {
        fprintf(stderr, "minfer providers: %s\n", cli_error(st));
        rc = CLI_FAIL;
        goto done;
    }

    size_t n_dirs = minfer_provider_list_dir_count(l), n = minfer_provider_list_count(l);
    if (json) {
        rc = print_json(l);
        goto done;
    }
    printf("search path:\n");
    for (size_t i = 0; i < n_dirs; i++)
        printf("  %s\n", minfer_provider_list_dir(l, i));
    if (n_dirs == 0)
        printf("  (empty: set MINFER_PROVIDER_PATH)\n");

    /* Column widths from the data, so a long name does not shift the rest. */
    int wname = 4, wver = 7;
    for (size_t i = 0; i < n; i++) {
        const minfer_provider_info *p = minfer_provider_list_get(l, i);
        int ln = (int)strlen(p->name), lv = (int)strlen(p->version);
        wname = ln > wname ? ln : wname;
        wver = lv > wver ? lv : wver;
    }
    printf("providers (%zu):\n", n);
    if (n)
        printf("  %-*s  %-*s  %-3s  %-5s  %s\n", wname, "NAME", wver, "VERSION", "ABI", "LOADS",
               "PATH");
    for (size_t i = 0; i < n; i++) {
        const minfer_provider_info *p = minfer_provider_list_get(l, i);
        char abi[16];
        if (p->abi_version)
            snprintf(abi, sizeof abi, "%u", (unsigned)p->abi_version);
        else
            snprintf(abi, sizeof abi, "?");
        printf("  %-*s  %-*s  %-3s  %-5s  %s\n", wname, p->name, wver,
               p->version[0] ? p->version : "?", abi, p->usable ? "yes" : "no", p->path);
        if (!p->usable)
            printf("  %-*s  why: %s\n", wname, "", p->reason);
        else
            printf("  %-*s  device: %s%s\n", wname, "", p->device,
                   p->named_only ? " (not in the default order: used only when named)" : "");
    }
    rc = CLI_OK;
done:
    minfer_provider_list_free(l);
    free(pos);
    return rc;
}
