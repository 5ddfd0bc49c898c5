// Inspection of a running session: what each head did, read back from the session's own caches
// (rotated Q/K, norms, row statistics) on the GPU; nothing is kept per pair. The viewer, rfa-run's
// dumps and the C/Python probes go through it; inference itself (rfa/session.hpp) never needs it.
//
//   rfa::Inspector inspect(*session);            // borrows the session: cheap, copyable
//   auto row = inspect.attention(0, 0, 0, n - 1, n, 0, n, /*decayed=*/false);
//
// Rows and columns are absolute positions within [oldest_position(), position()) of the session;
// with a window, keys outside a row's band are masked. Probes run at once on the context's queue
// (one submission each), except render_attention() and watch_row() inside a frame
// (rfa/frames.hpp), which are recorded into the frame's submission.
#pragma once

#include "rfa/export.h"

#include <vector>

#include "rfa/diagnostics.hpp"
#include "rfa/heatmap.hpp"
#include "rfa/params.hpp"
#include "rfa/session.hpp"
#include "rfa/status.hpp"

namespace rfa {

class RFA_API Inspector {
 public:
  // The session must outlive the inspector.
  explicit Inspector(Session& session) : session_(&session) {}

  // kCached (-1) for r0 / c0 means the oldest position still cached, for r1 / c1 position(): so
  // attention(l, h, b, kCached, kCached, kCached, kCached, false) is everything still cached.
  // Ahat (decayed = false) or A = Ahat * E (decayed = true), [rows][cols], masked entries 0.
  static constexpr int kCached = Session::kCached;
  Result<std::vector<float>> attention(int layer, int head, int b, int r0, int r1, int c0, int c1, bool decayed);
  // The same in one of an AFA layer's views (rfa/params.hpp): `channel` c >= 0 (full AFA: Q_c and
  // Q_c e_c, each row of Q_c sums to 1), kAllChannels (the call above) or kReweighting (full AFA: the
  // reweighting map W, A = W; memory-optimised: the softmax). docs/variant-afa-full.md §5.
  Result<std::vector<float>> attention(int layer, int head, int b, int r0, int r1, int c0, int c1, bool decayed,
                                       int channel);
  // Per row (docs/math.md §7), from the layer's own weights: RFA's Ahat and A = Ahat E; AFA's
  // softmax weight and its channel-mean decayed mass; RT-RFA's weight (A = Ahat).
  // Per query row, over all of its keys, which must still be cached: r0 = kCached starts at
  // first_full_row(), r1 = kCached ends at position().
  Result<std::vector<RowDiagnostics>> row_diagnostics(int layer, int head, int b, int r0, int r1,
                                                      const double thresholds[4]);
  // The same over an AFA layer's channel c (or kAllChannels; kReweighting is refused: W is not normalised).
  Result<std::vector<RowDiagnostics>> row_diagnostics(int layer, int head, int b, int r0, int r1,
                                                      const double thresholds[4], int channel);
  // AFA layers with n > 1 tied iterations (docs/variant-afa-full.md §3): the iterates z_1 .. z_{n+1}
  // of positions [r0, r1) of (layer, head, b), read from the passes' caches and rotated back into the
  // eigenbasis in double: [n + 1][rows][2D] floats (Re, Im of each channel). z_1 is the value V, z_{n+1}
  // the layer's estimate before the prediction. Other layers: Code::unsupported.
  Result<std::vector<float>> iterates(int layer, int head, int b, int r0, int r1);
  // The oldest row whose keys are all still cached: oldest_position() without a window or while
  // nothing was evicted, else oldest_position() + window() - 1.
  int first_full_row() const;
  // The head's kernel at the given lags (decay E, value covariance, precision P, bias B), on the GPU.
  Result<KernelCurves> curves(int layer, int head, const std::vector<double>& lags);
  // One pair's terms, from the cached rotated Q/K and the row statistics (a few bytes read back).
  Result<PairReadout> pair(int layer, int head, int b, int i, int j);
  std::vector<double> timestamps(int b) const;  // of positions [oldest_position(), position())
  // Laplace-Radon and routing diagnostics of one head over a window (rfa/diagnostics.hpp): per-pair
  // work on the GPU from the caches, the dense linear algebra on the host in double.
  Result<HeadDiagnostics> head_diagnostics(const DiagnosticsRequest& request);
  // Per (layer, head), for the newest position of batch row b (needs a window and a position).
  // measure = false skips edge_mass (the GPU probes, one submission per head): host work only.
  Result<std::vector<WindowTruncation>> window_report(int b = 0, bool measure = true);

  // Draws req's view of (layer, head, b) into `map` on the GPU: the computed part of the view is
  // probed (Ahat and A), colour-mapped and copied into map's image, which ends in
  // SHADER_READ_ONLY_OPTIMAL; the submission has completed on return, on the context's queue,
  // unless a frame is open (then it joins the frame's submission). map must come from this
  // session's context. Cost: O(visible cells * D).
  Status render_attention(Heatmap& map, const HeatmapRequest& req);
  // Inside a frame: the weights and diagnostics of query row `row` (after the frame's step),
  // computed in the frame's submission; watched_row() holds them once the frame is done.
  Status watch_row(int layer, int head, int b, int row, bool decayed, const double thresholds[4]);
  const WatchedRow& watched_row() const;

  Session& session() const { return *session_; }

 private:
  Session* session_;
};

}  // namespace rfa
