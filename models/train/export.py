"""Export to the runtime's model format: model.safetensors + config.json, and .npy goldens.

config.json = {"format": "rfa-reference", "architecture": "lm"|"signal"|"attention", "args": {...}}
Tensor names are the reference state_dict keys; the derived buffers t_measure / abs_idx /
causal_mask are never written. lm_head.weight (tied to token_embedding.weight) is omitted.

Also usable on a checkpoint made with the author's code:
    /usr/bin/python3 export.py --ckpt their_state_dict.pt --args their_args.json \
        --architecture lm --hidden-dim 1024 --out DIR
where their_args.json is vars(args) of their argparse namespace (see README.md).
"""
import argparse
import json
import os
import struct
from collections import OrderedDict

import numpy as np
import torch

from rfa_torch import REFERENCE_DEFAULTS, OUR_DEFAULTS

DERIVED_BUFFERS = ("t_measure", "abs_idx", "causal_mask")
_DT = {np.dtype("float32"): "F32", np.dtype("float16"): "F16", np.dtype("float64"): "F64",
       np.dtype("int64"): "I64", np.dtype("int32"): "I32"}


def clean_state_dict(sd, architecture):
    out = OrderedDict()
    for k, v in sd.items():
        if k.split(".")[-1] in DERIVED_BUFFERS:
            continue
        if architecture == "lm" and k == "lm_head.weight":
            continue
        out[k] = v.detach().cpu()
    return out


def storage_dtype(name, t, mode):
    """mode 'f32': everything f32. mode 'f16': big matrices (>= 4096 elements) in f16,
    the small per-head parameters/buffers (mu_v, omega_v, sigma_v, ...) and biases stay f32, and so
    do learned step angles (acc_phi): every occurrence of a token adds its step, so a rounding
    error would accumulate along the sequence."""
    if mode == "f16" and t.numel() >= 4096 and not name.endswith("acc_phi"):
        return np.float16
    return np.float32


def write_safetensors(path, tensors, mode="f32", metadata=None):
    """tensors: name -> torch tensor. Returns name -> np array as stored (for goldens)."""
    header, blobs, stored, off = {}, [], OrderedDict(), 0
    for name in sorted(tensors):
        arr = tensors[name].numpy().astype(storage_dtype(name, tensors[name], mode))
        arr = np.ascontiguousarray(arr)
        b = arr.tobytes()
        header[name] = {"dtype": _DT[arr.dtype], "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        stored[name] = arr
        off += len(b)
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
    return stored


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    inv = {v: k for k, v in _DT.items()}
    out = OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(data[a:b], dtype=inv[info["dtype"]]).reshape(info["shape"])
    return out


def full_args(args_ns_or_dict):
    """All reference argument names (docs/reference-code.md §9.1) + our keys, explicitly."""
    d = dict(args_ns_or_dict) if isinstance(args_ns_or_dict, dict) else dict(vars(args_ns_or_dict))
    out = OrderedDict()
    for k in list(REFERENCE_DEFAULTS) + list(OUR_DEFAULTS):
        v = d.get(k, REFERENCE_DEFAULTS.get(k, OUR_DEFAULTS.get(k)))
        out[k] = v
    for k, v in d.items():          # keep any extra reference flags the caller had
        if k not in out and k != "architecture" and isinstance(v, (bool, int, float, str, type(None))):
            out[k] = v
    return out


def write_config(path, architecture, args):
    cfg = {"format": "rfa-reference", "architecture": architecture, "args": full_args(args)}
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    return cfg


def export_model(model, args, architecture, out_dir, mode="f32", metadata=None):
    os.makedirs(out_dir, exist_ok=True)
    sd = clean_state_dict(model.state_dict(), architecture)
    stored = write_safetensors(os.path.join(out_dir, "model.safetensors"), sd, mode, metadata)
    write_config(os.path.join(out_dir, "config.json"), architecture, args)
    return stored


def load_stored_into(model, stored, dtype=torch.float64):
    """Load the stored (rounded) tensors into `model` and cast it to dtype (for goldens)."""
    model = model.to(dtype)
    sd = model.state_dict()
    missing = []
    with torch.no_grad():
        for k in sd:
            if k in stored:
                sd[k].copy_(torch.from_numpy(np.asarray(stored[k]).astype(np.float64)).to(dtype))
            else:
                missing.append(k)
    if getattr(model, "lm_head", None) is not None:
        assert model.lm_head.weight.data_ptr() == model.token_embedding.weight.data_ptr()
    return model, missing


def save_npy(path, arr):
    np.save(path, np.ascontiguousarray(arr))


def main():
    ap = argparse.ArgumentParser(description="export a reference-code checkpoint")
    ap.add_argument("--ckpt", required=True, help="torch.save'd state_dict (or dict with 'model_state_dict')")
    ap.add_argument("--args", required=True, help="JSON of vars(args) of the author's namespace")
    ap.add_argument("--architecture", required=True, choices=["lm", "signal", "attention"])
    ap.add_argument("--hidden-dim", type=int, default=None, help="FFN width (reference LM: 4*d_v_total)")
    ap.add_argument("--d-in", type=int, default=None, help="signal measurement dimension")
    ap.add_argument("--norm", default="layer_norm", choices=["layer_norm", "rms_norm", "none"])
    ap.add_argument("--norm-eps", type=float, default=1e-5)
    ap.add_argument("--tokenizer", default=None, help='e.g. "gpt2" (WikiText notebook) or "bytes"')
    ap.add_argument("--dtype", default="f32", choices=["f32", "f16"])
    ap.add_argument("--out", required=True)
    o = ap.parse_args()
    sd = torch.load(o.ckpt, map_location="cpu")
    if "model_state_dict" in sd:
        sd = sd["model_state_dict"]
    with open(o.args) as f:
        a = json.load(f)
    a.update(hidden_dim=o.hidden_dim or a.get("hidden_dim") or 4 * a["d_v_total"],
             d_in=o.d_in, norm=o.norm, norm_eps=o.norm_eps,
             tokenizer=o.tokenizer or a.get("tokenizer") or ("gpt2" if o.architecture == "lm" else None))
    os.makedirs(o.out, exist_ok=True)
    clean = clean_state_dict(sd, o.architecture)
    write_safetensors(os.path.join(o.out, "model.safetensors"), clean, o.dtype)
    write_config(os.path.join(o.out, "config.json"), o.architecture, a)
    print("wrote", o.out, len(clean), "tensors")


if __name__ == "__main__":
    main()
