// The public face of a loaded model: load, describe, summarize.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "mechanisms/mechanism.hpp"
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

Result<std::shared_ptr<const Model>> load_model_memory(const ModelFiles& f) {
  auto m = load_model_files(f.name, f.config_json, f.safetensors, f.safetensors_bytes, f.encoder_json,
                             f.vocab_bpe);
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
  const AttentionParams& p = m.layer(layer).params;
  const mech::Mechanism& mech = mech::mechanism_of(p);
  KernelCurves k = mech.curves(p, head, lags);
  mech.curve_labels(k.names, k.what);
  return k;
}

Result<ChannelCurves> channel_curves(const Model& m, int layer, int head, const std::vector<double>& lags) {
  if (layer < 0 || layer >= m.num_layers() || head < 0 || head >= m.n_heads)
    return Status(Code::invalid_argument, "channel_curves: layer " + std::to_string(layer) + ", head " +
                                              std::to_string(head) + " out of range");
  const AttentionParams& p = m.layer(layer).params;
  return mech::mechanism_of(p).channel_curves(p, head, lags);
}

Result<double> basis_consistency(const Model& m, int layer) {
  if (layer < 0 || layer >= m.num_layers())
    return Status(Code::invalid_argument, "basis_consistency: layer " + std::to_string(layer) + " out of range");
  const AttentionLayer& L = m.layer(layer);
  const int HD = L.params.heads * L.params.dim, d = L.wv.in;
  if (L.wv.out != 2 * HD || L.wo.in != 2 * HD || L.wo.out != d)
    return Status(Code::unsupported, "basis_consistency: W_v is " + std::to_string(L.wv.out) + " x " +
                                         std::to_string(d) + ", W_o " + std::to_string(L.wo.out) + " x " +
                                         std::to_string(L.wo.in) + ": not a map into " + std::to_string(HD) +
                                         " complex channels and back");
  const float* wv = L.wv.weight.data.data();
  const float* wo = L.wo.weight.data.data();
  double f = 0;
  for (int r = 0; r < HD; ++r)
    for (int c = 0; c < HD; ++c) {
      // (W_V W_P)_rc = sum_x (wv[r][x] + i wv[HD + r][x]) (wo[x][c] - i wo[x][HD + c])
      double re = r == c ? -1.0 : 0.0, im = 0.0;
      for (int x = 0; x < d; ++x) {
        const double vr = wv[(size_t)r * d + x], vi = wv[(size_t)(HD + r) * d + x];
        const double pr = wo[(size_t)x * 2 * HD + c], pi = -(double)wo[(size_t)x * 2 * HD + HD + c];
        re += vr * pr - vi * pi;
        im += vr * pi + vi * pr;
      }
      f += re * re + im * im;
    }
  return std::sqrt(f);
}

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
      s.terms = mech::mechanism_of(p).head_terms(p, h);
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace rfa
