"""spiral-filter: RFA next-state predictor on the noisy damped spiral, vs Kalman / RoPE baselines.

One command reproduces models/spiral-filter from scratch (fixed seeds; the default kind, rfa_w50:
RFA trained and run with an attention window of 50, 3000 steps):
    cd models/train && nice -n 10 /usr/bin/python3 spiral.py
and one of the other KINDS alone, same data and seed, into its own folder (default ../spiral-<kind>):
    cd models/train && nice -n 10 /usr/bin/python3 spiral.py --kind afa --out ../spiral-afa
    cd models/train && nice -n 10 /usr/bin/python3 spiral.py --kind rt --out ../spiral-rt
    cd models/train && nice -n 10 /usr/bin/python3 spiral.py --kind rfa   # RFA and the RoPE baseline, no window

System (continuous time, SDE dx = A x dt + sigma_p dW, A = [[0.9,-2],[1,-1.1]], eigenvalues -0.1 +- i):
simulated EXACTLY as the discrete-time Euler-Maruyama recursion with step h = 0.01,
    x_{n+1} = M x_n + w_n,   M = I + h A,   w_n ~ N(0, sigma_p^2 h I).
Measurements every 10 Euler steps (dt = 0.1) in the regular case, y_k = x(t_k) + sigma_m N(0, I).
Irregular case: gaps of g ~ U{2..20} Euler steps (0.2 dt .. 2 dt).
Timestamps given to the model are in units of dt (t = Euler step index / 10), so regular sampling is t = 0,1,2,...
Target at position k: the true state one nominal dt ahead, x(t_k + 1) (= x_{k+1} for regular sampling).
The Kalman filter uses the exact discrete model of that simulation: F_g = M^g and
Q_g = sum_{i<g} M^i (sigma_p^2 h I) M^i^T for a gap of g Euler steps, prior x0 ~ N(0, 100 I).
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rfa_torch import make_args, NextStepPredictor  # noqa: E402
from export import export_model, load_stored_into, save_npy  # noqa: E402
from common import (seed_all, lr_at, head_table, head_table_md, afa_head_table, afa_head_table_md, afa_eigenvalues,  # noqa: E402
                    rt_head_table, rt_head_table_md, portable_cli, Timer)

A_SYS = np.array([[0.9, -2.0], [1.0, -1.1]])
H_EULER = 0.01
PER_DT = 10          # Euler steps per nominal sample interval


class Spiral:
    def __init__(self, sigma_p=0.1, sigma_m=1.0, x0_scale=10.0, gap_lo=2, gap_hi=20):
        self.sp, self.sm, self.x0s = sigma_p, sigma_m, x0_scale
        self.glo, self.ghi = gap_lo, gap_hi
        self.M = np.eye(2) + H_EULER * A_SYS
        gmax = max(gap_hi, PER_DT) + 1
        self.F = np.zeros((gmax + 1, 2, 2))
        self.Q = np.zeros((gmax + 1, 2, 2))
        self.F[0] = np.eye(2)
        q = sigma_p ** 2 * H_EULER * np.eye(2)
        for n in range(1, gmax + 1):
            self.F[n] = self.M @ self.F[n - 1]
            self.Q[n] = self.M @ self.Q[n - 1] @ self.M.T + q

    def sample(self, B, N, irregular, rng):
        """Returns y [B,N,2], t [B,N] (units of dt), target [B,N,2], gaps [B,N] (Euler steps before k)."""
        if irregular:
            gaps = rng.integers(self.glo, self.ghi + 1, size=(B, N))
        else:
            gaps = np.full((B, N), PER_DT)
        gaps[:, 0] = 0
        idx = np.cumsum(gaps, axis=1)                         # Euler index of each sample
        T = int(idx[:, -1].max()) + PER_DT
        x = self.x0s * rng.standard_normal((B, 2))
        noise = self.sp * np.sqrt(H_EULER) * rng.standard_normal((T, B, 2))
        path = np.empty((T + 1, B, 2))
        path[0] = x
        Mt = self.M.T
        for n in range(T):
            x = x @ Mt + noise[n]
            path[n + 1] = x
        bi = np.arange(B)[:, None]
        xs = path[idx, bi]                                    # [B,N,2]
        target = path[idx + PER_DT, bi]
        y = xs + self.sm * rng.standard_normal(xs.shape)
        return y, idx / PER_DT, target, gaps

    def kalman_predict(self, y, gaps):
        """Exact KF for the simulated model; returns predictions of x(t_k + dt) [B,N,2]."""
        B, N, _ = y.shape
        m = np.zeros((B, 2))
        P = np.tile(self.x0s ** 2 * np.eye(2), (B, 1, 1))
        R = self.sm ** 2 * np.eye(2)
        out = np.empty_like(y)
        F10 = self.F[PER_DT]
        for k in range(N):
            if k > 0:
                Fk, Qk = self.F[gaps[:, k]], self.Q[gaps[:, k]]
                m = np.einsum("bij,bj->bi", Fk, m)
                P = Fk @ P @ Fk.transpose(0, 2, 1) + Qk
            S = P + R
            K = P @ np.linalg.inv(S)
            m = m + np.einsum("bij,bj->bi", K, y[:, k] - m)
            P = (np.eye(2) - K) @ P
            out[:, k] = m @ F10.T
        return out


# The mechanisms trained here: paper model and extra flags. spiral_rank.py trains all of them.
KINDS = {
    "rfa": dict(model="M2"),
    "rope": dict(model="M2.6"),
    # Accumulated rotations (docs/variant-acc.md): random steps U(0, 2 omega), values rotated and
    # rotated back (the paper's best "random accumulated Q/K/V"), without and with RFA's decay.
    "acc": dict(model="M2.6", phase_source="accumulated_random"),
    "rfa_acc": dict(model="M2", phase_source="accumulated_random"),
    # Adaptive Filter Attention (docs/variant-afa.md, afa_torch.py): per-channel decays and noises,
    # one scalar weight per pair, prediction over afa_pred_dt = 1 (one nominal dt, the target's
    # horizon); the M2 namespace supplies RFA's frequencies, block and decay scale. The unitary
    # switch (section 6): no decay, Q and K on the unit circle per channel.
    "afa": dict(model="M2", attention_variant="afa"),
    "afa_unitary": dict(model="M2", attention_variant="afa", afa_unitary=True),
    # RT-RFA (docs/variant-rt.md, rt_torch.py): directions on the sphere, the value's magnitude as the
    # confidence, stationary covariance and Student-t kernel; the RT block of section 13 (no norm
    # before the attention, RMSNorm before the FFN); the M2 namespace supplies RFA's frequencies and
    # the decay scale.
    "rt": dict(model="M2", attention_variant="rt", norm="rms_norm", use_real_input_norm=False),
    # RFA trained and run with a sliding window of 50 measurements (args.attention_window; docs/math.md
    # section 8): each prediction sees the last 50 only, so a stream longer than the training
    # sequences shows the model nothing it was not trained on (the unwindowed models' softmax runs
    # over ever more keys, which is what fails at 4x the training length).
    # 3000 training steps instead of the recipe's 1000 (the loss still falls at 1000).
    "rfa_w50": dict(model="M2", attention_window=50, steps=3000),
    # The same window and steps on the RoPE baseline: what the window does without RFA's decay and
    # precision.
    "rope_w50": dict(model="M2.6", attention_window=50, steps=3000),
    # The AFA forms and RT-RFA under the same recipe (window 50, 3000 steps), so every row of the
    # ranking compares with rfa_w50: memory-optimised AFA, full (anisotropic) AFA
    # (docs/variant-afa-full.md), and full AFA iterated n = 1..4 times with tied weights (IRLS, with
    # the mix gate: z_{k+1} = mix(z_k, AFA(z_k, z_k, z_k))).
    "afa_w50": dict(model="M2", attention_variant="afa", attention_window=50, steps=3000),
    "afa_full_w50": dict(model="M2", attention_variant="afa_full", attention_window=50, steps=3000),
    "rt_w50": dict(model="M2", attention_variant="rt", norm="rms_norm", use_real_input_norm=False,
                   attention_window=50, steps=3000),
}
for _n in (1, 2, 3, 4):
    KINDS["afa_irls%d_w50" % _n] = dict(model="M2", attention_variant="afa_full", afa_mix=True,
                                        afa_irls_iterations=_n, attention_window=50, steps=3000)
DEFAULT_STEPS = 1000  # the recipe's, for kinds that name none
# How metrics.json names each kind's results (spiral_rank.py --merge reads them back).
RESULT_LABELS = {"rfa": "RFA (M2 / SC-RFA)", "rope": "RoPE baseline (M2.6 pure rotation)",
                 "afa": "AFA (adaptive filter attention)", "rt": "RT-RFA", "rfa_w50": "RFA (M2), attention window 50",
                 "rope_w50": "RoPE (M2.6), attention window 50", "afa_w50": "AFA, attention window 50",
                 "afa_full_w50": "full AFA, attention window 50", "rt_w50": "RT-RFA, attention window 50"}
RESULT_LABELS.update({"afa_irls%d_w50" % n: "full AFA, IRLS n = %d, attention window 50" % n for n in (1, 2, 3, 4)})


def model_args(kind, a):
    common = dict(n_heads=a.heads, d_e=a.d_e, d_k_total=a.d_k, d_v_total=a.d_k, num_blocks=a.layers,
                  hidden_dim=4 * a.d_e, d_in=2, seq_len=a.n_train, vocab_size=None, batch_size=a.batch,
                  t_equal=False, norm="layer_norm", norm_eps=1e-5, tokenizer=None)
    over = dict(KINDS[kind])
    over.pop("steps", None)
    args = make_args(over.pop("model"), **dict(common, **over))   # a kind's keys override the recipe's (norm)
    args.architecture = "signal"
    return args


def make_batch(sp, B, N, rng, irr_frac=0.5):
    irr = rng.random() < irr_frac
    y, t, tgt, _ = sp.sample(B, N, irr, rng)
    f = lambda z: torch.from_numpy(z).float()
    return f(y), f(t), f(tgt)


def train_steps(kind, a):
    """--steps when given, else the kind's own count, else the recipe's 1000."""
    return a.steps if a.steps else KINDS[kind].get("steps", DEFAULT_STEPS)


def train(kind, a, sp, log):
    steps = train_steps(kind, a)
    seed_all(a.seed)
    args = model_args(kind, a)
    model = NextStepPredictor(args)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    rng = np.random.default_rng(a.seed + 1)
    tm = Timer()
    run = 0.0
    random_steps = getattr(args, "phase_source", "omega_t") == "accumulated_random"
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, a.lr)
        if random_steps:  # fresh random steps every training step (as the paper); seed 0 when exported
            args.step_seed = step + 1
        y, t, tgt = make_batch(sp, a.batch, a.n_train, rng)
        pred = model(y, t_measure=t)
        loss = F.mse_loss(pred, tgt)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        run = 0.98 * run + 0.02 * loss.item() if step else loss.item()
        if step % 100 == 0 or step == steps - 1:
            log("[%s] step %5d  loss %.4f  (ema %.4f)  %.0fs" % (kind, step, loss.item(), run, tm()))
    args.step_seed = 0
    return model, args, tm()


def eval_sets(sp, a):
    rng = np.random.default_rng(12345)        # held-out: a seed never used in training
    sets = {}
    for N in (a.n_train, 4 * a.n_train):
        for irr in (False, True):
            sets[(N, irr)] = sp.sample(a.n_eval, N, irr, rng)
    return sets


@torch.no_grad()
def model_mse(model, y, t, tgt, bs):
    model.eval()
    errs = []
    for i in range(0, y.shape[0], bs):
        f = lambda z: torch.from_numpy(z[i:i + bs]).float()
        p = model(f(y), t_measure=f(t)).double().numpy()
        errs.append((p - tgt[i:i + bs]) ** 2)
    model.train()
    return float(np.concatenate(errs).mean())


def write_goldens(model, args, stored, out_dir, sp, command="cd models/train && nice -n 10 /usr/bin/python3 spiral.py"):
    gdir = os.path.join(out_dir, "golden")
    os.makedirs(gdir, exist_ok=True)
    m64 = NextStepPredictor(args)          # the attention args.attention_variant asks for (rfa / afa / rt)
    m64, missing = load_stored_into(m64, stored, torch.float64)
    assert not missing, missing
    m64.eval()
    rng = np.random.default_rng(777)
    files = []
    for name, irr in (("regular", False), ("irregular", True)):
        y, t, _, _ = sp.sample(1, 64, irr, rng)
        y32 = y.astype(np.float32)
        t32 = t.astype(np.float32)
        with torch.no_grad():
            if irr:
                out = m64(torch.from_numpy(y32).double(), t_measure=torch.from_numpy(t32).double())
            else:
                out = m64(torch.from_numpy(y32).double())          # default t = 0..N-1
        save_npy(os.path.join(gdir, "%s_input.npy" % name), y32)
        if irr:
            save_npy(os.path.join(gdir, "%s_timestamps.npy" % name), t32)
        save_npy(os.path.join(gdir, "%s_output.npy" % name), out.numpy().astype(np.float32))
        files.append(name)
    with open(os.path.join(gdir, "README"), "w") as f:
        variant = getattr(args, "attention_variant", "rfa")
        shift_note = (", ignored: RT-RFA has no lag shift" if variant == "rt" else
                      ", ignored: AFA predicts over afa_pred_dt = %g" % args.afa_pred_dt if variant.startswith("afa") else
                      ", overridden by the learned\nper-head shift because learn_t_shift=true"
                      if getattr(args, "learn_t_shift", False) else "")
        module = {"afa": "rfa_torch.py with the AFA attention of afa_torch.py",
                  "afa_full": "rfa_torch.py with the full AFA attention of afa_torch.py",
                  "rt": "rfa_torch.py with the RT-RFA attention of rt_torch.py"}.get(variant, "rfa_torch.py")
        f.write("Made by `%s` (function write_goldens).\n"
                "Computed in float64 by models/train/%s from the weights exactly as stored in "
                "../model.safetensors.\n"
                "regular_input.npy [1,64,2] f32 measurements, no timestamps (default t_i = i), causal;\n"
                "  regular_output.npy [1,64,2] f32 predictions of the state at t_i + 1.\n"
                "irregular_input.npy [1,64,2] f32 + irregular_timestamps.npy [1,64] f32 (units of dt=0.1;\n"
                "  pass as t_measure), irregular_output.npy [1,64,2] f32.\n"
                "Forward: NextStepPredictor (input_proj -> backbone(t_shift=1%s) -> output_head).\n"
                % (command, module, shift_note))
        window = int(getattr(args, "attention_window", 0) or 0)
        if window:
            f.write("Attention window %d (args.attention_window): each position attends to its last %d keys, "
                    "as the runtime\nruns this model by default.\n" % (window, window))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--d-e", dest="d_e", type=int, default=64)
    ap.add_argument("--d-k", dest="d_k", type=int, default=32, help="d_k_total = d_v_total (complex dims)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--steps", type=int, default=None, help="default: the kind's own (KINDS), else 1000")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--n-train", type=int, default=100)
    ap.add_argument("--n-eval", type=int, default=128)
    ap.add_argument("--sigma-p", type=float, default=0.1)
    ap.add_argument("--sigma-m", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kind", default="rfa_w50", choices=sorted(KINDS),
                    help="rfa_w50 (default): the default model, exported to ../spiral-filter; rfa: RFA vs the "
                         "RoPE baseline; any other kind: trained alone (same data and seed) and exported to --out")
    ap.add_argument("--out", default=None, help="default ../spiral-filter (rfa_w50) or ../spiral-<kind>")
    ap.add_argument("--skip-baseline", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.out is None:
        a.out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                             "spiral-filter" if a.kind == "rfa_w50" else "spiral-" + a.kind)
    out_dir = os.path.abspath(a.out)
    name = os.path.basename(out_dir)
    command = "cd models/train && nice -n 10 /usr/bin/python3 spiral.py" + (
        "" if a.kind == "rfa_w50" and name == "spiral-filter" else " --kind %s --out ../%s" % (a.kind, name))
    os.makedirs(out_dir, exist_ok=True)
    t_all = time.time()
    log = lambda s: print(s, flush=True)
    sp = Spiral(a.sigma_p, a.sigma_m)
    log("F_10 (10-step Euler product) = %s ; expm(0.1A) ref [[1.083944,-0.197680],[0.098840,0.886264]]"
        % np.array2string(sp.F[PER_DT], precision=6))

    sets = eval_sets(sp, a)
    results = {}
    for (N, irr), (y, t, tgt, gaps) in sets.items():
        key = "N=%d %s" % (N, "irregular" if irr else "regular")
        results[key] = {"raw measurements": float(((y - tgt) ** 2).mean()),
                        "Kalman (true model)": float(((sp.kalman_predict(y, gaps) - tgt) ** 2).mean())}
    log(json.dumps(results, indent=1))

    models, walls = {}, {}
    if a.kind != "rfa":
        kinds = [a.kind]
    else:
        kinds = ["rfa"] if a.skip_baseline else ["rfa", "rope"]
    for kind in kinds:
        model, args, wall = train(kind, a, sp, log)
        models[kind], walls[kind] = (model, args), wall
        label = RESULT_LABELS.get(kind, kind)
        for (N, irr), (y, t, tgt, gaps) in sets.items():
            key = "N=%d %s" % (N, "irregular" if irr else "regular")
            results[key][label] = model_mse(model, y, t, tgt, 32 if N <= 100 else 8)
        log(json.dumps(results, indent=1))

    model, args = models[a.kind]
    made_by = "models/train/spiral.py" + ("" if a.kind == "rfa_w50" else " --kind " + a.kind)
    stored = export_model(model, args, "signal", out_dir, mode="f32",
                          metadata={"model": name, "made_by": made_by})
    write_goldens(model, args, stored, out_dir, sp, command)
    variant = getattr(args, "attention_variant", "rfa")
    table, table_md = {"afa": (afa_head_table, afa_head_table_md), "afa_full": (afa_head_table, afa_head_table_md),
                       "rt": (rt_head_table, rt_head_table_md)}.get(variant, (head_table, head_table_md))
    heads = table(model)
    eig = afa_eigenvalues(model)
    if eig:
        extra = dict(eigenvalues=eig)
    else:
        extra = {}
    summary = dict(extra, results=results, train_wall_s=walls, total_wall_s=time.time() - t_all, cli=portable_cli(a),
                   train_steps={k: train_steps(k, a) for k in kinds},
                   heads=heads, F10=sp.F[PER_DT].tolist(), Q10=sp.Q[PER_DT].tolist())
    with open(os.path.join(out_dir, "metrics.json"), "w") as f:
        json.dump(summary, f, indent=1, default=float)
    log(table_md(heads))
    log("total wall %.0fs" % (time.time() - t_all))


if __name__ == "__main__":
    main()
