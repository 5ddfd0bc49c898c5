// Writes RGBA8 pixels as a PNG (stb_image_write).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace viewer {
bool write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba);
}
