// Internal: how Inspector::render_attention drives a Heatmap (probe, colour map, copy to the image).
#pragma once

#include <functional>

#include "gpu/memory.hpp"
#include "gpu/recorder.hpp"
#include "rfa/heatmap.hpp"

namespace rfa::probe {

// Records the probe of rectangle [pr0, pr1) x [pc0, pc1) into ahat and a ([rows, cols] floats).
using RecordProbe = std::function<Status(gpu::Recorder& rec, gpu::Buffer& ahat, gpu::Buffer& a)>;

// map must have been created on g. Records, into the map's own recorder, the probe (when the
// probed rectangle is not empty), the colour map of the view into the map's pixel buffer and the
// copy into the image, which ends in SHADER_READ_ONLY_OPTIMAL. Returns the ended recording for the
// caller to submit (alone, or in a frame's batch).
Result<gpu::Recorder*> record_heatmap(gpu::Context& g, Heatmap& map, const HeatmapRequest& req, bool causal, int pr0,
                                      int pr1, int pc0, int pc1, const RecordProbe& probe);

}  // namespace rfa::probe
