"""Self-check: rfa_torch.MultiheadIsotropicRFA vs a naive per-(i,j,h) numpy loop written
directly from docs/reference-code.md (float64). Run: /usr/bin/python3 check_rfa.py"""
import math
import sys
import os

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rfa_torch import make_args, MultiheadIsotropicRFA, LanguageModel  # noqa: E402


def softplus(x):
    return np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20))))


def naive_learned_theta(table, ids):
    """ACC learned steps by hand (docs/variant-acc.md A1, A2): theta[b, s, d] = wrap(theta[b, s-1, d] +
    table[ids[b, s], d]), theta[b, -1] = 0, wrapped after every addition as the C++ twin does."""
    B, N = ids.shape
    theta = np.zeros((B, N, table.shape[1]))
    for b in range(B):
        for d in range(table.shape[1]):
            run = 0.0
            for s in range(N):
                run = math.remainder(run + table[ids[b, s], d], 2 * math.pi)
                theta[b, s, d] = run
    return theta


def naive(m, x, t=None, t_shift=None, causal=True, theta=None):
    """theta: accumulated phases [B, N, D] shared by the heads (ACC), or None for omega t."""
    a = m.args
    sd = {k: v.detach().double().numpy() for k, v in m.state_dict().items()}
    B, N, _ = x.shape
    H, D = m.n_heads, m.d_k_head
    dk = m.d_k_total
    lin = lambda W, b, z: z @ sd[W].T + sd[b]
    q, k, v = (lin("W_%s.weight" % n, "W_%s.bias" % n, x) for n in "qkv")
    cplx = lambda z, h, d: z[..., h * D + d] + 1j * z[..., dk + h * D + d]
    scale_r = ((a.max_learned_decay if a.learn_decay else a.max_fixed_decay) / (a.seq_len - 1)
               if a.scale_decay_by_time_interval else 1.0)
    mu = scale_r * (1 / (1 + np.exp(-sd["mu_v"])) + a.epsilon if a.learn_decay else sd["mu_v"])
    wr = sd["omega_v"]
    om = np.stack([wr, -wr], -1).reshape(H, -1) * a.omega_rescale
    eps = a.epsilon
    eta2 = softplus(sd["eta_v"]) + eps
    g2 = softplus(sd["gamma_v"]) + eps
    s2 = softplus(sd["sigma_v"])
    st2 = softplus(sd["sigma_tilde_v"])
    if a.zero_process_noise:
        s2, st2 = s2 * 0, st2 * 0
    if a.zero_key_measurement_noise:
        eta2 = eta2 * 0
    nu = D * softplus(sd["nu_param"]) + 2 + eps
    kap = (nu + D) / D
    tau = softplus(sd["tau_param"]) + eps
    if a.learn_t_shift:
        sh = softplus(sd["t_shift_param"][0])
    elif t_shift:
        sh = np.full(H, float(t_shift))
    else:
        sh = None
    out = np.zeros((B, N, 2 * m.d_v_total))
    for b in range(B):
        tt = np.arange(N, dtype=float) if (a.t_equal or t is None) else t[b]
        for h in range(H):
            Q = np.array([[cplx(q[b, i], h, d) for d in range(D)] for i in range(N)])
            K = np.array([[cplx(k[b, i], h, d) for d in range(D)] for i in range(N)])
            V = np.array([[cplx(v[b, i], h, d) for d in range(D)] for i in range(N)])
            ang = np.outer(tt, om[h]) if theta is None else theta[b]   # [N, D]
            rot = np.exp(-1j * ang)
            stat = theta is None or a.stationary_values
            Qt, Kt, Vt = Q * rot, K * rot, (V * rot if stat else V)
            for i in range(N):
                logit = np.full(N, -np.inf)
                Es = np.zeros(N)
                for j in range(N):
                    if causal and j > i:
                        continue
                    dt = abs(tt[i] - tt[j]) + (sh[h] if sh is not None else 0.0)
                    e = min(max(-mu[h] * dt, a.min_exponent), a.max_exponent)
                    E = math.exp(e)
                    if a.learn_decay:
                        Vc = st2[h] * (-math.expm1(2 * e)) + s2[h] * dt
                    elif abs(mu[h]) < 1e-5:
                        Vc = s2[h] * dt
                    else:
                        Vc = s2[h] * (-math.expm1(2 * e)) / (2 * mu[h])
                    Vc += eta2[h] * E * E + g2[h] + 0.01
                    cross = np.real(np.vdot(Qt[i], Kt[j]))
                    if a.use_full_residual_norm:
                        R2 = np.sum(abs(Qt[i]) ** 2) + E * E * np.sum(abs(Kt[j]) ** 2) - 2 * E * cross
                    else:
                        R2 = -E * cross
                    Bb = {0: 0.0, 1: -math.log(Vc), 2: -(s2[h] / (eta2[h] + g2[h])) * dt}[a.additive_bias_type]
                    P = {0: 1 / math.sqrt(D), 1: 1 / (nu[h] * Vc), 2: 1 / (s2[h] * dt + eta2[h])}[a.multiplicative_bias_type]
                    L = Bb - kap[h] * math.log(1 + P * R2) if a.use_robust_weight else Bb - P * R2
                    logit[j] = tau[h] * L
                    Es[j] = E
                w = np.exp(logit - logit.max())
                w /= w.sum()
                est = (w * Es) @ Vt
                if a.rotate_values and stat:
                    est = est * np.exp(1j * ang[i])
                if sh is not None and theta is None:   # the lag-shift rotation belongs to the omega t clock
                    est = est * np.exp(1j * om[h] * sh[h])
                for d in range(D):
                    out[b, i, h * D + d] = est[d].real
                    out[b, i, m.d_v_total + h * D + d] = est[d].imag
    return out @ sd["W_o.weight"].T + sd["W_o.bias"]


def run(name, t_irregular=False, t_shift=None, **kw):
    torch.manual_seed(0)
    args = make_args(kw.pop("model", "M2"), n_heads=2, d_e=6, d_k_total=8, d_v_total=8, seq_len=16, **kw)
    m = MultiheadIsotropicRFA(args).double()
    with torch.no_grad():   # move the raw parameters away from their init values
        for n, p in m.named_parameters():
            if not n.startswith("W_"):
                p.add_(0.3 * torch.randn_like(p))
            else:
                p.add_(0.1 * torch.randn_like(p))
        if "mu_v" in dict(m.named_buffers()):
            m.mu_v.copy_(torch.tensor([0.0, 0.07], dtype=torch.float64))
    x = torch.randn(2, 7, 6, dtype=torch.float64)
    t = None
    if t_irregular:
        t = torch.cumsum(0.3 + torch.rand(2, 7, dtype=torch.float64) * 2, dim=1)
    y, _ = m(x, t_measure=t, t_shift=t_shift)
    ref = naive(m, x.numpy(), None if t is None else t.numpy(), t_shift)
    err = np.abs(y.detach().numpy() - ref).max() / np.abs(ref).max()
    print("%-40s rel.err %.2e" % (name, err))
    assert err < 1e-12, name


def run_learned(name, **kw):
    """ACC learned steps against the naive loop: a random table, random ids (repeats included)."""
    torch.manual_seed(1)
    V = 11
    args = make_args(kw.pop("model", "M2"), n_heads=2, d_e=6, d_k_total=8, d_v_total=8, seq_len=16, vocab_size=V,
                     phase_source="accumulated_learned", **kw)
    m = MultiheadIsotropicRFA(args).double()
    with torch.no_grad():
        for n, p in m.named_parameters():
            p.add_((0.1 if n.startswith("W_") else 0.3) * torch.randn_like(p))
        m.acc_phi.copy_(4.0 * torch.rand(V, m.d_k_head, dtype=torch.float64) - 2.0)  # steps up to 2 rad
        if "mu_v" in dict(m.named_buffers()):
            m.mu_v.copy_(torch.tensor([0.0, 0.07], dtype=torch.float64))
    B, N = 2, 23
    x = torch.randn(B, N, 6, dtype=torch.float64)
    ids = torch.randint(0, V, (B, N))
    y, _ = m(x, ids=ids)
    theta = naive_learned_theta(m.acc_phi.detach().numpy(), ids.numpy())
    ref = naive(m, x.numpy(), theta=theta)
    err = np.abs(y.detach().numpy() - ref).max() / np.abs(ref).max()
    print("%-40s rel.err %.2e" % (name, err))
    assert err < 1e-12, name
    y2, _ = m(x, ids=(ids + 1) % V)   # other ids, other outputs
    assert (y2 - y).abs().max() > 1e-3, name
    y.sum().backward()                # the table learns
    assert m.acc_phi.grad is not None and m.acc_phi.grad.abs().max() > 0, name
    try:
        m(x)
    except ValueError as e:
        assert "ids" in str(e)
    else:
        raise AssertionError(name + ": a learned-steps layer without ids must raise")


def run_learned_is_rope():
    """A table whose every row is omega (head 0's bank, every head sharing it) equals accumulated_rope;
    this is the table decision 5 initialises, checked on a layer and through a LanguageModel."""
    torch.manual_seed(2)
    V = 13
    common = dict(n_heads=3, d_e=6, d_k_total=12, d_v_total=12, seq_len=16, vocab_size=V, num_blocks=2,
                  hidden_dim=10)
    la = make_args("M2", phase_source="accumulated_learned", **common)
    ra = make_args("M2", phase_source="accumulated_rope", **common)
    lm_l = LanguageModel(la).double()
    torch.manual_seed(2)
    lm_r = LanguageModel(ra).double()
    with torch.no_grad():
        for blk in lm_r.backbone.blocks:   # one bank for every head (M2's SC-RoPE banks differ per head)
            blk.attn.omega_v.copy_(blk.attn.omega_v[0:1].expand_as(blk.attn.omega_v))
            for n, p in blk.attn.named_parameters():
                p.add_(0.3 * torch.randn_like(p))
        sd = lm_r.state_dict()
        missing, unexpected = lm_l.load_state_dict(sd, strict=False)
        assert unexpected == [] and all(k.endswith(".attn.acc_phi") for k in missing) and len(missing) == 2
        for blk in lm_l.backbone.blocks:   # decision 5's init is head 0's physical bank in every row
            w = blk.attn.physical()["omega"][0]
            assert torch.equal(blk.attn.acc_phi, w.view(1, -1).expand(V, -1)), "acc_phi init"
    ids = torch.randint(0, V, (2, 19))
    yl, yr = lm_l(ids), lm_r(ids)
    err = ((yl - yr).abs().max() / yr.abs().max()).item()
    print("%-40s rel.err %.2e" % ("learned table = omega rows vs rope (lm)", err))
    assert err < 1e-13
    # Sanity: with M2's per-head banks the shared table (head 0's) is not per-head RoPE.
    torch.manual_seed(2)
    lm_r2 = LanguageModel(ra).double()
    lm_l.load_state_dict(lm_r2.state_dict(), strict=False)
    with torch.no_grad():
        for blk in lm_l.backbone.blocks:
            blk.attn.acc_phi.copy_(blk.attn.physical()["omega"][0].view(1, -1).expand(V, -1))
    assert (lm_l(ids) - lm_r2(ids)).abs().max() > 1e-6


if __name__ == "__main__":
    run("M2 default")
    run("M2 irregular t", t_irregular=True, t_equal=False)
    run("M1 (scaled decay)", model="M1")
    run("M2.1 gaussian", model="M2.1")
    run("M2.6 pure rotation", model="M2.6")
    run("no learn_t_shift, t_shift=1", learn_t_shift=False, t_shift=1)
    run("no learn_t_shift, none", learn_t_shift=False)
    run("bias types 2/2", additive_bias_type=2, multiplicative_bias_type=2)
    run("rotate_values off", rotate_values=False)
    run("learn_decay (residual diffusion)", learn_decay=True)
    run_learned("ACC learned steps (M2)")
    run_learned("ACC learned steps, Q/K only (M2.6)", model="M2.6", stationary_values=False)
    run_learned("ACC learned steps, no counter-rotation", rotate_values=False)
    run_learned_is_rope()
    print("ok")
