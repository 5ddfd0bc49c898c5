#include "app.hpp"

#include "rfa/sampler.hpp"
#include "rfa/frames.hpp"
#include "rfa/inspect.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "rfa/tokenizer.hpp"
#include "token_text.hpp"

namespace viewer {
namespace {

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += (char)c;
    else if (c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += (char)c;
  }
  return o + "\"";
}

}  // namespace

App::App(rfa::Context& ctx, Options opt) : ctx_(ctx), opt_(std::move(opt)) {
  layer_ = opt_.layer;
  head_ = opt_.head;
  std::snprintf(prompt_, sizeof prompt_, "%s", opt_.prompt.c_str());
  diag_.set_alpha((float)opt_.diagnostics_alpha);
  if (!opt_.model_dir.empty()) error_ = open_model(opt_.model_dir);
}

App::~App() = default;

bool App::is_lm() const { return model_ && info_.architecture == "lm"; }

rfa::AttentionVariant App::variant() const {
  return model_ ? rfa::layer_params(*model_, layer_).variant : rfa::AttentionVariant::rfa;
}

bool App::is_afa() const {
  const rfa::AttentionVariant v = variant();
  return v == rfa::AttentionVariant::afa || v == rfa::AttentionVariant::afa_full;
}

bool App::causal() const { return !model_ || rfa::layer_params(*model_, layer_).sw.causal; }

std::string App::open_model(const std::string& dir) {
  auto m = rfa::load_model_dir(dir);
  if (!m) return m.status().to_string();
  rfa::SessionOptions so;
  so.max_context = opt_.max_context;
  so.window = opt_.window;
  auto s = rfa::Session::create(ctx_, *m, so);
  if (!s) return s.status().to_string();
  model_ = m.take();
  session_ = s.take();
  info_ = rfa::model_info(*model_);
  heads_ = rfa::head_summaries(*model_);
  std::snprintf(model_path_, sizeof model_path_, "%s", dir.c_str());
  tokenizer_.reset();
  source_.reset();
  spiral_ = nullptr;
  if (is_lm()) {
    auto t = rfa::load_tokenizer(*model_);
    if (t) tokenizer_ = t.take();
  } else if (!opt_.npy.empty()) {
    auto npy = std::make_unique<NpySource>();
    std::string err;
    if (!npy->open(opt_.npy, info_.input_dim, &err)) return err;
    source_ = std::move(npy);
  } else {
    auto sp = std::make_unique<SpiralSource>();
    sp->sigma_m = opt_.noise;
    sp->interval = opt_.interval;
    sp->irregular = opt_.irregular;
    sp->seed = opt_.seed;
    sp->dims = info_.input_dim;
    sp->reset();
    spiral_ = sp.get();
    source_ = std::move(sp);
  }
  // Maps: one main map, one thumbnail per head of the layer.
  auto mp = rfa::Heatmap::create(ctx_, opt_.map_size, opt_.map_size);
  if (!mp) return mp.status().to_string();
  map_ = mp.take();
  thumbs_.clear();
  for (int h = 0; h < info_.heads; ++h) {
    auto t = rfa::Heatmap::create(ctx_, opt_.thumb_size, opt_.thumb_size);
    if (!t) return t.status().to_string();
    thumbs_.push_back(t.take());
  }
  clamp_selection();
  reset();
  layout_size_[0] = layout_size_[1] = 0;  // the new model's panels (a text model has no trajectory)
  model_extra_ = 0;
  return "";
}

void App::clamp_selection() {
  layer_ = std::clamp(layer_, 0, std::max(info_.layers - 1, 0));
  head_ = std::clamp(head_, 0, std::max(info_.heads - 1, 0));
}

void App::reset() {
  if (!session_) return;
  session_->reset();
  pending_from_ = -1;
  positions_.clear();
  positions_base_ = 0;
  if (source_) source_->reset();
  prompt_ids_.clear();
  if (is_lm() && tokenizer_) {
    for (int id : tokenizer_->encode(prompt_)) prompt_ids_.push_back(id);
  }
  if (is_lm() && prompt_ids_.empty()) prompt_ids_.push_back(0);
  pending_prompt_ = (int)prompt_ids_.size();
  selected_row_ = -1;
  maps_dirty_ = true;
  thumbs_at_ = -1;
}

int App::step(int n) {
  if (!session_) return 0;
  // This call's positions go to the session in ONE call (one submission): the same result as one
  // step each, since attention is causal.
  const int room = session_->window() > 0 ? n : session_->max_context() - session_->position();
  n = std::min(n, room);
  std::vector<Position> fresh;
  std::vector<int64_t> ids;
  std::vector<float> vals;
  std::vector<double> ts;
  for (int k = 0; k < n; ++k) {
    Position p;
    if (is_lm()) {
      int id;
      if (pending_prompt_ > 0) {
        id = prompt_ids_[prompt_ids_.size() - (size_t)pending_prompt_];
        --pending_prompt_;
      } else {
        // A generated token needs the logits of the position before it: the first of a call only,
        // and only once they have arrived.
        if (!opt_.generate || k > 0 || session_->outputs().empty()) break;
        const auto& lg = session_->outputs();
        const int V = session_->output_dim();
        const float* last = lg.data() + lg.size() - (size_t)V;
        rfa::SamplerOptions so;  // the runtime's sampler: argmax, or a seeded draw at a temperature
        so.temperature = temperature_;
        const double u = temperature_ > 0.0f ? std::generate_canonical<double, 53>(rng_) : 0.0;
        id = (int)rfa::Sampler::pick(last, V, so, u);
      }
      p.token = id;
      p.t = session_->position() + k;
      ids.push_back(id);
    } else {
      Sample s;
      if (!source_ || !source_->next(s)) break;
      p.t = s.t;
      p.input = s.values;
      p.has_truth = s.has_truth;
      p.truth[0] = s.truth[0];
      p.truth[1] = s.truth[1];
      p.kalman_next[0] = s.kalman_next[0];
      p.kalman_next[1] = s.kalman_next[1];
      vals.insert(vals.end(), s.values.begin(), s.values.end());
    }
    ts.push_back(p.t);
    fresh.push_back(std::move(p));
  }
  const int done = (int)fresh.size();
  if (done == 0) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  rfa::Status st = is_lm() ? session_->prefill_tokens(ids, done, ts) : session_->prefill_values(vals, done, ts);
  times_.inference_wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    status_ = st.to_string();
    playing_ = false;
    return 0;
  }
  pending_from_ = positions_base_ + (int)positions_.size();
  pending_n_ = done;
  for (auto& p : fresh) positions_.push_back(std::move(p));
  // A windowed stream runs forever: keep only what the session still holds (and the pending ones).
  while (positions_base_ < session_->oldest_position() && positions_base_ + 1 < pending_from_) {
    positions_.pop_front();
    ++positions_base_;
  }
  if (!framing_) harvest();  // a synchronous call: the outputs are here already
  times_.steps += done;
  maps_dirty_ = true;
  return done;
}

void App::harvest() {
  if (pending_from_ < 0) return;
  const auto& out = session_->outputs();
  const int V = session_->output_dim();
  if (!is_lm() && (int)out.size() >= pending_n_ * V)
    for (int k = 0; k < pending_n_; ++k)
      positions_[(size_t)(pending_from_ - positions_base_ + k)].prediction.assign(out.begin() + (size_t)k * V, out.begin() + (size_t)(k + 1) * V);
  times_.inference_gpu_ms += session_->last_gpu_ms();
  pending_from_ = -1;
}

int App::view_extent() const {
  // Rows appear as the stream advances inside a fixed frame, which grows once it is full. With a
  // window the frame stops growing at the ring and follows the stream (view_origin()).
  const int filled = position();
  int e = opt_.view_extent > 0 ? opt_.view_extent : 64;
  while (e < filled) e *= 2;
  const int cap = session_ ? session_->max_context() : 1;
  if (session_ && session_->window() > 0) return std::min(e, cap);
  return std::min(std::max(e, filled), std::max(cap, filled));
}

int App::view_origin() const {
  return session_ && session_->window() > 0 ? std::max(0, position() - view_extent()) : 0;
}

void App::update() {
  times_ = {};
  if (!session_) return;
  // One asynchronous frame: the step, the maps and the watched row go to the GPU as one
  // submission, and nothing here waits for it. The previous frame has finished by now (a whole
  // frame of drawing went by): its predictions and GPU times are collected first.
  rfa::Status st = rfa::FrameScheduler(*session_).begin_frame();
  if (!st.ok()) {
    status_ = st.to_string();
    return;
  }
  framing_ = true;
  if (playing_) {
    step_credit_ += opt_.steps_per_frame;
    int n = (int)step_credit_;
    step_credit_ -= n;
    if (n > 0 && step(n) == 0 && !is_lm()) playing_ = false;  // end of the file or the context
  }
  render_maps();
  const int filled = position();
  const int row = selected_row_ >= 0 && selected_row_ < filled ? selected_row_ : filled - 1;
  if (row >= 0) {
    const double th[4] = {1, 4, 16, 64};
    st = rfa::Inspector(*session_).watch_row(layer_, head_, 0, row, opt_.decayed, th);
    if (!st.ok()) status_ = st.to_string();
  }
  st = rfa::FrameScheduler(*session_).end_frame();
  framing_ = false;
  // Wait for the frame's one submission before the panels are drawn: the watched row, the
  // predictions and the GPU times are then this frame's, so every number shown belongs to the
  // position the stream has reached (the heatmaps would be current anyway: the draw follows them
  // on the same queue). What it costs: the host builds the panels after the GPU work instead of
  // beside it, about a millisecond a frame.
  if (st.ok()) st = rfa::FrameScheduler(*session_).wait_frame();
  if (!st.ok()) status_ = st.to_string();
  harvest();
  if (maps_in_flight_) {
    times_.probe_gpu_ms += map_->last_probe_ms();
    times_.colormap_gpu_ms += map_->last_colormap_ms();
    if (thumbs_in_flight_)
      for (auto& t : thumbs_) times_.probe_gpu_ms += t->last_probe_ms(), times_.colormap_gpu_ms += t->last_colormap_ms();
    maps_in_flight_ = thumbs_in_flight_ = false;
  }
  if (times_.steps || times_.maps) shown_ = times_;
  // The sliding window's bounds for the newest position (host work only; the regimes table shows them).
  window_report_.clear();
  if (session_->window() > 0 && position() > 0) {
    auto rep = rfa::Inspector(*session_).window_report(0, false);
    if (rep) window_report_ = rep.take();
  }
}

const Layout& App::layout(bool* force) {
  const ImVec2 d = ImGui::GetIO().DisplaySize;
  *force = d.x != layout_size_[0] || d.y != layout_size_[1];
  if (*force) {
    LayoutInputs in;
    in.signal = model_ && !is_lm();
    in.windowed = session_ && session_->window() > 0;
    in.heads = std::max(info_.heads, 1);
    in.afa = model_ && is_afa();
    in.table_rows = std::max((int)heads_.size(), 1);
    in.model_extra = model_extra_;
    layout_ = compute_layout(d.x, d.y, in);
    layout_size_[0] = d.x, layout_size_[1] = d.y;
  }
  return layout_;
}

void App::render_maps() {
  if (!session_ || !map_ || !maps_dirty_) return;
  maps_dirty_ = false;
  const auto t0 = std::chrono::steady_clock::now();
  struct Wall {  // adds the wall time of every map render (submission + wait included)
    FrameTimes& t;
    std::chrono::steady_clock::time_point t0;
    ~Wall() { t.maps_wall_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(); }
  } wall{times_, t0};
  const int E = view_extent();
  // Zoom and pan: the view is a window of E / zoom cells around the centre.
  const int span = std::max(4, (int)std::lround(E / zoom_));
  auto window = [&](float c) {
    int lo = (int)std::lround(c * E - span / 2.0);
    return std::clamp(lo, 0, std::max(E - span, 0));
  };
  const int o = view_origin();
  rfa::HeatmapRequest r;
  r.layer = layer_;
  r.head = head_;
  r.r0 = o + window(center_[1]);
  r.r1 = std::min(r.r0 + span, o + E);
  r.c0 = o + window(center_[0]);
  r.c1 = std::min(r.c0 + span, o + E);
  r.decayed = opt_.decayed;
  // The channel view belongs to AFA layers; other mechanisms have the ordinary weights only.
  r.channel = is_afa() ? std::clamp(opt_.channel, rfa::kReweighting, info_.head_dim - 1) : rfa::kAllChannels;
  r.log_scale = opt_.log_scale;
  r.vmax = (float)opt_.vmax;
  r.decades = (float)opt_.decades;
  req_ = r;
  rfa::Status st = rfa::Inspector(*session_).render_attention(*map_, r);
  if (!st.ok()) status_ = st.to_string();
  maps_in_flight_ = true;
  ++times_.maps;
  // Thumbnails cost a full probe each for ~100 pixels: at long context they follow the stream every
  // filled/64 positions (and at once on any other change), which bounds their amortized cost.
  const int filled = position();
  const bool stream_only = thumbs_at_ >= 0 && filled > thumbs_at_ && thumbs_[0]->last_request().layer == r.layer &&
                           thumbs_[0]->last_request().decayed == r.decayed &&
                           thumbs_[0]->last_request().log_scale == r.log_scale &&
                           thumbs_[0]->last_request().vmax == r.vmax && thumbs_[0]->last_request().decades == r.decades &&
                           thumbs_[0]->last_request().r1 == o + E && o == 0;
  if (stream_only && filled - thumbs_at_ < std::max(1, filled / 64)) return;
  thumbs_at_ = filled;
  for (int h = 0; h < (int)thumbs_.size(); ++h) {
    rfa::HeatmapRequest t = r;
    t.head = h;
    t.r0 = t.c0 = o;
    t.r1 = t.c1 = o + E;
    st = rfa::Inspector(*session_).render_attention(*thumbs_[(size_t)h], t);
    if (!st.ok()) status_ = st.to_string();
    ++times_.maps;
  }
  thumbs_in_flight_ = true;
}

std::string App::describe_input(int pos) const {
  if (pos < positions_base_ || pos >= positions_base_ + (int)positions_.size()) return "";
  const Position& p = positions_[(size_t)(pos - positions_base_)];
  char b[128];
  if (p.token >= 0) {
    std::snprintf(b, sizeof b, "\"%s\" (id %d)", token_label(tokenizer_.get(), p.token).c_str(), p.token);
    return b;
  }
  std::string out = "(";
  for (size_t c = 0; c < p.input.size() && c < 4; ++c) {
    std::snprintf(b, sizeof b, "%s%.3g", c ? ", " : "", p.input[c]);
    out += b;
  }
  return out + ")";
}

std::string App::dump_json() const {
  std::ostringstream o;
  o.precision(9);
  o << "{\n  \"position\": " << position() << ",\n  \"layer\": " << req_.layer << ", \"head\": " << req_.head
    << ",\n  \"view\": [" << req_.r0 << ", " << req_.r1 << ", " << req_.c0 << ", " << req_.c1 << "],\n"
    << "  \"decayed\": " << (req_.decayed ? "true" : "false") << ", \"log_scale\": " << (req_.log_scale ? "true" : "false")
    << ", \"vmax\": " << req_.vmax << ", \"decades\": " << req_.decades << ",\n  \"map_size\": [" << opt_.map_size << ", "
    << opt_.map_size << "],\n  \"map_screen\": [" << map_screen_[0] << ", " << map_screen_[1] << ", " << map_screen_[2]
    << ", " << map_screen_[3] << "],\n  \"regime_columns\": [";
  auto cols = regime_columns();
  for (size_t i = 0; i < cols.size(); ++i) o << (i ? ", " : "") << '"' << cols[i] << '"';
  o << "],\n  \"regimes\": [";
  for (size_t h = 0; h < heads_.size(); ++h) {
    auto cells = regime_cells(heads_[h], info_.head_dim);
    o << (h ? ",\n    [" : "\n    [");
    for (size_t i = 0; i < cells.size(); ++i) o << (i ? ", " : "") << '"' << cells[i] << '"';
    o << "]";
  }
  o << "\n  ],\n";
  // Text models: the map's token labels, the hovered cell and its readout (token_text.hpp).
  auto strings = [&](const std::vector<std::string>& v) {
    o << "[";
    for (size_t i = 0; i < v.size(); ++i) o << (i ? ", " : "") << json_string(v[i]);
    o << "]";
  };
  o << "  \"axis_labels\": {\"r0\": " << axis_.r0 << ", \"c0\": " << axis_.c0 << ", \"rows\": ";
  strings(axis_.rows);
  o << ", \"cols\": ";
  strings(axis_.cols);
  o << "},\n  \"hover\": ";
  if (hover_i_ >= 0) o << "[" << hover_i_ << ", " << hover_j_ << "]";
  else o << "null";
  o << ",\n  \"hover_readout\": ";
  strings(readout_);
  o << ",\n  \"status\": " << json_string(status_.empty() ? error_ : status_);
  o << ",\n  \"device\": " << json_string(ctx_.device_info().name) << ", \"kernel_refusals\": [";
  const std::vector<std::string> refused = ctx_.kernel_refusals();
  for (size_t k = 0; k < refused.size(); ++k) o << (k ? ", " : "") << json_string(refused[k]);
  o << "]";
  o << ",\n  \"channel\": " << req_.channel << ",\n  \"afa\": " << afa_.json();
  o << ",\n  \"diagnostics\": " << diag_.json() << ",\n  \"selected_row\": " << row_json_ << ",\n  "
    << audit_.json() << "\n}\n";
  return o.str();
}

}  // namespace viewer
