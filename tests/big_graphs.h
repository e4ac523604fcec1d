/*
 * Big graphs of a few simple shapes, built in the core's IR, for measuring
 * how session creation and the optimizer scale with model size
 * (tests/make_big_graphs.c writes them as ONNX files; tests/test_big_graphs.c
 * counts the optimizer's work on them). Every graph is valid, float, and
 * has one output:
 *
 *   const-chain N   c0 (an initializer) -> Add(c, one) x N: folds to a constant
 *   add-chain N     x (an input [1, 4]) -> Add(x, one) x N: nothing to fold
 *   init-chain N    x -> Add(x, w_i) x N, each w_i its own initializer
 *   identity-chain N x -> Identity x N -> Relu
 *   wide N          N branches Mul(x, w_i), summed by a tree of Add nodes
 *   matmul-chain N  x -> Add(MatMul(x, w), one) x N: N fusions into FusedMatMul
 *
 * big_graph returns NULL on an unknown kind or when out of memory.
 */
#ifndef MINFER_TESTS_BIG_GRAPHS_H
#define MINFER_TESTS_BIG_GRAPHS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "util/internal.h"

static int bg_value(mf_graph *g, const char *prefix, size_t i) {
    char name[48];
    snprintf(name, sizeof name, "%s%zu", prefix, i);
    return mf_graph_intern(g, name);
}

/* A float [4] (rank 1) or [4, 4] (rank 2) initializer named prefix<i>
 * holding v, v+1, v+2, ... */
static int bg_const_r(mf_graph *g, const char *prefix, size_t i, float v, int rank) {
    int64_t dims[2] = {4, 4};
    minfer_tensor *t = NULL;
    int vi = bg_value(g, prefix, i);
    if (vi < 0 || mf_tensor_new(MINFER_DTYPE_FLOAT, dims, rank, &t) != MINFER_OK)
        return -1;
    for (int k = 0; k < (rank == 1 ? 4 : 16); k++)
        ((float *)t->view.data)[k] = v + (float)k;
    mf_value *val = &g->values[vi];
    val->initializer = t;
    val->dtype = MINFER_DTYPE_FLOAT;
    val->rank = rank;
    val->dims[0] = val->dims[1] = 4;
    return vi;
}

static int bg_const(mf_graph *g, const char *prefix, size_t i, float v) {
    return bg_const_r(g, prefix, i, v, 1);
}

/* A node op(a[, b]) -> y; b < 0 for a one-input op. */
static int bg_node(mf_graph *g, const char *op, int a, int b, int y) {
    int i = mf_graph_add_node(g);
    if (i < 0 || a < 0 || y < 0)
        return -1;
    mf_node *n = &g->nodes[i];
    n->name = mf_strdup("");
    n->op_type = mf_strdup(op);
    n->domain = mf_strdup("");
    n->opset = 13;
    n->inputs = mf_malloc(2 * sizeof *n->inputs);
    n->outputs = mf_malloc(sizeof *n->outputs);
    if (!n->name || !n->op_type || !n->domain || !n->inputs || !n->outputs)
        return -1;
    n->inputs[0] = a;
    n->inputs[1] = b;
    n->n_inputs = b >= 0 ? 2 : 1;
    n->outputs[0] = y;
    n->n_outputs = 1;
    return i;
}

static int bg_list_add(int **list, size_t *n, int v) {
    int *l = mf_realloc(*list, (*n + 1) * sizeof *l);
    if (!l)
        return -1;
    l[(*n)++] = v;
    *list = l;
    return 0;
}

static mf_graph *big_graph(const char *kind, size_t n) {
    mf_graph *g = mf_graph_new();
    int ok = g != NULL;
    if (ok && (g->opsets = mf_calloc(1, sizeof *g->opsets)) != NULL) {
        g->opsets[0].domain = mf_strdup("");
        g->opsets[0].version = 13;
        g->n_opsets = 1;
    }
    ok = ok && g->n_opsets == 1 && g->opsets[0].domain;
    int x = -1, y = -1;
    if (ok && strcmp(kind, "const-chain") != 0) {
        x = mf_graph_intern(g, "x");
        ok = x >= 0 && bg_list_add(&g->inputs, &g->n_inputs, x) == 0;
        if (ok) {
            mf_value *v = &g->values[x];
            v->dtype = MINFER_DTYPE_FLOAT;
            v->rank = 2;
            v->dims[0] = 1;
            v->dims[1] = 4;
            v->is_input = 1;
        }
    }
    if (!ok) {
    } else if (strcmp(kind, "const-chain") == 0 || strcmp(kind, "add-chain") == 0) {
        int one = bg_const(g, "one", 0, 1.0f);
        y = x >= 0 ? x : bg_const(g, "c", 0, 0.5f);
        for (size_t i = 1; ok && i <= n; i++) {
            int next = bg_value(g, "c", i);
            ok = bg_node(g, "Add", y, one, next) >= 0;
            y = next;
        }
    } else if (strcmp(kind, "init-chain") == 0) {
        y = x;
        for (size_t i = 1; ok && i <= n; i++) {
            int next = bg_value(g, "c", i);
            ok = bg_node(g, "Add", y, bg_const(g, "w", i, (float)i * 1e-3f), next) >= 0;
            y = next;
        }
    } else if (strcmp(kind, "identity-chain") == 0) {
        y = x;
        for (size_t i = 1; ok && i <= n; i++) {
            int next = bg_value(g, "c", i);
            ok = bg_node(g, "Identity", y, -1, next) >= 0;
            y = next;
        }
        int last = bg_value(g, "relu", 0);
        ok = ok && bg_node(g, "Relu", y, -1, last) >= 0;
        y = last;
    } else if (strcmp(kind, "matmul-chain") == 0) {
        int one = bg_const(g, "one", 0, 1.0f), w = bg_const_r(g, "w", 0, 0.0f, 2);
        y = x;
        for (size_t i = 1; ok && i <= n; i++) {
            int mm = bg_value(g, "m", i), next = bg_value(g, "c", i);
            ok = bg_node(g, "MatMul", y, w, mm) >= 0 && bg_node(g, "Add", mm, one, next) >= 0;
            y = next;
        }
    } else if (strcmp(kind, "wide") == 0) {
        /* Branches, then pairwise sums level by level. */
        int *level = NULL;
        size_t cnt = 0, sums = 0;
        for (size_t i = 0; ok && i < n; i++) {
            int b = bg_value(g, "b", i);
            ok = bg_node(g, "Mul", x, bg_const(g, "w", i, (float)i * 1e-3f), b) >= 0 &&
                 bg_list_add(&level, &cnt, b) == 0;
        }
        while (ok && cnt > 1) {
            size_t w = 0;
            for (size_t i = 0; ok && i + 1 < cnt; i += 2) {
                int s = bg_value(g, "s", sums++);
                ok = bg_node(g, "Add", level[i], level[i + 1], s) >= 0;
                level[w++] = s;
            }
            if (cnt % 2)
                level[w++] = level[cnt - 1];
            cnt = w;
        }
        y = ok && cnt ? level[0] : -1;
        free(level);
    } else {
        ok = 0;
    }
    ok = ok && y >= 0 && bg_list_add(&g->outputs, &g->n_outputs, y) == 0;
    if (ok)
        g->values[y].is_output = 1;
    if (!ok || mf_graph_finalize(g, kind) != MINFER_OK) {
        mf_graph_free(g);
        return NULL;
    }
    return g;
}

#endif
