// config.json parsing: defaults, types, rejected values and unrunnable flag combinations.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "model/config.hpp"

using namespace rfa;

namespace {

std::string cfg(const std::string& arch, const std::string& args) {
  return R"({"format": "rfa-reference", "architecture": ")" + arch + R"(", "args": {)" + args + "}}";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Expects a model_error whose message contains every part.
void expect_error(const std::string& text, std::initializer_list<const char*> parts) {
  auto r = parse_config(text, "cfg.json");
  INFO("config: " << text);
  REQUIRE(!r.ok());
  INFO("message: " << r.status().message());
  CHECK(r.status().code() == Code::model_error);
  CHECK(contains(r.status().message(), "cfg.json"));
  for (const char* p : parts) CHECK(contains(r.status().message(), p));
}

ModelConfig expect_ok(const std::string& text) {
  auto r = parse_config(text, "cfg.json");
  INFO("config: " << text);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return r.take();
}

}  // namespace

TEST_CASE("empty args take the WikiText notebook defaults") {
  ModelConfig c = expect_ok(cfg("lm", ""));
  const ReferenceArgs& a = c.args;
  CHECK(c.arch == Architecture::lm);
  CHECK(a.n_heads == 8);
  CHECK(a.d_e == 256);
  CHECK(a.d_k_total == 256);
  CHECK(a.d_v_total == 256);
  CHECK(a.num_blocks == 6);
  CHECK(a.vocab_size == 50257);
  CHECK(a.seq_len == 512);
  CHECK(a.epsilon == 1e-5);
  CHECK(a.max_learned_decay == 5.0);
  CHECK(a.max_fixed_decay == 5.0);
  CHECK(a.min_exponent == -10.0);
  CHECK(a.max_exponent == 0.0);
  CHECK(a.causal);
  CHECK(a.t_equal);
  CHECK(!a.sep_params);
  CHECK(a.use_full_residual_norm);
  CHECK(a.use_robust_weight);
  CHECK(a.additive_bias_type == 1);
  CHECK(a.multiplicative_bias_type == 1);
  CHECK(!a.t_shift.has_value());
  CHECK(a.learn_t_shift);
  CHECK(!a.learn_rotations);
  CHECK(!a.learn_decay);
  CHECK(a.rotate_values);
  CHECK(!a.zero_process_noise);
  CHECK(!a.zero_key_measurement_noise);
  CHECK(a.use_total_precision_gate == 1);
  CHECK(!a.use_inner_residual);
  CHECK(a.use_outer_residual);
  CHECK(a.use_complex_input_norm == 0);
  CHECK(!a.use_complex_output_norm);
  CHECK(a.use_real_input_norm);
  CHECK(a.use_real_output_norm);
  CHECK(!a.add_gaussian_noise);
  CHECK(a.use_complex_conj_constraint);
  CHECK(!a.use_colored_prior);
  CHECK(a.scale_decay_by_time_interval);
  CHECK(!a.zero_rotations);
  CHECK(!a.use_ss_process_noise);
  CHECK(a.damping == 0.05);
  CHECK(a.omega_rescale == 1.0);
  CHECK(a.use_rope);
  CHECK(!a.use_alibi);
  CHECK(!a.use_SC_RoPE);
  CHECK(a.use_log_linear_decay);
  CHECK(a.zero_frac == 0.25);
  CHECK(a.target_ss_process_var == 0.1);
  CHECK(a.target_measurement_var == 1.0);
  CHECK(a.sigma_sq_v_floor == 0.0);
  CHECK(c.hidden_dim == 1024);
  CHECK(c.norm == NormKind::layer_norm);
  CHECK(c.norm_eps == 1e-5);
  CHECK(c.tokenizer == "gpt2");
  CHECK(c.head_dim() == 32);
}

TEST_CASE("values, bools as 0/1, nulls and unknown keys") {
  ModelConfig c = expect_ok(cfg("lm", R"("n_heads": 2, "d_e": 12, "d_k_total": 8, "d_v_total": 8, "num_blocks": 3,
      "vocab_size": 256, "causal": 0, "use_robust_weight": false, "use_full_residual_norm": 0,
      "additive_bias_type": 2, "multiplicative_bias_type": 0, "t_shift": 0.5, "learn_t_shift": 0,
      "omega_rescale": 2, "epsilon": 1e-6, "hidden_dim": 20, "norm": "rms_norm",
      "device": "cuda", "lr": 0.001, "some_list": [1, 2, {"x": null}], "compute_metadata": "whatever",
      "d_in": null)"));
  CHECK(c.args.n_heads == 2);
  CHECK(c.args.d_e == 12);
  CHECK(c.args.num_blocks == 3);
  CHECK(!c.args.causal);
  CHECK(!c.args.use_robust_weight);
  CHECK(!c.args.use_full_residual_norm);
  CHECK(c.args.additive_bias_type == 2);
  CHECK(c.args.multiplicative_bias_type == 0);
  CHECK(c.args.t_shift.value() == 0.5);
  CHECK(!c.args.learn_t_shift);
  CHECK(c.args.omega_rescale == 2.0);
  CHECK(c.args.epsilon == 1e-6);
  CHECK(c.hidden_dim == 20);
  CHECK(c.norm == NormKind::rms_norm);
  CHECK(c.norm_eps == (double)std::numeric_limits<float>::epsilon());  // nn.RMSNorm(eps=None)
  CHECK(c.tokenizer == "bytes");
  CHECK(c.head_dim() == 4);

  CHECK(expect_ok(cfg("lm", R"("norm": "rms_norm", "norm_eps": 1e-6)")).norm_eps == 1e-6);
  CHECK(expect_ok(cfg("lm", R"("t_shift": null)")).args.t_shift == std::nullopt);
  CHECK(expect_ok(cfg("lm", R"("vocab_size": 1000)")).tokenizer.empty());
  CHECK(expect_ok(cfg("lm", R"("vocab_size": 1000, "tokenizer": "gpt2")")).tokenizer == "gpt2");
  CHECK(expect_ok(cfg("lm", R"("use_total_precision_gate": 2)")).args.use_total_precision_gate == 2);
  ModelConfig none = expect_ok(cfg("lm", R"("norm": "none", "use_real_input_norm": false, "use_real_output_norm": false)"));
  CHECK(none.norm == NormKind::none);
  ModelConfig sig = expect_ok(cfg("signal", R"("d_in": 7, "tokenizer": 5)"));  // tokenizer: lm only
  CHECK(sig.arch == Architecture::signal);
  CHECK(sig.d_in == 7);
  CHECK(expect_ok(cfg("attention", R"("num_blocks": 0)")).arch == Architecture::attention);
  CHECK(expect_ok(cfg("lm", R"("n_heads": 2, "d_k_total": 6, "d_v_total": 6, "use_complex_conj_constraint": false)"))
            .head_dim() == 3);
  // extra top-level keys are ignored too
  CHECK(parse_config(R"({"format": "rfa-reference", "architecture": "lm", "args": {}, "name": "x"})").ok());
}

TEST_CASE("nulls from a dumped argparse namespace") {
  // what models/train/export.py writes for a signal model: every reference key, ours, some None
  ModelConfig c = expect_ok(cfg("signal", R"("batch_size": 16, "vocab_size": null, "d_e": 8, "n_heads": 2,
      "d_k_total": 8, "d_v_total": 8, "num_blocks": 1, "t_shift": null, "compute_metadata": false,
      "hidden_dim": null, "d_in": 2, "norm": "layer_norm", "norm_eps": 1e-5, "tokenizer": null,
      "damping": null, "use_rope": null, "sigma_sq_v_floor": 0)"));
  CHECK(c.d_in == 2);
  CHECK(c.hidden_dim == 32);
  CHECK(c.args.vocab_size == 50257);  // unused by a signal model
  CHECK(expect_ok(cfg("lm", R"("d_in": null, "tokenizer": null, "vocab_size": 256)")).tokenizer == "bytes");
  expect_error(cfg("lm", R"("vocab_size": null)"), {"args.vocab_size", "null", "lm"});
  expect_error(cfg("signal", R"("d_in": 3, "num_blocks": null)"), {"args.num_blocks", "null"});
  // "norm": null is Norm=None: no norm modules (so the real-norm flags must be off)
  expect_error(cfg("lm", R"("norm": null)"), {"none", "use_real_input_norm"});
  CHECK(expect_ok(cfg("lm", R"("norm": null, "use_real_input_norm": 0, "use_real_output_norm": 0)")).norm ==
        NormKind::none);
  expect_error(cfg("lm", R"("use_robust_weight": null)"), {"args.use_robust_weight", "null"});
}

TEST_CASE("wrong types and unknown values name the field") {
  expect_error(cfg("lm", R"("causal": "yes")"), {"args.causal", "boolean", "\"yes\""});
  expect_error(cfg("lm", R"("causal": 2)"), {"args.causal"});
  expect_error(cfg("lm", R"("causal": null)"), {"args.causal", "null"});
  expect_error(cfg("lm", R"("n_heads": 2.5)"), {"args.n_heads", "integer"});
  expect_error(cfg("lm", R"("n_heads": 0)"), {"args.n_heads", "range"});
  expect_error(cfg("lm", R"("d_e": -4)"), {"args.d_e"});
  expect_error(cfg("lm", R"("vocab_size": 99999999999999999999)"), {"args.vocab_size"});
  expect_error(cfg("lm", R"("additive_bias_type": 7)"), {"args.additive_bias_type", "0, 1, 2", "7"});
  expect_error(cfg("lm", R"("multiplicative_bias_type": true)"), {"args.multiplicative_bias_type"});
  expect_error(cfg("lm", R"("use_complex_input_norm": 3)"), {"args.use_complex_input_norm"});
  expect_error(cfg("lm", R"("use_total_precision_gate": -1)"), {"args.use_total_precision_gate"});
  expect_error(cfg("lm", R"("epsilon": "small")"), {"args.epsilon", "number"});
  expect_error(cfg("lm", R"("t_shift": "1")"), {"args.t_shift"});
  expect_error(cfg("lm", R"("norm": "batch_norm")"), {"args.norm", "batch_norm"});
  expect_error(cfg("lm", R"("tokenizer": "sentencepiece")"), {"args.tokenizer", "sentencepiece"});
  expect_error(cfg("lm", R"("hidden_dim": "big")"), {"args.hidden_dim"});
  expect_error(cfg("foo", ""), {"architecture", "\"foo\""});
  expect_error(R"({"format": "rfa-physical", "architecture": "lm", "args": {}})", {"format", "rfa-physical"});
  expect_error(R"({"architecture": "lm", "args": {}})", {"format", "missing"});
  expect_error(R"({"format": "rfa-reference", "args": {}})", {"architecture", "missing"});
  expect_error(R"({"format": "rfa-reference", "architecture": "lm"})", {"args", "missing"});
  expect_error(R"({"format": "rfa-reference", "architecture": "lm", "args": [1]})", {"args", "object"});
  expect_error(R"({"format": 3, "architecture": "lm", "args": {}})", {"format", "string"});
  expect_error(R"([1, 2])", {"object"});
  expect_error(R"({"format": "rfa-reference", "architecture": "lm", "args": {)", {"not valid JSON"});
  expect_error("", {"not valid JSON"});
}

TEST_CASE("flag combinations the reference cannot run are rejected") {
  expect_error(cfg("lm", R"("use_complex_input_norm": 2)"), {"use_complex_input_norm = 2", "crashes"});
  expect_error(cfg("lm", R"("use_total_precision_gate": 2, "use_inner_residual": true)"),
               {"use_total_precision_gate = 2", "use_inner_residual"});
  expect_error(cfg("lm", R"("sep_params": true)"), {"sep_params", "unsupported"});
  expect_error(cfg("lm", R"("d_k_total": 128)"), {"d_k_total (128)", "d_v_total (256)"});
  expect_error(cfg("lm", R"("n_heads": 3)"), {"d_k_total (256)", "not divisible", "n_heads (3)"});
  expect_error(cfg("lm", R"("n_heads": 2, "d_k_total": 6, "d_v_total": 6)"), {"odd", "use_complex_conj_constraint"});
  // Any head dim up to the kernels' limit loads (12, 20, 40, 48, 80, 96, 128; odd without the
  // conjugate constraint); past it the error names the field, the head dim and the limit.
  for (int D : {12, 20, 40, 48, 80, 96, 128})
    CHECK(expect_ok(cfg("lm", R"("n_heads": 2, "d_k_total": )" + std::to_string(2 * D) + R"(, "d_v_total": )" +
                                  std::to_string(2 * D)))
              .head_dim() == D);
  CHECK(expect_ok(cfg("lm", R"("n_heads": 1, "d_k_total": 7, "d_v_total": 7, "use_complex_conj_constraint": false)"))
            .head_dim() == 7);
  expect_error(cfg("lm", R"("n_heads": 2, "d_k_total": 260, "d_v_total": 260)"),
               {"head dim", "d_k_total/n_heads", "130", "exceeds 128"});
  expect_error(cfg("lm", R"("norm": "none")"), {"none", "use_real_input_norm"});
  expect_error(cfg("lm", R"("norm": "none", "use_real_input_norm": false)"), {"use_real_output_norm"});
  expect_error(cfg("signal", ""), {"d_in", "signal"});
  expect_error(cfg("lm", R"("vocab_size": 100, "tokenizer": "bytes")"), {"bytes", "256"});
  expect_error(cfg("lm", R"("seq_len": 1)"), {"seq_len", "scale_decay_by_time_interval"});
  expect_error(cfg("lm", R"("num_blocks": 0)"), {"num_blocks"});
  expect_error(cfg("lm", R"("min_exponent": 1, "max_exponent": 0)"), {"min_exponent"});
  expect_error(cfg("lm", R"("epsilon": -1)"), {"epsilon"});
  // the same values are fine where they do not matter
  CHECK(parse_config(cfg("lm", R"("seq_len": 1, "scale_decay_by_time_interval": false)")).ok());
  CHECK(parse_config(cfg("lm", R"("use_total_precision_gate": 2, "use_inner_residual": false)")).ok());
}

TEST_CASE("load_config reads a file and reports a missing one") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / "rfa-test-config";
  fs::create_directories(dir);
  const std::string path = (dir / "config.json").string();
  {
    std::ofstream(path, std::ios::binary) << cfg("attention", R"("n_heads": 4, "d_k_total": 16, "d_v_total": 16, "d_e": 8)");
  }
  auto c = load_config(path);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  CHECK(c->args.n_heads == 4);
  {
    std::ofstream(path, std::ios::binary) << cfg("attention", R"("n_heads": "four")");
  }
  auto bad = load_config(path);
  REQUIRE(!bad.ok());
  CHECK(contains(bad.status().message(), path));
  CHECK(load_config((dir / "nope.json").string()).status().code() == Code::io_error);
  fs::remove_all(dir);
}

TEST_CASE("the AFA keys: variant, score covariance, switches, eps and horizon") {
  ModelConfig c = expect_ok(cfg("lm", ""));
  CHECK(c.variant == AttentionVariant::rfa);
  CHECK(c.afa_precision == AfaPrecision::channel_sum);
  CHECK(c.afa_eps == 1e-5);
  CHECK(c.afa_pred_dt == 1.0);
  c = expect_ok(cfg("signal", R"("num_blocks": 1, "d_in": 2, "n_heads": 2, "d_k_total": 8, "d_v_total": 8,
                    "attention_variant": "afa", "afa_precision": "one_channel", "afa_precision_channel": 3,
                    "afa_unitary": 1, "afa_mix": true, "afa_eps": 0, "afa_pred_dt": 0.25)"));
  CHECK(c.variant == AttentionVariant::afa);
  CHECK(c.afa_precision == AfaPrecision::one_channel);
  CHECK(c.afa_precision_channel == 3);
  CHECK(c.afa_unitary);
  CHECK(c.afa_mix);
  CHECK(c.afa_eps == 0);
  CHECK(c.afa_pred_dt == 0.25);
  CHECK(expect_ok(cfg("lm", R"("attention_variant": "afa", "afa_precision": "weighted")")).afa_precision ==
        AfaPrecision::weighted);
  expect_error(cfg("lm", R"("attention_variant": "rwkv")"), {"attention_variant", "\"rwkv\""});
  // The names come from the registered mechanisms, one list for the config and the public name.
  expect_error(cfg("lm", R"("attention_variant": "RT")"),
               {"attention_variant", R"(expected "rfa", "afa", "afa_full" or "rt")"});
  CHECK(std::string(attention_variant_name(AttentionVariant::rt)) == "RT-RFA");
  CHECK(std::string(attention_variant_name(AttentionVariant::afa)) == "AFA");
  CHECK(std::string(attention_variant_name((AttentionVariant)7)) == "?");
  expect_error(cfg("lm", R"("afa_precision": "sum")"), {"afa_precision", "channel_sum"});
  expect_error(cfg("lm", R"("n_heads": 2, "d_k_total": 8, "d_v_total": 8, "afa_precision_channel": 4)"),
               {"afa_precision_channel", "[0, 3]"});
  expect_error(cfg("lm", R"("afa_eps": -1)"), {"afa_eps", ">= 0"});
  expect_error(cfg("lm", R"("afa_pred_dt": "one")"), {"afa_pred_dt", "number"});
  expect_error(cfg("lm", R"("attention_variant": "afa", "use_complex_input_norm": 1)"), {"use_complex_input_norm", "AFA"});
  expect_error(cfg("lm", R"("attention_variant": "afa", "use_inner_residual": true)"), {"use_inner_residual", "AFA"});
  expect_error(cfg("lm", R"("attention_variant": "afa", "phase_source": "accumulated_rope")"), {"phase_source", "AFA"});
  expect_error(cfg("lm", R"("attention_variant": "afa", "stationary_values": false)"), {"stationary_values", "AFA"});
}

TEST_CASE("full AFA and the tied iterations' keys, read by the AFA mechanisms themselves") {
  ModelConfig c = expect_ok(cfg("lm", R"("attention_variant": "afa_full", "afa_irls_iterations": 3, "afa_irls_momentum": 0.25)"));
  CHECK(c.variant == AttentionVariant::afa_full);
  CHECK(std::string(attention_variant_name(AttentionVariant::afa_full)) == "AFA-full");
  REQUIRE(c.args_json);
  CHECK((*c.args_json)["afa_irls_iterations"] == 3);
  expect_error(cfg("lm", R"("attention_variant": "afa_full", "afa_precision": "weighted")"), {"afa_precision", "per-channel"});
  expect_error(cfg("lm", R"("attention_variant": "afa", "afa_irls_iterations": 0)"), {"args.afa_irls_iterations", "[1, 16]"});
  expect_error(cfg("lm", R"("attention_variant": "afa_full", "afa_irls_iterations": 2.5)"), {"afa_irls_iterations", "integer"});
  expect_error(cfg("lm", R"("attention_variant": "afa", "afa_irls_momentum": 1)"), {"afa_irls_momentum", "[0, 1)"});
  expect_error(cfg("lm", R"("attention_variant": "afa_full", "afa_irls_momentum": "high")"), {"afa_irls_momentum", "number"});
  // Other mechanisms ignore the keys (unknown keys are ignored, as a dumped namespace carries many).
  CHECK(expect_ok(cfg("lm", R"("afa_irls_iterations": 99)")).variant == AttentionVariant::rfa);
}

TEST_CASE("the RT-RFA keys: covariance, kernel, eps") {
  ModelConfig c = expect_ok(cfg("lm", R"("attention_variant": "rt")"));
  CHECK(c.variant == AttentionVariant::rt);
  CHECK(c.rt_covariance == RtCovariance::stationary);
  CHECK(c.rt_kernel == RtKernel::student_t);
  CHECK(c.rt_eps == 1e-6);
  c = expect_ok(cfg("lm", R"("attention_variant": "rt", "rt_covariance": "ou_rate", "rt_kernel": "gaussian", "rt_eps": 0)"));
  CHECK(c.rt_covariance == RtCovariance::ou_rate);
  CHECK(c.rt_kernel == RtKernel::gaussian);
  CHECK(c.rt_eps == 0);
  expect_error(cfg("lm", R"("rt_covariance": "colored")"), {"rt_covariance", "ou_rate"});
  expect_error(cfg("lm", R"("rt_kernel": "cauchy")"), {"rt_kernel", "student_t"});
  expect_error(cfg("lm", R"("rt_eps": -0.5)"), {"rt_eps", ">= 0"});
  expect_error(cfg("lm", R"("attention_variant": "rt", "use_complex_output_norm": true)"), {"use_complex_output_norm", "RT-RFA"});
  expect_error(cfg("lm", R"("attention_variant": "rt", "phase_source": "accumulated_random")"), {"phase_source", "RT-RFA"});
}

TEST_CASE("the ACC keys: phase source, step seed, stationary values") {
  ModelConfig c = expect_ok(cfg("signal", R"("num_blocks": 1, "d_in": 2)"));
  CHECK(c.phase_source == PhaseSource::omega_t);  // RFA's clock unless asked
  CHECK(c.step_seed == 0);
  CHECK(c.stationary_values);
  c = expect_ok(cfg("signal", R"("num_blocks": 1, "d_in": 2, "phase_source": "accumulated_random", "step_seed": 77,
                                 "stationary_values": false)"));
  CHECK(c.phase_source == PhaseSource::accumulated_random);
  CHECK(c.step_seed == 77);
  CHECK(!c.stationary_values);
  CHECK(expect_ok(cfg("lm", R"("phase_source": "accumulated_rope")")).phase_source == PhaseSource::accumulated_rope);
  CHECK(expect_ok(cfg("lm", R"("phase_source": null)")).phase_source == PhaseSource::omega_t);
  CHECK(expect_ok(cfg("lm", R"("phase_source": "accumulated_learned")")).phase_source == PhaseSource::accumulated_learned);
  expect_error(cfg("signal", R"("num_blocks": 1, "d_in": 2, "phase_source": "accumulated_learned")"),
               {"phase_source", "lm", "token id"});
  expect_error(cfg("lm", R"("phase_source": "accumulated_sum")"), {"phase_source", "accumulated_sum"});
  expect_error(cfg("lm", R"("phase_source": 1)"), {"phase_source", "string"});
  expect_error(cfg("lm", R"("step_seed": -1)"), {"step_seed"});
  expect_error(cfg("lm", R"("stationary_values": "no")"), {"stationary_values"});
  expect_error(cfg("attention", R"("phase_source": "accumulated_rope", "causal": false)"), {"phase_source", "causal"});
}

TEST_CASE("attention_window: the window the model was trained with") {
  CHECK(expect_ok(cfg("signal", R"("d_in": 2)")).attention_window == 0);
  CHECK(expect_ok(cfg("signal", R"("d_in": 2, "attention_window": 0)")).attention_window == 0);
  CHECK(expect_ok(cfg("signal", R"("d_in": 2, "attention_window": 75)")).attention_window == 75);
  CHECK(expect_ok(cfg("lm", R"("attention_window": null)")).attention_window == 0);
  expect_error(cfg("signal", R"("d_in": 2, "attention_window": -1)"), {"args.attention_window"});
  expect_error(cfg("signal", R"("d_in": 2, "attention_window": 2.5)"), {"args.attention_window", "integer"});
  expect_error(cfg("signal", R"("d_in": 2, "attention_window": "75")"), {"args.attention_window"});
  expect_error(cfg("signal", R"("d_in": 2, "attention_window": 8, "causal": false)"),
               {"args.attention_window = 8", "causal"});
}
