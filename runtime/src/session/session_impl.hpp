// The inside of an rfa::Session, shared by session.cpp (weights, caches, public API),
// session_step.cpp (inputs, recorded step plans, submission) and session_probes.cpp (attention
// maps, diagnostics, curves, pair readouts, heatmaps).
//
// A step runs as ONE submission: the host writes the step's small inputs (span {pos0, kv_len},
// timestamps, ids or values) into host-visible buffers of a frame slot, then submits a command
// buffer recorded once for that (positions per call, output mode) and replayed ever after. The
// kernels read the positions from the span buffer, so nothing in the recording depends on where
// the stream is. Results come back through a readback buffer filled by a copy in the same
// submission (only what the caller asked for). Two frame slots let a caller prepare step t + 1
// while the GPU runs step t.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "model/model.hpp"
#include "ops/linear.hpp"
#include "ops/rfa_attention.hpp"
#include "rfa/session.hpp"

namespace rfa {
namespace session_detail {

struct NormGpu {
  NormKind kind = NormKind::none;
  float eps = 1e-5f;
  gpu::Buffer weight, bias;
  bool has_bias = false;
};

struct LayerGpu {
  NormGpu norm1, norm2;
  ops::LinearGpu wq, wk, wv, wo, ffn1, ffn2;
  std::unique_ptr<ops::AttentionWeightsGpu> attn;
  ops::AttentionCache cache;
  bool outer_residual = true;
  bool has_ffn = false;
};

// What the host writes before a submission and reads after it, per frame slot.
struct FrameIO {
  gpu::Buffer span;     // {pos0, kv_len, 0, 0} uint32 (upload)
  gpu::Buffer times;    // [B, rows_per_row] (hi, lo) floats (upload)
  gpu::Buffer input;    // ids [B*n] uint32, or values [B*n*input_dim] floats (upload)
  gpu::Buffer output;   // what comes back (readback): outputs, or nothing
  // Generation (session_generate.cpp): the step's sampler parameters and u per row (upload), and
  // the sampled token ids that come back (readback), 4 bytes per row.
  gpu::Buffer sample_params, tokens;
};

// What a recorded step does besides the network: plain (outputs come back), or a generation step
// that samples the next token on the GPU, fed by ids from the host or by the previous step's
// sampled ids on the device (no host round trip between tokens).
enum class StepMode { plain, sample_host_fed, sample_gpu_fed };

// One recorded step: n positions per batch row, outputs of every position or only the last.
struct StepPlan {
  uint32_t n = 0;
  bool last_only = false;
  int frame = 0;
  StepMode mode = StepMode::plain;
  bool keep_outputs = true;  // sampling steps: also copy the logits back
  uint64_t last_use = 0;
  std::unique_ptr<gpu::Recorder> rec;
};

// Fixed-size host ring of the timestamps still in the caches (one per batch row), one entry longer
// than the device ring so that the newest evicted key's time is known (window_report).
struct TimeRing {
  std::vector<double> t;  // [capacity]
  double last = -1.0 / 0.0;
  void reset(size_t capacity) {
    t.assign(capacity, 0.0);
    last = -1.0 / 0.0;
  }
  double at(int p) const { return t[(size_t)p % t.size()]; }
  void put(int p, double v) {
    t[(size_t)p % t.size()] = v;
    last = v;
  }
};

}  // namespace session_detail

struct RFA_HIDDEN Session::Impl {
  // Every public call on the session (Session, Inspector, FrameScheduler) holds this lock, so a
  // session may be used from several threads one call at a time (docs/cpp-api.md, "Threads").
  // Recursive: generate's on_token runs under it and may call back into the session.
  mutable std::recursive_mutex mutex;
  std::unique_lock<std::recursive_mutex> lock() const { return std::unique_lock<std::recursive_mutex>(mutex); }
  Context* ctx = nullptr;
  gpu::Context* g = nullptr;
  std::shared_ptr<const Model> model;
  ModelInfo info;
  SessionOptions opts;
  int batch = 1;
  int capacity = 0;   // ring slots per batch row (= max_context without a window)
  int window = 0;     // 0: none; else each query sees its last `window` keys
  int max_chunk = 0;  // most positions per batch row one submission may add
  int filled = 0;
  bool last_only = false;
  int out_count = 0;
  // weights
  gpu::Buffer token_embedding;  // lm: [V, d_e]; also the tied LM head
  gpu::Buffer lm_bias;
  bool has_lm_bias = false;
  ops::LinearGpu signal_in, signal_out, backbone_in, backbone_out;
  session_detail::NormGpu final_norm;
  std::vector<session_detail::LayerGpu> layers;
  gpu::Buffer timestamps;  // ring [B, capacity] (hi, lo), shared by the layers
  std::vector<session_detail::TimeRing> host_t;  // [B]
  // scratch, sized for `scratch_rows` rows (B * positions per call)
  uint32_t scratch_rows = 0;
  gpu::Buffer ids, input, new_times, x, h, q, k, v, vnorm, att, ffn, out;
  gpu::Buffer sampled;  // [B] uint32: the token each row sampled last (generation)
  std::array<session_detail::FrameIO, 2> frames;
  std::vector<session_detail::StepPlan> plans;
  uint64_t plan_clock = 0;
  gpu::Recorder* last_rec = nullptr;  // the plan that ran last (timings)
  std::unique_ptr<gpu::Recorder> probe_rec;
  // An asynchronous frame: recordings queued between begin_frame() and end_frame(), submitted as
  // one batch; the step's outputs are copied out when the batch is done.
  bool in_frame = false;
  std::vector<gpu::Recorder*> frame_recs;
  std::unique_ptr<gpu::Batch> frame_batch;
  struct PendingOutputs {
    bool pending = false;
    int frame = 0, n = 0;
    gpu::Recorder* rec = nullptr;
  } frame_out;
  // The step of an open frame counts at once (the frame's maps and watched row read up to it); a
  // frame whose submission fails puts the stream back where it was before that step.
  struct FrameUndo {
    bool armed = false;
    int filled = 0;
    std::vector<session_detail::TimeRing> host_t;
  } frame_undo;
  void undo_frame_step();  // session_frames.cpp
  // watch_row(): a probe of one row recorded into the frame, read back when it is done.
  std::unique_ptr<gpu::Recorder> watch_rec;
  gpu::Buffer watch_ahat, watch_a, watch_diag, watch_out;
  WatchedRow watched, watch_pending;
  bool watch_queued = false;
  Status finish_frame();  // after the batch completed: outputs, timings
  Status settle_frame();  // waits for a frame batch in flight, then finish_frame()
  gpu::Buffer probe_out;  // readback of probes
  std::vector<float> outputs;
  int last_count = 0;
  double gpu_ms = 0, wall_ms = 0;
  uint64_t submits = 0, bytes_up = 0, bytes_down = 0, recordings = 0;

  Status init();
  // Checks a whole call's input (ids in range, finite values, timestamps finite and not
  // decreasing, sizes) before anything runs, and fills `times` [B*n] (positions when none given).
  Status validate(const int64_t* ids_in, const float* values, int n, const std::vector<double>& ts,
                  std::vector<double>* times) const;
  Status ensure_scratch(uint32_t rows);
  Status ensure_frame(int f, uint64_t out_bytes);
  Result<session_detail::StepPlan*> plan_for(uint32_t n, int frame,
                                             session_detail::StepMode mode = session_detail::StepMode::plain,
                                             bool keep_outputs = true);
  Status record_step(gpu::Recorder& R, uint32_t n, int frame, session_detail::StepMode mode, bool keep_outputs);
  Status ensure_sampling();  // the sampled-ids buffer and each frame's sampler buffers
  Status record_norm(gpu::Recorder& R, const session_detail::NormGpu& n, const gpu::Buffer& src, const gpu::Buffer& dst,
                     uint32_t rows, uint32_t dim);
  // One submission of n positions per batch row (n <= max_chunk; input validated).
  Status run_once(const int64_t* ids_in, const float* values, int n, const std::vector<double>& times);
  // Any number of positions: split into calls of at most max_chunk (or what one output buffer
  // holds); causal attention makes the pieces' results identical to one call's.
  Status run(const int64_t* ids_in, const float* values, int n, const std::vector<double>& ts);
  Status check_probe(int layer, int head, int b, int r0, int r1, int c0, int c1) const;
  // Runs one probe recording on the session's probe recorder: `record` fills `result` (device,
  // `floats` floats), which a copy in the same submission brings back. One submission per probe.
  using ProbeRecord = std::function<Status(gpu::Recorder&, gpu::Buffer& result)>;
  Result<std::vector<float>> run_probe(uint64_t floats, const ProbeRecord& record);
  int oldest() const { return filled > capacity ? filled - capacity : 0; }
};

}  // namespace rfa
