#include "reference/model_ref.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "reference/afa_ref.hpp"
#include "reference/rt_ref.hpp"
#include "reference/ops_ref.hpp"

namespace rfa::ref {

namespace {

Status check_linear(const LinearWeights& w, int in, int out, const std::string& what) {
  if (w.in != in || w.out != out)
    return make_error(Code::model_error, "reference model: " + what + " is " + std::to_string(w.in) + " -> " +
                                             std::to_string(w.out) + ", expected " + std::to_string(in) + " -> " +
                                             std::to_string(out));
  if (w.weight.data.size() != (size_t)in * (size_t)out)
    return make_error(Code::model_error, "reference model: " + what + ".weight holds " +
                                             std::to_string(w.weight.data.size()) + " values, expected " +
                                             std::to_string((size_t)in * (size_t)out));
  if (!w.bias.data.empty() && w.bias.data.size() != (size_t)out)
    return make_error(Code::model_error, "reference model: " + what + ".bias has the wrong length");
  return Status::Ok();
}

Status check_norm(const NormWeights& n, int dim, const std::string& what) {
  if (n.kind == NormKind::none) return Status::Ok();
  if (!n.weight.data.empty() && n.weight.data.size() != (size_t)dim)
    return make_error(Code::model_error, "reference model: " + what + ".weight has the wrong length");
  if (!n.bias.data.empty() && n.bias.data.size() != (size_t)dim)
    return make_error(Code::model_error, "reference model: " + what + ".bias has the wrong length");
  return Status::Ok();
}

Status check_attention_layer(const AttentionLayer& L, int d_e, const std::string& what) {
  const int HD2 = 2 * L.params.heads * L.params.dim;
  RFA_TRY(check_linear(L.wq, d_e, HD2, what + ".W_q"));
  RFA_TRY(check_linear(L.wk, d_e, HD2, what + ".W_k"));
  RFA_TRY(check_linear(L.wv, d_e, HD2, what + ".W_v"));
  RFA_TRY(check_linear(L.wo, HD2, d_e, what + ".W_o"));
  return Status::Ok();
}

// One AFA layer through the AFA twin, its outputs in the RFA twin's form: est, the weights Ahat,
// the decayed weights A and the row statistics. AFA decays each channel by its own e^{-mu_k |l|},
// so A is the contract's mean decayed mass (docs/variant-afa.md §11, what the GPU probe writes):
// A_ij = Ahat_ij (1/D) sum_k e^{-mu_k |t_i - t_j|}, formed here from the lag (full AFA: the channel
// mean of each channel's weight times its decay).
Status afa_attention(const AttentionParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                     const std::vector<cd>& V, const std::vector<double>& t, AttentionOutputs* o,
                     const AttentionOptions& opt) {
  if (opt.key_valid) return make_error(Code::unsupported, "reference AFA layer: key masks are not supported");
  AfaOptions ao;
  ao.want_matrices = opt.want_matrices;
  ao.window = opt.window;
  AfaOutputs r;
  RFA_TRY(afa_forward(afa_twin_params(p), B, N, Q, K, V, t, &r, ao));
  *o = AttentionOutputs{};
  o->B = B;
  o->N = N;
  o->H = p.heads;
  o->D = p.dim;
  o->est = std::move(r.est);
  o->Ahat = r.attn;
  o->A = std::move(r.attn);
  if (opt.want_matrices) {
    // A_ij = (1/D) sum_k w_k,ij e^{-mu_k |l_ij|}: w_k the softmax weight of every channel
    // (memory-optimised) or channel k's own weight Q_k,ij (full; docs/variant-afa-full.md §5).
    const AfaParams twin = afa_twin_params(p);
    const int H = p.heads, D = p.dim;
    const bool full = !r.channel_attn.empty();
    auto time = [&](int b, int i) { return t.empty() ? (double)i : t[(size_t)b * N + i]; };
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int i = 0; i < N; ++i)
          for (int j = 0; j < N; ++j) {
            const size_t cell = (((size_t)b * H + h) * N + i) * N + j;
            double a = 0;
            for (int k = 0; k < D; ++k)
              a += (full ? r.channel_attn[((((size_t)b * H + h) * D + k) * N + i) * N + j] : o->Ahat[cell]) *
                   std::exp(-afa_mu(twin, h, k) * std::fabs(time(b, i) - time(b, j)));
            o->A[cell] = a / D;
          }
  }
  o->row_max = r.row_max;
  o->row_lse = r.row_lse;
  o->row_sum.resize(r.row_lse.size());
  for (size_t k = 0; k < r.row_lse.size(); ++k) o->row_sum[k] = std::exp(r.row_lse[k] - r.row_max[k]);
  o->energy_lse.assign(r.row_lse.size(), -std::numeric_limits<double>::infinity());
  return Status::Ok();
}

// One RT layer through the RT twin (docs/variant-rt.md): T as the aggregate, the weights as both
// Ahat and A (no decay on RT's weights), the row statistics.
Status rt_attention_layer(const AttentionParams& p, int B, int N, const std::vector<cd>& Q, const std::vector<cd>& K,
                          const std::vector<cd>& V, const std::vector<double>& t, AttentionOutputs* o,
                          const AttentionOptions& opt) {
  RtOptions ro;
  ro.want_matrices = opt.want_matrices;
  ro.key_valid = opt.key_valid;
  ro.window = opt.window;
  RtOutputs r;
  RFA_TRY(rt_attention(rt_twin_params(p), B, N, Q, K, V, t, &r, ro));
  *o = AttentionOutputs{};
  o->B = B;
  o->N = N;
  o->H = p.heads;
  o->D = p.dim;
  o->est = std::move(r.T);
  o->Ahat = r.A;
  o->A = std::move(r.A);
  o->row_max = std::move(r.row_max);
  o->row_sum = std::move(r.row_sum);
  o->row_lse = std::move(r.row_lse);
  o->energy_lse.assign(o->row_lse.size(), -std::numeric_limits<double>::infinity());
  return Status::Ok();
}

}  // namespace

Result<std::vector<double>> attention_layer(const AttentionLayer& layer, int B, int N, const std::vector<double>& x,
                                            const std::vector<double>& t, AttentionOutputs* out,
                                            const AttentionOptions& opt) {
  const int d_e = layer.wq.in;
  RFA_TRY(check_attention_layer(layer, d_e, "attention layer"));
  if (x.size() != (size_t)B * N * d_e)
    return make_error(Code::invalid_argument, "reference attention_layer: x must hold B*N*d_e values");
  const int H = layer.params.heads, D = layer.params.dim;
  const int rows = B * N;
  // Self-attention: Z_q = Z_k = Z_v = x.
  const std::vector<cd> Q = split_complex(linear(layer.wq, x, rows), rows, H, D);
  const std::vector<cd> K = split_complex(linear(layer.wk, x, rows), rows, H, D);
  const std::vector<cd> V = split_complex(linear(layer.wv, x, rows), rows, H, D);
  AttentionOutputs local;
  AttentionOutputs* o = out ? out : &local;
  if (layer.params.variant == AttentionVariant::afa || layer.params.variant == AttentionVariant::afa_full) RFA_TRY(afa_attention(layer.params, B, N, Q, K, V, t, o, opt));
  else if (layer.params.variant == AttentionVariant::rt) RFA_TRY(rt_attention_layer(layer.params, B, N, Q, K, V, t, o, opt));
  else RFA_TRY(attention(layer.params, B, N, Q, K, V, t, o, opt));
  return linear(layer.wo, pack_complex(o->est, rows, H, D), rows);
}

Result<std::vector<double>> forward(const Model& m, int B, int N, const double* inputs, const int64_t* ids,
                                    const double* timestamps, ModelProbe* probe, int window) {
  if (B < 1 || N < 1) return make_error(Code::invalid_argument, "reference forward: B and N must be >= 1");
  if (window < -1)
    return make_error(Code::invalid_argument, "reference forward: window must be >= -1 (0: the model's own, -1: none)");
  if (window == 0) window = m.attention_window;  // the window the model was trained with (0: none)
  if (window < 0) window = 0;                    // none, even for a model trained with one
  const int rows = B * N;
  const int d_e = m.d_e;

  // Timestamps: given (finite, non-decreasing per sequence) or 0..N-1. A t_equal model ignores
  // them, as the reference ignores t_measure when args.t_equal is set.
  if (m.t_equal) timestamps = nullptr;
  std::vector<double> t((size_t)rows);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < N; ++i) {
      const size_t k = (size_t)b * N + i;
      t[k] = timestamps ? timestamps[k] : (double)i;
      if (!std::isfinite(t[k]))
        return make_error(Code::input_error, "reference forward: timestamp [" + std::to_string(b) + "][" +
                                                 std::to_string(i) + "] is not finite");
      if (i > 0 && t[k] < t[k - 1])
        return make_error(Code::input_error, "reference forward: timestamps of sequence " + std::to_string(b) +
                                                 " decrease at position " + std::to_string(i));
    }

  // Which (layer, head) pairs to capture.
  const int n_layers = m.num_layers();
  if (probe) {
    probe->captures.clear();
    probe->hidden.clear();
    probe->layer_outputs.clear();
    for (const auto& [l, h] : probe->requests) {
      if (l < 0 || l >= n_layers || h < 0 || h >= m.layer(l).params.heads)
        return make_error(Code::invalid_argument, "reference forward: probe request (layer " + std::to_string(l) +
                                                      ", head " + std::to_string(h) + ") is out of range");
      ModelProbe::Capture c;
      c.layer = l;
      c.head = h;
      probe->captures.push_back(std::move(c));
    }
  }

  std::vector<int32_t> tokens;  // learned accumulated steps look the token ids up
  if (ids) tokens.assign(ids, ids + rows);
  auto run_layer = [&](int l, const AttentionLayer& layer, const std::vector<double>& h) -> Result<std::vector<double>> {
    bool want = false;
    if (probe)
      for (const auto& c : probe->captures) want |= c.layer == l;
    AttentionOptions opt;
    opt.want_matrices = want;
    opt.window = window;
    opt.tokens = ids ? &tokens : nullptr;
    AttentionOutputs o;
    Result<std::vector<double>> r = attention_layer(layer, B, N, h, t, &o, opt);
    if (!r.ok()) return r;
    if (probe) {
      const int H = layer.params.heads;
      for (auto& c : probe->captures) {
        if (c.layer != l) continue;
        c.Ahat.assign((size_t)B * N * N, 0.0);
        c.A.assign((size_t)B * N * N, 0.0);
        c.row_lse.assign((size_t)rows, 0.0);
        c.energy_lse.assign((size_t)rows, 0.0);
        if (!o.gate.empty()) c.gate.assign((size_t)rows, 0.0);
        for (int b = 0; b < B; ++b) {
          const size_t src = ((size_t)b * H + c.head) * N;
          for (size_t k = 0; k < (size_t)N * N; ++k) {
            c.Ahat[(size_t)b * N * N + k] = o.Ahat[src * N + k];
            c.A[(size_t)b * N * N + k] = o.A[src * N + k];
          }
          for (int i = 0; i < N; ++i) {
            c.row_lse[(size_t)b * N + i] = o.row_lse[src + i];
            c.energy_lse[(size_t)b * N + i] = o.energy_lse[src + i];
            if (!o.gate.empty()) c.gate[(size_t)b * N + i] = o.gate[src + i];
          }
        }
      }
      if (probe->keep_hidden) probe->layer_outputs.push_back(r.value());
    }
    return r;
  };

  if (m.arch == Architecture::attention) {
    if (!inputs) return make_error(Code::invalid_argument, "reference forward: the attention architecture needs inputs");
    std::vector<double> x(inputs, inputs + (size_t)rows * d_e);
    RFA_TRY(check_attention_layer(m.single, d_e, "attention"));
    return run_layer(0, m.single, x);
  }

  // Input of the backbone.
  std::vector<double> x;
  if (m.arch == Architecture::lm) {
    if (!ids) return make_error(Code::invalid_argument, "reference forward: the lm architecture needs token ids");
    if (m.token_embedding.data.size() != (size_t)m.vocab * d_e)
      return make_error(Code::model_error, "reference forward: token_embedding is not [vocab, d_e]");
    x.resize((size_t)rows * d_e);
    for (int k = 0; k < rows; ++k) {
      const int64_t id = ids[k];
      if (id < 0 || id >= m.vocab)
        return make_error(Code::input_error, "reference forward: token id " + std::to_string(id) + " at position " +
                                                 std::to_string(k) + " is outside [0, " + std::to_string(m.vocab) + ")");
      for (int c = 0; c < d_e; ++c) x[(size_t)k * d_e + c] = (double)m.token_embedding.data[(size_t)id * d_e + c];
    }
  } else {  // signal
    if (!inputs) return make_error(Code::invalid_argument, "reference forward: the signal architecture needs inputs");
    RFA_TRY(check_linear(m.signal_in, m.d_in, d_e, "input_proj"));
    RFA_TRY(check_linear(m.signal_out, d_e, m.d_in, "output_head"));
    x = linear(m.signal_in, std::vector<double>(inputs, inputs + (size_t)rows * m.d_in), rows);
  }

  // The RFATransformerNetwork backbone.
  RFA_TRY(check_linear(m.backbone_in, d_e, d_e, "backbone.input_proj"));
  RFA_TRY(check_linear(m.backbone_out, d_e, d_e, "backbone.output_proj"));
  RFA_TRY(check_norm(m.final_norm, d_e, "backbone.final_norm"));
  x = linear(m.backbone_in, x, rows);
  if (probe && probe->keep_hidden) probe->hidden.push_back(x);
  for (int l = 0; l < n_layers; ++l) {
    const Block& blk = m.blocks[(size_t)l];
    const std::string name = "backbone.blocks." + std::to_string(l);
    RFA_TRY(check_attention_layer(blk.attn, d_e, name + ".attn"));
    RFA_TRY(check_norm(blk.norm1, d_e, name + ".norm1"));
    RFA_TRY(check_norm(blk.norm2, d_e, name + ".norm2"));
    RFA_TRY(check_linear(blk.ffn1, d_e, blk.ffn1.out, name + ".ffn.0"));
    RFA_TRY(check_linear(blk.ffn2, blk.ffn1.out, d_e, name + ".ffn.2"));
    const std::vector<double> h = apply_norm(blk.norm1, x, rows, d_e);
    Result<std::vector<double>> a = run_layer(l, blk.attn, h);
    if (!a.ok()) return a.status();
    if (blk.outer_residual) x = add(x, a.value());  // else: the attention output is discarded
    const std::vector<double> h2 = apply_norm(blk.norm2, x, rows, d_e);
    x = add(x, linear(blk.ffn2, relu(linear(blk.ffn1, h2, rows)), rows));
    if (probe && probe->keep_hidden) probe->hidden.push_back(x);
  }
  x = apply_norm(m.final_norm, x, rows, d_e);
  x = linear(m.backbone_out, x, rows);

  if (m.arch == Architecture::signal) return linear(m.signal_out, x, rows);

  // lm head, tied to the embedding: logits = x E^T + bias.
  const int V = m.vocab;
  if (!m.lm_head_bias.data.empty() && m.lm_head_bias.data.size() != (size_t)V)
    return make_error(Code::model_error, "reference forward: lm_head.bias is not [vocab]");
  std::vector<double> logits((size_t)rows * V);
  for (int k = 0; k < rows; ++k) {
    const double* xr = x.data() + (size_t)k * d_e;
    for (int v = 0; v < V; ++v) {
      const float* er = m.token_embedding.data.data() + (size_t)v * d_e;
      double acc = m.lm_head_bias.data.empty() ? 0.0 : (double)m.lm_head_bias.data[(size_t)v];
      for (int c = 0; c < d_e; ++c) acc += (double)er[c] * xr[c];
      logits[(size_t)k * V + v] = acc;
    }
  }
  return logits;
}

}  // namespace rfa::ref
