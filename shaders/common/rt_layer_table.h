// The parameter table of an RT-RFA layer, one definition for both sides: mechanisms/rt/rt_attention.cpp
// (rt_layer_table) writes kRtHeadStride floats per head at these offsets, common/rt_pair.glsl reads
// a head as three vec4: (mu, s2t, sigma2, eta2), (gamma2, tau_th2, nu, kappa = (nu + D) / D),
// (beta_s, S(0) = eta2 + gamma2, 0, 0).
#ifndef RT_LAYER_TABLE_H
#define RT_LAYER_TABLE_H

#include "shared_prelude.h"

RFA_SHARED_BEGIN

const uint kRtMu = 0, kRtS2t = 1, kRtSigma2 = 2, kRtEta2 = 3, kRtGamma2 = 4, kRtTauTh2 = 5, kRtNu = 6, kRtKappa = 7,
           kRtBetaS = 8, kRtS0 = 9;
const uint kRtHeadStride = 12;  // floats per head: three vec4

RFA_SHARED_END

#endif
