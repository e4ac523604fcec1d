/*
 * minfer info MODEL: the model's inputs and outputs, its ops, the providers
 * that loaded and where each node runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char *CMD = "info";

typedef struct count {
    char *key;
    size_t n;
} count;

static int cmp_count(const void *a, const void *b) {
    return strcmp(((const count *)a)->key, ((const count *)b)->key);
}

/* Adds one to key's count in *v (a small linear table: op and provider
 * counts are tens of entries). */
static int bump(count **v, size_t *n, const char *key) {
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i].key, key) == 0) {
            (*v)[i].n++;
            return 0;
        }
    count *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        return -1;
    *v = nv;
    if (!(nv[*n].key = strdup(key)))
        return -1;
    nv[(*n)++].n = 1;
    return 0;
}

static void free_counts(count *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i].key);
    free(v);
}

static void print_values(minfer_session *s, int outputs) {
    size_t n = outputs ? minfer_session_output_count(s) : minfer_session_input_count(s);
    printf("%s (%zu):\n", outputs ? "outputs" : "inputs", n);
    for (size_t i = 0; i < n; i++) {
        minfer_value_info info;
        char shape[512];
        minfer_status st = outputs ? minfer_session_output_info(s, i, &info)
                                   : minfer_session_input_info(s, i, &info);
        if (st != MINFER_OK) {
            printf("  %zu: (%s)\n", i, cli_error(st));
            continue;
        }
        cli_shape_str(info.dims, info.dim_names, info.rank, shape, sizeof shape);
        printf("  %-24s %-8s %s\n", info.name, minfer_dtype_name(info.dtype), shape);
    }
}

static void print_help(void) {
    printf("usage: minfer info MODEL [options]\n"
           "\n"
           "Shows the model's inputs and outputs (symbolic dimensions by name), node counts\n"
           "by op type, the providers that loaded and the provider of every node.\n"
           "\n"
           "options:\n"
           "  --providers LIST  provider preference, e.g. 'opencl,cpu'\n"
           "  -h, --help        show this help\n");
}

int cmd_info(int argc, char **argv) {
    const char *providers = NULL;
    const cli_opt opts[] = {{"providers", 0, &providers, NULL}};
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0, n_ops = 0, n_prov = 0;
    int help = 0, rc;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    count *ops = NULL, *prov = NULL;
    minfer_status st;

    if (!pos) {
        fprintf(stderr, "minfer info: out of memory\n");
        return CLI_FAIL;
    }
    rc = cli_parse(CMD, argc, argv, opts, sizeof opts / sizeof opts[0], pos, &n_pos, &help);
    if (rc)
        goto done;
    if (help) {
        print_help();
        goto done;
    }
    if (n_pos != 1) {
        fprintf(stderr,
                "minfer info: expected one MODEL argument, got %zu (see 'minfer info --help')\n",
                n_pos);
        rc = CLI_USAGE;
        goto done;
    }
    rc = CLI_FAIL;
    if ((st = cli_make_options(providers, -1, &opt)) != MINFER_OK ||
        (st = minfer_session_create(pos[0], opt, &s)) != MINFER_OK) {
        fprintf(stderr, "minfer info: %s\n", cli_error(st));
        goto done;
    }

    printf("model: %s\n", pos[0]);
    print_values(s, 0);
    print_values(s, 1);

    size_t np = minfer_session_provider_count(s);
    printf("providers loaded (%zu):", np);
    for (size_t i = 0; i < np; i++)
        printf("%s %s", i ? "," : "", minfer_session_provider_name(s, i));
    printf("\n");

    size_t nn = minfer_session_node_count(s);
    printf("nodes (%zu):\n", nn);
    for (size_t i = 0; i < nn; i++) {
        minfer_node_placement p;
        char key[512];
        if ((st = minfer_session_node_placement(s, i, &p)) != MINFER_OK) {
            fprintf(stderr, "minfer info: node %zu: %s\n", i, cli_error(st));
            goto done;
        }
        if (p.domain && p.domain[0])
            snprintf(key, sizeof key, "%s:%s", p.domain, p.op_type);
        else
            snprintf(key, sizeof key, "%s", p.op_type);
        printf("  #%-4zu %-32s %-24s %s\n", i, p.node_name && p.node_name[0] ? p.node_name : "-",
               key, p.provider ? p.provider : "(none)");
        if (bump(&ops, &n_ops, key) != 0 ||
            bump(&prov, &n_prov, p.provider ? p.provider : "(none)") != 0) {
            fprintf(stderr, "minfer info: out of memory\n");
            goto done;
        }
    }
    if (n_ops)
        qsort(ops, n_ops, sizeof *ops, cmp_count);
    printf("op types (%zu):\n", n_ops);
    for (size_t i = 0; i < n_ops; i++)
        printf("  %-32s %zu\n", ops[i].key, ops[i].n);
    printf("nodes per provider:\n");
    for (size_t i = 0; i < n_prov; i++)
        printf("  %-32s %zu\n", prov[i].key, prov[i].n);
    rc = CLI_OK;
done:
    free_counts(ops, n_ops);
    free_counts(prov, n_prov);
    minfer_session_free(s);
    minfer_options_free(opt);
    free(pos);
    return rc;
}
