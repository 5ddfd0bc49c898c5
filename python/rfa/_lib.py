"""Finding and loading librfa.so, the C prototypes, and rfa.Error.

The library is loaded on first use, not at import: `python3 -m rfa.convert` and the safetensors
helpers work without it. Search order (the first that loads wins):

1. RFA_LIBRARY (a path to librfa.so; when set, nothing else is tried);
2. next to this package (rfa/librfa.so);
3. an install prefix: $RFA_PREFIX, the Python prefixes, /usr/local, /usr, each under lib/,
   lib64/ and lib/<multiarch>/;
4. a build tree: when the package is imported from a source checkout (python/rfa), the
   checkout's build/librfa.so;
5. the dynamic linker's own search (ctypes.util.find_library).
"""
import ctypes
import ctypes.util
import os
import sys
import sysconfig
import threading

c_int = ctypes.c_int
c_int64 = ctypes.c_int64
c_double = ctypes.c_double
c_float = ctypes.c_float
c_size_t = ctypes.c_size_t
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
P = ctypes.POINTER

# rfa_status codes (runtime/include/rfa/rfa.h).
OK = 0
INVALID_ARGUMENT = 1
MODEL_ERROR = 2
INPUT_ERROR = 3
DEVICE_ERROR = 4
OUT_OF_MEMORY = 5
DEVICE_LOST = 6
IO_ERROR = 7
UNSUPPORTED = 8
CODE_NAMES = {0: "ok", 1: "invalid_argument", 2: "model_error", 3: "input_error", 4: "device_error",
              5: "out_of_memory", 6: "device_lost", 7: "io_error", 8: "unsupported"}


class Error(Exception):
    """A failed runtime call: `code` is the rfa_status (rfa.INPUT_ERROR, ...), `message` the
    runtime's own message, which names the file, tensor, field or limit at fault."""

    def __init__(self, code, message):
        super().__init__(code, message)
        self.code = int(code)
        self.message = message

    @property
    def code_name(self):
        return CODE_NAMES.get(self.code, "unknown")

    def __str__(self):
        return self.message


class HeadInfo(ctypes.Structure):
    _fields_ = [(n, c_double) for n in ("mu", "sigma2", "s2t", "eta2", "gamma2", "nu", "kappa", "tau", "lag_shift",
                                         "omega_min", "omega_max", "stationary_variance", "alpha", "beta")] + \
               [("regime", c_int)]


class RowDiagnostics(ctypes.Structure):
    _fields_ = [("entropy", c_double), ("log_partition", c_double), ("max_weight", c_double),
                ("expected_lag", c_double), ("mass_beyond", c_double * 4)]


class SessionOptions(ctypes.Structure):
    _fields_ = [(n, c_int) for n in ("batch", "max_context", "window", "last_output_only", "profile", "kv")]


class WindowTruncation(ctypes.Structure):
    _fields_ = [("layer", c_int), ("head", c_int)] + [(n, c_double) for n in (
        "edge_lag", "decay_bound", "precision_ratio", "edge_mass")]


class PairReadout(ctypes.Structure):
    _fields_ = [("masked", c_int)] + [(n, c_double) for n in (
        "lag", "dt", "decay", "vcov", "bias", "precision", "q_norm2", "k_norm2", "cross", "residual2", "L", "logit",
        "ahat", "a")]


# name: (restype, argtypes). Every function that returns rfa_status is checked by call().
_PROTOTYPES = {
    "rfa_version": (c_char_p, []),
    "rfa_last_error": (c_char_p, []),
    "rfa_device_count": (c_int, [P(c_int)]),
    "rfa_device_name": (c_int, [c_int, P(c_char_p), P(c_char_p)]),
    "rfa_context_create": (c_int, [c_char_p, c_int, P(c_void_p)]),
    "rfa_context_destroy": (None, [c_void_p]),
    "rfa_context_validation_messages": (ctypes.c_uint64, [c_void_p]),
    "rfa_context_device": (c_int, [c_void_p, P(c_char_p), P(c_char_p)]),
    "rfa_model_load": (c_int, [c_char_p, P(c_void_p)]),
    "rfa_model_destroy": (None, [c_void_p]),
    "rfa_model_info": (c_int, [c_void_p] + [P(c_int)] * 6),
    "rfa_model_dims": (c_int, [c_void_p, P(c_int), P(c_int), P(c_int)]),
    "rfa_model_attention_window": (c_int, [c_void_p, P(c_int)]),
    "rfa_model_architecture": (c_char_p, [c_void_p]),
    "rfa_model_name": (c_char_p, [c_void_p]),
    "rfa_model_tokenizer": (c_char_p, [c_void_p]),
    "rfa_model_head": (c_int, [c_void_p, c_int, c_int, P(HeadInfo)]),
    "rfa_model_encode": (c_int, [c_void_p, c_char_p, c_size_t, P(c_int64), c_size_t, P(c_size_t)]),
    "rfa_model_decode": (c_int, [c_void_p, P(c_int64), c_size_t, c_char_p, c_size_t, P(c_size_t)]),
    "rfa_model_reference_forward": (c_int, [c_void_p, c_int, c_int, P(c_double), P(c_int64), P(c_double),
                                            P(c_double)]),
    "rfa_session_create": (c_int, [c_void_p, c_void_p, c_int, c_int, P(c_void_p)]),
    "rfa_session_destroy": (None, [c_void_p]),
    "rfa_session_prefill_tokens": (c_int, [c_void_p, P(c_int64), c_int, P(c_double)]),
    "rfa_session_prefill_values": (c_int, [c_void_p, P(c_float), c_int, P(c_double)]),
    "rfa_session_reset": (c_int, [c_void_p]),
    "rfa_session_position": (c_int, [c_void_p]),
    "rfa_session_batch": (c_int, [c_void_p]),
    "rfa_session_max_context": (c_int, [c_void_p]),
    "rfa_session_outputs": (c_int, [c_void_p, P(c_float), c_size_t, P(c_int), P(c_size_t)]),
    "rfa_session_attention": (c_int, [c_void_p, c_int, c_int, c_int, c_int, c_int, c_int, c_int, c_int, P(c_float)]),
    "rfa_session_curves": (c_int, [c_void_p, c_int, c_int, P(c_double), c_int] + [P(c_double)] * 4),
    "rfa_session_timestamps": (c_int, [c_void_p, c_int, P(c_double), c_size_t, P(c_size_t)]),
    "rfa_session_row_diagnostics": (c_int, [c_void_p, c_int, c_int, c_int, c_int, c_int, P(c_double),
                                            P(RowDiagnostics)]),
    "rfa_session_pair": (c_int, [c_void_p, c_int, c_int, c_int, c_int, c_int, P(PairReadout)]),
    "rfa_session_options_default": (None, [P(SessionOptions)]),
    "rfa_session_create_ex": (c_int, [c_void_p, c_void_p, P(SessionOptions), P(c_void_p)]),
    "rfa_session_oldest_position": (c_int, [c_void_p]),
    "rfa_session_window_report": (c_int, [c_void_p, c_int, c_int, P(WindowTruncation), c_int, P(c_int)]),
    "rfa_session_generate": (c_int, [c_void_p, c_int, c_double, c_int, c_double, ctypes.c_uint64, c_int,
                                     P(c_int64)]),
}

_lock = threading.Lock()
_lib = None
_path = None


def candidates():
    """Where the library is looked for, in order (see the module docstring)."""
    env = os.environ.get("RFA_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [os.path.join(here, "librfa.so")]
    prefixes = [os.environ.get("RFA_PREFIX"), sys.prefix, sys.base_prefix, "/usr/local", "/usr"]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    for p in prefixes:
        if not p:
            continue
        for sub in ["lib", "lib64"] + (["lib/" + multiarch] if multiarch else []):
            out.append(os.path.join(p, sub, "librfa.so"))
    checkout = os.path.dirname(os.path.dirname(here))
    if os.path.exists(os.path.join(checkout, "CMakeLists.txt")):
        out.append(os.path.join(checkout, "build", "librfa.so"))
    found = ctypes.util.find_library("rfa")
    if found:
        out.append(found)
    seen, unique = set(), []
    for c in out:
        if c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


def lib():
    """The loaded library (loading it on first use); ImportError names every place tried."""
    global _lib, _path
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for c in candidates():
            if os.sep in c and not os.path.exists(c):
                tried.append(c + " (not there)")
                continue
            try:
                handle = ctypes.CDLL(c)
            except OSError as e:
                tried.append("%s (%s)" % (c, e))
                continue
            for name, (res, args) in _PROTOTYPES.items():
                f = getattr(handle, name, None)
                if f is None:
                    raise ImportError("%s: has no %s (a librfa.so older than this package?)" % (c, name))
                f.restype = res
                f.argtypes = args
            _lib, _path = handle, c
            return _lib
        raise ImportError("librfa.so not found; set RFA_LIBRARY to its path or RFA_PREFIX to its install prefix. "
                          "Tried:\n  " + "\n  ".join(tried))


def library_path():
    """The path of the loaded librfa.so (loading it if needed)."""
    lib()
    return _path


def last_error():
    m = lib().rfa_last_error()
    return m.decode("utf-8", "replace") if m else ""


def call(name, *args):
    """Calls an rfa_status-returning function; raises Error with the runtime's message on failure."""
    st = getattr(lib(), name)(*args)
    if st != OK:
        raise Error(st, last_error())


def text(b):
    return b.decode("utf-8", "replace") if b else ""
