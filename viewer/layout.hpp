// Where the viewer's panels go, for any window size, and a record of how each one was drawn.
//
// The layout has three columns: controls, timings, the sliding-window report and the attention
// tomography on the left; the attention map in the middle with the regimes table under both; the
// heads, kernels, selected row and trajectory on the right, which runs the full height. It is
// computed from the display size and applied on the first frame and whenever the display is
// resized, so a panel moved by hand stays where it was put until then.
//
// PanelAudit records, for every panel and table drawn this frame, its rectangle and whether its
// content fitted (nothing clipped, nothing scrolled out of sight): rfa-viewer --dump-json reports
// it as "panels" and "tables", and the viewer's tests check it at more than one window size.
#pragma once

#include <string>
#include <vector>

#include "imgui.h"

namespace viewer {

struct PanelRect {
  float x = 0, y = 0, w = 0, h = 0;
};

// What the layout needs to know about the model and the session.
struct LayoutInputs {
  bool signal = false;    // the trajectory panel is shown
  bool windowed = false;  // the sliding-window panel is shown
  int heads = 1;          // per layer (thumbnails, kernel rows)
  bool afa = false;       // AFA layers: the AFA filter panel in the kernels' place
  int table_rows = 1;     // rows of the regimes table (heads of every layer)
  float model_extra = 0;  // room the controls panel lacked last time it was drawn (wrapped lines, a status)
};

struct Layout {
  PanelRect model, timings, window, tomography, map, regimes, heads, kernels, afa, row, trajectory;
  float thumb = 96;  // the side of a head thumbnail on screen
  int thumbs_per_row = 5;
};

Layout compute_layout(float width, float height, const LayoutInputs& in);

// Applies r to the next ImGui window: always when `force` (the first frame, a resize), else only
// the first time the window appears.
void place_next(const PanelRect& r, bool force);

class PanelAudit {
 public:
  void clear();
  // Records the current window (call it just before ImGui::End()).
  void panel();
  // Records the current table (call it just before ImGui::EndTable()).
  void table(const char* name);
  // {"panels": [...], "tables": [...]} members, without the braces.
  std::string json() const;
  // The vertical overflow of the panel named `name` this frame (0 when it fitted or was not drawn).
  float overflow_y(const char* name) const;

 private:
  struct Entry {
    std::string name;
    float rect[4] = {0, 0, 0, 0};
    float overflow[2] = {0, 0};  // content beyond the visible area, px (x, y)
    float scroll[2] = {0, 0};    // how far the window could scroll (x, y)
    bool fits = true;
    bool shown = true;  // drawn this frame (Dear ImGui hides a window that appears for its first frame)
  };
  std::vector<Entry> panels_, tables_;
};

}  // namespace viewer
