// The inside of an rfa::Session, shared by session.cpp (weights, caches, prefill and step) and
// session_probes.cpp (attention maps, diagnostics, curves, pair readouts, heatmaps).
#pragma once

#include <algorithm>
#include <memory>
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

}  // namespace session_detail

struct Session::Impl {
  Context* ctx = nullptr;
  gpu::Context* g = nullptr;
  std::shared_ptr<const Model> model;
  ModelInfo info;
  int batch = 1, capacity = 0, filled = 0;
  bool last_only = false;
  int out_count = 0;
  uint64_t max_output_bytes = 0;
  // weights
  gpu::Buffer token_embedding;  // lm: [V, d_e]; also the tied LM head
  gpu::Buffer lm_bias;
  bool has_lm_bias = false;
  ops::LinearGpu signal_in, signal_out, backbone_in, backbone_out;
  session_detail::NormGpu final_norm;
  std::vector<session_detail::LayerGpu> layers;
  gpu::Buffer timestamps;  // [B, capacity] (hi, lo)
  std::vector<std::vector<double>> host_t;  // [B][filled]
  // scratch, sized for `rows` rows
  uint32_t scratch_rows = 0;
  gpu::Buffer ids, input, x, h, q, k, v, vnorm, att, ffn, out;
  std::unique_ptr<gpu::Recorder> rec;
  std::vector<float> outputs;
  int last_count = 0;
  double gpu_ms = 0, wall_ms = 0;

  Status init();
  Status ensure_scratch(uint32_t rows);
  Status run(const int64_t* ids_in, const float* values, int n, const std::vector<double>& ts);
  Status run_chunked(const int64_t* ids_in, const float* values, int n, const std::vector<double>& ts);
  Status record_norm(const session_detail::NormGpu& n, const gpu::Buffer& src, const gpu::Buffer& dst, uint32_t rows, uint32_t dim);
  Status check_probe(int layer, int head, int b, int r0, int r1, int c0, int c1) const;
};

}  // namespace rfa
