// The viridis colour scale as a piecewise-linear ramp through its colours at t = 0, 0.1, ..., 1,
// (r, g, b) per stop: colormap.comp and the host's rfa::heatmap_color (probe/heatmap.cpp)
// interpolate this one table the same way.
#ifndef RFA_VIRIDIS_RAMP_H
#define RFA_VIRIDIS_RAMP_H

#include "shared_prelude.h"

RFA_SHARED_BEGIN

const float kViridisRamp[33] = RFA_ARRAY_BEGIN(float, 33)
    0.267f, 0.005f, 0.329f,
    0.283f, 0.141f, 0.458f,
    0.254f, 0.265f, 0.530f,
    0.207f, 0.372f, 0.553f,
    0.164f, 0.471f, 0.558f,
    0.128f, 0.567f, 0.551f,
    0.135f, 0.659f, 0.518f,
    0.208f, 0.719f, 0.473f,
    0.478f, 0.821f, 0.318f,
    0.741f, 0.873f, 0.150f,
    0.993f, 0.906f, 0.144f
RFA_ARRAY_END;

RFA_SHARED_END

#endif
