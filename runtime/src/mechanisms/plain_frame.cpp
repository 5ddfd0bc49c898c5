// AFA and RT-RFA layers take RFA's frame without its extras: the angles omega t (no accumulated
// phase), stationary values, no complex norms and no confidence gate.
#include <string>

#include "mechanisms/mechanism.hpp"
#include "model/config.hpp"

namespace rfa::mech {

Status check_plain_frame_config(const Mechanism& m, const ModelConfig& c, bool acc_keys_given, const std::string& label,
                                const char* doc) {
  auto bad = [&](const std::string& what) { return make_error(Code::model_error, label + ": " + what); };
  const ReferenceArgs& a = c.args;
  const std::string who = m.name();
  if (a.use_complex_input_norm != 0) return bad("args.use_complex_input_norm: " + who + " layers have no complex norms (use 0)");
  if (a.use_complex_output_norm) return bad("args.use_complex_output_norm: " + who + " layers have no complex norms (use false)");
  if (a.use_inner_residual) return bad("args.use_inner_residual: " + who + " layers have no confidence gate (use false)");
  if (acc_keys_given && (c.phase_source != PhaseSource::omega_t || !c.stationary_values))
    return bad(std::string(c.phase_source != PhaseSource::omega_t ? "args.phase_source" : "args.stationary_values") +
               ": " + who + " layers rotate by omega t with stationary values only (" + doc + ")");
  return Status::Ok();
}

Status check_plain_frame_params(const Mechanism& m, const AttentionParams& p) {
  if (p.phase != PhaseSource::omega_t || !p.sw.stationary_values || p.sw.complex_input_norm ||
      p.sw.complex_output_norm || p.sw.gate)
    return make_error(Code::invalid_argument, std::string(m.key()) +
                                                  " attention: the layer takes no accumulated phase, unrotated "
                                                  "values, complex norm or gate");
  return Status::Ok();
}

}  // namespace rfa::mech
