// What the full AFA form's two readouts share (common/afa_full_probe_body.glsl,
// afa_full_tomography_body.glsl): their spec constants (AFA's readout ids), their first five
// bindings (the layer's table, the timestamps, Q~, K~ and the kernel's normalisers den_k) and the
// pair terms (common/afa_full_pair.glsl) in view VIEW. The includer declares its own bindings 5 and on.
#ifndef AFA_FULL_READOUT_IO_GLSL
#define AFA_FULL_READOUT_IO_GLSL

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them (AFA's readout ids)
#include "afa_layer_table.h"
layout(constant_id = kAfaReadD) const uint D = 32;         // complex channels per head
layout(constant_id = kAfaReadCausal) const bool CAUSAL = true;
layout(constant_id = kAfaReadUnitary) const bool UNITARY = false;
layout(constant_id = kAfaReadMode) const uint MODE = 0;    // the readout's mode (its body says)
layout(constant_id = kAfaReadView) const uint VIEW = kAfaViewMean;  // a channel, the mean or W
#define AFA_VIEW VIEW
#define AFA_FULL_READOUT 1

layout(std430, binding = 0) readonly buffer Ab { vec4 afa[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer Db { float den_in[]; };  // den_k [cells * D]

#endif
