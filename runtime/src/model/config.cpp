#include "model/config.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include <nlohmann/json.hpp>

#include "mechanisms/mechanism.hpp"
#include "model/config_fields.hpp"
#include "model/file_util.hpp"
#include "model/limits.hpp"

namespace rfa {

namespace {

using json = nlohmann::json;
using config_detail::brief;
using config_detail::Fields;

void read_args(Fields& f, ReferenceArgs& a) {
  constexpr int64_t kMaxDim = 1 << 20;  // far beyond any RFA model; keeps every product in range
  f.integer("n_heads", a.n_heads, 1, 4096);
  f.integer("d_e", a.d_e, 1, kMaxDim);
  f.integer("d_k_total", a.d_k_total, 1, kMaxDim);
  f.integer("d_v_total", a.d_v_total, 1, kMaxDim);
  // null (None in a dumped argparse namespace) counts as absent where the value cannot change the
  // forward pass: sizes an architecture does not use, init-only and baseline-only settings.
  f.integer("num_blocks", a.num_blocks, 0, 4096, /*null_is_absent=*/true);
  f.integer("vocab_size", a.vocab_size, 1, 1 << 24, true);
  f.integer("seq_len", a.seq_len, 1, std::numeric_limits<int>::max());
  f.number("epsilon", a.epsilon);
  f.number("max_learned_decay", a.max_learned_decay);
  f.number("max_fixed_decay", a.max_fixed_decay);
  f.number("min_exponent", a.min_exponent);
  f.number("max_exponent", a.max_exponent);
  f.boolean("causal", a.causal);
  f.boolean("t_equal", a.t_equal);
  f.boolean("sep_params", a.sep_params);
  f.boolean("lambda_real_zero", a.lambda_real_zero);
  f.boolean("use_full_residual_norm", a.use_full_residual_norm);
  f.boolean("use_robust_weight", a.use_robust_weight);
  f.choice("additive_bias_type", a.additive_bias_type, {0, 1, 2});
  f.choice("multiplicative_bias_type", a.multiplicative_bias_type, {0, 1, 2});
  f.optional_number("t_shift", a.t_shift);
  f.boolean("learn_t_shift", a.learn_t_shift);
  f.boolean("learn_rotations", a.learn_rotations);
  f.boolean("learn_decay", a.learn_decay);
  f.boolean("rotate_values", a.rotate_values);
  f.boolean("zero_process_noise", a.zero_process_noise);
  f.boolean("zero_key_measurement_noise", a.zero_key_measurement_noise);
  f.choice("use_total_precision_gate", a.use_total_precision_gate, {0, 1, 2});
  f.boolean("use_inner_residual", a.use_inner_residual);
  f.boolean("use_outer_residual", a.use_outer_residual);
  f.choice("use_complex_input_norm", a.use_complex_input_norm, {0, 1, 2});
  f.boolean("use_complex_output_norm", a.use_complex_output_norm);
  f.boolean("use_real_input_norm", a.use_real_input_norm);
  f.boolean("use_real_output_norm", a.use_real_output_norm);
  f.boolean("add_gaussian_noise", a.add_gaussian_noise);
  f.boolean("use_complex_conj_constraint", a.use_complex_conj_constraint);
  f.boolean("use_colored_prior", a.use_colored_prior);
  f.boolean("scale_decay_by_time_interval", a.scale_decay_by_time_interval);
  f.boolean("zero_rotations", a.zero_rotations);
  f.boolean("use_ss_process_noise", a.use_ss_process_noise);
  f.number("omega_rescale", a.omega_rescale);
  f.number("damping", a.damping, true);
  f.boolean("use_rope", a.use_rope, true);
  f.boolean("use_alibi", a.use_alibi, true);
  f.boolean("use_SC_RoPE", a.use_SC_RoPE, true);
  f.boolean("use_log_linear_decay", a.use_log_linear_decay, true);
  f.number("zero_frac", a.zero_frac, true);
  f.number("target_ss_process_var", a.target_ss_process_var, true);
  f.number("target_measurement_var", a.target_measurement_var, true);
  f.number("sigma_sq_v_floor", a.sigma_sq_v_floor, true);
}

// Flag combinations the reference cannot run, or this runtime does not implement.
Status validate(const ModelConfig& c, const std::string& label) {
  const ReferenceArgs& a = c.args;
  auto bad = [&](const std::string& what) { return make_error(Code::model_error, label + ": " + what); };
  if (a.d_k_total != a.d_v_total)
    return bad("args.d_k_total (" + std::to_string(a.d_k_total) + ") != args.d_v_total (" +
               std::to_string(a.d_v_total) + "): the runtime needs equal query/key and value widths");
  if (a.d_k_total % a.n_heads != 0)
    return bad("args.d_k_total (" + std::to_string(a.d_k_total) + ") is not divisible by args.n_heads (" +
               std::to_string(a.n_heads) + ")");
  const int D = a.d_k_total / a.n_heads;
  if (D > kMaxHeadDim)
    return bad("head dim d_k_total/n_heads = " + std::to_string(a.d_k_total) + "/" + std::to_string(a.n_heads) + " = " +
               std::to_string(D) + " exceeds " + std::to_string(kMaxHeadDim) +
               ", the largest head dim the attention kernels run (more heads, or a smaller d_k_total)");
  if (a.use_complex_conj_constraint && D % 2 != 0)
    return bad("head dim d_k_total/n_heads = " + std::to_string(D) +
               " is odd, but use_complex_conj_constraint pairs frequencies as +-omega (needs an even head dim)");
  if (a.sep_params)
    return bad("args.sep_params = true (separate query/key dynamics) is unsupported by this runtime");
  if (a.use_complex_input_norm == 2)
    return bad("args.use_complex_input_norm = 2 cannot run: the reference crashes (V_norm is undefined); use 0 or 1");
  if (a.use_total_precision_gate == 2 && a.use_inner_residual)
    return bad("args.use_total_precision_gate = 2 with use_inner_residual cannot run: the reference crashes "
               "(self.P_scale does not exist); use 0 or 1");
  if (a.scale_decay_by_time_interval && a.seq_len < 2)
    return bad("args.seq_len = " + std::to_string(a.seq_len) +
               ": scale_decay_by_time_interval divides by seq_len - 1, so seq_len must be >= 2");
  if (a.epsilon < 0) return bad("args.epsilon must be >= 0, found " + std::to_string(a.epsilon));
  if (a.min_exponent > a.max_exponent)
    return bad("args.min_exponent (" + std::to_string(a.min_exponent) + ") > args.max_exponent (" +
               std::to_string(a.max_exponent) + ")");
  if (c.arch != Architecture::attention) {
    if (a.num_blocks < 1) return bad("args.num_blocks must be >= 1, found " + std::to_string(a.num_blocks));
    if (c.norm == NormKind::none && (a.use_real_input_norm || a.use_real_output_norm))
      return bad(std::string("args.norm = \"none\" with ") +
                 (a.use_real_input_norm ? "use_real_input_norm" : "use_real_output_norm") +
                 " = true cannot run: the reference calls a norm module that does not exist");
  }
  if (c.arch == Architecture::signal && c.d_in < 1)
    return bad("args.d_in (the measurement dimension) is required for architecture \"signal\"");
  if (c.arch == Architecture::lm) {
    if (c.tokenizer == "bytes" && a.vocab_size < 256)
      return bad("args.tokenizer = \"bytes\" needs vocab_size >= 256, found " + std::to_string(a.vocab_size));
  }
  return Status::Ok();
}

// The variants' keys (docs/variant-afa.md §12, docs/variant-rt.md §13) and the RFA features their
// layers do not have.
Status parse_variant(Fields& f, bool acc_keys_given, ModelConfig& c, const std::string& label) {
  std::string variant, prec;
  if (f.string("attention_variant", variant, true)) {
    if (const mech::Mechanism* m = mech::mechanism_named(variant)) c.variant = m->variant();
    else f.fail("attention_variant", "expected " + mech::mechanism_keys() + ", found \"" + variant + "\"");
  }
  std::string rt_cov, rt_kernel;
  if (f.string("rt_covariance", rt_cov, true)) {
    if (rt_cov == "stationary") c.rt_covariance = RtCovariance::stationary;
    else if (rt_cov == "ou_rate") c.rt_covariance = RtCovariance::ou_rate;
    else f.fail("rt_covariance", "expected \"stationary\" or \"ou_rate\", found \"" + rt_cov + "\"");
  }
  if (f.string("rt_kernel", rt_kernel, true)) {
    if (rt_kernel == "student_t") c.rt_kernel = RtKernel::student_t;
    else if (rt_kernel == "gaussian") c.rt_kernel = RtKernel::gaussian;
    else f.fail("rt_kernel", "expected \"student_t\" or \"gaussian\", found \"" + rt_kernel + "\"");
  }
  f.number("rt_eps", c.rt_eps, true);
  if (f.string("afa_precision", prec, true)) {
    if (prec == "channel_sum") c.afa_precision = AfaPrecision::channel_sum;
    else if (prec == "one_channel") c.afa_precision = AfaPrecision::one_channel;
    else if (prec == "weighted") c.afa_precision = AfaPrecision::weighted;
    else f.fail("afa_precision", "expected \"channel_sum\", \"one_channel\" or \"weighted\", found \"" + prec + "\"");
  }
  const int D = c.args.n_heads > 0 ? c.args.d_k_total / c.args.n_heads : 1;
  f.integer("afa_precision_channel", c.afa_precision_channel, 0, std::max(0, D - 1), true);
  f.boolean("afa_unitary", c.afa_unitary, true);
  f.boolean("afa_mix", c.afa_mix, true);
  f.number("afa_eps", c.afa_eps, true);
  f.number("afa_pred_dt", c.afa_pred_dt, true);
  RFA_TRY(f.status());
  auto bad = [&](const std::string& what) { return make_error(Code::model_error, label + ": " + what); };
  if (!(c.afa_eps >= 0) || !std::isfinite(c.afa_eps))
    return bad("args.afa_eps must be finite and >= 0, found " + std::to_string(c.afa_eps));
  if (!(c.afa_pred_dt >= 0) || !std::isfinite(c.afa_pred_dt))
    return bad("args.afa_pred_dt must be finite and >= 0, found " + std::to_string(c.afa_pred_dt));
  if (!(c.rt_eps >= 0) || !std::isfinite(c.rt_eps))
    return bad("args.rt_eps must be finite and >= 0, found " + std::to_string(c.rt_eps));
  return mech::mechanism_of(c.variant).check_config(c, acc_keys_given, label);
}

Result<ModelConfig> parse_config_json(const json& root, const std::string& label) {
  if (!root.is_object()) return make_error(Code::model_error, label + ": expected a JSON object at the top level");
  ModelConfig c;
  Fields top(root, label, "");
  std::string format, arch;
  if (!top.string("format", format) && top.status().ok())
    return make_error(Code::model_error, label + ": format: missing (expected \"rfa-reference\")");
  RFA_TRY(top.status());
  if (format != "rfa-reference")
    return make_error(Code::model_error, label + ": format: expected \"rfa-reference\", found \"" + format + "\"");
  if (!top.string("architecture", arch) && top.status().ok())
    return make_error(Code::model_error, label + ": architecture: missing (expected \"lm\", \"signal\" or \"attention\")");
  RFA_TRY(top.status());
  if (arch == "lm") c.arch = Architecture::lm;
  else if (arch == "signal") c.arch = Architecture::signal;
  else if (arch == "attention") c.arch = Architecture::attention;
  else
    return make_error(Code::model_error, label + ": architecture: expected \"lm\", \"signal\" or \"attention\", found \"" + arch + "\"");
  auto it = root.find("args");
  if (it == root.end()) return make_error(Code::model_error, label + ": args: missing (an object of the reference's arguments)");
  if (!it->is_object()) return make_error(Code::model_error, label + ": args: expected an object, found " + brief(*it));

  c.args_json = std::make_shared<const json>(*it);
  c.label = label;
  Fields f(*it, label, "args.");
  read_args(f, c.args);
  RFA_TRY(f.status());
  auto required = [&](const char* key) -> Status {
    auto k = it->find(key);
    if (k != it->end() && k->is_null())
      return make_error(Code::model_error, label + ": args." + key + ": null, but architecture \"" + arch +
                                               "\" needs it");
    return Status::Ok();
  };
  if (c.arch == Architecture::lm) RFA_TRY(required("vocab_size"));
  if (c.arch != Architecture::attention) RFA_TRY(required("num_blocks"));

  // ours
  c.hidden_dim = 4 * c.args.d_v_total;
  f.integer("hidden_dim", c.hidden_dim, 1, 1 << 24, /*null_is_absent=*/true);
  f.integer("d_in", c.d_in, 1, 1 << 20, true);
  std::string norm;
  if (auto n = it->find("norm"); n != it->end() && n->is_null()) {
    c.norm = NormKind::none;  // Norm=None in the reference network: no norm modules at all
  } else if (f.string("norm", norm)) {
    if (norm == "layer_norm" || norm == "LayerNorm" || norm == "layernorm") c.norm = NormKind::layer_norm;
    else if (norm == "rms_norm" || norm == "RMSNorm" || norm == "rmsnorm") c.norm = NormKind::rms_norm;
    else if (norm == "none" || norm == "None") c.norm = NormKind::none;
    else f.fail("norm", "expected \"layer_norm\", \"rms_norm\" or \"none\", found \"" + norm + "\"");
  }
  RFA_TRY(f.status());
  // nn.LayerNorm defaults to eps 1e-5; nn.RMSNorm(eps=None) uses torch.finfo(float32).eps.
  c.norm_eps = c.norm == NormKind::rms_norm ? (double)std::numeric_limits<float>::epsilon() : 1e-5;
  f.number("norm_eps", c.norm_eps, true);
  RFA_TRY(f.status());
  if (c.norm_eps < 0) f.fail("norm_eps", "must be >= 0");
  std::string phase;
  if (f.string("phase_source", phase, true)) {
    if (phase == "omega_t") c.phase_source = PhaseSource::omega_t;
    else if (phase == "accumulated_rope") c.phase_source = PhaseSource::accumulated_rope;
    else if (phase == "accumulated_random") c.phase_source = PhaseSource::accumulated_random;
    else if (phase == "accumulated_learned") c.phase_source = PhaseSource::accumulated_learned;
    else
      f.fail("phase_source",
             "expected \"omega_t\", \"accumulated_rope\", \"accumulated_random\" or \"accumulated_learned\", found \"" +
                 phase + "\"");
  }
  f.integer("step_seed", c.step_seed, 0, std::numeric_limits<int>::max(), true);
  f.boolean("stationary_values", c.stationary_values, true);
  f.integer("attention_window", c.attention_window, 0, 1 << 26, true);
  RFA_TRY(f.status());
  if (c.attention_window > 0 && !c.args.causal)
    return make_error(Code::model_error, label + ": args.attention_window = " + std::to_string(c.attention_window) +
                                             " needs a causal layer (args.causal = true): a window bands the causal mask");
  if (c.phase_source != PhaseSource::omega_t && !c.args.causal)
    return make_error(Code::model_error, label + ": args.phase_source = accumulated needs a causal layer "
                                                 "(args.causal = true): the prefix runs along the sequence");
  if (c.phase_source == PhaseSource::accumulated_learned && c.arch != Architecture::lm)
    return make_error(Code::model_error, label + ": args.phase_source = \"accumulated_learned\" needs architecture "
                                                 "\"lm\": the steps are looked up by token id");
  RFA_TRY(parse_variant(f, it->contains("phase_source") || it->contains("stationary_values"), c, label));
  if (c.arch == Architecture::lm) {
    std::string tok;
    if (f.string("tokenizer", tok, true)) {
      if (tok == "bytes" || tok == "gpt2") c.tokenizer = tok;
      else f.fail("tokenizer", "expected \"bytes\" or \"gpt2\", found \"" + tok + "\"");
    } else if (c.args.vocab_size == 50257) {
      c.tokenizer = "gpt2";
    } else if (c.args.vocab_size == 256) {
      c.tokenizer = "bytes";
    }
  }
  RFA_TRY(f.status());
  RFA_TRY(validate(c, label));
  return c;
}

}  // namespace

Result<ModelConfig> parse_config(std::string_view text, const std::string& label) {
  try {
    json root = json::parse(text.begin(), text.end());
    return parse_config_json(root, label);
  } catch (const json::parse_error& ex) {
    return make_error(Code::model_error, label + ": not valid JSON: " + ex.what());
  } catch (const std::exception& ex) {
    return make_error(Code::model_error, label + ": could not be parsed: " + ex.what());
  } catch (...) {
    return make_error(Code::model_error, label + ": could not be parsed");
  }
}

Result<ModelConfig> load_config(const std::string& path) {
  auto text = read_file_text(path, 64u << 20);
  if (!text) return text.status();
  return parse_config(*text, path);
}

}  // namespace rfa
