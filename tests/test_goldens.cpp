// The model zoo's goldens: inputs and outputs written by the PyTorch module (models/train,
// float64, from the weights exactly as stored). The GPU runtime (prefill and streaming) and the
// CPU twin must reproduce them: two independent implementations of docs/reference-code.md agreeing.
//
// Naming (models/<name>/golden/): X_output.npy goes with X_input.npy and, if present,
// X_timestamps.npy; output.npy with input.npy; an output named *_output_last.npy holds only the
// last position of each row.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "model/model.hpp"
#include "model/npy.hpp"
#include "reference/model_ref.hpp"
#include "rfa/session.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace rfa;

namespace {

struct Golden {
  std::string model_dir, input, timestamps, output;
  bool last_only = false;
};

std::vector<Golden> find_goldens() {
  std::vector<Golden> out;
  fs::path zoo = fs::path(test::source_dir()) / "models";
  for (auto& m : fs::directory_iterator(zoo)) {
    fs::path g = m.path() / "golden";
    if (!fs::is_directory(g) || !fs::exists(m.path() / "config.json")) continue;
    for (auto& f : fs::directory_iterator(g)) {
      std::string name = f.path().filename().string();
      auto pos = name.find("output");
      if (pos == std::string::npos || f.path().extension() != ".npy") continue;
      std::string prefix = name.substr(0, pos);  // "", "regular_", "long_"
      Golden gd;
      gd.model_dir = m.path().string();
      gd.output = f.path().string();
      gd.input = (g / (prefix + "input.npy")).string();
      gd.last_only = name.find("_last") != std::string::npos;
      if (fs::exists(g / (prefix + "timestamps.npy"))) gd.timestamps = (g / (prefix + "timestamps.npy")).string();
      REQUIRE_MESSAGE(fs::exists(gd.input), "golden " << gd.output << " has no input " << gd.input);
      out.push_back(gd);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the GPU runtime and the CPU twin reproduce every golden of the model zoo") {
  auto goldens = find_goldens();
  REQUIRE_MESSAGE(goldens.size() >= 4, "the zoo's goldens are missing (models/*/golden)");
  for (const Golden& g : goldens) {
    CAPTURE(g.output);
    auto model = load_model_dir(g.model_dir);
    REQUIRE_MESSAGE(model.ok(), model.status().to_string());
    const Model& m = **model;
    auto in = read_npy(g.input);
    auto want = read_npy(g.output);
    REQUIRE(in.ok());
    REQUIRE(want.ok());
    const bool lm = m.arch == Architecture::lm;
    const int B = (int)in->shape[0], N = (int)in->shape[1];
    std::vector<double> ts;
    if (!g.timestamps.empty()) {
      auto t = read_npy(g.timestamps);
      REQUIRE(t.ok());
      ts = t->values;
      REQUIRE(ts.size() == (size_t)B * N);
    }
    const int V = model_info(m).output_dim;
    // Which positions the golden holds.
    std::vector<double> ref = want->values;
    auto select = [&](const std::vector<float>& full) {
      if (!g.last_only) return full;
      std::vector<float> last;
      for (int b = 0; b < B; ++b)
        last.insert(last.end(), full.begin() + ((size_t)b * N + N - 1) * V, full.begin() + ((size_t)b * N + N) * V);
      return last;
    };
    double scale = 0;
    for (double v : ref) scale = std::max(scale, std::fabs(v));
    // fp32 through a few layers: errors relative to the output's scale, not per element.
    const double atol = 1e-4 * std::max(1.0, scale), rtol = 1e-4;

    // The double twin: agreement to ~float32 storage of the golden.
    {
      std::vector<double> vals(in->values.begin(), in->values.end());
      auto r = ref::forward(m, B, N, lm ? nullptr : vals.data(), lm ? in->ints.data() : nullptr,
                            ts.empty() ? nullptr : ts.data());
      REQUIRE_MESSAGE(r.ok(), r.status().to_string());
      std::vector<float> rf(r->begin(), r->end());
      CHECK_CLOSE_VEC(select(rf), ref, 1e-5 * std::max(1.0, scale), 1e-5);
    }
    // The GPU: one prefill, and one position at a time through the KV cache.
    for (bool stream : {false, true}) {
      CAPTURE(stream);
      SessionOptions o;
      o.batch = B;
      o.max_context = N;
      auto s = Session::create(test::context(), *model, o);
      REQUIRE_MESSAGE(s.ok(), s.status().to_string());
      std::vector<std::vector<float>> rows((size_t)B);
      const int d = model_info(m).input_dim;
      for (int p0 = 0; p0 < N;) {
        const int n = stream ? 1 : N;
        std::vector<double> tsl;
        if (!ts.empty())
          for (int b = 0; b < B; ++b)
            for (int i = 0; i < n; ++i) tsl.push_back(ts[(size_t)b * N + p0 + i]);
        Status st;
        if (lm) {
          std::vector<int64_t> x;
          for (int b = 0; b < B; ++b)
            for (int i = 0; i < n; ++i) x.push_back(in->ints[(size_t)b * N + p0 + i]);
          st = (*s)->prefill_tokens(x, n, tsl);
        } else {
          std::vector<float> x;
          for (int b = 0; b < B; ++b)
            for (int i = 0; i < n * d; ++i) x.push_back((float)in->values[((size_t)b * N + p0) * d + i]);
          st = (*s)->prefill_values(x, n, tsl);
        }
        REQUIRE_MESSAGE(st.ok(), st.to_string());
        for (int b = 0; b < B; ++b)
          rows[(size_t)b].insert(rows[(size_t)b].end(), (*s)->outputs().begin() + (size_t)b * n * V,
                                 (*s)->outputs().begin() + (size_t)(b + 1) * n * V);
        p0 += n;
      }
      std::vector<float> got;
      for (auto& r : rows) got.insert(got.end(), r.begin(), r.end());
      CHECK_CLOSE_VEC(select(got), ref, atol, rtol);
    }
  }
}
