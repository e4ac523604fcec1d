/*
 * String and text kernels: Cast to and from string (called by Cast's
 * compute in shape_ops.c), StringNormalizer and TfIdfVectorizer.
 *
 * String tensors hold char * elements (include/minfer/provider.h): the host
 * hands string outputs over with every element NULL, a kernel stores
 * strings it allocated with malloc, and the host frees them when the value
 * dies, also after a kernel failed half way. A NULL input element reads as
 * "".
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

static const char *str_at(const minfer_tensor_view *v, size_t i) {
    const char *s = ((char *const *)cpu_data(v))[i];
    return s ? s : "";
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- Cast to and from string ---------------------------------------------- */

/* 1 if text, read back in dtype, gives the same value as v (v is exactly
 * representable in dtype). Reading float through strtof, not strtod then
 * a narrowing, avoids rounding twice. */
static int reads_back(const char *text, double v, int32_t dtype) {
    switch (dtype) {
    case MINFER_DTYPE_DOUBLE: return strtod(text, NULL) == v;
    case MINFER_DTYPE_FLOAT: return strtof(text, NULL) == (float)v;
    case MINFER_DTYPE_FLOAT16:
        return minfer_float_to_half(strtof(text, NULL)) == minfer_float_to_half((float)v);
    default: return minfer_float_to_bf16(strtof(text, NULL)) == minfer_float_to_bf16((float)v);
    }
}

/* Writes v (a value of floating type dtype) as numpy's str() writes a
 * scalar of that type, which is what the ONNX reference's
 * astype(str) produces: the fewest significant digits that read back as
 * the same value, in positional notation when 1e-4 <= |v| < 1e16 or v is 0
 * ("0.9767611", "100.0"), else in scientific notation with at least two
 * exponent digits ("1e-05", "1.5e+20"); "nan", "inf", "-inf". */
static void format_float(double v, int32_t dtype, char *out, size_t size) {
    if (isnan(v)) {
        snprintf(out, size, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(out, size, v < 0 ? "-inf" : "inf");
        return;
    }
    if (v == 0) {
        snprintf(out, size, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    /* Shortest round-trip digits: %.*e rounds correctly, so the first
     * precision that reads back is the closest shortest decimal. */
    char sci[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, v);
        if (reads_back(sci, v, dtype))
            break;
    }
    char digits[24];
    size_t nd = 0;
    const char *c = sci + (sci[0] == '-');
    for (; *c && *c != 'e'; c++)
        if (isdigit((unsigned char)*c) && nd + 1 < sizeof digits)
            digits[nd++] = *c;
    int exp10 = *c == 'e' ? atoi(c + 1) : 0;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    char body[64];
    size_t n = 0;
    double mag = fabs(v);
    if (mag >= 1e-4 && mag < 1e16) {
        if (exp10 >= 0) {
            for (int i = 0; i <= exp10; i++)
                body[n++] = (size_t)i < nd ? digits[i] : '0';
            body[n++] = '.';
            if ((size_t)exp10 + 1 < nd)
                for (size_t i = (size_t)exp10 + 1; i < nd; i++)
                    body[n++] = digits[i];
            else
                body[n++] = '0';
        } else {
            body[n++] = '0';
            body[n++] = '.';
            for (int i = 0; i < -exp10 - 1; i++)
                body[n++] = '0';
            for (size_t i = 0; i < nd; i++)
                body[n++] = digits[i];
        }
        body[n] = '\0';
    } else {
        body[n++] = digits[0];
        if (nd > 1) {
            body[n++] = '.';
            for (size_t i = 1; i < nd; i++)
                body[n++] = digits[i];
        }
        snprintf(body + n, sizeof body - n, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    }
    snprintf(out, size, "%s%s", v < 0 ? "-" : "", body);
}

/* Element i of a non-string tensor as numpy's str() writes it. */
static void format_elem(const void *p, int32_t dtype, size_t i, char *out, size_t size) {
    switch (dtype) {
#define S(E, T, SUF)                                                                       \
    case E:                                                                                \
        snprintf(out, size, "%lld", (long long)((const T *)p)[i]);                         \
        break;
        CPU_SINT_TYPES(S)
#undef S
#define U(E, T, SUF)                                                                       \
    case E:                                                                                \
        snprintf(out, size, "%llu", (unsigned long long)((const T *)p)[i]);                \
        break;
        CPU_UINT_TYPES(U)
#undef U
    case MINFER_DTYPE_BOOL: snprintf(out, size, ((const uint8_t *)p)[i] ? "True" : "False"); break;
    default: format_float(cpu_get(p, dtype, i), dtype, out, size); break;
    }
}

/* 1 if nothing but white space follows end. */
static int only_space(const char *end) {
    while (isspace((unsigned char)*end))
        end++;
    return *end == '\0';
}

/* Parses s into element i of a non-string tensor; 0 on success, -1 when s
 * is not a number of that type (or out of an integer type's range). Floats
 * take what strtod takes ("NaN", "INF", "+INF", "-inf", "1e-5"); integers
 * take decimal integers; bool takes "true"/"false" (any case) or a number,
 * true when not 0. */
static int parse_elem(const char *s, void *p, int32_t dtype, size_t i) {
    char *end;
    errno = 0;
    if (cpu_is_float(dtype)) {
        double v = strtod(s, &end);
        if (end == s || !only_space(end))
            return -1;
        if (dtype == MINFER_DTYPE_FLOAT)
            ((float *)p)[i] = strtof(s, NULL); /* rounds once, not twice through double */
        else
            cpu_set(p, dtype, i, v);
        return 0;
    }
    if (dtype == MINFER_DTYPE_BOOL) {
        const char *t = s;
        while (isspace((unsigned char)*t))
            t++;
        static const char *const words[2] = {"false", "true"};
        for (int w = 0; w < 2; w++) {
            size_t k = 0;
            while (words[w][k] && tolower((unsigned char)t[k]) == words[w][k])
                k++;
            if (!words[w][k] && only_space(t + k)) {
                ((uint8_t *)p)[i] = (uint8_t)w;
                return 0;
            }
        }
        double v = strtod(s, &end);
        if (end == s || !only_space(end))
            return -1;
        ((uint8_t *)p)[i] = v != 0;
        return 0;
    }
    switch (dtype) {
#define S(E, T, SUF)                                                                       \
    case E: {                                                                              \
        long long v = strtoll(s, &end, 10);                                                \
        if (end == s || !only_space(end) || errno == ERANGE || v < (long long)MINVAL_##SUF ||   \
            v > (long long)MAXVAL_##SUF)                                                   \
            return -1;                                                                     \
        ((T *)p)[i] = (T)v;                                                                \
        return 0;                                                                          \
    }
#define MINVAL_i8 INT8_MIN
#define MAXVAL_i8 INT8_MAX
#define MINVAL_i16 INT16_MIN
#define MAXVAL_i16 INT16_MAX
#define MINVAL_i32 INT32_MIN
#define MAXVAL_i32 INT32_MAX
#define MINVAL_i64 INT64_MIN
#define MAXVAL_i64 INT64_MAX
        CPU_SINT_TYPES(S)
#undef S
#define U(E, T, SUF)                                                                       \
    case E: {                                                                              \
        const char *t = s;                                                                 \
        while (isspace((unsigned char)*t))                                                 \
            t++;                                                                           \
        if (*t == '-')                                                                     \
            return -1;                                                                     \
        unsigned long long v = strtoull(t, &end, 10);                                      \
        if (end == t || !only_space(end) || errno == ERANGE ||                             \
            v > (unsigned long long)MAXVAL_##SUF)                                          \
            return -1;                                                                     \
        ((T *)p)[i] = (T)v;                                                                \
        return 0;                                                                          \
    }
#define MAXVAL_u8 UINT8_MAX
#define MAXVAL_u16 UINT16_MAX
#define MAXVAL_u32 UINT32_MAX
#define MAXVAL_u64 UINT64_MAX
        CPU_UINT_TYPES(U)
#undef U
    default: return -1;
    }
}

minfer_status cpu_cast_strings(const cpu_exec *e, const minfer_tensor_view *x, int32_t to,
                               void *y) {
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims);
    const void *src = cpu_data(x);
    if (to == MINFER_DTYPE_STRING) {
        char **out = y;
        char buf[64];
        for (size_t i = 0; i < n; i++) {
            const char *text = buf;
            if (x->dtype == MINFER_DTYPE_STRING)
                text = str_at(x, i);
            else
                format_elem(src, x->dtype, i, buf, sizeof buf);
            if (!(out[i] = dup_str(text)))
                return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory for strings");
        }
        return MINFER_OK;
    }
    for (size_t i = 0; i < n; i++)
        if (parse_elem(str_at(x, i), y, to, i) != 0)
            return cpu_fail(e, MINFER_ERR_RUNTIME,
                            "element %zu, '%.40s', is not a number of the target type", i,
                            str_at(x, i));
    return MINFER_OK;
}

/* ---- StringNormalizer ------------------------------------------------------- */

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

typedef struct strnorm_state {
    int action;
    int case_sensitive;
    const char *const *stopwords; /* attribute storage: lives as long as the session */
    size_t n_stop;
} strnorm_state;

minfer_status cpu_prepare_string_normalizer(cpu_prep *p) {
    strnorm_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    const char *action = cpu_attr_str(p, "case_change_action", "NONE");
    if (strcmp(action, "NONE") == 0)
        st->action = CASE_NONE;
    else if (strcmp(action, "LOWER") == 0)
        st->action = CASE_LOWER;
    else if (strcmp(action, "UPPER") == 0)
        st->action = CASE_UPPER;
    else
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown case_change_action '%s'", action);
    st->case_sensitive = cpu_attr_int(p, "is_case_sensitive", 0) != 0;
    /* Case changes and case-insensitive matching are ASCII only: another
     * locale's rules (Turkish dotted i, German sharp s) would be guessed. */
    const char *locale = cpu_attr_str(p, "locale", "");
    if (locale[0] && strcmp(locale, "en_US") != 0 && strcmp(locale, "C") != 0 &&
        strcmp(locale, "en_US.UTF-8") != 0)
        return cpu_decline(p, "locale '%s' not supported (ASCII case rules only)", locale);
    if (cpu_attr_strs(p, "stopwords", &st->stopwords, &st->n_stop) < 0)
        return MINFER_ERR_UNSUPPORTED;
    const minfer_value_desc *x = minfer_kit_input(p->node, 0);
    if (!x)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    if (x->dtype && x->dtype != MINFER_DTYPE_STRING)
        return cpu_prep_fail(p, MINFER_ERR_TYPE, "input must be a string tensor");
    if (x->rank > 2 || (x->rank == 2 && x->dims[0] > 1))
        return cpu_prep_fail(p, MINFER_ERR_SHAPE, "input must be [C] or [1, C]");
    return MINFER_OK;
}

static int same_text(const char *a, const char *b, int case_sensitive) {
    if (case_sensitive)
        return strcmp(a, b) == 0;
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

static int is_stopword(const strnorm_state *st, const char *s) {
    for (size_t k = 0; k < st->n_stop; k++)
        if (same_text(s, st->stopwords[k], st->case_sensitive))
            return 1;
    return 0;
}

minfer_status cpu_compute_string_normalizer(const cpu_exec *e) {
    const strnorm_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x || x->dtype != MINFER_DTYPE_STRING)
        return cpu_fail(e, MINFER_ERR_TYPE, "input must be a string tensor");
    if (x->rank < 1 || x->rank > 2 || (x->rank == 2 && x->dims[0] != 1))
        return cpu_fail(e, MINFER_ERR_SHAPE, "input must be [C] or [1, C]");
    size_t n = (size_t)minfer_kit_numel(x->rank, x->dims), kept = 0;
    for (size_t i = 0; i < n; i++)
        kept += !is_stopword(st, str_at(x, i));
    /* With every element dropped, the output is one empty string. */
    int64_t dims[2] = {1, kept ? (int64_t)kept : 1};
    char **y;
    minfer_status s = x->rank == 1 ? cpu_output(e, 0, MINFER_DTYPE_STRING, 1, dims + 1, (void **)&y)
                                   : cpu_output(e, 0, MINFER_DTYPE_STRING, 2, dims, (void **)&y);
    if (s)
        return s;
    if (!kept) {
        if (!(y[0] = dup_str("")))
            return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory for strings");
        return MINFER_OK;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const char *in = str_at(x, i);
        if (is_stopword(st, in))
            continue;
        char *d = dup_str(in);
        if (!d)
            return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory for strings");
        for (char *c = d; *c; c++)
            if (st->action == CASE_LOWER)
                *c = (char)tolower((unsigned char)*c);
            else if (st->action == CASE_UPPER)
                *c = (char)toupper((unsigned char)*c);
        y[o++] = d;
    }
    return MINFER_OK;
}

/* ---- TfIdfVectorizer -------------------------------------------------------- */

enum { TF_TF, TF_IDF, TF_TFIDF };

/* The pool holds the n-grams level by level: ngram_counts[n-1] is where the
 * n-grams start (n items each); gram g (numbered across levels in pool
 * order) is counted into output column ngram_indexes[g]. */
typedef struct tfidf_state {
    int mode;
    int64_t min_n, max_n, max_skip;
    const int64_t *counts, *indexes, *pool_ints; /* attribute storage (session lifetime) */
    const char *const *pool_strs;
    const float *weights;
    size_t n_levels, n_grams, n_pool;
    int64_t n_out; /* max(ngram_indexes) + 1 */
} tfidf_state;

minfer_status cpu_prepare_tfidf(cpu_prep *p) {
    const minfer_host_api *api = p->ctx->api;
    tfidf_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    const char *mode = cpu_attr_str(p, "mode", "");
    if (strcmp(mode, "TF") == 0)
        st->mode = TF_TF;
    else if (strcmp(mode, "IDF") == 0)
        st->mode = TF_IDF;
    else if (strcmp(mode, "TFIDF") == 0)
        st->mode = TF_TFIDF;
    else
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "mode must be TF, IDF or TFIDF, not '%s'", mode);
    st->min_n = cpu_attr_int(p, "min_gram_length", 0);
    st->max_n = cpu_attr_int(p, "max_gram_length", 0);
    st->max_skip = cpu_attr_int(p, "max_skip_count", 0);
    if (st->min_n < 1 || st->max_n < st->min_n || st->max_skip < 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL,
                             "needs 1 <= min_gram_length <= max_gram_length, max_skip_count >= 0");
    size_t n_idx = 0, n_w = 0;
    if (!api->attr_ints(p->node, "ngram_counts", &st->counts, &st->n_levels) ||
        !api->attr_ints(p->node, "ngram_indexes", &st->indexes, &n_idx))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs ngram_counts and ngram_indexes");
    int has_ints = api->attr_ints(p->node, "pool_int64s", &st->pool_ints, &st->n_pool);
    size_t n_strs = 0;
    int has_strs = cpu_attr_strs(p, "pool_strings", &st->pool_strs, &n_strs);
    if (has_strs < 0)
        return MINFER_ERR_UNSUPPORTED;
    if (has_ints == !!has_strs)
        return cpu_prep_fail(p, MINFER_ERR_MODEL,
                             "needs exactly one of pool_int64s and pool_strings");
    if (has_strs)
        st->n_pool = n_strs;
    if (api->attr_floats(p->node, "weights", &st->weights, &n_w) == 0)
        st->weights = NULL;
    /* Count the grams level by level; each level's span must hold whole grams. */
    for (size_t l = 0; l < st->n_levels; l++) {
        int64_t begin = st->counts[l];
        int64_t end = l + 1 < st->n_levels ? st->counts[l + 1] : (int64_t)st->n_pool;
        if (begin < 0 || end < begin || end > (int64_t)st->n_pool ||
            (end - begin) % (int64_t)(l + 1) != 0)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "ngram_counts does not split the pool");
        st->n_grams += (size_t)((end - begin) / (int64_t)(l + 1));
    }
    if (n_idx != st->n_grams || (st->weights && n_w != st->n_grams))
        return cpu_prep_fail(p, MINFER_ERR_MODEL,
                             "the pool holds %zu n-grams but ngram_indexes (or weights) has %zu",
                             st->n_grams, st->weights && n_w != st->n_grams ? n_w : n_idx);
    st->n_out = 0;
    for (size_t g = 0; g < n_idx; g++) {
        if (st->indexes[g] < 0 || st->indexes[g] > ((int64_t)1 << 40))
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "ngram_indexes holds %lld",
                                 (long long)st->indexes[g]);
        if (st->indexes[g] + 1 > st->n_out)
            st->n_out = st->indexes[g] + 1;
    }
    const minfer_value_desc *x = minfer_kit_input(p->node, 0);
    if (!x)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    if (x->dtype && (x->dtype == MINFER_DTYPE_STRING) != !!has_strs)
        return cpu_prep_fail(p, MINFER_ERR_TYPE,
                             "a string input needs pool_strings, an integer one pool_int64s");
    return MINFER_OK;
}

/* 1 if the n items of x from at, every dist, equal pool[off..off+n). */
static int gram_matches(const tfidf_state *st, const minfer_tensor_view *x, const void *xd,
                        size_t at, size_t dist, size_t off, size_t n) {
    for (size_t k = 0; k < n; k++) {
        size_t i = at + k * dist;
        if (st->pool_strs) {
            if (strcmp(str_at(x, i), st->pool_strs[off + k]) != 0)
                return 0;
        } else if (cpu_get_index(xd, x->dtype, i) != st->pool_ints[off + k]) {
            return 0;
        }
    }
    return 1;
}

minfer_status cpu_compute_tfidf(const cpu_exec *e) {
    const tfidf_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x || (x->rank != 1 && x->rank != 2))
        return cpu_fail(e, MINFER_ERR_SHAPE, "input must be [C] or [N, C]");
    if ((x->dtype == MINFER_DTYPE_STRING) != (st->pool_strs != NULL) ||
        (!st->pool_strs && !(CPU_T(x->dtype) & CPU_T_IDX)))
        return cpu_fail(e, MINFER_ERR_TYPE, "input type does not match the pool");
    int64_t rows = x->rank == 2 ? x->dims[0] : 1, cols = x->dims[x->rank - 1];
    int64_t od[2] = {rows, st->n_out};
    float *y;
    minfer_status s = x->rank == 2 ? cpu_output(e, 0, MINFER_DTYPE_FLOAT, 2, od, (void **)&y)
                                   : cpu_output(e, 0, MINFER_DTYPE_FLOAT, 1, od + 1, (void **)&y);
    if (s)
        return s;
    double *cnt = cpu_calloc(e->ctx, st->n_grams ? st->n_grams : 1, sizeof *cnt);
    if (!cnt)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    const void *xd = cpu_data(x);
    for (int64_t r = 0; r < rows; r++) {
        memset(cnt, 0, (st->n_grams ? st->n_grams : 1) * sizeof *cnt);
        size_t row = (size_t)(r * cols);
        /* Every skip distance, start and length; unigrams are the same at
         * every skip, so they are counted at distance 1 only. */
        for (int64_t skip = 0; skip <= st->max_skip; skip++) {
            size_t dist = (size_t)skip + 1;
            for (int64_t start = 0; start < cols; start++) {
                size_t g0 = 0;
                for (size_t l = 0; l < st->n_levels; l++) {
                    size_t n = l + 1;
                    size_t begin = (size_t)st->counts[l];
                    size_t end = l + 1 < st->n_levels ? (size_t)st->counts[l + 1] : st->n_pool;
                    size_t grams = (end - begin) / n;
                    int want = (int64_t)n >= st->min_n && (int64_t)n <= st->max_n &&
                               !(n == 1 && skip > 0) &&
                               (size_t)start + (n - 1) * dist < (size_t)cols;
                    for (size_t g = 0; want && g < grams; g++)
                        if (gram_matches(st, x, xd, row + (size_t)start, dist, begin + g * n, n))
                            cnt[g0 + g] += 1;
                    g0 += grams;
                }
            }
        }
        float *yr = y + r * st->n_out;
        for (int64_t k = 0; k < st->n_out; k++)
            yr[k] = 0;
        for (size_t g = 0; g < st->n_grams; g++) {
            double w = st->weights ? st->weights[g] : 1.0, v;
            if (st->mode == TF_TF)
                v = cnt[g];
            else if (st->mode == TF_IDF)
                v = cnt[g] > 0 ? w : 0;
            else
                v = cnt[g] * w;
            yr[st->indexes[g]] = (float)v;
        }
    }
    free(cnt);
    return MINFER_OK;
}
