// Model folder -> rfa::Model: config.json + model.safetensors, validated tensor by tensor, raw
// reference parameters converted to the physical AttentionParams (docs/reference-code.md §3-§8).
#pragma once

#include <string>
#include <vector>

#include "model/config.hpp"
#include "model/model.hpp"
#include "model/safetensors.hpp"
#include "rfa/status.hpp"

namespace rfa {

// Loads `dir`/config.json and `dir`/model.safetensors. Every expected tensor must be present with
// the exact shape the config implies; unexpected tensors are rejected (the reference's derived
// buffers t_measure, abs_idx, causal_mask are ignored); NaN/Inf in a used weight is rejected.
Result<Model> load_model(const std::string& dir);

// The same from an already parsed config and an opened safetensors file.
Result<Model> build_model(const ModelConfig& cfg, const SafetensorsFile& st, const std::string& dir);

// The raw per-layer parameters of MultiheadIsotropicRFA, as stored (f64), one entry per head
// unless noted. Vectors of optional parameters are empty when the flag that creates them is off.
struct RawAttentionParams {
  std::vector<double> mu_v, sigma_v, sigma_tilde_v, eta_v, gamma_v, tau_param, nu_param;
  std::vector<double> omega_v;        // [H * D/2] (conjugate pairs) or [H * D]
  std::vector<double> t_shift_param;  // [H], learn_t_shift only
  std::vector<double> P_prior_log, P_scale_log;
  std::vector<double> cn_q, cn_k, cn_v, cn_o;  // [H * D]
  std::vector<double> c_exp_v, beta_exp_v, a_per_v, b_per_v, omega_per_v;  // use_colored_prior
};

// Raw -> physical, exactly as the reference forward pass uses them. Softplus is PyTorch's
// (x > 20 -> x), in double.
Result<AttentionParams> physical_params(const ModelConfig& cfg, const RawAttentionParams& raw);

// PyTorch's F.softplus (beta 1, threshold 20) and sigmoid, in double.
double torch_softplus(double x);
double torch_sigmoid(double x);

// A per-layer, per-head table of the physical parameters, for printing.
std::string model_summary(const Model& m);

}  // namespace rfa
