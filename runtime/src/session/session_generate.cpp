// Generation: sample a token per batch row, feed it, repeat. On the GPU each step samples its own
// next token into a device buffer that the following step's embedding reads, so the host never
// sits between two tokens: it writes the next step's small inputs (span, timestamps, the seeded
// u per row) into the other frame while the GPU runs this one, and reads back 4 bytes per row.
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>

#include "ops/sample.hpp"
#include "session/session_impl.hpp"

namespace rfa {

using session_detail::FrameIO;
using session_detail::StepMode;
using session_detail::StepPlan;

Status Session::Impl::ensure_sampling() {
  if (sampled.valid()) return Status::Ok();
  auto s = g->allocator().allocate((uint64_t)batch * 4, gpu::MemoryKind::device, "sampled tokens");
  if (!s) return s.status();
  sampled = s.take();
  for (FrameIO& F : frames) {
    auto p = g->allocator().allocate(ops::sample_params_bytes((uint32_t)batch), gpu::MemoryKind::upload, "sampler params");
    if (!p) return p.status();
    F.sample_params = p.take();
    auto t = g->allocator().allocate((uint64_t)batch * 4, gpu::MemoryKind::readback, "sampled tokens readback");
    if (!t) return t.status();
    F.tokens = t.take();
  }
  return Status::Ok();
}

Result<Generation> Session::generate(const GenerateOptions& o) {
  const auto held = impl_->lock();
  Impl& I = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  const Model& m = *I.model;
  if (m.arch != Architecture::lm) return Status(Code::input_error, "generate: this model takes values, not tokens");
  if (o.tokens < 1) return Status(Code::invalid_argument, "generate: tokens must be >= 1");
  if (I.in_frame) return Status(Code::invalid_argument, "generate inside an open frame");
  RFA_TRY(I.settle_frame());
  if (I.filled == 0 || I.outputs.empty())
    return Status(Code::invalid_argument, "generate: feed a prompt first (the first token comes from its last logits)");
  const int B = I.batch, V = I.info.output_dim, fed = o.tokens - 1;
  if (I.window == 0 && (int64_t)I.filled + fed > I.capacity)
    return Status(Code::input_error, "generate: " + std::to_string(I.filled) + " positions filled + " +
                                         std::to_string(fed) + " generated exceeds the session's max context of " +
                                         std::to_string(I.capacity));
  // Generated positions are timed by their index (as step_tokens without timestamps does).
  for (int b = 0; b < B && !m.t_equal; ++b)
    if (I.host_t[(size_t)b].last > (double)I.filled)
      return Status(Code::input_error, "generate: generated tokens are timed by their position, but row " +
                                           std::to_string(b) + "'s last timestamp " +
                                           std::to_string(I.host_t[(size_t)b].last) + " is later");

  Generation gen;
  std::vector<std::vector<int64_t>> rows((size_t)B);
  std::vector<std::vector<float>> logits((size_t)B);
  Sampler sampler(o.sampler);
  auto emit = [&](int index, const std::vector<int64_t>& next) {
    for (int b = 0; b < B; ++b) rows[(size_t)b].push_back(next[(size_t)b]);
    if (o.on_token) o.on_token(index, next);
  };
  // Token 0 from the logits already read back: the host sampler (the GPU kernel's twin).
  std::vector<int64_t> next((size_t)B);
  const int c = I.out_count;
  for (int b = 0; b < B; ++b) next[(size_t)b] = sampler.next(&I.outputs[((size_t)b * c + c - 1) * V], V);
  emit(0, next);

  if (fed > 0 && !o.on_gpu) {
    for (int k = 1; k <= fed; ++k) {  // the twin's loop: read the logits back, sample on the host
      RFA_TRY(step_tokens(next));
      gen.gpu_ms += I.gpu_ms;
      const int cc = I.out_count;
      for (int b = 0; b < B; ++b) {
        const float* last = &I.outputs[((size_t)b * cc + cc - 1) * V];
        if (o.keep_outputs) logits[(size_t)b].insert(logits[(size_t)b].end(), last, last + V);
        next[(size_t)b] = sampler.next(last, V);
      }
      emit(k, next);
    }
  } else if (fed > 0) {
    RFA_TRY(I.ensure_scratch((uint32_t)B));
    RFA_TRY(I.ensure_sampling());
    // The three recordings, made before anything is in flight (making one may evict another).
    gpu::Recorder* host_fed = nullptr;
    gpu::Recorder* gpu_fed[2] = {nullptr, nullptr};
    for (int f = 0; f < 2; ++f) {
      auto p = I.plan_for(1, f, StepMode::sample_gpu_fed, o.keep_outputs);
      if (!p) return p.status();
    }
    auto hp = I.plan_for(1, 1, StepMode::sample_host_fed, o.keep_outputs);
    if (!hp) return hp.status();
    for (StepPlan& p : I.plans) {
      if (p.n != 1 || p.keep_outputs != o.keep_outputs || p.last_only != I.last_only) continue;
      if (p.mode == StepMode::sample_host_fed && p.frame == 1) host_fed = p.rec.get();
      if (p.mode == StepMode::sample_gpu_fed) gpu_fed[p.frame] = p.rec.get();
    }
    if (!host_fed || !gpu_fed[0] || !gpu_fed[1])
      return Status(Code::device_error, "generate: the step recordings were evicted while being made");

    struct InFlight {
      int index, frame;
      gpu::Recorder* rec;
    };
    std::deque<InFlight> flight;
    // On a failure, the steps still in flight are waited for before returning: the next call
    // writes the frames they read. (The positions they fed stay counted: position() says where
    // the stream is, and their tokens are lost with the failed call.)
    struct Settle {
      std::deque<InFlight>& f;
      ~Settle() {
        for (InFlight& e : f) e.rec->wait();
      }
    } settle{flight};
    auto harvest = [&]() -> Status {  // the oldest step in flight: its tokens (and logits)
      InFlight e = flight.front();
      flight.pop_front();
      RFA_TRY(e.rec->wait());
      gen.gpu_ms += e.rec->gpu_ms_total();
      const FrameIO& F = I.frames[(size_t)e.frame];
      const uint32_t* ids = reinterpret_cast<const uint32_t*>(F.tokens.mapped);
      std::vector<int64_t> got((size_t)B);
      for (int b = 0; b < B; ++b) got[(size_t)b] = ids[b];
      I.bytes_down += (uint64_t)B * 4;
      if (o.keep_outputs) {
        const float* lg = reinterpret_cast<const float*>(F.output.mapped);
        for (int b = 0; b < B; ++b) logits[(size_t)b].insert(logits[(size_t)b].end(), lg + (size_t)b * V, lg + (size_t)(b + 1) * V);
        I.bytes_down += (uint64_t)B * V * 4;
      }
      emit(e.index, got);
      I.last_rec = e.rec;
      return Status::Ok();
    };
    std::vector<double> u((size_t)B);
    for (int k = 1; k <= fed; ++k) {  // step k feeds token k - 1 and samples token k
      const int f = k % 2;
      if (flight.size() == 2) RFA_TRY(harvest());  // frees frame f (step k - 2 used it)
      FrameIO& F = I.frames[(size_t)f];
      const uint32_t span[4] = {(uint32_t)I.filled, (uint32_t)I.filled + 1, 0, 0};
      std::memcpy(F.span.mapped, span, sizeof(span));
      float* tp = reinterpret_cast<float*>(F.times.mapped);
      for (int b = 0; b < B; ++b) ops::split_timestamp((double)I.filled, &tp[2 * b], &tp[2 * b + 1]);
      if (k == 1) {
        uint32_t* ip = reinterpret_cast<uint32_t*>(F.input.mapped);
        for (int b = 0; b < B; ++b) ip[b] = (uint32_t)next[(size_t)b];
      }
      for (int b = 0; b < B; ++b) u[(size_t)b] = o.sampler.temperature > 0 ? sampler.draw() : 0.0;
      RFA_TRY(ops::write_sample_params(*I.g, F.sample_params, o.sampler, u.data(), (uint32_t)B));
      I.bytes_up += sizeof(span) + (uint64_t)B * 8 + ops::sample_params_bytes((uint32_t)B);
      gpu::Recorder* R = k == 1 ? host_fed : gpu_fed[f];
      RFA_TRY(R->submit());
      ++I.submits;
      flight.push_back({k, f, R});
      for (int b = 0; b < B; ++b) I.host_t[(size_t)b].put(I.filled, (double)I.filled);
      ++I.filled;
      for (auto& L : I.layers) L.cache.filled = (uint32_t)I.filled;
    }
    while (!flight.empty()) RFA_TRY(harvest());
    // outputs() now hold the last fed position's logits when they came back, else nothing new.
    if (o.keep_outputs) {
      I.outputs.clear();
      for (int b = 0; b < B; ++b) I.outputs.insert(I.outputs.end(), logits[(size_t)b].end() - V, logits[(size_t)b].end());
    } else {
      I.outputs.clear();
    }
    I.last_count = I.out_count = 1;
  }
  for (int b = 0; b < B; ++b) {
    gen.tokens.insert(gen.tokens.end(), rows[(size_t)b].begin(), rows[(size_t)b].end());
    gen.outputs.insert(gen.outputs.end(), logits[(size_t)b].begin(), logits[(size_t)b].end());
  }
  I.gpu_ms = gen.gpu_ms;
  gen.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  I.wall_ms = gen.wall_ms;
  return gen;
}

}  // namespace rfa
