// rfa-bench diagnostics. Two figures, both through Session::head_diagnostics (GPU per-pair work,
// host double linear algebra):
//
// --synthetic: the synthetic experiment of "Attention as a Laplace-Radon transform" section 13 (Table 1,
//   docs/DIAGNOSTICS.md §3): one softmax head, unmasked, no rotation and no decay, on i.i.d. N(0, I_96)
//   tokens; W_Q, W_K, W_V i.i.d. Gaussian / sqrt(96); d_k = 32; 64 tokens per example, 256 examples.
//   The head is an `attention` model built in code whose canonical form reduces to q.k / sqrt(32)
//   (probe/dot_product_head.hpp: D = 16 complex dims, tau_h = 1/sqrt(2)); the 256 examples are the
//   batch rows of one prefill. d_v is 32, not 48: the runtime's heads have d_v = d_k, and P, hence
//   every statistic here, does not depend on V. Row entropy and max probability are averaged over
//   all rows of all examples, the effective rank of each 64 x 64 P over examples (mean and spread),
//   the tilts pooled over all 256 x 64 queries (HeadMoments). The numbers come from a different
//   random stream than the paper's numpy run: they must land near the paper's, not on them.
// default: the per-call cost for windows of the last W rows x W keys of a real model's head.
#include "bench_diagnostics.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <sstream>

#include "bench.hpp"
#include "model/model.hpp"
#include "probe/dot_product_head.hpp"
#include "reference/ops_ref.hpp"
#include "rfa/context.hpp"
#include "rfa/diagnostics.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"

namespace rfa::bench {

namespace {

constexpr int kDModel = 96, kDk = 32, kTokens = 64;

bool parse_doubles(const std::string& s, std::vector<double>* out) {
  std::stringstream ss(s);
  std::string item;
  out->clear();
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end || !(v > 0) || !std::isfinite(v)) return false;
    out->push_back(v);
  }
  return !out->empty();
}

bool parse_count(const std::string& s, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// The paper's numbers (section 13.7 and Table 1) where it states them.
struct PaperRow {
  double alpha, entropy, max_prob, erank;  // NaN: not stated
};
const PaperRow kPaper[] = {{0.1, 4.15, 0.0197, NAN}, {1.0, NAN, NAN, 37.14}, {2.0, NAN, NAN, 40.49},
                           {10.0, 0.48, 0.836, NAN}};
const PaperRow* paper_row(double a) {
  for (const PaperRow& p : kPaper)
    if (std::fabs(p.alpha - a) < 1e-9) return &p;
  return nullptr;
}

std::string cell(double v, const char* fmt) {
  if (!std::isfinite(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string jnum(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

LinearWeights gaussian_linear(int in, int out, double scale, std::mt19937_64& rng) {
  std::normal_distribution<double> g(0.0, scale);
  LinearWeights l;
  l.in = in;
  l.out = out;
  l.weight.shape = {out, in};
  l.weight.data.resize((size_t)in * out);
  for (float& x : l.weight.data) x = (float)g(rng);
  return l;
}

struct Accum {
  double entropy = 0, max_prob = 0, erank = 0, erank_sq = 0;
  int n = 0;
};

int synthetic(const std::vector<std::string>& args) {
  const bool json = has_flag(args, "--json");
  long long seed = 0, examples = 256;
  if (!parse_count(option(args, "--seed", "0"), 0, INT64_MAX, &seed)) {
    std::fprintf(stderr, "rfa-bench diagnostics: --seed expects an integer >= 0, got '%s'\n",
                 option(args, "--seed", "").c_str());
    return 2;
  }
  if (!parse_count(option(args, "--examples", "256"), 1, 4096, &examples)) {
    std::fprintf(stderr, "rfa-bench diagnostics: --examples expects a count in [1, 4096], got '%s'\n",
                 option(args, "--examples", "").c_str());
    return 2;
  }
  std::vector<double> alphas;
  if (!parse_doubles(option(args, "--alphas", "0.1,0.2,0.5,1,2,5,10"), &alphas)) {
    std::fprintf(stderr, "rfa-bench diagnostics: --alphas expects a comma-separated list of numbers > 0, got '%s'\n",
                 option(args, "--alphas", "").c_str());
    return 2;
  }
  if (alphas.size() > 64) {
    std::fprintf(stderr, "rfa-bench diagnostics: --alphas: at most 64 temperatures\n");
    return 2;
  }
  std::unique_ptr<Context> ctx = open_context(args);
  if (!ctx) return 5;

  // The head: W_Q, W_K, W_V ~ N(0, 1/96) (our layout q = W x is the paper's W_Q^T x), W_O likewise.
  std::mt19937_64 rng((uint64_t)seed);
  auto m = std::make_shared<Model>();
  m->name = "laplace-radon-synthetic";
  m->arch = Architecture::attention;
  m->d_e = kDModel;
  m->n_heads = 1;
  m->head_dim = kDk / 2;
  m->hidden = 4 * kDModel;
  m->train_seq_len = kTokens;
  m->single.wq = gaussian_linear(kDModel, kDk, 1.0 / std::sqrt((double)kDModel), rng);
  m->single.wk = gaussian_linear(kDModel, kDk, 1.0 / std::sqrt((double)kDModel), rng);
  m->single.wv = gaussian_linear(kDModel, kDk, 1.0 / std::sqrt((double)kDModel), rng);
  m->single.wo = gaussian_linear(kDk, kDModel, 1.0 / std::sqrt((double)kDk), rng);
  m->single.params = probe::dot_product_params(1, kDk / 2, /*causal=*/false);
  const int B = (int)examples;
  std::vector<float> x((size_t)B * kTokens * kDModel);
  std::normal_distribution<double> g(0.0, 1.0);
  for (float& v : x) v = (float)g(rng);

  SessionOptions so;
  so.batch = B;
  so.max_context = kTokens;
  auto s = Session::create(*ctx, m, so);
  if (!s) {
    std::fprintf(stderr, "rfa-bench diagnostics: %s\n", s.status().to_string().c_str());
    return 5;
  }
  Session& S = **s;
  const auto t0 = std::chrono::steady_clock::now();
  if (Status st = S.prefill_values(x, kTokens); !st.ok()) {
    std::fprintf(stderr, "rfa-bench diagnostics: %s\n", st.to_string().c_str());
    return 5;
  }
  // K and V in double from the same fp32 weights, for the Laplace-Radon rebuild.
  const std::vector<double> xd(x.begin(), x.end());
  const auto K = ref::linear(m->single.wk, xd, B * kTokens), V = ref::linear(m->single.wv, xd, B * kTokens);
  const double c = m->single.params.head[0].tau * std::sqrt(2.0);  // logit = c tau_i s_ij
  std::vector<Accum> acc(alphas.size());
  HeadMoments pooled;
  double lr_num = 0, lr_den = 0, svd_ms = 0, eigen_ms = 0, gpu_ms = 0, wall_ms = 0;
  DiagnosticsRequest r;
  r.alpha = alphas[0];
  r.sweep.assign(alphas.begin() + 1, alphas.end());
  r.keep_tilts = true;
  for (int b = 0; b < B; ++b) {
    r.b = b;
    auto d = rfa::Inspector(S).head_diagnostics(r);
    if (!d) {
      std::fprintf(stderr, "rfa-bench diagnostics: %s\n", d.status().to_string().c_str());
      return 5;
    }
    for (size_t k = 0; k < alphas.size(); ++k) {
      const double e = k ? d->sweep[k - 1].entropy : d->entropy_mean;
      const double p = k ? d->sweep[k - 1].max_weight : d->max_weight_mean;
      const double er = k ? d->sweep[k - 1].erank : d->erank;
      acc[k].entropy += e, acc[k].max_prob += p, acc[k].erank += er, acc[k].erank_sq += er * er, ++acc[k].n;
    }
    if (Status st = accumulate(pooled, d->moments); !st.ok()) {
      std::fprintf(stderr, "rfa-bench diagnostics: %s\n", st.to_string().c_str());
      return 5;
    }
    svd_ms += d->timings.svd_ms, eigen_ms += d->timings.eigen_ms, gpu_ms += d->timings.gpu_ms;
    wall_ms += d->timings.wall_ms;
    // The Laplace-Radon identity (eq. 60): y_i = sum_j e^{c tau_i u_i . k_j} v_j / Z_i, then W_O, against the
    // runtime's output (fp32 on the GPU) for this example.
    std::vector<double> y((size_t)kTokens * kDk, 0.0);
    for (int i = 0; i < kTokens; ++i) {
      const double* u = &d->tilts[(size_t)i * kDk];
      std::vector<double> w((size_t)kTokens);
      double mx = -INFINITY;
      for (int j = 0; j < kTokens; ++j) {
        const double* kj = &K[((size_t)b * kTokens + j) * kDk];
        double sij = 0;
        for (int q = 0; q < kDk / 2; ++q)  // u is (Re, Im) per complex dim; k is half-split [Re | Im]
          sij += u[2 * q] * kj[q] + u[2 * q + 1] * kj[kDk / 2 + q];
        w[(size_t)j] = c * d->rows[(size_t)i].tau * sij;
        mx = std::max(mx, w[(size_t)j]);
      }
      double z = 0;
      for (double& v : w) z += v = std::exp(v - mx);
      for (int j = 0; j < kTokens; ++j)
        for (int q = 0; q < kDk; ++q) y[(size_t)i * kDk + q] += w[(size_t)j] / z * V[((size_t)b * kTokens + j) * kDk + q];
    }
    const auto out = ref::linear(m->single.wo, y, kTokens);
    for (size_t k = 0; k < out.size(); ++k) {
      const double got = S.outputs()[(size_t)b * kTokens * kDModel + k];
      lr_num += (got - out[k]) * (got - out[k]);
      lr_den += out[k] * out[k];
    }
  }
  const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto sum = summarize(pooled);
  if (!sum) {
    std::fprintf(stderr, "rfa-bench diagnostics: %s\n", sum.status().to_string().c_str());
    return 5;
  }
  const MomentSummary& ms = *sum;
  const double lr_err = std::sqrt(lr_num / lr_den);
  const std::string device = ctx->device_info().name;
  auto erank_sd = [&](const Accum& a) {
    const double mean = a.erank / a.n;
    return std::sqrt(std::max(a.erank_sq / a.n - mean * mean, 0.0));
  };
  if (json) {
    for (size_t k = 0; k < alphas.size(); ++k) {
      const Accum& a = acc[k];
      std::printf("{\"bench\":\"diagnostics\",\"alpha\":%s,\"entropy\":%s,\"max_prob\":%s,\"eff_rank\":%s,"
                  "\"eff_rank_sd\":%s,\"seed\":%lld,\"examples\":%d,\"tokens\":%d",
                  jnum(alphas[k]).c_str(), jnum(a.entropy / a.n).c_str(), jnum(a.max_prob / a.n).c_str(),
                  jnum(a.erank / a.n).c_str(), jnum(erank_sd(a)).c_str(), seed, B, kTokens);
      if (std::fabs(alphas[k] - 1.0) < 1e-12)
        std::printf(",\"dim_eff_u\":%s,\"dim_eff_n\":%s,\"tau_mean\":%s,\"tau_chi\":%s,\"var_q\":%s,\"var_k\":%s,"
                    "\"logit_std\":%s,\"logit_std_meanfield\":%s,\"laplace_radon_rel_error\":%s",
                    jnum(ms.dim_eff_u).c_str(), jnum(ms.dim_eff_n).c_str(), jnum(ms.tau_mean).c_str(),
                    jnum(ms.tau_chi_mean).c_str(), jnum(ms.var_q).c_str(), jnum(ms.var_k).c_str(),
                    jnum(ms.logit_std).c_str(), jnum(ms.logit_std_meanfield).c_str(), jnum(lr_err).c_str());
      std::printf("}\n");
    }
    std::printf("{\"bench\":\"diagnostics\",\"timing\":true,\"device\":\"%s\",\"calls\":%d,\"window\":%d,"
                "\"temperatures\":%zu,\"gpu_ms_per_call\":%s,\"svd_ms_per_call\":%s,\"eigen_ms_per_call\":%s,"
                "\"wall_ms_per_call\":%s,\"total_s\":%s}\n",
                device.c_str(), B, kTokens, alphas.size(), jnum(gpu_ms / B).c_str(), jnum(svd_ms / B).c_str(),
                jnum(eigen_ms / B).c_str(), jnum(wall_ms / B).c_str(), jnum(total_s).c_str());
    return 0;
  }
  std::printf("Synthetic attention tomography (Laplace-Radon paper, section 13, Table 1) on %s, seed %lld:\n", device.c_str(),
              seed);
  std::printf("  one softmax head, unmasked, d_model %d, d_k %d (d_v %d: P does not depend on V), %d tokens x %d examples\n",
              kDModel, kDk, kDk, kTokens, B);
  std::printf("\n  %-6s  %-17s  %-19s  %-26s\n", "alpha", "entropy (paper)", "max prob (paper)", "erank mean +- sd (paper)");
  for (size_t k = 0; k < alphas.size(); ++k) {
    const Accum& a = acc[k];
    const PaperRow* p = paper_row(alphas[k]);
    std::printf("  %-6g  %-7.4f (%-6s)  %-8.4f (%-7s)  %6.2f +- %-5.2f (%-6s)\n", alphas[k], a.entropy / a.n,
                cell(p ? p->entropy : NAN, "%.2f").c_str(), a.max_prob / a.n, cell(p ? p->max_prob : NAN, "%.4g").c_str(),
                a.erank / a.n, erank_sd(a), cell(p ? p->erank : NAN, "%.2f").c_str());
  }
  size_t peak = 0;
  for (size_t k = 1; k < alphas.size(); ++k)
    if (acc[k].erank > acc[peak].erank) peak = k;
  std::printf("  erank peak on this grid: %.2f at alpha %g (paper: about 40.49 near alpha 2)\n",
              acc[peak].erank / acc[peak].n, alphas[peak]);
  std::printf("\n  %-44s  %-10s  %s\n", "pooled over all queries (alpha-free)", "ours", "paper");
  std::printf("  %-44s  %-10.2f  %s\n", "dim_eff span(U) (participation ratio)", ms.dim_eff_u, "24.53");
  std::printf("  %-44s  %-10.2f  %s\n", "dim_eff span(N), n = W_K u", ms.dim_eff_n, "19.93");
  std::printf("  %-44s  %-10.4f  %s\n", "tau mean (empirical)", ms.tau_mean, "1.0242");
  std::printf("  %-44s  %-10.4f  %s\n", "tau mean (chi prediction from Var(q))", ms.tau_chi_mean, "1.0267");
  std::printf("  %-44s  %.4f / %.4f  %s\n", "Var(q), Var(k) per dim", ms.var_q, ms.var_k, "1.0706 / 0.9665");
  std::printf("  %-44s  %.4f / %.4f  %s\n", "logit std, mean-field / empirical", ms.logit_std_meanfield, ms.logit_std,
              "1.0172 / 1.0125");
  std::printf("  %-44s  %-10.3g  %s\n", "Laplace-Radon rebuild rel. error", lr_err, "5.94e-16 (all double)");
  std::printf("\n  (ours: the fp32 GPU head against the double rebuild from u, tau, K, V)\n");
  std::printf("  cost per diagnostics call (64 x 64 window, %zu temperatures): GPU %.3f ms, host SVDs %.3f ms, "
              "host eigen %.3f ms, wall %.2f ms; total %.1f s\n",
              alphas.size(), gpu_ms / B, svd_ms / B, eigen_ms / B, wall_ms / B, total_s);
  return 0;
}

// The per-call cost on a real model: the viewer's per-frame figure for a window of W rows x W keys.
int window_cost(const std::vector<std::string>& args) {
  const bool json = has_flag(args, "--json");
  const std::string dir = option(args, "--model", std::string(RFA_SOURCE_DIR) + "/models/tiny-char-lm");
  std::vector<double> wd;
  if (!parse_doubles(option(args, "--window", "64,128,256,512"), &wd)) {
    std::fprintf(stderr, "rfa-bench diagnostics: --window expects a comma-separated list of sizes\n");
    return 2;
  }
  long long reps = 5;
  if (!parse_count(option(args, "--reps", "5"), 1, 1000, &reps)) {
    std::fprintf(stderr, "rfa-bench diagnostics: --reps expects a count in [1, 1000]\n");
    return 2;
  }
  std::unique_ptr<Context> ctx = open_context(args);
  if (!ctx) return 5;
  auto model = load_model_dir(dir);
  if (!model) {
    std::fprintf(stderr, "rfa-bench diagnostics: %s\n", model.status().to_string().c_str());
    return 3;
  }
  const ModelInfo info = model_info(**model);
  int n = 0;
  for (double w : wd) n = std::max(n, (int)w);
  SessionOptions so;
  so.max_context = n;
  so.last_output_only = true;
  auto s = Session::create(*ctx, *model, so);
  if (!s) {
    std::fprintf(stderr, "rfa-bench diagnostics: %s\n", s.status().to_string().c_str());
    return 5;
  }
  std::mt19937 rng(1);
  Status st;
  if (info.architecture == "lm") {
    std::uniform_int_distribution<int> u(0, info.vocab - 1);
    std::vector<int64_t> ids((size_t)n);
    for (auto& v : ids) v = u(rng);
    st = (*s)->prefill_tokens(ids, n);
  } else {
    std::normal_distribution<float> g(0.f, 1.f);
    std::vector<float> v((size_t)n * info.input_dim);
    for (auto& x : v) x = g(rng);
    st = (*s)->prefill_values(v, n);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "rfa-bench diagnostics: %s\n", st.to_string().c_str());
    return 5;
  }
  if (!json)
    std::printf("diagnostics call cost, model %s (%d layers x %d heads, D = %d) on %s, median of %lld:\n",
                info.name.c_str(), info.layers, info.heads, info.head_dim, ctx->device_info().name.c_str(), reps);
  for (double w : wd) {
    DiagnosticsRequest r;
    r.r0 = r.c0 = -(int)w;
    std::vector<double> gpu, svd, eig, host, wall;
    for (long long k = 0; k < reps; ++k) {
      auto d = rfa::Inspector(**s).head_diagnostics(r);
      if (!d) {
        std::fprintf(stderr, "rfa-bench diagnostics: %s\n", d.status().to_string().c_str());
        return 5;
      }
      gpu.push_back(d->timings.gpu_ms), svd.push_back(d->timings.svd_ms), eig.push_back(d->timings.eigen_ms);
      host.push_back(d->timings.host_ms), wall.push_back(d->timings.wall_ms);
    }
    if (json)
      std::printf("{\"bench\":\"diagnostics\",\"window\":%d,\"model\":\"%s\",\"device\":\"%s\",\"gpu_ms\":%s,\"svd_ms\":%s,"
                  "\"eigen_ms\":%s,\"host_ms\":%s,\"wall_ms\":%s}\n",
                  (int)w, info.name.c_str(), ctx->device_info().name.c_str(), jnum(median(gpu)).c_str(),
                  jnum(median(svd)).c_str(), jnum(median(eig)).c_str(), jnum(median(host)).c_str(),
                  jnum(median(wall)).c_str());
    else
      std::printf("  window %4d x %-4d  GPU %8.2f ms   host: SVD %8.2f ms, eigen %6.2f ms, all %8.2f ms   wall %8.2f ms\n",
                  (int)w, (int)w, median(gpu), median(svd), median(eig), median(host), median(wall));
  }
  return 0;
}

}  // namespace

int bench_diagnostics(const std::vector<std::string>& args) {
  return has_flag(args, "--synthetic") ? synthetic(args) : window_cost(args);
}

}  // namespace rfa::bench
