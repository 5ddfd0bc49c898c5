// RFA (docs/math.md, docs/reference-code.md), with ACC's accumulated rotations as its phase source
// (docs/variant-acc.md): the per-head table (shaders/common/rfa_head_table.h), the fused kernel and
// its tilings (ops/rfa_attention.hpp, which also holds the caches and rotate pass every mechanism
// shares), the lag table, the readouts and GPU curves, and the reference module's tensors.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "mechanisms/mechanism.hpp"
#include "mechanisms/summary_format.hpp"
#include "model/config.hpp"
#include "model/physics.hpp"
#include "model/tensor_reader.hpp"
#include "kernel_ids.h"
#include "ops/rfa_probe.hpp"
#include "push_layouts.h"
#include "rfa_head_table.h"

namespace rfa::mech {

namespace {

float clamp_float(double x) {  // -1e30-style "no clamp" values stay finite in float
  return (float)std::clamp(x, -3.0e38, 3.0e38);
}

const char* covariance_name(Covariance c) {
  switch (c) {
    case Covariance::stationary: return "stationary";
    case Covariance::ou_rate: return "ou_rate";
    case Covariance::residual_diffusion: return "residual_diffusion";
    case Covariance::hybrid: return "hybrid";
    case Covariance::colored: return "colored";
  }
  return "?";
}

// ACC's phase source in a summary line (docs/variant-acc.md §8): the angles are accumulated steps,
// not omega t; the omega band of the summary is then the steps' scale (rope: the step; random:
// half its mean).
std::string phase_summary(const AttentionParams& p) {
  switch (p.phase) {
    case PhaseSource::accumulated_rope: return ", phase: accumulated rope steps";
    case PhaseSource::accumulated_learned:
      return ", phase: accumulated learned steps (a " + std::to_string(p.step_vocab) + " x " + std::to_string(p.dim) +
             " table)";
    case PhaseSource::accumulated_random:
      return ", phase: accumulated random steps (seed " + std::to_string(p.step_seed) + ", layer " +
             std::to_string(p.step_layer) + ")";
    default: return "";
  }
}

class RfaMechanism final : public Mechanism {
 public:
  AttentionVariant variant() const override { return AttentionVariant::rfa; }
  const char* key() const override { return "rfa"; }
  const char* name() const override { return "RFA"; }

  Status check_config(const ModelConfig&, bool, const std::string&) const override { return Status::Ok(); }

  Result<AttentionParams> load_params(TensorReader& r, const std::string& p, const ModelConfig& cfg,
                                      int layer) const override {
    const ReferenceArgs& a = cfg.args;
    const int H = a.n_heads, D = cfg.head_dim();
    const std::vector<int64_t> h = {H};
    physics::RawAttentionParams raw;
    // learn_decay keeps mu_v = logit(mu0), which is -inf for the mu0 = 0 heads: sigmoid(-inf) = 0 is
    // well defined there, so infinities are allowed (NaN is not).
    RFA_ASSIGN(raw.mu_v, r.f64(p + "mu_v", h, a.learn_decay ? Finite::allow_inf : Finite::all));
    RFA_ASSIGN(raw.sigma_v, r.f64(p + "sigma_v", h));
    RFA_ASSIGN(raw.sigma_tilde_v, r.f64(p + "sigma_tilde_v", h));
    RFA_ASSIGN(raw.eta_v, r.f64(p + "eta_v", h));
    RFA_ASSIGN(raw.gamma_v, r.f64(p + "gamma_v", h));
    RFA_ASSIGN(raw.tau_param, r.f64(p + "tau_param", h));
    RFA_ASSIGN(raw.nu_param, r.f64(p + "nu_param", h));
    const int64_t w = a.use_complex_conj_constraint ? D / 2 : D;
    RFA_ASSIGN(raw.omega_v, r.f64(p + "omega_v", {H, w}));
    if (a.learn_t_shift) RFA_ASSIGN(raw.t_shift_param, r.f64(p + "t_shift_param", {1, H}));
    // Unused unless the gate is on, and checked all the same.
    RFA_ASSIGN(raw.P_prior_log, r.f64(p + "P_prior_log", {1, 1, H, 1, 1}));
    RFA_ASSIGN(raw.P_scale_log, r.f64(p + "P_scale_log", {1, 1, H, 1, 1}));
    const std::vector<int64_t> cn = {1, 1, H, D, 1};
    if (a.use_complex_input_norm == 1) {
      RFA_ASSIGN(raw.cn_q, r.f64(p + "cn_q.gamma", cn));
      RFA_ASSIGN(raw.cn_k, r.f64(p + "cn_k.gamma", cn));
      RFA_ASSIGN(raw.cn_v, r.f64(p + "cn_v.gamma", cn));
    }
    if (a.use_complex_output_norm) RFA_ASSIGN(raw.cn_o, r.f64(p + "cn_o.gamma", cn));
    if (a.use_colored_prior) {
      // Present whenever the flag is set; used only when learn_decay does not take precedence (and
      // checked either way).
      RFA_ASSIGN(raw.c_exp_v, r.f64(p + "c_exp_v", h));
      RFA_ASSIGN(raw.beta_exp_v, r.f64(p + "beta_exp_v", h));
      RFA_ASSIGN(raw.a_per_v, r.f64(p + "a_per_v", h));
      RFA_ASSIGN(raw.b_per_v, r.f64(p + "b_per_v", h));
      RFA_ASSIGN(raw.omega_per_v, r.f64(p + "omega_per_v", h));
    }
    auto params = physics::physical_params(cfg, raw);
    if (!params) return params.status();
    AttentionParams out = params.take();
    // ACC: the phase source of every layer; random steps draw per layer (docs/variant-acc.md).
    out.phase = cfg.phase_source;
    out.step_seed = (uint32_t)cfg.step_seed;
    out.step_layer = (uint32_t)layer;
    out.sw.stationary_values = cfg.stationary_values;
    if (cfg.phase_source == PhaseSource::accumulated_learned) {
      // docs/variant-acc.md: the layer's learned step angles Phi [vocab][D], shared by its heads.
      RFA_ASSIGN(out.step_table, r.f64(p + "acc_phi", {a.vocab_size, D}));
      out.step_vocab = a.vocab_size;
    }
    return out;
  }

  Status check_params(const AttentionParams&) const override { return Status::Ok(); }

  KernelCurves curves(const AttentionParams& p, int head, const std::vector<double>& lags) const override {
    return curves_at(lags, [&](double lag) {
      const physics::LagTerms t = physics::lag_terms(p, head, lag);
      return CurvePoint{t.E, t.vcov, t.P, t.B};
    });
  }

  std::string head_terms(const AttentionParams& p, int) const override {
    switch (p.phase) {
      case PhaseSource::accumulated_rope: return "accumulated rope steps";
      case PhaseSource::accumulated_random: return "accumulated random steps";
      case PhaseSource::accumulated_learned: return "accumulated learned steps";
      default: return "";
    }
  }

  std::string layer_summary(int l, const AttentionParams& p) const override {
    const AttentionSwitches& sw = p.sw;
    std::string s = "layer " + std::to_string(l) + ": covariance " + covariance_name(sw.covariance) + ", bias " +
                    std::to_string((int)sw.additive_bias) + ", precision " + std::to_string((int)sw.precision) +
                    (sw.robust ? ", student-t" : ", gaussian") + (sw.full_residual ? "" : ", cross-term residual") +
                    (sw.counter_rotate ? "" : ", no counter-rotation") + (sw.causal ? ", causal" : ", non-causal") +
                    (sw.gate ? ", gate" : "") + (sw.complex_input_norm ? ", cnorm-in" : "") +
                    (sw.complex_output_norm ? ", cnorm-out" : "") + phase_summary(p) +
                    (sw.stationary_values ? "" : ", values unrotated") + "\n";
    s += "  head        mu  |omega| min..max      stat.var      eta2    gamma2    nu/D   kappa     tau  shift  regime\n";
    for (int h = 0; h < p.heads; ++h) {
      const HeadParams& hp = p.head[(size_t)h];
      double wmin = INFINITY, wmax = 0;
      for (int d = 0; d < p.dim; ++d) {
        double w = std::fabs(p.omega[(size_t)h * p.dim + d]);
        wmin = std::min(wmin, w);
        wmax = std::max(wmax, w);
      }
      const RegimeInfo r = physics::regime(p, h);
      const double sv = r.stationary_variance;
      const char* regime = regime_name(r.regime);
      s += fmt("  %4.0f", h) + fmt(" %9.3g", hp.mu) + fmt("  %8.3g", wmin) + fmt("..%-8.3g", wmax) +
           (std::isinf(sv) ? std::string("           inf") : fmt(" %13.4g", sv)) + fmt(" %9.4g", hp.eta2) +
           fmt(" %9.4g", hp.gamma2) + fmt(" %7.3f", hp.nu / p.dim) + fmt(" %7.3f", hp.kappa) + fmt(" %7.4f", hp.tau) +
           fmt(" %6.3f", hp.lag_shift) + "  " + regime + "\n";
    }
    return s;
  }

  bool has_pair_readout() const override { return true; }

  // The per-head table (shaders/common/rfa_head_table.h): the head's physics and the terms derived
  // from it (model/physics.hpp rfa_head_derived), as floats.
  std::vector<float> layer_table(const AttentionParams& p) const override {
    using namespace shader;
    std::vector<float> table((size_t)p.heads * kHeadStride, 0.f);
    for (int h = 0; h < p.heads; ++h) {
      const HeadParams& hp = p.head[(size_t)h];
      const physics::HeadDerived dv = physics::head_derived(hp, p.dim);
      float* t = table.data() + (size_t)h * kHeadStride;
      t[kMu] = (float)hp.mu;
      t[kSigma2] = (float)hp.sigma2;
      t[kS2t] = (float)hp.s2t;
      t[kEta2] = (float)hp.eta2;
      t[kGamma2] = (float)hp.gamma2;
      t[kNu] = (float)hp.nu;
      t[kKappa] = (float)hp.kappa;
      t[kTau] = (float)hp.tau;
      t[kShift] = (float)hp.lag_shift;
      t[kCExp] = (float)hp.c_exp;
      t[kBetaExp] = (float)hp.beta_exp;
      t[kAPer] = (float)hp.a_per;
      t[kBPer] = (float)hp.b_per;
      t[kOmegaPer] = (float)hp.omega_per;
      t[kGatePrior] = (float)hp.gate_prior_log;
      t[kGateScaleExp] = (float)dv.gate_scale;
      t[kGateC] = (float)hp.gate_c;
      // The switch is decided in double, so a mu of 9.99e-6 takes the same branch as in the twin.
      t[kBrownian] = dv.brownian ? 1.f : 0.f;
      t[kMinExp] = clamp_float(p.sw.min_exponent);
      t[kMaxExp] = clamp_float(p.sw.max_exponent);
      t[kCovFloor] = (float)p.sw.cov_floor;
      t[kInvSqrtD] = (float)dv.inv_sqrt_d;
      t[kInvTwoMu] = (float)dv.inv_two_mu;
      t[kLinCoef] = (float)dv.lin_coef;
      t[kColR] = (float)dv.col_r;
      t[kColRSmall] = dv.col_r_small ? 1.f : 0.f;
      t[kColRsq] = (float)dv.col_rsq;
      t[kColRsqSmall] = dv.col_rsq_small ? 1.f : 0.f;
    }
    return table;
  }

  bool uses_lag_table() const override { return true; }

  void kernel_names(const AttentionParams& p, bool kv_f16, bool lag_table,
                    std::vector<std::string>& out) const override {
    const std::string kv = kv_f16 ? "_kv16" : "";
    out.insert(out.end(), {"rfa_attention" + kv, "rfa_rotate" + kv, "rfa_attention_reduce"});
    if (p.phase != PhaseSource::omega_t) out.push_back("rfa_phase_scan");
    if (lag_table) out.push_back("rfa_lag_table");
  }

  ops::AttentionTiling tiling(const gpu::Capabilities& caps, const KernelOptions& kernels, uint32_t n_new, uint32_t dim,
                              uint32_t batch_heads, uint32_t capacity, bool gate) const override {
    return ops::choose_attention_tiling(caps, kernels, n_new, dim, batch_heads, capacity, gate);
  }

  Status record_fused(gpu::Context& ctx, gpu::Recorder& rec, const ops::AttentionWeightsGpu& w,
                      ops::AttentionCache& cache, const gpu::Buffer& timestamps, const gpu::Buffer& v_rotate,
                      gpu::Buffer& out, const ops::AttentionSpan& span) const override {
    return ops::record_rfa_kernel(ctx, rec, w, cache, timestamps, v_rotate, out, span);
  }

  gpu::SpecConstants readout_spec(const AttentionParams& p, uint32_t mode) const override {
    using namespace shader;
    const AttentionSwitches& sw = p.sw;
    gpu::SpecConstants spec;
    spec.set(kRfaReadD, (uint32_t)p.dim).set(kRfaReadCov, (uint32_t)sw.covariance)
        .set(kRfaReadBias, (uint32_t)sw.additive_bias).set(kRfaReadPrec, (uint32_t)sw.precision)
        .set_flag(kRfaReadRobust, sw.robust).set_flag(kRfaReadFullResid, sw.full_residual)
        .set_flag(kRfaReadCausal, sw.causal).set(kRfaReadMode, mode);
    return spec;
  }

  std::vector<gpu::Binding> readout_inputs(const ops::AttentionWeightsGpu& w, const ops::AttentionCache& c,
                                           const gpu::Buffer& timestamps) const override {
    return {gpu::in(w.table()), gpu::in(timestamps), gpu::in(c.q), gpu::in(c.k), gpu::in(c.q_norm2),
            gpu::in(c.k_norm2)};
  }

  Status record_curves(gpu::Context& ctx, gpu::Recorder& rec, const ops::AttentionWeightsGpu& w,
                       const gpu::Buffer& lags, uint32_t n_lags, gpu::Buffer& out) const override {
    const AttentionParams& p = w.params();
    const uint64_t n = (uint64_t)n_lags * p.heads;
    if (n == 0) return Status::Ok();
    if (lags.size < (uint64_t)n_lags * 4 || out.size < n * 4 * 4)
      return make_error(Code::invalid_argument, "rfa curves: lags must hold n_lags floats and out heads*4*n_lags");
    using namespace shader;
    gpu::SpecConstants spec;
    spec.set(kLagCov, (uint32_t)p.sw.covariance).set(kLagBias, (uint32_t)p.sw.additive_bias)
        .set(kLagPrec, (uint32_t)p.sw.precision);
    auto pipe = ctx.pipelines().get<shader::CurvesPush>("rfa_curves", spec);
    if (!pipe) return pipe.status();
    const shader::CurvesPush push{n_lags, (uint32_t)p.heads};
    rec.dispatch(*pipe, {gpu::in(w.table()), gpu::in(lags), gpu::out(out)}, push, gpu::workgroups(n, 64), 1, 1,
                 "rfa_curves");
    return Status::Ok();
  }
};

}  // namespace

const Mechanism& rfa_mechanism() {
  static const RfaMechanism m;
  return m;
}

}  // namespace rfa::mech
