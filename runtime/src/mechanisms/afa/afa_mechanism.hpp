// AFA (adaptive filter attention, docs/variant-afa.md): the mechanism of its memory-optimised form,
// and the base of its full form (mechanisms/afa_full/, docs/variant-afa-full.md), which shares its
// tensors, config rules, table, tiling, passes of the tied iterations, summary and views.
#pragma once

#include <string>
#include <vector>

#include "mechanisms/mechanism.hpp"

namespace rfa::mech {

class AfaMechanism : public Mechanism {
 public:
  AttentionVariant variant() const override { return AttentionVariant::afa; }
  const char* key() const override { return "afa"; }
  const char* name() const override { return "AFA"; }

  Status check_config(const ModelConfig& c, bool acc_keys_given, const std::string& label) const override;
  Result<AttentionParams> load_params(TensorReader& r, const std::string& prefix, const ModelConfig& cfg,
                                      int layer) const override;
  Status check_params(const AttentionParams& p) const override;
  KernelCurves curves(const AttentionParams& p, int head, const std::vector<double>& lags) const override;
  void curve_labels(std::vector<std::string>& names, std::string& what) const override;
  Result<ChannelCurves> channel_curves(const AttentionParams& p, int head, const std::vector<double>& lags) const override;
  std::string head_terms(const AttentionParams& p, int head) const override;
  std::string layer_summary(int layer, const AttentionParams& p) const override;
  void to_scored(const AttentionParams& p, std::vector<float>& v) const override;
  std::vector<float> layer_table(const AttentionParams& p) const override;
  void kernel_names(const AttentionParams& p, bool kv_f16, bool lag_table, std::vector<std::string>& out) const override;
  ops::AttentionTiling tiling(const gpu::Capabilities& caps, const KernelOptions& kernels, uint32_t n_new, uint32_t dim,
                              uint32_t batch_heads, uint32_t capacity, bool gate) const override;
  Status record_fused(gpu::Context& ctx, gpu::Recorder& rec, const ops::AttentionWeightsGpu& w,
                      ops::AttentionCache& cache, const gpu::Buffer& timestamps, const gpu::Buffer& v_rotate,
                      gpu::Buffer& out, const ops::AttentionSpan& span) const override;
  gpu::SpecConstants readout_spec(const AttentionParams& p, uint32_t mode) const override;
  gpu::SpecConstants readout_spec(const AttentionParams& p, uint32_t mode, int view) const override;
  Status check_view(const AttentionParams& p, int view) const override;
  std::vector<gpu::Binding> readout_inputs(const ops::AttentionWeightsGpu& w, const ops::AttentionCache& c,
                                           const gpu::Buffer& timestamps) const override;
  std::vector<Iterate> iterates(const AttentionParams& p, const ops::AttentionCache& c) const override;

 protected:
  // The summary's first line: the form and its switches.
  virtual std::string form_line(const AttentionParams& p) const;
};

}  // namespace rfa::mech
