#include "model/file_util.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <io.h>
#include <process.h>
#include <windows.h>
#else
#include <unistd.h>
#endif

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

uint64_t process_id() {
#if defined(_WIN32)
  return (uint64_t)::_getpid();
#else
  return (uint64_t)::getpid();
#endif
}

// Pushes the file's data to the disk before the rename makes it visible.
bool sync_file(std::FILE* f) {
#if defined(_WIN32)
  return ::_commit(::_fileno(f)) == 0;
#else
  return ::fsync(::fileno(f)) == 0;
#endif
}

// Renames `from` over `to`, replacing `to` when it exists; "" or why not.
std::string replace_file(const std::string& from, const std::string& to) {
#if defined(_WIN32)
  if (::MoveFileExW(path_from_utf8(from).c_str(), path_from_utf8(to).c_str(),
                    MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH))
    return "";
  return std::system_category().message((int)::GetLastError());
#else
  if (std::rename(from.c_str(), to.c_str()) == 0) return "";
  return errno_text();
#endif
}

}  // namespace

std::filesystem::path path_from_utf8(const std::string& utf8) {
  // C++20: a path made from char8_t text is read as UTF-8 on every platform.
  return std::filesystem::path(std::u8string(utf8.begin(), utf8.end()));
}

std::FILE* open_file(const std::string& utf8_path, const char* mode) {
#if defined(_WIN32)
  std::wstring wmode(mode, mode + std::strlen(mode));
  return ::_wfopen(path_from_utf8(utf8_path).c_str(), wmode.c_str());
#else
  return std::fopen(utf8_path.c_str(), mode);
#endif
}

int seek_file(std::FILE* f, uint64_t offset) {
#if defined(_WIN32)
  return ::_fseeki64(f, (__int64)offset, SEEK_SET);
#else
  return ::fseeko(f, (off_t)offset, SEEK_SET);
#endif
}

int64_t tell_file(std::FILE* f) {
#if defined(_WIN32)
  return (int64_t)::_ftelli64(f);
#else
  return (int64_t)::ftello(f);
#endif
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path_from_utf8(path), ec))
    return make_error(Code::io_error, path + ": is a directory, a file was expected");
  File file;
  file.f = open_file(path, "rb");
  if (!file.f) return make_error(Code::io_error, path + ": cannot open: " + errno_text());
  if (std::fseek(file.f, 0, SEEK_END) != 0)
    return make_error(Code::io_error, path + ": cannot seek: " + errno_text());
  const int64_t end = tell_file(file.f);
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
  const std::string tmp = path + ".tmp." + std::to_string(process_id()) + "." +
                          std::to_string(counter.fetch_add(1));
  {
    File file;
    file.f = open_file(tmp, "wb");
    if (!file.f) return make_error(Code::io_error, tmp + ": cannot create: " + errno_text());
    bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), file.f) == bytes.size();
    ok = ok && std::fflush(file.f) == 0;
    ok = ok && sync_file(file.f);
    int close_rc = std::fclose(file.f);
    file.f = nullptr;
    if (!ok || close_rc != 0) {
      std::string why = errno_text();
      std::error_code ec;
      std::filesystem::remove(path_from_utf8(tmp), ec);
      return make_error(Code::io_error, path + ": write failed: " + why);
    }
  }
  if (std::string why = replace_file(tmp, path); !why.empty()) {
    std::error_code ec;
    std::filesystem::remove(path_from_utf8(tmp), ec);
    return make_error(Code::io_error, path + ": cannot rename the temporary file into place: " + why);
  }
  return Status::Ok();
}

}  // namespace rfa
