// AFA (adaptive filter attention, memory-optimised form, docs/variant-afa.md): its tensors and
// config rules, its table and fused kernel (afa_attention.hpp), its readouts (the kernels afa_probe,
// afa_tomography), curves and summary. The full form (mechanisms/afa_full/) derives from it.
#include "mechanisms/afa/afa_mechanism.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "afa_layer_table.h"
#include "kernel_ids.h"
#include "mechanisms/afa/afa_attention.hpp"
#include "mechanisms/summary_format.hpp"
#include "model/config.hpp"
#include "model/config_fields.hpp"
#include "model/physics.hpp"
#include "model/tensor_reader.hpp"

namespace rfa::mech {

namespace {

// The tied iterations' keys (docs/variant-afa-full.md §6), read from the config's args by the
// mechanism itself: afa_irls_iterations (1 to 16) and afa_irls_momentum ([0, 1)). Defaults for a
// config made in code.
Status read_irls(const ModelConfig& c, const std::string& label, int* n, double* g) {
  *n = 1;
  *g = 0.0;
  if (!c.args_json) return Status::Ok();
  config_detail::Fields f(*c.args_json, label, "args.");
  f.integer("afa_irls_iterations", *n, 1, ops::kMaxAfaIrlsIterations, true);
  f.number("afa_irls_momentum", *g, true);
  RFA_TRY(f.status());
  if (!(*g >= 0 && *g < 1))
    return make_error(Code::model_error, label + ": args.afa_irls_momentum must be in [0, 1), found " + std::to_string(*g));
  return Status::Ok();
}

}  // namespace

Status AfaMechanism::check_config(const ModelConfig& c, bool acc_keys_given, const std::string& label) const {
  int n = 1;
  double g = 0;
  RFA_TRY(read_irls(c, label, &n, &g));
  return check_plain_frame_config(*this, c, acc_keys_given, label, "docs/variant-afa.md §12");
}

// docs/variant-afa.md §12: the AFA layer's own tensors; RFA's are unexpected here.
Result<AttentionParams> AfaMechanism::load_params(TensorReader& r, const std::string& p, const ModelConfig& cfg,
                                                  int) const {
  const ReferenceArgs& a = cfg.args;
  const int H = a.n_heads, D = cfg.head_dim();
  const std::vector<int64_t> h = {H};
  physics::RawAfaParams raw;
  const int64_t w = a.use_complex_conj_constraint ? D / 2 : D;
  RFA_ASSIGN(raw.omega_v, r.f64(p + "omega_v", {H, w}));
  RFA_ASSIGN(raw.afa_mu_v, r.f64(p + "afa_mu_v", {H, w}));
  RFA_ASSIGN(raw.afa_sigma_v, r.f64(p + "afa_sigma_v", {H, D}));
  RFA_ASSIGN(raw.afa_eta_v, r.f64(p + "afa_eta_v", {H, D}));
  RFA_ASSIGN(raw.afa_gamma_v, r.f64(p + "afa_gamma_v", {H, D}));
  RFA_ASSIGN(raw.afa_nu_v, r.f64(p + "afa_nu_v", h));
  RFA_ASSIGN(raw.afa_alpha_v, r.f64(p + "afa_alpha_v", h));
  if (cfg.afa_mix) RFA_ASSIGN(raw.afa_delta_v, r.f64(p + "afa_delta_v", {H, D}));
  if (cfg.afa_precision == AfaPrecision::weighted) {
    RFA_ASSIGN(raw.afa_weight_v, r.f64(p + "afa_weight_v", {H, D}));
    RFA_ASSIGN(raw.afa_weight_bias_v, r.f64(p + "afa_weight_bias_v", h));
  }
  auto out = physics::afa_physical_params(cfg, raw);
  if (!out) return out;
  out->variant = variant();  // the memory-optimised or the full form: same tensors
  RFA_TRY(read_irls(cfg, cfg.label, &out->afa.irls_iterations, &out->afa.irls_momentum));
  return out;
}

Status AfaMechanism::check_params(const AttentionParams& p) const {
  RFA_TRY(ops::check_afa_params(p));
  return check_plain_frame_params(*this, p);
}

KernelCurves AfaMechanism::curves(const AttentionParams& p, int head, const std::vector<double>& lags) const {
  return curves_at(lags, [&](double lag) {
    const physics::AfaLagTerms t = physics::afa_lag_terms(p, head, lag);
    return CurvePoint{t.mean_decay, t.vC, t.precision, t.bias};
  });
}

void AfaMechanism::curve_labels(std::vector<std::string>& names, std::string& what) const {
  names = {"mean decay", "v^C(lag)", "1/(nu v^C)", "logit, R2 = 0"};
  what = "channel-mean decay, score covariance, precision, zero-residual logit";
}

// Per channel, from the lag as the kernels form it (phi through expm1, exact l at mu = 0); the full
// form's precision divides by cov + eps (docs/variant-afa-full.md §2).
Result<ChannelCurves> AfaMechanism::channel_curves(const AttentionParams& p, int h, const std::vector<double>& lags) const {
  const AfaLayerParams& f = p.afa;
  const double eps = p.variant == AttentionVariant::afa_full ? f.eps : 0.0;
  ChannelCurves c;
  c.lags = lags;
  c.channels = p.dim;
  for (int d = 0; d < p.dim; ++d) {
    const size_t k = (size_t)h * p.dim + (size_t)d;
    const double mu = f.unitary ? 0.0 : f.mu[k];
    for (double lag : lags) {
      const double l = std::fabs(lag), e = std::exp(-mu * l);
      const double phi = mu > 0.0 ? -std::expm1(-2.0 * mu * l) / (2.0 * mu) : l;
      const double cov = f.sigma2[k] * phi + f.eta2[k] * e * e + f.gamma2[k] + eps;
      c.decay.push_back(e);
      c.cov.push_back(cov);
      c.precision.push_back(cov > 0 ? 1.0 / cov : INFINITY);
    }
  }
  return c;
}

// Short enough for one line of the viewer's regimes table: d/i/B counts the channels that are
// diffusive / integrative / Brownian (docs/variant-afa.md §11).
std::string AfaMechanism::head_terms(const AttentionParams& p, int h) const {
  const AfaLayerParams& f = p.afa;
  double lo = INFINITY, hi = 0;
  int reg[3] = {0, 0, 0};
  for (int d = 0; d < p.dim; ++d) {
    const size_t k = (size_t)h * p.dim + (size_t)d;
    const double mu = f.unitary ? 0.0 : f.mu[k];
    lo = std::min(lo, mu);
    hi = std::max(hi, mu);
    reg[mu == 0 ? 2 : f.eta2[k] - f.sigma2[k] / (2 * mu) > 0 ? 1 : 0] += 1;
  }
  return "mu " + fmt("%.3g", lo) + ".." + fmt("%.3g", hi) + ", d/i/B " + std::to_string(reg[0]) + "/" +
         std::to_string(reg[1]) + "/" + std::to_string(reg[2]) + ", alpha " + fmt("%.3g", f.alpha[(size_t)h]);
}

std::string AfaMechanism::form_line(const AttentionParams& p) const {
  const AfaLayerParams& f = p.afa;
  const char* prec = f.precision == AfaPrecision::channel_sum   ? "channel sum"
                     : f.precision == AfaPrecision::one_channel ? "one channel"
                                                                : "weighted";
  return std::string("AFA (adaptive filter attention), score covariance ") + prec +
         (f.precision == AfaPrecision::one_channel ? " (channel " + std::to_string(f.precision_channel) + ")" : "");
}

// Its switches, then per head the range of its channels' decays and frequencies, summed noises,
// nu, the temperature and the channels' regimes.
std::string AfaMechanism::layer_summary(int l, const AttentionParams& p) const {
  const AfaLayerParams& f = p.afa;
  std::string s = "layer " + std::to_string(l) + ": " + form_line(p) + (f.unitary ? ", unitary" : "") +
                  (f.mix ? ", mix" : "") + (p.sw.causal ? ", causal" : ", non-causal") + fmt(", eps %.3g", f.eps) +
                  fmt(", horizon %.4g", f.pred_dt) +
                  (f.irls_iterations > 1 ? ", " + std::to_string(f.irls_iterations) + " tied iterations" +
                                               (f.irls_momentum > 0 ? fmt(" (momentum %.3g)", f.irls_momentum) : "")
                                         : "") +
                  "\n";
  s += "  head  mu min..max           |omega| min..max     sum sigma2  sum eta2  sum gamma2      nu   alpha  channels d/i/b";
  s += f.mix ? "  gate min..max\n" : "\n";
  for (int h = 0; h < p.heads; ++h) {
    double mlo = INFINITY, mhi = 0, wlo = INFINITY, whi = 0, s2 = 0, e2 = 0, g2 = 0, glo = INFINITY, ghi = 0;
    int reg[3] = {0, 0, 0};  // diffusive, integrative, brownian (docs/variant-afa.md §11)
    for (int d = 0; d < p.dim; ++d) {
      const size_t k = (size_t)h * p.dim + d;
      const double mu = f.unitary ? 0.0 : f.mu[k];
      mlo = std::min(mlo, mu);
      mhi = std::max(mhi, mu);
      wlo = std::min(wlo, std::fabs(p.omega[k]));
      whi = std::max(whi, std::fabs(p.omega[k]));
      s2 += f.sigma2[k];
      e2 += f.eta2[k];
      g2 += f.gamma2[k];
      const double level = mu > 0 ? f.sigma2[k] / (2 * mu) : INFINITY;
      reg[mu == 0 ? 2 : f.eta2[k] - level > 0 ? 1 : 0] += 1;
      if (f.mix) {
        const double g = physics::afa_channel_derived(p, k).mix;
        glo = std::min(glo, g);
        ghi = std::max(ghi, g);
      }
    }
    s += fmt("  %4.0f", h) + fmt("  %9.3g", mlo) + fmt("..%-9.3g", mhi) + fmt("  %8.3g", wlo) + fmt("..%-8.3g", whi) +
         fmt("  %10.4g", s2) + fmt(" %9.4g", e2) + fmt(" %11.4g", g2) + fmt(" %7.3f", f.nu[(size_t)h]) +
         fmt(" %7.3f", f.alpha[(size_t)h]) + "  " + std::to_string(reg[0]) + "/" + std::to_string(reg[1]) + "/" +
         std::to_string(reg[2]) + (f.mix ? fmt("  %13.3g", glo) + fmt("..%.3g", ghi) : "") + "\n";
  }
  return s;
}

// Under the unitary switch each complex channel is projected to unit modulus before scoring (a
// zero channel stays zero), exactly as the kernel does.
void AfaMechanism::to_scored(const AttentionParams& p, std::vector<float>& v) const {
  if (!p.afa.unitary) return;
  for (size_t c = 0; c + 1 < v.size(); c += 2) {
    const double n = std::hypot((double)v[c], (double)v[c + 1]);
    if (n > 0) v[c] = (float)(v[c] / n), v[c + 1] = (float)(v[c + 1] / n);
    else v[c] = v[c + 1] = 0.f;
  }
}

std::vector<float> AfaMechanism::layer_table(const AttentionParams& p) const { return ops::afa_layer_table(p); }

void AfaMechanism::kernel_names(const AttentionParams& p, bool kv_f16, bool, std::vector<std::string>& out) const {
  out.push_back(ops::afa_kernel_name(p, kv_f16));
}

ops::AttentionTiling AfaMechanism::tiling(const gpu::Capabilities& caps, const KernelOptions& kernels, uint32_t n_new,
                                          uint32_t dim, uint32_t, uint32_t capacity, bool) const {
  return ops::choose_afa_tiling(caps, kernels, n_new, dim, capacity);
}

Status AfaMechanism::record_fused(gpu::Context& ctx, gpu::Recorder& rec, const ops::AttentionWeightsGpu& w,
                                  ops::AttentionCache& cache, const gpu::Buffer& timestamps, const gpu::Buffer&,
                                  gpu::Buffer& out, const ops::AttentionSpan& span) const {
  return ops::record_afa_fused(ctx, rec, w, cache, timestamps, out, span);
}

// AFA's pair logit against the row statistics the fused kernel wrote; A is the mean decayed mass
// (docs/variant-afa.md §11), a channel's decayed weight or the weight itself by view.
gpu::SpecConstants AfaMechanism::readout_spec(const AttentionParams& p, uint32_t mode) const {
  return readout_spec(p, mode, kAllChannels);
}

gpu::SpecConstants AfaMechanism::readout_spec(const AttentionParams& p, uint32_t mode, int view) const {
  const AfaLayerParams& f = p.afa;
  using namespace shader;
  const uint32_t v = view == kAllChannels ? kAfaViewMean : view == kReweighting ? kAfaViewReweight : (uint32_t)view;
  gpu::SpecConstants spec;
  spec.set(kAfaReadD, (uint32_t)p.dim).set_flag(kAfaReadCausal, p.sw.causal).set(kAfaReadPrec, (uint32_t)f.precision)
      .set_flag(kAfaReadUnitary, f.unitary).set(kAfaReadPchan, (uint32_t)f.precision_channel).set(kAfaReadMode, mode)
      .set(kAfaReadView, v);
  return spec;
}

Status AfaMechanism::check_view(const AttentionParams& p, int view) const {
  if (view == kAllChannels || view == kReweighting || (view >= 0 && view < p.dim)) return Status::Ok();
  return make_error(Code::invalid_argument, std::string(name()) + " readout: view " + std::to_string(view) +
                                                " is neither a channel in [0, D = " + std::to_string(p.dim) +
                                                "), kAllChannels (-1) nor kReweighting (-2)");
}

std::vector<gpu::Binding> AfaMechanism::readout_inputs(const ops::AttentionWeightsGpu& w, const ops::AttentionCache& c,
                                                       const gpu::Buffer& timestamps) const {
  return {gpu::in(w.table()), gpu::in(timestamps), gpu::in(c.q), gpu::in(c.k)};
}

std::vector<Mechanism::Iterate> AfaMechanism::iterates(const AttentionParams& p, const ops::AttentionCache& c) const {
  std::vector<Iterate> out;
  for (const ops::AfaIterate& it : ops::afa_iterates(p, c)) out.push_back({it.buffer, it.kv_f16});
  return out;
}

const Mechanism& afa_mechanism() {
  static const AfaMechanism m;
  return m;
}

}  // namespace rfa::mech
