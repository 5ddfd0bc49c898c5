// The host linear algebra of the attention tomography (probe/linalg): hand values (docs/DIAGNOSTICS.md §3),
// singular values against an independent route (Jacobi eigenvalues of A^T A) and the
// Frobenius norm over awkward shapes (wide, tall, rank-deficient, zero rows and columns that put
// zeros on the bidiagonal, graded scales), Jacobi eigenvectors, effective rank and participation
// ratio. No GPU.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "probe/linalg.hpp"
#include "rfa/diagnostics.hpp"

using namespace rfa;

namespace {

std::vector<double> random_matrix(int m, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> a((size_t)m * n);
  for (double& x : a) x = g(rng);
  return a;
}

std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, int m, int k, int n) {
  std::vector<double> c((size_t)m * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j) c[(size_t)i * n + j] += a[(size_t)i * k + p] * b[(size_t)p * n + j];
  return c;
}

std::vector<double> sv(const std::vector<double>& a, int m, int n) {
  auto r = linalg::singular_values(a, m, n);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  REQUIRE(r->size() == (size_t)std::min(m, n));
  return r.take();
}

// sqrt of the eigenvalues of the Gram matrix of the shorter side: a second, independent route
// (accurate to ~sqrt(eps) sigma_1 for the small values, which is all the comparison asks).
std::vector<double> sv_via_gram(const std::vector<double>& a, int m, int n) {
  const int k = std::min(m, n);
  std::vector<double> g((size_t)k * k, 0.0);
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < k; ++j)
      for (int p = 0; p < std::max(m, n); ++p)
        g[(size_t)i * k + j] += m >= n ? a[(size_t)p * n + i] * a[(size_t)p * n + j] : a[(size_t)i * n + p] * a[(size_t)j * n + p];
  auto e = linalg::symmetric_eigen(g, k);
  REQUIRE(e.ok());
  std::vector<double> s;
  for (double x : *e) s.push_back(std::sqrt(std::max(x, 0.0)));
  return s;
}

}  // namespace

TEST_CASE("linalg: SEEDS 4.6 hand values") {
  // P = [[1, 0], [0.5, 0.5]]: sigma = (1.144123, 0.437016), erank 1.803113.
  auto s = sv({1, 0, 0.5, 0.5}, 2, 2);
  CHECK(s[0] == doctest::Approx(1.144123).epsilon(1e-6));
  CHECK(s[1] == doctest::Approx(0.437016).epsilon(1e-5));
  CHECK(effective_rank(s) == doctest::Approx(1.803113).epsilon(1e-6));
  // erank(I_n) = n; a permutation matrix: n; the rank-1 uniform P: 1.
  for (int n : {1, 2, 7, 64}) {
    std::vector<double> I((size_t)n * n, 0.0), perm((size_t)n * n, 0.0), uni((size_t)n * n, 1.0 / n);
    for (int i = 0; i < n; ++i) I[(size_t)i * n + i] = 1, perm[(size_t)i * n + (i * 5 + 3) % n] = 1;
    CHECK(effective_rank(sv(I, n, n)) == doctest::Approx(n).epsilon(1e-12));
    CHECK(effective_rank(sv(perm, n, n)) == doctest::Approx(n).epsilon(1e-12));
    CHECK(linalg::numerical_rank(sv(perm, n, n), n, n, 1.0 / 8388608) == n);
    const auto su = sv(uni, n, n);
    CHECK(su[0] == doctest::Approx(1.0).epsilon(1e-13));
    CHECK(effective_rank(su) == doctest::Approx(1.0).epsilon(1e-12));
    CHECK(linalg::numerical_rank(su, n, n, 1.0 / 8388608) == 1);
  }
  // All zero: no spectrum to speak of.
  auto z = sv(std::vector<double>(12, 0.0), 3, 4);
  CHECK(z == std::vector<double>(3, 0.0));
  CHECK(effective_rank(z) == 0);
  CHECK(linalg::numerical_rank(z, 3, 4, 1e-7) == 0);
  // Eigenvalues of [[2, 1], [1, 2]]: 3, 1; participation ratios.
  auto e = linalg::symmetric_eigen({2, 1, 1, 2}, 2);
  REQUIRE(e.ok());
  CHECK((*e)[0] == doctest::Approx(3.0).epsilon(1e-14));
  CHECK((*e)[1] == doctest::Approx(1.0).epsilon(1e-14));
  CHECK(participation_ratio({1, 1, 1, 1}) == doctest::Approx(4.0));
  CHECK(participation_ratio({2, 0, 0}) == doctest::Approx(1.0));
  CHECK(participation_ratio({3, 1}) == doctest::Approx(16.0 / 10.0));
  CHECK(participation_ratio({0, 0}) == 0);
}

TEST_CASE("linalg: singular values against the Gram route and the Frobenius norm") {
  struct Shape {
    int m, n;
  };
  uint32_t seed = 1;
  std::vector<std::pair<std::vector<double>, Shape>> cases;
  for (Shape s : {Shape{1, 1}, Shape{1, 7}, Shape{7, 1}, Shape{5, 5}, Shape{13, 8}, Shape{8, 13}, Shape{64, 64},
                  Shape{40, 17}, Shape{3, 90}})
    cases.push_back({random_matrix(s.m, s.n, seed++), s});
  // Rank 5 out of 30.
  cases.push_back({matmul(random_matrix(30, 5, 77), random_matrix(5, 30, 78), 30, 5, 30), {30, 30}});
  // Zero rows and columns: zeros on the bidiagonal, which the QR iteration must chase out.
  {
    auto a = random_matrix(10, 10, 99);
    for (int i = 0; i < 10; ++i) a[(size_t)i * 10 + 3] = 0, a[(size_t)0 * 10 + i] = 0, a[(size_t)7 * 10 + i] = 0;
    cases.push_back({a, {10, 10}});
  }
  // Graded: rows scaled over 12 decades.
  {
    auto a = random_matrix(12, 12, 101);
    for (int i = 0; i < 12; ++i)
      for (int j = 0; j < 12; ++j) a[(size_t)i * 12 + j] *= std::pow(10.0, -i);
    cases.push_back({a, {12, 12}});
  }
  // A probability matrix like the probes give (rows of a softmax).
  {
    auto a = random_matrix(50, 50, 103);
    for (int i = 0; i < 50; ++i) {
      double s = 0;
      for (int j = 0; j < 50; ++j) s += a[(size_t)i * 50 + j] = std::exp(3 * a[(size_t)i * 50 + j]);
      for (int j = 0; j < 50; ++j) a[(size_t)i * 50 + j] /= s;
    }
    cases.push_back({a, {50, 50}});
  }
  for (auto& [a, s] : cases) {
    // Plain copies: clang 14 cannot capture a structured binding in CAPTURE's lambda.
    const int rows = s.m, cols = s.n;
    CAPTURE(rows);
    CAPTURE(cols);
    const auto got = sv(a, s.m, s.n);
    const auto want = sv_via_gram(a, s.m, s.n);
    double fro = 0, ss = 0;
    for (double x : a) fro += x * x;
    for (double x : got) ss += x * x;
    CHECK(ss == doctest::Approx(fro).epsilon(1e-12));
    for (size_t k = 0; k < got.size(); ++k) {
      CAPTURE(k);
      CHECK(got[k] >= 0);
      if (k) CHECK(got[k] <= got[k - 1]);
      CHECK(std::fabs(got[k] - want[k]) <= 1e-7 * got[0] + 1e-12 * want[k]);
    }
  }
  // The rank-5 case: five values of order 1, the rest at rounding level.
  const auto r5 = sv(cases[9].first, 30, 30);
  CHECK(linalg::numerical_rank(r5, 30, 30, 1e-10) == 5);
  // Non-finite input and mismatched sizes are refused.
  CHECK(!linalg::singular_values({1, NAN, 0, 1}, 2, 2).ok());
  CHECK(!linalg::singular_values({1, 2, 3}, 2, 2).ok());
  CHECK(!linalg::symmetric_eigen({1, 2, 3}, 2).ok());
}

TEST_CASE("linalg: Jacobi eigenvectors are orthonormal and reconstruct the matrix") {
  for (int n : {1, 3, 20, 64}) {
    CAPTURE(n);
    auto b = random_matrix(n, n, 7 + n);
    std::vector<double> a((size_t)n * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) a[(size_t)i * n + j] = b[(size_t)i * n + j] + b[(size_t)j * n + i];
    std::vector<double> v;
    auto e = linalg::symmetric_eigen(a, n, &v);
    REQUIRE(e.ok());
    double worst = 0, worst_orth = 0, scale = 0;
    for (double x : a) scale = std::max(scale, std::fabs(x));
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double r = 0, o = 0;
        for (int k = 0; k < n; ++k) {
          r += v[(size_t)k * n + i] * (*e)[(size_t)k] * v[(size_t)k * n + j];
          o += v[(size_t)i * n + k] * v[(size_t)j * n + k];
        }
        worst = std::max(worst, std::fabs(r - a[(size_t)i * n + j]));
        worst_orth = std::max(worst_orth, std::fabs(o - (i == j ? 1.0 : 0.0)));
      }
    CHECK(worst <= 1e-12 * scale * n);
    CHECK(worst_orth <= 1e-12 * n);
    for (int k = 1; k < n; ++k) CHECK((*e)[(size_t)k] <= (*e)[(size_t)k - 1]);
  }
}

TEST_CASE("moments: accumulate pools, summarize gives the chi mean of SEEDS 4.6") {
  // d = 32 and Var(q) = 1.0706 give E[tau] = 1.026647 (paper 1.0267).
  HeadMoments m;
  m.d = 32;
  m.queries = 2;
  m.uu.assign(32 * 32, 0.0);
  m.uu0 = m.uu;
  m.q_sum.assign(32, 0.0);
  m.q_sq.assign(32, 2 * 1.0706);  // two queries, per-dim mean 0 and variance 1.0706
  for (int k = 0; k < 32; ++k) m.uu[(size_t)k * 32 + k] = m.uu0[(size_t)k * 32 + k] = 2.0 / 32;
  auto s = summarize(m);
  REQUIRE(s.ok());
  CHECK(s->var_q == doctest::Approx(1.0706));
  CHECK(s->tau_chi_mean == doctest::Approx(1.026647).epsilon(1e-6));
  CHECK(s->dim_eff_u == doctest::Approx(32.0).epsilon(1e-12));  // isotropic tilts
  CHECK(s->normal_spectrum.empty());                            // no key map given
  HeadMoments pooled;
  REQUIRE(accumulate(pooled, m).ok());
  REQUIRE(accumulate(pooled, m).ok());
  CHECK(pooled.queries == 4);
  CHECK(pooled.uu[0] == doctest::Approx(4.0 / 32));
  auto s2 = summarize(pooled);
  REQUIRE(s2.ok());
  CHECK(s2->var_q == doctest::Approx(1.0706));
  HeadMoments other = m;
  other.d = 8;
  CHECK(!accumulate(pooled, other).ok());
}
