// rfa-bench: benchmark programs. They print figures (and JSON lines with --json); they never pass
// or fail on time.
#pragma once

#include "rfa/context.hpp"
#include "rfa/session.hpp"

#include <memory>
#include <string>
#include <vector>

namespace rfa::bench {

// `rfa-bench linear [--json] [--reps N] [--device SEL]`
int bench_linear(const std::vector<std::string>& args);

// `rfa-bench model --model DIR [--prefill N] [--decode C1,C2] [--steps K] [--json]`
int bench_model(const std::vector<std::string>& args);

// `rfa-bench stream [--model DIR] [--batch B] [--context N] [--steps K] [--window W] [--json]`,
// and `--soak` (bench_soak below)
int bench_stream(const std::vector<std::string>& args);

// `rfa-bench stream --soak [--steps 1000000] [--window 4096] [--every 100000] [--tail 64]`: a long
// stream with the options `so` (batch, window) that reports host memory, device memory and the
// outputs' drift every --every steps (bench_soak.cpp).
int bench_soak(const std::vector<std::string>& args, Context& ctx, std::shared_ptr<const Model> model,
               const SessionOptions& so);

// The context of `--device SEL` (or the default device); null after printing why on stderr.
std::unique_ptr<Context> open_context(const std::vector<std::string>& args);

// Median of a sample (the sample is copied).
double median(std::vector<double> v);

// Value of "--name V" in args, or fallback.
std::string option(const std::vector<std::string>& args, const std::string& name, const std::string& fallback);
bool has_flag(const std::vector<std::string>& args, const std::string& name);

}  // namespace rfa::bench
