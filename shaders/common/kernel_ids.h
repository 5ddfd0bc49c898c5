// The specialisation-constant ids and the binding slots the ops name, one definition for both
// sides: a shader declares `layout(constant_id = kAttnD) const uint D = ...`, the op fills
// SpecConstants::set(kAttnD, D). A kernel family's ids are dense from 0 (the pipeline refuses a
// vector with an id left out: the shader would silently keep its default).
#ifndef RFA_KERNEL_IDS_H
#define RFA_KERNEL_IDS_H

#include "shared_prelude.h"

RFA_SHARED_BEGIN

// The fused RFA kernel (common/attention_body.glsl, attention_tile.glsl) and its split-k reduce.
const uint kAttnWG = 0, kAttnBQ = 1, kAttnS = 2, kAttnBK = 3, kAttnD = 4, kAttnDC = 5, kAttnRED = 6, kAttnFIN = 7,
           kAttnCausal = 8, kAttnCov = 9, kAttnBias = 10, kAttnPrec = 11, kAttnRobust = 12, kAttnFullResid = 13,
           kAttnCounterRot = 14, kAttnShiftRot = 15, kAttnGate = 16, kAttnOutNorm = 17, kAttnDirectKv = 18,
           kAttnSplit = 19, kAttnPhase = 20, kAttnKvApart = 21, kAttnCmBlock = 22,
           // The v3 switches (KernelOptions::attention_fma, ... : docs/math.md §9, "Kernels v3").
           kAttnFma = 23, kAttnQRegs = 24, kAttnPad = 25, kAttnF16Chunk = 26, kAttnPrefetch = 27, kAttnRawF16 = 28,
           kAttnLagE2 = 29;
// Its bindings the ops swap (the split-k partials: written by the kernel, read by the reduce).
const uint kAttnBindPartials = 17;

// The SDPA yardstick: the fused kernel's first nine ids, then its own.
const uint kSdpaDirectKv = 9, kSdpaSplit = 10, kSdpaKvApart = 11, kSdpaCmBlock = 12, kSdpaFma = 13, kSdpaQRegs = 14,
           kSdpaPad = 15, kSdpaF16Chunk = 16, kSdpaPrefetch = 17, kSdpaRawF16 = 18;
const uint kSdpaBindPartials = 7;

// AFA's fused kernels (common/afa_attention_body.glsl, the full form's afa_full_attention_body.glsl,
// which leaves PREC and PCHAN out): STAGE 0 the layer's last pass, 1 an earlier pass of its tied
// iterations; MOMENTUM the iterations' momentum term.
const uint kAfaAttnWG = 0, kAfaAttnBQ = 1, kAfaAttnS = 2, kAfaAttnBK = 3, kAfaAttnD = 4, kAfaAttnCausal = 5,
           kAfaAttnPrec = 6, kAfaAttnUnitary = 7, kAfaAttnMix = 8, kAfaAttnDirectKv = 9, kAfaAttnPchan = 10,
           kAfaAttnKvTile = 11, kAfaAttnDC = 12, kAfaAttnRED = 13, kAfaAttnStage = 14, kAfaAttnMomentum = 15;

// RT-RFA's fused kernel (common/rt_attention_body.glsl).
const uint kRtAttnWG = 0, kRtAttnBQ = 1, kRtAttnS = 2, kRtAttnBK = 3, kRtAttnD = 4, kRtAttnCausal = 5,
           kRtAttnCov = 6, kRtAttnKernel = 7, kRtAttnDirectKv = 8, kRtAttnKvTile = 9, kRtAttnDC = 10, kRtAttnRED = 11;

// The rotate pass (common/rfa_rotate_body.glsl).
const uint kRotD = 0, kRotInNorm = 1, kRotPhase = 2, kRotRotateV = 3, kRotUnit = 4, kRotMagEps = 5;

// The readouts (<mechanism>_probe, <mechanism>_tomography): each mechanism's ids, MODE last.
const uint kRfaReadD = 0, kRfaReadCov = 1, kRfaReadBias = 2, kRfaReadPrec = 3, kRfaReadRobust = 4,
           kRfaReadFullResid = 5, kRfaReadCausal = 6, kRfaReadMode = 7;
const uint kAfaReadD = 0, kAfaReadCausal = 1, kAfaReadPrec = 2, kAfaReadUnitary = 3, kAfaReadPchan = 4,
           kAfaReadMode = 5, kAfaReadView = 6;
const uint kRtReadD = 0, kRtReadCausal = 1, kRtReadCov = 2, kRtReadKernel = 3, kRtReadMode = 4;

// The lag kernels over a lag axis (rfa_curves, rfa_lag_table).
const uint kLagCov = 0, kLagBias = 1, kLagPrec = 2;

RFA_SHARED_END

#endif
