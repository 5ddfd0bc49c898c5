"""Vulkan failures seen from Python (issue 33): run against librfa_faults (the test-only library
with fault injection, tests/fault/rfa_faults.h; CTest's python_faults sets RFA_LIBRARY to it),
skipped with the ordinary librfa.

- every Vulkan call site of a Python stream (session, prefill, steps, a probe), failed in turn with
  the first error its function can return (RFA_FAULT_SWEEP=full: every error): rfa.Error with the
  expected code and a message naming the call and the error; then out of memory is retried on the
  same objects with the unfaulted numbers, and a loss makes every call raise DEVICE_LOST until a
  new context runs the work again;
- the recovery docs/python.md shows: a stream that loses its device makes a new context and
  session, prefills them from its own copy of what it fed, and continues as an unbroken stream."""
import ctypes
import os

import numpy as np
import pytest

import rfa
from rfa import _lib

from conftest import model_dir


def faults():
    lib = _lib.lib()
    if not hasattr(lib, "rfa_faults_install"):
        pytest.skip("this librfa has no fault injection (run through CTest's python_faults: librfa_faults)")
    if not getattr(lib, "_faults_typed", False):
        for name, res, args in [
                ("rfa_faults_install", ctypes.c_int, []),
                ("rfa_faults_reset", None, []),
                ("rfa_faults_snapshot", ctypes.c_size_t, []),
                ("rfa_faults_site", ctypes.c_int, [ctypes.c_size_t, ctypes.POINTER(ctypes.c_char_p),
                                                   ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_int32),
                                                   ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]),
                ("rfa_faults_site_description", ctypes.c_char_p, [ctypes.c_size_t]),
                ("rfa_faults_arm_site", ctypes.c_int, [ctypes.c_size_t, ctypes.c_uint64, ctypes.c_int32]),
                ("rfa_faults_arm_call", ctypes.c_int, [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_int32]),
                ("rfa_faults_disarm", None, []),
                ("rfa_faults_fired", ctypes.c_int, []),
                ("rfa_faults_result_name", ctypes.c_char_p, [ctypes.c_int32]),
                ("rfa_faults_expected_status", ctypes.c_int, [ctypes.c_int32])]:
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        lib._faults_typed = True
    assert lib.rfa_faults_install() == 0, _lib.last_error()
    return lib


VK_ERROR_DEVICE_LOST = -4
VK_TIMEOUT = 2


def signal(p0, n):
    p = np.arange(p0, p0 + n)
    return np.stack([np.sin(0.3 * p), np.cos(0.21 * p)], axis=1).astype(np.float32), 0.7 * p


def expected_code(lib, function, result):
    # A failed wait without a time limit leaves the work's state unknown: a loss.
    if function in ("vkWaitForFences", "vkGetFenceStatus"):
        return rfa.DEVICE_LOST
    return lib.rfa_faults_expected_status(result)


class World:
    """One context, a windowed session on it, and what the stream produced so far."""

    def __init__(self, model):
        self.ctx = rfa.Context()
        self.model = model
        self.session = None
        self.out = {}
        self.probe = None

    def run(self):
        # Resumes where a failed attempt left off: the session and the position it reached.
        if self.session is None:
            self.session = rfa.Session(self.model, device=self.ctx, window=8)
        s = self.session
        while s.position < 12:
            p = s.position
            n = min(12 - p, 6 if p < 6 else 1)
            x, t = signal(p, n)
            y = s.prefill(x, t)
            for i in range(n):
                self.out[p + i] = y[0, i].copy()
        self.probe = s.attention(1, 2)

    def numbers(self):
        return np.concatenate([self.out[p].ravel() for p in sorted(self.out)] + [self.probe.ravel()])

    def close(self):
        if self.session is not None:
            self.session.close()
        self.ctx.close()


def test_every_call_site_of_a_python_stream_survives(spiral):
    lib = faults()
    full = os.environ.get("RFA_FAULT_SWEEP") == "full"
    ref = World(spiral)
    lib.rfa_faults_reset()
    ref.run()
    want = ref.numbers()
    sites = lib.rfa_faults_snapshot()
    assert ref.ctx.validation_messages == 0
    ref.close()
    assert sites > 10
    tried = failed = absorbed = 0
    for i in range(sites):
        fn, calls = ctypes.c_char_p(), ctypes.c_uint64()
        errs, n = (ctypes.c_int32 * 8)(), ctypes.c_size_t()
        assert lib.rfa_faults_site(i, ctypes.byref(fn), ctypes.byref(calls), errs, 8, ctypes.byref(n)) == 0
        function = fn.value.decode()
        where = lib.rfa_faults_site_description(i).decode()
        for err in list(errs)[:n.value if full else min(n.value, 1)]:
            result = lib.rfa_faults_result_name(err).decode()
            story = "%s -> %s" % (where, result)
            tried += 1
            w = World(spiral)
            lib.rfa_faults_reset()
            assert lib.rfa_faults_arm_site(i, 1, err) == 0
            try:
                w.run()
                raised = None
            except rfa.Error as e:
                raised = e
            fired = lib.rfa_faults_fired()
            lib.rfa_faults_disarm()
            assert fired, story + ": the armed call was not reached"
            if raised is None:
                absorbed += 1
                np.testing.assert_array_equal(w.numbers(), want, err_msg=story)
            else:
                failed += 1
                assert raised.code == expected_code(lib, function, err), "%s: %s" % (story, raised)
                assert function in raised.message and result in raised.message, "%s: %s" % (story, raised)
                if raised.code == rfa.DEVICE_LOST:
                    assert w.ctx.lost, story
                    if w.session is not None:
                        with pytest.raises(rfa.Error) as again:
                            w.session.step(signal(w.session.position, 1)[0][0])
                        assert again.value.code == rfa.DEVICE_LOST, story
                    with pytest.raises(rfa.Error) as again:
                        rfa.Session(spiral, device=w.ctx)
                    assert again.value.code == rfa.DEVICE_LOST, story
                    w.close()
                    w = World(spiral)  # the recovery: a new context runs it all again
                assert not w.ctx.lost
                w.run()
                np.testing.assert_array_equal(w.numbers(), want, err_msg=story)
            assert w.ctx.validation_messages == 0, story
            w.close()
    print("python fault sweep: %d call sites, %d (site, error) runs: %d failed cleanly, %d absorbed"
          % (sites, tried, failed, absorbed))
    assert tried == failed + absorbed


def feed_with_recovery(state, x, t):
    """docs/python.md's recovery: on DEVICE_LOST, a new context and session fed the app's own copy
    of the stream, then the step again."""
    try:
        y = state["session"].step(x, t)
    except rfa.Error as e:
        if e.code != rfa.DEVICE_LOST:
            raise
        state["session"].close()
        state["ctx"].close()
        state["ctx"] = rfa.Context()
        state["session"] = rfa.Session(state["model"], device=state["ctx"])
        if state["xs"]:
            state["session"].prefill(np.array(state["xs"]), np.array(state["ts"]))
        state["recoveries"] += 1
        y = state["session"].step(x, t)
    state["xs"].append(x)
    state["ts"].append(t)
    return y


def test_a_stream_that_loses_its_device_recovers_with_the_unbroken_outputs(spiral):
    lib = faults()
    xs, ts = signal(0, 90)

    def stream(lose_at):
        ctx = rfa.Context()
        state = {"model": spiral, "ctx": ctx, "session": rfa.Session(spiral, device=ctx), "xs": [], "ts": [],
                 "recoveries": 0}
        out = []
        for p in range(len(ts)):
            if p == lose_at:
                assert lib.rfa_faults_arm_call(b"vkQueueSubmit", 1, VK_ERROR_DEVICE_LOST) == 0
            out.append(feed_with_recovery(state, xs[p], ts[p])[0, 0])
        lib.rfa_faults_disarm()
        assert state["ctx"].validation_messages == 0
        state["session"].close()
        state["ctx"].close()
        return np.array(out), state["recoveries"]

    want, n0 = stream(-1)
    got, n1 = stream(71)  # past the model's window of 50
    assert (n0, n1) == (0, 1)
    np.testing.assert_array_equal(got[:71], want[:71])
    np.testing.assert_allclose(got[71:], want[71:], rtol=1e-5, atol=1e-5)


def test_the_shared_context_is_replaced_after_a_loss(spiral):
    lib = faults()
    s = rfa.Session(spiral)  # on the shared context
    s.prefill(*signal(0, 4))
    assert lib.rfa_faults_arm_call(b"vkQueueSubmit", 1, VK_ERROR_DEVICE_LOST) == 0
    with pytest.raises(rfa.Error) as e:
        s.step(signal(4, 1)[0][0])
    assert e.value.code == rfa.DEVICE_LOST
    lost = s.context
    assert lost.lost
    s.close()
    s2 = rfa.Session(spiral)  # Session(model) makes a new shared context
    assert s2.context is not lost and not s2.context.lost
    s2.prefill(*signal(0, 4))
    s2.close()
