// A session runs one model on one context: weights on the GPU, per-layer attention caches for
// `max_context` positions reserved up front, and scratch activations sized to the largest call.
// prefill() and step() record the whole network into one command buffer and submit it once.
#include "rfa/session.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "gpu/context.hpp"
#include "gpu/memory.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/recorder.hpp"
#include "model/model.hpp"
#include "ops/linear.hpp"
#include "ops/norm.hpp"
#include "ops/rfa_attention.hpp"
#include "session/session_impl.hpp"

namespace rfa {

using session_detail::LayerGpu;
using session_detail::NormGpu;

namespace {

Result<NormGpu> make_norm(gpu::Context& g, const NormWeights& n, const std::string& label) {
  NormGpu out;
  out.kind = n.kind;
  out.eps = (float)n.eps;
  if (n.kind == NormKind::none) return out;
  std::vector<float> w = n.weight.data;
  auto bw = g.upload_new(w, label + ".weight");
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

}  // namespace

Status Session::Impl::init() {
  const Model& m = *model;
  gpu::Context& G = *g;
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
                                             (uint32_t)capacity, (pre + "attn.cache").c_str());
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
  rec = std::make_unique<gpu::Recorder>(G);
  return Status::Ok();
}

Status Session::Impl::ensure_scratch(uint32_t rows) {
  if (rows <= scratch_rows) return Status::Ok();
  const Model& m = *model;
  const uint64_t d_e = (uint64_t)m.d_e, c2 = 2ull * m.n_heads * m.head_dim;
  const uint64_t in_dim = (uint64_t)std::max(info.input_dim, 1);
  const uint64_t out_dim = (uint64_t)info.output_dim;
  auto alloc = [&](gpu::Buffer& b, uint64_t floats, const char* what) -> Status {
    b.release();
    auto r = g->allocator().allocate(std::max<uint64_t>(floats, 1) * 4, gpu::MemoryKind::device, what);
    if (!r) return r.status();
    b = r.take();
    return Status::Ok();
  };
  RFA_TRY(alloc(ids, rows, "scratch ids"));
  RFA_TRY(alloc(input, rows * in_dim, "scratch input"));
  RFA_TRY(alloc(x, rows * d_e, "scratch x"));
  RFA_TRY(alloc(h, rows * d_e, "scratch h"));
  RFA_TRY(alloc(q, rows * c2, "scratch q"));
  RFA_TRY(alloc(k, rows * c2, "scratch k"));
  RFA_TRY(alloc(v, rows * c2, "scratch v"));
  RFA_TRY(alloc(vnorm, rows * c2, "scratch v_norm"));
  RFA_TRY(alloc(att, rows * c2, "scratch attention out"));
  RFA_TRY(alloc(ffn, rows * (uint64_t)std::max(m.hidden, 1), "scratch ffn"));
  RFA_TRY(alloc(out, (last_only ? (uint64_t)batch : rows) * out_dim, "scratch output"));
  scratch_rows = rows;
  return Status::Ok();
}

Status Session::Impl::record_norm(const NormGpu& n, const gpu::Buffer& src, const gpu::Buffer& dst, uint32_t rows,
                                  uint32_t dim) {
  if (n.kind == NormKind::none) {
    rec->copy(src, dst, (VkDeviceSize)rows * dim * 4);
    return Status::Ok();
  }
  return ops::record_norm(*g, *rec, src, n.weight, n.has_bias ? &n.bias : nullptr, dst, rows, dim, n.eps,
                          n.kind == NormKind::rms_norm);
}

Status Session::Impl::run(const int64_t* ids_in, const float* values, int n, const std::vector<double>& ts_given) {
  // t_equal models (the reference default) use positions as timestamps whatever is passed.
  static const std::vector<double> kNone;
  const std::vector<double>& ts_in = model->t_equal ? kNone : ts_given;
  auto t0 = std::chrono::steady_clock::now();
  RFA_TRY(g->usable());
  const Model& m = *model;
  if (n <= 0) return Status(Code::invalid_argument, "at least one position per batch row is needed");
  if (filled + n > capacity)
    return Status(Code::input_error, "sequence too long: " + std::to_string(filled) + " positions filled + " +
                                         std::to_string(n) + " new exceeds the session's max context of " +
                                         std::to_string(capacity));
  const bool causal = m.layer(0).params.sw.causal;
  if (!causal && filled > 0)
    return Status(Code::input_error, "this model is non-causal (causal = false): every position attends to the "
                                     "future, so it cannot be streamed; prefill the whole sequence at once or reset()");
  // Timestamps: given, or the position index.
  std::vector<double> ts((size_t)batch * n);
  if (!ts_in.empty() && ts_in.size() != ts.size())
    return Status(Code::input_error, "timestamps: " + std::to_string(ts_in.size()) + " values for " +
                                         std::to_string(batch) + " rows x " + std::to_string(n) + " positions");
  for (int b = 0; b < batch; ++b) {
    double prev = host_t[(size_t)b].empty() ? -INFINITY : host_t[(size_t)b].back();
    for (int i = 0; i < n; ++i) {
      double t = ts_in.empty() ? (double)(filled + i) : ts_in[(size_t)b * n + i];
      if (!std::isfinite(t))
        return Status(Code::input_error, "timestamps: value at row " + std::to_string(b) + ", position " +
                                             std::to_string(filled + i) + " is not finite");
      if (t < prev)
        return Status(Code::input_error, "timestamps decrease at row " + std::to_string(b) + ", position " +
                                             std::to_string(filled + i) + ": " + std::to_string(t) + " after " +
                                             std::to_string(prev) + " (timestamps must be non-decreasing)");
      prev = t;
      ts[(size_t)b * n + i] = t;
    }
  }
  const uint32_t rows = (uint32_t)(batch * n);
  RFA_TRY(ensure_scratch(rows));
  if (ids_in) {
    std::vector<uint32_t> u(rows);
    for (uint32_t r = 0; r < rows; ++r) {
      if (ids_in[r] < 0 || ids_in[r] >= m.vocab)
        return Status(Code::input_error, "token id " + std::to_string(ids_in[r]) + " at index " + std::to_string(r) +
                                             " is outside the vocabulary [0, " + std::to_string(m.vocab) + ")");
      u[r] = (uint32_t)ids_in[r];
    }
    RFA_TRY(g->upload(ids, u.data(), rows * 4));
  } else {
    for (uint32_t i = 0; i < rows * (uint32_t)info.input_dim; ++i)
      if (!std::isfinite(values[i]))
        return Status(Code::input_error, "input value " + std::to_string(i) + " is not finite");
    RFA_TRY(g->upload(input, values, (size_t)rows * info.input_dim * 4));
  }
  for (int b = 0; b < batch; ++b) {
    std::vector<float> pairs((size_t)n * 2);
    for (int i = 0; i < n; ++i) ops::split_timestamp(ts[(size_t)b * n + i], &pairs[2 * i], &pairs[2 * i + 1]);
    RFA_TRY(g->upload(timestamps, pairs.data(), pairs.size() * 4, ((size_t)b * capacity + filled) * 8));
  }

  const uint32_t d_e = (uint32_t)m.d_e;
  gpu::Recorder& R = *rec;
  RFA_TRY(R.begin());
  Status st = [&]() -> Status {
    // Input -> x [rows, d_e]
    if (m.arch == Architecture::lm) {
      auto pipe = g->pipelines().get("embed", 3, 8);
      if (!pipe) return pipe.status();
      struct {
        uint32_t rows, dim;
      } push{rows, d_e};
      R.dispatch(**pipe, {gpu::in(ids), gpu::in(token_embedding), gpu::out(h)}, &push, (d_e + 63) / 64, rows, 1, "embed");
      RFA_TRY(ops::record_linear(*g, R, h, backbone_in, x, rows));
    } else if (m.arch == Architecture::signal) {
      RFA_TRY(ops::record_linear(*g, R, input, signal_in, h, rows));
      RFA_TRY(ops::record_linear(*g, R, h, backbone_in, x, rows));
    } else {
      R.copy(input, x, (VkDeviceSize)rows * d_e * 4);
    }
    for (size_t l = 0; l < layers.size(); ++l) {
      LayerGpu& L = layers[l];
      const bool block = m.arch != Architecture::attention;
      const gpu::Buffer& a_in = block ? h : x;
      if (block) RFA_TRY(record_norm(L.norm1, x, h, rows, d_e));
      RFA_TRY(ops::record_linear(*g, R, a_in, L.wq, q, rows));
      RFA_TRY(ops::record_linear(*g, R, a_in, L.wk, k, rows));
      RFA_TRY(ops::record_linear(*g, R, a_in, L.wv, v, rows));
      RFA_TRY(ops::record_rfa_attention(*g, R, *L.attn, L.cache, timestamps, q, k, v, vnorm, att, (uint32_t)filled,
                                        (uint32_t)n));
      if (!block) {
        RFA_TRY(ops::record_linear(*g, R, att, L.wo, h, rows));  // the layer's output, [rows, d_e]
        continue;
      }
      if (L.outer_residual) {
        ops::LinearOptions acc;
        acc.accumulate = true;  // x += W_o(att)
        RFA_TRY(ops::record_linear(*g, R, att, L.wo, x, rows, acc));
      }
      RFA_TRY(record_norm(L.norm2, x, h, rows, d_e));
      ops::LinearOptions relu;
      relu.relu = true;
      RFA_TRY(ops::record_linear(*g, R, h, L.ffn1, ffn, rows, relu));
      ops::LinearOptions acc;
      acc.accumulate = true;
      RFA_TRY(ops::record_linear(*g, R, ffn, L.ffn2, x, rows, acc));
    }
    if (m.arch == Architecture::attention) {
      if (!last_only) {
        R.copy(h, out, (VkDeviceSize)rows * d_e * 4);
      } else {
        for (int b = 0; b < batch; ++b)  // keep only each row's last position: [B, d_e]
          R.copy(h, out, (VkDeviceSize)d_e * 4, ((VkDeviceSize)b * n + n - 1) * d_e * 4, (VkDeviceSize)b * d_e * 4);
      }
      return Status::Ok();
    }
    uint32_t head_rows = rows;
    if (last_only) {
      // Only each row's last position goes through the head: gather them into the first B rows.
      for (int b = 0; b < batch; ++b)
        R.copy(x, h, (VkDeviceSize)d_e * 4, ((VkDeviceSize)b * n + n - 1) * d_e * 4, (VkDeviceSize)b * d_e * 4);
      R.copy(h, x, (VkDeviceSize)batch * d_e * 4);
      head_rows = (uint32_t)batch;
    }
    RFA_TRY(record_norm(final_norm, x, h, head_rows, d_e));
    RFA_TRY(ops::record_linear(*g, R, h, backbone_out, x, head_rows));
    if (m.arch == Architecture::signal) return ops::record_linear(*g, R, x, signal_out, out, head_rows);
    // Tied LM head: logits = x E^T + b, E = token_embedding [V, d_e] is already [out, in].
    return ops::record_linear(*g, R, x, token_embedding, has_lm_bias ? &lm_bias : nullptr, out,
                              {head_rows, d_e, (uint32_t)m.vocab});
  }();
  if (!st.ok()) {
    (void)R.submit_and_wait();  // close the recording; its result is irrelevant now
    return g->note(st);
  }
  RFA_TRY(g->note(R.submit_and_wait()));
  gpu_ms = R.gpu_ms_total();
  out_count = last_only ? 1 : n;
  outputs.resize((size_t)batch * out_count * info.output_dim);
  RFA_TRY(g->download(out, outputs.data(), outputs.size() * 4));
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < n; ++i) host_t[(size_t)b].push_back(ts[(size_t)b * n + i]);
  filled += n;
  last_count = n;
  wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return Status::Ok();
}

// Splits a long causal prefill into consecutive calls when one call's outputs (positions x
// output_dim, e.g. 4096 x 50257 logits) would exceed what one storage buffer may hold. Causal
// attention makes the chunks' results identical to one call's.
Status Session::Impl::run_chunked(const int64_t* ids_in, const float* values, int n, const std::vector<double>& ts_given) {
  static const std::vector<double> kNone;
  const std::vector<double>& ts = model->t_equal ? kNone : ts_given;
  uint64_t limit = std::min<uint64_t>(g->caps().max_storage_buffer_range, 256ull << 20);
  if (max_output_bytes) limit = std::min(limit, max_output_bytes);
  const uint64_t per_pos = (uint64_t)batch * (uint64_t)info.output_dim * 4;
  int chunk = last_only ? n : (int)std::max<uint64_t>(1, limit / std::max<uint64_t>(per_pos, 1));
  if (chunk >= n || !model->layer(0).params.sw.causal) return run(ids_in, values, n, ts);
  if (filled + n > capacity) return run(ids_in, values, n, ts);  // reports the overflow
  // Validate the whole input before the first chunk runs, so that a bad value late in the input
  // leaves the session untouched.
  for (size_t i = 0; ids_in && i < (size_t)batch * n; ++i)
    if (ids_in[i] < 0 || ids_in[i] >= model->vocab)
      return Status(Code::input_error, "token id " + std::to_string(ids_in[i]) + " at index " + std::to_string(i) +
                                           " is outside the vocabulary [0, " + std::to_string(model->vocab) + ")");
  for (size_t i = 0; values && i < (size_t)batch * n * info.input_dim; ++i)
    if (!std::isfinite(values[i])) return Status(Code::input_error, "input value " + std::to_string(i) + " is not finite");
  if (!ts.empty() && ts.size() != (size_t)batch * n)
    return Status(Code::input_error, "timestamps: " + std::to_string(ts.size()) + " values for " +
                                         std::to_string(batch) + " rows x " + std::to_string(n) + " positions");
  for (int b = 0; b < batch && !ts.empty(); ++b) {
    double prev = host_t[(size_t)b].empty() ? -INFINITY : host_t[(size_t)b].back();
    for (int i = 0; i < n; ++i) {
      double t = ts[(size_t)b * n + i];
      if (!std::isfinite(t) || t < prev)
        return Status(Code::input_error, "timestamps: value at row " + std::to_string(b) + ", position " +
                                             std::to_string(filled + i) + " is not finite or decreases");
      prev = t;
    }
  }
  const int d = std::max(info.input_dim, 1);
  std::vector<std::vector<float>> rows((size_t)batch);
  for (int p0 = 0; p0 < n; p0 += chunk) {
    const int c = std::min(chunk, n - p0);
    std::vector<int64_t> ids;
    std::vector<float> vals;
    std::vector<double> t;
    for (int b = 0; b < batch; ++b) {
      if (ids_in) ids.insert(ids.end(), ids_in + (size_t)b * n + p0, ids_in + (size_t)b * n + p0 + c);
      if (values) vals.insert(vals.end(), values + ((size_t)b * n + p0) * d, values + ((size_t)b * n + p0 + c) * d);
      if (!ts.empty()) t.insert(t.end(), ts.begin() + (size_t)b * n + p0, ts.begin() + (size_t)b * n + p0 + c);
    }
    RFA_TRY(run(ids_in ? ids.data() : nullptr, values ? vals.data() : nullptr, c, t));
    for (int b = 0; b < batch; ++b)
      rows[(size_t)b].insert(rows[(size_t)b].end(), outputs.begin() + (size_t)b * c * info.output_dim,
                             outputs.begin() + (size_t)(b + 1) * c * info.output_dim);
  }
  outputs.clear();
  for (auto& r : rows) outputs.insert(outputs.end(), r.begin(), r.end());
  last_count = out_count = n;
  return Status::Ok();
}

Status Session::Impl::check_probe(int layer, int head, int b, int r0, int r1, int c0, int c1) const {
  if (layer < 0 || layer >= (int)layers.size())
    return Status(Code::invalid_argument, "probe: layer " + std::to_string(layer) + " out of range [0, " +
                                              std::to_string(layers.size()) + ")");
  if (head < 0 || head >= model->n_heads)
    return Status(Code::invalid_argument, "probe: head " + std::to_string(head) + " out of range");
  if (b < 0 || b >= batch) return Status(Code::invalid_argument, "probe: batch row " + std::to_string(b) + " out of range");
  if (r0 < 0 || r1 > filled || r0 >= r1 || c0 < 0 || c1 > filled || c0 >= c1)
    return Status(Code::invalid_argument, "probe: rectangle rows [" + std::to_string(r0) + "," + std::to_string(r1) +
                                              ") x cols [" + std::to_string(c0) + "," + std::to_string(c1) +
                                              ") is empty or beyond the " + std::to_string(filled) + " filled positions");
  return Status::Ok();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::create(Context& ctx, std::shared_ptr<const Model> model,
                                                 const SessionOptions& options) {
  if (!model) return Status(Code::invalid_argument, "Session::create: no model");
  if (options.batch < 1) return Status(Code::invalid_argument, "batch must be >= 1");
  if (options.max_context < 1) return Status(Code::invalid_argument, "max_context must be >= 1");
  auto impl = std::make_unique<Impl>();
  impl->ctx = &ctx;
  impl->g = &ctx.impl();
  impl->model = std::move(model);
  impl->info = model_info(*impl->model);
  impl->batch = options.batch;
  impl->capacity = options.max_context;
  impl->last_only = options.last_output_only;
  impl->max_output_bytes = options.max_output_bytes;
  RFA_TRY(impl->init());
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Status Session::prefill_tokens(const std::vector<int64_t>& ids, int n, const std::vector<double>& ts) {
  if (impl_->model->arch != Architecture::lm)
    return Status(Code::input_error, "this model takes values (--signal), not tokens");
  if (n <= 0 || ids.size() != (size_t)impl_->batch * n)
    return Status(Code::input_error, "tokens: " + std::to_string(ids.size()) + " ids for " + std::to_string(impl_->batch) +
                                         " rows x " + std::to_string(n) + " positions");
  return impl_->run_chunked(ids.data(), nullptr, n, ts);
}

Status Session::prefill_values(const std::vector<float>& values, int n, const std::vector<double>& ts) {
  if (impl_->model->arch == Architecture::lm)
    return Status(Code::input_error, "this language model takes tokens (--prompt or --tokens), not values");
  if (n <= 0 || values.size() != (size_t)impl_->batch * n * impl_->info.input_dim)
    return Status(Code::input_error, "values: " + std::to_string(values.size()) + " numbers for " +
                                         std::to_string(impl_->batch) + " rows x " + std::to_string(n) +
                                         " positions x " + std::to_string(impl_->info.input_dim) + " dims");
  return impl_->run_chunked(nullptr, values.data(), n, ts);
}

Status Session::step_tokens(const std::vector<int64_t>& ids, const std::vector<double>& ts) {
  return prefill_tokens(ids, 1, ts);
}
Status Session::step_values(const std::vector<float>& values, const std::vector<double>& ts) {
  return prefill_values(values, 1, ts);
}

void Session::reset() {
  impl_->filled = 0;
  for (auto& t : impl_->host_t) t.clear();
  for (auto& l : impl_->layers) l.cache.filled = 0;
  impl_->outputs.clear();
  impl_->last_count = 0;
}

const std::vector<float>& Session::outputs() const { return impl_->outputs; }
int Session::last_count() const { return impl_->last_count; }
int Session::output_count() const { return impl_->out_count; }
int Session::output_dim() const { return impl_->info.output_dim; }
int Session::position() const { return impl_->filled; }
int Session::batch() const { return impl_->batch; }
int Session::max_context() const { return impl_->capacity; }
const Model& Session::model() const { return *impl_->model; }
double Session::last_gpu_ms() const { return impl_->gpu_ms; }
double Session::last_wall_ms() const { return impl_->wall_ms; }
std::vector<std::pair<std::string, double>> Session::last_kernel_ms() const {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& t : impl_->rec->timings()) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == t.label; });
    if (it == out.end()) out.push_back({t.label, t.ms});
    else it->second += t.ms;
  }
  return out;
}
std::vector<double> Session::timestamps(int b) const {
  return b >= 0 && b < impl_->batch ? impl_->host_t[(size_t)b] : std::vector<double>{};
}

}  // namespace rfa
