// Whole-file reads and atomic writes for the model-loading code (no Vulkan here).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
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

// Paths are UTF-8 strings everywhere in the runtime. On Windows a narrow path would be read in the
// ANSI code page, so these go through the wide API there (_wfopen); elsewhere they are the plain calls.
std::filesystem::path path_from_utf8(const std::string& utf8);
std::FILE* open_file(const std::string& utf8_path, const char* mode);  // mode: "rb", "wb", ...
// 64-bit offsets on every platform (long and off_t are 32-bit on Windows: 2 GiB files would break).
int seek_file(std::FILE* f, uint64_t offset);  // from the start; 0 on success
int64_t tell_file(std::FILE* f);                // -1 on failure

// Writes `bytes` to a temporary file beside `path`, flushes it, then renames it over `path`, so a
// reader never sees a half-written file and a failure leaves nothing behind. The rename replaces an
// existing file on every platform (on Windows std::rename refuses to: MoveFileExW replaces).
Status write_file_atomic(const std::string& path, std::string_view bytes);

}  // namespace rfa
