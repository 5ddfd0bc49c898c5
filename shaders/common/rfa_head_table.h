// The per-head parameter table of an RFA layer, one definition for both sides: ops/rfa_attention.cpp
// writes kHeadStride floats per head at these offsets, common/rfa_lag_kernels.glsl (load_head) reads them.
#ifndef RFA_HEAD_TABLE_H
#define RFA_HEAD_TABLE_H

#include "shared_prelude.h"

RFA_SHARED_BEGIN

const uint kMu = 0, kSigma2 = 1, kS2t = 2, kEta2 = 3, kGamma2 = 4, kNu = 5, kKappa = 6, kTau = 7, kShift = 8,
           kCExp = 9, kBetaExp = 10, kAPer = 11, kBPer = 12, kOmegaPer = 13, kGatePrior = 14, kGateScaleExp = 15,
           kGateC = 16, kBrownian = 17, kMinExp = 18, kMaxExp = 19, kCovFloor = 20, kInvSqrtD = 21, kInvTwoMu = 22,
           kLinCoef = 23, kColR = 24, kColRSmall = 25, kColRsq = 26, kColRsqSmall = 27;
const uint kHeadStride = 32;  // floats per head (28 used; a power of two keeps rows aligned)

RFA_SHARED_END

#endif
