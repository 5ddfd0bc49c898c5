#include "layout.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "imgui_internal.h"  // Dear ImGui 1.86 (Debian's libimgui-dev): a window's content extent, a table's fit

namespace viewer {

namespace {

constexpr float kMargin = 8, kGap = 8;
// Dear ImGui's default style and font (ProggyClean 13 px): a title bar, a window's padding top and
// bottom, a line of text with its spacing, a table row.
constexpr float kTitle = 19, kPad = 16, kLine = 17, kRow = 18;

}  // namespace

Layout compute_layout(float W, float H, const LayoutInputs& in) {
  Layout L;
  // Bottom band: the regimes table, one row per head of every layer plus its header.
  const float bottom = std::min(kTitle + kPad + (in.table_rows + 1) * kRow + 8, std::max(120.0f, 0.32f * H));
  const float top = H - 2 * kMargin - kGap - bottom;
  const float left_w = std::clamp(0.24f * W, 300.0f, 420.0f), right_w = std::clamp(0.34f * W, 360.0f, 560.0f);
  const float mid_w = std::max(200.0f, W - 2 * kMargin - 2 * kGap - left_w - right_w);
  const float x_left = kMargin, x_mid = x_left + left_w + kGap, x_right = x_mid + mid_w + kGap;
  L.regimes = {kMargin, kMargin + top + kGap, W - 2 * kMargin, bottom};
  L.map = {x_mid, kMargin, mid_w, top};

  // Left: the controls (a text model's also hold the prompt and the text so far), the timings, the
  // attention tomography in what remains.
  float y = kMargin;
  // Signal models: the path, name, device, position, buttons, rate, two sliders and a checkbox (and
  // with a window, its line); a text model's panel ends in the text so far, which scrolls.
  const float frame_line = kLine + 6;  // a framed widget's line
  const float model_h = in.signal ? kTitle + kPad + 6 * frame_line + 3 * kLine + (in.windowed ? kLine : 0.0f)
                                  : std::clamp(0.40f * top, 270.0f, 360.0f);
  L.model = {x_left, y, left_w, model_h + in.model_extra};
  y += L.model.h + kGap;
  L.timings = {x_left, y, left_w, kTitle + kPad + 4 * kLine};
  y += L.timings.h + kGap;
  L.tomography = {x_left, y, left_w, std::max(160.0f, kMargin + top - y)};

  // Right: the thumbnails (as many per row as fit), then the kernels, the selected row and the
  // trajectory sharing what remains.
  L.thumb = std::clamp(0.13f * top, 64.0f, 96.0f);
  L.thumbs_per_row = std::max(1, (int)((right_w - kPad + 8) / (L.thumb + 8)));
  const int thumb_rows = (in.heads + L.thumbs_per_row - 1) / L.thumbs_per_row;
  // Each thumbnail carries two lines: the head and its mechanism, its regime.
  const float heads_h = kTitle + kPad + thumb_rows * (L.thumb + 2 * kLine + 4);
  y = kMargin;
  L.heads = {x_right, y, right_w, heads_h};
  y += heads_h + kGap;
  const float rest = kMargin + top - y - (in.signal ? 2 : 1) * kGap;
  // An AFA model's filter panel (eigenvalues, its channels' kernels, the iterations) takes the
  // kernels' place and a little more.
  const float k_share = in.signal ? (in.afa ? 0.43f : 0.38f) : 0.55f, r_share = in.signal ? (in.afa ? 0.27f : 0.30f) : 0.45f;
  (in.afa ? L.afa : L.kernels) = {x_right, y, right_w, rest * k_share};
  y += rest * k_share + kGap;
  L.row = {x_right, y, right_w, rest * r_share};
  y += L.row.h + kGap;
  L.trajectory = {x_right, y, right_w, in.signal ? kMargin + top - y : 0.0f};
  return L;
}

void place_next(const PanelRect& r, bool force) {
  const ImGuiCond c = force ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
  ImGui::SetNextWindowPos({std::floor(r.x), std::floor(r.y)}, c);
  ImGui::SetNextWindowSize({std::floor(r.w), std::floor(r.h)}, c);
}

void PanelAudit::clear() {
  panels_.clear();
  tables_.clear();
}

void PanelAudit::panel() {
  ImGuiWindow* w = ImGui::GetCurrentWindow();
  Entry e;
  e.name = w->Name;
  e.rect[0] = w->Pos.x, e.rect[1] = w->Pos.y, e.rect[2] = w->Pos.x + w->Size.x, e.rect[3] = w->Pos.y + w->Size.y;
  // The content drawn this frame against what the window shows of it: the work rectangle across
  // (text beyond it is clipped), the inner rectangle down (beyond it, it scrolls out of sight).
  e.overflow[0] = std::max(0.0f, w->DC.CursorMaxPos.x - w->WorkRect.Max.x);
  e.overflow[1] = std::max(0.0f, w->DC.CursorMaxPos.y - (w->InnerRect.Max.y - ImGui::GetStyle().WindowPadding.y * 0.5f));
  e.scroll[0] = w->ScrollMax.x, e.scroll[1] = w->ScrollMax.y;
  e.shown = !w->Hidden;
  e.fits = e.overflow[0] < 1 && e.overflow[1] < 1 && w->ScrollMax.x == 0 && w->ScrollMax.y == 0 && !w->Collapsed;
  panels_.push_back(e);
}

void PanelAudit::table(const char* name) {
  ImGuiTable* t = ImGui::GetCurrentTable();
  if (!t) return;
  Entry e;
  e.name = name;
  e.rect[0] = t->OuterRect.Min.x, e.rect[1] = t->OuterRect.Min.y, e.rect[2] = t->OuterRect.Max.x,
  e.rect[3] = t->OuterRect.Max.y;
  // Every column as wide as its widest cell (else a cell's text is cut), every row in sight.
  e.overflow[0] = std::max(0.0f, t->ColumnsAutoFitWidth - t->OuterRect.GetWidth());
  e.overflow[1] = t->InnerWindow ? t->InnerWindow->ScrollMax.y : 0.0f;
  if (t->InnerWindow) e.scroll[0] = t->InnerWindow->ScrollMax.x, e.scroll[1] = t->InnerWindow->ScrollMax.y;
  e.fits = e.overflow[0] < 1 && e.overflow[1] < 1;
  tables_.push_back(e);
}

float PanelAudit::overflow_y(const char* name) const {
  for (const Entry& e : panels_)
    if (e.name == name) return std::max(e.overflow[1], e.scroll[1]);  // ImGui may scroll a line it drew inside
  return 0;
}

std::string PanelAudit::json() const {
  std::ostringstream o;
  auto list = [&](const char* key, const std::vector<Entry>& v) {
    o << "\"" << key << "\": [";
    for (size_t k = 0; k < v.size(); ++k) {
      const Entry& e = v[k];
      std::string name;
      for (char c : e.name) name += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
      o << (k ? ",\n    " : "\n    ") << "{\"name\": \"" << name << "\", \"rect\": [" << e.rect[0] << ", " << e.rect[1]
        << ", " << e.rect[2] << ", " << e.rect[3] << "], \"overflow\": [" << e.overflow[0] << ", " << e.overflow[1]
        << "], \"scroll_max\": [" << e.scroll[0] << ", " << e.scroll[1] << "], \"fits\": " << (e.fits ? "true" : "false")
        << ", \"shown\": " << (e.shown ? "true" : "false") << "}";
    }
    o << "\n  ]";
  };
  list("panels", panels_);
  o << ",\n  ";
  list("tables", tables_);
  return o.str();
}

}  // namespace viewer
