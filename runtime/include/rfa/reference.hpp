// REFERENCE ONLY: the double-precision CPU twin of a whole model.
//
// In a library of its own: link rfa_reference (CMake: rfa::reference or rfa::reference_static from
// find_package(rfa COMPONENTS reference); pkg-config rfa_reference; -lrfa_reference -lrfa). librfa
// carries none of the twin.
//
// The twin is written straight from the definitions (docs/math.md §2 and
// docs/reference-code.md §2-§10) with std::complex<double>, shares no code with the GPU kernels, and recomputes the whole
// sequence on every call: it is the runtime's test oracle, offered so that apps and `rfa-run
// --cpu-reference` can check a result, not to serve one. It is slow (O(N^2) per head, one CPU
// thread, every attention matrix in memory) and needs no Vulkan device.
#pragma once

#include "rfa/export.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "rfa/status.hpp"

namespace rfa {

struct Model;

// One head's attention matrices, as the twin computed them: [batch][n][n] each, row-major.
struct ReferenceAttention {
  int layer = 0, head = 0;
  std::vector<double> ahat;  // Ahat (rows sum to 1)
  std::vector<double> a;     // A = Ahat E (decayed)
};

// The forward pass of `m` on `batch` sequences of `n` positions. Exactly one input:
//   values:     [batch][n][input_dim] (signal and attention models), else null;
//   ids:        [batch][n] token ids (language models), else null;
//   timestamps: [batch][n], non-decreasing per row; null means t = 0..n-1.
// Returns [batch][n][output_dim]: logits (lm), predictions (signal) or outputs (attention).
// `attention`: (layer, head) pairs whose matrices are wanted; they are appended to *maps in order.
// window > 0: every layer's banded causal mask (each query sees its last `window` keys), what a
// session with SessionOptions::window computes; 0: the model's own (args.attention_window, often
// none); -1: no window, even for a model trained with one.
RFA_REFERENCE_API Result<std::vector<double>> reference_forward(const Model& m, int batch, int n, const double* values,
                                              const int64_t* ids, const double* timestamps,
                                              const std::vector<std::pair<int, int>>& attention = {},
                                              std::vector<ReferenceAttention>* maps = nullptr, int window = 0);

}  // namespace rfa
