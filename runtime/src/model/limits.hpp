// Limits a model must meet to run, shared by the config validation (a clear error at load) and the
// ops that would otherwise fail later (a session's creation).
#pragma once

namespace rfa {

// The largest head dim D (complex dims per head, d_k_total / n_heads) the attention kernels run:
// every D from 1 to this on every path (docs/math.md §9). The kernels take D as a specialisation
// constant; the limit is their per-thread registers (a row's D complex accumulators) and shared
// memory (key tiles of D complex values), not a table of sizes.
constexpr int kMaxHeadDim = 128;

}  // namespace rfa
