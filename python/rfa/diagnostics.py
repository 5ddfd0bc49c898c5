"""Session.head_diagnostics: the attention tomography of one head over a window of rows and key
columns (docs/DIAGNOSTICS.md; rfa_session_head_diagnostics in the C API). The per-pair work runs
on the GPU from the session's caches, the singular values and the d x d eigenproblems on the host
in double."""
import ctypes

import numpy as np

from . import _args, _lib
from ._args import integer, number
from ._lib import P, c_double, c_size_t, c_void_p

ROWS = 512     # default rows: the last ROWS whose keys are all still cached
MAX_SIDE = 1024  # the spectrum's limit per side (rfa/diagnostics.hpp)

ROW_FIELDS = ("position", "keys", "q_norm", "tau", "entropy", "log_partition", "max_weight", "mean_s", "var_s",
              "mean_logit", "var_logit", "expected_lag")


def default_window(session, rows, cols):
    """(r0, r1), (c0, c1): rows default to the last ROWS rows whose keys are all cached; cols to
    the keys those rows see (a window's band, else everything before them), at most MAX_SIDE."""
    pos, first = session.position, session.first_full_row
    if pos == 0:
        raise _args.bad("head_diagnostics: no positions computed yet")
    r0, r1 = _args.span(rows, "rows", (max(first, pos - ROWS), pos))
    if cols is None:
        lo = max(session.oldest_position, r0 - session.window + 1) if session.window else 0
        cols = (max(lo, r1 - MAX_SIDE), r1)
    return (r0, r1), _args.span(cols, "cols", None)


def _copy(name, handle, ctype, *args):
    """A variable-length copy call: count first, then the items."""
    n = c_size_t()
    _lib.call(name, handle, *args, None, 0, ctypes.byref(n))
    buf = (ctype * max(n.value, 1))()
    _lib.call(name, handle, *args, buf, n.value, ctypes.byref(n))
    return buf[:n.value]


def head_diagnostics(session, layer, head, rows=None, cols=None, alpha=1.0, sweep=(), decayed=False, spectrum=True,
                     keep_tilts=False, batch=0):
    """A dict: layer, head, batch, rows and cols (the window used), alpha, d, entropy_mean,
    max_weight_mean, erank, rank, nullity, singular_values, tilt_spectrum, normal_spectrum, tilts
    ([rows, d] with keep_tilts, else None), moments (the pooled statistics: queries, keys, var_q,
    var_k, tau_mean, tau_std, tau_chi_mean, logit_std, logit_std_meanfield, dim_eff_u, dim_eff_n),
    per_row (arrays of position, keys, q_norm, tau, entropy, log_partition, max_weight, mean_s,
    var_s, mean_logit, var_logit, expected_lag), sweep (one dict per extra alpha: alpha, entropy,
    max_weight, erank, rank, singular_values) and timings_ms (gpu, svd, eigen, host, wall)."""
    (r0, r1), (c0, c1) = default_window(session, rows, cols)
    alphas = [number(a, "sweep[%d]" % k, 0.0, lo_open=True) for k, a in enumerate(_args.array(sweep, "sweep").reshape(-1))]
    sw = np.ascontiguousarray(alphas, dtype=np.float64)
    req = _lib.DiagnosticsRequest()
    _lib.lib().rfa_diagnostics_request_init(ctypes.byref(req))
    req.layer, req.head, req.b = integer(layer, "layer"), integer(head, "head"), integer(batch, "batch")
    req.r0, req.r1, req.c0, req.c1 = r0, r1, c0, c1
    req.alpha = number(alpha, "alpha", 0.0, lo_open=True)
    req.sweep = sw.ctypes.data_as(P(c_double)) if sw.size else None
    req.sweep_count = integer(sw.size, "len(sweep)", 0, 64)
    req.decayed, req.spectrum, req.keep_tilts = int(bool(decayed)), int(bool(spectrum)), int(bool(keep_tilts))
    h = c_void_p()
    _lib.call("rfa_session_head_diagnostics", session._live(), ctypes.byref(req), ctypes.byref(h))
    try:
        s = _lib.DiagnosticsSummary()
        _lib.call("rfa_diagnostics_get_summary", h, ctypes.byref(s))
        arr = {k: np.array(_copy("rfa_diagnostics_array", h, c_double, which)) for k, which in (
            ("singular_values", _lib.DIAG_SINGULAR_VALUES), ("tilt_spectrum", _lib.DIAG_TILT_SPECTRUM),
            ("normal_spectrum", _lib.DIAG_NORMAL_SPECTRUM), ("tilts", _lib.DIAG_TILTS))}
        per_row = _copy("rfa_diagnostics_rows", h, _lib.QueryDiagnostics)
        points = _copy("rfa_diagnostics_sweep", h, _lib.SweepPoint)
        out = {
            "layer": s.layer, "head": s.head, "batch": s.b, "rows": (s.r0, s.r1), "cols": (s.c0, s.c1),
            "alpha": s.alpha, "d": s.d, "entropy_mean": s.entropy_mean, "max_weight_mean": s.max_weight_mean,
            "erank": s.erank, "rank": s.rank, "nullity": s.nullity,
            "singular_values": arr["singular_values"], "tilt_spectrum": arr["tilt_spectrum"],
            "normal_spectrum": arr["normal_spectrum"],
            "tilts": arr["tilts"].reshape(-1, s.d) if keep_tilts else None,
            "moments": {f: getattr(s.moments, f) for f, _ in _lib.MomentSummary._fields_},
            "per_row": {f: np.array([getattr(q, f) for q in per_row]) for f in ROW_FIELDS},
            "sweep": [dict({f: getattr(p, f) for f, _ in _lib.SweepPoint._fields_},
                           singular_values=np.array(_copy("rfa_diagnostics_sweep_singular_values", h, c_double, k)))
                      for k, p in enumerate(points)],
            "timings_ms": {k: getattr(s, k + "_ms") for k in ("gpu", "svd", "eigen", "host", "wall")},
        }
    finally:
        _lib.lib().rfa_diagnostics_destroy(h)
    return out
