"""PyTorch module of Adaptive Filter Attention (AFA), memory-optimised form (docs/variant-afa.md).

`MultiheadAFA` has the constructor and the forward contract of rfa_torch.MultiheadIsotropicRFA
(returns `(out, attn_or_None)`), so `RFATransformerBlock` uses it when
`args.attention_variant == "afa"`. Parameter names, shapes and their physical meaning are those of
docs/variant-afa.md section 12 ("In a model file"); the forward pass is section 4 computed directly
from its definitions, per query-key pair and per channel, in the dtype of the input:

    l = t_i - t_j (causal; non-causal: |l| for decay and covariance, the signed l for the phase)
    T_k(l) = exp(-mu_k |l|) e^{i omega_k l}                      (formed from the lag, section 7)
    cov_k(l) = sigma2_k phi(mu_k, |l|) + eta2_k e^{-2 mu_k |l|} + gamma2_k
    v^C = sum_k cov_k | cov_c | 1 / (sum_k w_k / cov_k + b)     (afa_precision)
    R2_ij = sum_k |T_k(l) K_jk - Q_ik|^2
    logit = alpha^2 * -log(nu v^C + R2 + eps),  softmax over j <= i (the diagonal included)
    Zbar_ik = sum_j A_ij T_k(l_ij) V_jk     [mix: (1 - sig(delta_k)) V_ik + sig(delta_k) Zbar_ik]
    est_ik = exp(-mu_k h) e^{i omega_k h} Zbar_ik,  h = afa_pred_dt
    out = W_o([Re est ; Im est])   (half-split, as RFA)

Unitary switch (section 6): every mu is taken as 0 (transport, covariance, prediction), and each
channel of Q and K is projected to unit modulus (z / |z|, a zero channel stays zero).

The per-pair work is done per block of query rows (cache-sized tensors, channel-major
[B, H, D, rows, keys]); a causal block skips the keys after its last row. Training memory (the
autograd tensors of every block) is O(B H N^2 D): meant for the small models of models/train.

Full (anisotropic) AFA (docs/variant-afa-full.md, attention_variant="afa_full"): the same parameters,
per-channel weights and normalisers instead of one softmax:

    P_k(l) = 1 / (cov_k(l) + eps),  r_k = T_k(l) K_jk - Q_ik,  D2_ij = sum_k P_k |r_k|^2
    W_ij = (1 + D2_ij / nu)^(-alpha^2)              (the thesis's 1 / (1 + D2) at nu = alpha = 1)
    Q_k,ij = W_ij P_k(l_ij) / sum_{j'} W_ij' P_k(l_ij'),   Zbar_ik = sum_j Q_k,ij T_k(l_ij) V_jk

Tied iterations (IRLS, afa_irls_iterations = n >= 1, optional afa_irls_momentum g), either form:
z1 = V, z2 = mix(z1, AFA(Q, K, V)), z_{k+1} = mix(z_k, AFA(z_k, z_k, z_k)) + g (z_k - z_{k-1}) for
k = 2..n, then the prediction of z_{n+1}; mix(a, b) = (1 - gate) a + gate b, gate = sigmoid(delta_k)
with afa_mix, else 1.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from rfa_torch import causal_mask, init_complex_projections, init_variant_layer, inv_softplus

AFA_PRECISIONS = ("channel_sum", "one_channel", "weighted")
AFA_VARIANTS = ("afa", "afa_full")

# Decay range of the initialisation: RFA's log-linear per-head decays (rfa_torch.log_linear_decays),
# spread here over every conjugate pair of every head.
_MU_INIT_LO, _MU_INIT_HI = 0.01, 0.95
# Initial query measurement noise gamma2 (the thesis has none; softplus cannot reach 0 and RFA's
# covariance carries a constant 0.01 as well) and the weighted source's initial bias b.
_GAMMA2_INIT = 0.01
_WEIGHT_BIAS_INIT = 0.01


def _unit(re, im):
    """Each complex channel projected to unit modulus; zero stays zero (zero gradient there)."""
    m2 = re * re + im * im
    nz = m2 > 0
    inv = torch.where(nz, torch.rsqrt(torch.where(nz, m2, torch.ones_like(m2))), torch.zeros_like(m2))
    return re * inv, im * inv


class MultiheadAFA(nn.Module):
    BLOCK_ELEMS = 1 << 18   # per-pair elements per block of query rows (see forward); 1 MiB in float32

    def __init__(self, args, n_heads=None, input_dim=None, d_k_total=None, d_v_total=None):
        super().__init__()
        a = args
        prec = getattr(a, "afa_precision", "channel_sum")

        def check(D):  # AFA's own fields (section 12), once the sizes are known
            if prec not in AFA_PRECISIONS:
                raise ValueError("afa_precision: expected one of %s, found %r" % (AFA_PRECISIONS, prec))
            c = getattr(a, "afa_precision_channel", 0)
            if prec == "one_channel" and not 0 <= c < D:
                raise ValueError("afa_precision_channel: %d not in [0, %d)" % (c, D))
            if getattr(a, "afa_eps", 1e-5) < 0:
                raise ValueError("afa_eps must be >= 0")
            if getattr(a, "afa_pred_dt", 1.0) < 0:
                raise ValueError("afa_pred_dt must be >= 0")
            if getattr(a, "attention_variant", "afa") == "afa_full" and prec != "channel_sum":
                raise ValueError("afa_precision: the full form has per-channel precisions (found %r)" % prec)
            n_it = getattr(a, "afa_irls_iterations", 1)
            if int(n_it) != n_it or n_it < 1:
                raise ValueError("afa_irls_iterations must be an integer >= 1, found %r" % (n_it,))
            if not 0 <= getattr(a, "afa_irls_momentum", 0.0) < 1:
                raise ValueError("afa_irls_momentum must be in [0, 1)")

        # Sizes, the refused RFA-only features, the projections and RFA's frequencies.
        self.full = getattr(a, "attention_variant", "afa") == "afa_full"
        z = init_variant_layer(self, a, "AFA", "AFA's queries, keys and values share the D channels",
                               n_heads, input_dim, d_k_total, d_v_total, check)
        H, D, W, omega0 = z.H, z.D, z.W, z.omega0

        # Decays (always learned): mu = s sig(afa_mu_v). Initialisation: H*W physical decays
        # log-linear over RFA's range [0.01, 0.95] (as RFA's fixed decays: per time unit, times
        # max_fixed_decay/(seq_len-1) with scale_decay_by_time_interval), fastest first, dealt
        # round-robin to the heads (head h gets values h, h+H, h+2H, ...): every head spans the whole
        # range (each head multi-scale, the point of per-channel decays) and the heads are offset.
        # Within a head the faster rotations get the faster decays (a spectral coupling like
        # SC-RoPE's, whichever order the frequency bank has).
        s = self.decay_scale()
        n = H * W
        vals = torch.exp(torch.linspace(math.log(_MU_INIT_HI), math.log(_MU_INIT_LO), n)) if n > 1 \
            else torch.tensor([_MU_INIT_HI])
        per_head = vals.view(W, H).T                                          # [H, W], descending along W
        order = torch.sort(-omega0.abs(), dim=1, stable=True).indices          # fastest rotation first
        mu0 = torch.empty(H, W).scatter_(1, order, per_head)
        if a.scale_decay_by_time_interval:
            mu0 = mu0 * a.max_fixed_decay / (a.seq_len - 1)
        frac = torch.clamp(mu0 / s, 1e-4, 1 - 1e-4)
        self.afa_mu_v = nn.Parameter(torch.log(frac) - torch.log1p(-frac))
        mu_ch = self._pairs(s * torch.sigmoid(self.afa_mu_v.detach()))         # [H, D]

        # Noises near RFA's targets, per channel: the stationary level sigma2/(2 mu) of every channel
        # is target_ss_process_var (RFA's rule for its per-head sigma), the key measurement noise
        # eta2 is target_measurement_var; with the default channel_sum the score's covariance is then
        # about D times a channel's, the scale of R2 (a sum over D channels), so nu ~ 1.
        self.afa_sigma_v = nn.Parameter(inv_softplus(2 * mu_ch * a.target_ss_process_var + a.sigma_sq_v_floor))
        self.afa_eta_v = nn.Parameter(inv_softplus(torch.full((H, D), float(a.target_measurement_var))))
        self.afa_gamma_v = nn.Parameter(inv_softplus(torch.full((H, D), _GAMMA2_INIT)))
        self.afa_nu_v = nn.Parameter(inv_softplus(torch.ones(H)))             # nu = 1
        self.afa_alpha_v = nn.Parameter(torch.ones(H))                        # alpha = 1
        if getattr(a, "afa_mix", False):
            self.afa_delta_v = nn.Parameter(torch.zeros(H, D))                # gate 0.5
        if prec == "weighted":
            self.afa_weight_v = nn.Parameter(inv_softplus(torch.ones(H, D)))   # w_k = 1
            self.afa_weight_bias_v = nn.Parameter(inv_softplus(torch.full((H,), _WEIGHT_BIAS_INIT)))

        # Projections: RFA's initialisation.
        init_complex_projections(self, z.d_e, z.dk_tot, z.dv_tot)

    # -- physical parameters (docs/variant-afa.md section 12) -----------------------------
    def decay_scale(self):
        a = self.args
        return a.max_learned_decay / (a.seq_len - 1) if a.scale_decay_by_time_interval else a.max_learned_decay

    def _pairs(self, x):
        """[H, W] -> [H, D]: with the conjugate constraint, channels 2m and 2m+1 share entry m."""
        if self.args.use_complex_conj_constraint:
            return torch.stack([x, x], dim=-1).reshape(x.shape[0], -1)
        return x

    def physical(self):
        """Per head and channel, the physical values of the stored raw parameters ([H, D] / [H])."""
        a = self.args
        mu = self._pairs(self.decay_scale() * torch.sigmoid(self.afa_mu_v))
        w = self.omega_v
        if a.use_complex_conj_constraint:
            w = torch.stack([w, -w], dim=-1).reshape(w.shape[0], -1)
        omega = a.omega_rescale * w
        sigma2 = F.softplus(self.afa_sigma_v)
        eta2 = F.softplus(self.afa_eta_v)
        if a.zero_process_noise:
            sigma2 = sigma2 * 0
        if a.zero_key_measurement_noise:
            eta2 = eta2 * 0
        p = dict(mu=mu, omega=omega, sigma2=sigma2, eta2=eta2, gamma2=F.softplus(self.afa_gamma_v),
                 nu=F.softplus(self.afa_nu_v), alpha=self.afa_alpha_v)
        if getattr(a, "afa_mix", False):
            p["delta"] = self.afa_delta_v
        if getattr(a, "afa_precision", "channel_sum") == "weighted":
            p["weight"] = F.softplus(self.afa_weight_v)
            p["weight_bias"] = F.softplus(self.afa_weight_bias_v)
        return p

    @staticmethod
    def channel_covariance(p, mu, alag):
        """cov_k(l) = sigma2_k phi(mu_k, l) + eta2_k e^{-2 mu_k l} + gamma2_k at |lags| alag.

        Channel-major: alag broadcasts as [Bt, 1, 1, N, N] (any trailing lag shape), the per-channel
        values as [1, H, D, 1, 1]. phi(mu, l) = -expm1(-2 mu l) / (2 mu), exact for every mu > 0 (no
        threshold on mu, section 7), and phi = l on channels where mu == 0 (torch.where on a safe
        divisor, so no inf/NaN reaches the gradient). Near mu -> 0 the autograd derivative of the
        closed form loses relative accuracy ~ eps / (mu l), but the raw parameter's gradient carries
        a factor dmu/draw ~ mu, so it stays bounded by ~ eps l."""
        H, D = mu.shape
        v = lambda x: x.view(1, H, D, 1, 1)
        zero = mu == 0
        if bool(zero.all()):                                     # unitary: Brownian, e^{-2 mu l} = 1
            return v(p["sigma2"]) * alag + v(p["eta2"] + p["gamma2"])
        mu_safe = torch.where(zero, torch.ones_like(mu), mu)
        em = torch.expm1(alag * v(-2.0 * mu_safe))               # e^{-2 mu l} - 1
        s2_phi = em * v(-p["sigma2"] / (2.0 * mu_safe))          # sigma2 phi
        if bool(zero.any()):
            s2_phi = torch.where(v(zero), v(p["sigma2"]) * alag, s2_phi)
            em = torch.where(v(zero), torch.zeros_like(em), em)
        return s2_phi + (em + 1.0) * v(p["eta2"]) + v(p["gamma2"])

    def score_covariance(self, p, cov):
        """v^C [Bt, H, N, N] from the per-channel covariances cov [Bt, H, D, N, N] (afa_precision)."""
        a = self.args
        prec = getattr(a, "afa_precision", "channel_sum")
        if prec == "channel_sum":
            return cov.sum(2)
        if prec == "one_channel":
            return cov[:, :, getattr(a, "afa_precision_channel", 0)]
        H, D = p["weight"].shape
        prec_sum = (p["weight"].view(1, H, D, 1, 1) / cov).sum(2) + p["weight_bias"].view(1, H, 1, 1)
        return 1.0 / prec_sum

    def forward(self, Z_q, Z_k=None, Z_v=None, t_measure=None, t_shift=None, causal=True,
                return_attn=False):
        # t_shift is ignored: AFA's horizon is args.afa_pred_dt (docs/variant-afa.md section 12).
        # Per-pair tensors are channel-major, [B, H, D, N_query, N_key] (the pair plane innermost).
        a = self.args
        Z_k = Z_q if Z_k is None else Z_k
        Z_v = Z_q if Z_v is None else Z_v
        B, N, _ = Z_q.shape
        H, D = self.n_heads, self.d_k_head
        dev, dtype = Z_q.device, Z_q.dtype
        unitary = bool(getattr(a, "afa_unitary", False))

        if a.t_equal or t_measure is None:
            t = torch.arange(N, device=dev, dtype=dtype).unsqueeze(0)
        else:
            t = t_measure.to(dtype)
            if t.dim() == 1:
                t = t.unsqueeze(0)
            if causal and N > 1 and bool((t[:, 1:] < t[:, :-1]).any()):
                raise ValueError("t_measure: decreasing timestamps in a causal AFA layer")
        p = self.physical()
        mu = p["mu"] * 0 if unitary else p["mu"]

        def heads(z, dtot):  # -> [B, H, D, N]
            z = z.view(B, N, 2, H, dtot // H)
            return z[:, :, 0].permute(0, 2, 3, 1), z[:, :, 1].permute(0, 2, 3, 1)

        q_re, q_im = heads(self.W_q(Z_q), self.d_k_total)
        k_re, k_im = heads(self.W_k(Z_k), self.d_k_total)
        v_re, v_im = heads(self.W_v(Z_v), self.d_v_total)

        # Tied iterations (IRLS): z1 = V, z2 = mix(z1, AFA(Q, K, V)), then Q = K = V = z_k.
        n_it = int(getattr(a, "afa_irls_iterations", 1))
        g_mom = float(getattr(a, "afa_irls_momentum", 0.0))
        gate = torch.sigmoid(p["delta"]).view(1, H, D, 1) if getattr(a, "afa_mix", False) else None
        prev, first_attn = None, None
        z_re, z_im = v_re, v_im
        for it in range(n_it):
            qkv = (q_re, q_im, k_re, k_im, z_re, z_im) if it == 0 else (z_re, z_im, z_re, z_im, z_re, z_im)
            (a_re, a_im), attn = self._attend(p, mu, t, causal, qkv, return_attn and it == 0)
            if it == 0:
                first_attn = attn
            n_re = a_re if gate is None else (1 - gate) * z_re + gate * a_re
            n_im = a_im if gate is None else (1 - gate) * z_im + gate * a_im
            if it > 0 and g_mom != 0.0:                                      # momentum (A13)
                n_re = n_re + g_mom * (z_re - prev[0])
                n_im = n_im + g_mom * (z_im - prev[1])
            prev = (z_re, z_im)
            z_re, z_im = n_re, n_im

        # prediction over the horizon h: e^{lambda_k h} Zbar
        h = float(getattr(a, "afa_pred_dt", 1.0))
        ph_e = torch.exp(-mu * h).view(1, H, D, 1)
        ph_a = (p["omega"] * h).view(1, H, D, 1)
        pc, ps = ph_e * torch.cos(ph_a), ph_e * torch.sin(ph_a)
        est_re, est_im = pc * z_re - ps * z_im, pc * z_im + ps * z_re

        flat = lambda z: z.permute(0, 3, 1, 2).reshape(B, N, H * D)
        out = self.W_o(torch.cat([flat(est_re), flat(est_im)], dim=-1))
        if return_attn:
            return out, first_attn
        return out, None

    def _attend(self, p, mu, t, causal, qkv, return_attn):
        """One AFA pass over channel-form (q, k, v) [B,H,D,N] re/im: Zbar before the mix, and with
        return_attn the weights (memory-optimised: A, logits [B,H,N,N]; full: A = the reweighting map
        W [B,H,N,N], Qk = the per-channel weights [B,H,D,N,N])."""
        B, H, D, N = qkv[0].shape
        q_re, q_im, k_re, k_im, v_re, v_im = qkv
        if bool(getattr(self.args, "afa_unitary", False)):
            q_re, q_im = _unit(q_re, q_im)
            k_re, k_im = _unit(k_re, k_im)
        qkv = (q_re, q_im, k_re, k_im, v_re, v_im)
        # Blocks of query rows (each row's normalisation is its own), sized so that one per-pair tensor
        # stays near BLOCK_ELEMS elements (cache-sized); a causal block only reads the keys j < its end.
        rows = max(1, min(N, self.BLOCK_ELEMS // max(1, B * H * D * N)))
        rows_fn = self._rows_full if self.full else self._rows
        zs, As, Ls = [], [], []
        for i0 in range(0, N, rows):
            i1 = min(N, i0 + rows)
            z, A_blk, L_blk = rows_fn(p, mu, t, i0, i1, i1 if causal else N, causal, qkv)
            zs.append(z)
            if return_attn:
                As.append(F.pad(A_blk, (0, N - A_blk.shape[-1])))
                Ls.append(F.pad(L_blk, (0, N - L_blk.shape[-1]), value=0.0 if self.full else float("-inf")))
        z_re = torch.cat([z[0] for z in zs], dim=-1)                         # [B,H,D,N]
        z_im = torch.cat([z[1] for z in zs], dim=-1)
        if not return_attn:
            return (z_re, z_im), None
        if self.full:
            return (z_re, z_im), dict(A=torch.cat(Ls, dim=2), Qk=torch.cat(As, dim=3))
        return (z_re, z_im), dict(A=torch.cat(As, dim=2), logits=torch.cat(Ls, dim=2))

    def _rows_full(self, p, mu, t, i0, i1, nk, causal, qkv):
        """Full AFA: queries i0 <= i < i1 against keys j < nk: (Zbar re, im [B,H,D,rows]), the
        per-channel weights Q_k [B,H,D,rows,nk] and the reweighting map W [B,H,rows,nk]."""
        a = self.args
        H = self.n_heads
        lag, alag, (T_re, T_im), (r_re, r_im), (v_re, v_im) = self._pair_frame(p, mu, t, i0, i1, nk, qkv)
        eps = getattr(a, "afa_eps", 1e-5)
        P = 1.0 / (self.channel_covariance(p, mu, alag) + eps)               # [Bt,H,D,rows,keys]
        D2 = (P * torch.addcmul(r_re * r_re, r_im, r_im)).sum(2)            # [B,H,rows,keys]
        hv = lambda x: x.view(1, H, 1, 1)
        W = torch.exp(-(hv(p["alpha"]) ** 2) * torch.log1p(D2 / hv(p["nu"])))
        if causal:
            W = W.masked_fill(causal_mask(a, i1 - i0, nk, lag.device, i0), 0.0)
        WP = W.unsqueeze(2) * P                                              # [B,H,D,rows,keys]
        Qk = WP / WP.sum(-1, keepdim=True)
        return self._aggregate(Qk, T_re, T_im, v_re, v_im), Qk, W

    def _rows(self, p, mu, t, i0, i1, nk, causal, qkv):
        """Queries i0 <= i < i1 against keys j < nk: (Zbar re, im [B,H,D,rows]), A and logits [B,H,rows,nk].

        Per-pair tensors are channel-major, [B, H, D, rows, keys] (the pair plane innermost)."""
        a = self.args
        H = self.n_heads
        lag, alag, (T_re, T_im), (r_re, r_im), (v_re, v_im) = self._pair_frame(p, mu, t, i0, i1, nk, qkv)
        vC = self.score_covariance(p, self.channel_covariance(p, mu, alag))  # [Bt,H,rows,keys]
        R2 = torch.addcmul(r_re * r_re, r_im, r_im).sum(2)                   # [B,H,rows,keys]

        hv = lambda x: x.view(1, H, 1, 1)
        eps = getattr(a, "afa_eps", 1e-5)
        logits = -(hv(p["alpha"]) ** 2) * torch.log(hv(p["nu"]) * vC + R2 + eps)
        if causal:
            logits = logits.masked_fill(causal_mask(a, i1 - i0, nk, lag.device, i0), float("-inf"))
        A = torch.softmax(logits, dim=-1)

        # Zbar_ik = sum_j A_ij T_k(l_ij) V_jk
        return self._aggregate(A.unsqueeze(2), T_re, T_im, v_re, v_im), A, logits

    def _pair_frame(self, p, mu, t, i0, i1, nk, qkv):
        """Queries i0 <= i < i1 against keys j < nk, per pair and channel (channel-major, [B,H,D,rows,keys]):
        the lags t_i - t_j [Bt,1,1,rows,keys], their |l| (causal pairs: = lag; masked pairs: keeps the
        decay <= 1, finite), the transports T_k(l) = exp(-mu_k |l|) e^{i omega_k l} formed from the lag, the
        residuals r_k = T_k(l_ij) K_jk - Q_ik (re, im), and the values of the keys (re, im, [B,H,D,1,keys])."""
        H, D = self.n_heads, self.d_k_head
        q_re, q_im, k_re, k_im, v_re, v_im = qkv
        q_re, q_im = q_re[..., i0:i1], q_im[..., i0:i1]
        k_re, k_im, v_re, v_im = k_re[..., :nk], k_im[..., :nk], v_re[..., :nk], v_im[..., :nk]
        lag = (t[:, i0:i1].unsqueeze(-1) - t[:, :nk].unsqueeze(-2)).view(t.shape[0], 1, 1, i1 - i0, nk)
        alag = lag.abs()
        v = lambda x: x.view(1, H, D, 1, 1)
        ang = lag * v(p["omega"])
        T_re, T_im = torch.cos(ang), torch.sin(ang)
        if not bool((mu == 0).all()):
            e = torch.exp(alag * -v(mu))
            T_re, T_im = e * T_re, e * T_im
        kj_re, kj_im = k_re.unsqueeze(-2), k_im.unsqueeze(-2)                # [B,H,D,1,keys]
        r_re = torch.addcmul(torch.addcmul(-q_re.unsqueeze(-1), T_re, kj_re), T_im, kj_im, value=-1.0)
        r_im = torch.addcmul(torch.addcmul(-q_im.unsqueeze(-1), T_re, kj_im), T_im, kj_re)
        return lag, alag, (T_re, T_im), (r_re, r_im), (v_re.unsqueeze(-2), v_im.unsqueeze(-2))

    @staticmethod
    def _aggregate(w, T_re, T_im, vj_re, vj_im):
        """Zbar_ik = sum_j w_k,ij T_k(l_ij) V_jk (w [B,H,1 or D,rows,keys]): (re, im) [B,H,D,rows]."""
        z_re = (w * torch.addcmul(T_re * vj_re, T_im, vj_im, value=-1.0)).sum(-1)
        z_im = (w * torch.addcmul(T_re * vj_im, T_im, vj_re)).sum(-1)
        return z_re, z_im
