// The viewer's "AFA filter" panel (docs/variant-afa-full.md §5, the AFA thesis's diagnostics) for an AFA head of either form: the eigenvalue plot (each channel's -mu_k + i omega_k against
// the live spiral's true -0.1 +- i per unit of its time, scaled to the model's time unit), the
// per-channel kernels as channel x lag maps (e_k, cov_k, P_k over the stream's lags), the mix gates,
// the layer's basis consistency ||W_V W_P - I||, and for a layer with tied iterations the norm of
// each pass's change |z_{k+1} - z_k| over the newest positions and one channel's trajectory per
// iteration. The per-channel attention map is the main map's channel selector. Everything is read
// through the public API (layer_params, channel_curves, basis_consistency, Inspector::iterates).
#pragma once

#include <string>
#include <vector>

#include "layout.hpp"
#include "rfa/session.hpp"

namespace viewer {

class AfaPanel {
 public:
  // `true_scale`: the model time unit in the spiral's time (the live spiral's sampling interval), so
  // the true eigenvalues are (-0.1 +- i) true_scale; 0: no truth to show.
  void draw(const rfa::Model& m, rfa::Session& s, int layer, int head, double true_scale, const PanelRect& where,
            bool force, PanelAudit& audit);
  // The last drawn head as JSON (rfa-viewer --dump-json "afa"): null when no AFA head was drawn.
  std::string json() const { return json_; }

 private:
  std::string json_ = "null";
  int basis_layer_ = -1;
  const rfa::Model* basis_model_ = nullptr;
  double basis_ = 0;
  std::string basis_error_;
};

}  // namespace viewer
