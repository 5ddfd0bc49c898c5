// The attention kernel check (rfa-run --self-check, ContextOptions::verify_kernels): every path of
// RFA's fused kernel the chooser can take on this device (keys read from the cache or staged, the
// lag table or every pair's terms, the tile and its fp16 products and cooperative matrices, the
// decode merges by subgroup operations, split-k, fp16 caches; packed bindings where the device
// packs), each on a small case against a double-precision CPU evaluation of the same fused math
// written here (librfa carries no twin). A path that fails is taken away from the device
// (apply_kernel_refusals): the chooser then never picks it, and says why.
#pragma once

#include <string>
#include <vector>

#include "gpu/capabilities.hpp"
#include "gpu/context.hpp"
#include "rfa/status.hpp"

namespace rfa::ops {

struct PathCheck {
  std::string path;    // what was forced: "tile, fp16 caches", "decode, split-k", ...
  std::string kernel;  // the shader that ran ("+ rfa_attention_reduce" with split-k)
  std::string why;     // the chooser's line for it
  double worst_error = 0;  // max |gpu - cpu| / (1 + |cpu|) over the case's outputs
  double bound = 0;        // the path's bound (fp32 2e-4; fp16 products or matrices 1.6e-2)
  double ms = 0;           // the case's GPU time (timestamps; wall time where the device has none)
  bool pass = false;
};

struct PathCheckOptions {
  // Test hook: the path of this name runs a deliberately wrong kernel (its causal switch flipped),
  // so that a test sees a failing path reported and refused.
  std::string corrupt;
};

// Runs every distinct path (two forced options giving the same kernel and shape run once).
Result<std::vector<PathCheck>> check_attention_paths(gpu::Context& g, const PathCheckOptions& o = {});

// Takes the features of failed paths away from `caps`: split-k its splits, a failed *_tile_ck /
// *_tile_cm kernel the matrices, *_tile_f16 the fp16 products, any other tile kernel the tile, the
// key tiles in shared memory the staged walk, a decode merge's *_sg the clustered operations and
// *_sx the shuffles. Each
// refusal is named in caps.kernel_refusals (the chooser's reasons, capabilities_summary, rfa-run
// --json). A failure of the one path left for a device (the plain direct walk) refuses nothing: it
// stays in the list, and the self-check fails.
void apply_kernel_refusals(gpu::Capabilities& caps, const std::vector<PathCheck>& checks);

}  // namespace rfa::ops
