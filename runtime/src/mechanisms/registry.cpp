// The attention mechanisms the runtime knows: one line each. A new mechanism adds its folder
// (mechanisms/<key>/) and its line here; nothing outside asks which variant a layer is.
#include <string>
#include <vector>

#include "mechanisms/mechanism.hpp"

namespace rfa::mech {

// Each defined in its mechanism's folder.
const Mechanism& rfa_mechanism();
const Mechanism& afa_mechanism();
const Mechanism& rt_mechanism();
const Mechanism& afa_full_mechanism();

namespace {
const std::vector<const Mechanism*>& registered() {
  static const std::vector<const Mechanism*> all = {
      &rfa_mechanism(),
      &afa_mechanism(),
      &afa_full_mechanism(),
      &rt_mechanism(),
  };
  return all;
}
}  // namespace

const Mechanism* find_mechanism(AttentionVariant v) {
  for (const Mechanism* m : registered())
    if (m->variant() == v) return m;
  return nullptr;
}

const Mechanism& mechanism_of(AttentionVariant v) {
  const Mechanism* m = find_mechanism(v);
  return m ? *m : rfa_mechanism();  // unreachable for checked parameters (see the header)
}

const Mechanism* mechanism_named(const std::string& key) {
  for (const Mechanism* m : registered())
    if (key == m->key()) return m;
  return nullptr;
}

std::string mechanism_keys() {
  const std::vector<const Mechanism*>& all = registered();
  std::string s;
  for (size_t i = 0; i < all.size(); ++i)
    s += (i == 0 ? "\"" : i + 1 == all.size() ? " or \"" : ", \"") + std::string(all[i]->key()) + "\"";
  return s;
}

Status Mechanism::unsupported(const char* what) const {
  return make_error(Code::unsupported, std::string(what) + ": the layer is an " + name() + " layer; the " + what +
                                           " computes RFA's pair terms and has no " + name() + " form yet");
}

Status Mechanism::check_view(const AttentionParams&, int view) const {
  if (view == kAllChannels) return Status::Ok();
  return make_error(Code::unsupported, std::string("view ") + std::to_string(view) + ": the layer is an " + name() +
                                           " layer, whose readouts have no channel or reweighting views (AFA's)");
}

Status Mechanism::record_curves(gpu::Context&, gpu::Recorder&, const ops::AttentionWeightsGpu&, const gpu::Buffer&,
                                uint32_t, gpu::Buffer&) const {
  return unsupported("kernel curves");
}

}  // namespace rfa::mech

namespace rfa {
const char* attention_variant_name(AttentionVariant v) {
  const mech::Mechanism* m = mech::find_mechanism(v);
  return m ? m->name() : "?";
}
}  // namespace rfa
