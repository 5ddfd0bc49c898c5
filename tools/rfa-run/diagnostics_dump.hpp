// rfa-run --dump-diagnostics DIR: the attention tomography of every layer and head
// (Session::head_diagnostics) as one JSON file per (layer, head), every batch row inside.
#pragma once

#include <string>
#include <vector>

#include "rfa/session.hpp"

namespace rfa::dump {

struct DiagnosticsDump {
  std::string dir;                  // --dump-diagnostics DIR
  int window = 512;                 // --diagnostics-window N: the last N rows x the last N keys
  std::vector<double> alphas{1.0};  // --diagnostics-alphas A[,B...]: the first is alpha, the rest the sweep
};

// Parses "a,b,c" (numbers > 0, at most 65); false on anything else.
bool parse_alphas(const std::string& s, std::vector<double>* out);

// The rows [r0, r1) and key columns [c0, c1) the dump covers after the session's last position.
// Without a window: the last n rows x the last n keys. With a sliding window of W: the last n rows
// whose keys are all still cached (the ring holds W + min(W, 256) - 1 positions, so at most
// min(W, 256) of them once it is full) x the keys those rows see, [r0 - W + 1, r1), at most the
// last kMaxSide (the spectrum's limit): the diagnostics over what the window sees.
struct Window {
  int r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};
constexpr int kMaxSide = 1024;
Window diagnostics_window(const Session& s, int n);

// Writes DIR/diagnostics_L{l}_H{h}.json for every layer and head of the session's model:
// {"layer", "head", "window", "alphas", "batch_rows": [ {per-row columns, per-head summaries,
// singular values, sweep, timings} ]}; non-finite numbers as null.
Status write_diagnostics(Session& s, const DiagnosticsDump& opt);

}  // namespace rfa::dump
