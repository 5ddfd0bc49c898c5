// Frame scheduling (rfa/frames.hpp): a frame's step and probes recorded into one submission, which
// is polled or waited on while the app draws the previous frame. The frame's state lives in the
// session (Session::Impl::in_frame, frame_recs, frame_batch); settle_frame() folds a finished
// frame's results (outputs, timings, the watched row) back into it.
#include "rfa/frames.hpp"

#include "gpu/recorder.hpp"
#include "session/session_impl.hpp"

namespace rfa {

Status FrameScheduler::begin_frame() {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (I.in_frame) return Status(Code::invalid_argument, "begin_frame: a frame is already open; call end_frame() first");
  RFA_TRY(I.settle_frame());
  if (!I.frame_batch) I.frame_batch = std::make_unique<gpu::Batch>(*I.g);
  I.frame_recs.clear();
  I.frame_undo.armed = false;
  I.in_frame = true;
  return Status::Ok();
}

void Session::Impl::undo_frame_step() {
  // Nothing of the frame reached the GPU: its step's position, timestamps and outputs are undone,
  // and its watched row is not waited for.
  if (frame_undo.armed) {
    filled = frame_undo.filled;
    host_t = std::move(frame_undo.host_t);
    for (auto& L : layers) L.cache.filled = (uint32_t)filled;
  }
  frame_undo = {};
  frame_out.pending = false;
  watch_queued = false;
}

Status FrameScheduler::end_frame() {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (!I.in_frame) return Status(Code::invalid_argument, "end_frame without begin_frame");
  I.in_frame = false;
  Status s = I.frame_batch->submit(I.frame_recs);
  I.frame_recs.clear();
  if (!s.ok()) I.undo_frame_step();
  I.frame_undo = {};
  return s;
}

// True when the frame has completed, and also when it failed: wait_frame() then says why (a frame
// is never polled for ever).
bool FrameScheduler::frame_done() {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (I.in_frame) return false;
  if (I.frame_batch && I.frame_batch->in_flight() && !I.frame_batch->done()) return false;
  I.settle_frame();
  return true;
}

Status FrameScheduler::wait_frame() {
  const auto held = session_->impl_->lock();
  Session::Impl& I = *session_->impl_;
  if (I.in_frame) return Status(Code::invalid_argument, "wait_frame inside an open frame; call end_frame() first");
  return I.settle_frame();
}

}  // namespace rfa
