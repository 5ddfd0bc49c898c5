// Pipeline layouts come from the shaders: the binding count and push block size read from the
// SPIR-V (gpu/spirv_reflect.hpp) and the caller's push struct checked against that block.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpu/recorder.hpp"
#include "gpu/shader_registry.hpp"
#include "gpu/spirv_reflect.hpp"
#include "test_support.hpp"

using namespace rfa;

namespace {
// Whether Recorder::dispatch accepts kernel K with push constants P (a detection idiom: the typed
// dispatch must refuse, at compile time, a push struct other than the kernel's own).
template <class K, class P, class = void>
struct can_dispatch : std::false_type {};
template <class K, class P>
struct can_dispatch<K, P,
                    std::void_t<decltype(std::declval<gpu::Recorder&>().dispatch(
                        std::declval<const K&>(), std::vector<gpu::Binding>{}, std::declval<const P&>(), 1u))>>
    : std::true_type {};
struct PushA {
  uint32_t a;
};
struct PushB {
  uint32_t b;
};
static_assert(can_dispatch<gpu::Kernel<PushA>, PushA>::value, "a kernel takes its own push struct");
static_assert(!can_dispatch<gpu::Kernel<PushA>, PushB>::value, "and no other");
static_assert(!can_dispatch<gpu::Pipeline, PushA>::value, "an untyped pipeline is not dispatched");
}  // namespace

TEST_CASE("every shader's bindings and push block are read from its SPIR-V") {
  // The counts the call sites stated by hand before the layouts were reflected (and the new paths').
  const struct {
    const char* name;
    uint32_t bindings, push_bytes;
  } expected[] = {{"embed", 3, 8},          {"layer_norm", 4, 16},    {"linear", 4, 16},
                  {"linear_direct", 4, 16}, {"linear_gemv", 4, 16},   {"sample", 3, 20},
                  {"sample_f64", 3, 20},    {"ring_append", 3, 16},   {"rfa_rotate", 14, 16},
                  {"rfa_attention", 19, 24}, {"sdpa", 8, 24},         {"rfa_curves", 3, 8},
                  {"rfa_probe", 10, 56},    {"rfa_tomography", 8, 52}, {"colormap", 2, 64},
                  // the attention paths: fp16 K/V, split-k reduce passes, the lag table
                  {"rfa_attention_kv16", 19, 24}, {"rfa_attention_reduce", 19, 24}, {"sdpa_kv16", 8, 24},
                  {"sdpa_reduce", 8, 24},   {"rfa_rotate_kv16", 14, 16}, {"rfa_probe_kv16", 10, 56},
                  {"rfa_tomography_kv16", 8, 52}, {"rfa_lag_table", 2, 8},
                  // the cooperative tile and its variants; the accumulated phase's scan
                  {"rfa_attention_tile", 19, 24}, {"rfa_attention_tile_kv16", 19, 24},
                  {"rfa_attention_tile_f16", 19, 24}, {"rfa_attention_tile_f16_kv16", 19, 24},
                  {"rfa_attention_tile_cm", 19, 24}, {"rfa_attention_tile_cm_kv16", 19, 24},
                  {"rfa_attention_tile_cm_emu", 19, 24}, {"rfa_attention_tile_cm_emu_kv16", 19, 24},
                  {"sdpa_tile", 8, 24}, {"sdpa_tile_kv16", 8, 24}, {"sdpa_tile_f16", 8, 24},
                  {"sdpa_tile_f16_kv16", 8, 24}, {"sdpa_tile_cm", 8, 24}, {"sdpa_tile_cm_kv16", 8, 24},
                  {"sdpa_tile_cm_emu", 8, 24}, {"sdpa_tile_cm_emu_kv16", 8, 24}, {"rfa_phase_scan", 5, 40},
                  {"afa_attention", 13, 24}, {"afa_attention_kv16", 13, 24}, {"rt_attention", 13, 24},
                  {"rt_attention_kv16", 13, 24}, {"afa_probe", 8, 56}, {"afa_probe_kv16", 8, 56},
                  {"rt_probe", 10, 56}, {"rt_probe_kv16", 10, 56},
                  // full AFA: its per-channel normalisers out, the tied passes' caches (afa_attention_io.glsl)
                  {"afa_full_attention", 14, 24}, {"afa_full_attention_kv16", 14, 24}};
  for (const auto& e : expected) {
    CAPTURE(std::string(e.name));
    const gpu::ShaderBinary* bin = gpu::find_shader(e.name);
    REQUIRE(bin != nullptr);
    auto r = gpu::reflect_shader(bin->words, bin->count, e.name);
    REQUIRE(r.ok());
    CHECK(r->bindings == e.bindings);
    CHECK(r->push_bytes == e.push_bytes);
  }
}

TEST_CASE("words that are not SPIR-V are an error, not a layout") {
  const uint32_t junk[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  auto r = gpu::reflect_shader(junk, 8, "junk");
  CHECK_FALSE(r.ok());
}

TEST_CASE("a push struct of the wrong size is refused at pipeline creation") {
  struct TooLong {
    uint32_t rows, dim, extra;
  };
  auto p = test::gpu().pipelines().get<TooLong>("embed");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Code::invalid_argument);
  CHECK(p.status().message().find("push constant struct is 12 bytes, the shader's push block 8") != std::string::npos);
  CHECK(test::gpu().pipelines().get("embed").status().code() == Code::invalid_argument);  // no struct: 0 bytes
}

TEST_CASE("a specialization vector with an id left out is refused, naming the id") {
  struct EmbedPush {  // shaders/common/push_layouts.h
    uint32_t rows, dim;
  };
  gpu::SpecConstants spec;
  spec.set(2, 1).set(0, 7);  // id 1 never set: the shader would silently keep its default
  CHECK(spec.missing() == 1);
  auto p = test::gpu().pipelines().get<EmbedPush>("embed", spec);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Code::invalid_argument);
  CHECK(p.status().message().find("embed: specialization constant id 1 not given") != std::string::npos);
  spec.set(1, 0);
  CHECK(spec.missing() == -1);
  CHECK(spec.values() == std::vector<uint32_t>{7, 0, 1});
}
