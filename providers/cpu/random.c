/*
 * Random generators: RandomUniform, RandomNormal, RandomUniformLike,
 * RandomNormalLike, Multinomial and Bernoulli.
 *
 * Values come from xoshiro256** seeded through splitmix64. With a seed
 * attribute every run of a node draws the same values (the stream is
 * restarted from the seed at each run, so a run does not depend on how
 * many ran before it); without one, each run takes a fresh seed from the
 * clock and the output's address. The draws cannot match another
 * runtime's (numpy's) bit for bit: tests/test_random.c checks shapes,
 * types, ranges and moments instead.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

enum { R_UNIFORM, R_NORMAL, R_MULTINOMIAL, R_BERNOULLI };

typedef struct random_state {
    int kind;
    int like;          /* shape (and default type) from input 0 */
    int32_t dtype;     /* 0: the input's */
    double a, b;       /* low, high (uniform) or mean, scale (normal) */
    int has_seed;
    uint64_t seed;
    int32_t rank;      /* RandomUniform / RandomNormal: the shape attribute */
    int64_t dims[CPU_MAX_RANK];
    int64_t sample_size;
} random_state;

typedef struct rng {
    uint64_t s[4];
} rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(rng *r) {
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

/* Uniform in [0, 1), 53 random bits. */
static double rng_unit(rng *r) {
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Standard normal (Box-Muller; 1 - u keeps the log's argument in (0, 1]). */
static double rng_normal(rng *r) {
    double u = 1.0 - rng_unit(r), v = rng_unit(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

minfer_status cpu_prepare_random(cpu_prep *p) {
    random_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    const char *op = p->node->op_type;
    st->like = strcmp(op, "RandomUniformLike") == 0 || strcmp(op, "RandomNormalLike") == 0;
    if (strcmp(op, "Multinomial") == 0)
        st->kind = R_MULTINOMIAL;
    else if (strcmp(op, "Bernoulli") == 0)
        st->kind = R_BERNOULLI;
    else if (strncmp(op, "RandomNormal", 12) == 0)
        st->kind = R_NORMAL;
    else
        st->kind = R_UNIFORM;
    int like_default = st->like || st->kind == R_BERNOULLI;
    st->dtype = (int32_t)cpu_attr_int(p, "dtype",
                                      st->kind == R_MULTINOMIAL ? MINFER_DTYPE_INT32
                                      : like_default             ? 0
                                                                 : MINFER_DTYPE_FLOAT);
    if (st->kind == R_UNIFORM)
        st->a = cpu_attr_float(p, "low", 0.0f), st->b = cpu_attr_float(p, "high", 1.0f);
    else if (st->kind == R_NORMAL)
        st->a = cpu_attr_float(p, "mean", 0.0f), st->b = cpu_attr_float(p, "scale", 1.0f);
    float seed;
    if (p->ctx->api->attr_float(p->node, "seed", &seed)) {
        uint32_t bits;
        memcpy(&bits, &seed, sizeof bits);
        st->has_seed = 1;
        st->seed = bits;
    }
    if (st->kind == R_MULTINOMIAL) {
        st->sample_size = cpu_attr_int(p, "sample_size", 1);
        if (st->sample_size < 1)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "sample_size must be positive");
        if (st->dtype != MINFER_DTYPE_INT32 && st->dtype != MINFER_DTYPE_INT64)
            return cpu_prep_fail(p, MINFER_ERR_TYPE, "dtype must be int32 or int64");
    } else if (st->kind == R_BERNOULLI) {
        if (st->dtype && !(CPU_T(st->dtype) & CPU_T_ALL))
            return cpu_decline(p, "dtype %s not supported", minfer_elem_name(st->dtype));
    } else if (st->dtype && !cpu_is_float(st->dtype)) {
        return cpu_prep_fail(p, MINFER_ERR_TYPE, "dtype must be a floating type");
    }
    if (!st->like && (st->kind == R_UNIFORM || st->kind == R_NORMAL)) {
        size_t n;
        int found = cpu_attr_ints(p, "shape", st->dims, CPU_MAX_RANK, &n);
        if (found < 0)
            return MINFER_ERR_UNSUPPORTED;
        if (!found)
            return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs the shape attribute");
        for (size_t i = 0; i < n; i++)
            if (st->dims[i] < 0)
                return cpu_prep_fail(p, MINFER_ERR_SHAPE, "shape has a negative dimension");
        st->rank = (int32_t)n;
    } else if (!minfer_kit_input(p->node, 0)) {
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "needs an input");
    }
    return MINFER_OK;
}

minfer_status cpu_compute_random(const cpu_exec *e) {
    const random_state *st = e->state;
    const minfer_tensor_view *x =
        st->like || st->kind >= R_MULTINOMIAL ? cpu_input(e, 0) : NULL;
    if ((st->like || st->kind >= R_MULTINOMIAL) && !x)
        return cpu_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int32_t dtype = st->dtype ? st->dtype : x->dtype;
    if (st->kind <= R_NORMAL && !cpu_is_float(dtype))
        return cpu_fail(e, MINFER_ERR_TYPE, "output must be a floating type");
    rng r;
    if (st->has_seed) {
        rng_seed(&r, st->seed);
    } else {
        struct timespec ts;
        timespec_get(&ts, TIME_UTC);
        rng_seed(&r, (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                         (uint64_t)(uintptr_t)e->args->outputs);
    }
    void *y;
    minfer_status s;
    if (st->kind == R_MULTINOMIAL) {
        if (x->rank != 2 || !cpu_is_float(x->dtype))
            return cpu_fail(e, MINFER_ERR_SHAPE, "input must be [batch, classes] of a float type");
        int64_t B = x->dims[0], C = x->dims[1], od[2] = {B, st->sample_size};
        if ((s = cpu_output(e, 0, dtype, 2, od, &y)) != MINFER_OK)
            return s;
        if (C < 1 && B > 0)
            return cpu_fail(e, MINFER_ERR_SHAPE, "needs at least one class");
        double *cdf = cpu_malloc(e->ctx, (size_t)(C > 0 ? C : 1) * sizeof *cdf);
        if (!cdf)
            return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
        const void *xd = cpu_data(x);
        for (int64_t b = 0; b < B; b++) {
            /* The input holds unnormalized log-probabilities: exp(x - max). */
            double mx = -INFINITY, total = 0;
            for (int64_t c = 0; c < C; c++)
                mx = fmax(mx, cpu_get(xd, x->dtype, (size_t)(b * C + c)));
            for (int64_t c = 0; c < C; c++) {
                total += exp(cpu_get(xd, x->dtype, (size_t)(b * C + c)) - mx);
                cdf[c] = total;
            }
            for (int64_t k = 0; k < st->sample_size; k++) {
                double u = rng_unit(&r) * total;
                int64_t c = 0;
                while (c < C - 1 && cdf[c] <= u)
                    c++;
                cpu_set(y, dtype, (size_t)(b * st->sample_size + k), (double)c);
            }
        }
        free(cdf);
        return MINFER_OK;
    }
    int32_t rank = x ? x->rank : st->rank;
    const int64_t *dims = x ? x->dims : st->dims;
    if ((s = cpu_output(e, 0, dtype, rank, dims, &y)) != MINFER_OK)
        return s;
    size_t n = (size_t)minfer_kit_numel(rank, dims);
    for (size_t i = 0; i < n; i++) {
        double v;
        if (st->kind == R_UNIFORM) {
            /* Rounding to a narrow type can reach high: draw again. */
            do {
                v = st->a + (st->b - st->a) * rng_unit(&r);
                cpu_set(y, dtype, i, v);
            } while (st->b > st->a && cpu_get(y, dtype, i) >= st->b);
            continue;
        } else if (st->kind == R_NORMAL)
            v = st->a + st->b * rng_normal(&r);
        else
            v = rng_unit(&r) < cpu_get(cpu_data(x), x->dtype, i) ? 1.0 : 0.0;
        cpu_set(y, dtype, i, v);
    }
    return MINFER_OK;
}
