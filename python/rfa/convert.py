"""Checkpoint -> model folder: `python3 -m rfa.convert CHECKPOINT --out DIR [options]`.

A checkpoint of the author's PyTorch code (or of models/train) is a `state_dict`, saved with
torch.save, often inside a dict with the argparse namespace it was trained with
({"model_state_dict": ..., "args": Namespace(...)}). This writes the runtime's model format
(docs/model-format.md): model.safetensors with the state_dict's own keys (the derived buffers
t_measure / abs_idx / causal_mask dropped, the tied lm_head.weight dropped) and config.json with
the namespace in "args", plus the sizes the tensors imply (hidden_dim, d_in, n_heads, ...) where
the namespace leaves them out. Then, when librfa.so can be loaded, the folder is loaded by the
runtime, whose validation names any tensor or flag it cannot run.

Inputs: .pt / .pth / .ckpt (needs torch), .npz (numpy.savez of the state_dict; no torch needed)
or .safetensors. The namespace comes from --args FILE.json (vars(args)) or from the checkpoint.
Without one the conversion stops: the flags it holds (use_robust_weight, the decay and noise
parameterisations, attention_window, ...) are not in the tensors, and a guess gives a model that
loads and runs but computes something else. --assume-defaults opts in to the WikiText notebook's
defaults for every flag the tensors do not imply.
torch.load runs pickle: convert only checkpoints you trust (--trust-pickle allows a full unpickle
when the checkpoint holds more than tensors, e.g. an argparse.Namespace).
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

from . import safetensors

DERIVED_BUFFERS = ("t_measure", "abs_idx", "causal_mask")
ARCHITECTURES = ("lm", "signal", "attention")


class ConvertError(Exception):
    pass


# ---- reading checkpoints --------------------------------------------------------------------

def _to_numpy(v):
    if isinstance(v, np.ndarray):
        return v
    if hasattr(v, "detach"):  # a torch tensor
        t = v.detach().cpu()
        if str(t.dtype) == "torch.bfloat16":
            t = t.float()
        return t.numpy()
    return None


def _namespace_dict(a):
    if a is None:
        return None
    if isinstance(a, dict):
        return dict(a)
    if hasattr(a, "__dict__"):
        return dict(vars(a))
    raise ConvertError("the checkpoint's 'args' is a %s, not a namespace or dict" % type(a).__name__)


def _split_checkpoint(obj):
    """(state_dict, args or None) from what torch.load / np.load returned."""
    if isinstance(obj, dict) and obj and all(_to_numpy(v) is not None for v in obj.values()):
        return obj, None
    if isinstance(obj, dict):
        for key in ("model_state_dict", "state_dict", "model"):
            if isinstance(obj.get(key), dict):
                return obj[key], _namespace_dict(obj.get("args"))
    raise ConvertError("no state_dict found: expected a dict of tensors, or a dict with 'model_state_dict', "
                       "'state_dict' or 'model'")


def load_checkpoint(path, trust_pickle=False):
    """(state_dict of numpy arrays, args dict or None)."""
    if path.endswith(".npz"):
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}, None
    if path.endswith(".safetensors"):
        return dict(safetensors.read(path)), None
    try:
        import torch
    except ImportError:
        raise ConvertError("%s: reading a torch checkpoint needs PyTorch (Debian: python3-torch); or save the "
                           "state_dict with numpy.savez and convert the .npz" % path)
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - torch raises many kinds for a non-tensor pickle
        if not trust_pickle:
            raise ConvertError("%s: holds more than tensors (%s); if you trust the file, pass --trust-pickle"
                               % (path, str(e).splitlines()[0][:200]))
        obj = torch.load(path, map_location="cpu", weights_only=False)
    sd, args = _split_checkpoint(obj)
    return {k: _to_numpy(v) for k, v in sd.items() if _to_numpy(v) is not None}, args


# ---- cleaning and describing --------------------------------------------------------------

def clean_state_dict(sd, architecture):
    """Drops the derived buffers and the tied lm_head.weight; strips DataParallel's "module."."""
    out = {}
    for k, v in sd.items():
        k = k[len("module."):] if k.startswith("module.") else k
        if k.split(".")[-1] in DERIVED_BUFFERS:
            continue
        out[k] = np.asarray(v)
    if architecture == "lm" and "lm_head.weight" in out:
        w = out.pop("lm_head.weight")
        emb = out.get("token_embedding.weight")
        if emb is None or w.shape != emb.shape or not np.array_equal(w, emb):
            raise ConvertError("lm_head.weight differs from token_embedding.weight: the runtime's language model "
                               "ties them (the reference LanguageModel does)")
    return out


def infer_architecture(sd):
    if "token_embedding.weight" in sd:
        return "lm"
    if "input_proj.weight" in sd and "output_head.weight" in sd:
        return "signal"
    if "W_q.weight" in sd:
        return "attention"
    raise ConvertError("cannot tell the architecture from the tensor names (no token_embedding.weight, "
                       "input_proj/output_head or W_q.weight); pass --architecture")


def implied_args(sd, architecture):
    """The sizes the tensors imply, under the reference's argument names and ours."""
    p = "" if architecture == "attention" else "backbone.blocks.0.attn."
    out = {}
    if p + "mu_v" in sd:
        out["n_heads"] = int(sd[p + "mu_v"].shape[0])
    if p + "W_q.weight" in sd:
        out["d_e"] = int(sd[p + "W_q.weight"].shape[1])
        out["d_k_total"] = int(sd[p + "W_q.weight"].shape[0] // 2)
    if p + "W_v.weight" in sd:
        out["d_v_total"] = int(sd[p + "W_v.weight"].shape[0] // 2)
    if architecture != "attention":
        blocks = {k.split(".")[2] for k in sd if k.startswith("backbone.blocks.")}
        out["num_blocks"] = len(blocks)
        if "backbone.blocks.0.ffn.0.weight" in sd:
            out["hidden_dim"] = int(sd["backbone.blocks.0.ffn.0.weight"].shape[0])
    if architecture == "lm" and "token_embedding.weight" in sd:
        out["vocab_size"] = int(sd["token_embedding.weight"].shape[0])
    if architecture == "signal" and "input_proj.weight" in sd:
        out["d_in"] = int(sd["input_proj.weight"].shape[1])
    return out


def config_args(args, sd, architecture, overrides):
    """The namespace's JSON-able entries, the implied sizes where it has none (a disagreement is an
    error naming both), and our keys from `overrides` (hidden_dim, d_in, norm, norm_eps, tokenizer)."""
    out = {}
    for k, v in (args or {}).items():
        if k != "architecture" and isinstance(v, (bool, int, float, str, type(None))):
            out[k] = v
    for k, v in implied_args(sd, architecture).items():
        given = overrides.get(k) if overrides.get(k) is not None else out.get(k)
        if given is not None and given != v:
            raise ConvertError("args.%s is %r, but the tensors imply %r" % (k, given, v))
        out[k] = v
    for k, v in overrides.items():
        if v is not None:
            out[k] = v
    return out


def storage_dtype(a, dtype):
    """f32: every float as float32; f16: matrices of >= 4096 elements as float16, the small
    per-head parameters and biases float32; keep: as given."""
    if a.dtype.kind != "f" or dtype == "keep":
        return a
    if dtype == "f16" and a.size >= 4096:
        return a.astype(np.float16)
    return a.astype(np.float32)


# ---- writing ------------------------------------------------------------------------------

NO_NAMESPACE = ("has no training namespace (the argparse args it was trained with): the flags in it are not in "
                "the tensors, and the notebook defaults the runtime would assume can compute something else. "
                "Pass --args FILE.json (vars(args) of the training run), or --assume-defaults to take the "
                "WikiText notebook's defaults for every flag")


def convert(state_dict, args, out_dir, architecture=None, dtype="f32", tokenizer_dir=None, assume_defaults=False,
            **ours):
    """Writes a model folder from a state_dict (name -> array or tensor) and the training namespace
    (a dict or an argparse.Namespace). args=None is refused (ConvertError) unless
    assume_defaults=True, which takes the WikiText notebook's defaults for every flag the tensors
    do not imply. `ours`: hidden_dim, d_in, norm, norm_eps, tokenizer. Returns the config written."""
    if args is None and not assume_defaults:
        raise ConvertError("the checkpoint " + NO_NAMESPACE)
    sd = {k: _to_numpy(v) if _to_numpy(v) is not None else np.asarray(v) for k, v in state_dict.items()}
    sd = {k[len("module."):] if k.startswith("module.") else k: v for k, v in sd.items()}
    args = _namespace_dict(args)
    arch = architecture or (args or {}).get("architecture") or infer_architecture(sd)
    if arch not in ARCHITECTURES:
        raise ConvertError("architecture %r is not one of %s" % (arch, ", ".join(ARCHITECTURES)))
    sd = clean_state_dict(sd, arch)
    if ours.get("tokenizer") is None and tokenizer_dir:
        ours["tokenizer"] = "gpt2"
    cfg = {"format": "rfa-reference", "architecture": arch, "args": config_args(args, sd, arch, ours)}
    os.makedirs(out_dir, exist_ok=True)
    safetensors.write(os.path.join(out_dir, "model.safetensors"), {k: storage_dtype(v, dtype) for k, v in sd.items()},
                      {"converted_by": "rfa.convert"})
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    if tokenizer_dir:
        for name in ("encoder.json", "vocab.bpe"):
            src = os.path.join(tokenizer_dir, name)
            if not os.path.exists(src):
                raise ConvertError("%s: missing (a GPT-2 tokenizer needs encoder.json and vocab.bpe)" % src)
            shutil.copyfile(src, os.path.join(out_dir, name))
    return cfg


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m rfa.convert",
                                 description="checkpoint of the author's RFA code -> RFA-VK model folder")
    ap.add_argument("checkpoint", help=".pt/.pth/.ckpt (torch.save), .npz (numpy.savez) or .safetensors")
    ap.add_argument("--out", required=True, help="the model folder to write")
    ap.add_argument("--args", help="JSON of vars(args), the training namespace (else the checkpoint's 'args')")
    ap.add_argument("--architecture", choices=ARCHITECTURES, help="default: from the tensor names")
    ap.add_argument("--hidden-dim", type=int, help="FFN width (default: from ffn.0.weight)")
    ap.add_argument("--d-in", type=int, help="signal measurement dimension (default: from input_proj.weight)")
    ap.add_argument("--norm", choices=["layer_norm", "rms_norm", "none"])
    ap.add_argument("--norm-eps", type=float)
    ap.add_argument("--tokenizer", choices=["bytes", "gpt2"], help="language models (default: from vocab_size)")
    ap.add_argument("--tokenizer-dir", help="folder with encoder.json and vocab.bpe to copy (GPT-2 BPE)")
    ap.add_argument("--dtype", default="f32", choices=["f32", "f16", "keep"])
    ap.add_argument("--trust-pickle", action="store_true", help="allow a full unpickle of a torch checkpoint")
    ap.add_argument("--assume-defaults", action="store_true",
                    help="without a training namespace (--args, or 'args' in the checkpoint), take the WikiText "
                         "notebook's defaults for every flag instead of stopping")
    ap.add_argument("--no-check", action="store_true", help="do not load the result with the runtime")
    o = ap.parse_args(argv)
    try:
        sd, args = load_checkpoint(o.checkpoint, o.trust_pickle)
        if o.args:
            with open(o.args) as f:
                args = json.load(f)
            if not isinstance(args, dict):
                raise ConvertError("%s: expected a JSON object (vars(args)), found %s" % (o.args, type(args).__name__))
        if args is None and not o.assume_defaults:
            raise ConvertError("%s %s" % (o.checkpoint, NO_NAMESPACE))
        if args is None:
            print("rfa.convert: note: no training namespace; every flag the tensors do not imply takes the "
                  "WikiText notebook's default (--assume-defaults)", file=sys.stderr)
        cfg = convert(sd, args, o.out, o.architecture, o.dtype, o.tokenizer_dir, assume_defaults=o.assume_defaults,
                      hidden_dim=o.hidden_dim, d_in=o.d_in, norm=o.norm, norm_eps=o.norm_eps, tokenizer=o.tokenizer)
    except (ConvertError, OSError, ValueError) as e:
        print("rfa.convert: %s" % e, file=sys.stderr)
        return 2
    print("wrote %s (%s)" % (o.out, cfg["architecture"]))
    if o.no_check:
        return 0
    from . import _lib
    try:
        _lib.lib()
    except ImportError:
        print("rfa.convert: note: librfa.so not found, so the folder was not loaded to check it", file=sys.stderr)
        return 0
    from .model import load_model
    try:
        m = load_model(o.out)
    except _lib.Error as e:
        print("rfa.convert: the runtime rejects %s: %s" % (o.out, e), file=sys.stderr)
        return 3
    i = m.info
    print("checked: %s, %d layers x %d heads, D = %d, input %d, output %d" % (
        i["architecture"], i["layers"], i["heads"], i["head_dim"], i["input_dim"], i["output_dim"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
