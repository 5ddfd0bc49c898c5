// rfa-run on models that run with a sliding window, fed more positions than the window: the dumps
// the GPU path writes (output.npy, every attn_*.npy, the diagnostics) equal what the CPU twin
// writes for the same input, prefill and --stream alike, for the zoo's RFA, AFA and RT-RFA models
// and a random model trained with a window, generation included; and --window's values (0: the
// model's own, none: no window) and one-line flag errors.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "model/npy.hpp"
#include "reference/model_ref.hpp"
#include "rfa/reference.hpp"
#include "rfa/session.hpp"
#include "rfa/inspect.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace rfa;

namespace {

// Runs rfa-run with `args`; its stderr goes to `err` when given.
int run(const std::string& args, const std::string& err = "") { return test::run_tool("rfa-run", args, "", err); }

std::string text_of(const std::string& path) {
  std::ifstream f(path);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string zoo(const char* name) { return (fs::path(test::source_dir()) / "models" / name).string(); }

std::string make_model(const std::string& name, const std::string& args) {
  std::string dir = test::temp_dir("model-" + name);
  REQUIRE(test::run_tool("rfa-make-model", "--out " + dir + " " + args) == 0);
  return dir;
}

struct Array {
  std::vector<int64_t> shape;
  std::vector<double> v;
};

Array load(const std::string& path) {
  auto a = read_npy(path);
  REQUIRE_MESSAGE(a.ok(), a.status().to_string());
  return {a->shape, a->values};
}

std::vector<float> as_float(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

// A smooth test signal [B, N, d], values in [-2, 2].
void write_signal(const std::string& path, int B, int N, int d) {
  std::vector<float> x((size_t)B * N * d);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (float)(2.0 * std::sin(0.37 * (double)i + 0.2 * (double)(i % 5)));
  REQUIRE(write_npy_f32(path, {B, N, d}, x).ok());
}

// Every file of `want` (the twin's dump) is in `got` with the same shape and values within the
// usual fp32 tolerances; attention maps are [B, N, N], zero outside each row's band [i - W + 1, i].
void same_dump(const std::string& got, const std::string& want, int window) {
  int files = 0;
  for (const auto& e : fs::directory_iterator(want)) {
    const std::string name = e.path().filename().string();
    CAPTURE(got + "/" + name);
    REQUIRE(fs::exists(got + "/" + name));
    const Array g = load(got + "/" + name), w = load(want + "/" + name);
    REQUIRE(g.shape == w.shape);
    if (name == "output.npy") {
      CHECK_CLOSE_VEC(as_float(g.v), w.v, 2e-4, 2e-4);
    } else {
      CHECK_CLOSE_VEC(as_float(g.v), w.v, 1e-5, 1e-4);
      const int64_t N = g.shape[1];
      size_t outside = 0;
      for (int64_t b = 0; b < g.shape[0]; ++b)
        for (int64_t i = 0; i < N; ++i)
          for (int64_t j = 0; j < N; ++j)
            if ((j > i || i - j >= window) && g.v[(size_t)((b * N + i) * N + j)] != 0.0) ++outside;
      CHECK(outside == 0);
    }
    ++files;
  }
  CHECK(files >= 3);
}

}  // namespace

TEST_CASE("windowed dumps on the GPU equal the twin's past the window: zoo RFA, AFA, RT and a random model") {
  const std::string dir = test::temp_dir("rfa-run-window-dumps");
  write_signal(dir + "/sig120.npy", 2, 120, 2);
  write_signal(dir + "/sig60.npy", 1, 60, 2);
  std::vector<float> t(45);
  for (int i = 0; i < 45; ++i) t[(size_t)i] = 0.7f * (float)i + 0.25f * (float)(i % 3);  // irregular, non-decreasing
  write_signal(dir + "/sig45.npy", 1, 45, 2);
  REQUIRE(write_npy_f32(dir + "/t45.npy", {45}, t).ok());
  struct Case {
    std::string name, model, flags;
    int window;
  };
  const Case cases[] = {
      // The default model, trained with a window of 50, run with it: 120 positions, two rows.
      {"spiral-filter", zoo("spiral-filter"), "--signal " + dir + "/sig120.npy", 50},
      {"spiral-afa", zoo("spiral-afa"), "--signal " + dir + "/sig60.npy --window 16", 16},
      {"spiral-rt", zoo("spiral-rt"), "--signal " + dir + "/sig60.npy --window 16", 16},
      {"random", make_model("window7", "--arch signal --layers 2 --heads 2 --d-e 16 --seed 3 --set attention_window=7"),
       "--signal " + dir + "/sig45.npy --timestamps " + dir + "/t45.npy", 7},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const std::string in = "--model " + c.model + " " + c.flags + " --dump-attention all --dump ";
    const std::string cpu = dir + "/cpu-" + c.name, gpu = dir + "/gpu-" + c.name, st = dir + "/stream-" + c.name;
    REQUIRE(run(in + cpu + " --cpu-reference") == 0);
    REQUIRE(run(in + gpu) == 0);
    REQUIRE(run(in + st + " --stream") == 0);
    same_dump(gpu, cpu, c.window);
    same_dump(st, cpu, c.window);
    if (c.name == "spiral-afa") {
      // The twin's A is the weight times the channel-mean decay, not the weight itself: the
      // comparison above would have caught a twin writing Ahat into attn_decayed.
      const Array ah = load(cpu + "/attn_L1_H0.npy"), a = load(cpu + "/attn_decayed_L1_H0.npy");
      double diff = 0;
      for (size_t i = 0; i < ah.v.size(); ++i) diff = std::max(diff, std::fabs(ah.v[i] - a.v[i]));
      CHECK(diff > 1e-3);
    }
  }
}

TEST_CASE("the AFA twin's decayed attention is Ahat times the channel-mean decay, as the GPU probe's A") {
  auto m = load_model_dir(zoo("spiral-afa"));
  REQUIRE(m.ok());
  const int N = 37;
  std::vector<float> x((size_t)N * 2);
  for (size_t i = 0; i < x.size(); ++i) x[i] = (float)std::cos(0.41 * (double)i);
  std::vector<double> ts((size_t)N);
  for (int i = 0; i < N; ++i) ts[(size_t)i] = 0.9 * i + 0.25 * (i % 3);
  std::vector<ReferenceAttention> maps;
  const std::vector<double> xd(x.begin(), x.end());
  auto r = reference_forward(**m, 1, N, xd.data(), nullptr, ts.data(), {{0, 1}, {1, 3}}, &maps);
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  REQUIRE(maps.size() == 2);
  SessionOptions so;
  so.max_context = N;
  auto s = Session::create(test::context(), *m, so);
  REQUIRE(s.ok());
  REQUIRE((*s)->prefill_values(x, N, ts).ok());
  for (const ReferenceAttention& c : maps) {
    CAPTURE(c.layer);
    CAPTURE(c.head);
    auto ahat = rfa::Inspector(**s).attention(c.layer, c.head, 0, 0, N, 0, N, false);
    auto a = rfa::Inspector(**s).attention(c.layer, c.head, 0, 0, N, 0, N, true);
    REQUIRE(ahat.ok());
    REQUIRE(a.ok());
    CHECK_CLOSE_VEC(*ahat, c.ahat, 1e-5, 1e-4);
    CHECK_CLOSE_VEC(*a, c.a, 1e-5, 1e-4);
    double diff = 0;
    for (size_t k = 0; k < c.a.size(); ++k) diff = std::max(diff, std::fabs(c.a[k] - c.ahat[k]));
    CHECK(diff > 1e-3);
  }
}

TEST_CASE("windowed generation dumps the maps of every fed position, as the twin") {
  const std::string dir = test::temp_dir("rfa-run-window-generate");
  const std::string m = make_model("lm-window6", "--arch lm --layers 2 --heads 2 --d-e 16 --vocab 64 --seed 5 "
                                                 "--set attention_window=6");
  std::vector<int64_t> ids(20);
  for (int i = 0; i < 20; ++i) ids[(size_t)i] = (i * 13 + 5) % 64;
  REQUIRE(write_npy_i64(dir + "/ids.npy", {2, 10}, ids).ok());
  // 14 generated positions fed: more than a ring can hold after the prompt (a replay), and 2 (probed
  // in place).
  for (int g : {15, 3}) {
    CAPTURE(g);
    const std::string in = "--model " + m + " --tokens " + dir + "/ids.npy --generate " + std::to_string(g) +
                           " --dump-attention all --dump ";
    const std::string cpu = dir + "/cpu" + std::to_string(g), gpu = dir + "/gpu" + std::to_string(g);
    REQUIRE(run(in + cpu + " --cpu-reference") == 0);
    REQUIRE(run(in + gpu) == 0);
    CHECK(load(gpu + "/attn_L1_H1.npy").shape == std::vector<int64_t>{2, 10 + g - 1, 10 + g - 1});
    same_dump(gpu, cpu, 6);
  }
}

TEST_CASE("--dump-diagnostics on the default model: the rows whose keys are cached, over the keys they see") {
  const std::string dir = test::temp_dir("rfa-run-window-diagnostics");
  write_signal(dir + "/sig.npy", 1, 120, 2);
  const std::string in = "--model " + zoo("spiral-filter") + " --signal " + dir + "/sig.npy --dump-diagnostics ";
  REQUIRE(run(in + dir + "/d512") == 0);
  REQUIRE(run(in + dir + "/d99 --diagnostics-window 99") == 0);
  REQUIRE(run(in + dir + "/d20 --diagnostics-window 20 --stream") == 0);
  // Window 50, ring 99: after 120 positions [21, 120) is cached, and rows 70.. still have their band.
  auto m = load_model_dir(zoo("spiral-filter"));
  REQUIRE(m.ok());
  SessionOptions so;
  so.max_context = 120;
  auto s = Session::create(test::context(), *m, so);
  REQUIRE(s.ok());
  const Array x = load(dir + "/sig.npy");
  REQUIRE((*s)->prefill_values(as_float(x.v), 120).ok());
  REQUIRE((*s)->oldest_position() == 21);
  struct Want {
    const char* out;
    int r0, c0;
  };
  for (const Want& w : {Want{"d512", 70, 21}, Want{"d99", 70, 21}, Want{"d20", 100, 51}}) {
    CAPTURE(w.out);
    for (int l = 0; l < 2; ++l)
      for (int h = 0; h < 4; ++h) {
        const std::string path = dir + "/" + w.out + "/diagnostics_L" + std::to_string(l) + "_H" + std::to_string(h) + ".json";
        auto j = nlohmann::json::parse(text_of(path), nullptr, false);
        REQUIRE(!j.is_discarded());
        const auto& row = j["batch_rows"][0];
        CHECK(row["rows_window"] == nlohmann::json::array({w.r0, 120}));
        CHECK(row["cols_window"] == nlohmann::json::array({w.c0, 120}));
        DiagnosticsRequest r;
        r.layer = l, r.head = h, r.r0 = w.r0, r.r1 = 120, r.c0 = w.c0, r.c1 = 120;
        auto d = rfa::Inspector(**s).head_diagnostics(r);
        REQUIRE_MESSAGE(d.ok(), d.status().to_string());
        CHECK(row["entropy_mean"].get<double>() == doctest::Approx(d->entropy_mean).epsilon(1e-5));
        CHECK(row["erank"].get<double>() == doctest::Approx(d->erank).epsilon(1e-4));
      }
  }
}

TEST_CASE("--window: 0 is the model's own window, none turns a trained window off; flag errors are one line") {
  const std::string dir = test::temp_dir("rfa-run-window-flags");
  write_signal(dir + "/sig.npy", 1, 70, 2);
  const std::string in = "--model " + zoo("spiral-filter") + " --signal " + dir + "/sig.npy --dump ";
  REQUIRE(run(in + dir + "/default") == 0);
  REQUIRE(run(in + dir + "/zero --window 0") == 0);
  REQUIRE(run(in + dir + "/w50 --window 50 --cpu-reference") == 0);
  REQUIRE(run(in + dir + "/none --window none") == 0);
  REQUIRE(run(in + dir + "/none-cpu --window none --cpu-reference") == 0);
  const Array def = load(dir + "/default/output.npy"), none = load(dir + "/none-cpu/output.npy");
  CHECK(load(dir + "/zero/output.npy").v == def.v);
  CHECK_CLOSE_VEC(as_float(def.v), load(dir + "/w50/output.npy").v, 2e-4, 2e-4);
  CHECK_CLOSE_VEC(as_float(load(dir + "/none/output.npy").v), none.v, 2e-4, 2e-4);
  double diff = 0;  // without the window, positions past 50 see more: the results differ
  for (size_t i = 0; i < def.v.size(); ++i) diff = std::max(diff, std::fabs(def.v[i] - none.v[i]));
  CHECK(diff > 1e-3);

  // A flag error: exit 2, one line naming the flag and pointing to --help, no usage dump.
  for (const std::string bad : {"--window abc", "--window -3", "--no-such-flag 1", "--top-p 2", "--dump"}) {
    CAPTURE(bad);
    const std::string err = dir + "/err.txt";
    CHECK(run("--model " + zoo("spiral-filter") + " " + bad, err) == 2);
    const std::string e = text_of(err);
    CHECK(std::count(e.begin(), e.end(), '\n') == 1);
    CHECK(e.find("(see rfa-run --help)") != std::string::npos);
    CHECK(e.find(bad.substr(0, bad.find(' '))) != std::string::npos);
  }
  CHECK(run("--help") == 0);
}
