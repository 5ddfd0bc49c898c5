// The printable per-layer, per-head table of a model's physical parameters and regimes
// (rfa-run --summary).
// Each layer's lines are its mechanism's (mechanisms/*/: layer_summary).
#include <string>

#include "mechanisms/mechanism.hpp"
#include "model/model.hpp"
#include "rfa/session.hpp"

namespace rfa {

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
    s += mech::mechanism_of(p).layer_summary(l, p);
  }
  return s;
}

}  // namespace rfa
