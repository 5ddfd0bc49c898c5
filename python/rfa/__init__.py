"""rfa: Python bindings of RFA-VK (Robust Filter Attention on Vulkan GPUs).

    import rfa
    rfa.devices()                                   # [(index, name, type), ...]
    m = rfa.load_model("models/spiral-filter")      # raises rfa.Error(code, message)
    m.info, m.heads()
    s = rfa.Session(m, batch=1, max_context=4096, device=None, window=0)  # 0: the model's own window
    y = s.prefill(x, timestamps=None)               # float32 [B, N, output_dim]
    y = s.step(x_t, timestamps=None)                # float32 [B, 1, output_dim]
    a = s.attention(layer, head)                    # every position still cached (rows=, cols= narrow it)

ctypes over the C API of the runtime's library (found through RFA_LIBRARY, next to this package,
or in an install prefix, the one `cmake --install` recorded included; see rfa._lib). Every bad
argument raises rfa.Error. The guide: docs/python.md in the repository.
"""
from ._lib import (CODE_NAMES, DEVICE_ERROR, DEVICE_LOST, INPUT_ERROR, INVALID_ARGUMENT, IO_ERROR, MODEL_ERROR, OK,
                   OUT_OF_MEMORY, UNSUPPORTED, Error, library_path)
from .model import Context, Model, devices, load_model, version
from .session import Session

__all__ = ["Error", "Context", "Model", "Session", "devices", "load_model", "version", "library_path", "OK",
           "INVALID_ARGUMENT", "MODEL_ERROR", "INPUT_ERROR", "DEVICE_ERROR", "OUT_OF_MEMORY", "DEVICE_LOST",
           "IO_ERROR", "UNSUPPORTED", "CODE_NAMES"]
__version__ = "0.1.0"
