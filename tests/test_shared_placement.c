/*
 * A session tree shares one placement (place/state.h, mf_placement): the
 * subgraph sessions of If, Loop and Scan bodies, however many and however
 * deeply nested, compute on the providers and the constant evaluator the
 * session created by the caller opened, and the optimizer folds constants
 * on that evaluator too. Counted two ways on a model with 606 If bodies
 * (101 Ifs, each branch holding one more): the dlopen calls the core makes per provider library
 * (this executable's dlopen stands in front of libc's and counts them),
 * and the init calls of a provider that counts its own (fakecount).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "fuzz/onnx_build.h"
#include "test_util.h"

#define N_IF 101 /* top-level Ifs; each branch holds one more */
#define T_FLOAT ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define T_BOOL ONNX__TENSOR_PROTO__DATA_TYPE__BOOL

static atomic_int opens_cpu, opens_fakecount;

/* Every dlopen of the process comes through here first. */
__attribute__((visibility("default"))) void *dlopen(const char *file, int mode) {
    static void *(*real)(const char *, int);
    if (!real)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    if (file && strstr(file, "libminfer_provider_cpu.so"))
        atomic_fetch_add(&opens_cpu, 1);
    if (file && strstr(file, "libminfer_provider_fakecount.so"))
        atomic_fetch_add(&opens_fakecount, 1);
    return real(file, mode);
}

/* A branch reading outer value `in` into its output `out`: op (Neg or
 * Identity) directly, or (nest) through one more If on cond. */
static Onnx__GraphProto *branch(const char *name, const char *op, const char *in,
                                const char *out, int nest) {
    Onnx__GraphProto *g = ob_alloc(sizeof *g);
    onnx__graph_proto__init(g);
    g->name = ob_str(name);
    if (!nest) {
        ob_node(g, op, in, out);
    } else {
        char t[80], e[80], tout[80], eout[80];
        snprintf(t, sizeof t, "%s_then", name);
        snprintf(e, sizeof e, "%s_else", name);
        snprintf(tout, sizeof tout, "%s_t", out);
        snprintf(eout, sizeof eout, "%s_e", out);
        Onnx__NodeProto *n = ob_node(g, "If", "cond", out);
        ob_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g =
            branch(t, op, in, tout, 0);
        ob_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g =
            branch(e, "Identity", in, eout, 0);
    }
    ob_output(g, out, T_FLOAT);
    return g;
}

/* y = x negated N_IF times, each time inside two levels of If. */
static minfer_session *nested_ifs(const char *providers) {
    Onnx__ModelProto *m = ob_model(13);
    Onnx__GraphProto *g = m->graph;
    const int64_t dims[1] = {4};
    ob_input(g, "x", T_FLOAT, 1, dims);
    unsigned char yes = 1;
    ob_init(g, "cond", T_BOOL, 0, NULL, &yes, 1);
    char prev[32] = "x";
    for (int k = 0; k < N_IF; k++) {
        char out[32], t[32], e[32], tout[32], eout[32];
        snprintf(out, sizeof out, k == N_IF - 1 ? "y" : "v%d", k);
        snprintf(t, sizeof t, "then%d", k);
        snprintf(e, sizeof e, "else%d", k);
        snprintf(tout, sizeof tout, "t%d", k);
        snprintf(eout, sizeof eout, "e%d", k);
        Onnx__NodeProto *n = ob_node(g, "If", "cond", out);
        ob_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g =
            branch(t, "Neg", prev, tout, 1);
        ob_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g =
            branch(e, "Identity", prev, eout, 1);
        snprintf(prev, sizeof prev, "%s", out);
    }
    ob_output(g, "y", T_FLOAT);
    size_t len;
    uint8_t *bytes = ob_finish(m, &len);
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, providers));
    assert_ok(minfer_session_create_from_memory(bytes, len, opt, &s));
    minfer_options_free(opt);
    free(bytes);
    return s;
}

static void check_run(minfer_session *s) {
    const int64_t dims[1] = {4};
    const float x[4] = {1, -2, 3, 0.5f}, want[4] = {-1, 2, -3, -0.5f};
    minfer_tensor *tx = NULL, *y = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 1, &tx));
    memcpy(minfer_tensor_data(tx), x, sizeof x);
    const char *names[] = {"x"};
    const minfer_tensor *ins[] = {tx};
    for (int run = 0; run < 2; run++) {
        assert_ok(minfer_session_run(s, names, ins, 1, NULL, &y, 1));
        assert_tensor_f32(y, dims, 1, want);
        minfer_tensor_free(y);
        y = NULL;
    }
    minfer_tensor_free(tx);
}

static void test_nested_ifs_open_each_provider_once(void **state) {
    (void)state;
    /* fakecount's own counters: the same library the core opens */
    const char *dir = getenv("MINFER_PROVIDER_PATH");
    assert_non_null(dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/libminfer_provider_fakecount.so", dir);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    int (*inits)(void) = (int (*)(void))dlsym(h, "fakecount_inits");
    int (*shutdowns)(void) = (int (*)(void))dlsym(h, "fakecount_shutdowns");
    assert_non_null(inits);
    assert_non_null(shutdowns);
    atomic_store(&opens_cpu, 0);
    atomic_store(&opens_fakecount, 0);

    /* cpu in the list: it is also the evaluator and the optimizer's */
    minfer_session *s = nested_ifs("fakecount,cpu");
    check_run(s);
    assert_int_equal(inits(), 1);
    assert_int_equal(atomic_load(&opens_fakecount), 1);
    assert_int_equal(atomic_load(&opens_cpu), 1);
    minfer_session_free(s);
    assert_int_equal(shutdowns(), 1);
    dlclose(h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_ifs_open_each_provider_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
