// The 0.1 inspection and frame calls on Session, kept for one release as forwards to
// rfa::Inspector and rfa::FrameScheduler (rfa/session.hpp marks them deprecated). Nothing in the
// runtime, its programs or its tests calls them; tests/test_session.cpp checks that they still
// give the same results.
#include "rfa/frames.hpp"
#include "rfa/inspect.hpp"

namespace rfa {

Result<std::vector<float>> Session::attention(int layer, int head, int b, int r0, int r1, int c0, int c1, bool decayed) {
  return Inspector(*this).attention(layer, head, b, r0, r1, c0, c1, decayed);
}
Result<std::vector<RowDiagnostics>> Session::row_diagnostics(int layer, int head, int b, int r0, int r1,
                                                             const double thresholds[4]) {
  return Inspector(*this).row_diagnostics(layer, head, b, r0, r1, thresholds);
}
int Session::first_full_row() const { return Inspector(const_cast<Session&>(*this)).first_full_row(); }
Result<KernelCurves> Session::curves(int layer, int head, const std::vector<double>& lags) {
  return Inspector(*this).curves(layer, head, lags);
}
Result<PairReadout> Session::pair(int layer, int head, int b, int i, int j) { return Inspector(*this).pair(layer, head, b, i, j); }
std::vector<double> Session::timestamps(int b) const { return Inspector(const_cast<Session&>(*this)).timestamps(b); }
Result<HeadDiagnostics> Session::head_diagnostics(const DiagnosticsRequest& request) {
  return Inspector(*this).head_diagnostics(request);
}
Result<std::vector<WindowTruncation>> Session::window_report(int b, bool measure) {
  return Inspector(*this).window_report(b, measure);
}
Status Session::render_attention(Heatmap& map, const HeatmapRequest& req) { return Inspector(*this).render_attention(map, req); }
Status Session::watch_row(int layer, int head, int b, int row, bool decayed, const double thresholds[4]) {
  return Inspector(*this).watch_row(layer, head, b, row, decayed, thresholds);
}
const WatchedRow& Session::watched_row() const { return Inspector(const_cast<Session&>(*this)).watched_row(); }
Status Session::begin_frame() { return FrameScheduler(*this).begin_frame(); }
Status Session::end_frame() { return FrameScheduler(*this).end_frame(); }
bool Session::frame_done() { return FrameScheduler(*this).frame_done(); }
Status Session::wait_frame() { return FrameScheduler(*this).wait_frame(); }

}  // namespace rfa
