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

/* The input dimensions info sets to 1 for a plan, as the options that
 * fix them: "--dim batch=N --dim samples=N" (each name once), and for an
 * input with an unnamed one "--shape x=Nx1xN". The count of such inputs'
 * dimensions; buf empty when 0. */
static size_t free_dims_hint(minfer_session *s, char *buf, size_t size) {
    size_t used = 0, n_free = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < minfer_session_input_count(s); k++) {
        minfer_value_info info;
        if (minfer_session_input_info(s, k, &info) != MINFER_OK ||
            info.kind != MINFER_VALUE_TENSOR)
            continue;
        int unnamed = 0;
        for (int d = 0; d < info.rank; d++) {
            if (info.dims[d] >= 0)
                continue;
            n_free++;
            const char *name = info.dim_names ? info.dim_names[d] : NULL;
            if (!name || !name[0]) {
                unnamed = 1;
                continue;
            }
            char opt[160];
            snprintf(opt, sizeof opt, " --dim %s=N", name);
            if (!strstr(buf, opt) && used < size)
                used += (size_t)snprintf(buf + used, size - used, "%s", opt);
        }
        if (unnamed && used < size) {
            used += (size_t)snprintf(buf + used, size - used, " --shape %s=", info.name);
            for (int d = 0; d < info.rank && used < size; d++)
                used += info.dims[d] >= 0
                            ? (size_t)snprintf(buf + used, size - used, "%s%lld", d ? "x" : "",
                                               (long long)info.dims[d])
                            : (size_t)snprintf(buf + used, size - used, "%sN", d ? "x" : "");
        }
    }
    return n_free;
}

/* Builds the memory plan for the declared input shapes (symbolic dims
 * set to 1) when creation did not; *assumed says so. 0, or -1 with the
 * reason in why. */
static int ensure_plan(minfer_session *s, minfer_memory_info *out, int *assumed, char *why,
                       size_t why_size) {
    minfer_memory_info mem;
    minfer_status st;
    minfer_session_memory_info(s, &mem);
    *assumed = !mem.has_plan;
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
            snprintf(why, why_size, "%s", cli_error(st));
            return -1;
        }
        minfer_session_memory_info(s, &mem);
    }
    *out = mem;
    return 0;
}

/* Planned buffers in host memory (the rest are in device domains). */
static size_t host_buffers(const minfer_session *s, const minfer_memory_info *mem) {
    size_t n = 0;
    for (size_t i = 0; i < mem->planned_tensors; i++) {
        minfer_planned_tensor t;
        n += minfer_session_planned_tensor(s, i, &t) == MINFER_OK && strcmp(t.domain, "host") == 0;
    }
    return n;
}

/* The pipeline's stages for the last plan: nodes, provider, share of the
 * estimated work, and what the requests in flight cost in arenas. */
static void print_stages(minfer_session *s) {
    minfer_pipeline_stage ps = {.struct_size = sizeof ps};
    if (minfer_session_pipeline_stage(s, 0, &ps) != MINFER_OK) {
        printf("  pipeline                 %s\n", minfer_last_error());
        return;
    }
    printf("  pipeline                 %d stages, each on %d thread%s; %d requests in flight "
           "(asynchronous API)\n",
           ps.stages, ps.threads, ps.threads == 1 ? "" : "s", ps.slots);
    for (size_t j = 0; j < (size_t)ps.stages; j++) {
        if (minfer_session_pipeline_stage(s, j, &ps) != MINFER_OK)
            break;
        if (ps.nodes == 0)
            printf("  stage %-2zu                 empty\n", j);
        else
            printf("  stage %-2zu                 steps %d-%d, %d nodes (%s .. %s), %s, %.1f%% "
                   "of the %s work\n",
                   j, ps.first_step, ps.last_step, ps.nodes, ps.first_node, ps.last_node,
                   ps.provider, 100.0 * ps.cost_share, ps.measured ? "measured" : "estimated");
    }
    printf("  arenas                   %llu bytes per request in flight, %llu for %d\n",
           (unsigned long long)ps.arena_bytes_per_slot,
           (unsigned long long)ps.arena_bytes_per_slot * (unsigned long long)ps.slots, ps.slots);
}

/* The scheduler, and for the parallel one what its memory plan costs
 * against the sequential order's (every arena, host and device). */
static void print_schedule(minfer_session *s) {
    minfer_schedule_info si;
    memset(&si, 0, sizeof si);
    si.struct_size = sizeof si;
    if (minfer_session_schedule_info(s, &si) == MINFER_OK) {
        printf("scheduler:\n");
        if (si.scheduler == MINFER_SCHED_PIPELINE)
            print_stages(s);
        else if (si.scheduler != MINFER_SCHED_PARALLEL)
            printf("  sequential               one node after another, each on %d threads\n",
                   minfer_session_thread_count(s));
        else if (!si.concurrent)
            printf("  parallel, run in order   %s\n", si.why_sequential);
        else {
            printf("  parallel                 up to %d nodes at once (%d threads in all)\n",
                   si.inter_op_threads, minfer_session_thread_count(s));
            printf("  arenas                   %llu bytes against %llu for the sequential "
                   "order (%+.1f%%)\n",
                   (unsigned long long)si.arena_bytes,
                   (unsigned long long)si.sequential_arena_bytes,
                   si.sequential_arena_bytes
                       ? 100.0 * ((double)si.arena_bytes - (double)si.sequential_arena_bytes) /
                             (double)si.sequential_arena_bytes
                       : 0.0);
        }
    }
}

/* The memory plan, and with verbose every planned buffer. The arena, all
 * intermediates and the lower bound are the host's; device domains (a
 * provider's own memory, oneDNN's or OpenCL's) have their arenas apart. */
static int print_memory(minfer_session *s, const char *model, int verbose) {
    minfer_memory_info mem;
    int assumed;
    char why[1024], hint[1024];
    if (ensure_plan(s, &mem, &assumed, why, sizeof why) != 0) {
        /* With free dimensions set to 1 a model may not run at all (a
         * window wider than 1 sample): the plan then needs sizes, which
         * is something to tell, not a failure of info. */
        if (!free_dims_hint(s, hint, sizeof hint)) {
            fprintf(stderr, "minfer info: memory plan: %s\n", why);
            return -1;
        }
        printf("memory plan: not made (the symbolic dimensions set to 1 do not fit the "
               "model):\n  %s\n  the plan needs concrete sizes: minfer info %s%s\n",
               why, model, hint);
        print_schedule(s);
        return 0;
    }
    printf("memory plan%s:\n", assumed ? " (symbolic dimensions set to 1)" : "");
    size_t on_host = host_buffers(s, &mem);
    printf("  planner                  %s\n", mem.planner == MINFER_PLANNER_LINEAR ? "linear" : "greedy");
    printf("  arena                    %llu bytes (%.2f MiB) in host memory\n",
           (unsigned long long)mem.arena_bytes, (double)mem.arena_bytes / 1048576.0);
    printf("  all intermediates        %llu bytes (%.2f MiB) in host memory\n",
           (unsigned long long)mem.intermediate_bytes, (double)mem.intermediate_bytes / 1048576.0);
    printf("  lower bound              %llu bytes (%.2f MiB) in host memory\n",
           (unsigned long long)mem.lower_bound_bytes, (double)mem.lower_bound_bytes / 1048576.0);
    printf("  device arenas            %llu bytes (%.2f MiB)\n",
           (unsigned long long)mem.device_arena_bytes, (double)mem.device_arena_bytes / 1048576.0);
    printf("  constants                %llu bytes\n", (unsigned long long)mem.constant_bytes);
    printf("  planned buffers          %zu (%zu host, %zu device)\n", mem.planned_tensors,
           on_host, mem.planned_tensors - on_host);
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
    print_schedule(s);
    return 0;
}

/* For each device provider that counts its runs (OpenCL): commands
 * enqueued, host synchronisations and host transfers per run, measured on
 * two runs of zero inputs (symbolic dimensions 1; the second run's counts,
 * as the first also does one-time uploads). Nothing when no such provider
 * loaded; a run that fails is reported, not fatal. */
static void print_device_counters(minfer_session *s) {
    size_t np = minfer_session_provider_count(s), ni = minfer_session_input_count(s);
    int any = 0;
    for (size_t j = 0; j < np; j++) {
        minfer_device_counters c = {.struct_size = sizeof c};
        any |= minfer_session_device_counters(s, j, &c) == MINFER_OK;
    }
    if (!any)
        return;
    minfer_tensor **ins = calloc(ni + 1, sizeof *ins);
    const char **names = calloc(ni + 1, sizeof *names);
    minfer_status st = ins && names ? MINFER_OK : MINFER_ERR_NOMEM;
    for (size_t k = 0; st == MINFER_OK && k < ni; k++) {
        minfer_value_info info;
        int64_t dims[MINFER_MAX_RANK];
        if ((st = minfer_session_input_info(s, k, &info)) != MINFER_OK)
            break;
        if (info.kind != MINFER_VALUE_TENSOR) {
            printf("device counters:\n  not measured: input '%s' is not a tensor\n", info.name);
            goto done;
        }
        int rank = info.rank < 0 ? 0 : info.rank;
        for (int d = 0; d < rank; d++)
            dims[d] = info.dims[d] < 0 ? 1 : info.dims[d];
        names[k] = info.name;
        st = minfer_tensor_create(info.dtype, dims, (size_t)rank, &ins[k]);
    }
    size_t no = minfer_session_output_count(s);
    minfer_tensor **outs = calloc(no + 1, sizeof *outs);
    if (!outs && st == MINFER_OK)
        st = MINFER_ERR_NOMEM;
    for (int r = 0; st == MINFER_OK && r < 2; r++) {
        st = minfer_session_run(s, names, (const minfer_tensor *const *)ins, ni, NULL, outs, no);
        for (size_t o = 0; o < no; o++) {
            minfer_tensor_free(outs[o]);
            outs[o] = NULL;
        }
    }
    free(outs);
    printf("device counters (per run, zero inputs):\n");
    if (st != MINFER_OK) {
        printf("  not measured: the run failed: %s\n", cli_error(st));
        goto done;
    }
    for (size_t j = 0; j < np; j++) {
        minfer_device_counters c = {.struct_size = sizeof c};
        if (minfer_session_device_counters(s, j, &c) == MINFER_OK)
            printf("  %-24s %llu kernel launches, %llu host synchronisations, %llu host "
                   "transfers\n", minfer_session_provider_name(s, j),
                   (unsigned long long)c.launches, (unsigned long long)c.syncs,
                   (unsigned long long)c.transfers);
    }
done:
    for (size_t k = 0; ins && k < ni; k++)
        minfer_tensor_free(ins[k]);
    free(ins);
    free(names);
}

/* The optimizer on its own (as the session runs it): node counts by op
 * before and after, and how often each pass fired. */
static void print_optimization(const char *path) {
    if (cli_describe_compiled(path, NULL))
        return; /* optimized when it was compiled */
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

static void print_metadata(const minfer_session *s) {
    minfer_model_metadata md;
    if (minfer_session_metadata(s, &md) != MINFER_OK)
        return;
    if (md.producer_name[0] || md.producer_version[0])
        printf("producer: %s%s%s\n", md.producer_name, md.producer_version[0] ? " " : "",
               md.producer_version);
    if (md.graph_name[0])
        printf("graph: %s\n", md.graph_name);
    if (md.domain[0] || md.model_version)
        printf("domain: %s, model version %lld\n", md.domain[0] ? md.domain : "(none)",
               (long long)md.model_version);
    const char *doc = md.doc_string[0] ? md.doc_string : md.graph_doc_string;
    if (doc[0]) {
        /* the first line, cut at 200 bytes: --json has it whole */
        size_t len = strcspn(doc, "\r\n");
        printf("doc: %.*s%s\n", (int)(len > 200 ? 200 : len), doc,
               len > 200 || doc[len] ? " ..." : "");
    }
    for (size_t i = 0; i < md.n_props; i++) {
        const char *k, *v;
        if (minfer_session_metadata_prop(s, i, &k, &v) == MINFER_OK)
            printf("metadata: %s = %s\n", k, v);
    }
}

static json_t *values_json(const minfer_session *s, int outputs) {
    json_t *a = json_array();
    size_t n = outputs ? minfer_session_output_count(s) : minfer_session_input_count(s);
    static const char *const kinds[] = {"tensor", "sequence", "optional"};
    for (size_t i = 0; a && i < n; i++) {
        minfer_value_info info;
        if ((outputs ? minfer_session_output_info(s, i, &info)
                     : minfer_session_input_info(s, i, &info)) != MINFER_OK)
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "name", cli_json_str(info.name));
        json_object_set_new(o, "kind", json_string(kinds[info.kind % 3]));
        json_object_set_new(o, "type", json_string(minfer_dtype_name(info.dtype)));
        json_object_set_new(o, "shape", cli_json_shape(info.dims, info.dim_names, info.rank));
        json_array_append_new(a, o);
    }
    return a;
}

static json_t *counts_json(const count *v, size_t n) {
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++) {
        json_t *k = cli_json_str(v[i].key);
        if (k)
            json_object_set_new(o, json_string_value(k), json_integer((json_int_t)v[i].n));
        json_decref(k);
    }
    return o;
}

/* `info --json`: everything the text report shows, as one object; takes
 * nodes. 0, or CLI_FAIL after one line. */
static int info_json(minfer_session *s, const char *path, json_t *nodes, const count *ops,
                     size_t n_ops, const count *prov, size_t n_prov, int verbose) {
    json_t *root = json_object(), *meta = json_object(), *props = json_object(),
           *provs = json_array(), *mem = json_object();
    minfer_model_metadata md;
    minfer_memory_info mi;
    int assumed;
    json_object_set_new(root, "model", cli_json_str(path));
    if (minfer_session_metadata(s, &md) == MINFER_OK) {
        json_object_set_new(meta, "producer_name", cli_json_str(md.producer_name));
        json_object_set_new(meta, "producer_version", cli_json_str(md.producer_version));
        json_object_set_new(meta, "domain", cli_json_str(md.domain));
        json_object_set_new(meta, "model_version", json_integer(md.model_version));
        json_object_set_new(meta, "ir_version", json_integer(md.ir_version));
        json_object_set_new(meta, "graph_name", cli_json_str(md.graph_name));
        json_object_set_new(meta, "doc_string", cli_json_str(md.doc_string));
        json_object_set_new(meta, "graph_doc_string", cli_json_str(md.graph_doc_string));
        for (size_t i = 0; i < md.n_props; i++) {
            const char *k, *v;
            json_t *jk = NULL;
            if (minfer_session_metadata_prop(s, i, &k, &v) == MINFER_OK && (jk = cli_json_str(k)))
                json_object_set_new(props, json_string_value(jk), cli_json_str(v));
            json_decref(jk);
        }
    }
    json_object_set_new(meta, "metadata_props", props);
    json_object_set_new(root, "metadata", meta);
    json_object_set_new(root, "inputs", values_json(s, 0));
    json_object_set_new(root, "outputs", values_json(s, 1));
    for (size_t i = 0; i < minfer_session_provider_count(s); i++)
        json_array_append_new(provs, cli_json_str(minfer_session_provider_name(s, i)));
    json_object_set_new(root, "providers", provs);
    json_object_set_new(root, "nodes", nodes);
    json_object_set_new(root, "op_types", counts_json(ops, n_ops));
    json_object_set_new(root, "nodes_per_provider", counts_json(prov, n_prov));
    minfer_opt_summary *sum = cli_describe_compiled(path, root) ? NULL : malloc(sizeof *sum);
    if (sum && minfer_optimize_model(path, NULL, cli_opt_level, sum) == MINFER_OK) {
        json_t *o = json_object(), *fired = json_object();
        json_object_set_new(o, "level", json_integer(sum->level));
        json_object_set_new(o, "nodes_before", json_integer((json_int_t)sum->nodes_before));
        json_object_set_new(o, "nodes_after", json_integer((json_int_t)sum->nodes_after));
        for (size_t k = 0; k < sum->n_passes; k++)
            json_object_set_new(fired, sum->passes[k].name,
                                json_integer((json_int_t)sum->passes[k].count));
        json_object_set_new(o, "passes_fired", fired);
        json_object_set_new(root, "optimization", o);
    }
    free(sum);
    char why[1024], hint[1024];
    if (ensure_plan(s, &mi, &assumed, why, sizeof why) != 0) {
        if (!free_dims_hint(s, hint, sizeof hint)) {
            fprintf(stderr, "minfer info: memory plan: %s\n", why);
            json_decref(root);
            json_decref(mem);
            return CLI_FAIL;
        }
        /* As the text report: the plan needs sizes (see print_memory). */
        json_object_set_new(mem, "planned", json_false());
        json_object_set_new(mem, "error", cli_json_str(why));
        json_object_set_new(mem, "needs", cli_json_str(hint + 1));
        json_object_set_new(root, "memory", mem);
        return cli_json_print(CMD, root);
    }
    json_object_set_new(mem, "planned", json_true());
    json_object_set_new(mem, "symbolic_dims_set_to_1", json_boolean(assumed));
    json_object_set_new(mem, "planner",
                        json_string(mi.planner == MINFER_PLANNER_LINEAR ? "linear" : "greedy"));
    json_object_set_new(mem, "host_arena_bytes", json_integer((json_int_t)mi.arena_bytes));
    json_object_set_new(mem, "host_intermediate_bytes",
                        json_integer((json_int_t)mi.intermediate_bytes));
    json_object_set_new(mem, "host_lower_bound_bytes",
                        json_integer((json_int_t)mi.lower_bound_bytes));
    json_object_set_new(mem, "device_arena_bytes", json_integer((json_int_t)mi.device_arena_bytes));
    json_object_set_new(mem, "constant_bytes", json_integer((json_int_t)mi.constant_bytes));
    json_object_set_new(mem, "planned_buffers", json_integer((json_int_t)mi.planned_tensors));
    json_object_set_new(mem, "host_buffers", json_integer((json_int_t)host_buffers(s, &mi)));
    json_object_set_new(mem, "copies_per_run", json_integer((json_int_t)mi.copies_per_run));
    json_object_set_new(mem, "copy_bytes_per_run", json_integer((json_int_t)mi.copy_bytes_per_run));
    if (verbose) {
        json_t *bufs = json_array();
        for (size_t i = 0; i < mi.planned_tensors; i++) {
            minfer_planned_tensor t;
            if (minfer_session_planned_tensor(s, i, &t) != MINFER_OK)
                break;
            json_array_append_new(
                bufs, json_pack("{s:o, s:s, s:I, s:I, s:i, s:i, s:b}", "name", cli_json_str(t.name),
                                "domain", t.domain, "offset", (json_int_t)t.offset, "size",
                                (json_int_t)t.size, "first_step", t.first_step, "last_step",
                                t.last_step, "workspace", t.is_workspace));
        }
        json_object_set_new(mem, "buffers", bufs);
    }
    json_object_set_new(root, "memory", mem);
    minfer_schedule_info si;
    memset(&si, 0, sizeof si);
    si.struct_size = sizeof si;
    if (minfer_session_schedule_info(s, &si) == MINFER_OK)
        json_object_set_new(
            root, "scheduler",
            json_pack("{s:s, s:i, s:b, s:s, s:I, s:I}", "name",
                      si.scheduler == MINFER_SCHED_PARALLEL   ? "parallel"
                      : si.scheduler == MINFER_SCHED_PIPELINE ? "pipeline"
                                                              : "sequential",
                      "inter_op_threads", si.inter_op_threads, "concurrent", si.concurrent,
                      "why_sequential", si.why_sequential, "arena_bytes",
                      (json_int_t)si.arena_bytes, "sequential_arena_bytes",
                      (json_int_t)si.sequential_arena_bytes));
    minfer_pipeline_stage ps = {.struct_size = sizeof ps};
    json_t *sched = json_object_get(root, "scheduler");
    if (sched && si.scheduler == MINFER_SCHED_PIPELINE &&
        minfer_session_pipeline_stage(s, 0, &ps) == MINFER_OK) {
        /* the stages as the text report prints them */
        json_t *stages = json_array();
        for (size_t j = 0; j < (size_t)ps.stages; j++)
            if (minfer_session_pipeline_stage(s, j, &ps) == MINFER_OK)
                json_array_append_new(
                    stages, json_pack("{s:i, s:i, s:i, s:o, s:o, s:o, s:f, s:b}", "first_step",
                                      ps.first_step, "last_step", ps.last_step, "nodes",
                                      ps.nodes, "first_node", cli_json_str(ps.first_node),
                                      "last_node", cli_json_str(ps.last_node), "provider",
                                      cli_json_str(ps.provider), "cost_share", ps.cost_share,
                                      "measured", ps.measured));
        json_object_set_new(sched, "stages", stages);
        json_object_set_new(sched, "threads_per_stage", json_integer(ps.threads));
        json_object_set_new(sched, "requests_in_flight", json_integer(ps.slots));
        json_object_set_new(sched, "arena_bytes_per_request",
                            json_integer((json_int_t)ps.arena_bytes_per_slot));
    }
    return cli_json_print(CMD, root);
}

static void print_help(void) {
    printf("usage: minfer info MODEL [options]\n"
           "\n"
           "Shows the model's metadata (producer, graph name, doc string, metadata_props),\n"
           "its inputs and outputs (symbolic dimensions by name), node counts\n"
           "by op type, the providers that loaded, the provider of every node (and why\n"
           "the providers before it declined it) and the memory plan (arena, all\n"
           "intermediates, lower bound). The plan takes symbolic dimensions as 1 unless\n"
           "--dim or --shape give them; when the model cannot run with 1, the report\n"
           "says so and names the dimensions to give.\n"
           "\n"
           "options:\n"
           "  --providers LIST  provider preference, e.g. 'opencl,cpu'\n"
           "  -v, --verbose     also list every planned buffer: offset, size, lifetime\n"
           "  --json            print one JSON object instead (model metadata, inputs,\n"
           "                    outputs, providers, nodes, op types, optimization, memory)\n"
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
    int verbose = 0, strict = 0, force = 0, json = 0;
    cli_list dims = {0}, shapes = {0};
    const cli_opt opts[] = {{"providers", 0, &providers, NULL, NULL},
                            {"dim", 0, NULL, NULL, &dims},
                            {"shape", 0, NULL, NULL, &shapes},
                            {"force", 0, NULL, &force, NULL},
                            {"verbose", 'v', NULL, &verbose, NULL},
                            {"strict", 0, NULL, &strict, NULL},
                            {"json", 0, NULL, &json, NULL},
                            {"dot", 0, &dot_path, NULL, NULL},
                            {"svg", 0, &svg_path, NULL, NULL}};
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0, n_ops = 0, n_prov = 0;
    int help = 0, rc;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    count *ops = NULL, *prov = NULL;
    cli_out dot_out = {0}, svg_out = {0};
    json_t *jnodes = NULL;
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

    if (!json) {
        printf("model: %s\n", pos[0]);
        print_metadata(s);
        print_values(s, 0);
        print_values(s, 1);
        size_t np = minfer_session_provider_count(s);
        printf("providers loaded (%zu):", np);
        for (size_t i = 0; i < np; i++)
            printf("%s %s", i ? "," : "", minfer_session_provider_name(s, i));
        printf("\n");
    } else if (!(jnodes = json_array())) {
        fprintf(stderr, "minfer info: out of memory\n");
        goto done;
    }

    size_t nn = minfer_session_node_count(s);
    /* Columns as wide as the longest name (up to 80), so a long one does
     * not shift the rest. */
    int wname = 32, wop = 24;
    for (size_t i = 0; i < nn; i++) {
        minfer_node_placement p;
        if (minfer_session_node_placement(s, i, &p) != MINFER_OK)
            continue;
        int ln = (int)strlen(p.node_name), lo = (int)(strlen(p.op_type) + strlen(p.domain) + 2);
        wname = ln > wname ? (ln < 80 ? ln : 80) : wname;
        wop = lo > wop ? (lo < 80 ? lo : 80) : wop;
    }
    if (!json)
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
        if (json) {
            json_t *o = json_object();
            json_object_set_new(o, "name", cli_json_str(p.node_name));
            json_object_set_new(o, "op", cli_json_str(key));
            json_object_set_new(o, "provider", cli_json_str(p.provider ? p.provider : "(none)"));
            json_object_set_new(o, "declined", cli_json_str(p.declined ? p.declined : ""));
            json_array_append_new(jnodes, o);
        } else
            printf("  #%-4zu %-*s %-*s %s\n", i, wname,
                   p.node_name && p.node_name[0] ? p.node_name : "-", wop, key,
                   p.provider ? p.provider : "(none)");
        if (!json && p.declined && p.declined[0])
            printf("        declined by %s\n", p.declined);
        if (bump(&ops, &n_ops, key) != 0 ||
            bump(&prov, &n_prov, p.provider ? p.provider : "(none)") != 0) {
            fprintf(stderr, "minfer info: out of memory\n");
            goto done;
        }
    }
    if (n_ops)
        qsort(ops, n_ops, sizeof *ops, cmp_count);
    if (json) {
        json_t *nodes = jnodes;
        jnodes = NULL; /* info_json takes it */
        if (info_json(s, pos[0], nodes, ops, n_ops, prov, n_prov, verbose) != 0)
            goto done;
    } else {
        printf("op types (%zu):\n", n_ops);
        for (size_t i = 0; i < n_ops; i++)
            printf("  %-*s %zu\n", wop, ops[i].key, ops[i].n);
        printf("nodes per provider:\n");
        for (size_t i = 0; i < n_prov; i++)
            printf("  %-32s %zu\n", prov[i].key, prov[i].n);
        print_optimization(pos[0]);
        if (print_memory(s, pos[0], verbose) != 0)
            goto done;
        print_device_counters(s);
    }
    /* After print_memory: the picture shows the planned shapes. */
    if (dot_path) {
        if ((st = minfer_session_write_dot(s, dot_out.tmp)) != MINFER_OK) {
            fprintf(stderr, "minfer info: cannot write the graph to '%s': %s\n", dot_path,
                    cli_error(st));
            goto done;
        }
        if (cli_out_commit(CMD, "the graph", &dot_out) != 0)
            goto done;
        fprintf(json ? stderr : stdout, "graph written to %s\n", dot_path);
    }
    if (svg_path) {
        if (render_svg(s, svg_out.tmp) != 0 || cli_out_commit(CMD, "the picture", &svg_out) != 0)
            goto done;
        fprintf(json ? stderr : stdout, "picture written to %s\n", svg_path);
    }
    rc = CLI_OK;
done:
    cli_out_abort(&dot_out);
    cli_out_abort(&svg_out);
    json_decref(jnodes);
    free_counts(ops, n_ops);
    free_counts(prov, n_prov);
    minfer_session_free(s);
    minfer_options_free(opt);
    free(dims.v);
    free(shapes.v);
    free(pos);
    return rc;
}
