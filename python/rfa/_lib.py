"""Finding and loading the runtime's shared library, the C prototypes, and rfa.Error.

The library is loaded on first use, not at import: `python3 -m rfa.convert` and the safetensors
helpers work without it. Its name is librfa.so on Linux, librfa.dylib on macOS and rfa.dll on
Windows. Search order (the first that loads wins):

1. RFA_LIBRARY (a path to the library; when set, nothing else is tried);
2. next to this package (e.g. rfa/librfa.so, copied there before packaging a wheel);
3. RFA_PREFIX, an install prefix: its lib/, lib64/, lib/<multiarch>/ (and bin/ on Windows);
4. the prefix `cmake --install` put this package's sources under: the folder four levels above
   this file when it is there (P/share/rfa/python/rfa), then the prefix recorded in _install.py,
   which the install writes, so a `pip install` from P/share/rfa/python finds P's library from
   any directory with no variable set;
5. the Python prefixes, /usr/local and /usr;
6. a build tree: when the package is imported from a source checkout (python/rfa), the
   checkout's build/ folder;
7. the dynamic linker's own search (ctypes.util.find_library).

The CPU twin (Model.reference) lives in a library of its own, librfa_reference.so
(librfa_reference.dylib, rfa_reference.dll), loaded on first use of the twin: RFA_REFERENCE_LIBRARY
when set (nothing else is tried), else next to the loaded librfa, else the places above. Without it
everything but Model.reference works, and that raises rfa.Error naming where it looked.
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


class ContextOptions(ctypes.Structure):
    """rfa_context_options (rfa.h): fill with rfa_context_options_default first."""
    _fields_ = [("device", c_char_p), ("validation", c_int), ("device_profile", c_char_p),
                ("memory_budget", ctypes.c_uint64), ("timestamps", c_int), ("linear_kernel", c_char_p)] + \
               [(n, c_int) for n in ("attention_direct_kv", "attention_lag_table", "attention_split_k", "attention_tile",
                                     "attention_f16_math", "attention_coopmat", "push_descriptors",
                                     "capture_pipeline_statistics")] + \
               [("max_storage_buffer_range", ctypes.c_uint64), ("max_storage_buffers_per_stage", ctypes.c_uint32)] + \
               [(n, c_int) for n in ("attention_tile_workgroup", "attention_fma", "attention_q_registers",
                                     "attention_pad_strides", "attention_f16_chunk", "attention_prefetch",
                                     "attention_raw_f16", "attention_lag_e2", "attention_decode_registers",
                                     "attention_split_cores", "verify_kernels")] + \
               [("kernel_cache", c_char_p), ("attention_coopmat_per_element", c_int)]


def context_options_from_environment(options, environ=None):
    """Completes `options` (ContextOptions) from the RFA_* variables, as rfa/environment.hpp does for
    the C++ programs: the library itself reads no environment. RFA_DEVICE where device is unset,
    RFA_VALIDATION where validation is negative, RFA_DEVICE_PROFILE where device_profile is unset,
    and the kernel variables (RFA_LINEAR_KERNEL, RFA_ATTN_*, RFA_NO_PUSH_DESCRIPTORS)."""
    env = os.environ if environ is None else environ

    def get(name):
        return env.get(name, "")

    if not options.device and get("RFA_DEVICE"):
        options.device = get("RFA_DEVICE").encode()
    if options.validation < 0:
        options.validation = 1 if get("RFA_VALIDATION") not in ("", "0") else 0
    if not options.device_profile and get("RFA_DEVICE_PROFILE"):
        options.device_profile = get("RFA_DEVICE_PROFILE").encode()
    if get("RFA_LINEAR_KERNEL"):
        options.linear_kernel = get("RFA_LINEAR_KERNEL").encode()
    for name, field in (("RFA_ATTN_DIRECT_KV", "attention_direct_kv"), ("RFA_ATTN_LAG_TABLE", "attention_lag_table"),
                        ("RFA_ATTN_TILE", "attention_tile"), ("RFA_ATTN_F16_MATH", "attention_f16_math")):
        if get(name):
            setattr(options, field, 1 if get(name) == "1" else 0)
    if get("RFA_ATTN_SPLIT_K"):
        try:
            n = int(get("RFA_ATTN_SPLIT_K").strip())
        except ValueError:
            n = 0
        options.attention_split_k = max(0, n)
    if get("RFA_ATTN_COOPMAT"):
        options.attention_coopmat = {"1": 1, "2": 2}.get(get("RFA_ATTN_COOPMAT"), 0)
    for name, field in (("RFA_ATTN_FMA", "attention_fma"), ("RFA_ATTN_Q_REGISTERS", "attention_q_registers"),
                        ("RFA_ATTN_PAD_STRIDES", "attention_pad_strides"), ("RFA_ATTN_PREFETCH", "attention_prefetch"),
                        ("RFA_ATTN_RAW_F16", "attention_raw_f16"), ("RFA_ATTN_LAG_E2", "attention_lag_e2"),
                        ("RFA_ATTN_DECODE_REGISTERS", "attention_decode_registers"),
                        ("RFA_ATTN_SPLIT_CORES", "attention_split_cores"),
                        ("RFA_ATTN_COOPMAT_PER_ELEMENT", "attention_coopmat_per_element")):
        if get(name):
            setattr(options, field, 1 if get(name) == "1" else 0)
    for name, field, least in (("RFA_ATTN_TILE_WORKGROUP", "attention_tile_workgroup", 0),
                               ("RFA_ATTN_F16_CHUNK", "attention_f16_chunk", 1)):
        if get(name):
            try:
                n = int(get(name).strip())
            except ValueError:
                n = least
            setattr(options, field, max(least, n))
    if get("RFA_VERIFY_KERNELS"):
        options.verify_kernels = 0 if get("RFA_VERIFY_KERNELS") == "0" else 1
    if not options.kernel_cache and get("RFA_KERNEL_CACHE"):
        options.kernel_cache = get("RFA_KERNEL_CACHE").encode()
    if get("RFA_NO_PUSH_DESCRIPTORS"):
        options.push_descriptors = 1 if get("RFA_NO_PUSH_DESCRIPTORS") == "0" else 0
    return options


class SessionOptions(ctypes.Structure):
    _fields_ = [(n, c_int) for n in ("batch", "max_context", "window", "last_output_only", "profile", "kv")]


class WindowTruncation(ctypes.Structure):
    _fields_ = [("layer", c_int), ("head", c_int)] + [(n, c_double) for n in (
        "edge_lag", "decay_bound", "precision_ratio", "edge_mass")]


class PairReadout(ctypes.Structure):
    _fields_ = [("masked", c_int)] + [(n, c_double) for n in (
        "lag", "dt", "decay", "vcov", "bias", "precision", "q_norm2", "k_norm2", "cross", "residual2", "L", "logit",
        "ahat", "a")]


class SessionStats(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("submits", "bytes_up", "bytes_down", "plans_recorded")]


# The attention tomography (rfa.h, "Attention tomography"; python/rfa/diagnostics.py).
class DiagnosticsRequest(ctypes.Structure):
    _fields_ = [(n, c_int) for n in ("layer", "head", "b", "r0", "r1", "c0", "c1")] + [
        ("alpha", c_double), ("sweep", P(c_double)), ("sweep_count", c_int), ("decayed", c_int),
        ("spectrum", c_int), ("keep_tilts", c_int)]


class MomentSummary(ctypes.Structure):
    _fields_ = [("queries", ctypes.c_longlong), ("keys", ctypes.c_longlong)] + [(n, c_double) for n in (
        "var_q", "var_k", "tau_mean", "tau_std", "tau_chi_mean", "logit_std", "logit_std_meanfield", "dim_eff_u",
        "dim_eff_n")]


class DiagnosticsSummary(ctypes.Structure):
    _fields_ = [(n, c_int) for n in ("layer", "head", "b", "r0", "r1", "c0", "c1", "d", "rows",
                                     "singular_value_count", "sweep_count")] + \
               [(n, c_double) for n in ("alpha", "entropy_mean", "max_weight_mean", "erank")] + \
               [("rank", c_int), ("nullity", c_int), ("moments", MomentSummary)] + \
               [(n, c_double) for n in ("gpu_ms", "svd_ms", "eigen_ms", "host_ms", "wall_ms")]


class QueryDiagnostics(ctypes.Structure):
    _fields_ = [("position", c_int), ("keys", c_int)] + [(n, c_double) for n in (
        "q_norm", "tau", "entropy", "log_partition", "max_weight", "mean_s", "var_s", "mean_logit", "var_logit",
        "expected_lag")]


class SweepPoint(ctypes.Structure):
    _fields_ = [(n, c_double) for n in ("alpha", "entropy", "max_weight", "erank")] + [("rank", c_int)]


DIAG_SINGULAR_VALUES, DIAG_TILT_SPECTRUM, DIAG_NORMAL_SPECTRUM, DIAG_TILTS = 0, 1, 2, 3

# name: (restype, argtypes). Every function that returns rfa_status is checked by call().
_PROTOTYPES = {
    "rfa_version": (c_char_p, []),
    "rfa_last_error": (c_char_p, []),
    "rfa_device_count": (c_int, [P(c_int)]),
    "rfa_device_name": (c_int, [c_int, P(c_char_p), P(c_char_p)]),
    "rfa_context_create": (c_int, [c_char_p, c_int, P(c_void_p)]),
    "rfa_context_options_default": (None, [P(ContextOptions)]),
    "rfa_context_create_ex": (c_int, [P(ContextOptions), P(c_void_p)]),
    "rfa_context_destroy": (None, [c_void_p]),
    "rfa_context_validation_messages": (ctypes.c_uint64, [c_void_p]),
    "rfa_context_lost": (c_int, [c_void_p]),
    "rfa_context_capabilities": (c_char_p, [c_void_p]),
    "rfa_context_kernel_refusals": (c_char_p, [c_void_p]),
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
    "rfa_session_window": (c_int, [c_void_p]),
    "rfa_session_first_full_row": (c_int, [c_void_p]),
    "rfa_session_get_stats": (c_int, [c_void_p, P(SessionStats)]),
    "rfa_diagnostics_request_init": (None, [P(DiagnosticsRequest)]),
    "rfa_session_head_diagnostics": (c_int, [c_void_p, P(DiagnosticsRequest), P(c_void_p)]),
    "rfa_diagnostics_destroy": (None, [c_void_p]),
    "rfa_diagnostics_get_summary": (c_int, [c_void_p, P(DiagnosticsSummary)]),
    "rfa_diagnostics_rows": (c_int, [c_void_p, P(QueryDiagnostics), c_size_t, P(c_size_t)]),
    "rfa_diagnostics_array": (c_int, [c_void_p, c_int, P(c_double), c_size_t, P(c_size_t)]),
    "rfa_diagnostics_sweep": (c_int, [c_void_p, P(SweepPoint), c_size_t, P(c_size_t)]),
    "rfa_diagnostics_sweep_singular_values": (c_int, [c_void_p, c_int, P(c_double), c_size_t, P(c_size_t)]),
    "rfa_session_window_report": (c_int, [c_void_p, c_int, c_int, P(WindowTruncation), c_int, P(c_int)]),
    "rfa_session_generate": (c_int, [c_void_p, c_int, c_double, c_int, c_double, ctypes.c_uint64, c_int,
                                     P(c_int64)]),
}

# librfa_reference's functions (the CPU twin), loaded by reference_lib().
_REFERENCE_PROTOTYPES = {
    "rfa_model_reference_forward": (c_int, [c_void_p, c_int, c_int, P(c_double), P(c_int64), P(c_double),
                                            P(c_double)]),
}

_lock = threading.Lock()
_lib = None
_path = None
_reference = None
_reference_path = None


def library_name(base="rfa"):
    """The shared library's file name on this platform (base "rfa_reference": the CPU twin's)."""
    if sys.platform == "win32":
        return base + ".dll"
    if sys.platform == "darwin":
        return "lib%s.dylib" % base
    return "lib%s.so" % base


def _prefix_dirs(prefix):
    """Where an install prefix keeps the shared library."""
    subs = ["lib", "lib64"]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        subs.append("lib/" + multiarch)
    if sys.platform == "win32":
        subs.insert(0, "bin")  # DLLs go to bin/
    return [os.path.join(prefix, s) for s in subs]


def _recorded_dirs(here):
    """The library folders of the install this package came from (see the module docstring, 4)."""
    out = []
    share = os.path.normpath(os.path.join(here, os.pardir, os.pardir))  # P/share/rfa
    if os.path.basename(share) == "rfa" and os.path.basename(os.path.dirname(share)) == "share":
        out += _prefix_dirs(os.path.dirname(os.path.dirname(share)))
    try:
        from . import _install  # written by `cmake --install`; absent in a source checkout
    except ImportError:
        return out
    for d in (getattr(_install, "LIBDIR", None), getattr(_install, "BINDIR", None)):
        if d:
            out.append(d)
    prefix = getattr(_install, "PREFIX", None)
    if prefix:
        out += _prefix_dirs(prefix)
    return out


def candidates(base="rfa", variable="RFA_LIBRARY"):
    """Where the library is looked for, in order (see the module docstring)."""
    env = os.environ.get(variable)
    if env:
        return [env]
    name = library_name(base)
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [here]
    if os.environ.get("RFA_PREFIX"):
        dirs += _prefix_dirs(os.environ["RFA_PREFIX"])
    dirs += _recorded_dirs(here)
    for p in (sys.prefix, sys.base_prefix, "/usr/local", "/usr"):
        dirs += _prefix_dirs(p)
    checkout = os.path.dirname(os.path.dirname(here))
    if os.path.exists(os.path.join(checkout, "CMakeLists.txt")):
        dirs.append(os.path.join(checkout, "build"))
    out = [os.path.join(d, name) for d in dirs]
    found = ctypes.util.find_library(base)
    if found:
        out.append(found)
    seen, unique = set(), []
    for c in out:
        key = os.path.normpath(c) if os.sep in c else c
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def _open_first(cands, prototypes, missing_symbol):
    """The first of `cands` that loads, its functions typed from `prototypes`: (handle, path, tried),
    handle None when none loads; `missing_symbol(path, name)` is the exception for a library that
    lacks a function."""
    tried = []
    for c in cands:
        if os.sep in c and not os.path.exists(c):
            tried.append(c + " (not there)")
            continue
        try:
            handle = ctypes.CDLL(c)
        except OSError as e:
            tried.append("%s (%s)" % (c, e))
            continue
        for name, (res, args) in prototypes.items():
            f = getattr(handle, name, None)
            if f is None:
                raise missing_symbol(c, name)
            f.restype = res
            f.argtypes = args
        return handle, c, tried
    return None, None, tried


def lib():
    """The loaded library (loading it on first use); ImportError names every place tried."""
    global _lib, _path
    with _lock:
        if _lib is not None:
            return _lib
        handle, path, tried = _open_first(
            candidates(), _PROTOTYPES,
            lambda c, name: ImportError("%s: has no %s (a library older than this package?)" % (c, name)))
        if handle is not None:
            _lib, _path = handle, path
            return _lib
        raise ImportError("%s not found; set RFA_LIBRARY to its path or RFA_PREFIX to its install prefix. "
                          "Tried:\n  %s" % (library_name(), "\n  ".join(tried)))


def reference_candidates():
    """Where librfa_reference is looked for: RFA_REFERENCE_LIBRARY alone when set, else next to the
    loaded librfa, then librfa's own search."""
    if os.environ.get("RFA_REFERENCE_LIBRARY"):
        return [os.environ["RFA_REFERENCE_LIBRARY"]]
    out = []
    if _path and os.sep in _path:
        out.append(os.path.join(os.path.dirname(os.path.abspath(_path)), library_name("rfa_reference")))
    for c in candidates("rfa_reference", "RFA_REFERENCE_LIBRARY"):
        if c not in out:
            out.append(c)
    return out


def reference_lib():
    """librfa_reference, the CPU twin's library (loading librfa first, then it, on first use). Raises
    Error (UNSUPPORTED) naming every place tried when it is not there."""
    global _reference, _reference_path
    lib()
    with _lock:
        if _reference is not None:
            return _reference
        handle, path, tried = _open_first(
            reference_candidates(), _REFERENCE_PROTOTYPES,
            lambda c, name: Error(UNSUPPORTED, "%s: has no %s (not the CPU twin's library?)" % (c, name)))
        if handle is not None:
            _reference, _reference_path = handle, path
            return _reference
        raise Error(UNSUPPORTED, "the CPU twin's library %s was not found, so Model.reference cannot run "
                                 "(everything else works without it); build or install rfa_reference, or set "
                                 "RFA_REFERENCE_LIBRARY to its path. Tried:\n  %s"
                    % (library_name("rfa_reference"), "\n  ".join(tried)))


def call_reference(name, *args):
    """call() for a function of librfa_reference (the message still comes from rfa_last_error)."""
    st = getattr(reference_lib(), name)(*args)
    if st != OK:
        raise Error(st, last_error())


def library_path():
    """The path of the loaded library (loading it if needed)."""
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
