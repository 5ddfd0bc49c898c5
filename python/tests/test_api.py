"""The Python API against the runtime's own numbers: model description, probes, errors."""
import json
import math
import os

import numpy as np
import pytest

import rfa
from conftest import golden, model_dir, rfa_run


def test_devices_lists_at_least_one_device_with_a_known_type():
    devs = rfa.devices()
    assert devs, "no Vulkan device"
    for i, (index, name, kind) in enumerate(devs):
        assert index == i and name and kind in ("discrete", "integrated", "virtual", "cpu", "other")


def test_info_and_heads_match_rfa_run_summary(spiral):
    r = rfa_run("--model", model_dir("spiral-filter"), "--summary", "--json")
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)
    i = spiral.info
    assert (i["architecture"], i["layers"], i["heads"], i["head_dim"], i["d_e"]) == (
        want["architecture"], want["layers"], want["heads"], want["head_dim"], want["d_e"])
    assert (i["input_dim"], i["output_dim"], i["vocab"]) == (2, 2, 0)
    heads = spiral.heads()
    assert len(heads) == len(want["heads_detail"]) == i["layers"] * i["heads"]
    for h, w in zip(heads, want["heads_detail"]):
        assert (h["layer"], h["head"], h["regime"]) == (w["layer"], w["head"], w["regime"])
        for k in ("mu", "omega_min", "omega_max", "sigma2", "eta2", "gamma2", "nu", "kappa", "tau", "lag_shift",
                  "alpha", "beta"):
            if w[k] is None:  # JSON null: not finite (Brownian heads)
                assert not math.isfinite(h[k]), k
            else:
                assert h[k] == pytest.approx(w[k], rel=1e-7, abs=1e-12), k


def test_lm_info_and_tokenizer_round_trip(char_lm):
    assert char_lm.info["architecture"] == "lm" and char_lm.info["tokenizer"] == "bytes"
    assert char_lm.info["input_dim"] == 0 and char_lm.info["output_dim"] == char_lm.info["vocab"] == 256
    ids = char_lm.encode("Hé!")
    assert ids.dtype == np.int64 and list(ids) == list("Hé!".encode("utf-8"))
    assert char_lm.decode(ids) == "Hé!"
    assert char_lm.decode_bytes(ids[:2]) == b"H\xc3"


def test_prefill_matches_the_golden_of_the_pytorch_module(spiral, ctx):
    x, want = golden("spiral-filter", "irregular_input"), golden("spiral-filter", "irregular_output")
    t = golden("spiral-filter", "irregular_timestamps")
    s = rfa.Session(spiral, max_context=64, device=ctx)
    y = s.prefill(x, timestamps=t)
    assert y.dtype == np.float32 and y.shape == (1, 64, 2)
    assert np.abs(y - want).max() < 1e-4
    assert s.position == 64
    assert np.array_equal(s.timestamps(), t[0].astype(np.float64))


def test_reference_twin_matches_the_golden(char_lm):
    x, want = golden("tiny-char-lm", "input"), golden("tiny-char-lm", "output")
    r = char_lm.reference(x)
    assert r.dtype == np.float64 and r.shape == want.shape
    assert np.abs(r - want).max() < 1e-4


def test_the_twin_comes_from_librfa_reference_next_to_librfa_and_its_absence_is_a_clear_error():
    """librfa carries no twin: Model.reference loads librfa_reference (found next to librfa), and
    without it raises rfa.Error naming the library, while everything else keeps working."""
    import subprocess
    import sys
    from rfa import _lib
    assert not hasattr(_lib.lib(), "rfa_model_reference_forward")  # librfa carries no twin
    assert os.path.basename(_lib.reference_candidates()[0]) == _lib.library_name("rfa_reference")
    code = ("import rfa, numpy as np\n"
            "m = rfa.load_model(%r)\n"
            "print(m.info['architecture'])\n"
            "try:\n"
            "    m.reference(np.zeros(4, dtype=np.int64))\n"
            "except rfa.Error as e:\n"
            "    print('ERROR', e.code == rfa.UNSUPPORTED, e.message)\n" % model_dir("tiny-char-lm"))
    env = dict(os.environ, RFA_REFERENCE_LIBRARY=os.path.join(os.path.dirname(_lib.library_path()), "nowhere.so"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "lm"
    assert lines[1].startswith("ERROR True ") and _lib.library_name("rfa_reference") in lines[1], lines[1]
    assert "nowhere.so" in r.stdout


def test_attention_rows_sum_to_one_and_decay_shrinks_them(spiral, ctx):
    s = rfa.Session(spiral, max_context=64, device=ctx)
    s.prefill(golden("spiral-filter", "regular_input"))
    a = s.attention(0, 3)
    assert a.shape == (64, 64) and a.dtype == np.float32
    assert np.allclose(a.sum(axis=1), 1.0, atol=1e-4)
    assert np.all(np.triu(a, 1) == 0)  # causal: no weight on future keys
    ad = s.attention(0, 3, decayed=True)
    assert np.all(ad <= a + 1e-7) and ad.sum() < a.sum()
    part = s.attention(0, 3, rows=(40, 44), cols=(10, 30))
    assert np.array_equal(part, a[40:44, 10:30])


def test_row_diagnostics_pair_and_curves_agree_with_the_attention_map(spiral, ctx):
    s = rfa.Session(spiral, max_context=64, device=ctx)
    s.prefill(golden("spiral-filter", "regular_input"))
    a = s.attention(1, 2).astype(np.float64)
    ad = s.attention(1, 2, decayed=True).astype(np.float64)
    d = s.row_diagnostics(1, 2, rows=(50, 53), thresholds=(1, 4, 16, 64))
    for k, i in enumerate(range(50, 53)):
        # The keys the row sees: its last s.window (spiral-filter was trained with a window), else all.
        j0 = max(0, i - s.window + 1) if s.window else 0
        assert not a[i, :j0].any()
        row = a[i, j0:i + 1]
        assert d["entropy"][k] == pytest.approx(-(row * np.log(row)).sum(), rel=1e-3)
        assert d["max_weight"][k] == pytest.approx(row.max(), rel=1e-4)
        lags = i - np.arange(i + 1)  # t = position here
        assert d["mass_beyond"][k][1] == pytest.approx(ad[i, :i + 1][lags > 4].sum(), rel=1e-3)
    p = s.pair(1, 2, 50, 20)
    assert not p["masked"] and p["lag"] == 30
    assert p["ahat"] == pytest.approx(a[50, 20], rel=1e-4) and p["a"] == pytest.approx(ad[50, 20], rel=1e-4)
    assert s.pair(1, 2, 20, 50)["masked"]
    c = s.curves(1, 2, [0.0, 3.0, 30.0])
    head = [h for h in spiral.heads() if (h["layer"], h["head"]) == (1, 2)][0]
    assert c["decay"] == pytest.approx(np.exp(-head["mu"] * (np.array([0, 3, 30]) + head["lag_shift"])), rel=1e-6)
    assert c["decay"][2] == pytest.approx(p["decay"], rel=1e-6)
    assert c["vcov"][2] == pytest.approx(p["vcov"], rel=1e-6)


def test_reset_starts_over_with_the_same_numbers(spiral, ctx):
    s = rfa.Session(spiral, max_context=64, device=ctx)
    x = golden("spiral-filter", "regular_input")
    y1 = s.prefill(x)
    s.reset()
    assert s.position == 0
    assert np.array_equal(s.prefill(x), y1)


def test_bad_input_raises_rfa_error_with_the_runtimes_message(spiral, char_lm, ctx):
    with pytest.raises(rfa.Error) as e:
        rfa.load_model(model_dir("no-such-model"))
    assert e.value.code in (rfa.IO_ERROR, rfa.MODEL_ERROR) and "no-such-model" in e.value.message
    assert e.value.args == (e.value.code, e.value.message)

    lm = rfa.Session(char_lm, max_context=8, device=ctx)
    with pytest.raises(rfa.Error) as e:
        lm.prefill(np.array([72, 105, 999]))
    assert e.value.code == rfa.INPUT_ERROR and e.value.code_name == "input_error"
    assert "token id 999 at index 2 is outside the vocabulary [0, 256)" in str(e.value)
    with pytest.raises(rfa.Error) as e:
        lm.prefill(np.arange(9))
    assert e.value.code == rfa.INPUT_ERROR and "sequence too long" in e.value.message
    with pytest.raises(rfa.Error) as e:
        lm.prefill(np.array([1.5, 2.0]))
    assert e.value.code == rfa.INVALID_ARGUMENT and "integer token ids" in e.value.message

    s = rfa.Session(spiral, max_context=8, device=ctx)
    with pytest.raises(rfa.Error) as e:
        s.prefill(np.zeros((4, 3), np.float32))
    assert e.value.code == rfa.INVALID_ARGUMENT and "last dimension is 3, the model expects 2" in e.value.message
    with pytest.raises(rfa.Error) as e:
        s.prefill(np.zeros((3, 2), np.float32), timestamps=[0.0, 2.0, 1.0])
    assert e.value.code == rfa.INPUT_ERROR and "timestamps decrease at row 0, position 2" in e.value.message
    with pytest.raises(rfa.Error) as e:
        s.prefill(np.array([[0.0, np.nan]], np.float32))
    assert e.value.code == rfa.INPUT_ERROR and "not finite" in e.value.message
    assert s.position == 0  # nothing of a rejected call went in
    with pytest.raises(rfa.Error) as e:
        s.attention(0, 9)
    assert e.value.code == rfa.INVALID_ARGUMENT
    with pytest.raises(rfa.Error) as e:
        rfa.Session(spiral, batch=0, device=ctx)
    assert "batch must be >= 1" in e.value.message


def test_closing_a_context_closes_its_sessions_first(spiral):
    c = rfa.Context()
    s = rfa.Session(spiral, max_context=4, device=c)
    s.step(np.zeros(2, np.float32))
    assert s.position == 1 and c.validation_messages == 0
    c.close()  # destroys the session before the device, as Vulkan requires
    with pytest.raises(rfa.Error) as e:
        s.position
    assert e.value.code == rfa.INVALID_ARGUMENT and "closed" in e.value.message
    assert "closed" in repr(s)
    s.close()  # harmless


def test_the_package_reads_the_rfa_variables_itself_and_the_library_none(monkeypatch):
    """librfa reads no environment: rfa.Context maps RFA_DEVICE, RFA_VALIDATION and the kernel variables
    onto rfa_context_create_ex's options, the way rfa/environment.hpp does for the programs."""
    from rfa import _lib
    o = _lib.ContextOptions()
    _lib.lib().rfa_context_options_default(o)
    assert (o.device, o.validation, o.device_profile, o.linear_kernel, o.push_descriptors) == (None, -1, None, None, 1)
    env = {"RFA_DEVICE": "llvmpipe", "RFA_VALIDATION": "1", "RFA_DEVICE_PROFILE": "intel-uhd-620",
           "RFA_LINEAR_KERNEL": "gemv", "RFA_ATTN_SPLIT_K": "4", "RFA_ATTN_TILE": "0", "RFA_ATTN_COOPMAT": "2",
           "RFA_NO_PUSH_DESCRIPTORS": "1"}
    _lib.context_options_from_environment(o, env)
    assert (o.device, o.validation, o.device_profile, o.linear_kernel) == (b"llvmpipe", 1, b"intel-uhd-620", b"gemv")
    assert (o.attention_split_k, o.attention_tile, o.attention_coopmat, o.push_descriptors) == (4, 0, 2, 0)
    assert o.attention_direct_kv == -1
    assert (o.capture_pipeline_statistics, o.max_storage_buffer_range, o.max_storage_buffers_per_stage) == (0, 0, 0)
    # An explicit device wins over RFA_DEVICE; a device the environment names that does not exist is
    # refused with the runtime's message (the variable reached the library through the options).
    monkeypatch.setenv("RFA_DEVICE", "no-such-gpu-anywhere")
    with pytest.raises(rfa.Error) as e:
        rfa.Context()
    assert "no-such-gpu-anywhere" in e.value.message
    c = rfa.Context(device=0, validation=False)
    assert "storage buffers: " in c.capabilities and "attention, prefill 4096: " in c.capabilities
    c.close()
