"""rfa.Session: a model running on a device, fed by prefill (many positions) or step (one), with
probes of what each head does. Arrays in and out are numpy."""
import ctypes

import numpy as np

from . import _args, _lib, diagnostics
from ._args import checked, integer, number
from ._lib import P, c_double, c_float, c_int, c_int64, c_size_t, c_void_p
from .model import shared_context

_bad = _args.bad


def as_input(model, x, batch):
    """x as the C API wants it: int64 ids [B, N] (LMs) or float32 values [B, N, d] (others).
    A missing leading batch axis is added. Returns (array, B, N)."""
    a = _args.array(x, "input")
    if model.is_lm:
        if a.dtype.kind not in "iu":
            raise _bad("a language model takes integer token ids, got an array of %s" % a.dtype)
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2:
            raise _bad("token ids must be [N] or [B, N], got shape %s" % (a.shape,))
        if a.dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:  # exact, not via float
            raise _bad("token id %d does not fit in int64" % int(a.max()))
        a = np.ascontiguousarray(a, dtype=np.int64)
    else:
        d = model.info["input_dim"]
        if a.dtype.kind not in "fiu":
            raise _bad("a %s model takes float values, got an array of %s" % (model.info["architecture"], a.dtype))
        if a.ndim == 2:
            a = a[None, :, :]
        if a.ndim != 3:
            raise _bad("values must be [N, %d] or [B, N, %d], got shape %s" % (d, d, a.shape))
        if a.shape[2] != d:
            raise _bad("values: last dimension is %d, the model expects %d" % (a.shape[2], d))
        a = np.ascontiguousarray(a, dtype=np.float32)
    B, N = a.shape[0], a.shape[1]
    if batch is not None and B != batch:
        raise _bad("the input has %d batch rows, the session has %d" % (B, batch))
    if N < 1:
        raise _bad("the input has no positions")
    return a, B, N


def as_timestamps(t, B, N):
    """None, or float64 [B, N] from a scalar (N == 1), [N] (shared by every row) or [B, N]."""
    if t is None:
        return None
    a = _args.array(t, "timestamps", np.float64)
    if a.ndim == 0 and N == 1:
        a = np.full((B, 1), float(a))
    elif a.ndim == 1 and a.shape[0] == N:
        a = np.broadcast_to(a, (B, N))
    elif a.ndim == 1 and N == 1 and a.shape[0] == B:
        a = a[:, None]
    elif a.shape != (B, N):
        raise _bad("timestamps: shape %s, expected [%d] or [%d, %d]" % (a.shape, N, B, N))
    return np.ascontiguousarray(a, dtype=np.float64)


class Session:
    """Runs `model` on a device. batch: sequences fed side by side; max_context: positions
    reserved per sequence (the KV caches are allocated up front); device: None (the best device,
    or RFA_DEVICE), an index, a name substring, or an rfa.Context to share. window: 0 (the
    default) runs a model trained with a window (model.info["attention_window"]) with that
    window and others without; W > 0 a sliding-window KV cache in which every position sees its
    last W keys, so a stream runs without end in constant memory (max_context is then ignored);
    -1 no window, even for a model trained with one. kv: "f32", or "f16" for K/V caches in fp16
    (half the memory; the error it costs is in the docs' math page, section 9).

    `window` is the window the session runs with (0: none) and `max_context` the positions its
    caches hold per row: what was asked, or with a window the ring's W + min(W, 256) - 1 slots
    (what probes can reach back)."""

    @checked
    def __init__(self, model, batch=1, max_context=4096, device=None, window=0, kv="f32"):
        from .model import Model
        if not isinstance(model, Model):
            raise _bad("model must be an rfa.Model (rfa.load_model), got %r" % (model,))
        self.model = model
        batch, max_context = integer(batch, "batch"), integer(max_context, "max_context")
        window = integer(window, "window")
        if kv not in ("f32", "f16"):
            raise _bad("kv must be 'f32' or 'f16', not %r" % (kv,))
        self.context = shared_context(device)
        h = c_void_p()
        if not self.context._h:
            raise _bad("the context is closed")
        opts = _lib.SessionOptions()
        _lib.lib().rfa_session_options_default(ctypes.byref(opts))
        opts.batch, opts.max_context, opts.window = batch, max_context, window
        opts.kv = 1 if kv == "f16" else 0
        _lib.call("rfa_session_create_ex", self.context._h, model._h, ctypes.byref(opts), ctypes.byref(h))
        self._h = h
        self.context._adopt_session(h)
        self.batch = batch
        self.max_context = int(_lib.lib().rfa_session_max_context(h))
        self.window = int(_lib.lib().rfa_session_window(h))  # after the model's own window applied
        self.kv = kv
        self.output_dim = model.info["output_dim"]

    # ---- feeding -----------------------------------------------------------------------------

    @checked
    def prefill(self, x, timestamps=None):
        """Feeds N positions of every batch row: x is [N, d] / [B, N, d] floats, or [N] / [B, N]
        token ids for language models; timestamps [N] or [B, N], non-decreasing (default: the
        position index). Returns float32 [B, N, output_dim]: logits, predictions or outputs."""
        a, B, N = as_input(self.model, x, self.batch)
        ts = as_timestamps(timestamps, B, N)
        tsp = None if ts is None else ts.ctypes.data_as(P(c_double))
        if self.model.is_lm:
            _lib.call("rfa_session_prefill_tokens", self._live(), a.ctypes.data_as(P(c_int64)), N, tsp)
        else:
            _lib.call("rfa_session_prefill_values", self._live(), a.ctypes.data_as(P(c_float)), N, tsp)
        return self.outputs()

    @checked
    def step(self, x_t, timestamps=None):
        """Feeds one position per batch row (O(context) per head through the KV cache): x_t is
        [d] / [B, d] / [B, 1, d] floats, or a scalar / [B] / [B, 1] ids; timestamps a scalar or [B].
        Returns float32 [B, 1, output_dim]."""
        a = _args.array(x_t, "x_t")
        if self.model.is_lm:
            a = a.reshape(1, 1) if a.ndim == 0 else (a.reshape(-1, 1) if a.ndim == 1 else a)
        else:
            a = a.reshape(1, 1, -1) if a.ndim == 1 else (a[:, None, :] if a.ndim == 2 else a)
        if a.ndim < 2 or a.shape[1] != 1:
            raise _bad("step feeds one position per batch row, got an array of shape %s" % (np.shape(x_t),))
        t = timestamps
        if t is not None:
            t = _args.array(t, "timestamps", np.float64)
            if t.ndim > 0 and t.size != self.batch:
                raise _bad("step: timestamps must be a scalar or [%d], got shape %s" % (self.batch, t.shape))
            t = np.full((self.batch, 1), float(t)) if t.ndim == 0 else t.reshape(-1, 1)
        return self.prefill(a, t)

    def reset(self):
        """Empties the caches: the next call starts at position 0."""
        _lib.call("rfa_session_reset", self._live())

    @property
    def position(self):
        """Positions filled per batch row."""
        return int(_lib.lib().rfa_session_position(self._live()))

    @property
    def oldest_position(self):
        """The oldest position still in the caches (0 without a window); probes reach
        [oldest_position, position)."""
        return int(_lib.lib().rfa_session_oldest_position(self._live()))

    @property
    def first_full_row(self):
        """The oldest row whose keys are all still cached (row_diagnostics and head_diagnostics
        need them all): oldest_position, or oldest_position + window - 1 once keys were evicted."""
        return int(_lib.lib().rfa_session_first_full_row(self._live()))

    @checked
    def window_report(self, batch=0, measure=True):
        """What the sliding window cuts off, per (layer, head), for the newest position: a list of
        dicts with edge_lag, decay_bound, precision_ratio and (measure=True) edge_mass."""
        n = self.model.info["layers"] * self.model.info["heads"]
        out = (_lib.WindowTruncation * n)()
        count = c_int()
        _lib.call("rfa_session_window_report", self._live(), integer(batch, "batch"), 1 if measure else 0, out, n,
                  ctypes.byref(count))
        return [{f: getattr(w, f) for f, _ in _lib.WindowTruncation._fields_} for w in out[:count.value]]

    def stats(self):
        """What the session cost since it was created: dict of submits, bytes_up, bytes_down and
        plans_recorded (rfa::SessionStats)."""
        st = _lib.SessionStats()
        _lib.call("rfa_session_get_stats", self._live(), ctypes.byref(st))
        return {f: int(getattr(st, f)) for f, _ in _lib.SessionStats._fields_}

    @checked
    def generate(self, tokens, temperature=0.0, top_k=0, top_p=1.0, seed=0, on_gpu=True):
        """Samples `tokens` (>= 1) token ids per batch row after the prompt fed so far (the first
        from its last logits) and feeds all but the last. Greedy at temperature 0; else
        temperature > 0 with top_k (0: no limit) and top_p in (0, 1], seeded by seed (0 to
        2^64 - 1), as rfa-run's flags. On the GPU only the ids come back. Returns int64 [B, tokens]."""
        tokens = integer(tokens, "tokens", 1)
        temperature = number(temperature, "temperature", 0.0)
        top_k = integer(top_k, "top_k", 0)
        top_p = number(top_p, "top_p", 0.0, 1.0, lo_open=True)
        seed = integer(seed, "seed", 0, 2 ** 64 - 1)
        out = np.zeros((self.batch, tokens), dtype=np.int64)
        _lib.call("rfa_session_generate", self._live(), tokens, temperature, top_k, top_p, seed, 1 if on_gpu else 0,
                  out.ctypes.data_as(P(c_int64)))
        return out

    @property
    def device(self):
        return self.context.device_name

    def outputs(self):
        """Outputs of the last prefill/step, float32 [B, count, output_dim]."""
        count, floats = c_int(), c_size_t()
        _lib.call("rfa_session_outputs", self._live(), None, 0, ctypes.byref(count), ctypes.byref(floats))
        out = np.zeros(floats.value, dtype=np.float32)
        _lib.call("rfa_session_outputs", self._live(), out.ctypes.data_as(P(c_float)), out.size, ctypes.byref(count),
                  ctypes.byref(floats))
        return out.reshape(self.batch, -1, self.output_dim)

    @checked
    def timestamps(self, batch=0):
        """Timestamps of the positions still cached of one batch row, float64
        [position - oldest_position]."""
        batch = integer(batch, "batch")
        n = c_size_t()
        _lib.call("rfa_session_timestamps", self._live(), batch, None, 0, ctypes.byref(n))
        out = np.zeros(n.value, dtype=np.float64)
        _lib.call("rfa_session_timestamps", self._live(), batch, out.ctypes.data_as(P(c_double)), out.size,
                  ctypes.byref(n))
        return out

    # ---- probes ------------------------------------------------------------------------------

    @checked
    def attention(self, layer, head, rows=None, cols=None, decayed=False, batch=0):
        """The attention weights of one head over rows (queries) [r0, r1) x cols (keys) [c0, c1)
        of the positions still cached (default: all of them, [oldest_position, position)): Ahat,
        or A = Ahat E with decayed=True. Masked entries (future keys, keys outside a window's
        band) are 0. float32 [r1 - r0, c1 - c0]."""
        cached = (self.oldest_position, self.position)
        r0, r1 = _args.span(rows, "rows", cached)
        c0, c1 = _args.span(cols, "cols", cached)
        out = np.zeros((r1 - r0, c1 - c0), dtype=np.float32)
        _lib.call("rfa_session_attention", self._live(), integer(layer, "layer"), integer(head, "head"),
                  integer(batch, "batch"), r0, r1, c0, c1, int(bool(decayed)), out.ctypes.data_as(P(c_float)))
        return out

    @checked
    def row_diagnostics(self, layer, head, rows=None, thresholds=(1, 4, 16, 64), batch=0):
        """Per query row (docs/math.md §7), over all of the row's keys, which must still be cached
        (default rows: [first_full_row, position)): dict of arrays entropy, log_partition,
        max_weight, expected_lag [R] and mass_beyond [R, 4] (the mass of A beyond each lag
        threshold)."""
        r0, r1 = _args.span(rows, "rows", (self.first_full_row, self.position))
        th = np.ascontiguousarray(_args.array(thresholds, "thresholds", np.float64))
        if th.shape != (4,) or not np.all(np.isfinite(th)):
            raise _bad("row_diagnostics: 4 finite lag thresholds are needed, got %r" % (thresholds,))
        out = (_lib.RowDiagnostics * (r1 - r0))()
        _lib.call("rfa_session_row_diagnostics", self._live(), integer(layer, "layer"), integer(head, "head"),
                  integer(batch, "batch"), r0, r1, th.ctypes.data_as(P(c_double)), out)
        d = {k: np.array([getattr(r, k) for r in out]) for k in ("entropy", "log_partition", "max_weight",
                                                                 "expected_lag")}
        d["mass_beyond"] = np.array([list(r.mass_beyond) for r in out]).reshape(r1 - r0, 4)
        return d

    @checked
    def head_diagnostics(self, layer, head, rows=None, cols=None, alpha=1.0, sweep=(), decayed=False, spectrum=True,
                         keep_tilts=False, batch=0):
        """The attention tomography of one head (docs/DIAGNOSTICS.md): see rfa.diagnostics.
        Default rows: the last 512 whose keys are all still cached; default cols: the keys those
        rows see (at most the last 1024)."""
        return diagnostics.head_diagnostics(self, layer, head, rows, cols, alpha, sweep, decayed, spectrum,
                                            keep_tilts, batch)

    @checked
    def curves(self, layer, head, lags):
        """One head's kernels over the given lags: dict of float64 arrays lags, decay (E), vcov,
        precision (P) and bias (B)."""
        lg = np.ascontiguousarray(_args.array(lags, "lags", np.float64).reshape(-1))
        if lg.size == 0 or not np.all(np.isfinite(lg)):
            raise _bad("curves: lags must be one or more finite numbers, got %r" % (lags,))
        out = {k: np.zeros(lg.size) for k in ("decay", "vcov", "precision", "bias")}
        _lib.call("rfa_session_curves", self._live(), integer(layer, "layer"), integer(head, "head"),
                  lg.ctypes.data_as(P(c_double)), integer(lg.size, "len(lags)"),
                  *[out[k].ctypes.data_as(P(c_double)) for k in ("decay", "vcov", "precision", "bias")])
        out["lags"] = lg
        return out

    @checked
    def pair(self, layer, head, i, j, batch=0):
        """Every term of the logit of one (query i, key j) pair, as a dict (the viewer's readout)."""
        r = _lib.PairReadout()
        _lib.call("rfa_session_pair", self._live(), integer(layer, "layer"), integer(head, "head"),
                  integer(batch, "batch"), integer(i, "i"), integer(j, "j"), ctypes.byref(r))
        d = {n: getattr(r, n) for n, _ in _lib.PairReadout._fields_}
        d["masked"] = bool(d["masked"])
        return d

    # ---- lifetime ----------------------------------------------------------------------------

    def _live(self):
        """The session's handle; an error once the session or its context was closed."""
        if not getattr(self, "_h", None) or self._h.value not in self.context._sessions:
            raise _bad("the session is closed (or its context was)")
        return self._h

    def close(self):
        if getattr(self, "_h", None):
            self.context._release_session(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        live = getattr(self, "_h", None) and self._h.value in self.context._sessions
        return "rfa.Session(%s, batch=%d, %s, %s, on %s)" % (
            self.model.info["name"], self.batch, "position %d" % self.position if live else "closed",
            "window %d" % self.window if self.window else "context %d" % self.max_context, self.device)
