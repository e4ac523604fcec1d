#!/usr/bin/python3
"""The accuracy of a reduced precision against float, per test case.

    tools/precision-accuracy.py MINFER PROVIDERS PRECISION CASE_DIR...

For each ONNX test case (model.onnx, test_data_set_N/{input,output}_K.pb)
runs `MINFER run --precision PRECISION` on every data set and compares the
outputs with the case's reference outputs (ONNX Runtime's, in float):
the largest absolute difference, that difference relative to the largest
reference magnitude, and for outputs whose last axis holds class scores
(rank >= 2, more than one class) the share of rows whose arg max agrees.
Prints one line per case and exits 1 when a run fails. Needs numpy and
onnx (Debian's python3-onnx). Used for docs/PERFORMANCE.md's bf16 table.
"""
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, numpy_helper


def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def case_accuracy(minfer, providers, precision, case):
    worst_abs, worst_rel, agree, rows = 0.0, 0.0, 0, 0
    sets = sorted(glob.glob(os.path.join(case, "test_data_set_*")))
    for ds in sets:
        with tempfile.TemporaryDirectory() as out:
            cmd = [minfer, "run", os.path.join(case, "model.onnx"), "--providers", providers,
                   "--precision", precision, "--inputs", ds, "--outputs", out, "--force"]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr.strip()))
            for ref_path in sorted(glob.glob(os.path.join(ds, "output_*.pb"))):
                ref = load_pb(ref_path).astype(np.float64)
                got = load_pb(os.path.join(out, os.path.basename(ref_path))).astype(np.float64)
                if got.shape != ref.shape:
                    raise RuntimeError("%s: shape %s, expected %s" % (ref_path, got.shape,
                                                                      ref.shape))
                if ref.size == 0:
                    continue
                diff = float(np.max(np.abs(got - ref)))
                worst_abs = max(worst_abs, diff)
                worst_rel = max(worst_rel, diff / max(float(np.max(np.abs(ref))), 1e-30))
                if ref.ndim >= 2 and ref.shape[-1] > 1:
                    a = np.argmax(got.reshape(-1, ref.shape[-1]), axis=1)
                    b = np.argmax(ref.reshape(-1, ref.shape[-1]), axis=1)
                    agree += int(np.sum(a == b))
                    rows += a.size
    return len(sets), worst_abs, worst_rel, agree, rows


def main():
    if len(sys.argv) < 5:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    minfer, providers, precision = sys.argv[1:4]
    rc = 0
    print("%-28s %5s %12s %12s %s" % ("case", "sets", "max abs", "max rel", "argmax agrees"))
    for case in sys.argv[4:]:
        name = os.path.basename(os.path.normpath(case))
        try:
            n, dabs, drel, agree, rows = case_accuracy(minfer, providers, precision, case)
        except RuntimeError as e:
            print("%-28s FAILED %s" % (name, e))
            rc = 1
            continue
        am = "%d/%d" % (agree, rows) if rows else "-"
        print("%-28s %5d %12.3g %12.3g %s" % (name, n, dabs, drel, am))
    return rc


if __name__ == "__main__":
    sys.exit(main())
