/*
 * Detection ops: NonMaxSuppression and RoiAlign. Computed in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

/* ---- NonMaxSuppression ------------------------------------------------------
 * Per (batch, class): candidates with score > score_threshold, by score
 * (ties: lower box index first); greedily keep the best and drop every
 * later candidate whose IoU with a kept box exceeds iou_threshold, up to
 * max_output_boxes_per_class. Output rows [batch, class, box]. */

typedef struct nms_state {
    int center_point_box;
} nms_state;

minfer_status cpu_prepare_nms(cpu_prep *p) {
    nms_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    st->center_point_box = (int)cpu_attr_int(p, "center_point_box", 0);
    return MINFER_OK;
}

typedef struct nms_cand {
    double score;
    int64_t box;
} nms_cand;

static int by_score(const void *a, const void *b) {
    const nms_cand *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    return x->box < y->box ? -1 : x->box > y->box;
}

/* Box corners (y1, x1, y2, x2), ordered, from either encoding. */
static void corners(const void *d, int32_t dt, size_t at, int center, double *c) {
    double v[4];
    for (int i = 0; i < 4; i++)
        v[i] = cpu_get(d, dt, at + (size_t)i);
    if (center) { /* x_center, y_center, width, height */
        c[0] = v[1] - v[3] / 2, c[2] = v[1] + v[3] / 2;
        c[1] = v[0] - v[2] / 2, c[3] = v[0] + v[2] / 2;
    } else {
        c[0] = fmin(v[0], v[2]), c[2] = fmax(v[0], v[2]);
        c[1] = fmin(v[1], v[3]), c[3] = fmax(v[1], v[3]);
    }
}

static double iou(const double *a, const double *b) {
    double ih = fmin(a[2], b[2]) - fmax(a[0], b[0]), iw = fmin(a[3], b[3]) - fmax(a[1], b[1]);
    if (ih <= 0 || iw <= 0)
        return 0;
    double inter = ih * iw;
    double uni = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter;
    return uni > 0 ? inter / uni : 0;
}

minfer_status cpu_compute_nms(const cpu_exec *e) {
    const nms_state *st = e->state;
    const minfer_tensor_view *bx = cpu_input(e, 0), *sc = cpu_input(e, 1),
                             *mv = cpu_input(e, 2), *iv = cpu_input(e, 3), *tv = cpu_input(e, 4);
    minfer_status s = MINFER_OK;
    if (!bx || !sc || bx->rank != 3 || sc->rank != 3 || bx->dims[2] != 4 ||
        bx->dims[0] != sc->dims[0] || bx->dims[1] != sc->dims[2])
        return cpu_fail(e, MINFER_ERR_SHAPE, "boxes must be [B, N, 4] and scores [B, C, N]");
    int64_t maxout = 0;
    double iou_t = 0, score_t = -INFINITY;
    size_t cnt;
    if (mv && minfer_kit_numel(mv->rank, mv->dims) > 0 &&
        (s = cpu_read_ints(e, mv, "max_output_boxes_per_class", &maxout, 1, &cnt)) != MINFER_OK)
        return s;
    if (iv && minfer_kit_numel(iv->rank, iv->dims) > 0 &&
        (s = cpu_read_scalar(e, iv, "iou_threshold", &iou_t)) != MINFER_OK)
        return s;
    if (tv && minfer_kit_numel(tv->rank, tv->dims) > 0 &&
        (s = cpu_read_scalar(e, tv, "score_threshold", &score_t)) != MINFER_OK)
        return s;
    size_t B = (size_t)bx->dims[0], N = (size_t)bx->dims[1], C = (size_t)sc->dims[1];
    if (maxout < 0)
        maxout = 0;
    nms_cand *cand = cpu_malloc(e->ctx, (N ? N : 1) * sizeof *cand);
    double *box = cpu_malloc(e->ctx, (N ? N : 1) * 4 * sizeof *box);
    int64_t *sel = cpu_malloc(e->ctx, (B * C * N + 1) * 3 * sizeof *sel);
    if (!cand || !box || !sel) {
        s = cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
        goto done;
    }
    size_t nsel = 0;
    for (size_t b = 0; b < B; b++) {
        for (size_t i = 0; i < N; i++)
            corners(cpu_data(bx), bx->dtype, (b * N + i) * 4, st->center_point_box, box + 4 * i);
        for (size_t c = 0; c < C; c++) {
            size_t nc = 0, kept_here = 0, first = nsel;
            for (size_t i = 0; i < N; i++) {
                double v = cpu_get(cpu_data(sc), sc->dtype, (b * C + c) * N + i);
                if (v > score_t)
                    cand[nc++] = (nms_cand){v, (int64_t)i};
            }
            qsort(cand, nc, sizeof *cand, by_score);
            for (size_t k = 0; k < nc && (int64_t)kept_here < maxout; k++) {
                int keep = 1;
                for (size_t j = first; j < nsel && keep; j++)
                    if (iou(box + 4 * cand[k].box, box + 4 * sel[3 * j + 2]) > iou_t)
                        keep = 0;
                if (!keep)
                    continue;
                sel[3 * nsel] = (int64_t)b;
                sel[3 * nsel + 1] = (int64_t)c;
                sel[3 * nsel + 2] = cand[k].box;
                nsel++;
                kept_here++;
            }
        }
    }
    int64_t od[2] = {(int64_t)nsel, 3};
    void *y;
    if ((s = cpu_output(e, 0, MINFER_DTYPE_INT64, 2, od, &y)) != MINFER_OK)
        goto done;
    if (nsel)
        memcpy(y, sel, nsel * 3 * sizeof *sel);
done:
    free(sel);
    free(box);
    free(cand);
    return s;
}

/* ---- RoiAlign ----------------------------------------------------------------
 * As ONNX Runtime computes it: each output bin averages (or maxes) a grid
 * of bilinear samples; samples more than one pixel outside the map count 0. */

typedef struct roi_state {
    int max_mode, half_pixel;
    int64_t oh, ow, ratio;
    float scale;
} roi_state;

minfer_status cpu_prepare_roialign(cpu_prep *p) {
    roi_state *st = cpu_state(p, sizeof *st);
    if (!st)
        return MINFER_ERR_NOMEM;
    const char *mode = cpu_attr_str(p, "mode", "avg");
    if (strcmp(mode, "avg") && strcmp(mode, "max"))
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "unknown mode '%s'", mode);
    st->max_mode = strcmp(mode, "max") == 0;
    const char *ct = cpu_attr_str(p, "coordinate_transformation_mode",
                                  p->since >= 16 ? "half_pixel" : "output_half_pixel");
    st->half_pixel = strcmp(ct, "half_pixel") == 0;
    st->oh = cpu_attr_int(p, "output_height", 1);
    st->ow = cpu_attr_int(p, "output_width", 1);
    st->ratio = cpu_attr_int(p, "sampling_ratio", 0);
    st->scale = cpu_attr_float(p, "spatial_scale", 1.0f);
    if (st->oh < 1 || st->ow < 1 || st->ratio < 0)
        return cpu_prep_fail(p, MINFER_ERR_MODEL, "bad output size or sampling_ratio");
    return MINFER_OK;
}

minfer_status cpu_compute_roialign(const cpu_exec *e) {
    const roi_state *st = e->state;
    const minfer_tensor_view *x = cpu_input(e, 0), *rois = cpu_input(e, 1), *bi = cpu_input(e, 2);
    if (!x || !rois || !bi || x->rank != 4 || rois->rank != 2 || rois->dims[1] != 4 ||
        minfer_kit_numel(bi->rank, bi->dims) != rois->dims[0] || !cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "X [N,C,H,W], rois [R,4], batch_indices [R]");
    int64_t R = rois->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    int64_t od[4] = {R, C, st->oh, st->ow};
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, 4, od, &y);
    if (s)
        return s;
    const void *xd = cpu_data(x), *rd = cpu_data(rois);
    double off = st->half_pixel ? 0.5 : 0;
    for (int64_t r = 0; r < R; r++) {
        int64_t n = (int64_t)cpu_get(cpu_data(bi), bi->dtype, (size_t)r);
        if (n < 0 || n >= x->dims[0])
            return cpu_fail(e, MINFER_ERR_RUNTIME, "batch index out of range");
        double x1 = cpu_get(rd, rois->dtype, (size_t)r * 4) * st->scale - off;
        double y1 = cpu_get(rd, rois->dtype, (size_t)r * 4 + 1) * st->scale - off;
        double x2 = cpu_get(rd, rois->dtype, (size_t)r * 4 + 2) * st->scale - off;
        double y2 = cpu_get(rd, rois->dtype, (size_t)r * 4 + 3) * st->scale - off;
        double rw = x2 - x1, rh = y2 - y1;
        if (!st->half_pixel) {
            rw = fmax(rw, 1.0);
            rh = fmax(rh, 1.0);
        }
        double bh = rh / (double)st->oh, bw = rw / (double)st->ow;
        int64_t gh = st->ratio > 0 ? st->ratio : (int64_t)ceil(rh / (double)st->oh);
        int64_t gw = st->ratio > 0 ? st->ratio : (int64_t)ceil(rw / (double)st->ow);
        if (gh < 0 || gw < 0 || gh > 1 << 16 || gw > 1 << 16)
            return cpu_fail(e, MINFER_ERR_RUNTIME, "roi sampling grid out of range");
        double count = (double)(gh * gw > 1 ? gh * gw : 1);
        for (int64_t c = 0; c < C; c++) {
            size_t plane = (size_t)((n * C + c) * H * W);
            for (int64_t ph = 0; ph < st->oh; ph++)
                for (int64_t pw = 0; pw < st->ow; pw++) {
                    double acc = 0, mx = -INFINITY;
                    int any = 0;
                    for (int64_t iy = 0; iy < gh; iy++)
                        for (int64_t ix = 0; ix < gw; ix++) {
                            double yy = y1 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                            double xx = x1 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                            double v[4] = {0, 0, 0, 0}, w[4] = {0, 0, 0, 0};
                            if (!(yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)) {
                                yy = fmax(yy, 0);
                                xx = fmax(xx, 0);
                                int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh2, xh2;
                                if (yl >= H - 1)
                                    yh2 = yl = H - 1, yy = (double)yl;
                                else
                                    yh2 = yl + 1;
                                if (xl >= W - 1)
                                    xh2 = xl = W - 1, xx = (double)xl;
                                else
                                    xh2 = xl + 1;
                                double ly = yy - (double)yl, lx = xx - (double)xl;
                                w[0] = (1 - ly) * (1 - lx), w[1] = (1 - ly) * lx;
                                w[2] = ly * (1 - lx), w[3] = ly * lx;
                                v[0] = cpu_get(xd, x->dtype, plane + (size_t)(yl * W + xl));
                                v[1] = cpu_get(xd, x->dtype, plane + (size_t)(yl * W + xh2));
                                v[2] = cpu_get(xd, x->dtype, plane + (size_t)(yh2 * W + xl));
                                v[3] = cpu_get(xd, x->dtype, plane + (size_t)(yh2 * W + xh2));
                            }
                            if (st->max_mode) {
                                for (int k = 0; k < 4; k++)
                                    mx = fmax(mx, w[k] * v[k]);
                                any = 1;
                            } else {
                                acc += w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
                            }
                        }
                    size_t at = (size_t)(((r * C + c) * st->oh + ph) * st->ow + pw);
                    cpu_set(y, x->dtype, at, st->max_mode ? (any ? mx : 0) : acc / count);
                }
        }
    }
    return MINFER_OK;
}

/* ---- Det ----------------------------------------------------------------------
 * LU decomposition with partial pivoting, per matrix of [..., M, M]. */

minfer_status cpu_prepare_det(cpu_prep *p) {
    (void)p;
    return MINFER_OK;
}

minfer_status cpu_compute_det(const cpu_exec *e) {
    const minfer_tensor_view *x = cpu_input(e, 0);
    if (!x || x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2] || !cpu_is_float(x->dtype))
        return cpu_fail(e, MINFER_ERR_SHAPE, "input must be float [..., M, M]");
    void *y;
    minfer_status s = cpu_output(e, 0, x->dtype, x->rank - 2, x->dims, &y);
    if (s)
        return s;
    size_t M = (size_t)x->dims[x->rank - 1], mats = (size_t)minfer_kit_numel(x->rank - 2, x->dims);
    double *a = cpu_malloc(e->ctx, (M * M + 1) * sizeof *a);
    if (!a)
        return cpu_fail(e, MINFER_ERR_NOMEM, "out of memory");
    for (size_t m = 0; m < mats; m++) {
        for (size_t i = 0; i < M * M; i++)
            a[i] = cpu_get(cpu_data(x), x->dtype, m * M * M + i);
        double det = 1;
        for (size_t k = 0; k < M && det != 0; k++) {
            size_t piv = k;
            for (size_t i = k + 1; i < M; i++)
                if (fabs(a[i * M + k]) > fabs(a[piv * M + k]))
                    piv = i;
            if (a[piv * M + k] == 0) {
                det = 0;
                break;
            }
            if (piv != k) {
                for (size_t j = 0; j < M; j++) {
                    double t = a[k * M + j];
                    a[k * M + j] = a[piv * M + j];
                    a[piv * M + j] = t;
                }
                det = -det;
            }
            det *= a[k * M + k];
            for (size_t i = k + 1; i < M; i++) {
                double f = a[i * M + k] / a[k * M + k];
                for (size_t j = k; j < M; j++)
                    a[i * M + j] -= f * a[k * M + j];
            }
        }
        cpu_set(y, x->dtype, m, det);
    }
    free(a);
    return MINFER_OK;
}
