/*
 * relu_check PROVIDERS WANT: builds a one-node graph (Relu on a float [2,5]
 * tensor) with the builder, runs it with the provider list PROVIDERS
 * (e.g. "example,cpu") and checks both the result and that the node was
 * placed on provider WANT. Optimization is off so the node stays a Relu.
 */
#include <stdio.h>
#include <string.h>

#include <minfer/builder.h>
#include <minfer/minfer.h>

int main(int argc, char **argv) {
    int rc = 1;
    minfer_graph_builder *b = NULL;
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    minfer_tensor *in = NULL, *out = NULL;
    float x[10] = {-3, -2, -1, -0.5f, 0, 0.5f, 1, 2, 3, 4};
    int64_t dims[2] = {2, 5};
    const char *ins[] = {"x"}, *outs[] = {"y"};

    if (argc != 3) {
        fprintf(stderr, "usage: relu_check PROVIDERS WANT\n");
        return 2;
    }
    if (minfer_builder_create(13, &b) || minfer_builder_add_input(b, "x", MINFER_DTYPE_FLOAT, dims, 2, NULL) ||
        minfer_builder_add_node(b, "Relu", NULL, "relu0", ins, 1, outs, 1, NULL) ||
        minfer_builder_add_output(b, "y") || minfer_options_create(&opt) ||
        minfer_options_set_providers_str(opt, argv[1]) ||
        minfer_options_set_optimization_level(opt, 0) ||
        minfer_session_create_from_builder(b, opt, &s) ||
        minfer_tensor_wrap(MINFER_DTYPE_FLOAT, dims, 2, x, sizeof x, &in) ||
        minfer_session_run(s, ins, (const minfer_tensor *const *)&in, 1, NULL, &out, 1)) {
        fprintf(stderr, "relu_check: %s\n", minfer_last_error());
        goto done;
    }
    const float *y = minfer_tensor_data(out);
    for (int i = 0; i < 10; i++)
        if (y[i] != (x[i] > 0 ? x[i] : 0)) {
            fprintf(stderr, "relu_check: y[%d] = %g, want %g\n", i, y[i], x[i] > 0 ? x[i] : 0);
            goto done;
        }
    minfer_node_placement p;
    if (minfer_session_node_placement(s, 0, &p)) {
        fprintf(stderr, "relu_check: %s\n", minfer_last_error());
        goto done;
    }
    printf("relu0 -> %s\n", p.provider);
    if (strcmp(p.provider, argv[2]) != 0) {
        fprintf(stderr, "relu_check: Relu ran on '%s', want '%s'\n", p.provider, argv[2]);
        goto done;
    }
    rc = 0;
done:
    minfer_tensor_free(out);
    minfer_tensor_free(in);
    minfer_session_free(s);
    minfer_options_free(opt);
    minfer_builder_free(b);
    return rc;
}
