"""Cross-check of the C++ runtime against this PyTorch module on many reference flag settings.

For each setting: build a small `signal` network with random raw parameters (so that every flag
changes the numbers), export it with export.py, run `rfa-run` on it (GPU, and the double-precision
CPU twin with --cpu-reference) with irregular timestamps, and compare with this module's float64
forward pass from the stored weights. Three implementations written separately from
docs/reference-code.md must agree.

usage: /usr/bin/python3 crosscheck_runtime.py BUILD_DIR [--only SUBSTRING]
       (prints one line per setting; exit 1 on a mismatch; --only runs the settings whose name contains
       SUBSTRING, case-insensitive; default all)
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export import export_model, load_stored_into, read_safetensors, save_npy  # noqa: E402
from rfa_torch import build, make_args  # noqa: E402

SETTINGS = {
    "M2": dict(model="M2"),
    "M1": dict(model="M1"),
    "M2.1 gaussian": dict(model="M2.1"),
    "M2.2 flat prior": dict(model="M2", zero_process_noise=True, zero_key_measurement_noise=True,
                            additive_bias_type=0, multiplicative_bias_type=0),
    "M2.3 no mult. gate": dict(model="M2", additive_bias_type=1, multiplicative_bias_type=0),
    "M2.4 no counter-rotation": dict(model="M2", rotate_values=False),
    "M2.5 no rotations": dict(model="M2", zero_rotations=True),
    "M2.6 pure rotation": dict(model="M2.6"),
    "M2.7 confidence gate": dict(model="M2", use_inner_residual=True, use_total_precision_gate=1),
    "bias 2 / precision 2": dict(model="M2", additive_bias_type=2, multiplicative_bias_type=2),
    "learn_decay (residual diffusion)": dict(model="M2", learn_decay=True),
    "ss process noise (hybrid)": dict(model="M2", use_ss_process_noise=True),
    "fixed shift (learn_t_shift off)": dict(model="M2", learn_t_shift=False),
    "no outer residual, no real norms": dict(model="M2", use_outer_residual=False, use_real_input_norm=False,
                                             use_real_output_norm=False),
    "rms norm": dict(model="M2", norm="rms_norm"),
    "lm (M2, tied head)": dict(model="M2", arch="lm"),
    "lm (M1, t_equal)": dict(model="M1", arch="lm", t_equal=True),
    "attention layer (M2)": dict(model="M2", arch="attention"),
    "ACC random steps (M2)": dict(model="M2", phase_source="accumulated_random", step_seed=5),
    "ACC rope steps, Q/K only (M2.6)": dict(model="M2.6", phase_source="accumulated_rope", stationary_values=False),
    "lm ACC random steps (M2.7)": dict(model="M2", arch="lm", phase_source="accumulated_random", step_seed=9,
                                       use_inner_residual=True, use_total_precision_gate=1),
    "lm ACC learned steps (M2)": dict(model="M2", arch="lm", phase_source="accumulated_learned"),
    # Adaptive Filter Attention (docs/variant-afa.md section 12): every layer AFA, RFA's block around it.
    "AFA channel_sum": dict(model="M2", attention_variant="afa"),
    "AFA one_channel (c=1)": dict(model="M2", attention_variant="afa", afa_precision="one_channel",
                                  afa_precision_channel=1),
    "AFA weighted": dict(model="M2", attention_variant="afa", afa_precision="weighted"),
    "AFA unitary": dict(model="M2", attention_variant="afa", afa_unitary=True),
    "AFA mix (pred_dt 0.5, eps 1e-3)": dict(model="M2", attention_variant="afa", afa_mix=True, afa_pred_dt=0.5,
                                            afa_eps=1e-3),
    "AFA attention layer": dict(model="M2", arch="attention", attention_variant="afa"),
    "lm AFA": dict(model="M2", arch="lm", attention_variant="afa"),
    # Full (anisotropic) AFA and tied iterations (docs/variant-afa-full.md): the same tensors.
    "AFA full": dict(model="M2", attention_variant="afa_full"),
    "AFA full unitary mix": dict(model="M2", attention_variant="afa_full", afa_unitary=True, afa_mix=True),
    "AFA full, 3 tied iterations, momentum 0.2": dict(model="M2", attention_variant="afa_full", afa_mix=True,
                                                     afa_irls_iterations=3, afa_irls_momentum=0.2),
    "AFA, 2 tied iterations": dict(model="M2", attention_variant="afa", afa_irls_iterations=2),
    "lm AFA full": dict(model="M2", arch="lm", attention_variant="afa_full"),
    # RT-RFA (docs/variant-rt.md section 13): every layer RT, in the RT block (no norm before the
    # attention, RMSNorm before the FFN).
    "RT stationary student-t": dict(model="M2", attention_variant="rt", norm="rms_norm", use_real_input_norm=False),
    "RT ou_rate gaussian": dict(model="M2", attention_variant="rt", rt_covariance="ou_rate", rt_kernel="gaussian",
                                norm="rms_norm", use_real_input_norm=False),
    "RT attention layer": dict(model="M2", arch="attention", attention_variant="rt", norm="rms_norm",
                               use_real_input_norm=False),
    "lm RT": dict(model="M2", arch="lm", attention_variant="rt", norm="rms_norm", use_real_input_norm=False),
    # Trained with a sliding window (args.attention_window): rfa-run runs it with that window by default.
    "attention window 7 (M2)": dict(model="M2", attention_window=7),
    "lm attention window 9 (M2.7)": dict(model="M2", arch="lm", attention_window=9, use_inner_residual=True,
                                         use_total_precision_gate=1),
    "AFA attention window 7": dict(model="M2", attention_variant="afa", attention_window=7),
    "AFA full, 2 tied iterations, attention window 7": dict(model="M2", attention_variant="afa_full", afa_mix=True,
                                                           afa_irls_iterations=2, attention_window=7),
    "RT attention window 7": dict(model="M2", attention_variant="rt", attention_window=7, norm="rms_norm",
                                  use_real_input_norm=False),
}


def randomize(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            # AFA's per-channel raw values ([H, W], [H, D]) are perturbed too; +-0.5 keeps them sane: decay
            # logits stay far below s, softplus noises, nu, weights and the bias stay positive and O(1) or
            # smaller, alpha stays O(1), mix gates stay inside (0.2, 0.8) or so.
            # ACC's learned step table acc_phi [vocab, D] too (it starts as RoPE's omega in every row).
            if (p.dim() >= 2 and not name.endswith(("P_prior_log", "P_scale_log", "t_shift_param", "acc_phi"))
                    and not name.split(".")[-1].startswith("afa_")):
                continue  # keep the module's weight initialisation
            p.add_(0.5 * torch.randn(p.shape, generator=gen, dtype=p.dtype))


def main():
    ap = argparse.ArgumentParser(description="cross-check the C++ runtime against rfa_torch")
    ap.add_argument("build_dir", nargs="?", default="build")
    ap.add_argument("--only", default=None, help="run only the settings whose name contains this (case-insensitive)")
    cli = ap.parse_args()
    rfa_run = os.path.join(cli.build_dir, "rfa-run")
    torch.set_num_threads(1)
    selected = {k: v for k, v in SETTINGS.items() if cli.only is None or cli.only.lower() in k.lower()}
    if not selected:
        print("no setting matches --only %r" % cli.only)
        return 1
    failures = 0
    bad_settings = 0
    for label, s in selected.items():
        s = dict(s)
        model_name = s.pop("model")
        arch = s.pop("arch", "signal")
        s.setdefault("t_equal", False)
        args = make_args(model_name, n_heads=3, d_e=24, d_k_total=24, d_v_total=24, num_blocks=2, hidden_dim=40,
                         d_in=3, seq_len=32, vocab_size=256 if arch == "lm" else None,
                         tokenizer="bytes" if arch == "lm" else None, **s)
        args.architecture = arch
        torch.manual_seed(7)
        gen = torch.Generator().manual_seed(11)
        model = build(args)
        randomize(model, gen)
        with tempfile.TemporaryDirectory() as tmp:
            mdir = os.path.join(tmp, "model")
            export_model(model, args, arch, mdir)
            stored = read_safetensors(os.path.join(mdir, "model.safetensors"))
            m64, _ = load_stored_into(build(args), stored, torch.float64)
            m64.eval()
            rng = np.random.default_rng(3)
            B, N = 2, 29
            t = np.cumsum(rng.uniform(0.2, 2.0, (B, N)), axis=1).astype(np.float32)
            t_in = None if args.t_equal else torch.from_numpy(t.astype(np.float64))
            save_npy(os.path.join(tmp, "t.npy"), t)
            if arch == "lm":
                x = rng.integers(0, 256, (B, N)).astype(np.int64)
                input_flag = "--tokens"
                with torch.no_grad():
                    want = m64(torch.from_numpy(x), t_measure=t_in).numpy()
            else:
                x = rng.standard_normal((B, N, 3 if arch == "signal" else 24)).astype(np.float32)
                input_flag = "--signal"
                with torch.no_grad():
                    xin = torch.from_numpy(x.astype(np.float64))
                    want = (m64(xin, t_measure=t_in) if arch == "signal" else m64(xin, t_measure=t_in)[0]).numpy()
            save_npy(os.path.join(tmp, "x.npy"), x)
            line = "%-34s" % label
            before = failures
            for mode in ("gpu", "cpu"):
                out = os.path.join(tmp, "out-" + mode)
                cmd = [rfa_run, "--model", mdir, input_flag, os.path.join(tmp, "x.npy"), "--timestamps",
                       os.path.join(tmp, "t.npy"), "--dump", out] + (["--cpu-reference"] if mode == "cpu" else [])
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    line += "  %s: rfa-run exit %d: %s" % (mode, r.returncode, r.stderr.strip()[:200])
                    failures += 1
                    continue
                got = np.load(os.path.join(out, "output.npy"))
                err = float(np.max(np.abs(got - want)))
                scale = float(np.max(np.abs(want)))
                tol = (2e-4 if mode == "gpu" else 2e-5) * max(1.0, scale)
                ok = err <= tol
                failures += 0 if ok else 1
                line += "  %s max|err| %.2e%s" % (mode, err, "" if ok else " MISMATCH")
            print(line, flush=True)
            bad_settings += failures > before
    print("%d passed, %d failed" % (len(selected) - bad_settings, bad_settings))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
