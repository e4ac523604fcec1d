# Copies a test case (CASE_DIR OUT_DIR) with its large float initializers emptied (their shape,
# mean and std kept in the doc_string), to be refilled by regen.py there.
import sys, os, shutil, numpy as np, onnx
from onnx import numpy_helper
src, dst = sys.argv[1], sys.argv[2]
m = onnx.load(os.path.join(src, "model.onnx"))
for i, t in enumerate(m.graph.initializer):
    if t.data_type != onnx.TensorProto.FLOAT: continue
    a = numpy_helper.to_array(t)
    if a.size < 4096: continue
    e = onnx.TensorProto(); e.name = t.name; e.data_type = t.data_type; e.dims.extend(t.dims)
    e.doc_string = "regen %r %r" % (float(a.mean()), float(a.std()))
    m.graph.initializer[i].CopyFrom(e)
os.makedirs(os.path.join(dst, "test_data_set_0"), exist_ok=True)
onnx.save(m, os.path.join(dst, "model.onnx"))
for f in os.listdir(os.path.join(src, "test_data_set_0")):
    if f.startswith("input_"):
        shutil.copy(os.path.join(src, "test_data_set_0", f), os.path.join(dst, "test_data_set_0", f))
