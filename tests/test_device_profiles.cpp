// Device profiles and real limits (issue 21, parts 5 and 6; docs/device-profiles.md): a profile
// intersects the device's limits, the pipeline layer refuses a kernel that exceeds them (naming the
// limit), kernels that bind more storage buffers than the device allows run with packed bindings,
// every zoo model under vulkan-minimum and the Android baseline runs with the same numbers, and a
// session whose caches exceed maxStorageBufferRange is refused naming it while a prefill whose
// outputs exceed it is split with the same result.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpu/device_profiles.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/shader_registry.hpp"
#include "gpu/spirv_reflect.hpp"
#include "model/npy.hpp"
#include "rfa/session.hpp"
#include "test_support.hpp"
#include "core/access.hpp"

namespace fs = std::filesystem;
using namespace rfa;

namespace {

// Runs rfa-run with RFA_DEVICE_PROFILE cleared (the profile, if any, goes on the command line);
// stderr is captured in *err. No shell: test::run_tool starts the program alike on every OS.
int run(const std::string& args, std::string* err) {
  const std::string log = test::temp_dir("profiles-log") + "/stderr.txt";
  test::ScopedEnv no_profile("RFA_DEVICE_PROFILE", nullptr);
  const int rc = test::run_tool("rfa-run", args, "", log);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  if (err) *err = ss.str();
  return rc;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<double> load(const std::string& path) {
  auto a = read_npy(path);
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  return a->values;
}

// A context of its own under the validation layer; any message fails the test.
std::unique_ptr<Context> make_context(const std::string& profile, uint64_t range = 0, uint32_t storage_buffers = 0,
                                      uint64_t budget = 0) {
  ContextOptions o;
  o.validation = test::validation_option();
  o.device_profile = profile;
  o.max_storage_buffer_range = range;
  o.max_storage_buffers_per_stage = storage_buffers;
  o.memory_budget = budget;
  o.on_message = [](MessageSeverity sev, const char* msg) {
    if (sev < MessageSeverity::warning) return;
    const std::string text = std::string("Vulkan validation message: ") + msg;
    ADD_FAIL_CHECK_AT(__FILE__, __LINE__, text);
  };
  auto c = Context::create(o);
  REQUIRE_MESSAGE(c.ok(), c.status().to_string());
  return c.take();
}

const char* kLimitNames[] = {"maxPerStageDescriptorStorageBuffers", "maxDescriptorSetStorageBuffers",
                             "maxPushConstantsSize", "maxComputeSharedMemorySize", "maxComputeWorkGroupInvocations",
                             "maxComputeWorkGroupSize", "maxStorageBufferRange"};

bool names_a_limit(const std::string& s) {
  for (const char* n : kLimitNames)
    if (s.find(n) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("the profiles: names, the intersection, an unknown name lists them") {
  const auto& all = gpu::device_profiles();
  REQUIRE(all.size() >= 5);
  for (const char* n : {"android-baseline-2022", "vulkan-minimum", "apple-m1-moltenvk", "intel-uhd-620", "intel-iris-xe"})
    CHECK(gpu::find_device_profile(n) != nullptr);
  CHECK(gpu::find_device_profile("no-such-profile") == nullptr);
  CHECK(device_profiles().size() == all.size());

  // The intersection keeps the smaller limit, the larger alignment, a feature only where both have it.
  gpu::Capabilities c;
  c.max_shared_memory = 65536;
  c.max_workgroup_invocations = 256;
  c.max_storage_buffers_per_stage = 1000;
  c.max_storage_buffers_per_set = 8;
  c.max_storage_buffer_range = 1ull << 40;
  c.storage_buffer_alignment = 4;
  c.max_push_constants = 256;
  c.subgroup_size = 16;
  c.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
  c.shader_float16 = c.storage_16bit = c.shader_float64 = c.shader_int64 = c.push_descriptors = c.timestamps = true;
  gpu::Capabilities m1 = c;
  gpu::apply_device_profile(m1, *gpu::find_device_profile("apple-m1-moltenvk"));
  CHECK(m1.profile == "apple-m1-moltenvk");
  CHECK(m1.max_shared_memory == 32768);
  CHECK(m1.max_workgroup_invocations == 256);      // the device's own, smaller
  CHECK(m1.max_storage_buffers_per_stage == 31);
  CHECK(m1.max_storage_buffers_per_set == 8);      // the device's own, smaller
  CHECK(m1.max_storage_buffer_range == 4294967295ull);
  CHECK(m1.storage_buffer_alignment == 16);        // a minimum alignment: the larger wins
  CHECK(m1.max_push_constants == 256);
  CHECK(m1.subgroup_size == 16);                   // how the hardware runs, not a limit
  CHECK(!m1.shader_float64);                       // Metal has no fp64
  CHECK(m1.shader_float16);
  CHECK(m1.portability_subset);
  gpu::Capabilities mn = c;
  gpu::apply_device_profile(mn, *gpu::find_device_profile("vulkan-minimum"));
  CHECK(mn.max_shared_memory == 16384);
  CHECK(mn.max_workgroup_invocations == 128);
  CHECK(mn.max_storage_buffers_per_stage == 4);
  CHECK(mn.max_storage_buffer_range == (128ull << 20));
  CHECK(mn.max_push_constants == 128);
  CHECK(mn.subgroup_ops == VK_SUBGROUP_FEATURE_BASIC_BIT);
  CHECK(!mn.shader_float16);
  CHECK(!mn.push_descriptors);
  CHECK(!mn.timestamps);
  CHECK(!mn.portability_subset);

  // Subgroup sizes: a pipeline may require a size both the device and the profile allow. The M1
  // lists no compute stage among requiredSubgroupSizeStages: no size can be required there, so
  // the kernels that number subgroup lanes are not chosen under it.
  c.subgroup_size_control = true;
  c.min_subgroup_size = c.max_subgroup_size = 16;
  c.vulkan_memory_model = c.vulkan_memory_model_device_scope = true;
  c.coopmat_khr_block = 16;
  m1 = c;
  gpu::apply_device_profile(m1, *gpu::find_device_profile("apple-m1-moltenvk"));
  CHECK(!m1.subgroup_size_control);
  CHECK(!m1.vulkan_memory_model);
  CHECK(!m1.coopmat_khr());
  CHECK(gpu::subgroup_layout_size(m1, 128) == 0);
  gpu::Capabilities xe = c;  // Iris Xe (8 to 32 lanes): the device's 16 lies inside, required 16
  gpu::apply_device_profile(xe, *gpu::find_device_profile("intel-iris-xe"));
  CHECK(xe.subgroup_size_control);
  CHECK(xe.min_subgroup_size == 16);
  CHECK(xe.max_subgroup_size == 16);
  CHECK(xe.max_workgroup_subgroups == 64);
  CHECK(xe.vulkan_memory_model);
  CHECK(!xe.coopmat_khr());  // the Mesa 26.1.3 Iris Xe file lists no VK_KHR_cooperative_matrix
  CHECK(gpu::subgroup_layout_size(xe, 128) == 16);
  gpu::Capabilities wide = c;  // a 64-lane device under a profile of 8 to 32: nothing both allow
  wide.subgroup_size = wide.min_subgroup_size = wide.max_subgroup_size = 64;
  gpu::apply_device_profile(wide, *gpu::find_device_profile("intel-uhd-620"));
  CHECK(!wide.subgroup_size_control);
  CHECK(wide.subgroup_size == 64);
  gpu::Capabilities base = c;
  gpu::apply_device_profile(base, *gpu::find_device_profile("android-baseline-2022"));
  CHECK(!base.subgroup_size_control);
  CHECK(!base.vulkan_memory_model);

  ContextOptions o;
  o.validation = 1;
  o.device_profile = "no-such-profile";
  auto bad = Context::create(o);
  REQUIRE(!bad.ok());
  CHECK(bad.status().code() == Code::invalid_argument);
  for (const auto& p : all) CHECK(bad.status().message().find(p.name) != std::string::npos);
}

TEST_CASE("the footprint reader: workgroup sizes and shared memory as specialized") {
  // linear.comp: 16 x 16 threads, two shared float tiles As, Bs [BK][TILE + 4].
  const gpu::ShaderBinary* lin = gpu::find_shader("linear");
  REQUIRE(lin);
  auto f = gpu::shader_footprint(lin->words, lin->count, "linear", {});
  REQUIRE_MESSAGE(f.ok(), f.status().to_string());
  CHECK(f->local_size[0] == 16);
  CHECK(f->local_size[1] == 16);
  CHECK(f->invocations() == 256);
  CHECK(f->shared_bytes > 0);
  CHECK(f->shared_bytes % (2 * 4) == 0);
  // layer_norm.comp: 64 threads, shared float red[64].
  const gpu::ShaderBinary* ln = gpu::find_shader("layer_norm");
  REQUIRE(ln);
  auto g = gpu::shader_footprint(ln->words, ln->count, "layer_norm", {});
  REQUIRE(g.ok());
  CHECK(g->invocations() == 64);
  CHECK(g->shared_bytes == 256);
  // Every shader of the build (the registry: hand-written kernels, the variants of
  // shaders/variants.cmake and their packed copies) is readable with its default specialization.
  int shaders = 0;
  for (const gpu::ShaderBinary* b = gpu::all_shaders(); b->name; ++b, ++shaders) {
    const std::string name = b->name;
    CAPTURE(name);
    auto fp = gpu::shader_footprint(b->words, b->count, name.c_str(), {});
    CHECK_MESSAGE(fp.ok(), fp.status().to_string());
    // Every push block fits the 128 bytes every Vulkan device allows: no kernel is refused for it.
    auto iface = gpu::reflect_shader(b->words, b->count, name.c_str());
    REQUIRE(iface.ok());
    CHECK(iface->push_bytes <= 128);
  }
  CHECK(shaders >= 90);  // 52 kernels and 41 packed copies when this was written
}

TEST_CASE("every kernel's declared capabilities and extensions against a faked device: all checked, each refused without its feature") {
  // A device with every optional feature the kernels use, enabled.
  gpu::Capabilities all;
  all.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                     VK_SUBGROUP_FEATURE_BALLOT_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT |
                     VK_SUBGROUP_FEATURE_SHUFFLE_RELATIVE_BIT | VK_SUBGROUP_FEATURE_CLUSTERED_BIT |
                     VK_SUBGROUP_FEATURE_QUAD_BIT;
  all.storage_16bit = all.shader_float16 = all.shader_float64 = all.shader_int64 = true;
  all.vulkan_memory_model = all.vulkan_memory_model_device_scope = true;
  all.coopmat_nv = true;
  all.coopmat_khr_block = 16;
  all.coopmat_nv2 = all.maintenance4 = true;
  all.spirv_version = 0x10600;
  all.instance_api_version = all.api_version = VK_API_VERSION_1_3;
  // Each feature off in turn: a copy of `all` without it.
  // Each feature off in turn, and the capability that needs it (the module must be refused exactly
  // when it declares that capability).
  using spv = uint32_t;
  namespace sc = gpu::spv_cap;
  struct Drop {
    const char* feature;
    spv cap;
    void (*off)(gpu::Capabilities&);
  };
  const Drop drops[] = {
      {"shaderFloat16", sc::Float16, [](gpu::Capabilities& c) { c.shader_float16 = false; }},
      {"shaderFloat64", sc::Float64, [](gpu::Capabilities& c) { c.shader_float64 = false; }},
      {"shaderInt64", sc::Int64, [](gpu::Capabilities& c) { c.shader_int64 = false; }},
      {"storageBuffer16BitAccess", sc::StorageBuffer16BitAccess, [](gpu::Capabilities& c) { c.storage_16bit = false; }},
      {"vulkanMemoryModel", sc::VulkanMemoryModel, [](gpu::Capabilities& c) { c.vulkan_memory_model = false; }},
      {"VK_NV_cooperative_matrix", sc::CooperativeMatrixNV, [](gpu::Capabilities& c) { c.coopmat_nv = false; }},
      {"VK_KHR_cooperative_matrix", sc::CooperativeMatrixKHR, [](gpu::Capabilities& c) { c.coopmat_khr_block = 0; }},
      {"VK_NV_cooperative_matrix2", sc::CooperativeMatrixPerElementOperationsNV,
       [](gpu::Capabilities& c) { c.coopmat_nv2 = false; }},
      {"subgroup clustered operations", sc::GroupNonUniformClustered,
       [](gpu::Capabilities& c) { c.subgroup_ops &= ~VK_SUBGROUP_FEATURE_CLUSTERED_BIT; }},
      {"subgroup shuffle", sc::GroupNonUniformShuffle,
       [](gpu::Capabilities& c) { c.subgroup_ops &= ~VK_SUBGROUP_FEATURE_SHUFFLE_BIT; }},
      {"subgroup arithmetic", sc::GroupNonUniformArithmetic,
       [](gpu::Capabilities& c) { c.subgroup_ops &= ~VK_SUBGROUP_FEATURE_ARITHMETIC_BIT; }},
      {"subgroup basic operations", sc::GroupNonUniform,
       [](gpu::Capabilities& c) { c.subgroup_ops &= ~VK_SUBGROUP_FEATURE_BASIC_BIT; }},
  };
  auto declares = [](const gpu::ShaderFootprint& f, uint32_t cap) {
    return std::find(f.capabilities.begin(), f.capabilities.end(), cap) != f.capabilities.end();
  };
  int kernels = 0, matrices = 0, lanes = 0;
  for (const gpu::ShaderBinary* b = gpu::all_shaders(); b->name; ++b, ++kernels) {
    const std::string name = b->name;
    CAPTURE(name);
    auto fp = gpu::shader_footprint(b->words, b->count, name.c_str(), {});
    REQUIRE(fp.ok());
    // Nothing any kernel declares is unknown to the check.
    Status ok = gpu::check_capabilities(all, name.c_str(), fp->capabilities, fp->extensions);
    CHECK_MESSAGE(ok.ok(), ok.to_string());
    // Each feature a kernel uses refuses it when off, naming the feature; one it does not use is
    // never asked for.
    for (const Drop& d : drops) {
      CAPTURE(d.feature);
      gpu::Capabilities c = all;
      d.off(c);
      Status s = gpu::check_capabilities(c, name.c_str(), fp->capabilities, fp->extensions);
      CHECK(s.ok() == !declares(*fp, d.cap));
      if (!s.ok()) {
        CHECK(s.code() == Code::unsupported);
        CHECK(s.message().find(d.feature) != std::string::npos);
      }
    }
    const bool matrix = name.find("_tile_cm") != std::string::npos && name.find("_emu") == std::string::npos;
    const bool khr = name.find("_tile_ck") != std::string::npos || name.find("_tile_pe") != std::string::npos;
    if (matrix || khr) {
      ++matrices;
      // The cooperative-matrix modules declare the Vulkan memory model: refused without it (the
      // context enables it where the device has it).
      CHECK(declares(*fp, gpu::spv_cap::VulkanMemoryModel));
      gpu::Capabilities c = all;
      c.vulkan_memory_model = false;
      CHECK(!gpu::check_capabilities(c, name.c_str(), fp->capabilities, fp->extensions).ok());
      CHECK(declares(*fp, matrix ? gpu::spv_cap::CooperativeMatrixNV : gpu::spv_cap::CooperativeMatrixKHR));
    }
    if (name.find("_sg") != std::string::npos) CHECK(declares(*fp, gpu::spv_cap::GroupNonUniformClustered));
    if (name.find("_sx") != std::string::npos) CHECK(declares(*fp, gpu::spv_cap::GroupNonUniformShuffle));
    // Exactly the subgroup-lane layouts number their threads by lanes (full subgroups required).
    const bool lane_layout = name.find("_sg") != std::string::npos || name.find("_sx") != std::string::npos ||
                             name.find("_tile_c") != std::string::npos || name.find("_tile_pe") != std::string::npos;
    CHECK(fp->numbers_subgroup_lanes == lane_layout);
    lanes += fp->numbers_subgroup_lanes;
  }
  CHECK(matrices >= 4);
  CHECK(lanes >= 20);
  MESSAGE(kernels << " kernels checked, " << matrices << " on cooperative matrices, " << lanes
                  << " numbering subgroup lanes");
  // An unknown capability or extension is refused, not waved through.
  Status u = gpu::check_capabilities(all, "made_up", {gpu::spv_cap::Shader, gpu::spv_cap::StorageBuffer8BitAccess}, {});
  CHECK(!u.ok());
  CHECK(u.message().find("does not check") != std::string::npos);
  u = gpu::check_capabilities(all, "made_up", {gpu::spv_cap::Shader}, {"SPV_KHR_made_up"});
  CHECK(!u.ok());
  CHECK(u.message().find("SPV_KHR_made_up") != std::string::npos);
}

TEST_CASE("a SPIR-V 1.6 kernel needs Vulkan 1.3 of both the instance and the device, and maintenance4") {
  const gpu::ShaderBinary* b = gpu::find_shader("rfa_attention_tile_pe");
  if (!b) {
    MESSAGE("skipped: this build has no *_tile_pe kernels (glslang 15: scripts/install-deps.sh mesa26)");
    return;
  }
  auto fp = gpu::shader_footprint(b->words, b->count, b->name, {128});  // (constant 0: the workgroup)
  REQUIRE(fp.ok());
  CHECK(fp->invocations() == 128);
  CHECK(fp->spirv_version == 0x10600u);
  CHECK(fp->local_size_id);
  gpu::Capabilities c;  // a device that takes everything else the kernel needs
  c.max_shared_memory = 65536;
  c.max_workgroup_invocations = 1024;
  c.max_workgroup_size[0] = 1024;
  c.subgroup_size = c.min_subgroup_size = c.max_subgroup_size = 32;
  c.subgroup_size_control = true;
  c.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  c.shader_float16 = c.vulkan_memory_model = true;
  c.coopmat_khr_block = 16;
  c.coopmat_nv2 = c.maintenance4 = true;
  c.api_version = c.instance_api_version = VK_API_VERSION_1_3;
  c.spirv_version = gpu::spirv_version_of(VK_API_VERSION_1_3);
  Status ok = gpu::check_footprint(c, b->name, *fp);
  CHECK_MESSAGE(ok.ok(), ok.to_string());
  // An instance of Vulkan 1.1 on a 1.3 device: SPIR-V up to 1.3.
  gpu::Capabilities old = c;
  old.instance_api_version = VK_API_VERSION_1_1;
  old.spirv_version = gpu::spirv_version_of(VK_API_VERSION_1_1);
  Status s = gpu::check_footprint(old, b->name, *fp);
  CHECK(!s.ok());
  CHECK(s.message().find("SPIR-V 1.6") != std::string::npos);
  CHECK(s.message().find("the instance's 1.1") != std::string::npos);
  CHECK(gpu::spirv_version_of(VK_API_VERSION_1_2) == 0x10500u);
  gpu::Capabilities no_m4 = c;
  no_m4.maintenance4 = false;
  s = gpu::check_footprint(no_m4, b->name, *fp);
  CHECK(!s.ok());
  CHECK(s.message().find("maintenance4") != std::string::npos);
}

TEST_CASE("the pipeline layer refuses a kernel beyond the limits, naming the limit") {
  auto ctx = make_context("vulkan-minimum");
  gpu::Context& g = gpu_of(*ctx);
  CHECK(g.caps().profile == "vulkan-minimum");
  CHECK(g.caps().max_storage_buffers_per_stage <= 4);
  CHECK(ctx->capabilities_summary().find("device profile: vulkan-minimum") != std::string::npos);
  // The tiled linear kernel is 256 invocations: the 128 of the minimum refuse it.
  struct LinearPush {  // shaders/common/push_layouts.h
    uint32_t M, N, K, has_bias;
  };
  auto p = g.pipelines().get<LinearPush>("linear");
  REQUIRE(!p.ok());
  CHECK(p.status().code() == Code::unsupported);
  CHECK(p.status().message().find("maxComputeWorkGroupInvocations") != std::string::npos);
  CHECK(p.status().message().find("vulkan-minimum") != std::string::npos);
  // The fused attention kernel binds 19 storage buffers, more than the minimum's 4 per stage: the
  // context packs bindings (one arena buffer, an offset table), so the kernel is not refused ...
  CHECK(g.caps().packed_bindings);
  CHECK(gpu::check_shader_interface(g.caps(), "rfa_attention").ok());
  // ... while a device that could not pack (no host-visible memory for the arena) refuses it,
  // naming the limit; the same device without a profile binds it as written.
  gpu::Capabilities no_arena = g.caps();
  no_arena.packed_bindings = false;
  Status s = gpu::check_shader_interface(no_arena, "rfa_attention");
  REQUIRE(!s.ok());
  CHECK(s.message().find("maxPerStageDescriptorStorageBuffers") != std::string::npos);
  CHECK(gpu::check_shader_interface(test::gpu().caps(), "rfa_attention").ok());
  // (the suite's own context packs exactly when its device, or the profile it runs under, needs it)
  CHECK(test::gpu().caps().packed_bindings ==
        (test::gpu().caps().max_storage_buffers_per_stage < gpu::most_storage_buffers()));
}

TEST_CASE("packed bindings: every kernel with more storage buffers than 4 has a packed variant of 2 bindings") {
  // cmake/pack_bindings.py writes one for every shader beyond the Vulkan minimum; the variant binds
  // the arena (storage, 0) and the offset table (uniform, 1), with the plain kernel's push block.
  int packed = 0;
  for (const gpu::ShaderBinary* b = gpu::all_shaders(); b->name; ++b) {
    const std::string name = b->name;
    if (name.size() > 7 && name.compare(name.size() - 7, 7, "_packed") == 0) continue;
    auto plain = gpu::reflect_shader(b->words, b->count, b->name);
    REQUIRE(plain.ok());
    if (plain->bindings <= 4) continue;
    CAPTURE(name);
    const gpu::ShaderBinary* v = gpu::find_shader((name + gpu::kPackedSuffix).c_str());
    REQUIRE(v != nullptr);
    auto iface = gpu::reflect_shader(v->words, v->count, v->name);
    REQUIRE(iface.ok());
    CHECK(iface->bindings == 2);
    CHECK(iface->push_bytes == plain->push_bytes);
    CHECK(plain->bindings <= gpu::kPackedMaxSlots);
    ++packed;
  }
  CHECK(packed >= 20);
  CHECK(gpu::most_storage_buffers() >= 19);
}

TEST_CASE("packed bindings on the real device (ContextOptions): the same outputs; a full arena is refused naming it") {
  auto m = load_model_dir(test::source_dir() + "/models/spiral-filter");
  REQUIRE(m.ok());
  const ModelInfo info = model_info(**m);
  const int N = 70;  // past the model's window of 50: the ring and its wrap-around run packed too
  std::vector<float> x((size_t)N * info.input_dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (float)std::sin(0.29 * (double)i) + 0.1f * (float)(i % 7);
  auto run_session = [&](Context& ctx, bool stream) {
    SessionOptions so;
    so.max_context = N;
    auto s = Session::create(ctx, *m, so);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    std::vector<float> out;
    if (stream) {
      for (int i = 0; i < N; ++i) {
        std::vector<float> xi(x.begin() + (ptrdiff_t)i * info.input_dim, x.begin() + (ptrdiff_t)(i + 1) * info.input_dim);
        Status st = (*s)->step_values(xi, {});
        REQUIRE_MESSAGE(st.ok(), st.to_string());
        const std::vector<float> o = (*s)->outputs();
        out.insert(out.end(), o.begin(), o.end());
      }
    } else {
      Status st = (*s)->prefill_values(x, N, {});
      REQUIRE_MESSAGE(st.ok(), st.to_string());
      out = (*s)->outputs();
    }
    return out;
  };
  auto packed = make_context("", 0, 4);
  CHECK(gpu_of(*packed).caps().packed_bindings);
  CHECK(gpu_of(*packed).caps().max_storage_buffers_per_stage == 4);
  CHECK(gpu_of(*packed).caps().packed_arena_bytes > 0);
  CHECK(gpu_of(*packed).caps().packed_arena_bytes <= gpu_of(*packed).caps().max_storage_buffer_range);
  for (bool stream : {false, true}) {
    CAPTURE(stream);
    const std::vector<float> plain = run_session(test::context(), stream), pk = run_session(*packed, stream);
    REQUIRE(plain.size() == pk.size());
    REQUIRE(!plain.empty());
    for (size_t i = 0; i < plain.size(); ++i) {
      CAPTURE(i);
      REQUIRE(std::abs(plain[i] - pk[i]) <= 1e-5 + 1e-5 * std::abs(plain[i]));
    }
  }
  // The arena is one descriptor's worth of memory at most (here a 2 MiB range): a session whose
  // tensors each fit one descriptor but not all together is refused when it is created, naming
  // the arena and why there is one.
  auto small = make_context("", 2u << 20, 4);
  CHECK(gpu_of(*small).caps().packed_arena_bytes == (2u << 20));
  SessionOptions so;
  so.max_context = 4096;
  so.window = -1;
  auto s = Session::create(*small, *m, so);
  REQUIRE(!s.ok());
  INFO(s.status().to_string());
  CHECK(s.status().code() == Code::out_of_memory);
  CHECK(s.status().message().find("packed-binding arena") != std::string::npos);
  CHECK(s.status().message().find("maxPerStageDescriptorStorageBuffers") != std::string::npos);
}

TEST_CASE("every zoo model under vulkan-minimum and the Android baseline runs with the same numbers") {
  const std::string dir = test::temp_dir("profiles-zoo");
  int ran = 0, refused = 0;
  for (const auto& e : fs::directory_iterator(test::source_dir() + "/models")) {
    if (!fs::exists(e.path() / "config.json")) continue;
    const std::string name = e.path().filename().string();
    CAPTURE(name);
    auto m = load_model_dir(e.path().string());
    REQUIRE_MESSAGE(m.ok(), m.status().to_string());
    const ModelInfo info = model_info(**m);
    std::string input;
    if (info.architecture == "lm") {
      input = "--prompt 'The filter '";
    } else {
      std::vector<float> x((size_t)24 * info.input_dim);
      for (size_t i = 0; i < x.size(); ++i) x[i] = (float)std::sin(0.37 * (double)i);
      const std::string sig = dir + "/" + name + "-signal.npy";
      REQUIRE(write_npy_f32(sig, {24, info.input_dim}, x).ok());
      input = "--signal " + sig;
    }
    const std::string base = dir + "/" + name + "-base";
    std::string err;
    REQUIRE_MESSAGE(run("--model " + e.path().string() + " " + input + " --dump " + base, &err) == 0, err);
    // The Android baseline 2022 has the same compute limits as the Vulkan 1.1 minimum
    // (docs/device-profiles.md): 4 storage buffers per stage, so the attention kernels run packed.
    for (const std::string profile : {"vulkan-minimum", "android-baseline-2022"}) {
      CAPTURE(profile);
      const std::string prof = dir + "/" + name + "-" + profile;
      const int rc = run("--model " + e.path().string() + " " + input + " --dump " + prof + " --device-profile " +
                             profile, &err);
      INFO("rfa-run said: " << err);
      CHECK(rc == 0);
      if (rc == 0) {
        ++ran;
        auto a = load(base + "/output.npy"), b = load(prof + "/output.npy");
        REQUIRE(a.size() == b.size());
        for (size_t i = 0; i < a.size(); ++i) {
          CAPTURE(i);
          REQUIRE(std::abs(a[i] - b[i]) <= 1e-4 + 1e-4 * std::abs(a[i]));
        }
      } else {
        ++refused;
        INFO("rfa-run said: " << err);
        CHECK(rc == 5);
        CHECK(names_a_limit(err));
        CHECK(err.find(profile) != std::string::npos);
        CHECK(err.find("cannot run the model") != std::string::npos);  // refused at session creation
        CHECK(err.find("validation") == std::string::npos);
        CHECK(!fs::exists(prof + "/output.npy"));
      }
      MESSAGE(name << " under " << profile << (rc == 0 ? ": runs, same outputs" : ": refused: " + err));
    }
  }
  CHECK(ran >= 8);
  CHECK(refused == 0);
}

TEST_CASE("rfa-run --device-profile: list names every profile, an unknown name is a usage error") {
  const std::string log = test::temp_dir("profiles-list") + "/out.txt";
  REQUIRE(test::run_tool("rfa-run", "--device-profile list", log) == 0);
  const std::string listed = read_text(log);
  for (const auto& p : gpu::device_profiles()) CHECK(listed.find(p.name) != std::string::npos);
  std::string err;
  CHECK(run("--device-profile no-such-device --self-check", &err) == 2);
  CHECK(err.find("android-baseline-2022") != std::string::npos);
  // The profile travels through RFA_DEVICE_PROFILE as well.
  const std::string out = test::temp_dir("profiles-env") + "/out.txt";
  {
    test::ScopedEnv profile("RFA_DEVICE_PROFILE", "intel-uhd-620");
    REQUIRE(test::run_tool("rfa-run", "--self-check", out) == 0);
  }
  CHECK(read_text(out).find("intel-uhd-620") != std::string::npos);
}

TEST_CASE("maxStorageBufferRange on the real device, no profile: rfa-run refuses caches beyond it with exit 5") {
  // tiny-char-lm's query cache holds 768 bytes per position (d_k_total 96 complex f32; at least the
  // 512 assumed below): 600000 positions need 440 MiB in one descriptor, more than any device's range
  // we run on (lavapipe: 128 MiB; desktop GPUs: 4 GiB - 1 would take 5.6 million positions, so the
  // test reads the device's own limit first).
  const uint64_t range = test::gpu().caps().max_storage_buffer_range;
  const uint64_t positions = range / 512 + 100000;
  std::string err;
  const int rc = run("--model " + test::source_dir() + "/models/tiny-char-lm --prompt 'The ' --max-context " +
                         std::to_string(positions), &err);
  INFO("rfa-run said: " << err);
  CHECK(rc == 5);
  CHECK(err.find("maxStorageBufferRange") != std::string::npos);
  CHECK(err.find("cache") != std::string::npos);
}

TEST_CASE("maxStorageBufferRange lowered by ContextOptions: caches beyond it are refused naming it") {
  auto m = load_model_dir(test::source_dir() + "/models/spiral-filter");
  REQUIRE(m.ok());
  const ModelInfo info = model_info(**m);
  const uint64_t range = 1 << 20;  // 1 MiB per descriptor: lavapipe's own is 128 MiB
  // A 65536-position cache does not fit in one descriptor's range: refused when the session is
  // created (rfa-run: exit 5), the limit named.
  {
    auto ctx = make_context("", range);
    CHECK(gpu_of(*ctx).caps().max_storage_buffer_range == range);
    SessionOptions so;
    so.max_context = 65536;
    so.window = -1;
    auto s = Session::create(*ctx, *m, so);
    REQUIRE(!s.ok());
    CHECK(s.status().code() == Code::out_of_memory);
    CHECK(s.status().message().find("maxStorageBufferRange") != std::string::npos);
  }
  // A session that fits runs with the numbers of the unrestricted device.
  const int N = 40;
  std::vector<float> x((size_t)N * info.input_dim);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (float)std::cos(0.21 * (double)i);
  auto outputs = [&](uint64_t r) {
    auto ctx = make_context("", r);
    SessionOptions so;
    so.max_context = N;
    so.window = -1;
    auto s = Session::create(*ctx, *m, so);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    Status st = (*s)->prefill_values(x, N, {});
    REQUIRE_MESSAGE(st.ok(), st.to_string());
    return (*s)->outputs();
  };
  const std::vector<float> whole = outputs(0), limited = outputs(range);
  REQUIRE(whole.size() == limited.size());
  for (size_t i = 0; i < whole.size(); ++i) {
    CAPTURE(i);
    REQUIRE(std::abs(whole[i] - limited[i]) <= 1e-5 + 1e-5 * std::abs(whole[i]));
  }
}
