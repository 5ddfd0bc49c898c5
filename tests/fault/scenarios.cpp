#include "fault/scenarios.hpp"

#include <algorithm>

#include "rfa/environment.hpp"
#include "rfa/frames.hpp"
#include "rfa/inspect.hpp"
#include "test_support.hpp"

namespace rfa::test::sweep {
namespace {

std::string spiral_dir() { return source_dir() + "/models/spiral-filter"; }
std::string lm_dir() { return source_dir() + "/models/tiny-char-lm"; }

Status make_context(World& w) {
  auto c = Context::create(options(w));
  if (!c) return c.status();
  w.ctx = c.take();
  return Status::Ok();
}

Status load(World& w, const std::string& dir) {
  auto m = load_model_dir(dir);
  if (!m) return m.status();
  w.model = m.take();
  return Status::Ok();
}

Status make_session(World& w, int window) {
  SessionOptions o;
  o.window = window;
  o.max_context = 64;
  auto s = Session::create(*w.ctx, w.model, o);
  if (!s) return s.status();
  w.session = s.take();
  return Status::Ok();
}

// Feeds the spiral signal up to position `to`, `chunk` positions per call, from wherever the
// session is (a failed call leaves it where it was), keeping each position's outputs.
Status feed(World& w, int to, int chunk) {
  Session& S = *w.session;
  if ((int)w.by_position.size() < to) w.by_position.resize((size_t)to);
  while (S.position() < to) {
    const int p = S.position(), n = std::min(chunk, to - p);
    RFA_TRY(S.prefill_values(spiral_values(p, n), n, spiral_times(p, n)));
    const int dim = S.output_dim();
    for (int i = 0; i < n; ++i)
      w.by_position[(size_t)(p + i)].assign(S.outputs().begin() + (size_t)i * dim, S.outputs().begin() + (size_t)(i + 1) * dim);
  }
  return Status::Ok();
}

// A signal session that has streamed `filled` positions (the set-up's own outputs are not kept).
std::function<Status(World&)> streamed(int window, int filled) {
  return [=](World& w) -> Status {
    RFA_TRY(make_context(w));
    RFA_TRY(load(w, spiral_dir()));
    RFA_TRY(make_session(w, window));
    if (filled) RFA_TRY(feed(w, filled, filled));
    w.by_position.clear();
    return Status::Ok();
  };
}

void push(std::vector<float>& out, double v) { out.push_back((float)v); }

Status probes(World& w) {
  Session& S = *w.session;
  Inspector I(S);
  std::vector<float>& r = w.result;
  r.clear();
  auto a = I.attention(0, 0, 0, Inspector::kCached, Inspector::kCached, Inspector::kCached, Inspector::kCached, false);
  if (!a) return a.status();
  r.insert(r.end(), a->begin(), a->end());
  const double th[4] = {1, 4, 16, 64};
  auto rows = I.row_diagnostics(0, 1, 0, Inspector::kCached, Inspector::kCached, th);
  if (!rows) return rows.status();
  for (const RowDiagnostics& d : *rows) push(r, d.entropy), push(r, d.log_partition), push(r, d.mass_beyond[2]);
  auto pr = I.pair(1, 2, 0, S.position() - 1, S.position() - 3);
  if (!pr) return pr.status();
  push(r, pr->ahat), push(r, pr->logit), push(r, pr->precision);
  DiagnosticsRequest q;
  q.layer = 1, q.head = 3, q.r0 = -3, q.c0 = -6;
  q.sweep = {0.5, 2.0};
  auto hd = I.head_diagnostics(q);
  if (!hd) return hd.status();
  for (const QueryDiagnostics& d : hd->rows) push(r, d.entropy), push(r, d.log_partition), push(r, d.var_s);
  for (double s : hd->singular_values) push(r, s);
  auto wr = I.window_report(0, true);
  if (!wr) return wr.status();
  for (const WindowTruncation& t : *wr) push(r, t.edge_mass), push(r, t.decay_bound);
  auto cv = I.curves(0, 1, {0.0, 1.0, 2.5, 7.0});
  if (!cv) return cv.status();
  for (size_t k = 0; k < cv->lags.size(); ++k) push(r, cv->decay[k]), push(r, cv->precision[k]), push(r, cv->bias[k]);
  return Status::Ok();
}

// One frame as rfa-viewer makes it (viewer/app.cpp App::update): begin, a step (when `step`), the
// attention map, the watched row, end, wait. A call that fails inside the frame still ends it.
Status viewer_frame(World& w, bool step) {
  Session& S = *w.session;
  FrameScheduler F(S);
  RFA_TRY(F.begin_frame());
  const int p = S.position();
  Status s = step ? S.step_values(spiral_values(p, 1), spiral_times(p, 1)) : Status::Ok();
  const int last = S.position() - 1;
  if (s.ok()) {
    HeatmapRequest req;
    req.layer = 0, req.head = 1, req.r0 = std::max(0, last - 10), req.r1 = last + 1, req.c0 = req.r0, req.c1 = last + 1;
    s = Inspector(S).render_attention(*w.map, req);
  }
  const double th[4] = {1, 4, 16, 64};
  if (s.ok()) s = Inspector(S).watch_row(0, 1, 0, last, false, th);
  Status e = F.end_frame();
  if (e.ok()) e = F.wait_frame();
  RFA_TRY(e);
  // The frame ran: its step counts even when a map or the watched row failed (the app sees the
  // position advance and draws the step's outputs).
  if (step && S.position() == p + 1) {
    if ((int)w.by_position.size() <= p) w.by_position.resize((size_t)p + 1);
    w.by_position[(size_t)p] = S.outputs();
  }
  RFA_TRY(s);
  if (!step) w.result = Inspector(S).watched_row().weights;
  return Status::Ok();
}

Status viewer_frames(World& w) {
  if (!w.map) {
    auto m = Heatmap::create(*w.ctx, 24, 16);
    if (!m) return m.status();
    w.map = m.take();
  }
  while (w.session->position() < 14) RFA_TRY(viewer_frame(w, true));
  return viewer_frame(w, false);  // a paused viewer's frame: maps and the watched row only
}

std::vector<int64_t> prompt() {
  const std::string text = "The ";
  return std::vector<int64_t>(text.begin(), text.end());
}

Status generate(World& w, bool on_gpu) {
  GenerateOptions o;
  o.tokens = 6;
  o.sampler.temperature = 0.8;
  o.sampler.seed = 7;
  o.on_gpu = on_gpu;
  o.keep_outputs = true;
  auto g = w.session->generate(o);
  if (!g) return g.status();
  w.result.assign(g->tokens.begin(), g->tokens.end());
  w.result.insert(w.result.end(), g->outputs.begin(), g->outputs.end());
  return Status::Ok();
}

std::function<Status(World&)> generation_setup() {
  return [](World& w) -> Status {
    RFA_TRY(make_context(w));
    RFA_TRY(load(w, lm_dir()));
    RFA_TRY(make_session(w, 0));
    return w.session->prefill_tokens(prompt(), (int)prompt().size());
  };
}

// After a failed generation the stream holds what was fed before the failure: the app starts the
// reply again from its prompt.
std::function<Status(World&)> generation_again(bool on_gpu) {
  return [=](World& w) -> Status {
    w.session->reset();
    RFA_TRY(w.session->prefill_tokens(prompt(), (int)prompt().size()));
    return generate(w, on_gpu);
  };
}

// The C API: context, model, session (window 8), 12 positions in pieces of 5, every cached weight
// of one head. Each handle is made when missing, so a second attempt resumes.
Status c_status(rfa_status s) { return s == RFA_OK ? Status::Ok() : Status((Code)s, rfa_last_error()); }

Status c_api(World& w) {
  if (!w.c_ctx) {
    rfa_context_options o;
    rfa_context_options_default(&o);
    o.validation = validation_option();
    const std::string device = environment_variable("RFA_DEVICE");
    o.device = device.empty() ? nullptr : device.c_str();
    RFA_TRY(c_status(rfa_context_create_ex(&o, &w.c_ctx)));
  }
  if (!w.c_model) RFA_TRY(c_status(rfa_model_load(spiral_dir().c_str(), &w.c_model)));
  if (!w.c_session) {
    rfa_session_options so;
    rfa_session_options_default(&so);
    so.window = 8;
    RFA_TRY(c_status(rfa_session_create_ex(w.c_ctx, w.c_model, &so, &w.c_session)));
  }
  if (w.by_position.size() < 12) w.by_position.resize(12);
  while (rfa_session_position(w.c_session) < 12) {
    const int p = rfa_session_position(w.c_session), n = std::min(5, 12 - p);
    const std::vector<float> v = spiral_values(p, n);
    const std::vector<double> t = spiral_times(p, n);
    RFA_TRY(c_status(rfa_session_prefill_values(w.c_session, v.data(), n, t.data())));
    std::vector<float> out((size_t)n * 2);
    int count = 0;
    size_t floats = 0;
    RFA_TRY(c_status(rfa_session_outputs(w.c_session, out.data(), out.size(), &count, &floats)));
    for (int i = 0; i < n; ++i) w.by_position[(size_t)(p + i)].assign(out.begin() + 2 * i, out.begin() + 2 * (i + 1));
  }
  const int lo = rfa_session_oldest_position(w.c_session), hi = rfa_session_position(w.c_session);
  w.result.assign((size_t)(hi - lo) * (hi - lo), 0.f);
  return c_status(rfa_session_attention(w.c_session, 1, 2, 0, RFA_CACHED, RFA_CACHED, RFA_CACHED, RFA_CACHED, 0,
                                        w.result.data()));
}

std::vector<Status> c_refused(World& w) {
  std::vector<Status> out;
  if (w.c_session) {
    const std::vector<float> v = spiral_values(0, 1);
    out.push_back(c_status(rfa_session_prefill_values(w.c_session, v.data(), 1, nullptr)));
    if (rfa_session_position(w.c_session) > 0) {
      std::vector<float> a(4096);
      out.push_back(c_status(rfa_session_attention(w.c_session, 0, 0, 0, 0, 1, 0, 1, 0, a.data())));
    }
  }
  if (w.c_ctx && w.c_model) {
    rfa_session* s = nullptr;
    out.push_back(c_status(rfa_session_create(w.c_ctx, w.c_model, 1, 16, &s)));
    rfa_session_destroy(s);
  }
  return out;
}

}  // namespace

std::vector<Scenario> scenarios() {
  std::vector<Scenario> list;
  auto nothing = [](World&) { return Status::Ok(); };
  {
    Scenario s;
    s.name = "context create";
    s.setup = nothing;
    s.run = [](World& w) { return make_context(w); };
    s.verify = [](World& w) -> Status {  // the context made runs a session
      RFA_TRY(load(w, spiral_dir()));
      RFA_TRY(make_session(w, 0));
      return feed(w, 3, 3);
    };
    list.push_back(s);
  }
  {
    Scenario s;
    s.name = "model load";  // host only: no Vulkan call to fail
    s.setup = nothing;
    s.run = [](World& w) { return load(w, spiral_dir()); };
    list.push_back(s);
  }
  {
    Scenario s;
    s.name = "session create";
    s.setup = [](World& w) -> Status {
      RFA_TRY(make_context(w));
      return load(w, spiral_dir());
    };
    // The session, then one step through it: the session made must work.
    s.run = [](World& w) -> Status {
      if (!w.session) RFA_TRY(make_session(w, 0));
      return feed(w, 1, 1);
    };
    list.push_back(s);
  }
  {
    Scenario s;
    s.name = "prefill";
    s.setup = streamed(0, 0);
    s.run = [](World& w) { return feed(w, 37, 37); };
    list.push_back(s);
    s.name = "prefill (pooled, packed)";
    s.kernels.push_descriptors = false;  // descriptor sets from pools
    s.max_storage_buffers_per_stage = 4;  // every tensor in one arena (an Android baseline device)
    list.push_back(s);
  }
  {
    Scenario s;
    s.name = "stream past the window";
    s.setup = streamed(8, 20);  // the ring (8 + 8 - 1 slots) has wrapped
    s.run = [](World& w) { return feed(w, 26, 1); };
    list.push_back(s);
  }
  for (bool on_gpu : {true, false}) {
    Scenario s;
    s.name = on_gpu ? "generate" : "generate (host sampler)";
    s.setup = generation_setup();
    s.run = [=](World& w) { return generate(w, on_gpu); };
    s.again = generation_again(on_gpu);
    list.push_back(s);
  }
  {
    Scenario s;
    s.name = "probes and diagnostics";
    s.setup = streamed(8, 20);
    s.run = probes;
    list.push_back(s);
  }
  {
    Scenario s;
    s.name = "viewer frame";
    s.setup = streamed(8, 12);
    s.run = viewer_frames;
    list.push_back(s);
  }
  {
    Scenario s;
    s.name = "C API";
    s.setup = nothing;
    s.run = c_api;
    s.refused = c_refused;
    list.push_back(s);
  }
  return list;
}

}  // namespace rfa::test::sweep
