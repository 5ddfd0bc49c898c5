// The parameter table of an AFA layer, one definition for both sides: mechanisms/afa/afa_attention.cpp
// (afa_layer_table) writes it, common/afa_pair.glsl reads it. vec4s in three blocks, k = h * D + d:
//   [k]            kAfaMu, kAfaSigma2, kAfaEta2, kAfaGamma2     per channel (mu = 0 under the unitary switch)
//   [HD + k]       kAfaMix, kAfaWeight, kAfaPredRe, kAfaPredIm  per channel (sigmoid(delta) or 1, w_k, e^{lambda h})
//   [2 HD + h]     kAfaNu, kAfaAlpha2, kAfaWeightBias, kAfaEps  per head
//   [2 HD + H]     kAfaMomentum                                 per layer (the tied iterations' g)
#ifndef AFA_LAYER_TABLE_H
#define AFA_LAYER_TABLE_H

#include "shared_prelude.h"

RFA_SHARED_BEGIN

const uint kAfaMu = 0, kAfaSigma2 = 1, kAfaEta2 = 2, kAfaGamma2 = 3;
const uint kAfaMix = 0, kAfaWeight = 1, kAfaPredRe = 2, kAfaPredIm = 3;
const uint kAfaNu = 0, kAfaAlpha2 = 1, kAfaWeightBias = 2, kAfaEps = 3;
const uint kAfaBlocks = 2;  // channel blocks before the per-head block (each H * D vec4s)
const uint kAfaMomentum = 0;

// What an AFA layer's readouts (probe, row diagnostics, tomography) read, the spec constant VIEW
// (docs/variant-afa-full.md §5): channel c < D, or the mean over channels, or the reweighting map.
const uint kAfaViewMean = 0xffffffffu, kAfaViewReweight = 0xfffffffeu;

RFA_SHARED_END

#endif
