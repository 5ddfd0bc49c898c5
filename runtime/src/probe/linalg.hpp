// Small dense linear algebra in double on the host, for the attention tomography (docs/DIAGNOSTICS.md §3):
// singular values of an attention window (up to ~1024 x 1024) and eigenvalues of a d x d
// covariance. Written here from the textbook algorithms (Golub & Van Loan, ch. 5, 8); no
// third-party code. Matrices are row-major.
#pragma once

#include <vector>

#include "rfa/status.hpp"

namespace rfa::linalg {

// Singular values of the m x n matrix `a`, descending, min(m, n) of them. Householder
// bidiagonalisation (4mn^2 - 4n^3/3 flops for m >= n) then implicit-shift QR on the bidiagonal
// (Golub-Kahan steps with a Wilkinson shift, zero-diagonal chasing), values only. Relative error
// ~1e-15 * sigma_1. Fails (numerical_error-like invalid_argument) only on non-finite input or when
// the QR iteration does not converge within 75 sweeps per value.
Result<std::vector<double>> singular_values(const std::vector<double>& a, int m, int n);

// Eigenvalues (descending) and, when `vectors` is non-null, orthonormal eigenvectors of the
// symmetric n x n matrix `a` (only its upper triangle is read), by cyclic Jacobi rotations:
// vectors[k * n + i] is component i of the eigenvector of values[k]. O(n^3) per sweep, ~6-10
// sweeps; meant for n <= a few hundred.
Result<std::vector<double>> symmetric_eigen(const std::vector<double>& a, int n, std::vector<double>* vectors = nullptr);

// exp of the entropy of the normalised singular values (Roy & Vetterli 2007): 1 for rank one, n
// for n equal values; 0 for an all-zero matrix.
double effective_rank(const std::vector<double>& singular_values);
// Numerical rank: singular values above max(m, n) * sigma_1 * tol (tol = 2^-23 for fp32 maps).
int numerical_rank(const std::vector<double>& singular_values, int m, int n, double tol);
// (sum lambda)^2 / sum lambda^2 of the non-negative part of a spectrum; 0 when it is all zero.
double participation_ratio(const std::vector<double>& eigenvalues);

}  // namespace rfa::linalg
