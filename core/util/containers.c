/*
 * Sequences and optionals: the containers behind non-tensor ONNX values,
 * and their public accessors. Their .pb formats are load/values.c.
 *
 * A container is a minfer_tensor whose view.kind says what it is; it owns
 * its items. Containers are immutable once handed to a run: the sequence
 * ops build new ones (core/exec/control.c).
 */
#include <stdlib.h>
#include <string.h>

#include "util/internal.h"

static minfer_status new_container(int32_t kind, int32_t elem, minfer_tensor **out) {
    minfer_tensor *t = mf_calloc(1, sizeof *t);
    if (!t)
        return mf_error(MINFER_ERR_NOMEM, "out of memory for a %s",
                        kind == MINFER_VALUE_SEQUENCE ? "sequence" : "optional");
    t->view.kind = kind;
    t->view.dtype = elem;
    t->view.rank = 0;
    t->contained = MINFER_VALUE_TENSOR;
    *out = t;
    return MINFER_OK;
}

minfer_status mf_sequence_new(int32_t elem, minfer_tensor **out) {
    return new_container(MINFER_VALUE_SEQUENCE, elem, out);
}

minfer_status mf_sequence_push(minfer_tensor *seq, minfer_tensor *item) {
    if (seq->count == seq->cap) {
        size_t cap = seq->cap ? seq->cap * 2 : 4;
        minfer_tensor **items = mf_realloc(seq->items, cap * sizeof *items);
        if (!items)
            return mf_error(MINFER_ERR_NOMEM, "out of memory growing a sequence");
        seq->items = items;
        seq->cap = cap;
    }
    seq->items[seq->count++] = item;
    return MINFER_OK;
}

minfer_status mf_optional_new(minfer_tensor *value, int32_t contained, int32_t elem,
                              minfer_tensor **out) {
    minfer_tensor *t = NULL;
    minfer_status st = new_container(MINFER_VALUE_OPTIONAL, elem, &t);
    if (st != MINFER_OK)
        return st;
    t->contained = value ? value->view.kind : contained;
    if (value && (st = mf_sequence_push(t, value)) != MINFER_OK) {
        free(t);
        return st;
    }
    *out = t;
    return MINFER_OK;
}

/* ---- public API --------------------------------------------------------- */

minfer_value_kind minfer_value_kind_of(const minfer_tensor *t) {
    return t ? (minfer_value_kind)t->view.kind : MINFER_VALUE_TENSOR;
}

minfer_status minfer_sequence_create(minfer_dtype elem_type, minfer_tensor **out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_sequence_create: out is NULL");
    *out = NULL;
    if (!minfer_dtype_size(elem_type))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_sequence_create: unknown element type %d",
                        (int)elem_type);
    return mf_sequence_new((int32_t)elem_type, out);
}

minfer_status minfer_sequence_append(minfer_tensor *seq, minfer_tensor *item) {
    if (!seq || !item)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_sequence_append: NULL argument");
    if (seq->view.kind != MINFER_VALUE_SEQUENCE)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_sequence_append: not a sequence");
    if (item->view.kind != MINFER_VALUE_TENSOR)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_sequence_append: a sequence holds tensors, not a %s",
                        item->view.kind == MINFER_VALUE_SEQUENCE ? "sequence" : "optional");
    if (item->view.dtype != seq->view.dtype)
        return mf_error(MINFER_ERR_TYPE, "minfer_sequence_append: a sequence of %s cannot hold %s",
                        minfer_dtype_name((minfer_dtype)seq->view.dtype),
                        minfer_dtype_name((minfer_dtype)item->view.dtype));
    for (size_t i = 0; i < seq->count; i++)
        if (seq->items[i] == item)
            return mf_error(MINFER_ERR_INVALID_ARG,
                            "minfer_sequence_append: the tensor is already in the sequence");
    return mf_sequence_push(seq, item);
}

size_t minfer_sequence_length(const minfer_tensor *seq) {
    return seq && seq->view.kind == MINFER_VALUE_SEQUENCE ? seq->count : 0;
}

const minfer_tensor *minfer_sequence_at(const minfer_tensor *seq, size_t index) {
    if (!seq || seq->view.kind != MINFER_VALUE_SEQUENCE || index >= seq->count)
        return NULL;
    return seq->items[index];
}

minfer_status minfer_optional_create(minfer_tensor *value, minfer_value_kind contained_kind,
                                     minfer_dtype elem_type, minfer_tensor **out) {
    if (!out)
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_optional_create: out is NULL");
    *out = NULL;
    if (value && value->view.kind == MINFER_VALUE_OPTIONAL)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_optional_create: an optional cannot hold an optional");
    if (!value && contained_kind != MINFER_VALUE_TENSOR && contained_kind != MINFER_VALUE_SEQUENCE)
        return mf_error(MINFER_ERR_INVALID_ARG,
                        "minfer_optional_create: contained_kind must be a tensor or a sequence");
    if (!value && !minfer_dtype_size(elem_type))
        return mf_error(MINFER_ERR_INVALID_ARG, "minfer_optional_create: unknown element type %d",
                        (int)elem_type);
    return mf_optional_new(value, (int32_t)contained_kind,
                           value ? value->view.dtype : (int32_t)elem_type, out);
}

const minfer_tensor *minfer_optional_value(const minfer_tensor *opt) {
    if (!opt || opt->view.kind != MINFER_VALUE_OPTIONAL || opt->count == 0)
        return NULL;
    return opt->items[0];
}

minfer_value_kind minfer_optional_kind(const minfer_tensor *opt) {
    return opt && opt->view.kind == MINFER_VALUE_OPTIONAL ? (minfer_value_kind)opt->contained
                                                          : MINFER_VALUE_TENSOR;
}
