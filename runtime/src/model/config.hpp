// config.json of a model folder:
//   {"format": "rfa-reference", "architecture": "lm" | "signal" | "attention", "args": {...}}
// `args` uses the argument names of the author's reference code (docs/reference-code.md §9.1); every
// key left out takes the WikiText notebook default. A few keys are ours (hidden_dim, d_in, norm,
// norm_eps, tokenizer). Unknown keys are ignored (configs often dump a whole argparse namespace);
// a known key with a wrong type or value is rejected, naming the field.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "model/model.hpp"
#include "rfa/status.hpp"

namespace rfa {

// The reference module's `args`, with the WikiText notebook defaults (docs/reference-code.md §9.1).
struct ReferenceArgs {
  // sizes
  int n_heads = 8;
  int d_e = 256;
  int d_k_total = 256;  // complex dims over all heads
  int d_v_total = 256;
  int num_blocks = 6;
  int vocab_size = 50257;
  int seq_len = 512;  // training length: scale_decay_by_time_interval divides by seq_len - 1
  // decay and exponents
  double epsilon = 1e-5;
  double max_learned_decay = 5.0;
  double max_fixed_decay = 5.0;
  double min_exponent = -10.0;
  double max_exponent = 0.0;
  // masking and time
  bool causal = true;
  bool t_equal = true;
  bool sep_params = false;
  bool lambda_real_zero = false;  // a no-op in the forward pass (docs/reference-code.md §3.1)
  // logit options
  bool use_full_residual_norm = true;
  bool use_robust_weight = true;
  int additive_bias_type = 1;        // 0, 1, 2
  int multiplicative_bias_type = 1;  // 0, 1, 2
  // learned or fixed parts
  std::optional<double> t_shift;  // null in the notebook
  bool learn_t_shift = true;
  bool learn_rotations = false;
  bool learn_decay = false;
  bool rotate_values = true;
  // noise zeroing
  bool zero_process_noise = false;
  bool zero_key_measurement_noise = false;
  // residuals and gate
  int use_total_precision_gate = 1;  // 0, 1, 2
  bool use_inner_residual = false;
  bool use_outer_residual = true;
  // norms
  int use_complex_input_norm = 0;  // 0, 1 (2 crashes in the reference)
  bool use_complex_output_norm = false;
  bool use_real_input_norm = true;
  bool use_real_output_norm = true;
  // other flags
  bool add_gaussian_noise = false;  // training-time sampling noise; ignored by the runtime
  bool use_complex_conj_constraint = true;
  bool use_colored_prior = false;
  bool scale_decay_by_time_interval = true;
  bool zero_rotations = false;
  bool use_ss_process_noise = false;
  double omega_rescale = 1.0;
  // init-only and baseline-only (parsed and type-checked, without effect on a loaded model)
  double damping = 0.05;
  bool use_rope = true;
  bool use_alibi = false;
  bool use_SC_RoPE = false;
  bool use_log_linear_decay = true;
  double zero_frac = 0.25;
  double target_ss_process_var = 0.1;
  double target_measurement_var = 1.0;
  double sigma_sq_v_floor = 0.0;
};

struct ModelConfig {
  Architecture arch = Architecture::lm;
  ReferenceArgs args;
  // ours
  int hidden_dim = 0;  // FFN width; default 4 * d_v_total
  int d_in = 0;        // signal: measurement dimension (required there)
  NormKind norm = NormKind::layer_norm;
  double norm_eps = 1e-5;  // default: 1e-5 for layer_norm; torch.finfo(float32).eps for rms_norm
  std::string tokenizer;   // lm: "bytes" | "gpt2" | "" (none: token ids only)
  // ACC (docs/variant-acc.md): where each layer's rotation angles come from, the random steps' seed,
  // and whether values are rotated into the stationary frame (false: Q/K-only rotation).
  PhaseSource phase_source = PhaseSource::omega_t;
  int step_seed = 0;
  bool stationary_values = true;
  // AFA (docs/variant-afa.md §12): every attention layer runs Adaptive Filter Attention.
  AttentionVariant variant = AttentionVariant::rfa;
  AfaPrecision afa_precision = AfaPrecision::channel_sum;
  int afa_precision_channel = 0;
  bool afa_unitary = false;
  bool afa_mix = false;
  double afa_eps = 1e-5;
  double afa_pred_dt = 1.0;
  // The config's `args` object as read, and the file's label: a mechanism's own keys are read from
  // it by the mechanism itself (model/config_fields.hpp, in Mechanism::check_config and load_params;
  // AFA's tied iterations do), so a new key needs no field here. Null for a config made in code.
  std::shared_ptr<const nlohmann::json> args_json;
  std::string label = "config.json";
  // RT-RFA (docs/variant-rt.md §13): attention_variant "rt".
  RtCovariance rt_covariance = RtCovariance::stationary;
  RtKernel rt_kernel = RtKernel::student_t;
  double rt_eps = 1e-6;
  // The attention window the model was trained with (0: every past key). W > 0 (causal models):
  // each position attends to its last W keys, itself included; sessions and the twin default to it.
  int attention_window = 0;

  int head_dim() const { return args.d_k_total / args.n_heads; }
};

// Parses and validates config text. `label` names the file in messages. Never throws.
Result<ModelConfig> parse_config(std::string_view text, const std::string& label = "config.json");
// Reads and parses `path`.
Result<ModelConfig> load_config(const std::string& path);

}  // namespace rfa
