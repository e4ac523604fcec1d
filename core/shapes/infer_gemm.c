/*
 * Matrix products: Gemm, MatMul.
 */
#include "shapes/infer_rules.h"

#include <string.h>

minfer_status si_gemm(ictx *c) {
    const minfer_tensor_view *a, *b, *cc;
    int64_t ta, tb, m, ka, kb, n, d[2];
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if ((st = si_require(c, 0, &a)) || (st = si_require(c, 1, &b)) ||
        (st = si_same_type(c, a, "A", b, "B")) || (st = si_same_type(c, a, "A", si_input(c, 2), "C")))
        return st;
    if ((a->rank >= 0 && a->rank != 2) || (b->rank >= 0 && b->rank != 2))
        return si_fail(c, MINFER_ERR_SHAPE, "A %s and B %s must be 2-D",
                    si_shape_str(a->dims, a->rank, s1, sizeof s1),
                    si_shape_str(b->dims, b->rank, s2, sizeof s2));
    ta = mf_attr_int(c->node, "transA", 0);
    tb = mf_attr_int(c->node, "transB", 0);
    m = a->rank == 2 ? a->dims[ta ? 1 : 0] : -1;
    ka = a->rank == 2 ? a->dims[ta ? 0 : 1] : -1;
    kb = b->rank == 2 ? b->dims[tb ? 1 : 0] : -1;
    n = b->rank == 2 ? b->dims[tb ? 0 : 1] : -1;
    if (ka >= 0 && kb >= 0 && ka != kb)
        return si_fail(c, MINFER_ERR_SHAPE, "A %s%s and B %s%s disagree on K (%lld vs %lld)",
                    si_shape_str(a->dims, a->rank, s1, sizeof s1), ta ? "^T" : "",
                    si_shape_str(b->dims, b->rank, s2, sizeof s2), tb ? "^T" : "", (long long)ka,
                    (long long)kb);
    d[0] = m;
    d[1] = n;
    /* C broadcasts unidirectionally to [M, N]. */
    if ((cc = si_input(c, 2)) != NULL && cc->rank >= 0) {
        if (cc->rank > 2)
            return si_fail(c, MINFER_ERR_SHAPE, "C %s has rank > 2",
                        si_shape_str(cc->dims, cc->rank, s1, sizeof s1));
        for (int32_t i = 0; i < cc->rank; i++) {
            int64_t cd = cc->dims[i], od = d[2 - cc->rank + i];
            if (cd >= 0 && cd != 1 && od >= 0 && cd != od)
                return si_fail(c, MINFER_ERR_SHAPE, "C %s cannot broadcast to [%lld,%lld]",
                            si_shape_str(cc->dims, cc->rank, s1, sizeof s1), (long long)m,
                            (long long)n);
        }
    }
    return si_set_out(c, 0, si_first_dtype(a, b), 2, d);
}

minfer_status si_matmul(ictx *c) {
    const minfer_tensor_view *a, *b;
    int64_t ad[MINFER_MAX_RANK], bd[MINFER_MAX_RANK], d[MINFER_MAX_RANK + 2];
    int32_t ra, rb, r;
    char s1[SHAPE_BUF], s2[SHAPE_BUF];
    minfer_status st;
    if ((st = si_require(c, 0, &a)) || (st = si_require(c, 1, &b)) ||
        (st = si_same_type(c, a, "A", b, "B")))
        return st;
    if (a->rank < 0 || b->rank < 0)
        return si_set_out(c, 0, si_first_dtype(a, b), -1, NULL);
    if (a->rank == 0 || b->rank == 0)
        return si_fail(c, MINFER_ERR_SHAPE, "MatMul needs inputs of rank >= 1, got %s and %s",
                    si_shape_str(a->dims, a->rank, s1, sizeof s1),
                    si_shape_str(b->dims, b->rank, s2, sizeof s2));
    /* A 1-D A is [1, K] and a 1-D B is [K, 1]; the added axis is dropped. */
    ra = a->rank == 1 ? 2 : a->rank;
    rb = b->rank == 1 ? 2 : b->rank;
    if (a->rank == 1) {
        ad[0] = 1;
        ad[1] = a->dims[0];
    } else {
        memcpy(ad, a->dims, (size_t)ra * sizeof ad[0]);
    }
    if (b->rank == 1) {
        bd[0] = b->dims[0];
        bd[1] = 1;
    } else {
        memcpy(bd, b->dims, (size_t)rb * sizeof bd[0]);
    }
    if (ad[ra - 1] >= 0 && bd[rb - 2] >= 0 && ad[ra - 1] != bd[rb - 2])
        return si_fail(c, MINFER_ERR_SHAPE, "inner dimensions differ: %s x %s",
                    si_shape_str(a->dims, a->rank, s1, sizeof s1),
                    si_shape_str(b->dims, b->rank, s2, sizeof s2));
    if ((st = si_broadcast(c, ad, ra - 2, bd, rb - 2, d, &r)))
        return st;
    if (a->rank != 1)
        d[r++] = ad[ra - 2];
    if (b->rank != 1)
        d[r++] = bd[rb - 1];
    return si_set_out(c, 0, si_first_dtype(a, b), r, d);
}
