#include "test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "rfa/environment.hpp"
#include "core/access.hpp"
#include "hold_driver.hpp"

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
#else
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
extern char** environ;
#endif

namespace rfa::test {
namespace {
std::atomic<uint64_t> g_messages{0};
std::mutex g_mutex;
std::vector<std::pair<std::string, std::unique_ptr<rfa::Context>>> g_contexts;  // by kernel options

// Every field: two paths that differ in any option must not share a context (a context created for
// the cooperative tile once served a later request for the shared-memory key tiles, and the
// reverse, whichever came first).
std::string key_of(const KernelOptions& k) {
  return k.linear + "|" + std::to_string(k.attention_direct_kv) + "|" + std::to_string(k.attention_lag_table) + "|" +
         std::to_string(k.attention_split_k) + "|" + std::to_string(k.attention_tile) + "|" +
         std::to_string(k.attention_f16_math) + "|" + std::to_string(k.attention_coopmat) + "|" +
         std::to_string(k.push_descriptors);
}
}  // namespace

bool validation_enabled() {
  static const bool enabled = [] {
    if (environment_variable("RFA_TEST_VALIDATION") == "off") {
      std::fprintf(stderr, "rfa tests: RFA_TEST_VALIDATION=off: running WITHOUT the Vulkan validation layer "
                           "(none on this platform); validation checks are skipped\n");
      return false;
    }
    return true;
  }();
  return enabled;
}

int validation_option() { return validation_enabled() ? 1 : 0; }

rfa::Context& context(const KernelOptions& kernels) { return context(kernels, ""); }

rfa::Context& context(const KernelOptions& kernels, const std::string& device_profile) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const std::string key = key_of(kernels) + "|" + device_profile;
  for (auto& [k, c] : g_contexts)
    if (k == key) return *c;
  // RFA_DEVICE, and RFA_DEVICE_PROFILE for CTest's per-profile variants (tests/CMakeLists.txt), read
  // here through the programs' helper (rfa/environment.hpp): the library reads no environment.
  hold_vulkan_driver_loaded();  // hold_driver.hpp: leak checking without suppressions
  ContextOptions o = context_options_from_environment();
  if (!device_profile.empty()) o.device_profile = device_profile;
  o.validation = validation_option();  // tests run under the Khronos validation layer wherever there is one
  o.kernels = kernels;
  o.on_message = [](MessageSeverity sev, const char* msg) {
    if (sev < MessageSeverity::warning) return;
    g_messages.fetch_add(1);
    std::string text = std::string("Vulkan validation message: ") + msg;
    ADD_FAIL_CHECK_AT(__FILE__, __LINE__, text);
  };
  auto c = rfa::Context::create(o);
  if (!c) {
    std::fprintf(stderr, "cannot create the test Vulkan context: %s\n", c.status().to_string().c_str());
    std::exit(1);
  }
  g_contexts.emplace_back(key, c.take());
  return *g_contexts.back().second;
}

rfa::Context& context() {
  static const KernelOptions from_env = kernel_options_from_environment();
  return context(from_env);
}

gpu::Context& gpu() { return gpu_of(context()); }
uint64_t validation_messages() { return g_messages.load(); }
void shutdown() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_contexts.clear();
}

gpu::Buffer upload(const std::vector<float>& data, const char* label) {
  auto b = gpu().upload_new(data, label);
  REQUIRE_MESSAGE(b.ok(), b.status().to_string());
  return b.take();
}

gpu::Buffer zeros(size_t floats, const char* label) { return upload(std::vector<float>(floats, 0.0f), label); }

std::vector<float> download(const gpu::Buffer& b, size_t floats) {
  std::vector<float> out(floats);
  Status s = gpu().download(b, out.data(), floats * 4);
  REQUIRE_MESSAGE(s.ok(), s.to_string());
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double max_violation(const std::vector<float>& g, const std::vector<double>& r, double atol, double rtol,
                     size_t* where) {
  double worst = 0;
  size_t wi = 0;
  if (g.size() != r.size()) {
    if (where) *where = 0;
    return 1e30;
  }
  for (size_t i = 0; i < g.size(); ++i) {
    double err = std::fabs((double)g[i] - r[i]);
    double v = err / (atol + rtol * std::fabs(r[i]));
    if (!std::isfinite((double)g[i]) || std::isnan(v)) v = 1e30;
    if (v > worst) {
      worst = v;
      wi = i;
    }
  }
  if (where) *where = wi;
  return worst;
}

std::string source_dir() {
  if (std::string s = environment_variable("RFA_SOURCE_DIR"); !s.empty()) return s;
  return RFA_SOURCE_DIR;
}

std::string temp_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const std::string build = environment_variable("RFA_BUILD_DIR");
  fs::path base = !build.empty() ? fs::path(build) / "test-tmp" : fs::temp_directory_path() / "rfa-test-tmp";
  // A suite also runs under device profiles, on the newer driver and in shards (tests/CMakeLists.txt),
  // maybe at the same time as itself: each such run gets its own folder.
  std::string folder = name;
  const std::string profile = environment_variable("RFA_DEVICE_PROFILE");
  if (!profile.empty()) folder += "-" + profile;
  const std::string launcher = environment_variable("RFA_TEST_LAUNCHER");  // .drivers/<driver>/run
  if (!launcher.empty()) folder += "-" + fs::path(launcher).parent_path().filename().string();
  std::string shard = environment_variable("RFA_TEST_SHARD");  // k/n
  std::replace(shard.begin(), shard.end(), '/', 'o');
  if (!shard.empty()) folder += "-shard" + shard;
  fs::path p = base / folder;
  std::error_code ec;
  fs::remove_all(p, ec);
  fs::create_directories(p, ec);
  return p.string();
}

void set_env(const char* name, const char* value) {
#if defined(_WIN32)
  _putenv_s(name, value ? value : "");  // "" removes the variable on Windows
#else
  if (value) setenv(name, value, 1);
  else unsetenv(name);
#endif
}

ScopedEnv::ScopedEnv(const char* name, const char* value) : name_(name) {
  if (const char* old = std::getenv(name)) {
    had_ = true;
    old_ = old;
  }
  set_env(name, value);
}

ScopedEnv::~ScopedEnv() { set_env(name_.c_str(), had_ ? old_.c_str() : nullptr); }

namespace {

std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false, quoted = false;
  for (char c : s) {
    if (c == '\'') {
      quoted = !quoted;
      in_word = true;
    } else if (c == ' ' && !quoted) {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

#if defined(_WIN32)
std::wstring widen(const std::string& utf8) {
  if (utf8.empty()) return L"";
  int n = ::MultiByteToWideChar(CP_UTF8, 0, utf8.data(), (int)utf8.size(), nullptr, 0);
  std::wstring w((size_t)n, L'\0');
  ::MultiByteToWideChar(CP_UTF8, 0, utf8.data(), (int)utf8.size(), w.data(), n);
  return w;
}

// One argument as CommandLineToArgvW reads it back: quotes around, backslashes before a quote doubled.
std::wstring quote_arg(const std::wstring& a) {
  if (!a.empty() && a.find_first_of(L" \t\"") == std::wstring::npos) return a;
  std::wstring q = L"\"";
  size_t backslashes = 0;
  for (wchar_t c : a) {
    if (c == L'\\') {
      ++backslashes;
    } else {
      if (c == L'"') q.append(backslashes + 1, L'\\');
      backslashes = 0;
    }
    q += c;
  }
  q.append(backslashes, L'\\');
  return q + L"\"";
}

HANDLE open_for_child(const std::string& path) {
  SECURITY_ATTRIBUTES sa{sizeof sa, nullptr, TRUE};  // inherited by the child
  return ::CreateFileW(path.empty() ? L"NUL" : widen(path).c_str(), GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
                       &sa, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
}
#endif

}  // namespace

bool under_wine() {
#if defined(_WIN32)
  HMODULE ntdll = ::GetModuleHandleA("ntdll.dll");
  return ntdll && ::GetProcAddress(ntdll, "wine_get_version") != nullptr;
#else
  return false;
#endif
}

std::string tool_path(const std::string& name) {
  const std::string b = environment_variable("RFA_BUILD_DIR");
#if defined(_WIN32)
  return (std::filesystem::path(b.empty() ? "." : b) / (name + ".exe")).string();
#else
  return (std::filesystem::path(b.empty() ? "." : b) / name).string();
#endif
}

bool shard_takes(size_t item) {
  const std::string v = environment_variable("RFA_TEST_SHARD");
  if (v.empty()) return true;
  const size_t slash = v.find('/');
  const long k = std::strtol(v.c_str(), nullptr, 10), n = slash == std::string::npos ? 0 : std::strtol(v.c_str() + slash + 1, nullptr, 10);
  if (k < 1 || n < 1 || k > n) {
    std::fprintf(stderr, "RFA_TEST_SHARD=%s: not k/n with 1 <= k <= n\n", v.c_str());
    std::exit(2);
  }
  return (long)(item % (size_t)n) == k - 1;
}

std::string shard_name() { return environment_variable("RFA_TEST_SHARD"); }

int run_tool(const std::string& name, const std::string& args, const std::string& out, const std::string& err) {
  std::string program = tool_path(name);
  std::vector<std::string> argv = split_args(args);
#if !defined(_WIN32)
  // Through the launcher of the driver the suite runs on (RFA_TEST_LAUNCHER).
  const std::string launcher = environment_variable("RFA_TEST_LAUNCHER");
  if (!launcher.empty()) {
    argv.insert(argv.begin(), program);
    program = launcher;
  }
#endif
  std::fflush(stdout);
  std::fflush(stderr);
#if defined(_WIN32)
  std::wstring cmd = quote_arg(widen(program));
  for (const std::string& a : argv) cmd += L" " + quote_arg(widen(a));
  HANDLE hout = open_for_child(out), herr = open_for_child(err);
  if (hout == INVALID_HANDLE_VALUE || herr == INVALID_HANDLE_VALUE) return -1;
  STARTUPINFOW si{};
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = ::GetStdHandle(STD_INPUT_HANDLE);
  si.hStdOutput = hout;
  si.hStdError = herr;
  PROCESS_INFORMATION pi{};
  BOOL ok = ::CreateProcessW(widen(program).c_str(), cmd.data(), nullptr, nullptr, TRUE, 0, nullptr, nullptr, &si, &pi);
  ::CloseHandle(hout);
  ::CloseHandle(herr);
  if (!ok) return -1;
  ::WaitForSingleObject(pi.hProcess, INFINITE);
  DWORD code = 0;
  ::GetExitCodeProcess(pi.hProcess, &code);
  ::CloseHandle(pi.hProcess);
  ::CloseHandle(pi.hThread);
  return (int)code;
#else
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.empty() ? "/dev/null" : out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err.empty() ? "/dev/null" : err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> cargv;
  cargv.push_back(const_cast<char*>(program.c_str()));
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, program.c_str(), &fa, nullptr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
#endif
}

}  // namespace rfa::test
