// The viewer's state and logic, independent of the window system: a model and a session on the
// shared device, the input stream (spiral, .npy or tokens), the heatmaps made on the GPU, and
// what the panels show. panels.cpp draws it with Dear ImGui.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "image_quad.hpp"
#include "layout.hpp"
#include "panel_afa.hpp"
#include "panel_diagnostics.hpp"
#include "rfa/heatmap.hpp"
#include "rfa/session.hpp"
#include "sources.hpp"
#include "token_text.hpp"

namespace rfa { class Tokenizer; }

namespace viewer {

struct Options {
  std::string model_dir, npy, prompt, screenshot, dump_json;
  bool headless = false, print_timings = false, log_scale = true, decayed = false, irregular = false;
  bool generate = true;  // lm: keep generating after the prompt
  int layer = 0, head = 0, steps = 0, frames = -1, width = 1600, height = 1000;
  int max_context = 1024, window = 0, view_extent = 0, map_size = 512, thumb_size = 96;
  double steps_per_frame = 1.0, noise = 1.0, interval = 0.1, vmax = 1.0, decades = 3.0;
  uint64_t seed = 2026;
  double diagnostics_alpha = 1.0;  // the tomography panel's starting temperature
  int hover_i = -1, hover_j = -1;  // --hover I,J: hold the mouse over map cell (I, J) (scripted screenshots)
  int channel = -1;  // --channel: an AFA layer's map view (rfa::kAllChannels, kReweighting or a channel)
};

// One streamed position, for the readouts and the trajectory panel.
struct Position {
  double t = 0;
  std::vector<float> input;  // signal values
  int token = -1;            // lm token id
  bool has_truth = false;
  double truth[2] = {0, 0}, kalman_next[2] = {0, 0};
  std::vector<float> prediction;  // the model's output at this position (next-step prediction)
};

// This frame's host work and GPU times (update() waits for the frame's submission before the panels
// are drawn, so every number shown belongs to the position the stream has reached).
struct FrameTimes {
  double inference_gpu_ms = 0, probe_gpu_ms = 0, colormap_gpu_ms = 0, inference_wall_ms = 0, maps_wall_ms = 0;
  int steps = 0, maps = 0;
};

class App {
 public:
  App(rfa::Context& ctx, Options opt);
  ~App();
  // Loads a model folder and starts a fresh session; "" on success, else the error.
  std::string open_model(const std::string& dir);
  // Streams n positions (fewer at the end of a file or the context); returns how many went in.
  int step(int n);
  void reset();
  // Once per frame: advances the stream when playing, then re-renders the maps that changed.
  void update();
  // Draws every panel (panels.cpp).
  void draw(ImageQuads& quads);
  // The regimes table as text, row per head, in column order (panels.cpp); tests read it back.
  static std::vector<std::string> regime_columns();
  static std::vector<std::string> regime_cells(const rfa::HeadSummary& h, int complex_dims);
  std::string dump_json() const;

  const Options& options() const { return opt_; }
  const FrameTimes& frame_times() const { return times_; }
  const FrameTimes& shown_times() const { return shown_; }
  int position() const { return session_ ? session_->position() : 0; }
  const std::string& error() const { return error_; }

 private:
  friend struct Panels;
  bool is_lm() const;
  rfa::AttentionVariant variant() const;  // the mechanism of the selected layer
  bool causal() const;                    // of the selected layer
  int view_extent() const;
  int view_origin() const;  // the first position the map frame shows
  void clamp_selection();
  std::string describe_input(int pos) const;
  void render_maps();
  void harvest();  // the finished call's predictions and GPU time
  // The panels' places for this display size (layout.hpp); `force` re-applies them (first frame, resize).
  const Layout& layout(bool* force);

  rfa::Context& ctx_;
  Options opt_;
  std::shared_ptr<const rfa::Model> model_;
  rfa::ModelInfo info_;
  std::vector<rfa::HeadSummary> heads_;
  std::unique_ptr<rfa::Session> session_;
  std::unique_ptr<rfa::Tokenizer> tokenizer_;
  std::unique_ptr<Source> source_;
  SpiralSource* spiral_ = nullptr;
  // The streamed positions the panels can still show: all of them without a window; with one,
  // those still in the session's ring (positions_base_ is the position of positions_[0]).
  std::deque<Position> positions_;
  int positions_base_ = 0;
  std::string error_, status_;
  // controls
  bool playing_ = true;
  double step_credit_ = 0;
  int layer_ = 0, head_ = 0, selected_row_ = -1;  // -1: follow the newest row
  float zoom_ = 1.0f, center_[2] = {0.5f, 0.5f};  // view as fractions of the extent
  char model_path_[512] = {0};
  char prompt_[1024] = {0};
  int pending_prompt_ = 0;  // tokens of the prompt not yet fed
  std::vector<int> prompt_ids_;
  float temperature_ = 0.0f;
  // maps
  std::unique_ptr<rfa::Heatmap> map_;
  std::vector<std::unique_ptr<rfa::Heatmap>> thumbs_;
  rfa::HeatmapRequest req_;
  bool maps_dirty_ = true;
  int thumbs_at_ = -1;  // position of the last thumbnail render
  float map_screen_[4] = {0, 0, 0, 0};  // where the main map was drawn (x0, y0, x1, y1)
  FrameTimes times_, shown_;  // this frame's; the last frame that did work (for the panel)
  bool framing_ = false;      // inside update()'s asynchronous frame
  int pending_from_ = -1, pending_n_ = 0;  // positions whose outputs arrive with the frame
  bool maps_in_flight_ = false, thumbs_in_flight_ = false;
  std::vector<rfa::WindowTruncation> edge_mass_;  // the last measured window report
  std::vector<rfa::WindowTruncation> window_report_;  // this frame's bounds (host only; empty without a window)
  // text models (token_text.hpp): per streamed position, its axis label and its piece of text
  std::vector<int> label_ids_;
  std::vector<std::string> labels_, pieces_;
  AxisLabels axis_;                  // the labels drawn on the map this frame
  int hover_i_ = -1, hover_j_ = -1;  // the map cell under the mouse (last frame), -1: none
  std::vector<std::string> readout_; // the hover readout's lines (last frame)
  std::mt19937_64 rng_{7};  // the draws of the LM sampler (rfa::Sampler::pick)
  DiagnosticsPanel diag_;  // the attention tomography panel (panel_diagnostics.cpp)
  AfaPanel afa_;           // the AFA filter panel (panel_afa.cpp)
  bool is_afa() const;     // the selected layer is AFA (either form)
  Layout layout_;
  float layout_size_[2] = {0, 0};  // the display size the layout was made for
  float model_extra_ = 0;          // the controls panel's missing room, measured (layout.hpp)
  PanelAudit audit_;               // how every panel was drawn this frame (--dump-json "panels")
  // The selected query row panel as drawn (--dump-json "selected_row"): row, whether it is the
  // newest, and its diagnostics.
  std::string row_json_ = "null";
};

}  // namespace viewer
