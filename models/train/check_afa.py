"""Self-check: afa_torch.MultiheadAFA vs a naive per-(b, i, j, h, k) Python loop written directly from
docs/variant-afa.md (section 4 for the layer, section 6 for the unitary switch, section 12 for the
raw -> physical map), in float64; plus the hand values of section 13 (the D = 1 worked example and the
covariance curve) and finite gradients at the edges (unitary mu = 0, a zero channel).
Run: /usr/bin/python3 check_afa.py   (prints `ok`; exit 1 on a mismatch)
"""
import cmath
import itertools
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rfa_torch import make_args, build  # noqa: E402
from afa_torch import MultiheadAFA  # noqa: E402

FAILED = []


def sp(x):  # PyTorch's softplus (beta 1, linear above 20)
    return x if x > 20 else math.log1p(math.exp(x))


def sig(x):
    return 1.0 / (1.0 + math.exp(-x))


def naive(m, x, t=None, causal=True):
    """The layer from the contract, one scalar at a time. x [B][N][d_e] (numpy), t [B][N] or None."""
    a = m.args
    sd = {k: v.detach().double().numpy() for k, v in m.state_dict().items()}
    B, N, _ = x.shape
    H, D = m.n_heads, m.d_k_head
    HD = H * D
    conj = a.use_complex_conj_constraint
    lin = lambda n, z: z @ sd["W_%s.weight" % n].T + sd["W_%s.bias" % n]
    q, k, v = lin("q", x), lin("k", x), lin("v", x)
    s = a.max_learned_decay / (a.seq_len - 1) if a.scale_decay_by_time_interval else a.max_learned_decay

    def phys(h, c):  # section 12, channel c of head h
        pair = c // 2 if conj else c
        mu = s * sig(sd["afa_mu_v"][h][pair])
        w = sd["omega_v"][h][pair]
        if conj and c % 2 == 1:
            w = -w
        om = a.omega_rescale * w
        s2 = 0.0 if a.zero_process_noise else sp(sd["afa_sigma_v"][h][c])
        e2 = 0.0 if a.zero_key_measurement_noise else sp(sd["afa_eta_v"][h][c])
        g2 = sp(sd["afa_gamma_v"][h][c])
        if a.afa_unitary:
            mu = 0.0
        return mu, om, s2, e2, g2

    def cov(h, c, l):  # l = |lag|
        mu, _, s2, e2, g2 = phys(h, c)
        ph = l if mu == 0 else -math.expm1(-2 * mu * l) / (2 * mu)
        return s2 * ph + e2 * math.exp(-2 * mu * l) + g2

    def transport(h, c, lag):
        mu, om, _, _, _ = phys(h, c)
        return math.exp(-mu * abs(lag)) * cmath.exp(1j * om * lag)

    def unit(z):
        return z / abs(z) if abs(z) > 0 else 0j

    out = np.zeros((B, N, 2 * HD))
    for b in range(B):
        tt = [float(i) for i in range(N)] if (a.t_equal or t is None) else [float(u) for u in t[b]]
        for h in range(H):
            nu = sp(sd["afa_nu_v"][h])
            alpha = sd["afa_alpha_v"][h]
            Q = [[q[b, i, h * D + c] + 1j * q[b, i, HD + h * D + c] for c in range(D)] for i in range(N)]
            K = [[k[b, i, h * D + c] + 1j * k[b, i, HD + h * D + c] for c in range(D)] for i in range(N)]
            V = [[v[b, i, h * D + c] + 1j * v[b, i, HD + h * D + c] for c in range(D)] for i in range(N)]
            if a.afa_unitary:
                Q = [[unit(z) for z in row] for row in Q]
                K = [[unit(z) for z in row] for row in K]
            for i in range(N):
                js = [j for j in range(N) if (j <= i or not causal)]
                logit = {}
                for j in js:
                    lag = tt[i] - tt[j]
                    covs = [cov(h, c, abs(lag)) for c in range(D)]
                    if a.afa_precision == "channel_sum":
                        vC = sum(covs)
                    elif a.afa_precision == "one_channel":
                        vC = covs[a.afa_precision_channel]
                    else:
                        ws = [sp(sd["afa_weight_v"][h][c]) for c in range(D)]
                        vC = 1.0 / (sum(ws[c] / covs[c] for c in range(D)) + sp(sd["afa_weight_bias_v"][h]))
                    R2 = sum(abs(transport(h, c, lag) * K[j][c] - Q[i][c]) ** 2 for c in range(D))
                    logit[j] = alpha ** 2 * -math.log(nu * vC + R2 + a.afa_eps)
                mx = max(logit.values())
                wts = {j: math.exp(logit[j] - mx) for j in js}
                tot = sum(wts.values())
                for c in range(D):
                    zb = sum(wts[j] / tot * transport(h, c, tt[i] - tt[j]) * V[j][c] for j in js)
                    if a.afa_mix:
                        g = sig(sd["afa_delta_v"][h][c])
                        zb = (1 - g) * V[i][c] + g * zb
                    mu, om, _, _, _ = phys(h, c)
                    est = cmath.exp((-mu + 1j * om) * a.afa_pred_dt) * zb
                    out[b, i, h * D + c] = est.real
                    out[b, i, HD + h * D + c] = est.imag
    return out @ sd["W_o.weight"].T + sd["W_o.bias"]


def expect(name, ok, detail=""):
    print("%-60s %s%s" % (name, "ok" if ok else "MISMATCH", (" " + detail) if detail else ""))
    if not ok:
        FAILED.append(name)


def random_layer(seed, **kw):
    torch.manual_seed(seed)
    kw.setdefault("attention_variant", "afa")
    args = make_args(kw.pop("model", "M2"), n_heads=2, d_e=6, d_k_total=8, d_v_total=8, seq_len=16, **kw)
    m = MultiheadAFA(args).double()
    with torch.no_grad():  # move every raw parameter away from its initial value
        for n, p in m.named_parameters():
            p.add_((0.1 if n.startswith("W_") else 0.4) * torch.randn_like(p))
    return m


def compare(name, causal=True, irregular=True, N=6, **kw):
    m = random_layer(1, **kw)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, N, 6, generator=g, dtype=torch.float64)
    t = torch.cumsum(0.2 + 1.8 * torch.rand(2, N, generator=g, dtype=torch.float64), dim=1) if irregular else None
    ref = naive(m, x.numpy(), None if t is None else t.numpy(), causal)
    worst, ok = 0.0, True
    for block in (MultiheadAFA.BLOCK_ELEMS, 2 * 2 * 4 * N, 2 * 2 * 2 * 4 * N):  # one block; 1 and 2 rows a block
        saved, MultiheadAFA.BLOCK_ELEMS = MultiheadAFA.BLOCK_ELEMS, block
        try:
            with torch.no_grad():
                y, attn = m(x, t_measure=t, causal=causal, return_attn=True)
        finally:
            MultiheadAFA.BLOCK_ELEMS = saved
        err = float(np.abs(y.numpy() - ref).max() / np.abs(ref).max())
        rows = float((attn["A"].sum(-1) - 1).abs().max())
        masked = float(attn["A"].triu(1).abs().max()) if causal else 0.0
        worst = max(worst, err)
        ok = ok and err < 1e-12 and rows < 1e-12 and masked == 0.0 and attn["A"].shape == (2, 2, N, N)
    expect(name, ok, "rel.err %.1e" % worst)


def worked_layer(variant, horizon):
    """The worked example's layer (section 13; docs/variant-afa-full.md §7), either form: D = 1, lambda = -0.1 + i,
    sigma2 = 1, eta2 = 0.5, gamma2 = 0, nu = alpha = 1, eps = 0, horizon `horizon`; and its inputs, t = (0, 1),
    q_1 = 1, k_0 = 0.5 + 0.5i, k_1 = 1 + 0.2i, v_0 = 1, v_1 = i: (layer, x, t)."""
    args = make_args("M2", attention_variant=variant, n_heads=1, d_e=6, d_k_total=1, d_v_total=1, seq_len=2,
                     use_complex_conj_constraint=False, scale_decay_by_time_interval=False,
                     max_learned_decay=1.0, learn_rotations=True, omega_rescale=1.0, t_equal=False,
                     afa_eps=0.0, afa_pred_dt=horizon)
    m = MultiheadAFA(args).double()
    inv_sp = lambda y: math.log(math.expm1(y))
    with torch.no_grad():
        m.afa_mu_v.fill_(math.log(0.1 / 0.9))          # mu = 1 * sig(.) = 0.1
        m.omega_v.fill_(1.0)
        m.afa_sigma_v.fill_(inv_sp(1.0))
        m.afa_eta_v.fill_(inv_sp(0.5))
        m.afa_gamma_v.fill_(-1000.0)                    # softplus -> exactly 0
        m.afa_nu_v.fill_(inv_sp(1.0))
        m.afa_alpha_v.fill_(1.0)
        # input x_j = [Re q, Im q, Re k, Im k, Re v, Im v]; projections pick their pair
        for n, lin in enumerate((m.W_q, m.W_k, m.W_v)):
            lin.weight.zero_()
            lin.bias.zero_()
            lin.weight[0, 2 * n] = 1.0
            lin.weight[1, 2 * n + 1] = 1.0
        m.W_o.weight.zero_()
        m.W_o.bias.zero_()
        m.W_o.weight[0, 0] = 1.0
        m.W_o.weight[1, 1] = 1.0
    x = torch.tensor([[[0.0, 0.0, 0.5, 0.5, 1.0, 0.0], [1.0, 0.0, 1.0, 0.2, 0.0, 1.0]]], dtype=torch.float64)
    t = torch.tensor([[0.0, 1.0]], dtype=torch.float64)
    return m, x, t


def worked_example():
    """Section 13: the worked example (worked_layer) in the memory-optimised form."""
    res = {}
    for h in (0.0, 1.0):
        m, x, t = worked_layer("afa", h)
        with torch.no_grad():
            y, attn = m(x, t_measure=t, return_attn=True)
            p = m.physical()
            covs = m.channel_covariance(p, p["mu"], torch.tensor([1.0, 0.0], dtype=torch.float64).view(1, 1, 1, 1, 2))
        res[h] = (complex(float(y[0, 1, 0]), float(y[0, 1, 1])), attn["A"][0, 0, 1].tolist(), covs.flatten().tolist())
    z, w, covs = res[0.0]
    close = lambda u, ref, tol=5e-7: abs(u - ref) <= tol
    expect("worked example: cov at lags 1, 0 = 1.315712, 0.5", close(covs[0], 1.315712) and close(covs[1], 0.5),
           "%.6f %.6f" % tuple(covs))
    expect("worked example: weights (0.152646, 0.847354)", close(w[0], 0.152646) and close(w[1], 0.847354),
           "(%.6f, %.6f)" % tuple(w))
    expect("worked example: Zbar_1 = 0.074627 + 0.963578i", close(z, 0.074627 + 0.963578j), "%.6f%+.6fi" % (z.real, z.imag))
    zp = res[1.0][0]
    expect("worked example: prediction over 1 = -0.697179 + 0.527900i", close(zp, -0.697179 + 0.527900j),
           "%.6f%+.6fi" % (zp.real, zp.imag))


def covariance_curve():
    """Section 13: mu = 0.1, stationary level 5 (sigma2 = 1), eta2 = 1: 1, 1.079205, 1.725077, 4.458659."""
    p = dict(sigma2=torch.ones(1, 1, dtype=torch.float64), eta2=torch.ones(1, 1, dtype=torch.float64),
             gamma2=torch.zeros(1, 1, dtype=torch.float64))
    mu = torch.full((1, 1), 0.1, dtype=torch.float64)
    lags = torch.tensor([0.0, 0.1, 1.0, 10.0], dtype=torch.float64).view(1, 1, 1, 1, 4)
    c = MultiheadAFA.channel_covariance(p, mu, lags).flatten().tolist()
    ref = [1.0, 1.079205, 1.725077, 4.458659]
    expect("covariance curve at lags 0, 0.1, 1, 10", all(abs(u - r) < 5e-7 for u, r in zip(c, ref)),
           " ".join("%.6f" % u for u in c))
    # phi = -expm1(-2 mu l) / (2 mu) for tiny mu, phi(0, l) = l (all channels zero, or one of two)
    for mu_v in ((0.0, 0.0), (1e-9, 1e-9), (3e-7, 0.0), (1e-4, 0.2)):
        muv = torch.tensor([mu_v], dtype=torch.float64)
        pp = {k: torch.ones(1, 2, dtype=torch.float64) * (1.0 if k == "sigma2" else 0.0) for k in p}
        got = MultiheadAFA.channel_covariance(pp, muv, lags).view(2, 4)
        want = [[l if m == 0 else -math.expm1(-2 * m * l) / (2 * m) for l in (0.0, 0.1, 1.0, 10.0)] for m in mu_v]
        expect("phi(mu=%s)" % (mu_v,), float((got - torch.tensor(want, dtype=torch.float64)).abs().max()) < 1e-14)


def gradients():
    """Finite gradients: unitary (mu taken 0), a zero Q/K channel, every source, mix, float32."""
    for kw in (dict(afa_unitary=True), dict(afa_precision="weighted", afa_mix=True), dict(afa_precision="one_channel")):
        m = random_layer(3, **kw)
        with torch.no_grad():  # channel 0 of head 0 of Q and K identically zero
            for lin in (m.W_q, m.W_k):
                lin.weight[0].zero_(); lin.bias[0] = 0
                lin.weight[8].zero_(); lin.bias[8] = 0
        for dtype in (torch.float64, torch.float32):
            mm = m.to(dtype)
            mm.zero_grad()
            x = torch.randn(2, 7, 6, dtype=dtype)
            y, _ = mm(x)
            y.pow(2).sum().backward()
            ok = all(torch.isfinite(p.grad).all() for p in mm.parameters() if p.grad is not None)
            expect("finite gradients %s %s" % (kw, str(dtype).split(".")[-1]), ok)


def networks():
    """The hooks: build() gives AFA layers in every architecture, and RFA stays RFA."""
    for arch in ("lm", "signal", "attention"):
        args = make_args("M2", attention_variant="afa", n_heads=2, d_e=8, d_k_total=8, d_v_total=8, num_blocks=2,
                         hidden_dim=16, d_in=3, seq_len=16, vocab_size=256)
        args.architecture = arch
        m = build(args)
        n_afa = sum(isinstance(mod, MultiheadAFA) for mod in m.modules())
        expect("build(%s) with attention_variant=afa: %d AFA layers" % (arch, n_afa),
               n_afa == (1 if arch == "attention" else 2))
    args = make_args("M2", n_heads=2, d_e=8, d_k_total=8, d_v_total=8, num_blocks=2, hidden_dim=16, d_in=3, seq_len=16)
    args.architecture = "signal"
    expect("build(signal), default variant: no AFA layer", not any(isinstance(x, MultiheadAFA) for x in build(args).modules()))


def main():
    torch.set_num_threads(1)
    for prec, unitary, mix, causal in itertools.product(("channel_sum", "one_channel", "weighted"), (False, True),
                                                        (False, True), (True, False)):
        kw = dict(afa_precision=prec, afa_unitary=unitary, afa_mix=mix, t_equal=False)
        if prec == "one_channel":
            kw["afa_precision_channel"] = 3
        compare("%s%s%s %s, irregular t" % (prec, " unitary" if unitary else "", " mix" if mix else "",
                                             "causal" if causal else "non-causal"), causal=causal, **kw)
    compare("t_equal (t = arange(N))", t_equal=True)
    compare("regular default t, pred_dt 0.3, eps 1e-2", irregular=False, afa_pred_dt=0.3, afa_eps=1e-2, t_equal=False)
    compare("M1 (decay scaled by seq_len - 1)", model="M1", t_equal=False)
    compare("no conjugate constraint", use_complex_conj_constraint=False, t_equal=False)
    compare("zero process and key noise", zero_process_noise=True, zero_key_measurement_noise=True, t_equal=False)
    compare("learned rotations, omega_rescale 0.7", learn_rotations=True, omega_rescale=0.7, t_equal=False)
    worked_example()
    covariance_curve()
    gradients()
    networks()
    if FAILED:
        print("FAILED: %d check(s): %s" % (len(FAILED), "; ".join(FAILED)))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
