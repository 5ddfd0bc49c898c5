// Full (anisotropic) AFA (docs/variant-afa-full.md): the thesis's section 3.6 form, per-channel
// precisions, one Mahalanobis reweighting per pair and per-channel normalisers. It is AFA
// (mechanisms/afa/afa_mechanism.hpp) with another fused kernel and other readouts: the same tensors,
// config keys, table, tiling, tied iterations and summary; its own kernels afa_full_attention,
// afa_full_probe, afa_full_tomography (shaders/common/afa_full_*.glsl), its own curves, and the
// normalisers den_k its readouts divide by.
#include <cmath>
#include <string>
#include <vector>

#include "mechanisms/afa/afa_attention.hpp"
#include "mechanisms/afa/afa_mechanism.hpp"
#include "model/config.hpp"

namespace rfa::mech {

namespace {

class AfaFullMechanism final : public AfaMechanism {
 public:
  AttentionVariant variant() const override { return AttentionVariant::afa_full; }
  const char* key() const override { return "afa_full"; }
  const char* name() const override { return "AFA-full"; }

  Status check_config(const ModelConfig& c, bool acc_keys_given, const std::string& label) const override {
    RFA_TRY(AfaMechanism::check_config(c, acc_keys_given, label));
    if (c.afa_precision != AfaPrecision::channel_sum)
      return make_error(Code::model_error, label + ": args.afa_precision: full AFA has per-channel precisions; "
                                                   "the score covariance sources are the memory-optimised form's "
                                                   "(use \"channel_sum\", the default)");
    return Status::Ok();
  }

  // AFA's checks, then what the full form divides by (docs/variant-afa-full.md §4): cov_k + eps must
  // stay positive at every lag, so P_k and every den_k are finite and no running maximum is needed.
  Status check_params(const AttentionParams& p) const override {
    RFA_TRY(AfaMechanism::check_params(p));
    const AfaLayerParams& f = p.afa;
    auto bad = [](const std::string& what) { return make_error(Code::invalid_argument, "afa_full attention: " + what); };
    if (f.precision != AfaPrecision::channel_sum) return bad("params.afa.precision must be channel_sum");
    for (size_t k = 0; k < f.mu.size(); ++k) {
      const double floor = f.gamma2[k] + f.eps;
      if (!(f.eta2[k] + floor > 0))
        return bad("params.afa.eta2[" + std::to_string(k) + "] + gamma2 + eps is 0: the precision at lag 0 is infinite");
      if (!(f.sigma2[k] > 0 || floor > 0 || f.mu[k] == 0 || f.unitary))
        return bad("params.afa.sigma2[" + std::to_string(k) + "] + gamma2 + eps is 0 on a decaying channel: the "
                   "covariance tends to 0 with the lag");
    }
    return Status::Ok();
  }

  // The kernel panel of a full head (docs/variant-afa-full.md §5): the channel means of e_k, of
  // cov_k + eps and of the precision P_k, and as the bias log((1/D) sum_k P_k), the log-weight of a
  // key that matches the query exactly (W = 1) averaged over channels.
  KernelCurves curves(const AttentionParams& p, int h, const std::vector<double>& lags) const override {
    const AfaLayerParams& f = p.afa;
    return curves_at(lags, [&](double lag) {
      const double l = std::fabs(lag);
      CurvePoint c;
      for (int d = 0; d < p.dim; ++d) {
        const size_t k = (size_t)h * p.dim + (size_t)d;
        const double mu = f.unitary ? 0.0 : f.mu[k], e = std::exp(-mu * l);
        const double phi = mu > 0.0 ? -std::expm1(-2.0 * mu * l) / (2.0 * mu) : l;
        const double cov = f.sigma2[k] * phi + f.eta2[k] * e * e + f.gamma2[k] + f.eps;
        c.decay += e / p.dim;
        c.vcov += cov / p.dim;
        c.precision += 1.0 / cov / p.dim;
      }
      c.bias = std::log(c.precision);
      return c;
    });
  }

  void curve_labels(std::vector<std::string>& names, std::string& what) const override {
    names = {"mean decay", "mean cov_k", "mean P_k", "log mean P_k"};
    what = "channel means of the decay, covariance and precision, the log-weight of a matching key";
  }

  ops::AttentionTiling tiling(const gpu::Capabilities& caps, const KernelOptions& kernels, uint32_t n_new, uint32_t dim,
                              uint32_t, uint32_t capacity, bool) const override {
    return ops::choose_afa_tiling(caps, kernels, n_new, dim, capacity, true);
  }

  std::vector<gpu::Binding> readout_inputs(const ops::AttentionWeightsGpu& w, const ops::AttentionCache& c,
                                           const gpu::Buffer& timestamps) const override {
    return {gpu::in(w.table()), gpu::in(timestamps), gpu::in(c.q), gpu::in(c.k), gpu::in(ops::afa_normalisers(c))};
  }

 protected:
  std::string form_line(const AttentionParams&) const override {
    return "AFA-full (adaptive filter attention, full form: per-channel precisions and normalisers)";
  }
};

}  // namespace

const Mechanism& afa_full_mechanism() {
  static const AfaFullMechanism m;
  return m;
}

}  // namespace rfa::mech
