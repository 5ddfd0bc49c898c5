// The viewer's "Attention tomography" panel (docs/DIAGNOSTICS.md §3): for the selected head, over the visible
// map or the last N rows, the Laplace-Radon and routing diagnostics of Session::head_diagnostics:
// the tau histogram, the tilt and normal spectra, the singular values of P, the effective rank over
// time as the stream grows, and an alpha slider for the temperature sweep. Owns its history; knows
// nothing of the window system.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "layout.hpp"
#include "rfa/heatmap.hpp"
#include "rfa/session.hpp"

namespace viewer {

class DiagnosticsPanel {
 public:
  // Recomputes when the head, the window, alpha or the stream changed (at most every `every`
  // frames while the stream runs), then draws at `where` (re-applied when `force`) and records the
  // panel in `audit`. `view` is the main map's request (its rectangle is the "visible map" window).
  void draw(rfa::Session& s, int layer, int head, const rfa::HeatmapRequest& view, const PanelRect& where, bool force,
            PanelAudit& audit);
  // The last result as JSON (rfa-viewer --dump-json "diagnostics"), with the panel's placement.
  std::string json() const;
  void set_alpha(float a) { alpha_ = a; }

 private:
  struct Key {
    const rfa::Session* session = nullptr;
    int layer = -1, head = -1, r0 = 0, r1 = 0, c0 = 0, c1 = 0, position = -1, mode = -1, window = 0;
    float alpha = 0;
    bool decayed = false, sweep = false;
    bool operator==(const Key&) const = default;
  };
  void compute(rfa::Session& s, const Key& k);

  float alpha_ = 1.0f;
  int mode_ = 1;            // 0: the visible map's rows and keys; 1: the last `window_` rows and keys
  int window_ = 128;
  int every_ = 1;           // recompute at most every `every_` frames while streaming
  bool decayed_ = false;    // spectrum of A = Ahat E instead of Ahat
  bool sweep_curve_ = false;
  int frames_since_ = 0;
  Key key_;
  bool have_ = false;
  std::string error_;
  rfa::HeadDiagnostics last_;
  std::vector<std::pair<int, double>> erank_history_;  // (position, erank) for the current key sans position
  float screen_[4] = {0, 0, 0, 0};
};

}  // namespace viewer
