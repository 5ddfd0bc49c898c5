// One AFA layer in the twin (docs/variant-afa.md §4, docs/variant-afa-full.md §3): the form's row
// (afa_softmax_row or afa_full_row, afa_rows.hpp), the mix, the tied iterations (IRLS: z1 = V,
// z2 = mix(z1, AFA(Q, K, V)), z_{k+1} = mix(z_k, AFA(z_k, z_k, z_k)) + g (z_k - z_{k-1})) and the
// prediction e^{lambda_k h} z_{n+1}; the prefill and the decode step, which answer the same rows.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "reference/afa_ref.hpp"
#include "reference/afa_rows.hpp"

namespace rfa::ref {

namespace {

using detail::afa_at;
using detail::afa_bad;
constexpr double kInf = std::numeric_limits<double>::infinity();

void form_row(const AfaParams& p, int h, const cd* q, double ti, int nk, const cd* K, const cd* V, size_t stride,
              const double* tk, detail::AfaRowOut* o) {
  if (p.full) detail::afa_full_row(p, h, q, ti, nk, K, V, stride, tk, o);
  else detail::afa_softmax_row(p, h, q, ti, nk, K, V, stride, tk, o);
}

double gate(const AfaParams& p, int h, int k) { return p.mix ? detail::afa_sigmoid(p.delta[afa_at(p, h, k)]) : 1.0; }

// z_{it+2} of one position (D channels) from z_{it+1} (cur), the pass's aggregate avg and, from the
// second pass on, the momentum term of z_it (prev).
void next_iterate(const AfaParams& p, int h, int it, const cd* cur, const cd* prev, const cd* avg, cd* out) {
  for (int k = 0; k < p.dim; ++k) {
    const double s = gate(p, h, k);
    out[k] = (1.0 - s) * cur[k] + s * avg[k];
    if (it > 0) out[k] += p.irls_momentum * (cur[k] - prev[k]);
  }
}

// The prediction factor e^{lambda_k h} (h >= 0).
cd predict(const AfaParams& p, int h, int k, double horizon) { return detail::afa_transport(p, h, k, horizon); }

}  // namespace

Status afa_forward(const AfaParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                   const std::vector<cd>& V, const std::vector<double>& t, AfaOutputs* out, const AfaOptions& opt) {
  RFA_TRY(detail::afa_check_inputs(p, B, N, Q, K, V, t));
  if (opt.window < 0) return afa_bad("options.window is " + std::to_string(opt.window) + ", must be >= 0");
  if (opt.window > 0 && !p.causal) return afa_bad("options.window needs a causal layer (params.causal is false)");
  if (opt.horizon) {
    if (opt.horizon->size() != (size_t)B * (size_t)N)
      return afa_bad("options.horizon holds " + std::to_string(opt.horizon->size()) + " values, B*N = " +
                     std::to_string((size_t)B * N));
    for (size_t x = 0; x < opt.horizon->size(); ++x)
      RFA_TRY(detail::afa_check_horizon((*opt.horizon)[x], "options.horizon[" + std::to_string(x) + "]"));
  }
  const int H = p.heads, D = p.dim, n_it = p.irls_iterations;
  const size_t rows = (size_t)B * H * N, cells = (size_t)B * N * H * D;
  AfaOutputs& o = *out;
  o = AfaOutputs{};
  o.B = B;
  o.N = N;
  o.H = H;
  o.D = D;
  o.filtered.assign(cells, cd(0, 0));
  o.est.assign(cells, cd(0, 0));
  o.row_max.assign(rows, -kInf);
  o.row_lse.assign(rows, -kInf);
  if (p.full) o.den.assign(rows * D, 0.0);
  if (opt.want_matrices) {
    o.attn.assign(rows * (size_t)N, 0.0);
    if (p.full) {
      o.channel_attn.assign(rows * (size_t)D * N, 0.0);
      o.reweight.assign(rows * (size_t)N, 0.0);
    }
  }
  // z[0] = V, z[it + 1] from pass it over z[it] (pass 0 scores with Q, K and aggregates V).
  std::vector<std::vector<cd>> z((size_t)n_it + 1, std::vector<cd>(cells, cd(0, 0)));
  z[0] = V;
  const size_t stride = (size_t)H * D;
  std::vector<double> tk((size_t)N);
  std::vector<cd> avg((size_t)D);
  for (int b = 0; b < B; ++b) {
    for (int j = 0; j < N; ++j) tk[(size_t)j] = detail::afa_time_of(t, N, b, j);
    for (int it = 0; it < n_it; ++it)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < N; ++i) {
          const size_t r = ((size_t)b * H + h) * N + i;
          const size_t self = (((size_t)b * N + i) * H + h) * D;
          const size_t first = ((size_t)b * N * H + h) * D;  // position 0 of sequence b, head h
          // A window W: keys [i - W + 1, i] only (a banded causal mask).
          const int j0 = opt.window > 0 && i + 1 > opt.window ? i + 1 - opt.window : 0;
          const int nk = (p.causal ? i + 1 : N) - j0;
          const std::vector<cd>& qs = it == 0 ? Q : z[(size_t)it];
          const std::vector<cd>& ks = it == 0 ? K : z[(size_t)it];
          detail::AfaRowOut ro;
          ro.zbar = avg.data();
          if (it == 0) {  // the first pass is the layer's readout
            if (opt.want_matrices) {
              ro.attn = o.attn.data() + r * N + j0;
              if (p.full) {
                ro.channel_attn = o.channel_attn.data() + (((size_t)b * H + h) * D * N + i) * N + j0;
                ro.channel_stride = (size_t)N * N;
                ro.reweight = o.reweight.data() + r * N + j0;
              }
            }
            if (p.full) ro.den = o.den.data() + r * D;
          }
          form_row(p, h, qs.data() + self, tk[(size_t)i], nk, ks.data() + first + (size_t)j0 * stride,
                   z[(size_t)it].data() + first + (size_t)j0 * stride, stride, tk.data() + j0, &ro);
          if (it == 0) {
            o.row_max[r] = ro.row_max;
            o.row_lse[r] = ro.row_lse;
          }
          next_iterate(p, h, it, z[(size_t)it].data() + self, it > 0 ? z[(size_t)it - 1].data() + self : nullptr,
                       avg.data(), z[(size_t)it + 1].data() + self);
        }
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < N; ++i) {
        const size_t self = (((size_t)b * N + i) * H + h) * D;
        const double horizon = opt.horizon ? (*opt.horizon)[(size_t)b * N + i] : p.head[(size_t)h].pred_dt;
        for (int k = 0; k < D; ++k) {
          o.filtered[self + k] = z[(size_t)n_it][self + k];
          o.est[self + k] = predict(p, h, k, horizon) * o.filtered[self + k];
        }
      }
  }
  if (opt.want_iterates) {
    o.iterates.reserve(((size_t)n_it + 1) * cells);
    for (const std::vector<cd>& zi : z) o.iterates.insert(o.iterates.end(), zi.begin(), zi.end());
  }
  return Status::Ok();
}

Status afa_decode_reset(const AfaParams& p, AfaDecodeState* st) {
  RFA_TRY(afa_check_params(p));
  if (!p.causal) return afa_bad("decode needs a causal layer (params.causal is false)");
  *st = AfaDecodeState{};
  st->H = p.heads;
  st->D = p.dim;
  st->iterations = p.irls_iterations;
  return Status::Ok();
}

Status afa_decode_step(const AfaParams& p, AfaDecodeState* st, const cd* q, const cd* k, const cd* v, double t,
                       AfaStepOutput* out, const double* horizon) {
  RFA_TRY(afa_check_params(p));
  if (!p.causal) return afa_bad("decode needs a causal layer (params.causal is false)");
  if (st->H != p.heads || st->D != p.dim || st->iterations != p.irls_iterations)
    return afa_bad("decode state was made for H = " + std::to_string(st->H) + ", D = " + std::to_string(st->D) +
                   ", " + std::to_string(st->iterations) + " iteration(s) (call afa_decode_reset)");
  if (!q || !k || !v) return afa_bad(std::string("decode step: ") + (!q ? "q" : !k ? "k" : "v") + " is null");
  const int H = p.heads, D = p.dim, n_it = p.irls_iterations;
  const size_t HD = (size_t)H * D, Z_row = (size_t)(n_it - 1) * HD;
  for (size_t x = 0; x < HD; ++x)
    for (const auto& [z, name] : {std::pair{q, "q"}, std::pair{k, "k"}, std::pair{v, "v"}})
      if (!std::isfinite(z[x].real()) || !std::isfinite(z[x].imag()))
        return make_error(Code::input_error, std::string("afa reference: decode step ") + name + "[" +
                                                 std::to_string(x) + "] is not finite");
  if (!std::isfinite(t)) return make_error(Code::input_error, "afa reference: decode step t is not finite");
  if (st->n > 0 && t < st->t.back())
    return make_error(Code::input_error, "afa reference: decode step t = " + std::to_string(t) +
                                             " is earlier than the previous position's " + std::to_string(st->t.back()));
  if (horizon) RFA_TRY(detail::afa_check_horizon(*horizon, "decode step horizon"));

  // The state grows by this position's key, value, iterates (filled below, pass by pass) and time;
  // then every pass of the row is the prefill's.
  st->K.insert(st->K.end(), k, k + HD);
  st->V.insert(st->V.end(), v, v + HD);
  st->Z.resize(st->Z.size() + Z_row);
  st->t.push_back(t);
  st->n += 1;
  const int n = st->n;
  AfaStepOutput& o = *out;
  o.filtered.assign(HD, cd(0, 0));
  o.est.assign(HD, cd(0, 0));
  o.row_max.assign((size_t)H, -kInf);
  o.row_lse.assign((size_t)H, -kInf);
  o.attn.assign((size_t)H * n, 0.0);
  std::vector<cd> avg((size_t)D), zn((size_t)D);
  // The new position's iterate z_{it+1} of head h (it = 0: its value), and its cache of pass it.
  cd* const zrow = st->Z.data() + (size_t)(n - 1) * Z_row;
  auto iterate = [&](int it, int h) -> const cd* { return it == 0 ? v + (size_t)h * D : zrow + (size_t)(it - 1) * HD + (size_t)h * D; };
  for (int h = 0; h < H; ++h) {
    for (int it = 0; it < n_it; ++it) {
      detail::AfaRowOut ro;
      ro.zbar = avg.data();
      if (it == 0) ro.attn = o.attn.data() + (size_t)h * n;
      const cd* keys = it == 0 ? st->K.data() + (size_t)h * D : st->Z.data() + (size_t)(it - 1) * HD + (size_t)h * D;
      const cd* values = it == 0 ? st->V.data() + (size_t)h * D : keys;
      form_row(p, h, it == 0 ? q + (size_t)h * D : iterate(it, h), t, n, keys, values, it == 0 ? HD : Z_row,
               st->t.data(), &ro);
      if (it == 0) {
        o.row_max[(size_t)h] = ro.row_max;
        o.row_lse[(size_t)h] = ro.row_lse;
      }
      next_iterate(p, h, it, iterate(it, h), it > 0 ? iterate(it - 1, h) : nullptr, avg.data(), zn.data());
      if (it + 1 < n_it) std::copy(zn.begin(), zn.end(), zrow + (size_t)it * HD + (size_t)h * D);
    }
    const double hz = horizon ? *horizon : p.head[(size_t)h].pred_dt;
    for (int c = 0; c < D; ++c) {
      o.filtered[(size_t)h * D + c] = zn[(size_t)c];
      o.est[(size_t)h * D + c] = predict(p, h, c, hz) * zn[(size_t)c];
    }
  }
  return Status::Ok();
}

}  // namespace rfa::ref
