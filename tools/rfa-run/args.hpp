// rfa-run's command line: the flags (docs/rfa-run.md), parsed and checked against each other.
// A mistake in them is a usage error: one line on stderr naming the flag, a hint to --help, exit 2.
#pragma once

#include <string>

#include "diagnostics_dump.hpp"
#include "rfa/sampler.hpp"
#include "rfa/session.hpp"

namespace rfa::cli {

struct Args {
  std::string model, device, device_profile, prompt, tokens, signal, timestamps, dump, dump_attention, kernel_cache;
  bool list_devices = false, version = false, self_check = false, json = false, stream = false, cpu = false,
       summary = false, verify_kernels = false;
  int generate = 0, max_context = 0;
  // --window: 0 (the default, also `--window 0`) runs the model's own window (args.attention_window,
  // none when it has none), N > 0 a window of N, -1 (`--window none`) no window at all: the values
  // SessionOptions::window, rfa_session_options.window and Python's Session(window=) take.
  int window = 0;
  KvPrecision kv = KvPrecision::f32;
  SamplerOptions sampler;
  dump::DiagnosticsDump diagnostics;
};

// Exit code of a usage error.
constexpr int kUsageExit = 2;
// parse()'s result when the flags are fine.
constexpr int kParsed = -1;

// Parses argv into `a`; returns kParsed, or the exit code after printing the error (or, for
// --help, the usage on stdout: exit 0).
int parse(int argc, char** argv, Args& a);

// Prints "rfa-run: MSG (see rfa-run --help)" on stderr and returns kUsageExit.
int usage_error(const std::string& msg);

// Integer in [lo, hi] (the whole string), or false.
bool parse_int(const std::string& s, long long lo, long long hi, long long* out);

}  // namespace rfa::cli
