/*
 * Seed inputs for the fuzz targets, generated at run time (never committed):
 *   fuzz_seeds skeleton IN.onnx OUT.onnx
 *       The model with every initializer over 4 KiB turned into a graph
 *       input of the same type and shape: the whole graph's structure in a
 *       few kilobytes (resnet18 is 46 MB with its weights).
 *   fuzz_seeds builder DIR
 *       Deterministic pseudo-random programs for fuzz_builder.
 *   fuzz_seeds graph DIR
 *       Programs for fuzz_graph: each op of its schema table first (the
 *       op is the program's third byte), three times, with
 *       pseudo-random rest.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_build.h"

static int skeleton(const char *in, const char *out) {
    FILE *f = fopen(in, "rb");
    if (!f)
        return 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = ob_alloc((size_t)n);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return 1;
    }
    fclose(f);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, (size_t)n, buf);
    free(buf);
    if (!m || !m->graph)
        return 1;
    Onnx__GraphProto *g = m->graph;
    size_t kept = 0;
    for (size_t i = 0; i < g->n_initializer; i++) {
        Onnx__TensorProto *t = g->initializer[i];
        if (t->raw_data.len <= 4096 && t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
            g->initializer[kept++] = t;
            continue;
        }
        int already = 0;
        for (size_t k = 0; k < g->n_input; k++)
            already |= strcmp(g->input[k]->name, t->name) == 0;
        if (!already) {
            int64_t dims[16];
            int rank = t->n_dims < 16 ? (int)t->n_dims : 16;
            for (int d = 0; d < rank; d++)
                dims[d] = t->dims[d];
            ob_input(g, t->name, t->data_type, rank, dims);
        }
        onnx__tensor_proto__free_unpacked(t, NULL);
    }
    g->n_initializer = kept;
    size_t len;
    uint8_t *bytes = ob_finish(m, &len);
    int rc = ob_write(out, bytes, len);
    free(bytes);
    return rc ? 1 : 0;
}

static int builder(const char *dir) {
    uint64_t s = 12345;
    for (int k = 0; k < 32; k++) {
        uint8_t prog[256];
        size_t len = 32 + (size_t)k * 7;
        for (size_t i = 0; i < len; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            prog[i] = (uint8_t)(s >> 56);
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%02d", dir, k);
        if (ob_write(path, prog, len))
            return 1;
    }
    return 0;
}

static int graph(const char *dir) {
    uint64_t s = 777;
    for (int k = 0; k < 64 * 3; k++) {
        uint8_t prog[96];
        for (size_t i = 0; i < sizeof prog; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            prog[i] = (uint8_t)(s >> 56);
        }
        prog[0] = (uint8_t)(k / 64); /* opset 13, 11, 17 */
        prog[1] = 0;                 /* one node */
        prog[2] = (uint8_t)(k % 64); /* its op */
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%03d", dir, k);
        if (ob_write(path, prog, sizeof prog))
            return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "skeleton") == 0)
        return skeleton(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "builder") == 0)
        return builder(argv[2]);
    if (argc == 3 && strcmp(argv[1], "graph") == 0)
        return graph(argv[2]);
    fprintf(stderr, "usage: fuzz_seeds skeleton IN OUT | builder DIR | graph DIR\n");
    return 2;
}
