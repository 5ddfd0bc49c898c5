#include "process_stats.hpp"

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>
// After windows.h, which it needs.
#include <psapi.h>
#else
#include <sys/resource.h>
#if defined(__linux__)
#include <malloc.h>
#endif

#include <cstdio>
#include <ctime>
#include <unistd.h>
#endif

namespace rfa::bench {

#if defined(_WIN32)
namespace {
PROCESS_MEMORY_COUNTERS memory_counters() {
  PROCESS_MEMORY_COUNTERS c{};
  c.cb = sizeof c;
  // K32GetProcessMemoryInfo lives in kernel32 (Windows 7 and later): no psapi.lib to link.
  if (!::K32GetProcessMemoryInfo(::GetCurrentProcess(), &c, sizeof c)) return PROCESS_MEMORY_COUNTERS{};
  return c;
}
double filetime_ms(const FILETIME& t) {
  return (double)(((unsigned long long)t.dwHighDateTime << 32) | t.dwLowDateTime) / 1e4;  // 100 ns units
}
}  // namespace

double peak_rss_mib() { return (double)memory_counters().PeakWorkingSetSize / 1048576.0; }
double rss_mib() { return (double)memory_counters().WorkingSetSize / 1048576.0; }
double heap_in_use_mib() { return 0; }
double heap_held_mib() { return 0; }
double thread_cpu_ms() {
  FILETIME created, exited, kernel, user;
  if (!::GetThreadTimes(::GetCurrentThread(), &created, &exited, &kernel, &user)) return 0;
  return filetime_ms(kernel) + filetime_ms(user);
}
#else
double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
#if defined(__APPLE__)
  return (double)u.ru_maxrss / 1048576.0;  // bytes on macOS
#else
  return (double)u.ru_maxrss / 1024.0;  // KiB on Linux
#endif
}

double rss_mib() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages = 0, resident = 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
double heap_in_use_mib() {
  const struct mallinfo2 m = mallinfo2();
  return (double)(m.uordblks + m.hblkhd) / 1048576.0;
}
double heap_held_mib() {
  const struct mallinfo2 m = mallinfo2();
  return (double)(m.arena + m.hblkhd) / 1048576.0;
}
#else
double heap_in_use_mib() { return 0; }
double heap_held_mib() { return 0; }
#endif

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
#endif

}  // namespace rfa::bench
