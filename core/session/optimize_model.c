/*
 * minfer_optimize_model: load, optimize with the stand-alone evaluator,
 * summarize, and save (include/minfer/optimize.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"
#include "graph/graph.h"
#include "util/internal.h"
#include "minfer/optimize.h"
#include "load/onnx_save.h"
#include "optimize/optimizer.h"
#include "place/plugin_loader.h"
#include "util/env.h"


static minfer_status read_all(const char *path, void **data, size_t *size) {
    *data = NULL;
    *size = 0;
    /* A FIFO or a device named as the model must not block the open. */
    FILE *f;
    uint64_t file_size;
    minfer_status st = mf_fopen_regular(path, "model file", &f, &file_size);
    if (st != MINFER_OK)
        return st;
    size_t cap = 1 << 16, n = 0;
    char *buf = mf_malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        char *nb = cap > ((size_t)1 << 31) ? NULL : mf_realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf)
        return mf_error(MINFER_ERR_NOMEM, "%s: out of memory reading the model", path);
    if (err) {
        free(buf);
        return mf_error(MINFER_ERR_IO, "%s: read error", path);
    }
    *data = buf;
    *size = n;
    return MINFER_OK;
}

static int cmp_count(const void *a, const void *b) {
    return strcmp(((const minfer_opt_count *)a)->name, ((const minfer_opt_count *)b)->name);
}

/* Node counts per op into list (sorted); sets *truncated when cut. */
static size_t count_ops(const mf_graph *g, minfer_opt_count *list, int *truncated) {
    size_t n = 0;
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mf_node *nd = &g->nodes[i];
        char key[64];
        if (nd->domain && nd->domain[0])
            snprintf(key, sizeof key, "%s:%s", nd->domain, nd->op_type);
        else
            snprintf(key, sizeof key, "%s", nd->op_type);
        size_t k = 0;
        while (k < n && strcmp(list[k].name, key) != 0)
            k++;
        if (k == n) {
            if (n == MINFER_OPT_MAX_COUNTS) {
                *truncated = 1;
                continue;
            }
            snprintf(list[n].name, sizeof list[n].name, "%s", key);
            list[n++].count = 0;
        }
        list[k].count++;
    }
    qsort(list, n, sizeof *list, cmp_count);
    return n;
}

minfer_status minfer_optimize_model(const char *in_path, const char *out_path, int level,
                                    minfer_opt_summary *summary) {
    void *data = NULL;
    size_t size = 0;
    mf_graph *g = NULL;
    mf_evaluator *ev = NULL;
    mf_opt_report rep;
    minfer_status st;
    if (!in_path)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_optimize_model: in_path is NULL");
    if (level < 0) {
        level = mf_env_opt_level();
    }
    if (level > 3)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_optimize_model: level %d (0 to 3)",
                        level);
    if ((st = read_all(in_path, &data, &size)) != MINFER_OK)
        return st;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", in_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    st = mf_load_onnx(data, size, dir, in_path, NULL, &g);
    free(data);
    if (st != MINFER_OK)
        return st;
    if (summary) {
        memset(summary, 0, sizeof *summary);
        summary->level = level;
        summary->n_ops_before = count_ops(g, summary->ops_before, &summary->truncated);
    }
    if (level > 0 && (st = mf_evaluator_open(&ev)) != MINFER_OK)
        goto done;
    /* Control-flow nodes, sequences and optionals, and the values their
     * subgraphs read, are written back as they are; the rest is optimized
     * (the subgraphs themselves are when a session runs them). */
    mf_opt_ctx ctx = {level, ev ? mf_evaluator_eval_node : NULL, ev, MF_FOLD_MAX_BYTES, &rep, 0,
                      mf_plugin_infer};
    if ((st = mf_optimize(g, &ctx, in_path)) != MINFER_OK)
        goto done;
    if (summary) {
        summary->nodes_before = rep.nodes_before;
        summary->nodes_after = rep.nodes_after;
        summary->n_passes = rep.n_passes;
        for (size_t i = 0; i < rep.n_passes; i++) {
            snprintf(summary->passes[i].name, sizeof summary->passes[i].name, "%s",
                     rep.passes[i].name);
            summary->passes[i].count = rep.passes[i].fired;
        }
        summary->n_ops_after = count_ops(g, summary->ops_after, &summary->truncated);
    }
    if (out_path)
        st = mf_save_onnx(g, out_path);
done:
    mf_evaluator_close(ev);
    mf_graph_free(g);
    return st;
}
