/*
 * Compiled model files (docs/format.md): a model compiled here loads from a
 * file and from memory, runs with the ONNX session's outputs bit for bit,
 * keeps its weights in the file's mapping; and files changed on purpose
 * are refused with a message naming the part and the reason: every
 * truncation point class, a flipped byte in the header, the table and each
 * section (checksums), a future version, the other byte order, unknown
 * flags and sections, and (with checksums recomputed so the decoder sees
 * them) bytes of the graph section overwritten at random.
 *   test_mfc MODELS_DIR
 */
#include <stdlib.h>
#include <unistd.h>

#include "test_util.h"
#include "mfc_util.h"
#include "minfer/compile.h"
#include "load/mfc.h"
#include "session/session.h"

static const char *models_dir = "../shared/models";
static char onnx_path[4096], mfc_path[4096];
static uint8_t *file;
static size_t file_size;

static minfer_options *cpu_options(void) {
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "cpu"));
    assert_ok(minfer_options_set_threads(opt, 1));
    assert_ok(minfer_options_set_log_level(opt, MINFER_LOG_ERROR));
    return opt;
}

static int setup(void **state) {
    (void)state;
    snprintf(onnx_path, sizeof onnx_path, "%s/squeezenet1_1/model.onnx", models_dir);
    snprintf(mfc_path, sizeof mfc_path, "/tmp/test_mfc_%ld.mfc", (long)getpid());
    minfer_options *opt = cpu_options();
    minfer_status st = minfer_compile_model(onnx_path, mfc_path, opt);
    minfer_options_free(opt);
    if (st != MINFER_OK) {
        fprintf(stderr, "compile %s: %s\n", onnx_path, minfer_last_error());
        return -1;
    }
    FILE *f = fopen(mfc_path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    file_size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    file = malloc(file_size);
    size_t got = fread(file, 1, file_size, f);
    fclose(f);
    return got == file_size ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    unlink(mfc_path);
    free(file);
    return 0;
}

/* One run on a fixed input; the caller frees the output. */
static minfer_tensor *run_once(minfer_session *s) {
    minfer_value_info info;
    assert_ok(minfer_session_input_info(s, 0, &info));
    minfer_tensor *in = NULL, *out = NULL;
    int64_t dims[MINFER_MAX_RANK];
    for (int32_t d = 0; d < info.rank; d++)
        dims[d] = info.dims[d] < 0 ? 1 : info.dims[d]; /* the symbolic batch */
    assert_ok(minfer_tensor_create(info.dtype, dims, (size_t)info.rank, &in));
    float *x = minfer_tensor_data(in);
    for (int64_t i = 0; i < minfer_tensor_numel(in); i++)
        x[i] = (float)((i * 7919) % 2001) / 1000.0f - 1.0f;
    const char *name = info.name;
    assert_ok(minfer_session_run(s, &name, (const minfer_tensor *const *)&in, 1, NULL, &out, 1));
    minfer_tensor_free(in);
    return out;
}

static void test_same_outputs(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *a = NULL, *b = NULL, *c = NULL;
    assert_ok(minfer_session_create(onnx_path, opt, &a));
    assert_ok(minfer_session_create(mfc_path, opt, &b));
    assert_ok(minfer_session_create_from_memory(file, file_size, opt, &c));
    minfer_tensor *ta = run_once(a), *tb = run_once(b), *tc = run_once(c);
    assert_int_equal(minfer_tensor_nbytes(ta), minfer_tensor_nbytes(tb));
    assert_memory_equal(minfer_tensor_data(ta), minfer_tensor_data(tb), minfer_tensor_nbytes(ta));
    assert_memory_equal(minfer_tensor_data(ta), minfer_tensor_data(tc), minfer_tensor_nbytes(ta));
    assert_int_equal(minfer_session_node_count(a), minfer_session_node_count(b));
    minfer_tensor_free(ta);
    minfer_tensor_free(tb);
    minfer_tensor_free(tc);
    minfer_session_free(a);
    minfer_session_free(b);
    minfer_session_free(c);
    minfer_options_free(opt);
}

/* The weights are the file's bytes in place: each numeric initializer
 * points into the mapping the graph holds, 64-byte aligned. */
static void test_weights_mapped(void **state) {
    (void)state;
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    assert_ok(minfer_session_create(mfc_path, opt, &s));
    const mf_graph *g = s->g;
    assert_non_null(g->blob);
    assert_true(g->blob_release == mf_mfc_unmap);
    assert_int_equal(g->blob_size, file_size);
    assert_int_equal(g->compiled_level, 4); /* level 3, + 1 */
    size_t n = 0;
    for (size_t i = 0; i < g->n_values; i++) {
        const minfer_tensor *t = g->values[i].initializer;
        if (!t || t->view.dtype == MINFER_DTYPE_STRING)
            continue;
        const uint8_t *p = t->view.data, *base = g->blob;
        assert_true(p >= base && p + t->view.nbytes <= base + g->blob_size);
        assert_int_equal((uintptr_t)p % 64, 0);
        assert_int_equal(t->owns_data, 0);
        n++;
    }
    assert_true(n > 10);
    minfer_session_free(s);
    minfer_options_free(opt);
}

static minfer_status load_bytes(const uint8_t *b, size_t n) {
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    minfer_status st = minfer_session_create_from_memory(n ? (const void *)b : "", n, opt, &s);
    minfer_session_free(s);
    minfer_options_free(opt);
    return st;
}

static uint8_t *copy_file(void) {
    uint8_t *b = malloc(file_size);
    assert_non_null(b);
    memcpy(b, file, file_size);
    return b;
}

static void test_truncated(void **state) {
    (void)state;
    const uint8_t *strs = mfc_find(file, file_size, "STRS");
    const uint8_t *grph = mfc_find(file, file_size, "GRPH");
    const uint8_t *wgts = mfc_find(file, file_size, "WGTS");
    assert_non_null(strs);
    assert_non_null(grph);
    assert_non_null(wgts);
    struct {
        size_t len;
        const char *says;
    } cases[] = {
        {8, "header: truncated: 8 bytes"}, /* the magic alone: was "no magic" */
        {16, "header: truncated"},
        {87, "header: truncated"},
        {100, "section table"},
        {(size_t)mfc_le64(strs + 8) + 10, "section STRS"},
        {(size_t)mfc_le64(grph + 8) + 100, "section GRPH"},
        {(size_t)mfc_le64(wgts + 8) + 1000, "section WGTS"},
        {file_size - 1, "section WGTS"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        minfer_status st = load_bytes(file, cases[i].len);
        if (st == MINFER_OK)
            fail_msg("truncated to %zu bytes: loaded", cases[i].len);
        assert_error_mentions(cases[i].says);
        if (cases[i].len > 100)
            assert_error_mentions("truncated");
    }
    /* And through the file path (the mapping). */
    char path[4200];
    snprintf(path, sizeof path, "%s.cut", mfc_path);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(file, 1, file_size / 2, f), file_size / 2);
    fclose(f);
    minfer_options *opt = cpu_options();
    minfer_session *s = NULL;
    assert_int_equal(minfer_session_create(path, opt, &s), MINFER_ERR_MODEL);
    assert_error_mentions("truncated");
    assert_error_mentions(path);
    unlink(path);
    minfer_options_free(opt);
}

static void test_checksums(void **state) {
    (void)state;
    const char *names[] = {"STRS", "META", "GRPH", "WGTS"};
    for (size_t i = 0; i < 4; i++) {
        uint8_t *b = copy_file();
        const uint8_t *e = mfc_find(b, file_size, names[i]);
        assert_non_null(e);
        size_t at = (size_t)(mfc_le64(e + 8) + mfc_le64(e + 16) / 2);
        b[at] ^= 0x10;
        assert_int_equal(load_bytes(b, file_size), MINFER_ERR_MODEL);
        char want[64];
        snprintf(want, sizeof want, "section %s: checksum mismatch", names[i]);
        assert_error_mentions(want);
        free(b);
    }
    uint8_t *b = copy_file();
    b[50] ^= 1; /* the minfer version string */
    assert_int_equal(load_bytes(b, file_size), MINFER_ERR_MODEL);
    assert_error_mentions("header: checksum mismatch");
    b[50] ^= 1;
    b[mfc_le64(b + 32) + 9] ^= 1; /* a section offset in the table */
    assert_int_equal(load_bytes(b, file_size), MINFER_ERR_MODEL);
    assert_error_mentions("section table: checksum mismatch");
    free(b);
}

static void test_version_endian_flags(void **state) {
    (void)state;
    uint8_t *b = copy_file();
    b[8] = 2; /* format version 2 */
    mfc_fix_checksums(b, file_size, 0);
    assert_int_equal(load_bytes(b, file_size), MINFER_ERR_UNSUPPORTED);
    assert_error_mentions("format version 2");
    free(b);

    b = copy_file();
    const uint8_t be[4] = {1, 2, 3, 4};
    memcpy(b + 12, be, 4);
    mfc_fix_checksums(b, file_size, 0);
    assert_int_equal(load_bytes(b, file_size), MINFER_ERR_MODEL);
    assert_error_mentions("big-endian");
    free(b);

    b = copy_file();
    b[20] = 0x80; /* an unknown flag */
    mfc_fix_checksums(b, file_size, 0);
    assert_int_equal(load_bytes(b, file_size), MINFER_ERR_UNSUPPORTED);
    assert_error_mentions("flags");
    free(b);

    /* An unknown section: refused unless marked optional. */
    b = copy_file();
    uint8_t *e = mfc_find(b, file_size, "META");
    memcpy(e, "XTRA", 4);
    mfc_fix_checksums(b, file_size, 0);
    assert_int_equal(load_bytes(b, file_size), MINFER_ERR_UNSUPPORTED);
    assert_error_mentions("section XTRA: unknown");
    e[4] = 1; /* MFC_SEC_OPTIONAL: skipped, and then META is missing */
    mfc_fix_checksums(b, file_size, 0);
    assert_int_equal(load_bytes(b, file_size), MINFER_ERR_MODEL);
    assert_error_mentions("section META: missing");
    free(b);

    b = copy_file();
    b[0] ^= 0xff;
    assert_int_not_equal(load_bytes(b, file_size), MINFER_OK); /* no magic: read as ONNX */
    free(b);
}

/* Bytes of GRPH, META and STRS overwritten at random with the checksums
 * made right again: the decoder's own checks must refuse or accept each
 * one cleanly (ASan/UBSan watch in the sanitizer build). */
static void test_decoder_mutations(void **state) {
    (void)state;
    const char *names[] = {"GRPH", "STRS", "META"};
    uint64_t rng = 12345;
    size_t refused = 0, loaded = 0;
    int cases = getenv("MINFER_TEST_QUICK") ? 150 : 600;
    for (int k = 0; k < cases; k++) {
        uint8_t *b = copy_file();
        const uint8_t *e = mfc_find(b, file_size, names[k % 3]);
        size_t off = (size_t)mfc_le64(e + 8), len = (size_t)mfc_le64(e + 16);
        int n = 1 + (int)(rng % 4);
        for (int j = 0; j < n; j++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = off + (size_t)((rng >> 33) % len);
            static const uint8_t vals[] = {0x00, 0xff, 0x7f, 0x80, 0x01, 0x40};
            b[at] = (rng >> 20) & 1 ? vals[(rng >> 24) % sizeof vals] : (uint8_t)(rng >> 40);
        }
        mfc_fix_checksums(b, file_size, 0);
        minfer_status st = load_bytes(b, file_size);
        if (st == MINFER_OK) {
            loaded++;
        } else {
            const char *msg = minfer_last_error();
            assert_true(msg && msg[0]);
            refused++;
        }
        free(b);
    }
    printf("decoder mutations: %zu refused, %zu loaded\n", refused, loaded);
    assert_true(refused > 0);
}

int main(int argc, char **argv) {
    if (argc > 1)
        models_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_outputs),       cmocka_unit_test(test_weights_mapped),
        cmocka_unit_test(test_truncated),          cmocka_unit_test(test_checksums),
        cmocka_unit_test(test_version_endian_flags), cmocka_unit_test(test_decoder_mutations),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
