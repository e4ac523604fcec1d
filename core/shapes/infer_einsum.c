/*
 * Einsum.
 */
#include "shapes/infer_rules.h"

#include <string.h>

/* Einsum: the equation is checked in full here, at session build, so a
 * kernel never sees a malformed one: only letters, ',' between terms, at
 * most one "..." per term and one "->"; one term per input; a term's
 * letters fit its input's rank; a letter's sizes agree everywhere and the
 * ellipsis dims broadcast; output letters are distinct and each is in an
 * input. The output: the ellipsis dims and the output letters (implicit
 * form: the letters used once, in ASCII order, as numpy). */
static int ein_letter(char ch) {
    return ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch >= 'a' && ch <= 'z' ? 26 + ch - 'a' : -1;
}

/* Checks one term's characters: its letter count, and whether it has an
 * ellipsis; -1 with the reason in why. */
static int ein_term(const char *t, size_t len, int *has_ell, const char **why) {
    int letters = 0;
    *has_ell = 0;
    for (size_t k = 0; k < len; k++) {
        if (t[k] == '.') {
            if (*has_ell) {
                *why = "has more than one ellipsis";
                return -1;
            }
            if (k + 2 >= len + 0 || t[k + 1] != '.' || t[k + 2] != '.') {
                *why = "has a '.' outside a \"...\"";
                return -1;
            }
            *has_ell = 1;
            k += 2;
        } else if (ein_letter(t[k]) < 0) {
            *why = "has a character that is not a letter, ',' or \"...\"";
            return -1;
        } else
            letters++;
    }
    return letters;
}

minfer_status si_einsum(ictx *c) {
    const mf_attr *a = mf_node_attr(c->node, "equation");
    char eq[512];
    const char *why = "";
    size_t n = 0;
    if (!a || a->type != MINFER_ATTR_STRING || !a->s)
        return si_fail(c, MINFER_ERR_MODEL, "attribute equation is missing");
    for (const char *p = a->s; *p; p++)
        if (*p != ' ') {
            if (n + 1 >= sizeof eq)
                return si_fail(c, MINFER_ERR_LIMIT, "the equation is longer than %zu characters",
                            sizeof eq - 1);
            eq[n++] = *p;
        }
    eq[n] = '\0';
    const char *arrow = strstr(eq, "->");
    if (arrow && strstr(arrow + 2, "->"))
        return si_fail(c, MINFER_ERR_MODEL, "equation '%s' has more than one \"->\"", eq);
    size_t lhs = arrow ? (size_t)(arrow - eq) : n, terms = 1;
    for (size_t k = 0; k < lhs; k++)
        terms += eq[k] == ',';
    if (terms != c->n_in)
        return si_fail(c, MINFER_ERR_MODEL, "equation '%s' has %zu terms for %zu inputs", eq, terms,
                    c->n_in);
    int64_t size[52];
    int count[52] = {0}, ell_known = 1, any_ell = 0;
    int32_t ell_rank = 0, dtype = 0;
    int64_t ell[MINFER_MAX_RANK];
    char s1[SHAPE_BUF];
    for (int l = 0; l < 52; l++)
        size[l] = -1;
    const char *t = eq;
    for (size_t i = 0; i < c->n_in; i++) {
        const minfer_tensor_view *x;
        minfer_status st = si_require(c, i, &x);
        if (st)
            return st;
        if (dtype && x->dtype && x->dtype != dtype)
            return si_fail(c, MINFER_ERR_TYPE, "input %zu is %s, input 0 is %s", i,
                        si_dtype_name(x->dtype), si_dtype_name(dtype));
        if (!dtype)
            dtype = x->dtype;
        const char *end = memchr(t, ',', lhs - (size_t)(t - eq));
        size_t len = end ? (size_t)(end - t) : lhs - (size_t)(t - eq);
        int has_ell, letters = ein_term(t, len, &has_ell, &why);
        if (letters < 0)
            return si_fail(c, MINFER_ERR_MODEL, "equation '%s': term %zu %s", eq, i, why);
        any_ell |= has_ell;
        if (x->rank >= 0 && (has_ell ? letters > x->rank : letters != x->rank))
            return si_fail(c, MINFER_ERR_SHAPE,
                        "equation '%s': term %zu has %d letters%s, input %zu has rank %d", eq,
                        i, letters, has_ell ? " and an ellipsis" : "", i, (int)x->rank);
        int32_t e = x->rank >= 0 && has_ell ? x->rank - letters : 0;
        if (x->rank < 0 && has_ell)
            ell_known = 0;
        /* the ellipsis dims, right-aligned across the inputs: 1 broadcasts */
        if (has_ell && x->rank >= 0) {
            int32_t at = 0;
            while (t[at] != '.')
                at++;
            for (int32_t k = 0; k < e; k++) {
                int64_t dv = x->dims[at + k];
                int32_t slot = MINFER_MAX_RANK - e + k;
                if (e > ell_rank) {
                    for (int32_t m = MINFER_MAX_RANK - e; m < MINFER_MAX_RANK - ell_rank; m++)
                        ell[m] = 1;
                    ell_rank = e;
                }
                if (dv == 1)
                    continue;
                if (ell[slot] == 1 || ell[slot] == -1)
                    ell[slot] = dv; /* an unknown one is 1 or the same */
                else if (dv != -1 && dv != ell[slot])
                    return si_fail(c, MINFER_ERR_SHAPE,
                                "equation '%s': the ellipsis dims of input %zu %s do not "
                                "broadcast with the others", eq, i,
                                si_shape_str(x->dims, x->rank, s1, sizeof s1));
            }
        }
        for (size_t k = 0, pos = 0; k < len; k++) {
            if (t[k] == '.') {
                k += 2;
                pos += (size_t)e;
                continue;
            }
            int l = ein_letter(t[k]);
            count[l]++;
            int64_t dv = x->rank >= 0 ? x->dims[pos] : -1;
            pos++;
            if (dv < 0)
                continue;
            if (size[l] >= 0 && size[l] != dv)
                return si_fail(c, MINFER_ERR_SHAPE,
                            "equation '%s': label '%c' is %lld in one place and %lld in input "
                            "%zu", eq, t[k], (long long)size[l], (long long)dv, i);
            size[l] = dv;
        }
        t = end ? end + 1 : t + len;
    }
    /* the output */
    int64_t d[MINFER_MAX_RANK + 1];
    int32_t r = 0;
    if (arrow) {
        const char *o = arrow + 2;
        int has_ell, letters = ein_term(o, strlen(o), &has_ell, &why);
        int seen[52] = {0};
        if (letters < 0)
            return si_fail(c, MINFER_ERR_MODEL, "equation '%s': the output term %s", eq, why);
        for (const char *p = o; *p; p++) {
            int l = ein_letter(*p);
            if (l < 0)
                continue;
            if (!count[l])
                return si_fail(c, MINFER_ERR_MODEL, "equation '%s': output label '%c' is in no input",
                            eq, *p);
            if (seen[l]++)
                return si_fail(c, MINFER_ERR_MODEL,
                            "equation '%s': output label '%c' appears more than once", eq, *p);
        }
        if (has_ell && !ell_known)
            return si_set_out(c, 0, dtype, -1, NULL);
        if (letters + (has_ell ? ell_rank : 0) > MINFER_MAX_RANK)
            return si_fail(c, MINFER_ERR_LIMIT, "equation '%s' gives an output of rank above %d", eq,
                        MINFER_MAX_RANK);
        for (const char *p = o; *p; p++) {
            if (*p == '.') {
                for (int32_t k = 0; k < ell_rank; k++)
                    d[r++] = ell[MINFER_MAX_RANK - ell_rank + k];
                p += 2;
            } else
                d[r++] = size[ein_letter(*p)];
        }
    } else {
        if (any_ell && !ell_known)
            return si_set_out(c, 0, dtype, -1, NULL);
        for (int32_t k = 0; any_ell && k < ell_rank; k++)
            d[r++] = ell[MINFER_MAX_RANK - ell_rank + k];
        for (int l = 0; l < 52; l++)
            if (count[l] == 1) {
                if (r == MINFER_MAX_RANK)
                    return si_fail(c, MINFER_ERR_LIMIT,
                                "equation '%s' gives an output of rank above %d", eq,
                                MINFER_MAX_RANK);
                d[r++] = size[l];
            }
    }
    return si_set_out(c, 0, dtype, r, d);
}
