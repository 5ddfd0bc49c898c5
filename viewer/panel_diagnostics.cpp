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
#include "rfa/inspect.hpp"

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
  auto d = rfa::Inspector(s).head_diagnostics(r);
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

void DiagnosticsPanel::draw(rfa::Session& s, int layer, int head, const rfa::HeatmapRequest& view,
                            const PanelRect& where, bool force, PanelAudit& audit) {
  place_next(where, force);
  ImGui::Begin("Attention tomography (Laplace-Radon)");
  const ImVec2 wp = ImGui::GetWindowPos(), ws = ImGui::GetWindowSize();
  screen_[0] = wp.x, screen_[1] = wp.y, screen_[2] = wp.x + ws.x, screen_[3] = wp.y + ws.y;
  auto end = [&] {
    audit.panel();
    ImGui::End();
  };
  const rfa::AttentionVariant variant = rfa::layer_params(s.model(), layer).variant;
  ImGui::PushItemWidth(70);
  ImGui::SliderFloat("alpha", &alpha_, 0.05f, 20.0f, "%.3g", ImGuiSliderFlags_Logarithmic);
  ImGui::SameLine();
  // The spectrum of the head's A instead of Ahat: RFA's Ahat E, AFA's channel-mean decayed weight;
  // an RT-RFA head's A is Ahat (docs/DIAGNOSTICS.md §2).
  ImGui::Checkbox(variant == rfa::AttentionVariant::rfa ? "A=Ahat E" : "A", &decayed_);
  ImGui::SameLine();
  ImGui::Checkbox("sweep 0.1..10", &sweep_curve_);
  ImGui::RadioButton("view", &mode_, 0);
  ImGui::SameLine();
  ImGui::RadioButton("last", &mode_, 1);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(60);
  ImGui::SliderInt("rows", &window_, 8, 1024);
  ImGui::SameLine();
  ImGui::PushItemWidth(40);
  ImGui::SliderInt("every", &every_, 1, 60);
  ImGui::PopItemWidth();
  ImGui::PopItemWidth();
  alpha_ = std::clamp(alpha_, 0.01f, 100.0f);

  const int filled = s.position(), oldest = s.oldest_position();
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
    // The last rows whose keys are all still cached: with a sliding window, a row's band reaches
    // W - 1 positions back, so the rows start W - 1 after the oldest cached position.
    const int band = s.window() > 0 ? s.window() - 1 : 0;
    k.r0 = std::max({0, filled - window_, oldest > 0 ? oldest + band : 0});
    k.c0 = std::max({0, filled - window_, oldest});
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
    end();
    return;
  }
  if (!error_.empty()) ImGui::TextWrapped("%s", error_.c_str());
  if (!have_) {
    end();
    return;
  }
  const rfa::HeadDiagnostics& d = last_;
  const rfa::MomentSummary& m = d.summary;
  ImGui::TextWrapped("L%d H%d, rows %d..%d x keys %d..%d, d = %d", d.layer, d.head, d.r0, d.r1 - 1, d.c0, d.c1 - 1, d.d);
  ImGui::TextWrapped("H %.3f  max p %.3f  erank %.2f", d.entropy_mean, d.max_weight_mean, d.erank);
  ImGui::TextWrapped("rank %d  ker %d  dim_eff U %.2f  N %.2f", d.rank, d.nullity, m.dim_eff_u, m.dim_eff_n);
  double lo = DBL_MAX, hi = -DBL_MAX, slo = DBL_MAX, shi = -DBL_MAX;
  for (const auto& q : d.rows) {
    lo = std::min(lo, q.tau), hi = std::max(hi, q.tau);
    slo = std::min(slo, q.mean_s), shi = std::max(shi, q.mean_s);
  }
  // A head that scores unit vectors (RT-RFA, AFA's unitary switch) has one tau for every row: the
  // radius its logit never sees (docs/DIAGNOSTICS.md §2). The plot then shows where the rows look
  // instead, E_p[s], the mean projection of their attended keys on their tilt.
  const bool one_tau = hi - lo <= 1e-6 * std::max(1.0, std::fabs(hi));
  if (one_tau) ImGui::TextWrapped("tau %.3f for every row: unit vectors (the plot: E_p[s])", hi);
  else ImGui::TextWrapped("tau %.3f +- %.3f (chi %.3f)", m.tau_mean, m.tau_std, m.tau_chi_mean);
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("GPU %.2f ms; host: SVD %.2f ms, eigen %.2f ms", d.timings.gpu_ms, d.timings.svd_ms,
                     d.timings.eigen_ms);
  ImGui::PopStyleColor();

  // Six plots, each under its own label (never over its bars), sharing the room left: in two
  // columns, or in three with shorter labels when two rows of plots would be too flat.
  const int bins = 24;
  std::vector<float> hist(bins, 0.0f);
  const double hlo = one_tau ? slo : lo, hhi = one_tau ? shi : hi;
  for (const auto& q : d.rows) {
    const double v = one_tau ? q.mean_s : q.tau;
    const int b = hhi > hlo ? std::min(bins - 1, (int)((v - hlo) / (hhi - hlo) * bins)) : 0;
    hist[(size_t)b] += 1.0f;
  }
  const float sp = ImGui::GetStyle().ItemSpacing.y, line = ImGui::GetTextLineHeightWithSpacing();
  const float avail_y = ImGui::GetContentRegionAvail().y;
  const int cols = (avail_y - 3 * (line + sp)) / 3 - sp < 24 ? 3 : 2, rows = 6 / cols;
  const bool brief = cols == 3;
  const float cw = std::max(40.0f, (ImGui::GetContentRegionAvail().x - (cols - 1) * ImGui::GetStyle().ItemSpacing.x) / cols);
  const float ph = std::max(16.0f, (avail_y - rows * (line + sp)) / rows - sp);
  char label[64];
  int at = 0;
  auto cell = [&](const char* text, auto plot) {
    if (at++ % cols) ImGui::SameLine();
    ImGui::BeginGroup();
    ImGui::TextUnformatted(text);
    plot();
    ImGui::EndGroup();
  };
  std::snprintf(label, sizeof label, one_tau ? (brief ? "E[s] %.2f..%.2f" : "E_p[s] %.2f..%.2f") : "tau %.2f..%.2f",
                hlo, hhi);
  cell(label, [&] { ImGui::PlotHistogram("##tau", hist.data(), bins, 0, nullptr, 0.0f, FLT_MAX, {cw, ph}); });
  const auto tilt = to_float(m.tilt_spectrum);
  cell(brief ? "tilts C_u" : "tilt spectrum C_u",
       [&] { ImGui::PlotHistogram("##tilt", tilt.data(), (int)tilt.size(), 0, nullptr, 0.0f, FLT_MAX, {cw, ph}); });
  const auto sv = to_float(d.singular_values);
  cell(sv.empty() ? "(no spectrum)" : brief ? "sing. val. P" : "singular values of P",
       [&] { ImGui::PlotLines("##sv", sv.data(), (int)sv.size(), 0, nullptr, 0.0f, FLT_MAX, {cw, ph}); });
  std::vector<float> er;
  for (auto& [p, e] : erank_history_) er.push_back((float)e);
  std::snprintf(label, sizeof label, brief ? "erank, time" : "erank over time (%zu)", er.size());
  cell(label, [&] { ImGui::PlotLines("##erank", er.data(), (int)er.size(), 0, nullptr, 0.0f, FLT_MAX, {cw, ph}); });
  const auto normal = to_float(m.normal_spectrum);
  cell(brief ? "normals C_n" : "normal spectrum C_n", [&] {
    ImGui::PlotHistogram("##normal", normal.data(), (int)normal.size(), 0, nullptr, 0.0f, FLT_MAX, {cw, ph});
  });
  std::vector<float> se;
  for (const auto& p : d.sweep) se.push_back((float)p.erank);
  cell(se.empty() ? (brief ? "(no sweep)" : "(sweep off)") : brief ? "erank, alpha" : "erank, alpha 0.1..10",
       [&] { ImGui::PlotLines("##sweep", se.data(), (int)se.size(), 0, nullptr, 0.0f, FLT_MAX, {cw, ph}); });
  end();
}

std::string DiagnosticsPanel::json() const {
  std::ostringstream o;
  std::string err;
  for (char c : error_) err += c == '"' || c == '\\' ? std::string("\\") + c : c < 0x20 ? std::string(" ") : std::string(1, c);
  o << "{\"shown\": " << (have_ ? "true" : "false") << ", \"error\": \"" << err << "\", \"screen\": [" << screen_[0] << ", " << screen_[1] << ", "
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
