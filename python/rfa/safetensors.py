"""safetensors files with numpy alone: what rfa.convert writes model folders with (and reads back
in tests). Format: u64 little-endian header length, a JSON header
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}}, then the data."""
import json
import os
import struct
from collections import OrderedDict

import numpy as np

DTYPES = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("float64"): "F64",
          np.dtype("int64"): "I64", np.dtype("int32"): "I32"}
NUMPY = {v: k for k, v in DTYPES.items()}


def write(path, tensors, metadata=None):
    """tensors: name -> numpy array (float32/float16/float64/int64/int32), written in name order
    through a temporary file and a rename."""
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        if a.dtype not in DTYPES:
            raise ValueError("%s: dtype %s cannot be stored (float32, float16, float64, int64, int32)" % (name, a.dtype))
        b = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": DTYPES[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def read(path):
    """name -> numpy array (F32, F16, F64, I64, I32; BF16 widened to float32)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        if info["dtype"] == "BF16":
            raw = np.frombuffer(data[a:b], dtype="<u2").astype(np.uint32) << 16
            out[name] = raw.view(np.float32).reshape(info["shape"])
        else:
            out[name] = np.frombuffer(data[a:b], dtype=NUMPY[info["dtype"]]).reshape(info["shape"])
    return out
