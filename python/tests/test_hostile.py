"""Hostile callers of the Python binding (issue 39): Python code run while a
call converts its arguments, keys and names that C would read differently,
text that is not UTF-8. Each ends in an exception carrying the message, never
a crash."""

import threading

import numpy as np
import pytest

import minfer
from minfer import _minfer


class Closer:
    """An array-like whose conversion closes the session it is fed to."""

    def __init__(self, sess):
        self.sess = sess
        self.raised = None

    def __array__(self, dtype=None, copy=None):
        try:
            self.sess.close()
        except minfer.Fail as e:  # the call holds the session: close refuses
            self.raised = e
        return np.ones((1, 10), np.float32)


def test_close_during_input_conversion_is_refused(add_model):
    s = _minfer.Session(add_model)
    for call in ("run", "prepare", "submit"):
        c = Closer(s)
        feed = {"A": c, "B": np.ones((1, 10), np.float32)}
        if call == "run":
            out = s.run(None, feed)
            assert np.array_equal(out[0], np.full((1, 10), 2, np.float32))
        elif call == "prepare":
            s.prepare(feed)
        else:
            r = s.submit(feed)
            while not r.done():
                threading.Event().wait(0.001)
            assert np.array_equal(r.take()[0], np.full((1, 10), 2, np.float32))
        assert c.raised is not None and "running" in str(c.raised), call
    s.close()
    with pytest.raises(minfer.Fail, match="closed"):
        s.run(None, {"A": np.ones((1, 10), np.float32), "B": np.ones((1, 10), np.float32)})


def test_close_from_another_thread_during_conversion(add_model):
    """Another thread closes while this one converts (its __array__ lets
    the GIL go): the close is refused or comes after; the run never uses a
    freed session."""
    for _ in range(20):
        s = _minfer.Session(add_model)
        go = threading.Event()
        errors = []

        class Slow:
            def __array__(self, dtype=None, copy=None):
                go.set()
                for _ in range(200):  # several GIL switches
                    pass
                threading.Event().wait(0.001)
                return np.ones((1, 10), np.float32)

        def closer():
            go.wait()
            try:
                s.close()
            except minfer.Fail as e:
                errors.append(e)

        t = threading.Thread(target=closer)
        t.start()
        try:
            out = s.run(None, {"A": Slow(), "B": np.ones((1, 10), np.float32)})
            assert np.array_equal(out[0], np.full((1, 10), 2, np.float32))
        except minfer.Fail as e:
            assert "closed" in str(e)
        t.join()
        s.close()


def test_output_names_as_a_string_is_refused(add_model):
    s = _minfer.Session(add_model)
    feed = {"A": np.ones((1, 10), np.float32), "B": np.ones((1, 10), np.float32)}
    with pytest.raises(TypeError, match="list of names"):
        s.run("C", feed)
    assert len(s.run(["C"], feed)) == 1


def test_feed_key_with_nul_is_not_its_prefix(add_model):
    s = _minfer.Session(add_model)
    feed = {"A\0junk": np.ones((1, 10), np.float32), "B": np.ones((1, 10), np.float32)}
    with pytest.raises(ValueError, match="NUL"):
        s.run(None, feed)
    with pytest.raises(ValueError, match="NUL"):
        s.run(["C\0x"], {"A": np.ones((1, 10), np.float32), "B": np.ones((1, 10), np.float32)})


def test_lone_surrogate_is_an_invalid_argument(tmp_path):
    from conftest import save_model
    from onnx import TensorProto, helper

    path = save_model(
        tmp_path / "id.onnx",
        [helper.make_node("Identity", ["A"], ["B"])],
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("S", TensorProto.STRING, [2])],
        [helper.make_tensor_value_info("B", TensorProto.FLOAT, [2])],
    )
    a = np.ones(2, np.float32)
    s = _minfer.Session(path)
    with pytest.raises(minfer.InvalidArgument, match="input 'S'.*surrogate"):
        s.run(None, {"A": a, "S": np.array(["ok", "\ud800"], dtype=object)})
    with pytest.raises(UnicodeError):
        s.run(None, {"A": a, "S\ud800": np.array(["a", "b"], dtype=object)})
    out = s.run(None, {"A": a, "S": np.array(["a", "b"], dtype=object)})
    assert np.array_equal(out[0], a)
