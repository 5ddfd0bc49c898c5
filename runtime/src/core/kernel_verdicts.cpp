#include "core/kernel_verdicts.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "gpu/shader_registry.hpp"
#include "ops/attention_check.hpp"

namespace rfa::core {

namespace {

constexpr const char* kHeader = "# rfa-vk kernel verdicts (ContextOptions::kernel_cache): key, pass|fail, error, bound, kernel, path";

// FNV-1a over every compiled kernel's words: verdicts of another build of the kernels are not ours.
uint64_t kernels_hash() {
  static const uint64_t h = [] {
    uint64_t x = 1469598103934665603ull;
    for (const gpu::ShaderBinary* s = gpu::all_shaders(); s->name; ++s)
      for (size_t i = 0; i < s->count; ++i) {
        x ^= s->words[i];
        x *= 1099511628211ull;
      }
    return x;
  }();
  return h;
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "%llx", (unsigned long long)v);
  return b;
}

// Tabs and line breaks would break the format: a driver's name never has them, but keep it safe.
std::string clean(std::string s) {
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

struct Line {
  std::string key;
  ops::PathCheck check;
};

// The file's lines, or an empty list where it does not exist. A malformed line makes `malformed`
// true (the cache is then written anew).
std::vector<Line> read_cache(const std::string& path, bool* malformed) {
  std::vector<Line> out;
  *malformed = false;
  std::ifstream in(path);
  if (!in) return out;
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(text);
    std::string part;
    while (std::getline(ss, part, '\t')) f.push_back(part);
    if (f.size() != 6 || (f[1] != "pass" && f[1] != "fail")) {
      *malformed = true;
      continue;
    }
    Line l;
    l.key = f[0];
    l.check.pass = f[1] == "pass";
    char* end = nullptr;
    l.check.worst_error = std::strtod(f[2].c_str(), &end);
    l.check.bound = std::strtod(f[3].c_str(), nullptr);
    l.check.kernel = f[4];
    l.check.path = f[5];
    out.push_back(l);
  }
  return out;
}

Status write_cache(const std::string& path, const std::vector<Line>& lines) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream o(tmp, std::ios::trunc);
    if (!o)
      return Status(Code::invalid_argument, "kernel cache '" + path + "': cannot write (ContextOptions::kernel_cache)");
    o << kHeader << "\n";
    for (const Line& l : lines) {
      char num[64];
      std::snprintf(num, sizeof num, "%.6g\t%.6g", l.check.worst_error, l.check.bound);
      o << l.key << "\t" << (l.check.pass ? "pass" : "fail") << "\t" << num << "\t" << clean(l.check.kernel) << "\t"
        << clean(l.check.path) << "\n";
    }
    if (!o.good()) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return Status(Code::io_error, "kernel cache '" + path + "': write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    return Status(Code::io_error, "kernel cache '" + path + "': cannot replace it (" + ec.message() + ")");
  }
  return Status::Ok();
}

}  // namespace

std::string kernel_cache_key(const gpu::Context& g) {
  const gpu::Capabilities& c = g.caps();
  return clean(hex(c.vendor_id) + ":" + hex(c.device_id) + ":" + hex(c.driver_version) + ":" + c.driver_name + ":" +
               c.driver_info + ":rfa-vk " + RFA_VERSION_STRING + ":kernels " + hex(kernels_hash()) + ":profile " +
               (c.profile.empty() ? "none" : c.profile));
}

Status verify_kernels(gpu::Context& g, const std::string& cache_path) {
  const std::string key = kernel_cache_key(g);
  std::vector<Line> lines;
  std::vector<ops::PathCheck> mine;
  bool malformed = false;
  if (!cache_path.empty()) {
    lines = read_cache(cache_path, &malformed);
    for (const Line& l : lines)
      if (l.key == key) mine.push_back(l.check);
    if (malformed)
      g.deliver_message(MessageSeverity::warning,
                        ("kernel cache '" + cache_path + "' has malformed lines; they are dropped").c_str(), false);
  }
  const bool cached = !mine.empty();
  if (!cached) {
    auto r = ops::check_attention_paths(g);
    if (!r) return Status(r.status().code(), "kernel check: " + r.status().message());
    mine = r.take();
  }
  if (!cache_path.empty() && (!cached || malformed)) {
    std::vector<Line> keep;
    for (const Line& l : lines)
      if (l.key != key) keep.push_back(l);
    for (const ops::PathCheck& c : mine) keep.push_back({key, c});
    RFA_TRY(write_cache(cache_path, keep));
  }
  ops::apply_kernel_refusals(g.caps_during_setup(), mine);
  for (const std::string& r : g.caps().kernel_refusals)
    g.deliver_message(MessageSeverity::warning, ("kernel check: " + r).c_str(), false);
  return Status::Ok();
}

}  // namespace rfa::core
