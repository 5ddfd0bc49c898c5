// What a pipeline layout needs to know about a compute shader, read from its SPIR-V words: how
// many storage-buffer bindings it declares and how large its push-constant block is. Call sites
// then never state either as a number (issue 9: the layout lives in the shader, or in a header
// the shader shares with the host).
#pragma once

#include <cstddef>
#include <cstdint>

#include "rfa/status.hpp"

namespace rfa::gpu {

struct ShaderInterface {
  uint32_t bindings = 0;    // max Binding decoration (set 0) + 1; 0 when the shader binds nothing
  uint32_t push_bytes = 0;  // size of the push_constant block; 0 when there is none
};

// Fails on words that are not SPIR-V or on a push block member type it cannot size.
Result<ShaderInterface> reflect_shader(const uint32_t* words, size_t count, const char* name);

}  // namespace rfa::gpu
