/*
 * The optimizer's transformer ops (docs/fused-ops.md), so that a graph the
 * optimizer fused stays on the device: minfer::RMSNormalization,
 * minfer::Attention and minfer::RotaryEmbedding (kernels/fused.cl).
 *
 * RMSNormalization: one kernel, a row per work-item, over the trailing
 * axes from `axis` (as LayerNormalization in norm.c); Scale of that many
 * elements or one, uploaded at prepare when constant.
 *
 * Attention, Y = Softmax(Q @ KT * scale + mask) @ V with MatMul's
 * broadcasting over the leading axes (grouped-query K/V with a head axis
 * of 1 included) and a mask that broadcasts to the scores without growing
 * them, as the CPU provider's (providers/cpu/fused.c), in three launches
 * through a float workspace of batches x Sq x Sk (asked for at prepare):
 *  1. attn_scores, one score per work-item (grid Sk, Sq, batches);
 *  2. attn_softmax, one row per work-item, in place;
 *  3. attn_pv, one output per work-item (grid Dv, Sq, batches).
 * The workspace stays float with fp16=1 (scores before the softmax need
 * the range); inputs and output are stored as the provider stores floats.
 */
#include <string.h>

#include "ocl.h"

/* ---- RMSNormalization ------------------------------------------------------- */

typedef struct rms_state {
    ocl_state_head head; /* bufs[0]: Scale, when constant */
    int64_t axis;
    float eps;
} rms_state;

minfer_status ocl_prepare_rmsnorm(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = ocl_in_desc(n, 0), *sc = ocl_in_desc(n, 1);
    if (!x || !sc)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs X and Scale");
    minfer_status s;
    for (size_t i = 0; i < 2; i++)
        if ((s = ocl_need_float(p, i)) || (s = ocl_check_size(p, ocl_in_desc(n, i))))
            return s;
    rms_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->axis = ocl_attr_int(p, "axis", -1);
    st->eps = ocl_attr_float(p, "epsilon", 1e-5f);
    if (x->rank >= 0) {
        int axis = minfer_kit_axis(st->axis, x->rank);
        if (axis < 0)
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "axis %lld out of range for rank %d",
                                 (long long)st->axis, (int)x->rank);
        int64_t cols = ocl_numel(x->rank - axis, x->dims + axis);
        int64_t ns = sc->rank >= 0 ? ocl_numel(sc->rank, sc->dims) : -1;
        if (cols >= 0 && ns >= 0 && ns != cols && ns != 1)
            return ocl_decline(p, "Scale has %lld elements, not the %lld of the normalized axes",
                               (long long)ns, (long long)cols);
    }
    if (p->prep && sc->const_data &&
        (s = ocl_upload_floats(p, 0, sc->const_data, sc->const_nbytes / sizeof(float))))
        return s;
    return MINFER_OK;
}

minfer_status ocl_execute_rmsnorm(const ocl_exec *e) {
    const rms_state *st = e->state;
    const minfer_tensor_view *x = ocl_input(e, 0), *sc = ocl_input(e, 1);
    if (!x || !sc)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    int axis = minfer_kit_axis(st->axis, x->rank);
    if (axis < 0)
        return ocl_fail(e, MINFER_ERR_SHAPE, "axis %lld out of range for rank %d",
                        (long long)st->axis, (int)x->rank);
    int64_t cols = ocl_numel(x->rank - axis, x->dims + axis);
    int64_t ns = ocl_numel(sc->rank, sc->dims);
    if (ns != cols && ns != 1)
        return ocl_fail(e, MINFER_ERR_SHAPE, "Scale has %lld elements, not %lld or 1",
                        (long long)ns, (long long)cols);
    cl_mem xb, sb, yb;
    cl_int xo, so, yo, scale_1 = ns == 1 && cols != 1;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    ocl_in_buf(e, 1, 0, &sb, &so);
    minfer_status s = ocl_output(e, 0, x->rank, x->dims, &yb, &yo);
    if (s)
        return s;
    cl_int rows = (cl_int)ocl_numel(axis, x->dims), colsi = (cl_int)cols;
    float eps = st->eps;
    if (rows == 0 || cols == 0)
        return MINFER_OK;
    if ((s = ocl_set_args(e, OCL_K_rmsnorm, 10, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(sb),
                          OCL_ARG(so), OCL_ARG(scale_1), OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(rows),
                          OCL_ARG(colsi), OCL_ARG(eps))))
        return s;
    return ocl_launch1(e, OCL_K_rmsnorm, (size_t)rows);
}

/* ---- Attention ------------------------------------------------------------- */

/* The attn_lead struct of kernels/fused.cl (passed by value). */
typedef struct ocl_attn_lead {
    cl_int rank;
    cl_int d[8];
    cl_int q[8], k[8], v[8], m[8];
} ocl_attn_lead;

typedef struct attn_state {
    ocl_state_head head;
    float scale;
} attn_state;

/* The shapes of one attention: the broadcast leading axes, Sq, D, Sk, Dv,
 * the mask's strides, and the element strides of every input along the
 * leading axes. */
typedef struct attn_shape {
    int32_t br;
    int64_t bd[OCL_MAX_RANK];
    int64_t sq, d, sk, dv, batches;
    int64_t mrow, mcol;
    ocl_attn_lead lead;
} attn_shape;

/* Broadcasts the leading axes a[0..ra) and b[0..rb) (right-aligned) into
 * out[0..*ro); 0 when they do not broadcast. */
static int broadcast(int32_t ra, const int64_t *a, int32_t rb, const int64_t *b, int32_t *ro,
                     int64_t *out) {
    int32_t r = ra > rb ? ra : rb;
    for (int32_t i = 0; i < r; i++) {
        int64_t da = i - (r - ra) >= 0 ? a[i - (r - ra)] : 1;
        int64_t db = i - (r - rb) >= 0 ? b[i - (r - rb)] : 1;
        if (da != db && da != 1 && db != 1)
            return 0;
        out[i] = da == 1 ? db : da;
    }
    *ro = r;
    return 1;
}

/* Strides of t's leading axes (all but its last two, of inner elements
 * each) aligned to the br broadcast axes: 0 where t broadcasts. */
static void lead_strides(int32_t rank, const int64_t *dims, int32_t br, int64_t inner,
                         cl_int *out) {
    int32_t lead = rank - 2;
    int64_t stride = inner;
    for (int32_t d = br - 1; d >= 0; d--) {
        int32_t td = d - (br - lead);
        int64_t dim = td >= 0 ? dims[td] : 1;
        out[d] = dim == 1 ? 0 : (cl_int)stride;
        stride *= dim;
    }
}

/* Works out the shapes from Q, KT, V and the mask (m NULL when absent);
 * a message in why (of size) and 0 when they do not fit together. */
static int attn_shapes(const int64_t *qd, int32_t qr, const int64_t *kd, int32_t kr,
                       const int64_t *vd, int32_t vr, const int64_t *md, int32_t mr, int has_mask,
                       attn_shape *a, char *why, size_t size) {
    memset(a, 0, sizeof *a);
    if (qr < 2 || kr < 2 || vr < 2) {
        snprintf(why, size, "Q, KT and V need rank >= 2");
        return 0;
    }
    a->sq = qd[qr - 2];
    a->d = qd[qr - 1];
    a->sk = kd[kr - 1];
    a->dv = vd[vr - 1];
    if (kd[kr - 2] != a->d || vd[vr - 2] != a->sk) {
        snprintf(why, size, "Q, KT and V inner dimensions do not match");
        return 0;
    }
    if (!broadcast(qr - 2, qd, kr - 2, kd, &a->br, a->bd) ||
        !broadcast(a->br, a->bd, vr - 2, vd, &a->br, a->bd)) {
        snprintf(why, size, "leading dimensions do not broadcast");
        return 0;
    }
    if (a->br > 8) {
        snprintf(why, size, "more than 8 leading axes");
        return 0;
    }
    a->batches = ocl_numel(a->br, a->bd);
    a->lead.rank = a->br;
    for (int32_t d = 0; d < a->br; d++)
        a->lead.d[d] = (cl_int)a->bd[d];
    lead_strides(qr, qd, a->br, a->sq * a->d, a->lead.q);
    lead_strides(kr, kd, a->br, a->d * a->sk, a->lead.k);
    lead_strides(vr, vd, a->br, a->sk * a->dv, a->lead.v);
    if (has_mask) {
        /* Right-aligned to [lead..., Sq, Sk]; each dim 1 or the scores'. */
        int64_t full[OCL_MAX_RANK + 2];
        int32_t r = a->br + 2;
        if (mr > r) {
            snprintf(why, size, "mask has a higher rank than the scores");
            return 0;
        }
        for (int32_t d = 0; d < r; d++)
            full[d] = d < r - mr ? 1 : md[d - (r - mr)];
        for (int32_t d = 0; d < a->br; d++)
            if (full[d] != 1 && full[d] != a->bd[d]) {
                snprintf(why, size, "mask does not broadcast to the scores");
                return 0;
            }
        if ((full[a->br] != 1 && full[a->br] != a->sq) ||
            (full[a->br + 1] != 1 && full[a->br + 1] != a->sk)) {
            snprintf(why, size, "mask does not broadcast to the scores");
            return 0;
        }
        a->mcol = full[a->br + 1] == 1 ? 0 : 1;
        a->mrow = full[a->br] == 1 ? 0 : full[a->br + 1];
        lead_strides(r, full, a->br, full[a->br] * full[a->br + 1], a->lead.m);
    }
    /* The kernels index with 32-bit ints: the workspace too. */
    int64_t ws;
    if (a->batches < 0 || minfer_dims_numel((int64_t[]){a->batches, a->sq, a->sk}, 3, &ws) ||
        ws > INT32_MAX / 2) {
        snprintf(why, size, "scores of %lld x %lld x %lld elements exceed 32-bit indexing",
                 (long long)a->batches, (long long)a->sq, (long long)a->sk);
        return 0;
    }
    return 1;
}

static int known(const minfer_value_desc *d) {
    if (!d || d->rank < 0)
        return 0;
    for (int32_t i = 0; i < d->rank; i++)
        if (d->dims[i] < 0)
            return 0;
    return 1;
}

minfer_status ocl_prepare_attention(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *q = ocl_in_desc(n, 0), *kt = ocl_in_desc(n, 1),
                            *v = ocl_in_desc(n, 2), *m = ocl_in_desc(n, 3);
    if (!q || !kt || !v)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs inputs Q, KT and V");
    minfer_status s;
    for (size_t i = 0; i < 4; i++)
        if ((s = ocl_need_float(p, i)) || (s = ocl_check_size(p, ocl_in_desc(n, i))))
            return s;
    for (size_t i = 0; i < 3; i++) {
        const minfer_value_desc *d = ocl_in_desc(n, i);
        if (d->rank >= 0 && d->rank < 2)
            return ocl_prep_fail(p, MINFER_ERR_MODEL, "input %zu has rank %d (>= 2 needed)", i,
                                 (int)d->rank);
    }
    attn_state *st = ocl_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->scale = ocl_attr_float(p, "scale", 1.0f);
    if (!known(q) || !known(kt) || !known(v) || (m && !known(m))) {
        if (!p->prep)
            return MINFER_OK; /* the shapes come with the plan */
        return ocl_decline(p, "shapes not known at prepare (the scores' workspace is sized then)");
    }
    attn_shape a;
    char why[160];
    if (!attn_shapes(q->dims, q->rank, kt->dims, kt->rank, v->dims, v->rank,
                     m ? m->dims : NULL, m ? m->rank : 0, m != NULL, &a, why, sizeof why))
        return ocl_decline(p, "%s", why);
    if (p->prep)
        p->prep->workspace_bytes = (size_t)(a.batches * a.sq * a.sk) * sizeof(float);
    return MINFER_OK;
}

minfer_status ocl_execute_attention(const ocl_exec *e) {
    const attn_state *st = e->state;
    const minfer_tensor_view *q = ocl_input(e, 0), *kt = ocl_input(e, 1), *v = ocl_input(e, 2),
                             *m = ocl_input(e, 3);
    if (!q || !kt || !v)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    attn_shape a;
    char why[160];
    if (!attn_shapes(q->dims, q->rank, kt->dims, kt->rank, v->dims, v->rank, m ? m->dims : NULL,
                     m ? m->rank : 0, m != NULL, &a, why, sizeof why))
        return ocl_fail(e, MINFER_ERR_SHAPE, "%s", why);
    int64_t od[OCL_MAX_RANK + 2];
    memcpy(od, a.bd, (size_t)a.br * sizeof od[0]);
    od[a.br] = a.sq;
    od[a.br + 1] = a.dv;
    cl_mem qb, kb, vb, mb, yb;
    cl_int qo, ko, vo, mo = 0, yo;
    ocl_in_buf(e, 0, -1, &qb, &qo);
    ocl_in_buf(e, 1, -1, &kb, &ko);
    ocl_in_buf(e, 2, -1, &vb, &vo);
    if (m)
        ocl_in_buf(e, 3, -1, &mb, &mo);
    else
        mb = qb; /* not read */
    minfer_status s = ocl_output(e, 0, a.br + 2, od, &yb, &yo);
    if (s)
        return s;
    if (!a.batches || !a.sq || !a.dv)
        return MINFER_OK;
    if (!a.sk) { /* no keys: P V with an empty P, all zeros as on the CPU provider */
        size_t es = ocl_esize(e->ctx, MINFER_DTYPE_FLOAT);
        cl_uint zero = 0;
        return ocl_fill(e, yb, (size_t)yo * es, &zero, es, (size_t)(a.batches * a.sq * a.dv) * es);
    }
    size_t need = (size_t)(a.batches * a.sq * a.sk) * sizeof(float);
    const minfer_exec_args *args = e->args;
    if (args->workspace_bytes < need || !args->workspace ||
        args->workspace_offset % sizeof(float))
        return ocl_fail(e, MINFER_ERR_RUNTIME, "workspace of %zu bytes, %zu needed",
                        args->workspace_bytes, need);
    cl_mem wb = (cl_mem)args->workspace;
    cl_int wo = (cl_int)(args->workspace_offset / sizeof(float));
    cl_int has_mask = m != NULL, mrow = (cl_int)a.mrow, mcol = (cl_int)a.mcol;
    cl_int sq = (cl_int)a.sq, sk = (cl_int)a.sk, dd = (cl_int)a.d, dv = (cl_int)a.dv,
           nb = (cl_int)a.batches, rows = (cl_int)(a.batches * a.sq);
    float scale = st->scale;
    size_t g1[3] = {(size_t)a.sk, (size_t)a.sq, (size_t)a.batches};
    if ((s = ocl_set_args(e, OCL_K_attn_scores, 17, OCL_ARG(qb), OCL_ARG(qo), OCL_ARG(kb),
                          OCL_ARG(ko), OCL_ARG(mb), OCL_ARG(mo), OCL_ARG(has_mask),
                          OCL_ARG(mrow), OCL_ARG(mcol), OCL_ARG(a.lead), OCL_ARG(wb),
                          OCL_ARG(wo), OCL_ARG(sq), OCL_ARG(sk), OCL_ARG(dd), OCL_ARG(nb),
                          OCL_ARG(scale))) ||
        (s = ocl_launch(e, OCL_K_attn_scores, 3, g1, 0)))
        return s;
    if ((s = ocl_set_args(e, OCL_K_attn_softmax, 4, OCL_ARG(wb), OCL_ARG(wo), OCL_ARG(rows),
                          OCL_ARG(sk))) ||
        (s = ocl_launch1(e, OCL_K_attn_softmax, (size_t)rows)))
        return s;
    size_t g3[3] = {(size_t)a.dv, (size_t)a.sq, (size_t)a.batches};
    if ((s = ocl_set_args(e, OCL_K_attn_pv, 11, OCL_ARG(wb), OCL_ARG(wo), OCL_ARG(vb),
                          OCL_ARG(vo), OCL_ARG(a.lead), OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(sq),
                          OCL_ARG(sk), OCL_ARG(dv), OCL_ARG(nb))))
        return s;
    return ocl_launch(e, OCL_K_attn_pv, 3, g3, 0);
}

/* ---- RotaryEmbedding ----------------------------------------------------------- */

/* minfer::RotaryEmbedding(X, Cos, Sin) (fuse_rotary: LLaMA's
 * apply_rotary_pos_emb), Y = X * Cos + Concat(-x2, x1) * Sin over X's last
 * axis, split in halves x1, x2; Cos and Sin broadcast to X without growing
 * it. One kernel, an element per work-item. */

/* Strides of t (right-aligned into X's rank) over X's leading axes into
 * st, 0 where t broadcasts, and over the last axis into *col (0 or 1); 0
 * when t does not broadcast to X without growing it. */
static int rot_strides(int32_t tr, const int64_t *td, int32_t xr, const int64_t *xd, cl_int *st,
                       cl_int *col) {
    if (tr > xr)
        return 0;
    int32_t pad = xr - tr;
    int64_t stride = 1;
    for (int32_t a = xr - 1; a >= 0; a--) {
        int64_t t = a >= pad ? td[a - pad] : 1;
        if (t != 1 && t != xd[a])
            return 0;
        cl_int s = t == 1 ? 0 : (cl_int)stride;
        if (a == xr - 1)
            *col = s ? 1 : 0;
        else
            st[a] = s;
        stride *= t;
    }
    return 1;
}

minfer_status ocl_prepare_rotary(ocl_prep *p) {
    const minfer_node_desc *n = p->node;
    const minfer_value_desc *x = ocl_in_desc(n, 0), *c = ocl_in_desc(n, 1),
                            *s = ocl_in_desc(n, 2);
    if (!x || !c || !s)
        return ocl_prep_fail(p, MINFER_ERR_MODEL, "needs inputs X, Cos and Sin");
    minfer_status st;
    for (size_t i = 0; i < 3; i++)
        if ((st = ocl_need_float(p, i)) || (st = ocl_check_size(p, ocl_in_desc(n, i))))
            return st;
    if (x->rank >= 0 && (x->rank < 1 || (x->dims[x->rank - 1] >= 0 && x->dims[x->rank - 1] % 2)))
        return ocl_decline(p, "X needs an even last dimension");
    if (!ocl_state(p, sizeof(ocl_state_head)))
        return MINFER_ERR_NOMEM;
    return MINFER_OK;
}

minfer_status ocl_execute_rotary(const ocl_exec *e) {
    const minfer_tensor_view *x = ocl_input(e, 0), *c = ocl_input(e, 1), *sn = ocl_input(e, 2);
    if (!x || !c || !sn)
        return ocl_fail(e, MINFER_ERR_RUNTIME, "missing input");
    if (x->rank < 1 || x->dims[x->rank - 1] % 2)
        return ocl_fail(e, MINFER_ERR_SHAPE, "X needs an even last dimension (rank %d)",
                        (int)x->rank);
    ocl_shape8 l;
    memset(&l, 0, sizeof l);
    cl_int ccol = 0, scol = 0;
    l.rank = x->rank - 1;
    for (int32_t a = 0; a < l.rank; a++)
        l.d[a] = (cl_int)x->dims[a];
    if (!rot_strides(c->rank, c->dims, x->rank, x->dims, l.sa, &ccol) ||
        !rot_strides(sn->rank, sn->dims, x->rank, x->dims, l.sb, &scol))
        return ocl_fail(e, MINFER_ERR_SHAPE, "Cos and Sin must broadcast to X without growing it");
    cl_mem xb, cb, sb, yb;
    cl_int xo, co, so, yo;
    ocl_in_buf(e, 0, -1, &xb, &xo);
    ocl_in_buf(e, 1, -1, &cb, &co);
    ocl_in_buf(e, 2, -1, &sb, &so);
    minfer_status s = ocl_output(e, 0, x->rank, x->dims, &yb, &yo);
    if (s)
        return s;
    cl_int rows = (cl_int)ocl_numel(l.rank, x->dims), d = (cl_int)x->dims[x->rank - 1];
    if (rows == 0 || d == 0)
        return MINFER_OK;
    if ((s = ocl_set_args(e, OCL_K_rotary, 13, OCL_ARG(xb), OCL_ARG(xo), OCL_ARG(cb),
                          OCL_ARG(co), OCL_ARG(sb), OCL_ARG(so), OCL_ARG(l), OCL_ARG(ccol),
                          OCL_ARG(scol), OCL_ARG(yb), OCL_ARG(yo), OCL_ARG(rows), OCL_ARG(d))))
        return s;
    size_t g[2] = {(size_t)d, (size_t)rows};
    return ocl_launch(e, OCL_K_rotary, 2, g, 0);
}
