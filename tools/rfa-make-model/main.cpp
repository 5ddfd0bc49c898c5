// rfa-make-model: writes a model folder with random weights in the reference format
// (config.json + model.safetensors, the author's state_dict keys), initialised the way the
// reference initialises an untrained model (SC-RoPE frequencies and decays, softplus-raw noise
// parameters). For tests, benchmarks and load-time measurements at any size.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "rfa/safetensors.hpp"

using namespace rfa;
namespace fs = std::filesystem;

namespace {

const char* kUsage =
    "usage: rfa-make-model --out DIR [--arch lm|signal|attention] [--layers L] [--heads H] [--d-e N]\n"
    "                      [--d-k N (complex dims, all heads)] [--hidden N] [--vocab V] [--d-in N]\n"
    "                      [--seq-len N] [--seed S] [--dtype f32|f16|bf16] [--set key=value ...]\n"
    "  --set adds or overrides a reference argument in config.json args (value as JSON: true, 0, 1.5).\n"
    "        --set 'attention_variant=\"afa\"' writes AFA layers (docs/variant-afa.md), with afa_mix and\n"
    "        afa_precision=\"weighted\" adding their tensors; 'attention_variant=\"afa_full\"' full AFA\n"
    "        layers (the same tensors; docs/variant-afa-full.md), either with afa_irls_iterations=N tied\n"
    "        iterations (and afa_irls_momentum); 'attention_variant=\"rt\"' RT-RFA layers\n"
    "        (docs/variant-rt.md; the RT block also wants norm=\"rms_norm\" and use_real_input_norm=false).\n";

struct Opts {
  std::string out, arch = "lm", dtype = "f32";
  int layers = 2, heads = 4, d_e = 64, d_k = 0, hidden = 0, vocab = 256, d_in = 2, seq_len = 512;
  uint32_t seed = 1;
  std::vector<std::pair<std::string, std::string>> sets;
};

double inv_softplus(double y) { return y > 20 ? y : std::log(std::expm1(y)); }

}  // namespace

int main(int argc, char** argv) {
  Opts o;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "rfa-make-model: %s needs a value\n%s", k.c_str(), kUsage);
      return 2;
    }
    std::string v = argv[++i];
    auto num = [&](int* dst) { *dst = std::atoi(v.c_str()); };
    if (k == "--out") o.out = v;
    else if (k == "--arch") o.arch = v;
    else if (k == "--dtype") o.dtype = v;
    else if (k == "--layers") num(&o.layers);
    else if (k == "--heads") num(&o.heads);
    else if (k == "--d-e") num(&o.d_e);
    else if (k == "--d-k") num(&o.d_k);
    else if (k == "--hidden") num(&o.hidden);
    else if (k == "--vocab") num(&o.vocab);
    else if (k == "--d-in") num(&o.d_in);
    else if (k == "--seq-len") num(&o.seq_len);
    else if (k == "--seed") o.seed = (uint32_t)std::strtoul(v.c_str(), nullptr, 10);
    else if (k == "--set") {
      auto eq = v.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "rfa-make-model: --set expects key=value\n");
        return 2;
      }
      o.sets.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else {
      std::fprintf(stderr, "rfa-make-model: unknown option %s\n%s", k.c_str(), kUsage);
      return 2;
    }
  }
  if (o.d_k == 0) o.d_k = o.d_e;
  if (o.hidden == 0) o.hidden = 4 * o.d_k;
  if (o.out.empty() || o.heads < 1 || o.d_k % o.heads || (o.d_k / o.heads) % 2 || o.layers < 1 ||
      (o.arch != "lm" && o.arch != "signal" && o.arch != "attention")) {
    std::fprintf(stderr, "rfa-make-model: need --out, an architecture, and d_k divisible by heads into an even head dim\n%s", kUsage);
    return 2;
  }
  const DType dt = o.dtype == "f16" ? DType::f16 : o.dtype == "bf16" ? DType::bf16 : DType::f32;
  const int H = o.heads, D = o.d_k / H, half = D / 2, E = o.d_e, C = o.d_k;
  std::mt19937 rng(o.seed);
  std::map<std::string, TensorToWrite> t;
  auto normal = [&](std::vector<int64_t> shape, double scale) {
    TensorToWrite w;
    w.shape = shape;
    w.dtype = dt;
    size_t n = 1;
    for (auto s : shape) n *= (size_t)s;
    std::normal_distribution<float> g(0.f, (float)scale);
    w.data.resize(n);
    for (float& x : w.data) x = g(rng);
    return w;
  };
  auto filled = [&](std::vector<int64_t> shape, std::vector<float> v) {
    TensorToWrite w;
    w.shape = shape;
    w.dtype = DType::f32;  // small physical parameters keep full precision
    w.data = std::move(v);
    return w;
  };
  auto linear = [&](const std::string& name, int in, int out) {
    t[name + ".weight"] = normal({out, in}, 1.0 / std::sqrt((double)in));
    t[name + ".bias"] = normal({out}, 0.02);
  };
  // SC-RoPE (docs/reference-code.md §3.5): master bank 10000^(-m/(H*half)), slow -> fast, split per head;
  // mu0_h = b * max omega_h with b = 0.05, the first quarter of heads at mu = 0.
  auto attention = [&](const std::string& p) {
    std::vector<float> omega((size_t)H * half), mu(H), sigma(H);
    for (int h = 0; h < H; ++h) {
      double mx = 0;
      for (int k = 0; k < half; ++k) {
        double w = std::pow(10000.0, -(double)(H * half - 1 - h * half - k) / (H * half));
        omega[(size_t)h * half + k] = (float)w;
        mx = std::max(mx, w);
      }
      mu[h] = h < (H + 3) / 4 ? 0.f : (float)(0.05 * mx);
      sigma[h] = (float)std::log(std::expm1(2.0 * mu[h] * 0.1) + 1e-6);
    }
    t[p + "omega_v"] = filled({H, half}, omega);
    t[p + "mu_v"] = filled({H}, mu);
    t[p + "sigma_v"] = filled({H}, sigma);
    t[p + "sigma_tilde_v"] = filled({H}, std::vector<float>(H, 0.1f));
    t[p + "eta_v"] = filled({H}, std::vector<float>(H, 1.f));
    t[p + "gamma_v"] = filled({H}, std::vector<float>(H, 1.f));
    t[p + "tau_param"] = filled({H}, std::vector<float>(H, 1.f));
    t[p + "nu_param"] = filled({H}, std::vector<float>(H, 4.f));
    t[p + "t_shift_param"] = filled({1, H}, std::vector<float>(H, 0.f));
    t[p + "P_prior_log"] = filled({1, 1, H, 1, 1}, std::vector<float>(H, 0.f));
    t[p + "P_scale_log"] = filled({1, 1, H, 1, 1}, std::vector<float>(H, -2.f));
    linear(p + "W_q", E, 2 * C);
    linear(p + "W_k", E, 2 * C);
    linear(p + "W_v", E, 2 * C);
    linear(p + "W_o", 2 * C, E);
  };
  // AFA layers of either form (--set 'attention_variant="afa"' or "afa_full": the same tensors,
  // docs/variant-afa.md §12, docs/variant-afa-full.md §6): the RFA bank's
  // frequencies, per conjugate pair a decay spread over (0, max) (raw logits -6..-1; pair 0 slowest),
  // noises near the RFA initialisation's targets, nu = alpha = 1.
  auto set_has = [&](const char* key, const char* needle) {
    for (const auto& [k, v] : o.sets)
      if (k == key && v.find(needle) != std::string::npos) return true;
    return false;
  };
  const bool afa = set_has("attention_variant", "afa");
  const bool afa_mix = set_has("afa_mix", "true") || set_has("afa_mix", "1");
  const bool afa_weighted = set_has("afa_precision", "weighted");
  auto afa_attention = [&](const std::string& p) {
    std::vector<float> omega((size_t)H * half), mu((size_t)H * half);
    for (int h = 0; h < H; ++h)
      for (int k = 0; k < half; ++k) {
        omega[(size_t)h * half + k] = (float)std::pow(10000.0, -(double)(H * half - 1 - h * half - k) / (H * half));
        mu[(size_t)h * half + k] = half > 1 ? (float)(-6.0 + 5.0 * k / (half - 1)) : -3.f;
      }
    t[p + "omega_v"] = filled({H, half}, omega);
    t[p + "afa_mu_v"] = filled({H, half}, mu);
    t[p + "afa_sigma_v"] = filled({H, D}, std::vector<float>((size_t)H * D, (float)inv_softplus(0.1)));
    t[p + "afa_eta_v"] = filled({H, D}, std::vector<float>((size_t)H * D, (float)inv_softplus(1.0)));
    t[p + "afa_gamma_v"] = filled({H, D}, std::vector<float>((size_t)H * D, (float)inv_softplus(0.1)));
    t[p + "afa_nu_v"] = filled({H}, std::vector<float>(H, (float)inv_softplus(1.0)));
    t[p + "afa_alpha_v"] = filled({H}, std::vector<float>(H, 1.f));
    if (afa_mix) t[p + "afa_delta_v"] = filled({H, D}, std::vector<float>((size_t)H * D, 0.f));
    if (afa_weighted) {
      t[p + "afa_weight_v"] = filled({H, D}, std::vector<float>((size_t)H * D, (float)inv_softplus(1.0)));
      t[p + "afa_weight_bias_v"] = filled({H}, std::vector<float>(H, (float)inv_softplus(0.01)));
    }
    linear(p + "W_q", E, 2 * C);
    linear(p + "W_k", E, 2 * C);
    linear(p + "W_v", E, 2 * C);
    linear(p + "W_o", 2 * C, E);
  };
  // RT-RFA layers (--set 'attention_variant="rt"', docs/variant-rt.md §13): the RFA bank's
  // frequencies, decays spread over the heads (raw logits -6..-1), section 4's initial noises
  // (s2t or sigma2 = 0.1, eta2 = 1, gamma2 = 0.25), tau_th2 = 0.01, nu = D softplus(4) + 2,
  // beta_s = softplus(1).
  const bool rt = set_has("attention_variant", "rt");
  auto rt_attention = [&](const std::string& p) {
    std::vector<float> omega((size_t)H * half), mu((size_t)H);
    for (int h = 0; h < H; ++h) {
      for (int k = 0; k < half; ++k)
        omega[(size_t)h * half + k] = (float)std::pow(10000.0, -(double)(H * half - 1 - h * half - k) / (H * half));
      mu[(size_t)h] = H > 1 ? (float)(-6.0 + 5.0 * h / (H - 1)) : -3.f;
    }
    t[p + "omega_v"] = filled({H, half}, omega);
    t[p + "rt_mu_v"] = filled({H}, mu);
    t[p + "rt_sigma_v"] = filled({H}, std::vector<float>(H, (float)inv_softplus(0.1)));
    t[p + "rt_eta_v"] = filled({H}, std::vector<float>(H, (float)inv_softplus(1.0)));
    t[p + "rt_gamma_v"] = filled({H}, std::vector<float>(H, (float)inv_softplus(0.25)));
    t[p + "rt_tau_th_v"] = filled({H}, std::vector<float>(H, (float)inv_softplus(0.01 - 1e-6)));
    t[p + "rt_nu_v"] = filled({H}, std::vector<float>(H, 4.f));
    t[p + "rt_beta_v"] = filled({H}, std::vector<float>(H, 1.f));
    linear(p + "W_q", E, 2 * C);
    linear(p + "W_k", E, 2 * C);
    linear(p + "W_v", E, 2 * C);
    linear(p + "W_o", 2 * C, E);
  };
  const bool rms = set_has("norm", "rms");  // an RMSNorm has no bias
  auto layer_norm = [&](const std::string& name) {
    t[name + ".weight"] = filled({E}, std::vector<float>(E, 1.f));
    if (!rms) t[name + ".bias"] = filled({E}, std::vector<float>(E, 0.f));
  };
  if (o.arch == "attention") {
    afa ? afa_attention("") : rt ? rt_attention("") : attention("");
  } else {
    if (o.arch == "lm") {
      t["token_embedding.weight"] = normal({o.vocab, E}, 1.0);
      t["lm_head.bias"] = normal({o.vocab}, 0.02);
    } else {
      linear("input_proj", o.d_in, E);
      linear("output_head", E, o.d_in);
    }
    linear("backbone.input_proj", E, E);
    linear("backbone.output_proj", E, E);
    layer_norm("backbone.final_norm");
    for (int l = 0; l < o.layers; ++l) {
      std::string p = "backbone.blocks." + std::to_string(l) + ".";
      afa ? afa_attention(p + "attn.") : rt ? rt_attention(p + "attn.") : attention(p + "attn.");
      layer_norm(p + "norm1");
      layer_norm(p + "norm2");
      linear(p + "ffn.0", E, o.hidden);
      linear(p + "ffn.2", o.hidden, E);
    }
  }
  std::error_code ec;
  fs::create_directories(o.out, ec);
  Status s = write_safetensors((fs::path(o.out) / "model.safetensors").string(), t);
  if (!s.ok()) {
    std::fprintf(stderr, "rfa-make-model: %s\n", s.to_string().c_str());
    return 5;
  }
  std::ofstream cfg(fs::path(o.out) / "config.json", std::ios::binary);  // LF line ends on every OS
  cfg << "{\n  \"format\": \"rfa-reference\",\n  \"architecture\": \"" << o.arch << "\",\n  \"args\": {\n"
      << "    \"n_heads\": " << H << ", \"d_e\": " << E << ", \"d_k_total\": " << C << ", \"d_v_total\": " << C
      << ",\n    \"num_blocks\": " << o.layers << ", \"hidden_dim\": " << o.hidden << ", \"seq_len\": " << o.seq_len;
  if (o.arch == "lm") cfg << ",\n    \"vocab_size\": " << o.vocab << ", \"tokenizer\": \"" << (o.vocab == 256 ? "bytes" : "gpt2") << "\"";
  if (o.arch == "signal") cfg << ",\n    \"d_in\": " << o.d_in;
  // SC-RoPE layout with the paper's M2 settings, and timestamps honoured (t_equal false), unless
  // --set overrides them.
  std::map<std::string, std::string> keys = {{"use_SC_RoPE", "true"},
                                             {"scale_decay_by_time_interval", "false"},
                                             {"damping", "0.05"},
                                             {"t_equal", "false"}};
  for (auto& [k, v] : o.sets) keys[k] = v;
  for (auto& [k, v] : keys) cfg << ",\n    \"" << k << "\": " << v;
  cfg << "\n  }\n}\n";
  if (!cfg) {
    std::fprintf(stderr, "rfa-make-model: cannot write %s/config.json\n", o.out.c_str());
    return 5;
  }
  std::printf("wrote %s (%s, %d layers, %d heads x %d complex dims, d_e %d)\n", o.out.c_str(), o.arch.c_str(), o.layers,
              H, D, E);
  return 0;
}
