// A session runs one model on one context: weights on the GPU, per-layer attention caches (rings
// with a sliding window, else max_context positions reserved up front), per-step inputs and
// outputs in frame buffers. prefill() and step() run as one submission of a recorded step plan
// (session_step.cpp); probes read the caches (session_probes.cpp).
#include "rfa/session.hpp"

#include <algorithm>
#include <cmath>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "mechanisms/mechanism.hpp"
#include "model/model.hpp"
#include "ops/linear.hpp"
#include "ops/rfa_attention.hpp"
#include "gpu/pipeline.hpp"
#include "session/session_impl.hpp"
#include "core/access.hpp"

namespace rfa {

using session_detail::LayerGpu;
using session_detail::NormGpu;

namespace {

Result<NormGpu> make_norm(gpu::Context& g, const NormWeights& n, const std::string& label) {
  NormGpu out;
  out.kind = n.kind;
  out.eps = (float)n.eps;
  if (n.kind == NormKind::none) return out;
  auto bw = g.upload_new(n.weight.data, label + ".weight");
  if (!bw) return bw.status();
  out.weight = bw.take();
  if (n.kind == NormKind::layer_norm && !n.bias.data.empty()) {
    auto bb = g.upload_new(n.bias.data, label + ".bias");
    if (!bb) return bb.status();
    out.bias = bb.take();
    out.has_bias = true;
  }
  return out;
}

// Positions one submission adds at most with a window: the ring then needs W + chunk - 1 slots.
constexpr int kWindowChunk = 256;

}  // namespace

// The kernels a session of this model runs, checked against the device's binding and push-constant
// limits when the session is created: a device (or device profile) that cannot bind one refuses
// the session with the limit named, never its first step (docs/device-profiles.md). Every linear
// variant is listed: the chooser may take any of them for some shape.
Status check_session_kernels(const gpu::Capabilities& caps, const Model& m, bool kv_f16, bool lag_table) {
  std::vector<std::string> names = {"linear", "linear_gemv", "linear_direct", "ring_append"};
  if (m.arch != Architecture::attention) names.push_back("layer_norm");
  if (m.arch == Architecture::lm) names.insert(names.end(), {"embed", "sample"});
  for (int l = 0; l < m.num_layers(); ++l) {
    const AttentionParams& p = m.layer(l).params;
    mech::mechanism_of(p).kernel_names(p, kv_f16, lag_table, names);
  }
  for (const std::string& n : names) {
    Status s = gpu::check_shader_interface(caps, n.c_str());
    if (!s.ok()) return Status(s.code(), "this device cannot run the model: " + s.message());
  }
  return Status::Ok();
}

Status Session::Impl::init() {
  const Model& m = *model;
  gpu::Context& G = *g;
  RFA_TRY(check_session_kernels(G.caps(), m, opts.kv == KvPrecision::f16, G.kernels().attention_lag_table != 0));
  auto lin = [&](ops::LinearGpu& dst, const LinearWeights& w, const std::string& label) -> Status {
    auto r = ops::LinearGpu::create(G, w, label);
    if (!r) return r.status();
    dst = r.take();
    return Status::Ok();
  };
  if (m.arch == Architecture::lm) {
    auto e = G.upload_new(m.token_embedding.data, "token_embedding.weight");
    if (!e) return e.status();
    token_embedding = e.take();
    if (!m.lm_head_bias.data.empty()) {
      auto b = G.upload_new(m.lm_head_bias.data, "lm_head.bias");
      if (!b) return b.status();
      lm_bias = b.take();
      has_lm_bias = true;
    }
  }
  if (m.arch == Architecture::signal) {
    RFA_TRY(lin(signal_in, m.signal_in, "input_proj"));
    RFA_TRY(lin(signal_out, m.signal_out, "output_head"));
  }
  if (m.arch != Architecture::attention) {
    RFA_TRY(lin(backbone_in, m.backbone_in, "backbone.input_proj"));
    RFA_TRY(lin(backbone_out, m.backbone_out, "backbone.output_proj"));
    auto fn = make_norm(G, m.final_norm, "backbone.final_norm");
    if (!fn) return fn.status();
    final_norm = fn.take();
  }
  const int L = m.num_layers();
  layers.resize((size_t)L);
  for (int l = 0; l < L; ++l) {
    const AttentionLayer& al = m.layer(l);
    std::string pre = m.arch == Architecture::attention ? "" : "backbone.blocks." + std::to_string(l) + ".";
    LayerGpu& lg = layers[(size_t)l];
    RFA_TRY(lin(lg.wq, al.wq, pre + "attn.W_q"));
    RFA_TRY(lin(lg.wk, al.wk, pre + "attn.W_k"));
    RFA_TRY(lin(lg.wv, al.wv, pre + "attn.W_v"));
    RFA_TRY(lin(lg.wo, al.wo, pre + "attn.W_o"));
    auto aw = ops::AttentionWeightsGpu::create(G, al.params);
    if (!aw) return aw.status();
    lg.attn = std::make_unique<ops::AttentionWeightsGpu>(aw.take());
    auto cache = ops::AttentionCache::create(G, (uint32_t)batch, (uint32_t)m.n_heads, (uint32_t)m.head_dim,
                                             (uint32_t)capacity, (pre + "attn.cache").c_str(), (uint32_t)window,
                                             opts.kv == KvPrecision::f16, al.params.phase != PhaseSource::omega_t);
    if (!cache) return cache.status();
    lg.cache = cache.take();
    if (m.arch != Architecture::attention) {
      const Block& blk = m.blocks[(size_t)l];
      lg.outer_residual = blk.outer_residual;
      auto n1 = make_norm(G, blk.norm1, pre + "norm1");
      if (!n1) return n1.status();
      lg.norm1 = n1.take();
      auto n2 = make_norm(G, blk.norm2, pre + "norm2");
      if (!n2) return n2.status();
      lg.norm2 = n2.take();
      RFA_TRY(lin(lg.ffn1, blk.ffn1, pre + "ffn.0"));
      RFA_TRY(lin(lg.ffn2, blk.ffn2, pre + "ffn.2"));
      lg.has_ffn = true;
    }
  }
  auto ts = G.allocator().allocate((uint64_t)batch * capacity * 8, gpu::MemoryKind::device, "timestamps");
  if (!ts) return ts.status();
  timestamps = ts.take();
  host_t.assign((size_t)batch, {});
  for (auto& r : host_t) r.reset((size_t)capacity + 1);
  probe_rec = std::make_unique<gpu::Recorder>(G, gpu::GpuTiming::none);
  // The fused kernel's integer-lag tables (E, B, P per head and lag), built once on the GPU: they
  // depend on the weights and the ring's size only.
  if (G.kernels().attention_lag_table != 0) {
    RFA_TRY(probe_rec->begin());
    for (LayerGpu& lg : layers) RFA_TRY(ops::record_rfa_lag_table(G, *probe_rec, *lg.attn, lg.cache));
    RFA_TRY(probe_rec->submit_and_wait());
    ++submits;
  }
  return Status::Ok();
}

Status Session::Impl::check_probe(int layer, int head, int b, int r0, int r1, int c0, int c1) const {
  if (layer < 0 || layer >= (int)layers.size())
    return Status(Code::invalid_argument, "probe: layer " + std::to_string(layer) + " out of range [0, " +
                                              std::to_string(layers.size()) + ")");
  if (head < 0 || head >= model->n_heads)
    return Status(Code::invalid_argument, "probe: head " + std::to_string(head) + " out of range");
  if (b < 0 || b >= batch) return Status(Code::invalid_argument, "probe: batch row " + std::to_string(b) + " out of range");
  if (in_frame)
    return Status(Code::invalid_argument, "probe inside an open frame (it would run ahead of the frame's step); "
                                          "call it after end_frame()");
  if (r0 < oldest() || r1 > filled || r0 >= r1 || c0 < oldest() || c1 > filled || c0 >= c1)
    return Status(Code::invalid_argument, "probe: rectangle rows [" + std::to_string(r0) + "," + std::to_string(r1) +
                                              ") x cols [" + std::to_string(c0) + "," + std::to_string(c1) +
                                              ") is empty or outside positions [" + std::to_string(oldest()) + "," +
                                              std::to_string(filled) + ") still in the cache");
  return Status::Ok();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() {
  // Nothing may still run on the GPU with this session's buffers.
  impl_->settle_frame();
  for (auto& p : impl_->plans) p.rec->wait();
}

Result<std::unique_ptr<Session>> Session::create(Context& ctx, std::shared_ptr<const Model> model,
                                                 const SessionOptions& options) {
  if (!model) return Status(Code::invalid_argument, "Session::create: no model");
  if (options.batch < 1) return Status(Code::invalid_argument, "batch must be >= 1");
  if (options.window < -1)
    return Status(Code::invalid_argument, "window must be >= -1 (0: the model's own, args.attention_window; "
                                          "-1: none), got " + std::to_string(options.window));
  SessionOptions o = options;
  if (o.window == 0) o.window = model->attention_window;  // the window the model was trained with
  if (o.window < 0) o.window = 0;                         // no window, even for a model trained with one
  if (o.window == 0 && o.max_context < 1) return Status(Code::invalid_argument, "max_context must be >= 1");
  if (o.window > 0 && !model->layer(0).params.sw.causal)
    return Status(Code::input_error, "window: this model is non-causal (causal = false); a sliding window needs a "
                                     "causal model");
  auto impl = std::make_unique<Impl>();
  impl->ctx = &ctx;
  impl->g = &gpu_of(ctx);
  impl->model = std::move(model);
  impl->info = model_info(*impl->model);
  impl->opts = o;
  impl->batch = o.batch;
  impl->window = o.window;
  if (o.window > 0) {
    impl->max_chunk = std::min(o.window, kWindowChunk);
    impl->capacity = o.window + impl->max_chunk - 1;
  } else {
    impl->capacity = impl->max_chunk = o.max_context;
  }
  impl->last_only = o.last_output_only;
  RFA_TRY(impl->init());
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Status Session::prefill_tokens(const std::vector<int64_t>& ids, int n, const std::vector<double>& ts) {
  const auto held = impl_->lock();
  if (impl_->model->arch != Architecture::lm)
    return Status(Code::input_error, "this model takes values (--signal), not tokens");
  if (n <= 0 || ids.size() != (size_t)impl_->batch * n)
    return Status(Code::input_error, "tokens: " + std::to_string(ids.size()) + " ids for " + std::to_string(impl_->batch) +
                                         " rows x " + std::to_string(n) + " positions");
  return impl_->run(ids.data(), nullptr, n, ts);
}

Status Session::prefill_values(const std::vector<float>& values, int n, const std::vector<double>& ts) {
  const auto held = impl_->lock();
  if (impl_->model->arch == Architecture::lm)
    return Status(Code::input_error, "this language model takes tokens (--prompt or --tokens), not values");
  if (n <= 0 || values.size() != (size_t)impl_->batch * n * impl_->info.input_dim)
    return Status(Code::input_error, "values: " + std::to_string(values.size()) + " numbers for " +
                                         std::to_string(impl_->batch) + " rows x " + std::to_string(n) +
                                         " positions x " + std::to_string(impl_->info.input_dim) + " dims");
  return impl_->run(nullptr, values.data(), n, ts);
}

Status Session::step_tokens(const std::vector<int64_t>& ids, const std::vector<double>& ts) {
  return prefill_tokens(ids, 1, ts);
}
Status Session::step_values(const std::vector<float>& values, const std::vector<double>& ts) {
  return prefill_values(values, 1, ts);
}

void Session::reset() {
  const auto held = impl_->lock();
  Impl& I = *impl_;
  I.settle_frame();
  for (auto& p : I.plans) p.rec->wait();
  I.filled = 0;
  for (auto& t : I.host_t) t.reset((size_t)I.capacity + 1);
  for (auto& l : I.layers) l.cache.filled = 0;
  I.outputs.clear();
  I.last_count = 0;
}

namespace {
// One field read under the session's lock: a getter another thread may call in the middle of a step.
template <class Impl, class Read>
auto locked(const Impl& I, Read read) {
  const auto held = I.lock();
  return read(I);
}
}  // namespace

const std::vector<float>& Session::outputs() const { return impl_->outputs; }
int Session::last_count() const { return locked(*impl_, [](const auto& I) { return I.last_count; }); }
int Session::output_count() const { return locked(*impl_, [](const auto& I) { return I.out_count; }); }
int Session::output_dim() const { return impl_->info.output_dim; }
int Session::position() const { return locked(*impl_, [](const auto& I) { return I.filled; }); }
int Session::batch() const { return impl_->batch; }
int Session::max_context() const { return impl_->capacity; }
int Session::window() const { return impl_->window; }
int Session::oldest_position() const { return locked(*impl_, [](const auto& I) { return I.oldest(); }); }
const Model& Session::model() const { return *impl_->model; }
double Session::last_gpu_ms() const { return locked(*impl_, [](const auto& I) { return I.gpu_ms; }); }
double Session::last_wall_ms() const { return locked(*impl_, [](const auto& I) { return I.wall_ms; }); }
SessionStats Session::stats() const {
  const auto held = impl_->lock();
  SessionStats s;
  s.submits = impl_->submits;
  s.bytes_up = impl_->bytes_up;
  s.bytes_down = impl_->bytes_down;
  s.plans_recorded = impl_->recordings;
  return s;
}
std::vector<std::pair<std::string, double>> Session::last_kernel_ms() const {
  const auto held = impl_->lock();
  std::vector<std::pair<std::string, double>> out;
  if (!impl_->last_rec) return out;
  for (const auto& t : impl_->last_rec->timings()) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == t.label; });
    if (it == out.end()) out.push_back({t.label, t.ms});
    else it->second += t.ms;
  }
  return out;
}
}  // namespace rfa
