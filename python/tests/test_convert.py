"""python3 -m rfa.convert: a checkpoint (state_dict + training namespace) -> a model folder the
runtime loads, giving the same numbers as the model it came from."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import rfa
from rfa import convert, safetensors
from conftest import SOURCE, golden, model_dir

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(rfa.__file__)))
OURS = ("hidden_dim", "d_in", "norm", "norm_eps", "tokenizer")


def run_convert(*args):
    env = dict(os.environ, PYTHONPATH=PACKAGE_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "rfa.convert"] + [str(a) for a in args], capture_output=True,
                          text=True, env=env)


def checkpoint_of(tmp_path, model):
    """The zoo model as a training run would have saved it: the state_dict with the derived
    buffers, DataParallel's "module." prefix and (LMs) the tied lm_head.weight, as an .npz; and
    vars(args) without our own keys, as JSON."""
    sd = dict(safetensors.read(os.path.join(model_dir(model), "model.safetensors")))
    cfg = json.load(open(os.path.join(model_dir(model), "config.json")))
    prefix = "" if cfg["architecture"] == "attention" else "backbone.blocks.0.attn."
    n = 16
    sd[prefix + "t_measure"] = np.arange(n, dtype=np.int64)
    sd[prefix + "abs_idx"] = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(np.int64)
    sd[prefix + "causal_mask"] = np.tril(np.ones((1, n, n, 1), np.float32))
    if "token_embedding.weight" in sd:
        sd["lm_head.weight"] = sd["token_embedding.weight"].copy()
    ckpt = tmp_path / "ckpt.npz"
    np.savez(ckpt, **{"module." + k: v for k, v in sd.items()})
    args = {k: v for k, v in cfg["args"].items() if k not in OURS}
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(args))
    return ckpt, args_file, cfg


@pytest.mark.parametrize("model,tokens", [("spiral-filter", False), ("tiny-char-lm", True)])
def test_npz_checkpoint_becomes_the_same_model(tmp_path, ctx, model, tokens):
    ckpt, args_file, cfg = checkpoint_of(tmp_path, model)
    out = tmp_path / "converted"
    extra = ["--tokenizer", "bytes"] if tokens else []
    r = run_convert(ckpt, "--args", args_file, "--out", out, *extra)
    assert r.returncode == 0, r.stderr
    assert "checked: " + cfg["architecture"] in r.stdout
    written = json.load(open(out / "config.json"))
    assert written["format"] == "rfa-reference" and written["architecture"] == cfg["architecture"]
    for k in ("hidden_dim", "d_in", "n_heads", "num_blocks", "d_e"):  # implied by the tensors
        if cfg["args"].get(k) is not None:
            assert written["args"][k] == cfg["args"][k], k
    keys = set(safetensors.read(str(out / "model.safetensors")))
    assert keys == set(safetensors.read(os.path.join(model_dir(model), "model.safetensors")))
    x = golden(model, "input" if tokens else "regular_input")
    want = rfa.Session(rfa.load_model(model_dir(model)), max_context=64, device=ctx).prefill(x)
    got = rfa.Session(rfa.load_model(str(out)), max_context=64, device=ctx).prefill(x)
    assert np.array_equal(got, want)


def test_without_a_namespace_it_stops_unless_told_to_assume_the_defaults(tmp_path, ctx):
    """The spiral-filter's flags are not in its tensors: converted with the notebook defaults it
    loads and runs, and computes something else. So the conversion refuses to guess."""
    ckpt, _, _ = checkpoint_of(tmp_path, "spiral-filter")
    r = run_convert(ckpt, "--out", tmp_path / "guess")
    assert r.returncode == 2 and "--assume-defaults" in r.stderr and "--args" in r.stderr
    assert "training namespace" in r.stderr and not (tmp_path / "guess").exists()
    with pytest.raises(convert.ConvertError, match="assume-defaults"):
        convert.convert(dict(np.load(ckpt)), None, str(tmp_path / "guess"))
    r = run_convert(ckpt, "--assume-defaults", "--out", tmp_path / "guess")
    assert r.returncode == 0, r.stderr
    assert "--assume-defaults" in r.stderr  # the note says what was assumed
    x = golden("spiral-filter", "regular_input")
    want = rfa.Session(rfa.load_model(model_dir("spiral-filter")), max_context=64, device=ctx).prefill(x)
    got = rfa.Session(rfa.load_model(str(tmp_path / "guess")), max_context=64, device=ctx).prefill(x)
    assert np.abs(got - want).max() > 1e-2  # the guess runs, and is wrong: why it needs an explicit opt-in


def test_args_that_contradict_the_tensors_are_named(tmp_path):
    ckpt, args_file, _ = checkpoint_of(tmp_path, "spiral-filter")
    args = json.loads(args_file.read_text())
    args["n_heads"] = 8
    args_file.write_text(json.dumps(args))
    r = run_convert(ckpt, "--args", args_file, "--out", tmp_path / "out")
    assert r.returncode == 2 and "args.n_heads is 8, but the tensors imply 4" in r.stderr


def test_the_runtimes_rejection_is_reported(tmp_path):
    ckpt, args_file, _ = checkpoint_of(tmp_path, "spiral-filter")
    sd = dict(np.load(ckpt))
    sd["module.backbone.blocks.1.attn.W_q.bias"] = np.zeros(7, np.float32)
    np.savez(ckpt, **sd)
    r = run_convert(ckpt, "--args", args_file, "--out", tmp_path / "out")
    assert r.returncode == 3, r.stderr
    assert "the runtime rejects" in r.stderr and "backbone.blocks.1.attn.W_q.bias" in r.stderr


def test_an_untied_lm_head_is_refused(tmp_path):
    sd = {"token_embedding.weight": np.zeros((4, 2), np.float32), "lm_head.weight": np.ones((4, 2), np.float32)}
    with pytest.raises(convert.ConvertError, match="lm_head.weight differs from token_embedding.weight"):
        convert.convert(sd, {}, str(tmp_path / "out"))


def test_torch_checkpoint(tmp_path, ctx):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch); the "
                                                "torch.save checkpoint path is not exercised")
    sys.path.insert(0, os.path.join(SOURCE, "models", "train"))
    from rfa_torch import build, make_args
    args = make_args("M2", n_heads=2, d_e=8, d_k_total=8, d_v_total=8, num_blocks=1, hidden_dim=12, d_in=2,
                     seq_len=16, t_equal=False, vocab_size=None)
    args.architecture = "signal"
    torch.manual_seed(3)
    model = build(args).eval()
    ckpt = tmp_path / "ckpt.pt"
    torch.save({"model_state_dict": model.state_dict(), "args": args}, ckpt)
    r = run_convert(ckpt, "--out", tmp_path / "no")
    assert r.returncode == 2 and "--trust-pickle" in r.stderr  # a Namespace is more than tensors
    r = run_convert(ckpt, "--trust-pickle", "--out", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    x = np.random.default_rng(1).standard_normal((1, 10, 2)).astype(np.float32)
    t = np.cumsum(np.random.default_rng(2).uniform(0.5, 1.5, (1, 10)), axis=1)
    got = rfa.Session(rfa.load_model(str(tmp_path / "out")), max_context=10, device=ctx).prefill(x, timestamps=t)
    with torch.no_grad():
        want = model.double()(torch.from_numpy(x.astype(np.float64)), t_measure=torch.from_numpy(t)).numpy()
    assert np.abs(got - want).max() < 2e-4 * max(1.0, np.abs(want).max())
