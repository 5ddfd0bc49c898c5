// Push-constant layouts shared by a shader and the op that dispatches it. A shader declares its
// block as `layout(push_constant) uniform Push { XPush pc; };` and reads pc.field as before; the op
// fills an XPush and names it in PipelineCache::get<XPush>, which checks sizeof against the block
// the SPIR-V declares. Only uint and float fields (and float arrays): std430 then lays them out
// exactly as C++ does, 4 bytes each, no padding.
#ifndef RFA_PUSH_LAYOUTS_H
#define RFA_PUSH_LAYOUTS_H

#include "shared_prelude.h"

RFA_SHARED_BEGIN

struct EmbedPush {  // embed.comp
  uint rows, dim;
};

struct NormPush {  // layer_norm.comp
  uint rows, D;
  float eps;
  uint has_bias;
};

struct LinearPush {  // linear.comp, linear_direct.comp, linear_gemv.comp: y[M, N] = x[M, K] W^T
  uint M, N, K;
  uint has_bias;
};

struct SamplePush {  // common/sample_body.glsl (the kernels sample, sample_f64)
  uint rows, V;
  uint logits_offset;  // floats
  uint row_stride;     // floats between rows
  uint out_offset;     // token ids
};

struct RingAppendPush {  // ring_append.comp
  uint batch, n_new, capacity, width;
};

struct RotatePush {  // common/rfa_rotate_body.glsl
  uint batch, n_new, capacity, heads;
};

// common/attention_body.glsl (the rfa_attention* and sdpa* kernels and their split-k reduce passes).
struct AttentionPush {
  uint n_new;     // query rows per batch row in this call
  uint capacity;  // cache slots per (batch row, head)
  uint heads;
  uint window;    // 0: every earlier key; W: the last W keys of each query (causal only)
  float scale;    // SDPA only: logit = scale Re(conj(q) k)
  uint table_lags;  // RFA: lags [0, table_lags) read from the lag table; 0: every pair computes its terms
};

struct PhaseScanPush {  // rfa_phase_scan.comp
  uint batch, n_new, capacity, heads;
  uint first, count;  // this dispatch's positions [pos0 + first, pos0 + first + count) of the call
  uint kind;          // rfa::PhaseSource: 1 accumulated_rope, 2 accumulated_random, 3 accumulated_learned
  uint seed, layer;   // accumulated_random's draws
  uint vocab;         // accumulated_learned: rows of the step table
};

struct CurvesPush {  // rfa_curves.comp, rfa_lag_table.comp
  uint n_lags, heads;
};

struct ProbePush {  // common/rfa_probe_body.glsl (and the AFA and RT probes)
  uint b, h, r0, r1, c0, c1, capacity, heads, filled, window;
  float thr[4];  // row diagnostics: the lag thresholds of the mass columns
};

struct TomographyPush {  // common/rfa_tomography_body.glsl (and the AFA and RT tomography)
  uint b, h, r0, r1, c0, c1, capacity, heads, filled, window;
  float alpha;
  uint decayed;
  uint row_base;  // MODE 0: the first row of this dispatch is r0 + row_base (dispatches of <= 65535 rows)
};

struct ColormapPush {  // colormap.comp
  uint W, H, vr0, vr1, vc0, vc1, pr0, pr1, pc0, pc1, causal, log_scale;
  float vmax, decades;
  uint masked_color, pending_color;
};

RFA_SHARED_END

#endif
