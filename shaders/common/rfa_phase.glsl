// Phases omega * t for t up to ~1e6 in float32 (docs/math.md §6). A plain float product loses the phase
// (ulp(1e6) = 0.06 rad), so both omega and t arrive as (hi, lo) float pairs holding a double value,
// the leading product is formed error-free (two-product), and the large part is reduced by 2 pi
// with a two-constant Cody-Waite step whose leading product k * TWO_PI_HI is exact as well.
// (FMA-based two-products were not exact on lavapipe: the t ~ 1e6 test failed with them.)
#ifndef RFA_PHASE_GLSL
#define RFA_PHASE_GLSL

const float RFA_INV_2PI = 0.15915494309189535;
const float RFA_TWO_PI_HI = 6.28318548202514648;      // float(2 pi)
const float RFA_TWO_PI_LO = -1.7484555314695172e-7;   // 2 pi - float(2 pi)

// a * b = p + e exactly (Dekker's two-product with Veltkamp splits; no FMA needed, and `precise`
// forbids the compiler from contracting or reassociating any step).
void rfa_two_prod(float a, float b, out float p, out float e) {
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float pp = a * b;
  precise float ee = ((ah * bh - pp) + ah * bl + al * bh) + al * bl;
  p = pp;
  e = ee;
}

// omega * t reduced to about [-pi, pi]; w = (hi, lo) of omega, t = (hi, lo) of the timestamp.
// k * TWO_PI_HI is also formed exactly, and p - k * TWO_PI_HI is exact by Sterbenz's lemma.
float rfa_angle(vec2 w, vec2 t) {
  float p, e;
  rfa_two_prod(w.x, t.x, p, e);
  precise float k = round(p * RFA_INV_2PI);
  float s, se;
  rfa_two_prod(k, RFA_TWO_PI_HI, s, se);
  precise float r = p - s;
  precise float small = (e - se) - k * RFA_TWO_PI_LO + (w.x * t.y + w.y * t.x);
  precise float out_r = r + small;
  return out_r;
}

// e^{i theta} as (cos, sin).
vec2 rfa_cis(float theta) { return vec2(cos(theta), sin(theta)); }
vec2 rfa_cmul(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

#endif
