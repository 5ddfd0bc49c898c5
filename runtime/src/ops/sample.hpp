// Token sampling on the GPU: greedy, temperature, top-k and top-p over rows of logits, one token id
// (uint32) back per row, the same token as rfa::Sampler::pick given the same u (rfa/sampler.hpp).
//
// Replayable: everything that may change from step to step (each row's uniform u, and temperature,
// top_k, top_p) is read from a small params buffer that the host writes before each submission
// (write_sample_params), so a session records the dispatch once and replays it. Only the shapes
// (rows, vocab, offsets) are recorded, as push constants.
//
// How it works (shaders/common/sample_body.glsl): one workgroup per row. Greedy is a parallel
// argmax, first index on ties. Sampling keeps the host's sorted order (logit descending, id
// ascending) without sorting: radix searches over the 64-bit (order key, id) pairs find the top-k
// cut by count, the top-p cut by mass and the sampled token by mass, each from 256-bin histograms,
// eight bits at a time. Probabilities are summed exactly, as 0.64 fixed-point integers in 96 bits,
// so the result does not depend on workgroup size or scheduling, and r = u * S is an exact product.
//
// Where GPU and host can differ: only through rounding. The host sums exp() in double in sorted
// order; the GPU computes each p = exp((x - max) / T) in fp64 (devices with shaderFloat64) or fp32,
// truncates it to 2^-64 and sums exactly. A different token comes back only when r = u * S (or
// top_p * S) lies within that rounding of a boundary of the running sum: relative to S, about
// 1e-15 in fp64 and 1e-6 in fp32, a chance of that order per boundary crossed. One case is not
// chance: when every kept logit ties with the maximum (all p = 1), top_p * n can be an exact count
// (0.9 * 40 = 36), and the host's rounding of its running sum of fl(1/n) decides the cut. The fp64
// kernel replays that double arithmetic exactly; the fp32 kernel keeps the exact answer there.
// tests/test_sample.cpp: fp64 equal on every row compared; fp32 different only on that tie case.
// Greedy is exact in both.
//
// Logits must be finite or -inf, with at least one finite; a NaN is never sampled (the host's order
// has no place for it).
#pragma once

#include <cstdint>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "rfa/sampler.hpp"

namespace rfa::ops {

// Where the logits and the token ids are. Offsets and the stride count elements, not bytes.
struct SampleShape {
  uint32_t rows = 1;
  uint32_t vocab = 0;
  uint64_t logits_offset = 0;  // row r starts at logits_offset + r * row_stride
  uint64_t row_stride = 0;     // 0: vocab (packed rows)
  uint64_t tokens_offset = 0;  // row r's token id goes to tokens[tokens_offset + r]
};

enum class SamplePrecision {
  automatic,  // fp64 where the device has shaderFloat64, else fp32
  f32,
  f64,
};

struct SampleKernel {
  SamplePrecision precision = SamplePrecision::automatic;
  uint32_t workgroup = 0;  // invocations per row, 16..device limit; 0: 256 (64 on CPU devices)
};

// The params buffer, in 32-bit words (little-endian; 64-bit values low word first):
//   [0]       flags: bit 0 greedy (temperature <= 0), bit 1 top-p cut on (top_p < 1)
//   [1]       top_k (0: no limit)
//   [2]       temperature as a float (the fp32 kernel's divisor)
//   [4, 5]    temperature as a double (the fp64 kernel's divisor)
//   [6, 7]    top_p as a double
//   [8, 9]    top_p as a 0.64 fixed-point fraction (0 when top_p <= 0)
//   [12 + 4r, 13 + 4r]  row r's u as a 0.64 fixed-point fraction
//   [14 + 4r, 15 + 4r]  row r's u as a double
//   (words 3, 10 and 11 are 0)
constexpr uint32_t kSampleParamsHeaderWords = 12, kSampleParamsRowWords = 4;
uint64_t sample_params_bytes(uint32_t rows);

// Fills `words` (sample_params_bytes(rows) / 4 of them) from the options and one u per row
// (u may be null for greedy). Rejects a NaN or infinite temperature, a NaN top_p and u outside
// [0, 1). The seed is not used: the draws are the caller's (rfa::Sampler::draw, one per row).
Status encode_sample_params(const SamplerOptions& o, const double* u, uint32_t rows, uint32_t* words);
// encode_sample_params into `params` (a memcpy where it is host-visible).
Status write_sample_params(gpu::Context& ctx, const gpu::Buffer& params, const SamplerOptions& o, const double* u,
                           uint32_t rows);

// Which kernel record_sample uses on this device: "sample" (fp32) or "sample_f64", and the
// workgroup size. Fails where fp64 is asked for and the device has no shaderFloat64, or the
// workgroup is outside [16, device limit].
struct SampleChoice {
  bool f64 = false;
  uint32_t workgroup = 256;
};
Result<SampleChoice> choose_sample_kernel(const gpu::Capabilities& caps, const SampleKernel& k);

// logits: floats as `shape` says; params: sample_params_bytes(shape.rows), written before each
// submission; tokens: uint32 ids. One dispatch of shape.rows workgroups.
Status record_sample(gpu::Context& ctx, gpu::Recorder& rec, const gpu::Buffer& logits, const gpu::Buffer& params,
                     const gpu::Buffer& tokens, const SampleShape& shape, const SampleKernel& kernel = {});

}  // namespace rfa::ops
