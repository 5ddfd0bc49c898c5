// The viewer's panels (Dear ImGui): controls, the attention map with hover readout and the head
// thumbnails, kernels, the regimes table, the selected row, the trajectory and the timings.
#include <algorithm>
#include <cfloat>
#include <cstdarg>
#include <cmath>
#include <cstdio>

#include "app.hpp"
#include "imgui.h"
#include "rfa/tokenizer.hpp"
#include "token_text.hpp"

namespace viewer {
namespace {

// Dear ImGui 1.86's plots take no negative (fill the rest) sizes: a positive width, minus room for a label.
float width(float label) { return std::max(40.0f, ImGui::GetContentRegionAvail().x - label); }

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

ImVec4 regime_color(rfa::Regime r) {
  switch (r) {
    case rfa::Regime::diffusive: return {0.95f, 0.55f, 0.35f, 1};   // forgets
    case rfa::Regime::integrative: return {0.40f, 0.80f, 0.95f, 1}; // integrates ("opening gate")
    default: return {0.75f, 0.75f, 0.40f, 1};                       // Brownian
  }
}

}  // namespace

// The "regime" column (coloured by regime); after it, the head's mechanism and its own terms.
constexpr size_t kRegimeColumn = 13;

std::vector<std::string> App::regime_columns() {
  return {"layer", "head", "mu", "omega band", "stat. var", "eta2", "gamma2", "nu/d", "kappa", "tau", "lag shift",
          "alpha", "beta", "regime", "mechanism", "mechanism terms"};
}

std::vector<std::string> App::regime_cells(const rfa::HeadSummary& h, int D) {
  return {std::to_string(h.layer), std::to_string(h.head), num(h.params.mu),
          num(h.omega_min) + ".." + num(h.omega_max), num(h.regime.stationary_variance), num(h.params.eta2),
          num(h.params.gamma2), num(h.params.nu / std::max(D, 1)), num(h.params.kappa), num(h.params.tau),
          num(h.params.lag_shift), num(h.regime.alpha), num(h.regime.beta), rfa::regime_name(h.regime.regime),
          h.variant == rfa::AttentionVariant::afa ? "AFA" : h.variant == rfa::AttentionVariant::rt ? "RT-RFA" : "RFA",
          h.terms};
}

struct Panels {
  App& a;
  ImageQuads& q;

  // Labels and pieces of text of the streamed tokens, rebuilt from where the stream changed.
  void sync_labels() {
    const size_t n = a.positions_.size();
    size_t keep = 0;
    while (keep < std::min(n, a.label_ids_.size()) && a.label_ids_[keep] == a.positions_[keep].token) ++keep;
    a.label_ids_.resize(keep);
    a.labels_.resize(keep);
    a.pieces_.resize(keep);
    for (size_t k = keep; k < n; ++k) {
      const int id = a.positions_[k].token;
      a.label_ids_.push_back(id);
      a.labels_.push_back(token_label(a.tokenizer_.get(), id));
      a.pieces_.push_back(a.tokenizer_ ? a.tokenizer_->decode({id}) : std::to_string(id) + " ");
    }
  }

  // One line of the hover readout, also kept for --dump-json.
  void say(bool disabled, const char* fmt, ...) IM_FMTARGS(3) {
    char b[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    a.readout_.push_back(b);
    if (disabled) ImGui::TextDisabled("%s", b);
    else ImGui::TextUnformatted(b);
  }

  void controls() {
    ImGui::SetNextWindowPos({8, 8}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({380, 300}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Model and stream");
    ImGui::InputText("model dir", a.model_path_, sizeof a.model_path_);
    ImGui::SameLine();
    if (ImGui::Button("Open")) {
      std::string e = a.open_model(a.model_path_);
      a.status_ = e.empty() ? "opened " + std::string(a.model_path_) : e;
    }
    if (!a.model_) {
      ImGui::TextWrapped("No model: %s", a.error_.c_str());
      ImGui::End();
      return;
    }
    ImGui::Text("%s: %s, %d layers x %d heads, D = %d", a.info_.name.c_str(), a.info_.architecture.c_str(),
                a.info_.layers, a.info_.heads, a.info_.head_dim);
    if (a.session_->window() > 0)
      ImGui::Text("position %d (window %d: every position sees its last %d)", a.position(), a.session_->window(),
                  a.session_->window());
    else
      ImGui::Text("position %d / %d", a.position(), a.session_->max_context());
    if (ImGui::Button(a.playing_ ? "Pause" : "Play")) a.playing_ = !a.playing_;
    ImGui::SameLine();
    if (ImGui::Button("Step")) a.step(1);
    ImGui::SameLine();
    if (ImGui::Button("Reset")) a.reset();
    float rate = (float)a.opt_.steps_per_frame;
    if (ImGui::SliderFloat("steps / frame", &rate, 0.0f, 16.0f, "%.2f")) a.opt_.steps_per_frame = rate;
    if (a.is_lm()) {
      ImGui::InputTextMultiline("prompt", a.prompt_, sizeof a.prompt_, {0, 50});
      if (ImGui::Button("Feed prompt (reset)")) a.reset();
      ImGui::SameLine();
      ImGui::Checkbox("generate", &a.opt_.generate);
      ImGui::SliderFloat("temperature", &a.temperature_, 0.0f, 2.0f);
      // The text so far; the hovered query (or the selected row) and key are highlighted; a click
      // on a token selects its row.
      sync_labels();
      ImGui::BeginChild("text", {0, 0}, true);
      const int clicked = draw_token_text(a.pieces_, a.hover_i_ >= 0 ? a.hover_i_ : a.selected_row_, a.hover_j_);
      if (clicked >= 0) a.selected_row_ = clicked;
      ImGui::EndChild();
    } else if (a.spiral_) {
      float noise = (float)a.spiral_->sigma_m, interval = (float)a.spiral_->interval;
      if (ImGui::SliderFloat("noise sigma_m", &noise, 0.0f, 3.0f)) a.spiral_->sigma_m = noise;
      if (ImGui::SliderFloat("sample interval", &interval, 0.01f, 0.5f)) a.spiral_->interval = interval;
      ImGui::Checkbox("irregular timestamps", &a.spiral_->irregular);
      ImGui::TextDisabled("(changes apply to new samples; Reset restarts the trajectory)");
    } else if (a.source_) {
      ImGui::Text("file: %s", a.source_->describe().c_str());
    }
    if (!a.status_.empty()) ImGui::TextWrapped("%s", a.status_.c_str());
    ImGui::End();
  }

  void map_panel() {
    ImGui::SetNextWindowPos({396, 8}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({640, 690}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Attention map");
    int layer = a.layer_, head = a.head_;
    ImGui::SetNextItemWidth(90);
    ImGui::InputInt("layer", &layer);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(90);
    ImGui::InputInt("head", &head);
    ImGui::SameLine();
    bool changed = ImGui::Checkbox("A = Ahat E", &a.opt_.decayed);
    ImGui::SameLine();
    changed |= ImGui::Checkbox("log", &a.opt_.log_scale);
    float vmax = (float)a.opt_.vmax, dec = (float)a.opt_.decades;
    ImGui::SetNextItemWidth(150);
    if (ImGui::SliderFloat("vmax", &vmax, 1e-3f, 1.0f, "%.3g", ImGuiSliderFlags_Logarithmic)) a.opt_.vmax = vmax, changed = true;
    ImGui::SameLine();
    ImGui::SetNextItemWidth(120);
    if (ImGui::SliderFloat("decades", &dec, 1.0f, 8.0f, "%.1f")) a.opt_.decades = dec, changed = true;
    ImGui::SameLine();
    if (ImGui::Button("Fit")) a.zoom_ = 1, a.center_[0] = a.center_[1] = 0.5f, changed = true;
    if (layer != a.layer_ || head != a.head_) {
      a.layer_ = layer;
      a.head_ = head;
      a.clamp_selection();
      changed = true;
    }
    // Text models keep room left of and above the map for token labels (token_text.hpp).
    const bool labels = a.is_lm();
    const float ml = labels ? kRowLabelWidth : 0.0f, mt = labels ? kColLabelHeight : 0.0f;
    ImVec2 avail = ImGui::GetContentRegionAvail();
    const float side = std::max(64.0f, std::min(avail.x - ml, avail.y - 24 - mt));
    const ImVec2 c = ImGui::GetCursorScreenPos();
    ImVec2 p0 = {c.x + ml, c.y + mt}, p1 = {p0.x + side, p0.y + side};
    q.image(a.map_->view(), p0, p1);
    a.map_screen_[0] = p0.x, a.map_screen_[1] = p0.y, a.map_screen_[2] = p1.x, a.map_screen_[3] = p1.y;
    ImGui::SetCursorScreenPos(p0);
    ImGui::InvisibleButton("map", {side, side});
    const auto& r = a.req_;
    if (labels) {
      sync_labels();
      a.axis_ = draw_axis_labels(ImGui::GetWindowDrawList(), p0, side, r, a.position(), a.labels_);
    }
    a.hover_i_ = a.hover_j_ = -1;
    a.readout_.clear();
    if (ImGui::IsItemHovered()) {
      ImGuiIO& io = ImGui::GetIO();
      const float fx = (io.MousePos.x - p0.x) / side, fy = (io.MousePos.y - p0.y) / side;
      if (io.MouseWheel != 0) {  // zoom about the cursor
        const float cx = a.center_[0], cy = a.center_[1], z = a.zoom_;
        a.zoom_ = std::clamp(a.zoom_ * (io.MouseWheel > 0 ? 1.25f : 0.8f), 1.0f, 64.0f);
        a.center_[0] = cx + (fx - 0.5f) / z - (fx - 0.5f) / a.zoom_;
        a.center_[1] = cy + (fy - 0.5f) / z - (fy - 0.5f) / a.zoom_;
        changed = true;
      }
      const int i = r.r0 + (int)(fy * (r.r1 - r.r0)), j = r.c0 + (int)(fx * (r.c1 - r.c0));
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) a.selected_row_ = i < a.position() ? i : -1;
      a.hover_i_ = i, a.hover_j_ = j;
      hover(i, j);
    }
    if (a.opt_.hover_i >= 0 && r.r1 > r.r0 && r.c1 > r.c0) {  // --hover: the mouse rests on that cell
      ImGui::GetIO().MousePos = {p0.x + (a.opt_.hover_j - r.c0 + 0.5f) * side / (r.c1 - r.c0),
                                 p0.y + (a.opt_.hover_i - r.r0 + 0.5f) * side / (r.r1 - r.r0)};
    }
    if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
      ImVec2 d = ImGui::GetIO().MouseDelta;
      a.center_[0] -= d.x / side / a.zoom_;
      a.center_[1] -= d.y / side / a.zoom_;
      changed = true;
    }
    a.center_[0] = std::clamp(a.center_[0], 0.0f, 1.0f);
    a.center_[1] = std::clamp(a.center_[1], 0.0f, 1.0f);
    ImGui::Text("rows %d..%d, keys %d..%d (%s, %s scale); wheel: zoom, drag: pan, click: select row", r.r0, r.r1 - 1,
                r.c0, r.c1 - 1, r.decayed ? "A" : "Ahat", r.log_scale ? "log" : "linear");
    ImGui::End();
    if (changed) a.maps_dirty_ = true;
  }

  // Hover readout: i, j, inputs, lag, Ahat, A, E, P and the logit's terms (small probes).
  void hover(int i, int j) {
    const int n = a.position();
    ImGui::BeginTooltip();
    say(false, "i = %d (query) %s", i, a.describe_input(i).c_str());
    say(false, "j = %d (key)   %s", j, a.describe_input(j).c_str());
    if (i < n && j < n) {
      // The kernel's own terms for this pair, from the cached rotated Q/K and the row statistics.
      auto pr = a.session_->pair(a.layer_, a.head_, 0, i, j);
      if (!pr) {
        say(true, "%s", pr.status().message().c_str());
      } else if (pr->masked) {
        say(false, "lag = %.4g: masked (future key)", pr->lag);
      } else {
        say(false, "lag = %.4g   dt = lag + shift = %.4g", pr->lag, pr->dt);
        say(false, "Ahat = %.5g   A = Ahat E = %.5g", pr->ahat, pr->a);
        say(false, "E = %.4g   Vcov = %.4g   P = %.4g   B = %.4g", pr->decay, pr->vcov, pr->precision, pr->bias);
        say(false, "|q|^2 = %.4g   |k|^2 = %.4g   cross = %.4g   R2 = %.4g", pr->q_norm2, pr->k_norm2, pr->cross,
            pr->residual2);
        say(false, "L = B - robust term = %.4g;  logit = tau L = %.4g", pr->L, pr->logit);
      }
    } else {
      say(true, "%s", j > i ? "masked (future key)" : "not streamed yet");
    }
    ImGui::EndTooltip();
  }

  void thumbnails() {
    ImGui::SetNextWindowPos({1044, 8}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({548, 240}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Heads of the layer");
    const float s = 96;
    for (int h = 0; h < (int)a.thumbs_.size(); ++h) {
      if (h % 5) ImGui::SameLine();
      ImGui::BeginGroup();
      ImVec2 p0 = ImGui::GetCursorScreenPos();
      q.image(a.thumbs_[(size_t)h]->view(), p0, {p0.x + s, p0.y + s});
      ImGui::PushID(h);
      if (ImGui::InvisibleButton("thumb", {s, s})) a.head_ = h, a.maps_dirty_ = true;
      ImGui::PopID();
      const auto& hs = a.heads_[(size_t)(a.layer_ * a.info_.heads + h)];
      ImGui::TextColored(regime_color(hs.regime.regime), "%sh%d %.4s", h == a.head_ ? ">" : "", h,
                         rfa::regime_name(hs.regime.regime));
      ImGui::EndGroup();
    }
    ImGui::End();
  }

  void kernels() {
    ImGui::SetNextWindowPos({1044, 256}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({548, 300}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Kernels of the layer (current lags)");
    const int n = std::max(a.position(), 2);
    std::vector<double> lags((size_t)n);
    auto ts = a.session_->timestamps(0);
    for (int k = 0; k < n; ++k) lags[(size_t)k] = (int)ts.size() >= n ? ts.back() - ts[(size_t)(n - 1 - k)] : k;
    ImGui::TextDisabled("lag 0 .. %.4g; per head: E, Vcov, P, B", lags.back());
    if (ImGui::BeginTable("kern", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY)) {
      for (const char* c : {"head", "E(lag)", "Vcov(lag)", "P(lag)", "B(lag)"}) ImGui::TableSetupColumn(c);
      ImGui::TableHeadersRow();
      for (int h = 0; h < a.info_.heads; ++h) {
        auto cv = rfa::head_curves(*a.model_, a.layer_, h, lags);  // host, double: no GPU round trip
        if (!cv) continue;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%d", h);
        for (auto* v : {&cv->decay, &cv->vcov, &cv->precision, &cv->bias}) {
          std::vector<float> f(v->begin(), v->end());
          ImGui::TableNextColumn();
          ImGui::PushID(h * 8 + (int)(v - &cv->decay));
          ImGui::PlotLines("", f.data(), (int)f.size(), 0, nullptr, FLT_MAX, FLT_MAX, {width(0), 36});
          ImGui::PopID();
        }
      }
      ImGui::EndTable();
    }
    ImGui::End();
  }

  void regimes() {
    ImGui::SetNextWindowPos({8, 704}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({1028, 288}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Regimes (docs/math.md §5)");
    auto cols = App::regime_columns();
    const ImGuiTableFlags fl = ImGuiTableFlags_Sortable | ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg |
                               ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
    if (ImGui::BeginTable("regimes", (int)cols.size(), fl)) {
      for (auto& c : cols) ImGui::TableSetupColumn(c.c_str());
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableHeadersRow();
      std::vector<size_t> order(a.heads_.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      if (ImGuiTableSortSpecs* ss = ImGui::TableGetSortSpecs(); ss && ss->SpecsCount > 0) {
        const int col = ss->Specs[0].ColumnIndex;
        const bool asc = ss->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
        auto key = [&](const rfa::HeadSummary& h) -> double {
          const double v[] = {(double)h.layer, (double)h.head, h.params.mu, h.omega_max, h.regime.stationary_variance,
                              h.params.eta2, h.params.gamma2, h.params.nu, h.params.kappa, h.params.tau,
                              h.params.lag_shift, h.regime.alpha, h.regime.beta, (double)h.regime.regime,
                              (double)h.variant, (double)h.variant};
          return v[std::clamp(col, 0, 15)];
        };
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
          double kx = key(a.heads_[x]), ky = key(a.heads_[y]);
          return asc ? kx < ky : kx > ky;
        });
      }
      for (size_t k : order) {
        const auto& h = a.heads_[k];
        auto cells = App::regime_cells(h, a.info_.head_dim);
        ImGui::TableNextRow();
        for (size_t c = 0; c < cells.size(); ++c) {
          ImGui::TableNextColumn();
          if (c == kRegimeColumn) ImGui::TextColored(regime_color(h.regime.regime), "%s", cells[c].c_str());
          else if (c == 0 && h.layer == a.layer_ && h.head == a.head_) ImGui::Text("> %s", cells[c].c_str());
          else ImGui::TextUnformatted(cells[c].c_str());
        }
      }
      ImGui::EndTable();
    }
    ImGui::End();
  }

  void row_panel() {
    ImGui::SetNextWindowPos({1044, 564}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({548, 200}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Selected query row");
    // Computed in the last finished frame's submission (App::update watches the row): no wait here.
    const rfa::WatchedRow& w = a.session_->watched_row();
    if (!w.valid) {
      ImGui::TextDisabled("no rows yet");
      ImGui::End();
      return;
    }
    ImGui::Text("row i = %d%s (click the map to select; newest otherwise)", w.row, a.selected_row_ < 0 ? " (newest)" : "");
    std::vector<float> by_lag(w.weights.rbegin(), w.weights.rend());  // index = lag in positions
    ImGui::PlotLines("weight vs lag", by_lag.data(), (int)by_lag.size(), 0, w.decayed ? "A" : "Ahat", 0.0f, FLT_MAX,
                     {width(110), 80});
    const rfa::RowDiagnostics& r = w.diagnostics;
    ImGui::Text("entropy %.4g   expected lag %.4g   max weight %.4g", r.entropy, r.expected_lag, r.max_weight);
    ImGui::Text("mass beyond lag 1: %.3g  4: %.3g  16: %.3g  64: %.3g", r.mass_beyond[0], r.mass_beyond[1],
                r.mass_beyond[2], r.mass_beyond[3]);
    ImGui::End();
  }

  void trajectory() {
    if (a.is_lm()) return;
    ImGui::SetNextWindowPos({1044, 772}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({548, 220}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Signal: trajectory and error");
    const size_t n = a.positions_.size(), from = n > 200 ? n - 200 : 0;
    std::vector<float> truth, meas, pred, kf;
    double se_model = 0, se_kf = 0, se_raw = 0;
    int cnt = 0;
    for (size_t k = from; k < n; ++k) {
      const Position& p = a.positions_[k];
      meas.push_back(p.input.empty() ? 0 : p.input[0]);
      truth.push_back((float)p.truth[0]);
      // The prediction made one step earlier, for this position.
      pred.push_back(k > 0 && !a.positions_[k - 1].prediction.empty() ? a.positions_[k - 1].prediction[0] : 0);
      kf.push_back(k > 0 ? (float)a.positions_[k - 1].kalman_next[0] : 0);
    }
    for (size_t k = 1; k < n; ++k) {
      const Position &p = a.positions_[k], &q0 = a.positions_[k - 1];
      if (!p.has_truth || q0.prediction.size() < 2) continue;
      for (int c = 0; c < 2; ++c) {
        se_model += std::pow(q0.prediction[(size_t)c] - p.truth[c], 2);
        se_kf += std::pow(q0.kalman_next[c] - p.truth[c], 2);
        se_raw += std::pow(p.input[(size_t)c] - p.truth[c], 2);
      }
      cnt += 2;
    }
    float lo = 1e30f, hi = -1e30f;
    for (auto* v : {&truth, &meas, &pred})
      for (float x : *v) lo = std::min(lo, x), hi = std::max(hi, x);
    const bool truth_known = n && a.positions_[0].has_truth;
    if (truth_known) ImGui::PlotLines("true x0", truth.data(), (int)truth.size(), 0, nullptr, lo, hi, {width(110), 40});
    ImGui::PlotLines("measured x0", meas.data(), (int)meas.size(), 0, nullptr, lo, hi, {width(110), 40});
    ImGui::PlotLines("predicted x0", pred.data(), (int)pred.size(), 0, nullptr, lo, hi, {width(110), 40});
    if (truth_known && cnt)
      ImGui::Text("running MSE vs truth: model %.4g   Kalman %.4g   raw %.4g", se_model / cnt, se_kf / cnt, se_raw / cnt);
    ImGui::End();
  }

  // What the sliding window cuts off, per head (docs: the math page, "sliding window"): the bounds
  // from the decay and precision every frame (host only), the measured edge mass on request.
  void window_panel() {
    if (a.session_->window() == 0) return;
    ImGui::SetNextWindowPos({8, 444}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({380, 250}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Sliding window");
    ImGui::Text("window %d, ring %d, positions %d..%d held", a.session_->window(), a.session_->max_context(),
                a.session_->oldest_position(), a.position() - 1);
    if (ImGui::Button("measure edge mass")) {
      auto m = a.session_->window_report(0, true);
      if (m) a.edge_mass_ = *m;
      else a.status_ = m.status().to_string();
    }
    auto rep = a.position() > 0 ? a.session_->window_report(0, false) : rfa::Result<std::vector<rfa::WindowTruncation>>(
                                                                          std::vector<rfa::WindowTruncation>{});
    if (rep && ImGui::BeginTable("win", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY)) {
      for (const char* c : {"L:H", "edge lag", "E bound", "P ratio", "edge mass"}) ImGui::TableSetupColumn(c);
      ImGui::TableHeadersRow();
      for (size_t k = 0; k < rep->size(); ++k) {
        const auto& w = (*rep)[k];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%d:%d", w.layer, w.head);
        ImGui::TableNextColumn();
        ImGui::Text("%.4g", w.edge_lag);
        ImGui::TableNextColumn();
        ImGui::Text("%.3g", w.decay_bound);
        ImGui::TableNextColumn();
        ImGui::Text("%.3g", w.precision_ratio);
        ImGui::TableNextColumn();
        if (k < a.edge_mass_.size()) ImGui::Text("%.3g", a.edge_mass_[k].edge_mass);
        else ImGui::TextDisabled("-");
      }
      ImGui::EndTable();
    }
    ImGui::End();
  }

  void timings() {
    ImGui::SetNextWindowPos({8, 316}, ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize({380, 120}, ImGuiCond_FirstUseEver);
    ImGui::Begin("Timings (GPU ms)");
    const FrameTimes& t = a.shown_;  // the last frame that streamed or re-rendered
    ImGui::Text("inference: %.3f ms (%d steps)", t.inference_gpu_ms, t.steps);
    ImGui::Text("probes:    %.3f ms, colour map %.3f ms (%d maps)", t.probe_gpu_ms, t.colormap_gpu_ms, t.maps);
    ImGui::Text("wall: inference %.2f ms, maps %.2f ms", t.inference_wall_ms, t.maps_wall_ms);
    ImGui::Text("frame: %.1f ms (%.0f fps)", 1000.0f * ImGui::GetIO().DeltaTime, ImGui::GetIO().Framerate);
    ImGui::End();
  }
};

void App::draw(ImageQuads& quads) {
  Panels p{*this, quads};
  p.controls();
  if (!session_ || !map_) return;
  p.map_panel();
  p.thumbnails();
  p.kernels();
  p.regimes();
  p.row_panel();
  p.trajectory();
  p.timings();
  p.window_panel();
  diag_.draw(*session_, layer_, head_, req_);
}

}  // namespace viewer
