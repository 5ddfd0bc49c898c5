// Asynchronous frames: a viewer's loop around a session. After begin_frame(), one prefill/step call
// and any Inspector::render_attention() / watch_row() calls are recorded instead of run;
// end_frame() submits them all as ONE queue submission and returns at once (when it fails, nothing
// of the frame ran and position() is back where it was). frame_done() polls without blocking (it
// is true too when the frame failed; wait_frame() then returns why) and wait_frame() blocks; until the frame is done, outputs(), last_gpu_ms() and
// the heatmaps' timings describe the previous work, while position() already counts the frame's
// positions. begin_frame() waits for a frame still in flight; other probes may not be called
// between begin_frame() and end_frame() (they would run at once, ahead of the frame's step).
//
//   rfa::FrameScheduler frames(*session);
//   frames.begin_frame(); session->step_values(x); inspect.render_attention(map, view); frames.end_frame();
//   ... draw the previous frame ...;  if (frames.frame_done()) { ... }
#pragma once

#include "rfa/export.h"
#include "rfa/session.hpp"
#include "rfa/status.hpp"

namespace rfa {

class RFA_API FrameScheduler {
 public:
  // The session must outlive the scheduler; the frame state lives in the session.
  explicit FrameScheduler(Session& session) : session_(&session) {}
  Status begin_frame();
  Status end_frame();
  bool frame_done();
  Status wait_frame();
  Session& session() const { return *session_; }

 private:
  Session* session_;
};

}  // namespace rfa
