"""Devices, contexts and models: rfa.devices(), rfa.Context, rfa.load_model() and rfa.Model."""
import ctypes
import os
import threading

import numpy as np

from . import _args, _lib
from ._args import checked
from ._lib import P, c_char_p, c_double, c_int, c_int64, c_size_t, c_void_p

REGIMES = {0: "diffusive", 1: "integrative", 2: "brownian"}


def version():
    """The runtime's version string ("0.1.0")."""
    return _lib.text(_lib.lib().rfa_version())


def devices():
    """The Vulkan devices the loader sees: [(index, name, type), ...]; type is "discrete",
    "integrated", "virtual", "cpu" or "other". Creates no device."""
    n = c_int(0)
    _lib.call("rfa_device_count", ctypes.byref(n))
    out = []
    for i in range(n.value):
        name, kind = c_char_p(), c_char_p()
        _lib.call("rfa_device_name", i, ctypes.byref(name), ctypes.byref(kind))
        out.append((i, _lib.text(name.value), _lib.text(kind.value)))
    return out


class Context:
    """One Vulkan device opened by the runtime. device: None (the best device, or RFA_DEVICE), an
    index, or a case-insensitive name substring. validation: None follows RFA_VALIDATION, else
    True/False. The package reads those variables (and RFA_DEVICE_PROFILE, RFA_LINEAR_KERNEL,
    RFA_ATTN_*, RFA_NO_PUSH_DESCRIPTORS) itself and passes them to rfa_context_create_ex: the
    library reads no environment. Sessions on one context share the device; Session(device=...)
    reuses one context per device string."""

    @checked
    def __init__(self, device=None, validation=None, verify_kernels=None, kernel_cache=None):
        """verify_kernels: True checks every attention path the kernel chooser can take on the device
        when the context is created and never chooses one that failed (ContextOptions::verify_kernels;
        None follows RFA_VERIFY_KERNELS); kernel_cache: a file that keeps the verdicts per device and
        driver (None follows RFA_KERNEL_CACHE)."""
        if device is not None and not isinstance(device, (str, int)) or isinstance(device, bool):
            raise _args.bad("device must be None, an index or a name substring, got %r" % (device,))
        if validation not in (None, True, False, 0, 1):
            raise _args.bad("validation must be None, True or False, got %r" % (validation,))
        if verify_kernels not in (None, True, False, 0, 1):
            raise _args.bad("verify_kernels must be None, True or False, got %r" % (verify_kernels,))
        if kernel_cache is not None and not isinstance(kernel_cache, (str, os.PathLike)):
            raise _args.bad("kernel_cache must be None or a path, got %r" % (kernel_cache,))
        h = c_void_p()
        dev = None if device is None else str(device).encode()
        opts = _lib.ContextOptions()
        _lib.lib().rfa_context_options_default(ctypes.byref(opts))
        opts.device = dev
        opts.validation = -1 if validation is None else int(bool(validation))
        if kernel_cache is not None:
            opts.kernel_cache = os.fsencode(kernel_cache)
        _lib.context_options_from_environment(opts)
        if verify_kernels is not None:
            opts.verify_kernels = int(bool(verify_kernels))
        _lib.call("rfa_context_create_ex", ctypes.byref(opts), ctypes.byref(h))
        self._h = h
        # Raw handles of the live sessions on this context. Closing the context closes them first:
        # in a garbage cycle (e.g. a traceback holding both) Python may finalize the context before
        # a session that refers to it, and a device must outlive everything made on it.
        self._sessions = {}
        name, kind = c_char_p(), c_char_p()
        _lib.call("rfa_context_device", h, ctypes.byref(name), ctypes.byref(kind))
        self.device_name = _lib.text(name.value)
        self.device_type = _lib.text(kind.value)

    @property
    def capabilities(self):
        """The device's limits and features as the runtime sees them, the binding mode and the attention
        paths it would take (rfa::Context::capabilities_summary), as text."""
        return _lib.text(_lib.lib().rfa_context_capabilities(self._h))

    @property
    def kernel_refusals(self):
        """The attention paths the kernel check refused on this device (verify_kernels), one string
        each: the kernel, its error and what the chooser no longer takes. [] when none."""
        text = _lib.text(_lib.lib().rfa_context_kernel_refusals(self._h))
        return [line for line in text.split("\n") if line]

    @property
    def validation_messages(self):
        """Warnings and errors the Vulkan validation layer reported on this context so far."""
        return int(_lib.lib().rfa_context_validation_messages(self._h))

    @property
    def lost(self):
        """True once the device was lost (a call raised rfa.Error with code rfa.DEVICE_LOST): every
        call that needs the GPU then raises the same; close the context and its sessions and make
        new ones (docs/python.md, "When the device fails")."""
        return bool(self._h) and bool(_lib.lib().rfa_context_lost(self._h))

    def _adopt_session(self, h):
        self._sessions[h.value] = h

    def _release_session(self, h):
        """Destroys a session handle unless the context already did; True if it was live."""
        live = self._sessions.pop(h.value, None) is not None
        if live:
            _lib.lib().rfa_session_destroy(h)
        return live

    def close(self):
        if getattr(self, "_h", None):
            for h in list(self._sessions.values()):
                self._release_session(h)
            _lib.lib().rfa_context_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __repr__(self):
        return "rfa.Context(%r, %s)" % (self.device_name, self.device_type)


_contexts = {}
_contexts_lock = threading.Lock()


def shared_context(device=None):
    """The context Session(device=...) uses: one per device selector, created on first use, and
    again after its device was lost (or it was closed)."""
    if isinstance(device, Context):
        return device
    if device is not None and not isinstance(device, (str, int)) or isinstance(device, bool):
        raise _args.bad("device must be None, an index, a name substring or an rfa.Context, got %r" % (device,))
    key = None if device is None else str(device)
    with _contexts_lock:
        ctx = _contexts.get(key)
        # A lost device refuses all work: new sessions get a new context (the lost one's sessions
        # keep raising DEVICE_LOST until they are closed).
        if ctx is None or not ctx._h or ctx.lost:
            ctx = _contexts[key] = Context(device)
        return ctx


@checked
def load_model(path):
    """Loads and validates a model folder (config.json + model.safetensors [+ tokenizer files]).
    Raises rfa.Error (MODEL_ERROR, IO_ERROR, ...) with the runtime's message."""
    return Model(path)


class Model:
    """A loaded model (host memory). Sessions run it on a device."""

    @checked
    def __init__(self, path):
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise _args.bad("path must be a folder name, got %r" % (path,))
        h = c_void_p()
        path = os.fsdecode(os.fspath(path))
        _lib.call("rfa_model_load", path.encode(), ctypes.byref(h))
        self._h = h
        self.path = os.fspath(path)
        v = [c_int() for _ in range(6)]
        _lib.call("rfa_model_info", h, *[ctypes.byref(x) for x in v])
        d_e, hidden, t_equal = c_int(), c_int(), c_int()
        _lib.call("rfa_model_dims", h, ctypes.byref(d_e), ctypes.byref(hidden), ctypes.byref(t_equal))
        window = c_int()
        _lib.call("rfa_model_attention_window", h, ctypes.byref(window))
        L = _lib.lib()
        self.info = {
            "name": _lib.text(L.rfa_model_name(h)),
            "architecture": _lib.text(L.rfa_model_architecture(h)),
            "layers": v[0].value, "heads": v[1].value, "head_dim": v[2].value,
            "input_dim": v[3].value, "output_dim": v[4].value, "vocab": v[5].value,
            "d_e": d_e.value, "hidden": hidden.value, "t_equal": bool(t_equal.value),
            "tokenizer": _lib.text(L.rfa_model_tokenizer(h)) or None,
            "attention_window": window.value,
        }

    @property
    def is_lm(self):
        return self.info["architecture"] == "lm"

    def heads(self):
        """Every head's physical parameters and noise regime (docs/math.md §5), layer by layer."""
        out = []
        for layer in range(self.info["layers"]):
            for head in range(self.info["heads"]):
                h = _lib.HeadInfo()
                _lib.call("rfa_model_head", self._h, layer, head, ctypes.byref(h))
                d = {"layer": layer, "head": head}
                d.update({n: getattr(h, n) for n, _ in _lib.HeadInfo._fields_ if n != "regime"})
                d["regime"] = REGIMES.get(h.regime, str(h.regime))
                out.append(d)
        return out

    @checked
    def encode(self, text):
        """Text (str or bytes) -> token ids (np.int64), with the model's tokenizer (LMs only)."""
        if not isinstance(text, (str, bytes, bytearray, memoryview)):
            raise _args.bad("encode: text must be str or bytes, got %r" % (text,))
        b = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        n = c_size_t()
        _lib.call("rfa_model_encode", self._h, b, len(b), None, 0, ctypes.byref(n))
        ids = np.zeros(n.value, dtype=np.int64)
        _lib.call("rfa_model_encode", self._h, b, len(b), ids.ctypes.data_as(P(c_int64)), ids.size, ctypes.byref(n))
        return ids

    @checked
    def decode_bytes(self, ids):
        """Token ids -> the bytes they stand for (ids outside the vocabulary are skipped)."""
        a = _args.array(ids, "ids")
        if a.size and a.dtype.kind not in "iu":
            raise _args.bad("decode: token ids must be integers, got an array of %s" % a.dtype)
        if a.dtype.kind == "u" and a.size and int(a.max()) > np.iinfo(np.int64).max:
            raise _args.bad("decode: token id %d does not fit in int64" % int(a.max()))
        a = np.ascontiguousarray(a.astype(np.int64).reshape(-1))
        n = c_size_t()
        ptr = a.ctypes.data_as(P(c_int64))
        _lib.call("rfa_model_decode", self._h, ptr, a.size, None, 0, ctypes.byref(n))
        buf = ctypes.create_string_buffer(max(n.value, 1))
        _lib.call("rfa_model_decode", self._h, ptr, a.size, buf, n.value, ctypes.byref(n))
        return buf.raw[:n.value]

    def decode(self, ids):
        """Token ids -> text (invalid UTF-8, e.g. a split multi-byte piece, becomes U+FFFD)."""
        return self.decode_bytes(ids).decode("utf-8", "replace")

    @checked
    def reference(self, x, timestamps=None):
        """REFERENCE ONLY (slow; for checking results): the double-precision CPU twin's forward pass
        on x ([N, d] / [B, N, d] values, or [N] / [B, N] token ids). Returns float64 [B, N, output_dim].
        The twin is in librfa_reference, loaded on first use (RFA_REFERENCE_LIBRARY, else next to
        librfa); without it this raises rfa.Error (code rfa.UNSUPPORTED) saying where it looked."""
        from .session import as_input, as_timestamps
        arr, B, N = as_input(self, x, None)
        ts = as_timestamps(timestamps, B, N)
        out = np.zeros((B, N, self.info["output_dim"]), dtype=np.float64)
        vals = None if self.is_lm else np.ascontiguousarray(np.asarray(x, dtype=np.float64).reshape(arr.shape))
        _lib.call_reference("rfa_model_reference_forward", self._h, B, N,
                  None if vals is None else vals.ctypes.data_as(P(c_double)),
                  arr.ctypes.data_as(P(c_int64)) if self.is_lm else None,
                  None if ts is None else ts.ctypes.data_as(P(c_double)),
                  out.ctypes.data_as(P(c_double)))
        return out

    def close(self):
        if getattr(self, "_h", None):
            _lib.lib().rfa_model_destroy(self._h)
            self._h = None

    def __del__(self):
        self.close()

    def __repr__(self):
        i = self.info
        return "rfa.Model(%r: %s, %d layers x %d heads, D = %d)" % (i["name"], i["architecture"], i["layers"],
                                                                   i["heads"], i["head_dim"])
