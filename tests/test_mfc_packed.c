/*
 * oneDNN's pre-packed weights in a compiled model (docs/format.md, PACK):
 * squeezenet1_1 compiled for onednn,cpu holds a PACK section whose blobs a
 * session from the file uses in place (pointers into the mapping) with the
 * ONNX session's outputs bit for bit; tags forged to another CPU ISA make
 * the provider pack again, say why once at the info level, and give the
 * same outputs; blobs forged to NaN, or plain weights changed under an
 * intact PACK section (checksums made right again), no longer match the
 * pair's checksums (w=, pack=): the reader leaves the blobs out, onednn
 * packs from the plain weights and agrees with cpu on the file; a truncated or corrupted PACK section, or one whose index
 * names a wrong node, input, string, blob extent or count, is refused with
 * a message naming the section; random damage to the index (checksums made
 * right again) is refused or loaded and run cleanly (ASan/UBSan watch).
 * Skipped (exit 77) in a build without the oneDNN provider; in one with it,
 * a oneDNN that does not load fails setup.
 *   test_mfc_packed MODELS_DIR
 */
#include <math.h>
#include <stddef.h>
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

static minfer_options *dnn_options(minfer_log_fn log, void *user) {
    minfer_options *opt = NULL;
    assert_ok(minfer_options_create(&opt));
    assert_ok(minfer_options_set_providers_str(opt, "onednn,cpu"));
    assert_ok(minfer_options_set_threads(opt, 1));
    assert_ok(minfer_options_set_log_level(opt, log ? MINFER_LOG_VERBOSE : MINFER_LOG_ERROR));
    if (log)
        assert_ok(minfer_options_set_log_callback(opt, log, user));
    return opt;
}

static int setup(void **state) {
    (void)state;
    snprintf(onnx_path, sizeof onnx_path, "%s/squeezenet1_1/model.onnx", models_dir);
    snprintf(mfc_path, sizeof mfc_path, "/tmp/test_mfc_packed_%ld.mfc", (long)getpid());
    minfer_options *opt = NULL;
    minfer_session *s = NULL;
    if (minfer_options_create(&opt) != MINFER_OK ||
        minfer_options_set_providers_str(opt, "onednn") != MINFER_OK ||
        minfer_options_set_log_level(opt, MINFER_LOG_ERROR) != MINFER_OK)
        return -1;
    /* the build has oneDNN (main): a session on it alone must work */
    minfer_status st = minfer_session_create(onnx_path, opt, &s);
    minfer_session_free(s);
    minfer_options_free(opt);
    if (st != MINFER_OK) {
        fprintf(stderr, "squeezenet1_1 on onednn alone: %s\n", minfer_last_error());
        return -1;
    }
    opt = dnn_options(NULL, NULL);
    st = minfer_compile_model(onnx_path, mfc_path, opt);
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
    size_t got = file ? fread(file, 1, file_size, f) : 0;
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
        dims[d] = info.dims[d] < 0 ? 1 : info.dims[d];
    assert_ok(minfer_tensor_create(info.dtype, dims, (size_t)info.rank, &in));
    float *x = minfer_tensor_data(in);
    for (int64_t i = 0; i < minfer_tensor_numel(in); i++)
        x[i] = (float)((i * 7919) % 2001) / 1000.0f - 1.0f;
    const char *name = info.name;
    assert_ok(minfer_session_run(s, &name, (const minfer_tensor *const *)&in, 1, NULL, &out, 1));
    minfer_tensor_free(in);
    return out;
}

/* The ONNX session's output, computed once. */
static minfer_tensor *reference(void) {
    static minfer_tensor *ref;
    if (!ref) {
        minfer_options *opt = dnn_options(NULL, NULL);
        minfer_session *s = NULL;
        assert_ok(minfer_session_create(onnx_path, opt, &s));
        ref = run_once(s);
        minfer_session_free(s);
        minfer_options_free(opt);
    }
    return ref;
}

/* Counts the provider's messages about packed weights. */
typedef struct seen {
    int used, not_used, unpaired;
    char first[512], host[512];
} seen;

static void count_log(void *user, minfer_log_level level, const char *msg) {
    seen *c = user;
    if (strstr(msg, "used in place from the compiled model"))
        c->used++;
    if (strstr(msg, "section PACK: ") && strstr(msg, "packed weights not used")) {
        assert_int_equal(level, MINFER_LOG_INFO);
        if (!c->unpaired++)
            snprintf(c->host, sizeof c->host, "%s", msg);
    }
    if (strstr(msg, "packed weights are not used")) {
        assert_int_equal(level, MINFER_LOG_INFO);
        if (!c->not_used++)
            snprintf(c->first, sizeof c->first, "%s", msg);
    }
}

/* A session from bytes b[0..n) on onednn,cpu, run once: its output must be
 * the ONNX session's. */
static void run_same(const uint8_t *b, size_t n, seen *c) {
    minfer_options *opt = dnn_options(count_log, c);
    minfer_session *s = NULL;
    assert_ok(minfer_session_create_from_memory(b, n, opt, &s));
    minfer_tensor *t = run_once(s), *ref = reference();
    assert_int_equal(minfer_tensor_nbytes(t), minfer_tensor_nbytes(ref));
    assert_memory_equal(minfer_tensor_data(t), minfer_tensor_data(ref), minfer_tensor_nbytes(t));
    minfer_tensor_free(t);
    minfer_session_free(s);
    minfer_options_free(opt);
}

static uint8_t *copy_file(void) {
    uint8_t *b = malloc(file_size);
    assert_non_null(b);
    memcpy(b, file, file_size);
    return b;
}

static minfer_status load_bytes(const uint8_t *b, size_t n) {
    minfer_options *opt = dnn_options(NULL, NULL);
    minfer_session *s = NULL;
    minfer_status st = minfer_session_create_from_memory(b, n, opt, &s);
    if (st == MINFER_OK)
        minfer_tensor_free(run_once(s));
    minfer_session_free(s);
    minfer_options_free(opt);
    return st;
}

/* The PACK section's offset in b, and its blob count. */
static size_t pack_at(uint8_t *b, uint32_t *count) {
    const uint8_t *e = mfc_find(b, file_size, "PACK");
    assert_non_null(e);
    size_t off = (size_t)mfc_le64(e + 8);
    *count = mfc_le32(b + off);
    return off;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void test_listed(void **state) {
    (void)state;
    minfer_compiled_info info;
    assert_ok(minfer_compiled_info_read(mfc_path, &info));
    assert_true(info.n_packed > 0);
    assert_true(info.packed_bytes > 0);
    assert_non_null(strstr(info.packed_tag, "onednn: onednn="));
    assert_non_null(strstr(info.packed_tag, " isa="));
    assert_non_null(strstr(info.packed_tag, " xxh3="));
    assert_non_null(strstr(info.packed_tag, " w="));
    assert_non_null(strstr(info.packed_tag, " pack="));
    const uint8_t *e = mfc_find(file, file_size, "PACK");
    assert_non_null(e);
    assert_int_equal(mfc_le32(e + 4), 1); /* optional: older readers skip it */
    assert_int_equal(mfc_le64(e + 8) % 64, 0);
    uint32_t n;
    assert_int_equal(pack_at(file, &n), (size_t)mfc_le64(e + 8));
    assert_int_equal(n, info.n_packed);
}

/* A program built against the header before the PACK fields calls the
 * plain symbol with the older, shorter struct: nothing past weight_bytes is
 * written. Through today's header the name passes the whole struct. */
static void test_older_struct(void **state) {
    (void)state;
    minfer_compiled_info info;
    memset(&info, 0xab, sizeof info);
    assert_ok((minfer_compiled_info_read)(mfc_path, &info));
    assert_true(info.n_weights > 0);
    const uint8_t *tail = (const uint8_t *)&info + offsetof(minfer_compiled_info, n_packed);
    for (size_t i = 0; i < sizeof info - offsetof(minfer_compiled_info, n_packed); i++)
        assert_int_equal(tail[i], 0xab);
    memset(&info, 0xab, sizeof info);
    assert_ok(minfer_compiled_info_read_sized(mfc_path, &info, sizeof info + 64));
    assert_true(info.n_packed > 0);
}

/* The blobs are used where they lie in the file's mapping, and give the
 * ONNX session's outputs. */
static void test_used_in_place(void **state) {
    (void)state;
    seen c = {0};
    minfer_options *opt = dnn_options(count_log, &c);
    minfer_session *s = NULL;
    assert_ok(minfer_session_create(mfc_path, opt, &s));
    const mf_graph *g = s->g;
    assert_non_null(g->packs);
    for (size_t i = 0; i < g->n_nodes; i++) {
        size_t n = 0;
        const minfer_packed_const *pc = mf_mfc_packed_for(g, i, "onednn", &n);
        for (size_t k = 0; k < n; k++) {
            const uint8_t *p = pc[k].data, *base = g->blob;
            assert_true(p >= base && p + pc[k].bytes <= base + g->blob_size);
            assert_int_equal((uintptr_t)p % 64, 0);
            assert_true(pc[k].input < g->nodes[i].n_inputs);
        }
        assert_int_equal(mf_mfc_packed_for(g, i, "cpu", &n), NULL);
        assert_int_equal(n, 0);
    }
    minfer_tensor *t = run_once(s), *ref = reference();
    assert_memory_equal(minfer_tensor_data(t), minfer_tensor_data(ref), minfer_tensor_nbytes(t));
    minfer_tensor_free(t);
    minfer_compiled_info info;
    assert_ok(minfer_compiled_info_read(mfc_path, &info));
    assert_int_equal(c.used, (int)info.n_packed);
    assert_int_equal(c.not_used, 0);
    minfer_session_free(s);
    minfer_options_free(opt);
    /* From memory too. */
    memset(&c, 0, sizeof c);
    run_same(file, file_size, &c);
    assert_int_equal(c.used, (int)info.n_packed);
}

/* Every tag's ISA field rewritten ("isa=avx..." -> "isa=qvx...", as a file
 * compiled on another CPU would say): packed again, said once, same
 * outputs. */
static void test_foreign_tag(void **state) {
    (void)state;
    uint8_t *b = copy_file();
    const uint8_t *e = mfc_find(b, file_size, "STRS");
    size_t off = (size_t)mfc_le64(e + 8), len = (size_t)mfc_le64(e + 16);
    int forged = 0;
    for (size_t i = off; i + 5 <= off + len; i++)
        if (memcmp(b + i, "isa=", 4) == 0) {
            b[i + 4] = 'q';
            forged++;
        }
    assert_true(forged > 0);
    mfc_fix_checksums(b, file_size, 0);
    seen c = {0};
    run_same(b, file_size, &c);
    assert_int_equal(c.used, 0);
    assert_int_equal(c.not_used, 1);
    assert_non_null(strstr(c.first, "packed for the CPU ISA q"));
    free(b);
}

/* A file written before the layout hash was XXH3 ("md=" and an FNV-1a
 * hash where "xxh3=" is: forged here in place, same length, as "x md="):
 * it loads and runs, packed again, said once as an older minfer's file. */
static void test_older_tag(void **state) {
    (void)state;
    uint8_t *b = copy_file();
    const uint8_t *e = mfc_find(b, file_size, "STRS");
    size_t off = (size_t)mfc_le64(e + 8), len = (size_t)mfc_le64(e + 16);
    int forged = 0;
    for (size_t i = off; i + 5 <= off + len; i++)
        if (memcmp(b + i, "xxh3=", 5) == 0) {
            memcpy(b + i, "x md=", 5);
            forged++;
        }
    assert_true(forged > 0);
    mfc_fix_checksums(b, file_size, 0);
    seen c = {0};
    run_same(b, file_size, &c);
    assert_int_equal(c.used, 0);
    assert_int_equal(c.not_used, 1);
    assert_non_null(strstr(c.first, "an older minfer wrote them"));
    free(b);
}

/* A session on `providers` from bytes b[0..n), run once. */
static minfer_tensor *run_bytes(const uint8_t *b, size_t n, const char *providers, seen *c) {
    minfer_options *opt = dnn_options(c ? count_log : NULL, c);
    assert_ok(minfer_options_set_providers_str(opt, providers));
    minfer_session *s = NULL;
    assert_ok(minfer_session_create_from_memory(b, n, opt, &s));
    minfer_tensor *t = run_once(s);
    minfer_session_free(s);
    minfer_options_free(opt);
    return t;
}

/* Outputs a and b agree within what two providers' float sums differ by,
 * and are finite. */
static void assert_close(const minfer_tensor *a, const minfer_tensor *b) {
    assert_int_equal(minfer_tensor_nbytes(a), minfer_tensor_nbytes(b));
    const float *x = minfer_tensor_data((minfer_tensor *)a), *y = minfer_tensor_data((minfer_tensor *)b);
    for (int64_t i = 0; i < minfer_tensor_numel(a); i++) {
        assert_true(isfinite(x[i]) && isfinite(y[i]));
        if (fabsf(x[i] - y[i]) > 1e-3f + 1e-3f * fabsf(y[i]))
            fail_msg("element %lld: %g against %g", (long long)i, x[i], y[i]);
    }
}

/* Where the file's packed blobs (packed != 0) or the plain constants they
 * were packed from (packed == 0) lie: up to max (offset, bytes) pairs. */
static size_t pack_ranges(int packed, size_t *at, size_t *len, size_t max) {
    minfer_options *opt = dnn_options(NULL, NULL);
    minfer_session *s = NULL;
    assert_ok(minfer_session_create_from_memory(file, file_size, opt, &s));
    const mf_graph *g = s->g;
    const uint8_t *base = g->blob;
    size_t n_out = 0;
    for (size_t i = 0; i < g->n_nodes && n_out < max; i++) {
        size_t n = 0;
        const minfer_packed_const *pc = mf_mfc_packed_for(g, i, "onednn", &n);
        for (size_t k = 0; k < n && n_out < max; k++) {
            const minfer_tensor *t = g->values[g->nodes[i].inputs[pc[k].input]].initializer;
            const uint8_t *p = packed ? pc[k].data : minfer_tensor_data((minfer_tensor *)t);
            size_t bytes = packed ? pc[k].bytes : minfer_tensor_nbytes(t);
            assert_true(p >= base && p + bytes <= base + g->blob_size);
            at[n_out] = (size_t)(p - base);
            len[n_out++] = bytes;
        }
    }
    minfer_session_free(s);
    minfer_options_free(opt);
    assert_true(n_out > 0);
    return n_out;
}

/* The issue 39 case: every packed blob overwritten with NaNs, checksums
 * made right again. The blobs' pack= checksums no longer match: the reader
 * leaves them out and says so once, onednn packs from the plain weights and
 * gives the ONNX
 * session's output bit for bit, and cpu's within float rounding (before,
 * cpu gave finite values and onednn NaN from the same file). */
static void test_forged_blob(void **state) {
    (void)state;
    size_t at[256], len[256], n = pack_ranges(1, at, len, 256);
    uint8_t *b = copy_file();
    const uint32_t nan_bits = 0x7fc00000u;
    for (size_t k = 0; k < n; k++)
        for (size_t i = 0; i + 4 <= len[k]; i += 4)
            memcpy(b + at[k] + i, &nan_bits, 4);
    mfc_fix_checksums(b, file_size, 0);
    seen c = {0};
    run_same(b, file_size, &c);
    assert_int_equal(c.used, 0);
    assert_int_equal(c.not_used, 0);
    assert_int_equal(c.unpaired, 1);
    assert_non_null(strstr(c.host, "its bytes are not the ones packed from the plain weights"));
    minfer_tensor *dnn = run_bytes(b, file_size, "onednn,cpu", NULL),
                  *cpu = run_bytes(b, file_size, "cpu", NULL);
    assert_close(dnn, cpu);
    minfer_tensor_free(dnn);
    minfer_tensor_free(cpu);
    free(b);
}

/* The plain weights changed under an intact PACK section (every float of
 * the packed constants negated, as a spliced or edited file would hold):
 * the w= checksums no longer match, the blobs are left out, onednn packs
 * from the file's plain
 * weights, and onednn and cpu agree on the changed model. */
static void test_forged_plain(void **state) {
    (void)state;
    size_t at[256], len[256], n = pack_ranges(0, at, len, 256);
    uint8_t *b = copy_file();
    for (size_t k = 0; k < n; k++)
        for (size_t i = 3; i < len[k]; i += 4)
            b[at[k] + i] ^= 0x80;
    mfc_fix_checksums(b, file_size, 0);
    seen c = {0};
    minfer_tensor *dnn = run_bytes(b, file_size, "onednn,cpu", &c),
                  *cpu = run_bytes(b, file_size, "cpu", NULL);
    assert_int_equal(c.used, 0);
    assert_int_equal(c.not_used, 0);
    assert_int_equal(c.unpaired, 1);
    assert_non_null(strstr(c.host, "packed from other plain weights than the file holds"));
    assert_close(dnn, cpu);
    /* and it is another model than the ONNX file's */
    minfer_tensor *ref = reference();
    assert_memory_not_equal(minfer_tensor_data(dnn), minfer_tensor_data(ref),
                            minfer_tensor_nbytes(ref));
    minfer_tensor_free(dnn);
    minfer_tensor_free(cpu);
    free(b);
}

/* A tag without the pair's checksums (a file from before they were
 * written: " w=" renamed " v=" in place): packed again, said once. */
static void test_no_pair_tag(void **state) {
    (void)state;
    uint8_t *b = copy_file();
    const uint8_t *e = mfc_find(b, file_size, "STRS");
    size_t off = (size_t)mfc_le64(e + 8), len = (size_t)mfc_le64(e + 16);
    int forged = 0;
    for (size_t i = off; i + 3 <= off + len; i++)
        if (memcmp(b + i, " w=", 3) == 0) {
            b[i + 1] = 'v';
            forged++;
        }
    assert_true(forged > 0);
    mfc_fix_checksums(b, file_size, 0);
    seen c = {0};
    run_same(b, file_size, &c);
    assert_int_equal(c.used, 0);
    assert_int_equal(c.not_used, 0);
    assert_int_equal(c.unpaired, 1);
    assert_non_null(strstr(c.host, "no checksums of the pair (an older minfer wrote it)"));
    free(b);
}

static void test_truncated(void **state) {
    (void)state;
    uint32_t n;
    size_t off = pack_at(file, &n);
    size_t cuts[] = {off + 2, off + 100, file_size - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        assert_int_not_equal(load_bytes(file, cuts[i]), MINFER_OK);
        assert_error_mentions("section PACK");
        assert_error_mentions("truncated");
    }
}

static void test_checksum(void **state) {
    (void)state;
    uint8_t *b = copy_file();
    b[file_size - 100] ^= 0x08; /* in the last blob */
    assert_int_equal(load_bytes(b, file_size), MINFER_ERR_MODEL);
    assert_error_mentions("section PACK: checksum mismatch");
    free(b);
}

/* Index fields changed, checksums made right again: each refused by the
 * reader's own checks, naming the section. */
static void test_index(void **state) {
    (void)state;
    uint32_t n;
    size_t off = pack_at(file, &n);
    uint8_t *e0 = NULL;
    struct {
        size_t at; /* from entry 0 */
        int wide;
        uint64_t value;
        const char *says;
    } cases[] = {
        {(size_t)-4, 0, 0xffffffffu, "count"},
        {0, 0, 0x00ffffffu, "names node"},
        {4, 0, 0xfffffff0u, "string index"},
        {8, 0, 77, "is not the constant"},
        {24, 1, 0, "aligned extent"},
        {24, 1, 8, "aligned extent"},
        {32, 1, (uint64_t)1 << 40, "aligned extent"},
        {32, 1, 0, "aligned extent"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *b = copy_file();
        e0 = b + off + 4;
        if (cases[i].wide) {
            uint64_t v = cases[i].value;
            if (cases[i].at == 24 && v == 8)
                v += mfc_le64(e0 + 24); /* a blob moved off its alignment */
            mfc_put64(e0 + cases[i].at, v);
        } else {
            put32(e0 + cases[i].at, (uint32_t)cases[i].value);
        }
        mfc_fix_checksums(b, file_size, 0);
        if (load_bytes(b, file_size) == MINFER_OK)
            fail_msg("case %zu (%s): loaded", i, cases[i].says);
        assert_error_mentions("section PACK");
        assert_error_mentions(cases[i].says);
        free(b);
    }
    /* A second PACK section (the weights section renamed: aligned, so the
     * second is what the reader refuses). */
    uint8_t *b = copy_file();
    uint8_t *wgts = mfc_find(b, file_size, "WGTS");
    memcpy(wgts, "PACK", 4);
    mfc_fix_checksums(b, file_size, 0);
    assert_int_not_equal(load_bytes(b, file_size), MINFER_OK);
    assert_error_mentions("section PACK: listed twice");
    free(b);
}

/* Random bytes of the index changed, checksums right again: refused with a
 * message, or loaded and run (a blob moved to another place of the
 * section runs with wrong numbers, never outside the mapping). */
static void test_mutations(void **state) {
    (void)state;
    uint32_t n;
    size_t off = pack_at(file, &n), len = 4 + (size_t)n * MFC_PACK_ENTRY;
    uint64_t rng = 777;
    int cases = getenv("MINFER_TEST_QUICK") ? 20 : 80, refused = 0, loaded = 0;
    for (int k = 0; k < cases; k++) {
        uint8_t *b = copy_file();
        int m = 1 + (int)(rng % 3);
        for (int j = 0; j < m; j++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = off + (size_t)((rng >> 33) % len);
            b[at] = (rng >> 20) & 1 ? (uint8_t)(b[at] ^ (1u << ((rng >> 24) % 8)))
                                    : (uint8_t)(rng >> 40);
        }
        mfc_fix_checksums(b, file_size, 0);
        if (load_bytes(b, file_size) == MINFER_OK) {
            loaded++;
        } else {
            assert_error_mentions("section PACK");
            refused++;
        }
        free(b);
    }
    printf("PACK index mutations: %d refused, %d loaded\n", refused, loaded);
    assert_true(refused > 0);
}

int main(int argc, char **argv) {
    if (!HAVE_ONEDNN) { /* ctest: skipped (SKIP_RETURN_CODE) */
        printf("skipped: this build has no oneDNN provider\n");
        return 77;
    }
    if (argc > 1)
        models_dir = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_listed),   cmocka_unit_test(test_used_in_place),
        cmocka_unit_test(test_foreign_tag),
        cmocka_unit_test(test_older_tag), cmocka_unit_test(test_forged_blob),
        cmocka_unit_test(test_forged_plain), cmocka_unit_test(test_no_pair_tag),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_checksum), cmocka_unit_test(test_index),
        cmocka_unit_test(test_mutations), cmocka_unit_test(test_older_struct),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
