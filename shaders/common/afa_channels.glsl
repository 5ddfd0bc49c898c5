// The channel state both AFA forms share (common/afa_pair.glsl, the memory-optimised pair logit;
// common/afa_full_pair.glsl, the full form's pair terms): the head's per-channel parameters in shared
// memory, the unitary switch's projection, phi, and the query's load.
//
// The including shader declares the spec constants D and UNITARY, the layer table `afa` (vec4s, laid
// out by afa_layer_table.h) and the Q cache `Qc`, and enables GL_EXT_control_flow_attributes.
#ifndef AFA_CHANNELS_GLSL
#define AFA_CHANNELS_GLSL

#include "afa_layer_table.h"

shared vec4 sch[D];  // the head's (mu, sigma2, eta2, gamma2) per channel (mu = 0 under the unitary switch)
shared float sw[D];  // w_k (PREC 2)

// Channel k of the key `key` (what `key` indexes is the includer's business: a cache cell, a row of
// a shared-memory tile).
vec2 afa_key(uint key, uint k);

// z / |z| per channel (the unitary switch); a zero channel stays zero.
vec2 unit_channel(vec2 z) {
  const float n2 = dot(z, z);
  return n2 > 0.0 ? z * inversesqrt(n2) : vec2(0.0);
}

// (1 - e^2) / (2 mu) with e = exp(-mu l), accurate where 1 - e^2 cancels: a series below
// x = 2 mu l = 0.1 (relative error < 2e-8), the closed form above; l at mu = 0.
float afa_phi(float mu, float l, float e) {
  const float x = 2.0 * mu * l;
  if (x < 0.1) return l * (1.0 - x * (0.5 - x * (1.0 / 6.0 - x * (1.0 / 24.0 - x * (1.0 / 120.0)))));
  return (1.0 - e * e) / (2.0 * mu);
}

// Head h's channel parameters into shared memory, threads tid = 0..n-1 of the workgroup; HD = H * D.
// The caller places the barrier.
void afa_load_head(uint h, uint HD, uint tid, uint n) {
  for (uint k = tid; k < D; k += n) {
    sch[k] = afa[h * D + k];
    sw[k] = afa[HD + h * D + k][kAfaWeight];
  }
}

// The query of cache cell icell (zeros for a row that is not live), projected per channel under the
// unitary switch; returns |q|^2.
float afa_load_query(uint icell, bool live, out vec2 q[D]) {
  float qn = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    q[k] = live ? Qc[icell * D + k] : vec2(0.0);
    if (UNITARY) q[k] = unit_channel(q[k]);
    qn += dot(q[k], q[k]);
  }
  return qn;
}

// Re(q^H k) of the scored vectors, k the key `key` projected per channel under the unitary switch as
// q is: the readouts' pair_cross (the tomography's s = pair_cross / |q|), both forms.
float afa_cross(const vec2 q[D], uint key) {
  float c = 0.0;
  [[unroll]] for (uint k = 0; k < D; ++k) {
    vec2 kk = afa_key(key, k);
    if (UNITARY) kk = unit_channel(kk);
    c += dot(q[k], kk);
  }
  return c;
}

#endif
