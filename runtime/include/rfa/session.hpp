// Models and sessions: load an RFA model folder, run it on the GPU and stream it step by step
// through a KV cache. What each head did is read through rfa::Inspector (rfa/inspect.hpp).
#pragma once

#include "rfa/export.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rfa/context.hpp"
#include "rfa/diagnostics.hpp"
#include "rfa/heatmap.hpp"
#include "rfa/params.hpp"
#include "rfa/sampler.hpp"
#include "rfa/status.hpp"

namespace rfa {

struct Model;  // a loaded, validated model (host memory); see model_info()

// Loads and validates `dir` (config.json + model.safetensors [+ tokenizer files]).
RFA_API Result<std::shared_ptr<const Model>> load_model_dir(const std::string& dir);

// The files of a model folder already in memory (an app's bundled assets, a download): the same
// checks as load_model_dir, the same messages, naming `name` where a folder would be named.
// encoder_json and vocab_bpe: GPT-2 BPE language models only (load_tokenizer reads them from the
// model); empty otherwise. The bytes are copied: the caller's buffers may go once this returns.
struct ModelFiles {
  std::string name = "memory";  // ModelInfo::name
  std::string_view config_json;
  const void* safetensors = nullptr;
  size_t safetensors_bytes = 0;
  std::string_view encoder_json, vocab_bpe;
};
RFA_API Result<std::shared_ptr<const Model>> load_model_memory(const ModelFiles& files);

struct ModelInfo {
  std::string name, architecture, tokenizer;
  int layers = 0, heads = 0, head_dim = 0, d_e = 0, d_in = 0, vocab = 0, hidden = 0;
  int input_dim = 0;   // values per position for signal/attention inputs (d_in or d_e); 0 for lm
  int output_dim = 0;  // vocab (lm), d_in (signal), d_e (attention)
  // The reference's t_equal: positions are the timestamps and timestamps passed in are ignored.
  bool t_equal = false;
  // args.attention_window: the sliding window the model was trained with (0: none); a session whose
  // SessionOptions::window is 0 runs with it.
  int attention_window = 0;
  std::string source_dir;  // the folder it was loaded from
};
RFA_API ModelInfo model_info(const Model& m);

// Physical parameters and regime of one head (docs/math.md §5).
struct HeadSummary {
  int layer = 0, head = 0;
  HeadParams params;  // AFA and RT-RFA heads: the RFA-shaped summary of their parameters (params.hpp)
  RegimeInfo regime;
  double omega_min = 0, omega_max = 0;  // band of |omega| over the head's complex dims
  AttentionVariant variant = AttentionVariant::rfa;
  // What the variant's own parameters say, in one short line: AFA, its channels' decay range, how
  // many are diffusive / integrative / Brownian ("d/i/B 2/5/1"), alpha; RT-RFA, beta_s, the floor
  // tau_th2 and the lag penalty's slope 2 mu beta_s; RFA with accumulated phases, the step source;
  // else empty.
  std::string terms;
};
RFA_API std::vector<HeadSummary> head_summaries(const Model& m);
RFA_API const AttentionParams& layer_params(const Model& m, int layer);
RFA_API std::string model_summary(const Model& m);  // printable per-layer, per-head table

enum class KvPrecision { f32 = 0, f16 = 1 };

struct SessionOptions {
  int batch = 1;
  int max_context = 4096;  // positions per batch row; caches are reserved up front
  // Compute the head (final norm, output projection, LM head) only for the last position of each
  // call: what generation needs. outputs() is then [B][1][output_dim].
  bool last_output_only = false;
  // Largest output one GPU call may produce, in bytes (0: the device's storage-buffer limit, at
  // most 256 MiB). A longer causal prefill is split into consecutive calls with the same result.
  uint64_t max_output_bytes = 0;
  // Sliding-window KV cache. 0: off; a stream may fill max_context positions and passing it is an
  // input error. W > 0 (causal models): every query sees its last W keys (a banded causal mask),
  // the caches are rings of W + chunk - 1 slots (chunk = min(W, 256) positions per submission;
  // longer prefills are split, with identical results) and a stream runs for as long as it goes,
  // in constant memory; max_context is then ignored. window_report() bounds what the window drops.
  // A model trained with a window (args.attention_window, ModelInfo::attention_window) runs with
  // that window when this is 0; W > 0 overrides it, and -1 runs without any window.
  int window = 0;
  // GPU timing: false times each submission as a whole (last_gpu_ms()); true also times every
  // kernel (last_kernel_ms()), at two timestamp writes per dispatch.
  bool profile = false;
  // Precision of the K and V caches. f16 halves their memory and the bandwidth a long-context step
  // reads (docs/math.md §9 gives the error it costs); queries, statistics and every sum stay fp32.
  KvPrecision kv = KvPrecision::f32;
};

// What a session has cost since it was created (rfa-bench stream reports these per step).
struct SessionStats {
  uint64_t submits = 0;     // queue submissions by the session (steps, probes, uploads it made)
  uint64_t bytes_up = 0;    // bytes the host wrote for the GPU (step inputs)
  uint64_t bytes_down = 0;  // bytes the host read back (outputs, probes)
  uint64_t plans_recorded = 0;  // step command buffers recorded (each replayed afterwards)
};

// How much attention a sliding window cuts off, per (layer, head), for the newest position of
// batch row b. Exact numbers need the evicted keys, so these are the bounds the decay and the
// precision give (docs: the math page, "sliding window").
struct WindowTruncation {
  int layer = 0, head = 0;
  double edge_lag = 0;       // t_i - t_j of the newest evicted key j = i - W (0 while none evicted)
  double decay_bound = 0;    // E(edge_lag + shift): no evicted key has a larger decay, so its
                             // decayed weight A_ij = Ahat_ij E_ij is at most this times Ahat_ij
                             // (AFA: the channel-mean decay of its A; RT-RFA: 1, its A is Ahat)
  double precision_ratio = 0;  // P(edge) / P(0): how much less an evicted key can be trusted
                               // (AFA: 1 / (nu v^C); RT-RFA: P between keys of unit magnitude)
  double edge_mass = 0;      // measured: the decayed mass sum_j A_ij of the oldest eighth of the
                             // window (the keys next in line to go; by lag, so keys sharing a
                             // timestamp count together); near 0 means a benign cut
};

struct RowDiagnostics {
  double entropy = 0, log_partition = 0, max_weight = 0, expected_lag = 0;
  double mass_beyond[4] = {0, 0, 0, 0};
};

// Everything about one (query i, key j) pair of a head: the hover readout of the viewer.
struct PairReadout {
  bool masked = false;           // hidden by the causal mask (then only lag/dt/decay are set)
  double lag = 0, dt = 0;        // t_i - t_j (|.| when non-causal), and lag + lag shift
  double decay = 0;              // E
  double vcov = 0;               // covariance of the transported key
  double bias = 0;               // additive bias B
  double precision = 0;          // P in the robust / Gaussian term
  double q_norm2 = 0, k_norm2 = 0, cross = 0;  // |Q~_i|^2, |K~_j|^2, Re sum conj(Q~) K~
  double residual2 = 0;          // R2 (full or cross-only)
  double L = 0, logit = 0;       // B - kappa log(1 + P R2) (or B - P R2), and tau L
  double ahat = 0, a = 0;        // the attention weight and the decayed weight A = Ahat E
};

struct KernelCurves {
  std::vector<double> lags;
  std::vector<double> decay, vcov, precision, bias;  // [lags], for one head
  // What the four curves are for the head's mechanism (head_curves fills them): short labels of
  // decay, vcov, precision, bias, and one line saying what they are.
  std::vector<std::string> names;
  std::string what;
};
// The same curves computed on the host in double from the model's parameters (no GPU, no session):
// what a panel can redraw every frame without waiting on the device. AFA layers
// (docs/variant-afa.md §11): decay = the channel-mean e^{-mu_k lag}, vcov = the score covariance v^C(lag), precision =
// 1 / (nu v^C), bias = -alpha^2 log(nu v^C + eps), the logit of a key that matches the query.
// RT-RFA layers (docs/variant-rt.md §10): decay = the magnitude decay e^{-mu lag}, vcov = S(lag),
// precision = P(lag) between tokens of unit magnitude, bias = beta_s log P (that pair's logit at
// zero angular distance).
RFA_API Result<KernelCurves> head_curves(const Model& m, int layer, int head, const std::vector<double>& lags);
// ||W_V W_P - I||_F of an attention layer (the AFA thesis's basis consistency,
// docs/variant-afa-full.md §5): W_V the complex value map [H D x d] (W_v's half-split rows, Re then Im), W_P the complex output
// map with Re(W_P z) = W_o [Re z; Im z] (W_P = W_o's first H D columns - i its last); 0 when a value
// taken into the eigenbasis and straight back out is unchanged. Its bias terms are left out.
RFA_API Result<double> basis_consistency(const Model& m, int layer);
// An AFA head's per-channel kernels at the given lags (docs/variant-afa.md §11, the thesis's
// channel x lag maps): e_k(lag) = e^{-mu_k |lag|}, cov_k(lag) (sigma2 phi + eta2 e^2 + gamma2; the
// full form adds eps) and P_k = 1 / cov_k, each [channels][lags]. Other mechanisms: Code::unsupported.
struct ChannelCurves {
  std::vector<double> lags;
  int channels = 0;
  std::vector<double> decay, cov, precision;  // [channels][lags]
};
RFA_API Result<ChannelCurves> channel_curves(const Model& m, int layer, int head, const std::vector<double>& lags);

// One query row watched through asynchronous frames (Session::watch_row).
struct WatchedRow {
  bool valid = false;
  int layer = 0, head = 0, b = 0, row = 0, first_key = 0;
  bool decayed = false;
  std::vector<float> weights;  // Ahat or A over keys [first_key, row]
  RowDiagnostics diagnostics;  // of the layer's own weights (every mechanism), as row_diagnostics()
};

// Generation (language models): Session::generate.
struct GenerateOptions {
  int tokens = 1;              // tokens to sample; all but the last are fed back
  SamplerOptions sampler;      // greedy when temperature <= 0; seeded draws, one per row per token
  bool on_gpu = true;          // sample on the GPU: only token ids come back per step, and each
                               // step is fed the previous step's ids on the device, two steps in
                               // flight. false: the host sampler on read-back logits (the twin).
  bool keep_outputs = false;   // also bring back every fed position's logits (dumps)
  // Called once per sampled token, in order, with the token of each batch row.
  std::function<void(int index, const std::vector<int64_t>& row_tokens)> on_token;
};
struct Generation {
  std::vector<int64_t> tokens;  // [B][tokens] row-major
  std::vector<float> outputs;   // keep_outputs: [B][tokens - 1][vocab], the logits after each fed token
  double wall_ms = 0, gpu_ms = 0;
};

class RFA_API Session {
 public:
  static Result<std::unique_ptr<Session>> create(Context& ctx, std::shared_ptr<const Model> model,
                                                 const SessionOptions& options = {});
  ~Session();

  // Feeds n positions of every batch row. Token models take ids [B*n] (row-major [B][n]); signal
  // and attention models take values [B*n*input_dim]. timestamps: [B*n] or empty (then t = the
  // position index). Timestamps must not decrease within a row (an input_error otherwise).
  // Models with the reference's t_equal = true ignore timestamps: positions are their times.
  Status prefill_tokens(const std::vector<int64_t>& ids, int n, const std::vector<double>& timestamps = {});
  Status prefill_values(const std::vector<float>& values, int n, const std::vector<double>& timestamps = {});
  // One position per batch row (ids [B] or values [B*input_dim]); costs O(context) per head.
  Status step_tokens(const std::vector<int64_t>& ids, const std::vector<double>& timestamps = {});
  Status step_values(const std::vector<float>& values, const std::vector<double>& timestamps = {});
  void reset();

  // Samples `options.tokens` tokens per batch row after what was fed so far (the first from the
  // last call's logits, which must be there), feeding each but the last. The same tokens as
  // Sampler::next on each row's logits in row order, step by step (rfa/sampler.hpp says where
  // the GPU may differ: only within rounding of a boundary). Needs a language model.
  Result<Generation> generate(const GenerateOptions& options);

  // Outputs of the last prefill/step: [B][output_count][output_dim], where output_count is
  // last_count(), or 1 with SessionOptions::last_output_only.
  const std::vector<float>& outputs() const;
  int last_count() const;
  int output_count() const;
  int output_dim() const;
  int position() const;  // positions filled per batch row
  int batch() const;
  // Positions the caches hold per batch row: SessionOptions::max_context as asked, or, with a
  // window, the ring's W + min(W, 256) - 1 slots (a window ignores max_context: a stream goes on
  // without end, and probes reach back this far).
  int max_context() const;
  int window() const;  // the window the session runs with (0: none), after the model's own applied
  // The oldest position still in the caches (0 without a window): probes reach [oldest, position).
  int oldest_position() const;
  const Model& model() const;
  SessionStats stats() const;
  // Inspection (probes, diagnostics, heatmaps, watched rows) lives in rfa::Inspector
  // (rfa/inspect.hpp), frame scheduling in rfa::FrameScheduler (rfa/frames.hpp).
  static constexpr int kCached = -1;

  double last_gpu_ms() const;   // GPU time of the last prefill/step (timestamps), 0 if unknown
  // GPU milliseconds of the last prefill/step per kernel label ("linear", "rfa_attention", ...),
  // summed over its dispatches; empty when the device has no timestamps.
  std::vector<std::pair<std::string, double>> last_kernel_ms() const;
  double last_wall_ms() const;

  // Kept for one release: the inspection and frame calls of 0.1, now forwards to rfa::Inspector
  // and rfa::FrameScheduler (same arguments, same results). They go in 0.2.
  RFA_DEPRECATED("use rfa::Inspector(session).attention (rfa/inspect.hpp)")
  Result<std::vector<float>> attention(int layer, int head, int b, int r0, int r1, int c0, int c1, bool decayed);
  RFA_DEPRECATED("use rfa::Inspector(session).row_diagnostics (rfa/inspect.hpp)")
  Result<std::vector<RowDiagnostics>> row_diagnostics(int layer, int head, int b, int r0, int r1,
                                                      const double thresholds[4]);
  RFA_DEPRECATED("use rfa::Inspector(session).first_full_row (rfa/inspect.hpp)")
  int first_full_row() const;
  RFA_DEPRECATED("use rfa::Inspector(session).curves (rfa/inspect.hpp)")
  Result<KernelCurves> curves(int layer, int head, const std::vector<double>& lags);
  RFA_DEPRECATED("use rfa::Inspector(session).pair (rfa/inspect.hpp)")
  Result<PairReadout> pair(int layer, int head, int b, int i, int j);
  RFA_DEPRECATED("use rfa::Inspector(session).timestamps (rfa/inspect.hpp)")
  std::vector<double> timestamps(int b) const;
  RFA_DEPRECATED("use rfa::Inspector(session).head_diagnostics (rfa/inspect.hpp)")
  Result<HeadDiagnostics> head_diagnostics(const DiagnosticsRequest& request);
  RFA_DEPRECATED("use rfa::Inspector(session).window_report (rfa/inspect.hpp)")
  Result<std::vector<WindowTruncation>> window_report(int b = 0, bool measure = true);
  RFA_DEPRECATED("use rfa::Inspector(session).render_attention (rfa/inspect.hpp)")
  Status render_attention(Heatmap& map, const HeatmapRequest& req);
  RFA_DEPRECATED("use rfa::Inspector(session).watch_row (rfa/inspect.hpp)")
  Status watch_row(int layer, int head, int b, int row, bool decayed, const double thresholds[4]);
  RFA_DEPRECATED("use rfa::Inspector(session).watched_row (rfa/inspect.hpp)")
  const WatchedRow& watched_row() const;
  RFA_DEPRECATED("use rfa::FrameScheduler(session).begin_frame (rfa/frames.hpp)")
  Status begin_frame();
  RFA_DEPRECATED("use rfa::FrameScheduler(session).end_frame (rfa/frames.hpp)")
  Status end_frame();
  RFA_DEPRECATED("use rfa::FrameScheduler(session).frame_done (rfa/frames.hpp)")
  bool frame_done();
  RFA_DEPRECATED("use rfa::FrameScheduler(session).wait_frame (rfa/frames.hpp)")
  Status wait_frame();

 private:
  friend class Inspector;
  friend class FrameScheduler;
  struct Impl;
  RFA_HIDDEN explicit Session(std::unique_ptr<Impl> impl);  // the library's own: not exported
  std::unique_ptr<Impl> impl_;
};

}  // namespace rfa
