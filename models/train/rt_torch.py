"""PyTorch module of RT-RFA: directional Robust Filter Attention on the sphere (docs/variant-rt.md).

`MultiheadRT` has the constructor and the forward contract of rfa_torch.MultiheadIsotropicRFA
(returns `(out, attn_or_None)`; `t_shift` is ignored), so `RFATransformerBlock` uses it when
`args.attention_variant == "rt"`. Parameter names, shapes and their physical meaning are those of
docs/variant-rt.md section 13 ("In a model file"); the forward pass is sections 3.1-3.4, per head
(the per-head norm scope), in the dtype of the input:

    m_j^2 = |V_j|^2 (over the head's D complex = 2D reals);  qh, kh, vh = x / max(|x|, 1e-12)
    l = |t_i - t_j| (decay, covariance), t_i - t_j signed (rotation); causal or not
    S(l) = s2t (1 - E^2) + eta2 E^2 + gamma2            (rt_covariance = "stationary")
         = sigma2 phi(mu, l) + eta2 E^2 + gamma2        ("ou_rate"), phi = -expm1(-2 mu l) / (2 mu), l at mu = 0
    a_i = S(0) / (m_i^2 + eps)                          (0 where S(0) = 0), eps = rt_eps
    log P = -logaddexp(log(a_i + tau_th2), log S(l) - log(m_j^2 + eps) + 2 mu l)
    R2 = |qh_i - e^{i omega (t_i - t_j)} kh_j|^2,  d2 = P R2
    L = log P - kappa log(1 + d2 / nu)  (rt_kernel = "student_t"),  L = log P - d2  ("gaussian")
    A = softmax_j(beta_s L) over j <= i (causal; a row without a finite logit gives zeros)
    ubar_i = sum_j A_ij e^{i omega (t_i - t_j)} vh_j
    T_i = ubar_i - Re(vh_i^H ubar_i) / |vh_i|^2 vh_i    (0 coefficient where vh_i = 0)
    out = W_o([Re T ; Im T])   (half-split, as RFA)

Every decay and covariance is formed from the pair's own lag ([B, H, N, N] tensors; no D axis). The
rotations of the score and of the aggregation are done as section 3.3 allows a kernel to (and as
rfa_torch does): in the stationary frame, Q~ = qh e^{-i omega t_i}, K~ = kh e^{-i omega t_j} (t counted
from each sequence's first timestamp),
c = Re(Q~^H K~), ubar = e^{+i omega t_i} sum_j A_ij V~_j, which is the same number as the per-pair
rotation by e^{i omega (t_i - t_j)} up to rounding (check_rt.py compares against a per-pair loop),
and keeps training memory at O(B H N^2) + O(B H N D). R2 is formed as |qh|^2 + |kh|^2 - 2c (the
definition expanded, equal to 2 - 2c for unit vectors, and to the definition for a zero direction),
clamped at 0 against rounding.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from rfa_torch import causal_mask, init_complex_projections, init_variant_layer, log_linear_decays

RT_COVARIANCES = ("stationary", "ou_rate")
RT_KERNELS = ("student_t", "gaussian")
EPS_N = 1e-12          # unit normalisation x / max(|x|, eps_n) (section 3.1)
TAU_FLOOR = 1e-6       # tau_th2 = softplus(raw) + 1e-6 (section 13)

# Initialisation (ours; the paper gives none). Physical values; the raw parameters are their
# softplus inverses. Process noise small against the measurement noise (a direction is mostly
# trusted to persist), key noise eta2 = 1, query noise gamma2 = 0.25 (smaller: the query term also
# carries eta2 through S(0)), angular noise floor 0.01 (P <= 100), Student-t nu raw 4 and beta_s raw
# 1 (softplus(1) = 1.31), as docs/variant-rt.md section 4.
_SV_INIT = 0.1        # s2t (stationary) or sigma2 (ou_rate)
_ETA2_INIT = 1.0
_GAMMA2_INIT = 0.25
_TAU_TH2_INIT = 0.01
_NU_RAW_INIT = 4.0
_BETA_RAW_INIT = 1.0
_MU_FRAC_CLAMP = 1e-4  # mu / s kept in [1e-4, 1 - 1e-4] at init (the sigmoid cannot reach 0 or s)


def _inv_softplus(x):
    """Exact softplus inverse of a positive float (raw such that F.softplus(raw) = x)."""
    return x + math.log(-math.expm1(-x))


class MultiheadRT(nn.Module):
    def __init__(self, args, n_heads=None, input_dim=None, d_k_total=None, d_v_total=None):
        super().__init__()
        a = args
        cov = getattr(a, "rt_covariance", "stationary")
        ker = getattr(a, "rt_kernel", "student_t")

        def check(D):  # RT-RFA's own fields (section 13)
            if cov not in RT_COVARIANCES:
                raise ValueError("rt_covariance: expected one of %s, found %r" % (RT_COVARIANCES, cov))
            if ker not in RT_KERNELS:
                raise ValueError("rt_kernel: expected one of %s, found %r" % (RT_KERNELS, ker))
            if not getattr(a, "rt_eps", 1e-6) >= 0:
                raise ValueError("rt_eps must be >= 0")

        # Sizes, the refused RFA-only features, the projections and RFA's frequencies.
        z = init_variant_layer(self, a, "RT", "RT-RFA's queries, keys and values share the D complex dims",
                               n_heads, input_dim, d_k_total, d_v_total, check)
        H, sc_mu = z.H, z.sc_mu

        # Radial decay (always learned): mu = s sig(rt_mu_v). Initialisation: the physical per-head
        # decays RFA's module would use with the same arguments (section 4: "as RFA's decay"): the
        # SC-RoPE bank's mu = damping * (the head's fastest omega) with zero_frac heads at 0 (M2), or
        # the log-linear decays over [0.01, 0.95] (use_log_linear_decay), else the SC bank's values;
        # in RFA's time unit (times max_fixed_decay / (seq_len - 1) with scale_decay_by_time_interval).
        # Mapped through the sigmoid scale s, mu / s clamped to [1e-4, 1 - 1e-4] (RFA's zero heads
        # become slow heads, mu = 1e-4 s).
        mu0 = sc_mu
        if a.use_log_linear_decay and not a.use_SC_RoPE:
            mu0 = log_linear_decays(H, 0.01, 0.95, a.zero_frac)
        if a.scale_decay_by_time_interval:
            mu0 = mu0 * a.max_fixed_decay / (a.seq_len - 1)
        frac = torch.clamp(mu0 / self.decay_scale(), _MU_FRAC_CLAMP, 1 - _MU_FRAC_CLAMP)
        self.rt_mu_v = nn.Parameter(torch.log(frac) - torch.log1p(-frac))

        full = lambda x: nn.Parameter(torch.full((H,), float(x)))
        self.rt_sigma_v = full(_inv_softplus(_SV_INIT))
        self.rt_eta_v = full(_inv_softplus(_ETA2_INIT))
        self.rt_gamma_v = full(_inv_softplus(_GAMMA2_INIT))
        self.rt_tau_th_v = full(_inv_softplus(_TAU_TH2_INIT - TAU_FLOOR))
        self.rt_nu_v = full(_NU_RAW_INIT)
        self.rt_beta_v = full(_BETA_RAW_INIT)

        # Projections: RFA's initialisation.
        init_complex_projections(self, z.d_e, z.dk_tot, z.dv_tot)

    # -- physical parameters (docs/variant-rt.md section 13) ------------------------------
    def decay_scale(self):
        a = self.args
        return a.max_learned_decay / (a.seq_len - 1) if a.scale_decay_by_time_interval else a.max_learned_decay

    def physical(self):
        """Per head ([H]; omega [H, D]) the physical values of the stored raw parameters."""
        a = self.args
        D = self.d_k_head
        w = self.omega_v
        if a.use_complex_conj_constraint:
            w = torch.stack([w, -w], dim=-1).reshape(w.shape[0], -1)
        sv = F.softplus(self.rt_sigma_v)          # s2t (stationary) or sigma2 (ou_rate)
        eta2 = F.softplus(self.rt_eta_v)
        if a.zero_process_noise:
            sv = sv * 0
        if a.zero_key_measurement_noise:
            eta2 = eta2 * 0
        nu = D * F.softplus(self.rt_nu_v) + 2.0
        return dict(mu=self.decay_scale() * torch.sigmoid(self.rt_mu_v), omega=a.omega_rescale * w, sv=sv,
                    eta2=eta2, gamma2=F.softplus(self.rt_gamma_v),
                    tau_th2=F.softplus(self.rt_tau_th_v) + TAU_FLOOR, nu=nu, kappa=(nu + D) / D,
                    beta=F.softplus(self.rt_beta_v))

    def cov(self, p, lag):
        """S(l) at lags lag [.., 1, N, N] (>= 0) -> [.., H, N, N] (section 3.2, mu_t = mu)."""
        hv = lambda x: x.view(-1, 1, 1)
        mu = hv(p["mu"])
        x = -2.0 * mu * lag
        one_m_E2 = -torch.expm1(x)                               # 1 - E^2, exact at small mu l
        meas = hv(p["eta2"]) * torch.exp(x) + hv(p["gamma2"])
        if getattr(self.args, "rt_covariance", "stationary") == "stationary":
            return hv(p["sv"]) * one_m_E2 + meas
        zero = mu == 0                                           # phi = l only at mu == 0 (decision 5)
        mu_safe = torch.where(zero, torch.ones_like(mu), mu)     # no inf/NaN reaches the gradient
        phi = torch.where(zero, lag, one_m_E2 / (2.0 * mu_safe))
        return hv(p["sv"]) * phi + meas

    def forward(self, Z_q, Z_k=None, Z_v=None, t_measure=None, t_shift=None, causal=True,
                return_attn=False):
        # t_shift is ignored: RT-RFA has no lag shift (section 7).
        a = self.args
        Z_k = Z_q if Z_k is None else Z_k
        Z_v = Z_q if Z_v is None else Z_v
        B, N, _ = Z_q.shape
        H, D = self.n_heads, self.d_k_head
        dev, dtype = Z_q.device, Z_q.dtype
        eps = float(getattr(a, "rt_eps", 1e-6))

        if a.t_equal or t_measure is None:
            t = torch.arange(N, device=dev, dtype=dtype).unsqueeze(0)
        else:
            t = t_measure.to(dtype)
            if t.dim() == 1:
                t = t.unsqueeze(0)
            if causal and N > 1 and bool((t[:, 1:] < t[:, :-1]).any()):
                raise ValueError("t_measure: decreasing timestamps in a causal RT layer")
        p = self.physical()
        hv = lambda x: x.view(1, H, 1, 1)

        def heads(z, dtot):  # -> re, im [B, H, N, D]
            z = z.view(B, N, 2, H, dtot // H)
            return z[:, :, 0].transpose(1, 2), z[:, :, 1].transpose(1, 2)

        def unit(re, im):    # x / max(|x|, eps_n), and |x|^2   (sqrt of a clamped square: gradient-safe at 0)
            n2 = (re * re + im * im).sum(-1, keepdim=True)
            inv = torch.rsqrt(torch.clamp(n2, min=EPS_N * EPS_N))
            return re * inv, im * inv, n2

        q_re, q_im, _ = unit(*heads(self.W_q(Z_q), self.d_k_total))
        k_re, k_im, _ = unit(*heads(self.W_k(Z_k), self.d_k_total))
        v_re, v_im, m2 = unit(*heads(self.W_v(Z_v), self.d_v_total))
        m2 = m2.squeeze(-1)                                                  # m_j^2 [B, H, N]
        log_m2 = torch.log(m2 + eps)

        # 3.2: covariance and directional precision, from each pair's lag
        rel = (t.unsqueeze(-1) - t.unsqueeze(-2)).unsqueeze(1)              # t_i - t_j [Bt, 1, N, N]
        lag = rel.abs()
        S = self.cov(p, lag)                                                 # [Bt, H, N, N]
        S0 = p["eta2"] + p["gamma2"]                                         # [H]
        S0v = S0.view(1, H, 1)
        a_q = torch.where(S0v == 0, torch.zeros_like(m2), S0v / (m2 + eps))  # a_i [B, H, N]
        u = torch.log(a_q + p["tau_th2"].view(1, H, 1)).unsqueeze(-1)        # [B, H, N, 1]
        v = torch.log(S) - log_m2.unsqueeze(-2) + 2.0 * hv(p["mu"]) * lag    # [B, H, N, N]
        log_P = -torch.logaddexp(u, v)

        # 3.3: score in the stationary frame, robust kernel
        # phases from t - t_0 (a per-sequence origin: the relative phases are unchanged, the first
        # position's rotation is exactly 1, so T_0 = 0 exactly, and large absolute times cost nothing)
        tr = t - t[:, :1]
        theta = tr.view(t.shape[0], 1, N, 1) * p["omega"].view(1, H, 1, D)   # [Bt, H, N, D]
        c, sn = torch.cos(theta), torch.sin(theta)
        rot_minus = lambda re, im: (re * c + im * sn, im * c - re * sn)      # z e^{-i theta}
        qr_re, qr_im = rot_minus(q_re, q_im)
        kr_re, kr_im = rot_minus(k_re, k_im)
        vr_re, vr_im = rot_minus(v_re, v_im)
        cross = qr_re @ kr_re.transpose(-1, -2) + qr_im @ kr_im.transpose(-1, -2)   # c_ij
        qn = (q_re * q_re + q_im * q_im).sum(-1).unsqueeze(-1)
        kn = (k_re * k_re + k_im * k_im).sum(-1).unsqueeze(-2)
        R2 = torch.clamp(qn + kn - 2.0 * cross, min=0.0)
        P = torch.exp(log_P)                                                 # <= 1 / tau_th2
        d2 = P * R2
        if getattr(a, "rt_kernel", "student_t") == "student_t":
            L = log_P - hv(p["kappa"]) * torch.log1p(d2 / hv(p["nu"]))
        else:
            L = log_P - d2
        logits = hv(p["beta"]) * L
        if causal:
            mask = causal_mask(a, N, N, dev)
            logits = logits.masked_fill(mask, float("-inf"))
        # softmax with a guard: a row without a finite logit gives zeros, never NaN (section 5)
        mx = logits.detach().amax(-1, keepdim=True)
        mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))
        e = torch.exp(logits - mx)
        den = e.sum(-1, keepdim=True)
        A = e / torch.where(den > 0, den, torch.ones_like(den))

        # 3.4: consensus (counter-rotated back to the query's frame) and tangent update
        ub_re, ub_im = A @ vr_re, A @ vr_im
        ub_re, ub_im = ub_re * c - ub_im * sn, ub_re * sn + ub_im * c        # e^{+i theta_i}
        vv = (v_re * v_re + v_im * v_im).sum(-1, keepdim=True)
        dot = (v_re * ub_re + v_im * ub_im).sum(-1, keepdim=True)            # Re(vh_i^H ubar_i)
        coef = torch.where(vv > 0, dot / torch.where(vv > 0, vv, torch.ones_like(vv)), torch.zeros_like(vv))
        T_re, T_im = ub_re - coef * v_re, ub_im - coef * v_im

        flat = lambda z: z.transpose(1, 2).reshape(B, N, H * D)
        out = self.W_o(torch.cat([flat(T_re), flat(T_im)], dim=-1))
        if return_attn:
            cplx = lambda re, im: torch.complex(re, im).transpose(1, 2)     # [B, N, H, D]
            return out, dict(A=A, logits=logits, log_P=log_P, d2=d2, m=torch.sqrt(m2).transpose(1, 2),
                             ubar=cplx(ub_re, ub_im), T=cplx(T_re, T_im))
        return out, None
