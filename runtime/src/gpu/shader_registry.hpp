// The SPIR-V compiled at build time (cmake/Shaders.cmake), looked up by the .comp file's name.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rfa::gpu {

struct ShaderBinary {
  const char* name;
  const uint32_t* words;
  size_t count;
};

// nullptr when no shader of that name was compiled into the library.
const ShaderBinary* find_shader(const char* name);
// Every compiled shader, ending with an entry whose name is nullptr.
const ShaderBinary* all_shaders();

// The packed-binding variant of a shader (cmake/pack_bindings.py): "<name>_packed".
constexpr const char* kPackedSuffix = "_packed";

}  // namespace rfa::gpu
