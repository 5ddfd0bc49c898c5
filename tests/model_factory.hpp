// Small random models built in code (no files), shared by the twin's and the session's tests.
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "model/model.hpp"

namespace rfa::test {

inline HostTensor tensor(std::vector<int64_t> shape, std::mt19937& rng, double scale) {
  HostTensor t;
  t.shape = shape;
  size_t n = 1;
  for (int64_t s : shape) n *= (size_t)s;
  std::normal_distribution<float> g(0.0f, (float)scale);
  t.data.resize(n);
  for (float& x : t.data) x = g(rng);
  return t;
}

inline LinearWeights make_linear(int in, int out, std::mt19937& rng, bool bias = true) {
  LinearWeights w;
  w.in = in;
  w.out = out;
  w.weight = tensor({out, in}, rng, 1.0 / std::sqrt((double)in));
  if (bias) w.bias = tensor({out}, rng, 0.1);
  return w;
}

inline NormWeights make_norm(NormKind kind, int dim, std::mt19937& rng) {
  NormWeights n;
  n.kind = kind;
  n.eps = 1e-5;
  if (kind == NormKind::none) return n;
  n.weight = tensor({dim}, rng, 0.2);
  for (float& x : n.weight.data) x += 1.0f;
  if (kind == NormKind::layer_norm) n.bias = tensor({dim}, rng, 0.1);
  return n;
}

inline AttentionParams make_params(int H, int D, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  AttentionParams p;
  p.heads = H;
  p.dim = D;
  for (int h = 0; h < H; ++h) {
    HeadParams hp;
    hp.mu = h == 0 ? 0.0 : 0.02 + 0.1 * u(rng);
    hp.sigma2 = 0.1 + 0.3 * u(rng);
    hp.eta2 = 1.31;
    hp.gamma2 = 1.31;
    hp.nu = 4.08 * D;
    hp.kappa = (hp.nu + D) / D;
    hp.tau = 1.31;
    hp.lag_shift = 0.6931;
    p.head.push_back(hp);
    for (int k = 0; k < D / 2; ++k) {
      const double w = std::pow(10000.0, -(double)(k + h * (D / 2)) / (H * D / 2));
      p.omega.push_back(w);
      p.omega.push_back(-w);
    }
  }
  return p;
}

// A random AFA layer (docs/variant-afa.md): per-channel decays in [0, 0.3] (channel pair 0 of
// every head Brownian, mu = 0), noises and temperatures that keep the logits of order one, mix
// logits and precision weights; conjugate-pair frequencies like make_params.
inline AttentionParams make_afa_params(int H, int D, std::mt19937& rng, AfaPrecision precision = AfaPrecision::channel_sum,
                                       bool unitary = false, bool mix = false, bool causal = true) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  AttentionParams p;
  p.variant = AttentionVariant::afa;
  p.heads = H;
  p.dim = D;
  p.sw.causal = causal;
  p.head.assign((size_t)H, HeadParams{});
  AfaLayerParams& f = p.afa;
  f.precision = precision;
  f.precision_channel = D > 1 ? 1 : 0;
  f.unitary = unitary;
  f.mix = mix;
  f.eps = 1e-5;
  f.pred_dt = 0.75;
  for (int h = 0; h < H; ++h) {
    for (int k = 0; k < D / 2; ++k) {
      const double w = std::pow(10000.0, -(double)(k + h * (D / 2)) / (H * D / 2));
      const double mu = k == 0 ? 0.0 : 0.3 * u(rng);
      for (int s = 0; s < 2; ++s) {
        p.omega.push_back(s ? -w : w);
        f.mu.push_back(mu);
      }
    }
    for (int k = 0; k < D; ++k) {
      f.sigma2.push_back(0.05 + 0.5 * u(rng));
      f.eta2.push_back(0.1 + 0.5 * u(rng));
      f.gamma2.push_back(0.2 * u(rng));
      f.delta.push_back(4.0 * u(rng) - 2.0);
      f.weight.push_back(0.2 + u(rng));
    }
    f.nu.push_back(0.5 + 1.5 * u(rng));
    f.alpha.push_back(0.6 + 0.8 * u(rng));
    f.weight_bias.push_back(0.05 * u(rng));
  }
  if (!mix) f.delta.clear();
  if (precision != AfaPrecision::weighted) {
    f.weight.clear();
    f.weight_bias.clear();
  }
  return p;
}

// A random RT-RFA layer (docs/variant-rt.md): per-head decays in [0, 0.2] (head 0 at mu = 0),
// noises, floors and temperatures of order one; conjugate-pair frequencies like make_params.
inline AttentionParams make_rt_params(int H, int D, std::mt19937& rng, RtCovariance cov = RtCovariance::stationary,
                                      RtKernel kernel = RtKernel::student_t, bool causal = true) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  AttentionParams p;
  p.variant = AttentionVariant::rt;
  p.heads = H;
  p.dim = D;
  p.sw.causal = causal;
  p.head.assign((size_t)H, HeadParams{});
  RtLayerParams& r = p.rt;
  r.covariance = cov;
  r.kernel = kernel;
  r.eps = 1e-6;
  for (int h = 0; h < H; ++h) {
    for (int k = 0; k < D / 2; ++k) {
      const double w = std::pow(10000.0, -(double)(k + h * (D / 2)) / (H * D / 2));
      p.omega.push_back(w);
      p.omega.push_back(-w);
    }
    r.mu.push_back(h == 0 ? 0.0 : 0.2 * u(rng));
    r.s2t.push_back(cov == RtCovariance::stationary ? 0.1 + u(rng) : 0.0);
    r.sigma2.push_back(cov == RtCovariance::ou_rate ? 0.05 + 0.3 * u(rng) : 0.0);
    r.eta2.push_back(0.2 + u(rng));
    r.gamma2.push_back(0.3 * u(rng));
    r.tau_th2.push_back(0.01 + 0.1 * u(rng));
    r.nu.push_back(2.0 + 4.0 * D * u(rng));
    r.beta.push_back(0.5 + u(rng));
  }
  return p;
}

inline AttentionLayer make_attention(int d_e, int H, int D, std::mt19937& rng) {
  AttentionLayer L;
  L.wq = make_linear(d_e, 2 * H * D, rng);
  L.wk = make_linear(d_e, 2 * H * D, rng);
  L.wv = make_linear(d_e, 2 * H * D, rng);
  L.wo = make_linear(2 * H * D, d_e, rng);
  L.params = make_params(H, D, rng);
  return L;
}

// Sizes of a random model; the defaults are tiny (2 * H * D = d_e = 8).
struct ModelSpec {
  int d_e = 8, heads = 2, head_dim = 2, hidden = 16, vocab = 11, d_in = 3;
};

inline Model make_model(Architecture arch, uint32_t seed, int blocks = 2, NormKind norm = NormKind::layer_norm,
                        const ModelSpec& spec = {}) {
  std::mt19937 rng(seed);
  Model m;
  m.name = "test";
  m.arch = arch;
  m.d_e = spec.d_e;
  m.n_heads = spec.heads;
  m.head_dim = spec.head_dim;
  m.hidden = spec.hidden;
  m.train_seq_len = 16;
  if (arch == Architecture::attention) {
    m.single = make_attention(m.d_e, m.n_heads, m.head_dim, rng);
    return m;
  }
  if (arch == Architecture::lm) {
    m.vocab = spec.vocab;
    m.token_embedding = tensor({m.vocab, m.d_e}, rng, 1.0);
    m.lm_head_bias = tensor({m.vocab}, rng, 0.1);
  } else {
    m.d_in = spec.d_in;
    m.signal_in = make_linear(m.d_in, m.d_e, rng);
    m.signal_out = make_linear(m.d_e, m.d_in, rng);
  }
  m.backbone_in = make_linear(m.d_e, m.d_e, rng);
  m.backbone_out = make_linear(m.d_e, m.d_e, rng);
  m.final_norm = make_norm(norm, m.d_e, rng);
  for (int l = 0; l < blocks; ++l) {
    Block b;
    b.norm1 = make_norm(norm, m.d_e, rng);
    b.norm2 = make_norm(norm, m.d_e, rng);
    b.attn = make_attention(m.d_e, m.n_heads, m.head_dim, rng);
    b.ffn1 = make_linear(m.d_e, m.hidden, rng);
    b.ffn2 = make_linear(m.hidden, m.d_e, rng);
    m.blocks.push_back(std::move(b));
  }
  return m;
}

}  // namespace rfa::test
