"""Independent PyTorch implementation of the reference isotropic RFA forward pass.

Written from docs/reference-code.md (the specification of what the author's
`MultiheadIsotropicRFA` computes). Module/parameter names mirror the reference so that
`state_dict()` keys are identical (minus the derived buffers t_measure/abs_idx/causal_mask,
which this implementation does not keep).

Tensor layout inside the attention: complex numbers are kept as separate real/imag tensors of
shape [B, H, N, D] (D = complex dims per head). Attention matrices are [B, H, N, N].
"""
import math
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F

# ----------------------------------------------------------------------------------------
# Arguments (reference namespace; defaults = docs/reference-code.md §9.1 common settings)
# ----------------------------------------------------------------------------------------

REFERENCE_DEFAULTS = dict(
    batch_size=16, vocab_size=50257, d_e=256, seq_len=512, n_heads=8, num_blocks=6,
    d_k_total=256, d_v_total=256,
    max_learned_decay=5.0, max_fixed_decay=5.0, max_exponent=0, min_exponent=-10, epsilon=1e-5,
    compute_metadata=False, compute_pulled_forward_estimates=False,
    causal=True, t_equal=True, sep_params=False, lambda_real_zero=False,
    use_full_residual_norm=1, use_robust_weight=True, additive_bias_type=1,
    multiplicative_bias_type=1,
    t_shift=None, learn_t_shift=True, learn_rotations=False, learn_decay=False,
    rotate_values=True,
    zero_process_noise=False, zero_key_measurement_noise=False,
    use_total_precision_gate=1, use_inner_residual=False, use_outer_residual=True,
    use_complex_input_norm=0, use_complex_output_norm=False, use_real_input_norm=True,
    use_real_output_norm=True,
    add_gaussian_noise=False, use_complex_conj_constraint=True, use_colored_prior=False,
    scale_decay_by_time_interval=True, zero_rotations=False, use_ss_process_noise=False,
    damping=0.05, omega_rescale=1.0,
    use_rope=True, use_alibi=False, use_SC_RoPE=False, use_log_linear_decay=True,
    zero_frac=0.25, target_ss_process_var=0.1, target_measurement_var=1.0, sigma_sq_v_floor=0,
)

# Overrides per paper model (docs/reference-code.md §9.2)
MODEL_OVERRIDES = {
    "M1": dict(use_log_linear_decay=False, damping=0.05),
    "M2": dict(use_SC_RoPE=True, scale_decay_by_time_interval=False, damping=0.05,
               use_log_linear_decay=False),
}
MODEL_OVERRIDES["M2.1"] = dict(MODEL_OVERRIDES["M2"], use_robust_weight=False)
MODEL_OVERRIDES["M2.6"] = dict(
    MODEL_OVERRIDES["M2"], damping=0.0, use_robust_weight=False, use_full_residual_norm=0,
    lambda_real_zero=True, zero_process_noise=True, zero_key_measurement_noise=True,
    additive_bias_type=0, multiplicative_bias_type=0, max_fixed_decay=0.0)

# Our own keys (not in the reference namespace) that the runtime format also stores in args.
OUR_DEFAULTS = dict(hidden_dim=None, d_in=None, norm="layer_norm", norm_eps=1e-5, tokenizer=None,
                    phase_source="omega_t", step_seed=0, stationary_values=True,
                    attention_window=0)  # W > 0: each query attends to its last W keys (causal)
# Adaptive Filter Attention (docs/variant-afa.md section 12; module: afa_torch.MultiheadAFA). With
# attention_variant="afa" every attention layer of the model is AFA; the other keys are AFA's.
AFA_DEFAULTS = dict(attention_variant="rfa", afa_precision="channel_sum", afa_precision_channel=0,
                    afa_unitary=False, afa_mix=False, afa_eps=1e-5, afa_pred_dt=1.0,
                    afa_irls_iterations=1, afa_irls_momentum=0.0)
OUR_DEFAULTS.update(AFA_DEFAULTS)
# RT-RFA (docs/variant-rt.md section 13; module: rt_torch.MultiheadRT), with attention_variant="rt".
RT_DEFAULTS = dict(rt_covariance="stationary", rt_kernel="student_t", rt_eps=1e-6)
OUR_DEFAULTS.update(RT_DEFAULTS)


def make_args(model="M2", **kw):
    d = dict(REFERENCE_DEFAULTS)
    d.update(OUR_DEFAULTS)
    if model is not None:
        d.update(MODEL_OVERRIDES[model])
    d.update(kw)
    return SimpleNamespace(**d)


# ----------------------------------------------------------------------------------------
# Initialisation helpers (re-derived from the spec, docs/reference-code.md §3.5)
# ----------------------------------------------------------------------------------------

def inv_softplus(x):
    x = torch.as_tensor(x, dtype=torch.float32)
    return torch.log(torch.expm1(x) + 1e-6)


def complex_weight_init(d_in, d_out):
    """Magnitude N(0, sqrt(2/(d_in+d_out))), uniform phase. Returns (real, imag) [d_in, d_out]."""
    scale = math.sqrt(2.0 / (d_in + d_out))
    mag = scale * torch.randn(d_in, d_out)
    ph = 2 * math.pi * torch.rand(d_in, d_out)
    return mag * torch.cos(ph), mag * torch.sin(ph)


def rope_freqs(n_heads, n_freq, base=10000.0):
    w = 1.0 / (base ** (torch.arange(n_freq).float() / n_freq))
    return w.repeat(n_heads).view(n_heads, n_freq)


def sc_rope_freqs(n_heads, n_freq, b, zero_frac, base=10000.0):
    """Spectrally coupled bank: one master bank, slow->fast, sharded over heads; mu = b*max omega."""
    m = n_heads * n_freq
    master = 1.0 / (base ** (torch.arange(m).float() / m))
    shards = torch.flip(master, dims=[0]).reshape(n_heads, n_freq)
    mu = b * shards[:, -1].clone()
    n_zero = int(n_heads * zero_frac)
    if n_zero > 0:
        mu[:n_zero] = 0.0
    return shards, mu


def log_linear_decays(n_heads, lo=0.01, hi=0.95, zero_frac=0.25):
    n_zero = int(n_heads * zero_frac)
    dec = torch.exp(torch.linspace(math.log(lo), math.log(hi), n_heads - n_zero))
    return torch.cat([torch.zeros(n_zero), dec])


def causal_mask(a, rows, keys, dev, row0=0):
    """The masked (True) cells of a causal attention whose rows are the positions row0 .. row0+rows-1
    over keys 0 .. keys-1: keys after the row, and with args.attention_window = W > 0 the keys more
    than W - 1 positions before it (each query sees its last W keys, itself included), what a runtime
    session with that window computes."""
    i = torch.arange(row0, row0 + rows, device=dev).view(-1, 1)
    j = torch.arange(keys, device=dev).view(1, -1)
    mask = j > i
    W = int(getattr(a, "attention_window", 0) or 0)
    if W > 0:
        mask = mask | (j <= i - W)
    return mask


# ----------------------------------------------------------------------------------------
# Accumulated phases (ACC, docs/variant-acc.md): theta_i = wrap(sum_{s <= i} phi_s)
# ----------------------------------------------------------------------------------------

_M32 = 0xFFFFFFFF


def _murmur_word(h, k):
    # One 32-bit word of MurmurHash3_x86_32 on int64 tensors (every product masked to 32 bits;
    # int64 products wrap mod 2^64, which keeps their low 32 bits exact).
    rotl = lambda x, r: ((x << r) | (x >> (32 - r))) & _M32
    k = (k * 0xcc9e2d51) & _M32
    k = rotl(k, 15)
    k = (k * 0x1b873593) & _M32
    h = h ^ k
    h = rotl(h, 13)
    return (h * 5 + 0xe6546b64) & _M32


def acc_uniform(seed, layer, rows, positions, blocks):
    """The contract's counter-based uniform u(seed, layer, row, position, block) in [0, 1), float64.

    rows, positions, blocks: int64 tensors that broadcast together."""
    h = torch.full_like(rows * positions * blocks, seed & _M32)
    for w in (torch.full_like(h, layer & _M32), rows + 0 * h, positions + 0 * h, blocks + 0 * h):
        h = _murmur_word(h, w & _M32)
    h = h ^ 16
    h = h ^ (h >> 16)
    h = (h * 0x85ebca6b) & _M32
    h = h ^ (h >> 13)
    h = (h * 0xc2b2ae35) & _M32
    h = h ^ (h >> 16)
    return (h >> 8).to(torch.float64) * 2.0 ** -24


def accumulated_phase(kind, omega, B, N, seed, layer, device, table=None, ids=None):
    """theta [B, H, N, D] (float64; [B, 1, N, D] for learned steps, shared by the heads): the
    inclusive prefix of the steps, wrapped to [-pi, pi].

    kind: "accumulated_rope" (phi = omega), "accumulated_random" (phi = 2 omega u, one draw per
    (row, position, block) shared by the heads) or "accumulated_learned" (phi = table[ids[r, s]],
    table [V, D], ids [B, N] int64, not scaled by omega). omega [H, D] and table may carry gradients."""
    w = omega.to(torch.float64)
    H, D = w.shape
    if kind == "accumulated_learned":
        if table is None or ids is None:
            raise ValueError("accumulated_learned: the step table acc_phi and the token ids are both needed")
        if tuple(ids.shape) != (B, N):
            raise ValueError("accumulated_learned: ids has shape %s, expected [B, N] = [%d, %d]"
                             % (list(ids.shape), B, N))
        if table.dim() != 2 or table.shape[1] != D:
            raise ValueError("accumulated_learned: acc_phi has shape %s, expected [vocab, %d]" % (list(table.shape), D))
        phi = table.to(torch.float64)[ids.to(device=table.device, dtype=torch.long)].view(B, 1, N, D)
    elif kind == "accumulated_rope":
        phi = w.view(1, H, 1, D).expand(B, H, N, D)
    elif kind == "accumulated_random":
        ar = lambda n, shape: torch.arange(n, device=device, dtype=torch.int64).view(shape)
        u = acc_uniform(seed, layer, ar(B, (B, 1, 1)), ar(N, (1, N, 1)), ar(D, (1, 1, D)))  # [B, N, D]
        phi = 2.0 * w.view(1, H, 1, D) * u.view(B, 1, N, D)
    else:
        raise ValueError(f"phase_source {kind!r}")
    theta = torch.cumsum(phi, dim=2)
    return torch.remainder(theta + math.pi, 2 * math.pi) - math.pi


class RMSNorm(nn.Module):
    """Stand-in for torch.nn.RMSNorm (absent in torch 1.13): same key (`weight`)."""

    def __init__(self, dim, eps=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight


def make_norm(args, dim):
    if args.norm == "layer_norm":
        return nn.LayerNorm(dim, eps=args.norm_eps)
    if args.norm == "rms_norm":
        return RMSNorm(dim, eps=args.norm_eps)
    if args.norm in (None, "none"):
        return None
    raise ValueError(args.norm)


# ----------------------------------------------------------------------------------------
# The attention layer
# ----------------------------------------------------------------------------------------

def init_complex_projections(m, d_e, dk_tot, dv_tot):
    """The reference's initialisation of W_q, W_k, W_v (d_e -> 2 d_k, [Re; Im] rows) and W_o
    (2 d_v -> d_e), shared by the RFA, AFA and RT-RFA modules (same RNG draws in the same order)."""
    with torch.no_grad():
        for lin, din, dout in ((m.W_q, d_e, dk_tot), (m.W_k, d_e, dk_tot), (m.W_v, d_e, dv_tot)):
            re, im = complex_weight_init(din, dout)
            lin.weight.copy_(torch.cat([re.T, im.T], dim=0))
            lin.bias.zero_()
        re, im = complex_weight_init(dv_tot, d_e)
        m.W_o.weight.copy_(torch.cat([re.T, im.T], dim=1) / math.sqrt(2.0))
        m.W_o.bias.zero_()


def refuse_rfa_only_features(a, who):
    """What docs/variant-afa.md section 12 and docs/variant-rt.md section 13 refuse, naming the field."""
    if a.use_complex_input_norm:
        raise ValueError("use_complex_input_norm: %s layers have no complex norms" % who)
    if a.use_complex_output_norm:
        raise ValueError("use_complex_output_norm: %s layers have no complex norms" % who)
    if a.use_inner_residual:
        raise ValueError("use_inner_residual: %s layers have no confidence gate" % who)
    if getattr(a, "phase_source", "omega_t") != "omega_t":
        raise ValueError("phase_source: %s layers rotate by omega t only" % who)
    if not getattr(a, "stationary_values", True):
        raise ValueError("stationary_values: %s layers need stationary (rotated) values" % who)


def init_variant_layer(m, a, who, shared, n_heads, input_dim, d_k_total, d_v_total, check=None):
    """The set-up the AFA and RT-RFA modules share (afa_torch.MultiheadAFA, rt_torch.MultiheadRT),
    written once: the sizes (`shared` says how queries, keys and values share the head's D), the RFA-only features
    the layer refuses (refuse_rfa_only_features), the variant's own fields (`check(D)`, raising
    ValueError), the four projections (created here; the module initialises them with
    init_complex_projections once its own parameters exist, keeping the RNG draws in order) and
    RFA's frequency rule and initialisation (`omega_v`, a buffer unless learn_rotations).
    Returns the sizes and the frequency bank: H, D, W (frequencies per head), d_e, dk_tot, dv_tot,
    omega0 [H, W] and the SC-RoPE bank's decays sc_mu [H]."""
    m.args = a
    H = n_heads or a.n_heads
    d_e = input_dim or a.d_e
    dk_tot = d_k_total or a.d_k_total
    dv_tot = d_v_total or a.d_v_total
    if dk_tot != dv_tot:
        raise ValueError("d_k_total != d_v_total: " + shared)
    assert dk_tot % H == 0
    refuse_rfa_only_features(a, who)
    m.n_heads, m.d_e = H, d_e
    m.layer_index = 0
    D = dk_tot // H
    m.d_k_head = m.d_v_head = D
    m.d_k_total, m.d_v_total = dk_tot, dv_tot
    if a.use_complex_conj_constraint and D % 2:
        raise ValueError("use_complex_conj_constraint needs an even head dim (conjugate pairs)")
    if check is not None:
        check(D)

    m.W_q = nn.Linear(d_e, 2 * dk_tot)
    m.W_k = nn.Linear(d_e, 2 * dk_tot)
    m.W_v = nn.Linear(d_e, 2 * dv_tot)
    m.W_o = nn.Linear(2 * dv_tot, d_e)

    # Frequencies: exactly RFA's rule and initialisation (buffer unless learn_rotations).
    W = D // 2 if a.use_complex_conj_constraint else D
    sc_omega, sc_mu = sc_rope_freqs(H, W, a.damping, a.zero_frac)
    omega0 = sc_omega if a.use_SC_RoPE else rope_freqs(H, W)
    if a.zero_rotations:
        omega0 = torch.zeros_like(omega0)
    if a.learn_rotations:
        m.omega_v = nn.Parameter(omega0)
    else:
        m.register_buffer("omega_v", omega0)
    return SimpleNamespace(H=H, D=D, W=W, d_e=d_e, dk_tot=dk_tot, dv_tot=dv_tot, omega0=omega0, sc_mu=sc_mu)


class MultiheadIsotropicRFA(nn.Module):
    def __init__(self, args, n_heads=None, input_dim=None, d_k_total=None, d_v_total=None):
        super().__init__()
        a = args
        self.args = a
        H = n_heads or a.n_heads
        d_e = input_dim or a.d_e
        dk_tot = d_k_total or a.d_k_total
        dv_tot = d_v_total or a.d_v_total
        assert dk_tot % H == 0 and dv_tot % H == 0
        if dk_tot != dv_tot:
            raise NotImplementedError("reference ties omega/mu to the value head size; use d_k_total == d_v_total")
        for flag in ("sep_params", "use_colored_prior"):
            if getattr(a, flag):
                raise NotImplementedError(flag)
        if a.use_complex_input_norm or a.use_complex_output_norm:
            raise NotImplementedError("complex RMS norms")
        self.n_heads, self.d_e = H, d_e
        self.layer_index = 0  # the network numbers its blocks (random accumulated steps draw per layer)
        self.d_k_head, self.d_v_head = dk_tot // H, dv_tot // H
        self.d_k_total, self.d_v_total = dk_tot, dv_tot
        self.accepts_ids = True  # the block hands it the token ids (learned accumulated steps look them up)

        self.W_q = nn.Linear(d_e, 2 * dk_tot)
        self.W_k = nn.Linear(d_e, 2 * dk_tot)
        self.W_v = nn.Linear(d_e, 2 * dv_tot)
        self.W_o = nn.Linear(2 * dv_tot, d_e)

        n_freq = self.d_v_head // 2 if a.use_complex_conj_constraint else self.d_v_head
        sc_omega, mu0 = sc_rope_freqs(H, n_freq, a.damping, a.zero_frac)
        omega0 = sc_omega if a.use_SC_RoPE else rope_freqs(H, n_freq)
        if a.zero_rotations:
            omega0 = torch.zeros_like(omega0)
        if a.learn_rotations:
            self.omega_v = nn.Parameter(omega0)
        else:
            self.register_buffer("omega_v", omega0)
        if getattr(a, "phase_source", "omega_t") == "accumulated_learned":
            # ACC learned steps (docs/variant-acc.md, decisions 4 and 5): a per-layer table Phi [vocab, D]
            # shared by the heads, initialised to head 0's physical bank so that training starts from RoPE.
            if getattr(a, "vocab_size", None) is None:
                raise ValueError("phase_source \"accumulated_learned\" needs args.vocab_size (the steps are "
                                 "looked up by token id)")
            w0 = omega0[0]
            if a.use_complex_conj_constraint:
                w0 = torch.stack([w0, -w0], dim=-1).reshape(-1)
            self.acc_phi = nn.Parameter((a.omega_rescale * w0).repeat(int(a.vocab_size), 1))
        if a.use_log_linear_decay and not a.use_SC_RoPE:
            mu0 = log_linear_decays(H, 0.01, 0.95, a.zero_frac)
        if a.learn_decay:
            self.mu_v = nn.Parameter(torch.log(mu0 / (1.0 - mu0 + 1e-8)))
        else:
            self.register_buffer("mu_v", mu0)

        self.sigma_v = nn.Parameter(inv_softplus(2 * mu0 * a.target_ss_process_var + a.sigma_sq_v_floor))
        self.sigma_tilde_v = nn.Parameter(torch.ones(H) * a.target_ss_process_var)
        self.eta_v = nn.Parameter(torch.ones(H) * a.target_measurement_var)
        self.gamma_v = nn.Parameter(torch.ones(H) * a.target_measurement_var)
        self.tau_param = nn.Parameter(torch.ones(H))
        self.nu_param = nn.Parameter(torch.ones(H) * 4.0)
        if a.learn_t_shift:
            self.t_shift_param = nn.Parameter(torch.zeros(1, H))
        self.P_prior_log = nn.Parameter(torch.zeros(1, 1, H, 1, 1))
        self.P_scale_log = nn.Parameter(torch.zeros(1, 1, H, 1, 1) - 2.0)

        init_complex_projections(self, d_e, dk_tot, dv_tot)

    # -- physical per-head parameters ------------------------------------------------------
    def physical(self):
        a = self.args
        if a.scale_decay_by_time_interval:
            scale_r = (a.max_learned_decay if a.learn_decay else a.max_fixed_decay) / (a.seq_len - 1)
        else:
            scale_r = 1.0
        if a.learn_decay:
            mu = scale_r * torch.sigmoid(self.mu_v) + a.epsilon
        else:
            mu = scale_r * self.mu_v
        w = self.omega_v
        if a.use_complex_conj_constraint:
            w = torch.stack([w, -w], dim=-1).reshape(w.shape[0], -1)
        omega = a.omega_rescale * w                              # [H, D]
        eta_sq = F.softplus(self.eta_v) + a.epsilon
        gamma_sq = F.softplus(self.gamma_v) + a.epsilon
        sigma_sq = F.softplus(self.sigma_v)
        sigma_tilde_sq = F.softplus(self.sigma_tilde_v)
        if a.zero_process_noise:
            sigma_sq = sigma_sq * 0
            sigma_tilde_sq = sigma_tilde_sq * 0
        if a.zero_key_measurement_noise:
            eta_sq = eta_sq * 0
        d = self.d_k_head
        nu = d * F.softplus(self.nu_param) + 2.0 + a.epsilon
        kappa = (nu + d) / d
        tau = F.softplus(self.tau_param) + a.epsilon
        return dict(mu=mu, omega=omega, eta_sq=eta_sq, gamma_sq=gamma_sq, sigma_sq=sigma_sq,
                    sigma_tilde_sq=sigma_tilde_sq, nu=nu, kappa=kappa, tau=tau)

    def lag_shift(self, t_shift=None):
        """Per-head shift s_h ([H] tensor), a python scalar, or None (no shift)."""
        if self.args.learn_t_shift:
            return F.softplus(self.t_shift_param)[0]
        if t_shift is None or (not torch.is_tensor(t_shift) and t_shift == 0):
            return None
        return float(t_shift)

    def covariance(self, p, dt, e, E):
        """dt, e, E: [*, H, N, N] broadcastable; per-head params broadcast over dim -3."""
        a = self.args
        hv = lambda x: x.view(-1, 1, 1)
        mu, s2, st2, eta2, g2 = hv(p["mu"]), hv(p["sigma_sq"]), hv(p["sigma_tilde_sq"]), hv(p["eta_sq"]), hv(p["gamma_sq"])
        one_m_E2 = -torch.expm1(2 * e)
        if a.learn_decay:
            proc = st2 * one_m_E2 + s2 * dt
        elif a.use_ss_process_noise:
            small = torch.abs(mu) < 1e-5
            proc = torch.where(small, st2 * dt, st2 * one_m_E2)
        else:
            small = torch.abs(mu) < 1e-5
            denom = torch.where(small, torch.ones_like(mu), 2 * mu)
            proc = s2 * torch.where(small, dt, one_m_E2 / denom)
        return proc + eta2 * E * E + g2 + 0.01

    def forward(self, Z_q, Z_k=None, Z_v=None, t_measure=None, t_shift=None, causal=True,
                return_attn=False, ids=None):
        """ids: the token ids [B, N] (int64), needed by learned accumulated steps only."""
        a = self.args
        Z_k = Z_q if Z_k is None else Z_k
        Z_v = Z_q if Z_v is None else Z_v
        B, N, _ = Z_q.shape
        H, D = self.n_heads, self.d_k_head
        dev, dtype = Z_q.device, Z_q.dtype

        # time grid [Bt, N] (Bt = 1 or B)
        if a.t_equal or t_measure is None:
            t = torch.arange(N, device=dev, dtype=dtype).unsqueeze(0)
        else:
            t = t_measure.to(dtype)
            if t.dim() == 1:
                t = t.unsqueeze(0)
        lag = torch.abs(t.unsqueeze(-1) - t.unsqueeze(-2)).unsqueeze(1)   # [Bt,1,N,N]

        p = self.physical()
        s = self.lag_shift(t_shift)
        if s is None:
            dt = lag
        elif torch.is_tensor(s):
            dt = lag + s.view(1, H, 1, 1)
        else:
            dt = lag + s
        dt = dt.expand(-1, H, -1, -1) if dt.shape[1] == 1 else dt

        e = torch.clamp(-p["mu"].view(1, H, 1, 1) * dt, min=a.min_exponent, max=a.max_exponent)
        E = torch.exp(e)
        Vc = self.covariance(p, dt, e, E)                                  # [Bt,H,N,N]

        def heads(z, dtot):
            z = z.view(B, N, 2, H, dtot // H)
            return z[:, :, 0].transpose(1, 2), z[:, :, 1].transpose(1, 2)  # [B,H,N,D]

        q_re, q_im = heads(self.W_q(Z_q), self.d_k_total)
        k_re, k_im = heads(self.W_k(Z_k), self.d_k_total)
        v_re, v_im = heads(self.W_v(Z_v), self.d_v_total)

        phase = getattr(a, "phase_source", "omega_t")
        if phase == "omega_t":
            theta = t.view(t.shape[0], 1, N, 1) * p["omega"].view(1, H, 1, D)  # [Bt,H,N,D]
        elif phase == "accumulated_learned":  # ACC with learned steps Phi[token] (docs/variant-acc.md)
            if ids is None:
                raise ValueError("phase_source \"accumulated_learned\": this attention layer needs the token ids "
                                 "(forward(..., ids=[B, N] int64); LanguageModel passes them)")
            theta = accumulated_phase(phase, p["omega"], B, N, 0, self.layer_index, dev,
                                      table=self.acc_phi, ids=ids).to(dtype)  # [B,1,N,D]: shared by the heads
        else:  # ACC: per-token steps accumulated along the sequence (docs/variant-acc.md)
            theta = accumulated_phase(phase, p["omega"], B, N, getattr(a, "step_seed", 0), self.layer_index,
                                      dev).to(dtype)
        c, sn = torch.cos(theta), torch.sin(theta)
        stationary_values = getattr(a, "stationary_values", True)

        def rot_minus(re, im):   # z * e^{-i theta}
            return re * c + im * sn, im * c - re * sn

        qr_re, qr_im = rot_minus(q_re, q_im)
        kr_re, kr_im = rot_minus(k_re, k_im)
        vr_re, vr_im = rot_minus(v_re, v_im) if stationary_values else (v_re, v_im)

        cross = qr_re @ kr_re.transpose(-1, -2) + qr_im @ kr_im.transpose(-1, -2)  # [B,H,N,N]
        if a.use_full_residual_norm:
            qn = (qr_re ** 2 + qr_im ** 2).sum(-1).unsqueeze(-1)
            kn = (kr_re ** 2 + kr_im ** 2).sum(-1).unsqueeze(-2)
            R2 = qn + E * E * kn - 2 * E * cross
        else:
            R2 = -E * cross

        hv = lambda x: x.view(1, H, 1, 1)
        if a.additive_bias_type == 0:
            Bias = 0.0
        elif a.additive_bias_type == 1:
            Bias = -torch.log(Vc)
        elif a.additive_bias_type == 2:
            Bias = -(hv(p["sigma_sq"]) / (hv(p["eta_sq"]) + hv(p["gamma_sq"]))) * dt
        else:
            raise ValueError(a.additive_bias_type)
        if a.multiplicative_bias_type == 0:
            P = 1.0 / math.sqrt(D)
        elif a.multiplicative_bias_type == 1:
            P = 1.0 / (hv(p["nu"]) * Vc)
        elif a.multiplicative_bias_type == 2:
            P = 1.0 / (hv(p["sigma_sq"]) * dt + hv(p["eta_sq"]))
        else:
            raise ValueError(a.multiplicative_bias_type)

        if a.use_robust_weight:
            logden = torch.log(1 + P * R2)
            L = Bias - hv(p["kappa"]) * logden
            energy = Bias - logden
        else:
            L = Bias - P * R2
            energy = L
        logits = hv(p["tau"]) * L
        mask = None
        if causal:
            mask = causal_mask(a, N, N, dev)
            logits = logits.masked_fill(mask, float("-inf"))
        A_hat = torch.softmax(logits, dim=-1)
        A = A_hat * E
        est_re = A @ vr_re
        est_im = A @ vr_im
        if a.rotate_values and stationary_values:   # est * e^{+i theta_i}
            est_re, est_im = est_re * c - est_im * sn, est_re * sn + est_im * c

        if a.use_inner_residual and a.use_total_precision_gate == 1:
            en = energy if mask is None else energy.masked_fill(mask, float("-inf"))
            pml = torch.logsumexp(en, dim=-1).detach()                     # [B,H,N]
            nu_g = D * (F.softplus(self.nu_param) + 2.0 + a.epsilon)
            c_h = torch.log(nu_g - 2.0 + a.epsilon) - torch.log(nu_g + a.epsilon)
            g = torch.sigmoid(torch.exp(self.P_scale_log.view(1, H, 1)) * (pml + c_h.view(1, H, 1))
                              - self.P_prior_log.view(1, H, 1)).unsqueeze(-1)
            est_re = g * est_re + (1 - g) * v_re
            est_im = g * est_im + (1 - g) * v_im
        elif a.use_inner_residual and a.use_total_precision_gate == 2:
            raise NotImplementedError("use_total_precision_gate=2 crashes in the reference")

        if s is not None and phase == "omega_t":  # forward rotation by e^{+i omega s}, no decay (omega t clock only)
            if torch.is_tensor(s):
                ang = p["omega"] * s.view(H, 1)
            else:
                ang = p["omega"] * s
            cs, ss = torch.cos(ang).view(1, H, 1, D), torch.sin(ang).view(1, H, 1, D)
            est_re, est_im = est_re * cs - est_im * ss, est_re * ss + est_im * cs

        flat = lambda z: z.transpose(1, 2).reshape(B, N, H * D)
        out = self.W_o(torch.cat([flat(est_re), flat(est_im)], dim=-1))
        if return_attn:
            return out, dict(A_hat=A_hat, A=A)
        return out, None


# ----------------------------------------------------------------------------------------
# Networks (names mirror the reference: blocks.{l}.attn/norm1/norm2/ffn.0/ffn.2, ...)
# ----------------------------------------------------------------------------------------

def make_attention(args):
    """The attention layer args ask for: RFA, AFA with attention_variant="afa", RT-RFA with "rt"."""
    variant = getattr(args, "attention_variant", "rfa")
    if variant in ("afa", "afa_full"):  # the memory-optimised and the full form (afa_torch.py)
        from afa_torch import MultiheadAFA  # late: afa_torch imports this module's helpers
        return MultiheadAFA(args)
    if variant == "rt":
        from rt_torch import MultiheadRT  # late, as AFA
        return MultiheadRT(args)
    if variant != "rfa":
        raise ValueError("attention_variant: expected \"rfa\", \"afa\", \"afa_full\" or \"rt\", found %r" % (variant,))
    return MultiheadIsotropicRFA(args)


class RFATransformerBlock(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.attn = make_attention(args)
        self.norm1 = make_norm(args, args.d_e)
        self.norm2 = make_norm(args, args.d_e)
        self.ffn = nn.Sequential(nn.Linear(args.d_e, args.hidden_dim), nn.ReLU(),
                                 nn.Linear(args.hidden_dim, args.d_e))

    def forward(self, x, t_measure=None, t_shift=None, causal=True, ids=None):
        h = self.norm1(x) if self.args.use_real_input_norm else x
        kw = dict(ids=ids) if ids is not None and getattr(self.attn, "accepts_ids", False) else {}
        y, _ = self.attn(h, h, h, t_measure=t_measure, t_shift=t_shift, causal=causal, **kw)
        if self.args.use_outer_residual:
            x = x + y
        h = self.norm2(x) if self.args.use_real_output_norm else x
        return x + self.ffn(h)


class RFATransformerNetwork(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.input_proj = nn.Linear(args.d_e, args.d_e)
        self.blocks = nn.ModuleList([RFATransformerBlock(args) for _ in range(args.num_blocks)])
        for l, blk in enumerate(self.blocks):
            blk.attn.layer_index = l
        self.final_norm = make_norm(args, args.d_e)
        self.output_proj = nn.Linear(args.d_e, args.d_e)

    def forward(self, x, t_measure=None, t_shift=None, causal=True, ids=None):
        x = self.input_proj(x)
        for blk in self.blocks:
            x = blk(x, t_measure=t_measure, t_shift=t_shift, causal=causal, ids=ids)
        if self.final_norm is not None:
            x = self.final_norm(x)
        return self.output_proj(x)


class LanguageModel(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.token_embedding = nn.Embedding(args.vocab_size, args.d_e)
        self.backbone = RFATransformerNetwork(args)
        self.lm_head = nn.Linear(args.d_e, args.vocab_size)
        self.lm_head.weight = self.token_embedding.weight     # tied

    def forward(self, ids, t_measure=None, t_shift=None, causal=True):
        x = self.token_embedding(ids)
        return self.lm_head(self.backbone(x, t_measure=t_measure, t_shift=t_shift, causal=causal, ids=ids))


class NextStepPredictor(nn.Module):
    """Mirror of the reference ETT_NextStep_Predictor: input_proj -> backbone(t_shift=1) -> output_head.

    The backbone always receives t_shift=1; with learn_t_shift=True (default) the learned per-head
    shift softplus(t_shift_param) replaces it, exactly as in the reference.
    """

    def __init__(self, args):
        super().__init__()
        self.args = args
        self.backbone = RFATransformerNetwork(args)
        self.input_proj = nn.Linear(args.d_in, args.d_e)
        self.output_head = nn.Linear(args.d_e, args.d_in)

    def forward(self, x, t_measure=None, causal=True):
        h = self.backbone(self.input_proj(x), t_measure=t_measure, t_shift=1, causal=causal)
        return self.output_head(h)


def build(args):
    arch = getattr(args, "architecture", None)
    if arch == "lm":
        return LanguageModel(args)
    if arch == "signal":
        return NextStepPredictor(args)
    if arch == "attention":
        return make_attention(args)
    raise ValueError(arch)
