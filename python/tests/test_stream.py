"""Streaming from Python: a sliding window past max_context, its report, and generation on the GPU
against the host sampler (the runtime's twin) and against rfa-run."""
import numpy as np
import pytest

import rfa
from conftest import model_dir, rfa_run


def test_a_window_streams_past_max_context_and_equals_a_windowed_prefill(spiral, ctx):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 2)).astype(np.float32)
    t = np.cumsum(rng.uniform(0.2, 1.5, size=300))
    s = rfa.Session(spiral, max_context=16, window=12, device=ctx)
    streamed = np.concatenate([s.step(x[i], t[i]) for i in range(300)], axis=1)
    assert s.position == 300 and s.oldest_position > 0
    p = rfa.Session(spiral, max_context=16, window=12, device=ctx)
    prefilled = p.prefill(x, t)  # longer than the ring: split into chunks, same result
    np.testing.assert_allclose(streamed, prefilled, rtol=1e-4, atol=1e-4)
    # The default probe rows are the ones still held; older rows are refused with the runtime's words.
    a = s.attention(1, 0)
    assert a.shape == (300 - s.oldest_position,) * 2
    with pytest.raises(rfa.Error) as e:
        s.attention(1, 0, rows=(0, 1), cols=(0, 1))
    assert "still in the cache" in str(e.value)
    rep = s.window_report()
    assert len(rep) == spiral.info["layers"] * spiral.info["heads"]
    for w in rep:
        assert w["edge_lag"] == pytest.approx(t[-1] - t[-1 - 12])
        assert 0 < w["decay_bound"] <= 1 and 0 <= w["edge_mass"] <= 1 + 1e-6
    # Without a window the same stream is an input error once max_context is reached (spiral-afa:
    # a model trained without one; spiral-filter runs with the window it was trained with).
    q = rfa.Session(rfa.load_model(model_dir("spiral-afa")), max_context=16, device=ctx)
    q.prefill(x[:16], t[:16])
    with pytest.raises(rfa.Error):
        q.step(x[16], t[16])


@pytest.mark.parametrize("temperature,top_k,top_p", [(0.0, 0, 1.0), (0.8, 40, 0.9), (1.2, 0, 1.0)])
def test_generation_on_the_gpu_equals_the_host_sampler_and_rfa_run(char_lm, ctx, temperature, top_k, top_p):
    prompt = char_lm.encode("The ")
    outs = []
    for on_gpu in (True, False):
        s = rfa.Session(char_lm, max_context=64, device=ctx)
        s.prefill(prompt)
        outs.append(s.generate(20, temperature, top_k, top_p, seed=7, on_gpu=on_gpu))
        assert s.position == len(prompt) + 19
    np.testing.assert_array_equal(outs[0], outs[1])
    r = rfa_run("--model", model_dir("tiny-char-lm"), "--prompt", "The ", "--generate", "20", "--json", "--seed", "7",
                "--temperature", str(temperature), "--top-k", str(top_k), "--top-p", str(top_p))
    assert r.returncode == 0, r.stderr
    import json
    assert json.loads(r.stdout)["generated"] == outs[0][0].tolist()


def test_fp16_kv_caches_stay_close_to_fp32_and_refuse_unknown_precisions(spiral, ctx):
    rng = np.random.default_rng(9)
    x = rng.normal(size=(2, 200, 2)).astype(np.float32)
    full = rfa.Session(spiral, batch=2, max_context=200, device=ctx).prefill(x)
    half_s = rfa.Session(spiral, batch=2, max_context=200, device=ctx, kv="f16")
    half = half_s.prefill(x)
    assert half_s.kv == "f16"
    # fp16 keys and values: a few 2^-11 relative (docs/math.md section 9); not bit-equal to fp32.
    assert not np.array_equal(full, half)
    np.testing.assert_allclose(half, full, rtol=4e-3, atol=4e-3)
    with pytest.raises(rfa.Error):
        rfa.Session(spiral, device=ctx, kv="bf16")


def test_a_model_trained_with_a_window_runs_with_it(ctx, tmp_path):
    """args.attention_window in config.json: window=0 sessions take it, an explicit window overrides it."""
    import json
    import shutil
    src = model_dir("spiral-filter")
    dst = tmp_path / "windowed"
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg["args"]["attention_window"] = 10
    (dst / "config.json").write_text(json.dumps(cfg))
    m = rfa.load_model(dst)
    assert m.info["attention_window"] == 10
    cfg["args"]["attention_window"] = 0
    (dst / "config.json").write_text(json.dumps(cfg))
    plain = rfa.load_model(dst)
    assert plain.info["attention_window"] == 0
    rng = np.random.default_rng(5)
    x = rng.normal(size=(40, 2)).astype(np.float32)
    t = np.cumsum(rng.uniform(0.2, 1.5, size=40))
    s = rfa.Session(m, max_context=8, device=ctx)   # shorter than the stream: the window rings it
    assert s.window == 10
    own = s.prefill(x, t)
    banded = rfa.Session(plain, max_context=8, window=10, device=ctx).prefill(x, t)
    np.testing.assert_allclose(own, banded, rtol=1e-6, atol=1e-6)
    wide = rfa.Session(m, window=30, device=ctx)
    assert wide.window == 30
    assert np.abs(wide.prefill(x, t) - own).max() > 1e-3
