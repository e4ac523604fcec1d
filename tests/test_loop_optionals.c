/*
 * A Loop whose body declares its carried values optional while the Loop is
 * given plain tensors: the core hands each one to the body as an optional
 * holding it (exec/control.c). There is no limit on how many: this model
 * carries 12 (the core once wrapped the first 8 and passed the rest
 * through unwrapped). Every value comes back, as an optional holding the
 * tensor the loop was given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fuzz/onnx_build.h"
#include "minfer/minfer.h"

#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define T_INT64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64
#define T_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL
#define N_CARRIED 12

/* A value info of type optional(tensor(float)). */
static Onnx__ValueInfoProto *optional_info(const char *name) {
    Onnx__ValueInfoProto *vi = ob_value_info(name, T_FLOAT, -1, NULL);
    Onnx__TypeProto *inner = vi->type;
    vi->type = ob_alloc(sizeof *vi->type);
    onnx__type_proto__init(vi->type);
    vi->type->value_case = ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE;
    vi->type->optional_type = ob_alloc(sizeof *vi->type->optional_type);
    onnx__type_proto__optional__init(vi->type->optional_type);
    vi->type->optional_type->elem_type = inner;
    return vi;
}

static uint8_t *loop_model(size_t *len) {
    Onnx__ModelProto *m = ob_model(16);
    Onnx__GraphProto *g = m->graph;
    Onnx__GraphProto *body = ob_alloc(sizeof *body);
    onnx__graph_proto__init(body);
    body->name = ob_str("body");
    OB_PUSH(body->input, body->n_input, ob_value_info("i", T_INT64, 0, NULL));
    OB_PUSH(body->input, body->n_input, ob_value_info("cond", T_BOOL, 0, NULL));
    ob_node(body, "Identity", "cond", "cond_out");
    OB_PUSH(body->output, body->n_output, ob_value_info("cond_out", T_BOOL, 0, NULL));
    char loop_in[512] = "trip -", loop_out[512] = ""; /* no condition input */
    for (int k = 0; k < N_CARRIED; k++) {
        char in[16], out[16], x[16], y[16];
        snprintf(in, sizeof in, "v%d_in", k);
        snprintf(out, sizeof out, "v%d_out", k);
        snprintf(x, sizeof x, "x%d", k);
        snprintf(y, sizeof y, "y%d", k);
        OB_PUSH(body->input, body->n_input, optional_info(in));
        ob_node(body, "Identity", in, out);
        OB_PUSH(body->output, body->n_output, optional_info(out));
        ob_input(g, x, T_FLOAT, 1, (const int64_t[]){2});
        snprintf(loop_in + strlen(loop_in), sizeof loop_in - strlen(loop_in), " %s", x);
        snprintf(loop_out + strlen(loop_out), sizeof loop_out - strlen(loop_out), "%s%s",
                 k ? " " : "", y);
        OB_PUSH(g->output, g->n_output, optional_info(y));
    }
    int64_t one = 1;
    ob_init(g, "trip", T_INT64, 0, NULL, &one, sizeof one);
    Onnx__NodeProto *loop = ob_node(g, "Loop", loop_in, loop_out);
    ob_attr(loop, "body", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = body;
    return ob_finish(m, len);
}

static void test_many_carried_optionals(void **state) {
    (void)state;
    size_t len;
    uint8_t *buf = loop_model(&len);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_int_equal(minfer_options_create(&opt), MINFER_OK);
    assert_int_equal(minfer_options_set_providers_str(opt, "cpu"), MINFER_OK);
    minfer_status st = minfer_session_create_from_memory(buf, len, opt, &s);
    minfer_options_free(opt);
    free(buf);
    if (st != MINFER_OK)
        fail_msg("session: %s", minfer_last_error());
    float x[N_CARRIED][2];
    minfer_tensor *in[N_CARRIED], *out[N_CARRIED] = {0};
    char names[N_CARRIED][16];
    const char *name_ptrs[N_CARRIED];
    for (int k = 0; k < N_CARRIED; k++) {
        x[k][0] = (float)k;
        x[k][1] = (float)(100 + k);
        assert_int_equal(minfer_tensor_wrap(MINFER_DTYPE_FLOAT, (const int64_t[]){2}, 1, x[k],
                                            sizeof x[k], &in[k]),
                         MINFER_OK);
        snprintf(names[k], sizeof names[k], "x%d", k);
        name_ptrs[k] = names[k];
    }
    st = minfer_session_run(s, name_ptrs, (const minfer_tensor *const *)in, N_CARRIED, NULL, out,
                            N_CARRIED);
    if (st != MINFER_OK)
        fail_msg("run: %s", minfer_last_error());
    for (int k = 0; k < N_CARRIED; k++) {
        assert_int_equal(minfer_value_kind_of(out[k]), MINFER_VALUE_OPTIONAL);
        const minfer_tensor *v = minfer_optional_value(out[k]);
        assert_non_null(v);
        const float *y = minfer_tensor_data(v);
        assert_true(y[0] == (float)k && y[1] == (float)(100 + k));
        minfer_tensor_free(out[k]);
        minfer_tensor_free(in[k]);
    }
    minfer_session_free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_many_carried_optionals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
