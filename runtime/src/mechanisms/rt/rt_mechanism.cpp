// RT-RFA (directional RFA on the sphere, docs/variant-rt.md): its tensors and config rules, its
// table and fused kernel (rt_attention.hpp), the rotate pass's UNIT mode, its readouts
// (the kernels rt_probe, rt_tomography), curves and summary.
#include <cmath>
#include <string>
#include <vector>

#include "mechanisms/mechanism.hpp"
#include "mechanisms/rt/rt_attention.hpp"
#include "mechanisms/summary_format.hpp"
#include "model/config.hpp"
#include "model/physics.hpp"
#include "model/tensor_reader.hpp"
#include "kernel_ids.h"

namespace rfa::mech {

namespace {

class RtMechanism final : public Mechanism {
 public:
  AttentionVariant variant() const override { return AttentionVariant::rt; }
  const char* key() const override { return "rt"; }
  const char* name() const override { return "RT-RFA"; }

  Status check_config(const ModelConfig& c, bool acc_keys_given, const std::string& label) const override {
    return check_plain_frame_config(*this, c, acc_keys_given, label, "docs/variant-rt.md §13");
  }

  // docs/variant-rt.md §13: the RT-RFA layer's own tensors.
  Result<AttentionParams> load_params(TensorReader& r, const std::string& p, const ModelConfig& cfg,
                                      int) const override {
    const ReferenceArgs& a = cfg.args;
    const int H = a.n_heads, D = cfg.head_dim();
    const std::vector<int64_t> h = {H};
    physics::RawRtParams raw;
    const int64_t w = a.use_complex_conj_constraint ? D / 2 : D;
    RFA_ASSIGN(raw.omega_v, r.f64(p + "omega_v", {H, w}));
    RFA_ASSIGN(raw.rt_mu_v, r.f64(p + "rt_mu_v", h));
    RFA_ASSIGN(raw.rt_sigma_v, r.f64(p + "rt_sigma_v", h));
    RFA_ASSIGN(raw.rt_eta_v, r.f64(p + "rt_eta_v", h));
    RFA_ASSIGN(raw.rt_gamma_v, r.f64(p + "rt_gamma_v", h));
    RFA_ASSIGN(raw.rt_tau_th_v, r.f64(p + "rt_tau_th_v", h));
    RFA_ASSIGN(raw.rt_nu_v, r.f64(p + "rt_nu_v", h));
    RFA_ASSIGN(raw.rt_beta_v, r.f64(p + "rt_beta_v", h));
    return physics::rt_physical_params(cfg, raw);
  }

  Status check_params(const AttentionParams& p) const override {
    RFA_TRY(ops::check_rt_params(p));
    return check_plain_frame_params(*this, p);
  }

  void curve_labels(std::vector<std::string>& names, std::string& what) const override {
    names = {"e^{-mu lag}", "S(lag)", "P(lag), m = 1", "beta_s log P"};
    what = "magnitude decay, tangential covariance, precision, its logit";
  }

  KernelCurves curves(const AttentionParams& p, int head, const std::vector<double>& lags) const override {
    return curves_at(lags, [&](double lag) {
      const physics::RtLagTerms t = physics::rt_lag_terms(p, head, lag);
      return CurvePoint{t.decay, t.S, std::exp(t.log_P), t.bias};
    });
  }

  // RT decays neither weights nor values: its A is Ahat (docs/variant-rt.md §10).
  bool decays_weights() const override { return false; }

  std::string head_terms(const AttentionParams& p, int h) const override {
    const RtLayerParams& r = p.rt;
    const size_t i = (size_t)h;
    return "beta_s " + fmt("%.3g", r.beta[i]) + ", tau_th2 " + fmt("%.3g", r.tau_th2[i]) + ", 2 mu beta_s " +
           fmt("%.3g", 2 * r.mu[i] * r.beta[i]);
  }

  // Per head the magnitude decay, the noises of S, the angular floor, nu, beta_s, the long-lag
  // slope 2 mu beta_s of the logit's lag penalty and the regime of S.
  std::string layer_summary(int l, const AttentionParams& p) const override {
    const RtLayerParams& r = p.rt;
    std::string s = "layer " + std::to_string(l) + ": RT-RFA (directional RFA on the sphere), covariance " +
                    (r.covariance == RtCovariance::stationary ? "stationary" : "ou_rate") + ", kernel " +
                    (r.kernel == RtKernel::student_t ? "student-t" : "gaussian") +
                    (p.sw.causal ? ", causal" : ", non-causal") + fmt(", eps %.3g", r.eps) + "\n";
    s += "  head        mu   s2t/sigma2      eta2    gamma2   tau_th2      nu  beta_s  slope 2mu.beta  regime of S\n";
    for (int h = 0; h < p.heads; ++h) {
      const size_t i = (size_t)h;
      const double mu = r.mu[i], noise = r.covariance == RtCovariance::stationary ? r.s2t[i] : r.sigma2[i];
      const double sv =
          r.covariance == RtCovariance::stationary ? r.s2t[i] : (mu > 0 ? r.sigma2[i] / (2 * mu) : INFINITY);
      const char* regime = (r.covariance == RtCovariance::ou_rate && mu == 0) ? "brownian"
                           : r.eta2[i] - sv > 0                              ? "integrative"
                                                                              : "diffusive";
      s += fmt("  %4.0f", h) + fmt(" %9.3g", mu) + fmt("  %11.4g", noise) + fmt(" %9.4g", r.eta2[i]) +
           fmt(" %9.4g", r.gamma2[i]) + fmt(" %9.4g", r.tau_th2[i]) + fmt(" %7.2f", r.nu[i]) +
           fmt(" %7.3f", r.beta[i]) + fmt("  %14.4g", 2 * mu * r.beta[i]) + "  " + regime + "\n";
    }
    return s;
  }

  std::vector<float> layer_table(const AttentionParams& p) const override { return ops::rt_layer_table(p); }

  // The rotate pass caches unit directions and log(m^2 + eps) per token (docs/variant-rt.md §3.1).
  bool unit_directions() const override { return true; }
  float magnitude_eps(const AttentionParams& p) const override { return (float)p.rt.eps; }

  void kernel_names(const AttentionParams&, bool kv_f16, bool, std::vector<std::string>& out) const override {
    out.push_back(kv_f16 ? "rt_attention_kv16" : "rt_attention");
  }

  ops::AttentionTiling tiling(const gpu::Capabilities& caps, const KernelOptions& kernels, uint32_t n_new, uint32_t dim,
                              uint32_t, uint32_t capacity, bool) const override {
    return ops::choose_rt_tiling(caps, kernels, n_new, dim, capacity);
  }

  // v_rotate: the unit values the rotate pass wrote (unrotated).
  Status record_fused(gpu::Context& ctx, gpu::Recorder& rec, const ops::AttentionWeightsGpu& w,
                      ops::AttentionCache& cache, const gpu::Buffer& timestamps, const gpu::Buffer& v_rotate,
                      gpu::Buffer& out, const ops::AttentionSpan& span) const override {
    return ops::record_rt_fused(ctx, rec, w, cache, timestamps, v_rotate, out, span);
  }

  // RT's pair logit against the row statistics the fused kernel wrote; A = Ahat.
  gpu::SpecConstants readout_spec(const AttentionParams& p, uint32_t mode) const override {
    using namespace shader;
    gpu::SpecConstants spec;
    spec.set(kRtReadD, (uint32_t)p.dim).set_flag(kRtReadCausal, p.sw.causal).set(kRtReadCov, (uint32_t)p.rt.covariance)
        .set(kRtReadKernel, (uint32_t)p.rt.kernel).set(kRtReadMode, mode);
    return spec;
  }

  // The norm slots hold log(m^2 + eps) per token for RT layers (the rotate pass's UNIT mode).
  std::vector<gpu::Binding> readout_inputs(const ops::AttentionWeightsGpu& w, const ops::AttentionCache& c,
                                           const gpu::Buffer& timestamps) const override {
    return {gpu::in(w.table()), gpu::in(timestamps), gpu::in(c.q), gpu::in(c.k), gpu::in(c.q_norm2),
            gpu::in(c.k_norm2)};
  }
};

}  // namespace

const Mechanism& rt_mechanism() {
  static const RtMechanism m;
  return m;
}

}  // namespace rfa::mech
