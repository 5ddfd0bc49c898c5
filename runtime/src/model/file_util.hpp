// Whole-file reads and atomic writes for the model-loading code (no Vulkan here).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rfa/status.hpp"

namespace rfa {

// Reads the whole file. io_error names the path when it cannot be opened or read.
// max_bytes guards against reading something absurd (a device, a huge file) by mistake.
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path,
                                             uint64_t max_bytes = (uint64_t)1 << 40);
Result<std::string> read_file_text(const std::string& path, uint64_t max_bytes = (uint64_t)1 << 30);

// Writes `bytes` to a temporary file beside `path`, flushes it, then renames it over `path`, so a
// reader never sees a half-written file and a failure leaves nothing behind.
Status write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace rfa
