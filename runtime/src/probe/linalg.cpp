// Singular values by Householder bidiagonalisation + implicit-shift bidiagonal QR, symmetric
// eigenproblems by cyclic Jacobi (Golub & Van Loan section 5.4.8, section 8.6, section 8.5). Values only for the SVD:
// the diagnostics need the spectrum of P, never its singular vectors, which saves the 4/3 of the
// work the accumulation of U and V would cost.
#include "probe/linalg.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

namespace rfa::linalg {

namespace {

constexpr double kEps = DBL_EPSILON;

// ||x|| of a strided vector without overflow or underflow (values are scaled by their max).
double norm2(const double* x, int n, int stride) {
  double scale = 0;
  for (int i = 0; i < n; ++i) scale = std::max(scale, std::fabs(x[(size_t)i * stride]));
  if (scale == 0) return 0;
  double s = 0;
  for (int i = 0; i < n; ++i) {
    const double v = x[(size_t)i * stride] / scale;
    s += v * v;
  }
  return scale * std::sqrt(s);
}

// x . y with four partial sums: without -ffast-math the compiler may not reorder a single sum,
// so this is what lets the dot product vectorise (it is half of the right reflectors' work).
double dot(const double* x, const double* y, int n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int j = 0;
  for (; j + 4 <= n; j += 4) {
    s0 += x[j] * y[j];
    s1 += x[j + 1] * y[j + 1];
    s2 += x[j + 2] * y[j + 2];
    s3 += x[j + 3] * y[j + 3];
  }
  for (; j < n; ++j) s0 += x[j] * y[j];
  return (s0 + s1) + (s2 + s3);
}

// A (m x n, m >= n, row-major) -> upper bidiagonal B = U^T A V: diagonal d[n], superdiagonal e[n-1].
// Left reflectors zero column k below the diagonal, right reflectors zero row k right of the
// superdiagonal; A is overwritten. The loops run along rows (contiguous) on both sides.
void bidiagonalize(std::vector<double>& A, int m, int n, std::vector<double>& d, std::vector<double>& e) {
  d.assign((size_t)n, 0.0);
  e.assign((size_t)std::max(n - 1, 0), 0.0);
  std::vector<double> v((size_t)std::max(m, n)), s((size_t)n);
  auto at = [&](int i, int j) -> double& { return A[(size_t)i * n + j]; };
  for (int k = 0; k < n; ++k) {
    // Left: H = I - beta v v^T on rows k..m-1 maps column k to alpha e_k.
    const double nk = norm2(&at(k, k), m - k, n);
    if (nk > 0) {
      const double x0 = at(k, k), alpha = x0 >= 0 ? -nk : nk;
      for (int i = k; i < m; ++i) v[(size_t)i] = at(i, k);
      v[(size_t)k] -= alpha;
      const double vv = nk * nk - x0 * x0 + v[(size_t)k] * v[(size_t)k];
      const double beta = vv > 0 ? 2.0 / vv : 0.0;
      std::fill(s.begin() + k + 1, s.end(), 0.0);
      for (int i = k; i < m; ++i) {
        const double vi = v[(size_t)i];
        const double* row = &at(i, 0);
        for (int j = k + 1; j < n; ++j) s[(size_t)j] += vi * row[j];
      }
      for (int i = k; i < m; ++i) {
        const double f = beta * v[(size_t)i];
        double* row = &at(i, 0);
        for (int j = k + 1; j < n; ++j) row[j] -= f * s[(size_t)j];
      }
      d[(size_t)k] = alpha;
    }
    if (k + 1 >= n) break;
    // Right: G = I - beta v v^T on columns k+1..n-1 maps row k's tail to alpha e_{k+1}.
    const double nr = norm2(&at(k, k + 1), n - k - 1, 1);
    if (nr > 0) {
      const double x0 = at(k, k + 1), alpha = x0 >= 0 ? -nr : nr;
      for (int j = k + 1; j < n; ++j) v[(size_t)j] = at(k, j);
      v[(size_t)(k + 1)] -= alpha;
      const double vv = nr * nr - x0 * x0 + v[(size_t)(k + 1)] * v[(size_t)(k + 1)];
      const double beta = vv > 0 ? 2.0 / vv : 0.0;
      for (int i = k + 1; i < m; ++i) {
        double* row = &at(i, 0);
        const double t = beta * dot(row + k + 1, v.data() + k + 1, n - k - 1);
        for (int j = k + 1; j < n; ++j) row[j] -= t * v[(size_t)j];
      }
      e[(size_t)k] = alpha;
    }
  }
}

// One implicit-shift QR step (Golub-Kahan) on the unreduced block l..h of the upper bidiagonal
// (d, e): the shift is the eigenvalue of the trailing 2 x 2 of B^T B nearer its last entry
// (Wilkinson); a bulge is chased down by alternating column and row rotations.
void golub_kahan_step(std::vector<double>& d, std::vector<double>& e, int l, int h) {
  const double t11 = d[(size_t)(h - 1)] * d[(size_t)(h - 1)] + (h - 1 > l ? e[(size_t)(h - 2)] * e[(size_t)(h - 2)] : 0.0);
  const double t22 = d[(size_t)h] * d[(size_t)h] + e[(size_t)(h - 1)] * e[(size_t)(h - 1)];
  const double t12 = d[(size_t)(h - 1)] * e[(size_t)(h - 1)];
  const double delta = 0.5 * (t11 - t22);
  const double denom = delta + std::copysign(std::hypot(delta, t12), delta);
  const double mu = denom != 0 ? t22 - t12 * t12 / denom : t22;
  double y = d[(size_t)l] * d[(size_t)l] - mu, z = d[(size_t)l] * e[(size_t)l];
  for (int k = l; k < h; ++k) {
    // Columns k, k+1: [y z] G = [r 0] (G = [[c, s], [-s, c]]).
    double r = std::hypot(y, z);
    double c = r > 0 ? y / r : 1.0, s = r > 0 ? -z / r : 0.0;
    if (k > l) e[(size_t)(k - 1)] = r;
    const double dk = c * d[(size_t)k] - s * e[(size_t)k];
    const double ek = s * d[(size_t)k] + c * e[(size_t)k];
    const double bulge = -s * d[(size_t)(k + 1)];
    const double dk1 = c * d[(size_t)(k + 1)];
    // Rows k, k+1: zero the bulge at (k+1, k).
    r = std::hypot(dk, bulge);
    c = r > 0 ? dk / r : 1.0;
    s = r > 0 ? bulge / r : 0.0;
    d[(size_t)k] = r;
    e[(size_t)k] = c * ek + s * dk1;
    d[(size_t)(k + 1)] = -s * ek + c * dk1;
    if (k + 1 < h) {
      y = e[(size_t)k];
      z = s * e[(size_t)(k + 1)];
      e[(size_t)(k + 1)] *= c;
    }
  }
}

// A zero d[i] (i < h) splits the block once e[i] is gone: rotate row i against rows i+1..h.
void chase_row(std::vector<double>& d, std::vector<double>& e, int i, int h) {
  double x = e[(size_t)i];
  e[(size_t)i] = 0;
  for (int j = i + 1; j <= h && x != 0; ++j) {
    const double r = std::hypot(x, d[(size_t)j]);
    const double c = d[(size_t)j] / r, s = x / r;
    d[(size_t)j] = r;
    if (j < h) {
      x = -s * e[(size_t)j];
      e[(size_t)j] *= c;
    }
  }
}

// A zero d[h] (the block's last): rotate column h against columns h-1..l to remove e[h-1].
void chase_column(std::vector<double>& d, std::vector<double>& e, int l, int h) {
  double x = e[(size_t)(h - 1)];
  e[(size_t)(h - 1)] = 0;
  for (int j = h - 1; j >= l && x != 0; --j) {
    const double r = std::hypot(d[(size_t)j], x);
    const double c = d[(size_t)j] / r, s = -x / r;
    d[(size_t)j] = r;
    if (j > l) {
      x = s * e[(size_t)(j - 1)];
      e[(size_t)(j - 1)] *= c;
    }
  }
}

Status bidiagonal_singular_values(std::vector<double>& d, std::vector<double>& e) {
  const int n = (int)d.size();
  double anorm = 0;
  for (int i = 0; i < n; ++i) anorm = std::max(anorm, std::fabs(d[(size_t)i]) + (i + 1 < n ? std::fabs(e[(size_t)i]) : 0.0));
  const double tiny = kEps * anorm;
  long iterations = 0;
  const long max_iterations = 75L * std::max(n, 1);
  int h = n - 1;
  while (h > 0) {
    for (int i = 0; i < h; ++i)
      if (std::fabs(e[(size_t)i]) <= kEps * (std::fabs(d[(size_t)i]) + std::fabs(d[(size_t)(i + 1)]))) e[(size_t)i] = 0;
    if (e[(size_t)(h - 1)] == 0) {
      --h;
      continue;
    }
    int l = h - 1;
    while (l > 0 && e[(size_t)(l - 1)] != 0) --l;
    bool split = false;
    for (int i = l; i <= h && !split; ++i) {
      if (std::fabs(d[(size_t)i]) > tiny) continue;
      d[(size_t)i] = 0;
      if (i < h) chase_row(d, e, i, h);
      else chase_column(d, e, l, h);
      split = true;
    }
    if (split) continue;
    if (++iterations > max_iterations)
      return make_error(Code::invalid_argument, "singular_values: bidiagonal QR did not converge in " +
                                                    std::to_string(max_iterations) + " steps");
    golub_kahan_step(d, e, l, h);
  }
  for (double& x : d) x = std::fabs(x);
  std::sort(d.begin(), d.end(), std::greater<double>());
  return Status::Ok();
}

}  // namespace

Result<std::vector<double>> singular_values(const std::vector<double>& a, int m, int n) {
  if (m < 1 || n < 1 || a.size() != (size_t)m * (size_t)n)
    return Status(Code::invalid_argument, "singular_values: a holds " + std::to_string(a.size()) + " values for " +
                                              std::to_string(m) + " x " + std::to_string(n));
  for (double x : a)
    if (!std::isfinite(x)) return Status(Code::invalid_argument, "singular_values: the matrix has a non-finite entry");
  std::vector<double> A;
  if (m >= n) {
    A = a;
  } else {  // the transpose has the same singular values
    A.resize(a.size());
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) A[(size_t)j * m + i] = a[(size_t)i * n + j];
    std::swap(m, n);
  }
  std::vector<double> d, e;
  bidiagonalize(A, m, n, d, e);
  RFA_TRY(bidiagonal_singular_values(d, e));
  return d;
}

Result<std::vector<double>> symmetric_eigen(const std::vector<double>& a, int n, std::vector<double>* vectors) {
  if (n < 1 || a.size() != (size_t)n * (size_t)n)
    return Status(Code::invalid_argument, "symmetric_eigen: a holds " + std::to_string(a.size()) + " values for " +
                                              std::to_string(n) + " x " + std::to_string(n));
  std::vector<double> A((size_t)n * n), V((size_t)n * n, 0.0);
  for (int i = 0; i < n; ++i) {
    V[(size_t)i * n + i] = 1.0;
    for (int j = i; j < n; ++j) {
      const double x = a[(size_t)i * n + j];
      if (!std::isfinite(x)) return Status(Code::invalid_argument, "symmetric_eigen: the matrix has a non-finite entry");
      A[(size_t)i * n + j] = A[(size_t)j * n + i] = x;
    }
  }
  auto at = [&](int i, int j) -> double& { return A[(size_t)i * n + j]; };
  bool converged = n == 1;
  for (int sweep = 0; sweep < 100 && !converged; ++sweep) {
    double off = 0, total = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) (i == j ? total : off) += at(i, j) * at(i, j);
    total += off;
    // Rounding refills the off-diagonal at ~eps |A| per entry, so ask for no less than that.
    const double floor = (double)n * kEps;
    if (off <= floor * floor * total || off == 0) {
      converged = true;
      break;
    }
    for (int p = 0; p < n - 1; ++p)
      for (int q = p + 1; q < n; ++q) {
        const double apq = at(p, q);
        if (std::fabs(apq) < DBL_MIN) continue;
        // t = tan(theta), the smaller root of t^2 + 2 t zeta - 1 = 0 (Golub & Van Loan section 8.5.2).
        const double zeta = (at(q, q) - at(p, p)) / (2.0 * apq);
        const double t = std::fabs(zeta) > 1e150 ? 0.5 / zeta
                                                 : std::copysign(1.0, zeta) / (std::fabs(zeta) + std::sqrt(1.0 + zeta * zeta));
        const double c = 1.0 / std::sqrt(1.0 + t * t), s = t * c;
        for (int r = 0; r < n; ++r) {
          if (r == p || r == q) continue;
          const double arp = at(r, p), arq = at(r, q);
          at(r, p) = at(p, r) = c * arp - s * arq;
          at(r, q) = at(q, r) = s * arp + c * arq;
        }
        at(p, p) -= t * apq;
        at(q, q) += t * apq;
        at(p, q) = at(q, p) = 0;
        if (vectors)
          for (int r = 0; r < n; ++r) {
            const double vp = V[(size_t)r * n + p], vq = V[(size_t)r * n + q];
            V[(size_t)r * n + p] = c * vp - s * vq;
            V[(size_t)r * n + q] = s * vp + c * vq;
          }
      }
  }
  if (!converged) return Status(Code::invalid_argument, "symmetric_eigen: Jacobi did not converge in 100 sweeps");
  std::vector<int> order((size_t)n);
  for (int i = 0; i < n; ++i) order[(size_t)i] = i;
  std::sort(order.begin(), order.end(), [&](int x, int y) { return at(x, x) > at(y, y); });
  std::vector<double> values((size_t)n);
  for (int k = 0; k < n; ++k) values[(size_t)k] = at(order[(size_t)k], order[(size_t)k]);
  if (vectors) {
    vectors->assign((size_t)n * n, 0.0);
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < n; ++i) (*vectors)[(size_t)k * n + i] = V[(size_t)i * n + order[(size_t)k]];
  }
  return values;
}

double effective_rank(const std::vector<double>& sv) {
  double sum = 0;
  for (double s : sv) sum += std::max(s, 0.0);
  if (!(sum > 0)) return 0;
  double h = 0;
  for (double s : sv)
    if (s > 0) {
      const double p = s / sum;
      h -= p * std::log(p);
    }
  return std::exp(h);
}

int numerical_rank(const std::vector<double>& sv, int m, int n, double tol) {
  if (sv.empty() || !(sv[0] > 0)) return 0;
  const double cut = std::max(m, n) * sv[0] * tol;
  int r = 0;
  for (double s : sv) r += s > cut;
  return r;
}

double participation_ratio(const std::vector<double>& ev) {
  double s = 0, s2 = 0;
  for (double x : ev) {
    const double v = std::max(x, 0.0);
    s += v;
    s2 += v * v;
  }
  return s2 > 0 ? s * s / s2 : 0.0;
}

}  // namespace rfa::linalg
