#include "screenshot.hpp"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#if __has_include(<stb/stb_image_write.h>)  // Debian's libstb-dev
#include <stb/stb_image_write.h>
#else  // vcpkg's stb: flat in include/
#include <stb_image_write.h>
#endif

namespace viewer {

bool write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba) {
  // Opaque RGB: smaller files, and the UI's alpha is meaningless outside the window.
  std::vector<uint8_t> rgb((size_t)width * height * 3);
  for (size_t i = 0, n = (size_t)width * height; i < n; ++i)
    for (int c = 0; c < 3; ++c) rgb[i * 3 + c] = rgba[i * 4 + c];
  return stbi_write_png(path.c_str(), width, height, 3, rgb.data(), width * 3) != 0;
}

}  // namespace viewer
