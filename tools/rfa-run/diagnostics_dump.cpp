// The JSON of rfa-run --dump-diagnostics (see diagnostics_dump.hpp). Per-row quantities are written
// as columns (one array per field, indexed like "position"), ready for numpy.
#include "diagnostics_dump.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include "rfa/inspect.hpp"

namespace rfa::dump {

namespace {

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

std::string arr(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';  // appended apart: g++ 12's -Wrestrict misfires on ("," + std::string)
    s += num(v[i]);
  }
  return s + "]";
}

template <typename F>
std::string column(const HeadDiagnostics& d, F f) {
  std::vector<double> v;
  for (const QueryDiagnostics& q : d.rows) v.push_back(f(q));
  return arr(v);
}

std::string to_json(const HeadDiagnostics& d) {
  std::ostringstream o;
  const MomentSummary& s = d.summary;
  o << "{\"b\":" << d.b << ",\"rows_window\":[" << d.r0 << "," << d.r1 << "],\"cols_window\":[" << d.c0 << "," << d.c1
    << "],\"alpha\":" << num(d.alpha) << ",\"d\":" << d.d << ",\"entropy_mean\":" << num(d.entropy_mean)
    << ",\"max_weight_mean\":" << num(d.max_weight_mean) << ",\"erank\":" << num(d.erank) << ",\"rank\":" << d.rank
    << ",\"nullity\":" << d.nullity << ",\"singular_values\":" << arr(d.singular_values)
    << ",\"summary\":{\"var_q\":" << num(s.var_q) << ",\"var_k\":" << num(s.var_k) << ",\"tau_mean\":" << num(s.tau_mean)
    << ",\"tau_std\":" << num(s.tau_std) << ",\"tau_chi_mean\":" << num(s.tau_chi_mean)
    << ",\"logit_std\":" << num(s.logit_std) << ",\"logit_std_meanfield\":" << num(s.logit_std_meanfield)
    << ",\"tilt_spectrum\":" << arr(s.tilt_spectrum) << ",\"dim_eff_u\":" << num(s.dim_eff_u)
    << ",\"normal_spectrum\":" << arr(s.normal_spectrum) << ",\"dim_eff_n\":" << num(s.dim_eff_n) << "}";
  o << ",\"rows\":{\"position\":" << column(d, [](auto& q) { return (double)q.position; })
    << ",\"keys\":" << column(d, [](auto& q) { return (double)q.keys; })
    << ",\"q_norm\":" << column(d, [](auto& q) { return q.q_norm; })
    << ",\"tau\":" << column(d, [](auto& q) { return q.tau; })
    << ",\"entropy\":" << column(d, [](auto& q) { return q.entropy; })
    << ",\"log_partition\":" << column(d, [](auto& q) { return q.log_partition; })
    << ",\"max_weight\":" << column(d, [](auto& q) { return q.max_weight; })
    << ",\"mean_s\":" << column(d, [](auto& q) { return q.mean_s; })
    << ",\"var_s\":" << column(d, [](auto& q) { return q.var_s; })
    << ",\"mean_logit\":" << column(d, [](auto& q) { return q.mean_logit; })
    << ",\"var_logit\":" << column(d, [](auto& q) { return q.var_logit; })
    << ",\"expected_lag\":" << column(d, [](auto& q) { return q.expected_lag; }) << "}";
  o << ",\"sweep\":[";
  for (size_t k = 0; k < d.sweep.size(); ++k) {
    const SweepPoint& p = d.sweep[k];
    o << (k ? "," : "") << "{\"alpha\":" << num(p.alpha) << ",\"entropy_mean\":" << num(p.entropy)
      << ",\"max_weight_mean\":" << num(p.max_weight) << ",\"erank\":" << num(p.erank) << ",\"rank\":" << p.rank
      << ",\"singular_values\":" << arr(p.singular_values) << "}";
  }
  const DiagnosticsTimings& t = d.timings;
  o << "],\"timings_ms\":{\"gpu\":" << num(t.gpu_ms) << ",\"svd\":" << num(t.svd_ms) << ",\"eigen\":" << num(t.eigen_ms)
    << ",\"host\":" << num(t.host_ms) << ",\"wall\":" << num(t.wall_ms) << "}}";
  return o.str();
}

}  // namespace

bool parse_alphas(const std::string& s, std::vector<double>* out) {
  std::stringstream ss(s);
  std::string item;
  out->clear();
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end || !(v > 0) || !std::isfinite(v) || !std::isfinite((float)v)) return false;
    out->push_back(v);
  }
  return !out->empty() && out->size() <= 65;
}

Window diagnostics_window(const Session& s, int n) {
  const int pos = s.position(), oldest = s.oldest_position(), W = s.window();
  Window w;
  w.r1 = w.c1 = pos;
  if (W <= 0) {  // everything is cached: the last n rows x the last n keys
    w.r0 = w.c0 = std::max(0, pos - n);
    return w;
  }
  // A row needs its whole band [r - W + 1, r]; rows whose first keys left the ring are skipped.
  const int first_row = oldest > 0 ? oldest + W - 1 : 0;
  w.r0 = std::max(first_row, pos - n);
  w.c0 = std::max({oldest, w.r0 - W + 1, pos - kMaxSide});
  return w;
}

Status write_diagnostics(Session& s, const DiagnosticsDump& opt) {
  std::error_code ec;
  std::filesystem::create_directories(opt.dir, ec);
  if (ec) return Status(Code::io_error, "--dump-diagnostics " + opt.dir + ": " + ec.message());
  const ModelInfo info = model_info(s.model());
  const Window w = diagnostics_window(s, opt.window);
  if (w.r1 - w.r0 < std::min(opt.window, s.position()))
    std::fprintf(stderr, "rfa-run: note: --dump-diagnostics: with the sliding window of %d, the last %d rows are "
                         "those whose keys are all still cached (of the %d asked), over the %d keys they see\n",
                 s.window(), w.r1 - w.r0, opt.window, w.c1 - w.c0);
  for (int l = 0; l < info.layers; ++l)
    for (int h = 0; h < info.heads; ++h) {
      std::ostringstream o;
      o << "{\"layer\":" << l << ",\"head\":" << h << ",\"window\":" << opt.window << ",\"alphas\":" << arr(opt.alphas)
        << ",\"batch_rows\":[";
      for (int b = 0; b < s.batch(); ++b) {
        DiagnosticsRequest r;
        r.layer = l, r.head = h, r.b = b;
        r.r0 = w.r0, r.r1 = w.r1, r.c0 = w.c0, r.c1 = w.c1;
        r.alpha = opt.alphas[0];
        r.sweep.assign(opt.alphas.begin() + 1, opt.alphas.end());
        auto d = rfa::Inspector(s).head_diagnostics(r);
        if (!d) return d.status();
        o << (b ? "," : "") << to_json(*d);
      }
      o << "]}\n";
      const std::string path =
          (std::filesystem::path(opt.dir) / ("diagnostics_L" + std::to_string(l) + "_H" + std::to_string(h) + ".json")).string();
      std::ofstream f(path, std::ios::binary);  // "\n", not "\r\n", on Windows too
      f << o.str();
      if (!f) return Status(Code::io_error, "cannot write " + path);
    }
  return Status::Ok();
}

}  // namespace rfa::dump
