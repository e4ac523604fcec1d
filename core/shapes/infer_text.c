/*
 * Text: StringNormalizer, TfIdfVectorizer.
 */
#include "shapes/infer_rules.h"

/* StringNormalizer: [C] -> [C'] or [1, C] -> [1, C'], C' known only at run time. */
minfer_status si_string_normalizer(ictx *c) {
    const minfer_tensor_view *x;
    int64_t d[2] = {1, -1};
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (x->dtype && x->dtype != MINFER_DTYPE_STRING)
        return si_fail(c, MINFER_ERR_TYPE, "input must be string, not %s", si_dtype_name(x->dtype));
    if (x->rank == 1)
        return si_set_out(c, 0, MINFER_DTYPE_STRING, 1, d + 1);
    if (x->rank == 2) {
        if (x->dims[0] > 1)
            return si_fail(c, MINFER_ERR_SHAPE, "input must be [C] or [1, C]");
        return si_set_out(c, 0, MINFER_DTYPE_STRING, 2, d);
    }
    if (x->rank >= 0)
        return si_fail(c, MINFER_ERR_SHAPE, "input must be [C] or [1, C], not rank %d", (int)x->rank);
    return si_set_out(c, 0, MINFER_DTYPE_STRING, -1, NULL);
}

/* TfIdfVectorizer: [C] -> [max(ngram_indexes) + 1], [N, C] -> [N, ...]. */
minfer_status si_tfidf(ictx *c) {
    const minfer_tensor_view *x;
    const int64_t *idx = NULL;
    int64_t width = 0, d[2];
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    size_t n = mf_attr_ints(c->node, "ngram_indexes", &idx);
    for (size_t i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= INT64_MAX / 2)
            return si_fail(c, MINFER_ERR_MODEL, "ngram_indexes holds %lld", (long long)idx[i]);
        if (idx[i] + 1 > width)
            width = idx[i] + 1;
    }
    if (x->rank == 1)
        return si_set_out(c, 0, MINFER_DTYPE_FLOAT, 1, &width);
    if (x->rank == 2) {
        d[0] = x->dims[0];
        d[1] = width;
        return si_set_out(c, 0, MINFER_DTYPE_FLOAT, 2, d);
    }
    if (x->rank >= 0)
        return si_fail(c, MINFER_ERR_SHAPE, "input must be [C] or [N, C], not rank %d", (int)x->rank);
    return si_set_out(c, 0, MINFER_DTYPE_FLOAT, -1, NULL);
}
