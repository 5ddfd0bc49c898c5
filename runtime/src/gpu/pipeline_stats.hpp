// What one compute pipeline costs, as far as it can be read without timing it: a static count of
// its SPIR-V (driver-independent, before specialization and the driver's own optimisation), and
// whatever the driver reports through VK_KHR_pipeline_executable_properties (registers, spills,
// instruction counts: names and meanings are the driver's). `rfa-bench attention --stats` prints both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "rfa/status.hpp"

namespace rfa::gpu {

class Context;
struct Pipeline;

// Static instruction counts of a SPIR-V module. An "instruction" is one executable instruction of a
// function body: OpLabel, OpLine/OpNoLine, function-scope OpVariable, the merge declarations
// (OpSelectionMerge, OpLoopMerge) and OpFunction/OpFunctionParameter/OpFunctionEnd are not counted.
// glslang does not inline, so `inlined` expands every OpFunctionCall into the callee's count (once
// per call site, transitively; SPIR-V has no recursion): the entry point's straight-line length.
// A loop is the blocks from an OpLoopMerge's header up to its merge block (glslang lays loops out
// contiguously); innermost: no loop header inside it and no call to a function that has a loop.
// Loops the shader marks [[unroll]] (the per-dimension loops over D, a specialization constant the
// driver unrolls) are not loops for that test: their bodies count once inside their parent, so the
// fused kernels' innermost loop is the per-key loop, whose count is the static cost of one pair
// with one iteration of each per-dimension loop.
struct SpirvCounts {
  uint32_t functions = 0;       // OpFunction definitions
  uint32_t instructions = 0;    // over every function body
  uint32_t inlined = 0;         // the entry point with calls expanded
  uint32_t loops = 0;           // OpLoopMerge headers over every function
  uint32_t innermost_loop = 0;  // the largest innermost loop body, calls expanded (0: no loop)
};
// Error: not SPIR-V (bad magic, an instruction running past the end, no entry point).
Result<SpirvCounts> count_spirv(const uint32_t* words, size_t count);

struct ExecutableStatistic {
  enum class Kind { boolean, int64, uint64, float64 } kind = Kind::uint64;
  std::string name, description;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string text() const;  // the value as printed (JSON-compatible: true/false, a number, null if not finite)
};

struct PipelineExecutable {
  std::string name, description;
  uint32_t subgroup_size = 0;
  std::vector<ExecutableStatistic> statistics;
};

struct PipelineStatistics {
  std::string shader;
  std::vector<uint32_t> spec;
  SpirvCounts spirv;
  bool exposed = false;  // the driver's statistics were read (executables below)
  std::string note;      // when not exposed: why ("statistics: not exposed by <driver>", not asked for)
  std::vector<PipelineExecutable> executables;
};

// The SPIR-V counts of the pipeline's shader and, where the context captures statistics
// (ContextOptions::capture_pipeline_statistics on a device with the extension), the driver's.
Result<PipelineStatistics> pipeline_statistics(Context& ctx, const Pipeline& p);

}  // namespace rfa::gpu
