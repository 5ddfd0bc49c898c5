// Exact attention weights of an AFA layer for a rectangle of one (batch row, head), from the caches
// and the row statistics the fused AFA kernel left (ops/rfa_probe.hpp, record_rfa_probe): the
// rectangle of common/rfa_probe_body.glsl, MODE 0, with AFA's pair logit (common/afa_pair.glsl,
// the fused kernel's own arithmetic). Included by afa_probe.comp and afa_probe_kv16.comp.
//   Ahat_ij = exp(logit_ij - m_i) / l_i                     the softmax weight (rows sum to 1)
//   A_ij    = Ahat_ij (1/D) sum_k e^{-mu_k |l_ij|}           the mean decayed mass
// RFA's A = Ahat E is the weight times the pair's one decay. An AFA pair has D decays, one per
// channel (the value side shrinks channel k by e_k, docs/variant-afa.md §4), so no single matrix
// is "the decayed weight"; A is the channel mean of the per-channel weights Ahat e_k (its row sums
// are the per-channel decayed mass of docs/variant-afa.md §11 averaged over channels): it equals
// Ahat where every mu_k = 0 (the unitary switch) and Ahat e^{-mu |l|}, RFA's form, where one mu
// serves every channel. Row diagnostics, curves and tomography have no AFA form
// (record_rfa_probe's siblings refuse AFA layers).
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i. Masked cells are 0 in both outputs.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint D = 32;  // complex channels per head
layout(constant_id = 1) const bool CAUSAL = true;
layout(constant_id = 2) const uint PREC = 0;  // rfa::AfaPrecision
layout(constant_id = 3) const bool UNITARY = false;
layout(constant_id = 4) const uint PCHAN = 0;  // the channel of PREC 1

// The layer's table (ops/afa_attention.cpp's afa_layer_table): [H*D] (mu, sigma2, eta2, gamma2),
// [H*D] (mix gate, w, e^{lambda h}), [H] (nu, alpha^2, b, eps). No omega: the caches hold Q~, K~
// in one frame, where the residual needs no rotation.
layout(std430, binding = 0) readonly buffer Ab { vec4 afa[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) readonly buffer Mb { float row_max[]; };
layout(std430, binding = 5) readonly buffer Lb { float row_sum[]; };
layout(std430, binding = 6) writeonly buffer O0 { float ahat_out[]; };  // [rows, cols]
layout(std430, binding = 7) writeonly buffer O1 { float a_out[]; };     // [rows, cols]

#include "push_layouts.h"
layout(push_constant) uniform Push { ProbePush pc; };

#include "rfa_cache_ring.glsl"
#include "afa_pair.glsl"

vec2 afa_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  // Every invocation of the dispatch probes head pc.h: its channels once per workgroup.
  afa_load_head(pc.h, pc.heads * D, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
  barrier();
  if (gid >= rows * cols) return;
  const uint i = pc.r0 + gid / cols, j = pc.c0 + gid % cols;
  const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
  float ahat = 0.0, a = 0.0;
  if (!masked) {
    const uint base = (pc.b * pc.heads + pc.h) * pc.capacity, tbase = pc.b * pc.capacity;
    const uint ic = base + slot_of(i);
    vec2 q[D];
    const float qn = afa_load_query(ic, true, q);
    const vec4 hv = afa[2 * pc.heads * D + pc.h];  // (nu, alpha^2, b, eps)
    float ek[D];
    const float logit =
        afa_pair_logit(q, qn, base + slot_of(j), afa_lag(ts[tbase + slot_of(i)], ts[tbase + slot_of(j)]), hv, ek);
    const float l = row_sum[ic];
    ahat = l > 0.0 ? exp(logit - row_max[ic]) / l : 0.0;
    float mass = 0.0;
    [[unroll]] for (uint k = 0; k < D; ++k) mass += ek[k];
    a = ahat * (mass / float(D));
  }
  ahat_out[gid] = ahat;
  a_out[gid] = a;
}
