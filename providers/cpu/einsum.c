/*
 * Einsum. Every label (a letter, or one dimension covered by the ellipsis)
 * gets a size; repeated labels in one term read a diagonal; ellipsis dims
 * broadcast (size 1 against n), letters do not. The implicit form (no "->")
 * outputs the ellipsis dims, then the letters used exactly once, in ASCII
 * order (upper case first), as numpy does. In double.
 *
 * Contracting by factors keeps the work near the size of the inputs where
 * the equation allows it:
 *  1. each operand is summed over the labels that only it has and the
 *     output does not (`abcd,efgh->` becomes sum(A) * sum(B); a trace
 *     `ii->` reads the diagonal once);
 *  2. each output element is the sum, over the labels shared by several
 *     operands and not in the output, of the product of the reduced
 *     operands. Step 2's work (output elements x summed assignments x
 *     operands) is charged to the run's budget before it starts, so an
 *     equation whose true cost is absurd fails with MINFER_ERR_LIMIT
 *     instead of running for hours.
 *
 * The equation is validated in full before anything is computed (the
 * host's shape inference checks it too, at session build): only letters,
 * ',' between terms, one "..." per term and one "->"; one term per input;
 * a term's letters match its input's rank; a label's sizes agree; output
 * letters are distinct and each appears in an input.
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

/* Label ids in ASCII order, so the implicit output sorts as numpy's. */
static int letter_id(char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return 26 + c - 'a';
    return -1;
}

static char id_letter(int id) { return (char)(id < 26 ? 'A' + id : 'a' + id - 26); }

/* Parses one term into label ids for a tensor of rank 'rank' (or, for the
 * output, rank -1: the ellipsis then stands for ell_total dims). Ellipsis
 * labels are right-aligned against ell_total. Returns the label count, or
 * -1 with why set. */
static int parse_term(const char *s, size_t len, int rank, int ell_total, int *ids, int *ell_used,
                      const char **why) {
    int n = 0, letters = 0, dots = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            if (dots++ || i + 2 >= len + 0 || s[i + 1] != '.' || s[i + 2] != '.') {
                *why = dots > 1 ? "has more than one ellipsis" : "has a '.' outside a \"...\"";
                return -1;
            }
            i += 2;
        } else if (letter_id(s[i]) < 0) {
            *why = "has a character that is not a letter, ',' or \"...\"";
            return -1;
        } else
            letters++;
    }
    int ell = dots ? (rank >= 0 ? rank - letters : ell_total) : 0;
    if (ell < 0 || (rank >= 0 && !dots && letters != rank)) {
        *why = "has a different number of letters than its input has dimensions";
        return -1;
    }
    if (letters + ell > CPU_MAX_RANK) {
        *why = "has more dimensions than supported";
        return -1;
    }
    *ell_used = ell;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int k = 0; k < ell; k++)
                ids[n++] = EIN_LETTERS + (ell_total - ell) + k;
            i += 2;
            continue;
        }
        ids[n++] = letter_id(s[i]);
    }
    return n;
}

static uint64_t sat_mul(uint64_t a, uint64_t b) {
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* Work charged to the run's budget, through the host when it can take it. */
static minfer_status charge(const cpu_exec *e, uint64_t work) {
    const minfer_host_api *api = e->ctx->api;
    if (!MINFER_HOST_HAS(api, charge_work))
        return MINFER_OK;
    return api->charge_work(e->args->run, work);
}

/* One operand after step 1: its kept labels and their sizes in it. */
typedef struct reduced {
    int n;
    int ids[CPU_MAX_RANK];
    int64_t dims[CPU_MAX_RANK];
    double *data;
} reduced;

minfer_status cpu_compute_einsum(const cpu_exec *e) {
    const einsum_state *st = e->state;
    size_t nin = e->args->n_inputs;
    const minfer_tensor_view *in[EIN_MAX_IN];
    int ids[EIN_MAX_IN][CPU_MAX_RANK], nids[EIN_MAX_IN], oids[CPU_MAX_RANK], on = 0;
    int64_t size[EIN_LABELS];
    int used[EIN_LABELS] = {0};
    unsigned owners[EIN_LABELS] = {0}; /* bit i: operand i has the label */
    const char *eq = st->equation, *arrow = strstr(eq, "->"), *why = "";
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : strlen(eq);
    int ell_total = 0, dummy;
    reduced red[EIN_MAX_IN];
    minfer_status s = MINFER_OK;
    memset(red, 0, sizeof red);
    for (int l = 0; l < EIN_LABELS; l++)
        size[l] = -1;
    if (arrow && strstr(arrow + 2, "->"))
        return cpu_fail(e, MINFER_ERR_MODEL, "equation '%s' has more than one \"->\"", eq);
    for (size_t i = 0; i < nin; i++) {
        in[i] = cpu_input(e, i);
        if (!in[i] || in[i]->dtype != e->args->inputs[0].dtype)
            return cpu_fail(e, MINFER_ERR_TYPE, "inputs must be present and of one type");
    }
    /* Pass 1: the terms against the inputs, and the ellipsis size (the
     * largest of the inputs'). */
    const char *t = eq;
    for (size_t i = 0; i < nin; i++) {
        const char *end = memchr(t, ',', lhs_len - (size_t)(t - eq));
        size_t len = end ? (size_t)(end - t) : lhs_len - (size_t)(t - eq);
        int ell;
        if (!end && i + 1 < nin)
            return cpu_fail(e, MINFER_ERR_MODEL, "equation '%s' has %zu terms for %zu inputs",
                            eq, i + 1, nin);
        if (parse_term(t, len, in[i]->rank, CPU_MAX_RANK, ids[i], &ell, &why) < 0)
            return cpu_fail(e, MINFER_ERR_MODEL, "equation '%s': term %zu (input %zu, rank %d) %s",
                            eq, i, i, (int)in[i]->rank, why);
        ell_total = ell > ell_total ? ell : ell_total;
        t = end ? end + 1 : t + len;
    }
    if ((size_t)(t - eq) < lhs_len)
        return cpu_fail(e, MINFER_ERR_MODEL, "equation '%s' has more terms than the %zu inputs",
                        eq, nin);
    /* Pass 2: label ids with the common ellipsis size, and label sizes. */
    t = eq;
    for (size_t i = 0; i < nin; i++) {
        const char *end = memchr(t, ',', lhs_len - (size_t)(t - eq));
        size_t len = end ? (size_t)(end - t) : lhs_len - (size_t)(t - eq);
        int ell;
        nids[i] = parse_term(t, len, in[i]->rank, ell_total, ids[i], &ell, &why);
        for (int d = 0; d < nids[i]; d++) {
            int l = ids[i][d];
            int64_t n = in[i]->dims[d];
            if (size[l] < 0 || (size[l] == 1 && l >= EIN_LETTERS))
                size[l] = n;
            else if (n != size[l] && !(n == 1 && l >= EIN_LETTERS)) {
                if (l < EIN_LETTERS)
                    return cpu_fail(e, MINFER_ERR_SHAPE,
                                    "equation '%s': label '%c' is %lld in one place and %lld "
                                    "in input %zu", eq, id_letter(l), (long long)size[l],
                                    (long long)n, i);
                return cpu_fail(e, MINFER_ERR_SHAPE,
                                "equation '%s': the ellipsis dims of input %zu do not broadcast",
                                eq, i);
            }
            used[l]++;
            owners[l] |= 1u << i;
        }
        t = end ? end + 1 : t + len;
    }
    if (arrow) {
        on = parse_term(arrow + 2, strlen(arrow + 2), -1, ell_total, oids, &dummy, &why);
        if (on < 0)
            return cpu_fail(e, MINFER_ERR_MODEL, "equation '%s': the output term %s", eq, why);
        for (int d = 0; d < on; d++) {
            if (size[oids[d]] < 0)
                return cpu_fail(e, MINFER_ERR_MODEL,
                                "equation '%s': output label '%c' is in no input", eq,
                                id_letter(oids[d]));
            for (int d2 = 0; d2 < d; d2++)
                if (oids[d2] == oids[d])
                    return cpu_fail(e, MINFER_ERR_MODEL,
                                    "equation '%s': output label '%c' appears more than once", eq,
                                    id_letter(oids[d]));
        }
    } else {
        for (int k = 0; k < ell_total; k++)
            oids[on++] = EIN_LETTERS + k;
        for (int l = 0; l < EIN_LETTERS; l++)
            if (used[l] == 1) {
                if (on == CPU_MAX_RANK)
                    return cpu_fail(e, MINFER_ERR_LIMIT, "equation '%s': output rank above %d",
                                    eq, CPU_MAX_RANK);
                oids[on++] = l;
            }
    }
    int in_out[EIN_LABELS] = {0};
    for (int d = 0; d < on; d++)
        in_out[oids[d]] = 1;
    int64_t od[CPU_MAX_RANK];
    for (int d = 0; d < on; d++)
        od[d] = size[oids[d]];
    void *y;
    int32_t dt = in[0]->dtype;
    if ((s = cpu_output(e, 0, dt, on, od, &y)) != MINFER_OK)
        return s;
    size_t nout = (size_t)minfer_kit_numel(on, od);

    /* Step 1: each operand summed over its private labels. Its distinct
     * labels' assignments number at most its elements. */
    for (size_t i = 0; i < nin; i++) {
        reduced *r = &red[i];
        int dl[CPU_MAX_RANK], ndl = 0;
        int64_t dd[CPU_MAX_RANK], strides[CPU_MAX_RANK], dl_stride[CPU_MAX_RANK];
        cpu_strides(in[i]->rank, in[i]->dims, strides);
        for (int d = 0; d < nids[i]; d++) {
            int l = ids[i][d], k = 0;
            while (k < ndl && dl[k] != l)
                k++;
            if (k == ndl) {
                dl[ndl] = l;
                dd[ndl] = in[i]->dims[d];
                dl_stride[ndl++] = 0;
            }
            /* a repeated label steps along every one of its dims */
            dl_stride[k] += strides[d];
        }
        size_t rn = 1, assignments = 1;
        for (int k = 0; k < ndl; k++) {
            assignments *= (size_t)dd[k];
            if (in_out[dl[k]] || (owners[dl[k]] & ~(1u << i))) {
                r->ids[r->n] = dl[k];
                r->dims[r->n++] = dd[k];
                rn *= (size_t)dd[k];
            }
        }
        r->data = cpu_calloc(e->ctx, rn ? rn : 1, sizeof *r->data);
        if (!r->data) {
            s = cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
            goto done;
        }
        const void *x = cpu_data(in[i]);
        for (size_t a = 0; a < assignments; a++) {
            size_t rem = a, off = 0, at = 0, mul = 1;
            int64_t val[EIN_LABELS];
            for (int k = ndl - 1; k >= 0; k--) {
                val[dl[k]] = (int64_t)(rem % (size_t)dd[k]);
                rem /= (size_t)dd[k];
                off += (size_t)(val[dl[k]] * dl_stride[k]);
            }
            for (int k = r->n - 1; k >= 0; k--) {
                at += (size_t)val[r->ids[k]] * mul;
                mul *= (size_t)r->dims[k];
            }
            r->data[at] += cpu_get(x, dt, off);
        }
    }

    /* Step 2: the labels shared by operands and summed away. */
    int sids[EIN_LABELS], sn = 0;
    uint64_t nsum = 1;
    for (int l = 0; l < EIN_LABELS; l++)
        if (used[l] && !in_out[l] && (owners[l] & (owners[l] - 1))) {
            sids[sn++] = l;
            nsum = sat_mul(nsum, (uint64_t)size[l]);
        }
    if ((s = charge(e, sat_mul(sat_mul(nout, nsum), nin))) != MINFER_OK) {
        cpu_fail(e, s, "equation '%s' would take %llu x %llu products of %zu operands, more "
                 "than the run's budget (max_run_elements) allows", eq,
                 (unsigned long long)nout, (unsigned long long)nsum, nin);
        goto done;
    }
    int64_t val[EIN_LABELS];
    for (size_t o = 0; o < nout; o++) {
        size_t rem = o;
        for (int d = on - 1; d >= 0; d--) {
            val[oids[d]] = (int64_t)(rem % (size_t)od[d]);
            rem /= (size_t)od[d];
        }
        double acc = 0;
        for (uint64_t q = 0; q < nsum; q++) {
            uint64_t r2 = q;
            for (int k = sn - 1; k >= 0; k--) {
                val[sids[k]] = (int64_t)(r2 % (uint64_t)size[sids[k]]);
                r2 /= (uint64_t)size[sids[k]];
            }
            double prod = 1;
            for (size_t i = 0; i < nin; i++) {
                const reduced *r = &red[i];
                size_t at = 0;
                for (int k = 0; k < r->n; k++) /* a size-1 ellipsis dim broadcasts */
                    at = at * (size_t)r->dims[k] + (r->dims[k] == 1 ? 0 : (size_t)val[r->ids[k]]);
                prod *= r->data[at];
            }
            acc += prod;
        }
        cpu_set(y, dt, o, acc);
    }
done:
    for (size_t i = 0; i < nin; i++)
        free(red[i].data);
    return s;
}
