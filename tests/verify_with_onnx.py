#!/usr/bin/python3
"""Checks outputs written by `minfer run --outputs DIR` against an ONNX test
case's reference files, independently of minfer's own reader and comparer:
the .pb files are read with the onnx package's numpy_helper and compared
with numpy.

usage: verify_with_onnx.py [--rtol R] [--atol A] CASE_DIR OUT_DIR [CASE_DIR OUT_DIR ...]
       verify_with_onnx.py [--rtol R] [--atol A] --list FILE

CASE_DIR/test_data_set_0/output_K.pb are the references; OUT_DIR/output_K.pb
what minfer wrote. An expected output is matched by name when OUT_DIR holds
an output of that name, else by position (as `minfer test` matches them).
--list reads "CASE_DIR<TAB>OUT_DIR" lines. Values must have the reference's
element type and shape; floats must satisfy |got - want| <= atol + rtol *
|want| (NaN matches NaN, an infinity only itself; complex numbers part by
part), everything else must be equal. Prints a line per mismatching case
and a summary; exits 1 if any case mismatched, 2 on a usage error.
"""
import argparse
import glob
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper


KINDS = {"tensor_type": "tensor", "sequence_type": "sequence", "optional_type": "optional"}


def output_kinds(case):
    """The kind of each graph output of the case's model ('tensor' when the
    model does not say): a .pb file does not say which proto it holds."""
    m = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
    return [KINDS.get(o.type.WhichOneof("value"), "tensor") for o in m.graph.output]


def load_value(path, kind="tensor"):
    """The .pb at path, read as kind: ('tensor', TensorProto), ('sequence',
    SequenceProto) or ('optional', OptionalProto)."""
    with open(path, "rb") as f:
        data = f.read()
    v = {"tensor": onnx.TensorProto, "sequence": onnx.SequenceProto,
         "optional": onnx.OptionalProto}[kind]()
    v.ParseFromString(data)
    return kind, v


def as_array(t):
    """A TensorProto as (numpy array, element type), bfloat16 as its raw bits."""
    if t.data_type == onnx.TensorProto.BFLOAT16:
        if t.HasField("raw_data"):
            bits = np.frombuffer(t.raw_data, dtype=np.uint16)
        else:
            bits = np.asarray(t.int32_data, dtype=np.int32).astype(np.uint16)
        return bits.reshape(tuple(t.dims)), t.data_type
    return numpy_helper.to_array(t), t.data_type


FLOAT_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
               onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128)


def compare_tensor(got_t, want_t, rtol, atol):
    """None when got matches want, else the reason."""
    got, gt = as_array(got_t)
    want, wt = as_array(want_t)
    # ONNX's older test data stores bfloat16 tensors as uint16 bits.
    if wt == onnx.TensorProto.UINT16 and gt == onnx.TensorProto.BFLOAT16:
        wt = gt
    if gt != wt:
        return "element type %s, expected %s" % (onnx.TensorProto.DataType.Name(gt),
                                                 onnx.TensorProto.DataType.Name(wt))
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    if wt == onnx.TensorProto.BFLOAT16:
        # Compare bfloat16 as floats: the bits shifted into a float32's top half.
        got = (got.astype(np.uint32) << 16).view(np.float32)
        want = (want.astype(np.uint32) << 16).view(np.float32)
        wt = onnx.TensorProto.FLOAT
    if wt in FLOAT_TYPES:
        if np.iscomplexobj(want):
            got = np.stack([got.real, got.imag], axis=-1)
            want = np.stack([want.real, want.imag], axis=-1)
        g = got.astype(np.float64)
        w = want.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            ok = np.where(np.isnan(w), np.isnan(g),
                          np.where(np.isinf(w), g == w,
                                   ~np.isnan(g) & (np.abs(g - w) <= atol + rtol * np.abs(w))))
    else:
        ok = got == want
    ok = np.asarray(ok)
    if ok.all():
        return None
    bad = np.flatnonzero(~ok.reshape(-1))
    first = bad[0]
    return "index %d: got %r, expected %r (%d of %d differ)" % (
        first, got.reshape(-1)[first], want.reshape(-1)[first], bad.size, ok.size)


def compare_value(got, want, rtol, atol):
    (gk, gv), (wk, wv) = got, want
    if gk != wk:
        return "a %s, expected a %s" % (gk, wk)
    if wk == "tensor":
        return compare_tensor(gv, wv, rtol, atol)
    if wk == "sequence":
        gl, wl = list(gv.tensor_values), list(wv.tensor_values)
        if len(gl) != len(wl):
            return "sequence of %d, expected %d" % (len(gl), len(wl))
        for i, (a, b) in enumerate(zip(gl, wl)):
            why = compare_tensor(a, b, rtol, atol)
            if why:
                return "element %d: %s" % (i, why)
        return None
    for field, kind in (("tensor_value", "tensor"), ("sequence_value", "sequence")):
        gh, wh = gv.HasField(field), wv.HasField(field)
        if gh != wh:
            return "optional %s, expected %s" % ("set" if gh else "empty",
                                                 "set" if wh else "empty")
        if wh:
            return compare_value((kind, getattr(gv, field)), (kind, getattr(wv, field)),
                                 rtol, atol)
    return None


def by_index(paths):
    def key(p):
        return int(os.path.basename(p)[len("output_"):-len(".pb")])
    return sorted(paths, key=key)


def check_case(case, out, rtol, atol):
    """A list of reasons (empty when every output matches)."""
    wants = by_index(glob.glob(os.path.join(case, "test_data_set_0", "output_*.pb")))
    gots = by_index(glob.glob(os.path.join(out, "output_*.pb")))
    if not wants:
        return ["no reference outputs in %s" % case]
    kinds = output_kinds(case)
    def kind_of(i):
        return kinds[i] if i < len(kinds) else "tensor"

    got_vals = [load_value(p, kind_of(i)) for i, p in enumerate(gots)]
    got_names = {}
    for i, (kind, v) in enumerate(got_vals):
        name = getattr(v, "name", "")
        if name:
            got_names[name] = i
    errs = []
    for k, path in enumerate(wants):
        want = load_value(path, kind_of(k))
        name = getattr(want[1], "name", "")
        i = got_names.get(name, k) if name else k
        if i >= len(got_vals):
            errs.append("output %d ('%s'): not written" % (k, name))
            continue
        why = compare_value(got_vals[i], want, rtol, atol)
        if why:
            errs.append("output %d ('%s'): %s" % (k, name, why))
    return errs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--atol", type=float, default=1e-7)
    ap.add_argument("--list", help="file of CASE_DIR<TAB>OUT_DIR lines")
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    pairs = []
    if a.list:
        with open(a.list) as f:
            for line in f:
                line = line.rstrip("\n")
                if line:
                    case, out = line.split("\t")
                    pairs.append((case, out))
    if len(a.dirs) % 2:
        ap.error("CASE_DIR and OUT_DIR come in pairs")
    pairs += list(zip(a.dirs[0::2], a.dirs[1::2]))
    if not pairs:
        ap.error("no cases given")
    bad = 0
    for case, out in pairs:
        try:
            errs = check_case(case, out, a.rtol, a.atol)
        except Exception as e:  # a file that does not parse is a mismatch, not a crash
            errs = ["%s: %s" % (type(e).__name__, e)]
        if errs:
            bad += 1
            print("MISMATCH %s: %s" % (case, "; ".join(errs)))
    print("verify_with_onnx: %d of %d cases match" % (len(pairs) - bad, len(pairs)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
