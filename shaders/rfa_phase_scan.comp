#version 450
// The accumulated phase of ACC layers (docs/variant-acc.md): theta_p = wrap(theta_{p-1} + phi_p) for
// the new positions of every (batch row, head, dim), written into the phase ring [B, capacity, H*D]
// as (hi, lo) float pairs that the rotate pass and the epilogue read instead of omega * t. The
// running phase stays a double-float (~48 bits) and is wrapped after every step, so 65,536 steps of
// ~1 rad lose nothing an fp32 angle can show; accumulating plain fp32 angles would not. One
// invocation walks `count` positions from `first` (the host splits long calls: CPU drivers cap an
// invocation's loop iterations). Steps: rope phi = omega; random phi = 2 omega u with u the exact
// 32-bit counter-based draw of docs/variant-acc.md (MurmurHash3 of (layer, row, position, dim)
// seeded by the seed, top 24 bits), shared by the heads; learned phi = Phi[token][dim], the layer's
// table looked up by the call's token ids (shared by the heads too).
#extension GL_GOOGLE_include_directive : require
#include "rfa_phase.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint D = 32;

layout(std430, binding = 0) readonly buffer Wb { vec2 omega[]; };  // (hi, lo) [H*D]
layout(std430, binding = 1) buffer THb { vec2 theta[]; };          // (hi, lo) [B, capacity, H*D]
layout(std430, binding = 2) readonly buffer Pb { uint pos0; uint kv_len; } span;
layout(std430, binding = 3) readonly buffer Ib { uint ids[]; };     // [B, n_new] (kind 3)
layout(std430, binding = 4) readonly buffer Sb { vec2 steps[]; };  // (hi, lo) [vocab, D] (kind 3)

#include "push_layouts.h"
layout(push_constant) uniform Push { PhaseScanPush pc; };

uint rotl(uint x, uint r) { return (x << r) | (x >> (32u - r)); }
uint murmur_word(uint h, uint k) {
  k *= 0xcc9e2d51u;
  k = rotl(k, 15u);
  k *= 0x1b873593u;
  h ^= k;
  h = rotl(h, 13u);
  return h * 5u + 0xe6546b64u;
}
uint step_hash(uint seed, uint layer, uint row, uint position, uint block) {
  uint h = murmur_word(murmur_word(murmur_word(murmur_word(seed, layer), row), position), block);
  h ^= 16u;  // the message length in bytes
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

// (a.x + a.y) + (b.x + b.y) as a renormalised (hi, lo) pair (two-sum, then fast two-sum).
vec2 df_add(vec2 a, vec2 b) {
  precise float s = a.x + b.x;
  precise float bb = s - a.x;
  precise float e = (a.x - (s - bb)) + (b.x - bb);
  precise float lo = (e + a.y) + b.y;
  precise float hi = s + lo;
  precise float lo2 = lo - (hi - s);
  return vec2(hi, lo2);
}

// a - k 2 pi with k = round(a / 2 pi): into [-pi, pi]. k * TWO_PI_HI is formed exactly and a.x - s
// is exact by Sterbenz's lemma (as in rfa_angle).
vec2 df_wrap(vec2 a) {
  precise float k = round(a.x * RFA_INV_2PI);
  if (k == 0.0) return a;
  float s, se;
  rfa_two_prod(k, RFA_TWO_PI_HI, s, se);
  precise float r = a.x - s;
  precise float small = (a.y - se) - k * RFA_TWO_PI_LO;
  precise float hi = r + small;
  precise float lo = small - (hi - r);
  return vec2(hi, lo);
}

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  const uint HD = pc.heads * D;
  if (gid >= pc.batch * HD) return;
  const uint b = gid / HD, hd = gid % HD, d = hd % D;
  const uint start = span.pos0 + pc.first;
  vec2 th = start > 0 ? theta[(b * pc.capacity + (start - 1) % pc.capacity) * HD + hd] : vec2(0.0);
  const vec2 w = omega[hd];
  const uint n = min(pc.count, pc.n_new - min(pc.first, pc.n_new));
  for (uint k = 0; k < n; ++k) {
    const uint p = start + k;
    vec2 phi = w;
    if (pc.kind == 3u) {
      // The host checked the ids against the vocabulary; min() only keeps a bad one in bounds.
      phi = steps[min(ids[b * pc.n_new + pc.first + k], pc.vocab - 1u) * D + d];
    } else if (pc.kind == 2u) {
      const float u = float(step_hash(pc.seed, pc.layer, b, p, d) >> 8) * (1.0 / 16777216.0);  // exact
      float hi, lo;
      rfa_two_prod(u, w.x, hi, lo);
      phi = vec2(2.0 * hi, 2.0 * (lo + u * w.y));
    }
    th = df_wrap(df_add(th, phi));
    theta[(b * pc.capacity + p % pc.capacity) * HD + hd] = th;
  }
}
