"""Several Python threads running one session at once: same results as
sequential runs, and other threads go on while a run is in flight (the GIL
is released)."""

import os
import sys
import threading

import numpy as np
import pytest

import minfer
from conftest import MODELS_DIR


def test_threads_share_one_session(dynamic_model):
    sess = minfer.InferenceSession(dynamic_model, providers=["cpu"])
    rng = np.random.default_rng(1)
    feeds = [rng.standard_normal((1 + i % 3, 5 + i)).astype(np.float32) for i in range(16)]
    expected = [sess.run(None, {"x": x}) for x in feeds]
    errors = []

    def worker(k):
        try:
            for round_ in range(40):
                i = (k * 7 + round_) % len(feeds)
                y, s = sess.run(None, {"x": feeds[i]})
                np.testing.assert_array_equal(y, expected[i][0])
                np.testing.assert_array_equal(s, expected[i][1])
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert sess.stats()["runs"] == len(feeds) + 8 * 40


def test_gil_released_during_run():
    case = os.path.join(MODELS_DIR, "resnet18")
    if not os.path.isdir(case):
        pytest.skip("no shared model at %s" % case)
    sess = minfer.InferenceSession(os.path.join(case, "model.onnx"), providers=["cpu"])
    x = minfer.load_tensor(os.path.join(case, "test_data_set_0", "input_0.pb"))
    name = sess.get_inputs()[0].name
    started = threading.Event()
    # With no forced switch, the worker keeps the GIL until it gives it up
    # itself: only a run that releases it lets the main thread count.
    old = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    try:

        def worker():
            started.set()
            sess.run(None, {name: x})

        t = threading.Thread(target=worker)
        counted = 0
        t.start()
        started.wait()
        while t.is_alive():
            counted += 1
            t.join(0.001)
    finally:
        sys.setswitchinterval(old)
    assert counted >= 3, counted


def test_one_thread_limit(add_model):
    """The C API's limit, MINFER_MAX_THREADS (1024), as the CLI's --threads."""
    so = minfer.SessionOptions()
    so.intra_op_num_threads = 1025
    with pytest.raises(minfer.InvalidArgument, match="0 \\(one per CPU\\) to 1024"):
        minfer.InferenceSession(add_model, so, providers=["cpu"])
    so.intra_op_num_threads = 2
    so.add_session_config_entry("minfer.inter_op_threads", "1025")
    with pytest.raises(minfer.InvalidArgument, match="inter_op_threads 1025: .* to 1024"):
        minfer.InferenceSession(add_model, so, providers=["cpu"])
