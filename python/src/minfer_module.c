/*
 * minfer._minfer: the CPython extension under the `minfer` package.
 *
 * It uses the public C API only (include/minfer/minfer.h, builder.h,
 * discovery.h) and numpy's C API. The ONNX Runtime-shaped classes
 * (InferenceSession, SessionOptions, ...) are written in Python on top of
 * it (minfer/__init__.py); this module keeps to what must be C:
 *
 *  1. Inputs. A numpy array that is C-contiguous, aligned and in native byte
 *     order is handed to minfer_tensor_wrap as it is (zero copy); any other
 *     array, and a Python list or scalar, is converted once by
 *     PyArray_FromAny (to the input's declared type for a non-array). The
 *     arrays stay referenced until the run returns. Strings are copied into
 *     an owning STRING tensor; sequences and optionals are built from lists
 *     and None.
 *  2. Runs. The GIL is released around minfer_session_run (and session
 *     creation), which the C API allows from several threads at once.
 *  3. Outputs. The session allocates each output; a capsule owns that
 *     minfer_tensor and is the numpy array's base, so the array is the
 *     tensor's memory and frees it with the last reference. A sequence
 *     becomes a list of arrays sharing one capsule, an optional None or its
 *     value.
 *  4. Errors. A failed call raises the exception class of its status
 *     (InvalidArgument, NoSuchFile, ..., all subclasses of minfer.Fail, a
 *     RuntimeError) with minfer_last_error()'s message and a `status`
 *     attribute holding the minfer_status number.
 *  5. Asynchronous requests (Session.submit, a Request): the completion
 *     callback runs on a minfer worker and takes the GIL there; see the
 *     banner above Session_submit for who holds what.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "minfer/builder.h"
#include "minfer/discovery.h"
#include "minfer/minfer.h"
#include "minfer/optimize.h"

#ifndef PyDataType_ELSIZE /* numpy < 2 */
#define PyDataType_ELSIZE(d) ((d)->elsize)
#endif

/* ---- Exceptions ---------------------------------------------------------- */

static PyObject *exc_fail;             /* limits, deadlines, terminate, memory */
static PyObject *exc_invalid_argument; /* bad argument, shape, type, unknown name */
static PyObject *exc_no_such_file;     /* a file that cannot be read */
static PyObject *exc_invalid_graph;    /* a malformed model */
static PyObject *exc_not_implemented;  /* also a NotImplementedError */
static PyObject *exc_ep_fail;          /* a provider failed */
static PyObject *exc_runtime;          /* a kernel failed while running */
static PyObject *exc_busy;             /* the asynchronous queue is full */
static PyObject *exc_cancelled;        /* a request was cancelled (Request.take) */

static PyObject *exception_for(minfer_status st) {
    switch (st) {
    case MINFER_ERR_INVALID_ARG:
    case MINFER_ERR_SHAPE:
    case MINFER_ERR_TYPE:
    case MINFER_ERR_NOT_FOUND:
        return exc_invalid_argument;
    case MINFER_ERR_IO: return exc_no_such_file;
    case MINFER_ERR_MODEL: return exc_invalid_graph;
    case MINFER_ERR_UNSUPPORTED: return exc_not_implemented;
    case MINFER_ERR_PROVIDER: return exc_ep_fail;
    case MINFER_ERR_RUNTIME: return exc_runtime;
    case MINFER_ERR_BUSY: return exc_busy;
    default: return exc_fail;
    }
}

/* Raises cls with the thread's last minfer error and st as `status`;
 * returns NULL. */
static PyObject *raise_status_as(minfer_status st, PyObject *cls) {
    const char *msg = minfer_last_error();
    if (!msg || !*msg)
        msg = minfer_status_str(st);
    /* Model-supplied names in the message need not be UTF-8. */
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    if (!text)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(cls, text);
    Py_DECREF(text);
    if (!exc)
        return NULL;
    PyObject *code = PyLong_FromLong((long)st);
    if (!code || PyObject_SetAttrString(exc, "status", code) < 0) {
        Py_XDECREF(code);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

/* Raises the exception of st with the thread's last minfer error; returns NULL. */
static PyObject *raise_status(minfer_status st) { return raise_status_as(st, exception_for(st)); }

/* ---- Element types ------------------------------------------------------- */

/* numpy's type number for a minfer element type; -1 if it has none.
 * BFLOAT16 has no numpy type: its bits come out as uint16. */
static int npy_type_of(minfer_dtype dt) {
    switch (dt) {
    case MINFER_DTYPE_FLOAT: return NPY_FLOAT32;
    case MINFER_DTYPE_UINT8: return NPY_UINT8;
    case MINFER_DTYPE_INT8: return NPY_INT8;
    case MINFER_DTYPE_UINT16: return NPY_UINT16;
    case MINFER_DTYPE_INT16: return NPY_INT16;
    case MINFER_DTYPE_INT32: return NPY_INT32;
    case MINFER_DTYPE_INT64: return NPY_INT64;
    case MINFER_DTYPE_STRING: return NPY_OBJECT;
    case MINFER_DTYPE_BOOL: return NPY_BOOL;
    case MINFER_DTYPE_FLOAT16: return NPY_FLOAT16;
    case MINFER_DTYPE_DOUBLE: return NPY_FLOAT64;
    case MINFER_DTYPE_UINT32: return NPY_UINT32;
    case MINFER_DTYPE_UINT64: return NPY_UINT64;
    case MINFER_DTYPE_COMPLEX64: return NPY_COMPLEX64;
    case MINFER_DTYPE_COMPLEX128: return NPY_COMPLEX128;
    case MINFER_DTYPE_BFLOAT16: return NPY_UINT16;
    default: return -1;
    }
}

/* The minfer element type of a numpy dtype, by kind and size (so that
 * numpy's distinct-but-equal type numbers, long and longlong, agree). */
static minfer_dtype minfer_type_of(const PyArray_Descr *d) {
    int size = (int)PyDataType_ELSIZE(d);
    switch (d->kind) {
    case 'f':
        return size == 2 ? MINFER_DTYPE_FLOAT16 : size == 4 ? MINFER_DTYPE_FLOAT
             : size == 8 ? MINFER_DTYPE_DOUBLE : MINFER_DTYPE_UNDEFINED;
    case 'i':
        return size == 1 ? MINFER_DTYPE_INT8 : size == 2 ? MINFER_DTYPE_INT16
             : size == 4 ? MINFER_DTYPE_INT32 : size == 8 ? MINFER_DTYPE_INT64
             : MINFER_DTYPE_UNDEFINED;
    case 'u':
        return size == 1 ? MINFER_DTYPE_UINT8 : size == 2 ? MINFER_DTYPE_UINT16
             : size == 4 ? MINFER_DTYPE_UINT32 : size == 8 ? MINFER_DTYPE_UINT64
             : MINFER_DTYPE_UNDEFINED;
    case 'b': return MINFER_DTYPE_BOOL;
    case 'c':
        return size == 8 ? MINFER_DTYPE_COMPLEX64 : size == 16 ? MINFER_DTYPE_COMPLEX128
             : MINFER_DTYPE_UNDEFINED;
    case 'U':
    case 'S':
    case 'O':
        return MINFER_DTYPE_STRING;
    default: return MINFER_DTYPE_UNDEFINED;
    }
}

static const char *kind_name(int kind) {
    return kind == MINFER_VALUE_SEQUENCE ? "sequence"
         : kind == MINFER_VALUE_OPTIONAL ? "optional" : "tensor";
}

/* ---- Python values to minfer values -------------------------------------- */

/* An owning STRING tensor with a copy of every element of arr (str, bytes,
 * or anything str() takes). */
static int strings_to_tensor(PyArrayObject *arr, minfer_tensor **out) {
    int rank = PyArray_NDIM(arr);
    int64_t dims[NPY_MAXDIMS];
    for (int i = 0; i < rank; i++)
        dims[i] = (int64_t)PyArray_DIM(arr, i);
    minfer_tensor *t = NULL;
    minfer_status st = minfer_tensor_create(MINFER_DTYPE_STRING, dims, (size_t)rank, &t);
    if (st != MINFER_OK) {
        raise_status(st);
        return -1;
    }
    char **elems = minfer_tensor_data(t);
    PyObject *flat = PyArray_Ravel(arr, NPY_CORDER);
    if (!flat)
        goto fail;
    npy_intp n = PyArray_SIZE((PyArrayObject *)flat);
    for (npy_intp i = 0; i < n; i++) {
        PyObject *item = PyArray_GETITEM((PyArrayObject *)flat,
                                         PyArray_GETPTR1((PyArrayObject *)flat, i));
        if (!item)
            goto fail_flat;
        const char *s = NULL;
        Py_ssize_t len = 0;
        PyObject *as_str = NULL;
        if (PyBytes_Check(item)) {
            s = PyBytes_AS_STRING(item);
            len = PyBytes_GET_SIZE(item);
        } else {
            as_str = PyObject_Str(item);
            if (as_str)
                s = PyUnicode_AsUTF8AndSize(as_str, &len);
        }
        char *copy = s ? malloc((size_t)len + 1) : NULL;
        if (copy) {
            memcpy(copy, s, (size_t)len);
            copy[len] = '\0';
        }
        Py_XDECREF(as_str);
        Py_DECREF(item);
        if (!copy) {
            if (!PyErr_Occurred())
                PyErr_NoMemory();
            goto fail_flat;
        }
        elems[i] = copy; /* the tensor frees it */
    }
    Py_DECREF(flat);
    *out = t;
    return 0;
fail_flat:
    Py_DECREF(flat);
fail:
    minfer_tensor_free(t);
    return -1;
}

/* A tensor over obj's data. want: the declared element type, used to
 * convert a non-array (a list, a scalar); UNDEFINED when unknown. The array
 * that holds the data is appended to keep, which must outlive the tensor. */
static int to_tensor(PyObject *obj, minfer_dtype want, PyObject *keep, minfer_tensor **out) {
    PyArray_Descr *descr = NULL;
    if (!PyArray_Check(obj) && want != MINFER_DTYPE_UNDEFINED && want != MINFER_DTYPE_STRING &&
        npy_type_of(want) >= 0)
        descr = PyArray_DescrFromType(npy_type_of(want)); /* stolen by FromAny */
    /* Returns obj itself (a new reference) when it is already C-contiguous
     * and aligned: the zero-copy case. */
    PyArrayObject *arr = (PyArrayObject *)PyArray_FromAny(obj, descr, 0, 0, NPY_ARRAY_IN_ARRAY, NULL);
    if (!arr)
        return -1;
    if (!PyArray_ISNOTSWAPPED(arr)) {
        PyArray_Descr *native = PyArray_DescrNewByteorder(PyArray_DESCR(arr), NPY_NATIVE);
        PyArrayObject *swapped = native ? (PyArrayObject *)PyArray_FromArray(arr, native, NPY_ARRAY_IN_ARRAY | NPY_ARRAY_ENSURECOPY) : NULL;
        Py_DECREF(arr);
        if (!swapped)
            return -1;
        arr = swapped;
    }
    minfer_dtype dt = minfer_type_of(PyArray_DESCR(arr));
    if (dt == MINFER_DTYPE_UNDEFINED) {
        PyErr_Format(exc_invalid_argument, "numpy dtype %R has no ONNX element type",
                     (PyObject *)PyArray_DESCR(arr));
        Py_DECREF(arr);
        return -1;
    }
    /* bfloat16 has no numpy type: its bits travel as uint16, as outputs do. */
    if (dt == MINFER_DTYPE_UINT16 && want == MINFER_DTYPE_BFLOAT16)
        dt = MINFER_DTYPE_BFLOAT16;
    if (dt == MINFER_DTYPE_STRING) {
        int rc = strings_to_tensor(arr, out);
        Py_DECREF(arr);
        return rc;
    }
    int rank = PyArray_NDIM(arr);
    int64_t dims[NPY_MAXDIMS];
    for (int i = 0; i < rank; i++)
        dims[i] = (int64_t)PyArray_DIM(arr, i);
    size_t nbytes = (size_t)PyArray_NBYTES(arr);
    minfer_status st = nbytes == 0
        ? minfer_tensor_create(dt, dims, (size_t)rank, out)
        : minfer_tensor_wrap(dt, dims, (size_t)rank, PyArray_DATA(arr), nbytes, out);
    if (st != MINFER_OK) {
        Py_DECREF(arr);
        raise_status(st);
        return -1;
    }
    int rc = PyList_Append(keep, (PyObject *)arr);
    Py_DECREF(arr);
    if (rc < 0) {
        minfer_tensor_free(*out);
        *out = NULL;
    }
    return rc;
}

/* A value of the given kind (MINFER_VALUE_*) with elements of elem. A
 * sequence is a list or tuple of arrays; an optional is None or its value,
 * of kind `contained`. */
static int to_value(PyObject *obj, int kind, int contained, minfer_dtype elem, PyObject *keep,
                    minfer_tensor **out) {
    minfer_status st;
    if (kind == MINFER_VALUE_SEQUENCE) {
        if (!PyList_Check(obj) && !PyTuple_Check(obj)) {
            PyErr_Format(exc_invalid_argument, "a sequence input takes a list of arrays, not %s",
                         Py_TYPE(obj)->tp_name);
            return -1;
        }
        minfer_tensor *seq = NULL;
        if ((st = minfer_sequence_create(elem, &seq)) != MINFER_OK) {
            raise_status(st);
            return -1;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(obj);
        for (Py_ssize_t i = 0; i < n; i++) {
            minfer_tensor *item = NULL;
            if (to_tensor(PySequence_Fast_GET_ITEM(obj, i), elem, keep, &item) < 0) {
                minfer_tensor_free(seq);
                return -1;
            }
            if ((st = minfer_sequence_append(seq, item)) != MINFER_OK) {
                minfer_tensor_free(item);
                minfer_tensor_free(seq);
                raise_status(st);
                return -1;
            }
        }
        *out = seq;
        return 0;
    }
    if (kind == MINFER_VALUE_OPTIONAL) {
        minfer_tensor *inner = NULL;
        if (obj != Py_None && to_value(obj, contained, MINFER_VALUE_TENSOR, elem, keep, &inner) < 0)
            return -1;
        if ((st = minfer_optional_create(inner, contained, elem, out)) != MINFER_OK) {
            minfer_tensor_free(inner);
            raise_status(st);
            return -1;
        }
        return 0;
    }
    return to_tensor(obj, elem, keep, out);
}

/* ---- minfer values to Python values -------------------------------------- */

static const char CAPSULE_NAME[] = "minfer.tensor";

static void capsule_free(PyObject *capsule) {
    minfer_tensor_free(PyCapsule_GetPointer(capsule, CAPSULE_NAME));
}

/* t (owned, through some container, by the capsule `owner`) as a Python
 * value: an array on t's memory, a list, None. */
static PyObject *from_value(const minfer_tensor *t, PyObject *owner) {
    minfer_value_kind kind = minfer_value_kind_of(t);
    if (kind == MINFER_VALUE_SEQUENCE) {
        size_t n = minfer_sequence_length(t);
        PyObject *list = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; list && i < n; i++) {
            PyObject *item = from_value(minfer_sequence_at(t, i), owner);
            if (!item) {
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)i, item);
        }
        return list;
    }
    if (kind == MINFER_VALUE_OPTIONAL) {
        const minfer_tensor *v = minfer_optional_value(t);
        if (!v)
            Py_RETURN_NONE;
        return from_value(v, owner);
    }
    minfer_dtype dt = minfer_tensor_dtype(t);
    int npy = npy_type_of(dt);
    if (npy < 0)
        return PyErr_Format(exc_not_implemented, "output of element type %s has no numpy type",
                            minfer_dtype_name(dt));
    int rank = (int)minfer_tensor_rank(t);
    if (rank > MINFER_MAX_RANK)
        return PyErr_Format(exc_fail, "output of rank %d is above %d", rank, MINFER_MAX_RANK);
    npy_intp dims[MINFER_MAX_RANK];
    const int64_t *d = minfer_tensor_dims(t);
    for (int i = 0; i < rank; i++)
        dims[i] = (npy_intp)d[i];
    int64_t numel = minfer_tensor_numel(t);
    void *data = minfer_tensor_data(t);
    if (numel == 0) /* no memory to share */
        return PyArray_SimpleNew(rank, dims, npy);
    if (!data)
        return PyErr_Format(exc_fail, "output tensor of %lld elements has no data", (long long)numel);
    if (dt == MINFER_DTYPE_STRING) {
        /* Strings become str objects in an object array. */
        PyArrayObject *arr = (PyArrayObject *)PyArray_SimpleNew(rank, dims, npy);
        if (!arr)
            return NULL;
        char *const *s = data;
        PyObject **slot = PyArray_DATA(arr);
        for (int64_t i = 0; i < numel; i++) {
            const char *e = s[i] ? s[i] : "";
            PyObject *str = PyUnicode_DecodeUTF8(e, (Py_ssize_t)strlen(e), "replace");
            if (!str) {
                Py_DECREF(arr);
                return NULL;
            }
            Py_XSETREF(slot[i], str);
        }
        return (PyObject *)arr;
    }
    PyObject *arr = PyArray_New(&PyArray_Type, rank, dims, npy, NULL, data, 0, NPY_ARRAY_CARRAY, NULL);
    if (!arr)
        return NULL;
    Py_INCREF(owner);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, owner) < 0) { /* steals owner */
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* Takes ownership of t (freed here on failure). */
static PyObject *from_owned(minfer_tensor *t) {
    PyObject *capsule = PyCapsule_New(t, CAPSULE_NAME, capsule_free);
    if (!capsule) {
        minfer_tensor_free(t);
        return NULL;
    }
    PyObject *v = from_value(t, capsule);
    Py_DECREF(capsule);
    return v;
}

/* ---- Value info ---------------------------------------------------------- */

static PyObject *info_dict(const minfer_value_info *vi) {
    PyObject *shape;
    if (vi->rank < 0 || vi->kind != MINFER_VALUE_TENSOR) {
        shape = Py_NewRef(Py_None);
    } else {
        shape = PyList_New(vi->rank);
        for (int32_t i = 0; shape && i < vi->rank; i++) {
            PyObject *d;
            if (vi->dims[i] >= 0)
                d = PyLong_FromLongLong(vi->dims[i]);
            else if (vi->dim_names && vi->dim_names[i])
                d = PyUnicode_FromString(vi->dim_names[i]);
            else
                d = Py_NewRef(Py_None);
            if (!d) {
                Py_CLEAR(shape);
                break;
            }
            PyList_SET_ITEM(shape, i, d);
        }
    }
    if (!shape)
        return NULL;
    return Py_BuildValue("{s:s,s:s,s:i,s:N,s:s,s:s}", "name", vi->name, "dtype",
                         minfer_dtype_name(vi->dtype), "elem", (int)vi->dtype, "shape", shape,
                         "kind", kind_name(vi->kind), "contained", kind_name(vi->contained));
}

/* ---- Builder ------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    minfer_graph_builder *b;
} BuilderObject;

static PyTypeObject BuilderType;

static int Builder_init(BuilderObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"opset", NULL};
    long long opset = 13;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|L", kwlist, &opset))
        return -1;
    minfer_builder_free(self->b);
    self->b = NULL;
    minfer_status st = minfer_builder_create(opset, &self->b);
    if (st != MINFER_OK) {
        raise_status(st);
        return -1;
    }
    return 0;
}

static void Builder_dealloc(BuilderObject *self) {
    minfer_builder_free(self->b);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define CHECK(call)                                                                            \
    do {                                                                                       \
        minfer_status st_ = (call);                                                            \
        if (st_ != MINFER_OK)                                                                  \
            return raise_status(st_);                                                          \
    } while (0)

static PyObject *Builder_add_opset(BuilderObject *self, PyObject *args) {
    const char *domain;
    long long version;
    if (!PyArg_ParseTuple(args, "sL", &domain, &version))
        return NULL;
    CHECK(minfer_builder_add_opset(self->b, domain, version));
    Py_RETURN_NONE;
}

/* add_input(name, elem, shape): shape entries are ints, or a str or None
 * for a dynamic dimension; shape None is rank 0. */
static PyObject *Builder_add_input(BuilderObject *self, PyObject *args) {
    const char *name;
    int elem;
    PyObject *shape;
    if (!PyArg_ParseTuple(args, "siO", &name, &elem, &shape))
        return NULL;
    PyObject *seq = shape == Py_None ? PyTuple_New(0)
                                     : PySequence_Fast(shape, "shape must be a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t rank = PySequence_Fast_GET_SIZE(seq);
    if (rank > MINFER_MAX_RANK) {
        Py_DECREF(seq);
        return PyErr_Format(exc_invalid_argument, "input '%s': rank %zd is above %d", name,
                            rank, MINFER_MAX_RANK);
    }
    int64_t dims[MINFER_MAX_RANK];
    const char *names[MINFER_MAX_RANK];
    for (Py_ssize_t i = 0; i < rank; i++) {
        PyObject *d = PySequence_Fast_GET_ITEM(seq, i);
        names[i] = NULL;
        if (d == Py_None) {
            dims[i] = -1;
        } else if (PyUnicode_Check(d)) {
            dims[i] = -1;
            names[i] = PyUnicode_AsUTF8(d);
        } else {
            dims[i] = PyLong_AsLongLong(d);
        }
        if (PyErr_Occurred()) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    minfer_status st = minfer_builder_add_input(self->b, name, (minfer_dtype)elem, dims,
                                                (size_t)rank, names);
    Py_DECREF(seq);
    CHECK(st);
    Py_RETURN_NONE;
}

static PyObject *Builder_add_initializer(BuilderObject *self, PyObject *args) {
    const char *name;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "sO", &name, &value))
        return NULL;
    PyObject *keep = PyList_New(0);
    if (!keep)
        return NULL;
    minfer_tensor *t = NULL;
    if (to_tensor(value, MINFER_DTYPE_UNDEFINED, keep, &t) < 0) {
        Py_DECREF(keep);
        return NULL;
    }
    minfer_status st = minfer_builder_add_initializer(self->b, name, t); /* copies */
    minfer_tensor_free(t);
    Py_DECREF(keep);
    CHECK(st);
    Py_RETURN_NONE;
}

/* The UTF-8 of a name (kept by s); NULL with an exception for a non-str, a
 * lone surrogate (UnicodeEncodeError) or a NUL inside, which C would read
 * as the name's end: "A\0x" must not be taken for "A". */
static const char *name_utf8(PyObject *s, const char *what) {
    if (!PyUnicode_Check(s)) {
        PyErr_Format(PyExc_TypeError, "%s: a name must be str, not %s", what, Py_TYPE(s)->tp_name);
        return NULL;
    }
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(s, &len);
    if (u && strlen(u) != (size_t)len) {
        PyErr_Format(PyExc_ValueError, "%s: the name %R holds a NUL character", what, s);
        return NULL;
    }
    return u;
}

/* *out: a PyMem array of the UTF-8 strings of a sequence of str (free it
 * with PyMem_Free); returns the PySequence_Fast that keeps them alive, or NULL. */
static PyObject *string_list(PyObject *obj, const char ***out, Py_ssize_t *n, const char *what) {
    /* A str is a sequence of its characters: "C" would be the names 'C'. */
    if (PyUnicode_Check(obj) || PyBytes_Check(obj) || PyByteArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s, not %s", what, Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyObject *seq = PySequence_Fast(obj, what);
    if (!seq)
        return NULL;
    *n = PySequence_Fast_GET_SIZE(seq);
    *out = PyMem_Calloc((size_t)(*n ? *n : 1), sizeof(char *));
    if (!*out) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < *n; i++) {
        (*out)[i] = name_utf8(PySequence_Fast_GET_ITEM(seq, i), what);
        if (!(*out)[i]) {
            PyMem_Free(*out);
            *out = NULL;
            Py_DECREF(seq);
            return NULL;
        }
    }
    return seq;
}

/* add_node(op_type, inputs, outputs, name=None, domain=None) -> index */
static PyObject *Builder_add_node(BuilderObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"op_type", "inputs", "outputs", "name", "domain", NULL};
    const char *op, *name = NULL, *domain = NULL;
    PyObject *ins, *outs;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sOO|zz", kwlist, &op, &ins, &outs, &name, &domain))
        return NULL;
    const char **in_names = NULL, **out_names = NULL;
    Py_ssize_t n_in = 0, n_out = 0;
    PyObject *in_seq = string_list(ins, &in_names, &n_in, "inputs must be a list of names");
    if (!in_seq)
        return NULL;
    PyObject *out_seq = string_list(outs, &out_names, &n_out, "outputs must be a list of names");
    if (!out_seq) {
        PyMem_Free(in_names);
        Py_DECREF(in_seq);
        return NULL;
    }
    size_t index = 0;
    minfer_status st = minfer_builder_add_node(self->b, op, domain, name, in_names, (size_t)n_in,
                                               out_names, (size_t)n_out, &index);
    PyMem_Free(in_names);
    PyMem_Free(out_names);
    Py_DECREF(in_seq);
    Py_DECREF(out_seq);
    CHECK(st);
    return PyLong_FromSize_t(index);
}

/* set_attr(node, name, value): the attribute type follows the value's:
 * int, float, str, an array (a tensor), or a list of ints, floats or str. */
static PyObject *Builder_set_attr(BuilderObject *self, PyObject *args) {
    Py_ssize_t node;
    const char *name;
    PyObject *v;
    if (!PyArg_ParseTuple(args, "nsO", &node, &name, &v))
        return NULL;
    if (node < 0)
        return PyErr_Format(exc_invalid_argument, "node index %zd is negative", node);
    size_t ni = (size_t)node;
    if (PyBool_Check(v) || PyLong_Check(v)) {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred())
            return NULL;
        CHECK(minfer_builder_set_attr_int(self->b, ni, name, x));
    } else if (PyFloat_Check(v)) {
        CHECK(minfer_builder_set_attr_float(self->b, ni, name, (float)PyFloat_AS_DOUBLE(v)));
    } else if (PyUnicode_Check(v)) {
        const char *s = PyUnicode_AsUTF8(v);
        if (!s)
            return NULL;
        CHECK(minfer_builder_set_attr_string(self->b, ni, name, s));
    } else if (PyArray_Check(v)) {
        PyObject *keep = PyList_New(0);
        minfer_tensor *t = NULL;
        if (!keep || to_tensor(v, MINFER_DTYPE_UNDEFINED, keep, &t) < 0) {
            Py_XDECREF(keep);
            return NULL;
        }
        minfer_status st = minfer_builder_set_attr_tensor(self->b, ni, name, t);
        minfer_tensor_free(t);
        Py_DECREF(keep);
        CHECK(st);
    } else if (PyList_Check(v) || PyTuple_Check(v)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(v);
        PyObject *first = n > 0 ? PySequence_Fast_GET_ITEM(v, 0) : NULL;
        minfer_status st;
        if (first && PyUnicode_Check(first)) {
            const char **s = NULL;
            Py_ssize_t count = 0;
            PyObject *seq = string_list(v, &s, &count, "strings");
            if (!seq)
                return NULL;
            st = minfer_builder_set_attr_strings(self->b, ni, name, s, (size_t)count);
            PyMem_Free(s);
            Py_DECREF(seq);
        } else if (first && PyFloat_Check(first)) {
            float *f = PyMem_Calloc((size_t)n, sizeof *f);
            if (!f)
                return PyErr_NoMemory();
            for (Py_ssize_t i = 0; i < n; i++)
                f[i] = (float)PyFloat_AsDouble(PySequence_Fast_GET_ITEM(v, i));
            st = PyErr_Occurred() ? MINFER_OK : minfer_builder_set_attr_floats(self->b, ni, name, f, (size_t)n);
            PyMem_Free(f);
        } else {
            int64_t *x = PyMem_Calloc((size_t)(n ? n : 1), sizeof *x);
            if (!x)
                return PyErr_NoMemory();
            for (Py_ssize_t i = 0; i < n; i++)
                x[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(v, i));
            st = PyErr_Occurred() ? MINFER_OK : minfer_builder_set_attr_ints(self->b, ni, name, x, (size_t)n);
            PyMem_Free(x);
        }
        if (PyErr_Occurred())
            return NULL;
        CHECK(st);
    } else {
        return PyErr_Format(PyExc_TypeError, "attribute '%s': no ONNX attribute type for %s",
                            name, Py_TYPE(v)->tp_name);
    }
    Py_RETURN_NONE;
}

static PyObject *Builder_add_output(BuilderObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    CHECK(minfer_builder_add_output(self->b, name));
    Py_RETURN_NONE;
}

static PyMethodDef Builder_methods[] = {
    {"add_opset", (PyCFunction)Builder_add_opset, METH_VARARGS, "add_opset(domain, version)"},
    {"add_input", (PyCFunction)Builder_add_input, METH_VARARGS,
     "add_input(name, elem, shape): elem is an ONNX element type number"},
    {"add_initializer", (PyCFunction)Builder_add_initializer, METH_VARARGS,
     "add_initializer(name, array): the data is copied"},
    {"add_node", (PyCFunction)(void (*)(void))Builder_add_node, METH_VARARGS | METH_KEYWORDS,
     "add_node(op_type, inputs, outputs, name=None, domain=None) -> node index"},
    {"set_attr", (PyCFunction)Builder_set_attr, METH_VARARGS, "set_attr(node, name, value)"},
    {"add_output", (PyCFunction)Builder_add_output, METH_VARARGS, "add_output(name)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minfer._minfer.Builder",
    .tp_basicsize = sizeof(BuilderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Builder(opset=13): a graph built in code (include/minfer/builder.h)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Builder_init,
    .tp_dealloc = (destructor)Builder_dealloc,
    .tp_methods = Builder_methods,
};

/* ---- RunOptions ---------------------------------------------------------- */

/* A live minfer_run_options: runs hold a reference to it while they use it,
 * so terminate() from another thread reaches the runs in progress. */
typedef struct {
    PyObject_HEAD
    minfer_run_options *ro;
    Py_ssize_t active; /* runs using ro now; changed with the GIL held */
} RunOptionsObject;

static int RunOptions_init(RunOptionsObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "", kwlist))
        return -1;
    if (self->ro) {
        PyErr_SetString(PyExc_RuntimeError, "RunOptions is already initialised");
        return -1;
    }
    minfer_status st = minfer_run_options_create(&self->ro);
    if (st != MINFER_OK) {
        raise_status(st);
        return -1;
    }
    return 0;
}

static void RunOptions_dealloc(RunOptionsObject *self) {
    minfer_run_options_free(self->ro);
    self->ro = NULL;
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Tag, log level and deadline may not change while a run reads them. */
static int run_options_settable(RunOptionsObject *self, const char *what) {
    if (!self->ro) {
        PyErr_SetString(exc_fail, "the run options were not created");
        return 0;
    }
    if (self->active > 0) {
        PyErr_Format(exc_invalid_argument,
                     "RunOptions.%s cannot change while a run uses these options "
                     "(only terminate can)", what);
        return 0;
    }
    return 1;
}

static PyObject *RunOptions_set_tag(RunOptionsObject *self, PyObject *arg) {
    if (!run_options_settable(self, "run_tag"))
        return NULL;
    const char *tag = arg == Py_None ? NULL : PyUnicode_AsUTF8(arg);
    if (arg != Py_None && !tag)
        return NULL;
    CHECK(minfer_run_options_set_tag(self->ro, tag));
    Py_RETURN_NONE;
}

static PyObject *RunOptions_set_log_level(RunOptionsObject *self, PyObject *arg) {
    if (!run_options_settable(self, "log_severity_level"))
        return NULL;
    long level = PyLong_AsLong(arg);
    if (level == -1 && PyErr_Occurred())
        return NULL;
    CHECK(minfer_run_options_set_log_level(self->ro, (minfer_log_level)(level < 0 || level > 3 ? -1 : level)));
    Py_RETURN_NONE;
}

static PyObject *RunOptions_set_deadline_ms(RunOptionsObject *self, PyObject *arg) {
    if (!run_options_settable(self, "deadline_ms"))
        return NULL;
    unsigned long long ms = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred())
        return NULL;
    CHECK(minfer_run_options_set_deadline_ms(self->ro, (uint64_t)ms));
    Py_RETURN_NONE;
}

/* terminate(flag): sets or clears the flag; any thread, any time. */
static PyObject *RunOptions_terminate(RunOptionsObject *self, PyObject *arg) {
    if (!self->ro) {
        PyErr_SetString(exc_fail, "the run options were not created");
        return NULL;
    }
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    CHECK(on ? minfer_run_options_terminate(self->ro) : minfer_run_options_unset_terminate(self->ro));
    Py_RETURN_NONE;
}

static PyMethodDef RunOptions_methods[] = {
    {"set_tag", (PyCFunction)RunOptions_set_tag, METH_O, "set_tag(str or None)"},
    {"set_log_level", (PyCFunction)RunOptions_set_log_level, METH_O,
     "set_log_level(level): minfer's 0 error .. 3 verbose"},
    {"set_deadline_ms", (PyCFunction)RunOptions_set_deadline_ms, METH_O,
     "set_deadline_ms(ms): 0 for none"},
    {"terminate", (PyCFunction)RunOptions_terminate, METH_O,
     "terminate(flag): stop the runs using these options (True) or let runs go on (False)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RunOptionsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minfer._minfer.RunOptions",
    .tp_basicsize = sizeof(RunOptionsObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "RunOptions(): a minfer_run_options",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)RunOptions_init,
    .tp_dealloc = (destructor)RunOptions_dealloc,
    .tp_methods = RunOptions_methods,
};

/* ---- Session ------------------------------------------------------------- */

typedef struct SessionObject {
    PyObject_HEAD
    minfer_session *s;
    Py_ssize_t active;  /* calls using s with the GIL released; changed with it held */
    int closed;         /* close() ran: s is gone */
    /* sessions that submitted (their workers run): closed at exit */
    struct SessionObject *prev_async, *next_async;
    int listed;
} SessionObject;

/* ---- Device values ------------------------------------------------------- */

/* A minfer device value (minfer_session_device_tensor_create): a tensor in
 * a provider's memory, made by one session (held here, so that it outlives
 * the value unless closed: then the value holds nothing and every use
 * raises). The Python OrtValue on a device wraps one (_ortvalue.py). */
typedef struct {
    PyObject_HEAD
    minfer_tensor *t;
    PyObject *session; /* the SessionObject that made it */
} DeviceTensorObject;

static PyTypeObject DeviceTensorType;

static void DeviceTensor_dealloc(DeviceTensorObject *self) {
    minfer_tensor_free(self->t);
    Py_XDECREF(self->session);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Takes ownership of t (freed here on failure). */
static PyObject *device_wrap(minfer_tensor *t, PyObject *session) {
    DeviceTensorObject *d = PyObject_New(DeviceTensorObject, &DeviceTensorType);
    if (!d) {
        minfer_tensor_free(t);
        return NULL;
    }
    d->t = t;
    Py_INCREF(session);
    d->session = session;
    return (PyObject *)d;
}

static PyObject *DeviceTensor_numpy(DeviceTensorObject *self, PyObject *unused) {
    (void)unused;
    minfer_dtype dt = minfer_tensor_dtype(self->t);
    int npy = npy_type_of(dt);
    int rank = (int)minfer_tensor_rank(self->t);
    npy_intp dims[MINFER_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[i] = (npy_intp)minfer_tensor_dims(self->t)[i];
    PyArrayObject *arr = (PyArrayObject *)PyArray_SimpleNew(rank, dims, npy);
    if (!arr)
        return NULL;
    minfer_status st;
    size_t bytes = minfer_tensor_nbytes(self->t);
    void *dst = PyArray_DATA(arr);
    Py_BEGIN_ALLOW_THREADS
    st = minfer_tensor_copy_to_host(self->t, dst, bytes);
    Py_END_ALLOW_THREADS
    if (st != MINFER_OK) {
        Py_DECREF(arr);
        return raise_status(st);
    }
    return (PyObject *)arr;
}

static PyObject *DeviceTensor_update(DeviceTensorObject *self, PyObject *obj) {
    PyArrayObject *arr = (PyArrayObject *)PyArray_FROM_OTF(
        obj, npy_type_of(minfer_tensor_dtype(self->t)), NPY_ARRAY_IN_ARRAY);
    if (!arr)
        return NULL;
    int rank = PyArray_NDIM(arr), same = rank == (int)minfer_tensor_rank(self->t);
    for (int i = 0; same && i < rank; i++)
        same = PyArray_DIM(arr, i) == minfer_tensor_dims(self->t)[i];
    if (!same) {
        Py_DECREF(arr);
        return PyErr_Format(exc_invalid_argument, "update: an array of another shape than the "
                            "device value's");
    }
    minfer_status st = minfer_tensor_copy_from_host(self->t, PyArray_DATA(arr),
                                                    (size_t)PyArray_NBYTES(arr));
    Py_DECREF(arr);
    if (st != MINFER_OK)
        return raise_status(st);
    Py_RETURN_NONE;
}

static PyObject *DeviceTensor_get_device(DeviceTensorObject *self, void *c) {
    (void)c;
    return PyUnicode_FromString(minfer_tensor_device(self->t));
}

static PyObject *DeviceTensor_get_shape(DeviceTensorObject *self, void *c) {
    (void)c;
    size_t rank = minfer_tensor_rank(self->t);
    PyObject *l = PyList_New((Py_ssize_t)rank);
    for (size_t i = 0; l && i < rank; i++) {
        PyObject *d = PyLong_FromLongLong((long long)minfer_tensor_dims(self->t)[i]);
        if (!d) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, (Py_ssize_t)i, d);
    }
    return l;
}

static PyObject *DeviceTensor_get_session(DeviceTensorObject *self, void *c) {
    (void)c;
    Py_INCREF(self->session);
    return self->session;
}

static PyObject *DeviceTensor_get_elem(DeviceTensorObject *self, void *c) {
    (void)c;
    return PyLong_FromLong((long)minfer_tensor_dtype(self->t));
}

static PyMethodDef DeviceTensor_methods[] = {
    {"numpy", (PyCFunction)DeviceTensor_numpy, METH_NOARGS,
     "numpy() -> a new array: the value read back to host memory"},
    {"update", (PyCFunction)DeviceTensor_update, METH_O,
     "update(array): copies an array of the value's shape into it"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef DeviceTensor_getset[] = {
    {"device", (getter)DeviceTensor_get_device, NULL, "the provider holding it ('opencl')", NULL},
    {"shape", (getter)DeviceTensor_get_shape, NULL, "its dims, a list", NULL},
    {"elem", (getter)DeviceTensor_get_elem, NULL, "its ONNX element type number", NULL},
    {"session", (getter)DeviceTensor_get_session, NULL, "the Session that made it", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DeviceTensorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minfer._minfer.DeviceTensor",
    .tp_basicsize = sizeof(DeviceTensorObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "a tensor in a provider's memory (Session.device_tensor)",
    .tp_dealloc = (destructor)DeviceTensor_dealloc,
    .tp_methods = DeviceTensor_methods,
    .tp_getset = DeviceTensor_getset,
};

static SessionObject *async_sessions; /* under the GIL */

/* On a thread running a request's callback: the session whose worker it is
 * (minfer_session_free waits for that worker; a submit into its full queue
 * waits for the worker to take one). NULL elsewhere. */
static _Thread_local const minfer_session *calling_back;

/* Applies one entry of the options dict (keys as in docs/python.md). */
/* Reads dict v of {names[i]: unsigned int} into vals (absent keys keep
 * theirs); any other key is an error naming `what` and the keys it takes. */
static int u64_dict(PyObject *v, const char *what, const char *const *names, int n,
                    uint64_t *vals) {
    if (!PyDict_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s must be a dict", what);
        return -1;
    }
    Py_ssize_t known = 0;
    for (int i = 0; i < n; i++) {
        PyObject *x = PyDict_GetItemString(v, names[i]);
        if (!x)
            continue;
        known++;
        vals[i] = PyLong_AsUnsignedLongLong(x);
        if (PyErr_Occurred())
            return -1;
    }
    if (known != PyDict_Size(v)) {
        char keys[256] = "";
        for (int i = 0; i < n; i++) {
            strncat(keys, i == 0 ? "" : i == n - 1 ? " and " : ", ", sizeof keys - strlen(keys) - 1);
            strncat(keys, names[i], sizeof keys - strlen(keys) - 1);
        }
        PyErr_Format(exc_invalid_argument, "%s %R: the keys are %s", what, v, keys);
        return -1;
    }
    return 0;
}

/* The "plugins" option: custom-op libraries (paths or names) for the
 * session, in order (minfer_options_add_plugin; docs/plugins.md). */
static minfer_status apply_plugins(minfer_options *opt, PyObject *v) {
    PyObject *seq = PySequence_Fast(v, "plugins must be a list of paths");
    if (!seq)
        return MINFER_ERR_INVALID_ARG;
    minfer_status st = MINFER_OK;
    for (Py_ssize_t i = 0; st == MINFER_OK && i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *path = NULL;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &path)) {
            Py_DECREF(seq);
            return MINFER_ERR_INVALID_ARG;
        }
        st = minfer_options_add_plugin(opt, PyBytes_AS_STRING(path));
        Py_DECREF(path);
        if (st != MINFER_OK)
            raise_status(st);
    }
    Py_DECREF(seq);
    return st;
}

/* The process's shared pool (ONNX Runtime's global thread pools), made by
 * set_global_thread_pool (or with the default size by the first session
 * asking for it) and replaced by a later call: sessions made before keep
 * theirs (they hold a reference, minfer.h). Read and written with the GIL
 * held. */
static minfer_thread_pool *global_pool;

static minfer_status make_global_pool(int threads) {
    minfer_thread_pool *tp = NULL;
    minfer_status st = minfer_thread_pool_create(threads, &tp);
    if (st != MINFER_OK)
        return st;
    minfer_thread_pool_free(global_pool);
    global_pool = tp;
    return MINFER_OK;
}

/* set_global_thread_pool(threads): the pool sessions with
 * global_thread_pool=True share from now on; 0: one thread per usable CPU. */
static PyObject *mod_set_global_thread_pool(PyObject *m, PyObject *arg) {
    (void)m;
    long long x = PyLong_AsLongLong(arg);
    if (x == -1 && PyErr_Occurred())
        return NULL;
    if (x < 0 || x > MINFER_MAX_THREADS) {
        PyErr_Format(exc_invalid_argument, "global thread pool size %lld: use 0 (one per CPU) "
                     "to %d", x, MINFER_MAX_THREADS);
        return NULL;
    }
    CHECK(make_global_pool((int)x));
    Py_RETURN_NONE;
}

/* global_thread_pool_size(): its threads, 0 while there is none. */
static PyObject *mod_global_thread_pool_size(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyLong_FromLong(minfer_thread_pool_thread_count(global_pool));
}

static int apply_option(minfer_options *opt, const char *key, PyObject *v) {
    minfer_status st = MINFER_OK;
    if (v == Py_None)
        return 0;
    if (strcmp(key, "global_thread_pool") == 0) {
        int on = PyObject_IsTrue(v);
        if (on < 0)
            return -1;
        if (on && !global_pool && (st = make_global_pool(0)) != MINFER_OK) {
            raise_status(st);
            return -1;
        }
        st = minfer_options_set_thread_pool(opt, on ? global_pool : NULL);
    } else if (strcmp(key, "providers") == 0) {
        const char **names = NULL;
        Py_ssize_t n = 0;
        PyObject *seq = string_list(v, &names, &n, "providers must be a list of names");
        if (!seq)
            return -1;
        st = minfer_options_set_providers(opt, names, (size_t)n);
        PyMem_Free(names);
        Py_DECREF(seq);
    } else if (strcmp(key, "plugins") == 0) {
        return apply_plugins(opt, v) == MINFER_OK ? 0 : -1;
    } else if (strcmp(key, "provider_options") == 0) {
        if (!PyDict_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "provider_options must be a dict of name: str");
            return -1;
        }
        PyObject *k, *val;
        Py_ssize_t pos = 0;
        while (st == MINFER_OK && PyDict_Next(v, &pos, &k, &val)) {
            const char *ks = PyUnicode_AsUTF8(k), *vs = ks ? PyUnicode_AsUTF8(val) : NULL;
            if (!vs)
                return -1;
            st = minfer_options_set_provider_options(opt, ks, vs);
        }
    } else if (strcmp(key, "profile") == 0) {
        const char *path = PyUnicode_AsUTF8(v);
        if (!path)
            return -1;
        st = minfer_options_set_profiling(opt, path);
    } else if (strcmp(key, "limits") == 0) {
        /* One call sets all four limits (0 keeps a default). */
        static const char *names[] = {"max_model_bytes", "max_tensor_bytes", "max_nodes",
                                      "max_loop_iterations"};
        uint64_t vals[4] = {0, 0, 0, 0};
        if (u64_dict(v, key, names, 4, vals) < 0)
            return -1;
        minfer_limits lim = {vals[0], vals[1], vals[2], vals[3]};
        st = minfer_options_set_limits(opt, &lim);
    } else if (strcmp(key, "run_limits") == 0) {
        static const char *names[] = {"max_run_elements", "deadline_ms"};
        uint64_t vals[2] = {0, 0};
        if (u64_dict(v, key, names, 2, vals) < 0)
            return -1;
        minfer_run_limits rl = {sizeof rl, vals[0], vals[1]};
        st = minfer_options_set_run_limits(opt, &rl);
    } else if (strcmp(key, "dims") == 0) {
        /* {symbolic name: size}: free-dimension overrides */
        if (!PyDict_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "dims must be a dict of name: int");
            return -1;
        }
        PyObject *k, *val;
        Py_ssize_t pos = 0;
        while (st == MINFER_OK && PyDict_Next(v, &pos, &k, &val)) {
            const char *name = PyUnicode_AsUTF8(k);
            long long x = name ? PyLong_AsLongLong(val) : -1;
            if (PyErr_Occurred())
                return -1;
            st = minfer_options_set_dim(opt, name, (int64_t)x);
        }
    } else if (strcmp(key, "input_dims") == 0) {
        /* [(input, axis, size), ...] */
        PyObject *seq = PySequence_Fast(v, "input_dims must be a list of (input, axis, size)");
        if (!seq)
            return -1;
        for (Py_ssize_t i = 0; st == MINFER_OK && i < PySequence_Fast_GET_SIZE(seq); i++) {
            const char *input;
            int axis;
            long long x;
            if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "siL", &input, &axis, &x)) {
                Py_DECREF(seq);
                return -1;
            }
            st = minfer_options_set_input_dim(opt, input, axis, (int64_t)x);
        }
        Py_DECREF(seq);
    } else if (strcmp(key, "planner") == 0) {
        const char *p = PyUnicode_AsUTF8(v);
        if (!p)
            return -1;
        if (strcmp(p, "greedy") != 0 && strcmp(p, "linear") != 0) {
            PyErr_Format(exc_invalid_argument, "planner '%s': use 'greedy' or 'linear'", p);
            return -1;
        }
        st = minfer_options_set_planner(opt, strcmp(p, "linear") == 0 ? MINFER_PLANNER_LINEAR
                                                                      : MINFER_PLANNER_GREEDY);
    } else if (strcmp(key, "precision") == 0) {
        const char *p = PyUnicode_AsUTF8(v);
        if (!p)
            return -1;
        if (strcmp(p, "fp32") != 0 && strcmp(p, "bf16") != 0) {
            PyErr_Format(exc_invalid_argument, "precision '%s': use 'fp32' or 'bf16'", p);
            return -1;
        }
        st = minfer_options_set_precision(opt, strcmp(p, "bf16") == 0 ? MINFER_PRECISION_BF16
                                                                     : MINFER_PRECISION_FP32);
    } else if (strcmp(key, "scheduler") == 0) {
        const char *p = PyUnicode_AsUTF8(v);
        if (!p)
            return -1;
        minfer_scheduler sc = MINFER_SCHED_SEQUENTIAL;
        if (strcmp(p, "parallel") == 0)
            sc = MINFER_SCHED_PARALLEL;
        else if (strcmp(p, "pipeline") == 0)
            sc = MINFER_SCHED_PIPELINE;
        else if (strcmp(p, "sequential") != 0) {
            PyErr_Format(exc_invalid_argument,
                         "scheduler '%s': use 'sequential', 'parallel' or 'pipeline'", p);
            return -1;
        }
        st = minfer_options_set_scheduler(opt, sc);
    } else {
        long long x = PyLong_AsLongLong(v);
        if (x == -1 && PyErr_Occurred())
            return -1;
        if (strcmp(key, "threads") == 0) {
            if (x < 0 || x > MINFER_MAX_THREADS) {
                PyErr_Format(exc_invalid_argument, "threads %lld: use 0 (one per CPU) to %d", x,
                             MINFER_MAX_THREADS);
                return -1;
            }
            st = minfer_options_set_threads(opt, (int)x);
        } else if (strcmp(key, "optimization_level") == 0) {
            st = minfer_options_set_optimization_level(opt, (int)(x < 0 || x > 3 ? -1 : x));
        } else if (strcmp(key, "log_level") == 0) {
            st = minfer_options_set_log_level(opt, (minfer_log_level)(x < 0 || x > 3 ? -1 : x));
        } else if (strcmp(key, "queue_depth") == 0) {
            st = minfer_options_set_queue_depth(opt, x < 0 ? (size_t)-1 : (size_t)x);
        } else if (strcmp(key, "micro_batch") == 0) {
            st = minfer_options_set_micro_batch(opt, (int64_t)x);
        } else if (strcmp(key, "inter_op_threads") == 0) {
            if (x < 0 || x > MINFER_MAX_THREADS) { /* the C setter's range: say the value given */
                PyErr_Format(exc_invalid_argument, "inter_op_threads %lld: use 0 (one per pool "
                             "thread) to %d", x, MINFER_MAX_THREADS);
                return -1;
            }
            st = minfer_options_set_inter_op_threads(opt, (int)x);
        } else if (strcmp(key, "plan_cache_size") == 0) {
            st = minfer_options_set_plan_cache_size(opt, x < 0 ? 0 : (size_t)x);
        } else if (strcmp(key, "strict_placement") == 0) {
            st = minfer_options_set_strict_placement(opt, x != 0);
        } else if (strcmp(key, "check_nan") == 0) {
            st = minfer_options_set_check_nan(opt, x != 0);
        } else if (strcmp(key, "creation_deadline_ms") == 0) {
            if (x < 0) {
                PyErr_Format(exc_invalid_argument, "creation_deadline_ms %lld: use 0 (no limit) "
                             "or more", x);
                return -1;
            }
            st = minfer_options_set_creation_deadline(opt, (uint64_t)x);
        } else {
            goto unknown;
        }
    }
    if (st != MINFER_OK) {
        raise_status(st);
        return -1;
    }
    return 0;
unknown:
    PyErr_Format(exc_invalid_argument, "unknown session option '%s'", key);
    return -1;
}

/* Session(model, options=None): model is a path (str, bytes path or
 * os.PathLike), a bytes-like serialized model, or a Builder. */
static int Session_init(SessionObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"model", "options", NULL};
    PyObject *model, *options = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O", kwlist, &model, &options))
        return -1;
    if (self->s) {
        PyErr_SetString(PyExc_RuntimeError, "Session is already initialised");
        return -1;
    }
    minfer_options *opt = NULL;
    minfer_status st = minfer_options_create(&opt);
    if (st != MINFER_OK) {
        raise_status(st);
        return -1;
    }
    if (options && options != Py_None) {
        if (!PyDict_Check(options)) {
            PyErr_SetString(PyExc_TypeError, "options must be a dict");
            goto fail;
        }
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(options, &pos, &k, &v)) {
            const char *key = PyUnicode_AsUTF8(k);
            if (!key || apply_option(opt, key, v) < 0)
                goto fail;
        }
    }
    minfer_session *s = NULL;
    if (PyObject_TypeCheck(model, &BuilderType)) {
        /* With the GIL held: another thread could be adding to the builder. */
        st = minfer_session_create_from_builder(((BuilderObject *)model)->b, opt, &s);
    } else if (PyBytes_Check(model) || PyByteArray_Check(model) || PyMemoryView_Check(model)) {
        Py_buffer buf;
        if (PyObject_GetBuffer(model, &buf, PyBUF_SIMPLE) < 0)
            goto fail;
        Py_BEGIN_ALLOW_THREADS
        st = minfer_session_create_from_memory(buf.buf, (size_t)buf.len, opt, &s);
        Py_END_ALLOW_THREADS
        PyBuffer_Release(&buf);
    } else {
        PyObject *path = NULL;
        if (!PyUnicode_FSConverter(model, &path))
            goto fail;
        const char *p = PyBytes_AS_STRING(path);
        Py_BEGIN_ALLOW_THREADS
        st = minfer_session_create(p, opt, &s);
        Py_END_ALLOW_THREADS
        Py_DECREF(path);
    }
    if (st != MINFER_OK) {
        raise_status(st);
        goto fail;
    }
    minfer_options_free(opt);
    self->s = s;
    return 0;
fail:
    minfer_options_free(opt);
    return -1;
}

static void *free_session_main(void *s) {
    minfer_session_free(s);
    return NULL;
}

/* Frees self's session, with the GIL released: freeing cancels requests in
 * flight and waits for the workers, whose callbacks take the GIL. On a
 * worker (a callback dropped the last reference) it cannot wait for
 * itself: another thread frees it, once the callback has returned. */
static void session_release(SessionObject *self) {
    minfer_session *s = self->s;
    self->s = NULL;
    if (self->listed) {
        if (self->prev_async)
            self->prev_async->next_async = self->next_async;
        else
            async_sessions = self->next_async;
        if (self->next_async)
            self->next_async->prev_async = self->prev_async;
        self->prev_async = self->next_async = NULL;
        self->listed = 0;
    }
    if (!s)
        return;
    if (calling_back == s) {
        pthread_t th;
        pthread_attr_t at;
        int ok = pthread_attr_init(&at) == 0;
        ok = ok && pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
             pthread_create(&th, &at, free_session_main, s) == 0;
        pthread_attr_destroy(&at);
        /* Without a thread the session is left, not freed here: that would
         * wait for this very worker forever. */
        if (!ok)
            PyErr_WarnEx(PyExc_ResourceWarning,
                         "minfer: a session dropped in a request's callback could not be freed", 1);
        return;
    }
    /* Freeing may write a profile and join the pool's threads. */
    Py_BEGIN_ALLOW_THREADS
    minfer_session_free(s);
    Py_END_ALLOW_THREADS
}

static void Session_dealloc(SessionObject *self) {
    session_release(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int session_ready(SessionObject *self) {
    if (self->s)
        return 1;
    PyErr_SetString(exc_fail, self->closed ? "the session is closed" : "the session was not created");
    return 0;
}

/* A call that uses self->s holds the session from its first use to its
 * last: converting its arguments can run Python code (an __array__, a
 * __fspath__, a finalizer, another thread while the GIL is let go) that
 * calls close(), which refuses while active > 0. The reference keeps self
 * from being deallocated meanwhile. */
static int session_enter(SessionObject *self) {
    if (!session_ready(self))
        return 0;
    Py_INCREF(self);
    self->active++;
    return 1;
}

static void session_leave(SessionObject *self) {
    self->active--;
    Py_DECREF(self);
}

/* close(): frees the session now; requests in flight end cancelled. */
static PyObject *Session_close(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (self->s && calling_back == self->s)
        return PyErr_Format(exc_fail, "close: not from a callback of this session's requests (it "
                                      "runs on a worker that closing waits for)");
    if (self->active > 0)
        return PyErr_Format(exc_fail, "close: %zd call(s) of this session are still running (on "
                                      "this thread or others)", self->active);
    self->closed = 1;
    session_release(self);
    Py_RETURN_NONE;
}

static PyObject *value_infos(SessionObject *self, int outputs) {
    if (!session_ready(self))
        return NULL;
    size_t n = outputs ? minfer_session_output_count(self->s) : minfer_session_input_count(self->s);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        minfer_value_info vi;
        minfer_status st = outputs ? minfer_session_output_info(self->s, i, &vi)
                                   : minfer_session_input_info(self->s, i, &vi);
        PyObject *d = st == MINFER_OK ? info_dict(&vi) : raise_status(st);
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    return list;
}

static PyObject *Session_inputs(SessionObject *self, PyObject *unused) {
    (void)unused;
    return value_infos(self, 0);
}

static PyObject *Session_outputs(SessionObject *self, PyObject *unused) {
    (void)unused;
    return value_infos(self, 1);
}

/* The converted feed of a run or prepare: names point into the keys of a
 * snapshot of the dict's items, which keep holds with the arrays whose memory
 * the tensors wrap. */
typedef struct {
    size_t n;
    const char **names;
    minfer_tensor **values;
    unsigned char *borrowed; /* per value: a device value keep holds (not freed here) */
    PyObject *keep; /* the items, and the arrays whose memory the tensors wrap */
} feed;

static void feed_free(feed *f) {
    for (size_t i = 0; f->values && i < f->n; i++)
        if (!f->borrowed || !f->borrowed[i])
            minfer_tensor_free(f->values[i]);
    PyMem_Free(f->borrowed);
    PyMem_Free(f->values);
    PyMem_Free(f->names);
    Py_XDECREF(f->keep);
    memset(f, 0, sizeof *f);
}

/* Converts {name: value} with each input's declared kind and type; a name
 * that is not an input is passed on as a tensor, for minfer's own error. */
static int feed_make(minfer_session *s, PyObject *dict, feed *f) {
    memset(f, 0, sizeof *f);
    if (!PyDict_Check(dict)) {
        PyErr_Format(PyExc_TypeError, "input_feed must be a dict of name: array, not %s",
                     Py_TYPE(dict)->tp_name);
        return -1;
    }
    /* A snapshot of the items: converting a value can run Python code that
     * changes the dict, and the names point into the keys' UTF-8. */
    PyObject *items = PyDict_Items(dict);
    if (!items)
        return -1;
    Py_ssize_t n = PyList_GET_SIZE(items);
    f->names = PyMem_Calloc((size_t)(n ? n : 1), sizeof *f->names);
    f->values = PyMem_Calloc((size_t)(n ? n : 1), sizeof *f->values);
    f->borrowed = PyMem_Calloc((size_t)(n ? n : 1), sizeof *f->borrowed);
    f->keep = PyList_New(0);
    if (!f->names || !f->values || !f->borrowed || !f->keep ||
        PyList_Append(f->keep, items) < 0) {
        Py_DECREF(items);
        feed_free(f);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    Py_DECREF(items); /* keep holds it */
    size_t n_in = minfer_session_input_count(s);
    for (Py_ssize_t item = 0; item < n; item++) {
        PyObject *k = PyTuple_GET_ITEM(PyList_GET_ITEM(items, item), 0);
        PyObject *v = PyTuple_GET_ITEM(PyList_GET_ITEM(items, item), 1);
        const char *name = name_utf8(k, "input_feed");
        if (!name) {
            feed_free(f);
            return -1;
        }
        minfer_value_info vi = {0};
        vi.kind = MINFER_VALUE_TENSOR;
        for (size_t i = 0; i < n_in; i++) {
            minfer_value_info c;
            if (minfer_session_input_info(s, i, &c) == MINFER_OK && strcmp(c.name, name) == 0) {
                vi = c;
                break;
            }
        }
        f->names[f->n] = name;
        if (PyObject_TypeCheck(v, &DeviceTensorType)) { /* read in place by the run */
            f->values[f->n] = ((DeviceTensorObject *)v)->t;
            f->borrowed[f->n] = 1;
            f->n++;
            continue;
        }
        if (to_value(v, vi.kind, vi.contained, vi.dtype, f->keep, &f->values[f->n]) < 0) {
            PyObject *type, *value, *tb;
            /* Name the input in a conversion error. */
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            /* A UnicodeError takes five arguments, not a message: text that
             * cannot be UTF-8 is an invalid argument. */
            PyObject *cls = !type || PyErr_GivenExceptionMatches(type, PyExc_UnicodeError)
                ? exc_invalid_argument : type;
            PyErr_Format(cls, "input '%s': %S", name, value ? value : Py_None);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            feed_free(f);
            return -1;
        }
        f->n++;
    }
    return 0;
}

/* The declared element type of the output named name (UNDEFINED if none). */
static minfer_dtype output_dtype(const minfer_session *s, const char *name) {
    size_t n = minfer_session_output_count(s);
    for (size_t i = 0; i < n; i++) {
        minfer_value_info vi;
        if (minfer_session_output_info(s, i, &vi) == MINFER_OK && strcmp(vi.name, name) == 0)
            return vi.dtype;
    }
    return MINFER_DTYPE_UNDEFINED;
}

/* A tensor over the memory of arr, a numpy array the run writes output
 * `name` into (IOBinding's bound outputs): C-contiguous, aligned, writeable,
 * native byte order, of a numeric or bool type; the run checks its type and
 * shape against the output's. */
static int wrap_output(const minfer_session *s, const char *name, PyObject *obj,
                       minfer_tensor **out) {
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "output '%s': a bound output must be a numpy array, not %s",
                     name, Py_TYPE(obj)->tp_name);
        return -1;
    }
    PyArrayObject *arr = (PyArrayObject *)obj;
    if (!PyArray_IS_C_CONTIGUOUS(arr) || !PyArray_ISALIGNED(arr) || !PyArray_ISWRITEABLE(arr) ||
        !PyArray_ISNOTSWAPPED(arr)) {
        PyErr_Format(exc_invalid_argument,
                     "output '%s': a bound array must be C-contiguous, aligned, writeable and in "
                     "native byte order (the run writes into its memory)", name);
        return -1;
    }
    minfer_dtype dt = minfer_type_of(PyArray_DESCR(arr));
    if (dt == MINFER_DTYPE_UNDEFINED || dt == MINFER_DTYPE_STRING) {
        PyErr_Format(exc_invalid_argument, "output '%s': numpy dtype %R cannot be bound (numbers "
                     "and bool only)", name, (PyObject *)PyArray_DESCR(arr));
        return -1;
    }
    if (dt == MINFER_DTYPE_UINT16 && output_dtype(s, name) == MINFER_DTYPE_BFLOAT16)
        dt = MINFER_DTYPE_BFLOAT16; /* its bits, as outputs come out */
    int rank = PyArray_NDIM(arr);
    if (rank > MINFER_MAX_RANK) {
        PyErr_Format(exc_invalid_argument, "output '%s': a bound array of rank %d is above %d",
                     name, rank, MINFER_MAX_RANK);
        return -1;
    }
    int64_t dims[MINFER_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[i] = (int64_t)PyArray_DIM(arr, i);
    size_t nbytes = (size_t)PyArray_NBYTES(arr);
    minfer_status st = nbytes == 0
        ? minfer_tensor_create(dt, dims, (size_t)rank, out)
        : minfer_tensor_wrap(dt, dims, (size_t)rank, PyArray_DATA(arr), nbytes, out);
    if (st != MINFER_OK) {
        raise_status(st);
        return -1;
    }
    return 0;
}

/* run(output_names, feed, run_options=None, outputs=None) -> list. outputs,
 * if given, has one entry per requested output: None (the session
 * allocates it) or a numpy array the result is written into (no copy on the
 * Python side; that very array is the list's entry). */
static PyObject *Session_run(SessionObject *self, PyObject *args) {
    PyObject *names_obj, *dict, *ro_obj = Py_None, *bound_obj = Py_None, *dev_obj = Py_None;
    if (!PyArg_ParseTuple(args, "OO|OOO", &names_obj, &dict, &ro_obj, &bound_obj, &dev_obj))
        return NULL;
    if (!session_ready(self))
        return NULL;
    RunOptionsObject *ro = NULL;
    if (ro_obj != Py_None) {
        if (!PyObject_TypeCheck(ro_obj, &RunOptionsType)) {
            PyErr_Format(PyExc_TypeError, "run_options must be a RunOptions, not %s",
                         Py_TYPE(ro_obj)->tp_name);
            return NULL;
        }
        ro = (RunOptionsObject *)ro_obj;
        if (!ro->ro) {
            PyErr_SetString(exc_fail, "the run options were not created");
            return NULL;
        }
    }
    const char **out_names = NULL;
    Py_ssize_t n_out;
    PyObject *names_seq = NULL;
    if (names_obj == Py_None) {
        n_out = (Py_ssize_t)minfer_session_output_count(self->s);
    } else {
        names_seq = string_list(names_obj, &out_names, &n_out, "output_names must be a list of names or None");
        if (!names_seq)
            return NULL;
    }
    PyObject *result = NULL, *bound = NULL, *devs = NULL;
    minfer_tensor **outs = PyMem_Calloc((size_t)(n_out ? n_out : 1), sizeof *outs);
    const char **out_dev = NULL;
    feed f;
    if (!outs) {
        PyErr_NoMemory();
        goto done;
    }
    if (dev_obj != Py_None) {
        /* per output None (host memory) or the provider to leave it on */
        devs = PySequence_Tuple(dev_obj);
        if (!devs)
            goto done;
        if (PyTuple_GET_SIZE(devs) != n_out) {
            PyErr_Format(exc_invalid_argument, "run: %zd output devices for %zd requested outputs",
                         PyTuple_GET_SIZE(devs), n_out);
            goto done;
        }
        out_dev = PyMem_Calloc((size_t)(n_out ? n_out : 1), sizeof *out_dev);
        if (!out_dev) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t i = 0; i < n_out; i++) {
            PyObject *d = PyTuple_GET_ITEM(devs, i);
            if (d != Py_None && !(out_dev[i] = name_utf8(d, "output device")))
                goto done;
        }
    }
    if (bound_obj != Py_None) {
        /* A snapshot (the list may change while the run goes on); it holds
         * the arrays whose memory the run writes. */
        bound = PySequence_Tuple(bound_obj);
        if (!bound)
            goto done;
        if (PyTuple_GET_SIZE(bound) != n_out) {
            PyErr_Format(exc_invalid_argument, "run: %zd bound outputs for %zd requested outputs",
                         PyTuple_GET_SIZE(bound), n_out);
            goto done;
        }
        for (Py_ssize_t i = 0; i < n_out; i++) {
            PyObject *a = PyTuple_GET_ITEM(bound, i);
            if (a == Py_None)
                continue;
            if (PyObject_TypeCheck(a, &DeviceTensorType)) { /* written on the device */
                outs[i] = ((DeviceTensorObject *)a)->t;
                continue;
            }
            minfer_value_info vi;
            const char *oname = out_names ? out_names[i]
                : minfer_session_output_info(self->s, (size_t)i, &vi) == MINFER_OK ? vi.name : "?";
            if (wrap_output(self->s, oname, a, &outs[i]) < 0)
                goto done;
        }
    }
    if (feed_make(self->s, dict, &f) < 0)
        goto done;
    minfer_status st;
    minfer_session *s = self->s;
    /* The run holds the options (another thread may drop its reference and
     * call terminate meanwhile); active keeps their settings still. */
    Py_XINCREF(ro);
    if (ro)
        ro->active++;
    const minfer_run_options *cro = ro ? ro->ro : NULL;
    Py_BEGIN_ALLOW_THREADS
    st = minfer_session_run_bound(s, cro, f.names, (const minfer_tensor *const *)f.values, f.n,
                                  out_names, outs, out_dev, (size_t)n_out);
    Py_END_ALLOW_THREADS
    if (ro)
        ro->active--;
    Py_XDECREF(ro);
    feed_free(&f);
    if (st != MINFER_OK) {
        raise_status(st);
        goto done;
    }
    result = PyList_New(n_out);
    for (Py_ssize_t i = 0; i < n_out; i++) {
        PyObject *a = bound ? PyTuple_GET_ITEM(bound, i) : Py_None;
        if (a != Py_None) { /* written in place: the array (or device value) itself */
            if (!PyObject_TypeCheck(a, &DeviceTensorType))
                minfer_tensor_free(outs[i]);
            outs[i] = NULL;
            if (result) {
                Py_INCREF(a);
                PyList_SET_ITEM(result, i, a);
            }
            continue;
        }
        PyObject *v = !result ? NULL
            : strcmp(minfer_tensor_device(outs[i]), "cpu") != 0 ? device_wrap(outs[i], (PyObject *)self)
                                                                : from_owned(outs[i]);
        if (!v) {
            if (!result)
                minfer_tensor_free(outs[i]);
            Py_CLEAR(result);
        } else {
            PyList_SET_ITEM(result, i, v);
        }
        outs[i] = NULL;
    }
done:
    for (Py_ssize_t i = 0; outs && i < n_out; i++) {
        PyObject *a = bound ? PyTuple_GET_ITEM(bound, i) : Py_None;
        if (!PyObject_TypeCheck(a, &DeviceTensorType))
            minfer_tensor_free(outs[i]); /* wraps of bound arrays, on a failure */
    }
    Py_XDECREF(bound);
    Py_XDECREF(devs);
    PyMem_Free(out_dev);
    PyMem_Free(outs);
    PyMem_Free(out_names);
    Py_XDECREF(names_seq);
    return result;
}

/* device_tensor(provider, elem, shape, array=None) -> DeviceTensor: a
 * device value of s on provider, filled from array when given. */
static PyObject *Session_device_tensor(SessionObject *self, PyObject *args) {
    const char *prov;
    int elem;
    PyObject *shape_obj, *arr_obj = Py_None;
    if (!PyArg_ParseTuple(args, "siO|O", &prov, &elem, &shape_obj, &arr_obj))
        return NULL;
    if (!session_ready(self))
        return NULL;
    PyObject *shape = PySequence_Tuple(shape_obj);
    if (!shape)
        return NULL;
    Py_ssize_t rank = PyTuple_GET_SIZE(shape);
    if (rank > MINFER_MAX_RANK) {
        Py_DECREF(shape);
        return PyErr_Format(exc_invalid_argument, "a device value of rank %zd is above %d", rank,
                            MINFER_MAX_RANK);
    }
    int64_t dims[MINFER_MAX_RANK];
    for (Py_ssize_t i = 0; i < rank; i++) {
        dims[i] = (int64_t)PyLong_AsLongLong(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred()) {
            Py_DECREF(shape);
            return NULL;
        }
    }
    Py_DECREF(shape);
    minfer_tensor *t = NULL;
    minfer_status st = minfer_session_device_tensor_create(self->s, prov, (minfer_dtype)elem, dims,
                                                           (size_t)rank, &t);
    if (st != MINFER_OK)
        return raise_status(st);
    PyObject *d = device_wrap(t, (PyObject *)self);
    if (d && arr_obj != Py_None) {
        PyObject *r = DeviceTensor_update((DeviceTensorObject *)d, arr_obj);
        if (!r)
            Py_CLEAR(d);
        Py_XDECREF(r);
    }
    return d;
}

/* device_counters() -> {provider: {runs, launches, syncs, transfers}} for
 * the providers that count their runs (minfer_session_device_counters). */
static PyObject *Session_device_counters(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < minfer_session_provider_count(self->s); i++) {
        minfer_device_counters c = {sizeof c, 0, 0, 0, 0};
        if (minfer_session_device_counters(self->s, i, &c) != MINFER_OK)
            continue;
        PyObject *e = Py_BuildValue("{s:K,s:K,s:K,s:K}", "runs", (unsigned long long)c.runs,
                                    "launches", (unsigned long long)c.launches, "syncs",
                                    (unsigned long long)c.syncs, "transfers",
                                    (unsigned long long)c.transfers);
        if (!e || PyDict_SetItemString(d, minfer_session_provider_name(self->s, i), e) < 0)
            Py_CLEAR(d);
        Py_XDECREF(e);
    }
    return d;
}

static PyObject *Session_prepare(SessionObject *self, PyObject *dict) {
    if (!session_ready(self))
        return NULL;
    feed f;
    if (feed_make(self->s, dict, &f) < 0)
        return NULL;
    minfer_status st;
    minfer_session *s = self->s;
    Py_BEGIN_ALLOW_THREADS
    st = minfer_session_prepare(s, f.names, (const minfer_tensor *const *)f.values, f.n);
    Py_END_ALLOW_THREADS
    feed_free(&f);
    CHECK(st);
    Py_RETURN_NONE;
}

/* ---- Asynchronous requests (minfer_session_submit) -------------------------
 *
 * A Request is one minfer_request. Its completion callback runs on a minfer
 * worker thread: request_done takes the GIL there, calls the Python callback
 * given to submit (an exception goes to sys.unraisablehook; the worker goes
 * on) and lets go of the reference the engine held since submit, so a
 * Request lives at least until its callback has run. The inputs are copied
 * by minfer_session_submit, so the caller's arrays may change or go at once.
 * take() hands over the outputs of a finished request (the Python package
 * waits with the GIL released, on an event its callback sets). */

typedef struct {
    PyObject_HEAD
    minfer_request *r;
    const minfer_session *s; /* its session, only compared (it may be gone) */
    PyObject *callback; /* called once with the Request on a worker, then dropped */
    size_t n_outs;
    PyObject *result; /* take(): the outputs, once taken */
    PyObject *error;  /* take(): the request's exception, once raised */
} RequestObject;

static PyTypeObject RequestType;

#if PY_VERSION_HEX >= 0x030D0000
#define py_finalizing() Py_IsFinalizing()
#else
#define py_finalizing() _Py_IsFinalizing()
#endif

static void request_done(void *user, minfer_request *req, minfer_status status) {
    (void)status;
    /* A thread taking the GIL while the interpreter shuts down never gets
     * it back: the request's references are left to the process's end. */
    if (py_finalizing())
        return;
    PyGILState_STATE g = PyGILState_Ensure();
    RequestObject *self = user;
    const minfer_session *outer = calling_back; /* a callback of another session's close */
    calling_back = self->s;
    if (!self->r) /* the callback came before submit returned */
        self->r = req;
    PyObject *cb = self->callback;
    self->callback = NULL;
    if (cb) {
        PyObject *res = PyObject_CallOneArg(cb, (PyObject *)self);
        if (res)
            Py_DECREF(res);
        else
            PyErr_WriteUnraisable(cb);
        Py_DECREF(cb);
    }
    Py_DECREF(self); /* the engine's reference */
    calling_back = outer;
    PyGILState_Release(g);
}

static void Request_dealloc(RequestObject *self) {
    /* Submitted, it is finished by now: the engine's reference kept it. */
    minfer_request_free(self->r);
    self->r = NULL;
    Py_CLEAR(self->callback);
    Py_CLEAR(self->result);
    Py_CLEAR(self->error);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Request_done(RequestObject *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(self->r && minfer_request_done(self->r));
}

static PyObject *Request_cancel(RequestObject *self, PyObject *unused) {
    (void)unused;
    if (self->r) {
        minfer_status st = minfer_request_cancel(self->r);
        CHECK(st);
    }
    Py_RETURN_NONE;
}

static PyObject *request_raise_cached(RequestObject *self) {
    PyErr_SetObject((PyObject *)Py_TYPE(self->error), self->error);
    return NULL;
}

/* take() -> list: the outputs of a finished request, or its exception. */
static PyObject *Request_take(RequestObject *self, PyObject *unused) {
    (void)unused;
    if (self->result)
        return Py_NewRef(self->result);
    if (self->error)
        return request_raise_cached(self);
    /* Not finished, minfer_request_wait would block with the GIL held. */
    if (!self->r || !minfer_request_done(self->r))
        return PyErr_Format(exc_fail, "take: the request has not finished");
    size_t n = self->n_outs;
    minfer_tensor **outs = PyMem_Calloc(n ? n : 1, sizeof *outs);
    if (!outs)
        return PyErr_NoMemory();
    minfer_status st = minfer_request_wait(self->r, outs, n); /* returns at once */
    PyObject *result = NULL;
    if (st == MINFER_CANCELLED) {
        /* a request's own class; a run cancelled by RunOptions.terminate
         * raises Fail, as ORT does for its terminate flag */
        raise_status_as(st, exc_cancelled);
    } else if (st != MINFER_OK) {
        raise_status(st);
    } else {
        result = PyList_New((Py_ssize_t)n);
        for (size_t i = 0; i < n; i++) {
            PyObject *v = result ? from_owned(outs[i]) : NULL;
            if (!v) {
                if (!result)
                    minfer_tensor_free(outs[i]);
                Py_CLEAR(result);
            } else {
                PyList_SET_ITEM(result, (Py_ssize_t)i, v);
            }
            outs[i] = NULL;
        }
    }
    PyMem_Free(outs);
    if (result) {
        self->result = Py_NewRef(result);
        return result;
    }
    /* The outputs are gone: every later take raises the same exception. */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb)
        PyException_SetTraceback(value, tb);
    self->error = Py_XNewRef(value);
    PyErr_Restore(type, value, tb);
    return NULL;
}

static PyMethodDef Request_methods[] = {
    {"done", (PyCFunction)Request_done, METH_NOARGS, "whether the request has finished"},
    {"cancel", (PyCFunction)Request_cancel, METH_NOARGS,
     "asks the request to stop: queued, it ends cancelled; running, at its next node"},
    {"take", (PyCFunction)Request_take, METH_NOARGS,
     "take() -> list: a finished request's outputs, or raises its error"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RequestType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minfer._minfer.Request",
    .tp_basicsize = sizeof(RequestObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A request of Session.submit (a minfer_request)",
    .tp_dealloc = (destructor)Request_dealloc,
    .tp_methods = Request_methods,
};

/* submit(feed, callback=None, block=True) -> Request: a run of every output.
 * block False: raises Busy at once when the queue is full. */
static PyObject *Session_submit(SessionObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"input_feed", "callback", "block", NULL};
    PyObject *dict, *cb = Py_None;
    int block = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op", kwlist, &dict, &cb, &block))
        return NULL;
    if (!session_ready(self))
        return NULL;
    if (cb != Py_None && !PyCallable_Check(cb))
        return PyErr_Format(PyExc_TypeError, "callback must be callable, not %s",
                            Py_TYPE(cb)->tp_name);
    if (block && calling_back == self->s)
        /* A callback runs on a worker: a submit that waits for room in a full
         * queue would wait for that worker, itself. */
        return PyErr_Format(exc_fail, "submit from a callback of this session's requests must not "
                                      "block: pass block=False");
    feed f;
    if (feed_make(self->s, dict, &f) < 0)
        return NULL;
    RequestObject *req = PyObject_New(RequestObject, &RequestType);
    if (!req) {
        feed_free(&f);
        return NULL;
    }
    req->r = NULL;
    req->s = self->s;
    req->callback = cb == Py_None ? NULL : Py_NewRef(cb);
    req->n_outs = minfer_session_output_count(self->s);
    req->result = req->error = NULL;
    Py_INCREF(req); /* the engine's, let go by request_done */
    minfer_session *s = self->s;
    minfer_request *r = NULL;
    minfer_status st;
    Py_BEGIN_ALLOW_THREADS
    if (block)
        st = minfer_session_submit(s, f.names, (const minfer_tensor *const *)f.values, f.n,
                                   request_done, req, &r);
    else
        st = minfer_session_try_submit(s, f.names, (const minfer_tensor *const *)f.values, f.n,
                                       request_done, req, &r);
    Py_END_ALLOW_THREADS
    feed_free(&f); /* submit copied the inputs */
    if (st != MINFER_OK) {
        raise_status(st); /* nothing was queued: no callback comes */
        Py_DECREF(req);
        Py_DECREF(req);
        return NULL;
    }
    req->r = r;
    if (!self->listed) {
        self->next_async = async_sessions;
        if (async_sessions)
            async_sessions->prev_async = self;
        async_sessions = self;
        self->listed = 1;
    }
    return (PyObject *)req;
}

static PyObject *Session_providers(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    size_t n = minfer_session_provider_count(self->s);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *name = PyUnicode_FromString(minfer_session_provider_name(self->s, i));
        if (!name) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, name);
    }
    return list;
}

static PyObject *Session_placement(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    size_t n = minfer_session_node_count(self->s);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        minfer_node_placement p;
        minfer_status st = minfer_session_node_placement(self->s, i, &p);
        PyObject *d = st != MINFER_OK ? raise_status(st)
            : Py_BuildValue("{s:s,s:s,s:s,s:s,s:s}", "node", p.node_name ? p.node_name : "",
                            "op_type", p.op_type, "domain", p.domain ? p.domain : "", "provider",
                            p.provider, "declined", p.declined ? p.declined : "");
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    return list;
}

/* The memory figures of the last plan, and its planned buffers; None before
 * any plan. */
static PyObject *Session_memory(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    minfer_memory_info m;
    CHECK(minfer_session_memory_info(self->s, &m));
    if (!m.has_plan)
        Py_RETURN_NONE;
    PyObject *buffers = PyList_New((Py_ssize_t)m.planned_tensors);
    for (size_t i = 0; buffers && i < m.planned_tensors; i++) {
        minfer_planned_tensor pt;
        minfer_status st = minfer_session_planned_tensor(self->s, i, &pt);
        PyObject *d = st != MINFER_OK ? raise_status(st)
            : Py_BuildValue("{s:s,s:s,s:K,s:K,s:i,s:i,s:O}", "name", pt.name, "domain", pt.domain,
                            "offset", (unsigned long long)pt.offset, "size",
                            (unsigned long long)pt.size, "first_step", (int)pt.first_step,
                            "last_step", (int)pt.last_step, "workspace",
                            pt.is_workspace ? Py_True : Py_False);
        if (!d) {
            Py_CLEAR(buffers);
            break;
        }
        PyList_SET_ITEM(buffers, (Py_ssize_t)i, d);
    }
    if (!buffers)
        return NULL;
    return Py_BuildValue(
        "{s:s,s:K,s:K,s:K,s:K,s:K,s:n,s:n,s:K,s:N}", "planner",
        m.planner == MINFER_PLANNER_LINEAR ? "linear" : "greedy", "arena_bytes",
        (unsigned long long)m.arena_bytes, "device_arena_bytes",
        (unsigned long long)m.device_arena_bytes, "intermediate_bytes",
        (unsigned long long)m.intermediate_bytes, "lower_bound_bytes",
        (unsigned long long)m.lower_bound_bytes, "constant_bytes",
        (unsigned long long)m.constant_bytes, "planned_tensors", (Py_ssize_t)m.planned_tensors,
        "copies_per_run", (Py_ssize_t)m.copies_per_run, "copy_bytes_per_run",
        (unsigned long long)m.copy_bytes_per_run, "buffers", buffers);
}

static PyObject *Session_stats(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    minfer_run_stats r;
    CHECK(minfer_session_stats(self->s, &r));
    return Py_BuildValue("{s:K,s:d,s:d,s:d,s:d,s:d,s:d,s:d}", "runs", (unsigned long long)r.runs,
                         "mean_ms", r.mean_ms, "min_ms", r.min_ms, "max_ms", r.max_ms, "p50_ms",
                         r.p50_ms, "p90_ms", r.p90_ms, "throughput", r.throughput,
                         "since_reset_s", r.since_reset_s);
}

static PyObject *Session_reset_stats(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    CHECK(minfer_session_reset_stats(self->s));
    Py_RETURN_NONE;
}

static PyObject *Session_node_profile(SessionObject *self, PyObject *arg) {
    if (!session_ready(self))
        return NULL;
    size_t i = PyLong_AsSize_t(arg);
    if (i == (size_t)-1 && PyErr_Occurred())
        return NULL;
    double total = 0, flops = 0;
    uint64_t runs = 0;
    CHECK(minfer_session_node_profile(self->s, i, &total, &runs, &flops));
    return Py_BuildValue("(dKd)", total, (unsigned long long)runs, flops);
}

static PyObject *path_call(SessionObject *self, PyObject *arg,
                           minfer_status (*fn)(minfer_session *, const char *)) {
    if (!session_ready(self))
        return NULL;
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    minfer_status st = fn(self->s, PyBytes_AS_STRING(path));
    Py_DECREF(path);
    CHECK(st);
    Py_RETURN_NONE;
}

static PyObject *Session_write_profile(SessionObject *self, PyObject *arg) {
    return path_call(self, arg, minfer_session_write_profile);
}

static PyObject *Session_write_dot(SessionObject *self, PyObject *arg) {
    return path_call(self, arg, minfer_session_write_dot);
}

/* metadata() -> dict: the ModelProto's producer, domain, doc strings,
 * versions, graph name and metadata_props (as a dict). */
static PyObject *Session_metadata(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    minfer_model_metadata md;
    CHECK(minfer_session_metadata(self->s, &md));
    PyObject *props = PyDict_New();
    for (size_t i = 0; props && i < md.n_props; i++) {
        const char *k, *v;
        minfer_status st = minfer_session_metadata_prop(self->s, i, &k, &v);
        if (st != MINFER_OK) {
            Py_DECREF(props);
            return raise_status(st);
        }
        PyObject *ko = PyUnicode_DecodeUTF8(k, (Py_ssize_t)strlen(k), "replace");
        PyObject *vo = ko ? PyUnicode_DecodeUTF8(v, (Py_ssize_t)strlen(v), "replace") : NULL;
        if (!vo || PyDict_SetItem(props, ko, vo) < 0)
            Py_CLEAR(props);
        Py_XDECREF(ko);
        Py_XDECREF(vo);
    }
    if (!props)
        return NULL;
    /* Strings from the model need not be UTF-8: "s" would raise. */
    const char *strs[] = {md.producer_name, md.producer_version, md.domain, md.graph_name,
                          md.doc_string, md.graph_doc_string};
    const char *keys[] = {"producer_name", "producer_version", "domain", "graph_name",
                          "doc_string", "graph_doc_string"};
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < sizeof strs / sizeof *strs; i++) {
        const char *x = strs[i] ? strs[i] : "";
        PyObject *o = PyUnicode_DecodeUTF8(x, (Py_ssize_t)strlen(x), "replace");
        if (!o || PyDict_SetItemString(d, keys[i], o) < 0)
            Py_CLEAR(d);
        Py_XDECREF(o);
    }
    PyObject *mv = d ? PyLong_FromLongLong(md.model_version) : NULL;
    PyObject *iv = mv ? PyLong_FromLongLong(md.ir_version) : NULL;
    if (!iv || PyDict_SetItemString(d, "model_version", mv) < 0 ||
        PyDict_SetItemString(d, "ir_version", iv) < 0 ||
        PyDict_SetItemString(d, "metadata_props", props) < 0)
        Py_CLEAR(d);
    Py_XDECREF(mv);
    Py_XDECREF(iv);
    Py_DECREF(props);
    return d;
}

static PyObject *Session_thread_count(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    return PyLong_FromLong(minfer_session_thread_count(self->s));
}

/* schedule(): minfer_session_schedule_info as a dict. */
static PyObject *Session_schedule(SessionObject *self, PyObject *unused) {
    (void)unused;
    if (!session_ready(self))
        return NULL;
    minfer_schedule_info si = {.struct_size = sizeof si};
    CHECK(minfer_session_schedule_info(self->s, &si));
    static const char *const names[] = {"sequential", "parallel", "pipeline"};
    const char *name = si.scheduler >= 0 && si.scheduler < 3 ? names[si.scheduler] : "unknown";
    return Py_BuildValue("{s:s,s:i,s:O,s:O,s:s,s:K,s:K}", "scheduler", name, "inter_op_threads",
                         si.inter_op_threads, "has_plan", si.has_plan ? Py_True : Py_False,
                         "concurrent", si.concurrent ? Py_True : Py_False, "why_sequential",
                         si.why_sequential ? si.why_sequential : "", "arena_bytes",
                         (unsigned long long)si.arena_bytes, "sequential_arena_bytes",
                         (unsigned long long)si.sequential_arena_bytes);
}

/* Every method but close holds the session for the call (session_enter). */
#define HELD(fn)                                                                               \
    static PyObject *fn##_held(SessionObject *self, PyObject *arg) {                           \
        if (!session_enter(self))                                                              \
            return NULL;                                                                       \
        PyObject *r = fn(self, arg);                                                           \
        session_leave(self);                                                                   \
        return r;                                                                              \
    }
HELD(Session_inputs)
HELD(Session_memory)
HELD(Session_metadata)
HELD(Session_node_profile)
HELD(Session_outputs)
HELD(Session_placement)
HELD(Session_prepare)
HELD(Session_device_tensor)
HELD(Session_device_counters)
HELD(Session_providers)
HELD(Session_reset_stats)
HELD(Session_run)
HELD(Session_schedule)
HELD(Session_stats)
HELD(Session_thread_count)
HELD(Session_write_dot)
HELD(Session_write_profile)

static PyObject *Session_submit_held(SessionObject *self, PyObject *args, PyObject *kw) {
    if (!session_enter(self))
        return NULL;
    PyObject *r = Session_submit(self, args, kw);
    session_leave(self);
    return r;
}

static PyMethodDef Session_methods[] = {
    {"metadata", (PyCFunction)Session_metadata_held, METH_NOARGS, "the model's metadata, as a dict"},
    {"thread_count", (PyCFunction)Session_thread_count_held, METH_NOARGS,
     "threads of the session's pool, the calling thread included"},
    {"schedule", (PyCFunction)Session_schedule_held, METH_NOARGS,
     "the scheduler and its figures (minfer_session_schedule_info), as a dict"},
    {"inputs", (PyCFunction)Session_inputs_held, METH_NOARGS, "the graph inputs, as dicts"},
    {"outputs", (PyCFunction)Session_outputs_held, METH_NOARGS, "the graph outputs, as dicts"},
    {"submit", (PyCFunction)(void (*)(void))Session_submit_held, METH_VARARGS | METH_KEYWORDS,
     "submit(input_feed, callback=None, block=True) -> Request"},
    {"close", (PyCFunction)Session_close, METH_NOARGS,
     "frees the session now; requests in flight end cancelled"},
    {"run", (PyCFunction)Session_run_held, METH_VARARGS,
     "run(output_names or None, {name: value}, run_options=None, outputs=None, devices=None) "
     "-> list of values; outputs: per requested output None, a numpy array or a DeviceTensor "
     "written in place; devices: per output None or the provider a new output stays on"},
    {"device_counters", (PyCFunction)Session_device_counters_held, METH_NOARGS,
     "per counting provider, its last run's launches, syncs and transfers"},
    {"device_tensor", (PyCFunction)Session_device_tensor_held, METH_VARARGS,
     "device_tensor(provider, elem, shape, array=None) -> DeviceTensor on that provider"},
    {"prepare", (PyCFunction)Session_prepare_held, METH_O,
     "prepare({name: array}): plan for these shapes without running"},
    {"providers", (PyCFunction)Session_providers_held, METH_NOARGS,
     "the providers that loaded, in preference order"},
    {"placement", (PyCFunction)Session_placement_held, METH_NOARGS,
     "each node's provider, and why the providers before it declined"},
    {"memory", (PyCFunction)Session_memory_held, METH_NOARGS,
     "the last plan's memory figures and planned buffers; None before any"},
    {"stats", (PyCFunction)Session_stats_held, METH_NOARGS, "latency statistics of the runs"},
    {"reset_stats", (PyCFunction)Session_reset_stats_held, METH_NOARGS, "restart the statistics"},
    {"node_profile", (PyCFunction)Session_node_profile_held, METH_O,
     "node_profile(index) -> (total_ms, runs, flops), with profiling on"},
    {"write_profile", (PyCFunction)Session_write_profile_held, METH_O,
     "write_profile(path): the Chrome trace so far"},
    {"write_dot", (PyCFunction)Session_write_dot_held, METH_O, "write_dot(path): the graph as DOT"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SessionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minfer._minfer.Session",
    .tp_basicsize = sizeof(SessionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "Session(model, options=None): a minfer_session",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Session_init,
    .tp_dealloc = (destructor)Session_dealloc,
    .tp_methods = Session_methods,
};

/* ---- Module functions ---------------------------------------------------- */

static PyObject *mod_version(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    return PyUnicode_FromString(minfer_version());
}

/* The provider libraries this process finds, each probed as a session would. */
static PyObject *mod_provider_list(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    minfer_provider_list *l = NULL;
    minfer_status st;
    Py_BEGIN_ALLOW_THREADS
    st = minfer_provider_list_create(&l);
    Py_END_ALLOW_THREADS
    if (st != MINFER_OK)
        return raise_status(st);
    size_t n = minfer_provider_list_count(l);
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        const minfer_provider_info *p = minfer_provider_list_get(l, i);
        PyObject *d = Py_BuildValue("{s:s,s:s,s:k,s:s,s:O,s:s}", "name", p->name, "version",
                                    p->version, "abi_version", (unsigned long)p->abi_version,
                                    "path", p->path, "usable", p->usable ? Py_True : Py_False,
                                    "reason", p->reason);
        if (!d) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, d);
    }
    minfer_provider_list_free(l);
    return list;
}

/* load_pb(path, kind="tensor") -> (value, name): a TensorProto,
 * SequenceProto or OptionalProto file (the ONNX test-case format). */
static PyObject *mod_load_pb(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *path_obj, *path = NULL;
    const char *kind = "tensor";
    if (!PyArg_ParseTuple(args, "O|s", &path_obj, &kind))
        return NULL;
    minfer_value_kind k = strcmp(kind, "sequence") == 0 ? MINFER_VALUE_SEQUENCE
                        : strcmp(kind, "optional") == 0 ? MINFER_VALUE_OPTIONAL
                        : MINFER_VALUE_TENSOR;
    if (!PyUnicode_FSConverter(path_obj, &path))
        return NULL;
    minfer_tensor *t = NULL;
    char *name = NULL;
    minfer_status st = minfer_value_load_pb(PyBytes_AS_STRING(path), k, &t, &name);
    Py_DECREF(path);
    if (st != MINFER_OK)
        return raise_status(st);
    PyObject *v = from_owned(t);
    PyObject *r = v ? Py_BuildValue("(Ns)", v, name ? name : "") : NULL;
    free(name);
    return r;
}

/* save_pb(array, name, path): writes a TensorProto. */
static PyObject *mod_save_pb(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *value, *path_obj, *path = NULL;
    const char *name;
    if (!PyArg_ParseTuple(args, "OzO", &value, &name, &path_obj))
        return NULL;
    if (!PyUnicode_FSConverter(path_obj, &path))
        return NULL;
    PyObject *keep = PyList_New(0);
    minfer_tensor *t = NULL;
    if (!keep || to_tensor(value, MINFER_DTYPE_UNDEFINED, keep, &t) < 0) {
        Py_XDECREF(keep);
        Py_DECREF(path);
        return NULL;
    }
    minfer_status st = minfer_tensor_save_pb(t, name, PyBytes_AS_STRING(path));
    minfer_tensor_free(t);
    Py_DECREF(keep);
    Py_DECREF(path);
    CHECK(st);
    Py_RETURN_NONE;
}

/* _close_all(): closes every session that submitted (at exit, before the
 * interpreter stops: their workers' callbacks need it running). */
static PyObject *mod_close_all(PyObject *m, PyObject *unused) {
    (void)m;
    (void)unused;
    for (;;) {
        SessionObject *o = async_sessions;
        while (o && o->active > 0) /* a daemon thread's call: left running */
            o = o->next_async;
        if (!o)
            break;
        Py_INCREF(o);
        o->closed = 1;
        session_release(o); /* unlinks o */
        Py_DECREF(o);
    }
    Py_RETURN_NONE;
}

/* _write_unraisable(exc, obj): exc to sys.unraisablehook, as raised in obj. */
static PyObject *mod_write_unraisable(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *exc, *obj;
    if (!PyArg_ParseTuple(args, "OO", &exc, &obj))
        return NULL;
    if (!PyExceptionInstance_Check(exc))
        return PyErr_Format(PyExc_TypeError, "an exception instance is needed");
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), Py_NewRef(exc),
                  PyException_GetTraceback(exc));
    PyErr_WriteUnraisable(obj);
    Py_RETURN_NONE;
}

/* optimize_model(in_path, out_path, level): the model optimized at level
 * (0..3) written as ONNX (minfer_optimize_model; SessionOptions'
 * optimized_model_filepath). */
static PyObject *mod_optimize_model(PyObject *m, PyObject *args) {
    (void)m;
    PyObject *in_obj, *out_obj, *in = NULL, *out = NULL;
    int level;
    if (!PyArg_ParseTuple(args, "OOi", &in_obj, &out_obj, &level))
        return NULL;
    if (!PyUnicode_FSConverter(in_obj, &in))
        return NULL;
    if (!PyUnicode_FSConverter(out_obj, &out)) {
        Py_DECREF(in);
        return NULL;
    }
    minfer_status st;
    Py_BEGIN_ALLOW_THREADS
    st = minfer_optimize_model(PyBytes_AS_STRING(in), PyBytes_AS_STRING(out), level, NULL);
    Py_END_ALLOW_THREADS
    Py_DECREF(in);
    Py_DECREF(out);
    CHECK(st);
    Py_RETURN_NONE;
}

/* check_plugin(path): loads and checks a custom-op library as a session
 * would (SessionOptions.register_custom_ops_library fails at once, as ORT's). */
static PyObject *mod_check_plugin(PyObject *m, PyObject *arg) {
    (void)m;
    PyObject *path = NULL;
    if (!PyUnicode_FSConverter(arg, &path))
        return NULL;
    minfer_options *opt = NULL;
    minfer_status st = minfer_options_create(&opt);
    if (st == MINFER_OK)
        st = minfer_options_add_plugin(opt, PyBytes_AS_STRING(path));
    minfer_options_free(opt);
    Py_DECREF(path);
    CHECK(st);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"_close_all", mod_close_all, METH_NOARGS, "closes the sessions that submitted requests"},
    {"_write_unraisable", mod_write_unraisable, METH_VARARGS,
     "_write_unraisable(exc, obj): reports exc through sys.unraisablehook"},
    {"version", mod_version, METH_NOARGS, "the library's version string"},
    {"provider_list", mod_provider_list, METH_NOARGS,
     "the provider libraries found, each probed as a session would"},
    {"load_pb", mod_load_pb, METH_VARARGS,
     "load_pb(path, kind='tensor') -> (value, name) from a .pb file"},
    {"save_pb", mod_save_pb, METH_VARARGS, "save_pb(array, name, path): write a TensorProto"},
    {"check_plugin", mod_check_plugin, METH_O,
     "check_plugin(path): load and check a custom-op library as a session would"},
    {"set_global_thread_pool", mod_set_global_thread_pool, METH_O,
     "set_global_thread_pool(threads): the pool sessions with global_thread_pool=True share"},
    {"global_thread_pool_size", mod_global_thread_pool_size, METH_NOARGS,
     "global_thread_pool_size(): the shared pool's threads, 0 while there is none"},
    {"optimize_model", mod_optimize_model, METH_VARARGS,
     "optimize_model(in_path, out_path, level): write the optimized model as ONNX"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "minfer._minfer",
    "The C side of the minfer package: sessions, builders and tensors over libminfer.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

static int add_exception(PyObject *m, PyObject **slot, const char *name, PyObject *bases,
                         const char *doc) {
    char full[64];
    snprintf(full, sizeof full, "minfer.%s", name);
    *slot = PyErr_NewExceptionWithDoc(full, doc, bases, NULL);
    if (!*slot)
        return -1;
    return PyModule_AddObjectRef(m, name, *slot);
}

/* The exception classes, one per kind of failure as ONNX Runtime's are:
 * separate classes (an InvalidArgument is no Fail), with minfer.Error, a
 * RuntimeError, as their one common base; NotImplemented is also a
 * NotImplementedError. *ni_bases is the caller's to release. */
static int add_exceptions(PyObject *m, PyObject **ni_bases) {
    static PyObject *exc_error;
    if (add_exception(m, &exc_error, "Error", PyExc_RuntimeError,
                      "The base of minfer's exceptions; `status` holds the minfer_status number.") < 0 ||
        add_exception(m, &exc_fail, "Fail", exc_error,
                      "A minfer call failed (limits, deadlines, a terminated run, memory).") < 0 ||
        add_exception(m, &exc_invalid_argument, "InvalidArgument", exc_error,
                      "A bad argument, input name, shape or element type.") < 0 ||
        add_exception(m, &exc_no_such_file, "NoSuchFile", exc_error,
                      "A file could not be opened or read.") < 0 ||
        add_exception(m, &exc_invalid_graph, "InvalidGraph", exc_error,
                      "The model is malformed or inconsistent.") < 0 ||
        add_exception(m, &exc_ep_fail, "EPFail", exc_error,
                      "An execution provider failed to load, initialise or run.") < 0 ||
        add_exception(m, &exc_runtime, "RuntimeException", exc_error,
                      "A kernel failed while running.") < 0 ||
        add_exception(m, &exc_busy, "Busy", exc_error,
                      "The asynchronous queue is full: nothing was submitted.") < 0 ||
        add_exception(m, &exc_cancelled, "Cancelled", exc_error,
                      "A request cancelled, or ended by closing its session.") < 0)
        return -1;
    *ni_bases = PyTuple_Pack(2, exc_error, PyExc_NotImplementedError);
    if (!*ni_bases || add_exception(m, &exc_not_implemented, "NotImplemented", *ni_bases,
                                    "An op, type or feature minfer does not have.") < 0)
        return -1;
    return 0;
}

PyMODINIT_FUNC PyInit__minfer(void) {
    import_array();
    if (PyType_Ready(&SessionType) < 0 || PyType_Ready(&BuilderType) < 0 ||
        PyType_Ready(&RunOptionsType) < 0 || PyType_Ready(&RequestType) < 0 ||
        PyType_Ready(&DeviceTensorType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    PyObject *ni_bases = NULL;
    if (add_exceptions(m, &ni_bases) < 0)
        goto fail;
    Py_CLEAR(ni_bases);
    if (PyModule_AddObjectRef(m, "Session", (PyObject *)&SessionType) < 0 ||
        PyModule_AddObjectRef(m, "Builder", (PyObject *)&BuilderType) < 0 ||
        PyModule_AddObjectRef(m, "RunOptions", (PyObject *)&RunOptionsType) < 0 ||
        PyModule_AddObjectRef(m, "Request", (PyObject *)&RequestType) < 0 ||
        PyModule_AddObjectRef(m, "DeviceTensor", (PyObject *)&DeviceTensorType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_RANK", MINFER_MAX_RANK) < 0)
        goto fail;
    return m;
fail:
    Py_XDECREF(ni_bases);
    Py_DECREF(m);
    return NULL;
}
