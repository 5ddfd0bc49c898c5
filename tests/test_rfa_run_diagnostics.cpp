// rfa-run --dump-diagnostics end to end: one valid JSON file per (layer, head) with every batch
// row, equal to Session::head_diagnostics of the same model and input in this process; and the
// argument errors (exit 2, nothing written) and an unwritable directory (exit 4); the zoo's AFA and
// RT-RFA models, whose heads have a tomography of their own.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/npy.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace rfa;

namespace {

int run(const std::string& args) { return test::run_tool("rfa-run", args); }

void close(double got, double want, double rtol, const std::string& what) {
  CAPTURE(what);
  CHECK(std::fabs(got - want) <= rtol * std::fabs(want) + 1e-9);
}

}  // namespace

TEST_CASE("rfa-run --dump-diagnostics writes valid JSON equal to head_diagnostics") {
  const std::string dir = test::temp_dir("rfa-run-diagnostics");
  const std::string model = dir + "/model";
  REQUIRE(test::run_tool("rfa-make-model", "--out " + model + " --arch lm --layers 2 --heads 4 --d-e 32 --vocab 50") == 0);
  const int B = 2, N = 40;
  std::vector<int64_t> ids((size_t)B * N);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = (int64_t)((i * 37 + i / 7) % 50);
  REQUIRE(write_npy_i64(dir + "/ids.npy", {B, N}, ids).ok());
  const std::string out = dir + "/diag";
  REQUIRE(run("--model " + model + " --tokens " + dir + "/ids.npy --dump-diagnostics " + out +
              " --diagnostics-window 30 --diagnostics-alphas 1.5,0.5,4") == 0);

  auto m = load_model_dir(model);
  REQUIRE(m.ok());
  SessionOptions so;
  so.batch = B;
  so.max_context = N;
  auto s = Session::create(test::context(), *m, so);
  REQUIRE(s.ok());
  REQUIRE((*s)->prefill_tokens(ids, N).ok());
  int files = 0;
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      CAPTURE(l);
      CAPTURE(h);
      const std::string path = out + "/diagnostics_L" + std::to_string(l) + "_H" + std::to_string(h) + ".json";
      REQUIRE(fs::exists(path));
      ++files;
      json j;
      REQUIRE_NOTHROW(j = json::parse(std::ifstream(path)));
      CHECK(j["layer"] == l);
      CHECK(j["head"] == h);
      CHECK(j["window"] == 30);
      CHECK(j["alphas"].get<std::vector<double>>() == std::vector<double>{1.5, 0.5, 4});
      REQUIRE(j["batch_rows"].size() == (size_t)B);
      for (int b = 0; b < B; ++b) {
        const json& r = j["batch_rows"][(size_t)b];
        DiagnosticsRequest req;
        req.layer = l, req.head = h, req.b = b;
        req.r0 = req.c0 = -30;
        req.alpha = 1.5;
        req.sweep = {0.5, 4};
        auto d = rfa::Inspector(**s).head_diagnostics(req);
        REQUIRE(d.ok());
        CHECK(r["b"] == b);
        CHECK(r["rows_window"].get<std::vector<int>>() == std::vector<int>{10, 40});
        CHECK(r["cols_window"].get<std::vector<int>>() == std::vector<int>{10, 40});
        CHECK(r["d"] == d->d);
        close(r["erank"].get<double>(), d->erank, 1e-6, "erank");
        CHECK(r["rank"] == d->rank);
        CHECK(r["nullity"] == d->nullity);
        close(r["entropy_mean"].get<double>(), d->entropy_mean, 1e-6, "entropy_mean");
        close(r["summary"]["dim_eff_u"].get<double>(), d->summary.dim_eff_u, 1e-6, "dim_eff_u");
        close(r["summary"]["dim_eff_n"].get<double>(), d->summary.dim_eff_n, 1e-6, "dim_eff_n");
        close(r["summary"]["tau_mean"].get<double>(), d->summary.tau_mean, 1e-6, "tau_mean");
        const auto sv = r["singular_values"].get<std::vector<double>>();
        REQUIRE(sv.size() == d->singular_values.size());
        for (size_t k = 0; k < sv.size(); ++k) close(sv[k], d->singular_values[k], 1e-6, "singular value");
        const auto tau = r["rows"]["tau"].get<std::vector<double>>();
        const auto pos = r["rows"]["position"].get<std::vector<int>>();
        REQUIRE(tau.size() == 30);
        for (size_t k = 0; k < tau.size(); ++k) {
          CHECK(pos[k] == 10 + (int)k);
          close(tau[k], d->rows[k].tau, 1e-6, "tau");
          close(r["rows"]["entropy"][k].get<double>(), d->rows[k].entropy, 1e-6, "entropy");
        }
        REQUIRE(r["sweep"].size() == 2);
        CHECK(r["sweep"][0]["alpha"] == 0.5);
        close(r["sweep"][1]["erank"].get<double>(), d->sweep[1].erank, 1e-6, "sweep erank");
        CHECK(r["timings_ms"]["wall"].get<double>() > 0);
      }
    }
  CHECK(files == 8);

  // Errors: usage (2) before anything runs, and an unwritable folder (4).
  const std::string base = "--model " + model + " --tokens " + dir + "/ids.npy";
  const std::string none = dir + "/never";
  CHECK(run(base + " --dump-diagnostics " + none + " --diagnostics-window 0") == 2);
  CHECK(run(base + " --dump-diagnostics " + none + " --diagnostics-window 2000") == 2);
  CHECK(run(base + " --dump-diagnostics " + none + " --diagnostics-alphas 1,nan") == 2);
  CHECK(run(base + " --dump-diagnostics " + none + " --diagnostics-alphas -1") == 2);
  CHECK(run(base + " --diagnostics-window 8") == 2);
  CHECK(run(base + " --dump-diagnostics " + none + " --cpu-reference") == 2);
  CHECK(!fs::exists(none));
  std::ofstream(dir + "/a-file") << "x";
  CHECK(run(base + " --dump-diagnostics " + dir + "/a-file/sub") == 4);
}

TEST_CASE("rfa-run --dump-diagnostics on the zoo's AFA and RT-RFA models equals head_diagnostics") {
  // Their heads have a tomography of their own (docs/DIAGNOSTICS.md §2); it used to be refused.
  const char* src = std::getenv("RFA_SOURCE_DIR");
  REQUIRE(src);
  const std::string dir = test::temp_dir("rfa-run-diagnostics-variants");
  const int N = 48;
  std::vector<float> x((size_t)N * 2);
  for (int i = 0; i < N; ++i) x[(size_t)2 * i] = (float)(4 * std::cos(0.2 * i)), x[(size_t)2 * i + 1] = (float)(4 * std::sin(0.2 * i));
  REQUIRE(write_npy_f32(dir + "/x.npy", {N, 2}, x).ok());
  for (const char* name : {"spiral-afa", "spiral-afa-full", "spiral-rt"}) {
    CAPTURE(std::string(name));
    const std::string model = (fs::path(src) / "models" / name).string(), out = dir + "/" + name;
    REQUIRE(run("--model " + model + " --signal " + dir + "/x.npy --dump-diagnostics " + out + " --diagnostics-window 20") == 0);
    auto m = load_model_dir(model);
    REQUIRE(m.ok());
    SessionOptions so;
    so.max_context = N;
    auto s = Session::create(test::context(), *m, so);
    REQUIRE(s.ok());
    REQUIRE((*s)->prefill_values(x, N).ok());
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 4; ++h) {
        CAPTURE(l);
        CAPTURE(h);
        json j;
        REQUIRE_NOTHROW(j = json::parse(std::ifstream(out + "/diagnostics_L" + std::to_string(l) + "_H" + std::to_string(h) + ".json")));
        const json& r = j["batch_rows"][0];
        DiagnosticsRequest req;
        req.layer = l, req.head = h;
        // The window rfa-run chose: the last 20 rows over every key they see (a model trained with a
        // sliding window, spiral-afa-full, sees more columns than the last 20).
        req.r0 = r["rows_window"][0].get<int>(), req.r1 = r["rows_window"][1].get<int>();
        req.c0 = r["cols_window"][0].get<int>(), req.c1 = r["cols_window"][1].get<int>();
        CHECK(req.r1 - req.r0 == 20);
        auto d = rfa::Inspector(**s).head_diagnostics(req);
        REQUIRE(d.ok());
        close(r["erank"].get<double>(), d->erank, 1e-6, "erank");
        close(r["entropy_mean"].get<double>(), d->entropy_mean, 1e-6, "entropy_mean");
        close(r["summary"]["dim_eff_u"].get<double>(), d->summary.dim_eff_u, 1e-6, "dim_eff_u");
        CHECK(d->entropy_mean > 0);
      }
  }
}
