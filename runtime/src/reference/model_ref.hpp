// The double-precision CPU twin, part 4: the whole network of an rfa::Model in double
// (docs/reference-code.md §10 and the author's RFATransformerNetwork / RFATransformerBlock / LanguageModel /
// ETT_NextStep_Predictor):
//
//   backbone(x):  x = backbone_in(x)
//                 per block:  h = norm1(x)            (identity when NormKind::none)
//                             a = RFA(h, h, h)
//                             x = x + a               (outer_residual; otherwise a is DISCARDED)
//                             h2 = norm2(x)           (identity when NormKind::none)
//                             x = x + ffn2(relu(ffn1(h2)))     (no dropout; always residual)
//                 x = final_norm(x)                   (identity when NormKind::none)
//                 x = backbone_out(x)
//   lm:         logits = backbone(token_embedding[ids]) @ token_embedding^T + lm_head_bias
//   signal:     predictions = signal_out(backbone(signal_in(inputs)))
//   attention:  out = RFA(x, x, x) (one layer: projections, attention, W_o)
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "model/model.hpp"
#include "reference/attention_ref.hpp"
#include "rfa/status.hpp"

namespace rfa::ref {

// What forward() records besides its result.
struct ModelProbe {
  // (layer, head) pairs whose attention matrices are wanted.
  std::vector<std::pair<int, int>> requests;
  struct Capture {
    int layer = 0, head = 0;
    std::vector<double> Ahat, A;                // [B][N][N]
    std::vector<double> row_lse, energy_lse;    // [B][N]
    std::vector<double> gate;                   // [B][N] when the layer's gate is on
  };
  std::vector<Capture> captures;  // one per request, in request order (filled by forward)

  // Optional activations for layer-by-layer comparison, all [B][N][d_e]:
  bool keep_hidden = false;
  std::vector<std::vector<double>> hidden;         // x entering block 0 (after backbone_in), then x after
                                                   // each block (num_layers + 1 entries; lm / signal only)
  std::vector<std::vector<double>> layer_outputs;  // attention output (after W_o) of every layer
};

// One attention layer on real x [B][N][d_e] (t [B][N], or empty for 0..N-1): projections, the
// half-split to complex, attention(), packing and W_o. Returns [B][N][d_e].
// out / opt as in attention(); out may be null.
Result<std::vector<double>> attention_layer(const AttentionLayer& layer, int B, int N, const std::vector<double>& x,
                                            const std::vector<double>& t, AttentionOutputs* out = nullptr,
                                            const AttentionOptions& opt = {});

// The whole forward pass. inputs: [B][N][d_in] (signal) or [B][N][d_e] (attention), null for lm;
// ids: [B][N] token ids (lm), else null; timestamps: [B][N] non-decreasing per sequence, null means
// t = 0..N-1. Returns logits [B][N][vocab] (lm), predictions [B][N][d_in] (signal) or outputs
// [B][N][d_e] (attention). window > 0: every layer's banded causal mask (AttentionOptions::window);
// 0: the model's own (args.attention_window); -1: none.
Result<std::vector<double>> forward(const Model& m, int B, int N, const double* inputs, const int64_t* ids,
                                    const double* timestamps, ModelProbe* probe = nullptr, int window = 0);

}  // namespace rfa::ref
