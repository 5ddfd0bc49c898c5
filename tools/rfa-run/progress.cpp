#include "progress.hpp"

#include "rfa/environment.hpp"

#if defined(_WIN32)
#include <io.h>
#else
#include <unistd.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace rfa {

namespace {
std::mutex g_active_mutex;
Progress* g_active = nullptr;  // the progress that may be drawing (one at a time)
}  // namespace

void Progress::interrupt() {
  std::lock_guard<std::mutex> lock(g_active_mutex);
  if (g_active) g_active->stop_drawing();
}

void Progress::stop_drawing() {
  std::lock_guard<std::mutex> lock(m_);
  stop_ = true;
  if (shown_) std::fputs("\r\033[K", stderr);
  shown_ = false;
  cv_.notify_all();
}

bool Progress::enabled() {
#if defined(_WIN32)
  return ::_isatty(::_fileno(stderr)) != 0;
#else
  return isatty(STDERR_FILENO) == 1;
#endif
}

Progress::Progress(std::string what, long total, std::string unit)
    : what_(std::move(what)), unit_(std::move(unit)), total_(total), start_(std::chrono::steady_clock::now()),
      delay_(1000) {
  if (!enabled()) return;
  if (const std::string e = rfa::environment_variable("RFA_PROGRESS_DELAY_MS"); !e.empty())
    delay_ = std::chrono::milliseconds(std::atol(e.c_str()));
  {
    std::lock_guard<std::mutex> lock(g_active_mutex);
    g_active = this;
  }
  thread_ = std::thread([this] { run(); });
}

Progress::~Progress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(g_active_mutex);
    if (g_active == this) g_active = nullptr;
  }
  stop_drawing();  // the result lines follow on a clean line
  thread_.join();
  std::fflush(stderr);
}

void Progress::draw() {
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const long done = done_.load(std::memory_order_relaxed);
  if (total_ > 0)
    std::fprintf(stderr, "\r\033[Krfa-run: %s %ld/%ld %s, %.1f s (%.1f/s)", what_.c_str(), done, total_,
                 unit_.c_str(), s, s > 0 ? done / s : 0.0);
  else
    std::fprintf(stderr, "\r\033[Krfa-run: %s, %.1f s", what_.c_str(), s);
  std::fflush(stderr);
  shown_ = true;
}

void Progress::run() {
  std::unique_lock<std::mutex> lock(m_);
  if (cv_.wait_until(lock, start_ + delay_, [this] { return stop_; })) return;  // finished in time: silent
  while (!stop_) {
    draw();
    cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; });
  }
}

}  // namespace rfa
