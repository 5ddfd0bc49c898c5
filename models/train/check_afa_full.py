"""Self-check: afa_torch.MultiheadAFA's full (anisotropic) form and its tied iterations (IRLS) against a
naive per-(b, i, j, h, k) Python loop written from docs/variant-afa-full.md (equations A1-A13 of the
seeds page: per-channel precision, Mahalanobis reweighting, per-channel normalisation; the mix and the
momentum of the iterations), in float64; the hand values of the worked example (docs/variant-afa-full.md §7) and the
momentum's critical damping; IRLS with n iterations = n explicit layers sharing one set of weights;
finite gradients.
Run: /usr/bin/python3 check_afa_full.py   (prints `ok`; exit 1 on a mismatch)
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
from check_afa import sp, sig, expect, FAILED, worked_layer  # noqa: E402
import check_afa  # noqa: E402


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
    W_win = int(getattr(a, "attention_window", 0) or 0)
    full = a.attention_variant == "afa_full"

    def phys(h, c):
        pair = c // 2 if conj else c
        mu = 0.0 if a.afa_unitary else s * sig(sd["afa_mu_v"][h][pair])
        w = sd["omega_v"][h][pair] * (-1 if conj and c % 2 == 1 else 1)
        s2 = 0.0 if a.zero_process_noise else sp(sd["afa_sigma_v"][h][c])
        e2 = 0.0 if a.zero_key_measurement_noise else sp(sd["afa_eta_v"][h][c])
        return mu, a.omega_rescale * w, s2, e2, sp(sd["afa_gamma_v"][h][c])

    def cov(h, c, l):  # (A4), l = |lag|
        mu, _, s2, e2, g2 = phys(h, c)
        ph = l if mu == 0 else -math.expm1(-2 * mu * l) / (2 * mu)
        return s2 * ph + e2 * math.exp(-2 * mu * l) + g2

    def transport(h, c, lag):  # e^{lambda_k l}
        mu, om, _, _, _ = phys(h, c)
        return math.exp(-mu * abs(lag)) * cmath.exp(1j * om * lag)

    unit = lambda z: z / abs(z) if abs(z) > 0 else 0j

    def layer(h, Q, K, V, tt):  # one AFA pass: Zbar [N][D] before the mix
        nu, alpha = sp(sd["afa_nu_v"][h]), sd["afa_alpha_v"][h]
        if a.afa_unitary:
            Q = [[unit(z) for z in row] for row in Q]
            K = [[unit(z) for z in row] for row in K]
        Z = [[0j] * D for _ in range(N)]
        for i in range(N):
            js = [j for j in range(N) if not causal or (j <= i and (W_win == 0 or j > i - W_win))]
            if full:
                Wt, P = {}, {}
                for j in js:
                    lag = tt[i] - tt[j]
                    P[j] = [1.0 / (cov(h, c, abs(lag)) + a.afa_eps) for c in range(D)]          # (A4)
                    D2 = sum(P[j][c] * abs(transport(h, c, lag) * K[j][c] - Q[i][c]) ** 2 for c in range(D))  # (A5, A6)
                    Wt[j] = (1.0 + D2 / nu) ** (-alpha ** 2)
                for c in range(D):  # (A7, A8): per-channel normalisation
                    den = sum(Wt[j] * P[j][c] for j in js)
                    Z[i][c] = sum(Wt[j] * P[j][c] / den * transport(h, c, tt[i] - tt[j]) * V[j][c] for j in js)
            else:
                logit = {}
                for j in js:
                    lag = tt[i] - tt[j]
                    vC = sum(cov(h, c, abs(lag)) for c in range(D))
                    R2 = sum(abs(transport(h, c, lag) * K[j][c] - Q[i][c]) ** 2 for c in range(D))
                    logit[j] = alpha ** 2 * -math.log(nu * vC + R2 + a.afa_eps)
                mx = max(logit.values())
                tot = sum(math.exp(logit[j] - mx) for j in js)
                for c in range(D):
                    Z[i][c] = sum(math.exp(logit[j] - mx) / tot * transport(h, c, tt[i] - tt[j]) * V[j][c] for j in js)
        return Z

    out = np.zeros((B, N, 2 * HD))
    n_it, g = a.afa_irls_iterations, a.afa_irls_momentum
    for b in range(B):
        tt = [float(i) for i in range(N)] if (a.t_equal or t is None) else [float(u) for u in t[b]]
        for h in range(H):
            cplx = lambda z, i: [z[b, i, h * D + c] + 1j * z[b, i, HD + h * D + c] for c in range(D)]
            Q = [cplx(q, i) for i in range(N)]
            K = [cplx(k, i) for i in range(N)]
            z_prev, z = None, [cplx(v, i) for i in range(N)]            # z1 = V
            for it in range(n_it):                                     # (A12), (A13)
                avg = layer(h, Q, K, z, tt) if it == 0 else layer(h, z, z, z, tt)
                nz = [[0j] * D for _ in range(N)]
                for i in range(N):
                    for c in range(D):
                        gate = sig(sd["afa_delta_v"][h][c]) if a.afa_mix else 1.0
                        nz[i][c] = (1 - gate) * z[i][c] + gate * avg[i][c]
                        if it > 0:
                            nz[i][c] += g * (z[i][c] - z_prev[i][c])
                z_prev, z = z, nz
            for i in range(N):
                for c in range(D):
                    mu, om, _, _, _ = phys(h, c)
                    est = cmath.exp((-mu + 1j * om) * a.afa_pred_dt) * z[i][c]   # (A10)
                    out[b, i, h * D + c] = est.real
                    out[b, i, HD + h * D + c] = est.imag
    return out @ sd["W_o.weight"].T + sd["W_o.bias"]


def random_layer(seed, **kw):
    kw.setdefault("attention_variant", "afa_full")
    return check_afa.random_layer(seed, **kw)


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
        worst = max(worst, err)
        ok = ok and err < 1e-12
        if m.full:  # every channel's weights sum to 1 over the row; masked cells 0
            rows = float((attn["Qk"].sum(-1) - 1).abs().max())
            masked = float(attn["Qk"].triu(1).abs().max()) if causal else 0.0
            ok = ok and rows < 1e-12 and masked == 0.0 and attn["Qk"].shape == (2, 2, 4, N, N)
    expect(name, ok, "rel.err %.1e" % worst)


def worked_example():
    """docs/variant-afa-full.md §7 (full AFA, D = 1): lambda = -0.1 + i, sigma2 = 1, eta2 = 0.5, gamma2 = 0, t = (0, 1),
    q_1 = 1, k_0 = 0.5 + 0.5i, k_1 = 1 + 0.2i, v_0 = 1, v_1 = i; nu = alpha = 1, eps = 0."""
    res = {}
    for h in (0.0, 1.0):
        m, x, t = worked_layer("afa_full", h)
        with torch.no_grad():
            y, attn = m(x, t_measure=t, return_attn=True)
        res[h] = (complex(float(y[0, 1, 0]), float(y[0, 1, 1])), attn["Qk"][0, 0, 0, 1].tolist(), attn["A"][0, 0, 1].tolist())
    z, q, w = res[0.0]
    close = lambda u, ref, tol=5e-7: abs(u - ref) <= tol
    expect("worked example: W (0.438924, 0.925926)", close(w[0], 0.438924) and close(w[1], 0.925926),
           "(%.6f, %.6f)" % tuple(w))
    expect("worked example: weights (0.152646, 0.847354)", close(q[0], 0.152646) and close(q[1], 0.847354),
           "(%.6f, %.6f)" % tuple(q))
    expect("worked example: Zbar_1 = 0.074627 + 0.963578i", close(z, 0.074627 + 0.963578j), "%.6f%+.6fi" % (z.real, z.imag))
    zp = res[1.0][0]
    expect("worked example: prediction over 1 = -0.697179 + 0.527900i", close(zp, -0.697179 + 0.527900j),
           "%.6f%+.6fi" % (zp.real, zp.imag))


def momentum_hand_values():
    """A13: critical damping g = (sqrt(e) - 1)^2, the double root sqrt(g) of x^2 - (1 + g - e) x + g."""
    e = 0.5
    g = (math.sqrt(e) - 1) ** 2
    disc = (1 + g - e) ** 2 - 4 * g
    root = (1 + g - e) / 2
    expect("momentum: e = 0.5 -> g = 0.085786, double root 0.292893",
           abs(g - 0.085786) < 5e-7 and abs(disc) < 1e-15 and abs(root - 0.292893) < 5e-7 and abs(root - math.sqrt(g)) < 1e-15,
           "g %.6f root %.6f disc %.1e" % (g, root, disc))


def irls_is_tied_layers():
    """n tied iterations = n explicit passes of the same layer: z_{k+1} = mix(z_k, AFA(z_k, z_k, z_k))."""
    for full in (True, False):
        m = random_layer(4, attention_variant="afa_full" if full else "afa", afa_mix=True, afa_irls_iterations=3,
                         t_equal=False)
        x = torch.randn(2, 7, 6, dtype=torch.float64)
        with torch.no_grad():
            y, _ = m(x)
            m.args.afa_irls_iterations = 1
            p = m.physical()
            H, D = m.n_heads, m.d_k_head
            heads = lambda z: (z.view(2, 7, 2, H, D)[:, :, 0].permute(0, 2, 3, 1), z.view(2, 7, 2, H, D)[:, :, 1].permute(0, 2, 3, 1))
            q, k, v = heads(m.W_q(x)), heads(m.W_k(x)), heads(m.W_v(x))
            t = torch.arange(7, dtype=torch.float64).unsqueeze(0)
            gate = torch.sigmoid(p["delta"]).view(1, H, D, 1)
            z = v
            for it in range(3):
                src = (q[0], q[1], k[0], k[1], z[0], z[1]) if it == 0 else (z[0], z[1], z[0], z[1], z[0], z[1])
                (a_re, a_im), _ = m._attend(p, p["mu"], t, True, src, False)
                z = ((1 - gate) * z[0] + gate * a_re, (1 - gate) * z[1] + gate * a_im)
            mu, om = p["mu"].view(1, H, D, 1), p["omega"].view(1, H, D, 1)
            c, s = torch.exp(-mu) * torch.cos(om), torch.exp(-mu) * torch.sin(om)
            flat = lambda u: u.permute(0, 3, 1, 2).reshape(2, 7, H * D)
            ref = m.W_o(torch.cat([flat(c * z[0] - s * z[1]), flat(c * z[1] + s * z[0])], dim=-1))
            m.args.afa_irls_iterations = 3
        err = float((y - ref).abs().max())
        expect("IRLS n = 3 = three tied passes (%s)" % ("full" if full else "memory-optimised"), err < 1e-13,
               "max err %.1e" % err)


def reductions():
    """D = 1, nu = alpha = 1, eps = 0: the full form equals the memory-optimised one (one channel:
    W P = 1 / (v + R2)); the first position returns V_0 (one key, lag 0); equal residuals with equal
    precisions give weights 1/n."""
    outs = {}
    for variant in ("afa_full", "afa"):
        torch.manual_seed(5)
        args = make_args("M2", attention_variant=variant, n_heads=2, d_e=4, d_k_total=2, d_v_total=2, seq_len=16,
                         use_complex_conj_constraint=False, afa_eps=0.0, t_equal=False)
        m = MultiheadAFA(args).double()
        with torch.no_grad():
            m.afa_nu_v.fill_(math.log(math.expm1(1.0)))
            m.afa_alpha_v.fill_(1.0)
        x = torch.randn(1, 9, 4, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
        outs[variant] = m(x)[0].detach()
    err = float((outs["afa_full"] - outs["afa"]).abs().max())
    expect("D = 1, nu = alpha = 1, eps = 0: full = memory-optimised", err < 1e-13, "max err %.1e" % err)


def gradients():
    for kw in (dict(afa_unitary=True), dict(afa_mix=True, afa_irls_iterations=2, afa_irls_momentum=0.3), dict()):
        m = random_layer(3, **kw)
        for dtype in (torch.float64, torch.float32):
            mm = m.to(dtype)
            mm.zero_grad()
            x = torch.randn(2, 7, 6, dtype=dtype)
            y, _ = mm(x)
            y.pow(2).sum().backward()
            ok = all(torch.isfinite(p.grad).all() for p in mm.parameters() if p.grad is not None)
            expect("finite gradients %s %s" % (kw, str(dtype).split(".")[-1]), ok)


def errors():
    for kw, what in ((dict(afa_precision="weighted"), "afa_precision"), (dict(afa_irls_iterations=0), "afa_irls_iterations"),
                     (dict(afa_irls_momentum=1.0), "afa_irls_momentum")):
        try:
            random_layer(0, **kw)
            expect("refuses %s" % kw, False)
        except ValueError as e:
            expect("refuses %s" % kw, what in str(e), str(e))
    args = make_args("M2", attention_variant="afa_full", n_heads=2, d_e=8, d_k_total=8, d_v_total=8, num_blocks=2,
                     hidden_dim=16, d_in=3, seq_len=16)
    args.architecture = "signal"
    n = sum(isinstance(mod, MultiheadAFA) and mod.full for mod in build(args).modules())
    expect("build(signal) with attention_variant=afa_full: 2 full AFA layers", n == 2)


def main():
    torch.set_num_threads(1)
    for unitary, mix, causal in itertools.product((False, True), (False, True), (True, False)):
        compare("full%s%s %s, irregular t" % (" unitary" if unitary else "", " mix" if mix else "",
                                               "causal" if causal else "non-causal"),
                causal=causal, afa_unitary=unitary, afa_mix=mix, t_equal=False)
    compare("full, regular t, pred_dt 0.3, eps 1e-2", irregular=False, afa_pred_dt=0.3, afa_eps=1e-2, t_equal=False)
    compare("full, attention window 3", attention_window=3, t_equal=False)
    compare("full, no conjugate constraint", use_complex_conj_constraint=False, t_equal=False)
    for variant, n, g in (("afa_full", 2, 0.0), ("afa_full", 3, 0.0), ("afa_full", 4, 0.3), ("afa", 3, 0.2)):
        compare("%s IRLS n = %d, momentum %.1f, mix" % (variant, n, g), attention_variant=variant, afa_mix=True,
                afa_irls_iterations=n, afa_irls_momentum=g, t_equal=False)
    compare("afa_full IRLS n = 2 without mix, window 4", afa_irls_iterations=2, attention_window=4, t_equal=False)
    worked_example()
    momentum_hand_values()
    irls_is_tied_layers()
    reductions()
    gradients()
    errors()
    if FAILED:
        print("FAILED: %d check(s): %s" % (len(FAILED), "; ".join(FAILED)))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
