// Model folders -> rfa::Model: random small models of each architecture written with the
// safetensors writer, loaded back, physical parameters checked against hand computations of
// docs/reference-code.md §3-§8, and every class of bad input rejected with a useful message.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/loader.hpp"
#include "rfa/session.hpp"
#include "model/safetensors.hpp"
#include "model/tokenizer.hpp"
#include "test_support.hpp"

using namespace rfa;
namespace fs = std::filesystem;
using json = nlohmann::json;
using Tensors = std::map<std::string, TensorToWrite>;

namespace {

fs::path scratch(const std::string& name) { return test::temp_dir("loader_" + name); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Small sizes: H = 2 heads of D = 4 complex dims, d_e = 6.
json small_args(json extra = json::object()) {
  json a = {{"n_heads", 2}, {"d_e", 6}, {"d_k_total", 8}, {"d_v_total", 8}, {"num_blocks", 2}, {"vocab_size", 50}};
  for (auto it = extra.begin(); it != extra.end(); ++it) a[it.key()] = it.value();
  return a;
}

std::string config_text(const std::string& arch, const json& args) {
  return json{{"format", "rfa-reference"}, {"architecture", arch}, {"args", args}}.dump(2);
}

struct Gen {
  std::mt19937 rng;
  explicit Gen(uint32_t seed) : rng(seed) {}
  std::vector<float> uniform(size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
  }
};

int64_t prod(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

void put(Tensors& t, const std::string& name, std::vector<int64_t> shape, std::vector<float> data) {
  REQUIRE((int64_t)data.size() == prod(shape));
  t[name] = TensorToWrite{std::move(shape), std::move(data), DType::f32};
}

void put_random(Tensors& t, Gen& g, const std::string& name, std::vector<int64_t> shape, float lo = -0.5f,
                float hi = 0.5f) {
  put(t, name, shape, g.uniform((size_t)prod(shape), lo, hi));
}

void linear(Tensors& t, Gen& g, const std::string& p, int in, int out) {
  put_random(t, g, p + ".weight", {out, in});
  put_random(t, g, p + ".bias", {out});
}

// Every tensor of one AFA layer (docs/variant-afa.md §12).
void afa_tensors(Tensors& t, Gen& g, const std::string& p, const ModelConfig& c) {
  const ReferenceArgs& a = c.args;
  const int H = a.n_heads, D = c.head_dim(), W = a.use_complex_conj_constraint ? D / 2 : D;
  put_random(t, g, p + "omega_v", {H, W}, 0, 1);
  put_random(t, g, p + "afa_mu_v", {H, W}, -4, 2);
  for (const char* n : {"afa_sigma_v", "afa_eta_v", "afa_gamma_v"}) put_random(t, g, p + n, {H, D}, -3, 2);
  put_random(t, g, p + "afa_nu_v", {H}, -1, 2);
  put_random(t, g, p + "afa_alpha_v", {H}, 0.5, 1.5);
  if (c.afa_mix) put_random(t, g, p + "afa_delta_v", {H, D}, -2, 2);
  if (c.afa_precision == AfaPrecision::weighted) {
    put_random(t, g, p + "afa_weight_v", {H, D}, -2, 2);
    put_random(t, g, p + "afa_weight_bias_v", {H}, -5, 0);
  }
}

// Every tensor of one MultiheadIsotropicRFA layer's state_dict (docs/reference-code.md §10), or
// of an AFA layer.
void attention_tensors(Tensors& t, Gen& g, const std::string& p, const ModelConfig& c, bool with_buffers) {
  const ReferenceArgs& a = c.args;
  const int H = a.n_heads, D = c.head_dim(), de = a.d_e;
  linear(t, g, p + "W_q", de, 2 * a.d_k_total);
  linear(t, g, p + "W_k", de, 2 * a.d_k_total);
  linear(t, g, p + "W_v", de, 2 * a.d_v_total);
  linear(t, g, p + "W_o", 2 * a.d_v_total, de);
  if (c.phase_source == PhaseSource::accumulated_learned) put_random(t, g, p + "acc_phi", {a.vocab_size, D}, -3, 3);
  if (c.variant == AttentionVariant::afa) return afa_tensors(t, g, p, c);
  if (c.variant == AttentionVariant::rt) {  // docs/variant-rt.md §13
    put_random(t, g, p + "omega_v", {H, a.use_complex_conj_constraint ? D / 2 : D}, 0, 1);
    for (const char* n : {"rt_mu_v", "rt_sigma_v", "rt_eta_v", "rt_gamma_v", "rt_tau_th_v", "rt_nu_v", "rt_beta_v"})
      put_random(t, g, p + n, {H}, -3, 2);
    return;
  }
  if (a.learn_decay) {
    std::vector<float> mu = g.uniform((size_t)H, -3, 3);
    mu[0] = -std::numeric_limits<float>::infinity();  // logit(0): a mu0 = 0 head
    put(t, p + "mu_v", {H}, mu);
  } else {
    std::vector<float> mu = g.uniform((size_t)H, 1e-4f, 0.1f);
    mu[0] = 0.0f;
    put(t, p + "mu_v", {H}, mu);
  }
  put_random(t, g, p + "sigma_v", {H}, -3, 2);
  put_random(t, g, p + "sigma_tilde_v", {H}, -3, 2);
  put_random(t, g, p + "eta_v", {H}, -3, 2);
  put_random(t, g, p + "gamma_v", {H}, -3, 2);
  std::vector<float> tau = g.uniform((size_t)H, -1, 2);
  tau[0] = 25.0f;  // beyond softplus' threshold of 20: softplus(x) = x
  put(t, p + "tau_param", {H}, tau);
  put_random(t, g, p + "nu_param", {H}, 0, 5);
  put_random(t, g, p + "omega_v", {H, a.use_complex_conj_constraint ? D / 2 : D}, 0, 1);
  if (a.learn_t_shift) put_random(t, g, p + "t_shift_param", {1, H}, -1, 1);
  put_random(t, g, p + "P_prior_log", {1, 1, H, 1, 1}, -1, 1);
  put_random(t, g, p + "P_scale_log", {1, 1, H, 1, 1}, -3, 0);
  if (a.use_complex_input_norm)
    for (const char* n : {"cn_q", "cn_k", "cn_v"}) put_random(t, g, p + n + ".gamma", {1, 1, H, D, 1}, 0.5, 1.5);
  if (a.use_complex_output_norm) put_random(t, g, p + "cn_o.gamma", {1, 1, H, D, 1}, 0.5, 1.5);
  if (a.use_colored_prior) {
    put_random(t, g, p + "c_exp_v", {H}, -5, 1);
    put_random(t, g, p + "beta_exp_v", {H}, -3, 1);
    put_random(t, g, p + "a_per_v", {H}, -2, 2);
    put_random(t, g, p + "b_per_v", {H}, -2, 2);
    put_random(t, g, p + "omega_per_v", {H}, 0, 2);
  }
  if (with_buffers) {  // the derived buffers, much smaller than the reference's 4096
    const int n = 5;
    std::vector<float> tm(n), idx(n * n), mask(n * n);
    for (int i = 0; i < n; ++i) {
      tm[(size_t)i] = (float)i;
      for (int j = 0; j < n; ++j) idx[(size_t)(i * n + j)] = (float)std::abs(i - j), mask[(size_t)(i * n + j)] = j <= i;
    }
    t[p + "t_measure"] = {{n}, tm, DType::i64};
    t[p + "abs_idx"] = {{n, n}, idx, DType::i64};
    t[p + "causal_mask"] = {{1, n, n, 1}, mask, DType::f32};
  }
}

void norm_tensors(Tensors& t, Gen& g, const std::string& p, const ModelConfig& c) {
  if (c.norm == NormKind::none) return;
  put_random(t, g, p + ".weight", {c.args.d_e}, 0.5, 1.5);
  if (c.norm == NormKind::layer_norm) put_random(t, g, p + ".bias", {c.args.d_e});
}

// The full state_dict the reference would save for this config.
Tensors reference_tensors(const ModelConfig& c, uint32_t seed, bool with_buffers = false) {
  Gen g(seed);
  Tensors t;
  const ReferenceArgs& a = c.args;
  if (c.arch == Architecture::attention) {
    attention_tensors(t, g, "", c, with_buffers);
    return t;
  }
  const int de = a.d_e;
  if (c.arch == Architecture::lm) {
    put_random(t, g, "token_embedding.weight", {a.vocab_size, de}, -1, 1);
    put_random(t, g, "lm_head.bias", {a.vocab_size});
  } else {
    linear(t, g, "input_proj", c.d_in, de);
    linear(t, g, "output_head", de, c.d_in);
  }
  linear(t, g, "backbone.input_proj", de, de);
  for (int l = 0; l < a.num_blocks; ++l) {
    const std::string p = "backbone.blocks." + std::to_string(l) + ".";
    attention_tensors(t, g, p + "attn.", c, with_buffers);
    norm_tensors(t, g, p + "norm1", c);
    norm_tensors(t, g, p + "norm2", c);
    linear(t, g, p + "ffn.0", de, c.hidden_dim);
    linear(t, g, p + "ffn.2", c.hidden_dim, de);
  }
  norm_tensors(t, g, "backbone.final_norm", c);
  linear(t, g, "backbone.output_proj", de, de);
  return t;
}

ModelConfig parse_or_fail(const std::string& arch, const json& args) {
  auto c = parse_config(config_text(arch, args));
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  return c.take();
}

void write_folder(const fs::path& dir, const std::string& arch, const json& args, const Tensors& t) {
  std::ofstream(dir / "config.json", std::ios::binary) << config_text(arch, args);
  REQUIRE(write_safetensors((dir / "model.safetensors").string(), t).ok());
}

Model load_ok(const fs::path& dir) {
  auto m = load_model(dir.string());
  REQUIRE_MESSAGE(m.ok(), m.status().message());
  return m.take();
}

Status load_err(const fs::path& dir) {
  auto m = load_model(dir.string());
  REQUIRE(!m.ok());
  return m.status();
}

// ---- hand computations of docs/reference-code.md §3 -----------------------------------------------------

double sp(double x) { return x > 20 ? x : std::log(1.0 + std::exp(x)); }  // torch softplus
double raw(const Tensors& t, const std::string& name, size_t i) { return (double)t.at(name).data.at(i); }

void check_rel(double got, double want, const char* what, int h) {
  INFO(what << " head " << h << ": got " << got << " want " << want);
  CHECK(std::fabs(got - want) <= 1e-12 * std::max(1.0, std::fabs(want)));
}

// Checks the physical numbers of one layer against the formulas, written out independently.
void check_physical(const ModelConfig& c, const Tensors& t, const std::string& p, const AttentionParams& ap,
                    double expect_fixed_shift) {
  const ReferenceArgs& a = c.args;
  const int H = a.n_heads, D = c.head_dim();
  const double eps = a.epsilon;
  REQUIRE(ap.heads == H);
  REQUIRE(ap.dim == D);
  REQUIRE(ap.head.size() == (size_t)H);
  REQUIRE(ap.omega.size() == (size_t)(H * D));
  const double scale_r = a.scale_decay_by_time_interval
                             ? (a.learn_decay ? a.max_learned_decay : a.max_fixed_decay) / (a.seq_len - 1)
                             : 1.0;
  for (int h = 0; h < H; ++h) {
    const HeadParams& hp = ap.head[(size_t)h];
    const size_t i = (size_t)h;
    const double mu = a.learn_decay ? scale_r / (1.0 + std::exp(-raw(t, p + "mu_v", i))) + eps
                                    : scale_r * raw(t, p + "mu_v", i);
    check_rel(hp.mu, mu, "mu", h);
    const double s2 = a.zero_process_noise ? 0 : sp(raw(t, p + "sigma_v", i));
    check_rel(hp.sigma2, s2, "sigma2", h);
    check_rel(hp.s2t, a.zero_process_noise ? 0 : sp(raw(t, p + "sigma_tilde_v", i)), "s2t", h);
    const double eta2 = a.zero_key_measurement_noise ? 0 : sp(raw(t, p + "eta_v", i)) + eps;
    check_rel(hp.eta2, eta2, "eta2", h);
    const double g2 = sp(raw(t, p + "gamma_v", i)) + eps;
    check_rel(hp.gamma2, g2, "gamma2", h);
    const double nu = D * sp(raw(t, p + "nu_param", i)) + 2 + eps;
    check_rel(hp.nu, nu, "nu", h);
    check_rel(hp.kappa, (nu + D) / D, "kappa", h);
    check_rel(hp.tau, sp(raw(t, p + "tau_param", i)) + eps, "tau", h);
    check_rel(hp.lag_shift, a.learn_t_shift ? sp(raw(t, p + "t_shift_param", i)) : expect_fixed_shift, "lag_shift", h);
    for (int d = 0; d < D; ++d) {
      double w = a.use_complex_conj_constraint ? raw(t, p + "omega_v", i * (size_t)(D / 2) + (size_t)(d / 2)) *
                                                     (d % 2 == 0 ? 1.0 : -1.0)
                                               : raw(t, p + "omega_v", i * (size_t)D + (size_t)d);
      w = a.zero_rotations && !a.learn_rotations ? 0.0 : w * a.omega_rescale;
      check_rel(ap.omega[i * (size_t)D + (size_t)d], w, "omega", h);
    }
    if (ap.sw.covariance == Covariance::colored) {
      check_rel(hp.c_exp, sp(raw(t, p + "c_exp_v", i)), "c_exp", h);
      check_rel(hp.beta_exp, sp(raw(t, p + "beta_exp_v", i)), "beta_exp", h);
      const double F = 0.95 * std::min(eta2 + g2, s2 / (2 * mu + eps) + g2);
      const double ar = raw(t, p + "a_per_v", i), br = raw(t, p + "b_per_v", i);
      const double A = std::sqrt(ar * ar + br * br + 1e-8);
      check_rel(hp.a_per, ar * (F / A) * std::tanh(A / F), "a_per", h);
      check_rel(hp.b_per, br * (F / A) * std::tanh(A / F), "b_per", h);
      check_rel(hp.omega_per, raw(t, p + "omega_per_v", i), "omega_per", h);
      CHECK(std::fabs(hp.a_per) < F);  // squashed below the floor
    }
    if (ap.sw.gate) {
      check_rel(hp.gate_prior_log, raw(t, p + "P_prior_log", i), "gate_prior_log", h);
      check_rel(hp.gate_scale_log, raw(t, p + "P_scale_log", i), "gate_scale_log", h);
      const double nu_g = D * (sp(raw(t, p + "nu_param", i)) + 2 + eps);
      check_rel(hp.gate_c, std::log(nu_g - 2 + eps) - std::log(nu_g + eps), "gate_c", h);
    }
  }
  const auto& sw = ap.sw;
  CHECK(sw.min_exponent == a.min_exponent);
  CHECK(sw.max_exponent == a.max_exponent);
  CHECK(sw.cov_floor == 0.01);
  CHECK(sw.robust == a.use_robust_weight);
  CHECK(sw.full_residual == a.use_full_residual_norm);
  CHECK(sw.counter_rotate == a.rotate_values);
  CHECK(sw.causal == a.causal);
  CHECK(sw.shift_rotation);
  CHECK((int)sw.additive_bias == a.additive_bias_type);
  CHECK((int)sw.precision == a.multiplicative_bias_type);
  CHECK(sw.complex_input_norm == (a.use_complex_input_norm == 1));
  CHECK(sw.complex_output_norm == a.use_complex_output_norm);
  auto gains = [&](const char* n) {
    std::vector<double> v;
    for (float x : t.at(p + n + ".gamma").data) v.push_back(x);
    return v;
  };
  if (sw.complex_input_norm) {
    CHECK(ap.norm_q == gains("cn_q"));
    CHECK(ap.norm_k == gains("cn_k"));
    CHECK(ap.norm_v == gains("cn_v"));
  } else {
    CHECK(ap.norm_q.empty());
  }
  if (sw.complex_output_norm) CHECK(ap.norm_o == gains("cn_o"));
  else CHECK(ap.norm_o.empty());
}

void check_linear(const LinearWeights& l, const Tensors& t, const std::string& p, int in, int out) {
  CHECK(l.in == in);
  CHECK(l.out == out);
  CHECK(l.weight.shape == std::vector<int64_t>{out, in});
  CHECK(l.weight.data == t.at(p + ".weight").data);
  CHECK(l.bias.shape == std::vector<int64_t>{out});
  CHECK(l.bias.data == t.at(p + ".bias").data);
}

// Writes the folder, loads it, checks everything; returns the model.
Model roundtrip(const std::string& name, const std::string& arch, const json& args, double fixed_shift = 0.0,
                bool with_buffers = false) {
  fs::path dir = scratch(name);
  ModelConfig c = parse_or_fail(arch, args);
  Tensors t = reference_tensors(c, 1234, with_buffers);
  write_folder(dir, arch, args, t);
  Model m = load_ok(dir);
  const ReferenceArgs& a = c.args;
  CHECK(m.arch == c.arch);
  CHECK(m.name == "loader_" + name);
  CHECK(m.d_e == a.d_e);
  CHECK(m.n_heads == a.n_heads);
  CHECK(m.head_dim == c.head_dim());
  CHECK(m.train_seq_len == a.seq_len);
  CHECK(m.num_layers() == (c.arch == Architecture::attention ? 1 : a.num_blocks));
  if (c.arch == Architecture::attention) {
    check_physical(c, t, "", m.single.params, fixed_shift);
    check_linear(m.single.wq, t, "W_q", a.d_e, 2 * a.d_k_total);
    check_linear(m.single.wo, t, "W_o", 2 * a.d_v_total, a.d_e);
    CHECK(m.blocks.empty());
    return m;
  }
  CHECK(m.hidden == c.hidden_dim);
  if (c.arch == Architecture::lm) {
    CHECK(m.vocab == a.vocab_size);
    CHECK(m.token_embedding.data == t.at("token_embedding.weight").data);
    CHECK(m.lm_head_bias.data == t.at("lm_head.bias").data);
  } else {
    CHECK(m.d_in == c.d_in);
    check_linear(m.signal_in, t, "input_proj", c.d_in, a.d_e);
    check_linear(m.signal_out, t, "output_head", a.d_e, c.d_in);
  }
  check_linear(m.backbone_in, t, "backbone.input_proj", a.d_e, a.d_e);
  check_linear(m.backbone_out, t, "backbone.output_proj", a.d_e, a.d_e);
  CHECK(m.final_norm.kind == c.norm);
  for (int l = 0; l < a.num_blocks; ++l) {
    const std::string p = "backbone.blocks." + std::to_string(l) + ".";
    const Block& b = m.blocks[(size_t)l];
    check_physical(c, t, p + "attn.", b.attn.params, fixed_shift);
    check_linear(b.attn.wk, t, p + "attn.W_k", a.d_e, 2 * a.d_k_total);
    check_linear(b.attn.wv, t, p + "attn.W_v", a.d_e, 2 * a.d_v_total);
    check_linear(b.ffn1, t, p + "ffn.0", a.d_e, c.hidden_dim);
    check_linear(b.ffn2, t, p + "ffn.2", c.hidden_dim, a.d_e);
    CHECK(b.outer_residual == a.use_outer_residual);
    CHECK(b.norm1.kind == (a.use_real_input_norm ? c.norm : NormKind::none));
    CHECK(b.norm2.kind == (a.use_real_output_norm ? c.norm : NormKind::none));
    if (b.norm1.kind != NormKind::none) {
      CHECK(b.norm1.weight.data == t.at(p + "norm1.weight").data);
      CHECK(b.norm1.eps == c.norm_eps);
      CHECK(b.norm1.bias.empty() == (c.norm == NormKind::rms_norm));
    }
  }
  CHECK(!model_summary(m).empty());
  return m;
}

}  // namespace

TEST_CASE("lm with the notebook defaults (M1-like: scale_decay_by_time_interval)") {
  Model m = roundtrip("lm_default", "lm", small_args(), 0.0, /*with_buffers=*/true);
  const AttentionParams& p = m.layer(0).params;
  CHECK(p.sw.covariance == Covariance::ou_rate);
  CHECK(p.sw.additive_bias == AdditiveBias::neg_log_vcov);
  CHECK(p.sw.precision == RobustPrecision::inv_nu_vcov);
  CHECK(p.sw.robust);
  CHECK(!p.sw.gate);
  CHECK(m.blocks[0].norm1.kind == NormKind::layer_norm);
  CHECK(m.blocks[0].norm1.eps == 1e-5);
  CHECK(m.hidden == 32);  // 4 * d_v_total
  CHECK(m.tokenizer.empty());  // vocab 50: no default tokenizer
  CHECK(p.head[0].mu == 0.0);
  CHECK(p.head[0].tau == doctest::Approx(25.0 + 1e-5).epsilon(1e-15));
  // omega interleaves +w, -w
  CHECK(p.omega[0] == -p.omega[1]);
  CHECK(p.omega[2] == -p.omega[3]);
  const std::string s = model_summary(m);
  CHECK(contains(s, "layer 1"));
  CHECK(contains(s, "ou_rate"));
  CHECK(contains(s, "brownian"));  // head 0 has mu = 0
}

TEST_CASE("notebook initial values give the numbers of docs/reference-code.md §3.5") {
  // One attention layer at the WikiText sizes (H = 8, D = 32), d_e kept small; M1 init values.
  const int H = 8, D = 32;
  json args = {{"d_e", 4}};
  ModelConfig c = parse_or_fail("attention", args);
  Tensors t = reference_tensors(c, 7);
  std::vector<float> mu0(H), sigma(H);
  for (int h = 0; h < H; ++h) {
    mu0[(size_t)h] = h < 2 ? 0.0f : (float)(0.05 * std::pow(10000.0, -(112.0 - 16.0 * h) / 128.0));
    sigma[(size_t)h] = (float)std::log(std::expm1(2.0 * mu0[(size_t)h] * 0.1) + 1e-6);
  }
  put(t, "mu_v", {H}, mu0);
  put(t, "sigma_v", {H}, sigma);
  put(t, "sigma_tilde_v", {H}, std::vector<float>(H, 0.1f));
  put(t, "eta_v", {H}, std::vector<float>(H, 1.0f));
  put(t, "gamma_v", {H}, std::vector<float>(H, 1.0f));
  put(t, "tau_param", {H}, std::vector<float>(H, 1.0f));
  put(t, "nu_param", {H}, std::vector<float>(H, 4.0f));
  put(t, "t_shift_param", {1, H}, std::vector<float>(H, 0.0f));
  fs::path dir = scratch("notebook_init");
  write_folder(dir, "attention", args, t);
  Model m = load_ok(dir);
  const AttentionParams& p = m.single.params;
  REQUIRE(p.dim == D);
  for (int h = 0; h < H; ++h) {
    const HeadParams& hp = p.head[(size_t)h];
    CHECK(hp.tau == doctest::Approx(1.31327).epsilon(1e-5));
    CHECK(hp.nu == doctest::Approx(130.58).epsilon(1e-4));
    CHECK(hp.nu / D == doctest::Approx(4.0807).epsilon(1e-4));
    CHECK(hp.kappa == doctest::Approx(5.0807).epsilon(1e-4));
    CHECK(hp.lag_shift == doctest::Approx(0.6931).epsilon(1e-4));
    CHECK(hp.eta2 == doctest::Approx(1.31327).epsilon(1e-5));
    CHECK(hp.gamma2 == doctest::Approx(1.31327).epsilon(1e-5));
    CHECK(hp.s2t == doctest::Approx(0.7444).epsilon(1e-4));
    CHECK(hp.mu == doctest::Approx(mu0[(size_t)h] * 5.0 / 511.0).epsilon(1e-12));
    // M1 starts diffusive: sigma2 / (2 mu) ~ 0.1 * 511 / 5 (the 1e-6 in sigma_v's init shifts the
    // smallest-mu heads a little)
    if (h >= 4) CHECK(hp.sigma2 / (2 * hp.mu) == doctest::Approx(10.22).epsilon(1e-2));
  }
  CHECK(p.head[7].mu == doctest::Approx(4.89e-4).epsilon(1e-2));
  CHECK(p.head[2].mu == doctest::Approx(1.55e-6).epsilon(2e-2));
}

TEST_CASE("M2-like: no decay scaling") {
  Model m = roundtrip("lm_m2", "lm", small_args({{"scale_decay_by_time_interval", false}, {"vocab_size", 256}}));
  CHECK(m.tokenizer == "bytes");
  auto tok = load_tokenizer(m);
  REQUIRE(tok.ok());
  CHECK((*tok)->vocab_size() == 256);
}

TEST_CASE("learn_decay: sigmoid decay, residual diffusion, -inf logits allowed") {
  Model m = roundtrip("lm_learn_decay", "lm", small_args({{"learn_decay", true}, {"max_learned_decay", 3.0}}));
  const AttentionParams& p = m.layer(1).params;
  CHECK(p.sw.covariance == Covariance::residual_diffusion);
  CHECK(p.head[0].mu == doctest::Approx(1e-5).epsilon(1e-12));  // sigmoid(-inf) = 0, + eps
}

TEST_CASE("colored prior: transformed c, beta, a, b") {
  Model m = roundtrip("lm_colored", "lm", small_args({{"use_colored_prior", true}}));
  CHECK(m.layer(0).params.sw.covariance == Covariance::colored);
  // learn_decay takes precedence over the colored prior; its tensors must still be there
  Model m2 = roundtrip("lm_colored_ld", "lm", small_args({{"use_colored_prior", true}, {"learn_decay", true}}));
  CHECK(m2.layer(0).params.sw.covariance == Covariance::residual_diffusion);
}

TEST_CASE("confidence gate (M2.7)") {
  Model m = roundtrip("lm_gate", "lm", small_args({{"use_inner_residual", true}, {"use_total_precision_gate", 1}}));
  CHECK(m.layer(0).params.sw.gate);
  Model m0 = roundtrip("lm_gate0", "lm", small_args({{"use_inner_residual", true}, {"use_total_precision_gate", 0}}));
  CHECK(!m0.layer(0).params.sw.gate);
  Model m1 = roundtrip("lm_gate_off", "lm", small_args({{"use_inner_residual", false}}));
  CHECK(!m1.layer(0).params.sw.gate);
}

TEST_CASE("every other switch") {
  json args = small_args({{"additive_bias_type", 2},
                          {"multiplicative_bias_type", 0},
                          {"use_robust_weight", false},
                          {"use_full_residual_norm", 0},
                          {"rotate_values", false},
                          {"zero_process_noise", true},
                          {"zero_key_measurement_noise", true},
                          {"omega_rescale", 2.5},
                          {"use_complex_conj_constraint", false},
                          {"use_complex_input_norm", 1},
                          {"use_complex_output_norm", true},
                          {"learn_t_shift", false},
                          {"t_shift", 0.5},
                          {"use_ss_process_noise", true},
                          {"use_outer_residual", false},
                          {"use_real_input_norm", false},
                          {"causal", false},
                          {"min_exponent", -20.0},
                          {"max_exponent", 1.0},
                          {"norm", "rms_norm"},
                          {"hidden_dim", 10}});
  Model m = roundtrip("lm_switches", "lm", args, /*fixed_shift=*/0.5);
  const AttentionParams& p = m.layer(0).params;
  CHECK(p.sw.covariance == Covariance::hybrid);
  CHECK(p.sw.additive_bias == AdditiveBias::linear_lag);
  CHECK(p.sw.precision == RobustPrecision::inv_sqrt_d);
  CHECK(!m.blocks[0].outer_residual);
  CHECK(m.blocks[0].norm1.kind == NormKind::none);  // norm1 is in the file, unused
  CHECK(m.blocks[0].norm2.kind == NormKind::rms_norm);
  CHECK(m.hidden == 10);
  CHECK(p.head[1].sigma2 == 0.0);
  CHECK(p.head[1].eta2 == 0.0);

  Model z = roundtrip("lm_zero_rot", "lm", small_args({{"zero_rotations", true}, {"learn_t_shift", false}}));
  for (double w : z.layer(0).params.omega) CHECK(w == 0.0);
  // learned rotations start at zero but are trained: the stored values are used
  Model zl = roundtrip("lm_zero_rot_learned", "lm", small_args({{"zero_rotations", true}, {"learn_rotations", true}}));
  CHECK(zl.layer(0).params.omega[0] != 0.0);
  CHECK(z.layer(0).params.head[1].lag_shift == 0.0);  // no learned, no explicit shift
}

TEST_CASE("signal: the predictor passes t_shift = 1, which learn_t_shift overrides") {
  Model learned = roundtrip("signal_learned", "signal", small_args({{"d_in", 3}}));
  CHECK(learned.d_in == 3);
  // learn_t_shift = False: the layer takes the network's t_shift = 1, whatever args.t_shift says
  Model fixed = roundtrip("signal_fixed", "signal", small_args({{"d_in", 3}, {"learn_t_shift", false}, {"t_shift", 4.0}}),
                          /*fixed_shift=*/1.0);
  CHECK(fixed.layer(1).params.head[0].lag_shift == 1.0);
  CHECK(contains(model_summary(fixed), "signal"));
}

TEST_CASE("attention: one layer, keys without prefix") {
  Model m = roundtrip("attention", "attention", small_args({{"num_blocks", 0}}), 0.0, true);
  CHECK(m.num_layers() == 1);
  Model e = roundtrip("attention_shift", "attention", small_args({{"learn_t_shift", false}, {"t_shift", 2.0}}), 2.0);
  CHECK(e.single.params.head[1].lag_shift == 2.0);
  auto tok = load_tokenizer(m);
  CHECK(!tok.ok());
}

TEST_CASE("tied lm_head, optional unused norms, half-precision storage") {
  json args = small_args();
  ModelConfig c = parse_or_fail("lm", args);
  fs::path dir = scratch("tied");
  Tensors t = reference_tensors(c, 99);

  SUBCASE("lm_head.weight equal to the embedding") {
    t["lm_head.weight"] = t.at("token_embedding.weight");
    write_folder(dir, "lm", args, t);
    load_ok(dir);
  }
  SUBCASE("lm_head.weight different") {
    t["lm_head.weight"] = t.at("token_embedding.weight");
    t["lm_head.weight"].data[7] += 1.0f;
    write_folder(dir, "lm", args, t);
    Status s = load_err(dir);
    CHECK(contains(s.message(), "lm_head.weight"));
    CHECK(contains(s.message(), "element 7"));
  }
  SUBCASE("only lm_head.weight (an exporter kept the other name)") {
    t["lm_head.weight"] = t.at("token_embedding.weight");
    t.erase("token_embedding.weight");
    write_folder(dir, "lm", args, t);
    Model m = load_ok(dir);
    CHECK(m.token_embedding.data == t.at("lm_head.weight").data);
  }
  SUBCASE("norm1 absent when use_real_input_norm is off") {
    json a2 = small_args({{"use_real_input_norm", false}});
    for (int l = 0; l < 2; ++l) {
      t.erase("backbone.blocks." + std::to_string(l) + ".norm1.weight");
      t.erase("backbone.blocks." + std::to_string(l) + ".norm1.bias");
    }
    write_folder(dir, "lm", a2, t);
    load_ok(dir);
  }
  SUBCASE("f16 and bf16 weights are widened") {
    t["backbone.input_proj.weight"].dtype = DType::f16;
    t["lm_head.bias"].dtype = DType::bf16;
    t["backbone.blocks.0.attn.nu_param"].dtype = DType::f64;
    write_folder(dir, "lm", args, t);
    Model m = load_ok(dir);
    CHECK(m.backbone_in.weight.data[3] == half_to_float(float_to_half(t["backbone.input_proj.weight"].data[3])));
    CHECK(m.lm_head_bias.data[2] == bf16_to_float(float_to_bf16(t["lm_head.bias"].data[2])));
  }
}

// ---- bad input ---------------------------------------------------------------------------------

namespace {

// A valid small lm folder; returns its tensors.
Tensors valid_folder(const fs::path& dir, const json& args = small_args()) {
  ModelConfig c = parse_or_fail("lm", args);
  Tensors t = reference_tensors(c, 5);
  write_folder(dir, "lm", args, t);
  return t;
}

// Rewrites model.safetensors' header through `edit`, keeping the data area.
template <typename F>
void edit_header(const fs::path& dir, F edit) {
  const fs::path path = dir / "model.safetensors";
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t hl = 0;
  for (int i = 7; i >= 0; --i) hl = (hl << 8) | (uint8_t)bytes[(size_t)i];
  json h = json::parse(std::string(bytes.data() + 8, (size_t)hl));
  edit(h);
  std::string nh = h.dump();
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[(size_t)i] = (char)(nh.size() >> (8 * i));
  out += nh;
  out.append(bytes.data() + 8 + hl, bytes.size() - 8 - hl);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << out;
}

void expect(const fs::path& dir, Code code, std::initializer_list<const char*> parts) {
  Status s = load_err(dir);
  INFO("message: " << s.message());
  CHECK(s.code() == code);
  for (const char* p : parts) CHECK(contains(s.message(), p));
}

const char* kWq = "backbone.blocks.1.attn.W_q.weight";

}  // namespace

TEST_CASE("bad model files are rejected, naming the tensor") {
  fs::path dir = scratch("bad");
  Tensors t = valid_folder(dir);
  const std::string st = (dir / "model.safetensors").string();

  SUBCASE("truncated file") {
    fs::resize_file(st, fs::file_size(st) - 3);
    expect(dir, Code::model_error, {"model.safetensors", "truncated"});
  }
  SUBCASE("header length larger than the file") {
    std::fstream f(st, std::ios::binary | std::ios::in | std::ios::out);
    const char big[8] = {0, 0, 0, 0, 1, 0, 0, 0};
    f.write(big, 8);
    f.close();
    expect(dir, Code::model_error, {"header length", "exceeds"});
  }
  SUBCASE("offsets out of range") {
    edit_header(dir, [](json& h) {
      auto& o = h["lm_head.bias"]["data_offsets"];
      o[1] = o[1].get<uint64_t>() + 4000000;
      o[0] = o[0].get<uint64_t>() + 4000000;
    });
    expect(dir, Code::model_error, {"'lm_head.bias'", "outside the data area"});
  }
  SUBCASE("overlapping tensors") {
    edit_header(dir, [](json& h) {
      h["backbone.blocks.0.attn.nu_param"]["data_offsets"] = h["backbone.blocks.0.attn.mu_v"]["data_offsets"];
    });
    expect(dir, Code::model_error, {"overlap", "nu_param", "mu_v"});
  }
  SUBCASE("unknown dtype") {
    edit_header(dir, [](json& h) { h["lm_head.bias"]["dtype"] = "F8_E4M3"; });
    expect(dir, Code::model_error, {"'lm_head.bias'", "F8_E4M3"});
  }
  SUBCASE("header shape inconsistent with its bytes") {
    edit_header(dir, [](json& h) { h["lm_head.bias"]["shape"] = {51}; });
    expect(dir, Code::model_error, {"'lm_head.bias'", "bytes"});
  }
  SUBCASE("shape mismatch against the config") {
    t[kWq] = {{16, 5}, std::vector<float>(80, 0.1f), DType::f32};
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {kWq, "[16,6] expected", "[16,5] found"});
  }
  SUBCASE("missing tensor") {
    t.erase("backbone.blocks.0.attn.nu_param");
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"'backbone.blocks.0.attn.nu_param' missing", "[2]"});
  }
  SUBCASE("missing flag-dependent tensor") {
    t.erase("backbone.blocks.1.attn.t_shift_param");
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"t_shift_param", "missing"});
  }
  SUBCASE("unexpected tensor") {
    t["backbone.blocks.0.attn.cn_q.gamma"] = {{1, 1, 2, 4, 1}, std::vector<float>(8, 1.0f), DType::f32};
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"unexpected tensor", "cn_q.gamma"});
  }
  SUBCASE("unexpected tensor: a layer that the config does not have") {
    t["backbone.blocks.2.attn.mu_v"] = {{2}, {0, 0}, DType::f32};
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"unexpected", "backbone.blocks.2.attn.mu_v"});
  }
  SUBCASE("NaN weight") {
    t[kWq].data[13] = std::nanf("");
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {kWq, "element 13", "[2,1]", "NaN"});
  }
  SUBCASE("Inf weight") {
    t["backbone.final_norm.bias"].data[4] = -std::numeric_limits<float>::infinity();
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"backbone.final_norm.bias", "element 4", "-Inf"});
  }
  SUBCASE("Inf in an SDE parameter") {
    t["backbone.blocks.0.attn.mu_v"].data[1] = std::numeric_limits<float>::infinity();
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"mu_v", "+Inf"});
  }
  // docs/model-format.md §4, NaN or infinite weights rejected, holds for tensors the flags leave unused too.
  SUBCASE("NaN in P_prior_log, unused without the confidence gate") {
    t["backbone.blocks.1.attn.P_prior_log"].data[0] = std::nanf("");
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"backbone.blocks.1.attn.P_prior_log", "element 0", "NaN"});
  }
  SUBCASE("Inf in P_scale_log, unused without the confidence gate") {
    t["backbone.blocks.0.attn.P_scale_log"].data[1] = std::numeric_limits<float>::infinity();
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"backbone.blocks.0.attn.P_scale_log", "element 1", "+Inf"});
  }
  SUBCASE("NaN in a norm the flags switch off") {
    json a2 = small_args({{"use_real_input_norm", false}});
    write_folder(dir, "lm", a2, t);
    t["backbone.blocks.0.norm1.bias"].data[2] = std::nanf("");
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"backbone.blocks.0.norm1.bias", "element 2", "NaN"});
  }
  SUBCASE("NaN in omega_v that zero_rotations leaves unused") {
    json a2 = small_args({{"zero_rotations", true}});
    write_folder(dir, "lm", a2, t);
    t["backbone.blocks.1.attn.omega_v"].data[3] = std::nanf("");
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {"backbone.blocks.1.attn.omega_v", "element 3", "NaN"});
  }
  SUBCASE("f16 overflow to Inf is caught too") {
    t[kWq].data[0] = 1e6f;
    t[kWq].dtype = DType::f16;
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {kWq, "element 0", "Inf"});
  }
  SUBCASE("integer dtype for a weight") {
    t[kWq].dtype = DType::i32;
    REQUIRE(write_safetensors(st, t).ok());
    expect(dir, Code::model_error, {kWq, "I32"});
  }
  SUBCASE("no model.safetensors") {
    fs::remove(st);
    expect(dir, Code::io_error, {"model.safetensors"});
  }
}

TEST_CASE("AFA layers: the tensors of docs/variant-afa.md §12 and their physical values") {
  for (const json& extra : {json{{"attention_variant", "afa"}, {"seq_len", 33}},
                            json{{"attention_variant", "afa"}, {"afa_mix", true}, {"afa_precision", "weighted"},
                                 {"scale_decay_by_time_interval", false}, {"zero_process_noise", true},
                                 {"afa_unitary", true}, {"afa_pred_dt", 0.5}, {"omega_rescale", 2.0}}}) {
    CAPTURE(extra.dump());
    json args = small_args(extra);
    args["d_in"] = 3;
    const ModelConfig c = parse_or_fail("signal", args);
    const fs::path dir = scratch("afa");
    const Tensors t = reference_tensors(c, 5);
    write_folder(dir, "signal", args, t);
    const Model m = load_ok(dir);
    const int H = 2, D = 4;
    const double scale = c.args.scale_decay_by_time_interval ? 5.0 / 32.0 : 5.0;
    for (int l = 0; l < 2; ++l) {
      const std::string p = "backbone.blocks." + std::to_string(l) + ".attn.";
      const AttentionParams& ap = m.blocks[(size_t)l].attn.params;
      REQUIRE(ap.variant == AttentionVariant::afa);
      CHECK(ap.afa.unitary == c.afa_unitary);
      CHECK(ap.afa.mix == c.afa_mix);
      CHECK(ap.afa.pred_dt == c.afa_pred_dt);
      for (int h = 0; h < H; ++h) {
        CHECK(ap.afa.nu[(size_t)h] == doctest::Approx(sp(raw(t, p + "afa_nu_v", (size_t)h))));
        CHECK(ap.afa.alpha[(size_t)h] == doctest::Approx(raw(t, p + "afa_alpha_v", (size_t)h)));
        for (int d = 0; d < D; ++d) {
          const size_t k = (size_t)h * D + d, m2 = (size_t)h * (D / 2) + (size_t)(d / 2);
          const double w = raw(t, p + "omega_v", m2) * c.args.omega_rescale;
          CHECK(ap.omega[k] == doctest::Approx(d % 2 ? -w : w));  // conjugate pairs interleaved
          CHECK(ap.afa.mu[k] == doctest::Approx(scale / (1.0 + std::exp(-raw(t, p + "afa_mu_v", m2)))));
          CHECK(ap.afa.sigma2[k] == doctest::Approx(c.args.zero_process_noise ? 0.0 : sp(raw(t, p + "afa_sigma_v", k))));
          CHECK(ap.afa.eta2[k] == doctest::Approx(sp(raw(t, p + "afa_eta_v", k))));
          CHECK(ap.afa.gamma2[k] == doctest::Approx(sp(raw(t, p + "afa_gamma_v", k))));
          if (c.afa_mix) CHECK(ap.afa.delta[k] == doctest::Approx(raw(t, p + "afa_delta_v", k)));
          if (c.afa_precision == AfaPrecision::weighted)
            CHECK(ap.afa.weight[k] == doctest::Approx(sp(raw(t, p + "afa_weight_v", k))));
        }
      }
    }
  }
  // A missing AFA tensor is named; an RFA tensor in an AFA layer is unexpected.
  const json args = small_args({{"attention_variant", "afa"}, {"afa_mix", true}});
  const ModelConfig c = parse_or_fail("lm", args);
  Tensors t = reference_tensors(c, 6);
  const fs::path dir = scratch("afa_bad");
  Tensors missing = t;
  missing.erase("backbone.blocks.1.attn.afa_delta_v");
  write_folder(dir, "lm", args, missing);
  Status s = load_err(dir);
  CHECK(contains(s.message(), "backbone.blocks.1.attn.afa_delta_v"));
  Tensors extra = t;
  extra["backbone.blocks.0.attn.mu_v"] = TensorToWrite{{2}, {0.f, 0.f}, DType::f32};
  write_folder(dir, "lm", args, extra);
  s = load_err(dir);
  CHECK(contains(s.message(), "backbone.blocks.0.attn.mu_v"));
  Tensors wrong = t;
  wrong["backbone.blocks.0.attn.afa_mu_v"] = TensorToWrite{{2, 4}, std::vector<float>(8, 0.f), DType::f32};
  write_folder(dir, "lm", args, wrong);
  s = load_err(dir);
  CHECK(contains(s.message(), "afa_mu_v"));
}

TEST_CASE("learned accumulated steps: each layer's acc_phi table") {
  const json args = small_args({{"phase_source", "accumulated_learned"}});
  const ModelConfig c = parse_or_fail("lm", args);
  Tensors t = reference_tensors(c, 12);
  const fs::path dir = scratch("acc_learned");
  write_folder(dir, "lm", args, t);
  const Model m = load_ok(dir);
  for (int l = 0; l < 2; ++l) {
    const AttentionParams& p = m.blocks[(size_t)l].attn.params;
    CHECK(p.phase == PhaseSource::accumulated_learned);
    REQUIRE(p.step_table.size() == (size_t)50 * 4);
    CHECK(p.step_vocab == 50);
    const std::string name = "backbone.blocks." + std::to_string(l) + ".attn.acc_phi";
    for (size_t k = 0; k < p.step_table.size(); ++k) CHECK(p.step_table[k] == (double)t.at(name).data[k]);
  }
  t.erase("backbone.blocks.1.attn.acc_phi");
  write_folder(dir, "lm", args, t);
  CHECK(contains(load_err(dir).message(), "backbone.blocks.1.attn.acc_phi"));
}

TEST_CASE("RT-RFA layers: the tensors of docs/variant-rt.md §13 and their physical values") {
  for (const char* cov : {"stationary", "ou_rate"}) {
    CAPTURE(cov);
    json args = small_args({{"attention_variant", "rt"}, {"rt_covariance", cov}, {"rt_kernel", "gaussian"},
                            {"seq_len", 17}, {"norm", "rms_norm"}, {"use_real_input_norm", false}, {"rt_eps", 0.001}});
    const ModelConfig c = parse_or_fail("lm", args);
    const fs::path dir = scratch("rt");
    const Tensors t = reference_tensors(c, 8);
    write_folder(dir, "lm", args, t);
    const Model m = load_ok(dir);
    const int D = 4;
    for (int l = 0; l < 2; ++l) {
      const std::string p = "backbone.blocks." + std::to_string(l) + ".attn.";
      const AttentionParams& ap = m.blocks[(size_t)l].attn.params;
      REQUIRE(ap.variant == AttentionVariant::rt);
      CHECK(ap.rt.kernel == RtKernel::gaussian);
      CHECK(ap.rt.eps == 0.001);
      CHECK(m.blocks[(size_t)l].norm1.kind == NormKind::none);  // the RT block: nothing before the attention
      for (size_t h = 0; h < 2; ++h) {
        const double noise = sp(raw(t, p + "rt_sigma_v", h));
        CHECK(ap.rt.mu[h] == doctest::Approx(5.0 / 16.0 / (1.0 + std::exp(-raw(t, p + "rt_mu_v", h)))));
        CHECK(ap.rt.s2t[h] == doctest::Approx(std::string(cov) == "stationary" ? noise : 0.0));
        CHECK(ap.rt.sigma2[h] == doctest::Approx(std::string(cov) == "ou_rate" ? noise : 0.0));
        CHECK(ap.rt.eta2[h] == doctest::Approx(sp(raw(t, p + "rt_eta_v", h))));
        CHECK(ap.rt.gamma2[h] == doctest::Approx(sp(raw(t, p + "rt_gamma_v", h))));
        CHECK(ap.rt.tau_th2[h] == doctest::Approx(sp(raw(t, p + "rt_tau_th_v", h)) + 1e-6));
        CHECK(ap.rt.nu[h] == doctest::Approx(D * sp(raw(t, p + "rt_nu_v", h)) + 2.0));
        CHECK(ap.rt.beta[h] == doctest::Approx(sp(raw(t, p + "rt_beta_v", h))));
      }
    }
  }
  const json args = small_args({{"attention_variant", "rt"}});
  Tensors t = reference_tensors(parse_or_fail("lm", args), 9);
  t.erase("backbone.blocks.0.attn.rt_tau_th_v");
  const fs::path dir = scratch("rt_bad");
  write_folder(dir, "lm", args, t);
  CHECK(contains(load_err(dir).message(), "backbone.blocks.0.attn.rt_tau_th_v"));
}

TEST_CASE("bad configs are rejected through load_model") {
  fs::path dir = scratch("badcfg");
  valid_folder(dir);
  auto write_cfg = [&](const std::string& text) { std::ofstream(dir / "config.json", std::ios::binary | std::ios::trunc) << text; };
  SUBCASE("bad JSON") {
    write_cfg("{\"format\": \"rfa-reference\", ");
    expect(dir, Code::model_error, {"config.json", "not valid JSON"});
  }
  SUBCASE("unknown architecture") {
    write_cfg(config_text("foo", small_args()));
    expect(dir, Code::model_error, {"architecture", "foo"});
  }
  SUBCASE("bad flag value") {
    write_cfg(config_text("lm", small_args({{"additive_bias_type", 7}})));
    expect(dir, Code::model_error, {"args.additive_bias_type", "7"});
  }
  SUBCASE("unrunnable flags") {
    write_cfg(config_text("lm", small_args({{"use_complex_input_norm", 2}})));
    expect(dir, Code::model_error, {"use_complex_input_norm = 2"});
    write_cfg(config_text("lm", small_args({{"sep_params", true}})));
    expect(dir, Code::model_error, {"sep_params", "unsupported"});
  }
  SUBCASE("config for another architecture than the weights") {
    write_cfg(config_text("attention", small_args()));
    expect(dir, Code::model_error, {"missing"});
  }
  SUBCASE("config with other sizes than the weights") {
    write_cfg(config_text("lm", small_args({{"hidden_dim", 12}})));
    expect(dir, Code::model_error, {"ffn.0.weight", "[12,6] expected", "[32,6] found"});
  }
  SUBCASE("missing folder and missing config") {
    Status s = load_model((dir / "nope").string()).status();
    CHECK(s.code() == Code::io_error);
    fs::remove(dir / "config.json");
    expect(dir, Code::io_error, {"config.json"});
  }
}
