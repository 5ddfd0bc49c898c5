// The specialization constants of RFA's readout kernels (rfa_probe, rfa_tomography): the layer's
// switches and head dim, then MODE (what the kernel computes; each body says its modes). The ids
// are kernel_ids.h's, set by RFA's mechanism (readout_spec).
#ifndef RFA_READOUT_CONSTANTS_GLSL
#define RFA_READOUT_CONSTANTS_GLSL

#include "kernel_ids.h"
layout(constant_id = kRfaReadD) const uint D = 32;
layout(constant_id = kRfaReadCov) const uint COV = 1;
layout(constant_id = kRfaReadBias) const uint BIAS = 1;
layout(constant_id = kRfaReadPrec) const uint PREC = 1;
layout(constant_id = kRfaReadRobust) const bool ROBUST = true;
layout(constant_id = kRfaReadFullResid) const bool FULL_RESID = true;
layout(constant_id = kRfaReadCausal) const bool CAUSAL = true;
layout(constant_id = kRfaReadMode) const uint MODE = 0;
const bool WANT_VCOV = false;

#endif
