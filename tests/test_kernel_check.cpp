// The attention kernel check (ops/attention_check.hpp): every path the chooser can take on the test
// device against its CPU evaluation; a deliberately wrong kernel refused and never chosen again;
// ContextOptions::verify_kernels with its cache file; rfa-run --self-check's table.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/access.hpp"
#include "core/kernel_verdicts.hpp"
#include "ops/attention_check.hpp"
#include "ops/rfa_attention.hpp"
#include "rfa/device.hpp"
#include "rfa/environment.hpp"
#include "test_support.hpp"

using namespace rfa;

namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A context of its own (the suite's shared one fails a case on any warning; a refusal is one).
std::unique_ptr<Context> make_context(ContextOptions o, std::vector<std::string>* messages) {
  o = context_options_from_environment(o);
  o.validation = test::validation_option();
  o.on_message = [messages](MessageSeverity sev, const char* msg) {
    if (sev >= MessageSeverity::warning) messages->push_back(msg);
  };
  auto c = Context::create(o);
  REQUIRE_MESSAGE(c.ok(), c.status().to_string());
  return c.take();
}

}  // namespace

TEST_CASE("every attention path the chooser can take here matches the CPU evaluation") {
  auto r = ops::check_attention_paths(test::gpu());
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  const gpu::Capabilities& caps = test::gpu().caps();
  std::vector<std::string> kernels;
  for (const ops::PathCheck& c : *r) {
    CAPTURE(c.path);
    CAPTURE(c.kernel);
    CHECK(c.pass);
    CHECK(c.worst_error <= c.bound);
    CHECK(c.worst_error > 0.0);  // fp32 reassociation at least: the comparison really ran
    CHECK(c.ms > 0.0);
    kernels.push_back(c.kernel);
    MESSAGE(c.path << ": " << c.kernel << ", error " << c.worst_error << " (bound " << c.bound << "), " << c.ms << " ms");
  }
  auto ran = [&](const std::string& k) {
    for (const std::string& x : kernels)
      if (x.find(k) != std::string::npos) return true;
    return false;
  };
  // The paths every device has, and the ones this device's features add.
  CHECK(ran("rfa_attention_kv16"));
  CHECK(ran("rfa_attention_tile"));
  CHECK(ran("+ rfa_attention_reduce"));
  if (caps.subgroup_size_control && (caps.subgroup_ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT)) CHECK((ran("_sx") || ran("_sg")));
  if (caps.coopmat_khr()) CHECK(ran("_tile_ck"));
  if (caps.coopmat_nv2) CHECK(ran("_tile_pe"));  // VK_NV_cooperative_matrix2 (Mesa 26)
  if (caps.shader_float16) CHECK(ran("_tile_f16"));
  CHECK(r->size() >= 8);
}

TEST_CASE("a deliberately wrong kernel fails the check and is never chosen again") {
  gpu::Context& g = test::gpu();
  ops::PathCheckOptions o;
  o.corrupt = "tile";  // the tile's causal switch flipped: rows see later keys
  auto r = ops::check_attention_paths(g, o);
  REQUIRE(r.ok());
  int failed = 0;
  for (const ops::PathCheck& c : *r) {
    CAPTURE(c.path);
    CHECK(c.pass == (c.path != "tile"));
    failed += c.pass ? 0 : 1;
  }
  REQUIRE(failed == 1);
  gpu::Capabilities caps = g.caps();
  ops::apply_kernel_refusals(caps, *r);
  REQUIRE(caps.kernel_refusals.size() == 1);
  CHECK(caps.refuse_tile);
  CHECK(caps.kernel_refusals[0].find("the cooperative tile refused") != std::string::npos);
  // Forced or not, the chooser no longer takes the tile, and says why.
  KernelOptions tile;
  tile.attention_tile = 1;
  const auto t = ops::choose_attention_tiling(caps, tile, 70, 32, 2, 100);
  CHECK(!t.tile);
  CHECK(t.why.find("tile refused by the kernel check") != std::string::npos);
  CHECK(ops::choose_attention_tiling(g.caps(), tile, 70, 32, 2, 100).tile);  // (the device itself still would)
  // A failed subgroup merge takes that reduction away: the decode path then merges another way.
  o.corrupt = "3 rows";  // (a decode step's one row sees every key either way: causality cannot show there)
  auto d = ops::check_attention_paths(g, o);
  REQUIRE(d.ok());
  gpu::Capabilities c2 = g.caps();
  ops::apply_kernel_refusals(c2, *d);
  const KernelOptions none;
  const std::string before = ops::attention_kernel_name("rfa_attention", ops::choose_attention_tiling(g.caps(), none, 3, 32, 2, 300), false);
  const std::string after = ops::attention_kernel_name("rfa_attention", ops::choose_attention_tiling(c2, none, 3, 32, 2, 300), false);
  CAPTURE(before);
  CAPTURE(after);
  REQUIRE(c2.kernel_refusals.size() == 1);
  if (before.find("_sx") != std::string::npos || before.find("_sg") != std::string::npos) CHECK(after != before);
}

TEST_CASE("ContextOptions::verify_kernels: verdicts checked once per device and kept in the cache file") {
  const std::filesystem::path dir = test::temp_dir("kernel_cache");
  const std::string cache = (dir / "verdicts.txt").string();
  std::vector<std::string> messages;
  ContextOptions o;
  o.verify_kernels = true;
  o.kernel_cache = cache;
  {
    auto ctx = make_context(o, &messages);
    CHECK(ctx->kernel_refusals().empty());  // every path passed on this device
  }
  CHECK(messages.empty());
  const std::string written = read_file(cache);
  CHECK(written.find("# rfa-vk kernel verdicts") == 0);
  CHECK(written.find("\tpass\t") != std::string::npos);
  CHECK(written.find("\tfail\t") == std::string::npos);
  CHECK(!std::filesystem::exists(cache + ".tmp"));
  // The same device again: read from the cache, not checked again (the file is left as it was).
  const auto stamp = std::filesystem::last_write_time(cache);
  {
    auto ctx = make_context(o, &messages);
    CHECK(ctx->kernel_refusals().empty());
  }
  CHECK(std::filesystem::last_write_time(cache) == stamp);
  CHECK(read_file(cache) == written);
  // A verdict of "fail" in the cache (as another run on a broken driver would leave): refused
  // without running anything, named in the summary, the logs and kernel_refusals.
  const std::string key = core::kernel_cache_key(test::gpu());
  std::string tampered;
  std::istringstream lines(written);
  std::string line;
  int marked = 0;
  while (std::getline(lines, line)) {
    if (marked == 0 && line.rfind(key + "\t", 0) == 0 && line.find("rfa_attention_tile") != std::string::npos &&
        line.find("_tile_f16") == std::string::npos && line.find("_tile_c") == std::string::npos) {
      line.replace(key.size() + 1, 4, "fail");
      ++marked;
    }
    tampered += line + "\n";
  }
  REQUIRE(marked == 1);
  { std::ofstream(cache, std::ios::trunc) << tampered; }
  messages.clear();
  {
    auto ctx = make_context(o, &messages);
    const auto refused = ctx->kernel_refusals();
    REQUIRE(refused.size() == 1);
    CHECK(refused[0].find("rfa_attention_tile") != std::string::npos);
    CHECK(ctx->capabilities_summary().find("kernel check: rfa_attention_tile") != std::string::npos);
    REQUIRE(messages.size() == 1);
    CHECK(std::string(messages[0]).find("kernel check") != std::string::npos);
    KernelOptions tile;
    tile.attention_tile = 1;
    const auto t = ops::choose_attention_tiling(gpu_of(*ctx).caps(), tile, 70, 32, 2, 100);
    CHECK(!t.tile);
  }
  // Malformed lines are dropped (a warning), this device's verdicts checked again and written.
  { std::ofstream(cache, std::ios::app) << "not a verdict\n"; }
  messages.clear();
  { auto ctx = make_context(o, &messages); }
  REQUIRE(!messages.empty());
  CHECK(messages[0].find("malformed") != std::string::npos);
  CHECK(read_file(cache).find("not a verdict") == std::string::npos);
  // A cache file that cannot be written is an error naming it; the context is not made.
  ContextOptions bad = o;
  bad.kernel_cache = (dir / "no such folder" / "verdicts.txt").string();
  bad = context_options_from_environment(bad);
  bad.validation = test::validation_option();
  auto c = Context::create(bad);
  REQUIRE(!c.ok());
  CHECK(c.status().message().find("no such folder") != std::string::npos);
}

TEST_CASE("rfa-run --self-check prints every attention path, and --json lists them") {
  const std::string out = (std::filesystem::path(test::temp_dir("self_check")) / "out.json").string();
  REQUIRE(test::run_tool("rfa-run", "--self-check --json", out) == 0);
  const std::string j = read_file(out);
  CHECK(j.find("\"self_check\":\"pass\"") != std::string::npos);
  CHECK(j.find("\"attention\":[{\"path\":\"prefill, the device's choice\"") != std::string::npos);
  CHECK(j.find("\"kernel\":\"rfa_attention_tile") != std::string::npos);
  CHECK(j.find("\"pass\":false") == std::string::npos);
  const std::string txt = (std::filesystem::path(test::temp_dir("self_check_text")) / "out.txt").string();
  REQUIRE(test::run_tool("rfa-run", "--self-check", txt) == 0);
  const std::string t = read_file(txt);
  CHECK(t.find("self-check: attention paths") != std::string::npos);
  CHECK(t.find("decode, split-k") != std::string::npos);
  CHECK(t.find("FAIL") == std::string::npos);
}
