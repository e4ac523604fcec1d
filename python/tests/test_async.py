"""The asynchronous API in Python (InferenceSession.submit, minfer.Request,
run_async, arun; docs/python.md): outputs equal to run's on a shared model,
many requests in flight from several threads, the bounded queue's Busy
answer, inputs copied at submit, cancellation, a failing request among good
ones, a callback that raises, and closing or dropping a session with
requests in flight.

Several tests hold the session's one worker (sequential scheduler) in the
first request's callback, on an event the test sets: the queue's state is
then known without timing. They also check that result() releases the GIL
while it waits: the worker needs the GIL to call back, so a wait holding it
would hang."""

import asyncio
import gc
import os
import sys
import threading

import numpy as np
import pytest

import minfer
from conftest import MODELS_DIR, SANITIZED

SQUEEZENET = os.path.join(MODELS_DIR, "squeezenet1_1")


def _options(**config):
    so = minfer.SessionOptions()
    so.intra_op_num_threads = 2
    for k, v in config.items():
        so.add_session_config_entry("minfer." + k, str(v))
    return so


def _add_session(add_model, **config):
    return minfer.InferenceSession(add_model, _options(**config), providers=["cpu"])


def _feed(k):
    a = np.full((1, 10), float(k), np.float32)
    return {"A": a, "B": np.arange(10, dtype=np.float32).reshape(1, 10)}


def _want(k):
    return np.full((1, 10), float(k), np.float32) + np.arange(10, dtype=np.float32)


class Held:
    """The first request's callback waits until release(): the one worker is
    held, the queue empty."""

    def __init__(self, sess):
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.req = sess.submit(_feed(0), callback=self._hold)

    def _hold(self, req):
        self.entered.set()
        self.gate.wait()

    def __enter__(self):
        assert self.entered.wait(60), "the worker never called back"
        return self

    def release(self):
        self.gate.set()

    def __exit__(self, *exc):
        self.gate.set()
        np.testing.assert_array_equal(self.req.result()[0], _want(0))


# Under the sanitizers a SqueezeNet run on the CPU provider costs seconds:
# there, the pipeline only (the scheduler that splits a request over
# workers) and two requests.
@pytest.mark.parametrize("scheduler", ["pipeline"] if SANITIZED else ["sequential", "pipeline"])
def test_outputs_equal_run_on_squeezenet(scheduler):
    if not os.path.isdir(SQUEEZENET):
        pytest.skip("no shared models at " + MODELS_DIR)
    sess = minfer.InferenceSession(os.path.join(SQUEEZENET, "model.onnx"),
                                   _options(scheduler=scheduler), providers=["cpu"])
    name = sess.get_inputs()[0].name
    xs = [minfer.load_tensor(os.path.join(SQUEEZENET, "test_data_set_%d" % i, "input_0.pb"))
          for i in (0, 1)]
    want = [sess.run(None, {name: x})[0] for x in xs]
    reqs = [sess.submit({name: xs[k % 2]}) for k in range(2 if SANITIZED else 6)]
    for k, req in enumerate(reqs):
        out = req.result()
        assert len(out) == 1
        np.testing.assert_array_equal(out[0], want[k % 2])
        assert req.done() and not req.cancelled() and req.exception() is None


def test_many_requests_from_many_threads(add_model):
    sess = _add_session(add_model, queue_depth=2)  # submits wait for room: back-pressure
    called = []
    lock = threading.Lock()

    def count(req):
        with lock:
            called.append(req)

    results = {}

    def submitter(t):
        reqs = [(k, sess.submit(_feed(100 * t + k), callback=count)) for k in range(40)]
        results[t] = [(k, r.result()) for k, r in reqs]

    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    sess.close()  # waits for the workers: every callback has run
    assert len(called) == 160
    for t in range(4):
        for k, out in results[t]:
            np.testing.assert_array_equal(out[0], _want(100 * t + k))


def test_busy_when_the_queue_is_full(add_model):
    sess = _add_session(add_model, queue_depth=1)
    with Held(sess) as held:
        r1 = sess.submit(_feed(1), block=False)  # into the empty queue
        with pytest.raises(minfer.Busy, match="queue is full") as e:
            sess.submit(_feed(2), block=False)
        assert e.value.status > 0 and isinstance(e.value, minfer.Error)
        held.release()
        np.testing.assert_array_equal(r1.result()[0], _want(1))
    # r1 finished: the queue is empty again
    r3 = sess.submit(_feed(3), block=False)
    np.testing.assert_array_equal(r3.result()[0], _want(3))


def test_inputs_are_copied_at_submit(add_model):
    sess = _add_session(add_model)
    with Held(sess):
        feed = _feed(5)
        req = sess.submit(feed)
        feed["A"][...] = -1.0  # before the request runs: the copy is what runs
        del feed
        gc.collect()
    np.testing.assert_array_equal(req.result()[0], _want(5))


def test_cancel_and_errors_stay_in_their_request(add_model):
    sess = _add_session(add_model, queue_depth=8)
    with Held(sess):
        cancelled = sess.submit(_feed(1))
        bad_shape = sess.submit({"A": np.ones((1, 11), np.float32), "B": _feed(0)["B"]})
        bad_name = sess.submit({"A": _feed(0)["A"], "Q": _feed(0)["B"]})
        good = sess.submit(_feed(4), output_names=["C"])
        assert not cancelled.done()
        assert cancelled.cancel() is True
    with pytest.raises(minfer.Cancelled, match="cancelled") as e:
        cancelled.result()
    assert isinstance(e.value, minfer.Error) and e.value.status > 0
    assert cancelled.cancelled() and cancelled.cancel() is False
    assert isinstance(cancelled.exception(), minfer.Cancelled)
    with pytest.raises(minfer.InvalidArgument, match=r"expects shape \[1,10\], got \[1,11\]"):
        bad_shape.result()
    with pytest.raises(minfer.InvalidArgument):  # the same error each time
        bad_shape.result()
    with pytest.raises(minfer.InvalidArgument, match="'Q' is not an input"):
        bad_name.result()
    assert not bad_name.cancelled()
    np.testing.assert_array_equal(good.result()[0], _want(4))
    with pytest.raises(minfer.InvalidArgument, match="'nope' is not an output"):
        sess.submit(_feed(0), output_names=["nope"])
    with pytest.raises(TypeError):
        sess.submit(_feed(0), callback=3)


def test_a_raising_callback_is_reported_and_the_worker_goes_on(add_model, monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    sess = _add_session(add_model)

    def bad(req):
        raise ValueError("callback failed")

    first = sess.submit(_feed(1), callback=bad)
    later = [sess.submit(_feed(k)) for k in range(2, 6)]
    for k, req in enumerate(later, 2):
        np.testing.assert_array_equal(req.result()[0], _want(k))
    np.testing.assert_array_equal(first.result()[0], _want(1))
    assert len(seen) == 1 and isinstance(seen[0], ValueError)
    # add_done_callback after the end: called at once, here, reported alike
    first.add_done_callback(bad)
    assert len(seen) == 2
    got = []
    first.add_done_callback(got.append)
    assert got == [first]


def test_submit_from_a_callback(add_model):
    sess, other = _add_session(add_model), _add_session(add_model)
    outcome = []
    finished = threading.Event()

    def resubmit(req):
        try:
            sess.submit(_feed(2))  # would wait for this very worker when the queue is full
        except minfer.Error as e:
            outcome.append(e)
        outcome.append(sess.submit(_feed(3), block=False))
        outcome.append(other.submit(_feed(4)))  # another session's workers: it may wait
        try:
            sess.close()
        except minfer.Error as e:
            outcome.append(e)
        finished.set()

    sess.submit(_feed(1), callback=resubmit)
    assert finished.wait(60)
    assert "must not block" in str(outcome[0])
    np.testing.assert_array_equal(outcome[1].result()[0], _want(3))
    np.testing.assert_array_equal(outcome[2].result()[0], _want(4))
    assert "not from a callback of this session" in str(outcome[3])


@pytest.mark.parametrize("how", ["close", "del"])
def test_freeing_the_session_with_requests_in_flight(add_model, how):
    sess = _add_session(add_model, queue_depth=16)
    ended = []
    with Held(sess) as held:
        reqs = [sess.submit(_feed(k), callback=ended.append) for k in range(1, 11)]
        held.release()
        if how == "close":
            sess.close()
            with pytest.raises(minfer.Error, match="closed"):
                sess.run(None, _feed(1))
            with pytest.raises(minfer.Error, match="closed"):
                sess.submit(_feed(1))
        else:
            del sess
            gc.collect()
    assert len(ended) == 10
    for k, req in enumerate(reqs, 1):
        assert req.done()
        try:
            np.testing.assert_array_equal(req.result()[0], _want(k))
        except minfer.Cancelled:
            assert req.cancelled()


def test_the_last_reference_dropped_in_a_callback(add_model):
    holder = [_add_session(add_model)]
    dropped = threading.Event()

    def drop(req):
        holder.clear()  # the session goes on the worker: freed by another thread
        dropped.set()

    req = holder[0].submit(_feed(1), callback=drop)
    assert dropped.wait(60)
    np.testing.assert_array_equal(req.result()[0], _want(1))


def test_asyncio(add_model):
    sess = _add_session(add_model, queue_depth=2)

    async def main():
        outs = await asyncio.gather(*(sess.arun(_feed(k)) for k in range(12)))
        direct = await sess.submit(_feed(20), output_names=["C"])
        with pytest.raises(minfer.InvalidArgument):
            await sess.submit({"A": np.ones((1, 3), np.float32), "B": _feed(0)["B"]})
        return outs, direct

    outs, direct = asyncio.run(main())
    for k, out in enumerate(outs):
        np.testing.assert_array_equal(out[0], _want(k))
    np.testing.assert_array_equal(direct[0], _want(20))


def test_run_async_as_onnxruntime(add_model):
    sess = _add_session(add_model)
    got = []
    done = threading.Event()

    def cb(outs, user_data, err):
        got.append((outs, user_data, err))
        if len(got) == 2:
            done.set()

    sess.run_async(None, _feed(7), cb, "ud")
    sess.run_async(["C"], {"A": np.ones((2, 10), np.float32), "B": _feed(0)["B"]}, cb, 8)
    assert done.wait(60)
    (outs, ud, err), (bad, ud2, err2) = got
    np.testing.assert_array_equal(outs[0], _want(7))
    assert ud == "ud" and err == ""
    assert bad is None and ud2 == 8 and "expects shape" in err2
