"""The bindings give exactly what rfa-run --dump gives on the zoo models (same device, same
kernels, same inputs: bit for bit), and streaming one position at a time gives what one prefill
gives (to fp32 tolerance: a step is a different kernel launch shape)."""
import os

import numpy as np
import pytest

import rfa
from conftest import golden, model_dir, rfa_run


def dump(tmp_path, model, *args):
    out = str(tmp_path / "dump")
    r = rfa_run("--model", model_dir(model), "--dump", out, *args)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("case", ["regular", "irregular"])
def test_signal_outputs_and_maps_equal_rfa_run_dump(tmp_path, spiral, ctx, case):
    x = os.path.join(model_dir("spiral-filter"), "golden", case + "_input.npy")
    args = ["--signal", x, "--dump-attention", "0:1,1:3"]
    t = None
    if case == "irregular":
        tf = os.path.join(model_dir("spiral-filter"), "golden", "irregular_timestamps.npy")
        args += ["--timestamps", tf]
        t = np.load(tf)
    out = dump(tmp_path, "spiral-filter", *args)
    s = rfa.Session(spiral, max_context=64, device=ctx)
    y = s.prefill(np.load(x), timestamps=t)
    want = np.load(os.path.join(out, "output.npy"))
    assert y.shape == want.shape
    assert np.array_equal(y, want), np.abs(y - want).max()
    for layer, head in [(0, 1), (1, 3)]:
        for decayed, name in [(False, "attn_L%d_H%d.npy"), (True, "attn_decayed_L%d_H%d.npy")]:
            a = np.load(os.path.join(out, name % (layer, head)))[0]
            assert np.array_equal(s.attention(layer, head, decayed=decayed), a)


def test_lm_logits_equal_rfa_run_dump(tmp_path, char_lm, ctx):
    x = os.path.join(model_dir("tiny-char-lm"), "golden", "input.npy")
    out = dump(tmp_path, "tiny-char-lm", "--tokens", x)
    y = rfa.Session(char_lm, max_context=48, device=ctx).prefill(np.load(x))
    want = np.load(os.path.join(out, "output.npy"))
    assert y.shape == want.shape == (1, 48, 256)
    assert np.array_equal(y, want), np.abs(y - want).max()


def test_prompt_generation_equals_rfa_run(char_lm, ctx):
    r = rfa_run("--model", model_dir("tiny-char-lm"), "--prompt", "The ", "--generate", "12", "--json")
    assert r.returncode == 0, r.stderr
    import json
    want = json.loads(r.stdout)["generated"]
    s = rfa.Session(char_lm, max_context=16, device=ctx)
    logits = s.prefill(char_lm.encode("The "))
    got = []
    for _ in range(12):
        t = int(np.argmax(logits[0, -1]))
        got.append(t)
        logits = s.step(t)
    assert got == want


def test_streaming_equals_prefill(spiral, ctx):
    x, t = golden("spiral-filter", "irregular_input"), golden("spiral-filter", "irregular_timestamps")
    x2 = np.concatenate([x, x[:, ::-1]], axis=0)  # two batch rows
    t2 = np.concatenate([t, t], axis=0)
    pre = rfa.Session(spiral, batch=2, max_context=64, device=ctx).prefill(x2, timestamps=t2)
    s = rfa.Session(spiral, batch=2, max_context=64, device=ctx)
    steps = [s.step(x2[:, i], timestamps=t2[:, i]) for i in range(64)]
    assert all(o.shape == (2, 1, 2) for o in steps)
    stream = np.concatenate(steps, axis=1)
    assert np.allclose(stream, pre, rtol=1e-4, atol=1e-5), np.abs(stream - pre).max()
    assert s.position == 64 and np.array_equal(s.timestamps(1), t2[1].astype(np.float64))


def test_step_needs_one_position_for_every_batch_row(spiral, ctx):
    s = rfa.Session(spiral, batch=2, max_context=4, device=ctx)
    with pytest.raises(rfa.Error) as e:
        s.step(np.zeros(2, np.float32))
    assert "1 batch rows, the session has 2" in e.value.message
