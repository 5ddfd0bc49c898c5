#include "reference/acc_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

namespace rfa::ref {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kTwoPi = 2.0 * kPi;  // exact doubling of the double pi
constexpr double kInf = std::numeric_limits<double>::infinity();

cd cis(double angle) { return cd(std::cos(angle), std::sin(angle)); }

uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

Status bad(const char* where, const std::string& what) {
  return make_error(Code::invalid_argument, std::string(where) + ": " + what);
}

size_t sz(long long a) { return (size_t)a; }

Status check_layer(const char* where, const AccLayer& L) {
  if (L.heads < 1) return bad(where, "heads must be >= 1, got " + std::to_string(L.heads));
  if (L.dim < 1) return bad(where, "dim must be >= 1, got " + std::to_string(L.dim));
  if (!L.alibi_slope.empty()) {
    if (L.alibi_slope.size() != sz(L.heads))
      return bad(where, "alibi_slope has " + std::to_string(L.alibi_slope.size()) + " entries, heads = " +
                            std::to_string(L.heads) + " (or leave it empty)");
    for (double s : L.alibi_slope)
      if (!std::isfinite(s) || s < 0) return bad(where, "alibi_slope must be finite and >= 0");
  }
  return Status::Ok();
}

// The number of theta channels per position implied by a step array of `size` values for `tokens`
// positions: D (shared by the heads) or H*D (per head); 0 when neither.
int channels_of(size_t size, size_t tokens, int H, int D) {
  if (size == tokens * sz(D)) return D;
  if (size == tokens * sz(H) * sz(D)) return H * D;
  return 0;
}

double slope_of(const AccLayer& L, int h) { return L.alibi_slope.empty() ? 0.0 : L.alibi_slope[sz(h)]; }

// One query row of one head, straight from the definitions. Keys j = 0..count-1; key(j) gives
// pointers to K_j, V_j (D values of this head) and theta_j (D values of this head's channels).
// Fills est (D values), the attention row (count values) and returns the row's log-sum-exp.
template <typename KeyFn>
double attend_row(const AccLayer& L, int h, int i, const cd* q, const double* th_i, int count, KeyFn key, cd* est,
                  double* a_row) {
  const int D = L.dim;
  const double scale = 1.0 / std::sqrt(2.0 * D);
  const double slope = slope_of(L, h);
  std::vector<double> logit(sz(count));
  double m = -kInf;
  for (int j = 0; j < count; ++j) {
    const cd* k;
    const cd* v;
    const double* th_j;
    key(j, &k, &v, &th_j);
    double s = 0.0;
    for (int b = 0; b < D; ++b) s += (std::conj(q[b]) * k[b] * cis(th_i[b] - th_j[b])).real();
    logit[sz(j)] = s * scale - slope * std::fabs((double)(i - j));
    m = std::max(m, logit[sz(j)]);
  }
  double l = 0.0;
  for (int j = 0; j < count; ++j) l += std::exp(logit[sz(j)] - m);
  for (int b = 0; b < D; ++b) est[b] = cd(0, 0);
  for (int j = 0; j < count; ++j) {
    const double a = std::exp(logit[sz(j)] - m) / l;
    a_row[j] = a;
    const cd* k;
    const cd* v;
    const double* th_j;
    key(j, &k, &v, &th_j);
    for (int b = 0; b < D; ++b) {
      switch (L.value_rotation) {
        case AccValueRotation::none: est[b] += a * v[b]; break;
        case AccValueRotation::counter_rotate: est[b] += a * cis(th_i[b] - th_j[b]) * v[b]; break;
        case AccValueRotation::rotate_only: est[b] += a * cis(-th_j[b]) * v[b]; break;
      }
    }
  }
  return m + std::log(l);
}

}  // namespace

double acc_wrap(double x) {
  if (!std::isfinite(x)) return std::numeric_limits<double>::quiet_NaN();
  double y = std::remainder(x, kTwoPi);  // exact, in [-pi, pi]
  if (y <= -kPi) y += kTwoPi;
  return y;
}

uint32_t acc_murmur3_words(const uint32_t* words, int n, uint32_t seed) {
  uint32_t h = seed;
  for (int w = 0; w < n; ++w) {
    uint32_t k = words[w];
    k *= 0xcc9e2d51u;
    k = rotl(k, 15);
    k *= 0x1b873593u;
    h ^= k;
    h = rotl(h, 13);
    h = h * 5u + 0xe6546b64u;
  }
  h ^= (uint32_t)(4 * n);  // the message length in bytes
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

uint32_t acc_hash(uint32_t seed, uint32_t layer, uint32_t row, uint32_t position, uint32_t block) {
  const uint32_t words[4] = {layer, row, position, block};
  return acc_murmur3_words(words, 4, seed);
}

double acc_uniform(uint32_t seed, uint32_t layer, uint32_t row, uint32_t position, uint32_t block) {
  // The top 24 bits: an integer below 2^24, exact in fp32, scaled by a power of two (exact).
  return (double)(acc_hash(seed, layer, row, position, block) >> 8) * (1.0 / 16777216.0);
}

Status acc_steps(const AccStepSource& src, int B, int N, int position0, int H, int D, const std::vector<double>& omega,
                 const std::vector<int32_t>& tokens, std::vector<double>* phi) {
  const char* where = "acc_steps";
  if (B < 0 || N < 0) return bad(where, "B and N must be >= 0");
  if (H < 1 || D < 1) return bad(where, "H and D must be >= 1");
  if (position0 < 0) return bad(where, "position0 must be >= 0");
  const size_t HD = sz(H) * sz(D);
  if (src.kind != AccStepKind::learned) {
    if (omega.size() != HD)
      return bad(where, "omega has " + std::to_string(omega.size()) + " entries, H*D = " + std::to_string(HD));
    for (double w : omega)
      if (!std::isfinite(w)) return bad(where, "omega must be finite");
  } else {
    if (!src.table) return bad(where, "table is missing (learned steps)");
    if (src.vocab < 1) return bad(where, "vocab must be >= 1 (learned steps)");
    if (src.table->size() != sz(src.vocab) * sz(D))
      return bad(where, "table has " + std::to_string(src.table->size()) + " entries, vocab*D = " +
                            std::to_string(sz(src.vocab) * sz(D)));
    for (double x : *src.table)
      if (!std::isfinite(x)) return bad(where, "table must be finite");
    if (tokens.size() != sz(B) * sz(N))
      return bad(where, "tokens has " + std::to_string(tokens.size()) + " entries, B*N = " + std::to_string(sz(B) * sz(N)));
    for (size_t n = 0; n < tokens.size(); ++n)
      if (tokens[n] < 0 || tokens[n] >= src.vocab)
        return make_error(Code::input_error, std::string(where) + ": tokens[" + std::to_string(n) + "] = " +
                                                 std::to_string(tokens[n]) + " is outside [0, vocab = " +
                                                 std::to_string(src.vocab) + ")");
  }
  phi->assign(sz(B) * sz(N) * HD, 0.0);
  for (int b = 0; b < B; ++b)
    for (int n = 0; n < N; ++n) {
      const uint32_t position = (uint32_t)position0 + (uint32_t)n;
      double* out = phi->data() + (sz(b) * sz(N) + sz(n)) * HD;
      for (int d = 0; d < D; ++d) {
        switch (src.kind) {
          case AccStepKind::rope:
            for (int h = 0; h < H; ++h) out[sz(h) * sz(D) + sz(d)] = omega[sz(h) * sz(D) + sz(d)];
            break;
          case AccStepKind::random: {
            // One draw per (row, position, block), shared by the heads, scaled by each head's bank.
            const double u = acc_uniform(src.seed, src.layer, (uint32_t)b, position, (uint32_t)d);
            for (int h = 0; h < H; ++h) out[sz(h) * sz(D) + sz(d)] = 2.0 * omega[sz(h) * sz(D) + sz(d)] * u;
            break;
          }
          case AccStepKind::learned: {
            const int32_t tok = tokens[sz(b) * sz(N) + sz(n)];
            for (int h = 0; h < H; ++h) out[sz(h) * sz(D) + sz(d)] = (*src.table)[sz(tok) * sz(D) + sz(d)];
            break;
          }
        }
      }
    }
  return Status::Ok();
}

Status acc_prefix(const std::vector<double>& phi, int B, int N, int C, std::vector<double>* theta) {
  const char* where = "acc_prefix";
  if (B < 0 || N < 0 || C < 1) return bad(where, "B, N must be >= 0 and C >= 1");
  if (phi.size() != sz(B) * sz(N) * sz(C))
    return bad(where, "phi has " + std::to_string(phi.size()) + " entries, B*N*C = " + std::to_string(sz(B) * sz(N) * sz(C)));
  for (double x : phi)
    if (!std::isfinite(x)) return make_error(Code::input_error, std::string(where) + ": phi must be finite");
  theta->assign(phi.size(), 0.0);
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < C; ++c) {
      double run = 0.0;  // theta before the first position
      for (int n = 0; n < N; ++n) {
        const size_t idx = (sz(b) * sz(N) + sz(n)) * sz(C) + sz(c);
        run = acc_wrap(run + phi[idx]);
        (*theta)[idx] = run;
      }
    }
  return Status::Ok();
}

Status acc_attention(const AccLayer& L, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                     const std::vector<cd>& V, const std::vector<double>& phi, AccOutputs* out, bool want_matrices) {
  const char* where = "acc_attention";
  RFA_TRY(check_layer(where, L));
  if (B < 0 || N < 0) return bad(where, "B and N must be >= 0");
  const int H = L.heads, D = L.dim;
  const size_t n = sz(B) * sz(N) * sz(H) * sz(D);
  const std::pair<const char*, const std::vector<cd>*> qkv[3] = {{"Q", &Q}, {"K", &K}, {"V", &V}};
  for (const auto& [name, z] : qkv)
    if (z->size() != n)
      return bad(where, std::string(name) + " has " + std::to_string(z->size()) + " values, B*N*H*D = " + std::to_string(n));
  const size_t tokens = sz(B) * sz(N);
  const int C = tokens == 0 ? D : channels_of(phi.size(), tokens, H, D);
  if (C == 0)
    return bad(where, "phi has " + std::to_string(phi.size()) + " entries, B*N*D = " + std::to_string(tokens * sz(D)) +
                          " or B*N*H*D = " + std::to_string(n) + " expected");

  AccOutputs& o = *out;
  o = AccOutputs{};
  o.B = B;
  o.N = N;
  o.H = H;
  o.D = D;
  if (tokens == 0) return Status::Ok();
  RFA_TRY(acc_prefix(phi, B, N, C, &o.theta));
  const size_t rows = sz(B) * sz(H) * sz(N);
  o.est.assign(n, cd(0, 0));
  o.row_lse.assign(rows, -kInf);
  if (want_matrices) o.A.assign(rows * sz(N), 0.0);

  std::vector<double> a_row(sz(N));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      // This head's theta channels: all heads share the D channels, or head h owns h*D..h*D+D-1.
      const size_t ch0 = C == D ? 0 : sz(h) * sz(D);
      auto zidx = [&](int pos) { return ((sz(b) * sz(N) + sz(pos)) * sz(H) + sz(h)) * sz(D); };
      auto tidx = [&](int pos) { return (sz(b) * sz(N) + sz(pos)) * sz(C) + ch0; };
      auto key = [&](int j, const cd** k, const cd** v, const double** th) {
        *k = K.data() + zidx(j);
        *v = V.data() + zidx(j);
        *th = o.theta.data() + tidx(j);
      };
      for (int i = 0; i < N; ++i) {
        const int count = L.causal ? i + 1 : N;
        const size_t r = (sz(b) * sz(H) + sz(h)) * sz(N) + sz(i);
        o.row_lse[r] = attend_row(L, h, i, Q.data() + zidx(i), o.theta.data() + tidx(i), count, key,
                                  o.est.data() + zidx(i), a_row.data());
        if (want_matrices) std::copy(a_row.begin(), a_row.begin() + count, o.A.begin() + (long)(r * sz(N)));
      }
    }
  return Status::Ok();
}

Status acc_decode_begin(const AccLayer& L, int B, AccDecodeState* st) {
  const char* where = "acc_decode_begin";
  RFA_TRY(check_layer(where, L));
  if (!L.causal) return bad(where, "causal must be true: a decode step cannot see later positions");
  if (B < 1) return bad(where, "B must be >= 1");
  *st = AccDecodeState{};
  st->B = B;
  st->H = L.heads;
  st->D = L.dim;
  return Status::Ok();
}

Status acc_decode_step(const AccLayer& L, AccDecodeState* st, const std::vector<cd>& q, const std::vector<cd>& k,
                       const std::vector<cd>& v, const std::vector<double>& phi, AccStepOutputs* out) {
  const char* where = "acc_decode_step";
  RFA_TRY(check_layer(where, L));
  if (!L.causal) return bad(where, "causal must be true: a decode step cannot see later positions");
  const int B = st->B, H = st->H, D = st->D;
  if (B < 1 || H != L.heads || D != L.dim)
    return bad(where, "state does not match the layer (call acc_decode_begin with this layer)");
  const size_t n = sz(B) * sz(H) * sz(D);
  const std::pair<const char*, const std::vector<cd>*> qkv[3] = {{"q", &q}, {"k", &k}, {"v", &v}};
  for (const auto& [name, z] : qkv)
    if (z->size() != n)
      return bad(where, std::string(name) + " has " + std::to_string(z->size()) + " values, B*H*D = " + std::to_string(n));
  const int C = channels_of(phi.size(), sz(B), H, D);
  if (C == 0 || (st->length > 0 && C != st->C))
    return bad(where, "phi has " + std::to_string(phi.size()) + " entries, B*D = " + std::to_string(sz(B) * sz(D)) +
                          " or B*H*D = " + std::to_string(n) + " expected (the same layout at every step)");
  for (double x : phi)
    if (!std::isfinite(x)) return make_error(Code::input_error, std::string(where) + ": phi must be finite");
  if (st->length == 0) {
    st->C = C;
    st->theta_last.assign(sz(B) * sz(C), 0.0);
  }

  // theta_N = wrap(theta_last + phi_N), then append this position to the cache.
  for (size_t c = 0; c < st->theta_last.size(); ++c) st->theta_last[c] = acc_wrap(st->theta_last[c] + phi[c]);
  st->theta_cache.insert(st->theta_cache.end(), st->theta_last.begin(), st->theta_last.end());
  st->K.insert(st->K.end(), k.begin(), k.end());
  st->V.insert(st->V.end(), v.begin(), v.end());
  const int len = ++st->length;
  const int i = len - 1;

  out->est.assign(n, cd(0, 0));
  out->row_lse.assign(sz(B) * sz(H), -kInf);
  out->A.assign(sz(B) * sz(H) * sz(len), 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const size_t ch0 = C == D ? 0 : sz(h) * sz(D);
      auto key = [&](int j, const cd** kk, const cd** vv, const double** th) {
        const size_t z = ((sz(j) * sz(B) + sz(b)) * sz(H) + sz(h)) * sz(D);
        *kk = st->K.data() + z;
        *vv = st->V.data() + z;
        *th = st->theta_cache.data() + (sz(j) * sz(B) + sz(b)) * sz(C) + ch0;
      };
      const size_t r = sz(b) * sz(H) + sz(h);
      out->row_lse[r] = attend_row(L, h, i, q.data() + r * sz(D), st->theta_last.data() + sz(b) * sz(C) + ch0, len, key,
                                   out->est.data() + r * sz(D), out->A.data() + r * sz(len));
    }
  return Status::Ok();
}

Status acc_first_harmonic(const std::vector<double>& phi, int M, int C, std::vector<double>* rho) {
  const char* where = "acc_first_harmonic";
  if (M < 1 || C < 1) return bad(where, "M and C must be >= 1");
  if (phi.size() != sz(M) * sz(C))
    return bad(where, "phi has " + std::to_string(phi.size()) + " entries, M*C = " + std::to_string(sz(M) * sz(C)));
  rho->assign(sz(C), 0.0);
  for (int c = 0; c < C; ++c) {
    cd s(0, 0);
    for (int m = 0; m < M; ++m) s += cis(phi[sz(m) * sz(C) + sz(c)]);
    (*rho)[sz(c)] = std::abs(s / (double)M);
  }
  return Status::Ok();
}

double acc_uniform_first_harmonic(double omega) {
  return omega == 0.0 ? 1.0 : std::fabs(std::sin(omega)) / std::fabs(omega);
}

Result<int64_t> acc_mixing_window(double rho, double eps) {
  const char* where = "acc_mixing_window";
  if (!(rho >= 0.0 && rho <= 1.0)) return bad(where, "rho must lie in [0, 1]");
  if (!(eps > 0.0 && eps < 1.0)) return bad(where, "eps must lie in (0, 1)");
  if (rho == 0.0) return int64_t{1};
  if (rho == 1.0) return int64_t{-1};
  const double n = std::ceil(std::log(eps) / std::log(rho));
  return (int64_t)std::max(1.0, n);
}

Status acc_route_coherence(const std::vector<double>& theta, int N, int C, int n, std::vector<double>* coherence) {
  const char* where = "acc_route_coherence";
  if (N < 1 || C < 1) return bad(where, "N and C must be >= 1");
  if (theta.size() != sz(N) * sz(C))
    return bad(where, "theta has " + std::to_string(theta.size()) + " entries, N*C = " + std::to_string(sz(N) * sz(C)));
  if (n < 0 || n >= N) return bad(where, "n must lie in [0, N)");
  coherence->assign(sz(C), 0.0);
  for (int c = 0; c < C; ++c) {
    cd s(0, 0);
    for (int i = n; i < N; ++i) s += cis(theta[sz(i) * sz(C) + sz(c)] - theta[sz(i - n) * sz(C) + sz(c)]);
    (*coherence)[sz(c)] = std::abs(s / (double)(N - n));
  }
  return Status::Ok();
}

double acc_matched_score(const double* theta_i, const double* theta_j, int D) {
  double s = 0.0;
  for (int b = 0; b < D; ++b) s += std::cos(theta_i[b] - theta_j[b]);
  return s / D;
}

Status acc_matched_score_by_lag(const std::vector<double>& theta, int N, int D, int n, double* mean) {
  const char* where = "acc_matched_score_by_lag";
  if (N < 1 || D < 1) return bad(where, "N and D must be >= 1");
  if (theta.size() != sz(N) * sz(D))
    return bad(where, "theta has " + std::to_string(theta.size()) + " entries, N*D = " + std::to_string(sz(N) * sz(D)));
  if (n < 0 || n >= N) return bad(where, "n must lie in [0, N)");
  double s = 0.0;
  for (int i = n; i < N; ++i) s += acc_matched_score(theta.data() + sz(i) * sz(D), theta.data() + sz(i - n) * sz(D), D);
  *mean = s / (N - n);
  return Status::Ok();
}

double acc_expected_matched_score(const std::vector<double>& omega, int64_t n, bool random) {
  if (omega.empty()) return 0.0;
  double s = 0.0;
  for (double w : omega) {
    // E e^{i phi} = e^{i w} sinc(w) for phi ~ U(0, 2w), so E e^{i (sum of n steps)} = e^{i n w} sinc(w)^n.
    const double sinc = w == 0.0 ? 1.0 : std::sin(w) / w;
    s += std::cos((double)n * w) * (random ? std::pow(sinc, (double)n) : 1.0);
  }
  return s / (double)omega.size();
}

Status acc_far_mass(const std::vector<double>& A, int N, int i, int w, AccFarMass* out) {
  const char* where = "acc_far_mass";
  if (N < 1) return bad(where, "N must be >= 1");
  if (A.size() != sz(N) * sz(N))
    return bad(where, "A has " + std::to_string(A.size()) + " entries, N*N = " + std::to_string(sz(N) * sz(N)));
  if (i < 0 || i >= N) return bad(where, "i must lie in [0, N)");
  if (w < 1) return bad(where, "w must be >= 1");
  *out = AccFarMass{};
  double sq = 0.0;
  for (int j = 0; j <= i - w; ++j) {
    const double a = A[sz(i) * sz(N) + sz(j)];
    out->mass += a;
    sq += a * a;
    ++out->count;
  }
  out->norm = std::sqrt(sq);
  return Status::Ok();
}

Result<double> acc_far_mass_lower_bound(double nN, double nF, double Bd) {
  const char* where = "acc_far_mass_lower_bound";
  if (!(nN >= 0.0) || !std::isfinite(nN)) return bad(where, "nN must be finite and >= 0");
  if (!(nF >= 0.0) || !std::isfinite(nF)) return bad(where, "nF must be finite and >= 0");
  if (nN + nF <= 0.0) return bad(where, "nN + nF must be > 0");
  if (!(Bd >= 0.0) || !std::isfinite(Bd)) return bad(where, "Bd must be finite and >= 0");
  // Far logits at -Bd, near logits at +Bd is the worst case for the far set:
  // nF e^{-Bd} / (nF e^{-Bd} + nN e^{Bd}).
  return nF / (nF + nN * std::exp(2.0 * Bd));
}

Status acc_value_coherence(const std::vector<double>& A, const std::vector<double>& theta, int N, int D, int i, int w,
                           AccValueCoherence* out) {
  const char* where = "acc_value_coherence";
  if (N < 1 || D < 1) return bad(where, "N and D must be >= 1");
  if (A.size() != sz(N) * sz(N))
    return bad(where, "A has " + std::to_string(A.size()) + " entries, N*N = " + std::to_string(sz(N) * sz(N)));
  if (theta.size() != sz(N) * sz(D))
    return bad(where, "theta has " + std::to_string(theta.size()) + " entries, N*D = " + std::to_string(sz(N) * sz(D)));
  if (i < 0 || i >= N) return bad(where, "i must lie in [0, N)");
  if (w < 1) return bad(where, "w must be >= 1");
  out->coherent.assign(sz(D), 0.0);
  out->identity = 0.0;
  std::vector<cd> s(sz(D), cd(0, 0));
  for (int j = 0; j <= i - w; ++j) {
    const double a = A[sz(i) * sz(N) + sz(j)];
    out->identity += a;
    for (int b = 0; b < D; ++b) s[sz(b)] += a * cis(theta[sz(i) * sz(D) + sz(b)] - theta[sz(j) * sz(D) + sz(b)]);
  }
  for (int b = 0; b < D; ++b) out->coherent[sz(b)] = std::abs(s[sz(b)]);
  return Status::Ok();
}

}  // namespace rfa::ref
