// Reading the rotated caches, shared by the fused kernel, the probes and the tomography. The caches
// are rings: absolute position p lives in slot p % capacity; with a window W, query i sees keys
// [i - W + 1, i]. The including shader declares the push block `pc` (capacity, window), Qc and Kc,
// D, and enables GL_EXT_control_flow_attributes.
#ifndef RFA_CACHE_RING_GLSL
#define RFA_CACHE_RING_GLSL

// The ring slot of absolute position p (no division while the ring has not wrapped).
uint slot_of(uint p) { return p < pc.capacity ? p : p % pc.capacity; }
// The first key query position i may see.
uint first_key(uint i) { return (pc.window > 0 && i + 1 > pc.window) ? i + 1 - pc.window : 0; }

// |t_i - t_j| from the (hi, lo) timestamps of the time ring (non-causal layers see t_j > t_i): the
// lag of the AFA and RT-RFA pair terms (common/afa_pair.glsl, rt_pair.glsl).
float pair_lag(vec2 ti, vec2 tj) { return abs((ti.x - tj.x) + (ti.y - tj.y)); }

// Re(conj(Q~_i) K~_j) of the cached cells ic, jc. Unrolled: CPU drivers (lavapipe) cap a loop's
// iterations (~65535 in all, to stop runaway shaders), and a D = 64 loop left as a loop inside a
// walk over ~1000 keys hits the cap and silently ends early.
float cache_cross(uint ic, uint jc) {
  float cross = 0.0;
  [[unroll]] for (uint d = 0; d < D; ++d) cross += dot(Qc[ic * D + d], KV_LOAD(Kc[jc * D + d]));
  return cross;
}

#endif
