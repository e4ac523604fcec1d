/*
 * Einsum, naively: every label (a letter, or one dimension covered by the
 * ellipsis) gets a size; the output element for each assignment of the
 * output labels is the sum, over every assignment of the other labels, of
 * the product of the inputs' elements at those labels. Repeated labels in
 * one term read a diagonal; ellipsis dims broadcast (size 1 against n).
 * The implicit form (no "->") outputs the ellipsis dims, then the labels
 * used exactly once, in alphabetical order. In double.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define EIN_LETTERS 52
#define EIN_LABELS (EIN_LETTERS + CPU_MAX_RANK)
#define EIN_MAX_IN 8

typedef struct einsum_state {
    char equation[256];
} einsum_state;

minfer_status cpu_prepare_einsum(cpu_prep *p) {
    const char *eq = cpu_attr_str(p, "equation", NULL);
    if (!eq)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "equation is required");
    einsum_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    if (strlen(eq) >= sizeof st->equation)
        return cpu_decline(p, "equation too long");
    /* Keep it without spaces. */
    size_t j = 0;
    for (const char *c = eq; *c; c++)
        if (*c != ' ')
            st->equation[j++] = *c;
    st->equation[j] = '\0';
    if (p->node->n_inputs < 1 || p->node->n_inputs > EIN_MAX_IN)
        return cpu_decline(p, "1 to %d inputs supported", EIN_MAX_IN);
    return MINFER_OK;
}

static int letter_id(char c) {
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'Z')
        return 26 + c - 'A';
    return -1;
}

/* Parses one term into label ids for a tensor of rank 'rank' (or, for the
 * output, rank -1 with ell giving the ellipsis size). Returns the count or -1. */
static int parse_term(const char *s, size_t len, int rank, int ell_total, int *ids, int *ell_used) {
    int n = 0, explicit_n = 0, has_ell = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i] == '.')
            has_ell = 1;
        else
            explicit_n++;
    int ell = has_ell ? (rank >= 0 ? rank - explicit_n : ell_total) : 0;
    if (ell < 0 || (rank >= 0 && !has_ell && explicit_n != rank))
        return -1;
    *ell_used = ell;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.')
                return -1;
            /* right-aligned ellipsis labels */
            for (int k = 0; k < ell; k++) {
                if (n >= CPU_MAX_RANK)
                    return -1;
                ids[n++] = EIN_LETTERS + (ell_total - ell) + k;
            }
            i += 2;
            continue;
        }
        int id = letter_id(s[i]);
        if (id < 0 || n >= CPU_MAX_RANK)
            return -1;
        ids[n++] = id;
    }
    return n;
}

minfer_status cpu_compute_einsum(const cpu_exec *e) {
    const einsum_state *st = e->state;
    size_t nin = e->args->n_inputs;
    const minfer_tensor_view *in[EIN_MAX_IN];
    int ids[EIN_MAX_IN][CPU_MAX_RANK], nids[EIN_MAX_IN], oids[CPU_MAX_RANK], on = 0;
    int64_t size[EIN_LABELS];
    int used[EIN_LABELS] = {0};
    const char *eq = st->equation, *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    int ell_total = 0, dummy;
    for (int l = 0; l < EIN_LABELS; l++)
        size[l] = -1;
    for (size_t i = 0; i < nin; i++) {
        in[i] = cpu_input(e, i);
        if (!in[i] || in[i]->dtype != e->args->inputs[0].dtype)
            return cpu_fail(e, MINFER_ERR_TYPE, "inputs must be present and of one type");
    }
    /* Pass 1: the ellipsis size (the largest of the inputs'). */
    const char *t = eq;
    for (size_t i = 0; i < nin; i++) {
        const char *end = memchr(t, ',', lhs_len - (size_t)(t - eq));
        size_t len = end ? (size_t)(end - t) : lhs_len - (size_t)(t - eq);
        int ell;
        if (parse_term(t, len, in[i]->rank, CPU_MAX_RANK, ids[i], &ell) < 0)
            return cpu_fail(e, MINFER_ERR_MODEL, "equation term %zu does not fit input %zu", i, i);
        ell_total = ell > ell_total ? ell : ell_total;
        if (!end && i + 1 < nin)
            return cpu_fail(e, MINFER_ERR_MODEL, "equation has fewer terms than inputs");
        t = end ? end + 1 : t + len;
    }
    /* Pass 2: label ids with the common ellipsis size, and label sizes. */
    t = eq;
    for (size_t i = 0; i < nin; i++) {
        const char *end = memchr(t, ',', lhs_len - (size_t)(t - eq));
        size_t len = end ? (size_t)(end - t) : lhs_len - (size_t)(t - eq);
        int ell;
        nids[i] = parse_term(t, len, in[i]->rank, ell_total, ids[i], &ell);
        for (int d = 0; d < nids[i]; d++) {
            int l = ids[i][d];
            int64_t n = in[i]->dims[d];
            if (size[l] < 0 || size[l] == 1)
                size[l] = n;
            else if (n != size[l] && !(n == 1 && l >= EIN_LETTERS))
                return cpu_fail(e, MINFER_ERR_SHAPE, "label sizes disagree");
            used[l]++;
        }
        t = end ? end + 1 : t + len;
    }
    if (arrow) {
        on = parse_term(arrow + 2, strlen(arrow + 2), -1, ell_total, oids, &dummy);
        if (on < 0)
            return cpu_fail(e, MINFER_ERR_MODEL, "bad output term");
        for (int d = 0; d < on; d++)
            if (size[oids[d]] < 0)
                return cpu_fail(e, MINFER_ERR_MODEL, "output label not in any input");
    } else {
        for (int k = 0; k < ell_total; k++)
            oids[on++] = EIN_LETTERS + k;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (used[l] == 1 && on < CPU_MAX_RANK)
                oids[on++] = l;
    }
    /* The summed labels: those used but not in the output. */
    int sids[EIN_LABELS], sn = 0, in_out[EIN_LABELS] = {0};
    for (int d = 0; d < on; d++)
        in_out[oids[d]] = 1;
    for (int l = 0; l < EIN_LABELS; l++)
        if (used[l] && !in_out[l])
            sids[sn++] = l;
    int64_t od[CPU_MAX_RANK];
    for (int d = 0; d < on; d++)
        od[d] = size[oids[d]];
    void *y;
    int32_t dt = in[0]->dtype;
    minfer_status s = cpu_output(e, 0, dt, on, od, &y);
    if (s)
        return s;
    size_t nout = (size_t)cpu_numel(on, od), nsum = 1;
    for (int k = 0; k < sn; k++)
        nsum *= (size_t)size[sids[k]];
    int64_t val[EIN_LABELS], strides[EIN_MAX_IN][CPU_MAX_RANK];
    for (size_t i = 0; i < nin; i++)
        cpu_strides(in[i]->rank, in[i]->dims, strides[i]);
    for (size_t o = 0; o < nout; o++) {
        size_t rem = o;
        for (int d = on - 1; d >= 0; d--) {
            val[oids[d]] = (int64_t)(rem % (size_t)od[d]);
            rem /= (size_t)od[d];
        }
        double acc = 0;
        for (size_t q = 0; q < nsum; q++) {
            size_t r2 = q;
            for (int k = sn - 1; k >= 0; k--) {
                val[sids[k]] = (int64_t)(r2 % (size_t)size[sids[k]]);
                r2 /= (size_t)size[sids[k]];
            }
            double prod = 1;
            for (size_t i = 0; i < nin; i++) {
                size_t off = 0;
                for (int d = 0; d < nids[i]; d++)
                    off += (size_t)((in[i]->dims[d] == 1 ? 0 : val[ids[i][d]]) * strides[i][d]);
                prod *= cpu_get(cpu_data(in[i]), dt, off);
            }
            acc += prod;
        }
        cpu_set(y, dt, o, acc);
    }
    return MINFER_OK;
}
