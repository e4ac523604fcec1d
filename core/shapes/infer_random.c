/*
 * Random generators: RandomUniform/Normal (and -Like), Bernoulli, Multinomial.
 */
#include "shapes/infer_rules.h"

/* RandomUniform, RandomNormal: the shape attribute, dtype (float by default). */
minfer_status si_random(ictx *c) {
    int_list s = {0};
    minfer_status st = si_attr_list(c, "shape", &s);
    if (st)
        return st;
    if (s.state == LIST_ABSENT)
        return si_fail(c, MINFER_ERR_MODEL, "attribute 'shape' is missing");
    if (s.n > MINFER_MAX_RANK)
        return si_fail(c, MINFER_ERR_LIMIT, "shape has %zu dims, more than %d", s.n, MINFER_MAX_RANK);
    for (size_t i = 0; i < s.n; i++)
        if (s.v[i] < 0)
            return si_fail(c, MINFER_ERR_SHAPE, "shape has negative dim %lld", (long long)s.v[i]);
    int32_t dt;
    if ((st = si_dtype_attr(c, "dtype", MINFER_DTYPE_FLOAT, &dt)))
        return st;
    return si_set_out(c, 0, dt, (int32_t)s.n, s.v);
}

/* RandomUniformLike, RandomNormalLike, Bernoulli: input 0's shape; dtype,
 * else input 0's type. */
minfer_status si_random_like(ictx *c) {
    int32_t dt;
    minfer_status st = si_dtype_attr(c, "dtype", 0, &dt);
    return st ? st : si_shape_of_x(c, dt);
}

/* Multinomial: [batch, classes] -> [batch, sample_size], int32 by default. */
minfer_status si_multinomial(ictx *c) {
    const minfer_tensor_view *x;
    int64_t d[2] = {-1, mf_attr_int(c->node, "sample_size", 1)};
    minfer_status st = si_require(c, 0, &x);
    if (st)
        return st;
    if (x->rank >= 0 && x->rank != 2)
        return si_fail(c, MINFER_ERR_SHAPE, "input must be 2-D, not rank %d", (int)x->rank);
    if (d[1] < 1)
        return si_fail(c, MINFER_ERR_MODEL, "sample_size must be positive");
    if (x->rank == 2)
        d[0] = x->dims[0];
    int32_t dt;
    if ((st = si_dtype_attr(c, "dtype", MINFER_DTYPE_INT32, &dt)))
        return st;
    return si_set_out(c, 0, dt, 2, d);
}
