// The public face of a loaded model: load, describe, summarize.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "model/loader.hpp"
#include "model/model.hpp"
#include "model/physics.hpp"
#include "rfa/session.hpp"

namespace rfa {

Result<std::shared_ptr<const Model>> load_model_dir(const std::string& dir) {
  auto m = load_model(dir);
  if (!m) return m.status();
  return std::shared_ptr<const Model>(std::make_shared<Model>(m.take()));
}

ModelInfo model_info(const Model& m) {
  ModelInfo i;
  i.name = m.name;
  i.architecture = architecture_name(m.arch);
  i.tokenizer = m.tokenizer;
  i.layers = m.num_layers();
  i.heads = m.n_heads;
  i.head_dim = m.head_dim;
  i.d_e = m.d_e;
  i.d_in = m.d_in;
  i.vocab = m.vocab;
  i.hidden = m.hidden;
  i.input_dim = m.arch == Architecture::signal ? m.d_in : m.arch == Architecture::attention ? m.d_e : 0;
  i.output_dim = m.arch == Architecture::lm ? m.vocab : m.arch == Architecture::signal ? m.d_in : m.d_e;
  i.t_equal = m.t_equal;
  i.attention_window = m.attention_window;
  i.source_dir = m.source_dir;
  return i;
}

const AttentionParams& layer_params(const Model& m, int layer) { return m.layer(layer).params; }

Result<KernelCurves> head_curves(const Model& m, int layer, int head, const std::vector<double>& lags) {
  if (layer < 0 || layer >= m.num_layers() || head < 0 || head >= m.n_heads)
    return Status(Code::invalid_argument, "head_curves: layer " + std::to_string(layer) + ", head " +
                                              std::to_string(head) + " out of range");
  KernelCurves k;
  k.lags = lags;
  if (m.layer(layer).params.variant == AttentionVariant::afa) {
    for (double lag : lags) {
      const physics::AfaLagTerms t = physics::afa_lag_terms(m.layer(layer).params, head, lag);
      k.decay.push_back(t.mean_decay);
      k.vcov.push_back(t.vC);
      k.precision.push_back(t.precision);
      k.bias.push_back(t.bias);
    }
    return k;
  }
  if (m.layer(layer).params.variant == AttentionVariant::rt) {
    for (double lag : lags) {
      const physics::RtLagTerms t = physics::rt_lag_terms(m.layer(layer).params, head, lag);
      k.decay.push_back(t.decay);
      k.vcov.push_back(t.S);
      k.precision.push_back(std::exp(t.log_P));
      k.bias.push_back(t.bias);
    }
    return k;
  }
  for (double lag : lags) {
    const physics::LagTerms t = physics::lag_terms(m.layer(layer).params, head, lag);
    k.decay.push_back(t.E);
    k.vcov.push_back(t.vcov);
    k.precision.push_back(t.P);
    k.bias.push_back(t.B);
  }
  return k;
}

namespace {
std::string fmt3(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

// HeadSummary::terms (docs/variant-afa.md §11, docs/variant-rt.md §10, docs/variant-acc.md §8).
std::string head_terms(const AttentionParams& p, int h) {
  const size_t i = (size_t)h;
  if (p.variant == AttentionVariant::afa) {
    const AfaLayerParams& f = p.afa;
    double lo = INFINITY, hi = 0;
    int reg[3] = {0, 0, 0};  // diffusive, integrative, brownian per channel
    for (int d = 0; d < p.dim; ++d) {
      const size_t k = i * p.dim + (size_t)d;
      const double mu = f.unitary ? 0.0 : f.mu[k];
      lo = std::min(lo, mu);
      hi = std::max(hi, mu);
      reg[mu == 0 ? 2 : f.eta2[k] - f.sigma2[k] / (2 * mu) > 0 ? 1 : 0] += 1;
    }
    // Short enough for one line of the viewer's regimes table: d/i/B counts the channels that are
    // diffusive / integrative / Brownian.
    return "mu " + fmt3(lo) + ".." + fmt3(hi) + ", d/i/B " + std::to_string(reg[0]) + "/" + std::to_string(reg[1]) +
           "/" + std::to_string(reg[2]) + ", alpha " + fmt3(f.alpha[i]);
  }
  if (p.variant == AttentionVariant::rt) {
    const RtLayerParams& r = p.rt;
    return "beta_s " + fmt3(r.beta[i]) + ", tau_th2 " + fmt3(r.tau_th2[i]) + ", 2 mu beta_s " +
           fmt3(2 * r.mu[i] * r.beta[i]);
  }
  switch (p.phase) {
    case PhaseSource::accumulated_rope: return "accumulated rope steps";
    case PhaseSource::accumulated_random: return "accumulated random steps";
    case PhaseSource::accumulated_learned: return "accumulated learned steps";
    default: return "";
  }
}
}  // namespace

std::vector<HeadSummary> head_summaries(const Model& m) {
  std::vector<HeadSummary> out;
  for (int l = 0; l < m.num_layers(); ++l) {
    const AttentionParams& p = m.layer(l).params;
    for (int h = 0; h < p.heads; ++h) {
      HeadSummary s;
      s.layer = l;
      s.head = h;
      s.params = p.head[(size_t)h];
      s.regime = physics::regime(p, h);
      double lo = INFINITY, hi = 0;
      for (int d = 0; d < p.dim; ++d) {
        double w = std::fabs(p.omega[(size_t)h * p.dim + d]);
        lo = std::min(lo, w);
        hi = std::max(hi, w);
      }
      s.omega_min = p.dim ? lo : 0;
      s.omega_max = hi;
      s.variant = p.variant;
      s.terms = head_terms(p, h);
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace rfa
