#include "token_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rfa/tokenizer.hpp"

namespace viewer {

namespace {

std::string hash_id(int id) {  // "#id" (snprintf: GCC 12 warns falsely on "#" + std::to_string)
  char b[16];
  std::snprintf(b, sizeof b, "#%d", id);
  return b;
}

}  // namespace

std::string token_label(rfa::Tokenizer* tok, int id) {
  if (!tok) return hash_id(id);
  std::string out;
  for (unsigned char c : tok->decode({id})) {
    if (c == ' ') out += '_';
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c >= 0x21 && c < 0x7f) out += (char)c;
    else {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", c);
      out += b;
    }
  }
  return out.empty() ? hash_id(id) : out;
}

namespace {

// The longest prefix of `s` that fits in `width` pixels (at least one character).
std::string fit(const std::string& s, float width) {
  size_t n = s.size();
  while (n > 1 && ImGui::CalcTextSize(s.c_str(), s.c_str() + n).x > width) --n;
  return s.substr(0, n);
}

}  // namespace

AxisLabels draw_axis_labels(ImDrawList* dl, ImVec2 p0, float side, const rfa::HeatmapRequest& view, int filled,
                            const std::vector<std::string>& labels, int base) {
  AxisLabels out;
  out.r0 = view.r0;
  out.c0 = view.c0;
  const int rows = view.r1 - view.r0, cols = view.c1 - view.c0;
  if (rows <= 0 || cols <= 0) return out;
  const float ch = side / rows, cw = side / cols, line = ImGui::GetTextLineHeight();
  const ImU32 col = ImGui::GetColorU32(ImGuiCol_Text);
  auto label = [&](int p) -> const std::string* {
    const int k = p - base;
    return k >= 0 && k < (int)labels.size() ? &labels[(size_t)k] : nullptr;
  };
  // Rows: `stagger` columns of labels side by side (1 when a row is a line tall), row i in column
  // (i - r0) % stagger counted from the map, so one column's labels are stagger rows (>= a line) apart.
  const int stagger = std::max(1, (int)std::ceil(line / ch - 1e-3f));
  const float col_w = (kRowLabelWidth - 4) / stagger;
  if (col_w >= ImGui::CalcTextSize("MM").x) {
    for (int i = view.r0; i < std::min(view.r1, filled); ++i) {
      const std::string* l = label(i);
      if (!l) continue;
      const std::string s = fit(*l, col_w - 2);
      const ImVec2 size = ImGui::CalcTextSize(s.c_str());
      const float right = p0.x - 4 - ((i - view.r0) % stagger) * col_w;
      dl->AddText({right - size.x, p0.y + (i - view.r0 + 0.5f) * ch - size.y / 2}, col, s.c_str());
      out.rows.push_back(s);
    }
  }
  if (cw >= ImGui::CalcTextSize("M").x) {  // column labels, as much of each as its cell holds
    for (int j = view.c0; j < std::min(view.c1, filled); ++j) {
      const std::string* l = label(j);
      if (!l) continue;
      const std::string s = fit(*l, cw);
      const ImVec2 size = ImGui::CalcTextSize(s.c_str());
      dl->AddText({p0.x + (j - view.c0 + 0.5f) * cw - size.x / 2, p0.y - kColLabelHeight + 1}, col, s.c_str());
      out.cols.push_back(s);
    }
  }
  return out;
}

int draw_token_text(const std::vector<std::string>& pieces, int base, int query, int key) {
  int clicked = -1;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  bool line_start = true;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const std::string& p = pieces[k];
    const bool newline = !p.empty() && p.back() == '\n';
    const std::string shown = newline ? p.substr(0, p.size() - 1) : p;
    const ImVec2 size = ImGui::CalcTextSize(shown.empty() ? " " : shown.c_str());
    if (!line_start) {
      ImGui::SameLine(0, 0);
      if (ImGui::GetCursorScreenPos().x + size.x > right) ImGui::NewLine();
    }
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const int pos = base + (int)k;
    if (pos == query || pos == key)
      dl->AddRectFilled(at, {at.x + size.x, at.y + size.y}, pos == query ? kQueryHighlight : kKeyHighlight);
    ImGui::TextUnformatted(shown.empty() ? " " : shown.c_str());
    if (ImGui::IsItemClicked()) clicked = pos;
    line_start = newline;
  }
  return clicked;
}

}  // namespace viewer
