/*
 * Writes one of tests/big_graphs.h's graphs as an ONNX model, for timing
 * session creation on big graphs (docs/PERFORMANCE.md):
 *
 *   make_big_graphs KIND N OUT.onnx
 *       KIND: const-chain, add-chain, init-chain, identity-chain, wide,
 *       matmul-chain.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "big_graphs.h"
#include "load/onnx_save.h"

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: make_big_graphs KIND N OUT.onnx\n");
        return 2;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(argv[2], &end, 10);
    if (errno || !end || *end || n < 1 || n > 10000000ULL) {
        fprintf(stderr, "make_big_graphs: N must be 1 to 10000000, not '%s'\n", argv[2]);
        return 2;
    }
    mf_graph *g = big_graph(argv[1], (size_t)n);
    if (!g) {
        fprintf(stderr, "make_big_graphs: unknown kind '%s' (or out of memory)\n", argv[1]);
        return 2;
    }
    minfer_status st = mf_save_onnx(g, argv[3]);
    mf_graph_free(g);
    if (st != MINFER_OK) {
        fprintf(stderr, "make_big_graphs: %s\n", minfer_last_error());
        return 1;
    }
    return 0;
}
