// Complex input RMS norm and rotation into the stationary frame (docs/reference-code.md §2, §4.4), writing
// the new positions [pos0, pos0 + n_new) of the Q/K/V caches (ring slot p % capacity; pos0 comes
// from a buffer so a recorded command buffer serves every step). One invocation per (row, head,
// which of q/k/v). Also writes |Q~|^2, |K~|^2 (rotation-invariant) and V_norm (normalized, not rotated,
// half-split like the projections) for the confidence gate.
// UNIT (RT-RFA, docs/variant-rt.md §3.1): Q, K and V are cached as unit directions (x / max(|x|,
// 1e-12) per head); the value invocation writes log(m^2 + eps), m = |V| before normalisation, into
// both q_norm2 and k_norm2 (a token's magnitude serves it as a query and as a key), and the unit
// value unrotated into v_norm (the tangent projection's vh_i). Q and K invocations write no norm.
#extension GL_GOOGLE_include_directive : require
#include "kv_storage.glsl"
#include "rfa_phase.glsl"

layout(local_size_x = 64) in;
#include "kernel_ids.h"  // the ids, shared with the op that sets them
layout(constant_id = kRotD) const uint D = 32;
layout(constant_id = kRotInNorm) const bool IN_NORM = false;   // use_complex_input_norm = 1
layout(constant_id = kRotPhase) const uint PHASE = 0;          // rfa::PhaseSource: 0 omega t, else the phase ring
layout(constant_id = kRotRotateV) const bool ROTATE_V = true;  // false: values stored unrotated (Q/K-only rotation)
layout(constant_id = kRotUnit) const bool UNIT = false;        // RT-RFA: unit directions and log-magnitudes
layout(constant_id = kRotMagEps) const float MAG_EPS = 1e-6;   // RT-RFA: eps of log(m^2 + eps)

layout(std430, binding = 0) readonly buffer Wb { vec2 omega[]; };   // (hi, lo) [H*D]
layout(std430, binding = 1) readonly buffer Gb { float gains[]; };  // [4][H*D]: q, k, v, o
layout(std430, binding = 2) readonly buffer Tb { vec2 ts[]; };      // (hi, lo) [B, capacity]
layout(std430, binding = 3) readonly buffer QPb { float q_proj[]; };
layout(std430, binding = 4) readonly buffer KPb { float k_proj[]; };
layout(std430, binding = 5) readonly buffer VPb { float v_proj[]; };
layout(std430, binding = 6) writeonly buffer Qb { vec2 Qc[]; };
layout(std430, binding = 7) writeonly buffer Kb { KV_T Kc[]; };
layout(std430, binding = 8) writeonly buffer Vb { KV_T Vc[]; };
layout(std430, binding = 9) writeonly buffer QNb { float q_norm2[]; };
layout(std430, binding = 10) writeonly buffer KNb { float k_norm2[]; };
layout(std430, binding = 11) writeonly buffer VNb { float v_norm[]; };
layout(std430, binding = 12) readonly buffer Pb { uint pos0; uint kv_len; } span;
layout(std430, binding = 13) readonly buffer THb { vec2 theta[]; };  // (hi, lo) [B, capacity, H*D] (PHASE != 0)

#include "push_layouts.h"
layout(push_constant) uniform Push { RotatePush pc; };

float proj(uint which, uint idx) {
  return which == 0 ? q_proj[idx] : (which == 1 ? k_proj[idx] : v_proj[idx]);
}

void main() {
  const uint gid = gl_GlobalInvocationID.x;
  if (gid >= pc.batch * pc.n_new * pc.heads * 3) return;
  const uint which = gid % 3, rest = gid / 3;
  const uint h = rest % pc.heads, r = rest / pc.heads;
  const uint b = r / pc.n_new, p = (span.pos0 + r % pc.n_new) % pc.capacity;  // ring slot
  const uint HD = pc.heads * D, row = r * 2 * HD;

  vec2 z[D];
  float ss = 0.0;
  for (uint d = 0; d < D; ++d) {
    z[d] = vec2(proj(which, row + h * D + d), proj(which, row + HD + h * D + d));
    ss += dot(z[d], z[d]);
  }
  if (IN_NORM) {
    const float inv = 1.0 / sqrt(ss / float(D) + 1e-6);
    ss = 0.0;
    for (uint d = 0; d < D; ++d) {
      z[d] *= inv * gains[which * HD + h * D + d];
      ss += dot(z[d], z[d]);
    }
  }
  float log_m2 = 0.0;
  if (UNIT) {
    log_m2 = log(ss + MAG_EPS);
    const float inv = 1.0 / max(sqrt(ss), 1e-12);
    ss = 0.0;
    for (uint d = 0; d < D; ++d) {
      z[d] *= inv;
      ss += dot(z[d], z[d]);
    }
  }
  const uint cell = (b * pc.heads + h) * pc.capacity + p;
  const vec2 t = ts[b * pc.capacity + p];
  float ss_stored = 0.0;  // |K~|^2 of the values as stored (fp16 K: of the rounded values)
  for (uint d = 0; d < D; ++d) {
    // The angle of this position: omega t (RFA) or the accumulated phase from rfa_phase_scan.comp.
    vec2 th = vec2(0.0);
    if (PHASE != 0) th = theta[(b * pc.capacity + p) * HD + h * D + d];
    const float angle = PHASE == 0 ? rfa_angle(omega[h * D + d], t) : th.x + th.y;
    const vec2 zr = (which == 2 && !ROTATE_V) ? z[d] : rfa_cmul(z[d], rfa_cis(-angle));
    if (which == 0) {
      Qc[cell * D + d] = zr;
    } else {
      const KV_T stored = KV_STORE(zr);
      if (which == 1) Kc[cell * D + d] = stored;
      else Vc[cell * D + d] = stored;
      const vec2 back = KV_LOAD(stored);
      ss_stored += dot(back, back);
    }
  }
  // With fp16 K the Mahalanobis residual |Q~ - E K~|^2 is expanded from |K~|^2 and the cross term
  // of the stored K~, so |K~|^2 must be of the stored values too (else the expansion can go < 0).
  if (RFA_KV_F16 != 0 && which == 1) ss = ss_stored;
  if (UNIT) {
    if (which == 2) {
      q_norm2[cell] = log_m2;
      k_norm2[cell] = log_m2;
    }
  } else if (which == 0) {
    q_norm2[cell] = ss;
  } else if (which == 1) {
    k_norm2[cell] = ss;
  }
  if (which == 2)
    for (uint d = 0; d < D; ++d) {
      v_norm[row + h * D + d] = z[d].x;
      v_norm[row + HD + h * D + d] = z[d].y;
    }
}
