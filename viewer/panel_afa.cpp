#include "panel_afa.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "imgui.h"
#include "rfa/heatmap.hpp"
#include "rfa/inspect.hpp"

namespace viewer {

namespace {

constexpr double kTrueRe = -0.1, kTrueIm = 1.0;  // the spiral's eigenvalues -0.1 +- i (models/train/spiral.py)

std::string fmt(const char* f, double v) {
  char b[48];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string jnum(double v) { return std::isfinite(v) ? fmt("%.9g", v) : "null"; }

ImU32 col(float r, float g, float b, float a = 1.0f) { return ImGui::ColorConvertFloat4ToU32({r, g, b, a}); }

// A channel x lag map of `v` ([channels][lags]) into the rectangle (p0, size), scaled by its largest
// finite value (viridis, rfa/heatmap.hpp); a label over its left edge.
void channel_map(ImDrawList* dl, ImVec2 p0, ImVec2 size, const std::vector<double>& v, int channels, int lags,
                 const char* label) {
  double hi = 0;
  for (double x : v)
    if (std::isfinite(x)) hi = std::max(hi, x);
  const float cw = size.x / std::max(lags, 1), ch = size.y / std::max(channels, 1);
  for (int k = 0; k < channels; ++k)
    for (int l = 0; l < lags; ++l) {
      const double x = v[(size_t)k * lags + l];
      const float t = hi > 0 && std::isfinite(x) ? (float)std::clamp(x / hi, 0.0, 1.0) : 1.0f;
      const ImVec2 a{p0.x + l * cw, p0.y + k * ch};
      dl->AddRectFilled(a, {a.x + cw + 0.5f, a.y + ch + 0.5f}, rfa::viridis_rgba(t));
    }
  dl->AddRect(p0, {p0.x + size.x, p0.y + size.y}, col(0.5f, 0.5f, 0.5f));
  dl->AddText({p0.x + 2, p0.y}, col(1, 1, 1), label);
}

// Lines of `series` (each [n]) into (p0, size), one colour each, y from 0 (or the lowest value) to the
// highest; a label at the top left.
void line_plot(ImDrawList* dl, ImVec2 p0, ImVec2 size, const std::vector<std::vector<float>>& series,
               const char* label) {
  float lo = 0, hi = 1e-12f;
  for (const auto& s : series)
    for (float x : s) lo = std::min(lo, x), hi = std::max(hi, x);
  dl->AddRectFilled(p0, {p0.x + size.x, p0.y + size.y}, col(0.1f, 0.1f, 0.12f));
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const float hue = series.size() > 1 ? (float)k / (float)(series.size() - 1) : 0.0f;
    const ImU32 c = rfa::viridis_rgba(0.25f + 0.75f * hue);
    for (size_t x = 1; x < s.size(); ++x) {
      auto pt = [&](size_t i) {
        return ImVec2{p0.x + size.x * (float)i / (float)(s.size() - 1), p0.y + size.y * (1 - (s[i] - lo) / (hi - lo))};
      };
      dl->AddLine(pt(x - 1), pt(x), c, 1.5f);
    }
  }
  dl->AddRect(p0, {p0.x + size.x, p0.y + size.y}, col(0.5f, 0.5f, 0.5f));
  dl->AddText({p0.x + 2, p0.y}, col(1, 1, 1), label);
}

}  // namespace

void AfaPanel::draw(const rfa::Model& m, rfa::Session& s, int layer, int head, double true_scale,
                    const PanelRect& where, bool force, PanelAudit& audit) {
  const rfa::AttentionParams& p = rfa::layer_params(m, layer);
  json_ = "null";
  if (p.variant != rfa::AttentionVariant::afa && p.variant != rfa::AttentionVariant::afa_full) return;
  place_next(where, force);
  ImGui::Begin("AFA filter");
  const rfa::AfaLayerParams& f = p.afa;
  const int D = p.dim, n = f.irls_iterations;
  if (basis_model_ != &m || basis_layer_ != layer) {  // the layer's weights do not change: once per layer
    auto b = rfa::basis_consistency(m, layer);
    basis_ = b ? *b : NAN;
    basis_error_ = b ? "" : b.status().message();
    basis_model_ = &m;
    basis_layer_ = layer;
  }
  double glo = 1, ghi = 1;
  if (f.mix) {
    glo = INFINITY, ghi = -INFINITY;
    for (int k = 0; k < D; ++k) {
      const double g = 1.0 / (1.0 + std::exp(-f.delta[(size_t)head * D + k]));
      glo = std::min(glo, g), ghi = std::max(ghi, g);
    }
  }
  ImGui::TextWrapped("h%d: %d channels%s%s; ||W_V W_P - I|| = %s; mix gate %s", head, D,
                     p.variant == rfa::AttentionVariant::afa_full ? " (full form)" : "",
                     n > 1 ? (", " + std::to_string(n) + " tied iterations").c_str() : "",
                     basis_error_.empty() ? fmt("%.3g", basis_).c_str() : "-",
                     f.mix ? (fmt("%.2f", glo) + ".." + fmt("%.2f", ghi)).c_str() : "off (1)");

  // The stream's lags (as the kernels panel: the newest row's), at most 48 columns.
  const auto ts = rfa::Inspector(s).timestamps(0);
  const int L = std::clamp((int)ts.size(), 2, 48);
  std::vector<double> lags((size_t)L);
  for (int l = 0; l < L; ++l) lags[(size_t)l] = (int)ts.size() > l ? ts.back() - ts[ts.size() - 1 - (size_t)l] : l;

  // Left: the eigenvalue plot, a square of the panel's height; right: the channel maps over the
  // iterations' plots (without iterations, the maps take the height).
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float text_h = n > 1 ? ImGui::GetTextLineHeightWithSpacing() : 0.0f;  // the mean-change line
  const float body_h = std::max(40.0f, avail.y - text_h - 2);
  const float top_h = n > 1 ? std::floor(body_h * 0.55f) : body_h;
  const ImVec2 c0 = ImGui::GetCursorScreenPos();

  // The eigenvalue plot: x = log10 mu_k (mu = 0 at the left edge), y = omega_k; the layer's other
  // heads faint, the selected head bright, the truth as red crosses.
  const float side = std::max(40.0f, std::min(body_h, 0.40f * avail.x));
  double wmax = 0.2;
  for (double w : p.omega) wmax = std::max(wmax, std::fabs(w));
  if (true_scale > 0) wmax = std::max(wmax, 1.2 * kTrueIm * true_scale);
  wmax *= 1.1;
  const double xlo = -4.5, xhi = 1.0;
  auto to_screen = [&](double mu, double w) {
    const double x = mu > 0 ? std::clamp(std::log10(mu), xlo, xhi) : xlo;
    return ImVec2{c0.x + (float)((x - xlo) / (xhi - xlo)) * side, c0.y + (float)(0.5 - 0.5 * w / wmax) * side};
  };
  dl->AddRectFilled(c0, {c0.x + side, c0.y + side}, col(0.1f, 0.1f, 0.12f));
  dl->AddLine(to_screen(0, 0), {c0.x + side, to_screen(0, 0).y}, col(0.4f, 0.4f, 0.4f));
  std::vector<std::pair<double, double>> eig;
  for (int h = 0; h < p.heads; ++h)
    for (int k = 0; k < D; ++k) {
      const size_t i = (size_t)h * D + k;
      const double mu = f.unitary ? 0.0 : f.mu[i];
      const bool sel = h == head;
      dl->AddCircleFilled(to_screen(mu, p.omega[i]), sel ? 3.0f : 2.0f, sel ? col(0.4f, 0.85f, 1.0f) : col(0.5f, 0.5f, 0.55f, 0.6f));
      if (sel) eig.emplace_back(-mu, p.omega[i]);
    }
  std::vector<std::pair<double, double>> truth;
  if (true_scale > 0)
    for (double sgn : {1.0, -1.0}) {
      truth.emplace_back(kTrueRe * true_scale, sgn * kTrueIm * true_scale);
      const ImVec2 t = to_screen(-kTrueRe * true_scale, sgn * kTrueIm * true_scale);
      dl->AddLine({t.x - 4, t.y - 4}, {t.x + 4, t.y + 4}, col(1, 0.3f, 0.3f), 2);
      dl->AddLine({t.x - 4, t.y + 4}, {t.x + 4, t.y - 4}, col(1, 0.3f, 0.3f), 2);
    }
  dl->AddRect(c0, {c0.x + side, c0.y + side}, col(0.5f, 0.5f, 0.5f));
  dl->AddText({c0.x + 2, c0.y}, col(1, 1, 1), "log10 mu_k vs omega_k");
  if (true_scale > 0) dl->AddText({c0.x + 2, c0.y + side - 14}, col(1, 0.4f, 0.4f), "x: the true system");

  // The per-channel kernels of the selected head: channel x lag maps of e_k, cov_k, P_k.
  auto cc = rfa::channel_curves(m, layer, head, lags);
  const float mx = c0.x + side + 8, mw = std::max(40.0f, c0.x + avail.x - mx);
  const float mh = std::max(12.0f, (top_h - 8) / 3.0f - 2);
  if (cc) {
    channel_map(dl, {mx, c0.y}, {mw, mh}, cc->decay, cc->channels, L, "e_k(lag)");
    channel_map(dl, {mx, c0.y + mh + 3}, {mw, mh}, cc->cov, cc->channels, L, "cov_k(lag)");
    channel_map(dl, {mx, c0.y + 2 * (mh + 3)}, {mw, mh}, cc->precision, cc->channels, L, "P_k(lag)");
  }
  // Tied iterations: the change of each pass, and channel 0's trajectory per iteration, over the newest
  // positions still cached.
  std::vector<double> mean_change;
  if (n > 1) {
    const int hi = s.position(), lo = std::max(s.oldest_position(), hi - 96);
    auto it = hi > lo ? rfa::Inspector(s).iterates(layer, head, 0, lo, hi) : rfa::Result<std::vector<float>>(std::vector<float>{});
    const int rows = hi - lo;
    if (it && rows > 1 && it->size() == (size_t)(n + 1) * rows * 2 * D) {
      auto z = [&](int k, int r, int c, int part) { return (*it)[(((size_t)k * rows + r) * D + c) * 2 + part]; };
      std::vector<std::vector<float>> change((size_t)n), traj((size_t)n + 1);
      for (int k = 0; k < n; ++k) {
        double sum = 0;
        for (int r = 0; r < rows; ++r) {
          double d2 = 0;
          for (int c = 0; c < D; ++c)
            for (int part = 0; part < 2; ++part) d2 += std::pow(z(k + 1, r, c, part) - z(k, r, c, part), 2);
          change[(size_t)k].push_back((float)std::sqrt(d2));
          sum += std::sqrt(d2);
        }
        mean_change.push_back(sum / rows);
      }
      for (int k = 0; k <= n; ++k)
        for (int r = 0; r < rows; ++r) traj[(size_t)k].push_back(z(k, r, 0, 0));
      const ImVec2 b0 = {mx, c0.y + top_h + 4};
      const float bh = std::max(16.0f, body_h - top_h - 4), bw = (mw - 6) / 2;
      line_plot(dl, b0, {bw, bh}, change, "|z_k+1 - z_k|");
      line_plot(dl, {b0.x + bw + 6, b0.y}, {bw, bh}, traj, "Re z_k, ch 0");
    }
  }
  ImGui::Dummy({avail.x, body_h});
  if (n > 1) {
    std::string line = "mean change per pass:";
    for (double c : mean_change) line += " " + fmt("%.3g", c);
    if (mean_change.empty()) line = "iterates: none yet";
    ImGui::TextUnformatted(line.c_str());
  }
  audit.panel();
  ImGui::End();

  std::ostringstream o;
  o << "{\"layer\": " << layer << ", \"head\": " << head << ", \"channels\": " << D << ", \"form\": \""
    << (p.variant == rfa::AttentionVariant::afa_full ? "full" : "memory-optimised") << "\", \"iterations\": " << n
    << ", \"basis_consistency\": " << jnum(basis_) << ", \"gate\": ";
  if (f.mix) o << "[" << jnum(glo) << ", " << jnum(ghi) << "]";
  else o << "null";
  auto pairs = [&](const std::vector<std::pair<double, double>>& v) {
    o << "[";
    for (size_t k = 0; k < v.size(); ++k) o << (k ? ", " : "") << "[" << jnum(v[k].first) << ", " << jnum(v[k].second) << "]";
    o << "]";
  };
  o << ", \"eigenvalues\": ";
  pairs(eig);
  o << ", \"true_eigenvalues\": ";
  pairs(truth);
  o << ", \"kernel_lags\": " << L << ", \"kernels\": " << (cc ? "true" : "false") << ", \"mean_change\": [";
  for (size_t k = 0; k < mean_change.size(); ++k) o << (k ? ", " : "") << jnum(mean_change[k]);
  o << "]}";
  json_ = o.str();
}

}  // namespace viewer
