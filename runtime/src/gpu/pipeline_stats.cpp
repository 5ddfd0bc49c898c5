#include "gpu/pipeline_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "gpu/context.hpp"
#include "gpu/pipeline.hpp"
#include "gpu/shader_registry.hpp"

namespace rfa::gpu {

namespace {

// The SPIR-V opcodes the count looks at (SPIR-V specification, 3.52).
enum : uint32_t {
  kOpLine = 8,
  kOpEntryPoint = 15,
  kOpFunction = 54,
  kOpFunctionParameter = 55,
  kOpFunctionEnd = 56,
  kOpFunctionCall = 57,
  kOpVariable = 59,
  kOpLoopMerge = 246,
  kOpSelectionMerge = 247,
  kOpLabel = 248,
  kOpNoLine = 317,
};

struct Block {
  uint32_t label = 0;
  uint32_t own = 0;             // counted instructions of the block itself
  std::vector<uint32_t> calls;  // callee function ids, one per call site
  uint32_t merge = 0;           // a loop header's merge block, else 0
  bool unroll = false;          // the loop header asks for unrolling (GLSL [[unroll]]: loop control bit 0x1)
};

struct Function {
  std::vector<Block> blocks;
  uint32_t own = 0;
};

bool counted(uint32_t op) {
  switch (op) {
    case kOpLine: case kOpNoLine: case kOpFunction: case kOpFunctionParameter: case kOpFunctionEnd:
    case kOpVariable: case kOpLoopMerge: case kOpSelectionMerge: case kOpLabel:
      return false;
    default:
      return true;
  }
}

struct Analysis {
  std::map<uint32_t, Function> functions;
  std::map<uint32_t, uint32_t> inlined;  // memo
  std::map<uint32_t, bool> has_loop;     // memo, transitive through calls
  std::string error;

  uint32_t inline_size(uint32_t id, int depth = 0) {
    if (auto it = inlined.find(id); it != inlined.end()) return it->second;
    auto f = functions.find(id);
    if (f == functions.end() || depth > 64) {
      error = f == functions.end() ? "a call to an undefined function" : "calls nested deeper than 64 (recursion?)";
      return 0;
    }
    uint64_t n = f->second.own;
    for (const Block& b : f->second.blocks)
      for (uint32_t c : b.calls) n += inline_size(c, depth + 1);
    const uint32_t r = (uint32_t)std::min<uint64_t>(n, UINT32_MAX);
    inlined[id] = r;
    return r;
  }
  bool loops_in(uint32_t id, int depth = 0) {
    if (auto it = has_loop.find(id); it != has_loop.end()) return it->second;
    auto f = functions.find(id);
    if (f == functions.end() || depth > 64) return false;
    bool any = false;
    for (const Block& b : f->second.blocks) {
      if (b.merge && !b.unroll) any = true;
      for (uint32_t c : b.calls) any = any || loops_in(c, depth + 1);
    }
    has_loop[id] = any;
    return any;
  }
};

std::string text_of(const char* s) { return s ? std::string(s) : std::string(); }

}  // namespace

Result<SpirvCounts> count_spirv(const uint32_t* words, size_t count) {
  if (!words || count < 5 || words[0] != 0x07230203u)
    return Status(Code::invalid_argument, "count_spirv: not a SPIR-V module (no magic number 0x07230203)");
  Analysis a;
  uint32_t entry = 0;
  Function* fn = nullptr;
  Block* block = nullptr;
  for (size_t i = 5; i < count;) {
    const uint32_t n = words[i] >> 16, op = words[i] & 0xffffu;
    if (n == 0 || i + n > count)
      return Status(Code::invalid_argument, "count_spirv: instruction at word " + std::to_string(i) +
                                                " runs past the module's end");
    if (op == kOpEntryPoint && n >= 3 && !entry) entry = words[i + 2];
    if (op == kOpFunction && n >= 3) {
      fn = &a.functions[words[i + 2]];
      block = nullptr;
    } else if (op == kOpFunctionEnd) {
      fn = nullptr;
      block = nullptr;
    } else if (fn) {
      if (op == kOpLabel && n >= 2) {
        fn->blocks.push_back({});
        block = &fn->blocks.back();
        block->label = words[i + 1];
      }
      if (op == kOpLoopMerge && n >= 4 && block) {
        block->merge = words[i + 1];
        block->unroll = (words[i + 3] & 0x1u) != 0;
      }
      if (op == kOpFunctionCall && n >= 4 && block) block->calls.push_back(words[i + 3]);
      if (counted(op)) {
        ++fn->own;
        if (block) ++block->own;
      }
    }
    i += n;
  }
  if (!entry || !a.functions.count(entry))
    return Status(Code::invalid_argument, "count_spirv: the module has no entry point function");
  SpirvCounts c;
  c.functions = (uint32_t)a.functions.size();
  for (const auto& [id, f] : a.functions) c.instructions += f.own;
  c.inlined = a.inline_size(entry);
  for (const auto& [id, f] : a.functions) {
    for (size_t b = 0; b < f.blocks.size(); ++b) {
      if (!f.blocks[b].merge) continue;
      ++c.loops;
      if (f.blocks[b].unroll) continue;  // part of its parent's body (see the header)
      size_t end = b + 1;
      while (end < f.blocks.size() && f.blocks[end].label != f.blocks[b].merge) ++end;
      bool innermost = true;
      uint64_t size = 0;
      for (size_t k = b; k < end; ++k) {
        if (k > b && f.blocks[k].merge && !f.blocks[k].unroll) innermost = false;
        size += f.blocks[k].own;
        for (uint32_t callee : f.blocks[k].calls) {
          if (a.loops_in(callee)) innermost = false;
          size += a.inline_size(callee);
        }
      }
      if (innermost) c.innermost_loop = std::max<uint32_t>(c.innermost_loop, (uint32_t)std::min<uint64_t>(size, UINT32_MAX));
    }
  }
  if (!a.error.empty()) return Status(Code::invalid_argument, "count_spirv: " + a.error);
  return c;
}

std::string ExecutableStatistic::text() const {
  char buf[64];
  switch (kind) {
    case Kind::boolean: return b ? "true" : "false";
    case Kind::int64: return std::to_string(i);
    case Kind::uint64: return std::to_string(u);
    case Kind::float64:
      if (!std::isfinite(f)) return "null";  // JSON has no NaN or infinity
      std::snprintf(buf, sizeof buf, "%.6g", f);
      return buf;
  }
  return "";
}

Result<PipelineStatistics> pipeline_statistics(Context& ctx, const Pipeline& p) {
  PipelineStatistics out;
  out.shader = p.shader;
  out.spec = p.spec;
  const ShaderBinary* bin = find_shader(p.shader.c_str());
  if (!bin) return Status(Code::unsupported, "no compiled shader named '" + p.shader + "' in this build");
  auto counts = count_spirv(bin->words, bin->count);
  if (!counts) return Status(counts.status().code(), p.shader + ": " + counts.status().message());
  out.spirv = *counts;

  const Capabilities& caps = ctx.caps();
  const std::string driver = caps.driver_name + (caps.driver_info.empty() ? "" : " (" + caps.driver_info + ")");
  if (!caps.pipeline_executable_info) {
    out.note = "statistics: not exposed by " + driver + " (no VK_KHR_pipeline_executable_properties" +
               (ctx.owns_device() ? ")" : " enabled on the adopted device)");
    return out;
  }
  if (!p.statistics) {
    out.note = "statistics: not captured (ContextOptions::capture_pipeline_statistics is off)";
    return out;
  }
  VkDevice dev = ctx.device();
  auto get_props = (PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(dev, "vkGetPipelineExecutablePropertiesKHR");
  auto get_stats = (PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR");
  if (!get_props || !get_stats) {
    out.note = "statistics: " + driver + " enabled VK_KHR_pipeline_executable_properties but returns no entry points";
    return out;
  }
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = p.pipeline;
  uint32_t n = 0;
  VkResult r = get_props(dev, &pi, &n, nullptr);
  std::vector<VkPipelineExecutablePropertiesKHR> props(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  if (r == VK_SUCCESS && n) r = get_props(dev, &pi, &n, props.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    out.note = "statistics: vkGetPipelineExecutablePropertiesKHR failed (VkResult " + std::to_string((int)r) + ")";
    return out;
  }
  for (uint32_t e = 0; e < n; ++e) {
    PipelineExecutable ex;
    ex.name = text_of(props[e].name);
    ex.description = text_of(props[e].description);
    ex.subgroup_size = props[e].subgroupSize;
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = p.pipeline;
    ei.executableIndex = e;
    uint32_t m = 0;
    if (get_stats(dev, &ei, &m, nullptr) == VK_SUCCESS && m) {
      std::vector<VkPipelineExecutableStatisticKHR> st(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
      const VkResult rs = get_stats(dev, &ei, &m, st.data());
      if (rs == VK_SUCCESS || rs == VK_INCOMPLETE) {
        for (uint32_t k = 0; k < m; ++k) {
          ExecutableStatistic s;
          s.name = text_of(st[k].name);
          s.description = text_of(st[k].description);
          switch (st[k].format) {
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
              s.kind = ExecutableStatistic::Kind::boolean;
              s.b = st[k].value.b32 == VK_TRUE;
              break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
              s.kind = ExecutableStatistic::Kind::int64;
              s.i = st[k].value.i64;
              break;
            case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
              s.kind = ExecutableStatistic::Kind::float64;
              s.f = st[k].value.f64;
              break;
            default:
              s.kind = ExecutableStatistic::Kind::uint64;
              s.u = st[k].value.u64;
              break;
          }
          ex.statistics.push_back(std::move(s));
        }
      }
    }
    out.executables.push_back(std::move(ex));
  }
  out.exposed = true;
  if (out.executables.empty()) out.note = "statistics: " + driver + " reports no executable for this pipeline";
  return out;
}

}  // namespace rfa::gpu
