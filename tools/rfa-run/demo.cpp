#include "demo.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "model/model.hpp"
#include "ops/linear.hpp"
#include "reference/model_ref.hpp"
#include "reference/ops_ref.hpp"
#include "rfa/spiral.hpp"

namespace rfa {

int run_self_check(Context& ctx, bool json) {
  gpu::Context& g = ctx.impl();
  const int rows = 61, in = 100, out = 257;  // deliberately off-tile
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1, 1);
  LinearWeights w;
  w.in = in;
  w.out = out;
  w.weight.shape = {out, in};
  w.bias.shape = {out};
  for (int i = 0; i < in * out; ++i) w.weight.data.push_back(d(rng));
  for (int i = 0; i < out; ++i) w.bias.data.push_back(d(rng));
  std::vector<float> x(rows * in);
  for (float& v : x) v = d(rng);
  auto lw = ops::LinearGpu::create(g, w, "self-check");
  auto bx = g.allocator().allocate(x.size() * 4, gpu::MemoryKind::device, "x");
  auto by = g.allocator().allocate((size_t)rows * out * 4, gpu::MemoryKind::device, "y");
  if (!lw || !bx || !by) {
    std::fprintf(stderr, "rfa-run: self-check allocation failed\n");
    return 5;
  }
  Status st = g.upload(*bx, x.data(), x.size() * 4);
  gpu::Recorder rec(g);
  if (st.ok()) st = rec.begin();
  if (st.ok()) st = ops::record_linear(g, rec, *bx, *lw, *by, rows);
  if (st.ok()) st = rec.submit_and_wait();
  std::vector<float> y((size_t)rows * out);
  if (st.ok()) st = g.download(*by, y.data(), y.size() * 4);
  if (!st.ok()) {
    std::fprintf(stderr, "rfa-run: %s\n", st.to_string().c_str());
    return 5;
  }
  std::vector<double> ref = ref::linear(w, std::vector<double>(x.begin(), x.end()), rows);
  double worst = 0;
  for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - ref[i]));
  bool ok = worst < 1e-3;
  DeviceInfo di = ctx.device_info();
  if (json)
    std::printf("{\"device\":\"%s\",\"self_check\":\"%s\",\"max_abs_error\":%.3g}\n", di.name.c_str(), ok ? "pass" : "fail", worst);
  else
    std::printf("%s\nself-check: Linear [%d x %d] -> %d on %s vs double-precision CPU: max |error| = %.2e  %s\n",
                ctx.capabilities_summary().c_str(), rows, in, out, di.name.c_str(), worst, ok ? "PASS" : "FAIL");
  return ok ? 0 : 5;
}

int run_spiral_demo(Context* ctx, std::shared_ptr<const Model> model, bool json, bool cpu) {
  const Model& m = *model;
  const int B = 16, N = 100;
  // B fresh trajectories (seeds the model never saw), N + 1 measurements each: the target of
  // position k is the true state at the next measurement, one nominal interval later.
  SpiralSimulator::Options so;
  std::vector<float> y((size_t)B * N * 2);
  std::vector<double> target((size_t)B * N * 2);
  double mse_raw = 0, mse_kf = 0, mse_model = 0;
  for (int b = 0; b < B; ++b) {
    so.seed = 2026 + (uint64_t)b;
    SpiralSimulator sim(so);
    std::vector<SpiralSimulator::Measurement> ms;
    for (int k = 0; k <= N; ++k) ms.push_back(sim.next());
    for (int k = 0; k < N; ++k)
      for (int c = 0; c < 2; ++c) {
        const double t = ms[(size_t)k + 1].truth[(size_t)c];
        y[((size_t)b * N + k) * 2 + c] = (float)ms[(size_t)k].y[(size_t)c];
        target[((size_t)b * N + k) * 2 + c] = t;
        mse_raw += (ms[(size_t)k].y[(size_t)c] - t) * (ms[(size_t)k].y[(size_t)c] - t);
        mse_kf += (ms[(size_t)k].kalman_next[(size_t)c] - t) * (ms[(size_t)k].kalman_next[(size_t)c] - t);
      }
  }
  // The model, streamed one measurement at a time (each step sees all B trajectories).
  std::vector<float> pred((size_t)B * N * 2);
  std::string device = "cpu-reference (double)";
  auto t0 = std::chrono::steady_clock::now();
  double gpu_ms = 0;
  if (cpu) {
    std::vector<double> in(y.begin(), y.end());
    auto r = ref::forward(m, B, N, in.data(), nullptr, nullptr);
    if (!r) {
      std::fprintf(stderr, "rfa-run: %s\n", r.status().to_string().c_str());
      return 5;
    }
    for (size_t i = 0; i < pred.size(); ++i) pred[i] = (float)(*r)[i];
  } else {
    device = ctx->device_info().name;
    SessionOptions so;
    so.batch = B;
    so.max_context = N;
    auto s = Session::create(*ctx, model, so);
    if (!s) {
      std::fprintf(stderr, "rfa-run: %s\n", s.status().to_string().c_str());
      return 5;
    }
    for (int k = 0; k < N; ++k) {
      std::vector<float> step((size_t)B * 2);
      for (int b = 0; b < B; ++b)
        for (int c = 0; c < 2; ++c) step[(size_t)b * 2 + c] = y[((size_t)b * N + k) * 2 + c];
      Status st = (*s)->step_values(step);
      if (!st.ok()) {
        std::fprintf(stderr, "rfa-run: %s\n", st.to_string().c_str());
        return st.code() == Code::input_error ? 4 : 5;
      }
      gpu_ms += (*s)->last_gpu_ms();
      for (int b = 0; b < B; ++b)
        for (int c = 0; c < 2; ++c) pred[((size_t)b * N + k) * 2 + c] = (*s)->outputs()[(size_t)b * 2 + c];
    }
  }
  double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (size_t i = 0; i < pred.size(); ++i) mse_model += (pred[i] - target[i]) * (pred[i] - target[i]);
  const double cnt = (double)B * N * 2;
  mse_raw /= cnt;
  mse_kf /= cnt;
  mse_model /= cnt;
  auto heads = head_summaries(m);
  if (json) {
    std::printf("{\"device\":\"%s\",\"model\":\"%s\",\"trajectories\":%d,\"steps\":%d,\"mse_raw\":%.6f,"
                "\"mse_kalman\":%.6f,\"mse_model\":%.6f,\"wall_ms\":%.3f,\"gpu_ms\":%.3f,\"heads\":[",
                device.c_str(), m.name.c_str(), B, N, mse_raw, mse_kf, mse_model, wall, gpu_ms);
    for (size_t i = 0; i < heads.size(); ++i) {
      const auto& h = heads[i];
      std::printf("%s{\"layer\":%d,\"head\":%d,\"mu\":%.6g,\"regime\":\"%s\",\"alpha\":%.6g,\"beta\":%.6g}", i ? "," : "",
                  h.layer, h.head, h.params.mu, regime_name(h.regime.regime),
                  std::isfinite(h.regime.alpha) ? h.regime.alpha : -1e308, std::isfinite(h.regime.beta) ? h.regime.beta : 1e308);
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf("RFA-VK %s: the spiral-filter demo\n", version());
  std::printf("device: %s\n", device.c_str());
  std::printf("model:  %s (%s, %d layers x %d heads, D = %d complex dims per head)\n\n", m.name.c_str(),
              architecture_name(m.arch), m.num_layers(), m.n_heads, m.head_dim);
  std::printf("%-6s %-5s %10s %18s %10s %10s %10s  %s\n", "layer", "head", "mu", "omega band", "stat.var", "alpha",
              "beta", "regime");
  for (const auto& h : heads) {
    char band[48];
    std::snprintf(band, sizeof band, "%.3g..%.3g", h.omega_min, h.omega_max);
    std::printf("%-6d %-5d %10.4g %18s %10.4g %10.4g %10.4g  %s\n", h.layer, h.head, h.params.mu, band,
                h.regime.stationary_variance, h.regime.alpha, h.regime.beta, regime_name(h.regime.regime));
  }
  std::printf("\n%d fresh trajectories x %d noisy measurements (sigma_m = %.1f), streamed one step at a time:\n", B, N,
              so.sigma_m);
  std::printf("  next-step prediction MSE vs the true state\n");
  std::printf("    raw measurements      %8.4f\n", mse_raw);
  std::printf("    Kalman filter (exact) %8.4f\n", mse_kf);
  std::printf("    %-21s %8.4f\n", m.name.c_str(), mse_model);
  std::printf("  %s: %.1f ms wall, %.1f ms GPU for %d steps\n", cpu ? "cpu-reference" : "streaming", wall, gpu_ms, N);
  return 0;
}

}  // namespace rfa
