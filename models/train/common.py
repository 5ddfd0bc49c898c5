"""Shared training utilities: seeding, LR schedule, head summaries for MODEL.md."""
import math
import os
import random
import time

import numpy as np
import torch

from rfa_torch import MultiheadIsotropicRFA


def portable_cli(ns):
    """vars(ns) for metrics.json, with paths relative to the repository (no machine's absolute
    paths in the tree)."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = {}
    for k, v in vars(ns).items():
        if isinstance(v, str) and os.path.isabs(v):
            v = os.path.relpath(v, repo)
        out[k] = v
    return out


def seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def lr_at(step, total, peak, warmup_frac=0.05, final_frac=0.02):
    """Linear warm-up, then cosine decay to final_frac*peak."""
    w = max(1, int(total * warmup_frac))
    if step < w:
        return peak * (step + 1) / w
    p = (step - w) / max(1, total - w)
    return peak * (final_frac + (1 - final_frac) * 0.5 * (1 + math.cos(math.pi * p)))


def sde_clip_(model, value=1e-4):
    """Reference training trick: gradients of mu_/sigma_/eta_/gamma_ parameters clipped to 1e-4."""
    for n, p in model.named_parameters():
        if p.grad is not None and any(s in n.split(".")[-1] for s in ("mu_", "sigma_", "eta_", "gamma_")):
            p.grad.clamp_(-value, value)


def head_table(model):
    """Per-layer, per-head physical parameters and regime (docs/math.md §5), as markdown rows."""
    rows = []
    li = 0
    for name, m in model.named_modules():
        if not isinstance(m, MultiheadIsotropicRFA):
            continue
        with torch.no_grad():
            p = m.physical()
            shift = m.lag_shift(1)
            for h in range(m.n_heads):
                mu = float(p["mu"][h])
                om = p["omega"][h].abs()
                s2 = float(p["sigma_sq"][h])
                eta2 = float(p["eta_sq"][h])
                g2 = float(p["gamma_sq"][h])
                if abs(mu) < 1e-5:
                    s2t, alpha, regime = float("inf") if s2 > 0 else 0.0, float("nan"), "Brownian (mu=0)"
                    beta = float("nan")
                else:
                    s2t = s2 / (2 * mu)
                    alpha = eta2 - s2t
                    beta = g2 + s2t + 0.01
                    regime = "integrative (alpha>0)" if alpha > 0 else "diffusive (alpha<0)"
                sh = float(shift[h]) if torch.is_tensor(shift) else (shift if shift is not None else 0.0)
                rows.append(dict(layer=li, head=h, mu=mu, om_min=float(om.min()), om_max=float(om.max()),
                                 sigma2=s2, s2t=s2t, eta2=eta2, gamma2=g2, alpha=alpha, beta=beta,
                                 nu_over_d=float(p["nu"][h]) / m.d_k_head, kappa=float(p["kappa"][h]),
                                 tau=float(p["tau"][h]), shift=sh, regime=regime,
                                 half_life=(math.log(2) / mu if mu > 1e-12 else float("inf"))))
        li += 1
    return rows


def head_table_md(rows, time_unit="step"):
    hdr = ("| layer | head | mu (1/%s) | half-life (%ss) | omega band | sigma^2 | s2t=sigma^2/2mu | eta^2 | gamma^2 "
           "| alpha | nu/d | kappa | tau | lag shift | regime |\n" % (time_unit, time_unit))
    hdr += "|" + "---|" * 15 + "\n"
    f = lambda x: ("%.3g" % x)
    for r in rows:
        hdr += "| %d | %d | %s | %s | [%s, %s] | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
            r["layer"], r["head"], f(r["mu"]), f(r["half_life"]), f(r["om_min"]), f(r["om_max"]), f(r["sigma2"]),
            f(r["s2t"]), f(r["eta2"]), f(r["gamma2"]), f(r["alpha"]), f(r["nu_over_d"]), f(r["kappa"]),
            f(r["tau"]), f(r["shift"]), r["regime"])
    return hdr


def afa_head_table(model):
    """Per-layer, per-head summary of AFA layers (afa_torch.MultiheadAFA), whose parameters are per
    channel: ranges over the head's channels of the decay, frequency, noises and stationary level
    sigma2/(2 mu) (docs/variant-afa.md section 11), and the per-head nu and alpha. [] for RFA models
    (and head_table gives [] for AFA models)."""
    from afa_torch import MultiheadAFA
    rows = []
    li = 0
    for name, m in model.named_modules():
        if not isinstance(m, MultiheadAFA):
            continue
        with torch.no_grad():
            p = m.physical()
            unitary = bool(getattr(m.args, "afa_unitary", False))
            for h in range(m.n_heads):
                mu = p["mu"][h].double() * (0 if unitary else 1)
                s2 = p["sigma2"][h].double()
                level = torch.where(mu > 0, s2 / (2 * mu.clamp(min=1e-300)), torch.full_like(mu, float("inf")))
                rng = lambda x: (float(x.min()), float(x.max()))
                r = dict(layer=li, head=h, mu=rng(mu), omega=rng(p["omega"][h].abs()), sigma2=rng(s2),
                         level=rng(level), eta2=rng(p["eta2"][h]), gamma2=rng(p["gamma2"][h]),
                         nu=float(p["nu"][h]), alpha=float(p["alpha"][h]))
                if "delta" in p:
                    r["gate"] = rng(torch.sigmoid(p["delta"][h]))
                if "weight" in p:
                    r["weight"] = rng(p["weight"][h])
                    r["weight_bias"] = float(p["weight_bias"][h])
                rows.append(r)
        li += 1
    return rows


def afa_eigenvalues(model):
    """The learned eigenvalues lambda_k = -mu_k + i omega_k of every AFA layer, head and channel (per time
    unit of the timestamps: per sample on the spiral), as [layer][head][channel] = [Re, Im]; [] for
    other models. The spiral's true ones are -0.01 +- 0.1i per sample (spiral.py's A at dt = 0.1)."""
    from afa_torch import MultiheadAFA
    out = []
    for m in model.modules():
        if isinstance(m, MultiheadAFA):
            with torch.no_grad():
                p = m.physical()
                mu = p["mu"].double() * (0 if getattr(m.args, "afa_unitary", False) else 1)
                out.append([[[-float(mu[h, k]), float(p["omega"][h, k])] for k in range(m.d_k_head)]
                            for h in range(m.n_heads)])
    return out


def afa_head_table_md(rows, time_unit="step"):
    keys = ["mu", "omega", "sigma2", "level", "eta2", "gamma2"] + [k for k in ("gate", "weight") if rows and k in rows[0]]
    hdr = "| layer | head | " + " | ".join(
        {"mu": "mu (1/%s)" % time_unit, "level": "sigma^2/2mu"}.get(k, k) for k in keys) + " | nu | alpha |\n"
    hdr += "|" + "---|" * (len(keys) + 4) + "\n"
    f = lambda x: "%.3g" % x
    for r in rows:
        hdr += "| %d | %d | " % (r["layer"], r["head"]) + " | ".join(
            "%s..%s" % (f(r[k][0]), f(r[k][1])) for k in keys) + " | %s | %s |\n" % (f(r["nu"]), f(r["alpha"]))
    return hdr


class Timer:
    def __init__(self):
        self.t0 = time.time()

    def __call__(self):
        return time.time() - self.t0


def rt_head_table(model):
    """Per-layer, per-head summary of RT-RFA layers (rt_torch.MultiheadRT, docs/variant-rt.md): decay
    mu, frequency band, the covariance's stationary level sv, eta^2, gamma^2 (floor), tau_th^2, nu/d,
    kappa and beta. [] for models with no RT layer."""
    from rt_torch import MultiheadRT
    rows = []
    li = 0
    for name, m in model.named_modules():
        if not isinstance(m, MultiheadRT):
            continue
        with torch.no_grad():
            p = m.physical()
            for h in range(m.n_heads):
                mu = float(p["mu"][h])
                om = p["omega"][h].abs()
                rows.append(dict(layer=li, head=h, mu=mu, om_min=float(om.min()), om_max=float(om.max()),
                                 sv=float(p["sv"][h]), eta2=float(p["eta2"][h]), gamma2=float(p["gamma2"][h]),
                                 tau_th2=float(p["tau_th2"][h]), nu_over_d=float(p["nu"][h]) / m.d_k_head,
                                 kappa=float(p["kappa"][h]), beta=float(p["beta"][h]),
                                 half_life=(math.log(2) / mu if mu > 1e-12 else float("inf"))))
        li += 1
    return rows


def rt_head_table_md(rows, time_unit="step"):
    hdr = ("| layer | head | mu (1/%s) | half-life (%ss) | omega band | sv | eta^2 | gamma^2 | tau_th^2 "
           "| nu/d | kappa | beta |\n" % (time_unit, time_unit))
    hdr += "|" + "---|" * 12 + "\n"
    f = lambda x: ("%.3g" % x)
    for r in rows:
        hdr += "| %d | %d | %s | %s | [%s, %s] | %s | %s | %s | %s | %s | %s | %s |\n" % (
            r["layer"], r["head"], f(r["mu"]), f(r["half_life"]), f(r["om_min"]), f(r["om_max"]), f(r["sv"]),
            f(r["eta2"]), f(r["gamma2"]), f(r["tau_th2"]), f(r["nu_over_d"]), f(r["kappa"]), f(r["beta"]))
    return hdr
