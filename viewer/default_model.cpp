#include "default_model.hpp"

#include <filesystem>
#include <system_error>

#include "rfa/environment.hpp"

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#endif

namespace viewer {

std::string default_model(const char* argv0) {
  if (std::string e = rfa::environment_variable("RFA_MODEL"); !e.empty()) return e;
  namespace fs = std::filesystem;
  std::error_code ec;
  // The program's own path: argv[0] may be bare (found on PATH) or relative to another folder.
#if defined(_WIN32)
  std::wstring buf(32768, L'\0');
  buf.resize(::GetModuleFileNameW(nullptr, buf.data(), (DWORD)buf.size()));
  const fs::path self(buf);
#else
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0, ec);
#endif
  const fs::path dir = self.parent_path();
  for (const fs::path& p : {dir / ".." / "share" / "rfa" / "models" / "spiral-filter",
                            dir / ".." / ".." / "models" / "spiral-filter"})
    if (fs::exists(p / "config.json", ec)) {
      const std::u8string u8 = fs::weakly_canonical(p, ec).u8string();  // the library takes UTF-8 paths
      return std::string(u8.begin(), u8.end());
    }
  return "";
}

}  // namespace viewer
