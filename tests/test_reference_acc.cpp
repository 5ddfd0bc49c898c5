// The ACC twin (runtime/src/reference/acc_ref.hpp) against the contract docs/variant-acc.md:
// the special cases that must reduce to known mechanisms (RoPE, NoPE, RFA's rotation by omega t),
// order-freeness of the route angle, decode == prefill, the exact random-number generator, and
// the hand values of the diagnostics.
//
// The comparisons use an independent naive implementation below that PRE-ROTATES Q, K, V by
// absolute angles (as a GPU kernel does), while the twin forms every score from the relative phase.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu_test_support.hpp"
#include "reference/acc_ref.hpp"

using rfa::ref::cd;
namespace ref = rfa::ref;

namespace {

using rfa::test::random_complex;
using rfa::test::max_abs_diff;

constexpr double kPi = 3.14159265358979323846;

cd cis(double a) { return cd(std::cos(a), std::sin(a)); }

// Per-head banks that differ between heads: omega[h][d] = base^{-d/D} * (1 + 0.37 h).
std::vector<double> banks(int H, int D, double base = 100.0) {
  std::vector<double> w((size_t)H * D);
  for (int h = 0; h < H; ++h)
    for (int d = 0; d < D; ++d) w[(size_t)h * D + d] = std::pow(base, -(double)d / D) * (1.0 + 0.37 * h);
  return w;
}

struct Naive {
  std::vector<cd> est;
  std::vector<double> lse;  // [B][H][N]
};

// Rotary attention with absolute angles angle[B][N][H][D]: Z~ = Z e^{-i angle}, score =
// Re(Q~_i^H K~_j) / sqrt(2D) - slope_h |i - j|, softmax over j (j <= i when causal), then
// none: sum A V; counter_rotate: e^{+i angle_i} sum A V~; rotate_only: sum A V~.
Naive naive_rotary(int B, int N, int H, int D, const std::vector<cd>& Q, const std::vector<cd>& K,
                   const std::vector<cd>& V, const std::vector<double>& angle, ref::AccValueRotation mode, bool causal,
                   const std::vector<double>& slope) {
  const size_t n = (size_t)B * N * H * D;
  std::vector<cd> Qr(n), Kr(n), Vr(n);
  for (size_t x = 0; x < n; ++x) {
    const cd r = cis(-angle[x]);
    Qr[x] = Q[x] * r;
    Kr[x] = K[x] * r;
    Vr[x] = V[x] * r;
  }
  Naive out;
  out.est.assign(n, cd(0, 0));
  out.lse.assign((size_t)B * H * N, 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < N; ++i) {
        const int count = causal ? i + 1 : N;
        std::vector<double> s((size_t)count);
        const size_t qi = (((size_t)b * N + i) * H + h) * D;
        for (int j = 0; j < count; ++j) {
          const size_t kj = (((size_t)b * N + j) * H + h) * D;
          cd dot(0, 0);
          for (int d = 0; d < D; ++d) dot += std::conj(Qr[qi + d]) * Kr[kj + d];
          s[(size_t)j] = dot.real() / std::sqrt(2.0 * D) - (slope.empty() ? 0.0 : slope[(size_t)h]) * std::abs(i - j);
        }
        const double m = *std::max_element(s.begin(), s.end());
        double l = 0;
        for (double x : s) l += std::exp(x - m);
        out.lse[((size_t)b * H + h) * N + i] = m + std::log(l);
        for (int j = 0; j < count; ++j) {
          const double a = std::exp(s[(size_t)j] - m) / l;
          const size_t kj = (((size_t)b * N + j) * H + h) * D;
          for (int d = 0; d < D; ++d)
            out.est[qi + d] += a * (mode == ref::AccValueRotation::none ? V[kj + d] : Vr[kj + d]);
        }
        if (mode == ref::AccValueRotation::counter_rotate)
          for (int d = 0; d < D; ++d) out.est[qi + d] *= cis(angle[qi + d]);
      }
  return out;
}

// Distance between two angles on the circle.
double angle_dist(double a, double b) { return std::abs(cis(a) - cis(b)); }

const ref::AccValueRotation kModes[3] = {ref::AccValueRotation::none, ref::AccValueRotation::counter_rotate,
                                         ref::AccValueRotation::rotate_only};

bool mentions(const rfa::Status& s, const std::string& field) {
  return !s.ok() && s.message().find(field) != std::string::npos;
}

}  // namespace

TEST_CASE("acc: wrap keeps angles in (-pi, pi] and changes them by whole turns only") {
  CHECK(ref::acc_wrap(kPi) == kPi);
  CHECK(ref::acc_wrap(-kPi) == kPi);
  CHECK(ref::acc_wrap(0.0) == 0.0);
  CHECK(ref::acc_wrap(1.0) == 1.0);
  CHECK(ref::acc_wrap(-1.0) == -1.0);
  CHECK(std::isnan(ref::acc_wrap(INFINITY)));
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(-1e4, 1e4);
  for (int k = 0; k < 10000; ++k) {
    const double x = u(gen);
    const double y = ref::acc_wrap(x);
    CHECK(y > -kPi);
    CHECK(y <= kPi);
    const double turns = (x - y) / (2 * kPi);
    CHECK(std::fabs(turns - std::round(turns)) < 1e-12 * std::max(1.0, std::fabs(x)));
  }
}

TEST_CASE("acc: the generator is MurmurHash3_x86_32 (published test vectors) and its draws are pinned") {
  // Word-aligned MurmurHash3_x86_32 test vectors (0- and 1-word messages).
  CHECK(ref::acc_murmur3_words(nullptr, 0, 0) == 0u);
  CHECK(ref::acc_murmur3_words(nullptr, 0, 1) == 0x514E28B7u);
  CHECK(ref::acc_murmur3_words(nullptr, 0, 0xffffffffu) == 0x81F16F39u);
  const uint32_t zero = 0, ones = 0xffffffffu, w21 = 0x87654321u, aaaa = 0x61616161u, abcd = 0x64636261u;
  CHECK(ref::acc_murmur3_words(&zero, 1, 0) == 0x2362F9DEu);
  CHECK(ref::acc_murmur3_words(&ones, 1, 0) == 0x76293B50u);
  CHECK(ref::acc_murmur3_words(&w21, 1, 0) == 0xF55B516Bu);
  CHECK(ref::acc_murmur3_words(&w21, 1, 0x5082EDEEu) == 0x2362F9DEu);
  CHECK(ref::acc_murmur3_words(&aaaa, 1, 0x9747b28cu) == 0x5A97808Au);
  CHECK(ref::acc_murmur3_words(&abcd, 1, 0x9747b28cu) == 0xF0478627u);

  // Pinned draws (computed by an independent byte-wise MurmurHash3 over the 16-byte message
  // layer, row, position, block, little-endian): a GPU port must reproduce these bits.
  CHECK(ref::acc_hash(0, 0, 0, 0, 0) == 0x8134cdf8u);
  CHECK(ref::acc_hash(42, 1, 0, 7, 3) == 0xb9560565u);
  CHECK(ref::acc_hash(0xdeadbeefu, 15, 1, 65535, 47) == 0xb7dde5cbu);
  CHECK(ref::acc_hash(1, 2, 3, 4, 5) == 0x72ae4458u);
  CHECK(ref::acc_uniform(0, 0, 0, 0, 0) == 8467661.0 / 16777216.0);
  CHECK(ref::acc_uniform(42, 1, 0, 7, 3) == 12146181.0 / 16777216.0);
}

TEST_CASE("acc: uniform draws are deterministic, on the 2^-24 lattice in [0, 1), with U(0,1) moments") {
  const int n = 100000;
  double sum = 0, sum2 = 0, lo = 1, hi = 0;
  std::vector<int> bins(16, 0);
  for (int k = 0; k < n; ++k) {
    // Walk every argument: positions and blocks mostly, rows and layers and seeds a little.
    const uint32_t seed = 12345u + (uint32_t)(k % 3), layer = (uint32_t)(k % 5), row = (uint32_t)(k % 2);
    const uint32_t pos = (uint32_t)(k / 48), block = (uint32_t)(k % 48);
    const double u = ref::acc_uniform(seed, layer, row, pos, block);
    CHECK_MESSAGE(u == ref::acc_uniform(seed, layer, row, pos, block), "not deterministic");
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    const double scaled = u * 16777216.0;
    if (scaled != std::floor(scaled)) FAIL("draw off the 2^-24 lattice: " << u);
    sum += u;
    sum2 += u * u;
    ++bins[(size_t)(u * 16)];
  }
  CHECK(lo >= 0.0);
  CHECK(hi < 1.0);
  const double mean = sum / n;
  const double var = sum2 / n - mean * mean;
  // U(0,1): mean 1/2 (sd of the mean sqrt(1/12/n)), variance 1/12 (sd of the estimate sqrt(1/180/n)).
  CHECK(std::fabs(mean - 0.5) < 4.0 * std::sqrt(1.0 / 12.0 / n));
  CHECK(std::fabs(var - 1.0 / 12.0) < 4.0 * std::sqrt(1.0 / 180.0 / n));
  // Chi-square over 16 equal bins, 15 degrees of freedom: the 0.999 quantile is 37.7.
  double chi2 = 0;
  for (int c : bins) chi2 += (c - n / 16.0) * (c - n / 16.0) / (n / 16.0);
  CHECK(chi2 < 37.7);
  // Each argument alone changes the hash (a bijection of each argument with the others fixed).
  const uint32_t h = ref::acc_hash(9, 2, 1, 100, 7);
  CHECK(ref::acc_hash(10, 2, 1, 100, 7) != h);
  CHECK(ref::acc_hash(9, 3, 1, 100, 7) != h);
  CHECK(ref::acc_hash(9, 2, 0, 100, 7) != h);
  CHECK(ref::acc_hash(9, 2, 1, 101, 7) != h);
  CHECK(ref::acc_hash(9, 2, 1, 100, 8) != h);
}

TEST_CASE("acc: steps for the three sources") {
  const int B = 2, N = 5, H = 3, D = 4;
  const std::vector<double> omega = banks(H, D);
  std::vector<double> phi;
  SUBCASE("rope: phi = omega of each head") {
    REQUIRE(ref::acc_steps({}, B, N, 0, H, D, omega, {}, &phi).ok());
    REQUIRE(phi.size() == (size_t)B * N * H * D);
    for (size_t x = 0; x < phi.size(); ++x) CHECK(phi[x] == omega[x % (H * D)]);
  }
  SUBCASE("random: 2 omega u, one draw per (row, position, block) shared by the heads") {
    ref::AccStepSource src;
    src.kind = ref::AccStepKind::random;
    src.seed = 77;
    src.layer = 3;
    REQUIRE(ref::acc_steps(src, B, N, 10, H, D, omega, {}, &phi).ok());
    for (int b = 0; b < B; ++b)
      for (int n = 0; n < N; ++n)
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d) {
            const double u = ref::acc_uniform(77, 3, (uint32_t)b, (uint32_t)(10 + n), (uint32_t)d);
            CHECK(phi[(((size_t)b * N + n) * H + h) * D + d] == 2.0 * omega[(size_t)h * D + d] * u);
          }
    // Positions are absolute: the steps of positions 12.. equal the tail of those of 10..
    std::vector<double> tail;
    REQUIRE(ref::acc_steps(src, B, N - 2, 12, H, D, omega, {}, &tail).ok());
    for (int b = 0; b < B; ++b)
      for (size_t x = 0; x < (size_t)(N - 2) * H * D; ++x)
        CHECK(tail[(size_t)b * (N - 2) * H * D + x] == phi[((size_t)b * N + 2) * H * D + x]);
  }
  SUBCASE("learned: a gather from the [V][D] table, the same for every head") {
    const int vocab = 6;
    std::vector<double> table((size_t)vocab * D);
    for (size_t x = 0; x < table.size(); ++x) table[x] = 0.1 * (double)x - 1.0;
    ref::AccStepSource src;
    src.kind = ref::AccStepKind::learned;
    src.table = &table;
    src.vocab = vocab;
    const std::vector<int32_t> tokens = {0, 5, 2, 2, 1, 3, 4, 0, 5, 1};
    REQUIRE(ref::acc_steps(src, B, N, 0, H, D, {}, tokens, &phi).ok());
    for (int b = 0; b < B; ++b)
      for (int n = 0; n < N; ++n)
        for (int h = 0; h < H; ++h)
          for (int d = 0; d < D; ++d)
            CHECK(phi[(((size_t)b * N + n) * H + h) * D + d] == table[(size_t)tokens[(size_t)b * N + n] * D + d]);
  }
}

TEST_CASE("acc: the prefix is inclusive, wrapped, and exact over 65536 constant steps") {
  const int N = 65536;
  const std::vector<double> omega = {1.0, 0.1, 1e-4, 2.9};
  std::vector<double> phi((size_t)N * 4), theta;
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < 4; ++c) phi[(size_t)n * 4 + c] = omega[(size_t)c];
  REQUIRE(ref::acc_prefix(phi, 1, N, 4, &theta).ok());
  double worst = 0;
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < 4; ++c) {
      const double th = theta[(size_t)n * 4 + c];
      REQUIRE(th > -kPi);
      REQUIRE(th <= kPi);
      // Inclusive: theta_n = omega (n + 1); the closed form reduced in long double as the check.
      const long double exact = (long double)omega[(size_t)c] * (long double)(n + 1);
      const long double red = std::remainder(exact, 2.0L * 3.14159265358979323846264338327950288L);
      worst = std::max(worst, angle_dist(th, (double)red));
    }
  CHECK(worst < 1e-9);
  // Route angles: theta_i - theta_j = sum of steps j+1..i (mod 2 pi), and theta_0 = phi_0.
  std::vector<double> steps(200), th2;
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> u(-4.0, 4.0);
  for (auto& s : steps) s = u(gen);
  REQUIRE(ref::acc_prefix(steps, 1, 200, 1, &th2).ok());
  CHECK(th2[0] == ref::acc_wrap(steps[0]));  // theta_0 = wrap(phi_0): inclusive
  for (int j = 0; j < 200; j += 7)
    for (int i = j; i < 200; i += 11) {
      double route = 0;
      for (int s = j + 1; s <= i; ++s) route += steps[(size_t)s];
      CHECK(angle_dist(th2[(size_t)i] - th2[(size_t)j], route) < 1e-11);
    }
}

TEST_CASE("acc: constant steps phi = omega are RoPE (independent pre-rotation by omega * position)") {
  for (int B : {1, 2})
    for (int H : {1, 3})
      for (int D : {4, 8})
        for (int N : {1, 2, 61, 127})
          for (bool causal : {true, false})
            for (auto mode : kModes) {
              CAPTURE(B);
              CAPTURE(H);
              CAPTURE(D);
              CAPTURE(N);
              CAPTURE(causal);
              CAPTURE((int)mode);
              ref::AccLayer L;
              L.heads = H;
              L.dim = D;
              L.causal = causal;
              L.value_rotation = mode;
              if (H == 3) L.alibi_slope = {0.0, 0.05, 0.5};
              const size_t n = (size_t)B * N * H * D;
              const auto Q = random_complex(n, 11u + (uint32_t)N, 1.5);
              const auto K = random_complex(n, 12u + (uint32_t)N, 1.5);
              const auto V = random_complex(n, 13u + (uint32_t)N);
              const auto omega = banks(H, D);
              std::vector<double> phi;
              REQUIRE(ref::acc_steps({}, B, N, 0, H, D, omega, {}, &phi).ok());
              ref::AccOutputs out;
              REQUIRE(ref::acc_attention(L, B, N, Q, K, V, phi, &out).ok());
              // RoPE angle omega * position. The inclusive prefix gives omega * (position + 1); the
              // offset cancels except in rotate-only values, which stay in the frame of theta_j.
              const double shift = mode == ref::AccValueRotation::rotate_only ? 1.0 : 0.0;
              std::vector<double> angle(n);
              for (int b = 0; b < B; ++b)
                for (int p = 0; p < N; ++p)
                  for (int h = 0; h < H; ++h)
                    for (int d = 0; d < D; ++d)
                      angle[(((size_t)b * N + p) * H + h) * D + d] = omega[(size_t)h * D + d] * (p + shift);
              const Naive nv = naive_rotary(B, N, H, D, Q, K, V, angle, mode, causal, L.alibi_slope);
              CHECK(max_abs_diff(out.est, nv.est) < 1e-11);
              CHECK(max_abs_diff(out.row_lse, nv.lse) < 1e-11);
            }
}

TEST_CASE("acc: zero steps are NoPE (plain dot-product attention)") {
  const int B = 2, N = 61, H = 3, D = 8;
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 21), K = random_complex(n, 22), V = random_complex(n, 23);
  const std::vector<double> phi((size_t)B * N * D, 0.0);  // the shared [B][N][D] layout
  // Plain attention written out without any rotation.
  std::vector<cd> plain(n, cd(0, 0));
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < N; ++i) {
        std::vector<double> s((size_t)i + 1);
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) {
            const cd q = Q[(((size_t)b * N + i) * H + h) * D + d], k = K[(((size_t)b * N + j) * H + h) * D + d];
            dot += q.real() * k.real() + q.imag() * k.imag();  // the real dot product of [Re; Im]
          }
          s[(size_t)j] = dot / std::sqrt(2.0 * D);
        }
        const double m = *std::max_element(s.begin(), s.end());
        double l = 0;
        for (double x : s) l += std::exp(x - m);
        for (int j = 0; j <= i; ++j)
          for (int d = 0; d < D; ++d)
            plain[(((size_t)b * N + i) * H + h) * D + d] +=
                std::exp(s[(size_t)j] - m) / l * V[(((size_t)b * N + j) * H + h) * D + d];
      }
  for (auto mode : kModes) {
    ref::AccLayer L;
    L.heads = H;
    L.dim = D;
    L.value_rotation = mode;
    ref::AccOutputs out;
    REQUIRE(ref::acc_attention(L, B, N, Q, K, V, phi, &out, true).ok());
    CHECK(max_abs_diff(out.est, plain) < 1e-12);
    // Rows sum to 1 and the causal mask holds.
    for (int r = 0; r < B * H * N; ++r) {
      const int i = r % N;
      double sum = 0;
      for (int j = 0; j < N; ++j) {
        const double a = out.A[(size_t)r * N + j];
        if (j > i) CHECK(a == 0.0);
        sum += a;
      }
      CHECK(sum == doctest::Approx(1.0).epsilon(1e-12));
    }
  }
}

TEST_CASE("acc: steps omega (t_s - t_{s-1}) are RFA's rotation by omega t on irregular timestamps") {
  const int B = 2, N = 127, H = 3, D = 4;
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 31), K = random_complex(n, 32), V = random_complex(n, 33);
  const auto omega = banks(H, D, 10.0);
  // Irregular increasing timestamps far from zero (the first step is omega t_0, i.e. t_{-1} = 0).
  std::mt19937 gen(5);
  std::exponential_distribution<double> gap(0.7);
  std::vector<double> t((size_t)B * N);
  for (int b = 0; b < B; ++b) {
    double now = 1e5 * (b + 1);
    for (int s = 0; s < N; ++s) t[(size_t)b * N + s] = (now += gap(gen));
  }
  std::vector<double> phi(n), angle(n);
  for (int b = 0; b < B; ++b)
    for (int s = 0; s < N; ++s)
      for (int h = 0; h < H; ++h)
        for (int d = 0; d < D; ++d) {
          const size_t x = (((size_t)b * N + s) * H + h) * D + d;
          const double prev = s == 0 ? 0.0 : t[(size_t)b * N + s - 1];
          phi[x] = omega[(size_t)h * D + d] * (t[(size_t)b * N + s] - prev);
          angle[x] = omega[(size_t)h * D + d] * t[(size_t)b * N + s];
        }
  for (auto mode : kModes) {
    CAPTURE((int)mode);
    ref::AccLayer L;
    L.heads = H;
    L.dim = D;
    L.value_rotation = mode;
    ref::AccOutputs out;
    REQUIRE(ref::acc_attention(L, B, N, Q, K, V, phi, &out).ok());
    const Naive nv = naive_rotary(B, N, H, D, Q, K, V, angle, mode, true, {});
    // Angles up to ~4e5 rad: the naive side loses ~1e-11 rad reducing them.
    CHECK(max_abs_diff(out.est, nv.est) < 1e-9);
    CHECK(max_abs_diff(out.row_lse, nv.lse) < 1e-9);
  }
}

TEST_CASE("acc: learned route angles are order-free (a bag of the intervening tokens)") {
  const int N = 40, D = 8, vocab = 11;
  std::vector<double> table((size_t)vocab * D);
  std::mt19937 gen(9);
  std::uniform_real_distribution<double> u(-3.0, 3.0);
  for (auto& x : table) x = u(gen);
  ref::AccStepSource src;
  src.kind = ref::AccStepKind::learned;
  src.table = &table;
  src.vocab = vocab;
  std::vector<int32_t> tokens((size_t)N);
  for (auto& tk : tokens) tk = (int32_t)(gen() % vocab);
  const int j = 6, i = 31;
  std::vector<int32_t> perm = tokens;
  std::reverse(perm.begin() + j + 1, perm.begin() + i);  // strictly between j and i
  std::rotate(perm.begin() + j + 1, perm.begin() + j + 4, perm.begin() + i);
  REQUIRE(perm != tokens);
  std::vector<double> phi_a, phi_b, th_a, th_b;
  REQUIRE(ref::acc_steps(src, 1, N, 0, 1, D, {}, tokens, &phi_a).ok());
  REQUIRE(ref::acc_steps(src, 1, N, 0, 1, D, {}, perm, &phi_b).ok());
  REQUIRE(ref::acc_prefix(phi_a, 1, N, D, &th_a).ok());
  REQUIRE(ref::acc_prefix(phi_b, 1, N, D, &th_b).ok());
  double inner_change = 0;
  for (int d = 0; d < D; ++d) {
    const double ra = th_a[(size_t)i * D + d] - th_a[(size_t)j * D + d];
    const double rb = th_b[(size_t)i * D + d] - th_b[(size_t)j * D + d];
    CHECK(angle_dist(ra, rb) < 1e-12);
    for (int p = j + 1; p < i; ++p)
      inner_change = std::max(inner_change, angle_dist(th_a[(size_t)p * D + d], th_b[(size_t)p * D + d]));
  }
  CHECK(inner_change > 0.1);  // the intermediate prefixes did change: the test has teeth
  CHECK(ref::acc_matched_score(&th_a[(size_t)i * D], &th_a[(size_t)j * D], D) ==
        doctest::Approx(ref::acc_matched_score(&th_b[(size_t)i * D], &th_b[(size_t)j * D], D)).epsilon(1e-12));
}

TEST_CASE("acc: decode steps reproduce the prefill") {
  const int B = 2, N = 61, H = 3, D = 4;
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 41), K = random_complex(n, 42), V = random_complex(n, 43);
  const auto omega = banks(H, D, 1000.0);
  for (bool learned : {false, true})
    for (auto mode : kModes) {
      CAPTURE(learned);
      CAPTURE((int)mode);
      ref::AccLayer L;
      L.heads = H;
      L.dim = D;
      L.value_rotation = mode;
      L.alibi_slope = {0.02, 0.0, 0.3};
      ref::AccStepSource src;
      std::vector<double> table;
      std::vector<int32_t> tokens((size_t)B * N);
      if (learned) {  // shared [B][N][D] steps
        table.resize(7 * (size_t)D);
        for (size_t x = 0; x < table.size(); ++x) table[x] = std::sin(3.7 * (double)x);
        for (size_t x = 0; x < tokens.size(); ++x) tokens[x] = (int32_t)((x * 5 + 3) % 7);
        src.kind = ref::AccStepKind::learned;
        src.table = &table;
        src.vocab = 7;
      } else {  // random per-head [B][N][H][D] steps
        src.kind = ref::AccStepKind::random;
        src.seed = 2024;
        src.layer = 1;
      }
      std::vector<double> phi;
      REQUIRE(ref::acc_steps(src, B, N, 0, H, D, omega, learned ? tokens : std::vector<int32_t>{}, &phi).ok());
      if (learned) {  // keep one D-vector per position (heads share it)
        std::vector<double> shared((size_t)B * N * D);
        for (size_t tkn = 0; tkn < (size_t)B * N; ++tkn)
          for (int d = 0; d < D; ++d) shared[tkn * D + d] = phi[tkn * H * D + d];
        phi = shared;
      }
      ref::AccOutputs pre;
      REQUIRE(ref::acc_attention(L, B, N, Q, K, V, phi, &pre, true).ok());

      ref::AccDecodeState st;
      REQUIRE(ref::acc_decode_begin(L, B, &st).ok());
      const size_t C = learned ? (size_t)D : (size_t)H * D;
      double worst = 0, worst_lse = 0, worst_a = 0, worst_th = 0;
      for (int p = 0; p < N; ++p) {
        std::vector<cd> q((size_t)B * H * D), k(q.size()), v(q.size());
        std::vector<double> ph;
        if (learned) {
          std::vector<int32_t> tk(B);
          for (int b = 0; b < B; ++b) tk[(size_t)b] = tokens[(size_t)b * N + p];
          std::vector<double> full;
          REQUIRE(ref::acc_steps(src, B, 1, p, H, D, omega, tk, &full).ok());
          ph.resize((size_t)B * D);
          for (int b = 0; b < B; ++b)
            for (int d = 0; d < D; ++d) ph[(size_t)b * D + d] = full[(size_t)b * H * D + d];
        } else {
          REQUIRE(ref::acc_steps(src, B, 1, p, H, D, omega, {}, &ph).ok());  // drawn at its absolute position
        }
        for (int b = 0; b < B; ++b)
          for (size_t x = 0; x < (size_t)H * D; ++x) {
            q[(size_t)b * H * D + x] = Q[((size_t)b * N + p) * H * D + x];
            k[(size_t)b * H * D + x] = K[((size_t)b * N + p) * H * D + x];
            v[(size_t)b * H * D + x] = V[((size_t)b * N + p) * H * D + x];
          }
        ref::AccStepOutputs so;
        REQUIRE(ref::acc_decode_step(L, &st, q, k, v, ph, &so).ok());
        for (int b = 0; b < B; ++b) {
          for (size_t c = 0; c < C; ++c)
            worst_th = std::max(worst_th, std::fabs(st.theta_last[(size_t)b * C + c] - pre.theta[((size_t)b * N + p) * C + c]));
          for (int h = 0; h < H; ++h) {
            const size_t r = (size_t)b * H + h, pr = ((size_t)b * H + h) * N + p;
            worst_lse = std::max(worst_lse, std::fabs(so.row_lse[r] - pre.row_lse[pr]));
            for (int d = 0; d < D; ++d)
              worst = std::max(worst, std::abs(so.est[r * D + d] - pre.est[(((size_t)b * N + p) * H + h) * D + d]));
            for (int j = 0; j <= p; ++j)
              worst_a = std::max(worst_a, std::fabs(so.A[r * (p + 1) + j] - pre.A[pr * N + j]));
          }
        }
      }
      CHECK(st.length == N);
      CHECK(worst_th < 1e-15);
      CHECK(worst < 1e-12);
      CHECK(worst_lse < 1e-12);
      CHECK(worst_a < 1e-12);
    }
}

TEST_CASE("acc: first harmonic and mixing window hand values") {
  // rho = |sin w| / w for U(0, 2w); n*(0.1) = ceil(ln 0.1 / ln rho).
  CHECK(ref::acc_uniform_first_harmonic(1.0) == doctest::Approx(0.841471).epsilon(1e-6));
  CHECK(ref::acc_uniform_first_harmonic(0.1) == doctest::Approx(0.998334).epsilon(1e-6));
  CHECK(ref::acc_uniform_first_harmonic(0.01) == doctest::Approx(0.999983).epsilon(1e-6));
  CHECK(ref::acc_uniform_first_harmonic(0.0) == 1.0);
  CHECK(ref::acc_mixing_window(ref::acc_uniform_first_harmonic(1.0), 0.1).value() == 14);
  CHECK(ref::acc_mixing_window(ref::acc_uniform_first_harmonic(0.1), 0.1).value() == 1382);
  CHECK(ref::acc_mixing_window(ref::acc_uniform_first_harmonic(0.01), 0.1).value() == 138155);
  CHECK(ref::acc_mixing_window(0.0, 0.1).value() == 1);
  CHECK(ref::acc_mixing_window(0.05, 0.1).value() == 1);
  CHECK(ref::acc_mixing_window(1.0, 0.1).value() == -1);  // deterministic steps: no window
  CHECK(ref::acc_mixing_window(0.5, 0.25).value() == 2);
  CHECK_FALSE(ref::acc_mixing_window(1.5, 0.1).ok());
  CHECK(mentions(ref::acc_mixing_window(0.5, 1.0).status(), "eps"));

  // Empirical rho of the generator's random steps matches |sin w| / w (sd ~ sqrt(0.5 / M)).
  const int M = 100000;
  const std::vector<double> omega = {1.0, 0.1, 2.5};
  ref::AccStepSource src;
  src.kind = ref::AccStepKind::random;
  src.seed = 99;
  std::vector<double> phi, rho;
  REQUIRE(ref::acc_steps(src, 1, M, 0, 1, 3, omega, {}, &phi).ok());
  REQUIRE(ref::acc_first_harmonic(phi, M, 3, &rho).ok());
  for (int c = 0; c < 3; ++c) CHECK(std::fabs(rho[(size_t)c] - ref::acc_uniform_first_harmonic(omega[(size_t)c])) < 0.01);
  // Constant steps have rho = 1 exactly (up to rounding) and never mix.
  std::vector<double> rope(1000, 0.3), r1;
  REQUIRE(ref::acc_first_harmonic(rope, 1000, 1, &r1).ok());
  CHECK(r1[0] == doctest::Approx(1.0).epsilon(1e-12));

  // Route coherence C(n) of the random steps follows rho^n (overlapping routes: loose bound).
  std::vector<double> theta, coh;
  REQUIRE(ref::acc_prefix(phi, 1, M, 3, &theta).ok());
  for (int lag : {1, 5, 12}) {
    REQUIRE(ref::acc_route_coherence(theta, M, 3, lag, &coh).ok());
    CHECK(std::fabs(coh[0] - std::pow(ref::acc_uniform_first_harmonic(1.0), lag)) < 0.03);
    CHECK(std::fabs(coh[1] - std::pow(ref::acc_uniform_first_harmonic(0.1), lag)) < 0.03);
  }
  REQUIRE(ref::acc_route_coherence(theta, M, 3, 0, &coh).ok());
  CHECK(coh[2] == doctest::Approx(1.0).epsilon(1e-12));
}

TEST_CASE("acc: expected matched score hand values, and the generator's random steps reproduce them") {
  const int D = 48;
  std::vector<double> bank((size_t)D);
  for (int b = 0; b < D; ++b) bank[(size_t)b] = std::pow(10000.0, -(double)b / D);  // b = 0..47
  CHECK(std::fabs(ref::acc_expected_matched_score(bank, 64, true) - 0.4780) < 5e-5);
  CHECK(std::fabs(ref::acc_expected_matched_score(bank, 64, false) - 0.4951) < 5e-5);
  CHECK(std::fabs(ref::acc_expected_matched_score(bank, 4096, true) - (-0.0139)) < 5e-5);
  CHECK(std::fabs(ref::acc_expected_matched_score(bank, 4096, false) - 0.0340) < 5e-5);
  CHECK(ref::acc_expected_matched_score(bank, 0, true) == doctest::Approx(1.0));

  // Monte Carlo with the real generator: 2 rows x 1000 disjoint routes of 64 steps each.
  const int B = 2, R = 1000, n = 64, N = R * n;
  ref::AccStepSource src;
  src.kind = ref::AccStepKind::random;
  src.seed = 4242;
  src.layer = 2;
  std::vector<double> phi, theta;
  REQUIRE(ref::acc_steps(src, B, N, 0, 1, D, bank, {}, &phi).ok());
  REQUIRE(ref::acc_prefix(phi, B, N, D, &theta).ok());
  std::vector<double> s;
  const std::vector<double> zero((size_t)D, 0.0);
  for (int b = 0; b < B; ++b)
    for (int r = 0; r < R; ++r) {
      const int i = r * n + n - 1, j = r * n - 1;  // route = steps r*n .. r*n + n - 1
      const double* ti = &theta[((size_t)b * N + i) * D];
      const double* tj = j < 0 ? zero.data() : &theta[((size_t)b * N + j) * D];
      s.push_back(ref::acc_matched_score(ti, tj, D));
    }
  const double mean = std::accumulate(s.begin(), s.end(), 0.0) / (double)s.size();
  double var = 0;
  for (double x : s) var += (x - mean) * (x - mean);
  var /= (double)(s.size() - 1);
  const double se = std::sqrt(var / (double)s.size());
  CAPTURE(mean);
  CAPTURE(se);
  CHECK(std::fabs(mean - 0.4780) < 4 * se + 5e-5);
  CHECK(std::fabs(mean - 0.4951) > 4 * se);  // and it is distinguishable from RoPE's value
  // The by-lag mean over all (overlapping) routes of one row agrees as well.
  double by_lag = 0;
  std::vector<double> row(theta.begin(), theta.begin() + (long)N * D);
  REQUIRE(ref::acc_matched_score_by_lag(row, N, D, n, &by_lag).ok());
  CHECK(std::fabs(by_lag - 0.4780) < 0.01);
}

TEST_CASE("acc: far mass, its lower bound, and value-side coherence") {
  // Hand value: nN = 1, nF = 511, Bd = 2 -> 511 / (511 + e^4).
  CHECK(ref::acc_far_mass_lower_bound(1, 511, 2).value() == doctest::Approx(0.903468).epsilon(1e-6));
  CHECK(ref::acc_far_mass_lower_bound(5, 0, 1).value() == 0.0);
  CHECK(mentions(ref::acc_far_mass_lower_bound(1, 1, -1).status(), "Bd"));
  CHECK(mentions(ref::acc_far_mass_lower_bound(-1, 1, 1).status(), "nN"));

  // The bound is tight: near logits +Bd, far logits -Bd.
  {
    const int N = 9, i = 8, w = 3;
    const double Bd = 0.7;
    std::vector<double> A((size_t)N * N, 0.0);
    double z = 0;
    for (int j = 0; j <= i; ++j) z += std::exp(j > i - w ? Bd : -Bd);
    for (int j = 0; j <= i; ++j) A[(size_t)i * N + j] = std::exp(j > i - w ? Bd : -Bd) / z;
    ref::AccFarMass fm;
    REQUIRE(ref::acc_far_mass(A, N, i, w, &fm).ok());
    CHECK(fm.count == 6);
    CHECK(fm.mass == doctest::Approx(ref::acc_far_mass_lower_bound(w, 6, Bd).value()).epsilon(1e-12));
    CHECK(fm.norm == doctest::Approx(std::sqrt(6.0) * std::exp(-Bd) / z).epsilon(1e-12));
  }

  // Measured far mass of a real layer respects the bound with Bd = |q| |k| / sqrt(2D).
  const int N = 127, D = 8;
  auto Q = random_complex((size_t)N * D, 51), K = random_complex((size_t)N * D, 52), V = random_complex((size_t)N * D, 53);
  const double radius = 2.0;
  for (auto* Z : {&Q, &K})
    for (int p = 0; p < N; ++p) {
      double nrm = 0;
      for (int d = 0; d < D; ++d) nrm += std::norm((*Z)[(size_t)p * D + d]);
      for (int d = 0; d < D; ++d) (*Z)[(size_t)p * D + d] *= radius / std::sqrt(nrm);
    }
  const double Bd = radius * radius / std::sqrt(2.0 * D);
  std::vector<double> bank((size_t)D);
  for (int d = 0; d < D; ++d) bank[(size_t)d] = std::pow(100.0, -(double)d / D);
  ref::AccStepSource src;
  src.kind = ref::AccStepKind::random;
  src.seed = 5;
  std::vector<double> phi;
  REQUIRE(ref::acc_steps(src, 1, N, 0, 1, D, bank, {}, &phi).ok());
  ref::AccLayer L;
  L.heads = 1;
  L.dim = D;
  L.value_rotation = ref::AccValueRotation::counter_rotate;
  ref::AccOutputs out;
  REQUIRE(ref::acc_attention(L, 1, N, Q, K, V, phi, &out, true).ok());
  const int w = 8;
  for (int i = w; i < N; i += 9) {
    ref::AccFarMass fm;
    REQUIRE(ref::acc_far_mass(out.A, N, i, w, &fm).ok());
    double direct = 0;
    for (int j = 0; j <= i - w; ++j) direct += out.A[(size_t)i * N + j];
    CHECK(fm.mass == doctest::Approx(direct).epsilon(1e-14));
    CHECK(fm.count == i - w + 1);
    CHECK(fm.mass >= ref::acc_far_mass_lower_bound(w, fm.count, Bd).value() - 1e-15);

    // Value side: never more than identity transport; with random phases, clearly less on the
    // fast blocks when the far set is large.
    ref::AccValueCoherence vc;
    REQUIRE(ref::acc_value_coherence(out.A, out.theta, N, D, i, w, &vc).ok());
    CHECK(vc.identity == doctest::Approx(fm.mass).epsilon(1e-14));
    for (double c : vc.coherent) CHECK(c <= vc.identity * (1 + 1e-12));
    if (i > 100) CHECK(vc.coherent[0] < 0.5 * vc.identity);
  }
  // Identity transport (phi = 0): every block keeps the full far mass.
  std::vector<double> zero((size_t)N * D, 0.0);
  REQUIRE(ref::acc_attention(L, 1, N, Q, K, V, zero, &out, true).ok());
  ref::AccValueCoherence vc;
  REQUIRE(ref::acc_value_coherence(out.A, out.theta, N, D, 100, w, &vc).ok());
  for (double c : vc.coherent) CHECK(c == doctest::Approx(vc.identity).epsilon(1e-13));
}

TEST_CASE("acc: bad inputs give errors that name the field") {
  const int B = 1, N = 3, H = 2, D = 4;
  const size_t n = (size_t)B * N * H * D;
  const auto Q = random_complex(n, 1), K = random_complex(n, 2), V = random_complex(n, 3);
  const std::vector<double> phi((size_t)B * N * D, 0.1);
  ref::AccLayer L;
  L.heads = H;
  L.dim = D;
  ref::AccOutputs out;
  REQUIRE(ref::acc_attention(L, B, N, Q, K, V, phi, &out).ok());
  CHECK(ref::acc_attention(L, B, 0, {}, {}, {}, {}, &out).ok());  // N = 0: nothing to do
  CHECK(out.est.empty());

  const std::vector<cd> short_z(n - 1);
  CHECK(mentions(ref::acc_attention(L, B, N, short_z, K, V, phi, &out), ": Q has"));
  CHECK(mentions(ref::acc_attention(L, B, N, Q, short_z, V, phi, &out), ": K has"));
  CHECK(mentions(ref::acc_attention(L, B, N, Q, K, short_z, phi, &out), ": V has"));
  CHECK(mentions(ref::acc_attention(L, B, N, Q, K, V, std::vector<double>(5, 0.0), &out), "phi"));
  std::vector<double> nan_phi = phi;
  nan_phi[2] = NAN;
  CHECK(mentions(ref::acc_attention(L, B, N, Q, K, V, nan_phi, &out), "phi must be finite"));
  ref::AccLayer bad = L;
  bad.alibi_slope = {0.1};
  CHECK(mentions(ref::acc_attention(bad, B, N, Q, K, V, phi, &out), "alibi_slope"));
  bad.alibi_slope = {0.1, -0.2};
  CHECK(mentions(ref::acc_attention(bad, B, N, Q, K, V, phi, &out), "alibi_slope"));
  bad = L;
  bad.heads = 0;
  CHECK(mentions(ref::acc_attention(bad, B, N, Q, K, V, phi, &out), "heads"));
  bad = L;
  bad.dim = 0;
  CHECK(mentions(ref::acc_attention(bad, B, N, Q, K, V, phi, &out), "dim"));

  // Steps.
  std::vector<double> steps;
  CHECK(mentions(ref::acc_steps({}, B, N, 0, H, D, std::vector<double>(3, 1.0), {}, &steps), "omega"));
  CHECK(mentions(ref::acc_steps({}, B, N, -1, H, D, banks(H, D), {}, &steps), "position0"));
  std::vector<double> table(5 * (size_t)D, 0.0);
  ref::AccStepSource src;
  src.kind = ref::AccStepKind::learned;
  CHECK(mentions(ref::acc_steps(src, B, N, 0, H, D, {}, {0, 1, 2}, &steps), "table"));
  src.table = &table;
  src.vocab = 5;
  const rfa::Status oob = ref::acc_steps(src, B, N, 0, H, D, {}, {0, 5, 2}, &steps);
  CHECK(mentions(oob, "tokens[1]"));
  CHECK(oob.code() == rfa::Code::input_error);
  CHECK(mentions(ref::acc_steps(src, B, N, 0, H, D, {}, {0, -1, 2}, &steps), "tokens[1]"));
  CHECK(mentions(ref::acc_steps(src, B, N, 0, H, D, {}, {0, 1}, &steps), "tokens has"));
  src.vocab = 6;
  CHECK(mentions(ref::acc_steps(src, B, N, 0, H, D, {}, {0, 1, 2}, &steps), "table has"));

  // Decode.
  ref::AccDecodeState st;
  bad = L;
  bad.causal = false;
  CHECK(mentions(ref::acc_decode_begin(bad, B, &st), "causal"));
  REQUIRE(ref::acc_decode_begin(L, B, &st).ok());
  const std::vector<cd> z((size_t)B * H * D);
  ref::AccStepOutputs so;
  CHECK(mentions(ref::acc_decode_step(L, &st, std::vector<cd>(3), z, z, std::vector<double>(D, 0.0), &so), ": q has"));
  CHECK(mentions(ref::acc_decode_step(L, &st, z, z, z, std::vector<double>(D + 1, 0.0), &so), "phi"));
  REQUIRE(ref::acc_decode_step(L, &st, z, z, z, std::vector<double>(D, 0.0), &so).ok());
  // The step layout is fixed by the first step.
  CHECK(mentions(ref::acc_decode_step(L, &st, z, z, z, std::vector<double>((size_t)H * D, 0.0), &so), "phi"));
  bad = L;
  bad.heads = 1;
  CHECK(mentions(ref::acc_decode_step(bad, &st, z, z, z, std::vector<double>(D, 0.0), &so), "state"));

  // Diagnostics.
  std::vector<double> r;
  CHECK(mentions(ref::acc_route_coherence(std::vector<double>(8, 0.0), 2, 4, 2, &r), "n must"));
  CHECK(mentions(ref::acc_route_coherence(std::vector<double>(7, 0.0), 2, 4, 1, &r), "theta"));
  ref::AccFarMass fm;
  CHECK(mentions(ref::acc_far_mass(std::vector<double>(9, 0.0), 3, 1, 0, &fm), "w must"));
  CHECK(mentions(ref::acc_far_mass(std::vector<double>(8, 0.0), 3, 1, 1, &fm), "A has"));
  CHECK(mentions(ref::acc_far_mass(std::vector<double>(9, 0.0), 3, 3, 1, &fm), "i must"));
  CHECK(mentions(ref::acc_first_harmonic(std::vector<double>(5, 0.0), 2, 3, &r), "phi"));
}
