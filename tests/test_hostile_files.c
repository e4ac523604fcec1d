/*
 * Hostile models and files (issue 16, items 4, 5 and 9), through the public
 * API. The models are written here byte by byte in the protobuf wire format,
 * so that they can be what no exporter would write:
 *  1. thousands of nested If subgraphs (a stack overflow inside protobuf-c
 *     before the loader's depth check existed) are refused with
 *     MINFER_ERR_LIMIT naming the node, and exactly 32 levels are not;
 *  2. types and .pb sequences nested thousands deep are refused the same way;
 *  3. a FIFO as external data or as a .pb file fails at once (it blocked in
 *     open());
 *  4. files the library writes are whole or absent: a write error (a file
 *     size limit) is reported and leaves the old file, a device is never
 *     written, a symbolic link is replaced and its target left alone.
 * An alarm ends the program if any case blocks, so a regression fails
 * instead of hanging.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

/* ---- a tiny protobuf writer ---------------------------------------------- */

typedef struct pb {
    unsigned char *p;
    size_t n, cap;
} pb;

static void pb_raw(pb *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        assert_non_null(b->p);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void pb_varint(pb *b, uint64_t v) {
    unsigned char tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        tmp[n++] |= v ? 0x80 : 0;
    } while (v);
    pb_raw(b, tmp, n);
}

static void pb_int(pb *b, unsigned field, uint64_t v) {
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}

static void pb_bytes(pb *b, unsigned field, const void *data, size_t n) {
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    pb_raw(b, data, n);
}

static void pb_str(pb *b, unsigned field, const char *s) { pb_bytes(b, field, s, strlen(s)); }

/* Appends child as a length-delimited field of b and empties child. */
static void pb_msg(pb *b, unsigned field, pb *child) {
    pb_bytes(b, field, child->p, child->n);
    child->n = 0;
}

static void pb_free(pb *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* ModelProto{ir_version 8, opset 17, graph} from a serialized GraphProto. */
static void wrap_model(pb *model, pb *graph) {
    pb opset = {0};
    pb_int(model, 1, 8);
    pb_int(&opset, 2, 17);
    pb_msg(model, 8, &opset);
    pb_msg(model, 7, graph);
    pb_free(&opset);
}

/* A model whose main graph holds an If whose then_branch holds an If ...:
 * `graphs` GraphProtos in all, nested. The nodes are named if_1 (outermost)
 * to if_N. */
static void nested_if_model(int graphs, pb *model) {
    pb g = {0}, node = {0}, attr = {0};
    for (int level = graphs - 1; level >= 0; level--) {
        /* g holds the graph one level down (empty at the bottom). */
        if (level == graphs - 1) {
            pb_str(&g, 2, "leaf");
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "if_%d", level + 1);
        pb_str(&attr, 1, "then_branch");
        pb_int(&attr, 20, 5); /* GRAPH */
        pb_msg(&attr, 6, &g);
        pb_str(&node, 1, "c");
        pb_str(&node, 2, name);
        pb_str(&node, 3, name);
        pb_str(&node, 4, "If");
        pb_msg(&node, 5, &attr);
        pb_msg(&g, 1, &node);
    }
    wrap_model(model, &g);
    pb_free(&g);
    pb_free(&node);
    pb_free(&attr);
}

static minfer_status load_memory(const pb *model) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    minfer_status st = minfer_session_create_from_memory(model->p, model->n, opt, &s);
    minfer_session_free(s);
    minfer_options_free(opt);
    return st;
}

/* ---- 1, 2: nesting --------------------------------------------------------- */

static void deep_if_nesting_is_refused(void **state) {
    (void)state;
    pb model = {0};
    nested_if_model(3000, &model);
    assert_int_equal(load_memory(&model), MINFER_ERR_LIMIT);
    assert_error_mentions("subgraphs nest deeper than 32 at node 'if_32' (If) attribute "
                          "'then_branch'");
    pb_free(&model);
}

static void nesting_limit_is_exact(void **state) {
    (void)state;
    pb model = {0};
    nested_if_model(32, &model); /* the main graph and 31 subgraph levels */
    minfer_status st = load_memory(&model);
    if (st != MINFER_OK && strstr(minfer_last_error(), "nest deeper"))
        fail_msg("32 levels refused: %s", minfer_last_error());
    pb_free(&model);
    nested_if_model(33, &model);
    assert_int_equal(load_memory(&model), MINFER_ERR_LIMIT);
    assert_error_mentions("subgraphs nest deeper than 32 at node 'if_32'");
    pb_free(&model);
}

/* A graph input of type sequence(sequence(...(tensor))) `depth` deep. */
static void deep_type_nesting_is_refused(void **state) {
    (void)state;
    pb type = {0}, seq = {0}, tensor = {0}, vi = {0}, g = {0}, model = {0};
    pb_int(&tensor, 1, 1); /* elem_type float */
    pb_msg(&type, 1, &tensor);
    for (int i = 0; i < 5000; i++) {
        pb_msg(&seq, 1, &type); /* Sequence.elem_type */
        pb_msg(&type, 4, &seq); /* TypeProto.sequence_type */
    }
    pb_str(&vi, 1, "x");
    pb_msg(&vi, 2, &type);
    pb_msg(&g, 11, &vi);
    wrap_model(&model, &g);
    assert_int_equal(load_memory(&model), MINFER_ERR_LIMIT);
    assert_error_mentions("protobuf messages nest deeper than");
    pb_free(&type);
    pb_free(&seq);
    pb_free(&tensor);
    pb_free(&vi);
    pb_free(&g);
    pb_free(&model);
}

static char dir[] = "/tmp/minfer-hostile-XXXXXX";

static void path_in(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/%s", dir, name);
}

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* SequenceProto{elem_type SEQUENCE, sequence_values: SequenceProto{...}},
 * `depth` deep. Each level is its header, (elem_type, then the key and
 * length of the child), followed by the child: written outside in, with the
 * lengths computed inside out, so that it takes linear time. */
static void deep_sequence_file_is_refused(void **state) {
    (void)state;
    enum { DEPTH = 200000 };
    size_t *len = malloc((DEPTH + 1) * sizeof *len);
    pb bytes = {0}, tmp = {0};
    char path[512];
    assert_non_null(len);
    len[DEPTH] = 0;
    for (int i = DEPTH - 1; i >= 0; i--) {
        tmp.n = 0;
        pb_int(&tmp, 2, 3);
        pb_varint(&tmp, 5 << 3 | 2);
        pb_varint(&tmp, len[i + 1]);
        len[i] = tmp.n + len[i + 1];
    }
    for (int i = 0; i < DEPTH; i++) {
        pb_int(&bytes, 2, 3); /* elem_type SEQUENCE */
        pb_varint(&bytes, 5 << 3 | 2); /* sequence_values */
        pb_varint(&bytes, len[i + 1]);
    }
    assert_int_equal(bytes.n, len[0]);
    path_in(path, sizeof path, "deep_seq.pb");
    write_bytes(path, bytes.p, bytes.n);
    minfer_tensor *t = NULL;
    assert_int_equal(minfer_value_load_pb(path, MINFER_VALUE_SEQUENCE, &t, NULL),
                     MINFER_ERR_LIMIT);
    assert_null(t);
    assert_error_mentions("nest deeper than");
    free(len);
    pb_free(&bytes);
    pb_free(&tmp);
}

/* ---- 3: FIFOs -------------------------------------------------------------- */

/* Identity(W) -> Y, W an initializer of one float in external file `location`. */
static void external_model(const char *location, pb *model) {
    pb g = {0}, node = {0}, init = {0}, kv = {0}, out = {0};
    pb_str(&node, 1, "W");
    pb_str(&node, 2, "Y");
    pb_str(&node, 4, "Identity");
    pb_msg(&g, 1, &node);
    pb_int(&init, 1, 1);  /* dims [1] */
    pb_int(&init, 2, 1);  /* float */
    pb_str(&init, 8, "W");
    pb_str(&kv, 1, "location");
    pb_str(&kv, 2, location);
    pb_msg(&init, 13, &kv);
    pb_int(&init, 14, 1); /* EXTERNAL */
    pb_msg(&g, 5, &init);
    pb_str(&out, 1, "Y");
    pb_msg(&g, 12, &out);
    wrap_model(model, &g);
    pb_free(&g);
    pb_free(&node);
    pb_free(&init);
    pb_free(&kv);
    pb_free(&out);
}

static minfer_status create_session(const char *path) {
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    minfer_status st = minfer_session_create(path, opt, &s);
    minfer_session_free(s);
    minfer_options_free(opt);
    return st;
}

static void fifo_external_data_fails_at_once(void **state) {
    (void)state;
    char model_path[512], data_path[512];
    pb model = {0};
    external_model("w.bin", &model);
    path_in(model_path, sizeof model_path, "ext.onnx");
    path_in(data_path, sizeof data_path, "w.bin");
    write_bytes(model_path, model.p, model.n);
    float one = 1;
    write_bytes(data_path, &one, sizeof one);
    assert_ok(create_session(model_path)); /* the model is fine with a file */
    assert_int_equal(unlink(data_path), 0);
    assert_int_equal(mkfifo(data_path, 0600), 0);
    assert_int_equal(create_session(model_path), MINFER_ERR_IO);
    assert_error_mentions("is not a regular file (it is a FIFO)");
    assert_error_mentions("initializer 'W'");
    pb_free(&model);
}

static void fifo_pb_file_fails_at_once(void **state) {
    (void)state;
    char path[512];
    minfer_tensor *t = NULL;
    path_in(path, sizeof path, "input_0.pb");
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(minfer_tensor_load_pb(path, &t, NULL), MINFER_ERR_IO);
    assert_null(t);
    assert_error_mentions("is not a regular file (it is a FIFO)");
    assert_int_equal(minfer_value_load_pb(path, MINFER_VALUE_OPTIONAL, &t, NULL), MINFER_ERR_IO);
    assert_int_equal(minfer_tensor_load_pb("/dev/zero", &t, NULL), MINFER_ERR_IO);
    assert_error_mentions("character device");
}

/* ---- 4: writing ------------------------------------------------------------ */

static minfer_tensor *big_tensor(void) {
    int64_t dims[1] = {65536};
    minfer_tensor *t = NULL;
    assert_ok(minfer_tensor_create(MINFER_DTYPE_FLOAT, dims, 1, &t));
    memset(minfer_tensor_data(t), 0x3f, minfer_tensor_nbytes(t));
    return t;
}

static char *slurp(const char *path) {
    static char buf[64];
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Names in dir starting with '.': temporary files left behind. */
static int leftovers(void) {
    DIR *d = opendir(dir);
    int n = 0;
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static void write_error_leaves_the_old_file(void **state) {
    (void)state;
    char path[512];
    struct rlimit old, small;
    minfer_tensor *t = big_tensor();
    path_in(path, sizeof path, "out.pb");
    write_bytes(path, "old", 3);
    /* A file size limit makes writes fail with EFBIG (SIGXFSZ ignored). */
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small = old;
    small.rlim_cur = 4096;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    minfer_status st = minfer_tensor_save_pb(t, "x", path);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    assert_int_equal(st, MINFER_ERR_IO);
    assert_error_mentions("File too large");
    assert_string_equal(slurp(path), "old");
    assert_int_equal(leftovers(), 0);
    assert_ok(minfer_tensor_save_pb(t, "x", path)); /* and without the limit it works */
    minfer_tensor *back = NULL;
    assert_ok(minfer_tensor_load_pb(path, &back, NULL));
    assert_int_equal(minfer_tensor_nbytes(back), minfer_tensor_nbytes(t));
    assert_memory_equal(minfer_tensor_data(back), minfer_tensor_data(t), minfer_tensor_nbytes(t));
    assert_int_equal(leftovers(), 0);
    minfer_tensor_free(back);
    minfer_tensor_free(t);
}

static void devices_are_never_written(void **state) {
    (void)state;
    minfer_tensor *t = big_tensor();
    assert_int_equal(minfer_tensor_save_pb(t, "x", "/dev/full"), MINFER_ERR_IO);
    assert_error_mentions("character device");
    assert_int_equal(minfer_tensor_save_pb(t, "x", "/dev/null"), MINFER_ERR_IO);
    char link_path[512];
    path_in(link_path, sizeof link_path, "to_null");
    assert_int_equal(symlink("/dev/null", link_path), 0);
    assert_int_equal(minfer_tensor_save_pb(t, "x", link_path), MINFER_ERR_IO);
    assert_error_mentions("a link to a character device");
    minfer_tensor_free(t);
}

static void a_link_is_replaced_not_followed(void **state) {
    (void)state;
    char target[512], link_path[512];
    struct stat sb;
    minfer_tensor *t = big_tensor();
    path_in(target, sizeof target, "target");
    path_in(link_path, sizeof link_path, "link.pb");
    write_bytes(target, "keep", 4);
    assert_int_equal(symlink("target", link_path), 0);
    assert_ok(minfer_tensor_save_pb(t, "x", link_path));
    assert_string_equal(slurp(target), "keep");
    assert_int_equal(lstat(link_path, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    minfer_tensor_free(t);
}

/* The profile writer reports errors (it used to warn and go on). */
static void profile_write_errors_are_reported(void **state) {
    (void)state;
    char path[512], model_path[512];
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    pb model = {0};
    external_model("w2.bin", &model);
    path_in(model_path, sizeof model_path, "prof.onnx");
    write_bytes(model_path, model.p, model.n);
    path_in(path, sizeof path, "w2.bin");
    float one = 1;
    write_bytes(path, &one, sizeof one);
    path_in(path, sizeof path, "profile.json");
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_profiling(opt, path));
    assert_ok(minfer_session_create(model_path, opt, &s));
    assert_int_equal(minfer_session_write_profile(s, "/dev/full"), MINFER_ERR_IO);
    assert_error_mentions("profile");
    struct rlimit old, tiny;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    tiny = old;
    tiny.rlim_cur = 16;
    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &tiny), 0);
    minfer_status st = minfer_session_write_profile(s, path);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, SIG_DFL);
    assert_int_equal(st, MINFER_ERR_IO);
    assert_error_mentions("File too large");
    assert_int_equal(access(path, F_OK), -1); /* nothing half-written */
    assert_ok(minfer_session_write_profile(s, path));
    assert_int_equal(strncmp(slurp(path), "[\n{", 3), 0); /* ONNX Runtime's array of events */
    minfer_session_free(s);
    minfer_options_free(opt);
    assert_int_equal(leftovers(), 0);
    pb_free(&model);
}

static int setup(void **state) {
    (void)state;
    alarm(60); /* a FIFO that blocks would otherwise hang the suite */
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(deep_if_nesting_is_refused),
        cmocka_unit_test(nesting_limit_is_exact),
        cmocka_unit_test(deep_type_nesting_is_refused),
        cmocka_unit_test(deep_sequence_file_is_refused),
        cmocka_unit_test(fifo_external_data_fails_at_once),
        cmocka_unit_test(fifo_pb_file_fails_at_once),
        cmocka_unit_test(write_error_leaves_the_old_file),
        cmocka_unit_test(devices_are_never_written),
        cmocka_unit_test(a_link_is_replaced_not_followed),
        cmocka_unit_test(profile_write_errors_are_reported),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
