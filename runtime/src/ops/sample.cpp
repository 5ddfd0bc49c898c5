#include "ops/sample.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gpu/pipeline.hpp"
#include "push_layouts.h"

namespace rfa::ops {
namespace {

// A value in [0, 1) as a 0.64 fixed-point fraction, truncated: exact for every double >= 2^-11.
uint64_t to_fraction64(double v) { return v <= 0.0 ? 0 : (uint64_t)std::ldexp(v, 64); }

uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return b;
}

void put64(uint32_t* w, uint64_t v) {
  w[0] = (uint32_t)v;
  w[1] = (uint32_t)(v >> 32);
}

}  // namespace

uint64_t sample_params_bytes(uint32_t rows) {
  return 4ull * (kSampleParamsHeaderWords + (uint64_t)kSampleParamsRowWords * std::max(rows, 1u));
}

Status encode_sample_params(const SamplerOptions& o, const double* u, uint32_t rows, uint32_t* words) {
  if (!std::isfinite(o.temperature))
    return Status(Code::invalid_argument, "sampling: temperature " + std::to_string(o.temperature) + " is not finite");
  if (std::isnan(o.top_p)) return Status(Code::invalid_argument, "sampling: top_p is NaN");
  const bool greedy = o.temperature <= 0.0, nucleus = o.top_p < 1.0;
  std::memset(words, 0, sample_params_bytes(rows));
  words[0] = (greedy ? 1u : 0u) | (nucleus ? 2u : 0u);
  words[1] = o.top_k > 0 ? (uint32_t)o.top_k : 0u;
  const float tf = (float)o.temperature;
  std::memcpy(&words[2], &tf, 4);
  put64(&words[4], bits(o.temperature));
  put64(&words[6], nucleus ? bits(o.top_p) : 0);
  put64(&words[8], nucleus ? to_fraction64(o.top_p) : 0);
  for (uint32_t r = 0; u && r < rows; ++r) {
    if (!(u[r] >= 0.0 && u[r] < 1.0))
      return Status(Code::invalid_argument, "sampling: row " + std::to_string(r) + "'s u = " + std::to_string(u[r]) +
                                                " is outside [0, 1)");
    uint32_t* w = &words[kSampleParamsHeaderWords + kSampleParamsRowWords * r];
    put64(&w[0], to_fraction64(u[r]));
    put64(&w[2], bits(u[r]));
  }
  return Status::Ok();
}

Status write_sample_params(gpu::Context& ctx, const gpu::Buffer& params, const SamplerOptions& o, const double* u,
                           uint32_t rows) {
  const uint64_t bytes = sample_params_bytes(rows);
  if (params.size < bytes)
    return Status(Code::invalid_argument, "sampling: params buffer of " + std::to_string(params.size) +
                                              " bytes; " + std::to_string(rows) + " rows need " + std::to_string(bytes));
  std::vector<uint32_t> words(bytes / 4);
  RFA_TRY(encode_sample_params(o, u, rows, words.data()));
  return ctx.upload(params, words.data(), bytes);
}

Result<SampleChoice> choose_sample_kernel(const gpu::Capabilities& caps, const SampleKernel& k) {
  SampleChoice c;
  if (k.precision == SamplePrecision::f64 && !caps.shader_float64)
    return Status(Code::unsupported, "sampling: fp64 probabilities asked for; the device has no shaderFloat64");
  c.f64 = k.precision == SamplePrecision::f64 || (k.precision == SamplePrecision::automatic && caps.shader_float64);
  const uint32_t limit = std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
  // lavapipe runs a workgroup's invocations as SIMD lanes and switches between every group of lanes
  // at each barrier; the searches take dozens of barriers, so CPU devices get fewer invocations
  // (measured on lavapipe: 64 about halves 256's time for V = 256 and matches it for V = 50257).
  const uint32_t preferred = caps.device_type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 64u : 256u;
  c.workgroup = k.workgroup ? k.workgroup : std::min(preferred, limit);
  // The bin scan gives each of 16 invocations 16 bins.
  if (c.workgroup < 16 || c.workgroup > limit)
    return Status(Code::unsupported, "sampling: workgroup of " + std::to_string(c.workgroup) +
                                         " invocations; the kernel needs 16 and the device allows " +
                                         std::to_string(limit));
  return c;
}

Status record_sample(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& logits, const gpu::Buffer& params,
                     const gpu::Buffer& tokens, const SampleShape& s, const SampleKernel& kernel) {
  if (s.vocab == 0) return Status(Code::invalid_argument, "sampling: a vocabulary of 0 tokens");
  if (s.rows == 0) return Status::Ok();
  const uint64_t stride = s.row_stride ? s.row_stride : s.vocab;
  if (s.rows > 1 && stride < s.vocab)
    return Status(Code::invalid_argument, "sampling: row stride " + std::to_string(stride) +
                                              " is shorter than the vocabulary of " + std::to_string(s.vocab));
  const uint64_t logits_end = s.logits_offset + (uint64_t)(s.rows - 1) * stride + s.vocab;
  const uint64_t tokens_end = s.tokens_offset + s.rows;
  if (logits.size < logits_end * 4)
    return Status(Code::invalid_argument, "sampling: logits buffer of " + std::to_string(logits.size / 4) +
                                              " floats; " + std::to_string(s.rows) + " rows of " +
                                              std::to_string(s.vocab) + " need " + std::to_string(logits_end));
  if (tokens.size < tokens_end * 4)
    return Status(Code::invalid_argument, "sampling: tokens buffer of " + std::to_string(tokens.size / 4) +
                                              " ids; " + std::to_string(tokens_end) + " needed");
  if (params.size < sample_params_bytes(s.rows))
    return Status(Code::invalid_argument, "sampling: params buffer of " + std::to_string(params.size) + " bytes; " +
                                              std::to_string(s.rows) + " rows need " +
                                              std::to_string(sample_params_bytes(s.rows)));
  if (logits_end >= (1ull << 32) || tokens_end >= (1ull << 32))
    return Status(Code::unsupported, "sampling: an index past 2^32 elements (32-bit indexing)");
  if (s.rows > ctx.caps().max_workgroup_count[0])
    return Status(Code::unsupported, "sampling: " + std::to_string(s.rows) +
                                         " rows, beyond the device's maxComputeWorkGroupCount[0] of " +
                                         std::to_string(ctx.caps().max_workgroup_count[0]));
  auto choice = choose_sample_kernel(ctx.caps(), kernel);
  if (!choice) return choice.status();
  gpu::SpecConstants spec;
  spec.u32(choice->workgroup);  // constant_id 0: WG
  const shader::SamplePush push{s.rows, s.vocab, (uint32_t)s.logits_offset, (uint32_t)stride,
                                (uint32_t)s.tokens_offset};
  auto pipe = ctx.pipelines().get<shader::SamplePush>(choice->f64 ? "sample_f64" : "sample", spec);
  if (!pipe) return pipe.status();
  rec.dispatch(*pipe, {gpu::in(logits), gpu::in(params), gpu::out(tokens)}, push, s.rows, 1, 1, "sample");
  return Status::Ok();
}

}  // namespace rfa::ops
