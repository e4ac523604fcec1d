"""Reference counting: 10,000 runs leave no Python objects, no traced
memory and no resident memory behind, and the feed arrays' counts are
unchanged."""

import gc
import resource
import sys
import tracemalloc

import numpy as np

import minfer
from conftest import SANITIZED


def _rss_kib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() // 1024


def test_no_leak_over_10k_runs(add_model):
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    b = np.arange(10, dtype=np.float32).reshape(1, 10)
    feed = {"A": a, "B": b}
    for _ in range(1000):  # warm: plans, arenas, caches
        sess.run(None, feed)
    gc.collect()
    refs = (sys.getrefcount(a), sys.getrefcount(b))
    objects = len(gc.get_objects())
    rss = _rss_kib()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(10000):
        (c,) = sess.run(None, feed)
    del c
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert (sys.getrefcount(a), sys.getrefcount(b)) == refs
    assert len(gc.get_objects()) <= objects + 10
    # A leak of one 40-byte output per run would be 400 kB.
    assert grown < 64 * 1024, grown
    if not SANITIZED:  # ASan keeps freed memory in quarantine
        assert _rss_kib() - rss < 2048, _rss_kib() - rss


def test_no_leak_on_failing_runs(add_model):
    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    bad = np.ones((1, 10), np.float64)
    for _ in range(200):
        try:
            sess.run(None, {"A": a, "B": bad})
        except minfer.InvalidArgument:
            pass
    gc.collect()
    refs = (sys.getrefcount(a), sys.getrefcount(bad))
    rss = _rss_kib()
    for _ in range(5000):
        try:
            sess.run(None, {"A": a, "B": bad})
        except minfer.InvalidArgument:
            pass
    gc.collect()
    assert (sys.getrefcount(a), sys.getrefcount(bad)) == refs
    if not SANITIZED:
        assert _rss_kib() - rss < 2048


def test_output_frees_its_tensor(add_model):
    """The capsule, and with it the tensor, goes with the last array on it."""
    import weakref

    sess = minfer.InferenceSession(add_model, providers=["cpu"])
    a = np.ones((1, 10), np.float32)
    (c,) = sess.run(None, {"A": a, "B": a})
    view = c[0, 2:5]
    capsule = c.base
    assert sys.getrefcount(capsule) == 3  # c's base, view's chain via c, our name
    ref = weakref.ref(c)
    del c
    assert ref() is not None  # view keeps c
    del view
    assert ref() is None
    assert sys.getrefcount(capsule) == 2
