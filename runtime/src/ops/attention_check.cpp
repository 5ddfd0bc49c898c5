#include "ops/attention_check.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "mechanisms/mechanism.hpp"
#include "ops/rfa_attention.hpp"
#include "rfa_head_table.h"

namespace rfa::ops {

namespace {

using namespace shader;

constexpr int kHeads = 2, kDim = 32;
// Error bounds of |gpu - cpu| / (1 + |cpu|) on these unit-scale inputs (the suites' bounds,
// tests/attention_support.hpp): fp32 paths 2e-4; fp16 products and cooperative matrices, whose
// Q (and p E) operands are rounded to fp16, four times the fp16 cache's 8 * 2^-11. K and V are
// fp16-exact here, so fp16 caches hold the same numbers and keep the fp32 bound.
constexpr double kBound = 2e-4, kBoundF16Math = 4 * 8.0 / 2048.0;

// The layer every case runs: RFA's default switches (Student-t, full residual, the OU covariance,
// -log Vcov bias, 1 / (nu Vcov) precision), without the epilogue's rotations and gate so that the
// CPU evaluation is the fused walk alone; one head decays, the other is Brownian (mu = 0).
AttentionParams check_layer() {
  AttentionParams p;
  p.heads = kHeads;
  p.dim = kDim;
  p.sw.counter_rotate = false;
  p.sw.shift_rotation = false;
  for (int h = 0; h < kHeads; ++h) {
    HeadParams hp;
    hp.mu = h == 0 ? 0.05 : 0.0;
    hp.sigma2 = 0.1 + 0.05 * h;
    hp.s2t = 0.7;
    hp.eta2 = 0.5;
    hp.gamma2 = 0.4;
    hp.nu = 40.0 + 8 * h;
    hp.kappa = (hp.nu + kDim) / kDim;
    hp.tau = 1.2 - 0.3 * h;
    hp.lag_shift = 0.5;
    p.head.push_back(hp);
    for (int d = 0; d < kDim; ++d) p.omega.push_back(0.1 * (d + 1));
  }
  return p;
}

// One case: B = 1 row of the batch, `capacity` positions already in the caches, `n_new` of them
// (the last ones) the call's queries.
struct Case {
  const char* path;
  KernelOptions options;
  bool kv_f16 = false;
  uint32_t n_new = 0, capacity = 0;
  bool integer_times = true;
};

struct Inputs {
  std::vector<float> q, k, v, qn, kn;  // [H, capacity, D] complex as (re, im); norms [H, capacity]
  std::vector<double> t;               // [capacity]
};

float fp16_exact(float x) { return std::round(x * 1024.f) / 1024.f; }  // |x| <= 1: exact in fp16

Inputs make_inputs(uint32_t capacity, bool integer_times) {
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Inputs in;
  const size_t n = (size_t)kHeads * capacity * kDim * 2;
  in.q.resize(n), in.k.resize(n), in.v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    in.q[i] = 0.4f * u(rng);
    in.k[i] = fp16_exact(0.4f * u(rng));
    in.v[i] = fp16_exact(u(rng));
  }
  in.qn.resize((size_t)kHeads * capacity), in.kn.resize((size_t)kHeads * capacity);
  for (size_t c = 0; c < in.qn.size(); ++c) {
    float a = 0, b = 0;
    for (int e = 0; e < 2 * kDim; ++e) {
      a += in.q[c * 2 * kDim + e] * in.q[c * 2 * kDim + e];
      b += in.k[c * 2 * kDim + e] * in.k[c * 2 * kDim + e];
    }
    in.qn[c] = a, in.kn[c] = b;
  }
  in.t.resize(capacity);
  for (uint32_t i = 0; i < capacity; ++i) in.t[i] = integer_times ? (double)i : 0.83 * i + 0.31 * std::sin(0.7 * i);
  return in;
}

// The fused walk of one head and row in double, from the layer's own packed table (the numbers
// the kernel reads): lag terms (docs/math.md §3), the Student-t logit, the online softmax's result
// sum_j p_j E_j v_j / sum_j p_j over keys [0, i].
void cpu_row(const float* head, const Inputs& in, uint32_t capacity, int h, uint32_t i, double* out_re, double* out_im) {
  const double mu = head[kMu], sigma2 = head[kSigma2], eta2 = head[kEta2], gamma2 = head[kGamma2], nu = head[kNu],
               kappa = head[kKappa], tau = head[kTau], shift = head[kShift], min_e = head[kMinExp],
               max_e = head[kMaxExp], floor = head[kCovFloor], inv_two_mu = head[kInvTwoMu];
  const bool brownian = head[kBrownian] != 0.f;
  const size_t qi = (size_t)h * capacity + i;
  std::vector<double> logit(i + 1), E(i + 1);
  double m = -INFINITY;
  for (uint32_t j = 0; j <= i; ++j) {
    const size_t kj = (size_t)h * capacity + j;
    const double dt = (in.t[i] - in.t[j]) + shift;
    const double e = std::clamp(-mu * dt, min_e, max_e);
    E[j] = std::exp(e);
    const double om = -std::expm1(2 * e);
    const double vcov = (brownian ? sigma2 * dt : sigma2 * om * inv_two_mu) + eta2 * E[j] * E[j] + gamma2 + floor;
    double cross = 0;
    for (int e2 = 0; e2 < 2 * kDim; ++e2) cross += (double)in.q[qi * 2 * kDim + e2] * in.k[kj * 2 * kDim + e2];
    const double r2 = std::max((double)in.qn[qi] + E[j] * E[j] * in.kn[kj] - 2 * E[j] * cross, 0.0);
    logit[j] = tau * (-std::log(vcov) - kappa * std::log1p(r2 / (nu * vcov)));
    m = std::max(m, logit[j]);
  }
  double l = 0;
  std::vector<double> acc(2 * kDim, 0.0);
  for (uint32_t j = 0; j <= i; ++j) {
    const double p = std::exp(logit[j] - m);
    l += p;
    const size_t vj = ((size_t)h * capacity + j) * 2 * kDim;
    for (int e2 = 0; e2 < 2 * kDim; ++e2) acc[(size_t)e2] += p * E[j] * in.v[vj + e2];
  }
  for (int d = 0; d < kDim; ++d) {
    out_re[d] = acc[(size_t)2 * d] / l;
    out_im[d] = acc[(size_t)2 * d + 1] / l;
  }
}

uint32_t half_bits(float f) {  // exact for the fp16-exact values above
  if (f == 0.f) return std::signbit(f) ? 0x8000u : 0u;
  int e;
  const float m = std::frexp(std::fabs(f), &e);  // f = m 2^e, m in [0.5, 1)
  if (e - 1 < -14) {                             // subnormal: multiples of 2^-24
    return (uint32_t)std::lround(std::fabs(f) * 16777216.f) | (f < 0 ? 0x8000u : 0u);
  }
  const uint32_t bits = ((uint32_t)(e - 1 + 15) << 10) | ((uint32_t)std::lround((m * 2 - 1) * 1024) & 0x3ff);
  return bits | (f < 0 ? 0x8000u : 0u);
}

std::string label_of(const AttentionTiling& t, bool kv_f16) {
  std::string k = attention_kernel_name("rfa_attention", t, kv_f16);
  if (t.splits > 1) k += " + rfa_attention_reduce";
  return k;
}

// One path on the device: the caches filled straight from `in`, one call of the fused kernel on
// tiling `t`, its outputs against cpu_row.
Result<PathCheck> run_case(gpu::Context& g, const Case& c, const AttentionTiling& t, const Inputs& in,
                           const AttentionWeightsGpu& w, bool corrupt) {
  const AttentionParams& p = w.params();
  auto cr = AttentionCache::create(g, 1, kHeads, kDim, c.capacity, "kernel check cache", 0, c.kv_f16);
  if (!cr) return cr.status();
  AttentionCache cache = cr.take();
  RFA_TRY(g.upload(cache.q, in.q.data(), in.q.size() * 4));
  if (c.kv_f16) {
    std::vector<uint32_t> pk(in.k.size() / 2), pv(in.v.size() / 2);
    for (size_t i = 0; i < pk.size(); ++i) {
      pk[i] = half_bits(in.k[2 * i]) | (half_bits(in.k[2 * i + 1]) << 16);
      pv[i] = half_bits(in.v[2 * i]) | (half_bits(in.v[2 * i + 1]) << 16);
    }
    RFA_TRY(g.upload(cache.k, pk.data(), pk.size() * 4));
    RFA_TRY(g.upload(cache.v, pv.data(), pv.size() * 4));
  } else {
    RFA_TRY(g.upload(cache.k, in.k.data(), in.k.size() * 4));
    RFA_TRY(g.upload(cache.v, in.v.data(), in.v.size() * 4));
  }
  RFA_TRY(g.upload(cache.q_norm2, in.qn.data(), in.qn.size() * 4));
  RFA_TRY(g.upload(cache.k_norm2, in.kn.data(), in.kn.size() * 4));
  std::vector<float> ts(2 * (size_t)c.capacity);
  for (uint32_t i = 0; i < c.capacity; ++i) split_timestamp(in.t[i], &ts[2 * i], &ts[2 * i + 1]);
  auto tb = g.upload_new(ts, "kernel check times");
  if (!tb) return tb.status();
  const uint32_t HD2 = 2 * kHeads * kDim;
  auto vn = g.allocator().allocate((uint64_t)c.n_new * HD2 * 4, gpu::MemoryKind::device, "kernel check v norm");
  if (!vn) return vn.status();
  auto ob = g.allocator().allocate((uint64_t)c.n_new * HD2 * 4, gpu::MemoryKind::device, "kernel check out");
  if (!ob) return ob.status();
  const uint32_t pos0 = c.capacity - c.n_new;
  gpu::Recorder rec(g);
  RFA_TRY(rec.begin());
  RFA_TRY(record_rfa_lag_table(g, rec, w, cache));
  auto span = prepare_span(rec, cache, AttentionSpan{pos0, c.n_new, nullptr}, true);
  if (!span) return span.status();
  RecordTestHooks hooks;
  hooks.flip_causal = corrupt;
  RFA_TRY(record_rfa_kernel(g, rec, w, cache, *tb, *vn, *ob, AttentionSpan{pos0, c.n_new, *span}, t, hooks));
  const auto t0 = std::chrono::steady_clock::now();
  RFA_TRY(rec.submit_and_wait());
  const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<float> out((size_t)c.n_new * HD2);
  RFA_TRY(g.download(*ob, out.data(), out.size() * 4));
  const std::vector<float> table = mech::mechanism_of(p).layer_table(p);
  PathCheck r;
  r.path = c.path;
  r.kernel = label_of(t, c.kv_f16);
  r.why = t.why;
  r.bound = t.f16_math || t.coopmat ? kBoundF16Math : kBound;
  r.ms = rec.gpu_ms_total() > 0 ? rec.gpu_ms_total() : wall;
  std::vector<double> re(kDim), im(kDim);
  for (int h = 0; h < kHeads; ++h)
    for (uint32_t qi = 0; qi < c.n_new; ++qi) {
      cpu_row(table.data() + (size_t)h * kHeadStride, in, c.capacity, h, pos0 + qi, re.data(), im.data());
      for (int d = 0; d < kDim; ++d) {
        const size_t o = (size_t)qi * HD2 + (size_t)h * kDim + d;
        for (const auto& [got, want] : {std::pair<double, double>{out[o], re[(size_t)d]},
                                        std::pair<double, double>{out[o + HD2 / 2], im[(size_t)d]}}) {
          const double err = std::isfinite(got) ? std::fabs(got - want) / (1.0 + std::fabs(want)) : INFINITY;
          r.worst_error = std::max(r.worst_error, err);
        }
      }
    }
  r.pass = r.worst_error <= r.bound;
  return r;
}

}  // namespace

Result<std::vector<PathCheck>> check_attention_paths(gpu::Context& g, const PathCheckOptions& o) {
  const gpu::Capabilities& caps = g.caps();
  auto opt = [](int direct, int table, int split, int tile, int f16, int coopmat, int per_element = -1) {
    KernelOptions k;
    k.attention_coopmat_per_element = per_element;
    k.attention_direct_kv = direct;
    k.attention_lag_table = table;
    k.attention_split_k = split;
    k.attention_tile = tile;
    k.attention_f16_math = f16;
    k.attention_coopmat = coopmat;
    return k;
  };
  // Prefill-sized calls (70 rows after 30 cached positions), decode steps at 300 and a 3-row call,
  // on every switch the chooser has; the device's own choice first.
  const Case cases[] = {
      {"prefill, the device's choice", opt(-1, -1, -1, -1, -1, -1), false, 70, 100},
      {"prefill, fp16 caches", opt(-1, -1, -1, -1, -1, -1), true, 70, 100},
      {"prefill, irregular times", opt(-1, -1, -1, -1, -1, -1), false, 70, 100, false},
      {"prefill, keys read from the cache", opt(1, -1, -1, 0, -1, -1), false, 70, 100},
      {"prefill, key tiles in shared memory", opt(0, -1, -1, 0, -1, -1), false, 70, 100},
      {"prefill, every pair's terms computed", opt(-1, 0, -1, -1, -1, -1), false, 70, 100, false},
      {"tile", opt(-1, -1, -1, 1, 0, 0), false, 70, 100},
      {"tile, fp16 caches", opt(-1, -1, -1, 1, 0, 0), true, 70, 100},
      {"tile, irregular times", opt(-1, -1, -1, 1, 0, 0), false, 70, 100, false},
      {"tile, fp16 products", opt(-1, -1, -1, 1, 1, 0), false, 70, 100},
      {"tile, cooperative matrices", opt(-1, -1, -1, 1, 0, 1, 0), false, 70, 100},
      {"tile, cooperative matrices, fp16 caches", opt(-1, -1, -1, 1, 0, 1, 0), true, 70, 100},
      {"tile, matrices per element", opt(-1, -1, -1, 1, 0, 1, 1), false, 70, 100},
      {"tile, matrices per element, fp16 caches", opt(-1, -1, -1, 1, 0, 1, 1), true, 70, 100},
      {"decode, the device's choice", opt(-1, -1, -1, -1, -1, -1), false, 1, 300},
      {"decode, fp16 caches", opt(-1, -1, -1, -1, -1, -1), true, 1, 300},
      {"decode, key tiles in shared memory", opt(0, -1, -1, -1, -1, -1), false, 1, 300},
      {"decode, split-k", opt(-1, -1, 4, -1, -1, -1), false, 1, 300},
      {"3 rows", opt(-1, -1, -1, -1, -1, -1), false, 3, 300},
  };
  const AttentionParams p = check_layer();
  auto w = AttentionWeightsGpu::create(g, p);
  if (!w) return w.status();
  std::vector<PathCheck> out;
  std::vector<std::string> seen;
  Inputs inputs[2][2];  // [capacity 100 / 300][integer times]
  for (const Case& c : cases) {
    const AttentionTiling t = choose_attention_tiling(caps, c.options, c.n_new, kDim, kHeads, c.capacity, false);
    // Paths the device cannot take fall back to one already listed: each distinct kernel and shape once.
    const std::string key = label_of(t, c.kv_f16) + "|" + std::to_string(t.direct_kv) + std::to_string(t.lag_table) +
                            "|" + std::to_string(t.rows_per_group) + "x" + std::to_string(t.keys_per_tile) + "x" +
                            std::to_string(t.threads_per_row) + "|" + (c.integer_times ? "int" : "float") + "|" +
                            std::to_string(c.n_new);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    Inputs& in = inputs[c.capacity > 100][c.integer_times];
    if (in.t.empty()) in = make_inputs(c.capacity, c.integer_times);
    auto r = run_case(g, c, t, in, *w, o.corrupt == c.path);
    if (!r) return Status(r.status().code(), std::string("kernel check, ") + c.path + ": " + r.status().message());
    out.push_back(r.take());
  }
  return out;
}

void apply_kernel_refusals(gpu::Capabilities& caps, const std::vector<PathCheck>& checks) {
  for (const PathCheck& c : checks) {
    if (c.pass) continue;
    const std::string& k = c.kernel;
    auto has = [&](const char* s) { return k.find(s) != std::string::npos; };
    std::string what;
    // The most specific feature of the failed kernel (each feature also runs on a path of its own:
    // the scalar tile beside the matrices, the decode merges beside the tile's reductions).
    if (has("+ rfa_attention_reduce")) {
      caps.refuse_split_k = true;
      what = "split-k";
    } else if (has("_tile_pe")) {
      caps.coopmat_nv2 = false;
      what = "the VK_NV_cooperative_matrix2 per-element tile";
    } else if (has("_tile_ck")) {
      caps.coopmat_khr_block = 0;
      what = "the VK_KHR_cooperative_matrix tile";
    } else if (has("_tile_cm")) {
      caps.coopmat_nv = false;
      what = "the VK_NV_cooperative_matrix tile";
    } else if (has("_tile_f16")) {
      caps.refuse_f16_math = true;
      what = "the tile's fp16 products";
    } else if (has("_tile")) {
      caps.refuse_tile = true;
      what = "the cooperative tile";
    } else if (c.path.find("key tiles in shared memory") != std::string::npos) {
      caps.refuse_staged_keys = true;
      what = "key tiles in shared memory";
    } else if (has("_sg")) {
      caps.subgroup_ops &= ~VK_SUBGROUP_FEATURE_CLUSTERED_BIT;
      what = "clustered subgroup reductions";
    } else if (has("_sx")) {
      caps.subgroup_ops &= ~VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
      what = "subgroup shuffle reductions";
    } else {
      what = "nothing (no other path is left)";
    }
    char err[32];
    std::snprintf(err, sizeof err, "%.2g", c.worst_error);
    caps.kernel_refusals.push_back(k + " failed the kernel check (" + c.path + ": error " + err + " > bound): " +
                                   what + " refused");
  }
}

}  // namespace rfa::ops
