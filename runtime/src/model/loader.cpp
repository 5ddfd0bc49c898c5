#include "model/loader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

namespace rfa {

double torch_softplus(double x) { return x > 20.0 ? x : std::log1p(std::exp(x)); }
double torch_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string index_str(const std::vector<int64_t>& shape, size_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 0) break;
    idx[d] = (int64_t)(flat % (size_t)shape[d]);
    flat /= (size_t)shape[d];
  }
  return shape_str(idx);
}

enum class Finite { all, allow_inf, none };  // what non-finite values a tensor may hold

// Reads tensors from the file, checking shapes, dtypes and values, and remembers which names were
// expected so the rest can be reported as unexpected.
class TensorReader {
 public:
  explicit TensorReader(const SafetensorsFile& st) : st_(st) {}

  void ignore(const std::string& name) { expected_.insert(name); }
  bool has(const std::string& name) const { return st_.contains(name); }

  // A required float tensor of exactly `shape`.
  Result<HostTensor> f32(const std::string& name, const std::vector<int64_t>& shape, bool check = true) {
    RFA_TRY(check_entry(name, shape, true));
    auto t = st_.read_f32(name);
    if (!t) return t.status();
    if (check) {
      for (size_t i = 0; i < t->data.size(); ++i)
        if (!std::isfinite(t->data[i])) return non_finite(name, t->shape, i, t->data[i]);
    }
    return t;
  }

  Result<std::vector<double>> f64(const std::string& name, const std::vector<int64_t>& shape,
                                  Finite finite = Finite::all) {
    RFA_TRY(check_entry(name, shape, true));
    auto v = st_.read_f64(name);
    if (!v) return v.status();
    for (size_t i = 0; i < v->size(); ++i) {
      double x = (*v)[i];
      if (finite == Finite::none || std::isfinite(x)) continue;
      if (finite == Finite::allow_inf && std::isinf(x)) continue;
      return non_finite(name, shape, i, x);
    }
    return v;
  }

  // Validates the shape of a tensor that may be present but is unused (reads nothing).
  Status optional_unused(const std::string& name, const std::vector<int64_t>& shape) {
    if (!has(name)) {
      expected_.insert(name);
      return Status::Ok();
    }
    return check_entry(name, shape, false);
  }

  Status unexpected() const {
    std::vector<std::string> extra;
    for (const TensorEntry& e : st_.tensors())
      if (!expected_.count(e.name)) extra.push_back(e.name);
    if (extra.empty()) return Status::Ok();
    std::string list;
    for (size_t i = 0; i < extra.size() && i < 5; ++i) list += (i ? ", '" : "'") + extra[i] + "'";
    if (extra.size() > 5) list += ", ... (" + std::to_string(extra.size()) + " in all)";
    return make_error(Code::model_error, st_.label() + ": unexpected tensor" + (extra.size() > 1 ? "s " : " ") +
                                             list + " (not used by this config; wrong architecture or flags?)");
  }

 private:
  Status check_entry(const std::string& name, const std::vector<int64_t>& shape, bool used) {
    expected_.insert(name);
    const TensorEntry* e = st_.find(name);
    if (!e)
      return make_error(Code::model_error, st_.label() + ": tensor '" + name + "' missing (expected shape " +
                                               shape_str(shape) + ")");
    if (e->shape != shape)
      return make_error(Code::model_error, st_.label() + ": tensor '" + name + "': shape " + shape_str(shape) +
                                               " expected, " + shape_str(e->shape) + " found");
    if (used && (e->dtype == DType::i64 || e->dtype == DType::i32))
      return make_error(Code::model_error, st_.label() + ": tensor '" + name + "': dtype " + dtype_name(e->dtype) +
                                               " found, a float dtype (F32, F16, BF16, F64) expected");
    return Status::Ok();
  }

  Status non_finite(const std::string& name, const std::vector<int64_t>& shape, size_t i, double x) const {
    return make_error(Code::model_error, st_.label() + ": tensor '" + name + "': element " + std::to_string(i) +
                                             " (index " + index_str(shape, i) + ") is " +
                                             (std::isnan(x) ? "NaN" : x > 0 ? "+Inf" : "-Inf"));
  }

  const SafetensorsFile& st_;
  std::set<std::string> expected_;
};

Result<LinearWeights> load_linear(TensorReader& r, const std::string& prefix, int in, int out) {
  LinearWeights l;
  l.in = in;
  l.out = out;
  auto w = r.f32(prefix + ".weight", {out, in});
  if (!w) return w.status();
  auto b = r.f32(prefix + ".bias", {out});
  if (!b) return b.status();
  l.weight = w.take();
  l.bias = b.take();
  return l;
}

// A LayerNorm (weight + bias) or RMSNorm (weight). When `used` is false (the block's flag is off)
// the reference still holds the module: its tensors may be present, are shape-checked, not used.
Result<NormWeights> load_norm(TensorReader& r, const std::string& prefix, const ModelConfig& cfg, int d, bool used) {
  NormWeights n;
  if (cfg.norm == NormKind::none) return n;
  if (!used) {
    RFA_TRY(r.optional_unused(prefix + ".weight", {d}));
    if (cfg.norm == NormKind::layer_norm) RFA_TRY(r.optional_unused(prefix + ".bias", {d}));
    return n;
  }
  n.kind = cfg.norm;
  n.eps = cfg.norm_eps;
  auto w = r.f32(prefix + ".weight", {d});
  if (!w) return w.status();
  n.weight = w.take();
  if (cfg.norm == NormKind::layer_norm) {
    auto b = r.f32(prefix + ".bias", {d});
    if (!b) return b.status();
    n.bias = b.take();
  }
  return n;
}

#define RFA_ASSIGN(dst, expr)           \
  do {                                  \
    auto rfa_r_ = (expr);               \
    if (!rfa_r_) return rfa_r_.status(); \
    dst = rfa_r_.take();                \
  } while (0)

Result<AttentionLayer> load_attention(TensorReader& r, const std::string& p, const ModelConfig& cfg) {
  const ReferenceArgs& a = cfg.args;
  const int H = a.n_heads, D = cfg.head_dim(), de = a.d_e;
  AttentionLayer layer;
  RFA_ASSIGN(layer.wq, load_linear(r, p + "W_q", de, 2 * a.d_k_total));
  RFA_ASSIGN(layer.wk, load_linear(r, p + "W_k", de, 2 * a.d_k_total));
  RFA_ASSIGN(layer.wv, load_linear(r, p + "W_v", de, 2 * a.d_v_total));
  RFA_ASSIGN(layer.wo, load_linear(r, p + "W_o", 2 * a.d_v_total, de));

  RawAttentionParams raw;
  const std::vector<int64_t> h = {H};
  // learn_decay keeps mu_v = logit(mu0), which is -inf for the mu0 = 0 heads: sigmoid(-inf) = 0 is
  // well defined there, so infinities are allowed (NaN is not).
  RFA_ASSIGN(raw.mu_v, r.f64(p + "mu_v", h, a.learn_decay ? Finite::allow_inf : Finite::all));
  RFA_ASSIGN(raw.sigma_v, r.f64(p + "sigma_v", h));
  RFA_ASSIGN(raw.sigma_tilde_v, r.f64(p + "sigma_tilde_v", h));
  RFA_ASSIGN(raw.eta_v, r.f64(p + "eta_v", h));
  RFA_ASSIGN(raw.gamma_v, r.f64(p + "gamma_v", h));
  RFA_ASSIGN(raw.tau_param, r.f64(p + "tau_param", h));
  RFA_ASSIGN(raw.nu_param, r.f64(p + "nu_param", h));
  const int64_t w = a.use_complex_conj_constraint ? D / 2 : D;
  const bool omega_zeroed = a.zero_rotations && !a.learn_rotations;
  RFA_ASSIGN(raw.omega_v, r.f64(p + "omega_v", {H, w}, omega_zeroed ? Finite::none : Finite::all));
  if (a.learn_t_shift) RFA_ASSIGN(raw.t_shift_param, r.f64(p + "t_shift_param", {1, H}));
  const bool gate = a.use_inner_residual && a.use_total_precision_gate == 1;
  const Finite gate_finite = gate ? Finite::all : Finite::none;  // unused unless the gate is on
  RFA_ASSIGN(raw.P_prior_log, r.f64(p + "P_prior_log", {1, 1, H, 1, 1}, gate_finite));
  RFA_ASSIGN(raw.P_scale_log, r.f64(p + "P_scale_log", {1, 1, H, 1, 1}, gate_finite));
  const std::vector<int64_t> cn = {1, 1, H, D, 1};
  if (a.use_complex_input_norm == 1) {
    RFA_ASSIGN(raw.cn_q, r.f64(p + "cn_q.gamma", cn));
    RFA_ASSIGN(raw.cn_k, r.f64(p + "cn_k.gamma", cn));
    RFA_ASSIGN(raw.cn_v, r.f64(p + "cn_v.gamma", cn));
  }
  if (a.use_complex_output_norm) RFA_ASSIGN(raw.cn_o, r.f64(p + "cn_o.gamma", cn));
  if (a.use_colored_prior) {
    // Present whenever the flag is set; used only when learn_decay does not take precedence.
    const Finite f = a.learn_decay ? Finite::none : Finite::all;
    RFA_ASSIGN(raw.c_exp_v, r.f64(p + "c_exp_v", h, f));
    RFA_ASSIGN(raw.beta_exp_v, r.f64(p + "beta_exp_v", h, f));
    RFA_ASSIGN(raw.a_per_v, r.f64(p + "a_per_v", h, f));
    RFA_ASSIGN(raw.b_per_v, r.f64(p + "b_per_v", h, f));
    RFA_ASSIGN(raw.omega_per_v, r.f64(p + "omega_per_v", h, f));
  }
  // Derived buffers (pure functions of the length; 192 MiB per layer in the reference).
  for (const char* b : {"t_measure", "abs_idx", "causal_mask"}) r.ignore(p + b);

  auto params = physical_params(cfg, raw);
  if (!params) return params.status();
  layer.params = params.take();
  return layer;
}

std::string folder_name(const std::string& dir) {
  std::filesystem::path p(dir);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "models/x/" -> "x"
  std::string n = p.filename().string();
  return n.empty() || n == "." ? std::filesystem::absolute(p).filename().string() : n;
}

}  // namespace

Result<AttentionParams> physical_params(const ModelConfig& cfg, const RawAttentionParams& raw) {
  const ReferenceArgs& a = cfg.args;
  const int H = a.n_heads, D = cfg.head_dim();
  const double eps = a.epsilon;
  AttentionParams out;
  out.heads = H;
  out.dim = D;
  auto need = [&](const std::vector<double>& v, size_t n, const char* what) -> Status {
    if (v.size() == n) return Status::Ok();
    return make_error(Code::invalid_argument, std::string("physical_params: ") + what + ": " +
                                                  std::to_string(n) + " values expected, " +
                                                  std::to_string(v.size()) + " given");
  };
  for (auto [v, name] : {std::pair{&raw.mu_v, "mu_v"}, {&raw.sigma_v, "sigma_v"}, {&raw.sigma_tilde_v, "sigma_tilde_v"},
                         {&raw.eta_v, "eta_v"}, {&raw.gamma_v, "gamma_v"}, {&raw.tau_param, "tau_param"},
                         {&raw.nu_param, "nu_param"}})
    RFA_TRY(need(*v, (size_t)H, name));
  RFA_TRY(need(raw.omega_v, (size_t)H * (a.use_complex_conj_constraint ? D / 2 : D), "omega_v"));
  if (a.learn_t_shift) RFA_TRY(need(raw.t_shift_param, (size_t)H, "t_shift_param"));
  const bool gate = a.use_inner_residual && a.use_total_precision_gate == 1;
  if (gate) {
    RFA_TRY(need(raw.P_prior_log, (size_t)H, "P_prior_log"));
    RFA_TRY(need(raw.P_scale_log, (size_t)H, "P_scale_log"));
  }
  const bool colored = a.use_colored_prior && !a.learn_decay;
  if (colored)
    for (auto [v, name] : {std::pair{&raw.c_exp_v, "c_exp_v"}, {&raw.beta_exp_v, "beta_exp_v"}, {&raw.a_per_v, "a_per_v"},
                           {&raw.b_per_v, "b_per_v"}, {&raw.omega_per_v, "omega_per_v"}})
      RFA_TRY(need(*v, (size_t)H, name));
  const size_t HD = (size_t)H * D;
  if (a.use_complex_input_norm == 1) {
    RFA_TRY(need(raw.cn_q, HD, "cn_q.gamma"));
    RFA_TRY(need(raw.cn_k, HD, "cn_k.gamma"));
    RFA_TRY(need(raw.cn_v, HD, "cn_v.gamma"));
  }
  if (a.use_complex_output_norm) RFA_TRY(need(raw.cn_o, HD, "cn_o.gamma"));

  // ---- switches (docs/reference-code.md §4.3 order: learn_decay, colored, ss_process_noise, default) ----
  AttentionSwitches& sw = out.sw;
  sw.covariance = a.learn_decay            ? Covariance::residual_diffusion
                  : a.use_colored_prior    ? Covariance::colored
                  : a.use_ss_process_noise ? Covariance::hybrid
                                           : Covariance::ou_rate;
  sw.additive_bias = (AdditiveBias)a.additive_bias_type;      // 0 none, 1 -log V, 2 linear in lag
  sw.precision = (RobustPrecision)a.multiplicative_bias_type;  // 0 1/sqrt(d), 1 1/(nu V), 2 1/(s2 lag + eta2)
  sw.robust = a.use_robust_weight;
  sw.full_residual = a.use_full_residual_norm;
  sw.counter_rotate = a.rotate_values;
  // The mask comes from forward(causal=...): True in the LM's evaluation and in the signal
  // predictor; args.causal lets a config turn it off (it has no other effect in the reference).
  sw.causal = a.causal;
  sw.shift_rotation = true;  // the reference rotates by e^{i omega s} whenever a shift is active
  sw.gate = gate;
  sw.complex_input_norm = a.use_complex_input_norm == 1;
  sw.complex_output_norm = a.use_complex_output_norm;
  sw.min_exponent = a.min_exponent;
  sw.max_exponent = a.max_exponent;
  sw.cov_floor = 0.01;  // cov_epsilon in every reference covariance

  // ---- decay scale (docs/reference-code.md §3.1) ----
  double scale_r = 1.0;
  if (a.scale_decay_by_time_interval)
    scale_r = (a.learn_decay ? a.max_learned_decay : a.max_fixed_decay) / (double)(a.seq_len - 1);

  // ---- lag shift (docs/reference-code.md §4.1) ----
  // learn_t_shift: softplus(t_shift_param), whatever t_shift forward() receives. Otherwise the
  // scalar forward() receives: the signal predictor (ETT_NextStep_Predictor) always passes 1; the
  // LM passes none, and args.t_shift stands for an explicit one. None or 0 means no shift.
  double fixed_shift = 0.0;
  if (cfg.arch == Architecture::signal) fixed_shift = 1.0;
  else if (a.t_shift) fixed_shift = *a.t_shift;

  // zero_rotations zeroes omega_v at initialisation; the reference never zeroes it in forward(), so
  // with learn_rotations the stored (learned from zero) values are used.
  const bool omega_zeroed = a.zero_rotations && !a.learn_rotations;
  out.head.resize((size_t)H);
  out.omega.assign(HD, 0.0);
  for (int hh = 0; hh < H; ++hh) {
    HeadParams& hp = out.head[(size_t)hh];
    const size_t i = (size_t)hh;
    hp.mu = a.learn_decay ? scale_r * torch_sigmoid(raw.mu_v[i]) + eps : scale_r * raw.mu_v[i];
    hp.sigma2 = a.zero_process_noise ? 0.0 : torch_softplus(raw.sigma_v[i]);
    hp.s2t = a.zero_process_noise ? 0.0 : torch_softplus(raw.sigma_tilde_v[i]);
    hp.eta2 = a.zero_key_measurement_noise ? 0.0 : torch_softplus(raw.eta_v[i]) + eps;
    hp.gamma2 = torch_softplus(raw.gamma_v[i]) + eps;
    const double sp_nu = torch_softplus(raw.nu_param[i]);
    hp.nu = D * sp_nu + 2.0 + eps;
    hp.kappa = (hp.nu + D) / D;
    hp.tau = torch_softplus(raw.tau_param[i]) + eps;
    hp.lag_shift = a.learn_t_shift ? torch_softplus(raw.t_shift_param[i]) : fixed_shift;
    if (colored) {
      hp.c_exp = torch_softplus(raw.c_exp_v[i]);
      hp.beta_exp = torch_softplus(raw.beta_exp_v[i]);
      // The periodic amplitude is squashed below a floor so V stays positive (docs/reference-code.md §4.3 rule 2).
      const double v_zero = hp.eta2 + hp.gamma2;
      const double v_inf = hp.sigma2 / (2.0 * hp.mu + eps) + hp.gamma2;
      const double floor = 0.95 * std::min(v_zero, v_inf);
      const double ar = raw.a_per_v[i], br = raw.b_per_v[i];
      const double amp = std::sqrt(ar * ar + br * br + 1e-8);
      const double scale = (floor / amp) * std::tanh(amp / floor);
      hp.a_per = ar * scale;
      hp.b_per = br * scale;
      hp.omega_per = raw.omega_per_v[i];
    }
    if (gate) {
      hp.gate_prior_log = raw.P_prior_log[i];
      hp.gate_scale_log = raw.P_scale_log[i];
      const double nu_g = D * (sp_nu + 2.0 + eps);  // differs from nu: the 2 is multiplied by d (docs/reference-code.md §8)
      hp.gate_c = std::log(nu_g - 2.0 + eps) - std::log(nu_g + eps);
    }
    // Frequencies: conjugate pairs interleaved along d (docs/reference-code.md §2).
    for (int d = 0; d < D; ++d) {
      double w;
      if (a.use_complex_conj_constraint) {
        w = raw.omega_v[i * (size_t)(D / 2) + (size_t)(d / 2)];
        if (d % 2) w = -w;
      } else {
        w = raw.omega_v[i * (size_t)D + (size_t)d];
      }
      out.omega[i * (size_t)D + (size_t)d] = omega_zeroed ? 0.0 : w * a.omega_rescale;
    }
  }
  if (a.use_complex_input_norm == 1) {
    out.norm_q = raw.cn_q;
    out.norm_k = raw.cn_k;
    out.norm_v = raw.cn_v;
  }
  if (a.use_complex_output_norm) out.norm_o = raw.cn_o;

  for (int hh = 0; hh < H; ++hh) {
    const HeadParams& hp = out.head[(size_t)hh];
    for (double v : {hp.mu, hp.sigma2, hp.s2t, hp.eta2, hp.gamma2, hp.nu, hp.kappa, hp.tau, hp.lag_shift,
                     hp.c_exp, hp.beta_exp, hp.a_per, hp.b_per, hp.gate_c})
      if (!std::isfinite(v))
        return make_error(Code::model_error, "head " + std::to_string(hh) +
                                                 ": a physical parameter is not finite (raw values out of range)");
  }
  return out;
}

Result<Model> build_model(const ModelConfig& cfg, const SafetensorsFile& st, const std::string& dir) {
  const ReferenceArgs& a = cfg.args;
  TensorReader r(st);
  Model m;
  m.name = folder_name(dir);
  m.source_dir = dir;
  m.arch = cfg.arch;
  m.d_e = a.d_e;
  m.n_heads = a.n_heads;
  m.head_dim = cfg.head_dim();
  m.train_seq_len = a.seq_len;
  m.t_equal = a.t_equal;
  const int de = a.d_e;

  if (cfg.arch == Architecture::attention) {
    RFA_ASSIGN(m.single, load_attention(r, "", cfg));
    RFA_TRY(r.unexpected());
    return m;
  }

  m.hidden = cfg.hidden_dim;
  if (cfg.arch == Architecture::lm) {
    m.vocab = a.vocab_size;
    m.tokenizer = cfg.tokenizer;
    const std::vector<int64_t> emb = {a.vocab_size, de};
    // lm_head.weight IS token_embedding.weight in the reference. An exporter that de-duplicates
    // shared tensors keeps one of the two names; when both are present they must agree.
    const bool has_emb = r.has("token_embedding.weight"), has_head = r.has("lm_head.weight");
    RFA_ASSIGN(m.token_embedding, r.f32(has_emb || !has_head ? "token_embedding.weight" : "lm_head.weight", emb));
    if (has_emb && has_head) {
      HostTensor head;
      RFA_ASSIGN(head, r.f32("lm_head.weight", emb));
      for (size_t i = 0; i < head.data.size(); ++i)
        if (head.data[i] != m.token_embedding.data[i])
          return make_error(Code::model_error,
                            st.label() + ": tensor 'lm_head.weight' differs from 'token_embedding.weight' at element " +
                                std::to_string(i) + " (the reference ties them: they must be equal)");
    }
    RFA_ASSIGN(m.lm_head_bias, r.f32("lm_head.bias", {a.vocab_size}));
  } else {
    m.d_in = cfg.d_in;
    RFA_ASSIGN(m.signal_in, load_linear(r, "input_proj", cfg.d_in, de));
    RFA_ASSIGN(m.signal_out, load_linear(r, "output_head", de, cfg.d_in));
  }
  RFA_ASSIGN(m.backbone_in, load_linear(r, "backbone.input_proj", de, de));
  m.blocks.resize((size_t)a.num_blocks);
  for (int l = 0; l < a.num_blocks; ++l) {
    const std::string p = "backbone.blocks." + std::to_string(l) + ".";
    Block& b = m.blocks[(size_t)l];
    RFA_ASSIGN(b.norm1, load_norm(r, p + "norm1", cfg, de, a.use_real_input_norm));
    RFA_ASSIGN(b.attn, load_attention(r, p + "attn.", cfg));
    RFA_ASSIGN(b.norm2, load_norm(r, p + "norm2", cfg, de, a.use_real_output_norm));
    RFA_ASSIGN(b.ffn1, load_linear(r, p + "ffn.0", de, cfg.hidden_dim));
    RFA_ASSIGN(b.ffn2, load_linear(r, p + "ffn.2", cfg.hidden_dim, de));
    b.outer_residual = a.use_outer_residual;
  }
  RFA_ASSIGN(m.final_norm, load_norm(r, "backbone.final_norm", cfg, de, true));
  RFA_ASSIGN(m.backbone_out, load_linear(r, "backbone.output_proj", de, de));
  RFA_TRY(r.unexpected());
  return m;
}

Result<Model> load_model(const std::string& dir) {
  try {
    const std::filesystem::path root(dir);
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec))
      return make_error(Code::io_error, dir + ": not a model folder (a directory with config.json and model.safetensors)");
    auto cfg = load_config((root / "config.json").string());
    if (!cfg) return cfg.status();
    auto st = SafetensorsFile::open((root / "model.safetensors").string());
    if (!st) return st.status();
    return build_model(*cfg, *st, dir);
  } catch (const std::bad_alloc&) {
    return make_error(Code::out_of_memory, dir + ": out of host memory while loading the model");
  } catch (const std::exception& ex) {
    return make_error(Code::model_error, dir + ": " + ex.what());
  }
}

// ---- summary ---------------------------------------------------------------------------------

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

}  // namespace

std::string model_summary(const Model& m) {
  std::string s = "model '" + m.name + "' (" + architecture_name(m.arch) + "): d_e " + std::to_string(m.d_e) +
                  ", " + std::to_string(m.num_layers()) + " layer(s), " + std::to_string(m.n_heads) +
                  " heads x " + std::to_string(m.head_dim) + " complex dims";
  if (m.arch == Architecture::lm) s += ", vocab " + std::to_string(m.vocab) + ", tokenizer " + (m.tokenizer.empty() ? "none" : m.tokenizer);
  if (m.arch == Architecture::signal) s += ", d_in " + std::to_string(m.d_in);
  if (m.arch != Architecture::attention) s += ", ffn " + std::to_string(m.hidden);
  s += "\n";
  for (int l = 0; l < m.num_layers(); ++l) {
    const AttentionParams& p = m.layer(l).params;
    const AttentionSwitches& sw = p.sw;
    s += "layer " + std::to_string(l) + ": covariance " + covariance_name(sw.covariance) + ", bias " +
         std::to_string((int)sw.additive_bias) + ", precision " + std::to_string((int)sw.precision) +
         (sw.robust ? ", student-t" : ", gaussian") + (sw.full_residual ? "" : ", cross-term residual") +
         (sw.counter_rotate ? "" : ", no counter-rotation") + (sw.causal ? ", causal" : ", non-causal") +
         (sw.gate ? ", gate" : "") + (sw.complex_input_norm ? ", cnorm-in" : "") +
         (sw.complex_output_norm ? ", cnorm-out" : "") + "\n";
    s += "  head        mu  |omega| min..max      stat.var      eta2    gamma2    nu/D   kappa     tau  shift  regime\n";
    for (int h = 0; h < p.heads; ++h) {
      const HeadParams& hp = p.head[(size_t)h];
      double wmin = INFINITY, wmax = 0;
      for (int d = 0; d < p.dim; ++d) {
        double w = std::fabs(p.omega[(size_t)h * p.dim + d]);
        wmin = std::min(wmin, w);
        wmax = std::max(wmax, w);
      }
      // Stationary process variance: s2t for the covariances that learn it, else sigma2 / (2 mu),
      // infinite (Brownian) when |mu| < 1e-5 switches the reference to sigma2 * lag.
      const bool uses_s2t = sw.covariance == Covariance::stationary || sw.covariance == Covariance::residual_diffusion ||
                            sw.covariance == Covariance::hybrid;
      const bool brownian = std::fabs(hp.mu) < 1e-5 &&
                            (sw.covariance == Covariance::ou_rate || sw.covariance == Covariance::colored ||
                             sw.covariance == Covariance::hybrid);
      double sv = uses_s2t ? hp.s2t : hp.sigma2 / (2 * hp.mu);
      std::string regime;
      if (brownian) regime = "brownian";
      else regime = hp.eta2 - sv < 0 ? "diffusive" : "integrative";
      s += fmt("  %4.0f", h) + fmt(" %9.3g", hp.mu) + fmt("  %8.3g", wmin) + fmt("..%-8.3g", wmax) +
           (brownian && !uses_s2t ? std::string("           inf") : fmt(" %13.4g", sv)) + fmt(" %9.4g", hp.eta2) +
           fmt(" %9.4g", hp.gamma2) + fmt(" %7.3f", hp.nu / p.dim) + fmt(" %7.3f", hp.kappa) + fmt(" %7.4f", hp.tau) +
           fmt(" %6.3f", hp.lag_shift) + "  " + regime + "\n";
    }
  }
  return s;
}

}  // namespace rfa
