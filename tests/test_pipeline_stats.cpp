// Per-pipeline statistics (gpu/pipeline_stats.hpp, rfa-bench attention --stats): the static SPIR-V
// count on a hand-assembled module whose counts are known, on the real shaders, and the driver's
// side on this device (captured only when asked; where the driver lacks the extension the note says so).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu/pipeline_stats.hpp"
#include "gpu/shader_registry.hpp"
#include "test_support.hpp"
#include "core/access.hpp"

using namespace rfa;

namespace {

// embed.comp's push block (shaders/common/push_layouts.h EmbedPush: rows, dim), for a pipeline to query.
struct EmbedPush {
  uint32_t rows, dim;
};

constexpr uint32_t op(uint32_t words, uint32_t opcode) { return (words << 16) | opcode; }

// main: one loop whose body calls `helper` (one OpReturn); `loop_control` is the OpLoopMerge mask.
//   helper: OpReturn                                              -> 1 instruction
//   main:   OpBranch | header: OpLoopMerge, OpBranchConditional | body: OpFunctionCall, OpBranch
//           | continue: OpBranch | merge: OpReturn                 -> 6 (OpLoopMerge not counted)
std::vector<uint32_t> tiny_module(uint32_t loop_control) {
  return {0x07230203u, 0x00010000u, 0, 20, 0,
          op(2, 17), 1,                              // OpCapability Shader
          op(3, 14), 0, 1,                           // OpMemoryModel Logical GLSL450
          op(5, 15), 5, 1, 0x6e69616du, 0,           // OpEntryPoint GLCompute %1 "main"
          op(2, 19), 2,                              // %2 = OpTypeVoid
          op(3, 33), 3, 2,                           // %3 = OpTypeFunction %2
          op(2, 20), 4,                              // %4 = OpTypeBool
          op(3, 41), 4, 5,                           // %5 = OpConstantTrue %4
          op(5, 54), 2, 6, 0, 3,                     // %6 = OpFunction (helper)
          op(2, 248), 7, op(1, 253),                 //   OpLabel %7; OpReturn
          op(1, 56),                                 // OpFunctionEnd
          op(5, 54), 2, 1, 0, 3,                     // %1 = OpFunction (main)
          op(2, 248), 8, op(2, 249), 9,              //   %8: OpBranch %9
          op(2, 248), 9, op(4, 246), 11, 10, loop_control,  // %9: OpLoopMerge %11 %10
          op(4, 250), 5, 12, 11,                     //       OpBranchConditional %5 %12 %11
          op(2, 248), 12, op(4, 57), 2, 13, 6,       //   %12: OpFunctionCall %2 %6
          op(2, 249), 10,                            //        OpBranch %10
          op(2, 248), 10, op(2, 249), 9,             //   %10: OpBranch %9
          op(2, 248), 11, op(1, 253),                //   %11: OpReturn
          op(1, 56)};                                // OpFunctionEnd
}

}  // namespace

TEST_CASE("the SPIR-V count of a module whose counts are known") {
  const auto m = tiny_module(0);
  auto c = gpu::count_spirv(m.data(), m.size());
  REQUIRE_MESSAGE(c.ok(), c.status().to_string());
  CHECK(c->functions == 2);
  CHECK(c->instructions == 7);
  CHECK(c->inlined == 7);         // main's 6 + the call's helper
  CHECK(c->loops == 1);
  CHECK(c->innermost_loop == 5);  // header 1 + body 2 + continue 1 + helper 1
  // The same loop marked [[unroll]] counts as part of its parent: no innermost loop left.
  const auto u = tiny_module(1);
  auto cu = gpu::count_spirv(u.data(), u.size());
  REQUIRE(cu.ok());
  CHECK(cu->loops == 1);
  CHECK(cu->innermost_loop == 0);
}

TEST_CASE("the SPIR-V count refuses what is not a module") {
  auto m = tiny_module(0);
  auto bad = m;
  bad[0] = 0x12345678u;
  auto r = gpu::count_spirv(bad.data(), bad.size());
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("magic") != std::string::npos);
  auto trunc = m;
  trunc.back() = op(9, 56);  // an OpFunctionEnd claiming 9 words
  auto t = gpu::count_spirv(trunc.data(), trunc.size());
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message().find("past the module's end") != std::string::npos);
  auto none = m;
  none[10] = op(1, 0);  // the OpEntryPoint turned into OpNop words: no entry point
  for (int i = 11; i < 15; ++i) none[i] = op(1, 0);
  auto e = gpu::count_spirv(none.data(), none.size());
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().message().find("entry point") != std::string::npos);
}

TEST_CASE("every attention kernel's SPIR-V has a per-key loop, and RFA's pair costs more than SDPA's") {
  for (const char* name : {"rfa_attention", "rfa_attention_tile", "sdpa", "sdpa_tile", "afa_attention",
                           "rt_attention", "rfa_attention_reduce", "rfa_rotate"}) {
    CAPTURE(std::string(name));
    const gpu::ShaderBinary* b = gpu::find_shader(name);
    REQUIRE(b);
    auto c = gpu::count_spirv(b->words, b->count);
    REQUIRE_MESSAGE(c.ok(), c.status().to_string());
    CHECK(c->instructions > 0);
    CHECK(c->inlined >= c->instructions / 2);
    CHECK(c->loops > 0);
    CHECK(c->innermost_loop > 0);
    CHECK(c->innermost_loop < c->inlined);
  }
  auto rfa = gpu::count_spirv(gpu::find_shader("rfa_attention")->words, gpu::find_shader("rfa_attention")->count);
  auto sdpa = gpu::count_spirv(gpu::find_shader("sdpa")->words, gpu::find_shader("sdpa")->count);
  REQUIRE(rfa.ok());
  REQUIRE(sdpa.ok());
  // RFA's logit adds the lag terms, the Mahalanobis form and the robust weight to SDPA's dot product.
  CHECK(rfa->innermost_loop > sdpa->innermost_loop);
}

TEST_CASE("driver statistics are captured only when asked, and a driver without them says so") {
  uint64_t messages = 0;
  ContextOptions o;
  o.validation = 1;
  o.on_message = [&](MessageSeverity s, const char* m) {
    if (s >= MessageSeverity::warning) {
      ++messages;
      MESSAGE(m);
    }
  };
  for (bool capture : {false, true}) {
    CAPTURE(capture);
    o.capture_pipeline_statistics = capture;
    auto ctx = Context::create(o);
    REQUIRE_MESSAGE(ctx.ok(), ctx.status().to_string());
    gpu::Context& g = gpu_of(**ctx);
    CHECK(g.capture_statistics() == (capture && g.caps().pipeline_executable_info));
    auto p = g.pipelines().get<EmbedPush>("embed");
    REQUIRE_MESSAGE(p.ok(), p.status().to_string());
    CHECK((*p)->statistics == g.capture_statistics());
    auto st = gpu::pipeline_statistics(g, **p);
    REQUIRE_MESSAGE(st.ok(), st.status().to_string());
    CHECK(st->shader == "embed");
    CHECK(st->spirv.instructions > 0);
    if (g.capture_statistics()) {
      CHECK(st->exposed);
      REQUIRE(!st->executables.empty());
      MESSAGE("driver statistics of embed: " << st->executables[0].statistics.size() << " values");
    } else if (!g.caps().pipeline_executable_info) {
      CHECK_FALSE(st->exposed);
      CHECK(st->note.find("not exposed by " + g.caps().driver_name) != std::string::npos);
    } else {
      CHECK_FALSE(st->exposed);
      CHECK(st->note.find("not captured") != std::string::npos);
    }
  }
  CHECK(messages == 0);
}

TEST_CASE("a driver statistic prints as JSON does, whatever its format") {
  gpu::ExecutableStatistic s;
  s.kind = gpu::ExecutableStatistic::Kind::boolean;
  s.b = true;
  CHECK(s.text() == "true");
  s.kind = gpu::ExecutableStatistic::Kind::int64;
  s.i = -3;
  CHECK(s.text() == "-3");
  s.kind = gpu::ExecutableStatistic::Kind::uint64;
  s.u = 18446744073709551615ull;
  CHECK(s.text() == "18446744073709551615");
  s.kind = gpu::ExecutableStatistic::Kind::float64;
  s.f = 1.5;
  CHECK(s.text() == "1.5");
  s.f = 2.5e-7;
  CHECK(s.text() == "2.5e-07");
  s.f = std::nan("");
  CHECK(s.text() == "null");
}
