// Token sampling, one workgroup per row of logits: greedy, temperature, top-k, top-p, with the host
// sampler's exact sorted-order semantics (rfa::Sampler::pick) and no sort. Shared by the kernels
// sample (SAMPLE_F64 0: probabilities in fp32) and sample_f64 (SAMPLE_F64 1: in fp64, for devices
// with shaderFloat64), both listed in shaders/variants.cmake.
//
// The order. The host sorts by logit descending, ties by id ascending. Here every logit becomes an
// order key sk (ascending sk = descending logit; -0 and +0 equal, as the host's == says; NaN last)
// and the order is the lexicographic order of the 64-bit pair (sk, id). Each selection below finds
// "the first element in that order whose running weight reaches a target" by radix search: eight
// bits of (sk, id) at a time from the top, a 256-bin histogram of the candidates that match the
// digits found so far, a scan of the bins for the one where the running weight crosses the target.
// Four key digits, then as many id digits as the vocabulary needs; a search stops early when the
// chosen bin holds one element.
//
// The weights are exact. Counts (top-k) are integers; probabilities p = exp((x - max) / T) <= 1 are
// 0.64 fixed-point numbers summed in 96 bits (32 integer bits) with 32-bit shared atomics that carry
// by hand. Integer sums are exact and independent of the order of the additions, so the result
// does not depend on the workgroup size, on scheduling or on the device, and the targets are
// exact products of 64-bit fractions with 96-bit sums:
//   top-k:  the K-th element (count weights); the candidates are every element up to it.
//   top-p:  the first element where the kept mass reaches top_p * S (S: the kept mass), at least
//           the first element (host: acc = sum p_i / S >= top_p).
//   sample: the first element where the kept mass exceeds r = u * S_p (host: r < acc).
// The sample is searched among the top-k candidates with r < S_p, which lands inside the top-p
// prefix without a second membership test and lets both searches share the first histogram.
//
// Why the GPU and the host can differ: only through the probabilities themselves. The host sums
// exp() of doubles in sorted order; here each p is computed in fp32 (or fp64) and truncated to
// 2^-64. A different token comes back only when r = u * S (or top_p * S) lies within that rounding
// of a boundary of the running mass: about 1e-6 of S in fp32, 1e-15 of S in fp64. When every
// candidate ties with the maximum, the fp64 variant replays the host's double arithmetic instead
// (see main), because there top_p * n can be an exact count and the host's rounding decides.
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // invocations per row, at least 16

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };
// Written by the host before each submission (ops/sample.hpp: encode_sample_params): a recorded
// command buffer follows new settings and new draws without being recorded again.
struct Draw {
  uvec2 u;    // the row's uniform draw as a 0.64 fixed-point fraction (x: low word)
  uvec2 u_d;  // the same draw as a double's bits (x: low word)
};
layout(std430, binding = 1) readonly buffer Params {
  uint flags;           // bit 0: greedy (temperature <= 0); bit 1: top-p cut (top_p < 1)
  uint top_k;           // 0: no limit
  float temperature_f;  // the fp32 kernel's divisor
  uint reserved0;
  uvec2 temperature_d;  // the double's bits: the fp64 kernel's divisor
  uvec2 top_p_d;        // the double's bits
  uvec2 top_p;          // top_p as a 0.64 fixed-point fraction
  uvec2 reserved1;
  Draw draws[];         // one per row
} prm;
layout(std430, binding = 2) writeonly buffer Tokens { uint tokens[]; };

#include "push_layouts.h"
layout(push_constant) uniform Push { SamplePush pc; };

const uint BINS = 256;
const uint NONE = 0xFFFFFFFFu;

// Histograms: set 0 holds the first mass histogram (kept for the sample search), set 1 the rest.
shared uint h_cnt[2 * BINS], h_any[2 * BINS], h_lo[2 * BINS], h_mid[2 * BINS], h_hi[2 * BINS];
shared uvec3 g_sum[16];
shared uint g_cnt[16];
// Search state, written by invocation 0 between barriers.
shared uint s_max_sk, s_argmax;
shared uint st_pre_sk, st_msk_sk, st_pre_id, st_msk_id, st_done, st_id, st_sk, st_uniform;
shared uvec3 st_base, st_target, st_cum;

uint row_base;
float mx;  // the row's largest logit

// Ascending sk = descending logit. -0 counts as +0 (the host compares values); NaN goes last.
uint order_key(float x) {
  uint b = floatBitsToUint(x);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return NONE;
  if ((b & 0x7FFFFFFFu) == 0u) b = 0u;
  const uint key = (b >> 31) != 0u ? ~b : (b | 0x80000000u);  // larger float, larger key
  return ~key;
}

// 96-bit unsigned numbers as (x: bits 0-31, y: bits 32-63, z: bits 64-95). A probability is
// 0.64 fixed point: z is its integer part.
uvec3 add96(uvec3 a, uvec3 b) {
  uint c0, c1, c2;
  uvec3 r;
  r.x = uaddCarry(a.x, b.x, c0);
  r.y = uaddCarry(a.y, b.y, c1);
  r.y = uaddCarry(r.y, c0, c2);
  r.z = a.z + b.z + c1 + c2;
  return r;
}
bool less96(uvec3 a, uvec3 b) {
  if (a.z != b.z) return a.z < b.z;
  if (a.y != b.y) return a.y < b.y;
  return a.x < b.x;
}

void add_at(inout uint p[5], uint k, uint v) {
  for (; k < 5u && v != 0u; ++k) {
    uint c;
    p[k] = uaddCarry(p[k], v, c);
    v = c;
  }
}
// floor(f * b) for a 0.64 fraction f and a 96-bit b, exactly; `inexact` when bits were dropped.
uvec3 mul_frac(uvec2 f, uvec3 b, out bool inexact) {
  uint p[5] = uint[5](0u, 0u, 0u, 0u, 0u);
  for (uint i = 0u; i < 2u; ++i)
    for (uint j = 0u; j < 3u; ++j) {
      uint hi, lo;
      umulExtended(f[i], b[j], hi, lo);
      add_at(p, i + j, lo);
      add_at(p, i + j + 1u, hi);
    }
  inexact = (p[0] | p[1]) != 0u;
  return uvec3(p[2], p[3], p[4]);
}

#if SAMPLE_F64
// exp(d) for d in (-44.5, 0]: Cody-Waite reduction by ln 2 (fdlibm's split, so k * LN2_HI is
// exact), Taylor series to r^13 on |r| <= ln(2)/2 (truncation below 5e-18), then 2^k.
double exp_f64(double d) {
  const double INV_LN2 = 1.44269504088896338700lf;
  const double LN2_HI = 6.93147180369123816490e-01lf;
  const double LN2_LO = 1.90821492927058770002e-10lf;
  const double kd = roundEven(d * INV_LN2);
  const double r = (d - kd * LN2_HI) - kd * LN2_LO;
  double p = 1.0lf / 6227020800.0lf;
  p = p * r + 1.0lf / 479001600.0lf;
  p = p * r + 1.0lf / 39916800.0lf;
  p = p * r + 1.0lf / 3628800.0lf;
  p = p * r + 1.0lf / 362880.0lf;
  p = p * r + 1.0lf / 40320.0lf;
  p = p * r + 1.0lf / 5040.0lf;
  p = p * r + 1.0lf / 720.0lf;
  p = p * r + 1.0lf / 120.0lf;
  p = p * r + 1.0lf / 24.0lf;
  p = p * r + 1.0lf / 6.0lf;
  p = p * r + 0.5lf;
  p = p * r + 1.0lf;
  p = p * r + 1.0lf;
  return ldexp(p, int(kd));
}
#endif

// The element's probability weight exp((x - max) / T) in 0.64 fixed point (truncated). The maximum
// itself weighs exactly 1, as on the host (exp(0)); weights below 2^-64 (d <= -44.5) are 0; NaN 0.
uvec3 mass_of(float x, uint sk) {
  if (sk == s_max_sk) return uvec3(0u, 0u, 1u);
  if (sk == NONE) return uvec3(0u);
#if SAMPLE_F64
  const double d = (double(x) - double(mx)) / packDouble2x32(prm.temperature_d);
  if (!(d > -44.5lf)) return uvec3(0u);
  const double p = exp_f64(d);
  if (p >= 1.0lf) return uvec3(0u, 0u, 1u);
  const double s = p * 4294967296.0lf;
  const uint hi = uint(s);
  return uvec3(uint((s - double(hi)) * 4294967296.0lf), hi, 0u);
#else
  const float d = (x - mx) / prm.temperature_f;
  if (!(d > -44.5)) return uvec3(0u);
  const float p = exp(d);
  if (p >= 1.0) return uvec3(0u, 0u, 1u);
  const float s = p * 4294967296.0;
  const uint hi = uint(s);
  return uvec3(uint((s - float(hi)) * 4294967296.0), hi, 0u);
#endif
}

// Adds w to bin i with 32-bit atomics: each word's overflow is carried into the next by hand, so
// the bin's 96-bit total is exact whatever order the additions land in.
void hist_add(uint i, uvec3 w) {
  uint c0 = 0u, c1, c2 = 0u;
  if (w.x != 0u) {
    const uint old = atomicAdd(h_lo[i], w.x);
    c0 = old + w.x < old ? 1u : 0u;
  }
  const uint m = uaddCarry(w.y, c0, c1);
  if (m != 0u) {
    const uint old = atomicAdd(h_mid[i], m);
    c2 = old + m < old ? 1u : 0u;
  }
  const uint h = w.z + c1 + c2;
  if (h != 0u) atomicAdd(h_hi[i], h);
}

uvec3 bin_weight(uint i, bool mass) { return mass ? uvec3(h_lo[i], h_mid[i], h_hi[i]) : uvec3(0u, 0u, h_cnt[i]); }

// Is element (sk, id) among the candidates, i.e. at or before the cut element (csk, cid)?
bool candidate(uint sk, uint id, uint csk, uint cid) { return sk < csk || (sk == csk && id <= cid); }

uint id_digits() { return pc.V <= 1u ? 0u : uint(findMSB(pc.V - 1u)) / 8u + 1u; }

// Adds a run of `n` elements (the last one `last`, total weight w) to bin i.
void flush_run(uint i, uint n, uint last, bool mass, uvec3 w) {
  if (n == 0u) return;
  atomicAdd(h_cnt[i], n);
  atomicMax(h_any[i], last);
  if (mass) hist_add(i, w);
}

// Histogram of digit d over the candidates that match the digits found so far, into set `set`.
// Each invocation sums runs of consecutive elements that fall into the same bin before touching
// shared memory: digit 0 (sign and exponent) puts most of a row into a few bins, and one atomic
// per run instead of per element spares their contention. Without `fill` only the barriers run
// (see search()).
void sweep(bool fill, uint set, uint d, bool mass, uint csk, uint cid) {
  const uint t = gl_LocalInvocationID.x;
  for (uint b = t; fill && b < BINS; b += WG) {
    h_cnt[set + b] = 0u;
    h_any[set + b] = 0u;
    h_lo[set + b] = 0u;
    h_mid[set + b] = 0u;
    h_hi[set + b] = 0u;
  }
  barrier();
  const uint pre_sk = st_pre_sk, msk_sk = st_msk_sk, pre_id = st_pre_id, msk_id = st_msk_id;
  const bool on_id = d >= 4u;
  const uint shift = on_id ? 8u * (4u + id_digits() - 1u - d) : 24u - 8u * d;
  uint run_bin = 0u, run_n = 0u, run_last = 0u;
  uvec3 run_w = uvec3(0u);
  for (uint j = t; fill && j < pc.V; j += WG) {
    const float x = logits[row_base + j];
    const uint sk = order_key(x);
    if (!candidate(sk, j, csk, cid) || (sk & msk_sk) != pre_sk || (j & msk_id) != pre_id) continue;
    const uint i = set + (((on_id ? j : sk) >> shift) & 0xFFu);
    if (i != run_bin) {
      flush_run(run_bin, run_n, run_last, mass, run_w);
      run_bin = i;
      run_n = 0u;
      run_w = uvec3(0u);
    }
    ++run_n;
    run_last = j;
    if (mass) run_w = add96(run_w, mass_of(x, sk));
  }
  flush_run(run_bin, run_n, run_last, mass, run_w);
  barrier();
}

const uint TARGET_GIVEN = 0u;   // st_target was set by the caller
const uint TARGET_TOP_P = 1u;   // max(ceil(top_p * S), 1 unit), S: the candidates' mass
const uint TARGET_SAMPLE = 2u;  // floor(u * S) + 1 unit: the first element whose running mass > u * S

// Finds the first candidate (at or before (csk, cid) in the order) whose running weight reaches the
// target: st_id, st_sk, and its running weight st_cum. With reuse, digit 0's histogram is already in
// set 0 (the previous search had the same candidates and weights).
//
// The digit loop always runs its full count, a search that is done early only passing the
// barriers: lavapipe (Mesa 22.3) mis-executes a `break` out of a loop with barriers, taken on a
// value every invocation read from shared memory, when the workgroup is not a multiple of its
// SIMD width (histogram updates from the last, partial SIMD group were lost).
void search(bool mass, uint csk, uint cid, uint target_mode, bool reuse) {
  const uint t = gl_LocalInvocationID.x;
  barrier();  // every invocation has read st_done, st_id and st_sk of the previous search
  if (t == 0u) {
    st_pre_sk = 0u;
    st_msk_sk = 0u;
    st_pre_id = 0u;
    st_msk_id = 0u;
    st_done = 0u;
    st_base = uvec3(0u);
  }
  barrier();
  const uint digits = 4u + id_digits();
  for (uint d = 0u; d < digits; ++d) {
    const bool searching = st_done == 0u;  // the same in every invocation: set before a barrier
    const uint set = (d == 0u && mass) ? 0u : BINS;
    sweep(searching && !(d == 0u && reuse), set, d, mass, csk, cid);
    if (searching && t < 16u) {
      uvec3 s = uvec3(0u);
      for (uint b = 0u; b < 16u; ++b) s = add96(s, bin_weight(set + 16u * t + b, mass));
      g_sum[t] = s;
    }
    barrier();
    if (searching && t == 0u) {
      if (d == 0u && target_mode != TARGET_GIVEN) {
        uvec3 total = uvec3(0u);
        for (uint g = 0u; g < 16u; ++g) total = add96(total, g_sum[g]);
        bool inexact;
        const uvec2 f = target_mode == TARGET_TOP_P ? prm.top_p : prm.draws[gl_WorkGroupID.x].u;
        uvec3 tg = mul_frac(f, total, inexact);
        if (target_mode == TARGET_SAMPLE || inexact || tg == uvec3(0u)) tg = add96(tg, uvec3(1u, 0u, 0u));
        st_target = tg;
      }
      // The invariant st_base < target <= st_base + (this histogram's total) puts the crossing in
      // a bin with positive weight, so the bin is never empty; the bounds below only guard.
      const uvec3 target = st_target;
      uvec3 acc = st_base;
      uint g = 0u;
      for (; g < 15u; ++g) {
        const uvec3 n = add96(acc, g_sum[g]);
        if (!less96(n, target)) break;
        acc = n;
      }
      uint b = 16u * g;
      for (; b < 16u * g + 15u; ++b) {
        const uvec3 n = add96(acc, bin_weight(set + b, mass));
        if (!less96(n, target)) break;
        acc = n;
      }
      st_base = acc;
      if (d < 4u) {
        const uint shift = 24u - 8u * d;
        st_pre_sk |= b << shift;
        st_msk_sk |= 0xFFu << shift;
      } else {
        const uint shift = 8u * (digits - 1u - d);
        st_pre_id |= b << shift;
        st_msk_id |= 0xFFu << shift;
      }
      if (h_cnt[set + b] == 1u || d + 1u == digits) {
        st_done = 1u;
        st_id = h_any[set + b];
        st_sk = order_key(logits[row_base + st_id]);
        st_cum = add96(acc, bin_weight(set + b, mass));
      }
    }
    barrier();
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint row = gl_WorkGroupID.x;
  row_base = pc.logits_offset + row * pc.row_stride;

  // The maximum and its first index (the host's max_element; greedy's answer).
  if (t == 0u) {
    s_max_sk = NONE;
    s_argmax = NONE;
  }
  barrier();
  uint best_sk = NONE, best_id = NONE;
  for (uint j = t; j < pc.V; j += WG) {
    const uint sk = order_key(logits[row_base + j]);
    if (sk < best_sk) {
      best_sk = sk;
      best_id = j;
    }
  }
  atomicMin(s_max_sk, best_sk);
  barrier();
  if (best_sk == s_max_sk) atomicMin(s_argmax, best_id);
  barrier();
  if ((prm.flags & 1u) != 0u) {
    if (t == 0u) tokens[pc.out_offset + row] = s_argmax;
    return;
  }
  mx = logits[row_base + s_argmax];

  // Top-k: the K-th element by count; the candidates are every element up to it.
  uint csk = NONE, cid = NONE;
  const uint K = prm.top_k;
  if (K > 0u && K < pc.V) {
    if (t == 0u) st_target = uvec3(0u, 0u, K);
    search(false, NONE, NONE, TARGET_GIVEN, false);
    csk = st_sk;
    cid = st_id;
  }

  // Digit 0's mass histogram of the candidates, in set 0: the first pass of every search below.
  barrier();
  if (t == 0u) {
    st_pre_sk = 0u;
    st_msk_sk = 0u;
    st_pre_id = 0u;
    st_msk_id = 0u;
  }
  sweep(true, 0u, 0u, true, csk, cid);
#if SAMPLE_F64
  // Every candidate weighs exactly 1 (all tied with the maximum): then the host's sums are exact
  // ratios of counts, a cut can fall exactly on top_p, and which side it lands on is decided by the
  // host's rounding of sum(1/n). Its arithmetic is cheap to replay in double here, so do that:
  // S = n; the cut is the first j with fl(1/n) added j times >= top_p; r = fl(u * cut); the token
  // is the one at place min(floor(r), cut - 1).
  if (t < 16u) {
    uvec3 s = uvec3(0u);
    uint c = 0u;
    for (uint b = 0u; b < 16u; ++b) {
      s = add96(s, bin_weight(16u * t + b, true));
      c += h_cnt[16u * t + b];
    }
    g_sum[t] = s;
    g_cnt[t] = c;
  }
  barrier();
  if (t == 0u) {
    uvec3 total = uvec3(0u);
    uint n = 0u;
    for (uint g = 0u; g < 16u; ++g) {
      total = add96(total, g_sum[g]);
      n += g_cnt[g];
    }
    st_uniform = total == uvec3(0u, 0u, n) ? 1u : 0u;
    if (st_uniform != 0u) {
      uint cut = n;
      if ((prm.flags & 2u) != 0u) {
        const double top_p = packDouble2x32(prm.top_p_d), q = 1.0lf / double(n);
        precise double acc = 0.0lf;
        for (uint j = 1u; j <= n; ++j) {
          acc += q;
          if (acc >= top_p) {
            cut = j;
            break;
          }
        }
      }
      precise const double r = packDouble2x32(prm.draws[row].u_d) * double(cut);
      st_target = uvec3(0u, 0u, min(uint(floor(r)), cut - 1u) + 1u);
    }
  }
  barrier();
  if (st_uniform != 0u) {
    search(false, csk, cid, TARGET_GIVEN, false);
    if (t == 0u) tokens[pc.out_offset + row] = st_id;
    return;
  }
#endif

  if ((prm.flags & 2u) != 0u) {
    // Top-p: the kept mass S_p is the running mass at the cut element; then r = u * S_p among the
    // same candidates (r < S_p, so the answer is at or before the cut).
    search(true, csk, cid, TARGET_TOP_P, true);
    if (t == 0u) {
      bool inexact;
      st_target = add96(mul_frac(prm.draws[row].u, st_cum, inexact), uvec3(1u, 0u, 0u));
    }
    search(true, csk, cid, TARGET_GIVEN, true);
  } else {
    search(true, csk, cid, TARGET_SAMPLE, true);
  }
  if (t == 0u) tokens[pc.out_offset + row] = st_id;
}
