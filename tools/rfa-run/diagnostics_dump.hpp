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

// Writes DIR/diagnostics_L{l}_H{h}.json for every layer and head of the session's model:
// {"layer", "head", "window", "alphas", "batch_rows": [ {per-row columns, per-head summaries,
// singular values, sweep, timings} ]}; non-finite numbers as null.
Status write_diagnostics(Session& s, const DiagnosticsDump& opt);

}  // namespace rfa::dump
