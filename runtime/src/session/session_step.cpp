// How a session runs its steps: validate the whole input first, write the step's inputs into a
// frame's host-visible buffers, submit the step plan recorded for that shape (recording it the
// first time), copy back only what the caller asked for. See session_impl.hpp for the design.
#include <chrono>
#include <cmath>
#include <cstring>

#include "gpu/pipeline.hpp"
#include "ops/embed.hpp"
#include "ops/norm.hpp"
#include "ops/sample.hpp"
#include "session/session_impl.hpp"

namespace rfa {

using session_detail::FrameIO;
using session_detail::LayerGpu;
using session_detail::NormGpu;
using session_detail::StepMode;
using session_detail::StepPlan;

namespace {
// Recorded shapes kept per session: a stream needs one, prefills of varying lengths a few more.
constexpr size_t kMaxPlans = 8;
}  // namespace

Status Session::Impl::validate(const int64_t* ids_in, const float* values, int n, const std::vector<double>& ts_given,
                               std::vector<double>* times) const {
  const Model& m = *model;
  if (n <= 0) return Status(Code::invalid_argument, "at least one position per batch row is needed");
  if (window == 0 && (int64_t)filled + n > capacity)
    return Status(Code::input_error, "sequence too long: " + std::to_string(filled) + " positions filled + " +
                                         std::to_string(n) + " new exceeds the session's max context of " +
                                         std::to_string(capacity) + " (a sliding window lets a stream go on)");
  if ((int64_t)filled + n >= (int64_t)1 << 31)
    return Status(Code::input_error, "sequence too long: positions past 2^31 - 1 in one session; reset() it");
  if (!m.layer(0).params.sw.causal && filled > 0)
    return Status(Code::input_error, "this model is non-causal (causal = false): every position attends to the "
                                     "future, so it cannot be streamed; prefill the whole sequence at once or reset()");
  const size_t rows = (size_t)batch * n;
  for (size_t r = 0; ids_in && r < rows; ++r)
    if (ids_in[r] < 0 || ids_in[r] >= m.vocab)
      return Status(Code::input_error, "token id " + std::to_string(ids_in[r]) + " at index " + std::to_string(r) +
                                           " is outside the vocabulary [0, " + std::to_string(m.vocab) + ")");
  for (size_t i = 0; values && i < rows * (size_t)info.input_dim; ++i)
    if (!std::isfinite(values[i])) return Status(Code::input_error, "input value " + std::to_string(i) + " is not finite");
  // t_equal models (the reference default) use positions as timestamps whatever is passed.
  const bool given = !ts_given.empty() && !m.t_equal;
  if (given && ts_given.size() != rows)
    return Status(Code::input_error, "timestamps: " + std::to_string(ts_given.size()) + " values for " +
                                         std::to_string(batch) + " rows x " + std::to_string(n) + " positions");
  times->resize(rows);
  for (int b = 0; b < batch; ++b) {
    double prev = filled > 0 ? host_t[(size_t)b].last : -INFINITY;
    for (int i = 0; i < n; ++i) {
      const double t = given ? ts_given[(size_t)b * n + i] : (double)(filled + i);
      if (!std::isfinite(t))
        return Status(Code::input_error, "timestamps: value at row " + std::to_string(b) + ", position " +
                                             std::to_string(filled + i) + " is not finite");
      if (t < prev)
        return Status(Code::input_error, "timestamps decrease at row " + std::to_string(b) + ", position " +
                                             std::to_string(filled + i) + ": " + std::to_string(t) + " after " +
                                             std::to_string(prev) + " (timestamps must be non-decreasing)");
      prev = t;
      (*times)[(size_t)b * n + i] = t;
    }
  }
  return Status::Ok();
}

Status Session::Impl::ensure_scratch(uint32_t rows) {
  if (rows <= scratch_rows) return Status::Ok();
  // Every recorded plan binds the old buffers: wait for them and drop them.
  for (auto& p : plans) RFA_TRY(p.rec->wait());
  plans.clear();
  last_rec = nullptr;
  const Model& m = *model;
  const uint64_t d_e = (uint64_t)m.d_e, c2 = 2ull * m.n_heads * m.head_dim;
  const uint64_t in_dim = (uint64_t)std::max(info.input_dim, 1);
  const uint64_t out_dim = (uint64_t)info.output_dim;
  const uint64_t out_rows = last_only ? (uint64_t)batch : rows;
  auto alloc = [&](gpu::Buffer& b, uint64_t floats, gpu::MemoryKind kind, const char* what) -> Status {
    b.release();
    auto r = g->allocator().allocate(std::max<uint64_t>(floats, 1) * 4, kind, what);
    if (!r) return r.status();
    b = r.take();
    return Status::Ok();
  };
  const auto dev = gpu::MemoryKind::device;
  RFA_TRY(alloc(x, rows * d_e, dev, "scratch x"));
  RFA_TRY(alloc(h, rows * d_e, dev, "scratch h"));
  RFA_TRY(alloc(q, rows * c2, dev, "scratch q"));
  RFA_TRY(alloc(k, rows * c2, dev, "scratch k"));
  RFA_TRY(alloc(v, rows * c2, dev, "scratch v"));
  RFA_TRY(alloc(vnorm, rows * c2, dev, "scratch v_norm"));
  RFA_TRY(alloc(att, rows * c2, dev, "scratch attention out"));
  RFA_TRY(alloc(ffn, rows * (uint64_t)std::max(m.hidden, 1), dev, "scratch ffn"));
  RFA_TRY(alloc(out, out_rows * out_dim, dev, "scratch output"));
  sampled.release();  // generation buffers follow the scratch (ensure_sampling)
  for (FrameIO& F : frames) {
    F.sample_params.release();
    F.tokens.release();
    // Frame buffers: the host writes span, times and input; it reads output.
    RFA_TRY(alloc(F.span, 4, gpu::MemoryKind::upload, "step span"));
    RFA_TRY(alloc(F.times, rows * 2, gpu::MemoryKind::upload, "step timestamps"));
    RFA_TRY(alloc(F.input, rows * (m.arch == Architecture::lm ? 1 : in_dim), gpu::MemoryKind::upload, "step input"));
    RFA_TRY(alloc(F.output, out_rows * out_dim, gpu::MemoryKind::readback, "step output"));
  }
  scratch_rows = rows;
  return Status::Ok();
}

Status Session::Impl::record_norm(gpu::Recorder& R, const NormGpu& n, const gpu::Buffer& src, const gpu::Buffer& dst,
                                  uint32_t rows, uint32_t dim) {
  if (n.kind == NormKind::none) {
    R.copy(src, dst, (VkDeviceSize)rows * dim * 4);
    return Status::Ok();
  }
  return ops::record_norm(*g, R, src, n.weight, n.has_bias ? &n.bias : nullptr, dst, rows, dim, n.eps,
                          n.kind == NormKind::rms_norm);
}

// The whole network for n positions per batch row, reading the step's inputs from frame `f` and
// leaving what comes back in its output buffer. Nothing here depends on the stream's position:
// the kernels read it from the frame's span buffer.
Status Session::Impl::record_step(gpu::Recorder& R, uint32_t n, int f, StepMode mode, bool keep_outputs) {
  const Model& m = *model;
  FrameIO& F = frames[(size_t)f];
  const uint32_t rows = (uint32_t)batch * n, d_e = (uint32_t)m.d_e;
  // Language models hand their token ids to the attention op (learned accumulated steps read them).
  const gpu::Buffer& ids_gpu = mode == StepMode::sample_gpu_fed ? sampled : F.input;
  const ops::AttentionSpan span{0, n, &F.span, m.arch == Architecture::lm ? &ids_gpu : nullptr};
  RFA_TRY(ops::record_timestamp_append(*g, R, F.times, timestamps, (uint32_t)batch, (uint32_t)capacity, span));
  // Input -> x [rows, d_e]
  if (m.arch == Architecture::lm) {
    // A generation step fed on the device reads the ids the previous step sampled.
    const gpu::Buffer& ids_in = mode == StepMode::sample_gpu_fed ? sampled : F.input;
    RFA_TRY(ops::record_embed(*g, R, ids_in, token_embedding, h, rows, d_e));
    RFA_TRY(ops::record_linear(*g, R, h, backbone_in, x, rows));
  } else if (m.arch == Architecture::signal) {
    RFA_TRY(ops::record_linear(*g, R, F.input, signal_in, h, rows));
    RFA_TRY(ops::record_linear(*g, R, h, backbone_in, x, rows));
  } else {
    R.copy(F.input, x, (VkDeviceSize)rows * d_e * 4);
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    LayerGpu& L = layers[l];
    const bool block = m.arch != Architecture::attention;
    const gpu::Buffer& a_in = block ? h : x;
    if (block) RFA_TRY(record_norm(R, L.norm1, x, h, rows, d_e));
    RFA_TRY(ops::record_linear(*g, R, a_in, L.wq, q, rows));
    RFA_TRY(ops::record_linear(*g, R, a_in, L.wk, k, rows));
    RFA_TRY(ops::record_linear(*g, R, a_in, L.wv, v, rows));
    RFA_TRY(ops::record_rfa_attention(*g, R, *L.attn, L.cache, timestamps, q, k, v, vnorm, att, span));
    if (!block) {
      RFA_TRY(ops::record_linear(*g, R, att, L.wo, h, rows));  // the layer's output, [rows, d_e]
      continue;
    }
    if (L.outer_residual) {
      ops::LinearOptions acc;
      acc.accumulate = true;  // x += W_o(att)
      RFA_TRY(ops::record_linear(*g, R, att, L.wo, x, rows, acc));
    }
    RFA_TRY(record_norm(R, L.norm2, x, h, rows, d_e));
    ops::LinearOptions relu;
    relu.relu = true;
    RFA_TRY(ops::record_linear(*g, R, h, L.ffn1, ffn, rows, relu));
    ops::LinearOptions acc;
    acc.accumulate = true;
    RFA_TRY(ops::record_linear(*g, R, ffn, L.ffn2, x, rows, acc));
  }
  const uint32_t out_dim = (uint32_t)info.output_dim;
  const uint32_t head_rows = last_only ? (uint32_t)batch : rows;
  if (m.arch == Architecture::attention) {
    if (!last_only) {
      R.copy(h, out, (VkDeviceSize)rows * d_e * 4);
    } else {
      for (int b = 0; b < batch; ++b)  // keep only each row's last position: [B, d_e]
        R.copy(h, out, (VkDeviceSize)d_e * 4, ((VkDeviceSize)b * n + n - 1) * d_e * 4, (VkDeviceSize)b * d_e * 4);
    }
  } else {
    if (last_only) {
      // Only each row's last position goes through the head: gather them into the first B rows.
      for (int b = 0; b < batch; ++b)
        R.copy(x, h, (VkDeviceSize)d_e * 4, ((VkDeviceSize)b * n + n - 1) * d_e * 4, (VkDeviceSize)b * d_e * 4);
      R.copy(h, x, (VkDeviceSize)batch * d_e * 4);
    }
    RFA_TRY(record_norm(R, final_norm, x, h, head_rows, d_e));
    RFA_TRY(ops::record_linear(*g, R, h, backbone_out, x, head_rows));
    if (m.arch == Architecture::signal) {
      RFA_TRY(ops::record_linear(*g, R, x, signal_out, out, head_rows));
    } else {
      // Tied LM head: logits = x E^T + b, E = token_embedding [V, d_e] is already [out, in].
      RFA_TRY(ops::record_linear(*g, R, x, token_embedding, has_lm_bias ? &lm_bias : nullptr, out,
                                 {head_rows, d_e, (uint32_t)m.vocab}));
    }
  }
  if (mode != StepMode::plain) {
    // The next token of every row, from each row's last logits, into `sampled` (and back).
    ops::SampleShape shape;
    shape.rows = (uint32_t)batch;
    shape.vocab = out_dim;
    shape.row_stride = last_only ? out_dim : (uint64_t)n * out_dim;
    shape.logits_offset = last_only ? 0 : (uint64_t)(n - 1) * out_dim;
    RFA_TRY(ops::record_sample(*g, R, out, F.sample_params, sampled, shape));
    R.copy(sampled, F.tokens, (VkDeviceSize)batch * 4);
    if (!keep_outputs) return Status::Ok();
  }
  // What comes back, in the same submission: a copy into the frame's host-cached buffer.
  R.copy(out, F.output, (VkDeviceSize)head_rows * out_dim * 4);
  return Status::Ok();
}

Result<StepPlan*> Session::Impl::plan_for(uint32_t n, int frame, StepMode mode, bool keep_outputs) {
  ++plan_clock;
  for (StepPlan& p : plans)
    if (p.n == n && p.frame == frame && p.last_only == last_only && p.mode == mode && p.keep_outputs == keep_outputs) {
      p.last_use = plan_clock;
      return &p;
    }
  if (plans.size() >= kMaxPlans) {  // evict the least recently used shape
    auto lru = std::min_element(plans.begin(), plans.end(),
                                [](const StepPlan& a, const StepPlan& b) { return a.last_use < b.last_use; });
    RFA_TRY(lru->rec->wait());
    if (last_rec == lru->rec.get()) last_rec = nullptr;
    plans.erase(lru);
  }
  StepPlan p;
  p.n = n;
  p.frame = frame;
  p.last_only = last_only;
  p.mode = mode;
  p.keep_outputs = keep_outputs;
  p.last_use = plan_clock;
  p.rec = std::make_unique<gpu::Recorder>(*g, opts.profile ? gpu::GpuTiming::per_dispatch : gpu::GpuTiming::total);
  RFA_TRY(p.rec->begin(/*reusable=*/true));
  Status s = record_step(*p.rec, n, frame, mode, keep_outputs);
  Status e = p.rec->end();
  RFA_TRY(s);
  RFA_TRY(e);
  ++recordings;
  plans.push_back(std::move(p));
  return &plans.back();
}

Status Session::Impl::run_once(const int64_t* ids_in, const float* values, int n, const std::vector<double>& times) {
  const Model& m = *model;
  const uint32_t rows = (uint32_t)(batch * n);
  RFA_TRY(ensure_scratch(rows));
  const int f = 0;
  FrameIO& F = frames[(size_t)f];
  auto plan = plan_for((uint32_t)n, f);
  if (!plan) return plan.status();
  gpu::Recorder& R = *(*plan)->rec;
  RFA_TRY(R.wait());  // (no-op after settle_frame: nothing of this session is in flight)
  // The step's inputs, straight into host-visible memory: no staging, no extra submission.
  const uint32_t span[4] = {(uint32_t)filled, (uint32_t)(filled + n), 0, 0};
  std::memcpy(F.span.mapped, span, sizeof(span));
  float* tp = reinterpret_cast<float*>(F.times.mapped);
  for (uint32_t r = 0; r < rows; ++r) ops::split_timestamp(times[r], &tp[2 * r], &tp[2 * r + 1]);
  size_t in_bytes = 0;
  if (m.arch == Architecture::lm) {
    uint32_t* ip = reinterpret_cast<uint32_t*>(F.input.mapped);
    for (uint32_t r = 0; r < rows; ++r) ip[r] = (uint32_t)ids_in[r];
    in_bytes = rows * 4;
  } else {
    in_bytes = (size_t)rows * info.input_dim * 4;
    std::memcpy(F.input.mapped, values, in_bytes);
  }
  bytes_up += sizeof(span) + (size_t)rows * 8 + in_bytes;
  if (in_frame) {
    frame_out = {true, f, n, &R};
    frame_undo = {true, filled, host_t};  // end_frame() puts these back if the frame is not submitted
    frame_recs.push_back(&R);             // submitted with the frame's maps by end_frame()
  } else {
    // A step that fails leaves the stream where it was: the position does not advance, and the
    // same call may be made again (the step rewrites the same cache slots).
    Status s = R.submit();
    if (s.ok()) {
      ++submits;
      s = R.wait();
    }
    RFA_TRY(s);
    frame_out = {true, f, n, &R};
    RFA_TRY(finish_frame());
  }
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < n; ++i) host_t[(size_t)b].put(filled + i, times[(size_t)b * n + i]);
  filled += n;
  for (auto& L : layers) L.cache.filled = (uint32_t)filled;
  return Status::Ok();
}

Status Session::Impl::settle_frame() {
  if (!frame_batch || !frame_batch->in_flight()) return finish_frame();
  RFA_TRY(frame_batch->wait());
  ++submits;
  return finish_frame();
}

// The step's results, once its submission has completed: outputs from the frame's readback.
Status Session::Impl::finish_frame() {
  if (watch_queued) {
    watch_queued = false;
    watched = watch_pending;
    const size_t cols = (size_t)(watched.row - watched.first_key + 1);
    const float* p = reinterpret_cast<const float*>(watch_out.mapped);
    watched.weights.assign(p, p + cols);
    const float* d = p + cols;
    watched.diagnostics.entropy = d[0];
    watched.diagnostics.log_partition = d[1];
    watched.diagnostics.max_weight = d[2];
    watched.diagnostics.expected_lag = d[3];
    for (int k = 0; k < 4; ++k) watched.diagnostics.mass_beyond[k] = d[4 + k];
    watched.valid = true;
    bytes_down += (cols + 8) * 4;
  }
  if (!frame_out.pending) return Status::Ok();
  frame_out.pending = false;
  gpu::Recorder& R = *frame_out.rec;
  last_rec = &R;
  gpu_ms = R.gpu_ms_total();
  const int n = frame_out.n;
  const int out_rows = last_only ? batch : batch * n;
  const size_t out_floats = (size_t)out_rows * info.output_dim;
  outputs.resize(out_floats);
  std::memcpy(outputs.data(), frames[(size_t)frame_out.frame].output.mapped, out_floats * 4);
  bytes_down += out_floats * 4;
  last_count = n;
  out_count = last_only ? 1 : n;
  return Status::Ok();
}

Status Session::Impl::run(const int64_t* ids_in, const float* values, int n, const std::vector<double>& ts) {
  const auto t0 = std::chrono::steady_clock::now();
  RFA_TRY(g->usable());
  // A frame still in flight reads the frame buffers this call is about to write.
  if (!in_frame) RFA_TRY(settle_frame());
  if (in_frame && frame_out.pending)
    return Status(Code::invalid_argument, "one prefill/step per frame: feed the frame's positions in one call");
  std::vector<double> times;
  RFA_TRY(validate(ids_in, values, n, ts, &times));  // the whole input, before the first piece runs
  // Pieces: at most max_chunk positions, and no more outputs than one storage buffer holds.
  uint64_t limit = std::min<uint64_t>(g->caps().max_storage_buffer_range, 256ull << 20);
  if (opts.max_output_bytes) limit = std::min(limit, opts.max_output_bytes);
  const uint64_t per_pos = (uint64_t)batch * (uint64_t)info.output_dim * 4;
  int chunk = max_chunk;
  if (!last_only) chunk = (int)std::min<uint64_t>((uint64_t)chunk, std::max<uint64_t>(1, limit / std::max<uint64_t>(per_pos, 1)));
  // A non-causal model cannot be split: every position sees the whole sequence.
  if (n <= chunk || !model->layer(0).params.sw.causal) {
    RFA_TRY(run_once(ids_in, values, n, times));
  } else if (in_frame) {
    return Status(Code::invalid_argument, "a frame's step takes at most " + std::to_string(chunk) +
                                              " positions per batch row; " + std::to_string(n) + " given");
  } else {
    const int d = std::max(info.input_dim, 1);
    std::vector<std::vector<float>> per_row((size_t)batch);
    for (int p0 = 0; p0 < n; p0 += chunk) {
      const int c = std::min(chunk, n - p0);
      std::vector<int64_t> ids;
      std::vector<float> vals;
      std::vector<double> t;
      for (int b = 0; b < batch; ++b) {
        if (ids_in) ids.insert(ids.end(), ids_in + (size_t)b * n + p0, ids_in + (size_t)b * n + p0 + c);
        if (values) vals.insert(vals.end(), values + ((size_t)b * n + p0) * d, values + ((size_t)b * n + p0 + c) * d);
        t.insert(t.end(), times.begin() + (size_t)b * n + p0, times.begin() + (size_t)b * n + p0 + c);
      }
      RFA_TRY(run_once(ids_in ? ids.data() : nullptr, values ? vals.data() : nullptr, c, t));
      if (!last_only)
        for (int b = 0; b < batch; ++b)
          per_row[(size_t)b].insert(per_row[(size_t)b].end(), outputs.begin() + (size_t)b * c * info.output_dim,
                                    outputs.begin() + (size_t)(b + 1) * c * info.output_dim);
    }
    if (!last_only) {
      outputs.clear();
      for (auto& r : per_row) outputs.insert(outputs.end(), r.begin(), r.end());
      out_count = n;
    }
    last_count = n;
  }
  wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

}  // namespace rfa
