#include "reference/attention_ref.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "reference/acc_ref.hpp"
#include "reference/ops_ref.hpp"
#include "reference/rfa_math.hpp"

namespace rfa::ref {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

cd cis(double angle) { return cd(std::cos(angle), std::sin(angle)); }

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double pair_lag(const AttentionParams& p, double t_i, double t_j) {
  return p.sw.causal ? t_i - t_j : std::fabs(t_i - t_j);
}

// Gains of a complex RMS norm: null (unit gains) when the vector is empty.
const double* gain_of(const std::vector<double>& g, int h, int D) {
  return g.empty() ? nullptr : g.data() + (size_t)h * (size_t)D;
}

Status check_params(const AttentionParams& p) {
  if (p.heads < 1 || p.dim < 1) return make_error(Code::invalid_argument, "reference attention: heads and dim must be >= 1");
  const size_t HD = (size_t)p.heads * (size_t)p.dim;
  if (p.head.size() != (size_t)p.heads)
    return make_error(Code::invalid_argument, "reference attention: params.head has " + std::to_string(p.head.size()) +
                                                  " entries, heads = " + std::to_string(p.heads));
  if (p.omega.size() != HD)
    return make_error(Code::invalid_argument, "reference attention: params.omega has " + std::to_string(p.omega.size()) +
                                                  " entries, heads*dim = " + std::to_string(HD));
  for (const auto* g : {&p.norm_q, &p.norm_k, &p.norm_v, &p.norm_o})
    if (!g->empty() && g->size() != HD)
      return make_error(Code::invalid_argument, "reference attention: a complex norm gain vector is not heads*dim long");
  return Status::Ok();
}

Status check_inputs(const AttentionParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                    const std::vector<cd>& V, const std::vector<double>& t) {
  RFA_TRY(check_params(p));
  if (B < 0 || N < 0) return make_error(Code::invalid_argument, "reference attention: negative B or N");
  const size_t n = (size_t)B * (size_t)N * (size_t)p.heads * (size_t)p.dim;
  if (Q.size() != n || K.size() != n || V.size() != n)
    return make_error(Code::invalid_argument, "reference attention: Q, K, V must hold B*N*H*D = " + std::to_string(n) +
                                                  " values");
  if (!t.empty() && t.size() != (size_t)B * (size_t)N)
    return make_error(Code::invalid_argument, "reference attention: t must hold B*N timestamps (or be empty)");
  for (double x : t)
    if (!std::isfinite(x)) return make_error(Code::input_error, "reference attention: a timestamp is not finite");
  return Status::Ok();
}

double time_of(const std::vector<double>& t, int N, int b, int i) {
  return t.empty() ? (double)i : t[(size_t)b * (size_t)N + (size_t)i];
}

// Apply the complex input norm to a copy of Z (per token and head) when the switch is on.
std::vector<cd> input_norm(const AttentionParams& p, const std::vector<cd>& Z, const std::vector<double>& gain) {
  std::vector<cd> out = Z;
  if (!p.sw.complex_input_norm) return out;
  const int H = p.heads, D = p.dim;
  const size_t tokens = Z.size() / ((size_t)H * (size_t)D);
  for (size_t n = 0; n < tokens; ++n)
    for (int h = 0; h < H; ++h) complex_rms_norm(out.data() + (n * H + h) * D, D, gain_of(gain, h, D));
  return out;
}

// The accumulated phases theta [B][N][H][D] of an ACC layer (docs/variant-acc.md) from the ACC
// twin's steps and prefix (positions 0..N-1 of each batch row); empty for the omega t clock.
Status accumulated_theta(const AttentionParams& p, int B, int N, std::vector<double>* theta,
                         const std::vector<int32_t>* tokens = nullptr) {
  theta->clear();
  if (p.phase == PhaseSource::omega_t) return Status::Ok();
  AccStepSource src;
  src.kind = p.phase == PhaseSource::accumulated_random  ? AccStepKind::random
             : p.phase == PhaseSource::accumulated_learned ? AccStepKind::learned
                                                           : AccStepKind::rope;
  src.seed = p.step_seed;
  src.layer = p.step_layer;
  src.table = &p.step_table;
  src.vocab = p.step_vocab;
  if (src.kind == AccStepKind::learned && (!tokens || tokens->size() != (size_t)B * N))
    return make_error(Code::invalid_argument, "reference attention: learned accumulated steps need the token ids [B][N]");
  std::vector<double> phi;
  RFA_TRY(acc_steps(src, B, N, 0, p.heads, p.dim, p.omega, tokens ? *tokens : std::vector<int32_t>{}, &phi));
  return acc_prefix(phi, B, N, p.heads * p.dim, theta);
}

// The angle of position n (batch row b, head h, dim d): omega_d t_n, or its accumulated phase.
double angle_of(const AttentionParams& p, const std::vector<double>& theta, int N, int b, int n, int h, int d,
                double t_n) {
  const int D = p.dim;
  return theta.empty() ? p.omega[(size_t)h * D + d] * t_n : theta[(((size_t)b * N + n) * p.heads + h) * D + d];
}

}  // namespace

PairTerms pair_terms(const AttentionParams& p, int h, const cd* q, const cd* k, double t_i, double t_j,
                     const double* theta_i, const double* theta_j) {
  const HeadParams& hp = p.head[(size_t)h];
  const double* omega = p.omega.data() + (size_t)h * (size_t)p.dim;
  PairTerms r;
  r.lag = pair_lag(p, t_i, t_j);
  r.dt = shifted_lag(p, h, r.lag);
  r.E = decay(p, h, r.lag);
  r.vcov = vcov(p, h, r.lag);
  r.B = bias(p, h, r.lag);
  r.P = precision(p, h, r.lag);
  const double rel = t_i - t_j;  // the relative phase always uses the signed time difference
  double resid2 = 0.0, cross = 0.0, qn = 0.0, kn = 0.0;
  for (int d = 0; d < p.dim; ++d) {
    // The key transported to t_i (rotation only): by omega (t_i - t_j), or by the accumulated route angle.
    const cd k_at_i = cis(theta_i ? theta_i[d] - theta_j[d] : omega[d] * rel) * k[d];
    resid2 += std::norm(q[d] - r.E * k_at_i);
    cross += (std::conj(q[d]) * k_at_i).real();
    qn += std::norm(q[d]);
    kn += std::norm(k[d]);
  }
  r.q_norm2 = qn;
  r.k_norm2 = kn;
  r.cross = cross;
  r.R2 = p.sw.full_residual ? resid2 : -r.E * cross;
  if (p.sw.robust) {
    const double lg = std::log1p(r.P * r.R2);
    r.L = r.B - hp.kappa * lg;
    r.energy = r.B - lg;
  } else {
    r.L = r.B - r.P * r.R2;
    r.energy = r.L;
  }
  r.logit = hp.tau * r.L;
  return r;
}

PairTerms pair_terms(const AttentionParams& p, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                     const std::vector<double>& t, int b, int h, int i, int j, bool* masked) {
  const int H = p.heads, D = p.dim;
  std::vector<cd> q(Q.begin() + (((size_t)b * N + i) * H + h) * D, Q.begin() + (((size_t)b * N + i) * H + h + 1) * D);
  std::vector<cd> k(K.begin() + (((size_t)b * N + j) * H + h) * D, K.begin() + (((size_t)b * N + j) * H + h + 1) * D);
  if (p.sw.complex_input_norm) {
    complex_rms_norm(q.data(), D, gain_of(p.norm_q, h, D));
    complex_rms_norm(k.data(), D, gain_of(p.norm_k, h, D));
  }
  if (masked) *masked = p.sw.causal && j > i;
  std::vector<double> theta;  // ACC: the phases of positions 0..max(i, j)
  const int upto = std::max(i, j) + 1;
  if (!accumulated_theta(p, b + 1, upto, &theta).ok()) theta.clear();
  const double* th = theta.empty() ? nullptr : theta.data() + (size_t)b * upto * H * D;
  return pair_terms(p, h, q.data(), k.data(), time_of(t, N, b, i), time_of(t, N, b, j),
                    th ? th + ((size_t)i * H + h) * D : nullptr, th ? th + ((size_t)j * H + h) * D : nullptr);
}

Status rotate_inputs(const AttentionParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                     const std::vector<cd>& V, const std::vector<double>& t, AttentionStages* st) {
  RFA_TRY(check_inputs(p, B, N, Q, K, V, t));
  const int H = p.heads, D = p.dim;
  st->Qn = input_norm(p, Q, p.norm_q);
  st->Kn = input_norm(p, K, p.norm_k);
  st->Vn = input_norm(p, V, p.norm_v);
  st->Qr.resize(Q.size());
  st->Kr.resize(K.size());
  st->Vr.resize(V.size());
  std::vector<double> theta;
  RFA_TRY(accumulated_theta(p, B, N, &theta));
  st->q_norm2.assign((size_t)B * N * H, 0.0);
  st->k_norm2.assign((size_t)B * N * H, 0.0);
  for (int b = 0; b < B; ++b)
    for (int n = 0; n < N; ++n) {
      const double tn = time_of(t, N, b, n);
      for (int h = 0; h < H; ++h) {
        const size_t row = ((size_t)b * N + n) * H + h;
        for (int d = 0; d < D; ++d) {
          const size_t idx = row * D + d;
          const cd rot = cis(-angle_of(p, theta, N, b, n, h, d, tn));
          st->Qr[idx] = st->Qn[idx] * rot;
          st->Kr[idx] = st->Kn[idx] * rot;
          st->Vr[idx] = p.sw.stationary_values ? st->Vn[idx] * rot : st->Vn[idx];
          st->q_norm2[row] += std::norm(st->Qn[idx]);
          st->k_norm2[row] += std::norm(st->Kn[idx]);
        }
      }
    }
  return Status::Ok();
}

Status attention(const AttentionParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                 const std::vector<cd>& V, const std::vector<double>& t, AttentionOutputs* out,
                 const AttentionOptions& opt) {
  RFA_TRY(check_inputs(p, B, N, Q, K, V, t));
  if (opt.key_valid && opt.key_valid->size() != (size_t)B * (size_t)N)
    return make_error(Code::invalid_argument, "reference attention: key_valid must hold B*N flags");
  if (opt.window < 0 || (opt.window > 0 && !p.sw.causal))
    return make_error(Code::invalid_argument, "reference attention: a window must be >= 0 and needs a causal layer");
  const int H = p.heads, D = p.dim;
  const size_t rows = (size_t)B * H * N;
  const size_t nz = (size_t)B * N * H * D;

  AttentionOutputs& o = *out;
  o = AttentionOutputs{};
  o.B = B;
  o.N = N;
  o.H = H;
  o.D = D;
  if (opt.want_stages) {
    RFA_TRY(rotate_inputs(p, B, N, Q, K, V, t, &o.stages));
    o.stages.est_stationary.assign(nz, cd(0, 0));
  }
  const std::vector<cd> Qn = input_norm(p, Q, p.norm_q);
  const std::vector<cd> Kn = input_norm(p, K, p.norm_k);
  const std::vector<cd> Vn = input_norm(p, V, p.norm_v);

  if (opt.want_matrices) {
    o.Ahat.assign(rows * (size_t)N, 0.0);
    o.A.assign(rows * (size_t)N, 0.0);
  }
  o.row_max.assign(rows, -kInf);
  o.row_sum.assign(rows, 0.0);
  o.row_lse.assign(rows, -kInf);
  o.energy_lse.assign(rows, -kInf);
  o.decayed_mass.assign(rows, 0.0);
  o.est.assign(nz, cd(0, 0));

  std::vector<double> logit((size_t)N), energy((size_t)N), E((size_t)N);
  std::vector<uint8_t> valid((size_t)N);
  std::vector<double> theta;  // ACC layers: the accumulated phases, else empty (omega t)
  RFA_TRY(accumulated_theta(p, B, N, &theta, opt.tokens));
  auto theta_at = [&](int b, int n, int h) {
    return theta.empty() ? nullptr : theta.data() + (((size_t)b * N + n) * H + h) * D;
  };
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h) {
      const double* omega = p.omega.data() + (size_t)h * D;
      for (int i = 0; i < N; ++i) {
        const size_t r = ((size_t)b * H + h) * N + i;
        const double ti = time_of(t, N, b, i);
        const cd* q = Qn.data() + (((size_t)b * N + i) * H + h) * D;
        bool any = false;
        for (int j = 0; j < N; ++j) {
          bool ok = !(p.sw.causal && j > i);
          if (opt.window > 0 && i - j >= opt.window) ok = false;
          if (opt.key_valid && !(*opt.key_valid)[(size_t)b * N + j]) ok = false;
          valid[(size_t)j] = ok;
          if (!ok) continue;
          any = true;
          const cd* k = Kn.data() + (((size_t)b * N + j) * H + h) * D;
          const PairTerms pt = pair_terms(p, h, q, k, ti, time_of(t, N, b, j), theta_at(b, i, h), theta_at(b, j, h));
          logit[(size_t)j] = pt.logit;
          energy[(size_t)j] = pt.energy;
          E[(size_t)j] = pt.E;
        }
        if (!any) continue;  // fully masked row: zeros, -inf statistics

        // Softmax of the logits and logsumexp of the energies, from the whole row.
        double m = -kInf, me = -kInf;
        for (int j = 0; j < N; ++j)
          if (valid[(size_t)j]) {
            m = std::fmax(m, logit[(size_t)j]);
            me = std::fmax(me, energy[(size_t)j]);
          }
        double l = 0.0, le = 0.0;
        for (int j = 0; j < N; ++j)
          if (valid[(size_t)j]) {
            l += std::exp(logit[(size_t)j] - m);
            le += std::exp(energy[(size_t)j] - me);
          }
        o.row_max[r] = m;
        o.row_sum[r] = l;
        o.row_lse[r] = m + std::log(l);
        o.energy_lse[r] = me + std::log(le);

        cd* est = o.est.data() + (((size_t)b * N + i) * H + h) * D;
        cd* est_st = opt.want_stages ? o.stages.est_stationary.data() + (((size_t)b * N + i) * H + h) * D : nullptr;
        double mass = 0.0;
        for (int j = 0; j < N; ++j) {
          if (!valid[(size_t)j]) continue;
          const double ahat = std::exp(logit[(size_t)j] - m) / l;
          const double a = ahat * E[(size_t)j];
          mass += a;
          if (opt.want_matrices) {
            o.Ahat[r * N + j] = ahat;
            o.A[r * N + j] = a;
          }
          const double tj = time_of(t, N, b, j);
          const cd* v = Vn.data() + (((size_t)b * N + j) * H + h) * D;
          for (int d = 0; d < D; ++d) {
            // Counter-rotated: the value transported from t_j to t_i; otherwise left in the
            // stationary frame V e^{-i omega t_j} (the reference always rotates V, docs/reference-code.md §6).
            const double ai = angle_of(p, theta, N, b, i, h, d, ti), aj = angle_of(p, theta, N, b, j, h, d, tj);
            // omega t: the relative phase from the time difference, so timestamps ~1e6 lose nothing.
            const double rel = theta.empty() ? omega[d] * (ti - tj) : ai - aj;
            const cd phase = !p.sw.stationary_values ? cd(1.0, 0.0) : p.sw.counter_rotate ? cis(rel) : cis(-aj);
            est[d] += a * phase * v[d];
            if (est_st) est_st[d] += a * o.stages.Vr[(((size_t)b * N + j) * H + h) * D + d];
          }
        }
        o.decayed_mass[r] = mass;
      }
    }

  if (opt.want_stages) o.stages.est_counter = o.est;

  // Inner residual with the confidence gate (docs/reference-code.md §8): est <- g est + (1 - g) V_norm.
  if (p.sw.gate) {
    o.gate.assign(rows, 0.0);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h) {
        const HeadParams& hp = p.head[(size_t)h];
        for (int i = 0; i < N; ++i) {
          const size_t r = ((size_t)b * H + h) * N + i;
          const double x = std::exp(hp.gate_scale_log) * (o.energy_lse[r] + hp.gate_c) - hp.gate_prior_log;
          const double g = sigmoid(x);
          o.gate[r] = g;
          const size_t base = (((size_t)b * N + i) * H + h) * D;
          for (int d = 0; d < D; ++d) o.est[base + d] = g * o.est[base + d] + (1.0 - g) * Vn[base + d];
        }
      }
  }
  if (opt.want_stages) o.stages.est_gated = o.est;

  // Complex output norm (before the shift rotation).
  if (p.sw.complex_output_norm) {
    for (size_t n = 0; n < (size_t)B * N; ++n)
      for (int h = 0; h < H; ++h) complex_rms_norm(o.est.data() + (n * H + h) * D, D, gain_of(p.norm_o, h, D));
  }
  if (opt.want_stages) o.stages.est_normed = o.est;

  // Lag-shift projection: rotation e^{+i omega s_h} only, decay 1 (docs/reference-code.md §7); it
  // belongs to the omega t clock, so an accumulated phase has none (docs/variant-acc.md).
  if (p.sw.shift_rotation && p.phase == PhaseSource::omega_t) {
    for (int h = 0; h < H; ++h) {
      const double s = p.head[(size_t)h].lag_shift;
      if (s == 0.0) continue;
      for (size_t n = 0; n < (size_t)B * N; ++n)
        for (int d = 0; d < D; ++d) o.est[(n * H + h) * D + d] *= cis(p.omega[(size_t)h * D + d] * s);
    }
  }
  return Status::Ok();
}

Status row_diagnostics(const AttentionParams& p, int B, int N, const std::vector<double>& t,
                       const AttentionOutputs& out, const std::vector<double>& thresholds, RowDiagnostics* diag) {
  const int H = p.heads;
  const size_t rows = (size_t)B * H * N;
  if (out.B != B || out.N != N || out.H != H || out.Ahat.size() != rows * (size_t)N || out.A.size() != rows * (size_t)N)
    return make_error(Code::invalid_argument, "reference row_diagnostics: outputs must come from attention() with "
                                              "want_matrices and the same B, N, H");
  if (!t.empty() && t.size() != (size_t)B * (size_t)N)
    return make_error(Code::invalid_argument, "reference row_diagnostics: t must hold B*N timestamps (or be empty)");
  const size_t T = thresholds.size();
  RowDiagnostics& d = *diag;
  d = RowDiagnostics{};
  d.thresholds = thresholds;
  d.entropy.assign(rows, 0.0);
  d.log_partition = out.row_lse;
  d.max_weight.assign(rows, 0.0);
  d.expected_lag.assign(rows, 0.0);
  d.mass_beyond.assign(rows * T, 0.0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < N; ++i) {
        const size_t r = ((size_t)b * H + h) * N + i;
        const double ti = time_of(t, N, b, i);
        double ent = 0.0, mx = 0.0, el = 0.0;
        for (int j = 0; j < N; ++j) {
          const double ah = out.Ahat[r * N + j];
          const double a = out.A[r * N + j];
          if (ah > 0.0) ent -= ah * std::log(ah);
          mx = std::fmax(mx, ah);
          const double lag = pair_lag(p, ti, time_of(t, N, b, j));
          el += a * lag;
          for (size_t k = 0; k < T; ++k)
            if (lag > thresholds[k]) d.mass_beyond[r * T + k] += a;
        }
        d.entropy[r] = ent;
        d.max_weight[r] = mx;
        d.expected_lag[r] = el;
      }
  return Status::Ok();
}

}  // namespace rfa::ref
