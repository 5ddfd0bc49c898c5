#include "model/file_util.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <unistd.h>

namespace rfa {

namespace {

std::string errno_text() { return std::strerror(errno); }

// A FILE* that closes itself.
struct File {
  std::FILE* f = nullptr;
  ~File() {
    if (f) std::fclose(f);
  }
};

}  // namespace

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return make_error(Code::io_error, path + ": is a directory, a file was expected");
  File file;
  file.f = std::fopen(path.c_str(), "rb");
  if (!file.f) return make_error(Code::io_error, path + ": cannot open: " + errno_text());
  if (std::fseek(file.f, 0, SEEK_END) != 0)
    return make_error(Code::io_error, path + ": cannot seek: " + errno_text());
  long end = std::ftell(file.f);
  if (end < 0) return make_error(Code::io_error, path + ": cannot tell size: " + errno_text());
  if ((uint64_t)end > max_bytes)
    return make_error(Code::io_error, path + ": file is " + std::to_string(end) +
                                          " bytes, more than the limit of " +
                                          std::to_string(max_bytes));
  std::rewind(file.f);
  std::vector<uint8_t> bytes((size_t)end);
  if (end > 0 && std::fread(bytes.data(), 1, bytes.size(), file.f) != bytes.size())
    return make_error(Code::io_error, path + ": short read");
  return bytes;
}

Result<std::string> read_file_text(const std::string& path, uint64_t max_bytes) {
  auto bytes = read_file_bytes(path, max_bytes);
  if (!bytes) return bytes.status();
  return std::string(bytes->begin(), bytes->end());
}

Status write_file_atomic(const std::string& path, std::string_view bytes) {
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string((long)::getpid()) + "." +
                          std::to_string(counter.fetch_add(1));
  {
    File file;
    file.f = std::fopen(tmp.c_str(), "wb");
    if (!file.f) return make_error(Code::io_error, tmp + ": cannot create: " + errno_text());
    bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), file.f) == bytes.size();
    ok = ok && std::fflush(file.f) == 0;
    ok = ok && ::fsync(::fileno(file.f)) == 0;
    int close_rc = std::fclose(file.f);
    file.f = nullptr;
    if (!ok || close_rc != 0) {
      std::string why = errno_text();
      std::remove(tmp.c_str());
      return make_error(Code::io_error, path + ": write failed: " + why);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    std::remove(tmp.c_str());
    return make_error(Code::io_error, path + ": cannot rename the temporary file into place: " + why);
  }
  return Status::Ok();
}

}  // namespace rfa
