/*
 * Element types: their sizes and names (minfer.h's minfer_dtype_size and
 * minfer_dtype_name), below the host tensors (tensor.c) and the
 * containers (containers.c) that both read them.
 */
#include "util/internal.h"

size_t minfer_dtype_size(minfer_dtype dtype) {
    switch (dtype) {
    case MINFER_DTYPE_FLOAT: return 4;
    case MINFER_DTYPE_UINT8: return 1;
    case MINFER_DTYPE_INT8: return 1;
    case MINFER_DTYPE_UINT16: return 2;
    case MINFER_DTYPE_INT16: return 2;
    case MINFER_DTYPE_INT32: return 4;
    case MINFER_DTYPE_INT64: return 8;
    case MINFER_DTYPE_STRING: return sizeof(char *);
    case MINFER_DTYPE_BOOL: return 1;
    case MINFER_DTYPE_FLOAT16: return 2;
    case MINFER_DTYPE_DOUBLE: return 8;
    case MINFER_DTYPE_UINT32: return 4;
    case MINFER_DTYPE_UINT64: return 8;
    case MINFER_DTYPE_COMPLEX64: return 8;
    case MINFER_DTYPE_COMPLEX128: return 16;
    case MINFER_DTYPE_BFLOAT16: return 2;
    case MINFER_DTYPE_UNDEFINED: break;
    }
    return 0;
}

const char *minfer_dtype_name(minfer_dtype dtype) {
    switch (dtype) {
    case MINFER_DTYPE_FLOAT: return "float";
    case MINFER_DTYPE_UINT8: return "uint8";
    case MINFER_DTYPE_INT8: return "int8";
    case MINFER_DTYPE_UINT16: return "uint16";
    case MINFER_DTYPE_INT16: return "int16";
    case MINFER_DTYPE_INT32: return "int32";
    case MINFER_DTYPE_INT64: return "int64";
    case MINFER_DTYPE_STRING: return "string";
    case MINFER_DTYPE_BOOL: return "bool";
    case MINFER_DTYPE_FLOAT16: return "float16";
    case MINFER_DTYPE_DOUBLE: return "double";
    case MINFER_DTYPE_UINT32: return "uint32";
    case MINFER_DTYPE_UINT64: return "uint64";
    case MINFER_DTYPE_COMPLEX64: return "complex64";
    case MINFER_DTYPE_COMPLEX128: return "complex128";
    case MINFER_DTYPE_BFLOAT16: return "bfloat16";
    case MINFER_DTYPE_UNDEFINED: break;
    }
    return "undefined";
}
