#include "model/loader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "model/physics.hpp"

namespace rfa {


namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';  // appended apart: g++ 12's -Wrestrict misfires on ("," + std::string)
    out += std::to_string(s[i]);
  }
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

// What non-finite values a tensor may hold. Every tensor the loader reads is checked, used or not
// (README: "NaN/Inf weights are rejected"); only the derived buffers, which are never read, are not.
enum class Finite { all, allow_inf };

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
      if (std::isfinite(x)) continue;
      if (finite == Finite::allow_inf && std::isinf(x)) continue;
      return non_finite(name, shape, i, x);
    }
    return v;
  }

  // A tensor that may be present but is unused: its shape and its values are checked (a NaN in a
  // module the flags switch off is still a broken file), nothing is kept.
  Status optional_unused(const std::string& name, const std::vector<int64_t>& shape) {
    if (!has(name)) {
      expected_.insert(name);
      return Status::Ok();
    }
    RFA_TRY(check_entry(name, shape, false));
    const TensorEntry* e = st_.find(name);
    if (e->dtype == DType::i64 || e->dtype == DType::i32) return Status::Ok();
    auto v = st_.read_f64(name);
    if (!v) return v.status();
    for (size_t i = 0; i < v->size(); ++i)
      if (!std::isfinite((*v)[i])) return non_finite(name, shape, i, (*v)[i]);
    return Status::Ok();
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

Result<AttentionLayer> load_attention(TensorReader& r, const std::string& p, const ModelConfig& cfg, int layer_index) {
  const ReferenceArgs& a = cfg.args;
  const int H = a.n_heads, D = cfg.head_dim(), de = a.d_e;
  AttentionLayer layer;
  RFA_ASSIGN(layer.wq, load_linear(r, p + "W_q", de, 2 * a.d_k_total));
  RFA_ASSIGN(layer.wk, load_linear(r, p + "W_k", de, 2 * a.d_k_total));
  RFA_ASSIGN(layer.wv, load_linear(r, p + "W_v", de, 2 * a.d_v_total));
  RFA_ASSIGN(layer.wo, load_linear(r, p + "W_o", 2 * a.d_v_total, de));

  const std::vector<int64_t> h = {H};
  if (cfg.variant == AttentionVariant::afa) {
    // docs/variant-afa.md §12: the AFA layer's own tensors; RFA's are unexpected here.
    physics::RawAfaParams raw;
    const int64_t w = a.use_complex_conj_constraint ? D / 2 : D;
    RFA_ASSIGN(raw.omega_v, r.f64(p + "omega_v", {H, w}));
    RFA_ASSIGN(raw.afa_mu_v, r.f64(p + "afa_mu_v", {H, w}));
    RFA_ASSIGN(raw.afa_sigma_v, r.f64(p + "afa_sigma_v", {H, D}));
    RFA_ASSIGN(raw.afa_eta_v, r.f64(p + "afa_eta_v", {H, D}));
    RFA_ASSIGN(raw.afa_gamma_v, r.f64(p + "afa_gamma_v", {H, D}));
    RFA_ASSIGN(raw.afa_nu_v, r.f64(p + "afa_nu_v", h));
    RFA_ASSIGN(raw.afa_alpha_v, r.f64(p + "afa_alpha_v", h));
    if (cfg.afa_mix) RFA_ASSIGN(raw.afa_delta_v, r.f64(p + "afa_delta_v", {H, D}));
    if (cfg.afa_precision == AfaPrecision::weighted) {
      RFA_ASSIGN(raw.afa_weight_v, r.f64(p + "afa_weight_v", {H, D}));
      RFA_ASSIGN(raw.afa_weight_bias_v, r.f64(p + "afa_weight_bias_v", h));
    }
    for (const char* b : {"t_measure", "abs_idx", "causal_mask"}) r.ignore(p + b);
    auto params = physics::afa_physical_params(cfg, raw);
    if (!params) return params.status();
    layer.params = params.take();
    return layer;
  }

  if (cfg.variant == AttentionVariant::rt) {
    // docs/variant-rt.md §13: the RT-RFA layer's own tensors.
    physics::RawRtParams raw;
    const int64_t w = a.use_complex_conj_constraint ? D / 2 : D;
    RFA_ASSIGN(raw.omega_v, r.f64(p + "omega_v", {H, w}));
    RFA_ASSIGN(raw.rt_mu_v, r.f64(p + "rt_mu_v", h));
    RFA_ASSIGN(raw.rt_sigma_v, r.f64(p + "rt_sigma_v", h));
    RFA_ASSIGN(raw.rt_eta_v, r.f64(p + "rt_eta_v", h));
    RFA_ASSIGN(raw.rt_gamma_v, r.f64(p + "rt_gamma_v", h));
    RFA_ASSIGN(raw.rt_tau_th_v, r.f64(p + "rt_tau_th_v", h));
    RFA_ASSIGN(raw.rt_nu_v, r.f64(p + "rt_nu_v", h));
    RFA_ASSIGN(raw.rt_beta_v, r.f64(p + "rt_beta_v", h));
    for (const char* b : {"t_measure", "abs_idx", "causal_mask"}) r.ignore(p + b);
    auto params = physics::rt_physical_params(cfg, raw);
    if (!params) return params.status();
    layer.params = params.take();
    return layer;
  }

  physics::RawAttentionParams raw;
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
  RFA_ASSIGN(raw.omega_v, r.f64(p + "omega_v", {H, w}));
  if (a.learn_t_shift) RFA_ASSIGN(raw.t_shift_param, r.f64(p + "t_shift_param", {1, H}));
  // Unused unless the gate is on, and checked all the same.
  RFA_ASSIGN(raw.P_prior_log, r.f64(p + "P_prior_log", {1, 1, H, 1, 1}));
  RFA_ASSIGN(raw.P_scale_log, r.f64(p + "P_scale_log", {1, 1, H, 1, 1}));
  const std::vector<int64_t> cn = {1, 1, H, D, 1};
  if (a.use_complex_input_norm == 1) {
    RFA_ASSIGN(raw.cn_q, r.f64(p + "cn_q.gamma", cn));
    RFA_ASSIGN(raw.cn_k, r.f64(p + "cn_k.gamma", cn));
    RFA_ASSIGN(raw.cn_v, r.f64(p + "cn_v.gamma", cn));
  }
  if (a.use_complex_output_norm) RFA_ASSIGN(raw.cn_o, r.f64(p + "cn_o.gamma", cn));
  if (a.use_colored_prior) {
    // Present whenever the flag is set; used only when learn_decay does not take precedence (and
    // checked either way).
    RFA_ASSIGN(raw.c_exp_v, r.f64(p + "c_exp_v", h));
    RFA_ASSIGN(raw.beta_exp_v, r.f64(p + "beta_exp_v", h));
    RFA_ASSIGN(raw.a_per_v, r.f64(p + "a_per_v", h));
    RFA_ASSIGN(raw.b_per_v, r.f64(p + "b_per_v", h));
    RFA_ASSIGN(raw.omega_per_v, r.f64(p + "omega_per_v", h));
  }
  // Derived buffers (pure functions of the length; 192 MiB per layer in the reference).
  for (const char* b : {"t_measure", "abs_idx", "causal_mask"}) r.ignore(p + b);

  auto params = physics::physical_params(cfg, raw);
  if (!params) return params.status();
  layer.params = params.take();
  // ACC: the phase source of every layer; random steps draw per layer (docs/variant-acc.md).
  layer.params.phase = cfg.phase_source;
  layer.params.step_seed = (uint32_t)cfg.step_seed;
  layer.params.step_layer = (uint32_t)layer_index;
  layer.params.sw.stationary_values = cfg.stationary_values;
  if (cfg.phase_source == PhaseSource::accumulated_learned) {
    // docs/variant-acc.md: the layer's learned step angles Phi [vocab][D], shared by its heads.
    RFA_ASSIGN(layer.params.step_table, r.f64(p + "acc_phi", {a.vocab_size, D}));
    layer.params.step_vocab = a.vocab_size;
  }
  return layer;
}

std::string folder_name(const std::string& dir) {
  std::filesystem::path p(dir);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // "models/x/" -> "x"
  std::string n = p.filename().string();
  return n.empty() || n == "." ? std::filesystem::absolute(p).filename().string() : n;
}

}  // namespace


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
  m.attention_window = cfg.attention_window;
  const int de = a.d_e;

  if (cfg.arch == Architecture::attention) {
    RFA_ASSIGN(m.single, load_attention(r, "", cfg, 0));
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
    RFA_ASSIGN(b.attn, load_attention(r, p + "attn.", cfg, l));
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

}  // namespace rfa
