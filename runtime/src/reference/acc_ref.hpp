// The double-precision CPU twin of the ACC variant ("accumulated rotations"): RoPE's commuting
// per-block rotations, but every token contributes its own step angle and the rotation between a
// key j and a query i is the sum of the steps on the route j+1..i. The contract is
// docs/variant-acc.md; this file implements it literally, in double, as the tests' oracle.
//
// Like the RFA twin (attention_ref.hpp) it deliberately does NOT repeat a GPU's algebra:
//  * the prefix theta is scanned sequentially in double and wrapped to (-pi, pi] after every
//    addition, so that it stays exact to ~1e-16 rad per step whatever the sequence length;
//  * every score is formed from the relative phase e^{i (theta_i - theta_j)} applied to the raw
//    key, Re sum_b conj(Q_ib) K_jb e^{i (theta_ib - theta_jb)} / sqrt(2D), never from pre-rotated
//    Q~, K~, so a kernel that pre-rotates is checked against an independent formula;
//  * every softmax and log-sum-exp is formed per row from the full row in double.
//
// Layouts (the RFA layouts): Q, K, V, est: [B][N][H][D] complex; steps phi and prefix theta:
// [B][N][D] (one step vector per position, shared by the heads) or [B][N][H][D] (per-head steps,
// e.g. random steps scaled by per-head omega banks); attention matrices [B][H][N][N]; per-row
// statistics [B][H][N]. Positions are 0-based indices into the sequence.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "rfa/status.hpp"

namespace rfa::ref {

using cd = std::complex<double>;

// ---------------------------------------------------------------------------------------------
// Angles

// x wrapped to (-pi, pi]: std::remainder by 2 pi (exact), then -pi mapped to +pi. Non-finite x gives NaN.
double acc_wrap(double x);

// ---------------------------------------------------------------------------------------------
// The counter-based random-number generator (docs/variant-acc.md, "Random steps"). Only 32-bit
// unsigned operations (wrapping multiply, xor, shifts, rotations), so a shader reproduces it bit
// for bit.

// MurmurHash3_x86_32 of n little-endian 32-bit words (a 4n-byte message) with the given seed.
uint32_t acc_murmur3_words(const uint32_t* words, int n, uint32_t seed);
// The draw of (seed, layer, batch row, position, block): acc_murmur3_words({layer, row, position,
// block}, 4, seed). For fixed other arguments it is a bijection of each single argument.
uint32_t acc_hash(uint32_t seed, uint32_t layer, uint32_t row, uint32_t position, uint32_t block);
// u = (acc_hash(...) >> 8) * 2^-24: a uniform on the 2^24-point lattice {0, 2^-24, ..., 1 - 2^-24},
// every point exactly representable in fp32.
double acc_uniform(uint32_t seed, uint32_t layer, uint32_t row, uint32_t position, uint32_t block);

// ---------------------------------------------------------------------------------------------
// Step angles phi

enum class AccStepKind {
  rope,     // phi_s,b = omega_b                          (constant: RoPE)
  random,   // phi_s,b = 2 omega_b u(seed, layer, row, s, b), u ~ U[0, 1): phi ~ U(0, 2 omega_b)
  learned,  // phi_s,b = table[token_s][b]                (a [V][D] table shared by the heads)
};

struct AccStepSource {
  AccStepKind kind = AccStepKind::rope;
  uint32_t seed = 0;   // random: the forward pass's seed
  uint32_t layer = 0;  // random: the layer index
  // learned: the [vocab][D] table of step angles (unconstrained reals; angles are periodic).
  const std::vector<double>* table = nullptr;
  int vocab = 0;
};

// Steps for positions position0 .. position0 + N - 1 of B rows (row index = batch row b), for H
// heads of D blocks with per-head banks omega [H][D] (rope and random; ignored and may be empty for
// learned). tokens [B][N] (learned only; may be empty otherwise). Output phi [B][N][H][D]: per
// head, because rope and random steps scale with each head's omega (with one random draw per (row,
// position, block) shared by every head); learned steps are the same for every head.
Status acc_steps(const AccStepSource& src, int B, int N, int position0, int H, int D, const std::vector<double>& omega,
                 const std::vector<int32_t>& tokens, std::vector<double>* phi);

// Inclusive prefix along the sequence: theta[b][i][c] = wrap(theta[b][i-1][c] + phi[b][i][c]),
// theta[b][-1][c] = 0, for phi [B][N][C] (C channels: D, or H*D for per-head steps).
// Every phi must be finite.
Status acc_prefix(const std::vector<double>& phi, int B, int N, int C, std::vector<double>* theta);

// ---------------------------------------------------------------------------------------------
// One ACC attention layer

enum class AccValueRotation {
  none,            // O_i = sum_j A_ij V_j                                     (rotate Q/K only)
  counter_rotate,  // O_i = sum_j A_ij e^{i (theta_i - theta_j)} V_j           (rotate Q/K/V, counter-rotate)
  rotate_only,     // O_i = sum_j A_ij e^{-i theta_j} V_j                      (values left in the stationary frame)
};

struct AccLayer {
  int heads = 0, dim = 0;  // H, D (complex dims = rotation blocks)
  AccValueRotation value_rotation = AccValueRotation::none;
  bool causal = true;
  // Optional ALiBi-style far-mass control: logit_ij -= slope_h * |i - j|. Empty or 0 = off;
  // otherwise [H] finite values >= 0.
  std::vector<double> alibi_slope;
};

struct AccOutputs {
  int B = 0, N = 0, H = 0, D = 0;
  std::vector<double> theta;    // the prefix used, laid out as the steps were given
  std::vector<cd> est;          // [B][N][H][D]
  std::vector<double> A;        // [B][H][N][N] attention (rows sum to 1), only with want_matrices
  std::vector<double> row_lse;  // [B][H][N] logsumexp_j logit_ij
};

// The whole layer. phi: the steps, [B][N][D] (shared by heads) or [B][N][H][D] (per head).
Status acc_attention(const AccLayer& L, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                     const std::vector<cd>& V, const std::vector<double>& phi, AccOutputs* out,
                     bool want_matrices = false);

// ---------------------------------------------------------------------------------------------
// Decode steps: one new position for every batch row at a time.
//
// The state is the running prefix theta_last per batch row (D values, or H*D for per-head steps)
// plus the cache. The GPU caches rotated keys K~_j (and V~_j); the twin instead keeps raw K_j, V_j
// and theta_j so that it still forms every score from the relative phase.
struct AccDecodeState {
  int B = 0, H = 0, D = 0;
  int C = 0;                        // channels of theta: D (shared steps) or H*D; fixed by the first step
  int length = 0;                   // positions consumed
  std::vector<double> theta_last;   // [B][C] theta of the last position (zeros before the first)
  std::vector<double> theta_cache;  // [length][B][C]
  std::vector<cd> K, V;             // [length][B][H][D] raw keys and values
};

struct AccStepOutputs {
  std::vector<cd> est;          // [B][H][D] the new position's estimate
  std::vector<double> row_lse;  // [B][H]
  std::vector<double> A;        // [B][H][length] the new position's attention row (after the step)
};

// A fresh state for a causal layer (an error for a non-causal one: a decode cannot see the future).
Status acc_decode_begin(const AccLayer& L, int B, AccDecodeState* st);
// Consume one position: q, k, v [B][H][D]; phi [B][D] or [B][H][D] (the same choice at every step).
// theta = wrap(theta_last + phi); the outputs equal acc_attention's for that position.
Status acc_decode_step(const AccLayer& L, AccDecodeState* st, const std::vector<cd>& q, const std::vector<cd>& k,
                       const std::vector<cd>& v, const std::vector<double>& phi, AccStepOutputs* out);

// ---------------------------------------------------------------------------------------------
// Diagnostics (docs/variant-acc.md, "Diagnostics"). Sequences are passed as [N][C] arrays of one
// batch row (and head, for per-head steps).

// First harmonic rho_c = |mean_m e^{i phi_mc}| of M samples of C channels, phi [M][C].
Status acc_first_harmonic(const std::vector<double>& phi, int M, int C, std::vector<double>* rho);
// The first harmonic of the random law U(0, 2 omega): |sin omega| / |omega| (1 at omega = 0).
double acc_uniform_first_harmonic(double omega);
// Mixing window n*(eps) = ceil(ln eps / ln rho), at least 1; 1 when rho = 0; -1 when rho = 1
// (deterministic steps never mix). rho in [0, 1], eps in (0, 1).
Result<int64_t> acc_mixing_window(double rho, double eps);
// Route coherence C_c(n) = |mean_{i = n..N-1} e^{i (theta_ic - theta_{i-n},c)}|, theta [N][C], 0 <= n < N.
Status acc_route_coherence(const std::vector<double>& theta, int N, int C, int n, std::vector<double>* coherence);
// Matched score s_ij = (1/D) sum_b cos(theta_ib - theta_jb) of two D-vectors of the prefix.
double acc_matched_score(const double* theta_i, const double* theta_j, int D);
// Its mean over i = n..N-1 at lag n (j = i - n), theta [N][D], 0 <= n < N.
Status acc_matched_score_by_lag(const std::vector<double>& theta, int N, int D, int n, double* mean);
// Expected matched score at route length n >= 0 for a bank omega [D]:
// random (U(0, 2 omega_b)): (1/D) sum_b cos(n omega_b) sinc(omega_b)^n, sinc(w) = sin(w) / w (signed);
// rope (constant steps):    (1/D) sum_b cos(n omega_b).
double acc_expected_matched_score(const std::vector<double>& omega, int64_t n, bool random);

// Far set of query i for a window w >= 1: keys j <= i - w (route length >= w); near: i - w < j <= i.
struct AccFarMass {
  double mass = 0;   // M_far(i; w) = sum_{j far} A_ij
  double norm = 0;   // the 2-norm of (A_ij)_{j far}
  int count = 0;     // nF, the far-set size
};
// A: one head's attention matrix [N][N] (rows = queries), 0 <= i < N.
Status acc_far_mass(const std::vector<double>& A, int N, int i, int w, AccFarMass* out);
// Lower bound on the far mass when every logit lies in [-Bd, Bd]: nF / (nF + nN e^{2 Bd}).
// nN >= 0, nF >= 0, nN + nF > 0, Bd >= 0.
Result<double> acc_far_mass_lower_bound(double nN, double nF, double Bd);

// Value-side coherence of query i's far set: per block b,
// coherent[b] = |sum_{j far} A_ij e^{i (theta_ib - theta_jb)}| against identity = sum_{j far} A_ij
// (what identity transport would keep). A: [N][N] of one head; theta [N][D].
struct AccValueCoherence {
  std::vector<double> coherent;  // [D]
  double identity = 0;
};
Status acc_value_coherence(const std::vector<double>& A, const std::vector<double>& theta, int N, int D, int i, int w,
                           AccValueCoherence* out);

}  // namespace rfa::ref
