// The printable per-layer, per-head table of a model's physical parameters and regimes
// (rfa-run --summary).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/model.hpp"
#include "model/physics.hpp"
#include "rfa/session.hpp"

namespace rfa {


namespace {

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

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// An AFA layer (docs/variant-afa.md): its switches, then per head the range of its channels'
// decays and frequencies, summed noises, nu, the temperature and the channels' regimes.
std::string afa_layer_summary(int l, const AttentionParams& p) {
  const AfaLayerParams& f = p.afa;
  const char* prec = f.precision == AfaPrecision::channel_sum ? "channel sum"
                     : f.precision == AfaPrecision::one_channel ? "one channel"
                                                                : "weighted";
  std::string s = "layer " + std::to_string(l) + ": AFA (adaptive filter attention), score covariance " + prec +
                  (f.precision == AfaPrecision::one_channel ? " (channel " + std::to_string(f.precision_channel) + ")" : "") +
                  (f.unitary ? ", unitary" : "") + (f.mix ? ", mix" : "") + (p.sw.causal ? ", causal" : ", non-causal") +
                  fmt(", eps %.3g", f.eps) + fmt(", horizon %.4g", f.pred_dt) + "\n";
  s += "  head  mu min..max           |omega| min..max     sum sigma2  sum eta2  sum gamma2      nu   alpha  channels d/i/b\n";
  for (int h = 0; h < p.heads; ++h) {
    double mlo = INFINITY, mhi = 0, wlo = INFINITY, whi = 0, s2 = 0, e2 = 0, g2 = 0;
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
    }
    s += fmt("  %4.0f", h) + fmt("  %9.3g", mlo) + fmt("..%-9.3g", mhi) + fmt("  %8.3g", wlo) + fmt("..%-8.3g", whi) +
         fmt("  %10.4g", s2) + fmt(" %9.4g", e2) + fmt(" %11.4g", g2) + fmt(" %7.3f", f.nu[(size_t)h]) +
         fmt(" %7.3f", f.alpha[(size_t)h]) + "  " + std::to_string(reg[0]) + "/" + std::to_string(reg[1]) + "/" +
         std::to_string(reg[2]) + "\n";
  }
  return s;
}

// An RT-RFA layer (docs/variant-rt.md): per head the magnitude decay, the noises of S, the angular
// floor, nu, beta_s, the long-lag slope 2 mu beta_s of the logit's lag penalty and the regime of S.
std::string rt_layer_summary(int l, const AttentionParams& p) {
  const RtLayerParams& r = p.rt;
  std::string s = "layer " + std::to_string(l) + ": RT-RFA (directional RFA on the sphere), covariance " +
                  (r.covariance == RtCovariance::stationary ? "stationary" : "ou_rate") + ", kernel " +
                  (r.kernel == RtKernel::student_t ? "student-t" : "gaussian") +
                  (p.sw.causal ? ", causal" : ", non-causal") + fmt(", eps %.3g", r.eps) + "\n";
  s += "  head        mu   s2t/sigma2      eta2    gamma2   tau_th2      nu  beta_s  slope 2mu.beta  regime of S\n";
  for (int h = 0; h < p.heads; ++h) {
    const size_t i = (size_t)h;
    const double mu = r.mu[i], noise = r.covariance == RtCovariance::stationary ? r.s2t[i] : r.sigma2[i];
    const double sv = r.covariance == RtCovariance::stationary ? r.s2t[i] : (mu > 0 ? r.sigma2[i] / (2 * mu) : INFINITY);
    const char* regime = (r.covariance == RtCovariance::ou_rate && mu == 0) ? "brownian"
                         : r.eta2[i] - sv > 0                              ? "integrative"
                                                                            : "diffusive";
    s += fmt("  %4.0f", h) + fmt(" %9.3g", mu) + fmt("  %11.4g", noise) + fmt(" %9.4g", r.eta2[i]) +
         fmt(" %9.4g", r.gamma2[i]) + fmt(" %9.4g", r.tau_th2[i]) + fmt(" %7.2f", r.nu[i]) + fmt(" %7.3f", r.beta[i]) +
         fmt("  %14.4g", 2 * mu * r.beta[i]) + "  " + regime + "\n";
  }
  return s;
}

}  // namespace

std::string model_summary(const Model& m) {
  std::string s = "model '" + m.name + "' (" + architecture_name(m.arch) + "): d_e " + std::to_string(m.d_e) +
                  ", " + std::to_string(m.num_layers()) + " layer(s), " + std::to_string(m.n_heads) +
                  " heads x " + std::to_string(m.head_dim) + " complex dims";
  if (m.arch == Architecture::lm) s += ", vocab " + std::to_string(m.vocab) + ", tokenizer " + (m.tokenizer.empty() ? "none" : m.tokenizer);
  if (m.arch == Architecture::signal) s += ", d_in " + std::to_string(m.d_in);
  if (m.arch != Architecture::attention) s += ", ffn " + std::to_string(m.hidden);
  if (m.attention_window > 0) s += ", trained with an attention window of " + std::to_string(m.attention_window) + " keys";
  s += "\n";
  for (int l = 0; l < m.num_layers(); ++l) {
    const AttentionParams& p = m.layer(l).params;
    const AttentionSwitches& sw = p.sw;
    if (p.variant == AttentionVariant::afa) {
      s += afa_layer_summary(l, p);
      continue;
    }
    if (p.variant == AttentionVariant::rt) {
      s += rt_layer_summary(l, p);
      continue;
    }
    s += "layer " + std::to_string(l) + ": covariance " + covariance_name(sw.covariance) + ", bias " +
         std::to_string((int)sw.additive_bias) + ", precision " + std::to_string((int)sw.precision) +
         (sw.robust ? ", student-t" : ", gaussian") + (sw.full_residual ? "" : ", cross-term residual") +
         (sw.counter_rotate ? "" : ", no counter-rotation") + (sw.causal ? ", causal" : ", non-causal") +
         (sw.gate ? ", gate" : "") + (sw.complex_input_norm ? ", cnorm-in" : "") +
         (sw.complex_output_norm ? ", cnorm-out" : "") +
         // ACC layers (docs/variant-acc.md): the angles are accumulated steps, not omega t; the omega
         // band below is then the steps' scale (rope: the step; random: half its mean).
         (p.phase == PhaseSource::accumulated_rope      ? ", phase: accumulated rope steps"
          : p.phase == PhaseSource::accumulated_learned ? ", phase: accumulated learned steps (a " +
                                                               std::to_string(p.step_vocab) + " x " +
                                                               std::to_string(p.dim) + " table)"
          : p.phase == PhaseSource::accumulated_random
              ? ", phase: accumulated random steps (seed " + std::to_string(p.step_seed) + ", layer " +
                    std::to_string(p.step_layer) + ")"
              : "") +
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
  }
  return s;
}

}  // namespace rfa
