// The "Attention tomography" panel (panel_diagnostics.hpp). Everything shown comes from one
// Session::head_diagnostics call per recomputation: the per-pair work on the GPU, the SVD of P
// and the d x d eigenproblems on the host (their costs are shown in the panel).
#include "panel_diagnostics.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "imgui.h"

namespace viewer {

namespace {

std::vector<float> to_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

const double kSweepGrid[] = {0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0};

}  // namespace

void DiagnosticsPanel::compute(rfa::Session& s, const Key& k) {
  // The history follows one head, temperature and window rule; anything else starts it afresh.
  const bool same_series = k.session == key_.session && k.layer == key_.layer && k.head == key_.head &&
                           k.alpha == key_.alpha && k.decayed == key_.decayed && k.mode == key_.mode &&
                           k.window == key_.window && k.position >= key_.position;
  if (!same_series) erank_history_.clear();
  rfa::DiagnosticsRequest r;
  r.layer = k.layer, r.head = k.head;
  r.r0 = k.r0, r.r1 = k.r1, r.c0 = k.c0, r.c1 = k.c1;
  r.alpha = k.alpha;
  r.decayed = k.decayed;
  r.spectrum = k.r1 - k.r0 <= 1024 && k.c1 - k.c0 <= 1024;
  if (k.sweep) r.sweep.assign(std::begin(kSweepGrid), std::end(kSweepGrid));
  key_ = k;
  frames_since_ = 0;
  auto d = s.head_diagnostics(r);
  if (!d) {
    error_ = d.status().message();
    have_ = false;
    return;
  }
  error_.clear();
  last_ = d.take();
  have_ = true;
  if (r.spectrum) {
    if (!erank_history_.empty() && erank_history_.back().first == k.position) erank_history_.pop_back();
    erank_history_.push_back({k.position, last_.erank});
  }
}

void DiagnosticsPanel::draw(rfa::Session& s, int layer, int head, const rfa::HeatmapRequest& view) {
  ImGui::SetNextWindowPos({8, 444}, ImGuiCond_FirstUseEver);
  ImGui::SetNextWindowSize({380, 256}, ImGuiCond_FirstUseEver);
  ImGui::Begin("Attention tomography (Laplace-Radon)");
  const ImVec2 wp = ImGui::GetWindowPos(), ws = ImGui::GetWindowSize();
  screen_[0] = wp.x, screen_[1] = wp.y, screen_[2] = wp.x + ws.x, screen_[3] = wp.y + ws.y;
  ImGui::PushItemWidth(70);
  ImGui::SliderFloat("alpha", &alpha_, 0.05f, 20.0f, "%.3g", ImGuiSliderFlags_Logarithmic);
  ImGui::SameLine();
  ImGui::Checkbox("A=Ahat E", &decayed_);
  ImGui::SameLine();
  ImGui::Checkbox("sweep 0.1..10", &sweep_curve_);
  ImGui::RadioButton("view", &mode_, 0);
  ImGui::SameLine();
  ImGui::RadioButton("last", &mode_, 1);
  ImGui::SameLine();
  ImGui::SliderInt("rows", &window_, 8, 1024);
  ImGui::SameLine();
  ImGui::PushItemWidth(50);
  ImGui::SliderInt("every", &every_, 1, 60);
  ImGui::PopItemWidth();
  ImGui::PopItemWidth();
  alpha_ = std::clamp(alpha_, 0.01f, 100.0f);

  const int filled = s.position();
  Key k;
  k.session = &s;
  k.layer = layer;
  k.head = head;
  k.position = filled;
  k.alpha = alpha_;
  k.decayed = decayed_;
  k.sweep = sweep_curve_;
  k.mode = mode_;
  k.window = mode_ == 1 ? window_ : 0;
  if (mode_ == 0) {
    k.r0 = std::min(view.r0, filled), k.r1 = std::min(view.r1, filled);
    k.c0 = std::min(view.c0, filled), k.c1 = std::min(view.c1, filled);
  } else {
    k.r0 = k.c0 = std::max(0, filled - window_);
    k.r1 = k.c1 = filled;
  }
  ++frames_since_;
  // Recompute at once when the head, temperature or window rule changed (or the visible map moved);
  // when only the stream grew, at most every `every_` frames.
  Key settled = key_;
  settled.position = k.position;
  if (mode_ == 1) settled.r0 = k.r0, settled.r1 = k.r1, settled.c0 = k.c0, settled.c1 = k.c1;
  const bool changed = !(settled == k);
  const bool grew = k.position != key_.position;
  if (k.r1 > k.r0 && k.c1 > k.c0 && (!have_ || changed || (grew && frames_since_ >= every_))) compute(s, k);
  if (k.r1 <= k.r0 || k.c1 <= k.c0) {
    ImGui::TextDisabled("no computed rows in the window yet");
    ImGui::End();
    return;
  }
  if (!error_.empty()) ImGui::TextWrapped("%s", error_.c_str());
  if (!have_) {
    ImGui::End();
    return;
  }
  const rfa::HeadDiagnostics& d = last_;
  const rfa::MomentSummary& m = d.summary;
  ImGui::Text("L%d H%d, rows %d..%d x keys %d..%d, d = %d", d.layer, d.head, d.r0, d.r1 - 1, d.c0, d.c1 - 1, d.d);
  ImGui::Text("H %.3f  max p %.3f  erank %.2f  rank %d  ker %d", d.entropy_mean, d.max_weight_mean, d.erank, d.rank,
              d.nullity);
  ImGui::Text("dim_eff U %.2f N %.2f  tau %.3f+-%.3f (chi %.3f)", m.dim_eff_u, m.dim_eff_n, m.tau_mean, m.tau_std,
              m.tau_chi_mean);
  ImGui::TextDisabled("GPU %.2f ms, host: SVD %.2f ms, eigen %.2f ms", d.timings.gpu_ms, d.timings.svd_ms,
                      d.timings.eigen_ms);

  // tau histogram over the window's rows.
  double lo = DBL_MAX, hi = -DBL_MAX;
  for (const auto& q : d.rows) lo = std::min(lo, q.tau), hi = std::max(hi, q.tau);
  const int bins = 24;
  std::vector<float> hist(bins, 0.0f);
  for (const auto& q : d.rows) {
    const int b = hi > lo ? std::min(bins - 1, (int)((q.tau - lo) / (hi - lo) * bins)) : 0;
    hist[(size_t)b] += 1.0f;
  }
  char label[64];
  const float half = std::max(60.0f, (ImGui::GetContentRegionAvail().x - 8) / 2);
  std::snprintf(label, sizeof label, "tau %.2f..%.2f", lo, hi);
  ImGui::PlotHistogram("##tau", hist.data(), bins, 0, label, 0.0f, FLT_MAX, {half, 36});
  ImGui::SameLine();
  const auto tilt = to_float(m.tilt_spectrum);
  ImGui::PlotHistogram("##tilt", tilt.data(), (int)tilt.size(), 0, "tilt spectrum C_u", 0.0f, FLT_MAX, {half, 36});
  const auto sv = to_float(d.singular_values);
  if (!sv.empty()) ImGui::PlotLines("##sv", sv.data(), (int)sv.size(), 0, "singular values of P", 0.0f, FLT_MAX, {half, 36});
  else ImGui::TextDisabled("(window over 1024: no spectrum)");
  ImGui::SameLine();
  std::vector<float> er;
  for (auto& [p, e] : erank_history_) er.push_back((float)e);
  std::snprintf(label, sizeof label, "erank over time (%zu)", er.size());
  ImGui::PlotLines("##erank", er.data(), (int)er.size(), 0, label, 0.0f, FLT_MAX, {half, 36});
  const auto normal = to_float(m.normal_spectrum);
  ImGui::PlotHistogram("##normal", normal.data(), (int)normal.size(), 0, "normal spectrum C_n", 0.0f, FLT_MAX, {half, 36});
  if (!d.sweep.empty()) {
    ImGui::SameLine();
    std::vector<float> se;
    for (const auto& p : d.sweep) se.push_back((float)p.erank);
    ImGui::PlotLines("##sweep", se.data(), (int)se.size(), 0, "erank, alpha 0.1..10", 0.0f, FLT_MAX, {half, 36});
  }
  ImGui::End();
}

std::string DiagnosticsPanel::json() const {
  std::ostringstream o;
  o << "{\"shown\": " << (have_ ? "true" : "false") << ", \"screen\": [" << screen_[0] << ", " << screen_[1] << ", "
    << screen_[2] << ", " << screen_[3] << "]";
  if (have_) {
    const rfa::HeadDiagnostics& d = last_;
    o << ", \"layer\": " << d.layer << ", \"head\": " << d.head << ", \"position\": " << key_.position
      << ", \"rows\": [" << d.r0 << ", " << d.r1 << "], \"cols\": [" << d.c0 << ", " << d.c1
      << "], \"alpha\": " << num(d.alpha) << ", \"decayed\": " << (d.decayed ? "true" : "false")
      << ", \"erank\": " << num(d.erank) << ", \"rank\": " << d.rank << ", \"entropy_mean\": " << num(d.entropy_mean)
      << ", \"max_weight_mean\": " << num(d.max_weight_mean) << ", \"dim_eff_u\": " << num(d.summary.dim_eff_u)
      << ", \"dim_eff_n\": " << num(d.summary.dim_eff_n) << ", \"tau_mean\": " << num(d.summary.tau_mean)
      << ", \"host_ms\": " << num(d.timings.host_ms) << ", \"gpu_ms\": " << num(d.timings.gpu_ms)
      << ", \"wall_ms\": " << num(d.timings.wall_ms) << ", \"erank_history\": [";
    for (size_t k = 0; k < erank_history_.size(); ++k)
      o << (k ? ", " : "") << "[" << erank_history_[k].first << ", " << num(erank_history_[k].second) << "]";
    o << "]";
  }
  o << "}";
  return o.str();
}

}  // namespace viewer
