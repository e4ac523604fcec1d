#!/usr/bin/python3
"""Writes tests/data/loop_nested.onnx for tests/test_control.c (needs the
Debian package python3-onnx; the .onnx is checked in, this records how it
was made).

A Loop with three carried values (float [2], float scalar, int64 scalar) and
two scan outputs; its body reads the outer value k, and holds an If whose
branches read k (two scopes out) and the body's carried s."""
import os

import onnx
from onnx import TensorProto, helper as h

f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
then_g = h.make_graph([h.make_node("Add", ["s_in", "k"], ["s_then"])], "then", [],
                      [h.make_tensor_value_info("s_then", f, [])])
else_g = h.make_graph([h.make_node("Sub", ["s_in", "k"], ["s_else"])], "else", [],
                      [h.make_tensor_value_info("s_else", f, [])])
body = h.make_graph(
    [
        h.make_node("Add", ["a_in", "k"], ["a_out"]),
        h.make_node("Constant", [], ["one"], value=h.make_tensor("one", i64, [], [1])),
        h.make_node("Greater", ["i", "one"], ["late"]),
        h.make_node("If", ["late"], ["s_out"], then_branch=then_g, else_branch=else_g),
        h.make_node("Add", ["c_in", "one"], ["c_out"]),
        h.make_node("Identity", ["a_out"], ["scan_a"]),
        h.make_node("Constant", [], ["two"], value=h.make_tensor("two", f, [], [2.0])),
        h.make_node("Mul", ["s_out", "two"], ["scan_s"]),
        h.make_node("Identity", ["cond"], ["cond_out"]),
    ],
    "body",
    [h.make_tensor_value_info("i", i64, []), h.make_tensor_value_info("cond", b, []),
     h.make_tensor_value_info("a_in", f, [2]), h.make_tensor_value_info("s_in", f, []),
     h.make_tensor_value_info("c_in", i64, [])],
    [h.make_tensor_value_info("cond_out", b, []), h.make_tensor_value_info("a_out", f, [2]),
     h.make_tensor_value_info("s_out", f, []), h.make_tensor_value_info("c_out", i64, []),
     h.make_tensor_value_info("scan_a", f, [2]), h.make_tensor_value_info("scan_s", f, [])])
graph = h.make_graph(
    [
        h.make_node("Constant", [], ["true"], value=h.make_tensor("true", b, [], [True])),
        h.make_node("Constant", [], ["s0"], value=h.make_tensor("s0", f, [], [0.0])),
        h.make_node("Constant", [], ["c0"], value=h.make_tensor("c0", i64, [], [0])),
        h.make_node("Loop", ["M", "true", "a", "s0", "c0"],
                    ["a_final", "s_final", "c_final", "scan_a_all", "scan_s_all"], body=body),
    ],
    "loop_nested",
    [h.make_tensor_value_info("M", i64, []), h.make_tensor_value_info("a", f, [2]),
     h.make_tensor_value_info("k", f, [])],
    [h.make_tensor_value_info("a_final", f, [2]), h.make_tensor_value_info("s_final", f, []),
     h.make_tensor_value_info("c_final", i64, []),
     h.make_tensor_value_info("scan_a_all", f, [None, 2]),
     h.make_tensor_value_info("scan_s_all", f, [None])])
model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, os.path.join(os.path.dirname(os.path.abspath(__file__)), "loop_nested.onnx"))
