// One attention mechanism: RFA (with ACC as its phase source), AFA or RT-RFA (docs/architecture.md,
// "Mechanisms"). Everything that differs between them lives behind this interface, in the
// mechanism's own folder (mechanisms/rfa/, afa/, rt/): its parameters (config rules, tensors, the
// op's checks), its packed table (layout in shaders/common/<key>_*table.h, read by C++ and GLSL),
// its kernels, readouts (probe, row diagnostics, tomography), curves and summary. The session, the
// loader, the ops and the readouts ask mechanism_of() once per layer and never switch on the
// variant themselves; adding a mechanism is its folder plus one line in mechanisms/registry.cpp.
//
// What every mechanism shares, and so is not here: the Q/K/V caches and the rotate pass into the
// frame of omega t (ops/rfa_attention.hpp), the span and ring bookkeeping, the row statistics
// (m, l) its fused kernel writes and the readouts read, and the twin's library (reference/).
#pragma once

#include <string>
#include <vector>

#include "gpu/pipeline.hpp"
#include "gpu/recorder.hpp"
#include "ops/rfa_attention.hpp"
#include "rfa/params.hpp"
#include "rfa/session.hpp"

namespace rfa {
struct ModelConfig;
class TensorReader;
}  // namespace rfa

namespace rfa::mech {

class Mechanism {
 public:
  virtual ~Mechanism() = default;
  virtual AttentionVariant variant() const = 0;
  // The config's args.attention_variant value, and the prefix of the mechanism's kernels
  // (<key>_attention, <key>_probe, <key>_tomography).
  virtual const char* key() const = 0;
  // The mechanism's name in messages ("RFA", "AFA", "RT-RFA").
  virtual const char* name() const = 0;

  // ---- parameters ------------------------------------------------------------------------------
  // The config's rules for a model of this mechanism, beyond the shared ones; `acc_keys_given`:
  // the config names a phase source or the stationary-values switch. Errors name the key.
  virtual Status check_config(const ModelConfig& c, bool acc_keys_given, const std::string& label) const = 0;
  // Reads the layer's own tensors under `prefix` and derives its physical parameters
  // (model/physics.hpp); `layer` is the block index.
  virtual Result<AttentionParams> load_params(TensorReader& r, const std::string& prefix, const ModelConfig& cfg,
                                              int layer) const = 0;
  // The op's check of parameters handed to it directly (sizes, signs, finiteness, the frame),
  // naming the field at fault. The shared sizes (heads, D, omega) are checked before.
  virtual Status check_params(const AttentionParams& p) const = 0;

  // ---- host-side readouts ----------------------------------------------------------------------
  // Head `head`'s kernel curves at `lags` (KernelCurves says what each mechanism puts there).
  virtual KernelCurves curves(const AttentionParams& p, int head, const std::vector<double>& lags) const = 0;
  // What the curves are (KernelCurves::names and what, for the viewer's kernel panel): RFA's by default.
  virtual void curve_labels(std::vector<std::string>& names, std::string& what) const {
    names = {"E(lag)", "Vcov(lag)", "P(lag)", "B(lag)"};
    what = "decay, covariance, precision, bias";
  }
  // Whether A = Ahat times the curves' decay (RFA, AFA), or A = Ahat (RT-RFA: no decay).
  virtual bool decays_weights() const { return true; }
  // Head `head`'s per-channel kernels (AFA; rfa::channel_curves); unsupported by default.
  virtual Result<ChannelCurves> channel_curves(const AttentionParams&, int, const std::vector<double>&) const {
    return unsupported("per-channel kernel curves");
  }
  // HeadSummary::terms: one short line for the viewer's regimes table.
  virtual std::string head_terms(const AttentionParams& p, int head) const = 0;
  // The layer's lines of rfa-run --summary.
  virtual std::string layer_summary(int layer, const AttentionParams& p) const = 0;
  // The vectors a head scores with, from the cached ones (docs/DIAGNOSTICS.md §2), in place.
  virtual void to_scored(const AttentionParams&, std::vector<float>&) const {}
  // The host's pair readout (Inspector::pair) recomputes RFA's pair terms: RFA only.
  virtual bool has_pair_readout() const { return false; }

  // ---- the GPU ---------------------------------------------------------------------------------
  // The layer's packed parameter table (AttentionWeightsGpu::table()), floats.
  virtual std::vector<float> layer_table(const AttentionParams& p) const = 0;
  // The rotate pass's UNIT mode (unit directions, log(m^2 + eps) in the norm slots) and its eps.
  virtual bool unit_directions() const { return false; }
  virtual float magnitude_eps(const AttentionParams&) const { return 1e-6f; }
  // Whether the session records the cache's integer-lag table for the layer.
  virtual bool uses_lag_table() const { return false; }
  // The kernels a session of the layer runs (checked against the device's limits at creation).
  virtual void kernel_names(const AttentionParams& p, bool kv_f16, bool lag_table,
                            std::vector<std::string>& out) const = 0;
  // How the fused kernel runs for a call of n_new rows over a cache of `capacity` slots
  // (batch_heads = B * H), the layer's gate `gate`: what record_fused dispatches.
  virtual ops::AttentionTiling tiling(const gpu::Capabilities& caps, const KernelOptions& kernels, uint32_t n_new,
                                      uint32_t dim, uint32_t batch_heads, uint32_t capacity, bool gate) const = 0;
  // The fused attention of the span's new positions (the caches hold them rotated already; the
  // span's positions buffer is resolved). v_rotate: what the rotate pass wrote beside the caches
  // (RFA's normalised values, RT's unit values).
  virtual Status record_fused(gpu::Context& ctx, gpu::Recorder& rec, const ops::AttentionWeightsGpu& w,
                              ops::AttentionCache& cache, const gpu::Buffer& timestamps, const gpu::Buffer& v_rotate,
                              gpu::Buffer& out, const ops::AttentionSpan& span) const = 0;
  // The readout kernels (<key>_probe, <key>_tomography) share their specialisation constants
  // (the mechanism's kernel_ids.h readout ids; `mode` selects what they compute) and their first
  // bindings: the table, the timestamps, Q~ and K~ and the per-token norms where the mechanism
  // reads them.
  virtual gpu::SpecConstants readout_spec(const AttentionParams& p, uint32_t mode) const = 0;
  // The same in view `view` (rfa/params.hpp kAllChannels, kReweighting or a channel: which weights
  // the readouts read, docs/variant-afa-full.md §5); check_view says whether the mechanism has it.
  // Every mechanism has kAllChannels, its ordinary weights; the others are AFA's.
  virtual gpu::SpecConstants readout_spec(const AttentionParams& p, uint32_t mode, int view) const {
    (void)view;
    return readout_spec(p, mode);
  }
  virtual Status check_view(const AttentionParams& p, int view) const;
  virtual std::vector<gpu::Binding> readout_inputs(const ops::AttentionWeightsGpu& w, const ops::AttentionCache& c,
                                                   const gpu::Buffer& timestamps) const = 0;
  // The iterates of a layer with tied iterations (AFA, docs/variant-afa-full.md §3), per pass and
  // in the caches' frame, for Inspector::iterates; empty where the layer has none.
  struct Iterate {
    const gpu::Buffer* buffer;
    bool kv_f16;  // packed fp16 pairs (else fp32 pairs)
  };
  virtual std::vector<Iterate> iterates(const AttentionParams&, const ops::AttentionCache&) const { return {}; }
  // Per-head curves on the GPU (ops/rfa_probe.hpp record_rfa_curves); unsupported by default.
  virtual Status record_curves(gpu::Context& ctx, gpu::Recorder& rec, const ops::AttentionWeightsGpu& w,
                               const gpu::Buffer& lags, uint32_t n_lags, gpu::Buffer& out) const;

  // An unsupported readout `what` of this mechanism, named.
  Status unsupported(const char* what) const;
};

// Kernel curves at `lags` from one lag's point (decay, vcov, precision, bias): what each mechanism's
// curves() builds from its own lag terms.
struct CurvePoint {
  double decay = 0, vcov = 0, precision = 0, bias = 0;
};
template <class PointAt>
KernelCurves curves_at(const std::vector<double>& lags, PointAt point_at) {
  KernelCurves k;
  k.lags = lags;
  for (double lag : lags) {
    const CurvePoint c = point_at(lag);
    k.decay.push_back(c.decay);
    k.vcov.push_back(c.vcov);
    k.precision.push_back(c.precision);
    k.bias.push_back(c.bias);
  }
  return k;
}

// The mechanism of a variant / of a layer's parameters (an unknown variant: nullptr).
const Mechanism* find_mechanism(AttentionVariant v);
// The mechanism of a variant, of a layer's parameters; the variant must be known
// (AttentionWeightsGpu::create and the config check it, naming it, before anything asks).
const Mechanism& mechanism_of(AttentionVariant v);
inline const Mechanism& mechanism_of(const AttentionParams& p) { return mechanism_of(p.variant); }
// The mechanism a config names in args.attention_variant (nullptr: none), and the names known
// ("rfa", "afa" or "rt").
const Mechanism* mechanism_named(const std::string& key);
std::string mechanism_keys();

// AFA and RT-RFA rotate by omega t with stationary values, and have no complex norms or gate
// (docs/variant-afa.md §12, docs/variant-rt.md §13): the config's and the op's check of that, for
// mechanism `m` (mechanisms/plain_frame.cpp).
Status check_plain_frame_config(const Mechanism& m, const ModelConfig& c, bool acc_keys_given, const std::string& label,
                                const char* doc);
Status check_plain_frame_params(const Mechanism& m, const AttentionParams& p);

// The registered mechanisms: each folder defines its `<key>_mechanism()`, which
// mechanisms/registry.cpp declares and lists (one line each).

}  // namespace rfa::mech
