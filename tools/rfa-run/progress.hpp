// Progress of long work on stderr: a line rewritten in place once the work has taken about a
// second, cleared when it ends. Only when stderr is a terminal, so pipes, files and --json
// consumers never see it. RFA_PROGRESS_DELAY_MS overrides the one-second delay (tests use it).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace rfa {

class Progress {
 public:
  // what: "prefill", "generating", ...; total > 0: a count of `unit` (then "done/total unit" and
  // a rate are shown, as set() reports them); total 0: elapsed time only.
  Progress(std::string what, long total = 0, std::string unit = "");
  ~Progress();  // stops, and clears the line if one was shown
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void set(long done) { done_.store(done, std::memory_order_relaxed); }
  static bool enabled();  // stderr is a terminal
  // Before printing a message to stderr: clears the line of the progress now shown (if any) and
  // stops it from drawing again.
  static void interrupt();

 private:
  void run();
  void draw();
  void stop_drawing();

  std::string what_, unit_;
  long total_;
  std::atomic<long> done_{0};
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds delay_;
  bool shown_ = false, stop_ = false;
  std::mutex m_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace rfa
