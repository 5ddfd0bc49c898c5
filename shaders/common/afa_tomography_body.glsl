// Attention tomography of one (batch row, head) of an AFA layer (docs/DIAGNOSTICS.md §2, §3): the
// per-pair work of the diagnostics recomputed from the caches like afa_probe, with AFA's own pair
// logit (common/afa_pair.glsl, the fused kernel's arithmetic) scaled by a temperature alpha.
// The body of the kernels afa_tomography and afa_tomography_kv16 (shaders/variants.cmake).
//
// q and k are the vectors the kernel scores with: Q~_i and K~_j of the caches (the stationary
// frame), each channel projected to unit modulus under the unitary switch. s_ij = u_i . k_j =
// Re(q_i^H k_j) / |q_i|, the plain projection as for every head; the logit itself sees the key
// through the channel-decayed projection sum_k e_k Re(conj(q_ik) k_jk) (docs/DIAGNOSTICS.md §2).
// MODE 0, one workgroup per query row i of [r0, r1) (dispatched in chunks of <= 65535 rows), over
//   every key the row attends to: the row statistics of common/tomography_state.glsl.
// MODE 1, one thread per cell of rows [r0, r1) x cols [c0, c1): P_ij = exp(alpha logit_ij - m_i) / l_i
//   (times the channel-mean decay (1/D) sum_k e^{-mu_k |l_ij|} when decayed: the probe's A), 0
//   where masked, from the MODE 0 rows of the same alpha.
// Positions are absolute; the caches are rings (slot p % capacity) and, with a window W, key j is
// masked for query i unless i - W < j <= i.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kv_storage.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint D = 32;  // complex channels per head
layout(constant_id = 1) const bool CAUSAL = true;
layout(constant_id = 2) const uint PREC = 0;  // rfa::AfaPrecision
layout(constant_id = 3) const bool UNITARY = false;
layout(constant_id = 4) const uint PCHAN = 0;  // the channel of PREC 1
layout(constant_id = 5) const uint MODE = 0;   // 0: row statistics, 1: the matrix P(alpha)

// The layer's table as afa_probe_body.glsl reads it (ops/afa_attention.cpp's afa_layer_table).
layout(std430, binding = 0) readonly buffer Ab { vec4 afa[]; };
layout(std430, binding = 1) readonly buffer Tb { vec2 ts[]; };  // (hi, lo) [B, capacity]
layout(std430, binding = 2) readonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 3) readonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 4) buffer Rb { float rows_out[]; };         // MODE 0 writes, MODE 1 reads
layout(std430, binding = 5) writeonly buffer Pb { float p_out[]; };  // MODE 1: [rows, cols]

#include "push_layouts.h"
layout(push_constant) uniform Push { TomographyPush pc; };

#include "rfa_cache_ring.glsl"
#include "afa_pair.glsl"
#include "tomography_state.glsl"

vec2 afa_key(uint cell, uint k) { return KV_LOAD(Kc[cell * D + k]); }

// Re(q^H k) of the scored vectors (k projected per channel under the unitary switch, as q is).
float afa_cross(const vec2 q[D], uint key) {
  float c = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    vec2 kk = afa_key(key, k);
    if (UNITARY) kk = unit_channel(kk);
    c += dot(q[k], kk);
  }
  return c;
}

void main() {
  const uint rows = pc.r1 - pc.r0, cols = pc.c1 - pc.c0;
  afa_load_head(pc.h, pc.heads * D, gl_LocalInvocationID.x, gl_WorkGroupSize.x);
  barrier();
  const uint base = (pc.b * pc.heads + pc.h) * pc.capacity, tbase = pc.b * pc.capacity;
  const vec4 hv = afa[2 * pc.heads * D + pc.h];  // (nu, alpha^2, b, eps)
  if (MODE == 0) {
    const uint lid = gl_LocalInvocationID.x;
    const uint r = pc.row_base + gl_WorkGroupID.x;  // < rows: one group per row
    const uint i = pc.r0 + r;
    const uint ic = base + slot_of(i);
    const vec2 ti = ts[tbase + slot_of(i)];
    vec2 q[D];
    const float qn = afa_load_query(ic, true, q);
    const float qabs = sqrt(qn);
    const float inv_q = qabs > 0.0 ? 1.0 / qabs : 0.0;
    const uint kend = i >= pc.filled ? 0 : (CAUSAL ? i + 1 : pc.filled);
    const uint kbeg = CAUSAL ? first_key(i) : 0;
    State st = tomo_empty();
    for (uint j = kbeg + lid; j < kend; j += 64) {
      const uint jc = base + slot_of(j);
      const float lag = afa_lag(ti, ts[tbase + slot_of(j)]);
      float ek[D];
      const float logit = afa_pair_logit(q, qn, jc, lag, hv, ek);
      tomo_add(st, logit, afa_cross(q, jc) * inv_q, lag, pc.alpha);
    }
    tomo_finish(st, lid, r, qabs);
  } else {
    const uint gid = gl_GlobalInvocationID.x;
    if (gid >= rows * cols) return;
    const uint r = gid / cols;
    const uint i = pc.r0 + r, j = pc.c0 + gid % cols;
    const bool masked = (CAUSAL && (j > i || j < first_key(i))) || j >= pc.filled || i >= pc.filled;
    float v = 0.0;
    const float m = rows_out[r * ROW_STRIDE + 0], l = rows_out[r * ROW_STRIDE + 1];
    if (!masked && l > 0.0) {
      const uint ic = base + slot_of(i);
      vec2 q[D];
      const float qn = afa_load_query(ic, true, q);
      float ek[D];
      const float logit =
          afa_pair_logit(q, qn, base + slot_of(j), afa_lag(ts[tbase + slot_of(i)], ts[tbase + slot_of(j)]), hv, ek);
      v = exp(pc.alpha * logit - m) / l;
      if (pc.decayed != 0) {
        float mass = 0.0;
        [[unroll]] for (uint k = 0; k < D; ++k) mass += ek[k];
        v *= mass / float(D);
      }
    }
    p_out[gid] = v;
  }
}
