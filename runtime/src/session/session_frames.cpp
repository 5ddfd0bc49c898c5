// Frame scheduling (rfa/frames.hpp): a frame's step and probes recorded into one submission, which
// is polled or waited on while the app draws the previous frame. The frame's state lives in the
// session (Session::Impl::in_frame, frame_recs, frame_batch); settle_frame() folds a finished
// frame's results (outputs, timings, the watched row) back into it.
#include "rfa/frames.hpp"

#include "gpu/recorder.hpp"
#include "session/session_impl.hpp"

namespace rfa {

Status FrameScheduler::begin_frame() {
  Session::Impl& I = *session_->impl_;
  if (I.in_frame) return Status(Code::invalid_argument, "begin_frame: a frame is already open; call end_frame() first");
  RFA_TRY(I.settle_frame());
  if (!I.frame_batch) I.frame_batch = std::make_unique<gpu::Batch>(*I.g);
  I.frame_recs.clear();
  I.in_frame = true;
  return Status::Ok();
}

Status FrameScheduler::end_frame() {
  Session::Impl& I = *session_->impl_;
  if (!I.in_frame) return Status(Code::invalid_argument, "end_frame without begin_frame");
  I.in_frame = false;
  Status s = I.frame_batch->submit(I.frame_recs);
  I.frame_recs.clear();
  return s;
}

bool FrameScheduler::frame_done() {
  Session::Impl& I = *session_->impl_;
  if (I.in_frame) return false;
  if (I.frame_batch && I.frame_batch->in_flight() && !I.frame_batch->done()) return false;
  return I.settle_frame().ok();
}

Status FrameScheduler::wait_frame() {
  Session::Impl& I = *session_->impl_;
  if (I.in_frame) return Status(Code::invalid_argument, "wait_frame inside an open frame; call end_frame() first");
  return I.settle_frame();
}

}  // namespace rfa
