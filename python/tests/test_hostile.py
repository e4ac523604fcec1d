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


def _random_value(rng):
    """A random thing to feed an input declared float [1, 10]."""
    kind = rng.integers(0, 12)
    dtypes = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.bool_, np.float16,
              np.complex64, object, np.str_]
    if kind == 0:
        return None
    if kind == 1:
        return [[float(x) for x in range(10)]]
    if kind == 2:
        return "not an array"
    if kind == 3:
        return int(rng.integers(-5, 5))
    dt = dtypes[rng.integers(0, len(dtypes))]
    rank = int(rng.integers(0, 4)) if kind != 4 else 32
    shape = (1, 10) if kind in (5, 6, 7, 8) else tuple(int(d) for d in rng.integers(0, 3, size=rank))
    base = np.ones(shape, dtype=np.float64)
    if dt is np.str_:
        a = base.astype(np.str_)
    else:
        a = base.astype(dt)
    if kind == 6 and a.ndim == 2:  # non-contiguous: a transposed view of [10, 1]
        a = np.ones((10, 1), dtype=a.dtype).T
    elif kind == 7:  # read-only
        a = a.copy()
        a.setflags(write=False)
    elif kind == 8 and a.dtype.kind in "fiu" and a.dtype.itemsize > 1:  # non-native byte order
        a = a.astype(a.dtype.newbyteorder())
    elif kind == 9:  # unaligned float32 [1, 10]
        raw = np.zeros(41, np.uint8)
        a = raw[1:].view(np.float32).reshape(1, 10)
    return a


def test_random_feeds_end_in_a_result_or_an_exception(add_model):
    """A property test: 600 random feeds (dtypes, ranks 0..32, empty dims,
    non-contiguous, read-only, byte-swapped, unaligned arrays, lists,
    scalars, None, strings, missing, extra and renamed keys) each end in
    outputs equal to A + B or in one of the binding's exceptions."""
    rng = np.random.default_rng(39)
    s = _minfer.Session(add_model)
    ok = raised = 0
    for _ in range(600):
        feed = {}
        for name in ("A", "B"):
            r = rng.integers(0, 10)
            if r == 0:
                continue  # missing
            key = name if r != 1 else name + "x"  # a wrong name
            feed[key] = _random_value(rng) if rng.integers(0, 3) else np.ones((1, 10), np.float32)
        if rng.integers(0, 8) == 0:
            feed["extra"] = np.ones(1, np.float32)
        names = None if rng.integers(0, 4) else (["C"] if rng.integers(0, 2) else ["nope"])
        try:
            out = s.run(names, feed)
        except (minfer.Error, TypeError, ValueError, OverflowError, UnicodeError) as e:
            assert str(e), "an exception without a message"
            raised += 1
            continue
        a = np.asarray(feed["A"], dtype=np.float32)
        b = np.asarray(feed["B"], dtype=np.float32)
        assert np.array_equal(out[0], a + b)
        ok += 1
    print("random feeds: %d results, %d exceptions" % (ok, raised))
    assert ok > 0 and raised > 0


def test_provider_option_with_a_comma_adds_no_key(add_model):
    """Option values are joined as "k=v,k=v" with no escapes: a ',' in a
    value (or ',', '=' in a key) is refused, naming it, instead of adding a
    key the caller did not write."""
    for opts in ({"device": "0,evil=1"}, {"a,b": "1"}, {"a=b": "1"}, {"": "1"}):
        with pytest.raises(minfer.InvalidArgument, match="provider option"):
            minfer.InferenceSession(add_model, providers=[("cpu", opts)])


def test_inter_op_threads_out_of_range_names_the_value(add_model):
    """inter_op_threads over the C setter's 1024 (4097 was sent on as -1 and
    reported as -1) is an InvalidArgument naming the value given."""
    so = minfer.SessionOptions()
    so.inter_op_num_threads = 5000
    so.execution_mode = minfer.ExecutionMode.ORT_PARALLEL
    with pytest.raises(minfer.InvalidArgument, match="5000"):
        minfer.InferenceSession(add_model, sess_options=so, providers=["cpu"])
    so.inter_op_num_threads = 2
    minfer.InferenceSession(add_model, sess_options=so, providers=["cpu"])
