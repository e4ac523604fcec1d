/*
 * Shared definitions of the minfer OpenCL kernels. The host builds all the
 * .cl files of this directory as one program, with these macros defined
 * per device:
 *   VW  vector width of the register tiles (16 on CPU devices such as PoCL,
 *       4 on GPUs); VT / VLOAD / VSTORE are the matching float type and calls
 *   MR  rows (GEMM) or output positions (Conv) of a register tile
 *   FP16 (defined or not) float tensors are stored as half in device
 *       memory (provider option fp16=1); arithmetic stays float
 * Every buffer argument comes with an element offset: tensors live at an
 * offset inside the session's device arena.
 *
 * Float tensors in global memory are only touched through DT, LD / ST
 * (one element) and VLDG / VSTG (VW elements): plain float accesses, or
 * with FP16 vload_half / vstore_half, which are core OpenCL (no
 * cl_khr_fp16 needed) and need only 2-byte alignment. Private scratch
 * stays float. BITS is an unsigned type as wide as one stored float, for
 * kernels that only move elements.
 */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define VT CAT(float, VW)
#define VLOAD CAT(vload, VW)
#define VSTORE CAT(vstore, VW)
#define NR (2 * VW)

/* max and min that propagate NaN, as the CPU provider's Max, Min and
 * ReduceMax do (fmax and fmin return the other operand): where either is
 * NaN, a + b is NaN. For scalars and vectors alike. */
#define MAX_NAN(a, b) select(fmax(a, b), (a) + (b), isnan(a) | isnan(b))
#define MIN_NAN(a, b) select(fmin(a, b), (a) + (b), isnan(a) | isnan(b))

#ifdef FP16
#define DT half
#define LD(p, i) vload_half((i), (p))
#define ST(p, i, v) vstore_half((v), (i), (p))
#define VLDG(p) CAT(vload_half, VW)(0, (p))
#define VSTG(v, p) CAT(vstore_half, VW)((v), 0, (p))
#define BITS ushort
#else
#define DT float
#define LD(p, i) ((p)[i])
#define ST(p, i, v) ((p)[i] = (v))
#define VLDG(p) VLOAD(0, (p))
#define VSTG(v, p) VSTORE((v), 0, (p))
#define BITS uint
#endif

/* Up to 8 dimensions with two stride sets; layout matches ocl_shape8 in ocl.h. */
typedef struct shape8 {
    int rank;
    int d[8];
    int sa[8];
    int sb[8];
} shape8;

/* The window of a convolution or pool over up to 3 spatial dimensions
 * (depth, height, width; 1-D and 2-D windows put 1 in the leading ones):
 * input and output sizes, kernel, strides, begin pads, dilations, and the
 * input size plus the end pad (for count_include_pad). Layout matches
 * ocl_win3 in ocl.h. */
typedef struct win3 {
    int i[3], o[3], k[3], s[3], p[3], d[3], e[3];
} win3;

/* Activation codes: OCL_ACT_* in ocl.h. */
#define ACT_NONE 0
#define ACT_RELU 1
#define ACT_CLIP 2
#define ACT_SIGMOID 3
#define ACT_HARDSIGMOID 4
#define ACT_HARDSWISH 5
#define ACT_SILU 6
#define ACT_LEAKYRELU 7
#define ACT_TANH 8
#define ACT_EXP 9
#define ACT_LOG 10
#define ACT_SQRT 11
#define ACT_ABS 12
#define ACT_NEG 13
#define ACT_RECIP 14
#define ACT_FLOOR 15
#define ACT_CEIL 16
#define ACT_ERF 17
#define ACT_ELU 18
#define ACT_SELU 19
#define ACT_SOFTPLUS 20
#define ACT_SOFTSIGN 21
#define ACT_SIN 22
#define ACT_COS 23
#define ACT_GELU 24
#define ACT_GELU_TANH 25
#define ACT_ROUND 26
#define ACT_SIGN 27
#define ACT_THRESHOLDED 28
#define ACT_SCALE 29
#define ACT_TAN 30
#define ACT_ATAN 31

/* One body for scalars and vectors: comparisons give 1 or -1 and select()
 * reads them the same way for either. */
#define ACT_BODY(T)                                                                        \
    switch (op) {                                                                          \
    case ACT_RELU: return fmax(x, (T)0.0f);                                                \
    case ACT_CLIP: return fmin(fmax(x, (T)a), (T)b);                                       \
    case ACT_SIGMOID: return (T)1.0f / ((T)1.0f + exp(-x));                                \
    case ACT_HARDSIGMOID: return fmax((T)0.0f, fmin((T)1.0f, (T)a * x + (T)b));            \
    case ACT_HARDSWISH: return x * fmax((T)0.0f, fmin((T)1.0f, x / (T)6.0f + (T)0.5f));    \
    case ACT_SILU: return x / ((T)1.0f + exp(-x));                                         \
    case ACT_LEAKYRELU: return select((T)a * x, x, x >= (T)0.0f);                          \
    case ACT_TANH: return tanh(x);                                                         \
    case ACT_EXP: return exp(x);                                                           \
    case ACT_LOG: return log(x);                                                           \
    case ACT_SQRT: return sqrt(x);                                                         \
    case ACT_ABS: return fabs(x);                                                          \
    case ACT_NEG: return -x;                                                               \
    case ACT_RECIP: return (T)1.0f / x;                                                    \
    case ACT_FLOOR: return floor(x);                                                       \
    case ACT_CEIL: return ceil(x);                                                         \
    case ACT_ERF: return erf(x);                                                           \
    case ACT_ELU: return select((T)a * (exp(x) - (T)1.0f), x, x >= (T)0.0f);               \
    case ACT_SELU: return (T)b * select((T)a * (exp(x) - (T)1.0f), x, x > (T)0.0f);        \
    case ACT_SOFTPLUS: return log(exp(x) + (T)1.0f);                                       \
    case ACT_SOFTSIGN: return x / ((T)1.0f + fabs(x));                                     \
    case ACT_SIN: return sin(x);                                                           \
    case ACT_COS: return cos(x);                                                           \
    case ACT_GELU: return (T)0.5f * x * ((T)1.0f + erf(x * (T)0.70710678118654752f));      \
    case ACT_GELU_TANH:                                                                    \
        return (T)0.5f * x *                                                               \
               ((T)1.0f + tanh((T)0.79788456080286536f * (x + (T)0.044715f * x * x * x))); \
    case ACT_ROUND: return rint(x);                                                        \
    case ACT_SIGN: return sign(x);                                                         \
    case ACT_THRESHOLDED: return select((T)0.0f, x, x > (T)a);                             \
    case ACT_SCALE: return x * (T)a;                                                       \
    case ACT_TAN: return tan(x);                                                           \
    case ACT_ATAN: return atan(x);                                                         \
    default: return x;                                                                     \
    }

inline float act1(float x, int op, float a, float b) { ACT_BODY(float) }
inline VT actv(VT x, int op, float a, float b) { ACT_BODY(VT) }
