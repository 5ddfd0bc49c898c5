#include "demo.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "progress.hpp"
#include "rfa/device.hpp"
#include "rfa/reference.hpp"
#include "rfa/spiral.hpp"

namespace rfa {

int run_self_check(Context& ctx, bool json) {
  auto r = self_check(ctx);
  if (!r) {
    std::fprintf(stderr, "rfa-run: %s\n", r.status().to_string().c_str());
    return 5;
  }
  const DeviceInfo di = ctx.device_info();
  if (json) {
    std::printf("{\"device\":\"%s\",\"self_check\":\"%s\",\"max_abs_error\":%.3g,\"attention\":[", di.name.c_str(),
                r->pass ? "pass" : "fail", r->max_abs_error);
    for (size_t i = 0; i < r->attention.size(); ++i) {
      const KernelCheck& k = r->attention[i];
      std::printf("%s{\"path\":\"%s\",\"kernel\":\"%s\",\"worst_error\":%.3g,\"bound\":%.3g,\"ms\":%.3f,"
                  "\"pass\":%s}",
                  i ? "," : "", k.path.c_str(), k.kernel.c_str(), k.worst_error, k.bound, k.ms, k.pass ? "true" : "false");
    }
    std::printf("]}\n");
  } else {
    std::printf("%s\nself-check: Linear [%d x %d] -> %d on %s vs double-precision CPU: max |error| = %.2e  %s\n",
                ctx.capabilities_summary().c_str(), r->rows, r->in, r->out, di.name.c_str(), r->max_abs_error,
                r->max_abs_error < 1e-3 ? "PASS" : "FAIL");
    // Every attention path the chooser can take here: what was forced, the kernel, its error, time.
    std::printf("self-check: attention paths vs a double-precision CPU evaluation (|gpu - cpu| / (1 + |cpu|)):\n");
    for (const KernelCheck& k : r->attention)
      std::printf("  %-40s %-46s %9.2e <= %7.1e %8.2f ms  %s\n", k.path.c_str(), k.kernel.c_str(), k.worst_error,
                  k.bound, k.ms, k.pass ? "PASS" : "FAIL");
  }
  return r->pass ? 0 : 5;
}

namespace {

// One evaluation: B fresh trajectories of N measurements (seeds the model never saw), streamed one
// measurement at a time with their timestamps; next-step MSE against the true state one nominal
// interval ahead, for the raw measurement, the exact Kalman filter and the model.
struct DemoResult {
  double mse_raw = 0, mse_kf = 0, mse_model = 0, wall_ms = 0, gpu_ms = 0;
};

Result<DemoResult> evaluate(Context* ctx, std::shared_ptr<const Model> model, bool cpu, bool irregular, int B, int N) {
  SpiralSimulator::Options so;
  so.irregular = irregular;
  std::vector<float> y((size_t)B * N * 2);
  std::vector<double> ts((size_t)B * N), target((size_t)B * N * 2);
  DemoResult r;
  for (int b = 0; b < B; ++b) {
    so.seed = 2026 + (uint64_t)b;
    const auto ms = SpiralSimulator(so).trajectory(N);
    for (int k = 0; k < N; ++k) {
      const auto& mk = ms[(size_t)k];
      ts[(size_t)b * N + k] = mk.t;
      for (int c = 0; c < 2; ++c) {
        const double t = mk.truth_ahead[(size_t)c];
        y[((size_t)b * N + k) * 2 + c] = (float)mk.y[(size_t)c];
        target[((size_t)b * N + k) * 2 + c] = t;
        r.mse_raw += (mk.y[(size_t)c] - t) * (mk.y[(size_t)c] - t);
        r.mse_kf += (mk.kalman_next[(size_t)c] - t) * (mk.kalman_next[(size_t)c] - t);
      }
    }
  }
  std::vector<float> pred((size_t)B * N * 2);
  auto t0 = std::chrono::steady_clock::now();
  if (cpu) {
    Progress progress(irregular ? "CPU twin, irregular sampling" : "CPU twin, regular sampling");
    std::vector<double> in(y.begin(), y.end());
    auto f = reference_forward(*model, B, N, in.data(), nullptr, ts.data());
    if (!f) return f.status();
    for (size_t i = 0; i < pred.size(); ++i) pred[i] = (float)(*f)[i];
  } else {
    SessionOptions o;
    o.batch = B;
    o.max_context = N;
    auto s = Session::create(*ctx, model, o);
    if (!s) return s.status();
    Progress progress(irregular ? "streaming, irregular sampling" : "streaming, regular sampling", N, "steps");
    for (int k = 0; k < N; ++k) {
      progress.set(k);
      std::vector<float> step((size_t)B * 2);
      std::vector<double> tk((size_t)B);
      for (int b = 0; b < B; ++b) {
        tk[(size_t)b] = ts[(size_t)b * N + k];
        for (int c = 0; c < 2; ++c) step[(size_t)b * 2 + c] = y[((size_t)b * N + k) * 2 + c];
      }
      RFA_TRY((*s)->step_values(step, tk));
      r.gpu_ms += (*s)->last_gpu_ms();
      for (int b = 0; b < B; ++b)
        for (int c = 0; c < 2; ++c) pred[((size_t)b * N + k) * 2 + c] = (*s)->outputs()[(size_t)b * 2 + c];
    }
  }
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < pred.size(); ++i) r.mse_model += (pred[i] - target[i]) * (pred[i] - target[i]);
  const double cnt = (double)B * N * 2;
  r.mse_raw /= cnt;
  r.mse_kf /= cnt;
  r.mse_model /= cnt;
  return r;
}

}  // namespace

int run_spiral_demo(Context* ctx, std::shared_ptr<const Model> model, bool json, bool cpu) {
  const ModelInfo m = model_info(*model);
  const int B = 64, N = 100;  // 64 trajectories: the MSE of a few would swing with |x0|^2
  const std::string device = cpu ? "cpu-reference (double)" : ctx->device_info().name;
  DemoResult res[2];
  for (int irregular = 0; irregular < 2; ++irregular) {
    auto r = evaluate(ctx, model, cpu, irregular != 0, B, N);
    if (!r) {
      std::fprintf(stderr, "rfa-run: %s\n", r.status().to_string().c_str());
      return r.status().code() == Code::input_error ? 4 : 5;
    }
    res[irregular] = *r;
  }
  auto heads = head_summaries(*model);
  if (json) {
    std::printf("{\"device\":\"%s\",\"model\":\"%s\",\"trajectories\":%d,\"steps\":%d", device.c_str(),
                m.name.c_str(), B, N);
    for (int k = 0; k < 2; ++k)
      std::printf(",\"%s\":{\"mse_raw\":%.6f,\"mse_kalman\":%.6f,\"mse_model\":%.6f,\"wall_ms\":%.3f,\"gpu_ms\":%.3f}",
                  k ? "irregular" : "regular", res[k].mse_raw, res[k].mse_kf, res[k].mse_model, res[k].wall_ms,
                  res[k].gpu_ms);
    std::printf(",\"heads\":[");
    for (size_t i = 0; i < heads.size(); ++i) {
      const auto& h = heads[i];
      // Brownian heads have no finite stationary variance: alpha and beta are JSON null then.
      auto num = [](double v) { return std::isfinite(v) ? std::to_string(v) : std::string("null"); };
      std::printf("%s{\"layer\":%d,\"head\":%d,\"mu\":%.6g,\"regime\":\"%s\",\"alpha\":%s,\"beta\":%s}", i ? "," : "",
                  h.layer, h.head, h.params.mu, regime_name(h.regime.regime), num(h.regime.alpha).c_str(),
                  num(h.regime.beta).c_str());
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("RFA-VK %s: the spiral-filter demo\n", version());
  std::printf("device: %s\n", device.c_str());
  std::printf("model:  %s (%s, %d layers x %d heads, D = %d complex dims per head", m.name.c_str(),
              m.architecture.c_str(), m.layers, m.heads, m.head_dim);
  if (m.attention_window > 0) std::printf("; each prediction sees its last %d measurements", m.attention_window);
  std::printf(")\n\n");
  std::printf("%-6s %-5s %10s %18s %10s %10s %10s  %s\n", "layer", "head", "mu", "omega band", "stat.var", "alpha",
              "beta", "regime");
  for (const auto& h : heads) {
    char band[48];
    std::snprintf(band, sizeof band, "%.3g..%.3g", h.omega_min, h.omega_max);
    std::printf("%-6d %-5d %10.4g %18s %10.4g %10.4g %10.4g  %s\n", h.layer, h.head, h.params.mu, band,
                h.regime.stationary_variance, h.regime.alpha, h.regime.beta, regime_name(h.regime.regime));
  }
  std::printf("\n%d fresh trajectories x %d noisy measurements (sigma_m = %.1f), streamed one at a time\n"
              "with their timestamps; MSE of the prediction of the true state one interval ahead:\n\n",
              B, N, SpiralSimulator::Options{}.sigma_m);
  std::printf("  %-28s %12s %14s\n", "", "regular", "irregular gaps");
  std::printf("  %-28s %12.4f %14.4f\n", "raw measurement", res[0].mse_raw, res[1].mse_raw);
  std::printf("  %-28s %12.4f %14.4f\n", "Kalman filter (exact model)", res[0].mse_kf, res[1].mse_kf);
  std::printf("  %-28s %12.4f %14.4f\n", m.name.c_str(), res[0].mse_model, res[1].mse_model);
  std::printf("\n  %s: %.1f ms wall (%.1f ms GPU) for %d steps of %d trajectories\n",
              cpu ? "cpu-reference" : "streaming", res[0].wall_ms, res[0].gpu_ms, N, B);
  return 0;
}

}  // namespace rfa
