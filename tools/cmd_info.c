/*
 * minfer info MODEL: the model's inputs and outputs, its ops, the providers
 * that loaded, where each node runs and why earlier providers declined it;
 * --dot/--svg draw the graph coloured by provider.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "minfer/optimize.h"

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

/* The memory plan for the declared input shapes (symbolic dims set to 1),
 * and with verbose every planned buffer. */
static int print_memory(minfer_session *s, int verbose) {
    minfer_memory_info mem;
    minfer_status st;
    minfer_session_memory_info(s, &mem);
    if (!mem.has_plan) {
        size_t n = minfer_session_input_count(s);
        minfer_tensor **ins = calloc(n + 1, sizeof *ins);
        const char **names = calloc(n + 1, sizeof *names);
        st = ins && names ? MINFER_OK : MINFER_ERR_NOMEM;
        for (size_t k = 0; st == MINFER_OK && k < n; k++) {
            minfer_value_info info;
            int64_t dims[MINFER_MAX_RANK];
            if ((st = minfer_session_input_info(s, k, &info)) != MINFER_OK)
                break;
            int rank = info.rank < 0 ? 0 : info.rank;
            for (int d = 0; d < rank; d++)
                dims[d] = info.dims[d] < 0 ? 1 : info.dims[d];
            names[k] = info.name;
            st = minfer_tensor_create(info.dtype, dims, (size_t)rank, &ins[k]);
        }
        if (st == MINFER_OK)
            st = minfer_session_prepare(s, names, (const minfer_tensor *const *)ins, n);
        for (size_t k = 0; ins && k < n; k++)
            minfer_tensor_free(ins[k]);
        free(ins);
        free(names);
        if (st != MINFER_OK) {
            fprintf(stderr, "minfer info: memory plan: %s\n", cli_error(st));
            return -1;
        }
        minfer_session_memory_info(s, &mem);
        printf("memory plan (symbolic dimensions set to 1):\n");
    } else
        printf("memory plan:\n");
    printf("  planner                  %s\n", mem.planner == MINFER_PLANNER_LINEAR ? "linear" : "greedy");
    printf("  arena                    %llu bytes (%.2f MiB)\n",
           (unsigned long long)mem.arena_bytes, (double)mem.arena_bytes / 1048576.0);
    printf("  all intermediates        %llu bytes (%.2f MiB)\n",
           (unsigned long long)mem.intermediate_bytes, (double)mem.intermediate_bytes / 1048576.0);
    printf("  lower bound              %llu bytes (%.2f MiB)\n",
           (unsigned long long)mem.lower_bound_bytes, (double)mem.lower_bound_bytes / 1048576.0);
    if (mem.device_arena_bytes)
        printf("  device arenas            %llu bytes\n", (unsigned long long)mem.device_arena_bytes);
    printf("  constants                %llu bytes\n", (unsigned long long)mem.constant_bytes);
    printf("  planned buffers          %zu\n", mem.planned_tensors);
    printf("  boundary copies per run  %zu (%llu bytes)\n", mem.copies_per_run,
           (unsigned long long)mem.copy_bytes_per_run);
    if (verbose) {
        printf("  %-8s %12s %12s %12s %s\n", "domain", "offset", "size", "steps",
               "buffer (first value held)");
        for (size_t i = 0; i < mem.planned_tensors; i++) {
            minfer_planned_tensor t;
            if (minfer_session_planned_tensor(s, i, &t) != MINFER_OK)
                break;
            printf("  %-8s %12llu %12llu %5d..%-5d %s%s\n", t.domain,
                   (unsigned long long)t.offset, (unsigned long long)t.size, t.first_step,
                   t.last_step, t.is_workspace ? "workspace of " : "", t.name);
        }
    }
    return 0;
}

/* The optimizer on its own (as the session runs it): node counts by op
 * before and after, and how often each pass fired. */
static void print_optimization(const char *path) {
    minfer_opt_summary *sum = malloc(sizeof *sum);
    minfer_status st = sum ? minfer_optimize_model(path, NULL, cli_opt_level, sum)
                           : MINFER_ERR_NOMEM;
    if (st != MINFER_OK) {
        printf("optimization: (%s)\n", cli_error(st));
        free(sum);
        return;
    }
    printf("optimization (level %d): %zu nodes -> %zu nodes\n", sum->level, sum->nodes_before,
           sum->nodes_after);
    printf("  %-30s %8s %8s\n", "op", "before", "after");
    for (size_t i = 0, j = 0; i < sum->n_ops_before || j < sum->n_ops_after;) {
        int c = i == sum->n_ops_before ? 1
                : j == sum->n_ops_after ? -1
                                        : strcmp(sum->ops_before[i].name, sum->ops_after[j].name);
        const char *name = c <= 0 ? sum->ops_before[i].name : sum->ops_after[j].name;
        size_t before = c <= 0 ? sum->ops_before[i++].count : 0;
        size_t after = c >= 0 ? sum->ops_after[j++].count : 0;
        printf("  %-30s %8zu %8zu\n", name, before, after);
    }
    printf("  passes fired:");
    size_t shown = 0;
    for (size_t k = 0; k < sum->n_passes; k++)
        if (sum->passes[k].count)
            printf("%s %s x%zu", shown++ ? "," : "", sum->passes[k].name, sum->passes[k].count);
    printf("%s\n", shown ? "" : " none");
    free(sum);
}

/* Whether Graphviz's `dot` is an executable file in a PATH directory. */
static int have_dot(void) {
    const char *path = getenv("PATH");
    char buf[4096];
    for (const char *p = path ? path : ""; *p;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && snprintf(buf, sizeof buf, "%.*s/dot", (int)len, p) < (int)sizeof buf &&
            access(buf, X_OK) == 0)
            return 1;
        p += len + (end ? 1 : 0);
    }
    return 0;
}

/* Writes the session's DOT to a temporary file and renders it with
 * `dot -Tsvg -o svg_path` (cmd_info's temporary file for the picture). 0
 * on success, else one line printed. */
static int render_svg(minfer_session *s, const char *svg_path) {
    char tmp[] = "/tmp/minfer-info-XXXXXX";
    int fd = mkstemp(tmp), status = 0, rc = -1;
    minfer_status st;
    pid_t pid;
    if (fd < 0) {
        fprintf(stderr, "minfer info: cannot create a temporary file: %s\n", strerror(errno));
        return -1;
    }
    close(fd);
    if ((st = minfer_session_write_dot(s, tmp)) != MINFER_OK) {
        fprintf(stderr, "minfer info: %s\n", cli_error(st));
        goto done;
    }
    char *args[] = {"dot", "-Tsvg", "-o", (char *)svg_path, tmp, NULL};
    int e = posix_spawnp(&pid, "dot", NULL, NULL, args, environ);
    if (e != 0) {
        fprintf(stderr, "minfer info: cannot run Graphviz's dot: %s\n", strerror(e));
        goto done;
    }
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "minfer info: 'dot -Tsvg -o %s' failed (its message is above)\n",
                svg_path);
        goto done;
    }
    rc = 0;
done:
    unlink(tmp);
    return rc;
}

static void print_help(void) {
    printf("usage: minfer info MODEL [options]\n"
           "\n"
           "Shows the model's inputs and outputs (symbolic dimensions by name), node counts\n"
           "by op type, the providers that loaded, the provider of every node (and why\n"
           "the providers before it declined it) and the memory plan (arena, all\n"
           "intermediates, lower bound).\n"
           "\n"
           "options:\n"
           "  --providers LIST  provider preference, e.g. 'opencl,cpu'\n"
           "  -v, --verbose     also list every planned buffer: offset, size, lifetime\n"
           "  --dim NAME=N      set the symbolic dimension NAME of every input to N\n"
           "  --shape IN=DIMS   fix input IN's shape, e.g. --shape input=1x3x224x224\n"
           "  --strict          fail if any node falls back past the first provider\n"
           "  --dot FILE        write the graph as Graphviz DOT: op and output shape per\n"
           "                    node, coloured by provider, boundary copies in red\n"
           "  --svg FILE        the same picture rendered to SVG (needs Graphviz's 'dot',\n"
           "                    Debian package graphviz)\n"
           "  --force           replace the --dot or --svg file if it exists\n"
           "  -h, --help        show this help\n"
           "\n"
           "MINFER_LOG=verbose also logs each node's inferred shapes and every provider's\n"
           "reason for declining it.\n");
}

int cmd_info(int argc, char **argv) {
    const char *providers = NULL, *dot_path = NULL, *svg_path = NULL;
    int verbose = 0, strict = 0, force = 0;
    cli_list dims = {0}, shapes = {0};
    const cli_opt opts[] = {{"providers", 0, &providers, NULL, NULL},
                            {"dim", 0, NULL, NULL, &dims},
                            {"shape", 0, NULL, NULL, &shapes},
                            {"force", 0, NULL, &force, NULL},
                            {"verbose", 'v', NULL, &verbose, NULL},
                            {"strict", 0, NULL, &strict, NULL},
                            {"dot", 0, &dot_path, NULL, NULL},
                            {"svg", 0, &svg_path, NULL, NULL}};
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0, n_ops = 0, n_prov = 0;
    int help = 0, rc;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    count *ops = NULL, *prov = NULL;
    cli_out dot_out = {0}, svg_out = {0};
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
    if (svg_path && !have_dot()) {
        fprintf(stderr, "minfer info: --svg needs Graphviz's 'dot' on PATH: install the Debian "
                        "package graphviz (apt-get install graphviz), or use --dot FILE\n");
        goto done;
    }
    if ((st = cli_make_options(providers, -1, &opt)) != MINFER_OK) {
        fprintf(stderr, "minfer info: %s\n", cli_error(st));
        goto done;
    }
    if ((rc = cli_set_shapes(CMD, opt, &dims, &shapes)) != 0)
        goto done;
    rc = CLI_FAIL;
    if (cli_set_diagnostics(CMD, opt, NULL, 0, NULL, 0, strict) != 0)
        goto done;
    /* Before the work, so that a path that exists fails at once. */
    if ((dot_path && cli_out_begin(CMD, "the graph", dot_path, force, &dot_out) != 0) ||
        (svg_path && cli_out_begin(CMD, "the picture", svg_path, force, &svg_out) != 0))
        goto done;
    if ((st = minfer_session_create(pos[0], opt, &s)) != MINFER_OK) {
        fprintf(stderr, "minfer info: %s\n", cli_error(st));
        goto done;
    }
    if ((rc = cli_check_shapes(CMD, s, &shapes)) != 0)
        goto done;
    rc = CLI_FAIL;

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
            snprintf(key, sizeof key, "%s::%s", p.domain, p.op_type);
        else
            snprintf(key, sizeof key, "%s", p.op_type);
        printf("  #%-4zu %-32s %-24s %s\n", i, p.node_name && p.node_name[0] ? p.node_name : "-",
               key, p.provider ? p.provider : "(none)");
        if (p.declined && p.declined[0])
            printf("        declined by %s\n", p.declined);
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
    print_optimization(pos[0]);
    if (print_memory(s, verbose) != 0)
        goto done;
    /* After print_memory: the picture shows the planned shapes. */
    if (dot_path) {
        if ((st = minfer_session_write_dot(s, dot_out.tmp)) != MINFER_OK) {
            fprintf(stderr, "minfer info: cannot write the graph to '%s': %s\n", dot_path,
                    cli_error(st));
            goto done;
        }
        if (cli_out_commit(CMD, "the graph", &dot_out) != 0)
            goto done;
        printf("graph written to %s\n", dot_path);
    }
    if (svg_path) {
        if (render_svg(s, svg_out.tmp) != 0 || cli_out_commit(CMD, "the picture", &svg_out) != 0)
            goto done;
        printf("picture written to %s\n", svg_path);
    }
    rc = CLI_OK;
done:
    cli_out_abort(&dot_out);
    cli_out_abort(&svg_out);
    free_counts(ops, n_ops);
    free_counts(prov, n_prov);
    minfer_session_free(s);
    minfer_options_free(opt);
    free(dims.v);
    free(shapes.v);
    free(pos);
    return rc;
}
