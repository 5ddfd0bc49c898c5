// The viewer's panels (Dear ImGui): controls, the attention map with hover readout and the head
// thumbnails, kernels, the regimes table, the selected row, the trajectory and the timings. Where
// each goes: layout.hpp. Every panel sizes its plots to the room it was given and wraps its long
// lines, so nothing is clipped at any window size the layout serves.
#include <algorithm>
#include <cfloat>
#include <cstdarg>
#include <cmath>
#include <cstdio>

#include "app.hpp"
#include "imgui.h"
#include "rfa/tokenizer.hpp"
#include "rfa/inspect.hpp"
#include "token_text.hpp"

namespace viewer {
namespace {

// Dear ImGui 1.86's plots take no negative (fill the rest) sizes: a positive width, minus room for a label.
float width(float label) { return std::max(40.0f, ImGui::GetContentRegionAvail().x - label); }
// The width that leaves room for `label` right of the next item.
float width_for(const char* label) {
  return std::max(40.0f, ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(label).x - ImGui::GetStyle().ItemInnerSpacing.x);
}

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

std::string finite_or_dash(double v, const char* fmt) {
  if (!std::isfinite(v)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, fmt, v);
  return b;
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
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
          rfa::attention_variant_name(h.variant), h.terms};
}

struct Panels {
  App& a;
  ImageQuads& q;
  const Layout& L;
  bool force;  // re-apply the layout this frame (the first, or after a resize)

  void end() {
    a.audit_.panel();
    ImGui::End();
  }

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
    place_next(L.model, force);
    ImGui::Begin("Model and stream");
    const float open_w = ImGui::CalcTextSize("Open").x + 2 * ImGui::GetStyle().FramePadding.x + ImGui::GetStyle().ItemSpacing.x;
    ImGui::SetNextItemWidth(std::max(60.0f, width_for("model dir") - open_w));
    ImGui::InputText("model dir", a.model_path_, sizeof a.model_path_);
    ImGui::SameLine();
    if (ImGui::Button("Open")) {
      std::string e = a.open_model(a.model_path_);
      a.status_ = e.empty() ? "opened " + std::string(a.model_path_) : e;
    }
    if (!a.model_) {
      ImGui::TextWrapped("No model: %s", a.error_.c_str());
      end();
      return;
    }
    ImGui::TextWrapped("%s: %s, %d x %d heads, D = %d, %s", a.info_.name.c_str(), a.info_.architecture.c_str(),
                       a.info_.layers, a.info_.heads, a.info_.head_dim,
                       a.heads_.empty() ? "RFA" : rfa::attention_variant_name(a.heads_[0].variant));
    // The device, and the attention paths its kernel check refused (RFA_VERIFY_KERNELS: the chooser
    // no longer takes them; the reasons on hover).
    const std::vector<std::string> refused = a.ctx_.kernel_refusals();
    ImGui::TextWrapped("device: %s%s", a.ctx_.device_info().name.c_str(),
                       refused.empty() ? "" : (", " + std::to_string(refused.size()) + " kernel path(s) refused").c_str());
    if (!refused.empty() && ImGui::IsItemHovered()) {
      std::string why;
      for (const auto& r : refused) why += r + "\n";
      ImGui::SetTooltip("%s", why.c_str());
    }
    const int W = a.session_->window();
    if (W > 0) ImGui::TextWrapped("position %d, window %d", a.position(), W);
    else ImGui::TextWrapped("position %d / %d", a.position(), a.session_->max_context());
    if (ImGui::Button(a.playing_ ? "Pause" : "Play")) a.playing_ = !a.playing_;
    ImGui::SameLine();
    if (ImGui::Button("Step")) a.step(1);
    ImGui::SameLine();
    if (ImGui::Button("Reset")) a.reset();
    if (W > 0) {
      // What the sliding window cuts off (docs/math.md §8): the per-head bounds are columns of the
      // regimes table; this measures the edge mass too.
      ImGui::SameLine();
      if (ImGui::Button("measure edge mass")) {
        auto m = rfa::Inspector(*a.session_).window_report(0, true);
        if (m) a.edge_mass_ = *m;
        else a.status_ = m.status().to_string();
      }
    }
    float rate = (float)a.opt_.steps_per_frame;
    ImGui::SetNextItemWidth(width_for("steps / frame"));
    if (ImGui::SliderFloat("steps / frame", &rate, 0.0f, 16.0f, "%.2f")) a.opt_.steps_per_frame = rate;
    if (W > 0)
      ImGui::TextWrapped("ring %d: positions %d..%d, edge lag %s", a.session_->max_context(),
                         a.session_->oldest_position(), a.position() - 1,
                         a.window_report_.empty() ? "-" : num(a.window_report_[0].edge_lag).c_str());
    if (a.is_lm()) {
      ImGui::SetNextItemWidth(width_for("prompt"));
      ImGui::InputText("prompt", a.prompt_, sizeof a.prompt_);
      if (ImGui::Button("Feed prompt (reset)")) a.reset();
      ImGui::SameLine();
      ImGui::Checkbox("generate", &a.opt_.generate);
      ImGui::SetNextItemWidth(width_for("temperature"));
      ImGui::SliderFloat("temperature", &a.temperature_, 0.0f, 2.0f);
      // The text so far; the hovered query (or the selected row) and key are highlighted; a click
      // on a token selects its row. A child window of its own: a long text scrolls there.
      sync_labels();
      const float status_h = a.status_.empty() ? 0.0f : 2 * ImGui::GetTextLineHeightWithSpacing();
      ImGui::BeginChild("text", {0, std::max(40.0f, ImGui::GetContentRegionAvail().y - status_h)}, true);
      const int clicked = draw_token_text(a.pieces_, a.positions_base_,
                                          a.hover_i_ >= 0 ? a.hover_i_ : a.selected_row_, a.hover_j_);
      if (clicked >= 0) a.selected_row_ = clicked;
      ImGui::EndChild();
    } else if (a.spiral_) {
      float noise = (float)a.spiral_->sigma_m, interval = (float)a.spiral_->interval;
      const char* note = "Changes apply to new samples; Reset restarts the trajectory.";
      ImGui::SetNextItemWidth(width_for("sample interval"));
      if (ImGui::SliderFloat("noise sigma_m", &noise, 0.0f, 3.0f)) a.spiral_->sigma_m = noise;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", note);
      ImGui::SetNextItemWidth(width_for("sample interval"));
      if (ImGui::SliderFloat("sample interval", &interval, 0.01f, 0.5f)) a.spiral_->interval = interval;
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", note);
      ImGui::Checkbox("irregular timestamps", &a.spiral_->irregular);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", note);
    } else if (a.source_) {
      ImGui::TextWrapped("file: %s", a.source_->describe().c_str());
    }
    if (!a.status_.empty()) ImGui::TextWrapped("%s", a.status_.c_str());
    end();
  }

  void map_panel() {
    place_next(L.map, force);
    ImGui::Begin("Attention map");
    int layer = a.layer_, head = a.head_;
    ImGui::SetNextItemWidth(90);
    ImGui::InputInt("layer", &layer);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(90);
    ImGui::InputInt("head", &head);
    ImGui::SameLine();
    bool changed = ImGui::Checkbox(a.variant() == rfa::AttentionVariant::rfa ? "A = Ahat E" : "A", &a.opt_.decayed);
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
    if (a.is_afa()) {
      // AFA's views (docs/variant-afa-full.md §5): -1 the channel mean, -2 the reweighting map, c >= 0 a
      // channel's own weights (full AFA: Q_c).
      int ch = a.opt_.channel;
      ImGui::SetNextItemWidth(90);
      if (ImGui::InputInt("channel", &ch)) {
        a.opt_.channel = std::clamp(ch, rfa::kReweighting, a.info_.head_dim - 1);
        changed = true;
      }
      ImGui::SameLine();
      ImGui::TextDisabled("%s", a.opt_.channel == rfa::kAllChannels ? "(mean of channels)"
                                : a.opt_.channel == rfa::kReweighting ? "(reweighting map W)"
                                                                      : "(that channel's weights)");
    }
    if (layer != a.layer_ || head != a.head_) {
      a.layer_ = layer;
      a.head_ = head;
      a.clamp_selection();
      changed = true;
    }
    // Text models keep room left of and above the map for token labels (token_text.hpp); two
    // lines under the map say what it shows.
    const bool labels = a.is_lm();
    const float ml = labels ? kRowLabelWidth : 0.0f, mt = labels ? kColLabelHeight : 0.0f;
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float below = 2 * ImGui::GetTextLineHeightWithSpacing();
    const float side = std::floor(std::max(64.0f, std::min(avail.x - ml, avail.y - below - mt)));
    const ImVec2 c = ImGui::GetCursorScreenPos();
    ImVec2 p0 = {c.x + ml, c.y + mt}, p1 = {p0.x + side, p0.y + side};
    q.image(a.map_->view(), p0, p1);
    a.map_screen_[0] = p0.x, a.map_screen_[1] = p0.y, a.map_screen_[2] = p1.x, a.map_screen_[3] = p1.y;
    ImGui::SetCursorScreenPos(p0);
    ImGui::InvisibleButton("map", {side, side});
    const auto& r = a.req_;
    if (labels) {
      sync_labels();
      a.axis_ = draw_axis_labels(ImGui::GetWindowDrawList(), p0, side, r, a.position(), a.labels_, a.positions_base_);
    }
    a.hover_i_ = a.hover_j_ = -1;
    a.readout_.clear();
    const bool scripted = a.opt_.hover_i >= 0 && r.r1 > r.r0 && r.c1 > r.c0;
    if (ImGui::IsItemHovered() || scripted) {
      ImGuiIO& io = ImGui::GetIO();
      const float fx = (io.MousePos.x - p0.x) / side, fy = (io.MousePos.y - p0.y) / side;
      if (io.MouseWheel != 0 && !scripted) {  // zoom about the cursor
        const float cx = a.center_[0], cy = a.center_[1], z = a.zoom_;
        a.zoom_ = std::clamp(a.zoom_ * (io.MouseWheel > 0 ? 1.25f : 0.8f), 1.0f, 64.0f);
        a.center_[0] = cx + (fx - 0.5f) / z - (fx - 0.5f) / a.zoom_;
        a.center_[1] = cy + (fy - 0.5f) / z - (fy - 0.5f) / a.zoom_;
        changed = true;
      }
      // --hover holds the mouse over that cell from the first frame (its readout is drawn then, so
      // the tooltip, which Dear ImGui shows from its second frame, is in every frame after it).
      const int i = scripted ? a.opt_.hover_i : r.r0 + (int)(fy * (r.r1 - r.r0));
      const int j = scripted ? a.opt_.hover_j : r.c0 + (int)(fx * (r.c1 - r.c0));
      if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && !scripted) a.selected_row_ = i < a.position() ? i : -1;
      a.hover_i_ = i, a.hover_j_ = j;
      hover(i, j);
    }
    if (scripted)  // the mouse rests on the cell (the tooltip follows it)
      ImGui::GetIO().MousePos = {p0.x + (a.opt_.hover_j - r.c0 + 0.5f) * side / (r.c1 - r.c0),
                                 p0.y + (a.opt_.hover_i - r.r0 + 0.5f) * side / (r.r1 - r.r0)};
    if (ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
      ImVec2 d = ImGui::GetIO().MouseDelta;
      a.center_[0] -= d.x / side / a.zoom_;
      a.center_[1] -= d.y / side / a.zoom_;
      changed = true;
    }
    a.center_[0] = std::clamp(a.center_[0], 0.0f, 1.0f);
    a.center_[1] = std::clamp(a.center_[1], 0.0f, 1.0f);
    ImGui::SetCursorScreenPos({c.x, p1.y + ImGui::GetStyle().ItemSpacing.y});
    ImGui::Text("rows %d..%d, keys %d..%d (%s%s, %s scale)", r.r0, r.r1 - 1, r.c0, r.c1 - 1, r.decayed ? "A" : "Ahat",
                r.channel == rfa::kAllChannels ? ""
                : r.channel == rfa::kReweighting ? " of W"
                                                 : (" of channel " + std::to_string(r.channel)).c_str(),
                r.log_scale ? "log" : "linear");
    ImGui::TextDisabled("wheel: zoom, drag: pan, click: select a row");
    end();
    if (changed) a.maps_dirty_ = true;
  }

  // Hover readout: i, j, inputs, lag, the weights and, for an RFA head, the logit's terms (small probes).
  void hover(int i, int j) {
    const int n = a.position();
    ImGui::BeginTooltip();
    say(false, "i = %d (query) %s", i, a.describe_input(i).c_str());
    say(false, "j = %d (key)   %s", j, a.describe_input(j).c_str());
    if (i >= n || j >= n || (j > i && a.causal())) {
      say(true, "%s", j > i && i < n ? "masked (future key)" : "not streamed yet");
    } else if (i < a.session_->oldest_position() || j < a.session_->oldest_position()) {
      say(true, "no longer in the window's ring");
    } else if (a.session_->window() > 0 && a.causal() && i - j >= a.session_->window()) {
      say(true, "masked (outside the window of %d)", a.session_->window());
    } else if (a.variant() == rfa::AttentionVariant::rfa) {
      // The kernel's own terms for this pair, from the cached rotated Q/K and the row statistics.
      auto pr = rfa::Inspector(*a.session_).pair(a.layer_, a.head_, 0, i, j);
      if (!pr) {
        say(true, "%s", pr.status().message().c_str());
      } else if (pr->masked) {
        say(false, "lag = %.4g: masked (%s)", pr->lag, j > i ? "future key" : "outside the window");
      } else {
        say(false, "lag = %.4g   dt = lag + shift = %.4g", pr->lag, pr->dt);
        say(false, "Ahat = %.5g   A = Ahat E = %.5g", pr->ahat, pr->a);
        say(false, "E = %.4g   Vcov = %.4g   P = %.4g   B = %.4g", pr->decay, pr->vcov, pr->precision, pr->bias);
        say(false, "|q|^2 = %.4g   |k|^2 = %.4g   cross = %.4g   R2 = %.4g", pr->q_norm2, pr->k_norm2, pr->cross,
            pr->residual2);
        say(false, "L = B - robust term = %.4g;  logit = tau L = %.4g", pr->L, pr->logit);
      }
    } else {
      // AFA and RT-RFA heads: their weights from their own probes (a 1 x 1 rectangle each).
      auto ahat = rfa::Inspector(*a.session_).attention(a.layer_, a.head_, 0, i, i + 1, j, j + 1, false, a.req_.channel);
      auto am = rfa::Inspector(*a.session_).attention(a.layer_, a.head_, 0, i, i + 1, j, j + 1, true, a.req_.channel);
      const auto ts = rfa::Inspector(*a.session_).timestamps(0);
      const int o = a.session_->oldest_position();
      say(false, "lag = %.4g", ts[(size_t)(i - o)] - ts[(size_t)(j - o)]);
      if (!ahat || !am) {
        say(true, "%s", (!ahat ? ahat.status() : am.status()).message().c_str());
      } else if (a.is_afa() && a.req_.channel != rfa::kAllChannels) {
        say(false, "Ahat = %.5g   A = %.5g", (*ahat)[0], (*am)[0]);
        say(true, "AFA, view %d: %s (docs/variant-afa-full.md, section 5)", a.req_.channel,
            a.req_.channel == rfa::kReweighting ? "the reweighting map W, A = W" : "the channel's weight and its decayed weight");
      } else if (a.variant() == rfa::AttentionVariant::afa_full) {
        say(false, "Ahat = (1/D) sum_k Q_k = %.5g   A = (1/D) sum_k Q_k e_k = %.5g", (*ahat)[0], (*am)[0]);
        say(true, "full AFA: the channel mean of the per-channel weights (docs/variant-afa-full.md, section 5)");
      } else if (a.variant() == rfa::AttentionVariant::afa) {
        say(false, "Ahat = %.5g   A = Ahat (1/D) sum_k e^{-mu_k lag} = %.5g", (*ahat)[0], (*am)[0]);
        say(true, "AFA: the weight and its channel-mean decayed mass (docs/variant-afa.md, section 11)");
      } else {
        say(false, "Ahat = A = %.5g", (*ahat)[0]);
        say(true, "RT-RFA: no decay on weights or values (docs/variant-rt.md, section 10)");
      }
    }
    a.audit_.panel();  // the readout's window, as drawn (--dump-json: "shown" once it is visible)
    ImGui::EndTooltip();
  }

  void thumbnails() {
    place_next(L.heads, force);
    ImGui::Begin("Heads of the layer");
    const float s = L.thumb;
    for (int h = 0; h < (int)a.thumbs_.size(); ++h) {
      if (h % L.thumbs_per_row) ImGui::SameLine();
      ImGui::BeginGroup();
      ImVec2 p0 = ImGui::GetCursorScreenPos();
      q.image(a.thumbs_[(size_t)h]->view(), p0, {p0.x + s, p0.y + s});
      ImGui::PushID(h);
      if (ImGui::InvisibleButton("thumb", {s, s})) a.head_ = h, a.maps_dirty_ = true;
      ImGui::PopID();
      const auto& hs = a.heads_[(size_t)(a.layer_ * a.info_.heads + h)];
      ImGui::Text("%sh%d %s", h == a.head_ ? ">" : "", h, rfa::attention_variant_name(hs.variant));
      ImGui::TextColored(regime_color(hs.regime.regime), "%s", rfa::regime_name(hs.regime.regime));
      ImGui::EndGroup();
    }
    end();
  }

  // The kernel curves of every head over the current lags (host, double: rfa::head_curves), named
  // as the layer's mechanism defines them.
  void kernels() {
    place_next(L.kernels, force);
    ImGui::Begin("Kernels of the layer (current lags)");
    const int n = std::max(a.position() - a.session_->oldest_position(), 2);
    std::vector<double> lags((size_t)n);
    auto ts = rfa::Inspector(*a.session_).timestamps(0);
    for (int k = 0; k < n; ++k) lags[(size_t)k] = (int)ts.size() >= n ? ts.back() - ts[(size_t)(n - 1 - k)] : k;
    // What the four curves are: the layer's mechanism names them (KernelCurves::names, what).
    auto named = rfa::head_curves(*a.model_, a.layer_, 0, {0.0});
    std::vector<std::string> cols = named && named->names.size() == 4 ? named->names
                                                                    : std::vector<std::string>{"E", "Vcov", "P", "B"};
    const std::string what = named ? named->what : "";
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("lag 0 .. %.4g; per head: %s", lags.back(), what.c_str());
    ImGui::PopStyleColor();
    // Each head's row of plots shares the room left below the header.
    const float header = ImGui::GetTextLineHeightWithSpacing() + 6;
    const float row_h = std::max(14.0f, (ImGui::GetContentRegionAvail().y - header) / std::max(a.info_.heads, 1) - 6);
    if (ImGui::BeginTable("kern", 5, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) {
      ImGui::TableSetupColumn("head", ImGuiTableColumnFlags_WidthFixed);
      for (const std::string& c : cols) ImGui::TableSetupColumn(c.c_str(), ImGuiTableColumnFlags_WidthStretch, 1.0f);
      ImGui::TableHeadersRow();
      for (int h = 0; h < a.info_.heads; ++h) {
        auto cv = rfa::head_curves(*a.model_, a.layer_, h, lags);  // host, double: no GPU round trip
        if (!cv) continue;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("%d", h);
        for (auto* c : {&cv->decay, &cv->vcov, &cv->precision, &cv->bias}) {
          std::vector<float> f(c->begin(), c->end());
          ImGui::TableNextColumn();
          ImGui::PushID(h * 8 + (int)(c - &cv->decay));
          ImGui::PlotLines("", f.data(), (int)f.size(), 0, nullptr, FLT_MAX, FLT_MAX, {width(0), row_h});
          ImGui::PopID();
        }
      }
      a.audit_.table("kernels");
      ImGui::EndTable();
    }
    end();
  }

  void regimes() {
    place_next(L.regimes, force);
    ImGui::Begin("Regimes (docs/math.md, section 5)");
    auto cols = App::regime_columns();
    // With a sliding window, each head's bounds on what the window drops (docs/math.md §8).
    const bool windowed = !a.window_report_.empty();
    if (windowed)
      for (const char* c : {"E bound", "P ratio", "edge mass"}) cols.push_back(c);
    const ImGuiTableFlags fl = ImGuiTableFlags_Sortable | ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg |
                               ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
    std::vector<std::vector<std::string>> rows;  // the cells, made before the table to size it
    for (size_t k = 0; k < a.heads_.size(); ++k) {
      auto cells = App::regime_cells(a.heads_[k], a.info_.head_dim);
      if (windowed) {
        const bool have = k < a.window_report_.size();
        cells.push_back(have ? finite_or_dash(a.window_report_[k].decay_bound, "%.3g") : "-");
        cells.push_back(have ? finite_or_dash(a.window_report_[k].precision_ratio, "%.3g") : "-");
        cells.push_back(k < a.edge_mass_.size() ? finite_or_dash(a.edge_mass_[k].edge_mass, "%.3g") : "-");
      }
      rows.push_back(std::move(cells));
    }
    // A narrow window would cut the widest tables (a windowed AFA model's 19 columns): their cell
    // padding narrows, from the text's own widths in this frame, rather than a column being cut.
    float text = 0;
    for (size_t c = 0; c < cols.size(); ++c) {
      float w = ImGui::CalcTextSize(cols[c].c_str()).x + ImGui::GetFontSize();  // the sort arrow
      for (const auto& r : rows)
        if (c < r.size()) w = std::max(w, ImGui::CalcTextSize(("> " + r[c]).c_str()).x);
      text += w;
    }
    const float per_column = (ImGui::GetContentRegionAvail().x - text) / (2.0f * (float)cols.size()) - 1.0f;
    const float pad_x = std::clamp(per_column, 1.0f, ImGui::GetStyle().CellPadding.x);
    ImGui::PushStyleVar(ImGuiStyleVar_CellPadding, ImVec2(pad_x, ImGui::GetStyle().CellPadding.y));
    const bool table_open = ImGui::BeginTable("regimes", (int)cols.size(), fl);
    ImGui::PopStyleVar();
    if (table_open) {
      for (auto& c : cols) ImGui::TableSetupColumn(c.c_str());
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableHeadersRow();
      std::vector<size_t> order(a.heads_.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      if (ImGuiTableSortSpecs* ss = ImGui::TableGetSortSpecs(); ss && ss->SpecsCount > 0) {
        const int col = ss->Specs[0].ColumnIndex;
        const bool asc = ss->Specs[0].SortDirection == ImGuiSortDirection_Ascending;
        auto key = [&](size_t k) -> double {
          const rfa::HeadSummary& h = a.heads_[k];
          const rfa::WindowTruncation* w = k < a.window_report_.size() ? &a.window_report_[k] : nullptr;
          const rfa::WindowTruncation* m = k < a.edge_mass_.size() ? &a.edge_mass_[k] : nullptr;
          const double v[] = {(double)h.layer, (double)h.head, h.params.mu, h.omega_max, h.regime.stationary_variance,
                              h.params.eta2, h.params.gamma2, h.params.nu, h.params.kappa, h.params.tau,
                              h.params.lag_shift, h.regime.alpha, h.regime.beta, (double)h.regime.regime,
                              (double)h.variant, (double)h.variant, w ? w->decay_bound : 0.0,
                              w ? w->precision_ratio : 0.0, m ? m->edge_mass : 0.0};
          return v[std::clamp(col, 0, 18)];
        };
        std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
          double kx = key(x), ky = key(y);
          return asc ? kx < ky : kx > ky;
        });
      }
      for (size_t k : order) {
        const auto& h = a.heads_[k];
        const auto& cells = rows[k];
        ImGui::TableNextRow();
        for (size_t c = 0; c < cells.size(); ++c) {
          ImGui::TableNextColumn();
          if (c == kRegimeColumn) ImGui::TextColored(regime_color(h.regime.regime), "%s", cells[c].c_str());
          else if (c == 0 && h.layer == a.layer_ && h.head == a.head_) ImGui::Text("> %s", cells[c].c_str());
          else ImGui::TextUnformatted(cells[c].c_str());
        }
      }
      a.audit_.table("regimes");
      ImGui::EndTable();
    }
    end();
  }

  void row_panel() {
    place_next(L.row, force);
    ImGui::Begin("Selected query row");
    // Computed in this frame's submission (App::update watches the row and waits for the frame).
    const rfa::WatchedRow& w = rfa::Inspector(*a.session_).watched_row();
    if (!w.valid) {
      ImGui::TextDisabled("no rows yet");
      a.row_json_ = "null";
      end();
      return;
    }
    const bool newest = w.row == a.position() - 1;
    if (a.selected_row_ < 0)
      ImGui::TextWrapped("row i = %d, the newest (click the map to select a row)", w.row);
    else
      ImGui::TextWrapped("row i = %d, selected (the newest is %d)", w.row, a.position() - 1);
    const rfa::RowDiagnostics& r = w.diagnostics;
    // The plot takes the room the two lines of statistics leave.
    const float lines = 2 * ImGui::GetTextLineHeightWithSpacing() + ImGui::GetStyle().ItemSpacing.y;
    std::vector<float> by_lag(w.weights.rbegin(), w.weights.rend());  // index = lag in positions
    ImGui::PlotLines("weight vs lag", by_lag.data(), (int)by_lag.size(), 0, nullptr, 0.0f, FLT_MAX,
                     {width_for("weight vs lag"), std::max(24.0f, ImGui::GetContentRegionAvail().y - lines)});
    ImGui::TextWrapped("entropy %.4g   expected lag %.4g   max weight %.4g", r.entropy, r.expected_lag, r.max_weight);
    ImGui::TextWrapped("mass beyond lag 1: %.3g  4: %.3g  16: %.3g  64: %.3g", r.mass_beyond[0], r.mass_beyond[1],
                       r.mass_beyond[2], r.mass_beyond[3]);
    a.row_json_ = "{\"row\": " + std::to_string(w.row) + ", \"newest\": " + (newest ? "true" : "false") +
                  ", \"position\": " + std::to_string(a.position()) + ", \"layer\": " + std::to_string(w.layer) +
                  ", \"head\": " + std::to_string(w.head) + ", \"entropy\": " + json_num(r.entropy) +
                  ", \"log_partition\": " + json_num(r.log_partition) + ", \"max_weight\": " + json_num(r.max_weight) +
                  ", \"expected_lag\": " + json_num(r.expected_lag) + ", \"mass_beyond\": [" +
                  json_num(r.mass_beyond[0]) + ", " + json_num(r.mass_beyond[1]) + ", " + json_num(r.mass_beyond[2]) +
                  ", " + json_num(r.mass_beyond[3]) + "]}";
    end();
  }

  void trajectory() {
    if (a.is_lm()) return;
    place_next(L.trajectory, force);
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
    // The plots share what the error line leaves.
    const int plots = truth_known ? 3 : 2;
    const float sp = ImGui::GetStyle().ItemSpacing.y, text = truth_known && cnt ? ImGui::GetTextLineHeightWithSpacing() : 0;
    const float ph = std::max(16.0f, (ImGui::GetContentRegionAvail().y - text) / plots - sp);
    const float lw = width_for("predicted x0");
    if (truth_known) ImGui::PlotLines("true x0", truth.data(), (int)truth.size(), 0, nullptr, lo, hi, {lw, ph});
    ImGui::PlotLines("measured x0", meas.data(), (int)meas.size(), 0, nullptr, lo, hi, {lw, ph});
    ImGui::PlotLines("predicted x0", pred.data(), (int)pred.size(), 0, nullptr, lo, hi, {lw, ph});
    if (truth_known && cnt)
      ImGui::TextWrapped("running MSE vs truth: model %.4g  Kalman %.4g  raw %.4g", se_model / cnt, se_kf / cnt,
                         se_raw / cnt);
    end();
  }

  void timings() {
    place_next(L.timings, force);
    ImGui::Begin("Timings (GPU ms)");
    const FrameTimes& t = a.shown_;  // the last frame that streamed or re-rendered
    ImGui::Text("inference %.3f ms (%d step%s)", t.inference_gpu_ms, t.steps, t.steps == 1 ? "" : "s");
    ImGui::Text("probes %.3f ms, colour maps %.3f ms (%d)", t.probe_gpu_ms, t.colormap_gpu_ms, t.maps);
    ImGui::Text("wall: inference %.2f ms, maps %.2f ms", t.inference_wall_ms, t.maps_wall_ms);
    const float dt = ImGui::GetIO().DeltaTime;
    ImGui::Text("frame %.1f ms (%.3g fps)", 1000.0f * dt, dt > 0 ? 1.0f / dt : 0.0f);
    end();
  }
};

void App::draw(ImageQuads& quads) {
  audit_.clear();
  bool force = false;
  const Layout& L = layout(&force);
  Panels p{*this, quads, L, force};
  p.controls();
  if (!session_ || !map_) return;
  p.map_panel();
  p.thumbnails();
  if (!is_afa()) p.kernels();  // an AFA layer's kernels are in its filter panel, per channel
  p.regimes();
  p.row_panel();
  p.trajectory();
  p.timings();
  afa_.draw(*model_, *session_, layer_, head_, spiral_ && !is_lm() ? spiral_->interval : 0.0, L.afa, force, audit_);
  diag_.draw(*session_, layer_, head_, req_, L.tomography, force, audit_);
  // The controls panel holds lines that wrap and a status that comes and goes: when they did not
  // fit, the next frame's layout gives it the room (and takes it from the tomography below).
  if (const float more = audit_.overflow_y("Model and stream"); more >= 1 && model_extra_ < 400) {
    model_extra_ += std::ceil(more) + 2;
    layout_size_[0] = layout_size_[1] = 0;
  }

}

}  // namespace viewer
