"""A newcomer's first hour with the package: the default model runs with its trained window, so
probes default to what is still cached; window=-1 turns the window off; every bad argument is an
rfa.Error; head_diagnostics and stats are bound; the library is found from a recorded prefix."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import rfa
from conftest import model_dir, rfa_run

N = 120  # past the default model's window of 50 (its ring holds 99 positions)


def signal(n=N, batch=1):
    i = np.arange(batch * n * 2, dtype=np.float64)
    return (2.0 * np.sin(0.37 * i + 0.2 * (i % 5))).astype(np.float32).reshape(batch, n, 2)


@pytest.fixture()
def windowed(spiral, ctx):
    s = rfa.Session(spiral, max_context=4096, device=ctx)
    s.prefill(signal())
    return s


def test_probes_default_to_what_is_still_cached(windowed):
    s = windowed
    assert (s.window, s.max_context, s.position) == (50, 99, N)
    assert (s.oldest_position, s.first_full_row) == (21, 70)
    a = s.attention(0, 1)
    assert a.shape == (99, 99)
    assert np.array_equal(a, s.attention(0, 1, rows=(21, N), cols=(21, N)))
    full = a[70 - 21:]  # rows whose whole band [i - 49, i] is cached: each sums to 1
    assert np.allclose(full.sum(axis=1), 1.0, atol=1e-4)
    d = s.row_diagnostics(0, 1)
    assert d["entropy"].shape == (N - 70,)
    row = a[N - 1 - 21, N - 50 - 21:].astype(np.float64)
    assert d["entropy"][-1] == pytest.approx(-(row * np.log(row)).sum(), rel=1e-3)
    with pytest.raises(rfa.Error) as e:
        s.row_diagnostics(0, 1, rows=(21, 30))  # their first keys left the ring
    assert e.value.code == rfa.INVALID_ARGUMENT


def test_attention_equals_rfa_run_dump_past_the_window(windowed, tmp_path):
    np.save(tmp_path / "x.npy", signal())
    r = rfa_run("--model", model_dir("spiral-filter"), "--signal", str(tmp_path / "x.npy"), "--dump",
                str(tmp_path / "out"), "--dump-attention", "1:2")
    assert r.returncode == 0, r.stderr
    for name, decayed in (("attn_L1_H2.npy", False), ("attn_decayed_L1_H2.npy", True)):
        full = np.load(tmp_path / "out" / name)
        assert full.shape == (1, N, N)
        assert np.allclose(full[0, 21:, 21:], windowed.attention(1, 2, decayed=decayed), atol=1e-6, rtol=1e-5)


def test_window_minus_one_turns_the_trained_window_off(spiral, ctx, windowed):
    s = rfa.Session(spiral, max_context=128, window=-1, device=ctx)
    assert (s.window, s.max_context) == (0, 128)
    y = s.prefill(signal())
    a = s.attention(0, 1, rows=(N - 1, N))
    assert a[0, :N - 50].sum() > 1e-3  # the last row sees keys beyond the trained window
    windowed_y = windowed.outputs()
    assert np.allclose(y[:, :50], windowed_y[:, :50], atol=1e-5)  # the first 50 positions see the same keys
    assert np.abs(y - windowed_y).max() > 1e-3
    with pytest.raises(rfa.Error) as e:
        rfa.Session(spiral, window=-2, device=ctx)
    assert e.value.code == rfa.INVALID_ARGUMENT and "window" in e.value.message


def test_head_diagnostics_over_what_the_window_sees_equal_rfa_run(windowed, tmp_path):
    np.save(tmp_path / "x.npy", signal())
    r = rfa_run("--model", model_dir("spiral-filter"), "--signal", str(tmp_path / "x.npy"), "--dump-diagnostics",
                str(tmp_path / "d"), "--diagnostics-alphas", "1,2")
    assert r.returncode == 0, r.stderr
    want = json.load(open(tmp_path / "d" / "diagnostics_L0_H2.json"))["batch_rows"][0]
    d = windowed.head_diagnostics(0, 2, sweep=[2.0])
    assert d["rows"] == (70, N) and d["cols"] == (21, N)
    assert tuple(want["rows_window"]) == d["rows"] and tuple(want["cols_window"]) == d["cols"]
    assert d["entropy_mean"] == pytest.approx(want["entropy_mean"], rel=1e-6)
    assert np.allclose(d["singular_values"], want["singular_values"], rtol=1e-6, atol=1e-9)
    assert np.allclose(d["per_row"]["entropy"], want["rows"]["entropy"], rtol=1e-6)
    assert d["per_row"]["position"].tolist() == list(range(70, N))
    assert len(d["sweep"]) == 1 and d["sweep"][0]["erank"] == pytest.approx(want["sweep"][0]["erank"], rel=1e-6)
    assert d["tilts"] is None and d["moments"]["queries"] == 50
    t = windowed.head_diagnostics(1, 0, rows=(100, N), spectrum=False, keep_tilts=True)
    assert t["tilts"].shape == (20, t["d"]) and t["cols"] == (51, N) and t["singular_values"].size == 0


def test_stats_count_the_work(windowed):
    st = windowed.stats()
    assert set(st) == {"submits", "bytes_up", "bytes_down", "plans_recorded"}
    before = st["submits"]
    windowed.attention(0, 0)
    assert windowed.stats()["submits"] == before + 1


def test_every_bad_argument_is_an_rfa_error(spiral, char_lm, ctx, windowed):
    lm = rfa.Session(char_lm, max_context=64, device=ctx)
    lm.prefill(char_lm.encode("Hi"))
    s = windowed
    bad = [
        lambda: lm.generate(-1),
        lambda: lm.generate(0),
        lambda: lm.generate(2, top_p=-1),
        lambda: lm.generate(2, top_p=1.5),
        lambda: lm.generate(2, temperature=float("nan")),
        lambda: lm.generate(2, temperature=-0.5),
        lambda: lm.generate(2, top_k=-2),
        lambda: lm.generate(2, seed=-1),
        lambda: lm.generate("3"),
        lambda: rfa.Session(spiral, batch="2", device=ctx),
        lambda: rfa.Session(spiral, window=1.5, device=ctx),
        lambda: rfa.Session(spiral, no_such_option=1, device=ctx),
        lambda: rfa.Session("models/spiral-filter", device=ctx),
        lambda: rfa.Session(spiral, device=[0]),
        lambda: s.attention(0, "a"),
        lambda: s.attention(0, 1, rows=(30,)),
        lambda: s.attention(0, 1, rows=(30, 2 ** 40)),
        lambda: s.row_diagnostics(0, 1, thresholds=(1, 2)),
        lambda: s.curves(0, 0, ["a"]),
        lambda: s.curves(0, 0, [float("inf")]),
        lambda: s.pair(0, 0, 1.5, 0),
        lambda: s.timestamps(batch=None),
        lambda: s.step(np.zeros((1, 2, 2), np.float32)),
        lambda: s.step(np.zeros(2, np.float32), timestamps=[1.0, 2.0]),
        lambda: s.prefill([[1.0, 2.0], [3.0]]),
        lambda: s.head_diagnostics(0, 0, alpha=0),
        lambda: s.head_diagnostics(0, 0, sweep=[1.0] * 65),
        lambda: rfa.load_model(123),
        lambda: char_lm.encode(5),
        lambda: char_lm.decode([1.5]),
        lambda: rfa.Context(device=1.5),
    ]
    for k, f in enumerate(bad):
        with pytest.raises(rfa.Error) as e:
            f()
        assert e.value.code == rfa.INVALID_ARGUMENT, (k, e.value)
    # A uint64 token id past 2^63 is named as it is, not wrapped to a negative number.
    with pytest.raises(rfa.Error) as e:
        lm.prefill(np.array([2 ** 63], dtype=np.uint64))
    assert "9223372036854775808" in e.value.message and "-9223372036854775808" not in e.value.message
    assert lm.position == 2  # nothing of the refused calls went in


def test_the_library_is_found_from_the_recorded_install_prefix(tmp_path):
    """What `cmake --install` + `pip install` gives: the package somewhere else, an _install.py
    naming the prefix, no RFA_* variable, started from an unrelated directory."""
    prefix = tmp_path / "prefix"
    (prefix / "lib").mkdir(parents=True)
    shutil.copy(rfa.library_path(), prefix / "lib" / "librfa.so")
    site = tmp_path / "site"
    shutil.copytree(os.path.dirname(rfa.__file__), site / "rfa", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "rfa" / "_install.py").write_text('PREFIX = "%s"\nLIBDIR = "%s"\nBINDIR = "%s"\n' % (
        prefix, prefix / "lib", prefix / "bin"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RFA_") and k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = "import rfa; print(rfa.library_path()); print(rfa.version())"
    r = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == str(prefix / "lib" / "librfa.so")
    # Without the record, and nowhere else to look, the error lists where it looked.
    os.remove(site / "rfa" / "_install.py")
    code = "import rfa, sys; rfa._lib.candidates = lambda: [sys.argv[1]]; rfa.devices()"
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "none" / "librfa.so")], cwd=elsewhere, env=env,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "librfa.so not found" in r.stderr and "RFA_PREFIX" in r.stderr
